//! Writing OFRecord part files: one file, or a directory of parts rolled by count or size.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use reel_core::{
    Error, ErrorKind, RecordRef, RecordSink, Result, SealedFile, SinkSummary, StagedDir,
    StagedFile, UnfinishedGuard,
};

use crate::FORMAT;
use crate::decode::decode_record;
use crate::encode::{EncodeOptions, encode_record_into};
use crate::frames::{LENGTH_FIELD, MAX_PROTOBUF_MESSAGE};
use crate::parts::PartNaming;
use crate::proto::{OfRecord, encode_proto_into};

const BUFFER: usize = 1 << 20;

/// How to write an OFRecord dataset.
#[derive(Clone, Debug)]
pub struct OfrecordWriterOptions {
    /// Part file names (default: `part-00000`, `part-00001`, …; read them with OneFlow's
    /// `part_name_suffix_length=5`).
    pub naming: PartNaming,
    /// Start a new part after this many records (default: no limit).
    pub max_records_per_part: Option<u64>,
    /// Start a new part before a frame that would take the part above this many bytes
    /// (default: no limit). A single frame larger than this gets a part of its own.
    pub max_bytes_per_part: Option<u64>,
    /// How core values without an exact OFRecord form are handled.
    pub encode: EncodeOptions,
    /// Refuse records current OneFlow cannot read: a record with no features (it
    /// serializes to a zero-length frame, on which OneFlow aborts). Off by default, so
    /// that every dataset reel reads can be written back unchanged.
    pub oneflow_strict: bool,
}

impl Default for OfrecordWriterOptions {
    fn default() -> Self {
        OfrecordWriterOptions {
            naming: PartNaming::padded5(),
            max_records_per_part: None,
            max_bytes_per_part: None,
            encode: EncodeOptions::default(),
            oneflow_strict: false,
        }
    }
}

impl OfrecordWriterOptions {
    /// Uses `naming` for part files.
    pub fn naming(mut self, naming: PartNaming) -> Self {
        self.naming = naming;
        self
    }

    /// Starts a new part every `n` records.
    pub fn max_records_per_part(mut self, n: u64) -> Self {
        self.max_records_per_part = Some(n);
        self
    }

    /// Starts a new part before a part would exceed `bytes`.
    pub fn max_bytes_per_part(mut self, bytes: u64) -> Self {
        self.max_bytes_per_part = Some(bytes);
        self
    }

    /// Uses `encode` for values without an exact OFRecord form.
    pub fn encode(mut self, encode: EncodeOptions) -> Self {
        self.encode = encode;
        self
    }

    /// Turns OneFlow-strict checking on or off.
    pub fn oneflow_strict(mut self, on: bool) -> Self {
        self.oneflow_strict = on;
        self
    }
}

/// Turns records into frames: the reusable payload buffer and the checks every frame
/// passes before it is written.
struct FrameEncoder {
    payload: Vec<u8>,
    encode: EncodeOptions,
    strict: bool,
}

impl FrameEncoder {
    fn new(options: &OfrecordWriterOptions) -> Self {
        FrameEncoder { payload: Vec::new(), encode: options.encode, strict: options.oneflow_strict }
    }

    fn record(&mut self, record: RecordRef<'_>) -> Result<&[u8]> {
        self.payload.clear();
        encode_record_into(record, self.encode, &mut self.payload)?;
        self.checked()
    }

    fn proto(&mut self, record: &OfRecord) -> Result<&[u8]> {
        self.payload.clear();
        encode_proto_into(record, &mut self.payload)?;
        self.checked()
    }

    fn serialized(&mut self, payload: &[u8]) -> Result<&[u8]> {
        decode_record(payload).map_err(|e| {
            Error::invalid_input(format!("not a valid serialized OFRecord: {}", e.message()))
                .with_format(FORMAT)
        })?;
        self.payload.clear();
        self.payload.extend_from_slice(payload);
        self.checked()
    }

