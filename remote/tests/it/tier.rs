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

/// `RemoteConfig::log_bytes_max` is reached and refused naming it, both by one `log/` object
/// over it and by a manifest assembled from objects each under it; an `identity` object larger
/// than an identity is refused before it is read.
#[test]
fn log_bytes_max_is_reached_and_refused() {
    use futures_util::TryStreamExt;
    use object_store::{ObjectStoreExt, PutPayload, path::Path};

    let dir = tempfile::tempdir().unwrap();
    let (objects, bucket) = memory_bucket();
    let mut store = Store::create(dir.path(), config(), &[decl()]).unwrap();
    let mut publisher = Publisher::attach(&store, bucket, RemoteConfig::default()).unwrap();
    ingest(&mut store, &mut publisher, 0, 5, 20);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let sizes: Vec<u64> = runtime.block_on(async {
        let logs = Path::from("store-1/log");
        let metas: Vec<_> = objects.list(Some(&logs)).try_collect().await.unwrap();
        metas.iter().map(|m| m.size).collect()
    });
    let largest = *sizes.iter().max().unwrap();
    let total: u64 = sizes.iter().sum();
    assert!(sizes.len() >= 5 && total > 2 * largest, "{sizes:?}");
    let open = |max: u64| {
        Replica::open(
            same_bucket(&objects),
            config(),
            RemoteConfig::default().log_bytes_max(max),
        )
    };
    for (max, what) in [
        (largest - 1, "bytes, more than the"),
        (largest, "manifest assembled"),
    ] {
        let refused = open(max).unwrap_err();
        assert!(
            matches!(refused, RemoteError::Bound { .. }) && refused.to_string().contains(what),
            "log_bytes_max {max}: {refused}"
        );
    }
    assert_eq!(same_answers(&store, open(total).unwrap().store()), 3 * 100);

    let (big, _) = memory_bucket();
    runtime.block_on(async {
        let identity = Path::from("store-1/identity");
        big.put(&identity, PutPayload::from(vec![b'x'; 5000]))
            .await
            .unwrap();
    });
    let refused = Replica::open(same_bucket(&big), config(), RemoteConfig::default()).unwrap_err();
    assert!(
        matches!(refused, RemoteError::Bound { .. }) && refused.to_string().contains("identity"),
        "{refused}"
    );
    let other = tempfile::tempdir().unwrap();
    let fresh = Store::create(other.path(), config(), &[decl()]).unwrap();
    let refused =
        Publisher::attach(&fresh, same_bucket(&big), RemoteConfig::default()).unwrap_err();
    assert!(matches!(refused, RemoteError::Bound { .. }), "{refused}");
}

/// A poll follows the new records with the store it has (#49): the segments it opened stay
/// open, a view taken before the poll keeps answering its state, and the store answers the
/// new one. A poll that booted a new store would start with nothing open.
#[test]
fn a_poll_follows_the_records_appended_with_the_store_it_has() {
    let dir = tempfile::tempdir().unwrap();
    let (objects, bucket) = memory_bucket();
    let mut store = Store::create(dir.path(), config(), &[decl()]).unwrap();
    let mut publisher = Publisher::attach(&store, bucket, RemoteConfig::default()).unwrap();
    let at = ingest(&mut store, &mut publisher, 0, 2, 50);
    let mut replica =
        Replica::open(same_bucket(&objects), config(), RemoteConfig::default()).unwrap();
    assert_eq!(same_answers(&store, replica.store()), 3 * at as usize);
    let opened = replica.store().metrics().segments_open;
    assert!(opened > 0, "the reads opened segments");
    let before = replica.store().view();
    let watermark = before.watermark("probe", &[]).unwrap();
    // One more barrier, no compaction: the manifest only grows.
    let at = ingest(&mut store, &mut publisher, at, 1, 50);
    assert!(replica.poll().unwrap(), "a new barrier was published");
    assert_eq!(
        replica.store().metrics().segments_open,
        opened,
        "the poll kept the store, and the segments it had open"
    );
    assert_eq!(same_answers(&store, replica.store()), 3 * at as usize);
    assert_eq!(before.watermark("probe", &[]).unwrap(), watermark);
    assert_eq!(before.query("probe", &[], ..).unwrap().len(), 3 * 100);
    assert_eq!(
        replica.store().watermark("probe", &[]).unwrap(),
        store.watermark("probe", &[]).unwrap()
    );
}

/// A poll many records behind (more than it fetches by number before it lists the log, with
/// compaction steps among them) reads every one of them and answers as the writer; the poll
/// after it finds nothing new.
#[test]
fn a_poll_many_records_behind_reads_them_all() {
    let dir = tempfile::tempdir().unwrap();
    let (objects, bucket) = memory_bucket();
    let mut store = Store::create(dir.path(), config(), &[decl()]).unwrap();
    let mut publisher = Publisher::attach(&store, bucket, RemoteConfig::default()).unwrap();
    let mut at = ingest(&mut store, &mut publisher, 0, 1, 20);
    let mut replica =
        Replica::open(same_bucket(&objects), config(), RemoteConfig::default()).unwrap();
    let from = replica.seq();
    for behind in [1, 5, 30] {
        at = ingest(&mut store, &mut publisher, at, behind, 20);
        assert!(replica.poll().unwrap(), "{behind} barriers were published");
        assert_eq!(replica.seq(), publisher.head().unwrap());
        assert_eq!(same_answers(&store, replica.store()), 3 * at as usize);
        assert!(!replica.poll().unwrap(), "nothing new after {behind}");
    }
    assert!(
        publisher.head().unwrap() - from > 30,
        "past the fetches by number"
    );
}

/// A replica behind a reset whose writer has collected the objects the replica would read
/// next (grace zero: deleted at the publish) finds the next object missing, lists the log, and
/// boots from the newest reset: it answers as the writer, never stays at the old state.
#[test]
fn a_poll_behind_a_collected_log_boots_from_the_newest_reset() {
    use object_store::ObjectStoreExt;

    let dir = tempfile::tempdir().unwrap();
    let (objects, bucket) = memory_bucket();
    let mut store = Store::create(dir.path(), config(), &[decl()]).unwrap();
    let remote = RemoteConfig::default().grace(std::time::Duration::ZERO);
    let mut publisher = Publisher::attach(&store, bucket, remote).unwrap();
    let at = ingest(&mut store, &mut publisher, 0, 2, 20);
    let mut replica =
        Replica::open(same_bucket(&objects), config(), RemoteConfig::default()).unwrap();
    let head = replica.seq();
    // Compacted (in every third barrier), the manifest holds more than twice its live state.
    let at = ingest(&mut store, &mut publisher, at, 6, 20);
    assert!(store.checkpoint().unwrap(), "the manifest was rewritten");
    let published = publisher.publish(&store).unwrap();
    assert!(published.reset);
    publisher.collect().unwrap();
    for gone in [head, head + 1, head + 5] {
        let key = object_store::path::Path::from(format!("store-1/log/{gone:020}"));
        let found = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(objects.head(&key));
        assert!(
            matches!(found, Err(object_store::Error::NotFound { .. })),
            "log/{gone} was collected: {found:?}"
        );
    }
    assert!(replica.poll().unwrap());
    assert_eq!(replica.seq(), publisher.head().unwrap());
    assert_eq!(same_answers(&store, replica.store()), 3 * at as usize);
    assert!(!replica.poll().unwrap());
}
