//! A survey as an SVG picture: one panel per measured field, stacked, each with the M4 envelope
//! (a min–max band and the first/last line) over axis and value ticks.
//!
//! Hand-written SVG text, no dependency. Every point sits at its own axis coordinate
//! (`first.axis`, `last.axis`, `min.axis`, `max.axis`): that is what M4 keeps them for, and it is
//! why a few hundred buckets draw the same outline as the millions of rows beneath them.
//!
//! Coordinates are computed so that no input yields a NaN or an infinity: axes are subtracted in
//! integers before they become f64 (u64 axes near 2^64 stay exact relative to the panel), values
//! are scaled by halves (so `-f64::MAX ..= f64::MAX` does not overflow), and a span of zero width
//! (one bucket, flat values) is widened or centred.

use std::fmt::Write as _;

use strata::{Bucket, FieldBuckets, Point, Survey};

/// The picture's width, in px.
const WIDTH_PX: f64 = 900.0;
/// One field's panel, title and tick labels included, in px.
const PANEL_HEIGHT_PX: f64 = 220.0;
/// The title and legend above the first panel, in px.
const HEADER_HEIGHT_PX: f64 = 58.0;
/// Below the last panel, in px.
const FOOTER_HEIGHT_PX: f64 = 8.0;
/// The plot area inside a panel: room for value labels on the left, the field's name above,
/// axis labels below.
const PLOT_LEFT_PX: f64 = 76.0;
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
/// With at most this many buckets a field, the first and last points are marked with dots, so a
/// sparse survey (one bucket, a few) still shows where its points are.
const DOTS_BUCKETS_MAX: usize = 64;
/// Ticks one scale may draw, whatever its span: a bound, not a target.
const TICKS_MAX: usize = 24;

const BAND_FILL: &str = "#9ecae1";
const BAND_STROKE: &str = "#6baed6";
const LINE_STROKE: &str = "#08519c";
const GRID_STROKE: &str = "#e6e6e6";
const FRAME_STROKE: &str = "#888888";
const TEXT_MUTED: &str = "#555555";

/// What to draw: a survey, the words around it, and the name of its axis.
#[derive(Debug)]
pub struct Picture<'a> {
    /// The first line above the panels (stream and selection).
    pub title: String,
    /// The second line (how the survey was answered).
    pub subtitle: String,
    /// The axis field's name, written under each panel's axis labels.
    pub axis_name: String,
    pub survey: &'a Survey,
}

/// The picture as SVG text: starts with `<svg`, ends with `</svg>` and a newline.
pub fn render(picture: &Picture<'_>) -> String {
    let n_panels = picture.survey.fields.len().max(1);
    let height_px = HEADER_HEIGHT_PX + n_panels as f64 * PANEL_HEIGHT_PX + FOOTER_HEIGHT_PX;
    let mut out = String::with_capacity(4096 + 64 * bucket_count(picture.survey));
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
         <text x=\"16\" y=\"44\" fill=\"{TEXT_MUTED}\">{}</text>",
        escape(&picture.title),
        escape(&picture.subtitle)
    );
    legend(&mut out);
    if picture.survey.fields.is_empty() {
        let _ = writeln!(
            out,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"{TEXT_MUTED}\">no measured field</text>",
            WIDTH_PX / 2.0,
            HEADER_HEIGHT_PX + PANEL_HEIGHT_PX / 2.0
        );
    }
    for (panel_idx, field) in picture.survey.fields.iter().enumerate() {
        let top_px = HEADER_HEIGHT_PX + panel_idx as f64 * PANEL_HEIGHT_PX;
        panel(&mut out, field, picture, top_px);
    }
    out.push_str("</svg>\n");
    out
}

fn bucket_count(survey: &Survey) -> usize {
    survey.fields.iter().map(|f| f.buckets.len()).sum()
}

