//! Opening a dataset without naming its format.

use std::fmt;
use std::path::{Path, PathBuf};

use reel_core::{Backend, Error, Limits, RecordSource, Result, Store, StoreRef};

use crate::formats;
use crate::payload::Payload;

/// The formats reel knows. Whether one is compiled in depends on its Cargo feature.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Format {
    /// FFRecord (HFAiLab): `.ffr` files, directories of parts, packed folders.
    Ffrecord,
    /// Syrah (gsicard/syrah): `.syr` files of named 1-D arrays.
    Syrah,
    /// OneFlow OFRecord: `part-NNNNN` files of length-prefixed protobuf records.
    Ofrecord,
    /// Granular: a directory with `spec.json` and one bag per key. Every generation is read
    /// (bags 0.5.1's refs layout too); written, it is granular 0.24's layout
    /// (`<key>.bag` + `<key>.idx`), whatever the source was.
    Granular,
    /// Bags, Granular's former name: read like [`Granular`](Format::Granular) (the reader
    /// tells the generation from the files); written, it is bags 0.5.1's layout
    /// (`refs.bag` and single-file bags, sequence types). Only ever chosen by name: [`open`]
    /// reports every Granular generation as `granular`.
    Bags,
    /// GulpIO2: a directory of `data_N.gulp` + `meta_N.gmeta` chunks.
    Gulp,
    /// Apache Parquet: one file, a row per record and a column per field (feature `arrow`).
    Parquet,
    /// The Arrow IPC file format (Feather v2) (feature `arrow`).
    ArrowIpc,
}

