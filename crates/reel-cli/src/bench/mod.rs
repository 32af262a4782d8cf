//! `reel bench`: random batch reads of fixed-size records on every backend, warm and cold,
//! with the yardsticks measured in the same run.
//!
//! Warm data lives on tmpfs (`/dev/shm`), so it is in memory for the whole run. Cold data
//! lives on a real disk; before and during each buffered run the file's pages are dropped
//! from the page cache (`posix_fadvise(DONTNEED)`, no privileges needed), and the
//! `io_uring-direct` backend and fio read with `O_DIRECT`.
//!
//! The backend matrix reads with FFRecord checksums off, so it measures the read path; the
//! checksum's cost is a separate row (`crc on/off`).
//!
//! `reel bench DATA` measures an existing dataset instead, a local path or an object URL
//! (see [`data`]).

mod baseline;
mod crc;
mod data;
mod measure;
mod workload;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use clap::{Args, ValueEnum};
use reel::{Backend, Format, RecordBatch, RecordSource};

use crate::table::Table;
use measure::{Run, run_parallel};
use workload::{Batches, Dataset, dataset};

/// Which cache state to measure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Temperature {
    /// Data in memory (tmpfs).
    Warm,
    /// Data on disk, not cached.
    Cold,
    /// Both.
    Both,
}

impl Temperature {
    /// The cache states to measure, each named and whether it is cold.
    fn modes(self) -> &'static [(&'static str, bool)] {
        match self {
            Temperature::Warm => &[("warm", false)],
            Temperature::Cold => &[("cold", true)],
            Temperature::Both => &[("warm", false), ("cold", true)],
        }
    }
}

/// Options of `reel bench`.
#[derive(Args, Debug)]
pub struct BenchArgs {
    /// An existing dataset to measure (any format; a path or a URL such as
    /// `s3://bucket/key`) instead of generated fixed-size records: each backend warm and
    /// cold beside fio on its disk, or, from a URL, reel's batched reads beside one request
    /// per record, with the requests and round trips each batch cost.
    #[arg(value_name = "DATA")]
    dataset: Option<String>,
    /// Record sizes, with k/m suffixes (generated records only).
    #[arg(long, value_delimiter = ',', default_value = "1k,16k,256k", conflicts_with = "dataset")]
    sizes: Vec<String>,
    /// Records per batch.
    #[arg(long, default_value_t = 256)]
    batch: usize,
    /// The format reel reads (the yardsticks read the same payloads from a flat FFRecord
    /// copy: the raw-bytes limit). Generated records only: DATA's format is read from it.
    #[arg(long, default_value = "ffrecord", conflicts_with = "dataset")]
    format: String,
    /// Warm, cold or both [default: both] (not with a URL, which is read as it comes).
    #[arg(long, value_enum)]
    mode: Option<Temperature>,
    /// Bytes of data per dataset (k/m/g suffixes; generated records only). Each record
    /// size's dataset has at least 1024 records; the checksum dataset (--crc-size) no more
    /// than this.
    #[arg(long, default_value = "1g", conflicts_with = "dataset")]
    data: String,
    /// Seconds per measurement.
    #[arg(long, default_value_t = 2.0)]
    secs: f64,
    /// Directory for warm datasets (should be tmpfs; generated records only). The
    /// datasets (`bench-*`) are kept there for the next run to reuse, in memory on tmpfs,
    /// until removed (`rm -r DIR/bench-*`); the run ends saying how large they are.
    #[arg(long, default_value = "/dev/shm/reel-bench", conflicts_with = "dataset")]
    warm_dir: PathBuf,
    /// Directory for cold datasets (must be on a real disk; generated records only). The
    /// datasets (`bench-*`) are kept there for the next run to reuse until removed
    /// (`rm -r DIR/bench-*`); the run ends saying how large they are.
    #[arg(long, default_value = "reel-bench-data", conflicts_with = "dataset")]
    cold_dir: PathBuf,
    /// Backends to measure (default: all of this build).
    #[arg(long, value_delimiter = ',')]
    backends: Option<Vec<String>>,
    /// Skip fio even when it is installed.
    #[arg(long)]
    no_fio: bool,
    /// Measure only reel's backends (no pread loop, raw copies or fio).
    #[arg(long)]
    no_baselines: bool,
    /// Record size for the checksum on/off comparison on each backend (0 to skip)
    /// [default: 100k]. With DATA, any size but 0 compares the dataset's own records
    /// (FFRecord only).
    #[arg(long)]
    crc_size: Option<String>,
    /// Reader threads sharing one source (each reads its own batches; fio keeps its best
    /// single-job queue depth).
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Measure each reader this many times, alternating, and keep its best run.
    #[arg(long, default_value_t = 1)]
    repeat: usize,
    /// Also measure each backend through a `BatchStream` (rows "<backend>, stream").
    #[arg(long)]
    stream: bool,
    /// Batches a stream reads ahead (with `--stream`, which it needs).
    #[arg(long, default_value_t = 2, requires = "stream")]
    read_ahead: usize,
    /// Helper threads each stream reads with (with `--stream`) [default: 1].
    #[arg(long, requires = "stream")]
    stream_threads: Option<usize>,
    /// Also measure the streams without telling the backend the next batch (rows
    /// "<backend>, stream, no hint"), to see what the read-ahead of `O_DIRECT` io_uring
    /// brings (with `--stream`).
    #[arg(long, requires = "stream")]
    no_hint_rows: bool,
    /// Measure only the CRC-32 implementations (GB/s at 1 KiB, 100 KiB and 1 MiB: crc32fast,
    /// crc-fast and the one reel uses) and exit.
    #[arg(long)]
    crc: bool,
    /// From a URL: range requests in flight at once (default: reel's, 64).
    #[arg(long, requires = "dataset")]
    concurrency: Option<usize>,
    /// From a URL: merge two records' ranges into one request when at most this many bytes
    /// lie between them (k/m suffixes; default: reel's, 1m).
    #[arg(long, requires = "dataset")]
    coalesce_gap: Option<String>,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

impl BenchArgs {
    /// The cache states to measure (`--mode`, both by default).
    fn temperature(&self) -> Temperature {
        self.mode.unwrap_or(Temperature::Both)
    }

