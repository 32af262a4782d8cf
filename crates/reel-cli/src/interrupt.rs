//! Ctrl-C (SIGINT) and SIGTERM for the commands that write.
//!
//! Killed by a signal's default action, a command leaves behind what it was writing: a
//! conversion's staged output (hidden `.NAME.reel-tmp-…` files or directories, as large as
//! what was written so far), an unpacked tree's staging directory, the demo's work
//! directory in `/dev/shm` (which holds memory). So the commands that write run under a
//! [`CancelFlag`] that the first SIGINT or SIGTERM raises: the work stops at its next step
//! (a batch, a record, a file; see [`reel::io::cancel`]), every writer is dropped
//! unfinished and removes what it staged, and the command exits with 128 + the signal's
//! number, as a shell reports a process that signal ended. A second signal ends the process
//! at once, for a step that does not end.
//!
//! The commands that only read (`cat`, `inspect`, `bench`) keep the default action: they
//! have nothing to remove, and a step of theirs need not look at the flag.

use std::sync::atomic::{AtomicI32, Ordering};

use reel::io::cancel::CancelFlag;
use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

/// The signal that stopped the command, once one came (0: none).
static RECEIVED: AtomicI32 = AtomicI32::new(0);

/// Runs `work` so that the first SIGINT or SIGTERM cancels it (see the module
/// documentation). Where the handlers cannot be installed, `work` runs with the default
/// actions, as every command did before.
pub fn cancellable<T>(work: impl FnOnce() -> T) -> T {
    let flag = CancelFlag::new();
    let Ok(mut signals) = Signals::new([SIGINT, SIGTERM]) else { return work() };
    let raised = flag.clone();
    // The watcher waits for signals for the rest of the process (it ends with it).
    let _watcher = std::thread::Builder::new().name("reel-signals".into()).spawn(move || {
        for signal in signals.forever() {
            if RECEIVED.compare_exchange(0, signal, Ordering::SeqCst, Ordering::SeqCst).is_ok() {
                eprintln!(
                    "\nreel: {}: stopping at the next step and removing what was being \
                     written (again to quit at once, leaving it)",
                    signal_name(signal)
                );
                raised.cancel();
            } else {
                std::process::exit(128 + signal);
            }
        }
    });
    flag.scope(work)
}

/// The signal that stopped the command, if one did.
pub fn received() -> Option<i32> {
    match RECEIVED.load(Ordering::SeqCst) {
        0 => None,
        signal => Some(signal),
    }
}

/// How a shell names `signal`.
pub fn signal_name(signal: i32) -> &'static str {
    match signal {
        SIGINT => "interrupted (SIGINT)",
        SIGTERM => "terminated (SIGTERM)",
        _ => "stopped by a signal",
    }
}
