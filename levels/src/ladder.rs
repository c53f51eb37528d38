//! The level ladder: a zero-anchored grid per level, and the folds that build it.
//!
//! Level `k` has cells of width `base * fanout^k` on a grid anchored at axis 0; a row at `axis`
//! lies in cell `axis / width`. Because every width divides the next, the parent of cell `c` at
//! level `k` is cell `c / fanout` at level `k + 1`, exactly, for every axis up to `u64::MAX`.
//! A width of 2^64 or more puts every axis in cell 0; the ladder never needs a level beyond the
//! first such one, which is at most [`LEVELS_MAX`].

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::bucket::{Bucket, Point};
use crate::num::Num;

/// The highest level index a ladder can have. With `base >= 1` and `fanout >= 2`, the width of
/// level 64 is at least 2^64, so one cell of it covers every axis value.
pub const LEVELS_MAX: u8 = 64;

/// Axis values are u64, so a width of 2^64 already covers them all; wider ones behave the same.
const WIDTH_SATURATED: u128 = 1 << 64;

/// The shape of a stream's level ladder.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Ladder {
    base: u64,
    fanout: u64,
}

/// A ladder that cannot be built.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LadderError {
    /// `base` must be at least 1.
    BaseZero,
    /// `fanout` must be at least 2, or levels would not coarsen.
    FanoutTooSmall {
        /// The fanout that was asked for.
        fanout: u64,
    },
}

impl fmt::Display for LadderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LadderError::BaseZero => write!(f, "ladder base must be at least 1, got 0"),
            LadderError::FanoutTooSmall { fanout } => {
                write!(f, "ladder fanout must be at least 2, got {fanout}")
            }
        }
    }
}

impl std::error::Error for LadderError {}

/// One cell of one level: its index on that level's grid and the bucket of its rows.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Cell {
    /// `axis / width` for every row the cell folds.
    pub index: u64,
    /// The fold of those rows.
    pub bucket: Bucket,
}

impl Ladder {
    /// A ladder with level-0 cells `base` wide, each level `fanout` times wider than the last.
    pub fn new(base: u64, fanout: u64) -> Result<Ladder, LadderError> {
        if base == 0 {
            return Err(LadderError::BaseZero);
        }
        if fanout < 2 {
            return Err(LadderError::FanoutTooSmall { fanout });
        }
        Ok(Ladder { base, fanout })
    }

    /// The width of level-0 cells.
    pub fn base(&self) -> u64 {
        self.base
    }

    /// How many cells of one level make one cell of the next.
    pub fn fanout(&self) -> u64 {
        self.fanout
    }

    /// The cell width of `level`, saturated at 2^64 (every wider grid has one cell: cell 0).
    pub fn width(&self, level: u8) -> u128 {
        let mut width = u128::from(self.base);
        for _ in 0..level {
            if width >= WIDTH_SATURATED {
                break;
            }
            width = width.saturating_mul(u128::from(self.fanout));
        }
        width.min(WIDTH_SATURATED)
    }

    /// The cell of `level` that holds `axis`.
    pub fn cell(&self, axis: u64, level: u8) -> u64 {
        // A width that does not fit u64 exceeds every axis value: all of them lie in cell 0.
        u64::try_from(self.width(level)).map_or(0, |width| axis / width)
    }

    /// The parent of `cell` one level up.
    pub fn parent(&self, cell: u64) -> u64 {
        cell / self.fanout
    }

    /// The inclusive axis span of `cell` at `level`, clamped to `u64::MAX`; `None` for a cell
    /// that starts beyond the axis.
    pub fn span(&self, level: u8, cell: u64) -> Option<[u64; 2]> {
        let width = self.width(level);
        let start = u128::from(cell) * width;
        let start = u64::try_from(start).ok()?;
        // `width <= 2^64`, so `width - 1` fits u64.
        let extent = u64::try_from(width - 1).unwrap_or(u64::MAX);
        Some([start, start.saturating_add(extent)])
    }

    /// The lowest level at which one cell covers the whole of `[lo, hi]`: the top of a ladder
    /// built over that range. Levels above it hold the same single bucket under another index.
    pub fn top_level(&self, lo: u64, hi: u64) -> u8 {
        let (lo, hi) = (lo.min(hi), lo.max(hi));
        let mut level = 0;
        while self.cell(lo, level) != self.cell(hi, level) {
            level += 1;
        }
        debug_assert!(level <= LEVELS_MAX);
        level
    }

