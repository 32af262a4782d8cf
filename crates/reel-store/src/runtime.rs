//! The tokio runtime that object-store requests run on, owned by this crate, so that reel's
//! synchronous API stays synchronous for its callers.
//!
//! One runtime per *process*: tokio's worker threads do not survive `fork` (PyTorch's
//! DataLoader forks its workers), so the runtime remembers the process id it was made in and a
//! forked child makes its own. The parent's runtime is leaked in the child, never dropped:
//! dropping it would wait for threads that do not exist there.

use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};

use reel_core::{Error, ErrorKind, Result};
use tokio::runtime::{Builder, Handle, Runtime};

static RUNTIME: Mutex<Option<(u32, Arc<Runtime>)>> = Mutex::new(None);

/// Worker threads of the runtime: requests are I/O-bound, so a few threads drive many
/// concurrent requests; more than 8 only adds idle threads.
fn worker_threads() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2).clamp(2, 8)
}

/// The runtime of this process, created on first use (and again in a forked child).
pub fn runtime() -> Result<Arc<Runtime>> {
    let pid = std::process::id();
    let mut slot = RUNTIME.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some((owner, rt)) = slot.as_ref()
        && *owner == pid
    {
        return Ok(Arc::clone(rt));
    }
    if let Some((_, inherited)) = slot.take() {
        // Made before a fork: its threads live in the parent only. See the module docs.
        std::mem::forget(inherited);
    }
    let rt = Builder::new_multi_thread()
        .worker_threads(worker_threads())
        .thread_name("reel-store")
        .enable_all()
        .build()
        .map_err(|e| Error::io(e, "cannot start the object-store runtime"))?;
    let rt = Arc::new(rt);
    *slot = Some((pid, Arc::clone(&rt)));
    Ok(rt)
}

/// A handle to this process's runtime, for callers that want to spawn store work themselves
/// (the async entry point).
pub fn handle() -> Result<Handle> {
    Ok(runtime()?.handle().clone())
}

/// The id of the current process; stores and runtimes compare it to notice a fork.
pub(crate) fn current_pid() -> u32 {
    std::process::id()
}

/// Runs `future` to completion on the store runtime and returns its output, blocking the
/// calling thread.
///
/// Safe to call from any thread, including from inside another tokio runtime (an async caller
/// using the synchronous API): there the future runs on a helper thread, because blocking a
/// runtime thread in `block_on` is not allowed.
pub fn block_on<F>(future: F) -> Result<F::Output>
where
    F: Future + Send,
    F::Output: Send,
{
    let rt = runtime()?;
    if Handle::try_current().is_err() {
        // object_store panics on some settings it took at build time (an endpoint that is
        // no URI fails its first request's assertion): an error, never a crash.
        return std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| rt.block_on(future)))
            .map_err(|panic| panicked(&*panic));
    }
    std::thread::scope(|scope| {
        scope.spawn(|| rt.block_on(future)).join().map_err(|panic| panicked(&*panic))
    })
}

/// The error for an object-store request that panicked, with what the panic said.
fn panicked(panic: &(dyn std::any::Any + Send)) -> Error {
    let said = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_default();
    Error::new(
        ErrorKind::Io,
        format!(
            "an object-store request failed inside the client ({said}); a setting it cannot \
             use, such as an endpoint that is not a URL, is the usual cause"
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_on_runs_futures_and_reuses_the_runtime() {
        assert_eq!(block_on(async { 6 * 7 }).unwrap(), 42);
        let a = runtime().unwrap();
        let b = runtime().unwrap();
        assert!(Arc::ptr_eq(&a, &b));
    }

    #[test]
    #[allow(clippy::panic)]
    fn a_request_that_panics_is_an_error_not_a_crash() {
        let e = block_on(async { panic!("request valid: InvalidUri") }).unwrap_err();
        assert!(e.to_string().contains("InvalidUri"), "{e}");
        // The runtime is still there for the next request.
        assert_eq!(block_on(async { 1 }).unwrap(), 1);
    }

    #[test]
    fn block_on_works_inside_another_runtime() {
        let outer = Builder::new_current_thread().build().unwrap();
        let got = outer.block_on(async { block_on(async { "inner" }).unwrap() });
        assert_eq!(got, "inner");
    }

    #[test]
    fn timers_and_io_are_enabled() {
        let slept = block_on(async {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            tokio::net::TcpListener::bind("127.0.0.1:0").await.is_ok()
        })
        .unwrap();
        assert!(slept);
    }
}
