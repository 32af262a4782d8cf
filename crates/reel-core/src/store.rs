//! Where a dataset's files live: the local file system, or an object store (S3, GCS, Azure,
//! HTTP) behind the same small trait.
//!
//! Format crates find their files (list a directory, ask what a name is), read their
//! metadata (`spec.json`, a `.gmeta`, a header) and open their file set for records through a
//! [`Store`], never through `std::fs`, so a dataset in a bucket opens by the same code as one
//! on disk. The trait is deliberately small — list a prefix, the size of an object, read a
//! range, read a small object whole, open a set of objects for batched reads — so an object
//! store implements it with one request per call.
//!
//! # Locations
//!
//! A location is a [`Path`]. For [`LocalStore`] it is a file system path. An object store
//! takes the object's URL (`s3://bucket/data/train.ffr`) as the path: on Unix a URL joins,
//! splits and names its extension like a path (`Path::new("s3://b/d").join("spec.json")` is
//! `s3://b/d/spec.json`), so format code written against paths serves both, and every error
//! names the full URL. A "directory" of an object store is a prefix that has objects under it.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::io::{Backend, ReadAt};
use crate::paths::InputKind;
use crate::{Error, Result};

/// One entry of a directory listing ([`Store::list`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The entry's location: the listed directory joined with the entry's name.
    pub path: PathBuf,
    /// Whether it is a directory (following symbolic links; a dangling link is not).
    pub is_dir: bool,
}

impl Entry {
    /// The entry's name (the last component of its path), lossily as UTF-8.
    pub fn name(&self) -> std::borrow::Cow<'_, str> {
        self.path.file_name().map_or(std::borrow::Cow::Borrowed(""), |n| n.to_string_lossy())
    }
}

/// Where a dataset's files live, for reading: the local file system ([`LocalStore`]) or an
/// object store. See the [module documentation](self) for what a location is.
///
/// Every method may do I/O (a request, for an object store); none may block without end.
/// Errors name the location (and, for reads, the range).
pub trait Store: Send + Sync + fmt::Debug {
    /// A short name for reports (`"file"`, `"s3"`, `"http"` …).
    fn name(&self) -> &'static str;

    /// What `path` is: a regular file (an object) with its length, or a directory (a prefix
    /// with entries under it). A missing path is an [`ErrorKind::NotFound`] error; anything
    /// else that is not a file or a directory (a FIFO, a device) is refused.
    ///
    /// [`ErrorKind::NotFound`]: crate::ErrorKind::NotFound
    fn stat(&self, path: &Path) -> Result<InputKind>;

    /// Whether anything at all is named `path`, even something that cannot be read (a
    /// dangling symbolic link, a FIFO): formats recognise a dataset by such names and then
    /// report what is wrong with the file, rather than not recognising it.
    fn exists(&self, path: &Path) -> bool {
        self.stat(path).is_ok()
    }

    /// The entries directly inside the directory `dir`, in no particular order.
    fn list(&self, dir: &Path) -> Result<Vec<Entry>>;

    /// Exactly `len` bytes of `path` at `offset`; a range past the end of the object is an
    /// error (never fewer bytes).
    fn read_range(&self, path: &Path, offset: u64, len: u64) -> Result<Vec<u8>>;

    /// The whole of the small object `path` (a `spec.json`, a `.gmeta`), refused with an
    /// [`ErrorKind::Limit`] error if it is larger than `limit`; `what` names it in messages.
    ///
    /// [`ErrorKind::Limit`]: crate::ErrorKind::Limit
    fn read_whole(&self, path: &Path, limit: u64, what: &str) -> Result<Vec<u8>>;

    /// The object `path` as a reader from its start, with its length, for one sequential
    /// pass (a stream over a whole part file). Reads stop at that length.
    fn read_sequential(&self, path: &Path) -> Result<(Box<dyn std::io::Read + Send>, u64)>;

    /// Opens `paths` as file numbers `0..paths.len()` for batched record reads. The local
    /// store opens them with `backend`; an object store has its own reader and may ignore it.
    fn open_files(&self, paths: &[PathBuf], backend: &Backend) -> Result<Box<dyn ReadAt>>;

    /// The length of the object `path`; a directory is an error.
    fn size(&self, path: &Path) -> Result<u64> {
        match self.stat(path)? {
            InputKind::File(len) => Ok(len),
            InputKind::Dir => {
                Err(Error::invalid_input("is a directory, not a file").with_path(path))
            }
        }
    }

