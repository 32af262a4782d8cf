//! Deterministic generated content: datasets of every format whose records can be checked
//! byte for byte afterwards without keeping a copy (`reel generate`, the demo, benchmarks,
//! and `reel.generate` in Python).

use std::path::Path;

use crate::{CreateOptions, Format, RecordSink, Result, SinkSummary};

/// SplitMix64: a tiny, well-mixed generator; the demo needs reproducible data, not a
/// cryptographic or statistically perfect source.
#[derive(Clone, Debug)]
pub struct SplitMix(u64);

impl SplitMix {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        SplitMix(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }

    /// `0..n` in random order.
    pub fn permutation(&mut self, n: u64) -> Vec<u64> {
        let mut v: Vec<u64> = (0..n).collect();
        for i in (1..v.len()).rev() {
            v.swap(i, self.below(i as u64 + 1) as usize);
        }
        v
    }
}

/// The payload of record `i`: a length between 0 and `max_len` and bytes derived from `i`,
/// so a reader can check it without keeping a copy.
pub fn payload(i: u64, max_len: usize) -> Vec<u8> {
    let mut g = SplitMix::new(i ^ 0x5EED);
    let len = g.below(max_len as u64 + 1) as usize;
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        out.extend_from_slice(&g.next_u64().to_le_bytes());
    }
    out.truncate(len);
    out
}

/// Record `i` of a generated dataset of `format`: a shape the format can store, with
/// content derived from `i` alone so that a reader can check it.
///
/// * FFRecord: `data` (bytes).
/// * Syrah: `image` (uint8 array), `label` (int64 array of one), `score` (float32 × 4),
///   `caption` (text).
/// * OFRecord: `encoded` (bytes list), `label` (int32 list), `score` (float list).
/// * Granular: `image` (bytes), `label` (int), `caption` (text), `vec` (float32 2×2
///   array), `meta` (map of mixed values).
/// * Gulp: `id`, `meta` (label, name, fps) and 1–3 JPEG `frames` sharing the payload
///   length as pixels (at least 10×8 each).
pub fn record(format: Format, i: u64, max_len: usize) -> crate::Record {
    use crate::{DType, Record, Value};
    let bytes = payload(i, max_len);
    let score: Vec<u8> = (0..4).flat_map(|k| ((i * 4 + k) as f32 * 0.25).to_le_bytes()).collect();
    let mut r = Record::new();
    match format {
        Format::Ffrecord => {
            r.push_bytes("data", &bytes);
        }
        Format::Syrah => {
            r.push_array("image", DType::U8, &[bytes.len() as u64], &bytes).ok();
            r.push_array("label", DType::I64, &[1], &((i % 10) as i64).to_le_bytes()).ok();
            r.push_array("score", DType::F32, &[4], &score).ok();
            r.push_str("caption", &format!("sample {i} ✓"));
        }
        Format::Ofrecord => {
            let mut out = r.out();
            let span = out.append(&bytes);
            out.push("encoded".into(), Value::List(vec![Value::Bytes(span)]));
            r.push_array("label", DType::I32, &[1], &((i % 10) as i32).to_le_bytes()).ok();
            r.push_array("score", DType::F32, &[4], &score).ok();
        }
        Format::Granular => {
            r.push_bytes("image", &bytes)
                .push_int("label", (i % 10) as i64)
                .push_str("caption", &format!("sample {i} ✓"));
            r.push_array("vec", DType::F32, &[2, 2], &score).ok();
            let mut out = r.out();
            let (k1, v1, k2) = (
                out.append(b"id"),
                out.append(format!("item-{i}").as_bytes()),
                out.append(b"weight"),
            );
            let meta = Value::Map(vec![
                (Value::Str(k1), Value::Str(v1)),
                (Value::Str(k2), Value::Float(i as f64 / 7.0)),
            ]);
            out.push("meta".into(), meta);
        }
        Format::Gulp => {
            r.push_str("id", &format!("video-{i:06}"));
            let mut out = r.out();
            let keys = [out.append(b"label"), out.append(b"name"), out.append(b"fps")];
            let name = out.append(format!("clip {i}").as_bytes());
            let meta = Value::Map(vec![
                (Value::Str(keys[0]), Value::Int((i % 10) as i64)),
                (Value::Str(keys[1]), Value::Str(name)),
                (Value::Str(keys[2]), Value::Float(25.0)),
            ]);
            out.push("meta".into(), meta);
            // The frames share the record's payload length as pixels, so that --max-record
            // shapes Gulp videos as it does the other formats' records.
            #[cfg(feature = "gulp")]
            let frames = {
                let count = 1 + i % 3;
                let pixels = bytes.len() as u64 / count;
                (0..count).map(|f| Value::Bytes(out.append(&jpeg_frame(i, f, pixels)))).collect()
            };
            #[cfg(not(feature = "gulp"))]
            let frames = Vec::new();
            out.push("frames".into(), Value::List(frames));
        }
        #[allow(unreachable_patterns)]
        _ => {
            r.push_bytes("data", &bytes);
        }
    }
    r
}

