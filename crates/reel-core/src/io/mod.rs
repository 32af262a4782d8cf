//! Reading bytes from a set of files: the one place reel does I/O on the read path.
//!
//! Formats that span several files (multi-part FFRecord, Granular columns, Gulp chunks) see
//! them as one [`ReadAt`] addressed by file number. The backends differ only in how bytes
//! get from the file into the caller's buffer.

pub mod cancel;
mod mem;
mod mmap;
mod partly_open;
mod pread;

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use mem::MemFiles;
pub use mmap::MmapFiles;
pub(crate) use mmap::{prefetch_line, prefetch_lines};
pub use partly_open::PartlyOpen;
pub use pread::PreadFiles;

use crate::limits::{check_within, try_zeroed};
use crate::{Error, Result};

/// One read of a batch: `len` bytes of file `file` at `offset`, into `dest..dest + len` of
/// the destination buffer passed to [`ReadAt::read_many`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadReq {
    /// File number within the set.
    pub file: u32,
    /// Byte offset in the file.
    pub offset: u64,
    /// Number of bytes.
    pub len: usize,
    /// Where the bytes go in the destination buffer.
    pub dest: usize,
}

/// Random-access reads over a fixed set of files, shared by many threads.
///
/// File lengths are taken when the set is opened; a file that shrinks afterwards makes
/// reads fail with an error (or, for [`MmapFiles`], is the caller's responsibility).
pub trait ReadAt: Send + Sync {
    /// A short name for reports (`"pread"`, `"mmap"`, `"memory"`, `"io_uring"`).
    fn backend_name(&self) -> &'static str;

    /// Number of files in the set.
    fn file_count(&self) -> usize;

    /// Length in bytes of file `file` (0 for a file number outside the set).
    fn file_len(&self, file: u32) -> u64;

    /// The path of file `file`, for messages.
    fn file_path(&self, file: u32) -> &Path;

    /// Fills `buf` from file `file` starting at `offset`; fails on a short read.
    fn read_exact_at(&self, file: u32, offset: u64, buf: &mut [u8]) -> Result<()>;

    /// Performs every request of a batch. The default performs them one after another,
    /// merging requests that are adjacent both in the file and in `dest`, and stops
    /// between two of them once the read is cancelled ([`cancel`]).
    fn read_many(&self, reqs: &[ReadReq], dest: &mut [u8]) -> Result<()> {
        let mut warm = WarmSources::new(self, reqs);
        let cancel = cancel::CancelCheck::current();
        for (r, run) in coalesce_runs(reqs) {
            cancel.check()?;
            warm.through(run.end);
            let buf = dest_slice(dest, &r)?;
            self.read_exact_at(r.file, r.offset, buf)?;
        }
        Ok(())
    }

    /// Performs every request like [`read_many`](Self::read_many) and hands the bytes of
    /// request `reqs[k]` to `arrived` ([`Observe`]) as soon as they are in `dest`, so that a
    /// reader checks them (checksums) while they are still in the CPU cache and while other
    /// reads are still in flight.
    ///
    /// A request's bytes come in order, whole or in consecutive pieces; pieces of different
    /// requests may interleave, and a request may not be handed over at all (the caller
    /// checks what it was not given once this returns). An error from `arrived` stops the
    /// batch (after every read in flight has ended) and is returned.
    ///
    /// The default, when the backend holds the files in memory, hands requests out of
    /// [`bytes`](Self::bytes) to [`Observe::copy_arrived`] in [`OBSERVED_PIECE`]-byte pieces,
    /// so the observer copies and checks each piece in one pass (or checks it right after
    /// the copy, while it is in cache); otherwise it reads the batch with `read_many` and
    /// then hands over each request.
    fn read_many_observed(
        &self,
        reqs: &[ReadReq],
        dest: &mut [u8],
        arrived: &mut Arrived<'_>,
    ) -> Result<()> {
        if !reqs.iter().all(|r| self.bytes(r.file).is_some()) {
            self.read_many(reqs, dest)?;
            for (k, r) in reqs.iter().enumerate() {
                arrived.arrived(k, dest_slice(dest, r)?)?;
            }
            return Ok(());
        }
        let mut warm = WarmSources::new(self, reqs);
        let cancel = cancel::CancelCheck::current();
        for (k, r) in reqs.iter().enumerate() {
            cancel.check()?;
            warm.through(k + 1);
            let out = dest_slice(dest, r)?;
            let src = usize::try_from(r.offset)
                .ok()
                .and_then(|o| Some(o..o.checked_add(r.len)?))
                .and_then(|range| self.bytes(r.file)?.get(range));
            let Some(src) = src else {
                // Past the end of the file: read_exact_at says so with the right context.
                self.read_exact_at(r.file, r.offset, out)?;
                arrived.arrived(k, out)?;
                continue;
            };
            for (to, from) in out.chunks_mut(OBSERVED_PIECE).zip(src.chunks(OBSERVED_PIECE)) {
                arrived.copy_arrived(k, from, to)?;
            }
        }
        Ok(())
    }

