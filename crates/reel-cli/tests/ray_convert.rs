//! `reel convert --ray`: the command hands the conversion to `python -m reel.ray_cli` with
//! the interpreter in `REEL_PYTHON` and passes its options on; options the Ray path does not
//! carry are refused instead of ignored. (The conversion itself, on a real Ray, is tested by
//! the Python package's `test_ray.py`, which also runs this command end to end.)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use assert_cmd::Command;

fn reel() -> Command {
    Command::cargo_bin("reel").unwrap()
}

/// A stand-in interpreter that writes its arguments, one per line, to `args.txt` beside it
/// and exits with `code`.
fn fake_python(dir: &Path, code: i32) -> PathBuf {
    let script = dir.join("fake-python");
    let log = dir.join("args.txt");
    std::fs::write(
        &script,
        format!("#!/bin/sh\nprintf '%s\\n' \"$@\" > '{}'\nexit {code}\n", log.display()),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    script
}

fn logged_args(dir: &Path) -> Vec<String> {
    std::fs::read_to_string(dir.join("args.txt")).unwrap().lines().map(String::from).collect()
}

#[test]
fn ray_runs_the_python_module_with_the_options() {
    let dir = tempfile::tempdir().unwrap();
    let python = fake_python(dir.path(), 0);
    let out = reel()
        .env("REEL_PYTHON", &python)
        .args(["convert", "in.ffr", "out", "--to", "granular", "--ray=ray://head:10001"])
        .args(["--ray-parts", "8", "--force", "--no-verify", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(
        logged_args(dir.path()),
        [
            "-m",
            "reel.ray_cli",
            "convert",
            "in.ffr",
            "out",
            "--to",
            "granular",
            "--address",
            "ray://head:10001",
            "--parts",
            "8",
            "--overwrite",
            "--no-verify",
            "--json"
        ]
    );
}

/// `reel convert --ray in.ffr out --to ffrecord EXTRA…` with `python` as the interpreter.
fn ray_convert(python: &Path, extra: &[&str]) -> std::process::Output {
    reel()
        .env("REEL_PYTHON", python)
        .args(["convert", "--ray", "in.ffr", "out", "--to", "ffrecord"])
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn ray_without_an_address_lets_ray_find_the_cluster() {
    let dir = tempfile::tempdir().unwrap();
    let python = fake_python(dir.path(), 0);
    let out = ray_convert(&python, &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(
        logged_args(dir.path()),
        ["-m", "reel.ray_cli", "convert", "in.ffr", "out", "--to", "ffrecord"]
    );
}

#[test]
fn a_failed_ray_conversion_fails_the_command() {
    let dir = tempfile::tempdir().unwrap();
    let python = fake_python(dir.path(), 2);
    let out = ray_convert(&python, &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("the Ray conversion failed"));
}

#[test]
fn a_missing_interpreter_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let out = ray_convert(&dir.path().join("no-such-python"), &[]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("no-such-python") && stderr.contains("REEL_PYTHON"), "{stderr}");
}

#[test]
fn options_the_ray_path_does_not_carry_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let python = fake_python(dir.path(), 0);
    for extra in
        [&["--shard", "1/2"][..], &["--fields", "a"], &["--pack", "json"], &["--with-index"]]
    {
        let out = ray_convert(&python, extra);
        assert!(!out.status.success(), "{extra:?} was accepted with --ray");
        assert!(String::from_utf8_lossy(&out.stderr).contains("cannot be used with"), "{extra:?}");
    }
    assert!(!dir.path().join("args.txt").exists(), "the interpreter never ran");
}
