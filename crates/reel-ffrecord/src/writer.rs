//! Writing FFRecord files, byte-identical to the reference writer.

use std::fs::File;
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use reel_core::{
    Error, ErrorKind, RecordRef, RecordSink, Result, SinkSummary, StagedDir, StagedFile,
    UnfinishedGuard, ValueRef,
};

use crate::FORMAT;
use crate::header::{header_len, meta_crc};

const BUFFER: usize = 1 << 20;

/// Writes one `.ffr` file.
///
/// Like the reference, records are laid out back to back after a `12 + 12·n` byte header,
/// and the header is written on [`finish`](Self::finish). Two ways to give `n`:
///
/// * [`create`](Self::create) takes it up front, as the reference does; records are written
///   in place after a hole for the header.
/// * [`create_counted`](Self::create_counted) counts records as they come. The data is
///   staged in a second temporary file and copied behind the header on finish (with
///   `copy_file_range` where the OS has it), so it costs one extra copy of the data.
///
/// [`append`](Self::append) takes a record of one `Bytes` field (as every reel writer's
/// `append` takes a record); [`write_one`](Self::write_one), the reference's name, takes the
/// bytes themselves.
///
/// ```no_run
/// use reel_ffrecord::prelude::*;
///
/// # fn main() -> reel_ffrecord::core::Result<()> {
/// let mut writer = FfrecordWriter::create_counted("data.ffr")?;
/// writer.append(&Record::from_bytes(b"first"))?;
/// writer.write_one(b"second")?;
/// assert_eq!(writer.records(), 2);
/// writer.finish()?;
/// # Ok(()) }
/// ```
///
/// Differences from the reference, all deliberate:
///
/// * Output is staged under a temporary name and renamed into place after `fsync`; a
///   writer dropped before `finish` leaves nothing behind (the reference leaves a file whose
///   zeroed header reads as a valid empty dataset).
/// * Finishing with fewer records than promised is an [`ErrorKind::InvalidInput`] error;
///   the writer stays usable, so the missing records can still be written. The reference
///   aborts the process.
/// * Every write's result is checked (the reference ignores the header writes' results).
/// * Files are created with the process umask (typically 0644), not 0700.
pub struct FfrecordWriter {
    path: PathBuf,
    promised: Option<u64>,
    target: Option<StagedFile>,
    data_stage: Option<StagedFile>,
    out: Option<BufWriter<File>>,
    checksums: Vec<u32>,
    /// Offsets relative to the start of the data area.
    offsets: Vec<u64>,
    data_len: u64,
    broken: bool,
    pub(crate) unfinished: UnfinishedGuard,
}

