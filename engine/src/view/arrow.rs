//! Arrow out (the `arrow` feature): a query as Arrow `RecordBatch`es in publish order, each at
//! most `Config::arrow_batch_rows` rows, built from the query's runs; and a survey or a fold as
//! one `RecordBatch`.
//!
//! A batch's columns are `position` (u64), then every field of the declaration in declaration
//! order — the columns `strata query` prints, so a CSV and an Arrow answer of one query share a
//! schema. Track fields of kind `str` are dictionary-encoded (`Dictionary(Int32, Utf8)`: a track
//! repeats its labels down every row of its runs); numbers are their own Arrow type; `str` and
//! `bytes` fields are `LargeUtf8` and `LargeBinary` (64-bit offsets: a batch of long values
//! never overflows them). Fixed-width columns are copied once, from the mapped or decoded block
//! into the batch's buffer: no `Value` per row.
//!
//! The schema's metadata carries the stream (`strata:stream`) and its declaration in words
//! (`strata:declaration`, as [`crate::describe`] writes it), so a file written from a batch
//! says where it came from.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::types::{
    Int32Type, TimestampMicrosecondType, TimestampMillisecondType, TimestampNanosecondType,
    TimestampSecondType,
};
use arrow_array::{
    ArrayRef, DictionaryArray, Float64Array, Int32Array, Int64Array, LargeBinaryArray,
    LargeStringArray, PrimitiveArray, RecordBatch, StringArray, UInt64Array,
};
use arrow_buffer::{Buffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::{ArrowError, DataType, Field, Schema, SchemaRef};
use strata_index::{FieldKind, FileName, StreamDecl, TimeUnit, TrackKey};
use strata_levels::{Aggregate, Num, NumKind};
use strata_segment::Column;

use crate::decl::{POSITION_COLUMN, describe};
use crate::error::EngineError;
use crate::view::View;
use crate::view::runs::{ColumnRun, QueryRuns};
use crate::view::survey::{FieldStat, Survey};

/// The time zone a time axis carries as an Arrow timestamp: the axis counts from the epoch in
/// UTC.
pub const ARROW_TIME_ZONE: &str = "UTC";

/// Arrow's unit for a time axis declared in `unit`.
pub fn arrow_time_unit(unit: TimeUnit) -> arrow_schema::TimeUnit {
    use arrow_schema::TimeUnit as Arrow;
    match unit {
        TimeUnit::Seconds => Arrow::Second,
        TimeUnit::Millis => Arrow::Millisecond,
        TimeUnit::Nanos => Arrow::Nanosecond,
        _ => Arrow::Microsecond,
    }
}

/// A time axis's values (`UInt64`, as a query's batch holds them) as Arrow timestamps of `unit`
/// in UTC ([`ARROW_TIME_ZONE`]), its nulls kept: what `strata export` writes and Python's
/// `query_arrow` answers for a time axis. Refused, naming it, for a value past the last an
/// Arrow timestamp holds (`i64::MAX`).
pub fn arrow_timestamps(values: &UInt64Array, unit: TimeUnit) -> Result<ArrayRef, String> {
    let signed: Vec<i64> = values
        .values()
        .iter()
        .map(|&v| {
            i64::try_from(v).map_err(|_| {
                format!("axis value {v} is past the last time an Arrow timestamp holds (2^63 - 1)")
            })
        })
        .collect::<Result<_, _>>()?;
    let nulls = arrow_array::Array::nulls(values).cloned();
    let zone = ARROW_TIME_ZONE;
    Ok(match unit {
        TimeUnit::Seconds => Arc::new(
            PrimitiveArray::<TimestampSecondType>::new(signed.into(), nulls).with_timezone(zone),
        ),
        TimeUnit::Millis => Arc::new(
            PrimitiveArray::<TimestampMillisecondType>::new(signed.into(), nulls)
                .with_timezone(zone),
        ),
        TimeUnit::Nanos => Arc::new(
            PrimitiveArray::<TimestampNanosecondType>::new(signed.into(), nulls)
                .with_timezone(zone),
        ),
        _ => Arc::new(
            PrimitiveArray::<TimestampMicrosecondType>::new(signed.into(), nulls)
                .with_timezone(zone),
        ),
    })
}

/// A stream's batches with its time axis as Arrow timestamps (`Timestamp(unit, "UTC")`, the same
/// integers): the `UInt64` columns of the axis, or of a survey's placed points, turned into
/// timestamps of the declared unit, so DuckDB, pandas and Polars read times. Used by `strata
/// export` and Python's Arrow answers.
#[derive(Debug)]
pub struct Timestamper {
    unit: TimeUnit,
    columns: Vec<usize>,
    schema: SchemaRef,
}

impl Timestamper {
    /// For a batch of `schema` from `decl`'s stream: its axis column (rows), or every
    /// `*_axis` column (a survey's placed points). `None` when the axis is not time.
    pub fn new(schema: &Schema, decl: &StreamDecl, survey: bool) -> Option<Timestamper> {
        let unit = decl.time.filter(|_| decl.axis.is_some())?;
        let axis_name = decl
            .axis
            .and_then(|idx| decl.fields.get(usize::from(idx)))?
            .name
            .as_str();
        let columns: Vec<usize> = schema
            .fields()
            .iter()
            .enumerate()
            .filter(|(_, field)| field.data_type() == &DataType::UInt64)
            .filter(|(_, field)| {
                if survey {
                    field.name().ends_with("_axis")
                } else {
                    field.name() == axis_name
                }
            })
            .map(|(idx, _)| idx)
            .collect();
        let fields: Vec<Arc<Field>> = schema
            .fields()
            .iter()
            .enumerate()
            .map(|(idx, field)| {
                if columns.contains(&idx) {
                    Arc::new(field.as_ref().clone().with_data_type(DataType::Timestamp(
                        arrow_time_unit(unit),
                        Some(ARROW_TIME_ZONE.into()),
                    )))
                } else {
                    Arc::clone(field)
                }
            })
            .collect();
        let schema = Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()));
        Some(Timestamper {
            unit,
            columns,
            schema,
        })
    }

    /// The schema of the batches [`Timestamper::apply`] makes.
    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// `batch` with its time columns as timestamps.
    pub fn apply(&self, batch: &RecordBatch) -> Result<RecordBatch, String> {
        let mut columns = batch.columns().to_vec();
        for &idx in &self.columns {
            let Some(values) = columns[idx].as_any().downcast_ref::<UInt64Array>() else {
                return Err(format!("column {idx} is not the u64 axis it was"));
            };
            columns[idx] = arrow_timestamps(values, self.unit)?;
        }
        RecordBatch::try_new(Arc::clone(&self.schema), columns).map_err(|e| e.to_string())
    }
}

