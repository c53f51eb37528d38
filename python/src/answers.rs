//! What reads answer with: a query's batches behind the Arrow PyCapsule interface, numpy arrays
//! of a query's columns, a survey's buckets as numpy arrays, a fold's numbers.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::ffi::FFI_ArrowSchema;
use arrow_array::ffi_stream::FFI_ArrowArrayStream;
use arrow_array::{Array, RecordBatch, RecordBatchIterator};
use arrow_schema::{DataType, SchemaRef};
use numpy::{Element, PyArray1};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyCapsule, PyDict, PyList};
use strata::arrow_array as engine_arrow;
use strata::levels::Bucket;
use strata::{FieldKind, Num, StreamDecl, Survey as EngineSurvey};

use crate::StrataError;

/// A query's batches behind the Arrow PyCapsule interface: `__arrow_c_stream__` hands them to
/// a consumer as an `ArrowArrayStream` (the C stream interface), as often as it is asked (the
/// batches are shared, not copied); `__arrow_c_schema__` gives their schema.
#[pyclass(module = "strata._strata", name = "ArrowStream", frozen)]
pub(crate) struct PyArrowStream {
    batches: Vec<RecordBatch>,
    schema: SchemaRef,
}

impl PyArrowStream {
    pub(crate) fn new(batches: Vec<RecordBatch>, schema: SchemaRef) -> Self {
        PyArrowStream { batches, schema }
    }
}

#[pymethods]
impl PyArrowStream {
    /// The rows as a PyCapsule named `arrow_array_stream`. A `requested_schema` is not
    /// honoured: the batches carry the stream's own schema (the consumer may cast).
    #[pyo3(signature = (requested_schema = None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = requested_schema;
        let batches = self.batches.clone();
        let reader =
            RecordBatchIterator::new(batches.into_iter().map(Ok), Arc::clone(&self.schema));
        let stream = FFI_ArrowArrayStream::new(Box::new(reader));
        // The capsule owns the stream: a consumer moves it out (its `release` then null), and
        // one that never does has it released when the capsule goes.
        PyCapsule::new_with_value(py, stream, c"arrow_array_stream")
    }

    /// The schema as a PyCapsule named `arrow_schema`.
    fn __arrow_c_schema__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyCapsule>> {
        let schema = FFI_ArrowSchema::try_from(self.schema.as_ref())
            .map_err(|e| StrataError::new_err(e.to_string()))?;
        PyCapsule::new_with_value(py, schema, c"arrow_schema")
    }

    /// How many rows.
    fn __len__(&self) -> usize {
        self.batches.iter().map(RecordBatch::num_rows).sum()
    }

    fn __repr__(&self) -> String {
        format!("strata.ArrowStream(rows={})", self.__len__())
    }
}