    fn checked(&self) -> Result<&[u8]> {
        let len = self.payload.len() as u64;
        if len > MAX_PROTOBUF_MESSAGE {
            return Err(Error::invalid_input(format!(
                "the record serializes to {len} bytes; protobuf, and so OneFlow, cannot parse a \
                 message of 2 GiB or more"
            ))
            .with_format(FORMAT));
        }
        if self.strict && len == 0 {
            return Err(Error::invalid_input(
                "the record has no features, so it serializes to a zero-length frame, which \
                 current OneFlow aborts on (oneflow_strict is on)",
            )
            .with_format(FORMAT));
        }
        Ok(&self.payload)
    }
}

/// Writes one frame; returns its size.
fn write_frame(out: &mut impl Write, payload: &[u8]) -> std::io::Result<u64> {
    out.write_all(&(payload.len() as i64).to_le_bytes())?;
    out.write_all(payload)?;
    Ok(LENGTH_FIELD + payload.len() as u64)
}

struct PartOut {
    out: BufWriter<File>,
    /// The part's file name in the dataset directory.
    name: String,
    records: u64,
    bytes: u64,
}

/// Writes an OFRecord dataset: a directory of part files (`part-00000`, …).
///
/// Records are encoded as protobuf's deterministic serialization would (map entries in
/// key order; see [`encode_record`](crate::encode_record) for the value mapping) and framed
/// as `i64 little-endian length + payload`, OneFlow's format. A new part starts after
/// [`max_records_per_part`](OfrecordWriterOptions::max_records_per_part) records, before
/// [`max_bytes_per_part`](OfrecordWriterOptions::max_bytes_per_part) would be exceeded, or
/// when [`start_new_part`](Self::start_new_part) is called. Frames never cross parts and
/// no part is ever empty (OneFlow stops on an empty part), except that a dataset of zero
/// records is one empty `part-00000`.
///
/// The directory is written under a temporary name beside the target and moved into place
/// by [`finish`](Self::finish) after every part is synced, so a writer dropped early (or a
/// crash) leaves nothing at the target path. The target must not exist, or be an empty
/// directory.
pub struct OfrecordWriter {
    staged: Option<StagedDir>,
    path: PathBuf,
    options: OfrecordWriterOptions,
    encoder: FrameEncoder,
    part: Option<PartOut>,
    next_part: u64,
    records: u64,
    bytes: u64,
    broken: bool,
    /// Parts closed before `finish`, not yet taken by [`RecordSink::take_sealed`].
    sealed: Vec<SealedFile>,
    unfinished: UnfinishedGuard,
}

impl OfrecordWriter {
    /// A writer of a dataset directory at `dir` with default options (one part).
    pub fn create(dir: impl AsRef<Path>) -> Result<Self> {
        Self::create_with(dir, &OfrecordWriterOptions::default())
    }

    /// A writer of a dataset directory at `dir`.
    pub fn create_with(dir: impl AsRef<Path>, options: &OfrecordWriterOptions) -> Result<Self> {
        if options.max_records_per_part == Some(0) {
            return Err(
                Error::invalid_input("max_records_per_part must be at least 1").with_format(FORMAT)
            );
        }
        let path = dir.as_ref().to_path_buf();
        let staged = StagedDir::create(&path).map_err(|e| e.with_format(FORMAT))?;
        Ok(OfrecordWriter {
            staged: Some(staged),
            unfinished: UnfinishedGuard::new(FORMAT, &path),
            path,
            encoder: FrameEncoder::new(options),
            options: options.clone(),
            part: None,
            next_part: 0,
            records: 0,
            bytes: 0,
            broken: false,
            sealed: Vec::new(),
        })
    }

    /// Records written so far (the index the next one gets).
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Part files started so far.
    pub fn parts(&self) -> u64 {
        self.next_part
    }

