//! Timing a read loop: wall time, records, bytes and the CPU time the process spent.

use std::time::{Duration, Instant};

/// What one measured run did.
#[derive(Clone, Copy, Debug, Default)]
pub struct Run {
    /// Records read.
    pub records: u64,
    /// Bytes read.
    pub bytes: u64,
    /// Wall-clock seconds.
    pub secs: f64,
    /// CPU seconds (user + system) the process used.
    pub cpu_secs: f64,
}

impl Run {
    /// Records per second.
    pub fn records_per_sec(&self) -> f64 {
        self.records as f64 / self.secs.max(1e-9)
    }

    /// Gigabytes (10^9) per second.
    pub fn gb_per_sec(&self) -> f64 {
        self.bytes as f64 / 1e9 / self.secs.max(1e-9)
    }

    /// CPU microseconds per record.
    pub fn cpu_us_per_record(&self) -> f64 {
        self.cpu_secs * 1e6 / self.records.max(1) as f64
    }
}

fn cpu_seconds() -> f64 {
    // User plus system CPU time of every thread of the process.
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    t.tv_sec as f64 + t.tv_nsec as f64 / 1e9
}

/// How long warm runs read before timing starts: long enough that a fresh memory map has
/// been touched everywhere the run will read, so warm means pre-warmed in this process.
pub const WARM_UP: Duration = Duration::from_millis(500);

/// Calls `step` (which reads one batch and returns its records and bytes) until `budget`
/// has passed, after `warmup` untimed calls (or, when `warmup` is 0, untimed calls for
/// [`WARM_UP`]).
pub fn run_for(
    budget: Duration,
    warmup: usize,
    mut step: impl FnMut() -> reel::Result<(u64, u64)>,
) -> reel::Result<Run> {
    warm_up(warmup, &mut step)?;
    let cpu0 = cpu_seconds();
    let t0 = Instant::now();
    let mut run = Run::default();
    while t0.elapsed() < budget {
        let (records, bytes) = step()?;
        run.records += records;
        run.bytes += bytes;
    }
    run.secs = t0.elapsed().as_secs_f64();
    run.cpu_secs = cpu_seconds() - cpu0;
    Ok(run)
}

/// Runs `threads` copies of a read loop at once (each made by `make` for its thread
/// number), all timed over the same window after each has warmed up, and adds them up.
///
/// The window covers every worker's work even when there are more threads than cores
/// and some start late: each worker times itself, the run's wall time reaches from the
/// earliest start to the latest end, and the CPU clock is read while every worker is
/// still idle at the start barrier (the main thread reading it after releasing them would
/// miss the work of workers scheduled before it).
pub fn run_parallel<S>(
    threads: usize,
    budget: Duration,
    warmup: usize,
    make: impl Fn(usize) -> reel::Result<S> + Sync,
) -> reel::Result<Run>
where
    S: FnMut() -> reel::Result<(u64, u64)>,
{
    if threads <= 1 {
        return run_for(budget, warmup, make(0)?);
    }
    // Workers pass `ready` when warmed up and wait at `go` until the CPU clock is read.
    let ready = std::sync::Barrier::new(threads + 1);
    let go = std::sync::Barrier::new(threads + 1);
    let (cpu0, results) = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (ready, go, make) = (&ready, &go, &make);
                s.spawn(move || -> reel::Result<Timed> {
                    let warmed = make(t).and_then(|mut step| {
                        warm_up(warmup, &mut step)?;
                        Ok(step)
                    });
                    // Every worker passes both barriers, also one that failed, so that
                    // none of the others waits for it forever.
                    ready.wait();
                    go.wait();
                    let mut step = warmed?;
                    let start = Instant::now();
                    let (mut records, mut bytes) = (0, 0);
                    while start.elapsed() < budget {
                        let (r, b) = step()?;
                        records += r;
                        bytes += b;
                    }
                    Ok(Timed { records, bytes, start, end: Instant::now() })
                })
            })
            .collect();
        ready.wait();
        let cpu0 = cpu_seconds();
        go.wait();
        let results: Vec<_> = handles.into_iter().map(|h| h.join()).collect();
        (cpu0, results)
    });
    let mut run = Run { cpu_secs: cpu_seconds() - cpu0, ..Run::default() };
    let mut window: Option<(Instant, Instant)> = None;
    for r in results {
        let timed = r.map_err(|_| reel::Error::invalid_input("a benchmark thread panicked"))??;
        run.records += timed.records;
        run.bytes += timed.bytes;
        window = Some(match window {
            None => (timed.start, timed.end),
            Some((start, end)) => (start.min(timed.start), end.max(timed.end)),
        });
    }
    run.secs = window.map_or(0.0, |(start, end)| (end - start).as_secs_f64());
    Ok(run)
}

/// What one worker of [`run_parallel`] read and when it started and stopped timing.
struct Timed {
    records: u64,
    bytes: u64,
    start: Instant,
    end: Instant,
}

fn warm_up(warmup: usize, step: &mut impl FnMut() -> reel::Result<(u64, u64)>) -> reel::Result<()> {
    if warmup == 0 {
        let t = Instant::now();
        while t.elapsed() < WARM_UP {
            step()?;
        }
    }
    for _ in 0..warmup {
        step()?;
    }
    Ok(())
}
