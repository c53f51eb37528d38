//! The conformance suite: one library function that holds any [`Series`] adapter to the
//! contract, so the served engine, the in-memory reference and any future adapter prove the same
//! things with the same checks.
//!
//! Call [`conformance`] from a test with a [`SeriesFactory`] for your adapter. It panics, naming
//! the broken promise, at the first answer that breaks the contract. Every expected value is
//! computed here from the rows the suite published, never by the adapter under test.

use std::future::Future;
use std::ops::Bound::{Included, Unbounded};

use strata_index::{FieldKind, StreamDecl};
use strata_levels::{Aggregate, Bucket, LEVELS_MAX, Num};

use crate::decl::Stream;
use crate::series::{BeneathWindow, Series};
use crate::value::{Row, Value};
use crate::view::read::StoredRow;

/// Makes adapters for the suite.
pub trait SeriesFactory: Send {
    /// The adapter under test.
    type Adapter: Series;

    /// A fresh, empty adapter holding these streams.
    fn create(&mut self, streams: Vec<StreamDecl>) -> impl Future<Output = Self::Adapter> + Send;

    /// Closes `adapter` cleanly (a clean stop closes a last barrier) and opens it again over the
    /// same storage, as a restarted host would.
    fn reopen(&mut self, adapter: Self::Adapter) -> impl Future<Output = Self::Adapter> + Send;
}

/// The stream the suite publishes: two track components, an axis, two measured fields, a ladder
/// small enough that a few hundred rows climb several levels.
///
/// # Panics
/// Never: the declaration is fixed and valid.
pub fn suite_stream() -> StreamDecl {
    suite_stream_on(Some(SMALL))
}

/// The suite's stream on `grid`'s ladder, or declared with none (the default ladder).
fn suite_stream_on(grid: Option<Grid>) -> StreamDecl {
    let stream = Stream::new("capture")
        .field("run", FieldKind::Str)
        .field("probe", FieldKind::U64)
        .field("t", FieldKind::U64)
        .field("value", FieldKind::F64)
        .field("count", FieldKind::I64)
        .track(["run", "probe"])
        .axis("t");
    match grid {
        Some(grid) => stream.ladder(grid.base, grid.fanout),
        None => stream,
    }
    .build()
    .expect("the suite's declaration is valid")
}

/// A zero-anchored grid of cells, as the contract defines it, computed here: level `k`'s cells
/// are `base * fanout^k` wide.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Grid {
    base: u64,
    fanout: u64,
}

/// The suite's declared ladder.
const SMALL: Grid = Grid { base: 4, fanout: 4 };
/// The ladder a stream declared without one has (docs/levels.md, *The default ladder*).
const DEFAULT: Grid = Grid { base: 1, fanout: 2 };
const N_MEASURED: u64 = 2;

/// The suite's rows: run_7 and run_70 (a label that extends another), three partitions, values
/// small integers so every sum is exact.
fn row(run: &str, probe: u64, t: u64, value: i32, count: i64) -> Row {
    vec![
        Value::Str(run.into()),
        Value::U64(probe),
        Value::U64(t),
        Value::F64(f64::from(value)),
        Value::I64(count),
    ]
}

fn batch(round: u64) -> Vec<(u64, Vec<Row>)> {
    (0..20)
        .map(|i| {
            let step = round * 20 + i;
            let t = step * 3;
            let v = i32::try_from((step * 7) % 23).expect("small") - 11;
            let rows = vec![
                row("run_7", 1, t, v, i64::try_from(step % 5).expect("small")),
                row("run_70", 1, t + 1, -v, 3),
                row("run_7", 2, t + 2, v * 2, -1),
            ];
            (step + 1, rows)
        })
        .collect()
}

struct Published {
    rows: Vec<StoredRow>,
    /// The grid the suite's stream is declared on.
    grid: Grid,
}

impl Published {
    fn select(&self, track: &[&str], lo: u64, hi: u64) -> Vec<StoredRow> {
        self.rows
            .iter()
            .filter(|r| (lo..=hi).contains(&r.position))
            .filter(|r| {
                let labels = [r.values[0].to_string(), r.values[1].to_string()];
                track.iter().zip(&labels).all(|(want, got)| *want == got)
            })
            .cloned()
            .collect()
    }

