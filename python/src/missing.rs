//! Missing values in a column: where a numpy mask, an Arrow validity bitmap or pandas' `isna`
//! says a row holds no value, and the words a refusal of one uses. strata stores no missing
//! values yet, so a batch with one is refused whole, as missing: not as the NaN or the hidden
//! value numpy would make of it, nor by the dtype numpy would widen the column to.

use arrow_array::Array;
use pyo3::prelude::*;

/// The refusal of a row that holds no value; `how` is the caller's word for it (`null` for an
/// Arrow or Polars null, a pandas NA or a Python `None`; `masked` for a numpy masked slot).
pub(crate) fn missing_value(row: usize, how: &str) -> String {
    format!("row {row} is a missing value ({how}), and strata stores none yet")
}

/// The 1-based row of an Arrow array's first null, if any.
pub(crate) fn first_null(array: &dyn Array) -> Option<usize> {
    if array.null_count() == 0 {
        return None;
    }
    (0..array.len())
        .find(|&idx| array.is_null(idx))
        .map(|idx| idx + 1)
}

/// The 1-based row of the first `True` in a boolean numpy array, if any (numpy's vectorised
/// `any` and `argmax`).
pub(crate) fn first_true(mask: &Bound<'_, PyAny>) -> PyResult<Option<usize>> {
    if !mask.call_method0("any")?.extract::<bool>()? {
        return Ok(None);
    }
    Ok(Some(mask.call_method0("argmax")?.extract::<usize>()? + 1))
}

/// Whether `column` is a numpy masked array: an ndarray too, whose masked slots still hold
/// values underneath (whatever was there, or a fill value), which must not be read as data.
pub(crate) fn is_masked(numpy: &Bound<'_, PyModule>, column: &Bound<'_, PyAny>) -> PyResult<bool> {
    column.is_instance(&numpy.getattr("ma")?.getattr("MaskedArray")?)
}

/// The 1-based row of a numpy masked array's first masked slot, if any; `None` too for a
/// column that is not a masked array.
pub(crate) fn first_masked(
    numpy: &Bound<'_, PyModule>,
    column: &Bound<'_, PyAny>,
) -> PyResult<Option<usize>> {
    if !is_masked(numpy, column)? {
        return Ok(None);
    }
    first_true(
        &numpy
            .getattr("ma")?
            .call_method1("getmaskarray", (column,))?,
    )
}

/// The 1-based row of a pandas column's first missing value (NA, None, NaN, NaT: whatever its
/// `isna` says), if any; `None` too for a column that is not pandas' (no `isna` and `dtype`).
pub(crate) fn pandas_missing(
    numpy: &Bound<'_, PyModule>,
    column: &Bound<'_, PyAny>,
) -> PyResult<Option<usize>> {
    if !column.hasattr("isna")? || !column.hasattr("dtype")? {
        return Ok(None);
    }
    let mask = numpy.call_method1("asarray", (column.call_method0("isna")?,))?;
    first_true(&mask)
}
