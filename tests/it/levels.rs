//! The level ladder through the engine: stored levels equal a fold of their rows, surveys answer
//! from the finest level that fits and never exceed their budget, folds read few cells, and
//! percentiles are exact. Every reference here is computed from the rows by code written in this
//! file, not by the code that built the levels.
#![expect(
    clippy::float_cmp,
    reason = "values are small integers, exactly representable, so sums and means are exact"
)]

use proptest::prelude::*;
use strata::segment::vfs::SimFs;
use strata::{Aggregate, Bucket, Config, FieldKind, Num, Row, Store, Stream, StreamDecl, Value};

use crate::support::sim;

/// A stream with a track, an axis, and three measured fields of the three numeric kinds.
fn decl(base: u64, fanout: u64) -> StreamDecl {
    Stream::new("m")
        .field("run", FieldKind::Str)
        .field("t", FieldKind::U64)
        .field("u", FieldKind::U64)
        .field("i", FieldKind::I64)
        .field("f", FieldKind::F64)
        .field("note", FieldKind::Str)
        .track(["run"])
        .axis("t")
        .ladder(base, fanout)
        .build()
        .unwrap()
}

const MEASURED: [(&str, usize); 3] = [("u", 2), ("i", 3), ("f", 4)];

/// A row as the test keeps it: partition label, axis, and the three measured values.
#[derive(Clone, Debug)]
struct R {
    run: &'static str,
    t: u64,
    u: u64,
    i: i64,
    f: f64,
}

impl R {
    fn row(&self) -> Row {
        vec![
            Value::Str(self.run.into()),
            Value::U64(self.t),
            Value::U64(self.u),
            Value::I64(self.i),
            Value::F64(self.f),
            Value::Str(String::new()),
        ]
    }

    fn value(&self, field: usize) -> Num {
        match field {
            2 => Num::U64(self.u),
            3 => Num::I64(self.i),
            _ => Num::F64(self.f),
        }
    }
}

/// What the reference fold of one cell holds, computed by a plain scan.
#[derive(Debug, PartialEq)]
struct Expected {
    first: (u64, f64),
    last: (u64, f64),
    min: (u64, f64),
    max: (u64, f64),
    count: u64,
    sum: f64,
    sum_sq: f64,
}

/// Scans `rows` (in merge order: partitions by key, then publish order) falling in one cell.
fn scan(rows: &[&R], field: usize) -> Expected {
    let v = |r: &R| r.value(field).as_f64();
    let min_axis = rows.iter().map(|r| r.t).min().unwrap();
    let max_axis = rows.iter().map(|r| r.t).max().unwrap();
    let min_value = rows.iter().map(|r| v(r)).fold(f64::INFINITY, f64::min);
    let max_value = rows.iter().map(|r| v(r)).fold(f64::NEG_INFINITY, f64::max);
    let first = rows.iter().find(|r| r.t == min_axis).unwrap();
    let last = rows.iter().rev().find(|r| r.t == max_axis).unwrap();
    let min = rows.iter().find(|r| v(r) == min_value).unwrap();
    let max = rows.iter().find(|r| v(r) == max_value).unwrap();
    Expected {
        first: (first.t, v(first)),
        last: (last.t, v(last)),
        min: (min.t, v(min)),
        max: (max.t, v(max)),
        count: rows.len() as u64,
        sum: rows.iter().map(|r| v(r)).sum(),
        sum_sq: rows.iter().map(|r| v(r) * v(r)).sum(),
    }
}

fn observed(b: &Bucket) -> Expected {
    let p = |p: strata::Point| (p.axis, p.value.as_f64());
    Expected {
        first: p(b.first),
        last: p(b.last),
        min: p(b.min),
        max: p(b.max),
        count: b.count,
        sum: b.sum,
        sum_sq: b.sum_sq,
    }
}

