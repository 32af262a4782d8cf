//! Checking a path before reel reads it or writes over it: the one place that decides what
//! reel may open and what it may replace.
//!
//! Input: a named pipe, a device or a socket where a data file should be would make a
//! plain `open` or `read` block forever (or read without end), so every input path is
//! `stat`ed first and only regular files and directories go on; the file itself is then
//! opened with `O_NONBLOCK` and checked again, so a path swapped for a FIFO in between
//! cannot block either. Symbolic-link loops are named as such.
//!
//! Output: a destination that exists is kept unless the caller asked to overwrite it, and a
//! destination that is (or holds, or lies inside) one of the inputs is never written.

use std::fs::{File, Metadata};
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::{Error, ErrorKind, Result};

/// The longest file name (one path component, in bytes) the common file systems accept
/// (ext4, xfs, btrfs, tmpfs: `NAME_MAX` = 255).
pub const MAX_NAME_BYTES: usize = 255;

/// What an input path names, once checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InputKind {
    /// A regular file of this many bytes.
    File(u64),
    /// A directory.
    Dir,
}

/// The error for a failed `stat`/`open` of `path`, in words that say what is wrong:
/// a missing path is [`ErrorKind::NotFound`], a symbolic-link loop says so.
pub fn path_error(err: std::io::Error, what: &str, path: &Path) -> Error {
    if err.raw_os_error() == Some(libc::ELOOP) {
        return Error::new(
            ErrorKind::InvalidInput,
            "too many levels of symbolic links (a symbolic link loop)",
        )
        .with_path(path);
    }
    if err.kind() == std::io::ErrorKind::NotFound {
        let dangling = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
        let message = if dangling {
            "is a symbolic link to something that does not exist"
        } else {
            "no such file or directory"
        };
        return Error::new(ErrorKind::NotFound, message).with_path(path);
    }
    Error::io(err, what).with_path(path)
}

/// The name of a file type that is neither a regular file nor a directory, or `None`.
fn special_kind(meta: &Metadata) -> Option<&'static str> {
    let ty = meta.file_type();
    if ty.is_file() || ty.is_dir() {
        return None;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if ty.is_fifo() {
            return Some("a named pipe (FIFO)");
        }
        if ty.is_char_device() {
            return Some("a character device");
        }
        if ty.is_block_device() {
            return Some("a block device");
        }
        if ty.is_socket() {
            return Some("a socket");
        }
    }
    Some("not a regular file")
}

/// Refuses `path` if `meta` is neither a regular file nor a directory; `rule` says what
/// reel does with files and directories (reads them, writes them).
fn refuse_special(meta: &Metadata, path: &Path, rule: &str) -> Result<()> {
    match special_kind(meta) {
        None => Ok(()),
        Some(kind) => {
            Err(Error::invalid_input(format!("is {kind}, not a regular file or directory; {rule}"))
                .with_path(path))
        }
    }
}

/// What [`refuse_special`] says of inputs.
const READS_ONLY: &str = "reel reads only files and directories";

/// Stats `path` (following links, which never blocks) and says whether it is a regular
/// file or a directory; anything else (FIFO, device, socket) is refused with an
/// [`ErrorKind::InvalidInput`] error naming `path`.
pub fn input_kind(path: &Path) -> Result<InputKind> {
    let meta = std::fs::metadata(path).map_err(|e| path_error(e, "cannot stat", path))?;
    refuse_special(&meta, path, READS_ONLY)?;
    Ok(if meta.is_dir() { InputKind::Dir } else { InputKind::File(meta.len()) })
}

/// Whether `path` is a regular file (following links); never opens it.
pub fn is_regular_file(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file())
}

