//! Syrah, the array-item format of gsicard/syrah (`pysyrah` 0.2.0), read and written
//! byte-compatibly.
//!
//! A Syrah file holds items; an item is a set of named arrays. The file is a 22-byte
//! header (`"GS"`, four version bytes, the metadata's offset and length), the arrays' bytes
//! item after item, and a BSON metadata document that gives, per array name, every item's
//! offset and size and the name's dtype:
//!
//! ```text
//! [ "GS" | 00 maj min fix | i64 meta_offset | i64 meta_length ][ array bytes … ][ BSON ]
//! BSON = { name: { "offset": i64le[N], "size": i64le[N], "dtype": "int32" }, … }
//! ```
//!
//! * [`SyrahReader`] opens a file (or several, concatenated like the reference's
//!   `SyrahConcatDataset`), validates every offset and size at open, and reads items as
//!   [`Record`](reel_core::Record)s with one field per array: numeric arrays as 1-D
//!   `Array` values pointing at the bytes read, `str` arrays as `Str` values. One array
//!   ([`SyrahReader::get_array`]) or a few ([`SyrahReader::read_arrays_into`]) can be read
//!   without fetching the rest of the item.
//! * [`SyrahWriter`] writes files byte-identical to the reference for the same items and
//!   implements [`RecordSink`](reel_core::RecordSink); the reference's failure modes
//!   (zero items, a dtype mismatch that leaves garbage, items without arrays) are clear
//!   errors instead of corrupt files.
//!
//! ```no_run
//! use reel_core::{DType, Record, RecordSourceExt};
//! use reel_syrah::{SyrahReader, SyrahWriter};
//!
//! # fn main() -> reel_core::Result<()> {
//! let mut w = SyrahWriter::create("data.syr")?;
//! let mut item = Record::new();
//! item.push_array("label", DType::I32, &[1], &1i32.to_le_bytes())?;
//! item.push_str("text", "héllo");
//! w.add_item(&item)?;
//! w.finish()?;
//!
//! let r = SyrahReader::open("data.syr")?;
//! assert_eq!(r.num_items(), 1);
//! let label = r.get_array(0, "label")?;
//! assert_eq!(label.get("label").and_then(|v| v.as_array()).and_then(|a| a.to_i32_vec()), Some(vec![1]));
//! assert_eq!(r.read(0)?.get("text").and_then(|v| v.as_str()), Some("héllo"));
//! # Ok(()) }
//! ```
//!
//! The reference's quirks (no shapes, `str` arrays concatenated, big-endian input stored
//! under the little-endian name) and where reel differs are listed on [`SyrahReader`] and
//! [`SyrahWriter`].

#![forbid(unsafe_code)]

mod dtype;
pub mod header;
mod layout;
mod metadata;
mod reader;
mod writer;

pub use dtype::{DTYPE_NAMES, SyrahDType};
pub use header::{HEADER_LEN, MAGIC, SyrahHeader, SyrahVersion, looks_like_syrah};
pub use layout::{SyrahFile, SyrahLayout};
pub use metadata::{ArrayLocation, MetadataNotes, SyrahColumn, SyrahMetadata};
pub use reader::{SyrahOptions, SyrahReader, dataset_files, dataset_files_in};
pub use writer::{SyrahWriteOptions, SyrahWriter};

/// reel's core crate, re-exported so that this crate is the only dependency a program
/// needs: `reel_syrah::core::Limits`, `reel_syrah::core::Backend`, ….
pub use reel_core as core;

/// Everything a program reading or writing this format usually names, in one import:
/// `use reel_syrah::prelude::*;`. It holds [`reel_core::prelude`] (records, the source and
/// sink traits, errors) and this crate's readers, writers and options.
pub mod prelude {
    pub use crate::{SyrahOptions, SyrahReader, SyrahWriteOptions, SyrahWriter};
    pub use reel_core::prelude::*;
}

/// The format's name in [`SourceInfo`](reel_core::SourceInfo) and errors.
pub const FORMAT: &str = "syrah";
