//! Training runs from reel-loader: the plan (which records each batch of each rank reads,
//! epoch by epoch, and the state to resume from) and the stream that reads those batches
//! ahead on Rust threads. `reel.torch.StreamingDataset` is built on both; shuffling,
//! sharding, read-ahead and resume are all reel-loader's.

use std::sync::{Mutex, PoisonError};

use pyo3::prelude::*;
use pyo3::types::PyList;
use reel::{Error, Loader, LoaderBuilder, LoaderState, Shuffle};

use crate::buffer::HeldBatch;
use crate::dataset::{Dataset, batch_dicts};
use crate::errors::IntoPyResult;

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

    /// Passes over the next `n` batches without computing their indices; returns how many
    /// there were (fewer than `n` at the end). `state()` is then the state after them.
    ///
    /// Steps of a million batches at a time, with the GIL released, and Ctrl-C heard
    /// between them (a plan of endless epochs never ends a large skip by itself).
    fn skip(
        &mut self,
        py: Python<'_>,
        n: crate::args::Count<u64, crate::args::name::N>,
    ) -> PyResult<u64> {
        const STEP: u64 = 1 << 20;
        let mut passed = 0;
        while passed < n.0 {
            let step = (n.0 - passed).min(STEP);
            let inner = &mut self.inner;
            let done = crate::shutdown::detach(py, move || inner.skip_batches(step));
            passed += done;
            if done < step {
                break;
            }
            py.check_signals()?;
        }
        Ok(passed)
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
    Ok(IndexPlan { inner: builder(ds, ds.source.clone(), &a)?.index_batches()? })
}

/// How `Dataset.stream` reads ahead, besides the plan.
pub(crate) struct ReadAhead {
    /// Rust threads reading batches ahead (0: each batch is read when asked for).
    pub(crate) threads: usize,
    /// Batches read ahead at most (None: twice the threads).
    pub(crate) prefetch: Option<usize>,
    /// Take batch `.1` of every `.0` of the plan (DataLoader workers of one rank).
    pub(crate) interleave: (u64, u64),
    /// Copy byte fields into `bytes` (else memoryviews over the batch buffer).
    pub(crate) copy: bool,
    /// Let records be lent from the file's mapping (else always read into the batch
    /// buffer; see `Dataset.read`).
    pub(crate) mapped: bool,
}

/// The batches of `ds`'s plan, read ahead on Rust threads (see `Dataset.stream`).
pub(crate) fn stream(
    py: Python<'_>,
    ds: &Dataset,
    a: PlanArgs<'_>,
    r: ReadAhead,
) -> PyResult<BatchStream> {
    let loader = crate::shutdown::detach(py, || {
        // Read through this process's source (reopened after a fork), and start the
        // threads here, in the process that iterates.
        let mut b = builder(ds, ds.reader()?, &a)?
            .workers(r.threads)
            .zero_copy(r.mapped)
            .interleave(r.interleave.0, r.interleave.1);
        if let Some(p) = r.prefetch {
            b = b.prefetch(p);
        }
        b.build()
    })
    .py_err(py)?;
    Ok(BatchStream { loader: Mutex::new(loader), copy: r.copy })
}

/// The batches of a plan, read ahead by reel-loader's threads while Python works on the
/// current one. Iterating yields each batch as a list of records (dicts).
///
/// Waiting for a batch releases the GIL. Dropping the stream stops its threads. Threads
/// sharing one stream each take whole batches, each batch once.
#[pyclass(frozen, module = "reel._reel")]
pub struct BatchStream {
    /// Taken with the GIL released (see `__next__`), so that a thread waiting for a batch
    /// never holds the GIL that the thread holding the loader may need.
    loader: Mutex<Loader>,
    copy: bool,
}

impl BatchStream {
    /// The loader, waited for with the GIL released.
    fn with_loader<T: Send>(&self, py: Python<'_>, f: impl FnOnce(&mut Loader) -> T + Send) -> T {
        crate::shutdown::detach(py, || {
            let mut loader = self.loader.lock().unwrap_or_else(PoisonError::into_inner);
            f(&mut loader)
        })
    }
}

#[pymethods]
impl BatchStream {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyList>>> {
        let Some(next) = self.with_loader(py, Loader::next_batch) else {
            return Ok(None);
        };
        let batch = next.py_err(py)?;
        let records = batch_dicts(py, HeldBatch::loaded(batch), self.copy)?;
        PyList::new(py, records).map(Some)
    }

    /// The loader state (JSON) after the last batch delivered.
    fn state(&self, py: Python<'_>) -> String {
        self.with_loader(py, |loader| loader.state().to_json())
    }

    /// The number of Rust threads reading ahead.
    #[getter]
    fn threads(&self, py: Python<'_>) -> usize {
        self.with_loader(py, |loader| loader.workers())
    }
}

/// The loader configuration `a` names, over `source`.
fn builder(
    ds: &Dataset,
    source: std::sync::Arc<dyn reel::RecordSource>,
    a: &PlanArgs<'_>,
) -> reel::Result<LoaderBuilder> {
    let shuffle = shuffle_named(a.shuffle)?;
    let len = ds.source.len();
    let start = match a.state {
        Some(json) => LoaderState::from_json(json)?,
        None => LoaderState::at_epoch(a.seed, a.epoch, len, shuffle),
    };
    let builder = LoaderBuilder::new(source)
        .batch_size(a.batch_size)
        .shuffle(shuffle)
        .seed(a.seed)
        .shard(a.rank, a.world_size)
        .drop_last(a.drop_last)
        .resume(start);
    Ok(match a.epochs {
        Some(n) => builder.epochs(n),
        None => builder.endless(),
    })
}
