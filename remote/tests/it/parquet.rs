//! Parquet beside the segments (#33, `RemoteConfig::parquet`): the objects follow the live raw
//! segments through barriers, compaction, trims and retirements, hold exactly the store's rows
//! (read back with the `parquet` crate and compared with `Store::query`, the row reader), are
//! retried after a failed put, are not rewritten by a writer that attaches again, and DuckDB
//! reads them in place with a glob as the store folds them.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int32Type, Int64Type};
use arrow_array::{Array, ArrayRef, RecordBatch};
use bytes::Bytes;
use object_store::ObjectStore;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use strata_engine::arrow_schema::DataType;
use strata_engine::{
    Aggregate, EngineError, FieldKind, Num, Store, StoredRow, Stream, StreamDecl, Value,
};
use strata_index::Tier;
use strata_remote::{
    Bucket, Published, Publisher, RemoteConfig, RemoteError, escape_stream, parquet_key,
    unescape_stream,
};

use crate::fault_store::{Fault, FaultStore};
use crate::support::{TRACKS, config, copy_dir, decl, rows};

/// The second stream: an id that needs escaping in a key (a space, a `/`, a non-ASCII letter).
const LINE: &str = "line 4/β";
const UNITS: [&str; 2] = ["u1", "u2"];

fn line_decl() -> StreamDecl {
    Stream::new(LINE)
        .field("unit", FieldKind::Str)
        .field("t", FieldKind::U64)
        .field("value", FieldKind::F64)
        .track(["unit"])
        .axis("t")
        .build()
        .expect("a valid declaration")
}

fn line_rows(unit: &str, t0: u64, n: u64) -> Vec<Vec<Value>> {
    (t0..t0 + n)
        .map(|i| {
            vec![
                Value::Str(unit.into()),
                Value::U64(i * 2),
                // Multiples of 0.25 of small magnitude: every sum is exact in f64, whatever
                // order a reader adds them in.
                Value::F64(((i * 104_729) % 800) as f64 * 0.25 - 100.0),
            ]
        })
        .collect()
}

/// Parquet on, and the objects a table version removes deleted at once (no retention), so
/// that the bucket holds exactly the objects of the newest state.
fn parquet_on() -> RemoteConfig {
    RemoteConfig::default()
        .parquet(true)
        .table_retention(std::time::Duration::ZERO)
}

/// A store of both streams in `root/store`, and a `file://` bucket in `root/bucket`.
fn file_store(root: &Path) -> (Store, PathBuf) {
    let store = Store::create(root.join("store"), config(), &[decl(), line_decl()]).unwrap();
    (store, root.join("bucket"))
}

fn file_bucket(dir: &Path) -> Bucket {
    Bucket::open_url(&format!("file://{}", dir.display()), true).unwrap()
}

/// Stages and seals one barrier of both streams: `per` rows per track (even, at least 4), from
/// row index `at`, in two publishes per track at positions `at + 1` and `at + 3` (so a trim
/// can cut a partition of one segment in two). Returns the next row index.
fn barrier(store: &mut Store, at: u64, per: u64) -> u64 {
    let half = per / 2;
    for (k, from) in [at, at + half].into_iter().enumerate() {
        let position = at + 1 + 2 * k as u64;
        for track in TRACKS {
            store
                .publish("probe", position, &rows(track, from, half))
                .unwrap();
        }
        for unit in UNITS {
            store
                .publish(LINE, position, &line_rows(unit, from, half))
                .unwrap();
        }
    }
    store.seal().unwrap();
    at + per
}

/// Every (stream, segment) for which the store's catalog says the segment holds rows of the
/// stream: a live raw tier of one of its partitions with rows above the partition's raw floor.
/// Found file by file and partition by partition.
fn expected(store: &Store) -> BTreeSet<(String, u64)> {
    let catalog = store.catalog();
    let mut parts = BTreeSet::new();
    for file in catalog.live_files() {
        for partition in &file.partitions {
            let live = catalog
                .partitions(&partition.stream, &partition.track)
                .any(|view| view.track() == &partition.track && view.is_live(file.name, Tier::Raw));
            let floor = catalog
                .floors_of(&partition.stream, &partition.track)
                .and_then(|f| f.raw)
                .map_or(0, |raw| raw.position);
            if live && partition.positions[1] >= floor {
                parts.insert((partition.stream.clone(), file.name));
            }
        }
    }
    parts
}

