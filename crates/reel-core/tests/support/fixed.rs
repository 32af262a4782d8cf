//! A minimal format for core's own tests: record `i` is the 16 bytes at `16 * i` of one
//! file, and a record whose first byte is 0xFF fails its "checksum".
#![allow(dead_code)]

use std::sync::Arc;

use reel_core::{
    Error, ErrorKind, FieldName, Layout, LayoutSource, Limits, MemFiles, Plan, RawParts, RecordOut,
    Result, SourceInfo, Span, Value,
};

/// Bytes per record.
pub const RECORD: usize = 16;

pub struct Fixed {
    info: SourceInfo,
    len: u64,
    name: FieldName,
}

impl Layout for Fixed {
    fn info(&self) -> &SourceInfo {
        &self.info
    }
    fn len(&self) -> u64 {
        self.len
    }
    fn plan(&self, index: u64, plan: &mut Plan<'_>) -> Result<()> {
        plan.push(0, index * RECORD as u64, RECORD as u64);
        Ok(())
    }
    fn decode(&self, _index: u64, raw: &[Span], out: &mut RecordOut<'_>) -> Result<()> {
        out.push(self.name.clone(), Value::Bytes(raw[0]));
        Ok(())
    }
    fn verify(&self, _index: u64, raw: &RawParts<'_>) -> Result<()> {
        if raw.get(0).first() == Some(&0xFF) {
            return Err(Error::new(ErrorKind::Checksum, "bad record"));
        }
        Ok(())
    }
    fn has_verify(&self) -> bool {
        true
    }
}

/// The bytes of `n` records; record `i` starts with `i as u8` (so avoid 255 unless bad).
pub fn bytes(n: usize) -> Vec<u8> {
    (0..n * RECORD)
        .map(|k| ((k / RECORD) % 255) as u8 ^ (((k % RECORD) as u8 * 7) & 0x70))
        .collect()
}

/// A source over `data` in memory.
pub fn source(data: Vec<u8>) -> Arc<LayoutSource<Fixed, MemFiles>> {
    source_with(data, Limits::default())
}

/// A source over `data` in memory under `limits`.
pub fn source_with(data: Vec<u8>, limits: Limits) -> Arc<LayoutSource<Fixed, MemFiles>> {
    let len = (data.len() / RECORD) as u64;
    let layout = Fixed { info: SourceInfo::new("fixed"), len, name: "data".into() };
    Arc::new(LayoutSource::new(layout, MemFiles::single("fixed.bin", data), limits))
}

/// A source of `records` records over `files`, whatever they are.
pub fn source_over<F: reel_core::ReadAt>(files: F, records: u64) -> Arc<LayoutSource<Fixed, F>> {
    let layout = Fixed { info: SourceInfo::new("fixed"), len: records, name: "data".into() };
    Arc::new(LayoutSource::new(layout, files, Limits::default()))
}
