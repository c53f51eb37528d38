//! The engine through the facade: round trips over generated declarations, every refusal,
//! exclusive opening, poisoning, and a barrier crashed at every operation.

use std::sync::Arc;

use proptest::prelude::*;
use strata::segment::vfs::{Fault, RenameMode, SimFs, Vfs};
use strata::{Config, EngineError, FieldKind, Row, Store, Stream, StreamDecl, Value};

use crate::support::{MODES, sim};

fn capture() -> StreamDecl {
    Stream::new("capture")
        .field("run", FieldKind::Str)
        .field("probe", FieldKind::U64)
        .field("t", FieldKind::U64)
        .field("value", FieldKind::F64)
        .field("note", FieldKind::Str)
        .track(["run", "probe"])
        .axis("t")
        .build()
        .unwrap()
}

/// Every sealed row of `capture`, in publish order, without positions.
fn values(store: &Store) -> Vec<Row> {
    store
        .query("capture", &[], ..)
        .unwrap()
        .into_iter()
        .map(|r| r.values)
        .collect()
}

fn row(run: &str, probe: u64, t: u64, value: f64) -> Row {
    vec![
        Value::Str(run.into()),
        Value::U64(probe),
        Value::U64(t),
        Value::F64(value),
        Value::Str(format!("{run}/{probe}@{t}")),
    ]
}

// ---------------------------------------------------------------------------------------------
// Round trips over generated declarations and rows.

/// A generated stream: fields of every kind, 0..=3 of the label-able ones as the track, maybe an
/// axis, and batches of rows whose axis never goes backwards within a partition.
#[derive(Clone, Debug)]
struct Case {
    decl: StreamDecl,
    /// (position, rows) per publish call; `None` marks a seal (and `Some(true)` a reopen too).
    ops: Vec<Op>,
}

#[derive(Clone, Debug)]
enum Op {
    Publish(u64, Vec<Row>),
    Seal { reopen: bool },
}

fn kinds() -> impl Strategy<Value = Vec<FieldKind>> {
    prop::collection::vec(
        prop::sample::select(vec![
            FieldKind::U64,
            FieldKind::I64,
            FieldKind::F64,
            FieldKind::Str,
            FieldKind::Bytes,
        ]),
        1..6,
    )
}

fn case() -> impl Strategy<Value = Case> {
    (kinds(), 0usize..=3, any::<bool>(), any::<u64>())
        .prop_flat_map(|(kinds, depth, axis, seed)| {
            // Track fields: str, u64 and i64 ones added at the front; the axis is a u64 after them.
            let track_kinds: Vec<FieldKind> = (0..depth)
                .map(|i| [FieldKind::Str, FieldKind::U64, FieldKind::I64][(seed as usize + i) % 3])
                .collect();
            let mut stream = Stream::new("s");
            let mut track = Vec::new();
            for (i, kind) in track_kinds.iter().enumerate() {
                stream = stream.field(format!("k{i}"), *kind);
                track.push(format!("k{i}"));
            }
            if axis {
                stream = stream.field("t", FieldKind::U64).axis("t");
            }
            for (i, kind) in kinds.iter().enumerate() {
                stream = stream.field(format!("f{i}"), *kind);
            }
            let decl = stream.track(track).ladder(4, 4).build().unwrap();
            let ops = prop::collection::vec(op(decl.clone()), 1..12);
            (Just(decl), ops)
        })
        .prop_map(|(decl, ops)| {
            // Positions and per-partition axes made monotone here, over the generated values.
            let mut position = 0u64;
            let mut axes: std::collections::HashMap<Vec<String>, u64> =
                std::collections::HashMap::default();
            let ops = ops
                .into_iter()
                .map(|op| match op {
                    Op::Publish(step, mut rows) => {
                        position += step;
                        if let Some(axis_idx) = decl.axis {
                            for row in &mut rows {
                                let key: Vec<String> = decl
                                    .track
                                    .iter()
                                    .map(|&t| row[t as usize].to_string())
                                    .collect();
                                let last = axes.entry(key).or_insert(0);
                                if let Value::U64(t) = &mut row[axis_idx as usize] {
                                    *t = (*t % 50) + *last;
                                    *last = *t;
                                }
                            }
                        }
                        Op::Publish(position, rows)
                    }
                    seal @ Op::Seal { .. } => seal,
                })
                .collect();
            Case { decl, ops }
        })
}

fn op(decl: StreamDecl) -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0u64..3, prop::collection::vec(row_of(decl), 0..8)).prop_map(|(s, r)| Op::Publish(s, r)),
        1 => any::<bool>().prop_map(|reopen| Op::Seal { reopen }),
    ]
}

fn row_of(decl: StreamDecl) -> impl Strategy<Value = Row> {
    let labels = prop::sample::select(vec!["run_7", "run_70", "é", "日本", "7"]);
    let values: Vec<BoxedStrategy<Value>> = decl
        .fields
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let is_track = decl.track.contains(&(i as u16));
            match f.kind {
                FieldKind::U64 if is_track => (0u64..3).prop_map(Value::U64).boxed(),
                FieldKind::I64 if is_track => (-2i64..2).prop_map(Value::I64).boxed(),
                FieldKind::Str if is_track => {
                    labels.clone().prop_map(|s| Value::Str(s.into())).boxed()
                }
                FieldKind::U64 => any::<u64>().prop_map(Value::U64).boxed(),
                FieldKind::I64 => any::<i64>().prop_map(Value::I64).boxed(),
                FieldKind::F64 => (-1e9f64..1e9).prop_map(Value::F64).boxed(),
                FieldKind::Str => ".{0,5}".prop_map(Value::Str).boxed(),
                _ => prop::collection::vec(any::<u8>(), 0..4)
                    .prop_map(Value::Bytes)
                    .boxed(),
            }
        })
        .collect();
    values
}

