//! How values travel into each format: what is kept, what is lost (and said), what is
//! impossible (and refused, naming the field).

use std::collections::BTreeSet;

use reel_core::{DType, Error, Record, RecordRef, Result, Shape, Value, ValueRef, f16_to_f32};

use crate::Format;

/// A loss a conversion causes, stated once per field and kind of loss.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Loss {
    /// The field concerned.
    pub field: String,
    /// What is lost.
    pub what: String,
}

impl std::fmt::Display for Loss {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.what)
    }
}

/// The losses seen so far.
pub(crate) type Losses = BTreeSet<Loss>;

pub(crate) fn lose(losses: &mut Losses, field: &str, what: &str) {
    if !losses.iter().any(|l| l.field == field && l.what == what) {
        losses.insert(Loss { field: field.to_string(), what: what.to_string() });
    }
}

fn impossible(target: Format, field: &str, why: impl std::fmt::Display) -> Error {
    Error::schema(format!("cannot convert field {field:?} to {target}: {why}"))
        .with_format(target.name())
}

/// Brings `record` into a shape `target`'s writer stores. Returns `true` when the adapted
/// record is in `out`, `false` when `record` can go to the writer as it is. Losses are
/// added to `losses`; a value the target cannot hold is an error naming the field.
pub(crate) fn adapt(
    target: Format,
    record: &RecordRef<'_>,
    out: &mut Record,
    losses: &mut Losses,
) -> Result<bool> {
    match target {
        Format::Ffrecord => to_ffrecord(record, out, losses).map(|()| true),
        Format::Syrah => to_fields(target, record, out, losses, syrah_value).map(|()| true),
        Format::Ofrecord => to_fields(target, record, out, losses, ofrecord_value).map(|()| true),
        Format::Gulp => to_gulp(record, losses).map(|()| false),
        // Arrow holds every value kind (see `reel_arrow`); a record that does not fit the
        // inferred schema is refused by the writer, naming the record and field.
        Format::Parquet | Format::ArrowIpc => {
            for (name, value) in record.iter() {
                if matches!(value, ValueRef::Null) {
                    lose(losses, name, "a null value is a null cell, which reads back as no field");
                }
            }
            Ok(false)
        }
        // Granular stores every value kind (see `crate::convert` docs); only field order
        // is not kept. Its writer picks each field's type and names a field whose value
        // the generation has no type for (bags 0.5.1 has no `tree`).
        Format::Granular | Format::Bags => {
            let refusals: Vec<String> = record
                .iter()
                .filter(|(_, v)| has_non_text_keys(*v))
                .map(|(name, _)| {
                    format!(
                        "field {name:?}: a map with keys that are not text, which the reference \
                         reader refuses (msgpack strict_map_key) (--encode-nested msgpack or \
                         json stores it as bytes; --drop {name} leaves it out)"
                    )
                })
                .collect();
            if !refusals.is_empty() {
                return Err(Error::schema(format!(
                    "cannot convert to {target}: {}",
                    refusals.join("; ")
                ))
                .with_format(target.name()));
            }
            // Only a record whose fields are not in that order already loses its order.
            let names: Vec<&str> = record.iter().map(|(name, _)| name).collect();
            if names.windows(2).any(|w| w[0] > w[1]) {
                lose(losses, "*", "fields are stored in sorted name order");
            }
            Ok(false)
        }
    }
}

/// Whether `v` holds, at any depth, a map with a key that is neither text nor bytes.
pub(crate) fn has_non_text_keys(v: ValueRef<'_>) -> bool {
    match v {
        ValueRef::Map(m) => m.iter().any(|(k, x)| {
            !matches!(k, ValueRef::Str(_) | ValueRef::Bytes(_)) || has_non_text_keys(x)
        }),
        ValueRef::List(l) => l.iter().any(has_non_text_keys),
        _ => false,
    }
}

fn to_ffrecord(record: &RecordRef<'_>, out: &mut Record, losses: &mut Losses) -> Result<()> {
    let t = Format::Ffrecord;
    if record.len() != 1 {
        let fields: Vec<String> =
            record.iter().map(|(n, v)| format!("field {n:?} ({})", v.kind_name())).collect();
        return Err(Error::schema(format!(
            "cannot convert to {t}: FFRecord stores exactly one bytes value per record, and \
             this record has {} fields: {}. --pack msgpack or --pack json stores all fields \
             as one value; --fields NAME keeps one",
            record.len(),
            fields.join(", ")
        ))
        .with_format(t.name()));
    }
    let Some((name, value)) = record.field(0) else {
        return Err(impossible(t, "", "empty record"));
    };
    if name != reel_core::RAW_FIELD {
        lose(
            losses,
            name,
            "the field name is not stored (FFRecord records are nameless bytes; they read back as \"data\")",
        );
    }
    let bytes: &[u8] = match value {
        ValueRef::Bytes(b) => b,
        ValueRef::Str(s) => {
            lose(losses, name, "text is stored as its UTF-8 bytes");
            s.as_bytes()
        }
        ValueRef::Array(a) => {
            if !(a.dtype == DType::U8 && a.shape.len() == 1) {
                lose(losses, name, "the array's dtype and shape are not stored, only its bytes");
            }
            a.data
        }
        ValueRef::List(l) if l.len() == 1 && matches!(l.get(0), Some(ValueRef::Bytes(_))) => {
            lose(losses, name, "a list of one bytes value is stored as the bytes");
            l.get(0).and_then(|v| v.as_bytes()).unwrap_or_default()
        }
        other => {
            return Err(impossible(
                t,
                name,
                format!(
                    "a {} is not bytes (--pack msgpack or --pack json stores it as bytes)",
                    other.kind_name()
                ),
            ));
        }
    };
    out.clear();
    out.push_bytes(reel_core::RAW_FIELD, bytes);
    Ok(())
}

