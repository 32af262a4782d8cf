//! Decoding a serialized `oneflow.OFRecord` into core values, without copying what can be
//! pointed at.
//!
//! This is a small hand-written parser rather than prost's generated `decode`, for two
//! reasons. Speed: packed `float`/`double` lists are little-endian on the wire, so when a
//! list arrives as one packed field (what every writer produces) the decoded array is a
//! span of the bytes that were read, and byte strings are spans too; prost would copy every
//! value into new vectors. Fidelity: the reference runtime (upb) treats a known field with
//! an unexpected wire type as an unknown field, where prost fails, and leaves a map entry
//! that carries unknown fields out of the map, where prost inserts it. The parser implements
//! protobuf's merge rules exactly (see the crate documentation), and the property tests
//! check it against prost's decoder on every well-formed input they generate.

use std::sync::Arc;

use reel_core::{
    ArrayValue, Error, FieldName, Record, RecordOut, Result, Shape, Span, Value, to_usize,
};

use crate::features::FeatureKind;
use crate::wire::{WireReader, WireType, count_packed_varints, malformed};

/// Shared [`FieldName`]s for feature names, so that decoding a record whose names were
/// seen before allocates no name.
#[derive(Clone, Debug, Default)]
pub(crate) struct FeatureNames {
    /// Sorted by key bytes.
    names: Vec<(Box<[u8]>, FieldName)>,
}

/// More distinct names than this are not remembered (a dataset whose keys differ in every
/// record would otherwise grow the table without bound).
const MAX_REMEMBERED_NAMES: usize = 4096;

impl FeatureNames {
    fn lookup(&self, key: &[u8]) -> std::result::Result<FieldName, usize> {
        self.names.binary_search_by(|(k, _)| (**k).cmp(key)).map(|i| self.names[i].1.clone())
    }

    /// The shared name for `key`, remembering it when it is new.
    pub(crate) fn intern(&mut self, key: &[u8]) -> Result<FieldName> {
        match self.lookup(key) {
            Ok(name) => Ok(name),
            Err(at) => {
                let name = new_name(key)?;
                if self.names.len() < MAX_REMEMBERED_NAMES {
                    self.names.insert(at, (key.into(), name.clone()));
                }
                Ok(name)
            }
        }
    }

    /// The shared name for `key`, or a new one (not remembered).
    pub(crate) fn get_or_new(&self, key: &[u8]) -> Result<FieldName> {
        match self.lookup(key) {
            Ok(name) => Ok(name),
            Err(_) => new_name(key),
        }
    }
}

fn new_name(key: &[u8]) -> Result<FieldName> {
    match std::str::from_utf8(key) {
        Ok(s) => Ok(Arc::from(s)),
        Err(e) => Err(Error::corrupt(format!("feature name is not valid UTF-8: {e}"))),
    }
}

/// Where feature names come from while decoding.
pub(crate) enum Names<'a> {
    /// Look names up; allocate the ones not found.
    Shared(&'a FeatureNames),
    /// Look names up and remember new ones.
    Growing(&'a mut FeatureNames),
}

impl Names<'_> {
    fn name(&mut self, key: &[u8]) -> Result<FieldName> {
        match self {
            Names::Shared(n) => n.get_or_new(key),
            Names::Growing(n) => n.intern(key),
        }
    }
}

/// A byte range of the record payload.
#[derive(Clone, Copy, Debug, Default)]
struct Range {
    start: usize,
    len: usize,
}

impl Range {
    fn of(self, payload: &[u8]) -> &[u8] {
        payload.get(self.start..self.start + self.len).unwrap_or_default()
    }
}

/// One map entry as found on the wire: its key and its body.
#[derive(Clone, Copy, Debug, Default)]
struct Entry {
    key: Range,
    body: Range,
    /// The entry message has fields other than `key` and `value` (or those with another
    /// wire type). upb, the reference runtime, then keeps the whole entry as an unknown
    /// field of the record instead of putting it in the map, so it is not a feature.
    has_unknown: bool,
}

