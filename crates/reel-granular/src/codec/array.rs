//! n-dimensional arrays: granular's `array` and `tree`, bags' `array(dtype,dims…)`.

use reel_core::{
    ArrayValue, DType, Error, Limits, RecordOut, Result, Shape, Span, Value, ValueRef,
    check_array_len,
};

use super::wrong_value;
use crate::dtype::{NumpyDtype, parse_dtype};
use crate::msgpack::{self, ArrayEncoding, DecodeRules};

/// Decodes granular's `array` record: msgpack `[dtype.str, shape, bytes]`.
pub(crate) fn decode_array(
    raw: Span,
    out: &mut RecordOut<'_>,
    rules: DecodeRules,
    limits: &Limits,
) -> Result<Value> {
    let v = msgpack::decode(out.bytes(raw), raw.start, rules)?;
    let Value::List(items) = v else {
        return Err(Error::corrupt("an `array` record is not a msgpack array"));
    };
    let [dtype, shape, data] = items.as_slice() else {
        return Err(Error::corrupt(format!(
            "an `array` record must hold [dtype, shape, bytes], this one holds {} items",
            items.len()
        )));
    };
    array_from_parts(dtype, shape, data, out, limits)
}

/// Appends granular's `array` record for `value`.
pub(crate) fn encode_array(value: ValueRef<'_>, buf: &mut Vec<u8>) -> Result<()> {
    let ValueRef::Array(a) = value else {
        return Err(wrong_value("an array", value));
    };
    buf.push(0x93);
    msgpack::encode_array_triple(a, buf)
}

/// Appends granular's `tree` record: msgpack of the structure, each array written as
/// `['_', dtype.str, shape, bytes]`.
pub(crate) fn encode_tree(value: ValueRef<'_>, buf: &mut Vec<u8>) -> Result<()> {
    msgpack::encode(value, ArrayEncoding::TreeMarker, buf)
}

/// Turns the arrays of a decoded `tree` back into arrays, exactly as granular's
/// `decode_tree` does: top-down, any 4-item list whose first item is the string `"_"` is an
/// array (its items are not visited further), dict values are visited, keys are not.
pub(crate) fn decode_tree_value(
    v: Value,
    out: &mut RecordOut<'_>,
    limits: &Limits,
) -> Result<Value> {
    match v {
        Value::List(items) => {
            if let [Value::Str(marker), dtype, shape, data] = items.as_slice()
                && out.bytes(*marker) == b"_"
            {
                return array_from_parts(dtype, shape, data, out, limits);
            }
            let items = items
                .into_iter()
                .map(|x| decode_tree_value(x, out, limits))
                .collect::<Result<Vec<_>>>()?;
            Ok(Value::List(items))
        }
        Value::Map(entries) => {
            let entries = entries
                .into_iter()
                .map(|(k, x)| Ok((k, decode_tree_value(x, out, limits)?)))
                .collect::<Result<Vec<_>>>()?;
            Ok(Value::Map(entries))
        }
        other => Ok(other),
    }
}

/// `np.frombuffer(data, dtype).reshape(shape)` over decoded msgpack items.
fn array_from_parts(
    dtype: &Value,
    shape: &Value,
    data: &Value,
    out: &mut RecordOut<'_>,
    limits: &Limits,
) -> Result<Value> {
    let Value::Str(dtype_span) = dtype else {
        return Err(Error::corrupt("an array's dtype is not a string"));
    };
    let nd = parse_dtype(std::str::from_utf8(out.bytes(*dtype_span)).unwrap_or_default())?;
    let Value::Bytes(data) = data else {
        return Err(Error::corrupt("an array's data is not a msgpack binary"));
    };
    // Shapes are short: keep them on the stack (no allocation per array read).
    let mut dims = [0i64; 32];
    let rank = match shape {
        Value::List(items) if items.len() <= dims.len() => {
            for (d, item) in dims.iter_mut().zip(items) {
                let Value::Int(i) = item else {
                    return Err(Error::corrupt(
                        "an array's shape holds something other than integers",
                    ));
                };
                *d = *i;
            }
            items.len()
        }
        Value::List(_) => return Err(Error::corrupt("an array has more than 32 dimensions")),
        // numpy's reshape also takes a bare integer.
        Value::Int(i) => {
            dims[0] = *i;
            1
        }
        _ => return Err(Error::corrupt("an array's shape is not a list of integers")),
    };
    let dims = &dims[..rank];
    let shape = resolve_shape(dims, nd.dtype, data.len as u64)?;
    array_value(nd, shape, *data, out, limits)
}

