//! The BSON metadata document: `{name: {"offset": i64le[N], "size": i64le[N], "dtype": str}}`.
//!
//! Parsing keeps the document's bytes and, per array name, where its offset and size
//! vectors start inside them: the vectors are read in place (with the `bson` crate's raw
//! documents), never copied into tables. Every entry is validated once, at parse time,
//! against the size of the file it describes.

use std::sync::Arc;

use bson::raw::{CStr, RawBinaryRef, RawBsonRef, RawDocument, RawDocumentBuf, cstr};
use bson::spec::BinarySubtype;
use reel_core::{Error, ErrorKind, FieldName, Limits, Result};

use crate::dtype::SyrahDType;
use crate::header::HEADER_LEN;

/// One array name of the metadata: its dtype and where its two vectors are.
#[derive(Clone, Debug)]
pub struct SyrahColumn {
    name: FieldName,
    /// `None` for a name that is not one of the reference's dtype names.
    dtype: Option<SyrahDType>,
    dtype_name: Box<str>,
    /// Byte position of the offset vector inside the document.
    offsets_at: usize,
    /// Byte position of the size vector inside the document.
    sizes_at: usize,
}

impl SyrahColumn {
    /// The array name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The array name as a shared field name.
    pub fn field_name(&self) -> &FieldName {
        &self.name
    }

    /// The dtype recorded for every item's array of this name; `None` when the metadata
    /// names a dtype the reference does not know (reading such an array fails with
    /// [`ErrorKind::Unsupported`], as it does in the reference).
    pub fn dtype(&self) -> Option<SyrahDType> {
        self.dtype
    }

    /// The dtype name as stored in the metadata.
    pub fn dtype_name(&self) -> &str {
        &self.dtype_name
    }
}

/// Where the bytes of one array of one item are.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ArrayLocation {
    /// Absolute file offset.
    pub offset: u64,
    /// Length in bytes.
    pub size: u64,
}

impl ArrayLocation {
    /// One past the last byte.
    pub fn end(&self) -> u64 {
        self.offset + self.size
    }
}

/// Facts noticed while parsing that are not errors.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MetadataNotes {
    /// Bytes of the metadata block after the end the BSON document declares.
    pub trailing_bytes: u64,
    /// Whether the last element runs past the end the document declares (read from the
    /// rest of the block, as the reference does).
    pub past_declared_end: bool,
    /// Non-empty arrays whose bytes lie (partly) in the header or in the metadata, as the
    /// phantom item the reference leaves after a rejected `add_item` does.
    pub arrays_outside_data: u64,
}

/// The parsed metadata of one Syrah file.
#[derive(Clone, Debug)]
pub struct SyrahMetadata {
    /// The metadata block, with its length field rewritten and a NUL appended (see
    /// [`parse`](Self::parse)); the block as stored is `bytes[..len]` apart from the length.
    bytes: Box<[u8]>,
    len: usize,
    columns: Vec<SyrahColumn>,
    items: u64,
}

