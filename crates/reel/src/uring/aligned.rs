//! Page-aligned heap buffers for O_DIRECT reads.

use std::alloc::{Layout, alloc_zeroed, dealloc};
use std::ptr::NonNull;

/// A zeroed, `align`-aligned heap buffer. O_DIRECT needs the destination address aligned
/// to the device's memory alignment, which `Vec<u8>` does not guarantee.
pub(crate) struct AlignedBuf {
    ptr: NonNull<u8>,
    layout: Layout,
}

// SAFETY: the buffer is plain owned memory with no thread affinity.
unsafe impl Send for AlignedBuf {}

impl AlignedBuf {
    /// Allocates `len` bytes (at least one alignment unit) aligned to `align` (a power of two).
    pub(crate) fn new(len: usize, align: usize) -> Option<Self> {
        let layout = Layout::from_size_align(len.max(align), align).ok()?;
        // SAFETY: the layout has a non-zero size (at least `align` bytes).
        let ptr = NonNull::new(unsafe { alloc_zeroed(layout) })?;
        Some(AlignedBuf { ptr, layout })
    }

    pub(crate) fn len(&self) -> usize {
        self.layout.size()
    }

    pub(crate) fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr.as_ptr()
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with exactly this layout.
        unsafe { dealloc(self.ptr.as_ptr(), self.layout) }
    }
}
