//! Ctrl-C and SIGTERM: a command that writes stops at its next step, removes what it was
//! writing (its staged files or directory), and exits as the signal would have (128 + its
//! number). Killed by the signal's default action it would leave the staging behind.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use reel_core::testing::names_in as names;

fn reel() -> Command {
    Command::new(env!("CARGO_BIN_EXE_reel"))
}

/// Waits (at most 60 s) until `dir` holds a name that `before` does not: the command has
/// begun writing.
fn wait_for_staging(dir: &Path, before: &[String], child: &mut Child) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while names(dir).len() == before.len() {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("the command ended ({status}) before it wrote anything");
        }
        assert!(Instant::now() < deadline, "nothing was written within 60 s");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Sends `signal` (a name `kill` knows) to `child` and waits (at most 60 s) for it to end;
/// its exit code and what it printed on stderr.
fn stop(child: &mut Child, signal: &str) -> (Option<i32>, String) {
    let sent = Command::new("kill").args(["-s", signal, &child.id().to_string()]).status();
    assert!(sent.unwrap().success(), "kill -s {signal} failed");
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            child.kill().unwrap();
            panic!("the command did not stop within 60 s of {signal}");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
    (status.code(), stderr)
}

/// A generated dataset far too large to be written before the signal comes.
fn start_generating(format: &str, out: &Path) -> Child {
    reel()
        .args(["generate", "--quiet", "--format", format, "--records", "200000"])
        .args(["--max-record", "16384"])
        .arg(out)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn an_interrupted_generate_leaves_nothing_and_exits_as_interrupted() {
    // A staged file (FFRecord) and a staged directory (Granular).
    for (format, signal, code) in [("ffrecord", "INT", 130), ("granular", "TERM", 143)] {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join(format!("big-{format}"));
        let mut child = start_generating(format, &out);
        wait_for_staging(dir.path(), &[], &mut child);
        let (exit, stderr) = stop(&mut child, signal);
        assert_eq!(exit, Some(code), "{format}: exit code; stderr: {stderr}");
        assert!(stderr.contains("was removed"), "{format}: {stderr}");
        assert_eq!(names(dir.path()), Vec::<String>::new(), "{format}: left behind");
    }
}

#[test]
fn an_interrupted_conversion_leaves_only_its_source() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src.ffr");
    let made = reel()
        .args(["generate", "--quiet", "--format", "ffrecord", "--records", "3000"])
        .args(["--max-record", "65536"])
        .arg(&src)
        .status()
        .unwrap();
    assert!(made.success());
    for to in ["granular", "parquet"] {
        let before = names(dir.path());
        let mut child = reel()
            .args(["convert", "--quiet", "--to", to])
            .arg(&src)
            .arg(dir.path().join(format!("out-{to}")))
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        wait_for_staging(dir.path(), &before, &mut child);
        let (exit, stderr) = stop(&mut child, "INT");
        assert_eq!(exit, Some(130), "to {to}: exit code; stderr: {stderr}");
        assert_eq!(names(dir.path()), vec!["src.ffr".to_string()], "to {to}: left behind");
    }
}

#[test]
fn an_interrupted_bench_leaves_no_half_written_data() {
    // The benchmark writes its data first: 4 GB in 16 KiB records takes far longer than
    // the signal takes to come. Killed mid-write it left the staged file in its warm
    // directory (on tmpfs by default, where it holds memory).
    let dir = tempfile::tempdir().unwrap();
    let warm = dir.path().join("warm");
    let mut child = reel()
        .args(["bench", "--mode", "warm", "--sizes", "16k", "--data", "4g", "--no-fio"])
        .arg("--warm-dir")
        .arg(&warm)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !warm.is_dir() || names(&warm).is_empty() {
        assert!(child.try_wait().unwrap().is_none(), "the bench ended before it wrote");
        assert!(Instant::now() < deadline, "nothing was written within 60 s");
        std::thread::sleep(Duration::from_millis(5));
    }
    let (exit, stderr) = stop(&mut child, "INT");
    assert_eq!(exit, Some(130), "exit code; stderr: {stderr}");
    assert_eq!(names(&warm), Vec::<String>::new(), "left behind");
}
