//! `strata ingest` of Parquet files and Arrow IPC files or streams: the input's columns matched
//! to the stream's fields by name (as a CSV header is, `parse::Layout`: every field once, an
//! optional `position` column, nothing else), then copied a batch at a time into the same
//! [`Batch`] a CSV batch parses into, published through `Store::publish_columns_at`.
//!
//! What is refused, each naming the column and the row (counted from 1 through the whole
//! input): a column of a type the field cannot take without loss, a null, an integer out of the
//! field's range; the file itself when it is not Parquet or Arrow, is truncated or damaged
//! (a strata export's `strata:data_crc32c` is checked before anything is read). A refused
//! batch stores nothing, as in CSV.
//!
//! Types a field takes: `u64` from any integer column whose values are not negative; `i64`
//! from any integer column whose values fit; `f64` from float32 or float64; `str` from utf8,
//! large_utf8, utf8_view, or a dictionary of those; `bytes` from binary, large_binary,
//! binary_view or fixed_size_binary. The position column as `u64`.

use std::fs::File;
use std::io::{self, BufReader, Read, Seek, SeekFrom};
use std::path::Path;

use arrow_ipc::reader::{FileReader, StreamReader};
use csv::StringRecord;
use parquet::arrow::arrow_reader::{ParquetRecordBatchReader, ParquetRecordBatchReaderBuilder};
use parquet::file::reader::{FileReader as _, SerializedFileReader};
use strata::arrow_array::cast::AsArray;
use strata::arrow_array::types::{
    Float32Type, Float64Type, Int8Type, Int16Type, Int32Type, Int64Type, UInt8Type, UInt16Type,
    UInt32Type, UInt64Type,
};
use strata::arrow_array::{Array, ArrayRef, RecordBatch, RecordBatchReader};
use strata::arrow_schema::{DataType, SchemaRef};
use strata::{FieldKind, TimeUnit, Value};

use super::Failure;
use super::batch::{BadRow, Batch, Column, Run};
use super::export::{DATA_BYTES_KEY, DATA_CRC_KEY};
use super::magic::{Format, read_up_to};
use super::parse::Layout;

/// Rows the readers decode at a time (a batch is cut to the room the ingest has).
const READ_BATCH_ROWS: usize = 8192;

/// The decoder under an input.
enum Decoder {
    Parquet(ParquetRecordBatchReader),
    ArrowFile(FileReader<BufReader<File>>),
    ArrowStream(StreamReader<BufReader<Box<dyn Read>>>),
}

/// A Parquet or Arrow input, read a batch at a time.
pub struct Input {
    decoder: Decoder,
    schema: SchemaRef,
    /// A batch read and not yet all taken, and how many of its rows were taken.
    held: Option<(RecordBatch, usize)>,
    /// Rows handed out so far (the next row's number is this + 1).
    pub n_rows_read: u64,
    /// The input's name, as messages say it.
    pub name: String,
}

impl std::fmt::Debug for Input {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Input")
            .field("name", &self.name)
            .field("n_rows_read", &self.n_rows_read)
            .finish_non_exhaustive()
    }
}

