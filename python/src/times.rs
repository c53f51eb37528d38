//! A time axis in Python (#48): a stream declared with `"time": "us"` (or s, ms, ns) takes its
//! axis as times — a numpy `datetime64` array, a pandas datetime column (tz-aware or naive, as
//! `pandas.to_datetime` makes it), an Arrow `timestamp` array (pyarrow, Polars `Datetime`) —
//! each converted exactly to the declared unit's integer; and answers the axis as Arrow
//! `Timestamp(unit, "UTC")` (so numpy `datetime64[unit]`, pandas `datetime64[unit, UTC]`). A
//! naive time is read as UTC. A time finer than the unit, before the epoch, or missing (NaT,
//! null, masked) is refused naming its row: nothing is rounded.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    TimestampMicrosecondType, TimestampMillisecondType, TimestampNanosecondType,
    TimestampSecondType,
};
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{DataType, SchemaRef};
use numpy::{PyArray1, PyArrayMethods};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use strata::{StreamDecl, TimeUnit, Timestamper};

use crate::StrataError;
use crate::columns::arrow_of;
use crate::missing::{arrow_mask, masked_mask, never_missing};
use crate::numbers::Numbers;

/// A column of times as integers since the epoch, before they meet the declared unit.
pub(crate) struct Stamps {
    /// The dtype as its caller gave it (`datetime64[us, UTC]`, `timestamp[ms, tz=UTC]`).
    pub(crate) dtype: String,
    /// The source's own unit (`s`, `ms`, `us`, `ns`, numpy's `ps`, `fs`, `as`) and how many of
    /// it make one second.
    unit: &'static str,
    per_second: i128,
    values: Vec<i64>,
    /// The first row that holds no time (1-based) and how (`NaT`, `null`, `masked`).
    missing: Option<(usize, &'static str)>,
}

/// numpy's sub-second units and their ticks a second; coarser units are cast to seconds first.
const FINE: [(&str, i128); 7] = [
    ("s", 1),
    ("ms", 1_000),
    ("us", 1_000_000),
    ("ns", 1_000_000_000),
    ("ps", 1_000_000_000_000),
    ("fs", 1_000_000_000_000_000),
    ("as", 1_000_000_000_000_000_000),
];

/// `column` as times, if it is a column of times: a numpy `datetime64` array, an Arrow
/// `timestamp` array, a pandas datetime column (of any unit, with or without a zone, numpy- or
/// Arrow-backed); `None` for anything else (integers among them).
pub(crate) fn stamps(py: Python<'_>, column: &Bound<'_, PyAny>) -> PyResult<Option<Stamps>> {
    let numpy = py.import("numpy")?;
    if column.is_instance(&numpy.getattr("ndarray")?)? {
        if kind_of(column).as_deref() != Some("M") {
            return Ok(None);
        }
        let mask = masked_mask(&numpy, column)?;
        let mut stamps = from_numpy(&numpy, &numpy.call_method1("asarray", (column,))?)?;
        if let Some(mask) = mask {
            let masked = (mask.first(), "masked");
            stamps.missing = Some(stamps.missing.map_or(masked, |m| m.min(masked)));
        }
        return Ok(Some(stamps));
    }
    if let Some(array) = arrow_of(column)? {
        return Ok(from_arrow(column, &array));
    }
    // pandas: a Series or an Index (what `pandas.to_datetime` of a list answers).
    if column.hasattr("isna")? && column.hasattr("to_numpy")? && column.hasattr("dtype")? {
        let dtype = column.getattr("dtype")?;
        if kind_of(column).as_deref() != Some("M") {
            return Ok(None);
        }
        let values = if dtype.is_instance(&numpy.getattr("dtype")?)? {
            numpy.call_method1("asarray", (column,))?
        } else {
            // A zone (`datetime64[us, UTC]`) or Arrow (`timestamp[ms][pyarrow]`): pandas makes
            // numpy's `datetime64` of its own unit, in UTC, NaT kept.
            let unit = match dtype.getattr("unit") {
                Ok(unit) => unit,
                Err(_) => dtype.getattr("pyarrow_dtype")?.getattr("unit")?,
            };
            let unit: String = unit.extract()?;
            let kwargs = pyo3::types::PyDict::new(py);
            kwargs.set_item("dtype", format!("datetime64[{unit}]"))?;
            column.call_method("to_numpy", (), Some(&kwargs))?
        };
        let mut stamps = from_numpy(&numpy, &values)?;
        stamps.dtype = dtype.str()?.to_string();
        return Ok(Some(stamps));
    }
    Ok(None)
}

/// numpy's kind letter of `column`'s dtype, if it has one.
fn kind_of(column: &Bound<'_, PyAny>) -> Option<String> {
    column
        .getattr("dtype")
        .ok()?
        .getattr("kind")
        .ok()?
        .extract()
        .ok()
}

/// A numpy `datetime64` array's integers in its own unit (a unit coarser than seconds, or a
/// multiple such as `10ms`, cast exactly to seconds or the plain unit first); numpy's NaT is
/// its least integer.
fn from_numpy(numpy: &Bound<'_, PyModule>, values: &Bound<'_, PyAny>) -> PyResult<Stamps> {
    let dtype = values.getattr("dtype")?;
    let shown = dtype.str()?.to_string();
    let ndim: usize = values.getattr("ndim")?.extract()?;
    if ndim != 1 {
        return Err(PyValueError::new_err(format!(
            "a column is one-dimensional, this one has {ndim} dimensions"
        )));
    }
    let (unit, count): (String, i64) = numpy.call_method1("datetime_data", (&dtype,))?.extract()?;
    let (name, per_second) = match FINE.iter().find(|(name, _)| *name == unit) {
        Some(&(name, per_second)) => (name, per_second),
        None => ("s", 1),
    };
    let values = if name != unit || count != 1 {
        values.call_method1("astype", (format!("datetime64[{name}]"),))?
    } else {
        values.clone()
    };
    let integers = numpy
        .call_method1("ascontiguousarray", (values,))?
        .call_method1("view", ("int64",))?;
    let integers = integers.cast::<PyArray1<i64>>()?.to_vec()?;
    let missing = integers
        .iter()
        .position(|&v| v == i64::MIN)
        .map(|idx| (idx + 1, "NaT"));
    Ok(Stamps {
        dtype: shown,
        unit: name,
        per_second,
        values: integers,
        missing,
    })
}

/// An Arrow `timestamp` array's integers; `None` for an Arrow array of another type.
fn from_arrow(column: &Bound<'_, PyAny>, array: &ArrayRef) -> Option<Stamps> {
    use arrow_schema::TimeUnit as Arrow;
    let DataType::Timestamp(unit, _) = array.data_type() else {
        return None;
    };
    let (name, per_second) = match unit {
        Arrow::Second => ("s", 1),
        Arrow::Millisecond => ("ms", 1_000),
        Arrow::Microsecond => ("us", 1_000_000),
        Arrow::Nanosecond => ("ns", 1_000_000_000),
    };
    let integers = timestamp_values(array.as_ref(), *unit).to_vec();
    let dtype = ["dtype", "type"]
        .iter()
        .find_map(|attr| Some(column.getattr(*attr).ok()?.str().ok()?.to_string()))
        .unwrap_or_else(|| array.data_type().to_string());
    Some(Stamps {
        dtype,
        unit: name,
        per_second,
        values: integers,
        missing: arrow_mask(array.as_ref()).map(|mask| (mask.first(), "null")),
    })
}

/// The axis `field` of a stream whose axis is time in `unit`, from `stamps`: each time as the
/// unit's integer since the epoch, exactly, or the first row that has none refused by name.
pub(crate) fn axis<'py>(
    py: Python<'py>,
    field: &str,
    unit: TimeUnit,
    stamps: &Stamps,
) -> PyResult<Numbers<'py, u64>> {
    let refuse = |why: String| {
        PyValueError::new_err(format!(
            "field {field:?} (the axis, time in {unit}; a column of {}): {why}",
            stamps.dtype
        ))
    };
    if let Some((row, how)) = stamps.missing {
        return Err(refuse(never_missing(
            row,
            how,
            "the axis: every row needs one",
        )));
    }
    let want = i128::from(unit.per_second());
    let from = stamps.per_second;
    let mut out = Vec::with_capacity(stamps.values.len());
    for (idx, &value) in stamps.values.iter().enumerate() {
        let row = idx + 1;
        let held = || format!("row {row} holds {value} {} since the epoch", stamps.unit);
        if value < 0 {
            return Err(refuse(format!(
                "{}, before the epoch: a time axis counts from 1970-01-01T00:00:00Z",
                held()
            )));
        }
        let wide = i128::from(value);
        let converted = if from >= want {
            let step = from / want;
            if wide % step != 0 {
                return Err(refuse(format!(
                    "{}, finer than the stream's unit ({unit}): nothing is rounded; floor or \
                     round the times to {unit} first (pandas' `dt.floor`)",
                    held()
                )));
            }
            wide / step
        } else {
            wide * (want / from)
        };
        let Ok(converted) = u64::try_from(converted) else {
            return Err(refuse(format!(
                "{}, past the last time a u64 of {unit} holds",
                held()
            )));
        };
        out.push(converted);
    }
    Ok(Numbers::Dense(PyArray1::from_vec(py, out).readonly()))
}

