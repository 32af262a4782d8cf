//! Records: ordered lists of named fields over one byte buffer.

use std::sync::Arc;

use crate::value::{ArrayValue, DType, Shape, Span, Value, ValueRef};
use crate::{Error, ErrorKind, Result};

/// A field name. Readers share one allocation per schema key across all records they return.
pub type FieldName = Arc<str>;

/// A named value in a record.
#[derive(Clone, Debug, PartialEq)]
pub struct Field {
    /// The field's name.
    pub name: FieldName,
    /// The stored value; resolve it with [`Value::view`] against the owner's buffer.
    pub value: Value,
}

/// The fields of a record or a batch, whose slots outlive a clear: refilling a batch with
/// records of the same shape finds each name already in its slot and keeps it, where
/// dropping the name and cloning it again costs two atomic operations on its reference
/// count per field, about 15 % of reading a batch of 1 KiB records from memory (perf of
/// `reel bench --mode warm --sizes 1k`). Values that own memory of their own (lists, maps,
/// arrays) are dropped when their fields are cleared, as before, so a pooled batch does
/// not keep the decoded trees of its last fill; plain values wait for the slot's next use.
#[derive(Default, Debug)]
pub(crate) struct FieldList {
    slots: Vec<Field>,
    /// The fields in use: `slots[..live]`.
    live: usize,
}

impl FieldList {
    /// Number of fields in use.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.live
    }

    /// Whether no field is in use.
    pub(crate) fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// The fields in use.
    #[inline]
    pub(crate) fn as_slice(&self) -> &[Field] {
        &self.slots[..self.live]
    }

    /// Forgets every field, keeping the slots (and names) for the next ones.
    pub(crate) fn clear(&mut self) {
        self.truncate(0);
    }

    /// Keeps the first `len` fields; the values the others held that own memory are
    /// dropped now.
    pub(crate) fn truncate(&mut self, len: usize) {
        let released = self.slots.get_mut(len..self.live).unwrap_or_default();
        for slot in released {
            if matches!(slot.value, Value::List(_) | Value::Map(_) | Value::Array(_)) {
                slot.value = Value::Null;
            }
        }
        self.live = self.live.min(len);
    }

    /// Adds `field`.
    pub(crate) fn push(&mut self, field: Field) {
        match self.slots.get_mut(self.live) {
            Some(slot) => *slot = field,
            None => self.slots.push(field),
        }
        self.live += 1;
    }

    /// Adds a field called `name`, sharing the name with the slot's previous field when it
    /// is the same allocation (no reference count touched), cloning it otherwise.
    #[inline]
    pub(crate) fn push_named(&mut self, name: &FieldName, value: Value) {
        match self.slots.get_mut(self.live) {
            Some(slot) if Arc::ptr_eq(&slot.name, name) => slot.value = value,
            Some(slot) => *slot = Field { name: name.clone(), value },
            None => self.slots.push(Field { name: name.clone(), value }),
        }
        self.live += 1;
    }
}

impl Clone for FieldList {
    /// The fields in use, without the spare slots.
    fn clone(&self) -> Self {
        FieldList { slots: self.as_slice().to_vec(), live: self.live }
    }
}

/// Byte storage that keeps its high-water size, so refilling it costs no allocation and no
/// zero-filling once it has grown to the largest size a caller needs.
#[derive(Clone, Default, Debug)]
pub(crate) struct Arena {
    bytes: Vec<u8>,
    used: usize,
}

impl Arena {
    pub(crate) fn clear(&mut self) {
        self.used = 0;
    }

    pub(crate) fn used(&self) -> usize {
        self.used
    }

    /// Bytes the arena holds without growing.
    #[cfg(test)]
    pub(crate) fn capacity_bytes(&self) -> usize {
        self.bytes.len()
    }

    #[inline]
    pub(crate) fn as_slice(&self) -> &[u8] {
        &self.bytes[..self.used]
    }

    pub(crate) fn as_mut_slice(&mut self) -> &mut [u8] {
        &mut self.bytes[..self.used]
    }