    /// Folds rows `(axis, value)` of one field, in publish order, into level-0 cells, ascending.
    ///
    /// # Panics
    /// If an axis goes backwards: within a partition the axis is non-decreasing (publish refuses
    /// anything else), so this is a broken invariant of the caller.
    pub fn fold_rows(&self, field: u16, rows: impl IntoIterator<Item = (u64, Num)>) -> Vec<Cell> {
        self.fold_rows_with_capacity(field, rows, 0)
    }

    /// As [`Ladder::fold_rows`], with room for `capacity` cells made up front: a caller that
    /// knows a bound (the cells its rows' axis range spans) has the fold allocate once, rather
    /// than grow a vector by doubling, which holds up to three times the cells at its peak.
    ///
    /// # Panics
    /// As [`Ladder::fold_rows`].
    pub fn fold_rows_with_capacity(
        &self,
        field: u16,
        rows: impl IntoIterator<Item = (u64, Num)>,
        capacity: usize,
    ) -> Vec<Cell> {
        let mut cells: Vec<Cell> = Vec::with_capacity(capacity);
        let mut last_axis = 0;
        for (axis, value) in rows {
            assert!(
                axis >= last_axis,
                "axis went backwards: {axis} after {last_axis}"
            );
            last_axis = axis;
            let index = self.cell(axis, 0);
            let row = Bucket::of_row(field, axis, value);
            match cells.last_mut() {
                Some(cell) if cell.index == index => cell.bucket.absorb(&row),
                _ => cells.push(Cell { index, bucket: row }),
            }
        }
        cells
    }

    /// As [`Ladder::fold_rows_with_capacity`] for an `f64` field given as slices: the same
    /// cells, bit for bit, folded in one pass over the slices without a bucket per row (a seal
    /// folds every row it writes, and this is most of its CPU). Ties as [`Bucket::absorb`]
    /// keeps them: the first row is `first`, the last `last`, the earliest extreme (by
    /// `total_cmp`) is `min` or `max`; `sum` and `sum_sq` add in row order.
    ///
    /// # Panics
    /// If the slices differ in length or the axis goes backwards, as `fold_rows` does.
    pub fn fold_f64_rows(
        &self,
        field: u16,
        axis: &[u64],
        values: &[f64],
        capacity: usize,
    ) -> Vec<Cell> {
        assert_eq!(axis.len(), values.len(), "an axis value per row");
        let mut cells: Vec<Cell> = Vec::with_capacity(capacity);
        let width = self.width(0);
        let point = |row: usize| Point {
            axis: axis[row],
            value: Num::F64(values[row]),
        };
        let mut row = 0;
        while row < axis.len() {
            assert!(
                row == 0 || axis[row] >= axis[row - 1],
                "axis went backwards: {} after {}",
                axis[row],
                axis[row - 1]
            );
            let index = self.cell(axis[row], 0);
            // Rows below the next cell's first axis value are this cell's.
            let next_cell = (u128::from(index) + 1) * width;
            let start = row;
            let (mut min_row, mut max_row) = (row, row);
            let mut sum = values[row];
            let mut sum_sq = values[row] * values[row];
            row += 1;
            while row < axis.len() && u128::from(axis[row]) < next_cell {
                assert!(
                    axis[row] >= axis[row - 1],
                    "axis went backwards: {} after {}",
                    axis[row],
                    axis[row - 1]
                );
                let v = values[row];
                if v.total_cmp(&values[min_row]).is_lt() {
                    min_row = row;
                }
                if v.total_cmp(&values[max_row]).is_gt() {
                    max_row = row;
                }
                sum += v;
                sum_sq += v * v;
                row += 1;
            }
            cells.push(Cell {
                index,
                bucket: Bucket {
                    field,
                    first: point(start),
                    last: point(row - 1),
                    min: point(min_row),
                    max: point(max_row),
                    count: (row - start) as u64,
                    sum,
                    sum_sq,
                },
            });
        }
        cells
    }

