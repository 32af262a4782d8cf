//! Datasets read over HTTP, from a range-capable server on loopback that the test starts:
//! every golden case of every format (damaged ones too) must read exactly as it reads from the
//! local disk, which the golden tests check against the manifests; opening and batches cost
//! few requests; and the local cache serves later passes. Faults (latency, 503 and 429
//! answers, bodies cut mid-way or short, silence) are in tests/object_store_faults.rs.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
#[path = "common/ffrecord_data.rs"]
mod ffrecord_data;
#[path = "common/http_server.rs"]
mod http_server;

use std::path::{Path, PathBuf};
use std::time::Duration;

use ffrecord_data::{ffrecord_dataset, read_batch};
use http_server::HttpServer;
use reel::store::{CacheSettings, ReadSettings, StoreOptions};
use reel::testing::conformance;
use reel::{ErrorKind, OpenOptions, RecordSource, RecordSourceExt};

/// The requests opening one FFRecord file costs (see
/// `opening_and_one_batch_cost_few_requests_of_any_kind`): one ranged GET of its first
/// 64 KiB, which tells its size and holds its header and index table.
const OPEN_REQUESTS: u64 = 1;

fn options(settings: ReadSettings) -> OpenOptions {
    let mut store =
        StoreOptions { use_env: false, ..StoreOptions::default() }.with("allow_http", "true");
    // object_store's own retries are off, so the request counts are reel's.
    store.retry.max_retries = 0;
    store.timeout = Duration::from_secs(5);
    OpenOptions::default().store_options(store).read_settings(settings)
}

fn outcomes(
    result: reel::Result<Box<dyn RecordSource>>,
) -> Result<Vec<conformance::Outcome>, ErrorKind> {
    let source = result.map_err(|e| e.kind())?;
    Ok(conformance::check_source(&*source))
}

/// The directory a case's data files are in (the case directory, or the folder its manifest
/// names, such as `parts/` of a multi-file dataset).
fn dataset_dir(case: &common::Case) -> std::path::PathBuf {
    let files = case.manifest.get("files").or_else(|| case.manifest["original"].get("files"));
    let first = files.and_then(|f| f[0]["path"].as_str()).unwrap_or("");
    match Path::new(first).parent() {
        Some(parent) if !parent.as_os_str().is_empty() => case.dir.join(parent),
        _ => case.dir.clone(),
    }
}

#[test]
fn every_golden_case_reads_over_http_as_it_reads_locally() {
    let root = common::golden_root();
    let server = HttpServer::start(&root);
    let (mut compared, mut opened) = (0, 0);
    for format in reel::testing::golden::format_keys() {
        for case in common::cases(&format) {
            let dir = dataset_dir(&case);
            let rel = dir.strip_prefix(&root).unwrap();
            let url = format!("{}/{}", server.url(), rel.display());
            let local = outcomes(reel::open(&dir));
            let remote = outcomes(reel::open_with(&url, &options(ReadSettings::default())));
            assert_eq!(remote, local, "{format}/{}: over HTTP and from disk differ", case.name);
            if local.is_ok() {
                opened += 1;
            }
            compared += 1;
        }
    }
    eprintln!("{compared} cases compared, {opened} opened");
    assert!(compared > 40 && opened > 30, "only {compared} cases, {opened} opened");
}

#[test]
fn a_random_batch_costs_few_requests() {
    let dir = tempfile::tempdir().unwrap();
    let records = ffrecord_dataset(dir.path(), 2000, 1024);
    let server = HttpServer::start(dir.path());
    let url = format!("{}/data", server.url());
    let source = reel::open_with(&url, &options(ReadSettings::default())).unwrap();
    let indices = conformance::shuffled(2000, 7)[..256].to_vec();
    let before = server.gets();
    let got = read_batch(&*source, &indices).unwrap();
    let requests = server.gets() - before;
    for (k, &i) in indices.iter().enumerate() {
        assert_eq!(got[k], records[i as usize], "record {i}");
    }
    // 256 records of 1 KiB out of 2000 lie within 1 MiB of each other: one request covers
    // the whole file (~2 MiB), within the cap on a request's size (8 MiB).
    assert!(requests <= 4, "{requests} requests for one batch");

    // Without coalescing every record is its own request, still one batch in flight.
    let settings = ReadSettings { coalesce_gap: 0, ..ReadSettings::default() };
    let source = reel::open_with(&url, &options(settings)).unwrap();
    let before = server.gets();
    assert_eq!(read_batch(&*source, &indices).unwrap(), got);
    assert!(server.gets() - before >= 200, "{} requests", server.gets() - before);
}

