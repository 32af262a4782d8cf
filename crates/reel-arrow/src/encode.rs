//! Records into Arrow arrays: one builder per column, filled record by record, emptied into
//! a `RecordBatch` whenever the caller wants a batch.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Float16Type, Float32Type, Float64Type, Int8Type, Int16Type, Int32Type, Int64Type, UInt8Type,
    UInt16Type, UInt32Type, UInt64Type,
};
use arrow_array::{Array, ArrowPrimitiveType};
use arrow_array::{
    ArrayRef, BinaryArray, BooleanArray, FixedSizeListArray, LargeBinaryArray, LargeStringArray,
    ListArray, MapArray, NullArray, PrimitiveArray, RecordBatch, StringArray, StructArray,
};
use arrow_buffer::{
    BooleanBufferBuilder, Buffer, MutableBuffer, NullBuffer, NullBufferBuilder, OffsetBuffer,
    ScalarBuffer,
};
use arrow_schema::{DataType, Field, FieldRef, Fields, Schema, SchemaRef};
use reel_core::{DType, Error, Location, RecordRef, Result, ValueRef};

use crate::kind::{Kind, element_field, ndarray_fields, vector_item_field};

// Array values are little-endian (reel's record model); Arrow buffers are native-endian.
// Copying one into the other unchanged is only right on little-endian machines.
#[cfg(not(target_endian = "little"))]
compile_error!("reel-arrow copies little-endian array bytes into Arrow buffers as they are");

/// Why a value did not fit its column; the caller adds the field path and record.
fn misfit(kind: &Kind, value: ValueRef<'_>) -> String {
    let want = match kind {
        Kind::Null => "null".to_string(),
        Kind::Bool => "bool".into(),
        Kind::Int { huge: true, .. } => "a non-negative integer (uint64)".into(),
        Kind::Int { .. } => "an integer within int64".into(),
        Kind::Float => "float".into(),
        Kind::Bytes => "bytes".into(),
        Kind::Str => "text".into(),
        Kind::Vector(d) => format!("a 1-D {d} array"),
        Kind::Tensor(d, s) => format!("a {d} array of shape {s:?}"),
        Kind::NdArray => "an array".into(),
        Kind::List(_) => "a list".into(),
        Kind::Struct(_) => "a map with text keys".into(),
        Kind::Json => "anything".into(),
    };
    let got = match value {
        ValueRef::Array(a) => format!("a {} array of shape {:?}", a.dtype, a.shape),
        ValueRef::Int(i) => format!("the integer {i}"),
        ValueRef::UInt(u) => format!("the integer {u}"),
        other => format!("a {}", other.kind_name()),
    };
    format!("the column holds {want} but this record has {got}")
}

/// A builder for one column (or one nested child) of a known kind.
enum Col {
    Null(usize),
    Bool(BooleanBufferBuilder, NullBufferBuilder),
    Int(Vec<i64>, NullBufferBuilder),
    UInt(Vec<u64>, NullBufferBuilder),
    Float(Vec<f64>, NullBufferBuilder),
    /// Bytes, text and tagged JSON: offsets into one data buffer.
    Var {
        text: bool,
        json: bool,
        large: bool,
        data: Vec<u8>,
        offsets: Vec<i64>,
        valid: NullBufferBuilder,
    },
    /// 1-D arrays: element offsets into raw little-endian bytes.
    Vector {
        dtype: DType,
        data: MutableBuffer,
        offsets: Vec<i32>,
        valid: NullBufferBuilder,
        /// Which elements are null: only a row that is a list of numbers with null items
        /// (how a Parquet list of numbers with a null item reads) has any, and the
        /// builder allocates nothing until one comes.
        items_valid: NullBufferBuilder,
    },
    /// Fixed-shape tensors: raw bytes, one fixed-size slot per row (zeros for nulls).
    Tensor {
        dtype: DType,
        shape: Vec<u64>,
        data: MutableBuffer,
        valid: NullBufferBuilder,
    },
    /// Generic arrays: dtype text, shape list, bytes.
    NdArray {
        dtype: Box<Col>,
        shape: Vec<u64>,
        shape_offsets: Vec<i32>,
        data: Box<Col>,
        valid: NullBufferBuilder,
        large: bool,
    },
    List {
        item: Box<Col>,
        item_field: FieldRef,
        offsets: Vec<i32>,
        valid: NullBufferBuilder,
    },
    /// Maps (a schema asked for an Arrow `map`): each row's entries, their keys and values
    /// built as the kinds the target's key and value types read as, cast with the column.
    Map {
        keys: Box<Col>,
        values: Box<Col>,
        /// The entries' struct field, of the types built.
        entries: FieldRef,
        sorted: bool,
        offsets: Vec<i32>,
        valid: NullBufferBuilder,
    },
    Struct {
        fields: Fields,
        children: Vec<Col>,
        valid: NullBufferBuilder,
        len: usize,
    },
}

