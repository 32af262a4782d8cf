//! A file set some of whose files are not there and not needed: a Granular dataset opened
//! with a selection of keys, copied without the bags of a key left out.

use std::path::{Path, PathBuf};

use super::{Arrived, ReadAt, ReadReq, SharedBytes};
use crate::{Error, ErrorKind, Result};

/// The files of `opened` as numbers `0..n`, then files that were not found as numbers
/// `n..`: they have length 0, and reading them is a [`ErrorKind::NotFound`] error naming
/// the file and saying why it was not opened. A format builds one when the files it will
/// not read need not exist; its numbering puts those files last.
pub struct PartlyOpen {
    opened: Box<dyn ReadAt>,
    absent: Vec<PathBuf>,
    why: String,
}

impl PartlyOpen {
    /// `opened`, followed by the files `absent`, which were not found; `why` says in a
    /// message why that is no error when opening (`"its key was left out"`).
    pub fn new(opened: Box<dyn ReadAt>, absent: Vec<PathBuf>, why: impl Into<String>) -> Self {
        PartlyOpen { opened, absent, why: why.into() }
    }

    /// Whether `file` is one of the opened files.
    fn is_open(&self, file: u32) -> bool {
        (file as usize) < self.opened.file_count()
    }

    /// The error for a read of file `file`, which was not opened.
    fn absent_error(&self, file: u32) -> Error {
        Error::new(
            ErrorKind::NotFound,
            format!("no such file: it was not opened, since {}", self.why),
        )
        .with_path(self.file_path(file))
    }

    /// Refuses a batch that reads a file that was not opened.
    fn check_open(&self, reqs: &[ReadReq]) -> Result<()> {
        match reqs.iter().find(|r| !self.is_open(r.file)) {
            Some(r) => Err(self.absent_error(r.file)),
            None => Ok(()),
        }
    }
}

impl ReadAt for PartlyOpen {
    fn backend_name(&self) -> &'static str {
        self.opened.backend_name()
    }

    fn file_count(&self) -> usize {
        self.opened.file_count() + self.absent.len()
    }

    fn file_len(&self, file: u32) -> u64 {
        if self.is_open(file) { self.opened.file_len(file) } else { 0 }
    }

    fn file_path(&self, file: u32) -> &Path {
        if self.is_open(file) {
            return self.opened.file_path(file);
        }
        let k = file as usize - self.opened.file_count();
        self.absent.get(k).map_or(Path::new(""), PathBuf::as_path)
    }

    fn read_exact_at(&self, file: u32, offset: u64, buf: &mut [u8]) -> Result<()> {
        if !self.is_open(file) {
            return Err(self.absent_error(file));
        }
        self.opened.read_exact_at(file, offset, buf)
    }

    fn read_many(&self, reqs: &[ReadReq], dest: &mut [u8]) -> Result<()> {
        self.check_open(reqs)?;
        self.opened.read_many(reqs, dest)
    }

    fn read_many_observed(
        &self,
        reqs: &[ReadReq],
        dest: &mut [u8],
        arrived: &mut Arrived<'_>,
    ) -> Result<()> {
        self.check_open(reqs)?;
        self.opened.read_many_observed(reqs, dest, arrived)
    }

    fn will_read(&self, reqs: &[ReadReq]) {
        if reqs.iter().all(|r| self.is_open(r.file)) {
            self.opened.will_read(reqs);
        }
    }

    fn bytes(&self, file: u32) -> Option<&[u8]> {
        if self.is_open(file) { self.opened.bytes(file) } else { None }
    }

    fn lends(&self, ranges: &[crate::ReadRange]) -> bool {
        ranges.iter().all(|r| self.is_open(r.file)) && self.opened.lends(ranges)
    }

    fn shared_bytes(&self, file: u32) -> Option<SharedBytes> {
        if self.is_open(file) { self.opened.shared_bytes(file) } else { None }
    }

    fn is_synchronous(&self) -> bool {
        self.opened.is_synchronous()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MemFiles;

    #[test]
    fn opened_files_read_and_absent_ones_are_not_found_naming_them() {
        let opened = MemFiles::new(vec![(PathBuf::from("a.bag"), b"hello".to_vec())]);
        let files = PartlyOpen::new(
            Box::new(opened),
            vec![PathBuf::from("image.bag")],
            "its key was left out",
        );
        assert_eq!(files.file_count(), 2);
        assert_eq!((files.file_len(0), files.file_len(1)), (5, 0));
        assert_eq!(files.file_path(1), Path::new("image.bag"));
        let mut buf = [0u8; 4];
        files.read_exact_at(0, 1, &mut buf).unwrap();
        assert_eq!(&buf, b"ello");
        let e = files.read_exact_at(1, 0, &mut buf).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NotFound);
        assert!(e.to_string().contains("image.bag") && e.to_string().contains("left out"), "{e}");
        let reqs = [
            ReadReq { file: 0, offset: 0, len: 2, dest: 0 },
            ReadReq { file: 1, offset: 0, len: 2, dest: 2 },
        ];
        assert_eq!(files.read_many(&reqs, &mut buf).unwrap_err().kind(), ErrorKind::NotFound);
        files.read_many(&reqs[..1], &mut buf).unwrap();
        assert_eq!(&buf[..2], b"he");
        assert!(files.bytes(1).is_none() && files.shared_bytes(1).is_none());
    }
}
