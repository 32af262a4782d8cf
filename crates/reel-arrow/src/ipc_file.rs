//! Arrow IPC files read by record batch: the footer parsed and checked once (for the IPC
//! stream format, which has no footer, the messages' headers walked once), each batch
//! taken as one block (message and body) where it lies in the file's mapping or read in
//! one read, checked in memory, and decoded with arrow-ipc's [`FileDecoder`]. Decoded from
//! a mapping, an uncompressed batch's arrays point into the mapped file: reading a batch
//! costs its header, not its bytes.
//!
//! arrow-rs's `FileReader` trusts the offsets and lengths a file gives, and its LZ4 decoder
//! reserves the length a compressed buffer says it holds before decompressing: a damaged
//! file could make it read far outside its batches or abort the process. Here every block
//! the footer lists is checked against the file's size and against the others at open,
//! and every buffer of a batch against its body and every compressed buffer's stated
//! length against what LZ4 or zstd can expand to, on the very bytes the decoder then decodes (a file
//! changed since it was opened cannot slip past).

use std::path::Path;
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_buffer::{Buffer, MutableBuffer};
use arrow_ipc::Block;
use arrow_ipc::reader::FileDecoder;
use arrow_schema::SchemaRef;
use reel_core::{Error, ErrorKind, ReadReq, Result};

use crate::input::FileInput;
use crate::ipc_rows::{RowReader, WantedRows};

/// An error of arrow-rs about the IPC file at `path`.
pub(crate) fn ipc_err(e: arrow_schema::ArrowError, path: &Path) -> Error {
    Error::corrupt(format!("Arrow IPC: {e}")).with_format("arrow").with_path(path)
}

/// The IPC file at `path` is damaged: `what`.
pub(crate) fn ipc_corrupt(path: &Path, what: &str) -> Error {
    Error::corrupt(format!("Arrow IPC: {what}")).with_format("arrow").with_path(path)
}

/// What an Arrow IPC file's footer and record batch headers say, checked against the file.
pub(crate) struct IpcLayout {
    /// The file's schema (every column).
    pub(crate) schema: arrow_schema::Schema,
    /// Rows of each record batch, in the footer's order.
    pub(crate) batch_rows: Vec<u64>,
    /// The metadata version the footer states, which every message must have.
    version: arrow_ipc::MetadataVersion,
    /// Whether the file's byte order is this machine's (the only one arrow-rs decodes; the
    /// schema can be described either way).
    native_byte_order: bool,
    /// The dictionary batches' blocks, checked.
    dictionaries: Vec<Block>,
    /// The record batches' blocks, checked, in the footer's order.
    batches: Vec<Block>,
    /// The codec of the first compressed record batch (`"LZ4"`, `"zstd"`), if any is.
    pub(crate) compression: Option<&'static str>,
}

/// How far LZ4 can expand: 255 times (a frame's block of literal runs), with room for
/// the frame's own header.
fn lz4_bound(compressed: u64) -> u64 {
    compressed.saturating_mul(256).saturating_add(1024)
}

/// How far a codec's output can be, given its input's length.
type ExpansionBound = fn(u64) -> u64;

/// How far zstd can expand: an RLE block of 4 bytes (a 3-byte header and the byte)
/// stands for up to 128 KiB, 32,768 times, with room for one more block.
fn zstd_bound(compressed: u64) -> u64 {
    compressed.saturating_mul(32 * 1024).saturating_add(128 * 1024)
}

