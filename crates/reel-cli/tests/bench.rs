//! `reel bench`, driven as a user would: which options it honours, refuses and reports.
//! Nothing here asserts a timing: only the rows, labels, notes and exit codes.
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
