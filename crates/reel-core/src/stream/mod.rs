//! Streaming batch reads: the next batches are read while the consumer works on this one.
//!
//! Training reads batch after batch. Reading each batch only when it is asked for leaves the
//! device idle while the consumer works and the consumer idle while the device works.
//! [`BatchStream`] reads a bounded number of batches ahead (in batches and in bytes) on
//! helper threads, hands them out in order, and recycles their buffers, so that a consumer
//! that drops each batch before asking for the next allocates nothing in its steady state.
//!
//! It reads through [`RecordSource::read_batch_into`], so every format and every backend
//! gets read-ahead without knowing about it: a backend whose
//! [`read_many`](crate::ReadAt::read_many) issues its requests concurrently (io_uring,
//! object storage) has the next batches' requests in flight while the consumer decodes,
//! and a synchronous one (pread) has its system calls made off the consumer's thread.
//!
//! ```
//! use std::sync::Arc;
//! use reel_core::stream::{BatchPlan, BatchStream, StreamOptions};
//! # fn demo(source: Arc<dyn reel_core::RecordSource>) -> reel_core::Result<()> {
//! let order: Vec<u64> = (0..source.len()).rev().collect();
//! let stream = BatchStream::new(source, BatchPlan::chunks(order, 256), &StreamOptions::default())?;
//! for batch in stream {
//!     let batch = batch?; // an error belongs to this batch; later batches may still read
//!     for record in batch.iter() {
//!         let _ = record.index();
//!     }
//! } // dropping the batch gives its buffer back to the stream
//! # Ok(()) }
//! ```

mod engine;
mod whole;

use std::ops::{Deref, Range};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

pub use engine::{
    ConsumerReads, Delivered, EngineOptions, ReadAhead, StreamWork, panic_error, panic_message,
};

pub use whole::{PassRecords, WholePass};

use crate::pool::PooledBatch;
use crate::{RecordBatch, RecordSource, Result};

/// The batches a stream reads, in order: each call fills the next batch's indices.
///
/// Built from one index sequence cut into batches ([`chunks`](Self::chunks),
/// [`sequential`](Self::sequential)), from any iterator of index slices
/// ([`from_batches`](Self::from_batches)), or from a function ([`from_fn`](Self::from_fn)).
pub struct BatchPlan {
    next: Box<NextBatchFn>,
    /// Indices each reader makes room for up front.
    batch_size_hint: usize,
}

/// Fills the next batch's indices; `false` when there are none.
type NextBatchFn = dyn FnMut(&mut Vec<u64>) -> bool + Send;

impl BatchPlan {
    /// A plan from a function that fills `out` (cleared beforehand) with the next batch's
    /// indices and returns `true`, or returns `false` when there are no more batches. The
    /// function runs on whichever thread reads the batch, one call at a time.
    ///
    /// It runs while the stream's scheduler is locked (that is what keeps the calls one at
    /// a time and the batches in plan order), so it must return promptly and must never
    /// wait for the stream's consumer: a function that blocks until the consumer has taken
    /// a batch (indices from a channel the consumer feeds) deadlocks the stream, since the
    /// consumer cannot take a batch meanwhile. Work out what to read next before handing
    /// the indices over, or read batch by batch without a stream.
    pub fn from_fn(next: impl FnMut(&mut Vec<u64>) -> bool + Send + 'static) -> Self {
        BatchPlan { next: Box::new(next), batch_size_hint: 0 }
    }

    /// Makes every reader of the stream reserve room for batches of `size` indices when it
    /// starts, so that the first batch a reader takes (the consumer may read one of its own
    /// at any time) costs no allocation. [`chunks`](Self::chunks) and
    /// [`sequential`](Self::sequential) set it to their batch size.
    pub fn batch_size_hint(mut self, size: usize) -> Self {
        self.batch_size_hint = size;
        self
    }

    /// `indices` cut into consecutive batches of `size` (the last may be shorter; a size of
    /// 0 counts as 1). Nothing is allocated per batch.
    pub fn chunks(indices: Vec<u64>, size: usize) -> Self {
        let size = size.max(1);
        let mut at = 0usize;
        Self::from_fn(move |out| {
            let end = indices.len().min(at.saturating_add(size));
            let Some(part) = indices.get(at..end).filter(|p| !p.is_empty()) else {
                return false;
            };
            out.extend_from_slice(part);
            at = end;
            true
        })
        .batch_size_hint(size)
    }

    /// The records of `range` in order, in batches of `size` (a size of 0 counts as 1).
    pub fn sequential(range: Range<u64>, size: usize) -> Self {
        let size = size.max(1) as u64;
        let mut at = range.start;
        Self::from_fn(move |out| {
            if at >= range.end {
                return false;
            }
            let end = range.end.min(at.saturating_add(size));
            out.extend(at..end);
            at = end;
            true
        })
        .batch_size_hint(size as usize)
    }