fn width(base: u64, fanout: u64, level: u8) -> u128 {
    (0..level).fold(u128::from(base), |w, _| {
        w.saturating_mul(u128::from(fanout))
    })
}

/// Rows in the order a merged read folds them: partitions in key order, each in publish order.
fn merge_order(rows: &[R]) -> Vec<&R> {
    let mut out: Vec<&R> = rows.iter().collect();
    out.sort_by_key(|r| r.run.as_bytes()); // stable: publish order within a partition
    out
}

/// Reference cells of one field at one level: (cell index, scan of its rows), ascending.
fn reference_cells(
    rows: &[R],
    field: usize,
    base: u64,
    fanout: u64,
    level: u8,
) -> Vec<(u64, Expected)> {
    let w = width(base, fanout, level);
    let ordered = merge_order(rows);
    let mut indexes: Vec<u64> = ordered
        .iter()
        .map(|r| (u128::from(r.t) / w) as u64)
        .collect();
    indexes.sort_unstable();
    indexes.dedup();
    indexes
        .into_iter()
        .map(|c| {
            let in_cell: Vec<&R> = ordered
                .iter()
                .copied()
                .filter(|r| (u128::from(r.t) / w) as u64 == c)
                .collect();
            (c, scan(&in_cell, field))
        })
        .collect()
}

/// Rows in 1..3 partitions, axis non-decreasing per partition, values small integers, split
/// into batches with seals (and reopens) between them.
fn rows_and_cuts() -> impl Strategy<Value = (Vec<R>, Vec<(usize, bool)>)> {
    let row = (0usize..3, 0u64..30, 0u64..9, -50i64..50, -40i32..40);
    (
        prop::collection::vec(row, 1..120),
        prop::collection::vec((1usize..40, any::<bool>()), 1..6),
    )
        .prop_map(|(raw, cuts)| {
            let runs = ["run_7", "run_70", "é"];
            let mut axis = [0u64; 3];
            let rows = raw
                .into_iter()
                .map(|(p, step, u, i, f)| {
                    axis[p] += step;
                    R {
                        run: runs[p],
                        t: axis[p],
                        u,
                        i,
                        f: f64::from(f),
                    }
                })
                .collect();
            (rows, cuts)
        })
}

/// Publishes `rows` one per position, sealing (and maybe reopening) at the cuts.
fn load(fs: &SimFs, d: &StreamDecl, rows: &[R], cuts: &[(usize, bool)]) -> Store {
    let mut store =
        Store::open_or_create_in(sim(fs), Config::default(), std::slice::from_ref(d)).unwrap();
    let mut cut_iter = cuts.iter().cycle();
    let mut next_cut = cut_iter.next().copied().unwrap_or((usize::MAX, false));
    let mut since = 0;
    for (position, r) in rows.iter().enumerate() {
        store.publish("m", position as u64, &[r.row()]).unwrap();
        since += 1;
        if since == next_cut.0 {
            store.seal().unwrap();
            if next_cut.1 {
                drop(store);
                store = Store::open_in(sim(fs), Config::default(), &[]).unwrap();
            }
            since = 0;
            next_cut = cut_iter.next().copied().unwrap();
        }
    }
    store.seal().unwrap();
    store
}

