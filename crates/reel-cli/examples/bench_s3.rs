//! Issue 20's S3 benchmark: random batches of 256 records of 1 KiB and 64 KiB from moto's S3
//! server (a separate process on 127.0.0.1) behind `FaultProxy` adding 0 ms and 20 ms of
//! latency to every answer, through `reel bench URL`, which measures reel's batched reads
//! beside the same records read one request at a time (what an `s3fs`/`fsspec` file object
//! does under a reference reader). The same runs against the loopback HTTP test server
//! (`tests/common/http_server.rs`), which, unlike moto, serves requests in parallel as S3
//! does, show what a batch costs in round trips when the server is not the limit.
//!
//! ```sh
//! cargo build --release -p reel-cli --bin reel --example bench_s3
//! REEL_TEST_MOTO_PYTHON=/path/to/python-with-moto target/release/examples/bench_s3 [SECS [REEL BENCH OPTIONS]]
//! ```
//!
//! It starts moto, the HTTP server and the proxy itself, writes the datasets (FFRecord
//! directories of parts) to a bucket and a temporary directory, runs
//! `target/release/reel bench` (or `$REEL_BIN`) once per store, record size and latency, and
//! prints one table. Everything stays on loopback and stops when it ends.
#![allow(clippy::print_stdout, clippy::print_stderr)]

#[path = "../../../tests/common/http_server.rs"]
mod http_server;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use reel::{CreateOptions, Format, Record, RecordSink};
use reel_store::testing::{FaultProxy, Faults, MotoServer};

/// Record sizes, how many of each a dataset holds (16 MiB and 128 MiB) and in how many
/// FFRecord part files (1 and 2 MiB). moto reads an object whole to answer a ranged GET of
/// it, so with one large object its server time per request would grow with the dataset
/// and swamp what is measured.
const DATASETS: [(usize, u64, u64); 2] = [(1 << 10, 16_384, 16), (64 << 10, 2_048, 64)];
const BUCKET: &str = "reel-bench";

fn main() -> reel::Result<()> {
    let secs: f64 = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(3.0);
    // Further arguments go to `reel bench` (e.g. `--concurrency 256`).
    let extra: Vec<String> = std::env::args().skip(2).collect();
    let reel_bin = std::env::var_os("REEL_BIN").map(PathBuf::from).unwrap_or_else(|| {
        // target/release/examples/bench_s3 → target/release/reel
        let exe = std::env::current_exe().unwrap_or_default();
        exe.parent().and_then(|d| d.parent()).map(|d| d.join("reel")).unwrap_or_default()
    });
    let moto = MotoServer::start()?;
    moto.create_bucket(BUCKET)?;
    let local = tempfile::tempdir().map_err(|e| reel::Error::io(e, "no temporary directory"))?;
    let mut to_moto = CreateOptions::default();
    to_moto.store = moto.options();
    for (size, records, parts) in DATASETS {
        eprintln!("writing {records} records of {size} bytes in {parts} parts, twice");
        write_dataset(
            &PathBuf::from(format!("s3://{BUCKET}/r{size}")),
            size,
            records,
            parts,
            &to_moto,
        )?;
        let dir = local.path().join(format!("r{size}"));
        write_dataset(&dir, size, records, parts, &CreateOptions::default())?;
    }
    let http = http_server::HttpServer::start(local.path());
    let moto_proxy = FaultProxy::start(&moto.endpoint())?;
    let http_proxy = FaultProxy::start(&http.url())?;

    println!(
        "| server | record | latency | reel batched, records/s | one request per record, records/s | × | requests/batch (reel / one each) | ms/batch (reel) | batch ÷ latency | batch in round trips |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    for (server, proxy) in [("moto S3", &moto_proxy), ("HTTP", &http_proxy)] {
        for (size, ..) in DATASETS {
            for latency_ms in [0u64, 20] {
                proxy.set_faults(Faults {
                    latency: Duration::from_millis(latency_ms),
                    ..Faults::default()
                });
                let mut cmd = Command::new(&reel_bin);
                cmd.args(["bench", "--json", "--batch", "256", "--secs", &secs.to_string()]);
                cmd.args(&extra);
                if server == "HTTP" {
                    cmd.arg(format!("{}/r{size}", proxy.endpoint()));
                } else {
                    cmd.arg(format!("s3://{BUCKET}/r{size}"));
                    for (name, value) in moto.env() {
                        cmd.env(name, value);
                    }
                    cmd.env("AWS_ENDPOINT_URL", proxy.endpoint());
                }
                let rows = run_json(&mut cmd)?;
                print_row(server, size, latency_ms, &rows);
            }
        }
    }
    Ok(())
}

/// Writes `records` records of `size` random bytes as an FFRecord directory of `parts`
/// parts at `dir` (a path or a URL).
fn write_dataset(
    dir: &Path,
    size: usize,
    records: u64,
    parts: u64,
    create: &CreateOptions,
) -> reel::Result<()> {
    let mut rng = reel::synth::SplitMix::new(size as u64);
    let mut payload = vec![0u8; size];
    let mut record = Record::new();
    for k in 0..parts {
        let each = create.clone().records(records / parts);
        let (mut sink, _) = reel::create_part(dir, Format::Ffrecord, k, parts, &each)?;
        for _ in 0..records / parts {
            for chunk in payload.chunks_mut(8) {
                chunk.copy_from_slice(&rng.next_u64().to_le_bytes()[..chunk.len()]);
            }
            record.clear();
            record.push_bytes("data", &payload);
            sink.append(record.view())?;
        }
        sink.finish()?;
    }
    Ok(())
}

/// Runs `reel bench --json` and returns its rows.
fn run_json(cmd: &mut Command) -> reel::Result<serde_json::Value> {
    let out = cmd.output().map_err(|e| reel::Error::io(e, "cannot run reel bench"))?;
    if !out.status.success() {
        return Err(reel::Error::invalid_input(format!(
            "reel bench failed: {}",
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    serde_json::from_slice(&out.stdout)
        .map_err(|e| reel::Error::invalid_input(format!("reel bench printed no JSON: {e}")))
}

fn print_row(server: &str, size: usize, latency_ms: u64, rows: &serde_json::Value) {
    let row = |reader: &str| {
        rows.as_array()
            .and_then(|rows| rows.iter().find(|r| r["reader"] == reader))
            .cloned()
            .unwrap_or_default()
    };
    let (batched, single) = (row("reel, batched"), row("one request per record"));
    let num = |v: &serde_json::Value, key: &str| v[key].as_f64().unwrap_or(f64::NAN);
    let batch_ms = num(&batched, "ms_per_batch");
    let per_latency =
        if latency_ms > 0 { format!("{:.2}", batch_ms / latency_ms as f64) } else { String::new() };
    println!(
        "| {server} | {} KiB | {latency_ms} ms | {:.0} | {:.0} | {:.1} | {:.1} / {:.1} | {batch_ms:.1} | {per_latency} | {:.2} |",
        size >> 10,
        num(&batched, "records_per_sec"),
        num(&single, "records_per_sec"),
        num(&batched, "records_per_sec") / num(&single, "records_per_sec"),
        num(&batched, "requests_per_batch"),
        num(&single, "requests_per_batch"),
        num(&batched, "round_trips_per_batch"),
    );
}
