//! `serde` support (feature `serde`): values and records serialise like a map of field name
//! to value, and a record deserialises into a user's struct, like `csv::StringRecord`.
//!
//! | reel value | serde data model |
//! | --- | --- |
//! | `Null` | unit (`None` for an `Option`) |
//! | `Bool`, `Int`, `UInt`, `Float` | bool, i64, u64, f64 |
//! | `Bytes` | bytes (borrowed when deserialising) |
//! | `Str` | str (borrowed when deserialising) |
//! | `Array` | the flat sequence of its elements in C order (the shape is not part of it) |
//! | `List` | sequence |
//! | `Map` | map |
//!
//! An owned [`Value`](crate::Value) holds spans into its record's buffer: serialise its
//! `value.view(buffer)`, or the record.
//!
//! Array elements are numbers (`float16` widened to `f64`), booleans or, for fixed-width
//! byte strings and opaque elements, bytes. Arrays of complex numbers, `float128` and
//! fixed-width UCS-4 text have no serde form and are refused naming their dtype.

use serde::de::value::{MapDeserializer, SeqDeserializer};
use serde::de::{self, Deserialize, IntoDeserializer, Visitor};
use serde::ser::{self, Serialize, SerializeMap, SerializeSeq, Serializer};

use crate::value::f16_to_f32;
use crate::{ArrayRef, DType, Element, Error, Record, RecordRef, Result, ValueRef};

/// One array element as a scalar value, or why it has none.
fn element(dtype: DType, bytes: &[u8]) -> std::result::Result<ValueRef<'_>, String> {
    // Element::from_le_slice reads each fixed-width type, as `ArrayRef::values` does.
    fn le<T: Element>(bytes: &[u8]) -> T {
        T::from_le_slice(bytes)
    }
    Ok(match dtype {
        DType::Bool => ValueRef::Bool(le(bytes)),
        DType::I8 => ValueRef::Int(le::<i8>(bytes).into()),
        DType::I16 => ValueRef::Int(le::<i16>(bytes).into()),
        DType::I32 => ValueRef::Int(le::<i32>(bytes).into()),
        DType::I64 => ValueRef::Int(le(bytes)),
        DType::U8 => ValueRef::UInt(le::<u8>(bytes).into()),
        DType::U16 => ValueRef::UInt(le::<u16>(bytes).into()),
        DType::U32 => ValueRef::UInt(le::<u32>(bytes).into()),
        DType::U64 => ValueRef::UInt(le(bytes)),
        DType::F16 => ValueRef::Float(f16_to_f32(le(bytes)).into()),
        DType::F32 => ValueRef::Float(le::<f32>(bytes).into()),
        DType::F64 => ValueRef::Float(le(bytes)),
        DType::FixedBytes(_) | DType::Void(_) => ValueRef::Bytes(bytes),
        DType::F128 | DType::C64 | DType::C128 | DType::Unicode(_) => {
            return Err(format!("an array of {} has no serde form", dtype.name()));
        }
    })
}

/// The elements of `array` as scalar values, in C order.
fn elements<'a>(
    array: ArrayRef<'a>,
) -> impl ExactSizeIterator<Item = std::result::Result<ValueRef<'a>, String>> + 'a {
    let size = usize::try_from(array.dtype.item_size()).unwrap_or(usize::MAX).max(1);
    let dtype = array.dtype;
    array.data.chunks_exact(size).map(move |bytes| element(dtype, bytes))
}

impl Serialize for ValueRef<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        match *self {
            ValueRef::Null => s.serialize_unit(),
            ValueRef::Bool(b) => s.serialize_bool(b),
            ValueRef::Int(i) => s.serialize_i64(i),
            ValueRef::UInt(u) => s.serialize_u64(u),
            ValueRef::Float(f) => s.serialize_f64(f),
            ValueRef::Bytes(b) => s.serialize_bytes(b),
            ValueRef::Str(t) => s.serialize_str(t),
            ValueRef::Array(a) => {
                let items = elements(a);
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(&item.map_err(ser::Error::custom)?)?;
                }
                seq.end()
            }
            ValueRef::List(l) => s.collect_seq(l.iter()),
            ValueRef::Map(m) => {
                let mut map = s.serialize_map(Some(m.len()))?;
                for (k, v) in m.iter() {
                    map.serialize_entry(&k, &v)?;
                }
                map.end()
            }
        }
    }
}

/// A record serialises as a map of its field names to their values, in field order.
impl Serialize for RecordRef<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.collect_map(self.iter())
    }
}

