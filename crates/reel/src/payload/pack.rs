//! Writing fields as bytes: a whole record as one value (`--pack`), or each map and list
//! field as its own bytes (`--encode-nested`).

use reel_core::{RAW_FIELD, Record, RecordRef, Result, ValueRef};

use super::Codec;

/// Writes every field of `record` into `out` as one map in `codec`'s layout, stored as the
/// single bytes field `data`.
pub(crate) fn pack_record(
    codec: Codec,
    record: &RecordRef<'_>,
    out: &mut Record,
    scratch: &mut Vec<u8>,
) -> Result<()> {
    scratch.clear();
    let entries: Vec<(ValueRef<'_>, ValueRef<'_>)> =
        record.iter().map(|(name, v)| (ValueRef::Str(name), v)).collect();
    encode_entries(codec, &entries, scratch)?;
    out.clear();
    out.push_bytes(RAW_FIELD, scratch);
    Ok(())
}

/// Appends a map of `entries` in `codec`'s layout.
fn encode_entries(
    codec: Codec,
    entries: &[(ValueRef<'_>, ValueRef<'_>)],
    out: &mut Vec<u8>,
) -> Result<()> {
    match codec {
        Codec::Msgpack => {
            let len = u32::try_from(entries.len()).map_err(|_| {
                reel_core::Error::invalid_input("a record with more than 2^32 fields")
            })?;
            map_len(out, len);
            for (k, v) in entries {
                codec.encode(*k, out)?;
                codec.encode(*v, out)?;
            }
            Ok(())
        }
        Codec::Json => {
            out.push(b'{');
            for (i, (k, v)) in entries.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                codec.encode(*k, out)?;
                out.push(b':');
                codec.encode(*v, out)?;
            }
            out.push(b'}');
            Ok(())
        }
    }
}

/// msgpack's map header (fixmap, map16, map32), as `msgpack.packb` writes it.
fn map_len(out: &mut Vec<u8>, len: u32) {
    if len < 16 {
        out.push(0x80 | len as u8);
    } else if len <= u16::MAX as u32 {
        out.push(0xde);
        out.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        out.push(0xdf);
        out.extend_from_slice(&len.to_be_bytes());
    }
}

/// Whether `target` stores the map or list `value` of field `name` as it is.
fn holds_nested(target: crate::Format, name: &str, value: ValueRef<'_>) -> bool {
    use crate::Format;
    match target {
        // The references read maps with text keys only.
        Format::Granular => !crate::convert::has_non_text_keys(value),
        // Arrow holds lists and maps (as lists and structs, or tagged JSON).
        Format::Parquet | Format::ArrowIpc => true,
        // bags has sequences (`type[]`, arrays included) and msgpack, but no `tree`: arrays
        // may not sit inside a map or deeper than one list.
        Format::Bags if crate::convert::has_non_text_keys(value) => false,
        Format::Bags => match value {
            ValueRef::List(l) => {
                l.iter().all(|x| matches!(x, ValueRef::Array(_)) || holds_no_array(x))
            }
            other => holds_no_array(other),
        },
        Format::Gulp => matches!(name, "meta" | "frames" | "meta_extra"),
        Format::Ofrecord => match value {
            ValueRef::List(l) => {
                l.iter().all(|x| matches!(x, ValueRef::Bytes(_)))
                    || l.iter().all(|x| matches!(x, ValueRef::Str(_)))
            }
            _ => false,
        },
        Format::Ffrecord | Format::Syrah => false,
    }
}

/// Whether `value` has no array anywhere in it (so msgpack can hold it).
fn holds_no_array(value: ValueRef<'_>) -> bool {
    match value {
        ValueRef::Array(_) => false,
        ValueRef::List(l) => l.iter().all(holds_no_array),
        ValueRef::Map(m) => m.iter().all(|(k, v)| holds_no_array(k) && holds_no_array(v)),
        _ => true,
    }
}

/// Rewrites each map or list field that `target` cannot hold as bytes in `codec`'s
/// layout. Returns the names of the fields encoded (empty when nothing changed, and then
/// `out` is not touched).
pub(crate) fn encode_nested(
    codec: Codec,
    target: crate::Format,
    record: &RecordRef<'_>,
    out: &mut Record,
    scratch: &mut Vec<u8>,
) -> Result<Vec<(String, &'static str)>> {
    let needs = |name: &str, v: ValueRef<'_>| {
        matches!(v, ValueRef::List(_) | ValueRef::Map(_)) && !holds_nested(target, name, v)
    };
    if !record.iter().any(|(n, v)| needs(n, v)) {
        return Ok(Vec::new());
    }
    let mut encoded = Vec::new();
    out.clear();
    for (name, v) in record.iter() {
        if needs(name, v) {
            scratch.clear();
            codec.encode(v, scratch)?;
            out.push_bytes(name, scratch);
            encoded.push((name.to_string(), v.kind_name()));
        } else {
            out.push_value(name, v);
        }
    }
    Ok(encoded)
}
