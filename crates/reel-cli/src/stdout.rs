//! Printing to standard output when the reader may stop listening.
//!
//! `println!` panics ("failed printing to stdout: Broken pipe") when stdout is a pipe whose
//! reader has gone away, as in `reel inspect DATA | head -n 3`. A reader that closes the pipe
//! is saying it has read enough, so the command ends quietly, with the exit code a shell
//! reports for a program that the default SIGPIPE action ended (141 = 128 + 13), as GNU tools
//! do: under `set -o pipefail` a script still sees that the output was cut short, and a
//! `verify` whose report was not read never passes for a clean one. Any other write error is
//! reported and ends the command with exit code 2 ("could not run").

use std::fmt;
use std::io::{self, Write};

/// `println!` for the command's output: a closed pipe ends the program quietly.
macro_rules! outln {
    () => { $crate::stdout::print(format_args!("\n")) };
    ($($arg:tt)*) => { $crate::stdout::print(format_args!("{}\n", format_args!($($arg)*))) };
}

/// `print!` for the command's output: a closed pipe ends the program quietly.
macro_rules! out {
    ($($arg:tt)*) => { $crate::stdout::print(format_args!($($arg)*)) };
}

/// Writes `args` to stdout; see the module documentation for what a failed write does.
pub(crate) fn print(args: fmt::Arguments<'_>) {
    let mut stdout = io::stdout().lock();
    if let Err(e) = stdout.write_fmt(args).and_then(|()| stdout.flush()) {
        exit_on_write_error(&e);
    }
}

/// The exit code of a program ended by SIGPIPE, as a shell reports it.
pub(crate) const BROKEN_PIPE_EXIT: i32 = 128 + 13;

/// Ends the program after a failed write to stdout: quietly ([`BROKEN_PIPE_EXIT`]) when the
/// reader closed the pipe, with a message (2) otherwise.
pub(crate) fn exit_on_write_error(e: &io::Error) -> ! {
    if e.kind() == io::ErrorKind::BrokenPipe {
        std::process::exit(BROKEN_PIPE_EXIT);
    }
    eprintln!("reel: error: cannot write to stdout: {e}");
    std::process::exit(2);
}
