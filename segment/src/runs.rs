//! Run-encoded row columns: positions and ordinals stored as arithmetic runs.
//!
//! A partition's positions are non-decreasing and come in long runs of one value (a position is
//! a publish batch); its ordinals are strictly increasing and step by a constant while the same
//! tracks interleave. Both are stored either as a plain `u64` per row or as [`RunRecord`]s
//! (`start`, `step`, cumulative `end`), whichever is smaller; [`Sequence`] reads either the same
//! way, straight from the map, without decoding anything into memory.
//!
//! A run block is trusted only after [`check_runs`] passed over it (the reader runs it right
//! after the block's crc, once per reader): run ends strictly increase up to exactly the row
//! count, no run's last value overflows, values never go backwards across or within runs
//! (strictly increasing for ordinals), and the first and last values are the directory's.
//! Every arithmetic in [`Sequence`] relies on those and cannot overflow afterwards.

use std::iter::FusedIterator;

use zerocopy::little_endian::U64;

use crate::format::RunRecord;

/// One row column of `u64`s (positions or ordinals), plain or run-encoded, as the file holds it.
///
/// Values are non-decreasing (positions) or strictly increasing (ordinals); the searches rely on
/// that order, as `slice::partition_point` does.
#[derive(Clone, Copy, Debug)]
pub struct Sequence<'a>(Repr<'a>);

#[derive(Clone, Copy, Debug)]
enum Repr<'a> {
    Plain(&'a [U64]),
    /// Runs that passed [`check_runs`]: non-empty, ends strictly increasing, no overflow.
    Runs(&'a [RunRecord]),
}

/// What a run block may hold beyond its crc; see [`check_runs`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// Positions and the axis: each value at least the one before.
    NonDecreasing,
    /// Ordinals: each value above the one before.
    Increasing,
}

impl<'a> Sequence<'a> {
    /// A plain column: one value per row.
    pub fn plain(values: &'a [U64]) -> Sequence<'a> {
        Sequence(Repr::Plain(values))
    }

    /// A run-encoded column of `n_rows` rows, once `runs` passed [`check_runs`] against them
    /// and the range `[lo, hi]` its first and last values must be; else where and why not.
    pub fn from_runs(
        runs: &'a [RunRecord],
        n_rows: u64,
        order: Order,
        range: [u64; 2],
    ) -> Result<Sequence<'a>, (usize, String)> {
        check_runs(runs, n_rows, order, range)?;
        Ok(Sequence(Repr::Runs(runs)))
    }

    /// Runs the reader checked with [`check_runs`] when it first read their block.
    pub(crate) fn checked_runs(runs: &'a [RunRecord]) -> Sequence<'a> {
        assert!(!runs.is_empty(), "a checked run block has runs");
        Sequence(Repr::Runs(runs))
    }

    /// Rows in the column.
    pub fn len(&self) -> usize {
        match self.0 {
            Repr::Plain(values) => values.len(),
            Repr::Runs(runs) => end_of(runs, runs.len() - 1),
        }
    }

    /// Whether the column has no row (a checked run block never is).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The plain values, if the column is stored plain.
    pub fn as_plain(&self) -> Option<&'a [U64]> {
        match self.0 {
            Repr::Plain(values) => Some(values),
            Repr::Runs(_) => None,
        }
    }

