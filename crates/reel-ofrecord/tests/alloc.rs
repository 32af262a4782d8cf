//! No input makes the reader allocate more than the input is large: a frame claiming a
//! terabyte fails at open without a large allocation, and reading a dataset allocates in
//! proportion to its records.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use reel_core::{ErrorKind, MemFiles, RecordSourceExt};
use reel_ofrecord::{OfrecordOptions, OfrecordReader, encode_record};

struct Largest;

thread_local! {
    static LARGEST: Cell<usize> = const { Cell::new(0) };
}

// SAFETY: forwards to the system allocator; only records the largest size asked for on
// the current thread.
unsafe impl GlobalAlloc for Largest {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LARGEST.with(|c| c.set(c.get().max(layout.size())));
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LARGEST.with(|c| c.set(c.get().max(new_size)));
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Largest = Largest;

#[test]
fn a_terabyte_claim_fails_fast_without_allocating() {
    let payload = encode_record(support::sample(3).view(), Default::default()).unwrap();
    let mut bytes = support::frame(&payload);
    bytes.extend_from_slice(&(1u64 << 40).to_le_bytes());
    bytes.extend_from_slice(&payload);
    let files = MemFiles::single("part-00000", bytes.clone());
    LARGEST.with(|c| c.set(0));
    let e = OfrecordReader::from_files(files, &OfrecordOptions::default()).err().unwrap();
    let largest = LARGEST.with(Cell::get);
    assert_eq!(e.kind(), ErrorKind::Corrupt);
    assert!(largest < 128 << 10, "opening allocated {largest} bytes at once");

    // A valid file: reading every record allocates no more than a few times its size.
    let good: Vec<u8> = (0..50)
        .flat_map(|i| {
            support::frame(&encode_record(support::sample(i).view(), Default::default()).unwrap())
        })
        .collect();
    let r = OfrecordReader::from_files(
        MemFiles::single("p", good.clone()),
        &OfrecordOptions::default(),
    )
    .unwrap();
    LARGEST.with(|c| c.set(0));
    for i in 0..50 {
        r.read(i).unwrap();
    }
    assert!(LARGEST.with(Cell::get) <= good.len(), "a read allocated more than the file");
}
