//! The sanity check: the reference's checks without its false alarms, and more.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{fake_jpeg, json, videos, write_dir};
use reel_gulp::{
    Frame, GulpChunkWriter, GulpWriteOptions, SanityIssueKind as K, SanityOptions, Severity,
    encode_jpeg, sanity_check, sanity_check_with,
};

fn kinds(report: &reel_gulp::GulpSanityReport) -> Vec<(Severity, K)> {
    report.issues.iter().map(|i| (i.severity, i.kind)).collect()
}

#[test]
fn healthy_directories_pass_including_empty_chunks() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("g");
    write_dir(&d, &videos(7), 3);
    // An empty chunk: the reference flags its 0-byte data file and crashes on it.
    GulpChunkWriter::create(&d, 9, &GulpWriteOptions::default()).unwrap().finish().unwrap();
    let r = sanity_check(&d).unwrap();
    assert!(r.is_ok(), "{:?}", r.issues);
    assert_eq!((r.chunks, r.videos), (4, 7));
    // Videos without frames (v000, v005) are noted.
    assert_eq!(kinds(&r), vec![(Severity::Info, K::NoFrames); 2]);
    assert_eq!(r.issues[0].id.as_deref(), Some("v000"));
}

#[test]
fn damage_is_found_and_located() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let pixels: Vec<u8> = (0..16 * 16 * 3).map(|i| (i * 7 % 256) as u8).collect();
    let jpeg = encode_jpeg(&pixels, 16, 16, 3, 90).unwrap();
    let mut c = GulpChunkWriter::create(d, 0, &GulpWriteOptions::default()).unwrap();
    c.append("a", json("{}"), &[Frame::Jpeg(&jpeg), Frame::Jpeg(&jpeg)]).unwrap();
    c.append("b", json("{}"), &[Frame::Jpeg(&jpeg)]).unwrap();
    c.finish().unwrap();
    let data = std::fs::read(d.join("data_0.gulp")).unwrap();
    let meta = std::fs::read_to_string(d.join("meta_0.gmeta")).unwrap();
    let len = (jpeg.len() + (4 - jpeg.len() % 4) % 4) as u64;
    let pad = (4 - jpeg.len() % 4) % 4;

    // Truncated data: the last frame is cut.
    std::fs::write(d.join("data_0.gulp"), &data[..data.len() - 10]).unwrap();
    let r = sanity_check(d).unwrap();
    assert!(!r.is_ok());
    assert_eq!(
        kinds(&r),
        [(Severity::Error, K::DataTruncated), (Severity::Error, K::FrameOutOfBounds)]
    );
    assert_eq!((r.issues[1].id.as_deref(), r.issues[1].frame), (Some("b"), Some(0)));
    assert_eq!((r.issues[1].record, r.issues[1].offset), (Some(1), Some(2 * len)));
    assert_eq!(r.issues[1].kind.as_str(), "frame-out-of-bounds");

    // Damaged first bytes of a frame; non-zero padding.
    let mut bad = data.clone();
    bad[len as usize] = 0;
    if pad > 0 {
        bad[len as usize * 2 - 1] = 9;
    }
    std::fs::write(d.join("data_0.gulp"), &bad).unwrap();
    let r = sanity_check(d).unwrap();
    let mut want = vec![(Severity::Error, K::BadJpeg)];
    if pad > 0 {
        want.push((Severity::Warning, K::NonZeroPadding));
    }
    assert_eq!(kinds(&r), want);
    assert_eq!((r.issues[0].id.as_deref(), r.issues[0].frame), (Some("a"), Some(1)));

    // Damage inside the JPEG with its markers intact (an impossible sample precision in the
    // frame header): found only by decoding.
    let mut inner = data.clone();
    let sof = jpeg.windows(2).position(|w| w == [0xff, 0xc0]).unwrap();
    inner[sof + 4] = 5;
    std::fs::write(d.join("data_0.gulp"), &inner).unwrap();
    assert!(sanity_check(d).unwrap().is_ok());
    let deep =
        sanity_check_with(d, &SanityOptions { decode_frames: true, ..Default::default() }).unwrap();
    assert_eq!(kinds(&deep), [(Severity::Error, K::BadJpeg)]);

    // Trailing bytes; overlapping frames.
    std::fs::write(d.join("data_0.gulp"), [&data[..], b"tail"].concat()).unwrap();
    assert_eq!(kinds(&sanity_check(d).unwrap()), [(Severity::Warning, K::TrailingData)]);
    std::fs::write(d.join("data_0.gulp"), &data).unwrap();
    let overlapping = meta.replacen(&format!("[{len}, "), &format!("[{}, ", len - 4), 1);
    std::fs::write(d.join("meta_0.gmeta"), &overlapping).unwrap();
    let r = sanity_check(d).unwrap();
    assert!(r.of_kind(K::OverlappingFrames).count() >= 1, "{:?}", r.issues);
    assert!(!r.is_ok());

    // Unreadable and empty meta files.
    std::fs::write(d.join("meta_0.gmeta"), &meta[..meta.len() / 2]).unwrap();
    let r = sanity_check(d).unwrap();
    assert_eq!(kinds(&r), [(Severity::Error, K::UnreadableMeta)]);
    assert_eq!(r.issues[0].offset, Some(meta.len() as u64 / 2), "{:?}", r.issues);
    std::fs::write(d.join("meta_0.gmeta"), b"").unwrap();
    assert_eq!(kinds(&sanity_check(d).unwrap()), [(Severity::Error, K::EmptyMetaFile)]);
    std::fs::write(d.join("meta_0.gmeta"), &meta).unwrap();
    std::fs::write(d.join("data_0.gulp"), b"").unwrap();
    assert_eq!(kinds(&sanity_check(d).unwrap()), [(Severity::Error, K::EmptyDataFile)]);
}

#[test]
fn chunk_files_and_duplicates() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for n in [0, 1] {
        let mut c = GulpChunkWriter::create(d, n, &GulpWriteOptions::default()).unwrap();
        c.append("same", json("{}"), &[Frame::Jpeg(&fake_jpeg(16, 1))]).unwrap();
        c.append(&format!("own{n}"), json("{}"), &[Frame::Jpeg(&fake_jpeg(16, 2))]).unwrap();
        c.finish().unwrap();
    }
    let r = sanity_check(d).unwrap();
    assert_eq!(kinds(&r), [(Severity::Error, K::DuplicateId)]);
    assert_eq!(r.issues[0].id.as_deref(), Some("same"));
    assert!(r.issues[0].message.contains("[0, 1]"));

    std::fs::write(d.join("data_2.gulp"), b"").unwrap();
    std::fs::write(d.join("data.gulp"), b"").unwrap();
    let r = sanity_check(d).unwrap();
    let files: Vec<_> = r.of_kind(K::ChunkFiles).map(|i| i.chunk).collect();
    assert_eq!(files, [None, Some(2)], "{:?}", r.issues);
    // The chunks that pair up are still checked.
    assert_eq!(r.chunks, 2);
}

#[test]
fn many_issues_are_summarised() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut c = GulpChunkWriter::create(d, 0, &GulpWriteOptions::default()).unwrap();
    for i in 0..30 {
        c.append(&format!("v{i}"), json("{}"), &[]).unwrap();
    }
    c.finish().unwrap();
    let r = sanity_check(d).unwrap();
    assert_eq!(r.issues.len(), 21);
    assert!(r.issues[20].message.contains("10 more"), "{}", r.issues[20].message);
}
