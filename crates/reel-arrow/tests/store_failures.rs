//! A Parquet file whose store fails a read: the failure is the error, with its kind, not
//! a damaged file. (arrow-rs and parquet carry such failures as text; a verify that took
//! them for damage reported healthy files as corrupt whenever a store did not answer.)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use reel_arrow::{ArrowFileSource, FileKind, ReadOptions, WriteOptions, write_parquet};
use reel_core::paths::InputKind;
use reel_core::{
    Backend, Entry, Error, ErrorKind, LocalStore, ReadAt, Record, RecordBatch as ReelBatch,
    RecordSource, RecordSourceExt, Result, SourceInfo, Store, StoreRef,
};

/// The local file system under another name, whose range reads fail while `failing` is
/// set, as an object store's do when it stops answering.
#[derive(Debug, Default)]
struct Flaky {
    failing: AtomicBool,
}

impl Store for Flaky {
    fn name(&self) -> &'static str {
        "flaky"
    }
    fn stat(&self, path: &Path) -> Result<InputKind> {
        LocalStore.stat(path)
    }
    fn list(&self, dir: &Path) -> Result<Vec<Entry>> {
        LocalStore.list(dir)
    }
    fn read_range(&self, path: &Path, offset: u64, len: u64) -> Result<Vec<u8>> {
        if self.failing.load(Ordering::Relaxed) {
            let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
            return Err(Error::io(refused, "the store did not answer").with_path(path));
        }
        LocalStore.read_range(path, offset, len)
    }
    fn read_whole(&self, path: &Path, limit: u64, what: &str) -> Result<Vec<u8>> {
        LocalStore.read_whole(path, limit, what)
    }
    fn read_sequential(&self, path: &Path) -> Result<(Box<dyn std::io::Read + Send>, u64)> {
        LocalStore.read_sequential(path)
    }
    fn open_files(&self, paths: &[PathBuf], backend: &Backend) -> Result<Box<dyn ReadAt>> {
        LocalStore.open_files(paths, backend)
    }
}

/// 4,000 records of 1 KiB in row groups of about 256 KiB.
struct Numbered;

impl RecordSource for Numbered {
    fn info(&self) -> &SourceInfo {
        static INFO: std::sync::OnceLock<SourceInfo> = std::sync::OnceLock::new();
        INFO.get_or_init(|| SourceInfo::new("generated"))
    }
    fn len(&self) -> u64 {
        4000
    }
    fn read_into(&self, index: u64, out: &mut Record) -> Result<()> {
        out.clear();
        out.push_bytes("data", &[(index % 251) as u8; 1024]);
        out.set_index(index);
        Ok(())
    }
    fn read_batch_into(&self, indices: &[u64], out: &mut ReelBatch) -> Result<()> {
        out.clear();
        let mut r = Record::new();
        for &i in indices {
            self.read_into(i, &mut r)?;
            out.push_copy(r.view());
        }
        Ok(())
    }
}

#[test]
fn a_store_that_stops_answering_is_an_io_error_not_a_damaged_parquet_file() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("t.parquet");
    let options = WriteOptions { row_group_bytes: 256 << 10, ..Default::default() };
    write_parquet(&Numbered, &path, &options).unwrap();
    let flaky = Arc::new(Flaky::default());
    let store: StoreRef = flaky.clone();

    // While reading rows: the rows of a row group not read yet.
    let source =
        ArrowFileSource::open_in(&store, &path, FileKind::Parquet, &ReadOptions::default())
            .unwrap();
    assert_eq!(source.read(0).unwrap().bytes("data").unwrap()[0], 0);
    flaky.failing.store(true, Ordering::Relaxed);
    let e = source.read(3999).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Io, "{e}");
    assert!(e.to_string().contains("the store did not answer"), "{e}");
    // Once the store answers again, so does the source: nothing was taken for damage.
    flaky.failing.store(false, Ordering::Relaxed);
    assert_eq!(source.read(3999).unwrap().bytes("data").unwrap()[0], (3999 % 251) as u8);

    // While opening: the footer.
    flaky.failing.store(true, Ordering::Relaxed);
    let e = ArrowFileSource::open_in(&store, &path, FileKind::Parquet, &ReadOptions::default())
        .err()
        .expect("opened without reading its footer");
    assert_eq!(e.kind(), ErrorKind::Io, "{e}");
    assert!(e.to_string().contains("the store did not answer"), "{e}");

    // Damage is still damage.
    flaky.failing.store(false, Ordering::Relaxed);
    let mut bytes = std::fs::read(&path).unwrap();
    let footer = bytes.len() - 8;
    bytes[footer - 16..footer].fill(0xff);
    std::fs::write(&path, &bytes).unwrap();
    let e = ArrowFileSource::open_in(&store, &path, FileKind::Parquet, &ReadOptions::default())
        .err()
        .expect("a damaged footer opened");
    assert_eq!(e.kind(), ErrorKind::Corrupt, "{e}");
}
