//! Missing values in a column: where a numpy mask, an Arrow validity bitmap or pandas' `isna`
//! says a row holds no value, and the words a refusal of one uses. A measured field's missing
//! value is stored as null (#48); the axis, a `str` and a `bytes` field are never missing, and a
//! batch with a missing value in one is refused whole, naming the field's role and the row.

use arrow_array::Array;
use numpy::{PyArray1, PyArrayMethods};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// Which rows of a column hold no value (`true`: missing), and what its caller calls such a row
/// (`null` for an Arrow or Polars null, a pandas NA or a Python `None`; `masked` for a numpy
/// masked slot). Only made for a column with at least one missing row.
pub(crate) struct Mask {
    pub(crate) rows: Vec<bool>,
    pub(crate) how: &'static str,
}

impl Mask {
    /// The mask of `rows`, or `None` when no row is missing.
    pub(crate) fn of(rows: Vec<bool>, how: &'static str) -> Option<Mask> {
        rows.contains(&true).then_some(Mask { rows, how })
    }

    /// A boolean numpy array (or anything numpy makes one of) as a mask; `None` when it holds
    /// no `True` (numpy's vectorised `any` says so before anything is copied).
    pub(crate) fn of_numpy(mask: &Bound<'_, PyAny>, how: &'static str) -> PyResult<Option<Mask>> {
        let py = mask.py();
        let numpy = py.import("numpy")?;
        let kwargs = PyDict::new(py);
        kwargs.set_item("dtype", numpy::dtype::<bool>(py))?;
        let mask = numpy.call_method("ascontiguousarray", (mask,), Some(&kwargs))?;
        if !mask.call_method0("any")?.extract::<bool>()? {
            return Ok(None);
        }
        let mask = mask.cast::<PyArray1<bool>>()?.readonly();
        let rows = mask
            .as_slice()
            .map_err(|err| PyValueError::new_err(format!("a mask is not contiguous: {err}")))?
            .to_vec();
        Ok(Mask::of(rows, how))
    }

    /// The 1-based row of the first missing value.
    pub(crate) fn first(&self) -> usize {
        self.rows.iter().position(|&m| m).map_or(0, |idx| idx + 1)
    }
}

/// The refusal of a missing value in a field that may not be missing: the axis, a `str` or a
/// `bytes` field. `role` says what the field is and why every row needs it, in the engine's own
/// words for a null there (`the axis: every row needs one`).
pub(crate) fn never_missing(row: usize, how: &str, role: &str) -> String {
    format!("row {row} is missing ({how}), and it is {role}")
}

/// The rows of an Arrow array that hold no value, as Arrow's logical nulls say (a dictionary's
/// null keys and the keys of its null values both), or `None` if none does.
pub(crate) fn arrow_mask(array: &dyn Array) -> Option<Mask> {
    let nulls = array.logical_nulls()?;
    if nulls.null_count() == 0 {
        return None;
    }
    Mask::of(
        (0..array.len()).map(|idx| nulls.is_null(idx)).collect(),
        "null",
    )
}

/// Whether `column` is a numpy masked array: an ndarray too, whose masked slots still hold
/// values underneath (whatever was there, or a fill value), which must not be read as data.
pub(crate) fn is_masked(numpy: &Bound<'_, PyModule>, column: &Bound<'_, PyAny>) -> PyResult<bool> {
    column.is_instance(&numpy.getattr("ma")?.getattr("MaskedArray")?)
}

/// A numpy masked array's masked slots, if it has any; `None` too for a column that is not a
/// masked array.
pub(crate) fn masked_mask(
    numpy: &Bound<'_, PyModule>,
    column: &Bound<'_, PyAny>,
) -> PyResult<Option<Mask>> {
    if !is_masked(numpy, column)? {
        return Ok(None);
    }
    Mask::of_numpy(
        &numpy
            .getattr("ma")?
            .call_method1("getmaskarray", (column,))?,
        "masked",
    )
}

/// A pandas column's missing values (NA, None, NaN, NaT: whatever its `isna` says), if any;
/// `None` too for a column that is not pandas' (no `isna` and `dtype`).
pub(crate) fn pandas_mask(column: &Bound<'_, PyAny>) -> PyResult<Option<Mask>> {
    if !column.hasattr("isna")? || !column.hasattr("dtype")? {
        return Ok(None);
    }
    Mask::of_numpy(&column.call_method0("isna")?, "null")
}

/// Whether `item`, one object of a column, is what pandas calls a missing value and not a
/// number: `pd.NA`, `pd.NaT`, numpy's `NaT`. Asked only of pandas if the program imported it:
/// without pandas no object is its NA. A float NaN is a number, never asked.
pub(crate) fn pandas_missing_object(item: &Bound<'_, PyAny>) -> PyResult<bool> {
    let py = item.py();
    let modules = py.import("sys")?.getattr("modules")?;
    let Ok(pandas) = modules.get_item("pandas") else {
        return Ok(false);
    };
    // `isna` of a scalar is a bool; of anything else (a list in a cell) an array: not missing.
    let answer = pandas.call_method1("isna", (item,))?;
    Ok(answer.extract::<bool>().unwrap_or(false))
}

/// The 1-based row of the first `True` in a boolean numpy array, if any (numpy's vectorised
/// `any` and `argmax`).
pub(crate) fn first_true(mask: &Bound<'_, PyAny>) -> PyResult<Option<usize>> {
    if !mask.call_method0("any")?.extract::<bool>()? {
        return Ok(None);
    }
    Ok(Some(mask.call_method0("argmax")?.extract::<usize>()? + 1))
}
