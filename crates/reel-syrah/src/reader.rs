//! Opening Syrah files, alone or concatenated, and reading items and single arrays.

use std::path::{Path, PathBuf};

use reel_core::{
    Backend, Error, LayoutSource, Limits, ReadAt, Record, RecordBatch, RecordSource,
    RecordSourceExt, Result, Store, StoreRef,
};

use crate::FORMAT;
use crate::dtype::SyrahDType;
use crate::layout::{SyrahFile, SyrahLayout};
use crate::metadata::{ArrayLocation, SyrahColumn};

/// How to open a Syrah dataset.
#[derive(Clone, Debug)]
pub struct SyrahOptions {
    /// The I/O backend (default: pread).
    pub backend: Backend,
    /// Where the files are (default: the local file system).
    pub store: StoreRef,
    /// Size and count limits.
    pub limits: Limits,
}

impl Default for SyrahOptions {
    fn default() -> Self {
        SyrahOptions {
            backend: Backend::default(),
            store: reel_core::local_store(),
            limits: Limits::default(),
        }
    }
}

impl SyrahOptions {
    /// Reads the files from `store`.
    pub fn store(mut self, store: StoreRef) -> Self {
        self.store = store;
        self
    }

    /// Uses `backend` for reads.
    pub fn backend(mut self, backend: Backend) -> Self {
        self.backend = backend;
        self
    }

    /// Uses `limits`.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }
}

/// The files a Syrah path stands for: a file is itself; a directory is every `*.syr`
/// directly inside it, sorted by name, read as one concatenated dataset (a reel
/// convenience: the reference opens one file at a time).
pub fn dataset_files(path: &Path) -> Result<Vec<PathBuf>> {
    dataset_files_in(&reel_core::LocalStore, path)
}

/// [`dataset_files`] of a dataset in `store`.
pub fn dataset_files_in(store: &dyn Store, path: &Path) -> Result<Vec<PathBuf>> {
    reel_core::files_with_extension(store, path, "syr")
}

/// A Syrah dataset: one file, or several read one after another.
///
/// Each item reads as a [`Record`] with one field per array name, in metadata order (the
/// order of the first item the writer was given). Numeric and `bool` arrays are 1-D
/// `Array` values pointing straight at the bytes read (no copy); `str` arrays are `Str`
/// values. Batch reads go through core's batched path, one read per item (see
/// [`SyrahLayout`] for how ranges are planned).
///
/// # Reference behaviours, read faithfully
///
/// * **No shapes.** The file stores only dtype and bytes, so every array is 1-D: a
///   `(3, 4)` array written by the reference reads back as 12 elements in C order.
/// * **`str` arrays are concatenated.** The reference joins the elements of a unicode
///   array with no separator, so `['héllo', 'ab']` reads back as the one string
///   `"hélloab"`, and `['']` as `""`.
/// * **Big-endian input is mislabelled.** The reference names a dtype by numpy's type
///   number, so a big-endian `>i4` array is stored with its big-endian bytes under the
///   name `int32`. Those bytes are read as little-endian `int32`, giving the same (wrong)
///   values the reference gives; there is nothing in the file to tell them apart.
/// * **`float128`** elements are kept as opaque 16-byte values: their layout depends on
///   the platform that wrote them.
/// * **Any version bytes** are accepted, as in the reference; the version is reported in
///   [`SourceInfo::version`](reel_core::SourceInfo::version).
/// * **Trailing NULs of text are dropped**: numpy strips them from unicode strings, so a
///   `str` array whose bytes end in NULs reads without them (the reference writer cannot
///   produce one).
/// * **Lengths are read the way the reference reads them.** A header metadata length
///   past the end of the file reads what is there; a BSON document whose own length is
///   shorter than the metadata block is read as py-bson reads it (elements are taken
///   while they start before that length, the last one read in full). Both give a
///   [`WarningKind::ReferenceQuirk`](reel_core::WarningKind) warning.
/// * **Unknown dtype names** open; reading an array of such a dtype fails with
///   `Unsupported` (the reference fails on `get_item` too). [`SyrahReader::get_array_as`]
///   can read it with an explicit dtype.
///
/// # Differences from the reference reader
///
/// * Every offset and size is checked against the file at open: an array that runs past
///   the end of the file (truncated data, damaged metadata) is a `Corrupt` error at open
///   instead of a silently short array later. Arrays that point into the header or the
///   metadata (the phantom item of the reference's rejected `add_item`) are read as
///   stored, with a [`WarningKind::ReferenceQuirk`](reel_core::WarningKind) warning.
/// * A file whose metadata names no arrays (written by the reference for items without
///   arrays) is `Corrupt` with an explanation; the reference fails with `IndexError`.
/// * An array whose size is not a whole number of elements, or a `str` array that is not
///   UTF-8, is a `Corrupt` error for that item only.
/// * The metadata is parsed strictly with the `bson` crate: element types, string
///   terminators and UTF-8 keys must be valid BSON (py-bson skips some of these checks and
///   then usually fails on every item). Such metadata is `Corrupt` at open.
/// * A header metadata length so large that the reference fails with `MemoryError` reads
///   what the file holds instead.
/// * Negative indices and string item ids do not exist; an index past the end is
///   `OutOfRange`, an unknown array name `NotFound`.
pub struct SyrahReader<F: ReadAt = Box<dyn ReadAt>> {
    source: LayoutSource<SyrahLayout, F>,
}

