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

/// A numeric column's values, and its null mask if it holds a null, gathered from its chunks:
/// the copy a numpy array of it needs, made with the GIL released ([`gather`]) so that two
/// Python threads' reads copy at once; wrapped under the GIL without another copy.
pub(crate) enum Gathered {
    U64(Vec<u64>, Option<Vec<bool>>),
    I64(Vec<i64>, Option<Vec<bool>>),
    F64(Vec<f64>, Option<Vec<bool>>),
}

/// The values of a column of `data_type` in `chunks`, if it is a numeric one (`None` for the
/// rest: times, labels, text, which `column_to_numpy` builds under the GIL).
pub(crate) fn gather(data_type: &DataType, chunks: &[&dyn Array]) -> Option<Gathered> {
    use engine_arrow::types::{Float64Type, Int64Type, UInt64Type};
    fn values<T: engine_arrow::ArrowPrimitiveType>(chunks: &[&dyn Array]) -> Vec<T::Native> {
        let mut all = Vec::with_capacity(chunks.iter().map(|c| c.len()).sum());
        for chunk in chunks {
            all.extend_from_slice(chunk.as_primitive::<T>().values());
        }
        all
    }
    fn mask(chunks: &[&dyn Array]) -> Option<Vec<bool>> {
        if chunks.iter().all(|c| c.null_count() == 0) {
            return None;
        }
        let mut mask = Vec::with_capacity(chunks.iter().map(|c| c.len()).sum());
        for chunk in chunks {
            mask.extend((0..chunk.len()).map(|idx| chunk.is_null(idx)));
        }
        Some(mask)
    }
    Some(match data_type {
        DataType::UInt64 => Gathered::U64(values::<UInt64Type>(chunks), mask(chunks)),
        DataType::Int64 => Gathered::I64(values::<Int64Type>(chunks), mask(chunks)),
        DataType::Float64 => Gathered::F64(values::<Float64Type>(chunks), mask(chunks)),
        _ => return None,
    })
}

impl Gathered {
    /// The numpy array of the values, moved into it (no copy); with nulls, a masked array: a
    /// null row masked (the value beneath is the engine's placeholder, never data), NaN
    /// unmasked.
    pub(crate) fn into_numpy(self, py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
        fn wrap<T: Element>(
            py: Python<'_>,
            values: Vec<T>,
            mask: Option<Vec<bool>>,
        ) -> PyResult<Bound<'_, PyAny>> {
            let values = PyArray1::from_vec(py, values).into_any();
            let Some(mask) = mask else {
                return Ok(values);
            };
            let kwargs = PyDict::new(py);
            kwargs.set_item("mask", PyArray1::from_vec(py, mask))?;
            py.import("numpy")?
                .getattr("ma")?
                .call_method("masked_array", (values,), Some(&kwargs))
        }
        match self {
            Gathered::U64(values, mask) => wrap(py, values, mask),
            Gathered::I64(values, mask) => wrap(py, values, mask),
            Gathered::F64(values, mask) => wrap(py, values, mask),
        }
    }
}

