//! A stream whose consumer drops each batch before asking for the next allocates nothing
//! once its buffers have grown (its own binary: the count covers every thread).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "support/fixed.rs"]
mod fixed;
#[path = "support/tracking_alloc.rs"]
mod tracking_alloc;

#[global_allocator]
static GLOBAL: tracking_alloc::TrackingAllocator = tracking_alloc::TrackingAllocator;

use std::sync::Arc;

use reel_core::{BatchPlan, BatchStream, RecordSource, StreamOptions};

#[test]
fn steady_state_allocates_nothing() {
    let n = 20_000u64;
    let source: Arc<dyn RecordSource> = fixed::source(fixed::bytes(n as usize));
    let order: Vec<u64> = (0..n).map(|i| (i * 7919) % n).collect();
    for options in [
        StreamOptions::inline(),
        StreamOptions::default(),
        StreamOptions::default().threads(2).read_ahead(4),
    ] {
        let mut stream =
            BatchStream::new(source.clone(), BatchPlan::chunks(order.clone(), 100), &options)
                .unwrap();
        // Warm up: every buffer of the window has held a full batch.
        for _ in 0..40 {
            assert_eq!(stream.next().unwrap().unwrap().len(), 100);
        }
        let before = tracking_alloc::allocations_all_threads();
        let mut records = 0;
        for _ in 0..100 {
            let batch = stream.next().unwrap().unwrap();
            records += batch.iter().filter(|r| r.bytes("data").is_some()).count();
        }
        let allocated = tracking_alloc::allocations_all_threads() - before;
        assert_eq!(records, 10_000);
        assert_eq!(allocated, 0, "{options:?}: {allocated} allocations for 100 batches");
    }
}