impl SyrahMetadata {
    /// Parses the metadata block of a file of `file_len` bytes whose metadata occupies
    /// `metadata_offset..metadata_offset + bytes.len()`.
    ///
    /// Every offset and size must be non-negative and lie within the file; the item count
    /// must be within `limits`. Errors are [`ErrorKind::Corrupt`] or
    /// [`ErrorKind::Limit`]. A dtype name the reference does not know is accepted here, as
    /// the reference accepts it when opening; reading that array fails.
    pub fn parse(
        bytes: Vec<u8>,
        metadata_offset: u64,
        file_len: u64,
        limits: &Limits,
    ) -> Result<(Self, MetadataNotes)> {
        let mut notes = MetadataNotes::default();
        let declared = match bytes.get(..4) {
            Some(b) => i32::from_le_bytes([b[0], b[1], b[2], b[3]]),
            None => return Err(Error::corrupt("the metadata is shorter than a BSON document")),
        };
        let declared = match usize::try_from(declared) {
            Ok(d) if (5..=bytes.len()).contains(&d) => d,
            _ => {
                return Err(Error::corrupt(format!(
                    "the BSON metadata says it is {declared} bytes long, but the header gives it \
                     {} bytes",
                    bytes.len()
                ))
                .with_offset(metadata_offset));
            }
        };
        if bytes[declared - 1] != 0 {
            return Err(Error::corrupt(format!(
                "the BSON metadata says it is {declared} bytes long, but byte {} is not the \
                 document's terminating NUL",
                declared - 1
            ))
            .with_offset(metadata_offset));
        }
        notes.trailing_bytes = (bytes.len() - declared) as u64;
        let len = bytes.len();
        // The reference's decoder (py-bson) takes the document's own length only as the
        // point where it stops starting new elements: each element is parsed from the whole
        // metadata block, so the last one may run past that point. To read exactly what it
        // reads, the block is parsed as one document (its length field set to the block's
        // length plus a terminating NUL) and elements are taken while they start before the
        // declared end. For a well-formed file the two ends coincide.
        let mut bytes = bytes;
        // Exactly one more byte: a plain push would double a block read to its exact size.
        reel_core::try_reserve(&mut bytes, 1, "the metadata document")?;
        bytes.push(0);
        let whole = i32::try_from(bytes.len()).map_err(|_| {
            Error::corrupt("the metadata is larger than a BSON document can be")
                .with_offset(metadata_offset)
        })?;
        bytes[..4].copy_from_slice(&whole.to_le_bytes());
        let bytes = bytes.into_boxed_slice();

        let doc = RawDocument::from_bytes(&bytes[..])
            .map_err(|e| bson_error(&e, metadata_offset, "the metadata document"))?;
        let mut columns: Vec<SyrahColumn> = Vec::new();
        // Names seen so far, so that a repeated name is found in linear time (a 17 MB
        // document can hold 300k names).
        let mut names: std::collections::HashSet<&str> = std::collections::HashSet::new();
        let mut items: Option<usize> = None;
        let mut position = 4;
        for element in doc.iter_elements() {
            if position >= declared - 1 {
                break;
            }
            let element = element.map_err(|e| bson_error(&e, metadata_offset, "the metadata"))?;
            let name = element.key().as_str();
            position += 1 + name.len() + 1 + element.size();
            if position > declared {
                notes.past_declared_end = true;
            }
            let value = element.value().map_err(|e| {
                bson_error(&e, metadata_offset, &format!("metadata entry {name:?}"))
            })?;
            let RawBsonRef::Document(entry) = value else {
                return Err(Error::corrupt(format!(
                    "metadata entry {name:?} is a BSON {:?}, not a document of offset, size and \
                     dtype",
                    value.element_type()
                ))
                .with_offset(metadata_offset));
            };
            if !names.insert(name) {
                return Err(Error::corrupt(format!("the metadata names array {name:?} twice"))
                    .with_offset(metadata_offset));
            }
            let (column, n) = parse_entry(&bytes, name, entry, metadata_offset)?;
            match items {
                None => items = Some(n),
                Some(first) if first != n => {
                    return Err(Error::corrupt(format!(
                        "array {name:?} has {n} items in the metadata, but the first array has \
                         {first}"
                    ))
                    .with_offset(metadata_offset));
                }
                Some(_) => {}
            }
            columns.push(column);
        }
        let Some(items) = items else {
            return Err(Error::corrupt(
                "the metadata names no arrays, so the file does not record how many items it \
                 has (the reference writes such a file for items without arrays, and cannot \
                 open it either)",
            )
            .with_offset(metadata_offset));
        };
        limits.check_records(items as u64).map_err(|e| e.with_offset(metadata_offset))?;
        let meta = SyrahMetadata { bytes, len, columns, items: items as u64 };
        notes.arrays_outside_data = meta.validate_entries(metadata_offset, file_len)?;
        Ok((meta, notes))
    }

    /// Checks every entry against the file and counts the ones outside the data region.
    fn validate_entries(&self, metadata_offset: u64, file_len: u64) -> Result<u64> {
        let mut outside = 0;
        for column in &self.columns {
            for i in 0..self.items {
                let offset = self.raw_entry(column.offsets_at, i);
                let size = self.raw_entry(column.sizes_at, i);
                let bad = |what: String| {
                    Err(Error::corrupt(format!(
                        "item {i}, array {:?}: {what} (the file has {file_len} bytes)",
                        column.name
                    ))
                    .with_record(i)
                    .with_offset(metadata_offset))
                };
                let (Ok(o), Ok(s)) = (u64::try_from(offset), u64::try_from(size)) else {
                    return bad(format!("negative offset {offset} or size {size}"));
                };
                match o.checked_add(s) {
                    Some(end) if end <= file_len => {
                        if s > 0 && (o < HEADER_LEN || end > metadata_offset) {
                            outside += 1;
                        }
                    }
                    _ => {
                        return bad(format!(
                            "bytes {o}..{} lie past the end of the file",
                            o as u128 + s as u128
                        ));
                    }
                }
            }
        }
        Ok(outside)
    }

    /// Warms the entries [`location`](Self::location) reads for `item`, in every column.
    pub fn prefetch(&self, item: u64) {
        for c in &self.columns {
            for at in [c.offsets_at, c.sizes_at] {
                if let Some(entry) = self.entry(at, item) {
                    reel_core::prefetch_read(entry);
                }
            }
        }
    }

    /// The 8 stored bytes of entry `i` of the vector at `at`.
    fn entry(&self, at: usize, i: u64) -> Option<&[u8; 8]> {
        // Positions and counts were checked against the document when it was parsed.
        let start = at + 8 * i as usize;
        self.bytes.get(start..start + 8)?.try_into().ok()
    }