/// The concatenation of one column's chunks as a numpy array.
pub(crate) fn column_to_numpy<'py>(
    py: Python<'py>,
    data_type: &DataType,
    chunks: &[&dyn Array],
) -> PyResult<Bound<'py, PyAny>> {
    if let Some(gathered) = gather(data_type, chunks) {
        return gathered.into_numpy(py);
    }
    Ok(match data_type {
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

/// One field's values as one numpy kind: what a survey's `first`, `last`, `min` and `max` are.
enum NumValues {
    U64(Vec<u64>),
    I64(Vec<i64>),
    F64(Vec<f64>),
}

impl NumValues {
    /// `values` of field `field`, declared `kind`; a value of another kind is refused, naming
    /// the field.
    fn of(field: &str, kind: FieldKind, values: impl Iterator<Item = Num>) -> Result<Self, String> {
        let other = |v: Num| {
            format!(
                "field {field:?} ({kind}) answered a value of kind {:?}",
                v.kind()
            )
        };
        Ok(match kind {
            FieldKind::U64 => NumValues::U64(
                values
                    .map(|v| {
                        if let Num::U64(x) = v {
                            Ok(x)
                        } else {
                            Err(other(v))
                        }
                    })
                    .collect::<Result<_, _>>()?,
            ),
            FieldKind::I64 => NumValues::I64(
                values
                    .map(|v| {
                        if let Num::I64(x) = v {
                            Ok(x)
                        } else {
                            Err(other(v))
                        }
                    })
                    .collect::<Result<_, _>>()?,
            ),
            _ => NumValues::F64(
                values
                    .map(|v| {
                        if let Num::F64(x) = v {
                            Ok(x)
                        } else {
                            Err(other(v))
                        }
                    })
                    .collect::<Result<_, _>>()?,
            ),
        })
    }

    fn into_numpy(self, py: Python<'_>) -> Bound<'_, PyAny> {
        match self {
            NumValues::U64(values) => PyArray1::from_vec(py, values).into_any(),
            NumValues::I64(values) => PyArray1::from_vec(py, values).into_any(),
            NumValues::F64(values) => PyArray1::from_vec(py, values).into_any(),
        }
    }
}

/// A survey's arrays, built from its buckets with the GIL released ([`SurveyArrays::of`]) so
/// that two Python threads' surveys copy at once (#49), and moved into numpy under it
/// ([`PySurvey::new`]) without another copy.
pub(crate) struct SurveyArrays {
    level: u8,
    group: u128,
    span: Option<(u64, u64)>,
    fields: Vec<FieldArrays>,
}

struct FieldArrays {
    field: String,
    values: [(&'static str, NumValues); 4],
    axes: [(&'static str, Vec<u64>); 4],
    count: Vec<u64>,
    sums: [(&'static str, Vec<f64>); 3],
}

impl SurveyArrays {
    /// The arrays of `survey`, each field's values as its declaration (`decl`) says.
    pub(crate) fn of(survey: &EngineSurvey, decl: Option<&StreamDecl>) -> Result<Self, String> {
        let fields = survey
            .fields
            .iter()
            .map(|buckets| {
                let kind = decl
                    .and_then(|d| d.fields.iter().find(|f| f.name == buckets.field))
                    .map_or(FieldKind::F64, |f| f.kind);
                let b: &[Bucket] = &buckets.buckets;
                let field = &buckets.field;
                Ok(FieldArrays {
                    field: field.clone(),
                    values: [
                        (
                            "first",
                            NumValues::of(field, kind, b.iter().map(|b| b.first.value))?,
                        ),
                        (
                            "last",
                            NumValues::of(field, kind, b.iter().map(|b| b.last.value))?,
                        ),
                        (
                            "min",
                            NumValues::of(field, kind, b.iter().map(|b| b.min.value))?,
                        ),
                        (
                            "max",
                            NumValues::of(field, kind, b.iter().map(|b| b.max.value))?,
                        ),
                    ],
                    axes: [
                        ("first_axis", b.iter().map(|b| b.first.axis).collect()),
                        ("last_axis", b.iter().map(|b| b.last.axis).collect()),
                        ("min_axis", b.iter().map(|b| b.min.axis).collect()),
                        ("max_axis", b.iter().map(|b| b.max.axis).collect()),
                    ],
                    count: b.iter().map(|b| b.count).collect(),
                    sums: [
                        ("sum", b.iter().map(|b| b.sum).collect()),
                        ("sum_sq", b.iter().map(|b| b.sum_sq).collect()),
                        ("mean", b.iter().map(|b| b.sum / b.count as f64).collect()),
                    ],
                })
            })
            .collect::<Result<_, String>>()?;
        Ok(SurveyArrays {
            level: survey.level,
            group: survey.group,
            span: survey.span.map(|[a, b]| (a, b)),
            fields,
        })
    }
}

impl PySurvey {
    /// The survey whose arrays are `arrays`, each moved into a numpy array.
    pub(crate) fn new(py: Python<'_>, arrays: SurveyArrays) -> PyResult<Self> {
        let fields = PyDict::new(py);
        for field in arrays.fields {
            let out = PyDict::new(py);
            // In the order the docs list them: each value beside where it occurred.
            for ((name, values), (axis_name, axes)) in field.values.into_iter().zip(field.axes) {
                out.set_item(name, values.into_numpy(py))?;
                out.set_item(axis_name, PyArray1::from_vec(py, axes))?;
            }
            out.set_item("count", PyArray1::from_vec(py, field.count))?;
            for (name, sums) in field.sums {
                out.set_item(name, PyArray1::from_vec(py, sums))?;
            }
            fields.set_item(&field.field, out)?;
        }
        Ok(PySurvey {
            level: arrays.level,
            group: arrays.group,
            span: arrays.span,
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