    /// Rows in the order a merged level read folds them: partitions by track key, then publish.
    fn merge_order(&self, track: &[&str]) -> Vec<StoredRow> {
        let mut rows = self.select(track, 0, u64::MAX);
        rows.sort_by_key(|r| {
            let mut key = Vec::new();
            for label in [r.values[0].to_string(), r.values[1].to_string()] {
                key.extend_from_slice(label.as_bytes());
                key.push(0x1f);
            }
            key
        });
        rows
    }
}

fn axis(r: &StoredRow) -> u64 {
    match r.values[2] {
        Value::U64(t) => t,
        _ => unreachable!("t is u64"),
    }
}

fn measure(r: &StoredRow, field: usize) -> f64 {
    match r.values[field] {
        Value::F64(v) => v,
        Value::I64(v) => v as f64,
        _ => unreachable!("measured fields are numbers"),
    }
}

fn track(labels: &[&str]) -> Vec<String> {
    labels.iter().map(|s| (*s).to_owned()).collect()
}

/// Runs the whole suite against adapters made by `factory`: once with the stream on a small
/// declared ladder (4 x 4), whose few hundred rows climb several levels, and once declared with
/// no ladder, on the default grid (1 x 2) — under the store's defaults, levels folded from the
/// rows where they are not stored.
///
/// # Panics
/// At the first answer that breaks the contract, naming what broke.
pub async fn conformance<F: SeriesFactory>(factory: &mut F) {
    for declared in [Some(SMALL), None] {
        let decl = suite_stream_on(declared);
        let grid = declared.unwrap_or(DEFAULT);
        assert_eq!(
            (decl.ladder.base, decl.ladder.fanout),
            (grid.base, grid.fanout),
            "the stream's ladder is the grid the suite computes on"
        );
        conformance_on(factory, decl, grid).await;
    }
}

async fn conformance_on<F: SeriesFactory>(factory: &mut F, decl: StreamDecl, grid: Grid) {
    let mut series = factory.create(vec![decl]).await;
    let all = track(&[]);

    // Before anything: the origin, with no barrier to pay.
    let origin = series.seal("capture", &all).await.expect("seal answers");
    assert_eq!(
        origin, None,
        "an empty tier reports the origin as its watermark"
    );

    let mut published = Published {
        rows: Vec::new(),
        grid,
    };
    for (position, rows) in batch(0) {
        series
            .publish("capture", position, rows.clone())
            .await
            .expect("a valid batch is staged");
        published.rows.extend(
            rows.into_iter()
                .map(|values| StoredRow { position, values }),
        );
    }
    let unsealed = series
        .rows("capture", &all, Unbounded, Unbounded)
        .await
        .expect("rows");
    assert!(
        unsealed.is_empty(),
        "reads see what seals made durable, not what is staged"
    );
    let watermark = series.seal("capture", &all).await.expect("seal");
    assert_eq!(
        watermark,
        Some(20),
        "seal answers the position through which rows are durable"
    );

    check_rows(&mut series, &published).await;
    check_refusals(&mut series, &published).await;

    // Watermark and rows survive a reopen; a second round continues after it.
    let mut series = factory.reopen(series).await;
    let after = series
        .seal("capture", &track(&["run_7"]))
        .await
        .expect("seal after reopen");
    assert_eq!(
        after,
        Some(20),
        "the watermark after a reopen is the recorded one"
    );
    check_rows(&mut series, &published).await;
    for (position, rows) in batch(1) {
        series
            .publish("capture", position, rows.clone())
            .await
            .expect("second round staged");
        published.rows.extend(
            rows.into_iter()
                .map(|values| StoredRow { position, values }),
        );
    }
    // A clean stop closes a last barrier: nothing staged before it is lost.
    let mut series = factory.reopen(series).await;
    let after = series.seal("capture", &all).await.expect("seal");
    assert_eq!(after, Some(40), "a clean stop sealed what was staged");
    check_rows(&mut series, &published).await;

    check_budgets(&mut series, &published).await;
    check_whole_cells(&mut series, &published).await;
    check_aggregates(&mut series, &published).await;
    check_floors(factory, series, &mut published).await;
}

