//! The Arrow bridge in Python: a dataset as an Arrow C stream (the PyCapsule protocol
//! `__arrow_c_stream__`), which pyarrow, Polars and DuckDB import without copying the
//! batches.
//!
//! The other way, `write_arrow` takes any object with `__arrow_c_stream__` and writes its
//! rows with reel's writers.
//!
//! Everything here adapts: the batches come from `reel_arrow::SourceBatchReader`, and go to
//! the writers through `reel::convert::convert_batches`.

use std::ffi::CStr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyCapsuleMethods, PyDict};
use reel::RecordSource;
use reel::arrow::arrow_array::ffi::{FFI_ArrowArray, FFI_ArrowSchema};
use reel::arrow::arrow_array::ffi_stream::{FFI_ArrowArrayStream, RecordBatchStreamReader};
use reel::arrow::arrow_array::{Array, RecordBatch, StructArray};
use reel::arrow::arrow_schema::{Schema, SchemaRef};
use reel::arrow::{ArrowOptions, ExtraColumns, SourceBatchReader, into_ffi_stream};

use crate::dataset::Bounds;
use crate::errors::IntoPyResult;
use crate::fspath::fs_path;

/// The capsule names the Arrow PyCapsule interface fixes.
const STREAM_CAPSULE: &CStr = c"arrow_array_stream";
const SCHEMA_CAPSULE: &CStr = c"arrow_schema";
const ARRAY_CAPSULE: &CStr = c"arrow_array";

/// What to read as Arrow: which records, which columns, how batches are cut.
pub(crate) struct StreamArgs<'a, 'py> {
    pub(crate) start: Option<u64>,
    pub(crate) stop: Option<u64>,
    pub(crate) indices: Option<&'a Bound<'py, PyAny>>,
    pub(crate) columns: Option<Vec<String>>,
    pub(crate) batch_rows: usize,
    pub(crate) batch_bytes: usize,
    pub(crate) large_types: bool,
    pub(crate) schema: Option<&'a Bound<'py, PyAny>>,
    pub(crate) with_index: bool,
    pub(crate) with_location: bool,
    pub(crate) sample_records: usize,
}

/// The Arrow schema of an object with `__arrow_c_schema__` (a `pyarrow.Schema`, or a
/// capsule named "arrow_schema" itself).
pub(crate) fn schema_of(obj: &Bound<'_, PyAny>) -> PyResult<SchemaRef> {
    let capsule = if obj.hasattr("__arrow_c_schema__")? {
        obj.call_method0("__arrow_c_schema__")?
    } else {
        obj.clone()
    };
    let capsule = capsule.cast_into::<PyCapsule>().map_err(|_| {
        PyTypeError::new_err("schema must be an Arrow schema (an object with __arrow_c_schema__)")
    })?;
    let ptr = capsule.pointer_checked(Some(SCHEMA_CAPSULE))?;
    // SAFETY: the capsule is named "arrow_schema", which the Arrow PyCapsule interface
    // reserves for a pointer to a valid `ArrowSchema` owned by the capsule; it stays alive
    // while `capsule` is borrowed here, and `Schema::try_from` only reads it (copying what
    // it needs), so the producer's release callback still runs exactly once, on the capsule.
    let ffi = unsafe { ptr.cast::<FFI_ArrowSchema>().as_ref() };
    let schema = Schema::try_from(ffi)
        .map_err(|e| PyValueError::new_err(format!("cannot read the Arrow schema: {e}")))?;
    Ok(Arc::new(schema))
}

/// A batch reader over `source` as `args` say; reading starts when it is consumed, with
/// the schema inferred (or given) here.
pub(crate) fn batch_reader(
    py: Python<'_>,
    source: Arc<dyn RecordSource>,
    bounds: &Bounds<'_>,
    args: StreamArgs<'_, '_>,
) -> PyResult<SourceBatchReader<Arc<dyn RecordSource>>> {
    let options = ArrowOptions {
        sample_records: args.sample_records,
        schema: args.schema.map(schema_of).transpose()?,
        columns: args.columns,
        large_types: args.large_types,
        extra: ExtraColumns { index: args.with_index, location: args.with_location },
        batch_rows: args.batch_rows,
        batch_bytes: args.batch_bytes,
        ..ArrowOptions::default()
    };
    let len = source.len();
    if let Some(indices) = args.indices {
        if args.start.is_some() || args.stop.is_some() {
            return Err(PyValueError::new_err("give indices or start/stop, not both"));
        }
        let indices = crate::dataset::indices_of(indices, bounds)?;
        return crate::shutdown::detach(py, || {
            SourceBatchReader::with_indices(source, indices, &options)
        })
        .py_err(py);
    }
    let stop = args.stop.unwrap_or(len).min(len);
    let start = args.start.unwrap_or(0).min(stop);
    crate::shutdown::detach(py, || SourceBatchReader::with_range(source, start..stop, &options))
        .py_err(py)
}

