//! Reader behaviour: conformance on every backend, damage detection, limits, large records.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{Seek, SeekFrom, Write};
use std::path::Path;

use reel_core::testing::{conformance, truncation};
use reel_core::{Backend, ErrorKind, Limits, MemFiles, RecordSource, WarningKind};
use reel_ffrecord::{FfrecordOptions, FfrecordReader, FfrecordWriter, dump, header};

fn sample(n: usize) -> Vec<Vec<u8>> {
    (0..n).map(|i| (0..(i * 37 % 300)).map(|j| (i * 7 + j) as u8).collect()).collect()
}

fn write(path: &Path, records: &[Vec<u8>]) {
    dump(records, path, 1).unwrap();
}

fn open(path: &Path, backend: Backend) -> reel_core::Result<Box<dyn RecordSource>> {
    Ok(Box::new(FfrecordReader::open_with(path, &FfrecordOptions::default().backend(backend))?))
}

#[test]
fn conformance_single_file_all_backends() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("x.ffr");
    let records = sample(50);
    write(&p, &records);
    let outcomes = conformance::check_backends(|b| open(&p, b)).unwrap();
    for (o, r) in outcomes.iter().zip(&records) {
        assert_eq!(o.as_ref().unwrap().bytes("data").unwrap(), &r[..]);
    }
}

#[test]
fn conformance_multi_file_with_empty_part_and_bad_record() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("parts");
    std::fs::create_dir(&d).unwrap();
    write(&d.join("PART_00000.ffr"), &sample(5));
    write(&d.join("PART_00001.ffr"), &[]);
    write(&d.join("PART_00002.ffr"), &sample(9));
    // Flip a byte inside record 3 of the last part: global record 8 fails its checksum.
    let p = d.join("PART_00002.ffr");
    let mut bytes = std::fs::read(&p).unwrap();
    let off = FfrecordReader::open(&p).unwrap().get_offsets(0).unwrap()[3] as usize;
    bytes[off] ^= 0xff;
    std::fs::write(&p, &bytes).unwrap();

    let outcomes = conformance::check_backends(|b| open(&d, b)).unwrap();
    assert_eq!(outcomes.len(), 14);
    for (i, o) in outcomes.iter().enumerate() {
        assert_eq!(o.is_err(), i == 8, "record {i}: {o:?}");
    }
    assert_eq!(outcomes[8], Err(ErrorKind::Checksum));
    let r = FfrecordReader::open(&d).unwrap();
    let e = r.read_one(8).unwrap_err();
    assert_eq!((e.record(), e.offset()), (Some(8), Some(off as u64)), "{e}");
    assert!(e.path().unwrap().ends_with("PART_00002.ffr"));
    // Without verification the damaged bytes come back.
    let r = FfrecordReader::open_with(&d, &FfrecordOptions::default().check_data(false)).unwrap();
    let damaged = r.read_one(8).unwrap();
    let mut expected = sample(9)[3].clone();
    expected[off - r.get_offsets(2).unwrap()[3] as usize] ^= 0xff;
    assert_eq!(damaged, expected);
}

#[test]
fn every_truncation_is_detected() {
    let records = sample(40);
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("x.ffr");
    write(&p, &records);
    let bytes = std::fs::read(&p).unwrap();
    let cuts = truncation::sweep(&bytes, &truncation::lengths(bytes.len(), &[]), |b| {
        Ok(Box::new(FfrecordReader::from_files(
            MemFiles::single("x.ffr", b),
            &FfrecordOptions::default(),
        )?))
    });
    // The last record is non-empty, so every cut loses data, and the checksums see it.
    assert!(!records.last().unwrap().is_empty());
    for (len, cut) in &cuts {
        assert!(cut.detected(), "cut at {len} went unnoticed: {cut:?}");
    }
}

#[test]
fn legacy_zero_meta_checksum_warns() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("x.ffr");
    write(&p, &sample(3));
    let mut f = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
    f.write_all(&[0, 0, 0, 0]).unwrap();
    drop(f);
    let r = FfrecordReader::open(&p).unwrap();
    assert_eq!(r.info().warnings.len(), 1);
    assert_eq!(r.info().warnings[0].kind, WarningKind::MetadataChecksumAbsent);
    assert_eq!(r.read_one(2).unwrap(), sample(3)[2]);
    r.validate().unwrap();
}

#[test]
fn hostile_headers_fail_fast_without_allocating() {
    let mut evil = vec![0u8; 64];
    for n in [1i64 << 62, i64::MAX, 5, -3] {
        evil[4..12].copy_from_slice(&n.to_le_bytes());
        let e = FfrecordReader::from_files(
            MemFiles::single("e.ffr", evil.clone()),
            &FfrecordOptions::default(),
        )
        .err()
        .unwrap();
        assert!(matches!(e.kind(), ErrorKind::Corrupt | ErrorKind::Limit), "{n}: {e}");
    }
    for len in 0..12 {
        let e = FfrecordReader::from_files(
            MemFiles::single("e.ffr", vec![0u8; len]),
            &FfrecordOptions::default(),
        )
        .err()
        .unwrap();
        assert_eq!(e.kind(), ErrorKind::Corrupt);
    }
}