async fn check_rows<S: Series>(series: &mut S, published: &Published) {
    for (labels, lo, hi) in [
        (&[][..], 0, u64::MAX),
        (&["run_7"][..], 0, u64::MAX),
        (&["run_70"][..], 0, u64::MAX),
        (&["run_7", "2"][..], 0, u64::MAX),
        (&["run"][..], 0, u64::MAX),
        (&[][..], 5, 9),
        (&["run_7"][..], 12, 12),
    ] {
        let got = series
            .rows("capture", &track(labels), Included(lo), Included(hi))
            .await
            .expect("rows");
        let want = published.select(labels, lo, hi);
        assert_eq!(
            got, want,
            "rows under {labels:?} in positions {lo}..={hi} come back exactly, in publish order \
             (run_7 never includes run_70)"
        );
    }
}

async fn check_refusals<S: Series>(series: &mut S, published: &Published) {
    let backwards = series
        .publish("capture", 3, vec![row("run_7", 1, 10_000, 0, 0)])
        .await;
    assert!(backwards.is_err(), "a position going backwards is refused");
    let mut short = row("run_7", 1, 10_000, 0, 0);
    short.pop();
    let refused = series
        .publish("capture", 99, vec![row("run_7", 1, 10_000, 0, 0), short])
        .await;
    assert!(
        refused.is_err(),
        "a row of the wrong arity refuses its batch"
    );
    let unknown = series.rows("nope", &[], Unbounded, Unbounded).await;
    assert!(
        matches!(unknown, Err(BeneathWindow::Invalid(_))),
        "an unknown stream is refused"
    );
    let too_deep = series
        .rows("capture", &track(&["a", "1", "x"]), Unbounded, Unbounded)
        .await;
    assert!(
        matches!(too_deep, Err(BeneathWindow::Invalid(_))),
        "a selection deeper than the track is refused"
    );
    let small = series
        .buckets("capture", &[], Unbounded, Unbounded, 4 * N_MEASURED - 1)
        .await;
    assert!(
        matches!(small, Err(BeneathWindow::Invalid(_))),
        "a budget below 4 x measured fields is refused"
    );
    for word in ["median", "P50", "p101", "avg", ""] {
        assert_eq!(
            Aggregate::parse(word),
            None,
            "{word:?} is not in the vocabulary"
        );
    }
    // Nothing of a refused batch was kept.
    series.seal("capture", &[]).await.expect("seal");
    let rows = series
        .rows("capture", &[], Unbounded, Unbounded)
        .await
        .expect("rows");
    assert_eq!(
        rows,
        published.select(&[], 0, u64::MAX),
        "refused batches left nothing behind"
    );
}

/// The reference buckets of one field at `level` over `[lo, hi]`, folded here from the rows.
fn reference(
    published: &Published,
    labels: &[&str],
    field: usize,
    level: u32,
    lo: u64,
    hi: u64,
) -> Vec<(u64, f64, f64, f64)> {
    let w = published.grid.width(level);
    let (first, last) = (u128::from(lo) / w, u128::from(hi) / w);
    let mut cells: Vec<(u128, u64, f64, f64, f64)> = Vec::new(); // cell, count, sum, min, max
    let mut rows = published.merge_order(labels);
    rows.sort_by_key(|r| u128::from(axis(r)) / w); // stable
    for r in rows {
        let cell = u128::from(axis(&r)) / w;
        if !(first..=last).contains(&cell) {
            continue;
        }
        let v = measure(&r, field);
        match cells.last_mut() {
            Some(c) if c.0 == cell => {
                c.1 += 1;
                c.2 += v;
                c.3 = c.3.min(v);
                c.4 = c.4.max(v);
            }
            _ => cells.push((cell, 1, v, v, v)),
        }
    }
    cells.into_iter().map(|c| (c.1, c.2, c.3, c.4)).collect()
}

fn summary(b: &Bucket) -> (u64, f64, f64, f64) {
    (b.count, b.sum, b.min.value.as_f64(), b.max.value.as_f64())
}