/// Checks the buffers of the message in `block` (its `meta` bytes of header, then its
/// body) before arrow-rs decodes it.
///
/// Every buffer must lie inside the body: arrow-rs slices the body by the offsets and
/// lengths the header states and panics on one outside it (a fuzzer found a negative
/// offset), which reel would catch, but a panic is no way to report damage.
///
/// Each compressed buffer starts with the length it decompresses to, and arrow-rs (LZ4)
/// or zstd reserves that much memory before decompressing: a damaged or hostile length
/// (2^60) could abort the process, which no error handling can catch. LZ4 expands at most
/// about 255 times and zstd 32,768 times, so a length beyond that bound is damage, refused
/// here. (A fuzzer found the zstd case: 2^54 bytes stated for a 5 KiB file.)
fn check_buffers(block: &[u8], meta: usize, bad: &dyn Fn(&str) -> Error) -> Result<()> {
    let message = parse_message(block.get(..meta).unwrap_or_default(), bad)?;
    let batch = match message.header_type() {
        arrow_ipc::MessageHeader::RecordBatch => message.header_as_record_batch(),
        arrow_ipc::MessageHeader::DictionaryBatch => {
            message.header_as_dictionary_batch().and_then(|d| d.data())
        }
        _ => None,
    };
    let Some(batch) = batch else {
        // Not a batch: arrow-rs refuses it with its own error.
        return Ok(());
    };
    let bound: Option<(&str, ExpansionBound)> = match batch.compression().map(|c| c.codec()) {
        Some(arrow_ipc::CompressionType::LZ4_FRAME) => Some(("LZ4", lz4_bound)),
        Some(arrow_ipc::CompressionType::ZSTD) => Some(("zstd", zstd_bound)),
        _ => None,
    };
    let body = block.get(meta..).unwrap_or_default();
    for b in batch.buffers().iter().flatten() {
        let (Ok(offset), Ok(len)) = (usize::try_from(b.offset()), usize::try_from(b.length()))
        else {
            return Err(bad("a buffer has a negative offset or length"));
        };
        let Some(buffer) = offset.checked_add(len).and_then(|end| body.get(offset..end)) else {
            return Err(bad("a buffer lies outside its message's body"));
        };
        let (Some((codec, bound)), Some(prefix)) = (bound, buffer.first_chunk::<8>()) else {
            continue;
        };
        let stated = i64::from_le_bytes(*prefix);
        // -1: stored uncompressed; 0: empty.
        if stated > 0 && stated as u64 > bound(len as u64 - 8) {
            return Err(bad(&format!(
                "{codec} buffer of {} bytes says it holds {stated} bytes, more than \
                 {codec} expands to",
                len - 8
            )));
        }
    }
    Ok(())
}

/// Bytes at the start of an IPC file before its first message: `ARROW1` and two bytes of
/// padding.
const IPC_HEAD: u64 = 8;
/// Bytes at the end of an IPC file after its footer: the footer's length and `ARROW1`.
const IPC_TAIL: u64 = 10;

/// The offset, metadata length and end of `block`, a message the footer lists.
pub(crate) fn block_span(block: &Block) -> (u64, u64, u64) {
    // Checked by `ipc_layout` before any block is kept.
    let offset = block.offset() as u64;
    let meta = block.metaDataLength() as u64;
    (offset, meta, offset + meta + block.bodyLength() as u64)
}

/// Bytes of record batch headers [`each_batch_header`] reads at once at most (a header
/// larger than this is read alone): memory for the group, and few enough groups that a
/// file of thousands of batches opens in a few batched reads.
const HEADERS_AT_ONCE: usize = 4 << 20;

