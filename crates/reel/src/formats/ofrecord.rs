//! OFRecord in the facade: recognising and opening it.

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use reel_core::{RecordSource, Result};
use reel_ofrecord::{OfrecordOptions, OfrecordReader, PartNaming};

use super::Handler;
use crate::OpenOptions;

pub(super) const HANDLER: Handler = Handler { sniff, open };

/// Opens a part file or a directory of parts. OFRecord has no checksums, so `verify` has
/// nothing to switch.
fn open(path: &Path, options: &OpenOptions) -> Result<Box<dyn RecordSource>> {
    let opts =
        OfrecordOptions::default().backend(options.backend.clone()).limits(options.limits.clone());
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
fn sniff(path: &Path) -> bool {
    let naming = PartNaming::default();
    if path.is_dir() {
        let Ok(entries) = std::fs::read_dir(path) else { return false };
        return entries.filter_map(|e| e.ok()).any(|e| {
            !e.path().is_dir() && e.file_name().to_str().is_some_and(|n| naming.parse(n).is_some())
        });
    }
    let named =
        path.file_name().and_then(|n| n.to_str()).is_some_and(|n| naming.parse(n).is_some());
    named || first_frame_plausible(path, false).unwrap_or(false)
}

fn first_frame_plausible(path: &Path, named_as_part: bool) -> std::io::Result<bool> {
    let Ok((mut f, len)) = reel_core::paths::open_input(path) else { return Ok(false) };
    if len == 0 {
        return Ok(named_as_part);
    }
    let mut header = [0u8; 8];
    if len < 8 {
        return Ok(false);
    }
    f.read_exact(&mut header)?;
    let Ok(first) = u64::try_from(i64::from_le_bytes(header)) else { return Ok(false) };
    if first > len - 8 {
        return Ok(false);
    }
    if first == 0 && !named_as_part {
        return Ok(false);
    }
    if first <= SNIFF_PAYLOAD {
        let mut payload = vec![0u8; first as usize];
        f.read_exact(&mut payload)?;
        match reel_ofrecord::decode_record(&payload) {
            Ok(r) if r.is_empty() && !named_as_part => return Ok(false),
            Ok(_) => {}
            Err(_) => return Ok(false),
        }
    } else {
        // A large first record: check that it starts like a map entry whose length fits.
        let mut head = [0u8; 11];
        f.read_exact(&mut head)?;
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
        f.seek(SeekFrom::Start(8 + first))?;
    }
    let rest = len - 8 - first;
    if rest == 0 {
        return Ok(true);
    }
    if rest < 8 {
        return Ok(false);
    }
    f.read_exact(&mut header)?;
    Ok(u64::try_from(i64::from_le_bytes(header)).is_ok_and(|second| second <= rest - 8))
}
