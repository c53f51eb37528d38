//! What a block's contents promise beyond its crc, checked once, right after the crc, when the
//! block is first read. A well-checksummed but inconsistent file (a bug, or bytes crafted on
//! purpose) is then an error naming the file and the offending offset, never a wrong answer or a
//! panic further up: the engine's reads merge cells with `Bucket::absorb` (which panics on values
//! of two kinds), index columns by the row count, and fold levels it trusts to hold every row.
//!
//! The promises, per block kind (`docs/format.md` has the table):
//! - positions, axis: non-decreasing, first and last equal to the directory's lo and hi;
//! - ordinals: strictly increasing, first and last equal to the directory's lo and hi;
//! - position and ordinal runs: as above, decoded, and the runs hold exactly the partition's
//!   rows with no value overflowing (`crate::runs::check_runs`);
//! - `str`/`bytes` columns: offsets from 0 to the heap's end, non-decreasing; `str` is UTF-8;
//! - a measured field's column: of the measured kind (checked with the directory) and, for
//!   `f64`, finite (publish refuses anything else);
//! - cells: strictly ordered by (field, level, index), but for chains (version 4 on: several
//!   consecutive records of one index, their points ordered one after the other); each of a measured field, of that field's
//!   kind, at a level the partition stores, of 1 ..= n_rows rows, its points inside the
//!   partition's axis range, ordered (`first <= min, max <= last` on the axis), with
//!   `min <= first, last <= max` by value and finite `f64` values; and every (measured field,
//!   level) folds exactly the partition's rows.

use std::cmp::Ordering;

use strata_levels::{Num, NumKind};
use zerocopy::little_endian::{F64, U64};

use super::{BlockInfo, PartitionInfo, VarColumn, slice_of};
use crate::format::{BlockKind, CellChunkRecord, CellRecord, PointRecord};
use crate::runs::{Order, check_runs};

/// A broken promise: where in the payload it was found, and what it is.
pub(super) type Fault = (usize, String);

/// Checks block `block` of partition `part`, whose payload passed its crc.
pub(super) fn check_block_contents(
    block: &BlockInfo,
    payload: &[u8],
    part: &PartitionInfo,
) -> Result<(), Fault> {
    let entry = &part.entry;
    if block.packed {
        let ordered = (block.kind == BlockKind::Axis)
            .then_some(entry.axis)
            .flatten();
        if block.kind == BlockKind::Axis && ordered.is_none() {
            return Err((0, "an axis block in a partition without an axis".to_owned()));
        }
        if block.kind == BlockKind::Cells {
            let (data, table) = crate::cellpack::split(payload, block.n_items)?;
            return check_cell_table(table, data.len(), part);
        }
        return crate::packed::split(payload, block.n_items, ordered).map(|_| ());
    }
    match block.kind {
        BlockKind::Positions => check_u64s(slice_of(payload), entry.positions, false),
        BlockKind::Ordinals => check_u64s(slice_of(payload), entry.ordinals, true),
        BlockKind::PositionRuns => check_runs(
            slice_of(payload),
            entry.n_rows,
            Order::NonDecreasing,
            entry.positions,
        ),
        BlockKind::OrdinalRuns => check_runs(
            slice_of(payload),
            entry.n_rows,
            Order::Increasing,
            entry.ordinals,
        ),
        BlockKind::Axis => {
            let range = entry
                .axis
                .ok_or((0, "an axis block in a partition without an axis".to_owned()))?;
            check_u64s(slice_of(payload), range, false)
        }
        BlockKind::Column if block.field_kind >= 4 => check_var(block, payload),
        BlockKind::Column => {
            let measured = part.measured.iter().any(|&(f, _)| f == block.field);
            // From version 7 a measured f64 may be NaN or infinite; before, publish refused
            // both, so a file of an earlier version holding one is not what was written.
            if measured && block.field_kind == 3 && !part.holes {
                let values: &[F64] = slice_of(payload);
                if let Some(row_idx) = values.iter().position(|v| !v.get().is_finite()) {
                    return Err((row_idx * 8, "a measured f64 value is not finite".into()));
                }
            }
            Ok(())
        }
        BlockKind::Cells => check_cells(slice_of(payload), part),
        BlockKind::Seams => check_seams(slice_of(payload), entry.n_rows),
        BlockKind::Validity => {
            crate::validity::decode(payload, entry.n_rows, block.n_items).map(|_| ())
        }
    }
}

