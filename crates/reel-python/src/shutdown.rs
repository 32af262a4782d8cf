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
//! * `import reel` registers an `atexit` hook, [`exiting`]. It marks the exit as near and
//!   releases the GIL until every thread that had already decided to take the GIL back has
//!   done so; those threads are then back in Python before finalization can begin;
//! * after the mark, a thread that finishes (or starts) a wait looks whether finalization
//!   has begun (`Py_IsFinalizing`, or `_Py_IsFinalizing` before 3.13, found at run time):
//!   if so it parks for good, as on 3.14; if not, it waits for it up to
//!   [`FINALIZATION_WAIT`] and then takes the GIL back as usual. Other `atexit` hooks (those
//!   registered before `import reel` run after reel's) may still join threads that use
//!   reel: those threads come back instead of parking.
//!
//! What is left: other exit hooks that run longer than [`FINALIZATION_WAIT`] while a
//! thread keeps reading. A thread that gave up waiting may be taking the GIL back when
//! finalization begins, and CPython ends it as before. Closing it needs CPython (3.14
//! hangs such threads itself); stopping reading threads before exit avoids it.
//!
//! The thread that ran the hook runs the finalization too and never parks. The process
//! ends around parked threads. Where neither function exists, a thread parks as soon as
//! the exit is near.
//!
//! Not covered: Python code that runs on such a thread while reel waits for it, such as a
//! generator behind a `pyarrow.RecordBatchReader` that `write_arrow` pulls from. pyarrow
//! takes the GIL for it itself, and a daemon thread doing that at exit aborts the same way
//! without reel (pyarrow reading such a reader alone does).

use std::cell::Cell;
use std::ffi::c_int;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::time::{Duration, Instant};

use pyo3::prelude::*;

// Atomics, not a lock: a process may fork while another thread is in here (a DataLoader
// worker under `fork`), and a lock held at that moment would stay held in the child.

/// Whether reel's `atexit` hook has run: the interpreter's exit is near.
static CLOSING: AtomicBool = AtomicBool::new(false);
/// Threads that finished their wait and are taking the GIL back.
static RETURNING: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// Whether this thread ran the exit hook: it runs the finalization too, and code it
    /// runs then (a `__del__`) may still read, so it never parks.
    static RUNS_EXIT: Cell<bool> = const { Cell::new(false) };
}

/// How long a thread that finishes a wait after the exit hook waits for finalization to
/// begin before it takes the GIL back: after reel's hook, finalization normally follows at
/// once, unless other `atexit` hooks run first (which may be waiting for this very thread,
/// so it cannot wait for ever). Hooks that run longer than this while such a thread keeps
/// reading leave a window: a thread that gave up waiting and is taking the GIL back when
/// finalization begins is still ended by CPython, which aborts the process.
const FINALIZATION_WAIT: Duration = Duration::from_millis(250);

/// How long the exit hook waits for returning threads at most: they need only the GIL,
/// which the hook releases, so this is a safety net that keeps an exit from hanging.
const EXIT_WAIT: Duration = Duration::from_secs(5);

/// Runs `f` with the GIL released, as `Python::detach` does, except that a thread that
/// would take the GIL back (or start) after the interpreter's finalization has begun parks
/// for good instead; see the module documentation.
pub(crate) fn detach<T, F>(py: Python<'_>, f: F) -> T
where
    F: Send + FnOnce() -> T,
    T: Send,
{
    let out = py.detach(|| {
        park_if_finalizing();
        let out = f();
        // Announce the return first, then look: with both sides sequentially consistent,
        // either this thread sees the mark, or the hook sees it returning and waits for it
        // (with the GIL released) before finalization can begin. (A thread that sees the
        // mark and later gives up waiting is covered by nothing: see the module docs.)
        RETURNING.fetch_add(1, SeqCst);
        if CLOSING.load(SeqCst) && !RUNS_EXIT.with(Cell::get) {
            RETURNING.fetch_sub(1, SeqCst);
            wait_out_the_exit();
            RETURNING.fetch_add(1, SeqCst);
        }
        out
    });
    RETURNING.fetch_sub(1, SeqCst);
    out
}

/// Parks the calling thread for good if the interpreter's finalization has begun (and it
/// is not the thread running it).
fn park_if_finalizing() {
    if CLOSING.load(SeqCst) && !RUNS_EXIT.with(Cell::get) && finalizing() != Some(false) {
        park_for_good();
    }
}

/// After the exit hook: parks for good once finalization begins, or returns (to take the
/// GIL back) if it has not begun within [`FINALIZATION_WAIT`].
fn wait_out_the_exit() {
    let deadline = Instant::now() + FINALIZATION_WAIT;
    loop {
        if finalizing() != Some(false) {
            park_for_good();
        }
        if Instant::now() >= deadline {
            return;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
}

/// Whether the interpreter's finalization has begun; `None` when this interpreter offers
/// no way to tell. Both functions only read the runtime's state and need no GIL.
fn finalizing() -> Option<bool> {
    type IsFinalizing = unsafe extern "C" fn() -> c_int;
    static FOUND: OnceLock<Option<IsFinalizing>> = OnceLock::new();
    let found = FOUND.get_or_init(|| {
        [c"Py_IsFinalizing", c"_Py_IsFinalizing"].iter().find_map(|name| {
            // SAFETY: `dlsym` with RTLD_DEFAULT looks a symbol up in the process's global
            // scope; the name is a NUL-terminated literal.
            let at = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
            // SAFETY: both names are CPython functions `int (void)` (`Py_IsFinalizing`
            // public since 3.13, `_Py_IsFinalizing` exported before), so a non-null address
            // is such a function.
            (!at.is_null())
                .then(|| unsafe { std::mem::transmute::<*mut libc::c_void, IsFinalizing>(at) })
        })
    });
    // SAFETY: the function takes nothing and only loads the runtime's finalizing state,
    // which CPython allows without the GIL (daemon threads are checked the same way).
    found.map(|is_finalizing| unsafe { is_finalizing() } != 0)
}

fn park_for_good() -> ! {
    loop {
        std::thread::park();
    }
}

/// The `atexit` hook (registered by `reel/__init__.py`): marks the exit as near and waits,
/// with the GIL released, until the threads that finished a wait before that have taken
/// the GIL back.
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

/// Forgets the parent's state in a forked child (from [`crate::fork`]'s handler, which runs
/// in the child before `fork` returns: atomics only). The threads the parent counted do not
/// exist in the child, and a child forked while the parent exits is a new program.
pub(crate) fn forget_after_fork() {
    RETURNING.store(0, SeqCst);
    CLOSING.store(false, SeqCst);
}
