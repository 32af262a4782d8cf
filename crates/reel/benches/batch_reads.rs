//! Random batch reads (256 records) of fixed-size FFRecord records on every backend, warm
//! (the dataset lives on tmpfs, or the temp dir if there is none). `reel bench` is the full
//! benchmark with cold reads and the pread/raw-copy/fio yardsticks; this one is for quick
//! before/after comparisons while working on the read path:
//!
//! `cargo bench -p reel --bench batch_reads`
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::path::PathBuf;
use std::sync::OnceLock;

use divan::Bencher;
use reel::ffrecord::{FfrecordOptions, FfrecordReader, FfrecordWriter};
use reel::{RecordBatch, RecordSource};

const BATCH: u64 = 256;
const BACKENDS: &[&str] = &["pread", "mmap", "memory", "io_uring", "io_uring-direct", "auto"];

fn main() {
    divan::main();
}

fn dataset(size: usize) -> PathBuf {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    let dir = DIR.get_or_init(|| {
        let shm = std::path::Path::new("/dev/shm");
        if shm.is_dir() { tempfile::tempdir_in(shm).unwrap() } else { tempfile::tempdir().unwrap() }
    });
    let path = dir.path().join(format!("{size}.ffr"));
    if !path.exists() {
        let n = ((64u64 << 20) / size as u64).max(4 * BATCH);
        let mut w = FfrecordWriter::create(&path, n).unwrap();
        let record: Vec<u8> = (0..size).map(|i| i as u8).collect();
        for _ in 0..n {
            w.write_one(&record).unwrap();
        }
        w.finish().unwrap();
    }
    path
}

fn batches(n: u64) -> Vec<Vec<u64>> {
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    (0..64)
        .map(|_| {
            (0..BATCH)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    state % n
                })
                .collect()
        })
        .collect()
}

#[divan::bench(args = BACKENDS, consts = [1024, 16384, 262144])]
fn read_batch<const SIZE: usize>(bencher: Bencher<'_, '_>, backend: &str) {
    // Backends this build lacks (io_uring off Linux) have nothing to measure.
    let Some(backend) = reel::backend_by_name(backend) else { return };
    let path = dataset(SIZE);
    let options = FfrecordOptions::default().backend(backend).check_data(false);
    let reader = FfrecordReader::open_with(&path, &options).unwrap();
    let all = batches(reader.n());
    let mut out = RecordBatch::new();
    let mut k = 0;
    bencher.counter(divan::counter::BytesCount::new(SIZE * BATCH as usize)).bench_local(|| {
        reader.read_batch_into(&all[k % all.len()], &mut out).unwrap();
        k += 1;
    });
}
