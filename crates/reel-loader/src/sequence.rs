//! The index sequence of one rank: the schedule and the epoch orders combined, no I/O.

use crate::order::OrderCache;
use crate::schedule::{Cursor, Planner, Step};
use crate::{EpochOrder, LoaderState, Shuffle};

/// Which records each step of one rank holds.
pub(crate) struct Sequencer {
    pub(crate) planner: Planner,
    pub(crate) orders: OrderCache,
    pub(crate) seed: u64,
    pub(crate) shuffle: Shuffle,
    /// Which of the rank's steps this reader reads (see [`LoaderBuilder::interleave`]).
    ///
    /// [`LoaderBuilder::interleave`]: crate::LoaderBuilder::interleave
    pub(crate) interleave: Interleave,
}

/// Every `every`-th step of a rank, starting with step number `first` (counted from where
/// the reader starts): several readers of one rank (DataLoader worker processes) taking
/// the rank's batches in turn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Interleave {
    pub(crate) every: u64,
    pub(crate) first: u64,
}

impl Interleave {
    /// Every step.
    pub(crate) const ALL: Interleave = Interleave { every: 1, first: 0 };

    /// Steps to pass over after a step was taken.
    pub(crate) fn gap(&self) -> u64 {
        self.every - 1
    }
}

impl Sequencer {
    pub(crate) fn new(planner: Planner, shuffle: Shuffle, seed: u64) -> Self {
        Sequencer {
            planner,
            orders: OrderCache::new(shuffle, seed, planner.len),
            seed,
            shuffle,
            interleave: Interleave::ALL,
        }
    }

    /// The step to read from `cursor` on after passing over `skip` steps; `None` at the end
    /// of the run. Passing over a step is arithmetic only (nothing is read or ordered).
    pub(crate) fn step_skipping(&self, mut cursor: Cursor, skip: u64) -> Option<Step> {
        for _ in 0..skip {
            cursor = self.planner.step_at(cursor)?.next;
        }
        self.planner.step_at(cursor)
    }

    /// Fills `indices` with the records of `step` for this rank, and `positions` with
    /// their `(epoch, position)` in the global order.
    pub(crate) fn fill(
        &self,
        step: &Step,
        indices: &mut Vec<u64>,
        mut positions: Option<&mut Vec<(u64, u64)>>,
    ) {
        indices.clear();
        if let Some(p) = positions.as_deref_mut() {
            p.clear();
        }
        let mut current: Option<(u64, EpochOrder)> = None;
        self.planner.for_each_position(step, |epoch, position| {
            let order = match &current {
                Some((e, order)) if *e == epoch => order,
                _ => &current.insert((epoch, self.orders.epoch(epoch))).1,
            };
            indices.push(order.index_at(position));
            if let Some(p) = positions.as_deref_mut() {
                p.push((epoch, position));
            }
        });
    }

    /// The resumable state of a cursor.
    pub(crate) fn state(&self, cursor: Cursor) -> LoaderState {
        LoaderState {
            seed: self.seed,
            epoch: cursor.epoch,
            step: cursor.step,
            position: cursor.position,
            len: self.planner.len,
            shuffle: self.shuffle,
        }
    }
}

/// The indices of one batch of one rank, as the loader would read them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BatchIndices {
    /// The epoch (see [`Batch::epoch`](crate::Batch::epoch)).
    pub epoch: u64,
    /// The global step within the epoch (see [`Batch::step`](crate::Batch::step)).
    pub step: u64,
    /// Where the global step starts in the epoch's order.
    pub position: u64,
    /// The source indices, in batch order.
    pub indices: Vec<u64>,
    /// The state after this batch (see [`Batch::resume_state`](crate::Batch::resume_state)).
    pub resume: LoaderState,
}

/// The index batches a loader with the same configuration would read, computed without
/// reading anything (from [`LoaderBuilder::index_batches`](crate::LoaderBuilder::index_batches)).
///
/// Useful to inspect a schedule, to check sharding, or to feed another reader.
pub struct IndexBatches {
    pub(crate) sequencer: Sequencer,
    pub(crate) cursor: Cursor,
    /// Steps to pass over before the next one (see [`Interleave`]).
    pub(crate) skip: u64,
}

impl IndexBatches {
    /// The state before the next batch.
    pub fn state(&self) -> LoaderState {
        self.sequencer.state(self.cursor)
    }

    /// Passes over the next `n` batches without computing their records, and returns how
    /// many there were (fewer than `n` at the end of the plan). Then [`state`](Self::state)
    /// is the state after them: a resume point `n` batches in costs `n` steps of
    /// arithmetic, not `n` batches of indices.
    pub fn skip_batches(&mut self, n: u64) -> u64 {
        let mut passed = 0;
        while passed < n {
            let Some(step) = self.sequencer.step_skipping(self.cursor, self.skip) else {
                break;
            };
            self.skip = self.sequencer.interleave.gap();
            self.cursor = step.next;
            passed += 1;
        }
        passed
    }
}

impl Iterator for IndexBatches {
    type Item = BatchIndices;

    fn next(&mut self) -> Option<BatchIndices> {
        let step = self.sequencer.step_skipping(self.cursor, self.skip)?;
        self.skip = self.sequencer.interleave.gap();
        let mut indices = Vec::with_capacity(step.count as usize);
        self.sequencer.fill(&step, &mut indices, None);
        self.cursor = step.next;
        Some(BatchIndices {
            epoch: step.at.epoch,
            step: step.at.step,
            position: step.at.position,
            indices,
            resume: self.sequencer.state(step.next),
        })
    }
}
