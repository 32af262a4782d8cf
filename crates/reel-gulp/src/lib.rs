//! GulpIO2 for reel: gulp directories read and written byte-compatibly with gulpio2 0.0.4.
//!
//! A gulp directory holds chunks, each a pair of files: `data_<n>.gulp` (the frames of its
//! videos as JPEG files, each padded with zero bytes to a multiple of 4) and
//! `meta_<n>.gmeta` (JSON: for every video id, `frame_info` = `[loc, pad, length]` per
//! frame and `meta_data` = the user's metadata dicts).
//!
//! * [`GulpReader`] opens a directory in the reference's chunk order and reads videos as
//!   records (`id`, `meta`, `frames`; see its documentation for the exact mapping), by
//!   index or id, with frame selection by slice or index list ([`FrameSelection`]) that
//!   reads only the chosen frames, and optional JPEG decoding ([`FrameDecode`]) that fails
//!   on exactly the frames the reference's decoder fails on ([`JpegStrictness`],
//!   [`GulpReader::bad_frames`]).
//! * [`GulpChunkWriter`] writes or extends one chunk like the reference's `GulpChunk`;
//!   [`GulpWriter`] writes a whole directory chunk by chunk and is the
//!   [`RecordSink`](reel_core::RecordSink). The `.gmeta` text is byte-identical to
//!   Python's `json.dump` output ([`json`]); frames given as JPEG bytes are stored
//!   unchanged, frames given as pixels are encoded at quality 90 with 4:4:4 chroma like the
//!   reference (with another encoder, so those JPEG bytes differ from simplejpeg's).
//! * [`GulpIngestor`] fills N chunks of K videos from a [`GulpAdapter`] on several threads,
//!   like the reference's `GulpIngestor`.
//! * [`sanity_check`] runs the reference's `gulp2_sanity_check` checks, done right, and
//!   more, and returns a [`GulpSanityReport`].
//!
//! ```no_run
//! use reel_core::RecordSourceExt;
//! use reel_gulp::{Frame, FrameSelection, GulpReader, GulpWriteOptions, GulpWriter, JsonValue};
//!
//! # fn main() -> reel_core::Result<()> {
//! # let jpeg_bytes: &[u8] = &[];
//! let mut w = GulpWriter::create("clips", &GulpWriteOptions::default())?;
//! let meta = JsonValue::object([("label", JsonValue::from("wave"))]);
//! w.write_video("clip-0", meta, &[Frame::Jpeg(jpeg_bytes)])?;
//! w.finish()?;
//!
//! let gulp = GulpReader::open("clips")?;
//! let video = gulp.get("clip-0", &FrameSelection::every(2))?;
//! let frames = video.get("frames").and_then(|f| f.as_list()).map_or(0, |l| l.len());
//! println!("{} frames of {:?}", frames, video.get("id"));
//! # Ok(()) }
//! ```

#![forbid(unsafe_code)]

pub mod discovery;
mod ingest;
mod jpeg;
mod jpeg_strict;
pub mod json;
mod layout;
mod meta;
mod reader;
mod sanity;
mod select;
mod writer;

pub use discovery::{ChunkPaths, discover_chunks, discover_chunks_in};
pub use ingest::{
    GulpAdapter, GulpIngestor, GulpItem, IngestProgress, IngestSummary, calculate_chunk_slices,
};
pub use jpeg::{
    DecodedFrame, Frame, FrameDecode, JpegStrictness, OwnedFrame, REFERENCE_QUALITY, check_jpeg,
    decode_jpeg, decode_jpeg_with, encode_jpeg,
};
pub use json::{JsonStr, JsonValue};
pub use layout::{DuplicateId, GulpChunkInfo, GulpLayout};
pub use meta::FrameInfo;
pub use reader::{BadFrame, GulpOptions, GulpReader, dataset_files, dataset_files_in};
pub use sanity::{
    GulpSanityReport, SanityIssue, SanityIssueKind, SanityOptions, Severity, sanity_check,
    sanity_check_with,
};
pub use select::FrameSelection;
pub use writer::{ChunkSummary, GulpChunkWriter, GulpWriteOptions, GulpWriter};

/// reel's core crate, re-exported so that this crate is the only dependency a program
/// needs: `reel_gulp::core::Limits`, `reel_gulp::core::Backend`, ….
pub use reel_core as core;

/// Everything a program reading or writing this format usually names, in one import:
/// `use reel_gulp::prelude::*;`. It holds [`reel_core::prelude`] (records, the source and
/// sink traits, errors) and this crate's readers, writers and options.
pub mod prelude {
    pub use crate::{
        Frame, FrameSelection, GulpOptions, GulpReader, GulpWriteOptions, GulpWriter, JsonValue,
    };
    pub use reel_core::prelude::*;
}

/// The format's name in [`SourceInfo`](reel_core::SourceInfo) and errors.
pub const FORMAT: &str = "gulp";

/// Record field: the video id (`Str`).
pub const ID_FIELD: &str = "id";
/// Record field: the first `meta_data` element, converted from JSON.
pub const META_FIELD: &str = "meta";
/// Record field: the frames (`List` of JPEG `Bytes`, or of decoded `uint8` arrays).
pub const FRAMES_FIELD: &str = "frames";
/// Record field, present only when `meta_data` has more than one element: the others.
pub const META_EXTRA_FIELD: &str = "meta_extra";
