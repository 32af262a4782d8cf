//! Where a Parquet or Arrow IPC file's bytes come from: a local file, or any [`Store`] (an
//! object store), read by ranges. arrow-rs's readers take a `Read + Seek` (IPC) or a
//! [`ChunkReader`] (Parquet); [`FileInput`] is both, for either kind of place.

use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;
use parquet::errors::ParquetError;
use parquet::file::reader::{ChunkReader, Length};
use reel_core::{Backend, Error, ReadReq, Result, StoreRef};

/// Bytes a buffered reader of an object asks for at once: large enough that a Parquet
/// page scan costs a few requests rather than one per 8 KiB. (IPC batches are read one
/// block, one request, at a time.)
const REMOTE_BUFFER: usize = 1 << 20;

/// A Parquet or IPC file being read, and the read of it that last failed.
pub(crate) struct FileInput {
    place: Place,
    /// The last failed read's error, shared by every handle on the file: arrow-rs and
    /// parquet turn an error of a read they make into text (`ArrowError::ParquetError`),
    /// and [`failure_or`](Self::failure_or) gives back the error itself, kind and all, so
    /// that a store that did not answer is not reported as a damaged file.
    failed: Arc<Mutex<Option<Error>>>,
}

/// Where a [`FileInput`]'s bytes are.
enum Place {
    /// A file on the local file system (read as arrow-rs reads files).
    Local(File),
    /// An object in a store, read by ranged reads from `pos`.
    Store { store: StoreRef, path: PathBuf, len: u64, pos: u64 },
}

impl FileInput {
    /// Opens `path` in `store` (the local file system reads through [`File`]).
    pub(crate) fn open(store: &StoreRef, path: &Path) -> Result<Self> {
        let place = if store.name() == "file" {
            Place::Local(File::open(path).map_err(|e| Error::io(e, "cannot open").with_path(path))?)
        } else {
            let len = store.size(path)?;
            Place::Store { store: store.clone(), path: path.to_path_buf(), len, pos: 0 }
        };
        Ok(FileInput { place, failed: Arc::default() })
    }

    /// Another handle on the same file, at its start.
    pub(crate) fn try_clone(&self) -> Result<Self> {
        let place = match &self.place {
            Place::Local(file) => {
                Place::Local(file.try_clone().map_err(|e| Error::io(e, "cannot reopen"))?)
            }
            Place::Store { store, path, len, .. } => {
                Place::Store { store: store.clone(), path: path.clone(), len: *len, pos: 0 }
            }
        };
        Ok(FileInput { place, failed: Arc::clone(&self.failed) })
    }

    /// Whether the file is on the local file system.
    pub(crate) fn is_local(&self) -> bool {
        matches!(self.place, Place::Local(_))
    }

    /// The error of the read that failed under a failure of arrow-rs or parquet, taken
    /// (so that a later failure is not blamed on it), or else `damage()`: the bytes were
    /// read and do not decode.
    pub(crate) fn failure_or(&self, damage: impl FnOnce() -> Error) -> Error {
        let failed = self.failed.lock().unwrap_or_else(PoisonError::into_inner).take();
        failed.unwrap_or_else(damage)
    }

    /// Keeps `error` as the last failed read (see [`failure_or`](Self::failure_or)) and
    /// returns it.
    fn failed(&self, error: Error) -> Error {
        keep_failure(&self.failed, error)
    }

    /// Reads exactly `buf.len()` bytes at `offset`: a positioned read of a local file (no
    /// shared file position, no duplicated descriptor), or one range request of an object,
    /// whose error keeps its kind (a cancelled read stays `Closed`, a vanished object
    /// `NotFound`). `path` names the file in errors.
    pub(crate) fn read_exact_at(&self, offset: u64, buf: &mut [u8], path: &Path) -> Result<()> {
        let len = buf.len();
        let failed = |e| {
            Error::io(e, format!("cannot read {len} bytes")).with_path(path).with_offset(offset)
        };
        match &self.place {
            #[cfg(unix)]
            Place::Local(file) => {
                std::os::unix::fs::FileExt::read_exact_at(file, buf, offset).map_err(failed)
            }
            #[cfg(not(unix))]
            Place::Local(file) => {
                let mut file = file.try_clone().map_err(failed)?;
                file.seek(SeekFrom::Start(offset))
                    .and_then(|_| file.read_exact(buf))
                    .map_err(failed)
            }
            Place::Store { store, path: object, .. } => {
                let bytes = store.read_range(object, offset, buf.len() as u64)?;
                // A store answers exactly the range asked for; one that does not is not
                // trusted with a copy that would panic.
                if bytes.len() != len {
                    return Err(failed(std::io::Error::new(
                        std::io::ErrorKind::UnexpectedEof,
                        format!("the store answered {} bytes", bytes.len()),
                    )));
                }
                buf.copy_from_slice(&bytes);
                Ok(())
            }
        }
    }

