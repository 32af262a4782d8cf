//! Cache warming for index tables read at random.
//!
//! A random batch looks up one table entry per record; when the table is larger than the
//! CPU cache each lookup is a cache (and TLB) miss, and planning records one after another,
//! each with its bounds checks and bookkeeping, leaves too few lookups in flight at once for
//! the misses to overlap. Touching every entry of the batch first in a tight loop, where
//! nothing depends on the loaded values, lets the CPU run many misses at the same time.

/// Loads `value` so that its cache line is resident when it is read for real. Has no
/// effect on what the program computes. (The prefetch intrinsics take raw pointers and are
/// `unsafe`; a plain load needs no `unsafe` and, in a loop of independent loads, overlaps
/// its misses just as well.)
#[inline(always)]
pub fn prefetch_read<T: Copy>(value: &T) {
    std::hint::black_box(*value);
}
