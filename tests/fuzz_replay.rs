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