/// The next map entry of the top-level message, skipping (and checking) unknown fields.
fn next_entry(r: &mut WireReader<'_>) -> Result<Option<Entry>> {
    while !r.is_empty() {
        let (field, wire) = r.tag()?;
        if field == 1 && wire == WireType::Len {
            let (start, body) = r.len_delimited()?;
            let (key, has_unknown) = entry_key(body, start)?;
            return Ok(Some(Entry { key, body: Range { start, len: body.len() }, has_unknown }));
        }
        r.skip(field, wire)?;
    }
    Ok(None)
}

/// The key of a map entry (the last `key` field; empty when there is none) and whether
/// the entry has unknown fields.
fn entry_key(body: &[u8], base: usize) -> Result<(Range, bool)> {
    let mut r = WireReader::new(body, base);
    let mut key = Range { start: base, len: 0 };
    let mut has_unknown = false;
    while !r.is_empty() {
        let (field, wire) = r.tag()?;
        match (field, wire) {
            (1, WireType::Len) => {
                let (start, k) = r.len_delimited()?;
                key = Range { start, len: k.len() };
            }
            // The value is checked when the feature is decoded.
            (2, WireType::Len) => {
                r.len_delimited()?;
            }
            _ => {
                has_unknown = true;
                r.skip(field, wire)?;
            }
        }
    }
    Ok((key, has_unknown))
}

/// Calls `f(kind, list_message)` for every oneof member of every `value` of an entry, in
/// wire order. Unknown fields are checked and skipped.
fn for_each_member(
    payload: &[u8],
    entry: Range,
    mut f: impl FnMut(FeatureKind, Range) -> Result<()>,
) -> Result<()> {
    let mut r = WireReader::new(entry.of(payload), entry.start);
    while !r.is_empty() {
        let (field, wire) = r.tag()?;
        if field != 2 || wire != WireType::Len {
            r.skip(field, wire)?;
            continue;
        }
        let (start, feature) = r.len_delimited()?;
        let mut fr = WireReader::new(feature, start);
        while !fr.is_empty() {
            let (field, wire) = fr.tag()?;
            match FeatureKind::from_field_number(field) {
                Some(kind) if wire == WireType::Len => {
                    let (start, list) = fr.len_delimited()?;
                    f(kind, Range { start, len: list.len() })?;
                }
                _ => fr.skip(field, wire)?,
            }
        }
    }
    Ok(())
}

/// What one list message holds: its value count and, when it is a single packed field,
/// where the packed bytes are.
struct ListScan {
    count: usize,
    packed_only: Option<Range>,
}

/// Checks one list message of `kind` and counts its values (packed and unpacked).
fn scan_list(payload: &[u8], kind: FeatureKind, list: Range) -> Result<ListScan> {
    let mut r = WireReader::new(list.of(payload), list.start);
    let (mut count, mut value_fields, mut packed) = (0usize, 0usize, None);
    while !r.is_empty() {
        let (field, wire) = r.tag()?;
        if field != 1 {
            r.skip(field, wire)?;
            continue;
        }
        match (kind, wire) {
            (FeatureKind::BytesList, WireType::Len) => {
                r.len_delimited()?;
                count += 1;
            }
            (FeatureKind::FloatList, WireType::Len) | (FeatureKind::DoubleList, WireType::Len) => {
                let width = if kind == FeatureKind::FloatList { 4 } else { 8 };
                let at = r.offset();
                let (start, b) = r.len_delimited()?;
                if b.len() % width != 0 {
                    return Err(malformed(
                        at,
                        &format!("packed {kind} of {} bytes, not a multiple of {width}", b.len()),
                    ));
                }
                count += b.len() / width;
                packed = Some(Range { start, len: b.len() });
            }
            (FeatureKind::FloatList, WireType::Fixed32) => {
                r.fixed(4)?;
                count += 1;
                packed = None;
            }
            (FeatureKind::DoubleList, WireType::Fixed64) => {
                r.fixed(8)?;
                count += 1;
                packed = None;
            }
            (FeatureKind::Int32List | FeatureKind::Int64List, WireType::Len) => {
                let (start, b) = r.len_delimited()?;
                count += count_packed_varints(b, start)?;
            }
            (FeatureKind::Int32List | FeatureKind::Int64List, WireType::Varint) => {
                r.varint()?;
                count += 1;
            }
            // A known field with another wire type is an unknown field (upb).
            _ => {
                r.skip(field, wire)?;
                continue;
            }
        }
        value_fields += 1;
    }
    Ok(ListScan { count, packed_only: if value_fields == 1 { packed } else { None } })
}

