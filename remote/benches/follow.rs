//! What a replica's poll costs against a full boot of the same state (#49): a poll follows
//! what one new barrier appended with the store it has (`Store::refresh`: the frames applied
//! to its catalog); a boot reads the bucket's state from its reset and replays it whole.
//!
//! `cargo bench -p strata-remote --bench follow` builds a store of 1,000 live files (1,000
//! barriers of one track, no compaction), publishes each barrier to an in-memory bucket, and
//! times:
//! - `follow/boot`: `Replica::open` of the bucket;
//! - `follow/poll`: `Replica::poll` after one more barrier was sealed and published (the
//!   barrier and its publish untimed).
//!
//! Then prints the poll's time over the boot's, from the same run (target: at most 5%). The
//! bucket is in memory, so both are the replica's own work, no network round trip.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_precision_loss,
    missing_docs,
    reason = "bench code"
)]

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use object_store::ObjectStore;
use object_store::memory::InMemory;
use strata_engine::{Config, FieldKind, Store, Stream, StreamDecl, Value};
use strata_remote::{Bucket, Publisher, RemoteConfig, Replica};

const FILES: u64 = 1_000;
const ROWS: u64 = 100;

fn decl() -> StreamDecl {
    Stream::new("s")
        .field("t", FieldKind::U64)
        .field("v", FieldKind::F64)
        .axis("t")
        .build()
        .expect("a valid declaration")
}

fn barrier(store: &mut Store, publisher: &mut Publisher, index: u64) {
    let rows: Vec<Vec<Value>> = (0..ROWS)
        .map(|i| {
            let t = index * ROWS + i;
            vec![Value::U64(t), Value::F64((t % 977) as f64)]
        })
        .collect();
    store.publish("s", index + 1, &rows).unwrap();
    store.seal().unwrap();
    publisher.publish(store).unwrap();
}

fn follow(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let objects: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let bucket = || Bucket::new(Arc::clone(&objects), "bench").unwrap();
    let mut store = Store::create(dir.path(), Config::default(), &[decl()]).unwrap();
    let mut publisher = Publisher::attach(&store, bucket(), RemoteConfig::default()).unwrap();
    for index in 0..FILES {
        barrier(&mut store, &mut publisher, index);
    }
    assert_eq!(store.catalog().live_files().count() as u64, FILES);
    let open = || Replica::open(bucket(), Config::default(), RemoteConfig::default()).unwrap();
    let mut replica = open();
    let mut next = FILES;
    let took: Arc<Mutex<[Vec<f64>; 2]>> = Arc::default();

    let mut group = c.benchmark_group("follow");
    group.sample_size(20);
    {
        let took = Arc::clone(&took);
        group.bench_function("boot", |b| {
            b.iter_custom(|iters| {
                let began = Instant::now();
                for _ in 0..iters {
                    std::hint::black_box(open());
                }
                let spent = began.elapsed();
                took.lock().unwrap_or_else(PoisonError::into_inner)[0]
                    .push(spent.as_secs_f64() / iters as f64);
                spent
            });
        });
    }
    {
        let took = Arc::clone(&took);
        group.bench_function("poll", |b| {
            b.iter_custom(|iters| {
                let mut spent = Duration::ZERO;
                for _ in 0..iters {
                    barrier(&mut store, &mut publisher, next);
                    next += 1;
                    let began = Instant::now();
                    assert!(replica.poll().unwrap(), "one barrier was published");
                    spent += began.elapsed();
                }
                took.lock().unwrap_or_else(PoisonError::into_inner)[1]
                    .push(spent.as_secs_f64() / iters as f64);
                spent
            });
        });
    }
    group.finish();
    assert_eq!(
        replica.store().watermark("s", &[]).unwrap(),
        store.watermark("s", &[]).unwrap()
    );
    let took = took.lock().unwrap_or_else(PoisonError::into_inner);
    if took.iter().any(Vec::is_empty) {
        return;
    }
    let [boot, poll] = [median(&took[0]), median(&took[1])];
    println!(
        "follow: a boot of {FILES} live files {:.2} ms, a poll after one barrier {:.3} ms: the \
         poll costs {:.1}% of the boot (target <= 5%)",
        boot * 1e3,
        poll * 1e3,
        100.0 * poll / boot
    );
}

fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted[sorted.len() / 2]
}

criterion_group!(benches, follow);
criterion_main!(benches);
