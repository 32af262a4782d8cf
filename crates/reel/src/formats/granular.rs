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
/// has one); or a file named `*.bag`. Only names are looked at, never file contents.
fn sniff(path: &Path) -> bool {
    if path.is_dir() {
        return path.join("spec.json").is_file()
            || path.join(reel_granular::shard_name(0)).join("spec.json").is_file();
    }
    path.is_file() && path.extension().is_some_and(|e| e == "bag")
}
