//! A barrier's levels, folded from its staged columns: each partition's rows as staging holds
//! them (`stage.rs`), folded up the ladder (`ladder.rs`) into the cells the segment stores.

use std::ops::Range;
use strata_index::StreamDecl;
use strata_levels::{Cell, Ladder, Num};

use strata_segment::Nulls;

use crate::ladder::{FieldLevels, LevelStorage, ladder_of, num_kind, stored_from};
use crate::write::stage::{ColumnBuf, Staged};

/// The cells of `level` that rows `axis` (with `shared` levels) of `column`, starting at row
/// `start` of it, fold to: the rows whose value is present, neither null (`nulls`, runs of the
/// column's rows) nor NaN. With none missing, the rows as they are.
#[allow(clippy::too_many_arguments)]
pub(crate) fn fold_column_to(
    ladder: &Ladder,
    field: u16,
    axis: &[u64],
    shared: &[u8],
    column: &ColumnBuf,
    nulls: &[Range<u64>],
    start: usize,
    level: u8,
) -> Vec<Cell> {
    let rows = start..start + axis.len();
    let null = Nulls::new(nulls);
    let nan = |row: usize| matches!(column, ColumnBuf::F64(v) if v[row].is_nan());
    let missing = |row: usize| null.contains(row) || nan(row);
    if null.count_in(rows.clone()) > 0 || rows.clone().any(nan) {
        // Fold the present rows alone, as rows of their own.
        let keep: Vec<usize> = rows.filter(|&row| !missing(row)).collect();
        let kept_axis: Vec<u64> = keep.iter().map(|&row| axis[row - start]).collect();
        let kept_shared = ladder.shared_levels(&kept_axis);
        return match column {
            ColumnBuf::U64(v) => ladder.fold_rows_to(
                field,
                &kept_axis,
                &kept_shared,
                |i| Num::U64(v[keep[i]]),
                level,
            ),
            ColumnBuf::I64(v) => ladder.fold_rows_to(
                field,
                &kept_axis,
                &kept_shared,
                |i| Num::I64(v[keep[i]]),
                level,
            ),
            ColumnBuf::F64(v) => {
                let values: Vec<f64> = keep.iter().map(|&row| v[row]).collect();
                ladder.fold_f64_rows_to(field, &kept_axis, &kept_shared, &values, level)
            }
            ColumnBuf::Var { .. } => Vec::new(),
        };
    }
    match column {
        ColumnBuf::U64(v) => {
            ladder.fold_rows_to(field, axis, shared, |i| Num::U64(v[start + i]), level)
        }
        ColumnBuf::I64(v) => {
            ladder.fold_rows_to(field, axis, shared, |i| Num::I64(v[start + i]), level)
        }
        ColumnBuf::F64(v) => {
            ladder.fold_f64_rows_to(field, axis, shared, &v[start..start + axis.len()], level)
        }
        ColumnBuf::Var { .. } => Vec::new(),
    }
}

/// Folds a staged partition's rows into every level it stores, per measured field, and
/// answers from which level the levels are stored whole (levels beneath it are empty: a
/// barrier's rows fold to exactly those cells, so none needs storing). `column_bytes` is what
/// its axis and stored columns took in the file (`RowsWritten::column_bytes`). Empty for a
/// stream without an axis (only an axial stream can be surveyed) or without measured fields.
pub(crate) fn fold_partition(
    decl: &StreamDecl,
    stored: &[u16],
    staged: &Staged,
    storage: LevelStorage,
    column_bytes: u64,
    packed: bool,
) -> (u8, Vec<FieldLevels>) {
    let (Some(_), Some(&lo), Some(&hi)) = (decl.axis, staged.axis.first(), staged.axis.last())
    else {
        return (0, Vec::new());
    };
    let ladder = ladder_of(decl);
    let top = ladder.top_level(lo, hi);
    let measured = decl.measured();
    let shared = ladder.shared_levels(&staged.axis);
    let from = match storage {
        LevelStorage::Whole => 0,
        LevelStorage::Adaptive => stored_from(
            &Ladder::cells_per_level(&shared, top),
            top,
            measured.len() as u64,
            column_bytes,
            staged.axis.len() as u64,
            packed,
        ),
    };
    let fields = measured
        .into_iter()
        .filter_map(|field| {
            let column_idx = stored.iter().position(|&s| s == field)?;
            let kind = num_kind(decl.fields[usize::from(field)].kind)?;
            if matches!(staged.columns[column_idx], ColumnBuf::Var { .. }) {
                return None;
            }
            let mut levels = vec![Vec::new(); usize::from(from.min(top + 1))];
            if from <= top {
                let column = &staged.columns[column_idx];
                levels.push(fold_column_to(
                    &ladder,
                    field,
                    &staged.axis,
                    &shared,
                    column,
                    &staged.nulls[column_idx],
                    0,
                    from,
                ));
                for _ in from..top {
                    let next = ladder.fold_level(levels.last().expect("one level is there"));
                    levels.push(next);
                }
            }
            Some(FieldLevels {
                field,
                kind,
                levels,
            })
        })
        .collect();
    (from, fields)
}
