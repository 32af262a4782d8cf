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
        // The files' sizes are the objects' sizes, as on disk.
        let inspect: serde_json::Value = serde_json::from_str(&inspect).unwrap();
        let local_inspect = stdout(reel().args(["inspect", "--json"]).arg(&case));
        let local_inspect: serde_json::Value = serde_json::from_str(&local_inspect).unwrap();
        assert!(inspect["bytes"].as_u64().unwrap() > 0, "{rel}: {inspect}");
        assert_eq!(inspect["bytes"], local_inspect["bytes"], "{rel}");
        let sizes = |v: &serde_json::Value| {
            v["files"].as_array().unwrap().iter().map(|f| f["size"].clone()).collect::<Vec<_>>()
        };
        assert_eq!(sizes(&inspect), sizes(&local_inspect), "{rel}");
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
    assert!(err.contains("no such object"), "{err}");
    // A server that lists nothing (no WebDAV) still tells a missing object from a failure:
    // the object is missing, whatever the refused listing would have said.
    server.refuse_listings();
    let url = format!("{}/nothing/else.ffr", server.url());
    let out = reel().args(["cat"]).arg(&url).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&url) && err.contains("no such object"), "{err}");
    assert!(err.contains("does not list"), "{err}");
    // The URL's port is free and may itself contain "405": look at the rest of the message.
    let without_url = err.replace(&url, "");
    assert!(!without_url.contains("405"), "the server's refusal is not the news: {err}");
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

/// `reel bench URL`: reel's batched reads beside one request per record, over the loopback
/// HTTP server; a batch costs a few coalesced requests where the baseline makes one per
/// record, and both rows say so.
#[test]
fn bench_measures_a_dataset_by_url() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d.ffr");
    let generate = reel()
        .args(["generate", "--quiet", "--format", "ffrecord", "--records", "3000"])
        .args(["--max-record", "2048"])
        .arg(&data)
        .output()
        .unwrap();
    assert!(generate.status.success(), "{}", String::from_utf8_lossy(&generate.stderr));
    let server = HttpServer::start(dir.path());
    let url = format!("{}/d.ffr", server.url());
    let rows =
        stdout(reel().args(["bench", "--secs", "0.1", "--batch", "128", "--json"]).arg(&url));
    let rows: Vec<serde_json::Value> = serde_json::from_str(&rows).unwrap();
    let row = |reader: &str| rows.iter().find(|r| r["reader"] == reader).unwrap().clone();
    let (batched, single) = (row("reel, batched"), row("one request per record"));
    for r in [&batched, &single] {
        assert_eq!(r["mode"], "remote");
        assert!(r["records_per_sec"].as_f64().unwrap() > 0.0, "{r}");
        // The object is large enough for a 1-byte GET in its middle to be timed.
        assert!(r["round_trips_per_batch"].as_f64().unwrap() > 0.0, "{r}");
        assert_eq!(r["served_from_memory"], false, "{r}");
    }
    // 128 random records of ~1 KiB out of 3000 (~3 MB) coalesce into a few requests; one
    // request per record makes one for each record outside the 64 KiB ends the store keeps.
    let batched_requests = batched["requests_per_batch"].as_f64().unwrap();
    let single_requests = single["requests_per_batch"].as_f64().unwrap();
    assert!(batched_requests <= 8.0, "{batched}");
    assert!(single_requests >= 100.0, "{single}");

    // The table has the per-batch columns and not the local yardsticks' ratios.
    let table = stdout(reel().args(["bench", "--secs", "0.05", "--batch", "64"]).arg(&url));
    for column in ["requests/batch", "ms/batch", "round trips/batch", "one request per record"] {
        assert!(table.contains(column), "{column}: {table}");
    }
    assert!(!table.contains("×pread"), "{table}");

    // An object the store fetches whole at open makes no request while measured: both
    // rows say they measured memory, in the table and in JSON (they read "0.00
    // requests/batch" as if the store were that fast).
    let small = dir.path().join("small.ffr");
    let generate = reel()
        .args(["generate", "--quiet", "--format", "ffrecord", "--records", "20"])
        .args(["--max-record", "256"])
        .arg(&small)
        .output()
        .unwrap();
    assert!(generate.status.success(), "{}", String::from_utf8_lossy(&generate.stderr));
    let small_url = format!("{}/small.ffr", server.url());
    let out = reel()
        .args(["bench", "--secs", "0.05", "--batch", "8", "--json"])
        .arg(&small_url)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(rows.len(), 2);
    for r in &rows {
        assert_eq!(r["served_from_memory"], true, "{r}");
        assert!(r["note"].as_str().unwrap().contains("served from memory"), "{r}");
    }
    assert!(String::from_utf8_lossy(&out.stderr).contains("not the object store"));
    let table = stdout(reel().args(["bench", "--secs", "0.05", "--batch", "8"]).arg(&small_url));
    assert!(table.contains("these rows measure memory, not the object store"), "{table}");

    // A URL with no dataset behind it is an error naming it.
    let out = reel().args(["bench"]).arg(format!("{}/none.ffr", server.url())).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("none.ffr"));
}

/// `--retries 0` fails at the first refused connection, at once, with the cause in the
/// message (object_store's text ends at "error sending request"); with the default
/// retries a refused connection took 2–48 s per request.
#[test]
fn retries_zero_fails_at_the_first_refused_connection() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    for command in ["inspect", "cat", "verify"] {
        let url = format!("http://127.0.0.1:{port}/");
        let started = std::time::Instant::now();
        let out = reel().args([command, "--retries", "0"]).arg(&url).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{command}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(&url) && err.contains("Connection refused"), "{command}: {err}");
        assert!(started.elapsed() < std::time::Duration::from_secs(10), "{command}");
    }
    // Writing too: `convert` and `generate` into a bucket whose endpoint refuses.
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src.ffr");
    stdout(reel().args(["generate", "--quiet", "--records", "5"]).arg(&src));
    let writes: [&[&str]; 2] = [
        &["convert", "--quiet", "--to", "ffrecord", src.to_str().unwrap(), "s3://b/copy.ffr"],
        &["generate", "--quiet", "--records", "5", "s3://b/made.ffr"],
    ];
    for args in writes {
        let started = std::time::Instant::now();
        let out = reel()
            .args(args)
            .args(["--retries", "0"])
            .env("AWS_ENDPOINT_URL", format!("http://127.0.0.1:{port}"))
            .env("AWS_ALLOW_HTTP", "true")
            .env("AWS_ACCESS_KEY_ID", "test")
            .env("AWS_SECRET_ACCESS_KEY", "test")
            .env("AWS_REGION", "us-east-1")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("Connection refused"), "{args:?}: {err}");
        // With the default, object_store says how often it tried ("after 10 retries").
        assert!(!err.contains("retries"), "{args:?}: {err}");
        assert!(started.elapsed() < std::time::Duration::from_secs(10), "{args:?}");
    }
}
