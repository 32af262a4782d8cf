//! GulpIO2 in the facade: recognising and opening it.

use std::path::Path;

use reel_core::{RecordSource, Result, Store};

use crate::verify::Problem;
use reel_gulp::discovery::{chunk_number, is_data_name, is_meta_name};
use reel_gulp::{FrameDecode, GulpOptions, GulpReader, JpegStrictness};

use super::Handler;
use crate::OpenOptions;

pub(super) const HANDLER: Handler = Handler { sniff, open };

/// Opens the directory with frames as the stored JPEG bytes (lossless, for conversion).
/// GulpIO2 has no checksums, so `verify` changes nothing here; `reel::verify` decodes
/// every frame on its own (see [`bad_frames`]).
fn open(path: &Path, options: &OpenOptions) -> Result<Box<dyn RecordSource>> {
    Ok(Box::new(GulpReader::open_with(path, &gulp_options(options))?))
}

fn gulp_options(options: &OpenOptions) -> GulpOptions {
    let strictness =
        if options.lenient_jpeg { JpegStrictness::Lenient } else { JpegStrictness::Strict };
    GulpOptions {
        backend: options.backend.clone(),
        store: options.store.clone(),
        limits: options.limits.clone(),
        decode: FrameDecode::Raw,
        strictness,
    }
}

/// Every frame that does not decode like the reference decodes it (or, with
/// `lenient_jpeg`, at all), as one problem per frame naming the video id and the frame.
/// Videos that cannot be read are left to the record check, which reports them.
pub(super) fn bad_frames(path: &Path, options: &OpenOptions) -> Result<Vec<Problem>> {
    let reader = GulpReader::open_with(path, &gulp_options(options))?;
    let mut problems = Vec::new();
    for index in 0..reader.len() {
        let Ok(bad) = reader.bad_frames(index) else { continue };
        let id = reader.id(index).unwrap_or_default();
        let data_path = reader.layout().chunk_of(index).map(|c| c.data_path.clone());
        for b in bad {
            problems.push(Problem {
                record: Some(index),
                path: data_path.clone(),
                offset: b.offset,
                kind: b.error.kind(),
                message: format!("video {id:?}, frame {}: {}", b.frame, b.error.message()),
            });
        }
    }
    Ok(problems)
}

/// A directory holding at least one chunk: a `data*.gulp` file and a `meta*.gmeta` file
/// with the same chunk number (one directory listing, no file is opened).
fn sniff(store: &dyn Store, path: &Path) -> bool {
    if !store.is_dir(path) {
        return false;
    }
    let Ok(entries) = store.list(path) else { return false };
    let mut data = std::collections::HashSet::new();
    let mut meta = std::collections::HashSet::new();
    for entry in &entries {
        let name = entry.name();
        if is_data_name(&name) {
            if let Some(n) = chunk_number(&name) {
                if meta.contains(&n) {
                    return true;
                }
                data.insert(n);
            }
        } else if is_meta_name(&name)
            && let Some(n) = chunk_number(&name)
        {
            if data.contains(&n) {
                return true;
            }
            meta.insert(n);
        }
    }
    false
}
