//! The writers: part rolling, staging (a dropped writer leaves nothing), value mapping
//! errors and options, and OneFlow-strict mode.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use reel_core::{DType, ErrorKind, Record, RecordSink, RecordSource, RecordSourceExt, Value};
use reel_ofrecord::{
    EncodeOptions, OfrecordFeatures, OfrecordFileWriter, OfrecordReader, OfrecordWriter,
    OfrecordWriterOptions, encode_record, entry_order,
};
use support::{frame, sample};

fn names_in(dir: &std::path::Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    v.sort();
    v
}

#[test]
fn parts_roll_by_count_by_size_and_on_request() {
    let tmp = tempfile::tempdir().unwrap();
    let by_count = tmp.path().join("count");
    let mut w = OfrecordWriter::create_with(
        &by_count,
        &OfrecordWriterOptions::default().max_records_per_part(4),
    )
    .unwrap();
    for i in 0..10 {
        assert_eq!(w.write_record(sample(i).view()).unwrap(), i);
    }
    let s = w.finish().unwrap();
    assert_eq!(names_in(&by_count), ["part-00000", "part-00001", "part-00002"]);
    assert_eq!(s.records, 10);
    let r = OfrecordReader::open(&by_count).unwrap();
    assert_eq!((r.part_len(0), r.part_len(2)), (Some(4), Some(2)));

    // By size: every part stays under the limit unless one frame alone is larger.
    let by_size = tmp.path().join("size");
    let limit = 600;
    let mut w = OfrecordWriter::create_with(
        &by_size,
        &OfrecordWriterOptions::default().max_bytes_per_part(limit),
    )
    .unwrap();
    let mut frames = Vec::new();
    for i in 0..30 {
        w.write_record(sample(i).view()).unwrap();
        frames.push(frame(&encode_record(sample(i).view(), Default::default()).unwrap()));
    }
    w.finish().unwrap();
    let r = OfrecordReader::open(&by_size).unwrap();
    assert!(r.part_count() > 3);
    let mut next = 0;
    for p in r.part_paths() {
        let bytes = std::fs::read(p).unwrap();
        assert!(
            bytes.len() as u64 <= limit
                || r.part_len(r.part_paths().iter().position(|x| x == p).unwrap()) == Some(1)
        );
        // Greedy: the next frame would not have fitted.
        let n = r.part_len(r.part_paths().iter().position(|x| x == p).unwrap()).unwrap() as usize;
        assert_eq!(bytes, frames[next..next + n].concat());
        next += n;
        if next < frames.len() {
            assert!(bytes.len() + frames[next].len() > limit as usize);
        }
    }

    // On request; an empty part is never started.
    let manual = tmp.path().join("manual");
    let mut w = OfrecordWriter::create(&manual).unwrap();
    w.start_new_part().unwrap();
    w.write_record(sample(0).view()).unwrap();
    w.start_new_part().unwrap();
    w.start_new_part().unwrap();
    w.write_record(sample(1).view()).unwrap();
    w.finish().unwrap();
    assert_eq!(names_in(&manual), ["part-00000", "part-00001"]);
}

#[test]
fn dropped_writers_leave_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    {
        let mut w = OfrecordWriter::create(tmp.path().join("ds")).unwrap();
        w.write_record(sample(1).view()).unwrap();
        let mut f = OfrecordFileWriter::create(tmp.path().join("part-00000")).unwrap();
        f.write_record(sample(1).view()).unwrap();
    }
    assert!(names_in(tmp.path()).is_empty(), "{:?}", names_in(tmp.path()));
}

#[test]
fn finished_writers_are_closed_and_targets_are_not_overwritten() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("ds");
    let mut w = OfrecordWriter::create(&path).unwrap();
    w.write_record(sample(0).view()).unwrap();
    w.finish().unwrap();
    assert_eq!(w.write_record(sample(1).view()).unwrap_err().kind(), ErrorKind::Closed);
    assert_eq!(w.finish().unwrap_err().kind(), ErrorKind::Closed);
    // A second dataset at the same (non-empty) path is refused at finish; the first stays.
    let mut w2 = OfrecordWriter::create(&path).unwrap();
    w2.write_record(sample(5).view()).unwrap();
    assert!(w2.finish().is_err());
    assert!(OfrecordReader::open(&path).unwrap().read(0).unwrap() == sample(0));
    assert_eq!(names_in(tmp.path()), ["ds"]);
}

