//! A number field's column as a contiguous numpy array of the field's dtype: borrowed when it is
//! one already, else converted once, vectorised, after the checks that keep every value as the
//! caller gave it. A missing value (a numpy masked slot, a pandas NA, an Arrow or Polars null, a
//! `None`) is found before numpy could make NaN or the slot's hidden value of it, and is stored
//! as null (#48) — or refused naming its row where the field may not be missing (the axis). A
//! NaN is a value, stored as NaN. A value the field cannot hold exactly is refused naming its
//! row; a column of another kind is refused by the dtype its caller gave it, not the one numpy
//! would convert it to.

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Float16Type, Float32Type, Float64Type, Int8Type, Int16Type, Int32Type, Int64Type, UInt8Type,
    UInt16Type, UInt32Type, UInt64Type,
};
use arrow_array::{Array, ArrowPrimitiveType};
use arrow_schema::DataType;
use numpy::{Element, PyArray1, PyArrayMethods, PyReadonlyArray1, PyUntypedArrayMethods};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyList};
use strata::FieldKind;

use crate::columns::arrow_of;
use crate::missing::{
    Mask, arrow_mask, first_true, is_masked, masked_mask, never_missing, pandas_mask,
    pandas_missing_object,
};
use crate::type_name;

/// A number field's values as the engine takes them: a contiguous array when every row holds a
/// value, else each row's value or `None` for a missing one (the engine's `Values::Opt*`).
pub(crate) enum Numbers<'py, T: Element> {
    Dense(PyReadonlyArray1<'py, T>),
    Nullable(Vec<Option<T>>),
}

/// How a column's missing rows are filled with a harmless 0 before numpy converts it, once its
/// dtype is known to be numbers: the filled rows are then left out by the mask.
enum Fill {
    /// numpy converts the column as it is.
    None,
    /// A pandas extension dtype with NA: `fillna(0)`, which keeps the dtype (numpy would make
    /// `float64` of an `Int64` column with NA, or objects).
    Pandas,
    /// An Arrow array with nulls: its values read in place, each null as 0 (numpy, through
    /// pyarrow or Polars, would make `float64` of an integer column with nulls).
    Arrow(arrow_array::ArrayRef),
}

/// A column as its caller made it, before numpy converts it.
struct Source<'py> {
    /// The dtype in the caller's own terms: pandas' `Int64`, Polars' `Float64`, pyarrow's
    /// `double`, numpy's `float64`.
    dtype: String,
    /// numpy's `dtype.kind` for that dtype (`i`, `u`, `f`, `b`, `O`, …); empty for an Arrow
    /// type that is not a number.
    letter: String,
    /// The rows that hold no value, if any.
    mask: Option<Mask>,
    /// Whether the values are numpy objects (a list numpy made objects of, a pandas `object`
    /// column), each row then read as a number or a missing value.
    objects: bool,
    /// The values through `numpy.asarray`, made at once for a numpy array or a column numpy
    /// alone can describe (a masked array's masked slots filled with 0 first). A pandas or
    /// Arrow column is converted only once its dtype is known to be numbers, as `fill` says.
    values: Option<Bound<'py, PyAny>>,
    fill: Fill,
}

impl<'py> Source<'py> {
    fn of(numpy: &Bound<'py, PyModule>, column: &Bound<'py, PyAny>) -> PyResult<Self> {
        if column.is_instance(&numpy.getattr("ndarray")?)? {
            let mask = masked_mask(numpy, column)?;
            // A masked array's values, the masked slots' among them: numpy drops the mask. The
            // masked slots' hidden values are replaced first, so no check reads them.
            let values = if mask.is_some() {
                numpy.call_method1("asarray", (column.call_method1("filled", (0,))?,))?
            } else {
                numpy.call_method1("asarray", (column,))?
            };
            return Self::numpy(values, mask);
        }
        if let Some(array) = arrow_of(column)? {
            let mask = arrow_mask(array.as_ref());
            return Ok(Source {
                dtype: arrow_dtype(column, array.data_type()),
                letter: arrow_letter(array.data_type()).to_owned(),
                fill: if mask.is_some() {
                    Fill::Arrow(array)
                } else {
                    Fill::None
                },
                mask,
                objects: false,
                values: None,
            });
        }
        if let Some((dtype, of_numpy)) = pandas_dtype(numpy, column)? {
            let mask = pandas_mask(column)?;
            return Ok(Source {
                dtype: dtype.str()?.to_string(),
                letter: dtype.getattr("kind")?.extract()?,
                fill: if mask.is_some() && !of_numpy {
                    Fill::Pandas
                } else {
                    Fill::None
                },
                mask,
                objects: of_numpy,
                values: None,
            });
        }
        Self::numpy(numpy.call_method1("asarray", (column,))?, None)
    }

