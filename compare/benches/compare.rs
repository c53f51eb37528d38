//! strata beside SQLite and beside the machine's physical limits, on the same rows, in one run
//! (issue 13, item 8). The table it prints is the one in `docs/performance.md`.
//!
//! `cargo bench --manifest-path compare/Cargo.toml` (its own workspace, so CI never builds
//! SQLite). `STRATA_COMPARE_ROWS` (default 10^7, rounded up to whole commits) shrinks the run;
//! the stores are built under `std::env::temp_dir()`, so `TMPDIR` chooses the disk.
//!
//! The rows: a u64 axis `t` = 0, 1, 2, .. and an f64 random walk from a fixed seed, committed in
//! transactions of 10,000 rows. Every work is timed on both engines, alternating, after both hold
//! the same rows, warm (each read is run once before it is timed):
//!
//! - **durable ingest**: strata `publish_columns` + `seal` per 10,000 rows, one barrier each;
//!   SQLite (bundled) in WAL mode with `synchronous=FULL`, one transaction per 10,000 rows
//!   through a prepared insert into `s(t INTEGER PRIMARY KEY, v REAL)` (the rowid table, SQLite's
//!   most compact); and the **physical limit**: the bytes strata wrote for that barrier written
//!   sequentially with the same count of file and directory syncs strata issued (a new file
//!   holding the segment's bytes, `fdatasync`, the directory `fsync`ed as often as strata did,
//!   the manifest frame's bytes appended to a log, `fdatasync`). Between strata's barriers, up to
//!   `compact_steps_per_tick` compaction steps run as `Served` runs them, timed apart and
//!   reported, and `compact` finishes the job before the reads.
//! - **bytes on disk per row**: every file in strata's folder; SQLite's database after a
//!   `wal_checkpoint(TRUNCATE)`.
//! - **survey** (budget 4000: 1,000 buckets over the whole range) against SQL M4 (`GROUP BY t /
//!   width`: first, last, min, max values, count and sum; SQLite is not asked *where* its min and
//!   max lie, which strata answers too), and against the physical limit: a memory read of the
//!   bytes of the cells strata read.
//! - **fold mean** against `SELECT avg(v)`.
//! - **range read** of 10^6 rows (100 commits) against `SELECT t, v .. WHERE t BETWEEN`, and a
//!   memory read of those rows' 16 bytes each.

mod support;

use support::bytes_under;

use std::fs::File;
use std::hint::black_box;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput};
use rusqlite::Connection;
use strata::segment::Column;
use strata::{
    Aggregate, Config, FieldKind, ServeConfig, Store, Stream, StreamDecl, SurveyFill, Values,
};

const STREAM: &str = "series";
const BUDGET: u64 = 4000;
const COMMIT_ROWS: u64 = 10_000;
const ROWS_DEFAULT: u64 = 10_000_000;
/// Commits a range read spans: 10^6 rows.
const RANGE_COMMITS: u64 = 100;
/// Bytes of one stored level cell (`strata_segment::format::CellRecord`).
const CELL_BYTES: u64 = 112;

fn decl() -> StreamDecl {
    Stream::new(STREAM)
        .field("t", FieldKind::U64)
        .field("value", FieldKind::F64)
        .axis("t")
        .build()
        .expect("a valid declaration")
}

fn rows_total() -> u64 {
    let rows = std::env::var("STRATA_COMPARE_ROWS").map_or(ROWS_DEFAULT, |s| {
        s.replace('_', "")
            .parse()
            .expect("STRATA_COMPARE_ROWS is a whole number of rows")
    });
    rows.max(COMMIT_ROWS * RANGE_COMMITS).div_ceil(COMMIT_ROWS) * COMMIT_ROWS
}

/// A random walk from a fixed seed (xorshift64*), one commit's columns at a time.
struct Walk {
    state: u64,
    value: f64,
    t: u64,
    ts: Vec<u64>,
    vs: Vec<f64>,
}

impl Walk {
    fn new() -> Walk {
        Walk {
            state: 0x9E37_79B9_7F4A_7C15,
            value: 0.0,
            t: 0,
            ts: Vec::new(),
            vs: Vec::new(),
        }
    }

    fn next_commit(&mut self) {
        self.ts.clear();
        self.vs.clear();
        for _ in 0..COMMIT_ROWS {
            self.state ^= self.state >> 12;
            self.state ^= self.state << 25;
            self.state ^= self.state >> 27;
            let bits = self.state.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11;
            let unit = bits as f64 / (1u64 << 53) as f64;
            self.value += 2.0 * unit - 1.0;
            self.ts.push(self.t);
            self.vs.push(self.value);
            self.t += 1;
        }
    }
}

