//! Typed access to the features of a decoded OFRecord.
//!
//! A decoded record stores each feature as a core value (see the crate documentation for
//! the mapping). [`OfrecordFeatures`] reads them back in OFRecord's terms:
//! `record.get_f32s("x")`, `record.get_bytes("encoded")`, `record.feature("y")`.

use reel_core::{ArrayRef, DType, Error, ErrorKind, ListRef, Record, RecordRef, Result, ValueRef};

use crate::FORMAT;

/// The five list kinds a `Feature` can hold (the members of its `kind` oneof).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FeatureKind {
    /// `bytes_list`: byte strings.
    BytesList,
    /// `float_list`: IEEE-754 binary32 values.
    FloatList,
    /// `double_list`: IEEE-754 binary64 values.
    DoubleList,
    /// `int32_list`: 32-bit signed integers.
    Int32List,
    /// `int64_list`: 64-bit signed integers.
    Int64List,
}

impl FeatureKind {
    /// Every kind, in field-number order.
    pub const ALL: [FeatureKind; 5] = [
        FeatureKind::BytesList,
        FeatureKind::FloatList,
        FeatureKind::DoubleList,
        FeatureKind::Int32List,
        FeatureKind::Int64List,
    ];

    /// The name `record.proto` gives the oneof member (`"bytes_list"`, …).
    pub fn name(self) -> &'static str {
        match self {
            FeatureKind::BytesList => "bytes_list",
            FeatureKind::FloatList => "float_list",
            FeatureKind::DoubleList => "double_list",
            FeatureKind::Int32List => "int32_list",
            FeatureKind::Int64List => "int64_list",
        }
    }

    /// The kind called `name` in `record.proto`.
    pub fn from_name(name: &str) -> Option<FeatureKind> {
        FeatureKind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// The field number of the oneof member inside `Feature` (1–5).
    pub fn field_number(self) -> u32 {
        match self {
            FeatureKind::BytesList => 1,
            FeatureKind::FloatList => 2,
            FeatureKind::DoubleList => 3,
            FeatureKind::Int32List => 4,
            FeatureKind::Int64List => 5,
        }
    }

    /// The kind whose field number is `n`.
    pub fn from_field_number(n: u32) -> Option<FeatureKind> {
        FeatureKind::ALL.get(n.checked_sub(1)? as usize).copied()
    }

    /// The array element type the numeric kinds decode to; `None` for `bytes_list`.
    pub fn dtype(self) -> Option<DType> {
        match self {
            FeatureKind::BytesList => None,
            FeatureKind::FloatList => Some(DType::F32),
            FeatureKind::DoubleList => Some(DType::F64),
            FeatureKind::Int32List => Some(DType::I32),
            FeatureKind::Int64List => Some(DType::I64),
        }
    }

    /// The numeric kind that decodes to `dtype`.
    pub fn from_dtype(dtype: DType) -> Option<FeatureKind> {
        match dtype {
            DType::F32 => Some(FeatureKind::FloatList),
            DType::F64 => Some(FeatureKind::DoubleList),
            DType::I32 => Some(FeatureKind::Int32List),
            DType::I64 => Some(FeatureKind::Int64List),
            _ => None,
        }
    }
}