async fn check_budgets<S: Series>(series: &mut S, published: &Published) {
    let grid = published.grid;
    let (lo, hi) = {
        let axes: Vec<u64> = published.rows.iter().map(axis).collect();
        (
            *axes.iter().min().expect("rows"),
            *axes.iter().max().expect("rows"),
        )
    };
    for budget in [8u64, 9, 15, 23, 64, 100, 333, 1000, 4000] {
        let answer = series
            .buckets("capture", &[], Unbounded, Unbounded, budget)
            .await
            .expect("a budget of at least 4 x fields is answered");
        let per_field = budget / (4 * N_MEASURED);
        let total: u64 = answer.iter().map(|f| f.buckets.len() as u64).sum();
        assert!(
            total * 4 <= budget,
            "budget {budget}: {total} buckets exceed the ceiling"
        );
        // The finest level whose cells over the (clamped) span fit, computed here.
        let level = (0u32..=64)
            .find(|&k| {
                u128::from(hi) / grid.width(k) - u128::from(lo) / grid.width(k)
                    < u128::from(per_field)
            })
            .expect("some level fits");
        assert_eq!(answer.len(), 2, "one entry per measured field");
        for (field_idx, (name, column)) in [("value", 3), ("count", 4)].into_iter().enumerate() {
            assert_eq!(answer[field_idx].field, name, "fields in declaration order");
            let got: Vec<_> = answer[field_idx].buckets.iter().map(summary).collect();
            let want = reference(published, &[], column, level, lo, hi);
            assert_eq!(
                got, want,
                "budget {budget}: field {name} answers level {level}, the finest that fits"
            );
            let axes: Vec<u64> = answer[field_idx]
                .buckets
                .iter()
                .map(|b| b.first.axis)
                .collect();
            assert!(axes.is_sorted(), "buckets ascend by first.axis");
        }
    }
    // A prefix merges its partitions cell by cell: run_7 alone at a generous budget.
    let answer = series
        .buckets("capture", &track(&["run_7"]), Unbounded, Unbounded, 4000)
        .await
        .expect("buckets");
    let got: Vec<_> = answer[0].buckets.iter().map(summary).collect();
    let axes: Vec<u64> = published
        .select(&["run_7"], 0, u64::MAX)
        .iter()
        .map(axis)
        .collect();
    let (lo, hi) = (
        *axes.iter().min().expect("rows"),
        *axes.iter().max().expect("rows"),
    );
    assert_eq!(
        got,
        reference(published, &["run_7"], 3, 0, lo, hi),
        "run_7's cells, and not run_70's"
    );
}

async fn check_whole_cells<S: Series>(series: &mut S, published: &Published) {
    // A range starting inside a level-0 cell answers the whole cell: the boundary bucket folds
    // rows just outside the range.
    let (lo, hi) = (9, 30);
    let answer = series
        .buckets("capture", &[], Included(lo), Included(hi), 4000)
        .await
        .expect("buckets");
    let got: Vec<_> = answer[0].buckets.iter().map(summary).collect();
    assert_eq!(
        got,
        reference(published, &[], 3, 0, lo, hi),
        "whole level-0 cells over 9..=30"
    );
    // (On a grid of 1-wide level-0 cells no range starts inside one.)
    let first = answer[0].buckets.first().expect("a bucket");
    assert!(
        published.grid.base == 1 || first.first.axis < lo,
        "the boundary bucket holds a row before the range (axis {})",
        first.first.axis
    );
}

