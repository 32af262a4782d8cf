//! The loader and its builder.

use std::sync::Arc;

use reel_core::stream::{ConsumerReads, Delivered, EngineOptions, ReadAhead};
use reel_core::{Error, RecordOut, RecordRef, RecordSource, Result};

use crate::batch::Batch;
use crate::map::{MapContext, MapFn};
use crate::pipeline::{StepPlan, StepWork};
use crate::schedule::{Cursor, Planner};
use crate::sequence::{IndexBatches, Interleave, Sequencer};
use crate::{LoaderState, Schedule, Shuffle};

/// How to build a [`Loader`]; start from [`Loader::builder`] or [`LoaderBuilder::new`].
///
/// Defaults: batch size 1, keep the last short batch, no shuffle, seed 0,
/// [`Schedule::Epochs`], one epoch, rank 0 of 1, one worker per CPU (at most 8), a
/// prefetch window of twice the worker count, and a consumer that does not read.
#[derive(Clone)]
pub struct LoaderBuilder {
    source: Arc<dyn RecordSource>,
    batch_size: usize,
    drop_last: bool,
    shuffle: Shuffle,
    seed: Option<u64>,
    schedule: Schedule,
    end_epoch: Option<u64>,
    rank: u64,
    world: u64,
    workers: Option<usize>,
    prefetch: Option<usize>,
    maps: Vec<MapFn>,
    resume: Option<LoaderState>,
    consumer_helps: bool,
    interleave: Interleave,
    zero_copy: bool,
}

impl LoaderBuilder {
    /// A builder over a source that is already shared (for example one `reel::open`
    /// returned, converted with `Arc::from`).
    pub fn new(source: Arc<dyn RecordSource>) -> Self {
        LoaderBuilder {
            source,
            batch_size: 1,
            drop_last: false,
            shuffle: Shuffle::None,
            seed: None,
            schedule: Schedule::Epochs,
            end_epoch: Some(1),
            rank: 0,
            world: 1,
            workers: None,
            prefetch: None,
            maps: Vec::new(),
            resume: None,
            consumer_helps: false,
            interleave: Interleave::ALL,
            zero_copy: true,
        }
    }

    /// Records per batch of this rank (at least 1).
    pub fn batch_size(mut self, batch_size: usize) -> Self {
        self.batch_size = batch_size;
        self
    }

    /// Drop the end of each epoch that does not fill a whole global step (see
    /// [`Schedule::Epochs`]), so every batch has exactly `batch_size` records.
    pub fn drop_last(mut self, drop_last: bool) -> Self {
        self.drop_last = drop_last;
        self
    }

    /// The order of each epoch.
    pub fn shuffle(mut self, shuffle: Shuffle) -> Self {
        self.shuffle = shuffle;
        self
    }

    /// The shuffle seed (default 0). When resuming, the state's seed is used; setting a
    /// different one here is an error.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }

    /// How global steps are laid over epochs.
    pub fn schedule(mut self, schedule: Schedule) -> Self {
        self.schedule = schedule;
        self
    }

    /// Stop after epoch `epochs - 1`, counting from epoch 0 (a run resumed in epoch 3 of
    /// `epochs(5)` reads epochs 3 and 4).
    pub fn epochs(mut self, epochs: u64) -> Self {
        self.end_epoch = Some(epochs);
        self
    }

    /// Never stop: epoch follows epoch.
    pub fn endless(mut self) -> Self {
        self.end_epoch = None;
        self
    }

    /// Read the share of rank `rank` of `world` ranks (data-parallel training). Every rank
    /// must use the same configuration except the rank.
    pub fn shard(mut self, rank: u64, world: u64) -> Self {
        self.rank = rank;
        self.world = world;
        self
    }

    /// Worker threads that read (and map) batches ahead of the consumer. 0 reads each
    /// batch on the consumer's thread when it is asked for. The batches and their order do
    /// not depend on this number.
    pub fn workers(mut self, workers: usize) -> Self {
        self.workers = Some(workers);
        self
    }

