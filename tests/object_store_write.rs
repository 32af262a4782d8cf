//! Writing datasets to object storage, against a real S3 protocol server (moto) on loopback:
//! every format converted to `s3://…` by `reel::convert`, downloaded, and read back by reel
//! (and, in `written_datasets_read_by_the_reference`, by the reference readers through
//! `refread`). Ignored by a plain `cargo test`: `.ci/run` runs them with `--ignored` and
//! `REEL_TEST_MOTO_PYTHON` set; see the README's "Object storage" section to run them by hand.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

use reel::store::testing::MotoServer;
use reel::store::{ObjectPath, ObjectUrl, Store};
use reel::{ConvertOptions, Format, RecordSink, RecordSourceExt};

fn golden(rel: &str) -> PathBuf {
    let root = std::env::var_os("REEL_GOLDEN_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/golden"));
    root.join(rel)
}

/// (label, golden source, target format, reference reader name for refread).
fn cases() -> Vec<(&'static str, &'static str, Format, Option<&'static str>)> {
    vec![
        ("ffrecord", "ffrecord/normal/data.ffr", Format::Ffrecord, Some("ffrecord")),
        ("syrah", "syrah/normal/data.syr", Format::Syrah, Some("syrah")),
        ("ofrecord", "ofrecord/normal", Format::Ofrecord, Some("ofrecord")),
        ("granular", "granular/granular-0.24.2/normal", Format::Granular, Some("granular")),
        ("bags", "granular/bags-0.5.1/normal", Format::Bags, Some("bags")),
        ("gulp", "gulpio2/many_chunks", Format::Gulp, Some("gulpio2")),
        ("parquet", "ffrecord/normal/data.ffr", Format::Parquet, None),
        ("arrow", "ffrecord/normal/data.ffr", Format::ArrowIpc, None),
    ]
}

/// Downloads everything at or under `url` into `dir`, as the dataset's file or directory.
fn download(store: &Store, url: &ObjectUrl, dir: &Path) -> PathBuf {
    let key = url.path();
    let name = key.filename().unwrap().to_string();
    let local = dir.join(&name);
    let under = store.list(key).unwrap();
    if under.is_empty() {
        std::fs::write(&local, store.read_all(key).unwrap()).unwrap();
        return local;
    }
    for (object, _) in under {
        let rel = object.as_ref().strip_prefix(key.as_ref()).unwrap().trim_start_matches('/');
        let path = local.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, store.read_all(&object).unwrap()).unwrap();
    }
    local
}

struct Written {
    label: &'static str,
    local: PathBuf,
    reference: Option<&'static str>,
}

/// Converts every case to the server and downloads the results into `dir`, checking each
/// reads back as the source's records.
fn write_every_format(server: &MotoServer, dir: &Path) -> Vec<Written> {
    server.create_bucket("written").unwrap();
    let mut out = Vec::new();
    for (label, src, format, reference) in cases() {
        let src = golden(src);
        let ext = match format {
            Format::Ffrecord => ".ffr",
            Format::Syrah => ".syr",
            Format::Parquet => ".parquet",
            Format::ArrowIpc => ".arrow",
            _ => "",
        };
        let address = format!("s3://written/datasets/{label}{ext}");
        let mut options = ConvertOptions::new(format);
        options.output_store = server.options();
        let report =
            reel::convert(&src, &address, &options).unwrap_or_else(|e| panic!("{label}: {e}"));
        assert_eq!(report.outputs, [PathBuf::from(&address)], "{label}");
        let url = ObjectUrl::parse(&address).unwrap();
        let store = Store::new(&url, &server.options()).unwrap();
        let local = download(&store, &url, dir);
        let source = reel::open(&src).unwrap();
        let copy = reel::open(&local).unwrap_or_else(|e| panic!("{label}: {e}"));
        assert_eq!(copy.len(), source.len(), "{label}");
        let from_s3 = reel::OpenOptions::default().store_options(server.options());
        if matches!(format, Format::Parquet | Format::ArrowIpc) {
            // Arrow targets add an index column and map types; the count and the readable
            // records are what this test checks for them.
            for i in 0..source.len() {
                copy.read(i).unwrap();
            }
            // In place from the bucket (sniffed there too) they read as the downloaded copy.
            let remote = reel::open_with(&address, &from_s3)
                .unwrap_or_else(|e| panic!("{label}: opening {address}: {e}"));
            assert_eq!(remote.len(), copy.len(), "{label} read from S3");
            for i in 0..copy.len() {
                assert!(remote.read(i).unwrap() == copy.read(i).unwrap(), "{label} record {i}");
            }
        } else {
            // The same dataset read in place, from the bucket.
            let remote = reel::open_with(&address, &from_s3)
                .unwrap_or_else(|e| panic!("{label}: opening {address}: {e}"));
            assert_eq!(remote.len(), source.len(), "{label} read from S3");
            for i in 0..source.len() {
                let want = source.read(i).unwrap();
                assert!(copy.read(i).unwrap() == want, "{label} record {i}");
                assert!(remote.read(i).unwrap() == want, "{label} record {i} read from S3");
            }
        }
        out.push(Written { label, local, reference });
    }
    out
}

