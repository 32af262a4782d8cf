//! The loader's behaviour: errors reach the consumer with the record index, map functions
//! run (and fail, and panic) on the workers, dropping stops the workers, bad
//! configurations and mismatched states are refused, and real FFRecord data loads.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use reel_core::{Backend, ErrorKind, RecordSource, Value};
use reel_ffrecord::{FfrecordOptions, FfrecordReader, dump};
use reel_loader::{
    FeistelPermutation, Loader, LoaderBuilder, LoaderState, Schedule, Shuffle, copy_fields,
};

use common::{TestSource, drain, indices};

fn shared(source: &Arc<TestSource>) -> LoaderBuilder {
    LoaderBuilder::new(source.clone() as Arc<dyn RecordSource>)
}

#[test]
fn read_errors_name_the_record_and_iteration_goes_on() {
    for (workers, helps) in [(0, false), (3, false), (2, true)] {
        let source = Arc::new(TestSource::new(40).failing([13]));
        let loader =
            shared(&source).batch_size(4).workers(workers).consumer_helps(helps).build().unwrap();
        let results: Vec<_> = loader.collect();
        assert_eq!(results.len(), 10, "{workers} workers: every step is delivered");
        for (k, r) in results.iter().enumerate() {
            match r {
                Ok(batch) => {
                    assert_ne!(k, 3);
                    assert_eq!(
                        indices(batch),
                        (4 * k as u64..4 * k as u64 + 4).collect::<Vec<_>>()
                    );
                }
                Err(e) => {
                    assert_eq!(k, 3, "only the batch holding record 13 fails");
                    assert_eq!(e.kind(), ErrorKind::Corrupt);
                    assert_eq!(e.record(), Some(13), "{workers} workers: {e}");
                }
            }
        }
    }
}

#[test]
fn a_panicking_source_does_not_kill_the_workers() {
    for workers in [0, 2] {
        let source = Arc::new(TestSource::new(12).panicking([5]));
        let results: Vec<_> =
            shared(&source).batch_size(3).workers(workers).build().unwrap().collect();
        assert_eq!(results.len(), 4);
        let e = results[1].as_ref().unwrap_err();
        assert_eq!(e.record(), Some(5), "{e}");
        assert!(e.to_string().contains("panics on record 5"), "{e}");
        assert!(results.iter().enumerate().all(|(k, r)| (k == 1) != r.is_ok()));
    }
}

#[test]
fn loaders_and_batches_move_between_threads() {
    fn send<T: Send>() {}
    send::<Loader>();
    send::<reel_loader::Batch>();
    send::<LoaderBuilder>();
}

#[test]
fn map_functions_transform_records_on_the_workers() {
    let source = Arc::new(TestSource::new(50));
    let build = |workers| {
        shared(&source)
            .batch_size(8)
            .shuffle(Shuffle::Feistel)
            .seed(5)
            .workers(workers)
            .map(|record, out, ctx| {
                copy_fields(record, out);
                out.push("draw".into(), Value::from_u64(ctx.rng().integers(1_000_000)));
                Ok(())
            })
            .map(|record, out, ctx| {
                copy_fields(record, out);
                let epoch_position = (ctx.epoch() << 32) | ctx.position();
                out.push("where".into(), Value::from_u64(epoch_position));
                assert_eq!(ctx.index(), record.index());
                Ok(())
            })
            .build()
            .unwrap()
    };
    let collect = |loader: Loader| {
        loader
            .map(|b| {
                let b = b.unwrap();
                b.iter()
                    .map(|r| {
                        assert_eq!(r.bytes("data").unwrap(), r.index().to_le_bytes());
                        let draw = r.get("draw").unwrap().as_i64().unwrap();
                        let at = r.get("where").unwrap().as_i64().unwrap();
                        (r.index(), draw, at)
                    })
                    .collect::<Vec<_>>()
            })
            .collect::<Vec<_>>()
    };
    let inline = collect(build(0));
    assert_eq!(inline.len(), 7);
    // The per-record draws are a function of the record's place, not of the worker.
    assert_eq!(collect(build(4)), inline);
    let positions: Vec<i64> = inline.iter().flatten().map(|&(_, _, at)| at).collect();
    assert_eq!(positions, (0..50).collect::<Vec<_>>());
    let draws: std::collections::BTreeSet<i64> = inline.iter().flatten().map(|r| r.1).collect();
    assert!(draws.len() > 40, "per-record seeds differ");
}

