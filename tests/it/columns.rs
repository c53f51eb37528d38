//! Columnar publish against the row API: the same batch staged as rows into one store and as
//! columns into another is accepted by both or refused by both with the same error; a refused
//! batch stages nothing; and accepted batches read back alike after a seal. Rule by rule, then
//! over generated batches.

use proptest::prelude::*;
use strata::segment::vfs::SimFs;
use strata::{Config, EngineError, FieldKind, Row, Store, Stream, StreamDecl, Value, Values};

use crate::support::sim;

/// A stream with a str track, a u64 axis, an f64, an i64 and a str field.
fn decl() -> StreamDecl {
    Stream::new("s")
        .field("run", FieldKind::Str)
        .field("t", FieldKind::U64)
        .field("v", FieldKind::F64)
        .field("n", FieldKind::I64)
        .field("note", FieldKind::Str)
        .track(["run"])
        .axis("t")
        .ladder(4, 2)
        .build()
        .unwrap()
}

/// A batch of one track: the rows and the same as columns.
#[derive(Clone, Debug)]
struct Batch {
    run: String,
    t: Vec<u64>,
    v: Vec<f64>,
    n: Vec<i64>,
    note: Vec<String>,
}

impl Batch {
    fn rows(&self) -> Vec<Row> {
        (0..self.t.len())
            .map(|i| {
                vec![
                    Value::Str(self.run.clone()),
                    Value::U64(self.t[i]),
                    Value::F64(self.v[i]),
                    Value::I64(self.n[i]),
                    Value::Str(self.note[i].clone()),
                ]
            })
            .collect()
    }

    fn publish_columns(&self, store: &mut Store, position: u64) -> Result<(), EngineError> {
        let notes: Vec<&str> = self.note.iter().map(String::as_str).collect();
        store.publish_columns(
            "s",
            position,
            &[self.run.as_str()],
            &[
                Values::U64(&self.t),
                Values::F64(&self.v),
                Values::I64(&self.n),
                Values::Str(&notes),
            ],
        )
    }
}

fn batch(run: &str, t: &[u64], v: &[f64]) -> Batch {
    Batch {
        run: run.to_owned(),
        t: t.to_vec(),
        v: v.to_vec(),
        n: (0..i64::try_from(t.len()).expect("a short batch")).collect(),
        note: t.iter().map(|t| format!("n{t}")).collect(),
    }
}

fn open(fs: &SimFs, config: Config) -> Store {
    Store::open_or_create_in(sim(fs), config, &[decl()]).unwrap()
}

/// Publishes `batch` at `position` as rows into `rows` and as columns into `cols`: both accept
/// or both refuse with the same error, and a refusal stages nothing.
fn both(rows: &mut Store, cols: &mut Store, position: u64, batch: &Batch) -> Result<(), String> {
    let before = (rows.staged_bytes(), cols.staged_bytes());
    let a = rows.publish("s", position, &batch.rows());
    let b = batch.publish_columns(cols, position);
    let (a, b) = (a.map_err(|e| e.to_string()), b.map_err(|e| e.to_string()));
    assert_eq!(a, b, "rows and columns disagree on {batch:?} at {position}");
    assert_eq!(
        rows.staged_bytes(),
        cols.staged_bytes(),
        "staged bytes differ"
    );
    if a.is_err() {
        assert_eq!((rows.staged_bytes(), cols.staged_bytes()), before);
    }
    a
}

/// Seals both and compares everything they hold (rows from position `from`).
fn same_rows_from(rows: &mut Store, cols: &mut Store, from: u64) {
    rows.seal().unwrap();
    cols.seal().unwrap();
    assert_eq!(
        rows.query("s", &[], from..).unwrap(),
        cols.query("s", &[], from..).unwrap()
    );
    assert_eq!(
        rows.survey("s", &[], .., 400).unwrap(),
        cols.survey("s", &[], .., 400).unwrap()
    );
}

fn same_rows(rows: &mut Store, cols: &mut Store) {
    same_rows_from(rows, cols, 0);
}

