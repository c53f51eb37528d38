//! A survey as an SVG picture: one panel per measured field, stacked, each with the M4 envelope
//! (a min–max band, and a line through every bucket's four points in axis order) over axis and
//! value ticks, with the axis and each field named and their units where known.
//!
//! Hand-written SVG text, no dependency. Every point sits at its own axis coordinate
//! (`first.axis`, `last.axis`, `min.axis`, `max.axis`): that is what M4 keeps them for, and it is
//! why a few hundred buckets draw the same outline as the millions of rows beneath them. A lone
//! spike is some bucket's min or max, so the line reaches it: a full-height stroke, not a blur.
//!
//! Where the answer skips a bucket (no rows fell in it), the band and the line break there and a
//! pale stripe marks the stretch with no rows: a dropout is drawn as a gap, never bridged.
//!
//! The axis ticks are round steps that run from at or before the first data point to at or past
//! the last, so the ruler covers the whole of the data.
//!
//! Value ticks are multiples of a round step held as exact decimals, so their labels never go
//! through f64 formatting: one format per axis (grouped plain digits, or scientific with one
//! exponent), at most `VALUE_LABEL_CHARS_MAX` long, counting from a round offset named above the
//! plot where whole values would be longer (large counters, u64 values near 2^64). The step is
//! at least two ulps of the values, so no two ticks share a place or a label.
//!
//! Coordinates are computed so that no input yields a NaN or an infinity: axes are subtracted in
//! integers before they become f64 (u64 axes near 2^64 stay exact relative to the panel), values
//! are scaled by halves (so `-f64::MAX ..= f64::MAX` does not overflow), and a span of zero width
//! (one bucket, flat values) is widened or centred.

use std::fmt::Write as _;

use strata::{Bucket, FieldBuckets, Point, Survey};

use super::units;

/// The picture's width, in px.
const WIDTH_PX: f64 = 900.0;
/// One field's panel, title and tick labels included, in px.
const PANEL_HEIGHT_PX: f64 = 220.0;
/// The title, the subtitle and the legend above the first panel, in px.
const HEADER_HEIGHT_PX: f64 = 72.0;
/// Below the last panel, in px.
const FOOTER_HEIGHT_PX: f64 = 8.0;
/// The plot area inside a panel: room for the value axis's name and labels on the left, the
/// field's name above, axis labels below.
const PLOT_LEFT_PX: f64 = 84.0;
const PLOT_RIGHT_PX: f64 = WIDTH_PX - 24.0;
const PLOT_TOP_PX: f64 = 28.0;
const PLOT_BOTTOM_PX: f64 = PANEL_HEIGHT_PX - 38.0;
/// About this many px between axis ticks, and between value ticks.
const X_TICK_SPACING_PX: f64 = 110.0;
const Y_TICK_SPACING_PX: f64 = 36.0;
/// Roughly the width of a digit in an 11px label, and the least gap between two labels, in px.
const LABEL_CHAR_PX: f64 = 7.0;
const LABEL_GAP_PX: f64 = 12.0;
/// Axis labels longer than this count from an offset instead, if that makes them shorter.
const LABEL_CHARS_MAX: usize = 8;
/// Value labels are at most this long: longer ones count from an offset instead.
const VALUE_LABEL_CHARS_MAX: usize = 10;
/// An offset in a caption written out in full up to this long, else in scientific notation.
const OFFSET_CHARS_MAX: usize = 32;
/// The rotated field name left of the value labels reaches this far right, plus a gap, in px.
const FIELD_NAME_PX: f64 = 24.0;
/// Value labels end this far left of the plot, in px.
const VALUE_LABEL_INSET_PX: f64 = 7.0;
/// The widest the left margin grows to fit the value labels, in px.
const PLOT_LEFT_MAX_PX: f64 = 120.0;
/// With at most this many buckets a field, every point is marked with a dot, so a sparse survey
/// (one bucket, a few) still shows where its points are.
const DOTS_BUCKETS_MAX: usize = 64;
/// Ticks one scale may draw, whatever its span: a bound, not a target.
const TICKS_MAX: usize = 24;
/// A stretch with no rows at least this wide is labelled `no rows` (the label's width), in px.
const GAP_LABEL_MIN_PX: f64 = 44.0;
/// A narrower stretch at least this wide is labelled up the stripe (the label's height), in px.
const GAP_LABEL_UPRIGHT_MIN_PX: f64 = 14.0;

const BAND_FILL: &str = "#9ecae1";
const BAND_STROKE: &str = "#6baed6";
const LINE_STROKE: &str = "#08519c";
const GAP_FILL: &str = "#fde0dd";
const GAP_TEXT: &str = "#c51b8a";
const GRID_STROKE: &str = "#e6e6e6";
const FRAME_STROKE: &str = "#888888";
const TEXT_MUTED: &str = "#555555";

/// What to draw: a survey, the words around it, and the axis and units to label it with.
#[derive(Debug)]
pub struct Picture<'a> {
    /// The first line above the panels (stream and selection).
    pub title: String,
    /// The second line (what the survey covers and how finely).
    pub subtitle: String,
    /// The axis field's name, written under each panel's axis labels.
    pub axis_name: String,
    /// The axis's unit, where the caller knows it (`µs`); a time unit is shown in the largest
    /// unit that keeps the tick labels whole (seconds for the demo).
    pub axis_unit: Option<&'a str>,
    /// `(field, unit)` for the measured fields whose unit the caller knows (`("temp", "°C")`).
    pub units: &'a [(&'a str, &'a str)],
    /// The declared unit of a time axis (#48): its ticks are then dates and times in UTC
    /// (`time_ticks.rs`) rather than numbers.
    pub time: Option<strata::TimeUnit>,
    /// Each bucket's width in axis units; with it, a skipped bucket is drawn as a gap. `None`
    /// where one bucket covers the whole axis.
    pub bucket_width: Option<u128>,
    pub survey: &'a Survey,
}

/// The picture as SVG text: starts with `<svg`, ends with `</svg>` and a newline.
pub fn render(picture: &Picture<'_>) -> String {
    let n_panels = picture.survey.fields.len().max(1);
    let height_px = HEADER_HEIGHT_PX + n_panels as f64 * PANEL_HEIGHT_PX + FOOTER_HEIGHT_PX;
    let mut out = String::with_capacity(4096 + 96 * bucket_count(picture.survey));
    let _ = write!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH_PX}\" height=\"{height_px}\" \
         viewBox=\"0 0 {WIDTH_PX} {height_px}\" font-family=\"DejaVu Sans, Helvetica, Arial, \
         sans-serif\" font-size=\"11\">\n<title>{}</title>\n\
         <rect width=\"{WIDTH_PX}\" height=\"{height_px}\" fill=\"#ffffff\"/>\n",
        escape(&picture.title)
    );
    let _ = writeln!(
        out,
        "<text x=\"16\" y=\"24\" font-size=\"16\" font-weight=\"bold\">{}</text>\n\
         <text x=\"16\" y=\"43\" fill=\"{TEXT_MUTED}\">{}</text>",
        escape(&picture.title),
        escape(&picture.subtitle)
    );
    let any_gap = picture
        .survey
        .fields
        .iter()
        .any(|f| runs(&f.buckets, picture.bucket_width).len() > 1);
    legend(&mut out, any_gap);
    if picture.survey.fields.is_empty() {
        let _ = writeln!(
            out,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"{TEXT_MUTED}\">no measured field</text>",
            WIDTH_PX / 2.0,
            HEADER_HEIGHT_PX + PANEL_HEIGHT_PX / 2.0
        );
    }
    let left_px = plot_left(picture.survey);
    for (panel_idx, field) in picture.survey.fields.iter().enumerate() {
        let top_px = HEADER_HEIGHT_PX + panel_idx as f64 * PANEL_HEIGHT_PX;
        panel(&mut out, field, picture, top_px, left_px);
    }
    out.push_str("</svg>\n");
    out
}

/// The plot's left edge, the same in every panel (so their axes line up): `PLOT_LEFT_PX`, or
/// wider where some panel's value labels need it to clear the rotated field name, up to
/// `PLOT_LEFT_MAX_PX`.
fn plot_left(survey: &Survey) -> f64 {
    let widest = survey
        .fields
        .iter()
        .filter(|f| !f.buckets.is_empty())
        .flat_map(|f| ValueScale::new(value_extent(&f.buckets), PLOT_BOTTOM_PX - PLOT_TOP_PX).ticks)
        .map(|(_, label)| label_px(&label))
        .fold(0.0, f64::max);
    (FIELD_NAME_PX + widest + VALUE_LABEL_INSET_PX).clamp(PLOT_LEFT_PX, PLOT_LEFT_MAX_PX)
}

fn bucket_count(survey: &Survey) -> usize {
    survey.fields.iter().map(|f| f.buckets.len()).sum()
}

