//! Replica survey latency with a cold and with a warm cache, against the same survey on the
//! writer's local store (the peer), all in one run over moto's S3 server on loopback (started
//! by the bench, as the tests start it: python3 with moto 5.1 or later).
//!
//! `cargo bench -p strata-remote --bench replica` builds a store of 300,000 rows (3 tracks,
//! 30 barriers, compacted), publishes it, and times a full-range survey at budget 1,000 of one
//! track:
//! - `local`: on the writer's store (mapped files, warm);
//! - `replica_warm`: on a replica whose cache holds the segments;
//! - `replica_cold`: on a replica whose cache was just emptied (`Replica::evict_all`), so the
//!   survey fetches every segment it touches with ranged GETs and checks its digest;
//! - `replica_boot`: a replica opened from the bucket (identity, log objects) and the survey.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::cast_possible_truncation,
    clippy::cast_precision_loss,
    missing_docs,
    reason = "bench code"
)]

#[path = "../tests/it/server.rs"]
#[allow(
    dead_code,
    reason = "the tests' fixture, of which the bench needs a part"
)]
mod server;
#[path = "../tests/it/support.rs"]
#[allow(
    dead_code,
    reason = "the tests' fixture, of which the bench needs a part"
)]
mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use strata_engine::{Store, View};
use strata_remote::{Bucket, Publisher, RemoteConfig, Replica};

use support::{TRACKS, config, decl, rows};

const PER: u64 = 10_000;
const BARRIERS: u64 = 10;
const BUDGET: u64 = 1_000;

fn replica_survey(c: &mut Criterion) {
    let objects = server::shared().store("bench");
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::create(dir.path(), config(), &[decl()]).unwrap();
    let bucket = || Bucket::new(Arc::clone(&objects), "bench").unwrap();
    let mut publisher = Publisher::attach(&store, bucket(), RemoteConfig::default()).unwrap();
    for b in 0..BARRIERS * 3 {
        for track in TRACKS {
            store
                .publish("probe", 1, &rows(track, b * PER, PER))
                .unwrap();
        }
        store.seal().unwrap();
        publisher.publish(&store).unwrap();
    }
    store.compact().unwrap();
    publisher.publish(&store).unwrap();
    let sel = &TRACKS[0][..];
    let survey = |s: &View| s.survey("probe", sel, .., BUDGET).unwrap();
    let mut replica = Replica::open(bucket(), config(), RemoteConfig::default()).unwrap();
    assert_eq!(
        survey(replica.store()),
        survey(&store),
        "the replica answers as the writer"
    );

    let mut group = c.benchmark_group("replica_survey");
    group.measurement_time(Duration::from_secs(5));
    group.sample_size(20);
    group.bench_function("local", |b| b.iter(|| survey(&store)));
    group.bench_function("replica_warm", |b| b.iter(|| survey(replica.store())));
    group.bench_function("replica_cold", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                replica.evict_all().unwrap();
                let start = Instant::now();
                std::hint::black_box(survey(replica.store()));
                total += start.elapsed();
            }
            total
        });
    });
    group.bench_function("replica_boot", |b| {
        b.iter(|| {
            let fresh = Replica::open(bucket(), config(), RemoteConfig::default()).unwrap();
            survey(fresh.store())
        });
    });
    group.finish();
}

criterion_group!(benches, replica_survey);
criterion_main!(benches);