/// The schema metadata key naming the stream a batch came from.
pub const ARROW_STREAM_KEY: &str = "strata:stream";
/// The schema metadata key holding the stream's declaration in words ([`crate::describe`]).
pub const ARROW_DECLARATION_KEY: &str = "strata:declaration";

/// A query's rows as Arrow batches, in publish order: see [`Store::query_arrow`].
#[derive(Debug)]
pub struct ArrowBatches<'s> {
    decl: &'s StreamDecl,
    schema: SchemaRef,
    runs: QueryRuns<'s>,
    /// The run being copied, and how many of its rows were copied.
    run: Option<(ColumnRun, usize)>,
    rows_max: usize,
    with_position: bool,
    /// An error was yielded: nothing follows it.
    failed: bool,
}

/// One field's values for the rows of the batch being built.
enum Building {
    U64(Vec<u64>),
    I64(Vec<i64>),
    F64(Vec<f64>),
    /// Values one after another in `heap`; `offsets` starts at 0 and has one more entry than
    /// there are rows.
    Var {
        offsets: Vec<i64>,
        heap: Vec<u8>,
        text: bool,
    },
    /// A `str` track field: a key per row into the batch's distinct labels.
    Labels {
        keys: Vec<i32>,
        labels: Vec<String>,
        index: HashMap<String, i32>,
    },
}

impl Building {
    fn new(kind: FieldKind, track: bool, rows: usize) -> Building {
        match kind {
            FieldKind::Str if track => Building::Labels {
                keys: Vec::with_capacity(rows),
                labels: Vec::new(),
                index: HashMap::new(),
            },
            FieldKind::U64 => Building::U64(Vec::with_capacity(rows)),
            FieldKind::I64 => Building::I64(Vec::with_capacity(rows)),
            FieldKind::F64 => Building::F64(Vec::with_capacity(rows)),
            kind => Building::Var {
                offsets: vec![0],
                heap: Vec::new(),
                text: kind == FieldKind::Str,
            },
        }
    }

    fn finish(self) -> Result<ArrayRef, ArrowError> {
        self.finish_with(None)
    }