    /// Batches that may be read ahead of the consumer, counting those being read (at
    /// least 1; workers beyond this number stay idle). The loader holds at most
    /// `prefetch + 1` batch buffers while the consumer keeps one batch at a time (plus one
    /// per worker when map functions are set).
    pub fn prefetch(mut self, prefetch: usize) -> Self {
        self.prefetch = Some(prefetch);
        self
    }

    /// Whether the consumer's thread, when the batch it asks for is not ready yet, reads
    /// the next unassigned step itself instead of sleeping until a worker has finished
    /// (default: off). It then works as one more reader exactly when it would otherwise
    /// idle, and no thread has to wake it up; the batches and their order are unchanged.
    /// Off, reads and map functions run only on the worker threads (with 0 workers they
    /// always run on the consumer's thread).
    pub fn consumer_helps(mut self, on: bool) -> Self {
        self.consumer_helps = on;
        self
    }

    /// Read only every `every`-th batch of this rank, starting with batch number `first`
    /// (counted from the start, or from the resume point): `every` readers of one rank,
    /// for example DataLoader worker processes, each take the rank's batches in turn
    /// (reader `k` of `n` uses `interleave(n, k)`), and the batches passed over are
    /// neither read nor ordered. Default `interleave(1, 0)`: every batch. The resume
    /// states of batches and [`Loader::state`] stay those of the whole schedule (the
    /// position after the batch), so they resume the rank, not this reader.
    pub fn interleave(mut self, every: u64, first: u64) -> Self {
        self.interleave = Interleave { every, first };
        self
    }

    /// Whether records may be handed out where they lie instead of copied (default: on).
    /// With a backend that holds the files in memory (mmap, memory) and a format whose
    /// records are their raw bytes (FFRecord), each record is checked (its CRC) in the
    /// mapping and the batch points into it
    /// ([`read_batch_borrowed`](reel_core::RecordSource::read_batch_borrowed)): a batch then
    /// keeps the mapping alive, even after the loader and the source are gone. Otherwise
    /// records are copied into the batch's buffer, as they are with this off.
    pub fn zero_copy(mut self, on: bool) -> Self {
        self.zero_copy = on;
        self
    }

    /// Adds a per-record function, run on the workers after the read and after the
    /// functions added before it (see [`MapFn`]).
    pub fn map<F>(mut self, f: F) -> Self
    where
        F: Fn(RecordRef<'_>, &mut RecordOut<'_>, &MapContext) -> Result<()> + Send + Sync + 'static,
    {
        self.maps.push(Arc::new(f));
        self
    }

    /// Continue from a saved state: the loader delivers exactly the batches an
    /// uninterrupted run would have delivered after the state was taken, without reading
    /// the ones before. The dataset length and shuffle mode must match the state's.
    pub fn resume(mut self, state: LoaderState) -> Self {
        self.resume = Some(state);
        self
    }