type ValueRule = fn(&str, ValueRef<'_>, &mut Record, &mut Losses) -> Result<Value>;

fn to_fields(
    target: Format,
    record: &RecordRef<'_>,
    out: &mut Record,
    losses: &mut Losses,
    rule: ValueRule,
) -> Result<()> {
    out.clear();
    let mut refusals = Vec::new();
    for (name, value) in record.iter() {
        match rule(name, value, out, losses) {
            Ok(v) => {
                out.push(name, v);
            }
            Err(e) => {
                let hint = match value {
                    ValueRef::List(_) | ValueRef::Map(_) => {
                        "--encode-nested msgpack or json stores it as bytes"
                    }
                    _ => "--pack msgpack or json stores the whole record as one bytes value",
                };
                refusals.push(format!(
                    "field {name:?}: {} ({hint}; --drop {name} leaves it out)",
                    e.message()
                ));
            }
        }
    }
    if !refusals.is_empty() {
        return Err(Error::schema(format!("cannot convert to {target}: {}", refusals.join("; ")))
            .with_format(target.name()));
    }
    Ok(())
}

fn array(out: &mut Record, dtype: DType, n: u64, data: &[u8]) -> Value {
    let span = out.out().append(data);
    Value::Array(reel_core::ArrayValue { dtype, shape: Shape::vector(n), data: span })
}

fn flattened(name: &str, a: reel_core::ArrayRef<'_>, losses: &mut Losses) -> u64 {
    if a.shape.len() != 1 {
        lose(losses, name, "the array's shape is not stored (it reads back flat)");
    }
    a.len()
}

/// Syrah: named 1-D arrays of numbers, and text.
fn syrah_value(
    name: &str,
    v: ValueRef<'_>,
    out: &mut Record,
    losses: &mut Losses,
) -> Result<Value> {
    Ok(match v {
        ValueRef::Str(s) => Value::Str(out.out().append(s.as_bytes())),
        ValueRef::Array(a) => match a.dtype {
            DType::C64
            | DType::C128
            | DType::Unicode(_)
            | DType::FixedBytes(_)
            | DType::Void(_) => {
                return Err(Error::schema(format!("Syrah has no {} arrays", a.dtype)));
            }
            dt => {
                let n = flattened(name, a, losses);
                array(out, dt, n, a.data)
            }
        },
        ValueRef::Bytes(b) => {
            lose(losses, name, "bytes are stored as a uint8 array");
            array(out, DType::U8, b.len() as u64, b)
        }
        ValueRef::Int(i) => {
            lose(losses, name, "a number is stored as a one-element array");
            array(out, DType::I64, 1, &i.to_le_bytes())
        }
        ValueRef::UInt(u) => {
            lose(losses, name, "a number is stored as a one-element array");
            array(out, DType::U64, 1, &u.to_le_bytes())
        }
        ValueRef::Float(f) => {
            lose(losses, name, "a number is stored as a one-element array");
            array(out, DType::F64, 1, &f.to_le_bytes())
        }
        ValueRef::Bool(b) => {
            lose(losses, name, "a boolean is stored as a one-element array");
            array(out, DType::Bool, 1, &[u8::from(b)])
        }
        other => {
            return Err(Error::schema(format!(
                "Syrah stores arrays and text, not a {}",
                other.kind_name()
            )));
        }
    })
}

/// OFRecord: lists of bytes, f32/f64/i32/i64 lists, or a feature with no kind.
fn ofrecord_value(
    name: &str,
    v: ValueRef<'_>,
    out: &mut Record,
    losses: &mut Losses,
) -> Result<Value> {
    let bytes_list = |items: &mut dyn Iterator<Item = &[u8]>, out: &mut Record| -> Value {
        let mut o = out.out();
        Value::List(items.map(|b| Value::Bytes(o.append(b))).collect())
    };
    Ok(match v {
        ValueRef::Null => Value::Null,
        ValueRef::List(l) if l.iter().all(|x| matches!(x, ValueRef::Bytes(_))) => {
            bytes_list(&mut l.iter().filter_map(|x| x.as_bytes()), out)
        }
        ValueRef::List(l) if l.iter().all(|x| matches!(x, ValueRef::Str(_))) => {
            lose(losses, name, "a list of text is stored as a bytes list");
            bytes_list(&mut l.iter().filter_map(|x| x.as_str().map(str::as_bytes)), out)
        }
        ValueRef::Bytes(b) => {
            lose(losses, name, "bytes are stored as a bytes list of one");
            bytes_list(&mut std::iter::once(b), out)
        }
        ValueRef::Str(s) => {
            lose(losses, name, "text is stored as a bytes list of one");
            bytes_list(&mut std::iter::once(s.as_bytes()), out)
        }
        ValueRef::Int(i) => {
            lose(losses, name, "a number is stored as an int64 list of one");
            array(out, DType::I64, 1, &i.to_le_bytes())
        }
        ValueRef::Float(f) => {
            lose(losses, name, "a number is stored as a double list of one");
            array(out, DType::F64, 1, &f.to_le_bytes())
        }
        ValueRef::Bool(b) => {
            lose(losses, name, "a boolean is stored as an int32 list of one");
            array(out, DType::I32, 1, &i32::from(b).to_le_bytes())
        }
        ValueRef::Array(a) => {
            let n = flattened(name, a, losses);
            match a.dtype {
                DType::F32 | DType::F64 | DType::I32 | DType::I64 => array(out, a.dtype, n, a.data),
                DType::Bool | DType::I8 | DType::U8 | DType::I16 | DType::U16 => {
                    lose(losses, name, &format!("{} values are widened to int32", a.dtype));
                    let widened: Vec<u8> = widen_to_i32(a.dtype, a.data)
                        .iter()
                        .flat_map(|x| x.to_le_bytes())
                        .collect();
                    array(out, DType::I32, n, &widened)
                }
                DType::U32 => {
                    lose(losses, name, "uint32 values are widened to int64");
                    let widened: Vec<u8> = a
                        .data
                        .chunks_exact(4)
                        .flat_map(|c| {
                            (u32::from_le_bytes([c[0], c[1], c[2], c[3]]) as i64).to_le_bytes()
                        })
                        .collect();
                    array(out, DType::I64, n, &widened)
                }
                DType::F16 => {
                    lose(losses, name, "float16 values are widened to float32");
                    let widened: Vec<u8> = a
                        .data
                        .chunks_exact(2)
                        .flat_map(|c| f16_to_f32(u16::from_le_bytes([c[0], c[1]])).to_le_bytes())
                        .collect();
                    array(out, DType::F32, n, &widened)
                }
                other => {
                    return Err(Error::schema(format!(
                        "OFRecord has no list type for {other} values"
                    )));
                }
            }
        }
        other => {
            return Err(Error::schema(format!(
                "OFRecord features are bytes, float, double, int32 or int64 lists, not a {}",
                other.kind_name()
            )));
        }
    })
}

fn widen_to_i32(dtype: DType, data: &[u8]) -> Vec<i32> {
    match dtype {
        DType::Bool | DType::U8 => data.iter().map(|&b| b as i32).collect(),
        DType::I8 => data.iter().map(|&b| b as i8 as i32).collect(),
        DType::I16 => {
            data.chunks_exact(2).map(|c| i16::from_le_bytes([c[0], c[1]]) as i32).collect()
        }
        DType::U16 => {
            data.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]]) as i32).collect()
        }
        _ => Vec::new(),
    }
}

