//! The one mapping between reel values and Arrow types.
//!
//! A column's [`Kind`] is what its values are, in reel's terms; it is inferred from sample
//! records ([`Kind::of`], [`Kind::merge`]), read from a given Arrow field
//! ([`Kind::from_field`]) and turned into an Arrow field ([`Kind::to_field`]). Encoders and
//! the schema of every batch come from it, so a value type is mapped in one place.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_schema::{DataType, Field, FieldRef, Fields};
use reel_core::{DType, Error, Result, ValueRef};

/// Field metadata key saying how reel stored a value where the Arrow type alone is
/// ambiguous: `"array"` (a 1-D array), `"list"` (a list of values), `"ndarray"` (the
/// generic array struct) or `"json"` (tagged JSON text, as the crate documentation describes).
pub const REEL_TYPE_KEY: &str = "reel.type";
/// Field metadata key naming the type a record format declared for the column where Arrow
/// has no type of that meaning: Granular's and bags' image and video codecs (`jpg`,
/// `jpeg`, `png`, `mp4`, `webm`, and bags' sequences of them, `jpeg[]`), whose values are
/// the encoded bytes. A conversion back to Granular or bags declares the type again
/// ([`declared_type`]), so the reference decodes the images as it did before.
pub const REEL_DECLARED_KEY: &str = "reel.declared";

/// The format types [`REEL_DECLARED_KEY`] keeps (a `[]` suffix aside).
const DECLARED_TYPES: [&str; 5] = ["jpg", "jpeg", "png", "mp4", "webm"];

/// Whether `kind`, a format's declared type, is one [`REEL_DECLARED_KEY`] keeps.
pub(crate) fn is_kept_declaration(kind: &str) -> bool {
    DECLARED_TYPES.contains(&kind.strip_suffix("[]").unwrap_or(kind))
}

/// The format type a Parquet or Arrow IPC column's declared type name
/// ([`reel_core::FieldSpec::kind`]) carries under [`REEL_DECLARED_KEY`], if any: `jpg` for
/// `Binary [reel.declared=jpg]`.
pub fn declared_type(kind: &str) -> Option<&str> {
    let marker = format!(" [{REEL_DECLARED_KEY}=");
    let declared = &kind[kind.find(&marker)? + marker.len()..];
    let declared = &declared[..annotation_end(declared)?];
    is_kept_declaration(declared).then_some(declared)
}

/// Where the value of a `[key=value]` annotation of a type name ends: at its first `]`
/// that does not close a `[]` (a bags sequence type, `jpeg[]`, is such a value).
fn annotation_end(value: &str) -> Option<usize> {
    let bytes = value.as_bytes();
    (0..bytes.len()).find(|&i| bytes[i] == b']' && (i == 0 || bytes[i - 1] != b'['))
}

/// Arrow's extension-name metadata key.
pub const EXTENSION_NAME_KEY: &str = "ARROW:extension:name";
/// Arrow's extension-metadata key.
pub const EXTENSION_METADATA_KEY: &str = "ARROW:extension:metadata";
/// The canonical fixed-shape tensor extension.
pub const FIXED_SHAPE_TENSOR: &str = "arrow.fixed_shape_tensor";

/// What a column's values are.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Kind {
    /// Only nulls (or missing fields) seen.
    Null,
    Bool,
    /// Signed integers; `huge` when one above `i64::MAX` was seen too.
    Int {
        negative: bool,
        huge: bool,
    },
    Float,
    Bytes,
    Str,
    /// 1-D arrays of one primitive dtype: Arrow `List<primitive>`.
    Vector(DType),
    /// N-d arrays (N ≥ 2) of one primitive dtype and one shape: `arrow.fixed_shape_tensor`.
    Tensor(DType, Vec<u64>),
    /// Arrays of any dtype and shape: a struct of numpy dtype string, shape and bytes.
    NdArray,
    /// A list of values.
    List(Box<Kind>),
    /// Maps with the same text keys in the same order: a struct with one child per key.
    Struct(Vec<(String, Kind)>),
    /// Values that have no common Arrow type: tagged JSON text.
    Json,
}

