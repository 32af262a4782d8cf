//! Threads inside reel when the interpreter exits.
//!
//! CPython 3.11 to 3.13 end a thread that takes the GIL after finalization has begun (a
//! daemon thread, typically) with `pthread_exit`, which unwinds the thread's stack. Through
//! Rust frames that is fatal: pyo3's trampoline stops the unwind, and the C library aborts
//! the process ("FATAL: exception not rethrown"). A daemon thread waiting on a reel stream
//! or read at exit thus turned a finished program into an abort (exit status 134). CPython
//! 3.14 hangs such threads instead, for this reason; reel does the same for its own waits
//! on older versions:
//!
//! * every wait with the GIL released goes through [`detach`];
//! * at exit (an `atexit` hook, [`exiting`], which runs before finalization begins) the
//!   exiting thread marks the interpreter as closing, then releases the GIL until every
//!   thread that had finished its wait before that has taken the GIL back and left reel;
//! * from then on, a thread that finishes a wait, or starts one, parks for good instead of
//!   taking the GIL back. The process ends around it, as it would around a thread of 3.14.
//!
//! The thread running the exit (the one that called [`exiting`]) is never parked: code it
//! runs during finalization may still read.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::time::{Duration, Instant};

use pyo3::prelude::*;

// Atomics, not a lock: a process may fork while another thread is in here (a DataLoader
// worker under `fork`), and a lock held at that moment would stay held in the child.

/// Whether the interpreter's exit has begun.
static CLOSING: AtomicBool = AtomicBool::new(false);
/// Threads that finished their wait and are taking the GIL back.
static RETURNING: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// Whether this thread runs the interpreter's exit.
    static RUNS_EXIT: Cell<bool> = const { Cell::new(false) };
}

/// How long the exit waits for returning threads at most: they need only the GIL, which
/// the exit releases, so this is a safety net that keeps an exit from hanging.
const EXIT_WAIT: Duration = Duration::from_secs(5);

/// Runs `f` with the GIL released, as `Python::detach` does, except that once the
/// interpreter is exiting a thread other than the exiting one parks for good (before `f`,
/// or after it instead of taking the GIL back); see the module documentation.
pub(crate) fn detach<T, F>(py: Python<'_>, f: F) -> T
where
    F: Send + FnOnce() -> T,
    T: Send,
{
    let out = py.detach(|| {
        park_if_exiting();
        let out = f();
        // Announce the return first, then look: with both sides sequentially consistent,
        // either this thread sees the exit and parks, or the exit sees it returning and
        // waits for it (with the GIL released) before finalization begins.
        RETURNING.fetch_add(1, SeqCst);
        if exiting_elsewhere() {
            RETURNING.fetch_sub(1, SeqCst);
            park_for_good();
        }
        out
    });
    RETURNING.fetch_sub(1, SeqCst);
    out
}

/// Whether the interpreter is exiting on another thread than this one.
fn exiting_elsewhere() -> bool {
    CLOSING.load(SeqCst) && !RUNS_EXIT.with(Cell::get)
}

fn park_if_exiting() {
    if exiting_elsewhere() {
        park_for_good();
    }
}

fn park_for_good() -> ! {
    loop {
        std::thread::park();
    }
}

/// The `atexit` hook (registered by `reel/__init__.py`): marks the interpreter as exiting
/// and waits, with the GIL released, until the threads that finished a wait before that
/// have taken the GIL back and left reel.
#[pyfunction]
#[pyo3(name = "_atexit")]
pub(crate) fn exiting(py: Python<'_>) {
    RUNS_EXIT.with(|r| r.set(true));
    CLOSING.store(true, SeqCst);
    py.detach(|| {
        let deadline = Instant::now() + EXIT_WAIT;
        while RETURNING.load(SeqCst) > 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
    });
}
