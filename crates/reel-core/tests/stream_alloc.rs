//! A stream whose consumer drops each batch before asking for the next allocates nothing
//! once its buffers have grown. Its own binary without the test harness (`harness = false`):
//! the count covers every thread, and libtest's own threads allocate while a test runs.
//!
//! "Once its buffers have grown" means every buffer that can be in circulation: the
//! read-ahead window full while the consumer holds a batch. A warm-up that only consumed
//! fast could leave the window's last buffer unborn until the first time the consumer
//! lagged behind; that buffer then grew (a few dozen allocations, once) inside the measured
//! window, depending on how fast the build's code ran.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "support/fixed.rs"]
mod fixed;
#[path = "support/tracking_alloc.rs"]
mod tracking_alloc;

#[global_allocator]
static GLOBAL: tracking_alloc::TrackingAllocator = tracking_alloc::TrackingAllocator;

use std::sync::Arc;

use reel_core::{BatchPlan, BatchStream, RecordSource, StreamOptions};

/// `order` in batches of `size`, over and over.
fn endless(order: Vec<u64>, size: usize) -> BatchPlan {
    let mut at = 0;
    BatchPlan::from_fn(move |out| {
        if at + size > order.len() {
            at = 0;
        }
        out.extend_from_slice(&order[at..at + size]);
        at += size;
        true
    })
    .batch_size_hint(size)
}

const WARM: usize = 400;
const MEASURED: usize = 1000;

fn main() {
    steady_state_allocates_nothing();
    println!("stream_alloc: steady state allocates nothing");
}

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
            BatchStream::new(source.clone(), endless(order.clone(), 100), &options).unwrap();
        // Warm up: hold a batch until the helpers have filled the whole window, so every
        // buffer that can circulate exists and has held a full batch; then run.
        if options.threads > 0 {
            let held = stream.next().unwrap().unwrap();
            let start = std::time::Instant::now();
            while stream.ready() < options.read_ahead {
                assert!(start.elapsed().as_secs() < 60, "{options:?}: the window never filled");
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            drop(held);
        }
        for _ in 0..WARM {
            assert_eq!(stream.next().unwrap().unwrap().len(), 100);
        }
        let before = tracking_alloc::allocations_all_threads();

        let mut records = 0;
        for _ in 0..MEASURED {
            let batch = stream.next().unwrap().unwrap();
            records += batch.iter().filter(|r| r.bytes("data").is_some()).count();
        }
        let allocated = tracking_alloc::allocations_all_threads() - before;
        assert_eq!(records, MEASURED * 100);
        assert_eq!(allocated, 0, "{options:?}: allocations in {MEASURED} steady-state batches");
    }
}