    /// The runs, if the column is run-encoded (checked: see [`check_runs`]).
    pub fn as_runs(&self) -> Option<&'a [RunRecord]> {
        match self.0 {
            Repr::Plain(_) => None,
            Repr::Runs(runs) => Some(runs),
        }
    }

    /// Row `row_idx`'s value, or `None` past the end; a binary search of the runs.
    pub fn get(&self, row_idx: usize) -> Option<u64> {
        match self.0 {
            Repr::Plain(values) => values.get(row_idx).map(|v| v.get()),
            Repr::Runs(runs) => {
                let run_idx = runs.partition_point(|r| to_usize(r.end.get()) <= row_idx);
                let run = runs.get(run_idx)?;
                let offset = row_idx - begin_of(runs, run_idx);
                Some(value_at(run, offset))
            }
        }
    }

    /// The first row's value.
    pub fn first(&self) -> Option<u64> {
        match self.0 {
            Repr::Plain(values) => values.first().map(|v| v.get()),
            Repr::Runs(runs) => runs.first().map(|r| r.start.get()),
        }
    }

    /// The last row's value.
    pub fn last(&self) -> Option<u64> {
        match self.0 {
            Repr::Plain(values) => values.last().map(|v| v.get()),
            Repr::Runs(runs) => {
                let run_idx = runs.len() - 1;
                Some(last_of(runs, run_idx))
            }
        }
    }

    /// The index of the first row whose value is at least `value` (`len()` if none is).
    pub fn lower_bound(&self, value: u64) -> usize {
        match self.0 {
            Repr::Plain(values) => values.partition_point(|v| v.get() < value),
            Repr::Runs(runs) => {
                let run_idx = first_index(runs.len(), |i| last_of(runs, i) >= value);
                let Some(run) = runs.get(run_idx) else {
                    return self.len();
                };
                let begin = begin_of(runs, run_idx);
                let start = run.start.get();
                if start >= value {
                    return begin;
                }
                // start < value <= last: the run climbs, so step > 0, and the row is inside it.
                let step = run.step.get();
                debug_assert!(step > 0);
                begin + to_usize((value - start).div_ceil(step))
            }
        }
    }

    /// The index of the first row whose value is above `value` (`len()` if none is).
    pub fn upper_bound(&self, value: u64) -> usize {
        match value.checked_add(1) {
            Some(next) => self.lower_bound(next),
            None => self.len(),
        }
    }

    /// Appends the values of rows `rows` (those of them the sequence holds) to `out`: what
    /// `iter_from(rows.start).take(rows.len())` yields, written a run at a time (a batch of one
    /// position is one `repeat_n`), for readers that copy many rows at once.
    pub fn extend_rows(&self, rows: std::ops::Range<usize>, out: &mut Vec<u64>) {
        match self.0 {
            Repr::Plain(values) => {
                let end = rows.end.min(values.len());
                let values = values.get(rows.start..end).unwrap_or_default();
                out.extend(values.iter().map(|v| v.get()));
            }
            Repr::Runs(runs) => {
                let mut run_idx = runs.partition_point(|r| to_usize(r.end.get()) <= rows.start);
                let mut row_idx = rows.start;
                while row_idx < rows.end
                    && let Some(run) = runs.get(run_idx)
                {
                    let end = end_of(runs, run_idx).min(rows.end);
                    let first = value_at(run, row_idx - begin_of(runs, run_idx));
                    let (step, n) = (run.step.get(), end - row_idx);
                    if step == 0 {
                        out.extend(std::iter::repeat_n(first, n));
                    } else {
                        // Inside a checked run: no value overflows.
                        out.extend((0..n as u64).map(|k| first + step * k));
                    }
                    row_idx = end;
                    run_idx += 1;
                }
            }
        }
    }

    /// Every value, in row order.
    pub fn iter(&self) -> SequenceIter<'a> {
        self.iter_from(0)
    }

    /// The values from row `row_idx` on (nothing if it is past the end).
    pub fn iter_from(&self, row_idx: usize) -> SequenceIter<'a> {
        match self.0 {
            Repr::Plain(values) => SequenceIter(IterRepr::Plain(
                values.get(row_idx..).unwrap_or_default().iter(),
            )),
            Repr::Runs(runs) => {
                let run_idx = runs.partition_point(|r| to_usize(r.end.get()) <= row_idx);
                let Some(run) = runs.get(run_idx) else {
                    return SequenceIter(IterRepr::Plain([].iter()));
                };
                let offset = row_idx - begin_of(runs, run_idx);
                SequenceIter(IterRepr::Runs {
                    value: value_at(run, offset),
                    step: run.step.get(),
                    left: end_of(runs, run_idx) - row_idx,
                    done: end_of(runs, run_idx),
                    rest: &runs[run_idx + 1..],
                    total: end_of(runs, runs.len() - 1),
                })
            }
        }
    }
}

