//! Reading scalar fields (bytes, text, integers) allocates nothing once a reused batch or
//! record has grown: values are spans of the read, index tables and refs are in memory.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use reel_core::{Backend, Record, RecordBatch, RecordSource};
use reel_granular::{
    BagsWriter, GranularOptions, GranularReader, GranularSpec, GranularWriter, RefsFlavor,
};

#[path = "../../reel-core/tests/support/tracking_alloc.rs"]
mod tracking_alloc;

#[global_allocator]
static GLOBAL: tracking_alloc::TrackingAllocator = tracking_alloc::TrackingAllocator;

#[test]
fn steady_state_reads_do_not_allocate() {
    let tmp = tempfile::tempdir().unwrap();
    let spec = GranularSpec::new()
        .with("blob", "bytes")
        .with("text", "utf8")
        .with("small", "int")
        .with("wide", "i64");
    let current = tmp.path().join("current");
    let bags = tmp.path().join("bags");
    let mut w = GranularWriter::create(&current, &spec).unwrap();
    let mut b =
        BagsWriter::create(&bags, &spec.clone().with("wide", "int"), RefsFlavor::Bags051).unwrap();
    for i in 0..300i64 {
        let r = reel_core::Record::new()
            .with_bytes("blob", &vec![i as u8; (i as usize * 7) % 200])
            .with_str("text", &"é".repeat(i as usize % 30))
            .with_int("small", i)
            .with_int("wide", i * 1000);
        w.append(r.view()).unwrap();
        b.append(r.view()).unwrap();
    }
    w.finish().unwrap();
    b.finish().unwrap();
    for dir in [&current, &bags] {
        for backend in Backend::core_backends() {
            let r = GranularReader::open_with(
                dir,
                &GranularOptions::default().backend(backend.clone()),
            )
            .unwrap();
            let batches: Vec<Vec<u64>> =
                (0..40u64).map(|k| (0..32).map(|j| (k * 53 + j * 17) % 300).collect()).collect();
            let mut batch = RecordBatch::new();
            let mut record = Record::new();
            for idx in &batches {
                r.read_batch_into(idx, &mut batch).unwrap();
            }
            for i in 0..300 {
                r.read_into(i, &mut record).unwrap();
            }
            let before = tracking_alloc::allocations();
            for idx in &batches {
                r.read_batch_into(idx, &mut batch).unwrap();
                assert_eq!(batch.len(), idx.len());
            }
            for i in 0..300 {
                r.read_into(i, &mut record).unwrap();
            }
            assert_eq!(
                tracking_alloc::allocations() - before,
                0,
                "{} {}: steady-state reads allocated",
                dir.display(),
                backend.name()
            );
        }
    }
}
