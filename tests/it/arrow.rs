//! Arrow out (#33, the `arrow` feature): `query_arrow`'s batches hold exactly the rows `query`
//! answers (the row reader, an independent path), in order, value for value, at most
//! `Config::arrow_batch_rows` rows each and exactly that many in every batch but the last.

use std::sync::Arc;

use proptest::prelude::*;
use strata::arrow_array::cast::AsArray;
use strata::arrow_array::types::{Float64Type, Int64Type, UInt64Type};
use strata::arrow_array::{Array, RecordBatch};
use strata::arrow_schema::DataType;
use strata::{ARROW_BATCH_ROWS_LIMIT, Config, EngineError, FieldKind, Store, Stream, Value};

fn declaration() -> strata::StreamDecl {
    Stream::new("m")
        .field("run", FieldKind::Str)
        .field("t", FieldKind::U64)
        .field("i", FieldKind::I64)
        .field("f", FieldKind::F64)
        .field("s", FieldKind::Str)
        .field("b", FieldKind::Bytes)
        .track(["run"])
        .axis("t")
        .build()
        .unwrap()
}

/// Row `r`'s values of track `run` (the track first, as declared).
fn row(run: &str, r: u64, seed: u64) -> Vec<Value> {
    let x = r.wrapping_mul(seed | 1);
    vec![
        Value::Str(run.to_owned()),
        Value::U64(r * 3),
        Value::I64(-(x.cast_signed() >> 3)),
        Value::F64((x % 1000) as f64 / 7.0),
        Value::Str(format!("s{}", x % 13)),
        Value::Bytes(vec![0, 0xFF, (x % 256) as u8]),
    ]
}

/// The value of column `column` at `idx` of `batch`, as the row reader's `Value`.
fn value_at(batch: &RecordBatch, column: usize, idx: usize) -> Value {
    let array = batch.column(column);
    match array.data_type() {
        DataType::UInt64 => Value::U64(array.as_primitive::<UInt64Type>().value(idx)),
        DataType::Int64 => Value::I64(array.as_primitive::<Int64Type>().value(idx)),
        DataType::Float64 => Value::F64(array.as_primitive::<Float64Type>().value(idx)),
        DataType::LargeUtf8 => Value::Str(array.as_string::<i64>().value(idx).to_owned()),
        DataType::LargeBinary => Value::Bytes(array.as_binary::<i64>().value(idx).to_vec()),
        DataType::Dictionary(..) => {
            let dict = array.as_any_dictionary();
            let key = dict.normalized_keys()[idx];
            Value::Str(dict.values().as_string::<i32>().value(key).to_owned())
        }
        other => panic!("unexpected column type {other}"),
    }
}

/// A store of `runs` published in runs of `lens` rows, sealed after every `seal_every` runs.
fn store_of(dir: &std::path::Path, config: Config, lens: &[u8], seal_every: usize) -> Store {
    let mut store = Store::create(dir, config, &[declaration()]).unwrap();
    let mut r = 0u64;
    for (idx, &len) in lens.iter().enumerate() {
        let run = ["north", "south", "east"][idx % 3];
        let rows: Vec<_> = (0..u64::from(len))
            .map(|k| row(run, r + k, 0x9E37_79B9))
            .collect();
        let positions: Vec<u64> = (r + 1..=r + u64::from(len)).collect();
        for (row, &position) in rows.iter().zip(&positions) {
            store
                .publish("m", position, std::slice::from_ref(row))
                .unwrap();
        }
        r += u64::from(len);
        if (idx + 1) % seal_every == 0 {
            store.seal().unwrap();
        }
    }
    store.seal().unwrap();
    store
}