    /// Appends `n` bytes whose content is unspecified (stale or zero) and returns their span.
    /// Callers overwrite every byte before exposing it.
    pub(crate) fn grow(&mut self, n: usize) -> Span {
        let start = self.used;
        let end = start.saturating_add(n);
        if self.bytes.len() < end {
            let more = end - self.bytes.len();
            // Growth doubles the buffer; after a large record (say, a sparse file's
            // gigabyte) a few more bytes would ask for twice what the input justifies. When
            // that much is not there, grow by exactly what is needed instead of aborting.
            if self.bytes.try_reserve(more).is_err() {
                self.bytes.reserve_exact(more);
            }
            self.bytes.resize(end, 0);
        }
        self.used = end;
        Span::new(start, n)
    }

    /// [`grow`](Self::grow) for sizes that come from a file: fails with
    /// [`ErrorKind::Limit`](crate::ErrorKind::Limit) instead of aborting when the memory is
    /// not there.
    pub(crate) fn try_grow(&mut self, n: u64) -> crate::Result<Span> {
        let n = crate::to_usize(n, "batch")?;
        let end = self.used.saturating_add(n);
        if self.bytes.len() < end {
            let more = (end - self.bytes.len()) as u64;
            crate::try_reserve(&mut self.bytes, more, "the batch's bytes")?;
        }
        Ok(self.grow(n))
    }

    pub(crate) fn truncate(&mut self, used: usize) {
        self.used = self.used.min(used);
    }

    pub(crate) fn push(&mut self, data: &[u8]) -> Span {
        let span = self.grow(data.len());
        self.bytes[span.start..span.end()].copy_from_slice(data);
        span
    }
}

/// The target a decoder writes one record into: it can read the raw bytes that were
/// fetched for the record, append new bytes (decoded pixels, byte-swapped arrays) and push
/// fields. Format crates receive it in [`Layout::decode`](crate::Layout::decode).
pub struct RecordOut<'a> {
    arena: &'a mut Arena,
    fields: &'a mut FieldList,
    /// The buffer raw spans point into when the record borrows them from a memory-held file
    /// (then nothing may be appended: see [`Layout::decodes_in_place`](crate::Layout)).
    input: Option<&'a [u8]>,
}

impl<'a> RecordOut<'a> {
    pub(crate) fn new(arena: &'a mut Arena, fields: &'a mut FieldList) -> Self {
        RecordOut { arena, fields, input: None }
    }

    /// A target whose raw spans point into `input` rather than into the arena.
    pub(crate) fn borrowing(
        arena: &'a mut Arena,
        fields: &'a mut FieldList,
        input: &'a [u8],
    ) -> Self {
        RecordOut { arena, fields, input: Some(input) }
    }

    /// The bytes of `span` (raw input or previously appended bytes).
    pub fn bytes(&self, span: Span) -> &[u8] {
        span.get(self.input.unwrap_or(self.arena.as_slice()))
    }

    /// Appends a copy of `data` and returns its span.
    pub fn append(&mut self, data: &[u8]) -> Span {
        self.arena.push(data)
    }

    /// Appends `len` bytes produced by `fill`, which receives everything already in the
    /// buffer (so it can read raw spans) and the new region to write.
    pub fn append_with(
        &mut self,
        len: usize,
        fill: impl FnOnce(&[u8], &mut [u8]) -> Result<()>,
    ) -> Result<Span> {
        let before = self.arena.used();
        let span = self.arena.grow(len);
        let (old, new) = self.arena.as_mut_slice().split_at_mut(span.start);
        match fill(old, new) {
            Ok(()) => Ok(span),
            Err(e) => {
                self.arena.truncate(before);
                Err(e)
            }
        }
    }

    /// A `Str` value for `span` after checking it is UTF-8 ([`ErrorKind::Corrupt`] if not).
    pub fn str_value(&self, span: Span) -> Result<Value> {
        match std::str::from_utf8(self.bytes(span)) {
            Ok(_) => Ok(Value::Str(span)),
            Err(e) => Err(Error::corrupt(format!("text is not valid UTF-8: {e}"))),
        }
    }

    /// Appends `text` and returns it as a `Str` value.
    pub fn append_str(&mut self, text: &str) -> Value {
        Value::Str(self.append(text.as_bytes()))
    }

