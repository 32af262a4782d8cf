//! The core of reel: the traits every format implements, the record model, errors, limits
//! and the I/O backends.
//!
//! # Shape
//!
//! A format crate does no I/O on the read path. For record `i` it says which byte ranges of
//! which files hold it ([`Layout::plan`]) and, given those bytes, what the record is
//! ([`Layout::decode`]). [`LayoutSource`] turns any layout into a [`RecordSource`] over any
//! [`ReadAt`] backend ([`PreadFiles`], [`MmapFiles`], [`MemFiles`], or one from another
//! crate through [`Backend::Custom`]):
//!
//! ```text
//! indices ──plan──▶ [(file, offset, len), …] ──ReadAt::read_many──▶ bytes ──decode──▶ records
//! ```
//!
//! Records ([`Record`], [`RecordBatch`]) keep their bytes in one reusable buffer and fields
//! point into it ([`Value`] holds [`Span`]s; read through [`ValueRef`]), so the raw bytes of
//! a record are handed out without copying and a reused batch allocates nothing.
//!
//! Writers implement [`RecordSink`] and publish their output atomically with
//! [`StagedFile`]/[`StagedDir`].
//!
//! # Example
//!
//! ```
//! use reel_core::{Record, RecordSourceExt};
//! # fn demo(source: &dyn reel_core::RecordSource) -> reel_core::Result<()> {
//! let mut batch = reel_core::RecordBatch::new();
//! source.read_batch_into(&[3, 1, 4], &mut batch)?;
//! for record in batch.iter() {
//!     for (name, value) in record.iter() {
//!         println!("{} {name}: {}", record.index(), value.kind_name());
//!     }
//! }
//! # Ok(()) }
//! ```

#![forbid(unsafe_op_in_unsafe_fn)]
#![deny(unsafe_code)] // allowed only in io::mmap and checksum::copy, with a SAFETY comment per block

mod batch;
pub mod checksum;
mod concat;
mod error;
pub mod io;
mod layout;
mod limits;
pub mod paths;
pub mod pickle;
pub mod pool;
mod prefetch;
mod record;
#[cfg(feature = "serde")]
mod serde_support;
mod sink;
mod source;
pub mod staged;
pub mod store;
pub mod stream;
#[cfg(feature = "tagged-json")]
pub mod tagged_json;
mod value;

#[cfg(feature = "testing")]
pub mod testing;

/// The names nearly every program that reads or writes records needs, for
/// `use reel_core::prelude::*;`. Each format crate's `prelude` (and the facade's) re-exports
/// this one, so a program depending on one format crate gets the same names from it.
pub mod prelude {
    pub use crate::{
        DType, Error, ErrorKind, Record, RecordBatch, RecordRef, RecordSink, RecordSource,
        RecordSourceExt, Result, ResultExt, ValueRef,
    };
}

pub use batch::{BatchIter, RecordBatch};
pub use concat::ConcatSource;
pub use error::{Error, ErrorKind, Result, ResultExt};
pub use io::{
    Backend, MemFiles, MmapFiles, OpenFiles, PartlyOpen, PreadFiles, ReadAt, ReadReq, SharedBytes,
};
pub use layout::{BORROW_MIN_RECORD, Layout, LayoutSource, Plan, RawParts, ReadRange};
pub use limits::{Limits, check_within, to_usize, try_reserve, try_vec_with_capacity, try_zeroed};
pub use pool::{BatchPool, PooledBatch};
pub use prefetch::prefetch_read;
pub use record::{Field, FieldName, RAW_FIELD, Record, RecordOut, RecordRef, check_array_len};
pub use sink::{RecordSink, SealedFile, SinkSummary, UnfinishedGuard};
pub use source::{
    Batches, FieldSpec, Iter, Located, Location, RecordSource, RecordSourceExt, SourceInfo,
    Warning, WarningKind,
};
pub use staged::{StagedDir, StagedFile};
pub use store::{
    Entry, LocalStore, Store, StoreRef, files_with_extension, local_store, missing_numbered_parts,
};
pub use stream::{BatchPlan, BatchStream, StreamBatch, StreamOptions};
pub use value::{
    ArrayRef, ArrayValue, DType, Element, ListRef, MapRef, Shape, Span, Value, ValueRef, f16_to_f32,
};