    /// Tells the backend which reads come next (the next batch's, while this one is being
    /// read), so that one that reads asynchronously can start them now into memory of its
    /// own and keep the device busy across the caller's batch boundaries: io_uring with
    /// `O_DIRECT` submits them on the ring the calling thread reads with, and hands their
    /// bytes to the `read_many` of the same requests that follows. Only a hint: nothing is
    /// returned, nothing is required of a later read, the requests' `dest` is ignored, and
    /// a request outside its file is simply not read ahead (the read proper reports it).
    /// The default does nothing, which is right for backends whose reads complete in the
    /// calling thread.
    fn will_read(&self, reqs: &[ReadReq]) {
        let _ = reqs;
    }

    /// The whole content of file `file`, when the backend holds it in memory (mmap, memory).
    fn bytes(&self, _file: u32) -> Option<&[u8]> {
        None
    }

    /// Whether records planned as `ranges` are lent out of
    /// [`shared_bytes`](Self::shared_bytes) now rather than read into a batch's buffer.
    /// [`RecordSource::read_batch_borrowed`](crate::RecordSource::read_batch_borrowed) asks
    /// it for every batch it would lend, once the batch is planned. A backend whose
    /// in-memory view of a file is fast only while the file is cached (`auto`'s mapping,
    /// whose pages the kernel may drop at any time) checks where these ranges lie: lending
    /// uncached records would fault their pages in one at a time, where reading them puts
    /// the whole batch in flight. The default lends whatever `shared_bytes` gives.
    fn lends(&self, ranges: &[crate::ReadRange]) -> bool {
        let _ = ranges;
        true
    }

    /// File `file`'s bytes as a shared handle that keeps them alive, when the backend holds
    /// the file in memory and lets readers hand records out without copying them (mmap,
    /// memory): a batch read with
    /// [`RecordSource::read_batch_borrowed`](crate::RecordSource::read_batch_borrowed)
    /// holds one per file its records point into. Cloning the handle costs no allocation.
    fn shared_bytes(&self, _file: u32) -> Option<SharedBytes> {
        None
    }

    /// Whether reads complete one after another in the calling thread (pread, mmap,
    /// memory). Readers then fetch and decode a batch in cache-sized chunks, so each
    /// record is decoded (and checksummed) while its bytes are still in the CPU cache.
    /// Backends that gain from having the whole batch in flight at once (io_uring) say no.
    fn is_synchronous(&self) -> bool {
        false
    }

    /// Reads `len` bytes at `offset` into a new vector, after checking that the range lies
    /// within the file, so a bogus length read from a header cannot cause a huge allocation.
    fn read_to_vec(&self, file: u32, offset: u64, len: u64) -> Result<Vec<u8>> {
        check_within(offset, len, self.file_len(file), "read")
            .map_err(|e| e.with_path(self.file_path(file)))?;
        let mut buf =
            try_zeroed(len, u64::MAX, "read").map_err(|e| e.with_path(self.file_path(file)))?;
        self.read_exact_at(file, offset, &mut buf)?;
        Ok(buf)
    }
}

/// What [`ReadAt::read_many_observed`] hands each request's bytes to. A closure
/// `|k: usize, bytes: &[u8]| …` (parameter types written out) is one: it sees the bytes of
/// request `k` once they are in the buffer.
pub trait Observe {
    /// The bytes of request `k` (its number in the batch) that have just arrived in the
    /// destination buffer.
    fn arrived(&mut self, k: usize, bytes: &[u8]) -> Result<()>;