/// An object's name: its stream and segment, and whether it holds only some of the rows the
/// segment was written with (a `-DIGEST` suffix).
type Named = ((String, u64), bool);

/// The Parquet objects in a `file://` bucket, checking every name under `parquet/` is one the
/// layout spells and that no (stream, segment) has two.
fn objects_in(bucket: &Path) -> BTreeMap<(String, u64), (PathBuf, bool)> {
    let mut found = BTreeMap::new();
    let Ok(dirs) = std::fs::read_dir(bucket.join("parquet")) else {
        return found;
    };
    for dir in dirs {
        let dir = dir.unwrap();
        let escaped = dir.file_name().into_string().unwrap();
        let stream = unescape_stream(&escaped).unwrap_or_else(|| panic!("{escaped}"));
        for file in std::fs::read_dir(dir.path()).unwrap() {
            let file = file.unwrap();
            let name = file.file_name().into_string().unwrap();
            // The stream's table's commit log (#53) sits beside its objects.
            if name == "README.txt" || name == strata_remote::DELTA_LOG_DIR {
                continue;
            }
            let ((key, partial), segment) = parse_name(&stream, &name);
            let earlier = found.insert(key.clone(), (file.path(), partial));
            assert!(earlier.is_none(), "{key:?}: two objects ({name})");
            assert_eq!(segment, key.1);
        }
    }
    found
}

/// `NAME.parquet` or `NAME-DIGEST.parquet` (16 lower-case hex digits), checked against
/// `parquet_key` for the whole case.
fn parse_name(stream: &str, name: &str) -> (Named, u64) {
    let stem = name
        .strip_suffix(".parquet")
        .unwrap_or_else(|| panic!("{name}"));
    let (digits, partial) = match stem.split_once('-') {
        None => (stem, false),
        Some((digits, hex)) => {
            assert!(
                hex.len() == 16
                    && hex
                        .bytes()
                        .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()),
                "{name}"
            );
            (digits, true)
        }
    };
    assert_eq!(digits.len(), 12, "{name}");
    let segment: u64 = digits.parse().unwrap();
    if !partial {
        assert_eq!(
            parquet_key(stream, segment),
            format!("parquet/{}/{name}", escape_stream(stream))
        );
    }
    (((stream.to_owned(), segment), partial), segment)
}

fn value_at(column: &ArrayRef, row: usize, kind: FieldKind) -> Value {
    match (kind, column.data_type()) {
        // A table has no unsigned integers: a `u64` field is written as an `i64`.
        (FieldKind::U64, _) => Value::U64(
            u64::try_from(column.as_primitive::<Int64Type>().value(row)).expect("not negative"),
        ),
        (FieldKind::I64, _) => Value::I64(column.as_primitive::<Int64Type>().value(row)),
        (FieldKind::F64, _) => Value::F64(column.as_primitive::<Float64Type>().value(row)),
        (FieldKind::Str, DataType::Dictionary(..)) => {
            let dictionary = column.as_dictionary::<Int32Type>();
            let key = usize::try_from(dictionary.keys().value(row)).unwrap();
            Value::Str(dictionary.values().as_string::<i32>().value(key).to_owned())
        }
        (FieldKind::Str, DataType::LargeUtf8) => {
            Value::Str(column.as_string::<i64>().value(row).to_owned())
        }
        (FieldKind::Str, _) => Value::Str(column.as_string::<i32>().value(row).to_owned()),
        (_, _) => Value::Bytes(column.as_binary::<i64>().value(row).to_vec()),
    }
}

