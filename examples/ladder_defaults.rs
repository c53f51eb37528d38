//! What the default ladder costs against a sweep of hand-tuned ladders, for issue #29: bytes on
//! disk per row, the level cells' share of the raw columns, and CSV ingest rows/s, measured
//! through the real command line (`strata declare` then `strata ingest` with its default
//! options) for six kinds of axis.
//!
//! ```sh
//! cargo build --release && cargo run --release --example ladder_defaults
//! ```
//!
//! `cargo build --release` first: the example runs the `strata` binary beside it in
//! `target/release/`, which `cargo run --example` does not rebuild. `STRATA_SWEEP_ROWS` sets the
//! rows per case (default 2,000,000).
//!
//! Every case has a track field `probe` (str), an axis `t` (u64) and two measured f64 fields:
//! `v` = 100 sin(i / 1000) to 4 decimals and `temp` = 20 + 5 sin(i / 10^6) to 3 decimals, `i`
//! the row's index within its track. The axes: spaced 1 (a sample index), 10^3 (µs at 1 kHz),
//! 10^6 (ns at 1 kHz), 10^9 (ns at 1 Hz), Poisson-irregular (exponential gaps, mean 10^3), and
//! one stream holding a 1 Hz track beside a 10 kHz track (µs), interleaved in time order.
//!
//! Each case's CSV is written once and ingested into a fresh store per ladder: the defaults (no
//! `--ladder`, so whatever the build in use chooses), tuned ladders `--ladder 2^k:4` for k from
//! round(log2 spacing) to 14 above it (around both rates for the mixed stream), and a raw floor
//! `--ladder 2^62:4`, whose one cell per file leaves the raw columns alone. Level bytes are the
//! store's bytes less the raw floor's. The best tuned ladder is the sweep's fewest bytes; the
//! ingest verdict compares the fastest of seven ingests (runs of one ingest vary by up to 40% on a shared 2-core machine; the fastest is the cost with the least interference) of the defaults and of that ladder.

use std::collections::BTreeSet;
use std::error::Error;
use std::fmt::Display;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

type Res<T> = Result<T, Box<dyn Error>>;

/// Rows per case unless `STRATA_SWEEP_ROWS` says otherwise.
const ROWS_DEFAULT: u64 = 2_000_000;
/// Tuned ladders cover round(log2 spacing) ..= that + this many powers of two.
const SWEEP_OCTAVES: u32 = 14;
/// At most this many tuned ladders a case: a wider union is strided, ends kept, to bound the run.
const SWEEP_LADDERS_MAX: usize = 16;
/// The raw floor's base: every axis here lies in one level-0 cell of 2^62.
const RAW_FLOOR_LOG2: u32 = 62;
const FANOUT: u64 = 4;
/// Ingests timed for the ingest verdict, of the defaults and of the best tuned ladder each.
const INGEST_TIMINGS: usize = 7;
const STREAM: &str = "s";

const TARGET_BYTES_RATIO: f64 = 1.15;
const TARGET_LEVELS_PCT: f64 = 25.0;
const TARGET_INGEST_RATIO: f64 = 0.9;
const TARGET_ISSUE_BYTES_PER_ROW: f64 = 33.0;

/// Wraps an error with what was being done.
trait Context<T> {
    fn context(self, what: impl FnOnce() -> String) -> Res<T>;
}

impl<T, E: Display> Context<T> for Result<T, E> {
    fn context(self, what: impl FnOnce() -> String) -> Res<T> {
        self.map_err(|e| format!("{}: {e}", what()).into())
    }
}

/// How a case lays its rows on the axis.
#[derive(Clone, Copy, Debug)]
enum Axis {
    /// One track, `t = start + i * spacing`.
    Regular { start: u64, spacing: u64 },
    /// One track, exponential gaps of mean `mean_gap` rounded to whole units, from `start`.
    Poisson { start: u64, mean_gap: u64 },
    /// A slow track and a fast one from `start`, rows merged in time order (slow first on a tie).
    Mixed { start: u64, slow: u64, fast: u64 },
}

