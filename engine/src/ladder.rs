//! Levels at seal: each barrier folds every partition's new rows into the cells of every level
//! of the stream's ladder, written beside the raw columns in the same segment.
//!
//! A barrier stores levels 0 ..= top, where top is the lowest level at which one cell covers the
//! partition's rows in this barrier. Levels above a file's top hold that same single bucket under
//! index `top_index / fanout^(k - top)`, so reads derive them instead of storing them. A cell
//! that straddles two barriers is stored once in each (two partial cells) and merged at read,
//! older first; by the merge law that is the whole cell.

use strata_index::{FieldKind, StreamDecl};
use strata_levels::{Cell, Ladder, NumKind};

use strata_segment::FieldCells;

/// One measured field's cells, every level from 0 up.
pub(crate) struct FieldLevels {
    pub field: u16,
    pub kind: NumKind,
    pub levels: Vec<Vec<Cell>>,
}

/// What the segment writer takes for a partition's level cells.
pub(crate) fn field_cells(levels: &[FieldLevels]) -> Vec<FieldCells<'_>> {
    levels
        .iter()
        .map(|f| FieldCells {
            field: f.field,
            kind: f.kind,
            levels: &f.levels,
        })
        .collect()
}

/// The ladder a declaration asks for.
pub(crate) fn ladder_of(decl: &StreamDecl) -> Ladder {
    Ladder::new(decl.ladder.base, decl.ladder.fanout)
        .expect("declarations are validated: base >= 1, fanout >= 2")
}

/// The numeric kind of a measured field.
pub(crate) fn num_kind(kind: FieldKind) -> Option<NumKind> {
    match kind {
        FieldKind::U64 => Some(NumKind::U64),
        FieldKind::I64 => Some(NumKind::I64),
        FieldKind::F64 => Some(NumKind::F64),
        _ => None,
    }
}

/// How a store keeps level cells (`Config::level_storage`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum LevelStorage {
    /// Every level is stored whole in every file, as builds before #29 stored them.
    Whole,
    /// Each file stores a partition's levels only from the lowest level whose stored cells
    /// cost at most [`LEVEL_BYTES_SHARE`] of the partition's raw column bytes in that file;
    /// a finer level is folded from the raw rows when it is read (the merge law makes it the
    /// same cells, bit for bit). A file keeps its rows as long as any of its levels, so a
    /// level it folds from them lives exactly as long as a stored one would. The default.
    #[default]
    Adaptive,
}

/// Under [`LevelStorage::Adaptive`], the most a file's stored level cells may cost, as a
/// share (`1 / LEVEL_BYTES_SHARE`) of the bytes the partition's axis and stored columns take in
/// it, as written (packed where packing makes them smaller, segment format 5): 8, so levels add
/// at most 12.5% to the rows they summarise, and are at most a ninth of the partition.
pub const LEVEL_BYTES_SHARE: u64 = 8;

/// Bytes one cell costs on disk (a segment's CellRecord).
pub(crate) const CELL_BYTES: u64 = 104;

/// The lowest level to store whole, for a partition whose rows have `counts[k]` cells at level
/// `k` up to `top` (`Ladder::cells_per_level`), with `n_fields` measured fields and
/// `column_bytes` of axis and stored columns as written: the lowest level whose cells, with
/// every level above it to `top`, cost at most `column_bytes / LEVEL_BYTES_SHARE`; `top + 1`
/// (nothing stored, every level folded from the rows) if even `top`'s one cell a field costs
/// more.
pub(crate) fn stored_from(counts: &[u64], top: u8, n_fields: u64, column_bytes: u64) -> u8 {
    let allowed = column_bytes / LEVEL_BYTES_SHARE;
    let mut cost = 0u64;
    let mut lowest = top + 1;
    for level in (0..=top).rev() {
        cost = cost.saturating_add(
            counts[usize::from(level)]
                .saturating_mul(n_fields)
                .saturating_mul(CELL_BYTES),
        );
        if cost > allowed {
            break;
        }
        lowest = level;
    }
    lowest
}
