//! Retention: sweeps retire tiers past their lifetimes and raise the floors each read answers
//! to; `retire` ends whole tracks; space comes back.

use std::collections::BTreeMap;

use strata::index::TrackKey;
use strata::segment::vfs::SimFs;
use strata::{
    Aggregate, Config, EngineError, FieldKind, Lifetime, Retention, Row, Store, Stream, StreamDecl,
    Value,
};

use crate::support::sim;

/// An axial stream with levels (base 4, fanout 2), tracked by run.
fn series() -> StreamDecl {
    Stream::new("series")
        .field("run", FieldKind::Str)
        .field("t", FieldKind::U64)
        .field("value", FieldKind::F64)
        .track(["run"])
        .axis("t")
        .ladder(4, 2)
        .build()
        .unwrap()
}

fn row(run: &str, t: u64) -> Row {
    vec![
        Value::Str(run.into()),
        Value::U64(t),
        Value::F64((t % 17) as f64 - 8.0),
    ]
}

fn config(retention: Retention) -> Config {
    Config::default().retention(BTreeMap::from([("series".to_owned(), retention)]))
}

/// Barriers at positions `first..first + n`, 10 rows of run `a` each, axis 10p..10p+9.
fn fill(store: &mut Store, first: u64, n: u64) {
    for position in first..first + n {
        let rows: Vec<Row> = (0..10).map(|i| row("a", position * 10 + i)).collect();
        store.publish("series", position, &rows).unwrap();
        store.seal().unwrap();
    }
}

#[test]
fn a_sweep_raises_the_raw_floor_past_segments_older_than_the_axis_span() {
    let fs = SimFs::new();
    let mut store = Store::open_or_create_in(
        sim(&fs),
        config(Retention::raw(Lifetime::AxisSpan(100))),
        &[series()],
    )
    .unwrap();
    fill(&mut store, 0, 30);
    let swept = store.sweep().unwrap();
    assert_eq!(swept.len(), 1, "{swept:?}");
    // Newest axis 299: rows below 199 are past; segments wholly below are those of positions
    // 0..=18 (axis up to 189), the segment of 19 holds 190..=199.
    let key = TrackKey::encode(&["a"]).unwrap();
    let floors = store.catalog().floors_of("series", &key).unwrap();
    let raw = floors.raw.unwrap();
    assert_eq!(raw.position, 19);
    assert_eq!(raw.axis, Some(190));
    assert!(floors.levels.is_empty(), "levels live forever: {floors:?}");
    // Query beneath the floor refused, at it answered.
    match store.query("series", &[], 18..=20) {
        Err(EngineError::Floor { floor, .. }) => assert_eq!(floor, 19),
        other => panic!("{other:?}"),
    }
    assert_eq!(store.query("series", &[], 19..=20).unwrap().len(), 20);
    // Survey and level folds are still answered beneath it, from the levels.
    let sum = store
        .fold("series", &[], 0..=299, Aggregate::Count)
        .unwrap();
    assert_eq!(sum[0].value, Some(strata::Num::U64(300)));
    assert!(matches!(
        store.fold("series", &[], 0..=299, Aggregate::p(50)),
        Err(EngineError::Floor { floor: 190, .. })
    ));
    // A second sweep with nothing newer changes nothing.
    assert!(store.sweep().unwrap().is_empty());
    // Space: barrier files of one partition whose levels live on stay on disk.
    let live = store.catalog().live_files().count();
    assert_eq!(live, 30);
}

