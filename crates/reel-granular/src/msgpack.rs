//! MessagePack as the reference's `msgpack` package reads and writes it.
//!
//! Decoding produces core [`Value`]s whose strings and binaries are spans into the record
//! that was read (msgpack str/bin payloads are contiguous bytes), so decoding copies no
//! payload. Encoding follows `msgpack.packb` with its defaults (`use_bin_type=True`):
//! integers in the smallest form, floats as float64, `str` as the str family (including
//! str8), bytes as the bin family — so values read from a reference file encode back to the
//! same bytes.

use reel_core::{Error, ErrorKind, Limits, RecordOut, Result, Span, Value, ValueRef};
use rmp::Marker;

/// Decodes the msgpack object at `span` of the record being built, turning every
/// `['_', dtype.str, shape, bytes]` list into an array as granular's `tree` codec does.
/// Map keys of any kind are read; nesting follows [`Limits::max_nesting`]. Text and bytes
/// point into the record (no copy).
///
/// This is the reading half of the `msgpack` payload codec of the `reel` facade.
pub fn decode_tree(span: Span, out: &mut RecordOut<'_>, limits: &Limits) -> Result<Value> {
    let rules = DecodeRules { strict_map_keys: false, max_nesting: limits.max_nesting };
    let v = decode(out.bytes(span), span.start, rules)?;
    crate::codec::decode_tree_value(v, out, limits)
}

/// Appends `value` as msgpack the way `msgpack.packb` writes it, each n-dimensional array
/// as `['_', dtype.str, shape, bytes]` (granular's `tree` form). The writing half of
/// [`decode_tree`].
pub fn encode_tree(value: ValueRef<'_>, out: &mut Vec<u8>) -> Result<()> {
    encode(value, ArrayEncoding::TreeMarker, out)
}

/// How strictly to decode.
#[derive(Clone, Copy, Debug)]
pub(crate) struct DecodeRules {
    /// Refuse map keys other than str and bin, as `msgpack.unpackb` does by default
    /// (`strict_map_key=True`).
    pub strict_map_keys: bool,
    /// Deepest nesting of arrays and maps.
    pub max_nesting: u32,
}

/// Decodes exactly one msgpack object spanning all of `data`, whose first byte is at
/// `base` in the record buffer (so payload spans point into that buffer).
pub(crate) fn decode(data: &[u8], base: usize, rules: DecodeRules) -> Result<Value> {
    let mut d = Decoder { data, pos: 0, base, rules };
    let v = d.value(0)?;
    if d.pos != data.len() {
        return Err(Error::corrupt(format!(
            "msgpack object ends at byte {} of {}: the record has extra data after it",
            d.pos,
            data.len()
        ))
        .with_offset(d.pos as u64));
    }
    Ok(v)
}

struct Decoder<'a> {
    data: &'a [u8],
    pos: usize,
    base: usize,
    rules: DecodeRules,
}

