//! A store after many barriers and compaction, against the same rows sealed in one barrier
//! (issue 11, first acceptance line): survey, fold and reopen latency, and their ratios.
//!
//! `cargo bench --bench lifecycle`. Builds, once per run, two stores of one partition holding
//! the same rows (a u64 axis 0, 1, 2, .. and an f64 random walk from a fixed seed):
//!
//! - **many**: sealed in barriers of 1,000 rows, each followed by up to
//!   `ServeConfig::default().compact_steps_per_tick` (4) `Store::compact_step`s, as `Served`
//!   grants after every barrier; then one `Store::compact()` once the barriers stop. The policy
//!   runs under continuing barriers, not once over 10,000 files.
//! - **one**: the same rows sealed in one barrier.
//!
//! Then it times, on each store, a warm full-range survey at budget 4000, a fold of the mean over
//! the whole range, and a reopen (drop the store, `Store::open` again: boot done, a read could be
//! served; the drop is not timed). Target: every ratio many/one at most 2.
//!
//! `STRATA_LIFECYCLE_ROWS` (default 10^7, rounded up to whole barriers) shrinks the run for a
//! quick try. The stores are built under `std::env::temp_dir()`, so `TMPDIR` chooses the disk.

use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion};
use strata::index::TrackKey;
use strata::{Aggregate, Config, FieldKind, Row, ServeConfig, Store, Stream, StreamDecl, Value};

const STREAM: &str = "series";
const BUDGET: u64 = 4000;
const ROWS_PER_BARRIER: u64 = 1000;
const ROWS_DEFAULT: u64 = 10_000_000;

fn decl() -> StreamDecl {
    Stream::new(STREAM)
        .field("t", FieldKind::U64)
        .field("value", FieldKind::F64)
        .axis("t")
        .build()
        .expect("a valid declaration")
}

/// The same config for both stores; staging is large enough for all rows in one barrier.
fn config() -> Config {
    Config::default().staged_bytes_max(1 << 30)
}

fn rows_total() -> u64 {
    let rows = std::env::var("STRATA_LIFECYCLE_ROWS").map_or(ROWS_DEFAULT, |s| {
        s.replace('_', "")
            .parse()
            .expect("STRATA_LIFECYCLE_ROWS is a whole number of rows")
    });
    rows.max(1).div_ceil(ROWS_PER_BARRIER) * ROWS_PER_BARRIER
}

/// A random walk from a fixed seed (xorshift64*), so both stores get the same rows.
struct Walk {
    state: u64,
    value: f64,
    t: u64,
}

impl Walk {
    fn new() -> Walk {
        Walk {
            state: 0x9E37_79B9_7F4A_7C15,
            value: 0.0,
            t: 0,
        }
    }

    /// The next `n` rows: the axis advances by 1 a row, the value by a step in [-1, 1).
    fn rows(&mut self, n: u64) -> Vec<Row> {
        (0..n)
            .map(|_| {
                self.state ^= self.state >> 12;
                self.state ^= self.state << 25;
                self.state ^= self.state >> 27;
                let bits = self.state.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11;
                let unit = bits as f64 / (1u64 << 53) as f64;
                self.value += 2.0 * unit - 1.0;
                let row = vec![Value::U64(self.t), Value::F64(self.value)];
                self.t += 1;
                row
            })
            .collect()
    }
}

/// One built store and what building it did.
struct Built {
    name: &'static str,
    dir: tempfile::TempDir,
    store: Option<Store>,
    barriers: u64,
    build_time: Duration,
    /// For the compacted store: what compaction did while it was built.
    compaction: Option<Compaction>,
}

struct Compaction {
    /// Steps taken between barriers.
    steps_between_barriers: u64,
    /// Live segment files just before the final `compact()`.
    live_before_final: usize,
    /// Steps the final `compact()` took.
    final_steps: usize,
}

impl Built {
    fn store(&self) -> &Store {
        self.store.as_ref().expect("the store is open")
    }
}

