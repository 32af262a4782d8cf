//! The indexed reader: framing checks at open, warnings and strict mode, part directories,
//! partial and raw reads, and the core conformance kit on every backend.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::path::Path;

use reel_core::testing::conformance;
use reel_core::{
    ErrorKind, Limits, MemFiles, Record, RecordBatch, RecordSource, RecordSourceExt, WarningKind,
};
use reel_ofrecord::{
    OfrecordFeatures, OfrecordOptions, OfrecordReader, OfrecordWriter, OfrecordWriterOptions,
    PartNaming, encode_record,
};
use support::{frame, sample};

fn payload(i: u64) -> Vec<u8> {
    encode_record(sample(i).view(), Default::default()).unwrap()
}

fn part_of(range: std::ops::Range<u64>) -> Vec<u8> {
    range.flat_map(|i| frame(&payload(i))).collect()
}

fn open_mem(parts: Vec<Vec<u8>>) -> reel_core::Result<OfrecordReader<MemFiles>> {
    open_mem_with(parts, &OfrecordOptions::default())
}

fn open_mem_with(
    parts: Vec<Vec<u8>>,
    options: &OfrecordOptions,
) -> reel_core::Result<OfrecordReader<MemFiles>> {
    let files =
        MemFiles::new(parts.into_iter().enumerate().map(|(k, b)| (format!("part-{k:05}"), b)));
    OfrecordReader::from_files(files, options)
}

fn write_dataset(dir: &Path, n: u64, per_part: u64) {
    let mut w = OfrecordWriter::create_with(
        dir,
        &OfrecordWriterOptions::default().max_records_per_part(per_part),
    )
    .unwrap();
    for i in 0..n {
        w.write_record(sample(i).view()).unwrap();
    }
    w.finish().unwrap();
}

#[test]
fn records_are_indexed_across_parts() {
    let r = open_mem(vec![part_of(0..3), vec![], part_of(3..10)]).unwrap();
    assert_eq!(r.len(), 10);
    assert_eq!(r.part_count(), 3);
    assert_eq!((r.part_len(0), r.part_len(1), r.part_len(2)), (Some(3), Some(0), Some(7)));
    let f = r.frame(4).unwrap();
    assert_eq!((f.part, f.index_in_part), (2, 1));
    assert_eq!(f.length_field_offset, 8 + payload(3).len() as u64);
    assert_eq!(f.length, payload(4).len() as u64);
    for i in 0..10 {
        assert!(r.read(i).unwrap() == sample(i), "record {i}");
        assert_eq!(r.read_serialized(i).unwrap(), payload(i));
    }
    assert_eq!(r.read(10).unwrap_err().kind(), ErrorKind::OutOfRange);
    // The empty part is reported: OneFlow stops on it.
    let w = &r.info().warnings;
    assert_eq!(w.len(), 1, "{w:?}");
    assert_eq!(w[0].kind, WarningKind::ReferenceQuirk);
    assert!(w[0].path.as_ref().unwrap().ends_with("part-00001"));
}

#[test]
fn framing_damage_fails_at_open_with_context() {
    let good = part_of(0..4);
    let second = 8 + payload(0).len();
    let mut negative = good.clone();
    negative[second + 7] = 0x80;
    let mut huge = good.clone();
    huge[second..second + 8].copy_from_slice(&(1u64 << 40).to_le_bytes());
    let last = part_of(0..3).len();
    let cases = [
        ("negative length", negative, second, 3),
        ("a frame claiming 1 TiB", huge, second, 3),
        ("truncated payload", good[..good.len() - 1].to_vec(), last, 5),
        ("truncated length field", good[..second + 5].to_vec(), second, 3),
    ];
    for (what, bytes, offset, record) in cases {
        let e = open_mem(vec![part_of(0..2), bytes]).err().unwrap_or_else(|| panic!("{what}"));
        assert_eq!(e.kind(), ErrorKind::Corrupt, "{what}: {e}");
        assert_eq!(e.format(), Some("ofrecord"));
        assert!(e.path().unwrap().ends_with("part-00001"), "{what}: {e}");
        assert_eq!((e.offset(), e.record()), (Some(offset as u64), Some(record)), "{what}: {e}");
        assert!(e.to_string().contains("part-00001"));
    }
}

#[test]
fn limits_are_checked_before_reading() {
    let mut limits = Limits::strict();
    limits.max_record_bytes = 100;
    let big = sample(40); // an image of several hundred bytes
    let bytes = frame(&encode_record(big.view(), Default::default()).unwrap());
    let e = open_mem_with(vec![bytes], &OfrecordOptions::default().limits(limits)).err().unwrap();
    assert_eq!(e.kind(), ErrorKind::Limit, "{e}");
    let mut limits = Limits::strict();
    limits.max_records = 3;
    let e = open_mem_with(vec![part_of(0..4)], &OfrecordOptions::default().limits(limits))
        .err()
        .unwrap();
    assert_eq!(e.kind(), ErrorKind::Limit, "{e}");
}