    /// The record size of the checksum on/off rows (`--crc-size`, 100 KiB by default).
    fn crc_bytes(&self) -> reel::Result<u64> {
        parse_size(self.crc_size.as_deref().unwrap_or("100k"))
    }
}

/// Parses `16k`, `1m`, `2g` or a plain number of bytes ([`reel::store::parse_size`]).
pub fn parse_size(s: &str) -> reel::Result<u64> {
    reel::store::parse_size(s)
        .ok_or_else(|| reel::Error::invalid_input(format!("not a size: {s:?}")))
}

/// One line of the report.
#[derive(Clone, Debug)]
struct Row {
    mode: &'static str,
    size: usize,
    reader: String,
    run: Run,
    note: String,
    /// Requests and round trips per batch, for rows read from object storage.
    remote: Option<data::RemoteCost>,
}

/// The rows of a report and the notes printed under them (in JSON mode, on stderr).
#[derive(Debug, Default)]
struct Report {
    rows: Vec<Row>,
    notes: Vec<String>,
}

impl Report {
    /// Adds `note` unless it is there already.
    fn note(&mut self, note: impl Into<String>) {
        let note = note.into();
        if !self.notes.contains(&note) {
            self.notes.push(note);
        }
    }
}

/// Seed of the batch generator (thread `t` uses `SEED + t`).
pub(crate) const SEED: u64 = 0xBE4C;

/// The longest `--secs` accepted: one day.
const MAX_SECS: f64 = 86_400.0;

/// The time budget of each measurement (`--secs`, at least 0.1 s), once the options have
/// been checked: a number of seconds that is not positive and finite, or that is more than
/// a day, a batch of no records, and no threads or repeats are refused rather than
/// panicking or being changed.
fn checked_budget(args: &BenchArgs) -> reel::Result<Duration> {
    if !(args.secs.is_finite() && args.secs > 0.0 && args.secs <= MAX_SECS) {
        return Err(reel::Error::invalid_input(format!(
            "--secs {}: give a number of seconds above 0 and at most {MAX_SECS} (a day)",
            args.secs
        )));
    }
    if args.batch == 0 {
        return Err(reel::Error::invalid_input("--batch 0: a batch needs at least one record"));
    }
    // Zero threads or repeats would measure nothing (and were quietly taken as one).
    if args.threads == 0 {
        return Err(reel::Error::invalid_input("--threads 0: --threads must be at least 1"));
    }
    if args.repeat == 0 {
        return Err(reel::Error::invalid_input("--repeat 0: --repeat must be at least 1"));
    }
    Ok(Duration::from_secs_f64(args.secs.max(0.1)))
}

/// Runs the benchmark.
pub fn run(args: &BenchArgs) -> reel::Result<()> {
    let budget = checked_budget(args)?;
    if args.crc {
        return crc::run(budget, args.repeat, args.json);
    }
    let format = Format::from_name(&args.format)
        .ok_or_else(|| reel::Error::invalid_input(format!("unknown format {:?}", args.format)))?;
    let data = parse_size(&args.data)?;
    let names: Vec<String> = match &args.backends {
        // Rows, notes and cold skips go by the names `backend_names` gives: the spelling
        // that reads print (`io_uring+direct`) is taken as the one they list.
        Some(list) => list
            .iter()
            .map(|n| if n == "io_uring+direct" { "io_uring-direct" } else { n })
            .map(String::from)
            .collect(),
        None => reel::backend_names().into_iter().map(String::from).collect(),
    };
    if let Some(dataset) = &args.dataset {
        report(&data::run(dataset, args, &names, budget)?, args.json);
        return Ok(());
    }
    let sizes = args.sizes.iter().map(|s| parse_size(s).map(|n| n as usize));
    let sizes = sizes.collect::<reel::Result<Vec<usize>>>()?;
    if sizes.contains(&0) {
        return Err(reel::Error::invalid_input("--sizes 0: a record needs at least one byte"));
    }
    let mut out = Report::default();
    // The directories datasets were written to or reused in, for the note on what is kept.
    let mut used: Vec<PathBuf> = Vec::new();
    let modes = args.temperature().modes();
    for &(mode, cold) in modes {
        let dir = if cold { &args.cold_dir } else { &args.warm_dir };
        std::fs::create_dir_all(dir)
            .map_err(|e| reel::Error::io(e, "cannot create bench directory").with_path(dir))?;
        if cold && !cold_possible(dir, args.temperature(), "a --cold-dir on a disk", &mut out)? {
            continue;
        }
        for &size in &sizes {
            eprintln!("preparing {mode} dataset of {size}-byte records in {}", dir.display());
            // At least 1024 records, so that batches of 256 are drawn from many.
            let ds = dataset(dir, format, size, data, 1024)?;
            if !used.contains(dir) {
                used.push(dir.clone());
            }
            let rows = best_of(args.repeat, || {
                measure_round(&ds, mode, cold, args, &names, budget, &mut out)
            })?;
            out.rows.extend(rows);
        }
    }
    let crc_size = args.crc_bytes()? as usize;
    if crc_size > 0 {
        for &(mode, cold) in modes {
            let dir = if cold { &args.cold_dir } else { &args.warm_dir };
            if cold && is_tmpfs(dir) {
                continue;
            }
            // Only --data's worth (1024 records of 100 KiB were 100 MB whatever --data said).
            let ds = dataset(dir, Format::Ffrecord, crc_size, data, 1)?;
            if !used.contains(dir) {
                used.push(dir.clone());
            }
            let subject = ds.subject(mode, cold);
            let rows = crc_rows(&subject, args, &names, budget, &mut out)?;
            out.rows.extend(rows);
        }
    }
    for dir in &used {
        out.note(kept_note(dir));
    }
    report(&out, args.json);
    Ok(())
}

/// The note saying what `reel bench` keeps in `dir` for the next run and how to remove it:
/// the datasets stay (on tmpfs, in memory) until removed.
fn kept_note(dir: &Path) -> String {
    let (bytes, count) = workload::kept(dir);
    format!(
        "Kept for the next run: {count} dataset(s), {}, in {} (remove with rm -r {}/{}*).",
        human_bytes(bytes),
        dir.display(),
        dir.display(),
        workload::DATA_PREFIX
    )
}

/// What reel reads in one set of rows: a dataset, its format, how many records it has, the
/// cache state, and the record size the rows are labelled with.
#[derive(Clone, Copy)]
struct Subject<'a> {
    /// The dataset: a file or a directory.
    path: &'a Path,
    format: Format,
    records: u64,
    mode: &'static str,
    cold: bool,
    /// The record size of the rows (the mean, for an existing dataset).
    size: usize,
    /// Warm, read the files through once before each reader (they may not be in memory).
    read_through: bool,
    /// Backends not measured cold (they would read from memory).
    cold_skips: &'static [&'static str],
}

