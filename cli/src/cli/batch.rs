//! A batch of CSV records as columns: what `strata ingest` parses a batch into before any of it
//! is published, and publishes one run of rows of one track at a time through
//! `Store::publish_columns_at` (a copy per column, no `Value` or `String` per row).
//!
//! Cells are read from byte records with no allocation per field. Numbers take a fast path for
//! the common spelling (plain digits; a float `f64::from_str` takes as it is) and fall back to
//! the text path `parse.rs` has always taken, so what is accepted, and every refusal's words,
//! are what they were: the fast path only ever answers where the text path answers the same.

use std::ops::Range;

use csv::ByteRecord;
use strata::{EngineError, FieldKind, Store, Value, Values};

use super::parse::{self, Layout};

/// One non-track field's values for the rows of a batch.
#[derive(Debug)]
pub(super) enum Column {
    U64(Vec<u64>),
    I64(Vec<i64>),
    F64(Vec<f64>),
    /// Text: every row's bytes one after another, and where each row's end.
    Str {
        heap: String,
        ends: Vec<usize>,
    },
    Bytes {
        heap: Vec<u8>,
        ends: Vec<usize>,
    },
}

impl Column {
    fn new(kind: FieldKind) -> Column {
        match kind {
            FieldKind::U64 => Column::U64(Vec::new()),
            FieldKind::I64 => Column::I64(Vec::new()),
            FieldKind::F64 => Column::F64(Vec::new()),
            FieldKind::Str => Column::Str {
                heap: String::new(),
                ends: Vec::new(),
            },
            _ => Column::Bytes {
                heap: Vec::new(),
                ends: Vec::new(),
            },
        }
    }
}

/// The text values of `rows`, as slices of the heap.
fn pieces<'a, T: ?Sized>(
    ends: &[usize],
    rows: &Range<usize>,
    slice: impl Fn(Range<usize>) -> &'a T,
) -> Vec<&'a T> {
    rows.clone()
        .map(|row| {
            let start = if row == 0 { 0 } else { ends[row - 1] };
            slice(start..ends[row])
        })
        .collect()
}

/// Consecutive rows of a batch with the same track cells, and the track's values.
#[derive(Debug)]
pub(super) struct Run {
    pub(super) start: usize,
    /// In the order the declaration names the track's fields.
    pub(super) track: Vec<Value>,
}

/// A row that refused its batch: where, and why.
#[derive(Debug)]
pub struct BadRow {
    pub line: u64,
    pub reason: String,
}

/// Rows parsed from consecutive CSV records, as columns, with each row's position and CSV line.
#[derive(Debug)]
pub struct Batch {
    pub positions: Vec<u64>,
    pub lines: Vec<u64>,
    /// One per field that is not part of the track, in declaration order (the axis included).
    pub(super) columns: Vec<Column>,
    /// Per column, the rows (ascending) whose value is missing: an empty CSV cell, an Arrow
    /// null. The column holds a placeholder there; it is published as null.
    pub(super) nulls: Vec<Vec<usize>>,
    pub(super) runs: Vec<Run>,
    /// The last row's track cells as they were written, one after another, and where each
    /// ends: a row whose cells are the same bytes continues its run, with nothing parsed.
    last_track: Vec<u8>,
    last_track_ends: Vec<usize>,
    /// The CSV line where the input continues after this batch.
    pub next_line: u64,
}

impl Batch {
    pub fn new(layout: &Layout) -> Batch {
        Batch {
            positions: Vec::new(),
            lines: Vec::new(),
            columns: layout
                .fields()
                .iter()
                .filter(|field| field.track_slot.is_none())
                .map(|field| Column::new(field.kind))
                .collect(),
            nulls: layout
                .fields()
                .iter()
                .filter(|field| field.track_slot.is_none())
                .map(|_| Vec::new())
                .collect(),
            runs: Vec::new(),
            last_track: Vec::new(),
            last_track_ends: Vec::new(),
            next_line: 0,
        }
    }

