//! The `reel` command on datasets addressed by URL: a loopback HTTP server with range support
//! (started here) serves golden datasets, and `inspect`, `cat`, `verify` and `convert` read them
//! by `http://` URL exactly as they read them from disk.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../../../tests/common/http_server.rs"]
mod http_server;

use assert_cmd::Command;
use http_server::HttpServer;

fn reel() -> Command {
    Command::cargo_bin("reel").unwrap()
}

fn stdout(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn commands_read_urls_as_they_read_paths() {
    let root = reel_core::testing::golden::golden_root();
    let server = HttpServer::start(&root);
    for rel in
        ["ffrecord/multi_file/parts", "syrah/normal", "granular/granular-0.24.2/images", "gulpio2"]
    {
        let local = root.join(rel);
        if !local.exists() {
            continue;
        }
        let case = if rel == "gulpio2" {
            // The first GulpIO2 case that is a directory of chunks.
            let mut dirs: Vec<_> = std::fs::read_dir(&local)
                .unwrap()
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.join("meta_0.gmeta").exists())
                .collect();
            dirs.sort();
            dirs.remove(0)
        } else {
            local
        };
        let rel = case.strip_prefix(&root).unwrap().display().to_string();
        let url = format!("{}/{rel}", server.url());
        let cat =
            |target: &str| stdout(reel().args(["cat", "--json", "--bytes", "hex"]).arg(target));
        assert_eq!(cat(&url), cat(case.to_str().unwrap()), "{rel}: cat");
        let inspect = stdout(reel().args(["inspect", "--json"]).arg(&url));
        assert!(inspect.contains("\"records\""), "{rel}: {inspect}");
        let verify = reel().args(["verify", "--quiet"]).arg(&url).output().unwrap();
        assert!(verify.status.success(), "{rel}: {}", String::from_utf8_lossy(&verify.stderr));

        let out = tempfile::tempdir().unwrap();
        let dst = out.path().join("copy.ffr");
        let convert =
            reel().args(["convert", "--quiet", "--to", "ffrecord"]).arg(&url).arg(&dst).output();
        let convert = convert.unwrap();
        if convert.status.success() {
            let local_copy = out.path().join("local.ffr");
            stdout(
                reel().args(["convert", "--quiet", "--to", "ffrecord"]).arg(&case).arg(&local_copy),
            );
            assert_eq!(std::fs::read(&dst).unwrap(), std::fs::read(&local_copy).unwrap(), "{rel}");
        }
    }
}

#[test]
fn a_missing_object_is_an_error_naming_the_url() {
    let dir = tempfile::tempdir().unwrap();
    let server = HttpServer::start(dir.path());
    let url = format!("{}/nothing/here.ffr", server.url());
    let out = reel().args(["cat"]).arg(&url).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&url), "{err}");
}

/// Two `reel cat` processes reading one dataset over HTTP at once, sharing one cache
/// directory, print what `reel cat` prints from disk; a third run reads its records from
/// the cache (no GET beyond what opening costs).
#[test]
fn two_processes_share_one_cache() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data.ffr");
    stdout(
        reel()
            .args(["generate", "--quiet", "--format", "ffrecord", "--records", "3000"])
            .args(["--max-record", "2048"])
            .arg(&data),
    );
    let server = HttpServer::start(dir.path());
    let url = format!("{}/data.ffr", server.url());
    let cache = tempfile::tempdir().unwrap();
    let cat = |target: &str| {
        let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("reel"));
        cmd.args(["cat", "--json", "--bytes", "hex", "--cache"]).arg(cache.path());
        cmd.args(["--cache-size", "64M"]).arg(target);
        cmd.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
        cmd.spawn().unwrap()
    };
    let local = stdout(reel().args(["cat", "--json", "--bytes", "hex"]).arg(&data));
    let (a, b) = (cat(&url), cat(&url));
    for child in [a, b] {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert!(String::from_utf8(out.stdout).unwrap() == local, "a shared-cache read differs");
    }
    let gets = server.gets();
    let out = cat(&url).wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8(out.stdout).unwrap() == local);
    // Opening asks for the file's first 64 KiB; the records come from the cache.
    assert!(server.gets() - gets <= 1, "{} GETs with a full cache", server.gets() - gets);
}