/// `n` rows sealed in barriers of `ROWS_PER_BARRIER`, compacting between them as `Served`
/// does, then compacted once more when the barriers stop.
fn build_many(n: u64) -> Built {
    let dir = tempfile::tempdir().expect("a temp dir");
    let steps_per_barrier = ServeConfig::default().compact_steps_per_tick;
    let start = Instant::now();
    let mut store = Store::open_or_create(dir.path(), config(), &[decl()]).expect("a store");
    let mut walk = Walk::new();
    let mut steps_between_barriers = 0;
    let barriers = n / ROWS_PER_BARRIER;
    for position in 0..barriers {
        store
            .publish(STREAM, position, &walk.rows(ROWS_PER_BARRIER))
            .expect("publish");
        store.seal().expect("seal");
        for _ in 0..steps_per_barrier {
            if store.compact_step().expect("a compaction step").is_none() {
                break;
            }
            steps_between_barriers += 1;
        }
    }
    let live_before_final = store.catalog().live_files().count();
    let final_steps = store.compact().expect("compact").len();
    Built {
        name: "many",
        dir,
        store: Some(store),
        barriers,
        build_time: start.elapsed(),
        compaction: Some(Compaction {
            steps_between_barriers,
            live_before_final,
            final_steps,
        }),
    }
}

/// The same rows, published in the same batches, sealed in one barrier.
fn build_one(n: u64) -> Built {
    let dir = tempfile::tempdir().expect("a temp dir");
    let start = Instant::now();
    let mut store = Store::open_or_create(dir.path(), config(), &[decl()]).expect("a store");
    let mut walk = Walk::new();
    for position in 0..n / ROWS_PER_BARRIER {
        store
            .publish(STREAM, position, &walk.rows(ROWS_PER_BARRIER))
            .expect("publish");
    }
    store.seal().expect("seal");
    Built {
        name: "one",
        dir,
        store: Some(store),
        barriers: 1,
        build_time: start.elapsed(),
        compaction: None,
    }
}

fn survey(store: &Store) -> strata::Survey {
    store.survey(STREAM, &[], .., BUDGET).expect("survey")
}

fn fold_mean(store: &Store) -> Vec<strata::FieldStat> {
    store
        .fold(STREAM, &[], .., Aggregate::Mean)
        .expect("fold mean")
}

/// Drops the store, then times `Store::open` of its folder.
fn reopen(built: &mut Built) -> Duration {
    drop(built.store.take());
    let start = Instant::now();
    let store = Store::open_or_create(built.dir.path(), config(), &[decl()]).expect("reopen");
    let elapsed = start.elapsed();
    built.store = Some(store);
    elapsed
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort_unstable();
    times[times.len() / 2]
}

/// The medians for the table, `[survey, fold, reopen]` for `many` then for `one`: the same
/// closures criterion timed, run again after it, each call timed on its own (criterion's
/// estimates live in its output folder, whose place depends on the environment; a plain loop is
/// the simpler honest measure). The two stores' calls alternate, so both see the same load on a
/// shared machine; reads are warmed first.
fn medians(many: &mut Built, one: &mut Built) -> [[Duration; 3]; 2] {
    const READS: usize = 301;
    const REOPENS: usize = 31;
    fn alternate<T>(
        n: usize,
        a: &mut T,
        b: &mut T,
        mut f: impl FnMut(&mut T) -> Duration,
    ) -> [Duration; 2] {
        let (ta, tb): (Vec<Duration>, Vec<Duration>) = (0..n).map(|_| (f(a), f(b))).unzip();
        [median(ta), median(tb)]
    }
    let timed = |read: fn(&Store)| {
        move |built: &mut Built| {
            let store = built.store();
            let start = Instant::now();
            read(store);
            start.elapsed()
        }
    };
    let survey_read: fn(&Store) = |store| {
        black_box(survey(store));
    };
    let fold_read: fn(&Store) = |store| {
        black_box(fold_mean(store));
    };
    for built in [&*many, &*one] {
        survey_read(built.store());
        fold_read(built.store());
    }
    let surveys = alternate(READS, many, one, timed(survey_read));
    let folds = alternate(READS, many, one, timed(fold_read));
    let reopens = alternate(REOPENS, many, one, reopen);
    [
        [surveys[0], folds[0], reopens[0]],
        [surveys[1], folds[1], reopens[1]],
    ]
}

fn show(d: Duration) -> String {
    let ns = d.as_nanos();
    if ns < 10_000 {
        format!("{:.2} µs", d.as_secs_f64() * 1e6)
    } else if ns < 1_000_000 {
        format!("{:.1} µs", d.as_secs_f64() * 1e6)
    } else {
        format!("{:.2} ms", d.as_secs_f64() * 1e3)
    }
}

fn seg_files_on_disk(root: &Path) -> usize {
    std::fs::read_dir(root.join("seg"))
        .expect("seg/")
        .filter(|e| {
            e.as_ref()
                .expect("a seg/ entry")
                .file_name()
                .to_string_lossy()
                .ends_with(".seg")
        })
        .count()
}

