//! Retention against every read: each read kind (query, percentile, survey, level fold) against
//! each floor kind (the raw floor, the folded floors of levels, and the highest floor an
//! unnarrowed read answers to), refused just beneath and answered at the floor. Every floor and
//! answer asserted here is worked out by hand from the rows `fill` publishes, or read from a twin
//! store that never retired anything; never from the store under test.
//!
//! The fixture (`fill`, ten barriers at positions 0..=9, ladder base 4, fanout 2, so level-0
//! cells of 4, level-1 of 8, level-2 of 16):
//!
//! - track `a` at every position p: t = 16p, 16p+4, 16p+8, 16p+12, v = t (its segments' top
//!   level is 2: each fits one level-2 cell);
//! - track `b` at p = 0, 3, 6, 9: t = 16p+2, 16p+10, v = 1000 + t (top level 2);
//! - track `c` at p = 0, 1 only: t = 16p+1, v = -t (one row: top level 0).
//!
//! The newest axis value is 156 (a at p = 9). An axis span of 64 retires a segment whose rows
//! all lie below 156 - 64 = 92, except a partition's newest live segment:
//!
//! - a: p = 0..=4 (newest row 76): raw floor position 5, axis 77; levels 0, 1, 2: the cell
//!   after the one holding 76, i.e. 80 at each;
//! - b: p = 0, 3 (newest row 58): raw floor position 4, axis 59; level 0: 60 (cell 56..=59),
//!   level 1: 64 (56..=63), level 2: 64 (48..=63);
//! - c: p = 0 (row 1; p = 1 is its newest, kept though past the span): raw floor position 1,
//!   axis 2; its one level (0) is its top, answering every coarser level: level 0 floor 4.
//!
//! An unnarrowed read answers to the highest floor of any track: position 5, axis 77 (raw);
//! 80 at levels 0..=2.

#![expect(
    clippy::float_cmp,
    reason = "values are small integers, exactly representable, so their sums are exact"
)]

use std::collections::BTreeMap;
use std::fmt::Write;

use strata::index::{RawFloor, Tier, TrackFloors, TrackKey};
use strata::segment::vfs::{SimFs, Vfs};
use strata::{
    Aggregate, Config, EngineError, FieldKind, FieldStat, Lifetime, Num, Retention, Row, Store,
    StoredRow, Stream, StreamDecl, Value,
};

use crate::support::sim;

pub(crate) const STREAM: &str = "series";
/// Barriers `fill` seals, at positions `0..N_BARRIERS`.
pub(crate) const N_BARRIERS: u64 = 10;
/// The axis span of the fixture's lifetimes.
pub(crate) const SPAN: u64 = 64;

pub(crate) fn series() -> StreamDecl {
    Stream::new(STREAM)
        .field("run", FieldKind::Str)
        .field("t", FieldKind::U64)
        .field("v", FieldKind::I64)
        .track(["run"])
        .axis("t")
        .ladder(4, 2)
        .build()
        .unwrap()
}

/// A stream without an axis (so without levels): what a sweep retires of it is whole files.
pub(crate) fn notes() -> StreamDecl {
    Stream::new("notes")
        .field("run", FieldKind::Str)
        .field("note", FieldKind::Str)
        .track(["run"])
        .build()
        .unwrap()
}

fn int(t: u64) -> i64 {
    i64::try_from(t).unwrap()
}

fn row(run: &str, t: u64, v: i64) -> Row {
    vec![Value::Str(run.into()), Value::U64(t), Value::I64(v)]
}

/// The rows `fill` publishes at `position`, in publish order.
pub(crate) fn rows_at(position: u64) -> Vec<Row> {
    let p = position;
    let mut rows: Vec<Row> = (0..4)
        .map(|i| row("a", 16 * p + 4 * i, int(16 * p + 4 * i)))
        .collect();
    if p.is_multiple_of(3) {
        for t in [16 * p + 2, 16 * p + 10] {
            rows.push(row("b", t, 1000 + int(t)));
        }
    }
    if p <= 1 {
        rows.push(row("c", 16 * p + 1, -int(16 * p + 1)));
    }
    rows
}

/// Seals barriers at positions `first..first + n`.
pub(crate) fn fill(store: &mut Store, first: u64, n: u64) {
    for position in first..first + n {
        store.publish(STREAM, position, &rows_at(position)).unwrap();
        store.seal().unwrap();
    }
}

/// What a store holding the fixture answers for rows of `run` (None: every run) at positions
/// `from..N_BARRIERS`, worked out from the rows published.
fn expected_rows(run: Option<&str>, from: u64) -> Vec<StoredRow> {
    (from..N_BARRIERS)
        .flat_map(|position| {
            rows_at(position)
                .into_iter()
                .filter(|r| run.is_none_or(|run| r[0] == Value::Str(run.into())))
                .map(move |values| StoredRow { position, values })
        })
        .collect()
}

/// Raw rows kept for an axis span of 64, levels forever.
pub(crate) fn raw_only() -> Retention {
    Retention::raw(Lifetime::AxisSpan(SPAN))
}

/// Raw rows and every level kept for an axis span of 64.
pub(crate) fn folded() -> Retention {
    raw_only().levels_from(0, Lifetime::AxisSpan(SPAN))
}

pub(crate) fn config(retention: Retention) -> Config {
    Config::default().retention(BTreeMap::from([(STREAM.to_owned(), retention)]))
}

pub(crate) fn open(fs: &SimFs, config: Config) -> Store {
    Store::open_or_create_in(sim(fs), config, &[series(), notes()]).unwrap()
}

/// A store of the fixture swept under `retention`, and its file system.
fn swept(retention: Retention) -> (SimFs, Store) {
    let fs = SimFs::new();
    let mut store = open(&fs, config(retention));
    fill(&mut store, 0, N_BARRIERS);
    let swept = store.sweep().unwrap();
    assert_eq!(swept.len(), 1, "{swept:?}");
    (fs, store)
}

