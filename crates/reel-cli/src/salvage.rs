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

/// Copies the records of an OFRecord dataset that does not open because the framing of a
/// part breaks (a frame or length field cut short, as a writer killed mid-frame leaves
/// it, or a length running past the part's end) into a new OFRecord dataset at `out`:
/// every part is read front to back on its own, up to the break, so the good parts and
/// the frames before a break are kept. A frame's length field gives the only way to the
/// next frame, so nothing after a break can be found. A record whose protobuf is
/// malformed is left out and the part goes on. Returns the records written.
pub fn salvage_ofrecord_frames(
    src: &Path,
    out: &Path,
    options: &OpenOptions,
    overwrite: bool,
) -> reel::Result<u64> {
    use reel::ofrecord::{OfrecordOptions, OfrecordStream, PartNaming, dataset_files};
    let parts = dataset_files(src, &PartNaming::default(), None)?;
    let stream_options = OfrecordOptions { limits: options.limits.clone(), ..Default::default() };
    let mut create = reel::CreateOptions::default();
    create.overwrite = overwrite;
    let mut sink = reel::create(out, reel::Format::Ofrecord, &create)?;
    let cancel = reel::io::cancel::CancelCheck::current();
    let mut record = reel::Record::new();
    for part in parts {
        let mut stream = OfrecordStream::open(&part, &stream_options)?;
        loop {
            cancel.stop_if_cancelled("the salvage")?;
            let before = stream.position();
            match stream.next_into(&mut record) {
                Ok(true) => {
                    sink.append(record.view())?;
                }
                Ok(false) => break,
                // The record's frame was whole and its protobuf is not: the next frame is
                // where the length field says.
                Err(_) if stream.position() > before => continue,
                // The framing broke: nothing further in this part can be found.
                Err(_) => break,
            }
        }
    }
    Ok(sink.finish()?.records)
}
