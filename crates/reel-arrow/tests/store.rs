//! A Parquet or Arrow IPC file in a store, where each read is a request that may fail:
//! a failed read is the error, with its kind, not a damaged file (arrow-rs and parquet
//! carry such failures as text; a verify that took them for damage reported healthy files
//! as corrupt whenever a store did not answer), and reads that are needed together go out
//! together, not one round trip after another.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use common::Numbered;
use reel_arrow::{
    ArrowFileSource, ArrowOptions, FileKind, ReadOptions, WriteOptions, write_ipc, write_parquet,
};
use reel_core::paths::InputKind;
use reel_core::{
    Backend, Entry, Error, ErrorKind, LocalStore, ReadAt, ReadReq, RecordSource, RecordSourceExt,
    Result, Store, StoreRef,
};

/// What a store was asked (single range reads, and batched reads with their requests),
/// and whether it answers.
#[derive(Debug, Default)]
struct Asked {
    /// While set, every read fails, as an object store's do when it stops answering.
    failing: AtomicBool,
    ranges: AtomicUsize,
    batched_reads: AtomicUsize,
    batched_requests: AtomicUsize,
}

/// The local file system under another name, counting what it is asked, whose reads fail
/// while `asked.failing` is set.
#[derive(Debug, Default)]
struct Observed {
    asked: Arc<Asked>,
}

/// The error of a store that does not answer.
fn refused(path: &Path) -> Error {
    let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
    Error::io(refused, "the store did not answer").with_path(path)
}

/// The files an [`Observed`] store opened, counting their batched reads.
struct CountingFiles {
    inner: Box<dyn ReadAt>,
    asked: Arc<Asked>,
}

impl ReadAt for CountingFiles {
    fn backend_name(&self) -> &'static str {
        "counting"
    }
    fn file_count(&self) -> usize {
        self.inner.file_count()
    }
    fn file_len(&self, file: u32) -> u64 {
        self.inner.file_len(file)
    }
    fn file_path(&self, file: u32) -> &Path {
        self.inner.file_path(file)
    }
    fn read_exact_at(&self, file: u32, offset: u64, buf: &mut [u8]) -> Result<()> {
        self.asked.batched_reads.fetch_add(1, Ordering::Relaxed);
        self.asked.batched_requests.fetch_add(1, Ordering::Relaxed);
        self.inner.read_exact_at(file, offset, buf)
    }
    fn read_many(&self, reqs: &[ReadReq], dest: &mut [u8]) -> Result<()> {
        if self.asked.failing.load(Ordering::Relaxed) {
            return Err(refused(self.inner.file_path(0)));
        }
        self.asked.batched_reads.fetch_add(1, Ordering::Relaxed);
        self.asked.batched_requests.fetch_add(reqs.len(), Ordering::Relaxed);
        self.inner.read_many(reqs, dest)
    }
}

impl Store for Observed {
    fn name(&self) -> &'static str {
        "observed"
    }
    fn stat(&self, path: &Path) -> Result<InputKind> {
        LocalStore.stat(path)
    }
    fn list(&self, dir: &Path) -> Result<Vec<Entry>> {
        LocalStore.list(dir)
    }
    fn read_range(&self, path: &Path, offset: u64, len: u64) -> Result<Vec<u8>> {
        if self.asked.failing.load(Ordering::Relaxed) {
            return Err(refused(path));
        }
        self.asked.ranges.fetch_add(1, Ordering::Relaxed);
        LocalStore.read_range(path, offset, len)
    }
    fn read_whole(&self, path: &Path, limit: u64, what: &str) -> Result<Vec<u8>> {
        LocalStore.read_whole(path, limit, what)
    }
    fn read_sequential(&self, path: &Path) -> Result<(Box<dyn std::io::Read + Send>, u64)> {
        LocalStore.read_sequential(path)
    }
    fn open_files(&self, paths: &[PathBuf], backend: &Backend) -> Result<Box<dyn ReadAt>> {
        let inner = LocalStore.open_files(paths, backend)?;
        Ok(Box::new(CountingFiles { inner, asked: Arc::clone(&self.asked) }))
    }
}

/// 4,000 records of 1 KiB.
const KIBS: Numbered = Numbered { records: 4000, size: 1024 };