/// A capsule "arrow_array_stream" holding `reader` as a C stream. A consumer moves the
/// stream out (marking the capsule's copy released); a capsule never consumed releases it
/// when collected (the stream's `Drop`).
pub(crate) fn stream_capsule<'py>(
    py: Python<'py>,
    reader: impl reel::arrow::arrow_array::RecordBatchReader + Send + 'static,
) -> PyResult<Bound<'py, PyCapsule>> {
    let stream: FFI_ArrowArrayStream = into_ffi_stream(reader);
    PyCapsule::new(py, stream, Some(STREAM_CAPSULE.to_owned()))
}

/// A batch reader whose first batch was read already (to see that a requested schema fits
/// the records before the stream is handed over), then the rest of the reader's.
pub(crate) struct Primed {
    first: Option<RecordBatch>,
    rest: SourceBatchReader<Arc<dyn RecordSource>>,
}

impl Primed {
    /// Reads `reader`'s first batch (with the GIL released); its error if that fails.
    pub(crate) fn new(
        py: Python<'_>,
        mut reader: SourceBatchReader<Arc<dyn RecordSource>>,
    ) -> reel::Result<Self> {
        let first = crate::shutdown::detach(py, || reader.next_batch())?;
        Ok(Primed { first, rest: reader })
    }
}

impl Iterator for Primed {
    type Item = Result<RecordBatch, reel::arrow::arrow_schema::ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        match self.first.take() {
            Some(batch) => Some(Ok(batch)),
            None => self.rest.next(),
        }
    }
}

impl reel::arrow::arrow_array::RecordBatchReader for Primed {
    fn schema(&self) -> SchemaRef {
        reel::arrow::arrow_array::RecordBatchReader::schema(&self.rest)
    }
}

/// An Arrow stream of a dataset's records, read when consumed (once): hand it to
/// `pyarrow.table`, `pyarrow.RecordBatchReader.from_stream`, `polars.from_arrow` or DuckDB.
/// `Dataset.arrow_stream(...)` makes one.
#[pyclass(frozen, module = "reel._reel")]
pub struct ArrowStream {
    reader: Mutex<Option<SourceBatchReader<Arc<dyn RecordSource>>>>,
    schema: SchemaRef,
}

impl ArrowStream {
    pub(crate) fn new(reader: SourceBatchReader<Arc<dyn RecordSource>>) -> Self {
        let schema = reader.schema();
        ArrowStream { reader: Mutex::new(Some(reader)), schema }
    }
}

#[pymethods]
impl ArrowStream {
    /// The Arrow PyCapsule stream protocol. A `requested_schema` is ignored (the protocol
    /// lets a producer keep its own); give a schema to `Dataset.arrow_stream` instead.
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = requested_schema;
        // The lock is taken with the GIL released: a thread reading a batch holds it
        // while it waits for the GIL (see `__next__`).
        let reader = crate::shutdown::detach(py, || {
            self.reader.lock().unwrap_or_else(|p| p.into_inner()).take()
        });
        let reader = reader.ok_or_else(|| {
            crate::errors::to_py(
                py,
                reel::Error::new(
                    reel::ErrorKind::Closed,
                    "this Arrow stream was already consumed; ask the dataset for a new one",
                ),
            )
        })?;
        stream_capsule(py, reader)
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    /// The next batch as a `pyarrow.RecordBatch` (pyarrow imported on call). Unlike the C
    /// stream, whose consumers see a failed read as their own error type with reel's text,
    /// a failed read raises reel's own exception here (kind, path, record, offset).
    ///
    /// Threads may share the stream: each batch goes to one of them. The stream's lock is
    /// taken with the GIL released, since the thread holding it takes the GIL back at the
    /// end of its read (taking the lock while holding the GIL deadlocked two threads).
    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let batch = crate::shutdown::detach(py, || {
            let mut guard = self.reader.lock().unwrap_or_else(|p| p.into_inner());
            match guard.as_mut() {
                Some(reader) => reader.next_batch(),
                None => Err(reel::Error::new(
                    reel::ErrorKind::Closed,
                    "this Arrow stream was already consumed; ask the dataset for a new one",
                )),
            }
        })
        .py_err(py)?;
        match batch {
            Some(batch) => pyarrow_batch(py, &batch).map(Some),
            None => Ok(None),
        }
    }

    /// The schema of the batches, as a capsule "arrow_schema" (`pyarrow.schema(stream)`).
    fn __arrow_c_schema__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyCapsule>> {
        let ffi = FFI_ArrowSchema::try_from(self.schema.as_ref())
            .map_err(|e| PyValueError::new_err(format!("cannot export the schema: {e}")))?;
        PyCapsule::new(py, ffi, Some(SCHEMA_CAPSULE.to_owned()))
    }

    fn __repr__(&self) -> String {
        let names: Vec<&str> = self.schema.fields().iter().map(|f| f.name().as_str()).collect();
        format!("<reel.ArrowStream columns=[{}]>", names.join(", "))
    }
}

