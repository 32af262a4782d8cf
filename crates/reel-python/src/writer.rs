//! Writers, conversion and verification: `reel._reel.Sink`, `convert`, `verify`.

use std::path::PathBuf;
use std::sync::Mutex;

use pyo3::prelude::*;
use pyo3::types::PyDict;
use reel::{ConvertOptions, Error, ErrorKind, FieldSpec, Format, RecordSink};

use crate::args::{Count, count, name, opt, opt_pair};
use crate::dataset::OpenArgs;
use crate::errors::IntoPyResult;
use crate::fspath::{GivenPath, Location, fs_path};
use crate::interrupt::interruptible;
use crate::records::record_from;
use crate::storage::{StorageOptions, create_options, storage_options};

pub(crate) fn format_named(name: &str) -> reel::Result<Format> {
    Format::from_name(name).ok_or_else(|| {
        let known: Vec<_> = Format::enabled().map(Format::name).collect();
        Error::invalid_input(format!("unknown format {name:?} (known: {})", known.join(", ")))
    })
}

/// A dataset being written (the Rust writer of the format, through `reel::create`).
///
/// Nothing appears at the path until `finish()`; `abort()` (or dropping the sink unfinished)
/// removes everything written so far. The Python class `reel.Writer` wraps this one as a
/// context manager.
#[pyclass(frozen, module = "reel._reel")]
pub struct Sink {
    inner: Mutex<Option<Box<dyn RecordSink>>>,
    path: PathBuf,
    format: Format,
}

impl Sink {
    fn closed_error(&self) -> Error {
        Error::new(ErrorKind::Closed, "the writer was already finished or aborted")
            .with_path(&self.path)
            .with_format(self.format.name())
    }
}

/// Refuses a `schema` the writer of `format` would not use as given: formats that take
/// their types from the values written (FFRecord, Syrah, OFRecord, GulpIO2) have none to
/// declare, and a Granular or bags type the target does not know is a mistake (a typo),
/// not a type to choose from the first record as a conversion does.
fn check_schema(format: Format, schema: &[(String, String)]) -> reel::Result<()> {
    use reel::granular::{RefsFlavor, ShardFormat};
    let layout = match format {
        Format::Granular => ShardFormat::Indexed,
        Format::Bags => ShardFormat::Refs(RefsFlavor::Bags051),
        Format::Parquet | Format::ArrowIpc => return Ok(()),
        other => {
            return Err(reel::Error::invalid_input(format!(
                "{} takes its types from the values written: schema= is for Granular and bags \
                 (spec.json types) and Parquet/Arrow",
                other.name()
            )));
        }
    };
    reel::granular::check_declared_types(
        schema.iter().map(|(field, t)| (field.as_str(), t.as_str())),
        layout,
    )
}

#[pymethods]
impl Sink {
    /// A writer of `format` at `path`. `schema` maps field names to the format's type names
    /// where the format declares them (Granular and bags `spec.json` types; Parquet and
    /// Arrow take reel's); other formats refuse it;
    /// `records` is the number of records that will come, when known. With `part=(k, n)`,
    /// `path` is the directory of a multi-part dataset and the writer writes its part `k` of
    /// `n` there (`reel::create_part`, the names `part_names` gives). `part_size`: files of
    /// about that many bytes, OFRecord parts or Granular shards (`CreateOptions::part_size`).
    #[new]
    #[pyo3(signature = (
        path, format, *, schema=None, records=None, overwrite=false, part=None, part_size=None,
        storage_options=Vec::new()
    ))]
    #[allow(clippy::too_many_arguments)] // Python keyword arguments
    fn new(
        py: Python<'_>,
        #[pyo3(from_py_with = fs_path)] path: PathBuf,
        format: &str,
        schema: Option<Vec<(String, String)>>,
        records: Option<Count<u64, name::Records>>,
        overwrite: bool,
        part: Option<(Count<u64, name::Part>, Count<u64, name::Part>)>,
        part_size: Option<Count<u64, name::PartSize>>,
        #[pyo3(from_py_with = storage_options)] storage_options: StorageOptions,
    ) -> PyResult<Self> {
        let (records, part_size) = (opt(records), opt(part_size));
        let part = opt_pair(part);
        let format = format_named(format).py_err(py)?;
        if let Some(schema) = &schema {
            check_schema(format, schema).py_err(py)?;
        }
        let mut options = create_options(overwrite, &storage_options).py_err(py)?.schema(
            schema.map(|s| s.into_iter().map(|(name, kind)| FieldSpec { name, kind }).collect()),
        );
        options.records = records;
        if let Some(bytes) = part_size {
            options = options.part_size(format, bytes).py_err(py)?;
        }
        let sink = crate::shutdown::detach(py, || match part {
            Some((k, n)) => reel::create_part(&path, format, k, n, &options).map(|(s, _)| s),
            None => reel::create(&path, format, &options),
        })
        .py_err(py)?;
        Ok(Sink { inner: Mutex::new(Some(sink)), path, format })
    }

    /// Adds a record (a dict of field name to value) and returns its index.
    fn append(&self, py: Python<'_>, record: &Bound<'_, PyAny>) -> PyResult<u64> {
        let record = record_from(record)?;
        crate::shutdown::detach(py, || {
            let mut guard = self.inner.lock().unwrap_or_else(|p| p.into_inner());
            let sink = guard.as_mut().ok_or_else(|| self.closed_error())?;
            sink.append(record.view())
        })
        .py_err(py)
    }

    /// Makes the dataset durable and visible at its path; returns what was written
    /// (`records`, `bytes`, `paths`). If it fails, nothing is published. A writer refused
    /// for what is missing (`InvalidInput`: fewer records than it was created for, a Syrah
    /// file of no items) stays open, so that the rest can be written and `finish` called
    /// again; after any other failure it is closed.
    fn finish<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let summary = crate::shutdown::detach(py, || {
            let mut guard = self.inner.lock().unwrap_or_else(|p| p.into_inner());
            let sink = guard.as_mut().ok_or_else(|| self.closed_error())?;
            let result = sink.finish();
            if !matches!(&result, Err(e) if e.kind() == ErrorKind::InvalidInput) {
                *guard = None;
            }
            result
        })
        .py_err(py)?;
        summary_dict(py, summary)
    }

    /// Drops everything written so far; the path is left as it was. Idempotent.
    fn abort(&self, py: Python<'_>) {
        crate::shutdown::detach(py, || {
            let mut guard = self.inner.lock().unwrap_or_else(|p| p.into_inner());
            drop(guard.take());
        });
    }

    /// Whether `finish` or `abort` was called.
    #[getter]
    fn closed(&self, py: Python<'_>) -> bool {
        // With the GIL released: a thread appending holds the lock until it has the GIL
        // back.
        crate::shutdown::detach(py, || self.inner.lock().map(|g| g.is_none()).unwrap_or(true))
    }

    /// The path the dataset appears at.
    #[getter]
    fn path(&self) -> GivenPath {
        GivenPath(self.path.clone())
    }

    /// The format's name.
    #[getter]
    fn format(&self) -> &'static str {
        self.format.name()
    }
}