/// A swatch of the band, a stroke of the line and, if any panel has one, a gap; under the
/// subtitle.
fn legend(out: &mut String, any_gap: bool) {
    let (x, y) = (16.0, 58.0);
    let _ = write!(
        out,
        "<g fill=\"{TEXT_MUTED}\">\
         <rect x=\"{x}\" y=\"{}\" width=\"22\" height=\"10\" fill=\"{BAND_FILL}\" \
         stroke=\"{BAND_STROKE}\" stroke-width=\"0.5\"/>\
         <text x=\"{}\" y=\"{y}\">lowest to highest value in each bucket</text>\
         <line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{LINE_STROKE}\" stroke-width=\"1.5\"/>\
         <text x=\"{}\" y=\"{y}\">each bucket's first, lowest, highest and last row, in axis order</text>",
        y - 9.0,
        x + 28.0,
        x + 246.0,
        y - 4.0,
        x + 268.0,
        y - 4.0,
        x + 274.0,
    );
    if any_gap {
        let _ = write!(
            out,
            "<rect x=\"{}\" y=\"{}\" width=\"22\" height=\"10\" fill=\"{GAP_FILL}\"/>\
             <text x=\"{}\" y=\"{y}\">no rows</text>",
            x + 640.0,
            y - 9.0,
            x + 668.0,
        );
    }
    out.push_str("</g>\n");
}

/// The unit of `field`, if the picture was given one.
fn unit_of<'a>(picture: &Picture<'a>, field: &str) -> Option<&'a str> {
    picture
        .units
        .iter()
        .find(|(name, _)| *name == field)
        .map(|&(_, unit)| unit)
}

/// The buckets split where the answer skips a bucket (no rows fell in it): each run is drawn
/// joined, and the runs apart. Bucket `k` of width `w` covers axis `k*w ..= (k+1)*w - 1` (the
/// ladder's cells are anchored at 0), so two neighbours in the answer are adjacent exactly when
/// their `k` differ by one. Without a width (one bucket holds the whole axis) nothing is skipped.
fn runs(buckets: &[Bucket], bucket_width: Option<u128>) -> Vec<&[Bucket]> {
    let Some(width) = bucket_width.filter(|&w| w > 0) else {
        return if buckets.is_empty() {
            Vec::new()
        } else {
            vec![buckets]
        };
    };
    let index = |b: &Bucket| u128::from(b.first.axis) / width;
    let mut runs = Vec::new();
    let mut start = 0;
    for idx in 1..buckets.len() {
        if index(&buckets[idx]) > index(&buckets[idx - 1]) + 1 {
            runs.push(&buckets[start..idx]);
            start = idx;
        }
    }
    if start < buckets.len() {
        runs.push(&buckets[start..]);
    }
    runs
}

/// A bucket's four points in axis order: the path M4 keeps them for. The first and last bound
/// the bucket, so only the min and max can trade places.
fn in_axis_order(bucket: &Bucket) -> [Point; 4] {
    let (a, b) = if bucket.min.axis <= bucket.max.axis {
        (bucket.min, bucket.max)
    } else {
        (bucket.max, bucket.min)
    };
    [bucket.first, a, b, bucket.last]
}

/// One field: its name, grid and ticks, the gaps, the band, the line, and a frame around the plot.
fn panel(out: &mut String, field: &FieldBuckets, picture: &Picture<'_>, top_px: f64, left_px: f64) {
    let plot = Plot {
        left: left_px,
        right: PLOT_RIGHT_PX,
        top: top_px + PLOT_TOP_PX,
        bottom: top_px + PLOT_BOTTOM_PX,
    };
    let n_buckets = field.buckets.len();
    let value_name = match unit_of(picture, &field.field) {
        Some(unit) => format!("{} ({unit})", field.field),
        None => field.field.clone(),
    };
    let _ = writeln!(
        out,
        "<text x=\"{}\" y=\"{:.1}\"><tspan font-size=\"13\" font-weight=\"bold\">{}</tspan>\
         <tspan fill=\"{TEXT_MUTED}\" dx=\"8\">{n_buckets} bucket{}</tspan></text>\n\
         <text transform=\"translate(16,{:.1}) rotate(-90)\" text-anchor=\"middle\" \
         fill=\"{TEXT_MUTED}\">{}</text>",
        plot.left,
        top_px + 20.0,
        escape(&field.field),
        if n_buckets == 1 { "" } else { "s" },
        f64::midpoint(plot.top, plot.bottom),
        escape(&value_name),
    );
    if field.buckets.is_empty() {
        axis_caption(out, &plot, picture, None, None);
        let _ = writeln!(
            out,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"{TEXT_MUTED}\">no rows in this range</text>",
            f64::midpoint(plot.left, plot.right),
            f64::midpoint(plot.top, plot.bottom)
        );
        frame(out, &plot);
        return;
    }
    let extent = axis_extent(&field.buckets, picture.survey.span);
    let (x, x_ticks) = match picture.time {
        Some(unit) => time_axis_ticks(extent, plot.width(), unit),
        None => axis_ticks(extent, plot.width(), picture.axis_unit),
    };
    let y = ValueScale::new(value_extent(&field.buckets), plot.height());
    let runs = runs(&field.buckets, picture.bucket_width);
    gaps(out, &plot, &x, &runs);
    grid(out, &plot, &x, &x_ticks, &y);
    axis_caption(
        out,
        &plot,
        picture,
        x_ticks.offset,
        x_ticks.scale_name.as_deref(),
    );
    if let Some(offset) = &y.offset {
        // The value labels count from an offset: say so above the plot's right end, as the
        // axis's caption does below it.
        let _ = writeln!(
            out,
            "<text class=\"value-offset\" x=\"{}\" y=\"{:.1}\" text-anchor=\"end\" \
             fill=\"{TEXT_MUTED}\">{} {} ↑</text>",
            plot.right,
            top_px + 20.0,
            escape(&field.field),
            escape(offset)
        );
    }
    // Per run: along each bucket's max from its first row to its last, and back along its min,
    // so each bucket is a step as wide as its rows and as tall as their range: a lone spike is a
    // bar the height of the spike, not a wedge shared with its neighbours.
    let mut band = String::new();
    let mut line = String::new();
    for run in &runs {
        let at = |axis, value| Point { axis, value };
        let outline: Vec<Point> = run
            .iter()
            .flat_map(|b| [at(b.first.axis, b.max.value), at(b.last.axis, b.max.value)])
            .chain(
                run.iter()
                    .rev()
                    .flat_map(|b| [at(b.last.axis, b.min.value), at(b.first.axis, b.min.value)]),
            )
            .collect();
        subpath(&mut band, &outline, &plot, &x, &y);
        band.push_str(" Z");
        let points: Vec<Point> = run.iter().flat_map(in_axis_order).collect();
        subpath(&mut line, &points, &plot, &x, &y);
    }
    let _ = writeln!(
        out,
        "<path class=\"band\" d=\"{band}\" fill=\"{BAND_FILL}\" fill-opacity=\"0.75\" \
         stroke=\"{BAND_STROKE}\" stroke-width=\"0.6\" stroke-linejoin=\"round\"/>\n\
         <path class=\"line\" d=\"{line}\" fill=\"none\" stroke=\"{LINE_STROKE}\" \
         stroke-width=\"1\" stroke-linejoin=\"round\"/>",
    );
    if n_buckets <= DOTS_BUCKETS_MAX {
        let _ = write!(out, "<g fill=\"{LINE_STROKE}\">");
        for point in field.buckets.iter().flat_map(in_axis_order) {
            let (px, py) = plot.place(&point, &x, &y);
            let _ = write!(out, "<circle cx=\"{px:.1}\" cy=\"{py:.1}\" r=\"2\"/>");
        }
        out.push_str("</g>\n");
    }
    frame(out, &plot);
}

/// A pale stripe over each stretch with no rows between two runs (from the last row before it to
/// the first row after it), labelled where it is wide enough.
fn gaps(out: &mut String, plot: &Plot, x: &AxisScale, runs: &[&[Bucket]]) {
    for pair in runs.windows(2) {
        let (Some(before), Some(after)) = (pair[0].last(), pair[1].first()) else {
            continue;
        };
        let from_px = plot.x(x.fraction(before.last.axis));
        let to_px = plot.x(x.fraction(after.first.axis));
        let _ = write!(
            out,
            "<rect class=\"gap\" x=\"{from_px:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" \
             fill=\"{GAP_FILL}\"/>",
            plot.top,
            to_px - from_px,
            plot.height()
        );
        let mid_px = f64::midpoint(from_px, to_px);
        if to_px - from_px >= GAP_LABEL_MIN_PX {
            let _ = write!(
                out,
                "<text x=\"{mid_px:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"{GAP_TEXT}\">no rows</text>",
                plot.top + 14.0
            );
        } else if to_px - from_px >= GAP_LABEL_UPRIGHT_MIN_PX {
            // Too narrow to read across: the label runs up the stripe.
            let _ = write!(
                out,
                "<text transform=\"translate({:.1},{:.1}) rotate(-90)\" text-anchor=\"middle\" \
                 fill=\"{GAP_TEXT}\">no rows</text>",
                mid_px + 4.0,
                f64::midpoint(plot.top, plot.bottom)
            );
        }
        out.push('\n');
    }
}