    /// An `Array` value after checking that `data` holds exactly `shape` elements of `dtype`.
    pub fn array_value(&self, dtype: DType, shape: Shape, data: Span) -> Result<Value> {
        check_array_len(dtype, &shape, data.len as u64)?;
        Ok(Value::Array(ArrayValue { dtype, shape, data }))
    }

    /// Adds a field to the record.
    pub fn push(&mut self, name: FieldName, value: Value) {
        self.fields.push(Field { name, value });
    }

    /// Adds a field called `name`: [`push`](Self::push) for a reader that keeps its field
    /// names (one allocation per schema key). Refilling a reused batch or record, a field
    /// whose slot held the same name keeps it without a clone: faster at small records,
    /// where cloning and dropping names is a visible share of a read.
    #[inline]
    pub fn push_named(&mut self, name: &FieldName, value: Value) {
        self.fields.push_named(name, value);
    }

    /// Deep-copies a value from another record and returns it as a value of this one.
    pub fn copy_value(&mut self, value: ValueRef<'_>) -> Value {
        match value {
            ValueRef::Null => Value::Null,
            ValueRef::Bool(b) => Value::Bool(b),
            ValueRef::Int(i) => Value::Int(i),
            ValueRef::UInt(u) => Value::UInt(u),
            ValueRef::Float(f) => Value::Float(f),
            ValueRef::Bytes(b) => Value::Bytes(self.append(b)),
            ValueRef::Str(s) => Value::Str(self.append(s.as_bytes())),
            ValueRef::Array(a) => Value::Array(ArrayValue {
                dtype: a.dtype,
                shape: Shape::new(a.shape),
                data: self.append(a.data),
            }),
            ValueRef::List(l) => Value::List(l.iter().map(|v| self.copy_value(v)).collect()),
            ValueRef::Map(m) => Value::Map(
                m.iter().map(|(k, v)| (self.copy_value(k), self.copy_value(v))).collect(),
            ),
        }
    }
}

/// Fails unless `byte_len` is exactly the size of `shape` elements of `dtype`.
pub fn check_array_len(dtype: DType, shape: &Shape, byte_len: u64) -> Result<()> {
    let expected = shape.element_count().and_then(|n| n.checked_mul(dtype.item_size()));
    if expected != Some(byte_len) {
        return Err(Error::corrupt(format!(
            "array of {dtype} with shape {:?} needs {} bytes but has {byte_len}",
            shape.dims(),
            expected.map_or_else(|| "more than 2^64".to_string(), |n| n.to_string()),
        )));
    }
    Ok(())
}

/// A borrowed record: from a [`Record`] or one entry of a [`RecordBatch`](crate::RecordBatch).
///
/// Two records are equal when their field names and values are equal, whatever their indices.
/// `Debug` shows the index and the fields (`Record { index: 3, fields: {"label": 7} }`).
#[derive(Clone, Copy)]
pub struct RecordRef<'a> {
    index: u64,
    buf: &'a [u8],
    fields: &'a [Field],
}

impl<'a> RecordRef<'a> {
    #[inline]
    pub(crate) fn new(index: u64, buf: &'a [u8], fields: &'a [Field]) -> Self {
        RecordRef { index, buf, fields }
    }

    /// The record's index in its source (0 for a record built by hand).
    #[inline]
    pub fn index(&self) -> u64 {
        self.index
    }

    /// Number of fields.
    pub fn len(&self) -> usize {
        self.fields.len()
    }

