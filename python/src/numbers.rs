//! A number field's column as a contiguous numpy array of the field's dtype: borrowed when it is
//! one already, else converted once, vectorised, after the checks that keep every value as the
//! caller gave it. A numpy masked slot is refused as missing, before numpy could hand over the
//! hidden value beneath it; a value the field cannot hold exactly is refused naming its row.

use numpy::{Element, PyArray1, PyArrayMethods, PyReadonlyArray1, PyUntypedArrayMethods};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use strata::FieldKind;

use crate::missing::{first_masked, first_true, is_masked, missing_value};

/// A column as numpy sees it, with the first row (1-based) a numpy mask says holds no value.
struct Source<'py> {
    dtype: String,
    /// numpy's `dtype.kind` (`i`, `u`, `f`, `b`, `O`, …).
    letter: String,
    missing: Option<(usize, &'static str)>,
    values: Bound<'py, PyAny>,
}

impl<'py> Source<'py> {
    fn of(numpy: &Bound<'py, PyModule>, column: &Bound<'py, PyAny>) -> PyResult<Self> {
        // A masked array's values, the masked slots' among them: numpy drops the mask.
        let values = numpy.call_method1("asarray", (column,))?;
        let missing = first_masked(numpy, column)?.map(|row| (row, "masked"));
        let dtype = values.getattr("dtype")?;
        Ok(Source {
            dtype: dtype.str()?.to_string(),
            letter: dtype.getattr("kind")?.extract()?,
            missing,
            values,
        })
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
    one_dimensional(&source.values, &refuse)?;
    if !accepts(kind, &source.letter) {
        return Err(refuse(format!(
            "a column of dtype {} is not {kind} numbers",
            source.dtype
        )));
    }
    if let Some((row, how)) = source.missing {
        return Err(refuse(missing_value(row, how)));
    }
    let (array, letter) = (source.values, source.letter);
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
