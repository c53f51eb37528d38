//! The model test both the served engine and compaction run: random publish / seal / reopen
//! (and compact, trim and retire) sequences through the served store and through
//! `MemorySeries`, every answer compared whole, `Floor` refusals included; `Direct` ops stop
//! serving and compare the store itself (floors per partition and per level, and the refusals'
//! units).

use std::ops::Bound::{Included, Unbounded};
use std::ops::RangeInclusive;
use std::sync::Arc;

use proptest::prelude::*;
use proptest::strategy::{BoxedStrategy, Union};
use strata::conformance::suite_stream;
use strata::index::{RawFloor, Tier, TrackKey};
use strata::segment::Column;
use strata::segment::vfs::{SimFs, Vfs};
use strata::{
    Aggregate, BeneathWindow, ColumnRun, Config, EngineError, FieldKind, MemorySeries, Row, Series,
    ServeConfig, Served, Store, StoredRow, Stream, StreamDecl, Value,
};

#[derive(Clone, Debug)]
pub(crate) enum Op {
    Publish {
        step: u64,
        rows: Vec<(u8, u64, i32)>,
    },
    Seal,
    Reopen,
    /// Stop serving, compact the store with these bounds, and serve the same store again.
    Compact {
        files_max: usize,
        inputs_max: usize,
    },
    /// Trim the served store (`Served::trim_to`, which seals first) and the model (sealed
    /// first) to `back` positions below the last one published.
    TrimTo {
        back: u64,
    },
    /// Retire the partitions under `track` in the served store (`Served::retire`, which seals
    /// first) and in the model (sealed first).
    Retire {
        track: Vec<&'static str>,
    },
    /// A read anchored at the newest row: from `back` beneath the last position published
    /// (rows) or the highest axis value published (the others), `len` long. These cross the
    /// floors trims and retirements leave, which lie just past what they retired.
    Near {
        track: Vec<&'static str>,
        read: Near,
        back: u64,
        len: u64,
    },
    /// Stop serving, compare the store itself with the model (every partition's floors, every
    /// level's floor through `level_cells`, surveys whole, refusals with their units), and
    /// serve the same store again.
    Direct {
        lo: u64,
    },
    Rows {
        track: Vec<&'static str>,
        lo: u64,
        hi: u64,
    },
    Buckets {
        track: Vec<&'static str>,
        budget: u64,
        lo: Option<u64>,
    },
    Aggregate {
        track: Vec<&'static str>,
        rank: Option<u8>,
        lo: u64,
        hi: u64,
    },
}

/// Which read a `Near` op makes.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Near {
    Rows,
    Buckets { budget: u64 },
    LevelFold,
    Percentile { rank: u8 },
}

/// How often each kind of operation is drawn; a weight of 0 never draws it.
pub(crate) struct Weights {
    pub(crate) seal: u32,
    pub(crate) compact: u32,
    pub(crate) trim: u32,
    pub(crate) retire: u32,
    /// `Near` reads and `Direct` comparisons (drawn 4 to 1).
    pub(crate) near: u32,
}