pub(crate) fn num_to_py(py: Python<'_>, value: Num) -> PyResult<Bound<'_, PyAny>> {
    Ok(match value {
        Num::U64(v) => v.into_pyobject(py)?.into_any(),
        Num::I64(v) => v.into_pyobject(py)?.into_any(),
        Num::F64(v) => v.into_pyobject(py)?.into_any(),
    })
}

/// The concatenation of one column's chunks as a numpy array.
pub(crate) fn column_to_numpy<'py>(
    py: Python<'py>,
    data_type: &DataType,
    chunks: &[&dyn Array],
) -> PyResult<Bound<'py, PyAny>> {
    use engine_arrow::types::{Float64Type, Int64Type, UInt64Type};
    fn primitive<'py, T: engine_arrow::ArrowPrimitiveType>(
        py: Python<'py>,
        chunks: &[&dyn Array],
    ) -> Bound<'py, PyAny>
    where
        T::Native: Element,
    {
        let mut all = Vec::with_capacity(chunks.iter().map(|c| c.len()).sum());
        for chunk in chunks {
            all.extend_from_slice(chunk.as_primitive::<T>().values());
        }
        PyArray1::from_vec(py, all).into_any()
    }
    /// A measured field with nulls as a numpy masked array: a null row masked (the value
    /// beneath is the engine's placeholder, never data), NaN unmasked.
    fn masked<'py>(
        py: Python<'py>,
        values: Bound<'py, PyAny>,
        chunks: &[&dyn Array],
    ) -> PyResult<Bound<'py, PyAny>> {
        if chunks.iter().all(|c| c.null_count() == 0) {
            return Ok(values);
        }
        let mut mask = Vec::with_capacity(chunks.iter().map(|c| c.len()).sum());
        for chunk in chunks {
            mask.extend((0..chunk.len()).map(|idx| chunk.is_null(idx)));
        }
        let kwargs = PyDict::new(py);
        kwargs.set_item("mask", PyArray1::from_vec(py, mask))?;
        py.import("numpy")?
            .getattr("ma")?
            .call_method("masked_array", (values,), Some(&kwargs))
    }
    Ok(match data_type {
        DataType::UInt64 => masked(py, primitive::<UInt64Type>(py, chunks), chunks)?,
        DataType::Int64 => masked(py, primitive::<Int64Type>(py, chunks), chunks)?,
        DataType::Float64 => masked(py, primitive::<Float64Type>(py, chunks), chunks)?,
        DataType::Timestamp(unit, _) => crate::times::timestamps_to_numpy(py, *unit, chunks)?,
        DataType::Dictionary(_, _) => {
            // A track's labels: each chunk's few labels as Python objects once, spread over
            // its rows by numpy's `take` of the keys (references to those objects, none new).
            let numpy = py.import("numpy")?;
            let parts = PyList::empty(py);
            for chunk in chunks {
                let dict = chunk.as_any_dictionary();
                let labels = PyList::empty(py);
                append_objects(py, &labels, dict.values().as_ref())?;
                let kwargs = PyDict::new(py);
                kwargs.set_item("dtype", "object")?;
                let labels = numpy.call_method("array", (labels,), Some(&kwargs))?;
                let keys = dict.keys().as_primitive::<engine_arrow::types::Int32Type>();
                let keys = PyArray1::from_slice(py, keys.values());
                parts.append(labels.call_method1("take", (keys,))?)?;
            }
            if parts.is_empty() {
                let kwargs = PyDict::new(py);
                kwargs.set_item("dtype", "object")?;
                numpy.call_method("empty", (0,), Some(&kwargs))?
            } else {
                numpy.call_method1("concatenate", (parts,))?
            }
        }
        _ => {
            // Strings, bytes and dictionary-encoded track labels: one Python object a row is
            // what a numpy array of them is.
            let items = PyList::empty(py);
            for chunk in chunks {
                append_objects(py, &items, *chunk)?;
            }
            let numpy = py.import("numpy")?;
            let kwargs = PyDict::new(py);
            kwargs.set_item("dtype", "object")?;
            numpy.call_method("array", (items,), Some(&kwargs))?
        }
    })
}

fn append_objects(py: Python<'_>, items: &Bound<'_, PyList>, chunk: &dyn Array) -> PyResult<()> {
    match chunk.data_type() {
        DataType::Utf8 => {
            for s in chunk.as_string::<i32>() {
                items.append(s)?;
            }
        }
        DataType::LargeUtf8 => {
            for s in chunk.as_string::<i64>() {
                items.append(s)?;
            }
        }
        DataType::LargeBinary => {
            for b in chunk.as_binary::<i64>() {
                items.append(b.map(|b| PyBytes::new(py, b)))?;
            }
        }
        other => {
            return Err(StrataError::new_err(format!(
                "a column of Arrow type {other} has no numpy form here"
            )));
        }
    }
    Ok(())
}

/// A survey's answer: `level`, `group`, `span`, and per measured field a dict of numpy arrays
/// (`first`, `first_axis`, `last`, `last_axis`, `min`, `min_axis`, `max`, `max_axis`, `count`,
/// `sum`, `sum_sq`, `mean`), one entry a bucket, in axis order.
#[pyclass(module = "strata._strata", name = "Survey", frozen)]
pub(crate) struct PySurvey {
    /// The level whose cells answer.
    #[pyo3(get)]
    level: u8,
    /// Adjacent cells of `level` merged per bucket.
    #[pyo3(get)]
    group: u128,
    /// The axis span answered, both ends included, or `None` when nothing is recorded.
    #[pyo3(get)]
    span: Option<(u64, u64)>,
    /// Field name to its dict of arrays, in declaration order.
    #[pyo3(get)]
    fields: Py<PyDict>,
}

