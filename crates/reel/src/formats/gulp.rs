//! GulpIO2 in the facade: recognising and opening it.

use std::path::Path;

use reel_core::{RecordSource, Result};
use reel_gulp::discovery::{chunk_number, is_data_name, is_meta_name};
use reel_gulp::{FrameDecode, GulpOptions, GulpReader};

use super::Handler;
use crate::OpenOptions;

pub(super) const HANDLER: Handler = Handler { sniff, open };

/// Opens the directory with frames as the stored JPEG bytes (lossless, for conversion).
/// GulpIO2 has no checksums, so `verify` changes nothing.
fn open(path: &Path, options: &OpenOptions) -> Result<Box<dyn RecordSource>> {
    let opts = GulpOptions {
        backend: options.backend.clone(),
        limits: options.limits.clone(),
        decode: FrameDecode::Raw,
    };
    Ok(Box::new(GulpReader::open_with(path, &opts)?))
}

/// A directory holding at least one chunk: a `data*.gulp` file and a `meta*.gmeta` file
/// with the same chunk number (one directory listing, no file is opened).
fn sniff(path: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(path) else { return false };
    let mut data = std::collections::HashSet::new();
    let mut meta = std::collections::HashSet::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if is_data_name(&name) {
            if let Some(n) = chunk_number(&name) {
                if meta.contains(&n) {
                    return true;
                }
                data.insert(n);
            }
        } else if is_meta_name(&name) {
            if let Some(n) = chunk_number(&name) {
                if data.contains(&n) {
                    return true;
                }
                meta.insert(n);
            }
        }
    }
    false
}
