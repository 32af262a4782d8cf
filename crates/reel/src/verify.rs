//! Checking a dataset end to end and naming every bad record.

use std::path::{Path, PathBuf};

use reel_core::{Error, ErrorKind, RecordBatch, RecordSource, RecordSourceExt, Result};

use crate::{Format, OpenOptions, open_as};

/// One thing found wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// The record concerned, if the problem is one record's.
    pub record: Option<u64>,
    /// The file concerned.
    pub path: Option<PathBuf>,
    /// The byte offset in that file.
    pub offset: Option<u64>,
    /// What kind of problem.
    pub kind: ErrorKind,
    /// What is wrong, in plain words.
    pub message: String,
}

impl Problem {
    /// The problem an error describes.
    pub fn from_error(e: &Error) -> Self {
        Problem {
            record: e.record(),
            path: e.path().map(Path::to_path_buf),
            offset: e.offset(),
            kind: e.kind(),
            message: e.message().to_string(),
        }
    }
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(r) = self.record {
            write!(f, "record {r}: ")?;
        }
        if let Some(p) = &self.path {
            write!(f, "{}", p.display())?;
            if let Some(o) = self.offset {
                write!(f, " at byte {o}")?;
            }
            write!(f, ": ")?;
        }
        write!(f, "{} ({})", self.message, self.kind)
    }
}

/// What [`verify`] found.
#[derive(Clone, Debug)]
pub struct VerifyReport {
    /// The format the dataset was read as.
    pub format: Format,
    /// Records the dataset claims (0 if it could not be opened).
    pub records: u64,
    /// Records that read back without error.
    pub good_records: u64,
    /// Every problem, in order: structural ones first, then one per bad record.
    pub problems: Vec<Problem>,
    /// Whether the dataset could be opened at all (with every check on).
    pub opened: bool,
    /// What the opened dataset warns of (a legacy FFRecord file accepted, a reference
    /// quirk), as [`SourceInfo::warnings`](reel_core::SourceInfo::warnings) gives it: not
    /// damage, but worth saying beside the verdict.
    pub warnings: Vec<reel_core::Warning>,
}

impl VerifyReport {
    /// Whether nothing is wrong.
    pub fn is_clean(&self) -> bool {
        self.problems.is_empty()
    }

    /// The indices of the records that failed, ascending, each once.
    pub fn bad_records(&self) -> Vec<u64> {
        let mut v: Vec<u64> = self.problems.iter().filter_map(|p| p.record).collect();
        v.sort_unstable();
        v.dedup();
        v
    }
}

/// Opens `path` with every check on, reads every record (checksums verified), runs the
/// format's own structural checks, and reports every problem with the record, file and
/// byte offset it concerns.
///
/// An `Err` means verification could not run (no such file, unknown format, I/O
/// failure); damage is reported in the `Ok` report. A dataset too damaged to open is a
/// report with `opened == false` and the reason as its problem.
pub fn verify(path: impl AsRef<Path>, options: &OpenOptions) -> Result<VerifyReport> {
    verify_with_progress(path, options, &mut |_, _| {})
}