impl FfrecordWriter {
    /// A writer for exactly `n` records at `path`.
    pub fn create(path: impl AsRef<Path>, n: u64) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        let hlen = header_len(n).filter(|&h| h <= i64::MAX as u64).ok_or_else(|| {
            Error::invalid_input(format!("{n} records cannot be described by a header"))
        })?;
        let target = StagedFile::create(&path).map_err(|e| e.with_format(FORMAT))?;
        let mut file =
            target.file().try_clone().map_err(|e| Error::io(e, "cannot clone file handle"))?;
        file.seek(SeekFrom::Start(hlen))
            .map_err(|e| Error::io(e, "cannot seek").with_path(&path))?;
        let cap = n.min(1 << 20) as usize;
        Ok(FfrecordWriter {
            path: path.clone(),
            promised: Some(n),
            target: Some(target),
            data_stage: None,
            out: Some(BufWriter::with_capacity(BUFFER, file)),
            checksums: Vec::with_capacity(cap),
            offsets: Vec::with_capacity(cap),
            data_len: 0,
            broken: false,
            unfinished: UnfinishedGuard::new(FORMAT, &path),
        })
    }

    /// A writer that counts its records and writes the header on finish.
    pub fn create_counted(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        let target = StagedFile::create(&path).map_err(|e| e.with_format(FORMAT))?;
        let data_stage = StagedFile::create(&path).map_err(|e| e.with_format(FORMAT))?;
        let file =
            data_stage.file().try_clone().map_err(|e| Error::io(e, "cannot clone file handle"))?;
        Ok(FfrecordWriter {
            path: path.clone(),
            promised: None,
            target: Some(target),
            data_stage: Some(data_stage),
            out: Some(BufWriter::with_capacity(BUFFER, file)),
            checksums: Vec::new(),
            offsets: Vec::new(),
            data_len: 0,
            broken: false,
            unfinished: UnfinishedGuard::new(FORMAT, &path),
        })
    }

    /// Records promised at creation (`None` for a counting writer).
    pub fn n(&self) -> Option<u64> {
        self.promised
    }

    /// Records written so far (the index the next one gets).
    #[doc(alias = "count")]
    pub fn records(&self) -> u64 {
        self.checksums.len() as u64
    }

    fn check_open(&self) -> Result<()> {
        if self.out.is_none() {
            return Err(Error::new(ErrorKind::Closed, "the writer is already finished")
                .with_path(&self.path));
        }
        if self.broken {
            return Err(Error::new(
                ErrorKind::Io,
                "an earlier write failed; the writer cannot continue (nothing was saved)",
            )
            .with_path(&self.path));
        }
        Ok(())
    }

    fn check_room(&self) -> Result<()> {
        if let Some(n) = self.promised
            && self.records() >= n
        {
            return Err(Error::invalid_input(format!(
                "the writer was created for {n} records (indices 0 to {}); one more does not fit",
                n.saturating_sub(1)
            ))
            .with_path(&self.path));
        }
        Ok(())
    }

    /// Appends a record (one `Bytes` field, as [`FfrecordReader`](crate::FfrecordReader)
    /// returns them) and returns its index. `&record` and `record.view()` both work.
    pub fn append<'a>(&mut self, record: impl Into<RecordRef<'a>>) -> Result<u64> {
        let data = record_payload(&record.into()).map_err(|e| self.context(e))?;
        self.write_one(data)
    }

    /// Appends one record given as its bytes and returns its index: the reference's
    /// `FileWriter.write_one`, an alias of [`append`](Self::append) for raw bytes.
    pub fn write_one(&mut self, data: &[u8]) -> Result<u64> {
        self.check_open().map_err(|e| self.context(e))?;
        self.check_room().map_err(|e| self.context(e))?;
        let out = self.out.as_mut().ok_or_else(|| Error::new(ErrorKind::Closed, "finished"))?;
        let written = out.write_all(data).map_err(|e| Error::io(e, "cannot write record"));
        self.record_written(written.map(|()| reel_core::checksum::crc32(data)), data.len() as u64)
    }

    /// Appends one record of exactly `len` bytes read from `reader`, without holding it in
    /// memory (for packing large files).
    pub fn write_one_from(&mut self, reader: impl Read, len: u64) -> Result<u64> {
        self.check_open().map_err(|e| self.context(e))?;
        self.check_room().map_err(|e| self.context(e))?;
        let out = self.out.as_mut().ok_or_else(|| Error::new(ErrorKind::Closed, "finished"))?;
        let crc = copy_with_crc(reader, out, len);
        self.record_written(crc, len)
    }

    /// Names the format, the file and the record an append failed on.
    fn context(&self, e: Error) -> Error {
        e.with_format(FORMAT).with_path(&self.path).with_record(self.records())
    }

    /// Books a record whose bytes went out (or marks the writer broken if they did not:
    /// the file no longer matches the tables, so nothing more can be written).
    fn record_written(&mut self, crc: Result<u32>, len: u64) -> Result<u64> {
        match crc {
            Ok(crc) => {
                self.checksums.push(crc);
                self.offsets.push(self.data_len);
                self.data_len += len;
                Ok(self.records() - 1)
            }
            Err(e) => {
                self.broken = true;
                Err(self.context(e))
            }
        }
    }

    /// Writes the header, makes the file durable and moves it into place.
    pub fn finish(&mut self) -> Result<SinkSummary> {
        self.check_open().map_err(|e| e.with_format(FORMAT))?;
        if let Some(n) = self.promised
            && self.records() != n
        {
            return Err(Error::invalid_input(format!(
                "the writer was created for {n} records but {} were written; nothing was saved \
                 yet (write the rest, then finish again)",
                self.records()
            ))
            .with_path(&self.path)
            .with_format(FORMAT));
        }
        self.unfinished.finished();
        let result = self.finish_inner();
        if result.is_err() {
            self.broken = true;
        }
        result.map_err(|e| e.with_path(&self.path).with_format(FORMAT))
    }

    fn finish_inner(&mut self) -> Result<SinkSummary> {
        let io = |e: std::io::Error| Error::io(e, "cannot write FFRecord file");
        let out = self.out.take().ok_or_else(|| Error::new(ErrorKind::Closed, "finished"))?;
        let data_file = out.into_inner().map_err(|e| io(e.into_error()))?;
        let target = self.target.take().ok_or_else(|| Error::new(ErrorKind::Closed, "finished"))?;
        let n = self.records();
        let hlen = header_len(n).ok_or_else(|| Error::invalid_input("too many records"))?;
        let abs: Vec<u64> = self.offsets.iter().map(|o| o + hlen).collect();
        let crc = meta_crc(&self.checksums, &abs);

        let mut header = BufWriter::with_capacity(BUFFER, target.file().try_clone().map_err(io)?);
        header.seek(SeekFrom::Start(0)).map_err(io)?;
        header.write_all(&crc.to_le_bytes()).map_err(io)?;
        header.write_all(&(n as i64).to_le_bytes()).map_err(io)?;
        for c in &self.checksums {
            header.write_all(&c.to_le_bytes()).map_err(io)?;
        }
        for o in &abs {
            header.write_all(&o.to_le_bytes()).map_err(io)?;
        }
        let mut header = header.into_inner().map_err(|e| io(e.into_error()))?;
        if self.data_stage.is_some() {
            // Counted mode: the data waits in its own file; put it behind the header.
            let mut data = data_file;
            data.seek(SeekFrom::Start(0)).map_err(io)?;
            let copied = std::io::copy(&mut data, &mut header).map_err(io)?;
            if copied != self.data_len {
                return Err(Error::new(
                    ErrorKind::Io,
                    format!("copied {copied} bytes of record data, expected {}", self.data_len),
                ));
            }
        }
        drop(header);
        target.commit()?;
        self.data_stage = None;
        Ok(SinkSummary { records: n, bytes: hlen + self.data_len, paths: vec![self.path.clone()] })
    }
}

