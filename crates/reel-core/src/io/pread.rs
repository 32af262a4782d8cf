use std::fs::File;
use std::path::{Path, PathBuf};

use super::{ReadAt, open_regular, short_read};
use crate::{Error, Result};

/// Files read with positional reads (`pread`). Safe against concurrent truncation, one
/// system call per (coalesced) request.
#[derive(Debug)]
pub struct PreadFiles {
    files: Vec<(PathBuf, File, u64)>,
}

impl PreadFiles {
    /// Opens every path for reading and records its length.
    pub fn open(paths: &[PathBuf]) -> Result<Self> {
        let files = paths
            .iter()
            .map(|p| open_regular(p).map(|(f, len)| (p.clone(), f, len)))
            .collect::<Result<_>>()?;
        Ok(PreadFiles { files })
    }

    /// The open file `file`, for backends built on top of this one.
    pub fn file(&self, file: u32) -> Option<&File> {
        self.files.get(file as usize).map(|f| &f.1)
    }
}

#[cfg(unix)]
fn pread_exact(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, buf, offset)
}

#[cfg(windows)]
fn pread_exact(file: &File, mut buf: &mut [u8], mut offset: u64) -> std::io::Result<()> {
    use std::os::windows::fs::FileExt;
    while !buf.is_empty() {
        match file.seek_read(buf, offset) {
            Ok(0) => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => {
                buf = &mut buf[n..];
                offset += n as u64;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

impl ReadAt for PreadFiles {
    fn is_synchronous(&self) -> bool {
        true
    }

    fn backend_name(&self) -> &'static str {
        "pread"
    }

    fn file_count(&self) -> usize {
        self.files.len()
    }

    fn file_len(&self, file: u32) -> u64 {
        self.files.get(file as usize).map_or(0, |f| f.2)
    }

    fn file_path(&self, file: u32) -> &Path {
        self.files.get(file as usize).map_or(Path::new("<no such file>"), |f| &f.0)
    }

    fn read_exact_at(&self, file: u32, offset: u64, buf: &mut [u8]) -> Result<()> {
        let Some((path, f, len)) = self.files.get(file as usize) else {
            return Err(Error::invalid_input(format!("no file number {file} in the set")));
        };
        pread_exact(f, buf, offset).map_err(|e| {
            if e.kind() == std::io::ErrorKind::UnexpectedEof {
                short_read(path, offset, buf.len(), *len)
            } else {
                Error::io(e, "read failed").with_path(path).with_offset(offset)
            }
        })
    }
}
