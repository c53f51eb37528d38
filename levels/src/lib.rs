//! strata-levels: the algebra beneath strata's display reads and statistics.
//!
//! - [`Bucket`]: true M4 of one measured field over one cell (first, last, min, max, each placed
//!   on the axis) plus `count`, `sum` and `sum_sq`, with an associative, non-commutative
//!   [`Bucket::merge`].
//! - [`Ladder`]: level `k` has cells `base * fanout^k` wide on a grid anchored at axis 0; level 0
//!   folds rows and level `k + 1` folds level `k`, so a stored level equals a fold of its rows in
//!   any grouping.
//! - [`plan`]: which level (and which grouping of its cells) answers a point budget.
//! - [`Aggregate`]: the statistics vocabulary, its one spelling per value, and its arithmetic.
//!
//! Pure: no I/O, no dependency beyond std and serde.

mod aggregate;
mod bucket;
mod budget;
mod ladder;
mod num;

#[cfg(test)]
mod laws;

pub use aggregate::{Aggregate, Rank};
pub use bucket::{Bucket, Point};
pub use budget::{
    BudgetError, POINTS_PER_BUCKET, Plan, SPEND_GROUP_SEARCH_MAX, SPEND_SPAN_CELLS_PER_BUCKET,
    SurveyFill, cells_per_field, groups_touched, plan, plan_spend, plan_with, spend_cells_read_max,
};
pub use ladder::{Cell, CellCounter, LEVELS_MAX, Ladder, LadderError};
pub use num::{Num, NumKind};
