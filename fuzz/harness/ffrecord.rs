//! FFRecord targets: bytes straight into a reader through `MemFiles`, the packed-folder
//! pickle subset, and records written and read back.

use reel::MemFiles;
use reel::ffrecord::{FfrecordOptions, FfrecordReader, FfrecordWriter, pickle};

use super::{exercise, limits};

fn ffrecord_options(verify: bool) -> FfrecordOptions {
    FfrecordOptions::default().limits(limits()).check_data(verify)
}

/// FFRecord header, tables and records, with and without checksum verification.
pub fn ffrecord_file(data: &[u8]) {
    for verify in [true, false] {
        if let Ok(r) = FfrecordReader::from_files(
            MemFiles::single("fuzz.ffr", data),
            &ffrecord_options(verify),
        ) {
            exercise(&r);
            let _ = r.validate();
            if let Ok(p) = reel::ffrecord::PackedFolder::from_reader(r, &limits()) {
                let _ = p.list("", true, true, true);
                for name in p.list("", true, false, true).unwrap_or_default().iter().take(50) {
                    let _ = p.read_one(name);
                }
            }
        }
    }
}

/// The pickle subset of packed folders: parse, and what parses must write back to a
/// pickle that parses to the same tree.
pub fn ffrecord_pickle(data: &[u8]) {
    if let Ok(tree) = pickle::parse_folder_index(data, 64) {
        let again = pickle::write_folder_index(&tree);
        assert_eq!(
            pickle::parse_folder_index(&again, 64).expect("reel's own pickle must parse"),
            tree
        );
    }
}

/// Arbitrary records, written and read back: what goes in comes out.
pub fn ffrecord_roundtrip(data: &[u8]) {
    let records = split_records(data);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rt.ffr");
    let mut w = FfrecordWriter::create(&path, records.len() as u64).unwrap();
    for r in &records {
        w.write_one(r).unwrap();
    }
    w.finish().unwrap();
    let r = FfrecordReader::open(&path).unwrap();
    r.validate().unwrap();
    let all: Vec<u64> = (0..records.len() as u64).collect();
    assert_eq!(r.read_many(&all).unwrap(), records);
}

/// Cuts fuzz input into records: each starts with a length byte.
pub fn split_records(mut data: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    while let Some((&len, rest)) = data.split_first() {
        let len = (len as usize).min(rest.len());
        out.push(rest[..len].to_vec());
        data = &rest[len..];
    }
    out
}
