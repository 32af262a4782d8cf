//! The conformance kit: behaviour every source must show on every backend.

use std::sync::Arc;

use crate::stream::{BatchPlan, BatchStream, StreamOptions};
use crate::{Backend, ErrorKind, Record, RecordBatch, RecordSource, RecordSourceExt, Result};

/// What reading one record gave: the record, or the kind of error.
pub type Outcome = std::result::Result<Record, ErrorKind>;

/// Reads every record one by one.
pub fn outcomes(source: &dyn RecordSource) -> Vec<Outcome> {
    (0..source.len()).map(|i| source.read(i).map_err(|e| e.kind())).collect()
}

/// A deterministic shuffle of `0..n` (no RNG dependency; the order only has to be mixed).
pub fn shuffled(n: u64, seed: u64) -> Vec<u64> {
    let mut v: Vec<u64> = (0..n).collect();
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    for i in (1..v.len()).rev() {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        v.swap(i, (state % (i as u64 + 1)) as usize);
    }
    v
}

fn check_batch(
    source: &dyn RecordSource,
    expected: &[Outcome],
    indices: &[u64],
    batch: &mut RecordBatch,
    what: &str,
) {
    let result = source.read_batch_into(indices, batch);
    compare_batch(result, batch, expected, indices, what);
}

/// Checks a batch read's result against the one-by-one outcomes of its records.
fn compare_batch(
    result: Result<()>,
    batch: &RecordBatch,
    expected: &[Outcome],
    indices: &[u64],
    what: &str,
) {
    let first_error =
        indices.iter().find_map(|&i| expected[i as usize].as_ref().err().map(|k| (i, *k)));
    match (result, first_error) {
        (Ok(()), None) => {
            assert_eq!(batch.len(), indices.len(), "{what}: batch length");
            for (k, &i) in indices.iter().enumerate() {
                let got = batch.get(k).unwrap();
                let want = expected[i as usize].as_ref().unwrap();
                assert_eq!(got.index(), i, "{what}: record {k} of the batch has the wrong index");
                assert!(
                    got == want.view(),
                    "{what}: record {i} read in a batch differs from reading it alone"
                );
            }
        }
        (Err(e), Some(_)) => {
            assert!(batch.is_empty(), "{what}: a failed batch must be left empty");
            let failing: Vec<_> = indices
                .iter()
                .filter_map(|&i| expected[i as usize].as_ref().err().map(|k| (i, *k)))
                .collect();
            assert!(
                failing.iter().any(|&(i, k)| k == e.kind() && e.record().is_none_or(|r| r == i)),
                "{what}: batch failed with {e} ({:?}), but reading alone the failing records were {failing:?}",
                e.kind()
            );
        }
        (Ok(()), Some((i, k))) => {
            panic!("{what}: batch succeeded although record {i} fails alone ({k:?})")
        }
        (Err(e), None) => panic!("{what}: batch failed ({e}) although every record reads alone"),
    }
}