pub(crate) fn op(weights: &Weights) -> BoxedStrategy<Op> {
    let track = prop::sample::select(vec![
        vec![],
        vec!["run_7"],
        vec!["run_70"],
        vec!["run_7", "1"],
    ]);
    let mut arms: Vec<(u32, BoxedStrategy<Op>)> = vec![
        (
            4,
            (
                0u64..3,
                prop::collection::vec((0u8..3, 0u64..6, -20i32..20), 0..6),
            )
                .prop_map(|(step, rows)| Op::Publish { step, rows })
                .boxed(),
        ),
        (1, Just(Op::Reopen).boxed()),
        (
            2,
            (track.clone(), 0u64..30, 0u64..30)
                .prop_map(|(track, a, b)| Op::Rows {
                    track,
                    lo: a.min(b),
                    hi: a.max(b),
                })
                .boxed(),
        ),
        (
            2,
            (track.clone(), 0u64..200, prop::option::of(0u64..60))
                .prop_map(|(track, budget, lo)| Op::Buckets { track, budget, lo })
                .boxed(),
        ),
        (
            2,
            (
                track.clone(),
                prop::option::of(0u8..=100),
                0u64..80,
                0u64..80,
            )
                .prop_map(|(track, rank, a, b)| Op::Aggregate {
                    track,
                    rank,
                    lo: a.min(b),
                    hi: a.max(b),
                })
                .boxed(),
        ),
    ];
    if weights.seal > 0 {
        arms.push((weights.seal, Just(Op::Seal).boxed()));
    }
    if weights.compact > 0 {
        let compact = (0usize..3, 2usize..5).prop_map(|(files_max, inputs_max)| Op::Compact {
            files_max,
            inputs_max,
        });
        arms.push((weights.compact, compact.boxed()));
    }
    if weights.trim > 0 {
        let trim = (0u64..8).prop_map(|back| Op::TrimTo { back });
        arms.push((weights.trim, trim.boxed()));
    }
    if weights.retire > 0 {
        let retire = track.clone().prop_map(|track| Op::Retire { track });
        arms.push((weights.retire, retire.boxed()));
    }
    if weights.near > 0 {
        let read = prop_oneof![
            Just(Near::Rows),
            (8u64..200).prop_map(|budget| Near::Buckets { budget }),
            Just(Near::LevelFold),
            (0u8..=100).prop_map(|rank| Near::Percentile { rank }),
        ];
        let near = (
            track.clone(),
            read,
            0u64..24,
            prop_oneof![0u64..12, Just(u64::MAX)],
        )
            .prop_map(|(track, read, back, len)| Op::Near {
                track,
                read,
                back,
                len,
            });
        arms.push((4 * weights.near, near.boxed()));
        let direct = (0u64..40).prop_map(|lo| Op::Direct { lo });
        arms.push((weights.near, direct.boxed()));
    }
    Union::new_weighted(arms).boxed()
}

/// The store and serving configuration a model run uses; `Compact` ops override the store's
/// compaction bounds for the one compaction they run.
pub(crate) struct Setup {
    pub(crate) store: Config,
    pub(crate) serve: ServeConfig,
}

fn open(fs: &SimFs, setup: &Setup, store: Config, decl: &StreamDecl) -> Served {
    let vfs: Arc<dyn Vfs> = Arc::new(fs.clone());
    let store = Store::open_or_create_in(vfs, store, std::slice::from_ref(decl)).expect("a store");
    Served::spawn(store, setup.serve.clone())
}

/// The suite stream's fields and tracks on another ladder.
pub(crate) fn capture_on_ladder(base: u64, fanout: u64) -> StreamDecl {
    Stream::new("capture")
        .field("run", FieldKind::Str)
        .field("probe", FieldKind::U64)
        .field("t", FieldKind::U64)
        .field("value", FieldKind::F64)
        .field("count", FieldKind::I64)
        .track(["run", "probe"])
        .axis("t")
        .ladder(base, fanout)
        .build()
        .expect("a valid declaration")
}

/// The suite stream's rows for `(partition, axis step, value)` triples; each of the three
/// partitions' axis advances by its step (saturating at the top of the axis), so it never goes
/// backwards.
fn suite_rows(rows: Vec<(u8, u64, i32)>, axes: &mut [u64; 3]) -> Vec<Row> {
    rows.into_iter()
        .map(|(p, dt, v)| {
            axes[usize::from(p)] = axes[usize::from(p)].saturating_add(dt);
            let (run, probe) = [("run_7", 1), ("run_70", 1), ("run_7", 2)][usize::from(p)];
            vec![
                Value::Str(run.into()),
                Value::U64(probe),
                Value::U64(axes[usize::from(p)]),
                suite_value(v),
                suite_count(v),
            ]
        })
        .collect()
}

/// The `value` field for a drawn `v`: a few draws are missing or not finite, so every model
/// run folds levels, percentiles and merges over holes (null, NaN) and infinities.
fn suite_value(v: i32) -> Value {
    match v {
        17 => Value::Null,
        -17 => Value::F64(f64::NAN),
        13 => Value::F64(f64::INFINITY),
        v => Value::F64(f64::from(v)),
    }
}

