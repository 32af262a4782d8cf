//! Any Parquet or Arrow IPC file as a [`RecordSource`]: each row a record, each column a
//! field (see [`crate::decode`] for how types map).

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use arrow_array::RecordBatch;
use arrow_ipc::reader::FileReader;
use arrow_schema::SchemaRef;
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReader,
    ParquetRecordBatchReaderBuilder, RowSelection, RowSelector,
};
use reel_core::{
    Error, ErrorKind, Record, RecordBatch as ReelBatch, RecordOut, RecordSource, Result,
    SourceInfo, Store, StoreRef,
};

use crate::decode::{Column, catch_panics, columns_of, decode_row};
use crate::input::FileInput;
use crate::write::FileKind;

/// How to read a Parquet or Arrow IPC file.
#[derive(Clone, Debug)]
pub struct ReadOptions {
    /// Only these columns, in this order (default: all). Columns not selected are never
    /// decoded nor checked for a value type, so a file with a column reel has no value for
    /// (a decimal, a union) opens when that column is left out. (The stated lengths of an
    /// LZ4-compressed IPC batch are checked for every column: a damaged one in a column
    /// left out still refuses the batch.)
    pub columns: Option<Vec<String>>,
    /// Leave these columns out (of [`columns`](Self::columns), or of all). A name the file
    /// has no column for is an error naming the columns it has.
    pub skip_columns: Vec<String>,
    /// Rows decoded at a time at most (default 1024). Memory holds one such window of the
    /// selected columns (for IPC, one of the file's record batches). Parquet windows hold
    /// fewer rows where rows are large, so that a window stays near [`WINDOW_BYTES`].
    pub window_rows: usize,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions { columns: None, skip_columns: Vec::new(), window_rows: 1024 }
    }
}

/// Bytes of decoded rows a Parquet window aims at: rows per window are this divided by the
/// largest row size of the file's row groups (their uncompressed size over their rows, from
/// the footer), at least one row. 300 rows of 1 MiB took 728 MiB at the fixed 1024 rows a
/// window; the batch reader and the Parquet writer keep 16 MiB batches and row groups too.
pub const WINDOW_BYTES: usize = 16 << 20;

/// Whether the file at `path` starts like a Parquet file (`PAR1`) or an Arrow IPC file
/// (`ARROW1`).
pub fn sniff(path: &Path) -> Option<FileKind> {
    let mut head = [0u8; 6];
    let mut f = File::open(path).ok()?;
    if !f.metadata().ok()?.is_file() {
        return None;
    }
    let n = f.read(&mut head).ok()?;
    if n >= 4 && &head[..4] == b"PAR1" {
        Some(FileKind::Parquet)
    } else if n == 6 && &head == b"ARROW1" {
        Some(FileKind::ArrowIpc)
    } else {
        None
    }
}

/// [`sniff`] for a file in `store` (an object store, say): its first 6 bytes, one ranged
/// read.
pub fn sniff_in(store: &dyn Store, path: &Path) -> Option<FileKind> {
    if store.name() == "file" {
        return sniff(path);
    }
    if !store.is_file(path) {
        return None;
    }
    let size = store.size(path).ok()?;
    let head = store.read_range(path, 0, size.min(6)).ok()?;
    if head.len() >= 4 && &head[..4] == b"PAR1" {
        Some(FileKind::Parquet)
    } else if head == b"ARROW1" {
        Some(FileKind::ArrowIpc)
    } else {
        None
    }
}

/// The rows currently decoded: `batch` holds rows `start..start + batch.num_rows()`.
struct Window {
    start: u64,
    batch: RecordBatch,
}

enum Cursor {
    Parquet {
        file: FileInput,
        meta: ArrowReaderMetadata,
        mask: ProjectionMask,
        group_starts: Vec<u64>,
        /// An open reader and the row it returns next.
        reader: Option<(ParquetRecordBatchReader, u64)>,
    },
    Ipc {
        reader: Box<FileReader<BufReader<FileInput>>>,
        batch_starts: Vec<u64>,
        /// The file again, for checking a batch's LZ4 buffers before it is decoded.
        file: FileInput,
        lz4: Vec<Option<Lz4Buffers>>,
    },
}