impl Axis {
    /// The spacings the tuned sweep is centred on.
    fn spacings(self) -> Vec<u64> {
        match self {
            Axis::Regular { spacing, .. } => vec![spacing],
            Axis::Poisson { mean_gap, .. } => vec![mean_gap],
            Axis::Mixed { slow, fast, .. } => vec![fast, slow],
        }
    }
}

#[derive(Debug)]
struct Case {
    name: &'static str,
    axis: Axis,
}

fn cases() -> Vec<Case> {
    const US_2023: u64 = 1_700_000_000_000_000;
    const NS_2023: u64 = 1_700_000_000_000_000_000;
    vec![
        Case {
            name: "spacing 1 (sample index)",
            axis: Axis::Regular {
                start: 0,
                spacing: 1,
            },
        },
        Case {
            name: "spacing 10^3 (µs at 1 kHz)",
            axis: Axis::Regular {
                start: US_2023,
                spacing: 1_000,
            },
        },
        Case {
            name: "spacing 10^6 (ns at 1 kHz)",
            axis: Axis::Regular {
                start: NS_2023,
                spacing: 1_000_000,
            },
        },
        Case {
            name: "spacing 10^9 (ns at 1 Hz)",
            axis: Axis::Regular {
                start: NS_2023,
                spacing: 1_000_000_000,
            },
        },
        Case {
            name: "Poisson, mean gap 10^3 (µs)",
            axis: Axis::Poisson {
                start: US_2023,
                mean_gap: 1_000,
            },
        },
        Case {
            name: "mixed 1 Hz + 10 kHz (µs)",
            axis: Axis::Mixed {
                start: US_2023,
                slow: 1_000_000,
                fast: 100,
            },
        },
    ]
}

/// A ladder a store is declared with.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Ladder {
    /// No `--ladder`.
    Defaults,
    /// `--ladder 2^k:4`.
    Tuned(u32),
    /// `--ladder 2^62:4`: one cell per file, so the store is the raw columns.
    RawFloor,
}

impl Ladder {
    fn base(self) -> Option<u64> {
        match self {
            Ladder::Defaults => None,
            Ladder::Tuned(k) => Some(1 << k),
            Ladder::RawFloor => Some(1 << RAW_FLOOR_LOG2),
        }
    }

    fn label(self) -> String {
        match self {
            Ladder::Defaults => "defaults".to_owned(),
            Ladder::Tuned(k) => format!("2^{k}:{FANOUT}"),
            Ladder::RawFloor => format!("2^{RAW_FLOOR_LOG2}:{FANOUT} (raw floor)"),
        }
    }
}

/// One store built and measured.
#[derive(Debug)]
struct Measured {
    ladder: Ladder,
    n_bytes: u64,
    ingest_secs: f64,
}

impl Measured {
    fn bytes_per_row(&self, n_rows: u64) -> f64 {
        self.n_bytes as f64 / n_rows as f64
    }

    fn rows_per_sec(&self, n_rows: u64) -> f64 {
        n_rows as f64 / self.ingest_secs
    }

    /// Level bytes (beyond the raw floor's) as a percentage of the raw floor.
    fn levels_pct(&self, floor: &Measured) -> f64 {
        100.0 * (self.n_bytes as f64 - floor.n_bytes as f64) / floor.n_bytes as f64
    }
}

/// A case's verdict, for the summary table.
#[derive(Debug)]
struct Verdict {
    case: &'static str,
    n_rows: u64,
    defaults_bytes_per_row: f64,
    best_label: String,
    best_bytes_per_row: f64,
    bytes_ratio: f64,
    defaults_levels_pct: f64,
    defaults_rows_per_sec: f64,
    best_rows_per_sec: f64,
    ingest_ratio: f64,
}

impl Verdict {
    fn passes(&self) -> bool {
        self.bytes_ratio <= TARGET_BYTES_RATIO
            && self.defaults_levels_pct <= TARGET_LEVELS_PCT
            && self.ingest_ratio >= TARGET_INGEST_RATIO
    }
}