#[test]
fn each_rule_refuses_columns_as_it_refuses_rows() {
    let (fa, fb) = (SimFs::new(), SimFs::new());
    let config = Config::default().staged_bytes_max(4096);
    let (mut rows, mut cols) = (open(&fa, config.clone()), open(&fb, config));
    // Accepted, then each refusal, none of which stages anything.
    both(
        &mut rows,
        &mut cols,
        5,
        &batch("a", &[1, 2, 2, 9], &[0.5, -0.0, 3.0, 1e300]),
    )
    .unwrap();
    let refusals = [
        // Below the last position.
        (
            4,
            batch("a", &[10], &[1.0]),
            "below the stream's last position",
        ),
        // The axis goes backwards: against what is staged, then within the batch.
        (5, batch("a", &[8], &[1.0]), "goes backwards"),
        (
            5,
            batch("a", &[10, 12, 11], &[1.0, 1.0, 1.0]),
            "goes backwards",
        ),
        // A label that is not one: empty, or with a control character.
        (5, batch("", &[10], &[1.0]), "track field"),
        (5, batch("a\u{7}", &[10], &[1.0]), "track field"),
        // More than staging holds.
        (6, batch("b", &[1; 80], &[1.0; 80]), "staged"),
    ];
    for (position, batch, why) in &refusals {
        let error = both(&mut rows, &mut cols, *position, batch).unwrap_err();
        assert!(
            error.contains(why) || (why == &"staged" && error.contains("staging")),
            "{error}"
        );
    }
    same_rows(&mut rows, &mut cols);
    // Beneath a retired floor, after a trim: refused alike.
    rows.trim_to("s", 5).unwrap();
    cols.trim_to("s", 5).unwrap();
    let error = both(&mut rows, &mut cols, 5, &batch("a", &[10], &[1.0])).unwrap_err();
    assert!(error.contains("floor"), "{error}");
    let error = both(&mut rows, &mut cols, 6, &batch("a", &[7], &[1.0])).unwrap_err();
    assert!(error.contains("retired"), "{error}");
    both(&mut rows, &mut cols, 6, &batch("a", &[9, 20], &[1.0, 2.0])).unwrap();
    same_rows_from(&mut rows, &mut cols, 6);
}