async fn check_aggregates<S: Series>(series: &mut S, published: &Published) {
    let (lo, hi) = (10, 70);
    let base = published.grid.base;
    let whole_lo = lo / base * base;
    let whole_hi = hi / base * base + base - 1;
    for (name, column) in [("value", 3usize), ("count", 4)] {
        let in_cells: Vec<f64> = published
            .rows
            .iter()
            .filter(|r| (whole_lo..=whole_hi).contains(&axis(r)))
            .map(|r| measure(r, column))
            .collect();
        let exact: Vec<f64> = published
            .rows
            .iter()
            .filter(|r| (lo..=hi).contains(&axis(r)))
            .map(|r| measure(r, column))
            .collect();
        let sum: f64 = in_cells.iter().sum();
        let count = in_cells.len() as f64;
        let min = in_cells.iter().copied().fold(f64::INFINITY, f64::min);
        let max = in_cells.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let mut sorted = exact.clone();
        sorted.sort_by(f64::total_cmp);
        let rank = |p: usize| sorted[(p * sorted.len()).div_ceil(100).max(1) - 1];
        let expected: [(Aggregate, f64); 9] = [
            (Aggregate::Count, count),
            (Aggregate::Sum, sum),
            (Aggregate::Min, min),
            (Aggregate::Max, max),
            (Aggregate::Mean, sum / count),
            (Aggregate::p(0), rank(0)),
            (Aggregate::p(50), rank(50)),
            (Aggregate::p(99), rank(99)),
            (Aggregate::p(100), rank(100)),
        ];
        for (aggregate, want) in expected {
            let answer = series
                .aggregate("capture", &[], Included(lo), Included(hi), aggregate)
                .await
                .expect("aggregate");
            let stat = answer
                .iter()
                .find(|s| s.field == name)
                .expect("every measured field answers");
            let got = stat.value.map(Num::as_f64);
            assert_eq!(
                got,
                Some(want),
                "{aggregate} of {name} over axis {lo}..={hi} (level folds cover whole cells; \
                 percentiles the exact range)"
            );
        }
    }
    let empty = series
        .aggregate(
            "capture",
            &track(&["nobody"]),
            Unbounded,
            Unbounded,
            Aggregate::Mean,
        )
        .await
        .expect("an empty selection answers");
    assert!(
        empty.iter().all(|s| s.value.is_none()),
        "an empty range has no statistic"
    );
    let counted = series
        .aggregate(
            "capture",
            &track(&["nobody"]),
            Unbounded,
            Unbounded,
            Aggregate::Count,
        )
        .await
        .expect("an empty selection answers");
    assert!(
        !counted.is_empty() && counted.iter().all(|s| s.value == Some(Num::U64(0))),
        "a count of no rows is 0, not \"no statistic\": {counted:?}"
    );
}

impl Grid {
    /// The width of `level`'s cells (levels the suite reads stay far below 2^128).
    fn width(self, level: u32) -> u128 {
        u128::from(self.base) * u128::from(self.fanout).pow(level)
    }

    /// The width of `level`'s cells, saturated at 2^64 (one cell holds every axis value).
    fn width_saturated(self, level: u8) -> u128 {
        (0..level).fold(u128::from(self.base), |w, _| {
            (w * u128::from(self.fanout)).min(1 << 64)
        })
    }

    /// The start of the cell of `level` after the one holding `axis` (`u64::MAX` if none
    /// follows): a level's floor once a track whose highest axis value is `axis` is retired.
    fn past_cell(self, level: u8, axis: u64) -> u64 {
        let w = self.width_saturated(level);
        u64::try_from((u128::from(axis) / w + 1) * w).unwrap_or(u64::MAX)
    }

    /// The level a survey of `[lo, hi]` plans for `budget` (the finest whose cells fit).
    fn planned_level(self, lo: u64, hi: u64, budget: u64) -> u8 {
        let per_field = u128::from(budget / (4 * N_MEASURED));
        (0..=LEVELS_MAX)
            .find(|&k| {
                let w = self.width_saturated(k);
                u128::from(hi) / w - u128::from(lo) / w < per_field
            })
            .expect("some level fits")
    }

    /// The floor a level fold of `[lo, hi]` is refused with, if it is: the range's whole
    /// level-0 cells as the fewest aligned cells of any level (each the largest that starts
    /// there and fits); refused if any starts beneath its level's floor, then with the highest
    /// floor of the levels up to the coarsest used.
    fn fold_floor(self, lo: u64, hi: u64, floor: impl Fn(u8) -> u64) -> Option<u64> {
        let base = u128::from(self.base);
        let (mut cell, last) = (u128::from(lo / self.base), u128::from(hi / self.base));
        let (mut beneath, mut top) = (false, 0);
        while cell <= last {
            let mut level = 0u8;
            loop {
                let span = self.width_saturated(level + 1) / base;
                if level == LEVELS_MAX || cell % span != 0 || cell + span - 1 > last {
                    break;
                }
                level += 1;
            }
            let start = u64::try_from(cell * base).unwrap_or(u64::MAX);
            beneath |= start < floor(level);
            top = top.max(level);
            cell += self.width_saturated(level) / base;
        }
        beneath.then(|| (0..=top).map(floor).max().unwrap_or(0))
    }
}

