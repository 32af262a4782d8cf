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

    // 106 records in 50 different batches of 10, out of order, repeats among them.
    let mut indices: Vec<u64> = (0..50)
        .flat_map(|k| {
            let b = (k * 97 + 13) % 300 * 10;
            [b + k % 10, b + (k + 5) % 10]
        })
        .collect();
    indices.extend([2999, 2998, 0, 1, 1234, 1235, 2999]);
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

/// An IPC file of 300 batches of 100 rows with bytes, text, integers, floats (nulls in
/// some) and a list column, and its rows' indices to read.
fn mixed_batches(path: &Path) {
    use arrow_array::{
        ArrayRef, BinaryArray, Float64Array, Int64Array, LargeStringArray, ListArray, RecordBatch,
        StringArray, types::Int32Type,
    };
    use arrow_schema::{DataType, Field, Schema};
    let schema = Arc::new(Schema::new(vec![
        Field::new("image", DataType::Binary, true),
        Field::new("tags", DataType::new_list(DataType::Int32, true), true),
        Field::new("caption", DataType::Utf8, false),
        Field::new("label", DataType::Int64, true),
        Field::new("score", DataType::Float64, false),
        Field::new("note", DataType::LargeUtf8, true),
    ]));
    let file = std::fs::File::create(path).unwrap();
    let mut writer = arrow_ipc::writer::FileWriter::try_new(file, &schema).unwrap();
    for b in 0..300i64 {
        let rows = b * 100..b * 100 + 100;
        let columns: Vec<ArrayRef> = vec![
            Arc::new(BinaryArray::from_iter(
                rows.clone()
                    .map(|i| (i % 7 != 0).then(|| vec![(i % 251) as u8; (i % 50) as usize])),
            )),
            Arc::new(ListArray::from_iter_primitive::<Int32Type, _, _>(
                rows.clone().map(|i| Some(vec![Some(i as i32), None])),
            )),
            Arc::new(StringArray::from_iter_values(rows.clone().map(|i| format!("row {i}")))),
            Arc::new(Int64Array::from_iter(rows.clone().map(|i| (i % 3 != 0).then_some(-i)))),
            Arc::new(Float64Array::from_iter_values(rows.clone().map(|i| i as f64 / 4.0))),
            Arc::new(LargeStringArray::from_iter(
                rows.map(|i| (i % 5 == 0).then(|| format!("é{i}"))),
            )),
        ];
        writer.write(&RecordBatch::try_new(schema.clone(), columns).unwrap()).unwrap();
    }
    writer.finish().unwrap();
}

/// 256 rows spread over the file (at most a few per batch of 100), out of order, with
/// repeats.
fn spread_rows() -> Vec<u64> {
    let mut rows: Vec<u64> = (0..250u64).map(|k| (k * 7919 + 11) % 30_000).collect();
    rows.extend([0, 99, 100, 29_999, 0, 12_345]);
    rows
}

