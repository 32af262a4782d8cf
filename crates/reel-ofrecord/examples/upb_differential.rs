//! Differential check of reel's OFRecord parser against upb, the protobuf runtime of
//! Python that wrote the golden files.
//!
//! ```text
//! cargo run -p reel-ofrecord --example upb_differential -- OUT_DIR
//! PYTHON tools/upb_differential.py OUT_DIR     # a Python with protobuf (upb backend)
//! ```
//!
//! The example damages sample records and golden payloads in many ways (every truncation,
//! bit flips, byte replacements, inserted tag bytes), writes them as one part file
//! (`cases.bin`) and reel's reading of each as JSON lines (`reel.jsonl`); the script parses
//! every payload with upb and reports each case where the two disagree. (`refread` builds
//! such a Python on first use: `$TMPDIR/reel-refread/ofrecord/bin/python`.)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../tests/support/mod.rs"]
mod support;

use std::io::Write;
use std::path::PathBuf;

use reel_core::RecordSource;
use reel_ofrecord::{FeatureRef, OfrecordFeatures, OfrecordReader, decode_record, encode_record};

fn canon(payload: &[u8]) -> serde_json::Value {
    match decode_record(payload) {
        Err(_) => serde_json::json!({"err": "x"}),
        Ok(r) => {
            let mut m = serde_json::Map::new();
            for (name, _) in r.iter() {
                let f = r.feature(name).unwrap();
                let v = match f {
                    FeatureRef::NoKind => serde_json::Value::Null,
                    FeatureRef::BytesList(l) => serde_json::json!([
                        "bytes_list",
                        l.iter().map(|v| hex(v.as_bytes().unwrap())).collect::<Vec<_>>()
                    ]),
                    FeatureRef::FloatList(a) => serde_json::json!(["float_list", hex(a.data)]),
                    FeatureRef::DoubleList(a) => serde_json::json!(["double_list", hex(a.data)]),
                    FeatureRef::Int32List(a) => serde_json::json!(["int32_list", hex(a.data)]),
                    FeatureRef::Int64List(a) => serde_json::json!(["int64_list", hex(a.data)]),
                };
                m.insert(name.to_string(), v);
            }
            serde_json::json!({"ok": m})
        }
    }
}
fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn main() {
    let out = PathBuf::from(std::env::args().nth(1).expect("usage: upb_differential OUT_DIR"));
    std::fs::create_dir_all(&out).unwrap();
    let mut bases: Vec<Vec<u8>> = (0..12)
        .map(|i| encode_record(support::sample(i).view(), Default::default()).unwrap())
        .collect();
    let golden = reel_core::testing::golden::golden_root().join("ofrecord");
    for d in ["normal", "empty_features", "one_record", "corrupt/record_tag_flip"] {
        if let Ok(r) = OfrecordReader::open(golden.join(d)) {
            for i in 0..r.len().min(8) {
                bases.push(r.read_serialized(i).unwrap());
            }
        }
    }
    let mut cases: Vec<Vec<u8>> = Vec::new();
    let mut state = 12345u64;
    let mut rnd = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    const TAGS: [u8; 12] = [0x0b, 0x0c, 0x13, 0x1a, 0x22, 0x0d, 0x09, 0x18, 0x80, 0xff, 0x0a, 0x12];
    for b in &bases {
        cases.push(b.clone());
        for l in 0..b.len() {
            cases.push(b[..l].to_vec());
        }
        for i in 0..b.len() {
            let mut p = b.clone();
            p[i] ^= 0xff;
            cases.push(p);
            if b.len() <= 300 {
                for bit in 0..8 {
                    let mut p = b.clone();
                    p[i] ^= 1 << bit;
                    cases.push(p);
                }
            }
        }
        if b.is_empty() {
            continue;
        }
        for _ in 0..300 {
            let mut p = b.clone();
            for _ in 0..(rnd() % 3 + 1) {
                let i = (rnd() as usize) % p.len();
                p[i] = rnd() as u8;
            }
            cases.push(p);
            let mut p = b.clone();
            let i = (rnd() as usize) % (p.len() + 1);
            p.insert(i, TAGS[(rnd() % 12) as usize]);
            cases.push(p);
        }
    }
    let mut bin = std::fs::File::create(out.join("cases.bin")).unwrap();
    let mut ours = std::fs::File::create(out.join("reel.jsonl")).unwrap();
    for c in &cases {
        bin.write_all(&(c.len() as i64).to_le_bytes()).unwrap();
        bin.write_all(c).unwrap();
        writeln!(ours, "{}", canon(c)).unwrap();
    }
    println!("wrote {} cases to {}", cases.len(), out.display());
}
