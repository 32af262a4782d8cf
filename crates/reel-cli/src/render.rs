//! Showing values to people (text) and to programs (JSON).

use std::io::{self, Write};

use reel::{DType, RecordRef, ValueRef};

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

/// Writes `bytes` as `{"base64": …}` or `{"hex": …}`, encoding piece by piece so a large
/// value is never held twice in memory.
fn write_bytes_json(out: &mut impl Write, b: &[u8], how: BytesAs) -> io::Result<()> {
    // A multiple of 3, so base64 of the pieces is base64 of the whole.
    const PIECE: usize = 3 << 12;
    match how {
        BytesAs::Base64 => {
            out.write_all(b"{\"base64\":\"")?;
            for piece in b.chunks(PIECE) {
                out.write_all(base64(piece).as_bytes())?;
            }
        }
        BytesAs::Hex => {
            out.write_all(b"{\"hex\":\"")?;
            for piece in b.chunks(PIECE) {
                out.write_all(hex(piece).as_bytes())?;
            }
        }
    }
    out.write_all(b"\"}")
}

fn write_json<T: serde::Serialize + ?Sized>(out: &mut impl Write, v: &T) -> io::Result<()> {
    serde_json::to_writer(&mut *out, v).map_err(io::Error::other)
}

fn write_float_json(out: &mut impl Write, f: f64) -> io::Result<()> {
    if f.is_finite() {
        write_json(out, &f)
    } else if f.is_nan() {
        out.write_all(b"{\"float\":\"nan\"}")
    } else {
        out.write_all(if f > 0.0 { b"{\"float\":\"inf\"}" } else { b"{\"float\":\"-inf\"}" })
    }
}

/// The width in bytes of one element of `dtype`, when it has a plain JSON form.
fn json_element_width(dtype: DType) -> Option<usize> {
    Some(match dtype {
        DType::Bool | DType::I8 | DType::U8 => 1,
        DType::I16 | DType::U16 | DType::F16 => 2,
        DType::I32 | DType::U32 | DType::F32 => 4,
        DType::I64 | DType::U64 | DType::F64 => 8,
        _ => return None,
    })
}

/// Writes element `c` (the bytes of one element) of a `dtype` array as JSON.
fn write_element(out: &mut impl Write, dtype: DType, c: &[u8]) -> io::Result<()> {
    fn le<const N: usize>(c: &[u8]) -> [u8; N] {
        c.try_into().unwrap_or([0; N])
    }
    match dtype {
        DType::Bool => write_json(out, &(c[0] != 0)),
        DType::I8 => write_json(out, &(c[0] as i8)),
        DType::U8 => write_json(out, &c[0]),
        DType::I16 => write_json(out, &i16::from_le_bytes(le(c))),
        DType::U16 => write_json(out, &u16::from_le_bytes(le(c))),
        DType::I32 => write_json(out, &i32::from_le_bytes(le(c))),
        DType::U32 => write_json(out, &u32::from_le_bytes(le(c))),
        DType::I64 => write_json(out, &i64::from_le_bytes(le(c))),
        DType::U64 => write_json(out, &u64::from_le_bytes(le(c))),
        DType::F16 => write_float_json(out, half::f16::from_le_bytes(le(c)).to_f64()),
        DType::F32 => write_float_json(out, f32::from_le_bytes(le(c)) as f64),
        DType::F64 => write_float_json(out, f64::from_le_bytes(le(c))),
        _ => Ok(()),
    }
}

/// Writes a value as JSON, element by element (nothing is built in memory first): strings,
/// numbers, booleans and null as themselves; bytes as `{"base64"|"hex": …}`; non-finite
/// floats as `{"float": "nan"}`; arrays as `{"dtype", "shape", "values"}` (or `"data"` for
/// dtypes without a JSON form); lists as arrays; maps with text keys as objects, other maps
/// as `{"map": [[k, v], …]}`.
pub fn write_value_json(out: &mut impl Write, v: ValueRef<'_>, how: BytesAs) -> io::Result<()> {
    match v {
        ValueRef::Null => out.write_all(b"null"),
        ValueRef::Bool(b) => write_json(out, &b),
        ValueRef::Int(i) => write_json(out, &i),
        ValueRef::UInt(u) => write_json(out, &u),
        ValueRef::Float(f) => write_float_json(out, f),
        ValueRef::Bytes(b) => write_bytes_json(out, b, how),
        ValueRef::Str(s) => write_json(out, s),
        ValueRef::Array(a) => {
            out.write_all(b"{\"dtype\":")?;
            write_json(out, &a.dtype.name())?;
            out.write_all(b",\"shape\":")?;
            write_json(out, &a.shape)?;
            match json_element_width(a.dtype) {
                Some(width) => {
                    out.write_all(b",\"values\":[")?;
                    for (k, c) in a.data.chunks_exact(width).enumerate() {
                        if k > 0 {
                            out.write_all(b",")?;
                        }
                        write_element(out, a.dtype, c)?;
                    }
                    out.write_all(b"]")?;
                }
                None => {
                    out.write_all(b",\"data\":")?;
                    write_bytes_json(out, a.data, how)?;
                }
            }
            out.write_all(b"}")
        }
        ValueRef::List(l) => {
            out.write_all(b"[")?;
            for (k, x) in l.iter().enumerate() {
                if k > 0 {
                    out.write_all(b",")?;
                }
                write_value_json(out, x, how)?;
            }
            out.write_all(b"]")
        }
        ValueRef::Map(m) => {
            if m.iter().all(|(k, _)| matches!(k, ValueRef::Str(_))) {
                out.write_all(b"{")?;
                for (n, (k, v)) in m.iter().enumerate() {
                    if n > 0 {
                        out.write_all(b",")?;
                    }
                    write_json(out, k.as_str().unwrap_or_default())?;
                    out.write_all(b":")?;
                    write_value_json(out, v, how)?;
                }
                out.write_all(b"}")
            } else {
                out.write_all(b"{\"map\":[")?;
                for (n, (k, v)) in m.iter().enumerate() {
                    if n > 0 {
                        out.write_all(b",")?;
                    }
                    out.write_all(b"[")?;
                    write_value_json(out, k, how)?;
                    out.write_all(b",")?;
                    write_value_json(out, v, how)?;
                    out.write_all(b"]")?;
                }
                out.write_all(b"]}")
            }
        }
    }
}

