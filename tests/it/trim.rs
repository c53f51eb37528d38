//! `trim_to` and the raw floor: each read kind against the floor (query and percentiles refused
//! beneath it and answered whole above it, surveys and level folds still answered), the floor
//! kept across reopens and manifest rewrites, publishes beneath it refused, and a trim crashed
//! at every operation leaving the floor before or after, never partial, with nothing live lost.

use std::fmt::Write;

use strata::index::{RawFloor, Tier, TrackKey};
use strata::segment::vfs::{SimFs, Vfs};
use strata::{
    Aggregate, BeneathWindow, Config, EngineError, FieldKind, Row, Store, Stream, StreamDecl, Value,
};

use crate::support::{MODES, sim};

/// An axial stream with levels (base 4, fanout 2).
fn capture() -> StreamDecl {
    Stream::new("capture")
        .field("run", FieldKind::Str)
        .field("probe", FieldKind::U64)
        .field("t", FieldKind::U64)
        .field("value", FieldKind::F64)
        .field("count", FieldKind::I64)
        .track(["run", "probe"])
        .axis("t")
        .ladder(4, 2)
        .build()
        .unwrap()
}

/// A stream without an axis, so without levels: a trim can retire every tier of its files.
fn notes() -> StreamDecl {
    Stream::new("notes")
        .field("run", FieldKind::Str)
        .field("note", FieldKind::Str)
        .track(["run"])
        .build()
        .unwrap()
}

fn row(run: &str, probe: u64, t: u64, value: i32) -> Row {
    vec![
        Value::Str(run.into()),
        Value::U64(probe),
        Value::U64(t),
        Value::F64(f64::from(value) / 4.0),
        Value::I64(i64::from(value) * 3),
    ]
}

fn note(run: &str, position: u64) -> Row {
    vec![
        Value::Str(run.into()),
        Value::Str(format!("{run}@{position}")),
    ]
}

/// Barriers at positions `first..first + n`: partitions a/1 (axis 3p and 3p + 1) and b/2
/// (axis 3p) in each, c/3 (axis 3p) every third position from 1; and `notes` rows of x (and y
/// every other position).
fn fill(store: &mut Store, first: u64, n: u64) {
    fill_streams(store, first, n, true);
}

/// `fill`, with or without the `notes` rows.
fn fill_streams(store: &mut Store, first: u64, n: u64, with_notes: bool) {
    for position in first..first + n {
        let t = position * 3;
        let v = i32::try_from(position).unwrap();
        let mut rows = vec![
            row("a", 1, t, v % 7 - 3),
            row("b", 2, t, 5 - v % 5),
            row("a", 1, t + 1, v % 3),
        ];
        if position % 3 == 1 {
            rows.push(row("c", 3, t, v));
        }
        store.publish("capture", position, &rows).unwrap();
        if !with_notes {
            store.seal().unwrap();
            continue;
        }
        let mut notes = vec![note("x", position)];
        if position % 2 == 0 {
            notes.push(note("y", position));
        }
        store.publish("notes", position, &notes).unwrap();
        store.seal().unwrap();
    }
}

/// Barriers of `notes` alone: a trim can leave their files wholly retired.
fn fill_notes(store: &mut Store, first: u64, n: u64) {
    for position in first..first + n {
        store
            .publish("notes", position, &[note("x", position)])
            .unwrap();
        store.seal().unwrap();
    }
}

/// Seals barriers into a store: `(store, first_position, n_barriers)`.
type Fill = fn(&mut Store, u64, u64);

fn open(fs: &SimFs, config: Config) -> Store {
    Store::open_or_create_in(sim(fs), config, &[capture(), notes()]).unwrap()
}

fn key(labels: &[&str]) -> TrackKey {
    TrackKey::encode(labels).unwrap()
}

fn floor(position: u64, axis: Option<u64>) -> RawFloor {
    RawFloor { position, axis }
}