/// The rows of one Parquet object, read with the `parquet` crate, as (position, values).
fn read_object(bytes: Bytes, decl: &StreamDecl) -> Vec<(u64, Vec<Value>)> {
    let reader = ParquetRecordBatchReaderBuilder::try_new(bytes)
        .unwrap()
        .build()
        .unwrap();
    let mut out = Vec::new();
    for batch in reader {
        let batch: RecordBatch = batch.unwrap();
        let position = batch
            .column_by_name("position")
            .expect("a position column")
            .as_primitive::<Int64Type>()
            .clone();
        assert_eq!(position.null_count(), 0);
        for row in 0..batch.num_rows() {
            let values = decl
                .fields
                .iter()
                .map(|field| {
                    let column = batch.column_by_name(&field.name).expect("every field");
                    value_at(column, row, field.kind)
                })
                .collect();
            out.push((u64::try_from(position.value(row)).unwrap(), values));
        }
    }
    out
}

fn file_bytes(path: &Path) -> Bytes {
    Bytes::from(std::fs::read(path).unwrap())
}

/// The rows of every object, per stream, each object holding at least one.
fn rows_of_objects(objects: &BTreeMap<(String, u64), Bytes>) -> BTreeMap<String, Rows> {
    let decls = [decl(), line_decl()];
    let mut per_stream: BTreeMap<String, Rows> = BTreeMap::new();
    for ((stream, segment), bytes) in objects {
        let decl = decls.iter().find(|d| &d.id == stream).unwrap();
        let rows = read_object(bytes.clone(), decl);
        assert!(
            !rows.is_empty(),
            "{stream} {segment}: an object with no rows"
        );
        per_stream.entry(stream.clone()).or_default().extend(rows);
    }
    per_stream
}

type Rows = Vec<(u64, Vec<Value>)>;

/// Sorts rows for comparison: by position, then by their values' text (rows of one position
/// come from several tracks, whose order differs between an object and a query).
fn sorted(mut rows: Rows) -> Rows {
    rows.sort_by_cached_key(|(position, values)| (*position, format!("{values:?}")));
    rows
}

/// The store's rows of `stream` (`Store::query`, the row reader: not the Arrow export the
/// objects are written from), track by track, each from its raw floor up.
fn store_rows(store: &Store, stream: &str) -> Rows {
    let tracks: Vec<Vec<&str>> = if stream == LINE {
        UNITS.iter().map(|u| vec![*u]).collect()
    } else {
        TRACKS.iter().map(|t| t.to_vec()).collect()
    };
    let mut all = Vec::new();
    for track in tracks {
        let rows = match store.query(stream, &track, ..) {
            Ok(rows) => rows,
            Err(EngineError::Floor { floor, .. }) => store.query(stream, &track, floor..).unwrap(),
            Err(e) => panic!("{stream} {track:?}: {e}"),
        };
        all.extend(
            rows.into_iter()
                .map(|StoredRow { position, values }| (position, values)),
        );
    }
    sorted(all)
}

/// Asserts that `objects` (by stream and segment) are exactly one per (stream, segment holding
/// rows of it) and hold exactly the store's rows of every stream, each once. Returns the rows
/// compared.
fn same_rows(store: &Store, objects: &BTreeMap<(String, u64), Bytes>) -> usize {
    let keys: BTreeSet<(String, u64)> = objects.keys().cloned().collect();
    assert_eq!(
        keys,
        expected(store),
        "one Parquet object per (stream, segment holding rows of it)"
    );
    let got = rows_of_objects(objects);
    let mut compared = 0;
    for stream in ["probe", LINE] {
        let theirs = store_rows(store, stream);
        let ours = sorted(got.get(stream).cloned().unwrap_or_default());
        assert_eq!(ours.len(), theirs.len(), "{stream}: rows in the objects");
        assert!(
            ours == theirs,
            "{stream}: the objects' rows differ from the store's"
        );
        compared += ours.len();
    }
    compared
}

/// [`same_rows`] over a `file://` bucket; also counts the objects seen holding part of what
/// their segment was written with. Returns the rows compared.
fn check_file_bucket(store: &Store, bucket: &Path, partial: &mut usize) -> usize {
    let objects = objects_in(bucket);
    *partial += objects.values().filter(|(_, p)| *p).count();
    let bytes = objects
        .iter()
        .map(|(k, (path, _))| (k.clone(), file_bytes(path)))
        .collect();
    same_rows(store, &bytes)
}

