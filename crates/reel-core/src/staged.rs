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
/// Its name keeps at most the first 160 bytes of the final name, so a final name the file
/// system accepts always gives a staging name it accepts too.
fn temp_sibling(path: &Path) -> Result<PathBuf> {
    let prefix = staging_prefix(path)?;
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    Ok(path.with_file_name(format!("{prefix}{}-{n}", std::process::id())))
}

/// The start of the name of every staging sibling of `path`: `.NAME.reel-tmp-`.
fn staging_prefix(path: &Path) -> Result<String> {
    let name = path
        .file_name()
        .ok_or_else(|| Error::invalid_input("output path has no file name").with_path(path))?;
    let lossy = name.to_string_lossy();
    let mut cut = lossy.len().min(160);
    while !lossy.is_char_boundary(cut) {
        cut -= 1;
    }
    Ok(format!(".{}.reel-tmp-", &lossy[..cut]))
}

/// How long a staging sibling must have gone unmodified before a new write of the same
/// path may take it for abandoned: a writer holds its lock from the moment after it
/// creates the file, and this covers that moment by far.
const ABANDONED_AFTER: std::time::Duration = std::time::Duration::from_secs(60);

/// Removes the staging files and directories that earlier writes of `path` left behind
/// when their process was killed (SIGKILL, a crash, the machine stopping: no drop ran),
/// which stayed as large as what had been written, for ever. A writer holds an exclusive
/// advisory lock (`flock`) on its staging for as long as it lives, and the kernel drops the
/// lock when the process ends however it ends; so a sibling whose lock can be taken, and
/// that has not changed for [`ABANDONED_AFTER`], belongs to no live writer. Where locks
/// cannot be taken (a file system without them) nothing is removed. Best effort: an entry
/// that cannot be looked at or removed stays.
fn remove_abandoned(path: &Path) {
    let Ok(prefix) = staging_prefix(path) else { return };
    let Ok(entries) = fs::read_dir(parent_of(path)) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(&prefix)) else { continue };
        let numbered = rest.split_once('-').is_some_and(|(pid, n)| {
            [pid, n].iter().all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        });
        let Ok(meta) = entry.metadata() else { continue };
        let idle = meta.modified().ok().and_then(|m| m.elapsed().ok());
        if !numbered || idle.is_none_or(|idle| idle < ABANDONED_AFTER) {
            continue;
        }
        let Ok(held) = File::open(entry.path()) else { continue };
        if held.try_lock().is_err() {
            continue;
        }
        let _ = if meta.is_dir() {
            fs::remove_dir_all(entry.path())
        } else {
            fs::remove_file(entry.path())
        };
    }
}

/// Takes the exclusive lock on a staging file or directory that tells a live writer from
/// an abandoned one (see [`remove_abandoned`]). A file system without advisory locks leaves
/// it untaken, and abandoned staging there is never removed.
fn hold(staging: &File) {
    let _ = staging.try_lock();
}

/// Checks what can be checked about `final_path` before staging next to it (its name's
/// length, its directory), so that errors name the user's path, not the staging name.
fn check_final(final_path: &Path) -> Result<()> {
    crate::paths::check_destination(final_path, &[], crate::paths::Existing::Overwrite)
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
        check_final(&final_path)?;
        remove_abandoned(&final_path);
        let temp_path = temp_sibling(&final_path)?;
        let file =
            OpenOptions::new().read(true).write(true).create_new(true).open(&temp_path).map_err(
                |e| {
                    Error::io(e, format!("cannot create a staging file ({})", temp_path.display()))
                        .with_path(&final_path)
                },
            )?;
        hold(&file);
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
    /// The directory, open, holding the lock that tells this live writer from an
    /// abandoned one (see [`remove_abandoned`]).
    _held: Option<File>,
}