#[test]
fn map_errors_and_panics_reach_the_consumer() {
    for workers in [0, 2] {
        let source = Arc::new(TestSource::new(30));
        let loader = shared(&source)
            .batch_size(5)
            .workers(workers)
            .map(|record, out, _| {
                if record.index() == 7 {
                    return Err(reel_core::Error::schema("seven is not allowed"));
                }
                if record.index() == 21 {
                    panic!("twenty-one");
                }
                copy_fields(record, out);
                Ok(())
            })
            .build()
            .unwrap();
        let results: Vec<_> = loader.collect();
        assert_eq!(results.len(), 6);
        let errors: Vec<_> = results
            .iter()
            .enumerate()
            .filter_map(|(k, r)| r.as_ref().err().map(|e| (k, e)))
            .collect();
        assert_eq!(errors.len(), 2, "{workers} workers");
        assert_eq!(
            (errors[0].0, errors[0].1.kind(), errors[0].1.record()),
            (1, ErrorKind::Schema, Some(7))
        );
        assert_eq!(errors[1].0, 4);
        assert_eq!(errors[1].1.record(), Some(21));
        assert!(errors[1].1.to_string().contains("twenty-one"), "{}", errors[1].1);
        for (k, r) in results.iter().enumerate() {
            if let Ok(b) = r {
                assert_eq!(b.len(), 5, "batch {k}");
            }
        }
    }
}

#[test]
fn dropping_mid_epoch_stops_the_workers() {
    let source = Arc::new(TestSource::new(100_000).slow(Duration::from_millis(2)));
    let mut loader =
        shared(&source).batch_size(10).workers(4).prefetch(6).endless().build().unwrap();
    for _ in 0..3 {
        loader.next().unwrap().unwrap();
    }
    let started = Instant::now();
    drop(loader);
    assert!(started.elapsed() < Duration::from_secs(5), "drop waited too long");
    let after_drop = source.reads();
    // Read ahead at most prefetch steps beyond the three consumed.
    assert!(after_drop <= (3 + 6) * 10, "{after_drop} records read");
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(source.reads(), after_drop, "no worker reads after the loader is gone");
    // The source is no longer shared with any worker thread.
    assert_eq!(Arc::strong_count(&source), 1);
}

#[test]
fn batches_outliving_the_loader_stay_valid() {
    let source = Arc::new(TestSource::new(20));
    let mut loader = shared(&source).batch_size(4).workers(2).build().unwrap();
    let first = loader.next().unwrap().unwrap();
    let second = loader.next().unwrap().unwrap();
    drop(loader);
    assert_eq!(indices(&first), [0, 1, 2, 3]);
    assert_eq!(second.into_records().len(), 4);
}

#[test]
fn bad_configurations_are_refused() {
    let source = Arc::new(TestSource::new(10));
    let kind = |b: LoaderBuilder| b.build().err().map(|e| e.kind());
    assert_eq!(kind(shared(&source).batch_size(0)), Some(ErrorKind::InvalidInput));
    assert_eq!(kind(shared(&source).shard(2, 2)), Some(ErrorKind::InvalidInput));
    assert_eq!(kind(shared(&source).shard(0, 0)), Some(ErrorKind::InvalidInput));
    assert_eq!(kind(shared(&source).prefetch(0)), Some(ErrorKind::InvalidInput));
    assert_eq!(
        kind(shared(&source).batch_size(usize::MAX).shard(0, 3)),
        Some(ErrorKind::InvalidInput)
    );
    assert_eq!(
        kind(shared(&source).workers(reel_loader::MAX_WORKERS + 1)),
        Some(ErrorKind::InvalidInput)
    );
}

