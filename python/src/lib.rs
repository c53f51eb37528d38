//! strata's Python face: the extension module `strata._strata`, which the package `strata`
//! (python/pysrc/strata) re-exports. A thin layer over the facade: numpy arrays and Arrow arrays
//! go in as slices (no Python object per value), answers come out as numpy arrays and pyarrow
//! tables, and the GIL is released while the engine works (seal, compact, trim, retire, query,
//! survey, fold, open).
//!
//! Reads run on a `strata::View` of the store, taken as the read starts and read with the GIL
//! released and no lock held: two Python threads read at once. Writes (publish, seal, compact,
//! trim, retire, refresh) go through the engine's `Store` behind a `Mutex`, one at a time; each
//! lets go of the view reads take before it and takes a new one after it, so a read never
//! answers from before a write that returned. The locks are only ever taken with the GIL
//! released (inside `Python::detach`) or, by `publish`, with the GIL held for a copy that never
//! waits for the GIL, so no thread holds one and waits for the other; `inner` is taken before
//! `current` wherever both are.

mod answers;
mod columns;
mod missing;
mod numbers;
mod times;

use std::ops::Bound as Edge;
use std::sync::{Mutex, MutexGuard};

use arrow_array::{Array, RecordBatch};
use arrow_schema::SchemaRef;
use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyTypeError, PyUnicodeEncodeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple};
use strata::{
    Aggregate, Config, EngineError, Reader, Store as EngineStore, Stream, StreamDecl, View,
};

use crate::answers::{
    Gathered, PyArrowStream, PySurvey, SurveyArrays, column_to_numpy, gather, num_to_py,
};

create_exception!(
    strata,
    StrataError,
    PyException,
    "An error of the engine; its message is the engine's own."
);
create_exception!(
    strata,
    FloorError,
    StrataError,
    "A read reached beneath a floor: the rows there were retired (trim_to, retention)."
);
create_exception!(
    strata,
    UnreadableError,
    StrataError,
    "Bytes on disk failed their check (or a file could not be read): never wrong data."
);
create_exception!(
    strata,
    RefusedError,
    StrataError,
    "A batch or a declaration was refused: nothing of it was kept, and the store is usable."
);
create_exception!(
    strata,
    SelectionError,
    StrataError,
    "A read or a retirement names nothing the store can answer: an unknown stream or track, \
     more labels than the track has fields, a range given backwards, or a retirement of \
     nothing. Nothing was read or changed."
);

/// The engine's error as the Python exception of its kind, carrying the engine's message.
fn engine_error(err: EngineError) -> PyErr {
    let message = err.to_string();
    match err {
        EngineError::Floor { .. } => FloorError::new_err(message),
        EngineError::Unreadable { .. } => UnreadableError::new_err(message),
        EngineError::Refused { .. }
        | EngineError::Declaration { .. }
        | EngineError::StagingFull { .. }
        | EngineError::Trim { .. } => RefusedError::new_err(message),
        EngineError::UnknownStream { .. }
        | EngineError::UnknownTrack { .. }
        | EngineError::TrackDepth { .. }
        | EngineError::InvertedRange { .. }
        | EngineError::RetireNamesNoTrack { .. }
        | EngineError::NothingToRetire { .. } => SelectionError::new_err(message),
        _ => StrataError::new_err(message),
    }
}