fn ladders() -> impl Strategy<Value = (u64, u64)> {
    (
        prop_oneof![Just(1u64), 2u64..9, Just(64)],
        prop_oneof![Just(2u64), 3u64..6, Just(8)],
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]

    #[test]
    fn every_stored_level_equals_a_fold_of_its_rows(
        (rows, cuts) in rows_and_cuts(),
        (base, fanout) in ladders(),
    ) {
        let fs = SimFs::new();
        let store = load(&fs, &decl(base, fanout), &rows, &cuts);
        let max_t = rows.iter().map(|r| r.t).max().unwrap();
        let top = (0u8..=64).find(|&k| width(base, fanout, k) > u128::from(max_t)).unwrap();
        for (name, field) in MEASURED {
            for level in 0..=top + 1 {
                let got: Vec<(u64, Expected)> = store
                    .level_cells("m", &[], name, level, ..)
                    .unwrap()
                    .iter()
                    .map(|c| (c.index, observed(&c.bucket)))
                    .collect();
                prop_assert_eq!(got, reference_cells(&rows, field, base, fanout, level));
            }
        }
    }

    #[test]
    fn surveys_answer_from_the_finest_level_that_fits_and_never_exceed_the_budget(
        (rows, cuts) in rows_and_cuts(),
        (base, fanout) in ladders(),
        budget in 0u64..400,
        range in (0u64..200, 0u64..200),
    ) {
        let fs = SimFs::new();
        let store = load(&fs, &decl(base, fanout), &rows, &cuts);
        let (lo, hi) = (range.0.min(range.1), range.0.max(range.1));
        let survey = store.survey("m", &[], lo..=hi, budget);
        let per_field = budget / (4 * 3);
        let Ok(survey) = survey else {
            prop_assert_eq!(per_field, 0, "refused a budget that buys a bucket per field");
            return Ok(());
        };
        prop_assert!(per_field >= 1);
        let answered: usize = survey.fields.iter().map(|f| f.buckets.len()).sum();
        prop_assert!(answered as u64 * 4 <= budget, "{} buckets for {} points", answered, budget);
        let level = survey.level;
        let cells_at = |k: u8| {
            let w = width(base, fanout, k);
            (u128::from(hi) / w - u128::from(lo) / w + 1) as u64
        };
        prop_assert_eq!(survey.group, 1);
        prop_assert!(cells_at(level) <= per_field);
        if level > 0 {
            prop_assert!(cells_at(level - 1) > per_field, "level {} is not the finest", level);
        }
        let w = width(base, fanout, level);
        let (lo_c, hi_c) = ((u128::from(lo) / w) as u64, (u128::from(hi) / w) as u64);
        for ((name, field), answer) in MEASURED.iter().zip(&survey.fields) {
            prop_assert_eq!(&answer.field, name);
            let want: Vec<Expected> = reference_cells(&rows, *field, base, fanout, level)
                .into_iter()
                .filter(|(c, _)| (lo_c..=hi_c).contains(c))
                .map(|(_, e)| e)
                .collect();
            let got: Vec<Expected> = answer.buckets.iter().map(observed).collect();
            prop_assert_eq!(got, want);
            prop_assert!(answer.buckets.windows(2).all(|w| w[0].first.axis < w[1].first.axis));
        }
    }

    #[test]
    fn level_folds_cover_whole_cells_and_percentiles_the_exact_range(
        (rows, cuts) in rows_and_cuts(),
        (base, fanout) in ladders(),
        range in (0u64..200, 0u64..200),
        rank in 0u8..=100,
    ) {
        let fs = SimFs::new();
        let store = load(&fs, &decl(base, fanout), &rows, &cuts);
        let (lo, hi) = (range.0.min(range.1), range.0.max(range.1));
        let (lo_c, hi_c) = (lo / base, hi / base);
        for (name, field) in MEASURED {
            // Whole level-0 cells the range touches.
            let whole: Vec<&R> = merge_order(&rows).into_iter().filter(|r| (lo_c..=hi_c).contains(&(r.t / base))).collect();
            let exact: Vec<f64> = rows.iter().filter(|r| (lo..=hi).contains(&r.t)).map(|r| r.value(field).as_f64()).collect();
            let stat = |aggregate: Aggregate| {
                let answer = store.fold("m", &[], lo..=hi, aggregate).unwrap();
                let stat = answer.into_iter().find(|s| s.field == name).unwrap();
                stat.value.map(Num::as_f64)
            };
            if whole.is_empty() {
                prop_assert_eq!(stat(Aggregate::Count), Some(0.0), "a count of no rows is 0");
            } else {
                let e = scan(&whole, field);
                prop_assert_eq!(stat(Aggregate::Count), Some(e.count as f64));
                prop_assert_eq!(stat(Aggregate::Sum), Some(e.sum));
                prop_assert_eq!(stat(Aggregate::Min), Some(e.min.1));
                prop_assert_eq!(stat(Aggregate::Max), Some(e.max.1));
                prop_assert_eq!(stat(Aggregate::Mean), Some(e.sum / e.count as f64));
            }
            // Nearest rank over a sort done here.
            let mut sorted = exact.clone();
            sorted.sort_by(f64::total_cmp);
            let want = (!sorted.is_empty()).then(|| {
                let r = (usize::from(rank) * sorted.len()).div_ceil(100).max(1);
                sorted[r - 1]
            });
            prop_assert_eq!(stat(Aggregate::p(rank)), want);
        }
    }
}

