//! `strata --store DIR compact`: compaction run to completion, one bounded step at a time, and
//! what it did: live segment files before and after (store-wide and in the partition with the
//! most), bytes written, steps and time taken.
//!
//! Each step is one manifest record, durable before the next begins, so a step is also where a
//! signal stops it: SIGINT or SIGTERM (Ctrl-C) lets the step under way finish, then stderr says
//! what was done and the exit code is 3; running `strata compact` again carries on. A second
//! signal exits at once (130, 143): the step under way is then recorded whole or not at all, and
//! an output it never recorded is quarantined by the next open.
//!
//! The loop is `Store::compact`'s own (steps until there is nothing to do), written out here so
//! that a signal can be heard between steps.
//!
//! It lifts `Config::compact_step_bytes_max`: the cap bounds what a served store's requests and
//! ticks wait behind, and nothing waits here, while a backlog (the many small files `strata
//! ingest` leaves) can only be merged by steps that read everything newer than its oldest file
//! (a run is always a partition's newest segments). Under the cap, all but the newest cap's
//! worth of a backlog would be left as it is (docs/compaction.md).
//!
//! It applies the retention `DIR/retention.json` sets (`strata retention`): the sweep runs first,
//! and the report ends with what it retired and the floors it recorded.

use std::fmt::Write as _;
use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use strata::index::{Catalog, TrackKey};
use strata::{CompactStep, Config, Store, Swept};

use super::interrupt::{EXIT_INTERRUPTED, Interrupt, Says};
use super::retention;
use super::retire::SweptView;
use super::{Failure, duration, grouped, partition_name, print_summary, progress};

/// What `strata compact` says about a signal.
const COMPACT: Says = Says {
    stopping: "stopping after the compaction step under way (each step is one durable record)",
    lost: "the step under way is recorded whole or not at all, and the next open quarantines an \
           output it never recorded",
};

/// Live segment files: store-wide, and in the partition with the most.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct LiveFiles {
    pub(super) n_files: usize,
    n_bytes: u64,
    /// The partition with the most live files (the first such, by stream id then track), and
    /// how many; `None` in a store with no live partition.
    worst: Option<(String, usize)>,
}

impl LiveFiles {
    pub(super) fn of(catalog: &Catalog) -> LiveFiles {
        let (n_files, n_bytes) = catalog
            .live_files()
            .fold((0, 0), |(n, bytes): (usize, u64), f| {
                (n + 1, bytes.saturating_add(f.len))
            });
        let mut worst: Option<(String, usize)> = None;
        for decl in catalog.streams() {
            for view in catalog.partitions(&decl.id, &TrackKey::ROOT) {
                let n = view.live_segments().len();
                if worst.as_ref().is_none_or(|(_, most)| n > *most) {
                    worst = Some((
                        partition_name(&decl.id, &view.track().labels().collect::<Vec<_>>()),
                        n,
                    ));
                }
            }
        }
        LiveFiles {
            n_files,
            n_bytes,
            worst,
        }
    }

    pub(super) fn most_in_one(&self) -> usize {
        self.worst.as_ref().map_or(0, |(_, n)| *n)
    }
}

/// What the steps of this run did.
#[derive(Debug, Default)]
pub(super) struct Done {
    pub(super) n_steps: u64,
    pub(super) bytes_written: u64,
    n_rows_rewritten: u64,
}

impl Done {
    pub(super) fn add(&mut self, step: &CompactStep) {
        self.n_steps += 1;
        self.bytes_written = self.bytes_written.saturating_add(step.bytes_written);
        self.n_rows_rewritten = self.n_rows_rewritten.saturating_add(step.n_rows);
    }
}

