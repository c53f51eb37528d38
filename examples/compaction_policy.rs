//! Measures the compaction policy under continuing barriers: many small barriers into one
//! partition, each followed by the compaction steps `Served` would take after it
//! (`ServeConfig::compact_steps_per_tick`), then `Store::compact()` once the store is quiet.
//! Prints live files in the partition (the peak while barriers continue, and after the quiet
//! compaction), write amplification (bytes compaction wrote over bytes the barriers sealed),
//! and the largest step (inputs, bytes read, bytes written, the time of the step that read the
//! most, and the longest time of any step): the most a served request or tick waits behind
//! compaction. Last, the store is checkpointed (`Store::checkpoint`, what `compact()` ends with),
//! closed and opened again: the manifest bytes a reopen reads and how long it takes.
//!
//! `TMPDIR=/dev/shm cargo run --release --example compaction_policy` (10^4 and 10^5 barriers of
//! 10 rows, in a temporary folder: on tmpfs a sync costs nothing, so the figures are bytes, files
//! and the CPU a step takes; on a disk each barrier and step adds its syncs).
//! `cargo run --release --example compaction_policy -- BARRIERS ROWS_PER_BARRIER [INPUTS_MIN
//! [STEP_BYTES_MAX]]` for one shape (`STEP_BYTES_MAX`: `Config::compact_step_bytes_max`, in
//! bytes; the default otherwise).
//! (The in-memory `SimFs` keeps every image a crash test may ask for, too much for 10^5
//! barriers.)

use std::path::Path;
use std::time::{Duration, Instant};

use strata::{Config, FieldKind, Row, Store, Stream, Value};

/// Steps taken after each barrier, as `Served` does by default.
const STEPS_PER_BARRIER: usize = 4;

struct Figures {
    n_barriers: u64,
    inputs_min: usize,
    n_steps: u64,
    bytes_sealed: u64,
    bytes_written: u64,
    files_peak: usize,
    files_at_end: usize,
    files_quiet: usize,
    step_inputs_max: usize,
    step_read_max: u64,
    step_read_max_time: Duration,
    step_bytes_max: u64,
    step_time_max: Duration,
    /// The manifest's bytes once the store is quiet and checkpointed: what a reopen reads.
    manifest_bytes: u64,
    /// Time to open the store again (boot: the manifest replayed, folders listed).
    reopen: Duration,
}

fn measure(
    n_barriers: u64,
    rows_per_barrier: u64,
    inputs_min: usize,
    step_bytes_cap: u64,
) -> Result<Figures, Box<dyn std::error::Error>> {
    let decl = Stream::new("s")
        .field("t", FieldKind::U64)
        .field("v", FieldKind::F64)
        .axis("t")
        .build()?;
    let dir = tempfile::tempdir()?;
    let seg = dir.path().join("store").join("seg");
    let config = Config::default()
        .compact_inputs_min(inputs_min)
        .compact_step_bytes_max(step_bytes_cap);
    let mut store = Store::open_or_create(dir.path().join("store"), config, &[decl])?;
    let mut figures = Figures {
        n_barriers,
        inputs_min,
        n_steps: 0,
        bytes_sealed: 0,
        bytes_written: 0,
        files_peak: 0,
        files_at_end: 0,
        files_quiet: 0,
        step_inputs_max: 0,
        step_read_max: 0,
        step_read_max_time: Duration::ZERO,
        step_bytes_max: 0,
        step_time_max: Duration::ZERO,
        manifest_bytes: 0,
        reopen: Duration::ZERO,
    };
    let mut t = 0;
    for barrier in 0..n_barriers {
        let rows: Vec<Row> = (0..rows_per_barrier)
            .map(|_| {
                t += 1;
                vec![Value::U64(t), Value::F64((t as f64 * 0.01).sin())]
            })
            .collect();
        store.publish("s", barrier, &rows)?;
        store.seal()?;
        for _ in 0..STEPS_PER_BARRIER {
            let read_before = store.metrics().compaction_bytes_read;
            let start = Instant::now();
            let Some(step) = store.compact_step()? else {
                break;
            };
            figures.step_time_max = figures.step_time_max.max(start.elapsed());
            let read = store.metrics().compaction_bytes_read - read_before;
            figures.note_read(read, start.elapsed());
            figures.step_inputs_max = figures.step_inputs_max.max(step.inputs.len());
            figures.step_bytes_max = figures.step_bytes_max.max(step.bytes_written);
        }
        figures.files_peak = figures.files_peak.max(n_files(&seg)?);
    }
    figures.files_at_end = n_files(&seg)?;
    loop {
        let read_before = store.metrics().compaction_bytes_read;
        let start = Instant::now();
        let Some(step) = store.compact_step()? else {
            break;
        };
        figures.step_time_max = figures.step_time_max.max(start.elapsed());
        figures.step_inputs_max = figures.step_inputs_max.max(step.inputs.len());
        let read = store.metrics().compaction_bytes_read - read_before;
        figures.note_read(read, start.elapsed());
        figures.step_bytes_max = figures.step_bytes_max.max(step.bytes_written);
    }
    figures.files_quiet = n_files(&seg)?;
    let metrics = store.metrics();
    figures.n_steps = metrics.compaction_steps;
    figures.bytes_sealed = metrics.bytes_sealed;
    figures.bytes_written = metrics.compaction_bytes_written;
    // What `compact()` ends with: the manifest rewritten as the live snapshot if it pays.
    store.checkpoint()?;
    drop(store);
    figures.manifest_bytes = std::fs::read_dir(dir.path().join("store"))?
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with("manifest-"))
        .map(|e| e.metadata().map_or(0, |m| m.len()))
        .sum();
    let start = Instant::now();
    let store = Store::open(dir.path().join("store"), Config::default(), &[])?;
    figures.reopen = start.elapsed();
    drop(store);
    Ok(figures)
}

