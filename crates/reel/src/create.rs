//! Creating a dataset of any format through one call.

use std::path::{Path, PathBuf};

use reel_core::paths::{Existing, check_destination};
use reel_core::staged::{replace_path, staging_path};
use reel_core::{FieldSpec, RecordRef, RecordSink, RecordSource, Result, SinkSummary};

use crate::Format;

/// What a writer may need to know up front.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct CreateOptions {
    /// How many records will come, if known. Every writer then takes exactly that many:
    /// one more is an `InvalidInput` error, and so is finishing with fewer (the writer
    /// stays open for the rest). FFRecord writes in place, with no extra copy.
    pub records: Option<u64>,
    /// The fields and their format-native types, when the source declared them (a
    /// Granular `spec.json`, Syrah dtypes …).
    pub schema: Option<Vec<FieldSpec>>,
    /// Which generation of the target format to write, in the words of a source's
    /// [`SourceInfo::version`](reel_core::SourceInfo), where the target names several: for
    /// [`Format::Granular`], a version naming single-file bags v2 writes granular
    /// 0.20–0.21's refs layout. `None` (what conversion passes) writes the generation the
    /// target format names: [`Format::Granular`] granular 0.24, [`Format::Bags`] bags 0.5.1.
    pub version: Option<String>,
    /// Replace what exists at the path (off by default: an existing file, non-empty
    /// directory or symbolic link there is refused before anything is written). Either
    /// way, the old content is only replaced once the new dataset is complete.
    pub overwrite: bool,
    /// Parquet and Arrow IPC: schema, batch and row-group sizes, compression.
    #[cfg(feature = "arrow")]
    pub arrow: reel_arrow::WriteOptions,
    /// OFRecord: how values become features
    /// ([`EncodeOptions`](reel_ofrecord::EncodeOptions): `widen_numbers`,
    /// `flatten_arrays`), part naming and rolling, OneFlow-strict checks.
    #[cfg(feature = "ofrecord")]
    pub ofrecord: reel_ofrecord::OfrecordWriterOptions,
    /// Multi-file targets in files of about this many bytes (set with
    /// [`part_size`](Self::part_size)): OFRecord in parts of at most this size
    /// ([`max_bytes_per_part`](reel_ofrecord::OfrecordWriterOptions::max_bytes_per_part),
    /// which it overrides; a larger record gets a part of its own), Granular and bags as a
    /// sharded dataset (`000000/`, `000001/`, …) whose shards hold about this many bytes of
    /// records each. Written to a bucket, each part or shard's data goes up as soon as the
    /// next one starts, so local disk holds a few of them rather than the dataset. Other
    /// formats refuse it.
    pub part_bytes: Option<u64>,
    /// The object store's settings when the path is a URL (endpoint, credentials, retries,
    /// deadlines; by default the environment's).
    #[cfg(feature = "object-store")]
    pub store: reel_store::StoreOptions,
}

impl CreateOptions {
    /// Options saying `records` records will come.
    pub fn records(mut self, n: u64) -> Self {
        self.records = Some(n);
        self
    }

    /// Sets one storage option of an object-store destination by name (see
    /// [`reel_store::StoreOptions::set`]).
    #[cfg(feature = "object-store")]
    pub fn storage_option(&mut self, key: &str, value: &str) -> Result<()> {
        self.store.set(key, value)
    }

    /// Options that replace an existing dataset at the path when the new one is complete.
    pub fn overwrite(mut self, on: bool) -> Self {
        self.overwrite = on;
        self
    }

    /// Options carrying `schema`.
    pub fn schema(mut self, schema: Option<Vec<FieldSpec>>) -> Self {
        self.schema = schema;
        self
    }

    /// Options writing OFRecord with `options` (e.g. widening numbers OFRecord has no list
    /// of to the nearest list it has):
    ///
    /// ```no_run
    /// use reel::ofrecord::{EncodeOptions, OfrecordWriterOptions};
    /// let encode = EncodeOptions { widen_numbers: true, ..Default::default() };
    /// let options = reel::CreateOptions::default()
    ///     .ofrecord(OfrecordWriterOptions::default().encode(encode));
    /// let sink = reel::create("out", reel::Format::Ofrecord, &options)?;
    /// # Ok::<(), reel::Error>(())
    /// ```
    #[cfg(feature = "ofrecord")]
    pub fn ofrecord(mut self, options: reel_ofrecord::OfrecordWriterOptions) -> Self {
        self.ofrecord = options;
        self
    }