struct State {
    cursor: Cursor,
    window: Option<Window>,
}

/// A Parquet or Arrow IPC file read as records.
///
/// Sequential reads (conversion, iteration) decode each window of rows once; a random
/// read outside the current window decodes from the start of its row group (Parquet) or
/// record batch (IPC). The source is shared between threads behind a lock.
pub struct ArrowFileSource {
    info: SourceInfo,
    path: PathBuf,
    len: u64,
    window_rows: usize,
    /// Field name, column index in the decoded batches, plan.
    columns: Vec<Column>,
    state: Mutex<State>,
}

fn pq_err(e: impl std::fmt::Display, path: &Path) -> Error {
    Error::corrupt(format!("Parquet: {e}")).with_format("parquet").with_path(path)
}

fn ipc_err(e: arrow_schema::ArrowError, path: &Path) -> Error {
    Error::corrupt(format!("Arrow IPC: {e}")).with_format("arrow").with_path(path)
}

fn ipc_corrupt(path: &Path, what: &str) -> Error {
    Error::corrupt(format!("Arrow IPC: {what}")).with_format("arrow").with_path(path)
}

/// What an Arrow IPC file's footer and message headers say, checked against the file.
struct IpcLayout {
    /// The file's schema (every column).
    schema: arrow_schema::Schema,
    /// Rows of each record batch, in the footer's order.
    batch_rows: Vec<u64>,
    /// The buffers of each record batch compressed with LZ4, to check before decoding it.
    lz4: Vec<Option<Lz4Buffers>>,
}

/// Where an LZ4-compressed message's buffers lie in the file (offset, length).
///
/// Each starts with the length it decompresses to, and arrow-rs reserves that much memory
/// before decompressing: a damaged or hostile length (2^60) would abort the process, which
/// no error handling can catch. LZ4 expands at most about 255 times, so a length beyond
/// that bound is damage, refused before the decoder sees it.
struct Lz4Buffers(Vec<(u64, u64)>);

/// How far LZ4 can expand: 255 times (a frame's block of literal runs), with room for
/// the frame's own header.
fn lz4_bound(compressed: u64) -> u64 {
    compressed.saturating_mul(256).saturating_add(1024)
}

impl Lz4Buffers {
    /// The buffers of `batch` (a record batch or dictionary message's data) if it is
    /// LZ4-compressed; its body starts at `body` and is `body_len` bytes long.
    fn of(
        batch: &arrow_ipc::RecordBatch<'_>,
        body: u64,
        body_len: u64,
        bad: &dyn Fn(&str) -> Error,
    ) -> Result<Option<Self>> {
        let lz4 =
            batch.compression().is_some_and(|c| c.codec() == arrow_ipc::CompressionType::LZ4_FRAME);
        if !lz4 {
            return Ok(None);
        }
        let mut out = Vec::new();
        for b in batch.buffers().iter().flatten() {
            let (Ok(offset), Ok(len)) = (u64::try_from(b.offset()), u64::try_from(b.length()))
            else {
                return Err(bad("a buffer has a negative offset or length"));
            };
            if offset.checked_add(len).is_none_or(|end| end > body_len) {
                return Err(bad("a buffer lies outside its message's body"));
            }
            if len >= 8 {
                out.push((body + offset, len));
            }
        }
        Ok(Some(Lz4Buffers(out)))
    }

