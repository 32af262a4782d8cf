//! Writes a Syrah file holding every dtype the reference names (including `str` from a
//! numpy-style unicode array, `float128`, empty and multi-dimensional arrays, items that
//! list their arrays in different orders). Compare how reel and the reference read it:
//!
//! ```text
//! cargo run -p reel-syrah --example syrah_sample -- /tmp/sample.syr
//! cargo run -p reel-syrah --example syrah_dump -- /tmp/sample.syr > reel.jsonl
//! /path/to/refread syrah /tmp/sample.syr > reference.jsonl
//! diff reel.jsonl reference.jsonl
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use reel_core::{DType, Record};
use reel_syrah::SyrahWriter;

/// Deterministic bytes (a small xorshift), so the sample is the same on every run.
fn bytes(seed: u64, n: usize) -> Vec<u8> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s as u8
        })
        .collect()
}

fn unicode(values: &[&str]) -> (u32, Vec<u8>) {
    let n = values.iter().map(|v| v.chars().count()).max().unwrap_or(0).max(1);
    let mut data = Vec::new();
    for v in values {
        let mut points: Vec<u32> = v.chars().map(u32::from).collect();
        points.resize(n, 0);
        points.iter().for_each(|p| data.extend_from_slice(&p.to_le_bytes()));
    }
    (n as u32, data)
}

fn item(i: u64) -> Record {
    let dtypes = [
        ("b", DType::Bool),
        ("i8", DType::I8),
        ("u8", DType::U8),
        ("i16", DType::I16),
        ("u16", DType::U16),
        ("i32", DType::I32),
        ("u32", DType::U32),
        ("i64", DType::I64),
        ("u64", DType::U64),
        ("f16", DType::F16),
        ("f32", DType::F32),
        ("f64", DType::F64),
        ("f128", DType::F128),
    ];
    let mut r = Record::new();
    // Every other item lists its arrays in reverse: the metadata keeps the first item's
    // order, the data follows each item's own.
    let order: Vec<usize> = if i.is_multiple_of(2) {
        (0..=dtypes.len()).collect()
    } else {
        (0..=dtypes.len()).rev().collect()
    };
    for k in order {
        if k == dtypes.len() {
            let words = [["héllo", "wörld", "🎉"], ["", "tab\t", "x"], ["", "", ""]];
            let (n, data) = unicode(&words[i as usize % 3]);
            r.push_array("text", DType::Unicode(n), &[3], &data).unwrap();
            continue;
        }
        let (name, dt) = dtypes[k];
        let count = (i as usize * 3 + k) % 7;
        let mut data = bytes(i * 100 + k as u64, count * dt.item_size() as usize);
        if dt == DType::Bool {
            data.iter_mut().for_each(|b| *b &= 1);
        }
        if count == 6 {
            r.push_array(name, dt, &[2, 3], &data).unwrap();
        } else {
            r.push_array(name, dt, &[count as u64], &data).unwrap();
        }
    }
    r
}

fn main() -> reel_core::Result<()> {
    let path = std::env::args().nth(1).expect("usage: syrah_sample OUT.syr");
    let mut w = SyrahWriter::create(&path)?;
    for i in 0..9 {
        w.add_item(&item(i))?;
    }
    let summary = w.finish()?;
    println!("{} items, {} bytes", summary.records, summary.bytes);
    Ok(())
}
