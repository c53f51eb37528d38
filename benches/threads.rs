//! One opening, many threads (#49): reads of one store from one thread and from two, each on
//! a `View` of the same opening, and reads on one thread while another seals a barrier.
//!
//! The store: 10^7 rows (`t` the axis, `v` an f64) in 100 barriers, on the real file system.
//!
//! - `threads/{survey,fold,query_runs}/{1,2}`: each thread reads in a loop from its own clone
//!   of one `View`: a survey of the whole axis at budget 4000, a mean over the whole axis, and
//!   `query_runs` over 100,000 positions in the middle. Throughput is per read (criterion's
//!   elements/s); after each group the bench prints two threads' throughput over one's, from
//!   the same run (#49's target: at least 1.7x on this 2-core machine).
//! - `threads/during_seal`: not a criterion loop: one thread surveys (budget 4000, a zoomed
//!   tenth of the axis) back to back on a view, first while nothing else runs (idle), then
//!   while the store, on another thread, stages 10^6 rows and seals them, five times. Prints
//!   both p50 and p99, their ratio (target: p99 during the seals at most 1.5x idle), how many
//!   reads finished while the seals ran, and the longest read beside a seal against the
//!   shortest seal: a read that waited for a seal would take as long as it did.
//!
//! `cargo bench --bench threads`; docs/embedding.md keeps the figures.

use std::sync::{Arc, Barrier, Mutex, PoisonError};
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use strata::{Aggregate, Config, FieldKind, Store, Stream, StreamDecl, Values, View};

const BARRIERS: u64 = 100;
const ROWS_PER_BARRIER: u64 = 100_000;
const ROWS: u64 = BARRIERS * ROWS_PER_BARRIER;
const BUDGET: u64 = 4000;
/// Positions `query_runs` reads.
const RUN_SPAN: u64 = 100_000;
/// Rows the barrier of `during_seal` seals.
const SEAL_ROWS: u64 = 1_000_000;

fn decl() -> StreamDecl {
    Stream::new("s")
        .field("t", FieldKind::U64)
        .field("v", FieldKind::F64)
        .axis("t")
        .build()
        .expect("a valid declaration")
}

/// Stages rows `from..from + n` (one position each) into `store`.
fn stage(store: &mut Store, from: u64, n: u64) {
    let t: Vec<u64> = (from..from + n).collect();
    let v: Vec<f64> = t
        .iter()
        .map(|&t| ((t.wrapping_mul(7919)) % 1000) as f64 / 8.0 + (t as f64 / 1e5).sin())
        .collect();
    let positions: Vec<u64> = (from + 1..=from + n).collect();
    store
        .publish_columns_at("s", &positions, &[], &[Values::U64(&t), Values::F64(&v)])
        .expect("staged");
}

fn filled(dir: &std::path::Path) -> Store {
    let mut store = Store::create(dir, Config::default(), &[decl()]).expect("a store");
    for barrier in 0..BARRIERS {
        stage(&mut store, barrier * ROWS_PER_BARRIER, ROWS_PER_BARRIER);
        store.seal().expect("sealed");
    }
    store
}

/// The reads the bench times, each on a view.
#[derive(Clone, Copy)]
enum Read {
    Survey,
    Fold,
    QueryRuns,
}

impl Read {
    fn name(self) -> &'static str {
        match self {
            Read::Survey => "survey",
            Read::Fold => "fold",
            Read::QueryRuns => "query_runs",
        }
    }

    /// One read; answers something of what it read, so nothing is optimised away.
    fn run(self, view: &View) -> u64 {
        match self {
            Read::Survey => {
                let survey = view.survey("s", &[], .., BUDGET).expect("a survey");
                survey.fields.iter().map(|f| f.buckets.len() as u64).sum()
            }
            Read::Fold => {
                let stats = view.fold("s", &[], .., Aggregate::Mean).expect("a fold");
                stats.len() as u64
            }
            Read::QueryRuns => {
                let mid = ROWS / 2;
                view.query_runs("s", &[], mid..mid + RUN_SPAN)
                    .expect("runs")
                    .map(|run| run.expect("a run").len() as u64)
                    .sum()
            }
        }
    }
}