    /// A column numpy describes: its dtype is numpy's.
    fn numpy(values: Bound<'py, PyAny>, mask: Option<Mask>) -> PyResult<Self> {
        let dtype = values.getattr("dtype")?;
        let letter: String = dtype.getattr("kind")?.extract()?;
        Ok(Source {
            dtype: dtype.str()?.to_string(),
            objects: letter == "O",
            letter,
            mask,
            values: Some(values),
            fill: Fill::None,
        })
    }

    /// The values as numpy makes them, missing rows filled with 0 as `fill` says.
    fn values(
        &self,
        numpy: &Bound<'py, PyModule>,
        column: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        if let Some(values) = &self.values {
            return Ok(values.clone());
        }
        match &self.fill {
            Fill::None => numpy.call_method1("asarray", (column,)),
            Fill::Pandas => numpy.call_method1("asarray", (column.call_method1("fillna", (0,))?,)),
            Fill::Arrow(array) => arrow_zeroed(numpy, array.as_ref())?.ok_or_else(|| {
                PyValueError::new_err(format!(
                    "an Arrow column of type {} is not numbers",
                    array.data_type()
                ))
            }),
        }
    }
}

/// An Arrow array of numbers as a numpy array, each null as 0 (a dictionary decoded by its
/// keys); `None` for an array that is not numbers. A 16-bit float becomes a 32-bit one, which
/// holds it exactly.
fn arrow_zeroed<'py>(
    numpy: &Bound<'py, PyModule>,
    array: &dyn Array,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    fn zeroed<'py, T: ArrowPrimitiveType>(py: Python<'py>, array: &dyn Array) -> Bound<'py, PyAny>
    where
        T::Native: Element,
    {
        let values: Vec<T::Native> = array
            .as_primitive::<T>()
            .iter()
            .map(Option::unwrap_or_default)
            .collect();
        PyArray1::from_vec(py, values).into_any()
    }
    let py = numpy.py();
    Ok(Some(match array.data_type() {
        DataType::Int8 => zeroed::<Int8Type>(py, array),
        DataType::Int16 => zeroed::<Int16Type>(py, array),
        DataType::Int32 => zeroed::<Int32Type>(py, array),
        DataType::Int64 => zeroed::<Int64Type>(py, array),
        DataType::UInt8 => zeroed::<UInt8Type>(py, array),
        DataType::UInt16 => zeroed::<UInt16Type>(py, array),
        DataType::UInt32 => zeroed::<UInt32Type>(py, array),
        DataType::UInt64 => zeroed::<UInt64Type>(py, array),
        DataType::Float16 => {
            let values: Vec<f32> = array
                .as_primitive::<Float16Type>()
                .iter()
                .map(|v| v.unwrap_or_default().to_f32())
                .collect();
            PyArray1::from_vec(py, values).into_any()
        }
        DataType::Float32 => zeroed::<Float32Type>(py, array),
        DataType::Float64 => zeroed::<Float64Type>(py, array),
        DataType::Dictionary(_, _) => {
            let dict = array.as_any_dictionary();
            let Some(values) = arrow_zeroed(numpy, dict.values().as_ref())? else {
                return Ok(None);
            };
            if dict.values().is_empty() {
                // No values: every key is null, every row 0.
                let kwargs = PyDict::new(py);
                kwargs.set_item("dtype", values.getattr("dtype")?)?;
                numpy.call_method("zeros", (array.len(),), Some(&kwargs))?
            } else {
                let keys = PyArray1::from_vec(py, dict.normalized_keys());
                values.call_method1("take", (keys,))?
            }
        }
        _ => return Ok(None),
    }))
}

/// A pandas column's dtype where pandas, not numpy, knows what it holds: an extension dtype
/// (`Int64`, `Float64`, `boolean`, `string`, `int64[pyarrow]`, …), whose missing values numpy
/// would turn into NaN or objects, or numpy's `object`, which holds pandas' missing values as
/// objects (then with `true`: the dtype is numpy's). A numpy-backed number column is left to
/// numpy: its NaN is a value, stored as NaN.
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

/// An object column's numbers, missing rows filled with 0, and its mask; or why it is not numbers.
type Filled<'py> = Result<(Bound<'py, PyAny>, Option<Mask>), String>;