#[test]
fn a_budget_below_one_bucket_per_field_and_an_unknown_aggregate_are_refused() {
    let fs = SimFs::new();
    let rows = vec![R {
        run: "a",
        t: 1,
        u: 1,
        i: 1,
        f: 1.0,
    }];
    let store = load(&fs, &decl(4, 4), &rows, &[(1, false)]);
    let error = store.survey("m", &[], .., 11).unwrap_err();
    assert!(
        error.to_string().contains("below the minimum of 12"),
        "{error}"
    );
    assert!(store.survey("m", &[], .., 12).is_ok());
    assert_eq!(Aggregate::parse("median"), None);
}

#[test]
fn a_full_range_mean_over_ten_million_rows_reads_levels_times_fanout_cells() {
    const N: u64 = 10_000_000;
    const BATCH: u64 = 500_000;
    let d = Stream::new("big")
        .field("t", FieldKind::U64)
        .field("v", FieldKind::F64)
        .axis("t")
        .ladder(16, 8)
        .build()
        .unwrap();
    let fs = SimFs::new();
    let config = Config::default().staged_bytes_max(1 << 30);
    let mut store = Store::open_or_create_in(sim(&fs), config, &[d]).unwrap();
    let value = |t: u64| (t % 1000) as f64;
    let (mut sum, mut count) = (0.0, 0u64);
    for batch in 0..N / BATCH {
        let rows: Vec<Row> = (batch * BATCH..(batch + 1) * BATCH)
            .map(|t| vec![Value::U64(t), Value::F64(value(t))])
            .collect();
        sum += (batch * BATCH..(batch + 1) * BATCH).map(value).sum::<f64>();
        count += BATCH;
        store.publish("big", batch, &rows).unwrap();
        if batch % 10 == 9 {
            store.seal().unwrap(); // two barriers: two files to read from
        }
    }
    store.seal().unwrap();
    let files = store.metrics().barriers;
    assert_eq!(files, 2);

    let before = store.metrics().cells_read;
    let mean = store.fold("big", &[], .., Aggregate::Mean).unwrap();
    let cells_read = store.metrics().cells_read - before;
    assert_eq!(mean[0].value, Some(Num::F64(sum / count as f64)));
    // Levels 0..=top with top the lowest level one cell of which covers the axis, at most
    // 2 * (fanout - 1) cells a level, from each file.
    let top = (0u8..=64)
        .find(|&k| width(16, 8, k) > u128::from(N - 1))
        .unwrap();
    let levels = u64::from(top) + 1;
    let bound = files * levels * 2 * (8 - 1);
    assert!(
        cells_read <= bound,
        "{cells_read} cells read, bound {bound}"
    );
    let level0_cells = N / 16;
    assert!(
        cells_read * 1000 < level0_cells,
        "{cells_read} is not far below {level0_cells}"
    );

    // The same answer as folding every finest cell.
    let finest = store.level_cells("big", &[], "v", 0, ..).unwrap();
    assert_eq!(finest.len() as u64, level0_cells);
    let (s, c) = finest.iter().fold((0.0, 0), |(s, c), cell| {
        (s + cell.bucket.sum, c + cell.bucket.count)
    });
    assert_eq!(mean[0].value, Some(Num::F64(s / c as f64)));
}

