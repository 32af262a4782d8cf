//! Choosing the spec a conversion writes: every type must be one the target generation's
//! reference knows, whatever generation (or format) the source was.
//!
//! The generations do not share their type names: granular 0.24 has `array`, `tree`,
//! `jpg`, `i64`/`u64` and no sequences; bags 0.5.1 has `array(dtype,dims…)`, `jpeg`,
//! `int(width)` (unsigned) and `type[]` sequences. A declared type the target knows is kept
//! (so a dataset converted to its own generation keeps its spec byte for byte), one with a
//! fixed counterpart is renamed, and anything else is chosen from the value the first
//! record holds.

use reel_core::{DType, Error, RecordRef, Result, ValueRef};

use super::refs_writer::RefsFlavor;
use super::sharded::ShardFormat;
use crate::spec::{GranularSpec, TypeSpec};

/// Codec names in granular 0.24.2's table (spec §5.1).
const CURRENT_TYPES: [&str; 12] =
    ["bytes", "utf8", "msgpack", "int", "i64", "u64", "array", "tree", "jpg", "png", "mp4", "webm"];

/// Codec names in bags 0.5.1's table (spec §5.6); `array` needs its dtype argument.
const BAGS_TYPES: [&str; 8] = ["bytes", "utf8", "msgpack", "int", "array", "jpeg", "png", "mp4"];

/// The spec to write for records shaped like `first` (or, with no record, like
/// `declared`) in `layout`. A value no type of the layout can hold is a
/// [`Schema`](reel_core::ErrorKind::Schema) error naming the field.
pub(crate) fn fit_spec(
    declared: Option<&GranularSpec>,
    first: Option<&RecordRef<'_>>,
    layout: ShardFormat,
) -> Result<GranularSpec> {
    let declared_type = |key: &str| declared.and_then(|d| d.get(key)).map(str::to_string);
    let fields: Vec<(String, String)> = match first {
        Some(record) => record
            .iter()
            .map(|(key, value)| {
                let kept = declared_type(key).and_then(|t| keep_or_rename(&t, layout));
                // granular's `int` is signed, bags' unsigned: a negative number goes to bags
                // as msgpack, which keeps its sign.
                let unsigned_only = layout == ShardFormat::Refs(RefsFlavor::Bags051)
                    && matches!(value, ValueRef::Int(i) if i < 0);
                let t = match kept.filter(|t| !(unsigned_only && t == "int")) {
                    Some(t) => t,
                    None => from_value(value, layout).map_err(|why| {
                        Error::schema(format!(
                            "cannot write field {key:?} as {}: {why}",
                            layout_name(layout)
                        ))
                    })?,
                };
                Ok((key.to_string(), t))
            })
            .collect::<Result<_>>()?,
        None => {
            let declared = declared.ok_or_else(|| {
                Error::invalid_input("no records and no spec: a Granular dataset needs its keys")
            })?;
            // No value to look at: a type with no counterpart becomes `msgpack`, which holds
            // every value a datapoint could have had (there are none).
            declared
                .iter()
                .map(|(k, t)| {
                    (k.to_string(), keep_or_rename(t, layout).unwrap_or_else(|| "msgpack".into()))
                })
                .collect()
        }
    };
    Ok(GranularSpec::from_pairs(fields))
}

/// Checks that every type of `types` (field name, type name) is one `layout` writes, as it
/// is or under its fixed counterpart (`jpeg` for `jpg` …). For writers given a spec by a
/// user rather than by a source: there a name the target does not know is a mistake to
/// report, not a type to choose anew from the first record (what a conversion does).
pub fn check_declared_types<'a>(
    types: impl IntoIterator<Item = (&'a str, &'a str)>,
    layout: ShardFormat,
) -> Result<()> {
    for (field, t) in types {
        if keep_or_rename(t, layout).is_none() {
            let known: &[&str] = match layout {
                ShardFormat::Refs(RefsFlavor::Bags051) => &BAGS_TYPES,
                _ => &CURRENT_TYPES,
            };
            return Err(Error::schema(format!(
                "field {field:?}: {} has no type {t:?} (its types: {}{})",
                layout_name(layout),
                known.join(", "),
                match layout {
                    ShardFormat::Refs(RefsFlavor::Bags051) =>
                        "; array(dtype,dims...), int(width), type[]",
                    _ => "",
                }
            )));
        }
    }
    Ok(())
}