fn main() -> Res<()> {
    let n_rows = match std::env::var("STRATA_SWEEP_ROWS") {
        Ok(word) => word
            .replace('_', "")
            .parse::<u64>()
            .context(|| format!("STRATA_SWEEP_ROWS={word:?} is not a row count"))?,
        Err(_) => ROWS_DEFAULT,
    };
    if n_rows < 2 {
        return Err(format!("STRATA_SWEEP_ROWS={n_rows}: a case needs at least 2 rows").into());
    }
    let strata = strata_binary()?;
    let work = tempfile::tempdir().context(|| "cannot make a temporary folder".to_owned())?;
    println!("strata binary: {}", strata.display());
    println!(
        "rows per case: {n_rows}; fanout {FANOUT}; tuned bases 2^k for k from round(log2 \
         spacing) to {SWEEP_OCTAVES} above it, at most {SWEEP_LADDERS_MAX} a case; ingest with \
         default options (--batch 1000, --seal-every 100000, compaction on)"
    );
    println!("work folder: {}", work.path().display());
    let started = Instant::now();
    let mut verdicts = Vec::new();
    let mut issue_figure = None;
    for (case_idx, case) in cases().iter().enumerate() {
        let verdict = run_case(&strata, work.path(), case_idx, case, n_rows)?;
        if matches!(case.axis, Axis::Regular { spacing: 1_000, .. }) {
            issue_figure = Some(verdict.defaults_bytes_per_row);
        }
        verdicts.push(verdict);
    }
    print_summary(&verdicts);
    if let Some(bytes_per_row) = issue_figure {
        println!(
            "\nissue #29 table ({n_rows} rows, t µs at 1 kHz, 2 f64, no --ladder): {bytes_per_row:.2} \
             B/row under defaults (target <= {TARGET_ISSUE_BYTES_PER_ROW}): {}",
            pass(bytes_per_row <= TARGET_ISSUE_BYTES_PER_ROW)
        );
    }
    println!("total run time: {:.1} s", started.elapsed().as_secs_f64());
    Ok(())
}

/// The `strata` binary of the same profile as this example (`target/PROFILE/strata`).
fn strata_binary() -> Res<PathBuf> {
    let exe = std::env::current_exe().context(|| "cannot find this example's path".to_owned())?;
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .ok_or_else(|| format!("{} has no target/PROFILE folder above it", exe.display()))?;
    let binary = profile_dir.join(format!("strata{}", std::env::consts::EXE_SUFFIX));
    if !binary.is_file() {
        return Err(format!(
            "no strata binary at {}: build it first with `cargo build --release` (then `cargo \
             run --release --example ladder_defaults`)",
            binary.display()
        )
        .into());
    }
    Ok(binary)
}