/// The fixture in a store that never retires anything.
fn twin() -> Store {
    let mut store = open(&SimFs::new(), Config::default());
    fill(&mut store, 0, N_BARRIERS);
    store
}

fn key(run: &str) -> TrackKey {
    TrackKey::encode(&[run]).unwrap()
}

fn floors(store: &Store, run: &str) -> TrackFloors {
    store
        .catalog()
        .floors_of(STREAM, &key(run))
        .unwrap()
        .clone()
}

fn raw(position: u64, axis: u64) -> RawFloor {
    RawFloor {
        position,
        axis: Some(axis),
    }
}

fn levels(floors: &[(u8, u64)]) -> BTreeMap<u8, u64> {
    floors.iter().copied().collect()
}

/// The floor of a `Floor` refusal, with its unit.
pub(crate) fn refused<T: std::fmt::Debug>(answer: Result<T, EngineError>) -> (u64, &'static str) {
    match answer {
        Err(EngineError::Floor { floor, unit, .. }) => (floor, unit),
        other => panic!("expected a Floor refusal, got {other:?}"),
    }
}

fn stat(value: Num) -> Vec<FieldStat> {
    vec![FieldStat {
        field: "v".to_owned(),
        value: Some(value),
    }]
}

/// Every level fold of `(count, sum, min, max)`, the mean from them.
fn level_folds(count: u64, sum: i64, min: i64, max: i64) -> Vec<(Aggregate, Vec<FieldStat>)> {
    vec![
        (Aggregate::Count, stat(Num::U64(count))),
        (Aggregate::Sum, stat(Num::F64(sum as f64))),
        (Aggregate::Min, stat(Num::I64(min))),
        (Aggregate::Max, stat(Num::I64(max))),
        (Aggregate::Mean, stat(Num::F64(sum as f64 / count as f64))),
    ]
}

const AXIS: &str = "axis value";
const POSITION: &str = "position";

#[test]
fn the_fixture_sweeps_to_the_floors_worked_out_by_hand() {
    let (_, store) = swept(raw_only());
    assert_eq!(floors(&store, "a").raw, Some(raw(5, 77)));
    assert_eq!(floors(&store, "b").raw, Some(raw(4, 59)));
    assert_eq!(floors(&store, "c").raw, Some(raw(1, 2)));
    for run in ["a", "b", "c"] {
        assert!(floors(&store, run).levels.is_empty(), "levels live forever");
    }
    let (_, store) = swept(folded());
    assert_eq!(floors(&store, "a").raw, Some(raw(5, 77)));
    assert_eq!(
        floors(&store, "a").levels,
        levels(&[(0, 80), (1, 80), (2, 80)])
    );
    assert_eq!(floors(&store, "b").raw, Some(raw(4, 59)));
    assert_eq!(
        floors(&store, "b").levels,
        levels(&[(0, 60), (1, 64), (2, 64)])
    );
    assert_eq!(floors(&store, "c").raw, Some(raw(1, 2)));
    assert_eq!(floors(&store, "c").levels, levels(&[(0, 4)]));
}

// ---- query (rows by position) ----

#[test]
fn query_against_the_raw_floor() {
    let (_, store) = swept(raw_only());
    for range in [4..=9, 4..=4, 0..=9, 0..=u64::MAX] {
        assert_eq!(
            refused(store.query(STREAM, &["a"], range.clone())),
            (5, POSITION),
            "{range:?}"
        );
    }
    assert_eq!(
        store.query(STREAM, &["a"], 5..=9).unwrap(),
        expected_rows(Some("a"), 5)
    );
    assert_eq!(store.query(STREAM, &["a"], 5..).unwrap().len(), 20);
}

#[test]
fn query_against_a_folded_floor_answers_to_the_raw_floor() {
    let (_, store) = swept(folded());
    // Levels are retired too (floors at axis 80), but rows answer to the raw floor alone.
    assert!(!floors(&store, "a").levels.is_empty());
    assert_eq!(refused(store.query(STREAM, &["a"], 4..=9)), (5, POSITION));
    assert_eq!(
        store.query(STREAM, &["a"], 5..=9).unwrap(),
        expected_rows(Some("a"), 5)
    );
    assert_eq!(
        store.query(STREAM, &["b"], 4..).unwrap(),
        expected_rows(Some("b"), 4)
    );
}

#[test]
fn an_unnarrowed_query_answers_to_the_highest_raw_floor() {
    let (_, store) = swept(folded());
    // b's floor is 4, a's 5: narrowed to b, position 4 is answered; unnarrowed, refused at a's.
    assert_eq!(
        store.query(STREAM, &["b"], 4..).unwrap(),
        expected_rows(Some("b"), 4)
    );
    assert_eq!(refused(store.query(STREAM, &[], 4..)), (5, POSITION));
    assert_eq!(refused(store.query(STREAM, &[], ..)), (5, POSITION));
    assert_eq!(
        store.query(STREAM, &[], 5..).unwrap(),
        expected_rows(None, 5)
    );
    let twin = twin();
    assert_eq!(
        store.query(STREAM, &[], 5..).unwrap(),
        twin.query(STREAM, &[], 5..).unwrap()
    );
}

// ---- percentiles (raw rows, by axis) ----

#[test]
fn percentile_against_the_raw_floor() {
    let (_, store) = swept(raw_only());
    let twin = twin();
    for aggregate in [Aggregate::p(0), Aggregate::p(50), Aggregate::p(100)] {
        assert_eq!(
            refused(store.fold(STREAM, &["a"], 76..=156, aggregate)),
            (77, AXIS)
        );
        assert_eq!(
            store.fold(STREAM, &["a"], 77..=156, aggregate).unwrap(),
            twin.fold(STREAM, &["a"], 77..=156, aggregate).unwrap()
        );
    }
    assert_eq!(
        refused(store.fold(STREAM, &["a"], .., Aggregate::p(50))),
        (77, AXIS)
    );
    // a's rows from 77: v = t = 80, 84, ..., 156 (20 of them). Nearest rank: p50 is the 10th.
    let fold = |aggregate| store.fold(STREAM, &["a"], 77..=156, aggregate).unwrap();
    assert_eq!(fold(Aggregate::p(0)), stat(Num::I64(80)));
    assert_eq!(fold(Aggregate::p(50)), stat(Num::I64(116)));
    assert_eq!(fold(Aggregate::p(100)), stat(Num::I64(156)));
}

