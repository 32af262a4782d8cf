//! Tagged JSON: any reel value as JSON text, without loss, and back. One convention for
//! every place reel writes values as JSON: the `json` pack and nested-field layout of the
//! facade's conversions (`--pack json`, `--encode-nested json`, `--payload json`) and the
//! Arrow/Parquet columns whose values have no common Arrow type (`reel.type = json`).
//!
//! Plain JSON holds text, integers (any `i64`/`u64`), finite floats (always written with a
//! fraction or an exponent, so `1.0` reads back as a float, and bit for bit), bools, null,
//! lists, and maps whose keys are distinct text. Every other value is an object with one
//! `$` key:
//!
//! | value | JSON |
//! | --- | --- |
//! | bytes | `{"$bytes": "<base64>"}` |
//! | NaN, ±inf | `{"$float": "nan"}`, `"inf"`, `"-inf"` |
//! | n-d array | `{"$array": {"dtype": "<f4", "shape": [2, 3], "data": "<base64>"}}` (numpy's dtype string, C-order bytes) |
//! | map with a key that is not text, repeated keys, or a single key starting with `$` | `{"$map": [[key, value], …]}` |
//!
//! Base64 is the standard alphabet with padding. Arrays are written little-endian
//! (`<f4`); a big-endian dtype string (`>f4`, as numpy writes for such arrays) is read and
//! its elements swapped, so the value is the same array. In Python:
//! `numpy.frombuffer(base64.b64decode(a["data"]), a["dtype"]).reshape(a["shape"])`.
//!
//! Decoding is strict: a malformed tag, an array whose data does not fit its dtype and
//! shape, or nesting deeper than the caller's limit is an error, never a panic.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use serde_json::{Map, Value as Json, json};

use crate::{ArrayValue, DType, Error, ErrorKind, RecordOut, Result, Shape, Span, Value, ValueRef};

/// The JSON of a value (see the module documentation).
fn to_json(value: ValueRef<'_>) -> Json {
    match value {
        ValueRef::Null => Json::Null,
        ValueRef::Bool(b) => Json::Bool(b),
        ValueRef::Int(i) => Json::from(i),
        ValueRef::UInt(u) => Json::from(u),
        // serde_json writes finite floats with a fraction or exponent ("2.0").
        ValueRef::Float(f) if f.is_finite() => Json::from(f),
        ValueRef::Float(f) => {
            let name = if f.is_nan() {
                "nan"
            } else if f > 0.0 {
                "inf"
            } else {
                "-inf"
            };
            json!({ "$float": name })
        }
        ValueRef::Str(s) => Json::String(s.to_string()),
        ValueRef::Bytes(b) => json!({ "$bytes": B64.encode(b) }),
        ValueRef::Array(a) => json!({ "$array": {
            "dtype": a.dtype.numpy_str(), "shape": a.shape, "data": B64.encode(a.data),
        }}),
        ValueRef::List(l) => Json::Array(l.iter().map(to_json).collect()),
        ValueRef::Map(m) => {
            let mut keys: Vec<&str> = m.iter().filter_map(|(k, _)| k.as_str()).collect();
            let all_text = keys.len() == m.len();
            keys.sort_unstable();
            let distinct = keys.windows(2).all(|w| w[0] != w[1]);
            let looks_tagged = m.len() == 1 && keys.first().is_some_and(|k| k.starts_with('$'));
            if all_text && distinct && !looks_tagged {
                let mut object = Map::new();
                for (k, v) in m.iter() {
                    object.insert(k.as_str().unwrap_or_default().to_string(), to_json(v));
                }
                Json::Object(object)
            } else {
                let pairs = m.iter().map(|(k, v)| json!([to_json(k), to_json(v)])).collect();
                json!({ "$map": Json::Array(pairs) })
            }
        }
    }
}

/// Appends the tagged JSON text of `value` to `out`.
pub fn encode(value: ValueRef<'_>, out: &mut Vec<u8>) {
    // Writing a serde_json::Value to a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, &to_json(value));
}

/// The value the tagged JSON `text` stands for; its bytes and text are appended to `out`.
/// Lists and maps nested deeper than `max_depth` are an
/// [`ErrorKind::Limit`] error; anything that is not tagged JSON is
/// [`ErrorKind::Corrupt`].
pub fn decode(text: &[u8], out: &mut RecordOut<'_>, max_depth: u32) -> Result<Value> {
    let doc: Json =
        serde_json::from_slice(text).map_err(|e| corrupt(format!("not valid JSON: {e}")))?;
    Decoder { out, max_depth }.value(&doc, 0)
}

/// [`decode`] of the text at `span` of the record being built (a JSON payload).
pub fn decode_span(span: Span, out: &mut RecordOut<'_>, max_depth: u32) -> Result<Value> {
    let doc: Json = serde_json::from_slice(out.bytes(span))
        .map_err(|e| corrupt(format!("not valid JSON: {e}")))?;
    Decoder { out, max_depth }.value(&doc, 0)
}

