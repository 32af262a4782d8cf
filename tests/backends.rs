//! Every backend of the facade (pread, mmap, memory, io_uring buffered and O_DIRECT, the
//! pread fallback of io_uring, auto) passes the core conformance kit and agrees with the
//! others, on generated data with damage and on the golden FFRecord files.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::Path;

use reel::ffrecord::{FfrecordOptions, FfrecordReader, dump};
use reel::testing::conformance;
use reel::{Backend, ErrorKind, RecordSource};

fn open(path: &Path, backend: Backend) -> reel::Result<Box<dyn RecordSource>> {
    Ok(Box::new(FfrecordReader::open_with(path, &FfrecordOptions::default().backend(backend))?))
}

fn backends() -> Vec<Backend> {
    let mut all = reel::all_backends();
    #[cfg(target_os = "linux")]
    all.push(reel::uring::uring_backend(reel::uring::UringOptions {
        force_fallback: true,
        ..Default::default()
    }));
    // O_DIRECT through a bounce buffer the kernel did not register: what users without
    // CAP_IPC_LOCK get, whose RLIMIT_MEMLOCK is smaller than the buffer.
    #[cfg(target_os = "linux")]
    all.push(reel::uring::uring_backend(reel::uring::UringOptions {
        direct: true,
        register_buffers: false,
        ..Default::default()
    }));
    all
}

/// Records of many sizes, some crossing 4 KiB blocks, some sharing one, some empty.
fn sample(n: usize) -> Vec<Vec<u8>> {
    (0..n).map(|i| (0..(i * 977 % 9000)).map(|j| (i * 31 + j * 7) as u8).collect()).collect()
}

#[test]
fn generated_dataset_with_damage_on_every_backend() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("parts");
    let records = sample(120);
    dump(&records, &d, 3).unwrap();
    // Damage one record of the second part.
    let part = d.join("PART_00001.ffr");
    let mut bytes = std::fs::read(&part).unwrap();
    let off = FfrecordReader::open(&part).unwrap().get_offsets(0).unwrap()[5] as usize;
    bytes[off] ^= 1;
    std::fs::write(&part, &bytes).unwrap();

    let outcomes = conformance::check_backend_list(&backends(), |b| open(&d, b)).unwrap();
    for (i, o) in outcomes.iter().enumerate() {
        match o {
            Ok(r) => assert_eq!(r.bytes("data").unwrap(), &records[i][..]),
            Err(k) => assert_eq!((i, *k), (45, ErrorKind::Checksum)),
        }
    }
    assert!(outcomes[45].is_err());
}

#[test]
fn golden_ffrecord_on_every_backend() {
    for case in common::cases("ffrecord") {
        if case.is_corrupt() {
            let path = case.dir.join(case.manifest["original"]["file"]["path"].as_str().unwrap());
            let _ = conformance::check_backend_list(&backends(), |b| open(&path, b));
            continue;
        }
        let first = case.manifest["files"][0]["path"].as_str().unwrap();
        let path = if case.manifest.get("parts").is_some() {
            case.dir.join(Path::new(first).parent().unwrap())
        } else {
            case.dir.join(first)
        };
        let outcomes = conformance::check_backend_list(&backends(), |b| open(&path, b)).unwrap();
        assert_eq!(outcomes.len() as u64, case.manifest["record_count"].as_u64().unwrap());
    }
}