    fn raw_entry(&self, at: usize, i: u64) -> i64 {
        self.entry(at, i).map_or(-1, |b| i64::from_le_bytes(*b))
    }

    /// Number of items (the length of the first array's offset vector).
    pub fn items(&self) -> u64 {
        self.items
    }

    /// The array names in metadata order (the first written item's dict order).
    pub fn columns(&self) -> &[SyrahColumn] {
        &self.columns
    }

    /// The position of array `name` in [`columns`](Self::columns).
    pub fn column_index(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| &*c.name == name)
    }

    /// Where array `column` of item `item` is stored. Both must be in range.
    pub fn location(&self, column: usize, item: u64) -> Option<ArrayLocation> {
        let c = self.columns.get(column)?;
        if item >= self.items {
            return None;
        }
        // Validated at parse: non-negative and within the file.
        let offset = self.raw_entry(c.offsets_at, item) as u64;
        let size = self.raw_entry(c.sizes_at, item) as u64;
        Some(ArrayLocation { offset, size })
    }

    /// The length of the metadata block as stored.
    pub fn stored_len(&self) -> u64 {
        self.len as u64
    }
}

fn bson_error(e: &bson::error::Error, metadata_offset: u64, what: &str) -> Error {
    Error::new(ErrorKind::Corrupt, format!("{what} is not valid BSON: {e}"))
        .with_offset(metadata_offset)
}

/// Where `inner` (a slice of `outer`) starts inside `outer`.
fn position_in(outer: &[u8], inner: &[u8]) -> Option<usize> {
    let start = (inner.as_ptr() as usize).checked_sub(outer.as_ptr() as usize)?;
    (start.checked_add(inner.len())? <= outer.len()).then_some(start)
}

fn parse_entry(
    doc_bytes: &[u8],
    name: &str,
    entry: &RawDocument,
    metadata_offset: u64,
) -> Result<(SyrahColumn, usize)> {
    let corrupt = |what: String| {
        Error::corrupt(format!("metadata entry {name:?}: {what}")).with_offset(metadata_offset)
    };
    let mut offsets: Option<&[u8]> = None;
    let mut sizes: Option<&[u8]> = None;
    let mut dtype: Option<&str> = None;
    for element in entry.iter_elements() {
        let element =
            element.map_err(|e| bson_error(&e, metadata_offset, &format!("entry {name:?}")))?;
        let key = element.key().as_str();
        let value = element
            .value()
            .map_err(|e| bson_error(&e, metadata_offset, &format!("entry {name:?}")))?;
        // Other keys are ignored, as the reference does.
        let slot_is_free = match (key, value) {
            ("offset", RawBsonRef::Binary(b)) => offsets.replace(b.bytes).is_none(),
            ("size", RawBsonRef::Binary(b)) => sizes.replace(b.bytes).is_none(),
            ("dtype", RawBsonRef::String(s)) => dtype.replace(s).is_none(),
            ("offset" | "size" | "dtype", v) => {
                return Err(corrupt(format!("{key} is a BSON {:?}", v.element_type())));
            }
            _ => true,
        };
        if !slot_is_free {
            return Err(corrupt(format!("{key} appears twice")));
        }
    }
    let (Some(offsets), Some(sizes), Some(dtype)) = (offsets, sizes, dtype) else {
        return Err(corrupt("it needs offset, size and dtype".into()));
    };
    if offsets.len() % 8 != 0 || offsets.len() != sizes.len() {
        return Err(corrupt(format!(
            "the offset and size vectors must be int64 vectors of equal length, but they have \
             {} and {} bytes",
            offsets.len(),
            sizes.len()
        )));
    }
    let (Some(offsets_at), Some(sizes_at)) =
        (position_in(doc_bytes, offsets), position_in(doc_bytes, sizes))
    else {
        return Err(corrupt("a vector lies outside the document".into()));
    };
    let column = SyrahColumn {
        name: Arc::from(name),
        dtype: SyrahDType::from_name(dtype),
        dtype_name: dtype.into(),
        offsets_at,
        sizes_at,
    };
    Ok((column, offsets.len() / 8))
}

/// The size in bytes of the metadata document the writer produces for these array names
/// and dtypes with `items` items, `None` if it exceeds what BSON can express.
pub(crate) fn encoded_len<'a>(
    columns: impl IntoIterator<Item = (&'a str, SyrahDType)>,
    items: u64,
) -> Option<u64> {
    let vector = 8u64.checked_mul(items)?;
    // Sub-document: length, three elements (type byte, key, NUL, value), terminator.
    let binary = |key: &str| 1 + key.len() as u64 + 1 + 4 + 1 + vector;
    let mut total: u64 = 4 + 1;
    for (name, dtype) in columns {
        let string = 1 + "dtype".len() as u64 + 1 + 4 + dtype.name().len() as u64 + 1;
        let sub = 4 + binary("offset") + binary("size") + string + 1;
        total = total.checked_add(1 + name.len() as u64 + 1 + sub)?;
    }
    (total <= i32::MAX as u64).then_some(total)
}

