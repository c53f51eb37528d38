//! What a point budget buys: which level answers a display read, and how many of its cells merge.
//!
//! A bucket is four placed points, so a budget of `B` points over `F` measured fields buys
//! `B / (4 * F)` cells per field. The answer comes from the **finest** level whose cells over the
//! requested span fit that count; the bound comes from the span alone, so choosing costs no read.
//! If even the coarsest level does not fit, adjacent coarsest cells merge in groups of `m`,
//! anchored at 0 like the grid itself (cell `c` belongs to group `c / m`), with `m` the smallest
//! number for which the groups the span touches fit. The budget is a ceiling, never exceeded.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::ladder::Ladder;

/// Points per bucket: first, last, min and max.
pub const POINTS_PER_BUCKET: u64 = 4;

/// How a budgeted read is answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Plan {
    /// The level whose cells answer.
    pub level: u8,
    /// How many adjacent cells of `level` merge into one answer cell (1: none merge).
    pub group: u128,
    /// The most answer cells one field may return.
    pub cells_per_field: u64,
}

/// A budget that cannot be honoured.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum BudgetError {
    /// The budget does not buy one bucket per measured field.
    TooSmall {
        /// The budget asked for, in points.
        budget: u64,
        /// The least budget that buys one bucket per field.
        minimum: u64,
    },
    /// The stream has no measured field, so there is nothing to spend a budget on.
    NoMeasuredFields,
}

impl fmt::Display for BudgetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BudgetError::TooSmall { budget, minimum } => write!(
                f,
                "a budget of {budget} points is below the minimum of {minimum} \
                 (4 points per bucket, one bucket per measured field)"
            ),
            BudgetError::NoMeasuredFields => {
                write!(f, "the stream has no measured field to survey")
            }
        }
    }
}

impl std::error::Error for BudgetError {}

/// `budget / (4 * n_fields)`, or an error if that is zero.
pub fn cells_per_field(budget: u64, n_fields: usize) -> Result<u64, BudgetError> {
    if n_fields == 0 {
        return Err(BudgetError::NoMeasuredFields);
    }
    let per_cell = POINTS_PER_BUCKET.saturating_mul(u64::try_from(n_fields).unwrap_or(u64::MAX));
    let cells = budget / per_cell;
    if cells == 0 {
        return Err(BudgetError::TooSmall {
            budget,
            minimum: per_cell,
        });
    }
    Ok(cells)
}

/// Chooses the level (at most `coarsest`) and grouping that answer the inclusive axis span
/// `[lo, hi]` within `budget` points over `n_fields` measured fields.
pub fn plan(
    ladder: &Ladder,
    coarsest: u8,
    span: [u64; 2],
    budget: u64,
    n_fields: usize,
) -> Result<Plan, BudgetError> {
    let cells_per_field = cells_per_field(budget, n_fields)?;
    let [lo, hi] = [span[0].min(span[1]), span[0].max(span[1])];
    // `touched - 1` rather than `touched`, which could be 2^64 at level 0 with base 1.
    let extra_cells_allowed = cells_per_field - 1;
    for level in 0..=coarsest {
        if ladder.cell(hi, level) - ladder.cell(lo, level) <= extra_cells_allowed {
            return Ok(Plan {
                level,
                group: 1,
                cells_per_field,
            });
        }
    }
    let group = smallest_group(
        ladder.cell(lo, coarsest),
        ladder.cell(hi, coarsest),
        extra_cells_allowed,
    );
    Ok(Plan {
        level: coarsest,
        group,
        cells_per_field,
    })
}

