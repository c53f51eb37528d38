//! Latency under barriers (#15): what a host of `Served` waits while the supervisor writes and
//! syncs a barrier, on the real file system (a tempdir).
//!
//! One host task publishes 1,000-row batches as fast as the lane takes them and surveys the
//! stream (budget 400) after each publish, for `STRATA_BENCH_SECS` seconds (default 5) per
//! cadence, timed in rounds of about a second in which the cadences take turns (each round on a
//! store of its own), so that other work on the machine falls on all three alike:
//!
//! - **250 ms** and **50 ms**: the supervisor's ticker closes a barrier on that cadence
//!   (`ServeConfig::seal_interval`), while the host keeps publishing and surveying.
//! - **idle**: the same workload with no barrier in flight: no ticker; the host itself seals
//!   every 250 ms with the clock stopped (nothing else is waiting then), so the store grows by
//!   the same segments and staging stays bounded, but no timed request can meet a barrier.
//!
//! Compaction is off (`compact_steps_per_tick(0)`) so that every segment written in a run is a
//! barrier's: the count below is exact, and a maximum is a barrier's price, not a merge's. A
//! fourth cadence, **250 ms, compaction on**, shows the rest: compaction steps still run on
//! the supervisor's thread, and its "barriers" count merges' outputs too.
//!
//! A fifth, **floor**, runs the same host loop against a stand-in with no engine, only
//! `Served`'s threads and handoffs, each request spinning for the idle run's median: its tail
//! is the machine's own, and every maximum is also shown over the floor's (docs/performance.md,
//! "`Served` latency under barriers").
//!
//! The store's file system is `RealFs` behind a thin watch that notes when each barrier starts
//! (its segment's temp file is created) and ends (the manifest frame claiming it is synced),
//! checked against the store's own count (`Served::metrics`).
//! Each run reports the barriers that completed in it and the publishes and surveys whose
//! interval overlapped one: a maximum over a run that never sealed, or whose requests never
//! met a barrier, would be a false pass.
//!
//! `cargo bench --bench served` (`STRATA_BENCH_SECS=2 cargo bench --bench served` for a quick
//! look). Prints a Markdown table, then the ratios of each cadence to idle.

use std::io;
use std::ops::Bound::Unbounded;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

use strata::segment::vfs::{DirEntry, Mapped, RealFs, RenameMode, Vfs, VfsFile, VfsLock};
use strata::{
    Config, FieldKind, Row, Series, ServeConfig, Served, Store, Stream, StreamDecl, Value,
};

const ROWS: u64 = 1_000;
const BUDGET: u64 = 400;
/// Batches published and sealed before each timed window, so that every run surveys a store
/// with history from its first request.
const PREFILL_BATCHES: u64 = 200;
const PREFILL_SEAL_EVERY: u64 = 20;
/// How often the idle run's host seals, between timed requests.
const IDLE_SEAL_EVERY: Duration = Duration::from_millis(250);

fn decl() -> StreamDecl {
    Stream::new("s")
        .field("t", FieldKind::U64)
        .field("v", FieldKind::F64)
        .axis("t")
        .build()
        .expect("a valid declaration")
}

/// Batch `position`: the axis advancing by 1 a row, a random walk's values.
fn batch(position: u64) -> Vec<Row> {
    let t0 = position * ROWS;
    let mut walk = 0.0f64;
    (0..ROWS)
        .map(|i| {
            walk += ((i * 2_654_435_761) % 1000) as f64 / 1000.0 - 0.5;
            vec![Value::U64(t0 + i), Value::F64(walk)]
        })
        .collect()
}

/// When barriers ran: `(start, end)` each, plus the start of one in progress.
#[derive(Debug, Default)]
struct Barriers {
    open: Option<Instant>,
    done: Vec<(Instant, Instant)>,
}

type Shared = Arc<Mutex<Barriers>>;

fn lock(barriers: &Shared) -> std::sync::MutexGuard<'_, Barriers> {
    barriers.lock().unwrap_or_else(PoisonError::into_inner)
}

