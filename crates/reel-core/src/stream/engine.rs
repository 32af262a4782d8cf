//! The read-ahead engine: jobs handed out in plan order to helper threads (and, when it
//! would otherwise wait, the consumer), read into pooled buffers, and delivered in order.
//!
//! [`BatchStream`](super::BatchStream) is this engine over index plans; reel-loader runs
//! its steps (schedule positions, map functions) through it with its own [`StreamWork`].

use std::any::Any;
use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;

use crate::io::cancel::CancelFlag;
use crate::pool::{BatchPool, PooledBatch};
use crate::{Error, ErrorKind, RecordBatch, Result};

/// What a [`ReadAhead`] reads: a plan that hands out jobs one at a time, and how one reader
/// turns a job into a batch.
///
/// The plan runs under the engine's lock, one call at a time, on whichever thread claims
/// the next job; [`read`](Self::read) runs on that thread without the lock, concurrently
/// with other readers. Panics in either are caught and delivered as the job's error.
pub trait StreamWork: Send + Sync + 'static {
    /// The plan's state, advanced by [`plan`](Self::plan).
    type Plan: Send + 'static;
    /// One reader's reusable state: the job it was handed and its scratch buffers. Every
    /// thread that reads (each helper, and the consumer) has its own.
    type Reader: Send + 'static;
    /// What a delivered batch carries besides its records (the loader's step; `()` for a
    /// plain index plan).
    type Tag: Send + 'static;

    /// The state of reader number `number` (helpers are `0..threads`, the consumer is
    /// `threads`).
    fn reader(&self, number: usize) -> Self::Reader;

    /// Sets `reader` up for the next job and returns its tag; `None` when the plan is
    /// exhausted.
    fn plan(&self, plan: &mut Self::Plan, reader: &mut Self::Reader) -> Option<Self::Tag>;

    /// Reads the job `reader` was set up for into `out` (a cleared buffer from the pool).
    fn read(&self, reader: &mut Self::Reader, out: &mut RecordBatch) -> Result<()>;
}

/// When the consumer reads a job itself instead of waiting for a helper.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ConsumerReads {
    /// The batch it asks for when no helper has started on it (a helper would only start
    /// it after being woken): no read happens later than it would have.
    #[default]
    OwnBatch,
    /// Also any later batch within the window while its own is being read: it works as
    /// one more reader exactly when it would otherwise idle.
    WhileWaiting,
    /// Never while helper threads exist: reads run on the helpers only.
    Never,
}

/// How a [`ReadAhead`] runs.
#[derive(Clone, Debug)]
pub struct EngineOptions {
    /// Jobs claimed ahead of the consumer (being read or waiting), at least 1.
    pub window: usize,
    /// Bytes of finished batches waiting beyond which no further job is started; the job
    /// the consumer waits for is always read.
    pub max_ahead_bytes: u64,
    /// Helper threads; 0 reads every job on the consumer's thread.
    pub threads: usize,
    /// When the consumer reads (with helper threads).
    pub consumer_reads: ConsumerReads,
    /// The helper threads' name, followed by their number.
    pub thread_name: &'static str,
}

/// One job's outcome, in plan order.
#[derive(Debug)]
pub struct Delivered<T> {
    /// The job's number in the plan, counted from 0.
    pub seq: u64,
    /// The job's tag; `None` only when the plan itself failed (panicked) making the job.
    pub tag: Option<T>,
    /// The batch, or the error that stopped it.
    pub result: Result<PooledBatch>,
}

/// Jobs read ahead of the consumer on helper threads and delivered in plan order; see the
/// [module documentation](crate::stream).
///
/// Dropping it stops the helpers, cancels the reads they are doing (backends stop starting
/// I/O for them: [`crate::io::cancel`]) and waits for the I/O already in flight to end, so
/// that no backend still writes into a buffer afterwards.
pub struct ReadAhead<W: StreamWork> {
    shared: Arc<Shared<W>>,
    threads: Vec<JoinHandle<()>>,
    /// The consumer's reader state, for the jobs it reads itself.
    reader: W::Reader,
    /// The consumer's reader number (after the helpers').
    number: usize,
}

