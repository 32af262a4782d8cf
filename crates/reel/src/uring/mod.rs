//! The io_uring backend (Linux): a whole batch of reads submitted at once.
//!
//! [`UringFiles`] implements [`ReadAt`]; reads of a batch are sorted by position, merged
//! where they touch, submitted together on a ring, resubmitted when short, and every
//! completion is reaped before `read_many` returns — errors included, so a failed batch
//! never leaves the kernel writing into memory the caller owns again.
//!
//! * Rings are pooled per `UringFiles`: a thread takes one for the duration of a batch, so
//!   threads never share a ring and, in the steady state, each has its own.
//! * With [`UringOptions::direct`], files are also opened with `O_DIRECT`: each read
//!   becomes an aligned superset into a registered bounce buffer, and the wanted bytes
//!   are copied out. This bypasses the page cache (the cold-data case) at the price of
//!   one memory copy.
//! * When io_uring cannot be used (kernel too old, `kernel.io_uring_disabled`, a seccomp
//!   filter), the files fall back to `pread` and [`UringFiles::fallback_reason`] says why.

#![allow(unsafe_code)]

mod aligned;
mod ring;

use std::fs::{File, OpenOptions};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::ThreadId;

use reel_core::io::{Arrived, OpenFiles, PreadFiles};
use reel_core::{Backend, Error, ReadAt, ReadReq, Result};

use ring::{DirectFiles, Ring};

/// How [`UringFiles`] reads.
#[derive(Clone, Debug)]
pub struct UringOptions {
    /// Read through `O_DIRECT` (bypassing the page cache) when the file system allows it.
    pub direct: bool,
    /// Register the files with each ring (saves a file-table lookup per read).
    pub register_files: bool,
    /// Size of each ring's bounce buffer for `O_DIRECT` reads.
    pub bounce_bytes: usize,
    /// Register each ring's bounce buffer with the kernel (saves pinning its pages for
    /// every read). Registered buffers count against `RLIMIT_MEMLOCK`, which is 64 KiB to
    /// 8 MiB for most users without `CAP_IPC_LOCK`: where the kernel refuses, the buffer is
    /// used unregistered, with plain reads, rather than failing.
    pub register_buffers: bool,
    /// Use `pread` even if io_uring works (for comparisons and tests).
    pub force_fallback: bool,
}

impl Default for UringOptions {
    fn default() -> Self {
        UringOptions {
            direct: false,
            register_files: true,
            bounce_bytes: 32 << 20,
            register_buffers: true,
            force_fallback: false,
        }
    }
}

impl UringOptions {
    /// Reads through `O_DIRECT`.
    pub fn direct(mut self, on: bool) -> Self {
        self.direct = on;
        self
    }
}

/// How a [`UringFiles`] actually reads, after probing what the system allows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UringMode {
    /// Buffered reads through io_uring.
    Buffered,
    /// `O_DIRECT` reads through io_uring.
    Direct,
    /// io_uring is unavailable: plain `pread`.
    Pread,
}

/// Files read through io_uring (see the module documentation).
pub struct UringFiles {
    pread: PreadFiles,
    /// Kept open for the `O_DIRECT` descriptors in `fds`.
    _direct: Vec<File>,
    mode: UringMode,
    align: usize,
    lens: Vec<u64>,
    fds: Vec<RawFd>,
    options: UringOptions,
    /// Idle rings, each with the thread that last used it (`None`: not used yet).
    rings: Mutex<Vec<(Option<ThreadId>, Ring)>>,
    fallback: Option<String>,
    /// Read-ahead pieces hinted and served (see [`UringFiles::read_ahead_counts`]).
    ahead_hinted: AtomicU64,
    ahead_served: AtomicU64,
}

impl UringFiles {
    /// Opens `paths` with default options (buffered reads).
    pub fn open(paths: &[PathBuf]) -> Result<Self> {
        Self::open_with(paths, &UringOptions::default())
    }

    /// Opens `paths`. Failure to set up io_uring or `O_DIRECT` is not an error: the files
    /// fall back (to buffered io_uring, or to `pread`) and
    /// [`fallback_reason`](Self::fallback_reason) says why.
    pub fn open_with(paths: &[PathBuf], options: &UringOptions) -> Result<Self> {
        let pread = PreadFiles::open(paths)?;
        let lens: Vec<u64> = (0..paths.len() as u32).map(|f| pread.file_len(f)).collect();
        let mut reasons = Vec::new();
        let (mut direct, mut align) = (Vec::new(), 4096);
        if options.direct {
            match open_direct(paths) {
                Ok((files, a)) => (direct, align) = (files, a),
                Err(why) => reasons.push(format!("O_DIRECT unavailable ({why})")),
            }
        }
        let use_direct = options.direct && reasons.is_empty();
        let fds: Vec<RawFd> = if use_direct {
            direct.iter().map(AsRawFd::as_raw_fd).collect()
        } else {
            (0..paths.len() as u32).filter_map(|f| pread.file(f)).map(AsRawFd::as_raw_fd).collect()
        };
        let mut rings = Vec::new();
        let mode = if options.force_fallback {
            reasons.push("pread forced by options".into());
            UringMode::Pread
        } else {
            match Ring::new(&fds, options.register_files) {
                Ok(r) => {
                    rings.push((None, r));
                    if use_direct { UringMode::Direct } else { UringMode::Buffered }
                }
                Err(e) => {
                    reasons.push(format!("io_uring unavailable: {e}"));
                    UringMode::Pread
                }
            }
        };
        Ok(UringFiles {
            pread,
            _direct: direct,
            mode,
            align,
            lens,
            fds,
            options: options.clone(),
            rings: Mutex::new(rings),
            fallback: (!reasons.is_empty()).then(|| reasons.join("; ")),
            ahead_hinted: AtomicU64::new(0),
            ahead_served: AtomicU64::new(0),
        })
    }