/// `RealFs`, noting each barrier: it starts when a segment's temp file is created
/// (`tmp/NNN.seg`) and ends when the manifest frame that claims the segment is synced.
#[derive(Debug)]
struct Watch {
    inner: RealFs,
    barriers: Shared,
}

#[derive(Debug)]
struct WatchFile {
    inner: Box<dyn VfsFile>,
    /// `Some` for a manifest: its syncs end barriers.
    barriers: Option<Shared>,
}

impl VfsFile for WatchFile {
    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.inner.write_all(bytes)
    }

    fn sync_data(&mut self) -> io::Result<()> {
        self.inner.sync_data()?;
        if let Some(barriers) = &self.barriers {
            let mut barriers = lock(barriers);
            if let Some(start) = barriers.open.take() {
                barriers.done.push((start, Instant::now()));
            }
        }
        Ok(())
    }

    fn set_len(&mut self, len: u64) -> io::Result<()> {
        self.inner.set_len(len)
    }

    fn len(&self) -> io::Result<u64> {
        self.inner.len()
    }
}

impl Watch {
    fn wrap(&self, path: &str, inner: Box<dyn VfsFile>) -> Box<dyn VfsFile> {
        let manifest = path.starts_with("manifest-");
        Box::new(WatchFile {
            inner,
            barriers: manifest.then(|| Arc::clone(&self.barriers)),
        })
    }
}

impl Vfs for Watch {
    fn create_dir(&self, dir: &str) -> io::Result<()> {
        self.inner.create_dir(dir)
    }

    fn create(&self, path: &str) -> io::Result<Box<dyn VfsFile>> {
        // A segment's temp (`tmp/NNN.seg`); not a manifest rewrite's (`tmp/manifest-…`).
        if path.starts_with("tmp/") && !path.starts_with("tmp/manifest-") {
            lock(&self.barriers).open.get_or_insert_with(Instant::now);
        }
        let file = self.inner.create(path)?;
        Ok(self.wrap(path, file))
    }

    fn open_append(&self, path: &str) -> io::Result<Box<dyn VfsFile>> {
        let file = self.inner.open_append(path)?;
        Ok(self.wrap(path, file))
    }

    fn map(&self, path: &str) -> io::Result<Mapped> {
        self.inner.map(path)
    }

    fn read(&self, path: &str) -> io::Result<Vec<u8>> {
        self.inner.read(path)
    }

    fn len(&self, path: &str) -> io::Result<u64> {
        self.inner.len(path)
    }

    fn rename_noreplace(&self, from: &str, to: &str) -> io::Result<()> {
        self.inner.rename_noreplace(from, to)
    }

    fn rename_mode(&self) -> RenameMode {
        self.inner.rename_mode()
    }

    fn location(&self) -> String {
        self.inner.location()
    }

    fn remove(&self, path: &str) -> io::Result<()> {
        self.inner.remove(path)
    }

    fn sync_dir(&self, dir: &str) -> io::Result<()> {
        self.inner.sync_dir(dir)
    }

    fn list(&self, dir: &str) -> io::Result<Vec<DirEntry>> {
        self.inner.list(dir)
    }

    fn exists(&self, path: &str) -> io::Result<bool> {
        self.inner.exists(path)
    }

    fn lock(&self) -> io::Result<Box<dyn VfsLock>> {
        self.inner.lock()
    }

    fn lock_shared(&self) -> io::Result<Option<Box<dyn VfsLock>>> {
        self.inner.lock_shared()
    }
}

#[derive(Clone, Copy, Debug)]
enum Cadence {
    /// The supervisor's ticker seals on this interval.
    Ticker(Duration),
    /// The same with compaction on (`ServeConfig`'s default steps per tick): steps still run
    /// on the supervisor's thread, so this shows what a request waits behind a step.
    Compacting(Duration),
    /// No barrier in flight while timed: the host seals between timed requests.
    Idle,
    /// No engine at all: the same host loop against a stand-in with `Served`'s threads (a
    /// supervisor thread on a single-threaded runtime, surveys handed to its blocking pool,
    /// answers by oneshot) that only spins for the idle run's median service time. Its tail is
    /// this machine's for the same handoffs and the same CPU time: the floor any design with
    /// a supervisor thread stands on.
    Floor,
}

