//! Tagged JSON: how a value with no common Arrow type across records is stored (as text in
//! a column whose field metadata says `reel.type = json`), without loss.
//!
//! Plain JSON holds text, integers (any `i64`/`u64`), finite floats (written so that they
//! read back bit for bit and always with a `.` or exponent, so `1.0` stays a float), bools,
//! null, lists, and maps with text keys. What plain JSON cannot say is an object with one
//! `$`-key:
//!
//! | value | JSON |
//! | --- | --- |
//! | bytes | `{"$bytes": "<hex>"}` |
//! | NaN, ±inf | `{"$float": "nan" / "inf" / "-inf"}` |
//! | array | `{"$ndarray": {"dtype": "<i4", "shape": [2, 3], "hex": "…"}}` |
//! | map with a key that is not text, or a single key starting with `$` | `{"$map": [[k, v], …]}` |

use reel_core::{DType, Error, RecordOut, Result, Shape, Value, ValueRef};
use serde_json::{Map, Value as Json, json};

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[(b >> 4) as usize] as char);
        s.push(DIGITS[(b & 15) as usize] as char);
    }
    s
}

fn unhex(s: &str) -> Result<Vec<u8>> {
    let digit = |c: u8| match c {
        b'0'..=b'9' => Ok(c - b'0'),
        b'a'..=b'f' => Ok(c - b'a' + 10),
        b'A'..=b'F' => Ok(c - b'A' + 10),
        _ => Err(Error::corrupt("tagged JSON: bad hex digit")),
    };
    let b = s.as_bytes();
    if !b.len().is_multiple_of(2) {
        return Err(Error::corrupt("tagged JSON: odd hex length"));
    }
    b.chunks_exact(2).map(|p| Ok(digit(p[0])? << 4 | digit(p[1])?)).collect()
}

/// The tagged JSON of a value.
pub(crate) fn to_json(value: ValueRef<'_>) -> Json {
    match value {
        ValueRef::Null => Json::Null,
        ValueRef::Bool(b) => Json::Bool(b),
        ValueRef::Int(i) => json!(i),
        ValueRef::UInt(u) => json!(u),
        ValueRef::Float(f) if f.is_nan() => json!({"$float": "nan"}),
        ValueRef::Float(f) if f.is_infinite() => {
            json!({"$float": if f > 0.0 { "inf" } else { "-inf" }})
        }
        ValueRef::Float(f) => serde_json::Number::from_f64(f).map_or(Json::Null, Json::Number),
        ValueRef::Bytes(b) => json!({"$bytes": hex(b)}),
        ValueRef::Str(s) => Json::String(s.to_string()),
        ValueRef::Array(a) => json!({"$ndarray": {
            "dtype": a.dtype.numpy_str(), "shape": a.shape, "hex": hex(a.data)
        }}),
        ValueRef::List(l) => Json::Array(l.iter().map(to_json).collect()),
        ValueRef::Map(m) => {
            let text_keys = m.iter().all(|(k, _)| k.as_str().is_some());
            let unique = {
                let mut keys: Vec<&str> = m.iter().filter_map(|(k, _)| k.as_str()).collect();
                keys.sort_unstable();
                keys.windows(2).all(|w| w[0] != w[1])
            };
            let looks_tagged = m.len() == 1
                && m.iter().any(|(k, _)| k.as_str().is_some_and(|k| k.starts_with('$')));
            if text_keys && unique && !looks_tagged {
                let mut obj = Map::new();
                for (k, v) in m.iter() {
                    obj.insert(k.as_str().unwrap_or_default().to_string(), to_json(v));
                }
                Json::Object(obj)
            } else {
                let pairs = m.iter().map(|(k, v)| json!([to_json(k), to_json(v)])).collect();
                json!({ "$map": Json::Array(pairs) })
            }
        }
    }
}

/// The value a tagged JSON text stands for, appended to `out`.
pub(crate) fn from_json_text(text: &str, out: &mut RecordOut<'_>) -> Result<Value> {
    let json: Json = serde_json::from_str(text)
        .map_err(|e| Error::corrupt(format!("tagged JSON does not parse: {e}")))?;
    from_json(&json, out, 0)
}

const MAX_DEPTH: usize = 256;

