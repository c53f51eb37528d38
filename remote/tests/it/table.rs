//! The bucket as a table (#53): with Parquet on, each publish commits one version of each
//! stream's Delta table, and a reader of the table — the `deltalake` package from PyPI, a
//! reader no code here wrote, run as `python3 -c` — sees exactly one published state at a
//! time, however the writer's ingests and compactions interleave with its reads; a glob of
//! the same objects does not. Objects a version removes stay for the retention, then go.
//! Never skipped: without python3 and its `deltalake` module the tests fail, saying so (CI
//! installs it: .ci/run).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use strata_engine::Store;
use strata_remote::{Bucket, DELTA_LOG_DIR, Publisher, RemoteConfig, RemoteError};

use crate::fault_store::{Fault, FaultStore};
use crate::support::{TRACKS, config, decl, rows};

fn file_bucket(dir: &Path) -> Bucket {
    Bucket::open_url(&format!("file://{}", dir.display()), true).unwrap()
}

/// One barrier: `n` rows of every track from row index `*at`, sealed. Returns the rows the
/// store holds after it.
fn ingest(store: &mut Store, at: &mut u64, n: u64) -> u64 {
    for track in TRACKS {
        store
            .publish("probe", *at + 1, &rows(track, *at, n))
            .unwrap();
    }
    store.seal().unwrap();
    *at += n;
    *at * TRACKS.len() as u64
}

/// The table's root: `parquet/probe/` of the bucket.
fn table_dir(bucket: &Path) -> PathBuf {
    bucket.join("parquet").join("probe")
}

/// The versions in the table's log.
fn versions(bucket: &Path) -> usize {
    std::fs::read_dir(table_dir(bucket).join(DELTA_LOG_DIR)).map_or(0, |dir| {
        dir.filter(|e| {
            let name = e.as_ref().unwrap().file_name();
            let name = name.to_string_lossy();
            name.len() == 25 && name.ends_with(".json")
        })
        .count()
    })
}

/// The versions the table's log holds checkpoints of.
fn checkpoints(bucket: &Path) -> Vec<usize> {
    let mut found: Vec<usize> = std::fs::read_dir(table_dir(bucket).join(DELTA_LOG_DIR))
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().into_string().unwrap();
            name.strip_suffix(".checkpoint.parquet")?.parse().ok()
        })
        .collect();
    found.sort_unstable();
    found
}

/// The table's newest version's row count as DuckDB's `delta_scan` reads it (its extension
/// loaded from the file the PyPI package `duckdb-extension-delta` holds: no network).
fn duckdb_count(bucket: &Path) -> u64 {
    const SCRIPT: &str = r#"
import glob, os, sys
import duckdb, duckdb_extension_delta
ext = glob.glob(os.path.join(os.path.dirname(duckdb_extension_delta.__file__), "extensions", "*", "delta.duckdb_extension"))
con = duckdb.connect()
con.execute(f"LOAD '{ext[0]}'")
print(con.sql(f"select count(*) from delta_scan('{sys.argv[1]}')").fetchall()[0][0])
"#;
    let table = table_dir(bucket);
    python(SCRIPT, &[table.to_str().unwrap()])
        .trim()
        .parse()
        .unwrap()
}

/// The rows of every Parquet object in the table's folder, as a glob reads them (its footers'
/// row counts).
fn glob_rows(bucket: &Path) -> u64 {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    let mut rows = 0;
    for entry in std::fs::read_dir(table_dir(bucket)).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "parquet") {
            let reader = SerializedFileReader::new(std::fs::File::open(&path).unwrap()).unwrap();
            rows += u64::try_from(reader.metadata().file_metadata().num_rows()).unwrap();
        }
    }
    rows
}

/// Runs `script` with `args` under python3, failing the test (naming what to install) if it
/// cannot run or fails. Returns its standard output.
fn python(script: &str, args: &[&str]) -> String {
    let output = Command::new("python3")
        .arg("-c")
        .arg(script)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("python3 does not run ({e}): the table checks need it"));
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "python3 with deltalake failed (install it with `python3 -m pip install deltalake`, as \
         CI does): {}\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// The table's row count at `version` (the newest when `None`), as the `deltalake` package
/// reads it; `Err` with the reader's complaint when it cannot read that version.
fn table_count(bucket: &Path, version: Option<u64>) -> Result<u64, String> {
    const SCRIPT: &str = r"
import sys, deltalake
version = None if sys.argv[2] == 'newest' else int(sys.argv[2])
try:
    table = deltalake.DeltaTable(sys.argv[1], version=version)
    print('rows', table.to_pyarrow_dataset().count_rows())
except Exception as e:
    print('error', type(e).__name__, str(e).replace(chr(10), ' ')[:300])
";
    let version = version.map_or("newest".to_owned(), |v| v.to_string());
    let table = table_dir(bucket);
    let out = python(SCRIPT, &[table.to_str().unwrap(), &version]);
    match out.trim().split_once(' ') {
        Some(("rows", n)) => Ok(n.parse().unwrap()),
        _ => Err(out),
    }
}