pub fn run(dir: &Path) -> Result<ExitCode, Failure> {
    // Taken before the store is opened, so a signal during a long open still gets its answer.
    let interrupt = Interrupt::watch(
        COMPACT,
        "nothing compacted in this run: `strata compact` again starts over".to_owned(),
    )?;
    let retention = retention::load(dir)?;
    let retention_set = !retention.is_empty();
    let uncapped = Config::default()
        .compact_step_bytes_max(u64::MAX)
        .retention(retention);
    let mut store = retention::open_to_compact(dir, uncapped)?;
    let before = LiveFiles::of(store.catalog());
    let bar = progress::spinner();
    let start = Instant::now();
    // Retention first (as `Store::compact` sweeps first), on its own so its results can be
    // shown: what it retires is neither merged nor rewritten, and the steps then find no sweep
    // due until a barrier lands.
    let swept = store
        .sweep()
        .map_err(|error| Failure::new(format!("the retention sweep failed: {error}")))?;
    let mut done = Done::default();
    loop {
        if let Some(signal) = interrupt.requested() {
            bar.finish_and_clear();
            let now = LiveFiles::of(store.catalog());
            interrupt.report_stop(&format!(
                "stopped by {signal}; {}",
                so_far(&done, &before, &now)
            ));
            return Ok(ExitCode::from(EXIT_INTERRUPTED));
        }
        let Some(step) = compact_step(&mut store, &done, &before)? else {
            break;
        };
        done.add(&step);
        interrupt.durable(so_far(&done, &before, &LiveFiles::of(store.catalog())));
        if !bar.is_hidden() {
            bar.set_message(format!(
                "{} steps, {} bytes written",
                grouped(done.n_steps),
                grouped(done.bytes_written)
            ));
        }
    }
    // The boot after this reads the live state, not the records of every step just taken.
    store.checkpoint().map_err(|error| {
        Failure::new(format!(
            "rewriting the manifest after compaction failed: {error}; {}",
            so_far(&done, &before, &LiveFiles::of(store.catalog()))
        ))
    })?;
    let elapsed = start.elapsed();
    bar.finish_and_clear();
    let after = LiveFiles::of(store.catalog());
    let mut out = report(&done, &before, &after, elapsed);
    out.push_str(&retention_report(retention_set, &swept));
    print_summary(&out)?;
    Ok(ExitCode::SUCCESS)
}

/// What the retention sweep retired: a line per stream with the floors it recorded per
/// partition; one line saying so when it retired nothing, none when no retention is set.
fn retention_report(retention_set: bool, swept: &[Swept]) -> String {
    let mut out = String::new();
    if !retention_set {
        return out;
    }
    if swept.is_empty() {
        out.push_str("retention: nothing past its lifetime\n");
        return out;
    }
    for stream in swept {
        let view = SweptView::of(stream);
        let _ = writeln!(out, "retention: {} swept: {}", stream.stream, view.totals());
        for line in view.floor_lines() {
            let _ = writeln!(out, "{line}");
        }
    }
    out
}

/// One step; a failure says what the steps before it made durable.
fn compact_step(
    store: &mut Store,
    done: &Done,
    before: &LiveFiles,
) -> Result<Option<CompactStep>, Failure> {
    store.compact_step().map_err(|error| {
        let now = LiveFiles::of(store.catalog());
        Failure::new(format!(
            "compaction step {} failed: {error}; {}",
            done.n_steps + 1,
            so_far(done, before, &now)
        ))
    })
}

/// What is durable after the steps of this run, in one clause.
fn so_far(done: &Done, before: &LiveFiles, now: &LiveFiles) -> String {
    format!(
        "{} compaction steps durable in this run ({} bytes written); live segment files {} -> {}, \
         most in one partition {} -> {}; `strata compact` again carries on",
        grouped(done.n_steps),
        grouped(done.bytes_written),
        grouped(before.n_files as u64),
        grouped(now.n_files as u64),
        grouped(before.most_in_one() as u64),
        grouped(now.most_in_one() as u64),
    )
}

/// The summary on stdout, a figure per line:
///
/// ```text
/// live segment files: 10,000 before (24,537,600 bytes), 64 after (19,114,112 bytes)
/// most in one partition: 10,000 (capture run_7) before, 16 (capture run_7) after
/// steps: 625; rows rewritten: 1,234,567; bytes written: 98,765,432; took 2.31 s
/// ```
fn report(done: &Done, before: &LiveFiles, after: &LiveFiles, elapsed: Duration) -> String {
    let worst = |files: &LiveFiles| match &files.worst {
        Some((name, n)) => format!("{} ({name})", grouped(*n as u64)),
        None => "0 (no live partition)".to_owned(),
    };
    let mut out = String::new();
    // Writing into a String cannot fail.
    let _ = writeln!(
        out,
        "live segment files: {} before ({} bytes), {} after ({} bytes)",
        grouped(before.n_files as u64),
        grouped(before.n_bytes),
        grouped(after.n_files as u64),
        grouped(after.n_bytes),
    );
    let _ = writeln!(
        out,
        "most in one partition: {} before, {} after",
        worst(before),
        worst(after)
    );
    let _ = writeln!(
        out,
        "steps: {}; rows rewritten: {}; bytes written: {}; took {}",
        grouped(done.n_steps),
        grouped(done.n_rows_rewritten),
        grouped(done.bytes_written),
        duration(elapsed),
    );
    out
}
