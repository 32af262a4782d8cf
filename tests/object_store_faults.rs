//! Reads through a fault-injecting proxy (`reel_store::testing::FaultProxy`) that sits
//! between reel and a server the test starts: the HTTP test server here, and moto's S3
//! server in the `#[ignore]`d tests that `.ci/run` runs with `--ignored`. Under latency,
//! `503 SlowDown` and `429` answers, connections cut mid-body and short bodies, a read
//! returns the right bytes after retries or fails with an error naming the object and the
//! range, within its deadline: never wrong bytes, never a hang.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
#[path = "common/ffrecord_data.rs"]
mod ffrecord_data;
#[path = "common/http_server.rs"]
mod http_server;

use std::time::{Duration, Instant};

use ffrecord_data::{ffrecord_dataset, read_batch};
use http_server::HttpServer;
use reel::store::testing::{FaultProxy, Faults, MotoServer};
use reel::store::{ReadSettings, StoreOptions};
use reel::testing::conformance;
use reel::{ErrorKind, OpenOptions};

/// Settings that make reel's own retry loop (not object_store's) meet every fault, quickly.
fn options(store: StoreOptions, settings: ReadSettings) -> OpenOptions {
    let mut store = store;
    store.retry.max_retries = 0;
    store.timeout = Duration::from_secs(5);
    OpenOptions::default().store_options(store).read_settings(settings)
}

fn http_options() -> StoreOptions {
    StoreOptions { use_env: false, ..StoreOptions::default() }.with("allow_http", "true")
}

/// Each fault, alone and mixed, while random batches are read: every record right.
fn faults_give_the_right_bytes(
    url: &str,
    store: StoreOptions,
    proxy: &FaultProxy,
    records: &[Vec<u8>],
) {
    let settings = ReadSettings {
        coalesce_gap: 0,
        initial_backoff: Duration::from_millis(5),
        attempts: 8,
        ..ReadSettings::default()
    };
    let source = reel::open_with(url, &options(store, settings)).unwrap();
    let n = records.len() as u64;
    let faults = [
        Faults { unavailable_every: 3, ..Faults::default() },
        Faults { throttle_every: 4, ..Faults::default() },
        Faults { cut_every: 3, ..Faults::default() },
        Faults { short_every: 2, ..Faults::default() },
        Faults {
            latency: Duration::from_millis(20),
            unavailable_every: 7,
            cut_every: 5,
            short_every: 11,
            ..Faults::default()
        },
    ];
    for (k, f) in faults.into_iter().enumerate() {
        proxy.set_faults(f.clone());
        let indices = conformance::shuffled(n, k as u64)[..60].to_vec();
        let got = read_batch(&*source, &indices).unwrap_or_else(|e| panic!("{f:?}: {e}"));
        for (j, &i) in indices.iter().enumerate() {
            assert_eq!(got[j], records[i as usize], "{f:?}: record {i}");
        }
    }
    proxy.set_faults(Faults::default());
}

/// A fault on every request: an I/O error naming the URL and the record's byte range,
/// within a bounded time.
fn persistent_faults_fail_clearly(url: &str, store: StoreOptions, proxy: &FaultProxy, range: &str) {
    let settings = ReadSettings {
        initial_backoff: Duration::from_millis(1),
        attempts: 3,
        request_timeout: Duration::from_millis(500),
        ..ReadSettings::default()
    };
    let source = reel::open_with(url, &options(store, settings)).unwrap();
    for f in [
        Faults { unavailable_every: 1, ..Faults::default() },
        Faults { throttle_every: 1, ..Faults::default() },
        Faults { short_every: 1, ..Faults::default() },
        Faults { cut_every: 1, ..Faults::default() },
        Faults { hang: true, ..Faults::default() },
    ] {
        proxy.set_faults(f.clone());
        let started = Instant::now();
        let e = read_batch(&*source, &[90]).unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(10), "{f:?} took {:?}", started.elapsed());
        assert_eq!(e.kind(), ErrorKind::Io, "{f:?}: {e}");
        let text = e.to_string();
        assert!(text.contains(url), "{f:?}: {text}");
        assert!(text.contains(range), "{f:?}: {text}");
    }
    proxy.set_faults(Faults::default());
}

