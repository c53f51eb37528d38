//! `strata --store DIR trim STREAM --to POSITION`: retires every row of the stream at or below
//! the position, as one durable record, and prints the raw floors it recorded (docs/retention.md).
//!
//! One line per partition whose floor it raised: `capture run_7,3: position 41, axis 1200`
//! (`axis` only for an axial stream), then the segments whose raw rows it retired and the files
//! it removed. A horizon at or below an earlier one records nothing and prints the floors in
//! force. A horizon above the stream's watermark is refused (exit 1). A `query` or percentile
//! `fold` that then reaches beneath a floor exits 4 with a message carrying the floor.

use std::fmt::Write as _;
use std::path::Path;
use std::process::ExitCode;

use strata::index::{RawFloor, TrackKey};

use super::args::TrimArgs;
use super::{Failure, declared, open_existing, partition_name, print_summary};

pub fn run(dir: &Path, args: &TrimArgs) -> Result<ExitCode, Failure> {
    let mut store = open_existing(dir)?;
    declared(&store, &args.stream)?;
    let trimmed = store.trim_to(&args.stream, args.to)?;
    let mut out = String::new();
    if trimmed.recorded.is_empty() {
        let _ = writeln!(
            out,
            "nothing to trim at or below {}: the floors in force are at or above it",
            args.to
        );
        for (track, floor) in &trimmed.floors {
            let _ = writeln!(out, "{}", floor_line(&args.stream, track, *floor));
        }
    } else {
        let _ = writeln!(
            out,
            "trimmed {} to {}: recorded {} raw floor{}",
            args.stream,
            args.to,
            trimmed.recorded.len(),
            if trimmed.recorded.len() == 1 { "" } else { "s" }
        );
        for (track, floor) in &trimmed.recorded {
            let _ = writeln!(out, "{}", floor_line(&args.stream, track, *floor));
        }
        let _ = writeln!(
            out,
            "raw rows retired in {} segment file{}; {} file{} removed (levels are kept, so a \
             file is removed only when it held no level)",
            trimmed.retired.len(),
            if trimmed.retired.len() == 1 { "" } else { "s" },
            trimmed.removed.len(),
            if trimmed.removed.len() == 1 { "" } else { "s" }
        );
    }
    print_summary(&out)?;
    Ok(ExitCode::SUCCESS)
}

/// `capture run_7,3: position 41, axis 1200`, or `capture (root): position 41`.
fn floor_line(stream: &str, track: &TrackKey, floor: RawFloor) -> String {
    let name = partition_name(stream, &track.labels().collect::<Vec<_>>());
    match floor.axis {
        Some(axis) => format!("{name}: position {}, axis {axis}", floor.position),
        None => format!("{name}: position {}", floor.position),
    }
}
