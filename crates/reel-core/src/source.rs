//! Reading records: the [`RecordSource`] trait and its helpers.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::{ReadRange, Record, RecordBatch, Result};

/// A field of a dataset's schema, as the format names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldSpec {
    /// The field name.
    pub name: String,
    /// The format's own type name (`"utf8"`, `"int16"`, `"bytes_list"`, `"array"` …).
    pub kind: String,
}

/// Something a reader noticed that is not an error but that the user should know.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Warning {
    /// What kind of thing it is.
    pub kind: WarningKind,
    /// The file concerned, if any.
    pub path: Option<PathBuf>,
    /// Plain-words description.
    pub message: String,
}

/// The kinds of [`Warning`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum WarningKind {
    /// The file stores no metadata checksum (an FFRecord file from before the checksum was
    /// introduced, marked by a stored value of 0), so its header could not be verified.
    MetadataChecksumAbsent,
    /// The data follows an older generation of the format.
    LegacyLayout,
    /// The file has bytes the format does not account for (ignored by readers).
    TrailingBytes,
    /// Something the reference implementation does is reproduced here although it looks
    /// like a bug (see the format crate's documentation).
    ReferenceQuirk,
    /// The directory's files are numbered parts (`PART_00000.ffr`, `part-00001.syr` …) with
    /// numbers missing between them or before the first: the dataset is read without them,
    /// as the reference reads it, but records the user expects are probably absent.
    MissingParts,
}

/// What a source is: format, version, schema, files and warnings from opening it.
#[derive(Clone, Debug, Default)]
pub struct SourceInfo {
    /// The format's name (`"ffrecord"`, `"syrah"`, …).
    pub format: &'static str,
    /// The format version or generation the files follow, when it can be told.
    pub version: Option<String>,
    /// The fields every record has, when the format declares them.
    pub schema: Option<Vec<FieldSpec>>,
    /// The files the source reads.
    pub paths: Vec<PathBuf>,
    /// What the reader noticed while opening.
    pub warnings: Vec<Warning>,
    /// Format-specific facts for people (`reel inspect`): index sizes, generations,
    /// checksum state, chunk counts, as (name, value) pairs in display order.
    pub facts: Vec<(String, String)>,
}

impl SourceInfo {
    /// Info for `format` with nothing else filled in.
    pub fn new(format: &'static str) -> Self {
        SourceInfo { format, ..Default::default() }
    }
}

/// A dataset that can be read record by record and in batches, by many threads at once.
///
/// The trait is object-safe: `Box<dyn RecordSource>` is what
/// [`reel::open`](https://docs.rs/reel) returns. Reads take `&self`; the per-read state
/// lives in the [`Record`] or [`RecordBatch`] the caller passes in, so sharing one source
/// between threads needs no locking.
pub trait RecordSource: Send + Sync {
    /// Format, version, schema, files and warnings.
    fn info(&self) -> &SourceInfo;

    /// Number of records.
    fn len(&self) -> u64;

    /// Whether the source has no records.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Reads record `index` into `out`, replacing its content.
    fn read_into(&self, index: u64, out: &mut Record) -> Result<()>;

    /// Reads the records at `indices` (any order, duplicates allowed) into `out`, in the order
    /// asked. On error `out` is left empty.
    fn read_batch_into(&self, indices: &[u64], out: &mut RecordBatch) -> Result<()>;

    /// [`read_batch_into`](Self::read_batch_into), except that records may point into the
    /// backend's memory instead of holding a copy: when the backend holds the files in
    /// memory ([`ReadAt::shared_bytes`](crate::ReadAt::shared_bytes): mmap, memory, `auto`)
    /// and lends the batch ([`ReadAt::lends`](crate::ReadAt::lends): `auto` only while its
    /// pages are cached), and the
    /// format's records are their raw bytes
    /// ([`Layout::decodes_in_place`](crate::Layout::decodes_in_place): FFRecord), a batch
    /// whose records average at least [`BORROW_MIN_RECORD`](crate::BORROW_MIN_RECORD) is
    /// checked (checksums) where it lies and handed out without a copy (smaller records
    /// measured faster copied). The batch then
    /// holds a share of each file its records point into, so the bytes stay valid as long
    /// as the batch holds the records, even after the source is dropped. Otherwise, and by
    /// default, it copies as `read_batch_into` does.
    fn read_batch_borrowed(&self, indices: &[u64], out: &mut RecordBatch) -> Result<()> {
        self.read_batch_into(indices, out)
    }

    /// Tells the source which batch will be read next (with
    /// [`read_batch_into`](Self::read_batch_into), by the thread that calls this), while it
    /// reads this one: a source over a backend that reads asynchronously plans those
    /// records and hands their reads to [`ReadAt::will_read`](crate::ReadAt::will_read), so
    /// the device works on the next batch while this one's last reads complete.
    /// [`BatchStream`](crate::stream::BatchStream) calls it with the batch after the one it
    /// is about to read, when one helper thread reads them all in turn. Only a hint: it
    /// reads nothing the caller sees, fails never (a bad index is reported by the read
    /// proper), and by default does nothing.
    fn will_read(&self, indices: &[u64]) {
        let _ = indices;
    }

