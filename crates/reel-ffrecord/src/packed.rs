//! Packed folders: a directory tree stored in one `.ffr` file (`ffrecord.pack_folder`).
//!
//! Every file is one record, in depth-first sorted order; the last record is the magic
//! `piouhjgbr` followed by a pickled tree of `OrderedDict`s mapping names to record
//! indices. reel reads that pickle with a strict parser (see [`crate::pickle`]) instead of
//! running it, so a packed folder from an untrusted source is safe to open.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use reel_core::{Error, ErrorKind, ReadAt, Result, SinkSummary};

use crate::FORMAT;
use crate::pickle::{FolderDir, FolderEntry, parse_folder_index, write_folder_index};
use crate::reader::{FfrecordOptions, FfrecordReader};
use crate::writer::FfrecordWriter;

/// The 9 bytes that start the last record of a packed folder.
pub const PACKED_MAGIC: &[u8; 9] = b"piouhjgbr";

/// A packed folder opened for reading.
pub struct PackedFolder<F: ReadAt = Box<dyn ReadAt>> {
    reader: FfrecordReader<F>,
    root: FolderDir,
}

impl PackedFolder {
    /// Opens a packed folder with default options (checksums verified).
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        Self::open_with(path, &FfrecordOptions::default())
    }

    /// Opens a packed folder.
    pub fn open_with(path: impl AsRef<Path>, options: &FfrecordOptions) -> Result<Self> {
        let reader = FfrecordReader::open_paths(&[path.as_ref().to_path_buf()], options)?;
        PackedFolder::from_reader(reader, &options.limits)
    }
}

/// Whether `meta` (the last record of a file) is a packed-folder index.
pub fn is_packed_index(meta: &[u8]) -> bool {
    meta.len() > PACKED_MAGIC.len() && meta.starts_with(PACKED_MAGIC)
}

impl<F: ReadAt> PackedFolder<F> {
    /// Reads the folder index from the last record of `reader`.
    pub fn from_reader(reader: FfrecordReader<F>, limits: &reel_core::Limits) -> Result<Self> {
        let path = reader.fnames().first().cloned().unwrap_or_default();
        let n = reader.n();
        let not_packed = || {
            Error::invalid_input(
                "not a packed folder (the last record does not start with the packed-folder magic)",
            )
            .with_path(&path)
            .with_format(FORMAT)
        };
        if n == 0 {
            return Err(not_packed());
        }
        let meta = reader.read_one(n - 1)?;
        if !is_packed_index(&meta) {
            return Err(not_packed());
        }
        let root = parse_folder_index(&meta[PACKED_MAGIC.len()..], limits.max_nesting)
            .map_err(|e| e.with_record(n - 1).with_path(&path).with_format(FORMAT))?;
        check_indices(&root, n - 1)
            .map_err(|e| e.with_record(n - 1).with_path(&path).with_format(FORMAT))?;
        Ok(PackedFolder { reader, root })
    }

    /// Number of files (the reference's `num_files`).
    pub fn num_files(&self) -> u64 {
        self.reader.n() - 1
    }

    /// The root directory of the tree.
    pub fn root(&self) -> &FolderDir {
        &self.root
    }

    /// The underlying FFRecord reader.
    pub fn reader(&self) -> &FfrecordReader<F> {
        &self.reader
    }