/// Checks `query_arrow` against `query` over `selection` and `positions`, and the batch bound.
fn check(
    store: &Store,
    selection: &[&str],
    positions: std::ops::RangeInclusive<u64>,
    rows_max: usize,
) {
    let want = store.query("m", selection, positions.clone()).unwrap();
    let batches: Vec<RecordBatch> = store
        .query_arrow("m", selection, positions)
        .unwrap()
        .collect::<Result<_, EngineError>>()
        .unwrap();
    for (idx, batch) in batches.iter().enumerate() {
        if idx + 1 < batches.len() {
            assert_eq!(
                batch.num_rows(),
                rows_max,
                "every batch but the last is full"
            );
        } else {
            assert!(batch.num_rows() >= 1 && batch.num_rows() <= rows_max);
        }
    }
    let mut got = 0;
    for batch in &batches {
        assert_eq!(batch.schema().field(0).name(), "position");
        assert_eq!(batch.num_columns(), 7, "position and the six fields");
        for idx in 0..batch.num_rows() {
            let stored = &want[got];
            assert_eq!(
                value_at(batch, 0, idx),
                Value::U64(stored.position),
                "row {got}"
            );
            for (field_idx, value) in stored.values.iter().enumerate() {
                assert_eq!(
                    &value_at(batch, field_idx + 1, idx),
                    value,
                    "row {got} field {field_idx}"
                );
            }
            got += 1;
        }
    }
    assert_eq!(got, want.len(), "as many rows as query answers");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn arrow_batches_hold_what_query_answers_in_bounded_batches(
        lens in prop::collection::vec(1u8..40, 1..30),
        seal_every in 1usize..6,
        rows_max in 1usize..50,
        from in 0u64..200,
        span in 0u64..400,
        narrow in any::<bool>(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let store = store_of(dir.path(), Config::default().arrow_batch_rows(rows_max), &lens, seal_every);
        // "south" is sealed only when there are two runs or more; selecting a track never
        // sealed is refused (`UnknownTrack`), which `a_track_never_sealed_is_refused_by_name`
        // asks of its own.
        let selection: &[&str] = if narrow && lens.len() > 1 { &["south"] } else { &[] };
        check(&store, selection, from..=from + span, rows_max);
        check(&store, &[], 0..=u64::MAX, rows_max);
    }
}

#[test]
fn the_default_batch_bound_is_reached_and_kept() {
    let dir = tempfile::tempdir().unwrap();
    let rows_max = Config::default().arrow_batch_rows;
    let mut store = Store::create(dir.path(), Config::default(), &[declaration()]).unwrap();
    let n_rows = rows_max as u64 * 2 + 5;
    let rows: Vec<_> = (0..n_rows).map(|r| row("north", r, 7)).collect();
    for (r, chunk) in rows.chunks(10_000).enumerate() {
        let first = r as u64 * 10_000 + 1;
        for (k, row) in chunk.iter().enumerate() {
            store
                .publish("m", first + k as u64, std::slice::from_ref(row))
                .unwrap();
        }
    }
    store.seal().unwrap();
    let sizes: Vec<usize> = store
        .query_arrow("m", &[], ..)
        .unwrap()
        .map(|b| b.unwrap().num_rows())
        .collect();
    assert_eq!(sizes, vec![rows_max, rows_max, 5]);
}

#[test]
fn a_batch_bound_of_zero_or_beyond_the_limit_is_refused_at_open() {
    for bad in [0, ARROW_BATCH_ROWS_LIMIT + 1] {
        let dir = tempfile::tempdir().unwrap();
        let refused = Store::create(
            dir.path(),
            Config::default().arrow_batch_rows(bad),
            &[declaration()],
        );
        match refused {
            Err(EngineError::Config { setting, .. }) => assert_eq!(setting, "arrow_batch_rows"),
            other => panic!("{bad}: {other:?}"),
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let at_limit = Config::default().arrow_batch_rows(ARROW_BATCH_ROWS_LIMIT);
    Store::create(dir.path(), at_limit, &[declaration()]).unwrap();
}

#[test]
fn a_survey_and_a_fold_answer_as_batches_of_their_own_values() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_of(dir.path(), Config::default(), &[30, 20, 25, 40], 2);
    let survey = store.survey("m", &[], .., 64).unwrap();
    let batch = store.survey_arrow("m", &[], .., 64).unwrap();
    let buckets: Vec<_> = survey
        .fields
        .iter()
        .flat_map(|f| f.buckets.iter().map(move |b| (f.field.clone(), *b)))
        .collect();
    assert_eq!(batch.num_rows(), buckets.len());
    assert!(buckets.len() > 4, "the budget buys several buckets");
    let column = |name: &str| Arc::clone(batch.column(batch.schema().index_of(name).unwrap()));
    let counts = column("count");
    let max_axis = column("max_axis");
    let max = column("max");
    // Two measured fields of two kinds (i64, f64): values as f64.
    assert_eq!(max.data_type(), &DataType::Float64);
    for (idx, (field, bucket)) in buckets.iter().enumerate() {
        assert_eq!(column("field").as_string::<i32>().value(idx), field);
        assert_eq!(counts.as_primitive::<UInt64Type>().value(idx), bucket.count);
        assert_eq!(
            max_axis.as_primitive::<UInt64Type>().value(idx),
            bucket.max.axis
        );
        assert_eq!(
            max.as_primitive::<Float64Type>().value(idx).to_bits(),
            bucket.max.value.as_f64().to_bits()
        );
    }
    let fold = store
        .fold_arrow("m", &[], .., strata::Aggregate::Count)
        .unwrap();
    let stats = store.fold("m", &[], .., strata::Aggregate::Count).unwrap();
    assert_eq!(fold.num_rows(), stats.len());
    assert_eq!(
        fold.column(1).data_type(),
        &DataType::UInt64,
        "counts of every field are u64"
    );
    for (idx, stat) in stats.iter().enumerate() {
        assert_eq!(
            Some(strata::Num::U64(
                fold.column(1).as_primitive::<UInt64Type>().value(idx)
            )),
            stat.value
        );
    }
    assert_eq!(fold.column(1).null_count(), 0);
}

/// The shrunk case the generator used to draw (one run, "north" alone, "south" selected): a
/// track never sealed is refused by name, and the tracks that answer are named.
#[test]
fn a_track_never_sealed_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_of(dir.path(), Config::default(), &[1], 1);
    let error = store
        .query_arrow("m", &["south"], ..)
        .map(|_| ())
        .unwrap_err();
    assert!(
        matches!(&error, EngineError::UnknownTrack { selection, tracks, .. }
            if selection == &["south"] && tracks == &[vec!["north".to_owned()]]),
        "{error:?}"
    );
}