/// The axis field's name (and the unit its tick labels are in) under the plot's right end, with
/// the offset the tick labels are relative to, if any (`t − 18446744073709550000 →`).
fn axis_caption(
    out: &mut String,
    plot: &Plot,
    picture: &Picture<'_>,
    offset: Option<u64>,
    scale_name: Option<&str>,
) {
    let unit = scale_name.map_or_else(String::new, |u| format!(" ({u})"));
    let offset = offset.map_or_else(String::new, |o| {
        let unit = picture
            .axis_unit
            .map_or_else(String::new, |u| format!(" {u}"));
        format!(" − {o}{unit}")
    });
    let _ = writeln!(
        out,
        "<text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\" fill=\"{TEXT_MUTED}\">{}{unit}{offset} →</text>",
        plot.right,
        plot.bottom + 30.0,
        escape(&picture.axis_name)
    );
}

/// The plot area of one panel, in px.
struct Plot {
    left: f64,
    right: f64,
    top: f64,
    bottom: f64,
}

impl Plot {
    fn width(&self) -> f64 {
        self.right - self.left
    }

    fn height(&self) -> f64 {
        self.bottom - self.top
    }

    fn x(&self, fraction: f64) -> f64 {
        self.left + fraction * self.width()
    }

    fn y(&self, fraction: f64) -> f64 {
        self.bottom - fraction * self.height()
    }

    fn place(&self, point: &Point, x: &AxisScale, y: &ValueScale) -> (f64, f64) {
        (
            self.x(x.fraction(point.axis)),
            self.y(y.fraction(point.value.as_f64())),
        )
    }
}

/// `M x,y L x,y ...` through `points`, appended to a path's data.
fn subpath(d: &mut String, points: &[Point], plot: &Plot, x: &AxisScale, y: &ValueScale) {
    for (idx, point) in points.iter().enumerate() {
        let (px, py) = plot.place(point, x, y);
        if !d.is_empty() {
            d.push(' ');
        }
        let _ = write!(d, "{}{px:.1},{py:.1}", if idx == 0 { "M" } else { "L" });
    }
}

fn frame(out: &mut String, plot: &Plot) {
    let _ = writeln!(
        out,
        "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"none\" stroke=\"{FRAME_STROKE}\"/>",
        plot.left,
        plot.top,
        plot.width(),
        plot.height()
    );
}

/// Grid lines with their labels: axis values below the plot, field values to its left.
fn grid(out: &mut String, plot: &Plot, x: &AxisScale, x_ticks: &AxisTicks, y: &ValueScale) {
    let _ = write!(out, "<g stroke=\"{GRID_STROKE}\" stroke-width=\"1\">");
    for &(axis, _) in &x_ticks.ticks {
        let px = plot.x(x.fraction_wide(axis));
        let _ = write!(
            out,
            "<line x1=\"{px:.1}\" y1=\"{:.1}\" x2=\"{px:.1}\" y2=\"{:.1}\"/>",
            plot.top, plot.bottom
        );
    }
    for (value, _) in &y.ticks {
        let py = plot.y(y.fraction(*value));
        let _ = write!(
            out,
            "<line x1=\"{:.1}\" y1=\"{py:.1}\" x2=\"{:.1}\" y2=\"{py:.1}\"/>",
            plot.left, plot.right
        );
    }
    out.push_str("</g>\n");
    let _ = write!(out, "<g fill=\"{TEXT_MUTED}\">");
    for (axis, label) in &x_ticks.ticks {
        let px = plot.x(x.fraction_wide(*axis));
        let _ = write!(
            out,
            "<line x1=\"{px:.1}\" y1=\"{:.1}\" x2=\"{px:.1}\" y2=\"{:.1}\" stroke=\"{FRAME_STROKE}\"/>\
             <text x=\"{px:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
            plot.bottom,
            plot.bottom + 4.0,
            plot.bottom + 16.0,
            escape(label)
        );
    }
    for (value, label) in &y.ticks {
        let py = plot.y(y.fraction(*value));
        let _ = write!(
            out,
            "<line x1=\"{:.1}\" y1=\"{py:.1}\" x2=\"{:.1}\" y2=\"{py:.1}\" stroke=\"{FRAME_STROKE}\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            plot.left - 4.0,
            plot.left,
            plot.left - VALUE_LABEL_INSET_PX,
            py + 3.5,
            escape(label)
        );
    }
    out.push_str("</g>\n");
}

/// The axis coordinates to show: every placed point, and the span the survey answered (whole
/// cells can place points just outside it; an asked span can reach beyond the data).
fn axis_extent(buckets: &[Bucket], span: Option<[u64; 2]>) -> [u64; 2] {
    let axes = buckets
        .iter()
        .flat_map(|b| [b.first.axis, b.last.axis, b.min.axis, b.max.axis])
        .chain(span.into_iter().flatten());
    let lo = axes.clone().min().unwrap_or(0);
    let hi = axes.max().unwrap_or(0);
    [lo, hi]
}

/// The smallest and largest value of any bucket, as f64.
fn value_extent(buckets: &[Bucket]) -> [f64; 2] {
    let lo = buckets
        .iter()
        .map(|b| b.min.value.as_f64())
        .fold(f64::INFINITY, f64::min);
    let hi = buckets
        .iter()
        .map(|b| b.max.value.as_f64())
        .fold(f64::NEG_INFINITY, f64::max);
    if lo.is_finite() && hi.is_finite() {
        [lo, hi]
    } else {
        [0.0, 0.0]
    }
}

/// Axis coordinates to fractions of the plot's width, over the data widened to whole ticks (so
/// in u128: the tick past `u64::MAX` can be the last). Differences are taken in integers, so an
/// axis near 2^64 loses nothing before it is scaled; a zero-width span centres.
#[derive(Debug)]
struct AxisScale {
    lo: u128,
    hi: u128,
}

impl AxisScale {
    fn fraction(&self, axis: u64) -> f64 {
        self.fraction_wide(u128::from(axis))
    }

    fn fraction_wide(&self, axis: u128) -> f64 {
        let width = self.hi - self.lo;
        if width == 0 {
            return 0.5;
        }
        let offset = axis.clamp(self.lo, self.hi) - self.lo;
        offset as f64 / width as f64
    }
}

/// Axis ticks and their labels; with an offset, each label is `axis - offset`. `scale_name` is
/// the unit the labels are written in, where the axis's unit is known.
#[derive(Debug)]
struct AxisTicks {
    ticks: Vec<(u128, String)>,
    offset: Option<u64>,
    scale_name: Option<String>,
}

/// A time axis's scale and ticks: dates and times at round calendar steps (`time_ticks.rs`),
/// the caption naming UTC (and the day, while every tick lies in one).
fn time_axis_ticks(
    [lo, hi]: [u64; 2],
    width_px: f64,
    unit: strata::TimeUnit,
) -> (AxisScale, AxisTicks) {
    let (ticks, caption) = super::time_ticks::ticks(
        [lo, hi],
        unit,
        width_px,
        X_TICK_SPACING_PX,
        LABEL_CHAR_PX,
        LABEL_GAP_PX,
    );
    let first = ticks.first().map_or(u128::from(lo), |t| t.0);
    let last = ticks.last().map_or(u128::from(hi), |t| t.0);
    (
        AxisScale {
            lo: first.min(u128::from(lo)),
            hi: last.max(u128::from(hi)),
        },
        AxisTicks {
            ticks,
            offset: None,
            scale_name: Some(caption),
        },
    )
}

/// The scale for the data `[lo, hi]` and its ticks: round steps about `X_TICK_SPACING_PX` apart,
/// the first at or before `lo` and the last at or past `hi`. Labels are whole numbers in the
/// largest unit that divides the step (seconds for a microsecond axis ticked in whole seconds),
/// or with an SI suffix (`20M`) where no unit is known. Where whole values would be long or
/// would not fit between ticks (a narrow window of a huge axis, such as nanosecond timestamps),
/// the labels count from a round offset below the span instead.
fn axis_ticks([lo, hi]: [u64; 2], width_px: f64, unit: Option<&str>) -> (AxisScale, AxisTicks) {
    debug_assert!(lo <= hi);
    let (lo, hi) = (u128::from(lo), u128::from(hi));
    let scale_name = |step: u128| units::scale_dividing(step, unit).name.map(str::to_owned);
    let label = |value: u128, step: u128| {
        if unit.is_some_and(units::is_time) {
            units::number_in(value, units::scale_dividing(step, unit))
        } else {
            axis_label(value, step)
        }
    };
    if hi == lo {
        return (
            AxisScale { lo, hi },
            AxisTicks {
                ticks: vec![(lo, label(lo, 1))],
                offset: None,
                scale_name: scale_name(1),
            },
        );
    }
    let target = (width_px / X_TICK_SPACING_PX).max(2.0);
    let width = hi - lo;
    let step = integer_step(width as f64 / target);
    let first = lo / step * step;
    let last = hi.div_ceil(step) * step;
    let values: Vec<u128> = (0..=TICKS_MAX as u128)
        .map(|k| first + k * step)
        .take_while(|&tick| tick <= last)
        .collect();
    let scale = AxisScale {
        lo: first,
        hi: values.last().copied().unwrap_or(last).max(hi),
    };
    let labelled = |offset: u64| -> Vec<(u128, String)> {
        values
            .iter()
            .map(|&tick| (tick, label(tick - u128::from(offset), step)))
            .collect()
    };
    let ticks = labelled(0);
    let spacing_px = step as f64 / (scale.hi - scale.lo) as f64 * width_px;
    let widest = ticks.iter().map(|(_, l)| l.len()).max().unwrap_or(0);
    let fits = widest as f64 * LABEL_CHAR_PX + LABEL_GAP_PX <= spacing_px;
    let plain = AxisTicks {
        ticks,
        offset: None,
        scale_name: scale_name(step),
    };
    if fits && widest <= LABEL_CHARS_MAX {
        return (scale, plain);
    }
    // The lowest multiple of a power of ten above the width: labels count up from it. It is a
    // multiple of the step too, so it lies at or below the first tick.
    let mut power: u128 = 10;
    while power <= width {
        power *= 10;
    }
    let offset = u64::try_from(lo / power * power).unwrap_or(0);
    let relative = labelled(offset);
    let widest_relative = relative.iter().map(|(_, l)| l.len()).max().unwrap_or(0);
    if offset > 0 && widest_relative < widest {
        (
            scale,
            AxisTicks {
                ticks: relative,
                offset: Some(offset),
                scale_name: plain.scale_name,
            },
        )
    } else {
        (scale, plain)
    }
}