#[cfg(target_os = "linux")]
#[test]
fn uring_reports_how_it_reads() {
    use reel::uring::{UringFiles, UringMode, UringOptions};
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("x.ffr");
    dump(sample(10), &p, 1).unwrap();
    let forced = UringFiles::open_with(
        std::slice::from_ref(&p),
        &UringOptions { force_fallback: true, ..Default::default() },
    )
    .unwrap();
    assert_eq!(forced.mode(), UringMode::Pread);
    assert!(forced.fallback_reason().unwrap().contains("forced"));
    let buffered = UringFiles::open(std::slice::from_ref(&p)).unwrap();
    match reel::uring::uring_unavailable_reason() {
        None => assert_eq!(buffered.mode(), UringMode::Buffered),
        Some(why) => {
            assert_eq!(buffered.mode(), UringMode::Pread);
            assert!(
                buffered
                    .fallback_reason()
                    .unwrap()
                    .contains(why.trim_start_matches("io_uring unavailable: "))
            );
        }
    }
    let direct = UringFiles::open_with(&[p], &UringOptions::default().direct(true)).unwrap();
    if direct.mode() != UringMode::Direct {
        assert!(direct.fallback_reason().is_some(), "a mode other than asked must say why");
    }
}

/// io_uring hands each request of a batch over once, whole, with its bytes, whether reads
/// are buffered, O_DIRECT (through a small bounce buffer, so requests span several aligned
/// reads and waves) or the pread fallback; duplicates, a shared destination and empty
/// requests included. An error from the observer ends the batch and the ring still reads.
/// A batch larger than one submission of observed buffered reads (512 KiB): submitted in
/// parts, handed over as each completes, every request once with its own bytes, in any
/// order; an observer error in a later part ends the batch, and the ring reads on.
#[cfg(target_os = "linux")]
#[test]
fn uring_hands_over_a_batch_larger_than_one_submission() {
    use reel::ReadReq;
    use reel::uring::{UringFiles, UringOptions};
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("flat.bin");
    let data: Vec<u8> = (0..8_000_000u32).map(|i| (i * 31 + i / 997) as u8).collect();
    std::fs::write(&p, &data).unwrap();
    // 60 requests of 100 KB (6 MB), spread over the file out of order.
    let mut reqs = Vec::new();
    for k in 0..60usize {
        let offset = ((k * 37) % 60 * 130_000 + k) as u64;
        reqs.push(ReadReq { file: 0, offset, len: 100_000, dest: k * 100_000 });
    }
    let files = UringFiles::open_with(std::slice::from_ref(&p), &UringOptions::default()).unwrap();
    let mut dest = vec![0u8; 60 * 100_000];
    let mut seen = vec![0usize; reqs.len()];
    reel::ReadAt::read_many_observed(&files, &reqs, &mut dest, &mut |k: usize, bytes: &[u8]| {
        let r = &reqs[k];
        assert_eq!(bytes, &data[r.offset as usize..][..r.len], "request {k} handed over");
        seen[k] += 1;
        Ok(())
    })
    .unwrap();
    assert!(seen.iter().all(|&n| n == 1), "{seen:?}");
    for (k, r) in reqs.iter().enumerate() {
        assert_eq!(&dest[r.dest..][..r.len], &data[r.offset as usize..][..r.len], "request {k}");
    }
    let e =
        reel::ReadAt::read_many_observed(&files, &reqs, &mut dest, &mut |k: usize, _: &[u8]| {
            if k == 47 { Err(reel::Error::new(ErrorKind::Checksum, "stop")) } else { Ok(()) }
        })
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Checksum);
    let mut again = vec![0u8; dest.len()];
    reel::ReadAt::read_many(&files, &reqs, &mut again).unwrap();
    assert_eq!(again, dest, "reading after a stopped batch");
}

