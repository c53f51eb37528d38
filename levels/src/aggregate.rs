//! The aggregate vocabulary: one enum, one parse table, one arithmetic.
//!
//! | kind        | names                               | reads                   |
//! |-------------|-------------------------------------|-------------------------|
//! | level folds | `min` `max` `mean` `sum` `count`    | stored cells ([`Aggregate::folded`]) |
//! | raw folds   | `p0` `p1` ... `p100`                | raw values ([`Aggregate::scanned`])  |
//!
//! `name` and `parse` are inverses: every aggregate has exactly one spelling (the median is
//! `p50`, there is no `median`), and `parse` answers `None` for anything else (`P50`, `p050`,
//! `p5.5`, `p101`, empty), so the caller can refuse naming the word.
//!
//! Percentiles are nearest-rank: over `n >= 1` values sorted ascending as `v[1] ..= v[n]`, the
//! `p`-th percentile is `v[r]` with `r = max(1, ceil(p * n / 100))`. So `p0` is the minimum,
//! `p100` the maximum, and the answer is always one of the values (never interpolated).

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::bucket::Bucket;
use crate::num::Num;

/// A percentile rank, 0 through 100.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Rank(u8);

impl Rank {
    /// The largest rank.
    pub const MAX: u8 = 100;

    /// A rank.
    ///
    /// # Panics
    /// If `rank > 100`: a rank built in Rust is an authoring decision. A rank that arrived as
    /// text goes through [`Aggregate::parse`], which refuses instead.
    pub fn new(rank: u8) -> Rank {
        assert!(
            rank <= Rank::MAX,
            "percentile rank {rank} is outside 0..=100"
        );
        Rank(rank)
    }

    /// The rank as a number.
    pub fn get(self) -> u8 {
        self.0
    }
}

/// A statistic of one measured field over an axis range.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Aggregate {
    /// The smallest value.
    Min,
    /// The largest value.
    Max,
    /// `sum / count`.
    Mean,
    /// The sum of the values (as f64).
    Sum,
    /// How many values.
    Count,
    /// The nearest-rank percentile.
    Percentile(Rank),
}

impl Aggregate {
    /// The five level folds, in table order.
    pub const LEVEL_FOLDS: [Aggregate; 5] = [
        Aggregate::Min,
        Aggregate::Max,
        Aggregate::Mean,
        Aggregate::Sum,
        Aggregate::Count,
    ];

    /// The percentile of `rank`.
    ///
    /// # Panics
    /// If `rank > 100` (see [`Rank::new`]).
    pub fn p(rank: u8) -> Aggregate {
        Aggregate::Percentile(Rank::new(rank))
    }

    /// Every aggregate: the five level folds, then `p0` through `p100` (106 in all).
    pub fn all() -> impl Iterator<Item = Aggregate> {
        Aggregate::LEVEL_FOLDS
            .into_iter()
            .chain((0..=Rank::MAX).map(Aggregate::p))
    }

    /// The one spelling of this aggregate.
    pub fn name(self) -> String {
        match self {
            Aggregate::Min => "min".to_owned(),
            Aggregate::Max => "max".to_owned(),
            Aggregate::Mean => "mean".to_owned(),
            Aggregate::Sum => "sum".to_owned(),
            Aggregate::Count => "count".to_owned(),
            Aggregate::Percentile(rank) => format!("p{}", rank.get()),
        }
    }

    /// The aggregate spelled `name`, or `None` for every other string.
    pub fn parse(name: &str) -> Option<Aggregate> {
        match name {
            "min" => Some(Aggregate::Min),
            "max" => Some(Aggregate::Max),
            "mean" => Some(Aggregate::Mean),
            "sum" => Some(Aggregate::Sum),
            "count" => Some(Aggregate::Count),
            _ => {
                let digits = name.strip_prefix('p')?;
                // One spelling per value: no sign, no leading zero, ASCII digits only.
                let canonical = !digits.is_empty()
                    && digits.bytes().all(|b| b.is_ascii_digit())
                    && (digits == "0" || !digits.starts_with('0'));
                if !canonical || digits.len() > 3 {
                    return None;
                }
                let rank: u8 = digits.parse().ok()?;
                (rank <= Rank::MAX).then(|| Aggregate::p(rank))
            }
        }
    }

