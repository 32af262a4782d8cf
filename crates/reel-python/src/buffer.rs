//! Zero-copy byte fields: a read-only buffer-protocol object over a batch's byte buffer.

use std::os::raw::{c_int, c_void};

use pyo3::exceptions::PyBufferError;
use pyo3::ffi;
use pyo3::prelude::*;
use reel_core::RecordBatch;

/// The bytes of one batch read, shared with Python without a copy.
///
/// Byte fields read with `copy=False` are `memoryview` slices of this object; each keeps
/// the whole batch alive until the last of them is released. The buffer is read-only.
#[pyclass(frozen, module = "reel._reel")]
pub(crate) struct BatchBuffer {
    batch: RecordBatch,
}

impl BatchBuffer {
    /// Wraps a filled batch.
    pub(crate) fn new(batch: RecordBatch) -> Self {
        BatchBuffer { batch }
    }

    /// The batch.
    pub(crate) fn batch(&self) -> &RecordBatch {
        &self.batch
    }

    /// Every byte of the batch (what record values point into).
    pub(crate) fn bytes(&self) -> &[u8] {
        self.batch.get(0).map_or(&[], |r| r.raw_buffer())
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
