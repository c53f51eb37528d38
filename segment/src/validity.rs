//! Validity blocks (segment format 7): which rows of a measured field are null.
//!
//! A column with no null row has no validity block at all, so a file without missing values is
//! byte for byte what it was before, but for its header's version. A column with nulls keeps a
//! placeholder in each null row (the value before it, which costs a packed column least) and a
//! validity block listing the null rows as runs, each run two LEB128 varints:
//!
//! ```text
//! run 0:  start            len - 1
//! run i:  start - end(i-1) - 1      len - 1      (i >= 1)
//! ```
//!
//! So every run holds a row, runs never touch or overlap, and there is one encoding of a set of
//! rows: 1% of rows null at random costs about two bytes a null row, an hour-long outage a few
//! bytes. The block's `n_items` is the number of null rows. A reader decodes it once, on its
//! first read, checking that every varint is whole and minimal, that the runs end inside the
//! partition's rows, and that they hold `n_items` rows; anything else is `Malformed`, naming the
//! byte.

use std::ops::Range;

/// Appends `runs` (ascending, disjoint, none touching the next, none empty) encoded.
///
/// # Panics
/// If the runs break that order: staging and the merge build them so.
pub(crate) fn encode(runs: &[Range<u64>], out: &mut Vec<u8>) {
    let mut end: Option<u64> = None;
    for run in runs {
        assert!(run.start < run.end, "an empty null run");
        let gap = match end {
            None => run.start,
            Some(end) => {
                assert!(run.start > end, "null runs out of order or touching");
                run.start - end - 1
            }
        };
        put_varint(out, gap);
        put_varint(out, run.end - run.start - 1);
        end = Some(run.end);
    }
}

fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    loop {
        let byte = (value & 0x7f) as u8;
        value >>= 7;
        if value == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

/// A varint at `at` of `payload`: its value and the offset after it; `Err` names what is
/// wrong with it (cut short, longer than a `u64`, or not minimal).
fn get_varint(payload: &[u8], at: usize) -> Result<(u64, usize), (usize, String)> {
    let mut value = 0u64;
    let mut shift = 0u32;
    let mut i = at;
    loop {
        let &byte = payload
            .get(i)
            .ok_or_else(|| (at, "a validity run is cut short".to_owned()))?;
        let bits = u64::from(byte & 0x7f);
        if shift == 63 && bits > 1 || shift > 63 {
            return Err((at, "a validity varint overflows 64 bits".to_owned()));
        }
        value |= bits << shift;
        i += 1;
        if byte & 0x80 == 0 {
            if byte == 0 && i - at > 1 {
                return Err((at, "a validity varint is not minimal".to_owned()));
            }
            return Ok((value, i));
        }
        shift += 7;
    }
}

/// Decodes a validity block's payload for a partition of `n_rows` rows holding `n_items` null
/// rows: the runs of null rows, ascending. `Err` is the offset in the payload and what is
/// wrong.
pub(crate) fn decode(
    payload: &[u8],
    n_rows: u64,
    n_items: usize,
) -> Result<Vec<Range<u64>>, (usize, String)> {
    let mut runs: Vec<Range<u64>> = Vec::new();
    let mut at = 0;
    let mut held: u64 = 0;
    while at < payload.len() {
        let run_at = at;
        let (gap, next) = get_varint(payload, at)?;
        let (len_less_one, next) = get_varint(payload, next)?;
        at = next;
        let start = match runs.last() {
            None => Some(gap),
            Some(last) => last.end.checked_add(gap).and_then(|s| s.checked_add(1)),
        };
        let end = start
            .zip(len_less_one.checked_add(1))
            .and_then(|(start, len)| start.checked_add(len));
        let (Some(start), Some(end)) = (start, end) else {
            return Err((run_at, "a validity run overflows".to_owned()));
        };
        if end > n_rows {
            return Err((
                run_at,
                format!("a validity run ends at row {end}, past the partition's {n_rows} rows"),
            ));
        }
        held += end - start;
        runs.push(start..end);
    }
    if runs.is_empty() || held != n_items as u64 {
        return Err((
            0,
            format!(
                "a validity block holds {held} null rows, its record says {n_items} (at least 1)"
            ),
        ));
    }
    Ok(runs)
}

/// Which rows of one column are null: ascending, disjoint runs of row indexes (none for a
/// column without a validity block).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Nulls<'a> {
    runs: &'a [Range<u64>],
}

impl<'a> Nulls<'a> {
    /// The nulls of `runs` (ascending, disjoint).
    pub fn new(runs: &'a [Range<u64>]) -> Nulls<'a> {
        Nulls { runs }
    }

    /// No null rows.
    pub const NONE: Nulls<'static> = Nulls { runs: &[] };

    /// Whether no row is null.
    pub fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }

    /// The runs of null rows, ascending.
    pub fn runs(&self) -> &'a [Range<u64>] {
        self.runs
    }

    /// Whether row `row` is null.
    pub fn contains(&self, row: usize) -> bool {
        let row = row as u64;
        let i = self.runs.partition_point(|r| r.end <= row);
        self.runs.get(i).is_some_and(|r| r.start <= row)
    }

    /// The null runs that meet `rows`, clipped to them and made relative to `rows.start`.
    pub fn within(&self, rows: Range<usize>) -> impl Iterator<Item = Range<usize>> + 'a {
        let (lo, hi) = (rows.start as u64, rows.end as u64);
        let first = self.runs.partition_point(|r| r.end <= lo);
        self.runs[first..]
            .iter()
            .take_while(move |r| r.start < hi)
            .map(move |r| {
                // Both ends lie inside `rows`, a range of `usize`s.
                let at = |v: u64| usize::try_from(v - lo).unwrap_or(usize::MAX);
                at(r.start.max(lo))..at(r.end.min(hi))
            })
    }

    /// A flag per row of `rows`, true where the row is null; `None` if none of them is.
    pub fn mask(&self, rows: Range<usize>) -> Option<Vec<bool>> {
        let mut within = self.within(rows.clone()).peekable();
        within.peek()?;
        let mut mask = vec![false; rows.len()];
        for run in within {
            mask[run].fill(true);
        }
        Some(mask)
    }

    /// How many rows of `rows` are null.
    pub fn count_in(&self, rows: Range<usize>) -> usize {
        self.within(rows).map(|r| r.len()).sum()
    }
}

