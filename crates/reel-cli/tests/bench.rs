//! `reel bench`, driven as a user would: which options it honours, refuses and reports.
//! Nothing here asserts a timing, only rows, labels, notes and exit codes; one test needs two
//! timed batches within its budget (see `cold_rows_on_a_small_dataset_say_when_they_are_partly_warm`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::process::Output;

use assert_cmd::Command;

fn reel() -> Command {
    Command::cargo_bin("reel").unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `reel bench` with `args`, expected to fail as a usage error (exit 2, not a panic's 101)
/// with a message containing `words`.
fn refuses(args: &[&str], words: &str) {
    let out = reel().arg("bench").args(args).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
    assert!(stderr(&out).contains(words), "{args:?}: {}", stderr(&out));
    assert!(!stderr(&out).contains("panicked"), "{args:?}: {}", stderr(&out));
}

/// Generates a dataset of `records` records of `format` (at most `max` bytes each) at `path`.
fn generate(path: &Path, format: &str, records: u64, max: u64) {
    let out = reel()
        .args(["generate", "--quiet", "--format", format])
        .args(["--records", &records.to_string(), "--max-record", &max.to_string()])
        .arg(path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn a_record_size_of_zero_is_refused() {
    // It divided by zero (a panic) while sizing the dataset.
    refuses(&["--sizes", "1k,0", "--mode", "warm", "--no-fio", "--data", "1m"], "--sizes 0");
}

/// Output into a pipe closed early ends the run quietly (SIGPIPE's 141 from a shell), not
/// with a panic: the table was printed with `println!`.
#[test]
fn a_closed_pipe_ends_the_run_without_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d.ffr");
    generate(&data, "ffrecord", 300, 256);
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("reel"))
        .arg("bench")
        .arg(&data)
        .args(["--mode", "warm", "--secs", "0.1", "--no-fio", "--backends", "pread"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take()); // the reader goes away before anything is printed
    let out = child.wait_with_output().unwrap();
    assert!(!stderr(&out).contains("panicked"), "{}", stderr(&out));
    // 141, what a shell reports for SIGPIPE: the run measured and reached its output.
    assert_eq!(out.status.code(), Some(141), "{}", stderr(&out));
}

#[test]
fn secs_that_are_not_a_sane_duration_are_refused() {
    for secs in ["inf", "1e30", "NaN", "-1"] {
        refuses(&[&format!("--secs={secs}"), "--crc"], "--secs");
    }
}

#[test]
fn batch_zero_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d.ffr");
    generate(&data, "ffrecord", 50, 256);
    refuses(&[data.to_str().unwrap(), "--batch", "0"], "--batch 0");
}

fn fio_installed() -> bool {
    std::process::Command::new("fio").arg("--version").output().is_ok()
}

/// A directory on a disk (not tmpfs), for cold runs.
fn disk_dir() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

/// On a one-record dataset fio refuses to read it cold, in whole pages ("blocksize is larger
/// than data set range"): its row is left out with a note saying why, and no ratio is NaN or
/// infinite.
#[test]
fn a_failed_fio_leaves_a_note_not_a_zero_row() {
    let dir = disk_dir();
    let data = dir.path().join("one.ffr");
    generate(&data, "ffrecord", 1, 4096);
    let run = |json: bool| {
        let mut cmd = reel();
        cmd.arg("bench").arg(&data);
        cmd.args(["--mode", "cold", "--secs", "0.1", "--backends", "pread", "--crc-size", "0"]);
        if json {
            cmd.arg("--json");
        }
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        out
    };
    let table = run(false);
    let text = String::from_utf8(table.stdout).unwrap();
    assert!(!text.contains("fio io_uring"), "{text}");
    assert!(text.contains("No fio row"), "{text}");
    if fio_installed() {
        assert!(text.contains("blocksize is larger than data set range"), "{text}");
    }
    for bad in ["NaN", "inf"] {
        assert!(!text.contains(bad), "{bad} in\n{text}");
    }
    let json = run(true);
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&json.stdout).unwrap();
    assert!(rows.iter().all(|r| r["reader"] != "fio io_uring" && r["vs_fio"].is_null()));
    assert!(stderr(&json).contains("note: No fio row"), "{}", stderr(&json));
}

/// `reel bench DATA --json` with `args`, expected to succeed: its rows and its stderr.
fn bench_json(data: &Path, args: &[&str]) -> (Vec<serde_json::Value>, String) {
    let out = reel().arg("bench").arg(data).args(args).arg("--json").output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    (serde_json::from_slice(&out.stdout).unwrap(), stderr(&out))
}

fn readers(rows: &[serde_json::Value]) -> Vec<&str> {
    rows.iter().map(|r| r["reader"].as_str().unwrap()).collect()
}

/// `reel bench DATA` honours --threads, --repeat, --stream and --read-ahead as the generated
/// matrix does, and measures the checksums off and on.
#[test]
fn an_existing_dataset_honours_the_matrix_options() {
    let dir = disk_dir();
    let data = dir.path().join("d.ffr");
    generate(&data, "ffrecord", 300, 2048);
    let (rows, _) = bench_json(
        &data,
        &["--mode", "warm", "--secs", "0.1", "--no-fio", "--backends", "pread,mmap"],
    );
    assert_eq!(
        readers(&rows),
        ["pread", "mmap", "pread, crc off", "pread, crc on", "mmap, crc off", "mmap, crc on"]
    );
    let on = rows.iter().find(|r| r["reader"] == "pread, crc on").unwrap();
    assert!(on["note"].as_str().unwrap().starts_with("crc costs"), "{on}");
    let (rows, _) = bench_json(
        &data,
        &["--mode", "warm", "--secs", "0.1", "--no-fio", "--backends", "pread", "--stream"]
            .into_iter()
            .chain(["--read-ahead", "3", "--threads", "2", "--repeat", "2", "--crc-size", "0"])
            .collect::<Vec<_>>(),
    );
    assert_eq!(readers(&rows), ["pread", "pread, stream"]);
    for row in &rows {
        assert!(row["records_per_sec"].as_f64().unwrap() > 0.0, "{row}");
    }

    // Cold, mmap and memory are left out as before, and the rest honour the same options.
    let (rows, _) = bench_json(
        &data,
        &["--mode", "cold", "--secs", "0.1", "--no-fio", "--backends", "pread,mmap,memory"]
            .into_iter()
            .chain(["--stream", "--threads", "2", "--crc-size", "0"])
            .collect::<Vec<_>>(),
    );
    assert_eq!(readers(&rows), ["pread", "pread, stream"]);
    assert!(rows.iter().all(|r| r["mode"] == "cold"));
}

/// Generated records cold have no mmap row either (its mapping kept the pages the eviction
/// dropped, so the row was warm), and a note says why both backends are left out.
#[test]
fn generated_cold_rows_leave_mmap_out_saying_why() {
    let dir = disk_dir();
    let out = reel()
        .args(["bench", "--mode", "cold", "--sizes", "1k", "--data", "256k", "--secs", "0.1"])
        .args(["--no-baselines", "--crc-size", "0", "--backends", "pread,mmap,memory", "--json"])
        .arg("--cold-dir")
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(readers(&rows), ["pread"]);
    let notes = stderr(&out);
    assert!(notes.contains("No cold mmap row: the pages a live mapping holds"), "{notes}");
    assert!(notes.contains("No cold memory row"), "{notes}");
}

/// A format without checksums reel checks gets a note instead of crc on/off rows.
#[test]
fn a_format_without_checksums_says_so() {
    let dir = disk_dir();
    let data = dir.path().join("g");
    generate(&data, "granular", 300, 2048);
    let (rows, notes) =
        bench_json(&data, &["--mode", "warm", "--secs", "0.1", "--no-fio", "--backends", "pread"]);
    assert_eq!(readers(&rows), ["pread"]);
    assert!(notes.contains("No crc on/off rows: granular"), "{notes}");
}

/// The options a URL cannot honour are refused, before anything is fetched.
#[test]
fn a_url_refuses_the_local_options() {
    for option in [
        &["--threads", "2"][..],
        &["--repeat", "2"],
        &["--stream"],
        &["--mode", "warm"],
        &["--backends", "pread"],
        &["--no-fio"],
        &["--no-baselines"],
        &["--crc-size", "0"],
    ] {
        let args: Vec<&str> = ["s3://bucket/none.ffr"].iter().chain(option).copied().collect();
        refuses(&args, option[0]);
    }
}

/// The URL options are refused for a local dataset, and the generated records' options
/// with any dataset, rather than ignored.
#[test]
fn a_local_dataset_refuses_the_url_options() {
    refuses(&["data.ffr", "--concurrency", "8"], "--concurrency");
    refuses(&["data.ffr", "--coalesce-gap", "1m"], "--coalesce-gap");
    refuses(&["data.ffr", "--sizes", "1k"], "--sizes");
}

/// Parquet files are read by arrow-rs whatever the backend: one row, named for that
/// reader, and a note saying why. Arrow IPC files are decoded by arrow-rs from a mapping
/// or read batch by batch, as the backend allows: a row for each.
#[test]
fn parquet_gets_one_arrow_rs_row_and_ipc_one_per_way_of_reading() {
    let dir = disk_dir();
    let ffr = dir.path().join("d.ffr");
    generate(&ffr, "ffrecord", 200, 1024);
    for (format, file) in [("parquet", "d.parquet"), ("arrow", "d.arrow")] {
        let data = dir.path().join(file);
        let out = reel()
            .args(["convert", "--quiet", "--to", format])
            .arg(&ffr)
            .arg(&data)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        let (rows, notes) = bench_json(
            &data,
            &["--mode", "warm", "--secs", "0.1", "--no-fio", "--backends", "pread,mmap"]
                .into_iter()
                .chain(["--stream"])
                .collect::<Vec<_>>(),
        );
        if format == "parquet" {
            assert_eq!(readers(&rows), ["arrow-rs reader", "arrow-rs reader, stream"]);
            assert!(notes.contains("read by arrow-rs"), "{notes}");
        } else {
            // An IPC file is read two ways: from a mapping (mmap, auto) or batch by batch.
            assert_eq!(
                readers(&rows),
                [
                    "arrow-rs reader, read",
                    "arrow-rs reader, read, stream",
                    "arrow-rs reader, mapped",
                    "arrow-rs reader, mapped, stream"
                ]
            );
            assert!(notes.contains("decoded by arrow-rs"), "{notes}");
        }
        assert!(notes.contains("No crc on/off rows"), "{notes}");
    }
}

/// A row is labelled with the backend that read: the one asked for when it read as asked,
/// otherwise what read (`io_uring(pread fallback)` where io_uring is refused, `io_uring`
/// where O_DIRECT is) and what was asked, with the reason in its note.
#[test]
fn rows_name_the_backend_that_actually_read() {
    let dir = disk_dir();
    let data = dir.path().join("d.ffr");
    generate(&data, "ffrecord", 300, 2048);
    let asked = ["pread", "io_uring", "io_uring-direct", "auto"];
    let (rows, _) = bench_json(
        &data,
        &["--mode", "both", "--secs", "0.1", "--no-fio", "--crc-size", "0", "--backends"]
            .into_iter()
            .chain([asked.join(",").as_str()])
            .collect::<Vec<_>>(),
    );
    assert_eq!(rows.len(), 2 * asked.len(), "{rows:?}");
    for (row, name) in rows.iter().zip(asked.iter().chain(&asked)) {
        let reader = row["reader"].as_str().unwrap();
        let note = row["note"].as_str().unwrap();
        if reader != *name {
            assert!(reader.ends_with(&format!(", asked {name}")), "{reader} for {name}");
            assert!(!note.is_empty(), "{reader} without a reason");
        }
    }
}

/// Cold, a dataset small enough to be read through between two evictions is evicted before
/// every batch, and a row that still read more than a quarter of it per eviction (a batch of
/// every record) says it is partly warm.
///
/// The flag needs at least two timed batches (the count of evictions includes the one at
/// the start and the warm-up's), and one cold batch of every record can take half a second
/// on a loaded machine's disk: hence two seconds a run, not a shorter budget.
#[test]
fn cold_rows_on_a_small_dataset_say_when_they_are_partly_warm() {
    let dir = disk_dir();
    let data = dir.path().join("d.ffr");
    generate(&data, "ffrecord", 2000, 2048);
    let cold = ["--mode", "cold", "--secs", "2", "--no-fio", "--crc-size", "0"];
    let args: Vec<&str> =
        cold.into_iter().chain(["--backends", "pread", "--batch", "2000"]).collect();
    let (rows, _) = bench_json(&data, &args);
    assert_eq!(readers(&rows), ["pread"]);
    assert!(rows[0]["note"].as_str().unwrap().contains("partly warm"), "{}", rows[0]);
    let out = reel().arg("bench").arg(&data).args(&args).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("too small a dataset (or too large a batch) to measure cold"), "{text}");

    // Small batches, evicted before each: cold.
    let args: Vec<&str> =
        cold.into_iter().chain(["--backends", "pread", "--batch", "16"]).collect();
    let (rows, _) = bench_json(&data, &args);
    assert_eq!(rows[0]["note"], "", "{}", rows[0]);
}