/// The elements of a 1-D array of a primitive dtype as the values a list of them holds;
/// `None` for other arrays.
fn array_items(a: reel_core::ArrayRef<'_>) -> Option<Vec<ValueRef<'static>>> {
    if a.shape.len() != 1 {
        return None;
    }
    macro_rules! as_values {
        ($($t:ty => $make:expr),* $(,)?) => {$(
            if let Some(values) = a.values::<$t>() {
                return Some(values.map($make).collect());
            }
        )*};
    }
    as_values!(
        i8 => |x| ValueRef::Int(i64::from(x)),
        i16 => |x| ValueRef::Int(i64::from(x)),
        i32 => |x| ValueRef::Int(i64::from(x)),
        i64 => ValueRef::Int,
        u8 => |x| ValueRef::Int(i64::from(x)),
        u16 => |x| ValueRef::Int(i64::from(x)),
        u32 => |x| ValueRef::Int(i64::from(x)),
        u64 => ValueRef::UInt,
        f32 => |x| ValueRef::Float(f64::from(x)),
        f64 => ValueRef::Float,
        bool => ValueRef::Bool,
    );
    if a.dtype == reel_core::DType::F16 {
        let bits = a.data.chunks_exact(2).map(|b| u16::from_le_bytes([b[0], b[1]]));
        return Some(bits.map(|b| ValueRef::Float(f64::from(reel_core::f16_to_f32(b)))).collect());
    }
    None
}

impl Col {
    fn new(kind: &Kind, large: bool) -> Col {
        let valid = || NullBufferBuilder::new(0);
        match kind {
            Kind::Null => Col::Null(0),
            Kind::Bool => Col::Bool(BooleanBufferBuilder::new(0), valid()),
            Kind::Int { negative: false, huge: true } => Col::UInt(Vec::new(), valid()),
            // Integers beyond both int64 and uint64's ranges: tagged JSON text, as `to_field` says.
            Kind::Int { negative: true, huge: true } => Col::var(true, true, large),
            Kind::Int { .. } => Col::Int(Vec::new(), valid()),
            Kind::Float => Col::Float(Vec::new(), valid()),
            Kind::Bytes => Col::var(false, false, large),
            Kind::Str => Col::var(true, false, large),
            Kind::Json => Col::var(true, true, large),
            Kind::Vector(dtype) => Col::Vector {
                dtype: *dtype,
                data: MutableBuffer::new(0),
                offsets: vec![0],
                valid: valid(),
                items_valid: valid(),
            },
            Kind::Tensor(dtype, shape) => Col::Tensor {
                dtype: *dtype,
                shape: shape.clone(),
                data: MutableBuffer::new(0),
                valid: valid(),
            },
            Kind::NdArray => Col::NdArray {
                dtype: Box::new(Col::var(true, false, false)),
                shape: Vec::new(),
                shape_offsets: vec![0],
                data: Box::new(Col::var(false, false, large)),
                valid: valid(),
                large,
            },
            Kind::List(item) => Col::List {
                item: Box::new(Col::new(item, large)),
                item_field: Arc::new(item.to_field("item", large)),
                offsets: vec![0],
                valid: valid(),
            },
            // As `Kind::to_field` says: no keys, no struct (Parquet cannot write one).
            Kind::Struct(children) if children.is_empty() => Col::var(true, true, large),
            Kind::Struct(children) => Col::Struct {
                fields: children.iter().map(|(n, k)| Arc::new(k.to_field(n, large))).collect(),
                children: children.iter().map(|(_, k)| Col::new(k, large)).collect(),
                valid: valid(),
                len: 0,
            },
        }
    }

    fn var(text: bool, json: bool, large: bool) -> Col {
        Col::Var {
            text,
            json,
            large,
            data: Vec::new(),
            offsets: vec![0],
            valid: NullBufferBuilder::new(0),
        }
    }

    /// Bytes held, for batch sizing.
    fn bytes(&self) -> usize {
        match self {
            Col::Null(_) => 0,
            Col::Bool(b, _) => b.len() / 8,
            Col::Int(v, _) => v.len() * 8,
            Col::UInt(v, _) => v.len() * 8,
            Col::Float(v, _) => v.len() * 8,
            Col::Var { data, offsets, .. } => data.len() + offsets.len() * 8,
            Col::Vector { data, offsets, .. } => data.len() + offsets.len() * 4,
            Col::Tensor { data, .. } => data.len(),
            Col::NdArray { dtype, shape, data, .. } => {
                dtype.bytes() + shape.len() * 8 + data.bytes()
            }
            Col::List { item, offsets, .. } => item.bytes() + offsets.len() * 4,
            Col::Map { keys, values, offsets, .. } => {
                keys.bytes() + values.bytes() + offsets.len() * 4
            }
            Col::Struct { children, .. } => children.iter().map(Col::bytes).sum(),
        }
    }

    /// A column of maps built for the Arrow `map` type `target` (its entries field and
    /// whether its keys are sorted), and the type it is built as: the same map of the
    /// types its key and value types read as (`int32` values are built as `int64` and
    /// cast back).
    fn map_for(entries: &Field, sorted: bool, large: bool) -> Option<(Col, DataType)> {
        let DataType::Struct(children) = entries.data_type() else { return None };
        let [key, value] = &children[..] else { return None };
        let (key_kind, value_kind) = (Kind::read_of(key), Kind::read_of(value));
        let built_children = Fields::from(vec![
            key_kind.to_field(key.name(), large).with_nullable(false),
            value_kind.to_field(value.name(), large),
        ]);
        let built = Arc::new(Field::new(entries.name(), DataType::Struct(built_children), false));
        let col = Col::Map {
            keys: Box::new(Col::new(&key_kind, large)),
            values: Box::new(Col::new(&value_kind, large)),
            entries: built.clone(),
            sorted,
            offsets: vec![0],
            valid: NullBufferBuilder::new(0),
        };
        Some((col, DataType::Map(built, sorted)))
    }

    /// Appends a null.
    fn push_null(&mut self) {
        match self {
            Col::Null(n) => *n += 1,
            Col::Bool(b, v) => {
                b.append(false);
                v.append_null();
            }
            Col::Int(x, v) => {
                x.push(0);
                v.append_null();
            }
            Col::UInt(x, v) => {
                x.push(0);
                v.append_null();
            }
            Col::Float(x, v) => {
                x.push(0.0);
                v.append_null();
            }
            Col::Var { data, offsets, valid, .. } => {
                offsets.push(data.len() as i64);
                valid.append_null();
            }
            Col::Vector { offsets, valid, .. } => {
                offsets.push(offsets.last().copied().unwrap_or(0));
                valid.append_null();
            }
            Col::Tensor { dtype, shape, data, valid } => {
                let n = shape.iter().product::<u64>() * dtype.item_size();
                data.extend_zeros(n as usize);
                valid.append_null();
            }
            Col::NdArray { dtype, shape_offsets, data, valid, .. } => {
                dtype.push_null_as_empty();
                shape_offsets.push(shape_offsets.last().copied().unwrap_or(0));
                data.push_null_as_empty();
                valid.append_null();
            }
            Col::Map { offsets, valid, .. } => {
                offsets.push(offsets.last().copied().unwrap_or(0));
                valid.append_null();
            }
            Col::List { offsets, valid, .. } => {
                offsets.push(offsets.last().copied().unwrap_or(0));
                valid.append_null();
            }
            Col::Struct { children, valid, len, .. } => {
                for c in children {
                    c.push_null();
                }
                valid.append_null();
                *len += 1;
            }
        }
    }

    /// Appends an empty, valid value (used under a null generic-array row, whose children
    /// are not nullable).
    fn push_null_as_empty(&mut self) {
        if let Col::Var { data, offsets, valid, .. } = self {
            offsets.push(data.len() as i64);
            valid.append_non_null();
        }
    }

    /// Appends `value`; on a misfit returns the reason and the path below this column.
    fn push(&mut self, value: ValueRef<'_>) -> std::result::Result<(), (String, String)> {
        if let ValueRef::Null = value {
            self.push_null();
            return Ok(());
        }
        let here = |kind: &Kind| Err((String::new(), misfit(kind, value)));
        match self {
            Col::Null(_) => return here(&Kind::Null),
            Col::Bool(b, v) => match value {
                ValueRef::Bool(x) => {
                    b.append(x);
                    v.append_non_null();
                }
                _ => return here(&Kind::Bool),
            },
            Col::Int(x, v) => match value.as_i64() {
                Some(i) if !matches!(value, ValueRef::Float(_)) => {
                    x.push(i);
                    v.append_non_null();
                }
                _ => return here(&Kind::Int { negative: true, huge: false }),
            },
            Col::UInt(x, v) => match value {
                ValueRef::UInt(u) => {
                    x.push(u);
                    v.append_non_null();
                }
                ValueRef::Int(i) if i >= 0 => {
                    x.push(i as u64);
                    v.append_non_null();
                }
                _ => return here(&Kind::Int { negative: false, huge: true }),
            },
            Col::Float(x, v) => match value {
                ValueRef::Float(f) => {
                    x.push(f);
                    v.append_non_null();
                }
                _ => return here(&Kind::Float),
            },
            Col::Var { text, json, data, offsets, valid, .. } => {
                match (value, *text, *json) {
                    (v, _, true) => reel_core::tagged_json::encode(v, data),
                    (ValueRef::Bytes(b), false, false) => data.extend_from_slice(b),
                    (ValueRef::Str(s), true, false) => data.extend_from_slice(s.as_bytes()),
                    _ => return here(if *text { &Kind::Str } else { &Kind::Bytes }),
                }
                offsets.push(data.len() as i64);
                valid.append_non_null();
            }
            Col::Vector { dtype, data, offsets, valid, items_valid } => {
                let last = offsets.last().copied().unwrap_or(0) as i64;
                let count = match value {
                    ValueRef::Array(a) if a.dtype == *dtype && a.shape.len() == 1 => {
                        data.extend_from_slice(a.data);
                        // The elements are in memory: their count fits a usize.
                        let n = a.len() as usize;
                        items_valid.append_n_non_nulls(n);
                        n
                    }
                    // A Parquet list of numbers reads as a list where an item is null, and
                    // as a 1-D array elsewhere: its items go in as elements, the null ones
                    // as null elements, when every other item is a value of the dtype.
                    ValueRef::List(l) if l.iter().all(|v| element_fits(*dtype, v)) => {
                        for v in l.iter() {
                            push_element(*dtype, v, data, items_valid);
                        }
                        l.len()
                    }
                    _ => return here(&Kind::Vector(*dtype)),
                };
                let next = i32::try_from(last + count as i64).map_err(|_| {
                    (String::new(), "more than 2^31 array elements in one batch".to_string())
                })?;
                offsets.push(next);
                valid.append_non_null();
            }
            Col::Tensor { dtype, shape, data, valid } => match value {
                ValueRef::Array(a) if a.dtype == *dtype && a.shape == shape.as_slice() => {
                    data.extend_from_slice(a.data);
                    valid.append_non_null();
                }
                _ => return here(&Kind::Tensor(*dtype, shape.clone())),
            },
            Col::NdArray { dtype, shape, shape_offsets, data, valid, .. } => match value {
                ValueRef::Array(a) => {
                    let _ = dtype.push(ValueRef::Str(&a.dtype.numpy_str()));
                    shape.extend_from_slice(a.shape);
                    shape_offsets.push(shape.len() as i32);
                    let _ = data.push(ValueRef::Bytes(a.data));
                    valid.append_non_null();
                }
                _ => return here(&Kind::NdArray),
            },
            Col::List { item, offsets, valid, .. } => {
                let mut push_items = |items: &mut dyn ExactSizeIterator<Item = ValueRef<'_>>| {
                    let last = offsets.last().copied().unwrap_or(0) as i64;
                    let next = i32::try_from(last + items.len() as i64).map_err(|_| {
                        (String::new(), "more than 2^31 list items in one batch".to_string())
                    })?;
                    for (k, v) in items.enumerate() {
                        item.push(v).map_err(|(path, why)| (format!("[{k}]{path}"), why))?;
                    }
                    offsets.push(next);
                    valid.append_non_null();
                    Ok::<(), (String, String)>(())
                };
                match value {
                    ValueRef::List(l) => push_items(&mut l.iter())?,
                    // A 1-D array in a column of lists (other rows are lists: a Parquet list
                    // of numbers reads as a list where an item is null) goes in as its
                    // elements.
                    ValueRef::Array(a) => match array_items(a) {
                        Some(items) => push_items(&mut items.into_iter())?,
                        None => return here(&Kind::List(Box::new(Kind::Null))),
                    },
                    _ => return here(&Kind::List(Box::new(Kind::Null))),
                }
            }
            Col::Map { keys, values, offsets, valid, .. } => match value {
                ValueRef::Map(m) => {
                    let last = offsets.last().copied().unwrap_or(0) as i64;
                    let next = i32::try_from(last + m.len() as i64).map_err(|_| {
                        (String::new(), "more than 2^31 map entries in one batch".to_string())
                    })?;
                    for (k, v) in m.iter() {
                        if matches!(k, ValueRef::Null) {
                            return Err((String::new(), "a map key is null".to_string()));
                        }
                        let key = format!("{k:?}");
                        keys.push(k).map_err(|(path, why)| (format!("[key {key}]{path}"), why))?;
                        values.push(v).map_err(|(path, why)| (format!("[{key}]{path}"), why))?;
                    }
                    offsets.push(next);
                    valid.append_non_null();
                }
                _ => return here(&Kind::Json),
            },
            Col::Struct { fields, children, valid, len } => match value {
                ValueRef::Map(m) => {
                    // The map must have the struct's keys, in order (a struct cannot tell a
                    // missing key from a null, nor keep another order).
                    let same = m.len() == fields.len()
                        && m.iter()
                            .zip(fields.iter())
                            .all(|((k, _), f)| k.as_str() == Some(f.name()));
                    if !same {
                        let keys: Vec<String> = m
                            .iter()
                            .map(|(k, _)| {
                                k.as_str().map_or_else(|| format!("{k:?}"), str::to_string)
                            })
                            .collect();
                        let want: Vec<&str> = fields.iter().map(|f| f.name().as_str()).collect();
                        return Err((
                            String::new(),
                            format!(
                                "the column holds maps with keys {want:?} but this record's map has {keys:?}"
                            ),
                        ));
                    }
                    for ((_, v), (f, c)) in m.iter().zip(fields.iter().zip(children.iter_mut())) {
                        c.push(v).map_err(|(path, why)| (format!(".{}{path}", f.name()), why))?;
                    }
                    valid.append_non_null();
                    *len += 1;
                }
                _ => return here(&Kind::Struct(Vec::new())),
            },
        }
        Ok(())
    }

    /// Empties the builder into an array for `field`.
    fn finish(&mut self, field: &Field) -> Result<ArrayRef> {
        let too_big = || {
            Error::new(
                reel_core::ErrorKind::Limit,
                format!(
                    "column {:?}: more than 2 GiB of values in one batch (use large types or a smaller batch)",
                    field.name()
                ),
            )
        };
        Ok(match self {
            Col::Null(n) => Arc::new(NullArray::new(std::mem::take(n))),
            Col::Bool(b, v) => Arc::new(BooleanArray::new(b.finish(), v.finish())),
            Col::Int(x, v) => {
                Arc::new(PrimitiveArray::<Int64Type>::new(std::mem::take(x).into(), v.finish()))
            }
            Col::UInt(x, v) => {
                Arc::new(PrimitiveArray::<UInt64Type>::new(std::mem::take(x).into(), v.finish()))
            }
            Col::Float(x, v) => {
                Arc::new(PrimitiveArray::<Float64Type>::new(std::mem::take(x).into(), v.finish()))
            }
            Col::Var { text, large, data, offsets, valid, .. } => {
                let values = Buffer::from_vec(std::mem::take(data));
                let offs = std::mem::replace(offsets, vec![0]);
                let nulls = valid.finish();
                let err = |e: arrow_schema::ArrowError| {
                    Error::invalid_input(format!("column {:?}: {e}", field.name()))
                };
                if *large {
                    let o = OffsetBuffer::new(ScalarBuffer::from(offs));
                    if *text {
                        Arc::new(LargeStringArray::try_new(o, values, nulls).map_err(err)?)
                    } else {
                        Arc::new(LargeBinaryArray::try_new(o, values, nulls).map_err(err)?)
                    }
                } else {
                    let small: Vec<i32> = offs
                        .into_iter()
                        .map(i32::try_from)
                        .collect::<std::result::Result<_, _>>()
                        .map_err(|_| too_big())?;
                    let o = OffsetBuffer::new(ScalarBuffer::from(small));
                    if *text {
                        Arc::new(StringArray::try_new(o, values, nulls).map_err(err)?)
                    } else {
                        Arc::new(BinaryArray::try_new(o, values, nulls).map_err(err)?)
                    }
                }
            }
            Col::Vector { dtype, data, offsets, valid, items_valid } => {
                let n = offsets.last().copied().unwrap_or(0) as usize;
                let values =
                    primitive_array(*dtype, std::mem::take(data).into(), n, items_valid.finish());
                let offs =
                    OffsetBuffer::new(ScalarBuffer::from(std::mem::replace(offsets, vec![0])));
                Arc::new(
                    ListArray::try_new(vector_item_field(*dtype), offs, values, valid.finish())
                        .map_err(|e| Error::invalid_input(e.to_string()))?,
                )
            }
            Col::Tensor { dtype, shape, data, valid } => {
                let per_row = shape.iter().product::<u64>();
                let rows = valid.len();
                let values = primitive_array(
                    *dtype,
                    std::mem::take(data).into(),
                    rows * per_row as usize,
                    None,
                );
                // The row count is given: a shape with a zero dimension has no values to
                // count rows by.
                Arc::new(
                    FixedSizeListArray::try_new_with_length(
                        element_field(*dtype),
                        i32::try_from(per_row).map_err(|_| too_big())?,
                        values,
                        valid.finish(),
                        rows,
                    )
                    .map_err(|e| Error::invalid_input(e.to_string()))?,
                )
            }
            Col::NdArray { dtype, shape, shape_offsets, data, valid, large } => {
                let fields = ndarray_fields(*large);
                let dtypes = dtype.finish(&fields[0])?;
                let dims =
                    Arc::new(PrimitiveArray::<UInt64Type>::new(std::mem::take(shape).into(), None));
                let shape_field = match fields[1].data_type() {
                    DataType::List(f) => f.clone(),
                    _ => Arc::new(Field::new("item", DataType::UInt64, false)),
                };
                let shapes = Arc::new(
                    ListArray::try_new(
                        shape_field,
                        OffsetBuffer::new(ScalarBuffer::from(std::mem::replace(
                            shape_offsets,
                            vec![0],
                        ))),
                        dims,
                        None,
                    )
                    .map_err(|e| Error::invalid_input(e.to_string()))?,
                );
                let bytes = data.finish(&fields[2])?;
                Arc::new(
                    StructArray::try_new(fields, vec![dtypes, shapes, bytes], valid.finish())
                        .map_err(|e| Error::invalid_input(e.to_string()))?,
                )
            }
            Col::Map { keys, values, entries, sorted, offsets, valid } => {
                let DataType::Struct(children) = entries.data_type() else {
                    return Err(Error::invalid_input("a map's entries are not a struct"));
                };
                let (k, v) = (keys.finish(&children[0])?, values.finish(&children[1])?);
                let err = |e: arrow_schema::ArrowError| Error::invalid_input(e.to_string());
                let pairs =
                    StructArray::try_new(children.clone(), vec![k, v], None).map_err(err)?;
                let offs =
                    OffsetBuffer::new(ScalarBuffer::from(std::mem::replace(offsets, vec![0])));
                Arc::new(
                    MapArray::try_new(entries.clone(), offs, pairs, valid.finish(), *sorted)
                        .map_err(err)?,
                )
            }
            Col::List { item, item_field, offsets, valid } => {
                let values = item.finish(item_field)?;
                let offs =
                    OffsetBuffer::new(ScalarBuffer::from(std::mem::replace(offsets, vec![0])));
                Arc::new(
                    ListArray::try_new(item_field.clone(), offs, values, valid.finish())
                        .map_err(|e| Error::invalid_input(e.to_string()))?,
                )
            }
            Col::Struct { fields, children, valid, len } => {
                let arrays = fields
                    .iter()
                    .zip(children.iter_mut())
                    .map(|(f, c)| c.finish(f))
                    .collect::<Result<Vec<_>>>()?;
                let n = std::mem::take(len);
                if fields.is_empty() {
                    Arc::new(StructArray::new_empty_fields(n, valid.finish()))
                } else {
                    Arc::new(
                        StructArray::try_new(fields.clone(), arrays, valid.finish())
                            .map_err(|e| Error::invalid_input(e.to_string()))?,
                    )
                }
            }
        })
    }
}

