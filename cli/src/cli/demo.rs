//! `strata demo`: a store in `./strata-demo`, a synthetic multi-track series ingested with a
//! seal cadence, a reopen, a few reads (rows, budgeted surveys drawn as `survey.svg`, folds), and
//! a summary of what happened.
//!
//! The series is sine waves with what a display read must not lose: lone spikes, a dropout
//! where the recorder sent no rows, and a stretch where `value` is stuck at zero. Their times are
//! fractions of the series, so a demo of any size has them, and the summary says whether the
//! survey kept each spike and left the dropout as a gap.
//!
//! Every figure printed is measured in this run: times by the wall clock around the work,
//! barriers, syncs and bytes by the store's own `metrics()`, the watermark by `watermark()` on the
//! reopened store, and the rows read back are compared with what was published.

use std::f64::consts::TAU;
use std::fs;
use std::io;
use std::ops::Range;
use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use strata::{
    Aggregate, Config, FieldKind, FieldStat, Metrics, Num, Point, Row, Store, StoredRow, Stream,
    Survey, Value, Values,
};

use super::args::DemoArgs;
use super::parse::cell;
use super::survey::{self, Scope};
use super::{
    Failure, compact, count, duration, grouped, grouped_f64, open_existing, per_second, print,
    progress, svg, units,
};

/// The folder the demo makes, relative to where it runs.
const DEMO_DIR: &str = "strata-demo";
const STREAM: &str = "capture";
const N_RUNS: u64 = 4;
const N_PROBES: u64 = 8;
/// Ticks per published batch: each batch is one delivery, at its own position, of this many
/// ticks of every track.
const TICKS_PER_BATCH: u64 = 32;
/// The axis `t` is in microseconds; probes sample at 1 kHz.
const SAMPLE_INTERVAL_US: u64 = 1000;
/// The units the demo knows of its fields (a stream records none): written on the survey's
/// table and picture.
const UNITS: [(&str, &str); 2] = [("t", "µs"), ("temp", "°C")];
/// Lone spikes in `value`: where (per mille of the series' ticks) and the value read there, far
/// outside every probe's swing (at most ±2.55), up and down. A survey keeps each as some
/// bucket's max or min.
const SPIKES: [(u64, f64); 4] = [(130, 6.0), (310, -5.0), (580, 7.5), (860, -6.5)];
/// The recorder was offline over these ticks (per mille): no rows from any track.
const OFFLINE_PER_MILLE: Range<u64> = 400..440;
/// `value` is stuck at zero over these ticks (per mille); `temp` goes on.
const STUCK_PER_MILLE: Range<u64> = 700..740;
/// Level-0 cells span this many samples; each level is `LADDER_FANOUT` times wider. A ladder
/// sized to the sampling keeps the levels a small fraction of the raw rows (the default 64-unit
/// base would give every microsecond-stamped sample a level-0 cell of its own).
const SAMPLES_PER_CELL: u64 = 64;
const LADDER_FANOUT: u64 = 8;
/// The track the demo reads back, and how many batches of it.
const READ_RUN: u64 = 1;
const READ_PROBE: u64 = 3;
const READ_BATCHES: u64 = 2;
/// Batches in the unnarrowed read over a position range.
const SPAN_BATCHES: u64 = 10;
/// Rows of the read-back shown in the summary.
const SHOWN_ROWS: usize = 3;
/// Points in the surveys the demo times and draws (over both measured fields).
const SURVEY_BUDGET_POINTS: u64 = 2000;
/// Points in the survey printed as a table: a few buckets a field, so it fits a screen.
const TABLE_BUDGET_POINTS: u64 = 48;
/// The bytes of a row's measured values and axis as numbers (a u64 and two f64s), beside which
/// the store's bytes per row are shown.
const VALUE_BYTES_PER_ROW: u64 = 24;
/// The picture of the one-track survey, inside the demo's folder.
const SURVEY_SVG: &str = "survey.svg";

/// What ingest did, as measured.
struct Ingested {
    n_rows: u64,
    n_batches: u64,
    elapsed: Duration,
    metrics: Metrics,
    on_disk: OnDisk,
}

/// A timed read and what it answered.
struct Read {
    rows: Vec<StoredRow>,
    elapsed: Duration,
}

/// A read timed by the wall clock around the store's call, and what it answered.
struct Timed<T> {
    answer: T,
    elapsed: Duration,
}

