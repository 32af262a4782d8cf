//! Hostile input against the `reel` command, each run under an address-space limit and a
//! timeout (see `support/bounded.rs`): special files where data should be, destinations that
//! must not be overwritten, and the error messages for both.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![cfg(unix)]

mod support {
    pub mod bounded;
}

use std::path::{Path, PathBuf};

use support::bounded::{Outcome, run_reel};

fn mkfifo(path: &Path) {
    let _ = std::fs::remove_file(path);
    let status = std::process::Command::new("mkfifo").arg(path).status().unwrap();
    assert!(status.success(), "mkfifo {}", path.display());
}

/// A small generated dataset of `format` at `dir/name`.
fn generate(dir: &Path, format: &str, name: &str) -> PathBuf {
    let out = run_reel(
        "generate",
        dir,
        ["generate", "--quiet", "--format", format, "--records", "12", name],
    );
    assert_eq!(out.code, 0, "generate {format}: {}", out.stderr);
    dir.join(name)
}

/// Asserts that the run failed (exit 2, or 1 for verify's "damage found") with a message
/// that names `path` and says `words`.
fn refused(what: &str, out: &Outcome, path: &str, words: &str) {
    assert!(out.code == 2 || out.code == 1, "{what}: exit {} ({})", out.code, out.stderr);
    let all = format!("{}{}", out.stdout, out.stderr);
    assert!(all.contains(path), "{what}: the message does not name {path}: {all}");
    assert!(all.contains(words), "{what}: the message does not say {words:?}: {all}");
}

#[test]
fn fifos_where_data_should_be_are_refused_without_hanging() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // (dataset to damage, file inside it to replace by a FIFO)
    let cases = [
        ("ffrecord", "ffr-dir", None),
        ("granular", "gr-idx", Some("label.idx")),
        ("granular", "gr-bag", Some("label.bag")),
        ("granular", "gr-spec", Some("spec.json")),
        ("gulp", "gulp-data", Some("data_0.gulp")),
        ("gulp", "gulp-meta", Some("meta_0.gmeta")),
        ("ofrecord", "of-part", Some("part-00000")),
    ];
    for (format, name, member) in cases {
        let ds = generate(dir, format, name);
        let target = match member {
            Some(m) => ds.join(m),
            None => ds.clone(),
        };
        if member.is_none() {
            std::fs::remove_file(&ds).unwrap();
        }
        mkfifo(&target);
        let shown = target.strip_prefix(dir).unwrap().to_str().unwrap().to_string();
        for cmd in ["inspect", "cat", "verify"] {
            let what = format!("{cmd} with {shown} a FIFO");
            let out = run_reel(&what, dir, [cmd, name]);
            refused(&what, &out, &shown, "named pipe");
        }
    }
    // Single files, with and without an extension (sniffed by content), and the packed
    // file of unpack.
    for name in ["data.ffr", "data.syr", "one.bag", "noext"] {
        mkfifo(&dir.join(name));
        for cmd in ["inspect", "cat", "verify"] {
            let what = format!("{cmd} {name} (a FIFO)");
            refused(&what, &run_reel(&what, dir, [cmd, name]), name, "named pipe");
        }
    }
    let out = run_reel("unpack a FIFO", dir, ["unpack", "data.ffr", "out"]);
    refused("unpack a FIFO", &out, "data.ffr", "named pipe");
    assert!(!dir.join("out").exists());
    let out = run_reel("convert a FIFO", dir, ["convert", "noext", "conv.ffr", "--to", "ffrecord"]);
    refused("convert a FIFO", &out, "noext", "named pipe");
    // Nor is a FIFO or a device written over, --force or not: a writer renamed its file
    // over them (over /dev/null, for the whole system, when run as root).
    let src = generate(dir, "ffrecord", "src-for-outputs.ffr");
    mkfifo(&dir.join("out-fifo"));
    std::os::unix::fs::symlink("/dev/null", dir.join("out-null")).unwrap();
    for (out_name, kind) in [("out-fifo", "named pipe"), ("out-null", "character device")] {
        for args in [
            vec!["convert", src.to_str().unwrap(), out_name, "--to", "ffrecord", "--force"],
            vec!["generate", "--records", "3", "--force", out_name],
        ] {
            let what = format!("{} over {out_name}", args[0]);
            refused(&what, &run_reel(&what, dir, args), out_name, kind);
        }
    }
    let fifo_kind = std::fs::symlink_metadata(dir.join("out-fifo")).unwrap().file_type();
    assert!(std::os::unix::fs::FileTypeExt::is_fifo(&fifo_kind));
    assert!(std::fs::symlink_metadata(dir.join("out-null")).unwrap().file_type().is_symlink());
}

