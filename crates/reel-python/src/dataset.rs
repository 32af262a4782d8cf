//! `reel.open` and the `Dataset` it returns: the Python face of `RecordSource`.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyInt, PyList, PyMemoryView, PySlice, PyTuple};
use reel::{Error, Format, OpenOptions, RecordSource};
use reel_granular::{GranularOptions, GranularReader};
use reel_gulp::{FrameDecode, GulpOptions, GulpReader, JpegStrictness};

use crate::args::{Count, count, count_pair, name, opt};
use crate::arrow::{ArrowStream, StreamArgs};
use crate::buffer::{BatchBuffer, HeldBatch, new_pool};
use crate::errors::IntoPyResult;
use crate::fspath::{GivenPath, Location, fs_path, locations, opt_fs_path};
use crate::loader::{BatchStream, IndexPlan, PlanArgs, ReadAhead};
use crate::storage::{StorageOptions, storage_dict, storage_options};
use crate::values::Converter;
use reel::{BatchPool, PooledBatch};

/// Records read per batch while iterating over a whole dataset.
const ITER_BATCH: u64 = 64;

/// What a dataset was opened with; enough to open it again in another process.
#[derive(Clone, Debug)]
pub(crate) struct OpenArgs {
    pub(crate) path: PathBuf,
    pub(crate) format: Option<String>,
    pub(crate) backend: String,
    pub(crate) verify: bool,
    pub(crate) decode_images: bool,
    pub(crate) decode: bool,
    /// The local cache of object bytes, and its bound in bytes.
    pub(crate) cache: Option<PathBuf>,
    pub(crate) cache_size: Option<u64>,
    /// Parquet and Arrow IPC files: only these columns, in this order; Granular datasets:
    /// only these keys.
    pub(crate) columns: Option<Vec<String>>,
    /// Columns (keys) left out, of `columns` or of all.
    pub(crate) skip_columns: Vec<String>,
    /// Object-store settings of this dataset (see [`crate::storage`]).
    pub(crate) storage_options: StorageOptions,
}

impl OpenArgs {
    /// The I/O backend named by `backend`.
    pub(crate) fn backend(&self) -> reel::Result<reel::Backend> {
        reel::backend_by_name(&self.backend).ok_or_else(|| {
            Error::invalid_input(format!(
                "unknown backend {:?} (this build has: {})",
                self.backend,
                reel::backend_names().join(", ")
            ))
        })
    }

    /// The options every format is opened with.
    pub(crate) fn options(&self) -> reel::Result<OpenOptions> {
        let mut options = OpenOptions::default().backend(self.backend()?).verify(self.verify);
        let cache =
            reel::store::CacheSettings::from_options(self.cache.as_deref(), self.cache_size)
                .map_err(|_| Error::invalid_input("cache_size= needs cache= (a directory)"))?;
        if let Some(cache) = cache {
            options.read_settings.cache = Some(cache);
        }
        options.columns = self.columns.clone();
        options.skip_columns = self.skip_columns.clone();
        for (name, value) in &self.storage_options {
            options.storage_option(name, value)?;
        }
        Ok(options)
    }

    /// The format asked for, or the one the files at `path` in `store` have.
    fn format_in(&self, store: &dyn reel::Store, path: &Path) -> reel::Result<Format> {
        match &self.format {
            Some(name) => Format::from_name(name).ok_or_else(|| {
                let known: Vec<_> = Format::enabled().map(Format::name).collect();
                Error::invalid_input(format!(
                    "unknown format {name:?} (known: {})",
                    known.join(", ")
                ))
            }),
            None => reel::sniff_in(store, path),
        }
    }

    /// Opens the source (no Python involved: call it with the GIL released).
    pub(crate) fn open(&self) -> reel::Result<Box<dyn RecordSource>> {
        Ok(self.open_versioned()?.0)
    }

    /// [`open`](Self::open), and the versions of the objects it opened (see
    /// [`opened_versions`]).
    pub(crate) fn open_versioned(&self) -> reel::Result<(Box<dyn RecordSource>, Option<String>)> {
        // An object URL becomes the URL in a store made for it, for sniffing and for the
        // two readers opened directly below as well as for the facade.
        let (path, options) = reel::locate(&self.path, &self.options()?)?;
        let store = options.store.clone();
        let source = self.open_located(&path, options)?;
        let versions = opened_versions(&*store, &source.info().paths);
        Ok((source, versions))
    }

    /// Opens the source at `path` located with `options`.
    fn open_located(
        &self,
        path: &Path,
        options: OpenOptions,
    ) -> reel::Result<Box<dyn RecordSource>> {
        let format = self.format_in(&*options.store, path)?;
        // Refused for formats without columns here, as the facade does, since the readers
        // opened directly below do not go through it.
        options.check_column_selection(format, path)?;
        // Images decoded as the reference packages return them: the facade keeps the
        // stored JPEG/PNG bytes (lossless, for conversion), so these two open directly.
        if format == Format::Gulp && self.decode_images {
            let strictness =
                if options.lenient_jpeg { JpegStrictness::Lenient } else { JpegStrictness::Strict };
            let opts = GulpOptions {
                backend: options.backend,
                store: options.store,
                limits: options.limits,
                decode: FrameDecode::Auto,
                strictness,
            };
            return Ok(Box::new(GulpReader::open_with(path, &opts)?));
        }
        // A directory holding one bare bag (no spec.json, no shards) has no image columns:
        // the facade opens it as that bag.
        let dataset_dir = options.store.exists(&path.join("spec.json"))
            || options.store.exists(&path.join(reel::granular::shard_name(0)));
        if matches!(format, Format::Granular | Format::Bags)
            && (self.decode_images || !self.decode)
            && dataset_dir
        {
            let mut opts = GranularOptions::default()
                .backend(options.backend)
                .store(options.store.clone())
                .limits(options.limits)
                .decode_images(self.decode_images && self.decode);
            opts.decode = self.decode;
            // The column selection, as the facade reads it for Granular: the keys read.
            opts.keys = options.columns.clone();
            opts.skip_keys = options.skip_columns.clone();
            return Ok(Box::new(GranularReader::open_with(path, &opts)?));
        }
        reel::open_as(path, format, &options)
    }
}

/// Opens the dataset at `path` (a file or directory) and works out its format.
///
/// Args:
///     path: the dataset (str or os.PathLike), or an object URL (`s3://bucket/key`,
///         `gs://…`, `az://…`, `http(s)://…`) configured from the environment.
///     format: "ffrecord", "syrah", "ofrecord", "granular" (or "bags"), "gulp" (or
///         "gulpio2"); None tells it from the files.
///     backend: the I/O backend: "auto", "pread", "mmap", "memory", "io_uring",
///         "io_uring-direct". "auto" and "mmap" map the files: a file another program
///         truncates or rewrites in place while it is open crashes the process (SIGBUS),
///         as with any memory map; "pread" and "io_uring" raise CorruptError instead.
///     verify: check stored checksums on every read where the format has them.
///     decode_images: GulpIO2 frames and Granular jpg/png fields as decoded uint8 arrays,
///         as gulpio2 and granular return them (True), or the stored JPEG/PNG bytes (False).
///     decode: Granular only: False gives every field as its stored bytes (the
///         reference's `decoders=None`).
///     cache: a local directory that keeps record bytes read from object storage, so
///         later epochs read them from disk; processes may share it (default: the
///         REEL_CACHE_DIR environment variable, else none).
///     cache_size: the most bytes the cache directory holds (default 10 GiB, or
///         REEL_CACHE_SIZE).
///     columns: Parquet and Arrow IPC files: read only these columns, in this order.
///         The others are never decoded nor checked, so a file with a column reel has no
///         value for (a decimal) opens with that column left out. Granular and bags
///         datasets: read only these keys, in spec order; the other keys' bags are never
///         read. Other formats raise ValueError.
///     skip_columns: columns (keys) to leave out, of `columns` or of all, as `columns`
///         leaves out those it does not name; a name the dataset has no column for raises
///         ValueError.
///     storage_options: object-store settings for a URL, on top of the environment: reel's
///         "timeout", "connect_timeout", "retry_timeout" (durations such as "30s") and
///         "retries" (0 fails at the first error), and object_store's builder settings
///         ("aws_endpoint", "aws_region", "allow_http", "google_service_account" …). An
///         unknown name raises ValueError. A pickled dataset carries them (credentials
///         included) to the process that opens it again.
///
/// Raises:
///     FileNotFoundError (reel.NotFoundError) if nothing is at `path`; reel.ReelError
///     subclasses for data reel cannot read; ValueError for bad arguments.
///
/// Warns:
///     RuntimeWarning for a directory of numbered parts with numbers missing
///     (`PART_00000.ffr`, `PART_00002.ffr`): it reads from the parts that are there, as the
///     reference reads it, and `reel.verify` reports it.
#[pyfunction]
#[pyo3(signature = (path, *, format=None, backend="auto", verify=true, decode_images=true, decode=true,
                    cache=None, cache_size=None, columns=None, skip_columns=None,
                    storage_options=Vec::new()))]