    /// Appends a record (see [`encode_record`](crate::encode_record) for how its fields
    /// become features) and returns its index; `&record` and `record.view()` both work.
    pub fn append<'a>(&mut self, record: impl Into<RecordRef<'a>>) -> Result<u64> {
        let record = record.into();
        self.append_encoded(|e| e.record(record).map(drop))
    }

    /// An alias of [`append`](Self::append), the name earlier reel versions used.
    pub fn write_record(&mut self, record: RecordRef<'_>) -> Result<u64> {
        self.append(record)
    }

    /// Appends a record given as the prost message.
    pub fn write_proto(&mut self, record: &OfRecord) -> Result<u64> {
        self.append_encoded(|e| e.proto(record).map(drop))
    }

    /// Appends an already serialized `oneflow.OFRecord` (e.g. from
    /// [`OfrecordReader::read_serialized`](crate::OfrecordReader::read_serialized)) as is.
    /// It is parsed first, so bytes that are not a valid record are refused
    /// ([`ErrorKind::InvalidInput`]).
    pub fn write_serialized(&mut self, payload: &[u8]) -> Result<u64> {
        self.append_encoded(|e| e.serialized(payload).map(drop))
    }

    /// Ends the current part: the next record starts a new one. Does nothing if the current
    /// part has no records yet (parts are never empty).
    pub fn start_new_part(&mut self) -> Result<()> {
        self.check_open()?;
        self.close_part()
    }

    fn check_open(&self) -> Result<()> {
        check_writable(self.staged.is_none(), self.broken, &self.path)
    }

    /// Writes the frame the encoder holds, rolling to a new part first if needed.
    fn write_current(&mut self) -> Result<u64> {
        let frame_bytes = LENGTH_FIELD + self.encoder.payload.len() as u64;
        if let Some(p) = &self.part {
            let full_by_count = self.options.max_records_per_part.is_some_and(|m| p.records >= m);
            let full_by_size = self
                .options
                .max_bytes_per_part
                .is_some_and(|m| p.records > 0 && p.bytes.saturating_add(frame_bytes) > m);
            if full_by_count || full_by_size {
                self.close_part()?;
            }
        }
        let result = self.write_frame_now();
        if result.is_err() {
            self.broken = true;
        }
        result.map_err(|e| e.with_path(&self.path).with_format(FORMAT))
    }

    fn write_frame_now(&mut self) -> Result<u64> {
        if self.part.is_none() {
            self.part = Some(self.open_part()?);
        }
        let Some(part) = self.part.as_mut() else {
            return Err(Error::new(ErrorKind::Closed, "no open part"));
        };
        let n = write_frame(&mut part.out, &self.encoder.payload)
            .map_err(|e| Error::io(e, "cannot write part file"))?;
        part.records += 1;
        part.bytes += n;
        self.bytes += n;
        self.records += 1;
        Ok(self.records - 1)
    }

    fn open_part(&mut self) -> Result<PartOut> {
        let staged =
            self.staged.as_ref().ok_or_else(|| Error::new(ErrorKind::Closed, "finished"))?;
        let name = self.options.naming.name(self.next_part);
        let path = staged.path().join(&name);
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| Error::io(e, "cannot create part file").with_path(&path))?;
        self.next_part += 1;
        Ok(PartOut { out: BufWriter::with_capacity(BUFFER, file), name, records: 0, bytes: 0 })
    }

    /// Flushes and closes the current part and offers it to [`RecordSink::take_sealed`]
    /// (`finish` drops the offers: it publishes the parts at once).
    fn close_part(&mut self) -> Result<()> {
        if let Some(part) = self.part.take() {
            let result = part
                .out
                .into_inner()
                .map_err(|e| Error::io(e.into_error(), "cannot write part file"))
                .map(drop);
            if let Err(e) = result {
                self.broken = true;
                return Err(e.with_path(&self.path).with_format(FORMAT));
            }
            if let Some(staged) = &self.staged {
                self.sealed
                    .push(SealedFile { path: staged.path().join(&part.name), name: part.name });
            }
        }
        Ok(())
    }

    /// Flushes the last part, syncs every part and moves the directory into place.
    pub fn finish(&mut self) -> Result<SinkSummary> {
        self.check_open()?;
        self.unfinished.finished();
        self.close_part()?;
        self.sealed.clear();
        if self.next_part == 0 {
            // Zero records: one empty part, so the dataset opens (as no records).
            let part = self.open_part()?;
            drop(part);
        }
        let staged = self.staged.take().ok_or_else(|| Error::new(ErrorKind::Closed, "finished"))?;
        staged.commit().map_err(|e| e.with_format(FORMAT))?;
        Ok(SinkSummary { records: self.records, bytes: self.bytes, paths: vec![self.path.clone()] })
    }
}