fn corrupt(what: impl std::fmt::Display) -> Error {
    Error::corrupt(format!("tagged JSON: {what}"))
}

struct Decoder<'o, 'r> {
    out: &'o mut RecordOut<'r>,
    max_depth: u32,
}

impl Decoder<'_, '_> {
    fn base64(&mut self, v: &Json, what: &str) -> Result<Vec<u8>> {
        let text = v.as_str().ok_or_else(|| corrupt(format!("{what} is not a base64 string")))?;
        B64.decode(text).map_err(|e| corrupt(format!("{what} is not valid base64: {e}")))
    }

    fn value(&mut self, v: &Json, depth: u32) -> Result<Value> {
        Ok(match v {
            Json::Null => Value::Null,
            Json::Bool(b) => Value::Bool(*b),
            Json::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
                (Some(i), _, _) if !n.is_f64() => Value::Int(i),
                (_, Some(u), _) if !n.is_f64() => Value::from_u64(u),
                (_, _, Some(f)) => Value::Float(f),
                _ => return Err(corrupt(format!("number {n} has no reel value"))),
            },
            Json::String(s) => self.out.append_str(s),
            Json::Array(items) => {
                let depth = self.nested(depth)?;
                Value::List(items.iter().map(|x| self.value(x, depth)).collect::<Result<Vec<_>>>()?)
            }
            Json::Object(o) => {
                if o.len() == 1
                    && let Some((tag, body)) = o.iter().next()
                    && let Some(v) = self.tagged(tag, body, depth)?
                {
                    return Ok(v);
                }
                let depth = self.nested(depth)?;
                let mut entries = Vec::with_capacity(o.len());
                for (k, x) in o {
                    let key = self.out.append_str(k);
                    entries.push((key, self.value(x, depth)?));
                }
                Value::Map(entries)
            }
        })
    }

    /// The value of a one-key object whose key is a tag; `None` for any other key.
    fn tagged(&mut self, tag: &str, body: &Json, depth: u32) -> Result<Option<Value>> {
        Ok(Some(match tag {
            "$bytes" => {
                let bytes = self.base64(body, "$bytes")?;
                Value::Bytes(self.out.append(&bytes))
            }
            "$float" => Value::Float(match body.as_str() {
                Some("nan") => f64::NAN,
                Some("inf") => f64::INFINITY,
                Some("-inf") => f64::NEG_INFINITY,
                _ => return Err(corrupt("$float is not \"nan\", \"inf\" or \"-inf\"")),
            }),
            "$array" => self.array(body)?,
            "$map" => {
                let depth = self.nested(depth)?;
                let pairs =
                    body.as_array().ok_or_else(|| corrupt("$map is not a list of pairs"))?;
                let mut entries = Vec::with_capacity(pairs.len());
                for pair in pairs {
                    let [k, v] = pair.as_array().map(Vec::as_slice).unwrap_or_default() else {
                        return Err(corrupt("$map holds something other than [key, value]"));
                    };
                    entries.push((self.value(k, depth)?, self.value(v, depth)?));
                }
                Value::Map(entries)
            }
            _ => return Ok(None),
        }))
    }

    fn array(&mut self, body: &Json) -> Result<Value> {
        let dtype = body
            .get("dtype")
            .and_then(Json::as_str)
            .ok_or_else(|| corrupt("$array has no dtype string"))?;
        let (dtype, big_endian) = DType::from_numpy_str(dtype)
            .ok_or_else(|| corrupt(format!("$array dtype {dtype:?} is not known")))?;
        let dims: Vec<u64> = body
            .get("shape")
            .and_then(Json::as_array)
            .and_then(|a| a.iter().map(Json::as_u64).collect::<Option<Vec<_>>>())
            .ok_or_else(|| corrupt("$array shape is not a list of sizes"))?;
        let mut data = self.base64(body.get("data").unwrap_or(&Json::Null), "$array data")?;
        let shape = Shape::new(&dims);
        crate::check_array_len(dtype, &shape, data.len() as u64)
            .map_err(|e| corrupt(format!("$array: {}", e.message())))?;
        let unit = dtype.swap_unit();
        if big_endian && unit > 1 {
            // reel's arrays are little-endian: swap each element's bytes.
            data.chunks_exact_mut(unit).for_each(<[u8]>::reverse);
        }
        let data = self.out.append(&data);
        Ok(Value::Array(ArrayValue { dtype, shape, data }))
    }

    fn nested(&self, depth: u32) -> Result<u32> {
        if depth >= self.max_depth {
            return Err(Error::new(
                ErrorKind::Limit,
                format!("tagged JSON nests deeper than the limit of {}", self.max_depth),
            ));
        }
        Ok(depth + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Record;

    fn round_trip(value: ValueRef<'_>) -> (String, Record) {
        let mut text = Vec::new();
        encode(value, &mut text);
        let mut back = Record::new();
        let v = decode(&text, &mut back.out(), 64).unwrap();
        back.push("v", v);
        (String::from_utf8(text).unwrap(), back)
    }

    #[test]
    fn every_value_kind_round_trips() {
        let mut r = Record::new();
        r.push_float("nan", f64::NAN).push_float("inf", f64::NEG_INFINITY);
        r.push_float("one", 1.0).push_float("third", 1.0 / 3.0).push_int("i", -5);
        r.push_uint("u", u64::MAX).push_bytes("b", &[0, 255, 7]).push_str("s", "ß$");
        r.push_array("a", DType::I16, &[2, 1], &[1, 0, 2, 0]).unwrap();
        r.push_array("c", DType::C64, &[1], &[0, 0, 128, 63, 0, 0, 0, 64]).unwrap();
        r.push_null("n").push_bool("t", true);
        let mut maps = Record::new();
        {
            let mut o = maps.out();
            let (k1, v1) = (Value::Int(3), o.append_str("x"));
            let (k2, v2) = (o.append_str("$bytes"), Value::Int(1));
            let (k3, k4) = (o.append_str("dup"), o.append_str("dup"));
            let (k5, v5) = (o.append_str("plain"), Value::List(vec![Value::Bool(false)]));
            let k6 = o.append_str("none");
            o.push("int key".into(), Value::Map(vec![(k1, v1)]));
            o.push("tag-like key".into(), Value::Map(vec![(k2, v2)]));
            o.push(
                "repeated key".into(),
                Value::Map(vec![(k3, Value::Int(1)), (k4, Value::Int(2))]),
            );
            o.push("plain".into(), Value::Map(vec![(k5, v5), (k6, Value::Null)]));
        }
        for (name, value) in r.iter().chain(maps.iter()) {
            let (text, back) = round_trip(value);
            assert_eq!(back.get("v").unwrap(), value, "{name}: {text}");
        }
        assert_eq!(round_trip(r.get("one").unwrap()).0, "1.0");
        assert_eq!(round_trip(r.get("b").unwrap()).0, r#"{"$bytes":"AP8H"}"#);
        assert_eq!(
            round_trip(r.get("a").unwrap()).0,
            r#"{"$array":{"dtype":"<i2","shape":[2,1],"data":"AQACAA=="}}"#
        );
        assert!(round_trip(maps.get("plain").unwrap()).0.starts_with(r#"{"plain""#));
        assert!(round_trip(maps.get("repeated key").unwrap()).0.starts_with(r#"{"$map""#));
    }

    #[test]
    fn big_endian_arrays_read_as_the_same_values() {
        // numpy: np.array([1, -2], dtype=">i4"), and complex64 [1+2j] as ">c8".
        let cases: [(&str, &str, DType, &[u8]); 3] = [
            (">i4", "AAAAAf////4=", DType::I32, &[1, 0, 0, 0, 0xfe, 0xff, 0xff, 0xff]),
            (">c8", "P4AAAEAAAAA=", DType::C64, &[0, 0, 0x80, 0x3f, 0, 0, 0, 0x40]),
            (">u1", "Bw==", DType::U8, &[7]),
        ];
        for (dtype, data, want_dtype, want) in cases {
            let n = want.len() / want_dtype.item_size() as usize;
            let text = format!(
                r#"{{"$array": {{"dtype": "{dtype}", "shape": [{n}], "data": "{data}"}}}}"#
            );
            let mut r = Record::new();
            let v = decode(text.as_bytes(), &mut r.out(), 8).unwrap();
            r.push("v", v);
            let a = r.get("v").unwrap().as_array().unwrap();
            assert_eq!((a.dtype, a.data), (want_dtype, want), "{dtype}");
        }
    }

    #[test]
    fn malformed_text_is_an_error() {
        let deep = "[".repeat(100) + &"]".repeat(100);
        for (bad, kind) in [
            ("{", ErrorKind::Corrupt),
            (r#"{"$bytes": "A"}"#, ErrorKind::Corrupt),
            (r#"{"$bytes": 3}"#, ErrorKind::Corrupt),
            (r#"{"$float": "big"}"#, ErrorKind::Corrupt),
            (r#"{"$array": {"dtype": "<i4", "shape": [3], "data": "AAAA"}}"#, ErrorKind::Corrupt),
            (r#"{"$array": {"dtype": "<q9", "shape": [1], "data": ""}}"#, ErrorKind::Corrupt),
            (r#"{"$array": {"dtype": "<i4", "shape": [-1], "data": ""}}"#, ErrorKind::Corrupt),
            (r#"{"$map": [[1]]}"#, ErrorKind::Corrupt),
            (deep.as_str(), ErrorKind::Limit),
        ] {
            let mut r = Record::new();
            let e = decode(bad.as_bytes(), &mut r.out(), 64).unwrap_err();
            assert_eq!(e.kind(), kind, "{bad}: {e}");
        }
    }
}
