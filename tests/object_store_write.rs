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

    // Nor with overwrite, since they are no dataset: replacing deletes all of them.
    let overwrite = on_server.clone().overwrite(true);
    let e = reel::create("s3://dropped/ds", Format::Gulp, &overwrite).err().unwrap();
    assert!(e.to_string().contains("other than a dataset"), "{e}");
    store.delete(&ObjectPath::from("ds/other")).unwrap();

    // With overwrite, a new dataset replaces an old one (none of its objects is left).
    let mut old = reel::create("s3://dropped/ds", Format::Ofrecord, &on_server).unwrap();
    old.append(reel::Record::new().with_bytes("payload", b"old").view()).unwrap();
    old.finish().unwrap();
    let mut sink = reel::create("s3://dropped/ds", Format::Gulp, &overwrite).unwrap();
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
    assert!(!keys.contains(&"ds/part-00000".to_string()), "{keys:?}");
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

    // A worker still writing when its job is discarded (Ray does not wait for the tasks it
    // cancels): its part goes up after the discard, finds the job's marker gone, removes
    // itself and fails; a part started after the discard is refused at once.
    let dst = Path::new("s3://parts/out/late");
    let staging = parts_staging(dst, &options).unwrap();
    assert!(keys("out").iter().any(|k| k.contains(".late.reel-staging-")), "no marker");
    let location = staged_part(&staging, 3);
    let (mut sink, _) = reel::create_part(&location, Format::Gulp, 0, 1, &options).unwrap();
    sink.append(src.read(0).unwrap().view()).unwrap();
    discard_staging(&staging, &options).unwrap();
    let e = sink.finish().unwrap_err();
    assert_eq!(e.kind(), reel::ErrorKind::Closed, "{e}");
    drop(sink);
    let e = reel::create_part(&location, Format::Gulp, 0, 1, &options).err().unwrap();
    assert_eq!(e.kind(), reel::ErrorKind::Closed, "{e}");
    let left: Vec<_> = keys("out").into_iter().filter(|k| k.contains(".late.")).collect();
    assert_eq!(left, Vec::<String>::new(), "a late part outlived its job's discard");
}

/// Keys under `prefix`, in name order.
fn keys_under(store: &Store, prefix: &str) -> Vec<String> {
    let mut keys: Vec<String> = store
        .list(&ObjectPath::from(prefix))
        .unwrap()
        .into_iter()
        .map(|(k, _)| k.to_string())
        .collect();
    keys.sort();
    keys
}

/// Waits (at most 20 s) until every key of `want` is under `prefix`.
fn wait_for_keys(store: &Store, prefix: &str, want: &[&str]) -> Vec<String> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let keys = keys_under(store, prefix);
        if want.iter().all(|w| keys.iter().any(|k| k == w)) {
            return keys;
        }
        assert!(std::time::Instant::now() < deadline, "{want:?} never appeared: {keys:?}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// How many files called `file` this process stages for datasets named `name` (in
/// `$REEL_STAGING_DIR/.reel-upload-*/.<name>.reel-tmp-*/`).
fn staged_copies(name: &str, file: &str) -> usize {
    let root =
        std::env::var_os("REEL_STAGING_DIR").map(PathBuf::from).unwrap_or_else(std::env::temp_dir);
    let entries = |dir: &Path| -> Vec<PathBuf> {
        std::fs::read_dir(dir).map(|d| d.flatten().map(|e| e.path()).collect()).unwrap_or_default()
    };
    let named = |p: &Path, prefix: &str| {
        p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with(prefix))
    };
    let tmp_prefix = format!(".{name}.reel-tmp-{}-", std::process::id());
    entries(&root)
        .iter()
        .filter(|d| named(d, ".reel-upload-"))
        .flat_map(|d| entries(d))
        .filter(|d| named(d, &tmp_prefix))
        .filter(|d| d.join(file).exists())
        .count()
}