impl RecordSink for OfrecordWriter {
    fn append_ref(&mut self, record: RecordRef<'_>) -> Result<u64> {
        self.append(record)
    }

    fn records(&self) -> u64 {
        self.records
    }

    fn take_sealed(&mut self) -> Vec<SealedFile> {
        std::mem::take(&mut self.sealed)
    }

    fn finish(&mut self) -> Result<SinkSummary> {
        OfrecordWriter::finish(self)
    }
}

/// Writes a single OFRecord part file.
///
/// The same encoding as [`OfrecordWriter`]; the file is staged under a temporary name and
/// renamed into place by [`finish`](Self::finish) after an fsync, so a writer dropped early
/// leaves nothing at the target path.
pub struct OfrecordFileWriter {
    staged: Option<StagedFile>,
    out: Option<BufWriter<File>>,
    path: PathBuf,
    encoder: FrameEncoder,
    records: u64,
    bytes: u64,
    broken: bool,
    unfinished: UnfinishedGuard,
}

impl OfrecordFileWriter {
    /// A writer of one part file at `path` with default options.
    pub fn create(path: impl AsRef<Path>) -> Result<Self> {
        Self::create_with(path, &OfrecordWriterOptions::default())
    }

    /// A writer of one part file at `path`; the part options (naming, rolling) do not apply.
    pub fn create_with(path: impl AsRef<Path>, options: &OfrecordWriterOptions) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        let staged = StagedFile::create(&path).map_err(|e| e.with_format(FORMAT))?;
        let file = staged
            .file()
            .try_clone()
            .map_err(|e| Error::io(e, "cannot clone file handle").with_format(FORMAT))?;
        Ok(OfrecordFileWriter {
            staged: Some(staged),
            out: Some(BufWriter::with_capacity(BUFFER, file)),
            unfinished: UnfinishedGuard::new(FORMAT, &path),
            path,
            encoder: FrameEncoder::new(options),
            records: 0,
            bytes: 0,
            broken: false,
        })
    }

    /// Records written so far (the index the next one gets).
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Appends a record (see [`encode_record`](crate::encode_record) for how its fields
    /// become features) and returns its index; `&record` and `record.view()` both work.
    pub fn append<'a>(&mut self, record: impl Into<RecordRef<'a>>) -> Result<u64> {
        let record = record.into();
        self.append_encoded(|e| e.record(record).map(drop))
    }

    /// An alias of [`append`](Self::append), the name earlier reel versions used.
    pub fn write_record(&mut self, record: RecordRef<'_>) -> Result<u64> {
        self.append(record)
    }

    /// Appends a record given as the prost message.
    pub fn write_proto(&mut self, record: &OfRecord) -> Result<u64> {
        self.append_encoded(|e| e.proto(record).map(drop))
    }

    /// Appends an already serialized `oneflow.OFRecord` as is (after checking it parses).
    pub fn write_serialized(&mut self, payload: &[u8]) -> Result<u64> {
        self.append_encoded(|e| e.serialized(payload).map(drop))
    }

    fn check_open(&self) -> Result<()> {
        check_writable(self.out.is_none(), self.broken, &self.path)
    }

    fn write_current(&mut self) -> Result<u64> {
        let Some(out) = self.out.as_mut() else {
            return Err(Error::new(ErrorKind::Closed, "the writer is already finished"));
        };
        match write_frame(out, &self.encoder.payload) {
            Ok(n) => {
                self.bytes += n;
                self.records += 1;
                Ok(self.records - 1)
            }
            Err(e) => {
                self.broken = true;
                Err(Error::io(e, "cannot write part file")
                    .with_path(&self.path)
                    .with_format(FORMAT))
            }
        }
    }

    /// Flushes, syncs and moves the file into place.
    pub fn finish(&mut self) -> Result<SinkSummary> {
        self.check_open()?;
        self.unfinished.finished();
        let out = self.out.take().ok_or_else(|| Error::new(ErrorKind::Closed, "finished"))?;
        let staged = self.staged.take().ok_or_else(|| Error::new(ErrorKind::Closed, "finished"))?;
        let result = out
            .into_inner()
            .map_err(|e| Error::io(e.into_error(), "cannot write part file"))
            .and_then(|_| staged.commit());
        if let Err(e) = result {
            self.broken = true;
            return Err(e.with_path(&self.path).with_format(FORMAT));
        }
        Ok(SinkSummary { records: self.records, bytes: self.bytes, paths: vec![self.path.clone()] })
    }
}