fn layout_name(layout: ShardFormat) -> &'static str {
    match layout {
        ShardFormat::Indexed => "granular 0.24",
        ShardFormat::Refs(RefsFlavor::Bags051) => "bags 0.5.1",
        ShardFormat::Refs(RefsFlavor::Granular021) => "granular 0.21",
    }
}

/// `t` itself if `layout` knows it, its counterpart if it has a fixed one, else `None`.
fn keep_or_rename(t: &str, layout: ShardFormat) -> Option<String> {
    let parsed = TypeSpec::parse(t).ok()?;
    match layout {
        ShardFormat::Indexed => {
            if parsed.sequence {
                // granular 0.24 has no sequences; `tree` holds a list of any values.
                return Some("tree".into());
            }
            let name = match parsed.name.as_str() {
                "jpeg" => "jpg",
                // bags' parameterised arrays and fixed-width ints carry their parameters in
                // the value (granular's `array` stores dtype and shape; `int` any width).
                n => n,
            };
            CURRENT_TYPES.contains(&name).then(|| name.to_string())
        }
        ShardFormat::Refs(RefsFlavor::Bags051) => {
            let name = match parsed.name.as_str() {
                "jpg" => "jpeg",
                n => n,
            };
            let args_ok = match name {
                "array" => !parsed.args.is_empty(),
                "int" => parsed.args.len() <= 1,
                _ => parsed.args.is_empty(),
            };
            (BAGS_TYPES.contains(&name) && args_ok).then(|| {
                let mut out = name.to_string();
                if !parsed.args.is_empty() {
                    out = format!("{out}({})", parsed.args.join(","));
                }
                if parsed.sequence {
                    out.push_str("[]");
                }
                out
            })
        }
        // granular 0.20–0.21: the granular table with sequences.
        ShardFormat::Refs(RefsFlavor::Granular021) => (parsed.args.is_empty()
            && CURRENT_TYPES.contains(&parsed.name.as_str()))
        .then(|| t.to_string()),
    }
}

/// The type that holds `value` in `layout`, or why there is none.
fn from_value(value: ValueRef<'_>, layout: ShardFormat) -> std::result::Result<String, String> {
    match layout {
        ShardFormat::Indexed | ShardFormat::Refs(RefsFlavor::Granular021) => Ok(match value {
            ValueRef::Bytes(_) => "bytes",
            ValueRef::Str(_) => "utf8",
            ValueRef::Int(_) | ValueRef::UInt(_) => "int",
            ValueRef::Array(_) => "array",
            ValueRef::List(_) | ValueRef::Map(_) => "tree",
            ValueRef::Float(_) | ValueRef::Bool(_) | ValueRef::Null => "msgpack",
        }
        .to_string()),
        ShardFormat::Refs(RefsFlavor::Bags051) => bags_type(value, true),
    }
}

/// A bags 0.5.1 type for `value`; `top` allows a sequence (`type[]`, not nested).
fn bags_type(value: ValueRef<'_>, top: bool) -> std::result::Result<String, String> {
    match value {
        ValueRef::Bytes(_) => Ok("bytes".into()),
        ValueRef::Str(_) => Ok("utf8".into()),
        ValueRef::UInt(_) => Ok("int".into()),
        // bags' `int` is unsigned; a negative number goes as msgpack, which keeps its sign.
        ValueRef::Int(i) => Ok(if i >= 0 { "int" } else { "msgpack" }.into()),
        ValueRef::Array(a) => bags_array_type(a.dtype, a.shape),
        ValueRef::List(list) if top => {
            let items: Vec<ValueRef<'_>> = list.iter().collect();
            let item_type = |v: &ValueRef<'_>| bags_type(*v, false);
            let first = items.first().map(item_type).transpose()?;
            match first {
                Some(t)
                    if t != "msgpack"
                        && items.iter().all(|v| item_type(v).ok() == Some(t.clone())) =>
                {
                    Ok(format!("{t}[]"))
                }
                _ if msgpack_only(value) => Ok("msgpack[]".into()),
                _ => Err("a list holding arrays of different dtypes or shapes, or arrays \
                          nested deeper, has no bags 0.5.1 type"
                    .into()),
            }
        }
        v if msgpack_only(v) => Ok("msgpack".into()),
        _ => Err("arrays inside lists or maps have no bags 0.5.1 type (bags has no `tree`)".into()),
    }
}