#[test]
fn percentile_against_a_folded_floor_answers_to_the_raw_floor() {
    let (_, store) = swept(folded());
    // a's raw floor is at axis 77, its level floors at 80: a percentile from 77 reads raw rows
    // and is answered, where a level fold from 77 is refused.
    assert_eq!(
        refused(store.fold(STREAM, &["a"], 76..=156, Aggregate::p(50))),
        (77, AXIS)
    );
    assert_eq!(
        store
            .fold(STREAM, &["a"], 77..=156, Aggregate::p(50))
            .unwrap(),
        stat(Num::I64(116))
    );
    assert_eq!(
        store
            .fold(STREAM, &["a"], 77..=95, Aggregate::p(100))
            .unwrap(),
        stat(Num::I64(92))
    );
    assert_eq!(
        refused(store.fold(STREAM, &["a"], 77..=95, Aggregate::Count)),
        (80, AXIS)
    );
}

#[test]
fn an_unnarrowed_percentile_answers_to_the_highest_raw_floor() {
    let (_, store) = swept(folded());
    let twin = twin();
    // b alone: its floor is 59; from 59 its rows are t = 98, 106, 146, 154 (v = 1000 + t).
    assert_eq!(
        refused(store.fold(STREAM, &["b"], 58.., Aggregate::p(50))),
        (59, AXIS)
    );
    assert_eq!(
        store.fold(STREAM, &["b"], 59.., Aggregate::p(50)).unwrap(),
        stat(Num::I64(1106))
    );
    // Unnarrowed: a's floor 77 is the highest.
    assert_eq!(
        refused(store.fold(STREAM, &[], 59.., Aggregate::p(50))),
        (77, AXIS)
    );
    assert_eq!(
        refused(store.fold(STREAM, &[], 76..=156, Aggregate::p(50))),
        (77, AXIS)
    );
    // From 77: a's 20 values 80..=156 and b's 4 values 1098..=1154: p50 is the 12th, 124.
    for (aggregate, value) in [
        (Aggregate::p(0), 80),
        (Aggregate::p(50), 124),
        (Aggregate::p(100), 1154),
    ] {
        let answer = store.fold(STREAM, &[], 77..=156, aggregate).unwrap();
        assert_eq!(answer, stat(Num::I64(value)), "{aggregate}");
        assert_eq!(
            answer,
            twin.fold(STREAM, &[], 77..=156, aggregate).unwrap(),
            "{aggregate}"
        );
    }
}

// ---- surveys (level cells, budgeted) ----

#[test]
fn a_survey_beneath_the_raw_floor_is_answered_from_the_levels_that_outlive_it() {
    let (_, store) = swept(raw_only());
    let twin = twin();
    // The raw floor is there (a percentile from 76 is refused) ...
    assert_eq!(
        refused(store.fold(STREAM, &["a"], 76.., Aggregate::p(50))),
        (77, AXIS)
    );
    // ... and a survey across it, from beneath it, or of everything, answers as if nothing
    // had been retired.
    for selection in [&[][..], &["a"], &["b"], &["c"]] {
        for (range, budget) in [
            (0..=156, 160),
            (0..=156, 40),
            (76..=156, 80),
            (77..=156, 80),
        ] {
            assert_eq!(
                store
                    .survey(STREAM, selection, range.clone(), budget)
                    .unwrap(),
                twin.survey(STREAM, selection, range.clone(), budget)
                    .unwrap(),
                "{selection:?} {range:?} {budget}"
            );
        }
    }
    // Hand-checked: level 0 over a's 0..=156 is one cell per row (40 cells of 4), v = t.
    let survey = store.survey(STREAM, &["a"], 0..=156, 160).unwrap();
    assert_eq!((survey.level, survey.group), (0, 1));
    let buckets = &survey.fields[0].buckets;
    assert_eq!(buckets.len(), 40);
    assert!(
        buckets
            .iter()
            .enumerate()
            .all(|(i, b)| b.count == 1 && b.sum == (4 * i) as f64),
        "{buckets:?}"
    );
}

#[test]
fn survey_against_a_folded_floor() {
    let (_, store) = swept(folded());
    let twin = twin();
    // 79..=156 at budget 80 (20 cells) plans level 1; every level from 1 up starts at 80 or
    // later for a: refused with the lowest of them, 80.
    assert_eq!(
        refused(store.survey(STREAM, &["a"], 79..=156, 80)),
        (80, AXIS)
    );
    // From 80: level 0 (20 cells), as the twin answers it.
    let survey = store.survey(STREAM, &["a"], 80..=156, 80).unwrap();
    assert_eq!(survey, twin.survey(STREAM, &["a"], 80..=156, 80).unwrap());
    assert_eq!(survey.level, 0);
    let buckets = &survey.fields[0].buckets;
    assert_eq!(buckets.len(), 20);
    assert!(
        buckets
            .iter()
            .enumerate()
            .all(|(i, b)| b.count == 1 && b.sum == (80 + 4 * i) as f64),
        "{buckets:?}"
    );
}

