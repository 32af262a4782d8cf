//! In the steady state a loader step allocates nothing: batch buffers go back to the
//! workers when the consumer drops them, and every other buffer is reused. The counter is
//! process-wide (workers allocate on their own threads), so this binary holds one test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use reel_core::Backend;
use reel_ffrecord::{FfrecordOptions, FfrecordReader, dump};
use reel_loader::{Loader, Shuffle, copy_fields};

#[path = "../../reel-core/tests/support/tracking_alloc.rs"]
mod tracking_alloc;

#[global_allocator]
static GLOBAL: tracking_alloc::TrackingAllocator = tracking_alloc::TrackingAllocator;

/// Batches the workers read ahead.
const PREFETCH: usize = 4;

#[test]
fn steady_state_steps_do_not_allocate() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.ffr");
    let records: Vec<Vec<u8>> = (0..12_000u32).map(|i| vec![i as u8; 256]).collect();
    dump(&records, &path, 1).unwrap();
    let configs =
        [(0, Shuffle::Feistel, false), (3, Shuffle::Feistel, false), (2, Shuffle::Granular, true)];
    for (workers, shuffle, consumer_helps) in configs {
        let reader =
            FfrecordReader::open_with(&path, &FfrecordOptions::default().backend(Backend::Memory))
                .unwrap();
        let mut loader = Loader::builder(reader)
            .batch_size(32)
            .shuffle(shuffle)
            .workers(workers)
            .prefetch(PREFETCH)
            .consumer_helps(consumer_helps)
            .endless()
            .map(|record, out, _| {
                copy_fields(record, out);
                Ok(())
            })
            .build()
            .unwrap();
        // Warm up: let the workers fill the whole prefetch window while the consumer holds
        // a batch, so that every buffer that can be in circulation exists and has grown
        // to a full batch; then consume fast, so that a consumer that helps has read
        // steps itself and its own buffers have grown too. Everything stays within epoch
        // 0 (375 steps): a new epoch in Granular mode computes its permutation table.
        for _ in 0..10 {
            let held = loader.next().unwrap().unwrap();
            // Wait (bounded) for the window to fill rather than sleep: a loaded machine may
            // not run the workers for a while.
            let start = std::time::Instant::now();
            while workers > 0 && loader.ready() < PREFETCH {
                assert!(start.elapsed() < std::time::Duration::from_secs(60), "never filled");
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            assert_eq!(held.len(), 32);
        }
        for _ in 0..200 {
            assert_eq!(loader.next().unwrap().unwrap().len(), 32);
        }
        let before = tracking_alloc::allocations_all_threads();
        let mut bytes = 0;
        for _ in 0..60 {
            let batch = loader.next().unwrap().unwrap();
            bytes += batch.iter().map(|r| r.bytes("data").unwrap().len()).sum::<usize>();
        }
        let allocated = tracking_alloc::allocations_all_threads() - before;
        assert_eq!(bytes, 60 * 32 * 256);
        assert_eq!(
            allocated, 0,
            "{workers} workers, {shuffle:?}, consumer helps: {consumer_helps}: steady-state \
             steps allocated"
        );
    }
}
