//! [`HintLog`]: files that log the read-ahead hints a source gives them.

use std::path::Path;
use std::sync::Mutex;

use crate::{ReadAt, ReadRange, ReadReq, Result};

/// Files that read like an asynchronous backend ([`ReadAt::is_synchronous`] is false, so
/// sources hint them) and log, as byte ranges, each hint ([`ReadAt::will_read`]) and every
/// request of each batched read ([`ReadAt::read_many`]), then read from `files`.
///
/// Hand a source an `Arc<HintLog<F>>` (`Arc` forwards [`ReadAt`]) and keep a clone to look
/// at the log.
pub struct HintLog<F> {
    files: F,
    hints: Mutex<Vec<Vec<ReadRange>>>,
    reads: Mutex<Vec<ReadRange>>,
}

fn ranges(reqs: &[ReadReq]) -> impl Iterator<Item = ReadRange> + '_ {
    reqs.iter().map(|r| ReadRange { file: r.file, offset: r.offset, len: r.len as u64 })
}

impl<F> HintLog<F> {
    /// Logs the hints and reads of `files`, with nothing logged yet.
    pub fn new(files: F) -> Self {
        HintLog { files, hints: Mutex::default(), reads: Mutex::default() }
    }

    /// The hints given since the last call, one entry per hint.
    pub fn take_hints(&self) -> Vec<Vec<ReadRange>> {
        std::mem::take(&mut *self.hints.lock().unwrap())
    }

    /// The requests read by batched reads since the last call, in order.
    pub fn take_reads(&self) -> Vec<ReadRange> {
        std::mem::take(&mut *self.reads.lock().unwrap())
    }
}

impl<F: ReadAt> ReadAt for HintLog<F> {
    fn backend_name(&self) -> &'static str {
        "hint log"
    }
    fn file_count(&self) -> usize {
        self.files.file_count()
    }
    fn file_len(&self, file: u32) -> u64 {
        self.files.file_len(file)
    }
    fn file_path(&self, file: u32) -> &Path {
        self.files.file_path(file)
    }
    fn read_exact_at(&self, file: u32, offset: u64, buf: &mut [u8]) -> Result<()> {
        self.files.read_exact_at(file, offset, buf)
    }
    fn read_many(&self, reqs: &[ReadReq], dest: &mut [u8]) -> Result<()> {
        self.reads.lock().unwrap().extend(ranges(reqs));
        self.files.read_many(reqs, dest)
    }
    fn will_read(&self, reqs: &[ReadReq]) {
        self.hints.lock().unwrap().push(ranges(reqs).collect());
    }
    fn is_synchronous(&self) -> bool {
        false
    }
}
