//! Converting a source larger than the memory settings: the peak of live heap bytes stays
//! near one row group plus a few batches. Alone in its binary, so no other test's
//! allocations count.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../../reel-core/tests/support/tracking_alloc.rs"]
mod tracking_alloc;
#[global_allocator]
static GLOBAL: tracking_alloc::TrackingAllocator = tracking_alloc::TrackingAllocator;

mod common;

use common::Numbered;
use reel_arrow::{ArrowFileSource, ReadOptions, WriteOptions, write_parquet};
use reel_core::{RecordBatch as ReelBatch, RecordSource, RecordSourceExt};

/// 96 MiB of records go through with a fraction of that in memory.
#[test]
fn converting_streams_in_bounded_memory() {
    let big = Numbered { records: 1536, size: 64 << 10 };
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("big.parquet");
    let mut options = WriteOptions { row_group_bytes: 8 << 20, ..Default::default() };
    options.arrow.batch_bytes = 4 << 20;
    options.arrow.sample_records = 16;
    options.compression = reel_arrow::Compression::None;
    tracking_alloc::reset_peak();
    let before = tracking_alloc::live_bytes();
    write_parquet(&big, &path, &options).unwrap();
    let peak = tracking_alloc::peak_bytes() - before;
    let size = std::fs::metadata(&path).unwrap().len();
    assert!(size > 96 << 20, "{size}");
    assert!(peak < 40 << 20, "peak {} MiB for 96 MiB written", peak >> 20);
    let back = ArrowFileSource::open(&path, &ReadOptions::default()).unwrap();
    assert_eq!(back.len(), 1536);
    assert_eq!(back.read(1000).unwrap().bytes("data").unwrap()[0], (1000 % 251) as u8);

    // Reading it through: the window of decoded rows stays near WINDOW_BYTES (it was 1024
    // rows, 64 MiB of these).
    tracking_alloc::reset_peak();
    let before = tracking_alloc::live_bytes();
    let mut batch = ReelBatch::new();
    for start in (0..1536u64).step_by(64) {
        let indices: Vec<u64> = (start..start + 64).collect();
        back.read_batch_into(&indices, &mut batch).unwrap();
        assert_eq!(batch.get(63).unwrap().bytes("data").unwrap()[0], ((start + 63) % 251) as u8);
    }
    let peak = tracking_alloc::peak_bytes() - before;
    assert!(peak < 40 << 20, "peak {} MiB reading 96 MiB", peak >> 20);
}
