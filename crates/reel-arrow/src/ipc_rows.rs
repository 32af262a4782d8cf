//! Chosen rows of uncompressed Arrow IPC record batches, read from object storage without
//! the rest of their batches.
//!
//! A random batch of records from an IPC file in a store used to fetch every record batch
//! it touched, whole: from a Hugging Face `datasets` file of 1,000-row batches, 256 random
//! rows cost about 92 MB. A record batch message lists where each column's buffers lie in
//! its body, so for flat columns (bytes, text, integers, floats) the rows asked for can be
//! read alone, in three batched reads of the store whatever the number of batches: the
//! batches' headers, then each row's validity byte and offsets (or fixed-width value),
//! then the values those offsets point at. Every position read from the file is checked
//! against the buffer it lies in, and the values are refused (the caller then fetches the
//! batches whole) when they would come to more than half of the batches' bodies, so this
//! never reads nor holds more than the whole-batch path would.

use std::path::Path;
use std::sync::Arc;

use arrow_array::types::{
    Float32Type, Float64Type, Int8Type, Int16Type, Int32Type, Int64Type, UInt8Type, UInt16Type,
    UInt32Type, UInt64Type,
};
use arrow_array::{
    ArrayRef, ArrowPrimitiveType, BinaryArray, LargeBinaryArray, LargeStringArray, PrimitiveArray,
    RecordBatch, StringArray,
};
use arrow_ipc::Block;
use arrow_schema::{DataType, Schema, SchemaRef};
use reel_core::{ReadReq, Result};

use crate::input::FileInput;
use crate::ipc_file::{block_span, each_batch_header, ipc_corrupt};

/// The rows of one record batch to read: the batch's number, its block and row count, and
/// the rows (ascending, distinct, within the batch).
pub(crate) struct WantedRows<'a> {
    pub(crate) batch: usize,
    pub(crate) block: Block,
    pub(crate) rows: &'a [usize],
}

/// How a selected column's rows are read.
#[derive(Clone, Copy)]
enum Kind {
    /// Offsets of `width` bytes (4 or 8) into a values buffer.
    Var { width: usize },
    /// Values of `width` bytes each.
    Fixed { width: usize },
}

/// A selected column: how it reads, and its field node and first buffer in a message.
struct Column {
    kind: Kind,
    node: usize,
    buffer: usize,
}

/// Where the selected columns' rows are read from, for a file's schema and selection;
/// `None` when a column of the file's schema cannot be placed (a union, a view type) or a
/// selected column is not flat.
pub(crate) struct RowReader {
    columns: Vec<Column>,
    /// The schema of the batches returned (the selected columns).
    schema: SchemaRef,
}

impl RowReader {
    /// The reader of the columns `projection` selects of `full`, returning batches of
    /// `schema`; `None` when they cannot be read a row at a time.
    pub(crate) fn new(full: &Schema, projection: &[usize], schema: SchemaRef) -> Option<Self> {
        let mut places = Vec::with_capacity(full.fields().len());
        let (mut nodes, mut buffers) = (0, 0);
        for field in full.fields() {
            places.push((nodes, buffers));
            count(field.data_type(), &mut nodes, &mut buffers)?;
        }
        let columns = projection
            .iter()
            .map(|&c| {
                let (node, buffer) = *places.get(c)?;
                let kind = match full.field(c).data_type() {
                    DataType::Binary | DataType::Utf8 => Kind::Var { width: 4 },
                    DataType::LargeBinary | DataType::LargeUtf8 => Kind::Var { width: 8 },
                    t @ (DataType::Int8
                    | DataType::Int16
                    | DataType::Int32
                    | DataType::Int64
                    | DataType::UInt8
                    | DataType::UInt16
                    | DataType::UInt32
                    | DataType::UInt64
                    | DataType::Float32
                    | DataType::Float64) => Kind::Fixed { width: t.primitive_width()? },
                    _ => return None,
                };
                Some(Column { kind, node, buffer })
            })
            .collect::<Option<Vec<_>>>()?;
        Some(RowReader { columns, schema })
    }

