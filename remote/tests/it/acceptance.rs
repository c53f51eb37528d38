//! #17's acceptance run, against a real S3-compatible server (moto, on loopback): a writer
//! ingests a million rows with seals and compaction, publishing as it goes; a replica with a
//! small cache follows by polling and answers every query, survey and fold as the writer does
//! at the watermark it reports.

use std::sync::Arc;

use strata_engine::Store;
use strata_remote::{Bucket, Publisher, RemoteConfig, Replica};

use crate::support::{TRACKS, config, decl, rows, same_answers};

/// Rows per track per barrier, and barriers: 3 tracks × 8,400 × 40 = 1,008,000 rows.
const PER: u64 = 8_400;
const BARRIERS: u64 = 40;

#[test]
fn a_million_rows_through_s3_answer_alike_on_a_replica() {
    let objects = crate::server::shared().store("acceptance");
    let bucket = |prefix: &str| Bucket::new(Arc::clone(&objects), prefix).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::create(dir.path(), config(), &[decl()]).unwrap();
    let mut publisher =
        Publisher::attach(&store, bucket("plant-7"), RemoteConfig::default()).unwrap();
    // A cache far smaller than the store (checked below: its rows pack to about a MiB, segment
    // format 5): the replica evicts and fetches again as it reads.
    let remote = RemoteConfig::default()
        .cache_bytes(128 << 10)
        .range_bytes(16 << 10);
    let mut replica: Option<Replica> = None;
    let (mut steps, mut puts, mut checks) = (0, 0, 0);
    for b in 0..BARRIERS {
        for track in TRACKS {
            store
                .publish("probe", b + 1, &rows(track, b * PER, PER))
                .unwrap();
        }
        store.seal().unwrap();
        puts += u64::from(publisher.publish(&store).unwrap().seq.is_some());
        // A few compaction steps after each barrier, as a served store takes them.
        for _ in 0..2 {
            if store.compact_step().unwrap().is_none() {
                break;
            }
            steps += 1;
            puts += u64::from(publisher.publish(&store).unwrap().seq.is_some());
        }
        if b % 10 == 9 {
            let replica = match replica.as_mut() {
                Some(r) => {
                    assert!(
                        r.poll().unwrap(),
                        "barrier {b}: the replica sees new records"
                    );
                    r
                }
                None => replica
                    .insert(Replica::open(bucket("plant-7"), config(), remote.clone()).unwrap()),
            };
            let compared = same_answers(&store, replica.store());
            assert_eq!(
                compared as u64,
                3 * PER * (b + 1),
                "barrier {b}: every row compared"
            );
            assert!(replica.cache().bytes() <= replica.cache().budget());
            checks += 1;
        }
    }
    while store.compact_step().unwrap().is_some() {
        steps += 1;
        puts += u64::from(publisher.publish(&store).unwrap().seq.is_some());
    }
    let replica = replica.as_mut().unwrap();
    // New records only if compaction had steps left after the last barrier.
    replica.poll().unwrap();
    assert_eq!(
        Some(replica.seq()),
        publisher.head(),
        "the replica is at the bucket's head"
    );
    let compared = same_answers(&store, replica.store());
    assert_eq!(compared as u64, 3 * PER * BARRIERS);
    assert!(compared >= 1_000_000);
    let (hits, misses, evictions) = replica.cache().counts();
    let store_bytes: u64 = std::fs::read_dir(dir.path().join("seg"))
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum();
    assert!(
        store_bytes > 4 * replica.cache().budget(),
        "the cache ({} bytes) is far smaller than the store's segments ({store_bytes})",
        replica.cache().budget()
    );
    assert!(evictions > 0, "a cache under a larger store evicts");
    let live = store.catalog().live_files().count();
    assert!(
        steps >= 10 && live < BARRIERS as usize / 2,
        "compaction merged the {BARRIERS} barriers' files: {steps} steps, {live} live files"
    );
    eprintln!(
        "acceptance: {compared} rows, {BARRIERS} barriers, {steps} compaction steps, {puts} log \
         objects, {live} live files, {checks} mid-run comparisons; replica cache {hits} hits, {misses} misses, \
         {evictions} evictions under {} bytes",
        replica.cache().budget()
    );
}