#[allow(clippy::too_many_arguments)] // Python keywords, one per option
pub(crate) fn open(
    py: Python<'_>,
    #[pyo3(from_py_with = fs_path)] path: PathBuf,
    format: Option<String>,
    backend: &str,
    verify: bool,
    decode_images: bool,
    decode: bool,
    #[pyo3(from_py_with = opt_fs_path)] cache: Option<PathBuf>,
    cache_size: Option<Count<u64, name::CacheSize>>,
    columns: Option<Vec<String>>,
    skip_columns: Option<Vec<String>>,
    #[pyo3(from_py_with = storage_options)] storage_options: StorageOptions,
) -> PyResult<Dataset> {
    let backend = backend.to_string();
    let dataset = reopen(
        py,
        absolute_local(path),
        format,
        backend,
        verify,
        decode_images,
        decode,
        cache,
        cache_size,
        columns,
        skip_columns,
        None,
        storage_options,
        None,
    )?;
    warn_of_missing_parts(py, &*dataset.source)?;
    Ok(dataset)
}

/// A local path made absolute (from the working directory now), so that a pickled dataset
/// opens in a process working elsewhere (a Ray worker); an object URL, or a path when the
/// working directory is gone, as it is.
fn absolute_local(path: PathBuf) -> PathBuf {
    if path.is_absolute() || path.to_str().is_some_and(|text| text.contains("://")) {
        return path;
    }
    std::path::absolute(&path).unwrap_or(path)
}

/// Refuses `source`, the dataset opened again from its path (in a process that unpickled
/// it, or in a forked child), when it no longer has the `records` it had when it was first
/// opened: readers there read by the first process's indices (a DataLoader's sampler, a
/// Ray plan), which would now be other records — a partition added to a table meanwhile
/// shifts every index after it.
fn check_unchanged(source: &dyn RecordSource, records: u64, path: &Path) -> reel::Result<()> {
    if source.len() == records {
        return Ok(());
    }
    Err(Error::corrupt(format!(
        "the dataset changed since it was opened: it had {records} records then and has {} now; \
         open it again (the indices its readers were given would now be other records)",
        source.len()
    ))
    .with_path(path))
}

/// A digest of the version of every file of a dataset as `store` learnt it while opening
/// ([`reel::Store::opened_version`]): the size and entity tag of each object of a dataset
/// in object storage; `None` for local files (whose versions differ between machines that
/// share them: inode numbers, devices).
fn opened_versions(store: &dyn reel::Store, paths: &[PathBuf]) -> Option<String> {
    // DefaultHasher::new() hashes alike in every process running this build.
    let mut hasher = std::hash::DefaultHasher::new();
    let mut known = false;
    for p in paths {
        std::hash::Hash::hash(p, &mut hasher);
        // A file the store kept nothing of counts as such, rather than turning the whole
        // check off.
        let version = store.opened_version(p);
        known |= version.is_some();
        std::hash::Hash::hash(&version, &mut hasher);
    }
    known.then(|| format!("{:016x}", std::hash::Hasher::finish(&hasher)))
}

/// Refuses a dataset opened again (after a fork, or unpickled) whose objects are not the
/// versions the first process opened, `first`: it would read replaced objects while the
/// first reads the old ones (its reads name their versions), silently, under indices and a
/// schema taken from the old ones.
fn check_same_versions(first: Option<&str>, now: Option<&str>, path: &Path) -> reel::Result<()> {
    match (first, now) {
        (Some(first), Some(now)) if first != now => Err(Error::corrupt(
            "the dataset changed since it was opened: an object of it was replaced (another \
             size or entity tag); open it again",
        )
        .with_path(path)),
        _ => Ok(()),
    }
}

/// Opens a dataset again after unpickling (what `Dataset.__reduce__` names, as
/// `reel._reopen`): `reel.open`'s arguments in order, without its warnings, which the
/// process that opened the dataset gave already, and the number of `records` it had then,
/// which it must still have.
#[pyfunction]
#[pyo3(name = "_reopen", signature = (path, format, backend, verify, decode_images, decode=true,
                    cache=None, cache_size=None, columns=None, skip_columns=None, records=None,
                    storage_options=Vec::new(), versions=None))]
#[allow(clippy::too_many_arguments)] // the pickled arguments, one per option
pub(crate) fn reopen(
    py: Python<'_>,
    #[pyo3(from_py_with = fs_path)] path: PathBuf,
    format: Option<String>,
    backend: String,
    verify: bool,
    decode_images: bool,
    decode: bool,
    #[pyo3(from_py_with = opt_fs_path)] cache: Option<PathBuf>,
    cache_size: Option<Count<u64, name::CacheSize>>,
    columns: Option<Vec<String>>,
    skip_columns: Option<Vec<String>>,
    records: Option<u64>,
    #[pyo3(from_py_with = storage_options)] storage_options: StorageOptions,
    versions: Option<String>,
) -> PyResult<Dataset> {
    let cache_size = opt(cache_size);
    let args = OpenArgs {
        path,
        format,
        backend,
        verify,
        decode_images,
        decode,
        cache,
        cache_size,
        columns,
        skip_columns: skip_columns.unwrap_or_default(),
        storage_options,
    };
    let dataset = Dataset::open(py, args)?;
    if let Some(records) = records {
        check_unchanged(&*dataset.source, records, &dataset.args.path).py_err(py)?;
    }
    check_same_versions(versions.as_deref(), dataset.versions.as_deref(), &dataset.args.path)
        .py_err(py)?;
    // The first process's versions are the ones every copy is held to.
    let dataset = Dataset { versions: versions.or(dataset.versions), ..dataset };
    Ok(dataset)
}

/// A `RuntimeWarning` for each part missing from a numbered directory (the dataset reads
/// from the parts that are there, as the reference reads it): records the user expects are
/// probably absent, and `ds.info.warnings` is not where anyone looks. Only `reel.open`
/// warns, not a dataset unpickled in a worker.
fn warn_of_missing_parts(py: Python<'_>, source: &dyn RecordSource) -> PyResult<()> {
    for warning in &source.info().warnings {
        if warning.kind == reel::WarningKind::MissingParts {
            let where_ = warning.path.as_deref().map(|p| p.display().to_string());
            let text = match where_ {
                Some(path) => format!("{path}: {}", warning.message),
                None => warning.message.clone(),
            };
            let text = std::ffi::CString::new(text.replace('\0', " "))
                .map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))?;
            PyErr::warn(py, &py.get_type::<pyo3::exceptions::PyRuntimeWarning>(), &text, 1)?;
        }
    }
    Ok(())
}

/// A dataset opened with `reel.open`: a sequence of records, each a dict of field name
/// to value.
///
/// Safe to share between threads (every read releases the GIL) and picklable: a pickled
/// dataset is opened again by path in the process that unpickles it (a `CorruptError` if
/// it has another number of records by then: the indices given to it would be others). A forked child (a
/// DataLoader worker under `fork`) opens it again too, on its first read: I/O state such as
/// io_uring rings and the locks around them must not be shared with the parent.
#[pyclass(frozen, module = "reel._reel", sequence)]
pub struct Dataset {
    /// What reads go through in each process, by [`crate::fork::process_generation`]
    /// (how many forks deep the process is), filled when a process first reads.
    opened: [OnceLock<Opened>; TRACKED_FORK_DEPTHS],
    /// Metadata of the source, the same in every process.
    pub(crate) source: Arc<dyn RecordSource>,
    pub(crate) args: OpenArgs,
    /// The versions of the objects this dataset opened (see [`opened_versions`]): a copy
    /// opened in another process must find the same.
    versions: Option<String>,
}

