//! Field values: what a record holds.
//!
//! Values are stored as [`Value`], whose byte-carrying variants hold a [`Span`] into the
//! buffer of the record (or batch) that owns them. That is what lets a reader hand out the
//! bytes it read without copying them and reuse one buffer for a whole batch. Users read
//! values through [`ValueRef`], which resolves the spans into slices.

use std::fmt;

/// A byte range inside the buffer of a record or batch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Span {
    /// First byte.
    pub start: usize,
    /// Number of bytes.
    pub len: usize,
}

impl Span {
    /// The span `start..start + len`.
    pub const fn new(start: usize, len: usize) -> Self {
        Span { start, len }
    }

    /// One past the last byte.
    pub const fn end(self) -> usize {
        self.start + self.len
    }

    /// The sub-span `offset..offset + len` of this span; `None` if it does not fit.
    pub fn sub(self, offset: usize, len: usize) -> Option<Span> {
        let end = offset.checked_add(len)?;
        (end <= self.len).then(|| Span::new(self.start + offset, len))
    }

    /// Resolves the span in `buf`; an empty slice if it lies outside (never panics).
    #[inline]
    pub fn get(self, buf: &[u8]) -> &[u8] {
        buf.get(self.start..self.end()).unwrap_or_default()
    }
}

/// The element type of an n-dimensional array. Elements are stored little-endian.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DType {
    /// One byte, 0 or 1.
    Bool,
    /// Signed 8-bit integer.
    I8,
    /// Signed 16-bit integer.
    I16,
    /// Signed 32-bit integer.
    I32,
    /// Signed 64-bit integer.
    I64,
    /// Unsigned 8-bit integer.
    U8,
    /// Unsigned 16-bit integer.
    U16,
    /// Unsigned 32-bit integer.
    U32,
    /// Unsigned 64-bit integer.
    U64,
    /// IEEE half precision.
    F16,
    /// IEEE single precision.
    F32,
    /// IEEE double precision.
    F64,
    /// numpy's `float128` (x87 extended precision padded to 16 bytes), kept as opaque bytes.
    F128,
    /// Complex of two `f32`.
    C64,
    /// Complex of two `f64`.
    C128,
    /// Fixed-width UCS-4 text, `n` code points per element (numpy `<Un`).
    Unicode(u32),
    /// Fixed-width byte strings, `n` bytes per element (numpy `|Sn`).
    FixedBytes(u32),
    /// Opaque fixed-width elements of `n` bytes (numpy `|Vn`).
    Void(u32),
}

impl DType {
    /// Bytes per element.
    pub fn item_size(self) -> u64 {
        match self {
            DType::Bool | DType::I8 | DType::U8 => 1,
            DType::I16 | DType::U16 | DType::F16 => 2,
            DType::I32 | DType::U32 | DType::F32 => 4,
            DType::I64 | DType::U64 | DType::F64 | DType::C64 => 8,
            DType::F128 | DType::C128 => 16,
            DType::Unicode(n) => 4 * n as u64,
            DType::FixedBytes(n) | DType::Void(n) => n as u64,
        }
    }

    /// The numpy name (`"int16"`, `"float64"`, `"<U4"` for text).
    pub fn name(self) -> String {
        match self {
            DType::Unicode(_) | DType::FixedBytes(_) | DType::Void(_) => self.numpy_str(),
            _ => self.simple_name().unwrap_or("unknown").to_string(),
        }
    }