impl Subject<'_> {
    fn row(&self, reader: impl Into<String>, run: Run, note: String) -> Row {
        Row { mode: self.mode, size: self.size, reader: reader.into(), run, note, remote: None }
    }

    /// Before each reader: cold, the files' pages dropped; warm, read once if asked.
    fn prepare(&self) -> reel::Result<()> {
        if self.cold {
            evict(self.path);
        } else if self.read_through {
            read_through(self.path)?;
        }
        Ok(())
    }
}

/// Reads every file below `path` once, so that warm runs find it in the page cache.
fn read_through(path: &Path) -> reel::Result<()> {
    if path.is_dir() {
        let entries = std::fs::read_dir(path)
            .map_err(|e| reel::Error::io(e, "cannot list").with_path(path))?;
        for entry in entries.flatten() {
            read_through(&entry.path())?;
        }
    } else if path.is_file() {
        let mut file = std::fs::File::open(path)
            .map_err(|e| reel::Error::io(e, "cannot open").with_path(path))?;
        std::io::copy(&mut file, &mut std::io::sink())
            .map_err(|e| reel::Error::io(e, "cannot read").with_path(path))?;
    }
    Ok(())
}

/// Runs `round` `repeat` times (at least once) and keeps each reader's best run: the
/// readers of a round alternate, so that slow drifts of the device (a virtual disk's host
/// cache, other tenants) hit all of them alike.
fn best_of(
    repeat: usize,
    mut round: impl FnMut() -> reel::Result<Vec<Row>>,
) -> reel::Result<Vec<Row>> {
    let mut best: Vec<Row> = Vec::new();
    for _ in 0..repeat.max(1) {
        for row in round()? {
            match best.iter_mut().find(|b| b.reader == row.reader) {
                Some(b) if row.run.records_per_sec() > b.run.records_per_sec() => *b = row,
                Some(_) => {}
                None => best.push(row),
            }
        }
    }
    Ok(best)
}

/// One round of the generated matrix at one record size: the yardsticks and reel.
fn measure_round(
    ds: &Dataset,
    mode: &'static str,
    cold: bool,
    args: &BenchArgs,
    names: &[String],
    budget: Duration,
    out: &mut Report,
) -> reel::Result<Vec<Row>> {
    let mut rows = Vec::new();
    let warmup = if cold { 2 } else { 0 };
    let row = |reader: &str, run: Run, note: String| Row {
        mode,
        size: ds.record_size,
        reader: reader.to_string(),
        run,
        note,
        remote: None,
    };

    if !args.no_baselines {
        let eviction = ColdEviction::new(cold, &ds.path);
        let run = baseline::pread_loop(ds, args.batch, args.threads, budget, warmup, &eviction)?;
        rows.push(row("pread loop", run, eviction.warmth(&run).unwrap_or_default()));
    }
    if !cold && !args.no_baselines {
        rows.push(row(
            "mmap+copy loop",
            baseline::mmap_copy_loop(ds, args.batch, budget, warmup)?,
            String::new(),
        ));
        let data =
            std::fs::read(&ds.path).map_err(|e| reel::Error::io(e, "read").with_path(&ds.path))?;
        let run = baseline::fresh_copy_loop(ds, &data, args.batch, budget, warmup)?;
        rows.push(row("raw copy (fresh buffer)", run, String::new()));
    }
    if !args.no_fio && !args.no_baselines {
        for (reader, run, note) in fio_rows(ds, cold, budget.as_secs().max(2), out) {
            rows.push(row(reader, run, note));
        }
    }
    rows.extend(reel_round(&ds.subject(mode, cold), args, names, budget, out)?);
    Ok(rows)
}