/// What a model of the stream answers: every sealed row in publish order.
fn expected(
    decl: &StreamDecl,
    sealed: &[(u64, Row)],
    selection: &[String],
    lo: u64,
    hi: u64,
) -> Vec<(u64, Row)> {
    sealed
        .iter()
        .filter(|(p, r)| {
            let labels: Vec<String> = decl
                .track
                .iter()
                .map(|&t| r[t as usize].to_string())
                .collect();
            (lo..=hi).contains(p) && labels.starts_with(selection)
        })
        .cloned()
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn publish_seal_reopen_query_round_trips(case in case(), lo in 0u64..10, width in 0u64..40) {
        let fs = SimFs::new();
        let mut store = Store::open_or_create_in(sim(&fs), Config::default(), std::slice::from_ref(&case.decl)).unwrap();
        let mut staged: Vec<(u64, Row)> = Vec::new();
        let mut sealed: Vec<(u64, Row)> = Vec::new();
        for op in &case.ops {
            match op {
                Op::Publish(position, rows) => {
                    store.publish("s", *position, rows).unwrap();
                    staged.extend(rows.iter().map(|r| (*position, r.clone())));
                }
                Op::Seal { reopen } => {
                    store.seal().unwrap();
                    sealed.append(&mut staged);
                    if *reopen {
                        drop(store);
                        store = Store::open_in(sim(&fs), Config::default(), &[]).unwrap();
                    }
                }
            }
        }
        // Reads see what seals made durable; staged rows are not there yet.
        let all: Vec<(u64, Row)> = store
            .query("s", &[], ..)
            .unwrap()
            .into_iter()
            .map(|r| (r.position, r.values))
            .collect();
        prop_assert_eq!(&all, &expected(&case.decl, &sealed, &[], 0, u64::MAX));
        // Every prefix of every sealed row's track, over a position range.
        let hi = lo + width;
        for (_, row) in sealed.iter().take(6) {
            let labels: Vec<String> = case.decl.track.iter().map(|&t| row[t as usize].to_string()).collect();
            for depth in 0..=labels.len() {
                let selection: Vec<&str> = labels[..depth].iter().map(String::as_str).collect();
                let got: Vec<(u64, Row)> = store
                    .query("s", &selection, lo..=hi)
                    .unwrap()
                    .into_iter()
                    .map(|r| (r.position, r.values))
                    .collect();
                prop_assert_eq!(got, expected(&case.decl, &sealed, &labels[..depth], lo, hi));
            }
        }
        // After a reopen, the watermark is the recorded one and reading it costs no barrier.
        store.seal().unwrap();
        sealed.append(&mut staged);
        drop(store);
        let store = Store::open_in(sim(&fs), Config::default(), &[]).unwrap();
        let want = sealed.last().map(|(p, _)| *p);
        prop_assert_eq!(store.watermark("s", &[]).unwrap(), want);
        prop_assert_eq!(store.metrics().barriers, 0);
        prop_assert_eq!(store.metrics().barrier_syncs, 0);
    }
}