/// 3,000 records of 100 bytes.
const SMALL: Numbered = Numbered { records: 3000, size: 100 };

#[test]
fn a_store_that_stops_answering_is_an_io_error_not_a_damaged_parquet_file() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("t.parquet");
    let options = WriteOptions { row_group_bytes: 256 << 10, ..Default::default() };
    write_parquet(&KIBS, &path, &options).unwrap();
    let flaky = Arc::new(Observed::default());
    let store: StoreRef = flaky.clone();

    // While reading rows: the rows of a row group not read yet.
    let source =
        ArrowFileSource::open_in(&store, &path, FileKind::Parquet, &ReadOptions::default())
            .unwrap();
    assert_eq!(source.read(0).unwrap().bytes("data").unwrap()[0], 0);
    flaky.asked.failing.store(true, Ordering::Relaxed);
    let e = source.read(3999).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Io, "{e}");
    assert!(e.to_string().contains("the store did not answer"), "{e}");
    // Once the store answers again, so does the source: nothing was taken for damage.
    flaky.asked.failing.store(false, Ordering::Relaxed);
    assert_eq!(source.read(3999).unwrap().bytes("data").unwrap()[0], (3999 % 251) as u8);

    // While opening: the footer.
    flaky.asked.failing.store(true, Ordering::Relaxed);
    let e = ArrowFileSource::open_in(&store, &path, FileKind::Parquet, &ReadOptions::default())
        .err()
        .expect("opened without reading its footer");
    assert_eq!(e.kind(), ErrorKind::Io, "{e}");
    assert!(e.to_string().contains("the store did not answer"), "{e}");

    // Damage is still damage.
    flaky.asked.failing.store(false, Ordering::Relaxed);
    let mut bytes = std::fs::read(&path).unwrap();
    let footer = bytes.len() - 8;
    bytes[footer - 16..footer].fill(0xff);
    std::fs::write(&path, &bytes).unwrap();
    let e = ArrowFileSource::open_in(&store, &path, FileKind::Parquet, &ReadOptions::default())
        .err()
        .expect("a damaged footer opened");
    assert_eq!(e.kind(), ErrorKind::Corrupt, "{e}");
}

/// [`SMALL`] written to an Arrow IPC file in `dir` in batches of 10 rows (300 batches),
/// and the file opened from an [`Observed`] store.
fn small_batches_in_a_store(dir: &Path) -> (Arc<Observed>, ArrowFileSource) {
    let path = dir.join("t.arrow");
    let arrow = ArrowOptions { batch_rows: 10, ..Default::default() };
    write_ipc(&SMALL, &path, &WriteOptions { arrow, ..Default::default() }).unwrap();
    let observed = Arc::new(Observed::default());
    let store: StoreRef = observed.clone();
    let source =
        ArrowFileSource::open_in(&store, &path, FileKind::ArrowIpc, &ReadOptions::default())
            .unwrap();
    (observed, source)
}

#[test]
fn an_ipc_file_in_a_store_reads_its_batch_headers_in_one_batched_read() {
    let tmp = tempfile::tempdir().unwrap();
    let (counting, source) = small_batches_in_a_store(tmp.path());
    assert_eq!(source.len(), SMALL.records);
    let asked = &counting.asked;
    let (ranges, batched) =
        (asked.ranges.load(Ordering::Relaxed), asked.batched_reads.load(Ordering::Relaxed));
    // Before: one range request per batch's header (300 and more). Now: the file's head,
    // tail and footer, and one batched read of the 300 headers.
    assert!(ranges < 10, "{ranges} single range reads to open 300 batches");
    assert_eq!(batched, 1, "the headers took {batched} batched reads");
    assert_eq!(asked.batched_requests.load(Ordering::Relaxed), 300);

    // The rows are those written, at both ends and in between.
    for i in [0, 9, 10, 1234, SMALL.records - 1] {
        let record = source.read(i).unwrap();
        assert_eq!(record.bytes("data").unwrap(), &SMALL.data(i)[..], "record {i}");
    }
}

