//! Writes one dataset of every layout reel can write into a directory, for checking that
//! the reference implementations read reel's output:
//!
//! ```text
//! cargo run -p reel-granular --example write_datasets -- /tmp/out
//! refread granular /tmp/out/current      refread granular /tmp/out/sharded
//! refread bags /tmp/out/bags             refread granular /tmp/out/current/text.bag
//! ```

use std::path::PathBuf;

use reel_core::{DType, Record, Value};
use reel_granular::{
    BagsWriter, GranularSpec, GranularWriter, RefsFlavor, ShardedWriter, ShardedWriterOptions,
};

fn main() -> reel_core::Result<()> {
    let out = PathBuf::from(std::env::args().nth(1).unwrap_or_else(|| "granular-samples".into()));
    std::fs::create_dir_all(&out)?;

    // The current layout with every deterministic codec, including integers granular's own
    // encoder rejects (128, -5) but reads back.
    let spec = GranularSpec::new()
        .with("text", "utf8")
        .with("blob", "bytes")
        .with("small", "int")
        .with("wide", "i64")
        .with("big", "u64")
        .with("vec", "array")
        .with("meta", "msgpack")
        .with("tree", "tree");
    let mut w = GranularWriter::create(out.join("current"), &spec)?;
    for i in 0..20i64 {
        let mut r = Record::new()
            .with_str("text", &format!("héllo {i} 😀"))
            .with_bytes("blob", &vec![i as u8; i as usize])
            .with_int("small", [0, 7, 127, 128, 300, -5, 65536][i as usize % 7])
            .with_int("wide", -i * 1_000_000_007)
            .push_uint("big", u64::MAX - i as u64)
            .clone();
        let floats: Vec<u8> = (0..i).flat_map(|k| (k as f32 * 0.5).to_le_bytes()).collect();
        r.push_array("vec", DType::F32, &[i as u64], &floats)?;
        let mut o = r.out();
        let (k1, v1, k2) =
            (o.append_str("name"), o.append_str(&format!("n{i}")), o.append_str("list"));
        let meta = Value::Map(vec![
            (k1.clone(), v1),
            (
                k2.clone(),
                Value::List(vec![
                    Value::Int(i),
                    Value::Float(i as f64 / 3.0),
                    Value::Null,
                    Value::Bool(i % 2 == 0),
                ]),
            ),
        ]);
        o.push("meta".into(), meta);
        let pixels = o.append(&[i as u8, 1, 2, 3]);
        let arr = o.array_value(DType::U8, reel_core::Shape::new(&[2, 2]), pixels)?;
        o.push("tree".into(), Value::Map(vec![(k1, Value::Int(i)), (k2, Value::List(vec![arr]))]));
        w.append(r.view())?;
    }
    w.finish()?;

    // A sharded root of the current layout.
    let spec = GranularSpec::new().with("n", "i64").with("text", "utf8");
    let mut w = ShardedWriter::create(
        out.join("sharded"),
        &spec,
        &ShardedWriterOptions::default().shard_len(3),
    )?;
    for i in 0..8 {
        w.append(Record::new().with_int("n", i).with_str("text", &format!("t{i}")).view())?;
    }
    w.finish()?;

    // bags 0.5.1: sequences, raw arrays, unsigned ints (0 as an empty record).
    let spec = GranularSpec::new()
        .with("label", "int")
        .with("words", "utf8[]")
        .with("vec", "array(uint8,2)")
        .with("meta", "msgpack");
    let mut w = BagsWriter::create(out.join("bags"), &spec, RefsFlavor::Bags051)?;
    for i in 0..6u8 {
        let mut r = Record::new().with_int("label", i64::from(i) * 100);
        r.push_array("vec", DType::U8, &[2], &[i, i + 1])?;
        let mut o = r.out();
        let words = (0..i % 3).map(|k| o.append_str(&format!("w{i}.{k}"))).collect();
        o.push("words".into(), Value::List(words));
        let m = o.append_str("meta");
        o.push("meta".into(), Value::Map(vec![(m, Value::Int(i64::from(i)))]));
        w.append(r.view())?;
    }
    w.finish()?;

    // granular 0.20–0.21: single-file v2 bags.
    let spec = GranularSpec::new().with("label", "int").with("words", "utf8[]");
    let mut w = BagsWriter::create(out.join("v2"), &spec, RefsFlavor::Granular021)?;
    for i in 0..4i64 {
        let mut r = Record::new().with_int("label", i * 1000 + 1);
        let mut o = r.out();
        let words = (0..i).map(|k| o.append_str(&format!("x{k}"))).collect();
        o.push("words".into(), Value::List(words));
        w.append(r.view())?;
    }
    w.finish()?;
    println!("wrote {}", out.display());
    Ok(())
}
