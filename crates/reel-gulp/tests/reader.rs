//! Reader behaviour: the spec's worked example, chunk order, frame selection (and that it
//! reads only the chosen frames, coalesced), decoding, ids, conformance on every backend,
//! and hostile input.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use common::{fake_jpeg, frames, json, videos, write_dir};
use reel_core::testing::conformance;
use reel_core::{
    Backend, ErrorKind, Limits, MemFiles, ReadAt, Record, RecordBatch, RecordSource,
    RecordSourceExt, Result, ValueRef, WarningKind,
};
use reel_gulp::{
    Frame, FrameDecode, FrameSelection, GulpChunkWriter, GulpOptions, GulpReader, GulpWriteOptions,
    GulpWriter, JsonValue, encode_jpeg,
};

/// The spec's worked example (§10): two chunks' worth of layout in one chunk, with JPEG
/// bytes of the sizes the reference produced.
fn spec_example() -> MemFiles {
    let meta = r#"{"7": {"frame_info": [[0, 0, 632], [632, 0, 632]], "meta_data": [{"label": "a", "n": 1}]}, "x": {"frame_info": [[1264, 1, 332]], "meta_data": [{}]}}"#;
    let mut data = fake_jpeg(632, 1);
    data.extend(fake_jpeg(632, 2));
    data.extend(fake_jpeg(331, 3));
    data.push(0);
    MemFiles::new([("data_0.gulp", data), ("meta_0.gmeta", meta.as_bytes().to_vec())])
}

