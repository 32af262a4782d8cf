//! Granular (and bags, its older name) for reel: every dataset generation a user can have
//! on disk, read and written byte-compatibly with the reference implementations
//! (granular 0.24.2 and bags 0.5.1).
//!
//! # What is on disk
//!
//! A dataset is a directory with `spec.json` (field name → type) and one *bag* per key. A
//! bag is a list of byte strings; there is no magic number or version anywhere, so the
//! generation is told from the files that exist ([`Generation`], spec §1):
//!
//! * current layout (granular 0.22+): `<key>.bag` + `<key>.idx` (u64 end offsets) —
//!   [`BagKind::TwoFile`];
//! * refs layout (bags 0.5 – granular 0.21): `refs.bag` (one msgpack record per
//!   datapoint saying where each field lives, which allows sequence `type[]` keys) and
//!   single-file bags, v1 ([`BagKind::SingleV1`], start offsets + total) or v2
//!   ([`BagKind::SingleV2`], end offsets);
//! * sharded: a root of `000000/`, `000001/`, … shard folders, each a dataset.
//!
//! # Reading
//!
//! [`GranularReader`] opens any of them (and [`BagReader`] a single `.bag` file) as a
//! [`RecordSource`](reel_core::RecordSource): one record per datapoint, one field per key
//! in spec order, decoded by the reference's codecs ([`codec`]; `int` signedness per
//! generation with an override, [`IntSigning`]) or user codecs ([`GranularCodec`]). Index
//! tables and `refs.bag` are held in memory and validated at open, so a datapoint costs one
//! planned byte range per key, and a batch one `read_many`. [`GranularMask`] selects keys
//! and sequence item ranges; [`GranularReader::available`] tells what a datapoint has.
//!
//! ```no_run
//! use reel_core::{RecordSource, RecordSourceExt};
//! use reel_granular::{GranularMask, GranularReader};
//!
//! # fn main() -> reel_core::Result<()> {
//! let reader = GranularReader::open("dataset")?;
//! println!("{} datapoints, spec {:?}", reader.len(), reader.spec());
//! let first = reader.read(0)?;
//! let labels = reader.read_masked(0, &GranularMask::new().key("label"))?;
//! # let _ = (first, labels);
//! # Ok(()) }
//! ```
//!
//! # Writing
//!
//! * [`GranularWriter`]: the current layout, byte-identical to granular 0.24 for the same
//!   datapoints; staged under a hidden name until finished, resumable after a crash
//!   (repairing torn index entries instead of misaligning the index as the reference does).
//! * [`BagsWriter`]: the refs layout of bags 0.5.1 ([`RefsFlavor::Bags051`]) or granular
//!   0.20–0.21 ([`RefsFlavor::Granular021`]), for older pipelines.
//! * [`ShardedWriter`]: shard folders of either, with shard length, start and step.
//! * [`BagWriter`] / [`SingleFileBagWriter`]: single bags.
//! * [`GranularSink`]: for conversions, writes the layout it is told ([`ShardFormat`]), with
//!   a spec of that generation's types fitted from the source's schema and the first record.
//!
//! All dataset writers implement [`RecordSink`](reel_core::RecordSink); a writer dropped
//! before `finish` leaves nothing that opens as a dataset.
//!
//! # Where reel differs from the references
//!
//! Each difference is documented where it applies; in short: table inconsistencies
//! (decreasing offsets, a table past its data, a torn index entry, refs past a bag, bags
//! of mixed versions) are `Corrupt` errors instead of garbage or crashes; refs-based
//! datasets are read by the same reader as current ones; msgpack maps with integer keys are
//! read unless [`GranularOptions::strict_map_keys`] is set; `int` values the reference's
//! encoder rejects are written in a form its decoder reads back; bags datasets with no
//! datapoints get a `spec.json`; files beside shard folders are ignored.

#![forbid(unsafe_code)]

pub mod bag;
mod bag_reader;
pub mod codec;
pub mod dtype;
mod files;
mod layout;
mod mask;
pub mod msgpack;
mod reader;
mod refs;
mod spec;
mod writer;

pub use bag::{BagKind, BagTable};
pub use bag_reader::{BagLayout, BagOptions, BagReader, index_path};
pub use codec::{CodecFamily, CodecSettings, CodecTable, GranularCodec, IntSigning};
pub use files::{
    ColumnFiles, DatasetFiles, Generation, ShardFiles, ShardSelection, shard_dirs, shard_name,
};
pub use mask::{Available, GranularMask, Items};
pub use reader::{GranularOptions, GranularReader};
pub use spec::{GranularSpec, TypeSpec};
pub use writer::{
    BagWriter, BagsWriter, GranularSink, GranularWriter, GranularWriterOptions, PARTIAL_SPEC,
    RefsFlavor, ShardFormat, ShardedWriter, ShardedWriterOptions, SingleFileBagWriter,
    check_declared_types, staging_path,
};

/// reel's core crate, re-exported so that this crate is the only dependency a program
/// needs: `reel_granular::core::Limits`, `reel_granular::core::Backend`, ….
pub use reel_core as core;

/// Everything a program reading or writing this format usually names, in one import:
/// `use reel_granular::prelude::*;`. It holds [`reel_core::prelude`] (records, the source and
/// sink traits, errors) and this crate's readers, writers and options.
pub mod prelude {
    pub use crate::{
        GranularMask, GranularOptions, GranularReader, GranularSpec, GranularWriter,
        GranularWriterOptions,
    };
    pub use reel_core::prelude::*;
}

/// The format's name in [`SourceInfo`](reel_core::SourceInfo) and errors.
pub const FORMAT: &str = "granular";
