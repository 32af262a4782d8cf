//! Batch buffers that are filled, handed out, and given back to be filled again.
//!
//! A fresh [`RecordBatch`] costs a page fault per 4 KiB the first time it is written (for
//! 256 records of 100 KiB, thousands per batch, more than the read itself) and a few
//! allocations while its record and field lists grow. A buffer that comes back after use
//! has all of that already, so a reader that cycles through pooled buffers allocates
//! nothing once they have held the largest batch. The read-ahead stream
//! ([`crate::stream`]), the loader built on it and the Python binding's reads all take
//! their buffers from a [`BatchPool`].

use std::ops::{Deref, DerefMut};
use std::sync::{Arc, Mutex, PoisonError, Weak};

use crate::RecordBatch;

/// Spare batch buffers, one free list per reader.
///
/// Each reader (a read-ahead thread, or the consumer when it reads) has its own free list,
/// and a buffer goes back to the list of the reader that filled it: that reader refills it
/// on its own core, where the buffer's memory is likely still cached. A reader whose list
/// is empty takes a buffer from the fullest other list before allocating, so the number of
/// buffers stays at what is in use at the busiest moment.
#[derive(Debug)]
pub struct BatchPool {
    lists: Mutex<Lists>,
    capacity: usize,
    max_buffer_bytes: usize,
}

/// The free lists, and how many of the pool's buffers exist (spare or in use).
#[derive(Debug)]
struct Lists {
    free: Vec<Vec<RecordBatch>>,
    live: usize,
}

impl BatchPool {
    /// A pool for `readers` readers (numbered `0..readers`; at least one list is kept) that
    /// keeps up to `capacity` spare buffers in all.
    pub fn new(readers: usize, capacity: usize) -> Self {
        // The lists grow as buffers come back; reserving `capacity` each up front would
        // allocate for a window nobody may ever fill (a caller's huge prefetch).
        let free = (0..readers.max(1)).map(|_| Vec::new()).collect();
        BatchPool {
            lists: Mutex::new(Lists { free, live: 0 }),
            capacity,
            max_buffer_bytes: usize::MAX,
        }
    }

    /// Frees a returned buffer that holds more than `bytes` instead of keeping it: one huge
    /// read should not pin its memory for the pool's lifetime. Default: no bound.
    pub fn max_buffer_bytes(mut self, bytes: usize) -> Self {
        self.max_buffer_bytes = bytes;
        self
    }

    /// A cleared buffer for reader `reader`: its own spare if any, else another reader's,
    /// else a new one. Dropping the buffer gives it back to `reader`'s list.
    pub fn take(self: &Arc<Self>, reader: usize) -> PooledBatch {
        let batch = {
            let mut lists = self.lists.lock().unwrap_or_else(PoisonError::into_inner);
            let free = &mut lists.free;
            let batch = match free.get_mut(reader).and_then(Vec::pop) {
                Some(batch) => Some(batch),
                None => free.iter_mut().max_by_key(|l| l.len()).and_then(Vec::pop),
            };
            if batch.is_none() {
                // A new buffer: make room for it in every list now. Buffers move between
                // lists (a reader takes another's spares), so any list may one day hold
                // every buffer; growing it then, while a consumer gives a buffer back,
                // was an allocation in the steady state.
                lists.live += 1;
                let room = lists.live.min(self.capacity);
                for list in &mut lists.free {
                    list.reserve(room.saturating_sub(list.len()));
                }
            }
            batch
        };
        PooledBatch { batch: batch.unwrap_or_default(), home: Arc::downgrade(self), reader }
    }

    /// Spare buffers held right now.
    pub fn spares(&self) -> usize {
        self.lists.lock().unwrap_or_else(PoisonError::into_inner).free.iter().map(Vec::len).sum()
    }

    fn give(&self, reader: usize, mut batch: RecordBatch) {
        let keep = batch.buffer_len() <= self.max_buffer_bytes;
        if keep {
            batch.clear();
        }
        let mut lists = self.lists.lock().unwrap_or_else(PoisonError::into_inner);
        let spare: usize = lists.free.iter().map(Vec::len).sum();
        if keep && spare < self.capacity {
            let last = lists.free.len() - 1;
            if let Some(list) = lists.free.get_mut(reader.min(last)) {
                list.push(batch);
                return;
            }
        }
        // Freed rather than kept: one buffer fewer to make room for.
        lists.live = lists.live.saturating_sub(1);
    }

