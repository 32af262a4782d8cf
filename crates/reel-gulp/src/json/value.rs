//! The JSON values a `.gmeta` file holds, with the distinctions Python keeps.
//!
//! Python's `json` module tells integers from floats, keeps integers of any size, writes
//! `NaN`/`Infinity` as bare tokens and lets strings hold unpaired UTF-16 surrogates (for
//! example file names decoded with `surrogateescape`). [`JsonValue`] keeps all of that, so a
//! chunk that reel rewrites in append mode comes out exactly as Python would write it.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;

use reel_core::{Error, RecordOut, Result, Value, ValueRef};

/// A JSON string: UTF-8 text, or UTF-16 code units when it holds an unpaired surrogate
/// (which a Rust string cannot).
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum JsonStr {
    /// Ordinary text.
    Text(String),
    /// Text with at least one unpaired surrogate, as UTF-16 code units.
    Utf16(Vec<u16>),
}

impl JsonStr {
    /// The text, with each unpaired surrogate replaced by U+FFFD.
    pub fn to_str_lossy(&self) -> Cow<'_, str> {
        match self {
            JsonStr::Text(s) => Cow::Borrowed(s),
            JsonStr::Utf16(u) => Cow::Owned(String::from_utf16_lossy(u)),
        }
    }

    /// The text, if it holds no unpaired surrogate.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            JsonStr::Text(s) => Some(s),
            JsonStr::Utf16(_) => None,
        }
    }
}

impl fmt::Debug for JsonStr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JsonStr::Text(s) => fmt::Debug::fmt(s, f),
            JsonStr::Utf16(u) => write!(f, "utf16{u:x?}"),
        }
    }
}

impl From<&str> for JsonStr {
    fn from(s: &str) -> Self {
        JsonStr::Text(s.to_string())
    }
}

impl From<String> for JsonStr {
    fn from(s: String) -> Self {
        JsonStr::Text(s)
    }
}

/// A JSON value as Python's `json` module reads and writes it.
///
/// Equality compares floats by their bits (so `NaN == NaN`): the question is whether a
/// value survived a round trip.
#[derive(Clone, Debug)]
pub enum JsonValue {
    /// `null` (Python `None`).
    Null,
    /// `true` / `false`.
    Bool(bool),
    /// An integer that fits in `i64`.
    Int(i64),
    /// An integer above `i64::MAX` that fits in `u64`.
    UInt(u64),
    /// An integer outside the 64-bit range, as its decimal digits (with a leading `-` when
    /// negative). Python reads these exactly; reel keeps the text.
    BigInt(String),
    /// A float, including the non-finite values Python writes as `NaN`, `Infinity` and
    /// `-Infinity`.
    Float(f64),
    /// A string.
    Str(JsonStr),
    /// A list.
    Array(Vec<JsonValue>),
    /// An object: keys in insertion order, each key once (a repeated key keeps its first
    /// position and its last value, like Python's dict).
    Object(Vec<(JsonStr, JsonValue)>),
}

impl PartialEq for JsonValue {
    fn eq(&self, other: &Self) -> bool {
        use JsonValue as J;
        match (self, other) {
            (J::Null, J::Null) => true,
            (J::Bool(a), J::Bool(b)) => a == b,
            (J::Int(a), J::Int(b)) => a == b,
            (J::UInt(a), J::UInt(b)) => a == b,
            (J::BigInt(a), J::BigInt(b)) => a == b,
            (J::Float(a), J::Float(b)) => a.to_bits() == b.to_bits(),
            (J::Str(a), J::Str(b)) => a == b,
            (J::Array(a), J::Array(b)) => a == b,
            (J::Object(a), J::Object(b)) => a == b,
            _ => false,
        }
    }
}

impl From<&str> for JsonValue {
    fn from(s: &str) -> Self {
        JsonValue::Str(JsonStr::Text(s.to_string()))
    }
}