/// A round step of at least 1 near `raw`: 1, 2 or 5 times a power of ten, in u128 (steps up to
/// 10^20 fit, beyond any span of u64 axes).
fn integer_step(raw: f64) -> u128 {
    let step = nice_step(raw.max(1.0));
    // A nice step of at least 1 is a whole number; beyond u128 cannot come from a u64 span.
    if step >= 1e38 {
        u128::MAX
    } else {
        #[expect(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "a positive whole number below 1e38 converts exactly enough for a tick step"
        )]
        let step = step.round() as u128;
        step.max(1)
    }
}

/// 1, 2 or 5 times a power of ten: the smallest such step at least `raw` (`raw` > 0, finite).
fn nice_step(raw: f64) -> f64 {
    let (m, e) = nice_parts(raw);
    decimal_f64(m, e)
}

/// The nice step at least `raw` as `(m, e)`, the step being `m × 10^e` with `m` 1, 2 or 5.
fn nice_parts(raw: f64) -> (i128, i32) {
    if !(raw.is_finite() && raw > 0.0) {
        return (1, 0);
    }
    let exponent = raw.log10().floor();
    let magnitude = 10f64.powf(exponent);
    let residual = raw / magnitude;
    #[expect(
        clippy::cast_possible_truncation,
        reason = "the power of ten of a finite positive f64 lies in -324..=308"
    )]
    let e = exponent as i32;
    // Rounding in log10/powf can leave `residual` a hair above a nice number: allow for it.
    if residual <= 1.0 + 1e-9 {
        (1, e)
    } else if residual <= 2.0 + 1e-9 {
        (2, e)
    } else if residual <= 5.0 + 1e-9 {
        (5, e)
    } else {
        (1, e + 1)
    }
}

/// An axis tick's label: the value with an SI suffix (k, M, G, T, P, E) when the step is a
/// whole multiple of it, so `40000000` with a step of `20000000` reads `40M`.
fn axis_label(value: u128, step: u128) -> String {
    const SUFFIXES: [&str; 7] = ["", "k", "M", "G", "T", "P", "E"];
    let mut power = 0;
    let mut unit: u128 = 1;
    while power + 1 < SUFFIXES.len() && step.is_multiple_of(unit * 1000) {
        unit *= 1000;
        power += 1;
    }
    if value == 0 {
        return "0".to_owned();
    }
    format!("{}{}", value / unit, SUFFIXES[power])
}

/// Field values (as f64) to fractions of the plot's height, over a span widened to whole ticks.
///
/// Each tick is a whole multiple of a round step `m × 10^e`, held as the exact decimal
/// `d × 10^e` (`d` an integer): its label is written from `d`, never from the f64, so two ticks
/// never share a label and no label carries f64 noise. Where whole labels would be long (a
/// narrow window of large values), they count from a round offset below the ticks instead, and
/// `offset` is the caption that says so (`− 1,234,567,890,000`).
#[derive(Debug)]
struct ValueScale {
    lo: f64,
    hi: f64,
    ticks: Vec<(f64, String)>,
    offset: Option<String>,
}

impl ValueScale {
    fn new([lo, hi]: [f64; 2], height_px: f64) -> ValueScale {
        // Distinct f64 values differ by at least one ulp, so a span below one ulp is no span.
        if lo.partial_cmp(&hi) != Some(std::cmp::Ordering::Less) {
            return ValueScale::flat(lo);
        }
        let target = (height_px / Y_TICK_SPACING_PX).max(2.0);
        // Halves, so that `hi - lo` cannot overflow for values near ±f64::MAX. The step is at
        // least two ulps of the largest value, so neighbouring ticks are distinct f64 values.
        let raw = ((hi / 2.0 - lo / 2.0) / target * 2.0).max(2.0 * ulp(lo.abs().max(hi.abs())));
        let (m, e) = nice_parts(raw);
        let step = decimal_f64(m, e);
        if !(step.is_finite() && step > 0.0) {
            return ValueScale::flat(lo);
        }
        // With the step at least an ulp of every value, `value / step` is below 2^53: the tick
        // indices fit an i128 with room to spare.
        #[expect(
            clippy::cast_possible_truncation,
            reason = "finite and below 2^54 in magnitude (the step is at least an ulp of the values)"
        )]
        let index = |v: f64| v as i128;
        let tick = |n: i128| decimal_f64(n * m, e);
        let mut n_lo = index((lo / step).floor());
        let mut n_hi = index((hi / step).ceil());
        // The division rounds: make sure the first tick is at or below `lo`, the last at or
        // above `hi` (where those ticks are finite at all).
        if tick(n_lo) > lo {
            n_lo -= 1;
        }
        if tick(n_hi) < hi {
            n_hi += 1;
        }
        let mut ds: Vec<i128> = Vec::new();
        let mut values: Vec<f64> = Vec::new();
        let mut n = n_lo;
        while n <= n_hi && ds.len() <= TICKS_MAX {
            let v = tick(n);
            // Strictly increasing and finite: a tick past ±f64::MAX is left off.
            if v.is_finite() && values.last().is_none_or(|&last| v > last) {
                ds.push(n * m);
                values.push(v);
            }
            n += 1;
        }
        let scale_lo = values.first().map_or(lo, |&v| v.min(lo));
        let scale_hi = values.last().map_or(hi, |&v| v.max(hi));
        let (labels, offset) = value_labels(&ds, e);
        ValueScale {
            lo: scale_lo,
            hi: scale_hi,
            ticks: values.into_iter().zip(labels).collect(),
            offset,
        }
    }

    /// Every bucket flat at `v`: one tick, at `v`, in a span around it.
    fn flat(v: f64) -> ValueScale {
        let v = if v.is_finite() { v } else { 0.0 };
        let (lo, hi) = flat_span(v);
        let (d, e) = shortest_decimal(v);
        let (labels, offset) = value_labels(&[d], e);
        ValueScale {
            lo,
            hi,
            ticks: vec![(v, labels.into_iter().next().unwrap_or_default())],
            offset,
        }
    }

    fn fraction(&self, value: f64) -> f64 {
        let span_half = self.hi / 2.0 - self.lo / 2.0;
        let fraction = (value / 2.0 - self.lo / 2.0) / span_half;
        if fraction.is_finite() {
            fraction.clamp(0.0, 1.0)
        } else {
            0.5
        }
    }
}

/// A span around one value (every bucket flat at `v`): ±10% of it, or ±1 around zero.
fn flat_span(v: f64) -> (f64, f64) {
    let pad = if v == 0.0 { 1.0 } else { v.abs() * 0.1 };
    ((v - pad).max(f64::MIN), (v + pad).min(f64::MAX))
}

/// The gap from `x` (≥ 0) to the next f64 above it (below it, at `f64::MAX`).
fn ulp(x: f64) -> f64 {
    let x = x.abs();
    if !x.is_finite() {
        return 0.0;
    }
    let next = f64::from_bits(x.to_bits() + 1);
    if next.is_finite() {
        next - x
    } else {
        // f64::MAX: the gap below it (the same width).
        x - f64::from_bits(x.to_bits() - 1)
    }
}

/// The f64 nearest `d × 10^e` (the parser rounds correctly; an overflow is an infinity).
fn decimal_f64(d: i128, e: i32) -> f64 {
    format!("{d}e{e}").parse().unwrap_or(f64::NAN)
}

