//! No input makes the reader allocate more than the input is large: a frame claiming a
//! terabyte fails at open without a large allocation, and reading a dataset allocates in
//! proportion to its records.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use reel_core::{ErrorKind, MemFiles, RecordSourceExt};
use reel_ofrecord::{OfrecordOptions, OfrecordReader, encode_record};

#[path = "../../reel-core/tests/support/tracking_alloc.rs"]
mod tracking_alloc;

#[global_allocator]
static GLOBAL: tracking_alloc::TrackingAllocator = tracking_alloc::TrackingAllocator;

#[test]
fn a_terabyte_claim_fails_fast_without_allocating() {
    let payload = encode_record(support::sample(3).view(), Default::default()).unwrap();
    let mut bytes = support::frame(&payload);
    bytes.extend_from_slice(&(1u64 << 40).to_le_bytes());
    bytes.extend_from_slice(&payload);
    let files = MemFiles::single("part-00000", bytes.clone());
    tracking_alloc::reset_largest();
    let e = OfrecordReader::from_files(files, &OfrecordOptions::default()).err().unwrap();
    let largest = tracking_alloc::largest();
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
    tracking_alloc::reset_largest();
    for i in 0..50 {
        r.read(i).unwrap();
    }
    assert!(tracking_alloc::largest() <= good.len(), "a read allocated more than the file");
}