#[test]
fn http_through_the_fault_proxy() {
    let dir = tempfile::tempdir().unwrap();
    // Record 90 of 1000-byte records lies past the first 64 KiB, which opening keeps.
    let records = ffrecord_dataset(dir.path(), 300, 1000);
    let server = HttpServer::start(dir.path());
    let proxy = FaultProxy::start(&server.url()).unwrap();
    let url = format!("{}/data", proxy.endpoint());
    faults_give_the_right_bytes(&url, http_options(), &proxy, &records);
    persistent_faults_fail_clearly(&url, http_options(), &proxy, "cannot read bytes 93612..94612");
}

/// A server that never answers costs one request deadline, not one per try of reel's own
/// loop on top of object_store's retries (with the defaults, a deadline of a minute and a
/// client timeout of 30 s, that was five minutes): while object_store's timeout is well
/// inside the deadline it retried within it, and reel sends the request no more. When the
/// two are alike (a user's `timeout` sets both), object_store had no time to retry, and reel
/// does.
#[test]
fn a_server_that_never_answers_costs_one_deadline() {
    let dir = tempfile::tempdir().unwrap();
    ffrecord_dataset(dir.path(), 300, 1000);
    let server = HttpServer::start(dir.path());
    let proxy = FaultProxy::start(&server.url()).unwrap();
    let url = format!("{}/data", proxy.endpoint());
    let deadline = Duration::from_millis(800);
    for (client_timeout, reel_retries) in [(deadline / 4, false), (deadline, true)] {
        let mut store = http_options();
        store.timeout = client_timeout;
        let settings =
            ReadSettings { attempts: 3, request_timeout: deadline, ..Default::default() };
        let options = OpenOptions::default().store_options(store).read_settings(settings);
        let source = reel::open_with(&url, &options).unwrap();
        proxy.set_faults(Faults { hang: true, ..Faults::default() });
        let started = Instant::now();
        let e = read_batch(&*source, &[90]).unwrap_err();
        let took = started.elapsed();
        assert_eq!(e.kind(), ErrorKind::Io, "{e}");
        let text = e.to_string();
        assert!(text.contains("record 90"), "{text}");
        if reel_retries {
            assert!(text.contains("gave up after 3 tries"), "{text}");
        } else {
            assert!(!text.contains("tries"), "{text}");
            assert!(took < deadline * 2, "{took:?}: more than one deadline");
        }
        proxy.set_faults(Faults::default());
    }
}

/// A port on 127.0.0.1 that nothing listens on (bound, then released).
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// A store that does not answer (a refused connection) is an I/O error that says so, from
/// a dataset path and from the root of the store alike. At the root, recognising the format
/// asks yes-or-no questions, which used to take the refusal for "no" and report "cannot
/// tell the format", after one retry cycle per question (41 s with the default retries).
/// A store that answers "not found" there still reads as no dataset.
#[test]
fn a_store_that_does_not_answer_is_an_error_not_an_unknown_format() {
    let port = closed_port();
    let mut store = http_options();
    store.retry.max_retries = 0;
    let options = OpenOptions::default().store_options(store);
    for url in [format!("http://127.0.0.1:{port}/"), format!("http://127.0.0.1:{port}/data.ffr")] {
        let started = Instant::now();
        let e = reel::open_with(&url, &options).err().unwrap();
        assert_eq!(e.kind(), ErrorKind::Io, "{url}: {e}");
        let text = e.to_string();
        assert!(text.contains("Connection refused") && !text.contains("cannot tell"), "{text}");
        assert!(e.path().is_some_and(|p| p.to_string_lossy().contains(&port.to_string())), "{e}");
        assert!(started.elapsed() < Duration::from_secs(10), "{url}: {:?}", started.elapsed());
    }

    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("README"), b"not a dataset").unwrap();
    let server = HttpServer::start(dir.path());
    let e = reel::open_with(format!("{}/", server.url()), &options).err().unwrap();
    assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
    assert!(e.to_string().contains("cannot tell the format"), "{e}");
}