    /// One batch per item of `batches`, each an index slice (`Vec<u64>`, `&'static [u64]`,
    /// `[u64; N]`, …). The iterator is advanced as [`from_fn`](Self::from_fn)'s function is
    /// called, and must not wait for the stream's consumer either.
    pub fn from_batches<I>(batches: I) -> Self
    where
        I: IntoIterator,
        I::IntoIter: Send + 'static,
        I::Item: AsRef<[u64]>,
    {
        let mut batches = batches.into_iter();
        Self::from_fn(move |out| match batches.next() {
            Some(b) => {
                out.extend_from_slice(b.as_ref());
                true
            }
            None => false,
        })
    }

    fn fill(&mut self, out: &mut Vec<u64>) -> bool {
        out.clear();
        (self.next)(out)
    }
}

impl std::fmt::Debug for BatchPlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BatchPlan")
    }
}

/// How far and on how many threads a [`BatchStream`] reads ahead.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamOptions {
    /// Batches read (or being read) ahead of the consumer. 0 reads each batch on the
    /// consumer's thread when it is asked for.
    pub read_ahead: usize,
    /// Bytes of finished batches waiting for the consumer beyond which no further batch is
    /// started. The batch the consumer waits for is always read, whatever its size.
    pub max_ahead_bytes: u64,
    /// Helper threads that read ahead. 0 reads on the consumer's thread only (then
    /// `read_ahead` has no effect).
    pub threads: usize,
    /// With one helper thread, tell the source the batch after the one being read
    /// ([`RecordSource::will_read`]), so that an asynchronous backend (io_uring with
    /// `O_DIRECT`) has its reads in flight while this batch's last reads complete and the
    /// device's queue does not drain between batches. On by default; off only to measure
    /// what it brings.
    pub hint_next: bool,
}

impl Default for StreamOptions {
    /// Two batches ahead on one helper thread, at most 256 MiB waiting, the next batch
    /// hinted.
    fn default() -> Self {
        StreamOptions { read_ahead: 2, max_ahead_bytes: 256 << 20, threads: 1, hint_next: true }
    }
}

impl StreamOptions {
    /// No helper thread and no read-ahead: each batch is read when it is asked for.
    pub fn inline() -> Self {
        StreamOptions { read_ahead: 0, threads: 0, ..Self::default() }
    }

    /// Sets [`read_ahead`](Self::read_ahead).
    pub fn read_ahead(mut self, batches: usize) -> Self {
        self.read_ahead = batches;
        self
    }

    /// Sets [`max_ahead_bytes`](Self::max_ahead_bytes).
    pub fn max_ahead_bytes(mut self, bytes: u64) -> Self {
        self.max_ahead_bytes = bytes;
        self
    }

    /// Sets [`threads`](Self::threads).
    pub fn threads(mut self, threads: usize) -> Self {
        self.threads = threads;
        self
    }

    /// Sets [`hint_next`](Self::hint_next).
    pub fn hint_next(mut self, on: bool) -> Self {
        self.hint_next = on;
        self
    }
}

/// Batches read ahead of the consumer and handed out in plan order; see the
/// [module documentation](self).
///
/// The `n`-th item is the `n`-th batch of the plan: its records, or the error that stopped
/// it (with the record it belongs to, as [`RecordSource::read_batch_into`] reports it).
/// After an error the stream goes on with the next batch; stop iterating to stop reading.
///
/// Dropping the stream stops the helper threads and cancels the batches they are reading:
/// the backends stop starting I/O for them ([`crate::io::cancel`]; the default
/// `read_many`, io_uring and object storage look between submissions), and the drop waits
/// only for the reads already in flight, so that no backend still writes into a buffer
/// after the stream is gone.
pub struct BatchStream {
    engine: ReadAhead<IndexWork>,
}

/// One batch of a [`BatchStream`]. It dereferences to the [`RecordBatch`]; dropping it gives
/// the buffer back to the stream to be filled again.
#[derive(Debug)]
pub struct StreamBatch {
    batch: PooledBatch,
    seq: u64,
}

impl StreamBatch {
    /// The batch's number in the plan, counted from 0.
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// Takes the records out; the buffer then does not return to the stream.
    pub fn into_inner(self) -> RecordBatch {
        self.batch.into_inner()
    }

    /// The pooled buffer (which returns to the stream when dropped).
    pub fn into_pooled(self) -> PooledBatch {
        self.batch
    }
}

impl Deref for StreamBatch {
    type Target = RecordBatch;

    fn deref(&self) -> &RecordBatch {
        &self.batch
    }
}

/// A [`BatchPlan`]'s batches read from a source: the work of a [`BatchStream`].
struct IndexWork {
    source: Arc<dyn RecordSource>,
    batch_size_hint: usize,
    /// Whether each read first tells the source the batch after it
    /// ([`RecordSource::will_read`]): when one helper thread reads every batch in turn, the
    /// next batch it reads is the one after, so an asynchronous backend can have that
    /// batch's reads in flight while this one's last reads complete.
    hint_next: bool,
}