/// The config a Python caller may set by keyword: the bounds and sizes an application tunes.
/// Retention, level storage and survey fill are the command line's and Rust's for now.
fn config_of(options: Option<&Bound<'_, PyDict>>) -> PyResult<Config> {
    let mut config = Config::default();
    let Some(options) = options else {
        return Ok(config);
    };
    for (key, value) in options.iter() {
        let key: String = key.extract()?;
        let number = || -> PyResult<usize> {
            value.extract().map_err(|_| {
                PyValueError::new_err(format!(
                    "config {key:?}: {value} is not a count of bytes or items"
                ))
            })
        };
        match key.as_str() {
            "staged_bytes_max" => config.staged_bytes_max = number()?,
            "manifest_rewrite_bytes" => config.manifest_rewrite_bytes = number()? as u64,
            "compact_files_max" => config.compact_files_max = number()?,
            "compact_inputs_min" => config.compact_inputs_min = number()?,
            "compact_inputs_max" => config.compact_inputs_max = number()?,
            "compact_step_bytes_max" => config.compact_step_bytes_max = number()? as u64,
            "open_segments_max" => config.open_segments_max = number()?,
            "decoded_chunks_bytes_max" => config.decoded_chunks_bytes_max = number()?,
            "decoded_cells_bytes_max" => config.decoded_cells_bytes_max = number()?,
            "reader_processes_max" => config.reader_processes_max = number()?,
            "arrow_batch_rows" => config.arrow_batch_rows = number()?,
            "pack_columns" => config.pack_columns = value.extract()?,
            _ => {
                return Err(PyValueError::new_err(format!(
                    "config has no key {key:?} (one of staged_bytes_max manifest_rewrite_bytes \
                     compact_files_max compact_inputs_min compact_inputs_max \
                     compact_step_bytes_max open_segments_max decoded_chunks_bytes_max \
                     decoded_cells_bytes_max reader_processes_max arrow_batch_rows pack_columns)"
                )));
            }
        }
    }
    Ok(config)
}

/// A stream declared as plain Python: `{"name": "capture", "fields": {"run": "str", "t": "u64",
/// "value": "f64"}, "track": ["run"], "axis": "t", "ladder": (1, 4)}`; `fields` may also be a
/// list of `(name, kind)` pairs, and `track`, `axis` and `ladder` may be left out. `"time":
/// "us"` (or `s`, `ms`, `ns`) says the axis is time since the Unix epoch in that unit (#48).
fn decl_of(spec: &Bound<'_, PyAny>) -> PyResult<StreamDecl> {
    let spec = spec.cast::<PyDict>().map_err(|_| {
        PyTypeError::new_err(format!(
            "a stream is declared as a dict (name, fields, and optionally track, axis, ladder), not {}",
            type_name(spec)
        ))
    })?;
    for key in spec.keys() {
        let key: String = key.extract()?;
        if !["name", "fields", "track", "axis", "time", "ladder"].contains(&key.as_str()) {
            return Err(PyValueError::new_err(format!(
                "a stream declaration has no key {key:?} (one of name fields track axis time \
                 ladder)"
            )));
        }
    }
    let name: String = spec
        .get_item("name")?
        .ok_or_else(|| PyValueError::new_err("a stream declaration needs a \"name\""))?
        .extract()?;
    let fields = spec.get_item("fields")?.ok_or_else(|| {
        PyValueError::new_err(format!("stream {name:?}: the declaration needs \"fields\""))
    })?;
    let pairs: Vec<(String, String)> = if let Ok(fields) = fields.cast::<PyDict>() {
        fields
            .iter()
            .map(|(k, v)| Ok((k.extract()?, v.extract()?)))
            .collect::<PyResult<_>>()?
    } else {
        fields.extract().map_err(|_| {
            PyTypeError::new_err(format!(
                "stream {name:?}: \"fields\" is a dict of name to kind, or a list of (name, kind) pairs"
            ))
        })?
    };
    let mut stream = Stream::new(name.clone());
    for (field, kind) in pairs {
        let kind = strata::parse_kind(&kind).ok_or_else(|| {
            RefusedError::new_err(format!(
                "stream {name:?}, field {field:?}: unknown kind {kind:?} (one of u64 i64 f64 str bytes)"
            ))
        })?;
        stream = stream.field(field, kind);
    }
    if let Some(track) = spec.get_item("track")? {
        stream = stream.track(labels(&track)?);
    }
    if let Some(axis) = spec.get_item("axis")?
        && !axis.is_none()
    {
        let axis = axis.extract::<String>()?;
        stream = match spec.get_item("time")?.filter(|time| !time.is_none()) {
            Some(time) => {
                let word: String = time.extract()?;
                let unit = strata::TimeUnit::parse(&word).ok_or_else(|| {
                    PyValueError::new_err(format!(
                        "stream {name:?}: unknown time unit {word:?} (one of s ms us ns)"
                    ))
                })?;
                stream.time_axis(axis, unit)
            }
            None => stream.axis(axis),
        };
    } else if spec.get_item("time")?.is_some_and(|time| !time.is_none()) {
        return Err(PyValueError::new_err(format!(
            "stream {name:?}: \"time\" says what the axis counts, and no \"axis\" is declared"
        )));
    }
    if let Some(ladder) = spec.get_item("ladder")?
        && !ladder.is_none()
    {
        let (base, fanout): (u64, u64) = ladder.extract().map_err(|_| {
            PyTypeError::new_err(format!(
                "stream {name:?}: \"ladder\" is (base, fanout), two positive integers"
            ))
        })?;
        stream = stream.ladder(base, fanout);
    }
    stream.build().map_err(engine_error)
}