/// How a survey spends its budget: which plan answers.
///
/// The contract ("The Series Facility", and DESIGN.md) fixes the answer exactly, as
/// [`SurveyFill::FinestLevel`], so that adapters written from it answer bucket for bucket
/// alike; that stays the default. [`SurveyFill::Spend`] is a caller's explicit choice of more
/// buckets for the same budget (docs/levels.md, "Spending a budget").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum SurveyFill {
    /// The finest level whose cells over the span fit the budget ([`plan`]); with a fanout of
    /// 4 that answers with between a quarter of the budget's buckets and all of them.
    #[default]
    FinestLevel,
    /// Zero-anchored groups of cells of a finer level ([`plan_spend`]): about 90% of the
    /// budget's buckets or more (short of 90% by under one bucket at worst) whenever the span
    /// holds at least [`SPEND_SPAN_CELLS_PER_BUCKET`] times that many level-0 cells, reading
    /// at most [`spend_cells_read_max`] cells of that level.
    Spend,
}

impl SurveyFill {
    /// Every choice, for listings.
    pub const ALL: [SurveyFill; 2] = [SurveyFill::FinestLevel, SurveyFill::Spend];

    /// Its one spelling: `finest` or `spend`.
    pub fn name(self) -> &'static str {
        match self {
            SurveyFill::FinestLevel => "finest",
            SurveyFill::Spend => "spend",
        }
    }

    /// The inverse of [`SurveyFill::name`]; `None` for anything else.
    pub fn parse(name: &str) -> Option<SurveyFill> {
        SurveyFill::ALL.into_iter().find(|f| f.name() == name)
    }
}

/// Level-0 cells of the span per bucket the budget buys from which [`plan_spend`] promises
/// its fill. With `n >= 9 * C` cells of a level, the smallest group size `m` that fits has
/// `m - 1` touching more than `C` groups, so `m - 1 < (n - 1) / (C - 1)`, and `m` touches at
/// least `n / m > n (C - 1) / (n + C - 2)` groups: 90% of `C` less under one bucket (at least
/// 900 of 1,000). Zero-anchored groups cannot promise more: cells 99..=230 touch 15 groups of
/// 10 and 12 of 11, so with `C = 14` the best is 12.
pub const SPEND_SPAN_CELLS_PER_BUCKET: u64 = 9;

/// Group sizes [`plan_spend`] tries beyond the smallest that fits, looking for one that touches
/// more groups (the count is not monotone in the size). A bound on its arithmetic, not on what
/// it reads; the search stops sooner once no larger size can touch more.
pub const SPEND_GROUP_SEARCH_MAX: u32 = 4096;

/// The plan `fill` asks for: [`plan`] or [`plan_spend`].
pub fn plan_with(
    fill: SurveyFill,
    ladder: &Ladder,
    coarsest: u8,
    span: [u64; 2],
    budget: u64,
    n_fields: usize,
) -> Result<Plan, BudgetError> {
    match fill {
        SurveyFill::FinestLevel => plan(ladder, coarsest, span, budget, n_fields),
        SurveyFill::Spend => plan_spend(ladder, coarsest, span, budget, n_fields),
    }
}

/// The most cells of its level, per field and partition, that a [`plan_spend`] plan over a
/// span covers with `cells_per_field` buckets a field, where the levels it may choose from
/// reach `coarsest`: `fanout * (9 * C - 1)`, or, where even `coarsest` holds more than that
/// (a ladder capped below the span), what [`plan`] covers itself, the span's cells of
/// `coarsest`. Saturating. A read touches each such cell once per file that stores part of it.
pub fn spend_cells_read_max(
    ladder: &Ladder,
    coarsest: u8,
    span: [u64; 2],
    cells_per_field: u64,
) -> u128 {
    let [lo, hi] = [span[0].min(span[1]), span[0].max(span[1])];
    let coarsest_cells = u128::from(ladder.cell(hi, coarsest) - ladder.cell(lo, coarsest)) + 1;
    let spend = u128::from(ladder.fanout())
        .saturating_mul(u128::from(SPEND_SPAN_CELLS_PER_BUCKET) * u128::from(cells_per_field) - 1);
    spend.max(coarsest_cells)
}