fn publish(publisher: &mut Publisher, store: &Store) -> Published {
    publisher.publish(store).unwrap()
}

fn attach(store: &Store, bucket: &Path, config: RemoteConfig) -> Publisher {
    Publisher::attach(store, file_bucket(bucket), config).unwrap()
}

#[test]
fn parquet_objects_follow_the_live_raw_segments_and_hold_the_stores_rows() {
    let root = tempfile::tempdir().unwrap();
    let (mut store, bucket) = file_store(root.path());
    let mut publisher = attach(&store, &bucket, parquet_on());
    let (mut at, mut steps, mut partial) = (0, 0, 0);
    let (mut put, mut deleted) = (0, 0);
    let mut seen = BTreeSet::new();
    for b in 0..9 {
        at = barrier(&mut store, at, 40);
        let published = publish(&mut publisher, &store);
        assert_eq!(published.parquet, 2, "barrier {b}: one object per stream");
        assert_eq!(published.parquet_deleted, 0, "barrier {b}");
        put += published.parquet;
        check_file_bucket(&store, &bucket, &mut partial);
        seen.extend(objects_in(&bucket).into_values().map(|(path, _)| path));
        if b % 3 == 2 {
            while store.compact_step().unwrap().is_some() {
                steps += 1;
                let published = publish(&mut publisher, &store);
                put += published.parquet;
                deleted += published.parquet_deleted;
                check_file_bucket(&store, &bucket, &mut partial);
                seen.extend(objects_in(&bucket).into_values().map(|(path, _)| path));
            }
        }
    }
    // Compaction merges one partition a step, so barrier segments lose a stream's partitions
    // one at a time: their objects were replaced by ones of the rows left.
    assert!(steps >= 5, "compaction merged ({steps} steps)");
    assert!(partial >= 3, "objects of part of a segment ({partial})");
    assert!(
        deleted >= 6,
        "objects no longer wanted were deleted ({deleted})"
    );
    let now = objects_in(&bucket);
    assert_eq!(
        put - deleted,
        now.len(),
        "every object put is there or was deleted"
    );
    assert!(seen.len() > now.len() && seen.iter().filter(|p| p.exists()).count() == now.len());
    assert_eq!(check_file_bucket(&store, &bucket, &mut partial), 9 * 40 * 5);
    // A stream id that needs escaping is one folder, escaped.
    assert_eq!(escape_stream(LINE), "line%204%2F%CE%B2");
    assert!(bucket.join("parquet").join(escape_stream(LINE)).is_dir());

    // A writer that attaches again rewrites nothing.
    drop(publisher);
    let mut publisher = attach(&store, &bucket, parquet_on());
    let again = publish(&mut publisher, &store);
    assert_eq!(
        (again.seq, again.parquet, again.parquet_deleted),
        (None, 0, 0)
    );

    // One that finds an object missing writes it again, one left behind for a segment no
    // longer live (a crash between a put and the deletes after it) deletes it, and anything
    // else under parquet/ is not strata's and stays.
    drop(publisher);
    let (missing, (path, _)) = now.iter().next().unwrap();
    let kept = std::fs::read(path).unwrap();
    std::fs::remove_file(path).unwrap();
    let gone = seen.iter().find(|p| !p.exists()).unwrap();
    std::fs::write(gone, &kept).unwrap();
    let foreign = bucket.join("parquet/probe/README.txt");
    std::fs::write(&foreign, "not strata's").unwrap();
    let mut publisher = attach(&store, &bucket, parquet_on());
    let healed = publish(&mut publisher, &store);
    assert_eq!(
        (healed.parquet, healed.parquet_deleted),
        (1, 1),
        "{missing:?}"
    );
    assert_eq!(std::fs::read(path).unwrap(), kept, "the same bytes again");
    assert!(!gone.exists());
    assert!(foreign.exists());
    check_file_bucket(&store, &bucket, &mut partial);

    // With the option off, a publisher leaves parquet/ alone.
    drop(publisher);
    let mut plain = attach(&store, &bucket, RemoteConfig::default());
    let before = objects_in(&bucket);
    at = barrier(&mut store, at, 10);
    while store.compact_step().unwrap().is_some() {}
    let published = publish(&mut plain, &store);
    assert!(published.seq.is_some());
    assert_eq!((published.parquet, published.parquet_deleted), (0, 0));
    assert_eq!(objects_in(&bucket), before);
    // Turned on again, the next publish brings parquet/ up to date.
    drop(plain);
    let mut publisher = attach(&store, &bucket, parquet_on());
    let caught_up = publish(&mut publisher, &store);
    assert!(caught_up.parquet >= 2, "{caught_up:?}");
    assert_eq!(
        check_file_bucket(&store, &bucket, &mut partial),
        (at * 5) as usize
    );
}