/// What a dataset reads through in one process: the source (its files, mappings and
/// io_uring rings, which must not be shared with a forked child) and the buffers reads
/// fill, reused from read to read.
#[derive(Clone)]
pub(crate) struct Opened {
    pub(crate) source: Arc<dyn RecordSource>,
    pub(crate) pool: Arc<BatchPool>,
}

/// How many forks deep a process may be and still keep what it opened from read to read
/// (a DataLoader worker is one deep); a process deeper still opens the dataset for each
/// read.
///
/// One slot per depth, rather than one slot replaced in a forked child, because a child
/// must never wait on a lock it inherited: a thread of the parent that held it at the fork
/// (reading in the background) does not exist in the child, and the lock would stay held
/// for ever. A process fills only its own depth's slot, which no thread of its parent ever
/// touched, so the slot's state in a new child is always untouched.
const TRACKED_FORK_DEPTHS: usize = 16;

impl Dataset {
    pub(crate) fn open(py: Python<'_>, args: OpenArgs) -> PyResult<Dataset> {
        let (source, versions) =
            crate::shutdown::detach(py, || args.open_versioned()).py_err(py)?;
        let source: Arc<dyn RecordSource> = Arc::from(source);
        let dataset = Dataset {
            opened: std::array::from_fn(|_| OnceLock::new()),
            source: Arc::clone(&source),
            args,
            versions,
        };
        if let Some(slot) = dataset.opened.get(crate::fork::process_generation() as usize) {
            let _ = slot.set(Opened { source, pool: new_pool() });
        }
        Ok(dataset)
    }

    /// What to read through in this process: what it opened, or opened now (after a fork,
    /// in the child). The files are opened with no lock held; two threads of a child that
    /// open them at once keep the first one's.
    pub(crate) fn here(&self) -> reel::Result<Opened> {
        let depth = crate::fork::process_generation() as usize;
        let slot = self.opened.get(depth);
        if let Some(opened) = slot.and_then(OnceLock::get) {
            return Ok(opened.clone());
        }
        let (source, versions) = self.args.open_versioned()?;
        let source: Arc<dyn RecordSource> = Arc::from(source);
        check_unchanged(&*source, self.source.len(), &self.args.path)?;
        check_same_versions(self.versions.as_deref(), versions.as_deref(), &self.args.path)?;
        let fresh = Opened { source, pool: new_pool() };
        Ok(match slot {
            Some(slot) => slot.get_or_init(|| fresh).clone(),
            None => fresh, // deeper than tracked: for this read alone
        })
    }

    /// The source to read through in this process (opened again after a fork).
    pub(crate) fn reader(&self) -> reel::Result<Arc<dyn RecordSource>> {
        self.here().map(|opened| opened.source)
    }

    /// The source to stream `columns` from: where the format reads only the fields it is
    /// asked for (Granular keys, Parquet and IPC columns) and the dataset has every field
    /// named, the dataset opened again with that selection, so that `to_arrow(columns=)`
    /// and Ray's `select_columns` never read (nor decode) the others; else the dataset's
    /// own source, whose stream drops the other fields after reading them.
    fn reader_for(&self, columns: Option<&[String]>) -> reel::Result<Arc<dyn RecordSource>> {
        let info = self.source.info();
        let pushes_down = Format::from_name(info.format).is_some_and(Format::reads_columns);
        // Every field named, and some field left out: else opening again gains nothing.
        let narrows = |wanted: &[String]| {
            info.schema.as_ref().is_some_and(|fields| {
                wanted.iter().all(|w| fields.iter().any(|f| &f.name == w))
                    && fields.iter().any(|f| !wanted.contains(&f.name))
            })
        };
        if let (Some(wanted), Some(opened)) = (columns, &self.args.columns)
            && let Some(outside) = wanted.iter().find(|w| !opened.contains(w))
        {
            return Err(Error::invalid_input(format!(
                "no column {outside:?}: the dataset was opened with columns={opened:?}"
            ))
            .with_path(&self.args.path));
        }
        if let Some(skipped) =
            columns.and_then(|wanted| wanted.iter().find(|w| self.args.skip_columns.contains(w)))
        {
            return Err(Error::invalid_input(format!(
                "no column {skipped:?}: the dataset was opened with skip_columns={:?}",
                self.args.skip_columns
            ))
            .with_path(&self.args.path));
        }
        match columns {
            Some(wanted) if pushes_down && !wanted.is_empty() && narrows(wanted) => {
                let mut args = self.args.clone();
                args.columns = Some(wanted.to_vec());
                Ok(Arc::from(args.open()?))
            }
            _ => self.reader(),
        }
    }

    /// Reads `indices` in one batched read into a pooled buffer, the GIL released while
    /// reading: lending records where the source can (`lend`), or always reading them into
    /// the buffer, back to back in batch order.
    pub(crate) fn read_raw(
        &self,
        py: Python<'_>,
        indices: Vec<u64>,
        lend: bool,
    ) -> PyResult<PooledBatch> {
        crate::shutdown::detach(py, move || {
            let Opened { source, pool } = self.here()?;
            let mut batch = pool.take(0);
            // Records the source can lend (mmap/memory backends, formats whose records
            // decode in place) point into its memory: a `bytes` is then made straight from
            // the file's bytes, and `copy=False` views share them, with no copy at all.
            if lend {
                source.read_batch_borrowed(&indices, &mut batch).map(|()| batch)
            } else {
                source.read_batch_into(&indices, &mut batch).map(|()| batch)
            }
        })
        .py_err(py)
    }

    /// Reads `indices` and converts the records to dicts; `mapped` lets records be lent
    /// from the file's mapping ([`Dataset::read_raw`]'s `lend`).
    pub(crate) fn read_dicts<'py>(
        &self,
        py: Python<'py>,
        indices: Vec<u64>,
        copy: bool,
        mapped: bool,
    ) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let batch = self.read_raw(py, indices, mapped)?;
        batch_dicts(py, HeldBatch::read(batch), copy)
    }

    /// The indices a list, tuple, NumPy array or other iterable of ints names.
    fn indices_of(&self, obj: &Bound<'_, PyAny>) -> PyResult<Vec<u64>> {
        indices_of(obj, &self.bounds())
    }

    /// What an index of this dataset is checked against, and the context of its errors.
    pub(crate) fn bounds(&self) -> Bounds<'_> {
        Bounds { len: self.source.len(), format: self.source.info().format, path: &self.args.path }
    }
}

/// The records of a dataset, for checking indices: an index out of range is an error
/// naming the dataset's format and path (and the record, where it fits in 64 bits), like
/// the errors of the reads themselves.
pub(crate) struct Bounds<'a> {
    /// The number of records.
    pub(crate) len: u64,
    /// The format's name.
    pub(crate) format: &'static str,
    /// The path (or URL) the dataset was opened from.
    pub(crate) path: &'a std::path::Path,
}

impl Bounds<'_> {
    /// `e` with the dataset's format and path.
    fn context(&self, e: Error) -> Error {
        e.with_format(self.format).with_path(self.path)
    }
}

/// Index `i` of a dataset, counted from the end when negative.
#[inline]
fn normalize_index(i: i64, b: &Bounds<'_>) -> reel::Result<u64> {
    normalize_wide(i128::from(i), b)
}

/// [`normalize_index`] for any integer type up to `u64`.
#[inline]
fn normalize_wide(i: i128, b: &Bounds<'_>) -> reel::Result<u64> {
    // The common case first, with nothing to call: a batch converts hundreds of indices,
    // and at small records their conversion is a visible share of the read.
    match u64::try_from(i) {
        Ok(index) if index < b.len => Ok(index),
        _ => normalize_rare(i, b),
    }
}

/// [`normalize_wide`] for an index counted from the end, or out of range.
#[cold]
#[inline(never)]
fn normalize_rare(i: i128, b: &Bounds<'_>) -> reel::Result<u64> {
    let len = b.len;
    let index = if i < 0 { i128::from(len) + i } else { i };
    u64::try_from(index).ok().filter(|&x| x < len).ok_or_else(|| {
        let out_of_range = |what: String| Error::new(reel::ErrorKind::OutOfRange, what);
        match u64::try_from(i) {
            // The context names the record already.
            Ok(record) => b
                .context(out_of_range(format!("out of range (the dataset has {len} records)")))
                .with_record(record),
            Err(_) => b.context(out_of_range(format!(
                "record index {i} is out of range (the dataset has {len} records)"
            ))),
        }
    })
}

