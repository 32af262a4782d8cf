//! Prints each item of a Syrah file as reel reads it, one JSON line per item in the form of
//! `shared/tools/refread syrah` (offset, size and the decoded array or text), so the two
//! readers can be compared line by line.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use reel_core::testing::golden::{hex, sha256_hex};
use reel_core::{DType, RecordSourceExt, ValueRef};
use reel_syrah::SyrahReader;
use serde_json::{Value as Json, json};

fn values(dtype: DType, data: &[u8]) -> Option<Vec<Json>> {
    let size = dtype.item_size() as usize;
    let int = |c: &[u8]| -> Json {
        let mut b = [0u8; 8];
        b[..c.len()].copy_from_slice(c);
        let u = u64::from_le_bytes(b);
        match dtype {
            DType::Bool => json!(c[0] != 0),
            DType::I8 => json!(c[0] as i8),
            DType::I16 => json!(u as u16 as i16),
            DType::I32 => json!(u as u32 as i32),
            DType::I64 => json!(u as i64),
            _ => json!(u),
        }
    };
    match dtype {
        DType::F16 | DType::F32 | DType::F64 | DType::F128 => None,
        _ if data.len() / size <= 8 => Some(data.chunks_exact(size).map(int).collect()),
        _ => None,
    }
}

fn main() {
    let path = std::env::args().nth(1).expect("usage: syrah_dump FILE.syr");
    let r = SyrahReader::open(&path).unwrap();
    for i in 0..r.num_items() {
        let record = r.read(i).unwrap();
        let mut arrays = serde_json::Map::new();
        for (name, value) in record.iter() {
            let (_, loc) = r.array_location(i, name).unwrap();
            let decoded = match value {
                ValueRef::Str(s) => json!({ "value": s }),
                ValueRef::Array(a) => {
                    let mut d = serde_json::Map::new();
                    d.insert("shape".into(), json!(a.shape));
                    d.insert("sha256".into(), json!(sha256_hex(a.data)));
                    if a.data.len() <= 16 {
                        d.insert("hex".into(), json!(hex(a.data)));
                    }
                    if let Some(v) = values(a.dtype, a.data) {
                        d.insert("values".into(), json!(v));
                    }
                    Json::Object(d)
                }
                other => panic!("unexpected value {other:?}"),
            };
            arrays.insert(
                name.to_string(),
                json!({ "offset": loc.offset, "size": loc.size, "decoded": decoded }),
            );
        }
        println!("{}", json!({ "index": i, "arrays": arrays }));
    }
}
