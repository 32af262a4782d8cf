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
/// queue depths, with the io_uring engine, and the depth. Fails, saying why in plain words,
/// when fio is not installed, exits with an error (a file smaller than the block: "blocksize
/// is larger than data set range"), reports a job error, or read nothing at any depth: a
/// failed fio is no yardstick, and its zero would make every ratio infinite.
pub fn fio_best(path: &Path, block: usize, direct: bool, secs: u64) -> Result<(Run, u32), String> {
    if let Err(e) = Command::new("fio").arg("--version").output() {
        return Err(format!("fio cannot be run ({e})"));
    }
    let mut best: Option<(Run, u32)> = None;
    let mut failure = None;
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
            .map_err(|e| format!("fio cannot be run ({e})"))?;
        match fio_result(&out, block, secs) {
            Ok(run) => {
                if best.as_ref().is_none_or(|(b, _)| run.records_per_sec() > b.records_per_sec()) {
                    best = Some((run, depth));
                }
            }
            Err(why) => {
                failure.get_or_insert(format!("fio failed at iodepth {depth}: {why}"));
            }
        }
    }
    best.ok_or_else(|| failure.unwrap_or_else(|| "fio measured nothing".into()))
}

/// The run one fio invocation reports, or why it is none.
fn fio_result(out: &std::process::Output, block: usize, secs: u64) -> Result<Run, String> {
    let said = || {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let line = stderr.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or_default();
        line.trim_start_matches("fio: ").to_string()
    };
    if !out.status.success() {
        let said = said();
        return Err(if said.is_empty() { format!("it exited with {}", out.status) } else { said });
    }
    let json: serde_json::Value =
        serde_json::from_slice(&out.stdout).map_err(|_| format!("no JSON result ({})", said()))?;
    let job = &json["jobs"][0];
    if let Some(code) = job["error"].as_i64()
        && code != 0
    {
        return Err(format!("job error {code} ({})", said()));
    }
    let read = &job["read"];
    let iops = read["iops"].as_f64().unwrap_or(0.0);
    let secs = read["runtime"].as_f64().unwrap_or(1000.0 * secs as f64) / 1000.0;
    if !(iops.is_finite() && iops > 0.0 && secs > 0.0) {
        return Err("it read nothing".into());
    }
    let cpu = (job["usr_cpu"].as_f64().unwrap_or(0.0) + job["sys_cpu"].as_f64().unwrap_or(0.0))
        / 100.0
        * secs;
    let records = (iops * secs) as u64;
    Ok(Run { records, bytes: records * block as u64, secs, cpu_secs: cpu })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_fio_is_no_run() {
        let Ok(_) = Command::new("fio").arg("--version").output() else {
            eprintln!("fio is not installed: skipped");
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let small = dir.path().join("small");
        std::fs::write(&small, [7u8; 3000]).unwrap();
        let why = fio_best(&small, 4096, false, 1).unwrap_err();
        assert!(why.contains("blocksize is larger than data set range"), "{why}");
        let why = fio_best(&dir.path().join("missing"), 4096, false, 1).unwrap_err();
        assert!(why.starts_with("fio failed"), "{why}");
    }
}
