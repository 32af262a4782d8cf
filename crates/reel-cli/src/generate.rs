//! `reel generate`: a synthetic dataset in any format, with content that can be checked
//! record by record afterwards (`reel::synth::record`).

use std::path::PathBuf;

use clap::Args;
use reel::{CreateOptions, Format};

use crate::progress::bar;

/// Options of `reel generate`.
#[derive(Args, Debug)]
pub struct GenerateArgs {
    /// Format to write.
    #[arg(long, default_value = "ffrecord")]
    format: String,
    /// Number of records.
    #[arg(long, default_value_t = 1000)]
    records: u64,
    /// Largest record payload in bytes.
    #[arg(long, default_value_t = 4096)]
    max_record: usize,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
    /// Replace an existing dataset at the output path.
    #[arg(long)]
    force: bool,
    /// Object storage: retries of a failed request (a timeout, a refused connection, a 5xx
    /// or throttling answer), with exponential backoff; 0 fails at the first error.
    #[arg(long, value_name = "N", default_value_t = reel::store::RetrySettings::default().max_retries)]
    retries: usize,
    /// Where to write the dataset.
    out: PathBuf,
}

/// Runs `reel generate`.
pub fn run(args: &GenerateArgs) -> reel::Result<()> {
    let format = Format::from_name(&args.format)
        .ok_or_else(|| reel::Error::invalid_input(format!("unknown format {:?}", args.format)))?;
    let mut options = CreateOptions::default().overwrite(args.force);
    options.storage_option("retries", &args.retries.to_string())?;
    let pb = bar(args.records, "generate", args.quiet);
    let summary = reel::synth::generate(
        &args.out,
        format,
        args.records,
        args.max_record,
        &options,
        &mut |_| pb.inc(1),
    )?;
    pb.finish_and_clear();
    outln!(
        "wrote {} {format} records ({} bytes) to {}",
        summary.records,
        summary.bytes,
        args.out.display()
    );
    Ok(())
}
