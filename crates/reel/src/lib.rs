//! reel: the record formats deep-learning datasets live in, behind one API.
//!
//! Most users need only this crate: [`open`] a dataset of any supported format and read it
//! through [`RecordSource`] — record by record, in batches, from many threads. Each format
//! is also re-exported as a module (`reel::ffrecord`, …) for its writers and its own API;
//! each sits behind a Cargo feature of the same name (all on by default).
//!
//! ```no_run
//! use reel::prelude::*;
//!
//! # fn main() -> reel::Result<()> {
//! let source = reel::open("train.ffr")?;
//! println!("{} records of {}", source.len(), source.info().format);
//! let mut batch = RecordBatch::new();
//! source.read_batch_into(&[5, 1, 42], &mut batch)?;
//! for record in &batch {
//!     let bytes = record.bytes("data").unwrap_or_default();
//!     println!("record {}: {} bytes", record.index(), bytes.len());
//! }
//! # Ok(()) }
//! ```

#![deny(unsafe_code)]

#[cfg(all(target_os = "linux", feature = "io-uring"))]
pub mod auto;
mod backends;
pub mod convert;
mod create;
mod formats;
mod open;
pub mod parts;
pub mod payload;
#[cfg(feature = "object-store")]
pub mod remote_sink;
pub mod synth;
#[cfg(all(target_os = "linux", feature = "io-uring"))]
pub mod uring;
mod verify;

pub use backends::{all_backends, backend_by_name, backend_names, default_backend, maps_ipc_files};
pub use convert::{ConvertOptions, ConvertReport, Loss, convert, create_part, part_names};
pub use create::{CreateOptions, create, create_like, create_like_with};
pub use open::{Format, OpenOptions, locate, open, open_as, open_with, sniff, sniff_in};
pub use payload::{Codec, Payload};
pub use reel_core::*;
pub use verify::{
    Problem, STREAM_BATCH_BYTES, VerifyReport, streaming, verify, verify_with_progress,
};

#[cfg(feature = "arrow")]
pub use reel_arrow as arrow;
#[cfg(feature = "ffrecord")]
pub use reel_ffrecord as ffrecord;
#[cfg(feature = "granular")]
pub use reel_granular as granular;
#[cfg(feature = "gulp")]
pub use reel_gulp as gulp;
#[cfg(feature = "loader")]
pub use reel_loader as loader;
#[cfg(feature = "loader")]
pub use reel_loader::{Batch, Loader, LoaderBuilder, LoaderState, MapContext, Schedule, Shuffle};
#[cfg(feature = "ofrecord")]
pub use reel_ofrecord as ofrecord;
#[cfg(feature = "object-store")]
pub use reel_store as store;
#[cfg(feature = "syrah")]
pub use reel_syrah as syrah;

/// Everything a program using reel usually names, in one import: `use reel::prelude::*;`.
///
/// It holds [`reel_core::prelude`] (records, the source and sink traits, errors) and the
/// facade's entry points ([`open`], [`create`], [`convert`](fn@crate::convert) and their
/// options, [`Format`]).
/// A format's own types are in its module (`reel::ffrecord::FfrecordWriter`, …) and that
/// module's `prelude`.
pub mod prelude {
    pub use crate::{
        ConvertOptions, CreateOptions, Format, OpenOptions, convert, create, open, open_as,
        open_with,
    };
    pub use reel_core::prelude::*;
}

/// The README's examples, compiled as doctests so they cannot drift from the API.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;
