use std::path::Path;

use reel_arrow::{ArrowFileSource, FileKind, ReadOptions};
use reel_core::{Error, RecordSource, Result, Store};

use super::Handler;
use crate::OpenOptions;

pub(super) const PARQUET: Handler = Handler { sniff: sniff_parquet, open: open_parquet };
pub(super) const ARROW_IPC: Handler = Handler { sniff: sniff_ipc, open: open_ipc };

// Parquet and Arrow IPC files are read by arrow-rs's own file readers, from the local file
// system only (see `local_only`); elsewhere they are not recognised.
fn sniff_parquet(store: &dyn Store, path: &Path) -> bool {
    store.name() == "file" && reel_arrow::sniff(path) == Some(FileKind::Parquet)
}

fn sniff_ipc(store: &dyn Store, path: &Path) -> bool {
    store.name() == "file" && reel_arrow::sniff(path) == Some(FileKind::ArrowIpc)
}

/// Refuses a Parquet or IPC file outside the local file system, saying so.
fn local_only(path: &Path, options: &OpenOptions, kind: &str) -> Result<()> {
    if options.store.name() == "file" {
        return Ok(());
    }
    Err(Error::unsupported(format!(
        "{kind} files are read from the local file system only, not from {} storage",
        options.store.name()
    ))
    .with_path(path))
}

// Parquet and IPC have their own page and body checksums where they have any; the reader
// and backend options of the record formats do not apply.
fn open_parquet(path: &Path, options: &OpenOptions) -> Result<Box<dyn RecordSource>> {
    local_only(path, options, "Parquet")?;
    Ok(Box::new(ArrowFileSource::open_as(path, FileKind::Parquet, &ReadOptions::default())?))
}

fn open_ipc(path: &Path, options: &OpenOptions) -> Result<Box<dyn RecordSource>> {
    local_only(path, options, "Arrow IPC")?;
    Ok(Box::new(ArrowFileSource::open_as(path, FileKind::ArrowIpc, &ReadOptions::default())?))
}

/// A Parquet or IPC writer for `create`.
pub(super) fn create(
    kind: FileKind,
    path: &Path,
    options: &crate::CreateOptions,
) -> Result<Box<dyn reel_core::RecordSink>> {
    Ok(Box::new(reel_arrow::ArrowSink::create(path, kind, options.schema.clone(), &options.arrow)?))
}