struct Shared<W: StreamWork> {
    work: W,
    state: Mutex<State<W>>,
    /// Signalled when a helper may start a job (the window moved, or stop).
    wake_helpers: Condvar,
    /// Signalled when the consumer may go on (its batch is read, the end is known, a
    /// helper is gone).
    wake_consumer: Condvar,
    pool: Arc<BatchPool>,
    window: u64,
    max_ahead_bytes: u64,
    threads: usize,
    consumer_reads: ConsumerReads,
    /// Raised when the engine is dropped: the helpers' reads stop starting I/O
    /// ([`crate::io::cancel`]) and return once their reads in flight have ended.
    cancel: CancelFlag,
}

struct State<W: StreamWork> {
    plan: W::Plan,
    /// Jobs handed out so far (the number of the next one).
    assigned: u64,
    /// Jobs delivered to the consumer so far.
    delivered: u64,
    /// Slot `k` holds job `delivered + k` once it is read.
    results: VecDeque<Option<Finished<W::Tag>>>,
    /// Bytes of read batches waiting in `results`.
    ready_bytes: u64,
    /// The number of jobs, once the plan is exhausted.
    end: Option<u64>,
    stop: bool,
    live_helpers: usize,
    /// Helpers asleep because the window is full, and whether the consumer is asleep:
    /// wake-ups (system calls, and on virtual machines costly cross-CPU interrupts) are
    /// only sent to someone who waits.
    idle_helpers: usize,
    consumer_waiting: bool,
}

struct Finished<T> {
    tag: Option<T>,
    result: Result<PooledBatch>,
}

/// What [`Shared::claim`] found.
enum Claim<T> {
    /// Job `.0` is to be read; the claimer's reader is set up for it.
    Read(u64, T),
    /// The plan panicked while making job `.0`: it fails and is the last.
    Failed(u64, Error),
    /// The plan is exhausted.
    End,
    /// Wait for the consumer.
    Wait,
}

impl<W: StreamWork> Shared<W> {
    fn lock(&self) -> MutexGuard<'_, State<W>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether another job may start now: within the window, and (unless the consumer
    /// waits for it) within the byte budget.
    fn may_start(&self, st: &State<W>) -> bool {
        let ahead = st.assigned - st.delivered;
        ahead == 0 || (ahead < self.window && st.ready_bytes < self.max_ahead_bytes)
    }

    /// Hands out the next job to `reader` if `may` allows it.
    fn claim(&self, st: &mut State<W>, reader: &mut W::Reader, may: bool) -> Claim<W::Tag> {
        if st.end.is_some() {
            return Claim::End;
        }
        if !may {
            return Claim::Wait;
        }
        let next = catch_unwind(AssertUnwindSafe(|| self.work.plan(&mut st.plan, reader)));
        let seq = st.assigned;
        let claim = match next {
            Ok(None) => {
                st.end = Some(seq);
                return Claim::End;
            }
            Ok(Some(tag)) => Claim::Read(seq, tag),
            Err(panic) => {
                st.end = Some(seq + 1);
                Claim::Failed(seq, panic_error(panic, "the batch plan's function"))
            }
        };
        st.assigned += 1;
        st.results.push_back(None);
        claim
    }

    /// Reads one job into a pooled buffer. A panic becomes the job's error.
    fn read(&self, reader: &mut W::Reader, number: usize) -> Result<PooledBatch> {
        let mut batch = self.pool.take(number);
        let read = || self.cancel.scope(|| self.work.read(reader, &mut batch));
        match catch_unwind(AssertUnwindSafe(read)) {
            Ok(Ok(())) => Ok(batch),
            Ok(Err(e)) => Err(e),
            Err(panic) => Err(panic_error(panic, "a stream's reader")),
        }
    }

    /// Stores job `seq`'s outcome for the consumer (or lets its buffer go back to the pool
    /// after a stop).
    fn store(&self, st: &mut State<W>, seq: u64, finished: Finished<W::Tag>) {
        if st.stop {
            return;
        }
        let slot = (seq - st.delivered) as usize;
        if let Ok(batch) = &finished.result {
            st.ready_bytes += batch.buffer_len() as u64;
        }
        if let Some(s) = st.results.get_mut(slot) {
            *s = Some(finished);
        }
        if slot == 0 && st.consumer_waiting {
            self.wake_consumer.notify_one();
        }
    }
}