    /// Whether this aggregate is answered from stored level cells (`true`) or from raw values.
    /// The two halves answer to different floors.
    pub fn folds_levels(self) -> bool {
        !matches!(self, Aggregate::Percentile(_))
    }

    /// Reads a level fold off a merged bucket: `min`/`max` in the field's own kind, `mean` and
    /// `sum` as f64, `count` as u64. `None` for a percentile, which no bucket can answer.
    pub fn folded(self, bucket: &Bucket) -> Option<Num> {
        match self {
            Aggregate::Min => Some(bucket.min.value),
            Aggregate::Max => Some(bucket.max.value),
            Aggregate::Mean => Some(Num::F64(bucket.mean())),
            Aggregate::Sum => Some(Num::F64(bucket.sum)),
            Aggregate::Count => Some(Num::U64(bucket.count)),
            Aggregate::Percentile(_) => None,
        }
    }

    /// What this aggregate answers over no rows at all: a count of nothing is 0; every other
    /// statistic of nothing is undefined, `None`.
    pub fn of_no_rows(self) -> Option<Num> {
        match self {
            Aggregate::Count => Some(Num::U64(0)),
            _ => None,
        }
    }

    /// Reads a percentile off raw values (nearest-rank; see the module docs). `None` for an
    /// empty slice or a level fold. Reorders `values` (a selection, not a full sort).
    ///
    /// # Panics
    /// If the values are not all of one kind (one field has one kind).
    pub fn scanned(self, values: &mut [Num]) -> Option<Num> {
        let Aggregate::Percentile(rank) = self else {
            return None;
        };
        let n = values.len();
        if n == 0 {
            return None;
        }
        let rank_1_based = (usize::from(rank.get()) * n).div_ceil(100).max(1);
        let (_, nth, _) =
            values.select_nth_unstable_by(rank_1_based - 1, |a, b| a.cmp_same_kind(*b));
        Some(*nth)
    }
}

impl fmt::Display for Aggregate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

impl Serialize for Aggregate {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.name())
    }
}

impl<'de> Deserialize<'de> for Aggregate {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        Aggregate::parse(&name)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown aggregate {name:?}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u(values: &[u64]) -> Vec<Num> {
        values.iter().map(|&v| Num::U64(v)).collect()
    }

    #[test]
    fn nearest_rank_by_hand_on_ten_values() {
        // Sorted: 10 20 30 40 50 60 70 80 90 100 (n = 10), shuffled on the way in.
        let values = u(&[70, 10, 100, 40, 20, 90, 30, 60, 50, 80]);
        let at = |p: u8| Aggregate::p(p).scanned(&mut values.clone()).unwrap();
        assert_eq!(at(0), Num::U64(10)); // r = max(1, 0) = 1
        assert_eq!(at(1), Num::U64(10)); // ceil(0.1) = 1
        assert_eq!(at(10), Num::U64(10)); // ceil(1.0) = 1
        assert_eq!(at(11), Num::U64(20)); // ceil(1.1) = 2
        assert_eq!(at(50), Num::U64(50)); // ceil(5.0) = 5
        assert_eq!(at(51), Num::U64(60)); // ceil(5.1) = 6
        assert_eq!(at(95), Num::U64(100)); // ceil(9.5) = 10
        assert_eq!(at(100), Num::U64(100)); // 10
    }