/// The `count` field for a drawn `v`: null for one draw in forty.
fn suite_count(v: i32) -> Value {
    match v {
        11 => Value::Null,
        v => Value::I64(i64::from(v) * 3),
    }
}

pub(crate) fn labels(track: &[&str]) -> Vec<String> {
    track.iter().map(|s| (*s).to_owned()).collect()
}

/// What a model run did besides agreeing: what its ops exercised.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Ran {
    /// Compaction steps the `Compact` ops ran.
    pub(crate) steps: usize,
    /// `TrimTo` ops that left the stream with a floor.
    pub(crate) trims: usize,
    /// `Retire` ops that ended a partition.
    pub(crate) retired: usize,
    /// Reads both adapters refused with the same `Floor`.
    pub(crate) floors_refused: usize,
    /// Of those, by read: rows, surveys, level folds, percentiles, level cells (`Direct`).
    pub(crate) refused: [usize; 5],
    /// Reads answered (not refused) by both alike, by read as above: the floors let through
    /// what lies at or above them.
    pub(crate) answered: [usize; 5],
    /// Level floors the store recorded or derived that `Direct` ops compared with the model's.
    pub(crate) level_floors_compared: usize,
}

impl Ran {
    pub(crate) fn add(&mut self, other: &Ran) {
        self.steps += other.steps;
        self.trims += other.trims;
        self.retired += other.retired;
        self.floors_refused += other.floors_refused;
        self.level_floors_compared += other.level_floors_compared;
        for k in 0..5 {
            self.refused[k] += other.refused[k];
            self.answered[k] += other.answered[k];
        }
    }

    /// Counts one read both sides answered alike, as refused or answered.
    fn count<T>(&mut self, read: usize, answer: &Result<T, BeneathWindow>) {
        match answer {
            Err(BeneathWindow::Floor { .. }) => {
                self.floors_refused += 1;
                self.refused[read] += 1;
            }
            Ok(_) => self.answered[read] += 1,
            Err(_) => {}
        }
    }
}

const ROWS: usize = 0;
const SURVEY: usize = 1;
const LEVEL_FOLD: usize = 2;
const PERCENTILE: usize = 3;
const LEVEL_CELLS: usize = 4;

