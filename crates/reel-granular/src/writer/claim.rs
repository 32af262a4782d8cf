//! Claims on the directories a writer writes into, so that an interrupted write (its
//! process killed) can be told from one that is still going on.
//!
//! A writer holds an exclusive advisory lock (`flock`) on its staging directory, or on the
//! dataset it appends to in place, for as long as it lives. The kernel drops the lock when
//! the process ends however it ends, so a staging directory whose lock can be taken belongs
//! to no live writer: it can be resumed, or replaced when the caller asks for that.

use std::fs::{File, TryLockError};
use std::path::Path;

use reel_core::{Error, Result};

use crate::FORMAT;

/// An exclusive claim on a directory, held until dropped.
#[derive(Debug)]
pub(crate) struct Claim {
    _dir: File,
}

/// Claims `dir` for this writer: `None` when another writer (in this process or another)
/// holds it. A file system without advisory locks gives a claim that excludes nothing, as
/// writing did before claims existed.
pub(crate) fn claim(dir: &Path) -> Result<Option<Claim>> {
    let file = File::open(dir)
        .map_err(|e| Error::io(e, "cannot open the directory to claim it").with_path(dir))?;
    match file.try_lock() {
        Ok(()) => Ok(Some(Claim { _dir: file })),
        Err(TryLockError::WouldBlock) => Ok(None),
        Err(TryLockError::Error(_)) => Ok(Some(Claim { _dir: file })),
    }
}

/// The error for a directory that another writer is writing now.
pub(crate) fn busy(dir: &Path, target: &Path) -> Error {
    Error::invalid_input(format!(
        "another writer is writing this dataset right now (it holds {}); wait for it to \
         finish, or stop it",
        dir.display()
    ))
    .with_path(target)
    .with_format(FORMAT)
}

/// Makes way for a new write at `target` where an interrupted one left `staging`: with
/// `replace`, a staging directory no live writer holds is deleted; otherwise it is an error
/// saying how to resume (`resume_with`, the writer's resume call), replace or delete it.
pub(crate) fn clear_interrupted(
    staging: &Path,
    target: &Path,
    replace: bool,
    resume_with: &str,
) -> Result<()> {
    let Some(claim) = claim(staging)? else {
        return Err(busy(staging, target));
    };
    if !replace {
        return Err(Error::invalid_input(format!(
            "an interrupted write of this dataset exists at {}: resume it ({resume_with}), \
             replace it (the writer option replace_interrupted; --force in the CLI; \
             overwrite=True in Python), or delete it",
            staging.display()
        ))
        .with_path(target)
        .with_format(FORMAT));
    }
    // Deleted while claimed, so that no writer starting now can take it up meanwhile.
    let removed = std::fs::remove_dir_all(staging).map_err(|e| {
        Error::io(e, "cannot delete the interrupted write's staging directory")
            .with_path(staging)
            .with_format(FORMAT)
    });
    drop(claim);
    removed
}
