//! JSON text exactly as Python's `json.dump(obj, fp)` writes it with default options, which
//! is how gulpio2 writes every `.gmeta` file.
//!
//! * separators `", "` and `": "`, no indentation, no trailing newline;
//! * `ensure_ascii`: everything outside printable ASCII (`' '..='~'`) is escaped as
//!   lowercase `\uXXXX`, characters beyond the BMP as a surrogate pair, and `"`, `\`,
//!   backspace, form feed, newline, carriage return and tab by their short escapes;
//! * floats as Python's `repr` (shortest round-trip digits; exponent form below 1e-4 and
//!   from 1e16 up, written `1e-05` / `1.5e+16`), non-finite ones as `NaN`, `Infinity`,
//!   `-Infinity`.

use std::fmt::Write as _;

use super::value::{JsonStr, JsonValue};

/// Appends the JSON text of `value` to `out`, byte for byte as Python's `json.dumps` writes it.
pub fn write_python_json(value: &JsonValue, out: &mut String) {
    match value {
        JsonValue::Null => out.push_str("null"),
        JsonValue::Bool(true) => out.push_str("true"),
        JsonValue::Bool(false) => out.push_str("false"),
        JsonValue::Int(i) => {
            let _ = write!(out, "{i}");
        }
        JsonValue::UInt(u) => {
            let _ = write!(out, "{u}");
        }
        JsonValue::BigInt(digits) => out.push_str(digits),
        JsonValue::Float(f) => out.push_str(&python_float_repr(*f)),
        JsonValue::Str(s) => write_str(s, out),
        JsonValue::Array(items) => {
            out.push('[');
            for (k, item) in items.iter().enumerate() {
                if k > 0 {
                    out.push_str(", ");
                }
                write_python_json(item, out);
            }
            out.push(']');
        }
        JsonValue::Object(pairs) => {
            out.push('{');
            for (k, (key, item)) in pairs.iter().enumerate() {
                if k > 0 {
                    out.push_str(", ");
                }
                write_str(key, out);
                out.push_str(": ");
                write_python_json(item, out);
            }
            out.push('}');
        }
    }
}

/// Appends `s` as an ASCII-only JSON string literal, escaped the way Python escapes it.
pub fn write_str(s: &JsonStr, out: &mut String) {
    out.push('"');
    match s {
        JsonStr::Text(t) => {
            for c in t.chars() {
                let mut units = [0u16; 2];
                for &u in c.encode_utf16(&mut units).iter() {
                    push_unit(u, out);
                }
            }
        }
        JsonStr::Utf16(units) => units.iter().for_each(|&u| push_unit(u, out)),
    }
    out.push('"');
}

fn push_unit(u: u16, out: &mut String) {
    match u {
        0x22 => out.push_str("\\\""),
        0x5c => out.push_str("\\\\"),
        0x08 => out.push_str("\\b"),
        0x0c => out.push_str("\\f"),
        0x0a => out.push_str("\\n"),
        0x0d => out.push_str("\\r"),
        0x09 => out.push_str("\\t"),
        0x20..=0x7e => out.push(u as u8 as char),
        _ => {
            let _ = write!(out, "\\u{u:04x}");
        }
    }
}

/// A float as Python's `json` writes it: `repr(x)` for finite values, `NaN`, `Infinity`
/// and `-Infinity` otherwise.
pub fn python_float_repr(x: f64) -> String {
    if x.is_nan() {
        return "NaN".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    // `{:e}` gives the shortest digits that round-trip, like Python's repr: "1.5e16".
    let sci = format!("{x:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => ("-", m),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let ndigits = digits.len() as i32;
    // Position of the decimal point relative to the first digit (Python's `decpt`).
    let decpt = exp + 1;
    let mut out = String::from(sign);
    if decpt <= -4 || decpt > 16 {
        out.push_str(&digits[..1]);
        if ndigits > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        let e = decpt - 1;
        let _ = write!(out, "e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs());
    } else if decpt <= 0 {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', (-decpt) as usize));
        out.push_str(&digits);
    } else if decpt >= ndigits {
        out.push_str(&digits);
        out.extend(std::iter::repeat_n('0', (decpt - ndigits) as usize));
        out.push_str(".0");
    } else {
        out.push_str(&digits[..decpt as usize]);
        out.push('.');
        out.push_str(&digits[decpt as usize..]);
    }
    out
}
