//! Helpers shared by the golden conformance tests of every format.
#![allow(dead_code, unused_imports, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Write;
use std::path::{Path, PathBuf};

pub use reel_core::testing::golden::{
    Compare, check_bytes, check_value, check_value_with, datasets, golden_root, hex, read_json,
    sha256_hex, unhex,
};
use serde_json::Value as Json;

/// One golden case: its directory and manifest.
pub struct Case {
    pub name: String,
    pub dir: PathBuf,
    pub manifest: Json,
}

impl Case {
    /// Whether this is a damaged copy (`corrupt/…`, with a `mutation`).
    pub fn is_corrupt(&self) -> bool {
        self.manifest.get("mutation").is_some()
    }

    /// The reference reader's probes of a corrupt or quirk case.
    pub fn probes(&self) -> &serde_json::Map<String, Json> {
        self.manifest["reference_reader_behaviour"]
            .as_object()
            .unwrap_or_else(|| panic!("{}: no reference_reader_behaviour", self.name))
    }
}

/// Every case `index.json` lists for `format_key`, with its manifest, after checking that
/// the files the manifest lists exist with the stated size and hash (so a test never runs
/// on the wrong bytes).
pub fn cases(format_key: &str) -> Vec<Case> {
    let root = golden_root().join(format_key);
    let names = datasets(format_key);
    assert!(!names.is_empty(), "index.json lists no {format_key} datasets");
    names
        .into_iter()
        .map(|name| {
            let dir = root.join(&name);
            let manifest = read_json(&dir.join("expected.json"));
            let case = Case { name, dir, manifest };
            check_files(&case);
            case
        })
        .collect()
}

fn check_files(case: &Case) {
    let files = case
        .manifest
        .get("files")
        .or_else(|| case.manifest.get("original").and_then(|o| o.get("files")))
        .and_then(Json::as_array);
    for f in files.into_iter().flatten() {
        let rel = f["path"].as_str().unwrap();
        let path = case.dir.join(rel);
        let bytes = std::fs::read(&path)
            .unwrap_or_else(|e| panic!("{}: {}: {e}", case.name, path.display()));
        if let Some(size) = f["size"].as_u64()
            && !case.is_corrupt()
        {
            assert_eq!(bytes.len() as u64, size, "{}: size of {rel}", case.name);
        }
        if let Some(h) = f["sha256"].as_str()
            && !case.is_corrupt()
        {
            assert_eq!(sha256_hex(&bytes), h, "{}: sha256 of {rel}", case.name);
        }
    }
}

/// Prints the summary line (to the real stdout, so it shows without `--nocapture`).
pub fn summary(format: &str, datasets: usize, corrupt: usize) {
    let line = format!("golden {format}: {datasets} datasets, {corrupt} corrupt cases ok\n");
    let _ = std::io::stdout().write_all(line.as_bytes());
}

/// Copies a directory tree (for tests that need a writable copy of a golden dataset).
pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).unwrap();
        }
    }
}