impl Cadence {
    fn label(self) -> String {
        match self {
            Cadence::Ticker(interval) => format!("{} ms", interval.as_millis()),
            Cadence::Compacting(interval) => {
                format!("{} ms, compaction on", interval.as_millis())
            }
            Cadence::Idle => "idle (host seals between requests)".to_owned(),
            Cadence::Floor => "floor (same handoffs and CPU time, no engine)".to_owned(),
        }
    }
}

/// One request's interval, for overlap counting.
type Span = (Instant, Instant);

#[derive(Debug)]
struct Run {
    cadence: Cadence,
    publishes: Vec<Span>,
    surveys: Vec<Span>,
    /// Barriers that completed within the timed window.
    barriers: usize,
    /// Their longest, start of temp file to manifest synced.
    barrier_max: Duration,
    publishes_overlapping: usize,
    surveys_overlapping: usize,
    /// Every write the watch saw (a barrier's, or a compaction step's), start to claim.
    writes: Vec<Span>,
    /// When each round's timed window opened.
    opened: Vec<Instant>,
}

impl Run {
    fn new(cadence: Cadence) -> Run {
        Run {
            cadence,
            publishes: Vec::new(),
            surveys: Vec::new(),
            barriers: 0,
            barrier_max: Duration::ZERO,
            publishes_overlapping: 0,
            surveys_overlapping: 0,
            writes: Vec::new(),
            opened: Vec::new(),
        }
    }

    /// Adds a round's figures to the run's.
    fn absorb(&mut self, round: Run) {
        self.publishes.extend(round.publishes);
        self.surveys.extend(round.surveys);
        self.barriers += round.barriers;
        self.barrier_max = self.barrier_max.max(round.barrier_max);
        self.publishes_overlapping += round.publishes_overlapping;
        self.surveys_overlapping += round.surveys_overlapping;
        self.writes.extend(round.writes);
        self.opened.extend(round.opened);
    }
}

/// One round of `cadence` on a store of its own: `window` of timed requests.
async fn run(cadence: Cadence, window: Duration) -> Run {
    let dir = tempfile::tempdir().expect("a temp dir");
    let barriers = Shared::default();
    let vfs = Watch {
        inner: RealFs::open(dir.path()).expect("the temp dir as a store root"),
        barriers: Arc::clone(&barriers),
    };
    let store = Store::create_in(Arc::new(vfs), Config::default(), &[decl()]).expect("a store");
    let interval = match cadence {
        Cadence::Ticker(interval) | Cadence::Compacting(interval) => Some(interval),
        Cadence::Idle | Cadence::Floor => None,
    };
    let steps = match cadence {
        Cadence::Compacting(_) => ServeConfig::default().compact_steps_per_tick,
        Cadence::Ticker(_) | Cadence::Idle | Cadence::Floor => 0,
    };
    let config = ServeConfig::default()
        .seal_interval(interval)
        .compact_steps_per_tick(steps);
    let mut served = Served::spawn(store, config);

    // History to survey from the first timed request, sealed before the window opens.
    let mut position = 0;
    while position < PREFILL_BATCHES {
        position += 1;
        served
            .publish("s", position, batch(position))
            .await
            .expect("a prefill publish");
        if position.is_multiple_of(PREFILL_SEAL_EVERY) {
            served.seal("s", &[]).await.expect("a prefill seal");
        }
    }

    let mut publishes = Vec::new();
    let mut surveys = Vec::new();
    let mut timed = Duration::ZERO;
    let mut since_seal = Duration::ZERO;
    let opened = Instant::now();
    while timed < window {
        position += 1;
        let rows = batch(position);
        let start = Instant::now();
        served.publish("s", position, rows).await.expect("staged");
        let published = Instant::now();
        let fields = served
            .buckets("s", &[], Unbounded, Unbounded, BUDGET)
            .await
            .expect("a survey");
        let surveyed = Instant::now();
        assert!(!fields.is_empty(), "the survey answers the stream's fields");
        publishes.push((start, published));
        surveys.push((published, surveyed));
        timed += surveyed - start;
        since_seal += surveyed - start;
        if matches!(cadence, Cadence::Idle) && since_seal >= IDLE_SEAL_EVERY {
            // Outside the timed part, with nothing else waiting: a barrier no request meets.
            served.seal("s", &[]).await.expect("an idle seal");
            since_seal = Duration::ZERO;
        }
    }
    let closed = Instant::now();
    // The watch sees every barrier the store closes, and nothing else: the store's own count,
    // taken between two looks at the watch's (a tick may seal right after answering).
    let watched_before = lock(&barriers).done.len() as u64;
    let metrics = served.metrics().await.expect("the served store's metrics");
    let watched_after = lock(&barriers).done.len() as u64;
    // With compaction on, each step's output is written the same way: counted too.
    let written = metrics.barriers + metrics.compaction_steps;
    assert!(
        (watched_before..=watched_after).contains(&written),
        "the store closed {} barriers and {} compaction steps; the watch saw {watched_before} \
         to {watched_after}",
        metrics.barriers,
        metrics.compaction_steps
    );
    served.stop().await.expect("a clean stop");

    let barriers = std::mem::take(&mut lock(&barriers).done);
    let overlapping = |spans: &[Span]| {
        spans
            .iter()
            .filter(|&&(s, e)| barriers.iter().any(|&(bs, be)| s < be && bs < e))
            .count()
    };
    let in_window: Vec<_> = barriers
        .iter()
        .filter(|&&(bs, be)| bs >= opened && be <= closed)
        .collect();
    Run {
        cadence,
        barriers: in_window.len(),
        barrier_max: in_window
            .iter()
            .map(|&&(bs, be)| be - bs)
            .max()
            .unwrap_or_default(),
        publishes_overlapping: overlapping(&publishes),
        surveys_overlapping: overlapping(&surveys),
        publishes,
        surveys,
        writes: barriers,
        opened: vec![opened],
    }
}