    /// The entry at `path` (`""` is the root). Paths split on `/` like Python's
    /// `Path(p).parts`: `.` segments and repeated slashes are dropped, `..` is a literal
    /// name, and an absolute path never matches.
    pub fn lookup(&self, path: &str) -> Option<Lookup<'_>> {
        let mut dir = &self.root;
        let mut parts = path_parts(path).peekable();
        while let Some(part) = parts.next() {
            match dir.get(part)? {
                FolderEntry::Dir(d) => dir = d,
                FolderEntry::File(i) => {
                    return if parts.peek().is_none() { Some(Lookup::File(*i)) } else { None };
                }
            }
        }
        Some(Lookup::Dir(dir))
    }

    /// Whether `path` names a file or directory.
    pub fn exists(&self, path: &str) -> bool {
        self.lookup(path).is_some()
    }

    /// Whether `path` names a file.
    pub fn is_file(&self, path: &str) -> bool {
        matches!(self.lookup(path), Some(Lookup::File(_)))
    }

    /// Whether `path` names a directory.
    pub fn is_dir(&self, path: &str) -> bool {
        matches!(self.lookup(path), Some(Lookup::Dir(_)))
    }

    /// The record index of the file at `path`.
    pub fn index_of(&self, path: &str) -> Result<u64> {
        match self.lookup(path) {
            Some(Lookup::File(i)) => Ok(i),
            Some(Lookup::Dir(_)) => {
                Err(Error::invalid_input(format!("{path:?} is a directory, not a file"))
                    .with_format(FORMAT))
            }
            None => Err(Error::new(
                ErrorKind::NotFound,
                format!("{path:?} does not exist in the packed folder"),
            )
            .with_format(FORMAT)),
        }
    }

    /// Names under directory `path`, in stored order (the reference's `list`). With
    /// `recursive`, the content of each subdirectory follows it as `dir/name`.
    pub fn list(
        &self,
        path: &str,
        list_file: bool,
        list_dir: bool,
        recursive: bool,
    ) -> Result<Vec<String>> {
        let dir = match self.lookup(path) {
            Some(Lookup::Dir(d)) => d,
            Some(Lookup::File(_)) => {
                return Err(Error::invalid_input(format!("{path:?} is a file, not a directory"))
                    .with_format(FORMAT));
            }
            None => {
                return Err(Error::new(
                    ErrorKind::NotFound,
                    format!("{path:?} does not exist in the packed folder"),
                )
                .with_format(FORMAT));
            }
        };
        let mut names = Vec::new();
        list_into(dir, "", list_file, list_dir, recursive, &mut names);
        Ok(names)
    }

    /// The content of the file at `path` (the reference's `read_one`).
    pub fn read_one(&self, path: &str) -> Result<Vec<u8>> {
        let i = self.index_of(path)?;
        self.reader.read_one(i)
    }

    /// The contents of several files in one batched read (the reference's `read`).
    pub fn read(&self, paths: &[&str]) -> Result<Vec<Vec<u8>>> {
        let indices = paths.iter().map(|p| self.index_of(p)).collect::<Result<Vec<_>>>()?;
        self.reader.read_many(&indices)
    }
}

/// What a path names in a packed folder.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lookup<'a> {
    /// A file, stored as this record.
    File(u64),
    /// A directory.
    Dir(&'a FolderDir),
}

fn path_parts(path: &str) -> impl Iterator<Item = &str> {
    let absolute = path.starts_with('/').then_some("/");
    absolute.into_iter().chain(path.split('/').filter(|s| !s.is_empty() && *s != "."))
}

fn list_into(
    dir: &FolderDir,
    prefix: &str,
    files: bool,
    dirs: bool,
    recursive: bool,
    out: &mut Vec<String>,
) {
    for (name, entry) in dir.entries() {
        let is_file = matches!(entry, FolderEntry::File(_));
        if (is_file && files) || (!is_file && dirs) {
            out.push(format!("{prefix}{name}"));
        }
        if let (true, FolderEntry::Dir(d)) = (recursive, entry) {
            list_into(d, &format!("{prefix}{name}/"), files, dirs, recursive, out);
        }
    }
}

fn check_indices(dir: &FolderDir, files: u64) -> Result<()> {
    for (name, entry) in dir.entries() {
        match entry {
            FolderEntry::File(i) if *i >= files => {
                return Err(Error::corrupt(format!(
                    "folder index points {name:?} at record {i}, but the folder holds only {files} files"
                )));
            }
            FolderEntry::Dir(d) => check_indices(d, files)?,
            FolderEntry::File(_) => {}
        }
    }
    Ok(())
}