    /// Why these files do not read the way the options asked (no io_uring, no
    /// `O_DIRECT`), if they do not.
    pub fn fallback_reason(&self) -> Option<&str> {
        self.fallback.as_deref()
    }

    /// How reads are actually done.
    pub fn mode(&self) -> UringMode {
        self.mode
    }

    /// An idle ring for this thread: the one it used last if it is idle, so that a
    /// thread's hint ([`ReadAt::will_read`]) and its next read meet on the same ring, the
    /// one holding the read-ahead, whatever other threads read meanwhile; else any.
    fn take_ring(&self) -> Option<Ring> {
        let me = std::thread::current().id();
        let pooled = self.rings.lock().ok().and_then(|mut rings| {
            let mine = rings.iter().rposition(|(user, _)| *user == Some(me));
            let at = mine.or_else(|| rings.len().checked_sub(1))?;
            Some(rings.swap_remove(at).1)
        });
        pooled.or_else(|| Ring::new(&self.fds, self.options.register_files).ok())
    }

    fn return_ring(&self, mut ring: Ring) {
        let (hinted, served) = ring.take_ahead_counts();
        if hinted + served > 0 {
            self.ahead_hinted.fetch_add(hinted, Ordering::Relaxed);
            self.ahead_served.fetch_add(served, Ordering::Relaxed);
        }
        if let Ok(mut rings) = self.rings.lock() {
            rings.push((Some(std::thread::current().id()), ring));
        }
    }

    /// Aligned reads started ahead on a hint ([`ReadAt::will_read`]) and those a batch then
    /// took instead of reading them itself, since the files were opened. Only `O_DIRECT`
    /// reads ahead; a hint whose batch is never read, or read differently, is not served.
    pub fn read_ahead_counts(&self) -> (u64, u64) {
        (self.ahead_hinted.load(Ordering::Relaxed), self.ahead_served.load(Ordering::Relaxed))
    }

    fn describe(&self) -> impl Fn(u32, u64, std::io::Error) -> Error + '_ {
        move |file, offset, e| {
            let path = self.pread.file_path(file);
            if e.kind() == std::io::ErrorKind::UnexpectedEof {
                Error::corrupt(format!(
                    "unexpected end of file at offset {offset} (the file has {} bytes; was it truncated while open?)",
                    self.file_len(file)
                ))
                .with_path(path)
                .with_offset(offset)
            } else {
                Error::io(e, "io_uring read failed").with_path(path).with_offset(offset)
            }
        }
    }
}

fn open_direct(paths: &[PathBuf]) -> std::result::Result<(Vec<File>, usize), String> {
    let mut files = Vec::with_capacity(paths.len());
    let mut align = 512usize;
    for p in paths {
        let f = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECT)
            .open(p)
            .map_err(|e| format!("{}: {e}", p.display()))?;
        align = align.max(dio_alignment(&f, p).unwrap_or(4096));
        files.push(f);
    }
    Ok((files, align))
}

/// The offset alignment `O_DIRECT` needs on this file's file system (statx DIOALIGN), or
/// `None` when the kernel does not say.
fn dio_alignment(f: &File, path: &Path) -> Option<usize> {
    let _ = path;
    let mut stx: libc::statx = unsafe_zeroed_statx();
    let empty = c"";
    // SAFETY: `stx` is a valid, writable statx buffer and the path is a NUL-terminated
    // empty string used with AT_EMPTY_PATH on an open descriptor.
    let rc = unsafe {
        libc::statx(
            f.as_raw_fd(),
            empty.as_ptr(),
            libc::AT_EMPTY_PATH,
            libc::STATX_DIOALIGN,
            &mut stx,
        )
    };
    if rc != 0 || stx.stx_mask & libc::STATX_DIOALIGN == 0 || stx.stx_dio_offset_align == 0 {
        return None;
    }
    Some((stx.stx_dio_offset_align as usize).max(stx.stx_dio_mem_align as usize))
}

fn unsafe_zeroed_statx() -> libc::statx {
    // SAFETY: statx is a plain C struct of integers, for which all-zero is a valid value.
    unsafe { std::mem::zeroed() }
}

