//! Ctrl-C during a long call (`reel.convert`, `reel.verify`, `reel.generate`).
//!
//! Python runs its signal handlers on the main thread, between bytecodes: a call that
//! spends minutes in Rust with the GIL released would not see Ctrl-C until it returned. So
//! such a call runs on a helper thread inside a [`CancelFlag`] scope, while the calling
//! thread waits in short slices and asks Python for pending signals between them. On
//! `KeyboardInterrupt` (or any exception a signal handler raises) it raises the flag: the
//! work stops at its next step ([`reel::io::cancel`]), its writer is dropped unfinished and
//! removes what it staged, and the exception is raised once the helper has ended, so that
//! nothing is still writing when the caller sees it.

use std::sync::mpsc::{RecvTimeoutError, channel};
use std::time::Duration;

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use reel::io::cancel::CancelFlag;

use crate::errors::IntoPyResult;

/// How long the calling thread waits between two looks at Python's pending signals.
const SIGNAL_LOOK: Duration = Duration::from_millis(20);

/// Runs `work` with the GIL released so that Ctrl-C cancels it (see the module
/// documentation); its error becomes the matching Python exception.
pub(crate) fn interruptible<T, F>(py: Python<'_>, work: F) -> PyResult<T>
where
    F: Send + FnOnce() -> reel::Result<T>,
    T: Send,
{
    let flag = CancelFlag::new();
    std::thread::scope(|s| {
        let (done, mut finished) = channel();
        let worker = {
            let flag = flag.clone();
            s.spawn(move || {
                let _ = done.send(flag.scope(work));
            })
        };
        loop {
            // The receiver goes into each wait and comes back: `detach` runs its closure
            // behind a `Send` bound, which a borrowed receiver does not meet.
            let (back, answer) = crate::shutdown::detach(py, move || {
                let answer = finished.recv_timeout(SIGNAL_LOOK);
                (finished, answer)
            });
            finished = back;
            match answer {
                Ok(result) => return result.py_err(py),
                Err(RecvTimeoutError::Timeout) => {}
                // The helper ended without an answer: it panicked. Its panic goes on here,
                // where pyo3 turns it into a PanicException.
                Err(RecvTimeoutError::Disconnected) => {
                    return match worker.join() {
                        Err(panic) => std::panic::resume_unwind(panic),
                        Ok(()) => Err(PyRuntimeError::new_err(
                            "reel's helper thread ended without an answer",
                        )),
                    };
                }
            }
            if let Err(signalled) = py.check_signals() {
                flag.cancel();
                // Its own error says only that it was cancelled: the exception the signal
                // raised is the one to see.
                let _ = crate::shutdown::detach(py, move || finished.recv());
                return Err(signalled);
            }
        }
    })
}