impl Input {
    /// Opens `path` (or standard input for an Arrow stream: `None`) as `format`.
    pub fn open(path: Option<&Path>, format: Format) -> Result<Input, Failure> {
        let name = path.map_or_else(|| "standard input".to_owned(), |p| p.display().to_string());
        let bad = |what: &str, e: &dyn std::fmt::Display| {
            Failure::new(format!("{name} is not a readable {what} file: {e}"))
        };
        let decoder = match (format, path) {
            (Format::Parquet, None) => {
                return Err(Failure::new(
                    "Parquet is read from a file (its footer is at the end): give the file's \
                     path, not standard input",
                ));
            }
            (Format::Parquet, Some(path)) => {
                let file = File::open(path).map_err(|e| bad("Parquet", &e))?;
                check_strata_crc(&file).map_err(|e| bad("Parquet", &e))?;
                let reader = ParquetRecordBatchReaderBuilder::try_new(file)
                    .and_then(|b| b.with_batch_size(READ_BATCH_ROWS).build())
                    .map_err(|e| bad("Parquet", &e))?;
                Decoder::Parquet(reader)
            }
            (Format::Arrow, Some(path)) => {
                let mut file = File::open(path).map_err(|e| bad("Arrow", &e))?;
                let mut magic = [0u8; 6];
                let n = read_up_to(&mut file, &mut magic).map_err(|e| bad("Arrow", &e))?;
                file.seek(SeekFrom::Start(0))
                    .map_err(|e| bad("Arrow", &e))?;
                if &magic[..n] == b"ARROW1" {
                    let reader = FileReader::try_new_buffered(file, None)
                        .map_err(|e| bad("Arrow IPC", &e))?;
                    Decoder::ArrowFile(reader)
                } else {
                    let read: Box<dyn Read> = Box::new(file);
                    let reader = StreamReader::try_new_buffered(read, None)
                        .map_err(|e| bad("Arrow IPC stream", &e))?;
                    Decoder::ArrowStream(reader)
                }
            }
            (Format::Arrow, None) => return Input::stream(Box::new(io::stdin().lock()), name),
        };
        Ok(Input::of(decoder, name))
    }

    /// An Arrow IPC stream read from `read` (standard input, its first bytes already read to
    /// tell its format, and put back in front), named `name` in messages.
    pub fn stream(read: Box<dyn Read>, name: String) -> Result<Input, Failure> {
        let reader = StreamReader::try_new_buffered(read, None).map_err(|e| {
            Failure::new(format!(
                "{name} is not a readable Arrow IPC stream file: {e}"
            ))
        })?;
        Ok(Input::of(Decoder::ArrowStream(reader), name))
    }

    fn of(decoder: Decoder, name: String) -> Input {
        let schema = match &decoder {
            Decoder::Parquet(r) => r.schema(),
            Decoder::ArrowFile(r) => r.schema(),
            Decoder::ArrowStream(r) => r.schema(),
        };
        Input {
            decoder,
            schema,
            held: None,
            n_rows_read: 0,
            name,
        }
    }

    /// The column names, as a CSV header would give them.
    pub fn header(&self) -> StringRecord {
        self.schema
            .fields()
            .iter()
            .map(|f| f.name().as_str())
            .collect()
    }

    /// The next batch of rows from the decoder, or `None` at the end.
    fn decode(&mut self) -> Result<Option<RecordBatch>, String> {
        let next = match &mut self.decoder {
            Decoder::Parquet(r) => r.next(),
            Decoder::ArrowFile(r) => r.next(),
            Decoder::ArrowStream(r) => r.next(),
        };
        next.transpose()
            .map_err(|e| format!("cannot decode {}: {e}", self.name))
    }

    /// Up to `room` rows, as a slice of the batch at hand; `None` at the end of the input.
    fn take(&mut self, room: usize) -> Result<Option<RecordBatch>, BadRow> {
        loop {
            if let Some((batch, taken)) = &mut self.held {
                if *taken < batch.num_rows() {
                    let n = room.min(batch.num_rows() - *taken);
                    let slice = batch.slice(*taken, n);
                    *taken += n;
                    return Ok(Some(slice));
                }
                self.held = None;
            }
            let next_row = self.n_rows_read + 1;
            match self.decode().map_err(|reason| BadRow {
                line: next_row,
                reason,
            })? {
                Some(batch) => self.held = Some((batch, 0)),
                None => return Ok(None),
            }
        }
    }

