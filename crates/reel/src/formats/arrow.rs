use std::path::Path;

use reel_arrow::{ArrowFileSource, FileKind, ReadOptions};
use reel_core::{RecordSource, Result};

use super::Handler;
use crate::OpenOptions;

pub(super) const PARQUET: Handler = Handler { sniff: sniff_parquet, open: open_parquet };
pub(super) const ARROW_IPC: Handler = Handler { sniff: sniff_ipc, open: open_ipc };

fn sniff_parquet(path: &Path) -> bool {
    reel_arrow::sniff(path) == Some(FileKind::Parquet)
}

fn sniff_ipc(path: &Path) -> bool {
    reel_arrow::sniff(path) == Some(FileKind::ArrowIpc)
}

// Parquet and IPC have their own page and body checksums where they have any; the reader
// and backend options of the record formats do not apply.
fn open_parquet(path: &Path, _options: &OpenOptions) -> Result<Box<dyn RecordSource>> {
    Ok(Box::new(ArrowFileSource::open_as(path, FileKind::Parquet, &ReadOptions::default())?))
}

fn open_ipc(path: &Path, _options: &OpenOptions) -> Result<Box<dyn RecordSource>> {
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