    /// The array, with `nulls` (a flag per row, true where null) as its validity if given.
    fn finish_with(self, nulls: Option<Vec<bool>>) -> Result<ArrayRef, ArrowError> {
        let nulls = nulls.map(|n| n.into_iter().map(|null| !null).collect::<NullBuffer>());
        Ok(match self {
            Building::U64(v) => Arc::new(UInt64Array::new(ScalarBuffer::from(v), nulls)),
            Building::I64(v) => Arc::new(Int64Array::new(ScalarBuffer::from(v), nulls)),
            Building::F64(v) => Arc::new(Float64Array::new(ScalarBuffer::from(v), nulls)),
            Building::Var {
                offsets,
                heap,
                text,
            } => {
                let offsets = OffsetBuffer::new(ScalarBuffer::from(offsets));
                let heap = Buffer::from_vec(heap);
                if text {
                    Arc::new(LargeStringArray::try_new(offsets, heap, None)?)
                } else {
                    Arc::new(LargeBinaryArray::try_new(offsets, heap, None)?)
                }
            }
            Building::Labels { keys, labels, .. } => {
                let keys = Int32Array::new(ScalarBuffer::from(keys), None);
                let values: ArrayRef = Arc::new(StringArray::from(labels));
                Arc::new(DictionaryArray::<Int32Type>::try_new(keys, values)?)
            }
        })
    }
}

/// The Arrow type of a field of `kind` (a track field when `track`).
fn data_type(kind: FieldKind, track: bool) -> DataType {
    match kind {
        FieldKind::U64 => DataType::UInt64,
        FieldKind::I64 => DataType::Int64,
        FieldKind::F64 => DataType::Float64,
        FieldKind::Str if track => {
            DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8))
        }
        FieldKind::Str => DataType::LargeUtf8,
        _ => DataType::LargeBinary,
    }
}

/// Whether the stream's rows carry their positions as a column: not when a field (declared
/// before the name was reserved) is named so, as `strata query` leaves them out.
fn carries_position(decl: &StreamDecl) -> bool {
    decl.fields.iter().all(|f| f.name != POSITION_COLUMN)
}

/// Whether field `idx` of `decl` is measured (a number, neither the axis nor in the track).
fn measured_idx(decl: &StreamDecl, idx: usize) -> bool {
    u16::try_from(idx).is_ok_and(|idx| decl.measured().contains(&idx))
}

/// The schema of `decl`'s rows as [`Store::query_arrow`] answers them.
pub fn arrow_schema(decl: &StreamDecl) -> SchemaRef {
    let position =
        carries_position(decl).then(|| Field::new(POSITION_COLUMN, DataType::UInt64, false));
    let fields = position
        .into_iter()
        .chain(decl.fields.iter().enumerate().map(|(idx, f)| {
            let track = decl.track.iter().any(|&t| usize::from(t) == idx);
            // A measured value may be missing (null), nothing else may.
            let measured = measured_idx(decl, idx);
            Field::new(&f.name, data_type(f.kind, track), measured)
        }));
    let metadata = HashMap::from([
        (ARROW_STREAM_KEY.to_owned(), decl.id.clone()),
        (ARROW_DECLARATION_KEY.to_owned(), describe(decl)),
    ]);
    Arc::new(Schema::new_with_metadata(
        fields.collect::<Vec<_>>(),
        metadata,
    ))
}

fn internal(error: ArrowError) -> EngineError {
    EngineError::Internal {
        reason: format!("building an Arrow batch: {error}"),
    }
}

impl<'s> ArrowBatches<'s> {
    /// The schema every batch has.
    pub fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    pub(crate) fn new(
        store: &'s View,
        stream: &str,
        runs: QueryRuns<'s>,
    ) -> Result<Self, EngineError> {
        let decl = store.declaration(stream)?;
        Ok(ArrowBatches {
            decl,
            schema: arrow_schema(decl),
            runs,
            run: None,
            rows_max: store.config.arrow_batch_rows,
            with_position: carries_position(decl),
            failed: false,
        })
    }

