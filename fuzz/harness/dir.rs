//! Targets that build a small directory from the input: format sniffing and opening on
//! arbitrary directories, and the backends agreeing on the same bytes.

use std::path::Path;

use reel::testing::conformance::outcomes;
use reel::{OpenOptions, RecordSource};

use super::{exercise, limits};

/// File names the sniffers look for, so the fuzzer can reach every format's open path.
pub const NAMES: &[&str] = &[
    "data.ffr",
    "PART_00000.ffr",
    "PART_00001.ffr",
    "data.syr",
    "part-00000",
    "part-00001",
    "spec.json",
    "refs.bag",
    "a.bag",
    "a.idx",
    "data.bag",
    "data.idx",
    "b.bag",
    "b.idx",
    "data_0.gulp",
    "meta_0.gmeta",
    "data_1.gulp",
    "meta_1.gmeta",
    "000000/spec.json",
    "000000/a.bag",
    "000000/a.idx",
    "000001/spec.json",
    "000001/a.bag",
    "000001/a.idx",
];

/// Writes the files the input describes into `root`: repeated (name byte, u16 length,
/// content) entries.
pub fn build_dir(data: &[u8], root: &Path) {
    let mut rest = data;
    while rest.len() >= 3 {
        let name = NAMES[rest[0] as usize % NAMES.len()];
        let len = (u16::from_le_bytes([rest[1], rest[2]]) as usize).min(rest.len() - 3);
        let content = &rest[3..3 + len];
        rest = &rest[3 + len..];
        let path = root.join(name);
        if let Some(parent) = path.parent() {
            let _ = std::fs::create_dir_all(parent);
        }
        let _ = std::fs::write(path, content);
    }
}

fn options(backend: reel::Backend) -> OpenOptions {
    OpenOptions::default().backend(backend).limits(limits())
}

/// `reel::open` on an arbitrary directory, then every record.
pub fn open_dir(data: &[u8]) {
    let dir = tempfile::tempdir().unwrap();
    build_dir(data, dir.path());
    if let Ok(source) = reel::open_with(dir.path(), &options(reel::Backend::Pread)) {
        exercise(&*source);
    }
    for name in NAMES.iter().filter(|n| !n.contains('/')) {
        let p = dir.path().join(name);
        if p.exists()
            && let Ok(source) = reel::open_with(&p, &options(reel::Backend::Pread))
        {
            exercise(&*source);
        }
    }
}

/// The same directory through every backend: the same records and the same errors.
pub fn backends_agree(data: &[u8]) {
    let dir = tempfile::tempdir().unwrap();
    build_dir(data, dir.path());
    let results: Vec<_> = reel::all_backends()
        .into_iter()
        .map(|b| match reel::open_with(dir.path(), &options(b)) {
            Ok(s) => Ok(outcomes(&*s)),
            Err(e) => Err(e.kind()),
        })
        .collect();
    for r in &results[1..] {
        assert_eq!(r, &results[0], "backends disagree");
    }
}

#[allow(unused)]
fn _source_is_object_safe(_: &dyn RecordSource) {}
