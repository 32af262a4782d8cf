//! Opening FFRecord files and directories.

use std::path::{Path, PathBuf};

use reel_core::{
    Backend, LayoutSource, Limits, ReadAt, RecordSource, RecordSourceExt, Result, Store, StoreRef,
};

use crate::FORMAT;
use crate::layout::FfrecordLayout;

/// How to open an FFRecord dataset.
#[derive(Clone, Debug)]
pub struct FfrecordOptions {
    /// The I/O backend (default: pread).
    pub backend: Backend,
    /// Where the files are (default: the local file system).
    pub store: StoreRef,
    /// Size and count limits.
    pub limits: Limits,
    /// Check the metadata checksum at open (the reference's `check_data`, on by default).
    pub verify_metadata: bool,
    /// Check each record's CRC-32 when it is read (the reference's `check_data`, on by default).
    pub verify_records: bool,
}

impl Default for FfrecordOptions {
    fn default() -> Self {
        FfrecordOptions {
            backend: Backend::Pread,
            store: reel_core::local_store(),
            limits: Limits::default(),
            verify_metadata: true,
            verify_records: true,
        }
    }
}

impl FfrecordOptions {
    /// Turns both checksum checks on or off, like the reference's `check_data`. The
    /// structure of the header is validated either way.
    pub fn check_data(mut self, on: bool) -> Self {
        self.verify_metadata = on;
        self.verify_records = on;
        self
    }

    /// Uses `backend` for reads.
    pub fn backend(mut self, backend: Backend) -> Self {
        self.backend = backend;
        self
    }

    /// Reads the files from `store`.
    pub fn store(mut self, store: StoreRef) -> Self {
        self.store = store;
        self
    }

    /// Uses `limits`.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }
}

/// The files an FFRecord path stands for: a file is itself; a directory is every `*.ffr`
/// directly inside it, sorted by name (what the reference's `FileReader(dir)` reads).
pub fn dataset_files(path: &Path) -> Result<Vec<PathBuf>> {
    dataset_files_in(&reel_core::LocalStore, path)
}

/// [`dataset_files`] of a dataset in `store`.
pub fn dataset_files_in(store: &dyn Store, path: &Path) -> Result<Vec<PathBuf>> {
    reel_core::files_with_extension(store, path, "ffr")
}

/// An FFRecord dataset: one `.ffr` file, several read as one, or a directory of parts.
///
/// Each record is one `Bytes` field named `data`. Batch reads go through core's batched
/// path (one `read_many` per batch), so every backend, io_uring included, serves them.
///
/// Differences from the reference reader: offsets are validated at open (a damaged index
/// is a `Corrupt` error, not garbage or an allocation failure); a negative index cannot be
/// expressed; there is no 4096-record batch limit; and a file shorter than 12 bytes is
/// `Corrupt` instead of undefined behaviour.
pub struct FfrecordReader<F: ReadAt = Box<dyn ReadAt>> {
    source: LayoutSource<FfrecordLayout, F>,
}

impl FfrecordReader {
    /// Opens a `.ffr` file or a directory of them with default options.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        Self::open_with(path, &FfrecordOptions::default())
    }

    /// Opens a `.ffr` file or a directory of them.
    ///
    /// A directory of `PART_%05d.ffr` parts with numbers missing (`PART_00000.ffr`,
    /// `PART_00002.ffr`) is read as the reference reads it, from the parts that are there,
    /// with a [`WarningKind::MissingParts`](reel_core::WarningKind) warning.
    pub fn open_with(path: impl AsRef<Path>, options: &FfrecordOptions) -> Result<Self> {
        let path = path.as_ref();
        let files = dataset_files_in(&*options.store, path).map_err(|e| e.with_format(FORMAT))?;
        let mut reader = Self::open_paths(&files, options)?;
        if let Some(warning) = reel_core::missing_numbered_parts(path, &files, "PART_", "ffr") {
            reader.source.layout_mut().warn(warning);
        }
        Ok(reader)
    }

    /// Opens several files as one dataset, in the order given.
    pub fn open_paths(paths: &[PathBuf], options: &FfrecordOptions) -> Result<Self> {
        let files =
            options.store.open_files(paths, &options.backend).map_err(|e| e.with_format(FORMAT))?;
        FfrecordReader::from_files(files, options)
    }
}

impl<F: ReadAt> FfrecordReader<F> {
    /// Reads a dataset from an already opened file set (e.g. [`reel_core::MemFiles`]).
    pub fn from_files(files: F, options: &FfrecordOptions) -> Result<Self> {
        let layout = FfrecordLayout::open(
            &files,
            &options.limits,
            options.verify_metadata,
            options.verify_records,
        )?;
        Ok(FfrecordReader { source: LayoutSource::new(layout, files, options.limits.clone()) })
    }

    /// Number of records (the reference's `n`).
    pub fn n(&self) -> u64 {
        self.source.len()
    }

    /// The files, in index order (the reference's `fnames`).
    pub fn fnames(&self) -> &[PathBuf] {
        &self.source.info().paths
    }

    /// Record offsets of file `file` plus its size: `n + 1` entries (the reference's
    /// `get_offsets`).
    pub fn get_offsets(&self, file: usize) -> Option<&[u64]> {
        Some(&self.source.layout().file_tables(file)?.offsets)
    }

    /// Record checksums of file `file` (the reference's `get_checksums`).
    pub fn get_checksums(&self, file: usize) -> Option<&[u32]> {
        Some(&self.source.layout().file_tables(file)?.checksums)
    }

    /// Re-checks the metadata checksum of every file, even when the reader was opened
    /// without verification. Legacy files (stored 0) pass.
    pub fn validate(&self) -> Result<()> {
        for k in 0..self.source.layout().file_count() {
            if let Some(t) = self.source.layout().file_tables(k) {
                t.verify_meta_crc().map_err(|e| {
                    e.with_path(self.source.files().file_path(k as u32)).with_format(FORMAT)
                })?;
            }
        }
        Ok(())
    }

    /// The bytes of record `index` (the reference's `read_one`).
    pub fn read_one(&self, index: u64) -> Result<Vec<u8>> {
        let r = self.source.read(index)?;
        Ok(r.bytes(reel_core::RAW_FIELD).unwrap_or_default().to_vec())
    }

    /// The bytes of each record in `indices`, in order, in one batched read (the
    /// reference's `read`; named differently so it does not hide
    /// [`RecordSourceExt::read`](reel_core::RecordSourceExt::read)).
    pub fn read_many(&self, indices: &[u64]) -> Result<Vec<Vec<u8>>> {
        let batch = self.source.read_batch(indices)?;
        Ok(batch
            .iter()
            .map(|r| r.bytes(reel_core::RAW_FIELD).unwrap_or_default().to_vec())
            .collect())
    }

    /// The underlying generic source (layout and files).
    pub fn source(&self) -> &LayoutSource<FfrecordLayout, F> {
        &self.source
    }
}

reel_core::delegate_record_source!(FfrecordReader, source);
