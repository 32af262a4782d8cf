//! The streaming read API: order, errors, read-ahead bounds, cancellation, panics.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "support/fixed.rs"]
mod fixed;

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use reel_core::stream::{PassRecords, WholePass};
use reel_core::testing::HintLog;
use reel_core::{
    BatchPlan, BatchStream, ErrorKind, Limits, Record, RecordBatch, RecordSource, Result,
    SourceInfo, StreamOptions,
};

fn all_options() -> Vec<StreamOptions> {
    vec![
        StreamOptions::inline(),
        StreamOptions::default(),
        StreamOptions::default().threads(3).read_ahead(5),
        StreamOptions::default().threads(2).read_ahead(1),
        StreamOptions::default().read_ahead(8).max_ahead_bytes(1),
    ]
}

#[test]
fn batches_come_in_plan_order_with_the_right_records() {
    let data = fixed::bytes(500);
    let source: Arc<dyn RecordSource> = fixed::source(data.clone());
    let order: Vec<u64> = (0..500).map(|i| (i * 7919) % 500).collect();
    for options in all_options() {
        let stream =
            BatchStream::new(source.clone(), BatchPlan::chunks(order.clone(), 32), &options)
                .unwrap();
        let mut next = 0usize;
        for (n, batch) in stream.enumerate() {
            let batch = batch.unwrap();
            assert_eq!(batch.seq(), n as u64);
            for record in batch.iter() {
                let i = order[next];
                assert_eq!(record.index(), i, "{options:?}");
                let at = i as usize * fixed::RECORD;
                assert_eq!(record.bytes("data").unwrap(), &data[at..at + fixed::RECORD]);
                next += 1;
            }
        }
        assert_eq!(next, order.len(), "{options:?}");
    }
}

#[test]
fn plans_from_ranges_iterators_and_functions() {
    let source: Arc<dyn RecordSource> = fixed::source(fixed::bytes(10));
    let read = |plan: BatchPlan| -> Vec<Vec<u64>> {
        BatchStream::new(source.clone(), plan, &StreamOptions::default())
            .unwrap()
            .map(|b| b.unwrap().iter().map(|r| r.index()).collect())
            .collect()
    };
    assert_eq!(read(BatchPlan::sequential(3..10, 3)), [vec![3, 4, 5], vec![6, 7, 8], vec![9]]);
    assert_eq!(read(BatchPlan::sequential(0..0, 3)), Vec::<Vec<u64>>::new());
    assert_eq!(read(BatchPlan::chunks(vec![9, 1, 9], 0)), [vec![9], vec![1], vec![9]]);
    assert_eq!(read(BatchPlan::from_batches([vec![], vec![2, 2]])), [vec![], vec![2, 2]]);
    let mut left = 2;
    let plan = BatchPlan::from_fn(move |out| {
        left -= 1;
        out.push(left);
        left > 0
    });
    assert_eq!(read(plan), [vec![1]]);
}

#[test]
fn an_error_stays_with_its_batch_and_the_stream_goes_on() {
    let mut data = fixed::bytes(100);
    data[42 * fixed::RECORD] = 0xFF; // record 42 fails its check
    let source: Arc<dyn RecordSource> = fixed::source(data);
    for options in all_options() {
        let plan = BatchPlan::from_batches([vec![0, 1], vec![41, 42, 43], vec![99, 100], vec![5]]);
        let items: Vec<_> = BatchStream::new(source.clone(), plan, &options).unwrap().collect();
        assert_eq!(items.len(), 4, "{options:?}");
        assert_eq!(items[0].as_ref().unwrap().len(), 2);
        let e = items[1].as_ref().unwrap_err();
        assert_eq!(
            (e.kind(), e.record(), e.format()),
            (ErrorKind::Checksum, Some(42), Some("fixed"))
        );
        let e = items[2].as_ref().unwrap_err();
        assert_eq!(e.kind(), ErrorKind::OutOfRange);
        assert_eq!(items[3].as_ref().unwrap().get(0).unwrap().index(), 5);
    }
}

