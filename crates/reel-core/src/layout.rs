//! The generic reader: a format's plan + decode turned into a [`RecordSource`].
//!
//! A format crate describes *where* record `i` lives ([`Layout::plan`]: byte ranges of
//! files) and *what it is* given those bytes ([`Layout::decode`]: a pure function).
//! [`LayoutSource`] does the rest: bounds and limit checks, one batched
//! [`ReadAt::read_many`] for the whole batch, decoding, and error context. That way every
//! format gets the same batch path and every backend, and every parser can be fuzzed on
//! plain byte slices.

use crate::batch::Slot;
use crate::checksum::{Crc32, crc32_combine};
use crate::io::{Observe, ReadAt, ReadReq};
use crate::limits::check_within;
use crate::record::{Arena, FieldList, RecordOut};
use crate::value::Span;
use crate::{Error, Limits, Record, RecordBatch, RecordSource, Result, SourceInfo};

/// A byte range of one file of the set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadRange {
    /// File number within the set.
    pub file: u32,
    /// Byte offset.
    pub offset: u64,
    /// Number of bytes.
    pub len: u64,
}

/// The ranges a record is read from, filled by [`Layout::plan`].
#[derive(Debug)]
pub struct Plan<'a> {
    ranges: &'a mut Vec<ReadRange>,
}

impl Plan<'_> {
    /// Adds a range. The decoder receives the ranges' bytes as spans in the same order.
    pub fn push(&mut self, file: u32, offset: u64, len: u64) {
        self.ranges.push(ReadRange { file, offset, len });
    }
}

/// Reused buffers of the planning step, kept inside [`Record`] and [`RecordBatch`] so that
/// steady-state reads allocate nothing.
#[derive(Clone, Default, Debug)]
pub(crate) struct Scratch {
    ranges: Vec<ReadRange>,
    counts: Vec<usize>,
    reqs: Vec<ReadReq>,
    parts: Vec<Span>,
    crc: CrcScratch,
    /// The file number of each memory-held file a borrowing batch holds, in its order.
    shared_files: Vec<u32>,
}

/// The state of the record checksums of one chunk of a batch, computed as bytes arrive.
#[derive(Clone, Default, Debug)]
struct CrcScratch {
    /// Per part: the CRC so far and the bytes it covers.
    parts: Vec<PartCrc>,
    /// Per part: the position (in the batch) of the record it belongs to.
    owner: Vec<usize>,
    /// Per record: its first part.
    first: Vec<usize>,
    /// Per record: parts not yet complete; the record is checked when this reaches 0.
    left: Vec<usize>,
    /// Per record: whether it has been checked.
    checked: Vec<bool>,
}

#[derive(Clone, Default, Debug)]
struct PartCrc {
    hasher: Crc32,
    seen: usize,
    crc: u32,
}

/// A format's description of its records: where they are and how to decode them.
///
/// Implementations are built at open time from the metadata (header, index tables,
/// JSON/BSON documents), which they validate against the file sizes once; afterwards
/// `plan` and `decode` do no I/O.
pub trait Layout: Send + Sync {
    /// Format, version, schema, files and warnings.
    fn info(&self) -> &SourceInfo;

    /// Number of records.
    fn len(&self) -> u64;

    /// Whether there are no records.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Pushes the byte ranges that hold record `index` (`index < len()` is guaranteed).
    fn plan(&self, index: u64, plan: &mut Plan<'_>) -> Result<()>;

    /// Decodes record `index` from `raw` (one span per planned range, in plan order) into
    /// `out`. Must not panic on any bytes.
    fn decode(&self, index: u64, raw: &[Span], out: &mut RecordOut<'_>) -> Result<()>;

    /// Checks record `index`'s bytes (its checksums) before it is decoded, right after they
    /// are fetched, while they are still in the CPU cache. The default checks nothing.
    fn verify(&self, index: u64, raw: &RawParts<'_>) -> Result<()> {
        let _ = (index, raw);
        Ok(())
    }

    /// Whether [`verify`](Self::verify) checks anything, so readers can skip it.
    fn has_verify(&self) -> bool {
        false
    }

    /// The CRC-32 ([`checksum::crc32`](crate::checksum::crc32)) that record `index`'s bytes
    /// (its planned ranges, one after another in plan order) must have, when the format
    /// stores one and it is to be checked. Readers compute it as the bytes arrive — fused
    /// with the copy where the backend copies, as each read completes where reads are in
    /// flight — and report a mismatch as an [`ErrorKind::Checksum`](crate::ErrorKind)
    /// error. The default has none.
    fn record_crc32(&self, index: u64) -> Option<u32> {
        let _ = index;
        None
    }

    /// Whether [`record_crc32`](Self::record_crc32) returns anything, so readers can skip it.
    fn has_record_crc32(&self) -> bool {
        false
    }

    /// Whether [`decode`](Self::decode) only makes values that point into the raw spans it is
    /// given (or hold no bytes), never appending bytes of its own: its records can then be
    /// handed out pointing into a memory-held file instead of a copy of it
    /// ([`RecordSource::read_batch_borrowed`]). The default says no; a decode that appends
    /// anyway makes such a read fall back to copying.
    fn decodes_in_place(&self) -> bool {
        false
    }

    /// A hint that record `index` (`index < len()`) is about to be planned. Layouts whose
    /// index tables outgrow the CPU cache prefetch the entry
    /// ([`prefetch_read`](crate::prefetch_read)), so that a batch's lookups miss the cache
    /// together instead of one after another. The default does nothing.
    fn prefetch(&self, index: u64) {
        let _ = index;
    }
}

/// The raw bytes of one record's planned ranges, as [`Layout::verify`] sees them.
#[derive(Clone, Copy, Debug)]
pub struct RawParts<'a> {
    spans: &'a [Span],
    bytes: &'a [u8],
    base: usize,
}

impl<'a> RawParts<'a> {
    /// Number of ranges.
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    /// Whether the record was planned with no range.
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// The bytes of range `k` (empty if there is no such range).
    pub fn get(&self, k: usize) -> &'a [u8] {
        self.spans
            .get(k)
            .map_or(&[], |s| Span::new(s.start.wrapping_sub(self.base), s.len).get(self.bytes))
    }
}