/// Gulp takes records shaped like its own (`id`, `meta`, `frames`, `meta_extra`); the
/// writer checks the details (JSON-able meta, JPEG frames) and names the field.
fn to_gulp(record: &RecordRef<'_>, losses: &mut Losses) -> Result<()> {
    let t = Format::Gulp;
    const KNOWN: [&str; 4] = ["id", "meta", "frames", "meta_extra"];
    for (name, v) in record.iter() {
        if !KNOWN.contains(&name) {
            return Err(impossible(
                t,
                name,
                "a gulp video holds only id, meta, frames (and meta_extra)",
            ));
        }
        if name == "frames"
            && let ValueRef::List(l) = v
            && l.iter().any(|f| matches!(f, ValueRef::Array(_)))
        {
            lose(losses, name, "pixel frames are JPEG-encoded (quality 90, 4:4:4)");
        }
    }
    if record.get("id").is_none() || record.get("frames").is_none() {
        return Err(impossible(t, "id/frames", "a gulp video needs an id and a list of frames"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_precision_widening_is_exact() {
        for (h, f) in [
            (0x3c00u16, 1.0f32),
            (0xc000, -2.0),
            (0x7bff, 65504.0),
            (0x0001, 5.960_464_5e-8),
            (0x0000, 0.0),
        ] {
            assert_eq!(f16_to_f32(h), f, "{h:#06x}");
        }
        assert!(f16_to_f32(0x7e00).is_nan());
        assert_eq!(f16_to_f32(0x7c00), f32::INFINITY);
    }
}