/// Builds the array value, byte-swapping big-endian elements into a new span (little-endian
/// data stays a zero-copy span of the record).
fn array_value(
    nd: NumpyDtype,
    shape: Shape,
    data: Span,
    out: &mut RecordOut<'_>,
    limits: &Limits,
) -> Result<Value> {
    check_array_len(nd.dtype, &shape, data.len as u64)?;
    let unit = nd.dtype.swap_unit();
    if !nd.big_endian || unit <= 1 {
        return Ok(Value::Array(ArrayValue { dtype: nd.dtype, shape, data }));
    }
    Limits::check(data.len as u64, limits.max_decoded_bytes, "byte-swapped array")?;
    let swapped = out.append_with(data.len, |old, new| {
        let src = data.get(old);
        for (d, s) in new.chunks_exact_mut(unit).zip(src.chunks_exact(unit)) {
            d.copy_from_slice(s);
            d.reverse();
        }
        Ok(())
    })?;
    Ok(Value::Array(ArrayValue { dtype: nd.dtype, shape, data: swapped }))
}

/// The shape of a reshape to `dims` of `byte_len` bytes of `dtype`: at most one `-1` is
/// inferred (numpy's rule); other negative extents are invalid.
fn resolve_shape(dims: &[i64], dtype: DType, byte_len: u64) -> Result<Shape> {
    let item = dtype.item_size();
    if item > 0 && !byte_len.is_multiple_of(item) {
        return Err(Error::corrupt(format!(
            "{byte_len} bytes are not a whole number of {dtype} elements"
        )));
    }
    let unknown = dims.iter().filter(|&&d| d == -1).count();
    if unknown > 1 || dims.iter().any(|&d| d < -1) {
        return Err(Error::corrupt(format!("invalid array shape {dims:?}")));
    }
    if dims.len() > 32 {
        return Err(Error::corrupt("an array has more than 32 dimensions"));
    }
    let mut out = [0u64; 32];
    let out = &mut out[..dims.len()];
    if unknown == 1 {
        let known =
            dims.iter().filter(|&&d| d >= 0).try_fold(1u64, |a, &d| a.checked_mul(d as u64));
        let count = byte_len.checked_div(item).unwrap_or(0);
        let inferred = match known {
            Some(k) if k > 0 && count.is_multiple_of(k) => count / k,
            _ => {
                return Err(Error::corrupt(format!("cannot reshape {count} elements to {dims:?}")));
            }
        };
        for (o, &d) in out.iter_mut().zip(dims) {
            *o = if d == -1 { inferred } else { d as u64 };
        }
    } else {
        for (o, &d) in out.iter_mut().zip(dims) {
            *o = d as u64;
        }
    }
    Ok(Shape::new(out))
}

/// bags' `array(dtype,d0,d1,…)`: raw element bytes, dtype and shape in the type string.
#[derive(Clone, Debug)]
pub(crate) struct RawArrayCodec {
    nd: NumpyDtype,
    dims: Vec<i64>,
}

impl RawArrayCodec {
    pub(crate) fn from_args(args: &[String]) -> Option<Self> {
        let (dtype, dims) = args.split_first()?;
        let nd = parse_dtype(dtype.trim()).ok()?;
        let dims = dims.iter().map(|d| d.trim().parse::<i64>().ok()).collect::<Option<Vec<_>>>()?;
        Some(RawArrayCodec { nd, dims })
    }

    pub(crate) fn decode(&self, raw: Span, out: &mut RecordOut<'_>) -> Result<Value> {
        let shape = resolve_shape(&self.dims, self.nd.dtype, raw.len as u64)?;
        array_value(self.nd, shape, raw, out, &Limits::default())
    }

