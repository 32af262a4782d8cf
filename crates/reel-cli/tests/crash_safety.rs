//! Crash safety: a writer killed with SIGKILL at any moment leaves either nothing that
//! opens, or the complete dataset — never a valid dataset with wrong or missing records.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use reel::RecordSourceExt;

const MAX_RECORD: usize = 2048;

/// Enough records that a write takes a while; Granular needs several times its 1 MiB
/// flush threshold so that some kills land after a flush made progress durable.
fn records(format: &str) -> u64 {
    if format == "granular" { 8_000 } else { 3_000 }
}

fn generate(format: &str, out: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_reel"));
    c.args(["generate", "--quiet", "--format", format, "--records", &records(format).to_string()])
        .args(["--max-record", &MAX_RECORD.to_string()])
        .arg(out)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    c
}

/// What a complete dataset reads back as, record by record (from an uninterrupted run).
fn reference(format: &str, dir: &Path) -> Vec<reel::Record> {
    let out = dir.join(format!("complete-{format}"));
    assert!(generate(format, &out).status().unwrap().success());
    let src = reel::open(&out).unwrap();
    (0..src.len()).map(|i| src.read(i).unwrap()).collect()
}

fn check_after_kill(format: &str, out: &Path, expected: &[reel::Record]) -> bool {
    match reel::open(out) {
        Err(_) => false,
        Ok(src) => {
            assert_eq!(
                src.len(),
                expected.len() as u64,
                "{format}: a killed writer left a dataset with the wrong count"
            );
            for (i, want) in expected.iter().enumerate() {
                let got = src
                    .read(i as u64)
                    .unwrap_or_else(|e| panic!("{format}: record {i} of a survivor: {e}"));
                assert!(got == *want, "{format}: record {i} of a survivor differs");
            }
            true
        }
    }
}

/// Kills `reel generate --format FORMAT` at 20 moments spread over (and past) a full
/// write, checking each time that what is left opens as nothing or as the complete
/// dataset. `after_kill` may then continue an interrupted write (Granular's resume).
fn crash_many_times(format: &str, after_kill: impl Fn(&Path, &[reel::Record])) {
    let dir = tempfile::tempdir().unwrap();
    let expected = reference(format, dir.path());
    // How long a full write takes here, to spread the kills over it.
    let probe = dir.path().join("probe");
    let t = Instant::now();
    assert!(generate(format, &probe).status().unwrap().success());
    let full = t.elapsed();
    let mut state = 0x5EED_u64;
    let (mut survived, mut nothing) = (0, 0);
    for k in 0..20 {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let delay = full.mul_f64(((state >> 11) as f64 / (1u64 << 53) as f64) * 1.2);
        let out = dir.path().join(format!("killed-{k}"));
        let mut child = generate(format, &out).spawn().unwrap();
        std::thread::sleep(delay);
        let _ = child.kill(); // SIGKILL on Unix
        let _ = child.wait();
        if check_after_kill(format, &out, &expected) {
            survived += 1;
        } else {
            nothing += 1;
            after_kill(&out, &expected);
        }
    }
    // The spread of delays must have caught writers both mid-way and after finishing,
    // or the test would not show anything.
    assert!(nothing > 0, "{format}: no kill landed before the end ({full:?} per write)");
    eprintln!("{format}: {nothing} kills left nothing, {survived} left the complete dataset");
    let _ = Duration::ZERO;
}

fn nothing_to_do(_: &Path, _: &[reel::Record]) {}

#[cfg(unix)]
#[test]
fn ffrecord_writer_killed_anywhere() {
    crash_many_times("ffrecord", nothing_to_do);
}

#[cfg(unix)]
#[test]
fn syrah_writer_killed_anywhere() {
    crash_many_times("syrah", nothing_to_do);
}

#[cfg(unix)]
#[test]
fn ofrecord_writer_killed_anywhere() {
    crash_many_times("ofrecord", nothing_to_do);
}

#[cfg(unix)]
#[test]
fn gulp_writer_killed_anywhere() {
    crash_many_times("gulp", nothing_to_do);
}

/// Granular's writer is resumable: after a kill, `GranularWriter::resume` continues from
/// the last datapoint that was made durable, and finishing gives exactly the dataset an
/// uninterrupted run writes.
#[cfg(unix)]
#[test]
fn granular_writer_killed_anywhere_then_resumed() {
    use std::sync::atomic::{AtomicU64, Ordering};
    let resumed_with_progress = AtomicU64::new(0);
    crash_many_times("granular", |out, expected| {
        let mut w = match reel::granular::GranularWriter::resume(out) {
            Ok(w) => w,
            // Killed before the staging directory held a spec: nothing to resume.
            Err(e) => {
                assert_eq!(e.kind(), reel::ErrorKind::NotFound, "{e}");
                return;
            }
        };
        let done = w.len();
        assert!(done <= expected.len() as u64);
        if done > 0 {
            resumed_with_progress.fetch_add(1, Ordering::Relaxed);
        }
        for r in &expected[done as usize..] {
            w.append(r.view()).unwrap();
        }
        w.finish().unwrap();
        assert!(check_after_kill("granular", out, expected), "a resumed dataset does not open");
    });
    eprintln!(
        "granular: {} resumes continued after durable progress",
        resumed_with_progress.load(Ordering::Relaxed)
    );
}

/// A Granular write killed part way leaves its staging directory (kept for `resume`). The
/// next `reel generate` to the same path refuses it and names `--force`, and `--force`
/// replaces it: it used to block every later run, `--force` included, with a message
/// naming a library call the CLI cannot make.
#[cfg(unix)]
#[test]
fn force_replaces_what_a_killed_granular_write_left() {
    let dir = tempfile::tempdir().unwrap();
    let probe = dir.path().join("probe");
    let t = Instant::now();
    assert!(generate("granular", &probe).status().unwrap().success());
    let full = t.elapsed();
    let out = dir.path().join("out");
    let staging = reel::granular::staging_path(&out).unwrap();
    // Kill mid-way, at later moments until a kill lands while the staging directory exists.
    let left_staging = (1..=9).any(|tenth| {
        let _ = std::fs::remove_dir_all(&staging);
        let mut child = generate("granular", &out).spawn().unwrap();
        std::thread::sleep(full.mul_f64(f64::from(tenth) / 10.0));
        let _ = child.kill();
        let _ = child.wait();
        staging.is_dir() && !out.exists()
    });
    assert!(left_staging, "no kill landed mid-write ({full:?} per write)");

    let again = generate("granular", &out).stderr(Stdio::piped()).output().unwrap();
    assert_eq!(again.status.code(), Some(2));
    let err = String::from_utf8_lossy(&again.stderr);
    assert!(err.contains("interrupted") && err.contains("--force"), "{err}");
    let forced = generate("granular", &out).arg("--force").status().unwrap();
    assert!(forced.success());
    assert!(!staging.exists());
    assert_eq!(reel::open(&out).unwrap().len(), records("granular"));
}
