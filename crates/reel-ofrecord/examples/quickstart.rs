//! What a program that depends on `reel-ofrecord` alone does: write a directory of part
//! files, read it back with typed accessors and in batches. CI checks that this file builds in
//! a crate whose only dependency is `reel-ofrecord`.
//!
//! ```text
//! cargo run -p reel-ofrecord --example quickstart
//! ```

use reel_ofrecord::prelude::*;

fn main() -> reel_ofrecord::core::Result<()> {
    let dir = std::env::temp_dir().join(format!("reel-ofrecord-quickstart-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("train");

    // Options are passed by reference everywhere; this one rolls to a new part every 40.
    let options = OfrecordWriterOptions::default().max_records_per_part(40);
    let mut writer = OfrecordWriter::create_with(&path, &options)?;
    for i in 0..100i32 {
        let mut record = Record::new();
        record.push_bytes("encoded", format!("image {i}").as_bytes());
        record.push_array("class/label", DType::I32, &[1], &(i % 10).to_le_bytes())?;
        writer.append(&record)?;
    }
    println!("wrote {} records in {} parts", writer.records(), writer.parts());
    writer.finish()?;

    let reader = OfrecordReader::open(&path)?;
    assert_eq!(reader.len(), 100);
    let record = reader.read(57)?;
    println!("record 57: {record:?}");
    assert_eq!(record.get_i32s("class/label")?, vec![7]);
    assert_eq!(record.get_bytes("encoded")?, b"image 57");

    for record in &reader.read_batch(&[99, 0])? {
        let label =
            record.get("class/label").and_then(|v| v.as_array()).and_then(|a| a.to_vec::<i32>());
        println!("record {}: label {label:?}", record.index());
    }

    std::fs::remove_dir_all(&dir)?;
    Ok(())
}