/// A trim whose horizon falls inside a segment's partition, a `retire` of one track, and the
/// compaction after them: the objects of segments left with none of a stream's rows are
/// deleted, each object of a segment left with some of them is replaced by one of the rows
/// left, and the objects always hold exactly the store's rows.
#[test]
fn trims_and_retirements_replace_objects_with_ones_of_the_rows_left() {
    let root = tempfile::tempdir().unwrap();
    let (mut store, bucket) = file_store(root.path());
    let mut publisher = attach(&store, &bucket, parquet_on());
    let mut partial = 0;
    let mut at = 0;
    for _ in 0..4 {
        at = barrier(&mut store, at, 30);
        publish(&mut publisher, &store);
    }
    check_file_bucket(&store, &bucket, &mut partial);
    let before = objects_in(&bucket);
    // The barriers published probe at positions 1 and 3, 31 and 33, 61 and 63, 91 and 93: a
    // horizon of 31 retires the first barrier's partitions and cuts the second's in two (its
    // floor is 32, and the rows left start at 33).
    let trimmed = store.trim_to("probe", 31).unwrap();
    assert_eq!(trimmed.retired.len(), 1, "{trimmed:?}");
    let published = publish(&mut publisher, &store);
    assert_eq!(
        (published.parquet, published.parquet_deleted),
        (1, 2),
        "the first barrier's probe object deleted, the second's replaced"
    );
    let after = objects_in(&bucket);
    let first = ("probe".to_owned(), trimmed.retired[0]);
    assert!(before.contains_key(&first) && !after.contains_key(&first));
    assert_eq!(after.values().filter(|(_, p)| *p).count(), 1);
    check_file_bucket(&store, &bucket, &mut partial);

    // A retired track: every object of the stream is replaced by one without it.
    let line_objects = after.keys().filter(|(s, _)| s == LINE).count();
    store.retire(LINE, &["u2"]).unwrap();
    let published = publish(&mut publisher, &store);
    assert_eq!(
        (published.parquet, published.parquet_deleted),
        (line_objects, line_objects)
    );
    check_file_bucket(&store, &bucket, &mut partial);

    // Barriers after it (the track starts again above its floor) and compaction.
    for _ in 0..4 {
        at = barrier(&mut store, at, 30);
        publish(&mut publisher, &store);
        check_file_bucket(&store, &bucket, &mut partial);
        while store.compact_step().unwrap().is_some() {
            publish(&mut publisher, &store);
            check_file_bucket(&store, &bucket, &mut partial);
        }
    }
    assert!(partial > 10, "{partial}");
}

