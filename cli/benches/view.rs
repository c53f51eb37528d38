//! `strata view`'s survey latency over 10^8 rows (#34), in one run: each request a zoom window
//! (a whole track down to 1/65,536 of it, anywhere on the axis) with a 1,600-pixel panel's
//! budget (6,400 points), asked over loopback of a running `strata view`, against the same
//! surveys asked in process of a reader of the same store (`Store::survey`, no JSON, no HTTP).
//! Besides criterion's means it prints the server-side percentiles (the `Server-Timing` the
//! view sends with each answer) and the round trip's, over `SAMPLES` requests.
//!
//! The store (two tracks of 5 × 10^7 rows, 10^6 a barrier, then `strata compact`, as an
//! ingest leaves it) is built once under `target/bench-view-1e8` and kept for the next run.
//!
//! `cargo bench -p strata-cli --bench view`; figures in docs/performance.md.

use std::hint::black_box;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use criterion::{Criterion, criterion_group, criterion_main};
use strata::{Config, Store, Values, View};

#[allow(
    clippy::unwrap_used,
    clippy::panic,
    reason = "shared with the tests: a failed unwrap there is a failed test"
)]
#[path = "../tests/viewing/mod.rs"]
mod viewing;
use viewing::{probe_stream, view};

const ROWS_PER_TRACK: u64 = 50_000_000;
const STEP: u64 = 10;
const BUDGET: u64 = 6_400;
const SAMPLES: usize = 2_000;

/// The store, built once: two tracks of `ROWS_PER_TRACK` rows, levels stored as the default
/// (adaptive) stores them. Levels stored whole (`LevelStorage::Whole`, every level from cells
/// of one axis unit) are not measured: a build of these rows had written 60 GB when stopped.
fn store_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/bench-view-1e8");
    let done = dir.join("BUILT");
    if done.is_file() {
        return dir.join("store");
    }
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("the bench's folder");
    let mut store =
        Store::create(dir.join("store"), Config::default(), &[probe_stream()]).expect("created");
    let chunk = 1_000_000;
    let mut position = 0;
    let started = Instant::now();
    for start in (0..ROWS_PER_TRACK).step_by(chunk) {
        for (k, probe) in ["p0", "p1"].into_iter().enumerate() {
            let t: Vec<u64> = (start..start + chunk as u64).map(|i| i * STEP).collect();
            let v: Vec<f64> = t
                .iter()
                .map(|&t| {
                    (t as f64 / 400_000.0).sin() + k as f64 + ((t * 7919) % 1000) as f64 / 1e4
                })
                .collect();
            position += 1;
            store
                .publish_columns(
                    "probe",
                    position,
                    &["r1", probe],
                    &[Values::U64(&t), Values::F64(&v)],
                )
                .expect("published");
        }
        store.seal().expect("sealed");
    }
    drop(store);
    let sealed = started.elapsed();
    // As `strata ingest` leaves a store: compacted, the manifest a snapshot.
    let compacted = Command::new(env!("CARGO_BIN_EXE_strata"))
        .arg("--store")
        .arg(dir.join("store"))
        .arg("compact")
        .stdout(Stdio::null())
        .status()
        .expect("strata compact");
    assert!(compacted.success());
    std::fs::write(&done, b"").expect("marked");
    eprintln!(
        "built 10^8 rows: sealed in {sealed:.1?}, compacted in {:.1?}",
        started.elapsed().saturating_sub(sealed)
    );
    dir.join("store")
}

/// Zoom windows: widths from the whole axis to 1/65,536 of it, log-uniform, anywhere.
fn windows(n: usize) -> Vec<(&'static str, u64, u64)> {
    let span = ROWS_PER_TRACK * STEP;
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    (0..n)
        .map(|_| {
            let width = span >> (next() % 17);
            let from = next() % (span - width + 1);
            let track = if next() % 2 == 0 { "r1,p1" } else { "r1" };
            (track, from, from + width)
        })
        .collect()
}

/// One keep-alive connection: a GET, its status, its `Server-Timing` (ms) and its body's length.
struct Connection(BufReader<TcpStream>, String);

impl Connection {
    fn new(addr: &str) -> Connection {
        let stream = TcpStream::connect(addr).expect("connected");
        stream.set_nodelay(true).expect("nodelay");
        Connection(BufReader::new(stream), addr.to_owned())
    }

