//! Writer behaviour: bytes identical to the reference, failure modes, round trips.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use proptest::prelude::*;
use reel_core::testing::golden::unhex;
use reel_core::{ErrorKind, Record, RecordSourceExt};
use reel_ffrecord::{FfrecordReader, FfrecordWriter, dump};

fn write_known(path: &std::path::Path, records: &[Vec<u8>]) -> Vec<u8> {
    let mut w = FfrecordWriter::create(path, records.len() as u64).unwrap();
    for r in records {
        w.write_one(r).unwrap();
    }
    w.finish().unwrap();
    std::fs::read(path).unwrap()
}

fn write_counted(path: &std::path::Path, records: &[Vec<u8>]) -> Vec<u8> {
    let mut w = FfrecordWriter::create_counted(path).unwrap();
    for r in records {
        w.write_one(r).unwrap();
    }
    w.finish().unwrap();
    std::fs::read(path).unwrap()
}

#[test]
fn spec_worked_examples_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("x.ffr");
    let cases: [(&[&[u8]], &str); 3] = [
        (
            &[b"hello", b"AB"],
            "d2a49ef4020000000000000086a61036074c693024000000000000002900000000000000\
                             68656c6c6f4142",
        ),
        (&[], "69df22650000000000000000"),
        (
            &[b"", b"x", b"", b""],
            concat!(
                "15dde038",
                "0400000000000000",
                "00000000",
                "8316dc8c",
                "00000000",
                "00000000",
                "3c00000000000000",
                "3c00000000000000",
                "3d00000000000000",
                "3d00000000000000",
                "78"
            ),
        ),
    ];
    for (records, hex) in cases {
        let records: Vec<Vec<u8>> = records.iter().map(|r| r.to_vec()).collect();
        assert_eq!(write_known(&p, &records), unhex(hex));
        assert_eq!(write_counted(&p, &records), unhex(hex));
    }
}

#[test]
fn fewer_records_than_promised_is_an_error_and_leaves_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("x.ffr");
    let mut w = FfrecordWriter::create(&p, 3).unwrap();
    w.write_one(b"a").unwrap();
    let e = w.finish().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    assert!(e.to_string().contains("created for 3 records but 1 were written"), "{e}");
    assert!(!p.exists());
    // The writer stays usable: the missing records can still come.
    w.write_one(b"b").unwrap();
    w.write_one(b"c").unwrap();
    assert_eq!(w.write_one(b"d").unwrap_err().kind(), ErrorKind::InvalidInput);
    w.finish().unwrap();
    assert_eq!(
        FfrecordReader::open(&p).unwrap().read_many(&[0, 1, 2]).unwrap(),
        vec![b"a".to_vec(), b"b".to_vec(), b"c".to_vec()]
    );
    assert_eq!(w.finish().unwrap_err().kind(), ErrorKind::Closed);
}

#[test]
fn dropped_writer_leaves_nothing_that_opens() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("x.ffr");
    for counted in [false, true] {
        let mut w = if counted {
            FfrecordWriter::create_counted(&p)
        } else {
            FfrecordWriter::create(&p, 2)
        }
        .unwrap();
        w.write_one(b"abc").unwrap();
        drop(w);
        assert!(!p.exists());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "staging files left behind");
    }
}

#[test]
fn sink_rejects_records_that_are_not_one_bytes_field() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = FfrecordWriter::create_counted(dir.path().join("x.ffr")).unwrap();
    let r = Record::new().with_str("a", "x").with_int("b", 1);
    let e = w.append(r.view()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Schema);
    assert!(e.to_string().contains("a: str, b: int"), "{e}");
    assert_eq!(w.append(Record::from_bytes(b"ok").view()).unwrap(), 0);
}

#[test]
fn dump_splits_like_the_reference() {
    let dir = tempfile::tempdir().unwrap();
    let records: Vec<Vec<u8>> = (0..10u8).map(|i| vec![i; i as usize]).collect();
    let out = dir.path().join("parts");
    dump(&records, &out, 4).unwrap();
    let mut names: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["PART_00000.ffr", "PART_00001.ffr", "PART_00002.ffr", "PART_00003.ffr"]);
    let r = FfrecordReader::open(&out).unwrap();
    assert_eq!(r.fnames().len(), 4);
    assert_eq!(r.read_many(&(0..10).collect::<Vec<_>>()).unwrap(), records);
    // 10 records in 6 files -> parts of 2 -> only 5 files.
    let out6 = dir.path().join("parts6");
    dump(&records, &out6, 6).unwrap();
    assert_eq!(std::fs::read_dir(&out6).unwrap().count(), 5);
    assert_eq!(FfrecordReader::open(&out6).unwrap().read_one(9).unwrap(), records[9]);
    // No records in several parts: one part of none, so that the dataset opens, empty.
    let none = dir.path().join("none");
    dump(Vec::<Vec<u8>>::new(), &none, 4).unwrap();
    let names: Vec<_> = std::fs::read_dir(&none).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names, ["PART_00000.ffr"]);
    assert_eq!(FfrecordReader::open(&none).unwrap().n(), 0);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn round_trip(records in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..300), 0..40)) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.ffr");
        let known = write_known(&p, &records);
        let counted = write_counted(&p, &records);
        prop_assert_eq!(&known, &counted);
        let r = FfrecordReader::open(&p).unwrap();
        prop_assert_eq!(r.n(), records.len() as u64);
        r.validate().unwrap();
        for (i, rec) in records.iter().enumerate() {
            prop_assert_eq!(&r.read_one(i as u64).unwrap(), rec);
        }
        let all: Vec<u64> = (0..records.len() as u64).rev().collect();
        let batch = r.read_batch(&all).unwrap();
        for (k, rec) in batch.iter().enumerate() {
            prop_assert_eq!(rec.bytes("data").unwrap(), &records[records.len() - 1 - k][..]);
        }
    }
}
