//! Loader throughput against raw batch reads of the same records, side by side in one run.
//!
//! Builds an FFRecord dataset in /dev/shm (page cache speed: the comparison is about the
//! loader's own cost, not the disk), computes one epoch of shuffled index batches, and
//! for each backend times, in several interleaved rounds:
//!
//! * raw, 1 thread: `read_batch_into` of those batches in a loop, one reused batch;
//! * raw, W threads: the same batches shared out round-robin between W threads;
//! * loader, 0 workers: the loader reading each batch on the consumer's thread;
//! * loader, W workers: the loader with W worker threads;
//! * the two loader variants again with `zero_copy(false)`: records copied into the batch
//!   even where the backend could hand them out where they lie (mmap).
//!
//! Every variant consumes each batch the same way (each record's length and end bytes;
//! `--touch all` sums every byte, `--touch none` only counts records), and FFRecord's
//! per-record CRC check is on, as it is by default, so every byte is read. It prints
//! loader / raw ratios with the same number of reading threads: best wall time against
//! best wall time, the median over rounds of the wall-time ratio within a round (robust
//! to bursts of load from elsewhere), and total process CPU time against total CPU time
//! (what reading the same records costs, which other work on the machine does not skew).
//!
//! Run:
//!
//! ```text
//! cargo run --release -p reel --no-default-features --features "loader ffrecord io-uring" \
//!     --example loader_throughput -- [--records N] [--size BYTES] [--batch B] \
//!     [--workers W] [--rounds R] [--backends pread,mmap,io_uring] [--dir /dev/shm] \
//!     [--touch light|all|none] [--prefetch P] [--consumer-helps on|off] \
//!     [--only raw1|loader0|rawN|loaderN|copy0|copyN]
//! ```
//!
//! `--only` runs a single variant (the others report nonsense), for profiling it with
//! `perf stat` or `perf record`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::{Duration, Instant};

use reel::ffrecord::FfrecordWriter;
use reel::{Loader, LoaderBuilder, OpenOptions, RecordBatch, RecordSource, Shuffle};

struct Args {
    records: u64,
    size: usize,
    batch: usize,
    workers: usize,
    rounds: usize,
    backends: Vec<String>,
    dir: PathBuf,
    prefetch: Option<usize>,
    consumer_helps: bool,
    only: Option<usize>,
}

fn parse_args() -> Args {
    let mut a = Args {
        records: 100_000,
        size: 4096,
        batch: 256,
        workers: 2,
        rounds: 5,
        backends: reel::backend_names()
            .into_iter()
            .filter(|n| ["pread", "mmap", "io_uring"].contains(n))
            .map(String::from)
            .collect(),
        dir: PathBuf::from("/dev/shm"),
        prefetch: None,
        consumer_helps: false,
        only: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().unwrap_or_else(|| panic_usage(&flag));
        match flag.as_str() {
            "--records" => a.records = value.parse().unwrap_or_else(|_| panic_usage(&flag)),
            "--size" => a.size = value.parse().unwrap_or_else(|_| panic_usage(&flag)),
            "--batch" => a.batch = value.parse().unwrap_or_else(|_| panic_usage(&flag)),
            "--workers" => a.workers = value.parse().unwrap_or_else(|_| panic_usage(&flag)),
            "--rounds" => a.rounds = value.parse().unwrap_or_else(|_| panic_usage(&flag)),
            "--backends" => a.backends = value.split(',').map(String::from).collect(),
            "--dir" => a.dir = PathBuf::from(value),
            "--prefetch" => a.prefetch = Some(value.parse().unwrap_or_else(|_| panic_usage(&flag))),
            "--consumer-helps" => a.consumer_helps = value == "on",
            "--only" => {
                let names = ["raw1", "loader0", "rawN", "loaderN", "copy0", "copyN"];
                a.only = Some(
                    names.iter().position(|n| *n == value).unwrap_or_else(|| panic_usage(&flag)),
                );
            }
            "--touch" => TOUCH.store(
                match value.as_str() {
                    "none" => TOUCH_NONE,
                    "light" => TOUCH_LIGHT,
                    "all" => TOUCH_ALL,
                    _ => panic_usage(&flag),
                },
                Ordering::Relaxed,
            ),
            _ => panic_usage(&flag),
        }
    }
    a
}

fn panic_usage(flag: &str) -> ! {
    eprintln!("bad or incomplete argument {flag}; see the comment at the top of the example");
    std::process::exit(2)
}

