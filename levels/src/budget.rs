//! What a point budget buys: which level answers a display read, and how many of its cells merge.
//!
//! A bucket is four placed points, so a budget of `B` points over `F` measured fields buys
//! `B / (4 * F)` cells per field. The answer comes from the **finest** level whose cells over the
//! requested span fit that count; the bound comes from the span alone, so choosing costs no read.
//! If even the coarsest level does not fit, adjacent coarsest cells merge in groups of `m`,
//! anchored at 0 like the grid itself (cell `c` belongs to group `c / m`), with `m` the smallest
//! number for which the groups the span touches fit. The budget is a ceiling, never exceeded.

use std::fmt;

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