#[test]
fn devices_sockets_and_link_loops_are_named() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    for dev in ["/dev/zero", "/dev/null", "/dev/urandom"] {
        for cmd in ["inspect", "verify", "cat"] {
            let what = format!("{cmd} {dev}");
            refused(&what, &run_reel(&what, dir, [cmd, dev]), dev, "character device");
        }
    }
    let _socket = std::os::unix::net::UnixListener::bind(dir.join("sock.ffr")).unwrap();
    refused(
        "inspect a socket",
        &run_reel("socket", dir, ["inspect", "sock.ffr"]),
        "sock.ffr",
        "socket",
    );

    std::os::unix::fs::symlink("loop-b", dir.join("loop-a")).unwrap();
    std::os::unix::fs::symlink("loop-a", dir.join("loop-b")).unwrap();
    for cmd in ["inspect", "verify", "cat"] {
        let what = format!("{cmd} a symlink loop");
        refused(&what, &run_reel(&what, dir, [cmd, "loop-a"]), "loop-a", "symbolic link loop");
    }
    std::os::unix::fs::symlink("nowhere", dir.join("dangling.ffr")).unwrap();
    let out = run_reel("dangling input", dir, ["inspect", "dangling.ffr"]);
    refused("dangling input", &out, "dangling.ffr", "does not exist");
}

#[test]
fn a_directory_in_place_of_spec_json_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let ds = generate(dir, "granular", "gr");
    std::fs::remove_file(ds.join("spec.json")).unwrap();
    std::fs::create_dir(ds.join("spec.json")).unwrap();
    for cmd in ["inspect", "verify"] {
        let what = format!("{cmd} with spec.json a directory");
        refused(&what, &run_reel(&what, dir, [cmd, "gr"]), "gr/spec.json", "is a directory");
    }
}

#[test]
fn destination_errors_name_the_users_path() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    generate(dir, "syrah", "src.syr");
    let long = "n".repeat(300);
    let out = run_reel("overlong name", dir, ["convert", "src.syr", &long, "--to", "granular"]);
    refused("overlong name", &out, &long, "300 bytes");
    assert!(!out.stderr.contains("reel-tmp"), "the staging name leaked: {}", out.stderr);

    std::os::unix::fs::symlink("nowhere", dir.join("dangling")).unwrap();
    for to in ["ffrecord", "granular"] {
        let what = format!("dangling link as {to} destination");
        let out = run_reel(&what, dir, ["convert", "src.syr", "dangling", "--to", to]);
        refused(&what, &out, "dangling", "symbolic link");
        assert!(!out.stderr.contains("Not a directory"), "{what}: {}", out.stderr);
    }
    let out =
        run_reel("missing parent", dir, ["convert", "src.syr", "no/such/out", "--to", "syrah"]);
    refused("missing parent", &out, "no/such/out", "its directory");
}

/// Size and modification time: enough to tell whether a file was replaced.
fn stamp(path: &Path) -> (Vec<u8>, std::time::SystemTime) {
    let meta = std::fs::metadata(path).unwrap();
    (std::fs::read(path).unwrap(), meta.modified().unwrap())
}

