//! `reel pack` / `reel unpack`: FFRecord packed folders.

use std::path::{Path, PathBuf};

use clap::Args;
use reel::ffrecord::{FolderDir, FolderEntry, PackedFolder, pack_folder};
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
    /// The most bytes to write (default: the packed file's size, which a folder whose
    /// names each have their own record never exceeds; names that share a record can
    /// add up to more, and are then refused unless allowed here).
    #[arg(long)]
    max_bytes: Option<u64>,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
}

/// Runs `reel pack`.
pub fn pack(args: &PackArgs) -> reel::Result<()> {
    let existing = if args.force { Existing::Overwrite } else { Existing::Refuse };
    check_destination(&args.out, &[&args.dir], existing)?;
    let s = pack_folder(&args.dir, &args.out)?;
    outln!(
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
    // What will be written, from the index alone, before anything is.
    let (mut plan, mut dirs) = (Vec::new(), Vec::new());
    collect_tree(folder.root(), Path::new(""), &mut plan, &mut dirs)?;
    let offsets = folder.reader().get_offsets(0).unwrap_or_default();
    let size_of = |i: u64| -> u64 {
        let i = i as usize;
        match (offsets.get(i), offsets.get(i + 1)) {
            (Some(a), Some(b)) => b.saturating_sub(*a),
            _ => 0,
        }
    };
    let total: u64 = plan.iter().map(|(_, i)| size_of(*i)).fold(0, u64::saturating_add);
    let packed_len = std::fs::metadata(&args.packed).map(|m| m.len()).unwrap_or(0);
    let allowed = args.max_bytes.unwrap_or(packed_len);
    if total > allowed {
        return Err(reel::Error::new(
            reel::ErrorKind::Limit,
            format!(
                "unpacking would write {total} bytes in {} files from a {packed_len}-byte packed \
                 file, more than the {allowed} allowed{}; pass --max-bytes {total} to write it \
                 anyway",
                plan.len(),
                // More than the packed file holds: some names share records.
                if args.max_bytes.is_none() { " (names share records)" } else { "" },
            ),
        )
        .with_path(&args.packed));
    }
    outln!("unpacking {} files ({total} bytes) into {}", plan.len(), args.dir.display());
    // Unpack into a staging directory, so a failure leaves no half-unpacked tree.
    let staged = reel::StagedDir::create(&args.dir)?;
    // Every directory first (empty ones have no file to make them), parents before children.
    for rel in &dirs {
        std::fs::create_dir_all(staged.path().join(rel)).map_err(|e| {
            reel::Error::io(e, "cannot create directory").with_path(args.dir.join(rel))
        })?;
    }
    let pb = bar(plan.len() as u64, "unpack", args.quiet);
    let cancel = reel::io::cancel::CancelCheck::current();
    for (rel, index) in &plan {
        // Ctrl-C: the staging directory, dropped uncommitted, is removed.
        cancel.stop_if_cancelled("unpacking")?;
        let target = staged.path().join(rel);
        let shown = args.dir.join(rel);
        let data = folder.reader().read_one(*index)?;
        std::fs::write(&target, data)
            .map_err(|e| reel::Error::io(e, "cannot write").with_path(&shown))?;
        pb.inc(1);
    }
    pb.finish_and_clear();
    staged.commit()?;
    outln!("unpacked {} files into {}", plan.len(), args.dir.display());
    Ok(())
}

/// Every file of `dir` (recursively) as (path relative to the root, record index), and every
/// directory (parents before children), walking the index tree once (no lookups by path, so
/// a directory of many names stays linear).
fn collect_tree(
    dir: &FolderDir,
    at: &Path,
    files: &mut Vec<(PathBuf, u64)>,
    dirs: &mut Vec<PathBuf>,
) -> reel::Result<()> {
    for (name, entry) in dir.entries() {
        let path = at.join(safe_name(name)?);
        match entry {
            FolderEntry::File(i) => files.push((path, *i)),
            FolderEntry::Dir(sub) => {
                dirs.push(path.clone());
                collect_tree(sub, &path, files, dirs)?;
            }
        }
    }
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
