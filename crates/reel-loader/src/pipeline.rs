//! Reading steps: on the consumer's thread, or on worker threads with a bounded,
//! order-restoring prefetch queue.

use std::any::Any;
use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;

use reel_core::{Error, ErrorKind, Record, RecordBatch, RecordSource, Result};

use crate::batch::{Home, Recycler};
use crate::map::{MapContext, MapFn};
use crate::schedule::{Cursor, Step};
use crate::sequence::Sequencer;

/// What every reader of steps shares: the source, the schedule, the maps, the buffers.
pub(crate) struct Context {
    pub(crate) source: Arc<dyn RecordSource>,
    pub(crate) sequencer: Sequencer,
    pub(crate) maps: Vec<MapFn>,
    pub(crate) pool: Arc<Recycler>,
}

/// Per-reader buffers, reused from step to step.
pub(crate) struct Scratch {
    indices: Vec<u64>,
    positions: Vec<(u64, u64)>,
    /// The other half of the map functions' ping-pong.
    spare: RecordBatch,
    /// This reader's number in the buffer pool.
    reader: usize,
}

impl Scratch {
    /// Buffers for reader number `reader`.
    pub(crate) fn new(reader: usize) -> Self {
        Scratch { indices: Vec::new(), positions: Vec::new(), spare: RecordBatch::new(), reader }
    }
}

impl Context {
    /// Reads `step` into a pooled buffer and applies the map functions.
    pub(crate) fn run(&self, step: Step, scratch: &mut Scratch) -> Finished {
        let mut out = self.pool.take(scratch.reader);
        let result = match self.fill(&step, &mut out, scratch) {
            Ok(()) => Ok(out),
            Err(e) => {
                self.pool.give(scratch.reader, out);
                Err(e)
            }
        };
        Finished {
            step,
            result,
            home: Home { pool: Arc::downgrade(&self.pool), reader: scratch.reader },
        }
    }