fn describe(built: &Built) {
    let store = built.store();
    let metrics = store.metrics();
    let catalog = store.catalog();
    let live: Vec<_> = catalog.live_files().collect();
    let live_bytes: u64 = live.iter().map(|f| f.len).sum();
    let per_partition: Vec<usize> = catalog
        .partitions(STREAM, &TrackKey::ROOT)
        .map(|view| view.live_segments().len())
        .collect();
    println!(
        "{}: {} barriers, built in {:.1} s",
        built.name,
        built.barriers,
        built.build_time.as_secs_f64(),
    );
    if let Some(c) = &built.compaction {
        println!(
            "  {} compaction steps between barriers; {} live files before the final \
             compact(), which took {} steps",
            c.steps_between_barriers, c.live_before_final, c.final_steps,
        );
    }
    println!(
        "  live segment files: {} ({live_bytes} bytes; per partition {per_partition:?}; {} .seg \
         files in seg/)",
        live.len(),
        seg_files_on_disk(built.dir.path()),
    );
    for file in &live {
        let rows: u64 = file.partitions.iter().map(|p| p.n_rows).sum();
        println!(
            "    {:012}.seg  {:>12} bytes  {:>10} rows",
            file.name, file.len, rows
        );
    }
    let wa = (metrics.bytes_sealed > 0)
        .then(|| metrics.compaction_bytes_written as f64 / metrics.bytes_sealed as f64);
    println!(
        "  bytes sealed {}, written by compaction {}: write amplification {}",
        metrics.bytes_sealed,
        metrics.compaction_bytes_written,
        wa.map_or_else(|| "-".to_owned(), |wa| format!("{wa:.2}")),
    );
}

fn main() {
    let n = rows_total();
    println!(
        "lifecycle: {n} rows, one partition; temp dir {}",
        std::env::temp_dir().display()
    );
    let mut many = build_many(n);
    let mut one = build_one(n);
    describe(&many);
    describe(&one);
    // Both hold the same rows. Sums may round differently (one barrier folds rows left to
    // right; many barriers merge partial cells), so compare what is exact.
    let count = |built: &Built| {
        built
            .store()
            .fold(STREAM, &[], .., Aggregate::Count)
            .expect("fold count")
    };
    assert_eq!(count(&many), count(&one), "both stores hold the same rows");
    let shape = |built: &Built| {
        let s = survey(built.store());
        let buckets: Vec<usize> = s.fields.iter().map(|f| f.buckets.len()).collect();
        (s.level, s.group, s.span, buckets)
    };
    assert_eq!(
        shape(&many),
        shape(&one),
        "both stores answer the same survey shape"
    );

    let mut criterion = Criterion::default()
        .sample_size(30)
        .warm_up_time(Duration::from_secs(2))
        .measurement_time(Duration::from_secs(5))
        .configure_from_args();
    let group_name = format!("lifecycle_{n}_rows");
    {
        let mut group = criterion.benchmark_group(&group_name);
        for built in [&many, &one] {
            let store = built.store();
            group.bench_function(BenchmarkId::new("survey_budget_4000", built.name), |b| {
                b.iter(|| survey(store));
            });
        }
        for built in [&many, &one] {
            let store = built.store();
            group.bench_function(BenchmarkId::new("fold_mean", built.name), |b| {
                b.iter(|| fold_mean(store));
            });
        }
        for built in [&mut many, &mut one] {
            group.bench_function(BenchmarkId::new("reopen", built.name), |b| {
                b.iter_custom(|iters| (0..iters).map(|_| reopen(built)).sum());
            });
        }
        group.finish();
    }
    criterion.final_summary();

    let [m, o] = medians(&mut many, &mut one);
    println!();
    println!(
        "{n} rows: medians, many = {} barriers compacted, one = 1 barrier",
        many.barriers
    );
    println!("| | many | one | many/one |");
    println!("|---|---|---|---|");
    for (i, what) in ["survey, budget 4000 (warm)", "fold mean", "reopen"]
        .iter()
        .enumerate()
    {
        println!(
            "| {what} | {} | {} | {:.2} |",
            show(m[i]),
            show(o[i]),
            m[i].as_secs_f64() / o[i].as_secs_f64()
        );
    }
    // What a reopen reads: boot replays the manifest's every frame into the catalog.
    for built in [&many, &one] {
        let report = built.store().boot_report();
        let catalog = built.store().catalog();
        println!(
            "{}: reopen replays {} manifest frames ({} bytes, generation {}); the catalog \
             lists {} live and {} retired files",
            built.name,
            report.n_frames,
            report.trusted_len,
            report.generation,
            catalog.live_files().count(),
            catalog.retired_files().count(),
        );
    }
}
