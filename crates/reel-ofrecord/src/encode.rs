//! Encoding core records as `oneflow.OFRecord` bytes, byte-identical to protobuf's
//! deterministic serialization (what the golden files were written with).
//!
//! Map entries are written in the order upb's deterministic mode gives them (see
//! [`entry_order`]), each with its `key` and its `value`
//! always present (protobuf writes `0a 00` for an empty key and `12 00` for a `Feature`
//! with no kind; prost's own map encoder leaves both out, which is why this module, not
//! prost's `encode`, produces the bytes). Numeric lists are packed; an empty list that has
//! a kind is a zero-length list message.

use std::borrow::Cow;

use reel_core::{ArrayRef, DType, Error, ListRef, RecordRef, Result, ValueRef, f16_to_f32};

use crate::features::FeatureKind;
use crate::wire::{put_varint, varint_len};

/// How the writer maps core values that the reader never produces.
///
/// By default the writer accepts the reader's mapping exactly (so every record read from
/// an OFRecord file writes back unchanged) plus scalars, which become one-element lists:
/// `Bytes`/`Str` → `bytes_list`, `Int` → `int64_list`, `Float` → `double_list`. Both
/// options below change what a value reads back as, so they are off unless asked for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EncodeOptions {
    /// Write arrays of any rank as their flattened (C-order) elements; the shape is lost.
    /// Off: only one-dimensional arrays are accepted.
    pub flatten_arrays: bool,
    /// Widen what OFRecord has no list for: arrays of `bool`, `int8`, `int16`, `uint8`,
    /// `uint16` → `int32_list`; `uint32` and `uint64` (values up to `i64::MAX`) →
    /// `int64_list`; `float16` → `float_list`; a `Bool` scalar → `int32_list` of 0 or 1.
    /// Off: those are a schema error.
    pub widen_numbers: bool,
}