// ---- Extreme ladders and axes (issue 10, item 3) ----

/// The cell width of `level`, computed here with checked arithmetic: `None` once it passes
/// every u64 axis (then one cell, cell 0, holds them all).
fn checked_width(base: u64, fanout: u64, level: u8) -> Option<u64> {
    (0..level).try_fold(base, |w, _| w.checked_mul(fanout))
}

fn cell_of(t: u64, base: u64, fanout: u64, level: u8) -> u64 {
    checked_width(base, fanout, level).map_or(0, |w| t / w)
}

/// Ladders at the edges: base 1 and bases near 2^64, fanouts 2, 2^24, 2^32 and near 2^64.
fn extreme_ladders() -> impl Strategy<Value = (u64, u64)> {
    (
        prop_oneof![
            Just(1u64),
            Just(2),
            1u64..1000,
            Just(1 << 32),
            Just(u64::MAX),
            any::<u64>().prop_map(|b| b.max(1))
        ],
        prop_oneof![
            Just(2u64),
            Just(1 << 24),
            Just(1 << 32),
            Just(u64::MAX - 1),
            Just(u64::MAX),
            2u64..=u64::MAX,
        ],
    )
}

/// Two partitions' rows `(run, t, v)`, axes non-decreasing per partition, clustered at 0, near
/// 2^63 and near `u64::MAX` or spread over the whole axis; split into up to three barriers.
fn extreme_rows() -> impl Strategy<Value = (Vec<(usize, u64, i64)>, Vec<usize>)> {
    let axis = prop_oneof![
        0u64..100,
        (1u64 << 63) - 50..(1u64 << 63) + 50,
        u64::MAX - 100..=u64::MAX,
        any::<u64>(),
    ];
    (
        prop::collection::vec((0usize..2, axis, -9i64..10), 1..24),
        prop::collection::vec(1usize..24, 0..3),
    )
        .prop_map(|(mut rows, cuts)| {
            // Sorting by axis keeps every partition's axis non-decreasing in publish order.
            rows.sort_by_key(|r| r.1);
            (rows, cuts)
        })
}