/// Packs directory `folder` into the FFRecord file `out_file`, as
/// `ffrecord.pack_folder` does: entries sorted by name (code-point order), files numbered
/// depth-first, empty directories kept, the folder index as the last record. The index is
/// written byte for byte as CPython 3.8+ pickles it, so the output is identical to the
/// reference's for the same tree.
///
/// Symbolic links are followed like the reference does; unlike the reference, a link cycle
/// is an error instead of an endless walk, and entries that are neither files nor
/// directories (sockets, FIFOs, dangling links) are refused instead of hanging or failing
/// half-way. File contents are streamed, not held in memory.
pub fn pack_folder(folder: impl AsRef<Path>, out_file: impl AsRef<Path>) -> Result<SinkSummary> {
    let folder = std::path::absolute(folder.as_ref())
        .map_err(|e| Error::io(e, "cannot resolve folder path").with_path(folder.as_ref()))?;
    if !folder.is_dir() {
        return Err(Error::invalid_input("not a directory").with_path(&folder).with_format(FORMAT));
    }
    let mut files = Vec::new();
    let mut ancestors = Vec::new();
    let root = walk(&folder, &mut files, &mut ancestors).map_err(|e| e.with_format(FORMAT))?;
    let mut meta = PACKED_MAGIC.to_vec();
    meta.extend_from_slice(&write_folder_index(&root));

    let mut writer = FfrecordWriter::create(out_file, files.len() as u64 + 1)?;
    // Stops at the next file once the calling thread's flag is raised (Ctrl-C); the writer,
    // dropped unfinished, leaves nothing.
    let cancel = reel_core::io::cancel::CancelCheck::current();
    for path in &files {
        cancel.stop_if_cancelled("packing the folder")?;
        let (f, len) = reel_core::paths::open_input(path)?;
        writer.write_one_from(f, len).map_err(|e| e.with_path(path))?;
    }
    writer.write_one(&meta)?;
    writer.finish()
}

#[cfg(unix)]
fn dir_identity(meta: &std::fs::Metadata) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    (meta.dev(), meta.ino())
}

#[cfg(not(unix))]
fn dir_identity(_meta: &std::fs::Metadata) -> (u64, u64) {
    (0, 0)
}

fn walk(
    dir: &Path,
    files: &mut Vec<PathBuf>,
    ancestors: &mut Vec<(u64, u64)>,
) -> Result<FolderDir> {
    let meta = std::fs::metadata(dir).map_err(|e| Error::io(e, "cannot stat").with_path(dir))?;
    let id = dir_identity(&meta);
    if cfg!(unix) && ancestors.contains(&id) {
        return Err(Error::invalid_input("symbolic link cycle: this directory contains itself")
            .with_path(dir));
    }
    ancestors.push(id);
    let mut names = Vec::new();
    let entries = std::fs::read_dir(dir).map_err(|e| Error::io(e, "cannot list").with_path(dir))?;
    for entry in entries {
        let entry = entry.map_err(|e| Error::io(e, "cannot list").with_path(dir))?;
        let name = entry.file_name().into_string().map_err(|n| {
            Error::unsupported(format!("file name {n:?} is not valid UTF-8")).with_path(dir)
        })?;
        names.push(name);
    }
    names.sort_unstable();
    let mut out = FolderDir::new();
    for name in names {
        let path = dir.join(&name);
        let meta =
            std::fs::metadata(&path).map_err(|e| Error::io(e, "cannot stat").with_path(&path))?;
        let entry = if meta.is_dir() {
            FolderEntry::Dir(walk(&path, files, ancestors)?)
        } else if meta.is_file() {
            files.push(path);
            FolderEntry::File(files.len() as u64 - 1)
        } else {
            return Err(
                Error::unsupported("neither a regular file nor a directory").with_path(&path)
            );
        };
        out.insert(Arc::from(name), entry);
    }
    ancestors.pop();
    Ok(out)
}
