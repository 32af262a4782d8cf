//! `reel inspect`: what a dataset is.

use std::path::PathBuf;

use clap::Args;
use serde_json::json;

use crate::common::OpenArgs;
use crate::render::printable;

/// Options of `reel inspect`.
#[derive(Args, Debug)]
pub struct InspectArgs {
    /// The dataset (file or directory).
    path: PathBuf,
    #[command(flatten)]
    open: OpenArgs,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// Runs `reel inspect`.
pub fn run(args: &InspectArgs) -> reel::Result<()> {
    // The store the dataset is read from (an object store for a URL) also answers the
    // sizes of its files; it remembers them from the open, so they cost no more requests.
    let (path, options) = reel::locate(&args.path, &args.open.options()?)?;
    let source = reel::open_with(&path, &options)?;
    let info = source.info();
    let files: Vec<(String, u64)> = info
        .paths
        .iter()
        .map(|p| Ok((p.display().to_string(), options.store.size(p)?)))
        .collect::<reel::Result<_>>()?;
    let total: u64 = files.iter().map(|f| f.1).sum();
    let uring = uring_status();
    let sampled = sampled_fields(&*source, &options)?;
    if args.json {
        let out = json!({
            "path": args.path.display().to_string(),
            "format": info.format,
            "version": info.version,
            "records": source.len(),
            "backend": source.backend_name(),
            "io_uring": uring,
            "bytes": total,
            "files": files.iter().map(|(p, s)| json!({"path": p, "size": s})).collect::<Vec<_>>(),
            "schema": info.schema.as_ref().map(|s| s.iter().map(|f| json!({"name": f.name, "kind": f.kind})).collect::<Vec<_>>()),
            "first_record_fields": sampled.as_ref().map(|s| s.iter().map(|(n, k)| json!({"name": n, "kind": k})).collect::<Vec<_>>()),
            "facts": info.facts.iter().map(|(k, v)| json!([k, v])).collect::<Vec<_>>(),
            "warnings": info.warnings.iter().map(|w| w.message.clone()).collect::<Vec<_>>(),
        });
        outln!("{out}");
        return Ok(());
    }
    outln!("path:     {}", args.path.display());
    outln!("format:   {}", info.format);
    if let Some(v) = &info.version {
        outln!("version:  {v}");
    }
    outln!("records:  {}", source.len());
    outln!("backend:  {}", source.backend_name());
    outln!("io_uring: {uring}");
    outln!("files:    {} ({} bytes)", files.len(), total);
    for (p, s) in files.iter().take(20) {
        outln!("  {s:>12}  {}", printable(p));
    }
    if files.len() > 20 {
        outln!("  … and {} more", files.len() - 20);
    }
    if let Some(schema) = &info.schema {
        outln!("fields:");
        for f in schema {
            outln!("  {}: {}", printable(&f.name), f.kind);
        }
    } else if let Some(fields) = &sampled {
        outln!("fields (of record 0, decoded from the payload; others may differ):");
        for (name, kind) in fields {
            outln!("  {}: {kind}", printable(name));
        }
    }
    for (k, v) in &info.facts {
        outln!("{k}: {v}");
    }
    for w in &info.warnings {
        outln!("warning: {}", w.message);
    }
    Ok(())
}

/// Whether io_uring works here, and why not when it does not (the io_uring and auto
/// backends then read with pread).
fn uring_status() -> String {
    #[cfg(target_os = "linux")]
    {
        match reel::uring::uring_unavailable_reason() {
            None => "available".to_string(),
            Some(why) => format!("unavailable, reads fall back to pread ({why})"),
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        "not built (Linux only)".to_string()
    }
}

/// With `--payload`, the fields record 0 decodes into and the kinds of their values: a
/// payload declares no fields (each record's come from its own bytes), so `inspect` shows
/// those of the first record. `None` without a payload, for a dataset that declares its
/// fields, or one without records.
fn sampled_fields(
    source: &dyn reel::RecordSource,
    options: &reel::OpenOptions,
) -> reel::Result<Option<Vec<(String, &'static str)>>> {
    if options.payload == reel::Payload::Raw || source.info().schema.is_some() || source.is_empty()
    {
        return Ok(None);
    }
    let record = reel::RecordSourceExt::read(source, 0)?;
    let fields = record.view().iter().map(|(n, v)| (n.to_string(), v.kind_name())).collect();
    Ok(Some(fields))
}
