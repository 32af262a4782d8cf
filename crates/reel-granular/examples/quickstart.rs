//! What a program that depends on `reel-granular` alone does: write a dataset in the
//! current layout, read it back whole, masked to some keys, and in batches. CI checks
//! that this file builds in a crate whose only dependency is `reel-granular`.
//!
//! ```text
//! cargo run -p reel-granular --example quickstart
//! ```

use reel_granular::prelude::*;

fn main() -> reel_granular::core::Result<()> {
    let dir = std::env::temp_dir().join(format!("reel-granular-quickstart-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("dataset");

    let spec = GranularSpec::new().with("text", "utf8").with("label", "int").with("id", "u64");
    let mut writer = GranularWriter::create(&path, &spec)?;
    for i in 0..1_000u64 {
        let mut record = Record::new().with_str("text", &format!("datapoint {i}"));
        record.push_int("label", (i % 7) as i64).push_uint("id", u64::MAX - i);
        writer.append(&record)?;
    }
    println!("wrote {} datapoints", writer.records());
    writer.finish()?;

    let reader = GranularReader::open(&path)?;
    assert_eq!(reader.len(), 1_000);
    let record = reader.read(3)?;
    println!("datapoint 3: {record:?}");
    assert_eq!(record.str("text"), Some("datapoint 3"));
    // An unsigned 64-bit field reads as one kind (`uint`) whatever its value.
    let id = record.get("id").ok_or_else(|| Error::new(ErrorKind::NotFound, "no id field"))?;
    assert_eq!((id.kind_name(), id.as_u64()), ("uint", Some(u64::MAX - 3)));

    let labels = reader.read_masked(10, &GranularMask::new().key("label"))?;
    assert_eq!(labels.get("label").and_then(|v| v.as_i64()), Some(3));

    for record in &reader.read_batch(&[999, 0])? {
        println!(
            "datapoint {}: {}",
            record.index(),
            record.get("text").map(|v| v.to_string()).unwrap_or_default()
        );
    }

    std::fs::remove_dir_all(&dir)?;
    Ok(())
}