/// An RGB JPEG of about `bytes` bytes of pixels (4:3, at least 8×8), whose pixels depend
/// on the video and frame number.
#[cfg(feature = "gulp")]
pub fn jpeg_frame(video: u64, frame: u64, bytes: u64) -> Vec<u8> {
    // w × h × 3 ≈ bytes with w : h = 4 : 3, so h ≈ sqrt(bytes / 4).
    let h = ((bytes / 4) as f64).sqrt().clamp(8.0, 4096.0) as u32;
    let (w, h) = (h * 4 / 3, h);
    let pixels: Vec<u8> =
        (0..w * h * 3).map(|k| ((k as u64 * 7 + video * 13 + frame * 29) % 251) as u8).collect();
    reel_gulp::encode_jpeg(&pixels, w, h, 3, 90).unwrap_or_default()
}

/// The largest `max_record` [`generate`] takes: a generated record is built in memory,
/// so a larger one would be an allocation the machine may not have (2^62 bytes aborted the
/// process) rather than a dataset worth generating.
pub const MAX_GENERATED_RECORD: usize = 1 << 30;

/// Writes a generated dataset of `records` records of `format` at `path` ([`record`] with
/// payloads of at most `max_record` bytes, which is at most [`MAX_GENERATED_RECORD`];
/// refused before anything is written when the records cannot fit in the free space there),
/// calling `progress(done)` after each record. The dataset appears only when complete,
/// like every writer's output.
pub fn generate(
    path: impl AsRef<Path>,
    format: Format,
    records: u64,
    max_record: usize,
    options: &CreateOptions,
    progress: &mut dyn FnMut(u64),
) -> Result<SinkSummary> {
    if max_record > MAX_GENERATED_RECORD {
        return Err(crate::Error::invalid_input(format!(
            "generated records are at most {MAX_GENERATED_RECORD} bytes (1 GiB), not {max_record}"
        )));
    }
    check_room(path.as_ref(), format, records, max_record)?;
    let options = options.clone().records(records);
    let mut sink = crate::create(path, format, &options)?;
    // Stops once the calling thread's flag is raised (Ctrl-C), leaving nothing behind.
    let cancel = reel_core::io::cancel::CancelCheck::current();
    for i in 0..records {
        cancel.stop_if_cancelled("writing the generated dataset")?;
        sink.append(record(format, i, max_record).view())?;
        progress(i + 1);
    }
    sink.finish()
}

/// Below this many records the payload total spreads too widely around its mean for
/// [`least_bytes`] to be a floor worth refusing on; a write that runs out of room then
/// fails like any other, leaving nothing.
const ROOM_CHECK_RECORDS: u64 = 100;

/// The fewest bytes `records` generated records of `format` take: each payload is drawn
/// evenly from 0 to `max_record` bytes, so with many records they sum to nearly half the
/// largest each; 90 % of that leaves room for chance. Gulp stores a JPEG frame or more per
/// record instead of a payload. On top comes what the format stores per record whatever
/// its size (without it, records of 0 or 1 byte counted as nothing: 2^40 of them were
/// written towards 13 TB of FFRecord index).
fn least_bytes(format: Format, records: u64, max_record: usize) -> u128 {
    let per_record = match format {
        Format::Gulp => gulp_frame_bytes(),
        _ => max_record as u128 / 2 * 9 / 10,
    };
    u128::from(records) * (per_record + framing_bytes(format))
}