/// An error for a panic caught in `who` (a source, a plan, a map function), so that it
/// reaches the consumer as the error of the batch it broke instead of ending a thread.
pub fn panic_error(payload: Box<dyn Any + Send>, who: &str) -> Error {
    let message = panic_message(&*payload);
    Error::new(ErrorKind::InvalidInput, format!("{who} panicked while making a batch: {message}"))
}

/// The message a panic was raised with (`panic!` with a literal or a formatted string), for
/// an error that reports a panic caught on another thread.
pub fn panic_message(payload: &(dyn Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "no message".to_string())
}

/// Marks a helper gone when its thread ends, whichever way, so the consumer never waits for
/// a helper that no longer exists.
struct LiveGuard<'a, W: StreamWork>(&'a Shared<W>);

impl<W: StreamWork> Drop for LiveGuard<'_, W> {
    fn drop(&mut self) {
        let mut st = self.0.lock();
        st.live_helpers = st.live_helpers.saturating_sub(1);
        drop(st);
        self.0.wake_consumer.notify_all();
    }
}

fn helper<W: StreamWork>(shared: Arc<Shared<W>>, number: usize) {
    let _live = LiveGuard(&*shared);
    let mut reader = shared.work.reader(number);
    let mut st = shared.lock();
    loop {
        if st.stop {
            return;
        }
        let may = shared.may_start(&st);
        match shared.claim(&mut st, &mut reader, may) {
            Claim::Read(seq, tag) => {
                drop(st);
                let result = shared.read(&mut reader, number);
                st = shared.lock();
                shared.store(&mut st, seq, Finished { tag: Some(tag), result });
            }
            Claim::Failed(seq, e) => {
                shared.store(&mut st, seq, Finished { tag: None, result: Err(e) })
            }
            Claim::End => {
                shared.wake_consumer.notify_all();
                return;
            }
            Claim::Wait => {
                st.idle_helpers += 1;
                st = shared.wake_helpers.wait(st).unwrap_or_else(PoisonError::into_inner);
                st.idle_helpers -= 1;
            }
        }
    }
}