    /// Copies bytes of request `k` that the backend holds in memory (`from`) into the
    /// destination buffer (`to`, of the same length), then observes them as
    /// [`arrived`](Self::arrived) would. An observer that reads every byte (a checksum)
    /// overrides it to do both in one pass. `to` must hold `from`'s bytes afterwards, even
    /// when this returns an error.
    fn copy_arrived(&mut self, k: usize, from: &[u8], to: &mut [u8]) -> Result<()> {
        to.copy_from_slice(from);
        self.arrived(k, to)
    }
}

impl<F: FnMut(usize, &[u8]) -> Result<()>> Observe for F {
    fn arrived(&mut self, k: usize, bytes: &[u8]) -> Result<()> {
        self(k, bytes)
    }
}

/// The observer [`ReadAt::read_many_observed`] takes.
pub type Arrived<'a> = dyn Observe + 'a;

/// The pieces in which [`ReadAt::read_many_observed`] copies out of memory: for an observer
/// that checks each piece after the default [`Observe::copy_arrived`] copied it, a piece is
/// still in the L2 cache (with the source bytes it was copied from). Measured, before the
/// checksum was fused with the copy,
/// on the development VM (`reel bench --crc-size 100k --backends mmap`, 100 KiB records):
/// 2 KiB pieces made the checksum cost +208 % and 4 KiB +56 % (small copies fall below
/// glibc's `rep movsb` threshold), while 16 KiB, 32 KiB, 64 KiB and whole records gave
/// +21 … +93 %, within the busy machine's noise of each other.
pub const OBSERVED_PIECE: usize = 64 << 10;

/// The bytes of one file held in memory (a mapping, or a file loaded whole), shared: a clone
/// is a reference count, and the bytes stay valid as long as any clone exists, whatever
/// happens to the reader that handed it out.
#[derive(Clone)]
pub struct SharedBytes(SharedRepr);

#[derive(Clone)]
enum SharedRepr {
    Mapped(Arc<memmap2::Mmap>),
    Loaded(Arc<[u8]>),
}

impl SharedBytes {
    pub(crate) fn mapped(map: Arc<memmap2::Mmap>) -> Self {
        SharedBytes(SharedRepr::Mapped(map))
    }

    pub(crate) fn loaded(bytes: Arc<[u8]>) -> Self {
        SharedBytes(SharedRepr::Loaded(bytes))
    }
}

impl std::ops::Deref for SharedBytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match &self.0 {
            SharedRepr::Mapped(m) => m,
            SharedRepr::Loaded(b) => b,
        }
    }
}

impl fmt::Debug for SharedBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SharedBytes({} bytes)", self.len())
    }
}

/// The part of `dest` a request writes, or an error if it lies outside.
pub fn dest_slice<'a>(dest: &'a mut [u8], r: &ReadReq) -> Result<&'a mut [u8]> {
    let dest_len = dest.len();
    match r.dest.checked_add(r.len).and_then(|end| dest.get_mut(r.dest..end)) {
        Some(s) => Ok(s),
        None => Err(Error::invalid_input(format!(
            "read request for {} bytes at destination {} exceeds the buffer of {dest_len} bytes",
            r.len, r.dest
        ))),
    }
}

/// How many requests ahead of the copy [`WarmSources`] announces sources: far enough that
/// a source's misses (cache and TLB) are over by the time it is copied, near enough that the
/// announced lines (one per request, [`WARM_BYTES`]) do not outnumber the CPU's
/// outstanding-miss slots (a few dozen; a prefetch that finds them all busy waits).
const WARM_AHEAD: usize = 24;

/// How much of each request's source [`WarmSources`] announces: its first cache line. That
/// line's miss is also the page's TLB miss, the costly part of a random record; once the
/// copy reaches the line, the hardware prefetcher streams the rest of the page.
const WARM_BYTES: usize = 64;