    fn simple_name(self) -> Option<&'static str> {
        Some(match self {
            DType::Bool => "bool",
            DType::I8 => "int8",
            DType::I16 => "int16",
            DType::I32 => "int32",
            DType::I64 => "int64",
            DType::U8 => "uint8",
            DType::U16 => "uint16",
            DType::U32 => "uint32",
            DType::U64 => "uint64",
            DType::F16 => "float16",
            DType::F32 => "float32",
            DType::F64 => "float64",
            DType::F128 => "float128",
            DType::C64 => "complex64",
            DType::C128 => "complex128",
            _ => return None,
        })
    }

    /// Parses a numpy name such as `"int16"` or `"float128"`.
    pub fn from_name(name: &str) -> Option<DType> {
        Some(match name {
            "bool" => DType::Bool,
            "int8" => DType::I8,
            "int16" => DType::I16,
            "int32" => DType::I32,
            "int64" => DType::I64,
            "uint8" => DType::U8,
            "uint16" => DType::U16,
            "uint32" => DType::U32,
            "uint64" => DType::U64,
            "float16" => DType::F16,
            "float32" => DType::F32,
            "float64" => DType::F64,
            "float128" => DType::F128,
            "complex64" => DType::C64,
            "complex128" => DType::C128,
            _ => return None,
        })
    }

    /// numpy's little-endian dtype string (`"<i2"`, `"|u1"`, `"<U4"`).
    pub fn numpy_str(self) -> String {
        match self {
            DType::Bool => "|b1".into(),
            DType::I8 => "|i1".into(),
            DType::U8 => "|u1".into(),
            DType::I16 => "<i2".into(),
            DType::I32 => "<i4".into(),
            DType::I64 => "<i8".into(),
            DType::U16 => "<u2".into(),
            DType::U32 => "<u4".into(),
            DType::U64 => "<u8".into(),
            DType::F16 => "<f2".into(),
            DType::F32 => "<f4".into(),
            DType::F64 => "<f8".into(),
            DType::F128 => "<f16".into(),
            DType::C64 => "<c8".into(),
            DType::C128 => "<c16".into(),
            DType::Unicode(n) => format!("<U{n}"),
            DType::FixedBytes(n) => format!("|S{n}"),
            DType::Void(n) => format!("|V{n}"),
        }
    }

    /// Parses a numpy dtype string. Returns the type and whether the string said big-endian
    /// (`'>'`), in which case the caller must swap bytes to get the little-endian form.
    pub fn from_numpy_str(s: &str) -> Option<(DType, bool)> {
        let (order, rest) = match s.as_bytes().first()? {
            b'<' | b'|' | b'=' => (false, &s[1..]),
            b'>' => (true, &s[1..]),
            _ => (false, s),
        };
        let kind = rest.as_bytes().first()?;
        // `get`, not slicing: the kind may be a multi-byte character in hostile input.
        let size: u32 = rest.get(1..)?.parse().ok()?;
        let dt = match (kind, size) {
            (b'b', 1) => DType::Bool,
            (b'i', 1) => DType::I8,
            (b'i', 2) => DType::I16,
            (b'i', 4) => DType::I32,
            (b'i', 8) => DType::I64,
            (b'u', 1) => DType::U8,
            (b'u', 2) => DType::U16,
            (b'u', 4) => DType::U32,
            (b'u', 8) => DType::U64,
            (b'f', 2) => DType::F16,
            (b'f', 4) => DType::F32,
            (b'f', 8) => DType::F64,
            (b'f', 16) => DType::F128,
            (b'c', 8) => DType::C64,
            (b'c', 16) => DType::C128,
            (b'U', n) => DType::Unicode(n),
            (b'S', n) => DType::FixedBytes(n),
            (b'V', n) => DType::Void(n),
            _ => return None,
        };
        Some((dt, order))
    }

    /// The width of one byte-swappable unit: 0 when byte order does not apply.
    pub fn swap_unit(self) -> usize {
        match self {
            DType::Bool | DType::I8 | DType::U8 | DType::FixedBytes(_) | DType::Void(_) => 0,
            DType::C64 => 4,
            DType::C128 => 8,
            DType::Unicode(_) => 4,
            DType::F128 => 16,
            other => other.item_size() as usize,
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

const INLINE_DIMS: usize = 4;

/// The shape of an array: its extent in each dimension. Up to four dimensions are stored
/// inline, so arrays of the usual ranks cost no allocation.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Shape(ShapeRepr);

#[derive(Clone, PartialEq, Eq, Hash)]
enum ShapeRepr {
    Inline(u8, [u64; INLINE_DIMS]),
    Heap(Box<[u64]>),
}

impl Shape {
    /// The shape with the given dimensions.
    pub fn new(dims: &[u64]) -> Self {
        if dims.len() <= INLINE_DIMS {
            let mut inline = [0; INLINE_DIMS];
            inline[..dims.len()].copy_from_slice(dims);
            Shape(ShapeRepr::Inline(dims.len() as u8, inline))
        } else {
            Shape(ShapeRepr::Heap(dims.into()))
        }
    }

    /// A one-dimensional shape.
    pub fn vector(len: u64) -> Self {
        Shape::new(&[len])
    }

    /// The dimensions.
    pub fn dims(&self) -> &[u64] {
        match &self.0 {
            ShapeRepr::Inline(n, d) => &d[..*n as usize],
            ShapeRepr::Heap(d) => d,
        }
    }

    /// Number of elements, `None` on overflow.
    pub fn element_count(&self) -> Option<u64> {
        self.dims().iter().try_fold(1u64, |acc, &d| acc.checked_mul(d))
    }
}

impl fmt::Debug for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.dims()).finish()
    }
}