impl Decoder<'_> {
    fn incomplete(&self, what: &str) -> Error {
        Error::corrupt(format!(
            "msgpack data ends inside {what} (record of {} bytes)",
            self.data.len()
        ))
        .with_offset(self.pos as u64)
    }

    fn take(&mut self, n: usize, what: &str) -> Result<&[u8]> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.data.len());
        match end {
            Some(end) => {
                let s = &self.data[self.pos..end];
                self.pos = end;
                Ok(s)
            }
            None => Err(self.incomplete(what)),
        }
    }

    fn be(&mut self, n: usize, what: &str) -> Result<u64> {
        Ok(self.take(n, what)?.iter().fold(0u64, |acc, &b| acc << 8 | u64::from(b)))
    }

    fn span(&mut self, n: u64, what: &str) -> Result<Span> {
        let n = usize::try_from(n).map_err(|_| self.incomplete(what))?;
        let start = self.pos;
        self.take(n, what)?;
        Ok(Span::new(self.base + start, n))
    }

    fn value(&mut self, depth: u32) -> Result<Value> {
        let byte = *self.take(1, "a value")?.first().unwrap_or(&0);
        let at = self.pos - 1;
        Ok(match Marker::from_u8(byte) {
            Marker::FixPos(n) => Value::Int(i64::from(n)),
            Marker::FixNeg(n) => Value::Int(i64::from(n)),
            Marker::Null => Value::Null,
            Marker::False => Value::Bool(false),
            Marker::True => Value::Bool(true),
            Marker::U8 => Value::Int(self.be(1, "an integer")? as i64),
            Marker::U16 => Value::Int(self.be(2, "an integer")? as i64),
            Marker::U32 => Value::Int(self.be(4, "an integer")? as i64),
            Marker::U64 => Value::from_u64(self.be(8, "an integer")?),
            Marker::I8 => Value::Int(i64::from(self.be(1, "an integer")? as u8 as i8)),
            Marker::I16 => Value::Int(i64::from(self.be(2, "an integer")? as u16 as i16)),
            Marker::I32 => Value::Int(i64::from(self.be(4, "an integer")? as u32 as i32)),
            Marker::I64 => Value::Int(self.be(8, "an integer")? as i64),
            Marker::F32 => Value::Float(f64::from(f32::from_bits(self.be(4, "a float")? as u32))),
            Marker::F64 => Value::Float(f64::from_bits(self.be(8, "a float")?)),
            Marker::FixStr(n) => self.str(u64::from(n))?,
            Marker::Str8 => {
                let n = self.be(1, "a string length")?;
                self.str(n)?
            }
            Marker::Str16 => {
                let n = self.be(2, "a string length")?;
                self.str(n)?
            }
            Marker::Str32 => {
                let n = self.be(4, "a string length")?;
                self.str(n)?
            }
            Marker::Bin8 => {
                let n = self.be(1, "a binary length")?;
                Value::Bytes(self.span(n, "a binary")?)
            }
            Marker::Bin16 => {
                let n = self.be(2, "a binary length")?;
                Value::Bytes(self.span(n, "a binary")?)
            }
            Marker::Bin32 => {
                let n = self.be(4, "a binary length")?;
                Value::Bytes(self.span(n, "a binary")?)
            }
            Marker::FixArray(n) => self.array(u64::from(n), depth)?,
            Marker::Array16 => {
                let n = self.be(2, "an array length")?;
                self.array(n, depth)?
            }
            Marker::Array32 => {
                let n = self.be(4, "an array length")?;
                self.array(n, depth)?
            }
            Marker::FixMap(n) => self.map(u64::from(n), depth)?,
            Marker::Map16 => {
                let n = self.be(2, "a map length")?;
                self.map(n, depth)?
            }
            Marker::Map32 => {
                let n = self.be(4, "a map length")?;
                self.map(n, depth)?
            }
            Marker::FixExt1
            | Marker::FixExt2
            | Marker::FixExt4
            | Marker::FixExt8
            | Marker::FixExt16
            | Marker::Ext8
            | Marker::Ext16
            | Marker::Ext32 => {
                return Err(Error::unsupported(format!(
                    "msgpack extension type (marker {byte:#04x}) has no reel value"
                ))
                .with_offset(at as u64));
            }
            Marker::Reserved => {
                return Err(
                    Error::corrupt("msgpack byte 0xc1 is never used").with_offset(at as u64)
                );
            }
        })
    }

    fn str(&mut self, n: u64) -> Result<Value> {
        let span = self.span(n, "a string")?;
        let bytes = &self.data[span.start - self.base..span.end() - self.base];
        if let Err(e) = std::str::from_utf8(bytes) {
            return Err(Error::corrupt(format!("msgpack string is not valid UTF-8: {e}"))
                .with_offset((span.start - self.base) as u64));
        }
        Ok(Value::Str(span))
    }

    fn nested(&self, depth: u32) -> Result<u32> {
        if depth >= self.rules.max_nesting {
            return Err(Error::new(
                ErrorKind::Limit,
                format!(
                    "msgpack nesting is deeper than the configured limit of {}",
                    self.rules.max_nesting
                ),
            ));
        }
        Ok(depth + 1)
    }

    /// Capacity for `n` items of at least `min_bytes` each, never more than the bytes left
    /// could hold (a hostile length cannot cause a large allocation).
    fn capacity(&self, n: u64, min_bytes: u64, what: &str) -> Result<usize> {
        let left = (self.data.len() - self.pos) as u64;
        if n.saturating_mul(min_bytes) > left {
            return Err(self.incomplete(what));
        }
        Ok(n as usize)
    }

    fn array(&mut self, n: u64, depth: u32) -> Result<Value> {
        let depth = self.nested(depth)?;
        let mut items = Vec::with_capacity(self.capacity(n, 1, "an array")?);
        for _ in 0..n {
            items.push(self.value(depth)?);
        }
        Ok(Value::List(items))
    }

    fn map(&mut self, n: u64, depth: u32) -> Result<Value> {
        let depth = self.nested(depth)?;
        let mut entries = Vec::with_capacity(self.capacity(n, 2, "a map")?);
        for _ in 0..n {
            let key_at = self.pos;
            let k = self.value(depth)?;
            if self.rules.strict_map_keys && !matches!(k, Value::Str(_) | Value::Bytes(_)) {
                return Err(Error::corrupt(format!(
                    "msgpack map key is a {} (only str and bytes keys are allowed, as \
                     msgpack's strict_map_key requires)",
                    kind_of(&k)
                ))
                .with_offset(key_at as u64));
            }
            let v = self.value(depth)?;
            entries.push((k, v));
        }
        Ok(Value::Map(entries))
    }
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "nil",
        Value::Bool(_) => "bool",
        Value::Int(_) | Value::UInt(_) => "int",
        Value::Float(_) => "float",
        Value::Bytes(_) => "bin",
        Value::Str(_) => "str",
        Value::Array(_) => "array",
        Value::List(_) => "array",
        Value::Map(_) => "map",
    }
}