/// reel's rows of one round: each backend of `names` (but the subject's `cold_skips`,
/// cold) reading random batches, and with `--stream` the same through a `BatchStream`, each row
/// labelled with the backend that actually read ([`label`]).
fn reel_round(
    subject: &Subject<'_>,
    args: &BenchArgs,
    names: &[String],
    budget: Duration,
    out: &mut Report,
) -> reel::Result<Vec<Row>> {
    let mut rows = Vec::new();
    for (name, backend) in backends(subject, names, out)? {
        subject.prepare()?;
        let started = Instant::now();
        let measured = reel_run(subject, backend.clone(), false, args, budget)?;
        let label = label(subject.format, name, measured.backend);
        let mut notes = Vec::new();
        if started.elapsed() > budget * 4 {
            notes.push("slow to open".to_string());
        }
        notes.extend(fallback_reason(name, &measured.files));
        notes.extend(measured.warmth);
        rows.push(subject.row(&label, measured.run, notes.join("; ")));
        if args.stream {
            let hints: &[bool] = if args.no_hint_rows { &[true, false] } else { &[true] };
            for &hint in hints {
                subject.prepare()?;
                let (run, warmth) = reel_stream_run(subject, backend.clone(), args, budget, hint)?;
                let warmth = warmth.filter(|_| !measured.backend.contains("+direct"));
                let name = if hint { "stream" } else { "stream, no hint" };
                rows.push(subject.row(format!("{label}, {name}"), run, warmth.unwrap_or_default()));
            }
        }
    }
    Ok(rows)
}

/// The backends of `names` to measure `subject` with, by name: none of its `cold_skips`
/// when cold, and only one for a format that does its own I/O ([`reads_itself`]), with a note.
fn backends<'n>(
    subject: &Subject<'_>,
    names: &'n [String],
    out: &mut Report,
) -> reel::Result<Vec<(&'n str, reel::Backend)>> {
    let mut list = Vec::new();
    for name in names {
        let Some(backend) = reel::backend_by_name(name) else {
            return Err(reel::Error::invalid_input(format!("unknown backend {name:?}")));
        };
        if subject.cold && subject.cold_skips.contains(&name.as_str()) {
            out.note(format!("No cold {name} row: {}.", cold_skip_reason(name)));
            continue;
        }
        list.push((name.as_str(), backend));
    }
    if reads_itself(subject.format) {
        // One row per way the file is read, whatever the backends' names.
        let mut ways = Vec::new();
        list.retain(|(name, _)| {
            let way = arrow_way(subject.format, name);
            let first = !ways.contains(&way);
            ways.push(way);
            first
        });
        out.note(match subject.format {
            Format::ArrowIpc => format!(
                "arrow files are decoded by arrow-rs: where they lie in a mapping under auto \
                 and mmap (\"{ARROW_READER}, mapped\"), read batch by batch under the other \
                 backends (\"{ARROW_READER}, read\"): one row for each that --backends asks for."
            ),
            format => format!(
                "{} files are read by arrow-rs, which does its own I/O whatever the backend: \
                 one row, \"{ARROW_READER}\", however many --backends are asked for.",
                format.name()
            ),
        });
    }
    Ok(list)
}

/// Why backend `name`, one of a subject's `cold_skips`, has no cold rows: the note printed
/// when one is left out, so that a missing row is not taken for one forgotten.
pub(crate) fn cold_skip_reason(name: &str) -> &'static str {
    match name {
        "memory" => "memory reads the whole dataset into memory at open",
        "mmap" => {
            "the pages a live mapping holds stay in the page cache whatever posix_fadvise \
             (DONTNEED) says, so mmap would read every page after its first touch from \
             memory (auto reads uncached data with io_uring O_DIRECT instead)"
        }
        _ => "it would read from memory",
    }
}

/// The row of the reader of Parquet and Arrow IPC files.
const ARROW_READER: &str = "arrow-rs reader";

/// Whether `format`'s reader does its own I/O, so that reel's backends do not apply.
fn reads_itself(format: Format) -> bool {
    matches!(format, Format::Parquet | Format::ArrowIpc)
}

/// How a file of a format that reads itself is read under backend `asked`: an Arrow IPC
/// file is mapped under `auto` and `mmap` and read otherwise; Parquet is read one way.
fn arrow_way(format: Format, asked: &str) -> Option<&'static str> {
    match format {
        Format::ArrowIpc if reel::maps_ipc_files(asked) => Some("mapped"),
        Format::ArrowIpc => Some("read"),
        _ => None,
    }
}

/// The row label of a reader asked for backend `asked` that read through `actual`
/// ([`reel::RecordSource::backend_name`]): the backend's name when it read as asked,
/// otherwise what read and what was asked (`io_uring(pread fallback), asked io_uring`).
fn label(format: Format, asked: &str, actual: &str) -> String {
    if reads_itself(format) {
        match arrow_way(format, asked) {
            Some(way) => format!("{ARROW_READER}, {way}"),
            None => ARROW_READER.to_string(),
        }
    } else if actual.replace('+', "-") == asked {
        asked.to_string()
    } else {
        format!("{actual}, asked {asked}")
    }
}

