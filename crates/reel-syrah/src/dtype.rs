//! The dtype names of the metadata and what their bytes mean.

use std::fmt;

use reel_core::DType;

/// The element type of one array name, as the metadata's `dtype` string names it.
///
/// The reference picks the name from numpy's type number, so these fourteen names are all
/// a reference-written file can hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SyrahDType {
    /// A numeric or boolean array: `bool`, `int8` … `uint64`, `float16`, `float32`,
    /// `float64`, or `float128` (numpy's long double, 16 bytes per element, kept opaque
    /// because its layout depends on the writer's platform: x87 extended precision plus 6
    /// padding bytes on x86-64, IEEE binary128 on AArch64).
    Array(DType),
    /// `str`: UTF-8 text. The reference joins the elements of a numpy unicode array with no
    /// separator before storing them, so the element count is lost and the text reads back
    /// as one string.
    Str,
}

/// Every dtype name the reference writes, in the order of its `dtype_names` table.
pub const DTYPE_NAMES: [&str; 14] = [
    "bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float16",
    "float32", "float64", "float128", "str",
];

impl SyrahDType {
    /// Parses a metadata dtype name (one of [`DTYPE_NAMES`]).
    pub fn from_name(name: &str) -> Option<SyrahDType> {
        if name == "str" {
            return Some(SyrahDType::Str);
        }
        let dt = DType::from_name(name)?;
        SyrahDType::from_dtype(dt)
    }

    /// The Syrah dtype of a reel array dtype, if the reference can store it.
    pub fn from_dtype(dtype: DType) -> Option<SyrahDType> {
        match dtype {
            DType::Bool
            | DType::I8
            | DType::U8
            | DType::I16
            | DType::U16
            | DType::I32
            | DType::U32
            | DType::I64
            | DType::U64
            | DType::F16
            | DType::F32
            | DType::F64
            | DType::F128 => Some(SyrahDType::Array(dtype)),
            _ => None,
        }
    }

    /// The name stored in the metadata.
    pub fn name(self) -> &'static str {
        match self {
            SyrahDType::Str => "str",
            SyrahDType::Array(dt) => match dt {
                DType::Bool => "bool",
                DType::I8 => "int8",
                DType::U8 => "uint8",
                DType::I16 => "int16",
                DType::U16 => "uint16",
                DType::I32 => "int32",
                DType::U32 => "uint32",
                DType::I64 => "int64",
                DType::U64 => "uint64",
                DType::F16 => "float16",
                DType::F32 => "float32",
                DType::F64 => "float64",
                // Only the types `from_dtype` accepts are ever built; float128 is the rest.
                _ => "float128",
            },
        }
    }

    /// Bytes per element (1 for `str`, whose size is in UTF-8 bytes).
    pub fn item_size(self) -> u64 {
        match self {
            SyrahDType::Str => 1,
            SyrahDType::Array(dt) => dt.item_size(),
        }
    }
}

impl fmt::Display for SyrahDType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reference_name_round_trips() {
        for name in DTYPE_NAMES {
            let dt = SyrahDType::from_name(name).unwrap();
            assert_eq!(dt.name(), name);
        }
        assert_eq!(SyrahDType::from_name("float128"), Some(SyrahDType::Array(DType::F128)));
        assert_eq!(SyrahDType::from_name("float128").unwrap().item_size(), 16);
        for other in ["complex64", "<i4", "object", "", "Str"] {
            assert_eq!(SyrahDType::from_name(other), None, "{other}");
        }
        assert_eq!(SyrahDType::from_dtype(DType::C64), None);
        assert_eq!(SyrahDType::from_dtype(DType::Unicode(3)), None);
    }
}
