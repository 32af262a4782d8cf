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
