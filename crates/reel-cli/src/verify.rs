//! `reel verify`: check every structure and checksum and name every bad record.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use serde_json::json;

use crate::common::OpenArgs;
use reel::paths::{Existing, check_destination};

use crate::progress::bar;

/// Options of `reel verify`.
#[derive(Args, Debug)]
pub struct VerifyArgs {
    /// The dataset (file or directory).
    path: PathBuf,
    /// Write a copy without the bad records to this path (same format; it must not exist
    /// unless --force, and is never the dataset itself).
    #[arg(long)]
    salvage: Option<PathBuf>,
    /// With --salvage: replace an existing copy (only once the new one is complete).
    #[arg(long, requires = "salvage")]
    force: bool,
    /// Print JSON.
    #[arg(long)]
    json: bool,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
    #[command(flatten)]
    open: OpenArgs,
}

/// Runs `reel verify`: exit 0 when clean, 1 when damage was found, 2 when it could not run.
pub fn run(args: &VerifyArgs) -> reel::Result<ExitCode> {
    let options = args.open.options()?;
    if let Some(out) = &args.salvage {
        // Refused before the (possibly long) verification, not after it.
        let existing = if args.force { Existing::Overwrite } else { Existing::Refuse };
        check_destination(out, &[&args.path], existing)?;
    }
    let pb = bar(0, "verify", args.quiet || args.json);
    let report = reel::verify_with_progress(&args.path, &options, &mut |done, total| {
        pb.set_length(total);
        pb.set_position(done);
    })?;
    pb.finish_and_clear();
    let salvaged = match &args.salvage {
        Some(out) if report.opened => {
            Some(crate::salvage::salvage(&args.path, out, &report, &options, args.force)?)
        }
        // A part whose framing breaks keeps the dataset from opening; its frames before the
        // break, and the other parts, still read one after another.
        Some(out) if report.format == reel::Format::Ofrecord => {
            Some(crate::salvage::salvage_ofrecord_frames(&args.path, out, &options, args.force)?)
        }
        Some(_) => {
            return Err(reel::Error::corrupt(format!(
                "cannot salvage: the dataset does not open ({})",
                report.problems.first().map(|p| p.to_string()).unwrap_or_default()
            )));
        }
        None => None,
    };
    let warnings: Vec<&str> = report.warnings.iter().map(|w| w.message.as_str()).collect();
    if args.json {
        let out = json!({
            "path": args.path.display().to_string(),
            "format": report.format.name(),
            "opened": report.opened,
            "records": report.records,
            "good_records": report.good_records,
            "bad_records": report.bad_records(),
            "problems": report.problems.iter().map(|p| json!({
                "record": p.record, "path": p.path.as_ref().map(|x| x.display().to_string()),
                "offset": p.offset, "kind": p.kind.as_str(), "message": p.message,
            })).collect::<Vec<_>>(),
            "warnings": warnings,
            "checksums": report.format.stores_checksums(),
            "salvaged": salvaged,
        });
        outln!("{out}");
    } else {
        for p in &report.problems {
            outln!("{p}");
        }
        for w in &warnings {
            outln!("warning: {w}");
        }
        if report.opened {
            outln!(
                "{}: {} {} records, {} good, {} bad",
                args.path.display(),
                report.format,
                report.records,
                report.good_records,
                report.records - report.good_records
            );
            if !report.format.stores_checksums() {
                // "good" must not read as "checksummed": the format has nothing to check.
                outln!(
                    "note: {} stores no checksums; every record's structure and values were \
                     checked, but damaged bytes that still decode cannot be told from good ones",
                    report.format
                );
            }
        } else {
            outln!("{}: {} dataset does not open", args.path.display(), report.format);
        }
        if let (Some(out), Some(n)) = (&args.salvage, salvaged) {
            outln!("salvaged {n} records into {}", out.display());
        }
    }
    Ok(if report.is_clean() { ExitCode::SUCCESS } else { ExitCode::from(1) })
}
