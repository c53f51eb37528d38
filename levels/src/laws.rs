//! Property tests of the laws this crate exists for, over generated inputs.
//!
//! Every expected value here is computed independently of the code under test: grid cells from
//! a width computed in this file, groupings from explicit trees, oracles written out by hand.
#![expect(
    clippy::float_cmp,
    reason = "the laws are stated over exactly representable values, so equality is exact"
)]

use proptest::prelude::*;

use crate::{
    Aggregate, Bucket, Cell, LEVELS_MAX, Ladder, Num, POINTS_PER_BUCKET, groups_touched, plan,
};

/// Values that add and square exactly in f64 (|v| <= 2^20, at most 64 rows: sums stay < 2^53),
/// so the merge law is tested as equality, with no tolerance.
fn exact_values(kind: u8, n: usize) -> BoxedStrategy<Vec<Num>> {
    match kind % 3 {
        0 => prop::collection::vec((0u64..=1 << 20).prop_map(Num::U64), n).boxed(),
        1 => prop::collection::vec((-(1i64 << 20)..=1 << 20).prop_map(Num::I64), n).boxed(),
        _ => prop::collection::vec(
            // Quarters of small integers are exact too.
            (-(1i32 << 20)..=1 << 20).prop_map(|q| Num::F64(f64::from(q) / 4.0)),
            n,
        )
        .boxed(),
    }
}

/// A run of rows with arbitrary (not necessarily sorted) axes drawn from a few values so ties are
/// common, plus a stream of choices that shapes a merge tree.
fn rows_and_tree() -> impl Strategy<Value = (Vec<(u64, Num)>, Vec<usize>)> {
    (1usize..48, any::<u8>()).prop_flat_map(|(n, kind)| {
        let axes = prop::collection::vec(
            prop_oneof![0u64..6, Just(u64::MAX), Just(u64::MAX - 1), any::<u64>()],
            n,
        );
        let tree = prop::collection::vec(any::<usize>(), 2 * n);
        (axes, exact_values(kind, n), tree).prop_map(|(axes, values, tree)| {
            (axes.into_iter().zip(values).collect::<Vec<_>>(), tree)
        })
    })
}

/// Merges `rows` by a binary tree whose split points come from `choices`.
fn merge_by_tree(rows: &[(u64, Num)], choices: &mut impl Iterator<Item = usize>) -> Bucket {
    if let [(axis, value)] = rows {
        return Bucket::of_row(3, *axis, *value);
    }
    let split = 1 + choices.next().unwrap_or(0) % (rows.len() - 1);
    let left = merge_by_tree(&rows[..split], choices);
    let right = merge_by_tree(&rows[split..], choices);
    left.merge(&right)
}

/// The width of `level`, computed here with checked u128 powers (None: wider than the axis).
fn reference_width(base: u64, fanout: u64, level: u8) -> Option<u128> {
    let mut width = u128::from(base);
    for _ in 0..level {
        width = width.checked_mul(u128::from(fanout))?;
        if width > u128::from(u64::MAX) {
            return None;
        }
    }
    Some(width)
}

fn reference_cell(base: u64, fanout: u64, level: u8, axis: u64) -> u64 {
    match reference_width(base, fanout, level) {
        Some(width) => u64::try_from(u128::from(axis) / width).unwrap(),
        None => 0,
    }
}

/// Level `level` built straight from the rows: group by the reference cell, fold in row order.
fn reference_level(ladder: &Ladder, level: u8, field: u16, rows: &[(u64, Num)]) -> Vec<Cell> {
    let mut cells: Vec<Cell> = Vec::new();
    for &(axis, value) in rows {
        let index = reference_cell(ladder.base(), ladder.fanout(), level, axis);
        let row = Bucket::of_row(field, axis, value);
        match cells.last_mut() {
            Some(cell) if cell.index == index => cell.bucket = cell.bucket.merge(&row),
            _ => cells.push(Cell { index, bucket: row }),
        }
    }
    cells
}

fn ladders() -> impl Strategy<Value = Ladder> {
    let base = prop_oneof![
        1u64..20,
        Just(1000),
        Just(1 << 32),
        Just(u64::MAX / 3),
        Just(u64::MAX),
        any::<u64>().prop_map(|b| b.max(1)),
    ];
    let fanout = prop_oneof![2u64..17, Just(1 << 16), Just(u64::MAX), 2u64..=u64::MAX];
    (base, fanout).prop_map(|(base, fanout)| Ladder::new(base, fanout).unwrap())
}