/// Writes the case's CSV once, builds a store per ladder, prints its table and verdict.
fn run_case(strata: &Path, work: &Path, case_idx: usize, case: &Case, n_rows: u64) -> Res<Verdict> {
    let csv = work.join(format!("case-{case_idx}.csv"));
    let written = Instant::now();
    write_csv(&csv, case.axis, n_rows)?;
    let csv_bytes = std::fs::metadata(&csv)
        .context(|| format!("cannot read the size of {}", csv.display()))?
        .len();
    println!(
        "\n## {}\n{n_rows} rows, CSV {:.1} MB written in {:.1} s",
        case.name,
        csv_bytes as f64 / 1e6,
        written.elapsed().as_secs_f64()
    );
    let (ks, capped) = sweep(case.axis);
    if let Some(n_uncapped) = capped {
        println!(
            "sweep capped: {} of the {n_uncapped} tuned bases (every other one or sparser, both \
             ends kept)",
            ks.len()
        );
    }
    println!(
        "{:<22} {:>20} {:>9} {:>12} {:>13} {:>9}",
        "ladder", "base", "B/row", "levels % raw", "ingest rows/s", "ingest s"
    );
    let mut store_idx = 0;
    let mut measure = |ladder: Ladder| {
        store_idx += 1;
        let store = work.join(format!("case-{case_idx}-store-{store_idx}"));
        build_store(strata, &store, &csv, ladder, n_rows)
    };
    // The raw floor first: every other line's level share is measured against it.
    let floor = measure(Ladder::RawFloor)?;
    print_line(&floor, &floor, n_rows);
    let mut measured = Vec::new();
    for ladder in std::iter::once(Ladder::Defaults).chain(ks.iter().map(|&k| Ladder::Tuned(k))) {
        let m = measure(ladder)?;
        print_line(&m, &floor, n_rows);
        measured.push(m);
    }
    // One timing is noise on a shared machine (one ladder has measured 1.8 and 3.1 M rows/s in
    // one run): the ingest verdict takes the fastest of several ingests of the defaults and of
    // the best tuned ladder, alternated so that both meet the same conditions.
    let first = |ladder: Ladder| {
        measured
            .iter()
            .find(|m| m.ladder == ladder)
            .map(|m| m.ingest_secs)
            .ok_or_else(|| format!("{} was not measured", ladder.label()))
    };
    let best = best_tuned(&measured)?.ladder;
    let mut timings = Timings {
        defaults_secs: vec![first(Ladder::Defaults)?],
        best_secs: vec![first(best)?],
    };
    for _ in 1..INGEST_TIMINGS {
        timings
            .defaults_secs
            .push(measure(Ladder::Defaults)?.ingest_secs);
        timings.best_secs.push(measure(best)?.ingest_secs);
    }
    std::fs::remove_file(&csv).context(|| format!("cannot remove {}", csv.display()))?;
    verdict(case, n_rows, &floor, &measured, &timings)
}

/// The ingest times of the defaults and of the best tuned ladder, first the sweep's.
#[derive(Debug)]
struct Timings {
    defaults_secs: Vec<f64>,
    best_secs: Vec<f64>,
}

impl Timings {
    fn fastest(secs: &[f64]) -> f64 {
        secs.iter().copied().fold(f64::INFINITY, f64::min)
    }

    fn spelled(secs: &[f64]) -> String {
        let secs: Vec<String> = secs.iter().map(|s| format!("{s:.2}")).collect();
        format!("{} s", secs.join(", "))
    }
}

/// The tuned ladder of fewest bytes.
fn best_tuned(measured: &[Measured]) -> Res<&Measured> {
    Ok(measured
        .iter()
        .filter(|m| matches!(m.ladder, Ladder::Tuned(_)))
        .min_by_key(|m| m.n_bytes)
        .ok_or("no tuned ladder was measured")?)
}

/// One line of a case's table.
fn print_line(m: &Measured, floor: &Measured, n_rows: u64) {
    println!(
        "{:<22} {:>20} {:>9.2} {:>12.2} {:>13.0} {:>9.2}",
        m.ladder.label(),
        m.ladder
            .base()
            .map_or_else(|| "-".to_owned(), |b| b.to_string()),
        m.bytes_per_row(n_rows),
        m.levels_pct(floor),
        m.rows_per_sec(n_rows),
        m.ingest_secs
    );
    // A long run shows its progress line by line.
    let _ = std::io::stdout().flush();
}