/// Reads the headers of the record batch messages `blocks` (checked by [`ipc_layout`],
/// each with its batch's number) and hands each to `each` in order, with its position in
/// `blocks` and an error maker naming the batch. The headers are read a group at a time,
/// as one batched read: from object storage, many batches' headers cost requests in
/// flight together rather than one round trip each (about 300 batches over HTTP at 20 ms
/// took 6.6 s to open one header at a time).
pub(crate) fn each_batch_header(
    file: &FileInput,
    path: &Path,
    blocks: &[(usize, Block)],
    mut each: impl FnMut(usize, arrow_ipc::RecordBatch<'_>, &dyn Fn(&str) -> Error) -> Result<()>,
) -> Result<()> {
    let mut first = 0;
    while first < blocks.len() {
        let mut reqs = Vec::new();
        let mut group_bytes = 0usize;
        for (_, block) in &blocks[first..] {
            let (offset, meta, _) = block_span(block);
            let len = meta as usize;
            if !reqs.is_empty() && group_bytes + len > HEADERS_AT_ONCE {
                break;
            }
            reqs.push(ReadReq { file: 0, offset, len, dest: group_bytes });
            group_bytes += len;
        }
        let mut bytes = vec![0u8; group_bytes];
        file.read_many(&reqs, &mut bytes, path)?;
        for (i, ((b, _), r)) in (first..).zip(blocks[first..].iter().zip(&reqs)) {
            let bad = |why: &str| ipc_corrupt(path, &format!("record batch {b}: {why}"));
            let message = parse_message(&bytes[r.dest..r.dest + r.len], &bad)?;
            let header = message
                .header_as_record_batch()
                .ok_or_else(|| bad("the block holds no record batch message"))?;
            each(i, header, &bad)?;
        }
        first += reqs.len();
    }
    Ok(())
}

/// Reads the footer of the IPC file `file` and the header of each record batch message it
/// lists, without their bodies: the schema and every batch's row count (the record batch
/// header's `length`). Every offset and length read from the file is checked against its
/// size before anything is read through it (by this function or, later, by
/// [`IpcFile::read_batch`]): a block outside the space between the header and the footer,
/// negative lengths, sums that overflow and blocks that overlap (each batch is one
/// message, so the headers read add up to at most the file's size) are
/// [`ErrorKind::Corrupt`] errors naming the file.
pub(crate) fn ipc_layout(file: &FileInput, path: &Path) -> Result<IpcLayout> {
    use parquet::file::reader::Length;
    let size = Length::len(file);
    let mut head = [0u8; 4];
    if size >= 4 {
        file.read_exact_at(0, &mut head, path)?;
        if head == CONTINUATION {
            return ipc_stream_layout(file, path, size);
        }
    }
    if size < IPC_HEAD + IPC_TAIL {
        return Err(ipc_corrupt(path, &format!("the file is too short ({size} bytes)")));
    }
    let mut tail = [0u8; IPC_TAIL as usize];
    file.read_exact_at(size - IPC_TAIL, &mut tail, path)?;
    let footer_len = arrow_ipc::reader::read_footer_length(tail).map_err(|e| ipc_err(e, path))?;
    let body_end = (size - IPC_TAIL)
        .checked_sub(footer_len as u64)
        .filter(|&end| end >= IPC_HEAD)
        .ok_or_else(|| {
            ipc_corrupt(
                path,
                &format!(
                    "the footer's length ({footer_len} bytes) is beyond the file ({size} bytes)"
                ),
            )
        })?;
    let mut footer_bytes = vec![0u8; footer_len];
    file.read_exact_at(body_end, &mut footer_bytes, path)?;
    let footer = arrow_ipc::root_as_footer(&footer_bytes)
        .map_err(|e| ipc_corrupt(path, &format!("the footer does not parse ({e})")))?;
    let fb_schema = footer.schema().ok_or_else(|| ipc_corrupt(path, "the footer has no schema"))?;
    let native_byte_order = fb_schema.endianness().equals_to_target_endianness();
    let schema = arrow_ipc::convert::try_fb_to_schema(fb_schema).map_err(|e| ipc_err(e, path))?;
    // A block whose offset and lengths lie in the file's batches, or an error.
    let checked = |what: &str, k: usize, block: &Block| -> Result<Block> {
        let bad = |why: String| ipc_corrupt(path, &format!("{what} {k} of the footer: {why}"));
        let offset = u64::try_from(block.offset())
            .map_err(|_| bad(format!("negative offset {}", block.offset())))?;
        let meta = u64::try_from(block.metaDataLength())
            .ok()
            .filter(|&m| m > 0)
            .ok_or_else(|| bad(format!("metadata length {}", block.metaDataLength())))?;
        let body = u64::try_from(block.bodyLength())
            .map_err(|_| bad(format!("negative body length {}", block.bodyLength())))?;
        let end = offset.checked_add(meta).and_then(|e| e.checked_add(body));
        match end {
            Some(end) if offset >= IPC_HEAD && end <= body_end => Ok(*block),
            _ => Err(bad(format!(
                "bytes {offset}+{meta}+{body} are outside the file's batches (bytes \
                 {IPC_HEAD}..{body_end})"
            ))),
        }
    };
    let dictionaries = footer
        .dictionaries()
        .iter()
        .flatten()
        .enumerate()
        .map(|(k, b)| checked("dictionary block", k, b))
        .collect::<Result<Vec<_>>>()?;
    let batches = footer
        .recordBatches()
        .ok_or_else(|| ipc_corrupt(path, "the footer does not list the record batches"))?
        .iter()
        .enumerate()
        .map(|(k, b)| checked("record batch block", k, b))
        .collect::<Result<Vec<_>>>()?;
    // Every message once: blocks that overlap (a hostile footer listing one large message
    // a million times) are refused before any is read.
    let mut sorted: Vec<(u64, u64)> = dictionaries
        .iter()
        .chain(&batches)
        .map(|b| {
            let (offset, _, end) = block_span(b);
            (offset, end)
        })
        .collect();
    sorted.sort_unstable();
    if sorted.windows(2).any(|w| w[1].0 < w[0].1) {
        return Err(ipc_corrupt(path, "the footer lists messages that overlap"));
    }
    let mut batch_rows = Vec::with_capacity(batches.len());
    let mut compression = None;
    let numbered: Vec<(usize, Block)> = batches.iter().copied().enumerate().collect();
    each_batch_header(file, path, &numbered, |_, header, bad| {
        let rows = u64::try_from(header.length())
            .map_err(|_| bad(&format!("negative row count {}", header.length())))?;
        batch_rows.push(rows);
        compression = compression.or(codec_of(&header));
        Ok(())
    })?;
    Ok(IpcLayout {
        schema,
        batch_rows,
        version: footer.version(),
        native_byte_order,
        dictionaries,
        batches,
        compression,
    })
}

/// The marker an encapsulated IPC message starts with (since format 0.15), before the
/// length of its header.
pub(crate) const CONTINUATION: [u8; 4] = [0xff; 4];

/// Whether `head`, the first bytes of a file, is the start of an Arrow IPC stream: the
/// continuation marker, a header length, and (as far as `head` holds it) a schema message.
/// An IPC stream (`pyarrow.ipc.new_stream`, Polars' `write_ipc_stream`, the `.arrow` files
/// of Hugging Face `datasets`) has no magic bytes of its own: its first message, which
/// must be the schema, tells it.
pub(crate) fn is_ipc_stream(head: &[u8]) -> bool {
    let Some((marker, rest)) = head.split_first_chunk::<4>() else {
        return false;
    };
    let Some(len) = rest.first_chunk::<4>().map(|b| i32::from_le_bytes(*b)) else {
        return false;
    };
    if *marker != CONTINUATION || len <= 0 {
        return false;
    }
    let header = &rest[4..];
    match header.get(..len as usize) {
        Some(flatbuffer) => arrow_ipc::root_as_message(flatbuffer)
            .is_ok_and(|m| m.header_type() == arrow_ipc::MessageHeader::Schema),
        // A header longer than the bytes looked at: the marker and a plausible length.
        None => len < (1 << 24),
    }
}

/// [`ipc_layout`] for the IPC stream format: messages one after another from the start
/// (the schema first, then dictionary and record batches), up to an end-of-stream marker
/// or the end of the file. Each message's header is read and checked (its body must lie
/// in the file), and its body is skipped: the record batches' blocks are what a footer
/// would have listed. Walking costs a read of a few KiB per message whose header is not in
/// the bytes read last ([`ReadWindow`]), and a stream of `n` bytes has at most `n / 8`
/// messages.
///
/// A dictionary replaced (not extended by a delta) after record batches that use it is
/// refused: batches are read at random with one set of dictionaries, as in an IPC file,
/// which cannot hold a replacement either.
fn ipc_stream_layout(file: &FileInput, path: &Path, size: u64) -> Result<IpcLayout> {
    let mut schema = None;
    let mut version = arrow_ipc::MetadataVersion::V5;
    let mut native_byte_order = true;
    let (mut dictionaries, mut batches, mut batch_rows) = (Vec::new(), Vec::new(), Vec::new());
    let mut dictionary_ids = std::collections::HashSet::new();
    let mut compression = None;
    let mut window = ReadWindow::new(file);
    let mut at = 0u64;
    // The end of the file without an end-of-stream marker ends the stream too, as pyarrow
    // reads it.
    while at < size {
        let bad = |why: &str| ipc_corrupt(path, &format!("the message at byte {at}: {why}"));
        if size - at < 8 {
            return Err(bad("the file ends inside its length"));
        }
        let prefix: [u8; 8] = window.get(file, path, at, 8, size)?.try_into().unwrap_or_default();
        if prefix[..4] != CONTINUATION {
            return Err(bad("it does not start with the IPC stream's marker 0xFFFFFFFF"));
        }
        let len = i32::from_le_bytes([prefix[4], prefix[5], prefix[6], prefix[7]]);
        if len == 0 {
            break; // the end-of-stream marker
        }
        let meta = u64::try_from(len)
            .ok()
            .filter(|&l| l <= i32::MAX as u64 - 8)
            .map(|l| l + 8)
            .ok_or_else(|| bad(&format!("its header length is {len}")))?;
        if meta > size - at {
            return Err(bad("its header goes past the end of the file"));
        }
        let message = parse_message(window.get(file, path, at, meta, size)?, &bad)?;
        let body = u64::try_from(message.bodyLength())
            .ok()
            .filter(|&b| b <= size - at - meta)
            .ok_or_else(|| {
                bad(&format!(
                    "its body of {} bytes goes past the end of the file",
                    message.bodyLength()
                ))
            })?;
        // Both fit: `meta` in an i32 (checked), `at + meta + body` within the file.
        let block = Block::new(at as i64, meta as i32, body as i64);
        match message.header_type() {
            arrow_ipc::MessageHeader::Schema if schema.is_none() => {
                let fb = message.header_as_schema().ok_or_else(|| bad("no schema"))?;
                native_byte_order = fb.endianness().equals_to_target_endianness();
                version = message.version();
                schema =
                    Some(arrow_ipc::convert::try_fb_to_schema(fb).map_err(|e| ipc_err(e, path))?);
            }
            _ if schema.is_none() => {
                return Err(bad("the stream does not start with its schema"));
            }
            arrow_ipc::MessageHeader::Schema => return Err(bad("a second schema")),
            arrow_ipc::MessageHeader::DictionaryBatch => {
                let d = message.header_as_dictionary_batch().ok_or_else(|| bad("no batch"))?;
                if !dictionary_ids.insert(d.id()) && !d.isDelta() && !batches.is_empty() {
                    return Err(Error::new(
                        ErrorKind::Unsupported,
                        format!(
                            "Arrow IPC: the stream replaces dictionary {} after record batches \
                             that use it (reel reads a stream's batches at random, with one \
                             dictionary per column, as an IPC file has)",
                            d.id()
                        ),
                    )
                    .with_format("arrow")
                    .with_path(path));
                }
                dictionaries.push(block);
            }
            arrow_ipc::MessageHeader::RecordBatch => {
                let header = message.header_as_record_batch().ok_or_else(|| bad("no batch"))?;
                let rows = u64::try_from(header.length())
                    .map_err(|_| bad(&format!("negative row count {}", header.length())))?;
                compression = compression.or(codec_of(&header));
                batch_rows.push(rows);
                batches.push(block);
            }
            other => return Err(bad(&format!("a {other:?} message, which no table holds"))),
        }
        at += meta + body;
    }
    let schema = schema.ok_or_else(|| ipc_corrupt(path, "the stream has no schema message"))?;
    Ok(IpcLayout {
        schema,
        batch_rows,
        version,
        native_byte_order,
        dictionaries,
        batches,
        compression,
    })
}

/// The bytes of a file last read while walking an IPC stream's headers: each read takes a
/// few KiB from the header asked for, so the next headers of small messages (and a
/// header's own flatbuffer after its length) come without another read.
///
/// In object storage, where each read is a request, a read takes more while the bodies
/// skipped between headers are small: when the header asked for lies at most
/// [`ReadWindow::SKIP_GAP`] past the bytes read last (a body that would have cost less to
/// read through than a round trip, the gap the store's own requests are merged under),
/// the next read takes twice as much, up to [`ReadWindow::MOST`], and back to
/// [`ReadWindow::READ`] after a larger gap. A stream of small batches (a Hugging Face
/// `datasets` file of 1,000-row batches) then opens in a few requests, not one a batch.
struct ReadWindow {
    start: u64,
    bytes: Vec<u8>,
    /// Bytes the next read takes at the least.
    take: u64,
    /// Whether reads are requests to a store (see above).
    remote: bool,
}

impl ReadWindow {
    /// Bytes a read takes at the least.
    const READ: u64 = 4096;
    /// Bytes a read of an object takes at most, unless a header is longer.
    const MOST: u64 = 16 << 20;
    /// The largest skipped body after which reads of an object grow.
    const SKIP_GAP: u64 = 1 << 20;

    fn new(file: &FileInput) -> Self {
        ReadWindow {
            start: 0,
            bytes: Vec::new(),
            take: Self::READ,
            remote: file.reads_are_requests(),
        }
    }

    /// Bytes `at..at + len` of `file` (of `size` bytes; the range lies within it).
    fn get(
        &mut self,
        file: &FileInput,
        path: &Path,
        at: u64,
        len: u64,
        size: u64,
    ) -> Result<&[u8]> {
        let end = at + len;
        let held_end = self.start + self.bytes.len() as u64;
        if at < self.start || end > held_end {
            if self.remote && !self.bytes.is_empty() {
                // Forward (the walk never goes back) past at most a small body, or into
                // a header that straddles the end of the bytes held.
                let near = at >= self.start && at.saturating_sub(held_end) <= Self::SKIP_GAP;
                self.take = if near { (self.take * 2).min(Self::MOST) } else { Self::READ };
            }
            let take = len.max(self.take).min(size - at);
            self.bytes.resize(take as usize, 0);
            file.read_exact_at(at, &mut self.bytes, path)?;
            self.start = at;
        }
        let from = (at - self.start) as usize;
        Ok(&self.bytes[from..from + len as usize])
    }
}

/// The codec of a record batch's compressed buffers (`"LZ4"`, `"zstd"`), if they are.
fn codec_of(header: &arrow_ipc::RecordBatch<'_>) -> Option<&'static str> {
    match header.compression().map(|c| c.codec()) {
        Some(arrow_ipc::CompressionType::LZ4_FRAME) => Some("LZ4"),
        Some(arrow_ipc::CompressionType::ZSTD) => Some("zstd"),
        _ => None,
    }
}

/// Parses the header of the encapsulated message at the start of `bytes` (a block's
/// metadata).
fn parse_message<'b>(
    bytes: &'b [u8],
    bad: &dyn Fn(&str) -> Error,
) -> Result<arrow_ipc::Message<'b>> {
    // A continuation marker (0xFFFFFFFF) and the flatbuffer's length, or (before format
    // 0.15) the length alone; then the flatbuffer.
    let (start, len) = match bytes.get(..4) {
        Some([0xff, 0xff, 0xff, 0xff]) => (8usize, bytes.get(4..8)),
        _ => (4, bytes.get(..4)),
    };
    let flatbuffer = len
        .and_then(|b| <[u8; 4]>::try_from(b).ok())
        .map(i32::from_le_bytes)
        .and_then(|l| usize::try_from(l).ok())
        .and_then(|l| bytes.get(start..start.checked_add(l)?))
        .ok_or_else(|| bad("the message length is outside its block"))?;
    arrow_ipc::root_as_message(flatbuffer)
        .map_err(|e| bad(&format!("the message header does not parse ({e})")))
}

