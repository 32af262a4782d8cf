//! What reading a Parquet or Arrow IPC column loses: the Arrow type information that
//! reel's values do not keep (see [`crate::decode`]), so that a conversion can state it
//! and `--lossless-only` refuse it.

use arrow_schema::{DataType, Field, TimeUnit};
use reel_core::FieldSpec;

use crate::kind::{Kind, kind_of_type_name, parse_type_name};

/// A loss of reading one column (or a field nested in it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadLoss {
    /// The column, with the path to the nested field concerned (`meta.time`, `tags[]`).
    pub field: String,
    /// What is not kept, in plain words.
    pub what: String,
}

/// What reading the column `spec` of a Parquet or Arrow IPC file loses, whatever its rows
/// hold: `spec` is one of the fields such a source declares
/// ([`SourceInfo::schema`](reel_core::SourceInfo::schema)), under any name.
///
/// Stated: a timestamp, date, time or duration read as its plain count (the type, its unit
/// and time zone are not kept); integers narrower than 64 bits and float16/32 read as
/// int64 and float64 values (the values are kept, the width is not); fixed-size binary read
/// as bytes (the width is not kept); an Arrow `map`, whose type is not kept (maps of values,
/// tagged JSON in Parquet or IPC). Not stated: dictionary encoding (a storage choice: the
/// values read are the same) and 32- or 64-bit offsets (the same values). A type name that
/// is not an Arrow type (another format's) gives none.
pub fn read_losses(spec: &FieldSpec) -> Vec<ReadLoss> {
    let mut out = Vec::new();
    if let Some(field) = parse_type_name(&spec.kind) {
        losses_of(&field, &spec.name, &mut out);
    }
    out
}

/// Whether writing the column `spec` (as for [`read_losses`]) as `target`, a column of a
/// Parquet or Arrow IPC file being written with a given schema (`--schema-from`), gives it
/// back its declared type: then what reading it loses is restored, and is no loss of the
/// conversion.
pub fn type_restored(spec: &FieldSpec, target: &Field) -> bool {
    parse_type_name(&spec.kind).is_some_and(|declared| declared.data_type() == target.data_type())
}

/// Whether the column `spec` (as for [`read_losses`]) reads as 1-D arrays: a list of a
/// primitive type, whose rows read as arrays except those holding a null item, which read
/// as lists of values (a loss to state when it happens).
pub fn reads_as_arrays(spec: &FieldSpec) -> bool {
    matches!(kind_of_type_name(&spec.kind), Some(Kind::Vector(_)))
}

fn unit_name(unit: &TimeUnit) -> &'static str {
    match unit {
        TimeUnit::Second => "seconds",
        TimeUnit::Millisecond => "milliseconds",
        TimeUnit::Microsecond => "microseconds",
        TimeUnit::Nanosecond => "nanoseconds",
    }
}

fn losses_of(field: &Field, path: &str, out: &mut Vec<ReadLoss>) {
    let mut lose = |what: String| out.push(ReadLoss { field: path.to_string(), what });
    match field.data_type() {
        DataType::Timestamp(unit, tz) => lose(format!(
            "a timestamp is read as a plain integer count of {} since 1970-01-01{}; the \
             timestamp type, its unit and time zone are not kept",
            unit_name(unit),
            tz.as_ref().map_or(String::new(), |z| format!(" (time zone {z})"))
        )),
        DataType::Date32 => lose(
            "a date is read as a plain integer count of days since 1970-01-01; the date type \
             is not kept"
                .into(),
        ),
        DataType::Date64 => lose(
            "a date is read as a plain integer count of milliseconds since 1970-01-01; the \
             date type is not kept"
                .into(),
        ),
        DataType::Time32(unit) | DataType::Time64(unit) => lose(format!(
            "a time of day is read as a plain integer count of {} since midnight; the time \
             type and its unit are not kept",
            unit_name(unit)
        )),
        DataType::Duration(unit) => lose(format!(
            "a duration is read as a plain integer count of {}; the duration type and its \
             unit are not kept",
            unit_name(unit)
        )),
        dt @ (DataType::Int8
        | DataType::Int16
        | DataType::Int32
        | DataType::UInt8
        | DataType::UInt16
        | DataType::UInt32) => lose(format!(
            "{} values are read as 64-bit integers (the values are kept, the width is not)",
            dt.to_string().to_lowercase()
        )),
        dt @ (DataType::Float16 | DataType::Float32) => lose(format!(
            "{} values are read as float64 (the values are kept, the width is not)",
            dt.to_string().to_lowercase()
        )),
        DataType::FixedSizeBinary(n) => lose(format!(
            "fixed-size binary values ({n} bytes each) are read as bytes; the fixed width is \
             not kept"
        )),
        DataType::Map(entries, _) => {
            lose(
                "the Arrow map type is not kept: its rows are read as maps of values (written \
                 to Parquet or IPC as tagged JSON text)"
                    .into(),
            );
            if let DataType::Struct(kv) = entries.data_type() {
                for (child, name) in kv.iter().zip(["key", "value"]) {
                    losses_of(child, &format!("{path}.{name}"), out);
                }
            }
        }
        DataType::Dictionary(_, value) => {
            losses_of(&Field::new(field.name(), (**value).clone(), true), path, out)
        }
        // Items of a primitive type are an array of that dtype: nothing is lost (the tensor
        // extension's shape is kept too). Other items are values like columns.
        DataType::List(item) | DataType::LargeList(item) | DataType::FixedSizeList(item, _)
            if crate::kind::dtype_of(item.data_type()).is_none() =>
        {
            losses_of(item, &format!("{path}[]"), out);
        }
        DataType::Struct(children) => {
            for c in children {
                losses_of(c, &format!("{path}.{}", c.name()), out);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn spec(dt: DataType) -> FieldSpec {
        FieldSpec { name: "c".into(), kind: crate::kind::type_name(&Field::new("c", dt, true)) }
    }

    #[test]
    fn type_information_lost_is_stated_and_nothing_else() {
        let ts = DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()));
        let l = read_losses(&spec(ts.clone()));
        assert_eq!(l.len(), 1);
        assert!(l[0].what.contains("microseconds") && l[0].what.contains("UTC"), "{l:?}");
        assert!(read_losses(&spec(DataType::Int32))[0].what.starts_with("int32 values"));
        let nested = DataType::Struct(vec![Field::new("t", ts, true)].into());
        assert_eq!(read_losses(&spec(nested))[0].field, "c.t");
        for kept in [
            DataType::Int64,
            DataType::UInt64,
            DataType::Float64,
            DataType::LargeUtf8,
            DataType::Binary,
            DataType::Dictionary(Box::new(DataType::Int8), Box::new(DataType::Utf8)),
            DataType::List(Arc::new(Field::new("item", DataType::Int8, true))),
        ] {
            assert_eq!(read_losses(&spec(kept.clone())), vec![], "{kept}");
        }
        let other = FieldSpec { name: "x".into(), kind: "int".into() };
        assert!(read_losses(&other).is_empty());
        assert!(reads_as_arrays(&spec(DataType::List(Arc::new(Field::new(
            "item",
            DataType::Float32,
            true
        ))))));
    }
}