#[test]
fn levels_retire_on_their_own_lifetimes_and_surveys_answer_from_the_ones_that_outlive() {
    let fs = SimFs::new();
    let retention = Retention::raw(Lifetime::AxisSpan(100))
        .levels_from(0, Lifetime::AxisSpan(100))
        .levels_from(3, Lifetime::AxisSpan(250));
    let mut store = Store::open_or_create_in(sim(&fs), config(retention), &[series()]).unwrap();
    fill(&mut store, 0, 30);
    store.sweep().unwrap();
    let key = TrackKey::encode(&["a"]).unwrap();
    let floors = store.catalog().floors_of("series", &key).unwrap().clone();
    assert!(!floors.levels.is_empty(), "{floors:?}");
    // Level 0 (cells of 4) is past from 190 up... its floor is a cell start at or above 190.
    let f0 = floors.levels[&0];
    assert!(f0 >= 190 && f0.is_multiple_of(4), "{floors:?}");
    match store.level_cells("series", &[], "value", 0, 0..=299) {
        Err(EngineError::Floor { floor, .. }) => assert_eq!(floor, f0),
        other => panic!("{other:?}"),
    }
    // A fold from the floor up answers; beneath it is refused.
    assert!(
        store
            .fold("series", &[], f0..=299, Aggregate::Count)
            .is_ok()
    );
    assert!(matches!(
        store.fold("series", &[], 0..=299, Aggregate::Count),
        Err(EngineError::Floor { .. })
    ));
}

#[test]
fn retire_ends_a_track_whole_and_an_unnarrowed_read_takes_its_floor() {
    let fs = SimFs::new();
    let mut store = Store::open_or_create_in(sim(&fs), Config::default(), &[series()]).unwrap();
    for position in 0..5 {
        let rows: Vec<Row> = (0..4)
            .flat_map(|i| [row("a", position * 10 + i), row("b", position * 10 + i)])
            .collect();
        store.publish("series", position, &rows).unwrap();
        store.seal().unwrap();
    }
    let swept = store.retire("series", &["a"]).unwrap();
    assert!(!swept.retired.is_empty());
    assert_eq!(store.query("series", &["b"], ..).unwrap().len(), 20);
    assert!(matches!(
        store.query("series", &["a"], ..),
        Err(EngineError::Floor { floor: 5, .. })
    ));
    assert!(matches!(
        store.query("series", &[], 0..),
        Err(EngineError::Floor { floor: 5, .. })
    ));
    // Reopened: the same.
    drop(store);
    let store = Store::open_or_create_in(sim(&fs), Config::default(), &[series()]).unwrap();
    assert!(matches!(
        store.survey("series", &["a"], 0..=49, 400),
        Err(EngineError::Floor { .. })
    ));
    assert!(store.survey("series", &["b"], 0..=49, 400).is_ok());
}

/// Regression (review): a range with nothing live in it, reaching beneath a floor, was answered
/// empty by surveys and folds — a complete-looking answer missing the retired rows.
#[test]
fn a_range_with_nothing_live_beneath_a_floor_answers_the_floor_not_an_empty_answer() {
    let fs = SimFs::new();
    let retention = Retention::raw(Lifetime::AxisSpan(100)).levels_from(0, Lifetime::AxisSpan(100));
    let mut store = Store::open_or_create_in(sim(&fs), config(retention), &[series()]).unwrap();
    fill(&mut store, 0, 30);
    store.sweep().unwrap();
    // An open start ending beneath everything live: the origin is beneath every floor.
    for result in [
        store.fold("series", &[], ..=150, Aggregate::Count),
        store.fold("series", &[], ..=150, Aggregate::p(50)),
        store.survey("series", &[], ..=150, 64).map(|_| Vec::new()),
    ] {
        assert!(
            matches!(result, Err(EngineError::Floor { .. })),
            "{result:?}"
        );
    }
    // After a retire: a live track beneath the range, the retired one's floor above its start.
    let fs = SimFs::new();
    let mut store = Store::open_or_create_in(sim(&fs), Config::default(), &[series()]).unwrap();
    let mut rows: Vec<Row> = (0..=10).map(|i| row("a", i * 100)).collect();
    rows.extend((0..=10).map(|i| row("b", i * 10)));
    store.publish("series", 0, &rows).unwrap();
    store.seal().unwrap();
    store.retire("series", &["a"]).unwrap();
    for result in [
        store.fold("series", &[], 500.., Aggregate::Count),
        store.fold("series", &[], 500.., Aggregate::p(50)),
        store.survey("series", &[], 500.., 64).map(|_| Vec::new()),
    ] {
        assert!(
            matches!(result, Err(EngineError::Floor { .. })),
            "{result:?}"
        );
    }
    // Above every floor, with nothing live: an empty answer is the whole answer.
    let count = store.fold("series", &[], 5000.., Aggregate::Count).unwrap();
    assert_eq!(count[0].value, Some(strata::Num::U64(0)));
}