    /// The lowest level at which one cell holds both `x` and `y` (`x <= y`): two consecutive
    /// rows at `x` and `y` are folded together from this level up, and lie in separate cells
    /// beneath it. Constant time for a base and fanout that are powers of two; otherwise a
    /// binary search of the levels (each a division).
    pub fn shared_level(&self, x: u64, y: u64) -> u8 {
        let (x, y) = (x.min(y), x.max(y));
        if self.base.is_power_of_two() && self.fanout.is_power_of_two() {
            let shift = self.base.trailing_zeros();
            let differ = (x >> shift) ^ (y >> shift);
            // Bits that still differ at level 0; each level drops log2(fanout) of them.
            let bits = u64::BITS - differ.leading_zeros();
            let per_level = self.fanout.trailing_zeros();
            let level = bits.div_ceil(per_level);
            return u8::try_from(level).map_or(LEVELS_MAX, |l| l.min(LEVELS_MAX));
        }
        let (mut lo, mut hi) = (0u8, LEVELS_MAX);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.cell(x, mid) == self.cell(y, mid) {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        lo
    }

    /// The shared level of each row with the one before it (`shared[i]` for rows `i` and
    /// `i + 1`), for an axis in publish order. From these alone a fold knows the cells of every
    /// level: rows `i` and `i + 1` share a cell of level `k` exactly when `shared[i] <= k`.
    ///
    /// # Panics
    /// If the axis goes backwards.
    pub fn shared_levels(&self, axis: &[u64]) -> Vec<u8> {
        assert_ascending(axis);
        let mut shared = Vec::with_capacity(axis.len().saturating_sub(1));
        shared_levels_into(self, axis, &mut shared);
        shared
    }

    /// How many cells each level `0 ..= top` holds for rows whose [`Ladder::shared_levels`]
    /// are `shared` (one row or more): a cell begins wherever two consecutive rows do not
    /// share one.
    pub fn cells_per_level(shared: &[u8], top: u8) -> Vec<u64> {
        let mut starting_at = [0u64; LEVELS_MAX as usize + 2];
        for &s in shared {
            // Rows that first share a cell at level `s` are in different cells beneath it.
            starting_at[usize::from(s)] += 1;
        }
        counts_of(&starting_at, top)
    }
}

/// [`Ladder::shared_level`] for every pair of consecutive rows of `axis` (ascending), appended
/// to `out`. On a grid of powers of two the level is how many bits of the two cell indexes at
/// level 0 differ, divided (rounding up) by the bits a level drops: one tight pass counts the
/// bits, a second divides by a multiply and a shift where a level drops more than one bit.
/// (`shared_level` per pair, with its division, ran at 17 ns a pair here; this at 2.5.)
// The two casts to u8 hold at most 64 (bits of a u64): checked conversions would keep the
// loops from vectorising.
#[allow(clippy::cast_possible_truncation)]
fn shared_levels_into(ladder: &Ladder, axis: &[u64], out: &mut Vec<u8>) {
    let start = out.len();
    if !(ladder.base.is_power_of_two() && ladder.fanout.is_power_of_two()) {
        out.extend(
            axis.windows(2)
                .map(|pair| ladder.shared_level(pair[0], pair[1])),
        );
        return;
    }
    // Bits that differ at level 0, `(x >> shift) ^ (y >> shift)`, are those of `x ^ y` above
    // the lowest `shift`: counted without a shift by a variable in the loop, which measured
    // 5x slower here.
    let shift = u8::try_from(ladder.base.trailing_zeros()).expect("at most 63");
    out.extend(axis.windows(2).map(|pair| {
        // At most 64 (= LEVELS_MAX): a u8.
        let differ = (u64::BITS - (pair[0] ^ pair[1]).leading_zeros()) as u8;
        differ.saturating_sub(shift)
    }));
    let per_level = ladder.fanout.trailing_zeros();
    if per_level > 1 {
        // `n * reciprocal >> 16` is `n / per_level` for n < 128 and per_level <= 64: the error
        // n * (ceil(2^16/d) - 2^16/d) / 2^16 stays below 1/d.
        let reciprocal = (1u32 << 16).div_ceil(per_level);
        for level in &mut out[start..] {
            *level = (((u32::from(*level) + per_level - 1) * reciprocal) >> 16) as u8;
        }
    }
}

/// # Panics
/// If `axis` goes backwards anywhere, naming the first pair that does.
fn assert_ascending(axis: &[u64]) {
    // One pass the compiler can vectorise; the pair is looked for only to say which.
    if !axis.windows(2).all(|pair| pair[0] <= pair[1]) {
        let pair = axis
            .windows(2)
            .find(|pair| pair[1] < pair[0])
            .expect("a pair went backwards");
        panic!("axis went backwards: {} after {}", pair[1], pair[0]);
    }
}

/// Pairs of rows whose shared levels [`CellCounter::feed`] works out at a time.
const COUNT_CHUNK: usize = 4096;

/// Counts the cells each level holds for rows whose axis is fed a slice at a time, in order:
/// [`Ladder::cells_per_level`] of the rows' [`Ladder::shared_levels`], for rows that are never
/// in one slice (a merge's, read a chunk at a time from several files).
#[derive(Clone, Debug)]
pub struct CellCounter {
    ladder: Ladder,
    /// The last axis value fed.
    previous: Option<u64>,
    /// How many pairs of consecutive rows first share a cell at each level.
    starting_at: [u64; LEVELS_MAX as usize + 2],
}

impl CellCounter {
    /// A counter for `ladder`'s grid, fed nothing yet.
    pub fn new(ladder: Ladder) -> CellCounter {
        CellCounter {
            ladder,
            previous: None,
            starting_at: [0; LEVELS_MAX as usize + 2],
        }
    }

