//! Arrow arrays into reel values: how a Parquet or Arrow IPC column reads as a field.
//!
//! | Arrow type | reel value |
//! | --- | --- |
//! | null | null |
//! | boolean | bool |
//! | int8 … int64, uint8 … uint64 | int |
//! | float16, float32, float64 | float |
//! | binary, large binary, binary view, fixed-size binary | bytes |
//! | utf8, large utf8, utf8 view | text (tagged JSON when the field says `reel.type = json`) |
//! | list / large list / fixed-size list of a primitive type, no null items | 1-D array |
//! | `arrow.fixed_shape_tensor` | n-d array of its shape |
//! | reel's generic array struct (`reel.type = ndarray`) | array |
//! | other lists | list |
//! | struct | map with text keys (null children included as null) |
//! | map | map |
//! | dictionary | its value type, looked up |
//! | date, time, timestamp, duration | int (the stored count of days or time units) |
//!
//! Anything else (decimals, unions, intervals, …) is refused when the file is opened,
//! naming the column, unless the column is left out
//! ([`ReadOptions::columns`](crate::ReadOptions::columns),
//! [`skip_columns`](crate::ReadOptions::skip_columns)): columns not selected are never
//! checked. A null in a top-level column means the record lacks that field.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Date64Type, DurationMicrosecondType, DurationMillisecondType,
    DurationNanosecondType, DurationSecondType, Float16Type, Float32Type, Float64Type, Int8Type,
    Int16Type, Int32Type, Int64Type, Time32MillisecondType, Time32SecondType,
    Time64MicrosecondType, Time64NanosecondType, TimestampMicrosecondType,
    TimestampMillisecondType, TimestampNanosecondType, TimestampSecondType, UInt8Type, UInt16Type,
    UInt32Type, UInt64Type,
};
use arrow_array::{Array, ArrowPrimitiveType, RecordBatch};
use arrow_schema::{DataType, Field, Schema, TimeUnit};
use reel_core::{DType, Error, FieldName, FieldSpec, RecordOut, Result, Shape, Value};

use crate::kind::{
    EXTENSION_NAME_KEY, FIXED_SHAPE_TENSOR, REEL_TYPE_KEY, dtype_of, tensor_shape, type_name,
};

/// How one column (or nested child) is read.
#[derive(Debug)]
pub(crate) enum Plan {
    Null,
    Bool,
    Int,
    Float,
    Bytes,
    Str,
    Json,
    /// A list of primitives as a 1-D array (`shape` = the tensor shape for tensors); an
    /// element with null items reads as a list of `item` values instead.
    Array {
        dtype: DType,
        shape: Option<Vec<u64>>,
        item: Box<Plan>,
    },
    NdArray,
    List(Box<Plan>),
    Struct(Vec<(String, Plan)>),
    Map(Box<Plan>, Box<Plan>),
    Dictionary(Box<Plan>),
}

impl Plan {
    /// The plan for the column `field`, or an error naming it when reel has no value for
    /// its type (or a type nested in it, which is named by its path in the column).
    pub(crate) fn for_field(field: &Field) -> Result<Plan> {
        Plan::at(field, field.name(), field.name())
    }

