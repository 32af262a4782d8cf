//! Packed folders: pack, list, read, and refuse what the reference would mishandle.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::fs;

use reel_core::ErrorKind;
use reel_ffrecord::{FfrecordReader, PackedFolder, pack_folder};

fn tree(root: &std::path::Path) {
    fs::create_dir_all(root.join("sub/deep")).unwrap();
    fs::create_dir_all(root.join("emptydir")).unwrap();
    fs::write(root.join("Z.txt"), "Z").unwrap();
    fs::write(root.join("a.txt"), "BB").unwrap();
    fs::write(root.join("b.txt"), "A").unwrap();
    fs::write(root.join("sub/c.bin"), "C").unwrap();
    fs::write(root.join("sub/deep/e"), "").unwrap();
}

/// The spec's worked example: the same tree gives the same 233 bytes as the reference.
#[test]
fn spec_example_is_reproduced() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    tree(&src);
    let out = dir.path().join("packed.ffr");
    let summary = pack_folder(&src, &out).unwrap();
    assert_eq!(summary.records, 6);
    assert_eq!(fs::metadata(&out).unwrap().len(), 233);
    let meta = FfrecordReader::open(&out).unwrap().read_one(5).unwrap();
    assert_eq!(meta.len(), 144);

    let p = PackedFolder::open(&out).unwrap();
    assert_eq!(p.num_files(), 5);
    assert_eq!(
        p.list("", true, true, false).unwrap(),
        ["Z.txt", "a.txt", "b.txt", "emptydir", "sub"]
    );
    assert_eq!(
        p.list("", true, false, true).unwrap(),
        ["Z.txt", "a.txt", "b.txt", "sub/c.bin", "sub/deep/e"]
    );
    assert_eq!(p.list("sub", false, true, true).unwrap(), ["deep"]);
    assert_eq!(p.read_one("a.txt").unwrap(), b"BB");
    assert_eq!(p.read_one("./sub//deep/e").unwrap(), b"");
    assert_eq!(p.read(&["sub/c.bin", "Z.txt"]).unwrap(), vec![b"C".to_vec(), b"Z".to_vec()]);
    assert!(p.is_dir("") && p.is_dir("emptydir") && p.is_file("b.txt") && !p.is_file("sub"));
    assert!(!p.exists("/a.txt") && !p.exists("a.txt/x") && !p.exists("nope"));
    assert_eq!(p.read_one("nope").unwrap_err().kind(), ErrorKind::NotFound);
    assert_eq!(p.read_one("sub").unwrap_err().kind(), ErrorKind::InvalidInput);
    assert_eq!(p.list("a.txt", true, true, false).unwrap_err().kind(), ErrorKind::InvalidInput);
}

#[test]
fn plain_ffrecord_is_not_a_packed_folder() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("x.ffr");
    reel_ffrecord::dump([b"piouhjgbr".to_vec()], &p, 1).unwrap();
    assert_eq!(PackedFolder::open(&p).err().unwrap().kind(), ErrorKind::InvalidInput);
}

#[cfg(unix)]
#[test]
fn symlink_cycle_is_an_error_not_a_hang() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    fs::create_dir_all(src.join("a")).unwrap();
    std::os::unix::fs::symlink(&src, src.join("a/loop")).unwrap();
    let e = pack_folder(&src, dir.path().join("o.ffr")).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    assert!(!dir.path().join("o.ffr").exists());
}

#[test]
fn big_tree_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    for d in 0..30 {
        let sub = src.join(format!("dir{d:02}"));
        fs::create_dir_all(&sub).unwrap();
        for f in 0..70 {
            fs::write(sub.join(format!("file_with_a_long_name_{f:04}.bin")), format!("{d}/{f}"))
                .unwrap();
        }
    }
    let out = dir.path().join("p.ffr");
    pack_folder(&src, &out).unwrap();
    let p = PackedFolder::open(&out).unwrap();
    assert_eq!(p.num_files(), 2100);
    assert_eq!(p.read_one("dir29/file_with_a_long_name_0069.bin").unwrap(), b"29/69");
    assert_eq!(p.list("", true, true, true).unwrap().len(), 2130);
}