/// The percentile of `column` over the rows with axis in `[lo, hi]`, by nearest rank.
fn percentile(rows: &[StoredRow], column: usize, lo: u64, hi: u64, p: usize) -> Option<f64> {
    let mut values: Vec<f64> = rows
        .iter()
        .filter(|r| (lo..=hi).contains(&axis(r)))
        .map(|r| measure(r, column))
        .collect();
    values.sort_by(f64::total_cmp);
    let rank = (p * values.len()).div_ceil(100).max(1);
    values.get(rank - 1).copied()
}

async fn expect_floor<S: Series>(
    series: &mut S,
    labels: &[&str],
    read: &str,
    lo: Option<u64>,
    floor: u64,
    what: &str,
) {
    let start = lo.map_or(Unbounded, Included);
    let answer = match read {
        "rows" => series
            .rows("capture", &track(labels), start, Unbounded)
            .await
            .map(|_| ()),
        "buckets" => series
            .buckets("capture", &track(labels), start, Unbounded, 4000)
            .await
            .map(|_| ()),
        kind => series
            .aggregate(
                "capture",
                &track(labels),
                start,
                Unbounded,
                Aggregate::parse(kind).expect("a statistic"),
            )
            .await
            .map(|_| ()),
    };
    assert_eq!(
        answer,
        Err(BeneathWindow::Floor { floor }),
        "{read} of {labels:?} from {lo:?}: {what}; refused whole with the floor, never answered \
         short"
    );
}

/// Floors: a trim, then a retired track, which then starts again. Every read reaching beneath
/// a floor is refused with it, and every read at or above answers whole, before a reopen and
/// after. Expected floors are computed here from the rows published.
async fn check_floors<F: SeriesFactory>(
    factory: &mut F,
    series: F::Adapter,
    published: &mut Published,
) {
    let horizon = 10;
    let mut series = series;
    check_trim(&mut series, published, horizon).await;
    let series = check_retired(factory, series, published, horizon).await;
    check_restarted(series, published).await;
}

/// The stream trimmed to `horizon`: rows and percentiles beneath refused, levels still answer.
async fn check_trim<S: Series>(series: &mut S, published: &Published, horizon: u64) {
    let all = track(&[]);
    let last = published
        .rows
        .iter()
        .map(|r| r.position)
        .max()
        .expect("rows");
    let above = series.trim_to("capture", last + 1).await;
    assert!(
        matches!(above, Err(BeneathWindow::Invalid(_))),
        "a trim above the watermark is refused: {above:?}"
    );
    let floor = series
        .trim_to("capture", horizon)
        .await
        .expect("a trim to a durable horizon");
    assert_eq!(
        floor,
        Some(horizon + 1),
        "a trim leaves the stream's floor one past the horizon"
    );
    for (labels, lo) in [(&[][..], 0), (&["run_7"][..], 10), (&["run_7", "2"][..], 3)] {
        expect_floor(
            series,
            labels,
            "rows",
            Some(lo),
            horizon + 1,
            "trimmed rows",
        )
        .await;
    }
    for (labels, lo, hi) in [
        (&[][..], horizon + 1, u64::MAX),
        (&["run_70"][..], horizon + 1, horizon + 1),
        (&["run_7"][..], 15, 30),
    ] {
        let got = series
            .rows("capture", &track(labels), Included(lo), Included(hi))
            .await
            .expect("rows at or above the floor");
        assert_eq!(
            got,
            published.select(labels, lo, hi),
            "rows of {labels:?} in {lo}..={hi}, at or above the trim's floor, come back whole"
        );
    }
    // Percentiles read the rows by axis: a partition's axis floor is past its last row trimmed
    // and not below its first row kept.
    let mut axis_floor = 0;
    for partition in [["run_7", "1"], ["run_70", "1"], ["run_7", "2"]] {
        let rows = published.select(&partition, 0, u64::MAX);
        let trimmed = rows
            .iter()
            .filter(|r| r.position <= horizon)
            .map(axis)
            .max();
        let kept = rows.iter().filter(|r| r.position > horizon).map(axis).min();
        let floor = trimmed.map(|a| a + 1).max(kept).expect("rows");
        axis_floor = axis_floor.max(floor);
    }
    expect_floor(series, &[], "p50", Some(0), axis_floor, "trimmed rows").await;
    let hi = published.rows.iter().map(axis).max().expect("rows");
    let got = series
        .aggregate(
            "capture",
            &all,
            Included(axis_floor),
            Included(hi),
            Aggregate::p(50),
        )
        .await
        .expect("a percentile at or above the floor");
    assert_eq!(
        got[0].value.map(Num::as_f64),
        percentile(&published.rows, 3, axis_floor, hi, 50),
        "p50 of value over {axis_floor}..={hi}, at or above the floor"
    );
    // Levels outlive the rows: a count beneath the trim's floor is answered, whole.
    let count = series
        .aggregate("capture", &all, Unbounded, Unbounded, Aggregate::Count)
        .await
        .expect("levels outlive a trim");
    assert_eq!(
        count[0].value,
        Some(Num::U64(published.rows.len() as u64)),
        "a count over levels a trim kept"
    );
}