    /// Whether the record has no fields.
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    /// The value of the first field called `name`.
    pub fn get(&self, name: &str) -> Option<ValueRef<'a>> {
        self.fields.iter().find(|f| &*f.name == name).map(|f| f.value.view(self.buf))
    }

    /// Field `i` as (name, value).
    pub fn field(&self, i: usize) -> Option<(&'a str, ValueRef<'a>)> {
        self.fields.get(i).map(|f| (&*f.name, f.value.view(self.buf)))
    }

    /// The fields in order as (name, value).
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&'a str, ValueRef<'a>)> + use<'a> {
        let buf = self.buf;
        self.fields.iter().map(move |f| (&*f.name, f.value.view(buf)))
    }

    /// The bytes of a `Bytes` field.
    pub fn bytes(&self, name: &str) -> Option<&'a [u8]> {
        self.get(name)?.as_bytes()
    }

    /// The text of a `Str` field.
    pub fn str(&self, name: &str) -> Option<&'a str> {
        self.get(name)?.as_str()
    }

    /// The stored fields, for code that re-encodes records without resolving every value.
    #[inline]
    pub fn raw_fields(&self) -> &'a [Field] {
        self.fields
    }

    /// The buffer the stored fields point into.
    #[inline]
    pub fn raw_buffer(&self) -> &'a [u8] {
        self.buf
    }

    /// An owned copy holding only the bytes this record uses.
    pub fn to_owned(&self) -> Record {
        let mut r = Record::new();
        r.index = self.index;
        let mut out = r.out();
        for f in self.fields {
            let v = out.copy_value(f.value.view(self.buf));
            out.push(f.name.clone(), v);
        }
        r
    }
}

impl std::fmt::Debug for RecordRef<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        struct Fields<'r, 'a>(&'r RecordRef<'a>);
        impl std::fmt::Debug for Fields<'_, '_> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_map().entries(self.0.iter()).finish()
            }
        }
        f.debug_struct("Record").field("index", &self.index).field("fields", &Fields(self)).finish()
    }
}

impl std::fmt::Debug for Record {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&self.view(), f)
    }
}

impl PartialEq for RecordRef<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

/// An owned record: fields plus the buffer their bytes live in.
///
/// Read into a reused `Record` with
/// [`RecordSource::read_into`](crate::RecordSource::read_into) to avoid allocating per read;
/// build one for a writer with the `push_*` methods. `Debug` shows the index and the fields
/// (`Record { index: 3, fields: {"label": 7} }`), long values cut short.
#[derive(Clone, Default)]
pub struct Record {
    pub(crate) index: u64,
    pub(crate) arena: Arena,
    pub(crate) fields: FieldList,
    pub(crate) scratch: crate::layout::Scratch,
}

impl Record {
    /// An empty record.
    pub fn new() -> Self {
        Record::default()
    }

    /// Removes every field, keeping the allocated capacity (and the field slots, whose
    /// names a refill with the same names keeps; see [`RecordOut::push_named`]).
    pub fn clear(&mut self) {
        self.index = 0;
        self.arena.clear();
        self.fields.clear();
    }

