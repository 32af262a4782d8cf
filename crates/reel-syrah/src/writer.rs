//! Writing Syrah files, byte-identical to the reference writer.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};

use reel_core::{
    DType, Error, ErrorKind, FieldName, RecordRef, RecordSink, Result, SinkSummary, StagedFile,
    UnfinishedGuard, ValueRef, check_array_len,
};

use crate::FORMAT;
use crate::dtype::SyrahDType;
use crate::header::{HEADER_LEN, SyrahHeader, SyrahVersion};
use crate::metadata::{EncodeColumn, encode, encoded_len};

const BUFFER: usize = 1 << 20;

/// How to write a Syrah file.
#[derive(Clone, Debug, Default)]
pub struct SyrahWriteOptions {
    /// The version written into the header (default 0.2.0, like the newest reference).
    pub version: SyrahVersion,
    /// Store values that are not arrays or text as the arrays numpy would make of them:
    /// `Bytes` as `uint8`, `Int` as one `int64`, a `UInt` above `i64::MAX` as one `uint64`,
    /// `Float` as one `float64`, `Bool` as one `bool`. They read back as 1-D arrays. Off by
    /// default, so such values are a [`ErrorKind::Schema`] error instead of a silent change
    /// of type (`reel convert` turns it on).
    pub coerce_values: bool,
}

impl SyrahWriteOptions {
    /// Writes `version` into the header.
    pub fn version(mut self, version: SyrahVersion) -> Self {
        self.version = version;
        self
    }

    /// Turns [`coerce_values`](Self::coerce_values) on or off.
    pub fn coerce_values(mut self, on: bool) -> Self {
        self.coerce_values = on;
        self
    }
}

/// The offset and size vectors of one array name, as little-endian bytes ready for BSON.
struct Column {
    name: FieldName,
    dtype: SyrahDType,
    offsets: Vec<u8>,
    sizes: Vec<u8>,
    /// The `prepare` call that last supplied this array (finds duplicates without allocating).
    seen_in: u64,
}

/// What one field of the item being added becomes.
struct Piece {
    column: usize,
    /// Bytes produced by conversion (unicode join, coerced scalar) in the scratch buffer;
    /// `None` when the field's own bytes are written as they are.
    converted: Option<Range<usize>>,
}

/// Writes one Syrah file.
///
/// Items are [`Record`](reel_core::Record)s whose fields are the item's named arrays
/// (the reference's `add_item(dict)`): every field is written, in the record's field order,
/// straight after the previous one, and the metadata keeps the array names in the order
/// of the first item. For the same items this gives the same bytes as the reference.
///
/// What a field may be:
///
/// * an `Array` of `bool`, `int8` … `uint64`, `float16`/`32`/`64` or `float128`: its bytes
///   are written in C order and its shape is dropped (the format stores none);
/// * a `Str`: stored as dtype `str` (UTF-8); text ending in NUL characters is refused,
///   since readers drop trailing NULs;
/// * an `Array` of numpy unicode (`<Un`): its elements, each without its trailing NUL
///   padding, are joined with no separator and stored as one `str`, as the reference does;
/// * with [`SyrahWriteOptions::coerce_values`], also `Bytes`, `Int`, `Float` and `Bool`.
///
/// Differences from the reference, all deliberate:
///
/// * An item is checked completely before any of its bytes are written. One whose array
///   names differ from the first item's, or whose dtype for a name differs from the first
///   item's, is refused with [`ErrorKind::Schema`] and leaves the file unchanged; the
///   writer stays usable. (The reference, on a dtype mismatch, keeps half of the rejected
///   item in its metadata, which leaves a phantom item that reads garbage.)
/// * An item with no arrays is refused with [`ErrorKind::InvalidInput`]: the file could
///   not record how many items it has, and the reference cannot open the file it writes.
/// * [`finish`](Self::finish) with zero items is an [`ErrorKind::InvalidInput`] error, and
///   the writer stays usable: Syrah cannot express an empty dataset (the item count is the
///   length of the offset vectors). The reference fails on close and leaves an empty file.
/// * An item that would push the metadata past BSON's 2 GiB limit is refused with
///   [`ErrorKind::Limit`] before anything is written.
/// * Output is staged under a temporary name and renamed into place after `fsync`; a
///   writer dropped before `finish` leaves nothing behind. The reference writes in place
///   and leaves a file with a zeroed header when interrupted.
/// * Arrays are little-endian by definition in reel, so the reference's quirk of storing
///   big-endian input under the little-endian name cannot happen.
pub struct SyrahWriter {
    path: PathBuf,
    options: SyrahWriteOptions,
    target: Option<StagedFile>,
    out: Option<BufWriter<File>>,
    pos: u64,
    columns: Vec<Column>,
    by_name: HashMap<FieldName, usize>,
    items: u64,
    broken: bool,
    /// Counts `prepare` calls, for [`Column::seen_in`].
    generation: u64,
    pieces: Vec<Piece>,
    scratch: Vec<u8>,
    unfinished: UnfinishedGuard,
}

