//! The loader's resumable state.

use reel_core::{Error, Result};
use serde::{Deserialize, Serialize};

use crate::Shuffle;

/// Where a loader stands: everything needed to continue exactly where it stopped.
///
/// Take it from [`Loader::state`](crate::Loader::state) (the position after the last batch
/// delivered) or [`Batch::resume_state`](crate::Batch::resume_state) (the position after
/// that batch), save it with your checkpoint (it is a few numbers; [`to_json`](Self::to_json)
/// gives a one-line JSON object), and pass it to
/// [`LoaderBuilder::resume`](crate::LoaderBuilder::resume). The resumed loader delivers
/// exactly the batches the uninterrupted one would have delivered next, and it computes
/// where they are instead of reading and discarding the skipped ones.
///
/// The state is *global*: it counts positions in the epoch's global order, consumed by all
/// ranks together, so every rank of a data-parallel job saves the same state, and a job
/// may resume with a different world size (the remaining records of the epoch are then cut
/// into steps for the new world size).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoaderState {
    /// The shuffle seed.
    pub seed: u64,
    /// The epoch the next batch belongs to.
    pub epoch: u64,
    /// Global steps delivered since the epoch began (or since the run joined it, when it
    /// resumed at a position that is not a whole number of steps). Informational: the
    /// position is what resuming uses.
    pub step: u64,
    /// Records of the epoch's global order already consumed by all ranks together: the
    /// next global step starts at this position.
    pub position: u64,
    /// The number of records of the dataset; resuming on a dataset of another size is
    /// refused, since the order would differ.
    pub len: u64,
    /// The shuffle mode; resuming with another mode is refused.
    pub shuffle: Shuffle,
}

impl LoaderState {
    /// The state at the start of epoch `epoch`.
    pub fn at_epoch(seed: u64, epoch: u64, len: u64, shuffle: Shuffle) -> Self {
        LoaderState { seed, epoch, step: 0, position: 0, len, shuffle }
    }

    /// The state equivalent to Granular's `Loader.save()` → `{'step': step}` for a loader
    /// over `Epochs(source)` of `len` records: `step` counts records consumed by all
    /// shards since the start. Use it with [`Shuffle::Granular`] and
    /// [`Schedule::Stream`](crate::Schedule::Stream) (seed 0 for Granular ≥ 0.21).
    pub fn from_granular_step(granular_step: u64, seed: u64, len: u64) -> Result<Self> {
        if len == 0 {
            return Err(Error::invalid_input("a Granular step needs a non-empty dataset"));
        }
        Ok(LoaderState {
            seed,
            epoch: granular_step / len,
            step: 0,
            position: granular_step % len,
            len,
            shuffle: Shuffle::Granular,
        })
    }

    /// The value Granular's `Loader.save()` would report for this state (records consumed
    /// since the start of epoch 0), if it fits in a `u64`.
    pub fn granular_step(&self) -> Option<u64> {
        self.epoch.checked_mul(self.len)?.checked_add(self.position)
    }

    /// The state as a one-line JSON object.
    pub fn to_json(&self) -> String {
        // Serialising plain integers and an enum cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Parses a state written by [`to_json`](Self::to_json).
    pub fn from_json(text: &str) -> Result<Self> {
        serde_json::from_str(text)
            .map_err(|e| Error::invalid_input(format!("not a loader state: {e}")).with_source(e))
    }
}
