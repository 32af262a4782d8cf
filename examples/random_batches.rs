//! Writes a small FFRecord dataset, then reads it back in random batches through the
//! generic `reel::open` API, reusing one batch buffer.
//!
//! Run: `cargo run --example random_batches`
#![allow(clippy::unwrap_used)]

use reel::ffrecord::FfrecordWriter;
use reel::{RecordBatch, RecordSourceExt};

fn main() -> reel::Result<()> {
    let dir = std::env::temp_dir().join(format!("reel-example-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| reel::Error::io(e, "cannot create temp dir"))?;
    let path = dir.join("example.ffr");

    let mut writer = FfrecordWriter::create_counted(&path)?;
    for i in 0..1000u32 {
        writer.write_one(format!("record number {i}").as_bytes())?;
    }
    let summary = writer.finish()?;
    println!("wrote {} records, {} bytes", summary.records, summary.bytes);

    let source = reel::open(&path)?;
    let mut batch = RecordBatch::new();
    let mut state = 12345u64;
    for round in 0..3 {
        let indices: Vec<u64> = (0..8)
            .map(|_| {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                (state >> 33) % source.len()
            })
            .collect();
        source.read_batch_into(&indices, &mut batch)?;
        let texts: Vec<String> = batch
            .iter()
            .map(|r| String::from_utf8_lossy(r.bytes("data").unwrap_or_default()).into_owned())
            .collect();
        println!("batch {round}: {texts:?}");
    }
    let first = source.read(0)?;
    println!(
        "record 0 has fields {:?}",
        first.iter().map(|(n, v)| (n, v.kind_name())).collect::<Vec<_>>()
    );
    std::fs::remove_dir_all(&dir).map_err(|e| reel::Error::io(e, "cannot clean up"))?;
    Ok(())
}
