//! The reel batch loader: deterministic, resumable, sharded batches over any
//! [`RecordSource`](reel_core::RecordSource).
//!
//! ```no_run
//! use reel_loader::{Loader, Shuffle};
//!
//! # fn main() -> reel_core::Result<()> {
//! let source = reel_ffrecord::FfrecordReader::open("train.ffr")?;
//! let mut loader = Loader::builder(source)
//!     .batch_size(256)
//!     .shuffle(Shuffle::Feistel)
//!     .seed(7)
//!     .epochs(10)
//!     .workers(4)
//!     .build()?;
//! for batch in &mut loader {
//!     let batch = batch?;
//!     for record in batch.iter() {
//!         let _bytes = record.bytes("data");
//!     }
//!     let _checkpoint = batch.resume_state().to_json();
//! }
//! # Ok(()) }
//! ```
//!
//! # The order
//!
//! Each epoch `e` has a *global order*: a permutation of the dataset's `len` records that
//! depends only on `(shuffle mode, seed, e, len)` ([`Shuffle`]):
//!
//! * [`Shuffle::Feistel`] computes position `p`'s record on the fly with a keyed
//!   bijection on `[0, len)` — a Feistel network over the smallest power of two that
//!   holds `len`, with cycle walking to stay inside `[0, len)` ([`FeistelPermutation`]). It
//!   needs O(1) memory whatever the dataset size, and any position of any epoch costs the
//!   same few nanoseconds, which is what makes resuming free.
//! * [`Shuffle::Granular`] is numpy's `default_rng([seed, e]).permutation(len)`, bit for
//!   bit ([`NumpyRng`] re-implements numpy's `SeedSequence`, `PCG64` and its permutation
//!   algorithm), so a reel loader reads in exactly the order a Granular loader does. It
//!   materialises the permutation (O(len) memory, 4 bytes per record).
//! * [`Shuffle::None`] is index order.
//!
//! # Steps and sharding
//!
//! A *global step* is `world × batch_size` consecutive positions of the global order; the
//! rank `r` of `world` ranks takes the `r`-th block of `batch_size` of them (the
//! contiguous per-shard layout of Granular's loader). So:
//!
//! * the global order does not depend on the world size: a job may change its number of
//!   ranks between runs (elastic), and the union of what the ranks read is the same;
//! * within an epoch the ranks' batches are disjoint and together cover the epoch
//!   (exactly, with `drop_last` off; all but the dropped tail with it on);
//! * every rank sees the same number of steps, so collective operations line up.
//!
//! [`Schedule`] decides what happens at the end of an epoch: [`Schedule::Epochs`] (the
//! default) keeps epochs apart — the tail that does not fill a global step is dropped
//! (`drop_last`) or shared out evenly — and [`Schedule::Stream`] runs the epochs together
//! as Granular does.
//!
//! # Workers and determinism
//!
//! Worker threads read whole steps through the source's batch path
//! ([`read_batch_into`](reel_core::RecordSource::read_batch_into), so io_uring and every
//! other backend serve them), run the map functions ([`LoaderBuilder::map`]) and put the
//! batch in a bounded reorder window; the consumer receives batches strictly in step
//! order. The batches — their records and their order — are the same for any number of
//! workers, including none (reads then happen on the consumer's thread), and whether or
//! not the consumer helps read while it waits ([`LoaderBuilder::consumer_helps`]). Map
//! functions get a [`MapContext`] whose [`rng`](MapContext::rng) is seeded by the
//! record's place in the run, so random augmentation is deterministic too.
//!
//! Batch buffers return to the loader when a [`Batch`] is dropped and are read into
//! again, so in the steady state a step allocates nothing.
//!
//! # Resume
//!
//! [`LoaderState`] is `(seed, epoch, step, position)` plus the dataset length and shuffle
//! mode as a guard. Saved after any batch ([`Batch::resume_state`], [`Loader::state`]) and
//! passed to [`LoaderBuilder::resume`], it makes the new loader deliver exactly the
//! batches the uninterrupted run would have delivered next. The skipped batches are not
//! read and not even enumerated: the loader computes where the next step starts. (The
//! reference FFRecord loader's `set_step` instead draws and discards every skipped batch
//! and keeps skipping in later epochs until reset; Granular's `load` restores only a step
//! count.) The state is the same on every rank, and may be resumed with another world
//! size.
//!
//! # Errors
//!
//! A read that fails reaches the consumer as the error of that batch, naming the record
//! (when the source does not name it, the loader finds it by reading the batch's records
//! one by one, on the error path only). A map function's error or panic is reported the
//! same way; worker threads never die of it. Dropping the loader stops the workers and
//! waits for them.

#![forbid(unsafe_code)]

mod batch;
mod feistel;
pub mod granular;
mod loader;
mod map;
mod numpy_rng;
mod order;
mod pipeline;
mod schedule;
mod sequence;
mod state;

pub use batch::Batch;
pub use feistel::FeistelPermutation;
pub use loader::{EpochBatches, Loader, LoaderBuilder, MAX_WORKERS};
pub use map::{MapContext, MapFn, copy_fields};
pub use numpy_rng::{NumpyRng, SeedSequence, pairwise_sum_f32};
pub use order::{EpochOrder, PermutationTable, Shuffle};
pub use schedule::Schedule;
pub use sequence::{BatchIndices, IndexBatches};
pub use state::LoaderState;