/// What one strata barrier wrote, for the physical limit to write again.
#[derive(Clone, Copy, Default)]
struct BarrierCost {
    segment_bytes: u64,
    manifest_bytes: u64,
    file_syncs: u64,
    dir_syncs: u64,
}

/// A copy of the store's files (all but its lock), for a second store opened on the same rows.
fn copy_store(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("the copy's folder");
    for entry in std::fs::read_dir(from).expect("the store's folder") {
        let entry = entry.expect("an entry");
        let name = entry.file_name();
        if name == "LOCK" {
            continue;
        }
        let target = to.join(&name);
        if entry.file_type().expect("a type").is_dir() {
            copy_store(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).expect("a copy");
        }
    }
}

fn manifest_bytes(root: &Path) -> u64 {
    std::fs::read_dir(root)
        .expect("the store's folder")
        .map(|e| e.expect("an entry"))
        .filter(|e| e.file_name().to_string_lossy().starts_with("manifest-"))
        .map(|e| e.metadata().expect("metadata").len())
        .sum()
}

struct Strata {
    dir: tempfile::TempDir,
    store: Store,
    position: u64,
    /// Time spent in compaction steps between barriers (not part of the ingest figure).
    compacting: Duration,
}

impl Strata {
    fn new() -> Strata {
        let dir = tempfile::tempdir().expect("a temp dir");
        let store =
            Store::open_or_create(dir.path(), Config::default(), &[decl()]).expect("a store");
        Strata {
            dir,
            store,
            position: 0,
            compacting: Duration::ZERO,
        }
    }

    /// Publishes and seals one commit; the time of both, and what the barrier wrote.
    fn commit(&mut self, walk: &Walk) -> (Duration, BarrierCost) {
        let before = self.store.metrics();
        let manifest_before = manifest_bytes(self.dir.path());
        let start = Instant::now();
        self.store
            .publish_columns(
                STREAM,
                self.position,
                &[],
                &[Values::U64(&walk.ts), Values::F64(&walk.vs)],
            )
            .expect("publish");
        self.store.seal().expect("seal");
        let elapsed = start.elapsed();
        self.position += 1;
        let after = self.store.metrics();
        // As a deployment runs it (`Served` grants `compact_steps_per_tick` steps after each
        // barrier): timed apart, so the ingest figure is publish + seal alone.
        let compact_start = Instant::now();
        for _ in 0..ServeConfig::default().compact_steps_per_tick {
            if self
                .store
                .compact_step()
                .expect("a compaction step")
                .is_none()
            {
                break;
            }
        }
        self.compacting += compact_start.elapsed();
        let cost = BarrierCost {
            segment_bytes: after.bytes_sealed - before.bytes_sealed,
            manifest_bytes: manifest_bytes(self.dir.path()).saturating_sub(manifest_before),
            file_syncs: after.file_syncs - before.file_syncs,
            dir_syncs: after.dir_syncs - before.dir_syncs,
        };
        (elapsed, cost)
    }
}

struct Sqlite {
    _dir: tempfile::TempDir,
    path: PathBuf,
    conn: Connection,
}

impl Sqlite {
    fn new() -> Sqlite {
        let dir = tempfile::tempdir().expect("a temp dir");
        let path = dir.path().join("s.db");
        let conn = Connection::open(&path).expect("a database");
        conn.pragma_update(None, "journal_mode", "WAL")
            .expect("WAL mode");
        conn.pragma_update(None, "synchronous", "FULL")
            .expect("synchronous=FULL");
        conn.execute(
            "CREATE TABLE s (t INTEGER PRIMARY KEY, v REAL NOT NULL)",
            [],
        )
        .expect("the table");
        Sqlite {
            _dir: dir,
            path,
            conn,
        }
    }

    fn commit(&mut self, walk: &Walk) -> Duration {
        let start = Instant::now();
        let tx = self.conn.transaction().expect("a transaction");
        {
            let mut insert = tx
                .prepare_cached("INSERT INTO s (t, v) VALUES (?1, ?2)")
                .expect("the insert");
            for (&t, &v) in walk.ts.iter().zip(&walk.vs) {
                insert
                    .execute((i64::try_from(t).expect("t fits i64"), v))
                    .expect("an insert");
            }
        }
        tx.commit().expect("commit");
        start.elapsed()
    }