/// `v` as `d × 10^e` with the fewest digits that read back as `v`.
fn shortest_decimal(v: f64) -> (i128, i32) {
    let text = format!("{v:e}");
    let (mantissa, exponent) = text.split_once('e').unwrap_or((text.as_str(), "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let decimals = mantissa
        .split_once('.')
        .map_or(0, |(_, fraction)| fraction.len());
    let digits: String = mantissa.chars().filter(|&c| c != '.').collect();
    let d: i128 = digits.parse().unwrap_or(0);
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_possible_wrap,
        reason = "an f64's shortest form has at most 17 digits"
    )]
    let decimals = decimals as i32;
    (d, exponent - decimals)
}

/// Labels for the ticks `d × 10^e`, all in one format: plain decimals with their digits grouped
/// (`1,500`, `21.5`) where every label fits in `VALUE_LABEL_CHARS_MAX`, else scientific with
/// one exponent for the axis (`2.5e12`); where neither fits, the labels count from a round
/// offset below the first tick (the lowest multiple of a power of ten above the ticks' span),
/// which is returned as a caption (`− 1,234,567,890,000`, or `+ …` below zero).
fn value_labels(ds: &[i128], e: i32) -> (Vec<String>, Option<String>) {
    if let Some(labels) = fitting_labels(ds, e) {
        return (labels, None);
    }
    let lo = ds.iter().copied().min().unwrap_or(0);
    let hi = ds.iter().copied().max().unwrap_or(0);
    let mut power: i128 = 1;
    while power <= hi - lo {
        power *= 10;
    }
    let offset = lo.div_euclid(power) * power;
    let relative: Vec<i128> = ds.iter().map(|d| d - offset).collect();
    // Relative to the offset, every label has at most three significant digits: scientific
    // always fits.
    let labels = fitting_labels(&relative, e).unwrap_or_else(|| {
        relative
            .iter()
            .map(|&r| scientific(r, e, axis_exponent(&relative, e)))
            .collect()
    });
    let sign = if offset < 0 { '+' } else { '−' };
    let caption = {
        let plain = plain_decimal(offset.abs(), e, true);
        if plain.chars().count() <= OFFSET_CHARS_MAX {
            plain
        } else {
            let mut digits = offset.abs();
            let mut exponent = e;
            while digits != 0 && digits % 10 == 0 {
                digits /= 10;
                exponent += 1;
            }
            scientific(digits, exponent, axis_exponent(&[digits], exponent))
        }
    };
    (labels, Some(format!("{sign} {caption}")))
}

/// Plain labels if they all fit, else scientific ones if they all fit.
fn fitting_labels(ds: &[i128], e: i32) -> Option<Vec<String>> {
    let fits = |labels: &[String]| {
        labels
            .iter()
            .all(|l| l.chars().count() <= VALUE_LABEL_CHARS_MAX)
    };
    if (-9..=9).contains(&e) {
        let plain: Vec<String> = ds.iter().map(|&d| plain_decimal(d, e, false)).collect();
        if fits(&plain) {
            return Some(plain);
        }
    }
    let exponent = axis_exponent(ds, e);
    let scientific: Vec<String> = ds.iter().map(|&d| scientific(d, e, exponent)).collect();
    fits(&scientific).then_some(scientific)
}

/// The power of ten of the largest `|d| × 10^e`.
fn axis_exponent(ds: &[i128], e: i32) -> i32 {
    let largest = ds.iter().map(|d| d.unsigned_abs()).max().unwrap_or(0);
    let digits = largest.max(1).ilog10();
    #[expect(clippy::cast_possible_wrap, reason = "an i128 has at most 39 digits")]
    let digits = digits as i32;
    e + digits
}

