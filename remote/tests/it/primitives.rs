//! The primitives the tier will rely on, each written once over `Arc<dyn ObjectStore>` and run
//! against moto's S3 server (`moto::`) and against object_store's `InMemory` (`in_memory::`), so
//! that fault tests over `InMemory` stand for the real thing.

use std::ops::Range;
use std::sync::Arc;

use futures_util::TryStreamExt;
use object_store::path::Path;
use object_store::{
    Error, GetOptions, GetRange, ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload,
};
use tokio::sync::Barrier;

/// Runs each named primitive as a test against both stores: a bucket of its own on the shared
/// moto server, and a fresh `InMemory`.
macro_rules! against_both {
    ($($primitive:ident),* $(,)?) => {
        mod moto {
            $(
                #[test]
                fn $primitive() {
                    // S3 bucket names take hyphens, not underscores.
                    let bucket = stringify!($primitive).replace('_', "-");
                    let store = crate::server::shared().store(&bucket);
                    super::runtime().block_on(super::$primitive(store));
                }
            )*
        }
        mod in_memory {
            $(
                #[test]
                fn $primitive() {
                    let store: std::sync::Arc<dyn object_store::ObjectStore> =
                        std::sync::Arc::new(object_store::memory::InMemory::new());
                    super::runtime().block_on(super::$primitive(store));
                }
            )*
        }
    };
}

against_both!(
    round_trip_and_ranges,
    create_refuses_an_existing_key,
    racing_creates_have_one_winner,
    list_is_sorted_with_sizes,
    missing_key_is_not_found,
);

/// A runtime per test: a store's HTTP client belongs to the runtime that first drives it.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

/// `len` bytes that differ from one offset to the next, so that a slice from the wrong place
/// does not compare equal by accident.
fn pattern(len: usize, seed: u64) -> Vec<u8> {
    let mut state = seed | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 56) as u8
        })
        .collect()
}

fn create() -> PutOptions {
    PutOptions::from(PutMode::Create)
}

fn slice(data: &[u8], range: Range<u64>) -> &[u8] {
    &data[range.start as usize..range.end as usize]
}

/// A put and a get of a few MiB return the same bytes; ranged gets return exactly their slice.
async fn round_trip_and_ranges(store: Arc<dyn ObjectStore>) {
    let data = pattern(3 * 1024 * 1024 + 12_345, 1);
    let len = data.len() as u64;
    let key = Path::from("segments/00000001.seg");
    store
        .put(&key, PutPayload::from(data.clone()))
        .await
        .expect("put");

    let whole = store.get(&key).await.expect("get");
    assert_eq!(whole.meta.size, len);
    assert_eq!(whole.range, 0..len);
    let bytes = whole.bytes().await.expect("the body");
    assert!(
        bytes.as_ref() == data.as_slice(),
        "the body differs from what was put"
    );

    // Bounded ranges: from the start, across the middle at odd offsets, up to the very end.
    for range in [0..1, 1..4097, 1_048_575..2_097_153, len - 7..len] {
        let got = store
            .get_range(&key, range.clone())
            .await
            .expect("get_range");
        assert!(
            got.as_ref() == slice(&data, range.clone()),
            "get_range({range:?}) returned {} bytes, not its slice",
            got.len()
        );
    }
    let ranges = [10..20, 3_000_000..3_000_333, 5..6];
    let got = store.get_ranges(&key, &ranges).await.expect("get_ranges");
    for (range, bytes) in ranges.iter().zip(&got) {
        assert!(
            bytes.as_ref() == slice(&data, range.clone()),
            "get_ranges({range:?})"
        );
    }

    // A suffix (the tail of a segment, where a footer lives) and an offset, through get_opts.
    for (range, expected) in [
        (GetRange::Suffix(4096), len - 4096..len),
        (GetRange::Offset(len - 100), len - 100..len),
        (GetRange::Bounded(77..177), 77..177),
    ] {
        let options = GetOptions {
            range: Some(range.clone()),
            ..GetOptions::default()
        };
        let result = store.get_opts(&key, options).await.expect("get_opts");
        assert_eq!(result.range, expected, "the range reported for {range:?}");
        assert_eq!(result.meta.size, len);
        let bytes = result.bytes().await.expect("the ranged body");
        assert!(
            bytes.as_ref() == slice(&data, expected),
            "get_opts({range:?})"
        );
    }
}

