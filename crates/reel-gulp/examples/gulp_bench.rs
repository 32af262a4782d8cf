//! Rough timings of ingesting, opening and reading a synthetic gulp directory (use a
//! release build and a tmpfs directory for hot-cache numbers):
//!
//! ```text
//! cargo run --release -p reel-gulp --example gulp_bench -- /dev/shm/gulp-bench 1000 8
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::ops::Range;
use std::time::Instant;

use reel_core::{Backend, RecordBatch, RecordSource, Result};
use reel_gulp::{
    FrameDecode, FrameSelection, GulpAdapter, GulpIngestor, GulpItem, GulpOptions, GulpReader,
    JsonValue, OwnedFrame,
};

struct Synthetic {
    videos: usize,
    frames: usize,
}

impl GulpAdapter for Synthetic {
    fn len(&self) -> usize {
        self.videos
    }
    fn iter_data(&self, items: Range<usize>) -> Box<dyn Iterator<Item = Result<GulpItem>> + '_> {
        Box::new(items.map(move |i| {
            let (w, h) = (128u32, 96u32);
            let frames = (0..self.frames)
                .map(|k| {
                    let pixels = (0..h)
                        .flat_map(|y| {
                            (0..w).flat_map(move |x| {
                                (0..3u32).map(move |c| {
                                    ((x * 3 + y * 2 + c * 40 + (i * 7 + k) as u32 * 5) % 256) as u8
                                })
                            })
                        })
                        .collect();
                    OwnedFrame::Rgb { width: w, height: h, pixels }
                })
                .collect();
            Ok(GulpItem {
                id: format!("video_{i:06}"),
                meta: JsonValue::object([("label", JsonValue::from((i % 174) as i64))]),
                frames,
            })
        }))
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let dir = std::path::PathBuf::from(args.get(1).expect("usage: gulp_bench DIR VIDEOS FRAMES"));
    let videos: usize = args.get(2).map_or(1000, |s| s.parse().unwrap());
    let frames: usize = args.get(3).map_or(8, |s| s.parse().unwrap());
    if !dir.exists() {
        let t = Instant::now();
        let s = GulpIngestor::new(&Synthetic { videos, frames }, &dir, 100, 2).run().unwrap();
        let bytes: u64 = s.chunks.iter().map(|c| c.data_bytes).sum();
        println!(
            "ingest: {} videos, {} frames, {:.1} MB in {:.2} s ({:.0} frames/s encoded, 2 threads)",
            s.videos,
            s.frames,
            bytes as f64 / 1e6,
            t.elapsed().as_secs_f64(),
            s.frames as f64 / t.elapsed().as_secs_f64()
        );
    }
    for backend in [Backend::Pread, Backend::Mmap] {
        let t = Instant::now();
        let r =
            GulpReader::open_with(&dir, &GulpOptions::default().backend(backend.clone())).unwrap();
        println!(
            "{}: open {} videos in {:.1} ms",
            backend.name(),
            r.len(),
            t.elapsed().as_secs_f64() * 1e3
        );
        let n = r.len();
        let order: Vec<u64> = (0..n).map(|i| (i * 7919) % n).collect();
        let mut batch = RecordBatch::new();
        let t = Instant::now();
        let mut bytes = 0usize;
        for chunk in order.chunks(64) {
            r.read_batch_into(chunk, &mut batch).unwrap();
            bytes += batch.buffer_len();
        }
        let secs = t.elapsed().as_secs_f64();
        println!(
            "  raw random batches of 64: {:.0} videos/s, {:.0} MB/s",
            n as f64 / secs,
            bytes as f64 / secs / 1e6
        );
        let t = Instant::now();
        for chunk in order.chunks(64) {
            r.read_videos(chunk, &FrameSelection::every(4), FrameDecode::Raw, &mut batch).unwrap();
        }
        println!("  raw every 4th frame: {:.0} videos/s", n as f64 / t.elapsed().as_secs_f64());
    }
    let r = GulpReader::open_with(&dir, &GulpOptions::default().decode(FrameDecode::Auto)).unwrap();
    let t = Instant::now();
    let mut batch = RecordBatch::new();
    let count = r.len().min(300);
    let all: Vec<u64> = (0..count).collect();
    for chunk in all.chunks(16) {
        r.read_batch_into(chunk, &mut batch).unwrap();
    }
    println!(
        "decoded: {:.0} frames/s (one thread)",
        (count as usize * frames) as f64 / t.elapsed().as_secs_f64()
    );
}
