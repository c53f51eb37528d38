//! `strata --store DIR survey STREAM [--track A,B] [--from A] [--to B] --budget N
//! [--fill finest|spend] [--format table|json] [--svg FILE]`: a point-budgeted display read from
//! the level ladder.
//!
//! The engine answers from the finest level whose cells over the span fit the budget (a bucket
//! is four placed points, per measured field), or with `--fill spend` from groups of a finer
//! level's cells that spend most of the budget; a budget below `4 x measured fields` is its error
//! (exit 1). `--from`/`--to` bound the axis, not positions. In JSON a bucket's `sum` or `sum_sq`
//! that overflowed f64 is the string `"inf"`, `"-inf"` or `"nan"`, never `null` (see `json.rs`).

use std::fmt::Write as _;
use std::fs;
use std::process::ExitCode;

use strata::{Bucket, Config, FieldBuckets, StreamDecl, Survey};

use super::args::{ReadFormat, SurveyArgs};
use super::svg::{self, Picture};
use super::{
    Failure, axis_bounds, compact, count, declared, grouped, json, open_to_read, print, selection,
    tell_watermark, units,
};

pub fn run(source: &super::Source, args: &SurveyArgs) -> Result<ExitCode, Failure> {
    let config = Config::default().survey_fill(args.fill.fill());
    let store = open_to_read(source, config)?;
    let decl = declared(&store, &args.range.stream)?;
    let axis = axis_bounds(&args.range, decl, "survey")?;
    let selection = selection(args.range.track.as_ref());
    let survey = store.survey(&args.range.stream, &selection, axis, args.budget)?;
    if rows_beneath(&survey) == 0 {
        let selected = super::range::Selected {
            axis,
            positions: (std::ops::Bound::Unbounded, std::ops::Bound::Unbounded),
        };
        super::range::note_missed(&store, decl, &selection, &selected);
    }
    let scope = Scope {
        decl,
        selection: &selection,
        budget: args.budget,
        units: &[],
    };
    // The picture first: if it cannot be written, nothing was printed as if all went well.
    if let Some(path) = &args.svg {
        fs::write(path, svg::render(&picture(&survey, &scope)))
            .map_err(|e| Failure::new(format!("cannot write {}: {e}", path.display())))?;
    }
    match args.format {
        ReadFormat::Table => print(&table(&survey, &scope)),
        ReadFormat::Json => {
            let text = json::survey(&survey, &scope)
                .map_err(|e| Failure::new(format!("cannot write the survey as JSON: {e}")))?;
            print(&(text + "\n"))
        }
    }?;
    tell_watermark(&store, &args.range.stream);
    Ok(ExitCode::SUCCESS)
}

/// What a survey was asked for: the stream, the track prefix and the budget, and the units of
/// its fields where the caller knows them.
#[derive(Debug)]
pub struct Scope<'a> {
    pub decl: &'a StreamDecl,
    pub selection: &'a [&'a str],
    pub budget: u64,
    /// `(field, unit)` pairs, the axis among them: `("t", "µs")`. A stream does not record its
    /// units, so the `survey` command knows none and the demo knows its own.
    pub units: &'a [(&'a str, &'a str)],
}