/// Why backend `name` cannot read `files` the way it asks (io_uring unavailable, no
/// `O_DIRECT` on their file system), if it cannot: what [`reel::uring::UringFiles`] says
/// when it falls back, for the backends that read through it (`auto` for cold data).
fn fallback_reason(name: &str, files: &[PathBuf]) -> Option<String> {
    #[cfg(target_os = "linux")]
    {
        use reel::uring::{UringFiles, UringOptions};
        let (options, whose) = match name {
            "io_uring" => (UringOptions::default(), ""),
            "io_uring-direct" => (UringOptions::default().direct(true), ""),
            "auto" => (UringOptions::default().direct(true), "its ring for uncached data: "),
            _ => return None,
        };
        if files.is_empty() {
            return None;
        }
        match UringFiles::open_with(files, &options) {
            Ok(f) => f.fallback_reason().map(|why| format!("{whose}{why}")),
            Err(e) => Some(format!("{whose}cannot open for io_uring ({e})")),
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (name, files);
        None
    }
}

/// Checksums off and on, alternating `--repeat` times (each keeps its best run, like the
/// readers above, so that a busy moment of the machine hits both alike), on each backend.
fn crc_rows(
    subject: &Subject<'_>,
    args: &BenchArgs,
    names: &[String],
    budget: Duration,
    out: &mut Report,
) -> reel::Result<Vec<Row>> {
    let mut rows = Vec::new();
    for (name, backend) in backends(subject, names, out)? {
        let mut pair = [Run::default(); 2];
        let mut warmth = [None, None];
        let mut actual = name;
        for _ in 0..args.repeat.max(1) {
            for (k, verify) in [false, true].into_iter().enumerate() {
                subject.prepare()?;
                let measured = reel_run(subject, backend.clone(), verify, args, budget)?;
                actual = measured.backend;
                if measured.run.records_per_sec() > pair[k].records_per_sec() {
                    pair[k] = measured.run;
                    warmth[k] = measured.warmth;
                }
            }
        }
        let label = label(subject.format, name, actual);
        let cost = pair[0].records_per_sec() / pair[1].records_per_sec().max(1e-9) - 1.0;
        let [off, on] = warmth;
        rows.push(subject.row(format!("{label}, crc off"), pair[0], off.unwrap_or_default()));
        let note = format!("crc costs {:+.0}%", cost * 100.0);
        let note = on.map_or_else(|| note.clone(), |w| format!("{note}; {w}"));
        rows.push(subject.row(format!("{label}, crc on"), pair[1], note));
    }
    Ok(rows)
}

/// When fio fails, its row is left out and a note in `out` says why.
fn fio_rows(
    ds: &Dataset,
    cold: bool,
    secs: u64,
    out: &mut Report,
) -> Vec<(&'static str, Run, String)> {
    let mut rows = Vec::new();
    if let Some((run, note)) = fio_run(&ds.path, ds.record_size, cold, secs, out) {
        rows.push(("fio io_uring", run, note));
    }
    if !cold {
        return rows;
    }
    let span = ds.direct_span();
    if span != ds.record_size
        && let Some((run, note)) = fio_run(&ds.path, span, true, secs, out)
    {
        rows.push((FIO_SPAN, run, format!("{note}, {} blocks", human(span))));
    }
    rows
}

/// fio's best run on `path` in blocks of `block` bytes and its note ("iodepth N", with
/// ", O_DIRECT" when `direct`), or `None` with a note in `out` saying why fio failed.
fn fio_run(
    path: &Path,
    block: usize,
    direct: bool,
    secs: u64,
    out: &mut Report,
) -> Option<(Run, String)> {
    match baseline::fio_best(path, block, direct, secs) {
        Ok((run, depth)) => {
            Some((run, format!("iodepth {depth}{}", if direct { ", O_DIRECT" } else { "" })))
        }
        Err(why) => {
            out.note(fio_failed(&why));
            None
        }
    }
}

/// The note for a fio row left out.
fn fio_failed(why: &str) -> String {
    format!("No fio row: {why}. The ×fio ratios are left blank.")
}

/// A measured run of reel and what it read through.
struct Measured {
    run: Run,
    /// The backend that read ([`reel::RecordSource::backend_name`]).
    backend: &'static str,
    /// The files the source read.
    files: Vec<PathBuf>,
    /// Cold, why the run was partly warm ([`ColdEviction::warmth`]).
    warmth: Option<String>,
}

/// Random batches through reel on `backend`, each thread reusing one batch buffer.
fn reel_run(
    subject: &Subject<'_>,
    backend: Backend,
    verify: bool,
    args: &BenchArgs,
    budget: Duration,
) -> reel::Result<Measured> {
    let options = reel::OpenOptions::default().backend(backend).verify(verify);
    let reader = reel::open_as(subject.path, subject.format, &options)?;
    let warmup = if subject.cold { 2 } else { 0 };
    let eviction = ColdEviction::new(subject.cold, subject.path);
    let run = run_parallel(args.threads, budget, warmup, |t| {
        let (reader, eviction) = (&reader, &eviction);
        let mut out = RecordBatch::new();
        let mut batches = Batches::new(subject.records, args.batch, SEED + t as u64);
        Ok(move || {
            eviction.tick();
            let idx = batches.next_batch();
            reader.read_batch_into(idx, &mut out)?;
            Ok((idx.len() as u64, out.buffer_len() as u64))
        })
    })?;
    let backend = reader.backend_name();
    // O_DIRECT reads bypass the page cache: what it holds does not matter to them.
    let warmth = if backend.contains("+direct") { None } else { eviction.warmth(&run) };
    Ok(Measured { run, backend, files: reader.info().paths.clone(), warmth })
}

/// Random batches through a [`reel::BatchStream`] on `backend`: one helper thread per
/// reader thread reads the next batches while the reader takes this one.
fn reel_stream_run(
    subject: &Subject<'_>,
    backend: Backend,
    args: &BenchArgs,
    budget: Duration,
    hint_next: bool,
) -> reel::Result<(Run, Option<String>)> {
    let options = reel::OpenOptions::default().backend(backend).verify(false);
    let reader: std::sync::Arc<dyn RecordSource> =
        std::sync::Arc::from(reel::open_as(subject.path, subject.format, &options)?);
    let warmup = if subject.cold { 2 } else { 0 };
    let eviction = ColdEviction::new(subject.cold, subject.path);
    let mut stream_options =
        reel::StreamOptions::default().read_ahead(args.read_ahead).hint_next(hint_next);
    if let Some(threads) = args.stream_threads {
        stream_options = stream_options.threads(threads);
    }
    let run = run_parallel(args.threads, budget, warmup, |t| {
        let eviction = &eviction;
        let mut batches = Batches::new(subject.records, args.batch, SEED + t as u64);
        let plan = reel::BatchPlan::from_fn(move |out| {
            out.extend_from_slice(batches.next_batch());
            true
        });
        let mut stream = reel::BatchStream::new(reader.clone(), plan, &stream_options)?;
        Ok(move || {
            eviction.tick();
            let batch = stream
                .next()
                .unwrap_or_else(|| Err(reel::Error::invalid_input("the stream ended")))?;
            Ok((batch.len() as u64, batch.buffer_len() as u64))
        })
    })?;
    let warmth = eviction.warmth(&run);
    Ok((run, warmth))
}

/// Keeps a cold dataset cold while a buffered reader runs: its pages are dropped from the
/// page cache when the run starts and then every 50 ms, or before every batch for a dataset
/// of at most [`EVICT_EVERY_BATCH`] bytes (which a run reads through between two evictions
/// 50 ms apart), so records a run reads twice (or that an earlier run read) are not served
/// from memory. Does nothing for warm runs.
pub(crate) struct ColdEviction<'a> {
    path: Option<&'a Path>,
    /// The dataset's bytes.
    bytes: u64,
    every_batch: bool,
    last: std::sync::Mutex<Instant>,
    evictions: std::sync::atomic::AtomicU64,
}