/// The resolved `Feature` of one map entry after protobuf's merge rules: the kind of the
/// last oneof member on the wire, and the values of every member of that kind since the
/// last member of another kind (same-kind messages merge, a different kind replaces).
struct FeaturePlan {
    kind: Option<FeatureKind>,
    /// Index (in wire order) of the first member that counts.
    first_member: usize,
    count: usize,
    /// The members that count are one message holding one packed field here.
    packed_only: Option<Range>,
    /// Only one member counts, and this is its list message.
    single_list: Option<Range>,
}

fn plan_feature(payload: &[u8], entry: Range) -> Result<FeaturePlan> {
    let mut plan =
        FeaturePlan { kind: None, first_member: 0, count: 0, packed_only: None, single_list: None };
    let mut index = 0;
    for_each_member(payload, entry, |kind, list| {
        // Every member is checked, also those a later member replaces: the reference
        // rejects a record with any malformed member.
        let scan = scan_list(payload, kind, list)?;
        if plan.kind == Some(kind) {
            plan.count += scan.count;
            plan.packed_only = None;
            plan.single_list = None;
        } else {
            plan = FeaturePlan {
                kind: Some(kind),
                first_member: index,
                count: scan.count,
                packed_only: scan.packed_only,
                single_list: Some(list),
            };
        }
        index += 1;
        Ok(())
    })?;
    Ok(plan)
}

/// Writes the numeric values of the members that count into `dest` (little-endian, the
/// element type of `kind`). `payload` is the record; `dest` holds exactly `plan.count`
/// elements.
fn fill_numbers(payload: &[u8], entry: Range, plan: &FeaturePlan, dest: &mut [u8]) -> Result<()> {
    let Some(kind) = plan.kind else { return Ok(()) };
    let mut at = 0usize;
    let mut put = |bytes: &[u8]| -> Result<()> {
        let slot = dest
            .get_mut(at..at + bytes.len())
            .ok_or_else(|| Error::corrupt("feature values changed while decoding"))?;
        slot.copy_from_slice(bytes);
        at += bytes.len();
        Ok(())
    };
    let mut fill_list = |list: Range| -> Result<()> {
        let mut r = WireReader::new(list.of(payload), list.start);
        while !r.is_empty() {
            let (field, wire) = r.tag()?;
            if field != 1 {
                r.skip(field, wire)?;
                continue;
            }
            match (kind, wire) {
                (FeatureKind::FloatList | FeatureKind::DoubleList, WireType::Len) => {
                    put(r.len_delimited()?.1)?
                }
                (FeatureKind::FloatList, WireType::Fixed32) => put(r.fixed(4)?)?,
                (FeatureKind::DoubleList, WireType::Fixed64) => put(r.fixed(8)?)?,
                (FeatureKind::Int32List | FeatureKind::Int64List, WireType::Len) => {
                    let (start, b) = r.len_delimited()?;
                    let mut packed = WireReader::new(b, start);
                    while !packed.is_empty() {
                        put_int(&mut put, kind, packed.varint()?)?;
                    }
                }
                (FeatureKind::Int32List | FeatureKind::Int64List, WireType::Varint) => {
                    put_int(&mut put, kind, r.varint()?)?
                }
                _ => r.skip(field, wire)?,
            }
        }
        Ok(())
    };
    match plan.single_list {
        Some(list) => fill_list(list)?,
        None => {
            let mut index = 0;
            for_each_member(payload, entry, |_, list| {
                let counts = index >= plan.first_member;
                index += 1;
                if counts { fill_list(list) } else { Ok(()) }
            })?;
        }
    }
    if at != dest.len() {
        return Err(Error::corrupt("feature values changed while decoding"));
    }
    Ok(())
}

