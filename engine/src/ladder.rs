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
/// it, as written (packed where packing makes them smaller, segment format 5): 9, so levels add
/// at most 11% to the rows they summarise, and are at most a tenth of the partition. (An
/// eighth until cells were packed, format 8: with cells at a fifth of their old cost, a ninth
/// keeps a full-precision random walk under 6.0 B a row — an eighth took it to 6.12, storing
/// cells of 128 rows where a ninth stores them from 256 — while a 3-decimal walk's still
/// stores cells of ~256 rows, `docs/format.md`, "Version 8".)
pub const LEVEL_BYTES_SHARE: u64 = 9;

/// Bytes a plain cell record costs on disk (a segment's CellRecord).
pub(crate) const CELL_BYTES: u64 = 104;

/// What a (field, level) of packed cells costs beside its cells, per chunk of at most
/// `CELLS_PER_CHUNK`: its twelve column lengths, twelve pco headers and its table record.
pub(crate) const CELL_CHUNK_BYTES: u64 = 384;

/// Bytes a packed cell (segment format 8) is reckoned to cost, for a partition whose axis and
/// stored columns take `column_bytes` for `n_rows` rows of `n_fields` measured fields: 12 and
/// five times what a field takes a row, at most a plain record's [`CELL_BYTES`]. A cell's
/// count and offsets cost ~2 bytes; its four values and two sums cost about what six of the
/// field's values cost packed, neighbours being alike. Measured at levels of 4 to 1024 rows a
/// cell (docs/format.md, "Version 8"): a 3-decimal random walk at 1.3 B a row 13–21 bytes a
/// cell (reckoned 19), a full-precision walk at 5.9 B 38–43 (42), noise at 7.0 B 42 (47).
pub(crate) fn packed_cell_bytes(column_bytes: u64, n_rows: u64, n_fields: u64) -> u64 {
    let rows = n_rows.max(1).saturating_mul(n_fields.max(1));
    (12 + column_bytes.saturating_mul(5) / rows).min(CELL_BYTES)
}

/// The lowest level to store whole, for a partition whose rows have `counts[k]` cells at level
/// `k` up to `top` (`Ladder::cells_per_level`), with `n_fields` measured fields and
/// `column_bytes` of axis and stored columns as written for its `n_rows` rows: the lowest
/// level whose cells, with every level above it to `top`, cost at most `column_bytes /
/// LEVEL_BYTES_SHARE`: packed ([`packed_cell_bytes`] a cell, [`CELL_CHUNK_BYTES`] a chunk;
/// [`CELL_BYTES`] a cell for a level of fewer than `RECORD_CHUNK_CELLS`, whose chunk holds
/// records) where the store packs (`Config::pack_columns`), else [`CELL_BYTES`] a cell;
/// `top + 1` (nothing stored, every level folded from the rows) if even `top`'s one cell a
/// field costs more.
pub(crate) fn stored_from(
    counts: &[u64],
    top: u8,
    n_fields: u64,
    column_bytes: u64,
    n_rows: u64,
    packed: bool,
) -> u8 {
    let allowed = column_bytes / LEVEL_BYTES_SHARE;
    let (cell, chunk) = if packed {
        (
            packed_cell_bytes(column_bytes, n_rows, n_fields),
            CELL_CHUNK_BYTES,
        )
    } else {
        (CELL_BYTES, 0)
    };
    let chunks = |n: u64| n.div_ceil(strata_segment::format::CELLS_PER_CHUNK as u64);
    let mut cost = 0u64;
    let mut lowest = top + 1;
    for level in (0..=top).rev() {
        let n = counts[usize::from(level)];
        // A level of a few cells is one chunk of their records (`RECORD_CHUNK_CELLS`).
        let few = packed && n < strata_segment::format::RECORD_CHUNK_CELLS as u64;
        let level_cost = if few {
            n.saturating_mul(CELL_BYTES)
        } else {
            n.saturating_mul(cell)
                .saturating_add(chunks(n).saturating_mul(chunk))
        }
        .saturating_mul(n_fields);
        cost = cost.saturating_add(level_cost);
        if cost > allowed {
            break;
        }
        lowest = level;
    }
    lowest
}
