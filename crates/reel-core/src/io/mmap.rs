use std::path::{Path, PathBuf};
use std::sync::Arc;

use memmap2::Mmap;

use super::{ReadAt, SharedBytes, open_regular, short_read};
use crate::{Error, Result};

/// Memory-mapped files. Reads are a copy out of the page cache with no system call; the
/// zero-copy [`ReadAt::bytes`] path hands out the mapping itself.
///
/// If another process truncates a mapped file, touching the lost pages raises SIGBUS and
/// ends the process. Use [`PreadFiles`](super::PreadFiles) for files that may change.
#[derive(Debug)]
pub struct MmapFiles {
    /// Each mapping is shared with the batches whose records borrow from it.
    files: Vec<(PathBuf, Option<Arc<Mmap>>)>,
}

impl MmapFiles {
    /// Maps every path read-only. Empty files are not mapped (the OS refuses zero-length maps).
    pub fn open(paths: &[PathBuf]) -> Result<Self> {
        let mut files = Vec::with_capacity(paths.len());
        for p in paths {
            let (f, len) = open_regular(p)?;
            let map = if len == 0 {
                None
            } else {
                // SAFETY: the mapping is read-only and private to this struct. The remaining
                // hazard, another process truncating the file while it is mapped, cannot be
                // excluded by any safe API; it is documented on the type and the caller
                // chooses this backend knowingly.
                #[allow(unsafe_code)]
                let map = unsafe { Mmap::map(&f) }
                    .map_err(|e| Error::io(e, "cannot map file").with_path(p))?;
                Some(Arc::new(map))
            };
            files.push((p.clone(), map));
        }
        Ok(MmapFiles { files })
    }

    fn map(&self, file: u32) -> Option<&[u8]> {
        self.files.get(file as usize).map(|f| f.1.as_deref().map_or(&[][..], |m| &m[..]))
    }
}

impl ReadAt for MmapFiles {
    fn is_synchronous(&self) -> bool {
        true
    }

    fn backend_name(&self) -> &'static str {
        "mmap"
    }

    fn file_count(&self) -> usize {
        self.files.len()
    }

    fn file_len(&self, file: u32) -> u64 {
        self.map(file).map_or(0, |m| m.len() as u64)
    }

    fn file_path(&self, file: u32) -> &Path {
        self.files.get(file as usize).map_or(Path::new("<no such file>"), |f| &f.0)
    }

    fn read_exact_at(&self, file: u32, offset: u64, buf: &mut [u8]) -> Result<()> {
        let Some(map) = self.map(file) else {
            return Err(Error::invalid_input(format!("no file number {file} in the set")));
        };
        let src = usize::try_from(offset)
            .ok()
            .and_then(|o| Some(o..o.checked_add(buf.len())?))
            .and_then(|r| map.get(r));
        match src {
            Some(src) => {
                buf.copy_from_slice(src);
                Ok(())
            }
            None => Err(short_read(self.file_path(file), offset, buf.len(), map.len() as u64)),
        }
    }

    fn bytes(&self, file: u32) -> Option<&[u8]> {
        self.map(file)
    }

    /// The mapping itself; an empty file (not mapped) has none.
    fn shared_bytes(&self, file: u32) -> Option<SharedBytes> {
        let map = self.files.get(file as usize)?.1.as_ref()?;
        Some(SharedBytes::mapped(map.clone()))
    }
}

/// Asks the CPU to bring every cache line of `bytes` into its cache, without waiting: a
/// record checked where it lies in a mapping is fetched from memory with many lines in
/// flight at once, as a copy would, instead of one page at a time as the checksum loop
/// reaches it.
pub(crate) fn prefetch_lines(bytes: &[u8]) {
    // Without a prefetch instruction each line would be a load that waits to retire: only
    // the first is touched there.
    let lines = if cfg!(target_arch = "x86_64") { bytes.len() } else { bytes.len().min(1) };
    for line in bytes[..lines].iter().step_by(64) {
        prefetch_line(line);
    }
}

/// Asks the CPU to bring `value`'s cache line into its cache, without waiting (see
/// [`prefetch_read`](crate::prefetch_read)). Here because prefetching needs `unsafe`, which
/// core allows here and in `checksum::copy` only.
#[inline(always)]
pub(crate) fn prefetch_line<T: Copy>(value: &T) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        // SAFETY: the intrinsic takes a raw pointer, which it never dereferences: a
        // prefetch is a hint that never faults and reads nothing into the program, whatever
        // the address (this one is a live reference's anyway). Its `sse` target feature is
        // part of every x86-64 CPU.
        #[allow(unsafe_code)]
        unsafe {
            _mm_prefetch::<_MM_HINT_T0>(std::ptr::from_ref(value).cast());
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    // A plain load: it overlaps its miss with the loads around it, though it waits to
    // retire.
    std::hint::black_box(*value);
}