/// For backends that hold the files in memory, announces each request's source to the CPU
/// a few requests before it is copied ([`prefetch_lines`](mmap::prefetch_lines)): random
/// records miss the CPU cache and the TLB, and a copy loop meets those misses one record at
/// a time, where announced ones overlap the copies before them.
///
/// Measured with `reel bench --mode warm --sizes 1k --backends mmap` (FFRecord, 1 GB on
/// tmpfs), against the bare mmap+copy loop. 2026-11-27, Intel with AVX-512: touching the
/// first byte of every request of the batch up front with plain loads gave 0.74×;
/// prefetching first bytes 16 requests ahead 0.84–0.91×; whole 1 KiB records 3–6 requests
/// ahead 0.91–1.07×. 2026-12-07, AMD Zen 3, eight alternating runs each: no prefetch
/// 0.73–0.87× (median 0.75), whole records 6 ahead 0.68–0.87× (0.77), first lines 8 ahead
/// 0.80–1.07×, 16 ahead 0.80–0.97×, 24 ahead 0.70–1.15× (0.97), 32 ahead 0.87–1.00×; also
/// announcing the line where a record crosses into the next page 0.83–0.93×. At 16 KiB,
/// first lines 24 ahead 1.07–1.17× against whole 2 KiB 6 ahead 0.94–1.03×; 256 KiB the same.
/// Fewer prefetch instructions also cost less where the data is already in the CPU cache.
struct WarmSources<'a, F: ReadAt + ?Sized> {
    files: &'a F,
    reqs: &'a [ReadReq],
    /// Requests announced so far.
    next: usize,
}

impl<'a, F: ReadAt + ?Sized> WarmSources<'a, F> {
    fn new(files: &'a F, reqs: &'a [ReadReq]) -> Self {
        WarmSources { files, reqs, next: 0 }
    }

    /// Announces the sources of the requests up to `WARM_AHEAD` past `copied_to`
    /// (exclusive), the requests about to be copied. A request that continues the previous
    /// one in its file is not announced: a run of neighbours is one sequential copy, which
    /// the hardware prefetcher follows, and announcing all of it at once would fill the
    /// miss slots.
    fn through(&mut self, copied_to: usize) {
        let to = copied_to.saturating_add(WARM_AHEAD).min(self.reqs.len());
        while self.next < to {
            let r = &self.reqs[self.next];
            let continues =
                self.next.checked_sub(1).and_then(|p| self.reqs.get(p)).is_some_and(|prev| {
                    prev.file == r.file
                        && prev.offset.checked_add(prev.len as u64) == Some(r.offset)
                });
            self.next += 1;
            let Some(map) = self.files.bytes(r.file).filter(|_| !continues) else { continue };
            let Ok(start) = usize::try_from(r.offset) else { continue };
            let stop = start.saturating_add(r.len.min(WARM_BYTES));
            if let Some(lines) = map.get(start..stop) {
                mmap::prefetch_lines(lines);
            }
        }
    }
}

/// Merges runs of requests that continue each other both in the file and in the destination
/// buffer, so a batch of neighbouring records costs one system call.
pub fn coalesce(reqs: &[ReadReq]) -> impl Iterator<Item = ReadReq> + '_ {
    coalesce_runs(reqs).map(|(merged, _)| merged)
}

/// [`coalesce`], with the positions in `reqs` of the requests each merged read serves.
pub fn coalesce_runs(
    reqs: &[ReadReq],
) -> impl Iterator<Item = (ReadReq, std::ops::Range<usize>)> + '_ {
    let mut i = 0;
    std::iter::from_fn(move || {
        let start = i;
        let mut cur = *reqs.get(i)?;
        i += 1;
        while let Some(next) = reqs.get(i) {
            let adjacent = next.file == cur.file
                && Some(next.offset) == cur.offset.checked_add(cur.len as u64)
                && Some(next.dest) == cur.dest.checked_add(cur.len);
            if !adjacent {
                break;
            }
            cur.len += next.len;
            i += 1;
        }
        Some((cur, start..i))
    })
}

