//! `reel generate`: a synthetic dataset in any format, with content that can be checked
//! record by record afterwards (`reel::synth::record`).

use std::path::{Path, PathBuf};

use clap::Args;
use reel::{CreateOptions, Format};

use crate::common::human_bytes;
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
    /// Where to write the dataset.
    out: PathBuf,
}

/// Runs `reel generate`.
pub fn run(args: &GenerateArgs) -> reel::Result<()> {
    let format = Format::from_name(&args.format)
        .ok_or_else(|| reel::Error::invalid_input(format!("unknown format {:?}", args.format)))?;
    check_room(&args.out, format, args.records, args.max_record)?;
    let options = CreateOptions::default().overwrite(args.force);
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

/// Below this many records the payload total spreads too widely around its mean for
/// [`least_bytes`] to be a floor worth refusing on; a write that runs out of room then
/// fails like any other, leaving nothing.
const ROOM_CHECK_RECORDS: u64 = 100;

/// The fewest bytes `records` generated records of `format` take: each payload is drawn
/// evenly from 0 to `max_record` bytes, so with many records they sum to nearly half the
/// largest each; 90 % of that leaves room for chance. Gulp stores a JPEG frame or more per
/// record instead of a payload.
fn least_bytes(format: Format, records: u64, max_record: usize) -> u128 {
    let per_record = match format {
        Format::Gulp => reel::synth::jpeg_frame(0, 0).len() as u128,
        _ => max_record as u128 / 2,
    };
    u128::from(records) * per_record * 9 / 10
}

/// Refuses, before anything is written, a generated dataset that cannot fit in the free
/// space of the file system it goes to: without it, `--records` in the billions wrote
/// until the disk was full. A URL (object storage) has no such bound to ask about.
fn check_room(out: &Path, format: Format, records: u64, max_record: usize) -> reel::Result<()> {
    if records < ROOM_CHECK_RECORDS || out.to_str().is_some_and(|s| s.contains("://")) {
        return Ok(());
    }
    let dir = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    // A directory that cannot be asked (missing, not a directory) is left to the writer,
    // whose error names the path.
    let Ok(fs) = rustix::fs::statvfs(dir) else { return Ok(()) };
    let free = u128::from(fs.f_bavail) * u128::from(fs.f_frsize);
    let least = least_bytes(format, records, max_record);
    if least > free {
        let (what, smaller) = match format {
            Format::Gulp => (format!("{records} gulp videos"), ""),
            _ => (
                format!("{records} {format} records of up to {max_record} bytes"),
                " or a smaller --max-record",
            ),
        };
        return Err(reel::Error::invalid_input(format!(
            "{what} take at least {} and the file system holding {} has {} free; ask for \
             fewer --records{smaller}",
            human_bytes(u64::try_from(least).unwrap_or(u64::MAX)),
            dir.display(),
            human_bytes(u64::try_from(free).unwrap_or(u64::MAX))
        ))
        .with_path(out));
    }
    Ok(())
}