    /// The I/O backend the source reads through.
    fn backend_name(&self) -> &'static str {
        "none"
    }

    /// Appends to `ranges` the byte ranges record `index` is stored in: the ranges its
    /// format plans to read it from ([`Layout::plan`](crate::Layout::plan)), in plan order,
    /// without reading them. Returns `false`, appending nothing, when the source cannot tell
    /// (rows of a Parquet file, records made in memory). File numbers name files through
    /// [`file_path`](Self::file_path). [`RecordSourceExt::location`] sums this up.
    fn locate(&self, index: u64, ranges: &mut Vec<ReadRange>) -> Result<bool> {
        let _ = (index, ranges);
        Ok(false)
    }

    /// [`locate`](Self::locate) for the records at `indices`, into `out` (cleared first):
    /// one entry per index, in order. Returns `false`, leaving `out` empty, when the source
    /// cannot tell; on an error `out` is left empty too. The default locates one record at a
    /// time. A format that reads metadata to locate a record (Granular with its indexes left
    /// on disk reads their entries) overrides it to read that metadata once for the whole
    /// batch, which from object storage is one request instead of one per record.
    fn locate_many(&self, indices: &[u64], out: &mut Located) -> Result<bool> {
        out.locate_each(indices, |index, ranges| self.locate(index, ranges))
    }

    /// The path (or URL) of file number `file` of the ranges [`locate`](Self::locate) gives;
    /// `None` for a number it never gives.
    fn file_path(&self, file: u32) -> Option<&Path> {
        let _ = file;
        None
    }
}

/// Where a record is stored, in brief ([`RecordSourceExt::location`]): the file of its first
/// (non-empty) byte range, and the smallest byte range of that file holding every range of
/// the record in it. For a record stored in one file (every format but Granular, which stores a datapoint
/// as one record per key, each key in its own file) that range holds the whole record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Location<'a> {
    /// The file (a URL for a dataset read from object storage).
    pub path: &'a Path,
    /// Byte offset of the range in the file.
    pub offset: u64,
    /// Length of the range in bytes.
    pub len: u64,
}

impl<'a> Location<'a> {
    /// The location `ranges` (a record's, as [`RecordSource::locate`] gives them) sum up to,
    /// with `path` naming their files; `None` when there are no ranges or the first range's
    /// file has no path.
    pub fn of_ranges(
        ranges: &[ReadRange],
        path: impl FnOnce(u32) -> Option<&'a Path>,
    ) -> Option<Location<'a>> {
        // An empty range (an empty value of one Granular key) holds nothing to point at.
        let first = ranges.iter().find(|r| r.len > 0).or(ranges.first())?;
        let same_file = ranges.iter().filter(|r| r.file == first.file);
        let start = same_file.clone().map(|r| r.offset).min()?;
        let end = same_file.map(|r| r.offset.saturating_add(r.len)).max()?;
        Some(Location { path: path(first.file)?, offset: start, len: end - start })
    }
}

/// Where the records of a batch are stored ([`RecordSource::locate_many`]): each record's
/// byte ranges, one entry per record asked for, in order.
#[derive(Clone, Debug, Default)]
pub struct Located {
    ranges: Vec<ReadRange>,
    /// Per record: the end of its ranges in `ranges`.
    ends: Vec<usize>,
}

impl Located {
    /// No records (the buffers are kept for reuse).
    pub fn clear(&mut self) {
        self.ranges.clear();
        self.ends.clear();
    }

    /// Number of records located.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether no record is located.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The byte ranges of the `k`-th record, as [`RecordSource::locate`] gives them.
    pub fn ranges(&self, k: usize) -> Option<&[ReadRange]> {
        let end = *self.ends.get(k)?;
        let start = k.checked_sub(1).map_or(0, |j| self.ends[j]);
        self.ranges.get(start..end)
    }

    /// The `k`-th record's location in brief ([`Location::of_ranges`]), its files named by
    /// `source` (the source that located it).
    pub fn location<'s>(&self, k: usize, source: &'s dyn RecordSource) -> Option<Location<'s>> {
        Location::of_ranges(self.ranges(k)?, |file| source.file_path(file))
    }

    /// Clears, then locates the records at `indices` one by one with `locate`, which
    /// appends a record's ranges as [`RecordSource::locate`] does (what an implementation
    /// of [`RecordSource::locate_many`] calls, with whatever it read once for the batch).
    /// The first failure or `false` is returned, leaving nothing located.
    pub fn locate_each(
        &mut self,
        indices: &[u64],
        mut locate: impl FnMut(u64, &mut Vec<ReadRange>) -> Result<bool>,
    ) -> Result<bool> {
        self.clear();
        for &index in indices {
            match locate(index, &mut self.ranges) {
                Ok(true) => self.ends.push(self.ranges.len()),
                other => {
                    self.clear();
                    return other;
                }
            }
        }
        Ok(true)
    }
}

