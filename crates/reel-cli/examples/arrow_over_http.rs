//! What reading an Arrow IPC (or Parquet) file of many record batches costs over HTTP with 20 ms of
//! latency per answer: `reel inspect URL`'s time and requests, twice, then random batches
//! of 256 records (`reel bench URL`). Opening reads every batch's header (for its row
//! count), and a batched read reads every batch it touches; the program shows whether
//! those reads go out together or one round trip after another.
//!
//! ```sh
//! cargo build --release -p reel-cli --bin reel --example arrow_over_http
//! target/release/examples/arrow_over_http [RECORDS [BATCH_BYTES [arrow|parquet|FILE]]]
//! ```
//!
//! It writes RECORDS (default 30,000) records of up to 200 bytes with
//! `target/release/reel` (or `$REEL_BIN`) and converts them to an IPC file of batches of
//! BATCH_BYTES (default `10K`: about 300 batches; `parquet` writes a Parquet file of row
//! groups of that size instead; a FILE is served as it is), serves it from the loopback
//! HTTP test server behind `FaultProxy`, and stops both when it ends.
#![allow(clippy::print_stdout, clippy::print_stderr)]

#[path = "../../../tests/common/http_server.rs"]
mod http_server;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use reel_store::testing::{FaultProxy, Faults};

fn main() -> reel::Result<()> {
    let records = std::env::args().nth(1).unwrap_or_else(|| "30000".into());
    let batch_bytes = std::env::args().nth(2).unwrap_or_else(|| "10K".into());
    let to = std::env::args().nth(3).unwrap_or_else(|| "arrow".into());
    let reel_bin = std::env::var_os("REEL_BIN").map(PathBuf::from).unwrap_or_else(|| {
        // target/release/examples/arrow_over_http → target/release/reel
        let exe = std::env::current_exe().unwrap_or_default();
        exe.parent().and_then(|d| d.parent()).map(|d| d.join("reel")).unwrap_or_default()
    });
    let dir = tempfile::tempdir().map_err(|e| reel::Error::io(e, "no temporary directory"))?;
    let name = match to.as_str() {
        "arrow" => "t.arrow".to_string(),
        "parquet" => "t.parquet".to_string(),
        // A file of the user's (an IPC stream, a Hugging Face `datasets` file …), served as
        // it is.
        file => {
            let name = Path::new(file)
                .file_name()
                .ok_or_else(|| reel::Error::invalid_input(format!("{file}: not a file")))?
                .to_string_lossy()
                .into_owned();
            std::fs::copy(file, dir.path().join(&name))
                .map_err(|e| reel::Error::io(e, format!("cannot copy {file}")))?;
            name
        }
    };
    if to == "arrow" || to == "parquet" {
        let ffr = dir.path().join("d.ffr");
        let generate = ["generate".as_ref(), ffr.as_os_str(), "--records".as_ref()];
        let sizes = ["--max-record".as_ref(), "200".as_ref(), "--quiet".as_ref()];
        run(&reel_bin, &[&generate[..], &[records.as_ref()], &sizes[..]].concat())?;
        let out = dir.path().join(&name);
        let convert = ["convert".as_ref(), ffr.as_os_str(), out.as_os_str(), "--to".as_ref()];
        let bytes = [to.as_ref(), "--batch-bytes".as_ref(), batch_bytes.as_ref()];
        let groups = ["--row-group-bytes".as_ref(), batch_bytes.as_ref()];
        run(&reel_bin, &[&convert[..], &bytes[..], &groups[..]].concat())?;
    }
    let http = http_server::HttpServer::start(dir.path());
    let proxy = FaultProxy::start(&http.url())?;
    proxy.set_faults(Faults { latency: Duration::from_millis(20), ..Faults::default() });
    let url = format!("{}/{name}", proxy.endpoint());
    for _ in 0..2 {
        let before = proxy.requests();
        let start = Instant::now();
        run(&reel_bin, &["inspect".as_ref(), url.as_ref()])?;
        println!(
            "reel inspect {url}: {:.2} s, {} requests",
            start.elapsed().as_secs_f64(),
            proxy.requests() - before
        );
    }
    // Random batches of 256 (`reel bench URL`), beside one request per record.
    let status = Command::new(&reel_bin)
        .args(["bench", &url, "--batch", "256", "--secs", "3"])
        .status()
        .map_err(|e| reel::Error::io(e, format!("cannot run {}", reel_bin.display())))?;
    if !status.success() {
        return Err(reel::Error::invalid_input(format!("reel bench failed: {status}")));
    }
    Ok(())
}

/// Runs `reel ARGS` with its standard output discarded; an error if it fails.
fn run(reel_bin: &Path, args: &[&std::ffi::OsStr]) -> reel::Result<()> {
    let status = Command::new(reel_bin)
        .args(args)
        .stdout(Stdio::null())
        .status()
        .map_err(|e| reel::Error::io(e, format!("cannot run {}", reel_bin.display())))?;
    if status.success() {
        Ok(())
    } else {
        Err(reel::Error::invalid_input(format!("reel {args:?} failed: {status}")))
    }
}