/// One bucket member's values of a field as a numpy array of the field's dtype. A value of
/// another kind breaks the engine's promise: refused, never written as a made-up number.
fn values_array<'py>(
    py: Python<'py>,
    field: &str,
    kind: FieldKind,
    values: impl Iterator<Item = Num>,
) -> PyResult<Bound<'py, PyAny>> {
    let other = |v: Num| {
        StrataError::new_err(format!(
            "field {field:?} ({kind}) answered a value of kind {:?}",
            v.kind()
        ))
    };
    Ok(match kind {
        FieldKind::U64 => {
            let values = values.map(|v| {
                if let Num::U64(x) = v {
                    Ok(x)
                } else {
                    Err(other(v))
                }
            });
            PyArray1::from_vec(py, values.collect::<PyResult<Vec<u64>>>()?).into_any()
        }
        FieldKind::I64 => {
            let values = values.map(|v| {
                if let Num::I64(x) = v {
                    Ok(x)
                } else {
                    Err(other(v))
                }
            });
            PyArray1::from_vec(py, values.collect::<PyResult<Vec<i64>>>()?).into_any()
        }
        _ => {
            let values = values.map(|v| {
                if let Num::F64(x) = v {
                    Ok(x)
                } else {
                    Err(other(v))
                }
            });
            PyArray1::from_vec(py, values.collect::<PyResult<Vec<f64>>>()?).into_any()
        }
    })
}

impl PySurvey {
    pub(crate) fn new(
        py: Python<'_>,
        survey: &EngineSurvey,
        decl: Option<&StreamDecl>,
    ) -> PyResult<Self> {
        let fields = PyDict::new(py);
        for buckets in &survey.fields {
            let kind = decl
                .and_then(|d| d.fields.iter().find(|f| f.name == buckets.field))
                .map_or(FieldKind::F64, |f| f.kind);
            let b: &[Bucket] = &buckets.buckets;
            let arrays = PyDict::new(py);
            arrays.set_item(
                "first",
                values_array(py, &buckets.field, kind, b.iter().map(|b| b.first.value))?,
            )?;
            arrays.set_item(
                "first_axis",
                PyArray1::from_iter(py, b.iter().map(|b| b.first.axis)),
            )?;
            arrays.set_item(
                "last",
                values_array(py, &buckets.field, kind, b.iter().map(|b| b.last.value))?,
            )?;
            arrays.set_item(
                "last_axis",
                PyArray1::from_iter(py, b.iter().map(|b| b.last.axis)),
            )?;
            arrays.set_item(
                "min",
                values_array(py, &buckets.field, kind, b.iter().map(|b| b.min.value))?,
            )?;
            arrays.set_item(
                "min_axis",
                PyArray1::from_iter(py, b.iter().map(|b| b.min.axis)),
            )?;
            arrays.set_item(
                "max",
                values_array(py, &buckets.field, kind, b.iter().map(|b| b.max.value))?,
            )?;
            arrays.set_item(
                "max_axis",
                PyArray1::from_iter(py, b.iter().map(|b| b.max.axis)),
            )?;
            arrays.set_item("count", PyArray1::from_iter(py, b.iter().map(|b| b.count)))?;
            arrays.set_item("sum", PyArray1::from_iter(py, b.iter().map(|b| b.sum)))?;
            arrays.set_item(
                "sum_sq",
                PyArray1::from_iter(py, b.iter().map(|b| b.sum_sq)),
            )?;
            arrays.set_item(
                "mean",
                PyArray1::from_iter(py, b.iter().map(|b| b.sum / b.count as f64)),
            )?;
            fields.set_item(&buckets.field, arrays)?;
        }
        Ok(PySurvey {
            level: survey.level,
            group: survey.group,
            span: survey.span.map(|[a, b]| (a, b)),
            fields: fields.unbind(),
        })
    }
}

#[pymethods]
impl PySurvey {
    /// One field's arrays.
    fn __getitem__<'py>(&self, py: Python<'py>, field: &str) -> PyResult<Bound<'py, PyAny>> {
        self.fields
            .bind(py)
            .get_item(field)?
            .ok_or_else(|| pyo3::exceptions::PyKeyError::new_err(field.to_owned()))
    }

    /// How many buckets answer: the most any field has (a field has no bucket where it holds
    /// no present value, and so may have fewer).
    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        let mut most = 0;
        for arrays in self.fields.bind(py).values().iter() {
            most = most.max(arrays.get_item("count")?.len()?);
        }
        Ok(most)
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!(
            "strata.Survey(level={}, group={}, span={}, buckets={})",
            self.level,
            self.group,
            self.span
                .map_or_else(|| "None".to_owned(), |(a, b)| format!("({a}, {b})")),
            self.__len__(py)?
        ))
    }
}