/// A read whose thread's cancel flag is raised ([`reel::io::cancel`]) starts no range
/// request and ends with a `Closed` error, with the chunk cache or without; under a flag
/// never raised it reads as usual.
#[test]
fn a_cancelled_batch_starts_no_requests() {
    use reel::io::cancel::CancelFlag;
    let dir = tempfile::tempdir().unwrap();
    let records = ffrecord_dataset(dir.path(), 500, 1024);
    let server = HttpServer::start(dir.path());
    let url = format!("{}/data", server.url());
    let cache_dir = tempfile::tempdir().unwrap();
    let cached = ReadSettings {
        cache: Some(CacheSettings::new(cache_dir.path())),
        ..ReadSettings::default()
    };
    let indices = conformance::shuffled(500, 3)[..64].to_vec();
    for settings in [ReadSettings::default(), cached] {
        let source = reel::open_with(&url, &options(settings)).unwrap();
        let raised = CancelFlag::new();
        raised.cancel();
        let before = server.gets();
        let e = raised.scope(|| read_batch(&*source, &indices)).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Closed, "{e}");
        assert_eq!(server.gets(), before, "requests made for a cancelled batch");
        let got = CancelFlag::new().scope(|| read_batch(&*source, &indices)).unwrap();
        for (k, &i) in indices.iter().enumerate() {
            assert_eq!(got[k], records[i as usize], "record {i}");
        }
    }
}

/// The core stream over a bucket: while the consumer holds one batch, the next batch's
/// range requests are already answered (read-ahead), and every batch comes in plan order
/// with the right records.
#[test]
fn a_stream_keeps_the_next_batch_in_flight_over_http() {
    let dir = tempfile::tempdir().unwrap();
    let records = ffrecord_dataset(dir.path(), 2000, 1024);
    let server = HttpServer::start(dir.path());
    let url = format!("{}/data", server.url());
    // No coalescing, so that each record is one request the server counts.
    let settings = ReadSettings { coalesce_gap: 0, ..ReadSettings::default() };
    let source: std::sync::Arc<dyn RecordSource> =
        reel::open_with(&url, &options(settings)).unwrap().into();
    // Every other record, so no two of a batch touch and each is exactly one request, past
    // the first 200 (the 64 KiB that opening the file read are served from memory).
    let order: Vec<u64> =
        conformance::shuffled(900, 11)[..512].iter().map(|i| 200 + i * 2).collect();
    let before = server.gets();
    let plan = reel::BatchPlan::chunks(order.clone(), 64);
    let mut stream =
        reel::BatchStream::new(source, plan, &reel::StreamOptions::default().read_ahead(2))
            .unwrap();
    let first = stream.next().unwrap().unwrap();
    // Holding the first batch, the stream reads the next two: their 128 requests arrive
    // without the consumer asking (a bounded wait, not a timing assertion on speed).
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while server.gets() - before < 3 * 64 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    let ahead = server.gets() - before;
    assert_eq!(ahead, 3 * 64, "requests while the consumer held the first batch");
    // And no further: the window is the held batch and two ahead.
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(server.gets() - before, 3 * 64, "the stream read past its window");
    let mut batches = vec![first];
    batches.extend(stream.map(|b| b.unwrap()));
    assert_eq!(batches.len(), 8);
    for (k, batch) in batches.iter().enumerate() {
        assert_eq!(batch.seq(), k as u64);
        for (j, record) in batch.iter().enumerate() {
            let i = order[k * 64 + j] as usize;
            assert_eq!(record.bytes("data").unwrap(), &records[i][..], "record {i}");
        }
    }
}

/// Requests of every method (HEAD, PROPFIND listings, GET) to open one FFRecord file and
/// read one random batch of 256 records from it.
#[test]
fn opening_and_one_batch_cost_few_requests_of_any_kind() {
    let dir = tempfile::tempdir().unwrap();
    let records = ffrecord_dataset(dir.path(), 2000, 1024);
    let server = HttpServer::start(dir.path());
    let url = format!("{}/data", server.url());
    let before = server.requests();
    let source = reel::open_with(&url, &options(ReadSettings::default())).unwrap();
    let to_open = server.requests() - before;
    let indices = conformance::shuffled(2000, 11)[..256].to_vec();
    let before = server.requests();
    let got = read_batch(&*source, &indices).unwrap();
    let batch = server.requests() - before;
    for (k, &i) in indices.iter().enumerate() {
        assert_eq!(got[k], records[i as usize], "record {i}");
    }
    eprintln!("open: {to_open} requests; one batch of 256 after open: {batch} requests");
    // The batch: its coalesced range GETs only (no HEAD: the sizes are known from the open).
    assert!(batch <= 3, "{batch} requests for one batch after open");
    // Opening: sniffing and opening ask about the same object several times; the store
    // asks once.
    assert!(to_open <= OPEN_REQUESTS, "{to_open} requests to open one FFRecord file");
}