impl Scope<'_> {
    /// `run_1,probe_3` (as `--track` names it), or `every track` for an unnarrowed survey.
    pub fn tracks(&self) -> String {
        if self.selection.is_empty() {
            "every track".to_owned()
        } else {
            strata::index::selection_word(self.selection)
        }
    }

    /// The unit of `field`, if the caller gave one.
    pub fn unit(&self, field: &str) -> Option<&str> {
        self.units
            .iter()
            .find(|(name, _)| *name == field)
            .map(|&(_, unit)| unit)
    }

    /// The axis's unit: the caller's, else a time axis's declared one (`µs`).
    pub fn axis_unit(&self) -> Option<&str> {
        self.unit(&self.axis_name())
            .or_else(|| super::time::unit_of(self.decl).map(super::time::symbol))
    }

    /// An axis value as the tables print it: RFC 3339 for a time axis, else grouped digits.
    pub fn axis_text(&self, value: u64) -> String {
        match super::time::unit_of(self.decl) {
            Some(unit) => super::time::format(value, unit),
            None => grouped(value),
        }
    }

    /// `t 0 .. 99.999 s`: the axis range the survey covers, or `t: no rows in this range`.
    pub fn range(&self, survey: &Survey) -> String {
        match survey.span {
            Some([lo, hi]) if super::time::unit_of(self.decl).is_some() => format!(
                "{} {} .. {}",
                self.axis_name(),
                self.axis_text(lo),
                self.axis_text(hi)
            ),
            Some([lo, hi]) => format!(
                "{} {}",
                self.axis_name(),
                units::range(lo, hi, self.axis_unit())
            ),
            None => format!("{}: no rows in this range", self.axis_name()),
        }
    }

    /// `196 buckets a field, each summarising 512 ms of t`.
    pub fn buckets(&self, survey: &Survey) -> String {
        let n = buckets_per_field(survey) as u64;
        let each = self.bucket_width(survey).map_or_else(
            || format!("each summarising all of {}", self.axis_name()),
            |w| {
                format!(
                    "each summarising {} of {}",
                    units::amount(w, self.axis_unit()),
                    self.axis_name()
                )
            },
        );
        format!("{}, {each}", count(n, "bucket a field", "buckets a field"))
    }

    /// `t 0 .. 99.999 s: 4 buckets a field, each summarising 32.768 s of t; 32 of the 48 points
    /// asked for, from 100,000 rows`.
    fn answered(&self, survey: &Survey) -> String {
        let n_points: u64 = survey
            .fields
            .iter()
            .map(|f| f.buckets.len() as u64 * 4)
            .sum();
        let n_rows = rows_beneath(survey);
        if survey.span.is_none() {
            return format!(
                "{}; 0 of the {} points asked for",
                self.range(survey),
                grouped(self.budget)
            );
        }
        format!(
            "{}: {}; {} of the {} points asked for, from {}",
            self.range(survey),
            self.buckets(survey),
            grouped(n_points),
            grouped(self.budget),
            count(n_rows, "row", "rows"),
        )
    }

    /// An answer bucket's width in axis units: `base * fanout^level * group`; `None` once it
    /// covers every u64 (the top levels hold one cell).
    pub fn bucket_width(&self, survey: &Survey) -> Option<u128> {
        let ladder = self.decl.ladder;
        let width = u128::from(ladder.fanout)
            .checked_pow(u32::from(survey.level))?
            .checked_mul(u128::from(ladder.base))?
            .checked_mul(survey.group)?;
        (width <= u128::from(u64::MAX)).then_some(width)
    }

    pub fn axis_name(&self) -> String {
        self.decl
            .axis
            .and_then(|idx| self.decl.fields.get(usize::from(idx)))
            .map_or_else(|| "axis".to_owned(), |f| f.name.clone())
    }
}

/// The rows the buckets summarise: every measured field of a row is counted in one bucket, so
/// this is any field's total (the largest, should they ever differ).
pub fn rows_beneath(survey: &Survey) -> u64 {
    survey
        .fields
        .iter()
        .map(|f| f.buckets.iter().map(|b| b.count).sum::<u64>())
        .max()
        .unwrap_or(0)
}

/// The most buckets any field answered with.
pub fn buckets_per_field(survey: &Survey) -> usize {
    survey
        .fields
        .iter()
        .map(|f| f.buckets.len())
        .max()
        .unwrap_or(0)
}

/// The survey as a picture: its stream and selection as the title, what it covers below.
pub fn picture<'a>(survey: &'a Survey, scope: &'a Scope<'_>) -> Picture<'a> {
    Picture {
        title: format!("{} · {}", scope.decl.id, scope.tracks()),
        subtitle: format!("M4 survey of {}", scope.answered(survey)),
        axis_name: scope.axis_name(),
        axis_unit: scope.axis_unit(),
        units: scope.units,
        time: super::time::unit_of(scope.decl),
        bucket_width: scope.bucket_width(survey),
        survey,
    }
}

