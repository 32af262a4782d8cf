//! The one fork hook of the module: a `pthread_atfork` child handler, registered when the
//! module is imported, that runs in every child `fork()` makes (`os.fork`, DataLoader
//! workers, forks made from C) before `fork` returns there. It does two things, both with
//! atomics only (async-signal-safe, as the child of a multithreaded process requires):
//!
//! * it bumps a number that tells a process from its forked children. A dataset opened in
//!   a parent and inherited by a child must open its files again there; checking
//!   `getpid()` on every read cost a system call each (~170 ns on this VM, 0.5 % of a batch
//!   of 256 1 KiB records), while this number is one load;
//! * it forgets the parent's exit state ([`crate::shutdown::forget_after_fork`]): the
//!   threads the parent counted do not exist in the child, and a child forked while the
//!   parent exits is a new program.

use std::sync::Once;
use std::sync::atomic::{AtomicU64, Ordering::SeqCst};

use pyo3::exceptions::PyMemoryError;
use pyo3::prelude::*;

/// Bumped by the child handler.
static FORKS: AtomicU64 = AtomicU64::new(0);
static HOOK: Once = Once::new();

/// The child's side of every `fork()`.
extern "C" fn forked() {
    FORKS.fetch_add(1, SeqCst);
    crate::shutdown::forget_after_fork();
}

/// Registers the child handler (once per process; the module's initialisation calls it).
/// `pthread_atfork` fails only for want of memory, and a module that could not tell a
/// forked child from its parent would read the parent's files there, so the import fails.
pub(crate) fn install() -> PyResult<()> {
    let mut rc = 0;
    HOOK.call_once(|| {
        // SAFETY: `forked` is an `extern "C" fn()` with no arguments, the signature
        // `pthread_atfork` requires of its handlers, and it lives as long as the process
        // (a static function of this library, which is never unloaded: CPython does not
        // unload extension modules). It touches atomics only, from any thread.
        rc = unsafe { libc::pthread_atfork(None, None, Some(forked)) };
    });
    if rc != 0 {
        return Err(PyMemoryError::new_err(format!(
            "reel could not register its fork handler (pthread_atfork: error {rc})"
        )));
    }
    Ok(())
}

/// A number that differs between a process and every child it forks (or that they fork).
pub(crate) fn process_generation() -> u64 {
    FORKS.load(SeqCst)
}