/// Judges the defaults against the tuned ladder of fewest bytes, and prints the verdict lines.
fn verdict(
    case: &Case,
    n_rows: u64,
    floor: &Measured,
    measured: &[Measured],
    timings: &Timings,
) -> Res<Verdict> {
    let defaults = measured
        .iter()
        .find(|m| m.ladder == Ladder::Defaults)
        .ok_or("the defaults were not measured")?;
    let tuned: Vec<&Measured> = measured
        .iter()
        .filter(|m| matches!(m.ladder, Ladder::Tuned(_)))
        .collect();
    let best = best_tuned(measured)?;
    let defaults_rows_per_sec = n_rows as f64 / Timings::fastest(&timings.defaults_secs);
    let best_rows_per_sec = n_rows as f64 / Timings::fastest(&timings.best_secs);
    let fastest = tuned
        .iter()
        .max_by(|a, b| a.rows_per_sec(n_rows).total_cmp(&b.rows_per_sec(n_rows)))
        .ok_or("no tuned ladder was measured")?;
    let v = Verdict {
        case: case.name,
        n_rows,
        defaults_bytes_per_row: defaults.bytes_per_row(n_rows),
        best_label: best.ladder.label(),
        best_bytes_per_row: best.bytes_per_row(n_rows),
        bytes_ratio: defaults.n_bytes as f64 / best.n_bytes as f64,
        defaults_levels_pct: defaults.levels_pct(floor),
        defaults_rows_per_sec,
        best_rows_per_sec,
        ingest_ratio: defaults_rows_per_sec / best_rows_per_sec,
    };
    println!(
        "bytes:  defaults {:.2} B/row vs best tuned {} {:.2} B/row: {:.3}x (target <= {TARGET_BYTES_RATIO}): {}",
        v.defaults_bytes_per_row,
        v.best_label,
        v.best_bytes_per_row,
        v.bytes_ratio,
        pass(v.bytes_ratio <= TARGET_BYTES_RATIO)
    );
    println!(
        "levels: defaults {:.2}% of raw (target <= {TARGET_LEVELS_PCT}%): {}",
        v.defaults_levels_pct,
        pass(v.defaults_levels_pct <= TARGET_LEVELS_PCT)
    );
    println!(
        "ingest: defaults {:.0} rows/s vs {} {:.0} rows/s, each the fastest of {INGEST_TIMINGS} \
         ingests (defaults {}; tuned {}): {:.3}x (target >= {TARGET_INGEST_RATIO}): {}",
        v.defaults_rows_per_sec,
        v.best_label,
        v.best_rows_per_sec,
        Timings::spelled(&timings.defaults_secs),
        Timings::spelled(&timings.best_secs),
        v.ingest_ratio,
        pass(v.ingest_ratio >= TARGET_INGEST_RATIO),
    );
    println!(
        "        fastest tuned ladder of the sweep (one ingest each): {} {:.0} rows/s",
        fastest.ladder.label(),
        fastest.rows_per_sec(n_rows)
    );
    // With several tracks, a file compaction has emptied of one partition's rows stays live
    // while another partition's tier in it is live, so the bytes on disk carry dead raw rows in
    // an amount that depends on where compaction stopped: the raw floor is then not a floor.
    let below_floor: Vec<&Measured> = measured
        .iter()
        .filter(|m| m.n_bytes < floor.n_bytes)
        .collect();
    if let Some(lowest) = below_floor.iter().min_by_key(|m| m.n_bytes) {
        println!(
            "note: {} ladder(s) measured below the raw floor ({:.2} B/row; lowest {} at {:.2}): \
             the bytes on disk hold raw rows that compaction superseded in files another track \
             still keeps live (`strata fsck` lists live files per track), so this case's level \
             shares and byte ratios carry that much noise",
            below_floor.len(),
            floor.bytes_per_row(n_rows),
            lowest.ladder.label(),
            lowest.bytes_per_row(n_rows)
        );
    }
    // Context for the byte target: the finest tuned ladder that already meets the level budget,
    // the resolution a hand-tuner would pick (the fewest-bytes ladder is always the coarsest).
    if let Some(finest) = tuned
        .iter()
        .find(|m| m.levels_pct(floor) <= TARGET_LEVELS_PCT)
    {
        println!(
            "context: finest tuned ladder with levels <= {TARGET_LEVELS_PCT}% of raw: {} \
             ({:.2} B/row, levels {:.2}%)",
            finest.ladder.label(),
            finest.bytes_per_row(n_rows),
            finest.levels_pct(floor)
        );
    }
    Ok(v)
}

fn pass(ok: bool) -> &'static str {
    if ok { "PASS" } else { "FAIL" }
}