/// A floor that falls on a position holding rows: the rows at the floor are the store's, and
/// the object of the segment the trim cut must hold them (the floor is the lowest position still
/// held: `RawFloor::position`; `read.rs`'s `beneath` refuses only `start < floor`). A regression
/// test: `Store::segment_arrow` once read from one past the floor, and the publisher then
/// refused the short object (its record says the partition holds more rows).
#[test]
fn an_object_cut_by_a_floor_keeps_the_rows_at_the_floor() {
    let root = tempfile::tempdir().unwrap();
    let (mut store, bucket) = file_store(root.path());
    let mut publisher = attach(&store, &bucket, parquet_on());
    let mut at = 0;
    for _ in 0..3 {
        at = barrier(&mut store, at, 30);
        publish(&mut publisher, &store);
    }
    // Positions 31 and 33 in the second barrier: a horizon of 32 puts the floor at 33.
    store.trim_to("probe", 32).unwrap();
    let published = publisher.publish(&store);
    assert!(published.is_ok(), "{published:?}");
    check_file_bucket(&store, &bucket, &mut 0);
    assert!(at > 0);
}

/// An adoption writes no Parquet object; the publish after it puts the adopted history's and
/// deletes the old history's, so parquet/ holds exactly the adopted store's rows.
#[test]
fn the_publish_after_an_adoption_brings_parquet_to_the_adopted_history() {
    let root = tempfile::tempdir().unwrap();
    let (mut store, bucket) = file_store(root.path());
    let mut publisher = attach(&store, &bucket, parquet_on());
    let mut at = 0;
    for _ in 0..2 {
        at = barrier(&mut store, at, 20);
        publish(&mut publisher, &store);
    }
    let backup = root.path().join("backup");
    copy_dir(&root.path().join("store"), &backup);
    for _ in 0..3 {
        at = barrier(&mut store, at, 20);
        publish(&mut publisher, &store);
    }
    while store.compact_step().unwrap().is_some() {
        publish(&mut publisher, &store);
    }
    check_file_bucket(&store, &bucket, &mut 0);
    let before = objects_in(&bucket);
    drop((publisher, store));

    let mut restored = Store::open(&backup, config(), &[decl(), line_decl()]).unwrap();
    let (mut publisher, adoption) =
        Publisher::adopt(&mut restored, file_bucket(&bucket), parquet_on()).unwrap();
    assert!(adoption.published.seq.is_some());
    assert_eq!(
        objects_in(&bucket),
        before,
        "the adoption itself writes no Parquet"
    );
    let published = publish(&mut publisher, &restored);
    assert_eq!(published.seq, None);
    assert!(
        published.parquet >= 2 && published.parquet_deleted >= 2,
        "{published:?}"
    );
    assert_eq!(check_file_bucket(&restored, &bucket, &mut 0), 2 * 20 * 5);
}

/// A Parquet put that fails fails the publish after its `log/` object is put; the next publish
/// writes what is missing (a lost acknowledgement finds its own object, a torn object is put
/// again), and the objects a compaction makes stale stay until the new ones are put.
#[test]
fn a_failed_parquet_put_fails_the_publish_and_the_next_publish_writes_it() {
    let mut tally = BTreeMap::new();
    for fault in [Fault::FailBefore, Fault::LostAck, Fault::Torn] {
        let objects = FaultStore::new();
        let raw = Arc::clone(&objects) as Arc<dyn ObjectStore>;
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::create(dir.path(), config(), &[decl(), line_decl()]).unwrap();
        let mut publisher = Publisher::attach(&store, objects.bucket(), parquet_on()).unwrap();
        let mut at = 0;
        for _ in 0..3 {
            at = barrier(&mut store, at, 20);
            publish(&mut publisher, &store);
        }
        same_rows(&store, &memory_objects(&raw));

        // A barrier: its segment, `log/`, then a Parquet object per stream; the first fails.
        at = barrier(&mut store, at, 20);
        objects.arm(3, fault);
        let error = publisher.publish(&store).unwrap_err();
        assert!(
            matches!(&error, RemoteError::Parquet { key, .. } if key.starts_with("parquet/")),
            "{fault:?}: {error}"
        );
        assert!(error.to_string().contains("is published"), "{error}");
        let head = publisher.head();
        let next = publish(&mut publisher, &store);
        assert_eq!(next.seq, None, "{fault:?}: the log was published already");
        assert_eq!(publisher.head(), head);
        assert_eq!(next.parquet, 2, "{fault:?}: both objects of the barrier");
        same_rows(&store, &memory_objects(&raw));

        // A compaction step: the first object put after it fails, and nothing is deleted, so
        // parquet/ still holds every row (and some twice, until the next publish).
        assert!(store.compact_step().unwrap().is_some());
        let before = parquet_keys(&raw);
        objects.arm(3, fault);
        let error = publisher.publish(&store).unwrap_err();
        assert!(matches!(error, RemoteError::Parquet { .. }), "{error}");
        let after = parquet_keys(&raw);
        assert!(
            before.is_subset(&after),
            "{fault:?}: nothing is deleted before every new object is put"
        );
        let next = publish(&mut publisher, &store);
        assert!(next.parquet >= 1 && next.parquet_deleted >= 1, "{next:?}");
        let rows = same_rows(&store, &memory_objects(&raw));
        tally.insert(format!("{fault:?}"), rows);
        assert_eq!(rows as u64, at * 5);
    }
    assert_eq!(tally.len(), 3, "{tally:?}");
}

fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(future)
}

/// The keys under `store-1/parquet/` of an object store.
fn parquet_keys(objects: &Arc<dyn ObjectStore>) -> BTreeSet<String> {
    use futures_util::TryStreamExt;
    let prefix = object_store::path::Path::from("store-1/parquet");
    block_on(async {
        let metas: Vec<_> = objects.list(Some(&prefix)).try_collect().await.unwrap();
        metas
            .into_iter()
            .map(|m| m.location.to_string())
            // The tables' commit logs (#53) sit beside the objects.
            .filter(|key| !key.contains(&format!("/{}/", strata_remote::DELTA_LOG_DIR)))
            .collect()
    })
}

/// The Parquet objects of an in-memory bucket, by (stream, segment).
fn memory_objects(objects: &Arc<dyn ObjectStore>) -> BTreeMap<(String, u64), Bytes> {
    use object_store::ObjectStoreExt;
    let mut found = BTreeMap::new();
    for key in parquet_keys(objects) {
        let tail = key.strip_prefix("store-1/parquet/").unwrap();
        let (dir, name) = tail.split_once('/').unwrap();
        let stream = unescape_stream(dir).unwrap();
        let ((part, _), _) = parse_name(&stream, name);
        let path = object_store::path::Path::parse(&key).unwrap();
        let bytes = block_on(async { objects.get(&path).await.unwrap().bytes().await.unwrap() });
        assert!(
            found.insert(part.clone(), bytes).is_none(),
            "{part:?}: two objects"
        );
    }
    found
}

/// DuckDB, run as `python3 -c`, reads `parquet/STREAM/*.parquet` of a `file://` bucket in place
/// and its per-track count, min, max and sum equal the store's folds. Never skipped: without
/// python3 or its duckdb module the test fails, saying so (CI installs it).
#[test]
fn duckdb_reads_the_history_in_place_as_the_store_folds_it() {
    let root = tempfile::tempdir().unwrap();
    let (mut store, bucket_dir) = file_store(root.path());
    let mut publisher = attach(&store, &bucket_dir, parquet_on());
    let mut at = 0;
    let mut checked = 0;
    for b in 0..8 {
        at = barrier(&mut store, at, 50 + 2 * b);
        publish(&mut publisher, &store);
        if b % 4 == 3 {
            // Before compaction, after its first step (one partition merged out of the barrier
            // segments: their objects were replaced by ones of the rows left), and after it.
            checked += duckdb_agrees(&store, &bucket_dir);
            let mut steps = 0;
            while store.compact_step().unwrap().is_some() {
                publish(&mut publisher, &store);
                steps += 1;
                if steps == 1 {
                    checked += duckdb_agrees(&store, &bucket_dir);
                }
            }
            assert!(steps >= 2, "{steps} compaction steps");
            checked += duckdb_agrees(&store, &bucket_dir);
        }
    }
    assert_eq!(checked, 6 * (TRACKS.len() + UNITS.len()));
    assert!(at > 0);
}

