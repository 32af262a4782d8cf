//! Writing records: the [`RecordSink`] trait.

use std::path::PathBuf;

use crate::{Location, RecordRef, Result};

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

/// A file a writer has completed before its dataset is complete
/// ([`RecordSink::take_sealed`]): the writer will not write, read or rename it again, so it
/// can be copied elsewhere and removed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SealedFile {
    /// Where the file is now (in the writer's staging directory).
    pub path: PathBuf,
    /// Its path inside the finished dataset, `/`-separated (`part-00003`, `data_2.gulp`).
    pub name: String,
}

/// A dataset being written.
///
/// Every writer of every format has the same three methods: [`append`](Self::append) a
/// record (a [`Record`](crate::Record) by reference, or a [`RecordRef`] such as one entry of a
/// [`RecordBatch`](crate::RecordBatch)), ask how many [`records`](Self::records) it holds, and
/// [`finish`](Self::finish).
///
/// Writers stage their output under a temporary name and move it into place in
/// [`finish`](Self::finish) after making it durable (fsync of the files and of the
/// directory). A sink dropped without `finish` removes its staging files, so an
/// interrupted write never leaves something that opens as a valid dataset; since that loses
/// the data, reel's writers log a warning (through the [`log`](https://docs.rs/log) crate)
/// when one is dropped unfinished.
///
/// ```
/// use reel_core::{Record, RecordSink};
///
/// fn write_two(mut sink: Box<dyn RecordSink>) -> reel_core::Result<()> {
///     let record = Record::new().with_str("name", "first");
///     sink.append(&record)?;
///     sink.append(Record::new().with_str("name", "second").view())?;
///     assert_eq!(sink.records(), 2);
///     sink.finish()?;
///     Ok(())
/// }
/// ```
///
/// # Implementing
///
/// Implement [`append_ref`](Self::append_ref), [`records`](Self::records) and
/// [`finish`](Self::finish); [`append`](Self::append) is provided.
pub trait RecordSink: Send {
    /// Adds a record and returns its index (the number of records appended before it):
    /// `&record`, `record.view()` and a record of a [`RecordBatch`](crate::RecordBatch) all
    /// work. An error names the record's index ([`Error::record`](crate::Error::record)).
    ///
    /// Every sink has it, a `Box<dyn RecordSink>` included. Through a bare
    /// `&mut dyn RecordSink` call [`append_ref`](Self::append_ref) instead (a generic
    /// method cannot be called on a trait object).
    fn append<'a>(&mut self, record: impl Into<RecordRef<'a>>) -> Result<u64>
    where
        Self: Sized,
    {
        self.append_ref(record.into())
    }

    /// [`append`](Self::append) for one record view: the method implementors write, and
    /// the one to call through `&mut dyn RecordSink`.
    fn append_ref(&mut self, record: RecordRef<'_>) -> Result<u64>;

    /// [`append_ref`](Self::append_ref) with where the source stores the record
    /// ([`RecordSourceExt::location`](crate::RecordSourceExt::location)), for sinks that keep
    /// it: Parquet and Arrow IPC files with location columns. Other sinks ignore it (the
    /// default); a sink that wraps another passes it on.
    fn append_located(
        &mut self,
        record: RecordRef<'_>,
        location: Option<Location<'_>>,
    ) -> Result<u64> {
        let _ = location;
        self.append_ref(record)
    }

    /// How many records were appended so far (the index the next one gets).
    fn records(&self) -> u64;

    /// Takes the files this sink has sealed since the last call: files of a multi-file
    /// dataset that are complete before the dataset is (an OFRecord part once the next one
    /// starts, a GulpIO2 chunk once it is closed, a Granular shard once the next starts).
    /// The caller may copy each one elsewhere and then remove it; [`finish`](Self::finish)
    /// publishes the dataset without the removed files. This is how a dataset bound for
    /// object storage goes up file by file while it is written, instead of needing its
    /// whole size on local disk.
    ///
    /// Sinks that keep every file open to the end (single-file formats, whose header comes
    /// first) seal nothing: the default. A sink that wraps another passes it on.
    fn take_sealed(&mut self) -> Vec<SealedFile> {
        Vec::new()
    }

    /// Makes everything durable and visible under the final name. Calling any method after
    /// `finish` fails with [`ErrorKind::Closed`](crate::ErrorKind::Closed).
    fn finish(&mut self) -> Result<SinkSummary>;
}

// One forwarding impl for every pointer to a sink, as `forward_source!` does for sources,
// so a method added to the trait is forwarded once.
macro_rules! forward_sink {
    ($($ty:ty),*) => {$(
        impl<T: RecordSink + ?Sized> RecordSink for $ty {
            fn append_ref(&mut self, record: RecordRef<'_>) -> Result<u64> {
                (**self).append_ref(record)
            }
            fn append_located(
                &mut self,
                record: RecordRef<'_>,
                location: Option<Location<'_>>,
            ) -> Result<u64> {
                (**self).append_located(record, location)
            }
            fn records(&self) -> u64 {
                (**self).records()
            }
            fn take_sealed(&mut self) -> Vec<SealedFile> {
                (**self).take_sealed()
            }
            fn finish(&mut self) -> Result<SinkSummary> {
                (**self).finish()
            }
        }
    )*};
}

forward_sink!(Box<T>, &mut T);

/// Logs one warning if the writer that owns it is dropped before it finished.
///
/// Dropping an unfinished writer discards what it staged (by design: a half-written dataset
/// must not open), which is easy to miss when a `?` returns early past `finish`. Writers hold
/// one guard and call [`finished`](Self::finished) when `finish` ran (whatever its outcome:
/// a failed `finish` already returned an error). Nothing is logged while the thread panics,
/// since the panic says more.
///
/// ```
/// let mut guard = reel_core::UnfinishedGuard::new("ffrecord", "data.ffr");
/// guard.finished(); // without this, dropping the guard would log a warning
/// ```
#[derive(Debug)]
pub struct UnfinishedGuard {
    format: &'static str,
    target: PathBuf,
    armed: bool,
}

impl UnfinishedGuard {
    /// A guard for a writer of `format` that will publish `target`.
    pub fn new(format: &'static str, target: impl Into<PathBuf>) -> Self {
        UnfinishedGuard { format, target: target.into(), armed: true }
    }

    /// `finish` ran: dropping the writer is no longer a loss worth a warning.
    pub fn finished(&mut self) {
        self.armed = false;
    }

    /// Whether dropping now would warn.
    pub fn is_armed(&self) -> bool {
        self.armed
    }
}

impl Drop for UnfinishedGuard {
    fn drop(&mut self) {
        if self.armed && !std::thread::panicking() {
            log::warn!(
                target: "reel",
                "{}: {}: writer dropped without finish(); the records appended to it are discarded",
                self.format,
                self.target.display()
            );
        }
    }
}