/// Where a feature's values come from.
enum Source<'a> {
    NoKind,
    Bytes(BytesSource<'a>),
    /// Elements of `kind`'s type, little-endian.
    Numbers(FeatureKind, Cow<'a, [u8]>),
}

enum BytesSource<'a> {
    List(ListRef<'a>),
    One(&'a [u8]),
}

impl<'a> BytesSource<'a> {
    fn for_each(&self, mut f: impl FnMut(&'a [u8])) {
        match self {
            BytesSource::One(b) => f(b),
            BytesSource::List(l) => {
                for v in l.iter() {
                    match v {
                        ValueRef::Bytes(b) => f(b),
                        ValueRef::Str(s) => f(s.as_bytes()),
                        _ => {}
                    }
                }
            }
        }
    }
}

fn schema_error(name: &str, what: impl std::fmt::Display) -> Error {
    Error::schema(format!("field {name:?}: {what}")).with_format(crate::FORMAT)
}

/// The OFRecord feature a core value is written as.
fn source<'a>(name: &str, value: ValueRef<'a>, options: EncodeOptions) -> Result<Source<'a>> {
    Ok(match value {
        ValueRef::Null => Source::NoKind,
        ValueRef::Bytes(b) => Source::Bytes(BytesSource::One(b)),
        ValueRef::Str(s) => Source::Bytes(BytesSource::One(s.as_bytes())),
        ValueRef::List(l) => {
            if let Some(bad) =
                l.iter().find(|v| !matches!(v, ValueRef::Bytes(_) | ValueRef::Str(_)))
            {
                return Err(schema_error(
                    name,
                    format_args!(
                        "a list becomes a bytes_list, so its items must be bytes or text, not {}",
                        bad.kind_name()
                    ),
                ));
            }
            Source::Bytes(BytesSource::List(l))
        }
        ValueRef::Int(i) => {
            Source::Numbers(FeatureKind::Int64List, i.to_le_bytes().to_vec().into())
        }
        ValueRef::UInt(u) => {
            let i = i64::try_from(u)
                .map_err(|_| schema_error(name, format_args!("{u} does not fit an int64_list")))?;
            Source::Numbers(FeatureKind::Int64List, i.to_le_bytes().to_vec().into())
        }
        ValueRef::Float(f) => {
            Source::Numbers(FeatureKind::DoubleList, f.to_le_bytes().to_vec().into())
        }
        ValueRef::Array(a) => array_source(name, a, options)?,
        ValueRef::Bool(b) if options.widen_numbers => {
            Source::Numbers(FeatureKind::Int32List, i32::from(b).to_le_bytes().to_vec().into())
        }
        ValueRef::Bool(_) | ValueRef::Map(_) => {
            return Err(schema_error(
                name,
                format_args!("a {} value has no OFRecord feature kind", value.kind_name()),
            ));
        }
    })
}

fn array_source<'a>(name: &str, a: ArrayRef<'a>, options: EncodeOptions) -> Result<Source<'a>> {
    if a.shape.len() != 1 && !options.flatten_arrays {
        return Err(schema_error(
            name,
            format_args!(
                "an array of shape {:?} would lose its shape as an OFRecord list; write it \
                 one-dimensional (and its shape as another feature), or enable \
                 EncodeOptions::flatten_arrays (through CreateOptions::ofrecord in the reel \
                 facade)",
                a.shape
            ),
        ));
    }
    if let Some(kind) = FeatureKind::from_dtype(a.dtype) {
        return Ok(Source::Numbers(kind, Cow::Borrowed(a.data)));
    }
    if !options.widen_numbers {
        return Err(schema_error(
            name,
            format_args!(
                "OFRecord has no list of {}; convert it to float32/float64/int32/int64, or \
                 enable EncodeOptions::widen_numbers (through \
                 CreateOptions::ofrecord in the reel facade)",
                a.dtype
            ),
        ));
    }
    let widened: Vec<u8> = match a.dtype {
        DType::Bool | DType::U8 => {
            a.data.iter().flat_map(|&b| i32::from(b).to_le_bytes()).collect()
        }
        DType::I8 => a.data.iter().flat_map(|&b| i32::from(b as i8).to_le_bytes()).collect(),
        DType::I16 => chunks::<2>(a.data)
            .flat_map(|c| i32::from(i16::from_le_bytes(c)).to_le_bytes())
            .collect(),
        DType::U16 => chunks::<2>(a.data)
            .flat_map(|c| i32::from(u16::from_le_bytes(c)).to_le_bytes())
            .collect(),
        DType::U32 => chunks::<4>(a.data)
            .flat_map(|c| i64::from(u32::from_le_bytes(c)).to_le_bytes())
            .collect(),
        DType::U64 => {
            let mut out = Vec::with_capacity(a.data.len());
            for c in chunks::<8>(a.data) {
                let v = u64::from_le_bytes(c);
                let v = i64::try_from(v).map_err(|_| {
                    schema_error(name, format_args!("uint64 value {v} does not fit an int64_list"))
                })?;
                out.extend_from_slice(&v.to_le_bytes());
            }
            out
        }
        DType::F16 => chunks::<2>(a.data)
            .flat_map(|c| f16_to_f32(u16::from_le_bytes(c)).to_le_bytes())
            .collect(),
        other => {
            return Err(schema_error(name, format_args!("OFRecord has no list of {other}")));
        }
    };
    let kind = match a.dtype {
        DType::U32 | DType::U64 => FeatureKind::Int64List,
        DType::F16 => FeatureKind::FloatList,
        _ => FeatureKind::Int32List,
    };
    Ok(Source::Numbers(kind, Cow::Owned(widened)))
}

fn chunks<const N: usize>(data: &[u8]) -> impl Iterator<Item = [u8; N]> + '_ {
    data.chunks_exact(N).map(|c| {
        let mut a = [0u8; N];
        a.copy_from_slice(c);
        a
    })
}

/// Bytes of the packed payload of a numeric list.
fn packed_len(kind: FeatureKind, le: &[u8]) -> usize {
    match kind {
        FeatureKind::Int32List => {
            chunks::<4>(le).map(|c| varint_len(i32::from_le_bytes(c) as i64 as u64)).sum()
        }
        FeatureKind::Int64List => {
            chunks::<8>(le).map(|c| varint_len(i64::from_le_bytes(c) as u64)).sum()
        }
        _ => le.len(),
    }
}

/// Length of the list message (`BytesList`, `FloatList`, …) of a feature.
fn list_len(src: &Source<'_>) -> usize {
    match src {
        Source::NoKind => 0,
        Source::Bytes(b) => {
            let mut n = 0;
            b.for_each(|v| n += 1 + varint_len(v.len() as u64) + v.len());
            n
        }
        Source::Numbers(kind, le) => {
            // An empty list writes no field at all (a zero-length list message).
            if le.is_empty() {
                return 0;
            }
            let p = packed_len(*kind, le);
            1 + varint_len(p as u64) + p
        }
    }
}

fn feature_len(src: &Source<'_>) -> usize {
    match src {
        Source::NoKind => 0,
        _ => {
            let l = list_len(src);
            1 + varint_len(l as u64) + l
        }
    }
}

