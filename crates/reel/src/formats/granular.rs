//! Granular (and bags) in the facade: recognising and opening it.

use std::path::{Path, PathBuf};

use reel_core::{RecordSource, Result};
use reel_granular::{BagOptions, BagReader, GranularOptions, GranularReader};

use super::Handler;
use crate::OpenOptions;

pub(super) const HANDLER: Handler = Handler { sniff, open };

/// Bags is read by the same reader (it tells the generation from the files); sniffing
/// answers `granular` for every generation, so this one never claims a path.
pub(super) const BAGS_HANDLER: Handler = Handler { sniff: |_| false, open };

/// Opens a dataset directory, a sharded root, a single `.bag` file, or a directory holding
/// nothing but one bag (its `.bag`, with its `.idx` if it is a two-file bag).
fn open(path: &Path, options: &OpenOptions) -> Result<Box<dyn RecordSource>> {
    let bag = if path.is_file() { Some(path.to_path_buf()) } else { lone_bag(path) };
    if let Some(bag) = bag {
        let opts = BagOptions {
            backend: options.backend.clone(),
            limits: options.limits.clone(),
            single_file: None,
        };
        return Ok(Box::new(BagReader::open_with(&bag, &opts)?));
    }
    let opts =
        GranularOptions::default().backend(options.backend.clone()).limits(options.limits.clone());
    Ok(Box::new(GranularReader::open_with(path, &opts)?))
}

/// A directory with `spec.json`; a sharded root (no `spec.json`, a `000000/` folder that
/// has one); a directory holding one bare bag; or a file named `*.bag`. Only names are
/// looked at, never file contents: a `spec.json` that is not a regular file (a directory, a
/// FIFO) still marks the dataset as Granular, so opening it says what is wrong with
/// `spec.json` instead of "unknown format".
fn sniff(path: &Path) -> bool {
    let named = |p: &Path| std::fs::symlink_metadata(p).is_ok();
    if path.is_dir() {
        return named(&path.join("spec.json"))
            || named(&path.join(reel_granular::shard_name(0)).join("spec.json"))
            || lone_bag(path).is_some();
    }
    reel_core::paths::is_regular_file(path) && path.extension().is_some_and(|e| e == "bag")
}

/// The one bag of a directory that is not a dataset (no `spec.json`): exactly one `*.bag`
/// file, and no `*.idx` file other than that bag's. Other files (a README, a manifest) are
/// left alone, as the reference's `BagReader` would.
fn lone_bag(dir: &Path) -> Option<PathBuf> {
    let named = |p: &Path| std::fs::symlink_metadata(p).is_ok();
    if named(&dir.join("spec.json")) || named(&dir.join(reel_granular::shard_name(0))) {
        return None;
    }
    let (mut bags, mut idx) = (Vec::new(), Vec::new());
    for entry in std::fs::read_dir(dir).ok()? {
        let path = entry.ok()?.path();
        let extension = path.extension().and_then(|e| e.to_str()).map(str::to_owned);
        match extension.as_deref() {
            Some("bag") if reel_core::paths::is_regular_file(&path) => bags.push(path),
            Some("idx") => idx.push(path),
            _ => {}
        }
        if bags.len() > 1 {
            return None; // several bags: a damaged dataset, not one bag
        }
    }
    let bag = bags.pop()?;
    idx.iter().all(|i| *i == reel_granular::index_path(&bag)).then_some(bag)
}