#[test]
fn an_unnarrowed_survey_answers_to_the_highest_folded_floor() {
    let (_, store) = swept(folded());
    let twin = twin();
    // b alone: levels 1 and 2 start at 64; from 64 (level 1 at budget 80) answered.
    assert_eq!(
        refused(store.survey(STREAM, &["b"], 63..=156, 80)),
        (64, AXIS)
    );
    assert_eq!(
        store.survey(STREAM, &["b"], 64..=156, 80).unwrap(),
        twin.survey(STREAM, &["b"], 64..=156, 80).unwrap()
    );
    // Unnarrowed, a's floors (80) are the highest.
    assert_eq!(refused(store.survey(STREAM, &[], 64..=156, 80)), (80, AXIS));
    assert_eq!(refused(store.survey(STREAM, &[], 79..=156, 80)), (80, AXIS));
    let survey = store.survey(STREAM, &[], 80..=156, 80).unwrap();
    assert_eq!(survey, twin.survey(STREAM, &[], 80..=156, 80).unwrap());
    // Level 0 from 80: 20 cells; a's one row each, and b's rows at 98, 106, 146, 154 in the
    // cells starting 96, 104, 144, 152.
    assert_eq!(survey.level, 0);
    let counts: Vec<u64> = survey.fields[0].buckets.iter().map(|b| b.count).collect();
    let expected: Vec<u64> = (0..20u64)
        .map(|i| 1 + u64::from([96, 104, 144, 152].contains(&(80 + 4 * i))))
        .collect();
    assert_eq!(counts, expected);
}

/// Levels 0 and 1 retire with the raw rows, level 2 (the top of every segment of a and b) is
/// kept far longer: a survey planned at level 0 beneath their floors falls back to level 2,
/// which still holds everything, rather than being refused.
#[test]
fn a_survey_falls_back_to_a_coarser_level_that_outlives_the_finer_ones() {
    let retention = folded().levels_from(2, Lifetime::AxisSpan(1000));
    let (_, store) = swept(retention);
    assert_eq!(
        floors(&store, "a").levels,
        levels(&[(0, 80), (1, 80), (2, 0)])
    );
    assert_eq!(
        floors(&store, "b").levels,
        levels(&[(0, 60), (1, 64), (2, 0)])
    );
    assert!(
        floors(&store, "c").levels.is_empty(),
        "c's only level is its top"
    );
    let twin = twin();
    assert_eq!(
        refused(store.level_cells(STREAM, &["a"], "v", 0, 0..=156)),
        (80, AXIS)
    );
    for selection in [&[][..], &["a"], &["b"]] {
        // Budget 160 plans level 0 (40 cells) over 0..=156; budget 40 plans level 2 (10).
        let survey = store.survey(STREAM, selection, 0..=156, 160).unwrap();
        assert_eq!((survey.level, survey.group), (2, 1), "{selection:?}");
        assert_eq!(
            survey,
            twin.survey(STREAM, selection, 0..=156, 40).unwrap(),
            "{selection:?}"
        );
        let cells = twin
            .level_cells(STREAM, selection, "v", 2, 0..=156)
            .unwrap();
        let buckets: Vec<_> = cells.into_iter().map(|c| c.bucket).collect();
        assert_eq!(survey.fields[0].buckets, buckets, "{selection:?}");
    }
    // a's level-2 cells: one per barrier, 4 rows, sum 64p + 24.
    let survey = store.survey(STREAM, &["a"], 0..=156, 160).unwrap();
    let sums: Vec<f64> = survey.fields[0].buckets.iter().map(|b| b.sum).collect();
    let expected: Vec<f64> = (0..10).map(|p| f64::from(64 * p + 24)).collect();
    assert_eq!(sums, expected);
}

// ---- level folds (min max mean sum count) ----

#[test]
fn a_level_fold_beneath_the_raw_floor_is_answered_from_the_levels() {
    let (_, store) = swept(raw_only());
    let twin = twin();
    // a over everything: 40 rows, v = t, sum of (64p + 24) over p = 0..=9 = 3120.
    for (aggregate, expected) in level_folds(40, 3120, 0, 156) {
        let answer = store.fold(STREAM, &["a"], 0..=156, aggregate).unwrap();
        assert_eq!(answer, expected, "{aggregate}");
    }
    for selection in [&[][..], &["a"], &["b"], &["c"]] {
        for range in [0..=156, 76..=156, 77..=156, 76..=95] {
            for aggregate in Aggregate::LEVEL_FOLDS {
                assert_eq!(
                    store
                        .fold(STREAM, selection, range.clone(), aggregate)
                        .unwrap(),
                    twin.fold(STREAM, selection, range.clone(), aggregate)
                        .unwrap(),
                    "{selection:?} {range:?} {aggregate}"
                );
            }
        }
    }
}

#[test]
fn level_fold_against_a_folded_floor() {
    let (_, store) = swept(folded());
    let twin = twin();
    // 79..=95: a level-0 cell (76..=79) beneath the floor 80, then the level-2 cell 80..=95.
    for aggregate in Aggregate::LEVEL_FOLDS {
        assert_eq!(
            refused(store.fold(STREAM, &["a"], 79..=95, aggregate)),
            (80, AXIS),
            "{aggregate}"
        );
    }
    // From 80: a's rows 80, 84, 88, 92.
    for (aggregate, expected) in level_folds(4, 344, 80, 92) {
        let answer = store.fold(STREAM, &["a"], 80..=95, aggregate).unwrap();
        assert_eq!(answer, expected, "{aggregate}");
        assert_eq!(
            answer,
            twin.fold(STREAM, &["a"], 80..=95, aggregate).unwrap()
        );
    }
    // The level cells of level 0 from the floor: one per row.
    let cells = store.level_cells(STREAM, &["a"], "v", 0, 80..=95).unwrap();
    assert_eq!(
        cells,
        twin.level_cells(STREAM, &["a"], "v", 0, 80..=95).unwrap()
    );
    assert_eq!(
        refused(store.level_cells(STREAM, &["a"], "v", 0, 79..=95)),
        (80, AXIS)
    );
}