/// An object column (a list numpy made objects of, a pandas `object` column, a masked array of
/// objects) as numbers, read row by row: a number is kept, a missing value (`None`, what pandas
/// calls missing and is not a number — `pd.NA`, `NaT` —, a row `known` masks) is filled with 0
/// and masked; a float NaN is a number. `Err` names the first row that is neither, as the reason
/// to refuse the column.
fn objects_as_numbers<'py>(
    numpy: &Bound<'py, PyModule>,
    values: &Bound<'py, PyAny>,
    kind: FieldKind,
    known: Option<&Mask>,
) -> PyResult<Filled<'py>> {
    let py = values.py();
    let real = py.import("numbers")?.getattr("Real")?;
    let zero = 0_u8.into_pyobject(py)?;
    let filled = PyList::empty(py);
    let mut rows = Vec::new();
    let mut first_how = None;
    for (idx, item) in values.try_iter()?.enumerate() {
        let item = item?;
        let known_how = known
            .filter(|m| m.rows.get(idx) == Some(&true))
            .map(|m| m.how);
        // A bool is an int to Python, but not a number of a field's kind.
        let number = !item.is_instance_of::<PyBool>() && item.is_instance(&real)?;
        let how = if known_how == Some("masked") {
            Some("masked")
        } else if item.is_none() {
            Some("null")
        } else if number {
            None
        } else if known_how.is_some() || pandas_missing_object(&item)? {
            Some("null")
        } else {
            return Ok(Err(format!(
                "row {} is a {}, not {kind}",
                idx + 1,
                type_name(&item)
            )));
        };
        if let Some(how) = how {
            first_how.get_or_insert(how);
            filled.append(&zero)?;
        } else {
            filled.append(&item)?;
        }
        rows.push(how.is_some());
    }
    let mask = first_how.and_then(|how| Mask::of(rows, how));
    Ok(Ok((numpy.call_method1("asarray", (filled,))?, mask)))
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

/// A column for a number field of `kind` as the engine takes it: a contiguous array of `T`,
/// borrowed when it is one already (and not a masked array), else converted once where the
/// conversion keeps every value: unsigned from non-negative signed, signed from unsigned up to
/// `i64::MAX` (both checked with numpy's vectorised min and max), f64 from any number it holds
/// exactly. A column with missing values answers each row's value or `None`; `role` says why
/// this field may not be missing (the axis), and then one is refused naming its row.
pub(crate) fn numbers<'py, T: Element + Copy>(
    py: Python<'py>,
    field: &str,
    kind: FieldKind,
    role: Option<&str>,
    column: &Bound<'py, PyAny>,
) -> PyResult<Numbers<'py, T>> {
    let numpy = py.import("numpy")?;
    // A masked array is an ndarray too; borrowing it would keep what lies beneath its mask.
    if let Ok(array) = column.cast::<PyArray1<T>>()
        && array.is_contiguous()
        && !is_masked(&numpy, column)?
    {
        return Ok(Numbers::Dense(array.readonly()));
    }
    let refuse = |why: String| PyValueError::new_err(format!("field {field:?} ({kind}): {why}"));
    let not_numbers =
        |dtype: &str| refuse(format!("a column of dtype {dtype} is not {kind} numbers"));
    let mut source = Source::of(&numpy, column)?;
    if let Some(values) = &source.values {
        one_dimensional(values, &refuse)?;
    }
    if source.objects {
        let values = source.values(&numpy, column)?;
        match objects_as_numbers(&numpy, &values, kind, source.mask.as_ref())? {
            Err(why) => return Err(refuse(why)),
            Ok((filled, mask)) => {
                source.mask = mask;
                source.letter = filled.getattr("dtype")?.getattr("kind")?.extract()?;
                source.values = Some(filled);
                source.fill = Fill::None;
            }
        }
    }
    if !accepts(kind, &source.letter) {
        return Err(not_numbers(&source.dtype));
    }
    if let (Some(mask), Some(role)) = (&source.mask, role) {
        return Err(refuse(never_missing(mask.first(), mask.how, role)));
    }
    let array = source.values(&numpy, column)?;
    one_dimensional(&array, &refuse)?;
    // What numpy made of a pandas or Arrow column, checked again: its kind decides the checks.
    let letter: String = array.getattr("dtype")?.getattr("kind")?.extract()?;
    if !accepts(kind, &letter) {
        return Err(not_numbers(&source.dtype));
    }
    let len: usize = array.len()?;
    if let Some(mask) = &source.mask
        && mask.rows.len() != len
    {
        return Err(refuse(format!(
            "the column has {len} values and a mask of {} rows",
            mask.rows.len()
        )));
    }
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
    let converted = converted.cast::<PyArray1<T>>()?.readonly();
    let Some(mask) = source.mask else {
        return Ok(Numbers::Dense(converted));
    };
    let values = converted
        .as_slice()
        .map_err(|err| PyValueError::new_err(format!("a column is not contiguous: {err}")))?;
    Ok(Numbers::Nullable(
        values
            .iter()
            .zip(&mask.rows)
            .map(|(&value, &missing)| (!missing).then_some(value))
            .collect(),
    ))
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
