//! Helpers shared by the reel-gulp tests.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

use reel_core::{Record, RecordSource};
use reel_gulp::{Frame, GulpReader, GulpWriteOptions, GulpWriter, JsonValue, json::parse_json};

/// Bytes that look like a JPEG file (start and end markers) of exactly `len` bytes; the
/// writers store JPEG bytes unchanged, so layouts can be built to exact sizes.
pub fn fake_jpeg(len: usize, seed: u8) -> Vec<u8> {
    assert!(len >= 4);
    let mut v: Vec<u8> = (0..len).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect();
    v[..2].copy_from_slice(&[0xff, 0xd8]);
    let n = v.len();
    v[n - 2..].copy_from_slice(&[0xff, 0xd9]);
    v
}

/// Parses JSON text (test input is trusted).
pub fn json(text: &str) -> JsonValue {
    parse_json(text, 64).unwrap()
}

/// A video to write: id, metadata, frames as JPEG bytes.
pub struct Video {
    pub id: String,
    pub meta: JsonValue,
    pub frames: Vec<Vec<u8>>,
}

/// `n` videos with 0–4 frames of varied sizes.
pub fn videos(n: usize) -> Vec<Video> {
    (0..n)
        .map(|i| Video {
            id: format!("v{i:03}"),
            meta: json(&format!(r#"{{"index": {i}, "label": "l{}", "score": {}.5}}"#, i % 3, i)),
            frames: (0..(i % 5))
                .map(|k| fake_jpeg(20 + (i * 7 + k * 13) % 90, (i + k) as u8))
                .collect(),
        })
        .collect()
}

/// Writes `videos` into a new gulp directory `dir`, `per_chunk` per chunk.
pub fn write_dir(dir: &Path, videos: &[Video], per_chunk: u64) {
    let mut w =
        GulpWriter::create(dir, &GulpWriteOptions::default().videos_per_chunk(per_chunk)).unwrap();
    for v in videos {
        let frames: Vec<Frame<'_>> = v.frames.iter().map(|f| Frame::Jpeg(f)).collect();
        w.write_video(&v.id, v.meta.clone(), &frames).unwrap();
    }
    w.finish().unwrap();
}

/// The frames of a record as byte vectors.
pub fn frames(r: &Record) -> Vec<Vec<u8>> {
    r.get("frames")
        .and_then(|f| f.as_list())
        .expect("frames list")
        .iter()
        .map(|f| f.as_bytes().expect("bytes").to_vec())
        .collect()
}

/// Every file name in `dir`, sorted.
pub fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Every file of `dir` with its content, sorted by name.
pub fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
    names(dir).into_iter().map(|n| (n.clone(), std::fs::read(dir.join(&n)).unwrap())).collect()
}

/// Reads every record of a gulp directory.
pub fn read_all(dir: &Path) -> Vec<Record> {
    use reel_core::RecordSourceExt;
    let r = GulpReader::open(dir).unwrap();
    (0..r.len()).map(|i| r.read(i).unwrap()).collect()
}

/// `dir/name`.
pub fn path(dir: &Path, name: &str) -> PathBuf {
    dir.join(name)
}
