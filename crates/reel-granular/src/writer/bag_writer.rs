//! Writing single bags: the resumable two-file bag and the single-file v1/v2 bags.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use reel_core::{Error, ErrorKind, Result, StagedFile, UnfinishedGuard};

use crate::FORMAT;
use crate::bag::{BagKind, ENTRY, append_single_file_table};
use crate::bag_reader::index_path;

/// Appends to a two-file bag (`<name>.bag` + `<name>.idx`), as granular's `BagWriter`.
///
/// Records are buffered; [`flush`](Self::flush) writes the data bytes first and the index
/// entries after them, so an interrupted write leaves at worst data bytes no entry points
/// to (ignored by readers) and a torn last index entry.
///
/// Opening an existing bag resumes it. Unlike the reference — which keeps a torn index
/// entry and appends after it, misaligning every later entry, and compares the data tail
/// with the next records — reel repairs the bag first: the index is cut to whole entries
/// and the data file to the end of the last record. The bag files are written in place;
/// atomic publication is the job of the dataset writers. It has no `finish` and dropping it
/// writes what is buffered, so, unlike the other writers, dropping it loses nothing and
/// logs no warning.
#[derive(Debug)]
pub struct BagWriter {
    bag_path: PathBuf,
    idx_path: PathBuf,
    bag: File,
    idx: File,
    /// Records on disk (index entries written).
    written: u64,
    /// End of the data on disk.
    data_end: u64,
    pending_data: Vec<u8>,
    pending_ends: Vec<u64>,
}

impl BagWriter {
    /// Opens (creating or resuming) the two-file bag at `bag_path`.
    pub fn open(bag_path: impl AsRef<Path>) -> Result<Self> {
        let bag_path = bag_path.as_ref().to_path_buf();
        let idx_path = index_path(&bag_path);
        let ctx = |e: Error| e.with_format(FORMAT);
        let open = |p: &Path| {
            OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(p)
                .map_err(|e| Error::io(e, "cannot open bag file").with_path(p))
        };
        let mut bag = open(&bag_path).map_err(ctx)?;
        let mut idx = open(&idx_path).map_err(ctx)?;
        let idx_len = file_len(&idx, &idx_path).map_err(ctx)?;
        let written = idx_len / ENTRY;
        let data_end = if written == 0 {
            0
        } else {
            let mut b = [0u8; 8];
            idx.seek(SeekFrom::Start((written - 1) * ENTRY))
                .and_then(|_| idx.read_exact(&mut b))
                .map_err(|e| ctx(Error::io(e, "cannot read index").with_path(&idx_path)))?;
            u64::from_le_bytes(b)
        };
        let bag_len = file_len(&bag, &bag_path).map_err(ctx)?;
        if data_end > bag_len {
            return Err(ctx(Error::corrupt(format!(
                "cannot resume: the index says the data ends at byte {data_end}, but the data \
                 file has only {bag_len} bytes"
            ))
            .with_path(&bag_path)));
        }
        // Repair what an interrupted write left: a torn index entry and unindexed data.
        if idx_len != written * ENTRY {
            idx.set_len(written * ENTRY)
                .map_err(|e| ctx(Error::io(e, "cannot repair torn index").with_path(&idx_path)))?;
        }
        if bag_len != data_end {
            bag.set_len(data_end)
                .map_err(|e| ctx(Error::io(e, "cannot cut unindexed data").with_path(&bag_path)))?;
        }
        idx.seek(SeekFrom::End(0))
            .map_err(|e| ctx(Error::io(e, "cannot seek").with_path(&idx_path)))?;
        bag.seek(SeekFrom::End(0))
            .map_err(|e| ctx(Error::io(e, "cannot seek").with_path(&bag_path)))?;
        Ok(BagWriter {
            bag_path,
            idx_path,
            bag,
            idx,
            written,
            data_end,
            pending_data: Vec::new(),
            pending_ends: Vec::new(),
        })
    }

    /// Records appended (written or buffered).
    pub fn len(&self) -> u64 {
        self.written + self.pending_ends.len() as u64
    }