#[test]
fn an_unnarrowed_level_fold_answers_to_the_highest_folded_floor() {
    let (_, store) = swept(folded());
    let twin = twin();
    // b alone: its level-0 floor is 60, so from 60 it is answered (its rows 98 and 106) ...
    for (aggregate, expected) in level_folds(2, 2204, 1098, 1106) {
        let answer = store.fold(STREAM, &["b"], 60..=111, aggregate).unwrap();
        assert_eq!(answer, expected, "{aggregate}");
        assert_eq!(
            answer,
            twin.fold(STREAM, &["b"], 60..=111, aggregate).unwrap()
        );
    }
    // ... and just beneath (59, in the level-0 cell 56..=59), refused.
    assert_eq!(
        refused(store.fold(STREAM, &["b"], 59..=59, Aggregate::Count)),
        (60, AXIS)
    );
    // Unnarrowed, what b alone answers is refused: a's floors are higher.
    let (floor, _) = refused(store.fold(STREAM, &[], 60..=111, Aggregate::Count));
    assert!(floor >= 80, "{floor}");
    assert!(
        store
            .fold(STREAM, &[], floor..=111, Aggregate::Count)
            .is_ok()
    );
    // Unnarrowed: a's floors (80) are the highest.
    for aggregate in Aggregate::LEVEL_FOLDS {
        assert_eq!(
            refused(store.fold(STREAM, &[], 79..=95, aggregate)),
            (80, AXIS),
            "{aggregate}"
        );
    }
    for (aggregate, expected) in level_folds(4, 344, 80, 92) {
        let answer = store.fold(STREAM, &[], 80..=95, aggregate).unwrap();
        assert_eq!(answer, expected, "{aggregate}");
        assert_eq!(answer, twin.fold(STREAM, &[], 80..=95, aggregate).unwrap());
    }
}

// ---- what a sweep keeps, and where sweeps run ----

/// c stopped publishing at position 1: its newest segment (row at 17) is far past the span,
/// but a sweep never retires a partition's newest live segment.
#[test]
fn a_sweep_keeps_the_newest_segment_of_a_track_that_stopped_publishing() {
    for retention in [raw_only(), folded()] {
        let (_, mut store) = swept(retention);
        let view = store
            .catalog()
            .partitions(STREAM, &key("c"))
            .next()
            .unwrap();
        // Older segments go whole once every tier is past its lifetime (with levels kept
        // forever they stay, beneath the raw floor); the newest stays whatever its age.
        let raw: Vec<_> = view.segments(Tier::Raw).collect();
        let &(name, entry) = raw.last().unwrap();
        assert_eq!(entry.positions, [1, 1], "{raw:?}");
        assert!(view.is_live(name, Tier::Level(0)), "every tier of it live");
        assert_eq!(refused(store.query(STREAM, &["c"], 0..)), (1, POSITION));
        assert_eq!(
            store.query(STREAM, &["c"], 1..).unwrap(),
            expected_rows(Some("c"), 1)
        );
        assert_eq!(
            store.fold(STREAM, &["c"], 4.., Aggregate::Sum).unwrap(),
            stat(Num::F64(-17.0))
        );
        // More barriers (without c) and more sweeps: still kept.
        fill_without_c(&mut store, N_BARRIERS, 10);
        store.sweep().unwrap();
        assert_eq!(
            store.query(STREAM, &["c"], 1..).unwrap(),
            expected_rows(Some("c"), 1)
        );
    }
}

fn fill_without_c(store: &mut Store, first: u64, n: u64) {
    for position in first..first + n {
        let rows: Vec<Row> = rows_at(position)
            .into_iter()
            .filter(|r| r[0] != Value::Str("c".into()))
            .collect();
        store.publish(STREAM, position, &rows).unwrap();
        store.seal().unwrap();
    }
}

/// A lifetime of 3 positions: the last is 9, so segments wholly at or below 6 are retired.
#[test]
fn a_positions_lifetime_retires_by_position() {
    let retention = Retention::raw(Lifetime::Positions(3)).levels_from(0, Lifetime::Positions(3));
    let (_, store) = swept(retention);
    // a: p = 0..=6 (newest row 108): floors position 7, axis 109; levels: the cell past 108,
    // 112 at levels 0 (108..=111), 1 (104..=111) and 2 (96..=111).
    assert_eq!(floors(&store, "a").raw, Some(raw(7, 109)));
    assert_eq!(
        floors(&store, "a").levels,
        levels(&[(0, 112), (1, 112), (2, 112)])
    );
    // b: p = 0, 3, 6 (newest row 106): 7 and 107; levels: 108 (104..=107), 112, 112.
    assert_eq!(floors(&store, "b").raw, Some(raw(7, 107)));
    assert_eq!(
        floors(&store, "b").levels,
        levels(&[(0, 108), (1, 112), (2, 112)])
    );
    // c: p = 0 (its newest, p = 1, kept).
    assert_eq!(floors(&store, "c").raw, Some(raw(1, 2)));
    assert_eq!(refused(store.query(STREAM, &[], 6..)), (7, POSITION));
    assert_eq!(
        store.query(STREAM, &[], 7..).unwrap(),
        expected_rows(None, 7)
    );
    assert_eq!(
        store.fold(STREAM, &["a"], 112.., Aggregate::Count).unwrap(),
        stat(Num::U64(12))
    );
    assert_eq!(
        store
            .fold(STREAM, &["a"], 112..=127, Aggregate::Count)
            .unwrap(),
        stat(Num::U64(4))
    );
    assert_eq!(
        refused(store.fold(STREAM, &["a"], 111..=127, Aggregate::Count)),
        (112, AXIS)
    );
}