/// Datasets up to this size are evicted before every batch (see [`ColdEviction`]).
const EVICT_EVERY_BATCH: u64 = 64 << 20;

impl<'a> ColdEviction<'a> {
    fn new(cold: bool, path: &'a Path) -> Self {
        let path = cold.then_some(path);
        let bytes = path.map_or(0, total_size);
        if let Some(p) = path {
            evict(p);
        }
        ColdEviction {
            path,
            bytes,
            every_batch: bytes <= EVICT_EVERY_BATCH,
            last: std::sync::Mutex::new(Instant::now()),
            evictions: std::sync::atomic::AtomicU64::new(1),
        }
    }

    /// Called before each batch by every reader thread; one of them evicts when it is due.
    pub(crate) fn tick(&self) {
        let Some(path) = self.path else { return };
        if let Ok(mut last) = self.last.try_lock()
            && (self.every_batch || last.elapsed() > Duration::from_millis(50))
        {
            evict(path);
            self.evictions.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            *last = Instant::now();
        }
    }

    /// For a cold `run` through the page cache: a warning when it read more than a quarter
    /// of the dataset's bytes between two evictions, so that part of what it read again
    /// came from memory and the row is warmer than its label.
    fn warmth(&self, run: &Run) -> Option<String> {
        self.path?;
        let evictions = self.evictions.load(std::sync::atomic::Ordering::Relaxed).max(1);
        let per_eviction = run.bytes / evictions;
        (per_eviction.saturating_mul(4) > self.bytes).then(|| {
            format!(
                "{PARTLY_WARM}: {} read per eviction, dataset {}",
                human_bytes(per_eviction),
                human_bytes(self.bytes)
            )
        })
    }
}

/// How a cold row read partly from memory starts its note ([`ColdEviction::warmth`]).
const PARTLY_WARM: &str = "partly warm";

/// The bytes of a file, or of every file below a directory.
fn total_size(path: &Path) -> u64 {
    if path.is_dir() {
        let entries = std::fs::read_dir(path).into_iter().flatten().flatten();
        entries.map(|e| total_size(&e.path())).sum()
    } else {
        std::fs::metadata(path).map_or(0, |m| m.len())
    }
}

fn human_bytes(bytes: u64) -> String {
    match bytes {
        b if b >= 10 << 20 => format!("{} MiB", b >> 20),
        b if b >= 10 << 10 => format!("{} KiB", b >> 10),
        b => format!("{b} B"),
    }
}

/// Drops the pages of a file, or of every file below a directory, from the page cache.
fn evict(path: &Path) {
    if path.is_dir() {
        for entry in std::fs::read_dir(path).into_iter().flatten().flatten() {
            evict(&entry.path());
        }
        return;
    }
    if let Ok(f) = std::fs::File::open(path) {
        // Best effort: a file whose pages stay cached only makes a cold row look warmer.
        let _ = rustix::fs::fadvise(&f, 0, None, rustix::fs::Advice::DontNeed);
    }
}