/// Writes a record as one JSON object, `{"index": i, "fields": {name: value, …}}`, keeping
/// only `fields` when given, followed by a newline.
pub fn write_record_json(
    out: &mut impl Write,
    r: &RecordRef<'_>,
    how: BytesAs,
    only: Option<&[String]>,
) -> io::Result<()> {
    write!(out, "{{\"index\":{},\"fields\":{{", r.index())?;
    let mut first = true;
    for (name, v) in r.iter() {
        if only.is_none_or(|o| o.iter().any(|n| n == name)) {
            if !first {
                out.write_all(b",")?;
            }
            first = false;
            write_json(out, name)?;
            out.write_all(b":")?;
            write_value_json(out, v, how)?;
        }
    }
    out.write_all(b"}}\n")
}

/// The first `max` elements of a numeric array as text, and whether there are more; only
/// what is shown is converted.
fn array_preview(dtype: DType, data: &[u8], max: usize) -> Option<String> {
    let width = json_element_width(dtype)?;
    let mut shown = Vec::new();
    for c in data.chunks_exact(width).take(max) {
        // Floats in their own shortest form (0.1 for a float32 0.1, inf, NaN), not as the
        // f64 that JSON carries.
        let float = match dtype {
            DType::F16 => c.try_into().ok().map(|b| format!("{:?}", half::f16::from_le_bytes(b))),
            DType::F32 => c.try_into().ok().map(|b| format!("{:?}", f32::from_le_bytes(b))),
            DType::F64 => c.try_into().ok().map(|b| format!("{:?}", f64::from_le_bytes(b))),
            _ => None,
        };
        let text = match float {
            Some(text) => text,
            None => {
                let mut text = Vec::new();
                write_element(&mut text, dtype, c).ok()?;
                String::from_utf8_lossy(&text).into_owned()
            }
        };
        shown.push(text);
    }
    let more = if data.len() / width > max { ", …" } else { "" };
    Some(format!(" [{}{more}]", shown.join(", ")))
}

fn preview(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        format!("{s:?}")
    } else {
        format!("{:?}… ({} chars)", s.chars().take(max).collect::<String>(), s.chars().count())
    }
}

/// `name` (a field name, a file name: text from the dataset) as text output shows it: as it
/// is, or quoted with escapes when it holds control characters, which a terminal would
/// otherwise obey (`\x1b[2J` clears the screen) and a newline would fake further lines.
pub fn printable(name: &str) -> std::borrow::Cow<'_, str> {
    if name.chars().any(char::is_control) {
        std::borrow::Cow::Owned(format!("{name:?}"))
    } else {
        std::borrow::Cow::Borrowed(name)
    }
}

/// `text` with each control character written as its escape (`\u{1b}`, `\n`), the rest
/// as it is: for messages that quote names from a dataset.
pub fn without_controls(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(char::is_control) {
        return std::borrow::Cow::Borrowed(text);
    }
    std::borrow::Cow::Owned(
        text.chars()
            .map(|c| if c.is_control() { c.escape_debug().to_string() } else { c.to_string() })
            .collect(),
    )
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
            let values = array_preview(a.dtype, a.data, 8);
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

    #[test]
    fn names_with_control_characters_are_shown_escaped() {
        assert_eq!(printable("label"), "label");
        assert_eq!(printable("größe ✓"), "größe ✓");
        assert_eq!(printable("a\x1b[2Jb"), "\"a\\u{1b}[2Jb\"");
        assert_eq!(printable("two\nlines"), "\"two\\nlines\"");
        assert_eq!(without_controls("no field \"a\x1b[2J\""), "no field \"a\\u{1b}[2J\"");
        assert_eq!(without_controls("plain ✓"), "plain ✓");
    }

    #[test]
    fn float16_arrays_show_their_values() {
        use reel::ArrayRef;
        // 1.0, -2.5 and +inf as IEEE half floats, little-endian.
        let data = [0x00, 0x3c, 0x00, 0xc1, 0x00, 0x7c];
        let a = ArrayRef { dtype: DType::F16, shape: &[3], data: &data };
        assert_eq!(value_text(ValueRef::Array(a)), "float16 array [3] [1.0, -2.5, inf]");
        let tenth = 0.1f32.to_le_bytes();
        let b = ArrayRef { dtype: DType::F32, shape: &[1], data: &tenth };
        assert_eq!(value_text(ValueRef::Array(b)), "float32 array [1] [0.1]");
        let mut json = Vec::new();
        write_value_json(&mut json, ValueRef::Array(a), BytesAs::Base64).unwrap();
        let json: serde_json::Value = serde_json::from_slice(&json).unwrap();
        assert_eq!(json["values"], serde_json::json!([1.0, -2.5, {"float": "inf"}]), "{json}");
    }
}