/// A header line (the stream, the selection, the axis range, the buckets and what they cost and
/// summarise), then one compact table per measured field.
pub fn table(survey: &Survey, scope: &Scope<'_>) -> String {
    let mut out = format!(
        "{} {}, {}\n",
        scope.decl.id,
        scope.tracks(),
        scope.answered(survey)
    );
    let axis = match (super::time::unit_of(scope.decl), scope.axis_unit()) {
        (Some(_), _) => format!("{} (UTC)", scope.axis_name()),
        (None, Some(unit)) => format!("{} ({unit})", scope.axis_name()),
        (None, None) => scope.axis_name(),
    };
    for field in &survey.fields {
        out.push_str(&field_table(field, &axis, scope));
    }
    out
}

/// `FIELD: N buckets`, then a row per bucket: where it lies on the axis, its first and last
/// values, its min and max with where they occurred, its count and mean.
fn field_table(field: &FieldBuckets, axis_header: &str, scope: &Scope<'_>) -> String {
    let axis_name = scope.axis_name();
    let n = field.buckets.len();
    let mut out = format!(
        "{}: {n} bucket{}\n",
        field.field,
        if n == 1 { "" } else { "s" }
    );
    if field.buckets.is_empty() {
        out.push_str("  (no rows in this range)\n");
        return out;
    }
    let (span_header, min_header, max_header) = (
        format!("{axis_header} first..last"),
        format!("min @ {axis_name}"),
        format!("max @ {axis_name}"),
    );
    let header = [
        span_header.as_str(),
        "first",
        "last",
        min_header.as_str(),
        max_header.as_str(),
        "count",
        "mean",
    ];
    let min = placed(&field.buckets, |b| b.min, scope);
    let max = placed(&field.buckets, |b| b.max, scope);
    let rows: Vec<[String; 7]> = field
        .buckets
        .iter()
        .zip(min)
        .zip(max)
        .map(|((b, min), max)| {
            [
                format!(
                    "{}..{}",
                    scope.axis_text(b.first.axis),
                    scope.axis_text(b.last.axis)
                ),
                compact(b.first.value),
                compact(b.last.value),
                min,
                max,
                grouped(b.count),
                super::compact_f64(b.mean()),
            ]
        })
        .collect();
    let mut widths = header.map(|h| h.chars().count());
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut line = |cells: &[&str]| {
        out.push(' ');
        for (idx, (cell, width)) in cells.iter().zip(widths).enumerate() {
            // The axis column reads left to right; numbers line up on the right.
            let _ = if idx == 0 {
                write!(out, " {cell:<width$}")
            } else {
                write!(out, "  {cell:>width$}")
            };
        }
        let trimmed = out.trim_end_matches(' ').len();
        out.truncate(trimmed);
        out.push('\n');
    };
    line(&header);
    for row in &rows {
        line(&row.each_ref().map(String::as_str));
    }
    out
}

/// `value @ axis` for one placed point of every bucket, the values right-aligned and the axes
/// left-aligned so that the `@` signs line up.
fn placed(
    buckets: &[Bucket],
    pick: impl Fn(&Bucket) -> strata::Point,
    scope: &Scope<'_>,
) -> Vec<String> {
    let cells: Vec<(String, String)> = buckets
        .iter()
        .map(|b| {
            let point = pick(b);
            (compact(point.value), scope.axis_text(point.axis))
        })
        .collect();
    let value_width = cells.iter().map(|c| c.0.len()).max().unwrap_or(0);
    let axis_width = cells.iter().map(|c| c.1.len()).max().unwrap_or(0);
    cells
        .into_iter()
        .map(|(value, axis)| format!("{value:>value_width$} @ {axis:<axis_width$}"))
        .collect()
}