fn print_summary(verdicts: &[Verdict]) {
    println!("\n## Summary (markdown, for docs/levels.md)\n");
    println!(
        "| case | rows | defaults B/row | best tuned (fewest bytes) | tuned B/row | bytes ratio \
         (≤ {TARGET_BYTES_RATIO}) | defaults levels % of raw (≤ {TARGET_LEVELS_PCT}%) | defaults \
         ingest rows/s | tuned ingest rows/s | ingest ratio (≥ {TARGET_INGEST_RATIO}) | verdict |"
    );
    println!("|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---|");
    for v in verdicts {
        println!(
            "| {} | {} | {:.2} | `{}` | {:.2} | {:.3} | {:.2} | {:.0} | {:.0} | {:.3} | {} |",
            v.case,
            v.n_rows,
            v.defaults_bytes_per_row,
            v.best_label,
            v.best_bytes_per_row,
            v.bytes_ratio,
            v.defaults_levels_pct,
            v.defaults_rows_per_sec,
            v.best_rows_per_sec,
            v.ingest_ratio,
            pass(v.passes())
        );
    }
}

/// The tuned ladders' log2 bases, and the uncapped count if the sweep was strided.
fn sweep(axis: Axis) -> (Vec<u32>, Option<usize>) {
    let mut ks = BTreeSet::new();
    for spacing in axis.spacings() {
        let k0 = log2_nearest(spacing);
        ks.extend(k0..=k0 + SWEEP_OCTAVES);
    }
    let ks: Vec<u32> = ks.into_iter().collect();
    if ks.len() <= SWEEP_LADDERS_MAX {
        return (ks, None);
    }
    let stride = ks.len().div_ceil(SWEEP_LADDERS_MAX - 1);
    let mut kept: Vec<u32> = ks.iter().copied().step_by(stride).collect();
    if let Some(&last) = ks.last()
        && kept.last() != Some(&last)
    {
        kept.push(last);
    }
    (kept, Some(ks.len()))
}

/// log2 of `n` rounded to the nearest whole number (on the log scale: `n` rounds up when it is
/// above 2^(k + 1/2), that is when n^2 > 2^(2k + 1)).
fn log2_nearest(n: u64) -> u32 {
    let n = n.max(1);
    let k = n.ilog2();
    let upper = u128::from(n) * u128::from(n) > 1u128 << (2 * k + 1);
    k + u32::from(upper)
}

/// Declares the stream under `ladder` in a fresh store, ingests the CSV, and measures the store.
fn build_store(
    strata: &Path,
    store: &Path,
    csv: &Path,
    ladder: Ladder,
    n_rows: u64,
) -> Res<Measured> {
    let mut declare = Command::new(strata);
    declare.arg("--store").arg(store).args([
        "declare",
        STREAM,
        "--field",
        "probe:str",
        "--field",
        "t:u64",
        "--field",
        "v:f64",
        "--field",
        "temp:f64",
        "--track",
        "probe",
        "--axis",
        "t",
    ]);
    if let Some(base) = ladder.base() {
        declare.arg("--ladder").arg(format!("{base}:{FANOUT}"));
    }
    run(&mut declare, || format!("declare under {}", ladder.label()))?;
    let mut ingest = Command::new(strata);
    ingest
        .arg("--store")
        .arg(store)
        .args(["ingest", STREAM])
        .arg(csv);
    let started = Instant::now();
    let stdout = run(&mut ingest, || format!("ingest under {}", ladder.label()))?;
    let ingest_secs = started.elapsed().as_secs_f64();
    let n_ingested = ingested_rows(&stdout).ok_or_else(|| {
        format!(
            "ingest under {} printed no row count: {stdout}",
            ladder.label()
        )
    })?;
    if n_ingested != n_rows {
        return Err(format!(
            "ingest under {} stored {n_ingested} rows, not {n_rows}: {stdout}",
            ladder.label()
        )
        .into());
    }
    let n_bytes = tree_bytes(store)?;
    std::fs::remove_dir_all(store).context(|| format!("cannot remove {}", store.display()))?;
    Ok(Measured {
        ladder,
        n_bytes,
        ingest_secs,
    })
}