/// Runs every check on one source and returns the one-by-one outcomes.
///
/// Checks: reading twice gives the same result; batches of several sizes, reversed and
/// with duplicates equal the one-by-one reads (or fail with the same kind of error); a
/// reused batch is fully replaced; an index past the end is `OutOfRange`; an empty batch
/// is empty; four threads sharing the source in different orders read the same records.
pub fn check_source(source: &dyn RecordSource) -> Vec<Outcome> {
    let n = source.len();
    let expected = outcomes(source);
    assert_eq!(expected.len() as u64, n);
    assert_eq!(outcomes(source), expected, "reading twice gives different results");

    let mut batch = RecordBatch::new();
    let all: Vec<u64> = (0..n).collect();
    for size in [1usize, 2, 3, 7, 64] {
        for chunk in all.chunks(size) {
            check_batch(
                source,
                &expected,
                chunk,
                &mut batch,
                &format!("batch of {size} from {}", chunk[0]),
            );
        }
    }
    let mut reversed_dups: Vec<u64> = all.iter().rev().copied().collect();
    reversed_dups.extend(all.iter().step_by(3));
    check_batch(source, &expected, &reversed_dups, &mut batch, "reversed batch with duplicates");
    check_batch(source, &expected, &shuffled(n, 7), &mut batch, "shuffled batch");
    // Records that point into memory-held files (where backend and format allow it) read
    // the same as copies, and fail the same way.
    let shuffled_7 = shuffled(n, 7);
    let borrowed = all.chunks(7).chain([&reversed_dups[..], &shuffled_7[..]]);
    for (k, indices) in borrowed.enumerate() {
        let result = source.read_batch_borrowed(indices, &mut batch);
        compare_batch(result, &batch, &expected, indices, &format!("borrowed batch {k}"));
    }

    source.read_batch_into(&[], &mut batch).unwrap();
    assert!(batch.is_empty(), "an empty batch must read as empty");
    let e = source.read(n).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::OutOfRange, "reading past the end: {e}");
    let e = source.read_batch_into(&[0, n], &mut batch).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::OutOfRange, "batch past the end: {e}");
    assert!(batch.is_empty());

    std::thread::scope(|s| {
        let handles: Vec<_> = (0..4u64)
            .map(|t| {
                let expected = &expected;
                s.spawn(move || {
                    let mut record = Record::new();
                    for i in shuffled(n, 100 + t) {
                        let got = source
                            .read_into(i, &mut record)
                            .map(|()| record.clone())
                            .map_err(|e| e.kind());
                        assert_eq!(&got, &expected[i as usize], "thread {t}: record {i} differs");
                    }
                    let mut batch = RecordBatch::new();
                    for chunk in shuffled(n, 200 + t).chunks(5) {
                        check_batch(
                            source,
                            expected,
                            chunk,
                            &mut batch,
                            &format!("thread {t} batch"),
                        );
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
    });
    expected
}

/// Opens the same dataset on every core backend (pread, mmap, memory), runs
/// [`check_source`] on each, and checks that all backends agree on every record and error.
/// Returns the common outcomes, or the common error kind if opening fails everywhere.
pub fn check_backends(
    open: impl Fn(Backend) -> Result<Box<dyn RecordSource>>,
) -> std::result::Result<Vec<Outcome>, ErrorKind> {
    check_backend_list(&Backend::core_backends(), open)
}

/// [`check_backends`] over an explicit list of backends (the facade adds io_uring).
pub fn check_backend_list(
    backends: &[Backend],
    open: impl Fn(Backend) -> Result<Box<dyn RecordSource>>,
) -> std::result::Result<Vec<Outcome>, ErrorKind> {
    let mut results: Vec<(String, std::result::Result<Vec<Outcome>, ErrorKind>)> = Vec::new();
    for backend in backends {
        let name = backend.name().to_string();
        let r = match open(backend.clone()) {
            Ok(source) => {
                // Backends may refine their name once open (`io_uring+direct`,
                // `io_uring(pread fallback)`); the family must match what was asked for.
                let family = backend.name().split(['+', '(', '-']).next().unwrap_or_default();
                assert!(
                    source.backend_name().starts_with(family),
                    "asked for backend {}, the source reads through {}",
                    backend.name(),
                    source.backend_name()
                );
                let expected = check_source(&*source);
                check_stream(Arc::from(source), &expected);
                Ok(expected)
            }
            Err(e) => Err(e.kind()),
        };
        results.push((name, r));
    }
    let (first_name, first) = results.remove(0);
    for (name, r) in &results {
        assert_eq!(r, &first, "backend {name} disagrees with {first_name}");
    }
    first
}

/// Reads `plan` through a stream and checks every batch against the one-by-one outcomes:
/// batch `n` of the stream is batch `n` of the plan, equal to its records read alone, or
/// failing with the kind of error one of them fails with alone.
fn check_stream_plan(
    source: &Arc<dyn RecordSource>,
    expected: &[Outcome],
    batches: &[Vec<u64>],
    options: &StreamOptions,
) {
    let what = format!("stream {options:?}");
    let stream =
        BatchStream::new(source.clone(), BatchPlan::from_batches(batches.to_vec()), options)
            .unwrap();
    let mut seen = 0;
    // Holding a few batches at once checks that a held buffer is never refilled.
    let mut held = std::collections::VecDeque::new();
    for (n, item) in stream.enumerate() {
        let indices = &batches[n];
        let what = format!("{what}, batch {n}");
        match item {
            Ok(batch) => {
                assert_eq!(batch.seq(), n as u64, "{what}: batches out of order");
                compare_batch(Ok(()), &batch, expected, indices, &what);
                held.push_back((n, batch));
                if held.len() > 2 {
                    let (m, old) = held.pop_front().unwrap();
                    compare_batch(Ok(()), &old, expected, &batches[m], &format!("{what} (held)"));
                }
            }
            Err(e) => compare_batch(Err(e), &RecordBatch::new(), expected, indices, &what),
        }
        seen += 1;
    }
    assert_eq!(seen, batches.len(), "{what}: the stream ended early or late");
}

/// Runs the stream checks on one source whose one-by-one outcomes are `expected`.
///
/// Checks: batches come out in plan order, each equal to its records read alone (or failing
/// with a kind of error one of its records fails with), on the consumer's thread and with
/// one or two helper threads, several read-ahead depths and a byte budget smaller than one
/// batch; an error does not end the stream; an empty plan and empty batches; a stream
/// dropped halfway stops its helpers (nothing holds the source afterwards).
pub fn check_stream(source: Arc<dyn RecordSource>, expected: &[Outcome]) {
    let n = source.len();
    let order = shuffled(n, 11);
    let layouts: Vec<Vec<Vec<u64>>> = vec![
        order.chunks(1).map(<[u64]>::to_vec).collect(),
        order.chunks(5).map(<[u64]>::to_vec).collect(),
        (0..n).collect::<Vec<_>>().chunks(64).map(<[u64]>::to_vec).collect(),
        vec![vec![], order.iter().rev().copied().collect(), vec![]],
        vec![],
    ];
    let options = [
        StreamOptions::inline(),
        StreamOptions::default(),
        StreamOptions::default().threads(2).read_ahead(4),
        StreamOptions::default().read_ahead(1).max_ahead_bytes(1),
    ];
    for batches in &layouts {
        for o in &options {
            check_stream_plan(&source, expected, batches, o);
        }
    }

    // Dropped halfway, with reads in flight: the helpers stop and let go of the source.
    let before = Arc::strong_count(&source);
    for o in &options[1..] {
        let mut stream =
            BatchStream::new(source.clone(), BatchPlan::chunks(order.clone(), 3), o).unwrap();
        let first = stream.next();
        if n > 0 {
            assert!(first.is_some(), "a stream over {n} records gave no batch");
        }
        drop(stream);
        drop(first);
        assert_eq!(
            Arc::strong_count(&source),
            before,
            "a dropped stream ({o:?}) still holds the source: its helpers did not stop"
        );
    }
}