    /// A buffer taken out of the pool for good ([`PooledBatch::into_inner`]).
    fn forget(&self) {
        let mut lists = self.lists.lock().unwrap_or_else(PoisonError::into_inner);
        lists.live = lists.live.saturating_sub(1);
    }
}

/// A batch buffer taken from a [`BatchPool`]. It dereferences to the [`RecordBatch`]; when
/// dropped it goes back to its pool (if the pool still exists) to be filled again.
#[derive(Debug, Default)]
pub struct PooledBatch {
    batch: RecordBatch,
    home: Weak<BatchPool>,
    reader: usize,
}

impl PooledBatch {
    /// A batch that belongs to no pool (dropping it frees it).
    pub fn unpooled(batch: RecordBatch) -> Self {
        PooledBatch { batch, home: Weak::new(), reader: 0 }
    }

    /// Takes the records out; the buffer then does not return to the pool.
    pub fn into_inner(mut self) -> RecordBatch {
        if let Some(pool) = std::mem::take(&mut self.home).upgrade() {
            pool.forget();
        }
        std::mem::take(&mut self.batch)
    }
}

impl PooledBatch {
    /// Takes the records out without telling the pool, which is not touched (its lock not
    /// taken): the pool then counts the buffer as in use for good. For a buffer inherited
    /// by a process `fork()` made, whose copy of the pool's lock another thread of the
    /// parent may have held at the fork and nothing in the child will ever release.
    pub fn detach(mut self) -> RecordBatch {
        self.home = Weak::new();
        std::mem::take(&mut self.batch)
    }
}

impl Deref for PooledBatch {
    type Target = RecordBatch;

    fn deref(&self) -> &RecordBatch {
        &self.batch
    }
}

impl DerefMut for PooledBatch {
    fn deref_mut(&mut self) -> &mut RecordBatch {
        &mut self.batch
    }
}

impl Drop for PooledBatch {
    fn drop(&mut self) {
        if let Some(pool) = self.home.upgrade() {
            pool.give(self.reader, std::mem::take(&mut self.batch));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filled(records: usize) -> RecordBatch {
        let mut b = RecordBatch::new();
        for i in 0..records {
            b.push_with(i as u64, |o| {
                let s = o.append(&[7; 100]);
                o.push("data".into(), crate::Value::Bytes(s));
                Ok(())
            })
            .unwrap();
        }
        b
    }

    #[test]
    fn buffers_return_to_their_reader_and_are_shared_when_one_runs_dry() {
        let pool = Arc::new(BatchPool::new(2, 4));
        let mut a = pool.take(0);
        *a = filled(3);
        drop(a);
        assert_eq!(pool.spares(), 1);
        // Reader 1 has nothing of its own: it takes reader 0's spare, cleared.
        let b = pool.take(1);
        assert!(b.is_empty());
        assert!(b.arena.capacity_bytes() >= 300, "the spare keeps its grown buffer");
        assert_eq!(pool.spares(), 0);
        drop(b);
        assert_eq!(pool.spares(), 1);
    }

    #[test]
    fn capacity_and_size_bounds_free_what_they_exclude() {
        let pool = Arc::new(BatchPool::new(1, 1).max_buffer_bytes(250));
        let (mut a, mut b) = (pool.take(0), pool.take(0));
        *a = filled(1);
        *b = filled(1);
        drop(a);
        drop(b);
        assert_eq!(pool.spares(), 1, "a second spare exceeds the capacity");
        let mut big = pool.take(0);
        *big = filled(3);
        drop(big);
        assert_eq!(pool.spares(), 0, "a buffer over the byte bound is freed");
        let kept = pool.take(0).into_inner();
        drop(kept);
        assert_eq!(pool.spares(), 0, "into_inner takes the buffer out of the pool");
        let orphan = pool.take(0);
        drop(pool);
        drop(orphan);
    }
}