/// A bound of the asked range: near a stored axis, at either end of the axis, or anywhere.
fn extreme_bound() -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(0u64),
        Just(1),
        Just(u64::MAX - 1),
        Just(u64::MAX),
        any::<u64>(),
        0u64..100,
        u64::MAX - 100..=u64::MAX
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Whatever the ladder and wherever the rows lie on the axis, level folds equal a fold of
    /// the rows in the whole level-0 cells the range touches, percentiles the exact range, and a
    /// survey the rows grouped by the finest level that fits; computed here from the rows.
    #[test]
    fn extreme_ladders_and_axes_fold_and_survey_like_a_scan_of_the_rows(
        (base, fanout) in extreme_ladders(),
        (rows, cuts) in extreme_rows(),
        (a, b) in (extreme_bound(), extreme_bound()),
        budget in 4u64..64,
    ) {
        let (lo, hi) = (a.min(b), a.max(b));
        let d = Stream::new("x")
            .field("run", FieldKind::Str)
            .field("t", FieldKind::U64)
            .field("v", FieldKind::I64)
            .track(["run"])
            .axis("t")
            .ladder(base, fanout)
            .build()
            .unwrap();
        let fs = SimFs::new();
        let mut store = Store::open_or_create_in(sim(&fs), Config::default(), &[d]).unwrap();
        let mut cut = cuts.iter().copied();
        let mut next_cut = cut.next();
        for (position, &(run, t, v)) in rows.iter().enumerate() {
            let row = vec![Value::Str(["a", "b"][run].into()), Value::U64(t), Value::I64(v)];
            store.publish("x", position as u64, &[row]).unwrap();
            if next_cut == Some(position) {
                store.seal().unwrap();
                next_cut = cut.next();
            }
        }
        store.seal().unwrap();

        // Level folds: the rows whose level-0 cell lies in the cells of lo and hi.
        let whole: Vec<i64> = rows
            .iter()
            .filter(|r| (lo / base..=hi / base).contains(&(r.1 / base)))
            .map(|r| r.2)
            .collect();
        let fold = |aggregate: Aggregate| {
            store.fold("x", &[], lo..=hi, aggregate).unwrap()[0].value
        };
        let count = fold(Aggregate::Count);
        if whole.is_empty() {
            prop_assert_eq!(count.map_or(0.0, Num::as_f64), 0.0);
            prop_assert_eq!(fold(Aggregate::Min), None);
        } else {
            prop_assert_eq!(count.map(Num::as_f64), Some(whole.len() as f64));
            let sum: i64 = whole.iter().sum();
            prop_assert_eq!(fold(Aggregate::Sum).map(Num::as_f64), Some(sum as f64));
            prop_assert_eq!(fold(Aggregate::Min), whole.iter().min().map(|&v| Num::I64(v)));
            prop_assert_eq!(fold(Aggregate::Max), whole.iter().max().map(|&v| Num::I64(v)));
        }
        // Percentiles: the exact range, nearest rank, sorted here.
        let mut exact: Vec<i64> =
            rows.iter().filter(|r| (lo..=hi).contains(&r.1)).map(|r| r.2).collect();
        exact.sort_unstable();
        let want = (!exact.is_empty()).then(|| Num::I64(exact[(exact.len() * 50).div_ceil(100).max(1) - 1]));
        prop_assert_eq!(fold(Aggregate::p(50)), want);

        // Survey: the finest level whose cells over [lo, hi] fit budget / 4 (one field).
        let per_field = budget / 4;
        let level = (0u8..=64)
            .find(|&k| cell_of(hi, base, fanout, k) - cell_of(lo, base, fanout, k) < per_field)
            .unwrap();
        let survey = store.survey("x", &[], lo..=hi, budget).unwrap();
        prop_assert_eq!(survey.level, level);
        let (lo_c, hi_c) = (cell_of(lo, base, fanout, level), cell_of(hi, base, fanout, level));
        let mut want: Vec<(u64, u64, i64, i64, i64)> = Vec::new(); // cell, count, sum, min, max
        // Merge order: partition "a" then "b", each in publish order; cells ascending.
        let mut ordered: Vec<&(usize, u64, i64)> = rows.iter().collect();
        ordered.sort_by_key(|r| r.0);
        let mut cells: Vec<u64> = ordered
            .iter()
            .map(|r| cell_of(r.1, base, fanout, level))
            .filter(|c| (lo_c..=hi_c).contains(c))
            .collect();
        cells.sort_unstable();
        cells.dedup();
        for c in cells {
            let values: Vec<i64> = ordered
                .iter()
                .filter(|r| cell_of(r.1, base, fanout, level) == c)
                .map(|r| r.2)
                .collect();
            want.push((
                c,
                values.len() as u64,
                values.iter().sum(),
                *values.iter().min().unwrap(),
                *values.iter().max().unwrap(),
            ));
        }
        let got: Vec<(u64, u64, i64, i64, i64)> = survey.fields[0]
            .buckets
            .iter()
            .map(|b| {
                let int = |n: Num| match n {
                    Num::I64(v) => v,
                    other => panic!("an i64 field answered {other:?}"),
                };
                (
                    cell_of(b.first.axis, base, fanout, level),
                    b.count,
                    b.sum as i64,
                    int(b.min.value),
                    int(b.max.value),
                )
            })
            .collect();
        prop_assert_eq!(got, want);
    }
}
