//! Codecs: how a field's values become the bytes of a bag record and back.
//!
//! Each type string of a spec names a codec. The standard ones are the reference's
//! encoders and decoders (granular 0.24 and bags 0.5.1, spec §5), producing core
//! [`Value`]s; users add their own through [`GranularCodec`] and [`CodecTable`].

mod array;
mod image;
mod image_headers;
mod int;

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use reel_core::{Error, Limits, RecordOut, Result, Span, Value, ValueRef};

use crate::msgpack::{self, ArrayEncoding, DecodeRules};
use crate::spec::TypeSpec;

pub(crate) use array::{decode_tree_value, encode_tree};
pub use int::IntSigning;

/// A codec for one type of field: record bytes ↔ value.
///
/// Implement it to read or write types the reference's users registered themselves (the
/// reference's `encoders`/`decoders` dicts are open), and register it in a [`CodecTable`].
pub trait GranularCodec: Send + Sync {
    /// Decodes the record bytes at `raw` (read them with [`RecordOut::bytes`]) into a value.
    /// Return spans of `raw` where the value is the bytes themselves (zero copy); append
    /// transformed bytes with [`RecordOut::append`]. Must not panic on any input.
    fn decode(&self, raw: Span, out: &mut RecordOut<'_>) -> Result<Value>;

    /// Appends the record bytes of `value` to `buf`.
    fn encode(&self, value: ValueRef<'_>, buf: &mut Vec<u8>) -> Result<()>;
}

/// Codecs registered by the user, looked up by type string before the standard ones.
///
/// A codec registered under a full type string (`"array(uint8,2)"`, `"myimage"`) wins over
/// one registered under the bare name (`"array"`).
#[derive(Clone, Default)]
pub struct CodecTable {
    codecs: HashMap<String, Arc<dyn GranularCodec>>,
}

impl CodecTable {
    /// An empty table (only the standard codecs apply).
    pub fn new() -> Self {
        CodecTable::default()
    }

    /// Registers `codec` for `type_name`.
    pub fn insert(&mut self, type_name: impl Into<String>, codec: Arc<dyn GranularCodec>) {
        self.codecs.insert(type_name.into(), codec);
    }

    /// Builder form of [`insert`](Self::insert).
    pub fn with(mut self, type_name: impl Into<String>, codec: Arc<dyn GranularCodec>) -> Self {
        self.insert(type_name, codec);
        self
    }

    fn lookup(&self, t: &TypeSpec) -> Option<Arc<dyn GranularCodec>> {
        self.codecs.get(&t.base()).or_else(|| self.codecs.get(&t.name)).cloned()
    }

    /// Whether no codec is registered.
    pub fn is_empty(&self) -> bool {
        self.codecs.is_empty()
    }
}

impl fmt::Debug for CodecTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut names: Vec<_> = self.codecs.keys().collect();
        names.sort();
        f.debug_struct("CodecTable").field("types", &names).finish()
    }
}

/// Which family of reference codecs a dataset was written with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CodecFamily {
    /// granular ≥ 0.20: `int` is signed with at least one byte, `array` is msgpack
    /// `[dtype, shape, bytes]`, images are `jpg`/`png`.
    Granular,
    /// bags 0.5.1: `int` (and `int(k)`) is unsigned and 0 is an empty record, `array(dtype,
    /// dims…)` is raw bytes, images are `jpeg`/`png`.
    Bags,
}

/// Everything the standard codecs need to know besides the type string.
#[derive(Clone, Debug)]
pub struct CodecSettings {
    /// Reference codec family (decides the `int` and `array` flavours).
    pub family: CodecFamily,
    /// Signedness of `int` (the family's default unless overridden).
    pub int_signing: IntSigning,
    /// Decode `jpg`/`jpeg`/`png` records to pixel arrays (otherwise they stay encoded bytes).
    pub decode_images: bool,
    /// Refuse msgpack map keys other than str/bytes, as the reference's unpacker does.
    pub strict_map_keys: bool,
    /// Size and nesting limits for decoded values.
    pub limits: Limits,
}

impl CodecSettings {
    /// Settings for `family` with its default `int` signedness and images kept encoded.
    pub fn new(family: CodecFamily) -> Self {
        CodecSettings {
            family,
            int_signing: match family {
                CodecFamily::Granular => IntSigning::Signed,
                CodecFamily::Bags => IntSigning::Unsigned,
            },
            decode_images: false,
            strict_map_keys: false,
            limits: Limits::default(),
        }
    }

    pub(crate) fn msgpack_rules(&self) -> DecodeRules {
        DecodeRules { strict_map_keys: self.strict_map_keys, max_nesting: self.limits.max_nesting }
    }
}

