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

use std::any::Any;
use std::collections::VecDeque;
use std::ops::{Deref, Range};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, Weak};
use std::thread::JoinHandle;

use crate::{Error, ErrorKind, RecordBatch, RecordSource, Result};

/// The batches a stream reads, in order: each call fills the next batch's indices.
///
/// Built from one index sequence cut into batches ([`chunks`](Self::chunks),
/// [`sequential`](Self::sequential)), from any iterator of index slices
/// ([`from_batches`](Self::from_batches)), or from a function ([`from_fn`](Self::from_fn)).
pub struct BatchPlan {
    next: Box<NextBatchFn>,
}

/// Fills the next batch's indices; `false` when there are none.
type NextBatchFn = dyn FnMut(&mut Vec<u64>) -> bool + Send;

impl BatchPlan {
    /// A plan from a function that fills `out` (cleared beforehand) with the next batch's
    /// indices and returns `true`, or returns `false` when there are no more batches. The
    /// function runs on whichever thread reads the batch, one call at a time.
    pub fn from_fn(next: impl FnMut(&mut Vec<u64>) -> bool + Send + 'static) -> Self {
        BatchPlan { next: Box::new(next) }
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
    }

    /// One batch per item of `batches`, each an index slice (`Vec<u64>`, `&'static [u64]`,
    /// `[u64; N]`, …).
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
}

impl Default for StreamOptions {
    /// Two batches ahead on one helper thread, at most 256 MiB waiting.
    fn default() -> Self {
        StreamOptions { read_ahead: 2, max_ahead_bytes: 256 << 20, threads: 1 }
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
}

/// Batches read ahead of the consumer and handed out in plan order; see the
/// [module documentation](self).
///
/// The `n`-th item is the `n`-th batch of the plan: its records, or the error that stopped
/// it (with the record it belongs to, as [`RecordSource::read_batch_into`] reports it).
/// After an error the stream goes on with the next batch; stop iterating to stop reading.
///
/// Dropping the stream stops the helper threads and waits for the reads they are doing to
/// end, so that no backend still writes into a buffer after the stream is gone.
pub struct BatchStream {
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
    /// The consumer's buffer of batch indices, when it reads a batch itself.
    indices: Vec<u64>,
}

/// One batch of a [`BatchStream`]. It dereferences to the [`RecordBatch`]; dropping it gives
/// the buffer back to the stream to be filled again.
pub struct StreamBatch {
    batch: RecordBatch,
    seq: u64,
    home: Weak<Shared>,
}

impl StreamBatch {
    /// The batch's number in the plan, counted from 0.
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// Takes the records out; the buffer then does not return to the stream.
    pub fn into_inner(mut self) -> RecordBatch {
        self.home = Weak::new();
        std::mem::take(&mut self.batch)
    }
}

impl Deref for StreamBatch {
    type Target = RecordBatch;

    fn deref(&self) -> &RecordBatch {
        &self.batch
    }
}

impl Drop for StreamBatch {
    fn drop(&mut self) {
        if let Some(shared) = self.home.upgrade() {
            shared.give(std::mem::take(&mut self.batch));
        }
    }
}

impl std::fmt::Debug for StreamBatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamBatch").field("seq", &self.seq).field("batch", &self.batch).finish()
    }
}

/// What the consumer and the helper threads share.
struct Shared {
    source: Arc<dyn RecordSource>,
    state: Mutex<State>,
    /// Signalled when a helper may start a batch (the window moved, or stop).
    work: Condvar,
    /// Signalled when the consumer may go on (its batch is read, the end is known, a helper
    /// is gone).
    done: Condvar,
    /// Cleared buffers waiting to be filled again.
    free: Mutex<Vec<RecordBatch>>,
    spare_buffers: usize,
    read_ahead: u64,
    max_ahead_bytes: u64,
}

struct State {
    plan: BatchPlan,
    /// Batches handed out so far (the number of the next one).
    assigned: u64,
    /// Batches delivered to the consumer so far.
    delivered: u64,
    /// Slot `k` holds batch `delivered + k` once it is read.
    results: VecDeque<Option<Result<RecordBatch>>>,
    /// Bytes of read batches waiting in `results`.
    ready_bytes: u64,
    /// The number of batches, once the plan is exhausted.
    end: Option<u64>,
    stop: bool,
    live_helpers: usize,
    idle_helpers: usize,
    consumer_waiting: bool,
}