    /// Feeds the next rows' axis values.
    ///
    /// # Panics
    /// If the axis goes backwards, within `axis` or from the last value fed.
    pub fn feed(&mut self, axis: &[u64]) {
        let Some((&last, _)) = axis.split_last() else {
            return;
        };
        if let Some(previous) = self.previous {
            assert!(
                axis[0] >= previous,
                "axis went backwards: {} after {previous}",
                axis[0]
            );
            self.starting_at[usize::from(self.ladder.shared_level(previous, axis[0]))] += 1;
        }
        assert_ascending(axis);
        // A chunk of pairs at a time, so the levels are counted in a vectorised pass.
        let mut shared = Vec::with_capacity(COUNT_CHUNK);
        let mut start = 0;
        while start + 1 < axis.len() {
            let end = (start + COUNT_CHUNK + 1).min(axis.len());
            shared.clear();
            shared_levels_into(&self.ladder, &axis[start..end], &mut shared);
            for &level in &shared {
                self.starting_at[usize::from(level)] += 1;
            }
            start = end - 1;
        }
        self.previous = Some(last);
    }

    /// Cells each level `0 ..= top` holds for the rows fed (at least one).
    pub fn counts(&self, top: u8) -> Vec<u64> {
        counts_of(&self.starting_at, top)
    }
}

/// Cells per level `0 ..= top` from how many pairs of consecutive rows first share a cell at
/// each level.
fn counts_of(starting_at: &[u64; LEVELS_MAX as usize + 2], top: u8) -> Vec<u64> {
    let mut counts = Vec::with_capacity(usize::from(top) + 1);
    // Cells at level k: 1 + the pairs that share nothing at k (s > k).
    let mut beyond: u64 = starting_at.iter().sum();
    for starting in &starting_at[..=usize::from(top)] {
        beyond -= starting;
        counts.push(1 + beyond);
    }
    counts
}

impl Ladder {
    /// The cells of `level` for rows in publish order, exactly as folding them into level 0
    /// and then [`Ladder::fold_level`] `level` times would give them, bit for bit, without
    /// building the levels beneath: each level's cell is the fold, left to right, of its
    /// children, and a cell with one child is that child, so only the folds where two pieces
    /// meet are done (fewer than the rows). `shared` is [`Ladder::shared_levels`] of the rows'
    /// axis; `value(i)` is row `i`'s value.
    ///
    /// This is how a level that is not stored is answered from the raw rows, and how a seal
    /// builds the lowest level it stores: the merge law makes the two the same cells.
    ///
    /// # Panics
    /// If `shared` is not one shorter than `axis` (for rows), or `level > LEVELS_MAX`.
    pub fn fold_rows_to(
        &self,
        field: u16,
        axis: &[u64],
        shared: &[u8],
        value: impl Fn(usize) -> Num,
        level: u8,
    ) -> Vec<Cell> {
        if !fold_args_hold(axis, shared, level) {
            return Vec::new();
        }
        let folded = tree_fold(
            shared,
            level,
            |row| Bucket::of_row(field, axis[row], value(row)),
            Bucket::absorb,
        );
        folded
            .into_iter()
            .map(|bucket| Cell {
                index: self.cell(bucket.first.axis, level),
                bucket,
            })
            .collect()
    }

    /// As [`Ladder::fold_rows_to`] for an `f64` field given as a slice: the same cells, bit for
    /// bit, faster. Only `sum` and `sum_sq` depend on how the rows are grouped (every other
    /// member is an exact pick or count, the same in any grouping), so those two are folded
    /// along the levels' tree as plain pairs of floats and the rest read off the cell's rows in
    /// one pass, as [`Ladder::fold_f64_rows`] does.
    ///
    /// # Panics
    /// As [`Ladder::fold_rows_to`], or if `values` is not as long as `axis`.
    pub fn fold_f64_rows_to(
        &self,
        field: u16,
        axis: &[u64],
        shared: &[u8],
        values: &[f64],
        level: u8,
    ) -> Vec<Cell> {
        assert_eq!(axis.len(), values.len(), "a value per row");
        if !fold_args_hold(axis, shared, level) {
            return Vec::new();
        }
        let point = |row: usize| Point {
            axis: axis[row],
            value: Num::F64(values[row]),
        };
        let mut cells = Vec::new();
        let mut stack = Vec::new();
        let mut start = 0;
        while start < axis.len() {
            let (end, [sum, sum_sq], min_row, max_row) =
                f64_cell(shared, level, values, start, &mut stack);
            cells.push(Cell {
                index: self.cell(axis[start], level),
                bucket: Bucket {
                    field,
                    first: point(start),
                    last: point(end - 1),
                    min: point(min_row),
                    max: point(max_row),
                    count: (end - start) as u64,
                    sum,
                    sum_sq,
                },
            });
            start = end;
        }
        cells
    }

