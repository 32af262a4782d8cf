//! Batch buffers: reused from read to read, and shared with Python without a copy through
//! a read-only buffer-protocol object.

use std::ops::Deref;
use std::os::raw::{c_int, c_void};
use std::sync::Arc;

use pyo3::exceptions::PyBufferError;
use pyo3::ffi;
use pyo3::prelude::*;
use reel::{BatchPool, PooledBatch, RecordBatch};

/// Spare batch buffers kept by one dataset.
const POOL_SPARES: usize = 4;

/// A buffer larger than this is freed after use instead of kept: one huge read should not
/// pin its memory for the dataset's lifetime.
const POOL_MAX_BYTES: usize = 256 << 20;

/// The pool a dataset reads into (core's [`BatchPool`], one reader): buffers come back when
/// a read's records are converted or when the last view of a zero-copy read is released.
pub(crate) fn new_pool() -> Arc<BatchPool> {
    Arc::new(BatchPool::new(1, POOL_SPARES).max_buffer_bytes(POOL_MAX_BYTES))
}

/// A filled batch: from a dataset's read, or from reel-loader (whose buffers go back to
/// the loader, or are freed if it is gone).
///
/// It remembers the process it was read in ([`crate::fork::process_generation`]). Dropped
/// in a process forked since (a view or tensor a DataLoader worker inherited), its buffer
/// is freed without going back to its pool: the pool is the parent's, and another thread
/// of the parent may have held the pool's lock at the fork, which in the child nothing
/// would ever release.
#[derive(Debug)]
pub(crate) struct HeldBatch {
    held: Held,
    generation: u64,
}

#[derive(Debug)]
enum Held {
    /// `Dataset.read_batch` and friends.
    Read(PooledBatch),
    /// A batch of `Dataset.stream`.
    Loaded(reel::Batch),
}

impl HeldBatch {
    /// A batch of a dataset's read, in this process.
    pub(crate) fn read(batch: PooledBatch) -> Self {
        HeldBatch { held: Held::Read(batch), generation: crate::fork::process_generation() }
    }

    /// A batch of reel-loader's, in this process.
    pub(crate) fn loaded(batch: reel::Batch) -> Self {
        HeldBatch { held: Held::Loaded(batch), generation: crate::fork::process_generation() }
    }
}

impl Deref for HeldBatch {
    type Target = RecordBatch;

    fn deref(&self) -> &RecordBatch {
        match &self.held {
            Held::Read(b) => b,
            Held::Loaded(b) => b,
        }
    }
}

impl Drop for HeldBatch {
    fn drop(&mut self) {
        if self.generation != crate::fork::process_generation() {
            // An unpooled empty batch in its place, whose own drop touches nothing.
            match std::mem::replace(&mut self.held, Held::Read(PooledBatch::default())) {
                Held::Read(batch) => drop(batch.detach()),
                Held::Loaded(batch) => drop(batch.detach_records()),
            }
        }
    }
}

/// The bytes of one batch read, shared with Python without a copy.
///
/// Byte fields read with `copy=False` are `memoryview` slices of this object (and tensors
/// made from them share it too); each keeps the whole batch alive until the last of them is
/// released, whatever happens to the dataset. Then the buffer is reused for a later read.
/// The buffer is read-only.
///
/// A batch's records point into one buffer, or, when they were handed out where they lie
/// (`read_batch_borrowed`: mmap and memory backends), into the memory-held files, one
/// buffer per file, each kept alive by the batch's share of it. One `BatchBuffer` exposes
/// one of these: the one record `record` of the batch points into.
#[pyclass(frozen, module = "reel._reel")]
pub(crate) struct BatchBuffer {
    batch: Arc<HeldBatch>,
    record: usize,
    /// The part of the buffer exposed; all of it when `None`.
    window: Option<std::ops::Range<usize>>,
}

impl BatchBuffer {
    /// Exposes the buffer record `record` of `batch` points into.
    pub(crate) fn new(batch: Arc<HeldBatch>, record: usize) -> Self {
        BatchBuffer { batch, record, window: None }
    }

    /// Exposes only `window` of that buffer (nothing if it lies outside): one object
    /// instead of a view of the whole buffer and a slice of it, for packed reads.
    pub(crate) fn window(
        batch: Arc<HeldBatch>,
        record: usize,
        window: std::ops::Range<usize>,
    ) -> Self {
        BatchBuffer { batch, record, window: Some(window) }
    }

    /// The buffer: the batch's own bytes, or a memory-held file the batch keeps alive.
    pub(crate) fn bytes(&self) -> &[u8] {
        let all = self.batch.get(self.record).map_or(&[][..], |r| r.raw_buffer());
        match &self.window {
            None => all,
            Some(window) => all.get(window.clone()).unwrap_or_default(),
        }
    }
}

#[pymethods]
impl BatchBuffer {
    /// Exposes the batch's bytes as a read-only, one-dimensional buffer of unsigned bytes.
    ///
    /// # Safety
    /// Called by Python with a valid `Py_buffer` to fill.
    unsafe fn __getbuffer__(
        slf: Bound<'_, Self>,
        view: *mut ffi::Py_buffer,
        flags: c_int,
    ) -> PyResult<()> {
        if flags & ffi::PyBUF_WRITABLE == ffi::PyBUF_WRITABLE {
            return Err(PyBufferError::new_err("reel's record buffers are read-only"));
        }
        let bytes = slf.get().bytes();
        let len = isize::try_from(bytes.len())
            .map_err(|_| PyBufferError::new_err("buffer larger than isize::MAX"))?;
        // SAFETY: `view` is the valid Py_buffer Python handed us. The pointer and length
        // describe bytes owned by this frozen object, which never mutates them, and
        // PyBuffer_FillInfo stores a new reference to the object in `view.obj`, so the
        // bytes live as long as the view. readonly = 1: consumers may not write.
        let rc = unsafe {
            ffi::PyBuffer_FillInfo(view, slf.as_ptr(), bytes.as_ptr() as *mut c_void, len, 1, flags)
        };
        if rc == -1 {
            return Err(PyErr::fetch(slf.py()));
        }
        Ok(())
    }

    /// Nothing to release: the view's reference to this object keeps the bytes alive.
    ///
    /// # Safety
    /// Called by Python with the view `__getbuffer__` filled.
    unsafe fn __releasebuffer__(&self, _view: *mut ffi::Py_buffer) {}

    /// Number of bytes.
    fn __len__(&self) -> usize {
        self.bytes().len()
    }
}