impl RecordSink for OfrecordFileWriter {
    fn append_ref(&mut self, record: RecordRef<'_>) -> Result<u64> {
        self.append(record)
    }

    fn records(&self) -> u64 {
        self.records
    }

    fn finish(&mut self) -> Result<SinkSummary> {
        OfrecordFileWriter::finish(self)
    }
}

/// What the directory and the single-file writer share around one frame, so that their
/// append paths (records, prost messages, serialized bytes) are written once.
trait FrameWriter {
    /// The frame encoder, holding the payload to write.
    fn encoder(&mut self) -> &mut FrameEncoder;
    /// Fails if the writer is finished or broken.
    fn check_open(&self) -> Result<()>;
    /// Writes the frame the encoder holds and returns the record's index.
    fn write_current(&mut self) -> Result<u64>;
    /// The dataset's path, for errors.
    fn path(&self) -> &Path;
    /// The index the next record gets.
    fn next_index(&self) -> u64;

    /// Encodes one record with `encode` and writes it, naming the format, the dataset and
    /// the record in its error.
    fn append_encoded(
        &mut self,
        encode: impl FnOnce(&mut FrameEncoder) -> Result<()>,
    ) -> Result<u64> {
        let index = self.next_index();
        let append = || {
            self.check_open()?;
            encode(self.encoder())?;
            self.write_current()
        };
        append().map_err(|e| e.with_format(FORMAT).with_path(self.path()).with_record(index))
    }
}

macro_rules! frame_writer {
    ($writer:ty) => {
        impl FrameWriter for $writer {
            fn encoder(&mut self) -> &mut FrameEncoder {
                &mut self.encoder
            }
            fn check_open(&self) -> Result<()> {
                <$writer>::check_open(self)
            }
            fn write_current(&mut self) -> Result<u64> {
                <$writer>::write_current(self)
            }
            fn path(&self) -> &Path {
                &self.path
            }
            fn next_index(&self) -> u64 {
                self.records
            }
        }
    };
}
frame_writer!(OfrecordWriter);
frame_writer!(OfrecordFileWriter);

/// The error for appending to a writer that is finished, or broken by an earlier failed
/// write (whose output would have a hole).
fn check_writable(finished: bool, broken: bool, path: &Path) -> Result<()> {
    let error = if finished {
        Error::new(ErrorKind::Closed, "the writer is already finished")
    } else if broken {
        Error::new(
            ErrorKind::Io,
            "an earlier write failed; the writer cannot continue (nothing was saved)",
        )
    } else {
        return Ok(());
    };
    Err(error.with_path(path).with_format(FORMAT))
}