/// The error of an index too large for any dataset (it does not fit in 64 bits). The
/// number itself is not quoted: a Python `int` may have thousands of digits.
fn index_too_large(b: &Bounds<'_>) -> Error {
    b.context(Error::new(
        reel::ErrorKind::OutOfRange,
        format!(
            "record index is out of range: it does not fit in 64 bits (the dataset has {} \
             records)",
            b.len
        ),
    ))
}

/// Index `item` (an `int` or anything with `__index__`) of a dataset of `len` records,
/// counted from the end when negative. One too large for 64 bits is out of range like any
/// other, not an `OverflowError`.
fn index_of(item: &Bound<'_, PyAny>, b: &Bounds<'_>) -> PyResult<u64> {
    let py = item.py();
    if item.is_instance_of::<PyBool>() || has_bool_dtype(item)? {
        // `True` (and a 0-d bool tensor) is an `int` to Python, but an index list of bools
        // is a mask that would read records 0 and 1 over and over.
        return Err(PyTypeError::new_err(MASK_REFUSED));
    }
    match item.extract::<i64>() {
        Ok(i) => normalize_index(i, b).py_err(py),
        // From 2^63 to 2^64 - 1 an index is a record number out of range, named as such.
        Err(e) if e.is_instance_of::<pyo3::exceptions::PyOverflowError>(py) => {
            match item.extract::<u64>() {
                Ok(u) => normalize_wide(i128::from(u), b).py_err(py),
                Err(_) => Err(index_too_large(b)).py_err(py),
            }
        }
        Err(e) => Err(e),
    }
}

/// Whether `item` is a scalar of a boolean dtype (a NumPy `bool_`, a 0-d bool array or
/// tensor), which `__index__` would turn into 0 or 1.
fn has_bool_dtype(item: &Bound<'_, PyAny>) -> PyResult<bool> {
    let py = item.py();
    if item.is_instance_of::<PyInt>() {
        return Ok(false);
    }
    // By the type's name first: NumPy integer scalars in a list of indices come here one by
    // one, and looking their dtype up each time would cost more than reading the record.
    match item.get_type().name()?.to_str()? {
        // NumPy's bool scalar (`numpy.bool`, `numpy.bool_` before NumPy 2).
        "bool" | "bool_" => Ok(true),
        // Zero-dimensional arrays and tensors say it in their dtype.
        "ndarray" | "Tensor" => {
            let dtype = item.getattr(pyo3::intern!(py, "dtype"))?.str()?;
            Ok(matches!(dtype.to_str()?, "bool" | "torch.bool"))
        }
        _ => Ok(false),
    }
}

/// Whether `key` names one record: an `int`, or an object with `__index__` that is not a
/// sequence (a NumPy integer), or a zero-dimensional array or tensor (which has `__len__`,
/// but no length).
fn is_scalar_index(key: &Bound<'_, PyAny>) -> PyResult<bool> {
    let py = key.py();
    if key.is_instance_of::<PyInt>() {
        return Ok(true);
    }
    if !key.hasattr(pyo3::intern!(py, "__index__"))? {
        return Ok(false);
    }
    if !key.hasattr(pyo3::intern!(py, "__len__"))? {
        return Ok(true);
    }
    match key.getattr(pyo3::intern!(py, "ndim")) {
        Ok(ndim) => Ok(ndim.extract::<i64>().is_ok_and(|n| n == 0)),
        Err(_) => Ok(false),
    }
}

/// What [`list_indices`] found at one position of the list.
enum ListItem {
    /// An exact `int` that fits in `i64`.
    Int(i64),
    /// An exact `int` that does not.
    TooLarge,
    /// Anything else.
    Other,
}

/// The indices a list of ints names. Items that are exactly `int` are read in place, without
/// the reference counting and conversion machinery around each one: at 1 KiB records a list
/// of 256 indices cost about as much as the Python side of the rest of the batch read.
fn list_indices(list: &Bound<'_, PyList>, b: &Bounds<'_>) -> PyResult<Vec<u64>> {
    let py = list.py();
    let mut n = list.len();
    let mut out = Vec::with_capacity(n);
    let mut k = 0;
    while k < n {
        // SAFETY: `k` is below the list's length and the GIL is held, so `PyList_GetItem`
        // returns a valid borrowed reference. It is used only while nothing can run Python
        // code: `PyLong_CheckExact` and `PyLong_AsLongLongAndOverflow` of an exact `int`
        // call nothing else, so the list (and with it the item and its length) cannot
        // change meanwhile.
        let item = unsafe {
            let item = pyo3::ffi::PyList_GetItem(list.as_ptr(), k as pyo3::ffi::Py_ssize_t);
            if !item.is_null() && pyo3::ffi::PyLong_CheckExact(item) != 0 {
                let mut overflow = 0;
                let value = pyo3::ffi::PyLong_AsLongLongAndOverflow(item, &mut overflow);
                if overflow != 0 {
                    ListItem::TooLarge
                } else if value == -1 && !pyo3::ffi::PyErr_Occurred().is_null() {
                    return Err(PyErr::fetch(py));
                } else {
                    ListItem::Int(value)
                }
            } else {
                ListItem::Other
            }
        };
        let index = match item {
            ListItem::Int(value) => normalize_index(value, b).py_err(py)?,
            // Out of range of any dataset (named as a record where it fits in a `u64`).
            ListItem::TooLarge => index_of(&list.get_item(k)?, b)?,
            // Anything else (a NumPy integer, an object with `__index__`) goes through the
            // ordinary conversion, holding its own reference to the item. Its `__index__`
            // may change the list, so the length is read again after it.
            ListItem::Other => {
                let index = index_of(&list.get_item(k)?, b)?;
                n = list.len();
                index
            }
        };
        out.push(index);
        k += 1;
    }
    Ok(out)
}

/// The indices (of a dataset of `len` records) a list, tuple, range, NumPy array or other
/// iterable of ints names, negative ones counted from the end.
pub(crate) fn indices_of(obj: &Bound<'_, PyAny>, b: &Bounds<'_>) -> PyResult<Vec<u64>> {
    // Lists (what samplers hand over) and integer arrays are read directly: at small
    // records the generic iterator protocol is a visible share of a batch read.
    if let Ok(list) = obj.cast::<PyList>() {
        return list_indices(list, b);
    }
    if let Some(indices) = integer_array_indices(obj, b)? {
        return Ok(indices);
    }
    // Iterable, but not a sequence of indices: text and bytes iterate as characters or
    // byte values, and sets and dicts in an order of their own.
    if obj.is_instance_of::<pyo3::types::PyString>()
        || obj.is_instance_of::<pyo3::types::PyBytes>()
        || obj.is_instance_of::<pyo3::types::PyByteArray>()
        || obj.is_instance_of::<PyMemoryView>()
        || obj.is_instance_of::<PyDict>()
        || obj.is_instance_of::<pyo3::types::PySet>()
        || obj.is_instance_of::<pyo3::types::PyFrozenSet>()
    {
        let kind = obj.get_type().name()?;
        return Err(PyTypeError::new_err(format!(
            "dataset indices are an int, a slice or an ordered sequence of ints (a list, \
             tuple, range or integer array), not a {kind}"
        )));
    }
    let items = match obj.try_iter() {
        Ok(items) => items,
        // Not iterable (a float, None): said as what indices are, not "not iterable".
        Err(e) if e.is_instance_of::<PyTypeError>(obj.py()) => {
            let kind = obj.get_type().name()?;
            return Err(PyTypeError::new_err(format!(
                "dataset indices are an int, a slice or an ordered sequence of ints (a list, \
                 tuple, range or integer array), not a {kind}"
            )));
        }
        Err(e) => return Err(e),
    };
    let mut out = Vec::new();
    for item in items {
        out.push(index_of(&item?, b)?);
    }
    Ok(out)
}