/// Spends the budget: answers the span with zero-anchored groups of `m` cells of a level
/// `L` (cell `c` joins group `c / m`), where `L` is the coarsest level at or below [`plan`]'s
/// whose cells over the span number at least `9 * C` (level 0 if none does; [`plan`]'s own
/// level only where it groups cells of `coarsest`, the ladder capped below the span), and `m` is the
/// group size that touches the most groups without exceeding `C` (the smallest that fits,
/// or a larger one that touches more). A group of `m` cells of level `L` is a cell of the
/// zero-anchored grid `m` times as wide, so each bucket is still the fold of a grid cell's
/// rows. Whichever of this and [`plan`] answers more buckets answers (ties: [`plan`]'s, which
/// reads fewer cells).
///
/// Bounds: the budget is never exceeded; where the span holds at least `9 * C` level-0 cells
/// the answer has more than `0.9 * C - 1` buckets ([`SPEND_SPAN_CELLS_PER_BUCKET`]); `L`'s
/// cells over the span number at most [`spend_cells_read_max`] (below [`plan`]'s level,
/// `L + 1` holds fewer than `9 * C` of them, and each has at most `fanout` children; at it,
/// `L` is `coarsest`).
pub fn plan_spend(
    ladder: &Ladder,
    coarsest: u8,
    span: [u64; 2],
    budget: u64,
    n_fields: usize,
) -> Result<Plan, BudgetError> {
    let finest = plan(ladder, coarsest, span, budget, n_fields)?;
    let cells_per_field = finest.cells_per_field;
    let [lo, hi] = [span[0].min(span[1]), span[0].max(span[1])];
    // `n_k - 1` for the span's cells of level k (`n_k` itself could be 2^64).
    let extra = |level: u8| u128::from(ladder.cell(hi, level) - ladder.cell(lo, level));
    let enough = u128::from(SPEND_SPAN_CELLS_PER_BUCKET) * u128::from(cells_per_field) - 1;
    // The finest level's own cells are searched too: they fit `C` (fewer than `9 * C`) unless
    // they are `coarsest`'s, grouped. Then stopping there keeps the read within the bound: a
    // level below could hold `fanout` times as many cells as `coarsest`, itself over `9 * C`.
    let level = match (0..=finest.level)
        .rev()
        .find(|&level| extra(level) >= enough)
    {
        Some(level) => level,
        None if finest.level > 0 => 0,
        None => return Ok(finest),
    };
    debug_assert!(level < finest.level || finest.group > 1);
    let [lo_cell, hi_cell] = [ladder.cell(lo, level), ladder.cell(hi, level)];
    let group = fullest_group(lo_cell, hi_cell, cells_per_field);
    let spend = Plan {
        level,
        group,
        cells_per_field,
    };
    let touched =
        |p: &Plan| groups_touched(ladder.cell(lo, p.level), ladder.cell(hi, p.level), p.group);
    debug_assert!(touched(&spend) <= u128::from(cells_per_field));
    Ok(if touched(&spend) > touched(&finest) {
        spend
    } else {
        finest
    })
}

/// The group size `m` for which the cells `lo..=hi` touch the most groups, at most `cells`:
/// the smallest that fits, or a larger one that touches more. Groups touched by `n` cells are
/// at most `ceil((n - 1) / m) + 1`, which falls with `m`, so the search stops once that bound
/// cannot beat the best found (and after [`SPEND_GROUP_SEARCH_MAX`] sizes at the most).
fn fullest_group(lo: u64, hi: u64, cells: u64) -> u128 {
    let first = smallest_group(lo, hi, cells - 1);
    let (mut best, mut best_touched) = (first, groups_touched(lo, hi, first));
    let gaps = u128::from(hi - lo);
    let mut m = first;
    for _ in 0..SPEND_GROUP_SEARCH_MAX {
        if best_touched == u128::from(cells) || gaps.div_ceil(m) < best_touched {
            break;
        }
        m += 1;
        let touched = groups_touched(lo, hi, m);
        if touched <= u128::from(cells) && touched > best_touched {
            (best, best_touched) = (m, touched);
        }
    }
    best
}

