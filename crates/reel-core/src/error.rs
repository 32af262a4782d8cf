//! The one error type of reel.
//!
//! Every failure carries a [`ErrorKind`] that callers can match on and the context a person
//! needs to find the problem: the format, the file, the record and the byte offset. Format
//! crates define no error types of their own; they build an [`Error`] with
//! [`Error::new`] and the `with_*` methods.

use std::fmt;
use std::path::{Path, PathBuf};

/// What went wrong, in a form a program can act on.
///
/// New kinds may be added; match with a wildcard arm.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The operating system refused or failed an I/O operation.
    Io,
    /// The bytes do not have the structure the format requires.
    Corrupt,
    /// A stored checksum does not match the bytes it covers.
    Checksum,
    /// The data uses a feature or variant reel does not read or write.
    Unsupported,
    /// A record index (or another position) lies outside the dataset.
    OutOfRange,
    /// A named entry (a file in a packed folder, a key, an id) does not exist.
    NotFound,
    /// A record does not fit the schema of the dataset or the target format.
    Schema,
    /// A size or count exceeds a configured [`Limits`](crate::Limits) value.
    Limit,
    /// The source or sink was already closed or finished.
    Closed,
    /// The caller passed an argument that cannot be used (for example a writer
    /// finished with fewer records than it promised).
    InvalidInput,
}