fn timed<T>(read: impl FnOnce() -> Result<T, strata::EngineError>) -> Result<Timed<T>, Failure> {
    let start = Instant::now();
    let answer = read()?;
    Ok(Timed {
        answer,
        elapsed: start.elapsed(),
    })
}

/// The budgeted reads: surveys of one track and of every track, a small one for a table, and
/// folds of one track.
struct Surveys {
    track: Timed<Survey>,
    every_track: Timed<Survey>,
    small: Timed<Survey>,
    folds: Vec<(Aggregate, Timed<Vec<FieldStat>>)>,
    table: String,
    /// What each survey covers and how finely, in words: `t 0 .. 99.999 s` and `196 buckets a
    /// field, each summarising 512 ms of t`.
    words: [[String; 2]; 3],
    kept: Kept,
}

pub fn run(args: &DemoArgs) -> Result<ExitCode, Failure> {
    let dir = Path::new(DEMO_DIR);
    let n_ticks = args.rows / (N_RUNS * N_PROBES);
    if n_ticks == 0 {
        return Err(Failure::new(format!(
            "--rows must be at least {}",
            N_RUNS * N_PROBES
        )));
    }
    clear(dir)?;
    let signal = Signal { n_ticks };
    print(&format!(
        "strata demo: {} runs x {} probes = {} tracks, {} ticks each at 1 kHz (t in µs from \
         2025-12-01T00:00:00Z, {}), into ./{DEMO_DIR}, sealing every {} rows\n{}\n",
        N_RUNS,
        N_PROBES,
        N_RUNS * N_PROBES,
        grouped(n_ticks),
        units::range(0, since_start(n_ticks.saturating_sub(1)), Some("µs")),
        grouped(args.seal_every),
        signal.describe(),
    ))?;
    let ingested = ingest(dir, &signal, args.seal_every)?;
    let start = Instant::now();
    let store = open_existing(dir)?;
    let reopen = start.elapsed();
    let watermark = store.watermark(STREAM, &[])?;
    let track = read_track(&store, &signal)?;
    let span = read_span(&store, ingested.n_batches)?;
    let surveys = survey_reads(&store, dir, &signal)?;
    report(&ingested, reopen, watermark, &track, &span, &surveys)?;
    Ok(ExitCode::SUCCESS)
}

/// Makes way for a new demo store: removes an old one (a folder with a `manifest-` file), and
/// refuses to touch a folder that is anything else, so the demo never deletes someone's data.
fn clear(dir: &Path) -> Result<(), Failure> {
    let refuse = |why: &str| {
        Failure::new(format!(
            "./{DEMO_DIR} exists and {why}; the demo will not delete it (move it away and run again)"
        ))
    };
    let cannot = |e: io::Error| Failure::new(format!("cannot inspect ./{DEMO_DIR}: {e}"));
    match fs::symlink_metadata(dir) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(cannot(e)),
        Ok(meta) if !meta.is_dir() => return Err(refuse("is not a folder")),
        Ok(_) => {}
    }
    let mut names = Vec::new();
    for entry in fs::read_dir(dir).map_err(cannot)? {
        names.push(
            entry
                .map_err(cannot)?
                .file_name()
                .to_string_lossy()
                .into_owned(),
        );
    }
    if names.is_empty() {
        return Ok(());
    }
    if !names.iter().any(|name| name.starts_with("manifest-")) {
        return Err(refuse(
            "is not a strata store (it holds no manifest-NNNNNN)",
        ));
    }
    fs::remove_dir_all(dir)
        .map_err(|e| Failure::new(format!("cannot remove the old ./{DEMO_DIR}: {e}")))
}

/// The stream's fields in declaration order: the order of `sample`'s values.
const FIELDS: [(&str, FieldKind); 5] = [
    ("run", FieldKind::Str),
    ("probe", FieldKind::Str),
    ("t", FieldKind::U64),
    ("value", FieldKind::F64),
    ("temp", FieldKind::F64),
];

fn declaration() -> Result<strata::StreamDecl, Failure> {
    let stream = FIELDS
        .iter()
        .fold(Stream::new(STREAM), |s, &(name, kind)| s.field(name, kind));
    Ok(stream
        .track(["run", "probe"])
        .time_axis("t", strata::TimeUnit::Micros)
        .ladder(SAMPLES_PER_CELL * SAMPLE_INTERVAL_US, LADDER_FANOUT)
        .build()?)
}

