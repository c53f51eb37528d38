//! A time axis in Arrow and Parquet (#48): the engine's batches carry the axis as `UInt64`; an
//! export of a stream whose axis is time carries it as `Timestamp(unit, "UTC")` instead, the
//! same integers (Arrow's timestamps are `i64` since the epoch), so DuckDB, pandas and Polars
//! read times. A value past `i64::MAX` has no timestamp and is refused, naming it.

use std::sync::Arc;

use strata::arrow_array::types::{
    TimestampMicrosecondType, TimestampMillisecondType, TimestampNanosecondType,
    TimestampSecondType,
};
use strata::arrow_array::{Array, ArrayRef, PrimitiveArray, RecordBatch, UInt64Array};
use strata::arrow_schema::{DataType, Field, Schema, SchemaRef};
use strata::{StreamDecl, TimeUnit};

/// The time zone every exported time axis carries.
pub const UTC: &str = "UTC";

/// Arrow's unit for `unit`.
pub fn arrow_unit(unit: TimeUnit) -> strata::arrow_schema::TimeUnit {
    use strata::arrow_schema::TimeUnit as Arrow;
    match unit {
        TimeUnit::Seconds => Arrow::Second,
        TimeUnit::Millis => Arrow::Millisecond,
        TimeUnit::Nanos => Arrow::Nanosecond,
        _ => Arrow::Microsecond,
    }
}

/// Turns the `UInt64` columns named in `columns` into timestamps of `unit` in UTC.
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
        let unit = super::time::unit_of(decl)?;
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
        let fields: Vec<Arc<Field>> =
            schema
                .fields()
                .iter()
                .enumerate()
                .map(|(idx, field)| {
                    if columns.contains(&idx) {
                        Arc::new(field.as_ref().clone().with_data_type(DataType::Timestamp(
                            arrow_unit(unit),
                            Some(UTC.into()),
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
            columns[idx] = timestamps(values, self.unit)?;
        }
        RecordBatch::try_new(Arc::clone(&self.schema), columns).map_err(|e| e.to_string())
    }
}

/// `values` as timestamps of `unit` in UTC.
fn timestamps(values: &UInt64Array, unit: TimeUnit) -> Result<ArrayRef, String> {
    let signed: Vec<i64> = values
        .values()
        .iter()
        .map(|&v| {
            i64::try_from(v).map_err(|_| {
                format!("axis value {v} is past the last time an Arrow timestamp holds (2^63 - 1)")
            })
        })
        .collect::<Result<_, _>>()?;
    let nulls = values.nulls().cloned();
    Ok(match unit {
        TimeUnit::Seconds => Arc::new(
            PrimitiveArray::<TimestampSecondType>::new(signed.into(), nulls).with_timezone(UTC),
        ),
        TimeUnit::Millis => Arc::new(
            PrimitiveArray::<TimestampMillisecondType>::new(signed.into(), nulls)
                .with_timezone(UTC),
        ),
        TimeUnit::Nanos => Arc::new(
            PrimitiveArray::<TimestampNanosecondType>::new(signed.into(), nulls).with_timezone(UTC),
        ),
        _ => Arc::new(
            PrimitiveArray::<TimestampMicrosecondType>::new(signed.into(), nulls)
                .with_timezone(UTC),
        ),
    })
}
