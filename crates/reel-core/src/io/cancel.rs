//! Stopping a batch read from another thread.
//!
//! A batch read can be long: thousands of records, a cold disk, object storage. When no one
//! wants its result any more (its [`BatchStream`](crate::stream) was dropped), it should stop
//! starting I/O and return as soon as the reads already in flight have ended, instead of
//! reading the rest of the batch first. The read path has no argument to say so: it runs
//! under [`RecordSource::read_batch_into`](crate::RecordSource::read_batch_into), whose
//! signature every source shares. So the request travels beside it, in the reading thread:
//! [`CancelFlag::scope`] marks the thread for the length of a read, and backends take a
//! [`CancelCheck`] when a batch starts and look at it before each submission.
//!
//! Which reads look: every source built on [`LayoutSource`](crate::LayoutSource) (every
//! record format), over the default [`ReadAt::read_many`](crate::ReadAt::read_many)
//! (between reads), io_uring (before each refill of its queue) and object storage (before
//! each range request, and every 10 ms while one is in flight). A backend or source that
//! never looks (Parquet and Arrow IPC files, read by arrow-rs) reads its batch to the end,
//! as it would without a flag: the flag shortens a read, it is never needed for a correct
//! one. A cancelled read returns an error of kind [`Closed`](crate::ErrorKind::Closed) once
//! nothing writes into its buffer.
//!
//! Scopes nest, and a read looks at the innermost flag only. A stream's reads, even those
//! it makes on the consumer's thread, run in the stream's own scope: a stream is cancelled
//! by dropping it.
//!
//! Long operations look too, between their steps: a conversion, a generated dataset, a
//! verification and a folder being packed stop at the next batch (or file) once the flag
//! of the thread that runs them is raised, and fail with an error of kind
//! [`Closed`](crate::ErrorKind::Closed) ([`CancelCheck::stop_if_cancelled`]). A writer that
//! stops so is dropped unfinished, which removes its staged output: that is how the `reel`
//! command and the Python package stop one on Ctrl-C and leave nothing behind.

use std::cell::RefCell;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::{Error, ErrorKind, Result};

thread_local! {
    /// The flag of the read the thread is doing, if it runs in a [`CancelFlag::scope`].
    static CURRENT: RefCell<Option<CancelFlag>> = const { RefCell::new(None) };
}

/// A request to stop the reads made inside [`CancelFlag::scope`]; clones share it.
#[derive(Clone, Debug, Default)]
pub struct CancelFlag(Arc<AtomicBool>);

impl CancelFlag {
    /// A flag not yet raised.
    pub fn new() -> Self {
        CancelFlag::default()
    }

    /// Asks every read in a scope of this flag (now or later) to stop.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::Release);
    }

    /// Whether [`cancel`](Self::cancel) was called.
    #[inline]
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }

    /// Runs `f` with this flag as the calling thread's, so that the batch reads `f` makes
    /// stop early once the flag is raised. The thread's previous flag (scopes nest) is put
    /// back when `f` returns or unwinds.
    pub fn scope<T>(&self, f: impl FnOnce() -> T) -> T {
        /// Puts the previous flag back, on return and on unwinding alike.
        struct Restore(Option<CancelFlag>);
        impl Drop for Restore {
            fn drop(&mut self) {
                let previous = self.0.take();
                CURRENT.with(|c| *c.borrow_mut() = previous);
            }
        }
        let previous = CURRENT.with(|c| c.borrow_mut().replace(self.clone()));
        let _restore = Restore(previous);
        f()
    }
}

/// The calling thread's [`CancelFlag`] as a batch read starts, for its backend to look at
/// between submissions. Taken once per batch: looking costs one atomic load.
#[derive(Debug, Default)]
pub struct CancelCheck(Option<CancelFlag>);

impl CancelCheck {
    /// The flag of the scope the calling thread is in, if any.
    pub fn current() -> Self {
        CancelCheck(CURRENT.with(|c| c.borrow().clone()))
    }

    /// Whether the read runs in a scope at all: if not, nothing can cancel it, and a
    /// backend need not watch for it.
    pub fn watched(&self) -> bool {
        self.0.is_some()
    }

    /// An error (kind [`Closed`](ErrorKind::Closed)) once the read was cancelled.
    #[inline]
    pub fn check(&self) -> Result<()> {
        if self.raised() { Err(cancelled()) } else { Ok(()) }
    }

    /// Whether the scope's flag is raised (never, outside a scope).
    #[inline]
    fn raised(&self) -> bool {
        self.0.as_ref().is_some_and(CancelFlag::is_cancelled)
    }

    /// For a long operation between two of its steps: an error (kind
    /// [`Closed`](ErrorKind::Closed)) saying that `operation` (for example "the conversion")
    /// was cancelled before it finished, once the flag is raised.
    #[inline]
    pub fn stop_if_cancelled(&self, operation: &str) -> Result<()> {
        if self.raised() { Err(operation_cancelled(operation)) } else { Ok(()) }
    }
}

/// The error of a long operation cancelled between two steps.
#[cold]
fn operation_cancelled(operation: &str) -> Error {
    Error::new(
        ErrorKind::Closed,
        format!("{operation} was cancelled before it finished (its CancelFlag was raised)"),
    )
}

/// The error of a cancelled read.
#[cold]
fn cancelled() -> Error {
    Error::new(
        ErrorKind::Closed,
        "the read was cancelled (the stream reading it was dropped, or its CancelFlag raised)",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scope_sets_the_thread_flag_and_puts_the_previous_back() {
        assert!(CancelCheck::current().check().is_ok());
        let outer = CancelFlag::new();
        let inner = CancelFlag::new();
        inner.cancel();
        outer.scope(|| {
            assert!(CancelCheck::current().check().is_ok());
            let e = inner.scope(|| CancelCheck::current().check()).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Closed);
            assert!(CancelCheck::current().check().is_ok());
            outer.cancel();
            assert!(CancelCheck::current().check().is_err());
        });
        assert!(CancelCheck::current().check().is_ok());
    }

    #[test]
    fn a_long_operation_is_told_it_was_cancelled_by_name() {
        assert!(CancelCheck::current().stop_if_cancelled("the conversion").is_ok());
        let flag = CancelFlag::new();
        let check = flag.scope(CancelCheck::current);
        assert!(check.stop_if_cancelled("the conversion").is_ok());
        flag.cancel();
        let e = check.stop_if_cancelled("the conversion").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Closed);
        assert!(e.to_string().contains("the conversion was cancelled"), "{e}");
    }

    #[test]
    fn a_panic_inside_a_scope_puts_the_previous_flag_back() {
        let flag = CancelFlag::new();
        flag.cancel();
        let unwound = std::panic::catch_unwind(|| flag.scope(|| panic!("in the read")));
        assert!(unwound.is_err());
        assert!(CancelCheck::current().check().is_ok());
    }

    #[test]
    fn other_threads_are_not_in_the_scope() {
        let flag = CancelFlag::new();
        flag.cancel();
        flag.scope(|| {
            let elsewhere = std::thread::spawn(|| CancelCheck::current().check().is_ok());
            assert!(elsewhere.join().unwrap());
        });
    }
}
