//! Writing a copy of a dataset without its bad records.

use std::path::Path;

use reel::{OpenOptions, RecordBatch, RecordSink, RecordSource, RecordSourceExt, VerifyReport};

/// Copies every good record of `src` into a new dataset of the same format at `out`;
/// returns how many were written. An existing `out` is replaced only if `overwrite` is set.
pub fn salvage(
    src: &Path,
    out: &Path,
    report: &VerifyReport,
    options: &OpenOptions,
    overwrite: bool,
) -> reel::Result<u64> {
    // The copy holds the records as stored, whatever --payload showed; batches are kept
    // within the streaming budget.
    let mut raw = reel::streaming(options);
    raw.payload = reel::Payload::Raw;
    raw.payload_field = None;
    let source = reel::open_as(src, report.format, &raw)?;
    let bad = report.bad_records();
    let good: Vec<u64> = (0..source.len()).filter(|i| bad.binary_search(i).is_err()).collect();
    let mut sink = reel::create_like_with(&*source, out, good.len() as u64, overwrite)?;
    let mut batch = RecordBatch::new();
    let mut rest = &good[..];
    while !rest.is_empty() {
        let read = source.read_batch_fitting(&rest[..rest.len().min(256)], &mut batch)?;
        rest = &rest[read..];
        for r in batch.iter() {
            sink.append(r)?;
        }
    }
    let summary = sink.finish()?;
    Ok(summary.records)
}