/// The plan of a [`BatchStream`], looked one batch ahead when the stream hints.
struct LookaheadPlan {
    plan: BatchPlan,
    /// The next batch's indices, taken from the plan early (when `has_next`).
    next: Vec<u64>,
    has_next: bool,
    /// The plan said it has no more batches: it is not asked again (a function plan need
    /// not keep saying so).
    ended: bool,
    /// The plan panicked making the batch looked ahead at: the panic is raised again when
    /// that batch is planned, so it fails that batch as it would have without the look.
    broken: Option<Box<dyn std::any::Any + Send>>,
}

impl LookaheadPlan {
    /// Fills `out` with the plan's next batch; `false` once the plan has ended.
    fn fill(&mut self, out: &mut Vec<u64>) -> bool {
        fill_unless_ended(&mut self.plan, &mut self.ended, out)
    }

    /// Takes the batch after the one just planned into `next`. A panic of the plan is kept
    /// for the batch it was making (see `broken`).
    fn look_ahead(&mut self) {
        let LookaheadPlan { plan, next, has_next, ended, broken } = self;
        match catch_unwind(AssertUnwindSafe(|| fill_unless_ended(plan, ended, next))) {
            Ok(more) => *has_next = more,
            Err(panic) => (*has_next, *broken) = (false, Some(panic)),
        }
    }
}

/// [`BatchPlan::fill`], unless the plan has already said it ended (`ended`, set here).
fn fill_unless_ended(plan: &mut BatchPlan, ended: &mut bool, out: &mut Vec<u64>) -> bool {
    if *ended {
        out.clear();
        return false;
    }
    *ended = !plan.fill(out);
    !*ended
}

/// One reader's job: the batch it reads, and the one after it to hint (empty for none).
struct IndexJob {
    indices: Vec<u64>,
    after: Vec<u64>,
}

impl StreamWork for IndexWork {
    type Plan = LookaheadPlan;
    type Reader = IndexJob;
    type Tag = ();

    fn reader(&self, _number: usize) -> IndexJob {
        let after = if self.hint_next { self.batch_size_hint } else { 0 };
        IndexJob {
            indices: Vec::with_capacity(self.batch_size_hint),
            after: Vec::with_capacity(after),
        }
    }

    fn plan(&self, plan: &mut LookaheadPlan, job: &mut IndexJob) -> Option<()> {
        if let Some(panic) = plan.broken.take() {
            std::panic::resume_unwind(panic);
        }
        if plan.has_next {
            // The batch looked ahead at is this job's; the job's old buffer takes its place.
            std::mem::swap(&mut job.indices, &mut plan.next);
        } else if !plan.fill(&mut job.indices) {
            return None;
        }
        job.after.clear();
        plan.has_next = false;
        if self.hint_next {
            plan.look_ahead();
        }
        if plan.has_next {
            job.after.extend_from_slice(&plan.next);
        }
        Some(())
    }

    fn read(&self, job: &mut IndexJob, out: &mut RecordBatch) -> Result<()> {
        let source = &self.source;
        let read = || {
            if !job.after.is_empty() {
                source.will_read(&job.after);
            }
            source.read_batch_into(&job.indices, out)
        };
        match catch_unwind(AssertUnwindSafe(read)) {
            Ok(result) => result,
            Err(panic) => {
                out.clear();
                Err(panic_error(panic, "the source").with_format(source.info().format))
            }
        }
    }
}

impl BatchStream {
    /// Starts reading `plan`'s batches from `source` as `options` say.
    ///
    /// Fails only if a helper thread cannot be started.
    pub fn new(
        source: Arc<dyn RecordSource>,
        plan: BatchPlan,
        options: &StreamOptions,
    ) -> Result<Self> {
        let threads = if options.read_ahead == 0 { 0 } else { options.threads };
        let engine = EngineOptions {
            window: options.read_ahead.max(1),
            max_ahead_bytes: options.max_ahead_bytes,
            threads,
            consumer_reads: ConsumerReads::OwnBatch,
            thread_name: "reel-stream",
        };
        let work = IndexWork {
            source,
            batch_size_hint: plan.batch_size_hint,
            hint_next: threads == 1 && options.hint_next,
        };
        let plan =
            LookaheadPlan { plan, next: Vec::new(), has_next: false, ended: false, broken: None };
        Ok(BatchStream { engine: ReadAhead::new(work, plan, &engine)? })
    }

    /// The source read from.
    pub fn source(&self) -> &Arc<dyn RecordSource> {
        &self.engine.work().source
    }

    /// Batches read and waiting for the consumer right now.
    pub fn ready(&self) -> usize {
        self.engine.ready()
    }
}

impl Iterator for BatchStream {
    type Item = Result<StreamBatch>;

    fn next(&mut self) -> Option<Result<StreamBatch>> {
        let Delivered { seq, result, .. } = self.engine.next_delivered()?;
        Some(result.map(|batch| StreamBatch { batch, seq }))
    }
}

impl std::fmt::Debug for BatchStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BatchStream").field("engine", &self.engine).finish()
    }
}
