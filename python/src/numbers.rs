//! A number field's column as a contiguous numpy array of the field's dtype: borrowed when it is
//! one already, else converted once, vectorised, after the checks that keep every value as the
//! caller gave it. A missing value (a numpy masked slot, a pandas NA, an Arrow or Polars null, a
//! `None`) is refused as missing, before numpy could make NaN or the slot's hidden value of it;
//! a value the field cannot hold exactly is refused naming its row; a column of another kind is
//! refused by the dtype its caller gave it, not the one numpy would convert it to.

use arrow_array::Array;
use arrow_schema::DataType;
use numpy::{Element, PyArray1, PyArrayMethods, PyReadonlyArray1, PyUntypedArrayMethods};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict};
use strata::FieldKind;

use crate::columns::arrow_of;
use crate::missing::{
    first_masked, first_null, first_true, is_masked, missing_value, pandas_missing,
};
use crate::type_name;

/// A column as its caller made it, before numpy converts it.
struct Source<'py> {
    /// The dtype in the caller's own terms: pandas' `Int64`, Polars' `Float64`, pyarrow's
    /// `double`, numpy's `float64`.
    dtype: String,
    /// numpy's `dtype.kind` for that dtype (`i`, `u`, `f`, `b`, `O`, …); empty for an Arrow
    /// type that is not a number.
    letter: String,
    /// The first row (1-based) that holds no value, and what the caller calls it.
    missing: Option<(usize, &'static str)>,
    /// Whether the values are numpy objects (a list numpy made objects of, a pandas `object`
    /// column), whose rows say more of what is wrong than their dtype does.
    objects: bool,
    /// The values through `numpy.asarray`, made at once for a numpy array or a column numpy
    /// alone can describe. A pandas or Arrow column is converted only once it is known to hold
    /// no missing value: numpy makes NaN (or objects) of one, and a wider dtype of the column.
    values: Option<Bound<'py, PyAny>>,
}

impl<'py> Source<'py> {
    fn of(numpy: &Bound<'py, PyModule>, column: &Bound<'py, PyAny>) -> PyResult<Self> {
        if column.is_instance(&numpy.getattr("ndarray")?)? {
            // A masked array's values, the masked slots' among them: numpy drops the mask.
            let values = numpy.call_method1("asarray", (column,))?;
            let missing = first_masked(numpy, column)?.map(|row| (row, "masked"));
            return Self::numpy(values, missing);
        }
        if let Some(array) = arrow_of(column)? {
            return Ok(Source {
                dtype: arrow_dtype(column, array.data_type()),
                letter: arrow_letter(array.data_type()).to_owned(),
                missing: first_null(array.as_ref()).map(|row| (row, "null")),
                objects: false,
                values: None,
            });
        }
        if let Some((dtype, of_numpy)) = pandas_dtype(numpy, column)? {
            return Ok(Source {
                dtype: dtype.str()?.to_string(),
                letter: dtype.getattr("kind")?.extract()?,
                missing: pandas_missing(numpy, column)?.map(|row| (row, "null")),
                objects: of_numpy,
                values: None,
            });
        }
        Self::numpy(numpy.call_method1("asarray", (column,))?, None)
    }

    /// A column numpy describes: its dtype is numpy's.
    fn numpy(values: Bound<'py, PyAny>, missing: Option<(usize, &'static str)>) -> PyResult<Self> {
        let dtype = values.getattr("dtype")?;
        let letter: String = dtype.getattr("kind")?.extract()?;
        Ok(Source {
            dtype: dtype.str()?.to_string(),
            objects: letter == "O",
            letter,
            missing,
            values: Some(values),
        })
    }
}

/// A pandas column's dtype where pandas, not numpy, knows what it holds: an extension dtype
/// (`Int64`, `Float64`, `boolean`, `string`, `int64[pyarrow]`, …), whose missing values numpy
/// would turn into NaN or objects, or numpy's `object`, which holds pandas' missing values as
/// objects (then with `true`: the dtype is numpy's). A numpy-backed number column is left to
/// numpy: its NaN is a value, which the engine refuses by name.
fn pandas_dtype<'py>(
    numpy: &Bound<'py, PyModule>,
    column: &Bound<'py, PyAny>,
) -> PyResult<Option<(Bound<'py, PyAny>, bool)>> {
    if !column.hasattr("isna")? || !column.hasattr("dtype")? {
        return Ok(None);
    }
    let dtype = column.getattr("dtype")?;
    if !dtype.hasattr("kind")? {
        return Ok(None);
    }
    let of_numpy = dtype.is_instance(&numpy.getattr("dtype")?)?;
    if of_numpy && dtype.getattr("kind")?.extract::<String>()? != "O" {
        return Ok(None);
    }
    Ok(Some((dtype, of_numpy)))
}

/// An Arrow column's type as its caller names it: a Polars `dtype` (`Float64`), a pyarrow
/// `type` (`double`), else Arrow's own name.
fn arrow_dtype(column: &Bound<'_, PyAny>, data_type: &DataType) -> String {
    ["dtype", "type"]
        .iter()
        .find_map(|attr| Some(column.getattr(*attr).ok()?.str().ok()?.to_string()))
        .unwrap_or_else(|| data_type.to_string())
}