/// A read whose requests hang is cancelled from another thread ([`reel::io::cancel`]): it
/// ends with a `Closed` error at once, abandoning the requests in flight, instead of
/// waiting out the deadlines and retries (three attempts of 5 s here).
#[test]
fn a_cancelled_read_abandons_its_hanging_requests() {
    use reel::io::cancel::CancelFlag;
    let dir = tempfile::tempdir().unwrap();
    let records = ffrecord_dataset(dir.path(), 300, 1000);
    let server = HttpServer::start(dir.path());
    let proxy = FaultProxy::start(&server.url()).unwrap();
    let url = format!("{}/data", proxy.endpoint());
    let cache_dir = tempfile::tempdir().unwrap();
    let cache = reel::store::CacheSettings::new(cache_dir.path());
    // Without the local chunk cache and with it (whose batches store chunks as they come).
    for cache in [None, Some(cache)] {
        let settings = ReadSettings { attempts: 3, cache, ..ReadSettings::default() };
        let source = reel::open_with(&url, &options(http_options(), settings)).unwrap();
        proxy.set_faults(Faults { hang: true, ..Faults::default() });
        let flag = CancelFlag::new();
        let raise = {
            let flag = flag.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(200));
                flag.cancel();
            })
        };
        let started = Instant::now();
        let e = flag.scope(|| read_batch(&*source, &[90, 200])).unwrap_err();
        let took = started.elapsed();
        raise.join().unwrap();
        assert_eq!(e.kind(), ErrorKind::Closed, "{e}");
        assert!(took < Duration::from_secs(4), "the cancelled read took {took:?}");
        // Nothing is left broken: the same source reads once the faults are gone.
        proxy.set_faults(Faults::default());
        let got = read_batch(&*source, &[90, 200]).unwrap();
        assert_eq!(got, [records[90].clone(), records[200].clone()]);
    }
}

#[test]
#[ignore = "needs the moto S3 server; .ci/run runs it"]
fn s3_through_the_fault_proxy() {
    let moto = MotoServer::start().unwrap();
    moto.create_bucket("faults").unwrap();
    let proxy = FaultProxy::start(&moto.endpoint()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let records = ffrecord_dataset(dir.path(), 300, 1000);
    // Uploaded straight to moto; read through the proxy.
    let upload = reel::store::Store::new(
        &reel::store::ObjectUrl::parse("s3://faults/data").unwrap(),
        &moto.options(),
    )
    .unwrap();
    let bytes = std::fs::read(dir.path().join("data")).unwrap();
    upload.put(&reel::store::ObjectPath::from("data"), bytes.into()).unwrap();
    let through = moto.options_through(&proxy.endpoint());
    let url = "s3://faults/data";
    faults_give_the_right_bytes(url, through.clone(), &proxy, &records);
    persistent_faults_fail_clearly(url, through, &proxy, "cannot read bytes 93612..94612");
}

/// A data file that fails to go up while its dataset is written (the store answers 503 to
/// every write) fails the writer with an error naming the object; finish refuses, and
/// nothing is left in the bucket.
#[test]
#[ignore = "needs the moto S3 server; .ci/run runs it"]
fn a_failed_early_upload_fails_the_writer_and_leaves_nothing() {
    use reel::RecordSink;
    let moto = MotoServer::start().unwrap();
    moto.create_bucket("faults").unwrap();
    let proxy = FaultProxy::start(&moto.endpoint()).unwrap();
    let mut options = reel::CreateOptions::default();
    options.store = moto.options_through(&proxy.endpoint());
    options.store.retry.max_retries = 0;
    options.ofrecord = reel::ofrecord::OfrecordWriterOptions::default().max_records_per_part(1);
    let mut sink = reel::create("s3://faults/streamed", reel::Format::Ofrecord, &options).unwrap();
    proxy.set_faults(Faults { refuse_writes: true, ..Faults::default() });
    let record = reel::Record::new().with_bytes("payload", b"bytes");
    let started = Instant::now();
    let mut failure = None;
    for _ in 0..50 {
        if let Err(e) = sink.append(record.view()) {
            failure = Some(e);
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let e = failure.expect("a writer whose uploads fail kept accepting records");
    assert!(started.elapsed() < Duration::from_secs(30), "took {:?}", started.elapsed());
    assert_eq!(e.kind(), ErrorKind::Io, "{e}");
    assert!(e.to_string().contains("s3://faults/streamed/part-0000"), "{e}");
    let e = sink.finish().unwrap_err();
    assert!(e.to_string().contains("upload"), "{e}");
    proxy.set_faults(Faults::default());
    drop(sink);
    let store = reel::store::Store::new(
        &reel::store::ObjectUrl::parse("s3://faults/streamed").unwrap(),
        &moto.options(),
    )
    .unwrap();
    assert!(store.list(&reel::store::ObjectPath::from("streamed")).unwrap().is_empty());
}