#[test]
fn a_batched_read_fetches_the_record_batches_it_touches_together() {
    let tmp = tempfile::tempdir().unwrap();
    let (counting, source) = small_batches_in_a_store(tmp.path());
    let asked = &counting.asked;
    let (ranges, batched) =
        (asked.ranges.load(Ordering::Relaxed), asked.batched_reads.load(Ordering::Relaxed));

    // 64 records in 50 different batches, out of order, one asked twice, and two from
    // one batch.
    let mut indices: Vec<u64> = (0..50).map(|k| (k * 97 + 13) % 300 * 10 + k % 10).collect();
    indices.extend([2999, 0, 1, 1234, 1235, 2999]);
    indices.extend((0..8).map(|k| 1500 + k * 10));
    let batch = source.read_batch(&indices).unwrap();
    assert_eq!(batch.len(), indices.len());
    for (k, &i) in indices.iter().enumerate() {
        assert_eq!(batch.get(k).unwrap().bytes("data").unwrap()[0], (i % 251) as u8, "{i}");
    }
    let distinct = {
        let mut b: Vec<u64> = indices.iter().map(|i| i / 10).collect();
        b.sort_unstable();
        b.dedup();
        b.len()
    };
    // One request per batch touched before; now one batched read of all of them.
    assert_eq!(asked.ranges.load(Ordering::Relaxed), ranges, "single range reads");
    assert_eq!(asked.batched_reads.load(Ordering::Relaxed), batched + 1);
    assert_eq!(asked.batched_requests.load(Ordering::Relaxed), 300 + distinct);

    // A record at a time, each batch is read as it is needed.
    assert_eq!(source.read(777).unwrap().bytes("data").unwrap()[0], (777 % 251) as u8);
    assert_eq!(asked.ranges.load(Ordering::Relaxed), ranges + 1);

    // A store that stops answering fails the batched read with its own error, naming a
    // record of the read; once it answers again, so does the source.
    asked.failing.store(true, Ordering::Relaxed);
    let e = source.read_batch(&indices).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Io, "{e}");
    assert!(e.to_string().contains("the store did not answer"), "{e}");
    assert!(e.record().is_some_and(|r| indices.contains(&r)), "{e}");
    asked.failing.store(false, Ordering::Relaxed);
    let again = source.read_batch(&indices).unwrap();
    assert_eq!(again.get(3).unwrap().bytes("data").unwrap(), &SMALL.data(indices[3])[..]);
}

#[test]
fn an_ipc_stream_of_small_batches_in_a_store_opens_in_a_few_requests() {
    use arrow_array::{BinaryArray, RecordBatch};
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("t.arrows");
    // An IPC stream (no footer: its messages are walked at open) of 300 batches of 10
    // rows of 100 bytes, as Hugging Face `datasets` writes its files of 1,000-row batches.
    let schema = Arc::new(arrow_schema::Schema::new(vec![arrow_schema::Field::new(
        "data",
        arrow_schema::DataType::Binary,
        false,
    )]));
    let mut writer =
        arrow_ipc::writer::StreamWriter::try_new(std::fs::File::create(&path).unwrap(), &schema)
            .unwrap();
    for b in 0..300u64 {
        let rows: Vec<Vec<u8>> = (b * 10..b * 10 + 10).map(|i| SMALL.data(i)).collect();
        let column = BinaryArray::from_iter_values(rows.iter());
        writer
            .write(&RecordBatch::try_new(schema.clone(), vec![Arc::new(column)]).unwrap())
            .unwrap();
    }
    writer.finish().unwrap();

    let observed = Arc::new(Observed::default());
    let store: StoreRef = observed.clone();
    let source =
        ArrowFileSource::open_in(&store, &path, FileKind::ArrowIpc, &ReadOptions::default())
            .unwrap();
    assert_eq!(source.len(), 3000);
    // One request a message when each read took 4 KiB (the 1.3 KiB messages of 300
    // batches: about 100 requests); now the reads grow while the bodies skipped are small.
    let ranges = observed.asked.ranges.load(Ordering::Relaxed);
    assert!(ranges <= 12, "{ranges} range requests to open a stream of 300 batches");
    for i in [0, 9, 10, 1234, 2999] {
        assert_eq!(source.read(i).unwrap().bytes("data").unwrap(), &SMALL.data(i)[..], "{i}");
    }
}