/// Whether Arrow has a primitive type holding `dtype`'s values exactly.
fn primitive(dtype: DType) -> Option<DataType> {
    Some(match dtype {
        DType::Bool => DataType::Boolean,
        DType::I8 => DataType::Int8,
        DType::I16 => DataType::Int16,
        DType::I32 => DataType::Int32,
        DType::I64 => DataType::Int64,
        DType::U8 => DataType::UInt8,
        DType::U16 => DataType::UInt16,
        DType::U32 => DataType::UInt32,
        DType::U64 => DataType::UInt64,
        DType::F16 => DataType::Float16,
        DType::F32 => DataType::Float32,
        DType::F64 => DataType::Float64,
        _ => return None,
    })
}

/// The dtype of an Arrow primitive type.
pub(crate) fn dtype_of(dt: &DataType) -> Option<DType> {
    Some(match dt {
        DataType::Boolean => DType::Bool,
        DataType::Int8 => DType::I8,
        DataType::Int16 => DType::I16,
        DataType::Int32 => DType::I32,
        DataType::Int64 => DType::I64,
        DataType::UInt8 => DType::U8,
        DataType::UInt16 => DType::U16,
        DataType::UInt32 => DType::U32,
        DataType::UInt64 => DType::U64,
        DataType::Float16 => DType::F16,
        DataType::Float32 => DType::F32,
        DataType::Float64 => DType::F64,
        _ => return None,
    })
}

impl Kind {
    /// The kind of one value.
    pub(crate) fn of(value: ValueRef<'_>) -> Kind {
        match value {
            ValueRef::Null => Kind::Null,
            ValueRef::Bool(_) => Kind::Bool,
            ValueRef::Int(i) => Kind::Int { negative: i < 0, huge: false },
            ValueRef::UInt(_) => Kind::Int { negative: false, huge: true },
            ValueRef::Float(_) => Kind::Float,
            ValueRef::Bytes(_) => Kind::Bytes,
            ValueRef::Str(_) => Kind::Str,
            ValueRef::Array(a) => match (primitive(a.dtype), a.shape.len()) {
                (Some(_), 1) => Kind::Vector(a.dtype),
                (Some(_), n) if n >= 2 => Kind::Tensor(a.dtype, a.shape.to_vec()),
                _ => Kind::NdArray,
            },
            ValueRef::List(l) => {
                Kind::List(Box::new(l.iter().fold(Kind::Null, |k, v| k.merge(Kind::of(v)))))
            }
            ValueRef::Map(m) => {
                let mut fields: Vec<(String, Kind)> = Vec::with_capacity(m.len());
                for (k, v) in m.iter() {
                    let Some(key) = k.as_str() else { return Kind::Json };
                    if fields.iter().any(|(n, _)| n == key) {
                        return Kind::Json;
                    }
                    fields.push((key.to_string(), Kind::of(v)));
                }
                Kind::Struct(fields)
            }
        }
    }

    /// The narrowest kind holding values of both kinds ([`Kind::Json`] when there is none).
    pub(crate) fn merge(self, other: Kind) -> Kind {
        use Kind as K;
        match (self, other) {
            (K::Null, k) | (k, K::Null) => k,
            (K::Int { negative: a, huge: b }, K::Int { negative: c, huge: d }) => {
                K::Int { negative: a || c, huge: b || d }
            }
            (K::Vector(a), K::Vector(b)) if a == b => K::Vector(a),
            (K::Tensor(a, s), K::Tensor(b, t)) if a == b && s == t => K::Tensor(a, s),
            (
                K::Vector(_) | K::Tensor(..) | K::NdArray,
                K::Vector(_) | K::Tensor(..) | K::NdArray,
            ) => K::NdArray,
            (K::List(a), K::List(b)) => K::List(Box::new(a.merge(*b))),
            // Rows of one list-of-numbers column read as 1-D arrays, or as lists where an
            // item is null (Parquet, Arrow): a list of the numbers holds both.
            (K::Vector(d), K::List(k)) | (K::List(k), K::Vector(d)) => {
                match element_kind(d).map(|e| k.merge(e)) {
                    Some(item) if item != K::Json => K::List(Box::new(item)),
                    _ => K::Json,
                }
            }
            // A struct cannot tell a missing key from a null value, nor keep key order per
            // row: maps become a struct only when they all have the same keys in the same
            // order (otherwise JSON keeps them exactly).
            (K::Struct(a), K::Struct(b))
                if a.len() == b.len() && a.iter().zip(&b).all(|(x, y)| x.0 == y.0) =>
            {
                K::Struct(a.into_iter().zip(b).map(|((n, x), (_, y))| (n, x.merge(y))).collect())
            }
            (a, b) if a == b => a,
            _ => K::Json,
        }
    }