    /// Performs the reads `reqs` (of file 0: this file) into `dest`. A local file reads
    /// them one positioned read at a time; an object reads them as one batched read of the
    /// store ([`Store::open_files`](reel_core::Store::open_files)), with the store's
    /// requests in flight at once and neighbouring ranges merged, instead of one round
    /// trip after another. The caller bounds what `dest` holds.
    pub(crate) fn read_many(&self, reqs: &[ReadReq], dest: &mut [u8], path: &Path) -> Result<()> {
        match &self.place {
            Place::Local(_) => {
                for r in reqs {
                    self.read_exact_at(r.offset, reel_core::io::dest_slice(dest, r)?, path)?;
                }
                Ok(())
            }
            Place::Store { store, path: object, .. } => {
                let files = store.open_files(std::slice::from_ref(object), &Backend::default())?;
                files.read_many(reqs, dest)
            }
        }
    }

    /// Whether each read is a request to a store, whose round trip is worth sparing by
    /// reading together what will be needed together.
    pub(crate) fn reads_are_requests(&self) -> bool {
        matches!(self.place, Place::Store { .. })
    }

    /// A buffered reader of the file, sized for where it lies.
    pub(crate) fn buffered(self) -> BufReader<FileInput> {
        match self.place {
            Place::Local(_) => BufReader::new(self),
            Place::Store { .. } => BufReader::with_capacity(REMOTE_BUFFER, self),
        }
    }
}

/// Keeps `error` in `slot` and returns a copy of what it says for arrow-rs or parquet to
/// carry (which only turn it into text).
fn keep_failure(slot: &Mutex<Option<Error>>, error: Error) -> Error {
    let copy = error.copy_of_text();
    *slot.lock().unwrap_or_else(PoisonError::into_inner) = Some(error);
    copy
}

impl Read for FileInput {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let failed = Arc::clone(&self.failed);
        let keep = |error| std::io::Error::other(keep_failure(&failed, error));
        match &mut self.place {
            // An interrupted read is the reader's to retry (BufReader and read_exact do).
            Place::Local(file) => file.read(buf).map_err(|e| {
                if e.kind() == std::io::ErrorKind::Interrupted {
                    e
                } else {
                    keep(Error::io(e, "cannot read"))
                }
            }),
            Place::Store { store, path, len, pos } => {
                let n = (buf.len() as u64).min(len.saturating_sub(*pos));
                if n == 0 {
                    return Ok(0);
                }
                let bytes = store.read_range(path, *pos, n).map_err(keep)?;
                let got = bytes.len().min(buf.len());
                buf[..got].copy_from_slice(&bytes[..got]);
                *pos += got as u64;
                Ok(got)
            }
        }
    }
}

impl Seek for FileInput {
    fn seek(&mut self, to: SeekFrom) -> std::io::Result<u64> {
        match &mut self.place {
            Place::Local(file) => file.seek(to),
            Place::Store { len, pos, .. } => {
                let target = match to {
                    SeekFrom::Start(p) => Some(p),
                    SeekFrom::End(d) => len.checked_add_signed(d),
                    SeekFrom::Current(d) => pos.checked_add_signed(d),
                };
                let target = target.ok_or_else(|| {
                    std::io::Error::new(std::io::ErrorKind::InvalidInput, "seek before the start")
                })?;
                *pos = target;
                Ok(target)
            }
        }
    }
}

impl Length for FileInput {
    fn len(&self) -> u64 {
        match &self.place {
            Place::Local(file) => Length::len(file),
            Place::Store { len, .. } => *len,
        }
    }
}

impl ChunkReader for FileInput {
    type T = BufReader<FileInput>;

    fn get_read(&self, start: u64) -> parquet::errors::Result<Self::T> {
        let mut input = self.try_clone().map_err(|e| ParquetError::External(Box::new(e)))?;
        input.seek(SeekFrom::Start(start))?;
        Ok(input.buffered())
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<Bytes> {
        match &self.place {
            Place::Local(file) => file.get_bytes(start, length).map_err(|e| {
                let io = match e {
                    ParquetError::External(cause) => match cause.downcast::<std::io::Error>() {
                        Ok(io) => *io,
                        Err(cause) => return ParquetError::External(cause),
                    },
                    // Parquet's own checks of the request (past the end: the footer lies).
                    other => return other,
                };
                let error = Error::io(io, format!("cannot read {length} bytes")).with_offset(start);
                ParquetError::External(Box::new(self.failed(error)))
            }),
            Place::Store { store, path, .. } => store
                .read_range(path, start, length as u64)
                .map(Bytes::from)
                .map_err(|e| ParquetError::External(Box::new(self.failed(e)))),
        }
    }
}