impl<'a> IntoIterator for &Sequence<'a> {
    type Item = u64;
    type IntoIter = SequenceIter<'a>;

    fn into_iter(self) -> SequenceIter<'a> {
        self.iter()
    }
}

impl<'a> IntoIterator for Sequence<'a> {
    type Item = u64;
    type IntoIter = SequenceIter<'a>;

    fn into_iter(self) -> SequenceIter<'a> {
        self.iter()
    }
}

/// The values of a [`Sequence`] in row order: a slice's iterator, or a counter per run.
#[derive(Clone, Debug)]
pub struct SequenceIter<'a>(IterRepr<'a>);

#[derive(Clone, Debug)]
enum IterRepr<'a> {
    Plain(std::slice::Iter<'a, U64>),
    /// Over runs: `left` more rows of the current run, the next being `value`.
    Runs {
        value: u64,
        step: u64,
        left: usize,
        /// Rows up to the end of the current run.
        done: usize,
        rest: &'a [RunRecord],
        total: usize,
    },
}

impl Iterator for SequenceIter<'_> {
    type Item = u64;

    #[inline]
    fn next(&mut self) -> Option<u64> {
        match &mut self.0 {
            IterRepr::Plain(values) => values.next().map(|v| v.get()),
            IterRepr::Runs {
                value,
                step,
                left,
                done,
                rest,
                ..
            } => {
                if *left == 0 {
                    let (run, tail) = rest.split_first()?;
                    let end = to_usize(run.end.get());
                    *left = end - *done;
                    *done = end;
                    *value = run.start.get();
                    *step = run.step.get();
                    *rest = tail;
                }
                *left -= 1;
                let out = *value;
                // After a run's last row this may step past it; the next run resets it first.
                *value = value.wrapping_add(*step);
                Some(out)
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = match &self.0 {
            IterRepr::Plain(values) => values.len(),
            IterRepr::Runs {
                left, done, total, ..
            } => left + (total - done),
        };
        (n, Some(n))
    }
}

impl ExactSizeIterator for SequenceIter<'_> {}

impl FusedIterator for SequenceIter<'_> {}

/// Checks a run block of `n_rows` rows: at least one run; run ends strictly increasing (every
/// run holds a row) up to exactly `n_rows`; no run's last value overflows; values in `order`
/// within and across runs; the first value `range[0]` and the last `range[1]`. A fault is the
/// byte offset in the payload of the run at fault, and what is wrong.
pub fn check_runs(
    runs: &[RunRecord],
    n_rows: u64,
    order: Order,
    range: [u64; 2],
) -> Result<(), (usize, String)> {
    let size = size_of::<RunRecord>();
    let mut previous: Option<(u64, u64)> = None; // (end, last value) of the run before
    for (run_idx, run) in runs.iter().enumerate() {
        let at = run_idx * size;
        let (begin, previous_last) = previous.map_or((0, None), |(end, last)| (end, Some(last)));
        let end = run.end.get();
        if end <= begin || end > n_rows {
            return Err((
                at,
                format!("a run ending at row {end} after row {begin}, of {n_rows} rows"),
            ));
        }
        let (start, step) = (run.start.get(), run.step.get());
        let count = end - begin;
        if order == Order::Increasing && count > 1 && step == 0 {
            return Err((at, "a run of ordinals that does not increase".into()));
        }
        let last = step
            .checked_mul(count - 1)
            .and_then(|span| start.checked_add(span))
            .ok_or_else(|| (at, "a run whose values overflow".to_owned()))?;
        let ordered = previous_last.is_none_or(|p| match order {
            Order::NonDecreasing => p <= start,
            Order::Increasing => p < start,
        });
        if !ordered {
            return Err((at, "a run goes back below the run before it".into()));
        }
        previous = Some((end, last));
    }
    let Some((end, last)) = previous else {
        return Err((0, "a run block without runs".into()));
    };
    if end != n_rows {
        return Err((
            (runs.len() - 1) * size,
            format!("runs cover {end} rows, the partition holds {n_rows}"),
        ));
    }
    let first = runs[0].start.get();
    if [first, last] != range {
        return Err((
            0,
            format!(
                "values run {first}..={last}, the directory says {}..={}",
                range[0], range[1]
            ),
        ));
    }
    Ok(())
}

/// How many runs [`runs_of`] finds in `values`: what the writer compares against a plain block.
pub fn count_runs(values: &[u64]) -> usize {
    RunsOf { values, at: 0 }.count()
}

/// The runs of `values` counted in one pass, and kept while they number at most `keep_max`.
#[derive(Debug)]
pub struct RunScan {
    /// How many runs [`runs_of`] finds.
    pub n_runs: usize,
    /// The runs, if there are at most `keep_max` of them (else empty): the writer then needs no
    /// second pass over the values.
    pub runs: Vec<RunRecord>,
}

/// Counts the runs of `values`, keeping them if they number at most `keep_max`.
pub fn scan_runs(values: &[u64], keep_max: usize) -> RunScan {
    let mut runs = Vec::new();
    let mut n_runs = 0;
    for run in runs_of(values) {
        n_runs += 1;
        if n_runs <= keep_max {
            runs.push(run);
        } else if !runs.is_empty() {
            runs = Vec::new();
        }
    }
    RunScan { n_runs, runs }
}

/// The greedy arithmetic runs of `values` (each as long as its first two values' step lasts),
/// as the records a run block stores.
pub fn runs_of(values: &[u64]) -> impl Iterator<Item = RunRecord> + '_ {
    RunsOf { values, at: 0 }
}