/// run_70 retired: every floor of it rises past everything it held; run_7 answers as before.
async fn check_retired<F: SeriesFactory>(
    factory: &mut F,
    mut series: F::Adapter,
    published: &Published,
    horizon: u64,
) -> F::Adapter {
    let last = published
        .rows
        .iter()
        .map(|r| r.position)
        .max()
        .expect("rows");
    // A retired track: every floor rises past everything it held.
    let retired = ["run_70"];
    let hi_retired = published
        .select(&retired, 0, u64::MAX)
        .iter()
        .map(axis)
        .max()
        .expect("rows");
    let floor = series
        .retire("capture", &track(&retired))
        .await
        .expect("retire");
    assert_eq!(
        floor,
        Some(last + 1),
        "a retired track's floor is one past the stream's last position"
    );
    for reopened in [false, true] {
        let when = if reopened {
            "after a reopen"
        } else {
            "retired"
        };
        expect_floor(&mut series, &retired, "rows", None, last + 1, when).await;
        expect_floor(&mut series, &[], "rows", Some(horizon + 1), last + 1, when).await;
        expect_floor(&mut series, &retired, "p50", None, hi_retired + 1, when).await;
        // Nothing of the track is live: the survey plans over the whole axis, and answers to the
        // floor of the level it planned.
        let level = published.grid.planned_level(0, u64::MAX, 4000);
        let floor = published.grid.past_cell(level, hi_retired);
        expect_floor(&mut series, &retired, "buckets", None, floor, when).await;
        let floor = published.grid.fold_floor(0, u64::MAX, |level| {
            published.grid.past_cell(level, hi_retired)
        });
        let floor = floor.expect("a fold of the whole axis reaches beneath");
        expect_floor(&mut series, &retired, "count", None, floor, when).await;
        let got = series
            .rows(
                "capture",
                &track(&["run_7"]),
                Included(horizon + 1),
                Unbounded,
            )
            .await
            .expect("the tracks not retired answer");
        assert_eq!(
            got,
            published.select(&["run_7"], horizon + 1, u64::MAX),
            "{when}: run_7 is not retired with run_70"
        );
        if !reopened {
            series = factory.reopen(series).await;
        }
    }
    series
}