    /// Folds the cells of one level (ascending by index, one field) into the next level's cells.
    ///
    /// # Panics
    /// If `cells` is not strictly ascending by index.
    pub fn fold_level(&self, cells: &[Cell]) -> Vec<Cell> {
        // Parents are distinct and lie between the first cell's and the last's: room for that
        // many, or for one per cell if fewer, is always enough and, on a dense axis, exact.
        let spanned = match (cells.first(), cells.last()) {
            (Some(first), Some(last)) => {
                let span = self
                    .parent(last.index)
                    .saturating_sub(self.parent(first.index));
                usize::try_from(span).map_or(usize::MAX, |s| s.saturating_add(1))
            }
            _ => 0,
        };
        let mut parents: Vec<Cell> = Vec::with_capacity(spanned.min(cells.len()));
        let mut previous: Option<u64> = None;
        for cell in cells {
            assert!(
                previous.is_none_or(|p| p < cell.index),
                "cells out of order: {} after {previous:?}",
                cell.index
            );
            previous = Some(cell.index);
            let index = self.parent(cell.index);
            match parents.last_mut() {
                Some(parent) if parent.index == index => parent.bucket.absorb(&cell.bucket),
                _ => parents.push(Cell {
                    index,
                    bucket: cell.bucket,
                }),
            }
        }
        parents
    }
}

/// Whether rows `axis` with `shared` levels are there to fold to `level` (false: no rows).
///
/// # Panics
/// If `shared` is not one shorter than a non-empty `axis`, or `level > LEVELS_MAX`.
fn fold_args_hold(axis: &[u64], shared: &[u8], level: u8) -> bool {
    assert!(level <= LEVELS_MAX, "level {level} is beyond {LEVELS_MAX}");
    if axis.is_empty() {
        return false;
    }
    assert_eq!(
        shared.len() + 1,
        axis.len(),
        "a shared level per pair of rows"
    );
    true
}

/// The cell of `level` that starts at row `start`, in one pass over its rows: the first row
/// past it; its `sum` and `sum_sq`; and its min and max rows by `f64::total_cmp` (the earlier
/// on a tie). The sums are folded along the levels' tree as [`tree_fold`] folds them (the same
/// additions in the same grouping, so the same bits), with a stack of the open cells' pending
/// folds; `stack` is scratch the caller keeps from cell to cell.
fn f64_cell(
    shared: &[u8],
    level: u8,
    values: &[f64],
    start: usize,
    stack: &mut Vec<(u8, [f64; 2])>,
) -> (usize, [f64; 2], usize, usize) {
    // `f64::total_cmp`'s order as integers, computed once a row.
    let key = |v: f64| {
        let bits = v.to_bits().cast_signed();
        bits ^ ((bits >> 63).cast_unsigned() >> 1).cast_signed()
    };
    let first = values[start];
    let (mut min_row, mut max_row) = (start, start);
    let (mut min_key, mut max_key) = (key(first), key(first));
    // One pass, the tree's grouping kept exactly: `acc` folds the rows of the open level-0
    // cell; `stack` holds, lowest level on top, `(k, fold)` for each open cell k that has
    // finished children, the fold of them. A boundary between two rows that first share a
    // cell at level `s` closes the open cells beneath `s`: each closed cell is its pending
    // children's fold then its open child's (left to right; a cell of one child is that
    // child), and the last closed is a finished child of the open cell at `s`. Addition is
    // commutative, so `pending + closed` is the tree's `pending ⊕ closed` bit for bit; each
    // row pushes and pops at most once, amortised, where a pass a level over the cell's rows
    // (#50's first fold) cost a pass per boundary level.
    stack.clear();
    let mut acc = [first, first * first];
    let mut row = start + 1;
    while row < values.len() {
        let s = shared[row - 1];
        if s > level {
            break;
        }
        let v = values[row];
        let k = key(v);
        if k < min_key {
            (min_key, min_row) = (k, row);
        }
        if k > max_key {
            (max_key, max_row) = (k, row);
        }
        if s == 0 {
            acc[0] += v;
            acc[1] += v * v;
        } else {
            while let Some(&(l, pending)) = stack.last()
                && l < s
            {
                acc = [pending[0] + acc[0], pending[1] + acc[1]];
                stack.pop();
            }
            match stack.last_mut() {
                Some((l, pending)) if *l == s => {
                    pending[0] += acc[0];
                    pending[1] += acc[1];
                }
                _ => stack.push((s, acc)),
            }
            acc = [v, v * v];
        }
        row += 1;
    }
    // The cell at `level` closes: every open cell beneath it and it.
    while let Some((_, pending)) = stack.pop() {
        acc = [pending[0] + acc[0], pending[1] + acc[1]];
    }
    (row, acc, min_row, max_row)
}

/// Folds rows along the levels' tree up to `level`, one value per cell of `level` in row
/// order: a cell of each level is the fold, left to right, of its children's values, and a cell
/// with one child is that child, so only the folds where two pieces meet are done (fewer than
/// the rows). `shared[i]` is the lowest level whose cell holds rows `i` and `i + 1`
/// ([`Ladder::shared_levels`]); `leaf(i)` is row `i`'s own value; `absorb(acc, later)` folds
/// `later` into `acc`, `acc` earlier.
fn tree_fold<T>(
    shared: &[u8],
    level: u8,
    leaf: impl Fn(usize) -> T,
    absorb: impl Fn(&mut T, &T),
) -> Vec<T> {
    let mut out = Vec::new();
    // The open cell of every level 0 ..= `level` holds the latest row. `pending` keeps,
    // descending by level (level 0 last), the fold of each open cell's finished children
    // wherever it has any: `(k, acc)` is the fold of open cell k's children before its open
    // child. Level 0's entry is the fold of its rows so far, and is always there.
    let mut pending: Vec<(u8, T)> = Vec::with_capacity(8);
    pending.push((0, leaf(0)));
    // The value of the open cell at `upto`: its children's fold, then its open child's.
    let close = |pending: &mut Vec<(u8, T)>, upto: u8| -> T {
        let (_, mut v) = pending.pop().expect("level 0 is open");
        while pending.last().is_some_and(|(k, _)| *k <= upto) {
            let (_, mut acc) = pending.pop().expect("just seen");
            absorb(&mut acc, &v);
            v = acc;
        }
        v
    };
    for row in 1..=shared.len() {
        let s = shared[row - 1];
        let this = leaf(row);
        if s == 0 {
            absorb(&mut pending.last_mut().expect("level 0 is open").1, &this);
            continue;
        }
        if s > level {
            // The open cell of `level` is finished: every open cell beneath it is too.
            out.push(close(&mut pending, level));
            pending.clear();
            pending.push((0, this));
            continue;
        }
        // Open cells beneath `s` finish; the one at `s` gains a finished child.
        let v = close(&mut pending, s - 1);
        match pending.last_mut() {
            Some((k, acc)) if *k == s => absorb(acc, &v),
            _ => pending.push((s, v)),
        }
        pending.push((0, this));
    }
    out.push(close(&mut pending, level));
    out
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// Values with ties (equal values, and -0.0 beside +0.0) so the tie rules are exercised.
    fn value() -> impl Strategy<Value = f64> {
        prop_oneof![Just(0.0), Just(-0.0), Just(1.5), Just(-1.5), -1e12f64..1e12,]
    }

    proptest! {
        #[test]
        fn folding_f64_slices_equals_folding_rows(
            base in 1u64..20,
            fanout in 2u64..5,
            start in prop_oneof![0u64..100, (u64::MAX - 1000)..=u64::MAX],
            rows in prop::collection::vec((0u64..4, value()), 1..300),
        ) {
            let ladder = Ladder::new(base, fanout).unwrap();
            let mut t = start;
            let (axis, values): (Vec<u64>, Vec<f64>) = rows
                .into_iter()
                .map(|(step, v)| {
                    t = t.saturating_add(step);
                    (t, v)
                })
                .unzip();
            let by_rows =
                ladder.fold_rows(7, axis.iter().copied().zip(values.iter().map(|&v| Num::F64(v))));
            let by_slices = ladder.fold_f64_rows(7, &axis, &values, 0);
            // Bit for bit: compare the values' bits, not their float equality.
            let bits = |cells: &[Cell]| format!("{cells:?}");
            prop_assert_eq!(bits(&by_slices), bits(&by_rows));
        }
    }

    proptest! {
        #[test]
        fn folding_to_a_level_equals_folding_every_level_beneath(
            base in prop_oneof![1u64..20, Just(1u64), Just(64), Just(1024)],
            fanout in prop_oneof![2u64..6, Just(2u64), Just(4), Just(16)],
            start in prop_oneof![0u64..100, (u64::MAX - 1000)..=u64::MAX],
            rows in prop::collection::vec((prop_oneof![0u64..4, 0u64..3000], value()), 1..300),
            level in 0u8..12,
        ) {
            let ladder = Ladder::new(base, fanout).unwrap();
            let mut t = start;
            let (axis, values): (Vec<u64>, Vec<f64>) = rows
                .into_iter()
                .map(|(step, v)| {
                    t = t.saturating_add(step);
                    (t, v)
                })
                .unzip();
            let mut naive = ladder.fold_f64_rows(3, &axis, &values, 0);
            for _ in 0..level {
                naive = ladder.fold_level(&naive);
            }
            let shared = ladder.shared_levels(&axis);
            let direct = ladder.fold_rows_to(3, &axis, &shared, |i| Num::F64(values[i]), level);
            let bits = |cells: &[Cell]| format!("{cells:?}");
            prop_assert_eq!(bits(&direct), bits(&naive));
            let sliced = ladder.fold_f64_rows_to(3, &axis, &shared, &values, level);
            prop_assert_eq!(bits(&sliced), bits(&naive));
            // The cell counts read off the shared levels are the levels' own.
            let top = ladder.top_level(axis[0], axis[axis.len() - 1]).max(level);
            let counts = Ladder::cells_per_level(&shared, top);
            let mut cells = ladder.fold_f64_rows(3, &axis, &values, 0);
            for (k, &count) in counts.iter().enumerate() {
                prop_assert_eq!(count, cells.len() as u64, "level {}", k);
                cells = ladder.fold_level(&cells);
            }
            // And so are those counted a slice at a time, cut anywhere (a merge's inputs).
            let mut counter = CellCounter::new(ladder);
            let cut = (level as usize * 7) % axis.len();
            counter.feed(&axis[..cut]);
            counter.feed(&[]);
            counter.feed(&axis[cut..]);
            prop_assert_eq!(counter.counts(top), counts);
        }

        #[test]
        fn the_shared_level_is_the_lowest_whose_cell_holds_both(
            base in prop_oneof![1u64..100, Just(1u64), Just(8), Just(u64::MAX)],
            fanout in prop_oneof![2u64..10, Just(2u64), Just(4), Just(u64::MAX)],
            x in prop_oneof![any::<u64>(), 0u64..1000],
            gap in prop_oneof![any::<u64>(), 0u64..1000],
        ) {
            let ladder = Ladder::new(base, fanout).unwrap();
            let y = x.saturating_add(gap);
            let by_walk = (0..=LEVELS_MAX).find(|&k| ladder.cell(x, k) == ladder.cell(y, k));
            prop_assert_eq!(Some(ladder.shared_level(x, y)), by_walk);
            // And the pass over many pairs (`shared_levels_into`, without a division on a
            // power-of-two grid) agrees.
            prop_assert_eq!(ladder.shared_levels(&[x, y]), by_walk.into_iter().collect::<Vec<_>>());
        }
    }

    /// `CellCounter::feed` works out a slice's shared levels `COUNT_CHUNK` pairs at a time:
    /// slices longer than that, cut anywhere, count what one pass over the whole axis counts.
    #[test]
    fn cells_counted_in_chunks_past_the_chunk_equal_one_pass() {
        for (base, fanout) in [(1, 2), (8, 4), (3, 5)] {
            let ladder = Ladder::new(base, fanout).unwrap();
            let n = 3 * COUNT_CHUNK + 17;
            let axis: Vec<u64> = (0..n as u64).map(|i| i * 7 + (i * i) % 5).collect();
            let top = 20;
            let whole = Ladder::cells_per_level(&ladder.shared_levels(&axis), top);
            for cut in [0, 1, COUNT_CHUNK, COUNT_CHUNK + 1, 2 * COUNT_CHUNK - 3, n] {
                let mut counter = CellCounter::new(ladder);
                counter.feed(&axis[..cut]);
                counter.feed(&axis[cut..]);
                assert_eq!(counter.counts(top), whole, "{base}x{fanout}, cut at {cut}");
            }
            // The per-pair answer, for the pairs either side of each chunk boundary.
            let shared = ladder.shared_levels(&axis);
            for i in [COUNT_CHUNK - 1, COUNT_CHUNK, 2 * COUNT_CHUNK] {
                assert_eq!(
                    shared[i],
                    ladder.shared_level(axis[i], axis[i + 1]),
                    "pair {i}"
                );
            }
        }
    }

    /// Shrunk from `folding_to_a_level_equals_folding_every_level_beneath` (and found by the
    /// SIGKILL soak as a merge's cell folding one row too many): after a cell, the f64 fold
    /// began the next at the last row of the one before. Two rows in two cells are two cells
    /// of one row each.
    #[test]
    fn f64_fold_begins_each_cell_after_the_last() {
        let ladder = Ladder::new(1, 2).unwrap();
        let (axis, values) = ([0u64, 1, 5], [2.0f64, 3.0, 4.0]);
        let shared = ladder.shared_levels(&axis);
        let cells = ladder.fold_f64_rows_to(3, &axis, &shared, &values, 0);
        let counts: Vec<(u64, u64, f64)> = cells
            .iter()
            .map(|c| (c.index, c.bucket.count, c.bucket.sum))
            .collect();
        assert_eq!(counts, [(0, 1, 2.0), (1, 1, 3.0), (5, 1, 4.0)]);
    }

    #[test]
    fn refuses_degenerate_ladders() {
        assert_eq!(Ladder::new(0, 4), Err(LadderError::BaseZero));
        assert_eq!(
            Ladder::new(1, 1),
            Err(LadderError::FanoutTooSmall { fanout: 1 })
        );
        assert_eq!(
            Ladder::new(1, 0),
            Err(LadderError::FanoutTooSmall { fanout: 0 })
        );
    }

    #[test]
    fn cells_and_spans_by_hand() {
        let ladder = Ladder::new(10, 4).unwrap();
        // Level 0: width 10; level 1: width 40; level 2: width 160.
        assert_eq!(ladder.cell(0, 0), 0);
        assert_eq!(ladder.cell(9, 0), 0);
        assert_eq!(ladder.cell(10, 0), 1);
        assert_eq!(ladder.cell(39, 1), 0);
        assert_eq!(ladder.cell(40, 1), 1);
        assert_eq!(ladder.cell(159, 2), 0);
        assert_eq!(ladder.cell(160, 2), 1);
        assert_eq!(ladder.span(1, 2), Some([80, 119]));
        assert_eq!(ladder.top_level(35, 45), 2);
        assert_eq!(ladder.top_level(41, 79), 1);
        assert_eq!(ladder.top_level(7, 7), 0);
    }

    #[test]
    fn top_of_axis_is_safe() {
        let ladder = Ladder::new(1, 2).unwrap();
        assert_eq!(ladder.width(64), 1 << 64);
        assert_eq!(ladder.width(LEVELS_MAX), 1 << 64);
        assert_eq!(ladder.top_level(0, u64::MAX), 64);
        assert_eq!(ladder.cell(u64::MAX, 63), 1);
        assert_eq!(ladder.cell(u64::MAX, 64), 0);
        assert_eq!(ladder.span(0, u64::MAX), Some([u64::MAX, u64::MAX]));
        assert_eq!(ladder.span(63, 1), Some([1 << 63, u64::MAX]));
        assert_eq!(ladder.span(63, 2), None);
        let wide = Ladder::new(u64::MAX, u64::MAX).unwrap();
        assert_eq!(wide.cell(u64::MAX, 0), 1);
        assert_eq!(wide.cell(u64::MAX, 1), 0);
        assert_eq!(wide.span(0, 1), Some([u64::MAX, u64::MAX]));
    }

    #[test]
    fn fold_rows_groups_by_cell() {
        let ladder = Ladder::new(10, 2).unwrap();
        let rows = [(1, 5), (9, 3), (10, 4), (25, 1), (29, 8)].map(|(a, v)| (a, Num::U64(v)));
        let cells = ladder.fold_rows(0, rows);
        let summary: Vec<_> = cells.iter().map(|c| (c.index, c.bucket.count)).collect();
        assert_eq!(summary, [(0, 2), (1, 1), (2, 2)]);
        assert_eq!(cells[0].bucket.min.axis, 9);
        let up = ladder.fold_level(&cells);
        let summary: Vec<_> = up
            .iter()
            .map(|c| (c.index, c.bucket.count, c.bucket.sum))
            .collect();
        assert_eq!(summary, [(0, 3, 12.0), (1, 2, 9.0)]);
    }
}