/// `array(dtype,-1,d1,…)`: bags stores raw elements, so dtype and shape live in the type.
/// The first extent is left to the reader (`-1`, numpy's reshape), so that arrays whose
/// length varies from datapoint to datapoint (Syrah's, OFRecord's) fit one type; the others
/// are fixed, and a value of another shape is refused by the encoder, naming the field.
fn bags_array_type(dtype: DType, shape: &[u64]) -> std::result::Result<String, String> {
    let name = dtype.name();
    // bags 0.5.1 allows only `[a-z0-9-_.]` in type arguments (no `<U2`-style names).
    if !name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()) {
        return Err(format!("a {name} array has no bags 0.5.1 dtype name"));
    }
    let mut t = format!("array({name}");
    // numpy cannot infer an extent beside a zero one.
    let infer_first = shape.iter().skip(1).all(|&d| d > 0);
    for (k, d) in shape.iter().enumerate() {
        if k == 0 && infer_first {
            t.push_str(",-1");
        } else {
            t.push_str(&format!(",{d}"));
        }
    }
    t.push(')');
    Ok(t)
}

/// Whether msgpack can hold `value` (no arrays anywhere in it).
fn msgpack_only(value: ValueRef<'_>) -> bool {
    match value {
        ValueRef::Array(_) => false,
        ValueRef::List(l) => l.iter().all(msgpack_only),
        ValueRef::Map(m) => m.iter().all(|(k, v)| msgpack_only(k) && msgpack_only(v)),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use reel_core::Record;

    use super::*;

    fn spec(pairs: &[(&str, &str)]) -> GranularSpec {
        GranularSpec::from_pairs(pairs.iter().map(|(k, t)| (k.to_string(), t.to_string())))
    }

    #[test]
    fn bags_types_become_current_types() {
        let declared = spec(&[
            ("a", "array(float32,4)"),
            ("n", "int(2)"),
            ("p", "jpeg"),
            ("s", "utf8[]"),
            ("t", "utf8"),
        ]);
        let fitted = fit_spec(Some(&declared), None, ShardFormat::Indexed).unwrap();
        let types: Vec<&str> = fitted.iter().map(|(_, t)| t).collect();
        assert_eq!(types, ["array", "int", "jpg", "tree", "utf8"]);
    }

    #[test]
    fn current_types_become_bags_types_from_the_values() {
        let mut r = Record::new().with_int("n", 3).with_int("neg", -1).with_str("s", "x");
        r.push_array("a", DType::I16, &[2, 3], &[0; 12]).unwrap();
        let mut out = r.out();
        let items = vec![reel_core::Value::Str(out.append(b"w"))];
        out.push("words".into(), reel_core::Value::List(items));
        let declared =
            spec(&[("n", "int"), ("neg", "int"), ("s", "utf8"), ("a", "array"), ("words", "tree")]);
        let layout = ShardFormat::Refs(RefsFlavor::Bags051);
        let fitted = fit_spec(Some(&declared), Some(&r.view()), layout).unwrap();
        let types: Vec<&str> = fitted.iter().map(|(_, t)| t).collect();
        assert_eq!(types, ["int", "msgpack", "utf8", "array(int16,-1,3)", "utf8[]"]);
        // With nothing declared the values decide alone.
        assert_eq!(fit_spec(None, Some(&r.view()), layout).unwrap(), fitted);
    }

    #[test]
    fn arrays_nested_in_maps_cannot_be_bags() {
        let mut r = Record::new();
        let mut out = r.out();
        let key = out.append(b"k");
        let span = out.append(&[1]);
        let arr = reel_core::Value::Array(reel_core::ArrayValue {
            dtype: DType::U8,
            shape: reel_core::Shape::vector(1),
            data: span,
        });
        out.push("m".into(), reel_core::Value::Map(vec![(reel_core::Value::Str(key), arr)]));
        let err =
            fit_spec(None, Some(&r.view()), ShardFormat::Refs(RefsFlavor::Bags051)).unwrap_err();
        assert_eq!(err.kind(), reel_core::ErrorKind::Schema);
        assert!(err.message().contains("field \"m\""), "{err}");
    }
}