    #[test]
    fn nearest_rank_by_hand_on_odd_counts() {
        // n = 3, sorted -5 2 9: p33 -> ceil(0.99) = 1; p34 -> ceil(1.02) = 2; p67 -> ceil(2.01) = 3.
        let values = vec![Num::I64(9), Num::I64(-5), Num::I64(2)];
        let at = |p: u8| Aggregate::p(p).scanned(&mut values.clone()).unwrap();
        assert_eq!(at(33), Num::I64(-5));
        assert_eq!(at(34), Num::I64(2));
        assert_eq!(at(66), Num::I64(2)); // ceil(1.98) = 2
        assert_eq!(at(67), Num::I64(9));
        // n = 1: every rank is the one value.
        assert_eq!(
            Aggregate::p(0).scanned(&mut [Num::F64(2.5)]),
            Some(Num::F64(2.5))
        );
        assert_eq!(
            Aggregate::p(100).scanned(&mut [Num::F64(2.5)]),
            Some(Num::F64(2.5))
        );
        // Floats with duplicates: sorted -1.5 0.25 0.25 7 -> p50 = v[2] = 0.25, p76 = v[4] = 7.
        let floats = vec![
            Num::F64(0.25),
            Num::F64(7.0),
            Num::F64(-1.5),
            Num::F64(0.25),
        ];
        assert_eq!(
            Aggregate::p(50).scanned(&mut floats.clone()),
            Some(Num::F64(0.25))
        );
        assert_eq!(
            Aggregate::p(75).scanned(&mut floats.clone()),
            Some(Num::F64(0.25))
        );
        assert_eq!(
            Aggregate::p(76).scanned(&mut floats.clone()),
            Some(Num::F64(7.0))
        );
    }

    #[test]
    fn empty_and_wrong_half_answer_none() {
        assert_eq!(Aggregate::p(50).scanned(&mut []), None);
        assert_eq!(Aggregate::Mean.scanned(&mut u(&[1, 2])), None);
        let bucket = Bucket::of_row(0, 3, Num::U64(4));
        assert_eq!(Aggregate::p(50).folded(&bucket), None);
    }

    #[test]
    fn a_count_of_no_rows_is_zero_and_every_other_statistic_of_none_is_undefined() {
        assert_eq!(Aggregate::Count.of_no_rows(), Some(Num::U64(0)));
        for aggregate in [
            Aggregate::Min,
            Aggregate::Max,
            Aggregate::Mean,
            Aggregate::Sum,
        ] {
            assert_eq!(aggregate.of_no_rows(), None, "{aggregate}");
        }
        assert_eq!(Aggregate::p(50).of_no_rows(), None);
    }

    #[test]
    fn level_folds_read_the_bucket() {
        let bucket =
            Bucket::of_rows(0, [(1, Num::I64(4)), (2, Num::I64(-2)), (3, Num::I64(7))]).unwrap();
        assert_eq!(Aggregate::Min.folded(&bucket), Some(Num::I64(-2)));
        assert_eq!(Aggregate::Max.folded(&bucket), Some(Num::I64(7)));
        assert_eq!(Aggregate::Sum.folded(&bucket), Some(Num::F64(9.0)));
        assert_eq!(Aggregate::Mean.folded(&bucket), Some(Num::F64(3.0)));
        assert_eq!(Aggregate::Count.folded(&bucket), Some(Num::U64(3)));
    }

    #[test]
    fn parse_refuses_other_spellings() {
        for word in [
            "", "median", "avg", "MIN", "Min", "P50", "p", "p101", "p255", "p256", "p1000", "p050",
            "p00", "p5.5", "p-1", "p+5", " p5", "p5 ", "p٥", "p50%", "q50",
        ] {
            assert_eq!(Aggregate::parse(word), None, "{word:?}");
        }
        assert_eq!(Aggregate::parse("p0"), Some(Aggregate::p(0)));
        assert_eq!(Aggregate::parse("p100"), Some(Aggregate::p(100)));
        assert_eq!(Aggregate::all().count(), 106);
    }

    #[test]
    #[should_panic(expected = "outside 0..=100")]
    fn rank_above_100_built_in_rust_panics() {
        let _ = Aggregate::p(101);
    }
}