/// A swatch of the band and a stroke of the line, top right.
fn legend(out: &mut String) {
    let x = PLOT_RIGHT_PX - 250.0;
    let _ = writeln!(
        out,
        "<g fill=\"{TEXT_MUTED}\">\
         <rect x=\"{x}\" y=\"16\" width=\"22\" height=\"10\" fill=\"{BAND_FILL}\" \
         stroke=\"{BAND_STROKE}\" stroke-width=\"0.5\"/>\
         <text x=\"{}\" y=\"25\">min–max</text>\
         <line x1=\"{}\" y1=\"21\" x2=\"{}\" y2=\"21\" stroke=\"{LINE_STROKE}\" stroke-width=\"1.5\"/>\
         <text x=\"{}\" y=\"25\">first → last of each bucket</text></g>",
        x + 28.0,
        x + 92.0,
        x + 114.0,
        x + 120.0,
    );
}

/// One field: its name, grid and ticks, the band, the line, and a frame around the plot.
fn panel(out: &mut String, field: &FieldBuckets, picture: &Picture<'_>, top_px: f64) {
    let plot = Plot {
        left: PLOT_LEFT_PX,
        right: PLOT_RIGHT_PX,
        top: top_px + PLOT_TOP_PX,
        bottom: top_px + PLOT_BOTTOM_PX,
    };
    let n_buckets = field.buckets.len();
    let _ = writeln!(
        out,
        "<text x=\"{}\" y=\"{:.1}\"><tspan font-size=\"13\" font-weight=\"bold\">{}</tspan>\
         <tspan fill=\"{TEXT_MUTED}\" dx=\"8\">{n_buckets} bucket{}</tspan></text>",
        plot.left,
        top_px + 20.0,
        escape(&field.field),
        if n_buckets == 1 { "" } else { "s" },
    );
    let (Some(leftmost), Some(rightmost)) = (field.buckets.first(), field.buckets.last()) else {
        axis_name(out, &plot, &picture.axis_name, None);
        let _ = writeln!(
            out,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"{TEXT_MUTED}\">no rows in this range</text>",
            f64::midpoint(plot.left, plot.right),
            f64::midpoint(plot.top, plot.bottom)
        );
        frame(out, &plot);
        return;
    };
    let x = AxisScale::new(axis_extent(&field.buckets, picture.survey.span));
    let x_ticks = x.ticks(plot.width());
    let y = ValueScale::new(value_extent(&field.buckets), plot.height());
    grid(out, &plot, &x, &x_ticks, &y);
    axis_name(out, &plot, &picture.axis_name, x_ticks.offset);
    // Out through the maxima and back through the minima, closed at the very first and very
    // last points, so the band spans what the line spans.
    let band: Vec<Point> = std::iter::once(leftmost.first)
        .chain(field.buckets.iter().map(|b| b.max))
        .chain(std::iter::once(rightmost.last))
        .chain(field.buckets.iter().rev().map(|b| b.min))
        .collect();
    let _ = writeln!(
        out,
        "<polygon points=\"{}\" fill=\"{BAND_FILL}\" fill-opacity=\"0.75\" stroke=\"{BAND_STROKE}\" \
         stroke-width=\"0.6\" stroke-linejoin=\"round\"/>",
        path_points(&band, &plot, &x, &y)
    );
    let line: Vec<Point> = field
        .buckets
        .iter()
        .flat_map(|b| [b.first, b.last])
        .collect();
    let _ = writeln!(
        out,
        "<polyline points=\"{}\" fill=\"none\" stroke=\"{LINE_STROKE}\" stroke-width=\"1.2\" \
         stroke-linejoin=\"round\"/>",
        path_points(&line, &plot, &x, &y)
    );
    if n_buckets <= DOTS_BUCKETS_MAX {
        let _ = write!(out, "<g fill=\"{LINE_STROKE}\">");
        for point in &line {
            let (px, py) = plot.place(point, &x, &y);
            let _ = write!(out, "<circle cx=\"{px:.1}\" cy=\"{py:.1}\" r=\"2\"/>");
        }
        out.push_str("</g>\n");
    }
    frame(out, &plot);
}