    /// The Arrow field of a column of this kind. Every field is nullable: a record may
    /// lack a field that others have.
    pub(crate) fn to_field(&self, name: &str, large: bool) -> Field {
        let tagged = |dt: DataType, tag: &str| {
            Field::new(name, dt, true)
                .with_metadata(HashMap::from([(REEL_TYPE_KEY.to_string(), tag.to_string())]))
        };
        let bytes = if large { DataType::LargeBinary } else { DataType::Binary };
        let text = if large { DataType::LargeUtf8 } else { DataType::Utf8 };
        match self {
            Kind::Null => Field::new(name, DataType::Null, true),
            Kind::Bool => Field::new(name, DataType::Boolean, true),
            Kind::Int { negative: false, huge: true } => Field::new(name, DataType::UInt64, true),
            Kind::Int { negative: true, huge: true } => tagged(text, "json"),
            Kind::Int { .. } => Field::new(name, DataType::Int64, true),
            Kind::Float => Field::new(name, DataType::Float64, true),
            Kind::Bytes => Field::new(name, bytes, true),
            Kind::Str => Field::new(name, text, true),
            Kind::Vector(dtype) => {
                let item = vector_item_field(*dtype);
                tagged(DataType::List(item), "array")
            }
            Kind::Tensor(dtype, shape) => {
                let n = shape.iter().product::<u64>();
                let meta = serde_json::json!({ "shape": shape }).to_string();
                Field::new(
                    name,
                    DataType::FixedSizeList(element_field(*dtype), n.min(i32::MAX as u64) as i32),
                    true,
                )
                .with_metadata(HashMap::from([
                    (EXTENSION_NAME_KEY.to_string(), FIXED_SHAPE_TENSOR.to_string()),
                    (EXTENSION_METADATA_KEY.to_string(), meta),
                ]))
            }
            Kind::NdArray => tagged(DataType::Struct(ndarray_fields(large)), "ndarray"),
            Kind::List(item) => {
                let item = Arc::new(item.to_field("item", large));
                tagged(DataType::List(item), "list")
            }
            // Parquet cannot write a struct without children: maps that are all empty are
            // tagged JSON text (`{}`), which reads back as the same empty maps.
            Kind::Struct(fields) if fields.is_empty() => tagged(text, "json"),
            Kind::Struct(fields) => {
                let children: Fields =
                    fields.iter().map(|(n, k)| Arc::new(k.to_field(n, large))).collect();
                Field::new(name, DataType::Struct(children), true)
            }
            Kind::Json => tagged(text, "json"),
        }
    }

    /// The kind a given Arrow field asks for. Only the types [`Kind::to_field`] produces are
    /// accepted (plain `List<primitive>` is read as a 1-D array); any other type is refused
    /// naming the field.
    pub(crate) fn from_field(field: &Field) -> Result<Kind> {
        let tag = field.metadata().get(REEL_TYPE_KEY).map(String::as_str);
        let ext = field.metadata().get(EXTENSION_NAME_KEY).map(String::as_str);
        let refuse = |why: &str| {
            Error::schema(format!("field {:?}: {} {why}", field.name(), field.data_type()))
        };
        Ok(match (field.data_type(), tag) {
            (DataType::Utf8 | DataType::LargeUtf8, Some("json")) => Kind::Json,
            (DataType::Null, _) => Kind::Null,
            (DataType::Boolean, _) => Kind::Bool,
            (DataType::Int64, _) => Kind::Int { negative: true, huge: false },
            (DataType::UInt64, _) => Kind::Int { negative: false, huge: true },
            (DataType::Float64, _) => Kind::Float,
            (DataType::Binary | DataType::LargeBinary, _) => Kind::Bytes,
            (DataType::Utf8 | DataType::LargeUtf8, _) => Kind::Str,
            (DataType::List(item), Some("list")) => Kind::List(Box::new(Kind::from_field(item)?)),
            (DataType::List(item), _) => match dtype_of(item.data_type()) {
                Some(dt) => Kind::Vector(dt),
                None => Kind::List(Box::new(Kind::from_field(item)?)),
            },
            (DataType::FixedSizeList(item, _), _) if ext == Some(FIXED_SHAPE_TENSOR) => {
                let dtype = dtype_of(item.data_type())
                    .ok_or_else(|| refuse("is a tensor of a type reel has no dtype for"))?;
                Kind::Tensor(dtype, tensor_shape(field)?)
            }
            (DataType::Struct(_), Some("ndarray")) => Kind::NdArray,
            (DataType::Struct(children), _) => Kind::Struct(
                children
                    .iter()
                    .map(|c| Ok((c.name().clone(), Kind::from_field(c)?)))
                    .collect::<Result<_>>()?,
            ),
            _ => {
                return Err(refuse(
                    "cannot be written from reel values (use null, bool, int64, uint64, \
                     float64, binary, utf8, list, struct or arrow.fixed_shape_tensor)",
                ));
            }
        })
    }
}