fn prim<T: ArrowPrimitiveType>(buffer: Buffer, n: usize, nulls: Option<NullBuffer>) -> ArrayRef {
    Arc::new(PrimitiveArray::<T>::new(ScalarBuffer::new(buffer, 0, n), nulls))
}

/// A primitive array of `n` elements of `dtype` over little-endian bytes, with `nulls`.
fn primitive_array(dtype: DType, buffer: Buffer, n: usize, nulls: Option<NullBuffer>) -> ArrayRef {
    match dtype {
        DType::Bool => {
            let mut b = BooleanBufferBuilder::new(n);
            for &x in buffer.as_slice().iter().take(n) {
                b.append(x != 0);
            }
            Arc::new(BooleanArray::new(b.finish(), nulls))
        }
        DType::I8 => prim::<Int8Type>(buffer, n, nulls),
        DType::I16 => prim::<Int16Type>(buffer, n, nulls),
        DType::I32 => prim::<Int32Type>(buffer, n, nulls),
        DType::I64 => prim::<Int64Type>(buffer, n, nulls),
        DType::U16 => prim::<UInt16Type>(buffer, n, nulls),
        DType::U32 => prim::<UInt32Type>(buffer, n, nulls),
        DType::U64 => prim::<UInt64Type>(buffer, n, nulls),
        DType::F16 => prim::<Float16Type>(buffer, n, nulls),
        DType::F32 => prim::<Float32Type>(buffer, n, nulls),
        DType::F64 => prim::<Float64Type>(buffer, n, nulls),
        // Kinds only hold primitive dtypes; anything else is carried as bytes.
        _ => prim::<UInt8Type>(buffer, n, nulls),
    }
}