#[test]
fn spec_worked_example() {
    let r = GulpReader::from_files(spec_example(), &GulpOptions::default()).unwrap();
    assert_eq!(r.len(), 2);
    assert_eq!(r.ids().collect::<Vec<_>>(), ["7", "x"]);
    let v = r.get("7", &FrameSelection::All).unwrap();
    assert_eq!(v.view().str("id"), Some("7"));
    assert_eq!(frames(&v), [fake_jpeg(632, 1), fake_jpeg(632, 2)]);
    let meta = v.get("meta").unwrap().as_map().unwrap();
    assert_eq!(meta.len(), 2);
    assert!(v.get("meta_extra").is_none());
    let x = r.get("x", &FrameSelection::All).unwrap();
    assert_eq!(frames(&x), [fake_jpeg(331, 3)], "the padding byte is not part of the JPEG");
    assert_eq!(x.get("meta").unwrap().as_map().unwrap().len(), 0);
    // gd[7, [1, 0]] and gd[7, 1:2]
    let sel = r.get("7", &FrameSelection::Indices(vec![1, 0])).unwrap();
    assert_eq!(frames(&sel), [fake_jpeg(632, 2), fake_jpeg(632, 1)]);
    let sel = r.get("7", &FrameSelection::range(1, 2)).unwrap();
    assert_eq!(frames(&sel), [fake_jpeg(632, 2)]);
    assert_eq!(r.chunk_of("x"), Some(0));
    assert_eq!(r.frame_info(1).unwrap()[0].jpeg_len(), 331);
    assert_eq!(r.meta_data(0).unwrap(), vec![json(r#"{"label": "a", "n": 1}"#)]);
    let e = r.get("nope", &FrameSelection::All).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound);
}

/// A `ReadAt` that counts the requests reaching the file layer after coalescing.
struct Counting {
    inner: MemFiles,
    reads: AtomicU64,
    bytes: AtomicU64,
    log: Mutex<Vec<(u64, usize)>>,
}

impl ReadAt for Counting {
    fn backend_name(&self) -> &'static str {
        "counting"
    }
    fn file_count(&self) -> usize {
        self.inner.file_count()
    }
    fn file_len(&self, file: u32) -> u64 {
        self.inner.file_len(file)
    }
    fn file_path(&self, file: u32) -> &Path {
        self.inner.file_path(file)
    }
    fn read_exact_at(&self, file: u32, offset: u64, buf: &mut [u8]) -> Result<()> {
        self.reads.fetch_add(1, Ordering::Relaxed);
        self.bytes.fetch_add(buf.len() as u64, Ordering::Relaxed);
        self.log.lock().unwrap().push((offset, buf.len()));
        self.inner.read_exact_at(file, offset, buf)
    }
}

#[test]
fn frame_selection_reads_only_the_chosen_frames_coalesced() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("g");
    let jpegs: Vec<Vec<u8>> = (0..10).map(|k| fake_jpeg(50 + k * 3, k as u8)).collect();
    let mut w = GulpWriter::create(&d, &GulpWriteOptions::default()).unwrap();
    w.write_video("before", json("{}"), &[Frame::Jpeg(&fake_jpeg(40, 9))]).unwrap();
    let fr: Vec<Frame<'_>> = jpegs.iter().map(|j| Frame::Jpeg(j)).collect();
    w.write_video("v", json("{}"), &fr).unwrap();
    w.finish().unwrap();
    let paths = reel_gulp::dataset_files(&d).unwrap();
    let counting = Counting {
        inner: MemFiles::load(&paths).unwrap(),
        reads: AtomicU64::new(0),
        bytes: AtomicU64::new(0),
        log: Mutex::new(Vec::new()),
    };
    let r = GulpReader::from_files(counting, &GulpOptions::default()).unwrap();
    let info = r.frame_info(1).unwrap().to_vec();
    let read = |sel: FrameSelection| {
        let files = r.source().files();
        files.reads.store(0, Ordering::Relaxed);
        files.bytes.store(0, Ordering::Relaxed);
        files.log.lock().unwrap().clear();
        let mut rec = Record::new();
        r.read_video(1, &sel, &mut rec).unwrap();
        let log = files.log.lock().unwrap().clone();
        (files.reads.load(Ordering::Relaxed), files.bytes.load(Ordering::Relaxed), log, rec)
    };
    let span = |a: usize, b: usize| info[a..b].iter().map(|f| f.length).sum::<u64>();

    let (reads, bytes, log, rec) = read(FrameSelection::All);
    assert_eq!((reads, bytes), (1, span(0, 10)), "all frames in one read");
    assert_eq!(log[0].0, info[0].loc);
    assert_eq!(frames(&rec), jpegs);

    let (reads, bytes, log, rec) = read(FrameSelection::range(2, 6));
    assert_eq!((reads, bytes), (1, span(2, 6)), "a run of frames in one read");
    assert_eq!(log, [(info[2].loc, span(2, 6) as usize)]);
    assert_eq!(frames(&rec), jpegs[2..6]);

    let (reads, bytes, _, rec) = read(FrameSelection::every(3));
    assert_eq!(
        (reads, bytes),
        (4, info[0].length + info[3].length + info[6].length + info[9].length)
    );
    assert_eq!(
        frames(&rec),
        [jpegs[0].clone(), jpegs[3].clone(), jpegs[6].clone(), jpegs[9].clone()]
    );

    let (reads, _, _, rec) = read(FrameSelection::Indices(vec![7, 8, 9, 0]));
    assert_eq!(reads, 2, "7, 8, 9 together, then 0");
    assert_eq!(
        frames(&rec),
        [jpegs[7].clone(), jpegs[8].clone(), jpegs[9].clone(), jpegs[0].clone()]
    );

    let (reads, bytes, _, rec) =
        read(FrameSelection::Slice { start: Some(5), stop: Some(5), step: 1 });
    assert_eq!((reads, bytes), (0, 0), "nothing chosen, nothing read");
    assert_eq!(rec.view().str("id"), Some("v"));

    // Batches with a selection.
    let mut batch = RecordBatch::new();
    r.read_videos(&[1, 0, 1], &FrameSelection::Indices(vec![-1]), FrameDecode::Raw, &mut batch)
        .unwrap();
    let got: Vec<Vec<u8>> = batch
        .iter()
        .map(|v| {
            v.get("frames").unwrap().as_list().unwrap().get(0).unwrap().as_bytes().unwrap().to_vec()
        })
        .collect();
    assert_eq!(got, [jpegs[9].clone(), fake_jpeg(40, 9), jpegs[9].clone()]);
    let e = r
        .read_videos(&[1, 0], &FrameSelection::Indices(vec![1]), FrameDecode::Raw, &mut batch)
        .unwrap_err();
    assert_eq!((e.kind(), e.record()), (ErrorKind::OutOfRange, Some(0)));
    assert!(batch.is_empty());
}