/// Adds the null run `start..end` after `runs`, joining it to the last run if they touch.
pub fn push_run(runs: &mut Vec<Range<u64>>, run: Range<u64>) {
    if run.is_empty() {
        return;
    }
    match runs.last_mut() {
        Some(last) if last.end == run.start => last.end = run.end,
        _ => runs.push(run),
    }
}

#[cfg(test)]
#[allow(
    clippy::cast_possible_truncation,
    clippy::single_range_in_vec_init,
    reason = "test code: generated sizes are small, and a run is a range"
)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// Null rows as a flag per row, and the runs an independent loop finds in them.
    fn runs_of(flags: &[bool]) -> Vec<Range<u64>> {
        let mut runs = Vec::new();
        let mut i = 0;
        while i < flags.len() {
            if flags[i] {
                let start = i;
                while i < flags.len() && flags[i] {
                    i += 1;
                }
                runs.push(start as u64..i as u64);
            } else {
                i += 1;
            }
        }
        runs
    }

    proptest! {
        #[test]
        fn runs_of_null_rows_come_back_as_they_went(
            flags in proptest::collection::vec(any::<bool>(), 1..300),
            start_nulls in 0u64..100_000,
        ) {
            let shift = |r: &Range<u64>| r.start + start_nulls..r.end + start_nulls;
            let runs: Vec<Range<u64>> = runs_of(&flags).iter().map(shift).collect();
            prop_assume!(!runs.is_empty());
            let n_rows = flags.len() as u64 + start_nulls;
            let held: u64 = runs.iter().map(|r| r.end - r.start).sum();
            let mut out = Vec::new();
            encode(&runs, &mut out);
            let back = decode(&out, n_rows, held as usize).unwrap();
            prop_assert_eq!(&back, &runs);
            let nulls = Nulls::new(&back);
            for (row, &flag) in flags.iter().enumerate() {
                prop_assert_eq!(nulls.contains(row + start_nulls as usize), flag);
            }
            // One row fewer than the runs reach, or another count, is refused.
            let last_end = runs.last().unwrap().end;
            prop_assert!(decode(&out, last_end - 1, held as usize).is_err());
            prop_assert!(decode(&out, n_rows, held as usize + 1).is_err());
            // Every cut short payload is refused, never read as fewer nulls.
            for cut in 0..out.len() {
                prop_assert!(decode(&out[..cut], n_rows, held as usize).is_err());
            }
        }

        #[test]
        fn a_mask_flags_exactly_the_null_rows_of_a_range(
            flags in proptest::collection::vec(any::<bool>(), 1..200),
            a in 0usize..200,
            b in 0usize..200,
        ) {
            let runs = runs_of(&flags);
            let nulls = Nulls::new(&runs);
            let (lo, hi) = (a.min(b).min(flags.len()), a.max(b).min(flags.len()));
            let expected = &flags[lo..hi];
            match nulls.mask(lo..hi) {
                Some(mask) => prop_assert_eq!(mask.as_slice(), expected),
                None => prop_assert!(expected.iter().all(|&f| !f)),
            }
            prop_assert_eq!(nulls.count_in(lo..hi), expected.iter().filter(|&&f| f).count());
        }
    }

    #[test]
    fn a_long_outage_costs_a_few_bytes_and_scattered_nulls_two_a_row() {
        let mut out = Vec::new();
        encode(&[1_000..361_000], &mut out);
        assert!(out.len() <= 6, "{} bytes", out.len());
        let scattered: Vec<Range<u64>> = (0..100u64).map(|i| i * 100 + 7..i * 100 + 8).collect();
        let mut out = Vec::new();
        encode(&scattered, &mut out);
        assert_eq!(out.len(), 200);
    }

    #[test]
    fn malformed_validity_is_refused_by_name() {
        // A varint that never ends.
        let err = decode(&[0x80, 0x80], 10, 1).unwrap_err();
        assert!(err.1.contains("cut short"), "{err:?}");
        // Eleven bytes of continuation overflow 64 bits.
        let mut long = vec![0xff; 10];
        long.push(0x01);
        let err = decode(&long, u64::MAX, 1).unwrap_err();
        assert!(err.1.contains("overflows"), "{err:?}");
        // 0 spelled in two bytes.
        let err = decode(&[0x80, 0x00, 0x00], 10, 1).unwrap_err();
        assert!(err.1.contains("not minimal"), "{err:?}");
        // An empty block.
        let err = decode(&[], 10, 0).unwrap_err();
        assert!(err.1.contains("at least 1"), "{err:?}");
    }

    #[test]
    fn touching_runs_join() {
        let mut runs = Vec::new();
        push_run(&mut runs, 0..2);
        push_run(&mut runs, 2..3);
        push_run(&mut runs, 5..5);
        push_run(&mut runs, 7..9);
        assert_eq!(runs, vec![0..3, 7..9]);
    }
}