/// The indices in a one-dimensional NumPy array of any integer dtype, or in an object that
/// NumPy views as one (`__array__`: a CPU torch tensor); `None` for anything else, which is
/// then iterated. Iterated item by item, a batch of 256 indices cost more than reading the
/// records: a torch tensor yields a tensor per item (129 µs a batch against 21 µs for an
/// `int64` array, 1 KiB FFRecord records), other dtypes a NumPy scalar each (+35 %).
fn integer_array_indices(obj: &Bound<'_, PyAny>, b: &Bounds<'_>) -> PyResult<Option<Vec<u64>>> {
    let py = obj.py();
    let array = if obj.cast::<numpy::PyUntypedArray>().is_ok() {
        obj.clone()
    } else if obj.hasattr(pyo3::intern!(py, "__array__"))? {
        // What NumPy cannot view (a tensor on a GPU) is left to iteration.
        match py.import(pyo3::intern!(py, "numpy"))?.call_method1("asarray", (obj,)) {
            Ok(array) => array,
            Err(_) => return Ok(None),
        }
    } else {
        return Ok(None);
    };
    macro_rules! read_as {
        ($($t:ty),*) => {$(
            if let Ok(typed) = array.cast::<numpy::PyArray1<$t>>()
                && let Ok(view) = numpy::PyArrayMethods::try_readonly(typed)
            {
                return checked_indices(view.as_array(), b).py_err(py).map(Some);
            }
        )*};
    }
    read_as!(i64, i32, i16, i8, u64, u32, u16, u8);
    if let Ok(untyped) = array.cast::<numpy::PyUntypedArray>()
        && numpy::PyArrayDescrMethods::is_equiv_to(
            &numpy::PyUntypedArrayMethods::dtype(untyped),
            &numpy::dtype::<bool>(py),
        )
    {
        return Err(PyTypeError::new_err(MASK_REFUSED));
    }
    if let Ok(untyped) = array.cast::<numpy::PyUntypedArray>() {
        // As NumPy indexes: a 2-D array (or tensor, seen through `__array__`) is no list of
        // record indices, and iterating it row by row read a tensor's 1-element rows as
        // indices where an array's were refused; float indices are refused however many.
        let ndim = numpy::PyUntypedArrayMethods::ndim(untyped);
        let dtype = numpy::PyUntypedArrayMethods::dtype(untyped);
        if ndim != 1 {
            return Err(PyTypeError::new_err(format!(
                "record indices are a one-dimensional sequence of ints, not a \
                 {ndim}-dimensional array"
            )));
        }
        if matches!(numpy::PyArrayDescrMethods::kind(&dtype), b'f' | b'c') {
            return Err(PyTypeError::new_err(format!(
                "record index arrays hold integers, not {}",
                dtype.str()?
            )));
        }
    }
    Ok(None)
}

/// The indices in `values`, checked against the dataset. A plain loop over the slice of a
/// contiguous array: collecting through an iterator of `Result`s cost as much again.
fn checked_indices<T: Copy + Into<i128>>(
    values: numpy::ndarray::ArrayView1<'_, T>,
    b: &Bounds<'_>,
) -> reel::Result<Vec<u64>> {
    let mut out = Vec::with_capacity(values.len());
    match values.as_slice() {
        // All in range, as nearly always: one check over the slice and one conversion,
        // both simple enough to vectorize.
        Some(contiguous)
            if contiguous.iter().all(|&i| {
                let i: i128 = i.into();
                i >= 0 && i < i128::from(b.len)
            }) =>
        {
            out.extend(contiguous.iter().map(|&i| {
                let i: i128 = i.into();
                i as u64
            }));
        }
        Some(contiguous) => {
            for &i in contiguous {
                out.push(normalize_wide(i.into(), b)?);
            }
        }
        None => {
            for &i in values.iter() {
                out.push(normalize_wide(i.into(), b)?);
            }
        }
    }
    Ok(out)
}

/// Why a boolean mask is not taken as indices.
const MASK_REFUSED: &str = "booleans are not record indices: for a boolean mask pass \
                            numpy.flatnonzero(mask) (or mask.nonzero() of a tensor)";

#[pymethods]
impl Dataset {
    /// Number of records.
    fn __len__(&self) -> usize {
        usize::try_from(self.source.len()).unwrap_or(usize::MAX)
    }

