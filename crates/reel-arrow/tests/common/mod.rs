//! What the tests of reel-arrow share.
#![allow(dead_code)]

use reel_core::{Record, RecordBatch as ReelBatch, RecordSource, Result, SourceInfo};

/// `records` generated records of one field, `data`: `size` bytes, each the record's
/// index mod 251 (so that a record read back says which it is).
pub struct Numbered {
    pub records: u64,
    pub size: usize,
}

impl Numbered {
    /// The `data` of record `index`.
    pub fn data(&self, index: u64) -> Vec<u8> {
        vec![(index % 251) as u8; self.size]
    }
}

impl RecordSource for Numbered {
    fn info(&self) -> &SourceInfo {
        static INFO: std::sync::OnceLock<SourceInfo> = std::sync::OnceLock::new();
        INFO.get_or_init(|| SourceInfo::new("generated"))
    }
    fn len(&self) -> u64 {
        self.records
    }
    fn read_into(&self, index: u64, out: &mut Record) -> Result<()> {
        out.clear();
        out.push_bytes("data", &self.data(index));
        out.set_index(index);
        Ok(())
    }
    fn read_batch_into(&self, indices: &[u64], out: &mut ReelBatch) -> Result<()> {
        out.clear();
        let mut r = Record::new();
        for &i in indices {
            self.read_into(i, &mut r)?;
            out.push_copy(r.view());
        }
        Ok(())
    }
}