/// Runs `ops` through both adapters and compares every answer whole; answers what it exercised.
///
/// On the stream `decl` (the suite stream's fields, on any ladder), with every partition's axis
/// starting at `origin`.
pub(crate) async fn run_model_on(
    ops: Vec<Op>,
    setup: &Setup,
    decl: &StreamDecl,
    origin: u64,
) -> Ran {
    let fs = SimFs::new();
    let mut engine = open(&fs, setup, setup.store.clone(), decl);
    let mut model = MemorySeries::with_fill(std::slice::from_ref(decl), setup.store.survey_fill);
    let mut position = 1;
    let mut axes = [origin; 3];
    let mut ran = Ran::default();
    for (i, op) in ops.into_iter().enumerate() {
        match op {
            Op::Publish { step, rows } => {
                position += step;
                let rows = suite_rows(rows, &mut axes);
                let a = engine.publish("capture", position, rows.clone()).await;
                let b = model.publish("capture", position, rows).await;
                assert_eq!(a.is_ok(), b.is_ok(), "op {i}: publish {a:?} vs {b:?}");
            }
            Op::Seal => {
                let a = engine.seal("capture", &[]).await;
                let b = model.seal("capture", &[]).await;
                assert_eq!(a, b, "op {i}: seal");
            }
            Op::Reopen => {
                engine.stop().await.unwrap();
                engine = open(&fs, setup, setup.store.clone(), decl);
                model.seal("capture", &[]).await.unwrap();
            }
            Op::Compact {
                files_max,
                inputs_max,
            } => {
                // A clean stop seals; the store that compacts then serves the reads below,
                // without a reopen in between.
                let bounds = setup
                    .store
                    .clone()
                    .compact_files_max(files_max)
                    .compact_inputs_max(inputs_max);
                let mut store = unserve(engine, &mut model, &fs, bounds).await;
                ran.steps += store.compact().unwrap().len();
                engine = Served::spawn(store, setup.serve.clone());
            }
            Op::TrimTo { back } => {
                let horizon = position.saturating_sub(back);
                ran.trims += usize::from(trim_both(&engine, &model, horizon, i).await);
            }
            Op::Retire { track } => {
                ran.retired += retire_both(&engine, &model, &track, i).await;
            }
            Op::Near {
                track,
                read,
                back,
                len,
            } => {
                let top = axes.iter().max().copied().unwrap_or(0);
                let anchor = if matches!(read, Near::Rows) {
                    position
                } else {
                    top
                };
                let lo = anchor.saturating_sub(back);
                let hi = lo.saturating_add(len);
                near_both(&mut engine, &mut model, &track, read, lo..=hi, &mut ran, i).await;
            }
            Op::Direct { lo } => {
                let store = unserve(engine, &mut model, &fs, setup.store.clone()).await;
                let top = axes.iter().max().copied().unwrap_or(0);
                let lo = origin.saturating_add(lo);
                compare_direct(&store, &model, lo, top, &mut ran, i);
                engine = Served::spawn(store, setup.serve.clone());
            }
            Op::Rows { track, lo, hi } => {
                let t = labels(&track);
                let a = engine.rows("capture", &t, Included(lo), Included(hi)).await;
                let b = model.rows("capture", &t, Included(lo), Included(hi)).await;
                assert_eq!(a, b, "op {i}: rows {track:?} {lo}..={hi}");
                ran.count(ROWS, &a);
            }
            Op::Buckets { track, budget, lo } => {
                buckets_both(&mut engine, &mut model, &track, budget, lo, &mut ran, i).await;
            }
            Op::Aggregate {
                track,
                rank,
                lo,
                hi,
            } => {
                let read = rank.map_or(Near::LevelFold, |rank| Near::Percentile { rank });
                near_both(&mut engine, &mut model, &track, read, lo..=hi, &mut ran, i).await;
            }
        }
    }
    engine.stop().await.unwrap();
    ran
}

/// One `Buckets` op through both adapters: equal answers, or both refusing the budget.
async fn buckets_both(
    engine: &mut Served,
    model: &mut MemorySeries,
    track: &[&str],
    budget: u64,
    lo: Option<u64>,
    ran: &mut Ran,
    i: usize,
) {
    let t = labels(track);
    let start = lo.map_or(Unbounded, Included);
    let a = engine
        .buckets("capture", &t, start, Unbounded, budget)
        .await;
    let b = model.buckets("capture", &t, start, Unbounded, budget).await;
    match (&a, &b) {
        (Err(BeneathWindow::Invalid(_)), Err(BeneathWindow::Invalid(_))) => {}
        _ => assert_eq!(
            a, b,
            "op {i}: buckets {track:?} budget {budget} from {lo:?}"
        ),
    }
    ran.count(SURVEY, &a);
}

/// Stops serving (a clean stop seals; the model seals too) and opens the store itself.
async fn unserve(engine: Served, model: &mut MemorySeries, fs: &SimFs, config: Config) -> Store {
    engine.stop().await.unwrap();
    model.seal("capture", &[]).await.unwrap();
    let vfs: Arc<dyn Vfs> = Arc::new(fs.clone());
    Store::open_in(vfs, config, &[]).expect("a store")
}

/// Trims the served store and the model to `horizon` (each seals first): both refuse it, or
/// both answer the same floors. Answers whether the stream has a floor.
async fn trim_both(engine: &Served, model: &MemorySeries, horizon: u64, i: usize) -> bool {
    let a = engine.trim_to("capture", horizon).await.map(|t| t.floors);
    let mut reference = model.clone();
    reference.seal("capture", &[]).await.unwrap();
    let b = model.trim_to("capture", horizon);
    match (&a, &b) {
        (Ok(a), Ok(b)) => assert_eq!(a, b, "op {i}: trim to {horizon}"),
        (Err(EngineError::Trim { .. }), Err(EngineError::Trim { .. })) => {}
        _ => panic!("op {i}: trim to {horizon}: {a:?} vs {b:?}"),
    }
    a.is_ok_and(|floors| !floors.is_empty())
}

