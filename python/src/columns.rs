//! `publish`'s columns: numbers through `numbers` (numpy arrays borrowed, or converted once,
//! vectorised), Arrow strings and bytes read in place, else Python `str`/`bytes` objects.

use arrow_array::cast::AsArray;
use arrow_array::{Array, make_array};
use arrow_pyarrow::FromPyArrow;
use arrow_schema::DataType;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::pybacked::{PyBackedBytes, PyBackedStr};
use pyo3::types::PyDict;
use strata::{FieldKind, StreamDecl, Values};

use crate::missing::{arrow_mask, masked_mask, never_missing, pandas_mask};
use crate::numbers::{Numbers, numbers};
use crate::{StrataError, not_utf8, type_name};

/// One field's values for `publish`, held as the engine borrows them.
pub(crate) enum Held<'py> {
    U64(Numbers<'py, u64>),
    I64(Numbers<'py, i64>),
    F64(Numbers<'py, f64>),
    Str(Var<PyBackedStr>),
    Bytes(Var<PyBackedBytes>),
}

/// Strings or bytes from an Arrow array (which keeps its buffers alive) or from Python objects.
pub(crate) enum Var<P> {
    Arrow(arrow_array::ArrayRef),
    Python(Vec<P>),
}

/// An Arrow array from anything with `__arrow_c_array__` (pyarrow, nanoarrow, arro3), a pyarrow
/// `ChunkedArray` (its chunks combined) or a Polars `Series` (`to_arrow`); `None` for anything
/// else.
pub(crate) fn arrow_of(column: &Bound<'_, PyAny>) -> PyResult<Option<arrow_array::ArrayRef>> {
    let mut column = column.clone();
    if !column.hasattr("__arrow_c_array__")? {
        if column.hasattr("combine_chunks")? {
            column = column.call_method0("combine_chunks")?;
        } else if column.hasattr("to_arrow")? && column.hasattr("dtype")? {
            column = column.call_method0("to_arrow")?;
            if column.hasattr("combine_chunks")? {
                column = column.call_method0("combine_chunks")?;
            }
        } else {
            return Ok(None);
        }
    }
    let data = arrow_data::ArrayData::from_pyarrow_bound(&column)?;
    Ok(Some(make_array(data)))
}

/// A `str` or `bytes` column: an Arrow array of one of `arrow_types` (read in place), else a
/// sequence of Python objects each extracted as `P` (`str` or `bytes`). A missing value (an
/// Arrow null, a numpy masked slot, a `None`, what pandas' `isna` calls missing) is refused
/// naming its row, as the engine refuses a null there: only a measured number may be missing.
/// So is another object, and a `str` that is not valid UTF-8.
fn variable<P>(
    py: Python<'_>,
    field: &str,
    kind: FieldKind,
    column: &Bound<'_, PyAny>,
    arrow_types: &[DataType],
) -> PyResult<Var<P>>
where
    P: for<'a, 'py> FromPyObject<'a, 'py>,
{
    let refuse = |why: String| PyValueError::new_err(format!("field {field:?} ({kind}): {why}"));
    let missing = |row: usize, how: &str| {
        let role = format!(
            "{}: only a measured u64, i64 or f64 field may be missing",
            kind.with_article()
        );
        refuse(never_missing(row, how, &role))
    };
    if let Some(array) = arrow_of(column)? {
        if !arrow_types.contains(array.data_type()) {
            return Err(refuse(format!(
                "an Arrow column of type {} is not {kind}",
                array.data_type()
            )));
        }
        if let Some(mask) = arrow_mask(array.as_ref()) {
            return Err(missing(mask.first(), mask.how));
        }
        return Ok(Var::Arrow(array));
    }
    // A numpy masked slot, and pandas' NA or NaN for a missing str, would show in the rows as
    // objects of another type.
    let numpy = py.import("numpy")?;
    if let Some(mask) = masked_mask(&numpy, column)? {
        return Err(missing(mask.first(), mask.how));
    }
    if let Some(mask) = pandas_mask(column)? {
        return Err(missing(mask.first(), mask.how));
    }
    let mut out = Vec::new();
    for (idx, item) in column.try_iter()?.enumerate() {
        let item = item?;
        let row = idx + 1;
        if item.is_none() {
            return Err(missing(row, "null"));
        }
        let Ok(value) = item.extract::<P>() else {
            let not_utf8 = if kind == FieldKind::Str {
                not_utf8(&item)?
            } else {
                None
            };
            return Err(refuse(match not_utf8 {
                Some(why) => format!("row {row} is a str that is not valid UTF-8: {why}"),
                None => format!("row {row} is a {}, not {kind}", type_name(&item)),
            }));
        };
        out.push(value);
    }
    Ok(Var::Python(out))
}

fn str_slices(texts: &Var<PyBackedStr>) -> Vec<&str> {
    match texts {
        Var::Python(v) => v.iter().map(|s| &**s).collect(),
        Var::Arrow(array) => match array.data_type() {
            DataType::Utf8 => array.as_string::<i32>().iter().flatten().collect(),
            DataType::LargeUtf8 => array.as_string::<i64>().iter().flatten().collect(),
            _ => array.as_string_view().iter().flatten().collect(),
        },
    }
}

fn byte_slices(blobs: &Var<PyBackedBytes>) -> Vec<&[u8]> {
    match blobs {
        Var::Python(v) => v.iter().map(|b| &**b).collect(),
        Var::Arrow(array) => match array.data_type() {
            DataType::Binary => array.as_binary::<i32>().iter().flatten().collect(),
            DataType::LargeBinary => array.as_binary::<i64>().iter().flatten().collect(),
            _ => array.as_binary_view().iter().flatten().collect(),
        },
    }
}

fn not_contiguous(err: numpy::AsSliceError) -> PyErr {
    PyValueError::new_err(format!("a column is not contiguous: {err}"))
}

/// Every column of a batch of `stream`, checked against its declaration `decl`: each field but
/// the track's present (and no other), each as its kind's `Held`.
pub(crate) fn gather<'py>(
    py: Python<'py>,
    stream: &str,
    decl: &StreamDecl,
    columns: &Bound<'py, PyDict>,
) -> PyResult<Vec<Held<'py>>> {
    let mut held: Vec<Held<'py>> = Vec::new();
    let mut given = 0;
    for (idx, field) in decl.fields.iter().enumerate() {
        let is_track = decl.track.iter().any(|&t| usize::from(t) == idx);
        let column = columns.get_item(&field.name)?;
        if is_track {
            if column.is_some() {
                return Err(PyValueError::new_err(format!(
                    "stream {stream:?}: field {:?} is the track's, given by `track`, not a column",
                    field.name
                )));
            }
            continue;
        }
        let Some(column) = column else {
            return Err(PyValueError::new_err(format!(
                "stream {stream:?}: no column for field {:?} ({})",
                field.name, field.kind
            )));
        };
        given += 1;
        let name = field.name.as_str();
        // The axis is never missing (the engine's own words for a null there); a measured
        // number may be.
        let is_axis = decl.axis == Some(u16::try_from(idx).unwrap_or(u16::MAX));
        let role = is_axis.then_some("the axis: every row needs one");
        // Times for the axis: converted to the declared unit's integers, or refused where the
        // axis is a plain u64 (#48). Integers go on as numbers either way.
        if is_axis && let Some(stamps) = crate::times::stamps(py, &column)? {
            let Some(unit) = decl.time else {
                return Err(crate::times::not_a_time_axis(stream, name, &stamps.dtype));
            };
            held.push(Held::U64(crate::times::axis(py, name, unit, &stamps)?));
            continue;
        }
        held.push(match field.kind {
            FieldKind::U64 => Held::U64(numbers(py, name, field.kind, role, &column)?),
            FieldKind::I64 => Held::I64(numbers(py, name, field.kind, role, &column)?),
            FieldKind::F64 => Held::F64(numbers(py, name, field.kind, role, &column)?),
            FieldKind::Str => Held::Str(variable(
                py,
                name,
                field.kind,
                &column,
                &[DataType::Utf8, DataType::LargeUtf8, DataType::Utf8View],
            )?),
            FieldKind::Bytes => Held::Bytes(variable(
                py,
                name,
                field.kind,
                &column,
                &[
                    DataType::Binary,
                    DataType::LargeBinary,
                    DataType::BinaryView,
                ],
            )?),
            other => {
                return Err(StrataError::new_err(format!(
                    "field {name:?}: kind {other} has no Python form yet"
                )));
            }
        });
    }
    if given != columns.len() {
        let known: Vec<&str> = decl.fields.iter().map(|f| f.name.as_str()).collect();
        for key in columns.keys() {
            let key: String = key.extract()?;
            if !known.contains(&key.as_str()) {
                return Err(PyValueError::new_err(format!(
                    "stream {stream:?} has no field {key:?} (its fields: {})",
                    known.join(" ")
                )));
            }
        }
    }
    Ok(held)
}