/// Seams: strictly increasing row indexes, each inside the partition (`1 ..= n_rows - 1`).
fn check_seams(seams: &[U64], n_rows: u64) -> Result<(), Fault> {
    let mut before = 0;
    for (i, seam) in seams.iter().enumerate() {
        let seam = seam.get();
        if seam <= before || seam >= n_rows {
            return Err((
                i * 8,
                format!("seam {i} at row {seam} is not after the last and inside {n_rows} rows"),
            ));
        }
        before = seam;
    }
    Ok(())
}

/// A row column of u64s: ordered (strictly if `strict`), from `range[0]` to `range[1]`.
fn check_u64s(values: &[U64], range: [u64; 2], strict: bool) -> Result<(), Fault> {
    let bad_at = values.windows(2).position(|w| {
        let (a, b) = (w[0].get(), w[1].get());
        if strict { a >= b } else { a > b }
    });
    if let Some(row_idx) = bad_at {
        let what = if strict {
            "values do not increase"
        } else {
            "values go backwards"
        };
        return Err(((row_idx + 1) * 8, what.into()));
    }
    let ends = values
        .first()
        .zip(values.last())
        .map(|(a, b)| (a.get(), b.get()));
    if ends != Some((range[0], range[1])) {
        return Err((
            0,
            format!(
                "values run {ends:?}, the directory says {}..={}",
                range[0], range[1]
            ),
        ));
    }
    Ok(())
}

fn check_var(block: &BlockInfo, payload: &[u8]) -> Result<(), Fault> {
    let (offsets, heap) = payload.split_at((block.n_items + 1) * 8);
    let offsets: &[U64] = slice_of(offsets);
    let ends_right = offsets.first().map(|o| o.get()) == Some(0)
        && offsets.last().map(|o| o.get()) == Some(heap.len() as u64);
    if !ends_right || !offsets.is_sorted_by_key(|o| o.get()) {
        return Err((0, "variable-length offsets are inconsistent".into()));
    }
    if block.field_kind == 4 {
        let var = VarColumn { offsets, heap };
        if let Some(row_idx) =
            (0..var.len()).find(|&i| var.get(i).is_none_or(|v| std::str::from_utf8(v).is_err()))
        {
            return Err(((row_idx + 1) * 8, "a str value is not UTF-8".into()));
        }
    }
    Ok(())
}

/// The kind code a cell of `kind` carries.
fn kind_code(kind: NumKind) -> u8 {
    match kind {
        NumKind::U64 => 1,
        NumKind::I64 => 2,
        NumKind::F64 => 3,
    }
}

fn check_cells(records: &[CellRecord], part: &PartitionInfo) -> Result<(), Fault> {
    let size = size_of::<CellRecord>();
    let mut groups = Groups::new(part)?;
    check_cell_records(records, part, |r, at| {
        groups.add(r.field.get(), r.level, r.count.get(), at * size)
    })?;
    groups.finish()
}

/// A packed Cells block's table (`crate::cellpack::split` checked its own order): each chunk
/// of a measured field, of that field's kind, at a level the partition has, and every (field,
/// level) folding the partition's rows as a plain block's cells must. Each chunk's cells are
/// checked when it is decoded ([`check_cell_chunk`]), and that they fold the rows its record
/// says.
pub(crate) fn check_cell_table(
    table: &[CellChunkRecord],
    table_at: usize,
    part: &PartitionInfo,
) -> Result<(), Fault> {
    let mut groups = Groups::new(part)?;
    for (i, r) in table.iter().enumerate() {
        let at = table_at + i * size_of::<CellChunkRecord>();
        let field = r.field.get();
        let kind = r.kind & !crate::format::CHUNK_OF_RECORDS;
        check_field_kind_level(field, kind, r.level, part).map_err(|what| (at, what))?;
        groups.add(field, r.level, r.rows.get(), at)?;
    }
    groups.finish()
}