impl Kind {
    /// The kind a column of a given schema is built as, and the field to cast the built
    /// column to when the given type is not one [`Kind::to_field`] produces (`None`: built
    /// as given, no cast). Other types are built as the kind their values read back as
    /// ([`Kind::read_of`]: an `int32` or `timestamp` column from integers, a
    /// `dictionary<utf8>` from text, a `large_list<float32>` from float32 arrays) and cast;
    /// a type reel has no value for (decimal, union, interval) is refused naming the field.
    pub(crate) fn for_given(field: &Field) -> Result<(Kind, Option<Field>)> {
        if let Ok(kind) = Kind::from_field(field) {
            return Ok((kind, None));
        }
        // What reading cannot give, writing cannot take: the types the reading plan has no
        // value for (nested ones included) are refused.
        let kind = match crate::decode::Plan::for_field(field) {
            Ok(_) => Kind::read_of(field),
            Err(_) => Kind::Null,
        };
        if kind == Kind::Null {
            return Err(Error::schema(format!(
                "field {:?}: Arrow type {} cannot be written from reel values (reel has no \
                 value of that type)",
                field.name(),
                field.data_type()
            )));
        }
        Ok((kind, Some(field.clone())))
    }

    /// The kind of the values a column of Arrow type `field` reads as (see
    /// [`crate::decode`]), whatever its rows hold: what a Parquet or Arrow IPC file
    /// declares, so that a column whose sampled rows are all null, or whose larger values
    /// come after the sample, still gets its type. `Kind::Null` for a type reel has no value
    /// for (the file source refuses those at open).
    ///
    /// Two choices differ from the narrowest Arrow type: an Arrow `map` reads as
    /// [`Kind::Json`], since its rows have keys of their own, which a struct (one child per
    /// key, the same keys in every row) cannot hold; and a list of a primitive type reads
    /// as [`Kind::Vector`] even where its items are nullable (pyarrow's default), since
    /// nulls there are rare — a row that has one reads as a list, which the column takes
    /// with null elements.
    pub(crate) fn read_of(field: &Field) -> Kind {
        let tag = field.metadata().get(REEL_TYPE_KEY).map(String::as_str);
        let ext = field.metadata().get(EXTENSION_NAME_KEY).map(String::as_str);
        let signed = Kind::Int { negative: true, huge: false };
        match field.data_type() {
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View if tag == Some("json") => {
                Kind::Json
            }
            DataType::Null => Kind::Null,
            DataType::Boolean => Kind::Bool,
            DataType::Int8
            | DataType::Int16
            | DataType::Int32
            | DataType::Int64
            | DataType::Date32
            | DataType::Date64
            | DataType::Time32(_)
            | DataType::Time64(_)
            | DataType::Timestamp(..)
            | DataType::Duration(_) => signed,
            DataType::UInt8 | DataType::UInt16 | DataType::UInt32 => {
                Kind::Int { negative: false, huge: false }
            }
            DataType::UInt64 => Kind::Int { negative: false, huge: true },
            DataType::Float16 | DataType::Float32 | DataType::Float64 => Kind::Float,
            DataType::Binary
            | DataType::LargeBinary
            | DataType::BinaryView
            | DataType::FixedSizeBinary(_) => Kind::Bytes,
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => Kind::Str,
            DataType::FixedSizeList(item, _) if ext == Some(FIXED_SHAPE_TENSOR) => {
                match (dtype_of(item.data_type()), tensor_shape(field)) {
                    (Some(dtype), Ok(shape)) => match shape.len() {
                        1 => Kind::Vector(dtype),
                        n if n >= 2 => Kind::Tensor(dtype, shape),
                        _ => Kind::NdArray,
                    },
                    _ => Kind::Null,
                }
            }
            DataType::List(item) | DataType::LargeList(item) | DataType::FixedSizeList(item, _) => {
                match dtype_of(item.data_type()) {
                    Some(dtype) if tag != Some("list") => Kind::Vector(dtype),
                    _ => Kind::List(Box::new(Kind::read_of(item))),
                }
            }
            DataType::Struct(_) if tag == Some("ndarray") => Kind::NdArray,
            DataType::Struct(children) => Kind::Struct(
                children.iter().map(|c| (c.name().clone(), Kind::read_of(c))).collect(),
            ),
            DataType::Map(..) => Kind::Json,
            DataType::Dictionary(_, value) => Kind::read_of(
                &Field::new(field.name(), (**value).clone(), true)
                    .with_metadata(field.metadata().clone()),
            ),
            _ => Kind::Null,
        }
    }
}

