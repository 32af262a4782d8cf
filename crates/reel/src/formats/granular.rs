//! Granular (and bags) in the facade: recognising and opening it.

use std::path::{Path, PathBuf};

use reel_core::{RecordSource, Result, Store};
use reel_granular::{BagOptions, BagReader, GranularOptions, GranularReader};

use super::Handler;
use crate::OpenOptions;

pub(super) const HANDLER: Handler = Handler { sniff, open };

/// Bags is read by the same reader (it tells the generation from the files); sniffing
/// answers `granular` for every generation, so this one never claims a path.
pub(super) const BAGS_HANDLER: Handler = Handler { sniff: |_, _| false, open };

/// Opens a dataset directory, a sharded root, a single `.bag` file, or a directory holding
/// nothing but one bag (its `.bag`, with its `.idx` if it is a two-file bag).
fn open(path: &Path, options: &OpenOptions) -> Result<Box<dyn RecordSource>> {
    let store = &*options.store;
    let bag = if store.is_file(path) { Some(path.to_path_buf()) } else { lone_bag(store, path) };
    if let Some(bag) = bag {
        let opts = BagOptions {
            backend: options.backend.clone(),
            store: options.store.clone(),
            limits: options.limits.clone(),
            single_file: None,
        };
        check_lone_bag_selection(options, &bag)?;
        return Ok(Box::new(BagReader::open_with(&bag, &opts)?));
    }
    let mut opts = GranularOptions::default()
        .backend(options.backend.clone())
        .store(options.store.clone())
        .limits(options.limits.clone());
    select_keys(&mut opts, options);
    Ok(Box::new(GranularReader::open_with(path, &opts)?))
}

/// Moves the column selection of `options` ([`OpenOptions::columns`] and `skip_columns`)
/// into `granular`: the keys read.
fn select_keys(granular: &mut GranularOptions, options: &OpenOptions) {
    granular.keys = options.columns.clone();
    granular.skip_keys = options.skip_columns.clone();
}

/// A lone bag's records have one field, [`RAW_FIELD`](reel_core::RAW_FIELD): a selection
/// may name it, and nothing else, and cannot leave it out.
fn check_lone_bag_selection(options: &OpenOptions, bag: &Path) -> Result<()> {
    let field = reel_core::RAW_FIELD;
    let named = options.columns.iter().flatten().chain(&options.skip_columns);
    let misfit = match named.into_iter().find(|n| n.as_str() != field) {
        Some(other) => Some(format!("no field {other:?}")),
        None if !options.skip_columns.is_empty()
            || options.columns.as_ref().is_some_and(Vec::is_empty) =>
        {
            Some(format!("a selection cannot leave out its only field, {field:?}"))
        }
        None => None,
    };
    match misfit {
        Some(why) => Err(reel_core::Error::invalid_input(format!(
            "a lone bag has one field, {field:?}: {why}"
        ))
        .with_format("granular")
        .with_path(bag)),
        None => Ok(()),
    }
}

/// A directory with `spec.json`; a sharded root (no `spec.json`, a `000000/` folder that
/// has one); a directory holding one bare bag; or a file named `*.bag`. Only names are
/// looked at, never file contents: a `spec.json` that is not a regular file (a directory, a
/// FIFO) still marks the dataset as Granular, so opening it says what is wrong with
/// `spec.json` instead of "unknown format".
fn sniff(store: &dyn Store, path: &Path) -> bool {
    if store.is_dir(path) {
        return store.exists(&path.join("spec.json"))
            || store.exists(&path.join(reel_granular::shard_name(0)).join("spec.json"))
            || lone_bag(store, path).is_some();
    }
    path.extension().is_some_and(|e| e == "bag") && store.is_file(path)
}

/// The one bag of a directory that is not a dataset (no `spec.json`): exactly one `*.bag`
/// file, and no `*.idx` file other than that bag's. Other files (a README, a manifest) are
/// left alone, as the reference's `BagReader` would.
fn lone_bag(store: &dyn Store, dir: &Path) -> Option<PathBuf> {
    if store.exists(&dir.join("spec.json")) || store.exists(&dir.join(reel_granular::shard_name(0)))
    {
        return None;
    }
    let (mut bags, mut idx) = (Vec::new(), Vec::new());
    for entry in store.list(dir).ok()? {
        let path = entry.path;
        let extension = path.extension().and_then(|e| e.to_str()).map(str::to_owned);
        match extension.as_deref() {
            Some("bag") if !entry.is_dir && store.is_file(&path) => bags.push(path),
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