    /// A borrowed view of the record.
    pub fn view(&self) -> RecordRef<'_> {
        RecordRef::new(self.index, self.arena.as_slice(), self.fields.as_slice())
    }

    /// The record's index in its source.
    pub fn index(&self) -> u64 {
        self.index
    }

    /// Sets the index reported by [`RecordRef::index`].
    pub fn set_index(&mut self, index: u64) {
        self.index = index;
    }

    /// Number of fields.
    pub fn len(&self) -> usize {
        self.fields.len()
    }

    /// Whether the record has no fields.
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    /// The value of the first field called `name`.
    pub fn get(&self, name: &str) -> Option<ValueRef<'_>> {
        self.view().get(name)
    }

    /// The bytes of a `Bytes` field.
    pub fn bytes(&self, name: &str) -> Option<&[u8]> {
        self.view().bytes(name)
    }

    /// The text of a `Str` field.
    pub fn str(&self, name: &str) -> Option<&str> {
        self.view().str(name)
    }

    /// The fields in order as (name, value).
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&str, ValueRef<'_>)> + '_ {
        self.view().iter()
    }

    /// The low-level writer for this record, as decoders use it.
    pub fn out(&mut self) -> RecordOut<'_> {
        RecordOut::new(&mut self.arena, &mut self.fields)
    }

    /// Adds a `Bytes` field.
    pub fn push_bytes(&mut self, name: impl Into<FieldName>, data: &[u8]) -> &mut Self {
        let span = self.arena.push(data);
        self.push(name, Value::Bytes(span))
    }

    /// Adds a `Str` field.
    pub fn push_str(&mut self, name: impl Into<FieldName>, text: &str) -> &mut Self {
        let span = self.arena.push(text.as_bytes());
        self.push(name, Value::Str(span))
    }

    /// Adds an `Int` field.
    pub fn push_int(&mut self, name: impl Into<FieldName>, v: i64) -> &mut Self {
        self.push(name, Value::Int(v))
    }

    /// Adds a `UInt` field (whatever its value: see [`Value::UInt`]).
    pub fn push_uint(&mut self, name: impl Into<FieldName>, v: u64) -> &mut Self {
        self.push(name, Value::UInt(v))
    }

    /// Adds a `Float` field.
    pub fn push_float(&mut self, name: impl Into<FieldName>, v: f64) -> &mut Self {
        self.push(name, Value::Float(v))
    }

    /// Adds a `Bool` field.
    pub fn push_bool(&mut self, name: impl Into<FieldName>, v: bool) -> &mut Self {
        self.push(name, Value::Bool(v))
    }

    /// Adds a `Null` field.
    pub fn push_null(&mut self, name: impl Into<FieldName>) -> &mut Self {
        self.push(name, Value::Null)
    }

    /// Adds an array field; `data` holds the elements little-endian in C order.
    pub fn push_array(
        &mut self,
        name: impl Into<FieldName>,
        dtype: DType,
        shape: &[u64],
        data: &[u8],
    ) -> Result<&mut Self> {
        let shape = Shape::new(shape);
        check_array_len(dtype, &shape, data.len() as u64)
            .map_err(|e| Error::new(ErrorKind::InvalidInput, e.message().to_string()))?;
        let span = self.arena.push(data);
        Ok(self.push(name, Value::Array(ArrayValue { dtype, shape, data: span })))
    }

    /// Adds a deep copy of `value` (which may come from another record).
    pub fn push_value(&mut self, name: impl Into<FieldName>, value: ValueRef<'_>) -> &mut Self {
        let v = self.out().copy_value(value);
        self.push(name, v)
    }

    /// Adds a field whose spans already point into this record's buffer (see [`Record::out`]).
    pub fn push(&mut self, name: impl Into<FieldName>, value: Value) -> &mut Self {
        self.fields.push(Field { name: name.into(), value });
        self
    }

    /// Builder form of [`push_bytes`](Self::push_bytes).
    pub fn with_bytes(mut self, name: impl Into<FieldName>, data: &[u8]) -> Self {
        self.push_bytes(name, data);
        self
    }

    /// Builder form of [`push_str`](Self::push_str).
    pub fn with_str(mut self, name: impl Into<FieldName>, text: &str) -> Self {
        self.push_str(name, text);
        self
    }

    /// Builder form of [`push_int`](Self::push_int).
    pub fn with_int(mut self, name: impl Into<FieldName>, v: i64) -> Self {
        self.push_int(name, v);
        self
    }

    /// Builder form of [`push_float`](Self::push_float).
    pub fn with_float(mut self, name: impl Into<FieldName>, v: f64) -> Self {
        self.push_float(name, v);
        self
    }

    /// Builder form of [`push_value`](Self::push_value).
    pub fn with_value(mut self, name: impl Into<FieldName>, value: ValueRef<'_>) -> Self {
        self.push_value(name, value);
        self
    }

    /// A record with one `Bytes` field named `data`, the shape raw formats use.
    pub fn from_bytes(data: &[u8]) -> Self {
        Record::new().with_bytes(RAW_FIELD, data)
    }
}

impl PartialEq for Record {
    fn eq(&self, other: &Self) -> bool {
        self.view() == other.view()
    }
}

impl<'a> From<&'a Record> for RecordRef<'a> {
    fn from(r: &'a Record) -> Self {
        r.view()
    }
}

