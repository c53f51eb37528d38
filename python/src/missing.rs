//! Missing values in a column: where a numpy mask says a row holds no value, and the words a
//! refusal of one uses. strata stores no missing values yet, so a batch with one is refused
//! whole, as missing: not as the hidden value numpy would hand over for it.

use pyo3::prelude::*;

/// The refusal of a row that holds no value; `how` is the caller's word for it (`masked` for a
/// numpy masked slot).
pub(crate) fn missing_value(row: usize, how: &str) -> String {
    format!("row {row} is a missing value ({how}), and strata stores none yet")
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