/// Retires the partitions under `track` in the served store and the model (each seals first):
/// both record the same raw floors for the same partitions, and every level floor the store
/// records is the model's exact one. Answers how many partitions were ended.
async fn retire_both(engine: &Served, model: &MemorySeries, track: &[&str], i: usize) -> usize {
    // Every track is asked for by name; a selection with nothing live (or never sealed) is
    // refused alike by both, and records nothing.
    let swept = if track.is_empty() {
        engine.retire_all("capture").await
    } else {
        engine.retire("capture", track).await
    };
    let mut reference = model.clone();
    reference.seal("capture", &[]).await.unwrap();
    let ended = if track.is_empty() {
        model.retire_all("capture")
    } else {
        model.retire("capture", track)
    };
    let (swept, ended) = match (swept, ended) {
        (Ok(swept), Ok(ended)) => (swept, ended),
        (Err(EngineError::NothingToRetire { .. }), Err(EngineError::NothingToRetire { .. }))
        | (Err(EngineError::UnknownTrack { .. }), Err(EngineError::UnknownTrack { .. })) => {
            return 0;
        }
        (a, b) => panic!("op {i}: retire {track:?}: the store {a:?}, the model {b:?}"),
    };
    let raw: Vec<(TrackKey, RawFloor)> = swept
        .floors
        .iter()
        .filter(|f| f.tier == Tier::Raw)
        .map(|f| {
            let floor = RawFloor {
                position: f.position.expect("a raw floor has a position"),
                axis: f.axis,
            };
            (f.track.clone(), floor)
        })
        .collect();
    let want: Vec<(TrackKey, RawFloor)> = ended.iter().map(|e| (e.track.clone(), e.raw)).collect();
    assert_eq!(
        raw, want,
        "op {i}: retire {track:?}: the raw floors recorded"
    );
    for floor in swept.floors.iter().filter(|f| f.tier != Tier::Raw) {
        let Tier::Level(level) = floor.tier else {
            unreachable!()
        };
        let exact = ended
            .iter()
            .find(|e| e.track == floor.track)
            .and_then(|e| e.levels.get(usize::from(level)).copied());
        assert_eq!(
            floor.axis, exact,
            "op {i}: retire {track:?}: the level {level} floor recorded for {:?}",
            floor.track
        );
    }
    ended.len()
}

/// One `Near` read through both adapters, compared whole.
async fn near_both(
    engine: &mut Served,
    model: &mut MemorySeries,
    track: &[&str],
    read: Near,
    range: RangeInclusive<u64>,
    ran: &mut Ran,
    i: usize,
) {
    let t = labels(track);
    let (lo, hi) = (Included(*range.start()), Included(*range.end()));
    let what = format!("op {i}: {read:?} of {track:?} over {range:?}");
    match read {
        Near::Rows => {
            let a = engine.rows("capture", &t, lo, hi).await;
            assert_eq!(a, model.rows("capture", &t, lo, hi).await, "{what}");
            ran.count(ROWS, &a);
        }
        Near::Buckets { budget } => {
            let a = engine.buckets("capture", &t, lo, hi, budget).await;
            assert_eq!(
                a,
                model.buckets("capture", &t, lo, hi, budget).await,
                "{what}"
            );
            ran.count(SURVEY, &a);
        }
        Near::LevelFold | Near::Percentile { .. } => {
            let (kinds, counted) = match read {
                Near::Percentile { rank } => (vec![Aggregate::p(rank)], PERCENTILE),
                _ => (Aggregate::LEVEL_FOLDS.to_vec(), LEVEL_FOLD),
            };
            for kind in kinds {
                let a = engine.aggregate("capture", &t, lo, hi, kind).await;
                let b = model.aggregate("capture", &t, lo, hi, kind).await;
                assert_eq!(a, b, "{what}: {kind}");
                ran.count(counted, &a);
            }
        }
    }
}

/// The selections every `Direct` op compares: the stream, each run, each partition.
const SELECTIONS: [&[&str]; 6] = [
    &[],
    &["run_7"],
    &["run_70"],
    &["run_7", "1"],
    &["run_7", "2"],
    &["run_70", "1"],
];