/// Whether `value`, an item of a list going into a column of 1-D `dtype` arrays, is a null
/// or a value a `dtype` element holds exactly (a float as `float32` only when it is one).
fn element_fits(dtype: DType, value: ValueRef<'_>) -> bool {
    let mut scratch = [0u8; 8];
    matches!(value, ValueRef::Null) || element_bytes(dtype, value, &mut scratch).is_some()
}

/// Appends `value` (an item [`element_fits`] took) to a column of 1-D `dtype` arrays: its
/// little-endian bytes, or zeros and a null for a null.
fn push_element(
    dtype: DType,
    value: ValueRef<'_>,
    data: &mut MutableBuffer,
    items_valid: &mut NullBufferBuilder,
) {
    let mut bytes = [0u8; 8];
    match element_bytes(dtype, value, &mut bytes) {
        Some(n) => {
            data.extend_from_slice(&bytes[..n]);
            items_valid.append_non_null();
        }
        None => {
            data.extend_zeros(dtype.item_size() as usize);
            items_valid.append_null();
        }
    }
}

/// Writes `value` as one little-endian `dtype` element into `out`, returning its width;
/// `None` when `dtype` cannot hold it exactly (or is one no list item converts to).
fn element_bytes(dtype: DType, value: ValueRef<'_>, out: &mut [u8; 8]) -> Option<usize> {
    let int = match value {
        ValueRef::Int(i) => Some(i128::from(i)),
        ValueRef::UInt(u) => Some(i128::from(u)),
        _ => None,
    };
    macro_rules! put {
        ($bytes:expr) => {{
            let bytes = $bytes;
            out[..bytes.len()].copy_from_slice(&bytes);
            Some(bytes.len())
        }};
    }
    match (dtype, value) {
        (DType::Bool, ValueRef::Bool(b)) => put!([u8::from(b)]),
        (DType::F64, ValueRef::Float(f)) => put!(f.to_le_bytes()),
        (DType::F32, ValueRef::Float(f)) if f.is_nan() || f64::from(f as f32) == f => {
            put!((f as f32).to_le_bytes())
        }
        (DType::I8, _) => put!(i8::try_from(int?).ok()?.to_le_bytes()),
        (DType::I16, _) => put!(i16::try_from(int?).ok()?.to_le_bytes()),
        (DType::I32, _) => put!(i32::try_from(int?).ok()?.to_le_bytes()),
        (DType::I64, _) => put!(i64::try_from(int?).ok()?.to_le_bytes()),
        (DType::U8, _) => put!(u8::try_from(int?).ok()?.to_le_bytes()),
        (DType::U16, _) => put!(u16::try_from(int?).ok()?.to_le_bytes()),
        (DType::U32, _) => put!(u32::try_from(int?).ok()?.to_le_bytes()),
        (DType::U64, _) => put!(u64::try_from(int?).ok()?.to_le_bytes()),
        _ => None,
    }
}