fn refused(answer: Result<impl std::fmt::Debug, EngineError>) -> (u64, &'static str) {
    match answer {
        Err(EngineError::Floor { floor, unit, .. }) => (floor, unit),
        other => panic!("expected a Floor refusal, got {other:?}"),
    }
}

const SELECTIONS: [&[&str]; 5] = [&[], &["a"], &["a", "1"], &["b", "2"], &["c", "3"]];

/// Every answer of the store, written out whole, refusals included: queries and percentiles
/// beneath, across and above the floors, surveys and level folds over everything.
fn answers(store: &Store) -> String {
    let mut out = String::new();
    for selection in SELECTIONS {
        for range in [0..=u64::MAX, 3..=9, 5..=9, 6..=20] {
            let rows = store.query("capture", selection, range.clone());
            writeln!(out, "query {selection:?} {range:?} {rows:?}").unwrap();
        }
        for range in [0..=u64::MAX, 12..=40, 15..=40, 21..=40] {
            for aggregate in [Aggregate::p(0), Aggregate::p(50), Aggregate::p(100)] {
                let stat = store.fold("capture", selection, range.clone(), aggregate);
                writeln!(out, "fold {selection:?} {aggregate} {range:?} {stat:?}").unwrap();
            }
        }
        for aggregate in Aggregate::LEVEL_FOLDS {
            let stat = store.fold("capture", selection, .., aggregate);
            writeln!(out, "fold {selection:?} {aggregate} {stat:?}").unwrap();
        }
        let survey = store.survey("capture", selection, .., 64);
        writeln!(out, "survey {selection:?} {survey:?}").unwrap();
    }
    for selection in [&[][..], &["x"], &["y"]] {
        for range in [0..=u64::MAX, 5..=9] {
            let rows = store.query("notes", selection, range.clone());
            writeln!(out, "notes {selection:?} {range:?} {rows:?}").unwrap();
        }
    }
    for stream in ["capture", "notes"] {
        let floors: Vec<_> = store
            .catalog()
            .floors(stream, &TrackKey::ROOT)
            .map(|(track, floors)| (track.clone(), floors.clone()))
            .collect();
        writeln!(out, "floors {stream} {floors:?}").unwrap();
    }
    out
}

/// `answers`, and each partition's live raw segments: what a trim retires, which a crash must
/// not leave half-recorded.
fn state(store: &Store) -> String {
    let mut out = answers(store);
    for stream in ["capture", "notes"] {
        for view in store.catalog().partitions(stream, &TrackKey::ROOT) {
            let raw: Vec<u64> = view.segments(Tier::Raw).map(|(name, _)| name).collect();
            writeln!(out, "raw {stream} {:?} {raw:?}", view.track()).unwrap();
        }
    }
    out
}

