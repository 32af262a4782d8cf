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
    // An existing non-empty directory replaced by a file dataset, and the reverse.
    std::fs::create_dir(dir.join("olddir")).unwrap();
    std::fs::write(dir.join("olddir/x"), b"x").unwrap();
    let out = run_reel("force over a dir", dir, ["convert", "src.syr", "olddir", "--to", "syrah"]);
    refused("dir without force", &out, "olddir", "already exists");
    let out = run_reel(
        "force over a dir",
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