/// An Arrow IPC file open for reading its record batches by number.
pub(crate) struct IpcFile {
    file: FileInput,
    /// The whole file mapped into memory, when it is local and mapping was asked for:
    /// batches are then decoded where they lie, without reading them into a buffer, and
    /// reading an uncompressed batch costs its header, not its bytes.
    mapped: Option<bytes::Bytes>,
    decoder: FileDecoder,
    batches: Vec<Block>,
    /// The schema of the batches read: the selected columns, in the order selected.
    schema: SchemaRef,
    /// Reads chosen rows of a batch without the rest of it, for a file in object storage
    /// whose selected columns are flat (see [`crate::ipc_rows`]).
    rows: Option<RowReader>,
    /// [`ReadOptions::row_read_spacing`](crate::ReadOptions::row_read_spacing).
    row_read_spacing: u64,
}

impl IpcFile {
    /// Opens `file` as `layout` describes it, decoding the columns `projection` selects,
    /// in that order. The dictionaries are read, checked and decoded now.
    /// With `map`, a local file is mapped into memory ([`reel_core::MmapFiles`], with the
    /// mmap backend's one hazard: another process truncating the file while it is mapped).
    pub(crate) fn open(
        file: FileInput,
        path: &Path,
        layout: &IpcLayout,
        projection: Vec<usize>,
        options: &crate::ReadOptions,
    ) -> Result<Self> {
        let map = options.map;
        if !layout.native_byte_order {
            return Err(Error::new(
                ErrorKind::Unsupported,
                "Arrow IPC: the file's byte order is not this machine's",
            )
            .with_format("arrow")
            .with_path(path));
        }
        let schema = Arc::new(layout.schema.project(&projection).map_err(|e| ipc_err(e, path))?);
        let rows = if file.reads_are_requests() {
            RowReader::new(&layout.schema, &projection, schema.clone())
        } else {
            None
        };
        let mut decoder = FileDecoder::new(Arc::new(layout.schema.clone()), layout.version)
            .with_projection(projection);
        let mapped = if map && file.is_local() { mapping(path)? } else { None };
        for (k, block) in layout.dictionaries.iter().enumerate() {
            let bad = |why: &str| ipc_corrupt(path, &format!("dictionary batch {k}: {why}"));
            let bytes = block_bytes(&file, mapped.as_ref(), block, path, &bad)?;
            decoder.read_dictionary(block, &bytes).map_err(|e| bad(&e.to_string()))?;
        }
        Ok(IpcFile {
            file,
            mapped,
            decoder,
            batches: layout.batches.clone(),
            schema,
            rows,
            row_read_spacing: options.row_read_spacing,
        })
    }