struct RunsOf<'a> {
    values: &'a [u64],
    at: usize,
}

impl Iterator for RunsOf<'_> {
    type Item = RunRecord;

    fn next(&mut self) -> Option<RunRecord> {
        let rest = self.values.get(self.at..).filter(|r| !r.is_empty())?;
        let start = rest[0];
        let step = rest.get(1).map_or(0, |&next| next.wrapping_sub(start));
        let len = 1 + rest
            .windows(2)
            .take_while(|w| w[1].wrapping_sub(w[0]) == step)
            .count();
        self.at += len;
        Some(RunRecord {
            start: U64::new(start),
            step: U64::new(if len == 1 { 0 } else { step }),
            end: U64::new(self.at as u64),
        })
    }
}

/// The greedy runs of values fed one at a time: the same runs [`runs_of`] finds in a slice of
/// them, for values that are never in one slice (a merge's, read from several files).
#[derive(Clone, Debug, Default)]
pub struct RunsBuilder {
    /// Rows fed so far.
    rows: u64,
    /// The current run's first value, its step (once it has two rows), its last value and rows.
    start: u64,
    step: Option<u64>,
    last: u64,
    len: u64,
}

impl RunsBuilder {
    /// Feeds the next value; answers the run it ended, if it ended one.
    pub fn push(&mut self, value: u64) -> Option<RunRecord> {
        self.rows += 1;
        if self.len == 0 {
            (self.start, self.last, self.len) = (value, value, 1);
            return None;
        }
        let step = value.wrapping_sub(self.last);
        match self.step {
            None => self.step = Some(step),
            Some(s) if s == step => {}
            Some(_) => {
                let ended = self.record(self.rows - 1);
                (self.start, self.step, self.last, self.len) = (value, None, value, 1);
                return Some(ended);
            }
        }
        self.last = value;
        self.len += 1;
        None
    }

    /// Feeds a run's `n` values (`start`, `start + step`, ..), answering each run they end to
    /// `ended`: what feeding them one at a time would, in constant time for any `n` (once the
    /// run being built steps by `step`, every further value extends it).
    pub fn push_run(&mut self, start: u64, step: u64, n: u64, mut ended: impl FnMut(RunRecord)) {
        let mut value = start;
        let mut left = n;
        while left > 0 {
            if self.len >= 2 && self.step == Some(step) && value == self.last.wrapping_add(step) {
                // Every value left continues the run.
                self.last = value.wrapping_add(step.wrapping_mul(left - 1));
                self.len += left;
                self.rows += left;
                return;
            }
            if let Some(run) = self.push(value) {
                ended(run);
            }
            value = value.wrapping_add(step);
            left -= 1;
        }
    }

