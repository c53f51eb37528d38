//! The tier end to end over `InMemory`: publish, boot a replica, follow, compare answers.

use strata_engine::Store;
use strata_remote::{Publisher, RemoteConfig, RemoteError, Replica};

use crate::support::{TRACKS, config, decl, memory_bucket, rows, same_answers, same_bucket};

/// Seals `barriers` barriers of `per` rows per track, publishing after each, compacting every
/// third; returns the next row index.
fn ingest(store: &mut Store, publisher: &mut Publisher, from: u64, barriers: u64, per: u64) -> u64 {
    let mut at = from;
    for b in 0..barriers {
        for track in TRACKS {
            store
                .publish("probe", at + 1, &rows(track, at, per))
                .expect("publish");
        }
        at += per;
        store.seal().expect("seal");
        publisher.publish(store).expect("upload");
        if b % 3 == 2 {
            while store.compact_step().expect("compact step").is_some() {
                publisher.publish(store).expect("upload after a step");
            }
        }
    }
    at
}

#[test]
fn a_replica_answers_as_the_writer_at_every_published_state() {
    let dir = tempfile::tempdir().unwrap();
    let (objects, bucket) = memory_bucket();
    let mut store = Store::create(dir.path(), config(), &[decl()]).unwrap();
    let mut publisher = Publisher::attach(&store, bucket, RemoteConfig::default()).unwrap();
    let at = ingest(&mut store, &mut publisher, 0, 2, 50);
    let mut replica =
        Replica::open(same_bucket(&objects), config(), RemoteConfig::default()).unwrap();
    assert_eq!(same_answers(&store, replica.store()), 3 * 100);
    let mut at = at;
    for round in 0..6 {
        at = ingest(&mut store, &mut publisher, at, 3, 40);
        assert!(
            replica.poll().unwrap(),
            "round {round}: new records were published"
        );
        assert_eq!(replica.seq(), publisher.head().unwrap());
        let compared = same_answers(&store, replica.store());
        assert_eq!(
            compared as u64,
            3 * at,
            "round {round}: every row is on the replica"
        );
        assert!(!replica.poll().unwrap(), "nothing new");
        if round == 2 {
            // A manifest rewrite: the next publish is a reset, which the replica follows.
            assert!(store.checkpoint().unwrap(), "the manifest was rewritten");
            let published = publisher.publish(&store).unwrap();
            assert!(
                published.reset,
                "after a rewrite the bucket gets the whole manifest"
            );
            assert!(replica.poll().unwrap());
            same_answers(&store, replica.store());
        }
    }
    let compacted = store.catalog().live_files().count();
    assert!(
        compacted < 20,
        "compaction merged the barriers' files ({compacted} live)"
    );
}

#[test]
fn nothing_new_puts_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (_objects, bucket) = memory_bucket();
    let mut store = Store::create(dir.path(), config(), &[decl()]).unwrap();
    let mut publisher = Publisher::attach(&store, bucket, RemoteConfig::default()).unwrap();
    ingest(&mut store, &mut publisher, 0, 1, 10);
    let head = publisher.head();
    let again = publisher.publish(&store).unwrap();
    assert_eq!(again.seq, None);
    assert_eq!(publisher.head(), head);
}

#[test]
fn a_replica_of_an_empty_bucket_is_refused_naming_it() {
    let (_objects, bucket) = memory_bucket();
    let error = Replica::open(bucket, config(), RemoteConfig::default()).unwrap_err();
    assert!(matches!(error, RemoteError::Missing { .. }), "{error}");
    assert!(error.to_string().contains("identity"), "{error}");
}