/// A declaration back as the plain Python it is declared in.
fn decl_to_py<'py>(py: Python<'py>, decl: &StreamDecl) -> PyResult<Bound<'py, PyDict>> {
    let spec = PyDict::new(py);
    spec.set_item("name", &decl.id)?;
    let fields = PyDict::new(py);
    for field in &decl.fields {
        fields.set_item(&field.name, field.kind.to_string())?;
    }
    spec.set_item("fields", fields)?;
    let track: Vec<&str> = decl
        .track
        .iter()
        .map(|&f| decl.fields[usize::from(f)].name.as_str())
        .collect();
    spec.set_item("track", track)?;
    spec.set_item(
        "axis",
        decl.axis.map(|f| decl.fields[usize::from(f)].name.clone()),
    )?;
    if let Some(unit) = decl.time {
        spec.set_item("time", unit.name())?;
    }
    spec.set_item("ladder", (decl.ladder.base, decl.ladder.fanout))?;
    Ok(spec)
}

fn type_name(value: &Bound<'_, PyAny>) -> String {
    value
        .get_type()
        .name()
        .map_or_else(|_| "?".to_owned(), |n| n.to_string())
}

/// Why `text` is a Python `str` that is not valid UTF-8, or `None` if it is valid or not a
/// `str`. Python strings may hold lone surrogates (U+D800 to U+DFFF, from `surrogateescape`
/// or a half of a UTF-16 pair); they are the only code points UTF-8 cannot encode.
pub(crate) fn not_utf8(text: &Bound<'_, PyAny>) -> PyResult<Option<String>> {
    let py = text.py();
    if text.cast::<PyString>().is_err() {
        return Ok(None);
    }
    let Err(err) = text.call_method1("encode", ("utf-8",)) else {
        return Ok(None);
    };
    if !err.is_instance_of::<PyUnicodeEncodeError>(py) {
        return Err(err);
    }
    let at: usize = err.value(py).getattr("start")?.extract()?;
    let ord = py.import("builtins")?.getattr("ord")?;
    let point: u32 = ord.call1((text.get_item(at)?,))?.extract()?;
    Ok(Some(format!(
        "a lone surrogate, U+{point:04X}, at index {at}"
    )))
}

/// One track label given as a `str`, refused by what is wrong with it if it is not UTF-8.
fn label(text: &Bound<'_, PyString>) -> PyResult<String> {
    text.extract::<String>()
        .or_else(|err| match not_utf8(text)? {
            Some(why) => Err(PyValueError::new_err(format!(
                "a track label is a str that is not valid UTF-8: {why}"
            ))),
            None => Err(err),
        })
}