    /// Reads up to `room` rows into a batch (an empty batch: the end), skipping rows numbered
    /// below `skip_before_row`; `assign` gives a position to each row when the input has none.
    pub fn read_batch(
        &mut self,
        layout: &Layout,
        room: u64,
        skip_before_row: u64,
        n_rows_skipped: &mut u64,
        mut assign: impl FnMut() -> Result<u64, String>,
    ) -> Result<Batch, BadRow> {
        let mut batch = Batch::new(layout);
        let room = usize::try_from(room).unwrap_or(usize::MAX);
        while batch.n_rows() < room {
            let Some(slice) = self.take(room - batch.n_rows())? else {
                break;
            };
            let first_row = self.n_rows_read + 1;
            self.n_rows_read += slice.num_rows() as u64;
            // Rows numbered below `skip_before_row` were stored by an earlier run.
            let skip = usize::try_from(skip_before_row.saturating_sub(first_row))
                .unwrap_or(usize::MAX)
                .min(slice.num_rows());
            *n_rows_skipped += skip as u64;
            let slice = slice.slice(skip, slice.num_rows() - skip);
            append(
                &mut batch,
                layout,
                &slice,
                first_row + skip as u64,
                &mut assign,
            )?;
        }
        batch.next_line = self.n_rows_read + 1;
        Ok(batch)
    }
}

/// Checks a strata export's crc32c (`strata:data_crc32c` over the first `strata:data_bytes`
/// bytes) before anything is decoded; a file without them (another tool's) has nothing to check.
fn check_strata_crc(file: &File) -> Result<(), String> {
    let Ok(reader) = SerializedFileReader::new(file.try_clone().map_err(|e| e.to_string())?) else {
        // The builder that follows says what is wrong with the footer.
        return Ok(());
    };
    let metadata = reader.metadata().file_metadata().key_value_metadata();
    let value = |key: &str| {
        metadata
            .and_then(|kv| kv.iter().find(|kv| kv.key == key))
            .and_then(|kv| kv.value.clone())
    };
    let (Some(crc), Some(bytes)) = (value(DATA_CRC_KEY), value(DATA_BYTES_KEY)) else {
        return Ok(());
    };
    let expected = u32::from_str_radix(&crc, 16)
        .map_err(|_| format!("{DATA_CRC_KEY} is {crc:?}, not a crc"))?;
    let bytes: u64 = bytes
        .parse()
        .map_err(|_| format!("{DATA_BYTES_KEY} is {bytes:?}, not a length"))?;
    let mut read = BufReader::new(file.try_clone().map_err(|e| e.to_string())?);
    read.seek(SeekFrom::Start(0)).map_err(|e| e.to_string())?;
    let mut left = bytes;
    let mut crc = 0u32;
    let mut buf = vec![0u8; 1 << 16];
    while left > 0 {
        let want = usize::try_from(left.min(buf.len() as u64)).unwrap_or(buf.len());
        let n = read.read(&mut buf[..want]).map_err(|e| e.to_string())?;
        if n == 0 {
            return Err(format!(
                "it is shorter than the {bytes} bytes of data its footer records (truncated?)"
            ));
        }
        crc = crc32c::crc32c_append(crc, &buf[..n]);
        left -= n as u64;
    }
    if crc != expected {
        return Err(format!(
            "its data does not match the crc32c its footer records ({crc:08x}, recorded \
             {expected:08x}): the file is damaged"
        ));
    }
    Ok(())
}

/// A column refused: where and why.
fn refuse(row: u64, column: &str, reason: impl std::fmt::Display) -> BadRow {
    BadRow {
        line: row,
        reason: format!("column {column:?}: {reason}"),
    }
}

/// Refuses a column with a null among `batch`'s rows, naming the first.
fn no_nulls(array: &dyn Array, name: &str, first_row: u64) -> Result<(), BadRow> {
    if array.null_count() == 0 {
        return Ok(());
    }
    let idx = (0..array.len()).find(|&i| array.is_null(i)).unwrap_or(0);
    Err(refuse(
        first_row + idx as u64,
        name,
        "is null (a stored row has a value in every field)",
    ))
}

/// An integer column's values as i128, or `None` if the column is not of an integer type.
fn integers(array: &dyn Array) -> Option<Vec<i128>> {
    macro_rules! widen {
        ($($t:ty),*) => {
            $(if let Some(a) = array.as_primitive_opt::<$t>() {
                return Some(a.values().iter().map(|&v| i128::from(v)).collect());
            })*
        };
    }
    widen!(
        UInt8Type, UInt16Type, UInt32Type, UInt64Type, Int8Type, Int16Type, Int32Type, Int64Type
    );
    None
}