/// What the floor's stand-in supervisor is asked: spin this long, then answer.
enum Job {
    /// Spins on the supervisor's thread, drops the rows, answers (as a publish is staged).
    Publish(Vec<Row>, Duration, oneshot::Sender<()>),
    /// Hands the spin to the blocking pool, which answers (as a survey runs on a reader).
    Survey(Duration, oneshot::Sender<()>),
}

/// Busy for `work`: CPU time, as a request's own work is.
fn spin(work: Duration) {
    let start = Instant::now();
    while start.elapsed() < work {
        std::hint::spin_loop();
    }
}

/// One round of the floor: the host loop of `run`, against a stand-in that spins for
/// `publish_work` / `survey_work` per request instead of staging and surveying.
async fn floor(window: Duration, publish_work: Duration, survey_work: Duration) -> Run {
    let (jobs, mut queue) = tokio::sync::mpsc::channel::<Job>(ServeConfig::default().lane_max);
    let server = std::thread::Builder::new()
        .name("floor-supervisor".into())
        .spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .max_blocking_threads(ServeConfig::default().readers_max)
                .build()
                .expect("a runtime for the floor's supervisor");
            runtime.block_on(async move {
                while let Some(job) = queue.recv().await {
                    match job {
                        Job::Publish(rows, work, reply) => {
                            spin(work);
                            drop(rows);
                            let _ = reply.send(());
                        }
                        Job::Survey(work, reply) => {
                            tokio::task::spawn_blocking(move || {
                                spin(work);
                                let _ = reply.send(());
                            });
                        }
                    }
                }
            });
        })
        .expect("a thread for the floor's supervisor");
    let mut publishes = Vec::new();
    let mut surveys = Vec::new();
    let mut timed = Duration::ZERO;
    let mut position = PREFILL_BATCHES;
    let opened = Instant::now();
    while timed < window {
        position += 1;
        let rows = batch(position);
        let start = Instant::now();
        let (reply, answer) = oneshot::channel();
        let sent = jobs.send(Job::Publish(rows, publish_work, reply)).await;
        assert!(sent.is_ok(), "the floor's supervisor runs");
        answer.await.expect("the floor answers a publish");
        let published = Instant::now();
        let (reply, answer) = oneshot::channel();
        let sent = jobs.send(Job::Survey(survey_work, reply)).await;
        assert!(sent.is_ok(), "the floor's supervisor runs");
        answer.await.expect("the floor answers a survey");
        let surveyed = Instant::now();
        publishes.push((start, published));
        surveys.push((published, surveyed));
        timed += surveyed - start;
    }
    drop(jobs);
    server.join().expect("the floor's supervisor ends");
    let mut run = Run::new(Cadence::Floor);
    run.publishes = publishes;
    run.surveys = surveys;
    run.opened = vec![opened];
    run
}

