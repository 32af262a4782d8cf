//! The `reel` command.

mod bench;
mod demo;
mod synth;
mod table;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Read, write, check and convert deep-learning dataset formats.
#[derive(Parser)]
#[command(name = "reel", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Generate a dataset, write it, read it back in random batches on every backend,
    /// verify every record and print what was measured.
    Demo(demo::DemoArgs),
    /// Measure random batch reads on every backend against a pread loop, a raw copy and
    /// fio, warm and cold.
    Bench(bench::BenchArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Demo(args) => demo::run(&args),
        Command::Bench(args) => bench::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("reel: error: {e}");
            ExitCode::from(2)
        }
    }
}