impl Format {
    /// Every format, enabled or not, in the order [`open`] tries them.
    pub const ALL: &'static [Format] = &[
        Format::Ffrecord,
        Format::Syrah,
        Format::Ofrecord,
        Format::Granular,
        Format::Bags,
        Format::Gulp,
        Format::Parquet,
        Format::ArrowIpc,
    ];

    /// Whether the format stores its fields apart, so that a selection of them when opening
    /// ([`OpenOptions::columns`]) leaves the others unread: Parquet and Arrow IPC (columns),
    /// Granular and bags (one bag per key).
    pub fn reads_columns(self) -> bool {
        matches!(self, Format::Parquet | Format::ArrowIpc | Format::Granular | Format::Bags)
    }

    /// Whether a column selection ([`OpenOptions::columns`]) comes back in the order asked
    /// (Parquet and Arrow IPC) rather than in the order the dataset stores its fields
    /// (Granular's spec order).
    pub fn selects_in_order(self) -> bool {
        matches!(self, Format::Parquet | Format::ArrowIpc)
    }

    /// Whether the format stores checksums of record bytes, which reads (and
    /// [`verify`](crate::verify)) check: only FFRecord does. In the others, damaged bytes
    /// that still decode are read as they are, as the references read them (Parquet page
    /// checksums, optional in the format, are not checked).
    pub fn stores_checksums(self) -> bool {
        self == Format::Ffrecord
    }

    /// The format's name (as in [`SourceInfo::format`](reel_core::SourceInfo)).
    pub fn name(self) -> &'static str {
        match self {
            Format::Ffrecord => "ffrecord",
            Format::Syrah => "syrah",
            Format::Ofrecord => "ofrecord",
            Format::Granular => "granular",
            Format::Bags => "bags",
            Format::Gulp => "gulp",
            Format::Parquet => "parquet",
            Format::ArrowIpc => "arrow",
        }
    }

    /// The format named `name` (case-insensitive; `gulpio2` is accepted too).
    pub fn from_name(name: &str) -> Option<Format> {
        let name = name.to_ascii_lowercase();
        match name.as_str() {
            "gulpio2" | "gulpio" => return Some(Format::Gulp),
            "ipc" | "arrow-ipc" | "feather" => return Some(Format::ArrowIpc),
            _ => {}
        }
        Format::ALL.iter().copied().find(|f| f.name() == name)
    }

    /// The format and generation of an open source: its [`SourceInfo::format`], except that
    /// a Granular source in bags 0.5.1's layout (refs and single-file v1 bags) is
    /// [`Bags`](Format::Bags).
    ///
    /// [`SourceInfo::format`]: reel_core::SourceInfo
    pub fn of_source(info: &reel_core::SourceInfo) -> Option<Format> {
        let format = Format::from_name(info.format)?;
        let bags_layout =
            info.version.as_deref().is_some_and(|v| v.contains("single-file bags v1"));
        Some(if format == Format::Granular && bags_layout { Format::Bags } else { format })
    }

    /// Whether this build includes the format (its Cargo feature is on).
    pub fn is_enabled(self) -> bool {
        formats::handler(self).is_some()
    }

    /// The formats this build includes.
    pub fn enabled() -> impl Iterator<Item = Format> {
        Format::ALL.iter().copied().filter(|f| f.is_enabled())
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Options for [`open_with`] and [`open_as`] that apply to every format.
#[derive(Clone, Debug)]
pub struct OpenOptions {
    /// The I/O backend (default: [`default_backend`](crate::default_backend), i.e. `auto`
    /// where io_uring is available).
    pub backend: Backend,
    /// Where the dataset is (default: the local file system). A path that is an object URL
    /// (`s3://`, `gs://`, `az://`, `abfs://`, `http(s)://`) is read from a store made for it
    /// from [`store_options`](Self::store_options) instead (feature `object-store`).
    pub store: StoreRef,
    /// How stores for object URLs are configured: the environment and these settings
    /// (credentials, region, endpoint, retries, deadlines).
    #[cfg(feature = "object-store")]
    pub store_options: reel_store::StoreOptions,
    /// How batched reads from object stores are shaped (coalescing gap, concurrency,
    /// retries of short or failed bodies, request deadline).
    #[cfg(feature = "object-store")]
    pub read_settings: reel_store::ReadSettings,
    /// Size and count limits.
    pub limits: Limits,
    /// Verify checksums where the format has them (on by default).
    pub verify: bool,
    /// How to read records that are bytes (default [`Payload::Raw`]: as bytes). See
    /// [`payload`](crate::payload).
    pub payload: Payload,
    /// The bytes field whose payload is decoded (default: the record's only field).
    pub payload_field: Option<String>,
    /// Judge GulpIO2 frames leniently when they are decoded (off by default): decode what
    /// can be decoded instead of failing on every condition the reference's decoder
    /// (libjpeg-turbo) reports. See `reel::gulp::JpegStrictness`.
    pub lenient_jpeg: bool,
    /// Parquet and Arrow IPC files: read only these columns, in this order (default: all).
    /// Columns left out are never decoded nor checked for a value type, so a file with a
    /// column reel has no value for (a decimal, a union) opens when that column is left out
    /// (`reel_arrow::ReadOptions::columns` says what is still checked).
    ///
    /// Granular and bags datasets: read only these keys, in spec order
    /// (`reel_granular::GranularOptions::keys`); the record data of the others is never read
    /// (nor, in the current layout, their indexes). A
    /// lone bag has one field, `data`.
    ///
    /// Other formats refuse a column selection (a conversion's
    /// [`FieldMap`](crate::convert::FieldMap) selects the fields of any format).
    pub columns: Option<Vec<String>>,
    /// Leave these columns (or Granular keys) out (of [`columns`](Self::columns), or of
    /// all), as above.
    pub skip_columns: Vec<String>,
    /// Read the dataset as this format instead of telling it from the files (default:
    /// told, see [`sniff`]): for a dataset whose files say too little (an empty GulpIO2
    /// directory, a Parquet file without its extension and footer magic read elsewhere).
    /// [`open_with`], [`verify`](crate::verify) and [`convert`](crate::convert()) take it.
    pub format: Option<Format>,
}

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions {
            backend: crate::default_backend(),
            store: reel_core::local_store(),
            #[cfg(feature = "object-store")]
            store_options: reel_store::StoreOptions::default(),
            #[cfg(feature = "object-store")]
            read_settings: reel_store::ReadSettings::default(),
            limits: Limits::default(),
            verify: true,
            payload: Payload::Raw,
            payload_field: None,
            lenient_jpeg: false,
            columns: None,
            skip_columns: Vec::new(),
            format: None,
        }
    }
}

impl OpenOptions {
    /// Reads the dataset as `format` (see [`format`](Self::format)); `None` tells it from
    /// the files.
    pub fn format(mut self, format: Option<Format>) -> Self {
        self.format = format;
        self
    }

