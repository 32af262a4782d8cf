//! Crafted files that claim huge counts and lengths: every reader refuses them quickly
//! with a Corrupt or Limit error, and never allocates more than the file's size (plus a
//! small fixed allowance), as measured by a counting allocator.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::time::{Duration, Instant};

use reel::{ErrorKind, Format, RecordSourceExt};

#[path = "../crates/reel-core/tests/support/tracking_alloc.rs"]
mod tracking_alloc;

#[global_allocator]
static GLOBAL: tracking_alloc::TrackingAllocator = tracking_alloc::TrackingAllocator;

/// Allowance for fixed-size buffers (I/O windows, hash tables) independent of the input.
const ALLOWANCE: usize = 1 << 20;

/// Opens `path` as `format` and reads every record; the outcome must be a typed refusal
/// (Corrupt, Limit or Checksum, at open or at some record), quickly, with no allocation beyond the data's size.
fn refuse(what: &str, format: Format, path: &Path) {
    let size: u64 = if path.is_dir() {
        std::fs::read_dir(path).unwrap().map(|e| e.unwrap().metadata().unwrap().len()).sum()
    } else {
        std::fs::metadata(path).unwrap().len()
    };
    tracking_alloc::reset_largest();
    let t = Instant::now();
    let outcome =
        reel::open_as(path, format, &reel::OpenOptions::default().backend(reel::Backend::Pread))
            .and_then(|s| {
                for i in 0..s.len().min(1000) {
                    s.read(i)?;
                }
                Ok(s.len())
            });
    let elapsed = t.elapsed();
    let peak = tracking_alloc::largest();
    let e = outcome.expect_err(&format!("{what}: a hostile file was accepted"));
    assert!(
        matches!(e.kind(), ErrorKind::Corrupt | ErrorKind::Limit | ErrorKind::Checksum),
        "{what}: {e}"
    );
    assert!(
        peak <= size as usize + ALLOWANCE,
        "{what}: allocated {peak} bytes for a {size}-byte input ({e})"
    );
    assert!(elapsed < Duration::from_secs(2), "{what}: took {elapsed:?}");
}

fn write(path: &Path, bytes: &[u8]) {
    if let Some(p) = path.parent() {
        std::fs::create_dir_all(p).unwrap();
    }
    std::fs::write(path, bytes).unwrap();
}

#[test]
fn ffrecord_claiming_2_pow_62_records_or_a_1_tib_record() {
    let dir = tempfile::tempdir().unwrap();
    // Stored metadata checksum 0 (a legacy file) skips the checksum, so the structure
    // checks are what must refuse these.
    let mut f = vec![0, 0, 0, 0];
    f.extend_from_slice(&(1i64 << 62).to_le_bytes());
    f.resize(64, 0);
    write(&dir.path().join("count.ffr"), &f);
    refuse("ffrecord 2^62 records", Format::Ffrecord, &dir.path().join("count.ffr"));

    let mut f = vec![0, 0, 0, 0];
    f.extend_from_slice(&1i64.to_le_bytes());
    f.extend_from_slice(&0u32.to_le_bytes());
    f.extend_from_slice(&(1i64 << 40).to_le_bytes());
    f.extend_from_slice(b"tiny");
    write(&dir.path().join("huge.ffr"), &f);
    refuse("ffrecord 1 TiB record offset", Format::Ffrecord, &dir.path().join("huge.ffr"));
}

#[test]
fn syrah_metadata_claiming_2_gib() {
    let dir = tempfile::tempdir().unwrap();
    let header = |meta_off: i64, meta_len: i64| {
        let mut h = b"GS\x00\x00\x02\x00".to_vec();
        h.extend_from_slice(&meta_off.to_le_bytes());
        h.extend_from_slice(&meta_len.to_le_bytes());
        h
    };
    let mut f = header(22, 1 << 31);
    f.extend_from_slice(&[5, 0, 0, 0, 0]);
    write(&dir.path().join("len.syr"), &f);
    refuse("syrah metadata length 2 GiB", Format::Syrah, &dir.path().join("len.syr"));

    // A metadata block whose BSON document says it is 2 GiB long.
    let mut f = header(22, 16);
    f.extend_from_slice(&0x7fff_ffffu32.to_le_bytes());
    f.extend_from_slice(&[0x03, b'a', 0, 5, 0, 0, 0, 0, 0, 0, 0, 0]);
    write(&dir.path().join("bson.syr"), &f);
    refuse("syrah BSON claiming 2 GiB", Format::Syrah, &dir.path().join("bson.syr"));
}

#[test]
fn ofrecord_frame_claiming_1_tib() {
    let dir = tempfile::tempdir().unwrap();
    let mut f = (1i64 << 40).to_le_bytes().to_vec();
    f.extend_from_slice(&[0x0a, 0x03, b'a', b'b', b'c']);
    write(&dir.path().join("part-00000"), &f);
    refuse("ofrecord 1 TiB frame", Format::Ofrecord, &dir.path().join("part-00000"));
}

#[test]
fn granular_index_and_msgpack_claiming_huge_sizes() {
    let dir = tempfile::tempdir().unwrap();
    let ds = dir.path().join("idx");
    write(&ds.join("spec.json"), br#"{"a": "bytes"}"#);
    write(&ds.join("a.bag"), b"0123456789");
    write(&ds.join("a.idx"), &(1u64 << 40).to_le_bytes());
    refuse("granular index entry at 1 TiB", Format::Granular, &ds);

    // A msgpack array header claiming 2^32 - 1 elements in a 10-byte record.
    let ds = dir.path().join("msgpack");
    write(&ds.join("spec.json"), br#"{"m": "msgpack"}"#);
    let rec = [0xdd, 0xff, 0xff, 0xff, 0xff, 0x01, 0x02, 0x03, 0x04, 0x05];
    write(&ds.join("m.bag"), &rec);
    write(&ds.join("m.idx"), &(rec.len() as u64).to_le_bytes());
    refuse("msgpack array of 2^32 elements", Format::Granular, &ds);

    // A single-file bag whose table start lies past its end.
    let mut bag = b"data".to_vec();
    bag.extend_from_slice(&(1u64 << 40).to_le_bytes());
    write(&dir.path().join("single.bag"), &bag);
    refuse("single-file bag table at 1 TiB", Format::Granular, &dir.path().join("single.bag"));
}

#[test]
fn gulp_frame_claiming_1_tib_and_deep_json() {
    let dir = tempfile::tempdir().unwrap();
    let ds = dir.path().join("len");
    write(&ds.join("data_0.gulp"), &[0xff, 0xd8, 0xff, 0xd9]);
    write(
        &ds.join("meta_0.gmeta"),
        br#"{"v": {"frame_info": [[0, 0, 1099511627776]], "meta_data": [{}]}}"#,
    );
    refuse("gulp frame of 1 TiB", Format::Gulp, &ds);

    let ds = dir.path().join("deep");
    write(&ds.join("data_0.gulp"), b"");
    let deep = format!("{}{}", "[".repeat(200_000), "]".repeat(200_000));
    write(
        &ds.join("meta_0.gmeta"),
        format!(r#"{{"v": {{"frame_info": [], "meta_data": [{deep}]}}}}"#).as_bytes(),
    );
    refuse("gulp meta nested 200000 deep", Format::Gulp, &ds);
}