/// Compares the store itself with the model: each partition's recorded floors (raw, and every
/// recorded level's against the model's exact one), every level's floor as `level_cells` of
/// each selection answers it (above the highest recorded level the store derives it; the
/// model has it exactly), and surveys, folds and queries whole, refusals with their units.
fn compare_direct(store: &Store, model: &MemorySeries, lo: u64, top: u64, ran: &mut Ran, i: usize) {
    for (track, floors) in store.catalog().floors("capture", &TrackKey::ROOT) {
        let labels: Vec<&str> = track.labels().collect();
        let raw = floors
            .raw
            .expect("every partition with floors has a raw floor here");
        if raw.position > 0 {
            let by_position = model.query("capture", &labels, 0..1).map(|_| ());
            let what = format!("op {i}: {labels:?}'s raw floor");
            refused_at(&by_position, raw.position, "position", &what);
        }
        let axis = raw
            .axis
            .expect("an axial stream's raw floor has an axis value");
        if axis > 0 {
            let by_axis = model
                .fold("capture", &labels, 0.., Aggregate::p(0))
                .map(|_| ());
            let what = format!("op {i}: {labels:?}'s raw axis floor");
            refused_at(&by_axis, axis, "axis value", &what);
        }
        for (&level, &floor) in &floors.levels {
            assert_eq!(
                model.level_floor("capture", &labels, level),
                Some(floor),
                "op {i}: {labels:?}'s recorded level {level} floor"
            );
            ran.level_floors_compared += 1;
        }
    }
    for selection in SELECTIONS {
        for level in 0..=64u8 {
            let a = store.level_cells(
                "capture",
                selection,
                "value",
                level,
                lo..=lo.saturating_add(8),
            );
            let b = model.level_cells(
                "capture",
                selection,
                "value",
                level,
                lo..=lo.saturating_add(8),
            );
            agree(
                &a,
                &b,
                &format!("op {i}: level {level} cells of {selection:?} from {lo}"),
            );
            let a = a.map_err(BeneathWindow::from);
            if a.is_err() {
                ran.level_floors_compared += 1;
            }
            ran.count(LEVEL_CELLS, &a);
        }
        for start in [lo, top.saturating_sub(lo % 8)] {
            for budget in [8, 24, 200] {
                let a = store.survey("capture", selection, start.., budget);
                let b = model.survey("capture", selection, start.., budget);
                let what = format!("op {i}: survey of {selection:?} from {start}, budget {budget}");
                agree(&a, &b, &what);
                ran.count(SURVEY, &a.map_err(BeneathWindow::from));
            }
            for kind in [Aggregate::Sum, Aggregate::Count, Aggregate::p(50)] {
                let a = store.fold("capture", selection, start..=top, kind);
                let b = model.fold("capture", selection, start..=top, kind);
                agree(
                    &a,
                    &b,
                    &format!("op {i}: {kind} of {selection:?} over {start}..={top}"),
                );
                let read = if kind.folds_levels() {
                    LEVEL_FOLD
                } else {
                    PERCENTILE
                };
                ran.count(read, &a.map_err(BeneathWindow::from));
            }
            let a = store.query("capture", selection, start..);
            let b = model.query("capture", selection, start..);
            agree(
                &a,
                &b,
                &format!("op {i}: query of {selection:?} from {start}"),
            );
            agree(
                &rows_of_runs(store, selection, start),
                &b,
                &format!("op {i}: query_runs of {selection:?} from {start}"),
            );
            ran.count(ROWS, &a.map_err(BeneathWindow::from));
        }
    }
}

/// The rows of a read as runs, rebuilt here from each run's columns.
fn rows_of_runs(
    store: &Store,
    selection: &[&str],
    start: u64,
) -> Result<Vec<StoredRow>, EngineError> {
    let runs = store.query_runs("capture", selection, start..)?;
    let runs: Vec<ColumnRun> = runs.collect::<Result<_, _>>()?;
    Ok(runs.iter().flat_map(|run| rows_of(store, run)).collect())
}