    /// `ds[i]` is record `i` (a dict); `ds[a:b:c]` and `ds[[i, j, ...]]` are lists of records
    /// read in one batched read.
    fn __getitem__<'py>(&self, key: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let py = key.py();
        if is_scalar_index(key)? {
            return self.read(key, true, true);
        }
        if let Ok(slice) = key.cast::<PySlice>() {
            let len = isize::try_from(self.source.len()).unwrap_or(isize::MAX);
            let s = slice.indices(len)?;
            let indices: Vec<u64> =
                (0..s.slicelength).map(|k| (s.start + k as isize * s.step) as u64).collect();
            return Ok(PyList::new(py, self.read_dicts(py, indices, true, true)?)?.into_any());
        }
        let indices = self.indices_of(key)?;
        Ok(PyList::new(py, self.read_dicts(py, indices, true, true)?)?.into_any())
    }

    /// Record `index` (negative counts from the end) as a dict of field name to value.
    ///
    /// With `copy=False`, byte fields are read-only `memoryview`s over reel's memory instead
    /// of `bytes` (no copy; `numpy.frombuffer` and `torch.frombuffer` accept them). That
    /// memory is the file's own mapping where the backend maps the file (`mmap`, `auto`)
    /// and the format stores values as they are, unless `mapped=False`, which reads the
    /// records into reel's batch buffer instead: writing through a view of a mapping (a
    /// tensor made with `torch.frombuffer`, which ignores the read-only flag) would crash
    /// the process, while writing into the batch buffer changes only that read's copy.
    #[pyo3(signature = (index, *, copy=true, mapped=true))]
    fn read<'py>(
        &self,
        index: &Bound<'py, PyAny>,
        copy: bool,
        mapped: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = index.py();
        let index = index_of(index, &self.bounds())?;
        let mut records = self.read_dicts(py, vec![index], copy, mapped)?;
        Ok(records.pop().map(Bound::into_any).unwrap_or_else(|| py.None().into_bound(py)))
    }

    /// The records at `indices` (any order, repeats allowed) in one batched read, as a list
    /// of dicts in the order asked. `copy=False` and `mapped` as for `read`.
    #[pyo3(signature = (indices, *, copy=true, mapped=true))]
    fn read_batch<'py>(
        &self,
        indices: &Bound<'py, PyAny>,
        copy: bool,
        mapped: bool,
    ) -> PyResult<Bound<'py, PyList>> {
        let py = indices.py();
        let indices = self.indices_of(indices)?;
        PyList::new(py, self.read_dicts(py, indices, copy, mapped)?)
    }

    /// One bytes field of the records at `indices`, read as one batch, packed: a read-only
    /// buffer holding the values one after another and an `int64` NumPy array of `n + 1`
    /// offsets (value `k` is `buffer[offsets[k]:offsets[k + 1]]`). `field` defaults to the
    /// records' only field.
    ///
    /// No Python object is made per record, so this reads at the speed of the Rust API
    /// where `read_batch`'s dicts cannot. The records are read into reel's batch buffer
    /// (never lent from a mapping): when the field is the records' only one, its values lie
    /// there back to back and the buffer is a view of it, kept alive by the view; one field
    /// of records that have several is copied once into an immutable `bytes`.
    #[pyo3(signature = (indices, *, field=None))]
    fn read_batch_packed<'py>(
        &self,
        indices: &Bound<'py, PyAny>,
        field: Option<&str>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let py = indices.py();
        let indices = self.indices_of(indices)?;
        // Read into the pooled buffer, not lent: records lent from a mapping lie where the
        // file has them and would need gathering into fresh memory (a second copy and page
        // faults every batch), while the pooled buffer holds them back to back already.
        let batch = self.read_raw(py, indices, false)?;
        let packed =
            PackedField::of(&batch, field).map_err(|e| self.bounds().context(e)).py_err(py)?;
        let total = packed.total();
        let PackedField { offsets, shared } = packed;
        let offsets = numpy::PyArray1::from_vec(py, offsets);
        let buffer = match shared {
            Some(range) => {
                let held = Arc::new(HeldBatch::read(batch));
                let owner = Bound::new(py, BatchBuffer::window(held, 0, range))?;
                PyMemoryView::from(owner.as_any())?.into_any()
            }
            // Copied once, straight into an immutable `bytes`, so the view is read-only
            // like the shared one.
            None => {
                let bytes = PyBytes::new_with(py, total, |out| {
                    PackedField::copy_into(&batch, field, out)
                        .map_err(|e| self.bounds().context(e))
                        .py_err(py)
                })?;
                PyMemoryView::from(bytes.as_any())?.into_any()
            }
        };
        PyTuple::new(py, [buffer, offsets.into_any()])
    }

    /// For benchmarks: seconds the Rust API takes to read `batches` (each a sequence of
    /// indices, converted before the clock starts) one after another into a pooled batch,
    /// with no Python involved, as `read_batch_packed` reads them. The bench script
    /// alternates it with the same reads from Python in the same process, over the same
    /// mapping and pool, so that their ratio is the binding's cost alone: between two
    /// processes this VM's run-to-run noise (±20 %) is larger than that cost.
    fn _time_rust_reads(&self, batches: &Bound<'_, PyAny>) -> PyResult<f64> {
        let py = batches.py();
        let mut all = Vec::new();
        for batch in batches.try_iter()? {
            all.push(self.indices_of(&batch?)?);
        }
        crate::shutdown::detach(py, move || {
            let Opened { source, pool } = self.here()?;
            let start = std::time::Instant::now();
            for indices in &all {
                let mut batch = pool.take(0);
                source.read_batch_into(indices, &mut batch)?;
            }
            Ok(start.elapsed().as_secs_f64())
        })
        .py_err(py)
    }

    /// Every record in order (read in batches).
    fn __iter__(slf: Bound<'_, Self>) -> DatasetIter {
        let state = IterState { next: 0, pending: VecDeque::new() };
        DatasetIter { dataset: slf.unbind(), state: Mutex::new(state) }
    }

    /// Format, version, schema, files, warnings and facts.
    #[getter]
    fn info(&self) -> Info {
        Info::from(self.source.info())
    }

    /// The path the dataset was opened from (an object URL as a `str`).
    #[getter]
    fn path(&self) -> GivenPath {
        GivenPath(self.args.path.clone())
    }

    /// The format's name.
    #[getter]
    fn format(&self) -> &'static str {
        self.source.info().format
    }

    /// The total size of the dataset's files in bytes: one stat per file (for an object
    /// URL, one request per object). For sizing work, e.g. Ray read tasks.
    #[getter]
    fn stored_bytes(&self, py: Python<'_>) -> PyResult<u64> {
        let paths = self.source.info().paths.clone();
        let args = self.args.clone();
        crate::shutdown::detach(py, move || {
            // The store the dataset was opened from (an object URL's, or the local one).
            let (_, options) = reel::locate(&args.path, &args.options()?)?;
            paths.iter().try_fold(0u64, |sum, p| Ok(sum.saturating_add(options.store.size(p)?)))
        })
        .py_err(py)
    }

    /// A short text that changes when any of the dataset's files is replaced or rewritten
    /// (from each file's size, inode and modification time; for an object URL its size, ETag
    /// and last-modified time: one stat or one request per file). Caches of opened datasets
    /// key on it (Ray read tasks do), so that a changed dataset is opened again rather than
    /// served stale.
    #[getter]
    fn fingerprint(&self, py: Python<'_>) -> PyResult<String> {
        let paths = self.source.info().paths.clone();
        let args = self.args.clone();
        crate::shutdown::detach(py, move || {
            let (_, options) = reel::locate(&args.path, &args.options()?)?;
            // DefaultHasher::new() hashes alike in every process running this build.
            let mut hasher = std::hash::DefaultHasher::new();
            for p in &paths {
                std::hash::Hash::hash(p, &mut hasher);
                std::hash::Hash::hash(&options.store.version(p)?, &mut hasher);
            }
            Ok(format!("{:016x}", std::hash::Hasher::finish(&hasher)))
        })
        .py_err(py)
    }

    /// The I/O backend reads go through.
    #[getter]
    fn backend(&self) -> &'static str {
        self.source.backend_name()
    }

    /// Pickles as "open this path again with the same options, and find as many records".
    fn __reduce__<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyTuple>)> {
        let reopen = py.import("reel")?.getattr("_reopen")?; // `reopen`, re-exported
        let a = &self.args;
        // The path as a str: a pathlib.Path would fold an URL's `//` (`s3:/bucket/key`).
        let args: [Bound<'py, PyAny>; 13] = [
            a.path.clone().into_os_string().into_pyobject(py)?.into_any(),
            a.format.clone().into_pyobject(py)?.into_any(),
            a.backend.clone().into_pyobject(py)?.into_any(),
            pyo3::types::PyBool::new(py, a.verify).to_owned().into_any(),
            pyo3::types::PyBool::new(py, a.decode_images).to_owned().into_any(),
            pyo3::types::PyBool::new(py, a.decode).to_owned().into_any(),
            a.cache.clone().into_pyobject(py)?.into_any(),
            a.cache_size.into_pyobject(py)?.into_any(),
            a.columns.clone().into_pyobject(py)?.into_any(),
            a.skip_columns.clone().into_pyobject(py)?.into_any(),
            self.source.len().into_pyobject(py)?.into_any(),
            storage_dict(py, &a.storage_options)?.into_any(),
            self.versions.clone().into_pyobject(py)?.into_any(),
        ];
        Ok((reopen, PyTuple::new(py, args)?))
    }

    /// The batches rank `rank` of `world_size` reads, from reel-loader (see the README's
    /// Loader section), computed without reading: iterate for `(indices, resume_state)`.
    /// `shuffle` is "none", "feistel" (O(1) memory, any position free) or "granular"
    /// (numpy's permutation, like Granular's loader); an epoch's order depends only on
    /// (shuffle, seed, epoch, len), not on the world size. Starts at `state` (JSON from a
    /// previous plan) or at the start of `epoch`; stops after epoch `epochs - 1` (None:
    /// never).
    #[pyo3(signature = (*, batch_size, shuffle="feistel", seed=0, rank=0, world_size=1,
                        drop_last=false, epoch=0, epochs=None, state=None))]
    #[allow(clippy::too_many_arguments)]
    fn plan(
        &self,
        py: Python<'_>,
        batch_size: Count<usize, name::BatchSize>,
        shuffle: &str,
        #[pyo3(from_py_with = count::<u64, name::Seed>)] seed: u64,
        #[pyo3(from_py_with = count::<u64, name::Rank>)] rank: u64,
        #[pyo3(from_py_with = count::<u64, name::WorldSize>)] world_size: u64,
        drop_last: bool,
        #[pyo3(from_py_with = count::<u64, name::Epoch>)] epoch: u64,
        epochs: Option<Count<u64, name::Epochs>>,
        state: Option<&str>,
    ) -> PyResult<IndexPlan> {
        let args = PlanArgs {
            batch_size: batch_size.0,
            shuffle,
            seed,
            rank,
            world_size,
            drop_last,
            epoch,
            epochs: opt(epochs),
            state,
        };
        crate::loader::plan(self, args).py_err(py)
    }

    /// The batches of the same plan (same keywords as `plan`), read ahead on `threads` Rust
    /// threads while Python works on the current batch: iterate for lists of records.
    /// `prefetch` bounds the batches read ahead (default twice `threads`); `threads=0`
    /// reads each batch when it is asked for. `interleave=(n, k)` takes batch `k` of every
    /// `n` (worker `k` of `n` DataLoader workers of this rank), reading only those.
    /// `copy=False` and `mapped` as for `read`. Waiting for a batch releases the GIL; the
    /// batches and their order do not depend on `threads` or `prefetch`.
    #[pyo3(signature = (*, batch_size, shuffle="feistel", seed=0, rank=0, world_size=1,
                        drop_last=false, epoch=0, epochs=None, state=None, threads=2,
                        prefetch=None, interleave=(1, 0), copy=true, mapped=true))]
    #[allow(clippy::too_many_arguments)]
    fn stream(
        &self,
        py: Python<'_>,
        batch_size: Count<usize, name::BatchSize>,
        shuffle: &str,
        #[pyo3(from_py_with = count::<u64, name::Seed>)] seed: u64,
        #[pyo3(from_py_with = count::<u64, name::Rank>)] rank: u64,
        #[pyo3(from_py_with = count::<u64, name::WorldSize>)] world_size: u64,
        drop_last: bool,
        #[pyo3(from_py_with = count::<u64, name::Epoch>)] epoch: u64,
        epochs: Option<Count<u64, name::Epochs>>,
        state: Option<&str>,
        #[pyo3(from_py_with = count::<usize, name::Threads>)] threads: usize,
        prefetch: Option<Count<usize, name::Prefetch>>,
        #[pyo3(from_py_with = count_pair::<name::Interleave>)] interleave: (u64, u64),
        copy: bool,
        mapped: bool,
    ) -> PyResult<BatchStream> {
        let args = PlanArgs {
            batch_size: batch_size.0,
            shuffle,
            seed,
            rank,
            world_size,
            drop_last,
            epoch,
            epochs: opt(epochs),
            state,
        };
        let read_ahead = ReadAhead { threads, prefetch: opt(prefetch), interleave, copy, mapped };
        crate::loader::stream(py, self, args, read_ahead)
    }

    /// The records as an Arrow stream, read in batches when consumed (once): pass it to
    /// `pyarrow.table`, `pyarrow.RecordBatchReader.from_stream`, `polars.from_arrow` or
    /// DuckDB. `start`/`stop` read a range of records, `indices` a list of them (in its
    /// order); `columns` picks fields; batches hold at most `batch_rows` records and about
    /// `batch_bytes` bytes; `large_types` gives 64-bit offsets; `schema` (a
    /// `pyarrow.Schema`) replaces the inferred one, which comes from the declared fields and
    /// the first `sample_records` records; `with_index` adds `_index`, each record's index;
    /// `with_location` adds `_file`, `_offset` and `_length`, where the dataset stores it.
    #[pyo3(signature = (*, start=None, stop=None, indices=None, columns=None,
                        batch_rows=65536, batch_bytes=16 << 20, large_types=false,
                        schema=None, with_index=false, with_location=false,
                        sample_records=1000))]
    #[allow(clippy::too_many_arguments)]
    fn arrow_stream(
        &self,
        py: Python<'_>,
        start: Option<Count<u64, name::Start>>,
        stop: Option<Count<u64, name::Stop>>,
        indices: Option<&Bound<'_, PyAny>>,
        columns: Option<Vec<String>>,
        #[pyo3(from_py_with = count::<usize, name::BatchRows>)] batch_rows: usize,
        #[pyo3(from_py_with = count::<usize, name::BatchBytes>)] batch_bytes: usize,
        large_types: bool,
        schema: Option<&Bound<'_, PyAny>>,
        with_index: bool,
        with_location: bool,
        #[pyo3(from_py_with = count::<usize, name::SampleRecords>)] sample_records: usize,
    ) -> PyResult<ArrowStream> {
        let args = StreamArgs {
            start: opt(start),
            stop: opt(stop),
            indices,
            columns,
            batch_rows,
            batch_bytes,
            large_types,
            schema,
            with_index,
            with_location,
            sample_records,
        };
        let wanted = args.columns.clone();
        let source =
            crate::shutdown::detach(py, || self.reader_for(wanted.as_deref())).py_err(py)?;
        Ok(ArrowStream::new(crate::arrow::batch_reader(py, source, &self.bounds(), args)?))
    }

    /// The records as a `pyarrow.Table` (pyarrow imported on call); takes the keyword
    /// arguments of `arrow_stream`. The table holds what was read: read a range or a
    /// selection of columns for a part of a large dataset, or stream with `to_batches`.
    #[pyo3(signature = (**options))]
    fn to_arrow<'py>(
        slf: &Bound<'py, Self>,
        options: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        slf.call_method("to_batches", (), options)?.call_method0("read_all")
    }

    /// The records as a `pyarrow.RecordBatchReader` that reads batch by batch as it is
    /// iterated; takes the keyword arguments of `arrow_stream`.
    #[pyo3(signature = (**options))]
    fn to_batches<'py>(
        slf: &Bound<'py, Self>,
        options: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let stream = slf.call_method("arrow_stream", (), options)?;
        // From the stream's own iterator (not its C stream), so that a failed read raises
        // reel's exception through pyarrow, which passes Python exceptions on as they are.
        let pyarrow = import_pyarrow(slf.py())?;
        let schema = pyarrow.getattr("schema")?.call1((&stream,))?;
        pyarrow.getattr("RecordBatchReader")?.call_method1("from_batches", (schema, stream))
    }

    /// The Arrow PyCapsule stream protocol: every record, default options
    /// (`pyarrow.table(ds)`). A `requested_schema` is used as the schema where reel can
    /// write it, and otherwise left aside (the consumer sees the dataset's own schema).
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, pyo3::types::PyCapsule>> {
        let source = self.reader().py_err(py)?;
        let bounds = self.bounds();
        let args = |schema, columns| StreamArgs {
            start: None,
            stop: None,
            indices: None,
            columns,
            batch_rows: 65536,
            batch_bytes: 16 << 20,
            large_types: false,
            schema,
            with_index: false,
            with_location: false,
            sample_records: 1000,
        };
        // A requested schema is followed when the records fit it. Its first batch is read
        // before the stream is handed over, so that one they do not fit (text asked for a
        // column of integers) is left aside, as the protocol allows, instead of failing the
        // consumer's read; a misfit only later in the dataset still fails there. Left
        // aside, its columns are still given in its order, with reel's types, so that the
        // consumer can cast them (pyarrow does, given the same names in the same order).
        if let Some(requested) = requested_schema {
            let reader = crate::arrow::batch_reader(
                py,
                Arc::clone(&source),
                &bounds,
                args(Some(requested), None),
            );
            if let Ok(primed) = reader.and_then(|r| crate::arrow::Primed::new(py, r).py_err(py)) {
                return crate::arrow::stream_capsule(py, primed);
            }
            let names = crate::arrow::schema_of(requested)
                .map(|s| s.fields().iter().map(|f| f.name().clone()).collect::<Vec<_>>());
            if let Ok(names) = names {
                let reader = crate::arrow::batch_reader(
                    py,
                    Arc::clone(&source),
                    &bounds,
                    args(None, Some(names)),
                );
                if let Ok(reader) = reader {
                    return crate::arrow::stream_capsule(py, reader);
                }
            }
        }
        let reader = crate::arrow::batch_reader(py, source, &bounds, args(None, None))?;
        crate::arrow::stream_capsule(py, reader)
    }

    fn __repr__(&self) -> String {
        format!(
            "<reel.Dataset {} {} records at {:?}>",
            self.source.info().format,
            self.source.len(),
            self.args.path
        )
    }
}