/// An array stored in a record: its type, shape and the span of its little-endian bytes.
#[derive(Clone, Debug, PartialEq)]
pub struct ArrayValue {
    /// Element type.
    pub dtype: DType,
    /// Extent per dimension.
    pub shape: Shape,
    /// The element bytes, C order, little-endian.
    pub data: Span,
}

/// A value as stored in a record. Byte-carrying variants point into the owner's buffer;
/// read values through [`ValueRef`] instead.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// No value (JSON `null`, msgpack `nil`).
    Null,
    /// A boolean.
    Bool(bool),
    /// A signed integer.
    Int(i64),
    /// An unsigned integer: the value of a field whose type is unsigned (a Granular `u64`,
    /// for example), whatever its size, or a self-describing integer (msgpack, JSON) above
    /// `i64::MAX`. [`ValueRef::as_u64`] and [`ValueRef::as_i64`] read either kind.
    UInt(u64),
    /// A floating-point number.
    Float(f64),
    /// Opaque bytes.
    Bytes(Span),
    /// UTF-8 text (validated when stored).
    Str(Span),
    /// An n-dimensional array.
    Array(ArrayValue),
    /// A sequence of values.
    List(Vec<Value>),
    /// Key-value pairs in the order the format gives them.
    Map(Vec<(Value, Value)>),
}

impl Value {
    /// A self-describing integer (msgpack, JSON), stored as `Int` when it fits in `i64` and
    /// as `UInt` otherwise, as Python's `int` has one kind for both. A field whose *type*
    /// is unsigned is `Value::UInt` whatever its value.
    pub fn from_u64(v: u64) -> Value {
        match i64::try_from(v) {
            Ok(i) => Value::Int(i),
            Err(_) => Value::UInt(v),
        }
    }

    /// Resolves the value against the buffer that owns its spans.
    pub fn view<'a>(&'a self, buf: &'a [u8]) -> ValueRef<'a> {
        match self {
            Value::Null => ValueRef::Null,
            Value::Bool(b) => ValueRef::Bool(*b),
            Value::Int(i) => ValueRef::Int(*i),
            Value::UInt(u) => ValueRef::UInt(*u),
            Value::Float(f) => ValueRef::Float(*f),
            Value::Bytes(s) => ValueRef::Bytes(s.get(buf)),
            // Text spans are validated when stored; an invalid one can only come from a
            // hand-built Value, and it reads as the empty string rather than panicking.
            Value::Str(s) => ValueRef::Str(std::str::from_utf8(s.get(buf)).unwrap_or_default()),
            Value::Array(a) => ValueRef::Array(ArrayRef {
                dtype: a.dtype,
                shape: a.shape.dims(),
                data: a.data.get(buf),
            }),
            Value::List(items) => ValueRef::List(ListRef { buf, items }),
            Value::Map(entries) => ValueRef::Map(MapRef { buf, entries }),
        }
    }
}