    /// The schema of the batches [`read_batch`](Self::read_batch) returns.
    pub(crate) fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    /// Record batch `b`: its block read in one piece, its buffers checked, decoded.
    /// Memory holds that one batch (every column's buffers, selected or not).
    pub(crate) fn read_batch(&self, b: usize, path: &Path) -> Result<RecordBatch> {
        let bad = |why: &str| ipc_corrupt(path, &format!("record batch {b}: {why}"));
        let block = self.batches.get(b).ok_or_else(|| bad("no such batch"))?;
        let bytes = block_bytes(&self.file, self.mapped.as_ref(), block, path, &bad)?;
        self.decode_block(b, block, &bytes, path)
    }

    /// Record batch `b` as [`read_batch`](Self::read_batch) reads it, but taken from
    /// `ahead` when a batched read planned it there: in object storage the blocks of the
    /// batches planned next are then fetched together, as one batched read of the store
    /// of at most [`AHEAD_BYTES`], rather than one round trip each.
    pub(crate) fn read_batch_ahead(
        &self,
        b: usize,
        ahead: &mut BatchesAhead,
        path: &Path,
    ) -> Result<RecordBatch> {
        let bad = |why: &str| ipc_corrupt(path, &format!("record batch {b}: {why}"));
        let block = self.batches.get(b).ok_or_else(|| bad("no such batch"))?;
        // Batches planned before `b` were not asked for after all (their rows were in the
        // window already).
        while ahead.wanted.get(ahead.next).is_some_and(|&(u, _)| u < b) {
            ahead.next += 1;
        }
        if !ahead.fetched.contains_key(&b)
            && self.fetches_ahead()
            && ahead.wanted.get(ahead.next).is_some_and(|&(u, _)| u == b)
        {
            self.fetch_ahead(ahead, path)?;
        }
        match ahead.fetched.remove(&b) {
            Some(bytes) => {
                // Checked now rather than when fetched, so that damage is reported by the
                // read of a record of this batch.
                check_buffers(bytes.as_slice(), block_span(block).1 as usize, &bad)?;
                self.decode_block(b, block, &bytes, path)
            }
            None => self.read_batch(b, path),
        }
    }

