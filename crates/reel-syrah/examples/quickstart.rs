//! What a program that depends on `reel-syrah` alone does: write items of named arrays,
//! read them back whole, one array at a time, and in batches. CI checks that this file builds
//! in a crate whose only dependency is `reel-syrah`.
//!
//! ```text
//! cargo run -p reel-syrah --example quickstart
//! ```

use reel_syrah::prelude::*;

fn main() -> reel_syrah::core::Result<()> {
    let dir = std::env::temp_dir().join(format!("reel-syrah-quickstart-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("data.syr");

    let mut writer = SyrahWriter::create(&path)?;
    for i in 0..100i32 {
        let mut item = Record::new();
        item.push_array("label", DType::I32, &[1], &i.to_le_bytes())?;
        let features: Vec<u8> =
            (0..4).flat_map(|k| (i as f32 + k as f32 / 4.0).to_le_bytes()).collect();
        item.push_array("features", DType::F32, &[4], &features)?;
        item.push_str("caption", &format!("item number {i}"));
        writer.append(&item)?; // `add_item`, the reference's name, does the same
    }
    println!("wrote {} items", writer.records());
    writer.finish()?;

    let reader = SyrahReader::open(&path)?;
    assert_eq!(reader.len(), 100);
    let item = reader.read(7)?;
    println!("item 7: {item:?}");
    let features = item.get("features").and_then(|v| v.as_array());
    assert_eq!(features.and_then(|a| a.to_vec::<f32>()), Some(vec![7.0, 7.25, 7.5, 7.75]));
    assert_eq!(item.str("caption"), Some("item number 7"));

    // One array without reading the rest of the item.
    let label = reader.get_array(42, "label")?;
    assert_eq!(
        label.get("label").and_then(|v| v.as_array()).and_then(|a| a.to_vec::<i32>()),
        Some(vec![42])
    );

    for record in &reader.read_batch(&[3, 1])? {
        println!("item {}: {}", record.index(), record.str("caption").unwrap_or_default());
    }

    std::fs::remove_dir_all(&dir)?;
    Ok(())
}
