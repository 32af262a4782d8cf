//! Reading scalar fields (bytes, text, integers) allocates nothing once a reused batch or
//! record has grown: values are spans of the read, index tables and refs are in memory.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use reel_core::{Backend, Record, RecordBatch, RecordSource};
use reel_granular::{
    BagsWriter, GranularOptions, GranularReader, GranularSpec, GranularWriter, RefsFlavor,
};

struct Counting;

thread_local! {
    static COUNT: Cell<u64> = const { Cell::new(0) };
}

// SAFETY: forwards to the system allocator; only counts calls made on the current thread.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        COUNT.with(|c| c.set(c.get() + 1));
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        COUNT.with(|c| c.set(c.get() + 1));
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations() -> u64 {
    COUNT.with(Cell::get)
}

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
            let before = allocations();
            for idx in &batches {
                r.read_batch_into(idx, &mut batch).unwrap();
                assert_eq!(batch.len(), idx.len());
            }
            for i in 0..300 {
                r.read_into(i, &mut record).unwrap();
            }
            assert_eq!(
                allocations() - before,
                0,
                "{} {}: steady-state reads allocated",
                dir.display(),
                backend.name()
            );
        }
    }
}
