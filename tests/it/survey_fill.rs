//! Spending a survey's budget (`SurveyFill::Spend`) through the engine: within the budget, each
//! bucket the fold of the raw rows in its group's axis span (at the span's edges, the part of
//! it in the whole cells the span touches), at least about 90% of the budget's
//! buckets once the span holds 9 times as many level-0 cells, and a bounded number of cells
//! read. Every reference here is computed from the rows by code in this file; the survey's
//! `level` and `group` are what is checked, never what the reference is built from.

use proptest::prelude::*;
use strata::segment::vfs::SimFs;
use strata::{Config, FieldKind, Num, Store, Stream, SurveyFill, Value};

use crate::support::sim;

/// Level `level`'s width, computed here; `None` once it passes every u64 axis.
fn width(base: u64, fanout: u64, level: u8) -> Option<u64> {
    (0..level).try_fold(base, |w, _| w.checked_mul(fanout))
}

/// Ladders at the edges and in the middle: base 1, bases near 2^64, fanouts 2 to near 2^64.
fn ladders() -> impl Strategy<Value = (u64, u64)> {
    (
        prop_oneof![
            Just(1u64),
            1u64..100,
            Just(1 << 40),
            Just(u64::MAX),
            any::<u64>()
        ],
        prop_oneof![
            Just(2u64),
            Just(4),
            2u64..10,
            Just(1 << 32),
            Just(u64::MAX),
            2u64..=u64::MAX
        ],
    )
        .prop_map(|(base, fanout)| (base.max(1), fanout))
}

/// Two partitions' rows `(run, t, v)`, axes non-decreasing per partition: dense from 0 (so
/// spans hold many level-0 cells), near 2^63, near `u64::MAX`, or anywhere; up to 3 barriers.
fn rows() -> impl Strategy<Value = (Vec<(usize, u64, i64)>, Vec<usize>)> {
    let axis = prop_oneof![
        3 => 0u64..2000,
        1 => (1u64 << 63) - 500..(1u64 << 63) + 500,
        1 => u64::MAX - 1000..=u64::MAX,
        1 => any::<u64>(),
    ];
    (
        prop::collection::vec((0usize..2, axis, -9i64..10), 1..160),
        prop::collection::vec(1usize..160, 0..3),
    )
        .prop_map(|(mut rows, cuts)| {
            rows.sort_by_key(|r| r.1);
            (rows, cuts)
        })
}

