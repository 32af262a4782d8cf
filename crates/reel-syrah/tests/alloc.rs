//! A reused `RecordBatch` (and `Record`) costs no allocation once warm, on every backend,
//! for whole items and for selected arrays.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use reel_core::{Backend, DType, Record, RecordBatch, RecordSource};
use reel_syrah::{SyrahOptions, SyrahReader, SyrahWriter};

#[path = "../../reel-core/tests/support/tracking_alloc.rs"]
mod tracking_alloc;

#[global_allocator]
static GLOBAL: tracking_alloc::TrackingAllocator = tracking_alloc::TrackingAllocator;

#[test]
fn steady_state_batches_do_not_allocate() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("x.syr");
    let mut w = SyrahWriter::create(&p).unwrap();
    for i in 0..300u32 {
        let mut r = Record::new();
        let n = (i as usize * 13) % 50;
        let data: Vec<u8> = (0..n * 4).map(|b| b as u8).collect();
        r.push_array("x", DType::F32, &[n as u64], &data).unwrap();
        r.push_str("label", &"ab".repeat(i as usize % 7));
        r.push_array("id", DType::U32, &[1], &i.to_le_bytes()).unwrap();
        w.add_item(&r).unwrap();
    }
    w.finish().unwrap();
    for backend in Backend::core_backends() {
        let r =
            SyrahReader::open_with(&p, &SyrahOptions::default().backend(backend.clone())).unwrap();
        let batches: Vec<Vec<u64>> =
            (0..40u64).map(|b| (0..64).map(|k| (b * 97 + k * 31) % 300).collect()).collect();
        let mut batch = RecordBatch::new();
        let mut record = Record::new();
        let names = ["id", "x"];
        let run = |batch: &mut RecordBatch, record: &mut Record| {
            for idx in &batches {
                r.read_batch_into(idx, batch).unwrap();
                assert_eq!(batch.len(), idx.len());
                r.read_batch_arrays_into(idx, &names, batch).unwrap();
            }
            for i in 0..300 {
                r.read_into(i, record).unwrap();
                r.read_arrays_into(i, &names, record).unwrap();
            }
        };
        run(&mut batch, &mut record);
        let before = tracking_alloc::allocations();
        run(&mut batch, &mut record);
        assert_eq!(
            tracking_alloc::allocations() - before,
            0,
            "{}: steady-state reads allocated",
            backend.name()
        );
    }
}