/// Runs a command to its end; its stdout, or an error carrying its stderr.
fn run(command: &mut Command, what: impl Fn() -> String) -> Res<String> {
    let output = command
        .output()
        .context(|| format!("{}: cannot run {command:?}", what()))?;
    if !output.status.success() {
        return Err(format!(
            "{} failed ({}): {}",
            what(),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        )
        .into());
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// The row count of ingest's summary, `ingested 2,000,000 rows into ...`.
fn ingested_rows(stdout: &str) -> Option<u64> {
    let rest = stdout.trim_start().strip_prefix("ingested ")?;
    let count = rest.split_whitespace().next()?;
    count.replace(',', "").parse().ok()
}

/// The bytes of every file under `dir`, recursively, by length.
fn tree_bytes(dir: &Path) -> Res<u64> {
    let mut total = 0;
    for entry in std::fs::read_dir(dir).context(|| format!("cannot list {}", dir.display()))? {
        let entry = entry.context(|| format!("cannot list {}", dir.display()))?;
        let meta = entry
            .metadata()
            .context(|| format!("cannot stat {}", entry.path().display()))?;
        total += if meta.is_dir() {
            tree_bytes(&entry.path())?
        } else {
            meta.len()
        };
    }
    Ok(total)
}

/// 100 sin(i / 1000) to 4 decimals.
fn v_of(i: u64) -> f64 {
    (100.0 * (i as f64 * 0.001).sin() * 1e4).round() / 1e4
}

/// 20 + 5 sin(i / 10^6) to 3 decimals.
fn temp_of(i: u64) -> f64 {
    ((20.0 + 5.0 * (i as f64 * 1e-6).sin()) * 1e3).round() / 1e3
}

/// A deterministic xorshift64 stream of uniforms in (0, 1].
#[derive(Debug)]
struct XorShift(u64);

impl XorShift {
    fn uniform(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        ((self.0 >> 11) as f64 + 1.0) / (1u64 << 53) as f64
    }

    /// An exponential gap of mean `mean`, rounded to whole axis units.
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "-ln(u) for u in (0, 1] is finite and >= 0; the gap is far below 2^64"
    )]
    fn gap(&mut self, mean: u64) -> u64 {
        (-self.uniform().ln() * mean as f64).round() as u64
    }
}

/// The axis value `start + idx * spacing`, or an error if it leaves u64.
fn axis_at(start: u64, idx: u64, spacing: u64) -> Res<u64> {
    idx.checked_mul(spacing)
        .and_then(|offset| start.checked_add(offset))
        .ok_or_else(|| format!("axis {start} + {idx} x {spacing} overflows u64").into())
}

/// Writes the case's rows as the CSV `strata ingest` reads.
fn write_csv(path: &Path, axis: Axis, n_rows: u64) -> Res<()> {
    let file = File::create(path).context(|| format!("cannot create {}", path.display()))?;
    let mut out = BufWriter::new(file);
    let io = |e: std::io::Error| format!("cannot write {}: {e}", path.display());
    writeln!(out, "probe,t,v,temp").map_err(io)?;
    let mut row = |probe: &str, t: u64, i: u64| {
        writeln!(out, "{probe},{t},{},{}", v_of(i), temp_of(i)).map_err(io)
    };
    match axis {
        Axis::Regular { start, spacing } => {
            for i in 0..n_rows {
                row("p1", axis_at(start, i, spacing)?, i)?;
            }
        }
        Axis::Poisson { start, mean_gap } => {
            let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
            let mut t = start;
            for i in 0..n_rows {
                row("p1", t, i)?;
                t = t
                    .checked_add(rng.gap(mean_gap))
                    .ok_or("the Poisson axis overflows u64")?;
            }
        }
        Axis::Mixed { start, slow, fast } => {
            let (mut slow_idx, mut fast_idx) = (0, 0);
            for _ in 0..n_rows {
                let slow_t = axis_at(start, slow_idx, slow)?;
                let fast_t = axis_at(start, fast_idx, fast)?;
                if slow_t <= fast_t {
                    row("slow", slow_t, slow_idx)?;
                    slow_idx += 1;
                } else {
                    row("fast", fast_t, fast_idx)?;
                    fast_idx += 1;
                }
            }
        }
    }
    out.flush().map_err(io)?;
    Ok(())
}