impl Figures {
    /// Keeps the biggest step's bytes read and its time (the slowest step may be another: a
    /// step's time includes a manifest rewrite it triggers).
    fn note_read(&mut self, read: u64, time: Duration) {
        if read > self.step_read_max {
            self.step_read_max = read;
            self.step_read_max_time = time;
        }
    }
}

/// Segment files in `seg/`: with one partition, its live files.
fn n_files(seg: &Path) -> std::io::Result<usize> {
    Ok(std::fs::read_dir(seg)?.count())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .map(|a| a.parse())
        .collect::<Result<_, _>>()?;
    let default_cap = Config::default().compact_step_bytes_max;
    let (shapes, rows_per_barrier, widths, cap) = match args[..] {
        [n_barriers, rows, width, cap] => {
            (vec![n_barriers], rows, vec![usize::try_from(width)?], cap)
        }
        [n_barriers, rows, width] => (
            vec![n_barriers],
            rows,
            vec![usize::try_from(width)?],
            default_cap,
        ),
        [n_barriers, rows] => (vec![n_barriers], rows, vec![2, 4, 8], default_cap),
        [] => (vec![10_000, 100_000], 10, vec![2, 4, 8], default_cap),
        _ => {
            return Err(
                "usage: compaction_policy [BARRIERS ROWS_PER_BARRIER [INPUTS_MIN \
                        [STEP_BYTES_MAX]]]"
                    .into(),
            );
        }
    };
    println!(
        "one partition, {rows_per_barrier} rows a barrier, {STEPS_PER_BARRIER} steps after each \
         barrier, compact_files_max 16, compact_inputs_max 16, compact_step_bytes_max {cap}"
    );
    println!(
        "{:>8} {:>10} | {:>7} {:>12} {:>12} {:>6} | {:>10} {:>11} {:>11} | {:>10} {:>11} {:>11} \
         {:>9} {:>9} | {:>10} {:>9}",
        "barriers",
        "inputs_min",
        "steps",
        "sealed B",
        "compacted B",
        "WA",
        "files peak",
        "files at end",
        "files quiet",
        "step inputs",
        "step read B",
        "step B max",
        "its ms",
        "step ms",
        "manifest B",
        "reopen ms"
    );
    for n_barriers in shapes {
        for &inputs_min in &widths {
            let f = measure(n_barriers, rows_per_barrier, inputs_min, cap)?;
            println!(
                "{:>8} {:>10} | {:>7} {:>12} {:>12} {:>6.2} | {:>10} {:>11} {:>11} | {:>10} {:>11} \
                 {:>11} {:>9.2} {:>9.2} | {:>10} {:>9.3}",
                f.n_barriers,
                f.inputs_min,
                f.n_steps,
                f.bytes_sealed,
                f.bytes_written,
                f.bytes_written as f64 / f.bytes_sealed as f64,
                f.files_peak,
                f.files_at_end,
                f.files_quiet,
                f.step_inputs_max,
                f.step_read_max,
                f.step_bytes_max,
                f.step_read_max_time.as_secs_f64() * 1e3,
                f.step_time_max.as_secs_f64() * 1e3,
                f.manifest_bytes,
                f.reopen.as_secs_f64() * 1e3,
            );
        }
    }
    Ok(())
}