/// Opens the regular file `path` for reading and returns it with its length. Anything else
/// — a directory, a FIFO, a device, a socket — is refused without blocking.
pub fn open_input(path: &Path) -> Result<(File, u64)> {
    match input_kind(path)? {
        InputKind::File(_) => {}
        InputKind::Dir => {
            return Err(Error::invalid_input("is a directory, not a file").with_path(path));
        }
    }
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        // Should the path have become a FIFO since the stat, the open must not wait for a
        // writer; on a regular file O_NONBLOCK changes nothing.
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY);
    }
    let file = options.open(path).map_err(|e| path_error(e, "cannot open", path))?;
    let meta = file.metadata().map_err(|e| Error::io(e, "cannot stat").with_path(path))?;
    refuse_special(&meta, path, READS_ONLY)?;
    if !meta.is_file() {
        return Err(Error::invalid_input("is not a regular file").with_path(path));
    }
    Ok((file, meta.len()))
}

/// Reads the whole regular file `path` (a metadata file: `spec.json`, a `.gmeta` …),
/// refusing it with an [`ErrorKind::Limit`] error naming its size if it is larger than
/// `limit`, and allocating fallibly.
pub fn read_input(path: &Path, limit: u64, what: &str) -> Result<Vec<u8>> {
    let (file, len) = open_input(path)?;
    if len > limit {
        return Err(Error::new(
            ErrorKind::Limit,
            format!("{what} is {len} bytes, above the configured limit of {limit}"),
        )
        .with_path(path));
    }
    let mut buf = crate::limits::try_vec_with_capacity::<u8>(len, limit, what)
        .map_err(|e| e.with_path(path))?;
    // `take` bounds the read should the file grow while it is read.
    file.take(limit.saturating_add(1))
        .read_to_end(&mut buf)
        .map_err(|e| Error::io(e, format!("cannot read {what}")).with_path(path))?;
    if buf.len() as u64 > limit {
        return Err(Error::new(
            ErrorKind::Limit,
            format!("{what} grew past the configured limit of {limit} bytes while being read"),
        )
        .with_path(path));
    }
    Ok(buf)
}

/// Whether to replace an existing destination.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Existing {
    /// Refuse a destination that exists (the default).
    #[default]
    Refuse,
    /// Replace it once the new output is complete.
    Overwrite,
}

/// `path` made absolute with its symbolic links resolved, as far as it exists: the longest
/// existing ancestor is canonicalized and the rest appended, so a destination that does not
/// exist yet can still be compared with its inputs.
fn resolve(path: &Path) -> PathBuf {
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut rest = Vec::new();
    let mut cur = abs.as_path();
    loop {
        if let Ok(c) = cur.canonicalize() {
            let mut out = c;
            out.extend(rest.iter().rev());
            return out;
        }
        match (cur.parent(), cur.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                cur = parent;
            }
            _ => return abs,
        }
    }
}

fn is_empty_dir(meta: &Metadata, path: &Path) -> bool {
    meta.is_dir() && std::fs::read_dir(path).is_ok_and(|mut d| d.next().is_none())
}

#[cfg(unix)]
fn same_file(a: &Metadata, b: &Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    a.dev() == b.dev() && a.ino() == b.ino()
}

#[cfg(not(unix))]
fn same_file(_a: &Metadata, _b: &Metadata) -> bool {
    false
}

