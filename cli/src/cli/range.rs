//! One meaning for a range flag (#48): `--from`/`--to` bound the axis (a time, for a time axis)
//! and `--from-position`/`--to-position` bound positions, in every command. A read that selects
//! rows (`query`, `export`) takes both; a levelled read (`survey`, `fold`, `export --survey`)
//! is over the axis and refuses a position range, naming the axis flags. A bad value is a bad
//! command line (exit 2), naming the flag.
//!
//! Before #48 `query` and `export` read `--from`/`--to` as positions while `survey` and `fold`
//! read them as axis values, so a time passed to `query` answered nothing and exited 0. Now a
//! range that selects no row where the selection holds rows says so on stderr, with where the
//! rows lie.

use std::ops::Bound;

use strata::index::TrackKey;
use strata::{StreamDecl, View};

use super::args::RangeArgs;
use super::time::{self, Round};
use super::{Failure, partition_name};

/// A range's ends, each inclusive or unbounded.
pub type Ends = (Bound<u64>, Bound<u64>);

/// The rows a read's flags select.
#[derive(Clone, Copy, Debug)]
pub struct Selected {
    pub axis: Ends,
    pub positions: Ends,
}

const WHOLE: Ends = (Bound::Unbounded, Bound::Unbounded);

impl Selected {
    /// Both ranges of `args`, read against `decl` (a time is read in its axis's unit).
    pub fn of(args: &RangeArgs, decl: &StreamDecl) -> Result<Selected, Failure> {
        let axis = axis_ends(args, decl)?;
        let bound = |end: Option<u64>| end.map_or(Bound::Unbounded, Bound::Included);
        Ok(Selected {
            axis,
            positions: (bound(args.from_position), bound(args.to_position)),
        })
    }

    /// Whether any flag narrowed the read.
    pub fn is_narrowed(&self) -> bool {
        self.axis != WHOLE || self.positions != WHOLE
    }

    /// `axis t 2026-12-01T00:00:00Z .. 2026-12-01T00:00:10Z, positions 5 .. 9`: what the flags
    /// asked, for a message.
    pub fn words(&self, decl: &StreamDecl) -> String {
        let mut parts = Vec::new();
        if self.axis != WHOLE {
            parts.push(format!(
                "axis {} {}",
                axis_name(decl),
                ends_words(self.axis, |v| axis_text(v, decl))
            ));
        }
        if self.positions != WHOLE {
            parts.push(format!(
                "positions {}",
                ends_words(self.positions, |v| v.to_string())
            ));
        }
        parts.join(", ")
    }
}

/// The axis range of a levelled read: `--from`/`--to`; a position range is refused (exit 2).
pub fn axis_only(args: &RangeArgs, decl: &StreamDecl, command: &str) -> Result<Ends, Failure> {
    if args.from_position.is_some() || args.to_position.is_some() {
        return Err(Failure(
            format!(
                "`strata {command}` reads the levels, which are over the axis, not positions: \
                 bound it with --from/--to (an axis value{})",
                if time::unit_of(decl).is_some() {
                    ", or an RFC 3339 time"
                } else {
                    ""
                }
            ),
            2,
        ));
    }
    axis_ends(args, decl)
}

fn axis_ends(args: &RangeArgs, decl: &StreamDecl) -> Result<Ends, Failure> {
    let end = |flag: &str, text: Option<&String>, round: Round| match text {
        None => Ok(Bound::Unbounded),
        Some(text) => {
            if decl.axis.is_none() {
                return Err(Failure(
                    format!(
                        "{flag} bounds the axis, and stream {:?} declares none: select its rows \
                         by position with --from-position/--to-position",
                        decl.id
                    ),
                    2,
                ));
            }
            time::parse_axis(text, decl, round)
                .map(Bound::Included)
                .map_err(|reason| Failure(format!("{flag}: {reason}"), 2))
        }
    };
    Ok((
        end("--from", args.from.as_ref(), Round::Up)?,
        end("--to", args.to.as_ref(), Round::Down)?,
    ))
}

/// An axis value as the command line prints it: RFC 3339 for a time axis, else the integer.
pub fn axis_text(value: u64, decl: &StreamDecl) -> String {
    match time::unit_of(decl) {
        Some(unit) => time::format(value, unit),
        None => value.to_string(),
    }
}

fn axis_name(decl: &StreamDecl) -> &str {
    decl.axis
        .and_then(|idx| decl.fields.get(usize::from(idx)))
        .map_or("axis", |f| f.name.as_str())
}

fn ends_words((lo, hi): Ends, text: impl Fn(u64) -> String) -> String {
    let end = |bound: Bound<u64>| match bound {
        Bound::Included(v) | Bound::Excluded(v) => text(v),
        Bound::Unbounded => String::new(),
    };
    format!("{} .. {}", end(lo), end(hi)).trim().to_owned()
}

/// Says on stderr that `selected` matched no row of `stream` under `selection`, and where that
/// selection's rows lie, when it holds any: a range that misses is not an empty stream.
pub fn note_missed(store: &View, decl: &StreamDecl, selection: &[&str], selected: &Selected) {
    if !selected.is_narrowed() {
        return;
    }
    let Ok(prefix) = TrackKey::encode(selection) else {
        return;
    };
    let catalog = store.catalog();
    let mut positions: Option<[u64; 2]> = None;
    for view in catalog.partitions(&decl.id, &prefix) {
        for (_, entry) in view.segments(strata::index::Tier::Raw) {
            let [lo, hi] = entry.positions;
            positions = Some(positions.map_or([lo, hi], |[a, b]| [a.min(lo), b.max(hi)]));
        }
    }
    let axis = catalog.axis_range(&decl.id, &prefix);
    if positions.is_none() && axis.is_none() {
        return;
    }
    let mut held = Vec::new();
    if let Some([lo, hi]) = axis {
        held.push(format!(
            "axis {} {} .. {}",
            axis_name(decl),
            axis_text(lo, decl),
            axis_text(hi, decl)
        ));
    }
    if let Some([lo, hi]) = positions {
        held.push(format!("positions {lo} .. {hi}"));
    }
    let tracks = if selection.is_empty() {
        decl.id.clone()
    } else {
        partition_name(&decl.id, selection)
    };
    eprintln!(
        "strata: note: no row of {tracks} lies in {}; its rows lie in {}",
        selected.words(decl),
        held.join(", ")
    );
}