#[test]
fn chunks_are_read_in_file_name_order() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("g");
    let vids = videos(12);
    write_dir(&d, &vids, 1);
    let r = GulpReader::open(&d).unwrap();
    let numbers: Vec<u64> = r.chunks().iter().map(|c| c.number).collect();
    assert_eq!(numbers, [0, 1, 10, 11, 2, 3, 4, 5, 6, 7, 8, 9]);
    let ids: Vec<&str> = r.ids().collect();
    assert_eq!(&ids[..5], ["v000", "v001", "v010", "v011", "v002"]);
    for v in &vids {
        let i = r.index_of(&v.id).unwrap();
        assert_eq!(frames(&r.read(i).unwrap()), v.frames);
        assert_eq!(r.chunk_videos(r.chunk_of(&v.id).unwrap()).unwrap(), i..i + 1);
    }
}

fn open_boxed(d: &Path, b: Backend, decode: FrameDecode) -> Result<Box<dyn RecordSource>> {
    Ok(Box::new(GulpReader::open_with(d, &GulpOptions::default().backend(b).decode(decode))?))
}

#[test]
fn conformance_on_every_backend_raw_and_decoded() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("g");
    let mut w = GulpWriter::create(&d, &GulpWriteOptions::default().videos_per_chunk(3)).unwrap();
    for i in 0..8u32 {
        let (wd, h) = (5 + i, 3 + i % 4);
        let rgb: Vec<u8> = (0..wd * h * 3).map(|k| (k * 5 + i) as u8).collect();
        let gray: Vec<u8> = (0..wd * h).map(|k| (k * 3 + i) as u8).collect();
        let fr = [
            Frame::Rgb { width: wd, height: h, pixels: &rgb },
            Frame::Gray { width: wd, height: h, pixels: &gray },
        ];
        let n = (i % 3) as usize;
        w.write_video(&format!("id{i}"), json(&format!(r#"{{"i": {i}}}"#)), &fr[..n]).unwrap();
    }
    w.finish().unwrap();
    let raw = conformance::check_backends(|b| open_boxed(&d, b, FrameDecode::Raw)).unwrap();
    let decoded = conformance::check_backends(|b| open_boxed(&d, b, FrameDecode::Auto)).unwrap();
    assert_eq!(raw.len(), 8);
    for (i, o) in decoded.iter().enumerate() {
        let r = o.as_ref().unwrap();
        let list: Vec<ValueRef<'_>> = r.get("frames").unwrap().as_list().unwrap().iter().collect();
        assert_eq!(list.len(), i % 3);
        let (wd, h) = (5 + i as u64, 3 + i as u64 % 4);
        if let Some(f) = list.first() {
            assert_eq!(f.as_array().unwrap().shape, [h, wd, 3]);
        }
        if let Some(f) = list.get(1) {
            assert_eq!(f.as_array().unwrap().shape, [h, wd]);
        }
    }
    // Forced colour spaces.
    let r = GulpReader::open(&d).unwrap();
    let mut rec = Record::new();
    r.read_video_with(2, &FrameSelection::All, FrameDecode::Gray, &mut rec).unwrap();
    let shapes: Vec<Vec<u64>> = rec
        .get("frames")
        .unwrap()
        .as_list()
        .unwrap()
        .iter()
        .map(|f| f.as_array().unwrap().shape.to_vec())
        .collect();
    assert_eq!(shapes, [vec![5, 7], vec![5, 7]]);
    r.read_video_with(2, &FrameSelection::All, FrameDecode::Rgb, &mut rec).unwrap();
    let shapes: Vec<Vec<u64>> = rec
        .get("frames")
        .unwrap()
        .as_list()
        .unwrap()
        .iter()
        .map(|f| f.as_array().unwrap().shape.to_vec())
        .collect();
    assert_eq!(shapes, [vec![5, 7, 3], vec![5, 7, 3]]);
    // The decoded size is checked against the limit before anything is allocated.
    let mut tight = Limits::default();
    tight.max_decoded_bytes = 50;
    let small =
        GulpReader::open_with(&d, &GulpOptions::default().decode(FrameDecode::Auto).limits(tight))
            .unwrap();
    assert_eq!(small.read(2).unwrap_err().kind(), ErrorKind::Limit);
}

#[test]
fn same_id_in_two_chunks_opens_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for n in [0, 1] {
        let mut c = GulpChunkWriter::create(d, n, &GulpWriteOptions::default()).unwrap();
        c.append(
            "dup",
            json(&format!(r#"{{"chunk": {n}}}"#)),
            &[Frame::Jpeg(&fake_jpeg(30, n as u8))],
        )
        .unwrap();
        c.append(&format!("only{n}"), json("{}"), &[]).unwrap();
        c.finish().unwrap();
    }
    let r = GulpReader::open(d).unwrap();
    assert_eq!(r.len(), 4);
    assert_eq!(r.info().warnings.len(), 1);
    assert_eq!(r.info().warnings[0].kind, WarningKind::ReferenceQuirk);
    assert_eq!(r.duplicate_ids().len(), 1);
    assert_eq!(r.duplicate_ids()[0].chunks, [0, 1]);
    assert_eq!(r.index_of("dup"), Some(0));
    assert_eq!(frames(&r.read(2).unwrap()), [fake_jpeg(30, 1)], "both copies are readable");
    // The directory writer refuses to make such a directory.
    let mut w = GulpWriter::append_chunks(d, &GulpWriteOptions::default()).unwrap();
    assert_eq!(
        w.write_video("only1", json("{}"), &[]).unwrap_err().kind(),
        ErrorKind::InvalidInput
    );
}

#[test]
fn appended_ids_keep_every_meta_data_element() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut c = GulpChunkWriter::create(d, 0, &GulpWriteOptions::default()).unwrap();
    c.append(
        "dup",
        json(r#"{"part": 1}"#),
        &[Frame::Jpeg(&fake_jpeg(30, 1)), Frame::Jpeg(&fake_jpeg(31, 2))],
    )
    .unwrap();
    c.append("other", json("{}"), &[Frame::Jpeg(&fake_jpeg(32, 3))]).unwrap();
    c.append("dup", json(r#"{"part": 2}"#), &[Frame::Jpeg(&fake_jpeg(33, 4))]).unwrap();
    c.finish().unwrap();
    let r = GulpReader::open(d).unwrap();
    let v = r.get("dup", &FrameSelection::All).unwrap();
    assert_eq!(
        frames(&v),
        [fake_jpeg(30, 1), fake_jpeg(31, 2), fake_jpeg(33, 4)],
        "non-contiguous frames"
    );
    assert_eq!(v.get("meta").unwrap().as_map().unwrap().get("part").unwrap().as_i64(), Some(1));
    let extra = v.get("meta_extra").unwrap().as_list().unwrap();
    assert_eq!(extra.len(), 1);
    assert_eq!(JsonValue::from_value(extra.get(0).unwrap()).unwrap(), json(r#"{"part": 2}"#));
    let frames_of_other = r.get("other", &FrameSelection::All).unwrap();
    assert!(frames_of_other.get("meta_extra").is_none());
}

#[test]
fn empty_directories_and_chunks() {
    let dir = tempfile::tempdir().unwrap();
    let r = GulpReader::open(dir.path()).unwrap();
    assert_eq!((r.len(), r.chunks().len()), (0, 0));
    GulpChunkWriter::create(dir.path(), 0, &GulpWriteOptions::default()).unwrap().finish().unwrap();
    let r = GulpReader::open(dir.path()).unwrap();
    assert_eq!((r.len(), r.chunks().len()), (0, 1));
    assert_eq!(std::fs::read(dir.path().join("meta_0.gmeta")).unwrap(), b"{}");
    assert_eq!(std::fs::read(dir.path().join("data_0.gulp")).unwrap(), b"");
    let e = GulpReader::open(dir.path().join("meta_0.gmeta")).err().unwrap();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    let e = GulpReader::open(dir.path().join("missing")).err().unwrap();
    assert_eq!(e.kind(), ErrorKind::NotFound);
}

fn open_mem(meta: &str, data: Vec<u8>) -> Result<GulpReader<MemFiles>> {
    let files = MemFiles::new([("data_0.gulp", data), ("meta_0.gmeta", meta.as_bytes().to_vec())]);
    GulpReader::from_files(files, &GulpOptions::default().limits(Limits::strict()))
}

#[test]
fn damaged_metadata_is_refused_at_open() {
    let data = fake_jpeg(100, 0);
    for (meta, kind) in [
        ("", ErrorKind::Corrupt),
        ("[]", ErrorKind::Corrupt),
        (r#"{"a": []}"#, ErrorKind::Corrupt),
        (r#"{"a": {"meta_data": [{}]}}"#, ErrorKind::Corrupt),
        (r#"{"a": {"frame_info": []}}"#, ErrorKind::Corrupt),
        (r#"{"a": {"frame_info": [], "meta_data": {}}}"#, ErrorKind::Corrupt),
        (r#"{"a": {"frame_info": [[0, 0]], "meta_data": [{}]}}"#, ErrorKind::Corrupt),
        (r#"{"a": {"frame_info": [[0, 0, 4, 4]], "meta_data": [{}]}}"#, ErrorKind::Corrupt),
        (r#"{"a": {"frame_info": [[-4, 0, 4]], "meta_data": [{}]}}"#, ErrorKind::Corrupt),
        (r#"{"a": {"frame_info": [[0, 0, 4.0]], "meta_data": [{}]}}"#, ErrorKind::Corrupt),
        (r#"{"a": {"frame_info": [[0, 5, 4]], "meta_data": [{}]}}"#, ErrorKind::Corrupt),
        (
            r#"{"a": {"frame_info": [[0, 0, 18446744073709551616]], "meta_data": [{}]}}"#,
            ErrorKind::Corrupt,
        ),
        (r#"{"a": {"frame_info": [0], "meta_data": [{}]}}"#, ErrorKind::Corrupt),
        (r#"{"a": {"frame_info": [], "meta_data": [{}]}} "#, ErrorKind::Corrupt),
        ("{\"a\": {\"frame_info\": [], \"meta_data\": [\"\u{1}\"]}}", ErrorKind::Corrupt),
    ] {
        if meta.ends_with("} ") {
            // Trailing whitespace is fine, as in Python.
            assert!(open_mem(meta, data.clone()).is_ok());
            continue;
        }
        let e = open_mem(meta, data.clone()).err().unwrap_or_else(|| panic!("{meta:?} opened"));
        assert_eq!(e.kind(), kind, "{meta:?}: {e}");
        assert!(e.path().unwrap().ends_with("meta_0.gmeta"), "{e}");
        assert_eq!(e.format(), Some("gulp"));
    }
    // Not UTF-8 (the reference: UnicodeDecodeError).
    let files = MemFiles::new([("data_0.gulp", vec![]), ("meta_0.gmeta", vec![0x84, b'{', b'}'])]);
    assert_eq!(
        GulpReader::from_files(files, &GulpOptions::default()).err().unwrap().kind(),
        ErrorKind::Corrupt
    );
    // Nesting beyond the limit.
    let deep = format!(
        r#"{{"a": {{"frame_info": [], "meta_data": [{}{}]}}}}"#,
        "[".repeat(100),
        "]".repeat(100)
    );
    assert_eq!(open_mem(&deep, vec![]).err().unwrap().kind(), ErrorKind::Limit);
    // Mismatched file names.
    let files = MemFiles::new([("data_0.gulp", vec![]), ("meta_1.gmeta", b"{}".to_vec())]);
    assert_eq!(
        GulpReader::from_files(files, &GulpOptions::default()).err().unwrap().kind(),
        ErrorKind::InvalidInput
    );
}

#[test]
fn frames_outside_the_data_file_fail_only_their_video() {
    let data = fake_jpeg(100, 0);
    let meta = r#"{"ok": {"frame_info": [[0, 0, 100]], "meta_data": [{}]}, "past_end": {"frame_info": [[0, 0, 100], [96, 0, 8]], "meta_data": [{}]}, "huge": {"frame_info": [[0, 0, 18446744073709551615]], "meta_data": [{}]}, "many": {"frame_info": [[0, 0, 100], [0, 0, 100], [0, 0, 100]], "meta_data": [{}]}, "wrap": {"frame_info": [[18446744073709551615, 0, 2]], "meta_data": [{}]}}"#;
    let r = open_mem(meta, data.clone()).unwrap();
    assert_eq!(frames(&r.read(0).unwrap()), [data]);
    for i in 1..5 {
        let e = r.read(i).unwrap_err();
        assert_eq!((e.kind(), e.record()), (ErrorKind::Corrupt, Some(i)), "{e}");
    }
    let mut batch = RecordBatch::new();
    assert_eq!(r.read_batch_into(&[0, 3], &mut batch).unwrap_err().record(), Some(3));
}

#[test]
fn big_integers_in_metadata_fail_only_that_read() {
    let meta = r#"{"a": {"frame_info": [], "meta_data": [{"n": 123456789012345678901234567890}]}, "b": {"frame_info": [], "meta_data": [{"n": 18446744073709551615}]}}"#;
    let r = open_mem(meta, vec![]).unwrap();
    assert_eq!(r.read(0).unwrap_err().kind(), ErrorKind::Unsupported);
    let b = r.read(1).unwrap();
    assert!(matches!(
        b.get("meta").unwrap().as_map().unwrap().get("n"),
        Some(ValueRef::UInt(u64::MAX))
    ));
    // The stored metadata is still available exactly.
    assert_eq!(r.meta_data(0).unwrap(), vec![json(r#"{"n": 123456789012345678901234567890}"#)]);
}

/// Random damage to a small dataset: never a panic, and batch reads agree with single ones.
#[test]
fn random_damage_never_panics() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("g");
    let mut w = GulpWriter::create(&d, &GulpWriteOptions::default().videos_per_chunk(2)).unwrap();
    let jpeg = encode_jpeg(&[90; 8 * 8 * 3], 8, 8, 3, 90).unwrap();
    for i in 0..4 {
        w.write_video(
            &format!("v{i}"),
            json(r#"{"a": [1, 2.5, "x", null, {"b": NaN}]}"#),
            &[Frame::Jpeg(&jpeg); 2],
        )
        .unwrap();
    }
    w.finish().unwrap();
    let paths = reel_gulp::dataset_files(&d).unwrap();
    let contents: Vec<Vec<u8>> = paths.iter().map(|p| std::fs::read(p).unwrap()).collect();
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for _ in 0..600 {
        let mut files = contents.clone();
        let f = (next() % files.len() as u64) as usize;
        for _ in 0..1 + next() % 3 {
            if files[f].is_empty() {
                break;
            }
            let at = (next() % files[f].len() as u64) as usize;
            files[f][at] = next() as u8;
        }
        for decode in [FrameDecode::Raw, FrameDecode::Auto] {
            let set = MemFiles::new(paths.iter().cloned().zip(files.iter().cloned()));
            let Ok(r) = GulpReader::from_files(
                set,
                &GulpOptions::default().decode(decode).limits(Limits::strict()),
            ) else {
                continue;
            };
            let singles: Vec<bool> = (0..r.len()).map(|i| r.read(i).is_ok()).collect();
            let all: Vec<u64> = (0..r.len()).collect();
            let batch_ok = r.read_batch(&all).is_ok();
            assert_eq!(batch_ok, singles.iter().all(|&ok| ok));
        }
    }
}