    /// Checks the configuration and returns the sequencer and the starting cursor.
    fn prepare(&self) -> Result<(Sequencer, Cursor)> {
        if self.batch_size == 0 {
            return Err(Error::invalid_input("the batch size must be at least 1"));
        }
        if self.world == 0 || self.rank >= self.world {
            return Err(Error::invalid_input(format!(
                "rank {} does not exist in a world of {} ranks",
                self.rank, self.world
            )));
        }
        if self.interleave.every == 0 || self.interleave.first >= self.interleave.every {
            return Err(Error::invalid_input(format!(
                "interleave({}, {}): a reader takes batch `first` of every `every`, with \
                 first < every",
                self.interleave.every, self.interleave.first
            )));
        }
        let batch = self.batch_size as u64;
        if batch.checked_mul(self.world).is_none() {
            return Err(Error::invalid_input("batch size × world size exceeds 2^64"));
        }
        let len = self.source.len();
        let (seed, start) = match &self.resume {
            None => (self.seed.unwrap_or(0), Cursor { epoch: 0, step: 0, position: 0 }),
            Some(state) => {
                if state.len != len {
                    return Err(Error::invalid_input(format!(
                        "the loader state was saved for a dataset of {} records, but this \
                         one has {len}",
                        state.len
                    )));
                }
                if state.shuffle != self.shuffle {
                    return Err(Error::invalid_input(format!(
                        "the loader state was saved with shuffle mode {}, but the loader is \
                         configured with {}",
                        state.shuffle.name(),
                        self.shuffle.name()
                    )));
                }
                if let Some(seed) = self.seed.filter(|&s| s != state.seed) {
                    return Err(Error::invalid_input(format!(
                        "the loader state was saved with seed {}, but the loader is \
                         configured with seed {seed}",
                        state.seed
                    )));
                }
                if state.position > len {
                    return Err(Error::invalid_input(format!(
                        "the loader state's position {} lies beyond the dataset's {len} records",
                        state.position
                    )));
                }
                (
                    state.seed,
                    Cursor { epoch: state.epoch, step: state.step, position: state.position },
                )
            }
        };
        let planner = Planner {
            len,
            batch,
            world: self.world,
            rank: self.rank,
            drop_last: self.drop_last,
            schedule: self.schedule,
            end_epoch: self.end_epoch,
        };
        let start = planner.normalize(start);
        let mut sequencer = Sequencer::new(planner, self.shuffle, seed);
        sequencer.interleave = self.interleave;
        Ok((sequencer, start))
    }

    /// The batches of indices the loader would read, computed without reading anything.
    pub fn index_batches(&self) -> Result<IndexBatches> {
        let (sequencer, cursor) = self.prepare()?;
        let skip = sequencer.interleave.first;
        Ok(IndexBatches { sequencer, cursor, skip })
    }

    /// Checks the configuration and starts the workers.
    pub fn build(self) -> Result<Loader> {
        let (sequencer, start) = self.prepare()?;
        let workers = self.workers.unwrap_or_else(default_workers);
        if workers > MAX_WORKERS {
            return Err(Error::invalid_input(format!(
                "{workers} worker threads asked for; at most {MAX_WORKERS} are allowed (a few \
                 per core keep the device busy)"
            )));
        }
        let window = match self.prefetch {
            Some(0) => return Err(Error::invalid_input("prefetch must be at least 1")),
            Some(p) => p,
            None => workers.saturating_mul(2).max(2),
        };
        let skip = sequencer.interleave.first;
        let consumer_reads =
            if self.consumer_helps { ConsumerReads::WhileWaiting } else { ConsumerReads::Never };
        let options = EngineOptions {
            window,
            max_ahead_bytes: u64::MAX,
            threads: workers,
            consumer_reads,
            thread_name: "reel-loader",
        };
        let work =
            StepWork { source: self.source, sequencer, maps: self.maps, borrow: self.zero_copy };
        let engine = ReadAhead::new(work, StepPlan { next: Some(start), skip }, &options)?;
        Ok(Loader { engine, cursor: start, skip, workers })
    }
}

/// The most worker threads a loader starts. Each is an OS thread with its own stack and
/// batch buffer, started when the loader is built: a number far beyond the cores (a typo, an
/// unchecked argument) would exhaust the process's threads or memory before reading anything.
pub const MAX_WORKERS: usize = 1024;

fn default_workers() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get()).min(8)
}

