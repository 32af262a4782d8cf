//! `reel bench DATA`: random batches from an existing dataset of any format, a local path
//! or an object URL, with the same readers, timing and table as the generated matrix.
//!
//! Locally each backend reads warm (the files read once first, so they are in the page
//! cache) and cold (their pages dropped before and during each run; not `memory` and
//! `mmap`, which keep them), beside fio on the
//! dataset's largest file at the mean record size: the disk's limit for the data where it
//! lies. The readers are the generated matrix's own ([`super::reel_round`],
//! [`super::crc_rows`]), so `--threads`, `--repeat`, `--stream` and `--read-ahead` apply
//! alike, and an FFRecord dataset also gets checksum on/off rows. From a URL, reel's batched
//! reads (coalesced, concurrent range requests) are
//! measured beside the same records read one request at a time, as a file object of
//! `s3fs`/`fsspec` reads them under a reference reader; both rows count the requests each
//! batch cost, and the round trips it took when one round trip can be timed. The options
//! that do not apply there (`--threads`, `--repeat`, `--stream`, `--mode`, `--backends`,
//! `--no-fio`, `--no-baselines`, `--crc-size`) are refused.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use reel::store::{Address, ReadSettings, RemoteStore, StoreOptions};
use reel::{Format, RecordBatch, RecordSource, Store};

use super::measure::{Run, run_for};
use super::workload::Batches;
use super::{BenchArgs, ColdEviction, Report, Row, SEED, Subject, crc_rows, reel_round};

/// Measures `data` (a path or URL) and returns the report's rows.
pub(super) fn run(
    data: &str,
    args: &BenchArgs,
    names: &[String],
    budget: Duration,
) -> reel::Result<Report> {
    match Address::parse(data)? {
        Address::Remote(url) => {
            refuse_for_urls(args)?;
            let mut settings = ReadSettings::default();
            if let Some(concurrency) = args.concurrency {
                // No request in flight would read nothing: refused, not taken as one.
                if concurrency == 0 {
                    return Err(reel::Error::invalid_input(
                        "--concurrency 0: --concurrency must be at least 1",
                    ));
                }
                settings.concurrency = concurrency;
            }
            if let Some(gap) = &args.coalesce_gap {
                settings.coalesce_gap = super::parse_size(gap)?;
            }
            let store = Arc::new(RemoteStore::open(&url, &StoreOptions::default(), settings)?);
            remote(&url.location(), store, args, budget)
        }
        Address::Local(path) => {
            if args.concurrency.is_some() || args.coalesce_gap.is_some() {
                return Err(reel::Error::invalid_input(
                    "--concurrency and --coalesce-gap apply to a URL, not to a local dataset",
                ));
            }
            local(&path, args, names, budget)
        }
    }
}

/// From a URL reel's batched reads are measured once, on one thread, batch by batch,
/// against one request per record, as the store answers (no warm or cold, no backends, no
/// fio, no checksum rows): the options that would change that are refused rather than
/// ignored.
fn refuse_for_urls(args: &BenchArgs) -> reel::Result<()> {
    let refused = [
        (args.threads > 1, "--threads"),
        (args.repeat > 1, "--repeat"),
        (args.stream, "--stream"),
        (args.mode.is_some(), "--mode"),
        (args.backends.is_some(), "--backends"),
        (args.no_fio, "--no-fio"),
        (args.no_baselines, "--no-baselines"),
        (args.crc_size.is_some(), "--crc-size"),
    ];
    for (given, option) in refused {
        if given {
            return Err(reel::Error::invalid_input(format!(
                "{option} applies to local datasets and generated records, not to a URL"
            )));
        }
    }
    Ok(())
}

/// What every reader of one dataset shares: its format, size and mean record size.
struct Target {
    format: Format,
    records: u64,
    mean_record: usize,
}

impl Target {
    fn new(store: &dyn Store, path: &Path, options: &reel::OpenOptions) -> reel::Result<Self> {
        let format = reel::sniff_in(store, path)?;
        let source = reel::open_as(path, format, options)?;
        let records = source.len();
        if records == 0 {
            return Err(
                reel::Error::invalid_input("the dataset has no records to read").with_path(path)
            );
        }
        // The mean over one batch of the benchmark's own random records.
        let mut out = RecordBatch::new();
        let sample = Batches::new(records, 256, SEED).next_batch().to_vec();
        source.read_batch_into(&sample, &mut out)?;
        let mean_record = (out.buffer_len() / sample.len().max(1)).max(1);
        Ok(Target { format, records, mean_record })
    }