/// Non-decreasing axes starting anywhere, including right below `u64::MAX`.
fn sorted_axes() -> impl Strategy<Value = Vec<u64>> {
    let start = prop_oneof![
        Just(0u64),
        0u64..1000,
        Just(u64::MAX - 500),
        Just((1 << 63) - 50),
        any::<u64>()
    ];
    let steps = prop::collection::vec(prop_oneof![Just(0u64), 1u64..50, any::<u64>()], 1..64);
    (start, steps).prop_map(|(start, steps)| {
        let mut axis = start;
        steps
            .into_iter()
            .map(|step| {
                axis = axis.saturating_add(step);
                axis
            })
            .collect()
    })
}

/// The hand-written parse oracle: the five words, or `p` and a canonical number 0..=100.
fn is_aggregate_name(s: &str) -> bool {
    if ["min", "max", "mean", "sum", "count"].contains(&s) {
        return true;
    }
    let Some(digits) = s.strip_prefix('p') else {
        return false;
    };
    let all_digits = !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit());
    let canonical = digits == "0" || !digits.starts_with('0');
    all_digits && canonical && digits.len() <= 3 && digits.parse::<u32>().is_ok_and(|v| v <= 100)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn merge_law_any_grouping_equals_the_run((rows, tree) in rows_and_tree()) {
        let run = Bucket::of_rows(3, rows.iter().copied()).unwrap();
        let grouped = merge_by_tree(&rows, &mut tree.into_iter());
        prop_assert_eq!(run, grouped);
        // And the accumulators are the plain sums, computed here.
        let sum: f64 = rows.iter().map(|(_, v)| v.as_f64()).sum();
        let sum_sq: f64 = rows.iter().map(|(_, v)| v.as_f64() * v.as_f64()).sum();
        prop_assert_eq!(run.sum, sum);
        prop_assert_eq!(run.sum_sq, sum_sq);
        prop_assert_eq!(run.count, rows.len() as u64);
    }

    #[test]
    fn merge_picks_match_an_independent_scan((rows, _) in rows_and_tree()) {
        let run = Bucket::of_rows(3, rows.iter().copied()).unwrap();
        // first: earliest row among those with the least axis; last: latest with the greatest.
        let min_axis = rows.iter().map(|r| r.0).min().unwrap();
        let max_axis = rows.iter().map(|r| r.0).max().unwrap();
        let first = rows.iter().find(|r| r.0 == min_axis).unwrap();
        let last = rows.iter().rev().find(|r| r.0 == max_axis).unwrap();
        prop_assert_eq!((run.first.axis, run.first.value), *first);
        prop_assert_eq!((run.last.axis, run.last.value), *last);
        // min/max: the earliest row holding the extreme value.
        let as_key = |v: Num| v.as_f64();
        let min_v = rows.iter().map(|r| as_key(r.1)).fold(f64::INFINITY, f64::min);
        let max_v = rows.iter().map(|r| as_key(r.1)).fold(f64::NEG_INFINITY, f64::max);
        let min = rows.iter().find(|r| as_key(r.1) == min_v).unwrap();
        let max = rows.iter().find(|r| as_key(r.1) == max_v).unwrap();
        prop_assert_eq!((run.min.axis, run.min.value), *min);
        prop_assert_eq!((run.max.axis, run.max.value), *max);
    }

    #[test]
    fn every_level_folded_from_below_equals_the_level_folded_from_rows(
        ladder in ladders(),
        axes in sorted_axes(),
        kind in any::<u8>(),
        seed in any::<u64>(),
    ) {
        // Values from the axis and a seed, exact (small integers).
        let rows: Vec<(u64, Num)> = axes
            .iter()
            .enumerate()
            .map(|(i, &axis)| {
                let v = i64::try_from(seed.wrapping_mul(i as u64 + 1) >> 44).unwrap() - (1 << 19);
                let value = match kind % 3 {
                    0 => Num::U64(v.unsigned_abs()),
                    1 => Num::I64(v),
                    _ => Num::F64(v as f64),
                };
                (axis, value)
            })
            .collect();
        let top = ladder.top_level(axes[0], *axes.last().unwrap());
        let mut level_cells = ladder.fold_rows(7, rows.iter().copied());
        prop_assert_eq!(&level_cells, &reference_level(&ladder, 0, 7, &rows));
        for level in 1..=(top + 1).min(LEVELS_MAX) {
            level_cells = ladder.fold_level(&level_cells);
            prop_assert_eq!(&level_cells, &reference_level(&ladder, level, 7, &rows));
        }
        // At the top level, one cell holds the whole partition.
        let at_top = (0..top).fold(ladder.fold_rows(7, rows.iter().copied()), |c, _| {
            ladder.fold_level(&c)
        });
        prop_assert_eq!(at_top.len(), 1);
        prop_assert_eq!(at_top[0].bucket.count, rows.len() as u64);
    }

    #[test]
    fn budget_is_a_ceiling_and_the_level_is_the_finest_that_fits(
        ladder in ladders(),
        span in (any::<u64>(), any::<u64>()),
        budget in prop_oneof![0u64..200, 200u64..100_000, any::<u64>()],
        n_fields in 1usize..9,
        coarsest in 0u8..=LEVELS_MAX,
    ) {
        let (lo, hi) = (span.0.min(span.1), span.0.max(span.1));
        let per_field = budget / (POINTS_PER_BUCKET * n_fields as u64);
        let Ok(plan) = plan(&ladder, coarsest, [lo, hi], budget, n_fields) else {
            prop_assert_eq!(per_field, 0);
            return Ok(());
        };
        prop_assert!(per_field >= 1);
        prop_assert_eq!(plan.cells_per_field, per_field);
        prop_assert!(plan.level <= coarsest);
        let (b, f) = (ladder.base(), ladder.fanout());
        let cells_at = |level: u8| {
            u128::from(reference_cell(b, f, level, hi)) - u128::from(reference_cell(b, f, level, lo))
                + 1
        };
        let answer_cells = groups_touched(
            reference_cell(b, f, plan.level, lo),
            reference_cell(b, f, plan.level, hi),
            plan.group,
        );
        // Never exceeded, counted in points.
        prop_assert!(answer_cells <= u128::from(per_field));
        prop_assert!(
            answer_cells * u128::from(POINTS_PER_BUCKET) * n_fields as u128 <= u128::from(budget)
        );
        // The finest level that fits: every finer level does not.
        for finer in 0..plan.level {
            prop_assert!(cells_at(finer) > u128::from(per_field), "level {} fits", finer);
        }
        if plan.group == 1 {
            prop_assert!(cells_at(plan.level) <= u128::from(per_field));
        } else {
            // Even the coarsest did not fit, and no smaller group fits either.
            prop_assert_eq!(plan.level, coarsest);
            prop_assert!(cells_at(coarsest) > u128::from(per_field));
            let (lo_c, hi_c) = (reference_cell(b, f, coarsest, lo), reference_cell(b, f, coarsest, hi));
            let smaller_fit = |m: u128| groups_touched(lo_c, hi_c, m) <= u128::from(per_field);
            if plan.group <= 4096 {
                prop_assert!(!(1..plan.group).any(smaller_fit));
            } else {
                prop_assert!(!smaller_fit(plan.group - 1));
            }
        }
    }

    #[test]
    fn percentile_equals_the_nearest_rank_of_a_full_sort(
        values in prop::collection::vec(-1000i64..1000, 1..200),
        rank in 0u8..=100,
    ) {
        let mut sorted = values.clone();
        sorted.sort_unstable();
        let n = sorted.len();
        // Nearest rank, r = max(1, ceil(rank * n / 100)), in exact integer arithmetic.
        #[expect(clippy::manual_div_ceil, reason = "spelled apart from the code under test")]
        let r = ((usize::from(rank) * n + 99) / 100).max(1);
        let mut nums: Vec<Num> = values.iter().map(|&v| Num::I64(v)).collect();
        prop_assert_eq!(Aggregate::p(rank).scanned(&mut nums), Some(Num::I64(sorted[r - 1])));
    }

    #[test]
    fn parse_answers_exactly_the_names(
        word in prop_oneof![
            "p[0-9]{0,4}",
            "[pP][0-9.+-]{0,4}",
            "(min|max|mean|sum|count|median)[ a-z]{0,2}",
            ".{0,6}",
        ]
    ) {
        let parsed = Aggregate::parse(&word);
        prop_assert_eq!(parsed.is_some(), is_aggregate_name(&word), "{:?}", word);
        if let Some(aggregate) = parsed {
            prop_assert_eq!(aggregate.name(), word);
        }
    }
}

#[test]
fn name_and_parse_are_inverses_over_all_106() {
    let all: Vec<Aggregate> = Aggregate::all().collect();
    assert_eq!(all.len(), 5 + 101);
    for aggregate in &all {
        let name = aggregate.name();
        assert!(is_aggregate_name(&name), "{name}");
        assert_eq!(Aggregate::parse(&name), Some(*aggregate));
    }
    let mut names: Vec<String> = all.iter().map(|a| a.name()).collect();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), 5 + 101, "two aggregates share a spelling");
    assert_eq!(
        all.iter().filter(|a| a.folds_levels()).count(),
        5,
        "exactly the five level folds read cells"
    );
}
