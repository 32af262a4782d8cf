//! The JSON payload layout (see [`Codec`](super::Codec)): plain JSON where JSON has the
//! type, objects with one `$` key where it does not.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use reel_core::{
    ArrayValue, DType, Error, ErrorKind, Limits, RecordOut, Result, Shape, Span, Value, ValueRef,
};
use serde_json::{Map, Value as Json, json};

fn float_json(f: f64) -> Json {
    if f.is_finite() {
        // serde_json writes finite floats with a fraction or exponent ("2.0"), so they read
        // back as floats.
        Json::from(f)
    } else {
        let name = if f.is_nan() {
            "nan"
        } else if f > 0.0 {
            "inf"
        } else {
            "-inf"
        };
        json!({ "$float": name })
    }
}

fn to_json(v: ValueRef<'_>) -> Json {
    match v {
        ValueRef::Null => Json::Null,
        ValueRef::Bool(b) => Json::Bool(b),
        ValueRef::Int(i) => Json::from(i),
        ValueRef::UInt(u) => Json::from(u),
        ValueRef::Float(f) => float_json(f),
        ValueRef::Str(s) => Json::String(s.to_string()),
        ValueRef::Bytes(b) => json!({ "$bytes": B64.encode(b) }),
        ValueRef::Array(a) => json!({ "$array": {
            "dtype": a.dtype.numpy_str(), "shape": a.shape, "data": B64.encode(a.data),
        }}),
        ValueRef::List(l) => Json::Array(l.iter().map(to_json).collect()),
        ValueRef::Map(m) => {
            let all_text = m.iter().all(|(k, _)| matches!(k, ValueRef::Str(_)));
            let looks_tagged = m.len() == 1
                && m.iter().any(|(k, _)| k.as_str().is_some_and(|s| s.starts_with('$')));
            if all_text && !looks_tagged {
                let mut o = Map::new();
                for (k, v) in m.iter() {
                    o.insert(k.as_str().unwrap_or_default().to_string(), to_json(v));
                }
                Json::Object(o)
            } else {
                let pairs: Vec<Json> =
                    m.iter().map(|(k, v)| Json::Array(vec![to_json(k), to_json(v)])).collect();
                json!({ "$map": pairs })
            }
        }
    }
}

/// Appends `value` as JSON in the packed layout.
pub(super) fn encode(value: ValueRef<'_>, out: &mut Vec<u8>) {
    // Writing a serde_json::Value to a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, &to_json(value));
}

fn corrupt(what: impl std::fmt::Display) -> Error {
    Error::corrupt(format!("JSON payload: {what}"))
}

struct Decoder<'o, 'r> {
    out: &'o mut RecordOut<'r>,
    limits: &'o Limits,
}

impl Decoder<'_, '_> {
    fn base64(&mut self, v: &Json, what: &str) -> Result<Span> {
        let text = v.as_str().ok_or_else(|| corrupt(format!("{what} is not a base64 string")))?;
        let bytes =
            B64.decode(text).map_err(|e| corrupt(format!("{what} is not valid base64: {e}")))?;
        Ok(self.out.append(&bytes))
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
            Json::String(s) => Value::Str(self.out.append(s.as_bytes())),
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
                    let key = Value::Str(self.out.append(k.as_bytes()));
                    entries.push((key, self.value(x, depth)?));
                }
                Value::Map(entries)
            }
        })
    }

    fn tagged(&mut self, tag: &str, body: &Json, depth: u32) -> Result<Option<Value>> {
        Ok(Some(match tag {
            "$bytes" => Value::Bytes(self.base64(body, "$bytes")?),
            "$float" => Value::Float(match body.as_str() {
                Some("nan") => f64::NAN,
                Some("inf") => f64::INFINITY,
                Some("-inf") => f64::NEG_INFINITY,
                _ => return Err(corrupt("$float is not \"nan\", \"inf\" or \"-inf\"")),
            }),
            "$array" => {
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
                let data = self.base64(body.get("data").unwrap_or(&Json::Null), "$array data")?;
                let shape = Shape::new(&dims);
                reel_core::check_array_len(dtype, &shape, data.len as u64)
                    .map_err(|e| corrupt(e.message()))?;
                if big_endian && dtype.swap_unit() > 1 {
                    return Err(corrupt("$array data must be little-endian"));
                }
                Value::Array(ArrayValue { dtype, shape, data })
            }
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

    fn nested(&self, depth: u32) -> Result<u32> {
        if depth >= self.limits.max_nesting {
            return Err(Error::new(
                ErrorKind::Limit,
                format!(
                    "JSON payload nests deeper than the configured limit of {}",
                    self.limits.max_nesting
                ),
            ));
        }
        Ok(depth + 1)
    }
}

/// Decodes the JSON at `span` of the record being built.
pub(super) fn decode(span: Span, out: &mut RecordOut<'_>, limits: &Limits) -> Result<Value> {
    let doc: Json = serde_json::from_slice(out.bytes(span))
        .map_err(|e| corrupt(format!("not valid JSON: {e}")))?;
    Decoder { out, limits }.value(&doc, 0)
}