impl SyrahWriter {
    /// A writer of a new Syrah file at `path` (replaced on [`finish`](Self::finish)).
    pub fn create(path: impl AsRef<Path>) -> Result<Self> {
        Self::create_with(path, &SyrahWriteOptions::default())
    }

    /// [`create`](Self::create) with options.
    pub fn create_with(path: impl AsRef<Path>, options: &SyrahWriteOptions) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        let target = StagedFile::create(&path).map_err(|e| e.with_format(FORMAT))?;
        let mut file = target
            .file()
            .try_clone()
            .map_err(|e| Error::io(e, "cannot clone file handle").with_format(FORMAT))?;
        file.seek(SeekFrom::Start(HEADER_LEN))
            .map_err(|e| Error::io(e, "cannot seek").with_path(&path).with_format(FORMAT))?;
        Ok(SyrahWriter {
            unfinished: UnfinishedGuard::new(FORMAT, &path),
            path,
            options: options.clone(),
            target: Some(target),
            out: Some(BufWriter::with_capacity(BUFFER, file)),
            pos: HEADER_LEN,
            columns: Vec::new(),
            by_name: HashMap::new(),
            items: 0,
            broken: false,
            generation: 0,
            pieces: Vec::new(),
            scratch: Vec::new(),
        })
    }

    /// Items added so far (the index the next one gets); every reel writer has this counter.
    pub fn records(&self) -> u64 {
        self.items
    }

    /// The reference's name for [`records`](Self::records).
    pub fn num_items(&self) -> u64 {
        self.items
    }

    /// The array names and dtypes fixed by the first item, in metadata order.
    pub fn arrays(&self) -> impl ExactSizeIterator<Item = (&str, SyrahDType)> + '_ {
        self.columns.iter().map(|c| (&*c.name, c.dtype))
    }

    fn check_open(&self) -> Result<()> {
        if self.out.is_none() {
            return Err(Error::new(ErrorKind::Closed, "the writer is already finished"));
        }
        if self.broken {
            return Err(Error::new(
                ErrorKind::Io,
                "an earlier write failed; the writer cannot continue (nothing was saved)",
            ));
        }
        Ok(())
    }

    /// Adds one item (a record of named arrays) and returns its index; `&record` and
    /// `record.view()` both work.
    pub fn append<'a>(&mut self, item: impl Into<RecordRef<'a>>) -> Result<u64> {
        let item = item.into();
        self.check_open()
            .and_then(|()| self.prepare(&item))
            .and_then(|()| self.write_prepared(&item))
            .map_err(|e| e.with_record(self.items).with_path(&self.path).with_format(FORMAT))
    }

    /// Checks and converts every field of `item` into `self.pieces` without writing.
    fn prepare(&mut self, item: &RecordRef<'_>) -> Result<()> {
        if item.is_empty() {
            return Err(Error::invalid_input(
                "an item needs at least one array: a file whose items have none cannot record \
                 how many items it holds (the reference writes it but cannot open it)",
            ));
        }
        self.pieces.clear();
        self.scratch.clear();
        self.generation += 1;
        let first = self.columns.is_empty();
        let mut new_columns: Vec<Column> = Vec::new();
        for field in item.raw_fields() {
            let value = field.value.view(item.raw_buffer());
            let (dtype, converted) =
                convert(&field.name, value, self.options.coerce_values, &mut self.scratch)?;
            let column = if first {
                if field.name.contains('\0') {
                    return Err(Error::invalid_input(format!(
                        "array name {:?} contains a NUL character, which BSON keys cannot hold",
                        field.name
                    )));
                }
                if new_columns.iter().any(|c| c.name == field.name) {
                    return Err(duplicate(&field.name));
                }
                new_columns.push(Column {
                    name: field.name.clone(),
                    dtype,
                    offsets: Vec::new(),
                    sizes: Vec::new(),
                    seen_in: 0,
                });
                new_columns.len() - 1
            } else {
                let &k = self.by_name.get(&field.name).ok_or_else(|| self.key_mismatch(item))?;
                let column = &mut self.columns[k];
                if column.seen_in == self.generation {
                    return Err(duplicate(&field.name));
                }
                column.seen_in = self.generation;
                if column.dtype != dtype {
                    return Err(Error::schema(format!(
                        "array {:?} is {dtype} in this item but {} in the first item; a name \
                         keeps one dtype for the whole file",
                        field.name, column.dtype
                    )));
                }
                k
            };
            self.pieces.push(Piece { column, converted });
        }
        if first {
            self.by_name =
                new_columns.iter().enumerate().map(|(k, c)| (c.name.clone(), k)).collect();
            self.columns = new_columns;
        } else if self.pieces.len() != self.columns.len() {
            return Err(self.key_mismatch(item));
        }
        let columns = self.columns.iter().map(|c| (&*c.name, c.dtype));
        if encoded_len(columns, self.items + 1).is_none() {
            let e = Error::new(
                ErrorKind::Limit,
                format!(
                    "one more item would make the metadata larger than the 2 GiB a BSON document \
                     can hold ({} items of {} arrays)",
                    self.items,
                    self.columns.len()
                ),
            );
            if first {
                self.columns.clear();
                self.by_name.clear();
            }
            return Err(e);
        }
        Ok(())
    }

    fn key_mismatch(&self, item: &RecordRef<'_>) -> Error {
        let missing: Vec<&str> =
            self.columns.iter().filter(|c| item.get(&c.name).is_none()).map(|c| &*c.name).collect();
        let unexpected: Vec<&str> =
            item.iter().map(|(n, _)| n).filter(|n| !self.by_name.contains_key(*n)).collect();
        Error::schema(format!(
            "every item must have the first item's array names; this one lacks [{}] and has \
             extra [{}]",
            missing.join(", "),
            unexpected.join(", ")
        ))
    }

    /// Writes the prepared item and books its offsets. An I/O error breaks the writer (the
    /// file no longer matches the metadata).
    fn write_prepared(&mut self, item: &RecordRef<'_>) -> Result<u64> {
        let out = self.out.as_mut().ok_or_else(|| Error::new(ErrorKind::Closed, "finished"))?;
        let mut pos = self.pos;
        for (field, piece) in item.raw_fields().iter().zip(&self.pieces) {
            let bytes = match &piece.converted {
                Some(r) => &self.scratch[r.clone()],
                None => own_bytes(field.value.view(item.raw_buffer())),
            };
            if let Err(e) = out.write_all(bytes) {
                self.broken = true;
                return Err(Error::io(e, "cannot write item"));
            }
            let column = &mut self.columns[piece.column];
            column.offsets.extend_from_slice(&(pos as i64).to_le_bytes());
            column.sizes.extend_from_slice(&(bytes.len() as i64).to_le_bytes());
            pos += bytes.len() as u64;
        }
        self.pos = pos;
        self.items += 1;
        Ok(self.items - 1)
    }

    /// The reference's name for [`append`](Self::append).
    pub fn add_item<'a>(&mut self, item: impl Into<RecordRef<'a>>) -> Result<u64> {
        self.append(item)
    }

    /// Writes the metadata and the header, makes the file durable and moves it into place.
    pub fn finish(&mut self) -> Result<SinkSummary> {
        self.check_open().map_err(|e| e.with_path(&self.path).with_format(FORMAT))?;
        if self.items == 0 {
            return Err(Error::invalid_input(
                "a Syrah file cannot hold zero items: the item count is the length of the \
                 arrays' offset vectors, so there must be at least one item (nothing was \
                 saved; add items, then finish again)",
            )
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
        let io = |e: std::io::Error| Error::io(e, "cannot write Syrah file");
        let metadata = encode(self.columns.iter().map(|c| EncodeColumn {
            name: &c.name,
            dtype: c.dtype,
            offsets: &c.offsets,
            sizes: &c.sizes,
        }))?;
        let header = SyrahHeader {
            version: self.options.version,
            metadata_offset: self.pos,
            metadata_length: metadata.len() as u64,
        };
        let mut out = self.out.take().ok_or_else(|| Error::new(ErrorKind::Closed, "finished"))?;
        out.write_all(&metadata).map_err(io)?;
        out.seek(SeekFrom::Start(0)).map_err(io)?;
        out.write_all(&header.to_bytes()).map_err(io)?;
        out.flush().map_err(io)?;
        drop(out);
        let target = self.target.take().ok_or_else(|| Error::new(ErrorKind::Closed, "finished"))?;
        target.commit()?;
        Ok(SinkSummary {
            records: self.items,
            bytes: header.metadata_end(),
            paths: vec![self.path.clone()],
        })
    }
}

fn duplicate(name: &str) -> Error {
    Error::invalid_input(format!("the item has two arrays named {name:?}"))
}

/// The bytes a field is stored as when it needs no conversion.
fn own_bytes<'a>(value: ValueRef<'a>) -> &'a [u8] {
    match value {
        ValueRef::Array(a) => a.data,
        ValueRef::Str(s) => s.as_bytes(),
        ValueRef::Bytes(b) => b,
        _ => &[],
    }
}