/// The type name a Parquet or Arrow IPC column declares ([`reel_core::FieldSpec::kind`]):
/// Arrow's name of its type, followed by the field metadata that changes how it reads (a
/// `reel.type` tag, the fixed-shape tensor extension), in brackets. Arrow's type names
/// parse back ([`DataType::from_str`](std::str::FromStr)) but carry no metadata of the
/// field itself, hence the brackets; [`kind_of_type_name`] reads both.
pub(crate) fn type_name(field: &Field) -> String {
    let mut name = field.data_type().to_string();
    if let Some(tag) = field.metadata().get(REEL_TYPE_KEY) {
        name.push_str(&format!(" [{REEL_TYPE_KEY}={tag}]"));
    }
    if let Some(declared) = field.metadata().get(REEL_DECLARED_KEY) {
        name.push_str(&format!(" [{REEL_DECLARED_KEY}={declared}]"));
    }
    if field.metadata().get(EXTENSION_NAME_KEY).map(String::as_str) == Some(FIXED_SHAPE_TENSOR) {
        let meta = field.metadata().get(EXTENSION_METADATA_KEY).map_or("", String::as_str);
        name.push_str(&format!(" [{FIXED_SHAPE_TENSOR}={meta}]"));
    }
    name
}

/// The kind a [`type_name`] stands for ([`Kind::read_of`] its type), or `None` when `name`
/// is not one: another format's type name, or an Arrow type whose name does not parse back
/// (one with metadata on a nested field, which Arrow's parser does not read yet).
pub(crate) fn kind_of_type_name(name: &str) -> Option<Kind> {
    parse_type_name(name).map(|field| Kind::read_of(&field))
}

/// Whether two declared column types ([`reel_core::FieldSpec::kind`] of Parquet or Arrow
/// IPC files) read as values of one kind: `Utf8` and `LargeUtf8`, a dictionary of strings
/// and strings, `Int32` and `Int64`. Parts of one table written by different tools
/// (pyarrow, polars, Spark) differ so, and read as one table, as `pyarrow.dataset` reads
/// them. Names that are not Arrow type names are alike only when equal.
///
/// Dates, times, timestamps and durations read as their plain stored count, so they are
/// alike only with the same type and unit (a timestamp's time zone aside): a count of
/// milliseconds beside one of microseconds, of days or of plain integers would make one
/// column of numbers that mean different things.
pub fn read_alike(a: &str, b: &str) -> bool {
    if a == b {
        return true;
    }
    let (Some(a), Some(b)) = (parse_type_name(a), parse_type_name(b)) else {
        return false;
    };
    if Kind::read_of(&a) != Kind::read_of(&b) {
        return false;
    }
    let (mut units_a, mut units_b) = (Vec::new(), Vec::new());
    count_units(a.data_type(), &mut units_a);
    count_units(b.data_type(), &mut units_b);
    units_a == units_b
}

/// What the stored counts of `dt`'s leaves count, in a walk of its children: the temporal
/// type for a date, time, timestamp (without its time zone) or duration, `Null` for any
/// other leaf (whose values mean themselves).
fn count_units(dt: &DataType, out: &mut Vec<DataType>) {
    match dt {
        DataType::Timestamp(unit, _) => out.push(DataType::Timestamp(*unit, None)),
        DataType::Date32
        | DataType::Date64
        | DataType::Time32(_)
        | DataType::Time64(_)
        | DataType::Duration(_)
        | DataType::Interval(_) => out.push(dt.clone()),
        DataType::Dictionary(_, values) => count_units(values, out),
        DataType::List(item)
        | DataType::LargeList(item)
        | DataType::ListView(item)
        | DataType::LargeListView(item)
        | DataType::FixedSizeList(item, _)
        | DataType::Map(item, _) => count_units(item.data_type(), out),
        DataType::RunEndEncoded(_, values) => count_units(values.data_type(), out),
        DataType::Struct(fields) => fields.iter().for_each(|f| count_units(f.data_type(), out)),
        DataType::Union(fields, _) => {
            fields.iter().for_each(|(_, f)| count_units(f.data_type(), out))
        }
        _ => out.push(DataType::Null),
    }
}