/// The records of a filled batch as dicts: byte fields copied into `bytes` (the buffer is
/// then reused at once) or, with `copy` false, as memoryviews over the buffers the records
/// point into (the batch's own, or memory-held files it lent from), which keep the batch
/// alive.
pub(crate) fn batch_dicts(
    py: Python<'_>,
    batch: HeldBatch,
    copy: bool,
) -> PyResult<Vec<Bound<'_, PyDict>>> {
    if copy {
        let mut conv = Converter::copying(py);
        return batch.iter().map(|r| conv.record(r)).collect();
    }
    let batch = Arc::new(batch);
    let mut conv = Converter::copying(py);
    // One memoryview per buffer the records point into (one per file they were lent from),
    // made when the first record pointing into it comes; `current` is the one in use.
    let mut views: Vec<(*const u8, Bound<'_, PyMemoryView>)> = Vec::new();
    let mut current: Option<*const u8> = None;
    let mut dicts = Vec::with_capacity(batch.len());
    for (k, record) in batch.iter().enumerate() {
        let buffer = record.raw_buffer();
        let address = buffer.as_ptr();
        if current != Some(address) {
            let view = match views.iter().find(|(a, _)| *a == address) {
                Some((_, view)) => view.clone(),
                None => {
                    let owner = Bound::new(py, BatchBuffer::new(Arc::clone(&batch), k))?;
                    let view = PyMemoryView::from(owner.as_any())?;
                    views.push((address, view.clone()));
                    view
                }
            };
            conv.view_into(view, buffer);
            current = Some(address);
        }
        dicts.push(conv.record(record)?);
    }
    Ok(dicts)
}