#[test]
#[ignore = "needs the moto S3 server; .ci/run runs them"]
fn every_format_written_to_s3_reads_back() {
    let server = MotoServer::start().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let written = write_every_format(&server, dir.path());
    assert_eq!(written.len(), cases().len());
}

/// The same datasets read by the reference implementations. Needs `REEL_REFREAD` (the
/// developers' `refread` tool, not part of this repository) and fails without it; run by
/// `tests/refread_s3.sh`.
#[test]
#[ignore = "needs the moto S3 server and REEL_REFREAD; run by tests/refread_s3.sh"]
fn written_datasets_read_by_the_reference() {
    let refread = std::env::var_os("REEL_REFREAD")
        .expect("REEL_REFREAD must name the refread tool (see tests/refread_s3.sh)");
    let server = MotoServer::start().unwrap();
    let dir = tempfile::tempdir().unwrap();
    for w in write_every_format(&server, dir.path()) {
        let Some(reader) = w.reference else { continue };
        let out = std::process::Command::new(&refread).arg(reader).arg(&w.local).output().unwrap();
        assert!(
            out.status.success(),
            "{}: the reference could not read what reel wrote to S3: {}{}",
            w.label,
            String::from_utf8_lossy(&out.stdout).lines().last().unwrap_or(""),
            String::from_utf8_lossy(&out.stderr)
        );
        let source = reel::open(&w.local).unwrap();
        let lines = String::from_utf8_lossy(&out.stdout).lines().count() as u64;
        assert_eq!(lines, source.len(), "{}: records the reference read", w.label);
    }
}

#[test]
#[ignore = "needs the moto S3 server; .ci/run runs them"]
fn a_dropped_or_failed_writer_leaves_nothing() {
    let server = MotoServer::start().unwrap();
    server.create_bucket("dropped").unwrap();
    let mut on_server = reel::CreateOptions::default();
    on_server.store = server.options();
    let url = ObjectUrl::parse("s3://dropped/ds").unwrap();
    let store = Store::new(&url, &server.options()).unwrap();
    let src = reel::open(golden("gulpio2/many_chunks")).unwrap();

    // Dropped before finish: nothing is uploaded.
    {
        let mut sink = reel::create("s3://dropped/ds", Format::Gulp, &on_server).unwrap();
        for i in 0..src.len() {
            sink.append(src.read(i).unwrap().view()).unwrap();
        }
    }
    assert!(store.list(&ObjectPath::from("")).unwrap().is_empty());

    // Existing objects are refused unless overwrite is asked for.
    store.put(&ObjectPath::from("ds/other"), vec![1u8].into()).unwrap();
    let e = reel::create("s3://dropped/ds", Format::Gulp, &on_server).err().unwrap();
    assert_eq!(e.kind(), reel::ErrorKind::InvalidInput, "{e}");
    assert!(e.to_string().contains("s3://dropped/ds"), "{e}");

    // With overwrite, the new dataset replaces the old objects (none is left behind).
    let mut sink =
        reel::create("s3://dropped/ds", Format::Gulp, &on_server.clone().overwrite(true)).unwrap();
    for i in 0..src.len() {
        sink.append(src.read(i).unwrap().view()).unwrap();
    }
    sink.finish().unwrap();
    let keys: Vec<String> = store
        .list(&ObjectPath::from("ds"))
        .unwrap()
        .into_iter()
        .map(|(k, _)| k.to_string())
        .collect();
    assert!(!keys.contains(&"ds/other".to_string()), "{keys:?}");
    assert!(keys.contains(&"ds/meta_0.gmeta".to_string()), "{keys:?}");

    // A bucket that does not exist: the writer fails (when it is made or at finish) and
    // names the address.
    let mut no_retries = on_server.clone();
    no_retries.store.retry.max_retries = 0;
    let mut sink = reel::create("s3://no-such-bucket/ds", Format::Ffrecord, &no_retries);
    if let Ok(sink) = &mut sink {
        sink.append(src.read(0).unwrap().view()).unwrap();
        let e = sink.finish().unwrap_err();
        assert!(e.to_string().contains("s3://no-such-bucket"), "{e}");
    } else {
        let e = sink.err().unwrap();
        assert!(e.to_string().contains("s3://no-such-bucket"), "{e}");
    }
}