    /// Builds the next batch: whole runs and parts of runs until it holds `rows_max` rows or
    /// the runs end; `None` once no row is left.
    fn build(&mut self) -> Result<Option<RecordBatch>, EngineError> {
        let decl = self.decl;
        let mut positions: Vec<u64> = Vec::with_capacity(self.rows_max.min(1 << 16));
        let mut columns: Vec<Building> = decl
            .fields
            .iter()
            .enumerate()
            .map(|(idx, f)| {
                let track = decl.track.iter().any(|&t| usize::from(t) == idx);
                Building::new(f.kind, track, self.rows_max.min(1 << 16))
            })
            .collect();
        // Per field, a flag per row built so far, true where null: kept only once a run has
        // a null row in the field (a batch without one carries no validity).
        let mut nulls: Vec<Option<Vec<bool>>> = vec![None; decl.fields.len()];
        while positions.len() < self.rows_max {
            let (run, done) = match self.run.take() {
                Some((run, done)) if done < run.len() => (run, done),
                _ => match self.runs.next() {
                    Some(run) => (run?, 0),
                    None => break,
                },
            };
            let end = run.len().min(done + self.rows_max - positions.len());
            let before = positions.len();
            copy_rows(decl, &run, done..end, &mut positions, &mut columns)?;
            for idx in decl.measured() {
                let slot = &mut nulls[usize::from(idx)];
                match run.null_mask(idx, done..end) {
                    Some(mask) => slot.get_or_insert_with(|| vec![false; before]).extend(mask),
                    None => {
                        if let Some(flags) = slot {
                            flags.resize(positions.len(), false);
                        }
                    }
                }
            }
            self.run = Some((run, end));
        }
        if positions.is_empty() {
            return Ok(None);
        }
        let position = self
            .with_position
            .then(|| Building::U64(positions).finish());
        let arrays = position
            .into_iter()
            .chain(
                columns
                    .into_iter()
                    .zip(nulls)
                    .map(|(column, nulls)| column.finish_with(nulls)),
            )
            .collect::<Result<Vec<_>, _>>()
            .map_err(internal)?;
        RecordBatch::try_new(self.schema(), arrays)
            .map(Some)
            .map_err(internal)
    }
}

impl Iterator for ArrowBatches<'_> {
    type Item = Result<RecordBatch, EngineError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        match self.build() {
            Ok(batch) => batch.map(Ok),
            Err(error) => {
                self.failed = true;
                self.run = None;
                Some(Err(error))
            }
        }
    }
}

/// Appends rows `rows` (run-relative) of `run` to the batch being built: each column resolved
/// once for them all, numbers copied slice by slice.
fn copy_rows(
    decl: &StreamDecl,
    run: &ColumnRun,
    rows: std::ops::Range<usize>,
    positions: &mut Vec<u64>,
    columns: &mut [Building],
) -> Result<(), EngineError> {
    let n_rows = rows.len();
    run.extend_positions(rows.clone(), positions);
    let labels: Vec<&str> = run.track().labels().collect();
    for (field_idx, building) in columns.iter_mut().enumerate() {
        let idx = u16::try_from(field_idx).expect("at most FIELDS_MAX fields");
        if let Some(component) = decl.track.iter().position(|&t| t == idx) {
            let label = labels.get(component).copied().unwrap_or_default();
            repeat_label(building, label, n_rows, run.track())?;
            continue;
        }
        if decl.axis == Some(idx) {
            let axis = run.axis().ok_or_else(|| EngineError::Internal {
                reason: "a run of a stream with an axis holds no axis block".to_owned(),
            })?;
            let Building::U64(values) = building else {
                unreachable!("the axis is u64")
            };
            values.extend(axis[rows.clone()].iter().map(|v| v.get()));
            continue;
        }
        let column = run.column(idx).ok_or_else(|| EngineError::Internal {
            reason: format!(
                "a run holds no column of field {:?}",
                decl.fields[field_idx].name
            ),
        })?;
        match (column, building) {
            (Column::U64(c), Building::U64(v)) => v.extend(c[rows.clone()].iter().map(|x| x.get())),
            (Column::I64(c), Building::I64(v)) => v.extend(c[rows.clone()].iter().map(|x| x.get())),
            (Column::F64(c), Building::F64(v)) => v.extend(c[rows.clone()].iter().map(|x| x.get())),
            (Column::Str(c) | Column::Bytes(c), Building::Var { offsets, heap, .. }) => {
                for row in rows.clone() {
                    let value = c.get(row).ok_or_else(|| EngineError::Internal {
                        reason: "a run's text column is shorter than the run".to_owned(),
                    })?;
                    heap.extend_from_slice(value);
                    offsets.push(i64::try_from(heap.len()).expect("a batch's heap fits an i64"));
                }
            }
            _ => {
                return Err(EngineError::Internal {
                    reason: format!(
                        "field {:?}'s column is not of its declared kind",
                        decl.fields[field_idx].name
                    ),
                });
            }
        }
    }
    Ok(())
}