/// `iters` reads on each of `threads` threads at once, each on its own clone of `view`: the
/// wall time from the start they share to the last one's end.
fn reads_on(view: &View, read: Read, threads: usize, iters: u64) -> Duration {
    let start = Arc::new(Barrier::new(threads + 1));
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                let view = view.clone();
                let start = Arc::clone(&start);
                scope.spawn(move || {
                    start.wait();
                    (0..iters).map(|_| read.run(&view)).sum::<u64>()
                })
            })
            .collect();
        start.wait();
        let began = Instant::now();
        for worker in workers {
            std::hint::black_box(worker.join().expect("a reader"));
        }
        began.elapsed()
    })
}

fn threads(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("a temp dir");
    let store = filled(dir.path());
    let view = store.view();
    for read in [Read::Survey, Read::Fold, Read::QueryRuns] {
        // Each thread count's time per read, over every sample criterion took.
        let per_read: Arc<Mutex<[Vec<f64>; 2]>> = Arc::default();
        let mut group = c.benchmark_group(format!("threads/{}", read.name()));
        group.sample_size(20);
        group.measurement_time(Duration::from_secs(8));
        for threads in [1usize, 2] {
            group.throughput(Throughput::Elements(threads as u64));
            let per_read = Arc::clone(&per_read);
            group.bench_function(threads.to_string(), |b| {
                b.iter_custom(|iters| {
                    let took = reads_on(&view, read, threads, iters);
                    let reads = iters as f64 * threads as f64;
                    per_read.lock().unwrap_or_else(PoisonError::into_inner)[threads - 1]
                        .push(took.as_secs_f64() / reads);
                    // Criterion's time per iteration: one read on each thread.
                    took
                });
            });
        }
        group.finish();
        let per_read = per_read.lock().unwrap_or_else(PoisonError::into_inner);
        if per_read.iter().any(Vec::is_empty) {
            continue; // filtered out of this run
        }
        let [one, two] = [median(&per_read[0]), median(&per_read[1])];
        println!(
            "threads/{}: one thread {:.3} ms a read, two {:.3} ms a read each: two threads \
             read {:.2}x one's throughput (target >= 1.7x)",
            read.name(),
            one * 1e3,
            two * 2e3,
            one / two,
        );
    }
    drop(view);
    floor();
    during_seal(store);
}

/// The machine's own floor for the same question: a loop that shares nothing (arithmetic on
/// registers), timed on one thread and on two, each thread doing what the one did. Two threads
/// of it are what this machine's two cores give at best.
fn floor() {
    fn spin(n: u64) -> u64 {
        (0..n).fold(1u64, |x, i| {
            std::hint::black_box(x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(i))
        })
    }
    const N: u64 = 200_000_000;
    let ratios: Vec<f64> = (0..5)
        .map(|_| {
            let began = Instant::now();
            std::hint::black_box(spin(N));
            let one = began.elapsed().as_secs_f64();
            let began = Instant::now();
            std::thread::scope(|scope| {
                let a = scope.spawn(|| spin(N));
                let b = scope.spawn(|| spin(N));
                std::hint::black_box((a.join().ok(), b.join().ok()));
            });
            2.0 * one / began.elapsed().as_secs_f64()
        })
        .collect();
    println!(
        "threads/floor: two threads of a loop that shares nothing do {:.2}x one's work in its \
         time (median of 5): the most two threads here can show",
        median(&ratios)
    );
}

