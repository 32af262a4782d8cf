//! Syrah in the facade: recognising and opening it.

use std::io::Read;
use std::path::Path;

use reel_core::{RecordSource, Result};
use reel_syrah::{HEADER_LEN, SyrahOptions, SyrahReader, dataset_files, looks_like_syrah};

use super::Handler;
use crate::OpenOptions;

pub(super) const HANDLER: Handler = Handler { sniff, open };

/// Opens a `.syr` file, or a directory of them as one concatenated dataset. Syrah has no
/// checksums, so `verify` has nothing to switch; offsets and sizes are always validated.
fn open(path: &Path, options: &OpenOptions) -> Result<Box<dyn RecordSource>> {
    let opts = SyrahOptions { backend: options.backend.clone(), limits: options.limits.clone() };
    Ok(Box::new(SyrahReader::open_with(path, &opts)?))
}

/// A file with the `.syr` extension (so a damaged one still opens as Syrah and reports
/// what is wrong), a file whose first 22 bytes are a plausible Syrah header (magic `GS`,
/// metadata after the header and within the file), or a directory of `.syr` files.
fn sniff(path: &Path) -> bool {
    if path.is_dir() {
        return dataset_files(path).is_ok_and(|f| !f.is_empty());
    }
    if path.extension().is_some_and(|e| e == "syr") {
        return reel_core::paths::is_regular_file(path);
    }
    header_checks_out(path).unwrap_or(false)
}

fn header_checks_out(path: &Path) -> std::io::Result<bool> {
    let Ok((mut f, len)) = reel_core::paths::open_input(path) else { return Ok(false) };
    let mut head = [0u8; HEADER_LEN as usize];
    if len < HEADER_LEN || f.read_exact(&mut head).is_err() {
        return Ok(false);
    }
    Ok(looks_like_syrah(&head, len))
}