/// A dataset written in parts by several workers into a bucket (`reel::parts`, what Ray's
/// sink and distributed convert drive): each part is uploaded under the job's staging
/// prefix, nothing is at the destination until `publish_parts`, which copies the parts
/// under their final names and deletes the staging objects; `discard_staging` of a failed
/// job deletes everything its workers uploaded.
#[test]
#[ignore = "needs the moto S3 server; .ci/run runs them"]
fn parts_written_by_workers_are_published_in_one_step() {
    use reel::parts::{StagedPart, discard_staging, parts_staging, publish_parts, staged_part};

    let server = MotoServer::start().unwrap();
    server.create_bucket("parts").unwrap();
    let mut options = reel::CreateOptions::default();
    options.store = server.options();
    let store = Store::new(&ObjectUrl::parse("s3://parts/x").unwrap(), &server.options()).unwrap();
    let keys = |prefix: &str| -> Vec<String> {
        store
            .list(&ObjectPath::from(prefix))
            .unwrap()
            .into_iter()
            .map(|(k, _)| k.to_string())
            .collect()
    };
    let cases = [
        (Format::Gulp, "gulpio2/many_chunks", "s3://parts/out/gulp"),
        (Format::Granular, "granular/granular-0.24.2/normal", "s3://parts/out/granular"),
    ];
    for (format, source, dst) in cases {
        let src = reel::open(golden(source)).unwrap();
        let n = src.len();
        assert!(n >= 3, "{source}");
        let dst = Path::new(dst);
        let staging = parts_staging(dst, &options).unwrap();
        assert!(
            staging.to_str().unwrap().starts_with("s3://parts/out/.gulp.reel-staging-")
                || staging.to_str().unwrap().starts_with("s3://parts/out/.granular.reel-staging-")
        );
        // Three workers, each writing its share as part 0 of 1 (it does not know the count).
        let mut parts = Vec::new();
        for (task, range) in [(4u64, 0..1), (9, 1..n - 1), (12, n - 1..n)] {
            let location = staged_part(&staging, task);
            let (mut sink, _) = reel::create_part(&location, format, 0, 1, &options).unwrap();
            for i in range {
                sink.append(src.read(i).unwrap().view()).unwrap();
            }
            sink.finish().unwrap();
            parts.push(StagedPart { location, written_as: (0, 1) });
        }
        let dst_key = dst.to_str().unwrap().trim_start_matches("s3://parts/");
        assert_eq!(keys(dst_key), Vec::<String>::new(), "{format:?}: visible before publishing");
        publish_parts(&staging, format, &parts, dst, &options).unwrap();
        let back =
            reel::open_with(dst, &reel::OpenOptions::default().store_options(server.options()))
                .unwrap_or_else(|e| panic!("{format:?}: {e}"));
        assert_eq!(back.len(), n, "{format:?}");
        for i in 0..n {
            assert!(back.read(i).unwrap() == src.read(i).unwrap(), "{format:?} record {i}");
        }
        assert!(keys("out").iter().all(|k| !k.contains(".reel-staging-")), "{:?}", keys("out"));
    }
    // Publishing again over an existing dataset is refused without overwrite.
    let dst = Path::new("s3://parts/out/gulp");
    let e = parts_staging(dst, &options).unwrap_err();
    assert_eq!(e.kind(), reel::ErrorKind::InvalidInput, "{e}");

    // A failed job: what its workers uploaded is deleted, nothing appears.
    let src = reel::open(golden("gulpio2/many_chunks")).unwrap();
    let dst = Path::new("s3://parts/out/failed");
    let staging = parts_staging(dst, &options).unwrap();
    let (mut sink, _) =
        reel::create_part(&staged_part(&staging, 0), Format::Gulp, 0, 1, &options).unwrap();
    sink.append(src.read(0).unwrap().view()).unwrap();
    sink.finish().unwrap();
    assert!(keys("out").iter().any(|k| k.contains(".failed.reel-staging-")));
    discard_staging(&staging, &options).unwrap();
    assert!(
        keys("out").iter().all(|k| !k.contains(".reel-staging-") && !k.starts_with("out/failed"))
    );
    // Only staging locations are discarded.
    assert!(discard_staging(Path::new("s3://parts/out/gulp"), &options).is_err());
    assert_eq!(keys("out/gulp").len(), 2 * 3);
}