/// Publishes the signal's ticks of every track in batches (one position each; a stretch of
/// ticks the recorder missed publishes nothing and takes no position), sealing every
/// `seal_every` rows and at the end; times it all by the wall clock. A batch is published as a
/// host should publish: by columns (`Store::publish_columns`), one call per track, so staging
/// is a copy of each column rather than a `Value` per field and a `String` per label.
fn ingest(dir: &Path, signal: &Signal, seal_every: u64) -> Result<Ingested, Failure> {
    let mut store = Store::open_or_create(dir, Config::default(), &[declaration()?])?;
    let bar = progress::rows(signal.n_ticks * N_RUNS * N_PROBES);
    let start = Instant::now();
    let (mut n_rows, mut n_batches, mut n_unsealed) = (0, 0, 0);
    let mut columns = Columns::default();
    let tracks: Vec<[String; 2]> = (0..N_RUNS)
        .flat_map(|run| (0..N_PROBES).map(move |probe| [run_label(run), probe_label(probe)]))
        .collect();
    for ticks in signal.batches() {
        n_batches += 1;
        for (track_idx, track) in (0u64..).zip(&tracks) {
            let (run, probe) = (track_idx / N_PROBES, track_idx % N_PROBES);
            columns.fill(signal, run, probe, &ticks);
            store.publish_columns(
                STREAM,
                n_batches,
                &[&track[0], &track[1]],
                &[
                    Values::U64(&columns.t),
                    Values::F64(&columns.value),
                    Values::F64(&columns.temp),
                ],
            )?;
            n_rows += columns.t.len() as u64;
            n_unsealed += columns.t.len() as u64;
        }
        if n_unsealed >= seal_every {
            store.seal()?;
            n_unsealed = 0;
        }
        bar.set_position(n_rows);
    }
    store.seal()?;
    let elapsed = start.elapsed();
    bar.finish_and_clear();
    let metrics = store.metrics();
    drop(store);
    Ok(Ingested {
        n_rows,
        n_batches,
        elapsed,
        metrics,
        on_disk: OnDisk::measure(dir)?,
    })
}

/// One track's measured columns for a batch of ticks, reused from batch to batch.
#[derive(Default)]
struct Columns {
    t: Vec<u64>,
    value: Vec<f64>,
    temp: Vec<f64>,
}

impl Columns {
    fn fill(&mut self, signal: &Signal, run: u64, probe: u64, ticks: &[u64]) {
        self.t.clear();
        self.value.clear();
        self.temp.clear();
        for &tick in ticks {
            let (t, value, temp) = signal.measure(run, probe, tick);
            self.t.push(t);
            self.value.push(value);
            self.temp.push(temp);
        }
    }
}

/// What the store's files hold on disk, counted from the files themselves.
struct OnDisk {
    n_files: u64,
    n_bytes: u64,
}

impl OnDisk {
    /// Every file under `dir` (the manifest, the segments, the lock), by its length.
    fn measure(dir: &Path) -> Result<OnDisk, Failure> {
        let cannot = |e: io::Error| Failure::new(format!("cannot measure ./{DEMO_DIR}: {e}"));
        let mut on_disk = OnDisk {
            n_files: 0,
            n_bytes: 0,
        };
        let mut folders = vec![dir.to_owned()];
        while let Some(folder) = folders.pop() {
            for entry in fs::read_dir(&folder).map_err(cannot)? {
                let entry = entry.map_err(cannot)?;
                let meta = entry.metadata().map_err(cannot)?;
                if meta.is_dir() {
                    folders.push(entry.path());
                } else {
                    on_disk.n_files += 1;
                    on_disk.n_bytes += meta.len();
                }
            }
        }
        Ok(on_disk)
    }
}

fn run_label(run: u64) -> String {
    format!("run_{run}")
}

fn probe_label(probe: u64) -> String {
    format!("probe_{probe}")
}

/// The first tick's time: 2025-12-01T00:00:00Z, in µs since the Unix epoch, so the demo's
/// times read as dates (in `info`, surveys and `strata view`), not as 1970. The ladder's grid is
/// zero-anchored on the epoch; this start lies on its level-0 and level-1 boundaries.
const START_US: u64 = 1_764_547_200_000_000;