/// Regression (review): with levels kept longer than raw rows, sweeps retired raw tiers one by
/// one, leaving segments no merge may take: their number grew with the history.
#[test]
fn with_levels_outliving_raw_rows_segment_files_stay_bounded() {
    let fs = SimFs::new();
    let mut store = Store::open_or_create_in(
        sim(&fs),
        config(Retention::raw(Lifetime::AxisSpan(2000))),
        &[series()],
    )
    .unwrap();
    let mut files_max = 0;
    for position in 0..600 {
        // Values at full precision, each bit scattered (splitmix64's finaliser; a multiple of
        // the row alone steps by a constant, which pco's deltas store in next to nothing):
        // packed segments (format 5) then cost about their rows, so the size-tiered merges
        // stay tiers rather than folding every barrier into the newest.
        let rows: Vec<Row> = (0..10)
            .map(|i| {
                let t = position * 10 + i;
                let mut r = row("a", t);
                let mut z = t.wrapping_add(0x9e37_79b9_7f4a_7c15);
                z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
                let bits = (z ^ (z >> 31)) >> 11;
                r[2] = Value::F64(bits as f64 / 2f64.powi(49) - 8.0);
                r
            })
            .collect();
        store.publish("series", position, &rows).unwrap();
        store.seal().unwrap();
        store.compact().unwrap();
        files_max = files_max.max(store.catalog().live_files().count());
    }
    // Without retention the same ingest keeps about 6 to 10 files.
    assert!(files_max <= 16, "{files_max} files");
    // The raw floor still rose (a whole segment at a time: with levels kept forever,
    // compaction merges freely, so it lags the lifetime by up to a segment's span), and
    // reads beneath it are refused.
    let key = TrackKey::encode(&["a"]).unwrap();
    let raw = store
        .catalog()
        .floors_of("series", &key)
        .unwrap()
        .raw
        .unwrap();
    let axis = raw.axis.unwrap();
    assert!(axis > 0 && axis <= 5999 - 2000, "{raw:?}");
    assert!(matches!(
        store.fold("series", &[], 0..=5999, Aggregate::p(50)),
        Err(EngineError::Floor { .. })
    ));
    // Levels live on: a level fold over the whole history answers every row.
    let count = store
        .fold("series", &[], 0..=5999, Aggregate::Count)
        .unwrap();
    assert_eq!(count[0].value, Some(strata::Num::U64(6000)));
}

/// Regression (review): a file to rewrite that cannot be mapped took every compaction step.
#[test]
fn a_rewrite_that_cannot_be_read_does_not_take_every_step() {
    use strata::segment::vfs::Fault;
    let fs = SimFs::new();
    let mut store = Store::open_or_create_in(sim(&fs), Config::default(), &[series()]).unwrap();
    let mut rows: Vec<Row> = (0..200).map(|i| row("a", i)).collect();
    rows.push(row("b", 0));
    store.publish("series", 0, &rows).unwrap();
    store.seal().unwrap();
    for position in 1..=10 {
        store
            .publish("series", position, &[row("c", position)])
            .unwrap();
        store.seal().unwrap();
    }
    store.retire("series", &["a"]).unwrap();
    drop(store);
    let mut store = Store::open_or_create_in(sim(&fs), Config::default(), &[series()]).unwrap();
    store.query("series", &["c"], ..).unwrap();
    fs.fail_maps(Some(Fault::Emfile));
    let mut merged_c = false;
    for _ in 0..4 {
        if let Ok(Some(step)) = store.compact_step() {
            merged_c |= step.track == TrackKey::encode(&["c"]).unwrap();
        }
    }
    assert!(merged_c, "c was never compacted");
}