/// What to do with n-dimensional arrays when encoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ArrayEncoding {
    /// Refuse them (`msgpack.packb` cannot pack numpy arrays).
    Refuse,
    /// Write `['_', dtype.str, shape, bytes]`, as granular's `tree` codec does.
    TreeMarker,
}

/// Appends `value` as msgpack, as `msgpack.packb` would write the equivalent Python value.
pub(crate) fn encode(value: ValueRef<'_>, arrays: ArrayEncoding, out: &mut Vec<u8>) -> Result<()> {
    match value {
        ValueRef::Null => out.push(0xc0),
        ValueRef::Bool(b) => out.push(if b { 0xc3 } else { 0xc2 }),
        ValueRef::Int(i) => {
            let _ = rmp::encode::write_sint(out, i);
        }
        ValueRef::UInt(u) => {
            let _ = rmp::encode::write_uint(out, u);
        }
        ValueRef::Float(f) => {
            let _ = rmp::encode::write_f64(out, f);
        }
        ValueRef::Bytes(b) => write_bin(out, b)?,
        ValueRef::Str(s) => {
            let _ = rmp::encode::write_str_len(out, len32(s.len(), "string")?);
            out.extend_from_slice(s.as_bytes());
        }
        ValueRef::List(l) => {
            let _ = rmp::encode::write_array_len(out, len32(l.len(), "list")?);
            for item in l.iter() {
                encode(item, arrays, out)?;
            }
        }
        ValueRef::Map(m) => {
            let _ = rmp::encode::write_map_len(out, len32(m.len(), "map")?);
            for (k, v) in m.iter() {
                encode(k, arrays, out)?;
                encode(v, arrays, out)?;
            }
        }
        ValueRef::Array(a) => match arrays {
            ArrayEncoding::Refuse => {
                return Err(Error::schema(
                    "an n-dimensional array cannot be written as msgpack (the reference's \
                     msgpack codec cannot either); use the `array` or `tree` type",
                ));
            }
            ArrayEncoding::TreeMarker => {
                let _ = rmp::encode::write_array_len(out, 4);
                let _ = rmp::encode::write_str(out, "_");
                encode_array_triple(a, out)?;
            }
        },
    }
    Ok(())
}

