//! The `reel` command, driven as a user would: golden data, generated data, exit codes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use reel::testing::golden::{datasets, golden_root, read_json};
use serde_json::Value as Json;

fn reel() -> Command {
    Command::cargo_bin("reel").unwrap()
}

fn stdout(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    String::from_utf8(out.stdout).unwrap()
}

/// Every golden case of `format_key` as (name, dataset path, manifest).
fn golden(format_key: &str) -> Vec<(String, PathBuf, Json)> {
    datasets(format_key)
        .into_iter()
        .map(|name| {
            let dir = golden_root().join(format_key).join(&name);
            let m = read_json(&dir.join("expected.json"));
            (name, dir, m)
        })
        .collect()
}

fn ffrecord_path(dir: &Path, m: &Json) -> PathBuf {
    if let Some(f) = m.get("original") {
        return dir.join(f["file"]["path"].as_str().unwrap());
    }
    let first = Path::new(m["files"][0]["path"].as_str().unwrap());
    if m.get("parts").is_some() { dir.join(first.parent().unwrap()) } else { dir.join(first) }
}

#[test]
fn inspect_reports_format_and_count() {
    for (name, dir, m) in golden("ffrecord").into_iter().filter(|c| c.2.get("original").is_none()) {
        let out = stdout(reel().args(["inspect", "--json"]).arg(ffrecord_path(&dir, &m)));
        let j: Json = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{name}: {e}: {out}"));
        assert_eq!(j["format"], "ffrecord", "{name}");
        assert_eq!(j["records"], m["record_count"], "{name}");
    }
}

#[test]
fn cat_json_gives_every_record_in_order() {
    let (_, dir, m) = golden("ffrecord").into_iter().find(|c| c.0 == "normal").unwrap();
    let out = stdout(
        reel()
            .args(["cat", "--json", "--bytes", "hex", "--index", "0-4,7"])
            .arg(ffrecord_path(&dir, &m)),
    );
    let lines: Vec<Json> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(
        lines.iter().map(|l| l["index"].as_u64().unwrap()).collect::<Vec<_>>(),
        vec![0, 1, 2, 3, 4, 7]
    );
    for l in &lines {
        let i = l["index"].as_u64().unwrap() as usize;
        let want = &m["records"][i]["content"];
        let hex = l["fields"]["data"]["hex"].as_str().unwrap();
        assert_eq!(hex.len() as u64, want["len"].as_u64().unwrap() * 2);
        if let Some(h) = want.get("hex") {
            assert_eq!(hex, h.as_str().unwrap());
        }
    }
    // Out-of-range indices are a clear error (exit 2), not a panic.
    let out =
        reel().args(["cat", "--index", "999999"]).arg(ffrecord_path(&dir, &m)).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("out of range"));
}

/// Every golden corrupt case: verify exits 1 and names the damaged record (or, when the
/// header itself is damaged, the file and that it does not open).
#[test]
fn verify_names_the_damage_in_every_corrupt_case() {
    for (name, dir, m) in golden("ffrecord") {
        let path = ffrecord_path(&dir, &m);
        let out = reel().args(["verify", "--json"]).arg(&path).output().unwrap();
        let j: Json = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{name}: {e}"));
        let Some(mutation) = m.get("mutation") else {
            assert_eq!(out.status.code(), Some(0), "{name}: clean data must verify clean: {j}");
            continue;
        };
        if mutation["kind"] == "meta_checksum_set_to_zero" {
            // A legacy file: accepted with a warning, every record checks out.
            assert_eq!(out.status.code(), Some(0), "{name}: {j}");
            continue;
        }
        assert_eq!(out.status.code(), Some(1), "{name}: damage must exit 1: {j}");
        let problems = j["problems"].as_array().unwrap();
        assert!(!problems.is_empty(), "{name}");
        if let Some(r) = mutation.get("record_index") {
            assert_eq!(j["bad_records"], serde_json::json!([r]), "{name}: {j}");
        }
        if j["opened"] == true {
            assert!(
                problems.iter().all(|p| p["record"].is_u64() && p["offset"].is_u64()),
                "{name}: {j}"
            );
        }
    }
}

#[test]
fn verify_exit_code_two_when_it_cannot_run() {
    let out = reel().args(["verify", "/nonexistent/dataset"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/dataset"));
}

#[test]
fn salvage_keeps_exactly_the_good_records() {
    let (_, dir, m) =
        golden("ffrecord").into_iter().find(|c| c.0 == "corrupt/record_byte_flip").unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("salvaged.ffr");
    let status = reel()
        .args(["verify", "--quiet", "--salvage"])
        .arg(&out)
        .arg(ffrecord_path(&dir, &m))
        .output()
        .unwrap();
    assert_eq!(status.status.code(), Some(1));
    let bad = m["mutation"]["record_index"].as_u64().unwrap();
    let original = m["original"]["records"].as_array().unwrap();
    let lines = stdout(reel().args(["cat", "--json", "--bytes", "hex"]).arg(&out));
    let got: Vec<Json> = lines.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let kept: Vec<&Json> = original.iter().filter(|r| r["index"].as_u64() != Some(bad)).collect();
    assert_eq!(got.len(), kept.len());
    for (g, k) in got.iter().zip(kept) {
        assert_eq!(g["fields"]["data"]["hex"], k["content"]["hex"]);
    }
    assert_eq!(
        reel().args(["verify", "--quiet"]).arg(&out).output().unwrap().status.code(),
        Some(0)
    );
}

#[test]
fn pack_and_unpack_round_trip_byte_for_byte() {
    let (_, dir, _) = golden("ffrecord").into_iter().find(|c| c.0 == "pack_folder").unwrap();
    let packed = dir.join("packed.ffr");
    let tmp = tempfile::tempdir().unwrap();
    reel().arg("unpack").arg(&packed).arg(tmp.path().join("tree")).assert().success();
    reel()
        .arg("pack")
        .arg(tmp.path().join("tree"))
        .arg(tmp.path().join("again.ffr"))
        .assert()
        .success();
    assert!(
        std::fs::read(&packed).unwrap() == std::fs::read(tmp.path().join("again.ffr")).unwrap()
    );
    // Unpacking onto a non-empty directory is refused.
    let out = reel().arg("unpack").arg(&packed).arg(tmp.path().join("tree")).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn generate_then_verify_is_clean() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("g.ffr");
    reel().args(["generate", "--quiet", "--records", "300"]).arg(&out).assert().success();
    let v = stdout(reel().args(["verify", "--json", "--quiet"]).arg(&out));
    let j: Json = serde_json::from_str(&v).unwrap();
    assert_eq!((j["records"].as_u64(), j["good_records"].as_u64()), (Some(300), Some(300)));
}

/// The README's first command: every format written, converted, verified and read back.
#[test]
fn demo_runs_the_whole_tour() {
    let tmp = tempfile::tempdir().unwrap();
    let out = reel().args(["demo", "--records", "150", "--dir"]).arg(tmp.path()).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
    for format in ["ffrecord", "syrah", "ofrecord", "granular", "gulp"] {
        assert!(
            text.lines().any(|l| l.starts_with(format) && l.trim_end().ends_with("all")),
            "{format}: {text}"
        );
    }
    assert_eq!(text.matches("same records").count(), 6, "{text}");
    assert!(!text.contains("BAD") && !text.contains("DIFFERENT"));
}