/// The types a column built as `from` is cast through to reach `to`, or `None` when Arrow
/// has no cast: directly where it has one; through `int32` for `time32`, which Arrow casts
/// from `int32` only.
fn cast_path(from: &DataType, to: &DataType) -> Option<Vec<DataType>> {
    use arrow_cast::can_cast_types;
    if can_cast_types(from, to) {
        Some(vec![to.clone()])
    } else if can_cast_types(from, &DataType::Int32) && can_cast_types(&DataType::Int32, to) {
        Some(vec![DataType::Int32, to.clone()])
    } else {
        None
    }
}

/// `array` (the built column `name`, whose rows are the records `records`) cast along
/// `path`. The casts are strict: a value the type cannot hold (an integer out of its range,
/// a negative one for an unsigned type, text of the wrong width for a fixed-size binary,
/// more distinct values than a dictionary's keys count) is an
/// [`ErrorKind::Schema`](reel_core::ErrorKind::Schema) error naming the field and, where
/// the row can be told, the record; a float beyond a narrower float type's range, which
/// Arrow makes infinite without a word, is refused the same way. Floats are otherwise
/// rounded to the nearest value of the narrower type, as a cast to it means.
fn cast_checked(
    array: ArrayRef,
    path: &[DataType],
    name: &str,
    records: &[u64],
) -> Result<ArrayRef> {
    use arrow_cast::{CastOptions, cast_with_options};
    let strict = CastOptions { safe: false, ..Default::default() };
    let named = |e: Error, row: Option<usize>| match row.and_then(|r| records.get(r)) {
        Some(&record) => e.with_record(record),
        None => e,
    };
    let mut out = array;
    for to in path {
        let from = out;
        out = match cast_with_options(&from, to, &strict) {
            Ok(cast) => cast,
            Err(e) => {
                // The row: the first value a lenient cast (nulls for failures) drops.
                let lenient = CastOptions { safe: true, ..Default::default() };
                let row = cast_with_options(&from, to, &lenient)
                    .ok()
                    .and_then(|l| (0..from.len()).find(|&i| from.is_valid(i) && l.is_null(i)));
                let why = format!("field {name:?}: a value does not fit Arrow type {to} ({e})");
                return Err(named(Error::schema(why), row));
            }
        };
        if let Some((row, value)) = float_overflow(from.as_ref(), out.as_ref()) {
            let why = format!("field {name:?}: the value {value:?} is beyond the range of {to}");
            return Err(named(Error::schema(why), Some(row)));
        }
    }
    Ok(out)
}

