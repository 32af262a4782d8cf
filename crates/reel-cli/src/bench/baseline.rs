//! The yardsticks reel is measured against in the same run: a plain pread loop, a plain
//! copy of the same bytes out of memory, and fio at the same block size.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use super::measure::{Run, run_for, run_parallel};
use super::workload::{Batches, Dataset};
use super::{ColdEviction, SEED};

/// One `pread` per record into a reused buffer: what a straightforward reader does. Cold,
/// it is kept cold exactly like reel's buffered backends (`eviction`).
pub fn pread_loop(
    ds: &Dataset,
    batch: usize,
    threads: usize,
    budget: Duration,
    warmup: usize,
    eviction: &ColdEviction<'_>,
) -> reel::Result<Run> {
    let f = File::open(&ds.path).map_err(|e| reel::Error::io(e, "open").with_path(&ds.path))?;
    run_parallel(threads, budget, warmup, |t| {
        let f = &f;
        let mut buf = vec![0u8; ds.record_size * batch];
        let mut batches = Batches::new(ds.records, batch, SEED + t as u64);
        Ok(move || {
            eviction.tick();
            let idx = batches.next_batch();
            for (k, &i) in idx.iter().enumerate() {
                let dst = &mut buf[k * ds.record_size..(k + 1) * ds.record_size];
                f.read_exact_at(dst, ds.offsets[i as usize])
                    .map_err(|e| reel::Error::io(e, "pread"))?;
            }
            Ok((idx.len() as u64, (idx.len() * ds.record_size) as u64))
        })
    })
}

/// Copies the records' bytes out of a memory map into a reused buffer: the memory limit
/// for data in the page cache.
pub fn mmap_copy_loop(
    ds: &Dataset,
    batch: usize,
    budget: Duration,
    warmup: usize,
) -> reel::Result<Run> {
    let files = reel::MmapFiles::open(std::slice::from_ref(&ds.path))?;
    let map = reel::ReadAt::bytes(&files, 0).unwrap_or_default();
    let mut buf = vec![0u8; ds.record_size * batch];
    let mut batches = Batches::new(ds.records, batch, SEED);
    run_for(budget, warmup, || {
        let idx = batches.next_batch();
        for (k, &i) in idx.iter().enumerate() {
            let off = ds.offsets[i as usize] as usize;
            buf[k * ds.record_size..(k + 1) * ds.record_size]
                .copy_from_slice(&map[off..off + ds.record_size]);
        }
        std::hint::black_box(&buf);
        Ok((idx.len() as u64, (idx.len() * ds.record_size) as u64))
    })
}

/// Copies the records' bytes out of an in-memory copy of the file into a freshly allocated
/// buffer per batch: a raw copy, with the cost of new memory that a reader returning new
/// buffers pays.
pub fn fresh_copy_loop(
    ds: &Dataset,
    data: &[u8],
    batch: usize,
    budget: Duration,
    warmup: usize,
) -> reel::Result<Run> {
    let mut batches = Batches::new(ds.records, batch, SEED);
    run_for(budget, warmup, || {
        let idx = batches.next_batch();
        let mut buf = Vec::with_capacity(ds.record_size * idx.len());
        for &i in idx {
            let off = ds.offsets[i as usize] as usize;
            buf.extend_from_slice(&data[off..off + ds.record_size]);
        }
        std::hint::black_box(&buf);
        Ok((idx.len() as u64, (idx.len() * ds.record_size) as u64))
    })
}

/// fio's best random-read result on the same file at the same block size, over a few
/// queue depths, with the io_uring engine. `None` when fio is not installed or fails.
pub fn fio_best(path: &Path, block: usize, direct: bool, secs: u64) -> Option<(Run, u32)> {
    Command::new("fio").arg("--version").output().ok()?;
    let mut best: Option<(Run, u32)> = None;
    for depth in [1u32, 32, 128, 256] {
        let out = Command::new("fio")
            .args([
                "--name=reel",
                "--rw=randread",
                "--ioengine=io_uring",
                "--time_based",
                "--output-format=json",
            ])
            .arg(format!("--filename={}", path.display()))
            .arg(format!("--bs={block}"))
            .arg(format!("--iodepth={depth}"))
            .arg(format!("--direct={}", u8::from(direct)))
            .arg(format!("--runtime={secs}"))
            .output()
            .ok()?;
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
        let job = &json["jobs"][0];
        let read = &job["read"];
        let iops = read["iops"].as_f64()?;
        let secs = read["runtime"].as_f64().unwrap_or(1000.0 * secs as f64) / 1000.0;
        let cpu = (job["usr_cpu"].as_f64().unwrap_or(0.0) + job["sys_cpu"].as_f64().unwrap_or(0.0))
            / 100.0
            * secs;
        let run = Run {
            records: (iops * secs) as u64,
            bytes: (iops * secs) as u64 * block as u64,
            secs,
            cpu_secs: cpu,
        };
        if best.as_ref().is_none_or(|(b, _)| run.records_per_sec() > b.records_per_sec()) {
            best = Some((run, depth));
        }
    }
    best
}