/// Reads on one thread, idle and then beside seals of `SEAL_ROWS` rows on another, over
/// `SEALS` rounds (one seal's window holds about a thousand reads: too few for a p99 alone).
fn during_seal(mut store: Store) {
    const SEALS: u64 = 5;
    let view = store.view();
    let zoom = ROWS / 10;
    let survey = move |view: &View| {
        let survey = view
            .survey("s", &[], 4 * zoom..5 * zoom, BUDGET)
            .expect("a survey");
        std::hint::black_box(survey);
    };
    // Idle: the same reads with nothing else running.
    let mut idle = Vec::new();
    let began = Instant::now();
    while began.elapsed() < Duration::from_secs(3) {
        let t = Instant::now();
        survey(&view);
        idle.push(t.elapsed());
    }
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reader = {
        let view = view.clone();
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            let mut spans = Vec::new();
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let t = Instant::now();
                survey(&view);
                spans.push((t, t.elapsed()));
            }
            spans
        })
    };
    // Let the reader settle, then stage and seal beside it, round after round.
    let mut windows = Vec::new();
    let mut staging = Duration::ZERO;
    for round in 0..SEALS {
        std::thread::sleep(Duration::from_millis(200));
        let began = Instant::now();
        stage(&mut store, ROWS + round * SEAL_ROWS, SEAL_ROWS);
        let staged = Instant::now();
        store.seal().expect("sealed");
        windows.push((staged, Instant::now()));
        staging += staged - began;
    }
    std::thread::sleep(Duration::from_millis(200));
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let spans = reader.join().expect("the reader");
    let inside = |t: Instant, took: Duration| {
        windows
            .iter()
            .any(|&(from, to)| t >= from && t + took <= to)
    };
    let beside =
        |t: Instant, took: Duration| windows.iter().any(|&(from, to)| t < to && t + took > from);
    let mut during: Vec<Duration> = spans
        .iter()
        .filter(|&&(t, took)| inside(t, took))
        .map(|&(_, took)| took)
        .collect();
    let longest = spans
        .iter()
        .filter(|&&(t, took)| beside(t, took))
        .map(|&(_, took)| took)
        .max()
        .unwrap_or_default();
    let sealing: Duration = windows.iter().map(|&(from, to)| to - from).sum();
    let shortest_seal = windows
        .iter()
        .map(|&(from, to)| to - from)
        .min()
        .unwrap_or_default();
    let n_during = during.len();
    let [idle_p50, idle_p99] = percentiles(&mut idle);
    let [seal_p50, seal_p99] = percentiles(&mut during);
    println!(
        "threads/during_seal: {SEALS} seals of {SEAL_ROWS} rows, {:.0} ms each on average \
         (staging {:.0} ms each, untimed by the reads); {n_during} surveys finished inside \
         them; idle p50 {:.3} ms p99 {:.3} ms ({} reads), during the seals p50 {:.3} ms p99 \
         {:.3} ms: p99 {:.2}x idle's (target <= 1.5x); the longest read beside a seal {:.2} ms, \
         {:.3} of the shortest seal",
        sealing.as_secs_f64() * 1e3 / SEALS as f64,
        staging.as_secs_f64() * 1e3 / SEALS as f64,
        idle_p50.as_secs_f64() * 1e3,
        idle_p99.as_secs_f64() * 1e3,
        idle.len(),
        seal_p50.as_secs_f64() * 1e3,
        seal_p99.as_secs_f64() * 1e3,
        seal_p99.as_secs_f64() / idle_p99.as_secs_f64(),
        longest.as_secs_f64() * 1e3,
        longest.as_secs_f64() / shortest_seal.as_secs_f64(),
    );
}

fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted.get(sorted.len() / 2).copied().unwrap_or(f64::NAN)
}

/// p50 and p99 of `spans` (sorted in place); zero for none.
fn percentiles(spans: &mut [Duration]) -> [Duration; 2] {
    spans.sort_unstable();
    let at = |q: usize| {
        spans
            .get((spans.len() * q / 100).min(spans.len().saturating_sub(1)))
            .copied()
            .unwrap_or_default()
    };
    [at(50), at(99)]
}

criterion_group!(benches, threads);
criterion_main!(benches);