    fn fill(&self, step: &Step, out: &mut RecordBatch, scratch: &mut Scratch) -> Result<()> {
        let want_positions = !self.maps.is_empty();
        self.sequencer.fill(
            step,
            &mut scratch.indices,
            want_positions.then_some(&mut scratch.positions),
        );
        let indices = &scratch.indices;
        match catch_unwind(AssertUnwindSafe(|| self.source.read_batch_into(indices, out))) {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(self.locate(e, indices)),
            Err(panic) => {
                out.clear();
                let error = panicked(panic, "the source").with_format(self.source.info().format);
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
                    Err(panic) => panicked(panic, "a map function"),
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
        if error.record().is_some() {
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

/// An error for a panic caught in `who`, so it reaches the consumer instead of killing a
/// worker thread.
fn panicked(payload: Box<dyn Any + Send>, who: &str) -> Error {
    let message = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "no message".to_string());
    Error::new(ErrorKind::InvalidInput, format!("{who} panicked: {message}"))
}

/// A step read (or failed), waiting to be delivered in order.
pub(crate) struct Finished {
    pub(crate) step: Step,
    pub(crate) result: Result<RecordBatch>,
    /// Where the batch buffer returns to.
    pub(crate) home: Home,
}

impl Finished {
    /// Gives an undelivered batch's buffer back to its pool.
    fn recycle(self) {
        if let Ok(batch) = self.result {
            self.home.give(batch);
        }
    }
}

/// The scheduling state shared by the consumer and the workers.
struct Queue {
    /// Where the next step to hand out starts; `None` once the schedule is exhausted.
    next: Option<Cursor>,
    /// Steps to pass over before handing out the next one (see `Interleave`).
    skip: u64,
    /// Steps handed out so far (the sequence number of the next one).
    assigned: u64,
    /// Steps delivered to the consumer so far.
    delivered: u64,
    /// Steps that may be handed out ahead of the consumer.
    window: u64,
    /// Slot `k` holds step `delivered + k` once it is read.
    results: VecDeque<Option<Finished>>,
    /// The total number of steps, once the schedule is exhausted.
    end: Option<u64>,
    stop: bool,
    live_workers: usize,
    crashed: bool,
    /// Workers asleep because the window is full, and whether the consumer is asleep:
    /// wake-ups (system calls, and on virtual machines costly cross-CPU interrupts) are
    /// only sent to someone who waits.
    idle_workers: usize,
    consumer_waiting: bool,
}

/// What [`Queue::assign`] found.
enum Assigned {
    /// Step number `.0` may be read.
    Step(u64, Step),
    /// The window is full: wait for the consumer.
    Full,
    /// Every step has been handed out.
    Exhausted,
}

impl Queue {
    /// Hands out the next step if the window allows it.
    fn assign(&mut self, sequencer: &Sequencer) -> Assigned {
        let Some(cursor) = self.next else {
            return Assigned::Exhausted;
        };
        if self.assigned >= self.delivered.saturating_add(self.window) {
            return Assigned::Full;
        }
        match sequencer.step_skipping(cursor, self.skip) {
            Some(step) => {
                self.next = Some(step.next);
                self.skip = sequencer.interleave.gap();
                let seq = self.assigned;
                self.assigned += 1;
                self.results.push_back(None);
                Assigned::Step(seq, step)
            }
            None => {
                self.next = None;
                self.end = Some(self.assigned);
                Assigned::Exhausted
            }
        }
    }

    /// Stores a finished step in its slot; says whether it is the one the consumer needs.
    fn store(&mut self, seq: u64, finished: Finished) -> bool {
        let slot = (seq - self.delivered) as usize;
        if let Some(s) = self.results.get_mut(slot) {
            *s = Some(finished);
        }
        slot == 0
    }
}

struct Shared {
    ctx: Arc<Context>,
    queue: Mutex<Queue>,
    /// Signalled when a worker may take a step (the window moved, or stop).
    work: Condvar,
    /// Signalled when the consumer may proceed (its step is read, the end is known, stop).
    done: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Blocks until a step may be read; `None` when the worker should exit.
    fn next_job(&self) -> Option<(u64, Step)> {
        let mut q = self.lock();
        loop {
            if q.stop {
                return None;
            }
            match q.assign(&self.ctx.sequencer) {
                Assigned::Step(seq, step) => return Some((seq, step)),
                Assigned::Exhausted => {
                    self.done.notify_all();
                    return None;
                }
                Assigned::Full => {
                    q.idle_workers += 1;
                    q = self.work.wait(q).unwrap_or_else(PoisonError::into_inner);
                    q.idle_workers -= 1;
                }
            }
        }
    }

    fn finish(&self, seq: u64, finished: Finished) {
        let mut q = self.lock();
        if q.stop {
            drop(q);
            finished.recycle();
            return;
        }
        if q.store(seq, finished) && q.consumer_waiting {
            self.done.notify_one();
        }
    }
}

/// Marks a worker gone when its thread ends, whichever way it ends, so that the consumer
/// never waits for a worker that no longer exists.
struct LiveGuard<'a>(&'a Shared);

impl Drop for LiveGuard<'_> {
    fn drop(&mut self) {
        let mut q = self.0.lock();
        q.live_workers = q.live_workers.saturating_sub(1);
        if std::thread::panicking() {
            q.crashed = true;
        }
        self.0.done.notify_all();
    }
}

fn worker(shared: Arc<Shared>, reader: usize) {
    let _live = LiveGuard(&shared);
    let mut scratch = Scratch::new(reader);
    while let Some((seq, step)) = shared.next_job() {
        let finished = shared.ctx.run(step, &mut scratch);
        shared.finish(seq, finished);
    }
}

/// Worker threads reading steps ahead of the consumer, delivered in schedule order.
pub(crate) struct Workers {
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
    /// The consumer's own buffers, when it reads steps itself while its next batch is not
    /// ready (instead of sleeping until a worker wakes it).
    helper: Option<Scratch>,
}

impl Workers {
    /// Starts `count` workers that read at most `window` steps ahead, from `start` on.
    pub(crate) fn start(
        ctx: Arc<Context>,
        count: usize,
        window: usize,
        start: Cursor,
        consumer_helps: bool,
    ) -> Result<Self> {
        let skip = ctx.sequencer.interleave.first;
        let shared = Arc::new(Shared {
            ctx,
            queue: Mutex::new(Queue {
                next: Some(start),
                skip,
                assigned: 0,
                delivered: 0,
                window: window as u64,
                results: VecDeque::with_capacity(window),
                end: None,
                stop: false,
                live_workers: count,
                crashed: false,
                idle_workers: 0,
                consumer_waiting: false,
            }),
            work: Condvar::new(),
            done: Condvar::new(),
        });
        // Readers 0..count are the workers; the consumer is reader `count`.
        let helper = consumer_helps.then(|| Scratch::new(count));
        let mut workers = Workers { shared, threads: Vec::with_capacity(count), helper };
        for k in 0..count {
            let shared = workers.shared.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("reel-loader-{k}"))
                .spawn(move || worker(shared, k));
            match spawned {
                Ok(handle) => workers.threads.push(handle),
                Err(e) => {
                    // Dropping `workers` stops and joins the threads already started.
                    workers.shared.lock().live_workers -= count - k;
                    return Err(Error::io(e, "cannot start a loader worker thread"));
                }
            }
        }
        Ok(workers)
    }

    /// The next step in schedule order, waiting for it if needed; `None` at the end.
    pub(crate) fn next(&mut self) -> Option<Result<Finished>> {
        let shared = &*self.shared;
        let mut q = shared.lock();
        loop {
            if q.results.front().is_some_and(Option::is_some) {
                let finished = q.results.pop_front().flatten();
                q.delivered += 1;
                let wake = q.idle_workers > 0;
                drop(q);
                if wake {
                    shared.work.notify_one();
                }
                return finished.map(Ok);
            }
            if q.end == Some(q.delivered) {
                return None;
            }
            if q.crashed || q.live_workers == 0 {
                // Cannot happen unless a worker thread died outside the code that catches
                // panics; reported instead of waiting forever.
                q.end = Some(q.delivered);
                return Some(Err(Error::new(
                    ErrorKind::Io,
                    "the loader's worker threads stopped before the schedule was read",
                )));
            }
            if let Some(scratch) = self.helper.as_mut() {
                if let Assigned::Step(seq, step) = q.assign(&shared.ctx.sequencer) {
                    drop(q);
                    let finished = shared.ctx.run(step, scratch);
                    q = shared.lock();
                    q.store(seq, finished);
                    continue;
                }
            }
            q.consumer_waiting = true;
            q = shared.done.wait(q).unwrap_or_else(PoisonError::into_inner);
            q.consumer_waiting = false;
        }
    }
}

impl Drop for Workers {
    fn drop(&mut self) {
        {
            let mut q = self.shared.lock();
            q.stop = true;
            for finished in q.results.drain(..).flatten() {
                finished.recycle();
            }
        }
        self.shared.work.notify_all();
        self.shared.done.notify_all();
        for handle in self.threads.drain(..) {
            // A worker cannot panic outside its catch_unwind; if one did, there is nothing
            // left to clean up.
            let _ = handle.join();
        }
    }
}