#[test]
fn a_whole_pass_reads_batches_over_the_budget_again_in_pieces_that_fit() {
    let mut data = fixed::bytes(100);
    data[77 * fixed::RECORD] = 0xFF; // record 77 fails its check
    let mut limits = Limits::default();
    limits.max_batch_bytes = 5 * fixed::RECORD as u64;
    let source: Arc<dyn RecordSource> = fixed::source_with(data, limits);
    let list: Vec<u64> = (0..60).rev().collect();
    for options in all_options() {
        // Batches of 12 are over the 5-record budget: each is read in pieces of at most 5,
        // in order, with the batch's number.
        let pass =
            WholePass::new(source.clone(), PassRecords::List(list.clone().into()), 12, &options)
                .unwrap();
        assert_eq!(pass.len(), 60);
        let mut got = Vec::new();
        for piece in pass {
            let piece = piece.unwrap();
            assert!((1..=5).contains(&piece.len()), "{options:?}: {} records", piece.len());
            assert_eq!(piece.seq(), got.len() as u64 / 12, "{options:?}");
            got.extend(piece.iter().map(|r| r.index()));
        }
        assert_eq!(got, list, "{options:?}");

        // Batches within the budget come straight from the stream; a damaged record is the
        // error of its piece, and the pass goes on with the next batch.
        let pass =
            WholePass::new(source.clone(), PassRecords::Range(70..100), 5, &options).unwrap();
        let items: Vec<_> = pass.collect();
        assert_eq!(items.len(), 6, "{options:?}");
        let e = items[1].as_ref().unwrap_err();
        assert_eq!((e.kind(), e.record()), (ErrorKind::Checksum, Some(77)));
        let good: Vec<u64> = items
            .iter()
            .flatten()
            .flat_map(|b| b.iter().map(|r| r.index()).collect::<Vec<_>>())
            .collect();
        assert_eq!(good, (70..75).chain(80..100).collect::<Vec<_>>());
    }
}

/// A source that counts the batches being read at once and the most there were, and can be
/// told to be slow, to fail or to panic.
struct Probe {
    info: SourceInfo,
    reading: AtomicUsize,
    most: AtomicUsize,
    reads: AtomicU64,
    delay: Duration,
    panic_on: Option<u64>,
    bytes_per_record: usize,
}

impl Probe {
    fn new(delay: Duration) -> Self {
        Probe {
            info: SourceInfo::new("probe"),
            reading: AtomicUsize::new(0),
            most: AtomicUsize::new(0),
            reads: AtomicU64::new(0),
            delay,
            panic_on: None,
            bytes_per_record: 8,
        }
    }
}

impl RecordSource for Probe {
    fn info(&self) -> &SourceInfo {
        &self.info
    }
    fn len(&self) -> u64 {
        u64::MAX
    }
    fn read_into(&self, index: u64, out: &mut Record) -> Result<()> {
        out.clear();
        out.set_index(index);
        Ok(())
    }
    fn read_batch_into(&self, indices: &[u64], out: &mut RecordBatch) -> Result<()> {
        out.clear();
        let now = self.reading.fetch_add(1, Ordering::SeqCst) + 1;
        self.most.fetch_max(now, Ordering::SeqCst);
        self.reads.fetch_add(1, Ordering::SeqCst);
        std::thread::sleep(self.delay);
        self.reading.fetch_sub(1, Ordering::SeqCst);
        if self.panic_on.is_some_and(|p| indices.contains(&p)) {
            panic!("probe told to panic");
        }
        let payload = vec![0u8; self.bytes_per_record];
        for &i in indices {
            out.push_with(i, |o| {
                let span = o.append(&payload);
                o.push("data".into(), reel_core::Value::Bytes(span));
                Ok(())
            })?;
        }
        Ok(())
    }
}