impl StagedDir {
    /// Creates an empty temporary directory next to `final_path`.
    pub fn create(final_path: impl AsRef<Path>) -> Result<Self> {
        let final_path = final_path.as_ref().to_path_buf();
        check_final(&final_path)?;
        remove_abandoned(&final_path);
        let temp_path = temp_sibling(&final_path)?;
        fs::create_dir(&temp_path).map_err(|e| {
            Error::io(e, format!("cannot create a staging directory ({})", temp_path.display()))
                .with_path(&final_path)
        })?;
        let held = File::open(&temp_path).ok();
        if let Some(dir) = &held {
            hold(dir);
        }
        Ok(StagedDir { final_path, temp_path, committed: false, _held: held })
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
        replace_path(&self.temp_path, &self.final_path)?;
        self.committed = true;
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
    if let Ok(meta) = fs::symlink_metadata(target)
        && !meta.is_dir()
    {
        let what = if meta.file_type().is_symlink() {
            "a symbolic link is in the way (remove it or choose another path)"
        } else {
            "output already exists and is not a directory"
        };
        return Err(Error::new(ErrorKind::InvalidInput, what).with_path(target));
    }
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

/// A fresh name beside `target` for output that will replace it (see [`replace_path`]):
/// hidden, unique, and short enough for the file system whenever `target`'s name is.
pub fn staging_path(target: &Path) -> Result<PathBuf> {
    temp_sibling(target)
}

/// Moves the finished, durable output `staged` (a file or a directory) to `target`,
/// replacing whatever is there: the old content is moved aside first and deleted only once
/// the new output is in place, so a crash leaves one or the other under `target`.
pub fn replace_path(staged: &Path, target: &Path) -> Result<()> {
    let old = if fs::symlink_metadata(target).is_ok() {
        let aside = temp_sibling(target)?;
        fs::rename(target, &aside)
            .map_err(|e| Error::io(e, "cannot move the old output aside").with_path(target))?;
        Some(aside)
    } else {
        None
    };
    fs::rename(staged, target)
        .map_err(|e| Error::io(e, "cannot move the new output into place").with_path(target))?;
    sync_dir(parent_of(target))?;
    if let Some(old) = old {
        remove_any(&old)
            .map_err(|e| Error::io(e, "cannot remove the old output").with_path(&old))?;
    }
    Ok(())
}

fn remove_any(path: &Path) -> io::Result<()> {
    let is_dir = fs::symlink_metadata(path).is_ok_and(|m| m.is_dir());
    if is_dir { fs::remove_dir_all(path) } else { fs::remove_file(path) }
}

/// Publishes the finished output `staged` (a file, or a directory such as a multi-part
/// dataset assembled by a distributed job) at `target`: everything in it made durable, then
/// renamed into place. With `overwrite`, what is at `target` is replaced as
/// [`replace_path`] does; without, anything at `target` is refused
/// ([`ErrorKind::InvalidInput`]) and `staged` is left as it is.
pub fn publish_path(staged: &Path, target: &Path, overwrite: bool) -> Result<()> {
    if fs::symlink_metadata(staged).is_ok_and(|m| m.is_dir()) {
        sync_tree(staged)?;
    } else {
        let f = File::open(staged).map_err(|e| Error::io(e, "cannot open").with_path(staged))?;
        f.sync_all().map_err(|e| Error::io(e, "cannot sync").with_path(staged))?;
    }
    if !overwrite && fs::symlink_metadata(target).is_ok() {
        return Err(Error::new(ErrorKind::InvalidInput, "output already exists").with_path(target));
    }
    replace_path(staged, target)
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
    fn staging_abandoned_by_a_killed_writer_goes_with_the_next_write() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("data.ffr");
        let long_ago = std::time::SystemTime::now() - 2 * ABANDONED_AFTER;
        let sibling = |name: &str| dir.path().join(name);
        // What a killed writer leaves: no process holds its lock.
        let abandoned = sibling(".data.ffr.reel-tmp-4000000-0");
        File::create(&abandoned).unwrap().set_modified(long_ago).unwrap();
        let abandoned_dir = sibling(".data.ffr.reel-tmp-4000000-1");
        fs::create_dir(&abandoned_dir).unwrap();
        fs::write(abandoned_dir.join("part"), b"x").unwrap();
        File::open(&abandoned_dir).unwrap().set_modified(long_ago).unwrap();
        // A live writer's (its lock held), a fresh one (its writer may be about to take
        // the lock), another path's, and a name that is not a staging name.
        let live = sibling(".data.ffr.reel-tmp-4000001-0");
        let held = File::create(&live).unwrap();
        held.set_modified(long_ago).unwrap();
        held.try_lock().unwrap();
        let fresh = sibling(".data.ffr.reel-tmp-4000002-0");
        File::create(&fresh).unwrap();
        let other = sibling(".other.ffr.reel-tmp-4000000-0");
        File::create(&other).unwrap().set_modified(long_ago).unwrap();
        let unnumbered = sibling(".data.ffr.reel-tmp-x-0");
        File::create(&unnumbered).unwrap().set_modified(long_ago).unwrap();

        let mut staged = StagedFile::create(&target).unwrap();
        staged.file_mut().write_all(b"new").unwrap();
        assert!(!abandoned.exists() && !abandoned_dir.exists());
        assert!(live.exists() && fresh.exists() && other.exists() && unnumbered.exists());
        // The new staging holds its own lock from the start.
        assert!(File::open(staged.temp_path()).unwrap().try_lock().is_err());
        staged.commit().unwrap();
        assert_eq!(fs::read(&target).unwrap(), b"new");
        drop(held);
        let dir_target = dir.path().join("tree");
        let staged_dir = StagedDir::create(&dir_target).unwrap();
        assert!(File::open(staged_dir.path()).unwrap().try_lock().is_err());
    }

    #[test]
    fn publish_path_takes_files_and_directories_and_refuses_what_is_there() {
        let dir = tempfile::tempdir().unwrap();
        let (file, tree) = (dir.path().join("f.staged"), dir.path().join("d.staged"));
        std::fs::write(&file, b"one").unwrap();
        std::fs::create_dir_all(tree.join("part")).unwrap();
        std::fs::write(tree.join("part/x"), b"two").unwrap();
        publish_path(&file, &dir.path().join("f"), false).unwrap();
        publish_path(&tree, &dir.path().join("d"), false).unwrap();
        assert_eq!(std::fs::read(dir.path().join("f")).unwrap(), b"one");
        assert_eq!(std::fs::read(dir.path().join("d/part/x")).unwrap(), b"two");

        std::fs::write(&file, b"new").unwrap();
        let e = publish_path(&file, &dir.path().join("d"), false).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput);
        assert!(file.exists(), "a refused publish leaves the staged output");
        publish_path(&file, &dir.path().join("d"), true).unwrap();
        assert_eq!(std::fs::read(dir.path().join("d")).unwrap(), b"new");
    }

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
