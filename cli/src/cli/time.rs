//! A time axis (#48) in words: RFC 3339 in UTC for what the command line prints, and RFC 3339
//! or the integer for what it reads (every axis argument, CSV ingest). The store keeps the axis
//! a `u64` counting the declared unit since the Unix epoch; only this face turns it into text.
//!
//! Printed times carry the unit's digits of fraction, always (`2026-12-01T00:00:00.250000Z` for
//! µs), so that a column of them lines up and reads back exactly. Read times may carry any
//! offset (`+02:00`) and any number of fraction digits: a bound of a range is rounded inward to
//! the unit (`--from` up, `--to` down), so it selects exactly the rows it names; a value to
//! store must be exact in the unit, or it is refused.

use chrono::{DateTime, SecondsFormat, Utc};
use strata::{StreamDecl, TimeUnit};

/// How a time finer than the axis's unit becomes a whole number of units.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Round {
    /// Refused: a value to store.
    Exact,
    /// Up: a range's lower end.
    Up,
    /// Down: a range's upper end.
    Down,
}

/// The unit's name as `units.rs` writes amounts of it: `s`, `ms`, `µs`, `ns`.
pub fn symbol(unit: TimeUnit) -> &'static str {
    match unit {
        TimeUnit::Seconds => "s",
        TimeUnit::Millis => "ms",
        TimeUnit::Nanos => "ns",
        _ => "µs",
    }
}

/// The time axis's unit of `decl`, if its axis is time.
pub fn unit_of(decl: &StreamDecl) -> Option<TimeUnit> {
    decl.time.filter(|_| decl.axis.is_some())
}

/// `value` units since the epoch as RFC 3339 in UTC with the unit's digits of fraction
/// (`2026-12-01T00:00:00.000250Z` for µs); the integer itself past the years chrono knows.
pub fn format(value: u64, unit: TimeUnit) -> String {
    let per_second = unit.per_second();
    let secs = value / per_second;
    let nanos = (value % per_second) * (1_000_000_000 / per_second);
    let digits = match unit {
        TimeUnit::Seconds => SecondsFormat::Secs,
        TimeUnit::Millis => SecondsFormat::Millis,
        TimeUnit::Nanos => SecondsFormat::Nanos,
        _ => SecondsFormat::Micros,
    };
    i64::try_from(secs)
        .ok()
        .and_then(|secs| DateTime::<Utc>::from_timestamp(secs, u32::try_from(nanos).ok()?))
        .map_or_else(
            || value.to_string(),
            |time| time.to_rfc3339_opts(digits, true),
        )
}

/// An axis value of `decl` as text: the integer, or for a time axis RFC 3339 too, rounded as
/// `round` says. The message names what was wrong, not where (the caller adds that).
pub fn parse_axis(text: &str, decl: &StreamDecl, round: Round) -> Result<u64, String> {
    if let Ok(value) = text.parse::<u64>() {
        return Ok(value);
    }
    match unit_of(decl) {
        Some(unit) => parse(text, unit, round),
        None if looks_like_time(text) => Err(format!(
            "{text:?} is a time, but stream {:?} declares its axis a plain u64 (declare it with \
             --time UNIT to read it as time); give the integer",
            decl.id
        )),
        None => Err(format!(
            "{text:?} is not an axis value (a whole number from 0 to 2^64-1)"
        )),
    }
}

/// Whether `text` reads as a date and time, for a message that says so.
fn looks_like_time(text: &str) -> bool {
    DateTime::parse_from_rfc3339(text).is_ok()
}

/// RFC 3339 text as `unit`s since the epoch, rounded as `round` says; before the epoch, or
/// past `u64::MAX` units, is refused.
pub fn parse(text: &str, unit: TimeUnit, round: Round) -> Result<u64, String> {
    let time = DateTime::parse_from_rfc3339(text.trim()).map_err(|e| {
        format!(
            "{text:?} is neither a whole number nor an RFC 3339 time \
             (2026-12-01T00:00:00Z, 2026-12-01T01:00:00.25+01:00): {e}"
        )
    })?;
    let secs = time.timestamp();
    let nanos = u64::from(time.timestamp_subsec_nanos());
    let Ok(secs) = u64::try_from(secs) else {
        return Err(format!(
            "{text:?} is before the Unix epoch (1970-01-01T00:00:00Z), where a time axis starts"
        ));
    };
    let nanos_per_unit = 1_000_000_000 / unit.per_second();
    let (whole, rest) = (nanos / nanos_per_unit, nanos % nanos_per_unit);
    let whole = match (rest, round) {
        (0, _) | (_, Round::Down) => whole,
        (_, Round::Up) => whole + 1,
        (_, Round::Exact) => {
            return Err(format!(
                "{text:?} is finer than the axis's unit ({}): {} digits of fraction at most",
                symbol(unit),
                fraction_digits(unit)
            ));
        }
    };
    secs.checked_mul(unit.per_second())
        .and_then(|units| units.checked_add(whole))
        .ok_or_else(|| {
            format!(
                "{text:?} is past the last time a u64 of {} holds ({})",
                symbol(unit),
                format(u64::MAX, unit)
            )
        })
}