/// Requests (of any method) to open one golden dataset of each shape over HTTP, with the
/// most each may cost: every question about an object or a prefix is asked once per open,
/// and an object's first 64 KiB, learnt with its size, serve its headers and index tables.
#[test]
fn opening_each_format_asks_each_question_once() {
    let root = common::golden_root();
    let server = HttpServer::start(&root);
    // The bounds are what each costs now, so that a regression shows: a single-file
    // dataset is its first-bytes GET (plus, for Syrah, its index table past 64 KiB); a
    // directory adds a GET that finds no object there and its listing, then one GET per
    // file whose metadata the format reads (FFRecord parts, Granular's `spec.json` and each
    // column's `.idx` or `.bag` end, Gulp's `.gmeta` files, OFRecord's part heads and tails
    // as the frame scan walks them; a frame over 64 KiB costs one more).
    let cases = [
        ("ffrecord/normal/data.ffr", 1),
        ("ffrecord/multi_file/parts", 5),
        ("syrah/normal/data.syr", 2),
        ("ofrecord/normal", 8),
        ("granular/granular-0.24.2/normal", 11),
        ("granular/bags-0.5.1/normal", 18),
        ("gulpio2/normal", 6),
        ("gulpio2/many_chunks", 14),
    ];
    for (case, bound) in cases {
        let url = format!("{}/{case}", server.url());
        let before = server.requests();
        let source = reel::open_with(&url, &options(ReadSettings::default()))
            .unwrap_or_else(|e| panic!("{case}: {e}"));
        let to_open = server.requests() - before;
        eprintln!("{case}: {to_open} requests to open ({} records)", source.len());
        assert!(to_open <= bound, "{case}: {to_open} requests to open, more than {bound}");
    }
}

/// Every chunk file under the cache directory `dir`.
fn cached_chunks(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for sub in std::fs::read_dir(dir.join("chunks")).unwrap().flatten() {
        files.extend(std::fs::read_dir(sub.path()).unwrap().flatten().map(|f| f.path()));
    }
    files
}

/// Reads every record of `source` in random batches of 256, checking each.
fn check_a_pass(source: &dyn RecordSource, records: &[Vec<u8>], seed: u64) {
    let order = conformance::shuffled(records.len() as u64, seed);
    for batch in order.chunks(256) {
        let got = read_batch(source, batch).unwrap();
        for (k, &i) in batch.iter().enumerate() {
            assert_eq!(got[k], records[i as usize], "record {i}");
        }
    }
}

/// With a local cache, a second pass makes no request; a new open of the same dataset with
/// the same cache reads its records without a request beyond the open's; damaged and
/// truncated chunk files are found and fetched again, never returned.
#[test]
fn a_second_pass_reads_from_the_local_cache() {
    let dir = tempfile::tempdir().unwrap();
    let records = ffrecord_dataset(dir.path(), 2000, 1024);
    let server = HttpServer::start(dir.path());
    let url = format!("{}/data", server.url());
    let cache_dir = tempfile::tempdir().unwrap();
    let cache = CacheSettings { chunk_bytes: 64 << 10, ..CacheSettings::new(cache_dir.path()) };
    let settings = ReadSettings { cache: Some(cache), ..ReadSettings::default() };
    let source = reel::open_with(&url, &options(settings.clone())).unwrap();
    let before = server.requests();
    check_a_pass(&*source, &records, 1);
    assert!(server.requests() > before, "the first pass fetched nothing");
    let before = server.requests();
    check_a_pass(&*source, &records, 2);
    assert_eq!(server.requests() - before, 0, "requests in the second pass");

    let before = server.requests();
    let again = reel::open_with(&url, &options(settings.clone())).unwrap();
    let to_open = server.requests() - before;
    check_a_pass(&*again, &records, 3);
    assert_eq!(server.requests() - before, to_open, "a new open read records from the store");

    // Damage: a flipped byte in each chunk file's last block, then each file cut short.
    let chunks = cached_chunks(cache_dir.path());
    assert!(chunks.len() >= 20, "{} chunk files", chunks.len());
    for path in &chunks {
        let mut bytes = std::fs::read(path).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 0x10;
        std::fs::write(path, bytes).unwrap();
    }
    let before = server.gets();
    check_a_pass(&*again, &records, 4);
    assert!(server.gets() > before, "damaged chunks were not fetched again");
    for path in cached_chunks(cache_dir.path()) {
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
    }
    let before = server.gets();
    check_a_pass(&*again, &records, 5);
    assert!(server.gets() > before, "truncated chunks were not fetched again");
    // And whole again: the pass after the repairs is free.
    let before = server.requests();
    check_a_pass(&*again, &records, 6);
    assert_eq!(server.requests() - before, 0);
}