    /// The plan for `field`, at `path` (`prices[]`, `meta.when`) in the column `column`.
    fn at(field: &Field, column: &str, path: &str) -> Result<Plan> {
        let unsupported = |field: &Field| unsupported(field, column, path);
        let tag = field.metadata().get(REEL_TYPE_KEY).map(String::as_str);
        let ext = field.metadata().get(EXTENSION_NAME_KEY).map(String::as_str);
        let items = format!("{path}[]");
        let list_item = |item: &Field| -> Result<Plan> {
            let item_plan = Box::new(Plan::at(item, column, &items)?);
            match dtype_of(item.data_type()) {
                Some(dtype) if tag != Some("list") => {
                    Ok(Plan::Array { dtype, shape: None, item: item_plan })
                }
                _ => Ok(Plan::List(item_plan)),
            }
        };
        Ok(match field.data_type() {
            DataType::Null => Plan::Null,
            DataType::Boolean => Plan::Bool,
            DataType::Int8
            | DataType::Int16
            | DataType::Int32
            | DataType::Int64
            | DataType::UInt8
            | DataType::UInt16
            | DataType::UInt32
            | DataType::UInt64
            | DataType::Date32
            | DataType::Date64
            | DataType::Time32(_)
            | DataType::Time64(_)
            | DataType::Timestamp(..)
            | DataType::Duration(_) => Plan::Int,
            DataType::Float16 | DataType::Float32 | DataType::Float64 => Plan::Float,
            DataType::Binary
            | DataType::LargeBinary
            | DataType::BinaryView
            | DataType::FixedSizeBinary(_) => Plan::Bytes,
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View if tag == Some("json") => {
                Plan::Json
            }
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => Plan::Str,
            DataType::FixedSizeList(item, _) if ext == Some(FIXED_SHAPE_TENSOR) => {
                let dtype = dtype_of(item.data_type()).ok_or_else(|| unsupported(field))?;
                Plan::Array {
                    dtype,
                    shape: Some(tensor_shape(field)?),
                    item: Box::new(Plan::at(item, column, &items)?),
                }
            }
            DataType::List(item) | DataType::LargeList(item) | DataType::FixedSizeList(item, _) => {
                list_item(item)?
            }
            DataType::Struct(_) if tag == Some("ndarray") => Plan::NdArray,
            DataType::Struct(children) => Plan::Struct(
                children
                    .iter()
                    .map(|c| {
                        Ok((
                            c.name().clone(),
                            Plan::at(c, column, &format!("{path}.{}", c.name()))?,
                        ))
                    })
                    .collect::<Result<_>>()?,
            ),
            DataType::Map(entries, _) => match entries.data_type() {
                DataType::Struct(kv) if kv.len() == 2 => Plan::Map(
                    Box::new(Plan::at(&kv[0], column, &format!("{path}.key"))?),
                    Box::new(Plan::at(&kv[1], column, &format!("{path}.value"))?),
                ),
                _ => return Err(unsupported(field)),
            },
            DataType::Dictionary(_, value) => Plan::Dictionary(Box::new(Plan::at(
                &Field::new(field.name(), (**value).clone(), true)
                    .with_metadata(field.metadata().clone()),
                column,
                path,
            )?)),
            _ => return Err(unsupported(field)),
        })
    }
}

/// A column read as a field: its field name, its index in the batches, its plan.
pub(crate) type Column = (FieldName, usize, Plan);

/// The field name, column index and plan of each of `order`'s columns of `schema`, and
/// the fields they declare; a column reel has no value for is refused, naming it.
pub(crate) fn columns_of(
    schema: &Schema,
    order: &[usize],
) -> Result<(Vec<Column>, Vec<FieldSpec>)> {
    let mut columns = Vec::with_capacity(order.len());
    let mut specs = Vec::with_capacity(order.len());
    // Columns become fields by name: two of one name (in the file, or a column selected
    // twice) would make records with a field twice, and a selection by name ambiguous. A
    // set, not a scan per column: a hostile footer may declare 100,000 columns.
    let mut names = std::collections::HashSet::with_capacity(order.len());
    for &i in order {
        let field = schema.field(i);
        if !names.insert(field.name().as_str()) {
            return Err(Error::unsupported(format!(
                "the table has more than one column named {:?}, which records cannot hold \
                 (field names are unique)",
                field.name()
            )));
        }
        columns.push((FieldName::from(field.name().as_str()), i, Plan::for_field(field)?));
        specs.push(FieldSpec { name: field.name().clone(), kind: type_name(field) });
    }
    Ok((columns, specs))
}

/// Decodes row `row` of `batch` into `out`: each column's value under its field name. A
/// null cell leaves the field out (the record lacks it).
pub(crate) fn decode_row(
    columns: &[Column],
    batch: &RecordBatch,
    row: usize,
    out: &mut RecordOut<'_>,
) -> Result<()> {
    for (name, col, plan) in columns {
        let array = batch.column(*col);
        if array.is_null(row) || array.data_type() == &DataType::Null {
            continue;
        }
        let v = value(plan, array.as_ref(), row, out)
            .map_err(|e| Error::new(e.kind(), format!("column {name:?}: {}", e.message())))?;
        // A cell whose key is valid but points at a null dictionary value (IPC allows
        // one) is a null cell too.
        if matches!(v, Value::Null) {
            continue;
        }
        out.push_named(name, v);
    }
    Ok(())
}