/// A track field's label down `n_rows` rows.
fn repeat_label(
    building: &mut Building,
    label: &str,
    n_rows: usize,
    track: &TrackKey,
) -> Result<(), EngineError> {
    let bad = |kind: &str| EngineError::Internal {
        reason: format!("track {track:?}'s label {label:?} is not {kind}"),
    };
    match building {
        Building::Labels {
            keys,
            labels,
            index,
        } => {
            let key = if let Some(&key) = index.get(label) {
                key
            } else {
                let key = i32::try_from(labels.len()).expect("fewer labels than rows");
                labels.push(label.to_owned());
                index.insert(label.to_owned(), key);
                key
            };
            keys.extend(std::iter::repeat_n(key, n_rows));
        }
        Building::U64(v) => {
            let value: u64 = label.parse().map_err(|_| bad("a u64"))?;
            v.extend(std::iter::repeat_n(value, n_rows));
        }
        Building::I64(v) => {
            let value: i64 = label.parse().map_err(|_| bad("an i64"))?;
            v.extend(std::iter::repeat_n(value, n_rows));
        }
        _ => return Err(bad("of a kind a track field can have")),
    }
    Ok(())
}

/// Which placed point of a bucket a survey column holds.
type PointOf = fn(&strata_levels::Bucket) -> strata_levels::Point;

/// The Arrow type of values of `kinds`: their own when all share one, f64 otherwise (and when
/// there are none).
fn common_type(kinds: impl IntoIterator<Item = NumKind>) -> DataType {
    let mut kinds = kinds.into_iter();
    let first = kinds.next();
    match first {
        Some(kind) if kinds.all(|k| k == kind) => match kind {
            NumKind::U64 => DataType::UInt64,
            NumKind::I64 => DataType::Int64,
            NumKind::F64 => DataType::Float64,
        },
        _ => DataType::Float64,
    }
}

/// Values as an array of `data_type` (as [`common_type`] chose it), `None` as null.
fn num_array(data_type: &DataType, values: &[Option<Num>]) -> ArrayRef {
    match data_type {
        DataType::UInt64 => Arc::new(
            values
                .iter()
                .map(|v| match v {
                    Some(Num::U64(v)) => Some(*v),
                    _ => None,
                })
                .collect::<UInt64Array>(),
        ),
        DataType::Int64 => Arc::new(
            values
                .iter()
                .map(|v| match v {
                    Some(Num::I64(v)) => Some(*v),
                    _ => None,
                })
                .collect::<Int64Array>(),
        ),
        _ => Arc::new(
            values
                .iter()
                .map(|v| v.map(Num::as_f64))
                .collect::<Float64Array>(),
        ),
    }
}

impl Survey {
    /// The survey as one Arrow batch, a row per bucket (field by field in declaration order,
    /// each ascending by axis): `field`, then the four placed points as `first_axis`, `first`,
    /// `last_axis`, `last`, `min_axis`, `min`, `max_axis`, `max`, then `count`, `sum` and
    /// `sum_sq`. The values are the fields' own type when every measured field shares one, and
    /// f64 otherwise.
    pub fn to_arrow(&self) -> Result<RecordBatch, EngineError> {
        let buckets: Vec<(&str, &strata_levels::Bucket)> = self
            .fields
            .iter()
            .flat_map(|f| f.buckets.iter().map(|b| (f.field.as_str(), b)))
            .collect();
        let value_type = common_type(buckets.iter().map(|(_, b)| b.first.value.kind()));
        let mut fields = vec![Field::new("field", DataType::Utf8, false)];
        let mut columns: Vec<ArrayRef> = vec![Arc::new(StringArray::from_iter_values(
            buckets.iter().map(|(f, _)| *f),
        ))];
        let points: [(&str, PointOf); 4] = [
            ("first", |b| b.first),
            ("last", |b| b.last),
            ("min", |b| b.min),
            ("max", |b| b.max),
        ];
        for (name, point) in points {
            fields.push(Field::new(format!("{name}_axis"), DataType::UInt64, false));
            columns.push(Arc::new(UInt64Array::from_iter_values(
                buckets.iter().map(|(_, b)| point(b).axis),
            )));
            fields.push(Field::new(name, value_type.clone(), false));
            let values: Vec<Option<Num>> =
                buckets.iter().map(|(_, b)| Some(point(b).value)).collect();
            columns.push(num_array(&value_type, &values));
        }
        fields.push(Field::new("count", DataType::UInt64, false));
        columns.push(Arc::new(UInt64Array::from_iter_values(
            buckets.iter().map(|(_, b)| b.count),
        )));
        fields.push(Field::new("sum", DataType::Float64, false));
        columns.push(Arc::new(Float64Array::from_iter_values(
            buckets.iter().map(|(_, b)| b.sum),
        )));
        fields.push(Field::new("sum_sq", DataType::Float64, false));
        columns.push(Arc::new(Float64Array::from_iter_values(
            buckets.iter().map(|(_, b)| b.sum_sq),
        )));
        let metadata = HashMap::from([
            ("strata:level".to_owned(), self.level.to_string()),
            ("strata:group".to_owned(), self.group.to_string()),
        ]);
        RecordBatch::try_new(
            Arc::new(Schema::new_with_metadata(fields, metadata)),
            columns,
        )
        .map_err(internal)
    }
}