/// The codec for `type_string`: a user codec from `table`, else a standard one.
///
/// Fails with [`ErrorKind::Schema`](reel_core::ErrorKind::Schema) for a type no codec
/// handles (the reference fails the same way when it builds its decoder table).
pub fn codec_for(
    type_string: &str,
    table: &CodecTable,
    settings: &CodecSettings,
) -> Result<Arc<dyn GranularCodec>> {
    let t = TypeSpec::parse(type_string)?;
    if let Some(c) = table.lookup(&t) {
        return Ok(c);
    }
    standard(&t, settings).map(|c| Arc::new(c) as Arc<dyn GranularCodec>).ok_or_else(|| {
        Error::schema(format!(
            "no codec for type {:?}: register one in the CodecTable, or read with decoding \
             off to get the stored bytes",
            t.base()
        ))
    })
}

/// The codec that passes record bytes through unchanged (decoding off, `decoders=None`).
pub fn raw_codec() -> Arc<dyn GranularCodec> {
    Arc::new(StdCodec::Bytes)
}

/// The reference's codecs.
#[derive(Clone, Debug)]
enum StdCodec {
    Bytes,
    Utf8,
    Int(int::IntCodec),
    Msgpack { rules: DecodeRules },
    Tree { rules: DecodeRules, limits: Limits },
    Array { rules: DecodeRules, limits: Limits },
    RawArray(array::RawArrayCodec),
    Image(image::ImageCodec),
    Video,
}

fn standard(t: &TypeSpec, s: &CodecSettings) -> Option<StdCodec> {
    let rules = s.msgpack_rules();
    let granular = s.family == CodecFamily::Granular;
    let no_args = t.args.is_empty();
    Some(match t.name.as_str() {
        "bytes" if no_args => StdCodec::Bytes,
        "utf8" if no_args => StdCodec::Utf8,
        "msgpack" if no_args => StdCodec::Msgpack { rules },
        "int" => StdCodec::Int(int::IntCodec::for_type(t, s.family, s.int_signing)?),
        "i64" | "u64" if no_args && granular => {
            StdCodec::Int(int::IntCodec::fixed64(t.name == "i64"))
        }
        "array" if no_args && granular => StdCodec::Array { rules, limits: s.limits.clone() },
        "array" => StdCodec::RawArray(array::RawArrayCodec::from_args(&t.args)?),
        "tree" if no_args && granular => StdCodec::Tree { rules, limits: s.limits.clone() },
        "jpg" | "jpeg" | "png" => StdCodec::Image(image::ImageCodec::new(
            &t.name,
            s.decode_images,
            s.limits.max_decoded_bytes,
        )),
        "mp4" | "webm" => StdCodec::Video,
        _ => return None,
    })
}

impl GranularCodec for StdCodec {
    fn decode(&self, raw: Span, out: &mut RecordOut<'_>) -> Result<Value> {
        match self {
            StdCodec::Bytes | StdCodec::Video => Ok(Value::Bytes(raw)),
            StdCodec::Utf8 => out.str_value(raw),
            StdCodec::Int(c) => c.decode(out.bytes(raw)),
            StdCodec::Msgpack { rules } => msgpack::decode(out.bytes(raw), raw.start, *rules),
            StdCodec::Tree { rules, limits } => {
                let v = msgpack::decode(out.bytes(raw), raw.start, *rules)?;
                decode_tree_value(v, out, limits)
            }
            StdCodec::Array { rules, limits } => array::decode_array(raw, out, *rules, limits),
            StdCodec::RawArray(c) => c.decode(raw, out),
            StdCodec::Image(c) => c.decode(raw, out),
        }
    }

    fn encode(&self, value: ValueRef<'_>, buf: &mut Vec<u8>) -> Result<()> {
        match self {
            StdCodec::Bytes => match value {
                ValueRef::Bytes(b) => {
                    buf.extend_from_slice(b);
                    Ok(())
                }
                other => Err(wrong_value("bytes", other)),
            },
            StdCodec::Video => match value {
                ValueRef::Bytes(b) => {
                    buf.extend_from_slice(b);
                    Ok(())
                }
                other => Err(Error::unsupported(format!(
                    "encoding video is not supported: pass the encoded mp4/webm bytes, not a {} \
                     value",
                    other.kind_name()
                ))),
            },
            StdCodec::Utf8 => match value {
                ValueRef::Str(s) => {
                    buf.extend_from_slice(s.as_bytes());
                    Ok(())
                }
                other => Err(wrong_value("text", other)),
            },
            StdCodec::Int(c) => c.encode(value, buf),
            StdCodec::Msgpack { .. } => msgpack::encode(value, ArrayEncoding::Refuse, buf),
            StdCodec::Tree { .. } => encode_tree(value, buf),
            StdCodec::Array { .. } => array::encode_array(value, buf),
            StdCodec::RawArray(c) => c.encode(value, buf),
            StdCodec::Image(c) => c.encode(value, buf),
        }
    }
}

/// The error for a value of the wrong kind for its field's type.
pub(crate) fn wrong_value(wanted: &str, got: ValueRef<'_>) -> Error {
    Error::schema(format!("expected {wanted}, got a {} value", got.kind_name()))
}