/// A borrowed view of a value.
///
/// Equality compares floats by their bits, so NaN equals the same NaN and `0.0 != -0.0`:
/// the question it answers is "did the bytes survive", not numeric equality. An `Int` and
/// a `UInt` of the same number are equal.
///
/// `Display` writes the value for a person: text as is, numbers as Rust writes them,
/// bytes as `b"…"` with escapes, arrays as their elements, lists and maps in brackets.
/// Long bytes, arrays and lists are cut after 32 elements with a count of the rest
/// (`{:#}` writes everything). `Debug` is the same with text quoted.
///
/// ```
/// use reel_core::Record;
/// let record = Record::new().with_str("name", "ann").with_int("age", 7).with_bytes("raw", b"\x00A");
/// assert_eq!(record.get("name").unwrap().to_string(), "ann");
/// assert_eq!(record.get("age").unwrap().to_string(), "7");
/// assert_eq!(record.get("raw").unwrap().to_string(), r#"b"\x00A""#);
/// ```
#[derive(Clone, Copy)]
pub enum ValueRef<'a> {
    /// No value.
    Null,
    /// A boolean.
    Bool(bool),
    /// A signed integer.
    Int(i64),
    /// An unsigned integer (see [`Value::UInt`]).
    UInt(u64),
    /// A floating-point number.
    Float(f64),
    /// Opaque bytes.
    Bytes(&'a [u8]),
    /// UTF-8 text.
    Str(&'a str),
    /// An n-dimensional array.
    Array(ArrayRef<'a>),
    /// A sequence of values.
    List(ListRef<'a>),
    /// Key-value pairs.
    Map(MapRef<'a>),
}

impl<'a> ValueRef<'a> {
    /// A short name of the variant, for messages.
    pub fn kind_name(&self) -> &'static str {
        match self {
            ValueRef::Null => "null",
            ValueRef::Bool(_) => "bool",
            ValueRef::Int(_) => "int",
            ValueRef::UInt(_) => "uint",
            ValueRef::Float(_) => "float",
            ValueRef::Bytes(_) => "bytes",
            ValueRef::Str(_) => "str",
            ValueRef::Array(_) => "array",
            ValueRef::List(_) => "list",
            ValueRef::Map(_) => "map",
        }
    }

    /// The bytes, if this is a `Bytes` value.
    pub fn as_bytes(&self) -> Option<&'a [u8]> {
        match self {
            ValueRef::Bytes(b) => Some(b),
            _ => None,
        }
    }

    /// The text, if this is a `Str` value.
    pub fn as_str(&self) -> Option<&'a str> {
        match self {
            ValueRef::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The integer, if this is an `Int` value or a `UInt` that fits.
    ///
    /// ```
    /// use reel_core::ValueRef;
    /// assert_eq!(ValueRef::UInt(7).as_i64(), Some(7));
    /// assert_eq!(ValueRef::UInt(u64::MAX).as_i64(), None);
    /// ```
    pub fn as_i64(&self) -> Option<i64> {
        match *self {
            ValueRef::Int(i) => Some(i),
            ValueRef::UInt(u) => i64::try_from(u).ok(),
            _ => None,
        }
    }

    /// The integer, if this is a `UInt` value or a non-negative `Int`.
    ///
    /// ```
    /// use reel_core::ValueRef;
    /// assert_eq!(ValueRef::Int(7).as_u64(), Some(7));
    /// assert_eq!(ValueRef::Int(-1).as_u64(), None);
    /// assert_eq!(ValueRef::UInt(u64::MAX).as_u64(), Some(u64::MAX));
    /// ```
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            ValueRef::Int(i) => u64::try_from(i).ok(),
            ValueRef::UInt(u) => Some(u),
            _ => None,
        }
    }

    /// The boolean, if this is a `Bool` value.
    ///
    /// ```
    /// use reel_core::ValueRef;
    /// assert_eq!(ValueRef::Bool(true).as_bool(), Some(true));
    /// assert_eq!(ValueRef::Int(1).as_bool(), None);
    /// ```
    pub fn as_bool(&self) -> Option<bool> {
        match *self {
            ValueRef::Bool(b) => Some(b),
            _ => None,
        }
    }

    /// The number as `f64`: a `Float`, or an integer that `f64` holds exactly (up to 2^53
    /// in magnitude); `None` for anything else, so no value is silently rounded.
    ///
    /// ```
    /// use reel_core::ValueRef;
    /// assert_eq!(ValueRef::Float(0.5).as_f64(), Some(0.5));
    /// assert_eq!(ValueRef::Int(-3).as_f64(), Some(-3.0));
    /// assert_eq!(ValueRef::UInt(u64::MAX).as_f64(), None);
    /// ```
    pub fn as_f64(&self) -> Option<f64> {
        const EXACT: u64 = 1 << 53;
        match *self {
            ValueRef::Float(f) => Some(f),
            ValueRef::Int(i) if i.unsigned_abs() <= EXACT => Some(i as f64),
            ValueRef::UInt(u) if u <= EXACT => Some(u as f64),
            _ => None,
        }
    }

    /// The array, if this is an `Array` value.
    pub fn as_array(&self) -> Option<ArrayRef<'a>> {
        match self {
            ValueRef::Array(a) => Some(*a),
            _ => None,
        }
    }

    /// The list, if this is a `List` value.
    pub fn as_list(&self) -> Option<ListRef<'a>> {
        match self {
            ValueRef::List(l) => Some(*l),
            _ => None,
        }
    }

    /// The map, if this is a `Map` value.
    pub fn as_map(&self) -> Option<MapRef<'a>> {
        match self {
            ValueRef::Map(m) => Some(*m),
            _ => None,
        }
    }
}