/// Whether data at `path` can be read cold. On tmpfs it cannot: every file lives in memory,
/// its pages cannot be dropped, and O_DIRECT reads there are copies out of memory too. With
/// `--mode cold` that is an error (rather than an empty table, or warm figures labelled
/// cold); with `--mode both` the cold rows are left out and a note says why. `moves` says
/// how to read data from a disk instead.
fn cold_possible(
    path: &Path,
    mode: Temperature,
    moves: &str,
    out: &mut Report,
) -> reel::Result<bool> {
    if !is_tmpfs(path) {
        return Ok(true);
    }
    let why = format!(
        "{} is on tmpfs, which keeps every file in memory: its pages cannot be dropped from \
         the page cache nor read with O_DIRECT from a disk, so nothing there can be measured \
         cold",
        path.display()
    );
    if mode == Temperature::Cold {
        return Err(reel::Error::invalid_input(format!("{why} (use {moves}, or --mode warm)")));
    }
    out.note(format!("No cold rows: {why}."));
    Ok(false)
}

fn is_tmpfs(path: &Path) -> bool {
    const TMPFS_MAGIC: u64 = 0x0102_1994;
    rustix::fs::statfs(path).is_ok_and(|st| st.f_type as u64 == TMPFS_MAGIC)
}

fn human(size: usize) -> String {
    if size >= 1 << 20 && size.is_multiple_of(1 << 20) {
        format!("{}MiB", size >> 20)
    } else if size >= 1 << 10 && size.is_multiple_of(1 << 10) {
        format!("{}KiB", size >> 10)
    } else {
        format!("{size}B")
    }
}

/// The fio row at the page span of a record (see [`Dataset::direct_span`]).
const FIO_SPAN: &str = "fio io_uring, page span";