/// `name`'s values as u64s (from `u64` without a copy per value through anything else).
fn u64s(array: &dyn Array, name: &str, first_row: u64) -> Result<Vec<u64>, BadRow> {
    narrowed::<UInt64Type>(array, name, first_row, "u64", "is not a u64 (below 0)")
}

/// `name`'s values as i64s (from `i64` without a copy per value through anything else).
fn i64s(array: &dyn Array, name: &str, first_row: u64) -> Result<Vec<i64>, BadRow> {
    narrowed::<Int64Type>(array, name, first_row, "i64", "does not fit an i64")
}

/// `name`'s values as `T`'s: copied whole from a `T` column, or narrowed one by one from
/// another integer column, a value that does not fit refused at its row as `misfit`.
fn narrowed<T>(
    array: &dyn Array,
    name: &str,
    first_row: u64,
    kind: &str,
    misfit: &str,
) -> Result<Vec<T::Native>, BadRow>
where
    T: strata::arrow_array::ArrowPrimitiveType,
    T::Native: TryFrom<i128>,
{
    if let Some(a) = array.as_primitive_opt::<T>() {
        return Ok(a.values().to_vec());
    }
    let values = integers(array).ok_or_else(|| wrong_type(array, name, first_row, kind))?;
    values
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            // A null slot holds no value to check: whatever is there stands in for it.
            let v = if array.is_null(i) { 0 } else { v };
            T::Native::try_from(v)
                .map_err(|_| refuse(first_row + i as u64, name, format!("{v} {misfit}")))
        })
        .collect()
}

/// A `u64` field's values: a time axis's from a timestamp column too ([`times`]).
fn u64s_of(
    field: &super::parse::Field,
    array: &dyn Array,
    first_row: u64,
) -> Result<Vec<u64>, BadRow> {
    match field.time {
        Some(unit) if matches!(array.data_type(), DataType::Timestamp(..)) => {
            times(array, unit, &field.name, first_row)
        }
        _ => u64s(array, &field.name, first_row),
    }
}

/// A timestamp column's values (#48) as `unit`s since the epoch, for a time axis: the column's
/// own unit converted exactly (a value finer than `unit`, or before the epoch, is refused at
/// its row). The time zone does not matter: Arrow's timestamps count from the epoch in UTC.
fn times(
    array: &dyn Array,
    unit: TimeUnit,
    name: &str,
    first_row: u64,
) -> Result<Vec<u64>, BadRow> {
    use strata::arrow_array::types::{
        TimestampMicrosecondType, TimestampMillisecondType, TimestampNanosecondType,
        TimestampSecondType,
    };
    use strata::arrow_schema::TimeUnit as Arrow;
    let (values, per_second): (&[i64], u64) = match array.data_type() {
        DataType::Timestamp(Arrow::Second, _) => {
            (array.as_primitive::<TimestampSecondType>().values(), 1)
        }
        DataType::Timestamp(Arrow::Millisecond, _) => (
            array.as_primitive::<TimestampMillisecondType>().values(),
            1_000,
        ),
        DataType::Timestamp(Arrow::Microsecond, _) => (
            array.as_primitive::<TimestampMicrosecondType>().values(),
            1_000_000,
        ),
        _ => (
            array.as_primitive::<TimestampNanosecondType>().values(),
            1_000_000_000,
        ),
    };
    let ours = unit.per_second();
    values
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            let bad = |why: &str| refuse(first_row + i as u64, name, format!("{v} {why}"));
            let v = u64::try_from(v).map_err(|_| bad("is before the Unix epoch"))?;
            if per_second >= ours {
                let factor = per_second / ours;
                if v % factor != 0 {
                    return Err(bad(&format!(
                        "is finer than the axis's unit ({})",
                        super::time::symbol(unit)
                    )));
                }
                Ok(v / factor)
            } else {
                v.checked_mul(ours / per_second)
                    .ok_or_else(|| bad("is past the last time a u64 axis holds"))
            }
        })
        .collect()
}

fn wrong_type(array: &dyn Array, name: &str, first_row: u64, kind: &str) -> BadRow {
    refuse(
        first_row,
        name,
        format!(
            "is {}, which a {kind} field cannot take (docs/formats.md lists the types each \
             kind takes)",
            array.data_type()
        ),
    )
}