/// Where the maxima come from: the five slowest requests of each run, and whether a write
/// (a barrier's or a compaction step's) was in flight meanwhile, or not (the machine's own
/// tail, which the idle run shows too).
fn print_slowest(runs: &[Run]) {
    println!("\nThe five slowest requests of each run (* a write was in flight meanwhile):\n");
    for run in runs {
        for (kind, spans) in [("publishes", &run.publishes), ("surveys", &run.surveys)] {
            let mut slow: Vec<Span> = spans.clone();
            slow.sort_by_key(|&(s, e)| std::cmp::Reverse(e - s));
            let shown: Vec<String> = slow
                .iter()
                .take(5)
                .map(|&(s, e)| {
                    let met = run.writes.iter().any(|&(ws, we)| s < we && ws < e);
                    let since = run
                        .opened
                        .iter()
                        .filter(|&&o| o <= s)
                        .map(|&o| s - o)
                        .min()
                        .unwrap_or_default();
                    format!(
                        "{}{} (+{})",
                        show(e - s),
                        if met { "*" } else { "" },
                        show(since)
                    )
                })
                .collect();
            println!("- {}, {kind}: {}", run.cadence.label(), shown.join(", "));
        }
    }
}

/// p50, p99 and max of the spans' durations.
fn percentiles(spans: &[Span]) -> [Duration; 3] {
    let mut took: Vec<Duration> = spans.iter().map(|&(s, e)| e - s).collect();
    took.sort_unstable();
    let at = |q: usize| took[(took.len() * q / 100).min(took.len() - 1)];
    [at(50), at(99), took[took.len() - 1]]
}

fn show(d: Duration) -> String {
    let micros = d.as_secs_f64() * 1e6;
    if micros >= 10_000.0 {
        format!("{:.0} ms", micros / 1e3)
    } else if micros >= 1_000.0 {
        format!("{:.1} ms", micros / 1e3)
    } else {
        format!("{micros:.0} µs")
    }
}

fn ratio(a: Duration, b: Duration) -> String {
    let ratio = a.as_secs_f64() / b.as_secs_f64();
    if ratio < 1.0 {
        format!("{ratio:.2}x")
    } else {
        format!("{ratio:.1}x")
    }
}

/// The 1-minute load average (Linux), or "?".
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(str::to_owned))
        .unwrap_or_else(|| "?".to_owned())
}

/// Each cadence's p99 and max over idle's, and each max over the floor's.
fn print_ratios(runs: &[Run]) {
    let find = |cadence: fn(&Cadence) -> bool| {
        runs.iter()
            .find(|run| cadence(&run.cadence))
            .expect("an idle run and a floor run")
    };
    let idle = find(|c| matches!(c, Cadence::Idle));
    let base = find(|c| matches!(c, Cadence::Floor));
    let [_, idle_p99, idle_max] = percentiles(&idle.publishes);
    let [_, idle_s99, idle_smax] = percentiles(&idle.surveys);
    let [_, _, floor_max] = percentiles(&base.publishes);
    let [_, _, floor_smax] = percentiles(&base.surveys);
    println!(
        "\nRatios to idle (#15's targets: p99 <= 2x idle; max <= 5 ms), and each maximum over the \
         floor's (the machine's own tail for the same handoffs: {} publish, {} survey):\n",
        show(floor_max),
        show(floor_smax)
    );
    println!(
        "| seal cadence | publish p99 | publish max | publish max / floor | survey p99 | survey max \
         | survey max / floor |"
    );
    println!("|---|---|---|---|---|---|---|");
    for run in runs
        .iter()
        .filter(|run| !matches!(run.cadence, Cadence::Floor))
    {
        let [_, p99, max] = percentiles(&run.publishes);
        let [_, s99, smax] = percentiles(&run.surveys);
        println!(
            "| {} | {} | {} ({}) | {} | {} | {} ({}) | {} |",
            run.cadence.label(),
            ratio(p99, idle_p99),
            ratio(max, idle_max),
            show(max),
            ratio(max, floor_max),
            ratio(s99, idle_s99),
            ratio(smax, idle_smax),
            show(smax),
            ratio(smax, floor_smax),
        );
    }
}