    pub fn n_rows(&self) -> usize {
        self.lines.len()
    }

    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    /// Whether row `row` of columnar track cells (`cells[field][row]`) continues the last
    /// row's run, byte for byte.
    #[cfg(feature = "parquet")]
    pub(super) fn continues_cells(&self, cells: &[Vec<Vec<u8>>], row: usize) -> bool {
        if self.runs.is_empty() {
            return false;
        }
        let mut start = 0;
        cells
            .iter()
            .zip(&self.last_track_ends)
            .all(|(cells, &end)| {
                let same = cells[row] == self.last_track[start..end];
                start = end;
                same
            })
    }

    /// Records row `row` of columnar track cells as the last row's, for the next slice.
    #[cfg(feature = "parquet")]
    pub(super) fn set_last_cells(&mut self, cells: &[Vec<Vec<u8>>], row: usize) {
        self.last_track.clear();
        self.last_track_ends.clear();
        for cells in cells {
            self.last_track.extend_from_slice(&cells[row]);
            self.last_track_ends.push(self.last_track.len());
        }
    }

    /// Whether `record`'s track cells are the last row's, byte for byte.
    fn continues_run(&self, layout: &Layout, record: &ByteRecord) -> bool {
        if self.runs.is_empty() {
            return false;
        }
        let mut start = 0;
        layout
            .track_columns()
            .iter()
            .zip(&self.last_track_ends)
            .all(|(&column, &end)| {
                let same = cell(record, column) == &self.last_track[start..end];
                start = end;
                same
            })
    }

    /// Parses `record` (CSV line `line`) onto the end of the batch, checking it in the order
    /// `Layout::row` always has: its length, its position column, then its fields in
    /// declaration order; a row without a position column is assigned one last, so a bad cell
    /// is named before exhausted positions. On an error the batch is left part-filled: it is
    /// then dropped whole, unpublished.
    pub fn push(
        &mut self,
        layout: &Layout,
        record: &ByteRecord,
        line: u64,
        assign_position: impl FnOnce() -> Result<u64, String>,
    ) -> Result<(), String> {
        layout.check_len(record.len())?;
        let given_position = match layout.position_column() {
            Some(column) => {
                let bytes = cell(record, column);
                Some(match fast_u64(bytes) {
                    Some(position) => position,
                    None => parse::position(text(bytes)?)?,
                })
            }
            None => None,
        };
        let same_track = self.continues_run(layout, record);
        let mut track = Vec::new();
        if !same_track {
            track.resize(layout.track_columns().len(), Value::U64(0));
        }
        let row = self.lines.len();
        let mut columns = self.columns.iter_mut().zip(&mut self.nulls);
        for field in layout.fields() {
            let bytes = cell(record, field.column);
            if let Some(slot) = field.track_slot {
                if !same_track {
                    track[slot] = field.value(text(bytes)?)?;
                }
                continue;
            }
            let Some((column, nulls)) = columns.next() else {
                unreachable!("a column per field that is not part of the track")
            };
            if push_missing(column, bytes) {
                nulls.push(row);
            } else {
                push_cell(column, field, bytes)?;
            }
        }
        let position = match given_position {
            Some(position) => position,
            None => assign_position()?,
        };
        if !same_track {
            self.runs.push(Run {
                start: self.lines.len(),
                track,
            });
            self.last_track.clear();
            self.last_track_ends.clear();
            for &column in layout.track_columns() {
                self.last_track.extend_from_slice(cell(record, column));
                self.last_track_ends.push(self.last_track.len());
            }
        }
        self.positions.push(position);
        self.lines.push(line);
        Ok(())
    }