/// The name of the single field of raw-bytes records (FFRecord, a bag without a spec, …).
pub const RAW_FIELD: &str = "data";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refilled_field_list_shows_only_its_new_fields_and_keeps_same_names() {
        let (a, b): (FieldName, FieldName) = (Arc::from("a"), Arc::from("b"));
        let mut list = FieldList::default();
        list.push_named(&a, Value::Int(1));
        list.push_named(&b, Value::List(vec![Value::Int(2)]));
        list.push_named(&a, Value::Int(3));
        assert_eq!(Arc::strong_count(&a), 3);
        list.clear();
        assert!(list.is_empty() && list.as_slice().is_empty());
        // The list the second field held is dropped at the clear; the name stays.
        assert_eq!(list.slots[1].value, Value::Null);
        assert_eq!(list.slots[0].value, Value::Int(1));
        // Same names in the same slots (kept, which counts cannot tell from a fresh
        // clone); a different name replaces one.
        list.push_named(&a, Value::Int(4));
        list.push_named(&a, Value::Int(5));
        // Ours, slot 0's (kept, no clone), slot 1's (cloned, replacing `b`) and the
        // unused slot 2's.
        assert_eq!(Arc::strong_count(&a), 4);
        assert_eq!(Arc::strong_count(&b), 1, "the second slot's name is replaced");
        let got: Vec<(&str, &Value)> =
            list.as_slice().iter().map(|f| (&*f.name, &f.value)).collect();
        assert_eq!(got, [("a", &Value::Int(4)), ("a", &Value::Int(5))]);
        list.truncate(1);
        list.push(Field { name: b.clone(), value: Value::Null });
        let names: Vec<&str> = list.as_slice().iter().map(|f| &*f.name).collect();
        assert_eq!(names, ["a", "b"]);
        // A clone holds the fields in use only.
        assert_eq!(list.clone().slots.len(), 2);
    }

    #[test]
    fn a_reused_record_reads_like_a_new_one() {
        let mut r = Record::new();
        r.push_bytes("x", b"1").push_str("y", "two").push_int("z", 3);
        r.clear();
        r.push_bytes("y", b"new");
        let mut fresh = Record::new();
        fresh.push_bytes("y", b"new");
        assert_eq!(r, fresh);
        assert_eq!(r.len(), 1);
        assert!(r.view().get("z").is_none(), "a cleared field shows through");
    }

    #[test]
    fn builder_and_view_agree() {
        let mut r = Record::new();
        r.push_bytes("b", b"\x00\x01").push_str("s", "héllo").push_int("i", -3);
        r.push_array("a", DType::U16, &[2], &[1, 0, 2, 0]).unwrap();
        let v = r.view();
        assert_eq!(v.bytes("b"), Some(&b"\x00\x01"[..]));
        assert_eq!(v.str("s"), Some("héllo"));
        assert_eq!(v.get("i").and_then(|x| x.as_i64()), Some(-3));
        let a = v.get("a").and_then(|x| x.as_array()).unwrap();
        assert_eq!(a.shape, &[2]);
        assert_eq!(v.to_owned(), r);
    }

    #[test]
    fn debug_shows_fields_not_buffers() {
        let mut r = Record::new().with_str("name", "ann").with_bytes("raw", &[0; 100]);
        r.push_uint("id", 5).set_index(3);
        let text = format!("{r:?}");
        assert!(
            text.starts_with(r#"Record { index: 3, fields: {"name": "ann", "raw": b""#),
            "{text}"
        );
        assert!(text.ends_with(r#"… 68 more bytes, "id": 5} }"#), "{text}");
    }

    #[test]
    fn array_length_is_checked() {
        let mut r = Record::new();
        let e = r.push_array("a", DType::F32, &[3], &[0; 8]).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput);
    }

    #[test]
    fn nested_values_deep_copy() {
        let mut src = Record::new();
        let mut out = src.out();
        let s = out.append(b"k");
        let b = out.append(b"vv");
        out.push(
            "m".into(),
            Value::Map(vec![(Value::Str(s), Value::List(vec![Value::Bytes(b), Value::Null]))]),
        );
        let copy = Record::new().with_value("m", src.get("m").unwrap());
        assert_eq!(copy, src);
        let m = copy.get("m").unwrap().as_map().unwrap();
        assert_eq!(
            m.get("k").unwrap().as_list().unwrap().get(0).unwrap().as_bytes(),
            Some(&b"vv"[..])
        );
    }

    #[test]
    fn append_with_rolls_back_on_error() {
        let mut r = Record::new();
        r.push_bytes("x", b"abc");
        let used = r.arena.used();
        let res = r.out().append_with(10, |_, _| Err(Error::corrupt("no")));
        assert!(res.is_err());
        assert_eq!(r.arena.used(), used);
    }
}