    /// Whether the bag has no records.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes of data and index (the reference's `size`).
    pub fn size(&self) -> u64 {
        let data = self.pending_ends.last().copied().unwrap_or(self.data_end);
        data + ENTRY * self.len()
    }

    /// Bytes buffered and not yet written.
    pub fn pending_bytes(&self) -> usize {
        self.pending_data.len() + self.pending_ends.len() * ENTRY as usize
    }

    /// Buffers a record and returns its index.
    pub fn append(&mut self, record: &[u8]) -> u64 {
        let end = self.pending_ends.last().copied().unwrap_or(self.data_end) + record.len() as u64;
        self.pending_data.extend_from_slice(record);
        self.pending_ends.push(end);
        self.len() - 1
    }

    /// Writes the buffered records: data, then index entries.
    pub fn flush(&mut self) -> Result<()> {
        self.flush_data()?;
        self.flush_index()
    }

    /// Writes the buffered data bytes (their index entries stay buffered).
    pub(crate) fn flush_data(&mut self) -> Result<()> {
        if !self.pending_data.is_empty() {
            self.bag.write_all(&self.pending_data).map_err(|e| {
                Error::io(e, "cannot write bag data").with_path(&self.bag_path).with_format(FORMAT)
            })?;
            self.pending_data.clear();
        }
        Ok(())
    }

    /// Writes the buffered index entries (after [`flush_data`](Self::flush_data)).
    pub(crate) fn flush_index(&mut self) -> Result<()> {
        if self.pending_ends.is_empty() {
            return Ok(());
        }
        let mut entries = Vec::with_capacity(self.pending_ends.len() * ENTRY as usize);
        for e in &self.pending_ends {
            entries.extend_from_slice(&e.to_le_bytes());
        }
        self.idx.write_all(&entries).map_err(|e| {
            Error::io(e, "cannot write bag index").with_path(&self.idx_path).with_format(FORMAT)
        })?;
        self.written += self.pending_ends.len() as u64;
        self.data_end = self.pending_ends.last().copied().unwrap_or(self.data_end);
        self.pending_ends.clear();
        Ok(())
    }

    /// Flushes and makes both files durable (fsync).
    pub fn sync(&mut self) -> Result<()> {
        self.flush()?;
        for (f, p) in [(&self.bag, &self.bag_path), (&self.idx, &self.idx_path)] {
            f.sync_all()
                .map_err(|e| Error::io(e, "cannot sync").with_path(p).with_format(FORMAT))?;
        }
        Ok(())
    }

    /// Drops every record from `n` on (used to bring the columns of a dataset back to the
    /// same length after an interrupted write). Buffered records are dropped first.
    pub(crate) fn truncate(&mut self, n: u64) -> Result<()> {
        if n >= self.len() {
            return Ok(());
        }
        self.pending_data.clear();
        self.pending_ends.clear();
        if n < self.written {
            let end = if n == 0 {
                0
            } else {
                let mut b = [0u8; 8];
                self.idx
                    .seek(SeekFrom::Start((n - 1) * ENTRY))
                    .and_then(|_| self.idx.read_exact(&mut b))
                    .map_err(|e| Error::io(e, "cannot read index").with_path(&self.idx_path))?;
                u64::from_le_bytes(b)
            };
            self.idx
                .set_len(n * ENTRY)
                .and_then(|()| self.bag.set_len(end))
                .and_then(|()| self.idx.seek(SeekFrom::End(0)).map(|_| ()))
                .and_then(|()| self.bag.seek(SeekFrom::End(0)).map(|_| ()))
                .map_err(|e| Error::io(e, "cannot cut bag").with_path(&self.bag_path))?;
            self.written = n;
            self.data_end = end;
        }
        Ok(())
    }
}