impl SyrahReader {
    /// Opens a `.syr` file (or a directory of them, concatenated) with default options.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        Self::open_with(path, &SyrahOptions::default())
    }

    /// Opens a `.syr` file (or a directory of them, concatenated).
    ///
    /// A directory of `part-%05d.syr` parts with numbers missing is read from the parts
    /// that are there, with a [`WarningKind::MissingParts`](reel_core::WarningKind)
    /// warning.
    pub fn open_with(path: impl AsRef<Path>, options: &SyrahOptions) -> Result<Self> {
        let path = path.as_ref();
        let files = dataset_files_in(&*options.store, path).map_err(|e| e.with_format(FORMAT))?;
        let mut reader = Self::open_concat(&files, options)?;
        if let Some(warning) = reel_core::missing_numbered_parts(path, &files, "part-", "syr") {
            reader.source.layout_mut().warn(warning);
        }
        Ok(reader)
    }

    /// Opens several files as one dataset whose items are those of the first file, then
    /// those of the second, and so on (the reference's `SyrahConcatDataset`). The files may
    /// have different array names; [`SourceInfo::schema`](reel_core::SourceInfo::schema) is only set when they agree.
    pub fn open_concat(paths: &[PathBuf], options: &SyrahOptions) -> Result<Self> {
        let files =
            options.store.open_files(paths, &options.backend).map_err(|e| e.with_format(FORMAT))?;
        SyrahReader::from_files(files, options)
    }
}

impl<F: ReadAt> SyrahReader<F> {
    /// Reads a dataset from an already opened file set (e.g. [`reel_core::MemFiles`]); each
    /// file of the set is one Syrah file, concatenated in order.
    pub fn from_files(files: F, options: &SyrahOptions) -> Result<Self> {
        let layout = SyrahLayout::open(&files, &options.limits)?;
        Ok(SyrahReader { source: LayoutSource::new(layout, files, options.limits.clone()) })
    }

    /// Number of items (the reference's `num_items()`).
    pub fn num_items(&self) -> u64 {
        self.source.len()
    }

    /// The parsed files, in order.
    pub fn files(&self) -> &[SyrahFile] {
        self.source.layout().files()
    }

    /// The array names of the file holding item `index`, with their dtypes, in metadata
    /// order.
    pub fn arrays_of(&self, index: u64) -> Option<&[SyrahColumn]> {
        let (k, _) = self.source.layout().locate(index)?;
        Some(self.source.layout().file(k)?.metadata().columns())
    }

    /// Item `index` with all its arrays (the reference's `get_item`).
    pub fn get_item(&self, index: u64) -> Result<Record> {
        self.source.read(index)
    }