/// Converts the dataset at `src` into a new `to` dataset at `dst`, losslessly where the
/// target can hold the values (what it cannot keep is listed in the result's `losses`; what
/// it cannot hold at all raises `reel.SchemaError` before anything appears at `dst`).
///
/// With `shard=(k, n)`, only records `[k·N/n, (k+1)·N/n)` are converted, as part `k` of a
/// multi-part dataset in the directory `dst` (what `reel convert --shard k/n` writes; `n`
/// processes or Ray tasks convert one dataset at once this way).
///
/// `src` and `dst` may be object URLs (`s3://bucket/key`, `gs://…`, `az://…`, configured from
/// the environment); a URL destination (or, with `shard`, the part) is staged locally and
/// uploaded when complete, the objects that make it openable last. `part_size`: an OFRecord
/// target in part files of at most that many bytes, a Granular or bags target in shards of
/// about that size (other targets raise `ValueError`).
///
/// Returns a dict: `from`, `to`, `records`, `bytes`, `losses` (list of (field, what)),
/// `outputs` (paths written). Ctrl-C stops the conversion at its next batch and raises
/// `KeyboardInterrupt` once what it staged is removed: nothing appears at `dst`.
#[pyfunction]
#[pyo3(signature = (src, dst, *, to, verify=true, overwrite=false, shard=None, part_size=None,
                    storage_options=Vec::new()))]
#[allow(clippy::too_many_arguments)] // Python keyword arguments
pub(crate) fn convert<'py>(
    py: Python<'py>,
    #[pyo3(from_py_with = fs_path)] src: PathBuf,
    #[pyo3(from_py_with = fs_path)] dst: PathBuf,
    to: &str,
    verify: bool,
    overwrite: bool,
    shard: Option<(Count<u64, name::Shard>, Count<u64, name::Shard>)>,
    part_size: Option<Count<u64, name::PartSize>>,
    #[pyo3(from_py_with = storage_options)] storage_options: StorageOptions,
) -> PyResult<Bound<'py, PyDict>> {
    let (shard, part_size) = (opt_pair(shard), opt(part_size));
    let format = format_named(to).py_err(py)?;
    let mut options = ConvertOptions::new(format);
    options.open = options.open.verify(verify);
    options.overwrite = overwrite;
    for (name, value) in &storage_options {
        options.open.storage_option(name, value).py_err(py)?;
        options.output_store.set(name, value).py_err(py)?;
    }
    if let Some((k, n)) = shard {
        options = options.shard(k, n);
    }
    if let Some(bytes) = part_size {
        options = options.part_size(bytes).py_err(py)?;
    }
    let report = interruptible(py, || reel::convert(&src, &dst, &options))?;
    report_dict(py, &report)
}

