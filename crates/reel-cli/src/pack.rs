//! `reel pack` / `reel unpack`: FFRecord packed folders.

use std::path::{Path, PathBuf};

use clap::Args;
use reel::ffrecord::{PackedFolder, pack_folder};
use reel::paths::{Existing, check_destination};

use crate::progress::bar;

/// Options of `reel pack`.
#[derive(Args, Debug)]
pub struct PackArgs {
    /// The directory to pack.
    dir: PathBuf,
    /// The `.ffr` file to write (must not exist unless --force; never inside DIR).
    out: PathBuf,
    /// Replace an existing OUT (only once the new file is complete).
    #[arg(long)]
    force: bool,
}

/// Options of `reel unpack`.
#[derive(Args, Debug)]
pub struct UnpackArgs {
    /// The packed `.ffr` file.
    packed: PathBuf,
    /// The directory to create (must not exist or be empty).
    dir: PathBuf,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
}

/// Runs `reel pack`.
pub fn pack(args: &PackArgs) -> reel::Result<()> {
    let existing = if args.force { Existing::Overwrite } else { Existing::Refuse };
    check_destination(&args.out, &[&args.dir], existing)?;
    let s = pack_folder(&args.dir, &args.out)?;
    println!(
        "packed {} files ({} bytes) into {}",
        s.records.saturating_sub(1),
        s.bytes,
        args.out.display()
    );
    Ok(())
}

/// Runs `reel unpack`.
pub fn unpack(args: &UnpackArgs) -> reel::Result<()> {
    // An empty directory may be there; anything else is refused, before reading.
    check_destination(&args.dir, &[&args.packed], Existing::Refuse)?;
    let folder = PackedFolder::open(&args.packed)?;
    // Unpack into a staging directory, so a failure leaves no half-unpacked tree.
    let staged = reel::StagedDir::create(&args.dir)?;
    let pb = bar(folder.num_files(), "unpack", args.quiet);
    let mut files = 0;
    unpack_dir(&folder, "", staged.path(), &args.dir, &pb, &mut files)?;
    pb.finish_and_clear();
    staged.commit()?;
    println!("unpacked {files} files into {}", args.dir.display());
    Ok(())
}

/// A name from the folder index is used as a path component only if it cannot climb out
/// of the target directory: the index comes from the file and may be crafted.
fn safe_name(name: &str) -> reel::Result<&str> {
    if name.is_empty() || name == "." || name == ".." || name.contains(['/', '\\', '\0']) {
        return Err(reel::Error::corrupt(format!(
            "the folder index holds an unsafe file name {name:?}"
        )));
    }
    Ok(name)
}

/// Writes folder `dir` of the packed file into `to` (inside the staging directory); errors
/// name `shown`, where the same entry will appear for the user once unpacking succeeds.
fn unpack_dir(
    folder: &PackedFolder,
    dir: &str,
    to: &Path,
    shown: &Path,
    pb: &indicatif::ProgressBar,
    files: &mut u64,
) -> reel::Result<()> {
    std::fs::create_dir_all(to)
        .map_err(|e| reel::Error::io(e, "cannot create directory").with_path(shown))?;
    for name in folder.list(dir, true, true, false)? {
        let safe = safe_name(&name)?;
        let full = if dir.is_empty() { name.clone() } else { format!("{dir}/{name}") };
        let target = to.join(safe);
        if folder.is_dir(&full) {
            unpack_dir(folder, &full, &target, &shown.join(safe), pb, files)?;
        } else {
            let data = folder.read_one(&full)?;
            std::fs::write(&target, data)
                .map_err(|e| reel::Error::io(e, "cannot write").with_path(shown.join(safe)))?;
            *files += 1;
            pb.inc(1);
        }
    }
    Ok(())
}