/// Copies exactly `len` bytes from `reader` to `out` and returns their CRC-32.
fn copy_with_crc(mut reader: impl Read, out: &mut impl Write, len: u64) -> Result<u32> {
    let mut hasher = reel_core::checksum::Crc32::new();
    let mut buf = vec![0u8; len.min(BUFFER as u64) as usize];
    let mut left = len;
    while left > 0 {
        let want = left.min(buf.len() as u64) as usize;
        let got = match reader.read(&mut buf[..want]) {
            Ok(0) => {
                return Err(Error::invalid_input(format!(
                    "record source ended after {} of {len} bytes",
                    len - left
                )));
            }
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(Error::io(e, "cannot read record data")),
        };
        hasher.update(&buf[..got]);
        out.write_all(&buf[..got]).map_err(|e| Error::io(e, "cannot write record"))?;
        left -= got as u64;
    }
    Ok(hasher.finalize())
}

/// The bytes an FFRecord record is made of: the single `Bytes` field of `record`.
pub(crate) fn record_payload<'a>(record: &RecordRef<'a>) -> Result<&'a [u8]> {
    match (record.len(), record.field(0)) {
        (1, Some((_, ValueRef::Bytes(b)))) => Ok(b),
        _ => Err(Error::schema(format!(
            "an FFRecord record is one bytes field; this record has {} field(s) ({})",
            record.len(),
            record
                .iter()
                .map(|(n, v)| format!("{n}: {}", v.kind_name()))
                .collect::<Vec<_>>()
                .join(", ")
        ))
        .with_format(FORMAT)),
    }
}

impl RecordSink for FfrecordWriter {
    fn append_ref(&mut self, record: RecordRef<'_>) -> Result<u64> {
        self.append(record)
    }

    fn records(&self) -> u64 {
        FfrecordWriter::records(self)
    }

    fn finish(&mut self) -> Result<SinkSummary> {
        FfrecordWriter::finish(self)
    }
}

/// Writes a dataset as a directory of `PART_%05d.ffr` files holding consecutive index
/// ranges, like the reference's `ffrecord.utils.dump(dataset, dir, nfiles)`.
///
/// With `total` records and `nfiles` parts, each part holds `ceil(total / nfiles)` records
/// (the last one fewer), so there may be fewer parts than asked for. The directory is
/// staged and appears complete on [`finish`](Self::finish).
pub struct FfrecordPartsWriter {
    staged: Option<StagedDir>,
    total: u64,
    per_part: u64,
    written: u64,
    part_index: u32,
    current: Option<FfrecordWriter>,
    bytes: u64,
    unfinished: UnfinishedGuard,
}

impl FfrecordPartsWriter {
    /// A writer of `total` records into about `nfiles` parts under directory `dir`.
    pub fn create(dir: impl AsRef<Path>, total: u64, nfiles: u64) -> Result<Self> {
        if nfiles == 0 {
            return Err(Error::invalid_input("nfiles must be at least 1").with_format(FORMAT));
        }
        let staged = StagedDir::create(dir.as_ref()).map_err(|e| e.with_format(FORMAT))?;
        let unfinished = UnfinishedGuard::new(FORMAT, dir.as_ref());
        Ok(FfrecordPartsWriter {
            unfinished,
            staged: Some(staged),
            total,
            per_part: total.div_ceil(nfiles).max(1),
            written: 0,
            part_index: 0,
            current: None,
            bytes: 0,
        })
    }