/// A [`RecordSource`] over any [`Layout`] and any [`ReadAt`] backend.
pub struct LayoutSource<L, F = Box<dyn ReadAt>> {
    layout: L,
    files: F,
    limits: Limits,
}

impl<L: Layout, F: ReadAt> LayoutSource<L, F> {
    /// Combines a layout with the files it describes.
    pub fn new(layout: L, files: F, limits: Limits) -> Self {
        LayoutSource { layout, files, limits }
    }

    /// The format's layout (its index tables and typed accessors).
    pub fn layout(&self) -> &L {
        &self.layout
    }

    /// The format's layout, to amend what it says of the dataset (a warning found while
    /// listing the dataset's files, before the layout was read).
    pub fn layout_mut(&mut self) -> &mut L {
        &mut self.layout
    }

    /// The files read through.
    pub fn files(&self) -> &F {
        &self.files
    }

    /// The limits in force.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// The layout's verification, if it has one. Custom plans read whole ranges of the same
    /// records, so the same checks apply to them.
    fn verify_step(&self) -> Option<&VerifyFn<'_>> {
        self.layout.has_verify().then_some(&self.layout as &VerifyFn<'_>)
    }

    /// The layout's record checksums, if it has them (for custom plans too, as above).
    fn crc_step(&self) -> Option<&CrcFn<'_>> {
        self.layout.has_record_crc32().then_some(&self.layout as &CrcFn<'_>)
    }

