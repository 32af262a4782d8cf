//! One sequential pass over OFRecord parts, without building an index.

use std::collections::VecDeque;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

use reel_core::{Error, ErrorKind, Limits, Record, RecordOut, Result, Span, StoreRef, to_usize};

use crate::FORMAT;
use crate::decode::{FeatureNames, Names, decode_into};
use crate::frames::{FrameInfo, LENGTH_FIELD, MAX_PROTOBUF_MESSAGE};
use crate::parts::dataset_files_in;
use crate::reader::OfrecordOptions;

const BUFFER: usize = 1 << 20;
/// Payloads from a reader of unknown size are read in pieces of this size, so a damaged
/// length field cannot make the stream allocate more than the data it actually reads.
const CHUNK: usize = 1 << 20;

enum Input {
    Path(PathBuf),
    Reader { reader: Box<dyn Read + Send>, len: Option<u64>, name: PathBuf },
}

struct OpenPart {
    reader: BufReader<Box<dyn Read + Send>>,
    path: PathBuf,
    /// Size of the part when known (files); lengths are checked against it.
    len: Option<u64>,
    pos: u64,
    index_in_part: u64,
    part: usize,
}

/// Reads the records of OFRecord parts one after another, in a single pass.
///
/// For pipelines that read a dataset once from start to end (conversion, checksumming,
/// streaming from a pipe): no index is built and each part is read sequentially through
/// a buffer. Records come out decoded (the same mapping as
/// [`OfrecordReader`](crate::OfrecordReader)) or serialized.
///
/// Length fields are checked as they come: against what is left of a file, or, for a
/// reader of unknown size, by reading the payload in pieces so that a bogus length never
/// allocates more than the bytes that are really there. A framing error (truncated or
/// negative length, truncated frame) ends the stream after the records before it; a
/// record whose protobuf is malformed is an error for that record only, and the stream
/// goes on with the next one.
pub struct OfrecordStream {
    store: StoreRef,
    pending: VecDeque<Input>,
    current: Option<OpenPart>,
    parts_opened: usize,
    names: FeatureNames,
    limits: Limits,
    strict: bool,
    next_index: u64,
    finished: bool,
}

impl OfrecordStream {
    /// Streams a part file or a directory of parts (found as
    /// [`OfrecordReader::open_with`](crate::OfrecordReader::open_with) finds them).
    pub fn open(path: impl AsRef<Path>, options: &OfrecordOptions) -> Result<Self> {
        let files =
            dataset_files_in(&*options.store, path.as_ref(), &options.naming, options.part_count)?;
        Ok(Self::open_paths(files, options))
    }

    /// Streams the given part files in order. Each is opened when the stream reaches it.
    pub fn open_paths(paths: impl IntoIterator<Item = PathBuf>, options: &OfrecordOptions) -> Self {
        Self::new(paths.into_iter().map(Input::Path).collect(), options)
    }

    /// Streams one part from any reader (a pipe, a decompressor). `len` is its size if
    /// known; `name` appears in messages.
    pub fn from_reader(
        reader: impl Read + Send + 'static,
        len: Option<u64>,
        name: impl Into<PathBuf>,
        options: &OfrecordOptions,
    ) -> Self {
        let input = Input::Reader { reader: Box::new(reader), len, name: name.into() };
        Self::new(VecDeque::from([input]), options)
    }

    fn new(pending: VecDeque<Input>, options: &OfrecordOptions) -> Self {
        OfrecordStream {
            store: options.store.clone(),
            pending,
            current: None,
            parts_opened: 0,
            names: FeatureNames::default(),
            limits: options.limits.clone(),
            strict: options.oneflow_strict,
            next_index: 0,
            finished: false,
        }
    }

    /// Records returned so far (the index the next one will have).
    pub fn position(&self) -> u64 {
        self.next_index
    }

    /// Reads the next record into `record`, decoded. Returns `false` at the end.
    pub fn next_into(&mut self, record: &mut Record) -> Result<bool> {
        record.clear();
        let Some(frame) = self.next_frame()? else { return Ok(false) };
        let index = self.next_index;
        self.next_index += 1;
        let mut out = record.out();
        let span = match self.read_payload(&frame, &mut out) {
            Ok(span) => span,
            Err(e) => {
                record.clear();
                return Err(e);
            }
        };
        let decoded = decode_into(&mut out, span, &mut Names::Growing(&mut self.names), None);
        if let Err(e) = decoded {
            record.clear();
            return Err(self.context(e, frame.payload_offset(), index));
        }
        record.set_index(index);
        Ok(true)
    }

    /// Reads the next serialized record (frame payload) into `buf`. Returns where it was,
    /// or `None` at the end.
    pub fn next_serialized(&mut self, buf: &mut Vec<u8>) -> Result<Option<FrameInfo>> {
        buf.clear();
        let Some(frame) = self.next_frame()? else { return Ok(None) };
        self.next_index += 1;
        let offset = frame.payload_offset();
        let Some(part) = self.current.as_mut() else {
            return Err(Error::new(ErrorKind::Closed, "the stream has ended"));
        };
        let total = match to_usize(frame.length, "record") {
            Ok(n) => n,
            Err(e) => return Err(self.fail(e, offset)),
        };
        let piece = if part.len.is_some() { total.max(1) } else { CHUNK };
        while buf.len() < total {
            let old = buf.len();
            buf.resize(old + piece.min(total - old), 0);
            if let Err(e) = part.reader.read_exact(&mut buf[old..]) {
                buf.clear();
                return Err(self.fail(payload_error(e, total), offset));
            }
        }
        part.pos = offset + frame.length;
        Ok(Some(frame))
    }