    /// Array `name` of item `index`, as a record with that one field, reading only that
    /// array's bytes (the reference's `get_array`).
    pub fn get_array(&self, index: u64, name: &str) -> Result<Record> {
        let mut r = Record::new();
        self.read_arrays_into(index, &[name], &mut r)?;
        Ok(r)
    }

    /// Array `name` of item `index` decoded as `dtype` instead of its stored dtype (the
    /// reference's `get_array(index, name, dtype=...)`): reading `float32` data as `uint8`
    /// gives its raw bytes.
    pub fn get_array_as(&self, index: u64, name: &str, dtype: SyrahDType) -> Result<Record> {
        let layout = self.source.layout();
        let names = [name];
        let mut r = Record::new();
        self.source.read_with(
            index,
            &mut r,
            |i, p| layout.plan_arrays(i, Some(&names), p),
            |i, raw, o| layout.decode_arrays(i, Some(&names), Some(dtype), raw, o),
        )?;
        Ok(r)
    }

    /// Reads only the arrays `names` of item `index` into `out`, in the order given (what
    /// the reference's `SyrahDataset(path, keys)` returns). Arrays stored close together
    /// are fetched in one read.
    pub fn read_arrays_into<S: AsRef<str>>(
        &self,
        index: u64,
        names: &[S],
        out: &mut Record,
    ) -> Result<()> {
        let layout = self.source.layout();
        self.source.read_with(
            index,
            out,
            |i, p| layout.plan_arrays(i, Some(names), p),
            |i, raw, o| layout.decode_arrays(i, Some(names), None, raw, o),
        )
    }

    /// [`read_arrays_into`](Self::read_arrays_into) for a batch, in one batched read.
    pub fn read_batch_arrays_into<S: AsRef<str>>(
        &self,
        indices: &[u64],
        names: &[S],
        out: &mut RecordBatch,
    ) -> Result<()> {
        let layout = self.source.layout();
        self.source.read_batch_with(
            indices,
            out,
            |i, p| layout.plan_arrays(i, Some(names), p),
            |i, raw, o| layout.decode_arrays(i, Some(names), None, raw, o),
        )
    }

    /// The array names of item `index` in the order its bytes are stored, which is the
    /// order of the dict the reference was given for it (metadata order only fixes the
    /// first item's). Reading an item's arrays in this order
    /// ([`read_arrays_into`](Self::read_arrays_into)) and writing them gives back the same
    /// bytes, even for files whose items list their arrays in different orders.
    pub fn stored_order(&self, index: u64) -> Result<Vec<&str>> {
        let layout = self.source.layout();
        let (k, local) = layout
            .locate(index)
            .ok_or_else(|| Error::out_of_range(index, self.num_items()).with_format(FORMAT))?;
        let meta = layout
            .file(k)
            .map(|f| f.metadata())
            .ok_or_else(|| Error::corrupt("the file of an item is missing").with_format(FORMAT))?;
        let mut order: Vec<(ArrayLocation, &str)> = Vec::with_capacity(meta.columns().len());
        for (c, column) in meta.columns().iter().enumerate() {
            let loc = meta.location(c, local).ok_or_else(|| {
                Error::corrupt("an array is missing from the metadata").with_format(FORMAT)
            })?;
            order.push((loc, column.name()));
        }
        // An empty array written just before a non-empty one shares its offset: it sorts
        // first. Ties between empty arrays keep metadata order (their bytes are the same
        // either way). The sort is stable.
        order.sort_by_key(|(loc, _)| (loc.offset, loc.size > 0));
        Ok(order.into_iter().map(|(_, name)| name).collect())
    }

    /// Where array `name` of item `index` is stored: the file's path and the byte range.
    pub fn array_location(&self, index: u64, name: &str) -> Result<(&Path, ArrayLocation)> {
        let (file, loc) =
            self.source.layout().array_location(index, name).map_err(|e| e.with_format(FORMAT))?;
        Ok((self.source.files().file_path(file), loc))
    }

    /// The underlying generic source (layout and files).
    pub fn source(&self) -> &LayoutSource<SyrahLayout, F> {
        &self.source
    }
}

reel_core::delegate_record_source!(SyrahReader, source);