/// The cells of one decoded chunk of a packed Cells block: each as a plain block's records are
/// checked, `at` the chunk's offset in the payload.
pub(crate) fn check_cell_chunk(
    records: &[CellRecord],
    at: usize,
    part: &PartitionInfo,
) -> Result<(), Fault> {
    check_cell_records(records, part, |_, _| Ok(())).map_err(|(_, what)| (at, what))
}

/// Each record on its own and against the one before it; `each` then sees it with its index.
fn check_cell_records(
    records: &[CellRecord],
    part: &PartitionInfo,
    mut each: impl FnMut(&CellRecord, usize) -> Result<(), Fault>,
) -> Result<(), Fault> {
    let size = size_of::<CellRecord>();
    let entry = &part.entry;
    let [axis_lo, axis_hi] = entry
        .axis
        .ok_or((0, "cells in a partition without an axis".to_owned()))?;
    let key = |r: &CellRecord| (r.field.get(), r.level, r.index.get());
    for (cell_idx, r) in records.iter().enumerate() {
        let at = cell_idx * size;
        let bad = |what: String| Err((at, what));
        if cell_idx > 0 {
            let previous = &records[cell_idx - 1];
            match key(previous).cmp(&key(r)) {
                Ordering::Less => {}
                // A chain's links hold consecutive rows: each link's points lie at or after
                // the last point of the link before it.
                Ordering::Equal
                    if part.chains && previous.last.axis.get() <= r.first.axis.get() => {}
                Ordering::Equal if part.chains => {
                    return bad("a chain's link begins before the link ahead of it ends".into());
                }
                _ => return bad("cells out of order".into()),
            }
        }
        let field = r.field.get();
        let kind =
            check_field_kind_level(field, r.kind, r.level, part).map_err(|what| (at, what))?;
        let count = r.count.get();
        if count == 0 || count > entry.n_rows {
            return bad(format!(
                "a cell of {count} rows in a partition of {}",
                entry.n_rows
            ));
        }
        check_points(r, kind, [axis_lo, axis_hi], part.holes).map_err(|what| (at, what))?;
        each(r, cell_idx)?;
    }
    Ok(())
}

/// A cell (or chunk of cells) of `field`, kind code `kind`, at `level`: the field is measured,
/// of that kind, and the partition has the level. Answers the field's measured kind.
fn check_field_kind_level(
    field: u16,
    kind: u8,
    level: u8,
    part: &PartitionInfo,
) -> Result<NumKind, String> {
    let Some(&(_, measured)) = part.measured.iter().find(|&&(f, _)| f == field) else {
        return Err(format!("a cell of field {field}, which is not measured"));
    };
    if kind != kind_code(measured) {
        return Err(format!(
            "a cell of kind code {kind} for field {field}, which is {measured:?}"
        ));
    }
    if level >= part.entry.n_levels {
        return Err(format!(
            "a cell at level {level} of a partition with {} levels",
            part.entry.n_levels
        ));
    }
    Ok(measured)
}

/// The rows each (field, level) of a partition's cells folds, summed as its cells (or chunks)
/// go by, in (field, level) order: a level stored whole folds exactly the partition's rows
/// (from version 7, its present values: at most those), a level beneath `stored_from` some of
/// them; and every measured field has every level from `stored_from` up.
struct Groups<'a> {
    part: &'a PartitionInfo,
    /// The (field, level) being summed, where its first cell is, and the rows it has folded.
    group: Option<((u16, u8), usize, u64)>,
    whole_levels: usize,
}