/// The dtype a field is stored under, and its converted bytes (appended to `scratch`) when
/// they differ from the field's own.
fn convert(
    name: &str,
    value: ValueRef<'_>,
    coerce: bool,
    scratch: &mut Vec<u8>,
) -> Result<(SyrahDType, Option<Range<usize>>)> {
    let start = scratch.len();
    let mut push = |bytes: &[u8]| {
        scratch.extend_from_slice(bytes);
        Some(start..start + bytes.len())
    };
    Ok(match value {
        ValueRef::Array(a) => {
            let shape = reel_core::Shape::new(a.shape);
            check_array_len(a.dtype, &shape, a.data.len() as u64)
                .map_err(|e| Error::invalid_input(format!("array {name:?}: {}", e.message())))?;
            match (SyrahDType::from_dtype(a.dtype), a.dtype) {
                (Some(dt), _) => (dt, None),
                (None, DType::Unicode(n)) => {
                    join_unicode(a.data, n, scratch)
                        .map_err(|m| Error::invalid_input(format!("array {name:?}: {m}")))?;
                    (SyrahDType::Str, Some(start..scratch.len()))
                }
                (None, other) => {
                    return Err(Error::schema(format!(
                        "array {name:?} has dtype {other}, which Syrah cannot store (it stores \
                         bool, int8..uint64, float16/32/64/128 and str)"
                    )));
                }
            }
        }
        ValueRef::Str(s) if s.ends_with('\0') => {
            return Err(Error::invalid_input(format!(
                "text {name:?} ends with a NUL character, which would be lost: readers (numpy in \
                 the reference) drop trailing NULs"
            )));
        }
        ValueRef::Str(_) => (SyrahDType::Str, None),
        ValueRef::Bytes(_) if coerce => (SyrahDType::Array(DType::U8), None),
        ValueRef::Int(i) if coerce => (SyrahDType::Array(DType::I64), push(&i.to_le_bytes())),
        ValueRef::UInt(u) if coerce => match i64::try_from(u) {
            Ok(i) => (SyrahDType::Array(DType::I64), push(&i.to_le_bytes())),
            Err(_) => (SyrahDType::Array(DType::U64), push(&u.to_le_bytes())),
        },
        ValueRef::Float(f) if coerce => (SyrahDType::Array(DType::F64), push(&f.to_le_bytes())),
        ValueRef::Bool(b) if coerce => (SyrahDType::Array(DType::Bool), push(&[b as u8])),
        other => {
            let hint = match other {
                ValueRef::Bytes(_)
                | ValueRef::Int(_)
                | ValueRef::UInt(_)
                | ValueRef::Float(_)
                | ValueRef::Bool(_) => " (enable coerce_values to store it as a 1-D array)",
                _ => "",
            };
            return Err(Error::schema(format!(
                "field {name:?} is a {} value; a Syrah item holds only arrays and text{hint}",
                other.kind_name()
            )));
        }
    })
}