/// A track (or a list of field names): one label as a `str`, or a sequence of them; integers
/// are taken as their decimal labels (a `u64` track field's label).
fn labels(value: &Bound<'_, PyAny>) -> PyResult<Vec<String>> {
    if value.is_none() {
        return Ok(Vec::new());
    }
    if let Ok(one) = value.cast::<PyString>() {
        return Ok(vec![label(one)?]);
    }
    if value.cast::<PyBytes>().is_ok() {
        return Err(PyTypeError::new_err(
            "a track label is a str, not bytes (decode it first)",
        ));
    }
    let mut out = Vec::new();
    for item in value.try_iter().map_err(|_| {
        PyTypeError::new_err(format!(
            "a track is a label or a sequence of labels, not {}",
            type_name(value)
        ))
    })? {
        let item = item?;
        if let Ok(text) = item.cast::<PyString>() {
            out.push(label(text)?);
        } else if let Ok(number) = item.extract::<u64>() {
            out.push(number.to_string());
        } else {
            return Err(PyTypeError::new_err(format!(
                "a track label is a str (or a non-negative int), not {}",
                type_name(&item)
            )));
        }
    }
    Ok(out)
}

/// An inclusive range from optional ends, as the engine's reads take it.
fn range(start: Option<u64>, end: Option<u64>) -> (Edge<u64>, Edge<u64>) {
    (
        start.map_or(Edge::Unbounded, Edge::Included),
        end.map_or(Edge::Unbounded, Edge::Included),
    )
}

/// A store of strata, opened from Python. See the package's docstrings (`help(strata.Store)`).
#[pyclass(module = "strata._strata", name = "Store")]
struct PyStore {
    /// `None` once closed.
    inner: Mutex<Option<Opening>>,
    /// The view reads take, as of the last write; `None` before the first read, while a write
    /// runs, and once closed (a read that finds none takes one from `inner`).
    current: Mutex<Option<View>>,
    /// Where it lives, for messages and `repr`.
    path: String,
}

/// What a Python store holds: the engine's writer, or a store it opened to read (which has no
/// write half: a write on it is refused here, by name, as the engine's `ReadOnly`).
enum Opening {
    Writer(Box<EngineStore>),
    Reader(Box<Reader>),
}

impl Opening {
    fn view(&self) -> View {
        match self {
            Opening::Writer(store) => store.view(),
            Opening::Reader(reader) => reader.view(),
        }
    }
}

fn closed(path: &str) -> PyErr {
    StrataError::new_err(format!("the store at {path} is closed"))
}