    /// The format the dataset at `path` (a location in [`store`](Self::store)) is read as:
    /// [`format`](Self::format), or the one its files have ([`sniff_in`]).
    pub fn format_of(&self, path: &Path) -> Result<Format> {
        match self.format {
            Some(format) => Ok(format),
            None => sniff_in(&*self.store, path),
        }
    }

    /// Reads the dataset from `store`.
    pub fn store(mut self, store: StoreRef) -> Self {
        self.store = store;
        self
    }

    /// Configures the stores of object URLs with `options`.
    #[cfg(feature = "object-store")]
    pub fn store_options(mut self, options: reel_store::StoreOptions) -> Self {
        self.store_options = options;
        self
    }

    /// Sets one storage option by name (see [`reel_store::StoreOptions::set`]): reel's
    /// `timeout`, `connect_timeout`, `retries` and `retry_timeout`, or a builder setting by
    /// object_store's names (`aws_endpoint`, `aws_region`, `google_service_account` …).
    /// `timeout` is also the deadline of each batched read's request, and `retries=0`
    /// makes those reads fail at the first error too (reel tries a failed range read
    /// again on its own, for short bodies, besides object_store's retries).
    #[cfg(feature = "object-store")]
    pub fn storage_option(&mut self, key: &str, value: &str) -> Result<()> {
        self.store_options.set(key, value)?;
        match key {
            "timeout" => self.read_settings.request_timeout = self.store_options.timeout,
            "retries" => {
                let retries = self.store_options.retry.max_retries;
                self.read_settings.attempts =
                    if retries == 0 { 1 } else { reel_store::ReadSettings::default().attempts };
            }
            _ => {}
        }
        Ok(())
    }

    /// Shapes batched object-store reads by `settings`.
    #[cfg(feature = "object-store")]
    pub fn read_settings(mut self, settings: reel_store::ReadSettings) -> Self {
        self.read_settings = settings;
        self
    }

    /// Uses `backend` for reads.
    pub fn backend(mut self, backend: Backend) -> Self {
        self.backend = backend;
        self
    }

    /// Turns checksum verification on or off.
    pub fn verify(mut self, on: bool) -> Self {
        self.verify = on;
        self
    }

    /// Judges GulpIO2 frames leniently (`true`) or like the reference (`false`, the default).
    pub fn lenient_jpeg(mut self, on: bool) -> Self {
        self.lenient_jpeg = on;
        self
    }

    /// Decodes each record's bytes with `payload`.
    pub fn payload(mut self, payload: Payload) -> Self {
        self.payload = payload;
        self
    }

    /// Uses `limits`.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Reads only the columns `names`, in that order, of a Parquet or Arrow IPC file (see
    /// [`columns`](Self::columns)).
    pub fn columns<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.columns = Some(names.into_iter().map(Into::into).collect());
        self
    }

    /// Leaves the columns `names` of a Parquet or Arrow IPC file out (see
    /// [`skip_columns`](Self::skip_columns)).
    pub fn skip_columns<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.skip_columns = names.into_iter().map(Into::into).collect();
        self
    }

    /// Whether a column selection is set.
    pub(crate) fn selects_columns(&self) -> bool {
        self.columns.is_some() || !self.skip_columns.is_empty()
    }

    /// Refuses a column selection for a `format` that has no columns to select (every
    /// format but Parquet and Arrow IPC), naming `path`: code that opens readers itself
    /// checks what [`open_as`] checks.
    pub fn check_column_selection(&self, format: Format, path: &Path) -> Result<()> {
        if self.selects_columns() && !format.reads_columns() {
            return Err(Error::invalid_input(format!(
                "a column selection (columns= or skip_columns= in Python, OpenOptions::columns \
                 or skip_columns) applies to Parquet, Arrow IPC and Granular datasets, not to \
                 {format} (a conversion's --fields and --drop select the fields of any format)"
            ))
            .with_path(path));
        }
        Ok(())
    }
}

/// Opens the dataset at `path` (a file or a directory), working out its format.
pub fn open(path: impl AsRef<Path>) -> Result<Box<dyn RecordSource>> {
    open_with(path, &OpenOptions::default())
}