impl PartialEq for ValueRef<'_> {
    fn eq(&self, other: &Self) -> bool {
        use ValueRef as V;
        match (self, other) {
            (V::Null, V::Null) => true,
            (V::Bool(a), V::Bool(b)) => a == b,
            (V::Int(a), V::Int(b)) => a == b,
            (V::UInt(a), V::UInt(b)) => a == b,
            // One number in two kinds (a `u64` field read back from a self-describing format).
            (V::Int(a), V::UInt(b)) | (V::UInt(b), V::Int(a)) => u64::try_from(*a) == Ok(*b),
            (V::Float(a), V::Float(b)) => a.to_bits() == b.to_bits(),
            (V::Bytes(a), V::Bytes(b)) => a == b,
            (V::Str(a), V::Str(b)) => a == b,
            (V::Array(a), V::Array(b)) => a == b,
            (V::List(a), V::List(b)) => a.len() == b.len() && a.iter().eq(b.iter()),
            (V::Map(a), V::Map(b)) => a.len() == b.len() && a.iter().eq(b.iter()),
            _ => false,
        }
    }
}

/// A borrowed array.
#[derive(Clone, Copy, PartialEq)]
pub struct ArrayRef<'a> {
    /// Element type.
    pub dtype: DType,
    /// Extent per dimension.
    pub shape: &'a [u64],
    /// Element bytes, C order, little-endian.
    pub data: &'a [u8],
}

/// A Rust type an array's elements can be read as: the fixed-width numeric types and
/// `bool`, each matching one [`DType`]. Implemented by reel only (sealed).
pub trait Element: Copy + sealed::Sealed + 'static {
    /// The dtype whose elements read as this type.
    const DTYPE: DType;
    /// One element from its little-endian bytes (exactly `DTYPE.item_size()` of them).
    fn from_le_slice(bytes: &[u8]) -> Self;
}

mod sealed {
    pub trait Sealed {}
}

macro_rules! numeric_element {
    ($($t:ty => $dt:ident),* $(,)?) => {$(
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const DTYPE: DType = DType::$dt;
            fn from_le_slice(bytes: &[u8]) -> Self {
                let mut raw = [0u8; std::mem::size_of::<$t>()];
                let n = raw.len().min(bytes.len());
                raw[..n].copy_from_slice(&bytes[..n]);
                <$t>::from_le_bytes(raw)
            }
        }
    )*};
}

numeric_element! {
    i8 => I8, i16 => I16, i32 => I32, i64 => I64,
    u8 => U8, u16 => U16, u32 => U32, u64 => U64,
    f32 => F32, f64 => F64,
}

impl sealed::Sealed for bool {}
impl Element for bool {
    const DTYPE: DType = DType::Bool;
    fn from_le_slice(bytes: &[u8]) -> Self {
        bytes.first().is_some_and(|&b| b != 0)
    }
}

macro_rules! typed_vec {
    ($(#[$doc:meta] $name:ident, $t:ty;)*) => {$(
        #[$doc]
        pub fn $name(&self) -> Option<Vec<$t>> {
            self.to_vec::<$t>()
        }
    )*};
}

impl<'a> ArrayRef<'a> {
    /// Number of elements.
    pub fn len(&self) -> u64 {
        self.shape.iter().product()
    }

    /// Whether the array has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The elements as `T`, if the dtype is `T`'s ([`Element::DTYPE`]): `to_vec::<f32>()`,
    /// `to_vec::<u16>()`, `to_vec::<bool>()` … `None` for another dtype, so nothing is
    /// silently converted.
    ///
    /// ```
    /// use reel_core::{DType, Record};
    /// let mut record = Record::new();
    /// record.push_array("x", DType::U16, &[2], &[1, 0, 2, 0])?;
    /// let x = record.get("x").and_then(|v| v.as_array()).unwrap();
    /// assert_eq!(x.to_vec::<u16>(), Some(vec![1, 2]));
    /// assert_eq!(x.to_vec::<i32>(), None);
    /// # Ok::<(), reel_core::Error>(())
    /// ```
    pub fn to_vec<T: Element>(&self) -> Option<Vec<T>> {
        Some(self.values::<T>()?.collect())
    }

