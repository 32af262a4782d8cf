use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{ReadAt, SharedBytes, open_regular, short_read};
use crate::{Error, Result};

/// Files held in memory: the oracle backend for tests and the way fuzzers feed bytes to
/// parsers without touching the disk.
#[derive(Clone, Debug, Default)]
pub struct MemFiles {
    files: Vec<(PathBuf, Arc<[u8]>)>,
}

impl MemFiles {
    /// A set of named in-memory files; the names only appear in messages.
    pub fn new<P: Into<PathBuf>, B: Into<Arc<[u8]>>>(
        files: impl IntoIterator<Item = (P, B)>,
    ) -> Self {
        MemFiles { files: files.into_iter().map(|(p, b)| (p.into(), b.into())).collect() }
    }

    /// One in-memory file.
    pub fn single(name: impl Into<PathBuf>, bytes: impl Into<Arc<[u8]>>) -> Self {
        MemFiles::new([(name.into(), bytes.into())])
    }

    /// Reads every path into memory.
    pub fn load(paths: &[PathBuf]) -> Result<Self> {
        let mut files = Vec::with_capacity(paths.len());
        for p in paths {
            let (mut f, len) = open_regular(p)?;
            let mut buf = crate::limits::try_vec_with_capacity(len, u64::MAX, "file contents")
                .map_err(|e| e.with_path(p))?;
            std::io::Read::read_to_end(&mut f, &mut buf)
                .map_err(|e| Error::io(e, "cannot read").with_path(p))?;
            files.push((p.clone(), Arc::from(buf)));
        }
        Ok(MemFiles { files })
    }

    /// Adds a file and returns its number.
    pub fn push(&mut self, name: impl Into<PathBuf>, bytes: impl Into<Arc<[u8]>>) -> u32 {
        self.files.push((name.into(), bytes.into()));
        (self.files.len() - 1) as u32
    }
}

impl ReadAt for MemFiles {
    fn is_synchronous(&self) -> bool {
        true
    }

    fn backend_name(&self) -> &'static str {
        "memory"
    }

    fn file_count(&self) -> usize {
        self.files.len()
    }

    fn file_len(&self, file: u32) -> u64 {
        self.files.get(file as usize).map_or(0, |f| f.1.len() as u64)
    }

    fn file_path(&self, file: u32) -> &Path {
        self.files.get(file as usize).map_or(Path::new("<no such file>"), |f| &f.0)
    }

    fn read_exact_at(&self, file: u32, offset: u64, buf: &mut [u8]) -> Result<()> {
        let Some((path, data)) = self.files.get(file as usize) else {
            return Err(Error::invalid_input(format!("no file number {file} in the set")));
        };
        let src = usize::try_from(offset)
            .ok()
            .and_then(|o| Some(o..o.checked_add(buf.len())?))
            .and_then(|r| data.get(r));
        match src {
            Some(src) => {
                buf.copy_from_slice(src);
                Ok(())
            }
            None => Err(short_read(path, offset, buf.len(), data.len() as u64)),
        }
    }

    fn bytes(&self, file: u32) -> Option<&[u8]> {
        self.files.get(file as usize).map(|f| &*f.1)
    }

    fn shared_bytes(&self, file: u32) -> Option<SharedBytes> {
        self.files.get(file as usize).map(|f| SharedBytes::loaded(f.1.clone()))
    }
}