    /// The name of part `k`.
    pub fn part_name(k: u32) -> String {
        format!("PART_{k:05}.ffr")
    }

    /// Records written so far (the index the next one gets).
    #[doc(alias = "count")]
    pub fn records(&self) -> u64 {
        self.written
    }

    /// Appends a record (one `Bytes` field) and returns its index.
    pub fn append<'a>(&mut self, record: impl Into<RecordRef<'a>>) -> Result<u64> {
        let data = record_payload(&record.into())
            .map_err(|e| e.with_format(FORMAT).with_record(self.written))?;
        self.write_one(data)
    }

    /// Appends one record given as its bytes: the reference's name, an alias of
    /// [`append`](Self::append) for raw bytes.
    pub fn write_one(&mut self, data: &[u8]) -> Result<u64> {
        let index = self.written;
        self.write_one_inner(data).map_err(|e| e.with_format(FORMAT).with_record(index))
    }

    fn write_one_inner(&mut self, data: &[u8]) -> Result<u64> {
        let staged =
            self.staged.as_ref().ok_or_else(|| Error::new(ErrorKind::Closed, "finished"))?;
        if self.written >= self.total {
            return Err(Error::invalid_input(format!(
                "the writer was created for {} records (indices 0 to {}); one more does not fit",
                self.total,
                self.total.saturating_sub(1)
            )));
        }
        if self.current.is_none() {
            let n = self.per_part.min(self.total - self.written);
            let path = staged.path().join(Self::part_name(self.part_index));
            let mut part = FfrecordWriter::create(path, n)?;
            // This writer warns for the whole directory; a part must not warn again.
            part.unfinished.finished();
            self.current = Some(part);
        }
        if let Some(w) = self.current.as_mut() {
            w.write_one(data)?;
            if Some(w.records()) == w.n() {
                self.bytes += w.finish()?.bytes;
                self.current = None;
                self.part_index += 1;
            }
        }
        self.written += 1;
        Ok(self.written - 1)
    }

    /// Checks the count, syncs every part and moves the directory into place.
    pub fn finish(&mut self) -> Result<SinkSummary> {
        if self.written != self.total {
            return Err(Error::invalid_input(format!(
                "the writer was created for {} records but {} were written",
                self.total, self.written
            ))
            .with_format(FORMAT));
        }
        self.unfinished.finished();
        let staged = self.staged.take().ok_or_else(|| Error::new(ErrorKind::Closed, "finished"))?;
        if self.total == 0 {
            // No record, no part: one part of no records, so that the directory opens as
            // the empty dataset it is (a directory with no `.ffr` file is no dataset).
            let mut empty = FfrecordWriter::create(staged.path().join(Self::part_name(0)), 0)?;
            self.bytes += empty.finish()?.bytes;
        }
        let path = staged.final_path().to_path_buf();
        staged.commit()?;
        Ok(SinkSummary { records: self.written, bytes: self.bytes, paths: vec![path] })
    }
}

impl RecordSink for FfrecordPartsWriter {
    fn append_ref(&mut self, record: RecordRef<'_>) -> Result<u64> {
        self.append(record)
    }

    fn records(&self) -> u64 {
        self.written
    }

    fn finish(&mut self) -> Result<SinkSummary> {
        FfrecordPartsWriter::finish(self)
    }
}

/// Writes `records` to `path` like `ffrecord.utils.dump`: one file when `nfiles == 1`,
/// otherwise a directory of `PART_%05d.ffr` parts.
pub fn dump<I, B>(records: I, path: impl AsRef<Path>, nfiles: u64) -> Result<SinkSummary>
where
    I: IntoIterator<Item = B>,
    I::IntoIter: ExactSizeIterator,
    B: AsRef<[u8]>,
{
    let records = records.into_iter();
    let total = records.len() as u64;
    if nfiles == 1 {
        let mut w = FfrecordWriter::create(path, total)?;
        for r in records {
            w.write_one(r.as_ref())?;
        }
        w.finish()
    } else {
        let mut w = FfrecordPartsWriter::create(path, total, nfiles)?;
        for r in records {
            w.write_one(r.as_ref())?;
        }
        w.finish()
    }
}