    /// The elements as `T` without collecting them, if the dtype is `T`'s.
    pub fn values<T: Element>(&self) -> Option<impl ExactSizeIterator<Item = T> + 'a> {
        if self.dtype != T::DTYPE {
            return None;
        }
        Some(self.data.chunks_exact(std::mem::size_of::<T>()).map(T::from_le_slice))
    }

    typed_vec! {
        /// The elements as `f32`, if the dtype is `F32` (`to_vec::<f32>()`).
        to_f32_vec, f32;
        /// The elements as `f64`, if the dtype is `F64` (`to_vec::<f64>()`).
        to_f64_vec, f64;
        /// The elements as `i32`, if the dtype is `I32` (`to_vec::<i32>()`).
        to_i32_vec, i32;
        /// The elements as `i64`, if the dtype is `I64` (`to_vec::<i64>()`).
        to_i64_vec, i64;
    }
}

/// A borrowed list.
#[derive(Clone, Copy)]
pub struct ListRef<'a> {
    buf: &'a [u8],
    items: &'a [Value],
}

impl<'a> ListRef<'a> {
    /// Number of items.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether the list is empty.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Item `i`.
    pub fn get(&self, i: usize) -> Option<ValueRef<'a>> {
        self.items.get(i).map(|v| v.view(self.buf))
    }

    /// The items in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = ValueRef<'a>> + use<'a> {
        let buf = self.buf;
        self.items.iter().map(move |v| v.view(buf))
    }
}

/// A borrowed map.
#[derive(Clone, Copy)]
pub struct MapRef<'a> {
    buf: &'a [u8],
    entries: &'a [(Value, Value)],
}

impl<'a> MapRef<'a> {
    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the map is empty.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The entries in stored order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (ValueRef<'a>, ValueRef<'a>)> + use<'a> {
        let buf = self.buf;
        self.entries.iter().map(move |(k, v)| (k.view(buf), v.view(buf)))
    }

    /// The value of the first entry whose key is the string `key`.
    pub fn get(&self, key: &str) -> Option<ValueRef<'a>> {
        self.iter().find(|(k, _)| k.as_str() == Some(key)).map(|(_, v)| v)
    }
}

/// How many elements of bytes, arrays, lists and maps `Display` and `Debug` show before
/// they say how many more there are (`{:#}` shows all).
const SHOWN: usize = 32;

