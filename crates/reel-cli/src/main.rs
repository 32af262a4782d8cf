//! The `reel` command.

#![forbid(unsafe_code)]

// First, so that its `outln!`/`out!` macros are in scope in every module after it.
#[macro_use]
mod stdout;
mod arrow_args;
mod bench;
mod cat;
mod common;
mod convert;
mod demo;
mod generate;
mod inspect;
mod interrupt;
mod pack;
mod progress;
mod ray;
mod render;
mod salvage;
mod table;
mod verify;

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use interrupt::cancellable;

/// Read, write, check and convert deep-learning dataset formats.
#[derive(Parser)]
#[command(name = "reel", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Show a dataset's format, version, record count, fields, files and index facts.
    Inspect(inspect::InspectArgs),
    /// Check every structure and checksum and name every bad record (exit 0 clean,
    /// 1 damage found, 2 could not run).
    Verify(verify::VerifyArgs),
    /// Print records as text or JSON Lines.
    Cat(cat::CatArgs),
    /// Convert a dataset to another format (losses are stated; impossible mappings are
    /// refused before anything is written).
    Convert(Box<convert::ConvertArgs>),
    /// Write a synthetic dataset of checkable records in any format.
    Generate(generate::GenerateArgs),
    /// Pack a directory into one FFRecord file (a packed folder).
    Pack(pack::PackArgs),
    /// Unpack an FFRecord packed folder into a directory.
    Unpack(pack::UnpackArgs),
    /// The whole tour on generated data: write all five formats, convert across them,
    /// verify, and read in random batches on every backend, checking every record.
    Demo(demo::DemoArgs),
    /// Measure random batch reads on every backend against a pread loop, a raw copy and
    /// fio, warm and cold.
    Bench(bench::BenchArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Inspect(args) => inspect::run(&args).map(|()| ExitCode::SUCCESS),
        // The commands that write stop on Ctrl-C and SIGTERM at their next step, removing
        // what they were writing (see `interrupt`).
        Command::Verify(args) => cancellable(|| verify::run(&args)),
        Command::Cat(args) => cat::run(&args).map(|()| ExitCode::SUCCESS),
        Command::Convert(args) => cancellable(|| convert::run(&args)).map(|()| ExitCode::SUCCESS),
        Command::Generate(args) => cancellable(|| generate::run(&args)).map(|()| ExitCode::SUCCESS),
        Command::Pack(args) => cancellable(|| pack::pack(&args)).map(|()| ExitCode::SUCCESS),
        Command::Unpack(args) => cancellable(|| pack::unpack(&args)).map(|()| ExitCode::SUCCESS),
        Command::Demo(args) => cancellable(|| demo::run(&args)).map(|()| ExitCode::SUCCESS),
        // A benchmark writes its data before it reads (see `bench::workload`).
        Command::Bench(args) => cancellable(|| bench::run(&args)).map(|()| ExitCode::SUCCESS),
    };
    match result {
        Ok(code) => code,
        Err(e) => match interrupt::received() {
            // Stopped by a signal: exit as the signal would have, once the writers removed
            // what they staged.
            Some(signal) => {
                eprintln!(
                    "reel: {}: stopped; what was being written was removed",
                    interrupt::signal_name(signal)
                );
                ExitCode::from(u8::try_from(128 + signal).unwrap_or(u8::MAX))
            }
            None => {
                // Errors quote names from the data (fields, keys, files): their control
                // characters are shown escaped, not obeyed by the terminal.
                eprintln!("reel: error: {}", render::without_controls(&e.to_string()));
                ExitCode::from(2)
            }
        },
    }
}
