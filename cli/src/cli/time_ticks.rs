//! Ticks for a time axis (#48): dates and times at round steps of the calendar (1, 2, 5, 10,
//! 15 and 30 seconds and minutes, 1, 2, 3, 6 and 12 hours, days), or of a second's decimal
//! fractions below one, each at a whole multiple of its step since the epoch so they fall on
//! round times in UTC. A label is as long as its step needs (`2026-12-01` for days, `00:05` for
//! minutes, `00:00:10` for seconds, `00:00:00.250` below), and the date is said once: in the
//! caption while every tick lies in one day, else on each tick where the day changes.

use chrono::{DateTime, Utc};
use strata::TimeUnit;

const NS_PER_S: u128 = 1_000_000_000;
const DAY_NS: u128 = 86_400 * NS_PER_S;

/// Steps of at least a second, in seconds.
const CALENDAR_STEPS_S: [u128; 20] = [
    1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10_800, 21_600, 43_200, 86_400,
    172_800, 604_800,
];

/// Time ticks over `[lo, hi]` (axis units of `unit`): the tick values (axis units), their labels,
/// and the caption's words (`UTC, 2026-12-01`), for a plot `width_px` wide where a label takes
/// `char_px` a character plus `gap_px`, and ticks stand at least `spacing_px` apart.
pub fn ticks(
    [lo, hi]: [u64; 2],
    unit: TimeUnit,
    width_px: f64,
    spacing_px: f64,
    char_px: f64,
    gap_px: f64,
) -> (Vec<(u128, String)>, String) {
    let per_unit_ns = NS_PER_S / u128::from(unit.per_second());
    let (lo_ns, hi_ns) = (u128::from(lo) * per_unit_ns, u128::from(hi) * per_unit_ns);
    let span_ns = (hi_ns - lo_ns).max(per_unit_ns);
    let step_ns = candidates(per_unit_ns)
        .into_iter()
        .find(|&step| {
            let n = (span_ns / step + 1) as f64;
            let label = label_len(step) as f64 * char_px + gap_px;
            width_px / n >= spacing_px.max(label)
        })
        .unwrap_or_else(|| DAY_NS * span_ns.div_ceil(DAY_NS).max(1));
    let first = lo_ns / step_ns * step_ns;
    let last = hi_ns.div_ceil(step_ns) * step_ns;
    let values: Vec<u128> = (0..=(last - first) / step_ns)
        .map(|k| first + k * step_ns)
        .collect();
    let one_day = first / DAY_NS == last / DAY_NS
        || (last % DAY_NS == 0 && first / DAY_NS + 1 == last / DAY_NS);
    let mut labels = Vec::with_capacity(values.len());
    let mut day_before = None;
    for &tick in &values {
        let day = tick / DAY_NS;
        let with_date = step_ns < DAY_NS && !one_day && day_before != Some(day);
        labels.push(label(tick, step_ns, with_date));
        day_before = Some(day);
    }
    let caption = if step_ns < DAY_NS && one_day {
        format!("UTC, {}", date_of(first))
    } else {
        "UTC".to_owned()
    };
    let ticks = values
        .into_iter()
        .zip(labels)
        .map(|(tick, label)| (tick / per_unit_ns, label))
        .collect();
    (ticks, caption)
}

/// Every step a tick may take, smallest first: a second's decimal fractions no finer than the
/// unit, then the calendar's, then days in 1, 2, 5 × 10^k.
fn candidates(per_unit_ns: u128) -> Vec<u128> {
    let mut steps = Vec::new();
    let mut decade = 1u128;
    while decade < NS_PER_S {
        for m in [1, 2, 5] {
            let step = m * decade;
            if step >= per_unit_ns && step < NS_PER_S && step.is_multiple_of(per_unit_ns) {
                steps.push(step);
            }
        }
        decade *= 10;
    }
    steps.extend(CALENDAR_STEPS_S.iter().map(|s| s * NS_PER_S));
    let mut days = 10u128;
    while days < 1_000_000 {
        steps.extend([days, 2 * days, 5 * days].map(|d| d * DAY_NS));
        days *= 10;
    }
    steps
}

/// Characters of a label at `step` (without a date prefix).
fn label_len(step_ns: u128) -> usize {
    if step_ns >= DAY_NS {
        10
    } else if step_ns.is_multiple_of(60 * NS_PER_S) {
        5
    } else if step_ns.is_multiple_of(NS_PER_S) {
        8
    } else {
        9 + fraction_digits(step_ns)
    }
}