/// Runs a step of the Arrow decoders, which can panic on arrays that break their own
/// invariants (a damaged file, a producer's bad buffers): a panic becomes an
/// [`ErrorKind::Corrupt`](reel_core::ErrorKind::Corrupt) error.
pub(crate) fn catch_panics<T>(step: impl FnOnce() -> Result<T>) -> Result<T> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(step)) {
        Ok(result) => result,
        Err(_) => Err(Error::corrupt("the Arrow/Parquet decoder failed on damaged data")),
    }
}

/// Reel has no value for `field`'s type, at `path` in `column`: the column is named, and
/// the path when the type is nested in it (`list<decimal>` names the list column, not its
/// item field).
fn unsupported(field: &Field, column: &str, path: &str) -> Error {
    let at = if path == column { String::new() } else { format!(" (at {path})") };
    Error::unsupported(format!(
        "column {column:?} has Arrow type {}{at}, which reel has no value for (leave the \
         column out to read the others)",
        field.data_type()
    ))
}

fn bad_array(what: &str) -> Error {
    Error::corrupt(format!("Arrow array does not match its schema: {what}"))
}

/// Reads element `row` of `array` (not null) following `plan`.
pub(crate) fn value(
    plan: &Plan,
    array: &dyn Array,
    row: usize,
    out: &mut RecordOut<'_>,
) -> Result<Value> {
    if array.is_null(row) {
        return Ok(Value::Null);
    }
    Ok(match plan {
        Plan::Null => Value::Null,
        Plan::Bool => {
            Value::Bool(array.as_boolean_opt().ok_or_else(|| bad_array("boolean"))?.value(row))
        }
        Plan::Int => int_value(array, row)?,
        Plan::Float => Value::Float(match array.data_type() {
            DataType::Float16 => prim::<Float16Type>(array, row)?.to_f64(),
            DataType::Float32 => prim::<Float32Type>(array, row)? as f64,
            _ => prim::<Float64Type>(array, row)?,
        }),
        Plan::Bytes => Value::Bytes(out.append(bytes_at(array, row)?)),
        Plan::Str => {
            let s = str_at(array, row)?;
            out.append_str(s)
        }
        Plan::Json => reel_core::tagged_json::decode(
            str_at(array, row)?.as_bytes(),
            out,
            reel_core::Limits::default().max_nesting,
        )?,
        Plan::Array { dtype, shape, item } => {
            let (values, start, len) = list_slice(array, row)?;
            if values.null_count() > 0 && (start..start + len).any(|k| values.is_null(k)) {
                let mut items = Vec::with_capacity(len);
                for k in start..start + len {
                    items.push(value(item, values.as_ref(), k, out)?);
                }
                return Ok(Value::List(items));
            }
            let data = element_bytes(values.as_ref(), *dtype, start, len, out)?;
            let shape = match shape {
                Some(s) => Shape::new(s),
                None => Shape::vector(len as u64),
            };
            out.array_value(*dtype, shape, data)?
        }
        Plan::NdArray => {
            let s = array.as_struct_opt().ok_or_else(|| bad_array("ndarray struct"))?;
            let (Some(d), Some(sh), Some(b)) =
                (s.column_by_name("dtype"), s.column_by_name("shape"), s.column_by_name("data"))
            else {
                return Err(bad_array("ndarray struct children"));
            };
            let dtype = DType::from_numpy_str(str_at(d.as_ref(), row)?)
                .map(|(d, _)| d)
                .ok_or_else(|| Error::corrupt("ndarray column names an unknown dtype"))?;
            let (dims, start, len) = list_slice(sh.as_ref(), row)?;
            let dims = dims.as_primitive_opt::<UInt64Type>().ok_or_else(|| bad_array("shape"))?;
            let shape: Vec<u64> = (start..start + len).map(|k| dims.value(k)).collect();
            let span = out.append(bytes_at(b.as_ref(), row)?);
            out.array_value(dtype, Shape::new(&shape), span)?
        }
        Plan::List(item) => {
            let (values, start, len) = list_slice(array, row)?;
            let mut items = Vec::with_capacity(len);
            for k in start..start + len {
                items.push(value(item, values.as_ref(), k, out)?);
            }
            Value::List(items)
        }
        Plan::Struct(children) => {
            let s = array.as_struct_opt().ok_or_else(|| bad_array("struct"))?;
            let mut entries = Vec::with_capacity(children.len());
            for ((name, plan), col) in children.iter().zip(s.columns()) {
                let key = out.append_str(name);
                entries.push((key, value(plan, col.as_ref(), row, out)?));
            }
            Value::Map(entries)
        }
        Plan::Map(kp, vp) => {
            let m = array.as_map_opt().ok_or_else(|| bad_array("map"))?;
            let offsets = m.value_offsets();
            let (start, end) = (offsets[row] as usize, offsets[row + 1] as usize);
            let (keys, values) = (m.keys(), m.values());
            let mut entries = Vec::with_capacity(end.saturating_sub(start));
            for k in start..end {
                entries
                    .push((value(kp, keys.as_ref(), k, out)?, value(vp, values.as_ref(), k, out)?));
            }
            Value::Map(entries)
        }
        Plan::Dictionary(inner) => {
            let d = array.as_any_dictionary_opt().ok_or_else(|| bad_array("dictionary"))?;
            // This row's key alone (`normalized_keys` would convert every key of the array,
            // for every row, and clamps out-of-range keys instead of reporting them).
            let key = match int_value(d.keys(), row)? {
                Value::Int(k) => usize::try_from(k).ok(),
                Value::UInt(k) => usize::try_from(k).ok(),
                _ => None,
            }
            .filter(|&k| k < d.values().len())
            .ok_or_else(|| bad_array("dictionary key out of range"))?;
            value(inner, d.values().as_ref(), key, out)?
        }
    })
}