/// [`verify`], calling `progress(done, total)` as records are read.
pub fn verify_with_progress(
    path: impl AsRef<Path>,
    options: &OpenOptions,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<VerifyReport> {
    let (path, options) = crate::open::locate(path.as_ref(), options)?;
    let path = path.as_path();
    let format = options.format_of(path)?;
    let options = streaming(&options).verify(true);
    let mut report = VerifyReport {
        format,
        records: 0,
        good_records: 0,
        problems: Vec::new(),
        opened: false,
        warnings: Vec::new(),
    };
    let source = match open_as(path, format, &options) {
        Ok(s) => s,
        // A file of the dataset is missing (a Granular bag, a refs.bag): damage, which the
        // report names, not a dataset that could not be looked at.
        Err(e) if e.kind() == ErrorKind::NotFound && e.path().is_some_and(|p| p != path) => {
            report.problems.push(Problem::from_error(&e));
            return Ok(report);
        }
        // Not damage: the dataset could not be read, or the verification was cancelled.
        Err(e)
            if matches!(
                e.kind(),
                ErrorKind::Io | ErrorKind::NotFound | ErrorKind::Unsupported | ErrorKind::Closed
            ) =>
        {
            return Err(e);
        }
        Err(e) => {
            report.problems.push(Problem::from_error(&e));
            return Ok(report);
        }
    };
    report.opened = true;
    report.records = source.len();
    report.warnings = source.info().warnings.clone();
    // Parts missing from a numbering read as the reference reads them, with a warning;
    // checking the dataset, they are a problem: records are absent.
    for warning in &source.info().warnings {
        if warning.kind == reel_core::WarningKind::MissingParts {
            report.problems.push(Problem {
                record: None,
                path: warning.path.clone(),
                offset: None,
                kind: ErrorKind::NotFound,
                message: warning.message.clone(),
            });
        }
    }
    if let Some(extra) = crate::formats::check(format) {
        report.problems.extend(extra(path, &options)?);
    }
    check_records(source, &mut report, progress)?;
    // A record can read back and still be bad (a gulp video with a frame that does not
    // decode), so the good ones are those no problem names.
    let bad = report.bad_records().iter().filter(|&&i| i < report.records).count() as u64;
    report.good_records = report.records - bad;
    Ok(report)
}

/// The most bytes a tool that streams a whole dataset (`verify`, `convert`, `cat`) holds in
/// one batch: enough to keep the disk busy, small enough that records sharing bytes cannot
/// make a small file cost gigabytes.
pub const STREAM_BATCH_BYTES: u64 = 64 << 20;

/// `options` for streaming a whole dataset: the batch budget lowered to
/// [`STREAM_BATCH_BYTES`] (batches are then shrunk to fit, see
/// [`RecordSourceExt::read_batch_fitting`](reel_core::RecordSourceExt::read_batch_fitting)).
pub fn streaming(options: &OpenOptions) -> OpenOptions {
    let mut options = options.clone();
    options.limits.max_batch_bytes = options.limits.max_batch_bytes.min(STREAM_BATCH_BYTES);
    options
}

/// Reads every record in batches through a [`BatchStream`](reel_core::BatchStream), so the
/// next batches are read while this one is counted; a failing batch (damaged, or over the
/// batch budget) is read again on this thread, in batches that fit the budget and then one
/// record at a time, so that every bad record is named, not just the first.
fn check_records(
    source: Box<dyn RecordSource>,
    report: &mut VerifyReport,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<()> {
    const BATCH: u64 = 256;
    let source: std::sync::Arc<dyn RecordSource> = std::sync::Arc::from(source);
    let n = source.len();
    let plan = reel_core::BatchPlan::sequential(0..n, BATCH as usize);
    // Batches wait at most one budget's worth of bytes beyond the one being read.
    let options = reel_core::StreamOptions::default().max_ahead_bytes(STREAM_BATCH_BYTES);
    let stream = reel_core::BatchStream::new(source.clone(), plan, &options)?;
    // Stops at the next batch once the calling thread's flag is raised (Ctrl-C). The reads
    // again on this thread see the flag too and fail as cancelled, not as damage: the last
    // look, after the loop, keeps such failures out of a report.
    let cancel = reel_core::io::cancel::CancelCheck::current();
    for (seq, item) in stream.enumerate() {
        cancel.stop_if_cancelled("the verification")?;
        let start = seq as u64 * BATCH;
        let end = n.min(start + BATCH);
        match item {
            Ok(batch) => report.good_records += batch.len() as u64,
            Err(e) if e.kind() == ErrorKind::Io => return Err(e),
            Err(_) => recheck(&*source, start..end, report)?,
        }
        progress(end, n);
    }
    cancel.stop_if_cancelled("the verification")
}

/// Reads `range` again on this thread: in batches that fit the budget while they read, one
/// record at a time after a batch fails.
fn recheck(
    source: &dyn RecordSource,
    range: std::ops::Range<u64>,
    report: &mut VerifyReport,
) -> Result<()> {
    let mut batch = RecordBatch::new();
    let mut record = reel_core::Record::new();
    let indices: Vec<u64> = range.clone().collect();
    let mut start = 0;
    while start < indices.len() {
        match source.read_batch_fitting(&indices[start..], &mut batch) {
            Ok(read) => {
                report.good_records += read as u64;
                start += read;
            }
            Err(e) if e.kind() == ErrorKind::Io => return Err(e),
            Err(_) => {
                // The failed batch's memory is given back before records are read alone.
                batch = RecordBatch::new();
                for &i in &indices[start..] {
                    match source.read_into(i, &mut record) {
                        Ok(()) => report.good_records += 1,
                        Err(e) if e.kind() == ErrorKind::Io => return Err(e),
                        Err(e) => report.problems.push(Problem::from_error(&e.with_record(i))),
                    }
                }
                start = indices.len();
            }
        }
    }
    Ok(())
}

#[cfg(test)]
#[cfg(feature = "ffrecord")]
mod tests {
    use super::*;

    /// An FFRecord file of `n` records, record `i` being 64 bytes that spell `i`.
    fn ffrecord_file(path: &Path, n: u64) -> Vec<Vec<u8>> {
        let records: Vec<Vec<u8>> =
            (0..n).map(|i| format!("record {i:08} ").repeat(4).into_bytes()).collect();
        let mut w = reel_ffrecord::FfrecordWriter::create(path, n).unwrap();
        for r in &records {
            w.append(&reel_core::Record::from_bytes(r)).unwrap();
        }
        w.finish().unwrap();
        records
    }

    /// Flips a byte inside `record`'s bytes in the file, so its checksum fails.
    fn damage(path: &Path, record: &[u8]) {
        let mut bytes = std::fs::read(path).unwrap();
        let at = bytes.windows(record.len()).position(|w| w == record).unwrap();
        bytes[at + 3] ^= 0x55;
        std::fs::write(path, bytes).unwrap();
    }

    /// Records damaged in different batches of the stream are each named, the good ones
    /// are counted, and progress reaches the end.
    #[test]
    fn every_damaged_record_is_named_across_stream_batches() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("data.ffr");
        let records = ffrecord_file(&path, 1000);
        for i in [5, 400, 999] {
            damage(&path, &records[i]);
        }
        let mut last = (0, 0);
        let report =
            verify_with_progress(&path, &OpenOptions::default(), &mut |d, n| last = (d, n))
                .unwrap();
        assert!(report.opened);
        assert_eq!(report.records, 1000);
        assert_eq!(report.good_records, 997);
        assert_eq!(report.bad_records(), [5, 400, 999]);
        assert_eq!(last, (1000, 1000));
    }
}
