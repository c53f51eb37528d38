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
use std::path::Path;
use std::process::ExitCode;

use strata::{Bucket, Config, FieldBuckets, StreamDecl, Survey};

use super::args::{ReadFormat, SurveyArgs};
use super::svg::{self, Picture};
use super::{
    Failure, axis_bounds, compact, declared, json, open_existing_with, print, selection,
    selection_matches,
};

pub fn run(dir: &Path, args: &SurveyArgs) -> Result<ExitCode, Failure> {
    let axis = axis_bounds(&args.range);
    let selection = selection(args.range.track.as_deref());
    let config = Config {
        survey_fill: args.fill.fill(),
        ..Config::default()
    };
    let store = open_existing_with(dir, config)?;
    let decl = declared(&store, &args.range.stream)?;
    let survey = store.survey(&args.range.stream, &selection, axis, args.budget)?;
    selection_matches(&store, &args.range.stream, &selection)?;
    let scope = Scope {
        decl,
        selection: &selection,
        budget: args.budget,
    };
    // The picture first: if it cannot be written, nothing was printed as if all went well.
    if let Some(path) = &args.svg {
        fs::write(path, svg::render(&picture(&survey, &scope)))
            .map_err(|e| Failure::new(format!("cannot write {}: {e}", path.display())))?;
    }
    match args.format {
        ReadFormat::Table => print(&table(&survey, &scope)),
        ReadFormat::Json => {
            let text = json::survey(&survey)
                .map_err(|e| Failure::new(format!("cannot write the survey as JSON: {e}")))?;
            print(&(text + "\n"))
        }
    }?;
    Ok(ExitCode::SUCCESS)
}

/// What a survey was asked for: the stream, the track prefix and the budget.
#[derive(Debug)]
pub struct Scope<'a> {
    pub decl: &'a StreamDecl,
    pub selection: &'a [&'a str],
    pub budget: u64,
}

impl Scope<'_> {
    /// `run_1/probe_3`, or `every track` for an unnarrowed survey.
    pub fn tracks(&self) -> String {
        if self.selection.is_empty() {
            "every track".to_owned()
        } else {
            self.selection.join("/")
        }
    }

    /// `level 2 (cells 1024000 wide), group 1, span 0..=99999000`.
    fn answered(&self, survey: &Survey) -> String {
        let width = self.cell_width(survey).map_or_else(
            || "one cell holds the whole axis".to_owned(),
            |w| format!("cells {w} wide"),
        );
        let span = survey.span.map_or_else(
            || "none recorded".to_owned(),
            |[lo, hi]| format!("{lo}..={hi}"),
        );
        format!(
            "level {} ({width}), group {}, span {span}",
            survey.level, survey.group
        )
    }

    /// An answer bucket's width in axis units: `base * fanout^level * group`; `None` once it
    /// covers every u64 (the top levels hold one cell).
    fn cell_width(&self, survey: &Survey) -> Option<u128> {
        let ladder = self.decl.ladder;
        let width = u128::from(ladder.fanout)
            .checked_pow(u32::from(survey.level))?
            .checked_mul(u128::from(ladder.base))?
            .checked_mul(survey.group)?;
        (width <= u128::from(u64::MAX)).then_some(width)
    }

    fn axis_name(&self) -> String {
        self.decl
            .axis
            .and_then(|idx| self.decl.fields.get(usize::from(idx)))
            .map_or_else(|| "axis".to_owned(), |f| f.name.clone())
    }
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

/// The survey as a picture: its stream and selection as the title, how it was answered below.
pub fn picture<'a>(survey: &'a Survey, scope: &Scope<'_>) -> Picture<'a> {
    Picture {
        title: format!("{} · {}", scope.decl.id, scope.tracks()),
        subtitle: format!(
            "M4 survey within {} points: {}; {} buckets a field",
            scope.budget,
            scope.answered(survey),
            buckets_per_field(survey)
        ),
        axis_name: scope.axis_name(),
        survey,
    }
}

/// A header line (the stream, the selection, the budget, the level, group and span), then one
/// compact table per measured field.
pub fn table(survey: &Survey, scope: &Scope<'_>) -> String {
    let mut out = format!(
        "{} {} within {} points: {}\n",
        scope.decl.id,
        scope.tracks(),
        scope.budget,
        scope.answered(survey)
    );
    for field in &survey.fields {
        out.push_str(&field_table(field));
    }
    out
}

/// `FIELD: N buckets`, then a row per bucket: where it lies on the axis, its first and last
/// values, its min and max with where they occurred, its count and mean.
fn field_table(field: &FieldBuckets) -> String {
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
    let header = [
        "axis first..last",
        "first",
        "last",
        "min @ axis",
        "max @ axis",
        "count",
        "mean",
    ];
    let min = placed(&field.buckets, |b| b.min);
    let max = placed(&field.buckets, |b| b.max);
    let rows: Vec<[String; 7]> = field
        .buckets
        .iter()
        .zip(min)
        .zip(max)
        .map(|((b, min), max)| {
            [
                format!("{}..{}", b.first.axis, b.last.axis),
                compact(b.first.value),
                compact(b.last.value),
                min,
                max,
                b.count.to_string(),
                super::compact_f64(b.mean()),
            ]
        })
        .collect();
    let mut widths = header.map(str::len);
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
fn placed(buckets: &[Bucket], pick: impl Fn(&Bucket) -> strata::Point) -> Vec<String> {
    let cells: Vec<(String, String)> = buckets
        .iter()
        .map(|b| {
            let point = pick(b);
            (compact(point.value), point.axis.to_string())
        })
        .collect();
    let value_width = cells.iter().map(|c| c.0.len()).max().unwrap_or(0);
    let axis_width = cells.iter().map(|c| c.1.len()).max().unwrap_or(0);
    cells
        .into_iter()
        .map(|(value, axis)| format!("{value:>value_width$} @ {axis:<axis_width$}"))
        .collect()
}