fn main() {
    let secs: f64 = std::env::var("STRATA_BENCH_SECS")
        .ok()
        .map_or(5.0, |s| s.parse().expect("STRATA_BENCH_SECS: seconds"));
    let window = Duration::from_secs_f64(secs);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a runtime for the host");
    let cadences = [
        Cadence::Ticker(Duration::from_millis(250)),
        Cadence::Ticker(Duration::from_millis(50)),
        Cadence::Compacting(Duration::from_millis(250)),
        Cadence::Idle,
        Cadence::Floor,
    ];
    let load_before = load_average();
    // In rounds of about a second, the cadences taking turns, so that other work on the
    // machine falls on all three alike rather than on whichever ran when it did.
    let rounds = u32::try_from(window.as_millis().div_ceil(1000).max(1))
        .expect("STRATA_BENCH_SECS: fewer than 2^32 seconds");
    let slice = window / rounds;
    let mut runs: Vec<Run> = cadences.iter().map(|&cadence| Run::new(cadence)).collect();
    for _ in 0..rounds {
        // The floor spins for the idle run's median service times so far (it goes after idle).
        let mut medians = [Duration::ZERO; 2];
        for run in &mut runs {
            let round = match run.cadence {
                Cadence::Floor => runtime.block_on(floor(slice, medians[0], medians[1])),
                cadence => runtime.block_on(self::run(cadence, slice)),
            };
            run.absorb(round);
            if matches!(run.cadence, Cadence::Idle) {
                medians = [percentiles(&run.publishes)[0], percentiles(&run.surveys)[0]];
            }
        }
    }

    println!(
        "\nServed, {ROWS}-row publishes then a survey (budget {BUDGET}), {secs} s timed per cadence in \
         {rounds} rounds of turns, \
         real file system; load average {load_before} before, {} after (other work on the \
         machine shows in the tails)\n",
        load_average()
    );
    println!(
        "| seal cadence | publishes | publish p50 / p99 / max | surveys | survey p50 / p99 / max \
         | barriers (longest) | publishes / surveys overlapping a barrier |"
    );
    println!("|---|---|---|---|---|---|---|");
    for run in &runs {
        let [p50, p99, max] = percentiles(&run.publishes);
        let [s50, s99, smax] = percentiles(&run.surveys);
        println!(
            "| {} | {} | {} / {} / **{}** | {} | {} / {} / **{}** | {} ({}) | {} / {} |",
            run.cadence.label(),
            run.publishes.len(),
            show(p50),
            show(p99),
            show(max),
            run.surveys.len(),
            show(s50),
            show(s99),
            show(smax),
            run.barriers,
            show(run.barrier_max),
            run.publishes_overlapping,
            run.surveys_overlapping,
        );
    }
    print_slowest(&runs);
    print_ratios(&runs);
    for run in &runs {
        if matches!(run.cadence, Cadence::Ticker(_) | Cadence::Compacting(_)) && run.barriers == 0 {
            println!(
                "\nWARNING: the {} run closed no barrier: its max is no barrier's price.",
                run.cadence.label()
            );
        }
        if matches!(run.cadence, Cadence::Idle) && run.publishes_overlapping > 0 {
            println!("\nWARNING: a timed request of the idle run overlapped a barrier.");
        }
    }
}