/// Digits of fraction one unit needs: 0, 3, 6, 9.
fn fraction_digits(unit: TimeUnit) -> u32 {
    unit.per_second().ilog10()
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// The civil date of a day count since 1970-01-01, by Howard Hinnant's `civil_from_days`
    /// (proleptic Gregorian): an independent account of what chrono computes.
    fn civil_from_days(days: i64) -> (i64, u32, u32) {
        let z = days + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z.rem_euclid(146_097);
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let y = yoe + era * 400;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let d = u32::try_from(doy - (153 * mp + 2) / 5 + 1).unwrap();
        let m = u32::try_from(if mp < 10 { mp + 3 } else { mp - 9 }).unwrap();
        (if m <= 2 { y + 1 } else { y }, m, d)
    }

    /// RFC 3339 of `value` units since the epoch, worked out without chrono.
    fn independent(value: u64, unit: TimeUnit) -> String {
        let per_second = unit.per_second();
        let secs = value / per_second;
        let fraction = value % per_second;
        let days = i64::try_from(secs / 86_400).unwrap();
        let of_day = secs % 86_400;
        let (y, m, d) = civil_from_days(days);
        let mut text = format!(
            "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}",
            of_day / 3600,
            of_day % 3600 / 60,
            of_day % 60
        );
        let digits = per_second.ilog10() as usize;
        if digits > 0 {
            text = format!("{text}.{fraction:0digits$}");
        }
        text.push('Z');
        text
    }

    fn unit() -> impl Strategy<Value = TimeUnit> {
        proptest::sample::select(TimeUnit::ALL.to_vec())
    }

    /// Up to the year 9999 in every unit (RFC 3339's four-digit years).
    fn value_in(unit: TimeUnit) -> impl Strategy<Value = u64> {
        let last_second = 253_402_300_799u64; // 9999-12-31T23:59:59Z
        0..=last_second.saturating_mul(unit.per_second())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn printing_is_rfc_3339_and_reads_back(
            (unit, value) in unit().prop_flat_map(|u| (Just(u), value_in(u)))
        ) {
            let text = format(value, unit);
            prop_assert_eq!(&text, &independent(value, unit));
            for round in [Round::Exact, Round::Up, Round::Down] {
                prop_assert_eq!(parse(&text, unit, round), Ok(value));
            }
        }

        #[test]
        fn an_offset_names_the_same_instant(
            (unit, value) in unit().prop_flat_map(|u| (Just(u), value_in(u))),
            offset_min in -(23 * 60 + 59)..=(23i64 * 60 + 59),
        ) {
            // The same instant written in local time at `offset_min` east of UTC.
            let secs = i64::try_from(value / unit.per_second()).unwrap() + offset_min * 60;
            prop_assume!((0..253_402_300_800).contains(&secs));
            let shifted = u64::try_from(secs).unwrap() * unit.per_second() + value % unit.per_second();
            let utc = independent(shifted, unit);
            let sign = if offset_min < 0 { '-' } else { '+' };
            let local = format!(
                "{}{sign}{:02}:{:02}",
                utc.trim_end_matches('Z'),
                offset_min.abs() / 60,
                offset_min.abs() % 60
            );
            prop_assert_eq!(parse(&local, unit, Round::Exact), Ok(value));
        }
    }

    #[test]
    fn known_instants() {
        let cases = [
            ("2026-12-01T00:00:00Z", TimeUnit::Seconds, 1_796_083_200),
            (
                "2026-12-01T00:00:10Z",
                TimeUnit::Micros,
                1_796_083_210_000_000,
            ),
            ("1970-01-01T00:00:00.000000001Z", TimeUnit::Nanos, 1),
            (
                "2000-02-29T12:00:00.5+02:00",
                TimeUnit::Millis,
                951_818_400_500,
            ),
        ];
        for (text, unit, value) in cases {
            assert_eq!(parse(text, unit, Round::Exact), Ok(value), "{text}");
        }
        assert_eq!(
            format(1_796_083_210_000_250, TimeUnit::Micros),
            "2026-12-01T00:00:10.000250Z"
        );
    }

    #[test]
    fn a_fraction_finer_than_the_unit_rounds_inward_or_is_refused() {
        let text = "2026-12-01T00:00:00.0015Z";
        assert_eq!(
            parse(text, TimeUnit::Millis, Round::Up),
            Ok(1_796_083_200_002)
        );
        assert_eq!(
            parse(text, TimeUnit::Millis, Round::Down),
            Ok(1_796_083_200_001)
        );
        let refused = parse(text, TimeUnit::Millis, Round::Exact).unwrap_err();
        assert!(
            refused.contains("finer than the axis's unit (ms)"),
            "{refused}"
        );
    }

    #[test]
    fn before_the_epoch_past_u64_and_nonsense_are_refused() {
        let before = parse("1969-12-31T23:59:59Z", TimeUnit::Seconds, Round::Exact).unwrap_err();
        assert!(before.contains("before the Unix epoch"), "{before}");
        let past = parse("2600-01-01T00:00:00Z", TimeUnit::Nanos, Round::Exact).unwrap_err();
        assert!(past.contains("past the last time"), "{past}");
        let nonsense = parse("yesterday", TimeUnit::Seconds, Round::Exact).unwrap_err();
        assert!(
            nonsense.contains("neither a whole number nor an RFC 3339 time"),
            "{nonsense}"
        );
    }
}
