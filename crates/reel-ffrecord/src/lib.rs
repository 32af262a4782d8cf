//! FFRecord, the record format of HFAiLab's `ffrecord`, read and written byte-compatibly.
//!
//! An FFRecord file is a header (`u32 meta_crc | i64 n | u32 crc32[n] | i64 offset[n]`,
//! little-endian) followed by the records back to back. Records are opaque bytes; each one
//! reads as a [`Record`](reel_core::Record) with one `Bytes` field named `data`.
//!
//! * [`FfrecordReader`] opens one file, a list of files, or a directory of `*.ffr` parts
//!   as one dataset, checks the metadata checksum at open and each record's CRC-32 on read
//!   (both switchable), and serves batch reads through core's batched path.
//! * [`FfrecordWriter`] writes a file byte-identical to the reference writer, with the
//!   record count given up front or counted; [`FfrecordPartsWriter`] and [`dump`] write
//!   `PART_%05d.ffr` directories.
//! * [`PackedFolder`] and [`pack_folder`] read and write a directory tree packed into one
//!   file, with a strict parser for the pickled folder index.
//!
//! This crate is the only dependency a program needs (`reel-ffrecord = "0.1"`): it
//! re-exports reel's core as [`core`], and [`prelude`] brings the reader, the writer, the
//! record types and the traits whose methods they use.
//!
//! ```no_run
//! use reel_ffrecord::prelude::*;
//!
//! fn main() -> reel_ffrecord::core::Result<()> {
//!     let mut w = FfrecordWriter::create("data.ffr", 2)?;
//!     w.append(&Record::from_bytes(b"hello"))?;
//!     w.write_one(b"AB")?; // the reference's name, for raw bytes
//!     w.finish()?;
//!
//!     let r = FfrecordReader::open("data.ffr")?;
//!     assert_eq!(r.len(), 2);
//!     assert_eq!(r.read_one(1)?, b"AB");
//!     let batch = r.read_batch(&[1, 0])?;
//!     for record in &batch {
//!         println!("{}: {:?}", record.index(), record.bytes("data"));
//!     }
//!     Ok(())
//! }
//! ```
//!
//! Reference behaviours reel does not copy (they are crashes or silent corruption there)
//! are listed on [`FfrecordReader`] and [`FfrecordWriter`].

#![forbid(unsafe_code)]

pub mod header;
mod layout;
mod packed;
pub mod pickle;
mod reader;
mod writer;

pub use layout::FfrecordLayout;
pub use packed::{Lookup, PACKED_MAGIC, PackedFolder, is_packed_index, pack_folder};
pub use pickle::{FolderDir, FolderEntry};
pub use reader::{FfrecordOptions, FfrecordReader, dataset_files, dataset_files_in};
pub use writer::{FfrecordPartsWriter, FfrecordWriter, dump};

/// reel's core crate, re-exported so that this crate is the only dependency a program
/// needs: `reel_ffrecord::core::Limits`, `reel_ffrecord::core::Backend`, ….
pub use reel_core as core;

/// Everything a program reading or writing this format usually names, in one import:
/// `use reel_ffrecord::prelude::*;`. It holds [`reel_core::prelude`] (records, the source and
/// sink traits, errors) and this crate's readers, writers and options.
pub mod prelude {
    pub use crate::{FfrecordOptions, FfrecordReader, FfrecordWriter, PackedFolder};
    pub use reel_core::prelude::*;
}

/// The format's name in [`SourceInfo`](reel_core::SourceInfo) and errors.
pub const FORMAT: &str = "ffrecord";