/// A tick's place on the axis: its time, in µs since the epoch.
fn axis_of(tick: u64) -> u64 {
    START_US + since_start(tick)
}

/// A tick's time after the first tick's, in µs: what the demo's lines say times in.
fn since_start(tick: u64) -> u64 {
    tick * SAMPLE_INTERVAL_US
}

/// The demo's series: `n_ticks` ticks of every track, less the ones the recorder missed.
struct Signal {
    n_ticks: u64,
}

impl Signal {
    /// The tick `per_mille` thousandths of the way through the series.
    fn tick_at(&self, per_mille: u64) -> u64 {
        self.n_ticks * per_mille / 1000
    }

    fn ticks(&self, per_mille: &Range<u64>) -> Range<u64> {
        self.tick_at(per_mille.start)..self.tick_at(per_mille.end)
    }

    /// The ticks no track has a row at.
    fn offline(&self) -> Range<u64> {
        self.ticks(&OFFLINE_PER_MILLE)
    }

    /// The ticks where `value` reads zero.
    fn stuck(&self) -> Range<u64> {
        self.ticks(&STUCK_PER_MILLE)
    }

    /// Each spike's tick and value.
    fn spikes(&self) -> impl Iterator<Item = (u64, f64)> + '_ {
        SPIKES
            .iter()
            .map(|&(per_mille, value)| (self.tick_at(per_mille), value))
    }

    /// The ticks of each batch that publishes anything, in order: batch `k` (position `k`, from
    /// 1) holds the present ticks of the `k`-th window of `TICKS_PER_BATCH` that has any.
    fn batches(&self) -> impl Iterator<Item = Vec<u64>> + '_ {
        let offline = self.offline();
        (0..self.n_ticks.div_ceil(TICKS_PER_BATCH))
            .map(move |window| {
                let start = window * TICKS_PER_BATCH;
                (start..(start + TICKS_PER_BATCH).min(self.n_ticks))
                    .filter(|tick| !offline.contains(tick))
                    .collect::<Vec<u64>>()
            })
            .filter(|ticks| !ticks.is_empty())
    }

    /// `signal    sine waves; spikes at t 13 s, ...; no rows at t 40 .. 43.999 s; ...`.
    fn describe(&self) -> String {
        let at = |ticks: Range<u64>| {
            units::range(
                since_start(ticks.start),
                since_start(ticks.end.saturating_sub(1)),
                Some("µs"),
            )
        };
        let spikes: Vec<String> = self
            .spikes()
            .map(|(tick, value)| {
                format!(
                    "{} at t {}",
                    compact(Num::F64(value)),
                    units::amount(u128::from(since_start(tick)), Some("µs"))
                )
            })
            .collect();
        format!(
            "signal    a sine wave per probe, with {} in value ({}), a dropout with no rows from any \
             track (t {}) and value stuck at 0 (t {})",
            count(SPIKES.len() as u64, "spike", "spikes"),
            spikes.join(", "),
            at(self.offline()),
            at(self.stuck()),
        )
    }

    /// One deterministic sample as a row, in declaration order.
    fn sample(&self, run: u64, probe: u64, tick: u64) -> Row {
        let (t, value, temp) = self.measure(run, probe, tick);
        vec![
            Value::Str(run_label(run)),
            Value::Str(probe_label(probe)),
            Value::U64(t),
            Value::F64(value),
            Value::F64(temp),
        ]
    }

    /// One deterministic sample's axis and measured values: a sine per probe with a run's
    /// amplitude and a probe's phase, a little hashed noise, and a slowly drifting temperature;
    /// at a spike's tick `value` is the spike, and over the stuck stretch it is zero.
    fn measure(&self, run: u64, probe: u64, tick: u64) -> (u64, f64, f64) {
        let (run_f, probe_f, tick_f) = (run as f64, probe as f64, tick as f64);
        // Periods of 5 to 13.75 s: a survey of the whole series shows each wave, not a blur.
        let period_ticks = 5000.0 + 1250.0 * probe_f;
        let noise = (unit(mix(run << 48 ^ probe << 40 ^ tick)) - 0.5) * 0.1;
        let wave = (1.0 + 0.5 * run_f) * (TAU * tick_f / period_ticks + 0.7 * probe_f).sin();
        let value = if self.stuck().contains(&tick) {
            0.0
        } else {
            self.spikes()
                .find(|&(at, _)| at == tick)
                .map_or(wave + noise, |(_, spike)| spike)
        };
        let temp = 20.0 + 1.5 * run_f + 0.1 * probe_f + 0.8 * (TAU * tick_f / 60_000.0).sin();
        (axis_of(tick), value, temp)
    }
}

