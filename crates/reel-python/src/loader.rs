//! The order of a training run, from reel-loader: which records each batch of each rank
//! reads, epoch by epoch, and the state to resume from. `reel.torch.StreamingDataset` reads
//! the batches this plan names; shuffling, sharding and resume are all reel-loader's.

use pyo3::prelude::*;
use reel::{Error, LoaderBuilder, LoaderState, Shuffle};

use crate::dataset::Dataset;

/// The shuffle mode named `name`: "none", "feistel" or "granular".
fn shuffle_named(name: &str) -> reel::Result<Shuffle> {
    serde_json::from_value(serde_json::Value::String(name.to_string())).map_err(|_| {
        Error::invalid_input(format!("unknown shuffle {name:?} (use none, feistel or granular)"))
    })
}

/// The index batches of one rank, computed without reading anything.
///
/// Iterating yields `(indices, resume_state)` per batch: the record indices of the batch
/// and the loader state (JSON) after it, which resumes exactly after that batch.
#[pyclass(module = "reel._reel")]
pub struct IndexPlan {
    inner: reel::loader::IndexBatches,
}

#[pymethods]
impl IndexPlan {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&mut self) -> Option<(Vec<u64>, String)> {
        self.inner.next().map(|b| (b.indices, b.resume.to_json()))
    }

    /// The loader state (JSON) before the next batch.
    fn state(&self) -> String {
        self.inner.state().to_json()
    }
}

/// What [`plan`] needs besides the dataset (the keyword arguments of `Dataset.plan`).
pub(crate) struct PlanArgs<'a> {
    pub(crate) batch_size: usize,
    pub(crate) shuffle: &'a str,
    pub(crate) seed: u64,
    pub(crate) rank: u64,
    pub(crate) world_size: u64,
    pub(crate) drop_last: bool,
    pub(crate) epoch: u64,
    pub(crate) epochs: Option<u64>,
    pub(crate) state: Option<&'a str>,
}

/// The index batches of one rank of `ds` (see `Dataset.plan`).
pub(crate) fn plan(ds: &Dataset, a: PlanArgs<'_>) -> reel::Result<IndexPlan> {
    let shuffle = shuffle_named(a.shuffle)?;
    let len = ds.source.len();
    let start = match a.state {
        Some(json) => LoaderState::from_json(json)?,
        None => LoaderState::at_epoch(a.seed, a.epoch, len, shuffle),
    };
    let builder = LoaderBuilder::new(ds.source.clone())
        .batch_size(a.batch_size)
        .shuffle(shuffle)
        .seed(a.seed)
        .shard(a.rank, a.world_size)
        .drop_last(a.drop_last)
        .resume(start);
    let builder = match a.epochs {
        Some(n) => builder.epochs(n),
        None => builder.endless(),
    };
    Ok(IndexPlan { inner: builder.index_batches()? })
}
