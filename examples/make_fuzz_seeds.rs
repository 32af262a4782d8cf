//! Writes the seed inputs of every fuzz target into `fuzz/seeds/<target>/`: small valid
//! datasets made by reel's own writers (never copies of the golden corpus), so fuzzing
//! starts from inputs that reach deep into each parser.
//!
//! Run from the workspace root: `cargo run --example make_fuzz_seeds`
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use reel::ffrecord::{FfrecordWriter, FolderDir, FolderEntry, pickle};

fn seeds_dir(target: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/seeds").join(target);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn ffrecord_bytes(records: &[&[u8]]) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.ffr");
    let mut w = FfrecordWriter::create(&p, records.len() as u64).unwrap();
    for r in records {
        w.write_one(r).unwrap();
    }
    w.finish().unwrap();
    std::fs::read(p).unwrap()
}

fn packed_bytes() -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    std::fs::create_dir_all(src.join("sub/e")).unwrap();
    std::fs::write(src.join("a.txt"), "A").unwrap();
    std::fs::write(src.join("sub/b"), "BB").unwrap();
    let out = dir.path().join("p.ffr");
    reel::ffrecord::pack_folder(&src, &out).unwrap();
    std::fs::read(out).unwrap()
}

/// A directory description for the dir targets: (name index, u16 length, content).
fn dir_entry(name_index: u8, content: &[u8]) -> Vec<u8> {
    let mut v = vec![name_index];
    v.extend_from_slice(&(content.len() as u16).to_le_bytes());
    v.extend_from_slice(content);
    v
}

fn main() {
    let small = ffrecord_bytes(&[b"hello", b"AB", b"", b"x"]);
    let packed = packed_bytes();
    let write = |target: &str, name: &str, bytes: &[u8]| {
        std::fs::write(seeds_dir(target).join(name), bytes).unwrap()
    };

    write("ffrecord_file", "small.ffr", &small);
    write("ffrecord_file", "empty.ffr", &ffrecord_bytes(&[]));
    write("ffrecord_file", "packed.ffr", &packed);

    let mut tree = FolderDir::new();
    tree.insert("a".into(), FolderEntry::File(0));
    let mut sub = FolderDir::new();
    sub.insert("b".into(), FolderEntry::File(1));
    sub.insert("empty".into(), FolderEntry::Dir(FolderDir::new()));
    tree.insert("sub".into(), FolderEntry::Dir(sub));
    write("ffrecord_pickle", "tree.pickle", &pickle::write_folder_index(&tree));
    write("ffrecord_pickle", "packed_meta.pickle", &packed[packed.len() - 120..]);

    write("ffrecord_roundtrip", "records.bin", b"\x05hello\x00\x02AB\x03xyz");

    let ffr_dir = [dir_entry(0, &small), dir_entry(1, &small)].concat();
    for target in ["open_dir", "backends_agree"] {
        write(target, "ffrecord_file.dir", &dir_entry(0, &small));
        write(target, "ffrecord_parts.dir", &ffr_dir);
    }
    println!("seeds written to fuzz/seeds/");
}
