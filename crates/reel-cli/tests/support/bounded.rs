//! Running the `reel` binary the way a hostile-input suite does: under an address-space
//! limit (`ulimit -v`, so an allocation the input does not justify fails and the process
//! aborts) and a timeout (so a hang fails the test instead of stalling CI).

use std::ffi::OsStr;
use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The address space `reel` may use: enough for its code, thread stacks, allocator arenas
/// and the io_uring rings, far below what the hostile files claim.
pub const ADDRESS_SPACE_KIB: u64 = 1 << 20;

/// How long one command may take.
pub const TIMEOUT: Duration = Duration::from_secs(20);

/// What a bounded run gave.
#[derive(Debug)]
pub struct Outcome {
    /// The exit code (a run killed by a signal fails the test before this is built).
    pub code: i32,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

/// Runs `reel args…` in `dir` under [`ADDRESS_SPACE_KIB`] and [`TIMEOUT`]. Fails the calling
/// test, naming `what`, if it hangs or dies of a signal (an abort on a failed allocation, a
/// crash).
pub fn run_reel<I, S>(what: &str, dir: &std::path::Path, args: I) -> Outcome
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -v {ADDRESS_SPACE_KIB} && exec \"$@\""))
        .arg("sh")
        .arg(env!("CARGO_BIN_EXE_reel"))
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("cannot start reel");
    let mut out = child.stdout.take().expect("stdout is piped");
    let mut err = child.stderr.take().expect("stderr is piped");
    // Drain both pipes while waiting, so a chatty command cannot block on a full pipe.
    let out_reader = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = out.read_to_end(&mut v);
        v
    });
    let err_reader = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = err.read_to_end(&mut v);
        v
    });
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("cannot wait for reel") {
            break status;
        }
        if start.elapsed() > TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: reel did not finish within {TIMEOUT:?} (a hang)");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let stdout = String::from_utf8_lossy(&out_reader.join().unwrap_or_default()).into_owned();
    let stderr = String::from_utf8_lossy(&err_reader.join().unwrap_or_default()).into_owned();
    let Some(code) = status.code() else {
        panic!("{what}: reel was killed by a signal ({status}); stderr: {stderr}");
    };
    Outcome { code, stdout, stderr }
}
