//! A reused `RecordBatch` (and `Record`) costs no allocation once warm, on every backend.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use reel_core::{Backend, Record, RecordBatch, RecordSource};
use reel_ffrecord::{FfrecordOptions, FfrecordReader, dump};

#[path = "../../reel-core/tests/support/tracking_alloc.rs"]
mod tracking_alloc;

#[global_allocator]
static GLOBAL: tracking_alloc::TrackingAllocator = tracking_alloc::TrackingAllocator;

#[test]
fn steady_state_batches_do_not_allocate() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("x.ffr");
    let records: Vec<Vec<u8>> =
        (0..500u32).map(|i| vec![i as u8; (i as usize * 13) % 900]).collect();
    dump(&records, &p, 1).unwrap();
    for backend in Backend::core_backends() {
        let r = FfrecordReader::open_with(&p, &FfrecordOptions::default().backend(backend.clone()))
            .unwrap();
        let batches: Vec<Vec<u64>> =
            (0..50u64).map(|b| (0..64).map(|k| (b * 97 + k * 31) % 500).collect()).collect();
        let mut batch = RecordBatch::new();
        let mut record = Record::new();
        // Warm up: let the buffers grow to the largest batch and record.
        for idx in &batches {
            r.read_batch_into(idx, &mut batch).unwrap();
        }
        for i in 0..500 {
            r.read_into(i, &mut record).unwrap();
        }
        let before = tracking_alloc::allocations();
        for idx in &batches {
            r.read_batch_into(idx, &mut batch).unwrap();
            assert_eq!(batch.len(), idx.len());
        }
        for i in 0..500 {
            r.read_into(i, &mut record).unwrap();
        }
        assert_eq!(
            tracking_alloc::allocations() - before,
            0,
            "{}: steady-state reads allocated",
            backend.name()
        );
    }
}