/// The refusal of a column of times (`dtype`) for the axis `field` of `stream`, which is not
/// declared as time.
pub(crate) fn not_a_time_axis(stream: &str, field: &str, dtype: &str) -> PyErr {
    PyValueError::new_err(format!(
        "stream {stream:?}: field {field:?} is the axis, a plain u64, and the column is times \
         ({dtype}): declare the axis with a time unit (\"time\": \"us\", or s, ms, ns, in the \
         stream's declaration) to publish times, or give integers"
    ))
}

/// A query's batches of `decl`'s stream with the axis as `Timestamp(unit, "UTC")` when the axis
/// is time; as they are otherwise. An axis value past `i64::MAX` has no timestamp and is
/// refused, naming it.
pub(crate) fn timestamped(
    decl: &StreamDecl,
    batches: Vec<RecordBatch>,
    schema: SchemaRef,
) -> PyResult<(Vec<RecordBatch>, SchemaRef)> {
    let Some(times) = Timestamper::new(&schema, decl, false) else {
        return Ok((batches, schema));
    };
    let batches = batches
        .iter()
        .map(|batch| times.apply(batch).map_err(StrataError::new_err))
        .collect::<PyResult<_>>()?;
    Ok((batches, Arc::clone(times.schema())))
}

/// A timestamp column's chunks as numpy `datetime64` of its unit (the zone, UTC, is implied).
pub(crate) fn timestamps_to_numpy<'py>(
    py: Python<'py>,
    unit: arrow_schema::TimeUnit,
    chunks: &[&dyn Array],
) -> PyResult<Bound<'py, PyAny>> {
    use arrow_schema::TimeUnit as Arrow;
    let mut all: Vec<i64> = Vec::with_capacity(chunks.iter().map(|c| c.len()).sum());
    for chunk in chunks {
        all.extend_from_slice(timestamp_values(*chunk, unit));
    }
    let name = match unit {
        Arrow::Second => "s",
        Arrow::Millisecond => "ms",
        Arrow::Microsecond => "us",
        Arrow::Nanosecond => "ns",
    };
    PyArray1::from_vec(py, all).call_method1("view", (format!("datetime64[{name}]"),))
}

/// A timestamp array's integers since the epoch, in `unit`.
fn timestamp_values(array: &dyn Array, unit: arrow_schema::TimeUnit) -> &[i64] {
    use arrow_schema::TimeUnit as Arrow;
    match unit {
        Arrow::Second => array.as_primitive::<TimestampSecondType>().values(),
        Arrow::Millisecond => array.as_primitive::<TimestampMillisecondType>().values(),
        Arrow::Microsecond => array.as_primitive::<TimestampMicrosecondType>().values(),
        Arrow::Nanosecond => array.as_primitive::<TimestampNanosecondType>().values(),
    }
}
