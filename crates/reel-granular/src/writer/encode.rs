//! Turning a record into the bytes of each column, as the reference's `append` does.

use std::sync::Arc;

use reel_core::{Error, RecordRef, Result, ValueRef};

use crate::codec::{self, CodecSettings, CodecTable, GranularCodec};
use crate::spec::{GranularSpec, TypeSpec, check_key_is_file_name};

/// The encoder of one spec key.
pub(crate) struct FieldEncoder {
    pub(crate) key: String,
    pub(crate) sequence: bool,
    codec: Arc<dyn GranularCodec>,
}

/// Encoders for every key of `spec` (which the caller has sorted). With `encode` off the
/// fields must already be the record bytes (the reference's `encoders=None`).
pub(crate) fn field_encoders(
    spec: &GranularSpec,
    sequences_allowed: bool,
    encode: bool,
    table: &CodecTable,
    settings: &CodecSettings,
) -> Result<Vec<FieldEncoder>> {
    spec.iter()
        .map(|(key, type_string)| {
            check_key_is_file_name(key)?;
            let t = TypeSpec::parse(type_string)?;
            if t.sequence && !sequences_allowed {
                return Err(Error::invalid_input(format!(
                    "field {key:?}: sequence types ({type_string:?}) exist only in the refs-based \
                     layout (bags 0.5 – granular 0.21)"
                )));
            }
            let codec = if encode {
                codec::codec_for(&t.base(), table, settings)?
            } else {
                codec::raw_codec()
            };
            Ok(FieldEncoder { key: key.to_string(), sequence: t.sequence, codec })
        })
        .collect()
}

/// Checks that `record` has exactly the keys of the spec (the reference asserts it).
pub(crate) fn check_keys(encoders: &[FieldEncoder], record: &RecordRef<'_>) -> Result<()> {
    for (name, _) in record.iter() {
        if !encoders.iter().any(|e| e.key == name) {
            return Err(Error::schema(format!("the datapoint has a key {name:?} the spec lacks")));
        }
    }
    if record.len() != encoders.len() {
        let missing: Vec<&str> = encoders
            .iter()
            .filter(|e| record.get(&e.key).is_none())
            .map(|e| e.key.as_str())
            .collect();
        return Err(Error::schema(if missing.is_empty() {
            "the datapoint repeats a key".to_string()
        } else {
            format!("the datapoint lacks the keys {missing:?}")
        }));
    }
    Ok(())
}

impl FieldEncoder {
    /// The value of this key in `record`.
    pub(crate) fn value<'a>(&self, record: &RecordRef<'a>) -> Result<ValueRef<'a>> {
        record
            .get(&self.key)
            .ok_or_else(|| Error::schema(format!("the datapoint lacks the key {:?}", self.key)))
    }

    /// Appends the record bytes of one (scalar) value.
    pub(crate) fn encode(&self, value: ValueRef<'_>, buf: &mut Vec<u8>) -> Result<()> {
        self.codec
            .encode(value, buf)
            .map_err(|e| Error::new(e.kind(), format!("field {:?}: {}", self.key, e.message())))
    }
}