impl PyStore {
    fn new(store: Opening, path: String) -> PyStore {
        PyStore {
            inner: Mutex::new(Some(store)),
            current: Mutex::new(None),
            path,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Option<Opening>> {
        // A panic inside the engine while locked leaves the store as it was left: the engine's
        // own poisoning (a failed barrier) refuses what must be refused.
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn current(&self) -> MutexGuard<'_, Option<View>> {
        self.current
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Runs `f` on the store with the GIL released: the writer's `write` on a writer, the
    /// reader's `read` on a store opened to read. Reads wait for it only if they start while it
    /// runs and find no view.
    fn with<T: Send>(
        &self,
        py: Python<'_>,
        write: impl FnOnce(&mut EngineStore) -> Result<T, EngineError> + Send,
        read: impl FnOnce(&mut Reader) -> Result<T, EngineError> + Send,
    ) -> PyResult<T> {
        py.detach(|| {
            let mut guard = self.lock();
            let store = guard.as_mut().ok_or_else(|| closed(&self.path))?;
            // Let go first: a view pinned at the version before would hold back the removal
            // of files the write retires.
            *self.current() = None;
            let answer = match store {
                Opening::Writer(writer) => write(writer),
                Opening::Reader(reader) => read(reader),
            }
            .map_err(engine_error);
            *self.current() = Some(store.view());
            answer
        })
    }

    /// Runs the write `f` on the writer ([`PyStore::with`]); refused on a store opened to read,
    /// naming `operation`.
    fn write<T: Send>(
        &self,
        py: Python<'_>,
        operation: &'static str,
        f: impl FnOnce(&mut EngineStore) -> Result<T, EngineError> + Send,
    ) -> PyResult<T> {
        self.with(py, f, |_| Err(read_only(&self.path, operation)))
    }

    /// Runs the read `f` on a view of the store with the GIL released, holding no lock while
    /// it runs.
    fn read<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&View) -> Result<T, EngineError> + Send,
    ) -> PyResult<T> {
        py.detach(|| {
            let cached = self.current().clone();
            let view = if let Some(view) = cached {
                view
            } else {
                let guard = self.lock();
                let store = guard.as_ref().ok_or_else(|| closed(&self.path))?;
                let view = store.view();
                *self.current() = Some(view.clone());
                view
            };
            f(&view).map_err(engine_error)
        })
    }

    /// A query's Arrow batches (`Store::query_arrow`), built with the GIL released.
    fn batches(
        &self,
        py: Python<'_>,
        stream: &str,
        track: Option<&Bound<'_, PyAny>>,
        start: Option<u64>,
        end: Option<u64>,
    ) -> PyResult<(Vec<RecordBatch>, SchemaRef)> {
        let track = track.map(labels).transpose()?.unwrap_or_default();
        self.read(py, |store| {
            let selection: Vec<&str> = track.iter().map(String::as_str).collect();
            let batches = store.query_arrow(stream, &selection, range(start, end))?;
            let schema = batches.schema();
            let batches = batches.collect::<Result<Vec<RecordBatch>, _>>()?;
            let decl = store.declaration(stream)?.clone();
            Ok((batches, schema, decl))
        })
        .and_then(|(batches, schema, decl)| times::timestamped(&decl, batches, schema))
    }

    fn decl(&self, py: Python<'_>, stream: &str) -> PyResult<StreamDecl> {
        self.read(py, |store| store.declaration(stream).cloned())
    }
}

/// The engine's refusal of `operation` on the store at `path`, opened to read.
fn read_only(path: &str, operation: &'static str) -> EngineError {
    EngineError::ReadOnly {
        store: path.to_owned(),
        operation,
    }
}

/// A store opened by `open` (a constructor of the engine's) at `path` with `config`, with the
/// GIL released while it boots.
fn opened(
    py: Python<'_>,
    path: &Bound<'_, PyAny>,
    config: Option<&Bound<'_, PyDict>>,
    open: impl FnOnce(&str, Config) -> Result<Opening, EngineError> + Send,
) -> PyResult<PyStore> {
    let path = path_of(path)?;
    let config = config_of(config)?;
    let store = py.detach(|| open(&path, config)).map_err(engine_error)?;
    Ok(PyStore::new(store, path))
}

fn path_of(path: &Bound<'_, PyAny>) -> PyResult<String> {
    let os = path.py().import("os")?;
    os.call_method1("fspath", (path,))?.extract()
}

fn decls_of(streams: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<StreamDecl>> {
    let Some(streams) = streams else {
        return Ok(Vec::new());
    };
    if streams.is_none() {
        return Ok(Vec::new());
    }
    if streams.cast::<PyDict>().is_ok() {
        return Ok(vec![decl_of(streams)?]);
    }
    streams
        .try_iter()?
        .map(|spec| decl_of(&spec?))
        .collect::<PyResult<_>>()
}

#[pymethods]
impl PyStore {
    /// Creates a store in folder `path` (missing or empty) with `streams` declared.
    #[staticmethod]
    #[pyo3(signature = (path, streams, *, config = None))]
    fn create(
        py: Python<'_>,
        path: &Bound<'_, PyAny>,
        streams: &Bound<'_, PyAny>,
        config: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<PyStore> {
        let decls = decls_of(Some(streams))?;
        opened(py, path, config, |path, config| {
            EngineStore::create(path, config, &decls).map(|s| Opening::Writer(Box::new(s)))
        })
    }

    /// Opens the store in folder `path` to read and write; `streams` declares new streams.
    #[staticmethod]
    #[pyo3(signature = (path, streams = None, *, config = None))]
    fn open(
        py: Python<'_>,
        path: &Bound<'_, PyAny>,
        streams: Option<&Bound<'_, PyAny>>,
        config: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<PyStore> {
        let decls = decls_of(streams)?;
        opened(py, path, config, |path, config| {
            EngineStore::open(path, config, &decls).map(|s| Opening::Writer(Box::new(s)))
        })
    }

    /// Opens the store in folder `path` for reading only: nothing on disk is written.
    #[staticmethod]
    #[pyo3(signature = (path, *, config = None))]
    fn open_read_only(
        py: Python<'_>,
        path: &Bound<'_, PyAny>,
        config: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<PyStore> {
        opened(py, path, config, |path, config| {
            EngineStore::open_read_only(path, config, &[]).map(|r| Opening::Reader(Box::new(r)))
        })
    }

    /// Opens a reader beside a writer that may be running in another process.
    #[staticmethod]
    #[pyo3(signature = (path, *, config = None))]
    fn open_reader(
        py: Python<'_>,
        path: &Bound<'_, PyAny>,
        config: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<PyStore> {
        opened(py, path, config, |path, config| {
            EngineStore::open_reader(path, config).map(|r| Opening::Reader(Box::new(r)))
        })
    }

    /// The folder the store lives in.
    #[getter]
    fn path(&self) -> &str {
        &self.path
    }

    /// The declared streams, each as the dict it is declared with.
    fn streams<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let decls: Vec<StreamDecl> =
            self.read(py, |store| Ok(store.streams().cloned().collect()))?;
        let list = PyList::empty(py);
        for decl in &decls {
            list.append(decl_to_py(py, decl)?)?;
        }
        Ok(list)
    }

    /// Stages a batch of rows of `stream` at `position`, for `track`, from `columns`: a dict of
    /// every field but the track's (the axis included) to its values.
    #[pyo3(signature = (stream, position, track, columns))]
    fn publish(
        &self,
        py: Python<'_>,
        stream: &str,
        position: u64,
        track: &Bound<'_, PyAny>,
        columns: &Bound<'_, PyDict>,
    ) -> PyResult<()> {
        let decl = self.decl(py, stream)?;
        let track = labels(track)?;
        let held = columns::gather(py, stream, &decl, columns)?;
        let (strs, bytes) = columns::slices(&held);
        let values = columns::values(&held, &strs, &bytes)?;
        let selection: Vec<&str> = track.iter().map(String::as_str).collect();
        // The GIL stays held: the slices borrow numpy's buffers, which another Python thread
        // could change while the copy into staging runs. The copy is all publish does.
        let mut guard = self.lock();
        match guard.as_mut().ok_or_else(|| closed(&self.path))? {
            Opening::Writer(store) => store
                .publish_columns(stream, position, &selection, &values)
                .map_err(engine_error),
            Opening::Reader(_) => Err(engine_error(read_only(&self.path, "publish_columns"))),
        }
    }

    /// Makes everything staged durable with one barrier; answers each stream's watermark.
    fn seal(&self, py: Python<'_>) -> PyResult<std::collections::BTreeMap<String, Option<u64>>> {
        // On a store opened to read, with nothing staged, a seal writes nothing and answers the
        // watermarks, as it does on any store.
        self.with(py, EngineStore::seal, |reader| {
            reader
                .streams()
                .map(|decl| Ok((decl.id.clone(), reader.watermark(&decl.id, &[])?)))
                .collect()
        })
    }

    /// Compacts until nothing is left to merge; answers how many steps it took.
    fn compact(&self, py: Python<'_>) -> PyResult<usize> {
        self.write(py, "compact", |store| {
            store.compact().map(|steps| steps.len())
        })
    }

    /// Retires every row of `stream` at or below position `horizon`; answers how many
    /// partitions' floors it raised.
    fn trim_to(&self, py: Python<'_>, stream: &str, horizon: u64) -> PyResult<usize> {
        self.write(py, "trim_to", |store| {
            store.trim_to(stream, horizon).map(|t| t.recorded.len())
        })
    }

    /// Retires the partitions of `stream` under `track` (a prefix) wholly; every track only
    /// when asked by name, `all=True` (no track is refused, as the engine refuses it).
    #[pyo3(signature = (stream, track = None, *, all = false))]
    fn retire(
        &self,
        py: Python<'_>,
        stream: &str,
        track: Option<&Bound<'_, PyAny>>,
        all: bool,
    ) -> PyResult<usize> {
        let track = track.map(labels).transpose()?.unwrap_or_default();
        if all && !track.is_empty() {
            return Err(PyValueError::new_err(
                "retire takes a track or all=True, not both",
            ));
        }
        self.write(py, "retire", |store| {
            let selection: Vec<&str> = track.iter().map(String::as_str).collect();
            let swept = if all {
                store.retire_all(stream)
            } else {
                store.retire(stream, &selection)
            };
            swept.map(|s| s.floors.len())
        })
    }

    /// A reader's follow of what the writer has made durable since; answers whether it moved.
    fn refresh(&self, py: Python<'_>) -> PyResult<bool> {
        self.with(
            py,
            |_| Err(read_only(&self.path, "refresh")),
            Reader::refresh,
        )
    }

    /// The position through which `stream` is durable, or `None`. A barrier covers every
    /// partition, so every track shares it: `track` is checked (a bad label, or more labels
    /// than the track has, is refused) and does not narrow it.
    #[pyo3(signature = (stream, track = None))]
    fn watermark(
        &self,
        py: Python<'_>,
        stream: &str,
        track: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Option<u64>> {
        let track = track.map(labels).transpose()?.unwrap_or_default();
        self.read(py, |store| {
            let selection: Vec<&str> = track.iter().map(String::as_str).collect();
            store.watermark(stream, &selection)
        })
    }

    /// Rows of `stream` under `track` (a prefix) with positions in `start..=end`, in publish
    /// order, as a `pyarrow.Table`.
    #[pyo3(signature = (stream, track = None, start = None, end = None))]
    fn query<'py>(
        &self,
        py: Python<'py>,
        stream: &str,
        track: Option<&Bound<'py, PyAny>>,
        start: Option<u64>,
        end: Option<u64>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (batches, schema) = self.batches(py, stream, track, start, end)?;
        // pyarrow takes the rows through the Arrow PyCapsule interface (`__arrow_c_stream__`):
        // the batches move, nothing is copied.
        let stream = Bound::new(py, PyArrowStream::new(batches, schema))?;
        let pyarrow = py.import("pyarrow").map_err(|_| {
            pyo3::exceptions::PyImportError::new_err(
                "Store.query answers a pyarrow Table, and pyarrow is not installed \
                 (pip install pyarrow); query_stream (Polars, DuckDB) and query_numpy need none",
            )
        })?;
        pyarrow.call_method1("table", (stream,))
    }

    /// Rows as `query` reads them, as an object with the Arrow PyCapsule interface
    /// (`__arrow_c_stream__`): for Polars (`polars.DataFrame(…)`), DuckDB, nanoarrow or pyarrow
    /// without going through a pyarrow Table. It hands its rows out as often as it is asked.
    #[pyo3(signature = (stream, track = None, start = None, end = None))]
    fn query_stream(
        &self,
        py: Python<'_>,
        stream: &str,
        track: Option<&Bound<'_, PyAny>>,
        start: Option<u64>,
        end: Option<u64>,
    ) -> PyResult<PyArrowStream> {
        let (batches, schema) = self.batches(py, stream, track, start, end)?;
        Ok(PyArrowStream::new(batches, schema))
    }

    /// Rows of `stream` as `query` reads them, as a dict of column name to numpy array
    /// (numbers without a Python object per value; `str` and `bytes` as object arrays).
    #[pyo3(signature = (stream, track = None, start = None, end = None))]
    fn query_numpy<'py>(
        &self,
        py: Python<'py>,
        stream: &str,
        track: Option<&Bound<'py, PyAny>>,
        start: Option<u64>,
        end: Option<u64>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let (batches, schema) = self.batches(py, stream, track, start, end)?;
        let fields = schema.fields();
        let column = |idx: usize| -> Vec<&dyn Array> {
            batches.iter().map(|b| b.column(idx).as_ref()).collect()
        };
        // The numeric columns' copies made with the GIL released: two threads' reads copy at
        // once (#49).
        let gathered: Vec<Option<Gathered>> = py.detach(|| {
            (0..fields.len())
                .map(|idx| gather(fields[idx].data_type(), &column(idx)))
                .collect()
        });
        let out = PyDict::new(py);
        for ((idx, field), gathered) in fields.iter().enumerate().zip(gathered) {
            let array = match gathered {
                Some(gathered) => gathered.into_numpy(py)?,
                None => column_to_numpy(py, field.data_type(), &column(idx))?,
            };
            out.set_item(field.name(), array)?;
        }
        Ok(out)
    }

    /// A budgeted display read: the finest stored cells of every measured field of `stream`
    /// under `track` over axis `start..=end` that fit `budget` points (4 a bucket).
    #[pyo3(signature = (stream, track = None, start = None, end = None, budget = 4000))]
    fn survey(
        &self,
        py: Python<'_>,
        stream: &str,
        track: Option<&Bound<'_, PyAny>>,
        start: Option<u64>,
        end: Option<u64>,
        budget: u64,
    ) -> PyResult<PySurvey> {
        let track = track.map(labels).transpose()?.unwrap_or_default();
        let arrays = self.read(py, |store| {
            let selection: Vec<&str> = track.iter().map(String::as_str).collect();
            let survey = store.survey(stream, &selection, range(start, end), budget)?;
            // The arrays' copies made here, with the GIL released.
            Ok(SurveyArrays::of(&survey, store.stream(stream)))
        })?;
        PySurvey::new(py, arrays.map_err(StrataError::new_err)?)
    }

    /// One statistic per measured field of `stream` under `track` over axis `start..=end`:
    /// `agg` one of min max mean sum count p0..p100 (nearest-rank; the median is p50).
    #[pyo3(signature = (stream, track = None, start = None, end = None, agg = "mean"))]
    fn fold<'py>(
        &self,
        py: Python<'py>,
        stream: &str,
        track: Option<&Bound<'py, PyAny>>,
        start: Option<u64>,
        end: Option<u64>,
        agg: &str,
    ) -> PyResult<Bound<'py, PyDict>> {
        let aggregate = Aggregate::parse(agg).ok_or_else(|| {
            PyValueError::new_err(format!(
                "unknown aggregate {agg:?}: one of min max mean sum count p0..p100 \
                 (nearest-rank percentiles; the median is p50)"
            ))
        })?;
        let track = track.map(labels).transpose()?.unwrap_or_default();
        let stats = self.read(py, |store| {
            let selection: Vec<&str> = track.iter().map(String::as_str).collect();
            store.fold(stream, &selection, range(start, end), aggregate)
        })?;
        let out = PyDict::new(py);
        for stat in stats {
            out.set_item(
                stat.field,
                stat.value.map(|v| num_to_py(py, v)).transpose()?,
            )?;
        }
        Ok(out)
    }

    /// Closes the store (a writer's lock, a reader's pin); further calls are refused.
    fn close(&self, py: Python<'_>) {
        // Dropping a store lets go of its lock or pin (and may remove a reader's pin file).
        py.detach(|| {
            let store = self.lock().take();
            // The view holds the store's lock too.
            *self.current() = None;
            drop(store);
        });
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, PyTuple>) {
        self.close(py);
    }

    fn __repr__(&self) -> String {
        format!("strata.Store({:?})", self.path)
    }
}

/// The extension module.
#[pymodule]
fn _strata(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_class::<PyStore>()?;
    m.add_class::<PySurvey>()?;
    m.add_class::<PyArrowStream>()?;
    m.add("StrataError", py.get_type::<StrataError>())?;
    m.add("FloorError", py.get_type::<FloorError>())?;
    m.add("UnreadableError", py.get_type::<UnreadableError>())?;
    m.add("RefusedError", py.get_type::<RefusedError>())?;
    m.add("SelectionError", py.get_type::<SelectionError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