    /// The last run, once every value is fed (`None` if none was).
    pub fn finish(self) -> Option<RunRecord> {
        (self.len > 0).then(|| self.record(self.rows))
    }

    fn record(&self, end: u64) -> RunRecord {
        RunRecord {
            start: U64::new(self.start),
            step: U64::new(if self.len == 1 {
                0
            } else {
                self.step.unwrap_or(0)
            }),
            end: U64::new(end),
        }
    }
}

/// The index of the first run for which `pred` holds, where it holds for a suffix (`n` if none).
fn first_index(n: usize, pred: impl Fn(usize) -> bool) -> usize {
    let (mut lo, mut hi) = (0, n);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if pred(mid) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    lo
}

/// A checked run's end is at most the row count, which fits `usize`.
fn to_usize(n: u64) -> usize {
    usize::try_from(n).expect("a checked run's rows fit usize")
}

fn end_of(runs: &[RunRecord], run_idx: usize) -> usize {
    to_usize(runs[run_idx].end.get())
}

fn begin_of(runs: &[RunRecord], run_idx: usize) -> usize {
    if run_idx == 0 {
        0
    } else {
        end_of(runs, run_idx - 1)
    }
}

/// The value `offset` rows into a run; `offset` is inside the run, so this does not overflow.
fn value_at(run: &RunRecord, offset: usize) -> u64 {
    run.start.get() + run.step.get() * offset as u64
}