/// Each read kind against the raw floor, after `trim_to(4)` of positions 1..=8.
#[test]
fn reads_beneath_the_raw_floor_are_refused_and_above_it_answered_whole() {
    let fs = SimFs::new();
    let mut store = open(&fs, Config::default());
    fill(&mut store, 1, 8);
    let before_rows = store.query("capture", &[], 5..).unwrap();
    let before_a = store.query("capture", &["a"], 5..=7).unwrap();
    let p50_a = store
        .fold("capture", &["a"], 15..=40, Aggregate::p(50))
        .unwrap();
    let p90_all = store.fold("capture", &[], 21.., Aggregate::p(90)).unwrap();
    let level_folds: Vec<_> = Aggregate::LEVEL_FOLDS
        .iter()
        .map(|&aggregate| store.fold("capture", &[], .., aggregate).unwrap())
        .collect();
    let survey = store.survey("capture", &[], .., 64).unwrap();
    let survey_a = store.survey("capture", &["a"], 0..=20, 32).unwrap();

    let trimmed = store.trim_to("capture", 4).unwrap();
    // a/1: last trimmed axis 13 (position 4), first kept 15; b/2: 12 and 15; c/3 (positions
    // 1, 4, 7): 12 and 21. Position floor: one past the horizon.
    let expected = vec![
        (key(&["a", "1"]), floor(5, Some(15))),
        (key(&["b", "2"]), floor(5, Some(15))),
        (key(&["c", "3"]), floor(5, Some(21))),
    ];
    assert_eq!(trimmed.recorded, expected);
    assert_eq!(trimmed.floors, expected);
    assert_eq!(trimmed.retired, vec![1, 2, 3, 4], "{trimmed:?}");
    assert!(trimmed.removed.is_empty(), "levels are kept: {trimmed:?}");

    // query: partly beneath, wholly beneath, unbounded: refused with the floor.
    for selection in SELECTIONS {
        for range in [0..=u64::MAX, 4..=9, 0..=2, 4..=4] {
            assert_eq!(
                refused(store.query("capture", selection, range.clone())),
                (5, "position"),
                "{selection:?} {range:?}"
            );
        }
    }
    // ... and wholly at or above it: answered whole, as before the trim.
    assert_eq!(store.query("capture", &[], 5..).unwrap(), before_rows);
    assert_eq!(store.query("capture", &["a"], 5..=7).unwrap(), before_a);
    // A stream not trimmed has no floor.
    assert_eq!(store.query("notes", &[], ..).unwrap().len(), 12);

    // Percentiles by axis: the highest axis floor of the partitions covered.
    assert_eq!(
        refused(store.fold("capture", &[], 15..=40, Aggregate::p(50))),
        (21, "axis value")
    );
    assert_eq!(
        refused(store.fold("capture", &[], .., Aggregate::p(50))),
        (21, "axis value")
    );
    assert_eq!(
        refused(store.fold("capture", &["a"], 14..=40, Aggregate::p(50))),
        (15, "axis value")
    );
    assert_eq!(
        store
            .fold("capture", &["a"], 15..=40, Aggregate::p(50))
            .unwrap(),
        p50_a
    );
    assert_eq!(
        store.fold("capture", &[], 21.., Aggregate::p(90)).unwrap(),
        p90_all
    );
    // Surveys and level folds read the levels, which trim_to keeps: answered as before.
    for (aggregate, before) in Aggregate::LEVEL_FOLDS.iter().zip(&level_folds) {
        assert_eq!(&store.fold("capture", &[], .., *aggregate).unwrap(), before);
    }
    assert_eq!(store.survey("capture", &[], .., 64).unwrap(), survey);
    assert_eq!(
        store.survey("capture", &["a"], 0..=20, 32).unwrap(),
        survey_a
    );

    // The refusal reaches a Series caller as BeneathWindow::Floor.
    let error = store.query("capture", &[], ..).unwrap_err();
    assert!(error.to_string().contains("position 5"), "{error}");
    assert_eq!(
        BeneathWindow::from(error),
        BeneathWindow::Floor { floor: 5 }
    );
}

#[test]
fn a_publish_beneath_the_floor_is_refused() {
    let fs = SimFs::new();
    let mut store = open(&fs, Config::default());
    fill(&mut store, 1, 8);
    store.trim_to("capture", 8).unwrap();
    // Everything trimmed: a/1's axis floor is one past its last row (25).
    assert_eq!(
        store
            .catalog()
            .floors_of("capture", &key(&["a", "1"]))
            .and_then(|f| f.raw),
        Some(floor(9, Some(26)))
    );
    // At or below the horizon: refused, though not below the last position.
    let error = store
        .publish("capture", 8, &[row("b", 2, 40, 1)])
        .unwrap_err();
    assert!(
        error.to_string().contains("beneath the stream's floor 9"),
        "{error}"
    );
    // Below the last axis value trimmed (25): refused, though not backwards from anything
    // live; a tie with it keeps the axis non-decreasing and is accepted.
    let error = store
        .publish("capture", 9, &[row("a", 1, 24, 1)])
        .unwrap_err();
    assert!(error.to_string().contains("its floor is 26"), "{error}");
    store
        .publish("capture", 9, &[row("a", 1, 25, 1), row("a", 1, 26, 1)])
        .unwrap();
    store.seal().unwrap();
    assert_eq!(store.query("capture", &[], 9..).unwrap().len(), 2);
}