/// Data files a writer completes before the dataset is finished (OFRecord parts, GulpIO2
/// chunks) go up while it writes; nothing opens until finish sends the rest, the objects
/// that make it openable last; a writer dropped after early uploads removes them; an
/// overwrite removes the old dataset before the first new object goes up.
#[test]
#[ignore = "needs the moto S3 server; .ci/run runs them"]
fn sealed_files_go_up_while_the_dataset_is_written() {
    let server = MotoServer::start().unwrap();
    server.create_bucket("stream").unwrap();
    let mut on_server = reel::CreateOptions::default();
    on_server.store = server.options();
    let from_s3 = reel::OpenOptions::default().store_options(server.options());
    let store = Store::new(&ObjectUrl::parse("s3://stream/x").unwrap(), &server.options()).unwrap();
    let dir = tempfile::tempdir().unwrap();

    // GulpIO2: chunks of 100 videos (what reel::create writes when the count is unknown).
    let golden_videos = reel::open(golden("gulpio2/many_chunks")).unwrap();
    let frames = golden_videos.read(0).unwrap();
    let frames = frames.get("frames").unwrap();
    let video =
        |i: u64| reel::Record::new().with_str("id", &format!("v{i}")).with_value("frames", frames);
    let mut sink = reel::create("s3://stream/gulp", Format::Gulp, &on_server).unwrap();
    for i in 0..250 {
        sink.append(video(i).view()).unwrap();
    }
    let early = wait_for_keys(&store, "gulp", &["gulp/data_0.gulp", "gulp/data_1.gulp"]);
    assert_eq!(early, ["gulp/data_0.gulp", "gulp/data_1.gulp"], "only data goes up early");
    // Their local copies are removed; the chunk being written is still there.
    let staged = |name: &str| staged_copies("gulp", name);
    assert_eq!(staged("data_2.gulp"), 1, "the open chunk is not staged where expected");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while staged("data_0.gulp") + staged("data_1.gulp") > 0 {
        assert!(std::time::Instant::now() < deadline, "uploaded chunks stay on local disk");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(reel::open_with("s3://stream/gulp", &from_s3).is_err(), "opens before finish");
    sink.finish().unwrap();
    assert_eq!(keys_under(&store, "gulp").len(), 6);
    let back = reel::open_with("s3://stream/gulp", &from_s3).unwrap();
    assert_eq!(back.len(), 250);
    let mut ids: Vec<String> = (0..250)
        .map(|i| back.read(i).unwrap().get("id").unwrap().as_str().unwrap().to_string())
        .collect();
    ids.sort();
    let mut want: Vec<String> = (0..250).map(|i| format!("v{i}")).collect();
    want.sort();
    assert_eq!(ids, want);

    // OFRecord, two records a part: the first part is held back until finish.
    let mut per_two = on_server.clone();
    per_two.ofrecord = reel::ofrecord::OfrecordWriterOptions::default().max_records_per_part(2);
    let record =
        |i: u64| reel::Record::new().with_bytes("payload", format!("record {i}").as_bytes());
    let local = dir.path().join("ofrecord");
    let mut expected = reel::create(&local, Format::Ofrecord, &per_two).unwrap();
    let mut sink = reel::create("s3://stream/ofr", Format::Ofrecord, &per_two).unwrap();
    for i in 0..9 {
        sink.append(record(i).view()).unwrap();
        expected.append(record(i).view()).unwrap();
    }
    expected.finish().unwrap();
    let early =
        wait_for_keys(&store, "ofr", &["ofr/part-00001", "ofr/part-00002", "ofr/part-00003"]);
    assert_eq!(early, ["ofr/part-00001", "ofr/part-00002", "ofr/part-00003"]);
    assert!(reel::open_with("s3://stream/ofr", &from_s3).is_err(), "opens before finish");
    sink.finish().unwrap();
    assert_eq!(keys_under(&store, "ofr").len(), 5);
    let back = reel::open_with("s3://stream/ofr", &from_s3).unwrap();
    let expected = reel::open(&local).unwrap();
    assert_eq!(back.len(), 9);
    for i in 0..9 {
        assert!(back.read(i).unwrap() == expected.read(i).unwrap(), "record {i}");
    }

    // Granular with a part size: shards, whose record bags go up as each shard closes (the
    // indexes and specs, which make a shard open, wait for finish).
    let mut sharded = on_server.clone().part_size(Format::Granular, 4000).unwrap();
    sharded.schema = None;
    let blob = |i: u64| reel::Record::new().with_bytes("blob", &[i as u8; 1000]);
    let mut sink = reel::create("s3://stream/gran", Format::Granular, &sharded).unwrap();
    for i in 0..20 {
        sink.append(blob(i).view()).unwrap();
    }
    let early = wait_for_keys(&store, "gran", &["gran/000000/blob.bag", "gran/000001/blob.bag"]);
    assert!(early.iter().all(|k| k.ends_with(".bag")), "{early:?}");
    assert!(reel::open_with("s3://stream/gran", &from_s3).is_err(), "opens before finish");
    sink.finish().unwrap();
    let back = reel::open_with("s3://stream/gran", &from_s3).unwrap();
    assert_eq!(back.len(), 20);
    for i in 0..20 {
        assert_eq!(
            back.read(i).unwrap().get("blob").unwrap().as_bytes(),
            Some(&[i as u8; 1000][..])
        );
    }
    assert!(keys_under(&store, "gran").iter().any(|k| k == "gran/000003/spec.json"));

    // Dropped after early uploads: what went up is removed.
    {
        let mut sink = reel::create("s3://stream/dropped", Format::Ofrecord, &per_two).unwrap();
        for i in 0..7 {
            sink.append(record(i).view()).unwrap();
        }
        wait_for_keys(&store, "dropped", &["dropped/part-00001"]);
    }
    assert_eq!(keys_under(&store, "dropped"), Vec::<String>::new());

    // An overwrite: nothing goes up early, so the old dataset stays whole until finish (a
    // writer that fails leaves it as it was), and none of its parts is left over.
    let mut per_three = per_two.clone().overwrite(true);
    per_three.ofrecord = reel::ofrecord::OfrecordWriterOptions::default().max_records_per_part(3);
    let old = keys_under(&store, "ofr");
    assert_eq!(old.len(), 5);
    let mut sink = reel::create("s3://stream/ofr", Format::Ofrecord, &per_three).unwrap();
    for i in 0..7 {
        sink.append(record(i + 100).view()).unwrap();
    }
    assert_eq!(keys_under(&store, "ofr"), old, "the old dataset changed before finish");
    sink.finish().unwrap();
    let new = ["ofr/part-00000", "ofr/part-00001", "ofr/part-00002"];
    assert_eq!(keys_under(&store, "ofr"), new);
    let back = reel::open_with("s3://stream/ofr", &from_s3).unwrap();
    assert_eq!(back.len(), 7);
    // A replacing writer dropped unfinished leaves the dataset it would have replaced.
    {
        let mut sink = reel::create("s3://stream/ofr", Format::Ofrecord, &per_three).unwrap();
        for i in 0..7 {
            sink.append(record(i + 200).view()).unwrap();
        }
    }
    assert_eq!(keys_under(&store, "ofr"), new);
    let back = reel::open_with("s3://stream/ofr", &from_s3).unwrap();
    assert_eq!(back.len(), 7);
    let first = back.read(0).unwrap();
    let kept = match first.get("payload") {
        Some(reel::ValueRef::List(items)) => items.iter().next().and_then(|v| v.as_bytes()),
        _ => None,
    };
    assert_eq!(kept, Some(&b"record 100"[..]), "the old records were not kept");

    // A prefix that holds no dataset (a user's notes and models) is not replaced, as a
    // local directory is not: replacing would delete every object under it.
    let mine = ["proj/keep/model.pt", "proj/notes.txt"];
    for key in mine {
        store.put(&reel::store::ObjectPath::from(key), "keep me".into()).unwrap();
    }
    let refused = reel::create("s3://stream/proj", Format::Ofrecord, &per_three).err();
    let e = refused.expect("a prefix holding no dataset was replaced");
    assert!(e.to_string().contains("other than a dataset"), "{e}");
    assert_eq!(keys_under(&store, "proj"), mine);
}
