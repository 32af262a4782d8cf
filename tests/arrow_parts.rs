//! Directories of Parquet and Arrow IPC parts (what `reel convert --shard k/n` writes, and
//! what Spark, Dask and Hugging Face publish) open as one dataset: the parts' records one
//! after another, in the order of the files' names.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

use reel::{ConvertOptions, CreateOptions, ErrorKind, Format, RecordSource, RecordSourceExt};
use reel_core::testing::conformance;

/// A generated FFRecord dataset of `n` records.
fn source(dir: &Path, n: u64) -> std::path::PathBuf {
    let path = dir.join("src.ffr");
    reel::synth::generate(&path, Format::Ffrecord, n, 300, &CreateOptions::default(), &mut |_| {})
        .unwrap();
    path
}

/// `src` converted to `to` in `count` shards into `dir`.
fn shards(src: &Path, dir: &Path, to: Format, count: u64) {
    for k in 0..count {
        reel::convert(src, dir, &ConvertOptions::new(to).shard(k, count)).unwrap();
    }
}

fn bytes_of(source: &dyn RecordSource, i: u64) -> Vec<u8> {
    source.read(i).unwrap().view().bytes("data").unwrap().to_vec()
}

#[test]
fn shards_of_a_conversion_open_as_the_dataset_they_came_from() {
    let tmp = tempfile::tempdir().unwrap();
    let src = source(tmp.path(), 1000);
    let original = reel::open(&src).unwrap();
    for (to, count) in [(Format::Parquet, 3), (Format::ArrowIpc, 4), (Format::Parquet, 1)] {
        let dir = tmp.path().join(format!("{}-{count}", to.name()));
        shards(&src, &dir, to, count);
        let parts = reel::open(&dir).unwrap();
        assert_eq!(parts.info().format, to.name());
        assert_eq!(parts.info().paths.len() as u64, count, "{dir:?}");
        assert_eq!(parts.len(), 1000);
        for i in 0..1000 {
            assert_eq!(bytes_of(&*parts, i), bytes_of(&*original, i), "{to:?} record {i}");
        }
        // Batches within and across parts, in any order, with repeats; threads; borrowed.
        conformance::check_source(&*parts);
        let across = [999, 0, 500, 250, 999, 1, 749, 750];
        let batch = parts.read_batch(&across).unwrap();
        for (k, &i) in across.iter().enumerate() {
            let record = batch.get(k).unwrap();
            assert_eq!(record.index(), i);
            assert_eq!(record.bytes("data").unwrap(), bytes_of(&*original, i));
        }
        // Converted back as one dataset.
        let back = tmp.path().join(format!("back-{}-{count}.ffr", to.name()));
        reel::convert(&dir, &back, &ConvertOptions::new(Format::Ffrecord)).unwrap();
        let back = reel::open(&back).unwrap();
        assert_eq!(back.len(), 1000);
        assert_eq!(bytes_of(&*back, 637), bytes_of(&*original, 637));
    }
}

#[test]
fn the_parts_facts_count_the_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let src = source(tmp.path(), 90);
    let dir = tmp.path().join("pq");
    shards(&src, &dir, Format::Parquet, 3);
    let info = reel::open(&dir).unwrap().info().clone();
    let fact = |name: &str| info.facts.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone());
    assert_eq!(fact("parts").as_deref(), Some("3"));
    assert_eq!(fact("row groups").as_deref(), Some("3"));
    let names: Vec<String> =
        info.paths.iter().map(|p| p.file_name().unwrap().to_string_lossy().into()).collect();
    assert_eq!(names, ["part-00000.parquet", "part-00001.parquet", "part-00002.parquet"]);
}

#[test]
fn hidden_and_underscore_files_are_not_parts() {
    let tmp = tempfile::tempdir().unwrap();
    let src = source(tmp.path(), 50);
    let dir = tmp.path().join("pq");
    shards(&src, &dir, Format::Parquet, 2);
    // What Spark and Dask leave beside the parts, and a staging file: not read.
    std::fs::write(dir.join("_SUCCESS"), b"").unwrap();
    std::fs::write(dir.join("_metadata"), b"not parquet").unwrap();
    std::fs::copy(dir.join("part-00000.parquet"), dir.join(".part-00002.parquet")).unwrap();
    std::fs::copy(dir.join("part-00000.parquet"), dir.join("_part-00003.parquet")).unwrap();
    let parts = reel::open(&dir).unwrap();
    assert_eq!((parts.len(), parts.info().paths.len()), (50, 2));
}

#[test]
fn parts_of_different_tables_are_refused_naming_both() {
    let tmp = tempfile::tempdir().unwrap();
    let src = source(tmp.path(), 40);
    let dir = tmp.path().join("pq");
    shards(&src, &dir, Format::Parquet, 2);
    // A part of another table: the golden Syrah case's fields, as Parquet.
    let other = reel_core::testing::golden::golden_root().join("syrah/normal");
    let mut options = ConvertOptions::new(Format::Parquet);
    options.overwrite = true;
    reel::convert(&other, dir.join("part-00001.parquet"), &options).unwrap();
    let e = reel::open(&dir).err().expect("parts of two tables");
    assert_eq!(e.kind(), ErrorKind::Schema, "{e}");
    let text = e.to_string();
    assert!(text.contains("part-00001.parquet") && text.contains("part-00000.parquet"), "{text}");
    assert!(text.contains("data"), "{text}");
}

#[test]
fn a_directory_without_parts_is_not_found() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("_SUCCESS"), b"").unwrap();
    let e = reel::open_as(tmp.path(), Format::Parquet, &reel::OpenOptions::default())
        .err()
        .expect("no parts");
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
    assert!(e.to_string().contains("*.parquet"), "{e}");
}
