//! A single bag file read on its own (the reference's `BagReader`): records of one
//! `Bytes` field named `data`.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use reel_core::{
    Backend, Error, FieldName, FieldSpec, Layout, LayoutSource, Limits, Plan, RAW_FIELD, ReadAt,
    RecordOut, RecordSourceExt, Result, SourceInfo, Span, StoreRef, Value, Warning, WarningKind,
};

use crate::FORMAT;
use crate::bag::{self, BagKind, BagTable};

/// How to open a bag file.
#[derive(Clone, Debug)]
pub struct BagOptions {
    /// The I/O backend (default: pread).
    pub backend: Backend,
    /// Where the files are (default: the local file system).
    pub store: StoreRef,
    /// Size and count limits.
    pub limits: Limits,
    /// `Some(true)`: a single-file bag (v1 or v2, told from the table); `Some(false)`: a
    /// two-file bag with `<name>.idx` beside it; `None` (default): two-file if the `.idx`
    /// file exists, single-file otherwise.
    pub single_file: Option<bool>,
}

impl Default for BagOptions {
    fn default() -> Self {
        BagOptions {
            backend: Backend::default(),
            store: reel_core::local_store(),
            limits: Limits::default(),
            single_file: None,
        }
    }
}

/// The `.idx` path of a two-file bag: the data path with its suffix replaced.
pub fn index_path(bag_path: &Path) -> PathBuf {
    bag_path.with_extension("idx")
}

/// One bag of any layout as a [`RecordSource`](reel_core::RecordSource) of raw records (one `Bytes` field, `data`).
///
/// Tables are validated at open (see [`BagTable`]); a record whose bytes lie past the end
/// of a two-file bag's data file fails with `Corrupt` when read.
pub struct BagReader<F: ReadAt = Box<dyn ReadAt>> {
    source: LayoutSource<BagLayout, F>,
}

/// Plan and decode of a single bag.
pub struct BagLayout {
    table: BagTable,
    field: FieldName,
    info: SourceInfo,
}

impl BagReader {
    /// Opens the bag at `path` (two-file if `<name>.idx` exists, single-file otherwise).
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        Self::open_with(path, &BagOptions::default())
    }

    /// Opens the bag at `path`.
    pub fn open_with(path: impl AsRef<Path>, options: &BagOptions) -> Result<Self> {
        let path = path.as_ref();
        let idx = index_path(path);
        let single = options.single_file.unwrap_or_else(|| !options.store.is_file(&idx));
        let paths = if single { vec![path.to_path_buf()] } else { vec![path.to_path_buf(), idx] };
        let files = options
            .store
            .open_files(&paths, &options.backend)
            .map_err(|e| e.with_format(FORMAT))?;
        BagReader::from_files(files, !single, &options.limits)
    }
}

impl<F: ReadAt> BagReader<F> {
    /// Reads a bag from open files: file 0 is the data (or the whole single-file bag),
    /// file 1 the index of a two-file bag.
    pub fn from_files(files: F, two_file: bool, limits: &Limits) -> Result<Self> {
        let layout =
            BagLayout::open(&files, two_file, limits).map_err(|e| e.with_format(FORMAT))?;
        Ok(BagReader { source: LayoutSource::new(layout, files, limits.clone()) })
    }

    /// The validated table.
    pub fn table(&self) -> &BagTable {
        &self.source.layout().table
    }

    /// The layout the bag was written in.
    pub fn kind(&self) -> BagKind {
        self.table().kind()
    }

    /// Bytes of the bag as the reference reports them: data + 8 per record for a two-file
    /// bag, the file size for a single-file one.
    pub fn size(&self) -> u64 {
        match self.kind() {
            // A damaged index can claim any data length (it is checked on read).
            BagKind::TwoFile => self.table().data_len().saturating_add(8 * self.table().len()),
            _ => self.source.files().file_len(0),
        }
    }

    /// The bytes of record `index`.
    pub fn get(&self, index: u64) -> Result<Vec<u8>> {
        let r = self.source.read(index)?;
        Ok(r.bytes(RAW_FIELD).unwrap_or_default().to_vec())
    }

    /// The records `range` (end clamped to the length), fetched with one contiguous read.
    pub fn get_range(&self, range: Range<u64>) -> Result<Vec<Vec<u8>>> {
        let end = range.end.min(self.table().len());
        if range.start >= end {
            return Ok(Vec::new());
        }
        let (offset, len) = self
            .table()
            .span(range.start, end - range.start)
            .ok_or_else(|| Error::out_of_range(range.start, self.table().len()))?;
        let block =
            self.source.files().read_to_vec(0, offset, len).map_err(|e| e.with_format(FORMAT))?;
        (range.start..end)
            .map(|i| {
                let (o, l) = self.table().range(i).unwrap_or((offset, 0));
                let from = (o - offset) as usize;
                block.get(from..from + l as usize).map(<[u8]>::to_vec).ok_or_else(|| {
                    Error::corrupt("bag record lies outside its range").with_format(FORMAT)
                })
            })
            .collect()
    }
}

impl BagLayout {
    fn open(files: &dyn ReadAt, two_file: bool, limits: &Limits) -> Result<Self> {
        let path = files.file_path(0).to_path_buf();
        let mut info = SourceInfo::new(FORMAT);
        let table = if two_file {
            let idx_path = files.file_path(1).to_path_buf();
            let len = files.file_len(1);
            limits.check_metadata(len).map_err(|e| e.with_path(&idx_path))?;
            let bytes = files.read_to_vec(1, 0, len).map_err(|e| e.with_path(&idx_path))?;
            let t = bag::parse_index(&bytes).map_err(|e| e.with_path(&idx_path))?;
            let data_len = files.file_len(0);
            if data_len > t.data_len() {
                info.warnings.push(Warning {
                    kind: WarningKind::TrailingBytes,
                    path: Some(path.clone()),
                    message: format!(
                        "{} bytes after the last record (left by an interrupted write; ignored)",
                        data_len - t.data_len()
                    ),
                });
            }
            info.paths = vec![path, idx_path];
            t
        } else {
            let t = bag::read_single_file(files, 0, limits).map_err(|e| e.with_path(&path))?;
            info.paths = vec![path];
            t
        };
        limits.check_records(table.len())?;
        info.version = Some(table.kind().describe().to_string());
        info.schema = Some(vec![FieldSpec { name: RAW_FIELD.into(), kind: "bytes".into() }]);
        Ok(BagLayout { table, field: Arc::from(RAW_FIELD), info })
    }
}

impl Layout for BagLayout {
    fn info(&self) -> &SourceInfo {
        &self.info
    }

    fn len(&self) -> u64 {
        self.table.len()
    }

    fn plan(&self, index: u64, plan: &mut Plan<'_>) -> Result<()> {
        let (offset, len) =
            self.table.range(index).ok_or_else(|| Error::out_of_range(index, self.len()))?;
        plan.push(0, offset, len);
        Ok(())
    }

    fn prefetch(&self, index: u64) {
        self.table.prefetch(index);
    }

    fn decode(&self, _index: u64, raw: &[Span], out: &mut RecordOut<'_>) -> Result<()> {
        let [span] = raw else {
            return Err(Error::corrupt("a bag record is read as exactly one range"));
        };
        out.push_named(&self.field, Value::Bytes(*span));
        Ok(())
    }
}

reel_core::delegate_record_source!(BagReader, source);