#[test]
fn zero_length_frames_read_as_empty_records_or_fail_when_strict() {
    let mut part = part_of(0..2);
    part.extend(frame(&[]));
    part.extend(part_of(2..3));
    let r = open_mem(vec![part.clone()]).unwrap();
    assert_eq!(r.len(), 4);
    assert!(r.read(2).unwrap().is_empty());
    assert_eq!(r.info().warnings.len(), 1);
    assert!(r.info().warnings[0].message.contains("record 2"), "{:?}", r.info().warnings);
    let strict = OfrecordOptions::default().oneflow_strict(true);
    let e = open_mem_with(vec![part], &strict).err().unwrap();
    assert_eq!((e.kind(), e.record()), (ErrorKind::Corrupt, Some(2)), "{e}");
    let e = open_mem_with(vec![part_of(0..2), vec![]], &strict).err().unwrap();
    assert_eq!(e.kind(), ErrorKind::Corrupt, "{e}");
    assert!(open_mem_with(vec![part_of(0..2)], &strict).unwrap().info().warnings.is_empty());
}

#[test]
fn a_bad_record_fails_alone_on_every_backend() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ds");
    write_dataset(&path, 30, 8);
    // Break the protobuf of record 10 (in part 1): a field tag with wire type 7.
    let reader = OfrecordReader::open(&path).unwrap();
    let f = reader.frame(10).unwrap();
    let part = reader.part_paths()[f.part].clone();
    let mut bytes = std::fs::read(&part).unwrap();
    bytes[f.payload_offset() as usize] = 0x0f;
    std::fs::write(&part, &bytes).unwrap();

    let outcomes = conformance::check_backends(|b| {
        Ok(Box::new(OfrecordReader::open_with(&path, &OfrecordOptions::default().backend(b))?))
    })
    .unwrap();
    for (i, o) in outcomes.iter().enumerate() {
        match o {
            Ok(r) => assert!(*r == sample(i as u64), "record {i}"),
            Err(k) => assert_eq!((i, *k), (10, ErrorKind::Corrupt)),
        }
    }
    let e = OfrecordReader::open(&path).unwrap().read(10).unwrap_err();
    assert_eq!(e.record(), Some(10));
    assert_eq!(e.offset(), Some(f.payload_offset()));
    assert!(e.path().unwrap().ends_with("part-00001"), "{e}");
}

#[test]
fn a_large_frame_of_zeros_fails_at_open_without_being_read() {
    // A part file of one good record, a 64 MiB frame whose map entry starts well and then
    // turns into the zeros of a hole in a sparse file, and another good record.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("part-00000");
    let big: u64 = 64 << 20;
    let mut head = frame(&payload(0));
    let hole_at = head.len() as u64;
    head.extend_from_slice(&big.to_le_bytes());
    head.extend_from_slice(&[0x0a, 0x05]);
    let tail = frame(&payload(2));
    {
        use std::os::unix::fs::FileExt;
        let f = std::fs::File::create(&path).unwrap();
        f.write_all_at(&head, 0).unwrap();
        f.write_all_at(&tail, hole_at + 8 + big).unwrap();
    }
    let reader = OfrecordReader::open(&path).unwrap();
    assert_eq!(reader.len(), 3);
    assert!(reader.read(0).unwrap() == sample(0));
    assert!(reader.read(2).unwrap() == sample(2));
    let e = reader.read(1).unwrap_err();
    assert_eq!((e.kind(), e.record()), (ErrorKind::Corrupt, Some(1)), "{e}");
    assert!(e.message().contains("field number 0"), "{e}");
    assert!(e.message().contains("without reading the 67108864-byte frame"), "{e}");
    assert_eq!(e.offset(), Some(hole_at + 8));
    assert!(e.path().unwrap().ends_with("part-00000"), "{e}");
    let mut batch = RecordBatch::new();
    let e = reader.read_batch_into(&[0, 1, 2], &mut batch).unwrap_err();
    assert_eq!(e.record(), Some(1), "{e}");
}

#[test]
fn zeros_read_as_empty_frames_are_indexed_within_the_metadata_limit() {
    // 64 MiB of zeros are 8 Mi frames of length 0: an index of 64 MiB.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("part-00000");
    std::fs::File::create(&path).unwrap().set_len(64 << 20).unwrap();
    let mut limits = Limits::default();
    limits.max_metadata_bytes = 1 << 20;
    let e =
        OfrecordReader::open_with(&path, &OfrecordOptions::default().limits(limits)).err().unwrap();
    assert_eq!(e.kind(), ErrorKind::Limit, "{e}");
    assert!(e.message().contains("metadata size"), "{e}");
    assert!(e.path().unwrap().ends_with("part-00000"), "{e}");
    // Within the limit they are empty records, with a warning.
    let r = OfrecordReader::open(&path).unwrap();
    assert_eq!(r.len(), 8 << 20);
    assert!(r.read(12345).unwrap().is_empty());
}

