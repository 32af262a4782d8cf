//! Writing records: the [`RecordSink`] trait.

use std::path::PathBuf;

use crate::{RecordRef, Result};

/// What a finished sink wrote.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SinkSummary {
    /// Records written.
    pub records: u64,
    /// Bytes written, metadata included.
    pub bytes: u64,
    /// The files or directories that now hold the dataset.
    pub paths: Vec<PathBuf>,
}

/// A dataset being written.
///
/// Writers stage their output under a temporary name and move it into place in
/// [`finish`](Self::finish) after making it durable (fsync of the files and of the
/// directory). A sink dropped without `finish` removes its staging files, so an
/// interrupted write never leaves something that opens as a valid dataset.
pub trait RecordSink: Send {
    /// Adds a record and returns its index.
    fn append(&mut self, record: RecordRef<'_>) -> Result<u64>;

    /// Makes everything durable and visible under the final name. Calling any method after
    /// `finish` fails with [`ErrorKind::Closed`](crate::ErrorKind::Closed).
    fn finish(&mut self) -> Result<SinkSummary>;
}

impl<T: RecordSink + ?Sized> RecordSink for Box<T> {
    fn append(&mut self, record: RecordRef<'_>) -> Result<u64> {
        (**self).append(record)
    }
    fn finish(&mut self) -> Result<SinkSummary> {
        (**self).finish()
    }
}