/// The reader the concurrency test runs beside the writer: in a loop until `stop` exists (and
/// once more after), it loads the table's newest version with `deltalake` and counts its rows
/// (`table VERSION ROWS`), then counts the rows of every object the folder's glob lists, as
/// a glob-reading engine would (`glob ROWS`, or `glob-error` when an object it listed is gone).
const READER: &str = r"
import glob, os, sys
try:
    import deltalake, pyarrow.parquet as pq
except ImportError as e:
    sys.exit(f'python3 lacks a module ({e}): install deltalake and pyarrow, as CI does')
table, stop = sys.argv[1], sys.argv[2]
while True:
    last = os.path.exists(stop)
    try:
        dt = deltalake.DeltaTable(table)
        print('table', dt.version(), dt.to_pyarrow_dataset().count_rows(), flush=True)
    except Exception as e:
        print('table-error', type(e).__name__, str(e).replace(chr(10), ' ')[:300], flush=True)
    try:
        files = glob.glob(table + '/*.parquet')
        print('glob', sum(pq.ParquetFile(f).metadata.num_rows for f in files), flush=True)
    except Exception as e:
        print('glob-error', type(e).__name__, flush=True)
    if last:
        break
";

/// What the concurrent reader saw: the versions it read, its reads of the table and of the
/// glob, and the glob's reads whose count was no published state's.
struct ReaderLog {
    seen: BTreeSet<usize>,
    table_reads: usize,
    glob_reads: usize,
    glob_wrong: usize,
}

/// Checks every table read of the reader's output against `counts` (the rows of the state
/// each version holds), and tallies the glob's reads.
fn reads(stdout: &str, counts: &[u64]) -> ReaderLog {
    let mut seen = BTreeSet::new();
    let (mut table_reads, mut glob_reads, mut glob_wrong) = (0, 0, 0);
    let published: BTreeSet<u64> = counts.iter().copied().collect();
    for line in stdout.lines() {
        let words: Vec<&str> = line.split(' ').collect();
        match words[0] {
            "table" => {
                let version: usize = words[1].parse().unwrap();
                let rows: u64 = words[2].parse().unwrap();
                assert_eq!(
                    rows, counts[version],
                    "version {version} of the table counts {rows} rows, the state it holds \
                     {}: a row read twice or missed",
                    counts[version]
                );
                seen.insert(version);
                table_reads += 1;
            }
            "glob" => {
                glob_reads += 1;
                let rows: u64 = words[1].parse().unwrap();
                glob_wrong += usize::from(!published.contains(&rows));
            }
            "glob-error" => glob_reads += 1,
            _ => panic!("the table could not be read: {line}"),
        }
    }
    ReaderLog {
        seen,
        table_reads,
        glob_reads,
        glob_wrong,
    }
}