/// On tmpfs nothing can be read cold: `--mode cold` is an error saying so (not an empty
/// table), and `--mode both` measures warm with a note on why there are no cold rows.
#[test]
fn cold_on_tmpfs_says_why_instead_of_an_empty_table() {
    let Ok(dir) = tempfile::tempdir_in("/dev/shm") else {
        eprintln!("no /dev/shm: skipped");
        return;
    };
    let tmpfs =
        std::process::Command::new("stat").args(["-f", "-c", "%T"]).arg(dir.path()).output();
    if !tmpfs.is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "tmpfs") {
        eprintln!("/dev/shm is not tmpfs: skipped");
        return;
    }
    let data = dir.path().join("d.ffr");
    generate(&data, "ffrecord", 200, 1024);
    let quick = ["--secs", "0.1", "--no-fio", "--crc-size", "0", "--backends", "pread"];
    let args: Vec<&str> =
        [data.to_str().unwrap(), "--mode", "cold"].into_iter().chain(quick).collect();
    refuses(&args, "is on tmpfs");
    let args: Vec<&str> = ["--mode", "both"].into_iter().chain(quick).collect();
    let (rows, notes) = bench_json(&data, &args);
    assert_eq!(readers(&rows), ["pread"]);
    assert_eq!(rows[0]["mode"], "warm");
    assert!(notes.contains("No cold rows"), "{notes}");

    // Generated records: the same for a --cold-dir on tmpfs.
    let cold_dir = dir.path().join("cold");
    let out = reel()
        .args(["bench", "--mode", "cold", "--sizes", "1k", "--data", "1m", "--cold-dir"])
        .arg(&cold_dir)
        .args(quick)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--cold-dir"), "{}", stderr(&out));
}

