//! What a program that depends on `reel-ffrecord` alone does: write 10,000 records, read
//! them back one by one and in batches. CI checks that this file builds in a crate whose only
//! dependency is `reel-ffrecord`, so the crate's own API is enough for it.
//!
//! ```text
//! cargo run -p reel-ffrecord --example quickstart
//! ```

use reel_ffrecord::prelude::*;

fn main() -> reel_ffrecord::core::Result<()> {
    let dir = std::env::temp_dir().join(format!("reel-ffrecord-quickstart-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("data.ffr");

    // Write: every writer of every format has `append(&record)`, `records()` and `finish()`.
    let mut writer = FfrecordWriter::create_counted(&path)?;
    for i in 0..10_000u32 {
        writer.append(&Record::from_bytes(format!("record {i}").as_bytes()))?;
    }
    writer.write_one(b"the last one")?; // the reference's name, for raw bytes
    println!("wrote {} records", writer.records());
    writer.finish()?;

    // Read: `len` and `read` come from the traits in the prelude.
    let reader = FfrecordReader::open(&path)?;
    assert_eq!(reader.len(), 10_001);
    let first = reader.read(0)?;
    println!("record 0: {first:?}");
    assert_eq!(first.bytes("data"), Some(&b"record 0"[..]));

    let batch = reader.read_batch(&[9_999, 10_000, 5])?;
    for record in &batch {
        let text = String::from_utf8_lossy(record.bytes("data").unwrap_or_default());
        println!("record {}: {text}", record.index());
    }

    // Errors name the format, the file and the record, and have a kind to match on.
    match reader.read(20_000) {
        Err(e) if e.kind() == ErrorKind::OutOfRange => println!("as expected: {e}"),
        other => {
            let what = format!("expected an out-of-range error, got {other:?}");
            return Err(reel_ffrecord::core::Error::invalid_input(what));
        }
    }

    std::fs::remove_dir_all(&dir)?;
    Ok(())
}
