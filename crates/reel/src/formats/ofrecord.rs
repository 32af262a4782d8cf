//! OFRecord in the facade: recognising and opening it.

use std::path::Path;

use reel_core::{RecordSource, Result, Store};
use reel_ofrecord::{OfrecordOptions, OfrecordReader, PartNaming};

use super::Handler;
use crate::OpenOptions;

pub(super) const HANDLER: Handler = Handler { sniff, open };

/// Opens a part file or a directory of parts. OFRecord has no checksums, so `verify` has
/// nothing to switch.
fn open(path: &Path, options: &OpenOptions) -> Result<Box<dyn RecordSource>> {
    let opts = OfrecordOptions::default()
        .backend(options.backend.clone())
        .store(options.store.clone())
        .limits(options.limits.clone());
    Ok(Box::new(OfrecordReader::open_with(path, &opts)?))
}

/// The first frame of a payload this large or smaller is parsed in full when sniffing.
const SNIFF_PAYLOAD: u64 = 64 << 10;

/// OFRecord has no magic number. A file or directory named the way OneFlow names parts
/// (`part-<digits>`, or a directory holding such files) is taken as OFRecord by its names
/// alone, so that a part damaged at its very first frame is still recognised — and then
/// reported as corrupt — rather than unrecognised. Any other file is recognised by its
/// first frame: a length that fits the file, a payload that parses as an `OFRecord`, and a
/// plausible second length field (or the end of the file); it must hold a record with
/// features.
fn sniff(store: &dyn Store, path: &Path) -> bool {
    let naming = PartNaming::default();
    if store.is_dir(path) {
        let Ok(entries) = store.list(path) else { return false };
        return entries.iter().any(|e| !e.is_dir && naming.parse(&e.name()).is_some());
    }
    let named =
        path.file_name().and_then(|n| n.to_str()).is_some_and(|n| naming.parse(n).is_some());
    named || first_frame_plausible(store, path, false).unwrap_or(false)
}

/// A little-endian 64-bit length field read at `offset`.
fn length_field(store: &dyn Store, path: &Path, offset: u64) -> Result<[u8; 8]> {
    let bytes = store.read_range(path, offset, 8)?;
    let mut field = [0u8; 8];
    field.copy_from_slice(&bytes);
    Ok(field)
}

fn first_frame_plausible(store: &dyn Store, path: &Path, named_as_part: bool) -> Result<bool> {
    let Ok(len) = store.size(path) else { return Ok(false) };
    if len == 0 {
        return Ok(named_as_part);
    }
    if len < 8 {
        return Ok(false);
    }
    let header = length_field(store, path, 0)?;
    let Ok(first) = u64::try_from(i64::from_le_bytes(header)) else { return Ok(false) };
    if first > len - 8 {
        return Ok(false);
    }
    if first == 0 && !named_as_part {
        return Ok(false);
    }
    if first <= SNIFF_PAYLOAD {
        let payload = store.read_range(path, 8, first)?;
        match reel_ofrecord::decode_record(&payload) {
            Ok(r) if r.is_empty() && !named_as_part => return Ok(false),
            Ok(_) => {}
            Err(_) => return Ok(false),
        }
    } else {
        // A large first record: check that it starts like a map entry whose length fits.
        let head = store.read_range(path, 8, 11)?;
        if head[0] != 0x0a {
            return Ok(false);
        }
        let mut entry_len = 0u64;
        let mut fits = false;
        for (i, &b) in head[1..].iter().enumerate() {
            entry_len |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                fits = entry_len.saturating_add(2 + i as u64) <= first;
                break;
            }
        }
        if !fits {
            return Ok(false);
        }
    }
    let rest = len - 8 - first;
    if rest == 0 {
        return Ok(true);
    }
    if rest < 8 {
        return Ok(false);
    }
    let header = length_field(store, path, 8 + first)?;
    Ok(u64::try_from(i64::from_le_bytes(header)).is_ok_and(|second| second <= rest - 8))
}