/// A varint as the list's element type: int32 keeps the low 32 bits, as protobuf does.
fn put_int(put: &mut impl FnMut(&[u8]) -> Result<()>, kind: FeatureKind, v: u64) -> Result<()> {
    if kind == FeatureKind::Int32List {
        put(&(v as u32 as i32).to_le_bytes())
    } else {
        put(&(v as i64).to_le_bytes())
    }
}

/// The byte strings of the members that count, as spans of the record buffer.
fn bytes_values(
    payload: &[u8],
    entry: Range,
    plan: &FeaturePlan,
    payload_start: usize,
) -> Result<Vec<Value>> {
    let mut values = Vec::with_capacity(plan.count);
    let mut push_list = |list: Range| -> Result<()> {
        let mut r = WireReader::new(list.of(payload), list.start);
        while !r.is_empty() {
            let (field, wire) = r.tag()?;
            if field == 1 && wire == WireType::Len {
                let (start, b) = r.len_delimited()?;
                values.push(Value::Bytes(Span::new(payload_start + start, b.len())));
            } else {
                r.skip(field, wire)?;
            }
        }
        Ok(())
    };
    match plan.single_list {
        Some(list) => push_list(list)?,
        None => {
            let mut index = 0;
            for_each_member(payload, entry, |_, list| {
                let counts = index >= plan.first_member;
                index += 1;
                if counts { push_list(list) } else { Ok(()) }
            })?;
        }
    }
    Ok(values)
}

/// Decodes the feature of `entry` into a value of `out`.
fn decode_feature(out: &mut RecordOut<'_>, payload_span: Span, entry: Range) -> Result<Value> {
    let payload = out.bytes(payload_span);
    let plan = plan_feature(payload, entry)?;
    let Some(kind) = plan.kind else { return Ok(Value::Null) };
    let Some(dtype) = kind.dtype() else {
        return Ok(Value::List(bytes_values(payload, entry, &plan, payload_span.start)?));
    };
    let shape = Shape::vector(plan.count as u64);
    if let Some(packed) = plan.packed_only
        && matches!(kind, FeatureKind::FloatList | FeatureKind::DoubleList)
    {
        // Little-endian on the wire and in core arrays: point at the bytes that were read.
        let data = Span::new(payload_span.start + packed.start, packed.len);
        return Ok(Value::Array(ArrayValue { dtype, shape, data }));
    }
    let bytes = to_usize(plan.count as u64 * dtype.item_size(), "feature")?;
    let data = out
        .append_with(bytes, |old, dest| fill_numbers(payload_span.get(old), entry, &plan, dest))?;
    Ok(Value::Array(ArrayValue { dtype, shape, data }))
}

/// Decodes the serialized record at `payload_span` of `out`'s buffer into fields, one per
/// feature in key order. With `keep`, only the features it accepts are decoded (the map
/// structure of the whole record is still checked).
pub(crate) fn decode_into(
    out: &mut RecordOut<'_>,
    payload_span: Span,
    names: &mut Names<'_>,
    keep: Option<&dyn Fn(&str) -> bool>,
) -> Result<()> {
    // Pass 1: check the map structure, note where each entry is, and whether the keys are
    // already in order with no repeats (true for what reel, protobuf's deterministic mode
    // and OneFlow's Python recipe write, except upb's order of prefix keys), in which case
    // the entries are decoded as they are.
    let payload = out.bytes(payload_span);
    let mut r = WireReader::new(payload, 0);
    let mut entries = Entries::default();
    let mut ordered = true;
    while let Some(e) = next_entry(&mut r)? {
        if e.has_unknown {
            // Not a feature, but upb still parses its value: damage there is an error.
            plan_feature(payload, e.body)?;
            continue;
        }
        if let Some(last) = entries.last()
            && last.key.of(payload) >= e.key.of(payload)
        {
            ordered = false;
        }
        entries.push(e);
    }
    if !ordered {
        // Sort by key (stably, so among equal keys the wire order is kept) and let the last
        // entry of each key win, as protobuf maps do.
        let list = entries.as_mut_slice();
        list.sort_by(|a, b| a.key.of(payload).cmp(b.key.of(payload)));
        let mut kept = 0;
        for i in 0..list.len() {
            let last_of_key =
                list.get(i + 1).is_none_or(|n| n.key.of(payload) != list[i].key.of(payload));
            if last_of_key {
                list[kept] = list[i];
                kept += 1;
            }
        }
        entries.truncate(kept);
    }
    for &e in entries.as_slice() {
        decode_entry(out, payload_span, e, names, keep)?;
    }
    Ok(())
}