/// The (unnamed) Arrow field a [`type_name`] stands for, or `None` (see
/// [`kind_of_type_name`]).
pub(crate) fn parse_type_name(name: &str) -> Option<Field> {
    let (type_part, mut rest) = match name.find(" [") {
        Some(at) => (&name[..at], &name[at..]),
        None => (name, ""),
    };
    let data_type: DataType = type_part.parse().ok()?;
    let mut metadata = HashMap::new();
    while let Some(annotation) = rest.strip_prefix(" [") {
        // The tensor metadata is JSON, so it may hold brackets: it ends at the last "]".
        let (body, after) = match annotation.strip_prefix(FIXED_SHAPE_TENSOR) {
            Some(_) => (annotation.strip_suffix(']')?, ""),
            None => {
                let end = annotation_end(annotation)?;
                (&annotation[..end], &annotation[end + 1..])
            }
        };
        let (key, value) = body.split_once('=')?;
        if key == FIXED_SHAPE_TENSOR {
            metadata.insert(EXTENSION_NAME_KEY.to_string(), FIXED_SHAPE_TENSOR.to_string());
            metadata.insert(EXTENSION_METADATA_KEY.to_string(), value.to_string());
        } else {
            metadata.insert(key.to_string(), value.to_string());
        }
        rest = after;
    }
    if !rest.is_empty() {
        return None;
    }
    Some(Field::new("", data_type, true).with_metadata(metadata))
}

/// The kind of one element of an array of `dtype`, for arrays that join lists.
fn element_kind(dtype: DType) -> Option<Kind> {
    Some(match dtype {
        DType::I8 | DType::I16 | DType::I32 | DType::I64 => {
            Kind::Int { negative: true, huge: false }
        }
        DType::U8 | DType::U16 | DType::U32 => Kind::Int { negative: false, huge: false },
        DType::U64 => Kind::Int { negative: false, huge: true },
        DType::F16 | DType::F32 | DType::F64 => Kind::Float,
        DType::Bool => Kind::Bool,
        _ => return None,
    })
}

/// The item field of a column of 1-D arrays: nullable, since a Parquet list of numbers
/// with a null item reads as a list that goes into the column with a null element (and
/// the item field is nullable in what pyarrow and most writers write).
pub(crate) fn vector_item_field(dtype: DType) -> FieldRef {
    let dt = primitive(dtype).unwrap_or(DataType::UInt8);
    Arc::new(Field::new("item", dt, true))
}

/// The item field of a fixed-shape tensor column (whose elements are never null).
pub(crate) fn element_field(dtype: DType) -> FieldRef {
    let dt = primitive(dtype).unwrap_or(DataType::UInt8);
    Arc::new(Field::new("item", dt, false))
}

/// The children of the generic array struct: numpy dtype string, shape, C-order bytes.
pub(crate) fn ndarray_fields(large: bool) -> Fields {
    Fields::from(vec![
        Field::new("dtype", DataType::Utf8, false),
        Field::new(
            "shape",
            DataType::List(Arc::new(Field::new("item", DataType::UInt64, false))),
            false,
        ),
        Field::new("data", if large { DataType::LargeBinary } else { DataType::Binary }, false),
    ])
}

/// `text` from a file, cut to a length fit for an error message (metadata may be long).
fn clipped(mut text: String) -> String {
    const KEEP: usize = 64;
    if text.len() > KEEP {
        let cut = (0..=KEEP).rev().find(|&k| text.is_char_boundary(k)).unwrap_or(0);
        text.truncate(cut);
        text.push('…');
    }
    text
}