    fn get(&mut self, target: &str) -> (u16, f64, usize) {
        let head = format!("GET {target} HTTP/1.1\r\nHost: {}\r\n\r\n", self.1);
        self.0.get_mut().write_all(head.as_bytes()).expect("sent");
        let (mut status, mut server, mut length) = (0, f64::NAN, 0);
        let mut line = String::new();
        loop {
            line.clear();
            self.0.read_line(&mut line).expect("a header");
            let l = line.trim_end();
            if l.is_empty() {
                break;
            }
            let lower = l.to_ascii_lowercase();
            if lower.starts_with("http/1.1 ") {
                status = l[9..12].parse().expect("a status");
            } else if let Some(v) = lower.strip_prefix("content-length:") {
                length = v.trim().parse().expect("a length");
            } else if let Some(v) = lower.strip_prefix("server-timing:") {
                server = v
                    .split("dur=")
                    .nth(1)
                    .and_then(|d| d.trim().parse().ok())
                    .expect("a duration");
            }
        }
        let mut body = vec![0; length];
        self.0.read_exact(&mut body).expect("the body");
        (status, server, length)
    }
}

fn target(track: &str, from: u64, to: u64) -> String {
    format!("/api/survey?stream=probe&track={track}&from={from}&to={to}&budget={BUDGET}")
}

/// The `percent`th percentile of `sorted` (nearest rank below).
fn percentile(sorted: &[f64], percent: usize) -> f64 {
    sorted[(sorted.len() - 1) * percent / 100]
}

fn bench(c: &mut Criterion) {
    let windows = windows(SAMPLES);
    let store_dir = store_dir();
    let viewing = view(store_dir.parent().expect("the bench's folder"), "store");
    let reader = Store::open_reader(&store_dir, Config::default()).expect("a reader");
    let mut connection = Connection::new(&viewing.addr);
    percentiles(&windows, &mut connection, &reader);

    let mut group = c.benchmark_group("view_survey_1e8");
    let mut k = 0;
    group.bench_function("http", |b| {
        b.iter(|| {
            let (track, from, to) = windows[k % windows.len()];
            k += 1;
            black_box(connection.get(&target(track, from, to)))
        });
    });
    let mut k = 0;
    group.bench_function("in_process", |b| {
        b.iter(|| {
            let (track, from, to) = windows[k % windows.len()];
            k += 1;
            let labels: Vec<&str> = track.split(',').collect();
            black_box(
                reader
                    .survey("probe", &labels, from..=to, BUDGET)
                    .expect("a survey"),
            )
        });
    });
    group.finish();
}

/// The percentiles, over every window once (after one pass to warm the page cache), and the
/// slowest windows in process.
fn percentiles(windows: &[(&'static str, u64, u64)], connection: &mut Connection, reader: &View) {
    for &(track, from, to) in windows {
        connection.get(&target(track, from, to));
    }
    let (mut server, mut round_trip, mut in_process, mut bytes) = (vec![], vec![], vec![], 0);
    let mut slowest = Vec::new();
    for &(track, from, to) in windows {
        let started = Instant::now();
        let (status, spent, length) = connection.get(&target(track, from, to));
        round_trip.push(started.elapsed().as_secs_f64() * 1e3);
        assert_eq!(status, 200);
        server.push(spent);
        bytes += length;
        let labels: Vec<&str> = track.split(',').collect();
        let started = Instant::now();
        let survey = reader
            .survey("probe", &labels, from..=to, BUDGET)
            .expect("a survey");
        let ms = started.elapsed().as_secs_f64() * 1e3;
        in_process.push(ms);
        slowest.push((ms, track, to - from, survey.level));
    }
    slowest.sort_by(|a, b| b.0.total_cmp(&a.0));
    for (ms, track, width, level) in slowest.iter().take(3) {
        eprintln!("slow in process: {ms:.2} ms, track {track}, width {width}, level {level}");
    }
    for (what, times) in [
        ("server-side (Server-Timing)", &mut server),
        ("round trip over loopback", &mut round_trip),
        ("in process (Store::survey)", &mut in_process),
    ] {
        times.sort_by(f64::total_cmp);
        eprintln!(
            "view survey over 10^8 rows, {what}: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
            percentile(times, 50),
            percentile(times, 99),
            times[times.len() - 1]
        );
    }
    eprintln!(
        "p99 server-side ÷ p99 in process = {:.2}; {} bytes of JSON an answer on average",
        percentile(&server, 99) / percentile(&in_process, 99),
        bytes / windows.len()
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