#[test]
fn a_run_7_selection_does_not_read_run_70() {
    let fs = SimFs::new();
    let mut store = Store::open_or_create_in(sim(&fs), Config::default(), &[capture()]).unwrap();
    store
        .publish(
            "capture",
            1,
            &[row("run_7", 1, 5, 1.0), row("run_70", 1, 5, 2.0)],
        )
        .unwrap();
    store
        .publish(
            "capture",
            2,
            &[row("run_7", 2, 6, 3.0), row("run_70", 1, 9, 4.0)],
        )
        .unwrap();
    store.seal().unwrap();
    let values = |sel: &[&str]| -> Vec<f64> {
        store
            .query("capture", sel, ..)
            .unwrap()
            .into_iter()
            .map(|r| match r.values[3] {
                Value::F64(v) => v,
                _ => panic!(),
            })
            .collect()
    };
    assert_eq!(values(&["run_7"]), [1.0, 3.0]);
    assert_eq!(values(&["run_70"]), [2.0, 4.0]);
    assert_eq!(values(&["run_70", "1"]), [2.0, 4.0]);
    assert_eq!(
        values(&[]),
        [1.0, 2.0, 3.0, 4.0],
        "publish order across partitions"
    );
    // `run` is no track's prefix: refused, naming the tracks there are, never an empty answer.
    match store.query("capture", &["run"], ..) {
        Err(EngineError::UnknownTrack {
            selection, tracks, ..
        }) => {
            assert_eq!(selection, ["run"]);
            assert_eq!(tracks, [["run_7", "1"], ["run_7", "2"], ["run_70", "1"]]);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_real_file_system_round_trips_and_refuses_a_second_opener() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open_or_create(dir.path(), Config::default(), &[capture()]).unwrap();
    let rows: Vec<Row> = (0..100)
        .map(|i| row("run_7", i % 3, i, i as f64 * 0.5))
        .collect();
    store.publish("capture", 7, &rows).unwrap();
    let watermarks = store.seal().unwrap();
    assert_eq!(watermarks["capture"], Some(7));

    let second = Store::open(dir.path(), Config::default(), &[]).unwrap_err();
    assert!(second.is_locked(), "{second}");
    assert!(second.to_string().contains("locked"), "{second}");
    drop(store);

    let store = Store::open(dir.path(), Config::default(), &[]).unwrap();
    let back: Vec<Row> = values(&store);
    // One publish, three partitions: publish order is the ordinal order, across them.
    assert_eq!(back, rows);
}

#[test]
fn typed_rows_round_trip_by_field_name() {
    #[derive(serde::Serialize, serde::Deserialize, Debug, PartialEq, Clone)]
    struct Capture {
        note: String,
        value: f64,
        t: u64,
        probe: u64,
        run: String,
    }
    #[derive(serde::Serialize)]
    struct Short {
        run: String,
    }
    let fs = SimFs::new();
    let mut store = Store::open_or_create_in(sim(&fs), Config::default(), &[capture()]).unwrap();
    let rows = vec![
        Capture {
            note: "a".into(),
            value: 1.5,
            t: 3,
            probe: 2,
            run: "r".into(),
        },
        Capture {
            note: "b".into(),
            value: -2.0,
            t: 4,
            probe: 2,
            run: "r".into(),
        },
    ];
    store.publish_as("capture", 1, &rows).unwrap();
    store.seal().unwrap();
    let back: Vec<Capture> = store
        .query_as("capture", &["r"], ..)
        .unwrap()
        .into_iter()
        .map(|(_, c)| c)
        .collect();
    assert_eq!(back, rows);

    let error = store
        .publish_as("capture", 2, &[Short { run: "r".into() }])
        .unwrap_err();
    assert!(
        error
            .to_string()
            .contains("row 1 of the batch (counting from 1)")
            && error.to_string().contains("probe"),
        "{error}"
    );
}

// ---------------------------------------------------------------------------------------------
// Refusals: each names the row and the reason, and stages nothing of its batch.

/// Publishes a good batch, then `bad` (which must be refused), then seals, and checks that the
/// store holds exactly the good batch and stays usable.
fn assert_refused(bad: &[Row], position: u64, what: &str, row_idx: usize) {
    let fs = SimFs::new();
    let mut store = Store::open_or_create_in(sim(&fs), Config::default(), &[capture()]).unwrap();
    let good = vec![row("run_7", 1, 100, 1.0), row("run_7", 2, 100, 2.0)];
    store.publish("capture", 10, &good).unwrap();
    let error = store.publish("capture", position, bad).unwrap_err();
    let text = error.to_string();
    match &error {
        EngineError::Refused {
            row_idx: got,
            reason,
            ..
        } => {
            assert_eq!(*got, row_idx, "{text}");
            assert!(reason.contains(what), "{text} should say {what:?}");
        }
        other => panic!("{other}"),
    }
    // The message counts rows from 1, as a user does; the field keeps the 0-based index.
    assert!(
        text.contains(&format!(
            "row {} of the batch (counting from 1)",
            row_idx + 1
        )),
        "{text}"
    );
    store.seal().unwrap();
    let back: Vec<Row> = values(&store);
    assert_eq!(back, good, "nothing of the refused batch was staged");
    // And the store takes the next good batch.
    store
        .publish("capture", 11, &[row("run_7", 1, 101, 3.0)])
        .unwrap();
    store.seal().unwrap();
    assert_eq!(store.query("capture", &[], ..).unwrap().len(), 3);
}

#[test]
fn wrong_arity_is_refused() {
    let mut short = row("run_7", 1, 200, 1.0);
    short.pop();
    assert_refused(
        &[row("run_7", 1, 200, 1.0), short],
        10,
        "expected 5 values, got 4",
        1,
    );
}

#[test]
fn wrong_kind_is_refused() {
    let mut bad = row("run_7", 1, 200, 1.0);
    bad[1] = Value::I64(1);
    assert_refused(&[bad], 10, "field \"probe\" is a u64, got an i64 value", 0);
}

#[test]
fn an_empty_label_is_refused() {
    assert_refused(
        &[row("run_7", 1, 200, 1.0), row("", 1, 200, 1.0)],
        10,
        "empty",
        1,
    );
}

#[test]
fn a_label_with_a_control_character_is_refused() {
    assert_refused(&[row("run\u{1f}7", 1, 200, 1.0)], 10, "control", 0);
}

#[test]
fn a_missing_measure_is_stored_and_a_missing_axis_is_refused() {
    // NaN and the infinities are values a measured f64 may hold (#48); they read back as
    // they were published.
    let fs = SimFs::new();
    let mut store = Store::open_or_create_in(sim(&fs), Config::default(), &[capture()]).unwrap();
    let rows: Vec<Row> = [f64::NAN, f64::INFINITY, f64::NEG_INFINITY]
        .iter()
        .enumerate()
        .map(|(i, &v)| row("run_7", 1, 200 + i as u64, v))
        .collect();
    store.publish("capture", 10, &rows).unwrap();
    store.seal().unwrap();
    let back: Vec<Row> = store
        .query("capture", &[], ..)
        .unwrap()
        .into_iter()
        .map(|r| r.values)
        .collect();
    assert_eq!(back, rows);
    // The axis is never missing: refused at its row, naming the field.
    let mut no_axis = row("run_7", 1, 300, 1.0);
    no_axis[2] = Value::Null;
    assert_refused(
        &[row("run_7", 1, 200, 0.0), no_axis],
        10,
        "is missing, and it is the axis",
        1,
    );
}

#[test]
fn a_position_going_backwards_is_refused() {
    assert_refused(
        &[row("run_7", 1, 200, 1.0)],
        9,
        "below the stream's last position 10",
        0,
    );
}

#[test]
fn an_axis_going_backwards_in_its_partition_is_refused() {
    // Against the staged rows of the same partition...
    assert_refused(&[row("run_7", 1, 99, 1.0)], 10, "goes backwards", 0);
    // ...and within the batch itself.
    assert_refused(
        &[row("run_7", 3, 50, 1.0), row("run_7", 3, 40, 1.0)],
        10,
        "goes backwards",
        1,
    );
}

#[test]
fn an_axis_going_backwards_against_sealed_rows_is_refused_after_a_reopen() {
    let fs = SimFs::new();
    let mut store = Store::open_or_create_in(sim(&fs), Config::default(), &[capture()]).unwrap();
    store
        .publish("capture", 1, &[row("run_7", 1, 500, 1.0)])
        .unwrap();
    store.seal().unwrap();
    drop(store);
    let mut store = Store::open_in(sim(&fs), Config::default(), &[]).unwrap();
    let error = store
        .publish("capture", 2, &[row("run_7", 1, 499, 1.0)])
        .unwrap_err();
    assert!(error.to_string().contains("499 after 500"), "{error}");
    // Another partition is free to start lower.
    store
        .publish("capture", 2, &[row("run_7", 2, 1, 1.0)])
        .unwrap();
}

#[test]
fn an_unknown_stream_is_refused() {
    let fs = SimFs::new();
    let mut store = Store::open_or_create_in(sim(&fs), Config::default(), &[capture()]).unwrap();
    let error = store
        .publish("captur", 1, &[row("run_7", 1, 1, 1.0)])
        .unwrap_err();
    assert!(
        matches!(&error, EngineError::UnknownStream { stream, declared }
            if stream == "captur" && declared == &["capture"]),
        "{error}"
    );
    assert!(store.query("captur", &[], ..).is_err());
    assert_eq!(store.staged_bytes(), 0);
}

#[test]
fn staging_past_its_bound_asks_for_a_seal_and_stages_nothing() {
    let fs = SimFs::new();
    let config = Config::default().staged_bytes_max(1000);
    let mut store = Store::open_or_create_in(sim(&fs), config, &[capture()]).unwrap();
    let batch: Vec<Row> = (0..10).map(|t| row("run_7", 1, t, 0.0)).collect();
    store.publish("capture", 1, &batch).unwrap();
    let staged = store.staged_bytes();
    let next: Vec<Row> = (10..20).map(|t| row("run_7", 1, t, 0.0)).collect();
    let error = store.publish("capture", 2, &next).unwrap_err();
    assert!(matches!(error, EngineError::StagingFull { .. }), "{error}");
    assert!(error.to_string().contains("seal"), "{error}");
    assert_eq!(
        store.staged_bytes(),
        staged,
        "nothing of the refused batch was staged"
    );
    store.seal().unwrap();
    assert_eq!(store.staged_bytes(), 0);
    store.publish("capture", 2, &next).unwrap();
    store.seal().unwrap();
    assert_eq!(store.query("capture", &[], ..).unwrap().len(), 20);
}

#[test]
fn a_conflicting_redeclaration_is_an_error_and_the_recorded_one_stays() {
    let fs = SimFs::new();
    drop(Store::open_or_create_in(sim(&fs), Config::default(), &[capture()]).unwrap());
    let other = Stream::new("capture")
        .field("run", FieldKind::Str)
        .track(["run"])
        .build()
        .unwrap();
    let error = Store::open_or_create_in(sim(&fs), Config::default(), &[other]).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("conflicts with the recorded declaration"),
        "{error}"
    );
    let store = Store::open_in(sim(&fs), Config::default(), &[]).unwrap();
    assert_eq!(store.stream("capture"), Some(&capture()));
}

// ---------------------------------------------------------------------------------------------
// Failures and crashes of the barrier.

#[test]
fn a_failed_sync_poisons_the_store_until_it_is_reopened() {
    let fs = SimFs::new();
    let mut store = Store::open_or_create_in(sim(&fs), Config::default(), &[capture()]).unwrap();
    store
        .publish("capture", 1, &[row("run_7", 1, 1, 1.0)])
        .unwrap();
    store.seal().unwrap();
    store
        .publish("capture", 2, &[row("run_7", 1, 2, 2.0)])
        .unwrap();
    fs.fail_at(fs.ops() + 2, Fault::Eio); // the segment's fdatasync
    let error = store.seal().unwrap_err();
    assert!(error.to_string().contains("os error 5"), "{error}");
    let again = store
        .publish("capture", 3, &[row("run_7", 1, 3, 3.0)])
        .unwrap_err();
    assert!(matches!(again, EngineError::Poisoned { .. }), "{again}");
    assert!(matches!(
        store.seal().unwrap_err(),
        EngineError::Poisoned { .. }
    ));
    drop(store);
    let store = Store::open_in(sim(&fs), Config::default(), &[]).unwrap();
    assert_eq!(store.watermark("capture", &[]).unwrap(), Some(1));
    assert_eq!(store.query("capture", &[], ..).unwrap().len(), 1);
}

#[test]
fn a_barrier_costs_a_fixed_number_of_syncs_however_many_partitions_it_touches() {
    let mut per_barrier = Vec::new();
    for n_partitions in [1u64, 3, 64] {
        let fs = SimFs::new();
        let mut store =
            Store::open_or_create_in(sim(&fs), Config::default(), &[capture()]).unwrap();
        let rows: Vec<Row> = (0..n_partitions).map(|p| row("run", p, 1, 0.0)).collect();
        store.publish("capture", 1, &rows).unwrap();
        store.seal().unwrap();
        let metrics = store.metrics();
        assert_eq!(metrics.barriers, 1);
        per_barrier.push(metrics.barrier_syncs);
    }
    // File data, segment folder, tmp folder, manifest: see docs/barrier.md.
    assert_eq!(per_barrier, [4, 4, 4]);
}

#[test]
fn a_seal_of_three_partitions_crashed_at_every_operation_is_all_or_nothing() {
    for mode in MODES {
        let first: Vec<Row> = vec![row("a", 1, 1, 1.0), row("b", 1, 1, 2.0)];
        let second: Vec<Row> = vec![
            row("a", 1, 2, 3.0),
            row("b", 1, 2, 4.0),
            row("c", 9, 2, 5.0),
        ];
        let open = |fs: &SimFs| {
            Store::open_or_create_in(sim(fs), Config::default(), &[capture()]).unwrap()
        };
        // How many operations the second barrier takes, uncrashed.
        let probe = SimFs::with_rename_mode(mode);
        let mut store = open(&probe);
        store.publish("capture", 1, &first).unwrap();
        store.seal().unwrap();
        store.publish("capture", 2, &second).unwrap();
        let start = probe.ops();
        store.seal().unwrap();
        let n_ops = probe.ops() - start;
        drop(store);
        assert!(n_ops >= 8);

        for crash_op in 0..n_ops {
            for image in 0..SimFs::CRASH_IMAGES {
                let fs = SimFs::with_rename_mode(mode);
                let mut store = open(&fs);
                store.publish("capture", 1, &first).unwrap();
                store.seal().unwrap();
                store.publish("capture", 2, &second).unwrap();
                fs.crash_at(fs.ops() + crash_op);
                store.seal().unwrap_err();
                drop(store);
                let fs = fs.crash_image(image);
                let store = open(&fs);
                // Whatever the crash left is healed: no temp survives boot, and no second
                // name of the barrier's segment is kept as a spurious copy beside it.
                assert!(fs.list("tmp").unwrap().is_empty(), "{mode:?} op {crash_op}");
                let bytes: Vec<Vec<u8>> = fs
                    .paths()
                    .iter()
                    .filter(|p| p.starts_with("seg/") || p.starts_with("quarantine/"))
                    .map(|p| fs.live_bytes(p).unwrap())
                    .collect();
                for (idx, file) in bytes.iter().enumerate() {
                    assert!(
                        !bytes[..idx].contains(file),
                        "{mode:?} op {crash_op} image {image}: a second copy kept"
                    );
                }
                let back: Vec<Row> = values(&store);
                let watermark = store.watermark("capture", &[]).unwrap();
                let context = format!("{mode:?} crash at op {crash_op}, image {image}");
                if back.len() == first.len() {
                    assert_eq!(back, first, "{context}");
                    assert_eq!(watermark, Some(1), "{context}: the last acknowledged seal");
                } else {
                    // The crashed barrier's frame reached the disk whole: all of it is there.
                    let mut all = first.clone();
                    all.extend(second.iter().cloned());
                    assert_eq!(back, all, "{context}");
                    assert_eq!(watermark, Some(2), "{context}");
                }
            }
        }
    }
}

/// A barrier big enough that its segment streams out in several writes (columns past
/// `WRITE_DIRECT_BYTES` go out on their own), crashed at every operation, each write torn: the
/// barrier is all there after boot or not at all.
#[test]
fn a_seal_streamed_in_several_writes_crashed_at_every_operation_is_all_or_nothing() {
    let first: Vec<Row> = vec![row("a", 1, 1, 1.0)];
    let second: Vec<Row> = (0..20_000u64)
        .map(|i| row("a", i % 2, 2 + i / 2, i as f64))
        .collect();
    let open =
        |fs: &SimFs| Store::open_or_create_in(sim(fs), Config::default(), &[capture()]).unwrap();
    for mode in MODES {
        let probe = SimFs::with_rename_mode(mode);
        let mut store = open(&probe);
        store.publish("capture", 1, &first).unwrap();
        store.seal().unwrap();
        store.publish("capture", 2, &second).unwrap();
        let start = probe.ops();
        store.seal().unwrap();
        let n_ops = probe.ops() - start;
        // create, the writes, sync, rename (one or two), two directory syncs, append, sync.
        assert!(
            n_ops >= 12,
            "{n_ops} operations: the segment went out in several writes"
        );
        drop(store);
        for crash_op in 0..n_ops {
            for image in 0..SimFs::CRASH_IMAGES {
                let fs = SimFs::with_rename_mode(mode);
                let mut store = open(&fs);
                store.publish("capture", 1, &first).unwrap();
                store.seal().unwrap();
                store.publish("capture", 2, &second).unwrap();
                fs.crash_at(fs.ops() + crash_op);
                store.seal().unwrap_err();
                drop(store);
                let fs = fs.crash_image(image);
                let store = open(&fs);
                let context = format!("{mode:?} crash at op {crash_op}, image {image}");
                assert!(fs.list("tmp").unwrap().is_empty(), "{context}");
                let back = values(&store);
                let watermark = store.watermark("capture", &[]).unwrap();
                if back.len() == first.len() {
                    assert_eq!(back, first, "{context}");
                    assert_eq!(watermark, Some(1), "{context}");
                } else {
                    assert_eq!(back.len(), first.len() + second.len(), "{context}");
                    assert_eq!(back[..1], first, "{context}");
                    // Publish order across the two tracks is the order published.
                    assert!(
                        back[1..] == second,
                        "{context}: the barrier read back differs"
                    );
                    assert_eq!(watermark, Some(2), "{context}");
                }
            }
        }
    }
}

#[test]
fn a_store_on_a_real_file_system_without_noreplace_seals_and_reopens() {
    use strata::segment::vfs::RealFs;
    let dir = tempfile::tempdir().unwrap();
    let open = || {
        let fs = RealFs::open_link_unlink(dir.path()).unwrap();
        Store::open_or_create_in(Arc::new(fs), Config::default(), &[capture()]).unwrap()
    };
    let mut store = open();
    assert_eq!(store.rename_mode(), RenameMode::LinkUnlink);
    store.publish("capture", 1, &[row("a", 1, 1, 1.0)]).unwrap();
    store.seal().unwrap();
    drop(store);
    let tmp: Vec<_> = std::fs::read_dir(dir.path().join("tmp")).unwrap().collect();
    assert!(tmp.is_empty(), "the temp's name was unlinked");
    let store = open();
    assert!(store.boot_report().is_clean(), "{:?}", store.boot_report());
    assert_eq!(values(&store), [row("a", 1, 1, 1.0)]);
    // On an ordinary file system the flag works, and the first rename says so.
    let plain = tempfile::tempdir().unwrap();
    let fs = RealFs::open(plain.path()).unwrap();
    let mut store =
        Store::open_or_create_in(Arc::new(fs), Config::default(), &[capture()]).unwrap();
    store.publish("capture", 1, &[row("a", 1, 1, 1.0)]).unwrap();
    store.seal().unwrap();
    assert_eq!(store.rename_mode(), RenameMode::Noreplace);
}

#[test]
fn rows_published_after_a_crash_continue_the_ordinals() {
    let fs = SimFs::new();
    let mut store = Store::open_or_create_in(sim(&fs), Config::default(), &[capture()]).unwrap();
    store.publish("capture", 1, &[row("a", 1, 1, 1.0)]).unwrap();
    store.seal().unwrap();
    store.publish("capture", 2, &[row("a", 1, 2, 2.0)]).unwrap();
    drop(store); // staged, never sealed: lost by design
    let fs = fs.crash();
    let mut store = Store::open_in(sim(&fs), Config::default(), &[]).unwrap();
    store
        .publish("capture", 2, &[row("b", 1, 2, 3.0), row("a", 1, 3, 4.0)])
        .unwrap();
    store.seal().unwrap();
    let values: Vec<Value> = store
        .query("capture", &[], ..)
        .unwrap()
        .into_iter()
        .map(|r| r.values[3].clone())
        .collect();
    assert_eq!(values, [Value::F64(1.0), Value::F64(3.0), Value::F64(4.0)]);
}

/// A snapshot past `manifest_rewrite_bytes` was rewritten after every barrier (each rewrite
/// costing the whole live state); now a rewrite waits until the manifest has doubled since the
/// last one, so 200 barriers take a handful of rewrites, not 200.
#[test]
fn a_snapshot_past_the_rewrite_threshold_is_not_rewritten_after_every_barrier() {
    let fs = SimFs::new();
    let config = Config::default().manifest_rewrite_bytes(1);
    let mut store = Store::open_or_create_in(sim(&fs), config.clone(), &[capture()]).unwrap();
    let mut all = Vec::new();
    for position in 1..=200u64 {
        let rows = vec![row("run_7", position % 4, position, position as f64)];
        store.publish("capture", position, &rows).unwrap();
        store.seal().unwrap();
        all.extend(rows);
    }
    drop(store);
    let names: Vec<String> = fs.list("").unwrap().into_iter().map(|e| e.name).collect();
    let generation: u32 = names
        .iter()
        .filter_map(|n| n.strip_prefix("manifest-")?.parse().ok())
        .max()
        .unwrap();
    // Doubling from one barrier's frame to 200: about log2(200) = 8 rewrites, never 200.
    assert!((3..=16).contains(&generation), "generation {generation}");
    let store = Store::open_in(sim(&fs.crash()), config, &[]).unwrap();
    assert_eq!(values(&store), all);
}

#[test]
fn a_manifest_past_its_rewrite_threshold_is_rewritten_as_a_snapshot_and_boots_the_same() {
    for mode in MODES {
        let fs = SimFs::with_rename_mode(mode);
        let config = Config::default().manifest_rewrite_bytes(1);
        let mut store = Store::open_or_create_in(sim(&fs), config.clone(), &[capture()]).unwrap();
        let mut all = Vec::new();
        for position in 1..=5u64 {
            let rows: Vec<Row> = (0..3)
                .map(|p| row("run_7", p, position, position as f64))
                .collect();
            store.publish("capture", position, &rows).unwrap();
            store.seal().unwrap();
            all.extend(rows);
        }
        drop(store);
        let fs = fs.crash();
        let names: Vec<String> = fs.list("").unwrap().into_iter().map(|e| e.name).collect();
        let manifests: Vec<&String> = names
            .iter()
            .filter(|n| n.starts_with("manifest-"))
            .collect();
        // Rewrites happened (the threshold is one byte), and only the newest generation is left,
        // with the one its snapshot was taken from beside it (its way back).
        assert_eq!(manifests.len(), 2, "{names:?}");
        assert_ne!(manifests[1], "manifest-000001", "{names:?}");
        let current: u32 = manifests[1]["manifest-".len()..].parse().unwrap();
        assert_eq!(*manifests[0], format!("manifest-{:06}", current - 1));
        let store = Store::open_in(sim(&fs), config, &[]).unwrap();
        assert!(
            store.boot_report().is_clean(),
            "{:?}",
            store.boot_report().findings
        );
        let back: Vec<Row> = values(&store);
        assert_eq!(back, all);
        assert_eq!(store.watermark("capture", &[]).unwrap(), Some(5));
    }
}

/// A range that holds no value answers nothing: `..0` once answered the rows at position 0 (and
/// axis 0), and `(Excluded(u64::MAX), ..)` the rows at `u64::MAX`, because the exclusive end was
/// saturated into a value it excludes. The store and the reference model agree. A range given
/// backwards (`9..=3`) is a mistake the store refuses, and the `Series` surface answers nothing
/// (a host computes its ranges).
#[test]
fn ranges_that_hold_no_value_answer_nothing() {
    use std::ops::Bound::{Excluded, Included, Unbounded};
    let fs = SimFs::new();
    let mut store = Store::open_or_create_in(sim(&fs), Config::default(), &[capture()]).unwrap();
    let mut model = strata::MemorySeries::new(&[capture()]);
    let rows = [row("run_7", 1, 0, 1.5), row("run_7", 1, u64::MAX, 2.5)];
    store.publish("capture", 0, &rows[..1]).unwrap();
    store.publish("capture", u64::MAX, &rows[1..]).unwrap();
    store.seal().unwrap();
    let empty: [(std::ops::Bound<u64>, std::ops::Bound<u64>); 3] = [
        (Unbounded, Excluded(0)),
        (Excluded(u64::MAX), Unbounded),
        (Included(5), Excluded(5)),
    ];
    for inverted in [(Included(9), Included(3)), (Excluded(9), Excluded(3))] {
        assert!(matches!(
            store.query("capture", &[], inverted),
            Err(EngineError::InvertedRange {
                start: 9,
                end: 3,
                unit: "position"
            })
        ));
        assert!(matches!(
            store.fold("capture", &[], inverted, strata::Aggregate::Count),
            Err(EngineError::InvertedRange {
                start: 9,
                end: 3,
                unit: "axis value"
            })
        ));
        assert!(matches!(
            model.query("capture", &[], inverted),
            Err(EngineError::InvertedRange {
                start: 9,
                end: 3,
                unit: "position"
            })
        ));
        let through_series = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(strata::Series::rows(
                &mut store,
                "capture",
                &[],
                inverted.0,
                inverted.1,
            ));
        assert_eq!(
            through_series,
            Ok(Vec::new()),
            "a host's range answers nothing"
        );
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    runtime.block_on(async {
        use strata::Series;
        model
            .publish("capture", 0, rows[..1].to_vec())
            .await
            .unwrap();
        model
            .publish("capture", u64::MAX, rows[1..].to_vec())
            .await
            .unwrap();
        model.seal("capture", &[]).await.unwrap();
        for range in empty {
            assert_eq!(store.query("capture", &[], range).unwrap(), [], "{range:?}");
            assert_eq!(
                model.rows("capture", &[], range.0, range.1).await.unwrap(),
                [],
                "model {range:?}"
            );
            let count = store
                .fold("capture", &[], range, strata::Aggregate::Count)
                .unwrap();
            assert!(
                count
                    .iter()
                    .all(|s| s.value == strata::Aggregate::Count.of_no_rows()),
                "{range:?}: {count:?}"
            );
            assert_eq!(
                model
                    .aggregate("capture", &[], range.0, range.1, strata::Aggregate::Count)
                    .await
                    .unwrap(),
                count,
                "model {range:?}"
            );
        }
    });
    // The whole range still answers both rows.
    assert_eq!(store.query("capture", &[], ..).unwrap().len(), 2);
}

/// A block damaged part-way through a streamed read: the rows before it, then one `Err`
/// naming the file, then nothing; never a wrong row, and `query` answers the error whole.
#[test]
fn a_streamed_read_ends_with_an_error_at_a_damaged_block() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open_or_create(dir.path(), Config::default(), &[capture()]).unwrap();
    for (position, t) in [(1, 10), (2, 20)] {
        let rows = [row("a", 1, t, 1.0), row("b", 2, t, 2.0)];
        store.publish("capture", position, &rows).unwrap();
        store.seal().unwrap();
    }
    drop(store);
    let mut names: Vec<_> = std::fs::read_dir(dir.path().join("seg"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    names.sort();
    assert_eq!(names.len(), 2, "{names:?}");
    // The second barrier's file: its first block (past the 32-byte header) fails its crc.
    let mut bytes = std::fs::read(&names[1]).unwrap();
    bytes[32] ^= 0xff;
    std::fs::write(&names[1], bytes).unwrap();
    let store = Store::open_or_create(dir.path(), Config::default(), &[capture()]).unwrap();

    // A prefix of the answer from the first file (a partition moves on to the second file when
    // its rows there run out, before the merge has handed out the other's), then the error.
    let items: Vec<_> = store.query_iter("capture", &[], ..).unwrap().collect();
    let (error, rows) = items.split_last().unwrap();
    let rows: Vec<Row> = rows
        .iter()
        .map(|r| r.as_ref().unwrap().values.clone())
        .collect();
    let first_file = [row("a", 1, 10, 1.0), row("b", 2, 10, 2.0)];
    assert!(
        !rows.is_empty() && first_file.starts_with(&rows),
        "{items:?}"
    );
    let error = error.as_ref().unwrap_err();
    assert!(matches!(error, EngineError::Unreadable { .. }), "{error}");
    assert!(error.to_string().contains("checksum mismatch"), "{error}");

    let runs: Vec<_> = store.query_runs("capture", &[], ..).unwrap().collect();
    assert!(
        runs.iter()
            .take_while(|r| r.is_ok())
            .all(|r| r.as_ref().unwrap().len() == 1)
    );
    assert!(runs.last().unwrap().is_err(), "{runs:?}");
    assert_eq!(runs.iter().filter(|r| r.is_err()).count(), 1, "{runs:?}");

    let whole = store.query("capture", &[], ..);
    assert!(
        matches!(whole, Err(EngineError::Unreadable { .. })),
        "{whole:?}"
    );
    // A read that stops before the damaged file answers whole.
    assert_eq!(store.query("capture", &[], ..=1).unwrap().len(), 2);
}

/// Every state of `bytes` (generation `generation`'s manifest), found by the test itself: the
/// header's end and each frame's end, with the crc32c of the bytes before it.
fn states_of(generation: u32, bytes: &[u8]) -> Vec<strata::index::ManifestState> {
    let mut at = strata::index::LOG_HEADER_LEN;
    let mut ends = vec![at];
    while at < bytes.len() {
        at += strata::index::decode_frame(&bytes[at..]).unwrap().1;
        ends.push(at);
    }
    ends.into_iter()
        .map(|end| strata::index::ManifestState {
            generation,
            end: end as u64,
            crc: crc32c::crc32c(&bytes[..end]),
        })
        .collect()
}

/// A rewrite records in the new generation the states of the one it replaces (every frame
/// boundary, with the crc32c of the bytes before it: what a bucket's `log/` object records of
/// the manifest it copied), after the lineage it had, keeping the newest
/// `Config::lineage_states_max`; a reopen reads the same lineage back (#28).
#[test]
fn each_rewrite_keeps_the_newest_states_of_the_generations_it_replaced_up_to_the_bound() {
    use strata::index::Holds;
    let fs = SimFs::new();
    let config = Config::default().lineage_states_max(12);
    let mut store = Store::open_or_create_in(sim(&fs), config.clone(), &[capture()]).unwrap();
    let mut replaced = Vec::new();
    let mut position = 0;
    for _ in 0..6 {
        for _ in 0..6 {
            position += 1;
            let rows = vec![row("run_7", 1, position, position as f64)];
            store.publish("capture", position, &rows).unwrap();
            store.seal().unwrap();
        }
        // Merged into one file, the live state's snapshot is a fraction of the frames.
        // (Step by step: `compact` would checkpoint before the test reads the manifest.)
        while store.compact_step().unwrap().is_some() {}
        let names = fs.list("").unwrap();
        let name = names
            .iter()
            .map(|e| e.name.clone())
            .filter(|n| n.starts_with("manifest-"))
            .max()
            .unwrap();
        let generation: u32 = name["manifest-".len()..].parse().unwrap();
        let bytes = fs.read(&name).unwrap();
        replaced.extend(states_of(generation, &bytes));
        assert!(
            store.checkpoint().unwrap(),
            "a rewrite of generation {generation}"
        );
        // Replaced, and kept beside its successor as its way back; the one before it is gone.
        assert!(fs.exists(&name).unwrap(), "{name} is kept");
        let before = format!("manifest-{:06}", generation - 1);
        assert!(!fs.exists(&before).unwrap(), "{before} was removed");
    }
    let lineage = store.catalog().lineage().clone();
    assert_eq!(lineage.len(), 12, "the bound is reached, and held");
    let (dropped, kept) = replaced.split_at(replaced.len() - 12);
    let held: Vec<_> = lineage
        .runs()
        .iter()
        .flat_map(|run| {
            run.states
                .iter()
                .map(|&(end, crc)| strata::index::ManifestState {
                    generation: run.generation,
                    end,
                    crc,
                })
        })
        .collect();
    assert_eq!(held, kept, "the newest states, oldest first");
    for &state in kept {
        let forked = strata::index::ManifestState {
            crc: !state.crc,
            ..state
        };
        assert_eq!(lineage.holds(forked), Holds::Differs { crc: state.crc });
    }
    for &state in dropped {
        assert!(matches!(lineage.holds(state), Holds::Older { .. }));
    }
    drop(store);
    let store = Store::open_in(sim(&fs.crash()), config, &[]).unwrap();
    assert_eq!(
        store.catalog().lineage(),
        &lineage,
        "a reopen reads it back"
    );
}

// ---------------------------------------------------------------------------------------------
// Where free positions start.

#[derive(Clone, Debug)]
enum PositionOp {
    /// A row at the last position published plus this much (so positions never go back).
    Publish(u64),
    /// A row at `Store::next_position`, which must be accepted.
    PublishNext,
    Seal,
    /// Reopen without sealing: staged rows are gone.
    Reopen,
    /// Trim to the watermark (retiring everything sealed): the floor moves past it.
    TrimAll,
}

fn position_op() -> impl Strategy<Value = PositionOp> {
    prop_oneof![
        3 => (0u64..3).prop_map(PositionOp::Publish),
        2 => Just(PositionOp::PublishNext),
        2 => Just(PositionOp::Seal),
        1 => Just(PositionOp::Reopen),
        1 => Just(PositionOp::TrimAll),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// The law of `Store::next_position`: it is one above every position published and still
    /// held (sealed, or staged in this open), 0 before any, whatever was sealed, reopened or
    /// trimmed; and a publish there is always accepted.
    #[test]
    fn next_position_is_one_above_everything_published_and_is_always_accepted(
        ops in proptest::collection::vec(position_op(), 1..40),
    ) {
        let fs = SimFs::new();
        let open = || Store::open_or_create_in(sim(&fs), Config::default(), &[capture()]).unwrap();
        let mut store = open();
        // The model: the highest position sealed, and the highest published since the last
        // seal (lost by a reopen).
        let (mut sealed, mut staged): (Option<u64>, Option<u64>) = (None, None);
        // What a trim retired: nothing at or below it may be published again.
        let mut trimmed: Option<u64> = None;
        let mut t = 0;
        for op in ops {
            let taken = sealed.max(staged);
            match op {
                PositionOp::Publish(step) => {
                    let position = taken.map_or(step, |p| p + step);
                    let position = trimmed.map_or(position, |h| position.max(h + 1));
                    t += 1;
                    store.publish("capture", position, &[row("a", 1, t, 0.5)]).unwrap();
                    staged = staged.max(Some(position));
                }
                PositionOp::PublishNext => {
                    let position = store.next_position("capture").unwrap().unwrap();
                    t += 1;
                    store.publish("capture", position, &[row("a", 1, t, 0.5)]).unwrap();
                    staged = staged.max(Some(position));
                }
                PositionOp::Seal => {
                    store.seal().unwrap();
                    sealed = taken;
                    staged = None;
                }
                PositionOp::Reopen => {
                    drop(store);
                    store = open();
                    staged = None;
                }
                PositionOp::TrimAll => {
                    // Only with nothing staged: a staged row may share the watermark's position.
                    if let (Some(watermark), None) =
                        (store.watermark("capture", &[]).unwrap(), staged)
                    {
                        store.trim_to("capture", watermark).unwrap();
                        trimmed = Some(watermark);
                    }
                }
            }
            let expected = sealed.max(staged).map_or(0, |p| p + 1);
            prop_assert_eq!(store.next_position("capture").unwrap(), Some(expected));
        }
    }
}

/// Flips a byte in the middle of frame `frame_idx` (0 is the declaration) of a store's manifest.
fn damage_frame(dir: &std::path::Path, frame_idx: usize) {
    let path = dir.join("manifest-000001");
    let mut bytes = std::fs::read(&path).unwrap();
    let mut at = strata::index::LOG_HEADER_LEN;
    for _ in 0..frame_idx {
        at += strata::index::decode_frame(&bytes[at..]).unwrap().1;
    }
    let frame_len = strata::index::decode_frame(&bytes[at..]).unwrap().1;
    bytes[at + frame_len / 2] ^= 0x40;
    std::fs::write(&path, &bytes).unwrap();
}

/// #28 item 10: after a repair cut the frame that declared a stream, the stream declared again
/// has no watermark, but its fence still holds (positions at or below it are never reused).
/// `next_position` answers above the fence, where a publish is accepted; the fence itself is
/// refused; and `fence` says what constrains it.
#[test]
fn a_stream_declared_again_after_a_repair_takes_positions_above_its_fence() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::create(dir.path(), Config::default(), &[capture()]).unwrap();
    for (position, t) in [(500, 1), (1000, 2), (1500, 3)] {
        store
            .publish("capture", position, &[row("a", 1, t, 0.5)])
            .unwrap();
        store.seal().unwrap();
    }
    drop(store);
    damage_frame(dir.path(), 0);
    let vfs = strata::segment::vfs::RealFs::open(dir.path()).unwrap();
    let repaired = strata::recover::repair(&vfs).unwrap();
    assert_eq!(repaired.cut.unwrap().fences.get("capture"), Some(&1500));

    let mut store = Store::open(dir.path(), Config::default(), &[capture()]).unwrap();
    assert_eq!(store.watermark("capture", &[]).unwrap(), None);
    assert_eq!(store.fence("capture").unwrap(), Some(1500));
    assert_eq!(store.next_position("capture").unwrap(), Some(1501));
    let refused = store
        .publish("capture", 1500, &[row("a", 1, 9, 0.5)])
        .unwrap_err();
    assert!(refused.to_string().contains("fence"), "{refused}");
    store
        .publish("capture", 1501, &[row("a", 1, 9, 0.5)])
        .unwrap();
    store.seal().unwrap();
    assert_eq!(store.next_position("capture").unwrap(), Some(1502));
    assert!(matches!(
        store.next_position("nope"),
        Err(EngineError::UnknownStream { .. })
    ));
}

/// `Store::reserve_names` makes every later file's name rise above the reservation, durably:
/// the next barrier after a reopen is named above it too; a reservation below what the store
/// would issue anyway writes nothing.
#[test]
fn reserved_names_are_never_issued_even_after_a_reopen() {
    let fs = SimFs::new();
    let mut store = Store::open_or_create_in(sim(&fs), Config::default(), &[capture()]).unwrap();
    store.publish("capture", 1, &[row("a", 1, 1, 1.0)]).unwrap();
    store.seal().unwrap();
    assert!(!store.reserve_names(0).unwrap(), "nothing to reserve");
    assert!(store.reserve_names(500).unwrap());
    drop(store);
    let mut store = Store::open_in(sim(&fs.crash()), Config::default(), &[]).unwrap();
    store.publish("capture", 2, &[row("a", 1, 2, 2.0)]).unwrap();
    store.seal().unwrap();
    let names: Vec<u64> = store.catalog().live_files().map(|f| f.name).collect();
    assert_eq!(names.len(), 2);
    assert!(names[0] < 500 && names[1] > 500, "{names:?}");
}