/// The `pyarrow` module, or an error saying what needs it.
fn import_pyarrow(py: Python<'_>) -> PyResult<Bound<'_, PyModule>> {
    py.import("pyarrow").map_err(|e| {
        pyo3::exceptions::PyImportError::new_err(format!(
            "Dataset.to_arrow and to_batches need pyarrow (pip install pyarrow): {e}"
        ))
    })
}

/// Iterator over every record of a dataset, reading ahead one batch at a time. Threads
/// sharing one iterator each take records, each record once (in index order from one
/// thread; threads may see batches finish in another order).
#[pyclass(frozen, module = "reel._reel")]
pub struct DatasetIter {
    dataset: Py<Dataset>,
    /// Taken only with the GIL held and never across a read (which releases the GIL), so
    /// that it is never waited for.
    state: Mutex<IterState>,
}

/// Where a [`DatasetIter`] is.
struct IterState {
    /// The first record no thread has claimed yet.
    next: u64,
    /// Records read and not yet handed out.
    pending: VecDeque<Py<PyDict>>,
}

impl DatasetIter {
    fn state(&self) -> std::sync::MutexGuard<'_, IterState> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[pymethods]
impl DatasetIter {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<Py<PyDict>>> {
        let ds = self.dataset.get();
        loop {
            let (start, end) = {
                let mut state = self.state();
                if let Some(record) = state.pending.pop_front() {
                    return Ok(Some(record));
                }
                let len = ds.source.len();
                if state.next >= len {
                    return Ok(None);
                }
                let start = state.next;
                state.next = len.min(start + ITER_BATCH);
                (start, state.next)
            };
            // Read without the lock: another thread may claim and read the next batch.
            let records = ds.read_dicts(py, (start..end).collect(), true, true)?;
            self.state().pending.extend(records.into_iter().map(Bound::unbind));
        }
    }
}

/// What a dataset is: format, version, schema, files, warnings and format-specific facts.
#[pyclass(frozen, module = "reel._reel", get_all)]
pub struct Info {
    /// The format's name ("ffrecord", "syrah", ...).
    format: String,
    /// The format version or generation, when it can be told.
    version: Option<String>,
    /// (field name, the format's type name) for every field, when the format declares them.
    schema: Option<Vec<(String, String)>>,
    /// The files the dataset reads (object URLs as `str`).
    files: Vec<Location>,
    /// What the reader noticed while opening: (kind, file or None, message).
    warnings: Vec<(String, Option<Location>, String)>,
    /// Format-specific facts as (name, value) pairs in display order.
    facts: Vec<(String, String)>,
}

impl From<&reel::SourceInfo> for Info {
    fn from(i: &reel::SourceInfo) -> Self {
        Info {
            format: i.format.to_string(),
            version: i.version.clone(),
            schema: i
                .schema
                .as_ref()
                .map(|s| s.iter().map(|f| (f.name.clone(), f.kind.clone())).collect()),
            files: locations(&i.paths),
            warnings: i
                .warnings
                .iter()
                .map(|w| (format!("{:?}", w.kind), w.path.clone().map(Location), w.message.clone()))
                .collect(),
            facts: i.facts.clone(),
        }
    }
}

#[pymethods]
impl Info {
    fn __repr__(&self) -> String {
        let version = self.version.as_deref().map_or("None".to_string(), |v| format!("{v:?}"));
        format!(
            "Info(format={:?}, version={version}, files={}, warnings={})",
            self.format,
            self.files.len(),
            self.warnings.len()
        )
    }
}

/// One bytes field of a batch's records laid end to end (see `Dataset.read_batch_packed`).
///
/// Planned in one walk over the batch that records only the offsets and whether the values
/// already lie back to back in one buffer; the values themselves are gathered (a second
/// walk, [`PackedField::copy_into`]) only when they do not. At 1 KiB records this walk is a
/// visible part of a batch read, so it reads the stored fields directly instead of building
/// a view of every record and value.
struct PackedField {
    /// `n + 1` offsets into the packed bytes.
    offsets: Vec<i64>,
    /// Where the packed bytes lie in the buffer every record points into, when the values
    /// are back to back there; then nothing needs copying.
    shared: Option<std::ops::Range<usize>>,
}

impl PackedField {
    fn of(batch: &reel::RecordBatch, field: Option<&str>) -> reel::Result<Self> {
        let mut offsets = Vec::with_capacity(batch.len() + 1);
        offsets.push(0i64);
        let mut end = 0i64;
        // Whether the values so far lie back to back in one buffer (the first value's
        // buffer, from `first` to `next`). Tracked without branching on it: at 1 KiB
        // records this walk was 4 % of a batch read while it matched on a state per record.
        let (mut base, mut first, mut next) = (std::ptr::null::<u8>(), 0usize, 0usize);
        let mut contiguous = true;
        for (k, record) in batch.iter().enumerate() {
            let (span, buffer) = packed_span(&record, field)?;
            // What the copy would take (`Span::get`: nothing where the span lies outside).
            let len = span.get(buffer).len();
            end += len as i64;
            offsets.push(end);
            if k == 0 {
                (base, first, next) = (buffer.as_ptr(), span.start, span.start);
            }
            contiguous &= len == span.len
                && span.start <= buffer.len()
                && std::ptr::eq(buffer.as_ptr(), base)
                && span.start == next;
            next = span.start.wrapping_add(len);
        }
        let shared = (contiguous && !batch.is_empty()).then_some(first..next);
        Ok(PackedField { offsets, shared })
    }

    /// Total bytes of the packed values.
    fn total(&self) -> usize {
        self.offsets.last().map_or(0, |&end| end as usize)
    }

    /// Copies the values of `batch` (the batch [`PackedField::of`] walked) end to end into
    /// `out`, which is [`PackedField::total`] bytes long.
    fn copy_into(
        batch: &reel::RecordBatch,
        field: Option<&str>,
        out: &mut [u8],
    ) -> reel::Result<()> {
        let mut at = 0;
        for record in batch.iter() {
            let bytes = packed_value(&record, field)?;
            let Some(slot) = out.get_mut(at..at + bytes.len()) else {
                return Err(Error::invalid_input("the batch changed while it was packed"));
            };
            slot.copy_from_slice(bytes);
            at += bytes.len();
        }
        Ok(())
    }
}

/// The bytes of `field` (or of the record's only field) of `record`, for packing.
#[inline]
fn packed_value<'a>(record: &reel::RecordRef<'a>, field: Option<&str>) -> reel::Result<&'a [u8]> {
    packed_span(record, field).map(|(span, buffer)| span.get(buffer))
}

/// Where the bytes of `field` (or of the record's only field) of `record` lie: their span
/// and the buffer it is in. Inlined into the walks of [`PackedField`], with the errors
/// built out of line: at 1 KiB records the walk is a visible share of a batch read.
#[inline]
fn packed_span<'a>(
    record: &reel::RecordRef<'a>,
    field: Option<&str>,
) -> reel::Result<(reel::Span, &'a [u8])> {
    let fields = record.raw_fields();
    let found = match (field, fields) {
        (None, [only]) => only,
        (Some(name), _) => match fields.iter().find(|f| &*f.name == name) {
            Some(found) => found,
            None => return Err(no_packed_field(record, field)),
        },
        (None, _) => return Err(no_packed_field(record, field)),
    };
    match &found.value {
        reel::Value::Bytes(span) => Ok((*span, record.raw_buffer())),
        _ => Err(not_bytes(record, found)),
    }
}

/// Why `record` has no field to pack: it has several and none was named, or none of the
/// name given.
#[cold]
#[inline(never)]
fn no_packed_field(record: &reel::RecordRef<'_>, field: Option<&str>) -> Error {
    let index = record.index();
    let known: Vec<&str> = record.raw_fields().iter().map(|f| &*f.name).collect();
    // The record is named by the error's context (`with_record`), not again in the text.
    match field {
        None => Error::invalid_input(format!(
            "{} fields ({}): name the bytes field to pack with field=",
            known.len(),
            known.join(", ")
        ))
        .with_record(index),
        Some(name) => {
            Error::schema(format!("no field {name:?} (its fields: {})", known.join(", ")))
                .with_record(index)
        }
    }
}

/// Why the field `found` of `record` cannot be packed.
#[cold]
#[inline(never)]
fn not_bytes(record: &reel::RecordRef<'_>, found: &reel::Field) -> Error {
    Error::schema(format!("field {:?} is not bytes, so it cannot be packed", found.name))
        .with_record(record.index())
}