/// As its [`RecordRef`].
impl Serialize for Record {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        self.view().serialize(s)
    }
}

/// Reads one [`ValueRef`] as serde data: what `RecordRef::deserialize` hands a struct's
/// fields to.
#[derive(Clone, Copy)]
struct ValueDeserializer<'a>(ValueRef<'a>);

impl<'de> IntoDeserializer<'de, de::value::Error> for ValueDeserializer<'de> {
    type Deserializer = Self;
    fn into_deserializer(self) -> Self {
        self
    }
}

impl<'de> de::Deserializer<'de> for ValueDeserializer<'de> {
    type Error = de::value::Error;

    fn deserialize_any<V: Visitor<'de>>(
        self,
        visitor: V,
    ) -> std::result::Result<V::Value, Self::Error> {
        match self.0 {
            ValueRef::Null => visitor.visit_unit(),
            ValueRef::Bool(b) => visitor.visit_bool(b),
            ValueRef::Int(i) => visitor.visit_i64(i),
            ValueRef::UInt(u) => visitor.visit_u64(u),
            ValueRef::Float(f) => visitor.visit_f64(f),
            ValueRef::Bytes(b) => visitor.visit_borrowed_bytes(b),
            ValueRef::Str(t) => visitor.visit_borrowed_str(t),
            ValueRef::Array(a) => {
                let items = elements(a)
                    .map(|e| e.map(ValueDeserializer))
                    .collect::<std::result::Result<Vec<_>, String>>()
                    .map_err(de::Error::custom)?;
                let mut seq = SeqDeserializer::new(items.into_iter());
                let out = visitor.visit_seq(&mut seq)?;
                seq.end()?;
                Ok(out)
            }
            ValueRef::List(l) => {
                let mut seq = SeqDeserializer::new(l.iter().map(ValueDeserializer));
                let out = visitor.visit_seq(&mut seq)?;
                seq.end()?;
                Ok(out)
            }
            ValueRef::Map(m) => {
                let mut map = MapDeserializer::new(
                    m.iter().map(|(k, v)| (ValueDeserializer(k), ValueDeserializer(v))),
                );
                let out = visitor.visit_map(&mut map)?;
                map.end()?;
                Ok(out)
            }
        }
    }

    /// `Null` is `None`; anything else is `Some` of itself.
    fn deserialize_option<V: Visitor<'de>>(
        self,
        visitor: V,
    ) -> std::result::Result<V::Value, Self::Error> {
        match self.0 {
            ValueRef::Null => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        unit unit_struct newtype_struct seq tuple tuple_struct map struct enum identifier
        ignored_any
    }
}

impl<'a> RecordRef<'a> {
    /// The record as a `T` (a struct whose fields are named as the record's, a map, …),
    /// borrowing text and bytes from the record where `T` borrows (`&str`, `&[u8]` with
    /// `#[serde(borrow)]`). Feature `serde`.
    ///
    /// ```
    /// use reel_core::Record;
    /// #[derive(serde::Deserialize, Debug, PartialEq)]
    /// struct Sample<'a> {
    ///     label: i64,
    ///     caption: &'a str,
    ///     score: Option<f64>,
    /// }
    /// let record = Record::new().with_int("label", 3).with_str("caption", "a cat");
    /// let sample: Sample = record.view().deserialize()?;
    /// assert_eq!(sample, Sample { label: 3, caption: "a cat", score: None });
    /// # Ok::<(), reel_core::Error>(())
    /// ```
    ///
    /// A field `T` requires that the record lacks, or whose value does not fit, is a
    /// [`Schema`](crate::ErrorKind::Schema) error naming the record.
    pub fn deserialize<T: Deserialize<'a>>(&self) -> Result<T> {
        let fields = self.iter().map(|(name, value)| (name, ValueDeserializer(value)));
        // As a deserializer, the map checks that every field was taken.
        let map = MapDeserializer::<_, de::value::Error>::new(fields);
        T::deserialize(map).map_err(|e| {
            Error::schema(format!(
                "record {} does not read as {}: {e}",
                self.index(),
                std::any::type_name::<T>()
            ))
            .with_record(self.index())
        })
    }
}

impl Record {
    /// [`RecordRef::deserialize`] of this record's view. Feature `serde`.
    pub fn deserialize<'a, T: Deserialize<'a>>(&'a self) -> Result<T> {
        self.view().deserialize()
    }
}
