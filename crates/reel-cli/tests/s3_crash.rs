//! A writer killed while it uploads to object storage leaves either nothing that opens or
//! the complete dataset, never a partial one: `reel generate` to an `s3://` address on a
//! moto server is killed with SIGKILL at moments spread over its upload (watched on the
//! server), and what the bucket holds is opened in place and after download. Ignored by a plain `cargo test`; `.ci/run` runs it with
//! `--ignored` and `REEL_TEST_MOTO_PYTHON` set (README, "Object storage").
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use reel::RecordSourceExt;
use reel::store::testing::MotoServer;
use reel::store::{ObjectUrl, Store};

/// FFRecord: large enough (about 49 MB) that the file goes up in several multipart parts
/// of 16 MiB. Gulp: 30 chunks (60 objects), four going up at a time.
fn records(format: &str) -> u64 {
    if format == "gulp" { 12_000 } else { 24_000 }
}
const MAX_RECORD: usize = 4096;

/// `reel generate` of `format` to `out`, staging in `staging` (the test's own directory: a
/// killed run leaves its staged records there, tens of MB each).
fn generate(server: &MotoServer, format: &str, out: &str, staging: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_reel"));
    c.args(["generate", "--quiet", "--format", format, "--records", &records(format).to_string()])
        .args(["--max-record", &MAX_RECORD.to_string(), out])
        .envs(server.env())
        .env("REEL_STAGING_DIR", staging)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    c
}

/// Downloads what is at or under `url` into `dir`; `None` when nothing is there.
fn download(store: &Store, url: &ObjectUrl, dir: &Path) -> Option<PathBuf> {
    let key = url.path();
    std::fs::create_dir_all(dir).unwrap();
    let local = dir.join(key.filename().unwrap());
    let under = store.list(key).unwrap();
    if under.is_empty() {
        let bytes = match store.read_all(key) {
            Ok(b) => b,
            Err(e) if e.kind() == reel::ErrorKind::NotFound => return None,
            Err(e) => panic!("{e}"),
        };
        std::fs::write(&local, bytes).unwrap();
        return Some(local);
    }
    for (object, _) in under {
        let rel = object.as_ref().strip_prefix(key.as_ref()).unwrap().trim_start_matches('/');
        let path = local.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, store.read_all(&object).unwrap()).unwrap();
    }
    Some(local)
}

/// Whether the upload to `url` has begun: an object under its key (a directory dataset), or
/// a multipart upload in progress for it (the large single file).
fn upload_started(server: &MotoServer, store: &Store, url: &ObjectUrl) -> bool {
    let key = url.path().as_ref();
    !store.list(url.path()).unwrap().is_empty()
        || server.pending_uploads("crash").unwrap().iter().any(|k| k.starts_with(key))
}

/// Runs `command` until its upload to `url` starts; returns the child and when it started,
/// or `None` (with the child reaped) if it exited first.
fn until_upload(
    server: &MotoServer,
    store: &Store,
    url: &ObjectUrl,
    command: &mut Command,
) -> (std::process::Child, Option<Instant>) {
    let mut child = command.spawn().unwrap();
    loop {
        if upload_started(server, store, url) {
            return (child, Some(Instant::now()));
        }
        if child.try_wait().unwrap().is_some() {
            return (child, None);
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn crash_while_uploading(format: &str, suffix: &str) {
    let records = records(format);
    let server = MotoServer::start().unwrap();
    server.create_bucket("crash").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let staging = tempfile::tempdir().unwrap();
    let store = Store::new(&ObjectUrl::parse("s3://crash/x").unwrap(), &server.options()).unwrap();
    let from_s3 = reel::OpenOptions::default().store_options(server.options());

    // An uninterrupted run: how long its upload takes, and what it reads back as.
    let complete = format!("s3://crash/complete-{format}{suffix}");
    let url = ObjectUrl::parse(&complete).unwrap();
    let (mut child, started) = until_upload(
        &server,
        &store,
        &url,
        &mut generate(&server, format, &complete, staging.path()),
    );
    let status = child.wait().unwrap();
    if !status.success() {
        let mut why = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut why).unwrap();
        panic!("reel generate {complete} failed ({status}): {why}");
    }
    let upload_time = started.expect("the upload was seen").elapsed();
    let local = download(&store, &url, &dir.path().join("complete")).unwrap();
    let expected = reel::open(&local).unwrap();
    assert_eq!(expected.len(), records);

    // Killed at moments spread over the upload: what is in the bucket then either does not
    // open (in place or downloaded) or is the whole dataset.
    const KILLS: u32 = 10;
    let mut killed_uploading = 0;
    for step in 0..KILLS {
        let out = format!("s3://crash/killed-{step}-{format}{suffix}");
        let url = ObjectUrl::parse(&out).unwrap();
        let (mut child, started) = until_upload(
            &server,
            &store,
            &url,
            &mut generate(&server, format, &out, staging.path()),
        );
        if started.is_some() {
            // Spread over the first 80% of the run: the end varies from run to run.
            std::thread::sleep(upload_time * 4 * step / (5 * KILLS));
            if child.try_wait().unwrap().is_none() {
                killed_uploading += 1;
            }
        }
        child.kill().unwrap();
        child.wait().unwrap();
        let opened_in_place = reel::open_with(&out, &from_s3);
        let target = dir.path().join(format!("killed-{step}"));
        let downloaded = download(&store, &url, &target).map(|local| reel::open(&local));
        for (how, opened) in [("in place", Some(opened_in_place)), ("downloaded", downloaded)] {
            let Some(Ok(src)) = opened else { continue };
            assert_eq!(
                src.len(),
                records,
                "kill {step}, {how}: a killed upload left a partial dataset"
            );
            for i in (0..records).step_by(97) {
                assert!(
                    src.read(i).unwrap() == expected.read(i).unwrap(),
                    "kill {step}, {how}: {i}"
                );
            }
        }
    }
    eprintln!("{format}: upload {upload_time:?}, {killed_uploading} of {KILLS} kills during it");
    assert!(
        killed_uploading >= 3,
        "only {killed_uploading} of {KILLS} kills landed while the upload ran"
    );
}

#[test]
#[ignore = "needs the moto S3 server; .ci/run runs them"]
fn a_killed_ffrecord_upload_leaves_nothing_or_everything() {
    crash_while_uploading("ffrecord", ".ffr");
}

#[test]
#[ignore = "needs the moto S3 server; .ci/run runs them"]
fn a_killed_gulp_upload_leaves_nothing_or_everything() {
    crash_while_uploading("gulp", "");
}