/// The axis field's name under the plot's right end, with the offset the tick labels are
/// relative to, if any (`t − 18446744073709550000 →`).
fn axis_name(out: &mut String, plot: &Plot, name: &str, offset: Option<u64>) {
    let offset = offset.map_or_else(String::new, |o| format!(" − {o}"));
    let _ = writeln!(
        out,
        "<text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\" fill=\"{TEXT_MUTED}\">{}{offset} →</text>",
        plot.right,
        plot.bottom + 30.0,
        escape(name)
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

fn path_points(points: &[Point], plot: &Plot, x: &AxisScale, y: &ValueScale) -> String {
    let mut text = String::with_capacity(points.len() * 14);
    for (idx, point) in points.iter().enumerate() {
        let (px, py) = plot.place(point, x, y);
        if idx > 0 {
            text.push(' ');
        }
        let _ = write!(text, "{px:.1},{py:.1}");
    }
    text
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
        let px = plot.x(x.fraction(axis));
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
        let px = plot.x(x.fraction(*axis));
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
            plot.left - 7.0,
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

/// Axis coordinates (u64) to fractions of the plot's width. Differences are taken in integers,
/// so an axis near 2^64 loses nothing before it is scaled; a zero-width span centres.
#[derive(Debug)]
struct AxisScale {
    lo: u64,
    hi: u64,
}

impl AxisScale {
    fn new([lo, hi]: [u64; 2]) -> AxisScale {
        debug_assert!(lo <= hi);
        AxisScale { lo, hi }
    }

    fn fraction(&self, axis: u64) -> f64 {
        let width = self.hi - self.lo;
        if width == 0 {
            return 0.5;
        }
        let offset = axis.clamp(self.lo, self.hi) - self.lo;
        offset as f64 / width as f64
    }

    /// Round axis values inside the span, about `X_TICK_SPACING_PX` apart, with their labels.
    /// Where whole values would be long or would not fit between ticks (a narrow window of a
    /// huge axis, such as nanosecond timestamps), the labels count from a round offset below the
    /// span instead.
    fn ticks(&self, width_px: f64) -> AxisTicks {
        let target = (width_px / X_TICK_SPACING_PX).max(2.0);
        let width = self.hi - self.lo;
        if width == 0 {
            return AxisTicks {
                ticks: vec![(self.lo, axis_label(self.lo, 1))],
                offset: None,
            };
        }
        let step = integer_step(width as f64 / target);
        let first = u128::from(self.lo).div_ceil(step) * step;
        let values: Vec<u64> = (0..TICKS_MAX as u128)
            .map(|k| first + k * step)
            .take_while(|&tick| tick <= u128::from(self.hi))
            .filter_map(|tick| u64::try_from(tick).ok())
            .collect();
        let labelled = |offset: u64| -> Vec<(u64, String)> {
            values
                .iter()
                .map(|&tick| (tick, axis_label(tick - offset, step)))
                .collect()
        };
        let ticks = labelled(0);
        let spacing_px = step as f64 / width as f64 * width_px;
        let widest = ticks.iter().map(|(_, l)| l.len()).max().unwrap_or(0);
        let fits = widest as f64 * LABEL_CHAR_PX + LABEL_GAP_PX <= spacing_px;
        if fits && widest <= LABEL_CHARS_MAX {
            return AxisTicks {
                ticks,
                offset: None,
            };
        }
        // The lowest multiple of a power of ten above the width: labels count up from it.
        let mut power: u128 = 10;
        while power <= u128::from(width) {
            power *= 10;
        }
        let offset = u64::try_from(u128::from(self.lo) / power * power).unwrap_or(0);
        let relative = labelled(offset);
        let widest_relative = relative.iter().map(|(_, l)| l.len()).max().unwrap_or(0);
        if offset > 0 && widest_relative < widest {
            AxisTicks {
                ticks: relative,
                offset: Some(offset),
            }
        } else {
            AxisTicks {
                ticks,
                offset: None,
            }
        }
    }
}

/// Axis ticks and their labels; with an offset, each label is `axis - offset`.
#[derive(Debug)]
struct AxisTicks {
    ticks: Vec<(u64, String)>,
    offset: Option<u64>,
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
    if !(raw.is_finite() && raw > 0.0) {
        return 1.0;
    }
    let exponent = raw.log10().floor();
    let magnitude = 10f64.powf(exponent);
    let residual = raw / magnitude;
    // Rounding in log10/powf can leave `residual` a hair above a nice number: allow for it.
    let nice = if residual <= 1.0 + 1e-9 {
        1.0
    } else if residual <= 2.0 + 1e-9 {
        2.0
    } else if residual <= 5.0 + 1e-9 {
        5.0
    } else {
        10.0
    };
    nice * magnitude
}

/// An axis tick's label: the value with an SI suffix (k, M, G, T, P, E) when the step is a
/// whole multiple of it, so `40000000` with a step of `20000000` reads `40M`.
fn axis_label(value: u64, step: u128) -> String {
    const SUFFIXES: [&str; 7] = ["", "k", "M", "G", "T", "P", "E"];
    let mut power = 0;
    let mut unit: u128 = 1;
    while power + 1 < SUFFIXES.len() && step % (unit * 1000) == 0 {
        unit *= 1000;
        power += 1;
    }
    if value == 0 {
        return "0".to_owned();
    }
    format!("{}{}", u128::from(value) / unit, SUFFIXES[power])
}

/// Field values (as f64) to fractions of the plot's height, over a span widened to whole ticks.
#[derive(Debug)]
struct ValueScale {
    lo: f64,
    hi: f64,
    ticks: Vec<(f64, String)>,
}

impl ValueScale {
    fn new([lo, hi]: [f64; 2], height_px: f64) -> ValueScale {
        let (lo, hi) = if lo < hi { (lo, hi) } else { flat_span(lo) };
        let target = (height_px / Y_TICK_SPACING_PX).max(2.0);
        // Halves, so that `hi - lo` cannot overflow for values near ±f64::MAX.
        let step = nice_step((hi / 2.0 - lo / 2.0) / target * 2.0);
        let nice_lo = (lo / step).floor() * step;
        let nice_hi = (hi / step).ceil() * step;
        let (lo, hi) = if nice_lo.is_finite() && nice_hi.is_finite() && nice_lo < nice_hi {
            (nice_lo, nice_hi)
        } else {
            (lo, hi)
        };
        let first = (lo / step).ceil();
        let ticks = (0..TICKS_MAX)
            .map(|k| (first + k as f64) * step)
            .take_while(|&v| v <= hi + step * 1e-9)
            .filter(|v| v.is_finite())
            .map(|v| {
                // `-0` and a rounding residue near zero both print as `0`.
                let v = if v.abs() < step * 1e-9 { 0.0 } else { v };
                (v, value_label(v, step))
            })
            .collect();
        ValueScale { lo, hi, ticks }
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

/// A value tick's label, with as many decimals as the step needs (`0.5` steps: `1.5`); very large
/// or very small steps in scientific notation.
fn value_label(value: f64, step: f64) -> String {
    let step_exponent = (step.log10() + 1e-9).floor();
    if value == 0.0 {
        return "0".to_owned();
    }
    if (-6.0..6.0).contains(&step_exponent) && value.abs() < 1e9 {
        #[expect(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "the exponent lies in -6..0 here, so the decimals are 0..=6"
        )]
        let decimals = (-step_exponent).max(0.0) as usize;
        format!("{value:.decimals$}")
    } else {
        let value_exponent = (value.abs().log10() + 1e-9).floor();
        #[expect(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "clamped to 0..=15 first"
        )]
        let decimals = (value_exponent - step_exponent).clamp(0.0, 15.0) as usize;
        format!("{value:.decimals$e}")
    }
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
        render(&Picture {
            title: "s <&> \"t\"".to_owned(),
            subtitle: "sub".to_owned(),
            axis_name: "t".to_owned(),
            survey,
        })
    }

    /// The numbers inside every `points="..."` attribute.
    fn coordinates(svg: &str) -> Vec<f64> {
        svg.split("points=\"")
            .skip(1)
            .flat_map(|rest| {
                rest.split('"')
                    .next()
                    .unwrap()
                    .split([' ', ','])
                    .map(|n| n.parse::<f64>().unwrap())
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    fn assert_well_formed(svg: &str, n_fields: usize) {
        assert!(svg.starts_with("<svg"), "{svg}");
        assert!(svg.trim_end().ends_with("</svg>"), "{svg}");
        assert!(!svg.contains("NaN") && !svg.contains("inf"), "{svg}");
        assert_eq!(svg.matches("<polygon").count(), n_fields, "{svg}");
        assert_eq!(svg.matches("<polyline").count(), n_fields, "{svg}");
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

        assert_eq!(value_label(0.000_25, 0.000_05), "0.00025");
        assert_eq!(value_label(2e12, 1e12), "2e12");
        assert_eq!(value_label(-1.5e-9, 5e-10), "-1.5e-9");
    }

    #[test]
    fn axis_ticks_are_round_and_labelled_with_si_suffixes() {
        let labels = |lo, hi| {
            let ticks = AxisScale::new([lo, hi]).ticks(800.0);
            let labels: Vec<String> = ticks.ticks.into_iter().map(|(_, l)| l).collect();
            (labels, ticks.offset)
        };
        let (ticks, offset) = labels(0, 99_999_000);
        assert_eq!(ticks, ["0", "20M", "40M", "60M", "80M"]);
        assert_eq!(offset, None);
        let (ticks, offset) = labels(1_000, 1_950);
        assert_eq!(ticks, ["1000", "1200", "1400", "1600", "1800"]);
        assert_eq!(offset, None);
        // A second's window of nanosecond timestamps: whole values would not fit, so the labels
        // count from a round offset.
        let (ticks, offset) = labels(1_700_000_000_123_456_789, 1_700_000_001_123_456_789);
        assert_eq!(offset, Some(1_700_000_000_000_000_000));
        assert_eq!(ticks[0], "200M");
        assert!(ticks.iter().all(|l| l.len() <= 5), "{ticks:?}");
        assert_eq!(axis_label(45_000, 5_000), "45k");
        assert_eq!(axis_label(45_500, 500), "45500");
        assert_eq!(axis_label(0, 1_000_000), "0");
    }

    #[test]
    fn huge_u64_axes_stay_finite_and_in_range() {
        for [lo, hi] in [
            [0, u64::MAX],
            [u64::MAX - 10, u64::MAX],
            [u64::MAX, u64::MAX],
        ] {
            let scale = AxisScale::new([lo, hi]);
            let ticks = scale.ticks(800.0).ticks;
            assert!(!ticks.is_empty() && ticks.len() <= TICKS_MAX, "{ticks:?}");
            for (tick, _) in &ticks {
                assert!((lo..=hi).contains(tick));
                assert!((0.0..=1.0).contains(&scale.fraction(*tick)));
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
            svg.matches("<polygon").count(),
            1,
            "the empty field has no band"
        );
        // The band starts at the first point (axis 0), goes out through the maxima (60, 120) to
        // the last point (190) and back through the minima (150, 40): each point at its own
        // axis coordinate.
        let band = svg.split("<polygon points=\"").nth(1).unwrap();
        let xs: Vec<f64> = band
            .split('"')
            .next()
            .unwrap()
            .split(' ')
            .map(|p| p.split(',').next().unwrap().parse().unwrap())
            .collect();
        let x_of = |axis: u64| PLOT_LEFT_PX + axis as f64 / 199.0 * (PLOT_RIGHT_PX - PLOT_LEFT_PX);
        let expected = [x_of(0), x_of(60), x_of(120), x_of(190), x_of(150), x_of(40)];
        for (got, want) in xs.iter().zip(expected) {
            assert!((got - want).abs() < 0.06, "{xs:?} vs {expected:?}");
        }
        assert_eq!(xs.len(), expected.len());
    }

    #[test]
    fn escape_replaces_the_xml_specials() {
        assert_eq!(escape("a&b<c>d\"e'f"), "a&amp;b&lt;c&gt;d&quot;e&apos;f");
        assert_eq!(escape("plain µs"), "plain µs");
    }
}