    fn bytes_on_disk(&self) -> u64 {
        self.conn
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .expect("a checkpoint");
        let wal = self.path.with_extension("db-wal");
        std::fs::metadata(&self.path).expect("the database").len()
            + std::fs::metadata(wal).map_or(0, |m| m.len())
    }
}

/// The same bytes and syncs as a strata barrier, with nothing else.
struct Physical {
    dir: tempfile::TempDir,
    log: File,
    n: u64,
    buffer: Vec<u8>,
}

impl Physical {
    fn new() -> Physical {
        let dir = tempfile::tempdir().expect("a temp dir");
        let log = File::create(dir.path().join("log")).expect("the log");
        Physical {
            dir,
            log,
            n: 0,
            buffer: Vec::new(),
        }
    }

    fn commit(&mut self, cost: BarrierCost) -> Duration {
        let len = usize::try_from(cost.segment_bytes.max(cost.manifest_bytes)).expect("fits");
        if self.buffer.len() < len {
            self.buffer = (0..len).map(|i| (i * 31) as u8).collect();
        }
        let start = Instant::now();
        let mut file =
            File::create_new(self.dir.path().join(format!("{:012}", self.n))).expect("a new file");
        self.n += 1;
        file.write_all(&self.buffer[..usize::try_from(cost.segment_bytes).expect("fits")])
            .expect("a write");
        rustix::fs::fdatasync(&file).expect("fdatasync");
        let dir = File::open(self.dir.path()).expect("the folder");
        for _ in 0..cost.dir_syncs {
            rustix::fs::fsync(&dir).expect("fsync of the folder");
        }
        self.log
            .write_all(&self.buffer[..usize::try_from(cost.manifest_bytes).expect("fits")])
            .expect("a log write");
        for _ in 1..cost.file_syncs.max(1) {
            rustix::fs::fdatasync(&self.log).expect("fdatasync of the log");
        }
        start.elapsed()
    }
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort_unstable();
    times[times.len() / 2]
}

fn show(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s < 1e-3 {
        format!("{:.1} µs", s * 1e6)
    } else if s < 1.0 {
        format!("{:.2} ms", s * 1e3)
    } else {
        format!("{s:.2} s")
    }
}

fn rate(rows: u64, d: Duration) -> String {
    format!("{:.2} M rows/s", rows as f64 / d.as_secs_f64() / 1e6)
}

/// Ingest: both engines take the same commits, alternating, with the physical limit replaying
/// each strata barrier's bytes and syncs right after it.
struct Ingest {
    strata: Vec<Duration>,
    sqlite: Vec<Duration>,
    physical: Vec<Duration>,
    cost: BarrierCost,
}

fn ingest(n: u64, strata: &mut Strata, sqlite: &mut Sqlite) -> Ingest {
    let mut walk = Walk::new();
    let mut physical = Physical::new();
    let mut out = Ingest {
        strata: Vec::new(),
        sqlite: Vec::new(),
        physical: Vec::new(),
        cost: BarrierCost::default(),
    };
    for _ in 0..n / COMMIT_ROWS {
        walk.next_commit();
        let (t, cost) = strata.commit(&walk);
        out.strata.push(t);
        out.sqlite.push(sqlite.commit(&walk));
        out.physical.push(physical.commit(cost));
        out.cost.segment_bytes += cost.segment_bytes;
        out.cost.manifest_bytes += cost.manifest_bytes;
        out.cost.file_syncs += cost.file_syncs;
        out.cost.dir_syncs += cost.dir_syncs;
    }
    out
}

fn survey(store: &Store) -> strata::Survey {
    store.survey(STREAM, &[], .., BUDGET).expect("survey")
}

/// SQL M4 over the whole range in 1,000 groups: first, last, min, max values, count, sum.
fn sql_m4(conn: &Connection, width: u64) -> Vec<(i64, f64, f64, f64, f64, i64, f64)> {
    let mut statement = conn
        .prepare_cached(
            "WITH g AS (SELECT t / ?1 AS b, min(t) AS t0, max(t) AS t1, min(v) AS lo, \
             max(v) AS hi, count(*) AS n, sum(v) AS s FROM s GROUP BY b) \
             SELECT g.b, (SELECT v FROM s WHERE t = g.t0), (SELECT v FROM s WHERE t = g.t1), \
             g.lo, g.hi, g.n, g.s FROM g ORDER BY g.b",
        )
        .expect("the M4 query");
    statement
        .query_map([i64::try_from(width).expect("fits")], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
                r.get(6)?,
            ))
        })
        .expect("M4 rows")
        .collect::<Result<_, _>>()
        .expect("M4 rows")
}