/// Sizes far beyond the data (a batch of "everything", a window of billions) allocate for
/// what is read, not for the number asked: each of these would abort the process if it
/// reserved memory for it up front.
#[test]
fn sizes_beyond_the_data_allocate_for_the_data() {
    let source = Arc::new(TestSource::new(10));
    for workers in [0, 2] {
        let loader = shared(&source)
            .batch_size(usize::MAX)
            .shuffle(Shuffle::None)
            .workers(workers)
            .epochs(1);
        let mut loader = loader.build().unwrap();
        let batch = loader.next_batch().unwrap().unwrap();
        assert_eq!(indices(&batch), (0..10).collect::<Vec<_>>(), "{workers} workers");
        drop(batch);
        assert!(loader.next_batch().is_none());
        let mut loader =
            shared(&source).batch_size(3).workers(workers).prefetch(1 << 40).epochs(1).build();
        let batches = loader.as_mut().unwrap().map(|b| b.unwrap().into_records().len());
        assert_eq!(batches.collect::<Vec<_>>(), [3, 3, 3, 1], "{workers} workers");
    }
}

#[test]
fn interleaved_readers_share_out_the_batches_and_read_only_their_own() {
    // Three readers of one rank (DataLoader worker processes) with interleave(3, k)
    // together deliver the rank's schedule exactly once, each in order, with any number of
    // threads, and none reads a batch it passes over; the same holds from a resume point.
    let rank = |s: &Arc<TestSource>| {
        shared(s).batch_size(4).shuffle(Shuffle::Feistel).seed(5).shard(1, 2).epochs(2)
    };
    let whole: Vec<_> = rank(&Arc::new(TestSource::new(53))).index_batches().unwrap().collect();
    let resume_at = whole[4].resume.clone();
    for (start, resume) in [(0, None), (5, Some(resume_at))] {
        let expected: Vec<Vec<u64>> = whole[start..].iter().map(|b| b.indices.clone()).collect();
        for threads in [0, 2] {
            let mut got = vec![Vec::new(); expected.len()];
            for k in 0..3 {
                let source = Arc::new(TestSource::new(53));
                let mut b = rank(&source).interleave(3, k).workers(threads);
                if let Some(state) = &resume {
                    b = b.resume(state.clone());
                }
                let planned: Vec<_> = b.index_batches().unwrap().map(|x| x.indices).collect();
                let mut loader = b.build().unwrap();
                let mut mine = Vec::new();
                while let Some(batch) = loader.next_batch() {
                    mine.push(indices(&batch.unwrap()));
                }
                assert!(loader.is_finished());
                assert_eq!(mine, planned, "the plan and the loader agree");
                let read: u64 = mine.iter().map(|b| b.len() as u64).sum();
                assert_eq!(source.reads(), read, "batches passed over are not read");
                for (n, batch) in mine.into_iter().enumerate() {
                    got[k as usize + 3 * n] = batch;
                }
            }
            assert_eq!(got, expected, "threads {threads}, from batch {start}");
        }
    }
    let source = Arc::new(TestSource::new(10));
    for (every, first) in [(0, 0), (2, 2), (3, 7)] {
        let refused = shared(&source).interleave(every, first).build();
        assert_eq!(refused.err().map(|e| e.kind()), Some(ErrorKind::InvalidInput));
    }
}