/// Bytes `format` stores for every record besides its payload, at the least (the specs
/// in `shared/spec/`): FFRecord's offset and checksum in the header, OFRecord's length
/// and its checksums, a Granular or bags index entry, a Syrah item's entry. Gulp's
/// per-video metadata is counted in its frame bytes.
fn framing_bytes(format: Format) -> u128 {
    match format {
        Format::Ffrecord => 12,
        Format::Ofrecord | Format::Granular | Format::Bags | Format::Syrah => 8,
        _ => 0,
    }
}

/// Refuses, before anything is written, a generated dataset that cannot fit in the free
/// space of the file system it goes to: without it, records in the billions were written
/// until the disk was full. A URL (object storage) has no such bound to ask about.
fn check_room(out: &Path, format: Format, records: u64, max_record: usize) -> crate::Result<()> {
    if records < ROOM_CHECK_RECORDS || out.to_str().is_some_and(|s| s.contains("://")) {
        return Ok(());
    }
    let dir = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    // A directory that cannot be asked (missing, not a directory) is left to the writer,
    // whose error names the path.
    let Some(free) = free_bytes(dir) else { return Ok(()) };
    let least = least_bytes(format, records, max_record);
    if least > free {
        let (what, smaller) = match format {
            Format::Gulp => (format!("{records} gulp videos"), ""),
            _ => (
                format!("{records} {format} records of up to {max_record} bytes"),
                " or a smaller largest record (--max-record, max_record=)",
            ),
        };
        return Err(crate::Error::invalid_input(format!(
            "{what} take at least {} and the file system holding {} has {} free; ask for \
             fewer records (--records, records=){smaller}",
            megabytes(least),
            dir.display(),
            megabytes(free)
        ))
        .with_path(out));
    }
    Ok(())
}

/// The bytes an unprivileged writer may still use on the file system holding `dir`.
#[cfg(unix)]
fn free_bytes(dir: &Path) -> Option<u128> {
    let fs = rustix::fs::statvfs(dir).ok()?;
    Some(u128::from(fs.f_bavail) * u128::from(fs.f_frsize))
}

#[cfg(not(unix))]
fn free_bytes(_: &Path) -> Option<u128> {
    None
}

/// Bytes of the one JPEG frame a generated Gulp video has at least.
fn gulp_frame_bytes() -> u128 {
    #[cfg(feature = "gulp")]
    return jpeg_frame(0, 0, 0).len() as u128;
    #[cfg(not(feature = "gulp"))]
    return 0;
}

/// `bytes` in whole MiB (GiB, TiB from ten of them on), for messages.
fn megabytes(bytes: u128) -> String {
    match bytes {
        b if b >= 10 << 40 => format!("{} TiB", b >> 40),
        b if b >= 10 << 30 => format!("{} GiB", b >> 30),
        b => format!("{} MiB", b >> 20),
    }
}

#[cfg(all(test, feature = "gulp"))]
#[allow(clippy::panic)]
mod tests {
    use super::*;

    /// The bytes of a generated Gulp video's frames.
    fn frame_bytes(i: u64, max_record: usize) -> usize {
        let r = record(Format::Gulp, i, max_record);
        let Some(crate::ValueRef::List(frames)) = r.get("frames") else {
            panic!("no frames list");
        };
        frames.iter().map(|f| if let crate::ValueRef::Bytes(b) = f { b.len() } else { 0 }).sum()
    }

    #[test]
    fn max_record_shapes_gulp_videos_as_it_does_other_records() {
        let (small, large): (usize, usize) = (0..20)
            .map(|i| (frame_bytes(i, 64), frame_bytes(i, 256 << 10)))
            .fold((0, 0), |(s, l), (a, b)| (s + a, l + b));
        // 20 videos of up to 256 KiB of pixels hold far more than 20 of the smallest frames.
        assert!(large > 20 * small, "{large} vs {small}");
        // Frames stay whole JPEGs (start and end markers) at every size.
        for max in [0, 64, 256 << 10] {
            let r = record(Format::Gulp, 3, max);
            let Some(crate::ValueRef::List(frames)) = r.get("frames") else { panic!() };
            for f in frames.iter() {
                let crate::ValueRef::Bytes(b) = f else { panic!("frame is not bytes") };
                assert!(b.starts_with(&[0xff, 0xd8]) && b.ends_with(&[0xff, 0xd9]), "max {max}");
            }
        }
    }
}
