//! The M4 bucket of one measured field and its merge law.

use std::cmp::Ordering;

use serde::{Deserialize, Serialize};

use crate::num::Num;

/// A value placed on the axis: where it occurred and what it was.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// The axis coordinate of the row the value came from.
    pub axis: u64,
    /// The value.
    pub value: Num,
}

/// What one measured field did across one cell of the axis: true M4 (first, last, min, max, each
/// placed), plus the accumulators `count`, `sum` and `sum_sq` from which mean and variance fold.
///
/// No mean is stored: a stored mean cannot be merged.
///
/// # Tie rules (pinned; two adapters must answer alike)
/// - `first` is the leftmost point by axis; on an axis tie it keeps the **earlier** row.
/// - `last` is the rightmost point by axis; on an axis tie it keeps the **later** row.
/// - `min` and `max` keep the **earlier** row on a value tie.
///
/// "Earlier" means the left operand of [`Bucket::merge`]: within a partition, publish order;
/// across partitions, track-key order.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Bucket {
    /// The field's index in its stream's declaration. Buckets of two fields never merge.
    pub field: u16,
    /// The leftmost point.
    pub first: Point,
    /// The rightmost point.
    pub last: Point,
    /// The smallest value and where it occurred.
    pub min: Point,
    /// The largest value and where it occurred.
    pub max: Point,
    /// How many rows were folded. Always at least 1.
    pub count: u64,
    /// The sum of the values, as `f64`.
    pub sum: f64,
    /// The sum of the squared values, as `f64`.
    pub sum_sq: f64,
}

impl Bucket {
    /// The bucket of one row.
    pub fn of_row(field: u16, axis: u64, value: Num) -> Bucket {
        let point = Point { axis, value };
        let v = value.as_f64();
        Bucket {
            field,
            first: point,
            last: point,
            min: point,
            max: point,
            count: 1,
            sum: v,
            sum_sq: v * v,
        }
    }

    /// Folds a run of rows, in order, into one bucket; `None` for an empty run.
    pub fn of_rows(field: u16, rows: impl IntoIterator<Item = (u64, Num)>) -> Option<Bucket> {
        let mut rows = rows.into_iter();
        let (axis, value) = rows.next()?;
        let mut bucket = Bucket::of_row(field, axis, value);
        for (axis, value) in rows {
            bucket.absorb(&Bucket::of_row(field, axis, value));
        }
        Some(bucket)
    }

    /// The bucket of `self` followed by `later`. Associative, not commutative.
    ///
    /// # Panics
    /// If the buckets belong to different fields, or their values are of different kinds: both
    /// are authoring errors, never a consequence of input.
    #[must_use]
    pub fn merge(&self, later: &Bucket) -> Bucket {
        let mut merged = *self;
        merged.absorb(later);
        merged
    }

    /// Merges `later` into `self` in place (`self` stays the earlier operand).
    ///
    /// # Panics
    /// As [`Bucket::merge`].
    pub fn absorb(&mut self, later: &Bucket) {
        assert_eq!(
            self.field, later.field,
            "merged buckets of two different fields"
        );
        // Each pick is an arg-min or arg-max with a fixed side winning ties, and such a pick is
        // associative; that is the whole of the merge law for the placed points.
        if later.first.axis < self.first.axis {
            self.first = later.first;
        }
        if later.last.axis >= self.last.axis {
            self.last = later.last;
        }
        if later.min.value.cmp_same_kind(self.min.value) == Ordering::Less {
            self.min = later.min;
        }
        if later.max.value.cmp_same_kind(self.max.value) == Ordering::Greater {
            self.max = later.max;
        }
        self.count += later.count;
        self.sum += later.sum;
        self.sum_sq += later.sum_sq;
    }

    /// `sum / count`.
    pub fn mean(&self) -> f64 {
        self.sum / self.count as f64
    }
}

#[cfg(test)]
#[expect(
    clippy::float_cmp,
    reason = "hand-worked sums of small integers are exact"
)]
mod tests {
    use super::*;

    fn u(field: u16, axis: u64, v: u64) -> Bucket {
        Bucket::of_row(field, axis, Num::U64(v))
    }

    #[test]
    fn axis_tie_first_keeps_earlier_last_keeps_later() {
        // Three rows on one axis coordinate: 7, 9, 8 (in publish order).
        let merged = u(0, 5, 7).merge(&u(0, 5, 9)).merge(&u(0, 5, 8));
        assert_eq!(
            merged.first,
            Point {
                axis: 5,
                value: Num::U64(7)
            }
        );
        assert_eq!(
            merged.last,
            Point {
                axis: 5,
                value: Num::U64(8)
            }
        );
        assert_eq!(merged.min.value, Num::U64(7));
        assert_eq!(merged.max.value, Num::U64(9));
        assert_eq!(merged.count, 3);
        assert_eq!(merged.sum, 24.0);
        assert_eq!(merged.sum_sq, 49.0 + 81.0 + 64.0);
    }

    #[test]
    fn value_tie_min_and_max_keep_earlier_row() {
        // Equal values at axes 1, 2, 3: min and max both stay at axis 1.
        let merged = u(0, 1, 4).merge(&u(0, 2, 4)).merge(&u(0, 3, 4));
        assert_eq!(
            merged.min,
            Point {
                axis: 1,
                value: Num::U64(4)
            }
        );
        assert_eq!(
            merged.max,
            Point {
                axis: 1,
                value: Num::U64(4)
            }
        );
        assert_eq!(merged.first.axis, 1);
        assert_eq!(merged.last.axis, 3);
    }

    #[test]
    fn merge_is_not_commutative_on_ties() {
        let a = u(0, 5, 1);
        let b = u(0, 5, 2);
        assert_eq!(a.merge(&b).first.value, Num::U64(1));
        assert_eq!(b.merge(&a).first.value, Num::U64(2));
        assert_eq!(a.merge(&b).last.value, Num::U64(2));
        assert_eq!(b.merge(&a).last.value, Num::U64(1));
    }

    #[test]
    fn out_of_order_axes_pick_by_axis_not_by_position() {
        // A later operand whose first point lies to the left wins `first`.
        let right = Bucket::of_rows(1, [(10, Num::I64(-3)), (11, Num::I64(6))]).unwrap();
        let left = Bucket::of_rows(1, [(2, Num::I64(5)), (4, Num::I64(-8))]).unwrap();
        let merged = right.merge(&left);
        assert_eq!(
            merged.first,
            Point {
                axis: 2,
                value: Num::I64(5)
            }
        );
        assert_eq!(
            merged.last,
            Point {
                axis: 11,
                value: Num::I64(6)
            }
        );
        assert_eq!(
            merged.min,
            Point {
                axis: 4,
                value: Num::I64(-8)
            }
        );
        assert_eq!(
            merged.max,
            Point {
                axis: 11,
                value: Num::I64(6)
            }
        );
        assert_eq!(merged.sum, 0.0);
        assert_eq!(merged.sum_sq, 9.0 + 36.0 + 25.0 + 64.0);
    }

    #[test]
    fn large_integers_stay_exact_in_extremes() {
        let big = u64::MAX - 1;
        let merged = u(0, 0, big).merge(&u(0, 1, u64::MAX));
        assert_eq!(merged.max.value, Num::U64(u64::MAX));
        assert_eq!(merged.min.value, Num::U64(big));
    }

    #[test]
    #[should_panic(expected = "two different fields")]
    fn merging_two_fields_panics() {
        let _ = u(0, 1, 1).merge(&u(1, 2, 2));
    }
}