#[test]
fn zero_records_make_one_empty_part() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("ds");
    let mut w = OfrecordWriter::create(&path).unwrap();
    assert_eq!(w.finish().unwrap().records, 0);
    assert_eq!(names_in(&path), ["part-00000"]);
    assert_eq!(OfrecordReader::open(&path).unwrap().len(), 0);
}

#[test]
fn strict_mode_refuses_records_oneflow_cannot_read() {
    let tmp = tempfile::tempdir().unwrap();
    let strict = OfrecordWriterOptions::default().oneflow_strict(true);
    let mut w = OfrecordWriter::create_with(tmp.path().join("ds"), &strict.clone()).unwrap();
    let e = w.write_record(Record::new().view()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    // The writer is still usable.
    w.write_record(sample(2).view()).unwrap();
    assert_eq!(w.finish().unwrap().records, 1);
    // Without strict mode an empty record is an 8-byte zero frame.
    let path = tmp.path().join("p");
    let mut f = OfrecordFileWriter::create(&path).unwrap();
    f.write_record(Record::new().view()).unwrap();
    f.finish().unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), [0u8; 8]);
}

#[test]
fn values_without_an_ofrecord_form_are_schema_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let mut w = OfrecordWriter::create(tmp.path().join("ds")).unwrap();
    let mut bad = Vec::new();
    let mut r = Record::new();
    r.push_bool("b", true);
    bad.push(r);
    let mut r = Record::new();
    r.push("m", Value::Map(vec![]));
    bad.push(r);
    let mut r = Record::new();
    r.push("l", Value::List(vec![Value::Int(1)]));
    bad.push(r);
    let mut r = Record::new();
    r.push_uint("u", u64::MAX);
    bad.push(r);
    let mut r = Record::new();
    r.push_array("img", DType::F32, &[2, 2], &[0; 16]).unwrap();
    bad.push(r);
    let mut r = Record::new();
    r.push_array("px", DType::U8, &[3], &[1, 2, 3]).unwrap();
    bad.push(r);
    let mut r = Record::new();
    r.push_int("dup", 1).push_int("dup", 2);
    bad.push(r);
    for r in &bad {
        let e = w.write_record(r.view()).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Schema, "{e}");
        let name = r.iter().next().unwrap().0;
        assert!(e.message().contains(name), "{e}");
    }
    assert_eq!(w.records(), 0);
    // With the options, arrays are flattened and widened.
    let options = EncodeOptions { flatten_arrays: true, widen_numbers: true };
    let mut r = Record::new();
    r.push_array("img", DType::F32, &[2, 2], &[0; 16]).unwrap();
    r.push_array("px", DType::U8, &[3], &[1, 2, 255]).unwrap();
    r.push_array("h", DType::F16, &[1], &0x3c00u16.to_le_bytes()).unwrap();
    r.push_array("w", DType::U32, &[1], &u32::MAX.to_le_bytes()).unwrap();
    r.push_array("s", DType::I16, &[1], &(-2i16).to_le_bytes()).unwrap();
    r.push_bool("flag", true);
    let back = reel_ofrecord::decode_record(&encode_record(r.view(), options).unwrap()).unwrap();
    assert_eq!(back.get_f32s("img").unwrap(), [0.0; 4]);
    assert_eq!(back.get_i32s("px").unwrap(), [1, 2, 255]);
    assert_eq!(back.get_f32s("h").unwrap(), [1.0]);
    assert_eq!(back.get_i64s("w").unwrap(), [i64::from(u32::MAX)]);
    assert_eq!(back.get_i32s("s").unwrap(), [-2]);
    assert_eq!(back.get_i32s("flag").unwrap(), [1]);
}