/// The first row of the float64 array `from` whose finite value became infinite in `to`
/// (a narrower float type), and the value.
fn float_overflow(from: &dyn Array, to: &dyn Array) -> Option<(usize, f64)> {
    let from = from.as_primitive_opt::<Float64Type>()?;
    let infinite: Box<dyn Fn(usize) -> bool> = match to.data_type() {
        DataType::Float32 => {
            let to = to.as_primitive_opt::<Float32Type>()?;
            Box::new(move |i| to.value(i).is_infinite())
        }
        DataType::Float16 => {
            let to = to.as_primitive_opt::<Float16Type>()?;
            Box::new(move |i| to.value(i).is_infinite())
        }
        _ => return None,
    };
    (0..from.len())
        .find(|&i| from.is_valid(i) && from.value(i).is_finite() && infinite(i))
        .map(|i| (i, from.value(i)))
}

/// Extra columns that let a user join rows back to the dataset.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExtraColumns {
    /// `_index` (uint64): the record's index in its source.
    pub index: bool,
    /// `_file` (utf8), `_offset` and `_length` (uint64): where the source stores the record
    /// ([`reel_core::Location`], from the format's plan through
    /// [`RecordSource::locate`](reel_core::RecordSource::locate)): the file of its first
    /// byte range, and the byte range of that file holding the record's bytes there. Null
    /// where the source cannot tell (a Parquet or Arrow source, records made in memory).
    pub location: bool,
}

/// Name of the record-index column.
pub const INDEX_COLUMN: &str = "_index";
/// Name of the file column.
pub const FILE_COLUMN: &str = "_file";
/// Name of the byte-offset column.
pub const OFFSET_COLUMN: &str = "_offset";
/// Name of the byte-length column.
pub const LENGTH_COLUMN: &str = "_length";

/// Turns records into Arrow record batches of a fixed schema.
pub struct Encoder {
    schema: SchemaRef,
    names: Vec<String>,
    columns: Vec<Col>,
    /// The field each column is built as (reel's type for its kind); the schema's field
    /// differs where the column is cast.
    built: Vec<FieldRef>,
    /// Per column, the types its built array is cast through to the schema's type, for the
    /// columns of a given schema whose type reel does not build.
    casts: Vec<Option<Vec<DataType>>>,
    /// The record index of each waiting row, kept while a column is cast, so that a value
    /// the cast refuses names its record.
    records: Vec<u64>,
    extra: ExtraColumns,
    index: Vec<u64>,
    files: Col,
    offsets: Col,
    lengths: Col,
    rows: usize,
    /// Skip record fields the schema has no column for (a column selection), instead of
    /// refusing them.
    skip_unknown: bool,
}

