//! Per-record functions run on the loader's workers.

use std::sync::Arc;

use reel_core::{RecordOut, RecordRef, Result};

use crate::NumpyRng;

/// A per-record function: reads one record and writes the transformed record.
///
/// It receives the record as read (or as the previous map function left it), the output
/// record to fill (push fields with [`RecordOut::push`]; bytes that are not transformed
/// can be copied over with [`copy_fields`] or [`RecordOut::copy_value`]), and the
/// record's place in the run. It runs on a worker thread; an error it returns reaches the
/// consumer with the record's index attached, and a panic is caught and reported the same
/// way (as an [`ErrorKind::InvalidInput`](reel_core::ErrorKind::InvalidInput) error
/// carrying the panic message), so the worker lives on.
pub type MapFn =
    Arc<dyn Fn(RecordRef<'_>, &mut RecordOut<'_>, &MapContext) -> Result<()> + Send + Sync>;

/// Where a record sits in the run, for map functions that need it (random augmentation
/// with a per-record seed, logging).
///
/// Everything here is a function of the loader's configuration and the record's position
/// in the global order, never of the worker that happens to run the function, so a map
/// that draws its randomness from [`rng`](Self::rng) gives the same output whatever the
/// worker count and across a resume.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MapContext {
    pub(crate) seed: u64,
    pub(crate) epoch: u64,
    pub(crate) position: u64,
    pub(crate) index: u64,
    pub(crate) rank: u64,
}

impl MapContext {
    /// The loader's seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The epoch the record is read in.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// The record's position in the epoch's global order.
    pub fn position(&self) -> u64 {
        self.position
    }

    /// The record's index in the source.
    pub fn index(&self) -> u64 {
        self.index
    }

    /// The rank of the loader that reads it.
    pub fn rank(&self) -> u64 {
        self.rank
    }

    /// A random generator for this record, seeded with `[seed, epoch, position]`: the same
    /// record at the same place of the run always gets the same draws, and different
    /// epochs get different ones.
    pub fn rng(&self) -> NumpyRng {
        NumpyRng::new(&[self.seed, self.epoch, self.position])
    }
}

/// Copies every field of `record` into `out` unchanged (for a map function that adds or
/// replaces some fields and keeps the rest).
pub fn copy_fields(record: RecordRef<'_>, out: &mut RecordOut<'_>) {
    let buf = record.raw_buffer();
    for field in record.raw_fields() {
        let value = out.copy_value(field.value.view(buf));
        out.push(field.name.clone(), value);
    }
}
