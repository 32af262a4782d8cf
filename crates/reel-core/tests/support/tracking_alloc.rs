//! A global allocator for allocation tests, shared by the workspace's crates through
//! `#[path]` (a test helper, so it stays out of every library):
//!
//! ```ignore
//! #[path = "../../reel-core/tests/support/tracking_alloc.rs"]
//! mod tracking_alloc;
//! #[global_allocator]
//! static GLOBAL: tracking_alloc::TrackingAllocator = tracking_alloc::TrackingAllocator;
//! ```
//!
//! It forwards to the system allocator and records how many allocations were made (on the
//! current thread, and on all threads) and the largest size asked for on the current thread.
//! Per-thread counts keep tests that run in parallel in one binary from seeing each other.
#![allow(dead_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

/// The counting allocator; install it with `#[global_allocator]`.
pub struct TrackingAllocator;

thread_local! {
    static CALLS: Cell<u64> = const { Cell::new(0) };
    static LARGEST: Cell<usize> = const { Cell::new(0) };
}
static CALLS_ALL_THREADS: AtomicU64 = AtomicU64::new(0);
/// Bytes allocated and not yet freed, on all threads, and the most there have been.
static LIVE: AtomicU64 = AtomicU64::new(0);
static PEAK: AtomicU64 = AtomicU64::new(0);

fn grow_live(by: usize) {
    let now = LIVE.fetch_add(by as u64, Ordering::Relaxed) + by as u64;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

fn shrink_live(by: usize) {
    LIVE.fetch_sub(by as u64, Ordering::Relaxed);
}

fn record(size: usize) {
    CALLS.with(|c| c.set(c.get() + 1));
    LARGEST.with(|c| c.set(c.get().max(size)));
    CALLS_ALL_THREADS.fetch_add(1, Ordering::Relaxed);
}

// SAFETY: forwards every call to the system allocator unchanged; the bookkeeping only
// touches const-initialized thread-locals without destructors and an atomic, neither of
// which allocates.
unsafe impl GlobalAlloc for TrackingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        record(layout.size());
        grow_live(layout.size());
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        shrink_live(layout.size());
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        record(new_size);
        grow_live(new_size);
        shrink_live(layout.size());
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// Allocations (and reallocations) made so far on the current thread.
pub fn allocations() -> u64 {
    CALLS.with(Cell::get)
}

/// Allocations (and reallocations) made so far on every thread.
pub fn allocations_all_threads() -> u64 {
    CALLS_ALL_THREADS.load(Ordering::SeqCst)
}

/// Forgets the largest allocation seen on the current thread.
pub fn reset_largest() {
    LARGEST.with(|c| c.set(0));
}

/// The largest single allocation asked for on the current thread since `reset_largest`.
pub fn largest() -> usize {
    LARGEST.with(Cell::get)
}

/// Bytes allocated and not freed, on every thread.
pub fn live_bytes() -> u64 {
    LIVE.load(Ordering::SeqCst)
}

/// Restarts the high-water mark of [`live_bytes`] from the current value.
pub fn reset_peak() {
    PEAK.store(LIVE.load(Ordering::SeqCst), Ordering::SeqCst);
}

/// The most bytes live at once, on every thread, since [`reset_peak`].
pub fn peak_bytes() -> u64 {
    PEAK.load(Ordering::SeqCst)
}