    /// Reads one record with a custom plan and decode, for format-specific partial reads
    /// (one array of an item, some frames of a video, some keys of a datapoint). The
    /// layout's [`verify`](Layout::verify) runs on the planned ranges first.
    pub fn read_with(
        &self,
        index: u64,
        out: &mut Record,
        mut plan: impl FnMut(u64, &mut Plan<'_>) -> Result<()>,
        mut decode: impl FnMut(u64, &[Span], &mut RecordOut<'_>) -> Result<()>,
    ) -> Result<()> {
        out.clear();
        let Record { index: out_index, arena, fields, scratch } = out;
        let result = fill(
            &self.files,
            &self.limits,
            self.layout.info().format,
            self.layout.len(),
            &[index],
            Buffers { arena, fields, scratch },
            Steps {
                plan: &mut plan,
                crc: self.crc_step(),
                verify: self.verify_step(),
                decode: &mut decode,
            },
            |_, _, _| {},
        );
        if result.is_err() {
            out.clear();
        } else {
            *out_index = index;
        }
        result
    }

    /// Appends the ranges `plan` gives for record `index` (checked to lie within their
    /// files, and the record against the limits, as a read checks them) to `ranges`, without
    /// reading them: [`RecordSource::locate`] for a custom plan (a format reader whose reads
    /// plan differently than [`Layout::plan`]). On an error `ranges` is left as it was.
    pub fn locate_with(
        &self,
        index: u64,
        ranges: &mut Vec<ReadRange>,
        mut plan: impl FnMut(u64, &mut Plan<'_>) -> Result<()>,
    ) -> Result<()> {
        let info = (self.layout.info().format, self.layout.len());
        let before = ranges.len();
        let checked = plan_checked(&self.files, &self.limits, info, index, &mut plan, ranges);
        if checked.is_err() {
            ranges.truncate(before);
        }
        checked.map(drop)
    }

    /// Reads a batch with a custom plan and decode (see [`read_with`](Self::read_with)).
    pub fn read_batch_with(
        &self,
        indices: &[u64],
        out: &mut RecordBatch,
        plan: impl FnMut(u64, &mut Plan<'_>) -> Result<()>,
        decode: impl FnMut(u64, &[Span], &mut RecordOut<'_>) -> Result<()>,
    ) -> Result<()> {
        let layout = &self.layout;
        self.read_batch_prefetched(indices, out, |i| layout.prefetch(i), plan, decode)
    }

    /// [`read_batch_with`](Self::read_batch_with) whose plan needs other table entries than
    /// [`Layout::prefetch`] announces (a read of some fields only): `prefetch` announces
    /// those of each record before any is planned.
    pub fn read_batch_prefetched(
        &self,
        indices: &[u64],
        out: &mut RecordBatch,
        mut prefetch: impl FnMut(u64),
        mut plan: impl FnMut(u64, &mut Plan<'_>) -> Result<()>,
        mut decode: impl FnMut(u64, &[Span], &mut RecordOut<'_>) -> Result<()>,
    ) -> Result<()> {
        out.clear();
        let len = self.layout.len();
        for &index in indices.iter().filter(|&&i| i < len) {
            prefetch(index);
        }
        let RecordBatch { arena, fields, scratch, slots, .. } = out;
        let result = fill(
            &self.files,
            &self.limits,
            self.layout.info().format,
            self.layout.len(),
            indices,
            Buffers { arena, fields, scratch },
            Steps {
                plan: &mut plan,
                crc: self.crc_step(),
                verify: self.verify_step(),
                decode: &mut decode,
            },
            |index, first_field, end_field| {
                slots.push(Slot { index, first_field, end_field, buffer: 0 })
            },
        );
        if result.is_err() {
            out.clear();
        }
        result
    }
}

impl<L: Layout, F: ReadAt> LayoutSource<L, F> {
    /// Reads a batch whose records point into the backend's memory-held files instead of
    /// copies (see [`RecordSource::read_batch_borrowed`]). `Ok(false)` when the batch is
    /// better copied (its records average under [`BORROW_MIN_RECORD`]) or some record cannot
    /// be read that way (its bytes span files, its file is not held in memory, or the
    /// decoder appended bytes), or the backend declines to lend these ranges
    /// ([`ReadAt::lends`]; `auto` while they are not cached): the caller then copies.
    fn fill_borrowed(&self, indices: &[u64], out: &mut RecordBatch) -> Result<bool> {
        let layout = &self.layout;
        let (len, format, files) = (layout.len(), layout.info().format, &self.files);
        for &index in indices.iter().filter(|&&i| i < len) {
            layout.prefetch(index);
        }
        let RecordBatch { arena, fields, scratch, slots, shared } = out;
        scratch.ranges.clear();
        scratch.counts.clear();
        scratch.parts.clear();
        scratch.shared_files.clear();
        shared.clear();
        let mut total: u64 = 0;
        let mut plan = |i: u64, p: &mut Plan<'_>| layout.plan(i, p);
        for &index in indices {
            let before = scratch.ranges.len();
            // Borrowed bytes take no memory, but a record beyond the limit is refused
            // whichever way it is read.
            let record_bytes = plan_checked(
                files,
                &self.limits,
                (format, len),
                index,
                &mut plan,
                &mut scratch.ranges,
            )?;
            total = total.saturating_add(record_bytes);
            scratch.counts.push(scratch.ranges.len() - before);
        }
        if total < BORROW_MIN_RECORD.saturating_mul(indices.len() as u64) {
            return Ok(false);
        }
        // Lending reads nothing now: the records are touched where they lie. The backend says
        // whether that is cheap for these ranges (`auto` checks that they are still cached).
        if !files.lends(&scratch.ranges) {
            return Ok(false);
        }
        let (crc, verify) = (self.crc_step(), self.verify_step());
        let mut first_part = 0;
        // Records up to `warm_record` (from part `warm_part`) have been brought into the cache.
        let (mut warm_record, mut warm_part) = (0, 0);
        for (k, &index) in indices.iter().enumerate() {
            if k == warm_record {
                (warm_record, warm_part) = warm_chunk(files, scratch, k, warm_part);
            }
            let count = scratch.counts[k];
            let ranges = &scratch.ranges[first_part..first_part + count];
            let Some(file) = ranges.first().map(|r| r.file) else {
                // No bytes at all: decoded against an empty input.
                scratch.parts.clear();
                let first_field = fields.len();
                let used = arena.used();
                let mut out = RecordOut::new(arena, fields);
                layout
                    .decode(index, &[], &mut out)
                    .map_err(|e| e.with_record(index).with_format(format))?;
                if arena.used() != used {
                    return Ok(false);
                }
                slots.push(Slot { index, first_field, end_field: fields.len(), buffer: 0 });
                continue;
            };
            if ranges.iter().any(|r| r.file != file) {
                return Ok(false);
            }
            let slot = match scratch.shared_files.iter().position(|&f| f == file) {
                Some(slot) => slot,
                None => match files.shared_bytes(file) {
                    Some(bytes) => {
                        shared.push(bytes);
                        scratch.shared_files.push(file);
                        shared.len() - 1
                    }
                    None => return Ok(false),
                },
            };
            let bytes = &shared[slot];
            scratch.parts.clear();
            // Within the file (checked above), whose length is held in memory.
            scratch
                .parts
                .extend(ranges.iter().map(|r| Span::new(r.offset as usize, r.len as usize)));
            let part = first_part;
            first_part += count;
            if let Some(expected) = crc {
                // The record's CRC-32, computed where it lies.
                let spans = &scratch.parts;
                let crcs = spans.iter().map(|s| crate::checksum::crc32(s.get(bytes)));
                compare(expected.expected(index), combine(crcs, spans)).map_err(|e| {
                    let e = e.with_offset(ranges[0].offset);
                    record_error(e, index, scratch, part, files, format)
                })?;
            }
            if let Some(v) = verify {
                let raw = RawParts { spans: &scratch.parts, bytes, base: 0 };
                v.check(index, &raw)
                    .map_err(|e| record_error(e, index, scratch, part, files, format))?;
            }
            let first_field = fields.len();
            let used = arena.used();
            let mut out = RecordOut::borrowing(arena, fields, bytes);
            layout
                .decode(index, &scratch.parts, &mut out)
                .map_err(|e| record_error(e, index, scratch, part, files, format))?;
            if arena.used() != used {
                return Ok(false);
            }
            let buffer = slot as u32 + 1;
            slots.push(Slot { index, first_field, end_field: fields.len(), buffer });
        }
        Ok(true)
    }
}

type PlanFn<'f> = dyn FnMut(u64, &mut Plan<'_>) -> Result<()> + 'f;
type DecodeFn<'f> = dyn FnMut(u64, &[Span], &mut RecordOut<'_>) -> Result<()> + 'f;

/// A record check.
pub(crate) trait Verify: Sync {
    fn check(&self, index: u64, raw: &RawParts<'_>) -> Result<()>;
}

impl<L: Layout> Verify for L {
    fn check(&self, index: u64, raw: &RawParts<'_>) -> Result<()> {
        self.verify(index, raw)
    }
}

type VerifyFn<'f> = dyn Verify + 'f;

/// A record's expected CRC-32.
pub(crate) trait ExpectedCrc: Sync {
    fn expected(&self, index: u64) -> Option<u32>;
}

impl<L: Layout> ExpectedCrc for L {
    fn expected(&self, index: u64) -> Option<u32> {
        self.record_crc32(index)
    }
}

type CrcFn<'f> = dyn ExpectedCrc + 'f;

/// The per-record steps of a read.
struct Steps<'a, 'f> {
    plan: &'a mut PlanFn<'f>,
    crc: Option<&'a CrcFn<'a>>,
    verify: Option<&'a VerifyFn<'a>>,
    decode: &'a mut DecodeFn<'f>,
}

struct Buffers<'a> {
    arena: &'a mut Arena,
    fields: &'a mut FieldList,
    scratch: &'a mut Scratch,
}

/// Plans, reads and decodes `indices` into the buffers. The heart of every reader.
#[allow(clippy::too_many_arguments)]
fn fill<F: ReadAt + ?Sized>(
    files: &F,
    limits: &Limits,
    format: &'static str,
    len: u64,
    indices: &[u64],
    buffers: Buffers<'_>,
    steps: Steps<'_, '_>,
    mut on_record: impl FnMut(u64, usize, usize),
) -> Result<()> {
    let Buffers { arena, fields, scratch } = buffers;
    let Steps { plan, crc, verify, decode } = steps;
    scratch.ranges.clear();
    scratch.counts.clear();
    scratch.reqs.clear();
    scratch.parts.clear();

    let files_total: u64 =
        (0..files.file_count() as u32).map(|f| files.file_len(f)).fold(0, u64::saturating_add);
    let mut total: u64 = 0;
    for &index in indices {
        let before = scratch.ranges.len();
        let record_bytes =
            plan_checked(files, limits, (format, len), index, plan, &mut scratch.ranges)?;
        if record_bytes > files_total && record_bytes > limits.max_batch_bytes {
            // Only ranges that overlap can add up to more than the files hold: a record
            // naming the same bytes over and over would otherwise multiply a small file.
            // (Repeats are legitimate in moderation, e.g. a frame selection [3, 0, 3].)
            return Err(Error::new(
                crate::ErrorKind::Limit,
                format!(
                    "the record claims {record_bytes} bytes, more than all of the dataset's files \
                     hold ({files_total}) and more than the batch limit ({})",
                    limits.max_batch_bytes
                ),
            )
            .with_record(index)
            .with_format(format));
        }
        total = total.saturating_add(record_bytes);
        scratch.counts.push(scratch.ranges.len() - before);
    }
    // One record is bounded by max_record_bytes alone, so any record within that limit can
    // always be read, if need be one at a time.
    if indices.len() > 1 {
        Limits::check(total, limits.max_batch_bytes, "batch size")
            .map_err(|e| e.with_format(format))?;
    }

    let base = arena.try_grow(total).map_err(|e| e.with_format(format))?.start;
    let mut dest = base;
    for r in &scratch.ranges {
        // Each range is within a file whose length fits in memory-addressable batch size.
        let len = r.len as usize;
        scratch.reqs.push(ReadReq { file: r.file, offset: r.offset, len, dest });
        scratch.parts.push(Span::new(dest, len));
        dest += len;
    }
    // Synchronous backends fetch and decode in chunks that fit in the CPU cache, so the
    // decoder (checksums, parsing) reads bytes that were just copied instead of going back
    // to memory; asynchronous ones get the whole batch in flight at once.
    let chunk_bytes = if files.is_synchronous() { CACHE_CHUNK } else { usize::MAX };
    let mut first_record = 0;
    let mut first_part = 0;
    while first_record < indices.len() {
        let spans = &scratch.parts;
        let (end_record, end_part) = chunk_end(
            &scratch.counts[..indices.len()],
            |p| spans[p].len,
            first_record,
            first_part,
            chunk_bytes,
        );
        let chunk = Chunk { records: first_record..end_record, parts: first_part..end_part };
        let read = match crc {
            Some(crc) => read_checked(files, indices, &chunk, scratch, arena.as_mut_slice(), crc),
            None => files
                .read_many(&scratch.reqs[first_part..end_part], arena.as_mut_slice())
                .map_err(ReadFailure::Read),
        };
        match read {
            Ok(()) => {}
            Err(ReadFailure::Read(e)) => return Err(read_error(e, indices, scratch, format)),
            Err(ReadFailure::Record(e, k)) => {
                let part = scratch.crc.first[k];
                let e = match scratch.ranges.get(part) {
                    Some(r) if e.offset().is_none() => e.with_offset(r.offset),
                    _ => e,
                };
                return Err(record_error(e, indices[k], scratch, part, files, format));
            }
        }
        if let Some(v) = verify {
            let bytes = arena.as_slice();
            let mut part = first_part;
            for (k, &index) in indices.iter().enumerate().take(end_record).skip(first_record) {
                let count = scratch.counts[k];
                let raw = RawParts { spans: &scratch.parts[part..part + count], bytes, base: 0 };
                v.check(index, &raw)
                    .map_err(|e| record_error(e, index, scratch, part, files, format))?;
                part += count;
            }
        }
        for (k, &index) in indices.iter().enumerate().take(end_record).skip(first_record) {
            let count = scratch.counts[k];
            let parts = &scratch.parts[first_part..first_part + count];
            let part = first_part;
            first_part += count;
            let first_field = fields.len();
            decode(index, parts, &mut RecordOut::new(arena, fields))
                .map_err(|e| record_error(e, index, scratch, part, files, format))?;
            on_record(index, first_field, fields.len());
        }
        first_record = end_record;
    }
    Ok(())
}

/// Records and parts of a batch fetched together.
struct Chunk {
    records: std::ops::Range<usize>,
    parts: std::ops::Range<usize>,
}

/// Why fetching a chunk failed: the read itself, or record `.1` (position in the batch).
enum ReadFailure {
    Read(Error),
    Record(Error, usize),
}

/// Fetches a chunk and checks each record's CRC-32 as its bytes arrive
/// ([`ReadAt::read_many_observed`]), then checks the records whose bytes were not handed
/// over from the buffer.
fn read_checked<F: ReadAt + ?Sized>(
    files: &F,
    indices: &[u64],
    chunk: &Chunk,
    scratch: &mut Scratch,
    dest: &mut [u8],
    expected: &CrcFn<'_>,
) -> std::result::Result<(), ReadFailure> {
    let Scratch { counts, reqs, parts, crc, .. } = scratch;
    crc.parts.resize(parts.len(), PartCrc::default());
    crc.owner.resize(parts.len(), 0);
    crc.first.resize(indices.len(), 0);
    crc.left.resize(indices.len(), 0);
    crc.checked.resize(indices.len(), false);
    let mut part = chunk.parts.start;
    for k in chunk.records.clone() {
        crc.first[k] = part;
        crc.left[k] = counts[k];
        crc.checked[k] = false;
        for p in part..part + counts[k] {
            crc.parts[p] = PartCrc::default();
            crc.owner[p] = k;
        }
        part += counts[k];
    }
    let (parts, counts) = (&**parts, &**counts);
    let mut arrived = CrcObserver {
        crc,
        parts,
        counts,
        indices,
        expected,
        base: chunk.parts.start,
        failed: None,
    };
    let read = files.read_many_observed(&reqs[chunk.parts.clone()], dest, &mut arrived);
    let CrcObserver { crc, failed, .. } = arrived;
    match (read, failed) {
        (Err(e), Some(k)) => return Err(ReadFailure::Record(e, k)),
        (Err(e), None) => return Err(ReadFailure::Read(e)),
        (Ok(()), _) => {}
    }
    for k in chunk.records.clone().filter(|&k| !crc.checked[k]) {
        let first = crc.first[k];
        let spans = &parts[first..first + counts[k]];
        let crcs = spans.iter().map(|s| crate::checksum::crc32(s.get(dest)));
        compare(expected.expected(indices[k]), combine(crcs, spans))
            .map_err(|e| ReadFailure::Record(e, k))?;
    }
    Ok(())
}

/// Checks each record of a chunk as its parts' bytes arrive (see [`read_checked`]).
struct CrcObserver<'a> {
    crc: &'a mut CrcScratch,
    parts: &'a [Span],
    counts: &'a [usize],
    indices: &'a [u64],
    expected: &'a CrcFn<'a>,
    /// The chunk's first part: request `j` of the chunk is part `base + j`.
    base: usize,
    /// The position in the batch of the record that failed its check.
    failed: Option<usize>,
}

impl CrcObserver<'_> {
    /// Adds `len` more bytes of request `j`, fed to its CRC by `feed`, and checks its record
    /// once all of the record's parts are complete. `feed` gets no CRC when `j` is not a
    /// request of this chunk: the sweep after the read checks its record.
    fn take(&mut self, j: usize, len: usize, feed: impl FnOnce(Option<&mut Crc32>)) -> Result<()> {
        let p = self.base + j;
        let crc = &mut *self.crc;
        let (Some(state), Some(span)) = (crc.parts.get_mut(p), self.parts.get(p)) else {
            feed(None);
            return Ok(());
        };
        let before = state.seen;
        feed(Some(&mut state.hasher));
        state.seen += len;
        if before < span.len && state.seen >= span.len {
            state.crc = std::mem::take(&mut state.hasher).finalize();
            let k = crc.owner[p];
            crc.left[k] -= 1;
            if crc.left[k] == 0 && state.seen == span.len {
                let (first, count) = (crc.first[k], self.counts[k]);
                let crcs = crc.parts[first..first + count].iter().map(|s| s.crc);
                let computed = combine(crcs, &self.parts[first..first + count]);
                crc.checked[k] = true;
                if let Err(e) = compare(self.expected.expected(self.indices[k]), computed) {
                    self.failed = Some(k);
                    return Err(e);
                }
            }
        }
        Ok(())
    }
}

impl Observe for CrcObserver<'_> {
    fn arrived(&mut self, j: usize, bytes: &[u8]) -> Result<()> {
        self.take(j, bytes.len(), |hasher| hasher.map_or((), |h| h.update(bytes)))
    }

    /// Copies and checksums in one pass ([`Crc32::copy_update`]), copying all the same when
    /// the bytes are not a request of this chunk.
    fn copy_arrived(&mut self, j: usize, from: &[u8], to: &mut [u8]) -> Result<()> {
        self.take(j, from.len(), |hasher| match hasher {
            Some(hasher) => hasher.copy_update(from, to),
            None => to.copy_from_slice(from),
        })
    }
}

/// The CRC-32 of parts one after another, from each part's CRC-32.
fn combine(crcs: impl Iterator<Item = u32>, parts: &[Span]) -> u32 {
    let mut total: Option<u32> = None;
    for (c, span) in crcs.zip(parts) {
        total = Some(match total {
            None => c,
            Some(t) => crc32_combine(t, c, span.len as u64),
        });
    }
    total.unwrap_or(0)
}

/// A record's computed CRC-32 against the stored one.
fn compare(stored: Option<u32>, computed: u32) -> Result<()> {
    match stored {
        Some(stored) if stored != computed => Err(Error::new(
            crate::ErrorKind::Checksum,
            format!("record checksum mismatch: stored {stored:#010x}, computed {computed:#010x}"),
        )),
        _ => Ok(()),
    }
}

/// Plans record `index` (of a source of `len` records in `format`) into `ranges`, checks
/// each range against its file and the record against [`Limits::check_record`], and
/// returns the record's size in bytes.
fn plan_checked<F: ReadAt + ?Sized>(
    files: &F,
    limits: &Limits,
    (format, len): (&'static str, u64),
    index: u64,
    plan: &mut PlanFn<'_>,
    ranges: &mut Vec<ReadRange>,
) -> Result<u64> {
    if index >= len {
        return Err(Error::out_of_range(index, len).with_format(format));
    }
    let before = ranges.len();
    plan(index, &mut Plan { ranges }).map_err(|e| e.with_record(index).with_format(format))?;
    let mut record_bytes: u64 = 0;
    for r in &ranges[before..] {
        check_within(r.offset, r.len, files.file_len(r.file), "record").map_err(|e| {
            e.with_path(files.file_path(r.file)).with_record(index).with_format(format)
        })?;
        record_bytes = record_bytes.saturating_add(r.len);
    }
    limits.check_record(record_bytes).map_err(|e| e.with_record(index).with_format(format))?;
    Ok(record_bytes)
}

/// Brings the records of the chunk starting at record `first_record` (part `first_part`)
/// into the CPU cache, as a synchronous backend's copy would: one load per cache line, all
/// independent, so the misses overlap (the checksum loop that follows would meet them one
/// page at a time); then checks and decoding read from the cache. Returns the chunk's end
/// (exclusive record and part): at least one record, then records while the chunk holds
/// fewer than `WARM_CHUNK` bytes.
fn warm_chunk<F: ReadAt + ?Sized>(
    files: &F,
    scratch: &Scratch,
    first_record: usize,
    first_part: usize,
) -> (usize, usize) {
    let ranges = &scratch.ranges;
    let end = chunk_end(
        &scratch.counts,
        |p| ranges[p].len as usize,
        first_record,
        first_part,
        WARM_CHUNK,
    );
    for r in &ranges[first_part..end.1] {
        let Some(map) = files.bytes(r.file) else { continue };
        let (start, len) = (r.offset as usize, r.len as usize);
        if let Some(lines) = map.get(start..start.saturating_add(len)) {
            crate::io::prefetch_lines(lines);
        }
    }
    end
}

/// The end (exclusive record and part) of the chunk starting at record `first_record`
/// (part `first_part`) of a batch whose records have `counts` parts each, part `p` being
/// `part_len(p)` bytes long: at least one record, then records while the chunk holds fewer
/// than `chunk_bytes`.
fn chunk_end(
    counts: &[usize],
    part_len: impl Fn(usize) -> usize,
    first_record: usize,
    first_part: usize,
    chunk_bytes: usize,
) -> (usize, usize) {
    let (mut end_record, mut end_part, mut bytes) = (first_record, first_part, 0usize);
    while end_record < counts.len() && (end_record == first_record || bytes < chunk_bytes) {
        let parts = counts[end_record];
        bytes += (end_part..end_part + parts).map(&part_len).sum::<usize>();
        end_part += parts;
        end_record += 1;
    }
    (end_record, end_part)
}

/// Context for an error about record `index` (whose first part is `part`).
fn record_error<F: ReadAt + ?Sized>(
    e: Error,
    index: u64,
    scratch: &Scratch,
    part: usize,
    files: &F,
    format: &'static str,
) -> Error {
    let e = e.with_record(index).with_format(format);
    match scratch.ranges.get(part) {
        Some(r) => e.with_path(files.file_path(r.file)),
        None => e,
    }
}

/// Context for a read error: the record whose range holds the failing offset.
fn read_error(e: Error, indices: &[u64], scratch: &Scratch, format: &'static str) -> Error {
    let e = match locate(indices, scratch, e.offset()) {
        Some(index) => e.with_record(index),
        None => e,
    };
    e.with_format(format)
}

/// Bytes fetched before decoding when the backend reads synchronously: well inside a
/// 512 KiB L2 cache together with the source bytes it was copied from, and large enough
/// (64 records of 1 KiB) that the per-chunk overhead is negligible.
const CACHE_CHUNK: usize = 64 << 10;

/// The average record size from which a batch is handed out where it lies rather than
/// copied. Smaller records are copied: fetching many small records from random places of a
/// mapping, a copy (the C library's string-move instructions) keeps more of them in flight
/// than the checksum loop reading them in place does, so that copying and checking the
/// copy measured faster here (warm, 2 loader workers, in place vs copying: 4 KiB records
/// 0.77–0.80×, 8 KiB 0.81×, 16 KiB 0.98×, 64 KiB 2.3×; `loader_throughput --size N`).
pub const BORROW_MIN_RECORD: u64 = 32 << 10;

/// Bytes of borrowed records brought into the cache at once before they are checked.
const WARM_CHUNK: usize = 16 << 10;

thread_local! {
    /// The planned ranges and requests of [`RecordSource::will_read`] hints, reused so that a
    /// stream's steady state allocates nothing for them.
    static HINT_SCRATCH: std::cell::RefCell<(Vec<ReadRange>, Vec<ReadReq>)> =
        const { std::cell::RefCell::new((Vec::new(), Vec::new())) };
}

/// The record whose planned ranges contain the failing file offset, for error context.
fn locate(indices: &[u64], scratch: &Scratch, offset: Option<u64>) -> Option<u64> {
    let offset = offset?;
    let mut first = 0;
    for (k, &count) in scratch.counts.iter().enumerate() {
        let hit = scratch.ranges[first..first + count]
            .iter()
            .any(|r| offset >= r.offset && offset < r.offset.saturating_add(r.len.max(1)));
        if hit {
            return indices.get(k).copied();
        }
        first += count;
    }
    None
}

impl<L: Layout, F: ReadAt> RecordSource for LayoutSource<L, F> {
    fn info(&self) -> &SourceInfo {
        self.layout.info()
    }

    fn len(&self) -> u64 {
        self.layout.len()
    }

    fn read_into(&self, index: u64, out: &mut Record) -> Result<()> {
        let layout = &self.layout;
        self.read_with(index, out, |i, p| layout.plan(i, p), |i, raw, o| layout.decode(i, raw, o))
    }

    fn read_batch_into(&self, indices: &[u64], out: &mut RecordBatch) -> Result<()> {
        let layout = &self.layout;
        self.read_batch_with(
            indices,
            out,
            |i, p| layout.plan(i, p),
            |i, raw, o| layout.decode(i, raw, o),
        )
    }

    fn read_batch_borrowed(&self, indices: &[u64], out: &mut RecordBatch) -> Result<()> {
        // A backend that lends no bytes (pread, io_uring) would have every record planned
        // twice: once to find that out, once to copy. (`auto` does lend, and refuses cold
        // batches through `ReadAt::lends` once they are planned: a cold batch is planned
        // twice, which costs nothing next to its reads.)
        let files = &self.files;
        let lends = (0..files.file_count() as u32)
            .find(|&f| files.file_len(f) > 0)
            .is_some_and(|f| files.shared_bytes(f).is_some());
        if !self.layout.decodes_in_place() || !lends {
            return self.read_batch_into(indices, out);
        }
        out.clear();
        match self.fill_borrowed(indices, out) {
            Ok(true) => Ok(()),
            Ok(false) => self.read_batch_into(indices, out),
            Err(e) => {
                out.clear();
                Err(e)
            }
        }
    }

    /// Plans `indices` as [`read_batch_into`](RecordSource::read_batch_into) will, and hands
    /// the reads to [`ReadAt::will_read`], so the backend can match them to the read that
    /// follows. Backends that read in the calling
    /// thread are not asked (planning would cost time for nothing); a record that fails to
    /// plan leaves the hint out.
    fn will_read(&self, indices: &[u64]) {
        if self.files.is_synchronous() {
            return;
        }
        HINT_SCRATCH.with(|scratch| {
            let Ok(mut scratch) = scratch.try_borrow_mut() else { return };
            let (ranges, reqs) = &mut *scratch;
            ranges.clear();
            reqs.clear();
            let layout = &self.layout;
            let info = (layout.info().format, layout.len());
            let mut plan = |i: u64, p: &mut Plan<'_>| layout.plan(i, p);
            let mut total: u64 = 0;
            for &index in indices {
                match plan_checked(&self.files, &self.limits, info, index, &mut plan, ranges) {
                    Ok(bytes) => total = total.saturating_add(bytes),
                    Err(_) => return,
                }
            }
            if indices.len() > 1 && total > self.limits.max_batch_bytes {
                return;
            }
            // A hint's destinations are ignored (`ReadAt::will_read`).
            let as_req = |r: &ReadRange| ReadReq {
                file: r.file,
                offset: r.offset,
                len: r.len as usize,
                dest: 0,
            };
            reqs.extend(ranges.iter().map(as_req));
            self.files.will_read(reqs);
        });
    }

    fn backend_name(&self) -> &'static str {
        self.files.backend_name()
    }

    fn locate(&self, index: u64, ranges: &mut Vec<ReadRange>) -> Result<bool> {
        self.locate_with(index, ranges, |i, p| self.layout.plan(i, p))?;
        Ok(true)
    }

    fn file_path(&self, file: u32) -> Option<&std::path::Path> {
        ((file as usize) < self.files.file_count()).then(|| self.files.file_path(file))
    }
}

/// Implements [`RecordSource`] for a format's reader type `$reader<F>` by delegating to the
/// [`LayoutSource`] in its field `$field` — what every format reader that adds its own API
/// around the generic one needs.
#[macro_export]
macro_rules! delegate_record_source {
    ($reader:ident, $field:ident) => {
        impl<F: $crate::ReadAt> $crate::RecordSource for $reader<F> {
            fn info(&self) -> &$crate::SourceInfo {
                $crate::RecordSource::info(&self.$field)
            }
            fn len(&self) -> u64 {
                $crate::RecordSource::len(&self.$field)
            }
            fn read_into(&self, index: u64, out: &mut $crate::Record) -> $crate::Result<()> {
                $crate::RecordSource::read_into(&self.$field, index, out)
            }
            fn read_batch_into(
                &self,
                indices: &[u64],
                out: &mut $crate::RecordBatch,
            ) -> $crate::Result<()> {
                $crate::RecordSource::read_batch_into(&self.$field, indices, out)
            }
            fn read_batch_borrowed(
                &self,
                indices: &[u64],
                out: &mut $crate::RecordBatch,
            ) -> $crate::Result<()> {
                $crate::RecordSource::read_batch_borrowed(&self.$field, indices, out)
            }
            fn will_read(&self, indices: &[u64]) {
                $crate::RecordSource::will_read(&self.$field, indices)
            }
            fn backend_name(&self) -> &'static str {
                $crate::RecordSource::backend_name(&self.$field)
            }
            fn locate(
                &self,
                index: u64,
                ranges: &mut Vec<$crate::ReadRange>,
            ) -> $crate::Result<bool> {
                $crate::RecordSource::locate(&self.$field, index, ranges)
            }
            fn locate_many(
                &self,
                indices: &[u64],
                out: &mut $crate::Located,
            ) -> $crate::Result<bool> {
                $crate::RecordSource::locate_many(&self.$field, indices, out)
            }
            fn file_path(&self, file: u32) -> Option<&std::path::Path> {
                $crate::RecordSource::file_path(&self.$field, file)
            }
        }
    };
}