    /// Options writing `format` in files of about `bytes` bytes
    /// ([`part_bytes`](Self::part_bytes)): OFRecord parts, Granular and bags shards. Other
    /// formats, and a size of zero, are refused with
    /// [`ErrorKind::InvalidInput`](reel_core::ErrorKind::InvalidInput).
    pub fn part_size(mut self, format: Format, bytes: u64) -> Result<Self> {
        check_part_size(format, bytes)?;
        self.part_bytes = Some(bytes);
        Ok(self)
    }
}

/// Refuses a part size for a `format` target that has no parts of a size, and a size of
/// zero (see [`CreateOptions::part_bytes`]).
pub(crate) fn check_part_size(format: Format, bytes: u64) -> Result<()> {
    if !matches!(format, Format::Ofrecord | Format::Granular | Format::Bags) {
        return Err(reel_core::Error::invalid_input(format!(
            "a part size applies to OFRecord targets (parts of a set size) and to Granular \
             and bags targets (shards of a set size), not to {format}"
        )));
    }
    if bytes == 0 {
        return Err(reel_core::Error::invalid_input("a part size must be above zero"));
    }
    Ok(())
}

/// A writer for a new `format` dataset at `path`. The dataset appears only when the sink
/// finishes.
///
/// `path` may be an object-store URL (`s3://bucket/key`, `gs://…`, `az://…`, feature
/// `object-store`): the format's writer then fills a local staging directory
/// ([`REEL_STAGING_DIR`](crate::remote_sink::STAGING_DIR_ENV), default the system's temporary
/// directory) and `finish` uploads it, large files as multipart uploads, the objects that make
/// the dataset openable last. Data files complete before the dataset is (OFRecord parts, Granular
/// shards, GulpIO2 chunks: [`RecordSink::take_sealed`]) go up while the writing goes on and leave
/// local disk. A failed upload removes what it wrote, and a sink dropped before `finish`
/// leaves nothing (what went up early is deleted). Something already at `path` is refused with
/// [`ErrorKind::InvalidInput`](reel_core::ErrorKind::InvalidInput) naming it, unless
/// [`CreateOptions::overwrite`] is set (an empty directory is always replaced).
pub fn create(
    path: impl AsRef<Path>,
    format: Format,
    options: &CreateOptions,
) -> Result<Box<dyn RecordSink>> {
    create_checked(path.as_ref(), format, options, &[])
}

/// [`create`], also refusing a `path` that is, holds or lies inside one of `inputs`.
pub(crate) fn create_checked(
    path: &Path,
    format: Format,
    options: &CreateOptions,
    inputs: &[&Path],
) -> Result<Box<dyn RecordSink>> {
    #[cfg(feature = "object-store")]
    if let Some(reel_store::Address::Remote(url)) = remote_address(path)? {
        return crate::remote_sink::create_remote(&url, format, options);
    }
    let path = &*local_form(path)?;
    let existing = if options.overwrite { Existing::Overwrite } else { Existing::Refuse };
    check_destination(path, inputs, existing)?;
    refuse_replacing_a_non_dataset(path)?;
    if std::fs::symlink_metadata(path).is_err() {
        return crate::formats::create(format, path, options);
    }
    // Something (allowed to be replaced) is there: write beside it, swap on finish.
    let staging = staging_path(path)?;
    let inner = crate::formats::create(format, &staging, options)?;
    Ok(Box::new(Replacing { inner, staging, target: path.to_path_buf() }))
}

/// Refuses to replace a local directory that holds something but no dataset reel
/// recognises: overwriting is for a dataset written before, and `--force` with a mistyped
/// destination (a home directory, a project) deleted it whole.
///
/// Recognised: what [`crate::sniff`] tells a format of, where for FFRecord and Syrah (a
/// directory of `.ffr`/`.syr` files) every entry must be such a file, and a directory of
/// Parquet or IPC parts (`part-*.parquet`, `part-*.arrow`, what [`crate::parts`] publishes).
/// Files of other kinds beside a Granular, GulpIO2 or OFRecord dataset's are not looked
/// for.
pub(crate) fn refuse_replacing_a_non_dataset(path: &Path) -> Result<()> {
    let Ok(entries) = std::fs::read_dir(path) else { return Ok(()) };
    let names: Vec<String> =
        entries.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    if names.is_empty() || std::fs::symlink_metadata(path).is_ok_and(|m| !m.is_dir()) {
        return Ok(());
    }
    refuse_a_directory_not_a_dataset(&reel_core::LocalStore, path, &names)
}