/// Generated datasets are kept for the next run, and the run ends saying where, how large
/// they are and how to remove them; the checksum dataset holds no more than --data (it was
/// 1024 records of 100 KiB, 100 MB, whatever --data said).
#[test]
fn generated_datasets_are_kept_saying_where_and_the_crc_one_respects_data() {
    let dir = tempfile::tempdir().unwrap();
    let run = |json: bool| {
        let mut cmd = reel();
        cmd.args(["bench", "--mode", "warm", "--sizes", "1k", "--data", "256k", "--secs", "0.1"])
            .args(["--no-baselines", "--backends", "pread", "--crc-size", "100k", "--warm-dir"])
            .arg(dir.path());
        if json {
            cmd.arg("--json");
        }
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        out
    };
    let out = run(false);
    let text = String::from_utf8(out.stdout).unwrap();
    let kept =
        format!("in {} (remove with rm -r {}/bench-*)", dir.path().display(), dir.path().display());
    assert!(text.contains("Kept for the next run: 2 dataset(s)") && text.contains(&kept), "{text}");
    // 256 KiB of 100 KiB records: two of them.
    assert!(dir.path().join("bench-102400x2.ffr").is_file());
    // With --json the note goes to stderr, leaving stdout one JSON document.
    let out = run(true);
    let _: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert!(stderr(&out).contains("note: Kept for the next run"), "{}", stderr(&out));
}