    /// What tells the current content of the file `path` from any other: a text that
    /// changes whenever the file is replaced or rewritten, as far as the store can tell (a
    /// file system: device, inode, size and modification time; an object store: size, ETag
    /// and last-modified time). For caches of opened datasets, which must not serve a
    /// changed dataset. By default the size alone.
    fn version(&self, path: &Path) -> Result<String> {
        self.size(path).map(|size| size.to_string())
    }

    /// The version of the file `path` this store read, as it learnt it while the dataset
    /// was opened, with no further request: an object store's size and entity tag (or
    /// last-modified time) of each object, which every later read of it is held to. A
    /// process that opens the dataset again (a forked or unpickled copy) compares its own
    /// with the first one's, so that it does not read a replaced object while the first
    /// reads the old one. `None` where nothing is remembered (the local file system).
    fn opened_version(&self, path: &Path) -> Option<String> {
        let _ = path;
        None
    }

    /// Whether `path` is a regular file (an object).
    fn is_file(&self, path: &Path) -> bool {
        matches!(self.stat(path), Ok(InputKind::File(_)))
    }

    /// Whether `path` is a directory (a prefix with entries under it).
    fn is_dir(&self, path: &Path) -> bool {
        matches!(self.stat(path), Ok(InputKind::Dir))
    }

    /// The first error other than "not found" that [`exists`](Self::exists),
    /// [`is_file`](Self::is_file) or [`is_dir`](Self::is_dir) answered `false` for since the
    /// last call, which it clears. Recognising a format asks such yes-or-no questions; an
    /// object store that cannot be reached answers each with `false` (after its retries), so
    /// without this a wrong endpoint or a refused connection read as "cannot tell the
    /// format", after one retry cycle per question. The local file system answers from the
    /// file system at once and keeps none.
    fn take_failed_question(&self) -> Option<Error> {
        None
    }
}