/// What [`State::claim`] found.
enum Claim {
    /// Batch `.0` is to be read; its indices are in the claimer's buffer.
    Read(u64),
    /// The plan's function panicked while making batch `.0`: it fails and is the last.
    Failed(u64, Error),
    /// The plan is exhausted.
    End,
    /// Wait for the consumer.
    Wait,
}

impl State {
    /// Hands out the next batch into `indices` if `may` allows it.
    fn claim(&mut self, indices: &mut Vec<u64>, may: bool) -> Claim {
        if self.end.is_some() {
            return Claim::End;
        }
        if !may {
            return Claim::Wait;
        }
        let more = catch_unwind(AssertUnwindSafe(|| self.plan.fill(indices)));
        let seq = self.assigned;
        match more {
            Ok(false) => {
                self.end = Some(seq);
                return Claim::End;
            }
            Ok(true) => {}
            Err(panic) => {
                self.end = Some(seq + 1);
                self.assigned += 1;
                self.results.push_back(None);
                return Claim::Failed(seq, panicked(panic, "the batch plan's function"));
            }
        }
        self.assigned += 1;
        self.results.push_back(None);
        Claim::Read(seq)
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether a helper may start another batch now: within the window, and (unless the
    /// consumer waits for it) within the byte budget.
    fn helper_may(&self, st: &State) -> bool {
        let ahead = st.assigned - st.delivered;
        ahead == 0 || (ahead < self.read_ahead.max(1) && st.ready_bytes < self.max_ahead_bytes)
    }

    fn take(&self) -> RecordBatch {
        self.free.lock().unwrap_or_else(PoisonError::into_inner).pop().unwrap_or_default()
    }

    fn give(&self, mut batch: RecordBatch) {
        batch.clear();
        let mut free = self.free.lock().unwrap_or_else(PoisonError::into_inner);
        if free.len() < self.spare_buffers {
            free.push(batch);
        }
    }

    /// Reads one batch into a pooled buffer. A panic in the source becomes the batch's error.
    fn read(&self, indices: &[u64]) -> Result<RecordBatch> {
        let mut batch = self.take();
        match catch_unwind(AssertUnwindSafe(|| self.source.read_batch_into(indices, &mut batch))) {
            Ok(Ok(())) => Ok(batch),
            Ok(Err(e)) => {
                self.give(batch);
                Err(e)
            }
            Err(panic) => {
                self.give(batch);
                Err(panicked(panic, "the source").with_format(self.source.info().format))
            }
        }
    }

    /// Stores batch `seq`'s result for the consumer (or recycles it after a stop).
    fn store(&self, st: &mut State, seq: u64, result: Result<RecordBatch>) {
        if st.stop {
            if let Ok(batch) = result {
                self.give(batch);
            }
            return;
        }
        let slot = (seq - st.delivered) as usize;
        if let Ok(batch) = &result {
            st.ready_bytes += batch.buffer_len() as u64;
        }
        if let Some(s) = st.results.get_mut(slot) {
            *s = Some(result);
        }
        if slot == 0 && st.consumer_waiting {
            self.done.notify_one();
        }
    }
}

/// An error for a panic caught in `who`, so it reaches the consumer with its batch.
fn panicked(payload: Box<dyn Any + Send>, who: &str) -> Error {
    let message = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "no message".to_string());
    Error::new(ErrorKind::InvalidInput, format!("{who} panicked while making a batch: {message}"))
}

/// Marks a helper gone when its thread ends, whichever way, so the consumer never waits for
/// a helper that no longer exists.
struct LiveGuard<'a>(&'a Shared);

impl Drop for LiveGuard<'_> {
    fn drop(&mut self) {
        let mut st = self.0.lock();
        st.live_helpers = st.live_helpers.saturating_sub(1);
        drop(st);
        self.0.done.notify_all();
    }
}

