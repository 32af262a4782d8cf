//! Arrow IPC files read by record batch: the footer parsed and checked once, each batch
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
use reel_core::{Error, ErrorKind, Result};

use crate::input::FileInput;

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
fn block_span(block: &Block) -> (u64, u64, u64) {
    // Checked by `ipc_layout` before any block is kept.
    let offset = block.offset() as u64;
    let meta = block.metaDataLength() as u64;
    (offset, meta, offset + meta + block.bodyLength() as u64)
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
    let mut meta_bytes = Vec::new();
    for (k, block) in batches.iter().enumerate() {
        let bad = |why: &str| ipc_corrupt(path, &format!("record batch {k}: {why}"));
        let (offset, meta, _) = block_span(block);
        meta_bytes.resize(meta as usize, 0);
        file.read_exact_at(offset, &mut meta_bytes, path)?;
        let message = parse_message(&meta_bytes, &bad)?;
        let header = message
            .header_as_record_batch()
            .ok_or_else(|| bad("the block holds no record batch message"))?;
        let rows = u64::try_from(header.length())
            .map_err(|_| bad(&format!("negative row count {}", header.length())))?;
        batch_rows.push(rows);
        compression = compression.or(match header.compression().map(|c| c.codec()) {
            Some(arrow_ipc::CompressionType::LZ4_FRAME) => Some("LZ4"),
            Some(arrow_ipc::CompressionType::ZSTD) => Some("zstd"),
            _ => None,
        });
    }
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
        map: bool,
    ) -> Result<Self> {
        if !layout.native_byte_order {
            return Err(Error::new(
                ErrorKind::Unsupported,
                "Arrow IPC: the file's byte order is not this machine's",
            )
            .with_format("arrow")
            .with_path(path));
        }
        let schema = Arc::new(layout.schema.project(&projection).map_err(|e| ipc_err(e, path))?);
        let mut decoder = FileDecoder::new(Arc::new(layout.schema.clone()), layout.version)
            .with_projection(projection);
        let mapped = match file {
            FileInput::Local(_) if map => mapping(path)?,
            _ => None,
        };
        for (k, block) in layout.dictionaries.iter().enumerate() {
            let bad = |why: &str| ipc_corrupt(path, &format!("dictionary batch {k}: {why}"));
            let bytes = block_bytes(&file, mapped.as_ref(), block, path, &bad)?;
            decoder.read_dictionary(block, &bytes).map_err(|e| bad(&e.to_string()))?;
        }
        Ok(IpcFile { file, mapped, decoder, batches: layout.batches.clone(), schema })
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
        self.decoder
            .read_record_batch(block, &bytes)
            .map_err(|e| bad(&e.to_string()))?
            .ok_or_else(|| bad("the block holds no record batch message"))
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