#[cfg(target_os = "linux")]
#[test]
fn uring_hands_over_each_request_as_it_completes() {
    use reel::ReadReq;
    use reel::uring::{UringFiles, UringOptions};
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("flat.bin");
    let data: Vec<u8> = (0..300_000u32).map(|i| (i * 13 + i / 4099) as u8).collect();
    std::fs::write(&p, &data).unwrap();
    let spec =
        [(5u64, 100usize), (4000, 50_000), (5, 100), (299_990, 10), (70_000, 0), (120_001, 9)];
    let mut reqs = Vec::new();
    let mut at = 0;
    for &(offset, len) in &spec {
        reqs.push(ReadReq { file: 0, offset, len, dest: at });
        at += len;
    }
    // The same bytes again into the first request's destination.
    reqs.push(ReadReq { dest: 0, ..reqs[0] });
    let options = [
        UringOptions::default(),
        UringOptions { bounce_bytes: 64 << 10, ..UringOptions::default().direct(true) },
        UringOptions { force_fallback: true, ..Default::default() },
    ];
    for o in &options {
        let files = UringFiles::open_with(std::slice::from_ref(&p), o).unwrap();
        let what = format!("{} ({:?})", reel::ReadAt::backend_name(&files), files.mode());
        let mut dest = vec![0u8; at];
        let mut seen: Vec<Vec<Vec<u8>>> = vec![Vec::new(); reqs.len()];
        reel::ReadAt::read_many_observed(
            &files,
            &reqs,
            &mut dest,
            &mut |k: usize, bytes: &[u8]| {
                seen[k].push(bytes.to_vec());
                Ok(())
            },
        )
        .unwrap();
        for (k, r) in reqs.iter().enumerate() {
            let want = &data[r.offset as usize..][..r.len];
            assert_eq!(&dest[r.dest..][..r.len], want, "{what}: request {k} in dest");
            if r.len > 0 {
                assert_eq!(seen[k], vec![want.to_vec()], "{what}: request {k} handed over");
            }
        }
        let e = reel::ReadAt::read_many_observed(
            &files,
            &reqs,
            &mut dest,
            &mut |k: usize, _: &[u8]| {
                if k == 1 { Err(reel::Error::new(ErrorKind::Checksum, "stop")) } else { Ok(()) }
            },
        )
        .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Checksum, "{what}");
        let mut again = vec![0u8; at];
        reel::ReadAt::read_many(&files, &reqs, &mut again).unwrap();
        assert_eq!(again, dest, "{what}: reading after a stopped batch");
    }
}

#[cfg(target_os = "linux")]
#[test]
fn auto_serves_warm_data_from_the_page_cache() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("x.ffr");
    dump(sample(50), &p, 1).unwrap();
    let files = reel::auto::AutoFiles::open(std::slice::from_ref(&p)).unwrap();
    // Just written, so resident: every batch goes through the mapping.
    let src = FfrecordReader::from_files(files, &FfrecordOptions::default()).unwrap();
    let all: Vec<u64> = (0..50).collect();
    for _ in 0..5 {
        src.read_many(&all).unwrap();
    }
    let (warm, cold) = src.source().files().batch_counts();
    assert!(warm >= 5 && cold == 0, "warm {warm} cold {cold}");
}

/// Under `auto`, large records of warm data are lent out of the mapping, as under mmap: the
/// batch's own check finds them cached.
#[cfg(target_os = "linux")]
#[test]
fn auto_lends_warm_records() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("x.ffr");
    let records: Vec<Vec<u8>> = (0..8).map(|i| vec![i as u8; 64 << 10]).collect();
    dump(records.clone(), &p, 1).unwrap();
    let files = reel::auto::AutoFiles::open(std::slice::from_ref(&p)).unwrap();
    let src = FfrecordReader::from_files(files, &FfrecordOptions::default()).unwrap();
    let order = [5u64, 0, 7];
    let mut batch = reel::RecordBatch::new();
    src.read_batch_borrowed(&order, &mut batch).unwrap();
    for (k, r) in batch.iter().enumerate() {
        assert_eq!(r.bytes("data").unwrap(), &records[order[k] as usize][..]);
        assert!(batch.is_borrowed(k), "warm record {k} was copied");
    }
}

