//! The `auto` backend: memory-mapped reads for data in the page cache, io_uring (with
//! `O_DIRECT` where possible) for data that is not.
//!
//! Which is faster depends on where the bytes are, and that changes while a program runs
//! (these machines reclaim the page cache within seconds). So the choice is remade as reads
//! come: a few pages a read needs are checked with `mincore` (a handful of cheap system
//! calls, no I/O); if all are resident the read is copied out of the mapping, otherwise it
//! goes to the ring. A decision stands for [`RECHECK`] before the next check, so that a
//! batch fetched in many cache-sized pieces pays for one check, not one per piece.

#![allow(unsafe_code)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use reel_core::io::{Arrived, OpenFiles};
use reel_core::{Backend, MmapFiles, ReadAt, ReadReq, Result, SharedBytes};

use crate::uring::{UringFiles, UringOptions};

/// Pages checked per decision.
const SAMPLES: usize = 4;

/// How long a decision stands: far below the seconds over which the page cache changes,
/// far above the time one batch takes.
pub const RECHECK: std::time::Duration = std::time::Duration::from_millis(1);

/// Files read through the mapping or the ring, whichever suits the batch.
pub struct AutoFiles {
    mmap: MmapFiles,
    uring: UringFiles,
    page: usize,
    warm_batches: AtomicU64,
    cold_batches: AtomicU64,
    /// Whether the last decision was "in the page cache" (a hint, racy by design).
    last_warm: AtomicBool,
    /// When that decision was made, in nanoseconds since `epoch`.
    decided_at: AtomicU64,
    epoch: std::time::Instant,
}

impl AutoFiles {
    /// Maps `paths` and opens them for io_uring (`O_DIRECT` when the file system allows).
    pub fn open(paths: &[PathBuf]) -> Result<Self> {
        let mmap = MmapFiles::open(paths)?;
        let uring = UringFiles::open_with(paths, &UringOptions::default().direct(true))?;
        // SAFETY: sysconf has no memory-safety preconditions.
        let page =
            usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096).max(1);
        Ok(AutoFiles {
            mmap,
            uring,
            page,
            warm_batches: AtomicU64::new(0),
            cold_batches: AtomicU64::new(0),
            last_warm: AtomicBool::new(true),
            decided_at: AtomicU64::new(u64::MAX),
            epoch: std::time::Instant::now(),
        })
    }

    /// Reads (batches, or cache-sized pieces of them) served from the page cache (copied
    /// out of the mapping, or lent out of it) and from the ring so far. A batch that `lends`
    /// accepts but the format then cannot lend (records spanning files) is counted twice.
    pub fn batch_counts(&self) -> (u64, u64) {
        (self.warm_batches.load(Ordering::Relaxed), self.cold_batches.load(Ordering::Relaxed))
    }

    /// The ring side (for its mode and fallback reason).
    pub fn uring(&self) -> &UringFiles {
        &self.uring
    }

    fn resident(&self, file: u32, offset: u64) -> bool {
        let Some(map) = self.mmap.bytes(file) else { return false };
        let Ok(offset) = usize::try_from(offset) else { return false };
        if offset >= map.len() {
            return true; // nothing to read there; empty requests need no I/O
        }
        let page_start = offset / self.page * self.page;
        let mut vec = [0u8; 1];
        // SAFETY: `map` is a live mapping of `map.len()` bytes whose base is page-aligned, so
        // `page_start` is a page-aligned address inside it; mincore only writes one byte
        // per page of the one-page range into `vec`.
        let rc = unsafe {
            libc::mincore(map.as_ptr().add(page_start) as *mut libc::c_void, 1, vec.as_mut_ptr())
        };
        rc == 0 && vec[0] & 1 == 1
    }

    /// Whether `reqs` are read from the mapping (see [`decide`](Self::decide)), counted for
    /// [`batch_counts`](Self::batch_counts).
    fn warm(&self, reqs: &[ReadReq]) -> bool {
        let warm = self.decide(reqs.iter().map(|r| (r.file, r.offset)));
        self.count(warm);
        warm
    }

    fn count(&self, warm: bool) {
        let counter = if warm { &self.warm_batches } else { &self.cold_batches };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// Whether reads starting at `starts` (file, offset) go through the mapping: their pages
    /// looked cached at the last check, made again when [`RECHECK`] has passed.
    fn decide(&self, starts: impl ExactSizeIterator<Item = (u32, u64)>) -> bool {
        if starts.len() == 0 {
            // Nothing to look at: the last decision stands.
            return self.last_warm.load(Ordering::Relaxed);
        }
        let now = self.epoch.elapsed().as_nanos() as u64;
        let decided = self.decided_at.load(Ordering::Relaxed);
        if decided != u64::MAX && now.saturating_sub(decided) < RECHECK.as_nanos() as u64 {
            return self.last_warm.load(Ordering::Relaxed);
        }
        let warm = self.looks_cached(starts);
        self.last_warm.store(warm, Ordering::Relaxed);
        self.decided_at.store(now, Ordering::Relaxed);
        warm
    }

    /// Whether the pages of up to [`SAMPLES`] of `starts`, spread over them, are cached.
    fn looks_cached(&self, starts: impl ExactSizeIterator<Item = (u32, u64)>) -> bool {
        let step = starts.len().div_ceil(SAMPLES).max(1);
        starts.step_by(step).all(|(file, offset)| self.resident(file, offset))
    }
}