fn fold_mean(store: &Store) -> f64 {
    let stats = store
        .fold(STREAM, &[], .., Aggregate::Mean)
        .expect("fold mean");
    match stats[0].value {
        Some(strata::Num::F64(mean)) => mean,
        ref other => panic!("a mean, not {other:?}"),
    }
}

fn sql_avg(conn: &Connection) -> f64 {
    conn.query_row("SELECT avg(v) FROM s", [], |r| r.get(0))
        .expect("avg")
}

/// The rows of commits `first..first + RANGE_COMMITS` as column runs (slices of the mapped
/// files): their count and value sum.
fn range_read(store: &Store, first: u64) -> (u64, f64) {
    let (mut n, mut sum) = (0u64, 0.0);
    for run in store
        .query_runs(STREAM, &[], first..first + RANGE_COMMITS)
        .expect("query")
    {
        let run = run.expect("a run");
        n += run.len() as u64;
        let Some(Column::F64(values)) = run.column(1) else {
            panic!("the value column is f64")
        };
        sum = values.iter().fold(sum, |s, v| s + v.get());
    }
    (n, sum)
}

/// The same rows one at a time, each a `StoredRow` (a position and a `Vec<Value>`).
fn range_read_rows(store: &Store, first: u64) -> (u64, f64) {
    let (mut n, mut sum) = (0u64, 0.0);
    for row in store
        .query_iter(STREAM, &[], first..first + RANGE_COMMITS)
        .expect("query")
    {
        let row = row.expect("a row");
        n += 1;
        if let strata::Value::F64(v) = row.values[1] {
            sum += v;
        }
    }
    (n, sum)
}

fn sql_range(conn: &Connection, first: u64) -> (u64, f64) {
    let lo = i64::try_from(first * COMMIT_ROWS).expect("fits");
    let hi = lo + i64::try_from(RANGE_COMMITS * COMMIT_ROWS).expect("fits") - 1;
    let mut statement = conn
        .prepare_cached("SELECT t, v FROM s WHERE t BETWEEN ?1 AND ?2")
        .expect("the range query");
    let mut rows = statement.query([lo, hi]).expect("range rows");
    let (mut n, mut sum) = (0u64, 0.0);
    while let Some(row) = rows.next().expect("a row") {
        let _t: i64 = row.get(0).expect("t");
        let v: f64 = row.get(1).expect("v");
        n += 1;
        sum += v;
    }
    (n, sum)
}

/// A memory read of `words` u64s: the floor under any read of that many bytes.
fn memory_read(bytes: &[u64]) -> u64 {
    bytes.iter().fold(0u64, |a, &b| a.wrapping_add(b))
}

/// One timed call of a read, for the alternating medians.
type Timer<'a> = &'a dyn Fn() -> Duration;

fn timed<T>(f: impl FnOnce() -> T) -> Duration {
    let start = Instant::now();
    black_box(f());
    start.elapsed()
}