/// Under `auto`, lending stops once the data has left the page cache: lent records would
/// fault their pages in one at a time, where the ring reads the batch at the disk's speed.
/// It starts again once the data is cached again. The dataset lies in the target directory,
/// on the disk's file system, whose clean pages `posix_fadvise(DONTNEED)` drops (tmpfs keeps
/// them, and this test would fail there).
#[cfg(target_os = "linux")]
#[test]
fn auto_stops_lending_once_the_data_leaves_the_page_cache() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let p = dir.path().join("x.ffr");
    // Records of 1 MiB: the kernel caches a file in folios of up to a few MiB, and keeps a
    // whole folio while any page of it is mapped.
    let records: Vec<Vec<u8>> = (0..16).map(|i| vec![i as u8; 1 << 20]).collect();
    dump(records.clone(), &p, 1).unwrap();
    let file = std::fs::File::open(&p).unwrap();
    file.sync_all().unwrap(); // dirty pages are not dropped
    let files = reel::auto::AutoFiles::open(std::slice::from_ref(&p)).unwrap();
    let src = FfrecordReader::from_files(files, &FfrecordOptions::default()).unwrap();
    let read = |order: &[u64]| {
        let mut batch = reel::RecordBatch::new();
        src.read_batch_borrowed(order, &mut batch).unwrap();
        for (k, r) in batch.iter().enumerate() {
            assert_eq!(r.bytes("data").unwrap(), &records[order[k] as usize][..]);
        }
        (0..batch.len()).filter(|&k| batch.is_borrowed(k)).count()
    };
    // Past the time a decision stands, so that the next batch is checked again.
    let wait = || std::thread::sleep(reel::auto::RECHECK * 3);
    assert_eq!(read(&[0, 1]), 2, "warm records were not lent");
    // Drop the file's pages, except those the lent records mapped into this process (records
    // 0 and 1, and what shares their folios): the next batch lies far from them.
    rustix::fs::fadvise(&file, 0, None, rustix::fs::Advice::DontNeed).unwrap();
    wait();
    let (_, cold_before) = src.source().files().batch_counts();
    assert_eq!(
        read(&[12, 14]),
        0,
        "records that had left the page cache were lent (or the file system of {} keeps \
         clean pages despite posix_fadvise, as tmpfs does)",
        env!("CARGO_TARGET_TMPDIR")
    );
    let (_, cold_after) = src.source().files().batch_counts();
    assert!(cold_after > cold_before, "the uncached batch was not read through the ring");
    // Cached again (read through the file), so lent again.
    std::fs::read(&p).unwrap();
    wait();
    assert_eq!(read(&[12, 14]), 2, "records cached again were not lent");
}

/// Where a golden case's dataset opens from: the case directory itself (directory
/// formats, directories of parts), its `parts/` subdirectory, or its data file.
fn golden_dataset(dir: &Path) -> std::path::PathBuf {
    let parts = dir.join("parts");
    if parts.is_dir() {
        return parts;
    }
    if reel::sniff(dir).is_ok() {
        return dir.to_path_buf();
    }
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file() && p.file_name().is_some_and(|n| n != "expected.json"))
        .collect();
    files.sort();
    files.into_iter().find(|f| reel::sniff(f).is_ok()).unwrap_or_else(|| dir.to_path_buf())
}

/// The conformance kit on every backend (io_uring buffered, O_DIRECT and its pread
/// fallback, auto included) for every case of every format in the golden corpus:
/// every backend gives the same records and the same errors.
#[test]
fn every_golden_case_of_every_format_on_every_backend() {
    let mut checked = 0;
    for key in reel::testing::golden::format_keys() {
        for case in common::cases(&key) {
            let path = golden_dataset(&case.dir);
            let format = reel::Format::from_name(key.split('/').next().unwrap_or_default())
                .unwrap_or_else(|| panic!("unknown format key {key}"));
            let result = conformance::check_backend_list(&backends(), |b| {
                reel::open_as(&path, format, &reel::OpenOptions::default().backend(b))
            });
            let reference_opens = case.manifest["reference_reader_behaviour"]["open"]["outcome"]
                .as_str()
                != Some("error");
            if !case.is_corrupt() && reference_opens && case.manifest.get("record_count").is_some()
            {
                let opened =
                    result.unwrap_or_else(|k| panic!("{key}/{}: does not open ({k:?})", case.name));
                assert_eq!(
                    opened.len() as u64,
                    case.manifest["record_count"].as_u64().unwrap(),
                    "{key}/{}",
                    case.name
                );
            }
            checked += 1;
        }
    }
    assert!(checked >= 60, "only {checked} golden cases found");
}