impl ReadAt for AutoFiles {
    fn backend_name(&self) -> &'static str {
        "auto"
    }

    fn file_count(&self) -> usize {
        self.mmap.file_count()
    }

    fn file_len(&self, file: u32) -> u64 {
        self.mmap.file_len(file)
    }

    fn file_path(&self, file: u32) -> &Path {
        self.mmap.file_path(file)
    }

    fn read_exact_at(&self, file: u32, offset: u64, buf: &mut [u8]) -> Result<()> {
        let req = [ReadReq { file, offset, len: buf.len(), dest: 0 }];
        self.read_many(&req, buf)
    }

    fn read_many(&self, reqs: &[ReadReq], dest: &mut [u8]) -> Result<()> {
        if self.warm(reqs) {
            self.mmap.read_many(reqs, dest)
        } else {
            self.uring.read_many(reqs, dest)
        }
    }

    fn read_many_observed(
        &self,
        reqs: &[ReadReq],
        dest: &mut [u8],
        arrived: &mut Arrived<'_>,
    ) -> Result<()> {
        if self.warm(reqs) {
            self.mmap.read_many_observed(reqs, dest, arrived)
        } else {
            self.uring.read_many_observed(reqs, dest, arrived)
        }
    }

    /// A hint goes to the ring while the data looks cold (the last decision); warm batches
    /// are copied out of the mapping and need none.
    fn will_read(&self, reqs: &[ReadReq]) {
        if !self.last_warm.load(Ordering::Relaxed) {
            self.uring.will_read(reqs);
        }
    }

    /// Warm data is copied out of the mapping (chunking the batch costs nothing); cold data
    /// wants the whole batch in flight on the ring. The last batch's temperature decides.
    fn is_synchronous(&self) -> bool {
        self.last_warm.load(Ordering::Relaxed)
    }

    fn bytes(&self, file: u32) -> Option<&[u8]> {
        self.mmap.bytes(file)
    }

    /// The mapping, whose records are lent out while the data looks cached, as the mmap
    /// backend lends them (the loader and Python then hand them over without a copy).
    /// [`lends`](ReadAt::lends) decides batch by batch.
    fn shared_bytes(&self, file: u32) -> Option<SharedBytes> {
        self.mmap.shared_bytes(file)
    }

    /// Lends a batch only if its pages look cached (checked at most once per [`RECHECK`]):
    /// data cached when lending began may have been reclaimed since, and lent records would
    /// then fault in one page at a time (~500 records/s on the VM's disk) where the ring
    /// reads the batch at the disk's speed. A lent batch counts as a warm read; one not lent
    /// is read (and counted) by `read_many`.
    fn lends(&self, ranges: &[reel_core::ReadRange]) -> bool {
        let warm = self.decide(ranges.iter().map(|r| (r.file, r.offset)));
        if warm {
            self.count(true);
        }
        warm
    }
}

/// Opens files as [`AutoFiles`].
#[derive(Debug, Clone, Copy, Default)]
pub struct AutoOpener;

impl OpenFiles for AutoOpener {
    fn name(&self) -> &'static str {
        "auto"
    }

    fn open_files(&self, paths: &[PathBuf]) -> Result<Box<dyn ReadAt>> {
        match AutoFiles::open(paths) {
            Ok(files) => Ok(Box::new(files)),
            // Mapping can fail where reading cannot (a file larger than the address space
            // left, e.g. under `ulimit -v`): read through the ring alone then.
            Err(e) if e.kind() == reel_core::ErrorKind::Io => {
                Ok(Box::new(UringFiles::open_with(paths, &UringOptions::default())?))
            }
            Err(e) => Err(e),
        }
    }
}

/// The `auto` backend.
pub fn auto_backend() -> Backend {
    Backend::Custom(Arc::new(AutoOpener))
}