    /// Publishes the batch: one call per run of rows of one track. An error names the CSV
    /// line of the row the engine refused.
    pub fn publish(&self, store: &mut Store, stream: &str) -> Result<(), BadRow> {
        for (run_idx, run) in self.runs.iter().enumerate() {
            let end = self
                .runs
                .get(run_idx + 1)
                .map_or(self.n_rows(), |next| next.start);
            let rows = run.start..end;
            // Text columns as slices of their heaps; numbers are borrowed as they are.
            let texts: Vec<Vec<&str>> = self
                .columns
                .iter()
                .filter_map(|c| match c {
                    Column::Str { heap, ends } => Some(pieces(ends, &rows, |r| &heap[r])),
                    _ => None,
                })
                .collect();
            let blobs: Vec<Vec<&[u8]>> = self
                .columns
                .iter()
                .filter_map(|c| match c {
                    Column::Bytes { heap, ends } => Some(pieces(ends, &rows, |r| &heap[r])),
                    _ => None,
                })
                .collect();
            let (mut texts, mut blobs) = (texts.iter(), blobs.iter());
            // A number column with a missing value among these rows, as `Option`s.
            let optional: Vec<Option<Optional>> = self
                .columns
                .iter()
                .zip(&self.nulls)
                .map(|(c, nulls)| Optional::of(c, nulls, &rows))
                .collect();
            let columns: Vec<Values<'_>> = self
                .columns
                .iter()
                .zip(&optional)
                .map(|(c, optional)| match (c, optional) {
                    (_, Some(Optional::U64(v))) => Values::OptU64(v),
                    (_, Some(Optional::I64(v))) => Values::OptI64(v),
                    (_, Some(Optional::F64(v))) => Values::OptF64(v),
                    (Column::U64(v), None) => Values::U64(&v[rows.clone()]),
                    (Column::I64(v), None) => Values::I64(&v[rows.clone()]),
                    (Column::F64(v), None) => Values::F64(&v[rows.clone()]),
                    (Column::Str { .. }, None) => {
                        Values::Str(texts.next().map_or(&[][..], Vec::as_slice))
                    }
                    (Column::Bytes { .. }, None) => {
                        Values::Bytes(blobs.next().map_or(&[][..], Vec::as_slice))
                    }
                })
                .collect();
            let labels: Vec<String> = run.track.iter().filter_map(Value::label).collect();
            let labels: Vec<&str> = labels.iter().map(String::as_str).collect();
            store
                .publish_columns_at(stream, &self.positions[rows.clone()], &labels, &columns)
                .map_err(|error| match error {
                    EngineError::Refused {
                        row_idx, reason, ..
                    } => BadRow {
                        line: self
                            .lines
                            .get(run.start + row_idx)
                            .copied()
                            .unwrap_or(self.lines[run.start]),
                        reason,
                    },
                    other => BadRow {
                        line: self.lines[run.start],
                        reason: other.to_string(),
                    },
                })?;
        }
        Ok(())
    }
}

/// A number column's values for some rows, with `None` where a value is missing.
enum Optional {
    U64(Vec<Option<u64>>),
    I64(Vec<Option<i64>>),
    F64(Vec<Option<f64>>),
}

impl Optional {
    /// `column`'s `rows` with their `nulls` (batch rows, ascending); `None` if none of the
    /// rows is null.
    fn of(column: &Column, nulls: &[usize], rows: &Range<usize>) -> Option<Optional> {
        let first = nulls.partition_point(|&r| r < rows.start);
        let nulls = &nulls[first..nulls.partition_point(|&r| r < rows.end)];
        if nulls.is_empty() {
            return None;
        }
        Some(match column {
            Column::U64(v) => Optional::U64(with(v, nulls, rows)),
            Column::I64(v) => Optional::I64(with(v, nulls, rows)),
            Column::F64(v) => Optional::F64(with(v, nulls, rows)),
            Column::Str { .. } | Column::Bytes { .. } => {
                unreachable!("only a number column records missing values")
            }
        })
    }
}

/// `values[rows]` with `None` at `nulls` (batch rows inside `rows`).
fn with<T: Copy>(values: &[T], nulls: &[usize], rows: &Range<usize>) -> Vec<Option<T>> {
    let mut out: Vec<Option<T>> = values[rows.clone()].iter().copied().map(Some).collect();
    for &row in nulls {
        out[row - rows.start] = None;
    }
    out
}

