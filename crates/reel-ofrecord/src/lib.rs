//! OFRecord, the record format of OneFlow, read and written byte-compatibly.
//!
//! A dataset is a directory of part files (`part-0`, … or `part-00000`, …). A part file is a
//! plain sequence of frames, `i64 little-endian length || serialized oneflow.OFRecord`,
//! with no header, index or checksum. The payload is the protobuf message of
//! `proto/record.proto` (proto2): a map from feature name to `Feature`, a oneof of five
//! lists (`bytes_list`, `float_list`, `double_list`, `int32_list`, `int64_list`).
//!
//! * [`OfrecordReader`] opens a part file or a directory of parts as one
//!   [`RecordSource`](reel_core::RecordSource): it indexes the frames at open (one
//!   sequential scan, every length checked against the file) and serves random records and
//!   batches through core's batched path on any backend.
//! * [`OfrecordStream`] reads parts in one sequential pass, for one-shot pipelines.
//! * [`OfrecordWriter`] writes a directory of parts, rolling by record count or bytes;
//!   [`OfrecordFileWriter`] writes one part file. Both are
//!   [`RecordSink`](reel_core::RecordSink)s, stage their output and publish it atomically,
//!   and write exactly the bytes protobuf's deterministic serialization gives (map
//!   entries sorted by key as upb sorts them, see [`entry_order`]), which is what the
//!   golden files hold.
//! * [`OfrecordFeatures`] gives typed access (`record.get_f32s("x")`,
//!   `record.get_bytes("encoded")`); [`proto`] has the prost types and conversions.
//!
//! # How a record maps to core values
//!
//! Each feature is one field of the [`Record`](reel_core::Record), named by the feature's
//! key. Fields come in byte-wise key order whatever the order on the wire (the format
//! gives map entries no order), so two files that differ only in entry order read the same.
//!
//! | OFRecord `Feature` | core [`Value`](reel_core::Value) |
//! |---|---|
//! | `bytes_list { value: [b0, b1, …] }` | `List([Bytes(b0), Bytes(b1), …])`, each a span of the read buffer |
//! | `float_list` | `Array(F32, [n])`, a span of the read bytes when the list is packed (always, for reel's and protobuf's writers) |
//! | `double_list` | `Array(F64, [n])`, likewise |
//! | `int32_list` | `Array(I32, [n])` (varints decoded) |
//! | `int64_list` | `Array(I64, [n])` (varints decoded) |
//! | a list of any kind with no values | the same with zero items (`List([])`, `Array(_, [0])`) |
//! | `Feature` with no kind set | `Null` |
//!
//! An empty list and a feature with no kind stay distinct, so reading and writing back is
//! lossless, byte for byte. The writer accepts exactly these values, plus scalars as
//! one-element lists (`Bytes`/`Str` → `bytes_list`, `Int` → `int64_list`, `Float` →
//! `double_list`), `Str` items in a list, and, when [`EncodeOptions`] allows, arrays of
//! other ranks (flattened) and other dtypes (widened). Anything else is an
//! [`ErrorKind::Schema`](reel_core::ErrorKind::Schema) error naming the field.
//!
//! Protobuf's merge rules apply on reading, as in every protobuf runtime: for a repeated
//! key the last entry wins; within a `Feature` the last oneof member wins, and repeated
//! members of the same kind concatenate; numeric lists may be packed or not; unknown fields
//! (groups included) are skipped; a known field with an unexpected wire type is an unknown
//! field; and a map entry that itself carries unknown fields is not a feature (upb, the
//! runtime that wrote and checked the golden files, keeps such an entry aside as an
//! unknown field of the record; prost would insert it). See [`decode_record`].
//!
//! # Where reel differs from OneFlow
//!
//! OneFlow aborts the process (glog `CHECK`) on every problem. reel returns typed errors and
//! reads what can be read; the details are on [`OfrecordReader`]. In short: truncated or
//! negative frames are [`Corrupt`](reel_core::ErrorKind::Corrupt) errors at open, malformed
//! protobuf is `Corrupt` for that record, and zero-length frames and empty part files (on
//! which current OneFlow aborts) are read, with a warning, or refused with
//! [`OfrecordOptions::oneflow_strict`].
//!
//! ```no_run
//! use reel_core::{Record, RecordSourceExt};
//! use reel_ofrecord::{OfrecordFeatures, OfrecordReader, OfrecordWriter};
//!
//! # fn main() -> reel_core::Result<()> {
//! let mut w = OfrecordWriter::create("train")?;
//! let mut r = Record::new();
//! r.push_bytes("encoded", b"\xff\xd8...");
//! r.push_array("class/label", reel_core::DType::I32, &[1], &7i32.to_le_bytes())?;
//! w.write_record(r.view())?;
//! w.finish()?;
//!
//! let reader = OfrecordReader::open("train")?;
//! let record = reader.read(0)?;
//! assert_eq!(record.get_i32s("class/label")?, vec![7]);
//! assert_eq!(record.get_bytes("encoded")?, b"\xff\xd8...");
//! # Ok(()) }
//! ```

#![forbid(unsafe_code)]

mod decode;
mod encode;
mod features;
mod frames;
mod layout;
mod parts;
pub mod proto;
mod reader;
mod skeleton;
mod stream;
mod wire;
mod writer;

pub use decode::decode_record;
pub use encode::{EncodeOptions, encode_record, encode_record_into, entry_order};
pub use features::{FeatureKind, FeatureRef, OfrecordFeatures};
pub use frames::{FrameInfo, LENGTH_FIELD, MAX_PROTOBUF_MESSAGE};
pub use layout::OfrecordLayout;
pub use parts::{PartNaming, dataset_files};
pub use reader::{OfrecordOptions, OfrecordReader};
pub use stream::OfrecordStream;
pub use writer::{OfrecordFileWriter, OfrecordWriter, OfrecordWriterOptions};

/// reel's core crate, re-exported so that this crate is the only dependency a program
/// needs: `reel_ofrecord::core::Limits`, `reel_ofrecord::core::Backend`, ….
pub use reel_core as core;

/// Everything a program reading or writing this format usually names, in one import:
/// `use reel_ofrecord::prelude::*;`. It holds [`reel_core::prelude`] (records, the source and
/// sink traits, errors) and this crate's readers, writers and options.
pub mod prelude {
    pub use crate::{
        EncodeOptions, OfrecordFeatures, OfrecordOptions, OfrecordReader, OfrecordWriter,
        OfrecordWriterOptions,
    };
    pub use reel_core::prelude::*;
}

/// The format's name in [`SourceInfo`](reel_core::SourceInfo) and errors.
pub const FORMAT: &str = "ofrecord";