/// A conversion's report as a dict: `from`, `to`, `records`, `bytes`, `losses` (list of
/// (field, what)), `outputs`.
pub(crate) fn report_dict<'py>(
    py: Python<'py>,
    report: &reel::convert::ConvertReport,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("from", report.from.name())?;
    d.set_item("to", report.to.name())?;
    d.set_item("records", report.records)?;
    d.set_item("bytes", report.bytes)?;
    let losses: Vec<(String, String)> =
        report.losses.iter().map(|l| (l.field.clone(), l.what.clone())).collect();
    d.set_item("losses", losses)?;
    d.set_item("outputs", report.outputs.iter().cloned().map(GivenPath).collect::<Vec<_>>())?;
    Ok(d)
}

/// Checks every record of the dataset at `path` (checksums, structure, the decoding of
/// stored values; images in Granular `jpg`/`png` fields are kept as stored, not decoded, so
/// damaged image bytes pass) and returns a report: `format`, `records`, `good_records`, `bad_records` (the indices that failed),
/// `problems` (dicts with `record`, `path`, `offset`, `kind`, `message`), `opened` (False
/// when the dataset could not even be opened), `warnings` (the opened dataset's warnings,
/// as text: not damage), `checksums` (whether the format stores checksums of record bytes:
/// only FFRecord does; in the others damaged bytes that still decode cannot be found) and
/// `clean`. Ctrl-C stops it at its next
/// batch (`KeyboardInterrupt`).
#[pyfunction]
#[pyo3(signature = (path, *, backend="auto", storage_options=Vec::new()))]
pub(crate) fn verify<'py>(
    py: Python<'py>,
    #[pyo3(from_py_with = fs_path)] path: PathBuf,
    backend: &str,
    #[pyo3(from_py_with = storage_options)] storage_options: StorageOptions,
) -> PyResult<Bound<'py, PyDict>> {
    let args = OpenArgs {
        path: path.clone(),
        format: None,
        backend: backend.to_string(),
        verify: true,
        decode_images: false,
        decode: true,
        cache: None,
        cache_size: None,
        columns: None,
        skip_columns: Vec::new(),
        storage_options,
    };
    let options = args.options().py_err(py)?;
    let report = interruptible(py, || reel::verify(&path, &options))?;
    let d = PyDict::new(py);
    d.set_item("format", report.format.name())?;
    d.set_item("records", report.records)?;
    d.set_item("good_records", report.good_records)?;
    d.set_item("bad_records", report.bad_records())?;
    let problems = pyo3::types::PyList::empty(py);
    for p in &report.problems {
        let pd = PyDict::new(py);
        pd.set_item("record", p.record)?;
        pd.set_item("path", p.path.clone().map(Location))?;
        pd.set_item("offset", p.offset)?;
        pd.set_item("kind", p.kind.as_str())?;
        pd.set_item("message", &p.message)?;
        problems.append(pd)?;
    }
    d.set_item("problems", problems)?;
    d.set_item("opened", report.opened)?;
    let warnings: Vec<&str> = report.warnings.iter().map(|w| w.message.as_str()).collect();
    d.set_item("warnings", warnings)?;
    d.set_item("checksums", report.format.stores_checksums())?;
    d.set_item("clean", report.is_clean())?;
    Ok(d)
}

/// Writes a generated dataset of `format` with `records` records whose content is derived
/// from the record index (payloads up to `max_record` bytes), as `reel generate` does; for
/// tests and benchmarks. Returns the writer's summary (`records`, `bytes`, `paths`). Ctrl-C
/// stops it (`KeyboardInterrupt`), leaving nothing at `path`.
#[pyfunction]
#[pyo3(signature = (path, *, format="ffrecord", records=1000, max_record=4096, overwrite=false,
                    storage_options=Vec::new()))]
pub(crate) fn generate<'py>(
    py: Python<'py>,
    #[pyo3(from_py_with = fs_path)] path: PathBuf,
    format: &str,
    #[pyo3(from_py_with = count::<u64, name::Records>)] records: u64,
    #[pyo3(from_py_with = count::<usize, name::MaxRecord>)] max_record: usize,
    overwrite: bool,
    #[pyo3(from_py_with = storage_options)] storage_options: StorageOptions,
) -> PyResult<Bound<'py, PyDict>> {
    let format = format_named(format).py_err(py)?;
    let options = create_options(overwrite, &storage_options).py_err(py)?;
    let summary = interruptible(py, || {
        reel::synth::generate(&path, format, records, max_record, &options, &mut |_| {})
    })?;
    summary_dict(py, summary)
}

/// A writer's summary as a dict.
fn summary_dict(py: Python<'_>, summary: reel::SinkSummary) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("records", summary.records)?;
    d.set_item("bytes", summary.bytes)?;
    d.set_item("paths", summary.paths.into_iter().map(GivenPath).collect::<Vec<_>>())?;
    Ok(d)
}

/// The names of the files (or shard directory) making up part `k` of an `n`-part dataset of
/// `format`, in its directory: `reel::part_names`.
#[pyfunction]
pub fn part_names(
    py: Python<'_>,
    format: &str,
    k: Count<u64, name::K>,
    n: Count<u64, name::N>,
) -> PyResult<Vec<String>> {
    let (k, n) = (k.0, n.0);
    let format = format_named(format).py_err(py)?;
    Ok(reel::part_names(format, k, n))
}