/// splitmix64's finaliser: a well-mixed u64 from any u64.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// The top 53 bits of `x` as a fraction in [0, 1).
fn unit(x: u64) -> f64 {
    (x >> 11) as f64 / (1u64 << 53) as f64
}

/// One track's first batches, timed, and checked row by row against what was published.
fn read_track(store: &Store, signal: &Signal) -> Result<Read, Failure> {
    let (run, probe) = (run_label(READ_RUN), probe_label(READ_PROBE));
    let start = Instant::now();
    let rows = store.query(STREAM, &[&run, &probe], ..=READ_BATCHES)?;
    let elapsed = start.elapsed();
    let expected: Vec<StoredRow> = (1..)
        .zip(signal.batches())
        .take_while(|&(position, _)| position <= READ_BATCHES)
        .flat_map(|(position, ticks)| {
            ticks.into_iter().map(move |tick| StoredRow {
                position,
                values: signal.sample(READ_RUN, READ_PROBE, tick),
            })
        })
        .collect();
    let n_expected = expected.len();
    if rows != expected {
        return Err(Failure::new(format!(
            "read back {} rows of {run}/{probe}, which differ from the {n_expected} published",
            rows.len()
        )));
    }
    Ok(Read { rows, elapsed })
}

/// Every track over a range of positions (an unnarrowed read), timed and counted.
fn read_span(store: &Store, n_batches: u64) -> Result<Read, Failure> {
    let from = (n_batches / 2).max(1);
    let to = (from + SPAN_BATCHES - 1).min(n_batches);
    let start = Instant::now();
    let rows = store.query(STREAM, &[], from..=to)?;
    let elapsed = start.elapsed();
    Ok(Read { rows, elapsed })
}

/// The folds the demo prints, each timed on its own.
fn demo_folds() -> [Aggregate; 5] {
    [
        Aggregate::Mean,
        Aggregate::Min,
        Aggregate::Max,
        Aggregate::p(50),
        Aggregate::p(99),
    ]
}

/// Surveys one track (drawn into `survey.svg`) and every track at `SURVEY_BUDGET_POINTS`, one
/// track again at `TABLE_BUDGET_POINTS` for a table, and folds of one track; each read timed.
fn survey_reads(store: &Store, dir: &Path, signal: &Signal) -> Result<Surveys, Failure> {
    let (run, probe) = (run_label(READ_RUN), probe_label(READ_PROBE));
    let selection = [run.as_str(), probe.as_str()];
    let decl = store
        .stream(STREAM)
        .ok_or_else(|| Failure::new(format!("the reopened store lost stream {STREAM:?}")))?;
    let scope = |budget| Scope {
        decl,
        selection: &selection,
        budget,
        units: &UNITS,
    };
    let track = timed(|| store.survey(STREAM, &selection, .., SURVEY_BUDGET_POINTS))?;
    let picture = svg::render(&survey::picture(
        &track.answer,
        &scope(SURVEY_BUDGET_POINTS),
    ));
    let path = dir.join(SURVEY_SVG);
    fs::write(&path, picture)
        .map_err(|e| Failure::new(format!("cannot write {}: {e}", path.display())))?;
    let every_track = timed(|| store.survey(STREAM, &[], .., SURVEY_BUDGET_POINTS))?;
    let small = timed(|| store.survey(STREAM, &selection, .., TABLE_BUDGET_POINTS))?;
    let table = survey::table(&small.answer, &scope(TABLE_BUDGET_POINTS));
    let words = [&track, &every_track, &small].map(|survey| {
        [
            scope(0).range(&survey.answer),
            scope(0).buckets(&survey.answer),
        ]
    });
    let kept = Kept::check(&track.answer, signal, scope(0).bucket_width(&track.answer));
    let folds = demo_folds()
        .into_iter()
        .map(|aggregate| {
            Ok((
                aggregate,
                timed(|| store.fold(STREAM, &selection, .., aggregate))?,
            ))
        })
        .collect::<Result<_, Failure>>()?;
    Ok(Surveys {
        track,
        every_track,
        small,
        folds,
        table,
        words,
        kept,
    })
}