    fn context(&self, e: Error, offset: u64, index: u64) -> Error {
        let e = e.with_offset(offset).with_record(index).with_format(FORMAT);
        match &self.current {
            Some(p) => e.with_path(&p.path),
            None => e,
        }
    }

    /// Ends the stream with `e` (framing errors cannot be recovered from).
    fn fail(&mut self, e: Error, offset: u64) -> Error {
        let e = self.context(e, offset, self.next_index);
        self.finished = true;
        self.current = None;
        e
    }

    fn open_next(&mut self) -> Result<bool> {
        let Some(input) = self.pending.pop_front() else { return Ok(false) };
        let (reader, len, path): (Box<dyn Read + Send>, _, _) = match input {
            Input::Path(path) => {
                let (reader, len) = self.store.read_sequential(&path).map_err(|e| {
                    self.finished = true;
                    e.with_format(FORMAT)
                })?;
                (reader, Some(len), path)
            }
            Input::Reader { reader, len, name } => (reader, len, name),
        };
        self.current = Some(OpenPart {
            reader: BufReader::with_capacity(BUFFER, reader),
            path,
            len,
            pos: 0,
            index_in_part: 0,
            part: self.parts_opened,
        });
        self.parts_opened += 1;
        Ok(true)
    }

    /// Reads the next length field and checks it; the reader is left at the payload.
    fn next_frame(&mut self) -> Result<Option<FrameInfo>> {
        loop {
            if self.finished {
                return Ok(None);
            }
            if self.current.is_none() && !self.open_next()? {
                self.finished = true;
                return Ok(None);
            }
            let Some(part) = self.current.as_mut() else { continue };
            let pos = part.pos;
            let mut header = [0u8; 8];
            let got = match read_up_to(&mut part.reader, &mut header) {
                Ok(n) => n,
                Err(e) => return Err(self.fail(Error::io(e, "cannot read part file"), pos)),
            };
            if got == 0 {
                if self.strict && part.index_in_part == 0 {
                    return Err(self.fail(
                        Error::corrupt(
                            "empty part file: OneFlow stops on it (Check failed: cur_buf_begin_ \
                             < cur_buf_end_)",
                        ),
                        pos,
                    ));
                }
                self.current = None;
                continue;
            }
            if got < 8 {
                return Err(self.fail(
                    Error::corrupt(format!(
                        "truncated length field at byte {pos}: {got} of 8 bytes (the file ends \
                         inside a frame header)"
                    )),
                    pos,
                ));
            }
            let length = i64::from_le_bytes(header);
            let Ok(length) = u64::try_from(length) else {
                return Err(self.fail(
                    Error::corrupt(format!("negative frame length {length} at byte {pos}")),
                    pos,
                ));
            };
            if let Some(len) = part.len {
                let left = len.saturating_sub(pos + LENGTH_FIELD);
                if length > left {
                    return Err(self.fail(
                        Error::corrupt(format!(
                            "truncated frame at byte {pos}: the length field says {length} \
                             bytes but only {left} remain in the file"
                        )),
                        pos,
                    ));
                }
            }
            if let Err(e) = self.limits.check_record(length) {
                return Err(self.fail(e, pos));
            }
            if self.strict && (length == 0 || length > MAX_PROTOBUF_MESSAGE) {
                let what = if length == 0 {
                    "zero-length frame (an OFRecord with no features): current OneFlow aborts on it"
                } else {
                    "frame of 2 GiB or more: protobuf, and so OneFlow, cannot parse it"
                };
                return Err(self.fail(Error::corrupt(format!("{what} (byte {pos})")), pos));
            }
            let frame = FrameInfo {
                part: part.part,
                index_in_part: part.index_in_part,
                length_field_offset: pos,
                length,
            };
            part.pos = pos + LENGTH_FIELD;
            part.index_in_part += 1;
            return Ok(Some(frame));
        }
    }

    /// Reads the payload of `frame` into `out` and returns its span.
    fn read_payload(&mut self, frame: &FrameInfo, out: &mut RecordOut<'_>) -> Result<Span> {
        let offset = frame.payload_offset();
        let Some(part) = self.current.as_mut() else {
            return Err(Error::new(ErrorKind::Closed, "the stream has ended"));
        };
        let total = match to_usize(frame.length, "record") {
            Ok(n) => n,
            Err(e) => return Err(self.fail(e, offset)),
        };
        // With a known size the length was checked against the file; otherwise read in
        // pieces (consecutive appends are contiguous in the record buffer).
        let piece = if part.len.is_some() { total.max(1) } else { CHUNK };
        let mut start = None;
        let mut done = 0usize;
        while done < total {
            let n = piece.min(total - done);
            let reader = &mut part.reader;
            let got = out.append_with(n, |_, dest| {
                reader.read_exact(dest).map_err(|e| payload_error(e, total))
            });
            match got {
                Ok(span) => {
                    start.get_or_insert(span.start);
                    done += n;
                }
                Err(e) => return Err(self.fail(e, offset)),
            }
        }
        part.pos = offset + frame.length;
        Ok(Span::new(start.unwrap_or(0), total))
    }
}

fn payload_error(e: std::io::Error, total: usize) -> Error {
    if e.kind() == std::io::ErrorKind::UnexpectedEof {
        Error::corrupt(format!(
            "truncated frame: the length field says {total} bytes but the file ends before"
        ))
    } else {
        Error::io(e, "cannot read part file")
    }
}

/// Fills as much of `buf` as the reader has; returns the number of bytes read.
fn read_up_to(reader: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match reader.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

impl Iterator for OfrecordStream {
    type Item = Result<Record>;

    fn next(&mut self) -> Option<Self::Item> {
        let mut record = Record::new();
        match self.next_into(&mut record) {
            Ok(true) => Some(Ok(record)),
            Ok(false) => None,
            Err(e) => Some(Err(e)),
        }
    }
}