/// A reader reads the table in a loop while a writer ingests and compacts through 220
/// publishes: every read's row count is exactly that of the state the version it read
/// published (version `v` is the `v`th publish), never a row twice or a row missing. The glob
/// over the same folder, read alongside, counts rows twice once a compaction has replaced
/// objects (they stay for the retention, as a reader of an older version needs them).
#[test]
fn a_reader_of_the_table_sees_exactly_one_published_state_while_the_writer_compacts() {
    const PUBLISHES: usize = 220;
    let root = tempfile::tempdir().unwrap();
    let bucket = root.path().join("bucket");
    let mut store = Store::create(root.path().join("store"), config(), &[decl()]).unwrap();
    let retention = Duration::from_secs(600);
    // A checkpoint every 10 versions: the reader starts from one most of the time.
    let remote = RemoteConfig::default()
        .parquet(true)
        .table_retention(retention)
        .table_checkpoint_every(10);
    let mut publisher = Publisher::attach(&store, file_bucket(&bucket), remote).unwrap();
    // counts[v]: the rows of the state version v of the table holds.
    let mut counts: Vec<u64> = Vec::new();
    let mut publish = |store: &Store, rows: u64, counts: &mut Vec<u64>| {
        let published = publisher.publish(store).unwrap();
        assert!(published.seq.is_some(), "every change is a publish");
        assert_eq!(published.table_versions, 1, "one version per publish");
        counts.push(rows);
    };
    let mut at = 0;
    let rows = ingest(&mut store, &mut at, 20);
    publish(&store, rows, &mut counts);

    let stop = root.path().join("stop");
    let table = table_dir(&bucket);
    let reader = Command::new("python3")
        .arg("-c")
        .arg(READER)
        .arg(&table)
        .arg(&stop)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 runs (CI installs deltalake and pyarrow: .ci/run)");
    let (mut compactions, mut n) = (0, 1);
    while counts.len() < PUBLISHES {
        n += 1;
        let rows = ingest(&mut store, &mut at, 10 + n % 7);
        publish(&store, rows, &mut counts);
        if n % 12 == 0 {
            while counts.len() < PUBLISHES && store.compact_step().unwrap().is_some() {
                publish(&store, rows, &mut counts);
                compactions += 1;
            }
        }
        // Give the reader time to load versions between publishes now and then.
        if n % 20 == 0 {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    std::fs::write(&stop, b"").unwrap();
    let output = reader.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the reader failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(compactions >= 10, "{compactions} compaction steps");
    assert_eq!(
        versions(&bucket),
        PUBLISHES,
        "the table's versions are the publishes"
    );
    assert_eq!(
        checkpoints(&bucket),
        (10..PUBLISHES).step_by(10).collect::<Vec<_>>()
    );

    let ReaderLog {
        seen,
        table_reads,
        glob_reads,
        glob_wrong,
    } = reads(&stdout, &counts);
    assert!(
        seen.len() >= 5 && table_reads >= 5,
        "the reader read {table_reads} times, {} versions: {seen:?}",
        seen.len()
    );
    assert!(glob_reads >= table_reads);
    // The last read, after the writer stopped, is of the newest version.
    assert_eq!(seen.last(), Some(&(PUBLISHES - 1)));
    // Today's glob, beside it: the objects compaction replaced are still there (a reader of an
    // older version may be reading them), so it counts their rows twice.
    assert!(
        glob_wrong >= 1,
        "a glob read while compaction ran counted the rows of some published state each \
         time: {stdout}"
    );
    let held = counts[PUBLISHES - 1];
    assert!(
        glob_rows(&bucket) > held,
        "the glob counts replaced objects"
    );
    assert_eq!(table_count(&bucket, None), Ok(held));
}

/// An object a version removes stays while the retention lasts — a reader of the older
/// version reads it whole — and is deleted by the first publish after, even by a writer that
/// attached since (the retention counted by the object store's clock). Then the older version
/// is no longer offered: a reader asking for it is refused, never answered short.
#[test]
fn removed_objects_stay_for_the_retention_then_go() {
    let root = tempfile::tempdir().unwrap();
    let bucket = root.path().join("bucket");
    let mut store = Store::create(root.path().join("store"), config(), &[decl()]).unwrap();
    let retention = Duration::from_secs(3);
    let remote = RemoteConfig::default()
        .parquet(true)
        .table_retention(retention);
    let mut publisher = Publisher::attach(&store, file_bucket(&bucket), remote.clone()).unwrap();
    let mut at = 0;
    let mut rows = 0;
    for _ in 0..6 {
        rows = ingest(&mut store, &mut at, 40);
        publisher.publish(&store).unwrap();
    }
    let before = versions(&bucket) as u64 - 1;
    let objects_before = glob_rows(&bucket);
    assert_eq!(objects_before, rows);
    assert!(store.compact_step().unwrap().is_some());
    let compacted = Instant::now();
    let published = publisher.publish(&store).unwrap();
    assert_eq!(published.parquet_deleted, 0, "{published:?}");
    assert!(published.parquet >= 1);
    // The older version is still whole, the newer one too, and the folder holds both.
    assert_eq!(table_count(&bucket, Some(before)), Ok(rows));
    assert_eq!(table_count(&bucket, None), Ok(rows));
    assert!(glob_rows(&bucket) > rows);
    if compacted.elapsed() >= retention {
        // The machine was too slow to see the retention from inside: nothing more to show.
        return;
    }
    // A new writer (a new command, say) after the retention: it finds what is due from the
    // object store's times alone.
    drop(publisher);
    std::thread::sleep(retention.saturating_sub(compacted.elapsed()) + Duration::from_millis(300));
    let mut publisher = Publisher::attach(&store, file_bucket(&bucket), remote).unwrap();
    rows = ingest(&mut store, &mut at, 10);
    let published = publisher.publish(&store).unwrap();
    assert!(published.parquet_deleted >= 1, "{published:?}");
    assert_eq!(
        glob_rows(&bucket),
        rows,
        "only the newest state's objects are left"
    );
    assert_eq!(table_count(&bucket, None), Ok(rows));
    let old = table_count(&bucket, Some(before));
    assert!(
        old.is_err(),
        "version {before} is past the retention: {old:?}"
    );
}

/// A regression test (found in review): an object that waited unclaimed — put by a publish
/// whose table commit failed, found by a writer that attached after the retention — and that
/// a version then adds is timed afresh when a later version removes it. Before the fix its
/// old time stood, and the compaction step that replaced it deleted it at once, from under a
/// reader of the version before.
#[test]
fn an_object_committed_late_waits_the_whole_retention_once_removed() {
    let objects = FaultStore::new();
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::create(dir.path(), config(), &[decl()]).unwrap();
    let retention = Duration::from_secs(2);
    let remote = RemoteConfig::default()
        .parquet(true)
        .table_retention(retention);
    let mut publisher = Publisher::attach(&store, objects.bucket(), remote.clone()).unwrap();
    let mut at = 0;
    for _ in 0..3 {
        ingest(&mut store, &mut at, 40);
        publisher.publish(&store).unwrap();
    }
    // The segment, log/S and the barrier's object land; the table's version does not.
    ingest(&mut store, &mut at, 40);
    objects.arm(4, Fault::FailBefore);
    let error = publisher.publish(&store).unwrap_err();
    assert!(
        matches!(&error, RemoteError::Parquet { key, .. } if key.contains(DELTA_LOG_DIR)),
        "{error}"
    );
    drop(publisher);
    std::thread::sleep(retention + Duration::from_millis(300));
    let mut publisher = Publisher::attach(&store, objects.bucket(), remote).unwrap();
    let published = publisher.publish(&store).unwrap();
    assert_eq!(published.seq, None, "log/S was published before");
    assert_eq!(published.table_versions, 1, "log/S's version, late");
    assert_eq!(published.parquet_deleted, 0);
    let start = Instant::now();
    let mut steps = 0;
    while store.compact_step().unwrap().is_some() {
        let published = publisher.publish(&store).unwrap();
        steps += 1;
        if start.elapsed() < retention {
            assert_eq!(
                published.parquet_deleted, 0,
                "compaction step {steps}: an object deleted within the retention"
            );
        }
    }
    assert!(steps >= 1);
}

/// Every `table_checkpoint_every`th version is also a checkpoint (Parquet), and readers start
/// from it: with the commits before it gone, `deltalake` and DuckDB's `delta_scan` read the
/// same table, and a publisher that attaches replays from the checkpoint and goes on.
#[test]
fn a_table_read_from_its_checkpoint_alone_is_the_same_table() {
    let root = tempfile::tempdir().unwrap();
    let bucket = root.path().join("bucket");
    let mut store = Store::create(root.path().join("store"), config(), &[decl()]).unwrap();
    let remote = RemoteConfig::default()
        .parquet(true)
        .table_retention(Duration::from_secs(600))
        .table_checkpoint_every(5);
    let mut publisher = Publisher::attach(&store, file_bucket(&bucket), remote.clone()).unwrap();
    let mut at = 0;
    let mut rows = 0;
    let mut publishes = 0;
    while publishes < 12 {
        rows = ingest(&mut store, &mut at, 30);
        publisher.publish(&store).unwrap();
        publishes += 1;
        if publishes % 4 == 0 {
            while publishes < 12 && store.compact_step().unwrap().is_some() {
                publisher.publish(&store).unwrap();
                publishes += 1;
            }
        }
    }
    assert_eq!(checkpoints(&bucket), [5, 10]);
    let last = std::fs::read_to_string(table_dir(&bucket).join("_delta_log/_last_checkpoint"));
    assert!(last.unwrap().contains(r#""version":10"#));
    assert_eq!(table_count(&bucket, None), Ok(rows));
    assert_eq!(duckdb_count(&bucket), rows);
    // The commits before the newest checkpoint, gone: what a reader reads is the checkpoint
    // and version 11.
    for version in 0..=10 {
        let name = format!("{version:020}.json");
        std::fs::remove_file(table_dir(&bucket).join(DELTA_LOG_DIR).join(name)).unwrap();
    }
    assert_eq!(table_count(&bucket, None), Ok(rows));
    assert_eq!(duckdb_count(&bucket), rows);
    drop(publisher);
    let mut publisher = Publisher::attach(&store, file_bucket(&bucket), remote).unwrap();
    rows = ingest(&mut store, &mut at, 30);
    let published = publisher.publish(&store).unwrap();
    assert_eq!(published.table_versions, 1);
    assert_eq!(versions(&bucket), 2, "versions 11 and 12 are left");
    assert_eq!(table_count(&bucket, None), Ok(rows));
    assert_eq!(duckdb_count(&bucket), rows);
}