impl From<String> for JsonValue {
    fn from(s: String) -> Self {
        JsonValue::Str(JsonStr::Text(s))
    }
}

impl From<i64> for JsonValue {
    fn from(v: i64) -> Self {
        JsonValue::Int(v)
    }
}

/// So that an integer literal (`JsonValue::from(1)`, typed `i32` by default) converts.
impl From<i32> for JsonValue {
    fn from(v: i32) -> Self {
        JsonValue::Int(v.into())
    }
}

impl From<u32> for JsonValue {
    fn from(v: u32) -> Self {
        JsonValue::Int(v.into())
    }
}

impl From<u64> for JsonValue {
    fn from(v: u64) -> Self {
        JsonValue::from_u64(v)
    }
}

impl From<f64> for JsonValue {
    fn from(v: f64) -> Self {
        JsonValue::Float(v)
    }
}

impl From<bool> for JsonValue {
    fn from(v: bool) -> Self {
        JsonValue::Bool(v)
    }
}

impl JsonValue {
    /// An empty object (`{}`), the metadata of an item that has none.
    pub fn empty_object() -> Self {
        JsonValue::Object(Vec::new())
    }

    /// An object from key-value pairs in order (a repeated key keeps its first position and
    /// its last value, as in Python).
    pub fn object<K: Into<JsonStr>>(pairs: impl IntoIterator<Item = (K, JsonValue)>) -> Self {
        JsonValue::Object(dedupe_keys(pairs.into_iter().map(|(k, v)| (k.into(), v)).collect()))
    }

    /// An integer, as `Int` when it fits in `i64` and `UInt` otherwise.
    pub fn from_u64(v: u64) -> Self {
        match i64::try_from(v) {
            Ok(i) => JsonValue::Int(i),
            Err(_) => JsonValue::UInt(v),
        }
    }

    /// The value of `key`, if this is an object that has it.
    pub fn get(&self, key: &str) -> Option<&JsonValue> {
        match self {
            JsonValue::Object(pairs) => {
                pairs.iter().find(|(k, _)| k.as_str() == Some(key)).map(|(_, v)| v)
            }
            _ => None,
        }
    }

