//! A writer killed while it uploads to object storage leaves either nothing that opens or
//! the complete dataset, never a partial one: `reel generate` to an `s3://` address on a
//! moto server is killed with SIGKILL at moments spread over its run, and what the bucket
//! holds is downloaded and opened. Ignored by a plain `cargo test`; `.ci/run` runs it with
//! `--ignored` and `REEL_TEST_MOTO_PYTHON` set (README, "Object storage").
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use reel::RecordSourceExt;
use reel::store::testing::MotoServer;
use reel::store::{ObjectUrl, Store};

/// Large enough that the upload takes several multipart parts (16 MiB each).
const RECORDS: u64 = 24_000;
const MAX_RECORD: usize = 4096;

fn generate(server: &MotoServer, format: &str, out: &str) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_reel"));
    c.args(["generate", "--quiet", "--format", format, "--records", &RECORDS.to_string()])
        .args(["--max-record", &MAX_RECORD.to_string(), out])
        .envs(server.env())
        .env("REEL_STAGING_DIR", std::env::temp_dir())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    c
}

/// Downloads what is at or under `url` into `dir`; `None` when nothing is there.
fn download(store: &Store, url: &ObjectUrl, dir: &Path) -> Option<PathBuf> {
    let key = url.path();
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

fn crash_while_uploading(format: &str, suffix: &str) {
    let server = MotoServer::start().unwrap();
    server.create_bucket("crash").unwrap();
    let dir = tempfile::tempdir().unwrap();

    // An uninterrupted run: how long a write takes, and what it reads back as.
    let complete = format!("s3://crash/complete-{format}{suffix}");
    let started = Instant::now();
    assert!(generate(&server, format, &complete).status().unwrap().success());
    let full_run = started.elapsed();
    let url = ObjectUrl::parse(&complete).unwrap();
    let store = Store::new(&url, &server.options()).unwrap();
    let local = download(&store, &url, &dir.path().join("complete")).unwrap();
    let expected = reel::open(&local).unwrap();
    assert_eq!(expected.len(), RECORDS);

    let mut killed_running = 0;
    for step in 1..=12u32 {
        let out = format!("s3://crash/killed-{step}-{format}{suffix}");
        let mut child = generate(&server, format, &out).spawn().unwrap();
        std::thread::sleep(full_run * step / 12);
        if child.try_wait().unwrap().is_none() {
            killed_running += 1;
        }
        child.kill().unwrap();
        child.wait().unwrap();
        let url = ObjectUrl::parse(&out).unwrap();
        let target = dir.path().join(format!("killed-{step}"));
        std::fs::create_dir_all(&target).unwrap();
        let Some(local) = download(&store, &url, &target) else { continue };
        if let Ok(src) = reel::open(&local) {
            assert_eq!(src.len(), RECORDS, "step {step}: a killed upload left a partial dataset");
            for i in (0..RECORDS).step_by(997) {
                assert!(src.read(i).unwrap() == expected.read(i).unwrap(), "step {step}: {i}");
            }
        }
    }
    assert!(killed_running >= 6, "only {killed_running} kills landed while the writer ran");
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