impl std::fmt::Display for FeatureKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A feature of a decoded record, in OFRecord's terms.
///
/// Numeric lists are [`ArrayRef`]s over little-endian bytes (read them with
/// `to_f32_vec()` and friends, or use the bytes directly); a `bytes_list` is a list of
/// `Bytes` values.
#[derive(Clone, Copy, Debug)]
pub enum FeatureRef<'a> {
    /// A `Feature` with no kind set (not the same as an empty list).
    NoKind,
    /// `bytes_list`.
    BytesList(ListRef<'a>),
    /// `float_list` (dtype `F32`, one dimension).
    FloatList(ArrayRef<'a>),
    /// `double_list` (dtype `F64`, one dimension).
    DoubleList(ArrayRef<'a>),
    /// `int32_list` (dtype `I32`, one dimension).
    Int32List(ArrayRef<'a>),
    /// `int64_list` (dtype `I64`, one dimension).
    Int64List(ArrayRef<'a>),
}

impl<'a> FeatureRef<'a> {
    /// The feature a core value stands for under the crate's mapping, or `None` if the
    /// value is not one the reader produces (the writer accepts more; see
    /// [`encode_record`](crate::encode_record)).
    pub fn from_value(value: ValueRef<'a>) -> Option<FeatureRef<'a>> {
        match value {
            ValueRef::Null => Some(FeatureRef::NoKind),
            ValueRef::List(l) => l
                .iter()
                .all(|v| matches!(v, ValueRef::Bytes(_)))
                .then_some(FeatureRef::BytesList(l)),
            ValueRef::Array(a) if a.shape.len() == 1 => match FeatureKind::from_dtype(a.dtype)? {
                FeatureKind::FloatList => Some(FeatureRef::FloatList(a)),
                FeatureKind::DoubleList => Some(FeatureRef::DoubleList(a)),
                FeatureKind::Int32List => Some(FeatureRef::Int32List(a)),
                FeatureKind::Int64List => Some(FeatureRef::Int64List(a)),
                FeatureKind::BytesList => None,
            },
            _ => None,
        }
    }

    /// The kind, `None` for a feature with no kind.
    pub fn kind(&self) -> Option<FeatureKind> {
        match self {
            FeatureRef::NoKind => None,
            FeatureRef::BytesList(_) => Some(FeatureKind::BytesList),
            FeatureRef::FloatList(_) => Some(FeatureKind::FloatList),
            FeatureRef::DoubleList(_) => Some(FeatureKind::DoubleList),
            FeatureRef::Int32List(_) => Some(FeatureKind::Int32List),
            FeatureRef::Int64List(_) => Some(FeatureKind::Int64List),
        }
    }

    /// Number of values (0 for a feature with no kind).
    pub fn len(&self) -> usize {
        match self {
            FeatureRef::NoKind => 0,
            FeatureRef::BytesList(l) => l.len(),
            FeatureRef::FloatList(a)
            | FeatureRef::DoubleList(a)
            | FeatureRef::Int32List(a)
            | FeatureRef::Int64List(a) => a.len() as usize,
        }
    }

    /// Whether the feature holds no values.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The values of a `bytes_list`, borrowed.
    pub fn bytes_values(&self) -> Option<impl ExactSizeIterator<Item = &'a [u8]> + use<'a>> {
        match self {
            FeatureRef::BytesList(l) => Some(l.iter().map(|v| v.as_bytes().unwrap_or_default())),
            _ => None,
        }
    }
}

fn wrong_kind(name: &str, want: &str, got: &FeatureRef<'_>) -> Error {
    let got = got.kind().map_or("a feature with no kind", FeatureKind::name);
    Error::schema(format!("feature {name:?} is {got}, not {want}")).with_format(FORMAT)
}

/// OFRecord-style accessors for decoded records ([`RecordRef`] and `&Record`).
///
/// Every method fails with [`ErrorKind::NotFound`] when the record has no feature called
/// `name` and with [`ErrorKind::Schema`] when it has one of another kind.
pub trait OfrecordFeatures<'a>: Copy {
    /// The feature called `name`.
    fn feature(self, name: &str) -> Result<FeatureRef<'a>>;

    /// The values of a `float_list`.
    fn get_f32s(self, name: &str) -> Result<Vec<f32>> {
        match self.feature(name)? {
            FeatureRef::FloatList(a) => Ok(a.to_f32_vec().unwrap_or_default()),
            other => Err(wrong_kind(name, "float_list", &other)),
        }
    }

    /// The values of a `double_list`.
    fn get_f64s(self, name: &str) -> Result<Vec<f64>> {
        match self.feature(name)? {
            FeatureRef::DoubleList(a) => Ok(a.to_f64_vec().unwrap_or_default()),
            other => Err(wrong_kind(name, "double_list", &other)),
        }
    }

    /// The values of an `int32_list`.
    fn get_i32s(self, name: &str) -> Result<Vec<i32>> {
        match self.feature(name)? {
            FeatureRef::Int32List(a) => Ok(a.to_i32_vec().unwrap_or_default()),
            other => Err(wrong_kind(name, "int32_list", &other)),
        }
    }

    /// The values of an `int64_list`.
    fn get_i64s(self, name: &str) -> Result<Vec<i64>> {
        match self.feature(name)? {
            FeatureRef::Int64List(a) => Ok(a.to_i64_vec().unwrap_or_default()),
            other => Err(wrong_kind(name, "int64_list", &other)),
        }
    }

    /// The values of a `bytes_list`, borrowed from the record.
    fn get_bytes_list(self, name: &str) -> Result<Vec<&'a [u8]>> {
        let f = self.feature(name)?;
        match f.bytes_values() {
            Some(values) => Ok(values.collect()),
            None => Err(wrong_kind(name, "bytes_list", &f)),
        }
    }

    /// The single value of a `bytes_list` that must hold exactly one (what OneFlow's
    /// bytes and image decoders require, e.g. of `"encoded"`).
    fn get_bytes(self, name: &str) -> Result<&'a [u8]> {
        let values = self.get_bytes_list(name)?;
        match values.as_slice() {
            [one] => Ok(one),
            _ => Err(Error::schema(format!(
                "feature {name:?} holds {} byte strings, not exactly one",
                values.len()
            ))
            .with_format(FORMAT)),
        }
    }
}

impl<'a> OfrecordFeatures<'a> for RecordRef<'a> {
    fn feature(self, name: &str) -> Result<FeatureRef<'a>> {
        let value = self.get(name).ok_or_else(|| {
            Error::new(ErrorKind::NotFound, format!("the record has no feature {name:?}"))
                .with_format(FORMAT)
                .with_record(self.index())
        })?;
        FeatureRef::from_value(value).ok_or_else(|| {
            Error::schema(format!(
                "field {name:?} holds a {} value, which is not an OFRecord feature",
                value.kind_name()
            ))
            .with_format(FORMAT)
        })
    }
}

impl<'a> OfrecordFeatures<'a> for &'a Record {
    fn feature(self, name: &str) -> Result<FeatureRef<'a>> {
        self.view().feature(name)
    }
}