fn last_of(runs: &[RunRecord], run_idx: usize) -> u64 {
    let count = end_of(runs, run_idx) - begin_of(runs, run_idx);
    value_at(&runs[run_idx], count - 1)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use zerocopy::{FromBytes, IntoBytes};

    use super::*;

    /// Encodes `values` as runs and checks them as the reader does.
    fn encode(values: &[u64], order: Order) -> Vec<RunRecord> {
        let runs: Vec<RunRecord> = runs_of(values).collect();
        assert_eq!(runs.len(), count_runs(values));
        let range = [values[0], *values.last().unwrap()];
        check_runs(&runs, values.len() as u64, order, range).unwrap();
        runs
    }

    /// Every accessor of `seq` against the same question asked of `values` directly.
    fn assert_reads_as(seq: &Sequence<'_>, values: &[u64], probes: &[u64]) {
        assert_eq!(seq.len(), values.len());
        assert_eq!(seq.first(), values.first().copied());
        assert_eq!(seq.last(), values.last().copied());
        assert_eq!(seq.iter().collect::<Vec<_>>(), values);
        assert_eq!(seq.iter().len(), values.len());
        for row_idx in 0..=values.len() {
            assert_eq!(seq.get(row_idx), values.get(row_idx).copied());
            let from: Vec<u64> = seq.iter_from(row_idx).collect();
            assert_eq!(from, values[row_idx..], "from row {row_idx}");
            assert_eq!(seq.iter_from(row_idx).len(), values.len() - row_idx);
            for n in [0, 1, 2, 7, values.len() + 1] {
                let mut out = vec![42];
                seq.extend_rows(row_idx..row_idx + n, &mut out);
                let end = (row_idx + n).min(values.len());
                assert_eq!(out[1..], values[row_idx..end], "rows {row_idx}..+{n}");
                assert_eq!(out[0], 42, "what was there stays");
            }
        }
        let near = values
            .iter()
            .flat_map(|&v| [v.saturating_sub(1), v, v.saturating_add(1)]);
        for probe in near.chain(probes.iter().copied()).chain([0, u64::MAX]) {
            let lower = values.iter().filter(|&&v| v < probe).count();
            let upper = values.iter().filter(|&&v| v <= probe).count();
            assert_eq!(seq.lower_bound(probe), lower, "lower bound of {probe}");
            assert_eq!(seq.upper_bound(probe), upper, "upper bound of {probe}");
        }
    }

    /// Non-decreasing values from `start`: batches of equal values, then arbitrary climbs.
    fn positions() -> impl Strategy<Value = Vec<u64>> {
        let start = prop_oneof![0u64..1000, (u64::MAX - 5000)..=u64::MAX];
        let step = prop_oneof![6 => Just(0u64), 3 => Just(1u64), 1 => 0u64..1_000_000];
        (start, prop::collection::vec(step, 0..200)).prop_map(|(start, steps)| {
            let mut v = start;
            std::iter::once(start)
                .chain(steps.into_iter().map(|s| {
                    v = v.saturating_add(s);
                    v
                }))
                .collect()
        })
    }

    /// Strictly increasing values: runs of a constant step (interleaved tracks) and jumps.
    fn ordinals() -> impl Strategy<Value = Vec<u64>> {
        let start = prop_oneof![0u64..1000, (u64::MAX - 100_000)..=(u64::MAX - 10_000)];
        let gap = prop_oneof![8 => 1u64..=8, 1 => 1u64..1_000_000_000];
        let gaps = prop::collection::vec((gap, 1usize..50), 0..20);
        (start, gaps).prop_map(|(start, gaps)| {
            let mut values = vec![start];
            let mut v = start;
            for (gap, n) in gaps {
                for _ in 0..n {
                    match v.checked_add(gap) {
                        Some(next) => {
                            v = next;
                            values.push(v);
                        }
                        None => return values,
                    }
                }
            }
            values
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn positions_round_trip_through_runs(values in positions(), probes in prop::collection::vec(any::<u64>(), 4)) {
            let runs = encode(&values, Order::NonDecreasing);
            let seq = Sequence::checked_runs(&runs);
            assert_reads_as(&seq, &values, &probes);
            let plain: Vec<U64> = values.iter().copied().map(U64::new).collect();
            assert_reads_as(&Sequence::plain(&plain), &values, &probes);
        }

        #[test]
        fn ordinals_round_trip_through_runs(values in ordinals(), probes in prop::collection::vec(any::<u64>(), 4)) {
            let runs = encode(&values, Order::Increasing);
            let seq = Sequence::from_runs(&runs, values.len() as u64, Order::Increasing, [values[0], *values.last().unwrap()]).unwrap();
            assert_reads_as(&seq, &values, &probes);
        }

        /// A run block that passes its checks reads as a sequence in order, of the promised
        /// length and ends, whatever bytes it holds: the reader's defence behind the crc.
        #[test]
        fn any_run_bytes_that_pass_the_checks_read_in_order(
            values in ordinals(),
            flip in any::<prop::sample::Index>(),
            mask in 1u8..=255,
        ) {
            let runs = encode(&values, Order::Increasing);
            let mut bytes = runs.as_bytes().to_vec();
            let at = flip.index(bytes.len());
            bytes[at] ^= mask;
            let flipped = <[RunRecord]>::ref_from_bytes(&bytes).unwrap();
            let n_rows = values.len() as u64;
            let range = [values[0], *values.last().unwrap()];
            if let Ok(seq) = Sequence::from_runs(flipped, n_rows, Order::Increasing, range) {
                let got: Vec<u64> = seq.iter().collect();
                prop_assert_eq!(got.len(), values.len());
                prop_assert!(got.windows(2).all(|w| w[0] < w[1]));
                prop_assert_eq!([got[0], *got.last().unwrap()], range);
            }
        }
    }

    proptest! {
        #[test]
        fn runs_fed_one_at_a_time_are_the_runs_of_the_slice(
            values in prop::collection::vec(prop_oneof![0u64..4, any::<u64>()], 0..64),
        ) {
            let mut builder = RunsBuilder::default();
            let mut fed: Vec<RunRecord> = values.iter().filter_map(|&v| builder.push(v)).collect();
            fed.extend(builder.finish());
            prop_assert_eq!(&fed, &runs_of(&values).collect::<Vec<_>>());
            // Fed a run at a time (the values cut into runs of their own greedily, then each
            // run's rows cut again anywhere), the runs are the same.
            let mut builder = RunsBuilder::default();
            let mut by_runs = Vec::new();
            let mut row = 0u64;
            for run in runs_of(&values) {
                let (start, step, end) = (run.start.get(), run.step.get(), run.end.get());
                let n = end - row;
                let cut = n / 2;
                builder.push_run(start, step, cut, |r| by_runs.push(r));
                builder.push_run(start.wrapping_add(step.wrapping_mul(cut)), step, n - cut, |r| by_runs.push(r));
                row = end;
            }
            by_runs.extend(builder.finish());
            prop_assert_eq!(by_runs, fed);
        }
    }

    #[test]
    fn every_row_its_own_run_is_still_read_right() {
        // Squares never keep a step: each run is as short as greedy runs get.
        let values: Vec<u64> = (0..100u64).map(|i| i * i).collect();
        let runs = encode(&values, Order::Increasing);
        assert_eq!(runs.len(), 50, "greedy runs pair the values up");
        assert_reads_as(&Sequence::checked_runs(&runs), &values, &[]);
        let alternating: Vec<u64> = (0..64u64)
            .map(|i| i + (i % 2) * 1000)
            .scan(0, |max, v| {
                *max = v.max(*max);
                Some(*max)
            })
            .collect();
        let runs = encode(&alternating, Order::NonDecreasing);
        assert_reads_as(&Sequence::checked_runs(&runs), &alternating, &[]);
    }

    #[test]
    fn values_at_the_top_of_u64_are_read_without_overflow() {
        let values = [u64::MAX - 2, u64::MAX - 1, u64::MAX];
        let runs = encode(&values, Order::Increasing);
        assert_eq!(runs.len(), 1);
        let seq = Sequence::checked_runs(&runs);
        assert_reads_as(&seq, &values, &[]);
        assert_eq!(seq.upper_bound(u64::MAX), 3);
        let same = [u64::MAX; 5];
        let runs = encode(&same, Order::NonDecreasing);
        assert_reads_as(&Sequence::checked_runs(&runs), &same, &[]);
    }

    fn run(start: u64, step: u64, end: u64) -> RunRecord {
        RunRecord {
            start: U64::new(start),
            step: U64::new(step),
            end: U64::new(end),
        }
    }

    /// Runs, rows, the directory's range, the offset of the fault, and what it says.
    type Case = (Vec<RunRecord>, u64, [u64; 2], usize, &'static str);

    #[test]
    fn runs_that_break_a_promise_are_refused_where_they_break_it() {
        let order = Order::Increasing;
        let cases: Vec<Case> = vec![
            (vec![], 1, [0, 0], 0, "without runs"),
            (vec![run(0, 1, 0)], 1, [0, 0], 0, "ending at row 0"),
            (
                vec![run(0, 1, 2), run(5, 1, 2)],
                3,
                [0, 5],
                24,
                "ending at row 2",
            ),
            (vec![run(0, 1, 4)], 3, [0, 3], 0, "of 3 rows"),
            (vec![run(0, 1, 2)], 3, [0, 1], 0, "cover 2 rows"),
            (vec![run(7, 0, 2)], 2, [7, 7], 0, "does not increase"),
            (
                vec![run(u64::MAX - 1, 1, 3)],
                3,
                [u64::MAX - 1, u64::MAX],
                0,
                "overflow",
            ),
            (vec![run(1, 1 << 63, 3)], 3, [1, 1], 0, "overflow"),
            (vec![run(0, 1, 2), run(1, 1, 3)], 3, [0, 1], 24, "goes back"),
            (vec![run(0, 1, 3)], 3, [0, 3], 0, "the directory says"),
            (vec![run(1, 1, 3)], 3, [0, 3], 0, "the directory says"),
        ];
        for (runs, n_rows, range, at, what) in cases {
            let fault = check_runs(&runs, n_rows, order, range).unwrap_err();
            assert_eq!(fault.0, at, "{runs:?}: {fault:?}");
            assert!(fault.1.contains(what), "{runs:?}: {fault:?}");
        }
        // Positions may repeat a value within and across runs; ordinals may not.
        let runs = [run(3, 0, 2), run(3, 1, 4)];
        check_runs(&runs, 4, Order::NonDecreasing, [3, 4]).unwrap();
        assert!(check_runs(&runs, 4, Order::Increasing, [3, 4]).is_err());
    }
}