#[test]
fn a_trim_above_the_watermark_or_over_staged_rows_is_refused_and_a_lower_one_changes_nothing() {
    let fs = SimFs::new();
    let mut store = open(&fs, Config::default());
    let error = store.trim_to("capture", 0).unwrap_err();
    assert!(matches!(error, EngineError::Trim { .. }), "{error}");
    fill(&mut store, 1, 8);
    let error = store.trim_to("capture", 9).unwrap_err();
    let message = error.to_string();
    assert!(
        message.contains("to 9") && message.contains("watermark 8"),
        "{message}"
    );
    store.publish("capture", 9, &[row("b", 2, 40, 1)]).unwrap();
    let error = store.trim_to("capture", 5).unwrap_err();
    assert!(error.to_string().contains("staged"), "{error}");
    store.seal().unwrap();
    let first = store.trim_to("capture", 5).unwrap();
    assert_eq!(first.recorded.len(), 3);
    let manifest = store.catalog().clone();
    // Floors only rise: a lower (or equal) horizon records nothing and answers the floors.
    for horizon in [0, 3, 5] {
        let again = store.trim_to("capture", horizon).unwrap();
        assert!(
            again.recorded.is_empty() && again.retired.is_empty(),
            "{again:?}"
        );
        assert_eq!(again.floors, first.floors);
        assert_eq!(store.catalog(), &manifest);
    }
    let unknown = store.trim_to("nope", 1).unwrap_err();
    assert!(
        matches!(unknown, EngineError::UnknownStream { .. }),
        "{unknown}"
    );
}

/// The floor is in the manifest: a reopen keeps it, and so does a manifest rewrite (the
/// checkpoint a compaction ends with), which restates it in the snapshot.
#[test]
fn a_reopen_and_a_manifest_rewrite_keep_the_floor() {
    let fs = SimFs::new();
    let config = Config::default()
        .compact_files_max(1)
        .compact_inputs_max(32);
    let generation = |fs: &SimFs| -> Vec<String> {
        let mut names: Vec<String> = fs
            .list("")
            .unwrap()
            .into_iter()
            .map(|e| e.name)
            .filter(|n| n.starts_with("manifest-"))
            .collect();
        names.sort();
        names
    };
    let mut store = open(&fs, config.clone());
    fill(&mut store, 1, 8);
    store.compact().unwrap();
    // Barriers of capture alone, so that compacting them removes them and the snapshot the
    // manifest is rewritten to is much shorter.
    fill_streams(&mut store, 9, 16, false);
    // The compacted outputs (positions 1..=8) straddle the horizon.
    let trimmed = store.trim_to("capture", 6).unwrap();
    let notes = store.trim_to("notes", 7).unwrap();
    assert!(
        trimmed.retired.is_empty(),
        "nothing wholly beneath: {trimmed:?}"
    );
    assert_eq!(notes.recorded.len(), 2, "{notes:?}");
    let after = answers(&store);
    assert!(after.contains("Floor"), "{after}");
    drop(store);
    let fs = fs.crash();
    let mut store = open(&fs, config.clone());
    assert_eq!(answers(&store), after, "a reopen keeps the floors");
    // Compaction merges the barriers above the horizon (and may not reach across segments
    // whose raw tier is retired), then rewrites the manifest as a snapshot.
    let generation_before = generation(&fs);
    assert!(!store.compact().unwrap().is_empty());
    assert_ne!(
        generation(&fs),
        generation_before,
        "the manifest was rewritten"
    );
    assert_eq!(answers(&store), after, "compaction changes no answer");
    drop(store);
    let store = open(&fs.crash(), config);
    assert_eq!(
        answers(&store),
        after,
        "a rewritten manifest keeps the floors"
    );
}

