//! `strata --store DIR fold STREAM [--track A,B] [--from A] [--to B] --agg NAME
//! [--format table|json]`: one statistic per measured field over an axis range.
//!
//! `min max mean sum count` are level folds (from stored cells, covering the whole level-0 cells
//! the range touches); `p0`..`p100` are nearest-rank percentiles over the raw rows of the exact
//! range. An unknown name is refused by the argument parser (exit 2) before the store is opened.
//!
//! Where the range holds no rows, `count` is 0 and every other statistic is absent (`-` in the
//! table, `null` in JSON). A sum that overflowed f64, and a mean taken from it, is printed as
//! `inf`/`-inf` (`nan` where overflows of both signs met): in the table with a note, in JSON as
//! that string, never as `null` (see `json.rs`). A stream with no measured field is refused.

use std::fmt::Write as _;
use std::process::ExitCode;

use strata::{Config, FieldStat, Num};

use super::args::{FoldArgs, ReadFormat};
use super::range::{Selected, note_missed};
use super::{
    Failure, axis_bounds, declared, exact, json, open_to_read, print, selection, tell_watermark,
};

pub fn run(source: &super::Source, args: &FoldArgs) -> Result<ExitCode, Failure> {
    let store = open_to_read(source, Config::default())?;
    let decl = declared(&store, &args.range.stream)?;
    let axis = axis_bounds(&args.range, decl, "fold")?;
    let selection = selection(args.range.track.as_ref());
    let stats = store.fold(&args.range.stream, &selection, axis, args.agg)?;
    if stats.iter().all(|stat| stat.value.is_none()) {
        let selected = Selected {
            axis,
            positions: (std::ops::Bound::Unbounded, std::ops::Bound::Unbounded),
        };
        note_missed(&store, decl, &selection, &selected);
    }
    let text = match args.format {
        ReadFormat::Table => lines(&stats),
        ReadFormat::Json => {
            json::fold(&stats)
                .map_err(|e| Failure::new(format!("cannot write the fold as JSON: {e}")))?
                + "\n"
        }
    };
    print(&text)?;
    tell_watermark(&store, &args.range.stream);
    Ok(ExitCode::SUCCESS)
}

/// `field: value`, a line per measured field in declaration order; `-` where the range holds no
/// rows. Values are exact (floats in their shortest round-trip form); an overflowed one says so.
fn lines(stats: &[FieldStat]) -> String {
    let mut out = String::new();
    for stat in stats {
        let value = match stat.value {
            None => "-".to_owned(),
            Some(Num::F64(v)) if !v.is_finite() => {
                format!("{} (overflowed f64)", json::non_finite_word(v))
            }
            Some(value) => exact(value),
        };
        let _ = writeln!(out, "{}: {value}", stat.field);
    }
    out
}