impl<W: StreamWork> ReadAhead<W> {
    /// Starts reading `plan`'s jobs with `work` as `options` say.
    ///
    /// Fails only if a helper thread cannot be started.
    pub fn new(work: W, plan: W::Plan, options: &EngineOptions) -> Result<Self> {
        let threads = options.threads;
        let window = options.window.max(1);
        // Buffers in use at once: every job of the window, one per helper being filled,
        // and the one the consumer holds.
        let capacity = window.saturating_add(threads).saturating_add(1);
        let number = threads;
        let reader = work.reader(number);
        let shared = Arc::new(Shared {
            work,
            state: Mutex::new(State {
                plan,
                assigned: 0,
                delivered: 0,
                // Grows with what is actually read ahead: a window far beyond the jobs
                // the plan has must not be reserved up front.
                results: VecDeque::new(),
                ready_bytes: 0,
                end: None,
                stop: false,
                live_helpers: threads,
                idle_helpers: 0,
                consumer_waiting: false,
            }),
            wake_helpers: Condvar::new(),
            wake_consumer: Condvar::new(),
            pool: Arc::new(BatchPool::new(threads + 1, capacity)),
            window: window as u64,
            max_ahead_bytes: options.max_ahead_bytes,
            threads,
            consumer_reads: options.consumer_reads,
            cancel: CancelFlag::new(),
        });
        let mut engine = ReadAhead { shared, threads: Vec::with_capacity(threads), reader, number };
        for k in 0..threads {
            let shared = engine.shared.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("{}-{k}", options.thread_name))
                .spawn(move || helper(shared, k));
            match spawned {
                Ok(handle) => engine.threads.push(handle),
                Err(e) => {
                    // Dropping the engine stops and joins the helpers already started.
                    engine.shared.lock().live_helpers -= threads - k;
                    return Err(Error::io(e, "cannot start a read-ahead thread"));
                }
            }
        }
        Ok(engine)
    }

    /// What the engine reads with.
    pub fn work(&self) -> &W {
        &self.shared.work
    }

    /// Batches read and waiting for the consumer right now.
    pub fn ready(&self) -> usize {
        self.shared.lock().results.iter().take_while(|r| r.is_some()).count()
    }

    /// Jobs claimed ahead of the consumer right now (being read or waiting).
    pub fn ahead(&self) -> u64 {
        let st = self.shared.lock();
        st.assigned - st.delivered
    }

    /// Jobs delivered so far.
    pub fn delivered(&self) -> u64 {
        self.shared.lock().delivered
    }

    /// Whether the consumer reads the next job itself now rather than wait.
    fn consumer_may(&self, st: &State<W>) -> bool {
        let shared = &*self.shared;
        if shared.threads == 0 || st.assigned == st.delivered {
            // Nobody reads the batch the consumer needs (inline, or no helper has started
            // on it): read it here rather than wait — unless told never to.
            return shared.threads == 0 || shared.consumer_reads != ConsumerReads::Never;
        }
        shared.consumer_reads == ConsumerReads::WhileWaiting && shared.may_start(st)
    }

    /// The next job's outcome in plan order, waiting for it if needed; `None` at the end.
    pub fn next_delivered(&mut self) -> Option<Delivered<W::Tag>> {
        let shared = &*self.shared;
        let mut st = shared.lock();
        loop {
            if st.results.front().is_some_and(Option::is_some) {
                let Finished { tag, result } = st.results.pop_front().flatten()?;
                if let Ok(batch) = &result {
                    st.ready_bytes -= batch.buffer_len() as u64;
                }
                let seq = st.delivered;
                st.delivered += 1;
                let wake = st.idle_helpers > 0;
                drop(st);
                if wake {
                    shared.wake_helpers.notify_one();
                }
                return Some(Delivered { seq, tag, result });
            }
            if st.end == Some(st.delivered) {
                return None;
            }
            if st.end.is_none() && self.consumer_may(&st) {
                match shared.claim(&mut st, &mut self.reader, true) {
                    Claim::Read(seq, tag) => {
                        drop(st);
                        let result = shared.read(&mut self.reader, self.number);
                        st = shared.lock();
                        shared.store(&mut st, seq, Finished { tag: Some(tag), result });
                        continue;
                    }
                    Claim::Failed(seq, e) => {
                        shared.store(&mut st, seq, Finished { tag: None, result: Err(e) });
                        continue;
                    }
                    Claim::End => continue,
                    Claim::Wait => {}
                }
            }
            if st.live_helpers == 0 {
                // Cannot happen: helpers catch panics in the plan and the reads alike. Kept
                // so that a helper ending any other way is reported instead of the consumer
                // waiting forever.
                st.end = Some(st.delivered);
                return Some(Delivered {
                    seq: st.delivered,
                    tag: None,
                    result: Err(Error::new(
                        ErrorKind::Io,
                        "the stream's read-ahead threads stopped before the plan was read",
                    )),
                });
            }
            st.consumer_waiting = true;
            st = shared.wake_consumer.wait(st).unwrap_or_else(PoisonError::into_inner);
            st.consumer_waiting = false;
        }
    }
}

impl<W: StreamWork> Drop for ReadAhead<W> {
    fn drop(&mut self) {
        // The reads the helpers are doing stop at their next submission.
        self.shared.cancel.cancel();
        let waiting: Vec<_> = {
            let mut st = self.shared.lock();
            st.stop = true;
            st.results.drain(..).collect()
        };
        // Outside the lock: their buffers go back to the pool.
        drop(waiting);
        self.shared.wake_helpers.notify_all();
        self.shared.wake_consumer.notify_all();
        for handle in self.threads.drain(..) {
            // Joining waits for the read a helper is doing to end (cancelled above, so
            // only the I/O already in flight is waited for), so the backend has let go
            // of its buffer. Panics in the plan and the reads are caught inside the
            // helper, so a join error is not expected and leaves nothing to clean up.
            let _ = handle.join();
        }
    }
}

impl<W: StreamWork> std::fmt::Debug for ReadAhead<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let st = self.shared.lock();
        f.debug_struct("ReadAhead")
            .field("delivered", &st.delivered)
            .field("assigned", &st.assigned)
            .field("threads", &self.threads.len())
            .finish()
    }
}
