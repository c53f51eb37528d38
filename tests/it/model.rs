//! The model test both the served engine and compaction run: random publish / seal / reopen
//! (and compact, and trim) sequences through the served store and through `MemorySeries`, every
//! answer compared whole, `Floor` refusals included.

use std::ops::Bound::{Included, Unbounded};
use std::sync::Arc;

use proptest::prelude::*;
use proptest::strategy::{BoxedStrategy, Union};
use strata::conformance::suite_stream;
use strata::segment::vfs::{SimFs, Vfs};
use strata::{
    Aggregate, BeneathWindow, Config, EngineError, MemorySeries, Row, Series, ServeConfig, Served,
    Store, Value,
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

/// How often each kind of operation is drawn; a weight of 0 never draws it.
pub(crate) struct Weights {
    pub(crate) seal: u32,
    pub(crate) compact: u32,
    pub(crate) trim: u32,
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
            (track, prop::option::of(0u8..=100), 0u64..80, 0u64..80)
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
    Union::new_weighted(arms).boxed()
}

/// The store and serving configuration a model run uses; `Compact` ops override the store's
/// compaction bounds for the one compaction they run.
pub(crate) struct Setup {
    pub(crate) store: Config,
    pub(crate) serve: ServeConfig,
}

fn open(fs: &SimFs, setup: &Setup, store: Config) -> Served {
    let vfs: Arc<dyn Vfs> = Arc::new(fs.clone());
    let store = Store::open_in(vfs, store, &[suite_stream()]).expect("a store");
    Served::spawn(store, setup.serve.clone())
}

/// The suite stream's rows for `(partition, axis step, value)` triples; each of the three
/// partitions' axis advances by its step, so it never goes backwards.
fn suite_rows(rows: Vec<(u8, u64, i32)>, axes: &mut [u64; 3]) -> Vec<Row> {
    rows.into_iter()
        .map(|(p, dt, v)| {
            axes[usize::from(p)] += dt;
            let (run, probe) = [("run_7", 1), ("run_70", 1), ("run_7", 2)][usize::from(p)];
            vec![
                Value::Str(run.into()),
                Value::U64(probe),
                Value::U64(axes[usize::from(p)]),
                Value::F64(f64::from(v)),
                Value::I64(i64::from(v) * 3),
            ]
        })
        .collect()
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
    /// Reads both adapters refused with the same `Floor`.
    pub(crate) floors_refused: usize,
}

/// Runs `ops` through both adapters and compares every answer whole; answers what it exercised.
pub(crate) async fn run_model(ops: Vec<Op>, setup: &Setup) -> Ran {
    let fs = SimFs::new();
    let mut engine = open(&fs, setup, setup.store.clone());
    let mut model = MemorySeries::new(&[suite_stream()]);
    let mut position = 1;
    let mut axes = [0u64; 3];
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
                engine = open(&fs, setup, setup.store.clone());
                model.seal("capture", &[]).await.unwrap();
            }
            Op::Compact {
                files_max,
                inputs_max,
            } => {
                // A clean stop seals; the store that compacts then serves the reads below,
                // without a reopen in between.
                engine.stop().await.unwrap();
                model.seal("capture", &[]).await.unwrap();
                let vfs: Arc<dyn Vfs> = Arc::new(fs.clone());
                let bounds = Config {
                    compact_files_max: files_max,
                    compact_inputs_max: inputs_max,
                    ..setup.store.clone()
                };
                let mut store = Store::open_in(vfs, bounds, &[]).expect("a store");
                ran.steps += store.compact().unwrap().len();
                engine = Served::spawn(store, setup.serve.clone());
            }
            Op::TrimTo { back } => {
                let horizon = position.saturating_sub(back);
                ran.trims += usize::from(trim_both(&engine, &model, horizon, i).await);
            }
            Op::Rows { track, lo, hi } => {
                let t = labels(&track);
                let a = engine.rows("capture", &t, Included(lo), Included(hi)).await;
                let b = model.rows("capture", &t, Included(lo), Included(hi)).await;
                assert_eq!(a, b, "op {i}: rows {track:?} {lo}..={hi}");
                ran.floors_refused += usize::from(matches!(a, Err(BeneathWindow::Floor { .. })));
            }
            Op::Buckets { track, budget, lo } => {
                let t = labels(&track);
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
            }
            Op::Aggregate {
                track,
                rank,
                lo,
                hi,
            } => {
                let t = labels(&track);
                let kinds = match rank {
                    Some(r) => vec![Aggregate::p(r)],
                    None => Aggregate::LEVEL_FOLDS.to_vec(),
                };
                for kind in kinds {
                    let a = engine
                        .aggregate("capture", &t, Included(lo), Included(hi), kind)
                        .await;
                    let b = model
                        .aggregate("capture", &t, Included(lo), Included(hi), kind)
                        .await;
                    assert_eq!(a, b, "op {i}: {kind} over {lo}..={hi} of {track:?}");
                    ran.floors_refused +=
                        usize::from(matches!(a, Err(BeneathWindow::Floor { .. })));
                }
            }
        }
    }
    engine.stop().await.unwrap();
    ran
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

/// Runs one model sequence on a two-worker runtime.
pub(crate) fn block_on_model(ops: Vec<Op>, setup: &Setup) -> Ran {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
        .block_on(run_model(ops, setup))
}