/// Convenience methods for every [`RecordSource`].
pub trait RecordSourceExt: RecordSource {
    /// Reads record `index` into a new [`Record`].
    fn read(&self, index: u64) -> Result<Record> {
        let mut r = Record::new();
        self.read_into(index, &mut r)?;
        Ok(r)
    }

    /// Reads the records at `indices` into a new batch.
    fn read_batch(&self, indices: &[u64]) -> Result<RecordBatch> {
        let mut b = RecordBatch::new();
        self.read_batch_into(indices, &mut b)?;
        Ok(b)
    }

    /// Reads as many of `indices` as fit in one batch, from the front, into `batch`, and
    /// returns how many that was (at least one, unless `indices` is empty). A batch refused
    /// with [`ErrorKind::Limit`](crate::ErrorKind::Limit) — over
    /// [`Limits::max_batch_bytes`](crate::Limits::max_batch_bytes), or too large to
    /// allocate — is halved and retried, down to one record, whose own error is returned.
    /// Tools that stream a whole dataset (`verify`, `cat`, `convert`) loop on this, so
    /// records that point at the same bytes cannot add up to a batch beyond the budget.
    fn read_batch_fitting(&self, indices: &[u64], batch: &mut RecordBatch) -> Result<usize> {
        let mut n = indices.len();
        loop {
            match self.read_batch_into(&indices[..n], batch) {
                Ok(()) => return Ok(n),
                Err(e) if e.kind() == crate::ErrorKind::Limit && n > 1 => n /= 2,
                Err(e) => return Err(e),
            }
        }
    }

    /// Where record `index` is stored ([`Location`], from [`locate`](RecordSource::locate));
    /// `None` when the source cannot tell or the record has no bytes in files. `ranges` is
    /// scratch space, reused across calls.
    fn location(&self, index: u64, ranges: &mut Vec<ReadRange>) -> Result<Option<Location<'_>>> {
        ranges.clear();
        if !self.locate(index, ranges)? {
            return Ok(None);
        }
        Ok(Location::of_ranges(ranges, |file| self.file_path(file)))
    }

    /// Every record in order.
    fn iter(&self) -> Iter<'_, Self> {
        Iter { source: self, next: 0, len: self.len() }
    }

    /// Consecutive batches of `size` records (the last may be shorter), each in a new batch.
    /// For a loop that reuses one batch, call `read_batch_into` with index ranges instead.
    fn batches(&self, size: usize) -> Batches<'_, Self> {
        Batches { source: self, next: 0, len: self.len(), size: size.max(1) as u64 }
    }
}

impl<T: RecordSource + ?Sized> RecordSourceExt for T {}

/// Iterator over every record of a source; see [`RecordSourceExt::iter`].
pub struct Iter<'a, S: ?Sized> {
    source: &'a S,
    next: u64,
    len: u64,
}

impl<S: RecordSource + ?Sized> Iterator for Iter<'_, S> {
    type Item = Result<Record>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.next >= self.len {
            return None;
        }
        let i = self.next;
        self.next += 1;
        Some(self.source.read(i))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = usize::try_from(self.len - self.next).unwrap_or(usize::MAX);
        (n, Some(n))
    }
}

/// Iterator over consecutive batches; see [`RecordSourceExt::batches`].
pub struct Batches<'a, S: ?Sized> {
    source: &'a S,
    next: u64,
    len: u64,
    size: u64,
}

impl<S: RecordSource + ?Sized> Iterator for Batches<'_, S> {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.next >= self.len {
            return None;
        }
        let end = self.len.min(self.next.saturating_add(self.size));
        let indices: Vec<u64> = (self.next..end).collect();
        self.next = end;
        Some(self.source.read_batch(&indices))
    }
}

macro_rules! forward_source {
    ($($ty:ty),*) => {$(
        impl<T: RecordSource + ?Sized> RecordSource for $ty {
            fn info(&self) -> &SourceInfo {
                (**self).info()
            }
            fn len(&self) -> u64 {
                (**self).len()
            }
            fn read_into(&self, index: u64, out: &mut Record) -> Result<()> {
                (**self).read_into(index, out)
            }
            fn read_batch_into(&self, indices: &[u64], out: &mut RecordBatch) -> Result<()> {
                (**self).read_batch_into(indices, out)
            }
            fn read_batch_borrowed(&self, indices: &[u64], out: &mut RecordBatch) -> Result<()> {
                (**self).read_batch_borrowed(indices, out)
            }
            fn will_read(&self, indices: &[u64]) {
                (**self).will_read(indices)
            }
            fn backend_name(&self) -> &'static str {
                (**self).backend_name()
            }
            fn locate(&self, index: u64, ranges: &mut Vec<ReadRange>) -> Result<bool> {
                (**self).locate(index, ranges)
            }
            fn locate_many(&self, indices: &[u64], out: &mut Located) -> Result<bool> {
                (**self).locate_many(indices, out)
            }
            fn file_path(&self, file: u32) -> Option<&Path> {
                (**self).file_path(file)
            }
        }
    )*};
}

forward_source!(Box<T>, Arc<T>, &T);
