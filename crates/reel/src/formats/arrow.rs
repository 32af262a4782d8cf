use std::path::Path;

use reel_arrow::{ArrowFileSource, FileKind, ReadOptions};
use reel_core::{RecordSource, Result, Store};

use super::Handler;
use crate::OpenOptions;

pub(super) const PARQUET: Handler = Handler { sniff: sniff_parquet, open: open_parquet };
pub(super) const ARROW_IPC: Handler = Handler { sniff: sniff_ipc, open: open_ipc };

// Parquet and Arrow IPC files are read by arrow-rs's own readers, from the local file
// system or by ranges from any other store (`ArrowFileSource::open_in`).
fn sniff_parquet(store: &dyn Store, path: &Path) -> bool {
    reel_arrow::sniff_in(store, path) == Some(FileKind::Parquet)
}

fn sniff_ipc(store: &dyn Store, path: &Path) -> bool {
    reel_arrow::sniff_in(store, path) == Some(FileKind::ArrowIpc)
}

// Parquet and IPC have their own page and body checksums where they have any; the reader
// options of the record formats do not apply. The column selection does: the columns left
// out are never decoded nor checked. Of the backend, only whether files may be mapped
// applies: a local IPC file is mapped under `auto` and `mmap`, and read otherwise.
fn read_options(options: &OpenOptions) -> ReadOptions {
    ReadOptions {
        columns: options.columns.clone(),
        skip_columns: options.skip_columns.clone(),
        map: crate::maps_ipc_files(options.backend.name()),
        ..ReadOptions::default()
    }
}

fn open_parquet(path: &Path, options: &OpenOptions) -> Result<Box<dyn RecordSource>> {
    let read = read_options(options);
    Ok(Box::new(ArrowFileSource::open_in(&options.store, path, FileKind::Parquet, &read)?))
}

fn open_ipc(path: &Path, options: &OpenOptions) -> Result<Box<dyn RecordSource>> {
    let read = read_options(options);
    Ok(Box::new(ArrowFileSource::open_in(&options.store, path, FileKind::ArrowIpc, &read)?))
}

/// A Parquet or IPC writer for `create`.
pub(super) fn create(
    kind: FileKind,
    path: &Path,
    options: &crate::CreateOptions,
) -> Result<Box<dyn reel_core::RecordSink>> {
    Ok(Box::new(reel_arrow::ArrowSink::create(path, kind, options.schema.clone(), &options.arrow)?))
}
