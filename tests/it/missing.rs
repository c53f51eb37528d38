//! Missing values (#48): a measured value may be null, and an `f64` NaN or infinite. The row is
//! stored whole and read back as it was published; levels, surveys, folds and percentiles
//! take the values present (not null, not NaN), each field on its own. Every expected answer
//! here is computed by the test from the rows it published, never by strata.

use std::collections::BTreeMap;

use proptest::prelude::*;
use strata::segment::vfs::SimFs;
use strata::{
    Aggregate, Config, EngineError, FieldKind, Num, Row, Store, Stream, StreamDecl, Value, Values,
};

use crate::support::sim;

/// A stream with a str track, a u64 axis, an f64 and an i64 measured field, and a ladder of
/// small cells, so a few rows span several levels.
fn decl() -> StreamDecl {
    Stream::new("s")
        .field("run", FieldKind::Str)
        .field("t", FieldKind::U64)
        .field("v", FieldKind::F64)
        .field("n", FieldKind::I64)
        .track(["run"])
        .axis("t")
        .ladder(4, 2)
        .build()
        .unwrap()
}

fn open(fs: &SimFs) -> Store {
    Store::open_or_create_in(sim(fs), Config::default(), &[decl()]).unwrap()
}

/// What a drawn `f64` cell is.
#[derive(Clone, Copy, Debug)]
enum V {
    Num(i8),
    Null,
    Nan,
    Inf,
}

fn v_cell() -> impl Strategy<Value = V> {
    prop_oneof![
        8 => any::<i8>().prop_map(V::Num),
        1 => Just(V::Null),
        1 => Just(V::Nan),
        1 => Just(V::Inf),
    ]
}

/// A drawn `i64` cell: `None` is null.
fn n_cell() -> impl Strategy<Value = Option<i16>> {
    prop_oneof![6 => any::<i16>().prop_map(Some), 1 => Just(None)]
}

fn v_value(v: V, negative_inf: bool) -> Value {
    match v {
        V::Num(x) => Value::F64(f64::from(x)),
        V::Null => Value::Null,
        V::Nan => Value::F64(f64::NAN),
        V::Inf if negative_inf => Value::F64(f64::NEG_INFINITY),
        V::Inf => Value::F64(f64::INFINITY),
    }
}

fn n_value(n: Option<i16>) -> Value {
    n.map_or(Value::Null, |n| Value::I64(i64::from(n)))
}

/// One published row of the test: track, axis step, and the two measured cells.
type Drawn = (u8, u64, V, Option<i16>);

fn rows_of(drawn: &[Drawn], axes: &mut [u64; 2], negative_inf: bool) -> Vec<Row> {
    drawn
        .iter()
        .map(|&(track, step, v, n)| {
            axes[usize::from(track)] += step;
            vec![
                Value::Str(format!("r{track}")),
                Value::U64(axes[usize::from(track)]),
                v_value(v, negative_inf),
                n_value(n),
            ]
        })
        .collect()
}

/// The value of field `idx` of `row` as a level folds it: `None` if missing (null or NaN).
fn present(row: &Row, idx: usize) -> Option<f64> {
    match &row[idx] {
        Value::F64(v) if !v.is_nan() => Some(*v),
        Value::I64(v) => Some(*v as f64),
        _ => None,
    }
}

fn axis_of(row: &Row) -> u64 {
    match row[1] {
        Value::U64(t) => t,
        _ => unreachable!(),
    }
}

/// Publishes `rows` (one batch per run of one track) at rising positions, half the batches as
/// rows and half as columns, sealing after each batch `seal_after` holds.
fn publish_all(store: &mut Store, rows: &[Row], seal_after: &[bool]) {
    let mut position = 1;
    let mut start = 0;
    let mut batch_idx = 0;
    while start < rows.len() {
        let end = start
            + rows[start..]
                .iter()
                .take_while(|r| r[0] == rows[start][0])
                .count();
        let batch = &rows[start..end];
        if batch_idx % 2 == 0 {
            store.publish("s", position, batch).unwrap();
        } else {
            let Value::Str(run) = &batch[0][0] else {
                unreachable!()
            };
            let t: Vec<Option<u64>> = batch.iter().map(|r| Some(axis_of(r))).collect();
            let v: Vec<Option<f64>> = batch
                .iter()
                .map(|r| match r[2] {
                    Value::F64(v) => Some(v),
                    _ => None,
                })
                .collect();
            let n: Vec<Option<i64>> = batch
                .iter()
                .map(|r| match r[3] {
                    Value::I64(n) => Some(n),
                    _ => None,
                })
                .collect();
            store
                .publish_columns(
                    "s",
                    position,
                    &[run.as_str()],
                    &[Values::OptU64(&t), Values::OptF64(&v), Values::OptI64(&n)],
                )
                .unwrap();
        }
        if seal_after.get(batch_idx).copied().unwrap_or(false) {
            store.seal().unwrap();
        }
        position += 1;
        batch_idx += 1;
        start = end;
    }
    store.seal().unwrap();
}