#[test]
fn convert_and_salvage_never_overwrite_without_force_and_never_the_source() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    generate(dir, "syrah", "src.syr");
    generate(dir, "ffrecord", "data.ffr");
    std::fs::write(dir.join("precious.ffr"), b"my own file").unwrap();
    let before = stamp(&dir.join("precious.ffr"));
    let src_before = stamp(&dir.join("src.syr"));

    // An existing destination: refused, exit 2, named, untouched.
    let out = run_reel(
        "convert onto a file",
        dir,
        ["convert", "data.ffr", "precious.ffr", "--to", "ffrecord"],
    );
    assert_eq!(out.code, 2, "{}", out.stderr);
    refused("convert onto a file", &out, "precious.ffr", "already exists");
    assert_eq!(stamp(&dir.join("precious.ffr")), before);
    let out =
        run_reel("salvage onto a file", dir, ["verify", "data.ffr", "--salvage", "precious.ffr"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    refused("salvage onto a file", &out, "precious.ffr", "already exists");
    assert_eq!(stamp(&dir.join("precious.ffr")), before);

    // The source itself, by any spelling or link: refused even with --force.
    std::os::unix::fs::symlink("src.syr", dir.join("link.syr")).unwrap();
    for dst in ["src.syr", "./src.syr", "link.syr"] {
        for force in [false, true] {
            let mut args = vec!["convert", "src.syr", dst, "--to", "ffrecord"];
            if force {
                args.push("--force");
            }
            let what = format!("convert src.syr onto {dst} (force {force})");
            let out = run_reel(&what, dir, &args);
            assert_eq!(out.code, 2, "{what}: {}", out.stderr);
            refused(&what, &out, dst, "input");
            let mut args = vec!["verify", "src.syr", "--salvage", dst];
            if force {
                args.push("--force");
            }
            let out = run_reel(&what, dir, &args);
            assert_eq!(out.code, 2, "{what} (salvage): {}", out.stderr);
        }
    }
    assert_eq!(stamp(&dir.join("src.syr")), src_before);

    // Inside a source directory, or a directory holding the source.
    let gr = generate(dir, "granular", "gr");
    let out = run_reel(
        "inside the source",
        dir,
        ["convert", "gr", "gr/out.syr", "--to", "syrah", "--force"],
    );
    refused("inside the source", &out, "gr/out.syr", "inside the input");
    assert!(!gr.join("out.syr").exists());
    let out = run_reel(
        "holding the source",
        dir,
        ["convert", "gr/spec.json", ".", "--to", "syrah", "--force"],
    );
    assert_eq!(out.code, 2, "{}", out.stderr);

    // With --force an existing destination is replaced by a complete dataset.
    let out = run_reel(
        "convert --force",
        dir,
        ["convert", "data.ffr", "precious.ffr", "--to", "ffrecord", "--force"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let out = run_reel("inspect", dir, ["inspect", "precious.ffr"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    // A non-empty directory that holds no dataset is never replaced, --force or not: a
    // mistyped destination (a project, a home directory) was deleted whole.
    std::fs::create_dir(dir.join("olddir")).unwrap();
    std::fs::write(dir.join("olddir/x"), b"x").unwrap();
    let out = run_reel("force over a dir", dir, ["convert", "src.syr", "olddir", "--to", "syrah"]);
    refused("dir without force", &out, "olddir", "already exists");
    let out = run_reel(
        "force over a dir",
        dir,
        ["convert", "src.syr", "olddir", "--to", "syrah", "--force"],
    );
    refused("force over a non-dataset dir", &out, "olddir", "holds something other than a dataset");
    assert_eq!(std::fs::read(dir.join("olddir/x")).unwrap(), b"x");
    // A dataset directory replaced by a file dataset, and the reverse.
    std::fs::remove_dir_all(dir.join("olddir")).unwrap();
    let out = run_reel("a dataset dir", dir, ["convert", "src.syr", "olddir", "--to", "granular"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let out = run_reel(
        "force over a dataset dir",
        dir,
        ["convert", "src.syr", "olddir", "--to", "syrah", "--force"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(dir.join("olddir").is_file());
    let out = run_reel(
        "force over a file",
        dir,
        ["convert", "src.syr", "olddir", "--to", "granular", "--force"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(dir.join("olddir/spec.json").is_file());
    // No staging leftovers.
    let leftovers: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("reel-tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn library_create_refuses_an_existing_path_unless_told() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("kept.ffr");
    std::fs::write(&path, b"kept").unwrap();
    let err = reel::create(&path, reel::Format::Ffrecord, &reel::CreateOptions::default())
        .err()
        .expect("an existing file was accepted");
    assert_eq!(err.kind(), reel::ErrorKind::InvalidInput);
    assert!(err.to_string().contains("kept.ffr"), "{err}");
    assert_eq!(std::fs::read(&path).unwrap(), b"kept");
    let err = reel::convert(
        &path,
        &path,
        &reel::ConvertOptions::new(reel::Format::Syrah).overwrite(true),
    )
    .expect_err("converting onto the source was accepted");
    assert!(err.message().contains("is the input"), "{err}");
    // A sink dropped unfinished leaves the old file as it was.
    let sink = reel::create(
        &path,
        reel::Format::Ffrecord,
        &reel::CreateOptions::default().overwrite(true),
    )
    .unwrap();
    drop(sink);
    assert_eq!(std::fs::read(&path).unwrap(), b"kept");
    let names: Vec<_> =
        std::fs::read_dir(tmp.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names.len(), 1, "{names:?}");
}

// ---------------------------------------------------------------------------------------
// Class 2: small or sparse inputs that claim gigabytes.

/// A file of `len` bytes holding `head` at its start and a hole (zeros, no disk) after it.
fn sparse(path: &Path, head: &[u8], len: u64) {
    let f = std::fs::File::create(path).unwrap();
    std::io::Write::write_all(&mut &f, head).unwrap();
    f.set_len(len).unwrap();
}

/// 1.5 GiB: more than the address-space limit the commands run under.
const SPARSE: u64 = 3 << 29;

/// A BSON document of one Syrah array `name` whose `items` items all point at the same
/// `size` bytes at `offset`.
fn syrah_bson(name: &str, items: usize, offset: i64, size: i64) -> Vec<u8> {
    fn binary(out: &mut Vec<u8>, key: &str, values: &[i64]) {
        out.push(0x05);
        out.extend_from_slice(key.as_bytes());
        out.push(0);
        out.extend_from_slice(&((values.len() * 8) as i32).to_le_bytes());
        out.push(0);
        for v in values {
            out.extend_from_slice(&v.to_le_bytes());
        }
    }
    let mut entry = Vec::new();
    binary(&mut entry, "offset", &vec![offset; items]);
    binary(&mut entry, "size", &vec![size; items]);
    entry.push(0x02);
    entry.extend_from_slice(b"dtype\0");
    entry.extend_from_slice(&6i32.to_le_bytes());
    entry.extend_from_slice(b"uint8\0");
    let mut sub = ((entry.len() + 5) as i32).to_le_bytes().to_vec();
    sub.extend_from_slice(&entry);
    sub.push(0);
    let mut body = vec![0x03];
    body.extend_from_slice(name.as_bytes());
    body.push(0);
    body.extend_from_slice(&sub);
    let mut doc = ((body.len() + 5) as i32).to_le_bytes().to_vec();
    doc.extend_from_slice(&body);
    doc.push(0);
    doc
}

fn syrah_header(meta_offset: u64, meta_len: u64) -> Vec<u8> {
    let mut h = b"GS\0\0\x02\0".to_vec();
    h.extend_from_slice(&meta_offset.to_le_bytes());
    h.extend_from_slice(&meta_len.to_le_bytes());
    h
}

/// Writes every hostile file of class 2 under `dir` and returns (name, path) pairs.
fn sparse_and_multiplying_cases(dir: &Path) -> Vec<(&'static str, PathBuf)> {
    let mut cases = Vec::new();
    let mut add = |name: &'static str, path: PathBuf| cases.push((name, path));

    // FFRecord: a legacy header (checksum 0) claiming 2^27 records over a sparse file, with
    // zero offsets, and with a plausible first offset (so the tables must be read).
    let n: u64 = 1 << 27;
    let mut head = vec![0, 0, 0, 0];
    head.extend_from_slice(&n.to_le_bytes());
    let len = 12 + 12 * n + 4096;
    sparse(&dir.join("sparse-zeros.ffr"), &head, len);
    add("ffrecord header over a sparse file", dir.join("sparse-zeros.ffr"));
    let path = dir.join("sparse-tables.ffr");
    sparse(&path, &head, len);
    {
        use std::os::unix::fs::FileExt;
        let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        f.write_all_at(&(12 + 12 * n).to_le_bytes(), 12 + 4 * n).unwrap();
    }
    add("ffrecord tables over a sparse file", path);

    // Syrah: a metadata block of 1.5 GiB of zeros; one whose BSON length is plausible; and
    // 512 items pointing at the same 4 MiB (2 GiB of records from a 4 MiB file).
    sparse(&dir.join("sparse-meta.syr"), &syrah_header(22, SPARSE - 22), SPARSE);
    add("syrah metadata over a sparse file", dir.join("sparse-meta.syr"));
    let mut head = syrah_header(22, SPARSE - 22);
    head.extend_from_slice(&((SPARSE - 22) as i32).to_le_bytes());
    sparse(&dir.join("sparse-bson.syr"), &head, SPARSE);
    add("syrah BSON length over a sparse file", dir.join("sparse-bson.syr"));
    let size = 4 << 20;
    let doc = syrah_bson("a", 512, 22, size);
    let mut file = syrah_header(22 + size as u64, doc.len() as u64);
    file.resize(22 + size as usize, 7);
    file.extend_from_slice(&doc);
    std::fs::write(dir.join("shared-items.syr"), &file).unwrap();
    add("syrah items sharing their bytes", dir.join("shared-items.syr"));
    // One item naming the same bytes in 4096 arrays: one record of 16 GiB.
    let mut doc_names = Vec::new();
    for k in 0..4096 {
        let one = syrah_bson(&format!("a{k}"), 1, 22, size);
        doc_names.extend_from_slice(&one[4..one.len() - 1]);
    }
    let mut doc = ((doc_names.len() + 5) as i32).to_le_bytes().to_vec();
    doc.extend_from_slice(&doc_names);
    doc.push(0);
    let mut file = syrah_header(22 + size as u64, doc.len() as u64);
    file.resize(22 + size as usize, 7);
    file.extend_from_slice(&doc);
    std::fs::write(dir.join("shared-arrays.syr"), &file).unwrap();
    add("syrah arrays sharing their bytes", dir.join("shared-arrays.syr"));

    // Granular: a sparse .idx; Gulp: a sparse .gmeta, and a video whose 4096 frames are the
    // same 1 MiB.
    let gr = generate(dir, "granular", "sparse-idx");
    sparse(&gr.join("label.idx"), &[], SPARSE);
    add("granular sparse .idx", gr);
    let gulp = generate(dir, "gulp", "sparse-gmeta");
    sparse(&gulp.join("meta_0.gmeta"), b"", SPARSE);
    add("gulp sparse .gmeta", gulp);
    let gulp = dir.join("shared-frames");
    std::fs::create_dir_all(&gulp).unwrap();
    std::fs::write(gulp.join("data_0.gulp"), vec![0xffu8; 1 << 20]).unwrap();
    let frames = vec!["[0,0,1048576]"; 4096].join(",");
    std::fs::write(
        gulp.join("meta_0.gmeta"),
        format!("{{\"v\": {{\"frame_info\": [{frames}], \"meta_data\": [{{}}]}}}}"),
    )
    .unwrap();
    add("gulp frames sharing their bytes", gulp);

    // OFRecord: a first frame claiming 1.5 GiB in a sparse part file.
    let mut head = (SPARSE - 8).to_le_bytes().to_vec();
    head.extend_from_slice(&[0x0a, 0x05]);
    let of = dir.join("sparse-of");
    std::fs::create_dir_all(&of).unwrap();
    sparse(&of.join("part-00000"), &head, SPARSE);
    add("ofrecord sparse frame", of);
    cases
}

#[test]
fn sparse_and_multiplying_inputs_never_abort() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    for (what, path) in sparse_and_multiplying_cases(dir) {
        let p = path.to_str().unwrap();
        let out = run_reel(what, dir, ["verify", "--quiet", p]);
        assert!(out.code == 0 || out.code == 1, "verify {what}: exit {} {}", out.code, out.stderr);
        let out = run_reel(what, dir, ["inspect", p]);
        assert!(out.code == 0 || out.code == 2, "inspect {what}: exit {}", out.code);
        let out = run_reel(what, dir, ["cat", "--index", "0-3", p]);
        assert!(out.code == 0 || out.code == 2, "cat {what}: exit {}", out.code);
        let out = run_reel(what, dir, ["cat", "--json", "--index", "0-1", p]);
        assert!(out.code == 0 || out.code == 2, "cat --json {what}: exit {}", out.code);
    }
    // The sparse OFRecord frame is found malformed at open through small reads, and never
    // read (so no limit is what stops it).
    let out = run_reel("ofrecord sparse frame", dir, ["verify", "sparse-of"]);
    refused("verify sparse-of", &out, "part-00000", "without reading the 1610612728-byte frame");
    let out = run_reel("ofrecord sparse frame", dir, ["cat", "--index", "0", "sparse-of"]);
    refused("cat sparse-of", &out, "part-00000", "field number 0");
}

/// Writes every hostile case of this file (special files and class 2) into the directory
/// named by `REEL_HOSTILE_DIR`, for `peak_memory.sh` to measure `reel verify` on each.
#[test]
#[ignore = "run by crates/reel-cli/tests/peak_memory.sh"]
fn write_hostile_cases() {
    let dir = PathBuf::from(std::env::var_os("REEL_HOSTILE_DIR").expect("set REEL_HOSTILE_DIR"));
    std::fs::create_dir_all(&dir).unwrap();
    let cases = sparse_and_multiplying_cases(&dir);
    for name in ["fifo.ffr", "fifo.syr", "fifo-noext"] {
        mkfifo(&dir.join(name));
    }
    let gr = generate(&dir, "granular", "fifo-spec");
    mkfifo(&gr.join("spec.json"));
    let gulp = generate(&dir, "gulp", "fifo-gmeta");
    mkfifo(&gulp.join("meta_0.gmeta"));
    std::os::unix::fs::symlink("loop-b", dir.join("loop-a")).unwrap();
    std::os::unix::fs::symlink("loop-a", dir.join("loop-b")).unwrap();
    for (what, path) in cases {
        println!("{}\t{what}", path.display());
    }
}

/// A packed folder whose index is `index` (a pickle) over `records` file records.
fn packed(path: &Path, records: &[Vec<u8>], index: &[u8]) {
    let mut w = reel::ffrecord::FfrecordWriter::create(path, records.len() as u64 + 1).unwrap();
    for r in records {
        w.write_one(r).unwrap();
    }
    let mut meta = reel::ffrecord::PACKED_MAGIC.to_vec();
    meta.extend_from_slice(index);
    w.write_one(&meta).unwrap();
    w.finish().unwrap();
}

#[test]
fn unpack_says_what_it_will_write_and_refuses_names_sharing_records() {
    use reel::ffrecord::{FolderDir, FolderEntry, pickle::write_folder_index};
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // 400 names for one 256 KiB record: 100 MiB from a 256 KiB file.
    let mut root = FolderDir::new();
    for k in 0..400 {
        root.insert(format!("copy{k}").as_str().into(), FolderEntry::File(0));
    }
    packed(&dir.join("shared.ffr"), &[vec![1u8; 256 << 10]], &write_folder_index(&root));
    let out = run_reel("unpack shared", dir, ["unpack", "--quiet", "shared.ffr", "out"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    refused("unpack shared", &out, "shared.ffr", "would write 104857600 bytes in 400 files");
    assert!(!dir.join("out").exists());
    let out = run_reel(
        "unpack shared, allowed",
        dir,
        ["unpack", "--quiet", "--max-bytes", "104857600", "shared.ffr", "out"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("unpacking 400 files (104857600 bytes)"), "{}", out.stdout);
    assert_eq!(std::fs::read(dir.join("out/copy399")).unwrap().len(), 256 << 10);

    // An index of 64 MiB of EMPTY_DICT opcodes: 8 bytes of parser memory each (512 MiB,
    // within the test's 1 GiB), and the last dict is an empty folder.
    let mut index = vec![0x80, 4];
    index.resize(64 << 20, b'}');
    index.push(b'.');
    packed(&dir.join("dicts.ffr"), &[], &index);
    let out = run_reel("unpack dicts", dir, ["unpack", "--quiet", "dicts.ffr", "out2"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("unpacking 0 files (0 bytes)"), "{}", out.stdout);
}

// ---------------------------------------------------------------------------------------
// The sparse variant of the truncation sweep: every size field of every format set to claim
// most of a sparse 1.5 GiB file, which the data files are then extended to.

/// Where the size fields of a generated dataset of `format` at `root` are: (file, byte
/// offset, width in bytes) for binary fields, or (file, byte offset of the number's text,
/// 0) for a number in JSON text.
fn size_fields(format: &str, root: &Path) -> Vec<(PathBuf, u64, usize)> {
    let read_u64 = |path: &Path, at: usize| {
        let b = std::fs::read(path).unwrap();
        u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
    };
    match format {
        "ffrecord" => {
            // checksum (4), count (8), a checksum per record (4 n), an offset per record (8 n)
            let n = read_u64(root, 4);
            vec![(root.into(), 4, 8), (root.into(), 12 + 4 * n, 8), (root.into(), 4 + 12 * n, 8)]
        }
        "syrah" => {
            // magic and version (6), metadata offset (8) and length (8); the BSON document
            // starts with its own length (4).
            let meta = read_u64(root, 6);
            vec![(root.into(), 6, 8), (root.into(), 14, 8), (root.into(), meta, 4)]
        }
        "ofrecord" => {
            // Each frame starts with its length (8): the first and the second.
            let part = root.join("part-00000");
            let second = 8 + read_u64(&part, 0);
            vec![(part.clone(), 0, 8), (part, second, 8)]
        }
        "granular" => {
            // Each key's .idx holds the end offset of every value in its .bag.
            let mut v = Vec::new();
            for key in ["caption", "image", "label", "meta", "vec"] {
                let idx = root.join(format!("{key}.idx"));
                let len = std::fs::metadata(&idx).unwrap().len();
                v.extend([(idx.clone(), 0, 8), (idx, len - 8, 8)]);
            }
            v
        }
        "gulp" => {
            // The first video's first frame: [offset, padding, length] in the JSON text.
            let meta = root.join("meta_0.gmeta");
            let text = std::fs::read_to_string(&meta).unwrap();
            let at = text.find("[[").unwrap() + 2;
            let mut v = Vec::new();
            let mut pos = at;
            for _ in 0..3 {
                v.push((meta.clone(), pos as u64, 0));
                let end = pos + text[pos..].find([',', ']']).unwrap();
                pos = end + text[end..].find(|c: char| c.is_ascii_digit()).unwrap_or(1);
            }
            v
        }
        _ => unreachable!(),
    }
}

/// Copies the dataset at `src` (a file or a flat directory) to `dst`.
fn copy_dataset(src: &Path, dst: &Path) {
    if src.is_file() {
        std::fs::copy(src, dst).unwrap();
        return;
    }
    std::fs::create_dir_all(dst).unwrap();
    for e in std::fs::read_dir(src).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), dst.join(e.file_name())).unwrap();
    }
}

/// Writes `value` into the size field at `at` of `path` (binary little-endian of `width`
/// bytes, or, for width 0, in place of the decimal number there).
fn set_field(path: &Path, at: u64, width: usize, value: u64) {
    let mut bytes = std::fs::read(path).unwrap();
    let at = at as usize;
    if width == 0 {
        let end = at + bytes[at..].iter().take_while(|b| b.is_ascii_digit()).count();
        bytes.splice(at..end, value.to_string().into_bytes());
    } else {
        bytes[at..at + width].copy_from_slice(&value.to_le_bytes()[..width]);
    }
    std::fs::write(path, bytes).unwrap();
}

/// Extends every file of the dataset that holds data (not JSON text) to `len` bytes with a
/// hole, so that what the size fields claim lies within the files and costs no disk.
fn extend_sparsely(root: &Path, len: u64) {
    let files: Vec<PathBuf> = if root.is_file() {
        vec![root.into()]
    } else {
        std::fs::read_dir(root).unwrap().map(|e| e.unwrap().path()).collect()
    };
    for f in files {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        if name.ends_with(".json") || name.ends_with(".gmeta") || name.ends_with(".idx") {
            continue;
        }
        std::fs::OpenOptions::new().write(true).open(&f).unwrap().set_len(len).unwrap();
    }
}

#[test]
fn size_fields_claiming_a_sparse_file_never_abort_or_hang() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let mut variants = 0;
    for format in ["ffrecord", "syrah", "ofrecord", "granular", "gulp"] {
        let original = generate(dir, format, &format!("{format}-original"));
        for (k, (file, at, width)) in size_fields(format, &original).into_iter().enumerate() {
            // Claims that reach into the hole: most of it (more than the address space the
            // commands get, so only a fallible allocation or a check survives it), and, for
            // the first field of each format, half of it (which fits, so it is read, and
            // growing a buffer past it must not double it; reading 768 MiB of zeros takes
            // seconds, hence only once per format).
            let values: &[u64] =
                if k == 0 { &[SPARSE - 64, SPARSE / 2 + 3] } else { &[SPARSE - 64] };
            for (v, &value) in values.iter().enumerate() {
                let name = format!("{format}-{k}-{v}");
                let variant = dir.join(&name);
                copy_dataset(&original, &variant);
                let relative = file.strip_prefix(&original).unwrap();
                let target = if relative.as_os_str().is_empty() {
                    variant.clone()
                } else {
                    variant.join(relative)
                };
                set_field(&target, at, width, value);
                extend_sparsely(&variant, SPARSE);
                let what =
                    format!("{format} size field {k} (byte {at} of {}) = {value}", file.display());
                let out = run_reel(&what, dir, ["verify", "--quiet", &name]);
                assert!(
                    matches!(out.code, 0..=2),
                    "verify {what}: exit {} {}",
                    out.code,
                    out.stderr
                );
                let out = run_reel(&what, dir, ["cat", "--index", "0-2", &name]);
                assert!(matches!(out.code, 0..=2), "cat {what}: exit {} {}", out.code, out.stderr);
                variants += 1;
                if variant.is_dir() {
                    std::fs::remove_dir_all(&variant).unwrap();
                } else {
                    std::fs::remove_file(&variant).unwrap();
                }
            }
        }
    }
    assert_eq!(variants, (3 + 3 + 2 + 10 + 3) + 5);
}

/// `generate` with more records than the disk can hold is refused at once, naming the room
/// it would need and the room there is, and leaves nothing behind (it wrote until the disk
/// was full).
#[test]
fn generate_refuses_a_dataset_larger_than_the_free_space() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    for format in ["ffrecord", "granular", "syrah", "gulp"] {
        let name = format!("huge-{format}");
        let args = ["generate", "--quiet", "--format", format, "--records", "1000000000000000"];
        let started = std::time::Instant::now();
        let out = run_reel("generate", dir, args.iter().copied().chain([name.as_str()]));
        assert_eq!(out.code, 2, "{format}: {}", out.stderr);
        let said = out.stderr.contains("free") && out.stderr.contains("fewer records (--records");
        assert!(said, "{}", out.stderr);
        assert!(started.elapsed() < std::time::Duration::from_secs(20), "{format}: not at once");
        let left: Vec<_> =
            std::fs::read_dir(dir).unwrap().flatten().map(|e| e.file_name()).collect();
        assert!(left.is_empty(), "{format} left {left:?}");
    }
}