/// Every backend looks at the reading thread's cancel flag ([`reel::io::cancel`]) before it
/// starts I/O: a read in the scope of a raised flag ends with a `Closed` error and leaves
/// the batch empty, and one in the scope of a flag never raised reads as usual.
#[test]
fn every_backend_stops_a_cancelled_batch() {
    use reel::io::cancel::CancelFlag;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("data.ffr");
    let records = sample(120);
    dump(&records, &path, 1).unwrap();
    let indices: Vec<u64> = (0..120).rev().collect();
    for backend in backends() {
        let source = open(&path, backend.clone()).unwrap();
        let name = source.backend_name();
        let mut batch = reel::RecordBatch::new();
        let raised = CancelFlag::new();
        raised.cancel();
        let e = raised.scope(|| source.read_batch_into(&indices, &mut batch)).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Closed, "{name}: {e}");
        assert!(batch.is_empty(), "{name}: a cancelled batch holds records");
        CancelFlag::new().scope(|| source.read_batch_into(&indices, &mut batch)).unwrap();
        for (record, &i) in batch.iter().zip(&indices) {
            assert_eq!(record.bytes("data").unwrap(), &records[i as usize][..], "{name}");
        }
    }
}

/// `O_DIRECT` io_uring reads a hinted batch ahead into the ring's own memory and serves
/// the read of the same requests from it: in the order a one-helper stream hints and reads
/// (the next batch hinted before this one is read), for a hint never read, for hints that
/// outrun the reads, for a batch larger than one read-ahead area, with the bytes handed
/// over to an observer, and for files dropped while reads ahead are in flight. Every read
/// returns the file's bytes whatever became of the hints.
#[cfg(target_os = "linux")]
#[test]
fn uring_direct_reads_a_hinted_batch_ahead() {
    use reel::ReadReq;
    use reel::uring::{UringFiles, UringMode, UringOptions};
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("flat.bin");
    let data: Vec<u8> = (0..24_000_000u32).map(|i| (i * 29 + i / 4093) as u8).collect();
    std::fs::write(&p, &data).unwrap();
    // Batch `seed`: `n` requests of `len` bytes at scattered, unaligned offsets.
    let batch = |seed: u64, n: usize, len: usize| -> Vec<ReadReq> {
        let span = (data.len() - len) as u64;
        (0..n)
            .map(|k| {
                let offset = (seed * 7_919 + k as u64 * 1_000_003) * 4_111 % span;
                ReadReq { file: 0, offset, len, dest: k * len }
            })
            .collect()
    };
    let check = |files: &UringFiles, reqs: &[ReadReq], what: &str| {
        let mut dest = vec![0u8; reqs.iter().map(|r| r.len).sum()];
        reel::ReadAt::read_many(files, reqs, &mut dest).unwrap();
        for (k, r) in reqs.iter().enumerate() {
            let want = &data[r.offset as usize..][..r.len];
            assert!(&dest[r.dest..][..r.len] == want, "{what}: request {k}");
        }
    };
    let files =
        UringFiles::open_with(std::slice::from_ref(&p), &UringOptions::default().direct(true))
            .unwrap();
    if files.mode() != UringMode::Direct {
        // No io_uring or no O_DIRECT here: a hint is then ignored, and says nothing.
        assert!(files.fallback_reason().is_some());
        reel::ReadAt::will_read(&files, &batch(1, 64, 1000));
        check(&files, &batch(1, 64, 1000), "without O_DIRECT");
        assert_eq!(files.read_ahead_counts(), (0, 0));
        return;
    }
    // As a one-helper stream reads: hint batch k+1, then read batch k.
    let batches: Vec<Vec<ReadReq>> = (0..6).map(|s| batch(s, 256, 1024)).collect();
    for k in 0..batches.len() {
        if let Some(next) = batches.get(k + 1) {
            reel::ReadAt::will_read(&files, next);
        }
        check(&files, &batches[k], &format!("streamed batch {k}"));
    }
    let (hinted, served) = files.read_ahead_counts();
    assert!(hinted > 0, "nothing was read ahead");
    assert_eq!(served, hinted, "every hinted piece of a batch read next is served");
    // A hint never read, and the read of another batch: served from nothing stale.
    reel::ReadAt::will_read(&files, &batch(100, 256, 4000));
    check(&files, &batch(101, 256, 4000), "another batch than the hint");
    assert_eq!(files.read_ahead_counts().1, served);
    // Hints outrunning the reads: each new hint reuses an area only once its reads ended.
    for s in 200..205 {
        reel::ReadAt::will_read(&files, &batch(s, 256, 3000));
    }
    check(&files, &batch(204, 256, 3000), "the last of five hints");
    check(&files, &batch(203, 256, 3000), "the one before");
    // A batch larger than a read-ahead area (8 MiB): its first pieces come from the
    // read-ahead, the rest are read with the batch.
    let big = batch(300, 48, 250_000);
    let before = files.read_ahead_counts();
    reel::ReadAt::will_read(&files, &big);
    check(&files, &big, "a batch larger than the read-ahead");
    let after = files.read_ahead_counts();
    assert!(after.1 > before.1, "part of the large batch is served from the read-ahead");
    // The bytes handed to an observer, each request once.
    let observed = batch(400, 200, 5000);
    reel::ReadAt::will_read(&files, &observed);
    let mut dest = vec![0u8; 200 * 5000];
    let mut seen = vec![0usize; observed.len()];
    reel::ReadAt::read_many_observed(&files, &observed, &mut dest, &mut |k: usize, b: &[u8]| {
        let r = &observed[k];
        assert!(b == &data[r.offset as usize..][..r.len], "observed request {k}");
        seen[k] += 1;
        Ok(())
    })
    .unwrap();
    assert!(seen.iter().all(|&n| n == 1), "{seen:?}");
    // Hints outside the file are left out; the read proper reports the range.
    let outside = [ReadReq { file: 0, offset: data.len() as u64 - 10, len: 100, dest: 0 }];
    let before = files.read_ahead_counts();
    reel::ReadAt::will_read(&files, &outside);
    assert_eq!(files.read_ahead_counts(), before);
    // Dropped with reads ahead in flight: the ring waits for them before its memory goes.
    reel::ReadAt::will_read(&files, &batch(500, 256, 20_000));
    drop(files);
}

/// A one-helper stream over FFRecord on `O_DIRECT` io_uring hints each next batch, and
/// every batch has the records asked for, checksums checked.
#[cfg(target_os = "linux")]
#[test]
fn a_stream_over_direct_io_uring_reads_every_batch_right() {
    use std::sync::Arc;
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.ffr");
    let records = sample(600);
    dump(records.clone(), &p, 1).unwrap();
    let backend = reel::uring::uring_backend(reel::uring::UringOptions::default().direct(true));
    let source: Arc<dyn RecordSource> = Arc::from(open(&p, backend).unwrap());
    let order: Vec<u64> = (0..600u64).map(|i| i * 397 % 600).collect();
    let plan = reel::BatchPlan::chunks(order.clone(), 64);
    let stream = reel::BatchStream::new(source, plan, &reel::StreamOptions::default()).unwrap();
    let mut next = 0;
    for batch in stream {
        for record in batch.unwrap().iter() {
            let i = order[next];
            assert_eq!(record.index(), i);
            assert_eq!(record.bytes("data").unwrap(), &records[i as usize][..], "record {i}");
            next += 1;
        }
    }
    assert_eq!(next, order.len());
}