    fn row(&self, mode: &'static str, reader: &str, run: Run, note: String) -> Row {
        Row { mode, size: self.mean_record, reader: reader.into(), run, note, remote: None }
    }
}

/// Random batches of `batch` records from `source`, `warmup` untimed batches first;
/// returns the run and the batches read in all (warm-up included).
fn batches_run(
    source: &dyn RecordSource,
    records: u64,
    args: &BenchArgs,
    budget: Duration,
    warmup: usize,
    eviction: &ColdEviction<'_>,
) -> reel::Result<(Run, u64)> {
    let mut out = RecordBatch::new();
    let mut batches = Batches::new(records, args.batch, SEED);
    let mut count = 0;
    let run = run_for(budget, warmup, || {
        eviction.tick();
        let idx = batches.next_batch();
        source.read_batch_into(idx, &mut out)?;
        count += 1;
        Ok((idx.len() as u64, out.buffer_len() as u64))
    })?;
    Ok((run, count))
}

fn local(
    path: &Path,
    args: &BenchArgs,
    names: &[String],
    budget: Duration,
) -> reel::Result<Report> {
    let store = reel::local_store();
    let target = Target::new(&*store, path, &reel::OpenOptions::default().verify(false))?;
    let largest = largest_file(&*store, path)?;
    let crc_size = args.crc_bytes()?;
    let mut out = Report::default();
    let modes = args.temperature().modes();
    for &(mode, cold) in modes {
        if cold && !super::cold_possible(path, args.temperature(), "a copy on a disk", &mut out)? {
            continue;
        }
        let subject = Subject {
            path,
            format: target.format,
            records: target.records,
            mode,
            cold,
            size: target.mean_record,
            read_through: true,
            // memory reads the whole dataset at open, and the pages a mapping holds stay
            // cached whatever the eviction says: neither can be measured cold.
            cold_skips: &["memory", "mmap"],
        };
        // fio and every backend alternate `--repeat` times, as in the generated matrix.
        let rows = super::best_of(args.repeat, || {
            let mut rows = Vec::new();
            if !args.no_fio
                && !args.no_baselines
                && let Some(file) = &largest
            {
                rows.extend(fio_row(&target, file, mode, cold, budget, &mut out));
            }
            rows.extend(reel_round(&subject, args, names, budget, &mut out)?);
            Ok(rows)
        })?;
        out.rows.extend(rows);
        if crc_size == 0 {
            continue;
        }
        if target.format == Format::Ffrecord {
            let rows = crc_rows(&subject, args, names, budget, &mut out)?;
            out.rows.extend(rows);
        } else {
            out.note(format!(
                "No crc on/off rows: {} records carry no checksums that reel checks (only \
                 FFRecord's).",
                target.format.name()
            ));
        }
    }
    Ok(out)
}

/// fio's best queue depth on `file` at the mean record size (cold: rounded up to whole
/// pages, as O_DIRECT reads them), or, when fio fails, a note in `out` saying why.
fn fio_row(
    target: &Target,
    file: &Path,
    mode: &'static str,
    cold: bool,
    budget: Duration,
    out: &mut Report,
) -> Option<Row> {
    let block = if cold { target.mean_record.div_ceil(4096) * 4096 } else { target.mean_record };
    let secs = budget.as_secs().max(2);
    let (run, note) = super::fio_run(file, block, cold, secs, out)?;
    let note = format!("{note}, {} blocks of {}", super::human(block), file.display());
    Some(target.row(mode, "fio io_uring", run, note))
}

/// The largest object of the dataset at `path` (itself when it is one file), if any.
fn largest_file(store: &dyn Store, path: &Path) -> reel::Result<Option<PathBuf>> {
    if store.is_file(path) {
        return Ok(Some(path.to_path_buf()));
    }
    let mut best: Option<(u64, PathBuf)> = None;
    let mut pending = vec![path.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in store.list(&dir)? {
            if entry.is_dir {
                pending.push(entry.path);
            } else {
                let size = store.size(&entry.path)?;
                if best.as_ref().is_none_or(|(b, _)| size > *b) {
                    best = Some((size, entry.path));
                }
            }
        }
    }
    Ok(best.map(|(_, p)| p))
}