fn prim<T: ArrowPrimitiveType>(array: &dyn Array, row: usize) -> Result<T::Native> {
    Ok(array.as_primitive_opt::<T>().ok_or_else(|| bad_array("primitive"))?.value(row))
}

fn int_value(array: &dyn Array, row: usize) -> Result<Value> {
    Ok(match array.data_type() {
        DataType::Int8 => Value::Int(prim::<Int8Type>(array, row)?.into()),
        DataType::Int16 => Value::Int(prim::<Int16Type>(array, row)?.into()),
        DataType::Int32 => Value::Int(prim::<Int32Type>(array, row)?.into()),
        DataType::Int64 => Value::Int(prim::<Int64Type>(array, row)?),
        DataType::UInt8 => Value::Int(prim::<UInt8Type>(array, row)?.into()),
        DataType::UInt16 => Value::Int(prim::<UInt16Type>(array, row)?.into()),
        DataType::UInt32 => Value::Int(prim::<UInt32Type>(array, row)?.into()),
        DataType::UInt64 => Value::from_u64(prim::<UInt64Type>(array, row)?),
        DataType::Date32 => Value::Int(prim::<Date32Type>(array, row)?.into()),
        DataType::Date64 => Value::Int(prim::<Date64Type>(array, row)?),
        DataType::Time32(TimeUnit::Second) => {
            Value::Int(prim::<Time32SecondType>(array, row)?.into())
        }
        DataType::Time32(_) => Value::Int(prim::<Time32MillisecondType>(array, row)?.into()),
        DataType::Time64(TimeUnit::Microsecond) => {
            Value::Int(prim::<Time64MicrosecondType>(array, row)?)
        }
        DataType::Time64(_) => Value::Int(prim::<Time64NanosecondType>(array, row)?),
        DataType::Timestamp(TimeUnit::Second, _) => {
            Value::Int(prim::<TimestampSecondType>(array, row)?)
        }
        DataType::Timestamp(TimeUnit::Millisecond, _) => {
            Value::Int(prim::<TimestampMillisecondType>(array, row)?)
        }
        DataType::Timestamp(TimeUnit::Microsecond, _) => {
            Value::Int(prim::<TimestampMicrosecondType>(array, row)?)
        }
        DataType::Timestamp(TimeUnit::Nanosecond, _) => {
            Value::Int(prim::<TimestampNanosecondType>(array, row)?)
        }
        DataType::Duration(TimeUnit::Second) => Value::Int(prim::<DurationSecondType>(array, row)?),
        DataType::Duration(TimeUnit::Millisecond) => {
            Value::Int(prim::<DurationMillisecondType>(array, row)?)
        }
        DataType::Duration(TimeUnit::Microsecond) => {
            Value::Int(prim::<DurationMicrosecondType>(array, row)?)
        }
        DataType::Duration(TimeUnit::Nanosecond) => {
            Value::Int(prim::<DurationNanosecondType>(array, row)?)
        }
        _ => return Err(bad_array("integer")),
    })
}