/// A run's rows of the suite's stream (`run` and `probe` the track, `t` the axis, `value` and
/// `count` stored), built from its columns alone.
fn rows_of(store: &Store, run: &ColumnRun) -> Vec<StoredRow> {
    let decl = store.stream("capture").unwrap();
    assert!(!run.is_empty(), "a query never yields an empty run");
    let labels: Vec<&str> = run.track().labels().collect();
    let t = run.axis().unwrap();
    let (Some(Column::F64(value)), Some(Column::I64(count))) = (run.column(3), run.column(4))
    else {
        panic!("value and count are stored: {decl:?}")
    };
    assert!(
        run.column(0).is_none() && run.column(2).is_none(),
        "track and axis are not"
    );
    assert_eq!(
        (t.len(), value.len(), count.len()),
        (run.len(), run.len(), run.len())
    );
    let null_values = run.null_mask(3, 0..run.len());
    let null_counts = run.null_mask(4, 0..run.len());
    let null = |mask: &Option<Vec<bool>>, row_idx: usize| mask.as_ref().is_some_and(|m| m[row_idx]);
    run.positions()
        .enumerate()
        .map(|(row_idx, position)| StoredRow {
            position,
            values: vec![
                Value::Str(labels[0].to_owned()),
                Value::U64(labels[1].parse().unwrap()),
                Value::U64(t[row_idx].get()),
                if null(&null_values, row_idx) {
                    Value::Null
                } else {
                    Value::F64(value[row_idx].get())
                },
                if null(&null_counts, row_idx) {
                    Value::Null
                } else {
                    Value::I64(count[row_idx].get())
                },
            ],
        })
        .collect()
}

/// The model's `answer` is a refusal at the store's recorded `floor`, in `unit`.
#[track_caller]
fn refused_at(answer: &Result<(), EngineError>, floor: u64, unit: &str, what: &str) {
    match answer {
        Err(EngineError::Floor {
            stream,
            floor: f,
            unit: u,
            ..
        }) => assert_eq!(
            (stream.as_str(), *f, *u),
            ("capture", floor, unit),
            "{what}: the floor refused with"
        ),
        other => panic!("{what}: the model answered {other:?}, not a floor at {floor}"),
    }
}

/// The store's answer `a` and the model's `b` agree: equal answers, or `Floor` refusals with
/// the same floor, unit and narrowing (the tracks that hold rows, the range each answers), or
/// refusals of the same kind.
#[track_caller]
fn agree<T: PartialEq + std::fmt::Debug>(
    a: &Result<T, EngineError>,
    b: &Result<T, EngineError>,
    what: &str,
) {
    match (a, b) {
        (Ok(a), Ok(b)) => assert_eq!(a, b, "{what}"),
        (
            Err(EngineError::Floor {
                stream: s1,
                selection: t1,
                floor: f1,
                unit: u1,
                narrowing: n1,
            }),
            Err(EngineError::Floor {
                stream: s2,
                selection: t2,
                floor: f2,
                unit: u2,
                narrowing: n2,
            }),
        ) => assert_eq!(
            (s1, t1, f1, u1, n1),
            (s2, t2, f2, u2, n2),
            "{what}: the floor refused with, and what it offers instead"
        ),
        (Err(EngineError::Floor { .. }) | Ok(_), _)
        | (_, Err(EngineError::Floor { .. }) | Ok(_)) => {
            panic!("{what}: the store answered {a:?}, the model {b:?}")
        }
        (Err(a), Err(b)) => assert_eq!(
            std::mem::discriminant(a),
            std::mem::discriminant(b),
            "{what}: refused alike ({a} vs {b})"
        ),
    }
}

/// Runs one model sequence on a two-worker runtime.
pub(crate) fn block_on_model(ops: Vec<Op>, setup: &Setup) -> Ran {
    block_on_model_on(ops, setup, &suite_stream(), 0)
}

/// `block_on_model` on another stream and axis origin.
pub(crate) fn block_on_model_on(
    ops: Vec<Op>,
    setup: &Setup,
    decl: &StreamDecl,
    origin: u64,
) -> Ran {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
        .block_on(run_model_on(ops, setup, decl, origin))
}
