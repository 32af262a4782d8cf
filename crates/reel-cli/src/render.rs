//! Showing values to people (text) and to programs (JSON).

use reel::{DType, RecordRef, ValueRef};
use serde_json::{Map, Value as Json, json};

/// How bytes appear in JSON.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum BytesAs {
    /// `{"base64": "..."}`
    Base64,
    /// `{"hex": "..."}`
    Hex,
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard base64 with padding.
pub fn base64(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
        let n = (b[0] as u32) << 16 | (b[1] as u32) << 8 | b[2] as u32;
        for k in 0..4 {
            if k <= chunk.len() {
                out.push(B64[(n >> (18 - 6 * k) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Lowercase hex.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn bytes_json(b: &[u8], how: BytesAs) -> Json {
    match how {
        BytesAs::Base64 => json!({ "base64": base64(b) }),
        BytesAs::Hex => json!({ "hex": hex(b) }),
    }
}

fn float_json(f: f64) -> Json {
    if f.is_finite() {
        json!(f)
    } else if f.is_nan() {
        json!({ "float": "nan" })
    } else {
        json!({ "float": if f > 0.0 { "inf" } else { "-inf" } })
    }
}

/// Elements of a numeric array as JSON numbers, when its dtype has a plain JSON form.
fn array_values(dtype: DType, data: &[u8]) -> Option<Vec<Json>> {
    macro_rules! nums {
        ($t:ty, $n:expr) => {
            data.chunks_exact($n)
                .map(|c| json!(<$t>::from_le_bytes(c.try_into().unwrap_or_default())))
                .collect()
        };
    }
    Some(match dtype {
        DType::Bool => data.iter().map(|&b| json!(b != 0)).collect(),
        DType::I8 => data.iter().map(|&b| json!(b as i8)).collect(),
        DType::U8 => data.iter().map(|&b| json!(b)).collect(),
        DType::I16 => nums!(i16, 2),
        DType::U16 => nums!(u16, 2),
        DType::I32 => nums!(i32, 4),
        DType::U32 => nums!(u32, 4),
        DType::I64 => nums!(i64, 8),
        DType::U64 => nums!(u64, 8),
        DType::F32 => data
            .chunks_exact(4)
            .map(|c| float_json(f32::from_le_bytes(c.try_into().unwrap_or_default()) as f64))
            .collect(),
        DType::F64 => data
            .chunks_exact(8)
            .map(|c| float_json(f64::from_le_bytes(c.try_into().unwrap_or_default())))
            .collect(),
        _ => return None,
    })
}

/// A value as JSON: strings, numbers, booleans and null as themselves; bytes as
/// `{"base64"|"hex": …}`; non-finite floats as `{"float": "nan"}`; arrays as
/// `{"dtype", "shape", "values"}` (or `"base64"` for dtypes without a JSON form); lists
/// as arrays; maps with text keys as objects, other maps as `{"map": [[k, v], …]}`.
pub fn value_json(v: ValueRef<'_>, how: BytesAs) -> Json {
    match v {
        ValueRef::Null => Json::Null,
        ValueRef::Bool(b) => json!(b),
        ValueRef::Int(i) => json!(i),
        ValueRef::UInt(u) => json!(u),
        ValueRef::Float(f) => float_json(f),
        ValueRef::Bytes(b) => bytes_json(b, how),
        ValueRef::Str(s) => json!(s),
        ValueRef::Array(a) => {
            let mut m = Map::new();
            m.insert("dtype".into(), json!(a.dtype.name()));
            m.insert("shape".into(), json!(a.shape));
            match array_values(a.dtype, a.data) {
                Some(values) => m.insert("values".into(), Json::Array(values)),
                None => m.insert("data".into(), bytes_json(a.data, how)),
            };
            Json::Object(m)
        }
        ValueRef::List(l) => Json::Array(l.iter().map(|x| value_json(x, how)).collect()),
        ValueRef::Map(m) => {
            if m.iter().all(|(k, _)| matches!(k, ValueRef::Str(_))) {
                let mut o = Map::new();
                for (k, v) in m.iter() {
                    o.insert(k.as_str().unwrap_or_default().to_string(), value_json(v, how));
                }
                Json::Object(o)
            } else {
                json!({ "map": m.iter().map(|(k, v)| json!([value_json(k, how), value_json(v, how)])).collect::<Vec<_>>() })
            }
        }
    }
}

/// A record as one JSON object: `{"index": i, "fields": {name: value, …}}`, keeping only
/// `fields` when given.
pub fn record_json(r: &RecordRef<'_>, how: BytesAs, only: Option<&[String]>) -> Json {
    let mut fields = Map::new();
    for (name, v) in r.iter() {
        if only.is_none_or(|o| o.iter().any(|n| n == name)) {
            fields.insert(name.to_string(), value_json(v, how));
        }
    }
    json!({ "index": r.index(), "fields": fields })
}

fn preview(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        format!("{s:?}")
    } else {
        format!("{:?}… ({} chars)", s.chars().take(max).collect::<String>(), s.chars().count())
    }
}

/// A one-line human summary of a value.
pub fn value_text(v: ValueRef<'_>) -> String {
    match v {
        ValueRef::Null => "null".into(),
        ValueRef::Bool(b) => b.to_string(),
        ValueRef::Int(i) => i.to_string(),
        ValueRef::UInt(u) => u.to_string(),
        ValueRef::Float(f) => format!("{f:?}"),
        ValueRef::Str(s) => preview(s, 80),
        ValueRef::Bytes(b) => {
            let shown = &b[..b.len().min(24)];
            let more = if b.len() > shown.len() { "…" } else { "" };
            format!("{} bytes {}{more}", b.len(), hex(shown))
        }
        ValueRef::Array(a) => {
            let values = array_values(a.dtype, a.data).map(|v| {
                let shown: Vec<String> = v.iter().take(8).map(|x| x.to_string()).collect();
                let more = if v.len() > 8 { ", …" } else { "" };
                format!(" [{}{more}]", shown.join(", "))
            });
            format!("{} array {:?}{}", a.dtype, a.shape, values.unwrap_or_default())
        }
        ValueRef::List(l) => {
            let shown: Vec<String> = l.iter().take(4).map(value_text).collect();
            let more = if l.len() > 4 { ", …" } else { "" };
            format!("list of {} [{}{more}]", l.len(), shown.join(", "))
        }
        ValueRef::Map(m) => {
            let shown: Vec<String> = m
                .iter()
                .take(4)
                .map(|(k, v)| format!("{}: {}", value_text(k), value_text(v)))
                .collect();
            let more = if m.len() > 4 { ", …" } else { "" };
            format!("map of {} {{{}{more}}}", m.len(), shown.join(", "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_rfc4648_vectors() {
        let cases = [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ];
        for (i, o) in cases {
            assert_eq!(base64(i.as_bytes()), o);
        }
    }
}
