//! numpy dtype strings, as Granular's `array`/`tree` records and bags' `array(…)` types
//! spell them.
//!
//! Granular stores `dtype.str` (`"<f4"`, `"|u1"`, `">i2"`, `"<U4"`), bags puts a dtype name
//! into the type string (`array(float32,4)`). Both are parsed the way `numpy.dtype` parses
//! them, so a string numpy refuses is refused here too (a damaged record then fails in reel
//! where it fails in the reference).

use reel_core::{DType, Error, Result};

/// A parsed dtype: the element type and whether the stored bytes are big-endian (and must
/// be swapped into reel's little-endian arrays).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NumpyDtype {
    /// The element type.
    pub dtype: DType,
    /// Whether elements are stored big-endian.
    pub big_endian: bool,
}

/// Parses a dtype string as `numpy.dtype(s)` would, for the dtypes reel can represent.
///
/// Accepted: an optional byte-order character (`<`, `>`, `=`, `|`) followed by a kind and
/// size (`i2`, `f8`, `U4`, `S3`, `V5`, `b1`, …; numpy's own leniency of a `+` sign or
/// leading zeros included) or a one-character type code (`f`, `h`, `?`, …), or a numpy type
/// name (`float32`, `uint8`, `bool`, …). Datetimes, timedeltas and objects are
/// [`Unsupported`](reel_core::ErrorKind::Unsupported); anything numpy would not understand
/// is [`Corrupt`](reel_core::ErrorKind::Corrupt).
pub fn parse_dtype(s: &str) -> Result<NumpyDtype> {
    if let Some(dtype) = from_type_name(s) {
        return Ok(NumpyDtype { dtype, big_endian: false });
    }
    let (big_endian, rest) = match s.as_bytes().first() {
        Some(b'<' | b'=' | b'|') => (false, &s[1..]),
        Some(b'>') => (true, &s[1..]),
        _ => (false, s),
    };
    let mut chars = rest.chars();
    let Some(kind) = chars.next() else {
        return Err(not_understood(s));
    };
    let size_text = chars.as_str();
    if matches!(kind, 'M' | 'm' | 'O') {
        return Err(Error::unsupported(format!(
            "numpy dtype {s:?} (datetimes, timedeltas and Python objects) has no reel array type"
        )));
    }
    let dtype = if size_text.is_empty() {
        from_type_code(kind).ok_or_else(|| not_understood(s))?
    } else {
        let size = parse_size(size_text).ok_or_else(|| not_understood(s))?;
        from_kind_size(kind, size).ok_or_else(|| not_understood(s))?
    };
    // Byte order does not apply to one-byte and opaque types; numpy ignores it there.
    let big_endian = big_endian && dtype.swap_unit() > 1;
    Ok(NumpyDtype { dtype, big_endian })
}

fn not_understood(s: &str) -> Error {
    Error::corrupt(format!("numpy does not understand the dtype {s:?}"))
}

/// numpy reads the size with Python's `int()`: an optional `+`, digits, leading zeros allowed.
fn parse_size(text: &str) -> Option<u32> {
    let digits = text.strip_prefix('+').unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let trimmed = digits.trim_start_matches('0');
    if trimmed.len() > 9 {
        return None;
    }
    if trimmed.is_empty() { Some(0) } else { trimmed.parse().ok() }
}

fn from_kind_size(kind: char, size: u32) -> Option<DType> {
    Some(match (kind, size) {
        ('b', 1) => DType::Bool,
        ('i', 1) => DType::I8,
        ('i', 2) => DType::I16,
        ('i', 4) => DType::I32,
        ('i', 8) => DType::I64,
        ('u', 1) => DType::U8,
        ('u', 2) => DType::U16,
        ('u', 4) => DType::U32,
        ('u', 8) => DType::U64,
        ('f', 2) => DType::F16,
        ('f', 4) => DType::F32,
        ('f', 8) => DType::F64,
        ('f', 16) => DType::F128,
        ('c', 8) => DType::C64,
        ('c', 16) => DType::C128,
        ('U', n) => DType::Unicode(n),
        ('S' | 'a', n) => DType::FixedBytes(n),
        ('V', n) => DType::Void(n),
        _ => return None,
    })
}