    /// Reads the rows of the planned batches of which `ahead` wants few (at most one in
    /// [`SPARSE`], lying [`ReadOptions::row_read_spacing`](crate::ReadOptions) apart on
    /// average) without the rest of those batches, when the file can be read so
    /// ([`crate::ipc_rows`]): they are then taken by [`take_rows`](BatchesAhead::take_rows)
    /// and no longer fetched whole. `batch_rows` is each batch's row count.
    pub(crate) fn read_sparse(
        &self,
        ahead: &mut BatchesAhead,
        batch_rows: impl Fn(usize) -> u64,
        path: &Path,
    ) -> Result<()> {
        let Some(reader) = &self.rows else { return Ok(()) };
        let wanted: Vec<WantedRows<'_>> = ahead
            .wanted
            .iter()
            .filter_map(|(b, rows)| {
                let block = *self.batches.get(*b)?;
                let (n, body) = (rows.len() as u64, block.bodyLength().max(0) as u64);
                let sparse = n.saturating_mul(SPARSE) <= batch_rows(*b)
                    && body / n.max(1) >= self.row_read_spacing;
                sparse.then_some(WantedRows { batch: *b, block, rows })
            })
            .collect();
        if wanted.is_empty() {
            return Ok(());
        }
        let Some(read) = reader.read(&self.file, path, &wanted)? else { return Ok(()) };
        for (w, batch) in wanted.iter().zip(read) {
            ahead.rows.insert(w.batch, (w.rows.to_vec(), batch));
        }
        Ok(())
    }