#[test]
fn a_large_well_formed_frame_of_zeros_reads() {
    // Zeros are valid bytes values: a 20 MiB value of zeros is a record like any other.
    let value = vec![0u8; 20 << 20];
    let list = support::Wire::new().len_field(1, &value);
    let feature = support::Wire::new().len_field(1, &list.0);
    let entry = support::Wire::new().len_field(1, b"blob").len_field(2, &feature.0);
    let record = support::Wire::new().len_field(1, &entry.0);
    let r = open_mem(vec![frame(&record.0)]).unwrap();
    let got = r.read(0).unwrap();
    let list = got.get("blob").and_then(|v| v.as_list()).expect("a bytes list");
    assert_eq!(list.len(), 1);
    assert_eq!(list.get(0).and_then(|v| v.as_bytes()), Some(&value[..]));
}

#[test]
fn part_directories_follow_the_naming() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ds");
    let naming = PartNaming::oneflow("shard_", -1);
    let mut w = OfrecordWriter::create_with(
        &path,
        &OfrecordWriterOptions::default().naming(naming.clone()).max_records_per_part(2),
    )
    .unwrap();
    for i in 0..23 {
        w.write_record(sample(i).view()).unwrap();
    }
    w.finish().unwrap();
    assert!(path.join("shard_11").is_file() && path.join("shard_0").is_file());
    // The default naming (part-) finds nothing there.
    assert_eq!(OfrecordReader::open(&path).err().unwrap().kind(), ErrorKind::NotFound);
    let options = OfrecordOptions::default().naming(naming);
    let r = OfrecordReader::open_with(&path, &options).unwrap();
    assert_eq!((r.len(), r.part_count()), (23, 12));
    // Numeric, not name, order: shard_10 after shard_9.
    assert!(r.part_paths()[10].ends_with("shard_10"));
    for i in [0, 19, 22] {
        assert!(r.read(i).unwrap() == sample(i));
    }
    // OneFlow's data_part_num: exactly that many parts, however many exist.
    let r = OfrecordReader::open_with(&path, &options.clone().part_count(3)).unwrap();
    assert_eq!(r.len(), 6);
    let e = OfrecordReader::open_with(&path, &options.part_count(13)).err().unwrap();
    assert_eq!(e.kind(), ErrorKind::NotFound);
    assert!(e.path().unwrap().ends_with("shard_12"), "{e}");
    // A single part file opens on its own.
    let r = OfrecordReader::open(path.join("shard_3")).unwrap();
    assert!(r.read(1).unwrap() == sample(7));
}

#[test]
fn partial_and_serialized_reads() {
    let r = open_mem(vec![part_of(0..20)]).unwrap();
    let mut record = Record::new();
    r.read_features_into(4, &["f", "class/label", "absent"], &mut record).unwrap();
    let names: Vec<_> = record.iter().map(|(n, _)| n.to_string()).collect();
    assert_eq!(names, ["class/label", "f"]);
    assert_eq!(record.get_f32s("f").unwrap(), sample(4).get_f32s("f").unwrap());
    let mut batch = RecordBatch::new();
    r.read_batch_features_into(&[7, 3, 7], &["encoded"], &mut batch).unwrap();
    assert_eq!(batch.len(), 3);
    for (k, i) in [7u64, 3, 7].into_iter().enumerate() {
        let got = batch.get(k).unwrap();
        assert_eq!(got.index(), i);
        assert_eq!(got.get_bytes("encoded").unwrap(), sample(i).get_bytes("encoded").unwrap());
        assert_eq!(got.len(), 1);
    }
    r.read_serialized_batch_into(&[2, 19], &mut batch).unwrap();
    assert_eq!(batch.get(1).unwrap().bytes("data").unwrap(), payload(19));
    let p = r.read_proto(5).unwrap();
    assert!(reel_ofrecord::proto::from_proto(&p) == sample(5));
}

#[test]
fn generated_dataset_passes_conformance_on_every_backend() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ds");
    write_dataset(&path, 57, 10);
    let outcomes = conformance::check_backends(|b| {
        Ok(Box::new(OfrecordReader::open_with(&path, &OfrecordOptions::default().backend(b))?))
    })
    .unwrap();
    assert_eq!(outcomes.len(), 57);
    for (i, o) in outcomes.iter().enumerate() {
        assert!(o.as_ref().unwrap() == &sample(i as u64), "record {i}");
    }
}
