//! Reading steps: the loader's work for core's read-ahead engine
//! ([`reel_core::stream::ReadAhead`]), which hands steps out in schedule order to worker
//! threads (or the consumer), recycles the batch buffers and delivers batches in order.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use reel_core::stream::{StreamWork, panic_error};
use reel_core::{Error, Record, RecordBatch, RecordSource, Result};

use crate::map::{MapContext, MapFn};
use crate::schedule::{Cursor, Step};
use crate::sequence::Sequencer;

/// What every reader of steps shares: the source, the schedule and the maps.
pub(crate) struct StepWork {
    pub(crate) source: Arc<dyn RecordSource>,
    pub(crate) sequencer: Sequencer,
    pub(crate) maps: Vec<MapFn>,
    /// Whether records may point into memory-held files instead of being copied.
    pub(crate) borrow: bool,
}

/// Where the schedule stands: the next step to hand out.
pub(crate) struct StepPlan {
    /// Where the next step to hand out starts; `None` once the schedule is exhausted.
    pub(crate) next: Option<Cursor>,
    /// Steps to pass over before handing out the next one (see `Interleave`).
    pub(crate) skip: u64,
}

/// One reader's buffers, reused from step to step.
pub(crate) struct Scratch {
    /// The step being read.
    step: Option<Step>,
    indices: Vec<u64>,
    positions: Vec<(u64, u64)>,
    /// The other half of the map functions' ping-pong.
    spare: RecordBatch,
}

impl StreamWork for StepWork {
    type Plan = StepPlan;
    type Reader = Scratch;
    type Tag = Step;

    fn reader(&self, _number: usize) -> Scratch {
        // Room for a whole batch, but never more than the dataset has records: a batch size
        // far beyond them (a caller's "everything in one batch") allocates what is read.
        let records = self.source.len();
        let batch = usize::try_from(self.sequencer.planner.batch.min(records)).unwrap_or(0);
        Scratch {
            step: None,
            indices: Vec::with_capacity(batch),
            positions: Vec::with_capacity(if self.maps.is_empty() { 0 } else { batch }),
            spare: RecordBatch::new(),
        }
    }

    fn plan(&self, plan: &mut StepPlan, scratch: &mut Scratch) -> Option<Step> {
        let cursor = plan.next?;
        match self.sequencer.step_skipping(cursor, plan.skip) {
            Some(step) => {
                plan.next = Some(step.next);
                plan.skip = self.sequencer.interleave.gap();
                scratch.step = Some(step);
                Some(step)
            }
            None => {
                plan.next = None;
                None
            }
        }
    }

    fn read(&self, scratch: &mut Scratch, out: &mut RecordBatch) -> Result<()> {
        let step = scratch.step.ok_or_else(|| Error::invalid_input("no step to read"))?;
        self.fill(&step, out, scratch)
    }
}

impl StepWork {
    /// Reads `step` into `out` and applies the map functions.
    fn fill(&self, step: &Step, out: &mut RecordBatch, scratch: &mut Scratch) -> Result<()> {
        let want_positions = !self.maps.is_empty();
        self.sequencer.fill(
            step,
            &mut scratch.indices,
            want_positions.then_some(&mut scratch.positions),
        );
        let indices = &scratch.indices;
        let read = || match self.borrow {
            true => self.source.read_batch_borrowed(indices, out),
            false => self.source.read_batch_into(indices, out),
        };
        match catch_unwind(AssertUnwindSafe(read)) {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(self.locate(e, indices)),
            Err(panic) => {
                out.clear();
                let error = panic_error(panic, "the source").with_format(self.source.info().format);
                return Err(self.locate(error, indices));
            }
        }
        for map in &self.maps {
            let spare = &mut scratch.spare;
            spare.clear();
            for (record, &(epoch, position)) in out.iter().zip(&scratch.positions) {
                let index = record.index();
                let ctx = MapContext {
                    seed: self.sequencer.seed,
                    epoch,
                    position,
                    index,
                    rank: self.sequencer.planner.rank,
                };
                let applied = catch_unwind(AssertUnwindSafe(|| {
                    spare.push_with(index, |o| (**map)(record, o, &ctx))
                }));
                let error = match applied {
                    Ok(Ok(())) => continue,
                    Ok(Err(e)) => e,
                    Err(panic) => panic_error(panic, "a map function"),
                };
                spare.clear();
                return Err(error.with_record(index));
            }
            std::mem::swap(out, spare);
        }
        Ok(())
    }

    /// Names the failing record when the source's batch error does not: the records are
    /// read one by one (only on this error path) until one fails.
    fn locate(&self, error: Error, indices: &[u64]) -> Error {
        // A cancelled read (the loader was dropped) belongs to no record, and reading the
        // records again would only delay the drop.
        if error.record().is_some() || error.kind() == reel_core::ErrorKind::Closed {
            return error;
        }
        let mut record = Record::new();
        for &index in indices {
            let alone =
                catch_unwind(AssertUnwindSafe(|| self.source.read_into(index, &mut record)));
            if !matches!(alone, Ok(Ok(()))) {
                return error.with_record(index);
            }
        }
        error
    }
}
