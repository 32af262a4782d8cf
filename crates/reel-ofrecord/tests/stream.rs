//! The one-pass reader: same records as the indexed reader, framing errors end the stream,
//! a bad record does not, and a reader of unknown size never allocates for a bogus length.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use reel_core::{ErrorKind, Record};
use reel_ofrecord::{OfrecordOptions, OfrecordStream, encode_record};
use support::{frame, sample};

fn part(n: u64) -> Vec<u8> {
    (0..n)
        .flat_map(|i| frame(&encode_record(sample(i).view(), Default::default()).unwrap()))
        .collect()
}

#[test]
fn streams_parts_in_order() {
    let tmp = tempfile::tempdir().unwrap();
    let paths: Vec<_> = (0..3).map(|k| tmp.path().join(format!("part-{k}"))).collect();
    std::fs::write(&paths[0], part(4)).unwrap();
    std::fs::write(&paths[1], b"").unwrap();
    std::fs::write(&paths[2], part(6)).unwrap();
    let mut s = OfrecordStream::open(tmp.path(), &OfrecordOptions::default()).unwrap();
    let mut record = Record::new();
    let mut n = 0;
    while s.next_into(&mut record).unwrap() {
        let i = if n < 4 { n } else { n - 4 };
        assert!(record == sample(i), "record {n}");
        assert_eq!(record.index(), n);
        n += 1;
    }
    assert_eq!(n, 10);
    assert_eq!(s.position(), 10);
    assert!(!s.next_into(&mut record).unwrap(), "the stream stays at its end");
    // Strict mode stops at the empty part.
    let strict = OfrecordOptions::default().oneflow_strict(true);
    let results: Vec<_> = OfrecordStream::open(tmp.path(), &strict).unwrap().collect();
    assert_eq!(results.len(), 5);
    assert_eq!(results[4].as_ref().unwrap_err().kind(), ErrorKind::Corrupt);
}

#[test]
fn framing_errors_end_the_stream_and_bad_records_do_not() {
    let mut bytes = part(3);
    // Record 1's protobuf gets an invalid wire type.
    let first = 8 + encode_record(sample(0).view(), Default::default()).unwrap().len();
    bytes[first + 8] = 0x0f;
    bytes.extend_from_slice(&[1, 2, 3]); // a cut length field
    let results: Vec<_> = OfrecordStream::from_reader(
        std::io::Cursor::new(bytes.clone()),
        Some(bytes.len() as u64),
        "mem",
        &OfrecordOptions::default(),
    )
    .collect();
    assert_eq!(results.len(), 4);
    assert!(results[0].is_ok() && results[2].is_ok());
    let e = results[1].as_ref().unwrap_err();
    assert_eq!((e.kind(), e.record()), (ErrorKind::Corrupt, Some(1)));
    let e = results[3].as_ref().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Corrupt);
    assert!(e.message().contains("length field"), "{e}");
}

#[test]
fn bogus_lengths_from_unsized_readers_fail_without_allocating_them() {
    let mut bytes = part(1);
    bytes.extend_from_slice(&(1u64 << 40).to_le_bytes());
    bytes.extend_from_slice(&[7; 100]);
    // Unknown size: the payload is read piecewise, and the stream ends at the real end.
    let mut s = OfrecordStream::from_reader(
        std::io::Cursor::new(bytes),
        None,
        "pipe",
        &OfrecordOptions::default(),
    );
    let mut buf = Vec::new();
    assert!(s.next_serialized(&mut buf).unwrap().is_some());
    let e = s.next_serialized(&mut buf).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Corrupt, "{e}");
    assert!(buf.capacity() < 4 << 20, "allocated {} bytes", buf.capacity());
    assert!(s.next_serialized(&mut buf).unwrap().is_none());
    // Negative length.
    let mut bytes = part(1);
    bytes.extend_from_slice(&(-5i64).to_le_bytes());
    let results: Vec<_> = OfrecordStream::from_reader(
        std::io::Cursor::new(bytes),
        None,
        "pipe",
        &OfrecordOptions::default(),
    )
    .collect();
    assert_eq!(results.len(), 2);
    assert!(results[1].as_ref().unwrap_err().message().contains("negative"));
}
