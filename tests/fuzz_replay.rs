//! Replays every fuzz regression (`fuzz/regressions/<target>/`) and seed
//! (`fuzz/seeds/<target>/`) through the same harness the fuzz targets use, on stable
//! Rust, so CI guards every crash ever found without nightly or libFuzzer.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../fuzz/harness/mod.rs"]
mod harness;

use std::path::Path;

fn files(dir: &Path) -> Vec<std::path::PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut v: Vec<_> = entries.map(|e| e.unwrap().path()).filter(|p| p.is_file()).collect();
    v.sort();
    v
}

#[test]
fn every_regression_and_seed_replays() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
    for (name, run) in harness::TARGETS {
        let seeds = files(&root.join("seeds").join(name));
        assert!(!seeds.is_empty(), "fuzz target {name} has no seeds in fuzz/seeds/{name}/");
        let regressions = files(&root.join("regressions").join(name));
        for file in seeds.iter().chain(&regressions) {
            let data = std::fs::read(file).unwrap();
            let result = std::panic::catch_unwind(|| run(&data));
            assert!(result.is_ok(), "{name}: {} panics", file.display());
        }
    }
}

#[test]
fn every_target_is_built_by_cargo_fuzz() {
    let manifest = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/Cargo.toml"),
    )
    .unwrap();
    for (name, _) in harness::TARGETS {
        assert!(
            manifest.contains(&format!("name = \"{name}\"")),
            "fuzz/Cargo.toml lacks target {name}"
        );
        let target = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join(format!("../../fuzz/fuzz_targets/{name}.rs"));
        assert!(target.is_file(), "no fuzz/fuzz_targets/{name}.rs");
    }
}

fn seeds(target: &str) -> Vec<(String, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/seeds").join(target);
    files(&dir)
        .into_iter()
        .map(|p| {
            (p.file_name().unwrap().to_string_lossy().into_owned(), std::fs::read(&p).unwrap())
        })
        .collect()
}

fn read_all(what: &str, source: &dyn reel::RecordSource) {
    use reel::RecordSourceExt;
    assert!(!source.is_empty(), "{what}: no records");
    for i in 0..source.len() {
        if let Err(e) = source.read(i) {
            panic!("{what}: record {i} fails: {e}");
        }
    }
}

/// The seeds that stand for whole datasets must open and read completely: a seed that
/// stops at the first check (because the input encoding of its target changed) would
/// leave the fuzzer far from the code behind it.
#[test]
fn dataset_seeds_open_and_read() {
    for (name, _) in seeds("arrow_file") {
        let path =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/seeds/arrow_file").join(&name);
        for map in [true, false] {
            let options = reel::arrow::ReadOptions { map, ..Default::default() };
            let source = reel::arrow::ArrowFileSource::open(&path, &options)
                .unwrap_or_else(|e| panic!("arrow_file seed {name} does not open: {e}"));
            read_all(&name, &source);
        }
    }
    for (name, data) in seeds("granular_dataset") {
        let reader = harness::granular::dataset_reader(&data)
            .unwrap_or_else(|| panic!("granular_dataset seed {name} does not open"));
        read_all(&name, &reader);
    }
    for (name, data) in seeds("gulp_chunk") {
        let (reader, _) = harness::gulp::chunk_reader(&data)
            .unwrap_or_else(|| panic!("gulp_chunk seed {name} does not open"));
        read_all(&name, &reader);
    }
    for (name, data) in seeds("syrah_file") {
        let files = reel::MemFiles::single(name.as_str(), data);
        let reader = reel::syrah::SyrahReader::from_files(files, &Default::default()).unwrap();
        read_all(&name, &reader);
    }
    for (name, data) in seeds("ofrecord_frames").into_iter().filter(|(_, d)| !d.is_empty()) {
        let files = reel::MemFiles::single(name.as_str(), data);
        let reader =
            reel::ofrecord::OfrecordReader::from_files(files, &Default::default()).unwrap();
        read_all(&name, &reader);
    }
    for (name, data) in seeds("open_dir") {
        let dir = tempfile::tempdir().unwrap();
        harness::dir::build_dir(&data, dir.path());
        let source = reel::open(dir.path()).unwrap_or_else(|e| panic!("open_dir seed {name}: {e}"));
        read_all(&name, &*source);
    }
}