/// The text or bytes of each row of a column of strings or binaries.
fn var_values<'a>(
    array: &'a dyn Array,
    text: bool,
    name: &str,
    first_row: u64,
) -> Result<Vec<&'a [u8]>, BadRow> {
    let n = array.len();
    if text {
        if let Some(a) = array.as_string_opt::<i32>() {
            return Ok((0..n).map(|i| a.value(i).as_bytes()).collect());
        }
        if let Some(a) = array.as_string_opt::<i64>() {
            return Ok((0..n).map(|i| a.value(i).as_bytes()).collect());
        }
        if let Some(a) = array.as_string_view_opt() {
            return Ok((0..n).map(|i| a.value(i).as_bytes()).collect());
        }
        if let Some(dict) = array.as_any_dictionary_opt() {
            let values = var_values(dict.values().as_ref(), true, name, first_row)?;
            let keys = dict.normalized_keys();
            return Ok(keys.iter().map(|&k| values[k]).collect());
        }
        return Err(wrong_type(array, name, first_row, "str"));
    }
    if let Some(a) = array.as_binary_opt::<i32>() {
        return Ok((0..n).map(|i| a.value(i)).collect());
    }
    if let Some(a) = array.as_binary_opt::<i64>() {
        return Ok((0..n).map(|i| a.value(i)).collect());
    }
    if let Some(a) = array.as_binary_view_opt() {
        return Ok((0..n).map(|i| a.value(i)).collect());
    }
    if let Some(a) = array.as_fixed_size_binary_opt() {
        return Ok((0..n).map(|i| a.value(i)).collect());
    }
    Err(wrong_type(array, name, first_row, "bytes"))
}

/// A track field's label in each row, as text (numbers in decimal, as a label holds them).
fn labels(
    array: &ArrayRef,
    kind: FieldKind,
    name: &str,
    first_row: u64,
) -> Result<Vec<Vec<u8>>, BadRow> {
    Ok(match kind {
        FieldKind::U64 => u64s(array.as_ref(), name, first_row)?
            .iter()
            .map(|v| v.to_string().into_bytes())
            .collect(),
        FieldKind::I64 => i64s(array.as_ref(), name, first_row)?
            .iter()
            .map(|v| v.to_string().into_bytes())
            .collect(),
        _ => var_values(array.as_ref(), true, name, first_row)?
            .into_iter()
            .map(<[u8]>::to_vec)
            .collect(),
    })
}

/// `name`'s values appended to `v`: from a `Float64` column as they are, a `Float32` one
/// widened (exactly).
fn f64s_into(
    v: &mut Vec<f64>,
    array: &dyn Array,
    name: &str,
    first_row: u64,
) -> Result<(), BadRow> {
    if let Some(a) = array.as_primitive_opt::<Float64Type>() {
        v.extend_from_slice(a.values());
    } else if let Some(a) = array.as_primitive_opt::<Float32Type>() {
        v.extend(a.values().iter().map(|&x| f64::from(x)));
    } else {
        return Err(wrong_type(array, name, first_row, "f64"));
    }
    Ok(())
}

/// A number column's array, its nulls noted as the batch's rows (`rows_before` on) in `nulls`:
/// a number may be missing, which the engine stores so in a measured field and refuses, naming
/// the field, in the axis. `None` for a text column, which may not be null.
fn nullable<'a>(
    out: &Column,
    array: &'a ArrayRef,
    rows_before: usize,
    nulls: &mut Vec<usize>,
) -> Option<&'a ArrayRef> {
    if !matches!(out, Column::U64(_) | Column::I64(_) | Column::F64(_)) {
        return None;
    }
    if array.null_count() > 0 {
        nulls.extend(
            (0..array.len())
                .filter(|&i| array.is_null(i))
                .map(|i| rows_before + i),
        );
    }
    Some(array)
}