/// What a row read from object storage cost per batch.
#[derive(Clone, Copy, Debug)]
pub(super) struct RemoteCost {
    /// Range requests per batch (retries included).
    pub requests: f64,
    /// Wall-clock milliseconds per batch.
    pub batch_ms: f64,
    /// The batch's time in round trips (of a 1-byte ranged GET, timed before the runs),
    /// when one could be timed.
    pub round_trips: Option<f64>,
    /// Whether the run made no request at all: every batch was served from the bytes the
    /// store fetched at open (an object no larger than those first reads), so the row
    /// measured memory, not the object store.
    pub from_memory: bool,
}

fn remote(
    path: &Path,
    store: Arc<RemoteStore>,
    args: &BenchArgs,
    budget: Duration,
) -> reel::Result<Report> {
    let options = reel::OpenOptions::default().store(store.clone()).verify(false);
    let target = Target::new(&*store, path, &options)?;
    let round_trip = time_round_trip(&store, path)?;
    let source = reel::open_as(path, target.format, &options)?;
    let none = ColdEviction::new(false, path);
    let cost = |run: &Run, batches: u64, requests: u64| RemoteCost {
        requests: requests as f64 / batches.max(1) as f64,
        batch_ms: run.secs * 1e3 * args.batch as f64 / run.records.max(1) as f64,
        round_trips: round_trip
            .map(|rt| run.secs * args.batch as f64 / run.records.max(1) as f64 / rt.as_secs_f64()),
        from_memory: requests == 0,
    };
    let mut rows = Vec::new();

    let before = store.stats().requests();
    let (run, batches) = batches_run(&*source, target.records, args, budget, 1, &none)?;
    let batched = cost(&run, batches, store.stats().requests() - before);
    let mut row = target.row("remote", "reel, batched", run, String::new());
    row.remote = Some(batched);
    rows.push(row);

    // The same batches, each record its own request, one after another.
    let before = store.stats().requests();
    let mut batches = Batches::new(target.records, args.batch, SEED);
    let mut out = RecordBatch::new();
    let mut count = 0;
    let run = run_for(budget, 1, || {
        let idx = batches.next_batch();
        let mut bytes = 0;
        for &i in idx {
            source.read_batch_into(&[i], &mut out)?;
            bytes += out.buffer_len() as u64;
        }
        count += 1;
        Ok((idx.len() as u64, bytes))
    })?;
    let single = cost(&run, count, store.stats().requests() - before);
    let note = format!("reel batched is {:.1}×", batched_speedup(&rows[0].run, &run));
    let mut row = target.row("remote", "one request per record", run, note);
    row.remote = Some(single);
    rows.push(row);
    let mut report = Report { rows, notes: Vec::new() };
    if batched.from_memory || single.from_memory {
        for row in report.rows.iter_mut().filter(|r| r.remote.is_some_and(|c| c.from_memory)) {
            row.note = match row.note.as_str() {
                "" => FROM_MEMORY.to_string(),
                note => format!("{note}; {FROM_MEMORY}"),
            };
        }
        let size = match largest_file(&*store, path)? {
            Some(file) => format!("{} bytes", store.size(&file)?),
            None => "no object".to_string(),
        };
        report.note(format!(
            "{FROM_MEMORY}: the dataset (largest object {size}) is held whole by the {} KiB \
             reel reads of each end of an object at open, so the batches made no request \
             and these rows measure memory, not the object store (a larger dataset \
             measures the store).",
            reel::store::END_BYTES >> 10
        ));
    }
    Ok(report)
}

/// How a URL row that made no request is marked ([`RemoteCost::from_memory`]).
const FROM_MEMORY: &str = "served from memory";

fn batched_speedup(batched: &Run, single: &Run) -> f64 {
    batched.records_per_sec() / single.records_per_sec().max(1e-9)
}

/// The median time of a 1-byte ranged GET in the middle of the dataset's largest object,
/// over 9 tries; `None` when the object is too small for a read there to miss the 64 KiB
/// ends the store keeps (it would not make a request).
fn time_round_trip(store: &RemoteStore, path: &Path) -> reel::Result<Option<Duration>> {
    const ENDS: u64 = reel::store::END_BYTES;
    let Some(file) = largest_file(store, path)? else { return Ok(None) };
    let size = store.size(&file)?;
    if size <= 3 * ENDS {
        return Ok(None);
    }
    let mut times = Vec::new();
    for k in 0..9u64 {
        let before = store.stats().requests();
        let started = Instant::now();
        store.read_range(&file, size / 2 + k, 1)?;
        if store.stats().requests() == before {
            return Ok(None);
        }
        times.push(started.elapsed());
    }
    times.sort();
    Ok(Some(times[times.len() / 2]))
}