/// On a stream without levels a positions lifetime retires whole files, removed once the
/// record is durable.
#[test]
fn a_positions_sweep_of_a_stream_without_levels_removes_its_files() {
    let fs = SimFs::new();
    let config = Config::default().retention(BTreeMap::from([(
        "notes".to_owned(),
        Retention::raw(Lifetime::Positions(2)),
    )]));
    let mut store = open(&fs, config.clone());
    for position in 1..=6 {
        let note = vec![Value::Str("x".into()), Value::Str(format!("n{position}"))];
        store.publish("notes", position, &[note]).unwrap();
        store.seal().unwrap();
    }
    let files = fs.list("seg").unwrap().len();
    let swept = store.sweep().unwrap();
    // Last 6: positions at or below 4 are past.
    assert_eq!(swept.len(), 1);
    assert_eq!(swept[0].removed.len(), 4, "{swept:?}");
    assert_eq!(fs.list("seg").unwrap().len(), files - 4);
    assert_eq!(refused(store.query("notes", &[], 4..)), (5, POSITION));
    assert_eq!(store.query("notes", &[], 5..).unwrap().len(), 2);
    drop(store);
    let store = open(&fs.crash(), config);
    assert_eq!(refused(store.query("notes", &["x"], ..)), (5, POSITION));
}

/// `compact` sweeps before it merges, `compact_step` when a barrier landed since the last
/// sweep: either leaves the floors a sweep does.
#[test]
fn compaction_sweeps() {
    for step_only in [false, true] {
        let fs = SimFs::new();
        let mut store = open(&fs, config(folded()));
        fill(&mut store, 0, N_BARRIERS);
        if step_only {
            store.compact_step().unwrap();
        } else {
            store.compact().unwrap();
        }
        assert_eq!(floors(&store, "a").raw, Some(raw(5, 77)), "{step_only}");
        assert_eq!(
            floors(&store, "a").levels,
            levels(&[(0, 80), (1, 80), (2, 80)])
        );
        assert_eq!(
            floors(&store, "b").levels,
            levels(&[(0, 60), (1, 64), (2, 64)])
        );
        assert_eq!(refused(store.query(STREAM, &[], 4..)), (5, POSITION));
        assert_eq!(
            store.query(STREAM, &[], 5..).unwrap(),
            expected_rows(None, 5)
        );
    }
}

/// A served store sweeps with the compaction steps its barriers grant.
#[test]
fn a_served_store_sweeps_after_its_barriers() {
    use std::ops::Bound::{Included, Unbounded};
    use strata::{BeneathWindow, Series, ServeConfig, Served};

    let fs = SimFs::new();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut served = Served::spawn(
            // Nothing to merge: only the sweeps of the steps move anything.
            open(
                &fs,
                config(folded())
                    .compact_files_max(1000)
                    .compact_inputs_min(1000),
            ),
            ServeConfig::default()
                .seal_interval(None)
                .compact_steps_per_tick(2),
        );
        for position in 0..N_BARRIERS {
            served
                .publish(STREAM, position, rows_at(position))
                .await
                .unwrap();
            served.seal(STREAM, &[]).await.unwrap();
        }
        // A barrier is followed by a step before any request: the first read sees the sweep.
        assert_eq!(
            served.rows(STREAM, &[], Included(4), Unbounded).await,
            Err(BeneathWindow::Floor { floor: 5 })
        );
        let rows = served.rows(STREAM, &[], Included(5), Unbounded).await;
        assert_eq!(rows.unwrap(), expected_rows(None, 5));
        let survey = served
            .buckets(STREAM, &["a".to_owned()], Included(79), Included(156), 80)
            .await;
        assert_eq!(survey, Err(BeneathWindow::Floor { floor: 80 }));
        served.stop().await.unwrap();
    });
    let store = open(&fs.crash(), config(folded()));
    assert_eq!(floors(&store, "a").raw, Some(raw(5, 77)));
    assert_eq!(
        floors(&store, "a").levels,
        levels(&[(0, 80), (1, 80), (2, 80)])
    );
}

/// Everything the fixture's reads answer, refusals included.
pub(crate) fn answers(store: &Store) -> String {
    let mut out = String::new();
    for selection in [&[][..], &["a"], &["b"], &["c"]] {
        for range in [0..=u64::MAX, 3..=9, 4..=9, 5..=9] {
            let rows = store.query(STREAM, selection, range.clone());
            writeln!(out, "query {selection:?} {range:?} {rows:?}").unwrap();
        }
        for range in [0..=156, 59..=156, 76..=156, 77..=156, 79..=95, 80..=95] {
            for aggregate in [Aggregate::p(50), Aggregate::Count, Aggregate::Sum] {
                let stat = store.fold(STREAM, selection, range.clone(), aggregate);
                writeln!(out, "fold {selection:?} {aggregate} {range:?} {stat:?}").unwrap();
            }
            let survey = store.survey(STREAM, selection, range.clone(), 80);
            writeln!(out, "survey {selection:?} {range:?} {survey:?}").unwrap();
        }
    }
    let floors: Vec<_> = store
        .catalog()
        .floors(STREAM, &TrackKey::ROOT)
        .map(|(track, floors)| (track.clone(), floors.clone()))
        .collect();
    writeln!(out, "floors {floors:?}").unwrap();
    out
}

