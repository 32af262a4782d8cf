//! Batches as the consumer receives them, and the pool their buffers return to.

use std::ops::Deref;
use std::sync::{Mutex, PoisonError, Weak};

use reel_core::{RecordBatch, RecordRef};

use crate::LoaderState;

/// Buffers that finished batches give back, so a loader in its steady state reads into
/// buffers that have already grown to the batch size and allocates nothing.
///
/// Each reader (worker thread, or the consumer when it reads) has its own free list, and
/// a buffer goes back to the list of the reader that filled it: that reader refills it on
/// its own core, where the buffer's memory is likely still cached. A reader whose list is
/// empty takes a buffer from another list before allocating, so the number of buffers
/// stays at what is in use at the busiest moment.
#[derive(Debug)]
pub(crate) struct Recycler {
    lists: Mutex<Vec<Vec<RecordBatch>>>,
    capacity: usize,
}

/// Where a batch buffer returns to.
#[derive(Clone, Debug, Default)]
pub(crate) struct Home {
    pub(crate) pool: Weak<Recycler>,
    pub(crate) reader: usize,
}

impl Home {
    /// Gives `batch` back to its pool, if the loader still exists.
    pub(crate) fn give(&self, batch: RecordBatch) {
        if let Some(pool) = self.pool.upgrade() {
            pool.give(self.reader, batch);
        }
    }
}

impl Recycler {
    /// A pool for `readers` readers that keeps up to `capacity` spare buffers in all.
    pub(crate) fn new(readers: usize, capacity: usize) -> Self {
        let lists = (0..readers).map(|_| Vec::with_capacity(capacity)).collect();
        Recycler { lists: Mutex::new(lists), capacity }
    }

    /// A cleared buffer for `reader`: its own spare if any, else another reader's, else a
    /// new one.
    pub(crate) fn take(&self, reader: usize) -> RecordBatch {
        let mut lists = self.lists.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(batch) = lists.get_mut(reader).and_then(Vec::pop) {
            return batch;
        }
        lists.iter_mut().max_by_key(|l| l.len()).and_then(Vec::pop).unwrap_or_default()
    }

    /// Gives a buffer back to `reader`'s list; beyond the pool's capacity it is freed.
    pub(crate) fn give(&self, reader: usize, mut batch: RecordBatch) {
        batch.clear();
        let mut lists = self.lists.lock().unwrap_or_else(PoisonError::into_inner);
        let spare: usize = lists.iter().map(Vec::len).sum();
        if spare < self.capacity {
            if let Some(list) = lists.get_mut(reader) {
                list.push(batch);
            }
        }
    }
}

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
    pub(crate) records: RecordBatch,
    pub(crate) epoch: u64,
    pub(crate) step: u64,
    pub(crate) position: u64,
    pub(crate) resume: LoaderState,
    pub(crate) home: Home,
}

impl Batch {
    /// The records.
    pub fn records(&self) -> &RecordBatch {
        &self.records
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
    pub fn into_records(mut self) -> RecordBatch {
        self.home = Home::default();
        std::mem::take(&mut self.records)
    }
}

impl Deref for Batch {
    type Target = RecordBatch;

    fn deref(&self) -> &RecordBatch {
        &self.records
    }
}

impl Drop for Batch {
    fn drop(&mut self) {
        self.home.give(std::mem::take(&mut self.records));
    }
}