/// Writes up to [`SHOWN`] items (all with `{:#}`) separated by `", "`, then how many were left.
fn write_items<I: ExactSizeIterator>(
    f: &mut fmt::Formatter<'_>,
    items: I,
    mut write: impl FnMut(&mut fmt::Formatter<'_>, I::Item) -> fmt::Result,
) -> fmt::Result {
    let total = items.len();
    let shown = if f.alternate() { total } else { total.min(SHOWN) };
    for (k, item) in items.take(shown).enumerate() {
        if k > 0 {
            f.write_str(", ")?;
        }
        write(f, item)?;
    }
    if shown < total {
        write!(f, ", … {} more", total - shown)?;
    }
    Ok(())
}

fn write_bytes(f: &mut fmt::Formatter<'_>, bytes: &[u8]) -> fmt::Result {
    let shown = if f.alternate() { bytes.len() } else { bytes.len().min(SHOWN) };
    f.write_str("b\"")?;
    for &b in &bytes[..shown] {
        write!(f, "{}", std::ascii::escape_default(b))?;
    }
    f.write_str("\"")?;
    if shown < bytes.len() {
        write!(f, " … {} more bytes", bytes.len() - shown)?;
    }
    Ok(())
}

/// IEEE half precision (`float16`, as its bits) to `f32`: exact, since every half value is
/// an `f32` value; NaN payloads are kept. The one conversion every crate uses (display,
/// OFRecord's float lists, conversion rules).
pub fn f16_to_f32(h: u16) -> f32 {
    let sign = u32::from(h >> 15) << 31;
    let exp = u32::from((h >> 10) & 0x1f);
    let frac = u32::from(h & 0x3ff);
    let bits = match (exp, frac) {
        (0, 0) => sign,
        (0, _) => {
            // Subnormal: normalise.
            let shift = frac.leading_zeros() - 21;
            let frac = (frac << shift) & 0x3ff;
            sign | ((127 - 15 + 1 - shift) << 23) | (frac << 13)
        }
        (0x1f, _) => sign | 0x7f80_0000 | (frac << 13),
        _ => sign | ((exp + 127 - 15) << 23) | (frac << 13),
    };
    f32::from_bits(bits)
}

/// Writes one array element of `dtype` from its little-endian bytes.
fn write_element(f: &mut fmt::Formatter<'_>, dtype: DType, e: &[u8]) -> fmt::Result {
    match dtype {
        DType::Bool => write!(f, "{}", bool::from_le_slice(e)),
        DType::I8 => write!(f, "{}", i8::from_le_slice(e)),
        DType::I16 => write!(f, "{}", i16::from_le_slice(e)),
        DType::I32 => write!(f, "{}", i32::from_le_slice(e)),
        DType::I64 => write!(f, "{}", i64::from_le_slice(e)),
        DType::U8 => write!(f, "{}", u8::from_le_slice(e)),
        DType::U16 => write!(f, "{}", u16::from_le_slice(e)),
        DType::U32 => write!(f, "{}", u32::from_le_slice(e)),
        DType::U64 => write!(f, "{}", u64::from_le_slice(e)),
        DType::F16 => write!(f, "{:?}", f16_to_f32(u16::from_le_slice(e))),
        DType::F32 => write!(f, "{:?}", f32::from_le_slice(e)),
        DType::F64 => write!(f, "{:?}", f64::from_le_slice(e)),
        DType::C64 => {
            let im = f32::from_le_slice(e.get(4..).unwrap_or_default());
            write!(f, "({:?}{im:+?}j)", f32::from_le_slice(e))
        }
        DType::C128 => {
            let im = f64::from_le_slice(e.get(8..).unwrap_or_default());
            write!(f, "({:?}{im:+?}j)", f64::from_le_slice(e))
        }
        DType::Unicode(_) => {
            let text: String = e
                .chunks_exact(4)
                .map(u32::from_le_slice)
                .take_while(|&c| c != 0)
                .map(|c| char::from_u32(c).unwrap_or(char::REPLACEMENT_CHARACTER))
                .collect();
            write!(f, "{text:?}")
        }
        DType::F128 | DType::FixedBytes(_) | DType::Void(_) => write_bytes(f, e),
    }
}

impl fmt::Display for ArrayRef<'_> {
    /// `int32[2, 2] [1, 2, 3, 4]`: the dtype, the shape and the elements in C order.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{:?} [", self.dtype, self.shape)?;
        let size = (self.dtype.item_size() as usize).max(1);
        write_items(f, self.data.chunks_exact(size), |f, e| write_element(f, self.dtype, e))?;
        f.write_str("]")
    }
}

impl fmt::Debug for ArrayRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Debug for ListRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[")?;
        write_items(f, self.iter(), |f, v| fmt::Debug::fmt(&v, f))?;
        f.write_str("]")
    }
}

impl fmt::Debug for MapRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("{")?;
        write_items(f, self.iter(), |f, (k, v)| write!(f, "{k:?}: {v:?}"))?;
        f.write_str("}")
    }
}

impl fmt::Display for ValueRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ValueRef::Str(s) => f.write_str(s),
            other => write_value(f, *other),
        }
    }
}

impl fmt::Debug for ValueRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_value(f, *self)
    }
}