fn report(out: &Report, json: bool) {
    let rows = &out.rows;
    let best = |r: &Row, pred: &dyn Fn(&Row) -> bool| {
        rows.iter()
            .filter(|o| o.mode == r.mode && o.size == r.size && pred(o))
            .map(|o| o.run.records_per_sec())
            .fold(None, |a: Option<f64>, v| Some(a.map_or(v, |a| a.max(v))))
    };
    // No ratio against a yardstick that read nothing: never NaN or infinity.
    let ratio = |r: &Row, base: Option<f64>| {
        base.filter(|&b| b > 0.0).map(|b| r.run.records_per_sec() / b).filter(|x| x.is_finite())
    };
    let mut json_rows = Vec::new();
    let remote = rows.iter().any(|r| r.remote.is_some());
    // The yardsticks' ratios are for local reads; rows from a URL have none.
    let local = rows.iter().any(|r| r.remote.is_none());
    let mut header = vec!["mode", "record", "reader", "records/s", "GB/s", "CPU µs/rec"];
    if local {
        header.extend(["×pread", "×raw", "×fio", "×span"]);
    }
    if remote {
        header.extend(["requests/batch", "ms/batch", "round trips/batch"]);
    }
    header.push("note");
    let mut t = Table::new(&header);
    for r in rows {
        let pread = best(r, &|o| o.reader == "pread loop");
        let raw = if r.mode == "warm" {
            best(r, &|o| {
                o.reader
                    == if r.size <= 4096 { "mmap+copy loop" } else { "raw copy (fresh buffer)" }
            })
        } else {
            None
        };
        let fio = best(r, &|o| o.reader == "fio io_uring");
        let fio_span = best(r, &|o| o.reader == FIO_SPAN);
        let fmt = |x: Option<f64>| x.map_or_else(String::new, |v| format!("{v:.2}"));
        let mut cells = vec![
            r.mode.to_string(),
            human(r.size),
            r.reader.clone(),
            format!("{:.0}", r.run.records_per_sec()),
            format!("{:.3}", r.run.gb_per_sec()),
            format!("{:.2}", r.run.cpu_us_per_record()),
        ];
        if local {
            cells.extend([
                fmt(ratio(r, pread)),
                fmt(ratio(r, raw)),
                fmt(ratio(r, fio)),
                fmt(ratio(r, fio_span)),
            ]);
        }
        if remote {
            let cost = r.remote.as_ref();
            cells.push(fmt(cost.map(|c| c.requests)));
            cells.push(fmt(cost.map(|c| c.batch_ms)));
            cells.push(fmt(cost.and_then(|c| c.round_trips)));
        }
        cells.push(r.note.clone());
        t.row(cells);
        let mut json_row = serde_json::json!({
            "mode": r.mode, "record_bytes": r.size, "reader": r.reader,
            "records_per_sec": r.run.records_per_sec(), "gb_per_sec": r.run.gb_per_sec(),
            "cpu_us_per_record": r.run.cpu_us_per_record(),
            "vs_pread": ratio(r, pread), "vs_raw": ratio(r, raw), "vs_fio": ratio(r, fio),
            "vs_fio_span": ratio(r, fio_span), "note": r.note,
        });
        if let Some(c) = &r.remote {
            json_row["requests_per_batch"] = c.requests.into();
            json_row["ms_per_batch"] = c.batch_ms.into();
            json_row["round_trips_per_batch"] = c.round_trips.into();
            json_row["served_from_memory"] = c.from_memory.into();
        }
        json_rows.push(json_row);
    }
    if json {
        outln!("{}", serde_json::Value::Array(json_rows));
        for note in &out.notes {
            eprintln!("note: {note}");
        }
    } else {
        out!("{}", t.render());
        outln!();
        if rows.iter().any(|r| r.reader == "mmap+copy loop") {
            outln!(
                "×raw: warm ≤4 KiB records against the mmap+copy loop, larger ones against a raw copy into a fresh buffer."
            );
        }
        if rows.iter().any(|r| r.reader == FIO_SPAN) {
            outln!(
                "×span: against fio reading blocks of a record's page span, the bytes an O_DIRECT read of a packed record fetches."
            );
        }
        outln!("reel rows read with checksums off.");
        if rows.iter().any(|r| r.note.contains(PARTLY_WARM)) {
            outln!(
                "{PARTLY_WARM}: a cold row that read more than a quarter of the dataset between two page-cache evictions (before every batch up to {}, every 50 ms above) read part of it from memory: too small a dataset (or too large a batch) to measure cold.",
                human_bytes(EVICT_EVERY_BATCH)
            );
        }
        if rows.iter().any(|r| r.reader.contains(", crc ")) {
            outln!("The crc rows show the checksum's cost.");
        }
        if remote {
            outln!(
                "round trips/batch: a batch's time over that of one 1-byte ranged GET (transfer included)."
            );
        }
        for note in &out.notes {
            outln!("{note}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: BenchArgs,
    }

    pub(super) fn args(list: &[&str]) -> BenchArgs {
        Cli::try_parse_from(std::iter::once("bench").chain(list.iter().copied()))
            .map(|c| c.args)
            .unwrap_or_else(|e| panic!("{e}"))
    }

    fn refused(list: &[&str]) -> String {
        match checked_budget(&args(list)) {
            Err(e) => {
                assert_eq!(e.kind(), reel::ErrorKind::InvalidInput, "{e}");
                e.to_string()
            }
            Ok(d) => panic!("{list:?} accepted as {d:?}"),
        }
    }

    #[test]
    fn secs_must_be_a_positive_finite_number_up_to_a_day() {
        for secs in ["inf", "1e30", "NaN", "0", "-1", "86401"] {
            assert!(refused(&[&format!("--secs={secs}")]).contains("--secs"), "{secs}");
        }
        assert_eq!(
            checked_budget(&args(&["--secs", "86400"])).ok(),
            Some(Duration::from_secs(86_400))
        );
        assert_eq!(
            checked_budget(&args(&["--secs", "0.05"])).ok(),
            Some(Duration::from_millis(100))
        );
    }

    #[test]
    fn rows_are_labelled_with_the_backend_that_read() {
        assert_eq!(label(Format::Ffrecord, "io_uring", "io_uring"), "io_uring");
        assert_eq!(
            label(Format::Ffrecord, "io_uring-direct", "io_uring+direct"),
            "io_uring-direct"
        );
        assert_eq!(label(Format::Granular, "pread", "pread"), "pread");
        assert_eq!(
            label(Format::Ffrecord, "io_uring", "io_uring(pread fallback)"),
            "io_uring(pread fallback), asked io_uring"
        );
        assert_eq!(
            label(Format::Ffrecord, "io_uring-direct", "io_uring"),
            "io_uring, asked io_uring-direct"
        );
        assert_eq!(label(Format::Parquet, "pread", "none"), ARROW_READER);
        assert_eq!(label(Format::ArrowIpc, "auto", "none"), "arrow-rs reader, mapped");
        assert_eq!(label(Format::ArrowIpc, "pread", "none"), "arrow-rs reader, read");
        // Backends that never fall back have no reason to give.
        assert_eq!(fallback_reason("pread", &[PathBuf::from("/nonexistent")]), None);
        assert_eq!(fallback_reason("io_uring", &[]), None);
    }

    /// Options a run would ignore are parse errors naming them, where leaving them at
    /// their defaults is not.
    #[test]
    fn options_a_run_would_ignore_are_refused() {
        let parse_error = |list: &[&str]| {
            let argv = std::iter::once("bench").chain(list.iter().copied());
            match Cli::try_parse_from(argv) {
                Err(e) => e.to_string(),
                Ok(_) => panic!("{list:?} accepted"),
            }
        };
        for option in ["--sizes=1k", "--format=granular", "--data=1m", "--warm-dir=/tmp"] {
            assert!(parse_error(&["data.ffr", option]).contains(option.split('=').next().unwrap()));
        }
        assert!(parse_error(&["data.ffr", "--cold-dir", "/tmp"]).contains("--cold-dir"));
        assert!(parse_error(&["--read-ahead", "4"]).contains("--stream"));
        assert!(parse_error(&["--concurrency", "8"]).contains("DATA"));
        assert!(parse_error(&["--coalesce-gap", "1m"]).contains("DATA"));
        // Defaults and the options each mode reads are accepted.
        assert_eq!(args(&["data.ffr", "--batch", "64"]).dataset.as_deref(), Some("data.ffr"));
        assert_eq!(args(&["--stream", "--read-ahead", "4"]).read_ahead, 4);
        assert_eq!(args(&["--sizes", "1k", "--data", "1m"]).sizes, ["1k"]);
    }

    #[test]
    fn batch_zero_is_refused() {
        assert!(refused(&["--batch", "0"]).contains("--batch 0"));
        assert!(checked_budget(&args(&["--batch", "1"])).is_ok());
    }

    #[test]
    fn zero_threads_or_repeats_are_refused() {
        assert!(refused(&["--threads", "0"]).contains("--threads must be at least 1"));
        assert!(refused(&["--repeat", "0"]).contains("--repeat must be at least 1"));
        assert!(checked_budget(&args(&["--threads", "1", "--repeat", "1"])).is_ok());
    }
}
