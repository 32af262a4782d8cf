//! The golden corpus: where it is, what its manifests say, and comparing values with them.
//!
//! The corpus root is `REEL_GOLDEN_DIR` (a relative path is taken from the workspace root),
//! or the repository's own copy in `tests/golden`, so a fresh clone tests itself. A missing
//! corpus fails the test: the golden tests never skip.

use std::path::{Path, PathBuf};

use serde_json::Value as Json;
use sha2::{Digest, Sha256};

use crate::{DType, ValueRef};

/// The workspace root (two levels above this crate).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The golden corpus root. Panics with instructions if it does not exist.
pub fn golden_root() -> PathBuf {
    let root = match std::env::var_os("REEL_GOLDEN_DIR") {
        Some(p) => {
            let p = PathBuf::from(p);
            if p.is_absolute() { p } else { workspace_root().join(p) }
        }
        None => workspace_root().join("tests/golden"),
    };
    assert!(
        root.join("index.json").is_file(),
        "golden corpus not found at {} (no index.json): put the corpus there or set REEL_GOLDEN_DIR",
        root.display()
    );
    root
}

/// Reads and parses a JSON file, panicking with the path on failure.
pub fn read_json(path: &Path) -> Json {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("cannot parse {}: {e}", path.display()))
}

/// The dataset directories (relative to the format directory) that `index.json` lists for
/// `format_key` (e.g. `"ffrecord"`, `"granular/bags-0.5.1"`). Panics if the key is missing.
pub fn datasets(format_key: &str) -> Vec<String> {
    let index = read_json(&golden_root().join("index.json"));
    let list = index["formats"][format_key]["datasets"]
        .as_array()
        .unwrap_or_else(|| panic!("index.json lists no datasets for format {format_key:?}"));
    list.iter().map(|d| d.as_str().expect("dataset names are strings").to_string()).collect()
}

/// The format keys `index.json` lists.
pub fn format_keys() -> Vec<String> {
    let index = read_json(&golden_root().join("index.json"));
    index["formats"].as_object().map(|m| m.keys().cloned().collect()).unwrap_or_default()
}

/// Lowercase hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// Lowercase hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Bytes from lowercase or uppercase hex. Panics on bad input (manifests are trusted).
pub fn unhex(s: &str) -> Vec<u8> {
    assert!(s.len().is_multiple_of(2), "odd-length hex");
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex")).collect()
}

/// The dtype name manifests use (`"int16"`, `"unicode_ucs4[4]"`).
pub fn manifest_dtype(dtype: DType) -> String {
    match dtype {
        DType::Unicode(n) => format!("unicode_ucs4[{n}]"),
        other => other.name(),
    }
}

/// Checks raw bytes against a `{"type":"bytes",len,sha256,hex?}` descriptor (also accepts
/// descriptors without `type`).
pub fn check_bytes(actual: &[u8], expected: &Json) -> Result<(), String> {
    if let Some(len) = expected.get("len").and_then(Json::as_u64)
        && actual.len() as u64 != len
    {
        return Err(format!("length {} != expected {len}", actual.len()));
    }
    if let Some(h) = expected.get("sha256").and_then(Json::as_str)
        && sha256_hex(actual) != h
    {
        return Err(format!("sha256 differs (len {})", actual.len()));
    }
    if let Some(h) = expected.get("hex").and_then(Json::as_str)
        && hex(actual) != h.to_ascii_lowercase()
    {
        return Err(format!("hex {} != expected {h}", hex(actual)));
    }
    Ok(())
}

/// Options for [`check_value_with`].
#[derive(Clone, Copy, Debug, Default)]
pub struct Compare {
    /// Accept map entries in any order (formats that promise no order).
    pub unordered_maps: bool,
}

/// Compares `actual` with a manifest value descriptor; the error says where they differ.
pub fn check_value(actual: ValueRef<'_>, expected: &Json) -> Result<(), String> {
    check_value_with(actual, expected, Compare::default())
}