/// Appends `slice`'s rows (the first numbered `first_row`) to `batch`.
fn append(
    batch: &mut Batch,
    layout: &Layout,
    slice: &RecordBatch,
    first_row: u64,
    assign: &mut impl FnMut() -> Result<u64, String>,
) -> Result<(), BadRow> {
    let n_rows = slice.num_rows();
    if n_rows == 0 {
        return Ok(());
    }
    let schema = slice.schema();
    let column = |idx: usize| -> Result<&ArrayRef, BadRow> {
        let array = slice.column(idx);
        no_nulls(array.as_ref(), schema.field(idx).name(), first_row)?;
        Ok(array)
    };
    // Track cells per row: a run continues while a row's cells equal the last row's.
    let mut track_cells: Vec<Vec<Vec<u8>>> = Vec::new();
    for field in layout.fields().iter().filter(|f| f.track_slot.is_some()) {
        let array = column(field.column)?;
        track_cells.push(labels(array, field.kind, &field.name, first_row)?);
    }
    // The track fields in the declaration's track order.
    let mut by_slot: Vec<(usize, usize, FieldKind, &str)> = layout
        .fields()
        .iter()
        .filter_map(|f| f.track_slot.map(|slot| (slot, f.kind, f.name.as_str())))
        .enumerate()
        .map(|(cells, (slot, kind, name))| (slot, cells, kind, name))
        .collect();
    by_slot.sort_unstable_by_key(|&(slot, ..)| slot);
    let rows_before = batch.n_rows();
    let mut columns = batch.columns.iter_mut().zip(&mut batch.nulls);
    for field in layout.fields().iter().filter(|f| f.track_slot.is_none()) {
        let name = field.name.as_str();
        let Some((out, nulls)) = columns.next() else {
            unreachable!("a column per field that is not part of the track")
        };
        let array = match nullable(out, slice.column(field.column), rows_before, nulls) {
            Some(array) => array,
            None => column(field.column)?,
        };
        match out {
            Column::U64(v) => v.extend(u64s_of(field, array.as_ref(), first_row)?),
            Column::I64(v) => v.extend(i64s(array.as_ref(), name, first_row)?),
            Column::F64(v) => f64s_into(v, array.as_ref(), name, first_row)?,
            Column::Str { heap, ends } => {
                for value in var_values(array.as_ref(), true, name, first_row)? {
                    // Arrow's strings are UTF-8 (checked when they were decoded).
                    heap.push_str(std::str::from_utf8(value).unwrap_or_default());
                    ends.push(heap.len());
                }
            }
            Column::Bytes { heap, ends } => {
                for value in var_values(array.as_ref(), false, name, first_row)? {
                    heap.extend_from_slice(value);
                    ends.push(heap.len());
                }
            }
        }
    }
    let positions = match layout.position_column() {
        Some(idx) => u64s(
            column(idx)?.as_ref(),
            super::parse::POSITION_COLUMN,
            first_row,
        )?,
        None => (0..n_rows)
            .map(|i| {
                assign().map_err(|reason| BadRow {
                    line: first_row + i as u64,
                    reason,
                })
            })
            .collect::<Result<_, _>>()?,
    };
    let start = batch.n_rows();
    for row in 0..n_rows {
        let continues = if row > 0 {
            track_cells.iter().all(|cells| cells[row] == cells[row - 1])
        } else {
            batch.continues_cells(&track_cells, 0)
        };
        if !continues {
            let mut track = Vec::with_capacity(by_slot.len());
            for &(_, cells, kind, name) in &by_slot {
                let text = String::from_utf8_lossy(&track_cells[cells][row]).into_owned();
                let value = match kind {
                    FieldKind::U64 => text.parse().map(Value::U64).map_err(|_| ()),
                    FieldKind::I64 => text.parse().map(Value::I64).map_err(|_| ()),
                    _ => Ok(Value::Str(text)),
                }
                .map_err(|()| refuse(first_row + row as u64, name, "is not a label"))?;
                track.push(value);
            }
            batch.runs.push(Run {
                start: start + row,
                track,
            });
        }
        batch.positions.push(positions[row]);
        batch.lines.push(first_row + row as u64);
    }
    batch.set_last_cells(&track_cells, n_rows - 1);
    Ok(())
}