/// A record larger than 4 GiB: offsets and lengths are 64-bit all the way through. The file
/// is sparse, so this costs no disk space; the record is planned but, under a 1 GiB record
/// limit, refused before anything is allocated.
#[test]
fn record_over_4_gib_is_planned_with_64_bit_lengths() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("big.ffr");
    let big: u64 = (4 << 30) + 123;
    let hlen = header::header_len(2).unwrap();
    let offsets = [hlen, hlen + 1];
    let checksums = [reel_core::checksum::crc32(b"x"), 0];
    let mut f = std::fs::File::create(&p).unwrap();
    f.write_all(&header::meta_crc(&checksums, &offsets).to_le_bytes()).unwrap();
    f.write_all(&2i64.to_le_bytes()).unwrap();
    checksums.iter().for_each(|c| f.write_all(&c.to_le_bytes()).unwrap());
    offsets.iter().for_each(|o| f.write_all(&o.to_le_bytes()).unwrap());
    f.write_all(b"x").unwrap();
    f.seek(SeekFrom::Start(hlen + 1 + big - 1)).unwrap();
    f.write_all(&[0]).unwrap();
    drop(f);

    let mut limits = Limits::default();
    limits.max_record_bytes = 1 << 30;
    let r = FfrecordReader::open_with(&p, &FfrecordOptions::default().limits(limits)).unwrap();
    assert_eq!(r.get_offsets(0).unwrap(), &[hlen, hlen + 1, hlen + 1 + big]);
    assert_eq!(r.read_one(0).unwrap(), b"x");
    let e = r.read_one(1).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Limit);
    assert!(e.to_string().contains(&big.to_string()), "{e}");
}

#[test]
fn counted_writer_with_many_records() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("x.ffr");
    let mut w = FfrecordWriter::create_counted(&p).unwrap();
    for i in 0..10_000u32 {
        w.write_one(&i.to_le_bytes()).unwrap();
    }
    let s = w.finish().unwrap();
    assert_eq!(s.records, 10_000);
    assert_eq!(s.bytes, std::fs::metadata(&p).unwrap().len());
    let r =
        FfrecordReader::open_with(&p, &FfrecordOptions::default().backend(Backend::Mmap)).unwrap();
    assert_eq!(r.read_one(9_999).unwrap(), 9_999u32.to_le_bytes());
}

/// Large batches are fetched and checked in cache-sized pieces: with 128 KiB records the
/// conformance kit's full and 64-record batches span many pieces; they must equal
/// one-by-one reads, and a damaged record deep in a batch must be the one named.
#[test]
fn large_batches_name_the_damaged_record() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("big.ffr");
    let records: Vec<Vec<u8>> =
        (0..100u32).map(|i| (0..128 * 1024).map(|j| (i * 31 + j) as u8).collect()).collect();
    write(&p, &records);
    let clean = conformance::check_backends(|b| open(&p, b)).unwrap();
    assert!(clean.iter().all(|o| o.is_ok()));

    let mut bytes = std::fs::read(&p).unwrap();
    let off = FfrecordReader::open(&p).unwrap().get_offsets(0).unwrap()[77] as usize;
    bytes[off + 5000] ^= 0x40;
    std::fs::write(&p, &bytes).unwrap();
    let damaged = conformance::check_backends(|b| open(&p, b)).unwrap();
    for (i, o) in damaged.iter().enumerate() {
        assert_eq!(o.is_err(), i == 77, "record {i}");
    }
    let r =
        FfrecordReader::open_with(&p, &FfrecordOptions::default().backend(Backend::Mmap)).unwrap();
    let all: Vec<u64> = (0..100).collect();
    let e = r.read_many(&all).unwrap_err();
    assert_eq!(
        (e.kind(), e.record(), e.offset()),
        (ErrorKind::Checksum, Some(77), Some(off as u64))
    );
}

#[test]
fn a_directory_with_parts_missing_from_its_numbering_warns() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("parts");
    std::fs::create_dir(&d).unwrap();
    write(&d.join("PART_00000.ffr"), &sample(3));
    write(&d.join("PART_00002.ffr"), &sample(4));
    // Read from the parts that are there, as the reference reads the directory.
    let r = FfrecordReader::open(&d).unwrap();
    assert_eq!(r.n(), 7);
    let warnings = &r.info().warnings;
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert_eq!(warnings[0].kind, WarningKind::MissingParts);
    assert_eq!(warnings[0].path.as_deref(), Some(d.as_path()));
    assert!(warnings[0].message.contains("(1)"), "{warnings:?}");
    // The whole numbering, a part opened alone, or names of the user's own: no warning.
    write(&d.join("PART_00001.ffr"), &sample(2));
    assert!(FfrecordReader::open(&d).unwrap().info().warnings.is_empty());
    assert!(FfrecordReader::open(d.join("PART_00002.ffr")).unwrap().info().warnings.is_empty());
    std::fs::remove_file(d.join("PART_00001.ffr")).unwrap();
    write(&d.join("extra.ffr"), &sample(1));
    assert!(FfrecordReader::open(&d).unwrap().info().warnings.is_empty());
}