/// A deterministic, resumable, sharded batch loader over any [`RecordSource`].
///
/// Iterate it (it is an [`Iterator`] of `Result<Batch>`) or use
/// [`epoch_batches`](Self::epoch_batches) for one epoch at a time. See the
/// [crate documentation](crate) for the order, sharding and resume guarantees.
///
/// A failed read is delivered in place of its batch as an error naming the record (the
/// step counts as consumed; iteration may continue with the next batch). Dropping the
/// loader stops its workers: each finishes the read it is doing, and the drop returns once
/// all have exited.
pub struct Loader {
    /// Reads the steps: on `workers` threads ahead of the consumer, or on its thread.
    engine: ReadAhead<StepWork>,
    /// Where the step after the last one delivered starts.
    cursor: Cursor,
    /// Steps to pass over from `cursor` to the next one this loader delivers
    /// ([`LoaderBuilder::interleave`]).
    skip: u64,
    workers: usize,
}

impl Loader {
    /// A builder over `source` (any format's reader, a `Box<dyn RecordSource>`, an `Arc`).
    pub fn builder<S: RecordSource + 'static>(source: S) -> LoaderBuilder {
        LoaderBuilder::new(Arc::new(source))
    }

    /// Batches the workers have read ahead and that wait for the consumer right now (at most
    /// the prefetch window; always 0 without workers). A snapshot, for monitoring how far
    /// ahead the workers are.
    pub fn ready(&self) -> usize {
        self.engine.ready()
    }

    /// The state after the last batch delivered: save it to resume from here.
    pub fn state(&self) -> LoaderState {
        self.engine.work().sequencer.state(self.cursor)
    }

    /// Whether every batch of the run has been delivered.
    pub fn is_finished(&self) -> bool {
        self.engine.work().sequencer.step_skipping(self.cursor, self.skip).is_none()
    }

    /// Batches per whole epoch (the same for every rank), or `None` with
    /// [`Schedule::Stream`].
    pub fn steps_per_epoch(&self) -> Option<u64> {
        self.engine.work().sequencer.planner.steps_per_epoch()
    }

    /// The epoch the next batch belongs to.
    pub fn epoch(&self) -> u64 {
        self.cursor.epoch
    }

    /// The batches left in the current epoch, one at a time: the iterator ends at the
    /// epoch boundary (call it again for the next epoch) or at the end of the run.
    pub fn epoch_batches(&mut self) -> EpochBatches<'_> {
        let epoch = self.cursor.epoch;
        EpochBatches { loader: self, epoch }
    }

    /// The source read from.
    pub fn source(&self) -> &Arc<dyn RecordSource> {
        &self.engine.work().source
    }

    /// The number of worker threads (0: reads happen on the consumer's thread).
    pub fn workers(&self) -> usize {
        self.workers
    }

    /// The next batch in schedule order, `None` at the end of the run.
    pub fn next_batch(&mut self) -> Option<Result<Batch>> {
        let Delivered { tag, result, .. } = self.engine.next_delivered()?;
        // Only an error comes without its step (the schedule failed, or the workers
        // stopped): the position stays where it was.
        let Some(step) = tag else {
            let e = result.err();
            return Some(
                Err(e.unwrap_or_else(|| Error::invalid_input("a batch without its step"))),
            );
        };
        let sequencer = &self.engine.work().sequencer;
        self.cursor = step.next;
        self.skip = sequencer.interleave.gap();
        let resume = sequencer.state(step.next);
        Some(result.map(|records| Batch {
            records,
            epoch: step.at.epoch,
            step: step.at.step,
            position: step.at.position,
            resume,
        }))
    }
}

impl Iterator for Loader {
    type Item = Result<Batch>;

    fn next(&mut self) -> Option<Result<Batch>> {
        self.next_batch()
    }
}

/// The remaining batches of one epoch; see [`Loader::epoch_batches`].
pub struct EpochBatches<'a> {
    loader: &'a mut Loader,
    epoch: u64,
}

impl Iterator for EpochBatches<'_> {
    type Item = Result<Batch>;

    fn next(&mut self) -> Option<Result<Batch>> {
        if self.loader.cursor.epoch != self.epoch || self.loader.is_finished() {
            return None;
        }
        self.loader.next_batch()
    }
}