macro_rules! forward_read_at {
    ($($ty:ty),*) => {$(
        impl<T: ReadAt + ?Sized> ReadAt for $ty {
            fn backend_name(&self) -> &'static str {
                (**self).backend_name()
            }
            fn file_count(&self) -> usize {
                (**self).file_count()
            }
            fn file_len(&self, file: u32) -> u64 {
                (**self).file_len(file)
            }
            fn file_path(&self, file: u32) -> &Path {
                (**self).file_path(file)
            }
            fn read_exact_at(&self, file: u32, offset: u64, buf: &mut [u8]) -> Result<()> {
                (**self).read_exact_at(file, offset, buf)
            }
            fn read_many(&self, reqs: &[ReadReq], dest: &mut [u8]) -> Result<()> {
                (**self).read_many(reqs, dest)
            }
            fn read_many_observed(
                &self,
                reqs: &[ReadReq],
                dest: &mut [u8],
                arrived: &mut Arrived<'_>,
            ) -> Result<()> {
                (**self).read_many_observed(reqs, dest, arrived)
            }
            fn will_read(&self, reqs: &[ReadReq]) {
                (**self).will_read(reqs)
            }
            fn bytes(&self, file: u32) -> Option<&[u8]> {
                (**self).bytes(file)
            }
            fn shared_bytes(&self, file: u32) -> Option<SharedBytes> {
                (**self).shared_bytes(file)
            }
            fn lends(&self, ranges: &[crate::ReadRange]) -> bool {
                (**self).lends(ranges)
            }
            fn is_synchronous(&self) -> bool {
                (**self).is_synchronous()
            }
        }
    )*};
}

forward_read_at!(Box<T>, Arc<T>);

/// Opens a set of paths as a [`ReadAt`]; how backends outside core (io_uring, object
/// storage) plug into every format's `open`.
pub trait OpenFiles: Send + Sync {
    /// A short name for reports.
    fn name(&self) -> &'static str;
    /// Opens `paths` as file numbers `0..paths.len()`.
    fn open_files(&self, paths: &[PathBuf]) -> Result<Box<dyn ReadAt>>;
}

/// Which I/O backend a reader uses.
#[derive(Clone, Default)]
#[non_exhaustive]
pub enum Backend {
    /// `pread` per request: safe against files changing underneath, no setup cost.
    #[default]
    Pread,
    /// Memory-mapped files: fastest when the data is in the page cache. A file truncated
    /// by another process while mapped makes the process crash with SIGBUS on access.
    Mmap,
    /// Whole files read into memory at open (small datasets, tests).
    Memory,
    /// A backend provided by another crate (the facade's io_uring backend, for example).
    Custom(Arc<dyn OpenFiles>),
}

impl Backend {
    /// A short name for reports.
    pub fn name(&self) -> &'static str {
        match self {
            Backend::Pread => "pread",
            Backend::Mmap => "mmap",
            Backend::Memory => "memory",
            Backend::Custom(c) => c.name(),
        }
    }

    /// Opens `paths` with this backend.
    pub fn open(&self, paths: &[PathBuf]) -> Result<Box<dyn ReadAt>> {
        Ok(match self {
            Backend::Pread => Box::new(PreadFiles::open(paths)?),
            Backend::Mmap => Box::new(MmapFiles::open(paths)?),
            Backend::Memory => Box::new(MemFiles::load(paths)?),
            Backend::Custom(c) => c.open_files(paths)?,
        })
    }

    /// The backends core provides, for tests that run on each.
    pub fn core_backends() -> [Backend; 3] {
        [Backend::Pread, Backend::Mmap, Backend::Memory]
    }
}

impl fmt::Debug for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Opens a regular file of a set; FIFOs, devices and sockets are refused without blocking
/// (see [`crate::paths::open_input`]).
pub(crate) fn open_regular(path: &Path) -> Result<(std::fs::File, u64)> {
    crate::paths::open_input(path)
}

/// The error for a read past the end of a file.
pub(crate) fn short_read(path: &Path, offset: u64, wanted: usize, file_len: u64) -> Error {
    Error::corrupt(format!(
        "unexpected end of file: wanted {wanted} bytes at offset {offset}, the file has {file_len} bytes \
         (was it truncated while open?)"
    ))
    .with_path(path)
    .with_offset(offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(file: u32, offset: u64, len: usize, dest: usize) -> ReadReq {
        ReadReq { file, offset, len, dest }
    }

    #[test]
    fn coalesce_merges_only_double_adjacency() {
        let reqs = [
            req(0, 0, 4, 0),
            req(0, 4, 4, 4),   // merges
            req(0, 8, 4, 12),  // dest gap
            req(1, 12, 4, 16), // other file
            req(1, 16, 0, 20), // empty, adjacent
        ];
        let out: Vec<_> = coalesce(&reqs).collect();
        assert_eq!(out, vec![req(0, 0, 8, 0), req(0, 8, 4, 12), req(1, 12, 4, 16)]);
    }
}