    /// Whether batched reads fetch their batches' blocks together
    /// ([`read_batch_ahead`](Self::read_batch_ahead)): when each read is a request to a
    /// store.
    pub(crate) fn fetches_ahead(&self) -> bool {
        self.mapped.is_none() && self.file.reads_are_requests()
    }

    /// Fetches the blocks of the next batches `ahead` plans (but those whose rows were
    /// read alone), as many as fit in [`AHEAD_BYTES`] (at least one), in one batched read,
    /// each block placed at a 64-byte boundary as arrow's buffers want.
    fn fetch_ahead(&self, ahead: &mut BatchesAhead, path: &Path) -> Result<()> {
        let mut group = Vec::new();
        let mut reqs = Vec::new();
        let mut total = 0usize;
        while let Some(&(b, _)) = ahead.wanted.get(ahead.next) {
            if ahead.rows.contains_key(&b) {
                ahead.next += 1;
                continue;
            }
            let Some(block) = self.batches.get(b) else { break };
            let (offset, _, end) = block_span(block);
            let len = usize::try_from(end - offset).map_err(|_| {
                ipc_corrupt(path, &format!("record batch {b}: the block is too large"))
            })?;
            let dest = total.next_multiple_of(64);
            if !group.is_empty() && dest.saturating_add(len) > AHEAD_BYTES {
                break;
            }
            ahead.next += 1;
            group.push(b);
            reqs.push(ReadReq { file: 0, offset, len, dest });
            total = dest.saturating_add(len);
        }
        let mut bytes = MutableBuffer::try_from_len_zeroed(total).map_err(|e| {
            ipc_corrupt(path, &format!("cannot allocate {total} bytes for the batches ({e})"))
        })?;
        self.file.read_many(&reqs, bytes.as_slice_mut(), path)?;
        let bytes: Buffer = bytes.into();
        for (&b, r) in group.iter().zip(&reqs) {
            ahead.fetched.insert(b, bytes.slice_with_length(r.dest, r.len));
        }
        Ok(())
    }

    /// Decodes record batch `b` from its block's bytes (buffers checked).
    fn decode_block(
        &self,
        b: usize,
        block: &Block,
        bytes: &Buffer,
        path: &Path,
    ) -> Result<RecordBatch> {
        let bad = |why: &str| ipc_corrupt(path, &format!("record batch {b}: {why}"));
        self.decoder
            .read_record_batch(block, bytes)
            .map_err(|e| bad(&e.to_string()))?
            .ok_or_else(|| bad("the block holds no record batch message"))
    }
}

/// Bytes of record batches [`IpcFile::read_batch_ahead`] fetches at once at most (a
/// larger batch is fetched alone): what memory holds beyond the batch being decoded, for
/// round trips shared by every batch that fits.
pub(crate) const AHEAD_BYTES: usize = 64 << 20;

/// A batched read reads a batch's rows alone ([`IpcFile::read_sparse`]) when it wants at
/// most one row in this many of the batch; denser, the batch is fetched whole.
const SPARSE: u64 = 8;

