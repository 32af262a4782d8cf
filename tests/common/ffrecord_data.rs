//! A generated FFRecord dataset with known bytes, and a batch read that returns them, for the
//! object-store tests (HTTP server, fault proxy, moto) that check every record they read.
#![allow(dead_code, clippy::unwrap_used)]

use std::path::Path;

use reel::{RecordBatch, RecordSource};

/// Writes `n` FFRecord records of `size` bytes (a pattern of each record's index) as one file,
/// `data`, in `dir`, and returns them.
pub fn ffrecord_dataset(dir: &Path, n: usize, size: usize) -> Vec<Vec<u8>> {
    let records: Vec<Vec<u8>> =
        (0..n).map(|i| (0..size).map(|j| (i * 131 + j * 7) as u8).collect()).collect();
    reel::ffrecord::dump(&records, dir.join("data"), 1).unwrap();
    records
}

/// The `data` bytes of the records at `indices`, read as one batch.
pub fn read_batch(source: &dyn RecordSource, indices: &[u64]) -> reel::Result<Vec<Vec<u8>>> {
    let mut batch = RecordBatch::new();
    source.read_batch_into(indices, &mut batch)?;
    Ok(batch.iter().map(|r| r.bytes("data").unwrap().to_vec()).collect())
}
