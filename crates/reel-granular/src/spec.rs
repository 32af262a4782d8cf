//! `spec.json`: the field names of a dataset and the type (codec) of each.

use reel_core::{Error, Result};

/// The spec of a dataset: field name → type string, in the order the file lists them.
///
/// Readers keep the file's order (it is the order of the fields in every record); writers
/// sort the keys before writing, as every reference writer does.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GranularSpec {
    fields: Vec<(String, String)>,
}

impl GranularSpec {
    /// An empty spec.
    pub fn new() -> Self {
        GranularSpec::default()
    }

    /// A spec from `(field, type)` pairs; a repeated field keeps its first position and its
    /// last type (as a Python dict does).
    pub fn from_pairs<K: Into<String>, T: Into<String>>(
        pairs: impl IntoIterator<Item = (K, T)>,
    ) -> Self {
        let mut spec = GranularSpec::new();
        for (k, t) in pairs {
            spec.insert(k.into(), t.into());
        }
        spec
    }

    /// Builder form of [`insert`](Self::insert).
    pub fn with(mut self, key: impl Into<String>, type_name: impl Into<String>) -> Self {
        self.insert(key.into(), type_name.into());
        self
    }

    /// Sets the type of `key` (appending the key if it is new).
    pub fn insert(&mut self, key: String, type_name: String) {
        match self.fields.iter_mut().find(|(k, _)| *k == key) {
            Some(entry) => entry.1 = type_name,
            None => self.fields.push((key, type_name)),
        }
    }

    /// Parses `spec.json`: a JSON object mapping field names to type strings.
    pub fn parse(json: &[u8]) -> Result<Self> {
        let value: serde_json::Value = serde_json::from_slice(json)
            .map_err(|e| Error::corrupt(format!("spec.json is not valid JSON: {e}")))?;
        let serde_json::Value::Object(map) = value else {
            return Err(Error::corrupt("spec.json is not a JSON object of field name → type"));
        };
        let mut spec = GranularSpec::new();
        for (k, v) in map {
            let serde_json::Value::String(t) = v else {
                return Err(Error::corrupt(format!(
                    "spec.json gives field {k:?} a type that is not a string: {v}"
                )));
            };
            spec.fields.push((k, t));
        }
        Ok(spec)
    }

    /// A spec for records shaped like `record` (for converting other formats): bytes →
    /// `bytes`, text → `utf8`, integers → `int`, arrays → `array`, lists and maps → `tree`
    /// (which also holds arrays nested in them), other scalars (floats, booleans, null) →
    /// `msgpack`.
    pub fn infer(record: &reel_core::RecordRef<'_>) -> Self {
        use reel_core::ValueRef;
        GranularSpec::from_pairs(record.iter().map(|(name, value)| {
            let t = match value {
                ValueRef::Bytes(_) => "bytes",
                ValueRef::Str(_) => "utf8",
                ValueRef::Int(_) | ValueRef::UInt(_) => "int",
                ValueRef::Array(_) => "array",
                ValueRef::List(_) | ValueRef::Map(_) => "tree",
                ValueRef::Float(_) | ValueRef::Bool(_) | ValueRef::Null => "msgpack",
            };
            (name.to_string(), t.to_string())
        }))
    }

    /// Number of fields.
    pub fn len(&self) -> usize {
        self.fields.len()
    }

    /// Whether the spec has no fields.
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    /// The `(field, type)` pairs in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&str, &str)> + '_ {
        self.fields.iter().map(|(k, t)| (k.as_str(), t.as_str()))
    }

    /// The field names in order.
    pub fn keys(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        self.fields.iter().map(|(k, _)| k.as_str())
    }

    /// The type of `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.fields.iter().find(|(k, _)| k == key).map(|(_, t)| t.as_str())
    }

    /// The same spec with its keys sorted by code point (the order writers use).
    pub fn sorted(&self) -> Self {
        let mut fields = self.fields.clone();
        fields.sort_by(|a, b| a.0.cmp(&b.0));
        GranularSpec { fields }
    }

    /// Whether both specs map the same keys to the same types, in any order (how a resuming
    /// reference writer compares them).
    pub fn same_mapping(&self, other: &GranularSpec) -> bool {
        self.len() == other.len() && self.iter().all(|(k, t)| other.get(k) == Some(t))
    }

    /// The bytes of `spec.json` as the reference writers produce them: keys sorted, Python's
    /// `json.dumps` style (`", "` and `": "` separators, non-ASCII escaped as `\uXXXX`, no
    /// trailing newline).
    pub fn to_json_bytes(&self) -> Vec<u8> {
        let mut out = String::from("{");
        for (n, (k, t)) in self.sorted().fields.iter().enumerate() {
            if n > 0 {
                out.push_str(", ");
            }
            python_json_string(&mut out, k);
            out.push_str(": ");
            python_json_string(&mut out, t);
        }
        out.push('}');
        out.into_bytes()
    }
}