#[test]
fn mismatched_states_are_refused() {
    let source = Arc::new(TestSource::new(10));
    let state = LoaderState::at_epoch(3, 1, 10, Shuffle::Feistel);
    let ok = shared(&source).shuffle(Shuffle::Feistel).epochs(2).resume(state.clone());
    assert_eq!(ok.clone().build().unwrap().state(), state, "the state's seed is adopted");
    let refused = [
        ok.clone().seed(4),
        ok.clone().shuffle(Shuffle::Granular),
        shared(&Arc::new(TestSource::new(11))).shuffle(Shuffle::Feistel).resume(state.clone()),
        ok.clone().resume(LoaderState { position: 11, ..state.clone() }),
    ];
    for b in refused {
        assert_eq!(b.build().err().map(|e| e.kind()), Some(ErrorKind::InvalidInput));
    }
    let json = state.to_json();
    assert_eq!(json, r#"{"seed":3,"epoch":1,"step":0,"position":0,"len":10,"shuffle":"feistel"}"#);
    assert_eq!(LoaderState::from_json(&json).unwrap(), state);
    assert_eq!(LoaderState::from_json("{}").unwrap_err().kind(), ErrorKind::InvalidInput);
}

#[test]
fn epochs_one_at_a_time() {
    let source = Arc::new(TestSource::new(10));
    let mut loader = shared(&source)
        .batch_size(4)
        .shuffle(Shuffle::Feistel)
        .epochs(3)
        .workers(2)
        .build()
        .unwrap();
    assert_eq!(loader.steps_per_epoch(), Some(3));
    let mut seen = Vec::new();
    while !loader.is_finished() {
        let epoch = loader.epoch();
        let mut records: Vec<u64> = Vec::new();
        for batch in loader.epoch_batches() {
            let batch = batch.unwrap();
            assert_eq!(batch.epoch(), epoch);
            records.extend(batch.indices());
        }
        let mut sorted = records.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..10).collect::<Vec<_>>());
        seen.push(records);
    }
    assert_eq!(seen.len(), 3);
    assert_ne!(seen[0], seen[1], "each epoch has its own order");
    assert_eq!(loader.state(), LoaderState::at_epoch(0, 3, 10, Shuffle::Feistel));
    assert!(loader.next().is_none());
}

#[test]
fn stream_schedule_reports_no_epoch_length() {
    let source = Arc::new(TestSource::new(10));
    let loader = shared(&source).schedule(Schedule::Stream).batch_size(3).build().unwrap();
    assert_eq!(loader.steps_per_epoch(), None);
    // One epoch of 10 records in steps of 3: steps start at 0, 3, 6, 9.
    let batches = drain(loader);
    assert_eq!(batches.len(), 4);
    assert_eq!(batches[3].1, [9, 0, 1]);
}

#[test]
fn feistel_order_is_pinned() {
    // The shuffled order is part of the resume contract: a state saved by one build must
    // mean the same batches in the next. Changing this vector breaks saved states.
    let order = Shuffle::Feistel.epoch_order(42, 3, 20);
    let got: Vec<u64> = (0..20).map(|p| order.index_at(p)).collect();
    assert_eq!(got, PINNED_FEISTEL);
    let p = FeistelPermutation::new(1 << 40, 9);
    assert_eq!(p.invert(p.apply(123_456_789)), 123_456_789);
}

const PINNED_FEISTEL: [u64; 20] =
    [3, 7, 18, 19, 6, 4, 0, 8, 2, 13, 16, 17, 11, 14, 15, 12, 1, 10, 9, 5];

#[test]
fn loads_ffrecord_through_every_core_backend() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d");
    std::fs::create_dir(&path).unwrap();
    let records: Vec<Vec<u8>> = (0..97u32).map(|i| format!("record {i}").into_bytes()).collect();
    dump(&records, &path, 3).unwrap();
    for backend in Backend::core_backends() {
        let reader =
            FfrecordReader::open_with(&path, &FfrecordOptions::default().backend(backend.clone()))
                .unwrap();
        let loader = Loader::builder(reader)
            .batch_size(10)
            .shuffle(Shuffle::Feistel)
            .seed(1)
            .drop_last(true)
            .workers(2)
            .build()
            .unwrap();
        let mut seen = Vec::new();
        for batch in loader {
            let batch = batch.unwrap();
            assert_eq!(batch.len(), 10);
            for r in batch.iter() {
                assert_eq!(r.bytes("data").unwrap(), records[r.index() as usize]);
                seen.push(r.index());
            }
        }
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), 90, "{}: 9 whole batches of distinct records", backend.name());
    }
}