/// One array name as the writer collected it.
pub(crate) struct EncodeColumn<'a> {
    pub name: &'a str,
    pub dtype: SyrahDType,
    pub offsets: &'a [u8],
    pub sizes: &'a [u8],
}

/// The metadata document, laid out as py-bson 0.5.10 writes the reference's dict: keys in
/// insertion order, `offset`, `size` (binary subtype 0) and `dtype` (string) in that order.
pub(crate) fn encode<'a>(columns: impl IntoIterator<Item = EncodeColumn<'a>>) -> Result<Vec<u8>> {
    let mut doc = RawDocumentBuf::new();
    for c in columns {
        let key: &CStr = c.name.try_into().map_err(|_| {
            Error::invalid_input(format!("array name {:?} contains a NUL character", c.name))
        })?;
        let mut sub = RawDocumentBuf::new();
        sub.append(
            cstr!("offset"),
            RawBinaryRef { subtype: BinarySubtype::Generic, bytes: c.offsets },
        );
        sub.append(cstr!("size"), RawBinaryRef { subtype: BinarySubtype::Generic, bytes: c.sizes });
        sub.append(cstr!("dtype"), c.dtype.name());
        doc.append(key, &sub);
    }
    Ok(doc.into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use reel_core::DType;

    fn vector(v: &[i64]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    #[test]
    fn encoded_len_predicts_the_document() {
        let (o, s) = (vector(&[22, 30, 31]), vector(&[8, 1, 0]));
        let columns = [
            ("label", SyrahDType::Array(DType::I64)),
            ("", SyrahDType::Str),
            ("héllo wörld", SyrahDType::Array(DType::F128)),
        ];
        for k in 0..=columns.len() {
            let doc = encode(columns[..k].iter().map(|&(name, dtype)| EncodeColumn {
                name,
                dtype,
                offsets: &o,
                sizes: &s,
            }))
            .unwrap();
            assert_eq!(encoded_len(columns[..k].iter().copied(), 3), Some(doc.len() as u64));
        }
        assert_eq!(encoded_len([("a", SyrahDType::Str)], 1 << 28), None);
    }

    #[test]
    fn parse_reads_what_encode_wrote() {
        let (o, s) = (vector(&[22, 24]), vector(&[2, 0]));
        let doc =
            encode([EncodeColumn { name: "a", dtype: SyrahDType::Str, offsets: &o, sizes: &s }])
                .unwrap();
        let (meta, notes) =
            SyrahMetadata::parse(doc.clone(), 24, 24 + doc.len() as u64, &Limits::default())
                .unwrap();
        assert_eq!(notes, MetadataNotes::default());
        assert_eq!(meta.items(), 2);
        assert_eq!(meta.column_index("a"), Some(0));
        assert_eq!(meta.location(0, 0), Some(ArrayLocation { offset: 22, size: 2 }));
        assert_eq!(meta.location(0, 1), Some(ArrayLocation { offset: 24, size: 0 }));
        assert_eq!(meta.location(0, 2), None);
        assert_eq!(meta.stored_len(), doc.len() as u64);
    }

    /// Any key order inside an entry, extra keys, the old binary subtype and trailing bytes
    /// after the document are accepted, as the reference's BSON decoder accepts them.
    #[test]
    fn parse_is_as_lenient_as_the_reference() {
        let mut sub = RawDocumentBuf::new();
        sub.append(cstr!("dtype"), "uint8");
        sub.append(cstr!("shape"), 3i32);
        // The crate writes (and strips) the old subtype's inner length itself.
        let old = vector(&[22]);
        sub.append(cstr!("size"), RawBinaryRef { subtype: BinarySubtype::BinaryOld, bytes: &old });
        let o = vector(&[22]);
        sub.append(cstr!("offset"), RawBinaryRef { subtype: BinarySubtype::Generic, bytes: &o });
        let mut doc = RawDocumentBuf::new();
        doc.append(cstr!("x"), &sub);
        let mut bytes = doc.into_bytes();
        bytes.extend([0xaa; 3]);
        let (meta, notes) = SyrahMetadata::parse(bytes, 100, 200, &Limits::default()).unwrap();
        assert_eq!(notes.trailing_bytes, 3);
        assert_eq!(meta.location(0, 0), Some(ArrayLocation { offset: 22, size: 22 }));
        assert_eq!(meta.columns()[0].dtype(), Some(SyrahDType::Array(DType::U8)));
    }
}