impl Encoder {
    /// An encoder for `kinds` (column name and kind, in order).
    pub(crate) fn new(kinds: &[(String, Kind)], large: bool, extra: ExtraColumns) -> Encoder {
        let mut fields: Vec<Field> = kinds.iter().map(|(n, k)| k.to_field(n, large)).collect();
        let built = fields.iter().cloned().map(Arc::new).collect();
        if extra.index {
            fields.push(Field::new(INDEX_COLUMN, DataType::UInt64, false));
        }
        if extra.location {
            fields.push(Field::new(FILE_COLUMN, DataType::Utf8, true));
            fields.push(Field::new(OFFSET_COLUMN, DataType::UInt64, true));
            fields.push(Field::new(LENGTH_COLUMN, DataType::UInt64, true));
        }
        Encoder {
            schema: Arc::new(Schema::new(fields)),
            built,
            casts: vec![None; kinds.len()],
            records: Vec::new(),
            names: kinds.iter().map(|(n, _)| n.clone()).collect(),
            columns: kinds.iter().map(|(_, k)| Col::new(k, large)).collect(),
            extra,
            index: Vec::new(),
            files: Col::var(true, false, false),
            offsets: Col::UInt(Vec::new(), NullBufferBuilder::new(0)),
            lengths: Col::UInt(Vec::new(), NullBufferBuilder::new(0)),
            rows: 0,
            skip_unknown: false,
        }
    }

    /// Makes the column `name` (one of the encoder's) of type `target`: built as its kind
    /// and cast, with every value checked (a value the type cannot hold is an error naming
    /// the record and the field, never wrapped or nulled). A type Arrow cannot cast the
    /// built column to is refused naming the field.
    pub(crate) fn cast_column(&mut self, name: &str, target: &Field) -> Result<()> {
        let Some(k) = self.names.iter().position(|n| n == name) else { return Ok(()) };
        // A map is built as one (from the records' maps), not as the tagged JSON text its
        // values would make, which Arrow cannot cast to a map.
        if let DataType::Map(entries, sorted) = target.data_type()
            && let Some((col, built)) = Col::map_for(entries, *sorted, false)
        {
            self.columns[k] = col;
            self.built[k] = Arc::new(Field::new(name, built, true));
        }
        let from = self.built[k].data_type();
        let path = cast_path(from, target.data_type()).ok_or_else(|| {
            Error::schema(format!(
                "field {name:?}: reel builds the column as {from}, which Arrow cannot cast to \
                 the type asked for, {}",
                target.data_type()
            ))
        })?;
        self.casts[k] = Some(path);
        let mut fields: Vec<FieldRef> = self.schema.fields().iter().cloned().collect();
        // Nullable like every column (a record may lack the field).
        fields[k] = Arc::new(
            Field::new(name, target.data_type().clone(), true)
                .with_metadata(target.metadata().clone()),
        );
        self.schema = Arc::new(Schema::new(fields));
        Ok(())
    }

    /// Marks the byte columns (or lists of bytes) whose fields `declared` gives a format
    /// type Arrow has no counterpart for (an image or video codec) with that type, under
    /// [`REEL_DECLARED_KEY`](crate::REEL_DECLARED_KEY), so that it survives the trip
    /// through Parquet or Arrow IPC.
    pub(crate) fn keep_declared_types(&mut self, declared: &[reel_core::FieldSpec]) {
        let mut fields: Vec<FieldRef> = self.schema.fields().iter().cloned().collect();
        let mut changed = false;
        for spec in declared.iter().filter(|s| crate::kind::is_kept_declaration(&s.kind)) {
            let Some(k) = self.names.iter().position(|n| *n == spec.name) else { continue };
            let bytes = |dt: &DataType| matches!(dt, DataType::Binary | DataType::LargeBinary);
            let holds_bytes = match fields[k].data_type() {
                DataType::List(item) | DataType::LargeList(item) => bytes(item.data_type()),
                dt => bytes(dt),
            };
            if holds_bytes && self.casts[k].is_none() {
                let mut metadata = fields[k].metadata().clone();
                metadata.insert(crate::REEL_DECLARED_KEY.to_string(), spec.kind.clone());
                fields[k] = Arc::new(fields[k].as_ref().clone().with_metadata(metadata));
                changed = true;
            }
        }
        if changed {
            self.schema = Arc::new(Schema::new(fields));
        }
    }

    /// Whether fields the schema lacks are skipped (`true`: the schema is a selection of
    /// columns) or refused (`false`, the default).
    pub fn skip_unknown(&mut self, on: bool) {
        self.skip_unknown = on;
    }

    /// The schema of the batches.
    pub fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    /// Rows waiting to be emitted.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Bytes held by the waiting rows.
    pub fn buffered_bytes(&self) -> usize {
        let extra = [&self.files, &self.offsets, &self.lengths].map(Col::bytes);
        self.columns.iter().map(Col::bytes).sum::<usize>()
            + self.index.len() * 8
            + extra.iter().sum::<usize>()
    }

    /// Adds one record. A field the schema lacks, or a value that does not fit its column,
    /// is an [`ErrorKind::Schema`](reel_core::ErrorKind::Schema) error naming the record
    /// and the field; the encoder is then unusable for the current batch.
    pub fn push(&mut self, record: RecordRef<'_>) -> Result<()> {
        self.push_located(record, None)
    }

    /// Whether the batches have the location columns ([`ExtraColumns::location`]), which
    /// [`push_located`](Self::push_located) fills.
    pub fn wants_location(&self) -> bool {
        self.extra.location
    }