/// The statistics of field `idx` over the present values of `rows`, computed here.
struct Expected {
    count: u64,
    min: Option<f64>,
    max: Option<f64>,
    sum: f64,
}

fn expected(rows: &[&Row], idx: usize) -> Expected {
    let values: Vec<f64> = rows.iter().filter_map(|r| present(r, idx)).collect();
    Expected {
        count: values.len() as u64,
        min: values.iter().copied().reduce(f64::min),
        max: values.iter().copied().reduce(f64::max),
        sum: values.iter().sum(),
    }
}

fn as_f64(num: Num) -> f64 {
    num.as_f64()
}

/// Checks every read of `store` against the rows published.
fn check_reads(store: &Store, rows: &[Row]) -> Result<(), TestCaseError> {
    // Raw rows: exactly as published, per track in publish order.
    for track in ["r0", "r1"] {
        let expected: Vec<&Row> = rows
            .iter()
            .filter(|r| r[0] == Value::Str(track.into()))
            .collect();
        if expected.is_empty() {
            continue;
        }
        let got = store.query("s", &[track], ..).unwrap();
        let got: Vec<&Row> = got.iter().map(|r| &r.values).collect();
        prop_assert_eq!(got, expected.clone());
        for (idx, name) in [(2, "v"), (3, "n")] {
            let e = expected.clone();
            let want = self::expected(&e, idx);
            let fold = |agg: &str| {
                let stats = store
                    .fold("s", &[track], .., Aggregate::parse(agg).unwrap())
                    .unwrap();
                stats.into_iter().find(|s| s.field == name).unwrap().value
            };
            prop_assert_eq!(
                fold("count").map(as_f64),
                Some(want.count as f64),
                "count of {} in {}",
                name,
                track
            );
            prop_assert_eq!(fold("min").map(as_f64), want.min, "min of {}", name);
            prop_assert_eq!(fold("max").map(as_f64), want.max, "max of {}", name);
            // Small integers and infinities of one sign add exactly in any order.
            prop_assert_eq!(
                fold("sum").map(as_f64),
                (want.count > 0).then_some(want.sum),
                "sum of {}",
                name
            );
            // Nearest rank over the present values, sorted here.
            let mut sorted: Vec<f64> = e.iter().filter_map(|r| present(r, idx)).collect();
            sorted.sort_by(f64::total_cmp);
            let p50 = (!sorted.is_empty()).then(|| {
                let rank = (sorted.len() * 50).div_ceil(100).max(1);
                sorted[rank - 1]
            });
            prop_assert_eq!(fold("p50").map(as_f64), p50, "p50 of {}", name);
        }
        // A survey: every bucket folds the present values of its cell's rows, each field
        // apart; no bucket holds NaN; a cell with no present value of a field is a gap there.
        let survey = store.survey("s", &[track], .., 400).unwrap();
        let width = 4u64 << survey.level;
        let group = u64::try_from(survey.group).unwrap();
        for field in &survey.fields {
            let idx = if field.field == "v" { 2 } else { 3 };
            let mut cells: BTreeMap<u64, Vec<&Row>> = BTreeMap::new();
            for row in &expected {
                if present(row, idx).is_some() {
                    cells
                        .entry(axis_of(row) / width / group)
                        .or_default()
                        .push(row);
                }
            }
            prop_assert_eq!(
                field.buckets.len(),
                cells.len(),
                "buckets of {}",
                &field.field
            );
            for (bucket, (_, rows)) in field.buckets.iter().zip(&cells) {
                let want = self::expected(rows, idx);
                prop_assert_eq!(bucket.count, want.count);
                prop_assert_eq!(Some(bucket.min.value.as_f64()), want.min);
                prop_assert_eq!(Some(bucket.max.value.as_f64()), want.max);
                for point in [bucket.first, bucket.last, bucket.min, bucket.max] {
                    prop_assert!(!point.value.as_f64().is_nan(), "a NaN in a bucket");
                }
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// The merge law over data with holes: however the rows are cut into barriers and merged
    /// by compaction, every read answers the present values, and raw reads the rows as they
    /// were published.
    #[test]
    fn rows_with_holes_read_back_whole_and_fold_their_present_values(
        drawn in prop::collection::vec((0u8..2, 0u64..4, v_cell(), n_cell()), 1..120),
        seal_after in prop::collection::vec(any::<bool>(), 0..40),
        negative_inf in any::<bool>(),
        compact in any::<bool>(),
    ) {
        let fs = SimFs::new();
        let mut store = open(&fs);
        let rows = rows_of(&drawn, &mut [0, 0], negative_inf);
        publish_all(&mut store, &rows, &seal_after);
        check_reads(&store, &rows)?;
        if compact {
            store.compact().unwrap();
            check_reads(&store, &rows)?;
        }
        drop(store);
        let store = open(&fs);
        check_reads(&store, &rows)?;
    }
}

#[test]
fn a_field_missing_in_every_row_of_a_cell_is_a_gap_there_while_the_other_field_draws() {
    let fs = SimFs::new();
    let mut store = open(&fs);
    let row = |t: u64, v: Value, n: Value| vec![Value::Str("r0".into()), Value::U64(t), v, n];
    store
        .publish(
            "s",
            1,
            &[
                row(0, Value::F64(1.0), Value::I64(5)),
                row(1, Value::Null, Value::I64(6)),
                row(4, Value::Null, Value::I64(7)),
                row(5, Value::F64(f64::NAN), Value::I64(8)),
                row(8, Value::F64(3.0), Value::Null),
            ],
        )
        .unwrap();
    store.seal().unwrap();
    let survey = store.survey("s", &[], 0..=11, 400).unwrap();
    assert_eq!(survey.level, 0, "{survey:?}");
    let counts = |name: &str| -> Vec<(u64, u64)> {
        survey
            .fields
            .iter()
            .find(|f| f.field == name)
            .unwrap()
            .buckets
            .iter()
            .map(|b| (b.first.axis / 4, b.count))
            .collect()
    };
    // Cells 0..4, 4..8, 8..12: v has nothing present in the second, n in the third.
    assert_eq!(counts("v"), vec![(0, 1), (2, 1)]);
    assert_eq!(counts("n"), vec![(0, 2), (1, 2)]);
    // `count` counts the values present; the rows are all there.
    let count = store
        .fold("s", &[], .., Aggregate::parse("count").unwrap())
        .unwrap();
    let count: Vec<(String, Option<f64>)> = count
        .into_iter()
        .map(|s| (s.field, s.value.map(Num::as_f64)))
        .collect();
    assert_eq!(
        count,
        vec![("v".to_owned(), Some(2.0)), ("n".to_owned(), Some(4.0))]
    );
    assert_eq!(store.query("s", &[], ..).unwrap().len(), 5);
}

#[test]
fn a_field_with_no_value_present_folds_to_nothing_and_reads_back_null() {
    let fs = SimFs::new();
    let mut store = open(&fs);
    let rows: Vec<Row> = (0..30)
        .map(|t| {
            vec![
                Value::Str("r0".into()),
                Value::U64(t),
                Value::Null,
                Value::I64(1),
            ]
        })
        .collect();
    store.publish("s", 1, &rows).unwrap();
    store.seal().unwrap();
    let min = store
        .fold("s", &[], .., Aggregate::parse("min").unwrap())
        .unwrap();
    assert_eq!(min[0].value, None, "{min:?}");
    assert_eq!(min[1].value.map(Num::as_f64), Some(1.0));
    let back = store.query("s", &[], ..).unwrap();
    assert!(back.iter().all(|r| r.values[2] == Value::Null));
    let survey = store.survey("s", &[], .., 400).unwrap();
    assert!(survey.fields[0].buckets.is_empty());
    assert!(!survey.fields[1].buckets.is_empty());
}

#[test]
fn the_axis_a_track_label_and_text_are_never_missing() {
    let fs = SimFs::new();
    let text = Stream::new("notes")
        .field("t", FieldKind::U64)
        .field("note", FieldKind::Str)
        .axis("t")
        .build()
        .unwrap();
    let mut store = Store::open_or_create_in(sim(&fs), Config::default(), &[decl(), text]).unwrap();
    let refused = |e: Result<(), EngineError>| match e {
        Err(EngineError::Refused {
            row_idx, reason, ..
        }) => (row_idx, reason),
        other => panic!("not refused: {other:?}"),
    };
    let (row, reason) = refused(store.publish(
        "s",
        1,
        &[
            vec![
                Value::Str("a".into()),
                Value::U64(1),
                Value::Null,
                Value::I64(1),
            ],
            vec![
                Value::Str("a".into()),
                Value::Null,
                Value::F64(1.0),
                Value::I64(1),
            ],
        ],
    ));
    assert_eq!(row, 1);
    assert!(
        reason.contains("\"t\" is missing, and it is the axis"),
        "{reason}"
    );
    let (_, reason) = refused(store.publish(
        "s",
        1,
        &[vec![
            Value::Null,
            Value::U64(1),
            Value::F64(1.0),
            Value::I64(1),
        ]],
    ));
    assert!(
        reason.contains("\"run\" is missing, and it is a track component"),
        "{reason}"
    );
    let (_, reason) = refused(store.publish("notes", 1, &[vec![Value::U64(1), Value::Null]]));
    assert!(
        reason.contains("\"note\" is missing, and it is a str"),
        "{reason}"
    );
    // Columns: the axis with a null at row 2 is refused there, after rows 0 and 1 pass.
    let (row, reason) = refused(store.publish_columns(
        "s",
        1,
        &["a"],
        &[
            Values::OptU64(&[Some(1), Some(2), None]),
            Values::F64(&[1.0, 2.0, 3.0]),
            Values::I64(&[1, 2, 3]),
        ],
    ));
    assert_eq!(row, 2);
    assert!(reason.contains("is the axis"), "{reason}");
    assert_eq!(store.staged_bytes(), 0, "a refused batch stages nothing");
}