/// [`open`] with options.
pub fn open_with(path: impl AsRef<Path>, options: &OpenOptions) -> Result<Box<dyn RecordSource>> {
    let (path, options) = locate(path.as_ref(), options)?;
    let format = options.format_of(&path)?;
    open_as(&path, format, &options)
}

/// Opens `path` as `format`, without sniffing.
pub fn open_as(
    path: impl AsRef<Path>,
    format: Format,
    options: &OpenOptions,
) -> Result<Box<dyn RecordSource>> {
    let (path, options) = locate(path.as_ref(), options)?;
    let (path, options) = (path.as_path(), &options);
    // A FIFO, device or socket would block or never end; refuse it before any format
    // looks at it (the error still names the format asked for, as its reader would).
    options.store.stat(path).map_err(|e| e.with_format(format.name()))?;
    let handler = formats::handler(format).ok_or_else(|| {
        Error::unsupported(format!(
            "format {format} is not built into this reel (enable the Cargo feature \"{}\")",
            format.name()
        ))
        .with_path(path)
    })?;
    options.check_column_selection(format, path)?;
    let source = (handler.open)(path, options)?;
    Ok(crate::payload::wrap(
        source,
        options.payload,
        options.payload_field.as_deref(),
        &options.limits,
    ))
}

/// Where `path` is read from: an object URL (feature `object-store`) becomes the URL in a
/// store made for it from the options; `file://` URLs become paths; anything else is read
/// from `options.store` as it is. A store set by the caller is kept. [`open_with`] and
/// [`open_as`] call it; a caller that opens a format's reader itself (with its own
/// options) calls it first so that URLs work there too.
pub fn locate(path: &Path, options: &OpenOptions) -> Result<(PathBuf, OpenOptions)> {
    #[cfg(feature = "object-store")]
    if options.store.name() == "file"
        && let Some(text) = path.to_str()
        && text.contains("://")
    {
        return match reel_store::Address::parse(text)? {
            reel_store::Address::Local(local) => Ok((local, options.clone())),
            reel_store::Address::Remote(url) => {
                let mut settings = options.read_settings.clone();
                if settings.cache.is_none() {
                    settings.cache = reel_store::CacheSettings::from_env()?;
                }
                let store = reel_store::RemoteStore::open(&url, &options.store_options, settings)?;
                let located = url.location();
                Ok((located, options.clone().store(std::sync::Arc::new(store))))
            }
        };
    }
    Ok((path.to_path_buf(), options.clone()))
}

/// Works out the format of the dataset at `path` from its names and first bytes. A path
/// that is neither a regular file nor a directory (a FIFO, a device, a socket, a symbolic
/// link loop) is refused with an error saying what it is, before anything is opened.
pub fn sniff(path: &Path) -> Result<Format> {
    sniff_in(&reel_core::LocalStore, path)
}

/// [`sniff`] for a dataset in `store`.
pub fn sniff_in(store: &dyn Store, path: &Path) -> Result<Format> {
    store.stat(path)?;
    // A question that failed (an object store not answering) ends the search with its
    // error: the format cannot be told, and every further question would fail the same way.
    let _ = store.take_failed_question();
    for format in Format::enabled() {
        if let Some(h) = formats::handler(format) {
            let found = (h.sniff)(store, path);
            if let Some(e) = store.take_failed_question() {
                return Err(e);
            }
            if found {
                return Ok(format);
            }
        }
    }
    let known: Vec<_> = Format::enabled().map(Format::name).collect();
    Err(Error::unsupported(format!(
        "cannot tell the format: it looks like none of {}{}",
        known.join(", "),
        lookalike(store, path)
    ))
    .with_path(path))
}

/// What the file at `path` is, when its first bytes are those of a format reel does not
/// read but users meet among the ones it does, as a clause for "cannot tell the format".
fn lookalike(store: &dyn Store, path: &Path) -> &'static str {
    if !store.is_file(path) {
        return "";
    }
    match store.read_range(path, 0, 4).as_deref() {
        Ok(b"FEA1") => {
            " (its first bytes are Feather version 1's, the format before Arrow IPC files, \
             which reel does not read: rewrite it as Feather version 2 with \
             pyarrow.feather.write_feather(pyarrow.feather.read_table(PATH), NEW_PATH))"
        }
        _ => "",
    }
}