fn helper(shared: Arc<Shared>) {
    let _live = LiveGuard(&shared);
    let mut indices = Vec::new();
    let mut st = shared.lock();
    loop {
        if st.stop {
            return;
        }
        let may = shared.helper_may(&st);
        match st.claim(&mut indices, may) {
            Claim::Read(seq) => {
                drop(st);
                let result = shared.read(&indices);
                st = shared.lock();
                shared.store(&mut st, seq, result);
            }
            Claim::Failed(seq, e) => shared.store(&mut st, seq, Err(e)),
            Claim::End => {
                shared.done.notify_all();
                return;
            }
            Claim::Wait => {
                st.idle_helpers += 1;
                st = shared.work.wait(st).unwrap_or_else(PoisonError::into_inner);
                st.idle_helpers -= 1;
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
        let window = options.read_ahead.max(1);
        let shared = Arc::new(Shared {
            source,
            state: Mutex::new(State {
                plan,
                assigned: 0,
                delivered: 0,
                results: VecDeque::with_capacity(window + 1),
                ready_bytes: 0,
                end: None,
                stop: false,
                live_helpers: threads,
                idle_helpers: 0,
                consumer_waiting: false,
            }),
            work: Condvar::new(),
            done: Condvar::new(),
            // Every batch of the window, one per helper being filled, and the one the
            // consumer holds.
            spare_buffers: window + threads + 1,
            free: Mutex::new(Vec::with_capacity(window + threads + 1)),
            read_ahead: options.read_ahead as u64,
            max_ahead_bytes: options.max_ahead_bytes,
        });
        let mut stream =
            BatchStream { shared, threads: Vec::with_capacity(threads), indices: Vec::new() };
        for k in 0..threads {
            let shared = stream.shared.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("reel-stream-{k}"))
                .spawn(move || helper(shared));
            match spawned {
                Ok(handle) => stream.threads.push(handle),
                Err(e) => {
                    // Dropping the stream stops and joins the helpers already started.
                    stream.shared.lock().live_helpers -= threads - k;
                    return Err(Error::io(e, "cannot start a read-ahead thread"));
                }
            }
        }
        Ok(stream)
    }

    /// The source read from.
    pub fn source(&self) -> &Arc<dyn RecordSource> {
        &self.shared.source
    }

    fn deliver(
        &self,
        st: &mut State,
        seq: u64,
        result: Result<RecordBatch>,
    ) -> Result<StreamBatch> {
        st.delivered += 1;
        if st.idle_helpers > 0 {
            self.shared.work.notify_one();
        }
        result.map(|batch| StreamBatch { batch, seq, home: Arc::downgrade(&self.shared) })
    }
}

impl Iterator for BatchStream {
    type Item = Result<StreamBatch>;

    fn next(&mut self) -> Option<Result<StreamBatch>> {
        let shared = &*self.shared;
        let mut st = shared.lock();
        loop {
            if st.results.front().is_some_and(Option::is_some) {
                let result = st.results.pop_front().flatten()?;
                if let Ok(batch) = &result {
                    st.ready_bytes -= batch.buffer_len() as u64;
                }
                let seq = st.delivered;
                return Some(self.deliver(&mut st, seq, result));
            }
            if st.end == Some(st.delivered) {
                return None;
            }
            if st.assigned == st.delivered {
                // Nobody reads the batch the consumer needs: read it here rather than wait.
                match st.claim(&mut self.indices, true) {
                    Claim::Read(seq) => {
                        drop(st);
                        let result = shared.read(&self.indices);
                        st = shared.lock();
                        st.results.pop_front();
                        return Some(self.deliver(&mut st, seq, result));
                    }
                    Claim::Failed(seq, e) => {
                        st.results.pop_front();
                        return Some(self.deliver(&mut st, seq, Err(e)));
                    }
                    Claim::End => return None,
                    Claim::Wait => {}
                }
            } else if st.live_helpers == 0 {
                // Cannot happen: helpers catch panics in the source and in the plan alike.
                // Kept so that a helper ending any other way is reported instead of the
                // consumer waiting forever.
                st.end = Some(st.delivered);
                return Some(Err(Error::new(
                    ErrorKind::Io,
                    "the stream's read-ahead threads stopped before the plan was read",
                )));
            }
            st.consumer_waiting = true;
            st = shared.done.wait(st).unwrap_or_else(PoisonError::into_inner);
            st.consumer_waiting = false;
        }
    }
}

impl Drop for BatchStream {
    fn drop(&mut self) {
        {
            let mut st = self.shared.lock();
            st.stop = true;
            let waiting: Vec<_> = st.results.drain(..).flatten().collect();
            drop(st);
            for batch in waiting.into_iter().flatten() {
                self.shared.give(batch);
            }
        }
        self.shared.work.notify_all();
        self.shared.done.notify_all();
        for handle in self.threads.drain(..) {
            // Joining waits for the read a helper is doing to end, so the backend has let
            // go of its buffer. Panics in the source and the plan are caught inside the
            // helper, so a join error is not expected and leaves nothing to clean up.
            let _ = handle.join();
        }
    }
}

impl std::fmt::Debug for BatchStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let st = self.shared.lock();
        f.debug_struct("BatchStream")
            .field("delivered", &st.delivered)
            .field("assigned", &st.assigned)
            .field("threads", &self.threads.len())
            .finish()
    }
}
