//! Granular (and bags) in the facade: recognising and opening it.

use std::path::Path;

use reel_core::{RecordSource, Result};
use reel_granular::{BagOptions, BagReader, GranularOptions, GranularReader};

use super::Handler;
use crate::OpenOptions;

pub(super) const HANDLER: Handler = Handler { sniff, open };

/// Opens a dataset directory, a sharded root, or a single `.bag` file.
fn open(path: &Path, options: &OpenOptions) -> Result<Box<dyn RecordSource>> {
    if path.is_file() {
        let opts = BagOptions {
            backend: options.backend.clone(),
            limits: options.limits.clone(),
            single_file: None,
        };
        return Ok(Box::new(BagReader::open_with(path, &opts)?));
    }
    let opts =
        GranularOptions::default().backend(options.backend.clone()).limits(options.limits.clone());
    Ok(Box::new(GranularReader::open_with(path, &opts)?))
}

/// A directory with `spec.json`; a sharded root (no `spec.json`, a `000000/` folder that
/// has one); or a file named `*.bag`. Only names are looked at, never file contents: a
/// `spec.json` that is not a regular file (a directory, a FIFO) still marks the dataset as
/// Granular, so opening it says what is wrong with `spec.json` instead of "unknown format".
fn sniff(path: &Path) -> bool {
    let named = |p: &Path| std::fs::symlink_metadata(p).is_ok();
    if path.is_dir() {
        return named(&path.join("spec.json"))
            || named(&path.join(reel_granular::shard_name(0)).join("spec.json"));
    }
    reel_core::paths::is_regular_file(path) && path.extension().is_some_and(|e| e == "bag")
}