/// numpy's kind letter for the Arrow types numpy converts to numbers (a dictionary-encoded
/// column by its values, which numpy decodes).
fn arrow_letter(data_type: &DataType) -> &'static str {
    match data_type {
        DataType::Dictionary(_, values) => arrow_letter(values),
        DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64 => "i",
        DataType::UInt8 | DataType::UInt16 | DataType::UInt32 | DataType::UInt64 => "u",
        DataType::Float16 | DataType::Float32 | DataType::Float64 => "f",
        DataType::Boolean => "b",
        _ => "",
    }
}

/// Whether numbers of numpy kind `letter` may go to a field of `kind` (their values still
/// checked). Booleans, strings, objects, dates are not numbers of a field's kind.
fn accepts(kind: FieldKind, letter: &str) -> bool {
    matches!(
        (kind, letter),
        (FieldKind::F64, "f" | "i" | "u") | (FieldKind::U64 | FieldKind::I64, "u" | "i")
    )
}

/// Why an object column (a list numpy made objects of, or a pandas `object` column) is not
/// numbers, by its first row that is not one: a missing value (`None`, or what pandas calls
/// missing, at `missing`) or an object of another type. `None` when every row is a number (an
/// integer too large for numpy, say): the column is then refused by its dtype.
fn first_non_number(
    values: &Bound<'_, PyAny>,
    kind: FieldKind,
    missing: Option<usize>,
) -> PyResult<Option<String>> {
    let real = values.py().import("numbers")?.getattr("Real")?;
    for (idx, item) in values.try_iter()?.enumerate() {
        let item = item?;
        let row = idx + 1;
        if item.is_none() || missing == Some(row) {
            return Ok(Some(missing_value(row, "null")));
        }
        // A bool is an int to Python, but not a number of a field's kind.
        if item.is_instance_of::<PyBool>() || !item.is_instance(&real)? {
            return Ok(Some(format!(
                "row {row} is a {}, not {kind}",
                type_name(&item)
            )));
        }
    }
    Ok(None)
}

/// The first value of `values` (of numpy kind `letter`) that f64 would round, as the reason to
/// refuse it: a longdouble with more precision or range than f64 has, or a 64-bit integer past
/// 2^53 with low bits f64 has no room for. Floats of 16 and 32 bits and integers of 32 bits or
/// fewer convert exactly.
fn inexact_in_f64(
    numpy: &Bound<'_, PyModule>,
    values: &Bound<'_, PyAny>,
    letter: &str,
) -> PyResult<Option<String>> {
    let itemsize: usize = values.getattr("dtype")?.getattr("itemsize")?.extract()?;
    match (letter, itemsize) {
        ("f", 9..) => inexact_float(numpy, values),
        ("i", 8) => Ok(inexact_integer::<i64>(numpy, values)?),
        ("u", 8) => Ok(inexact_integer::<u64>(numpy, values)?),
        _ => Ok(None),
    }
}

/// A float wider than f64 (numpy's longdouble) that does not come back from f64 as it was,
/// compared vectorised. NaN rows are left to the engine, which refuses them by name.
fn inexact_float(
    numpy: &Bound<'_, PyModule>,
    values: &Bound<'_, PyAny>,
) -> PyResult<Option<String>> {
    let py = numpy.py();
    // A value past f64's range becomes inf on the way, which numpy would warn of: here it is
    // refused instead, so the warning would only repeat the refusal.
    let quiet = PyDict::new(py);
    quiet.set_item("over", "ignore")?;
    quiet.set_item("invalid", "ignore")?;
    let errstate = numpy.call_method("errstate", (), Some(&quiet))?;
    errstate.call_method0("__enter__")?;
    let found = (|| {
        let kwargs = PyDict::new(py);
        kwargs.set_item("dtype", numpy::dtype::<f64>(py))?;
        let nearest = numpy.call_method("asarray", (values,), Some(&kwargs))?;
        let back = nearest.call_method1("astype", (values.getattr("dtype")?,))?;
        let changed = numpy.call_method1(
            "logical_and",
            (
                numpy.call_method1("not_equal", (&back, values))?,
                numpy.call_method1("equal", (values, values))?,
            ),
        )?;
        let Some(row) = first_true(&changed)? else {
            return Ok(None);
        };
        let value = values.get_item(row - 1)?.str()?.to_string();
        let nearest: f64 = nearest.get_item(row - 1)?.extract()?;
        Ok(Some(cannot_hold(row, &value, nearest)))
    })();
    errstate.call_method1("__exit__", (py.None(), py.None(), py.None()))?;
    found
}