/// What the drawn survey kept of the signal's features, checked against the schedule.
struct Kept {
    /// Spikes found as their bucket's max (or min, for a spike down) at the spike's own axis.
    n_spikes: usize,
    /// Buckets skipped over the dropout, in `value`'s answer: no bucket covers it.
    n_skipped: Option<u128>,
}

impl Kept {
    fn check(survey: &Survey, signal: &Signal, bucket_width: Option<u128>) -> Kept {
        let Some(value) = survey.fields.iter().find(|f| f.field == "value") else {
            return Kept {
                n_spikes: 0,
                n_skipped: None,
            };
        };
        let n_spikes = signal
            .spikes()
            .filter(|&(tick, spike)| {
                let at = Point {
                    axis: axis_of(tick),
                    value: Num::F64(spike),
                };
                value.buckets.iter().any(|b| {
                    if spike > 0.0 {
                        b.max == at
                    } else {
                        b.min == at
                    }
                })
            })
            .count();
        let offline = signal.offline();
        let [from, to] = [offline.start, offline.end.saturating_sub(1)].map(axis_of);
        let covered = value
            .buckets
            .iter()
            .any(|b| b.first.axis <= to && b.last.axis >= from);
        let n_skipped = bucket_width.filter(|_| !covered).and_then(|width| {
            let before = value.buckets.iter().rev().find(|b| b.last.axis < from)?;
            let after = value.buckets.iter().find(|b| b.first.axis > to)?;
            let index = |axis: u64| u128::from(axis) / width;
            Some(index(after.first.axis) - index(before.last.axis) - 1)
        });
        Kept {
            n_spikes,
            n_skipped,
        }
    }

    /// `kept      4 of 4 spikes ...; the dropout is a gap of 7 buckets`.
    fn line(&self, track: &str) -> String {
        let dropout = match self.n_skipped {
            Some(n) if n > 0 => format!(
                "no bucket covers the dropout: it is a gap of {}",
                count(u64::try_from(n).unwrap_or(u64::MAX), "bucket", "buckets")
            ),
            _ => "the dropout is narrower than a bucket, so no gap shows".to_owned(),
        };
        format!(
            "kept      in the drawn survey of {track}: {} of {} spikes, each as its bucket's \
             highest or lowest value; {dropout}",
            self.n_spikes,
            SPIKES.len()
        )
    }
}

/// The survey and fold lines of the summary.
fn survey_lines(surveys: &Surveys) -> Vec<String> {
    let track = format!("{}/{}", run_label(READ_RUN), probe_label(READ_PROBE));
    let [
        [track_range, track_buckets],
        [every_range, every_buckets],
        [small_range, small_buckets],
    ] = &surveys.words;
    let mut lines = vec![
        format!(
            "survey    {track}, {track_range}, within {} points: {track_buckets}, in {}; drawn \
             in ./{DEMO_DIR}/{SURVEY_SVG}",
            grouped(SURVEY_BUDGET_POINTS),
            duration(surveys.track.elapsed),
        ),
        surveys.kept.line(&track),
        format!(
            "survey    every track, {every_range}, within {} points: {every_buckets}, in {} (the \
             {} tracks merged bucket by bucket)",
            grouped(SURVEY_BUDGET_POINTS),
            duration(surveys.every_track.elapsed),
            N_RUNS * N_PROBES,
        ),
        format!(
            "survey    {track}, {small_range}, within {TABLE_BUDGET_POINTS} points: \
             {small_buckets}, in {}",
            duration(surveys.small.elapsed),
        ),
    ];
    lines.extend(
        surveys
            .table
            .lines()
            .map(|line| format!("            {line}")),
    );
    for (aggregate, fold) in &surveys.folds {
        let values: Vec<String> = fold
            .answer
            .iter()
            .map(|stat| {
                let value = stat.value.map_or_else(|| "-".to_owned(), compact);
                format!("{}={value}", stat.field)
            })
            .collect();
        lines.push(format!(
            "fold      {track} {:<4} in {:>8}: {}",
            aggregate.name(),
            duration(fold.elapsed),
            values.join(" ")
        ));
    }
    lines
}

