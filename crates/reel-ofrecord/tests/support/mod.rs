//! Helpers shared by this crate's tests: a tiny protobuf wire builder (to write the
//! encodings a writer would not, such as unpacked lists, repeated keys and unknown
//! fields) and sample records.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use reel_core::{DType, Record, Value};

/// Builds protobuf bytes field by field.
#[derive(Clone, Default, Debug)]
pub struct Wire(pub Vec<u8>);

impl Wire {
    pub fn new() -> Self {
        Wire(Vec::new())
    }

    pub fn varint(mut self, v: u64) -> Self {
        let mut v = v;
        while v >= 0x80 {
            self.0.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
        self
    }

    pub fn tag(self, field: u32, wire: u32) -> Self {
        self.varint(u64::from(field << 3 | wire))
    }

    pub fn len_field(self, field: u32, bytes: &[u8]) -> Self {
        let mut w = self.tag(field, 2).varint(bytes.len() as u64);
        w.0.extend_from_slice(bytes);
        w
    }

    pub fn varint_field(self, field: u32, v: u64) -> Self {
        self.tag(field, 0).varint(v)
    }

    pub fn fixed32_field(self, field: u32, v: [u8; 4]) -> Self {
        let mut w = self.tag(field, 5);
        w.0.extend_from_slice(&v);
        w
    }

    pub fn fixed64_field(self, field: u32, v: [u8; 8]) -> Self {
        let mut w = self.tag(field, 1);
        w.0.extend_from_slice(&v);
        w
    }

    pub fn raw(mut self, bytes: &[u8]) -> Self {
        self.0.extend_from_slice(bytes);
        self
    }

    pub fn bytes(&self) -> &[u8] {
        &self.0
    }
}

/// A map entry `{key, value: feature}`.
pub fn entry(key: &str, feature: &[u8]) -> Vec<u8> {
    Wire::new().len_field(1, key.as_bytes()).len_field(2, feature).0
}

/// A record of the given entries.
pub fn record(entries: &[Vec<u8>]) -> Vec<u8> {
    entries.iter().fold(Wire::new(), |w, e| w.len_field(1, e)).0
}

/// A feature holding list message `list` as member `kind` (1–5).
pub fn feature(kind: u32, list: &[u8]) -> Vec<u8> {
    Wire::new().len_field(kind, list).0
}

/// A frame: i64 little-endian length + payload.
pub fn frame(payload: &[u8]) -> Vec<u8> {
    let mut out = (payload.len() as i64).to_le_bytes().to_vec();
    out.extend_from_slice(payload);
    out
}

/// A record with every kind of feature, varying with `i`, in the form the reader returns
/// (fields in key order, byte strings as lists).
pub fn sample(i: u64) -> Record {
    let mut r = Record::new();
    r.push_array("class/label", DType::I32, &[1], &((i as i32) * 7 - 20).to_le_bytes()).unwrap();
    let n = i % 9;
    let d: Vec<u8> = (0..n % 4).flat_map(|k| (k as f64 / 3.0).to_le_bytes()).collect();
    r.push_array("d", DType::F64, &[n % 4], &d).unwrap();
    let img: Vec<u8> = (0..(i * 37 % 500)).map(|k| (k * 7 + i) as u8).collect();
    push_bytes_list(&mut r, "encoded", &[&img]);
    let f: Vec<u8> = (0..n).flat_map(|k| (k as f32 * 1.5 - i as f32).to_le_bytes()).collect();
    r.push_array("f", DType::F32, &[n], &f).unwrap();
    let l: Vec<u8> = [i as i64, -(i as i64) << 33].iter().flat_map(|x| x.to_le_bytes()).collect();
    r.push_array("id", DType::I64, &[2], &l).unwrap();
    if i.is_multiple_of(3) {
        r.push_null("no_kind");
    }
    if i % 4 == 1 {
        push_bytes_list(&mut r, "texts", &[b"", "текст".as_bytes()]);
    }
    r
}

/// Adds a `bytes_list` feature (a list of `Bytes` values).
pub fn push_bytes_list(r: &mut Record, name: &str, values: &[&[u8]]) {
    let mut out = r.out();
    let items = values.iter().map(|v| Value::Bytes(out.append(v))).collect();
    out.push(name.into(), Value::List(items));
}
