//! Writer behaviour: bytes identical to the reference's for the spec's examples, append
//! mode, crash safety, the record sink's schema, pixel encoding, round trips.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{fake_jpeg, frames, json, read_all, snapshot, videos, write_dir};
use proptest::prelude::*;
use reel_core::{ErrorKind, Record, RecordSink, RecordSource, RecordSourceExt, Value};
use reel_gulp::json::parse_json;
use reel_gulp::{
    Frame, FrameSelection, GulpChunkWriter, GulpReader, GulpWriteOptions, GulpWriter, JsonStr,
    JsonValue, SanityIssueKind, Severity, decode_jpeg, sanity_check,
};

#[test]
fn spec_worked_example_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (a, b, c) = (fake_jpeg(632, 1), fake_jpeg(632, 2), fake_jpeg(331, 3));
    let mut w = GulpChunkWriter::create(d, 0, &GulpWriteOptions::default()).unwrap();
    w.append("7", json(r#"{"label": "a", "n": 1}"#), &[Frame::Jpeg(&a), Frame::Jpeg(&b)]).unwrap();
    w.append("x", json("{}"), &[Frame::Jpeg(&c)]).unwrap();
    let s = w.finish().unwrap();
    let meta = std::fs::read_to_string(d.join("meta_0.gmeta")).unwrap();
    assert_eq!(
        meta,
        r#"{"7": {"frame_info": [[0, 0, 632], [632, 0, 632]], "meta_data": [{"label": "a", "n": 1}]}, "x": {"frame_info": [[1264, 1, 332]], "meta_data": [{}]}}"#
    );
    assert_eq!(meta.len(), 148);
    let data = std::fs::read(d.join("data_0.gulp")).unwrap();
    assert_eq!(data.len(), 1596);
    assert_eq!([&a[..], &b[..], &c[..], &[0][..]].concat(), data);
    assert_eq!((s.videos, s.frames_written, s.data_bytes, s.meta_bytes), (2, 3, 1596, 148));
}

#[test]
fn spec_append_mode_example_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let j = |s| fake_jpeg(632, s);
    let mut w = GulpChunkWriter::create(d, 0, &GulpWriteOptions::default()).unwrap();
    w.append("a", json(r#"{"k": 1}"#), &[Frame::Jpeg(&j(1))]).unwrap();
    w.finish().unwrap();
    let mut w = GulpChunkWriter::append_to(d, 0, &GulpWriteOptions::default()).unwrap();
    assert_eq!((w.video_count(), w.data_len()), (1, 632));
    w.append("b", json(r#"{"k": 2}"#), &[Frame::Jpeg(&j(2)), Frame::Jpeg(&j(3))]).unwrap();
    w.append("a", json(r#"{"k": 3}"#), &[Frame::Jpeg(&j(4))]).unwrap();
    w.finish().unwrap();
    assert_eq!(
        std::fs::read_to_string(d.join("meta_0.gmeta")).unwrap(),
        r#"{"a": {"frame_info": [[0, 0, 632], [1896, 0, 632]], "meta_data": [{"k": 1}, {"k": 3}]}, "b": {"frame_info": [[632, 0, 632], [1264, 0, 632]], "meta_data": [{"k": 2}]}}"#
    );
    assert_eq!(std::fs::read(d.join("data_0.gulp")).unwrap(), [j(1), j(2), j(3), j(4)].concat());
    // Earlier id extended later: the reference's sanity check fails here; reel's passes.
    assert!(sanity_check(d).unwrap().is_ok());
}

#[test]
fn metadata_text_matches_python_for_record_values() {
    // {"e": None, "f": nan, "u": "é", 3: "intkey"} as Python writes it.
    let mut r = Record::new();
    let mut out = r.out();
    let keys = ["e", "f", "u"].map(|k| out.append_str(k));
    let [e, f, u] = keys;
    let map = Value::Map(vec![
        (e, Value::Null),
        (f, Value::Float(f64::NAN)),
        (u, out.append_str("\u{e9}")),
        (Value::Int(3), out.append_str("intkey")),
    ]);
    out.push("meta".into(), map);
    let meta = JsonValue::from_value(r.get("meta").unwrap()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut w = GulpChunkWriter::create(dir.path(), 0, &GulpWriteOptions::default()).unwrap();
    w.append("z", meta, &[]).unwrap();
    w.finish().unwrap();
    assert_eq!(
        std::fs::read_to_string(dir.path().join("meta_0.gmeta")).unwrap(),
        r#"{"z": {"frame_info": [], "meta_data": [{"e": null, "f": NaN, "u": "\u00e9", "3": "intkey"}]}}"#
    );
}

#[test]
fn dropped_writers_leave_things_as_they_were() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    // A new directory that is never finished does not appear.
    {
        let mut w = GulpWriter::create(root.join("new"), &GulpWriteOptions::default()).unwrap();
        w.write_video("a", json("{}"), &[Frame::Jpeg(&fake_jpeg(40, 1))]).unwrap();
    }
    assert!(common::names(root).is_empty(), "{:?}", common::names(root));

    let d = root.join("g");
    write_dir(&d, &videos(5), 2);
    let before = snapshot(&d);
    // New chunks that are never finished do not appear.
    {
        let mut w = GulpWriter::append_chunks(&d, &GulpWriteOptions::default().videos_per_chunk(1))
            .unwrap();
        for i in 0..3 {
            w.write_video(&format!("n{i}"), json("{}"), &[Frame::Jpeg(&fake_jpeg(40, i))]).unwrap();
        }
    }
    assert_eq!(snapshot(&d), before);
    {
        let mut c = GulpChunkWriter::create(&d, 7, &GulpWriteOptions::default()).unwrap();
        c.append("n", json("{}"), &[Frame::Jpeg(&fake_jpeg(40, 1))]).unwrap();
    }
    assert_eq!(snapshot(&d), before);
    // An append that is never finished is rolled back, even after its frames reached the
    // file (more than the write buffer).
    {
        let mut c = GulpChunkWriter::append_to(&d, 1, &GulpWriteOptions::default()).unwrap();
        let big = fake_jpeg(3 << 20, 5);
        c.append("n", json("{}"), &[Frame::Jpeg(&big)]).unwrap();
        assert!(std::fs::metadata(d.join("data_1.gulp")).unwrap().len() > 3 << 20);
    }
    assert_eq!(snapshot(&d), before);
}

#[test]
fn a_crash_during_append_leaves_the_old_index_valid() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("g");
    let vids = videos(4);
    write_dir(&d, &vids, 4);
    let records = read_all(&d);
    let mut c = GulpChunkWriter::append_to(&d, 0, &GulpWriteOptions::default()).unwrap();
    c.append("late", json("{}"), &[Frame::Jpeg(&fake_jpeg(2 << 20, 1))]).unwrap();
    // No drop, no finish: as if the process died here.
    std::mem::forget(c);
    assert_eq!(read_all(&d), records, "the old videos read as before");
    let report = sanity_check(&d).unwrap();
    assert!(report.is_ok());
    assert_eq!(report.of_kind(SanityIssueKind::TrailingData).count(), 1);
    assert!(report.of_kind(SanityIssueKind::TrailingData).all(|i| i.severity == Severity::Warning));
}

#[test]
fn existing_and_broken_chunks_are_not_overwritten() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write_dir(&d.join("g"), &videos(3), 3);
    let g = d.join("g");
    let e = GulpChunkWriter::create(&g, 0, &GulpWriteOptions::default()).err().unwrap();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    let e = GulpWriter::create(&g, &GulpWriteOptions::default()).err().unwrap();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    // A data file without its meta file.
    std::fs::write(g.join("data_5.gulp"), b"xx").unwrap();
    let e = GulpChunkWriter::append_to(&g, 5, &GulpWriteOptions::default()).err().unwrap();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    std::fs::remove_file(g.join("data_5.gulp")).unwrap();
    // An index that already points past its data file.
    let data = std::fs::read(g.join("data_0.gulp")).unwrap();
    std::fs::write(g.join("data_0.gulp"), &data[..data.len() - 1]).unwrap();
    let e = GulpChunkWriter::append_to(&g, 0, &GulpWriteOptions::default()).err().unwrap();
    assert_eq!(e.kind(), ErrorKind::Corrupt);
    // create_next numbers after the existing chunks.
    let c = GulpChunkWriter::create_next(&g, &GulpWriteOptions::default()).unwrap();
    assert_eq!(c.number(), 1);
}

#[test]
fn the_sink_takes_reader_records_and_refuses_others() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    let mut c = GulpChunkWriter::create_next(
        {
            std::fs::create_dir(&src).unwrap();
            &src
        },
        &GulpWriteOptions::default(),
    )
    .unwrap();
    c.append("dup", json(r#"{"part": 1, "x": [1.5, null]}"#), &[Frame::Jpeg(&fake_jpeg(30, 1))])
        .unwrap();
    c.append("empty", json("{}"), &[]).unwrap();
    c.append("dup", json(r#"{"part": 2}"#), &[Frame::Jpeg(&fake_jpeg(31, 2))]).unwrap();
    c.finish().unwrap();
    let records = read_all(&src);

    let out = dir.path().join("out");
    let mut w = GulpWriter::create(&out, &GulpWriteOptions::default()).unwrap();
    for r in &records {
        w.append(r.view()).unwrap();
    }
    let summary = RecordSink::finish(&mut w).unwrap();
    assert_eq!(summary.records, 2);
    assert_eq!(read_all(&out), records);
    assert_eq!(snapshot(&out), snapshot(&src), "contiguous frames: same bytes");
    assert_eq!(w.append(records[0].view()).unwrap_err().kind(), ErrorKind::Closed);

    let mut w = GulpWriter::create(dir.path().join("bad"), &GulpWriteOptions::default()).unwrap();
    let jpeg = fake_jpeg(20, 0);
    let cases: Vec<(Record, ErrorKind)> = vec![
        (Record::new().with_str("id", "a").with_bytes("data", b"x"), ErrorKind::Schema),
        (Record::new().with_str("meta", "m"), ErrorKind::Schema),
        (Record::new().with_float("id", 1.0), ErrorKind::Schema),
        (Record::new().with_str("id", "a").with_bytes("frames", &jpeg), ErrorKind::Schema),
        (
            Record::new()
                .with_str("id", "a")
                .with_bytes("meta", b"\x00")
                .with_value("frames", records[0].get("frames").unwrap()),
            ErrorKind::Schema,
        ),
    ];
    for (r, kind) in cases {
        assert_eq!(w.append(r.view()).unwrap_err().kind(), kind, "{r:?}");
    }
    // Frames must be JPEG bytes (checked) or uint8 images of the reference's shapes.
    let mut bad_frames = Record::new();
    bad_frames.push_str("id", "a");
    let mut o = bad_frames.out();
    let b = o.append(b"GIF89a");
    o.push("frames".into(), Value::List(vec![Value::Bytes(b)]));
    assert_eq!(w.append(bad_frames.view()).unwrap_err().kind(), ErrorKind::InvalidInput);
    let mut arr = Record::new().with_str("id", "b");
    arr.push_array("img", reel_core::DType::U8, &[2, 2, 4], &[0; 16]).unwrap();
    let img = arr.get("img").unwrap();
    let arr = Record::new().with_str("id", "b").with_value("frames", reel_core::ValueRef::Null);
    assert_eq!(w.append(arr.view()).unwrap_err().kind(), ErrorKind::Schema);
    let mut four = Record::new().with_str("id", "b");
    let v = four.out().copy_value(img);
    four.push("frames", Value::List(vec![v]));
    assert_eq!(w.append(four.view()).unwrap_err().kind(), ErrorKind::Schema);
    // Integer ids are stored as their decimal text, like str(id).
    let ok =
        Record::new().with_int("id", 7).with_value("frames", records[0].get("frames").unwrap());
    assert_eq!(w.append(ok.view()).unwrap(), 0);
    RecordSink::finish(&mut w).unwrap();
    let r = GulpReader::open(dir.path().join("bad")).unwrap();
    assert_eq!(r.ids().collect::<Vec<_>>(), ["7"]);
    assert_eq!(JsonValue::from_value(r.read(0).unwrap().get("meta").unwrap()).unwrap(), json("{}"));
}

/// The chroma sampling factors of each component in a baseline JPEG's SOF0 segment.
fn sampling_factors(jpeg: &[u8]) -> Vec<u8> {
    let at = jpeg.windows(2).position(|w| w == [0xff, 0xc0]).expect("SOF0");
    let n = jpeg[at + 9] as usize;
    (0..n).map(|k| jpeg[at + 11 + 3 * k]).collect()
}

#[test]
fn pixel_frames_are_encoded_like_the_reference() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("g");
    let (w, h) = (21u32, 10u32);
    let rgb: Vec<u8> = (0..w * h * 3).map(|k| (k % 200) as u8).collect();
    let gray: Vec<u8> = (0..w * h).map(|k| (k % 250) as u8).collect();
    let mut g = GulpWriter::create(&d, &GulpWriteOptions::default()).unwrap();
    g.write_video(
        "v",
        json("{}"),
        &[
            Frame::Rgb { width: w, height: h, pixels: &rgb },
            Frame::Gray { width: w, height: h, pixels: &gray },
        ],
    )
    .unwrap();
    assert_eq!(
        g.write_video("bad", json("{}"), &[Frame::Rgb { width: w, height: h, pixels: &rgb[1..] }])
            .unwrap_err()
            .kind(),
        ErrorKind::InvalidInput
    );
    g.finish().unwrap();
    let r = GulpReader::open(&d).unwrap();
    assert_eq!(r.len(), 1, "the failed video left nothing behind");
    let jpegs = frames(&r.read(0).unwrap());
    assert_eq!(sampling_factors(&jpegs[0]), [0x11, 0x11, 0x11], "4:4:4 like simplejpeg's default");
    assert_eq!(sampling_factors(&jpegs[1]), [0x11], "grayscale");
    let info = r.frame_info(0).unwrap();
    for (f, j) in info.iter().zip(&jpegs) {
        assert_eq!(f.length % 4, 0);
        assert_eq!(f.jpeg_len(), j.len() as u64);
    }
    let decoded = decode_jpeg(&jpegs[0], reel_gulp::FrameDecode::Auto).unwrap();
    assert_eq!(decoded.shape(), [10, 21, 3]);
    assert_eq!(decode_jpeg(&jpegs[1], reel_gulp::FrameDecode::Auto).unwrap().shape(), [10, 21]);
}

fn json_value() -> impl Strategy<Value = JsonValue> {
    let leaf = prop_oneof![
        Just(JsonValue::Null),
        any::<bool>().prop_map(JsonValue::Bool),
        any::<i64>().prop_map(JsonValue::Int),
        (i64::MAX as u64 + 1..=u64::MAX).prop_map(JsonValue::UInt),
        any::<u64>().prop_map(|bits| JsonValue::Float(f64::from_bits(bits))),
        any::<f64>().prop_map(JsonValue::Float),
        ".{0,12}".prop_map(JsonValue::from),
    ];
    leaf.prop_recursive(4, 40, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(JsonValue::Array),
            prop::collection::vec((".{0,6}", inner), 0..5).prop_map(|pairs| JsonValue::object(
                pairs.into_iter().map(|(k, v)| (JsonStr::Text(k), v))
            )),
        ]
    })
}

fn text_value() -> impl Strategy<Value = JsonValue> {
    // Values only JsonValue can hold: big integers and unpaired surrogates.
    prop_oneof![
        json_value(),
        "-?[1-9][0-9]{20,30}".prop_map(JsonValue::BigInt),
        prop::collection::vec(any::<u16>(), 0..8).prop_map(|u| match String::from_utf16(&u) {
            Ok(s) => JsonValue::from(s),
            Err(_) => JsonValue::Str(JsonStr::Utf16(u)),
        }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn json_text_round_trips(v in text_value()) {
        let text = v.to_python_json();
        prop_assert!(text.is_ascii());
        let back = parse_json(&text, 64).unwrap();
        prop_assert_eq!(&back, &v);
        prop_assert_eq!(back.to_python_json(), text);
    }

    #[test]
    fn videos_round_trip(
        vids in prop::collection::vec(
            (json_value(), prop::collection::vec(prop::collection::vec(any::<u8>(), 0..70), 0..4)),
            0..9,
        ),
        per_chunk in 1u64..4,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("g");
        let mut w = GulpWriter::create(&d, &GulpWriteOptions::default().videos_per_chunk(per_chunk)).unwrap();
        let mut expected = Vec::new();
        for (i, (meta, frames)) in vids.iter().enumerate() {
            // Any bytes after the JPEG start marker are stored unchanged.
            let jpegs: Vec<Vec<u8>> = frames.iter().map(|f| [&[0xff, 0xd8][..], f].concat()).collect();
            let fr: Vec<Frame<'_>> = jpegs.iter().map(|j| Frame::Jpeg(j)).collect();
            let id = format!("{i}-é");
            prop_assert_eq!(w.write_video(&id, meta.clone(), &fr).unwrap(), i as u64);
            expected.push((id, meta.clone(), jpegs));
        }
        w.finish().unwrap();
        let r = GulpReader::open(&d).unwrap();
        prop_assert_eq!(r.len(), vids.len() as u64);
        for (id, meta, jpegs) in &expected {
            let i = r.index_of(id).unwrap();
            let rec = r.read(i).unwrap();
            prop_assert_eq!(&frames(&rec), jpegs);
            // Compared as Python JSON text: NaN is not equal to itself as a value.
            let stored: Vec<String> = r.meta_data(i).unwrap().iter().map(JsonValue::to_python_json).collect();
            prop_assert_eq!(stored, vec![meta.to_python_json()]);
            let read = JsonValue::from_value(rec.get("meta").unwrap()).unwrap();
            prop_assert_eq!(read.to_python_json(), meta.to_python_json());
            let last = r.get(id, &FrameSelection::Indices(vec![-1])).map(|v| frames(&v));
            match jpegs.last() {
                Some(j) => prop_assert_eq!(last.unwrap(), vec![j.clone()]),
                None => prop_assert_eq!(last.unwrap_err().kind(), ErrorKind::OutOfRange),
            }
        }
        // And through the sink again: the same files.
        let again = dir.path().join("again");
        let mut sink = GulpWriter::create(&again, &GulpWriteOptions::default().videos_per_chunk(per_chunk)).unwrap();
        let mut by_write_order: Vec<(usize, Record)> = (0..r.len()).map(|i| {
            let rec = r.read(i).unwrap();
            let k: usize = rec.view().str("id").unwrap().split('-').next().unwrap().parse().unwrap();
            (k, rec)
        }).collect();
        by_write_order.sort_by_key(|(k, _)| *k);
        for (_, rec) in &by_write_order {
            sink.append(rec.view()).unwrap();
        }
        RecordSink::finish(&mut sink).unwrap();
        prop_assert_eq!(snapshot(&again), snapshot(&d));
    }
}

#[test]
fn closed_chunks_are_sealed_and_may_be_moved_away_before_finish() {
    let dir = tempfile::tempdir().unwrap();
    let reference = dir.path().join("reference");
    let all = videos(7);
    write_dir(&reference, &all, 3);
    let out = dir.path().join("out");
    let moved = dir.path().join("moved");
    std::fs::create_dir(&moved).unwrap();
    let mut w = GulpWriter::create(&out, &GulpWriteOptions::default().videos_per_chunk(3)).unwrap();
    let mut sealed = Vec::new();
    for v in &all {
        let frames: Vec<Frame<'_>> = v.frames.iter().map(|f| Frame::Jpeg(f)).collect();
        w.write_video(&v.id, v.meta.clone(), &frames).unwrap();
        for file in RecordSink::take_sealed(&mut w) {
            // Complete: the same bytes as the chunk of a directory written in one go.
            assert_eq!(
                std::fs::read(&file.path).unwrap(),
                std::fs::read(reference.join(&file.name)).unwrap(),
                "{}",
                file.name
            );
            std::fs::rename(&file.path, moved.join(&file.name)).unwrap();
            sealed.push(file.name);
        }
    }
    // The third chunk (one video) is still open.
    assert_eq!(sealed, ["data_0.gulp", "meta_0.gmeta", "data_1.gulp", "meta_1.gmeta"]);
    RecordSink::finish(&mut w).unwrap();
    assert!(RecordSink::take_sealed(&mut w).is_empty(), "finish publishes what it closes");
    for name in &sealed {
        assert!(!out.join(name).exists());
        std::fs::rename(moved.join(name), out.join(name)).unwrap();
    }
    assert_eq!(snapshot(&out), snapshot(&reference));

    // Chunks added to an existing directory are renamed into place on finish: not sealed.
    let mut w =
        GulpWriter::append_chunks(&out, &GulpWriteOptions::default().videos_per_chunk(1)).unwrap();
    w.write_video("new-a", json("{}"), &[]).unwrap();
    w.write_video("new-b", json("{}"), &[]).unwrap();
    assert!(RecordSink::take_sealed(&mut w).is_empty());
    RecordSink::finish(&mut w).unwrap();
}