#[test]
fn mmap_records_reach_the_consumer_without_a_copy_and_outlive_the_loader() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d");
    std::fs::create_dir(&path).unwrap();
    // Records of at least `BORROW_MIN_RECORD` bytes are handed out where they lie.
    let size = reel_core::BORROW_MIN_RECORD as usize;
    let records: Vec<Vec<u8>> = (0..97u32).map(|i| vec![i as u8; size + i as usize]).collect();
    dump(&records, &path, 3).unwrap();
    for workers in [0, 2] {
        let options = FfrecordOptions::default().backend(Backend::Mmap);
        let reader = FfrecordReader::open_with(&path, &options).unwrap();
        let files = reader.source().files();
        // Where the three files are mapped.
        let maps: Vec<std::ops::Range<usize>> = (0..3)
            .map(|f| {
                let map = files.bytes(f).unwrap();
                map.as_ptr() as usize..map.as_ptr() as usize + map.len()
            })
            .collect();
        let mut loader = Loader::builder(reader)
            .batch_size(10)
            .shuffle(Shuffle::Feistel)
            .workers(workers)
            .build()
            .unwrap();
        let held = loader.next().unwrap().unwrap();
        let mut seen = 0;
        for batch in loader.by_ref() {
            let batch = batch.unwrap();
            assert_eq!(batch.buffer_len(), 0, "the batch holds no copy of any record");
            for (k, r) in batch.iter().enumerate() {
                let data = r.bytes("data").unwrap();
                assert_eq!(data, records[r.index() as usize]);
                assert!(batch.is_borrowed(k));
                let at = data.as_ptr() as usize;
                assert!(
                    maps.iter().any(|m| m.contains(&at) && at + data.len() <= m.end),
                    "record {} at {at:#x} lies outside every mapping {maps:x?}",
                    r.index()
                );
                seen += 1;
            }
        }
        assert_eq!(seen, 87, "{workers} workers");
        // The batch holds the mappings: it stays readable after the loader, its workers and
        // the reader (with its mappings) are gone.
        drop(loader);
        for r in held.iter() {
            assert_eq!(r.bytes("data").unwrap(), records[r.index() as usize]);
        }
        assert_eq!(held.len(), 10);
    }
    // Backends that do not hold the files in memory copy, and so does a loader told to.
    let reader = FfrecordReader::open_with(&path, &FfrecordOptions::default()).unwrap();
    let batch = Loader::builder(reader).batch_size(5).build().unwrap().next().unwrap().unwrap();
    assert!(!batch.is_borrowed(0) && batch.buffer_len() > 0, "{}", batch.len());
    let options = FfrecordOptions::default().backend(Backend::Mmap);
    let reader = FfrecordReader::open_with(&path, &options).unwrap();
    let loader = Loader::builder(reader).batch_size(5).zero_copy(false).build().unwrap();
    let batch = loader.into_iter().next().unwrap().unwrap();
    assert!(!batch.is_borrowed(0) && batch.buffer_len() > 0);
    assert_eq!(batch.get(0).unwrap().bytes("data").unwrap(), records[0]);
    // Small records are copied (faster than checking them in place).
    let small = dir.path().join("small.ffr");
    dump(&[vec![1u8; 100], vec![2u8; 100]], &small, 1).unwrap();
    let options = FfrecordOptions::default().backend(Backend::Mmap);
    let reader = FfrecordReader::open_with(&small, &options).unwrap();
    let batch = Loader::builder(reader).batch_size(2).build().unwrap().next().unwrap().unwrap();
    assert!(!batch.is_borrowed(0) && batch.buffer_len() == 200);
}

#[test]
fn ffrecord_checksum_errors_name_the_record() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.ffr");
    // Large enough to be checked in place under mmap (`BORROW_MIN_RECORD`).
    let size = reel_core::BORROW_MIN_RECORD as usize;
    let records: Vec<Vec<u8>> = (0..20u8).map(|i| vec![i; size]).collect();
    dump(&records, &path, 1).unwrap();
    let reader = FfrecordReader::open(&path).unwrap();
    let bad = 11u64;
    let offset = reader.get_offsets(0).unwrap()[bad as usize];
    drop(reader);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[offset as usize + 3] ^= 0xff;
    std::fs::write(&path, bytes).unwrap();
    // Copied (pread) or checked where it lies in the mapping (mmap, zero-copy).
    for backend in [Backend::Pread, Backend::Mmap] {
        let options = FfrecordOptions::default().backend(backend);
        let loader = Loader::builder(FfrecordReader::open_with(&path, &options).unwrap())
            .batch_size(4)
            .workers(2)
            .build()
            .unwrap();
        let errors: Vec<_> = loader.filter_map(Result::err).collect();
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].kind(), ErrorKind::Checksum);
        assert_eq!(errors[0].record(), Some(bad));
    }
}
