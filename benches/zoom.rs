//! Zoom at any depth (#50): a survey's cost over zoom windows of every width, not only the whole
//! range. A bench binary that prints the distribution (criterion's means hide the tail this is
//! about).
//!
//! The store: two tracks (`run` `a` and `b`) of `STRATA_ZOOM_ROWS` rows each (default 5 × 10^7,
//! 10^8 in all), a µs axis at 1 kHz, a random walk to 3 decimals (`walk`), published with
//! `publish_columns` 10^6 rows a track a barrier, then compacted, as an ingest leaves it. Built
//! once under `target/bench-zoom-<rows>` and kept for the next run.
//!
//! The windows: `STRATA_ZOOM_WINDOWS` (default 600) of them, widths log-uniform from 10^3 rows
//! to a whole track, anywhere on it, on either track (`windows`); one `View::survey` each at
//! budget 6,400, timed alone, from a store opened for the run. It prints, per decade of window
//! width, the windows, p50, p99 and max, and the levels that answered; then over all of them
//! p50, p99 and max against #50's targets (p99 <= 5 ms, max <= 15 ms). Each window and its
//! time go to `target/bench-zoom-<rows>/windows.json`, where `python/bench/zoom.py` times
//! tsdownsample's M4 on the same rows (it generates them as `walk` does) and compares.
//!
//! `cargo bench --bench zoom`; `STRATA_ZOOM_ROWS=1000000 cargo bench --bench zoom` for a smoke
//! run.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    missing_docs,
    reason = "bench code"
)]

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use strata::{Config, FieldKind, Store, Stream, StreamDecl, Values};

/// 1 kHz on a µs axis.
const STEP_US: u64 = 1_000;
/// Rows a track a barrier.
const CHUNK: u64 = 1_000_000;
const BUDGET: u64 = 6_400;
const TRACKS: [&str; 2] = ["a", "b"];
/// The narrowest window, in rows.
const NARROWEST: u64 = 1_000;

fn decl() -> StreamDecl {
    Stream::new("probe")
        .field("run", FieldKind::Str)
        .field("t", FieldKind::U64)
        .field("v", FieldKind::F64)
        .track(["run"])
        .axis("t")
        .build()
        .expect("a valid declaration")
}

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// SplitMix64 of `x`: the bench's one source of randomness, stateless, so that
/// `python/bench/zoom.py` makes the same numbers with numpy's wrapping u64 arithmetic.
fn splitmix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A uniform number in [0, 1) from `x`.
fn uniform(x: u64) -> f64 {
    (splitmix(x) >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// Rows `from..from + n` of track `track`'s walk, continuing from `level` (the walk's running
/// sum, left where the last row put it): each step uniform in [-0.5, 0.5), each value the sum
/// rounded to 3 decimals (half up).
fn walk(track: u64, from: u64, n: u64, level: &mut f64) -> Vec<f64> {
    (from..from + n)
        .map(|i| {
            *level += uniform((track << 56) ^ i) - 0.5;
            (*level * 1000.0 + 0.5).floor() / 1000.0
        })
        .collect()
}

/// The store, built once for `rows` rows a track.
fn store_dir(rows: u64) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("target/bench-zoom-{rows}"));
    let store = dir.join("store");
    if dir.join("BUILT").is_file() {
        return store;
    }
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("the bench's folder");
    let started = Instant::now();
    let mut writer = Store::create(&store, Config::default(), &[decl()]).expect("created");
    let mut levels = [0.0f64; 2];
    let mut position = 0;
    for from in (0..rows).step_by(CHUNK as usize) {
        let n = CHUNK.min(rows - from);
        let t: Vec<u64> = (from..from + n).map(|i| i * STEP_US).collect();
        for (k, track) in TRACKS.into_iter().enumerate() {
            let v = walk(k as u64, from, n, &mut levels[k]);
            position += 1;
            writer
                .publish_columns(
                    "probe",
                    position,
                    &[track],
                    &[Values::U64(&t), Values::F64(&v)],
                )
                .expect("published");
        }
        writer.seal().expect("sealed");
    }
    let sealed = started.elapsed();
    writer.compact().expect("compacted");
    writer.checkpoint().expect("checkpointed");
    drop(writer);
    std::fs::write(dir.join("BUILT"), b"").expect("marked");
    eprintln!(
        "built {} rows: sealed in {sealed:.1?}, compacted in {:.1?}",
        rows * 2,
        started.elapsed().saturating_sub(sealed)
    );
    store
}

/// A zoom window: a track and its first and last row.
#[derive(Clone, Copy)]
struct Window {
    track: usize,
    first: u64,
    last: u64,
}