/// The `&str` and `&[u8]` slices of the `str` and `bytes` columns (empty for the others), in
/// column order: what `Values::Str` and `Values::Bytes` borrow.
pub(crate) fn slices<'h>(held: &'h [Held<'_>]) -> (Vec<Vec<&'h str>>, Vec<Vec<&'h [u8]>>) {
    let strs: Vec<Vec<&'h str>> = held
        .iter()
        .map(|h| match h {
            Held::Str(t) => str_slices(t),
            _ => Vec::new(),
        })
        .collect();
    let bytes: Vec<Vec<&'h [u8]>> = held
        .iter()
        .map(|h| match h {
            Held::Bytes(b) => byte_slices(b),
            _ => Vec::new(),
        })
        .collect();
    (strs, bytes)
}

/// The batch as the engine takes it, borrowing `held` and its slices.
pub(crate) fn values<'v>(
    held: &'v [Held<'_>],
    strs: &'v [Vec<&'v str>],
    bytes: &'v [Vec<&'v [u8]>],
) -> PyResult<Vec<Values<'v>>> {
    held.iter()
        .zip(strs.iter().zip(bytes))
        .map(|(h, (s, b))| {
            Ok(match h {
                Held::U64(Numbers::Dense(a)) => Values::U64(a.as_slice().map_err(not_contiguous)?),
                Held::U64(Numbers::Nullable(v)) => Values::OptU64(v),
                Held::I64(Numbers::Dense(a)) => Values::I64(a.as_slice().map_err(not_contiguous)?),
                Held::I64(Numbers::Nullable(v)) => Values::OptI64(v),
                Held::F64(Numbers::Dense(a)) => Values::F64(a.as_slice().map_err(not_contiguous)?),
                Held::F64(Numbers::Nullable(v)) => Values::OptF64(v),
                Held::Str(_) => Values::Str(s),
                Held::Bytes(_) => Values::Bytes(b),
            })
        })
        .collect::<PyResult<_>>()
}
