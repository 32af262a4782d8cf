//! Crash-safe output: write under a temporary name, make it durable, then rename.
//!
//! A dataset only appears under its final name once every byte is on disk, so a crash or
//! an early drop leaves either the old state or the complete new dataset, never a file that
//! opens as a valid but wrong dataset.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::{Error, ErrorKind, Result};

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// The temporary sibling of `path`, unique within this process and unlikely across processes.
fn temp_sibling(path: &Path) -> Result<PathBuf> {
    let name = path
        .file_name()
        .ok_or_else(|| Error::invalid_input("output path has no file name").with_path(path))?;
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let mut temp = std::ffi::OsString::from(".");
    temp.push(name);
    temp.push(format!(".reel-tmp-{}-{n}", std::process::id()));
    Ok(path.with_file_name(temp))
}

fn parent_of(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Flushes a directory's entries (new names, renames) to disk.
pub fn sync_dir(dir: &Path) -> Result<()> {
    #[cfg(unix)]
    {
        let d =
            File::open(dir).map_err(|e| Error::io(e, "cannot open directory").with_path(dir))?;
        d.sync_all().map_err(|e| Error::io(e, "cannot sync directory").with_path(dir))?;
    }
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

/// A file written under a temporary name beside its final path.
#[derive(Debug)]
pub struct StagedFile {
    final_path: PathBuf,
    temp_path: PathBuf,
    file: File,
    committed: bool,
}

impl StagedFile {
    /// Creates the temporary file next to `final_path`. The parent directory must exist.
    pub fn create(final_path: impl AsRef<Path>) -> Result<Self> {
        let final_path = final_path.as_ref().to_path_buf();
        let temp_path = temp_sibling(&final_path)?;
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&temp_path)
            .map_err(|e| Error::io(e, "cannot create staging file").with_path(&temp_path))?;
        Ok(StagedFile { final_path, temp_path, file, committed: false })
    }

    /// The open temporary file.
    pub fn file(&self) -> &File {
        &self.file
    }

    /// The open temporary file, mutably (for `Write`/`Seek`).
    pub fn file_mut(&mut self) -> &mut File {
        &mut self.file
    }

    /// Where the data is being written.
    pub fn temp_path(&self) -> &Path {
        &self.temp_path
    }

    /// Where the data will appear on [`commit`](Self::commit).
    pub fn final_path(&self) -> &Path {
        &self.final_path
    }

    /// Syncs the file, renames it to the final path (replacing any file there) and syncs the
    /// directory.
    pub fn commit(mut self) -> Result<()> {
        self.file
            .sync_all()
            .map_err(|e| Error::io(e, "cannot sync staged file").with_path(&self.temp_path))?;
        fs::rename(&self.temp_path, &self.final_path).map_err(|e| {
            Error::io(e, "cannot move staged file into place").with_path(&self.final_path)
        })?;
        self.committed = true;
        sync_dir(parent_of(&self.final_path))
    }
}

impl Drop for StagedFile {
    fn drop(&mut self) {
        if !self.committed {
            // Best effort: the file has a temporary name no reader looks for.
            let _ = fs::remove_file(&self.temp_path);
        }
    }
}

/// A directory written under a temporary name beside its final path, for formats whose
/// dataset is a directory of files.
#[derive(Debug)]
pub struct StagedDir {
    final_path: PathBuf,
    temp_path: PathBuf,
    committed: bool,
}

impl StagedDir {
    /// Creates an empty temporary directory next to `final_path`.
    pub fn create(final_path: impl AsRef<Path>) -> Result<Self> {
        let final_path = final_path.as_ref().to_path_buf();
        let temp_path = temp_sibling(&final_path)?;
        fs::create_dir(&temp_path)
            .map_err(|e| Error::io(e, "cannot create staging directory").with_path(&temp_path))?;
        Ok(StagedDir { final_path, temp_path, committed: false })
    }

    /// The directory to write files into.
    pub fn path(&self) -> &Path {
        &self.temp_path
    }

    /// Where the directory will appear on commit.
    pub fn final_path(&self) -> &Path {
        &self.final_path
    }

    /// Syncs every file and directory inside, then renames the directory into place. Fails
    /// with [`ErrorKind::InvalidInput`] if a non-empty directory or a file is already there.
    pub fn commit(mut self) -> Result<()> {
        publish_dir(&self.temp_path, &self.final_path)?;
        self.committed = true;
        Ok(())
    }

    /// Like [`commit`](Self::commit), but replaces whatever is at the final path. The old
    /// content is moved aside first and deleted only after the new directory is in place.
    pub fn commit_replace(mut self) -> Result<()> {
        sync_tree(&self.temp_path)?;
        let old = if self.final_path.exists() {
            let aside = temp_sibling(&self.final_path)?;
            fs::rename(&self.final_path, &aside).map_err(|e| {
                Error::io(e, "cannot move old output aside").with_path(&self.final_path)
            })?;
            Some(aside)
        } else {
            None
        };
        fs::rename(&self.temp_path, &self.final_path).map_err(|e| {
            Error::io(e, "cannot move staged directory into place").with_path(&self.final_path)
        })?;
        self.committed = true;
        sync_dir(parent_of(&self.final_path))?;
        if let Some(old) = old {
            remove_any(&old)
                .map_err(|e| Error::io(e, "cannot remove old output").with_path(&old))?;
        }
        Ok(())
    }
}

impl Drop for StagedDir {
    fn drop(&mut self) {
        if !self.committed {
            let _ = fs::remove_dir_all(&self.temp_path);
        }
    }
}

/// Makes the directory `staged` durable (every file and directory in it synced) and renames
/// it to `target`, then syncs `target`'s parent. An empty directory at `target` (e.g. made by
/// the caller beforehand) is replaced; anything else there fails with
/// [`ErrorKind::InvalidInput`] and leaves `staged` untouched.
///
/// For writers that manage their own staging directory (a resumable writer keeps it under a
/// fixed name); others use [`StagedDir`].
pub fn publish_dir(staged: &Path, target: &Path) -> Result<()> {
    sync_tree(staged)?;
    if target.exists() {
        fs::remove_dir(target).map_err(|e| {
            Error::new(
                ErrorKind::InvalidInput,
                format!("output already exists and is not an empty directory ({e})"),
            )
            .with_path(target)
        })?;
    }
    fs::rename(staged, target)
        .map_err(|e| Error::io(e, "cannot move staged directory into place").with_path(target))?;
    sync_dir(parent_of(target))
}

fn remove_any(path: &Path) -> io::Result<()> {
    if path.is_dir() { fs::remove_dir_all(path) } else { fs::remove_file(path) }
}

/// Syncs every regular file below `dir`, then every directory (children before parents).
pub fn sync_tree(dir: &Path) -> Result<()> {
    let entries =
        fs::read_dir(dir).map_err(|e| Error::io(e, "cannot list directory").with_path(dir))?;
    for entry in entries {
        let entry = entry.map_err(|e| Error::io(e, "cannot list directory").with_path(dir))?;
        let path = entry.path();
        let ty = entry.file_type().map_err(|e| Error::io(e, "cannot stat").with_path(&path))?;
        if ty.is_dir() {
            sync_tree(&path)?;
        } else if ty.is_file() {
            let f = File::open(&path).map_err(|e| Error::io(e, "cannot open").with_path(&path))?;
            f.sync_all().map_err(|e| Error::io(e, "cannot sync").with_path(&path))?;
        }
    }
    sync_dir(dir)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn dropped_file_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out.bin");
        {
            let mut s = StagedFile::create(&target).unwrap();
            s.file_mut().write_all(b"partial").unwrap();
        }
        assert!(!target.exists());
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn committed_file_replaces_old() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out.bin");
        fs::write(&target, b"old").unwrap();
        let mut s = StagedFile::create(&target).unwrap();
        s.file_mut().write_all(b"new").unwrap();
        s.commit().unwrap();
        assert_eq!(fs::read(&target).unwrap(), b"new");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn staged_dir_commit_and_drop() {
        let root = tempfile::tempdir().unwrap();
        let target = root.path().join("ds");
        {
            let s = StagedDir::create(&target).unwrap();
            fs::write(s.path().join("a"), b"x").unwrap();
        }
        assert!(!target.exists());
        let s = StagedDir::create(&target).unwrap();
        fs::write(s.path().join("a"), b"x").unwrap();
        s.commit().unwrap();
        assert_eq!(fs::read(target.join("a")).unwrap(), b"x");
        // A second commit onto a non-empty directory is refused; replace works.
        let s = StagedDir::create(&target).unwrap();
        fs::write(s.path().join("b"), b"y").unwrap();
        let s2 = StagedDir::create(&target).unwrap();
        fs::write(s2.path().join("c"), b"z").unwrap();
        assert_eq!(s.commit().unwrap_err().kind(), ErrorKind::InvalidInput);
        s2.commit_replace().unwrap();
        assert!(target.join("c").exists() && !target.join("a").exists());
        assert_eq!(fs::read_dir(root.path()).unwrap().count(), 1);
    }
}