/// `d × 10^e` written out in full, its whole part's digits grouped in threes (`-1,234.5`);
/// with `trim`, trailing zeros after the point are dropped. Zero is `0`.
fn plain_decimal(d: i128, e: i32, trim: bool) -> String {
    if d == 0 {
        return "0".to_owned();
    }
    let mut digits = d.unsigned_abs().to_string();
    let mut fraction = String::new();
    if e >= 0 {
        digits.extend(std::iter::repeat_n('0', e.unsigned_abs() as usize));
    } else {
        let decimals = e.unsigned_abs() as usize;
        if digits.len() <= decimals {
            digits = format!("{}{digits}", "0".repeat(decimals + 1 - digits.len()));
        }
        fraction = digits.split_off(digits.len() - decimals);
        if trim {
            fraction.truncate(fraction.trim_end_matches('0').len());
        }
    }
    let mut out = String::with_capacity(digits.len() * 4 / 3 + fraction.len() + 2);
    if d < 0 {
        out.push('-');
    }
    for (idx, c) in digits.chars().enumerate() {
        if idx > 0 && (digits.len() - idx).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    if !fraction.is_empty() {
        out.push('.');
        out.push_str(&fraction);
    }
    out
}

/// `d × 10^e` as a mantissa times `10^exponent` (`exponent` ≥ the power of `|d| × 10^e`), with
/// the decimals the step `10^e` needs: `scientific(25, 11, 12)` is `2.5e12`. Zero is `0`.
fn scientific(d: i128, e: i32, exponent: i32) -> String {
    if d == 0 {
        return "0".to_owned();
    }
    let decimals = usize::try_from(exponent - e).unwrap_or(0);
    let digits = d.unsigned_abs().to_string();
    let digits = if digits.len() <= decimals {
        format!("{}{digits}", "0".repeat(decimals + 1 - digits.len()))
    } else {
        digits
    };
    let (whole, fraction) = digits.split_at(digits.len() - decimals);
    let sign = if d < 0 { "-" } else { "" };
    if fraction.is_empty() {
        format!("{sign}{whole}e{exponent}")
    } else {
        format!("{sign}{whole}.{fraction}e{exponent}")
    }
}

/// Roughly how wide `label` is in an 11px font, in px: digits and letters about
/// `LABEL_CHAR_PX`, points and commas half that.
fn label_px(label: &str) -> f64 {
    label
        .chars()
        .map(|c| match c {
            ',' | '.' => LABEL_CHAR_PX / 2.0,
            '-' => LABEL_CHAR_PX * 0.6,
            _ => LABEL_CHAR_PX,
        })
        .sum()
}

/// Text for SVG content and attribute values: the five XML specials as entities.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use strata::Num;

    use super::*;

    fn bucket(points: [(u64, f64); 4], count: u64) -> Bucket {
        let [first, last, min, max] = points.map(|(axis, v)| Point {
            axis,
            value: Num::F64(v),
        });
        Bucket {
            field: 0,
            first,
            last,
            min,
            max,
            count,
            sum: 0.0,
            sum_sq: 0.0,
        }
    }

    fn survey(fields: Vec<(&str, Vec<Bucket>)>, span: Option<[u64; 2]>) -> Survey {
        Survey {
            level: 0,
            group: 1,
            span,
            fields: fields
                .into_iter()
                .map(|(name, buckets)| FieldBuckets {
                    field: name.to_owned(),
                    buckets,
                })
                .collect(),
        }
    }

    fn draw(survey: &Survey) -> String {
        draw_with(survey, None)
    }

    fn draw_with(survey: &Survey, bucket_width: Option<u128>) -> String {
        render(&Picture {
            title: "s <&> \"t\"".to_owned(),
            subtitle: "sub".to_owned(),
            axis_name: "t".to_owned(),
            axis_unit: None,
            units: &[],
            time: None,
            bucket_width,
            survey,
        })
    }

    /// The subpaths of the `nth` path of `class` (`band` or `line`): each a list of (x, y).
    fn subpaths(svg: &str, class: &str, nth: usize) -> Vec<Vec<(f64, f64)>> {
        let d = svg
            .split(&format!("<path class=\"{class}\" d=\""))
            .nth(nth + 1)
            .unwrap_or_else(|| panic!("no {class} path {nth}: {svg}"))
            .split('"')
            .next()
            .unwrap();
        d.split('M')
            .skip(1)
            .map(|sub| {
                sub.split(['L', 'Z'])
                    .map(str::trim)
                    .filter(|p| !p.is_empty())
                    .map(|p| {
                        let (x, y) = p.split_once(',').unwrap();
                        (x.parse().unwrap(), y.parse().unwrap())
                    })
                    .collect()
            })
            .collect()
    }

    /// Every coordinate of every path.
    fn coordinates(svg: &str) -> Vec<f64> {
        let mut all = Vec::new();
        for class in ["band", "line"] {
            for nth in 0..svg.matches(&format!("class=\"{class}\"")).count() {
                for sub in subpaths(svg, class, nth) {
                    all.extend(sub.into_iter().flat_map(|(x, y)| [x, y]));
                }
            }
        }
        all
    }

    fn assert_well_formed(svg: &str, n_fields: usize) {
        assert!(svg.starts_with("<svg"), "{svg}");
        assert!(svg.trim_end().ends_with("</svg>"), "{svg}");
        assert!(!svg.contains("NaN") && !svg.contains("inf"), "{svg}");
        assert_eq!(
            svg.matches("<path class=\"band\"").count(),
            n_fields,
            "{svg}"
        );
        assert_eq!(
            svg.matches("<path class=\"line\"").count(),
            n_fields,
            "{svg}"
        );
        for c in coordinates(svg) {
            assert!(
                c.is_finite() && (0.0..=WIDTH_PX).contains(&c),
                "{c} in {svg}"
            );
        }
    }

    #[test]
    fn nice_steps_are_one_two_or_five_times_a_power_of_ten() {
        let cases = [
            (0.7, 1.0),
            (1.0, 1.0),
            (1.01, 2.0),
            (2.0, 2.0),
            (3.0, 5.0),
            (5.0, 5.0),
            (7.5, 10.0),
            (12.0, 20.0),
            (0.03, 0.05),
            (0.0012, 0.002),
            (4.5e6, 5e6),
            (1e18, 1e18),
        ];
        for (raw, step) in cases {
            let got = nice_step(raw);
            assert!((got - step).abs() <= step * 1e-12, "{raw}: {got} != {step}");
        }
        assert!((nice_step(0.0) - 1.0).abs() < f64::EPSILON);
        assert!((nice_step(f64::NAN) - 1.0).abs() < f64::EPSILON);
        assert_eq!(integer_step(0.2), 1);
        assert_eq!(integer_step(1.3e7), 20_000_000);
        assert_eq!(
            integer_step(u64::MAX as f64 / 2.0),
            10_000_000_000_000_000_000
        );
    }

    #[test]
    fn value_ticks_cover_the_span_on_round_numbers() {
        let scale = ValueScale::new([-1.53, 1.49], 140.0);
        let labels: Vec<&str> = scale.ticks.iter().map(|(_, l)| l.as_str()).collect();
        assert_eq!(labels, ["-2", "-1", "0", "1", "2"]);
        assert!(scale.lo <= -1.53 && scale.hi >= 1.49);

        // A span of 1.6 over a 154 px plot: about four ticks, so steps of 0.5.
        let scale = ValueScale::new([21.0, 22.6], PLOT_BOTTOM_PX - PLOT_TOP_PX);
        let labels: Vec<&str> = scale.ticks.iter().map(|(_, l)| l.as_str()).collect();
        assert_eq!(labels, ["21.0", "21.5", "22.0", "22.5", "23.0"]);
        assert!(scale.lo <= 21.0 && scale.hi >= 22.6);
        // A wider span over a shorter plot: whole steps.
        let scale = ValueScale::new([20.31, 22.9], 110.0);
        let labels: Vec<&str> = scale.ticks.iter().map(|(_, l)| l.as_str()).collect();
        assert_eq!(labels, ["20", "21", "22", "23"]);

        let labels = |ds: &[i128], e| value_labels(ds, e).0;
        assert_eq!(labels(&[5, 25], -5), ["0.00005", "0.00025"]);
        assert_eq!(labels(&[2], 12), ["2e12"]);
        assert_eq!(labels(&[-15], -10), ["-1.5e-9"]);
        assert_eq!(
            labels(&[0, 1500, -1_234_567], 0),
            ["0", "1,500", "-1,234,567"]
        );
    }

    /// `text` (`-1,234.5`, `2.5e12`, `−` for minus) in millionths, exactly.
    fn micros(text: &str) -> i128 {
        let text: String = text
            .replace('−', "-")
            .chars()
            .filter(|&c| c != ',')
            .collect();
        let (mantissa, exponent) = text.split_once('e').unwrap_or((&text, "0"));
        let exponent: i32 = exponent.parse().unwrap();
        let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
        let negative = whole.starts_with('-');
        let digits: i128 = format!("{}{fraction}", whole.trim_start_matches('-'))
            .parse()
            .unwrap();
        let shift = 6 + exponent - i32::try_from(fraction.len()).unwrap();
        let magnitude = if shift >= 0 {
            digits * 10i128.pow(shift.unsigned_abs())
        } else {
            let unit = 10i128.pow(shift.unsigned_abs());
            assert_eq!(digits % unit, 0, "{text} has digits below a millionth");
            digits / unit
        };
        if negative { -magnitude } else { magnitude }
    }

    /// A field of one bucket per value, its value axis, and the plot's left edge in a picture
    /// of it. Checks what every value axis must satisfy: ticks strictly increasing, labels
    /// distinct, at most `VALUE_LABEL_CHARS_MAX` long and clear of the rotated field name.
    fn value_axis(values: &[Num]) -> (ValueScale, f64) {
        let buckets: Vec<Bucket> = values
            .iter()
            .enumerate()
            .map(|(i, &value)| {
                let at = Point {
                    axis: i as u64 * 10,
                    value,
                };
                Bucket {
                    field: 0,
                    first: at,
                    last: at,
                    min: at,
                    max: at,
                    count: 1,
                    sum: 0.0,
                    sum_sq: 0.0,
                }
            })
            .collect();
        let scale = ValueScale::new(value_extent(&buckets), PLOT_BOTTOM_PX - PLOT_TOP_PX);
        let survey = survey(vec![("v", buckets)], None);
        let left = plot_left(&survey);
        assert!((PLOT_LEFT_PX..=PLOT_LEFT_MAX_PX).contains(&left));
        let svg = draw(&survey);
        assert_well_formed(&svg, 1);
        assert!(
            scale.ticks.windows(2).all(|w| w[0].0 < w[1].0),
            "strictly increasing: {scale:?}"
        );
        for (idx, (_, label)) in scale.ticks.iter().enumerate() {
            assert!(
                label.chars().count() <= VALUE_LABEL_CHARS_MAX,
                "{label}: {scale:?}"
            );
            assert!(
                FIELD_NAME_PX + label_px(label) + VALUE_LABEL_INSET_PX <= left,
                "{label} reaches the field name: {left}"
            );
            assert!(
                scale.ticks[..idx].iter().all(|(_, other)| other != label),
                "{label} twice: {scale:?}"
            );
            assert!(svg.contains(&format!(">{label}</text>")), "{label}: {svg}");
        }
        if let Some(offset) = &scale.offset {
            assert!(svg.contains(&format!(">v {offset} ↑</text>")), "{svg}");
        }
        (scale, left)
    }

    /// Each label, with the offset in the caption applied, is within half a step of the tick
    /// written in `expected` (exact decimals, as text).
    fn assert_ticks(scale: &ValueScale, expected: &[&str], step: &str) {
        let offset = scale.offset.as_deref().map_or(0, |caption| {
            let (sign, magnitude) = caption.split_once(' ').unwrap();
            // `v − X`: the labels show the value less X; `v + X`: the value plus X.
            match sign {
                "−" => micros(magnitude),
                "+" => -micros(magnitude),
                other => panic!("sign {other} in {caption}"),
            }
        });
        let labels: Vec<&str> = scale.ticks.iter().map(|(_, l)| l.as_str()).collect();
        assert_eq!(labels.len(), expected.len(), "{labels:?} vs {expected:?}");
        for (label, want) in labels.iter().zip(expected) {
            let got = micros(label) + offset;
            assert!(
                2 * (got - micros(want)).abs() <= micros(step),
                "{label} + {offset}µ = {got}µ, not {want}: {scale:?}"
            );
        }
    }

    #[test]
    fn u64_values_near_the_top_get_distinct_labels_from_an_offset() {
        // Stored as u64: 18446744073709550000 and 18446744073709551615 and
        // 18446744073709551000; as f64 they are 2^64 - 2048 and 2^64, two values an ulp
        // apart. The old axis drew 13 ticks all reading `1.844674407370955e19`.
        let (scale, _) = value_axis(&[
            Num::U64(18_446_744_073_709_550_000),
            Num::U64(u64::MAX),
            Num::U64(18_446_744_073_709_551_000),
        ]);
        assert_eq!(
            scale.offset.as_deref(),
            Some("− 18,446,744,073,709,500,000")
        );
        // 18446744073709550000 is the f64 2^64 - 2048 itself: the first tick.
        let labels: Vec<&str> = scale.ticks.iter().map(|(_, l)| l.as_str()).collect();
        assert_eq!(labels, ["50,000", "60,000"]);
        assert_ticks(
            &scale,
            &["18446744073709550000", "18446744073709560000"],
            "10000",
        );
    }

    #[test]
    fn i64_values_near_the_bottom_get_distinct_labels_from_an_offset() {
        // -2^63, and two values that round to -2^63 + 1024 and -2^63 as f64. The old axis:
        // `-9.223372036854776e18` three times, `-9.223372036854774e18` three times.
        let (scale, _) = value_axis(&[
            Num::I64(i64::MIN),
            Num::I64(-9_223_372_036_854_775_000),
            Num::I64(-9_223_372_036_854_775_800),
        ]);
        assert_eq!(scale.offset.as_deref(), Some("+ 9,223,372,036,854,780,000"));
        // As f64 the data is -2^63 ..= -2^63 + 1024, and -9223372036854775000 is the f64
        // -2^63 + 1024 itself: the last tick.
        let labels: Vec<&str> = scale.ticks.iter().map(|(_, l)| l.as_str()).collect();
        assert_eq!(labels, ["0", "5,000"]);
        assert_ticks(
            &scale,
            &["-9223372036854780000", "-9223372036854775000"],
            "5000",
        );
    }

    #[test]
    fn a_large_counter_is_labelled_from_an_offset_and_clears_the_field_name() {
        // A bytes counter: 1,234,567,890,000 + 3i over 1,000 rows. The old labels were
        // `1.234567890e12` .. `1.234567893e12`, 98 px against 77 px of room.
        let values: Vec<Num> = (0..1_000)
            .map(|i| Num::U64(1_234_567_890_000 + 3 * i))
            .collect();
        let (scale, left) = value_axis(&values);
        assert_eq!(scale.offset.as_deref(), Some("− 1,234,567,890,000"));
        let labels: Vec<&str> = scale.ticks.iter().map(|(_, l)| l.as_str()).collect();
        assert_eq!(labels, ["0", "1,000", "2,000", "3,000"]);
        assert_ticks(
            &scale,
            &[
                "1234567890000",
                "1234567891000",
                "1234567892000",
                "1234567893000",
            ],
            "1000",
        );
        assert!((left - PLOT_LEFT_PX).abs() < f64::EPSILON, "{left}");
    }

    #[test]
    fn an_axis_across_a_power_of_ten_has_one_label_format() {
        // 999999999.5 ..= 1000000000.5 in steps of 0.5: once `999999999.5` next to
        // `1.0000000000e9`; now one decimal each, counting from 999,999,990.
        let (scale, _) = value_axis(&[Num::F64(999_999_999.5), Num::F64(1_000_000_000.5)]);
        assert_eq!(scale.offset.as_deref(), Some("− 999,999,990"));
        let labels: Vec<&str> = scale.ticks.iter().map(|(_, l)| l.as_str()).collect();
        assert_eq!(labels, ["9.5", "10.0", "10.5"]);
        assert_ticks(
            &scale,
            &["999999999.5", "1000000000", "1000000000.5"],
            "0.5",
        );
        // Plain where plain fits, digits grouped, one format: no offset.
        let (scale, _) = value_axis(&[Num::F64(0.5), Num::F64(1_490.0)]);
        assert_eq!(scale.offset, None);
        let labels: Vec<&str> = scale.ticks.iter().map(|(_, l)| l.as_str()).collect();
        assert_eq!(labels, ["0", "500", "1,000", "1,500"]);
        // Scientific where plain would be long, with one exponent for the axis.
        let (scale, _) = value_axis(&[Num::F64(1.2e15), Num::F64(9.1e15)]);
        let labels: Vec<&str> = scale.ticks.iter().map(|(_, l)| l.as_str()).collect();
        assert_eq!(
            labels,
            ["0", "0.2e16", "0.4e16", "0.6e16", "0.8e16", "1.0e16"]
        );
        assert_ticks(
            &scale,
            &["0", "2e15", "4e15", "6e15", "8e15", "10e15"],
            "2e15",
        );
    }

    #[test]
    fn a_flat_or_sub_ulp_span_draws_one_labelled_tick() {
        // u64::MAX and u64::MAX - 1 are one f64: no span at all.
        for (values, label, offset) in [
            (
                vec![Num::U64(u64::MAX), Num::U64(u64::MAX - 1)],
                "0",
                Some("− 18,446,744,073,709,552,000"),
            ),
            (vec![Num::F64(21.5), Num::F64(21.5)], "21.5", None),
            (vec![Num::I64(0)], "0", None),
        ] {
            let (scale, _) = value_axis(&values);
            assert_eq!(scale.ticks.len(), 1, "{scale:?}");
            assert_eq!(scale.ticks[0].1, label);
            assert_eq!(scale.offset.as_deref(), offset);
        }
    }

    /// The labels of the axis ticks over `[lo, hi]` on an 800 px plot, the offset they count
    /// from, and the unit they are written in.
    fn axis_labels(lo: u64, hi: u64, unit: Option<&str>) -> (Vec<String>, Option<u64>, String) {
        let (_, ticks) = axis_ticks([lo, hi], 800.0, unit);
        let labels = ticks.ticks.into_iter().map(|(_, l)| l).collect();
        (labels, ticks.offset, ticks.scale_name.unwrap_or_default())
    }

    #[test]
    fn axis_ticks_are_round_and_labelled_with_si_suffixes() {
        let (ticks, offset, _) = axis_labels(0, 99_999_000, None);
        assert_eq!(ticks, ["0", "20M", "40M", "60M", "80M", "100M"]);
        assert_eq!(offset, None);
        let (ticks, offset, _) = axis_labels(1_000, 1_950, None);
        assert_eq!(ticks, ["1000", "1200", "1400", "1600", "1800", "2000"]);
        assert_eq!(offset, None);
        // A second's window of nanosecond timestamps: whole values would not fit, so the labels
        // count from a round offset; the first tick is the round one at or before the data.
        let (ticks, offset, _) =
            axis_labels(1_700_000_000_123_456_789, 1_700_000_001_123_456_789, None);
        assert_eq!(offset, Some(1_700_000_000_000_000_000));
        assert_eq!(ticks.first().map(String::as_str), Some("0"));
        assert_eq!(ticks.last().map(String::as_str), Some("1200M"));
        assert!(ticks.iter().all(|l| l.len() <= 5), "{ticks:?}");
        assert_eq!(axis_label(45_000, 5_000), "45k");
        assert_eq!(axis_label(45_500, 500), "45500");
        assert_eq!(axis_label(0, 1_000_000), "0");
    }

    #[test]
    fn ticks_run_from_at_or_before_the_first_point_to_at_or_past_the_last() {
        // The demo's axis: 100,000 samples a millisecond apart, in µs. The ticks are whole
        // seconds, and the last is 100 s, past the last sample at 99.999 s.
        let (ticks, offset, unit) = axis_labels(0, 99_999_000, Some("µs"));
        assert_eq!(ticks, ["0", "20", "40", "60", "80", "100"]);
        assert_eq!((offset, unit.as_str()), (None, "s"));
        // Half a second of it: ticks in ms.
        let (ticks, _, unit) = axis_labels(0, 499_000, Some("µs"));
        assert_eq!(ticks, ["0", "100", "200", "300", "400", "500"]);
        assert_eq!(unit, "ms");
        // A stream of unknown unit whose data starts and ends off the round numbers.
        for [lo, hi] in [[3, 997], [1, 1], [17, 18], [999, 1_000_001]] {
            let (scale, ticks) = axis_ticks([lo, hi], 800.0, None);
            let first = ticks.ticks.first().unwrap().0;
            let last = ticks.ticks.last().unwrap().0;
            assert!(first <= u128::from(lo), "{lo}..{hi}: {ticks:?}");
            assert!(last >= u128::from(hi), "{lo}..{hi}: {ticks:?}");
            assert!(
                (scale.lo, scale.hi) == (first, last) || lo == hi,
                "{scale:?}"
            );
            let steps: Vec<u128> = ticks.ticks.windows(2).map(|w| w[1].0 - w[0].0).collect();
            assert!(
                steps.windows(2).all(|w| w[0] == w[1]),
                "even steps: {steps:?}"
            );
        }
        let (_, ticks) = axis_ticks([3, 997], 800.0, None);
        let labels: Vec<&str> = ticks.ticks.iter().map(|(_, l)| l.as_str()).collect();
        assert_eq!(labels, ["0", "200", "400", "600", "800", "1000"]);
    }

    #[test]
    fn huge_u64_axes_stay_finite_and_in_range() {
        for [lo, hi] in [
            [0, u64::MAX],
            [u64::MAX - 10, u64::MAX],
            [u64::MAX, u64::MAX],
        ] {
            let (scale, ticks) = axis_ticks([lo, hi], 800.0, None);
            let ticks = ticks.ticks;
            assert!(
                !ticks.is_empty() && ticks.len() <= TICKS_MAX + 1,
                "{ticks:?}"
            );
            assert!(ticks[0].0 <= u128::from(lo), "{ticks:?}");
            assert!(ticks[ticks.len() - 1].0 >= u128::from(hi), "{ticks:?}");
            for (tick, _) in &ticks {
                assert!((0.0..=1.0).contains(&scale.fraction_wide(*tick)));
            }
            let mid = lo + (hi - lo) / 2;
            let b = bucket([(lo, 1.0), (hi, 2.0), (mid, 0.5), (hi, 3.0)], 9);
            let svg = draw(&survey(vec![("v", vec![b])], Some([lo, hi])));
            assert_well_formed(&svg, 1);
        }
    }

    #[test]
    fn one_bucket_and_flat_values_draw_without_nan() {
        let one = bucket([(5, 1.0), (5, 1.0), (5, 1.0), (5, 1.0)], 1);
        let svg = draw(&survey(vec![("v", vec![one])], Some([5, 5])));
        assert_well_formed(&svg, 1);
        assert!(svg.contains("<circle"), "a lone bucket is marked: {svg}");

        let flat: Vec<Bucket> = (0..300)
            .map(|i| {
                bucket(
                    [
                        (i * 10, 0.0),
                        (i * 10 + 9, 0.0),
                        (i * 10, 0.0),
                        (i * 10, 0.0),
                    ],
                    10,
                )
            })
            .collect();
        let svg = draw(&survey(vec![("zero", flat)], None));
        assert_well_formed(&svg, 1);
        assert!(!svg.contains("<circle"), "dense surveys draw no dots");

        let extreme = bucket(
            [(0, f64::MIN), (9, f64::MAX), (0, f64::MIN), (9, f64::MAX)],
            2,
        );
        let flat_max = bucket(
            [
                (10, f64::MAX),
                (19, f64::MAX),
                (10, f64::MAX),
                (19, f64::MAX),
            ],
            2,
        );
        let svg = draw(&survey(
            vec![("wide", vec![extreme]), ("flat_max", vec![flat_max])],
            Some([0, 19]),
        ));
        assert_well_formed(&svg, 2);
    }

    #[test]
    fn one_panel_per_field_with_escaped_text_and_placed_points() {
        let a = vec![
            bucket([(0, 1.0), (90, 2.0), (40, 0.0), (60, 4.0)], 10),
            bucket([(100, 3.0), (190, 1.0), (150, -2.0), (120, 5.0)], 10),
        ];
        let svg = draw(&survey(
            vec![("a<b", a.clone()), ("empty", Vec::new())],
            Some([0, 199]),
        ));
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>\n"));
        assert!(svg.contains("a&lt;b") && !svg.contains("a<b"));
        assert!(svg.contains("s &lt;&amp;&gt; &quot;t&quot;"));
        assert!(svg.contains("no rows in this range"));
        assert_eq!(
            svg.matches("<path class=\"band\"").count(),
            1,
            "the empty field has no band"
        );
        // The ruler runs from 0 to the first tick at or past 199: 200 (steps of 50).
        let x_of = |axis: u64| PLOT_LEFT_PX + axis as f64 / 200.0 * (PLOT_RIGHT_PX - PLOT_LEFT_PX);
        let xs = |class| -> Vec<f64> {
            let subpaths = subpaths(&svg, class, 0);
            assert_eq!(
                subpaths.len(),
                1,
                "{class}: adjacent buckets, one run: {svg}"
            );
            subpaths[0].iter().map(|&(x, _)| x).collect()
        };
        // The band is a step per bucket: out along each max from the bucket's first row to its
        // last (0..90, 100..190), back along each min (190..100, 90..0).
        let band = [0, 90, 100, 190, 190, 100, 90, 0].map(x_of);
        // The line visits each bucket's four points in axis order: first, then min or max,
        // whichever came first, then last (0, 40, 60, 90; 100, 120, 150, 190).
        let line = [0, 40, 60, 90, 100, 120, 150, 190].map(x_of);
        for (class, expected) in [("band", band), ("line", line)] {
            let got = xs(class);
            assert_eq!(got.len(), expected.len(), "{class}: {got:?}");
            for (got_x, want) in got.iter().zip(expected) {
                assert!(
                    (got_x - want).abs() < 0.06,
                    "{class}: {got:?} vs {expected:?}"
                );
            }
        }
    }

    /// Buckets 10 wide at the given bucket indices, each with values around 1 and its rows at
    /// `10k .. 10k + 9`.
    fn buckets_at(indices: &[u64]) -> Vec<Bucket> {
        indices
            .iter()
            .map(|&k| {
                let a = k * 10;
                bucket([(a, 1.0), (a + 9, 1.0), (a + 3, 0.5), (a + 6, 1.5)], 10)
            })
            .collect()
    }

    #[test]
    fn a_skipped_bucket_breaks_the_band_and_the_line_and_is_marked_as_no_rows() {
        // Buckets 0..=9 and 30..=39 of width 10: 20 buckets skipped, axis 99 ..= 300 holds no
        // rows. The ruler runs 0 ..= 400 (ticks 100 apart, the first past 399 is 400).
        let buckets = buckets_at(&(0..10).chain(30..40).collect::<Vec<_>>());
        let skipped = survey(vec![("v", buckets)], Some([0, 399]));
        let svg = draw_with(&skipped, Some(10));
        assert_well_formed(&svg, 1);
        for class in ["band", "line"] {
            assert_eq!(
                subpaths(&svg, class, 0).len(),
                2,
                "{class} breaks once: {svg}"
            );
        }
        let x_of = |axis: u64| PLOT_LEFT_PX + axis as f64 / 400.0 * (PLOT_RIGHT_PX - PLOT_LEFT_PX);
        let line = subpaths(&svg, "line", 0);
        let end_of_first = line[0].last().unwrap().0;
        let start_of_second = line[1][0].0;
        assert!((end_of_first - x_of(99)).abs() < 0.06, "{line:?}");
        assert!((start_of_second - x_of(300)).abs() < 0.06, "{line:?}");
        assert_eq!(svg.matches("class=\"gap\"").count(), 1, "{svg}");
        let gap = svg.split("<rect class=\"gap\" x=\"").nth(1).unwrap();
        let gap_x: f64 = gap.split('"').next().unwrap().parse().unwrap();
        assert!((gap_x - x_of(99)).abs() < 0.06, "{gap}");
        assert!(
            svg.contains(">no rows</text>"),
            "wide enough for its label: {svg}"
        );

        // Neighbours one bucket apart are adjacent: no break, no gap. And without a bucket
        // width (one bucket holds the whole axis), nothing is taken for a gap.
        let adjacent = survey_of(buckets_at(&[0, 1, 2, 3]));
        let svg = draw_with(&adjacent, Some(10));
        assert_eq!(subpaths(&svg, "line", 0).len(), 1, "{svg}");
        assert!(
            !svg.contains("class=\"gap\"") && !svg.contains(">no rows<"),
            "{svg}"
        );
        // One bucket skipped of 50 (about 16 px): labelled up the stripe instead of across.
        let narrow: Vec<u64> = (0..50).filter(|&k| k != 20).collect();
        let svg = draw_with(
            &survey(vec![("v", buckets_at(&narrow))], Some([0, 499])),
            Some(10),
        );
        assert_eq!(svg.matches("class=\"gap\"").count(), 1, "{svg}");
        assert!(
            svg.contains(&format!(
                "rotate(-90)\" text-anchor=\"middle\" fill=\"{GAP_TEXT}\">no rows<"
            )),
            "{svg}"
        );
        let apart = survey_of(buckets_at(&[0, 5]));
        assert_eq!(subpaths(&draw_with(&apart, None), "line", 0).len(), 1);
        assert_eq!(subpaths(&draw_with(&apart, Some(10)), "line", 0).len(), 2);
    }

    fn survey_of(buckets: Vec<Bucket>) -> Survey {
        survey(vec![("v", buckets)], None)
    }

    #[test]
    fn a_lone_spike_is_drawn_to_its_full_height_at_its_own_axis() {
        // 50 buckets of values within 0.5 ..= 1.5; bucket 20 also holds one row of 100 at axis
        // 205. The value ticks run 0 ..= 100 in steps of 50, so 100 sits at the plot's top.
        let mut buckets = buckets_at(&(0..50).collect::<Vec<_>>());
        buckets[20].max = Point {
            axis: 205,
            value: strata::Num::F64(100.0),
        };
        let svg = draw_with(&survey(vec![("v", buckets)], Some([0, 499])), Some(10));
        let line = subpaths(&svg, "line", 0);
        let top = line[0]
            .iter()
            .copied()
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .unwrap();
        let x_of = |axis: u64| PLOT_LEFT_PX + axis as f64 / 500.0 * (PLOT_RIGHT_PX - PLOT_LEFT_PX);
        assert!((top.0 - x_of(205)).abs() < 0.06, "{top:?}");
        assert!(
            (top.1 - (HEADER_HEIGHT_PX + PLOT_TOP_PX)).abs() < 0.06,
            "{top:?}"
        );
        let band = subpaths(&svg, "band", 0);
        let band_top = band[0].iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
        assert!(
            (band_top - top.1).abs() < 0.06,
            "the band reaches the spike too"
        );
    }

    #[test]
    fn the_axes_are_named_with_their_units() {
        let survey = survey(
            vec![
                ("value", buckets_at(&[0, 1])),
                ("temp", buckets_at(&[0, 1])),
            ],
            Some([0, 19_000]),
        );
        let svg = render(&Picture {
            title: "capture".to_owned(),
            subtitle: "sub".to_owned(),
            axis_name: "t".to_owned(),
            axis_unit: Some("µs"),
            units: &[("temp", "°C")],
            time: None,
            bucket_width: Some(10),
            survey: &survey,
        });
        assert!(svg.contains(">t (ms) →<"), "ticks 5 ms apart: {svg}");
        assert!(svg.contains("rotate(-90)\" text-anchor=\"middle\" fill=\"#555555\">value<"));
        assert!(svg.contains(">temp (°C)<"), "{svg}");
        let plain = draw(&survey);
        assert!(plain.contains(">t →<"), "no unit known: {plain}");
    }

    #[test]
    fn escape_replaces_the_xml_specials() {
        assert_eq!(escape("a&b<c>d\"e'f"), "a&amp;b&lt;c&gt;d&quot;e&apos;f");
        assert_eq!(escape("plain µs"), "plain µs");
    }
}
