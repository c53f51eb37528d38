//! A time axis (#48): its unit recorded in the declaration (manifest format 4) and checked on
//! reopen, a store an earlier build wrote upgraded to format 4 only when a time axis is declared
//! in it, and reads that select rows by axis range as well as by position range.

use std::ops::Bound;

use strata::segment::vfs::{SimFs, Vfs};
use strata::{Config, EngineError, FieldKind, Row, Store, Stream, StreamDecl, TimeUnit, Value};

use crate::support::sim;

fn logger(unit: Option<TimeUnit>) -> StreamDecl {
    let stream = Stream::new("logger")
        .field("sensor", FieldKind::Str)
        .field("t", FieldKind::U64)
        .field("v", FieldKind::F64)
        .track(["sensor"]);
    match unit {
        Some(unit) => stream.time_axis("t", unit),
        None => stream.axis("t"),
    }
    .build()
    .unwrap()
}

fn plain() -> StreamDecl {
    Stream::new("plain")
        .field("n", FieldKind::U64)
        .build()
        .unwrap()
}

/// The format the manifest's current generation's header names, and its generation.
fn manifest_format(fs: &SimFs) -> (u32, u32) {
    let generations = strata::segment::manifest_generations(fs).unwrap();
    let generation = *generations.last().unwrap();
    let bytes = strata::segment::read_manifest(fs, generation).unwrap();
    (generation, strata::index::check_header(&bytes).unwrap())
}

#[test]
fn a_time_unit_is_recorded_and_checked_on_reopen() {
    let fs = SimFs::new();
    let timed = logger(Some(TimeUnit::Micros));
    drop(Store::create_in(sim(&fs), Config::default(), std::slice::from_ref(&timed)).unwrap());
    assert_eq!(manifest_format(&fs), (1, 4));
    let store = Store::open_in(sim(&fs), Config::default(), &[]).unwrap();
    assert_eq!(
        store.declaration("logger").unwrap().time,
        Some(TimeUnit::Micros)
    );
    drop(store);
    for other in [Some(TimeUnit::Nanos), None] {
        let refused = Store::open_in(sim(&fs), Config::default(), &[logger(other)]).unwrap_err();
        assert!(
            matches!(&refused, EngineError::Declaration { stream, reason }
                if stream == "logger" && reason.contains("(time, us)")),
            "{refused}"
        );
    }
}

/// A store whose manifest an earlier build wrote (format 3, here made by rewriting the header
/// of a store holding no time axis) keeps its format while nothing needs a newer one; declaring
/// a time axis rewrites it as a format-4 generation holding everything it held.
#[test]
fn declaring_a_time_axis_in_an_older_manifest_rewrites_it_in_format_4() {
    let fs = SimFs::new();
    let mut store =
        Store::create_in(sim(&fs), Config::default(), &[plain(), logger(None)]).unwrap();
    store.publish("plain", 1, &[vec![Value::U64(7)]]).unwrap();
    store.seal().unwrap();
    drop(store);
    let mut bytes = strata::segment::read_manifest(&fs, 1).unwrap();
    bytes[8..12].copy_from_slice(&3u32.to_le_bytes());
    fs.remove("manifest-000001").unwrap();
    strata::segment::write_two_phase(&fs, "", "manifest-000001", &bytes).unwrap();
    assert_eq!(manifest_format(&fs), (1, 3));

    // A plain declaration appends to the format-3 generation as before.
    let other = Stream::new("other")
        .field("n", FieldKind::U64)
        .build()
        .unwrap();
    drop(Store::open_in(sim(&fs), Config::default(), std::slice::from_ref(&other)).unwrap());
    assert_eq!(manifest_format(&fs), (1, 3));

    let timed = Stream::new("timed")
        .field("t", FieldKind::U64)
        .field("v", FieldKind::F64)
        .time_axis("t", TimeUnit::Millis)
        .build()
        .unwrap();
    drop(Store::open_in(sim(&fs), Config::default(), std::slice::from_ref(&timed)).unwrap());
    assert_eq!(manifest_format(&fs), (2, 4));
    let store = Store::open_in(sim(&fs), Config::default(), &[]).unwrap();
    assert_eq!(
        store.declaration("timed").unwrap().time,
        Some(TimeUnit::Millis)
    );
    assert_eq!(store.declaration("logger").unwrap().time, None);
    assert_eq!(
        store.query("plain", &[], ..).unwrap()[0].values,
        vec![Value::U64(7)]
    );
}