fn bound() -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(0u64),
        Just(u64::MAX),
        0u64..2000,
        u64::MAX - 1000..=u64::MAX,
        any::<u64>()
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn a_spent_survey_is_the_fold_of_its_groups_rows_within_budget_and_bounds(
        (base, fanout) in ladders(),
        (rows, cuts) in rows(),
        (a, b) in (bound(), bound()),
        budget in prop_oneof![4u64..64, 4u64..400],
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
        let config = Config::default().survey_fill(SurveyFill::Spend);
        let mut store = Store::open_or_create_in(sim(&fs), config, &[d]).unwrap();
        let mut n_barriers = 1;
        for (position, &(run, t, v)) in rows.iter().enumerate() {
            let row = vec![Value::Str(["a", "b"][run].into()), Value::U64(t), Value::I64(v)];
            store.publish("x", position as u64, &[row]).unwrap();
            if cuts.contains(&position) {
                store.seal().unwrap();
                n_barriers += 1;
            }
        }
        store.seal().unwrap();

        let c = budget / 4;
        let before = store.metrics().cells_read;
        let survey = store.survey("x", &[], lo..=hi, budget).unwrap();
        let cells_read = store.metrics().cells_read - before;
        // The rows' recorded range clamps nothing here (both ends are bounded), so the span
        // is [lo, hi] whenever a row lies in the store at all.
        prop_assert_eq!(survey.span, Some([lo, hi]));

        // Groups of `group` cells of `level`, anchored at 0: a grid of width `w * group`.
        let group_width = width(base, fanout, survey.level)
            .map_or(1u128 << 64, u128::from)
            .saturating_mul(survey.group)
            .min(1 << 64);
        let (g_lo, g_hi) = (u128::from(lo) / group_width, u128::from(hi) / group_width);
        let touched = g_hi - g_lo + 1;
        prop_assert!(touched <= u128::from(c), "{:?} touches {} groups of {}", (survey.level, survey.group), touched, c);
        prop_assert!(survey.fields[0].buckets.len() as u128 <= touched);

        // Fill: a span of at least 9C level-0 cells answers with 90% of C, short by under one.
        let level0 = u128::from(hi / base - lo / base) + 1;
        if level0 >= 9 * u128::from(c) {
            prop_assert!(
                10 * touched + 10 > 9 * u128::from(c),
                "{:?} touches {} groups of {} over {} level-0 cells",
                (survey.level, survey.group), touched, c, level0
            );
        }

        // Cells read: at most fanout * (9C - 1) cells of the level per partition, each read once
        // per file storing part of it (files of a partition meet in at most one cell).
        let stated = u128::from(fanout).saturating_mul(9 * u128::from(c) - 1).max(1);
        let level_cells = width(base, fanout, survey.level).map_or(1, |w| u128::from(hi / w - lo / w) + 1);
        prop_assert!(level_cells <= stated || survey.group == 1, "{level_cells} cells of the level");
        prop_assert!(
            u128::from(cells_read) <= 2 * (level_cells.min(stated) + n_barriers),
            "{cells_read} cells read"
        );

        // Each bucket: the fold of the rows in its group's axis span, partition "a" before "b".
        // Whole cells of the level answer, so the span is widened to the cells holding `lo`
        // and `hi`; a group at either edge holds the cells of it inside that (the others lie
        // outside the span asked).
        let w = width(base, fanout, survey.level).map_or(1u128 << 64, u128::from);
        let whole = [u128::from(lo) / w * w, u128::from(hi) / w * w + w - 1];
        let mut ordered: Vec<&(usize, u64, i64)> = rows.iter().collect();
        ordered.sort_by_key(|r| r.0);
        let mut want: Vec<(u64, u64, u64, i64, i64, i64)> = Vec::new();
        for g in g_lo..=g_hi {
            let inside: Vec<&&(usize, u64, i64)> = ordered
                .iter()
                .filter(|r| u128::from(r.1) / group_width == g)
                .filter(|r| (whole[0]..=whole[1]).contains(&u128::from(r.1)))
                .collect();
            if inside.is_empty() {
                continue;
            }
            let first = inside.iter().map(|r| r.1).min().unwrap();
            let last = inside.iter().map(|r| r.1).max().unwrap();
            want.push((
                first,
                last,
                inside.len() as u64,
                inside.iter().map(|r| r.2).sum(),
                inside.iter().map(|r| r.2).min().unwrap(),
                inside.iter().map(|r| r.2).max().unwrap(),
            ));
        }
        let int = |n: Num| match n {
            Num::I64(v) => v,
            other => panic!("an i64 field answered {other:?}"),
        };
        let got: Vec<(u64, u64, u64, i64, i64, i64)> = survey.fields[0]
            .buckets
            .iter()
            .map(|b| {
                #[expect(clippy::cast_possible_truncation, reason = "sums of small integers")]
                let sum = b.sum as i64;
                (b.first.axis, b.last.axis, b.count, sum, int(b.min.value), int(b.max.value))
            })
            .collect();
        prop_assert_eq!(got, want);
    }
}

/// The same rows under both choices: spending never answers fewer buckets than the finest
/// level, and the default stays the contract's finest level.
#[test]
fn the_default_is_the_finest_level_and_spending_answers_more() {
    let d = || {
        Stream::new("x")
            .field("t", FieldKind::U64)
            .field("v", FieldKind::F64)
            .axis("t")
            .ladder(64, 4)
            .build()
            .unwrap()
    };
    assert_eq!(Config::default().survey_fill, SurveyFill::FinestLevel);
    let fs = SimFs::new();
    let mut store = Store::open_or_create_in(sim(&fs), Config::default(), &[d()]).unwrap();
    let rows: Vec<Vec<Value>> = (0..500_000u64)
        .map(|t| vec![Value::U64(t), Value::F64((t % 97) as f64)])
        .collect();
    store.publish("x", 1, &rows).unwrap();
    store.seal().unwrap();
    drop(store);
    let open = |fill| {
        let config = Config::default().survey_fill(fill);
        Store::open_or_create_in(sim(&fs), config, &[d()]).unwrap()
    };
    // 500,000 rows: level 2 has 489 cells (level 1's 1,954 do not fit 1,000); spending groups
    // level 0's 7,813 cells in eights: 977.
    let finest = open(SurveyFill::FinestLevel)
        .survey("x", &[], .., 4000)
        .unwrap();
    assert_eq!((finest.level, finest.group), (2, 1));
    assert_eq!(finest.fields[0].buckets.len(), 489);
    let spent = open(SurveyFill::Spend).survey("x", &[], .., 4000).unwrap();
    assert_eq!((spent.level, spent.group), (0, 8));
    assert_eq!(spent.fields[0].buckets.len(), 977);
    // Every eight level-0 cells of 64 rows: 512 rows a bucket, the last one short.
    assert!(
        spent.fields[0].buckets[..976]
            .iter()
            .all(|b| b.count == 512)
    );
    assert_eq!(spent.fields[0].buckets[976].count, 500_000 - 976 * 512);
}
