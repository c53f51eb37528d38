//! Levels at seal: each barrier folds every partition's new rows into the cells of every level
//! of the stream's ladder, written beside the raw columns in the same segment.
//!
//! A barrier stores levels 0 ..= top, where top is the lowest level at which one cell covers the
//! partition's rows in this barrier. Levels above a file's top hold that same single bucket under
//! index `top_index / fanout^(k - top)`, so reads derive them instead of storing them. A cell
//! that straddles two barriers is stored once in each (two partial cells) and merged at read,
//! older first; by the merge law that is the whole cell.

use strata_index::{FieldKind, StreamDecl};
use strata_levels::{Cell, Ladder, Num, NumKind};

use crate::stage::{ColumnBuf, Staged};

/// One measured field's cells, every level from 0 up.
pub(crate) struct FieldLevels {
    pub field: u16,
    pub kind: NumKind,
    pub levels: Vec<Vec<Cell>>,
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

/// Folds a staged partition's rows into every level, per measured field. Empty for a stream
/// without an axis (only an axial stream can be surveyed) or without measured fields.
pub(crate) fn fold_partition(
    decl: &StreamDecl,
    stored: &[u16],
    staged: &Staged,
) -> Vec<FieldLevels> {
    let (Some(_), Some(&lo), Some(&hi)) = (decl.axis, staged.axis.first(), staged.axis.last())
    else {
        return Vec::new();
    };
    let ladder = ladder_of(decl);
    let top = ladder.top_level(lo, hi);
    // Level 0 has at most a cell per row, and at most the cells the axis range spans: room for
    // that many is made once, so the fold never holds a vector and its doubled copy.
    let spanned = ladder.cell(hi, 0) - ladder.cell(lo, 0);
    let capacity = usize::try_from(spanned)
        .map_or(usize::MAX, |s| s.saturating_add(1))
        .min(staged.axis.len());
    decl.measured()
        .into_iter()
        .filter_map(|field| {
            let column_idx = stored.iter().position(|&s| s == field)?;
            let kind = num_kind(decl.fields[usize::from(field)].kind)?;
            let axes = staged.axis.iter().copied();
            let mut levels = vec![match &staged.columns[column_idx] {
                ColumnBuf::U64(v) => ladder.fold_rows_with_capacity(
                    field,
                    axes.zip(v.iter().map(|&x| Num::U64(x))),
                    capacity,
                ),
                ColumnBuf::I64(v) => ladder.fold_rows_with_capacity(
                    field,
                    axes.zip(v.iter().map(|&x| Num::I64(x))),
                    capacity,
                ),
                // The common measured kind, folded straight from the slices.
                ColumnBuf::F64(v) => ladder.fold_f64_rows(field, &staged.axis, v, capacity),
                ColumnBuf::Var { .. } => return None,
            }];
            for _ in 0..top {
                let next = ladder.fold_level(levels.last().expect("level 0 is there"));
                levels.push(next);
            }
            Some(FieldLevels {
                field,
                kind,
                levels,
            })
        })
        .collect()
}