/// A value with text quoted: `Debug`, and `Display` inside lists and maps.
fn write_value(f: &mut fmt::Formatter<'_>, value: ValueRef<'_>) -> fmt::Result {
    match value {
        ValueRef::Null => f.write_str("null"),
        ValueRef::Bool(b) => write!(f, "{b}"),
        ValueRef::Int(i) => write!(f, "{i}"),
        ValueRef::UInt(u) => write!(f, "{u}"),
        ValueRef::Float(x) => write!(f, "{x:?}"),
        ValueRef::Bytes(b) => write_bytes(f, b),
        ValueRef::Str(s) => write!(f, "{s:?}"),
        ValueRef::Array(a) => fmt::Display::fmt(&a, f),
        ValueRef::List(l) => fmt::Debug::fmt(&l, f),
        ValueRef::Map(m) => fmt::Debug::fmt(&m, f),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numpy_strings_round_trip() {
        for dt in [
            DType::Bool,
            DType::I8,
            DType::U16,
            DType::F16,
            DType::F128,
            DType::C64,
            DType::Unicode(3),
            DType::FixedBytes(2),
            DType::Void(5),
        ] {
            assert_eq!(DType::from_numpy_str(&dt.numpy_str()), Some((dt, false)));
        }
        assert_eq!(DType::from_numpy_str(">i2"), Some((DType::I16, true)));
        assert_eq!(DType::from_numpy_str("<M8[s]"), None);
        assert_eq!(DType::from_numpy_str("é4"), None);
        assert_eq!(DType::from_numpy_str(">é"), None);
    }

    #[test]
    fn shapes_inline_and_heap_agree() {
        let small = Shape::new(&[2, 3]);
        let big = Shape::new(&[1, 2, 3, 4, 5, 6]);
        assert_eq!(small.dims(), &[2, 3]);
        assert_eq!(big.dims(), &[1, 2, 3, 4, 5, 6]);
        assert_eq!(big.element_count(), Some(720));
        assert_eq!(Shape::new(&[u64::MAX, 2]).element_count(), None);
    }

    #[test]
    fn float_equality_is_bitwise() {
        assert_eq!(ValueRef::Float(f64::NAN), ValueRef::Float(f64::NAN));
        assert_ne!(ValueRef::Float(0.0), ValueRef::Float(-0.0));
    }

    #[test]
    fn display_is_for_people() {
        let data: Vec<u8> = (1..=4i32).flat_map(i32::to_le_bytes).collect();
        let a = ArrayRef { dtype: DType::I32, shape: &[2, 2], data: &data };
        assert_eq!(ValueRef::Array(a).to_string(), "int32[2, 2] [1, 2, 3, 4]");
        assert_eq!(ValueRef::Str("a b").to_string(), "a b");
        assert_eq!(format!("{:?}", ValueRef::Str("a b")), "\"a b\"");
        assert_eq!(ValueRef::Float(1.0).to_string(), "1.0");
        assert_eq!(ValueRef::UInt(u64::MAX).to_string(), "18446744073709551615");
        let long = [7u8; 40];
        assert_eq!(
            ValueRef::Bytes(&long).to_string(),
            format!("b\"{}\" … 8 more bytes", "\\x07".repeat(32))
        );
        assert_eq!(format!("{:#}", ValueRef::Bytes(&long)), format!("b\"{}\"", "\\x07".repeat(40)));
        let half = [0x00, 0x3c, 0x00, 0xc0]; // 1.0, -2.0
        let h = ArrayRef { dtype: DType::F16, shape: &[2], data: &half };
        assert_eq!(h.to_string(), "float16[2] [1.0, -2.0]");
    }

    #[test]
    fn arrays_read_as_every_element_type() {
        let data: Vec<u8> = [1u16, 65535].iter().flat_map(|v| v.to_le_bytes()).collect();
        let a = ArrayRef { dtype: DType::U16, shape: &[2], data: &data };
        assert_eq!(a.to_vec::<u16>(), Some(vec![1, 65535]));
        assert_eq!(a.to_vec::<i16>(), None);
        let flags = [1u8, 0, 1];
        let b = ArrayRef { dtype: DType::Bool, shape: &[3], data: &flags };
        assert_eq!(b.to_vec::<bool>(), Some(vec![true, false, true]));
        let bytes = [0xffu8, 1];
        let i = ArrayRef { dtype: DType::I8, shape: &[2], data: &bytes };
        assert_eq!(i.to_vec::<i8>(), Some(vec![-1, 1]));
        assert_eq!(i.values::<i8>().map(|v| v.len()), Some(2));
    }

    #[test]
    fn integers_of_both_kinds_compare_and_convert() {
        assert_eq!(ValueRef::Int(5), ValueRef::UInt(5));
        assert_ne!(ValueRef::Int(-1), ValueRef::UInt(u64::MAX));
        assert_eq!(ValueRef::UInt(5).kind_name(), "uint");
        assert_eq!(ValueRef::Int(5).as_u64(), Some(5));
        assert_eq!(ValueRef::Int(1 << 53).as_f64(), Some(9007199254740992.0));
        assert_eq!(ValueRef::Int((1 << 53) + 1).as_f64(), None);
    }

    #[test]
    fn span_get_never_panics() {
        assert_eq!(Span::new(5, 10).get(&[1, 2, 3]), &[] as &[u8]);
        assert_eq!(Span::new(1, 2).get(&[1, 2, 3]), &[2, 3]);
    }
}
