use std::path::Path;

use reel_core::{Limits, RecordSource, Result, Store};
use reel_ffrecord::{FfrecordOptions, FfrecordReader};

use super::Handler;
use crate::OpenOptions;

pub(super) const HANDLER: Handler = Handler { sniff, open };

fn open(path: &Path, options: &OpenOptions) -> Result<Box<dyn RecordSource>> {
    let opts = FfrecordOptions {
        backend: options.backend.clone(),
        store: options.store.clone(),
        limits: options.limits.clone(),
        verify_metadata: options.verify,
        verify_records: options.verify,
    };
    Ok(Box::new(FfrecordReader::open_with(path, &opts)?))
}

/// A `.ffr` file, a directory holding `.ffr` files, or (FFRecord has no magic number) a
/// file whose header checks out: a sane record count and a matching metadata checksum.
fn sniff(store: &dyn Store, path: &Path) -> bool {
    if store.is_dir(path) {
        return reel_ffrecord::dataset_files_in(store, path).is_ok_and(|f| !f.is_empty());
    }
    if path.extension().is_some_and(|e| e == "ffr") {
        return true;
    }
    header_checks_out(store, path).unwrap_or(false)
}

fn header_checks_out(store: &dyn Store, path: &Path) -> Result<bool> {
    let Ok(len) = store.size(path) else { return Ok(false) };
    if len < 12 {
        return Ok(false);
    }
    let Ok(fixed) = <[u8; 12]>::try_from(store.read_range(path, 0, 12)?) else {
        return Ok(false);
    };
    let Ok(h) = reel_ffrecord::header::FixedHeader::parse(&fixed, len, &Limits::strict()) else {
        return Ok(false);
    };
    if h.meta_crc == 0 || h.n > (64 << 20) {
        return Ok(false);
    }
    // The tables are checksummed through a small buffer: a sparse file may claim millions
    // of records, and sniffing must not allocate what the header claims.
    let mut crc = reel_core::checksum::Crc32::new();
    crc.update(&fixed[4..]);
    let mut left = h.n * 12;
    let mut at = 12;
    while left > 0 {
        let take = left.min(1 << 20);
        crc.update(&store.read_range(path, at, take)?);
        at += take;
        left -= take;
    }
    Ok(crc.finalize() == h.meta_crc)
}