#[allow(clippy::too_many_lines)] // one run, one table: kept in one place to be read top to bottom
fn main() {
    let n = rows_total();
    println!(
        "compare: {n} rows (u64 axis, f64 random walk), commits of {COMMIT_ROWS} rows; temp dir {}",
        std::env::temp_dir().display()
    );
    let mut strata = Strata::new();
    let mut sqlite = Sqlite::new();
    let load = ingest(n, &mut strata, &mut sqlite);
    let commits = n / COMMIT_ROWS;
    let sum = |v: &[Duration]| v.iter().sum::<Duration>();
    let [strata_total, sqlite_total, physical_total] =
        [&load.strata, &load.sqlite, &load.physical].map(|v| sum(v));
    let [strata_median, sqlite_median, physical_median] =
        [&load.strata, &load.sqlite, &load.physical].map(|v| median(v.clone()));

    let strata_bytes = bytes_under(strata.dir.path());
    // Compaction ran between the barriers; once they stop, `compact` finishes it, and reads
    // are measured on the store as compaction leaves it.
    let files_sealed = strata.store.catalog().live_files().count();
    let compact_start = Instant::now();
    let steps = strata.store.compact().expect("compact").len();
    let compact_time = compact_start.elapsed();
    let files_compacted = strata.store.catalog().live_files().count();
    let sqlite_bytes = sqlite.bytes_on_disk();

    // Both hold the same rows.
    let count = strata
        .store
        .fold(STREAM, &[], .., Aggregate::Count)
        .expect("count");
    println!("strata counts {:?}", count[0].value);
    let mean = fold_mean(&strata.store);
    let avg = sql_avg(&sqlite.conn);
    assert!(
        (mean - avg).abs() <= 1e-6 * avg.abs().max(1.0),
        "both engines hold the same rows: mean {mean} against avg {avg}"
    );

    // The same rows answering surveys under `SurveyFill::Spend` (the default is the contract's
    // finest-level rule): a copy of the store, opened with that choice.
    let spend_dir = tempfile::tempdir().expect("a temp dir");
    copy_store(strata.dir.path(), spend_dir.path());
    let spend = Store::open_or_create(
        spend_dir.path(),
        Config::default().survey_fill(SurveyFill::Spend),
        &[decl()],
    )
    .expect("the copy");

    let width = n.div_ceil(BUDGET / 4);
    let first = (commits - RANGE_COMMITS) / 2;
    let expected = sql_range(&sqlite.conn, first);
    for (got, how) in [
        (range_read(&strata.store, first), "runs"),
        (range_read_rows(&strata.store, first), "rows"),
    ] {
        assert_eq!(
            got, expected,
            "strata's range read as {how} answers SQLite's rows"
        );
    }
    let shape = survey(&strata.store);
    let buckets = shape.fields[0].buckets.len();
    let m4 = sql_m4(&sqlite.conn, width);
    let spent = survey(&spend);
    let spent_buckets = spent.fields[0].buckets.len();
    let cells_read = |store: &Store| {
        let before = store.metrics().cells_read;
        survey(store);
        store.metrics().cells_read - before
    };
    let cells = cells_read(&strata.store);
    let spent_cells = cells_read(&spend);
    let cell_words: Vec<u64> = (0..cells * CELL_BYTES / 8).collect();
    let spent_cell_words: Vec<u64> = (0..spent_cells * CELL_BYTES / 8).collect();
    let range_words: Vec<u64> = (0..RANGE_COMMITS * COMMIT_ROWS * 2).collect();

    let mut criterion = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .configure_from_args();
    {
        let mut group = criterion.benchmark_group(format!("compare_{n}_rows"));
        group.bench_function(BenchmarkId::new("survey_4000", "strata"), |b| {
            b.iter(|| survey(&strata.store));
        });
        group.bench_function(BenchmarkId::new("survey_4000", "strata_spend"), |b| {
            b.iter(|| survey(&spend));
        });
        group.bench_function(BenchmarkId::new("survey_4000", "sqlite_m4"), |b| {
            b.iter(|| sql_m4(&sqlite.conn, width));
        });
        group.bench_function(
            BenchmarkId::new("survey_4000", "memory_read_of_cells"),
            |b| {
                b.iter(|| memory_read(&cell_words));
            },
        );
        group.bench_function(BenchmarkId::new("fold_mean", "strata"), |b| {
            b.iter(|| fold_mean(&strata.store));
        });
        group.bench_function(BenchmarkId::new("fold_mean", "sqlite_avg"), |b| {
            b.iter(|| sql_avg(&sqlite.conn));
        });
        group.throughput(Throughput::Elements(RANGE_COMMITS * COMMIT_ROWS));
        group.bench_function(BenchmarkId::new("range_read", "strata"), |b| {
            b.iter(|| range_read(&strata.store, first));
        });
        group.bench_function(BenchmarkId::new("range_read", "strata_rows"), |b| {
            b.iter(|| range_read_rows(&strata.store, first));
        });
        group.bench_function(BenchmarkId::new("range_read", "sqlite"), |b| {
            b.iter(|| sql_range(&sqlite.conn, first));
        });
        group.bench_function(BenchmarkId::new("range_read", "memory_read"), |b| {
            b.iter(|| memory_read(&range_words));
        });
        group.finish();
    }
    criterion.final_summary();

    // The table: each pair alternates, so both sides see the same load.
    const READS: usize = 5;
    const ROUNDS: usize = 3;
    let finest_what = format!("survey, budget 4000, finest level ({buckets} buckets, warm)");
    let spend_what = format!("survey, budget 4000, spend ({spent_buckets} buckets, warm)");
    let pairs: [(&str, Timer, Timer, Timer); 5] = [
        (
            &finest_what,
            &|| timed(|| survey(&strata.store)),
            &|| timed(|| sql_m4(&sqlite.conn, width)),
            &|| timed(|| memory_read(&cell_words)),
        ),
        (
            &spend_what,
            &|| timed(|| survey(&spend)),
            &|| timed(|| sql_m4(&sqlite.conn, width)),
            &|| timed(|| memory_read(&spent_cell_words)),
        ),
        (
            "fold mean, whole range",
            &|| timed(|| fold_mean(&strata.store)),
            &|| timed(|| sql_avg(&sqlite.conn)),
            &|| Duration::ZERO,
        ),
        (
            "range read, 10^6 rows as rows (`query_iter`)",
            &|| timed(|| range_read_rows(&strata.store, first)),
            &|| timed(|| sql_range(&sqlite.conn, first)),
            &|| timed(|| memory_read(&range_words)),
        ),
        (
            "range read, 10^6 rows as column runs (`query_runs`)",
            &|| timed(|| range_read(&strata.store, first)),
            &|| timed(|| sql_range(&sqlite.conn, first)),
            &|| timed(|| memory_read(&range_words)),
        ),
    ];
    println!();
    println!("| work | strata | SQLite | SQLite/strata | physical limit | strata/limit |");
    println!("|---|---|---|---|---|---|");
    println!(
        "| durable ingest, {COMMIT_ROWS}-row commits (total) | {} | {} | {:.2}× | {} | {:.2} of the limit |",
        rate(n, strata_total),
        rate(n, sqlite_total),
        sqlite_total.as_secs_f64() / strata_total.as_secs_f64(),
        rate(n, physical_total),
        physical_total.as_secs_f64() / strata_total.as_secs_f64(),
    );
    println!(
        "| durable ingest, median commit | {} | {} | {:.2}× | {} | {:.2} of the limit |",
        show(strata_median),
        show(sqlite_median),
        sqlite_median.as_secs_f64() / strata_median.as_secs_f64(),
        show(physical_median),
        physical_median.as_secs_f64() / strata_median.as_secs_f64(),
    );
    println!(
        "| bytes on disk per row | {:.2} | {:.2} | {:.2}× | 16 (the two fields) | {:.2}× the fields |",
        strata_bytes as f64 / n as f64,
        sqlite_bytes as f64 / n as f64,
        sqlite_bytes as f64 / strata_bytes as f64,
        strata_bytes as f64 / n as f64 / 16.0,
    );
    for (what, ours, theirs, limit) in pairs {
        // Blocks of consecutive calls (each call timed, the first of a block not counted), the
        // three sides' blocks alternating: each side runs warm in its own caches, as criterion
        // times it, and all three see the same load on a shared machine.
        let (mut a, mut b, mut c) = (vec![], vec![], vec![]);
        for _ in 0..ROUNDS {
            for (side, times) in [(ours, &mut a), (theirs, &mut b), (limit, &mut c)] {
                side();
                times.extend((0..READS).map(|_| side()));
            }
        }
        let [a, b, c] = [median(a), median(b), median(c)];
        let limit = if c.is_zero() {
            "-".to_owned()
        } else {
            format!("{} | {:.2}×", show(c), a.as_secs_f64() / c.as_secs_f64())
        };
        let limit = if c.is_zero() {
            format!("{limit} | -")
        } else {
            limit
        };
        println!(
            "| {what} | {} | {} | {:.1}× | {limit} |",
            show(a),
            show(b),
            b.as_secs_f64() / a.as_secs_f64(),
        );
    }
    println!();
    println!(
        "strata: {commits} barriers wrote {} segment bytes and {} manifest bytes with {} file \
         syncs and {} directory syncs; {strata_bytes} bytes on disk. SQLite: {sqlite_bytes} bytes.",
        load.cost.segment_bytes,
        load.cost.manifest_bytes,
        load.cost.file_syncs,
        load.cost.dir_syncs
    );
    println!(
        "compaction: steps between barriers took {} (untimed in the ingest figure); then \
         {files_sealed} live files -> {files_compacted} in {steps} more steps, {}; {} bytes on \
         disk after it.",
        show(strata.compacting),
        show(compact_time),
        bytes_under(strata.dir.path())
    );
    println!(
        "survey: finest level {buckets} buckets from {cells} cells ({} bytes read); spend \
         {spent_buckets} buckets from {spent_cells} cells ({} bytes); SQL M4 answered {} groups \
         of width {width}.",
        cells * CELL_BYTES,
        spent_cells * CELL_BYTES,
        m4.len()
    );
}