/// Checks that a writer may create (or, with [`Existing::Overwrite`], replace) `dest`,
/// before anything is written:
///
/// * `dest` is never one of `inputs`, inside an input directory, or a directory holding an
///   input (after resolving links): writing it would destroy what is being read;
/// * an existing `dest` (a file, a non-empty directory, or a symbolic link — dangling ones
///   included) is refused unless `existing` is [`Existing::Overwrite`];
/// * a device, named pipe or socket (or a link to one) is refused whatever `existing` says;
/// * its parent must be an existing directory and its file name short enough to create.
///
/// Errors are [`ErrorKind::InvalidInput`] and name `dest`.
pub fn check_destination(dest: &Path, inputs: &[&Path], existing: Existing) -> Result<()> {
    let name = dest.file_name().ok_or_else(|| {
        Error::invalid_input("the destination has no file name (it ends in .. or /)")
            .with_path(dest)
    })?;
    if name.len() > MAX_NAME_BYTES {
        return Err(Error::invalid_input(format!(
            "the file name is {} bytes long; file systems allow at most {MAX_NAME_BYTES}",
            name.len()
        ))
        .with_path(dest));
    }
    let parent = match dest.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    match std::fs::metadata(parent) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => {
            return Err(Error::invalid_input(format!(
                "cannot create it: {} is not a directory",
                parent.display()
            ))
            .with_path(dest));
        }
        Err(e) => {
            let e = path_error(e, "cannot stat", parent);
            return Err(Error::new(
                e.kind(),
                format!("cannot create it: its directory {}: {}", parent.display(), e.message()),
            )
            .with_path(dest));
        }
    }

    let dest_resolved = resolve(dest);
    let dest_meta = std::fs::metadata(dest).ok();
    for input in inputs {
        let input_resolved = resolve(input);
        let same = match (&dest_meta, std::fs::metadata(input)) {
            (Some(d), Ok(i)) => same_file(d, &i),
            _ => false,
        } || dest_resolved == input_resolved;
        if same {
            return Err(Error::invalid_input(format!(
                "the destination is the input {}; write to another path",
                input.display()
            ))
            .with_path(dest));
        }
        if dest_resolved.starts_with(&input_resolved) {
            return Err(Error::invalid_input(format!(
                "the destination lies inside the input {}; write outside it",
                input.display()
            ))
            .with_path(dest));
        }
        if input_resolved.starts_with(&dest_resolved) {
            return Err(Error::invalid_input(format!(
                "the destination holds the input {}; replacing it would destroy the input",
                input.display()
            ))
            .with_path(dest));
        }
    }

    let Ok(link_meta) = std::fs::symlink_metadata(dest) else { return Ok(()) };
    // A device, pipe or socket (or a link to one) is never replaced, overwrite or not:
    // renaming a new file over `/dev/null` would take it from the whole system.
    if let Some(meta) = &dest_meta {
        refuse_special(
            meta,
            dest,
            "reel writes datasets only as files and directories, and never replaces anything \
             else",
        )?;
    }
    if existing == Existing::Overwrite || is_empty_dir(&link_meta, dest) {
        // An empty directory holds nothing to lose (users often make the target first).
        return Ok(());
    }
    let what = if link_meta.file_type().is_symlink() {
        match std::fs::read_link(dest) {
            Ok(target) if dest_meta.is_none() => format!(
                "is a symbolic link to {}, which does not exist; remove the link or choose another path",
                target.display()
            ),
            _ => "already exists (a symbolic link)".to_string(),
        }
    } else if link_meta.is_dir() {
        "already exists (a directory)".to_string()
    } else {
        "already exists".to_string()
    };
    Err(Error::invalid_input(format!(
        "{what}; choose another path, or ask to replace it where that is offered \
         (`--force` of `convert`, `generate`, `pack`, `verify --salvage`; `overwrite=True` in \
         Python; `Existing::Overwrite` in Rust)"
    ))
    .with_path(dest))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    fn mkfifo(path: &Path) {
        let status = std::process::Command::new("mkfifo").arg(path).status().unwrap();
        assert!(status.success());
    }

    #[cfg(unix)]
    #[test]
    fn devices_and_pipes_are_never_replaced() {
        use std::os::unix::fs::FileTypeExt;
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("out.ffr");
        mkfifo(&fifo);
        let link = dir.path().join("null.ffr");
        std::os::unix::fs::symlink("/dev/null", &link).unwrap();
        for (dest, kind) in [(&fifo, "named pipe"), (&link, "character device")] {
            for existing in [Existing::Refuse, Existing::Overwrite] {
                let e = check_destination(dest, &[], existing).unwrap_err();
                assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
                assert!(e.to_string().contains(kind), "{e}");
            }
        }
        // A writer's own staging refuses it too, so no writer can rename over it.
        assert!(crate::staged::StagedFile::create(&fifo).is_err());
        assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
    }

    #[cfg(unix)]
    #[test]
    fn fifo_is_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("data.ffr");
        mkfifo(&fifo);
        let e = open_input(&fifo).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput);
        assert!(e.to_string().contains("named pipe"), "{e}");
        assert!(e.to_string().contains("data.ffr"), "{e}");
        assert_eq!(input_kind(&fifo).unwrap_err().kind(), ErrorKind::InvalidInput);
        assert!(read_input(&fifo, 1 << 20, "metadata").is_err());
    }

    #[cfg(unix)]
    #[test]
    fn devices_and_link_loops_are_named() {
        let e = open_input(Path::new("/dev/zero")).unwrap_err();
        assert!(e.to_string().contains("character device"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a");
        let b = dir.path().join("b");
        std::os::unix::fs::symlink(&b, &a).unwrap();
        std::os::unix::fs::symlink(&a, &b).unwrap();
        let e = input_kind(&a).unwrap_err();
        assert!(e.to_string().contains("symbolic link loop"), "{e}");
        let dangling = dir.path().join("d");
        std::os::unix::fs::symlink(dir.path().join("missing"), &dangling).unwrap();
        let e = input_kind(&dangling).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NotFound);
        assert!(e.to_string().contains("does not exist"), "{e}");
    }

    #[test]
    fn read_input_refuses_files_over_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("spec.json");
        std::fs::write(&p, vec![b' '; 100]).unwrap();
        assert_eq!(read_input(&p, 100, "spec").unwrap().len(), 100);
        let e = read_input(&p, 99, "spec").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Limit);
        assert!(e.to_string().contains("100 bytes"), "{e}");
    }

    #[test]
    fn destinations_that_exist_or_are_inputs_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("src.syr");
        std::fs::write(&src, b"x").unwrap();
        let fresh = dir.path().join("out.ffr");
        check_destination(&fresh, &[&src], Existing::Refuse).unwrap();

        let e = check_destination(&src, &[&src], Existing::Overwrite).unwrap_err();
        assert!(e.message().contains("is the input"), "{e}");
        // Spelled differently, still the same file.
        let other = dir.path().join(".").join("src.syr");
        assert!(check_destination(&other, &[&src], Existing::Overwrite).is_err());
        // Inside an input directory, or holding the input.
        let inside = dir.path().join("out");
        assert!(check_destination(&inside, &[dir.path()], Existing::Overwrite).is_err());
        assert!(check_destination(dir.path(), &[&src], Existing::Overwrite).is_err());

        std::fs::write(&fresh, b"old").unwrap();
        let e = check_destination(&fresh, &[&src], Existing::Refuse).unwrap_err();
        assert!(e.message().contains("already exists"), "{e}");
        check_destination(&fresh, &[&src], Existing::Overwrite).unwrap();

        let long = dir.path().join("n".repeat(300));
        let e = check_destination(&long, &[&src], Existing::Refuse).unwrap_err();
        assert!(e.message().contains("300 bytes"), "{e}");
        let e =
            check_destination(&dir.path().join("no/such/dir"), &[], Existing::Refuse).unwrap_err();
        assert!(e.message().contains("its directory"), "{e}");
    }

    #[cfg(unix)]
    #[test]
    fn same_file_through_a_link_and_dangling_links_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("src.syr");
        std::fs::write(&src, b"x").unwrap();
        let link = dir.path().join("link.syr");
        std::os::unix::fs::symlink(&src, &link).unwrap();
        assert!(check_destination(&link, &[&src], Existing::Overwrite).is_err());
        let dangling = dir.path().join("dangling");
        std::os::unix::fs::symlink(dir.path().join("nowhere"), &dangling).unwrap();
        let e = check_destination(&dangling, &[&src], Existing::Refuse).unwrap_err();
        assert!(e.message().contains("does not exist"), "{e}");
    }
}