/// A cache smaller than the dataset stays within its bound and still reads right.
#[test]
fn the_local_cache_stays_within_its_bound() {
    let dir = tempfile::tempdir().unwrap();
    let records = ffrecord_dataset(dir.path(), 2000, 1024);
    let server = HttpServer::start(dir.path());
    let url = format!("{}/data", server.url());
    let cache_dir = tempfile::tempdir().unwrap();
    let bound = 300 << 10;
    let cache = CacheSettings {
        chunk_bytes: 16 << 10,
        max_bytes: bound,
        ..CacheSettings::new(cache_dir.path())
    };
    let settings = ReadSettings { cache: Some(cache), ..ReadSettings::default() };
    let source = reel::open_with(&url, &options(settings)).unwrap();
    for seed in 0..2 {
        check_a_pass(&*source, &records, seed);
        let held: u64 = cached_chunks(cache_dir.path())
            .iter()
            .map(|p| std::fs::metadata(p).unwrap().len())
            .sum();
        assert!(held <= bound, "the cache holds {held} bytes, over its bound of {bound}");
        assert!(held > bound / 2, "the cache holds only {held} bytes");
    }
}

/// Parquet and Arrow IPC files read in place over HTTP (sniffed by their first bytes there),
/// record for record as from disk, one by one and in a random batch.
#[test]
fn parquet_and_arrow_ipc_files_read_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let records = ffrecord_dataset(dir.path(), 3000, 1024);
    let src = dir.path().join("data");
    let server = HttpServer::start(dir.path());
    for (name, format) in
        [("t.parquet", reel::Format::Parquet), ("t.arrow", reel::Format::ArrowIpc)]
    {
        let local = dir.path().join(name);
        reel::convert(&src, &local, &reel::ConvertOptions::new(format)).unwrap();
        let url = format!("{}/{name}", server.url());
        let here = reel::open(&local).unwrap();
        let there = reel::open_with(&url, &options(ReadSettings::default()))
            .unwrap_or_else(|e| panic!("{url}: {e}"));
        assert_eq!(there.info().format, here.info().format, "{name}");
        assert_eq!(there.len(), records.len() as u64, "{name}");
        for i in 0..here.len() {
            assert!(there.read(i).unwrap() == here.read(i).unwrap(), "{name} record {i}");
        }
        let batch = [2999, 0, 1500, 7, 2998];
        let want: Vec<Vec<u8>> = batch.iter().map(|&i| records[i as usize].clone()).collect();
        assert_eq!(read_batch(&*there, &batch).unwrap(), want, "{name}");
    }
}

/// An Arrow IPC file of 3,000 records in batches of 100, served over HTTP from `dir`: its
/// records, the server, the local file and the source opened from its URL. Small batches, so
/// that the records the tests read lie in batches opening did not read.
fn ipc_over_http(dir: &Path) -> (Vec<Vec<u8>>, HttpServer, PathBuf, Box<dyn RecordSource>) {
    let records = ffrecord_dataset(dir, 3000, 1024);
    let server = HttpServer::start(dir);
    let local = dir.join("t.arrow");
    let mut convert = reel::ConvertOptions::new(reel::Format::ArrowIpc);
    convert.arrow.arrow.batch_rows = 100;
    reel::convert(dir.join("data"), &local, &convert).unwrap();
    let url = format!("{}/t.arrow", server.url());
    let source = reel::open_with(&url, &options(ReadSettings::default())).unwrap();
    (records, server, local, source)
}

/// An Arrow IPC file's object gone after it was opened: the read fails as `NotFound`, the
/// store's own kind, naming the object (not a generic I/O failure).
#[test]
fn an_arrow_ipc_object_gone_after_open_is_not_found() {
    let dir = tempfile::tempdir().unwrap();
    let (_, _server, local, there) = ipc_over_http(dir.path());
    std::fs::remove_file(&local).unwrap();
    let e = there.read(2500).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
    assert!(e.to_string().contains("t.arrow"), "{e}");
}

/// A random batch from an Arrow IPC file reads each record batch it touches once, however
/// its records are ordered (one range request each), and returns them in the order asked.
#[test]
fn a_random_batch_reads_each_ipc_record_batch_once() {
    let dir = tempfile::tempdir().unwrap();
    let (records, server, _, there) = ipc_over_http(dir.path());
    // Records of IPC batches 25 and 1, alternating, one of them twice.
    let batch = [2500, 150, 2510, 160, 2520, 150];
    let before = server.gets();
    let got = read_batch(&*there, &batch).unwrap();
    assert_eq!(server.gets() - before, 2, "range requests for a batch touching two IPC batches");
    let want: Vec<Vec<u8>> = batch.iter().map(|&i| records[i as usize].clone()).collect();
    assert_eq!(got, want);
}