fn field_len(len: usize) -> usize {
    1 + varint_len(len as u64) + len
}

fn write_feature(out: &mut Vec<u8>, src: &Source<'_>) {
    let kind = match src {
        Source::NoKind => return,
        Source::Bytes(_) => FeatureKind::BytesList,
        Source::Numbers(kind, _) => *kind,
    };
    out.push((kind.field_number() << 3 | 2) as u8);
    put_varint(out, list_len(src) as u64);
    match src {
        Source::NoKind => {}
        Source::Bytes(b) => b.for_each(|v| {
            out.push(0x0a);
            put_varint(out, v.len() as u64);
            out.extend_from_slice(v);
        }),
        Source::Numbers(kind, le) => {
            if le.is_empty() {
                return;
            }
            out.push(0x0a);
            put_varint(out, packed_len(*kind, le) as u64);
            match kind {
                FeatureKind::Int32List => chunks::<4>(le)
                    .for_each(|c| put_varint(out, i32::from_le_bytes(c) as i64 as u64)),
                FeatureKind::Int64List => {
                    chunks::<8>(le).for_each(|c| put_varint(out, i64::from_le_bytes(c) as u64))
                }
                _ => out.extend_from_slice(le),
            }
        }
    }
}

/// The order in which map entries are written: byte-wise by key, except that a key comes
/// after every longer key it is a prefix of (`"ab"` before `"a"`, `"after"` before `""`).
///
/// That is what upb (the protobuf runtime of Python, which wrote the golden files) emits
/// in deterministic mode: it sorts by descending `memcmp` of the common prefix with
/// ascending length as tie-break, then writes the entries back to front. For keys where
/// neither is a prefix of the other it is plain byte order, which protobuf C++ uses too.
pub fn entry_order(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
    let common = a.len().min(b.len());
    match a[..common].cmp(&b[..common]) {
        std::cmp::Ordering::Equal => b.len().cmp(&a.len()),
        other => other,
    }
}

/// Appends the serialized `oneflow.OFRecord` for `record` to `out`.
///
/// Each field becomes a feature of the same name. The mapping from core values (the
/// inverse of the reader's, plus scalars and what `options` allows) is in the crate
/// documentation. Fails with [`ErrorKind::Schema`](reel_core::ErrorKind::Schema) for a value
/// with no OFRecord form and for two fields with the same name; `out` is then unchanged.
pub fn encode_record_into(
    record: RecordRef<'_>,
    options: EncodeOptions,
    out: &mut Vec<u8>,
) -> Result<()> {
    let mut fields: Vec<(&str, Source<'_>)> = Vec::with_capacity(record.len());
    for (name, value) in record.iter() {
        fields.push((name, source(name, value, options)?));
    }
    fields.sort_by(|a, b| entry_order(a.0.as_bytes(), b.0.as_bytes()));
    if let Some(w) = fields.windows(2).find(|w| w[0].0 == w[1].0) {
        return Err(schema_error(
            w[0].0,
            "the record has two fields of this name; an OFRecord maps each name to one feature",
        ));
    }
    let mut total = 0;
    for (name, src) in &fields {
        total += field_len(field_len(name.len()) + field_len(feature_len(src)));
    }
    out.reserve(total);
    for (name, src) in &fields {
        let entry = field_len(name.len()) + field_len(feature_len(src));
        out.push(0x0a);
        put_varint(out, entry as u64);
        out.push(0x0a);
        put_varint(out, name.len() as u64);
        out.extend_from_slice(name.as_bytes());
        out.push(0x12);
        put_varint(out, feature_len(src) as u64);
        write_feature(out, src);
    }
    Ok(())
}

/// The serialized `oneflow.OFRecord` for `record`; see [`encode_record_into`].
pub fn encode_record(record: RecordRef<'_>, options: EncodeOptions) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    encode_record_into(record, options, &mut out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn half_precision_converts_exactly() {
        assert_eq!(f16_to_f32(0x3c00), 1.0);
        assert_eq!(f16_to_f32(0xc000), -2.0);
        assert_eq!(f16_to_f32(0x0001), 2f32.powi(-24));
        assert_eq!(f16_to_f32(0x03ff), 1023.0 * 2f32.powi(-24));
        assert_eq!(f16_to_f32(0x7c00), f32::INFINITY);
        assert!(f16_to_f32(0x7e00).is_nan());
        assert_eq!(f16_to_f32(0x8000).to_bits(), 0x8000_0000);
        assert_eq!(f16_to_f32(0x7bff), 65504.0);
    }
}
