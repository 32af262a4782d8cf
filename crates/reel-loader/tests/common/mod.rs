//! Sources for the loader's tests.
#![allow(dead_code)]

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use reel_core::{Error, Record, RecordBatch, RecordSource, Result, SourceInfo, Value};
use reel_loader::Batch;

/// `len` records; record `i` is one `data` field holding `i` as 8 little-endian bytes.
/// Counts the records it reads; can fail on chosen indices (with an error that does not
/// name the record, like a source without context would) and can be slow.
pub struct TestSource {
    info: SourceInfo,
    len: u64,
    failing: BTreeSet<u64>,
    panicking: BTreeSet<u64>,
    delay: Duration,
    reads: AtomicU64,
}

impl TestSource {
    pub fn new(len: u64) -> Self {
        TestSource {
            info: SourceInfo::new("test"),
            len,
            failing: BTreeSet::new(),
            panicking: BTreeSet::new(),
            delay: Duration::ZERO,
            reads: AtomicU64::new(0),
        }
    }

    pub fn failing(mut self, indices: impl IntoIterator<Item = u64>) -> Self {
        self.failing.extend(indices);
        self
    }

    /// A buggy source: reading these indices panics.
    pub fn panicking(mut self, indices: impl IntoIterator<Item = u64>) -> Self {
        self.panicking.extend(indices);
        self
    }

    pub fn slow(mut self, per_batch: Duration) -> Self {
        self.delay = per_batch;
        self
    }

    /// Records read so far (alone or in batches).
    pub fn reads(&self) -> u64 {
        self.reads.load(Ordering::SeqCst)
    }

    fn check(&self, index: u64) -> Result<()> {
        if index >= self.len {
            return Err(Error::out_of_range(index, self.len));
        }
        if self.panicking.contains(&index) {
            panic!("the test source panics on record {index}");
        }
        if self.failing.contains(&index) {
            return Err(Error::corrupt("this record is damaged"));
        }
        Ok(())
    }
}

impl RecordSource for TestSource {
    fn info(&self) -> &SourceInfo {
        &self.info
    }

    fn len(&self) -> u64 {
        self.len
    }

    fn read_into(&self, index: u64, out: &mut Record) -> Result<()> {
        out.clear();
        self.reads.fetch_add(1, Ordering::SeqCst);
        self.check(index)?;
        out.set_index(index);
        out.push_bytes("data", &index.to_le_bytes());
        Ok(())
    }

    fn read_batch_into(&self, indices: &[u64], out: &mut RecordBatch) -> Result<()> {
        out.clear();
        if !self.delay.is_zero() {
            std::thread::sleep(self.delay);
        }
        self.reads.fetch_add(indices.len() as u64, Ordering::SeqCst);
        for &index in indices {
            if let Err(e) = self.check(index) {
                out.clear();
                return Err(e);
            }
            out.push_with(index, |o| {
                let span = o.append(&index.to_le_bytes());
                o.push("data".into(), Value::Bytes(span));
                Ok(())
            })?;
        }
        Ok(())
    }
}

/// The indices of a batch, checking that each record's bytes are its index.
pub fn indices(batch: &Batch) -> Vec<u64> {
    batch
        .iter()
        .map(|r| {
            let bytes = r.bytes("data").expect("data field");
            assert_eq!(bytes, r.index().to_le_bytes(), "record {} has the wrong bytes", r.index());
            r.index()
        })
        .collect()
}

/// Every batch of a loader as index lists, with the epoch of each; panics on an error.
pub fn drain(loader: reel_loader::Loader) -> Vec<(u64, Vec<u64>)> {
    loader.map(|b| b.expect("batch")).map(|b| (b.epoch(), indices(&b))).collect()
}