/// run_70 starts again above its floors: its new rows answer, and level reads answer from the
/// level floors up and are refused beneath them.
async fn check_restarted<S: Series>(mut series: S, published: &mut Published) {
    let all = track(&[]);
    let retired = ["run_70"];
    let last = published
        .rows
        .iter()
        .map(|r| r.position)
        .max()
        .expect("rows");
    let hi_retired = published
        .select(&retired, 0, u64::MAX)
        .iter()
        .map(axis)
        .max()
        .expect("rows");
    // The track starts again above its floors.
    let retired_rows = published.rows.len();
    for (position, rows) in batch(2) {
        series
            .publish("capture", position, rows.clone())
            .await
            .expect("a retired track starts again above its floors");
        published.rows.extend(
            rows.into_iter()
                .map(|values| StoredRow { position, values }),
        );
    }
    let watermark = series.seal("capture", &all).await.expect("seal");
    assert_eq!(watermark, Some(60), "the third round is durable");
    let got = series
        .rows("capture", &track(&retired), Included(last + 1), Unbounded)
        .await
        .expect("rows of the restarted track");
    assert_eq!(
        got,
        published.select(&retired, last + 1, u64::MAX),
        "the restarted track's new rows, and none retired"
    );
    check_level_reads_above(&mut series, published, hi_retired, retired_rows).await;
}

/// Level reads and percentiles of the whole stream once run_70 (highest axis value
/// `hi_retired`) was retired and started again (its new rows from `published.rows[new..]`):
/// answered from its floors up, refused beneath them with the floor the range meets.
async fn check_level_reads_above<S: Series>(
    series: &mut S,
    published: &Published,
    hi_retired: u64,
    new: usize,
) {
    let all = track(&[]);
    let retired_rows = new;
    let new_lo = published.grid.past_cell(0, hi_retired);
    let new_hi = published.rows.iter().map(axis).max().expect("rows");
    let level_floor = |level| published.grid.past_cell(level, hi_retired);
    // From the level-0 floor: every level read answers whole.
    let answer = series
        .buckets("capture", &all, Included(new_lo), Unbounded, 4000)
        .await
        .expect("a survey at or above the floor");
    let got: Vec<_> = answer[0].buckets.iter().map(summary).collect();
    let level = published.grid.planned_level(new_lo, new_hi, 4000);
    assert_eq!(
        got,
        reference(published, &[], 3, level.into(), new_lo, new_hi),
        "a survey from {new_lo}, at or above the retired track's floor"
    );
    let level = published.grid.planned_level(0, new_hi, 4000);
    expect_floor(
        series,
        &[],
        "buckets",
        Some(0),
        level_floor(level),
        "retired",
    )
    .await;
    let count = series
        .aggregate(
            "capture",
            &all,
            Included(new_lo),
            Included(new_hi),
            Aggregate::Count,
        )
        .await
        .expect("a level fold at or above the floor");
    // Every live row from there: the restarted track's new ones, and the other tracks' (on a
    // grid fine enough, rows of run_7 lie past the retired track's last cell too).
    let want = published
        .rows
        .iter()
        .enumerate()
        .filter(|(i, r)| *i >= retired_rows || r.values[0].to_string() != "run_70")
        .filter(|(_, r)| axis(r) >= new_lo)
        .count();
    assert_eq!(
        count[0].value,
        Some(Num::U64(want as u64)),
        "a count from {new_lo}"
    );
    for lo in [0, 50, hi_retired - 20, new_lo - 1] {
        let floor = published
            .grid
            .fold_floor(lo, new_hi, level_floor)
            .expect("beneath");
        let answer = series
            .aggregate(
                "capture",
                &all,
                Included(lo),
                Included(new_hi),
                Aggregate::Sum,
            )
            .await;
        assert_eq!(
            answer,
            Err(BeneathWindow::Floor { floor }),
            "a sum over {lo}..={new_hi} reaches beneath a retired track's level floors"
        );
    }
    let got = series
        .aggregate(
            "capture",
            &all,
            Included(hi_retired + 1),
            Included(new_hi),
            Aggregate::p(90),
        )
        .await
        .expect("a percentile at or above the raw floors");
    // Every row but the retired track's before it was retired.
    let live: Vec<StoredRow> = published
        .rows
        .iter()
        .enumerate()
        .filter(|(i, r)| *i >= retired_rows || r.values[0] != Value::Str("run_70".into()))
        .map(|(_, r)| r.clone())
        .collect();
    assert_eq!(
        got[0].value.map(Num::as_f64),
        percentile(&live, 3, hi_retired + 1, new_hi, 90),
        "p90 of value from one past the retired track's highest axis value"
    );
}