/// Appends the UTF-8 of a numpy `<Un` array's elements joined with no separator, each
/// without its trailing NUL padding (what the reference's `"".join(array)` stores).
fn join_unicode(data: &[u8], n: u32, out: &mut Vec<u8>) -> std::result::Result<(), String> {
    let width = 4 * n as usize;
    if width == 0 {
        return Ok(());
    }
    for element in data.chunks_exact(width) {
        let points = element.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]));
        let used = points.clone().rposition(|p| p != 0).map_or(0, |p| p + 1);
        for p in points.take(used) {
            let c = char::from_u32(p)
                .ok_or_else(|| format!("code point {p:#x} cannot be encoded as UTF-8"))?;
            let mut buf = [0u8; 4];
            out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
        }
    }
    Ok(())
}

impl RecordSink for SyrahWriter {
    fn append_ref(&mut self, record: RecordRef<'_>) -> Result<u64> {
        self.append(record)
    }

    fn records(&self) -> u64 {
        self.items
    }

    fn finish(&mut self) -> Result<SinkSummary> {
        SyrahWriter::finish(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ucs4(elements: &[&str], n: usize) -> Vec<u8> {
        let mut v = Vec::new();
        for e in elements {
            let mut cps: Vec<u32> = e.chars().map(|c| c as u32).collect();
            cps.resize(n, 0);
            cps.iter().for_each(|c| v.extend_from_slice(&c.to_le_bytes()));
        }
        v
    }

    #[test]
    fn unicode_elements_join_without_padding() {
        let mut out = Vec::new();
        join_unicode(&ucs4(&["héllo", "ab", ""], 5), 5, &mut out).unwrap();
        assert_eq!(out, "hélloab".as_bytes());
        // An interior NUL is kept; only trailing padding goes.
        let mut out = Vec::new();
        join_unicode(&ucs4(&["a\0b"], 4), 4, &mut out).unwrap();
        assert_eq!(out, b"a\0b");
        let mut out = Vec::new();
        let bad = 0xD800u32.to_le_bytes();
        assert!(join_unicode(&bad, 1, &mut out).is_err());
    }
}