/// Decimal digits a sub-second step needs: 1 for 500 ms, 3 for 250 ms, 6 for 10 µs.
fn fraction_digits(step_ns: u128) -> usize {
    let mut digits = 9;
    let mut step = step_ns;
    while digits > 0 && step.is_multiple_of(10) {
        step /= 10;
        digits -= 1;
    }
    digits
}

fn time_of(tick_ns: u128) -> Option<DateTime<Utc>> {
    let secs = i64::try_from(tick_ns / NS_PER_S).ok()?;
    let nanos = u32::try_from(tick_ns % NS_PER_S).ok()?;
    DateTime::<Utc>::from_timestamp(secs, nanos)
}

fn date_of(tick_ns: u128) -> String {
    time_of(tick_ns).map_or_else(|| tick_ns.to_string(), |t| t.format("%Y-%m-%d").to_string())
}

/// A tick's label at `step`, with its date before it where `with_date`.
fn label(tick_ns: u128, step_ns: u128, with_date: bool) -> String {
    let Some(time) = time_of(tick_ns) else {
        return tick_ns.to_string();
    };
    if step_ns >= DAY_NS {
        return time.format("%Y-%m-%d").to_string();
    }
    let clock = if step_ns.is_multiple_of(60 * NS_PER_S) {
        time.format("%H:%M").to_string()
    } else if step_ns.is_multiple_of(NS_PER_S) {
        time.format("%H:%M:%S").to_string()
    } else {
        let digits = fraction_digits(step_ns);
        let fraction = format!("{:09}", tick_ns % NS_PER_S);
        format!("{}.{}", time.format("%H:%M:%S"), &fraction[..digits])
    };
    if with_date {
        format!("{} {clock}", time.format("%m-%d"))
    } else {
        clock
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2026-12-01T00:00:00Z in µs (Python: `datetime(2026, 12, 1, tzinfo=timezone.utc)`).
    const DEC_1_US: u64 = 1_796_083_200_000_000;

    fn labels(span: [u64; 2], unit: TimeUnit) -> (Vec<String>, String) {
        let (ticks, caption) = ticks(span, unit, 800.0, 90.0, 7.0, 12.0);
        (ticks.into_iter().map(|(_, l)| l).collect(), caption)
    }

    #[test]
    fn ten_seconds_of_microseconds_tick_every_second_or_two() {
        let (labels, caption) = labels([DEC_1_US, DEC_1_US + 10_000_000], TimeUnit::Micros);
        assert_eq!(caption, "UTC, 2026-12-01");
        assert_eq!(
            labels,
            [
                "00:00:00", "00:00:02", "00:00:04", "00:00:06", "00:00:08", "00:00:10"
            ]
        );
    }

    #[test]
    fn an_hour_ticks_in_minutes_and_a_month_in_days() {
        let (hour, _) = labels([1_796_083_200, 1_796_086_800], TimeUnit::Seconds);
        assert_eq!(
            hour,
            [
                "00:00", "00:10", "00:20", "00:30", "00:40", "00:50", "01:00"
            ]
        );
        let (month, caption) = labels([1_796_083_200_000, 1_798_761_600_000], TimeUnit::Millis);
        assert_eq!(caption, "UTC");
        assert_eq!(month.first().map(String::as_str), Some("2026-11-26"));
        assert!(month.iter().all(|l| l.len() == 10), "{month:?}");
    }

    #[test]
    fn across_midnight_the_date_is_on_the_tick_where_the_day_changes() {
        // 23:00 to 01:00 the next day.
        let lo = DEC_1_US - 3_600_000_000;
        let (labels, caption) = labels([lo, DEC_1_US + 3_600_000_000], TimeUnit::Micros);
        assert_eq!(caption, "UTC");
        assert_eq!(labels.first().map(String::as_str), Some("11-30 23:00"));
        assert!(labels.contains(&"12-01 00:00".to_owned()), "{labels:?}");
        assert!(labels.contains(&"00:30".to_owned()), "{labels:?}");
    }

    #[test]
    fn a_millisecond_window_ticks_in_fractions() {
        let (labels, _) = labels([DEC_1_US, DEC_1_US + 1_000], TimeUnit::Micros);
        assert_eq!(labels.first().map(String::as_str), Some("00:00:00.0000"));
        assert_eq!(labels.last().map(String::as_str), Some("00:00:00.0010"));
    }
}
