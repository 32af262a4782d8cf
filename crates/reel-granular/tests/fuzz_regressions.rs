//! Inputs the fuzzer (fuzz/, targets `granular_*`) found to break the readers, reduced to
//! what each one exercises.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

use reel_core::{ErrorKind, Limits, MemFiles, RecordSourceExt};
use reel_granular::{
    BagReader, DatasetFiles, Generation, GranularOptions, GranularReader, GranularSpec,
};

fn u64s(v: &[u64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// An index claiming records that end near `u64::MAX` opens (the data is only checked
/// against the index when a record is read) and must not overflow the dataset's size,
/// which once panicked with "attempt to add with overflow".
#[test]
fn huge_index_end_offsets_do_not_overflow_the_size() {
    let spec = GranularSpec::new().with("a", "bytes").with("b", "bytes");
    let desc = DatasetFiles::in_memory(Path::new("ds"), Generation::Indexed, &spec).unwrap();
    let files: Vec<(std::path::PathBuf, Vec<u8>)> = desc
        .paths()
        .iter()
        .map(|p| {
            let name = p.file_name().unwrap().to_str().unwrap();
            let bytes = match name {
                "spec.json" => spec.to_json_bytes(),
                "a.idx" | "b.idx" => u64s(&[u64::MAX - 4]),
                _ => b"abc".to_vec(),
            };
            (p.clone(), bytes)
        })
        .collect();
    let reader =
        GranularReader::from_files(desc, MemFiles::new(files), &GranularOptions::default())
            .unwrap();
    assert_eq!(reader.size(), u64::MAX);
    assert_eq!(reader.read(0).unwrap_err().kind(), ErrorKind::Corrupt);

    let bag = MemFiles::new([("a.bag", &b"abc"[..]), ("a.idx", &u64s(&[u64::MAX])[..])]);
    let reader = BagReader::from_files(bag, true, &Limits::default()).unwrap();
    assert_eq!(reader.size(), u64::MAX);
    assert_eq!(reader.read(0).unwrap_err().kind(), ErrorKind::Corrupt);
}