/// Refuses to replace the directory `path` of `store`, whose entries are `names` (not
/// none), unless it is a dataset reel recognises: the local check above, and the same for
/// a prefix in a bucket, where replacing deletes every object under it.
pub(crate) fn refuse_a_directory_not_a_dataset(
    store: &dyn reel_core::Store,
    path: &Path,
    names: &[String],
) -> Result<()> {
    let all_end_with = |ext: &str| names.iter().all(|n| n.ends_with(ext));
    let recognised = match crate::sniff_in(store, path) {
        Ok(Format::Ffrecord) => all_end_with(".ffr"),
        Ok(Format::Syrah) => all_end_with(".syr"),
        Ok(_) => true,
        Err(_) => {
            names.iter().all(|n| n.starts_with("part-"))
                && (all_end_with(".parquet") || all_end_with(".arrow"))
        }
    };
    if !recognised {
        return Err(reel_core::Error::invalid_input(
            "is a directory that holds something other than a dataset reel recognises; \
             reel replaces only datasets (remove the directory yourself if it is to go)",
        )
        .with_path(path));
    }
    Ok(())
}

/// `path`, or the local path a `file://` URL in it names (`file:///data/x.ffr` is
/// `/data/x.ffr`), as reading takes them: writing a `file://` URL used to write to a
/// directory named `file:`.
pub(crate) fn local_form(path: &Path) -> Result<std::borrow::Cow<'_, Path>> {
    #[cfg(feature = "object-store")]
    if let Some(text) = path.to_str()
        && text.get(..7).is_some_and(|s| s.eq_ignore_ascii_case("file://"))
        && let reel_store::Address::Local(local) = reel_store::Address::parse(text)?
    {
        return Ok(std::borrow::Cow::Owned(local));
    }
    Ok(std::borrow::Cow::Borrowed(path))
}

/// The object-store address `path` spells, if it is one (`s3://…`, `gs://…` …).
#[cfg(feature = "object-store")]
pub(crate) fn remote_address(path: &Path) -> Result<Option<reel_store::Address>> {
    match path.to_str() {
        Some(text) if reel_store::is_remote(text) => reel_store::Address::parse(text).map(Some),
        _ => Ok(None),
    }
}

/// A sink writing a complete dataset under a staging name and then moving it over what was
/// at the target, so that a failed write leaves the old content untouched.
struct Replacing {
    inner: Box<dyn RecordSink>,
    staging: PathBuf,
    target: PathBuf,
}

impl RecordSink for Replacing {
    fn append_ref(&mut self, record: RecordRef<'_>) -> Result<u64> {
        self.inner.append_ref(record)
    }

    fn append_located(
        &mut self,
        record: RecordRef<'_>,
        location: Option<reel_core::Location<'_>>,
    ) -> Result<u64> {
        self.inner.append_located(record, location)
    }

    fn records(&self) -> u64 {
        self.inner.records()
    }

    fn take_sealed(&mut self) -> Vec<reel_core::SealedFile> {
        self.inner.take_sealed()
    }

    fn finish(&mut self) -> Result<SinkSummary> {
        let mut summary = self.inner.finish()?;
        replace_path(&self.staging, &self.target)?;
        for p in &mut summary.paths {
            if let Ok(rest) = p.strip_prefix(&self.staging) {
                *p = self.target.join(rest);
            }
        }
        Ok(summary)
    }
}

impl Drop for Replacing {
    fn drop(&mut self) {
        // The inner writer removed its own staging files if it did not finish; a finished
        // one whose swap failed is removed here so nothing is left under the staging name.
        if std::fs::symlink_metadata(&self.staging).is_ok() {
            let is_dir = std::fs::symlink_metadata(&self.staging).is_ok_and(|m| m.is_dir());
            let _ = if is_dir {
                std::fs::remove_dir_all(&self.staging)
            } else {
                std::fs::remove_file(&self.staging)
            };
        }
    }
}

/// A writer for a dataset of the same format, version and schema as `source`, about to
/// receive `records` of its records (used by `verify --salvage`). Like [`create`], it
/// refuses a `path` where something exists; [`create_like_with`] can replace it.
pub fn create_like(
    source: &dyn RecordSource,
    path: impl AsRef<Path>,
    records: u64,
) -> Result<Box<dyn RecordSink>> {
    create_like_with(source, path, records, false)
}

/// [`create_like`], replacing what is at `path` (once the new dataset is complete) when
/// `overwrite` is set.
pub fn create_like_with(
    source: &dyn RecordSource,
    path: impl AsRef<Path>,
    records: u64,
    overwrite: bool,
) -> Result<Box<dyn RecordSink>> {
    let info = source.info();
    let format = Format::of_source(info).ok_or_else(|| {
        reel_core::Error::unsupported(format!("no writer for format {}", info.format))
    })?;
    let options = CreateOptions {
        records: Some(records),
        schema: info.schema.clone(),
        version: info.version.clone(),
        overwrite,
        ..Default::default()
    };
    create(path, format, &options)
}