/// Appends `dtype.str`, the shape and the element bytes (the body shared by the `array`
/// record `[dtype, shape, bytes]` and the tree marker `['_', dtype, shape, bytes]`).
pub(crate) fn encode_array_triple(a: reel_core::ArrayRef<'_>, out: &mut Vec<u8>) -> Result<()> {
    let dtype = a.dtype.numpy_str();
    let _ = rmp::encode::write_str(out, &dtype);
    let _ = rmp::encode::write_array_len(out, len32(a.shape.len(), "shape")?);
    for &d in a.shape {
        let _ = rmp::encode::write_uint(out, d);
    }
    write_bin(out, a.data)
}

fn write_bin(out: &mut Vec<u8>, b: &[u8]) -> Result<()> {
    let _ = rmp::encode::write_bin_len(out, len32(b.len(), "binary")?);
    out.extend_from_slice(b);
    Ok(())
}

fn len32(len: usize, what: &str) -> Result<u32> {
    u32::try_from(len).map_err(|_| {
        Error::invalid_input(format!("a {what} of {len} items or bytes is too long for msgpack"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use reel_core::Record;

    const RULES: DecodeRules = DecodeRules { strict_map_keys: true, max_nesting: 64 };

    fn roundtrip(hex_bytes: &[u8]) {
        let mut r = Record::new();
        let mut out = r.out();
        let span = out.append(hex_bytes);
        let v = decode(out.bytes(span), span.start, RULES).unwrap();
        let mut again = Vec::new();
        let buf = out.bytes(Span::new(0, span.end())).to_vec();
        encode(v.view(&buf), ArrayEncoding::Refuse, &mut again).unwrap();
        assert_eq!(again, hex_bytes);
    }

    #[test]
    fn python_packb_bytes_round_trip() {
        // msgpack.packb([0, -1, 127, 128, -33, 256, 2**40, -2**40, 2**64-1]) etc.
        roundtrip(&[0x93, 0x00, 0x00, 0x92, 0x00, 0x02]);
        roundtrip(&[0x93, 0xcc, 0xc8, 0xce, 0x00, 0x01, 0x11, 0x70, 0x92, 0xcc, 0x80, 0x03]);
        roundtrip(&[0x92, 0xff, 0xd0, 0xdf]);
        roundtrip(&[0xcf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]);
        roundtrip(&[0xcb, 0x40, 0x0c, 0, 0, 0, 0, 0, 0]);
        roundtrip(&[0x82, 0xa1, b'k', 0xc4, 0x01, 0x07, 0xa1, b's', 0xc0]);
        let mut long = vec![0xd9, 40];
        long.extend(std::iter::repeat_n(b'x', 40));
        roundtrip(&long);
    }

    #[test]
    fn errors_match_the_reference() {
        let err = |b: &[u8]| decode(b, 0, RULES).unwrap_err();
        // Extra data, incomplete input, int map keys under strict_map_key.
        assert_eq!(err(&[0x01, 0x02]).kind(), ErrorKind::Corrupt);
        assert_eq!(err(&[0x92, 0x01]).kind(), ErrorKind::Corrupt);
        assert_eq!(err(&[0x81, 0x01, 0x02]).kind(), ErrorKind::Corrupt);
        let lax = DecodeRules { strict_map_keys: false, ..RULES };
        assert!(decode(&[0x81, 0x01, 0x02], 0, lax).is_ok());
        // Invalid UTF-8, a hostile length, extensions, deep nesting.
        assert_eq!(err(&[0xa1, 0xff]).kind(), ErrorKind::Corrupt);
        assert_eq!(err(&[0xdd, 0xff, 0xff, 0xff, 0xff]).kind(), ErrorKind::Corrupt);
        assert_eq!(err(&[0xd4, 0x01, 0x00]).kind(), ErrorKind::Unsupported);
        assert_eq!(err(&[0x91; 100]).kind(), ErrorKind::Limit);
    }
}
