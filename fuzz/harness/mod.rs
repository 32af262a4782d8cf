//! What each fuzz target does with its input. Shared by the cargo-fuzz targets (nightly)
//! and by `tests/fuzz_replay.rs` in the main workspace (stable), which replays every file
//! under `fuzz/regressions/<target>/` and `fuzz/seeds/<target>/` on every `cargo test`.
//!
//! Every function takes arbitrary bytes and must return normally: a panic here is a bug
//! in reel (or a violated invariant such as "a batch equals one-by-one reads").
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

pub mod arrow;
pub mod dir;
pub mod ffrecord;
pub mod granular;
pub mod gulp;
pub mod input;
pub mod ofrecord;
pub mod payload;
pub mod syrah;

use reel::{Limits, RecordBatch, RecordSource, RecordSourceExt};

/// What a target does with one input.
pub type Target = fn(&[u8]);

/// The targets, for the replay test.
pub const TARGETS: &[(&str, Target)] = &[
    ("ffrecord_file", ffrecord::ffrecord_file),
    ("ffrecord_pickle", ffrecord::ffrecord_pickle),
    ("ffrecord_roundtrip", ffrecord::ffrecord_roundtrip),
    ("syrah_file", syrah::syrah_file),
    ("syrah_roundtrip", syrah::syrah_roundtrip),
    ("ofrecord_frames", ofrecord::ofrecord_frames),
    ("ofrecord_protobuf", ofrecord::ofrecord_protobuf),
    ("ofrecord_roundtrip", ofrecord::ofrecord_roundtrip),
    ("granular_bag", granular::granular_bag),
    ("granular_dataset", granular::granular_dataset),
    ("granular_codecs", granular::granular_codecs),
    ("granular_roundtrip", granular::granular_roundtrip),
    ("gulp_meta", gulp::gulp_meta),
    ("gulp_chunk", gulp::gulp_chunk),
    ("gulp_roundtrip", gulp::gulp_roundtrip),
    ("backends_agree", dir::backends_agree),
    ("open_dir", dir::open_dir),
    ("payload_pickle", payload::payload_pickle),
    ("arrow_file", arrow::arrow_file),
];

/// Limits small enough that a fuzz input cannot make a run slow or large.
pub fn limits() -> Limits {
    let mut l = Limits::strict();
    l.max_record_bytes = 16 << 20;
    l.max_batch_bytes = 64 << 20;
    l.max_records = 1 << 20;
    l.max_metadata_bytes = 16 << 20;
    l.max_decoded_bytes = 16 << 20;
    l
}

/// Reads every record (up to a cap) one by one and in one batch, and checks that both
/// agree: same records where reads succeed, an error in the batch iff some record fails.
pub fn exercise(source: &dyn RecordSource) {
    let n = source.len().min(2_000);
    let mut singles = Vec::with_capacity(n as usize);
    for i in 0..n {
        singles.push(source.read(i).map_err(|e| e.kind()));
    }
    let all: Vec<u64> = (0..n).collect();
    let mut batch = RecordBatch::new();
    match source.read_batch_into(&all, &mut batch) {
        Ok(()) => {
            assert_eq!(batch.len() as u64, n);
            for (k, r) in batch.iter().enumerate() {
                let single =
                    singles[k].as_ref().expect("a record failing alone read fine in a batch");
                assert!(r == single.view(), "record {k}: batch and single reads differ");
            }
        }
        Err(e) => {
            assert!(batch.is_empty());
            assert!(
                singles.iter().any(|s| s.as_ref().err() == Some(&e.kind())),
                "batch error {e} matches no single read"
            );
        }
    }
    // Out-of-range reads are errors, never panics.
    assert!(source.read(source.len()).is_err());
    let _ = source.info().facts.len();
}
