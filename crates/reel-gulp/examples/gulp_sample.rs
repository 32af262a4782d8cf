//! Writes a sample gulp directory with every writer path, or prints a gulp directory's
//! videos as JSON lines in the form of `shared/tools/refread gulpio2` (to compare with
//! what the reference reads).
//!
//! ```text
//! cargo run -p reel-gulp --example gulp_sample -- write DIR
//! cargo run -p reel-gulp --example gulp_sample -- dump DIR
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use reel_core::{RecordSource, RecordSourceExt};
use reel_gulp::{
    Frame, FrameDecode, GulpChunkWriter, GulpOptions, GulpReader, GulpWriteOptions, GulpWriter,
    JsonValue, encode_jpeg, json::parse_json,
};
use sha2::{Digest, Sha256};

fn gradient(w: u32, h: u32, channels: u32, seed: u32) -> Vec<u8> {
    (0..h)
        .flat_map(|y| {
            (0..w).flat_map(move |x| {
                (0..channels).map(move |c| ((x * 9 + y * 4 + c * 50 + seed * 13) % 256) as u8)
            })
        })
        .collect()
}

fn meta(text: &str) -> JsonValue {
    parse_json(text, 64).unwrap()
}

fn write(dir: &std::path::Path) {
    let opts = GulpWriteOptions::default().videos_per_chunk(2);
    let mut w = GulpWriter::create(dir, &opts).unwrap();
    let rgb = gradient(13, 7, 3, 1);
    let gray = gradient(8, 5, 1, 2);
    let jpeg = encode_jpeg(&gradient(6, 6, 3, 3), 6, 6, 3, 75).unwrap();
    w.write_video(
        "7",
        meta(r#"{"label": "dr\u00f6\u00dfeln \u8df3\ud83d\udc4b", "n": 1, "f": 0.1, "big": 18446744073709551615, "neg": -9223372036854775808, "nested": {"l": [true, null, 1e-07, 1e+22]}}"#),
        &[Frame::Rgb { width: 13, height: 7, pixels: &rgb }, Frame::Jpeg(&jpeg)],
    )
    .unwrap();
    w.write_video("gray", meta("{}"), &[Frame::Gray { width: 8, height: 5, pixels: &gray }])
        .unwrap();
    w.write_video("empty", meta(r#"{"frames": 0}"#), &[]).unwrap();
    w.write_video_with_extra(
        "x",
        meta(r#"{"k": 1}"#),
        vec![meta(r#"{"k": 2}"#)],
        &[Frame::Jpeg(&jpeg)],
    )
    .unwrap();
    w.write_video("tab\t\"q\"", meta(r#"{"s": "a\\b\n"}"#), &[Frame::Jpeg(&jpeg); 3]).unwrap();
    w.finish().unwrap();

    // Append mode on chunk 0: a new id and more frames for an existing one.
    let mut c = GulpChunkWriter::append_to(dir, 0, &GulpWriteOptions::default()).unwrap();
    c.append("late", meta(r#"{"k": 3}"#), &[Frame::Gray { width: 8, height: 5, pixels: &gray }])
        .unwrap();
    c.append("7", meta(r#"{"again": true}"#), &[Frame::Jpeg(&jpeg)]).unwrap();
    c.finish().unwrap();

    // More chunks, so that chunk numbers reach 10 and up (name order differs from number order).
    let mut w =
        GulpWriter::append_chunks(dir, &GulpWriteOptions::default().videos_per_chunk(1)).unwrap();
    for k in 0..9 {
        let pixels = gradient(4 + k, 3, 3, k);
        w.write_video(
            &format!("more-{k}"),
            meta(&format!(r#"{{"k": {k}}}"#)),
            &[Frame::Rgb { width: 4 + k, height: 3, pixels: &pixels }],
        )
        .unwrap();
    }
    w.finish().unwrap();
}

fn hex(b: &[u8]) -> String {
    Sha256::digest(b).iter().map(|x| format!("{x:02x}")).collect()
}

fn to_serde(v: &JsonValue) -> serde_json::Value {
    use serde_json::Value as J;
    match v {
        JsonValue::Null => J::Null,
        JsonValue::Bool(b) => J::Bool(*b),
        JsonValue::Int(i) => J::from(*i),
        JsonValue::UInt(u) => J::from(*u),
        JsonValue::BigInt(d) => J::String(format!("bigint:{d}")),
        JsonValue::Float(f) => {
            serde_json::Number::from_f64(*f).map_or(J::String(format!("float:{f}")), J::Number)
        }
        JsonValue::Str(s) => J::String(s.to_str_lossy().into_owned()),
        JsonValue::Array(a) => J::Array(a.iter().map(to_serde).collect()),
        JsonValue::Object(p) => {
            J::Object(p.iter().map(|(k, v)| (k.to_str_lossy().into_owned(), to_serde(v))).collect())
        }
    }
}

fn dump(dir: &std::path::Path) {
    let raw = GulpReader::open(dir).unwrap();
    let decoded =
        GulpReader::open_with(dir, &GulpOptions::default().decode(FrameDecode::Auto)).unwrap();
    for i in 0..raw.len() {
        let r = raw.read(i).unwrap();
        let d = decoded.read(i).unwrap();
        let frames: Vec<_> = r.get("frames").unwrap().as_list().unwrap().iter().collect();
        let shapes: Vec<_> = d
            .get("frames")
            .unwrap()
            .as_list()
            .unwrap()
            .iter()
            .map(|f| f.as_array().unwrap().shape.to_vec())
            .collect();
        let info = raw.frame_info(i).unwrap();
        let out: Vec<_> = frames
            .iter()
            .zip(info)
            .zip(&shapes)
            .enumerate()
            .map(|(k, ((f, fi), shape))| {
                let b = f.as_bytes().unwrap();
                serde_json::json!({"frame": k, "loc": fi.loc, "pad": fi.pad, "length": fi.length,
                    "jpeg": {"len": b.len(), "sha256": hex(b)}, "decoded": {"shape": shape}})
            })
            .collect();
        let stored: Vec<_> = raw.meta_data(i).unwrap().iter().map(to_serde).collect();
        let id = raw.id(i).unwrap();
        println!(
            "{}",
            serde_json::json!({"id": id, "chunk_id": raw.chunk_of(id).unwrap(), "frame_count": out.len(),
                "meta_data_stored": stored, "frames": out})
        );
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    match (args.get(1).map(String::as_str), args.get(2)) {
        (Some("write"), Some(dir)) => write(dir.as_ref()),
        (Some("dump"), Some(dir)) => dump(dir.as_ref()),
        _ => eprintln!("usage: gulp_sample write|dump DIR"),
    }
}
