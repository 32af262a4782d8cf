//! Trains (pretends to) on a shuffled FFRecord dataset with two data-parallel ranks,
//! "crashes" half-way through the second epoch, and resumes from the saved state — on a
//! different number of ranks — without repeating or skipping a record.
//!
//! Run: `cargo run -p reel --example resumable_loader`
#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;
use std::sync::Arc;

use reel::ffrecord::FfrecordWriter;
use reel::{Loader, LoaderBuilder, LoaderState, RecordSource, Shuffle};

fn main() -> reel::Result<()> {
    let dir = std::env::temp_dir().join(format!("reel-loader-example-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| reel::Error::io(e, "cannot create temp dir"))?;
    let path = dir.join("train.ffr");
    let mut writer = FfrecordWriter::create_counted(&path)?;
    for i in 0..100u32 {
        writer.write_one(format!("sample {i:03}").as_bytes())?;
    }
    writer.finish()?;

    // Any format works: the loader takes any RecordSource.
    let source: Arc<dyn RecordSource> = Arc::from(reel::open(&path)?);
    let config = |rank: u64, world: u64| {
        LoaderBuilder::new(source.clone())
            .batch_size(8)
            .shuffle(Shuffle::Feistel)
            .seed(2024)
            .epochs(2)
            .shard(rank, world)
            .workers(2)
    };

    // Two ranks (here in one process, one after the other) run until step 3 of epoch 1.
    let mut checkpoint = None;
    let mut epoch1_seen = BTreeSet::new();
    for rank in 0..2 {
        let mut loader = config(rank, 2).build()?;
        println!("rank {rank}: {:?} steps per epoch", loader.steps_per_epoch());
        for batch in &mut loader {
            let batch = batch?;
            if batch.epoch() == 1 {
                epoch1_seen.extend(batch.indices());
            }
            if batch.epoch() == 1 && batch.step() == 2 {
                // Every rank saves the same state: it counts global positions.
                checkpoint = Some(batch.resume_state().to_json());
                break;
            }
        }
    }
    let checkpoint = checkpoint.unwrap();
    println!("crashed; checkpoint: {checkpoint}");

    // Resume on three ranks. Nothing before the checkpoint is read again.
    let state = LoaderState::from_json(&checkpoint)?;
    for rank in 0..3 {
        let loader: Loader = config(rank, 3).resume(state.clone()).build()?;
        for batch in loader {
            let batch = batch?;
            let texts: Vec<String> = batch
                .iter()
                .map(|r| String::from_utf8_lossy(r.bytes("data").unwrap_or_default()).into_owned())
                .collect();
            println!("rank {rank} of 3, epoch {} step {}: {texts:?}", batch.epoch(), batch.step());
            for index in batch.indices() {
                assert!(epoch1_seen.insert(index), "record {index} was read twice in epoch 1");
            }
        }
    }
    assert_eq!(epoch1_seen.len(), 100, "every record is read exactly once in epoch 1");
    println!("epoch 1 covered all {} records exactly once across the restart", epoch1_seen.len());
    std::fs::remove_dir_all(&dir).map_err(|e| reel::Error::io(e, "cannot clean up"))?;
    Ok(())
}