#[test]
fn serialized_and_proto_records_are_written_as_given() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("ds");
    let mut w = OfrecordWriter::create(&path).unwrap();
    let payload = encode_record(sample(3).view(), Default::default()).unwrap();
    w.write_serialized(&payload).unwrap();
    let message = reel_ofrecord::proto::to_proto(sample(4).view(), Default::default()).unwrap();
    w.write_proto(&message).unwrap();
    let e = w.write_serialized(&[0x0a, 0x05]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    RecordSink::append_ref(&mut w, sample(5).view()).unwrap();
    RecordSink::finish(&mut w).unwrap();
    let r = OfrecordReader::open(&path).unwrap();
    assert_eq!(r.len(), 3);
    assert_eq!(r.read_serialized(0).unwrap(), payload);
    for i in 0..3 {
        assert!(r.read(i).unwrap() == sample(i + 3));
    }
}

#[test]
fn map_entries_are_written_in_upb_order() {
    use std::cmp::Ordering::*;
    assert_eq!(entry_order(b"a", b"b"), Less);
    assert_eq!(entry_order(b"ab", b"a"), Less, "a longer key before its prefix");
    assert_eq!(entry_order(b"after", b""), Less);
    assert_eq!(entry_order(b"tensor/f32", b"tensor/shape"), Less);
    let mut r = Record::new();
    r.push_int("a", 1).push_int("", 2).push_int("ab", 3).push_int("b", 4);
    let bytes = encode_record(r.view(), Default::default()).unwrap();
    let keys: Vec<&[u8]> = [&b"ab"[..], b"a", b"b", b""].to_vec();
    let mut at = 0;
    for k in keys {
        // entry tag, entry length, key tag, key length, key
        assert_eq!(bytes[at], 0x0a);
        let entry_len = bytes[at + 1] as usize;
        assert_eq!(&bytes[at + 4..at + 4 + k.len()], k);
        at += 2 + entry_len;
    }
    assert_eq!(at, bytes.len());
}

#[test]
fn closed_parts_are_sealed_and_may_be_moved_away_before_finish() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("ds");
    let mut w = OfrecordWriter::create_with(
        &path,
        &OfrecordWriterOptions::default().max_records_per_part(2),
    )
    .unwrap();
    let moved = tmp.path().join("moved");
    std::fs::create_dir(&moved).unwrap();
    let mut sealed_names = Vec::new();
    for i in 0..7 {
        w.write_record(sample(i).view()).unwrap();
        for file in RecordSink::take_sealed(&mut w) {
            // Complete: exactly the frames of its two records.
            let bytes = std::fs::read(&file.path).unwrap();
            let k = sealed_names.len() as u64;
            let want: Vec<u8> = (2 * k..2 * k + 2)
                .flat_map(|j| frame(&encode_record(sample(j).view(), Default::default()).unwrap()))
                .collect();
            assert_eq!(bytes, want, "{}", file.name);
            std::fs::rename(&file.path, moved.join(&file.name)).unwrap();
            sealed_names.push(file.name);
        }
    }
    // A part is sealed when the next one starts: the fourth (record 6) is still open.
    assert_eq!(sealed_names, ["part-00000", "part-00001", "part-00002"]);
    w.start_new_part().unwrap();
    let fourth = RecordSink::take_sealed(&mut w);
    assert_eq!(fourth.len(), 1);
    assert_eq!(fourth[0].name, "part-00003");
    std::fs::rename(&fourth[0].path, moved.join("part-00003")).unwrap();
    sealed_names.push("part-00003".to_string());
    w.write_record(sample(7).view()).unwrap();
    w.finish().unwrap();
    assert!(RecordSink::take_sealed(&mut w).is_empty(), "finish publishes what it closes");
    // The published directory lacks what was moved away; put together, it is all there.
    assert_eq!(names_in(&path), ["part-00004"]);
    for name in &sealed_names {
        std::fs::rename(moved.join(name), path.join(name)).unwrap();
    }
    let r = OfrecordReader::open(&path).unwrap();
    assert_eq!(r.len(), 8);
    for i in 0..8 {
        assert_eq!(r.read(i).unwrap(), sample(i));
    }
}
