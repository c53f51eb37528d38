//! `strata --store DIR trim STREAM (--to AXIS|TIME | --to-position P)`: retires every row of
//! the stream at or below the position, as one durable record, and prints the raw floors it
//! recorded (docs/retention.md). `--to` names the horizon on the axis (a time, for a time
//! axis; #48): a trim retires whole positions, so the position is the last one before the first
//! row, in publish order, whose axis value lies above it (the watermark if none does), and every
//! row the trim retires lies at or below it. Before #48 `--to` was the position.
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

use strata::{EngineError, Store, StreamDecl};

use super::args::TrimArgs;
use super::range::axis_text;
use super::time::{Round, parse_axis};
use super::{Failure, declared, open_existing, partition_name, print_summary};

pub fn run(dir: &Path, args: &TrimArgs) -> Result<ExitCode, Failure> {
    let mut store = open_existing(dir)?;
    let decl = declared(&store, &args.stream)?.clone();
    let (horizon, asked) = match (args.to_position, &args.to) {
        (Some(position), _) => (Some(position), format!("position {position}")),
        (None, Some(text)) => {
            let axis = axis_horizon(text, &decl)?;
            let asked = format!("axis {}", axis_text(axis, &decl));
            (position_horizon(&store, &decl, axis)?, asked)
        }
        (None, None) => unreachable!("clap requires --to or --to-position"),
    };
    let Some(horizon) = horizon else {
        print_summary(&format!(
            "nothing to trim at or below {asked}: the stream's first row lies above it\n"
        ))?;
        return Ok(ExitCode::SUCCESS);
    };
    let trimmed = store.trim_to(&args.stream, horizon)?;
    let mut out = String::new();
    if args.to_position.is_none() {
        let _ = writeln!(out, "{asked} is position {horizon}'s horizon");
    }
    if trimmed.recorded.is_empty() {
        let _ = writeln!(
            out,
            "nothing to trim at or below {horizon}: the floors in force are at or above it"
        );
        for (track, floor) in &trimmed.floors {
            let _ = writeln!(out, "{}", floor_line(&decl, track, *floor));
        }
    } else {
        let _ = writeln!(
            out,
            "trimmed {} to {}: recorded {} raw floor{}",
            args.stream,
            horizon,
            trimmed.recorded.len(),
            if trimmed.recorded.len() == 1 { "" } else { "s" }
        );
        for (track, floor) in &trimmed.recorded {
            let _ = writeln!(out, "{}", floor_line(&decl, track, *floor));
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

/// `--to`'s axis value (a time, for a time axis, rounded down to the unit); a bad one is a bad
/// command line (exit 2).
fn axis_horizon(text: &str, decl: &StreamDecl) -> Result<u64, Failure> {
    if decl.axis.is_none() {
        return Err(Failure(
            format!(
                "--to names an axis value, and stream {:?} declares no axis: give the horizon \
                 as a position with --to-position P",
                decl.id
            ),
            2,
        ));
    }
    parse_axis(text, decl, Round::Down).map_err(|reason| Failure(format!("--to: {reason}"), 2))
}

/// The highest position every row at or below which lies at or below `axis`: one before the
/// first row (in publish order) above it, the watermark if none is; `None` if the first row
/// readable is above it. The read starts past the axis value, so beneath a floor's it is
/// refused by the engine: then nothing more is retired than is already.
fn position_horizon(store: &Store, decl: &StreamDecl, axis: u64) -> Result<Option<u64>, Failure> {
    let Some(above) = axis.checked_add(1) else {
        return Ok(store.watermark(&decl.id, &[])?);
    };
    let first_above = match store.query_iter_within(&decl.id, &[], .., above..) {
        Ok(mut rows) => rows.next().transpose()?.map(|row| row.position),
        Err(EngineError::Floor { .. }) => return Ok(Some(0)),
        Err(error) => return Err(error.into()),
    };
    match first_above {
        Some(0) => Ok(None),
        Some(position) => Ok(Some(position - 1)),
        None => Ok(store.watermark(&decl.id, &[])?),
    }
}

/// `capture run_7,3: position 41, axis 1200`, or `capture (root): position 41`; a time axis's
/// value as RFC 3339.
fn floor_line(decl: &StreamDecl, track: &TrackKey, floor: RawFloor) -> String {
    let name = partition_name(&decl.id, &track.labels().collect::<Vec<_>>());
    match floor.axis {
        Some(axis) => format!(
            "{name}: position {}, axis {}",
            floor.position,
            axis_text(axis, decl)
        ),
        None => format!("{name}: position {}", floor.position),
    }
}