/// `batch` as a `pyarrow.RecordBatch`, through the Arrow C data interface (the buffers are
/// shared, not copied). The schema goes over whole, so its metadata and the fields'
/// (extension types) arrive with the columns.
fn pyarrow_batch<'py>(py: Python<'py>, batch: &RecordBatch) -> PyResult<Bound<'py, PyAny>> {
    let schema = FFI_ArrowSchema::try_from(batch.schema().as_ref())
        .map_err(|e| PyValueError::new_err(format!("cannot export the schema: {e}")))?;
    let array = FFI_ArrowArray::new(&StructArray::from(batch.clone()).into_data());
    let schema = PyCapsule::new(py, schema, Some(SCHEMA_CAPSULE.to_owned()))?;
    let array = PyCapsule::new(py, array, Some(ARRAY_CAPSULE.to_owned()))?;
    py.import("pyarrow")?
        .getattr("RecordBatch")?
        .call_method1("_import_from_c_capsule", (schema, array))
}

/// Takes the Arrow C stream out of `data` (anything with `__arrow_c_stream__`, or a capsule
/// "arrow_array_stream" itself) as a batch reader; the capsule is left released.
fn stream_of(data: &Bound<'_, PyAny>) -> PyResult<RecordBatchStreamReader> {
    let capsule = if data.hasattr("__arrow_c_stream__")? {
        data.call_method0("__arrow_c_stream__")?
    } else {
        data.clone()
    };
    let capsule = capsule.cast_into::<PyCapsule>().map_err(|_| {
        PyTypeError::new_err(
            "data must be Arrow data: an object with __arrow_c_stream__ (a pyarrow Table or \
             RecordBatchReader, a Polars DataFrame, ...)",
        )
    })?;
    let ptr = capsule.pointer_checked(Some(STREAM_CAPSULE))?;
    // SAFETY: the capsule is named "arrow_array_stream", which the Arrow PyCapsule interface
    // reserves for a pointer to a valid `ArrowArrayStream` owned by the capsule, alive while
    // `capsule` is borrowed here. `from_raw` moves the stream out and leaves a released
    // (empty) one in its place, as the interface asks of a consumer, so the producer's
    // capsule destructor releases nothing twice and the stream is released once, by the
    // reader's `Drop`.
    let reader =
        unsafe { RecordBatchStreamReader::from_raw(ptr.cast::<FFI_ArrowArrayStream>().as_ptr()) };
    reader.map_err(|e| PyValueError::new_err(format!("cannot read the Arrow stream: {e}")))
}

/// Writes the rows of `data` (a pyarrow Table or RecordBatchReader, a Polars DataFrame,
/// anything with `__arrow_c_stream__`) as a new `format` dataset at `path`, with reel's
/// writers: each row a record, each column a field, under the rules of converting a
/// Parquet file (losses stated in the result, impossible mappings refused naming the
/// field, before anything appears at `path`). The stream is read once, one batch at a
/// time, with the GIL released. For Granular and bags, a null cell is written as null,
/// which a column holds only as `msgpack`: name such columns in `nullable` (a column whose
/// first value is null gets it anyway). Returns a dict as `convert` does.
#[pyfunction]
#[pyo3(signature = (data, path, *, format, overwrite=false, lossless_only=false, nullable=None))]
pub(crate) fn write_arrow<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    #[pyo3(from_py_with = fs_path)] path: PathBuf,
    format: &str,
    overwrite: bool,
    lossless_only: bool,
    nullable: Option<Vec<String>>,
) -> PyResult<Bound<'py, PyDict>> {
    let format = crate::writer::format_named(format).py_err(py)?;
    let reader = stream_of(data)?;
    let mut options = reel::ConvertOptions::new(format).overwrite(overwrite);
    options.lossless_only = lossless_only;
    options.nullable = nullable.unwrap_or_default();
    let report =
        crate::shutdown::detach(py, || reel::convert::convert_batches(reader, &path, &options))
            .py_err(py)?;
    crate::writer::report_dict(py, &report)
}