impl ErrorKind {
    /// A short lower-case name, stable across versions, for logs and `--json` output.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Io => "io",
            ErrorKind::Corrupt => "corrupt",
            ErrorKind::Checksum => "checksum",
            ErrorKind::Unsupported => "unsupported",
            ErrorKind::OutOfRange => "out-of-range",
            ErrorKind::NotFound => "not-found",
            ErrorKind::Schema => "schema",
            ErrorKind::Limit => "limit",
            ErrorKind::Closed => "closed",
            ErrorKind::InvalidInput => "invalid-input",
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The error type of every reel operation.
///
/// It is one pointer wide so that `Result<T, Error>` stays small on hot paths.
pub struct Error(Box<Inner>);

struct Inner {
    kind: ErrorKind,
    message: String,
    format: Option<&'static str>,
    path: Option<PathBuf>,
    record: Option<u64>,
    offset: Option<u64>,
    source: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
    /// The operating system's error, already written into `message` (so it is not the
    /// `source()` as well: chains would print it twice).
    io: Option<std::io::Error>,
}

/// Shorthand for `Result<T, reel_core::Error>`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// A new error of `kind` that says `message` in plain words.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error(Box::new(Inner {
            kind,
            message: message.into(),
            format: None,
            path: None,
            record: None,
            offset: None,
            source: None,
            io: None,
        }))
    }

    /// Shorthand for [`ErrorKind::Corrupt`].
    pub fn corrupt(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Corrupt, message)
    }

    /// Shorthand for [`ErrorKind::Unsupported`].
    pub fn unsupported(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Unsupported, message)
    }

    /// Shorthand for [`ErrorKind::InvalidInput`].
    pub fn invalid_input(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidInput, message)
    }

    /// Shorthand for [`ErrorKind::Schema`].
    pub fn schema(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Schema, message)
    }

    /// An I/O error: `what` failed, followed by the operating system's message.
    ///
    /// A missing file is [`ErrorKind::NotFound`], every other failure [`ErrorKind::Io`].
    /// The OS message is in the text once and not repeated as
    /// [`source`](std::error::Error::source), so error chains (`anyhow`'s `{:#}`) print it once;
    /// [`io_error`](Self::io_error) gives the original.
    ///
    /// ```
    /// use reel_core::{Error, ErrorKind};
    /// let os = std::io::Error::from(std::io::ErrorKind::NotFound);
    /// let e = Error::io(os, "cannot open the file").with_path("data.ffr");
    /// assert_eq!(e.kind(), ErrorKind::NotFound);
    /// assert_eq!(e.to_string(), "data.ffr: cannot open the file: entity not found");
    /// assert!(std::error::Error::source(&e).is_none());
    /// ```
    pub fn io(err: std::io::Error, what: impl Into<String>) -> Self {
        let kind = match err.kind() {
            std::io::ErrorKind::NotFound => ErrorKind::NotFound,
            _ => ErrorKind::Io,
        };
        let mut e = Self::new(kind, format!("{}: {}", what.into(), err));
        e.0.io = Some(err);
        e
    }

    /// The operating system's error behind an I/O failure, if this is one.
    pub fn io_error(&self) -> Option<&std::io::Error> {
        self.0.io.as_ref()
    }

    /// The record index `index` is not below `len`.
    pub fn out_of_range(index: u64, len: u64) -> Self {
        Self::new(
            ErrorKind::OutOfRange,
            format!("record index {index} is out of range (the dataset has {len} records)"),
        )
        .with_record(index)
    }

    /// The kind of failure.
    pub fn kind(&self) -> ErrorKind {
        self.0.kind
    }

    /// The plain-words description, without the context.
    pub fn message(&self) -> &str {
        &self.0.message
    }

    /// The format that reported the error, if known.
    pub fn format(&self) -> Option<&'static str> {
        self.0.format
    }

    /// The file the error is about, if known.
    pub fn path(&self) -> Option<&Path> {
        self.0.path.as_deref()
    }

    /// The record index the error is about, if known.
    pub fn record(&self) -> Option<u64> {
        self.0.record
    }

    /// The byte offset in [`path`](Self::path) the error is about, if known.
    pub fn offset(&self) -> Option<u64> {
        self.0.offset
    }

    /// Names the format, unless a format was already named.
    pub fn with_format(mut self, format: &'static str) -> Self {
        self.0.format.get_or_insert(format);
        self
    }

    /// Names the file, unless a file was already named.
    pub fn with_path(mut self, path: impl AsRef<Path>) -> Self {
        if self.0.path.is_none() {
            self.0.path = Some(path.as_ref().to_path_buf());
        }
        self
    }

    /// Names the record, unless a record was already named.
    pub fn with_record(mut self, record: u64) -> Self {
        self.0.record.get_or_insert(record);
        self
    }

    /// Renames the record the error names with `f` (nothing if it names none): a source
    /// made of parts ([`ConcatSource`](crate::ConcatSource)) gets errors naming a record by
    /// its index in the part, and its users know it by its index in the whole.
    pub fn map_record(mut self, f: impl FnOnce(u64) -> u64) -> Self {
        self.0.record = self.0.record.map(f);
        self
    }

    /// A copy of what this error says (kind, message, format, path, record, offset),
    /// without its underlying errors (which cannot be copied): for an error that is kept
    /// and returned as well.
    pub fn copy_of_text(&self) -> Self {
        let i = &self.0;
        Error(Box::new(Inner {
            kind: i.kind,
            message: i.message.clone(),
            format: i.format,
            path: i.path.clone(),
            record: i.record,
            offset: i.offset,
            source: None,
            io: None,
        }))
    }

    /// Renames the file the error names with `f` (kept where `f` gives `None`): a writer
    /// that stages its output somewhere else (a dataset bound for a bucket is written to a
    /// local directory first) names files by where they will be, not where they are staged.
    pub fn map_path(mut self, f: impl FnOnce(&Path) -> Option<PathBuf>) -> Self {
        if let Some(renamed) = self.0.path.as_deref().and_then(f) {
            self.0.path = Some(renamed);
        }
        self
    }

    /// Names the byte offset, unless an offset was already named.
    pub fn with_offset(mut self, offset: u64) -> Self {
        self.0.offset.get_or_insert(offset);
        self
    }

    /// Attaches an underlying error as the [`source`](std::error::Error::source). Its text
    /// should not be repeated in the message (chains print both).
    pub fn with_source(mut self, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        self.0.source = Some(Box::new(source));
        self
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let i = &self.0;
        if let Some(format) = i.format {
            write!(f, "{format}: ")?;
        }
        if let Some(path) = &i.path {
            write!(f, "{}: ", path.display())?;
        }
        match (i.record, i.offset) {
            (Some(r), Some(o)) => write!(f, "record {r} at byte {o}: ")?,
            (Some(r), None) => write!(f, "record {r}: ")?,
            (None, Some(o)) => write!(f, "at byte {o}: ")?,
            (None, None) => {}
        }
        f.write_str(&i.message)
    }
}