/// numpy's one-character type codes (C names on a 64-bit Linux platform).
fn from_type_code(code: char) -> Option<DType> {
    Some(match code {
        '?' => DType::Bool,
        'b' => DType::I8,
        'B' => DType::U8,
        'h' => DType::I16,
        'H' => DType::U16,
        'i' => DType::I32,
        'I' => DType::U32,
        'l' | 'q' | 'p' => DType::I64,
        'L' | 'Q' | 'P' => DType::U64,
        'e' => DType::F16,
        'f' => DType::F32,
        'd' => DType::F64,
        'g' => DType::F128,
        'F' => DType::C64,
        'D' => DType::C128,
        'U' => DType::Unicode(0),
        'S' | 'a' => DType::FixedBytes(0),
        'V' => DType::Void(0),
        _ => return None,
    })
}

/// numpy's type names and the aliases bags type strings can spell (`[a-z0-9-_.]`).
fn from_type_name(name: &str) -> Option<DType> {
    if let Some(dt) = DType::from_name(name) {
        return Some(dt);
    }
    Some(match name {
        "bool_" => DType::Bool,
        "byte" => DType::I8,
        "ubyte" => DType::U8,
        "short" => DType::I16,
        "ushort" => DType::U16,
        "intc" => DType::I32,
        "uintc" => DType::U32,
        "int" | "int_" | "long" | "longlong" | "intp" => DType::I64,
        "uint" | "ulong" | "ulonglong" | "uintp" => DType::U64,
        "half" => DType::F16,
        "single" => DType::F32,
        "float" | "double" | "float_" => DType::F64,
        "longdouble" => DType::F128,
        "csingle" => DType::C64,
        "complex" | "cdouble" | "complex_" => DType::C128,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use reel_core::ErrorKind;

    fn ok(s: &str) -> (DType, bool) {
        let d = parse_dtype(s).unwrap_or_else(|e| panic!("{s}: {e}"));
        (d.dtype, d.big_endian)
    }

    #[test]
    fn agrees_with_numpy() {
        // Each pair was checked against numpy 2.4's `np.dtype(s)`.
        assert_eq!(ok("<i2"), (DType::I16, false));
        assert_eq!(ok("=i2"), (DType::I16, false));
        assert_eq!(ok("|i2"), (DType::I16, false));
        assert_eq!(ok(">i2"), (DType::I16, true));
        assert_eq!(ok("<i02"), (DType::I16, false));
        assert_eq!(ok("<i+2"), (DType::I16, false));
        assert_eq!(ok("<b1"), (DType::Bool, false));
        assert_eq!(ok("b"), (DType::I8, false));
        assert_eq!(ok("<?"), (DType::Bool, false));
        assert_eq!(ok(">U4"), (DType::Unicode(4), true));
        assert_eq!(ok("|S0"), (DType::FixedBytes(0), false));
        assert_eq!(ok("<V3"), (DType::Void(3), false));
        assert_eq!(ok(">u1"), (DType::U8, false));
        assert_eq!(ok("float32"), (DType::F32, false));
        assert_eq!(ok("int"), (DType::I64, false));
        assert_eq!(ok("f4"), (DType::F32, false));
        for bad in ["<h2", "<i3", "<I2", "<q8", "?i2", "}i2", "<c4", "<b2", "<i16", "<U-1", "", "<"]
        {
            assert_eq!(parse_dtype(bad).unwrap_err().kind(), ErrorKind::Corrupt, "{bad}");
        }
        for unsupported in ["<M8[s]", "<m8[s]", "|O"] {
            assert_eq!(parse_dtype(unsupported).unwrap_err().kind(), ErrorKind::Unsupported);
        }
    }
}