impl ReadAt for UringFiles {
    fn backend_name(&self) -> &'static str {
        match self.mode {
            UringMode::Buffered => "io_uring",
            UringMode::Direct => "io_uring+direct",
            UringMode::Pread => "io_uring(pread fallback)",
        }
    }

    fn file_count(&self) -> usize {
        self.pread.file_count()
    }

    fn file_len(&self, file: u32) -> u64 {
        self.lens.get(file as usize).copied().unwrap_or(0)
    }

    fn file_path(&self, file: u32) -> &Path {
        self.pread.file_path(file)
    }

    fn read_exact_at(&self, file: u32, offset: u64, buf: &mut [u8]) -> Result<()> {
        if self.mode == UringMode::Direct {
            let req = [ReadReq { file, offset, len: buf.len(), dest: 0 }];
            return self.read_many(&req, buf);
        }
        self.pread.read_exact_at(file, offset, buf)
    }

    fn read_many(&self, reqs: &[ReadReq], dest: &mut [u8]) -> Result<()> {
        self.read_ring(reqs, dest, None)
    }

    /// With `O_DIRECT`, starts the reads of `reqs` on the ring this thread reads with next,
    /// into the ring's own read-ahead memory; the `read_many` of the same requests takes
    /// their bytes from there (see the ring's read-ahead). Buffered and `pread` modes ignore it.
    fn will_read(&self, reqs: &[ReadReq]) {
        if self.mode != UringMode::Direct || reqs.is_empty() {
            return;
        }
        if self.check_within_files(reqs).is_err() {
            return;
        }
        let Some(mut ring) = self.take_ring() else { return };
        // A hint that fails to start is only a hint: the read proper reads it all.
        let _ = ring.read_ahead(self.direct_files(), reqs);
        self.return_ring(ring);
    }

    /// Each request is handed over as its read completes (buffered) or as its bytes are
    /// copied out of the bounce buffer (`O_DIRECT`), while the batch's other reads are
    /// still in flight.
    fn read_many_observed(
        &self,
        reqs: &[ReadReq],
        dest: &mut [u8],
        arrived: &mut Arrived<'_>,
    ) -> Result<()> {
        self.read_ring(reqs, dest, Some(arrived))
    }
}

impl UringFiles {
    /// The files as the `O_DIRECT` path reads them.
    fn direct_files(&self) -> DirectFiles<'_> {
        DirectFiles {
            fds: &self.fds,
            lens: &self.lens,
            align: self.align,
            bounce_len: self.options.bounce_bytes,
            register: self.options.register_buffers,
        }
    }

    /// Checks that every request lies within its file.
    fn check_within_files(&self, reqs: &[ReadReq]) -> Result<()> {
        for r in reqs {
            reel_core::check_within(r.offset, r.len as u64, self.file_len(r.file), "read")
                .map_err(|e| e.with_path(self.file_path(r.file)))?;
        }
        Ok(())
    }

    /// Reads a batch on a pooled ring (or through `pread` when there is none), handing
    /// requests to `arrived` as they complete when it is given.
    fn read_ring(
        &self,
        reqs: &[ReadReq],
        dest: &mut [u8],
        arrived: Option<&mut Arrived<'_>>,
    ) -> Result<()> {
        self.check_within_files(reqs)?;
        let ring = if self.mode == UringMode::Pread { None } else { self.take_ring() };
        let Some(mut ring) = ring else {
            return match arrived {
                Some(arrived) => self.pread.read_many_observed(reqs, dest, arrived),
                None => self.pread.read_many(reqs, dest),
            };
        };
        let describe = self.describe();
        let result = if self.mode == UringMode::Direct {
            ring.read_direct(self.direct_files(), reqs, dest, &describe, arrived)
        } else {
            ring.read_buffered(&self.fds, reqs, dest, &describe, arrived)
        };
        self.return_ring(ring);
        result
    }
}

/// Opens files as [`UringFiles`]; the [`Backend::Custom`] behind [`uring_backend`].
#[derive(Debug, Clone, Default)]
pub struct UringOpener {
    options: UringOptions,
}

impl OpenFiles for UringOpener {
    fn name(&self) -> &'static str {
        if !uring_available() {
            "io_uring(pread fallback)"
        } else if self.options.direct {
            "io_uring+direct"
        } else {
            "io_uring"
        }
    }

    fn open_files(&self, paths: &[PathBuf]) -> Result<Box<dyn ReadAt>> {
        Ok(Box::new(UringFiles::open_with(paths, &self.options)?))
    }
}

/// The io_uring backend with `options`, for any format's `open`.
pub fn uring_backend(options: UringOptions) -> Backend {
    Backend::Custom(Arc::new(UringOpener { options }))
}

/// Whether this process can create an io_uring instance (cached after the first call).
pub fn uring_available() -> bool {
    uring_unavailable_reason().is_none()
}

/// Why io_uring cannot be used here, if it cannot.
pub fn uring_unavailable_reason() -> Option<&'static str> {
    static REASON: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    REASON
        .get_or_init(|| {
            io_uring::IoUring::new(2).err().map(|e| format!("io_uring unavailable: {e}"))
        })
        .as_deref()
}