/// A missing value (an empty cell, spaces alone) in a number column: pushes a placeholder and
/// answers true. Anything else, and any cell of a text column, is left to `push_cell`. The
/// engine takes the null in a measured field and refuses it, naming the field, in the axis.
pub(super) fn push_missing(column: &mut Column, bytes: &[u8]) -> bool {
    if !bytes.iter().all(u8::is_ascii_whitespace) {
        return false;
    }
    match column {
        Column::U64(values) => values.push(0),
        Column::I64(values) => values.push(0),
        Column::F64(values) => values.push(0.0),
        Column::Str { .. } | Column::Bytes { .. } => return false,
    }
    true
}

/// Parses one cell onto the end of its column.
fn push_cell(column: &mut Column, field: &parse::Field, bytes: &[u8]) -> Result<(), String> {
    match column {
        Column::U64(values) => values.push(match fast_u64(bytes) {
            Some(v) => v,
            None => field.u64(text(bytes)?)?,
        }),
        Column::I64(values) => values.push(match fast_i64(bytes) {
            Some(v) => v,
            None => field.i64(text(bytes)?)?,
        }),
        Column::F64(values) => {
            let text = text(bytes)?;
            // `f64::from_str` refuses surrounding spaces; the text path trims them first.
            values.push(match text.parse() {
                Ok(v) => v,
                Err(_) => field.f64(text)?,
            });
        }
        Column::Str { heap, ends } => {
            heap.push_str(text(bytes)?);
            ends.push(heap.len());
        }
        Column::Bytes { heap, ends } => {
            heap.extend(field.bytes(text(bytes)?)?);
            ends.push(heap.len());
        }
    }
    Ok(())
}

/// Plain decimal digits that fit a u64 without a check: the common spelling.
fn fast_u64(bytes: &[u8]) -> Option<u64> {
    // 19 digits never overflow a u64; a longer number takes the text path.
    if bytes.is_empty() || bytes.len() > 19 {
        return None;
    }
    let mut value = 0u64;
    for &b in bytes {
        let digit = b.wrapping_sub(b'0');
        if digit > 9 {
            return None;
        }
        value = value * 10 + u64::from(digit);
    }
    Some(value)
}

/// An optional minus sign and plain decimal digits that fit an i64 without a check.
fn fast_i64(bytes: &[u8]) -> Option<i64> {
    let (negative, digits) = match bytes.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, bytes),
    };
    // 18 digits never overflow an i64.
    if digits.len() > 18 {
        return None;
    }
    let magnitude = i64::try_from(fast_u64(digits)?).ok()?;
    Some(if negative { -magnitude } else { magnitude })
}

/// A cell's text. Records are checked to be UTF-8 whole before their cells are read (as a
/// `StringRecord` is), so this only fails on a record that was not checked.
fn text(bytes: &[u8]) -> Result<&str, String> {
    std::str::from_utf8(bytes).map_err(|e| format!("a cell is not valid UTF-8: {e}"))
}

/// A cell of a record (a record of the header's length, checked first).
fn cell(record: &ByteRecord, column: usize) -> &[u8] {
    record.get(column).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fast_paths_answer_only_what_the_text_path_answers() {
        for text in [
            "0",
            "7",
            "18446744073709551615",
            "1844674407370955161",
            "0007",
            "+5",
            " 5",
            "5 ",
            "",
            "-",
            "-0",
            "-9223372036854775808",
            "-922337203685477580",
            "12a",
            "١",
        ] {
            let bytes = text.as_bytes();
            if let Some(v) = fast_u64(bytes) {
                assert_eq!(Ok(v), text.trim().parse::<u64>(), "{text:?}");
            }
            if let Some(v) = fast_i64(bytes) {
                assert_eq!(Ok(v), text.trim().parse::<i64>(), "{text:?}");
            }
        }
        assert_eq!(
            fast_u64(b"1844674407370955161"),
            Some(1_844_674_407_370_955_161)
        );
        assert_eq!(
            fast_i64(b"-922337203685477580"),
            Some(-922_337_203_685_477_580)
        );
        assert_eq!(fast_u64(b" 5"), None, "spaces take the text path");
        assert_eq!(fast_u64(b"+5"), None);
        assert_eq!(fast_u64(b""), None);
        assert_eq!(fast_i64(b"-"), None);
    }
}