/// [`check_value`] with options.
pub fn check_value_with(
    actual: ValueRef<'_>,
    expected: &Json,
    opts: Compare,
) -> Result<(), String> {
    let ty = expected.get("type").and_then(Json::as_str).ok_or("descriptor without type")?;
    let mismatch = || format!("expected {ty}, got {}", actual.kind_name());
    match (ty, actual) {
        ("bytes", ValueRef::Bytes(b)) => check_bytes(b, expected),
        ("str", ValueRef::Str(s)) => {
            let want = expected["value"].as_str().ok_or("str without value")?;
            if s == want { Ok(()) } else { Err(format!("string {s:?} != {want:?}")) }
        }
        ("int", ValueRef::Int(_) | ValueRef::UInt(_)) => {
            let v = &expected["value"];
            let ok = match actual {
                ValueRef::Int(i) => v.as_i64() == Some(i),
                ValueRef::UInt(u) => v.as_u64() == Some(u),
                _ => false,
            };
            if ok { Ok(()) } else { Err(format!("int {actual:?} != {v}")) }
        }
        ("bool", ValueRef::Bool(b)) => {
            if expected["value"].as_bool() == Some(b) {
                Ok(())
            } else {
                Err(format!("bool {b} differs"))
            }
        }
        ("null", ValueRef::Null) => Ok(()),
        ("float", ValueRef::Float(f)) => {
            let bits = expected["f64_bits"].as_str().ok_or("float without f64_bits")?;
            let got = format!("{:016x}", f.to_bits());
            if got == bits.to_ascii_lowercase() {
                Ok(())
            } else {
                Err(format!("float bits {got} != {bits}"))
            }
        }
        ("list", ValueRef::List(l)) => {
            let items = expected["items"].as_array().ok_or("list without items")?;
            if items.len() != l.len() {
                return Err(format!("list of {} items, expected {}", l.len(), items.len()));
            }
            for (k, (a, e)) in l.iter().zip(items).enumerate() {
                check_value_with(a, e, opts).map_err(|m| format!("[{k}]: {m}"))?;
            }
            Ok(())
        }
        ("map", ValueRef::Map(m)) => {
            let entries = expected["entries"].as_array().ok_or("map without entries")?;
            if entries.len() != m.len() {
                return Err(format!("map of {} entries, expected {}", m.len(), entries.len()));
            }
            let actual: Vec<_> = m.iter().collect();
            for (k, e) in entries.iter().enumerate() {
                let (ek, ev) = (&e[0], &e[1]);
                let candidates: Vec<usize> =
                    if opts.unordered_maps { (0..actual.len()).collect() } else { vec![k] };
                let found = candidates.iter().any(|&j| {
                    check_value_with(actual[j].0, ek, opts).is_ok()
                        && check_value_with(actual[j].1, ev, opts).is_ok()
                });
                if !found {
                    let key = ek.get("value").map(|v| v.to_string()).unwrap_or_default();
                    let detail = if opts.unordered_maps {
                        "no matching entry".to_string()
                    } else {
                        check_value_with(actual[k].0, ek, opts)
                            .and_then(|()| check_value_with(actual[k].1, ev, opts))
                            .err()
                            .unwrap_or_default()
                    };
                    return Err(format!("map entry {k} (key {key}): {detail}"));
                }
            }
            Ok(())
        }
        ("ndarray", ValueRef::Array(a)) => {
            let dtype = expected["dtype"].as_str().ok_or("ndarray without dtype")?;
            if manifest_dtype(a.dtype) != dtype {
                return Err(format!("dtype {} != {dtype}", manifest_dtype(a.dtype)));
            }
            let shape: Vec<u64> = expected["shape"]
                .as_array()
                .ok_or("ndarray without shape")?
                .iter()
                .map(|d| d.as_u64().unwrap_or(u64::MAX))
                .collect();
            if shape != a.shape {
                return Err(format!("shape {:?} != {shape:?}", a.shape));
            }
            if let Some(n) = expected.get("byte_len").and_then(Json::as_u64)
                && a.data.len() as u64 != n
            {
                return Err(format!("byte length {} != {n}", a.data.len()));
            }
            check_bytes(a.data, expected)
        }
        _ => Err(mismatch()),
    }
}
