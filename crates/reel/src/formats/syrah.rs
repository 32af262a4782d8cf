//! Syrah in the facade: recognising and opening it.

use std::path::Path;

use reel_core::{RecordSource, Result, Store};
use reel_syrah::{HEADER_LEN, SyrahOptions, SyrahReader, dataset_files_in, looks_like_syrah};

use super::Handler;
use crate::OpenOptions;

pub(super) const HANDLER: Handler = Handler { sniff, open };

/// Opens a `.syr` file, or a directory of them as one concatenated dataset. Syrah has no
/// checksums, so `verify` has nothing to switch; offsets and sizes are always validated.
fn open(path: &Path, options: &OpenOptions) -> Result<Box<dyn RecordSource>> {
    let opts = SyrahOptions {
        backend: options.backend.clone(),
        store: options.store.clone(),
        limits: options.limits.clone(),
    };
    Ok(Box::new(SyrahReader::open_with(path, &opts)?))
}

/// A file with the `.syr` extension (so a damaged one still opens as Syrah and reports
/// what is wrong), a file whose first 22 bytes are a plausible Syrah header (magic `GS`,
/// metadata after the header and within the file), or a directory of `.syr` files.
fn sniff(store: &dyn Store, path: &Path) -> bool {
    if store.is_dir(path) {
        return dataset_files_in(store, path).is_ok_and(|f| !f.is_empty());
    }
    if path.extension().is_some_and(|e| e == "syr") {
        return store.is_file(path);
    }
    header_checks_out(store, path).unwrap_or(false)
}

fn header_checks_out(store: &dyn Store, path: &Path) -> Result<bool> {
    let Ok(len) = store.size(path) else { return Ok(false) };
    if len < HEADER_LEN {
        return Ok(false);
    }
    let head = store.read_range(path, 0, HEADER_LEN)?;
    Ok(looks_like_syrah(&head, len))
}
