//! `reel cat`: records as text or JSON Lines.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;
use reel::stream::{PassRecords, StreamOptions, WholePass};

use crate::common::{OpenArgs, parse_indices};
use crate::render::{BytesAs, value_text, write_record_json};

/// Options of `reel cat`.
#[derive(Args, Debug)]
pub struct CatArgs {
    /// The dataset (file or directory).
    path: PathBuf,
    /// Records to show, e.g. `3,7,10-20` (inclusive ranges; default: all).
    #[arg(long)]
    index: Option<String>,
    /// Fields to show (default: all). Of a Parquet or Arrow IPC file, only these columns
    /// are read, so a column reel has no value for (a decimal) can be left out; of a
    /// Granular dataset, only these keys' bags.
    #[arg(long, value_delimiter = ',')]
    fields: Option<Vec<String>>,
    /// Print JSON Lines, one record per line.
    #[arg(long)]
    json: bool,
    /// How bytes appear in JSON.
    #[arg(long, value_enum, default_value_t = BytesAs::Base64)]
    bytes: BytesAs,
    #[command(flatten)]
    open: OpenArgs,
}

/// Runs `reel cat`.
pub fn run(args: &CatArgs) -> reel::Result<()> {
    let (path, mut open) = reel::locate(&args.path, &args.open.options()?)?;
    let format = open.format_of(&path)?;
    // A Parquet or IPC file reads only the columns shown, so a column of a type reel has no
    // value for (a decimal) does not stop showing the others; Granular reads only the keys
    // shown. With a payload decoded, the
    // fields shown are the payload's, not columns.
    if format.reads_columns() && open.payload == reel::Payload::Raw {
        open.columns = args.fields.clone();
    }
    let source: std::sync::Arc<dyn reel::RecordSource> =
        reel::open_as(&path, format, &reel::streaming(&open))?.into();
    // A field the records do not have is refused, not shown as nothing: up front where the
    // format declares its fields, else once no record shown had it.
    let declared = source.info().schema.as_ref().filter(|_| open.payload == reel::Payload::Raw);
    if let (Some(wanted), Some(declared)) = (&args.fields, declared)
        && let Some(missing) = wanted.iter().find(|w| !declared.iter().any(|f| &f.name == *w))
    {
        let known: Vec<&str> = declared.iter().map(|f| f.name.as_str()).collect();
        return Err(reel::Error::invalid_input(format!(
            "--fields: the records have no field {missing:?} (their fields: {})",
            known.join(", ")
        ))
        .with_path(&args.path));
    }
    // Where the fields are declared they were checked above; else each is looked for in
    // the records shown.
    let mut seen = match (&args.fields, declared) {
        (Some(wanted), None) => vec![false; wanted.len()],
        _ => Vec::new(),
    };
    let mut shown = 0u64;
    let records = match &args.index {
        Some(spec) => PassRecords::List(parse_indices(spec, source.len())?.into()),
        None => PassRecords::Range(0..source.len()),
    };
    // The next batches are read on a helper thread while this one prints; a batch over the
    // budget is read again in pieces that fit.
    let options = StreamOptions::default().max_ahead_bytes(reel::STREAM_BATCH_BYTES);
    let pass = WholePass::new(source.clone(), records.clone(), BATCH, &options)?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut show = |record: reel::RecordRef<'_>| {
        if let (false, Some(wanted)) = (seen.is_empty(), &args.fields) {
            for (k, name) in wanted.iter().enumerate() {
                seen[k] = seen[k] || record.get(name).is_some();
            }
        }
        let written = if args.json {
            write_record_json(&mut out, &record, args.bytes, args.fields.as_deref())
        } else {
            write_text(&mut out, &record, args.fields.as_deref())
        };
        if let Err(e) = written {
            // A closed pipe (`reel cat … | head`) is the reader saying it has enough:
            // end quietly with 141, as every other command does (see `stdout`).
            crate::stdout::exit_on_write_error(&e);
        }
    };
    for batch in pass {
        match batch {
            Ok(batch) => {
                shown += batch.len() as u64;
                batch.iter().for_each(&mut show);
            }
            Err(e) => {
                // The batches come in order and every record of the ones before was shown,
                // so the failed batch starts at the `shown`-th record. Its records before
                // the bad one are good: read one by one, they are shown before failing.
                let failed = by_one(&*source, &records, shown, &mut show).err();
                if let Err(e) = out.flush() {
                    crate::stdout::exit_on_write_error(&e);
                }
                return Err(failed.unwrap_or(e));
            }
        }
    }
    if let Err(e) = out.flush() {
        crate::stdout::exit_on_write_error(&e);
    }
    if let (Some(wanted), false, true) = (&args.fields, seen.is_empty(), shown > 0) {
        let never: Vec<&str> =
            wanted.iter().zip(&seen).filter(|(_, s)| !**s).map(|(w, _)| w.as_str()).collect();
        if !never.is_empty() {
            return Err(reel::Error::invalid_input(format!(
                "--fields: no record shown has the field(s) {}",
                never.join(", ")
            ))
            .with_path(&args.path));
        }
    }
    Ok(())
}

/// Records per batch of the pass.
const BATCH: usize = 256;

/// Reads and shows, one at a time, the records of `records` from position `from` on, up to
/// the end of the batch of the pass holding it, and stops at the first that cannot be read
/// with its error. `Ok` when all of them could be (the batch's error was not one record's).
fn by_one(
    source: &dyn reel::RecordSource,
    records: &PassRecords,
    from: u64,
    show: &mut impl FnMut(reel::RecordRef<'_>),
) -> reel::Result<()> {
    let mut batch = reel::RecordBatch::new();
    let end = records.len().min(from.saturating_add(BATCH as u64));
    for position in from..end {
        let index = match records {
            PassRecords::Range(r) => r.start + position,
            PassRecords::List(l) => l[position as usize],
        };
        source.read_batch_into(&[index], &mut batch)?;
        batch.iter().for_each(&mut *show);
    }
    Ok(())
}

fn write_text(
    out: &mut impl Write,
    r: &reel::RecordRef<'_>,
    only: Option<&[String]>,
) -> std::io::Result<()> {
    writeln!(out, "record {}", r.index())?;
    for (name, v) in r.iter() {
        if only.is_none_or(|o| o.iter().any(|n| n == name)) {
            writeln!(out, "  {}: {}", crate::render::printable(name), value_text(v))?;
        }
    }
    Ok(())
}