fn report(
    ingested: &Ingested,
    reopen: Duration,
    watermark: Option<u64>,
    track: &Read,
    span: &Read,
    surveys: &Surveys,
) -> Result<(), Failure> {
    let m = &ingested.metrics;
    let syncs_per_barrier = m.barrier_syncs as f64 / m.barriers.max(1) as f64;
    let mut lines = vec![
        format!(
            "ingested  {} rows in {} batches in {}: {} rows/s (wall clock, seals included; \
             published by columns)",
            grouped(ingested.n_rows),
            grouped(ingested.n_batches),
            duration(ingested.elapsed),
            grouped_f64(per_second(ingested.n_rows, ingested.elapsed)),
        ),
        format!(
            "on disk   {} bytes in {} files: {:.1} bytes per row (the values are {VALUE_BYTES_PER_ROW} \
             bytes a row: t, value and temp)",
            grouped(ingested.on_disk.n_bytes),
            grouped(ingested.on_disk.n_files),
            ingested.on_disk.n_bytes as f64 / ingested.n_rows.max(1) as f64,
        ),
        format!(
            "sealed    {} rows, {} bytes ({:.1} MiB) in {}: {}, {syncs_per_barrier:.1} per barrier",
            grouped(m.rows_sealed),
            grouped(m.bytes_sealed),
            m.bytes_sealed as f64 / f64::from(1 << 20),
            count(m.barriers, "barrier", "barriers"),
            count(m.barrier_syncs, "sync", "syncs"),
        ),
        format!(
            "reopened  in {}: watermark {}, the last position durable",
            duration(reopen),
            watermark.map_or_else(|| "none".to_owned(), grouped)
        ),
        "            (a position is the number of the batch a row was published in: the demo"
            .to_owned(),
        format!(
            "            publishes {TICKS_PER_BATCH} ticks of every track as one batch, and those \
             rows share its position)"
        ),
        format!(
            "query     {}/{} positions ..={READ_BATCHES}: {} rows in {}, equal to what was published",
            run_label(READ_RUN),
            probe_label(READ_PROBE),
            grouped(track.rows.len() as u64),
            duration(track.elapsed),
        ),
    ];
    lines.extend(track.rows.iter().take(SHOWN_ROWS).map(|row| {
        let values: Vec<String> = FIELDS
            .iter()
            .zip(&row.values)
            .map(|((name, _), v)| match v {
                // The axis as the time it is, as `strata query` prints it.
                Value::U64(t) if *name == "t" => {
                    format!(
                        "{name}={}",
                        super::time::format(*t, strata::TimeUnit::Micros)
                    )
                }
                _ => format!("{name}={}", cell(v)),
            })
            .collect();
        format!("            position={} {}", row.position, values.join(" "))
    }));
    let positions = match (span.rows.first(), span.rows.last()) {
        (Some(first), Some(last)) => format!("{}..={}", first.position, last.position),
        _ => "(none)".to_owned(),
    };
    lines.push(format!(
        "query     every track, positions {positions}: {} rows in {}",
        grouped(span.rows.len() as u64),
        duration(span.elapsed),
    ));
    lines.extend(survey_lines(surveys));
    lines.push(format!("store     ./{DEMO_DIR}"));
    lines.extend(next_steps(&strata_command()));
    print(&(lines.join("\n") + "\n"))
}

/// How the user runs `strata` from where they are: through cargo when cargo started this
/// process (`cargo run` sets `CARGO_MANIFEST_DIR` for what it runs), else by its name.
fn strata_command() -> String {
    if std::env::var_os("CARGO_MANIFEST_DIR").is_some() {
        let release = if cfg!(debug_assertions) {
            ""
        } else {
            " --release"
        };
        format!("cargo run{release} --")
    } else {
        "strata".to_owned()
    }
}

/// What to do next, as commands that paste: the page over the store, then what it holds.
fn next_steps(strata: &str) -> Vec<String> {
    let mut lines = Vec::new();
    if cfg!(feature = "view") {
        lines.push(format!(
            "next      see it in a browser (pan, zoom, hover; Ctrl-C stops it):\n            \
             {strata} --store {DEMO_DIR} view --open"
        ));
    }
    lines.push(format!(
        "          what it holds, track by track:\n            {strata} --store {DEMO_DIR} info"
    ));
    lines.push(format!(
        "          a survey of one track:\n            {strata} --store {DEMO_DIR} survey \
         {STREAM} --track run_1,probe_3 --budget 40"
    ));
    if strata != "strata" {
        lines.push("          (`cargo install --path cli` puts `strata` on your PATH)".to_owned());
    }
    lines
}