    /// The rows `wanted` asks for, one batch of `schema` per entry, in `wanted`'s order;
    /// `None` when they are better read with their batches whole (a batch is compressed,
    /// or the rows' values come to more than half of the batches' bodies).
    pub(crate) fn read(
        &self,
        file: &FileInput,
        path: &Path,
        wanted: &[WantedRows<'_>],
    ) -> Result<Option<Vec<RecordBatch>>> {
        // The headers: where each column's buffers lie.
        let blocks: Vec<(usize, Block)> = wanted.iter().map(|w| (w.batch, w.block)).collect();
        let mut layouts = Vec::with_capacity(wanted.len());
        each_batch_header(file, path, &blocks, |i, header, bad| {
            layouts.push(self.layout(header, &wanted[i], bad)?);
            Ok(())
        })?;
        let Some(layouts) = layouts.into_iter().collect::<Option<Vec<_>>>() else {
            return Ok(None);
        };
        let bodies: u64 = wanted.iter().map(|w| w.block.bodyLength().max(0) as u64).sum();
        // Each row's validity byte and offsets (or value).
        let mut reqs = Vec::new();
        let mut total = 0usize;
        for (w, layout) in wanted.iter().zip(&layouts) {
            for (c, column) in self.columns.iter().zip(&layout.columns) {
                for &row in w.rows {
                    if let Some(validity) = column.validity {
                        reqs.push(validity.piece(row / 8, 1, total));
                        total += 1;
                    }
                    let (at, len) = match c.kind {
                        Kind::Var { width } => (row * width, 2 * width),
                        Kind::Fixed { width } => (row * width, width),
                    };
                    reqs.push(column.values_or_offsets.piece(at, len, total));
                    total += len;
                }
            }
        }
        let mut fixed = vec![0u8; total];
        file.read_many(&reqs, &mut fixed, path)?;
        // The values the offsets point at, checked against their buffer.
        let mut pieces = reqs.iter().map(|r| &fixed[r.dest..r.dest + r.len]);
        let mut cells: Vec<Vec<Vec<Cell<'_>>>> = Vec::with_capacity(wanted.len());
        let mut value_reqs = Vec::new();
        let mut value_bytes = 0usize;
        for (w, layout) in wanted.iter().zip(&layouts) {
            let bad = |why: &str| ipc_corrupt(path, &format!("record batch {}: {why}", w.batch));
            let mut batch_cells = Vec::with_capacity(self.columns.len());
            for (c, column) in self.columns.iter().zip(&layout.columns) {
                let mut column_cells = Vec::with_capacity(w.rows.len());
                for &row in w.rows {
                    let valid = match column.validity {
                        Some(_) => pieces
                            .next()
                            .and_then(|b| b.first())
                            .is_some_and(|byte| (byte >> (row % 8)) & 1 == 1),
                        None => true,
                    };
                    let piece = pieces.next().ok_or_else(|| bad("a read is missing"))?;
                    column_cells.push(match (c.kind, valid) {
                        (_, false) => Cell::Null,
                        (Kind::Fixed { .. }, true) => Cell::Fixed(piece),
                        (Kind::Var { width }, true) => {
                            let (start, end) = piece
                                .split_at_checked(width)
                                .map_or((None, None), |(s, e)| (offset(s), offset(e)));
                            let values = column.values.ok_or_else(|| bad("no values buffer"))?;
                            match (start, end) {
                                (Some(s), Some(e)) if s <= e && e <= values.len => {
                                    let len = (e - s) as usize;
                                    value_reqs.push(values.piece(s as usize, len, value_bytes));
                                    value_bytes = value_bytes.saturating_add(len);
                                    Cell::Value(value_reqs.len() - 1)
                                }
                                _ => {
                                    return Err(bad(&format!(
                                        "row {row}'s offsets ({start:?}, {end:?}) lie outside \
                                         its values ({} bytes)",
                                        values.len
                                    )));
                                }
                            }
                        }
                    });
                }
                batch_cells.push(column_cells);
            }
            cells.push(batch_cells);
        }
        if value_bytes as u64 > bodies / 2 {
            return Ok(None);
        }
        let mut values = vec![0u8; value_bytes];
        file.read_many(&value_reqs, &mut values, path)?;
        let value = |k: usize| &values[value_reqs[k].dest..value_reqs[k].dest + value_reqs[k].len];
        wanted
            .iter()
            .zip(cells)
            .map(|(w, batch_cells)| {
                let bad =
                    |why: &str| ipc_corrupt(path, &format!("record batch {}: {why}", w.batch));
                let arrays = self
                    .schema
                    .fields()
                    .iter()
                    .zip(&batch_cells)
                    .map(|(field, cells)| array(field.data_type(), cells, &value, &bad))
                    .collect::<Result<Vec<_>>>()?;
                RecordBatch::try_new(self.schema.clone(), arrays)
                    .map_err(|e| bad(&format!("its rows do not make a batch ({e})")))
            })
            .collect::<Result<Vec<_>>>()
            .map(Some)
    }

    /// Where the selected columns' buffers lie in the body of the batch `header`
    /// describes; `None` when the batch is compressed.
    fn layout(
        &self,
        header: arrow_ipc::RecordBatch<'_>,
        w: &WantedRows<'_>,
        bad: &dyn Fn(&str) -> reel_core::Error,
    ) -> Result<Option<BatchLayout>> {
        if header.compression().is_some() {
            return Ok(None);
        }
        let nodes = header.nodes().ok_or_else(|| bad("the header lists no field nodes"))?;
        let buffers = header.buffers().ok_or_else(|| bad("the header lists no buffers"))?;
        let (offset, meta, end) = block_span(&w.block);
        let (body_start, body_len) = (offset + meta, end - offset - meta);
        let rows = u64::try_from(header.length()).map_err(|_| bad("a negative row count"))?;
        let buffer = |k: usize| -> Result<Span> {
            let b = (k < buffers.len())
                .then(|| buffers.get(k))
                .ok_or_else(|| bad("a buffer is missing"))?;
            let (offset, len) = (u64::try_from(b.offset()), u64::try_from(b.length()));
            match (offset, len) {
                (Ok(o), Ok(l)) if o.checked_add(l).is_some_and(|end| end <= body_len) => {
                    Ok(Span { start: body_start + o, len: l })
                }
                _ => Err(bad(&format!(
                    "buffer {k} ({} bytes at {}) lies outside the body ({body_len} bytes)",
                    b.length(),
                    b.offset()
                ))),
            }
        };
        let mut columns = Vec::with_capacity(self.columns.len());
        for c in &self.columns {
            let node = (c.node < nodes.len())
                .then(|| nodes.get(c.node))
                .ok_or_else(|| bad("a field node is missing"))?;
            if u64::try_from(node.length()).ok() != Some(rows) {
                return Err(bad(&format!(
                    "a column has {} rows where the batch has {rows}",
                    node.length()
                )));
            }
            let validity = buffer(c.buffer)?;
            let validity = (node.null_count() != 0 && validity.len > 0).then_some(validity);
            let second = buffer(c.buffer + 1)?;
            let values = match c.kind {
                Kind::Var { .. } => Some(buffer(c.buffer + 2)?),
                Kind::Fixed { .. } => None,
            };
            // Every row asked for lies in its buffers.
            let last = w.rows.last().copied().unwrap_or(0) as u64;
            // (A row count the header inflates makes no position past the buffer: checked
            // arithmetic, and the buffer's length, bound them.)
            let need = match c.kind {
                Kind::Var { width } => {
                    last.checked_add(2).and_then(|n| n.checked_mul(width as u64))
                }
                Kind::Fixed { width } => {
                    last.checked_add(1).and_then(|n| n.checked_mul(width as u64))
                }
            };
            let outside = need.is_none_or(|need| second.len < need);
            if last >= rows || outside || validity.is_some_and(|v| v.len <= last / 8) {
                return Err(bad(&format!(
                    "row {last} lies outside its column's buffers ({} bytes)",
                    second.len
                )));
            }
            columns.push(ColumnLayout { validity, values_or_offsets: second, values });
        }
        Ok(Some(BatchLayout { columns }))
    }
}

/// A range of the file: a buffer of a batch.
#[derive(Clone, Copy)]
struct Span {
    start: u64,
    len: u64,
}

impl Span {
    /// A read of `len` bytes at `at` in this buffer (checked by the caller), into `dest`.
    fn piece(self, at: usize, len: usize, dest: usize) -> ReadReq {
        ReadReq { file: 0, offset: self.start + at as u64, len, dest }
    }
}

/// Where a selected column's buffers lie in one batch.
struct ColumnLayout {
    /// The validity bitmap, when the column has nulls in this batch.
    validity: Option<Span>,
    /// The offsets (bytes and text) or the values (numbers).
    values_or_offsets: Span,
    /// The values the offsets point at (bytes and text).
    values: Option<Span>,
}

/// Where the selected columns' buffers lie in one batch.
struct BatchLayout {
    columns: Vec<ColumnLayout>,
}

/// A row's value as read: null, a number's bytes (where they were read), or the number of
/// a read of values.
enum Cell<'f> {
    Null,
    Fixed(&'f [u8]),
    Value(usize),
}

/// An offset of 4 or 8 little-endian bytes, if it is not negative.
fn offset(bytes: &[u8]) -> Option<u64> {
    match bytes.len() {
        4 => u64::try_from(i32::from_le_bytes(bytes.try_into().ok()?)).ok(),
        8 => u64::try_from(i64::from_le_bytes(bytes.try_into().ok()?)).ok(),
        _ => None,
    }
}

/// The field nodes and buffers a column of `data_type` takes in a record batch message,
/// added to `nodes` and `buffers`; `None` for types whose count is not fixed (unions,
/// view types) or that reel does not place.
fn count(data_type: &DataType, nodes: &mut usize, buffers: &mut usize) -> Option<()> {
    *nodes += 1;
    match data_type {
        DataType::Null => {}
        DataType::Binary | DataType::Utf8 | DataType::LargeBinary | DataType::LargeUtf8 => {
            *buffers += 3
        }
        DataType::List(f) | DataType::LargeList(f) | DataType::Map(f, _) => {
            *buffers += 2;
            count(f.data_type(), nodes, buffers)?;
        }
        DataType::FixedSizeList(f, _) => {
            *buffers += 1;
            count(f.data_type(), nodes, buffers)?;
        }
        DataType::Struct(fields) => {
            *buffers += 1;
            for f in fields {
                count(f.data_type(), nodes, buffers)?;
            }
        }
        DataType::Dictionary(key, _) => count(key, &mut 0, buffers)?,
        t if t.is_primitive() || matches!(t, DataType::Boolean | DataType::FixedSizeBinary(_)) => {
            *buffers += 2
        }
        _ => return None,
    }
    Some(())
}

/// The array of `data_type` holding `cells`.
fn array<'v>(
    data_type: &DataType,
    cells: &[Cell<'_>],
    value: &dyn Fn(usize) -> &'v [u8],
    bad: &dyn Fn(&str) -> reel_core::Error,
) -> Result<ArrayRef> {
    let bytes = || -> Vec<Option<&'v [u8]>> {
        cells
            .iter()
            .map(|c| match c {
                Cell::Value(k) => Some(value(*k)),
                _ => None,
            })
            .collect()
    };
    let text = || -> Result<Vec<Option<&'v str>>> {
        bytes()
            .into_iter()
            .map(|b| {
                b.map(|b| std::str::from_utf8(b).map_err(|_| bad("a text value is not UTF-8")))
                    .transpose()
            })
            .collect()
    };
    Ok(match data_type {
        DataType::Binary => Arc::new(BinaryArray::from(bytes())),
        DataType::LargeBinary => Arc::new(LargeBinaryArray::from(bytes())),
        DataType::Utf8 => Arc::new(StringArray::from(text()?)),
        DataType::LargeUtf8 => Arc::new(LargeStringArray::from(text()?)),
        DataType::Int8 => numbers::<Int8Type>(cells),
        DataType::Int16 => numbers::<Int16Type>(cells),
        DataType::Int32 => numbers::<Int32Type>(cells),
        DataType::Int64 => numbers::<Int64Type>(cells),
        DataType::UInt8 => numbers::<UInt8Type>(cells),
        DataType::UInt16 => numbers::<UInt16Type>(cells),
        DataType::UInt32 => numbers::<UInt32Type>(cells),
        DataType::UInt64 => numbers::<UInt64Type>(cells),
        DataType::Float32 => numbers::<Float32Type>(cells),
        DataType::Float64 => numbers::<Float64Type>(cells),
        other => return Err(bad(&format!("a {other} column cannot be read a row at a time"))),
    })
}

/// The numbers of type `T` whose bytes (the machine's order, checked at open) `cells`
/// hold, gathered in an aligned buffer.
fn numbers<T: ArrowPrimitiveType>(cells: &[Cell<'_>]) -> ArrayRef {
    let width = std::mem::size_of::<T::Native>();
    let mut bytes = arrow_buffer::MutableBuffer::with_capacity(cells.len() * width);
    let mut valid = Vec::with_capacity(cells.len());
    for cell in cells {
        match cell {
            Cell::Fixed(b) if b.len() == width => {
                bytes.extend_from_slice(b);
                valid.push(true);
            }
            _ => {
                bytes.extend_zeros(width);
                valid.push(false);
            }
        }
    }
    let values = arrow_buffer::ScalarBuffer::<T::Native>::new(bytes.into(), 0, cells.len());
    let nulls = valid.contains(&false).then(|| arrow_buffer::NullBuffer::from(valid));
    Arc::new(PrimitiveArray::<T>::new(values, nulls))
}