/// How many groups of `group` cells, anchored at 0, the cells `lo..=hi` touch.
///
/// # Panics
/// If `group` is 0.
pub fn groups_touched(lo: u64, hi: u64, group: u128) -> u128 {
    assert!(group >= 1, "a group holds at least one cell");
    u128::from(hi) / group - u128::from(lo) / group + 1
}

/// The smallest `m >= 1` with `hi / m - lo / m <= extra` (at most `extra + 1` groups touched).
///
/// The count is not monotone in `m` (cells 3..=4 touch 2 groups at m = 4 but 1 at m = 3), so
/// this walks `m` in blocks where `q = lo / m` is constant. Within a block the condition is
/// `hi / m <= extra + q`, i.e. `m > hi / (extra + q + 1)`, which is monotone; so the first
/// block with a solution holds the smallest one. Starting at `m = (hi - lo) / (extra + 1) + 1`
/// is safe: below it the span alone holds more than `extra` group boundaries.
fn smallest_group(lo: u64, hi: u64, extra: u64) -> u128 {
    let (lo, hi, extra) = (u128::from(lo), u128::from(hi), u128::from(extra));
    let mut m = (hi - lo) / (extra + 1) + 1;
    loop {
        let q = lo / m;
        let block_end = lo.checked_div(q).unwrap_or(u128::MAX);
        let needed = hi / (extra + q + 1) + 1;
        let candidate = m.max(needed);
        if candidate <= block_end {
            debug_assert!(hi / candidate - lo / candidate <= extra);
            return candidate;
        }
        m = block_end + 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn brute_smallest_group(lo: u64, hi: u64, extra: u64) -> u128 {
        (1..=u128::from(hi) + 1)
            .find(|&m| groups_touched(lo, hi, m) <= u128::from(extra) + 1)
            .unwrap()
    }

    #[test]
    fn budget_below_one_bucket_per_field_is_an_error() {
        assert_eq!(
            cells_per_field(7, 2),
            Err(BudgetError::TooSmall {
                budget: 7,
                minimum: 8
            })
        );
        assert_eq!(cells_per_field(8, 2), Ok(1));
        assert_eq!(cells_per_field(100, 0), Err(BudgetError::NoMeasuredFields));
        // Points that do not make a whole bucket per field are not spent.
        assert_eq!(cells_per_field(4000, 3), Ok(333));
    }

    #[test]
    fn group_count_is_not_monotone_so_the_smallest_is_searched() {
        // Cells 3..=4 fit one group at m = 3 but not at m = 4.
        assert_eq!(groups_touched(3, 4, 3), 1);
        assert_eq!(groups_touched(3, 4, 4), 2);
        assert_eq!(smallest_group(3, 4, 0), 3);
        // ceil(cells / budget) can touch one group too many: 10 cells 5..=14 into 5 groups.
        // ceil(10 / 5) = 2 touches 2..=7, six groups; m = 3 touches 1..=4, four groups.
        assert_eq!(groups_touched(5, 14, 2), 6);
        assert_eq!(smallest_group(5, 14, 4), 3);
    }

    #[test]
    fn smallest_group_matches_brute_force_on_small_spans() {
        for lo in 0..40 {
            for hi in lo..60 {
                for extra in 0..6 {
                    assert_eq!(
                        smallest_group(lo, hi, extra),
                        brute_smallest_group(lo, hi, extra),
                        "lo={lo} hi={hi} extra={extra}"
                    );
                }
            }
        }
    }

    #[test]
    fn smallest_group_at_the_top_of_the_axis() {
        assert_eq!(smallest_group(0, u64::MAX, 0), 1 << 64);
        assert_eq!(smallest_group(u64::MAX, u64::MAX, 0), 1);
        let m = smallest_group(u64::MAX - 1000, u64::MAX, 1);
        assert!(groups_touched(u64::MAX - 1000, u64::MAX, m) <= 2);
        assert!(groups_touched(u64::MAX - 1000, u64::MAX, m - 1) > 2);
    }

    #[test]
    fn plan_by_hand() {
        let ladder = Ladder::new(10, 4).unwrap();
        // Span 0..=999: 100 cells at level 0, 25 at level 1, 7 at level 2, 2 at level 3.
        let plan_for = |budget| plan(&ladder, 5, [0, 999], budget, 1).unwrap();
        assert_eq!(plan_for(400).level, 0);
        assert_eq!(plan_for(399).level, 1);
        assert_eq!(plan_for(100).level, 1);
        assert_eq!(plan_for(99).level, 2);
        assert_eq!(plan_for(28).level, 2);
        assert_eq!(plan_for(27).level, 3);
        assert_eq!(plan_for(4).level, 4);
        // Capped at level 1 with room for 5 cells: groups of 5 cells (cells 0..=24).
        let capped = plan(&ladder, 1, [0, 999], 20, 1).unwrap();
        assert_eq!((capped.level, capped.group), (1, 5));
    }
}

#[cfg(test)]
mod spend_tests {
    use proptest::prelude::*;

    use super::*;
    use crate::ladder::LEVELS_MAX;

    /// Level `k`'s width, computed here: `None` once it passes every u64 axis.
    fn width(ladder: &Ladder, level: u8) -> Option<u64> {
        (0..level).try_fold(ladder.base(), |w, _| w.checked_mul(ladder.fanout()))
    }

    /// Cells of `level` over `[lo, hi]`, computed here.
    fn n_cells(ladder: &Ladder, level: u8, [lo, hi]: [u64; 2]) -> u128 {
        width(ladder, level).map_or(1, |w| u128::from(hi / w - lo / w) + 1)
    }

    /// Groups of `group` cells of `level` that `[lo, hi]` touches, computed here.
    fn groups(ladder: &Ladder, level: u8, group: u128, [lo, hi]: [u64; 2]) -> u128 {
        let (a, b) = width(ladder, level).map_or((0, 0), |w| (lo / w, hi / w));
        u128::from(b) / group - u128::from(a) / group + 1
    }

    /// The fill a spent plan guarantees with `n >= 9C` cells of its level, checked here: the
    /// smallest group size that fits, `m`, has `m - 1` touching more than `C` groups, so
    /// `m - 1 < (n - 1) / (C - 1)`, and `m` touches at least `n / m`, more than
    /// `n (C - 1) / (n + C - 2)`: at least 90% of `C`, short of it by under one bucket.
    fn spend_fill_holds(touched: u128, n: u128, c: u64) -> bool {
        let c = u128::from(c);
        assert!(n >= 9 * c);
        let bound_holds = c == 1 && touched == 1 || touched * (n + c - 2) > n * (c - 1);
        bound_holds && 10 * touched + 10 > 9 * c
    }

    fn ladders() -> impl Strategy<Value = Ladder> {
        (
            prop_oneof![
                Just(1u64),
                1u64..200,
                Just(1 << 40),
                Just(u64::MAX),
                any::<u64>()
            ],
            prop_oneof![
                Just(2u64),
                Just(4),
                2u64..20,
                Just(1 << 32),
                Just(u64::MAX),
                2u64..=u64::MAX
            ],
        )
            .prop_map(|(base, fanout)| Ladder::new(base.max(1), fanout).unwrap())
    }

    fn spans() -> impl Strategy<Value = [u64; 2]> {
        let end = prop_oneof![
            Just(0u64),
            0u64..100_000,
            u64::MAX - 100_000..=u64::MAX,
            Just(u64::MAX),
            any::<u64>()
        ];
        (end.clone(), end, 0u64..3).prop_map(|(a, b, one)| {
            // Some one-cell spans: both ends equal.
            if one == 0 {
                [a, a]
            } else {
                [a.min(b), a.max(b)]
            }
        })
    }

    fn budgets() -> impl Strategy<Value = u64> {
        prop_oneof![
            4u64..48,
            4u64..4000,
            Just(4000),
            Just(4),
            any::<u64>().prop_map(|b| b.max(4))
        ]
    }

    /// Where the ladder stops: mostly every level, often a few (capped below most spans).
    fn coarsests() -> impl Strategy<Value = u8> {
        prop_oneof![Just(LEVELS_MAX), 0..=LEVELS_MAX, 0u8..4]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4096))]

        /// Either planner keeps within the budget; spending answers at least as many buckets as
        /// the finest level, at least 90% of the budget's buckets once the span holds 9 times
        /// that many level-0 cells, and covers at most the stated bound of cells of its level,
        /// whether or not the levels are capped below the span.
        #[test]
        fn a_spent_budget_fills_without_exceeding_and_reads_a_bounded_number_of_cells(
            ladder in ladders(),
            span in spans(),
            budget in budgets(),
            coarsest in coarsests(),
        ) {
            let c = budget / 4;
            let finest = plan(&ladder, coarsest, span, budget, 1).unwrap();
            let spend = plan_spend(&ladder, coarsest, span, budget, 1).unwrap();
            let finest_n = groups(&ladder, finest.level, finest.group, span);
            let spend_n = groups(&ladder, spend.level, spend.group, span);
            prop_assert!(finest_n <= u128::from(c));
            prop_assert!(spend_n <= u128::from(c), "{spend:?} touches {spend_n} of {c}");
            prop_assert!(spend_n >= finest_n);
            let read = n_cells(&ladder, spend.level, span);
            if n_cells(&ladder, 0, span) >= 9 * u128::from(c) {
                let grouped = if spend_n > finest_n { read } else { n_cells(&ladder, finest.level, span) };
                prop_assert!(grouped >= 9 * u128::from(c) || spend_n == finest_n);
                prop_assert!(
                    spend_fill_holds(spend_n, read.max(9 * u128::from(c)), c),
                    "{spend:?} answers {spend_n} of {c} buckets"
                );
            }
            // Capped below the span, `coarsest` itself may hold more cells than the fanout
            // bound; the finest-level plan reads those anyway.
            let bound = u128::from(ladder.fanout())
                .saturating_mul(9 * u128::from(c) - 1)
                .max(n_cells(&ladder, coarsest, span));
            prop_assert!(read <= bound.max(u128::from(c)), "{spend:?} covers {read} cells");
            prop_assert_eq!(spend_cells_read_max(&ladder, coarsest, span, c), bound);
        }
    }

    #[test]
    fn spend_reads_within_its_stated_bound_when_levels_are_capped() {
        // Level 1 (the coarsest) holds 2^22 cells of the axis, too many for C = 11,437, so the
        // finest-level plan groups them; level 0, four times as many, was spent instead.
        let ladder = Ladder::new(1 << 40, 4).unwrap();
        let (coarsest, span, budget, n_fields) = (1u8, [0, u64::MAX], 91_500, 2);
        let spend = plan_spend(&ladder, coarsest, span, budget, n_fields).unwrap();
        let cells =
            u128::from(ladder.cell(u64::MAX, spend.level) - ladder.cell(0, spend.level)) + 1;
        let bound = spend_cells_read_max(&ladder, coarsest, span, spend.cells_per_field);
        assert!(cells <= bound, "{spend:?}: {cells} cells, bound {bound}");
        assert_eq!(spend.level, coarsest, "{spend:?}");
    }

    #[test]
    fn spending_at_a_million_rows_fills_most_of_the_budget() {
        // The default ladder, budget 4000 over one field (1,000 buckets). At 10^6 rows one
        // apart the finest level that fits is level 2 (977 cells), and spending can do no
        // better than grouping level 0's 15,625 cells in 16s: the same 977. At 5 * 10^6 the
        // finest level is 4 (level 3's 1,221 cells do not fit; level 4 has 306), and spending
        // groups level 1 (19,532 cells) in twenties: 977.
        let ladder = Ladder::new(64, 4).unwrap();
        let at = |rows: u64| {
            let span = [0, rows - 1];
            let finest = plan(&ladder, LEVELS_MAX, span, 4000, 1).unwrap();
            let spend = plan_spend(&ladder, LEVELS_MAX, span, 4000, 1).unwrap();
            (
                (
                    finest.level,
                    groups(&ladder, finest.level, finest.group, span),
                ),
                (
                    spend.level,
                    spend.group,
                    groups(&ladder, spend.level, spend.group, span),
                ),
            )
        };
        assert_eq!(at(1_000_000), ((2, 977), (2, 1, 977)));
        assert_eq!(at(5_000_000), ((4, 306), (1, 20, 977)));
    }

    #[test]
    fn small_budgets_fill_at_every_offset_of_the_span() {
        // Where the fill is hardest: few buckets, every span length from 9C cells up and every
        // offset from the origin and from the top of the axis. A fanout of u64::MAX leaves
        // level 0 as the only level with more than one cell, so level 0 is grouped. Zero-
        // anchored groups cannot always make C groups, or even 90% of C: cells 99..=230 make
        // 15 groups at m = 10 and 12 at m = 11, so with C = 14 the best is 12 (86%). What
        // holds is the bound `spend_fill_holds` states.
        let ladder = Ladder::new(1, u64::MAX).unwrap();
        for c in 1u64..=40 {
            for n in 9 * c..9 * c + 60 {
                for lo in (0..200).chain((1..=40).map(|k| u64::MAX - (n - 1) - k + 1)) {
                    let span = [lo, lo + (n - 1)];
                    let spend = plan_spend(&ladder, LEVELS_MAX, span, 4 * c, 1).unwrap();
                    let touched = groups(&ladder, spend.level, spend.group, span);
                    let what = format!(
                        "C {c}, cells {lo}..={}: {spend:?} touches {touched}",
                        lo + (n - 1)
                    );
                    assert!(touched <= u128::from(c), "{what}");
                    assert!(spend_fill_holds(touched, u128::from(n), c), "{what}");
                }
            }
        }
        let fourteen = plan_spend(&ladder, LEVELS_MAX, [99, 230], 4 * 14, 1).unwrap();
        assert_eq!(groups(&ladder, 0, fourteen.group, [99, 230]), 12);
    }

    #[test]
    fn the_fill_search_finds_a_larger_group_that_touches_more() {
        // Cells 98..=143 into at most 5 groups: m = 12 is the smallest that fits and touches 4
        // (8..=11); m = 13 touches 5 (7..=11).
        assert_eq!(smallest_group(98, 143, 4), 12);
        assert_eq!(groups_touched(98, 143, 12), 4);
        assert_eq!(fullest_group(98, 143, 5), 13);
        assert_eq!(groups_touched(98, 143, 13), 5);
    }

    #[test]
    fn fill_names_and_parses_each_choice_once() {
        for fill in SurveyFill::ALL {
            assert_eq!(SurveyFill::parse(fill.name()), Some(fill));
        }
        assert_eq!(SurveyFill::parse("finest"), Some(SurveyFill::FinestLevel));
        assert_eq!(SurveyFill::parse("spend"), Some(SurveyFill::Spend));
        for other in ["", "Spend", "finest-level", "fill"] {
            assert_eq!(SurveyFill::parse(other), None);
        }
        assert_eq!(SurveyFill::default(), SurveyFill::FinestLevel);
    }
}