/// A fold's answer ([`Store::fold`]) as one Arrow batch: `field` and `value`, a row per measured
/// field. `value` is the statistic's own type when every field's shares one (a `count` is u64),
/// f64 otherwise; null where the range holds no rows.
pub fn fold_to_arrow(
    aggregate: Aggregate,
    stats: &[FieldStat],
) -> Result<RecordBatch, EngineError> {
    let values: Vec<Option<Num>> = stats.iter().map(|s| s.value).collect();
    let value_type = common_type(values.iter().flatten().map(|v| v.kind()));
    let schema = Schema::new_with_metadata(
        vec![
            Field::new("field", DataType::Utf8, false),
            Field::new("value", value_type.clone(), true),
        ],
        HashMap::from([("strata:aggregate".to_owned(), aggregate.to_string())]),
    );
    let columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from_iter_values(
            stats.iter().map(|s| s.field.as_str()),
        )),
        num_array(&value_type, &values),
    ];
    RecordBatch::try_new(Arc::new(schema), columns).map_err(internal)
}

impl View {
    /// The rows [`Store::query`] answers, as Arrow batches of at most
    /// [`crate::Config::arrow_batch_rows`] rows, in publish order, streamed from the query's
    /// runs (memory holds a batch, not the answer). The selection and the floor are checked
    /// before any batch; a block found damaged on the way is an `Err` item, after which the
    /// iterator ends. The schema ([`ArrowBatches::schema`], [`arrow_schema`]) is `position`,
    /// then the declaration's fields in order.
    pub fn query_arrow<'s>(
        &'s self,
        stream: &str,
        selection: &[&str],
        positions: impl std::ops::RangeBounds<u64>,
    ) -> Result<ArrowBatches<'s>, EngineError> {
        let runs = self.query_runs(stream, selection, positions)?;
        ArrowBatches::new(self, stream, runs)
    }

    /// The rows of `stream` that segment file `name` holds (every partition of the stream in
    /// it, each from above its raw floor), as Arrow batches in publish order: what the
    /// object-storage tier writes beside a segment as Parquet. No rows if the file holds none
    /// of the stream's.
    pub fn segment_arrow(
        &self,
        stream: &str,
        name: FileName,
    ) -> Result<ArrowBatches<'_>, EngineError> {
        let decl = self.declaration(stream)?;
        let runs = self.runs_over(decl, &TrackKey::ROOT, 0, u64::MAX, Some(name))?;
        ArrowBatches::new(self, stream, runs)
    }

    /// A survey ([`Store::survey`]) as one Arrow batch ([`Survey::to_arrow`]).
    pub fn survey_arrow(
        &self,
        stream: &str,
        selection: &[&str],
        axis: impl std::ops::RangeBounds<u64>,
        budget: u64,
    ) -> Result<RecordBatch, EngineError> {
        self.survey(stream, selection, axis, budget)?.to_arrow()
    }

    /// A fold ([`Store::fold`]) as one Arrow batch ([`fold_to_arrow`]).
    pub fn fold_arrow(
        &self,
        stream: &str,
        selection: &[&str],
        axis: impl std::ops::RangeBounds<u64>,
        aggregate: Aggregate,
    ) -> Result<RecordBatch, EngineError> {
        fold_to_arrow(aggregate, &self.fold(stream, selection, axis, aggregate)?)
    }
}
