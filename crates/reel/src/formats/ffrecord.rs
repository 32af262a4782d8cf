use std::io::Read;
use std::path::Path;

use reel_core::{Limits, RecordSource, Result};
use reel_ffrecord::{FfrecordOptions, FfrecordReader};

use super::Handler;
use crate::OpenOptions;

pub(super) const HANDLER: Handler = Handler { sniff, open };

fn open(path: &Path, options: &OpenOptions) -> Result<Box<dyn RecordSource>> {
    let opts = FfrecordOptions {
        backend: options.backend.clone(),
        limits: options.limits.clone(),
        verify_metadata: options.verify,
        verify_records: options.verify,
    };
    Ok(Box::new(FfrecordReader::open_with(path, &opts)?))
}

/// A `.ffr` file, a directory holding `.ffr` files, or (FFRecord has no magic number) a
/// file whose header checks out: a sane record count and a matching metadata checksum.
fn sniff(path: &Path) -> bool {
    if path.is_dir() {
        return reel_ffrecord::dataset_files(path).is_ok_and(|f| !f.is_empty());
    }
    if path.extension().is_some_and(|e| e == "ffr") {
        return true;
    }
    header_checks_out(path).unwrap_or(false)
}

fn header_checks_out(path: &Path) -> std::io::Result<bool> {
    let Ok((mut f, len)) = reel_core::paths::open_input(path) else { return Ok(false) };
    let mut fixed = [0u8; 12];
    if len < 12 || f.read_exact(&mut fixed).is_err() {
        return Ok(false);
    }
    let Ok(h) = reel_ffrecord::header::FixedHeader::parse(&fixed, len, &Limits::strict()) else {
        return Ok(false);
    };
    if h.meta_crc == 0 || h.n > (64 << 20) {
        return Ok(false);
    }
    // The tables are checksummed through a small buffer: a sparse file may claim millions
    // of records, and sniffing must not allocate what the header claims.
    let mut crc = crc32fast::Hasher::new();
    crc.update(&fixed[4..]);
    let mut left = h.n * 12;
    let mut buf = [0u8; 64 << 10];
    while left > 0 {
        let take = left.min(buf.len() as u64) as usize;
        f.read_exact(&mut buf[..take])?;
        crc.update(&buf[..take]);
        left -= take as u64;
    }
    Ok(crc.finalize() == h.meta_crc)
}