/// What every variant does with a batch (`--touch`): `light` (default) looks at each
/// record's length and its first and last byte (the CRC check has already read every
/// byte); `all` sums every byte, like a consumer that copies the batch out; `none` only
/// counts the records, which measures delivery alone.
fn consume(batch: &RecordBatch) -> u64 {
    let touch = TOUCH.load(Ordering::Relaxed);
    if touch == TOUCH_NONE {
        return batch.len() as u64;
    }
    batch
        .iter()
        .map(|r| {
            let b = r.bytes("data").unwrap_or_default();
            if touch == TOUCH_ALL {
                b.iter().map(|&x| u64::from(x)).sum::<u64>()
            } else {
                b.len() as u64
                    + u64::from(b.first().copied().unwrap_or(0))
                    + u64::from(b.last().copied().unwrap_or(0))
            }
        })
        .sum()
}

const TOUCH_NONE: u8 = 0;
const TOUCH_LIGHT: u8 = 1;
const TOUCH_ALL: u8 = 2;
static TOUCH: AtomicU8 = AtomicU8::new(TOUCH_LIGHT);

fn raw_one_thread(source: &dyn RecordSource, batches: &[Vec<u64>]) -> u64 {
    let mut batch = RecordBatch::new();
    let mut sum = 0;
    for idx in batches {
        source.read_batch_into(idx, &mut batch).unwrap();
        sum += consume(&batch);
    }
    sum
}

fn raw_threads(
    source: &Arc<dyn RecordSource>,
    batches: &Arc<Vec<Vec<u64>>>,
    threads: usize,
) -> u64 {
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let source = source.clone();
            let batches = batches.clone();
            std::thread::spawn(move || {
                let mut batch = RecordBatch::new();
                let mut sum = 0;
                for idx in batches.iter().skip(t).step_by(threads) {
                    source.read_batch_into(idx, &mut batch).unwrap();
                    sum += consume(&batch);
                }
                sum
            })
        })
        .collect();
    handles.into_iter().map(|h| h.join().unwrap()).sum()
}

fn through_loader(builder: &LoaderBuilder, workers: usize, zero_copy: bool) -> u64 {
    let loader: Loader = builder.clone().workers(workers).zero_copy(zero_copy).build().unwrap();
    loader.map(|b| consume(&b.unwrap())).sum()
}

/// CPU time this process has used so far, all threads (dead ones included), from
/// `/proc/self/stat` (Linux; 10 ms ticks, so it is summed over many runs).
fn process_cpu() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(Duration::from_millis(ticks * 10))
}

/// One run: wall time and CPU time of the whole process.
#[derive(Clone, Copy)]
struct Run {
    wall: Duration,
    cpu: Option<Duration>,
}

/// Runs each variant `rounds` times (`runs[round][variant]`). The variants take turns
/// within each round, so a burst of load from elsewhere on the machine hits neighbouring
/// runs of every variant instead of all the runs of one. Every run must give `expect`.
fn interleaved(
    rounds: usize,
    expect: u64,
    only: Option<usize>,
    variants: &mut [&mut dyn FnMut() -> u64],
) -> Vec<Vec<Run>> {
    (0..rounds)
        .map(|_| {
            variants
                .iter_mut()
                .enumerate()
                .map(|(k, v)| {
                    if only.is_some_and(|o| o != k) {
                        return Run { wall: Duration::from_secs(1), cpu: None };
                    }
                    let (cpu0, t) = (process_cpu(), Instant::now());
                    assert_eq!(v(), expect, "a variant read different bytes");
                    let wall = t.elapsed();
                    let cpu = process_cpu().zip(cpu0).map(|(b, a)| b.saturating_sub(a));
                    Run { wall, cpu }
                })
                .collect()
        })
        .collect()
}

/// How the loader variant `loader` compares with the raw variant `raw` (above 1: the
/// loader does better): best wall time against best wall time, the median over rounds of
/// the wall-time ratio within a round, and total CPU time against total CPU time (what
/// reading the same records costs, whatever else runs on the machine).
struct Comparison {
    best: f64,
    median: f64,
    cpu: Option<f64>,
}

fn compare(runs: &[Vec<Run>], raw: usize, loader: usize) -> Comparison {
    let best = |v: usize| runs.iter().map(|r| r[v].wall).min().unwrap_or_default().as_secs_f64();
    let mut paired: Vec<f64> =
        runs.iter().map(|r| r[raw].wall.as_secs_f64() / r[loader].wall.as_secs_f64()).collect();
    paired.sort_by(f64::total_cmp);
    let cpu = |v: usize| runs.iter().map(|r| r[v].cpu).sum::<Option<Duration>>();
    Comparison {
        best: best(raw) / best(loader),
        median: paired.get(paired.len() / 2).copied().unwrap_or(f64::NAN),
        cpu: cpu(raw).zip(cpu(loader)).map(|(r, l)| r.as_secs_f64() / l.as_secs_f64()),
    }
}