/// A trim that retires every tier of files (a stream without levels) removes them once its
/// record is durable; a later trim raises the floor of a partition with nothing live.
#[test]
fn files_a_trim_wholly_retires_are_removed_after_its_record() {
    let fs = SimFs::new();
    let mut store = Store::open_or_create_in(sim(&fs), Config::default(), &[notes()]).unwrap();
    for position in 1..=6 {
        store
            .publish("notes", position, &[note("x", position)])
            .unwrap();
        store.seal().unwrap();
    }
    let files = fs.list("seg").unwrap().len();
    let trimmed = store.trim_to("notes", 6).unwrap();
    assert_eq!(trimmed.removed, vec![1, 2, 3, 4, 5, 6]);
    assert_eq!(fs.list("seg").unwrap().len(), files - 6);
    assert_eq!(trimmed.floors, vec![(key(&["x"]), floor(7, None))]);
    assert_eq!(refused(store.query("notes", &[], ..)), (7, "position"));
    assert_eq!(store.query("notes", &[], 7..).unwrap(), vec![]);
    drop(store);
    let store = Store::open_in(sim(&fs.crash()), Config::default(), &[]).unwrap();
    assert_eq!(refused(store.query("notes", &["x"], 6..)), (7, "position"));
}

/// A trim crashed at every operation, under every crash image: the reopened store answers
/// exactly as before the trim or exactly as after it (floors, refusals, rows and the live raw
/// segments), never a mix, and never reads a file removed too early (that answer would be
/// Unreadable).
#[test]
fn a_trim_crashed_at_every_operation_leaves_the_floor_before_or_after() {
    let mut points = 0;
    let (mut n_before, mut n_after) = (0, 0);
    for mode in MODES {
        let setups: [(Fill, &str, u64); 2] = [(fill, "capture", 4), (fill_notes, "notes", 5)];
        for (fill, stream, horizon) in setups {
            let probe = SimFs::with_rename_mode(mode);
            let mut store = open(&probe, Config::default());
            fill(&mut store, 1, 8);
            let before = state(&store);
            let start = probe.ops();
            let trimmed = store.trim_to(stream, horizon).unwrap();
            let n_ops = probe.ops() - start;
            let after = state(&store);
            drop(store);
            assert_ne!(after, before);
            if stream == "notes" {
                assert_eq!(trimmed.removed, vec![1, 2, 3, 4, 5], "{trimmed:?}");
            }
            // Append and sync; removals and the folder sync.
            assert!(n_ops >= 2, "{n_ops}");
            for crash_op in 0..n_ops {
                for image in 0..SimFs::CRASH_IMAGES {
                    let fs = SimFs::with_rename_mode(mode);
                    let mut store = open(&fs, Config::default());
                    fill(&mut store, 1, 8);
                    fs.crash_at(fs.ops() + crash_op);
                    store.trim_to(stream, horizon).unwrap_err();
                    drop(store);
                    let fs = fs.crash_image(image);
                    let context = format!(
                        "{stream} to {horizon}, {mode:?}: crash at op {crash_op} of {n_ops}, \
                         image {image}"
                    );
                    let mut store = open(&fs, Config::default());
                    let answered = state(&store);
                    if answered == after {
                        for name in &trimmed.removed {
                            let present = fs
                                .list("seg")
                                .unwrap()
                                .iter()
                                .any(|f| f.name.contains(&format!("{name:012}")));
                            assert!(!present, "{context}: retired file {name} kept");
                        }
                        n_after += 1;
                    } else {
                        assert_eq!(answered, before, "{context}");
                        n_before += 1;
                    }
                    // Whatever survived, the store goes on: the trim again, and a barrier.
                    let again = store.trim_to(stream, horizon).unwrap();
                    assert_eq!(again.floors, trimmed.floors, "{context}");
                    assert_eq!(state(&store), after, "{context}");
                    fill(&mut store, 9, 1);
                    points += 1;
                }
            }
        }
    }
    eprintln!(
        "trim crash test: {points} crash points ({n_before} left the state before, {n_after} \
         the state after)"
    );
    assert!(
        n_before > 0 && n_after > 0,
        "{n_before} before, {n_after} after"
    );
}