fn bytes_at(array: &dyn Array, row: usize) -> Result<&[u8]> {
    if let Some(a) = array.as_binary_opt::<i32>() {
        return Ok(a.value(row));
    }
    if let Some(a) = array.as_binary_opt::<i64>() {
        return Ok(a.value(row));
    }
    if let Some(a) = array.as_binary_view_opt() {
        return Ok(a.value(row));
    }
    if let Some(a) = array.as_fixed_size_binary_opt() {
        return Ok(a.value(row));
    }
    Err(bad_array("binary"))
}

fn str_at(array: &dyn Array, row: usize) -> Result<&str> {
    if let Some(a) = array.as_string_opt::<i32>() {
        return Ok(a.value(row));
    }
    if let Some(a) = array.as_string_opt::<i64>() {
        return Ok(a.value(row));
    }
    if let Some(a) = array.as_string_view_opt() {
        return Ok(a.value(row));
    }
    Err(bad_array("utf8"))
}

/// The child values of list element `row`, with the element's start and length in them.
fn list_slice(array: &dyn Array, row: usize) -> Result<(Arc<dyn Array>, usize, usize)> {
    if let Some(l) = array.as_list_opt::<i32>() {
        let o = l.value_offsets();
        return Ok((l.values().clone(), o[row] as usize, (o[row + 1] - o[row]) as usize));
    }
    if let Some(l) = array.as_list_opt::<i64>() {
        let o = l.value_offsets();
        return Ok((l.values().clone(), o[row] as usize, (o[row + 1] - o[row]) as usize));
    }
    if let Some(l) = array.as_fixed_size_list_opt() {
        let n = l.value_length() as usize;
        return Ok((l.values().clone(), row * n, n));
    }
    Err(bad_array("list"))
}

/// Appends elements `start..start + len` of the primitive array `values` as little-endian
/// bytes of `dtype`. Null items (which a plan only allows where the schema said none) read
/// as zero.
fn element_bytes(
    values: &dyn Array,
    dtype: DType,
    start: usize,
    len: usize,
    out: &mut RecordOut<'_>,
) -> Result<reel_core::Span> {
    if start.checked_add(len).is_none_or(|end| end > values.len()) {
        return Err(bad_array("list offsets beyond the values"));
    }
    let size = dtype.item_size() as usize;
    if let DType::Bool = dtype {
        let b = values.as_boolean_opt().ok_or_else(|| bad_array("boolean items"))?;
        return out.append_with(len, |_, dst| {
            for (k, d) in dst.iter_mut().enumerate() {
                *d = u8::from(b.value(start + k));
            }
            Ok(())
        });
    }
    let from = start * size;
    let bytes = primitive_bytes(values)
        .ok_or_else(|| bad_array("no values buffer"))?
        .get(from..from + len * size)
        .ok_or_else(|| bad_array("values buffer too short"))?;
    Ok(out.append(bytes))
}

/// The values of a primitive array as raw bytes, from its first value (the buffer is
/// already sliced to the array's offset). Borrowed: called per row, so no `ArrayData` is
/// built.
fn primitive_bytes(values: &dyn Array) -> Option<&[u8]> {
    fn raw<T: ArrowPrimitiveType>(values: &dyn Array) -> Option<&[u8]> {
        Some(values.as_primitive_opt::<T>()?.values().inner().as_slice())
    }
    match values.data_type() {
        DataType::Int8 => raw::<Int8Type>(values),
        DataType::Int16 => raw::<Int16Type>(values),
        DataType::Int32 => raw::<Int32Type>(values),
        DataType::Int64 => raw::<Int64Type>(values),
        DataType::UInt8 => raw::<UInt8Type>(values),
        DataType::UInt16 => raw::<UInt16Type>(values),
        DataType::UInt32 => raw::<UInt32Type>(values),
        DataType::UInt64 => raw::<UInt64Type>(values),
        DataType::Float16 => raw::<Float16Type>(values),
        DataType::Float32 => raw::<Float32Type>(values),
        DataType::Float64 => raw::<Float64Type>(values),
        _ => None,
    }
}