fn main() -> reel::Result<()> {
    let args = parse_args();
    let dir = args.dir.join(format!("reel-loader-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| reel::Error::io(e, "cannot create bench dir"))?;
    let path = dir.join("bench.ffr");
    let mut writer = FfrecordWriter::create(&path, args.records)?;
    let mut record = vec![0u8; args.size];
    for i in 0..args.records {
        record.iter_mut().enumerate().for_each(|(k, b)| *b = (i as usize ^ k) as u8);
        writer.write_one(&record)?;
    }
    writer.finish()?;
    let total_bytes = args.records * args.size as u64;
    let w = args.workers;
    println!(
        "dataset: {} records × {} B = {:.1} MiB in {}; batch {}, {w} workers, {} rounds, \
         {} CPUs",
        args.records,
        args.size,
        total_bytes as f64 / (1 << 20) as f64,
        dir.display(),
        args.batch,
        args.rounds,
        std::thread::available_parallelism().map_or(1, |n| n.get()),
    );

    let mut worst = f64::INFINITY;
    for name in &args.backends {
        let Some(backend) = reel::backend_by_name(name) else {
            println!("{name}: not available in this build, skipped");
            continue;
        };
        let source: Arc<dyn RecordSource> =
            Arc::from(reel::open_with(&path, &OpenOptions::default().backend(backend))?);
        let mut builder = LoaderBuilder::new(source.clone())
            .batch_size(args.batch)
            .shuffle(Shuffle::Feistel)
            .seed(1)
            .consumer_helps(args.consumer_helps);
        if let Some(p) = args.prefetch {
            builder = builder.prefetch(p);
        }
        let batches: Arc<Vec<Vec<u64>>> =
            Arc::new(builder.index_batches()?.map(|b| b.indices).collect());
        let expect = raw_one_thread(&*source, &batches);

        let runs = interleaved(
            args.rounds,
            expect,
            args.only,
            &mut [
                &mut || raw_one_thread(&*source, &batches),
                &mut || through_loader(&builder, 0, true),
                &mut || raw_threads(&source, &batches, w),
                &mut || through_loader(&builder, w, true),
                &mut || through_loader(&builder, 0, false),
                &mut || through_loader(&builder, w, false),
            ],
        );
        let rate = |v: usize| {
            let best = runs.iter().map(|r| r[v].wall).min().unwrap_or_default();
            total_bytes as f64 / best.as_secs_f64() / 1e9
        };
        println!("{name} ({}), best wall time:", source.backend_name());
        println!("  raw read_batch_into, 1 thread     {:7.2} GB/s", rate(0));
        println!("  loader, 0 workers (inline)        {:7.2} GB/s", rate(1));
        println!("  raw read_batch_into, {w} threads    {:7.2} GB/s", rate(2));
        println!("  loader, {w} workers                 {:7.2} GB/s", rate(3));
        println!("  loader, 0 workers, copying        {:7.2} GB/s", rate(4));
        println!("  loader, {w} workers, copying        {:7.2} GB/s", rate(5));
        println!("  loader vs raw                        best/best  median/round  CPU cost");
        for (label, raw, loader) in [
            ("loader(0 workers) vs raw(1 thread)  ".to_string(), 0, 1),
            (format!("loader({w} workers) vs raw({w} threads)"), 2, 3),
            (format!("loader({w} workers) vs raw(1 thread)  "), 0, 3),
            ("copying loader(0) vs raw(1 thread)  ".to_string(), 0, 4),
            (format!("copying loader({w}) vs raw({w} threads)"), 2, 5),
        ] {
            let c = compare(&runs, raw, loader);
            let cpu = c.cpu.map_or_else(|| "n/a".to_string(), |x| format!("{x:.3}"));
            println!("    {label} {:9.3}  {:12.3}  {cpu:>8}", c.best, c.median);
            if raw + 1 == loader {
                worst = worst.min(c.median);
            }
        }
    }
    std::fs::remove_dir_all(&dir).map_err(|e| reel::Error::io(e, "cannot clean up"))?;
    println!(
        "worst loader/raw wall-time ratio at equal thread count (median of rounds): \
         {worst:.3} (target ≥ 0.9)"
    );
    Ok(())
}