impl Drop for BagWriter {
    /// Writes what is still buffered (best effort: errors cannot be reported here; call
    /// [`flush`](Self::flush) or [`sync`](Self::sync) to see them).
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

fn file_len(f: &File, path: &Path) -> Result<u64> {
    f.metadata().map(|m| m.len()).map_err(|e| Error::io(e, "cannot stat").with_path(path))
}

/// Writes a single-file bag (v1 as bags 0.5.1 writes it, or v2 as granular 0.20–0.21 do):
/// records streamed to the file, the offset table appended by [`finish`](Self::finish).
///
/// The file is written under a temporary name and moved into place by `finish`, so a
/// writer dropped before it leaves nothing behind. A v2 bag cannot start with an empty
/// record (it would read as v1); that append fails.
#[derive(Debug)]
pub struct SingleFileBagWriter {
    path: PathBuf,
    kind: BagKind,
    staged: Option<StagedFile>,
    out: Option<BufWriter<File>>,
    ends: Vec<u64>,
    unfinished: UnfinishedGuard,
}

impl SingleFileBagWriter {
    /// Creates the bag at `path` (which must not exist). `kind` is `SingleV1` or `SingleV2`.
    pub fn create(path: impl AsRef<Path>, kind: BagKind) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        if kind == BagKind::TwoFile {
            return Err(Error::invalid_input("a single-file bag is v1 or v2").with_format(FORMAT));
        }
        if path.exists() {
            return Err(Error::invalid_input("the bag file already exists")
                .with_path(&path)
                .with_format(FORMAT));
        }
        let staged = StagedFile::create(&path).map_err(|e| e.with_format(FORMAT))?;
        let file = staged
            .file()
            .try_clone()
            .map_err(|e| Error::io(e, "cannot clone file handle").with_path(&path))?;
        // Dropped before finish, the staged file goes away with the records: say so once.
        let unfinished = UnfinishedGuard::new(FORMAT, &path);
        Ok(SingleFileBagWriter {
            path,
            kind,
            staged: Some(staged),
            out: Some(BufWriter::with_capacity(1 << 20, file)),
            ends: Vec::new(),
            unfinished,
        })
    }

    /// Records appended.
    pub fn len(&self) -> u64 {
        self.ends.len() as u64
    }

    /// Whether no record was appended.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Bytes of data written so far.
    pub fn data_len(&self) -> u64 {
        self.ends.last().copied().unwrap_or(0)
    }

    /// Appends a record and returns its index.
    pub fn append(&mut self, record: &[u8]) -> Result<u64> {
        if self.kind == BagKind::SingleV2 && self.ends.is_empty() && record.is_empty() {
            return Err(Error::invalid_input(
                "a v2 single-file bag cannot start with an empty record: readers would take \
                 it for a v1 bag (granular 0.20–0.21 refuse empty records for this reason)",
            )
            .with_path(&self.path)
            .with_format(FORMAT));
        }
        let out = self.out.as_mut().ok_or_else(|| {
            Error::new(ErrorKind::Closed, "the bag is finished").with_format(FORMAT)
        })?;
        out.write_all(record).map_err(|e| {
            Error::io(e, "cannot write bag").with_path(&self.path).with_format(FORMAT)
        })?;
        self.ends.push(self.data_len() + record.len() as u64);
        Ok(self.len() - 1)
    }

    /// Appends the offset table, syncs the file and moves it into place; returns its size.
    pub fn finish(&mut self) -> Result<u64> {
        let mut out = self.out.take().ok_or_else(|| {
            Error::new(ErrorKind::Closed, "the bag is finished").with_format(FORMAT)
        })?;
        let mut table = Vec::with_capacity((self.ends.len() + 1) * ENTRY as usize);
        append_single_file_table(&mut table, self.kind, &self.ends);
        let io = |e: std::io::Error| Error::io(e, "cannot write bag table").with_path(&self.path);
        out.write_all(&table).map_err(io)?;
        drop(out.into_inner().map_err(|e| io(e.into_error()))?);
        let staged = self.staged.take().ok_or_else(|| {
            Error::new(ErrorKind::Closed, "the bag is finished").with_format(FORMAT)
        })?;
        staged.commit().map_err(|e| e.with_format(FORMAT))?;
        self.unfinished.finished();
        Ok(self.data_len() + table.len() as u64)
    }
}