/// The entries of a record: inline for the usual handful, on the heap beyond.
#[derive(Default)]
struct Entries {
    inline: [Entry; INLINE_ENTRIES],
    len: usize,
    heap: Vec<Entry>,
}

const INLINE_ENTRIES: usize = 16;

impl Entries {
    fn push(&mut self, e: Entry) {
        if self.len < INLINE_ENTRIES {
            self.inline[self.len] = e;
        } else {
            if self.heap.is_empty() {
                self.heap.extend_from_slice(&self.inline);
            }
            self.heap.push(e);
        }
        self.len += 1;
    }

    fn as_slice(&self) -> &[Entry] {
        if self.len <= INLINE_ENTRIES { &self.inline[..self.len] } else { &self.heap }
    }

    fn as_mut_slice(&mut self) -> &mut [Entry] {
        if self.len <= INLINE_ENTRIES { &mut self.inline[..self.len] } else { &mut self.heap }
    }

    fn last(&self) -> Option<&Entry> {
        self.as_slice().last()
    }

    fn truncate(&mut self, len: usize) {
        if self.len > INLINE_ENTRIES && len <= INLINE_ENTRIES {
            self.inline[..len].copy_from_slice(&self.heap[..len]);
            self.heap.clear();
        } else {
            self.heap.truncate(len);
        }
        self.len = len;
    }
}

fn decode_entry(
    out: &mut RecordOut<'_>,
    payload_span: Span,
    entry: Entry,
    names: &mut Names<'_>,
    keep: Option<&dyn Fn(&str) -> bool>,
) -> Result<()> {
    let name = names.name(entry.key.of(out.bytes(payload_span)))?;
    if keep.is_some_and(|k| !k(&name)) {
        return Ok(());
    }
    let value = decode_feature(out, payload_span, entry.body)?;
    out.push(name, value);
    Ok(())
}

/// Decodes one serialized `oneflow.OFRecord` (a frame's payload) into a new [`Record`],
/// with the value mapping described in the crate documentation.
///
/// Follows protobuf's (upb's) parsing rules, listed in the crate documentation. Fails with
/// [`ErrorKind::Corrupt`](reel_core::ErrorKind::Corrupt) on malformed protobuf and on a
/// feature name that is not UTF-8 (the reference runtime accepts such a name in proto2
/// but cannot turn it into a Python string either).
pub fn decode_record(payload: &[u8]) -> Result<Record> {
    let mut record = Record::new();
    let mut out = record.out();
    let span = out.append(payload);
    let mut names = FeatureNames::default();
    decode_into(&mut out, span, &mut Names::Growing(&mut names), None)
        .map_err(|e| e.with_format(crate::FORMAT))?;
    // The payload copy stays in the buffer; the fields point into it.
    Ok(record)
}

/// Remembers the feature names of a serialized record (stops quietly at damage).
pub(crate) fn collect_names(payload: &[u8], names: &mut FeatureNames) {
    let mut r = WireReader::new(payload, 0);
    while let Ok(Some(e)) = next_entry(&mut r) {
        if !e.has_unknown {
            let _ = names.intern(e.key.of(payload));
        }
    }
}