#[test]
fn a_batch_of_the_wrong_shape_is_refused_and_stages_nothing() {
    let fs = SimFs::new();
    let mut store = open(&fs, Config::default());
    let t = [1u64, 2];
    let v = [1.0, 2.0];
    let n = [1i64, 2];
    let notes = ["x", "y"];
    let shapes: [(&[&str], Vec<Values<'_>>, &str); 4] = [
        // No track value.
        (
            &[],
            vec![
                Values::U64(&t),
                Values::F64(&v),
                Values::I64(&n),
                Values::Str(&notes),
            ],
            "track values",
        ),
        // A column missing.
        (
            &["a"],
            vec![Values::U64(&t), Values::F64(&v), Values::I64(&n)],
            "columns",
        ),
        // Columns of two lengths.
        (
            &["a"],
            vec![
                Values::U64(&t),
                Values::F64(&v[..1]),
                Values::I64(&n),
                Values::Str(&notes),
            ],
            "holds 1 values",
        ),
        // A column of the wrong kind.
        (
            &["a"],
            vec![
                Values::U64(&t),
                Values::I64(&n),
                Values::I64(&n),
                Values::Str(&notes),
            ],
            "field \"v\" is an f64, got an i64 value",
        ),
    ];
    for (track, columns, why) in &shapes {
        let error = store.publish_columns("s", 1, track, columns).unwrap_err();
        assert!(matches!(error, EngineError::Refused { .. }), "{error}");
        assert!(error.to_string().contains(why), "{error}");
        assert_eq!(store.staged_bytes(), 0);
    }
    // The store is still usable, and an empty batch stages nothing.
    store
        .publish_columns(
            "s",
            1,
            &["a"],
            &[
                Values::U64(&[]),
                Values::F64(&[]),
                Values::I64(&[]),
                Values::Str(&[]),
            ],
        )
        .unwrap();
    assert_eq!(store.staged_bytes(), 0);
    store
        .publish_columns(
            "s",
            1,
            &["a"],
            &[
                Values::U64(&t),
                Values::F64(&v),
                Values::I64(&n),
                Values::Str(&notes),
            ],
        )
        .unwrap();
    store.seal().unwrap();
    assert_eq!(store.query("s", &[], ..).unwrap().len(), 2);
}

fn batches() -> impl Strategy<Value = Vec<(u64, Batch)>> {
    let value = prop_oneof![
        8 => -1e6f64..1e6,
        1 => Just(f64::NAN),
        1 => Just(f64::NEG_INFINITY),
        1 => Just(-0.0f64),
    ];
    let one = (
        0u64..3,
        prop_oneof![Just("a"), Just("b"), Just(""), Just("c\u{1}")],
        prop::collection::vec((0u64..4, value, any::<i64>(), "[a-z]{0,3}"), 0..6),
        any::<bool>(),
    );
    prop::collection::vec(one, 1..12).prop_map(|steps| {
        let mut position = 0u64;
        let mut t = 0u64;
        steps
            .into_iter()
            .map(|(advance, run, rows, backwards)| {
                position =
                    (position + advance).saturating_sub(u64::from(advance == 0 && backwards));
                let mut b = Batch {
                    run: run.to_owned(),
                    t: Vec::new(),
                    v: Vec::new(),
                    n: Vec::new(),
                    note: Vec::new(),
                };
                for (step, v, n, note) in rows {
                    t = if backwards && step == 0 {
                        t.saturating_sub(3)
                    } else {
                        t + step
                    };
                    b.t.push(t);
                    b.v.push(v);
                    b.n.push(n);
                    b.note.push(note);
                }
                (position, b)
            })
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn generated_batches_are_refused_or_staged_alike_as_rows_and_as_columns(
        steps in batches(),
        staged_bytes_max in 200usize..2000,
    ) {
        let (fa, fb) = (SimFs::new(), SimFs::new());
        let config = Config::default().staged_bytes_max(staged_bytes_max);
        let (mut rows, mut cols) = (open(&fa, config.clone()), open(&fb, config));
        for (i, (position, batch)) in steps.iter().enumerate() {
            let _ = both(&mut rows, &mut cols, *position, batch);
            if i % 3 == 2 {
                same_rows(&mut rows, &mut cols);
            }
        }
        same_rows(&mut rows, &mut cols);
    }
}

/// A batch of one track with a position per row: the rows and the same as columns.
fn positioned() -> impl Strategy<Value = Vec<(Vec<u64>, Batch)>> {
    let row = (0u64..3, any::<bool>(), 0u64..4, -1e3f64..1e3, any::<i64>());
    let one = (
        prop_oneof![Just("a"), Just("b"), Just("")],
        prop::collection::vec(row, 0..6),
        prop_oneof![8 => Just(None), 1 => (0usize..6).prop_map(Some)],
    );
    prop::collection::vec(one, 1..10).prop_map(|steps| {
        let (mut position, mut t) = (1u64, 0u64);
        steps
            .into_iter()
            .map(|(run, rows, nan_at)| {
                let mut positions = Vec::new();
                let mut b = batch(run, &[], &[]);
                for (row_idx, (advance, back, step, v, n)) in rows.into_iter().enumerate() {
                    // Now and then a position below the row before it.
                    position = if back && advance == 0 {
                        position.saturating_sub(1)
                    } else {
                        position + advance
                    };
                    t += step;
                    positions.push(position);
                    b.t.push(t);
                    b.v.push(if nan_at == Some(row_idx) { f64::NAN } else { v });
                    b.n.push(n);
                    b.note.push(format!("n{row_idx}"));
                }
                (positions, b)
            })
            .collect()
    })
}

/// The row index and reason of a refusal.
fn refusal(error: &EngineError) -> Option<(usize, String)> {
    match error {
        EngineError::Refused {
            row_idx, reason, ..
        } => Some((*row_idx, reason.clone())),
        _ => None,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// `publish_columns_at` is publishing each row on its own at its position, all or nothing:
    /// refused at the first row one of those calls refuses, with that call's reason.
    #[test]
    fn a_position_per_row_is_each_row_published_at_its_own(steps in positioned()) {
        let (fa, fb) = (SimFs::new(), SimFs::new());
        let mut rows = open(&fa, Config::default());
        let mut cols = open(&fb, Config::default());
        for (positions, batch) in &steps {
            let notes: Vec<&str> = batch.note.iter().map(String::as_str).collect();
            let got = cols.publish_columns_at(
                "s",
                positions,
                &[batch.run.as_str()],
                &[
                    Values::U64(&batch.t),
                    Values::F64(&batch.v),
                    Values::I64(&batch.n),
                    Values::Str(&notes),
                ],
            );
            let mut expected = None;
            for (row_idx, row) in batch.rows().into_iter().enumerate() {
                if let Err(error) = rows.publish("s", positions[row_idx], &[row]) {
                    let (at, reason) = refusal(&error).expect("a refusal");
                    prop_assert_eq!(at, 0);
                    expected = Some((row_idx, reason));
                    break;
                }
            }
            match (got, expected) {
                (Ok(()), None) => {
                    rows.seal().unwrap();
                    cols.seal().unwrap();
                }
                (Err(error), Some(expected)) => {
                    prop_assert_eq!(refusal(&error), Some(expected));
                    prop_assert_eq!(cols.staged_bytes(), 0, "a refused batch stages nothing");
                    // The rows before the refused one were staged one by one: drop them.
                    drop(rows);
                    rows = open(&fa, Config::default());
                }
                (got, expected) => prop_assert!(false, "columns {got:?}, rows {expected:?}"),
            }
        }
        rows.seal().unwrap();
        cols.seal().unwrap();
        prop_assert_eq!(
            rows.query("s", &[], ..).unwrap(),
            cols.query("s", &[], ..).unwrap()
        );
    }
}

#[test]
fn positions_of_another_length_than_the_columns_are_refused() {
    let fs = SimFs::new();
    let mut store = open(&fs, Config::default());
    let error = store
        .publish_columns_at(
            "s",
            &[1],
            &["a"],
            &[
                Values::U64(&[1, 2]),
                Values::F64(&[1.0, 2.0]),
                Values::I64(&[1, 2]),
                Values::Str(&["x", "y"]),
            ],
        )
        .unwrap_err();
    assert_eq!(
        refusal(&error),
        Some((
            0,
            "expected a position per row: 1 position for 2 rows".to_owned()
        ))
    );
    assert_eq!(store.staged_bytes(), 0);
}