impl Window {
    fn rows(self) -> u64 {
        self.last - self.first + 1
    }
}

/// `n` windows, widths log-uniform from `NARROWEST` rows to a whole track of `rows`.
fn windows(n: u64, rows: u64) -> Vec<Window> {
    let widest = rows as f64;
    let narrowest = (NARROWEST as f64).min(widest);
    (0..n)
        .map(|k| {
            let width = (narrowest * (widest / narrowest).powf(uniform(3 * k + (1 << 40))))
                .round()
                .clamp(1.0, widest) as u64;
            let first = ((rows - width + 1) as f64 * uniform(3 * k + 1 + (1 << 40))) as u64;
            Window {
                track: (splitmix(3 * k + 2 + (1 << 40)) % 2) as usize,
                first: first.min(rows - width),
                last: first.min(rows - width) + width - 1,
            }
        })
        .collect()
}

/// The `q`th quantile of `sorted` (nearest rank).
fn quantile(sorted: &[Duration], q: f64) -> Duration {
    let rank = ((sorted.len() as f64 * q).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn main() {
    // `cargo bench` passes `--bench`; a filter given to it that is not this bench's skips it.
    if std::env::args()
        .skip(1)
        .any(|a| !a.starts_with('-') && !"zoom".contains(a.as_str()))
    {
        return;
    }
    let rows = env_or("STRATA_ZOOM_ROWS", 50_000_000).max(NARROWEST);
    let n = env_or("STRATA_ZOOM_WINDOWS", 600);
    let dir = store_dir(rows);
    let windows = windows(n, rows);
    let reader = Store::open_read_only(&dir, Config::default(), &[]).expect("opened");
    let mut timed = Vec::with_capacity(windows.len());
    for &window in &windows {
        let range = window.first * STEP_US..=window.last * STEP_US;
        let began = Instant::now();
        let survey = reader
            .survey("probe", &[TRACKS[window.track]], range, BUDGET)
            .expect("a survey");
        let took = began.elapsed();
        let buckets = survey.fields.first().map_or(0, |f| f.buckets.len());
        assert!(buckets > 0, "a window of rows answers buckets");
        timed.push((window, took, survey.level));
    }

    println!(
        "zoom: {} windows over 2 tracks of {rows} rows, budget {BUDGET}, one survey each",
        timed.len()
    );
    println!(
        "| window (rows) | windows | strata p50 | strata p99 | strata max | levels answering |"
    );
    println!("|---|---:|---:|---:|---:|---|");
    let mut decade = NARROWEST;
    while decade <= rows {
        let upper = decade.saturating_mul(10);
        let mut times: Vec<Duration> = Vec::new();
        let mut levels = (u8::MAX, 0u8);
        for (window, took, level) in &timed {
            if (decade..upper).contains(&window.rows()) {
                times.push(*took);
                levels = (levels.0.min(*level), levels.1.max(*level));
            }
        }
        if !times.is_empty() {
            times.sort();
            println!(
                "| 10^{}–{} | {} | {:.2} ms | {:.2} ms | {:.2} ms | {}–{} |",
                decade.ilog10(),
                if upper > rows {
                    rows.to_string()
                } else {
                    format!("10^{}", upper.ilog10())
                },
                times.len(),
                ms(quantile(&times, 0.5)),
                ms(quantile(&times, 0.99)),
                ms(*times.last().expect("not empty")),
                levels.0,
                levels.1,
            );
        }
        decade = upper;
    }
    let mut all: Vec<Duration> = timed.iter().map(|&(_, took, _)| took).collect();
    all.sort();
    println!(
        "zoom: over all {}: p50 {:.2} ms, p99 {:.2} ms (target <= 5 ms), max {:.2} ms (target <= \
         15 ms)",
        all.len(),
        ms(quantile(&all, 0.5)),
        ms(quantile(&all, 0.99)),
        ms(*all.last().expect("windows")),
    );

    let mut json = String::from("[\n");
    for (k, (window, took, level)) in timed.iter().enumerate() {
        let comma = if k + 1 == timed.len() { "" } else { "," };
        writeln!(
            json,
            "  {{\"track\": {}, \"first\": {}, \"last\": {}, \"strata_s\": {:e}, \"level\": \
             {level}}}{comma}",
            window.track,
            window.first,
            window.last,
            took.as_secs_f64()
        )
        .expect("a string");
    }
    json.push_str("]\n");
    let out = dir
        .parent()
        .expect("the bench's folder")
        .join("windows.json");
    std::fs::write(&out, json).expect("written");
    println!("zoom: each window and its time in {}", out.display());
}