/// `PutMode::Create` on a key that exists fails with `AlreadyExists`, naming the key, and the
/// object keeps its first bytes.
async fn create_refuses_an_existing_key(store: Arc<dyn ObjectStore>) {
    let key = Path::from("records/00000001");
    store
        .put_opts(&key, PutPayload::from_static(b"first"), create())
        .await
        .expect("the first create");
    match store
        .put_opts(&key, PutPayload::from_static(b"second, longer"), create())
        .await
    {
        Err(Error::AlreadyExists { path, .. }) => assert_eq!(path, key.as_ref()),
        other => panic!("a second create of {key} returned {other:?}, not AlreadyExists"),
    }
    let kept = store
        .get(&key)
        .await
        .expect("get")
        .bytes()
        .await
        .expect("the body");
    assert_eq!(
        kept.as_ref(),
        b"first",
        "a refused create changed the object"
    );
    assert_eq!(store.head(&key).await.expect("head").size, 5);
}

/// Two tasks race `PutMode::Create` on the same key, round after round: exactly one wins, and the
/// object holds the winner's bytes.
async fn racing_creates_have_one_winner(store: Arc<dyn ObjectStore>) {
    const ROUNDS: usize = 50;
    let mut wins = [0usize; 2];
    for round in 0..ROUNDS {
        let key = Path::from(format!("fence/{round:04}"));
        let barrier = Arc::new(Barrier::new(2));
        let writers: Vec<_> = (0..2)
            .map(|writer| {
                let (store, key, barrier) = (Arc::clone(&store), key.clone(), Arc::clone(&barrier));
                tokio::spawn(async move {
                    let payload = PutPayload::from(format!("writer {writer}, round {round}"));
                    barrier.wait().await;
                    store.put_opts(&key, payload, create()).await
                })
            })
            .collect();
        let mut winners = Vec::new();
        for (writer, task) in writers.into_iter().enumerate() {
            match task.await.expect("the writer's task") {
                Ok(_) => winners.push(writer),
                Err(Error::AlreadyExists { .. }) => {}
                Err(e) => panic!("round {round}: writer {writer} failed otherwise: {e}"),
            }
        }
        assert_eq!(
            winners.len(),
            1,
            "round {round}: winners {winners:?}, not exactly one"
        );
        let winner = winners[0];
        wins[winner] += 1;
        let held = store
            .get(&key)
            .await
            .expect("get")
            .bytes()
            .await
            .expect("the body");
        assert_eq!(
            held.as_ref(),
            format!("writer {winner}, round {round}").as_bytes(),
            "round {round}: the object does not hold the winner's bytes"
        );
    }
    println!("{store}: {ROUNDS} rounds, wins by writer {wins:?}");
}

/// A list under a prefix returns exactly the keys under it (whole path segments: `list` does not
/// take in `listing/…`), in lexicographic byte order, each with its size.
async fn list_is_sorted_with_sizes(store: Arc<dyn ObjectStore>) {
    let keys = [
        "list/seg-9",
        "list/seg-10",
        "listing/outside",
        "list/seg-1",
        "list/a/b",
        "other/x",
        "list/Z",
    ];
    for (i, key) in keys.iter().enumerate() {
        store
            .put(&Path::from(*key), PutPayload::from(vec![b'x'; 10 * i + 1]))
            .await
            .expect("put");
    }
    let listed: Vec<_> = store
        .list(Some(&Path::from("list")))
        .try_collect()
        .await
        .expect("list");
    let listed: Vec<(String, u64)> = listed
        .into_iter()
        .map(|meta| (meta.location.to_string(), meta.size))
        .collect();
    let size = |key: &str| 10 * keys.iter().position(|k| *k == key).unwrap() as u64 + 1;
    let expected: Vec<(String, u64)> = [
        "list/Z",
        "list/a/b",
        "list/seg-1",
        "list/seg-10",
        "list/seg-9",
    ]
    .into_iter()
    .map(|key| (key.to_owned(), size(key)))
    .collect();
    assert_eq!(listed, expected);
}

/// A get, a ranged get or a head of a key that was never put, or was deleted, is `NotFound`
/// naming the key.
async fn missing_key_is_not_found(store: Arc<dyn ObjectStore>) {
    let gone = Path::from("segments/00000007.seg");
    store
        .put(&gone, PutPayload::from_static(b"soon gone"))
        .await
        .expect("put");
    store.delete(&gone).await.expect("delete");
    for key in [Path::from("segments/00000404.seg"), gone] {
        let errors = [
            ("get", store.get(&key).await.err()),
            ("get_range", store.get_range(&key, 0..4).await.err()),
            ("head", store.head(&key).await.err()),
        ];
        for (operation, error) in errors {
            match error {
                Some(Error::NotFound { path, .. }) => {
                    assert_eq!(path, key.as_ref(), "{operation} of {key}: the path named");
                }
                other => panic!("{operation} of missing {key} returned {other:?}, not NotFound"),
            }
        }
    }
    // Nothing was created on the way.
    let listed: Vec<_> = store
        .list(Some(&Path::from("segments")))
        .try_collect()
        .await
        .expect("list");
    assert!(listed.is_empty(), "left behind: {listed:?}");
}
