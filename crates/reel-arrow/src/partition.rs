//! Hive partitions: the `key=value` directory names above a part (`year=2024/lang=en/
//! part-0.parquet`) as columns of its rows, as `pyarrow.dataset` (`partitioning="hive"`,
//! what `pyarrow.parquet.read_table` of a directory uses), Spark, Hive and DuckDB read them.
//!
//! The rules are pyarrow's, so that a partitioned table reads as the same rows in both:
//!
//! * A directory name is a key when it has a `=` after at least one character: the key is
//!   what comes before the first `=`, the value what comes after, both percent-decoded
//!   (`x%20y` is `x y`; `write_dataset` encodes values that way, Spark names too). Other
//!   directory names (`data/`, `train/`) name no key.
//! * The value `__HIVE_DEFAULT_PARTITION__` (what Hive and Spark write for a null key),
//!   spelled so once decoded, is a null cell.
//! * A key's column is `int32` when every non-null value of it, across all parts, is a
//!   32-bit integer (decimal, or `0x` and up to 8 hexadecimal digits, as pyarrow casts
//!   text), `null` when none is non-null, and `utf8` otherwise.
//! * Columns come in the order their keys first appear, part after part; a part under no
//!   directory of a key has a null cell in its column.

use std::sync::Arc;

use arrow_array::{ArrayRef, Int32Array, NullArray, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use reel_core::{Error, Result};

/// The value Hive and Spark write for a null partition key.
pub const HIVE_NULL_VALUE: &str = "__HIVE_DEFAULT_PARTITION__";

/// Directory levels a dataset's parts may lie below its root. Partitioned tables use a
/// few; more is a symbolic link pointing back up the tree (which would otherwise be walked
/// until memory runs out).
pub const MAX_PARTITION_DEPTH: usize = 16;

/// The Hive partition columns of each part, from the directory each part lies in relative
/// to the dataset's root (`"year=2024/lang=en"`, `""` for the root itself; `/` separates
/// levels): for every part a one-row batch holding its keys' values, all parts' batches
/// with one schema, or `None` when no part lies under a `key=value` directory.
///
/// A directory path naming a key twice (`a=1/a=2`) and a value that is not UTF-8 once
/// percent-decoded are [`Schema`](reel_core::ErrorKind::Schema) errors naming the
/// directory.
pub fn hive_partition_columns(dirs: &[&str]) -> Result<Option<Vec<RecordBatch>>> {
    // keys[k]: the name of the k-th key met; cells[p][k]: part p's value of it.
    let mut keys: Vec<String> = Vec::new();
    let mut cells: Vec<Vec<Option<String>>> = Vec::with_capacity(dirs.len());
    for dir in dirs {
        let mut row: Vec<Option<String>> = vec![None; keys.len()];
        let mut named: Vec<usize> = Vec::new();
        for segment in dir.split('/') {
            let Some((key, value)) = segment.split_once('=').filter(|(k, _)| !k.is_empty()) else {
                continue;
            };
            // Spark escapes a column name as it escapes a value (`a:b` is `a%3Ab`).
            let key = percent_decoded(key, "partition key", dir)?;
            let k = match keys.iter().position(|known| *known == key) {
                Some(k) => k,
                None => {
                    keys.push(key.clone());
                    row.push(None);
                    keys.len() - 1
                }
            };
            if named.contains(&k) {
                return Err(Error::schema(format!(
                    "the directory {dir:?} names the partition key {key:?} twice"
                )));
            }
            named.push(k);
            row[k] = decode_value(value, dir)?;
        }
        cells.push(row);
    }
    if keys.is_empty() {
        return Ok(None);
    }
    let types: Vec<DataType> = (0..keys.len())
        .map(|k| {
            let mut values = cells.iter().filter_map(|row| row.get(k).cloned().flatten());
            let mut any = false;
            let all_int = values.all(|v| {
                any = true;
                is_int32(&v)
            });
            match (any, all_int) {
                (false, _) => DataType::Null,
                (true, true) => DataType::Int32,
                (true, false) => DataType::Utf8,
            }
        })
        .collect();
    let schema = Arc::new(Schema::new(
        keys.iter().zip(&types).map(|(k, t)| Field::new(k, t.clone(), true)).collect::<Vec<_>>(),
    ));
    let batches = cells
        .into_iter()
        .map(|row| {
            let columns: Vec<ArrayRef> = types
                .iter()
                .enumerate()
                .map(|(k, t)| {
                    let cell = row.get(k).cloned().flatten();
                    let array: ArrayRef = match t {
                        DataType::Int32 => {
                            Arc::new(Int32Array::from(vec![cell.as_deref().and_then(parse_int32)]))
                        }
                        DataType::Utf8 => Arc::new(StringArray::from(vec![cell])),
                        _ => Arc::new(NullArray::new(1)),
                    };
                    array
                })
                .collect();
            RecordBatch::try_new(schema.clone(), columns)
                .map_err(|e| Error::schema(format!("partition columns: {e}")))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Some(batches))
}

/// A partition value as an `int32`, as pyarrow's cast from text reads one: an optional `-`
/// and decimal digits (`01` is 1; `+5` and ` 5` are text), or `0x` and at most 8
/// hexadecimal digits, their bits (`0x10` is 16, `0xFFFFFFFF` is -1; `-0x10` is text).
fn parse_int32(value: &str) -> Option<i32> {
    if let Some(hex) = value.strip_prefix("0x").or_else(|| value.strip_prefix("0X")) {
        if hex.is_empty() || hex.len() > 8 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        return u32::from_str_radix(hex, 16).ok().map(|bits| bits as i32);
    }
    if value.starts_with('+') {
        return None;
    }
    value.parse::<i32>().ok()
}

/// Whether a partition value reads as an `int32` ([`parse_int32`]).
fn is_int32(value: &str) -> bool {
    parse_int32(value).is_some()
}

/// A key's value as the directory name spells it: percent-decoded, or null (the null
/// marker is recognised once decoded, as pyarrow recognises it).
fn decode_value(value: &str, dir: &str) -> Result<Option<String>> {
    let value = percent_decoded(value, "partition value", dir)?;
    Ok((value != HIVE_NULL_VALUE).then_some(value))
}

/// `text` of a directory name, percent-decoded; `what` it is names it in the error when
/// the decoded bytes are not UTF-8.
fn percent_decoded(text: &str, what: &str, dir: &str) -> Result<String> {
    match percent_encoding::percent_decode_str(text).decode_utf8() {
        Ok(decoded) => Ok(decoded.into_owned()),
        Err(_) => Err(Error::schema(format!(
            "the {what} {text:?} in the directory {dir:?} is not UTF-8 once percent-decoded"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::Array;

    fn cell(batch: &RecordBatch, key: &str) -> Option<String> {
        let column = batch.column_by_name(key)?;
        if column.is_null(0) {
            return None;
        }
        Some(arrow_cast::display::array_value_to_string(column, 0).unwrap_or_default())
    }

    #[test]
    fn keys_become_columns_typed_over_all_parts() {
        let batches = hive_partition_columns(&[
            "",
            "year=2020/month=1",
            "year=2021/month=x%20y",
            "data/year=__HIVE_DEFAULT_PARTITION__",
        ])
        .unwrap()
        .unwrap();
        assert_eq!(batches.len(), 4);
        let schema = batches[0].schema();
        let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
        assert_eq!(names, ["year", "month"]);
        assert_eq!(schema.field(0).data_type(), &DataType::Int32);
        assert_eq!(schema.field(1).data_type(), &DataType::Utf8);
        assert_eq!(cell(&batches[0], "year"), None);
        assert_eq!(cell(&batches[1], "year").as_deref(), Some("2020"));
        assert_eq!(cell(&batches[1], "month").as_deref(), Some("1"));
        assert_eq!(cell(&batches[2], "month").as_deref(), Some("x y"));
        assert_eq!(cell(&batches[3], "year"), None);
        assert_eq!(cell(&batches[3], "month"), None);
    }

    #[test]
    fn a_value_too_large_for_int32_makes_the_key_text_and_null_only_keys_null() {
        let batches =
            hive_partition_columns(&["n=1/z=__HIVE_DEFAULT_PARTITION__", "n=99999999999"])
                .unwrap()
                .unwrap();
        let schema = batches[0].schema();
        assert_eq!(schema.field(0).data_type(), &DataType::Utf8);
        assert_eq!(schema.field(1).data_type(), &DataType::Null);
        assert_eq!(cell(&batches[1], "n").as_deref(), Some("99999999999"));
        let signed = hive_partition_columns(&["k=+5", "k=2"]).unwrap().unwrap();
        assert_eq!(signed[0].schema().field(0).data_type(), &DataType::Utf8);
        let padded = hive_partition_columns(&["k=01", "k=-2"]).unwrap().unwrap();
        assert_eq!(padded[0].schema().field(0).data_type(), &DataType::Int32);
        assert_eq!(cell(&padded[0], "k").as_deref(), Some("1"));
        // Hexadecimal, as pyarrow casts text: `0x` and up to 8 digits, their bits.
        let hex = hive_partition_columns(&["k=0x10", "k=0XfFfFfFfF", "k=7"]).unwrap().unwrap();
        assert_eq!(hex[0].schema().field(0).data_type(), &DataType::Int32);
        assert_eq!(cell(&hex[0], "k").as_deref(), Some("16"));
        assert_eq!(cell(&hex[1], "k").as_deref(), Some("-1"));
        for text in ["-0x10", "0x", "0x123456789", "0xg"] {
            let batches = hive_partition_columns(&[&format!("k={text}")]).unwrap().unwrap();
            assert_eq!(batches[0].schema().field(0).data_type(), &DataType::Utf8, "{text}");
        }
    }

    #[test]
    fn directories_without_keys_name_none_and_bad_ones_are_refused() {
        assert!(hive_partition_columns(&["", "data", "train/=x"]).unwrap().is_none());
        let twice = hive_partition_columns(&["a=1/a=2"]).unwrap_err();
        assert!(twice.message().contains("twice"), "{twice}");
        let bad = hive_partition_columns(&["a=%ff"]).unwrap_err();
        assert!(bad.message().contains("not UTF-8"), "{bad}");
        let bad = hive_partition_columns(&["a%ff=1"]).unwrap_err();
        assert!(bad.message().contains("partition key"), "{bad}");
    }

    #[test]
    fn key_names_are_percent_decoded_and_an_encoded_null_is_null() {
        let batches =
            hive_partition_columns(&["a%3Ab=1/k=%5F%5FHIVE_DEFAULT_PARTITION%5F%5F", "a:b=2/k=x"])
                .unwrap()
                .unwrap();
        let schema = batches[0].schema();
        let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
        assert_eq!(names, ["a:b", "k"], "one key, however its name is spelled");
        assert_eq!(cell(&batches[0], "k"), None);
        assert_eq!(cell(&batches[1], "a:b").as_deref(), Some("2"));
    }
}