impl fmt::Debug for Error {
    /// What `main` prints when it returns this error: the text, the kind, and the causes.
    ///
    /// ```text
    /// ffrecord: data.ffr: cannot open the file: No such file or directory (os error 2) [not-found]
    /// ```
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self} [{}]", self.0.kind)?;
        let mut cause = std::error::Error::source(self);
        while let Some(c) = cause {
            write!(f, "\ncaused by: {c}")?;
            cause = c.source();
        }
        Ok(())
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source.as_deref().map(|e| e as &(dyn std::error::Error + 'static))
    }
}

impl From<std::io::Error> for Error {
    fn from(err: std::io::Error) -> Self {
        let what = err.kind().to_string();
        Error::io(err, what)
    }
}

/// Adds context to the error inside a `Result` without a closure at every call site.
pub trait ResultExt<T> {
    /// See [`Error::with_format`].
    fn format(self, format: &'static str) -> Result<T>;
    /// See [`Error::with_path`].
    fn path(self, path: impl AsRef<Path>) -> Result<T>;
    /// See [`Error::with_record`].
    fn record(self, record: u64) -> Result<T>;
}

impl<T> ResultExt<T> for Result<T> {
    fn format(self, format: &'static str) -> Result<T> {
        self.map_err(|e| e.with_format(format))
    }
    fn path(self, path: impl AsRef<Path>) -> Result<T> {
        self.map_err(|e| e.with_path(path))
    }
    fn record(self, record: u64) -> Result<T> {
        self.map_err(|e| e.with_record(record))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_is_one_pointer_wide() {
        assert_eq!(std::mem::size_of::<Error>(), std::mem::size_of::<usize>());
        assert_eq!(std::mem::size_of::<Result<()>>(), std::mem::size_of::<usize>());
    }

    #[test]
    fn display_puts_context_before_message() {
        let e = Error::new(ErrorKind::Checksum, "checksum mismatch")
            .with_format("ffrecord")
            .with_path("/data/x.ffr")
            .with_record(3)
            .with_offset(177);
        assert_eq!(e.to_string(), "ffrecord: /data/x.ffr: record 3 at byte 177: checksum mismatch");
        assert_eq!(e.kind(), ErrorKind::Checksum);
    }

    #[test]
    fn os_message_appears_once() {
        let os = std::io::Error::from_raw_os_error(2);
        let e = Error::io(os, "cannot open").with_format("ffrecord").with_path("x.ffr");
        assert_eq!(e.kind(), ErrorKind::NotFound);
        assert!(std::error::Error::source(&e).is_none());
        assert_eq!(e.io_error().map(|o| o.raw_os_error()), Some(Some(2)));
        let debug = format!("{e:?}");
        assert_eq!(debug.matches("os error 2").count(), 1, "{debug}");
        assert!(debug.starts_with("ffrecord: x.ffr: cannot open: "), "{debug}");
        assert!(debug.ends_with("[not-found]"), "{debug}");
        let denied = Error::io(std::io::Error::from_raw_os_error(13), "cannot open");
        assert_eq!(denied.kind(), ErrorKind::Io);
    }

    #[test]
    fn debug_lists_sources_once() {
        let inner = std::fmt::Error;
        let e = Error::corrupt("bad metadata").with_source(inner).with_format("syrah");
        assert_eq!(
            format!("{e:?}"),
            "syrah: bad metadata [corrupt]\ncaused by: an error occurred when formatting an argument"
        );
    }

    #[test]
    fn first_context_wins() {
        let e = Error::corrupt("x").with_record(1).with_record(2).with_format("a").with_format("b");
        assert_eq!(e.record(), Some(1));
        assert_eq!(e.format(), Some("a"));
    }
}