/// Appends `s` as a JSON string the way Python's `json.dumps` (with `ensure_ascii`) does.
fn python_json_string(out: &mut String, s: &str) {
    use std::fmt::Write as _;
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 || (c as u32) > 0x7f => {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    let _ = write!(out, "\\u{u:04x}");
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// A parsed type string: `name`, `name(arg,…)`, either optionally followed by `[]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TypeSpec {
    /// The codec name (`int`, `array`, `jpeg`, …).
    pub name: String,
    /// Arguments of a bags-style parameterised type (`array(uint8,2)` → `["uint8", "2"]`).
    pub args: Vec<String>,
    /// Whether the field is a sequence of values (`type[]`, refs-based datasets only).
    pub sequence: bool,
}

impl TypeSpec {
    /// Parses a type string. The sequence marker is recognised as the reference does: the
    /// type ends with `[]`, and the codec is named by what remains once every trailing `[`
    /// and `]` is stripped.
    pub fn parse(s: &str) -> Result<Self> {
        let sequence = s.ends_with("[]");
        let base = if sequence { s.trim_end_matches(['[', ']']) } else { s };
        let (name, args) = match base.find('(') {
            Some(open) => {
                let inner = base[open + 1..].strip_suffix(')').ok_or_else(|| {
                    Error::schema(format!("type {s:?} has an unclosed argument list"))
                })?;
                (&base[..open], inner.split(',').map(str::to_string).collect())
            }
            None => (base, Vec::new()),
        };
        if name.is_empty() {
            return Err(Error::schema(format!("type {s:?} has no name")));
        }
        Ok(TypeSpec { name: name.to_string(), args, sequence })
    }

    /// The type string without the sequence marker (`array(uint8,2)`).
    pub fn base(&self) -> String {
        if self.args.is_empty() {
            self.name.clone()
        } else {
            format!("{}({})", self.name, self.args.join(","))
        }
    }
}

/// Checks a field name for use as a file name: the reference builds `<key>.bag` by string
/// concatenation, so a key with a path separator would read or write outside the dataset.
pub(crate) fn check_key_is_file_name(key: &str) -> Result<()> {
    if key.is_empty() || key == "." || key == ".." || key.contains(['/', '\\', '\0']) {
        return Err(Error::unsupported(format!(
            "field name {key:?} cannot be a file name inside the dataset directory"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_matches_python() {
        let spec =
            GranularSpec::new().with("name", "utf8").with("label", "int").with("vec", "array");
        assert_eq!(
            String::from_utf8(spec.to_json_bytes()).unwrap(),
            r#"{"label": "int", "name": "utf8", "vec": "array"}"#
        );
        // json.dumps({'é': 'a"b', '😀': '\n\x7f'}) in Python.
        let spec = GranularSpec::new().with("é", "a\"b").with("😀", "\n\u{7f}");
        assert_eq!(
            String::from_utf8(spec.to_json_bytes()).unwrap(),
            "{\"\\u00e9\": \"a\\\"b\", \"\\ud83d\\ude00\": \"\\n\u{7f}\"}"
        );
        assert_eq!(GranularSpec::new().to_json_bytes(), b"{}");
    }

    #[test]
    fn parse_keeps_file_order() {
        let s = GranularSpec::parse(br#"{"b": "int", "a": "utf8[]"}"#).unwrap();
        assert_eq!(s.keys().collect::<Vec<_>>(), ["b", "a"]);
        assert!(s.same_mapping(&s.sorted()));
        assert!(GranularSpec::parse(b"[1]").is_err());
        assert!(GranularSpec::parse(br#"{"a": 1}"#).is_err());
        assert!(GranularSpec::parse(br#"{"a": "int""#).is_err());
    }

    #[test]
    fn infer_picks_lossless_types() {
        let mut r =
            reel_core::Record::new().with_bytes("b", b"x").with_str("s", "y").with_int("i", 1);
        r.push_float("f", 0.5);
        r.push_array("a", reel_core::DType::U8, &[1], &[1]).unwrap();
        let spec = GranularSpec::infer(&r.view());
        let types: Vec<&str> = spec.iter().map(|(_, t)| t).collect();
        assert_eq!(types, ["bytes", "utf8", "int", "msgpack", "array"]);
    }

    #[test]
    fn type_strings() {
        let t = TypeSpec::parse("array(uint8,2)[]").unwrap();
        assert_eq!((t.name.as_str(), t.args.len(), t.sequence), ("array", 2, true));
        assert_eq!(t.base(), "array(uint8,2)");
        let t = TypeSpec::parse("utf8").unwrap();
        assert!(!t.sequence && t.args.is_empty());
        assert!(TypeSpec::parse("int(").is_err());
        assert!(TypeSpec::parse("[]").is_err());
    }
}