#[test]
fn a_few_rows_of_each_batch_are_read_without_their_batches() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("mixed.arrow");
    mixed_batches(&path);
    let local = ArrowFileSource::open(&path, &ReadOptions::default()).unwrap();
    let observed = Arc::new(Observed::default());
    let store: StoreRef = observed.clone();
    let flat = ReadOptions { skip_columns: vec!["tags".into()], ..Default::default() };
    // These batches are small (a few KiB): rows are read alone only when told that rows
    // this close are worth it, as rows megabytes apart in large batches are by default.
    let rows_alone = ReadOptions { row_read_spacing: 0, ..flat.clone() };
    let remote = ArrowFileSource::open_in(&store, &path, FileKind::ArrowIpc, &rows_alone).unwrap();
    let local_flat = ArrowFileSource::open(&path, &flat).unwrap();
    let asked = &observed.asked;
    let (batched, requests, ranges) = (
        asked.batched_reads.load(Ordering::Relaxed),
        asked.batched_requests.load(Ordering::Relaxed),
        asked.ranges.load(Ordering::Relaxed),
    );

    let rows = spread_rows();
    let got = remote.read_batch(&rows).unwrap();
    let want = local_flat.read_batch(&rows).unwrap();
    assert_eq!(got.len(), rows.len());
    for (k, &i) in rows.iter().enumerate() {
        assert_eq!(got.get(k).unwrap(), want.get(k).unwrap(), "row {i}");
        assert_eq!(got.get(k).unwrap().index(), i);
    }
    // Rows without a value of their own are absent fields, as read locally.
    let row7 = got.get(rows.iter().position(|&i| i == 0).unwrap()).unwrap();
    assert!(row7.get("image").is_none() && row7.get("label").is_none());
    assert_eq!(row7.get("note").unwrap().as_str(), Some("é0"));
    // Three batched reads (headers, offsets and fixed values, the values), not the
    // batches: a few kilobytes per batch touched instead of its 100 rows.
    assert_eq!(asked.batched_reads.load(Ordering::Relaxed), batched + 3);
    assert!(asked.batched_requests.load(Ordering::Relaxed) > requests + rows.len());
    assert_eq!(asked.ranges.load(Ordering::Relaxed), ranges, "single range reads");

    // With the list column selected, rows cannot be read alone: the batches are fetched
    // whole, in one batched read, and read the same as locally.
    let all = ReadOptions { row_read_spacing: 0, ..Default::default() };
    let all = ArrowFileSource::open_in(&store, &path, FileKind::ArrowIpc, &all).unwrap();
    let before = asked.batched_reads.load(Ordering::Relaxed);
    let got = all.read_batch(&rows).unwrap();
    let want = local.read_batch(&rows).unwrap();
    for k in 0..rows.len() {
        assert_eq!(got.get(k).unwrap(), want.get(k).unwrap());
    }
    assert_eq!(asked.batched_reads.load(Ordering::Relaxed), before + 1);

    // By default rows a few hundred bytes apart are not read alone: whole batches, once.
    let default = ArrowFileSource::open_in(&store, &path, FileKind::ArrowIpc, &flat).unwrap();
    let before = asked.batched_reads.load(Ordering::Relaxed);
    let got = default.read_batch(&rows).unwrap();
    let want = local_flat.read_batch(&rows).unwrap();
    for k in 0..rows.len() {
        assert_eq!(got.get(k).unwrap(), want.get(k).unwrap());
    }
    assert_eq!(asked.batched_reads.load(Ordering::Relaxed), before + 1);
}

/// Damaged bytes anywhere in a file whose rows are read alone: each read either succeeds
/// or fails with an error, never a panic; where it succeeds with the whole-batch read
/// succeeding too, both agree on what the damaged file holds.
#[test]
fn damaged_batches_read_a_row_at_a_time_fail_cleanly() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("mixed.arrow");
    mixed_batches(&path);
    let intact = std::fs::read(&path).unwrap();
    let observed = Arc::new(Observed::default());
    let store: StoreRef = observed.clone();
    let flat = ReadOptions { skip_columns: vec!["tags".into()], ..Default::default() };
    let rows_alone = ReadOptions { row_read_spacing: 0, ..flat.clone() };
    let rows = spread_rows();
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut failed = 0;
    for _ in 0..60 {
        let mut bytes = intact.clone();
        for _ in 0..4 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let at = 8 + (seed as usize) % (bytes.len() - 16);
            bytes[at] ^= (seed >> 40) as u8 | 1;
        }
        std::fs::write(&path, &bytes).unwrap();
        let Ok(remote) = ArrowFileSource::open_in(&store, &path, FileKind::ArrowIpc, &rows_alone)
        else {
            failed += 1;
            continue;
        };
        match remote.read_batch(&rows) {
            Ok(got) => {
                if let Ok(want) =
                    ArrowFileSource::open(&path, &flat).and_then(|s| s.read_batch(&rows))
                {
                    for k in 0..rows.len() {
                        assert_eq!(got.get(k).unwrap(), want.get(k).unwrap());
                    }
                }
            }
            Err(e) => {
                failed += 1;
                assert_ne!(e.kind(), ErrorKind::Io, "{e}");
            }
        }
    }
    assert!(failed > 0, "no damage was noticed in 60 damaged files");
}