/// The files of a dataset given as `path`: `path` itself unless it is a directory, else
/// the entries of the directory whose extension is `extension`, sorted by name (FFRecord's
/// `.ffr` parts, Syrah's `.syr` files). Entries so named are taken whatever they are but
/// directories, so that a FIFO or a dangling link is reported when opened rather than left
/// out silently; `path` itself is stat-ed first, so a FIFO there is refused at once. A
/// directory with no such entry is a [`NotFound`](crate::ErrorKind::NotFound) error: opened
/// as an empty dataset, a wrong directory (an empty one, another format's) made a training
/// loop that silently read nothing.
pub fn files_with_extension(
    store: &dyn Store,
    path: &Path,
    extension: &str,
) -> Result<Vec<PathBuf>> {
    if store.stat(path)? != InputKind::Dir {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut files: Vec<PathBuf> = store
        .list(path)?
        .into_iter()
        .filter(|entry| !entry.is_dir && entry.path.extension().is_some_and(|x| x == extension))
        .map(|entry| entry.path)
        .collect();
    if files.is_empty() {
        return Err(crate::Error::new(
            crate::ErrorKind::NotFound,
            format!("the directory holds no *.{extension} file"),
        )
        .with_path(path));
    }
    files.sort_by(|a, b| a.file_name().cmp(&b.file_name()));
    Ok(files)
}

/// A warning when the files of a directory (its listing, in any order) are all numbered
/// parts, named `{prefix}{digits}.{extension}`, and their numbers do not run 0, 1, 2, …:
/// parts are missing from it (deleted, or lost in a copy). `None` when nothing is missing,
/// or when a name does not follow the pattern (a directory of files named otherwise has no
/// numbering to check), or when `files` is `dir` itself (a file opened alone, as
/// [`files_with_extension`] lists it). A missing last part cannot be told.
pub fn missing_numbered_parts(
    dir: &Path,
    files: &[PathBuf],
    prefix: &str,
    extension: &str,
) -> Option<crate::Warning> {
    if files == [dir] {
        return None;
    }
    let mut numbers = Vec::with_capacity(files.len());
    for file in files {
        let name = file.file_name()?.to_str()?;
        let digits = name.strip_prefix(prefix)?.strip_suffix(extension)?.strip_suffix('.')?;
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        numbers.push(digits.parse::<u64>().ok()?);
    }
    numbers.sort_unstable();
    numbers.dedup();
    let last = *numbers.last()?;
    let present = numbers.len() as u64;
    if last.checked_add(1) == Some(present) {
        return None;
    }
    // The first few numbers missing, for the message.
    let mut missing = Vec::new();
    let mut expected = 0u64;
    for &n in &numbers {
        while expected < n && missing.len() < 5 {
            missing.push(expected);
            expected += 1;
        }
        expected = n + 1;
    }
    let count = last + 1 - present;
    let listed = missing.iter().map(|n| n.to_string()).collect::<Vec<_>>().join(", ");
    let more = if count > missing.len() as u64 { " …" } else { "" };
    Some(crate::Warning {
        kind: crate::WarningKind::MissingParts,
        path: Some(dir.to_path_buf()),
        message: format!(
            "{count} of the parts numbered 0 to {last} are missing ({listed}{more}): the \
             dataset is read from the {present} that are there"
        ),
    })
}

/// A shared store, as format options hold it.
pub type StoreRef = Arc<dyn Store>;

/// The local file system as a [`Store`]. Inputs are checked as [`crate::paths`] checks them:
/// FIFOs, devices and sockets are refused without blocking.
#[derive(Clone, Copy, Debug, Default)]
pub struct LocalStore;

/// The local file system, shared: the default store of every reader.
pub fn local_store() -> StoreRef {
    Arc::new(LocalStore)
}

impl Store for LocalStore {
    fn name(&self) -> &'static str {
        "file"
    }

    fn stat(&self, path: &Path) -> Result<InputKind> {
        crate::paths::input_kind(path)
    }

    fn exists(&self, path: &Path) -> bool {
        std::fs::symlink_metadata(path).is_ok()
    }

    fn version(&self, path: &Path) -> Result<String> {
        let meta = std::fs::metadata(path)
            .map_err(|e| crate::paths::path_error(e, "cannot stat", path))?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            Ok(format!(
                "{} {} {} {}.{}",
                meta.dev(),
                meta.ino(),
                meta.size(),
                meta.mtime(),
                meta.mtime_nsec()
            ))
        }
        #[cfg(not(unix))]
        {
            let modified =
                meta.modified().ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok());
            Ok(format!("{} {:?}", meta.len(), modified))
        }
    }

    fn list(&self, dir: &Path) -> Result<Vec<Entry>> {
        let entries =
            std::fs::read_dir(dir).map_err(|e| crate::paths::path_error(e, "cannot list", dir))?;
        let mut out = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| Error::io(e, "cannot list").with_path(dir))?;
            let path = entry.path();
            let is_dir = path.is_dir();
            out.push(Entry { path, is_dir });
        }
        Ok(out)
    }

    fn read_range(&self, path: &Path, offset: u64, len: u64) -> Result<Vec<u8>> {
        let (file, file_len) = crate::paths::open_input(path)?;
        crate::check_within(offset, len, file_len, "read").map_err(|e| e.with_path(path))?;
        let mut buf = crate::try_zeroed(len, u64::MAX, "read").map_err(|e| e.with_path(path))?;
        read_exact_at(&file, &mut buf, offset).map_err(|e| {
            if e.kind() == std::io::ErrorKind::UnexpectedEof {
                crate::io::short_read(path, offset, buf.len(), file_len)
            } else {
                Error::io(e, "cannot read").with_path(path).with_offset(offset)
            }
        })?;
        Ok(buf)
    }

    fn read_whole(&self, path: &Path, limit: u64, what: &str) -> Result<Vec<u8>> {
        crate::paths::read_input(path, limit, what)
    }

    fn read_sequential(&self, path: &Path) -> Result<(Box<dyn std::io::Read + Send>, u64)> {
        let (file, len) = crate::paths::open_input(path)?;
        Ok((Box::new(file), len))
    }

    fn open_files(&self, paths: &[PathBuf], backend: &Backend) -> Result<Box<dyn ReadAt>> {
        backend.open(paths)
    }
}

#[cfg(unix)]
fn read_exact_at(file: &std::fs::File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, buf, offset)
}