/// The shape stored in a fixed-shape tensor field's extension metadata.
pub(crate) fn tensor_shape(field: &Field) -> Result<Vec<u64>> {
    let bad = || {
        Error::schema(format!(
            "field {:?}: arrow.fixed_shape_tensor metadata has no valid \"shape\"",
            field.name()
        ))
    };
    let meta = field.metadata().get(EXTENSION_METADATA_KEY).ok_or_else(bad)?;
    let json: serde_json::Value = serde_json::from_str(meta).map_err(|_| bad())?;
    let dims = json.get("shape").and_then(|s| s.as_array()).ok_or_else(bad)?;
    // A permutation says the stored (row-major) layout is a transpose of the logical
    // tensor; reading it would need the elements reordered, which reel does not do, and
    // reading it with the stored shape would give other tensors than the writer's. The
    // identity permutation changes nothing.
    if let Some(p) = json.get("permutation").filter(|p| !p.is_null()) {
        let identity = p.as_array().is_some_and(|p| {
            p.len() == dims.len() && p.iter().enumerate().all(|(k, x)| x.as_u64() == Some(k as u64))
        });
        if !identity {
            return Err(Error::unsupported(format!(
                "column {:?}: a fixed-shape tensor with a dimension permutation ({}), which \
                 reel does not read (it would need the elements reordered)",
                field.name(),
                clipped(p.to_string())
            )));
        }
    }
    let shape: Vec<u64> = dims.iter().map(|d| d.as_u64().ok_or_else(bad)).collect::<Result<_>>()?;
    let size = match field.data_type() {
        DataType::FixedSizeList(_, n) => *n as u64,
        _ => return Err(bad()),
    };
    if shape.iter().try_fold(1u64, |a, &d| a.checked_mul(d)) != Some(size) {
        return Err(Error::schema(format!(
            "field {:?}: tensor shape {} does not hold {size} elements",
            field.name(),
            clipped(format!("{shape:?}"))
        )));
    }
    Ok(shape)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merging_widens_or_falls_back_to_json() {
        let int = Kind::Int { negative: false, huge: false };
        assert_eq!(Kind::Null.merge(int.clone()), int);
        assert_eq!(int.clone().merge(Kind::Float), Kind::Json);
        assert_eq!(Kind::Vector(DType::F32).merge(Kind::Vector(DType::I64)), Kind::NdArray);
        // Arrays and lists of numbers (a Parquet list column with null items) join as lists.
        let floats = Kind::List(Box::new(Kind::Float));
        assert_eq!(Kind::Vector(DType::F32).merge(floats.clone()), floats);
        assert_eq!(floats.clone().merge(Kind::Vector(DType::F32)), floats);
        assert_eq!(Kind::List(Box::new(Kind::Str)).merge(Kind::Vector(DType::F32)), Kind::Json);
        let a = Kind::Struct(vec![("x".into(), int.clone())]);
        let b = Kind::Struct(vec![("y".into(), Kind::Str)]);
        assert_eq!(a.clone().merge(b), Kind::Json);
        let c = Kind::Struct(vec![("x".into(), Kind::Null)]);
        assert_eq!(a.merge(c), Kind::Struct(vec![("x".into(), int)]));
    }

    #[test]
    fn fields_map_back_to_their_kind() {
        for kind in [
            Kind::Bool,
            Kind::Int { negative: true, huge: false },
            Kind::Int { negative: false, huge: true },
            Kind::Float,
            Kind::Bytes,
            Kind::Str,
            Kind::Vector(DType::U16),
            Kind::Tensor(DType::F32, vec![2, 3]),
            Kind::NdArray,
            Kind::List(Box::new(Kind::Str)),
            Kind::List(Box::new(Kind::Int { negative: true, huge: false })),
            Kind::Struct(vec![("a".into(), Kind::Float)]),
            Kind::Json,
        ] {
            let field = kind.to_field("f", false);
            assert_eq!(Kind::from_field(&field).unwrap(), kind, "{field:?}");
        }
        let err = Kind::from_field(&Field::new("d", DataType::Date32, true)).unwrap_err();
        assert!(err.message().contains("\"d\""), "{err}");
    }

    /// What reel writes reads back as its kind, through the type name a file declares.
    #[test]
    fn type_names_read_back_as_the_kind_written() {
        for kind in [
            Kind::Bool,
            Kind::Int { negative: true, huge: false },
            Kind::Int { negative: false, huge: true },
            Kind::Float,
            Kind::Bytes,
            Kind::Str,
            Kind::Vector(DType::U16),
            Kind::Tensor(DType::F32, vec![2, 3]),
            Kind::NdArray,
            Kind::List(Box::new(Kind::Str)),
            Kind::List(Box::new(Kind::Vector(DType::F64))),
            Kind::Struct(vec![("a".into(), Kind::Float), ("b".into(), Kind::Bytes)]),
            Kind::Json,
        ] {
            for large in [false, true] {
                let field = kind.to_field("f", large);
                assert_eq!(Kind::read_of(&field), kind, "{field:?}");
                let name = type_name(&field);
                // A nested field's metadata is not in Arrow's name (a list of lists of
                // values): such names give no kind, and the sample decides alone.
                match kind_of_type_name(&name) {
                    Some(k) => assert_eq!(k, kind, "{name}"),
                    None => assert!(name.contains("{\""), "{name} does not parse"),
                }
            }
        }
    }

    /// Other tools' types read as the kind of their values.
    #[test]
    fn other_types_read_as_their_values() {
        use arrow_schema::TimeUnit;
        let signed = Kind::Int { negative: true, huge: false };
        for (dt, kind) in [
            (DataType::Int8, signed.clone()),
            (DataType::UInt32, Kind::Int { negative: false, huge: false }),
            (DataType::UInt64, Kind::Int { negative: false, huge: true }),
            (DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())), signed.clone()),
            (DataType::Date32, signed.clone()),
            (DataType::Float16, Kind::Float),
            (DataType::FixedSizeBinary(4), Kind::Bytes),
            (DataType::LargeUtf8, Kind::Str),
            (DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8)), Kind::Str),
            (
                DataType::List(Arc::new(Field::new("item", DataType::Float32, true))),
                Kind::Vector(DType::F32),
            ),
            (
                DataType::Map(
                    Arc::new(Field::new(
                        "entries",
                        DataType::Struct(Fields::from(vec![
                            Field::new("key", DataType::Utf8, false),
                            Field::new("value", DataType::Int64, true),
                        ])),
                        false,
                    )),
                    false,
                ),
                Kind::Json,
            ),
            (DataType::Decimal128(10, 2), Kind::Null),
        ] {
            let field = Field::new("c", dt, true);
            assert_eq!(Kind::read_of(&field), kind, "{field:?}");
            assert_eq!(kind_of_type_name(&type_name(&field)), Some(kind), "{field:?}");
        }
        for other in ["bytes", "int", "float32", "msgpack", "json", "array", ""] {
            assert_eq!(kind_of_type_name(other), None, "{other}");
        }
    }

    #[test]
    fn types_that_read_as_one_kind_of_value_are_alike() {
        let name = |dt: DataType| type_name(&Field::new("c", dt, true));
        let dict = DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8));
        assert!(read_alike(&name(DataType::Utf8), &name(DataType::LargeUtf8)));
        assert!(read_alike(&name(DataType::Utf8), &name(dict)));
        assert!(read_alike(&name(DataType::Int32), &name(DataType::Int64)));
        assert!(!read_alike(&name(DataType::Utf8), &name(DataType::Binary)));
        assert!(!read_alike(&name(DataType::Int64), &name(DataType::UInt64)));
        assert!(!read_alike(&name(DataType::Int64), &name(DataType::Float64)));
        assert!(read_alike("int", "int"));
        assert!(!read_alike("int", "bytes"));
    }

    #[test]
    fn temporal_types_are_alike_only_with_the_same_unit() {
        use arrow_schema::TimeUnit::{Microsecond, Millisecond, Nanosecond, Second};
        let name = |dt: DataType| type_name(&Field::new("c", dt, true));
        let ts = |unit, tz: Option<&str>| DataType::Timestamp(unit, tz.map(Into::into));
        let list = |dt: DataType| DataType::List(Arc::new(Field::new("item", dt, true)));
        assert!(read_alike(&name(ts(Millisecond, None)), &name(ts(Millisecond, Some("UTC")))));
        for (a, b) in [
            (ts(Millisecond, None), ts(Microsecond, None)),
            (ts(Second, Some("UTC")), ts(Nanosecond, Some("UTC"))),
            (ts(Millisecond, None), DataType::Date32),
            (DataType::Date32, DataType::Date64),
            (ts(Nanosecond, None), DataType::Duration(Nanosecond)),
            (DataType::Duration(Second), DataType::Duration(Millisecond)),
            (DataType::Time32(Second), DataType::Time32(Millisecond)),
            (ts(Second, None), DataType::Int64),
            (DataType::Date32, DataType::Int32),
            (list(ts(Millisecond, None)), list(ts(Microsecond, None))),
        ] {
            assert!(!read_alike(&name(a.clone()), &name(b.clone())), "{a} and {b}");
        }
    }
}