/// Waits (up to a minute, on a busy machine) until `done` holds.
fn wait_for(done: impl Fn() -> bool) {
    let start = std::time::Instant::now();
    while !done() {
        assert!(start.elapsed() < Duration::from_secs(60), "the helpers never read ahead");
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn read_ahead_is_bounded_in_batches() {
    // Each read takes long enough (100 ms) that the reads ahead overlap even when a loaded
    // machine starts the helper threads milliseconds apart.
    let probe = Arc::new(Probe::new(Duration::from_millis(100)));
    let options = StreamOptions::default().threads(4).read_ahead(3);
    let mut stream =
        BatchStream::new(probe.clone(), BatchPlan::sequential(0..1000, 4), &options).unwrap();
    let first = stream.next().unwrap().unwrap();
    // The consumer holds batch 0 and does not ask for more: the helpers read 3 ahead, no more.
    wait_for(|| probe.reads.load(Ordering::SeqCst) >= 4);
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(probe.reads.load(Ordering::SeqCst), 4, "batch 0 plus 3 ahead");
    assert!(probe.most.load(Ordering::SeqCst) <= 3);
    assert!(probe.most.load(Ordering::SeqCst) >= 2, "reads ahead were not concurrent");
    drop(first);
    let rest = stream.by_ref().take(10).count();
    assert_eq!(rest, 10);
}

#[test]
fn read_ahead_is_bounded_in_bytes() {
    let mut probe = Probe::new(Duration::ZERO);
    probe.bytes_per_record = 1 << 20;
    let probe = Arc::new(probe);
    let options = StreamOptions::default().threads(2).read_ahead(50).max_ahead_bytes(3 << 20);
    let mut stream =
        BatchStream::new(probe.clone(), BatchPlan::sequential(0..1000, 1), &options).unwrap();
    let _first = stream.next().unwrap().unwrap();
    wait_for(|| probe.reads.load(Ordering::SeqCst) >= 4);
    std::thread::sleep(Duration::from_millis(50));
    // Batches of 1 MiB, 3 MiB allowed waiting: at most 3 waiting plus one per helper that
    // started while fewer were waiting.
    let reads = probe.reads.load(Ordering::SeqCst);
    assert!((4..=6).contains(&reads), "{reads} batches read with 1 consumed");
}

#[test]
fn dropping_the_stream_waits_for_reads_in_flight() {
    let probe = Arc::new(Probe::new(Duration::from_millis(50)));
    let options = StreamOptions::default().threads(3).read_ahead(3);
    let mut stream =
        BatchStream::new(probe.clone(), BatchPlan::sequential(0..1000, 2), &options).unwrap();
    let held = stream.next().unwrap().unwrap();
    std::thread::sleep(Duration::from_millis(10));
    drop(stream);
    assert_eq!(probe.reading.load(Ordering::SeqCst), 0, "a read was still going on after drop");
    assert_eq!(Arc::strong_count(&probe), 1, "a helper still holds the source");
    assert_eq!(held.len(), 2, "a batch held by the consumer outlives the stream");
    let reads = probe.reads.load(Ordering::SeqCst);
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(probe.reads.load(Ordering::SeqCst), reads, "reads after drop");
}

/// Files in memory read one request at a time, slowly, counting the reads: a batch of
/// them takes long enough to be dropped halfway.
struct SlowFiles {
    inner: reel_core::MemFiles,
    delay: Duration,
    reads: Arc<AtomicU64>,
}

impl reel_core::ReadAt for SlowFiles {
    fn backend_name(&self) -> &'static str {
        "slow"
    }
    fn file_count(&self) -> usize {
        self.inner.file_count()
    }
    fn file_len(&self, file: u32) -> u64 {
        self.inner.file_len(file)
    }
    fn file_path(&self, file: u32) -> &std::path::Path {
        self.inner.file_path(file)
    }
    fn read_exact_at(&self, file: u32, offset: u64, buf: &mut [u8]) -> Result<()> {
        std::thread::sleep(self.delay);
        self.reads.fetch_add(1, Ordering::SeqCst);
        self.inner.read_exact_at(file, offset, buf)
    }
}

#[test]
fn dropping_the_stream_cancels_the_batches_being_read() {
    // One batch of 2,000 records that lie apart (no two merge into one read), at 1 ms a
    // read: two seconds of reading. The stream is dropped after the first few reads.
    let reads = Arc::new(AtomicU64::new(0));
    let files = SlowFiles {
        inner: reel_core::MemFiles::single("slow.bin", fixed::bytes(4000)),
        delay: Duration::from_millis(1),
        reads: reads.clone(),
    };
    let source = fixed::source_over(files, 4000);
    let batch: Vec<u64> = (0..2000).map(|i| 2 * i).collect();
    let plan = BatchPlan::from_batches(vec![batch]);
    let stream = BatchStream::new(source, plan, &StreamOptions::default().threads(1)).unwrap();
    wait_for(|| reads.load(Ordering::SeqCst) >= 5);
    drop(stream);
    let after_drop = reads.load(Ordering::SeqCst);
    // Without cancelling, the drop waits for the whole batch: 2,000 reads.
    assert!(after_drop < 1000, "{after_drop} reads before the drop returned");
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(reads.load(Ordering::SeqCst), after_drop, "reads after the drop");
}

#[test]
fn a_panicking_source_fails_its_batch_only() {
    let mut probe = Probe::new(Duration::ZERO);
    probe.panic_on = Some(5);
    let source: Arc<dyn RecordSource> = Arc::new(probe);
    for options in all_options() {
        let items: Vec<_> =
            BatchStream::new(source.clone(), BatchPlan::sequential(0..10, 2), &options)
                .unwrap()
                .collect();
        assert_eq!(items.len(), 5);
        for (n, item) in items.iter().enumerate() {
            match item {
                Err(e) => {
                    assert_eq!(n, 2, "{options:?}");
                    assert!(e.to_string().contains("probe told to panic"), "{e}");
                }
                Ok(b) => assert_eq!(b.len(), 2),
            }
        }
        assert!(items[2].is_err());
    }
}

/// Batches [1], [2], then a panic.
fn plan_that_breaks(calls: Arc<Mutex<u64>>) -> BatchPlan {
    BatchPlan::from_fn(move |out| {
        let mut n = calls.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        *n += 1;
        if *n == 3 {
            panic!("plan broke");
        }
        out.push(*n);
        true
    })
}

#[test]
fn a_panicking_plan_is_reported_not_waited_for() {
    let source: Arc<dyn RecordSource> = Arc::new(Probe::new(Duration::ZERO));
    let calls = Arc::new(Mutex::new(0));
    // Whichever thread runs the plan when it panics, the batch fails and the stream ends.
    for options in all_options() {
        *calls.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = 0;
        let stream = BatchStream::new(source.clone(), plan_that_breaks(calls.clone()), &options);
        let items: Vec<_> = stream.unwrap().collect();
        assert_eq!(items.len(), 3, "{options:?}");
        assert!(items[0].is_ok() && items[1].is_ok());
        let e = items[2].as_ref().unwrap_err();
        assert!(e.to_string().contains("plan broke"), "{e}");
    }
}

#[test]
fn one_helper_tells_the_source_the_batch_after_the_one_it_reads() {
    let files = Arc::new(HintLog::new(reel_core::MemFiles::single("fixed.bin", fixed::bytes(100))));
    let source = fixed::source_over(files.clone(), 100);
    let order: Vec<u64> = (0..100).rev().collect();
    let batches: Vec<Vec<u64>> = order.chunks(16).map(<[u64]>::to_vec).collect();
    let hints = |options: &StreamOptions| {
        files.take_hints();
        let dyn_source: Arc<dyn RecordSource> = source.clone();
        let stream =
            BatchStream::new(dyn_source, BatchPlan::chunks(order.clone(), 16), options).unwrap();
        let read: Vec<Vec<u64>> =
            stream.map(|b| b.unwrap().iter().map(|r| r.index()).collect()).collect();
        assert_eq!(read, batches, "{options:?}");
        // Each request is one record of `fixed`, named here by its record number.
        let record = |r: &reel_core::ReadRange| r.offset / fixed::RECORD as u64;
        files
            .take_hints()
            .iter()
            .map(|hint| hint.iter().map(record).collect())
            .collect::<Vec<Vec<u64>>>()
    };
    // One helper reads every batch in turn: before each it names the next, the last
    // excepted, whichever thread (helper or consumer) reads a batch (the two may name
    // theirs in either order).
    let mut hinted = hints(&StreamOptions::default());
    hinted.sort();
    let mut want = batches[1..].to_vec();
    want.sort();
    assert_eq!(hinted, want);
    // Several helpers read batches out of turn (a hint would go to the wrong thread's
    // ring), and an inline stream has no next batch in flight to overlap: no hints.
    assert!(hints(&StreamOptions::default().threads(2)).is_empty());
    assert!(hints(&StreamOptions::inline()).is_empty());
    assert!(hints(&StreamOptions::default().hint_next(false)).is_empty());
}

#[test]
fn a_plan_that_panics_fails_the_batch_it_was_making_when_looked_ahead() {
    // The one-helper stream asks the plan for a batch early (to hint it): the panic of the
    // third call still fails the third batch, not the second.
    let source: Arc<dyn RecordSource> = Arc::new(Probe::new(Duration::ZERO));
    let calls = Arc::new(Mutex::new(0));
    let stream =
        BatchStream::new(source, plan_that_breaks(calls.clone()), &StreamOptions::default());
    let items: Vec<_> = stream.unwrap().collect();
    assert_eq!(items.len(), 3);
    assert_eq!(items[1].as_ref().unwrap().iter().next().unwrap().index(), 2);
    assert!(items[2].as_ref().unwrap_err().to_string().contains("plan broke"));
    // (The plan panicked holding its lock.)
    let calls = *calls.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    assert_eq!(calls, 3, "the plan is not asked again after it broke");
}