#[cfg(not(unix))]
fn read_exact_at(file: &std::fs::File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = file;
    file.seek(SeekFrom::Start(offset))?;
    file.read_exact(buf)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;

    #[test]
    fn numbered_parts_with_a_gap_are_told() {
        let dir = Path::new("/data/train");
        let names = |names: &[&str]| names.iter().map(|n| dir.join(n)).collect::<Vec<_>>();
        let check = |files: &[&str]| missing_numbered_parts(dir, &names(files), "PART_", "ffr");
        // Whole, in any order, any width: nothing to say.
        assert_eq!(check(&["PART_00001.ffr", "PART_00000.ffr", "PART_00002.ffr"]), None);
        assert_eq!(check(&["PART_0.ffr", "PART_1.ffr"]), None);
        assert_eq!(check(&["PART_00000.ffr"]), None);
        // A file opened alone is listed as itself: no numbering to check.
        let alone = dir.join("PART_00003.ffr");
        assert_eq!(
            missing_numbered_parts(&alone, std::slice::from_ref(&alone), "PART_", "ffr"),
            None
        );
        // Names that are not numbered parts: no numbering to check.
        assert_eq!(check(&["PART_00000.ffr", "PART_00002.ffr", "extra.ffr"]), None);
        assert_eq!(check(&["PART_00000.ffr", "PART_x2.ffr", "PART_00003.ffr"]), None);
        assert_eq!(check(&["PART_.ffr", "PART_00002.ffr"]), None);
        assert_eq!(check(&["train_00.ffr", "train_02.ffr"]), None);
        // Missing between, or before the first.
        let gap = check(&["PART_00000.ffr", "PART_00003.ffr", "PART_00001.ffr"]).unwrap();
        assert_eq!(gap.kind, crate::WarningKind::MissingParts);
        assert_eq!(gap.path.as_deref(), Some(dir));
        assert!(gap.message.contains("1 of the parts numbered 0 to 3 are missing (2)"), "{gap:?}");
        assert!(gap.message.contains("from the 3 that are there"), "{gap:?}");
        let late = check(&["PART_00002.ffr", "PART_00003.ffr"]).unwrap();
        assert!(late.message.contains("2 of the parts numbered 0 to 3 are missing (0, 1)"));
        let many = check(&["PART_00000.ffr", "PART_00100.ffr"]).unwrap();
        assert!(many.message.contains("99 of the parts numbered 0 to 100"), "{many:?}");
        assert!(many.message.contains("(1, 2, 3, 4, 5 …)"), "{many:?}");
        // Another naming, as Syrah's parts are named.
        let syrah = missing_numbered_parts(dir, &names(&["part-1.syr"]), "part-", "syr");
        assert!(syrah.is_some());
        assert_eq!(missing_numbered_parts(dir, &[], "part-", "syr"), None);
    }

    #[test]
    fn local_store_lists_stats_and_reads_ranges() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.bin"), b"0123456789").unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        let store = LocalStore;
        let mut entries = store.list(dir.path()).unwrap();
        entries.sort_by(|a, b| a.path.cmp(&b.path));
        let names: Vec<_> = entries.iter().map(|e| (e.name().into_owned(), e.is_dir)).collect();
        assert_eq!(names, vec![("a.bin".to_string(), false), ("sub".to_string(), true)]);
        assert_eq!(store.size(&dir.path().join("a.bin")).unwrap(), 10);
        assert!(store.is_dir(&dir.path().join("sub")));
        assert!(!store.is_file(&dir.path().join("sub")));
        assert_eq!(store.read_range(&dir.path().join("a.bin"), 3, 4).unwrap(), b"3456");
        let past = store.read_range(&dir.path().join("a.bin"), 8, 4).unwrap_err();
        assert_eq!(past.kind(), ErrorKind::Corrupt, "{past}");
        let missing = store.stat(&dir.path().join("nope")).unwrap_err();
        assert_eq!(missing.kind(), ErrorKind::NotFound);
        assert!(!store.exists(&dir.path().join("nope")));
        let whole = store.read_whole(&dir.path().join("a.bin"), 5, "the file").unwrap_err();
        assert_eq!(whole.kind(), ErrorKind::Limit);
    }

    #[test]
    fn a_directory_without_the_formats_files_is_not_found() {
        let dir = tempfile::tempdir().unwrap();
        let store = LocalStore;
        // Empty, and holding only other files and a directory so named: no dataset, rather
        // than an empty one that a training loop would read as nothing.
        for present in [&[][..], &["x.syr", "notes.txt"][..]] {
            for name in present {
                std::fs::write(dir.path().join(name), b"").unwrap();
            }
            std::fs::create_dir_all(dir.path().join("sub.ffr")).unwrap();
            let e = files_with_extension(&store, dir.path(), "ffr").unwrap_err();
            assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
            assert!(e.to_string().contains("no *.ffr file"), "{e}");
        }
        std::fs::write(dir.path().join("b.ffr"), b"").unwrap();
        std::fs::write(dir.path().join("a.ffr"), b"").unwrap();
        let found = files_with_extension(&store, dir.path(), "ffr").unwrap();
        assert_eq!(found, [dir.path().join("a.ffr"), dir.path().join("b.ffr")]);
    }
}
