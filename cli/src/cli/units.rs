//! Axis amounts in a reader's units. A stream does not record the unit of its axis; where the
//! command knows it (the demo's `t` is in microseconds), a time axis is written in the largest of
//! ns, µs, ms and s that keeps the number exact (`512 ms`, `99.999 s`). Any other axis is its raw
//! number, grouped (`512,000`), followed by its unit if one is known.

use super::group_digits;

/// Time units and their size in nanoseconds, smallest first.
const TIME_UNITS: [(&str, u128); 4] = [
    ("ns", 1),
    ("µs", 1_000),
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
];

/// A unit to write axis amounts in: its name and how many axis units one of it holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Scale<'a> {
    pub name: Option<&'a str>,
    pub axis_units: u128,
}

/// The size of a time unit in nanoseconds; `None` for a unit that is not one of time.
fn nanos(unit: &str) -> Option<u128> {
    TIME_UNITS
        .iter()
        .find(|(name, _)| *name == unit)
        .map(|&(_, ns)| ns)
}

/// Whether `unit` is one of the time units written in larger ones.
pub fn is_time(unit: &str) -> bool {
    nanos(unit).is_some()
}

/// The scales an axis in `unit` can be written in, smallest first: for a time unit, it and the
/// larger time units; otherwise only the unit itself (or none).
fn scales(unit: Option<&str>) -> Vec<Scale<'_>> {
    let known = unit.and_then(|u| Some((u, nanos(u)?)));
    match known {
        Some((_, unit_ns)) => TIME_UNITS
            .iter()
            .filter(|&&(_, ns)| ns >= unit_ns)
            .map(|&(name, ns)| Scale {
                name: Some(name),
                axis_units: ns / unit_ns,
            })
            .collect(),
        None => vec![Scale {
            name: unit,
            axis_units: 1,
        }],
    }
}

/// The largest scale no bigger than `value` (so the number written is at least 1), or the
/// smallest for a value below all of them.
pub fn scale_for(value: u128, unit: Option<&str>) -> Scale<'_> {
    let all = scales(unit);
    let smallest = all[0];
    all.into_iter()
        .rev()
        .find(|s| s.axis_units <= value)
        .unwrap_or(smallest)
}

/// The largest scale that divides `step` exactly, so ticks `step` apart read as whole numbers.
pub fn scale_dividing(step: u128, unit: Option<&str>) -> Scale<'_> {
    let all = scales(unit);
    let smallest = all[0];
    all.into_iter()
        .rev()
        .find(|s| step.is_multiple_of(s.axis_units))
        .unwrap_or(smallest)
}

/// `value` axis units in `scale`, exactly: a whole part grouped, then as many decimals as the
/// scale's size needs, trailing zeros dropped (`99.999`, `512`).
pub fn number_in(value: u128, scale: Scale<'_>) -> String {
    let whole = group_digits(&(value / scale.axis_units).to_string());
    let rest = value % scale.axis_units;
    if rest == 0 {
        return whole;
    }
    let width = scale.axis_units.to_string().len() - 1;
    let decimals = format!("{rest:0width$}");
    format!("{whole}.{}", decimals.trim_end_matches('0'))
}

/// `value` with the scale's name after it, if it has one.
fn with_name(number: String, scale: Scale<'_>) -> String {
    match scale.name {
        Some(name) if !name.is_empty() => format!("{number} {name}"),
        _ => number,
    }
}

/// An axis amount (a width, a distance) in words: `512 ms`, `2,048 µs`, `512,000`.
pub fn amount(value: u128, unit: Option<&str>) -> String {
    let scale = scale_for(value, unit);
    with_name(number_in(value, scale), scale)
}

/// An axis range, both ends in the scale of the higher one: `0 .. 99.999 s`, `0 .. 897`.
pub fn range(lo: u64, hi: u64, unit: Option<&str>) -> String {
    let scale = scale_for(u128::from(hi), unit);
    with_name(
        format!(
            "{} .. {}",
            number_in(u128::from(lo), scale),
            number_in(u128::from(hi), scale)
        ),
        scale,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_time_axis_is_written_in_the_largest_exact_unit() {
        assert_eq!(amount(512_000, Some("µs")), "512 ms");
        assert_eq!(amount(32_768_000, Some("µs")), "32.768 s");
        assert_eq!(amount(2_048, Some("µs")), "2.048 ms");
        assert_eq!(amount(999, Some("µs")), "999 µs");
        assert_eq!(amount(1_000_000_000, Some("ns")), "1 s");
        assert_eq!(amount(7_200, Some("s")), "7,200 s");
        assert_eq!(range(0, 99_999_000, Some("µs")), "0 .. 99.999 s");
        assert_eq!(range(13, 2_000, Some("µs")), "0.013 .. 2 ms");
    }

    #[test]
    fn an_axis_of_unknown_unit_is_its_grouped_number() {
        assert_eq!(amount(512_000, None), "512,000");
        assert_eq!(range(0, 897, None), "0 .. 897");
        assert_eq!(amount(40, Some("m")), "40 m");
        assert_eq!(
            amount(u128::from(u64::MAX), None),
            "18,446,744,073,709,551,615"
        );
    }

    #[test]
    fn tick_steps_pick_the_largest_unit_that_divides_them() {
        assert_eq!(scale_dividing(20_000_000, Some("µs")).name, Some("s"));
        assert_eq!(scale_dividing(500_000, Some("µs")).name, Some("ms"));
        assert_eq!(scale_dividing(250, Some("µs")).name, Some("µs"));
        assert_eq!(scale_dividing(20_000_000, None).axis_units, 1);
    }
}