    /// The text, if this is a string without unpaired surrogates.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            JsonValue::Str(s) => s.as_str(),
            _ => None,
        }
    }

    /// The integer, if this is an integer that fits in `i64`.
    pub fn as_i64(&self) -> Option<i64> {
        match *self {
            JsonValue::Int(i) => Some(i),
            _ => None,
        }
    }

    /// The JSON text Python's `json.dumps` writes for this value (see
    /// [`write_python_json`](crate::json::write_python_json)).
    pub fn to_python_json(&self) -> String {
        let mut s = String::new();
        crate::json::write_python_json(self, &mut s);
        s
    }

    /// Converts a record value to JSON the way Python's `json.dump` converts the objects
    /// reel reads back: maps become objects whose keys are converted like Python converts
    /// dict keys (`3` → `"3"`, `true` → `"true"`, `null` → `"null"`, floats by their repr),
    /// lists become arrays. Bytes and arrays have no JSON form and are a
    /// [`Schema`](reel_core::ErrorKind::Schema) error, as Python's `TypeError` would be.
    pub fn from_value(value: ValueRef<'_>) -> Result<JsonValue> {
        Ok(match value {
            ValueRef::Null => JsonValue::Null,
            ValueRef::Bool(b) => JsonValue::Bool(b),
            ValueRef::Int(i) => JsonValue::Int(i),
            ValueRef::UInt(u) => JsonValue::from_u64(u),
            ValueRef::Float(f) => JsonValue::Float(f),
            ValueRef::Str(s) => JsonValue::Str(JsonStr::Text(s.to_string())),
            ValueRef::Bytes(b) => {
                return Err(Error::schema(format!(
                    "{} bytes of binary data cannot be stored in GulpIO2's JSON metadata",
                    b.len()
                )));
            }
            ValueRef::Array(a) => {
                return Err(Error::schema(format!(
                    "an array of {} with shape {:?} cannot be stored in GulpIO2's JSON metadata",
                    a.dtype, a.shape
                )));
            }
            ValueRef::List(l) => {
                JsonValue::Array(l.iter().map(JsonValue::from_value).collect::<Result<_>>()?)
            }
            ValueRef::Map(m) => {
                let mut pairs = Vec::with_capacity(m.len());
                for (k, v) in m.iter() {
                    pairs.push((key_string(k)?, JsonValue::from_value(v)?));
                }
                JsonValue::object(pairs)
            }
        })
    }

    /// Converts to a record value, appending strings to `out`'s buffer.
    ///
    /// Integers outside the 64-bit range have no record form and are an
    /// [`Unsupported`](reel_core::ErrorKind::Unsupported) error; strings with unpaired
    /// surrogates get U+FFFD in their place.
    pub fn to_value(&self, out: &mut RecordOut<'_>) -> Result<Value> {
        Ok(match self {
            JsonValue::Null => Value::Null,
            JsonValue::Bool(b) => Value::Bool(*b),
            JsonValue::Int(i) => Value::Int(*i),
            JsonValue::UInt(u) => Value::UInt(*u),
            JsonValue::Float(f) => Value::Float(*f),
            JsonValue::BigInt(digits) => {
                return Err(Error::unsupported(format!(
                    "the integer {digits} in the metadata does not fit in 64 bits, and reel's \
                     record model has no larger integers"
                )));
            }
            JsonValue::Str(s) => out.append_str(&s.to_str_lossy()),
            JsonValue::Array(items) => {
                Value::List(items.iter().map(|v| v.to_value(out)).collect::<Result<_>>()?)
            }
            JsonValue::Object(pairs) => {
                let mut entries = Vec::with_capacity(pairs.len());
                for (k, v) in pairs {
                    let key = out.append_str(&k.to_str_lossy());
                    entries.push((key, v.to_value(out)?));
                }
                Value::Map(entries)
            }
        })
    }
}

/// Applies Python's dict semantics to key-value pairs: a repeated key keeps the position of
/// its first occurrence and the value of its last. Linear time, so a hostile object with
/// millions of keys costs no more than reading it.
pub(crate) fn dedupe_keys(pairs: Vec<(JsonStr, JsonValue)>) -> Vec<(JsonStr, JsonValue)> {
    // Small objects (the usual case) are checked pairwise without hashing.
    if pairs.len() <= 16 {
        let mut out: Vec<(JsonStr, JsonValue)> = Vec::with_capacity(pairs.len());
        for (k, v) in pairs {
            match out.iter_mut().find(|(existing, _)| *existing == k) {
                Some(slot) => slot.1 = v,
                None => out.push((k, v)),
            }
        }
        return out;
    }
    let mut position: HashMap<JsonStr, usize> = HashMap::with_capacity(pairs.len());
    let mut out: Vec<(JsonStr, JsonValue)> = Vec::with_capacity(pairs.len());
    for (k, v) in pairs {
        match position.get(&k) {
            Some(&at) => out[at].1 = v,
            None => {
                position.insert(k.clone(), out.len());
                out.push((k, v));
            }
        }
    }
    out
}

/// A dict key the way Python's `json` converts it.
fn key_string(key: ValueRef<'_>) -> Result<JsonStr> {
    Ok(JsonStr::Text(match key {
        ValueRef::Str(s) => s.to_string(),
        ValueRef::Int(i) => i.to_string(),
        ValueRef::UInt(u) => u.to_string(),
        ValueRef::Bool(b) => if b { "true" } else { "false" }.to_string(),
        ValueRef::Null => "null".to_string(),
        ValueRef::Float(f) => crate::json::python_float_repr(f),
        other => {
            return Err(Error::schema(format!(
                "a map key of type {} cannot be a JSON key (Python accepts str, int, float, bool \
                 and None)",
                other.kind_name()
            )));
        }
    }))
}