    /// [`push`](Self::push) with where the record is stored (for the location columns; null
    /// cells for `None`).
    pub fn push_located(
        &mut self,
        record: RecordRef<'_>,
        location: Option<Location<'_>>,
    ) -> Result<()> {
        let index = record.index();
        let fail = |field: &str, why: String| {
            // The record index is context, which the error's display puts first.
            Error::schema(format!("field {field:?}: {why}")).with_record(index)
        };
        for (name, _) in record.iter() {
            if !self.skip_unknown && !self.names.iter().any(|n| n == name) {
                return Err(fail(
                    name,
                    "the schema has no such column (an inferred schema: the field was not in \
                     the sampled records, so sample more records or give a schema; a given \
                     schema: add the column, or leave the field out)"
                        .into(),
                ));
            }
        }
        for (name, col) in self.names.iter().zip(self.columns.iter_mut()) {
            match record.get(name) {
                Some(v) => col.push(v).map_err(|(path, why)| {
                    fail(
                        &format!("{name}{path}"),
                        format!("{why} (give a schema or sample more records)"),
                    )
                })?,
                None => col.push_null(),
            }
        }
        if self.extra.index {
            self.index.push(index);
        }
        if self.extra.location {
            match location {
                Some(at) => {
                    // A text and two uint64 columns take these values; they cannot fail.
                    let _ = self.files.push(ValueRef::Str(&at.path.to_string_lossy()));
                    let _ = self.offsets.push(ValueRef::UInt(at.offset));
                    let _ = self.lengths.push(ValueRef::UInt(at.len));
                }
                None => {
                    self.files.push_null();
                    self.offsets.push_null();
                    self.lengths.push_null();
                }
            }
        }
        if self.casts.iter().any(Option::is_some) {
            self.records.push(index);
        }
        self.rows += 1;
        Ok(())
    }

    /// Hands back a batch this encoder made, once its consumer is done with it (a writer
    /// has written it), so that the next batches fill its byte buffers again instead of
    /// fresh memory: growing a new multi-megabyte buffer per batch made the allocator
    /// fault in (and realloc-copy) every page anew, which measured about 15 % of an
    /// FFRecord → Parquet conversion. Buffers still shared elsewhere are left alone.
    pub fn recycle(&mut self, batch: RecordBatch) {
        let mut values: Vec<(usize, Buffer)> = Vec::new();
        for (k, (col, array)) in self.columns.iter().zip(batch.columns()).enumerate() {
            if let Col::Var { data, .. } = col
                && data.capacity() == 0
            {
                let buffer = match array.data_type() {
                    DataType::Binary => array.as_binary_opt::<i32>().map(|a| a.values().clone()),
                    DataType::LargeBinary => {
                        array.as_binary_opt::<i64>().map(|a| a.values().clone())
                    }
                    DataType::Utf8 => array.as_string_opt::<i32>().map(|a| a.values().clone()),
                    DataType::LargeUtf8 => array.as_string_opt::<i64>().map(|a| a.values().clone()),
                    _ => None,
                };
                values.extend(buffer.map(|b| (k, b)));
            }
        }
        drop(batch);
        for (k, buffer) in values {
            if let (Some(Col::Var { data, .. }), Ok(mut vec)) =
                (self.columns.get_mut(k), buffer.into_vec::<u8>())
            {
                vec.clear();
                *data = vec;
            }
        }
    }

    /// Empties the waiting rows into a batch.
    pub fn finish_batch(&mut self) -> Result<RecordBatch> {
        let fields = self.schema.fields().clone();
        let mut arrays = Vec::with_capacity(fields.len());
        let records = std::mem::take(&mut self.records);
        for ((col, f), (cast, name)) in
            self.columns.iter_mut().zip(&self.built).zip(self.casts.iter().zip(&self.names))
        {
            let array = col.finish(f)?;
            arrays.push(match cast {
                Some(path) => cast_checked(array, path, name, &records)?,
                None => array,
            });
        }
        let mut k = self.columns.len();
        if self.extra.index {
            arrays.push(Arc::new(PrimitiveArray::<UInt64Type>::new(
                std::mem::take(&mut self.index).into(),
                None,
            )) as ArrayRef);
            k += 1;
        }
        if self.extra.location {
            arrays.push(self.files.finish(&fields[k])?);
            arrays.push(self.offsets.finish(&fields[k + 1])?);
            arrays.push(self.lengths.finish(&fields[k + 2])?);
        }
        let rows = std::mem::take(&mut self.rows);
        RecordBatch::try_new_with_options(
            self.schema.clone(),
            arrays,
            &arrow_array::RecordBatchOptions::new().with_row_count(Some(rows)),
        )
        .map_err(|e| Error::invalid_input(format!("cannot assemble an Arrow batch: {e}")))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use arrow_array::Array;
    use reel_core::Record;

    fn encoder() -> Encoder {
        let kinds = [("b".to_string(), Kind::Bytes), ("s".to_string(), Kind::Str)];
        Encoder::new(&kinds, false, ExtraColumns::default())
    }

    fn fill(e: &mut Encoder, rows: &[(&[u8], &str)]) -> RecordBatch {
        for (b, s) in rows {
            let r = Record::new().with_bytes("b", b).with_str("s", s);
            e.push(r.view()).unwrap();
        }
        e.finish_batch().unwrap()
    }

    fn var_capacity(e: &Encoder, k: usize) -> usize {
        match &e.columns[k] {
            Col::Var { data, .. } => data.capacity(),
            _ => 0,
        }
    }

    /// A recycled batch's byte buffers are filled again by the next batch, which still holds
    /// exactly its own values; a batch someone still holds is left alone.
    #[test]
    fn recycled_buffers_are_reused_and_shared_ones_left_alone() {
        let mut e = encoder();
        let first = fill(&mut e, &[(b"abc", "x"), (b"defgh", "yz")]);
        assert_eq!(var_capacity(&e, 0), 0);
        let values_at = first.column(0).as_binary::<i32>().values().as_ptr();
        e.recycle(first);
        assert!(var_capacity(&e, 0) >= 8 && var_capacity(&e, 1) >= 3);
        let second = fill(&mut e, &[(b"Q", "w")]);
        let col = second.column(0).as_binary::<i32>();
        assert_eq!(col.values().as_ptr(), values_at, "the buffer was not reused");
        assert_eq!((col.len(), col.value(0)), (1, &b"Q"[..]));
        assert_eq!(second.column(1).as_string::<i32>().value(0), "w");

        let kept = second.clone();
        e.recycle(second);
        assert_eq!(var_capacity(&e, 0), 0, "a buffer still held elsewhere was taken");
        let third = fill(&mut e, &[(b"zz", "v")]);
        assert_eq!(kept.column(0).as_binary::<i32>().value(0), b"Q");
        assert_eq!(third.column(0).as_binary::<i32>().value(0), b"zz");
    }
}