    /// Reads each buffer's stated length and refuses one beyond what LZ4 can expand to.
    fn check(&self, file: &FileInput, path: &Path, what: &str) -> Result<()> {
        for &(at, len) in &self.0 {
            let mut prefix = [0u8; 8];
            read_at(file, at, &mut prefix, path)?;
            let stated = i64::from_le_bytes(prefix);
            // -1: stored uncompressed; 0: empty.
            if stated > 0 && stated as u64 > lz4_bound(len - 8) {
                return Err(ipc_corrupt(
                    path,
                    &format!(
                        "{what}: an LZ4 buffer of {} bytes says it holds {stated} bytes, more \
                         than LZ4 expands to",
                        len - 8
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// Bytes at the start of an IPC file before its first message: `ARROW1` and two bytes of
/// padding.
const IPC_HEAD: u64 = 8;
/// Bytes at the end of an IPC file after its footer: the footer's length and `ARROW1`.
const IPC_TAIL: u64 = 10;

/// Reads exactly `buf.len()` bytes of `file` at `offset`.
fn read_at(file: &FileInput, offset: u64, buf: &mut [u8], path: &Path) -> Result<()> {
    use std::io::{Seek, SeekFrom};
    let mut f = file.try_clone().map_err(|e| e.with_path(path))?;
    f.seek(SeekFrom::Start(offset))
        .and_then(|_| f.read_exact(buf))
        .map_err(|e| Error::io(e, "cannot read the Arrow IPC file").with_path(path))
}

/// Reads the footer of the IPC file `file` and the header of each record batch message it
/// lists, without their bodies: the schema and every batch's row count (the record batch
/// header's `length`). Every offset and length read from the file is checked against its
/// size before anything is read through it (by this function or, later, by arrow-rs's
/// reader, which trusts them): a block outside the space between the header and the
/// footer, negative lengths, sums that overflow and record batch blocks that overlap (each
/// batch is one message, so the headers read add up to at most the file's size) are
/// [`ErrorKind::Corrupt`] errors naming the file.
fn ipc_layout(file: &FileInput, path: &Path) -> Result<IpcLayout> {
    use parquet::file::reader::Length;
    let size = Length::len(file);
    if size < IPC_HEAD + IPC_TAIL {
        return Err(ipc_corrupt(path, &format!("the file is too short ({size} bytes)")));
    }
    let mut tail = [0u8; IPC_TAIL as usize];
    read_at(file, size - IPC_TAIL, &mut tail, path)?;
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
    read_at(file, body_end, &mut footer_bytes, path)?;
    let footer = arrow_ipc::root_as_footer(&footer_bytes)
        .map_err(|e| ipc_corrupt(path, &format!("the footer does not parse ({e})")))?;
    let schema = footer
        .schema()
        .ok_or_else(|| ipc_corrupt(path, "the footer has no schema"))
        .and_then(|s| arrow_ipc::convert::try_fb_to_schema(s).map_err(|e| ipc_err(e, path)))?;
    // Where a block's message lies, once its offset and lengths are checked.
    let span = |what: &str, k: usize, block: &arrow_ipc::Block| -> Result<(u64, u64, u64)> {
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
            Some(end) if offset >= IPC_HEAD && end <= body_end => Ok((offset, meta, end)),
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
        .map(|(k, b)| span("dictionary block", k, b))
        .collect::<Result<Vec<_>>>()?;
    let blocks = footer
        .recordBatches()
        .ok_or_else(|| ipc_corrupt(path, "the footer does not list the record batches"))?;
    let spans = blocks
        .iter()
        .enumerate()
        .map(|(k, b)| span("record batch block", k, b))
        .collect::<Result<Vec<_>>>()?;
    // Every message once: blocks that overlap (a hostile footer listing one large message
    // a million times) are refused before any is read.
    let mut sorted: Vec<(u64, u64)> =
        dictionaries.iter().chain(&spans).map(|&(offset, _, end)| (offset, end)).collect();
    sorted.sort_unstable();
    if sorted.windows(2).any(|w| w[1].0 < w[0].1) {
        return Err(ipc_corrupt(path, "the footer lists messages that overlap"));
    }
    let mut meta_bytes = Vec::new();
    for (k, &(offset, meta, end)) in dictionaries.iter().enumerate() {
        // arrow-rs decodes the dictionaries when it opens the file: LZ4 ones are checked
        // here, before that.
        let what = format!("dictionary batch {k}");
        let bad = |why: &str| ipc_corrupt(path, &format!("{what}: {why}"));
        let message = read_message(file, offset, meta, &mut meta_bytes, path, &bad)?;
        let data = message
            .header_as_dictionary_batch()
            .and_then(|d| d.data())
            .ok_or_else(|| bad("the block holds no dictionary batch message"))?;
        let body = offset + meta;
        if let Some(lz4) = Lz4Buffers::of(&data, body, end - body, &bad)? {
            lz4.check(file, path, &what)?;
        }
    }
    let mut batch_rows = Vec::with_capacity(spans.len());
    let mut lz4 = Vec::with_capacity(spans.len());
    for (k, &(offset, meta, end)) in spans.iter().enumerate() {
        let bad = |why: &str| ipc_corrupt(path, &format!("record batch {k}: {why}"));
        let message = read_message(file, offset, meta, &mut meta_bytes, path, &bad)?;
        let header = message
            .header_as_record_batch()
            .ok_or_else(|| bad("the block holds no record batch message"))?;
        let rows = u64::try_from(header.length())
            .map_err(|_| bad(&format!("negative row count {}", header.length())))?;
        batch_rows.push(rows);
        let body = offset + meta;
        lz4.push(Lz4Buffers::of(&header, body, end - body, &bad)?);
    }
    Ok(IpcLayout { schema, batch_rows, lz4 })
}

/// Reads the message of the block at `offset` (`meta` bytes) into `bytes` and parses its
/// header.
fn read_message<'b>(
    file: &FileInput,
    offset: u64,
    meta: u64,
    bytes: &'b mut Vec<u8>,
    path: &Path,
    bad: &dyn Fn(&str) -> Error,
) -> Result<arrow_ipc::Message<'b>> {
    bytes.resize(meta as usize, 0);
    read_at(file, offset, bytes, path)?;
    // An encapsulated message: a continuation marker (0xFFFFFFFF) and the flatbuffer's
    // length, or (before format 0.15) the length alone; then the flatbuffer.
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

/// Indices in `schema` of the columns `options` selects (`columns` in their order, or all,
/// less `skip_columns`), or an error naming a column the file does not have.
fn projection(
    schema: &arrow_schema::Schema,
    options: &ReadOptions,
    path: &Path,
) -> Result<Vec<usize>> {
    let index_of = |name: &str| {
        schema.index_of(name).map_err(|_| {
            let have: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
            Error::invalid_input(format!("no column {name:?} (the file has {})", have.join(", ")))
                .with_path(path)
        })
    };
    let mut out = match &options.columns {
        Some(wanted) => wanted.iter().map(|n| index_of(n)).collect::<Result<Vec<_>>>()?,
        None => (0..schema.fields().len()).collect(),
    };
    for name in &options.skip_columns {
        index_of(name)?;
    }
    out.retain(|&i| !options.skip_columns.iter().any(|n| n == schema.field(i).name()));
    Ok(out)
}

/// Runs a step of the Parquet or IPC decoders, which can panic on damaged input (e.g. a
/// page that names a dictionary the column chunk does not have): a panic becomes an
/// [`ErrorKind::Corrupt`] error.
fn guarded<T>(path: &Path, step: impl FnOnce() -> Result<T>) -> Result<T> {
    catch_panics(step).map_err(|e| e.with_path(path))
}

impl ArrowFileSource {
    /// Opens `path`, telling Parquet from Arrow IPC by its first bytes.
    pub fn open(path: impl AsRef<Path>, options: &ReadOptions) -> Result<Self> {
        let path = path.as_ref();
        match sniff(path) {
            Some(kind) => Self::open_as(path, kind, options),
            None => Err(Error::unsupported("not a Parquet or Arrow IPC file").with_path(path)),
        }
    }

    /// Opens `path` as `kind`.
    pub fn open_as(path: impl AsRef<Path>, kind: FileKind, options: &ReadOptions) -> Result<Self> {
        Self::open_in(&reel_core::local_store(), path, kind, options)
    }

    /// Opens `path` in `store` (an object store, say) as `kind`. Outside the local file
    /// system the file is read by ranges: its footer and metadata, then each column chunk
    /// (Parquet) or record batch (IPC) a read needs, in requests of up to 1 MiB.
    pub fn open_in(
        store: &StoreRef,
        path: impl AsRef<Path>,
        kind: FileKind,
        options: &ReadOptions,
    ) -> Result<Self> {
        let path = path.as_ref();
        guarded(path, || Self::open_unguarded(store, path, kind, options))
    }

    fn open_unguarded(
        store: &StoreRef,
        path: &Path,
        kind: FileKind,
        options: &ReadOptions,
    ) -> Result<Self> {
        let file = FileInput::open(store, path)?;
        let mut info = SourceInfo::new(match kind {
            FileKind::Parquet => "parquet",
            FileKind::ArrowIpc => "arrow",
        });
        info.paths = vec![path.to_path_buf()];
        let mut window_rows = options.window_rows.max(1);
        let (cursor, schema, len, order) = match kind {
            FileKind::Parquet => {
                let meta = ArrowReaderMetadata::load(&file, ArrowReaderOptions::new())
                    .map_err(|e| pq_err(e, path))?;
                let schema = meta.schema().clone();
                let order = projection(&schema, options, path)?;
                let mut sorted = order.clone();
                sorted.sort_unstable();
                let mask = ProjectionMask::roots(meta.parquet_schema(), sorted.iter().copied());
                let mut group_starts = Vec::new();
                let mut total = 0u64;
                let mut row_bytes = 1u64;
                for g in meta.metadata().row_groups() {
                    if let (Ok(size), Ok(rows)) =
                        (u64::try_from(g.total_byte_size()), u64::try_from(g.num_rows()))
                        && rows > 0
                    {
                        row_bytes = row_bytes.max(size.div_ceil(rows));
                    }
                    group_starts.push(total);
                    let rows = u64::try_from(g.num_rows()).map_err(|_| {
                        pq_err(
                            parquet::errors::ParquetError::General("negative row count".into()),
                            path,
                        )
                    })?;
                    total = total
                        .checked_add(rows)
                        .ok_or_else(|| Error::corrupt("row count overflows").with_path(path))?;
                }
                let fm = meta.metadata().file_metadata();
                info.version = Some(format!("Parquet {}", fm.version()));
                info.facts.push(("row groups".into(), group_starts.len().to_string()));
                if let Some(by) = fm.created_by() {
                    info.facts.push(("created by".into(), by.to_string()));
                }
                // Decoded batches hold the selected columns in file order.
                let order: Vec<usize> =
                    order.iter().map(|i| sorted.iter().position(|s| s == i).unwrap_or(0)).collect();
                let projected: Vec<usize> = sorted.clone();
                let fields = projected.iter().map(|&i| schema.field(i).clone()).collect::<Vec<_>>();
                let pschema = Arc::new(arrow_schema::Schema::new(fields));
                // Every column's bytes count, selected or not: an upper bound, cheaper than
                // mapping the selection to its leaf columns.
                let fit = usize::try_from(WINDOW_BYTES as u64 / row_bytes).unwrap_or(usize::MAX);
                window_rows = window_rows.min(fit.max(1));
                (
                    Cursor::Parquet { file, meta, mask, group_starts, reader: None },
                    pschema,
                    total,
                    order,
                )
            }
            FileKind::ArrowIpc => {
                // Rows per batch come from the batches' message headers (read and checked
                // before arrow-rs reads anything the footer points at), not from decoding
                // every batch, which held the largest batch in memory only to count it.
                let layout = ipc_layout(&file, path)?;
                let order = projection(&layout.schema, options, path)?;
                let checks = file.try_clone().map_err(|e| e.with_path(path))?;
                let reader = FileReader::try_new(file.buffered(), Some(order.clone()))
                    .map_err(|e| ipc_err(e, path))?;
                if reader.num_batches() != layout.batch_rows.len() {
                    return Err(ipc_corrupt(path, "the footer lists its batches inconsistently"));
                }
                let mut batch_starts = Vec::with_capacity(layout.batch_rows.len());
                let mut total = 0u64;
                for &rows in &layout.batch_rows {
                    batch_starts.push(total);
                    total = total.checked_add(rows).ok_or_else(|| {
                        ipc_corrupt(path, "the record batches' row counts overflow")
                    })?;
                }
                info.facts.push(("record batches".into(), batch_starts.len().to_string()));
                let schema = reader.schema();
                let n = schema.fields().len();
                (
                    Cursor::Ipc {
                        reader: Box::new(reader),
                        batch_starts,
                        file: checks,
                        lz4: layout.lz4,
                    },
                    schema,
                    total,
                    (0..n).collect(),
                )
            }
        };
        let (columns, specs) = columns_of(&schema, &order).map_err(|e| e.with_path(path))?;
        info.schema = Some(specs);
        Ok(ArrowFileSource {
            info,
            path: path.to_path_buf(),
            len,
            window_rows,
            columns,
            state: Mutex::new(State { cursor, window: None }),
        })
    }

    /// Makes the window hold row `index`. After a failure the next read starts afresh.
    fn seek(&self, state: &mut State, index: u64) -> Result<()> {
        let result = guarded(&self.path, || self.seek_unguarded(state, index));
        if result.is_err() {
            state.window = None;
            if let Cursor::Parquet { reader, .. } = &mut state.cursor {
                *reader = None;
            }
        }
        result
    }

    fn seek_unguarded(&self, state: &mut State, index: u64) -> Result<()> {
        if let Some(w) = &state.window
            && index >= w.start
            && index < w.start + w.batch.num_rows() as u64
        {
            return Ok(());
        }
        let path = &self.path;
        match &mut state.cursor {
            Cursor::Parquet { file, meta, mask, group_starts, reader } => {
                // Keep reading forward when the row is near; otherwise start a reader at it.
                let near = matches!(reader, Some((_, next)) if *next <= index
                    && index - *next < 4 * self.window_rows as u64);
                if !near {
                    let g = group_starts.partition_point(|&s| s <= index).saturating_sub(1);
                    let skip = index - group_starts[g];
                    let rest = self.len - group_starts[g];
                    let f = file.try_clone().map_err(|e| e.with_path(path))?;
                    let mut b = ParquetRecordBatchReaderBuilder::new_with_metadata(f, meta.clone())
                        .with_projection(mask.clone())
                        .with_row_groups((g..group_starts.len()).collect())
                        .with_batch_size(self.window_rows);
                    if skip > 0 {
                        b = b.with_row_selection(RowSelection::from(vec![
                            RowSelector::skip(skip as usize),
                            RowSelector::select((rest - skip) as usize),
                        ]));
                    }
                    *reader = Some((b.build().map_err(|e| pq_err(e, path))?, index));
                }
                let Some((r, next)) = reader else { return Err(Error::corrupt("no reader")) };
                loop {
                    let batch =
                        r.next().transpose().map_err(|e| pq_err(e, path))?.ok_or_else(|| {
                            Error::corrupt("Parquet file has fewer rows than its footer says")
                                .with_path(path)
                        })?;
                    let start = *next;
                    *next += batch.num_rows() as u64;
                    if index < *next {
                        state.window = Some(Window { start, batch });
                        return Ok(());
                    }
                }
            }
            Cursor::Ipc { reader, batch_starts, file, lz4 } => {
                // Only the batch holding the row is read (its message and whole body, every
                // column's buffers): memory per read is bounded by that batch.
                let b = batch_starts.partition_point(|&s| s <= index).saturating_sub(1);
                if let Some(Some(buffers)) = lz4.get(b) {
                    buffers.check(file, path, &format!("record batch {b}"))?;
                }
                reader.set_index(b).map_err(|e| ipc_err(e, path))?;
                let batch = reader
                    .next()
                    .transpose()
                    .map_err(|e| ipc_err(e, path))?
                    .ok_or_else(|| Error::corrupt("IPC batch vanished").with_path(path))?;
                // The length the header gave at open is the one the decoder builds the
                // batch with; a difference means the file changed since it was opened.
                let end = batch_starts.get(b + 1).copied().unwrap_or(self.len);
                if batch.num_rows() as u64 != end - batch_starts[b] {
                    return Err(ipc_corrupt(
                        path,
                        &format!(
                            "record batch {b} has {} rows, but its header said {} when the \
                             file was opened",
                            batch.num_rows(),
                            end - batch_starts[b]
                        ),
                    ));
                }
                state.window = Some(Window { start: batch_starts[b], batch });
                Ok(())
            }
        }
    }

    /// Decodes row `index` (which the window holds) into `out`.
    fn decode(&self, window: &Window, index: u64, out: &mut RecordOut<'_>) -> Result<()> {
        let row = (index - window.start) as usize;
        guarded(&self.path, || decode_row(&self.columns, &window.batch, row, out))
    }

    fn lock(&self) -> Result<std::sync::MutexGuard<'_, State>> {
        self.state.lock().map_err(|_| Error::new(ErrorKind::Closed, "an earlier read panicked"))
    }
}

impl RecordSource for ArrowFileSource {
    fn info(&self) -> &SourceInfo {
        &self.info
    }

    fn len(&self) -> u64 {
        self.len
    }

    fn read_into(&self, index: u64, out: &mut Record) -> Result<()> {
        out.clear();
        if index >= self.len {
            return Err(Error::out_of_range(index, self.len).with_path(&self.path));
        }
        let mut state = self.lock()?;
        self.seek(&mut state, index).map_err(|e| e.with_record(index))?;
        let window = state.window.as_ref().ok_or_else(|| Error::corrupt("no window"))?;
        let result = self.decode(window, index, &mut out.out());
        if result.is_err() {
            out.clear();
        } else {
            out.set_index(index);
        }
        result.map_err(|e| e.with_record(index).with_path(&self.path))
    }

    fn read_batch_into(&self, indices: &[u64], out: &mut ReelBatch) -> Result<()> {
        out.clear();
        let mut state = self.lock()?;
        for &index in indices {
            if index >= self.len {
                out.clear();
                return Err(Error::out_of_range(index, self.len).with_path(&self.path));
            }
            let r = self.seek(&mut state, index).and_then(|()| {
                let window = state.window.as_ref().ok_or_else(|| Error::corrupt("no window"))?;
                out.push_with(index, |o| self.decode(window, index, o))
            });
            if let Err(e) = r {
                out.clear();
                return Err(e.with_record(index).with_path(&self.path));
            }
        }
        Ok(())
    }
}

/// The Arrow schema of a Parquet or Arrow IPC file, to give as
/// [`ArrowOptions::schema`](crate::ArrowOptions::schema) when writing.
pub fn schema_of_file(path: impl AsRef<Path>) -> Result<SchemaRef> {
    let path = path.as_ref();
    let file = File::open(path).map_err(|e| Error::io(e, "cannot open").with_path(path))?;
    match sniff(path) {
        Some(FileKind::Parquet) => Ok(ArrowReaderMetadata::load(&file, ArrowReaderOptions::new())
            .map_err(|e| pq_err(e, path))?
            .schema()
            .clone()),
        Some(FileKind::ArrowIpc) => {
            drop(file);
            let input = FileInput::open(&reel_core::local_store(), path)?;
            Ok(Arc::new(ipc_layout(&input, path)?.schema))
        }
        None => Err(Error::unsupported("not a Parquet or Arrow IPC file").with_path(path)),
    }
}