    pub(crate) fn encode(&self, value: ValueRef<'_>, buf: &mut Vec<u8>) -> Result<()> {
        let ValueRef::Array(a) = value else {
            return Err(wrong_value("an array", value));
        };
        let shape = resolve_shape(&self.dims, self.nd.dtype, a.data.len() as u64)
            .map_err(|e| Error::schema(e.message().to_string()))?;
        if a.dtype != self.nd.dtype || a.shape != shape.dims() {
            return Err(Error::schema(format!(
                "the type wants {} of shape {:?}, the value is {} of shape {:?}",
                self.nd.dtype,
                shape.dims(),
                a.dtype,
                a.shape
            )));
        }
        let start = buf.len();
        buf.extend_from_slice(a.data);
        let unit = self.nd.dtype.swap_unit();
        if self.nd.big_endian && unit > 1 {
            for c in buf[start..].chunks_exact_mut(unit) {
                c.reverse();
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reel_core::Record;

    fn decode_hex(bytes: &[u8]) -> Result<Record> {
        let mut r = Record::new();
        let mut out = r.out();
        let span = out.append(bytes);
        let rules = DecodeRules { strict_map_keys: true, max_nesting: 64 };
        let v = decode_array(span, &mut out, rules, &Limits::default())?;
        out.push("a".into(), v);
        Ok(r)
    }

    #[test]
    fn spec_examples() {
        // uint8 [1, 2]; int32 scalar 5; big-endian int16 (2, 3) 0..5 (spec §5.3).
        let r = decode_hex(&[0x93, 0xa3, 0x7c, 0x75, 0x31, 0x91, 0x02, 0xc4, 0x02, 0x01, 0x02])
            .unwrap();
        let a = r.get("a").unwrap().as_array().unwrap();
        assert_eq!((a.dtype, a.shape, a.data), (DType::U8, &[2u64][..], &[1u8, 2][..]));
        let r = decode_hex(&[0x93, 0xa3, 0x3c, 0x69, 0x34, 0x90, 0xc4, 0x04, 5, 0, 0, 0]).unwrap();
        assert_eq!(r.get("a").unwrap().as_array().unwrap().shape, &[] as &[u64]);
        let be = [
            0x93, 0xa3, 0x3e, 0x69, 0x32, 0x92, 0x02, 0x03, 0xc4, 0x0c, 0, 0, 0, 1, 0, 2, 0, 3, 0,
            4, 0, 5,
        ];
        let r = decode_hex(&be).unwrap();
        let a = r.get("a").unwrap().as_array().unwrap();
        assert_eq!(a.data, &[0, 0, 1, 0, 2, 0, 3, 0, 4, 0, 5, 0]);
        let mut again = Vec::new();
        encode_array(r.get("a").unwrap(), &mut again).unwrap();
        // Re-encoded little-endian: same values, `<i2`.
        assert_eq!(&again[..5], &[0x93, 0xa3, b'<', b'i', b'2']);
    }

    #[test]
    fn malformed_arrays_are_errors() {
        // Wrong item count, data length not matching the shape, a bad dtype.
        assert!(decode_hex(&[0x92, 0xa3, 0x7c, 0x75, 0x31, 0x90]).is_err());
        assert!(decode_hex(&[0x93, 0xa3, 0x7c, 0x75, 0x31, 0x91, 0x03, 0xc4, 0x02, 1, 2]).is_err());
        assert!(decode_hex(&[0x93, 0xa3, 0x3c, 0x69, 0x33, 0x90, 0xc4, 0x00]).is_err());
    }

    #[test]
    fn shapes_infer_one_unknown() {
        assert_eq!(resolve_shape(&[-1, 2], DType::U8, 6).unwrap().dims(), &[3, 2]);
        assert!(resolve_shape(&[-1, -1], DType::U8, 6).is_err());
        assert!(resolve_shape(&[-2], DType::U8, 6).is_err());
        assert!(resolve_shape(&[-1, 4], DType::U8, 6).is_err());
    }
}