/// Floors are the manifest's: a reopen keeps them, and so does a manifest rewrite.
#[test]
fn a_reopen_and_a_manifest_rewrite_keep_the_floors() {
    let (fs, store) = swept(folded());
    let after = answers(&store);
    assert!(after.contains("Floor"), "{after}");
    drop(store);
    let fs = fs.crash();
    let mut store = open(&fs, config(folded()));
    assert_eq!(answers(&store), after, "a reopen keeps the floors");
    let manifests = |fs: &SimFs| -> Vec<String> {
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
    let before = manifests(&fs);
    assert!(store.checkpoint().unwrap(), "the manifest is rewritten");
    assert_ne!(manifests(&fs), before);
    assert_eq!(answers(&store), after, "the rewrite keeps the floors");
    drop(store);
    let store = open(&fs.crash(), config(folded()));
    assert_eq!(
        answers(&store),
        after,
        "a rewritten manifest keeps the floors"
    );
}

#[test]
fn a_retention_no_sweep_can_honour_is_refused_at_open() {
    let cases: [(&str, Retention, &str); 6] = [
        (
            "notes",
            Retention::raw(Lifetime::AxisSpan(10)),
            "declares no axis",
        ),
        (
            STREAM,
            Retention::raw(Lifetime::Positions(0)),
            "lifetime of 0",
        ),
        (
            STREAM,
            Retention::raw(Lifetime::AxisSpan(0)),
            "lifetime of 0",
        ),
        (
            STREAM,
            Retention::raw(Lifetime::AxisSpan(10)).levels_from(0, Lifetime::Positions(10)),
            "all axis spans or all positions",
        ),
        (
            STREAM,
            Retention::raw(Lifetime::AxisSpan(100)).levels_from(0, Lifetime::AxisSpan(50)),
            "would retire before",
        ),
        (
            STREAM,
            Retention::raw(Lifetime::AxisSpan(10))
                .levels_from(0, Lifetime::AxisSpan(100))
                .levels_from(3, Lifetime::AxisSpan(50)),
            "would retire before",
        ),
    ];
    for (stream, retention, why) in cases {
        let refused =
            Config::default().retention(BTreeMap::from([(stream.to_owned(), retention.clone())]));
        match Store::open_or_create_in(sim(&SimFs::new()), refused, &[series(), notes()]) {
            Err(EngineError::Config { setting, reason }) => {
                assert_eq!(setting, "retention");
                assert!(reason.contains(why), "{retention:?}: {reason}");
            }
            other => panic!("{retention:?}: expected a Config refusal, got {other:?}"),
        }
    }
    let unknown = Config::default().retention(BTreeMap::from([("nope".to_owned(), raw_only())]));
    match Store::open_or_create_in(sim(&SimFs::new()), unknown, &[series(), notes()]) {
        Err(EngineError::Config { setting, reason }) => {
            assert_eq!(setting, "retention");
            assert!(reason.contains("not declared"), "{reason}");
        }
        other => panic!("expected a Config refusal, got {other:?}"),
    }
    // Forever, and a coarser level outliving a finer one, are fine.
    let fine = folded().levels_from(3, Lifetime::Forever);
    Store::open_or_create_in(sim(&SimFs::new()), config(fine), &[series(), notes()]).unwrap();
}

/// Over a grid of ranges and every selection, under four retentions: whatever a swept store
/// answers is what the twin that never retired anything answers (never a short answer), and a
/// read refused with a floor is answered when narrowed to start at that floor.
#[test]
fn every_answer_is_the_unretired_answer_and_every_refusal_names_a_floor_that_answers() {
    let twin = twin();
    let retentions = [
        raw_only(),
        folded(),
        folded().levels_from(2, Lifetime::AxisSpan(1000)),
        Retention::raw(Lifetime::Positions(3)).levels_from(0, Lifetime::Positions(3)),
    ];
    let (mut answered, mut refusals) = (0, 0);
    for retention in retentions {
        let (_, store) = swept(retention.clone());
        for selection in [&[][..], &["a"], &["b"], &["c"]] {
            let context = |read: &str| format!("{retention:?} {selection:?} {read}");
            for lo in 0..N_BARRIERS {
                for hi in lo..N_BARRIERS {
                    let read = format!("query {lo}..={hi}");
                    match store.query(STREAM, selection, lo..=hi) {
                        Ok(rows) => {
                            assert_eq!(rows, twin.query(STREAM, selection, lo..=hi).unwrap());
                            answered += 1;
                        }
                        Err(EngineError::Floor { floor, .. }) => {
                            assert!(floor > lo, "{}", context(&read));
                            // A floor past `hi` leaves no range to narrow to.
                            assert!(
                                floor > hi || store.query(STREAM, selection, floor..=hi).is_ok(),
                                "{} floor {floor}",
                                context(&read)
                            );
                            refusals += 1;
                        }
                        Err(e) => panic!("{}: {e}", context(&read)),
                    }
                }
            }
            for lo in (0..=160).step_by(3) {
                for hi in (lo..=160).step_by(5) {
                    for aggregate in [Aggregate::Count, Aggregate::Sum, Aggregate::p(50)] {
                        let read = format!("{aggregate} {lo}..={hi}");
                        match store.fold(STREAM, selection, lo..=hi, aggregate) {
                            Ok(stat) => {
                                let unretired = twin.fold(STREAM, selection, lo..=hi, aggregate);
                                assert_eq!(stat, unretired.unwrap(), "{}", context(&read));
                                answered += 1;
                            }
                            Err(EngineError::Floor { floor, .. }) => {
                                assert!(floor > lo, "{}", context(&read));
                                let from = || store.fold(STREAM, selection, floor..=hi, aggregate);
                                assert!(floor > hi || from().is_ok(), "{} {floor}", context(&read));
                                refusals += 1;
                            }
                            Err(e) => panic!("{}: {e}", context(&read)),
                        }
                    }
                    for budget in [8, 40, 160] {
                        let read = format!("survey {budget} {lo}..={hi}");
                        match store.survey(STREAM, selection, lo..=hi, budget) {
                            Ok(survey) => {
                                let unretired =
                                    twin.survey(STREAM, selection, lo..=hi, budget).unwrap();
                                if survey.level == unretired.level {
                                    assert_eq!(survey, unretired, "{}", context(&read));
                                } else {
                                    // Fallen back to a coarser level: whole cells of it.
                                    assert!(survey.level > unretired.level);
                                    assert_eq!(survey.group, 1, "{}", context(&read));
                                    let cells = twin
                                        .level_cells(STREAM, selection, "v", survey.level, lo..=hi)
                                        .unwrap();
                                    let buckets: Vec<_> =
                                        cells.into_iter().map(|c| c.bucket).collect();
                                    assert_eq!(
                                        survey.fields[0].buckets,
                                        buckets,
                                        "{}",
                                        context(&read)
                                    );
                                }
                                answered += 1;
                            }
                            Err(EngineError::Floor { floor, .. }) => {
                                assert!(floor > lo, "{}", context(&read));
                                let from = store.survey(STREAM, selection, floor..=hi, budget);
                                if floor <= hi {
                                    assert!(from.is_ok(), "{} floor {floor}", context(&read));
                                }
                                refusals += 1;
                            }
                            Err(e) => panic!("{}: {e}", context(&read)),
                        }
                    }
                }
            }
        }
    }
    eprintln!(
        "retention reads against the unretired twin: {answered} answered, {refusals} refused"
    );
    assert!(
        answered > 0 && refusals > 0,
        "{answered} answered, {refusals} refused"
    );
}

/// `retire` ends a track whole, its newest segment too: its floors rise past everything it
/// held, an unnarrowed read answers to them, and a later publish above them starts it again.
#[test]
fn a_retired_track_refuses_beneath_its_floors_and_starts_again_above_them() {
    let fs = SimFs::new();
    let mut store = open(&fs, Config::default());
    fill(&mut store, 0, N_BARRIERS);
    let twin = twin();
    let swept = store.retire(STREAM, &["a"]).unwrap();
    assert_eq!(
        swept.retired.len(),
        10 * 4,
        "raw and 3 levels of 10 segments: {swept:?}"
    );
    // The files that held only a (positions 2, 4, 5, 7, 8) are gone.
    assert_eq!(swept.removed.len(), 5, "{swept:?}");
    // Raw: one past the stream's last position (9) and past a's newest axis value (156);
    // levels 0..=2: the cell after the one holding 156, 160 at each.
    assert_eq!(floors(&store, "a").raw, Some(raw(10, 157)));
    assert_eq!(
        floors(&store, "a").levels,
        levels(&[(0, 160), (1, 160), (2, 160)])
    );
    assert_eq!(refused(store.query(STREAM, &["a"], ..)), (10, POSITION));
    // (144..=159 is one level-2 cell.)
    assert_eq!(
        refused(store.fold(STREAM, &["a"], 144..=159, Aggregate::Count)),
        (160, AXIS)
    );
    assert_eq!(
        refused(store.survey(STREAM, &["a"], 0..=156, 160)),
        (160, AXIS)
    );
    // b is untouched narrowed; unnarrowed, a's floors are the highest.
    assert_eq!(
        store.query(STREAM, &["b"], 9..).unwrap(),
        expected_rows(Some("b"), 9)
    );
    assert_eq!(refused(store.query(STREAM, &[], 9..)), (10, POSITION));
    assert_eq!(
        store.survey(STREAM, &["b"], 0..=156, 160).unwrap(),
        twin.survey(STREAM, &["b"], 0..=156, 160).unwrap()
    );
    assert_eq!(
        refused(store.survey(STREAM, &[], 0..=156, 160)),
        (160, AXIS)
    );
    // Nothing live is left to retire: refused, with nothing recorded.
    let catalog = store.catalog().clone();
    assert!(matches!(
        store.retire(STREAM, &["a"]),
        Err(EngineError::NothingToRetire { stream, selection }) if stream == STREAM && selection == ["a"]
    ));
    assert_eq!(store.catalog(), &catalog);
    // Below the last axis value retired (156): refused; from it up, the track starts again.
    let error = store.publish(STREAM, 10, &[row("a", 155, 1)]).unwrap_err();
    assert!(error.to_string().contains("its floor is 157"), "{error}");
    store
        .publish(STREAM, 10, &[row("a", 157, 7), row("a", 164, 9)])
        .unwrap();
    store.seal().unwrap();
    assert_eq!(store.query(STREAM, &["a"], 10..).unwrap().len(), 2);
    assert_eq!(
        store
            .fold(STREAM, &["a"], 157.., Aggregate::p(100))
            .unwrap(),
        stat(Num::I64(9))
    );
    // The level-0 cell 156..=159 held a retired row: level reads start at 160.
    assert_eq!(
        refused(store.fold(STREAM, &["a"], 157..=167, Aggregate::Count)),
        (160, AXIS)
    );
    assert_eq!(
        store
            .fold(STREAM, &["a"], 160..=167, Aggregate::Sum)
            .unwrap(),
        stat(Num::F64(9.0))
    );
    // Reopened: the same.
    drop(store);
    let store = open(&fs.crash(), Config::default());
    assert_eq!(refused(store.query(STREAM, &["a"], 9..)), (10, POSITION));
    assert_eq!(store.query(STREAM, &["a"], 10..).unwrap().len(), 2);
}

/// A retire is refused while rows of the stream are staged, and so are one of a track never
/// sealed, one naming no track, and one of an unknown stream; none records anything.
#[test]
fn a_retire_over_staged_rows_is_refused_and_one_of_nothing_records_nothing() {
    let fs = SimFs::new();
    let mut store = open(&fs, Config::default());
    fill(&mut store, 0, 3);
    store.publish(STREAM, 3, &rows_at(3)).unwrap();
    let error = store.retire(STREAM, &["a"]).unwrap_err();
    assert!(error.to_string().contains("staged"), "{error}");
    assert!(store.catalog().floors_of(STREAM, &key("a")).is_none());
    store.seal().unwrap();
    let catalog = store.catalog().clone();
    match store.retire(STREAM, &["zed"]) {
        Err(EngineError::UnknownTrack {
            selection,
            tracks,
            more,
            ..
        }) => {
            assert_eq!(selection, ["zed"]);
            assert_eq!(tracks, [["a"], ["b"], ["c"]], "the tracks there are");
            assert!(!more);
        }
        other => panic!("retiring a track never sealed: {other:?}"),
    }
    assert!(matches!(
        store.retire(STREAM, &[]),
        Err(EngineError::RetireNamesNoTrack { stream }) if stream == STREAM
    ));
    assert_eq!(store.catalog(), &catalog);
    assert!(matches!(
        store.retire("nope", &["a"]),
        Err(EngineError::UnknownStream { .. })
    ));
}