/// The record batches a batched read of an IPC file will decode, in the order it decodes
/// them, the rows it wants of each, and what was fetched for them and not decoded yet (see
/// [`IpcFile::read_batch_ahead`] and [`IpcFile::read_sparse`]).
#[derive(Default)]
pub(crate) struct BatchesAhead {
    /// Each planned batch and its rows wanted (within the batch, ascending, distinct), in
    /// file order.
    wanted: Vec<(usize, Vec<usize>)>,
    /// The first entry of `wanted` neither fetched nor passed yet.
    next: usize,
    fetched: std::collections::HashMap<usize, Buffer>,
    /// Batches of only the rows wanted, with those rows (within the batch).
    rows: std::collections::HashMap<usize, (Vec<usize>, RecordBatch)>,
}

impl BatchesAhead {
    /// Plans the rows `rows` (batch number and row within the batch, in file order;
    /// repeats are merged), forgetting any plan before.
    pub(crate) fn plan(&mut self, rows: impl IntoIterator<Item = (usize, usize)>) {
        self.clear();
        for (b, row) in rows {
            match self.wanted.last_mut() {
                Some((last, rows)) if *last == b => {
                    if rows.last() != Some(&row) {
                        rows.push(row);
                    }
                }
                _ => self.wanted.push((b, vec![row])),
            }
        }
    }

    /// The rows of batch `b` read alone by [`IpcFile::read_sparse`] (their rows within the
    /// batch, and the batch of them), if they were.
    pub(crate) fn take_rows(&mut self, b: usize) -> Option<(Vec<usize>, RecordBatch)> {
        self.rows.remove(&b)
    }

    /// Forgets the plan and frees what was fetched for it.
    pub(crate) fn clear(&mut self) {
        self.next = 0;
        self.wanted.clear();
        self.fetched.clear();
        self.rows.clear();
    }
}

/// The bytes of `block` (checked by [`ipc_layout`]), with its buffers checked: where
/// they lie in `mapped`, the file's mapping, or read whole into an aligned buffer.
fn block_bytes(
    file: &FileInput,
    mapped: Option<&bytes::Bytes>,
    block: &Block,
    path: &Path,
    bad: &dyn Fn(&str) -> Error,
) -> Result<Buffer> {
    let Some(mapped) = mapped else {
        return read_block(file, block, path, bad);
    };
    let (offset, meta, end) = block_span(block);
    let range = usize::try_from(offset).ok().zip(usize::try_from(end).ok());
    let bytes = match range {
        // The mapping was made after the checks against the file's size: a file that
        // shrank since is damage, not a panic.
        Some((offset, end)) if end <= mapped.len() => mapped.slice(offset..end),
        _ => return Err(bad("the block lies beyond the end of the file (was it truncated?)")),
    };
    check_buffers(&bytes, meta as usize, bad)?;
    Ok(Buffer::from(bytes))
}

/// The file at `path` mapped into memory, whole, as shared bytes; `None` when it is empty.
fn mapping(path: &Path) -> Result<Option<bytes::Bytes>> {
    /// The mapping as `Bytes` own it: slices of it keep it alive.
    struct Mapped(reel_core::SharedBytes);
    impl AsRef<[u8]> for Mapped {
        fn as_ref(&self) -> &[u8] {
            &self.0
        }
    }
    let files = reel_core::MmapFiles::open(&[path.to_path_buf()])?;
    Ok(reel_core::ReadAt::shared_bytes(&files, 0).map(|m| bytes::Bytes::from_owner(Mapped(m))))
}

/// Reads `block` (checked by [`ipc_layout`]) whole into an aligned buffer and checks its
/// buffers.
fn read_block(
    file: &FileInput,
    block: &Block,
    path: &Path,
    bad: &dyn Fn(&str) -> Error,
) -> Result<Buffer> {
    let (offset, meta, end) = block_span(block);
    let len = usize::try_from(end - offset).map_err(|_| bad("the block is too large"))?;
    // Zeroed rather than grown as bytes arrive: the length was checked against the file's
    // size, and arrow's buffers want the 64-byte alignment this gives.
    let mut bytes = MutableBuffer::try_from_len_zeroed(len)
        .map_err(|e| bad(&format!("cannot allocate {len} bytes for the batch ({e})")))?;
    file.read_exact_at(offset, bytes.as_slice_mut(), path)?;
    check_buffers(bytes.as_slice(), meta as usize, bad)?;
    Ok(bytes.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lz4_bound_covers_the_largest_expansion() {
        assert_eq!(lz4_bound(0), 1024);
        assert_eq!(lz4_bound(1000), 257_024);
        assert_eq!(lz4_bound(u64::MAX), u64::MAX);
        assert_eq!(zstd_bound(4), 4 * 32 * 1024 + 128 * 1024);
        assert_eq!(zstd_bound(u64::MAX), u64::MAX);
    }
}