impl<'a> Groups<'a> {
    fn new(part: &'a PartitionInfo) -> Result<Groups<'a>, Fault> {
        if part.entry.axis.is_none() {
            return Err((0, "cells in a partition without an axis".to_owned()));
        }
        Ok(Groups {
            part,
            group: None,
            whole_levels: 0,
        })
    }

    fn whole(&self, level: u8) -> bool {
        level >= self.part.stored_from
    }

    fn add(&mut self, field: u16, level: u8, count: u64, at: usize) -> Result<(), Fault> {
        match &mut self.group {
            Some((g, _, n_rows)) if *g == (field, level) => {
                // Both terms are at most n_rows (a u64), so this cannot overflow u64 twice over.
                *n_rows = n_rows.saturating_add(count);
            }
            _ => {
                self.close()?;
                self.group = Some(((field, level), at, count));
                self.whole_levels += usize::from(self.whole(level));
            }
        }
        Ok(())
    }

    fn close(&self) -> Result<(), Fault> {
        let entry = &self.part.entry;
        // From version 7 a level folds a field's present values only (not null, not NaN), so
        // a field's cells hold at most the partition's rows, and a field with none has none.
        let short = |n_rows: u64| n_rows != entry.n_rows && !self.part.holes;
        match self.group {
            Some(((field, level), at, n_rows))
                if (self.whole(level) && short(n_rows)) || n_rows > entry.n_rows =>
            {
                Err((
                    at,
                    format!(
                        "level {level} of field {field} folds {n_rows} rows, the partition \
                         holds {}",
                        entry.n_rows
                    ),
                ))
            }
            _ => Ok(()),
        }
    }

    fn finish(self) -> Result<(), Fault> {
        self.close()?;
        let part = self.part;
        let levels = usize::from(part.entry.n_levels.saturating_sub(part.stored_from));
        let expected = part.measured.len() * levels;
        if self.whole_levels != expected && !(part.holes && self.whole_levels < expected) {
            return Err((
                0,
                format!(
                    "cells for {} (field, level) pairs, the partition measures {} fields \
                     at {levels} levels",
                    self.whole_levels,
                    part.measured.len()
                ),
            ));
        }
        Ok(())
    }
}

/// A cell's four placed points: inside the partition's axis range, `first` leftmost and `last`
/// rightmost, `min` and `max` the extreme values, `f64` values finite (from version 7,
/// `holes`: not NaN; an infinity is a value).
fn check_points(
    r: &CellRecord,
    kind: NumKind,
    [lo, hi]: [u64; 2],
    holes: bool,
) -> Result<(), String> {
    let point = |p: &PointRecord| (p.axis.get(), Num::from_le_bytes(kind, p.value));
    let [first, last, min, max] = [&r.first, &r.last, &r.min, &r.max].map(point);
    let points = [first, last, min, max];
    let refused = |f: f64| if holes { f.is_nan() } else { !f.is_finite() };
    if points
        .iter()
        .any(|&(_, v)| matches!(v, Num::F64(f) if refused(f)))
    {
        return Err(if holes {
            "a cell holds a NaN value".into()
        } else {
            "a cell holds a value that is not finite".into()
        });
    }
    if points.iter().any(|&(axis, _)| axis < lo || axis > hi) {
        return Err(format!(
            "a cell's point lies outside the partition's axis {lo}..={hi}"
        ));
    }
    let placed = [min.0, max.0]
        .iter()
        .all(|&axis| first.0 <= axis && axis <= last.0);
    if !placed {
        return Err("a cell's points are not placed between its first and last".into());
    }
    let below = |a: Num, b: Num| a.cmp_same_kind(b) != Ordering::Greater;
    let extremes = [first.1, last.1, max.1].iter().all(|&v| below(min.1, v))
        && [first.1, last.1].iter().all(|&v| below(v, max.1));
    if !extremes {
        return Err("a cell's min or max is not its extreme value".into());
    }
    Ok(())
}