fn row(sensor: &str, t: u64, v: f64) -> Row {
    vec![Value::Str(sensor.into()), Value::U64(t), Value::F64(v)]
}

/// Three sensors over 40 barriers, each its own axis spacing: the rows whose axis lies in a
/// range, read by axis, are the rows a query of every position holds there, in the same order.
#[test]
fn an_axis_range_selects_the_rows_whose_axis_lies_in_it() {
    let fs = SimFs::new();
    let decl = logger(Some(TimeUnit::Seconds));
    let mut store = Store::create_in(sim(&fs), Config::default(), &[decl]).unwrap();
    for position in 0..40u64 {
        let rows = [
            row("a", 10 * position, position as f64),
            row("b", 10 * position + 5, -(position as f64)),
            row("c", 3 * position, 0.5),
        ];
        store.publish("logger", position, &rows).unwrap();
        if position % 7 == 6 {
            store.seal().unwrap();
        }
    }
    store.seal().unwrap();
    let all = store.query("logger", &[], ..).unwrap();
    let axis_of = |row: &strata::StoredRow| match row.values[1] {
        Value::U64(t) => t,
        ref other => panic!("axis {other:?}"),
    };
    for (lo, hi) in [
        (0, 0),
        (35, 120),
        (100, 100),
        (117, 118),
        (390, 1000),
        (401, 500),
    ] {
        let expected: Vec<_> = all
            .iter()
            .filter(|row| (lo..=hi).contains(&axis_of(row)))
            .cloned()
            .collect();
        let got: Vec<_> = store
            .query_iter_within("logger", &[], .., lo..=hi)
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(got, expected, "axis {lo}..={hi}");
        // With a position range too: the rows in both.
        let got: Vec<_> = store
            .query_iter_within("logger", &["b"], 5..=20, lo..=hi)
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let both: Vec<_> = expected
            .iter()
            .filter(|row| {
                (5..=20).contains(&row.position) && row.values[0] == Value::Str("b".into())
            })
            .cloned()
            .collect();
        assert_eq!(got, both, "axis {lo}..={hi}, positions 5..=20 of b");
    }
    // An unbounded axis range is the query.
    let whole: Vec<_> = store
        .query_iter_within(
            "logger",
            &[],
            3..=9,
            (Bound::<u64>::Unbounded, Bound::Unbounded),
        )
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(whole, store.query("logger", &[], 3..=9).unwrap());
    // Backwards is refused as any range is.
    assert!(matches!(
        store.query_iter_within("logger", &[], .., (Bound::Included(9), Bound::Included(3))),
        Err(EngineError::InvertedRange {
            start: 9,
            end: 3,
            ..
        })
    ));
}

#[test]
fn an_axis_range_is_checked_against_the_floors_and_needs_an_axis() {
    let fs = SimFs::new();
    let mut store =
        Store::create_in(sim(&fs), Config::default(), &[logger(None), plain()]).unwrap();
    for position in 0..20u64 {
        store
            .publish("logger", position, &[row("a", 100 + position, 1.0)])
            .unwrap();
        store
            .publish("plain", position, &[vec![Value::U64(position)]])
            .unwrap();
        store.seal().unwrap();
    }
    store.trim_to("logger", 9).unwrap();
    // Beneath the floor (axis 110): refused, in axis values.
    let refused = store
        .query_iter_within("logger", &[], .., 105..=115)
        .unwrap_err();
    assert!(
        matches!(&refused, EngineError::Floor { floor: 110, unit, .. } if *unit == "axis value"),
        "{refused}"
    );
    // At or above it: every row there, none retired.
    let rows: Vec<u64> = store
        .query_iter_within("logger", &[], .., 110..=112)
        .unwrap()
        .map(|row| row.unwrap().position)
        .collect();
    assert_eq!(rows, vec![10, 11, 12]);
    let refused = store
        .query_iter_within("plain", &[], .., 1..=2)
        .unwrap_err();
    assert!(
        refused.to_string().contains("declares no axis"),
        "{refused}"
    );
}