fn from_json(json: &Json, out: &mut RecordOut<'_>, depth: usize) -> Result<Value> {
    if depth > MAX_DEPTH {
        return Err(Error::corrupt("tagged JSON nests too deeply"));
    }
    let bad = |what: &str| Error::corrupt(format!("tagged JSON: {what}"));
    Ok(match json {
        Json::Null => Value::Null,
        Json::Bool(b) => Value::Bool(*b),
        Json::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => Value::Int(i),
            (None, Some(u), _) => Value::from_u64(u),
            (_, _, Some(f)) => Value::Float(f),
            _ => return Err(bad("number out of range")),
        },
        Json::String(s) => out.append_str(s),
        Json::Array(items) => {
            Value::List(items.iter().map(|j| from_json(j, out, depth + 1)).collect::<Result<_>>()?)
        }
        Json::Object(obj) => {
            if obj.len() == 1 {
                if let Some(Json::String(h)) = obj.get("$bytes") {
                    return Ok(Value::Bytes(out.append(&unhex(h)?)));
                }
                if let Some(Json::String(f)) = obj.get("$float") {
                    return Ok(Value::Float(match f.as_str() {
                        "nan" => f64::NAN,
                        "inf" => f64::INFINITY,
                        "-inf" => f64::NEG_INFINITY,
                        _ => return Err(bad("unknown $float")),
                    }));
                }
                if let Some(a) = obj.get("$ndarray") {
                    let dtype = a
                        .get("dtype")
                        .and_then(Json::as_str)
                        .and_then(DType::from_numpy_str)
                        .map(|(d, _)| d)
                        .ok_or_else(|| bad("$ndarray without a known dtype"))?;
                    let shape: Vec<u64> = a
                        .get("shape")
                        .and_then(Json::as_array)
                        .ok_or_else(|| bad("$ndarray without a shape"))?
                        .iter()
                        .map(|d| d.as_u64().ok_or_else(|| bad("$ndarray shape")))
                        .collect::<Result<_>>()?;
                    let data = unhex(
                        a.get("hex").and_then(Json::as_str).ok_or_else(|| bad("$ndarray hex"))?,
                    )?;
                    let span = out.append(&data);
                    return out.array_value(dtype, Shape::new(&shape), span);
                }
                if let Some(Json::Array(pairs)) = obj.get("$map") {
                    let mut entries = Vec::with_capacity(pairs.len());
                    for p in pairs {
                        let [k, v] = p.as_array().map(Vec::as_slice).unwrap_or_default() else {
                            return Err(bad("$map entry is not a pair"));
                        };
                        entries
                            .push((from_json(k, out, depth + 1)?, from_json(v, out, depth + 1)?));
                    }
                    return Ok(Value::Map(entries));
                }
            }
            let mut entries = Vec::with_capacity(obj.len());
            for (k, v) in obj {
                let key = out.append_str(k);
                entries.push((key, from_json(v, out, depth + 1)?));
            }
            Value::Map(entries)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use reel_core::Record;

    #[test]
    fn every_value_kind_round_trips() {
        let mut r = Record::new();
        r.push_float("nan", f64::NAN).push_float("one", 1.0).push_int("i", -5);
        r.push_uint("u", u64::MAX).push_bytes("b", &[0, 255, 7]).push_str("s", "ß$");
        r.push_array("a", DType::I16, &[2, 1], &[1, 0, 2, 0]).unwrap();
        r.push_null("n").push_bool("t", true);
        let mut src = Record::new();
        {
            let mut o = src.out();
            let k1 = Value::Int(3);
            let v1 = o.append_str("x");
            let k2 = o.append_str("$bytes");
            let v2 = Value::Int(1);
            o.push("m1".into(), Value::Map(vec![(k1, v1)]));
            o.push("m2".into(), Value::Map(vec![(k2, v2)]));
        }
        for (name, value) in r.iter().chain(src.iter()) {
            let text = to_json(value).to_string();
            let mut back = Record::new();
            let v = from_json_text(&text, &mut back.out()).unwrap();
            back.push(name, v);
            assert_eq!(back.get(name).unwrap(), value, "{name}: {text}");
        }
    }

    #[test]
    fn hostile_json_is_an_error() {
        let mut r = Record::new();
        for bad in [
            "{",
            "{\"$bytes\": \"0\"}",
            "{\"$ndarray\": {\"dtype\": \"<i4\", \"shape\": [3], \"hex\": \"00\"}}",
            &"[".repeat(1000),
        ] {
            assert!(from_json_text(bad, &mut r.out()).is_err(), "{bad}");
        }
    }
}
