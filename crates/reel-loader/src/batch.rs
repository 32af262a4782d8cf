//! Batches as the consumer receives them.

use std::ops::Deref;

use reel_core::{PooledBatch, RecordBatch, RecordRef};

use crate::LoaderState;

/// One batch of records for this rank, in the order of the global schedule.
///
/// It dereferences to the [`RecordBatch`] holding the records (`batch.len()`,
/// `batch.iter()`, `batch.get(k)`); records borrow from it without copying. When it is
/// dropped its buffer goes back to the loader to be filled again, so keep a batch only as
/// long as you use it, or take the buffer with [`into_records`](Self::into_records). A
/// consumer that drops each batch before asking for the next one makes the loader cycle
/// through a fixed set of buffers that stop growing once they have held the largest
/// batch: the steady state allocates nothing.
#[derive(Debug)]
pub struct Batch {
    /// The records, in a buffer that goes back to the loader's pool when dropped.
    pub(crate) records: PooledBatch,
    pub(crate) epoch: u64,
    pub(crate) step: u64,
    pub(crate) position: u64,
    pub(crate) resume: LoaderState,
}

impl Batch {
    /// The records.
    pub fn records(&self) -> &RecordBatch {
        &self.records
    }

    /// The records, taken out without giving the buffer back to the loader's pool or
    /// touching it ([`PooledBatch::detach`]): for a batch inherited by a forked process.
    pub fn detach_records(self) -> RecordBatch {
        self.records.detach()
    }

    /// The epoch the batch belongs to (for [`Schedule::Stream`](crate::Schedule::Stream),
    /// the epoch its global step starts in).
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// The global step within the epoch (see [`LoaderState::step`]).
    pub fn step(&self) -> u64 {
        self.step
    }

    /// The position in the epoch's global order where this global step starts.
    pub fn position(&self) -> u64 {
        self.position
    }

    /// The source indices of the records, in order.
    pub fn indices(&self) -> impl ExactSizeIterator<Item = u64> + '_ {
        self.records.iter().map(|r: RecordRef<'_>| r.index())
    }

    /// The state to save once this batch has been consumed: resuming from it continues
    /// with the batch after this one.
    pub fn resume_state(&self) -> &LoaderState {
        &self.resume
    }

    /// Takes the records out of the batch; the buffer then does not return to the loader.
    pub fn into_records(self) -> RecordBatch {
        self.records.into_inner()
    }
}

impl Deref for Batch {
    type Target = RecordBatch;

    fn deref(&self) -> &RecordBatch {
        &self.records
    }
}