/// A 64-bit integer whose nearest f64 is another number. Checked in Rust on the integers
/// themselves: numpy would compare an integer with a float as two floats, which hides the
/// difference.
fn inexact_integer<T>(
    numpy: &Bound<'_, PyModule>,
    values: &Bound<'_, PyAny>,
) -> PyResult<Option<String>>
where
    T: Element + Copy + Into<i128> + std::fmt::Display,
{
    let py = numpy.py();
    let kwargs = PyDict::new(py);
    kwargs.set_item("dtype", numpy::dtype::<T>(py))?;
    let integers = numpy.call_method("ascontiguousarray", (values,), Some(&kwargs))?;
    let integers = integers.cast::<PyArray1<T>>()?.readonly();
    let integers = integers
        .as_slice()
        .map_err(|err| PyValueError::new_err(format!("a column is not contiguous: {err}")))?;
    #[expect(
        clippy::cast_possible_truncation,
        reason = "the f64 comes from a 64-bit integer, so it is within i128: the cast is exact"
    )]
    let found = integers.iter().enumerate().find_map(|(idx, &value)| {
        let wide: i128 = value.into();
        let nearest = wide as f64;
        (nearest as i128 != wide).then(|| cannot_hold(idx + 1, &value.to_string(), nearest))
    });
    Ok(found)
}

fn cannot_hold(row: usize, value: &str, nearest: f64) -> String {
    format!(
        "row {row} holds {value}, which an f64 field cannot hold exactly (the nearest f64 is \
         {nearest})"
    )
}

/// A column for a number field of `kind` as a contiguous array of `T`: borrowed when it is one
/// already (and not a masked array), else converted once where the conversion keeps every
/// value: unsigned from non-negative signed, signed from unsigned up to `i64::MAX` (both checked
/// with numpy's vectorised min and max), f64 from any number it holds exactly.
pub(crate) fn numbers<'py, T: Element>(
    py: Python<'py>,
    field: &str,
    kind: FieldKind,
    column: &Bound<'py, PyAny>,
) -> PyResult<PyReadonlyArray1<'py, T>> {
    let numpy = py.import("numpy")?;
    // A masked array is an ndarray too; borrowing it would keep what lies beneath its mask.
    if let Ok(array) = column.cast::<PyArray1<T>>()
        && array.is_contiguous()
        && !is_masked(&numpy, column)?
    {
        return Ok(array.readonly());
    }
    let refuse = |why: String| PyValueError::new_err(format!("field {field:?} ({kind}): {why}"));
    let source = Source::of(&numpy, column)?;
    if let Some(values) = &source.values {
        one_dimensional(values, &refuse)?;
    }
    if !accepts(kind, &source.letter) {
        if source.objects {
            let values = match &source.values {
                Some(values) => values.clone(),
                None => numpy.call_method1("asarray", (column,))?,
            };
            if let Some(why) = first_non_number(&values, kind, source.missing.map(|m| m.0))? {
                return Err(refuse(why));
            }
        }
        return Err(refuse(format!(
            "a column of dtype {} is not {kind} numbers",
            source.dtype
        )));
    }
    if let Some((row, how)) = source.missing {
        return Err(refuse(missing_value(row, how)));
    }
    let array = match source.values {
        Some(values) => values,
        None => numpy.call_method1("asarray", (column,))?,
    };
    one_dimensional(&array, &refuse)?;
    // What numpy made of a pandas or Arrow column, checked again: its kind decides the checks.
    let letter: String = array.getattr("dtype")?.getattr("kind")?.extract()?;
    if !accepts(kind, &letter) {
        return Err(refuse(format!(
            "a column of dtype {} is not {kind} numbers",
            source.dtype
        )));
    }
    let len: usize = array.len()?;
    if len > 0 && kind == FieldKind::U64 && letter == "i" {
        let min: i64 = array.call_method0("min")?.extract()?;
        if min < 0 {
            let at: usize = array.call_method0("argmin")?.extract()?;
            return Err(refuse(format!(
                "row {} holds {min}, which a u64 field cannot hold",
                at + 1
            )));
        }
    }
    if len > 0 && kind == FieldKind::I64 && letter == "u" {
        let max: u64 = array.call_method0("max")?.extract()?;
        if max > i64::MAX as u64 {
            let at: usize = array.call_method0("argmax")?.extract()?;
            return Err(refuse(format!(
                "row {} holds {max}, which an i64 field cannot hold",
                at + 1
            )));
        }
    }
    if kind == FieldKind::F64
        && let Some(why) = inexact_in_f64(&numpy, &array, &letter)?
    {
        return Err(refuse(why));
    }
    let kwargs = PyDict::new(py);
    kwargs.set_item("dtype", numpy::dtype::<T>(py))?;
    let converted = numpy.call_method("ascontiguousarray", (array,), Some(&kwargs))?;
    Ok(converted.cast::<PyArray1<T>>()?.readonly())
}

fn one_dimensional(values: &Bound<'_, PyAny>, refuse: &impl Fn(String) -> PyErr) -> PyResult<()> {
    let ndim: usize = values.getattr("ndim")?.extract()?;
    if ndim != 1 {
        return Err(refuse(format!(
            "a column is one-dimensional, this one has {ndim} dimensions"
        )));
    }
    Ok(())
}