/// Runs DuckDB over the bucket's Parquet objects of both streams and compares each track's
/// count, min, max and sum of every measured field with `Store::fold`. Returns the tracks
/// compared.
fn duckdb_agrees(store: &Store, bucket: &Path) -> usize {
    const SCRIPT: &str = r#"
import sys
try:
    import duckdb
except ImportError as e:
    sys.exit(f"python3 has no duckdb module ({e}): install it with `python3 -m pip install duckdb`, as CI does")
root, probe, line = sys.argv[1], sys.argv[2], sys.argv[3]
for stream, glob, track, fields in [
    ("probe", probe, "run, probe", ["v", "w"]),
    ("line", line, "unit", ["value"]),
]:
    aggs = ", ".join(f"min({f}), max({f}), sum({f})" for f in fields)
    sql = f"select {track}, count(*), {aggs} from read_parquet('{root}/{glob}') group by all order by all"
    for row in duckdb.sql(sql).fetchall():
        print("\t".join([stream] + [repr(v) if isinstance(v, float) else str(v) for v in row]))
"#;
    let output = Command::new("python3")
        .arg("-c")
        .arg(SCRIPT)
        .arg(bucket)
        .arg(strata_remote::parquet_glob("probe"))
        .arg(strata_remote::parquet_glob(LINE))
        .output()
        .unwrap_or_else(|e| {
            panic!("python3 does not run ({e}): the DuckDB check needs python3 with duckdb")
        });
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "python3 with duckdb failed (install it with `python3 -m pip install duckdb`, as CI \
         does): {}\n{stdout}\n{stderr}",
        output.status
    );
    let mut lines: BTreeMap<(String, Vec<String>), Vec<String>> = BTreeMap::new();
    for line in stdout.lines() {
        let cells: Vec<String> = line.split('\t').map(str::to_owned).collect();
        let (stream, track, rest) = match cells[0].as_str() {
            "probe" => ("probe", cells[1..3].to_vec(), cells[3..].to_vec()),
            "line" => (LINE, cells[1..2].to_vec(), cells[2..].to_vec()),
            other => panic!("{other}"),
        };
        lines.insert((stream.to_owned(), track), rest);
    }
    let tracks: Vec<(&str, Vec<&str>, Vec<&str>)> = TRACKS
        .iter()
        .map(|t| ("probe", t.to_vec(), vec!["v", "w"]))
        .chain(UNITS.iter().map(|u| (LINE, vec![*u], vec!["value"])))
        .collect();
    assert_eq!(lines.len(), tracks.len(), "DuckDB's groups:\n{stdout}");
    let mut compared = 0;
    for (stream, track, fields) in tracks {
        let key = (
            stream.to_owned(),
            track.iter().map(|s| (*s).to_owned()).collect(),
        );
        let duck = lines
            .get(&key)
            .unwrap_or_else(|| panic!("DuckDB has no group {key:?}:\n{stdout}"));
        let fold = |aggregate: Aggregate| store.fold(stream, &track, .., aggregate).unwrap();
        let count = fold(Aggregate::Count);
        let Some(Num::U64(n)) = count[0].value else {
            panic!("{count:?}")
        };
        assert_eq!(duck[0], n.to_string(), "{key:?}: count");
        let (min, max, sum) = (
            fold(Aggregate::Min),
            fold(Aggregate::Max),
            fold(Aggregate::Sum),
        );
        for (i, field) in fields.iter().enumerate() {
            for (j, (what, stats)) in [("min", &min), ("max", &max), ("sum", &sum)]
                .into_iter()
                .enumerate()
            {
                let stat = stats.iter().find(|s| s.field == *field).unwrap();
                let Some(Num::F64(ours)) = stat.value else {
                    panic!("{stat:?}")
                };
                let theirs: f64 = duck[1 + 3 * i + j].parse().unwrap();
                // Exactly: the values are multiples of 0.25 of small magnitude, so every sum
                // is exact in whatever order DuckDB and the store's levels add them.
                assert_eq!(
                    theirs.to_bits(),
                    ours.to_bits(),
                    "{key:?}: {what}({field}): DuckDB {theirs}, the store {ours}"
                );
            }
        }
        compared += 1;
    }
    compared
}
