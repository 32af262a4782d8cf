//! The Rust types of `proto/record.proto` (OneFlow's `oneflow.OFRecord` schema), generated
//! by prost, and conversions between them and core records.
//!
//! The generated code is checked in (`src/generated/oneflow.rs`), so building this crate
//! needs no `protoc`. After editing the schema, regenerate it with
//!
//! ```text
//! cargo run -p reel-ofrecord --example regenerate_proto
//! ```
//!
//! (prost-build with protox, a pure-Rust protobuf compiler); the test
//! `tests/generated_code.rs` fails while the checked-in file is stale. Maps are generated as
//! `BTreeMap`, so iteration is in key order.
//!
//! Serialize with [`encode_proto`], not prost's `Message::encode`: prost leaves an empty
//! map key and a `Feature` with no kind out of a map entry and writes entries in plain key
//! order, while protobuf writes both and upb orders prefix keys differently (see
//! [`entry_order`](crate::entry_order)); [`encode_proto`] writes what upb's deterministic
//! mode writes (the golden files), byte for byte.

use prost::Message;
use reel_core::{DType, Error, Record, RecordRef, Result, Value};

use crate::encode::{EncodeOptions, encode_record};
use crate::wire::put_varint;

include!("generated/oneflow.rs");

/// Appends `record` serialized as protobuf's deterministic mode does: entries in
/// [`entry_order`](crate::entry_order), each with its key and value. The `Feature` values
/// are encoded by prost.
pub fn encode_proto_into(record: &OfRecord, out: &mut Vec<u8>) -> Result<()> {
    let mut entries: Vec<(&String, &Feature)> = record.feature.iter().collect();
    entries.sort_by(|a, b| crate::entry_order(a.0.as_bytes(), b.0.as_bytes()));
    for (key, feature) in entries {
        let value_len = feature.encoded_len();
        let entry_len = 1
            + crate::wire::varint_len(key.len() as u64)
            + key.len()
            + 1
            + crate::wire::varint_len(value_len as u64)
            + value_len;
        out.push(0x0a);
        put_varint(out, entry_len as u64);
        out.push(0x0a);
        put_varint(out, key.len() as u64);
        out.extend_from_slice(key.as_bytes());
        out.push(0x12);
        put_varint(out, value_len as u64);
        feature
            .encode(out)
            .map_err(|e| Error::invalid_input(format!("cannot encode feature {key:?}: {e}")))?;
    }
    Ok(())
}

/// `record` serialized as protobuf's deterministic mode does; see [`encode_proto_into`].
pub fn encode_proto(record: &OfRecord) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    encode_proto_into(record, &mut out)?;
    Ok(out)
}

/// Parses a serialized `oneflow.OFRecord` with prost's decoder.
///
/// prost is a little stricter than the reference runtime: a known field with an unexpected
/// wire type is an error here, while upb (and reel's reader) skip it as unknown.
pub fn decode_proto(payload: &[u8]) -> Result<OfRecord> {
    OfRecord::decode(payload).map_err(|e| {
        Error::corrupt(format!("invalid OFRecord protobuf: {e}")).with_format(crate::FORMAT)
    })
}

/// The prost message for a core record, under the writer's mapping (see
/// [`encode_record`]).
pub fn to_proto(record: RecordRef<'_>, options: EncodeOptions) -> Result<OfRecord> {
    decode_proto(&encode_record(record, options)?)
}

/// The core record for a prost message: one field per feature in key order, with the
/// reader's value mapping (see the crate documentation).
pub fn from_proto(record: &OfRecord) -> Record {
    let mut out = Record::new();
    for (name, feature) in &record.feature {
        let name = name.as_str();
        let Some(kind) = &feature.kind else {
            out.push_null(name);
            continue;
        };
        let (dtype, bytes): (DType, Vec<u8>) = match kind {
            feature::Kind::BytesList(l) => {
                let mut o = out.out();
                let items = l.value.iter().map(|v| Value::Bytes(o.append(v))).collect();
                o.push(name.into(), Value::List(items));
                continue;
            }
            feature::Kind::FloatList(l) => {
                (DType::F32, l.value.iter().flat_map(|v| v.to_le_bytes()).collect())
            }
            feature::Kind::DoubleList(l) => {
                (DType::F64, l.value.iter().flat_map(|v| v.to_le_bytes()).collect())
            }
            feature::Kind::Int32List(l) => {
                (DType::I32, l.value.iter().flat_map(|v| v.to_le_bytes()).collect())
            }
            feature::Kind::Int64List(l) => {
                (DType::I64, l.value.iter().flat_map(|v| v.to_le_bytes()).collect())
            }
        };
        let count = (bytes.len() as u64) / dtype.item_size();
        // The length matches the shape by construction.
        let _ = out.push_array(name, dtype, &[count], &bytes);
    }
    out
}
