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

/// `reel inspect … | head` must not panic when `head` has gone: a reader that closes the pipe
/// has read enough, so the command ends quietly with 141, the code of a program that SIGPIPE
/// ended (so `set -o pipefail` still sees the cut). The pipe's read end is closed before the
/// command starts, so every write to stdout fails with EPIPE.
#[test]
fn commands_end_quietly_when_the_output_pipe_is_closed() {
    // A case with records, so that `cat` has something to write.
    let (name, dir, m) = golden("ffrecord")
        .into_iter()
        .find(|c| c.2.get("original").is_none() && c.2["record_count"].as_u64() > Some(0))
        .unwrap();
    let path = ffrecord_path(&dir, &m);
    let runs: [&[&str]; 5] =
        [&["inspect"], &["inspect", "--json"], &["verify"], &["cat"], &["cat", "--json"]];
    for args in runs {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_reel"))
            .args(args)
            .arg(&path)
            .stdout(writer)
            .stderr(std::process::Stdio::piped())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(141), "{name} {args:?}: {stderr}");
        assert!(stderr.is_empty(), "{name} {args:?}: {stderr}");
    }
}

#[test]
fn inspect_opens_a_directory_holding_one_bare_bag() {
    for generation in ["granular-0.24.2", "bags-0.5.1"] {
        let dir = golden_root().join("granular").join(generation).join("raw_bag");
        let m = read_json(&dir.join("expected.json"));
        let out = reel().args(["inspect", "--json"]).arg(&dir).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{generation}: {}", String::from_utf8_lossy(&out.stderr));
        let j: Json = serde_json::from_str(&text).unwrap();
        assert_eq!(j["format"], "granular", "{generation}");
        assert_eq!(j["records"], m["record_count"], "{generation}");
    }
    // Two bags and no spec.json: a damaged dataset, not one bag.
    let tmp = tempfile::tempdir().unwrap();
    for name in ["a.bag", "b.bag"] {
        std::fs::write(tmp.path().join(name), 0u64.to_le_bytes()).unwrap();
    }
    let out = reel().args(["inspect"]).arg(tmp.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot tell the format"));
}

/// `cat --fields` with a field the records do not have is an error naming it (it printed
/// bare "record N" lines and succeeded): up front where the format declares its fields
/// (Syrah), after the records where it does not (OFRecord's features vary per record).
#[test]
fn cat_refuses_fields_the_records_do_not_have() {
    let tmp = tempfile::tempdir().unwrap();
    for (format, name) in [("syrah", "d.syr"), ("ofrecord", "d-of")] {
        let path = tmp.path().join(name);
        reel()
            .args(["generate", "--quiet", "--format", format, "--records", "5"])
            .arg(&path)
            .assert()
            .success();
        let out = reel().args(["cat", "--index", "0", "--fields", "nope"]).arg(&path).output();
        let out = out.unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{format}: {err}");
        assert!(err.contains("nope"), "{format}: {err}");
        let field = if format == "syrah" { "label" } else { "score" };
        let out = reel().args(["cat", "--index", "0", "--fields", field]).arg(&path).output();
        let out = out.unwrap();
        assert!(out.status.success(), "{format}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(String::from_utf8_lossy(&out.stdout).contains(field), "{format}");
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

/// `cat` shows every good record before the first bad one, in order, then fails with the
/// bad record's error: the whole batch holding it used to be dropped, so a damaged record
/// hid up to 255 good ones before it.
#[test]
fn cat_shows_the_good_records_before_a_bad_one() {
    let (_, dir, m) =
        golden("ffrecord").into_iter().find(|c| c.0 == "corrupt/record_byte_flip").unwrap();
    let bad = m["mutation"]["record_index"].as_u64().unwrap();
    assert!(bad > 0, "the case needs good records before the bad one");
    let count = m["original"]["records"].as_array().unwrap().len() as u64;
    let path = ffrecord_path(&dir, &m);
    for index in [format!("0-{}", count - 1), format!("{bad},0")] {
        let out = reel().args(["cat", "--json", "--index", &index]).arg(&path).output().unwrap();
        let shown: Vec<u64> = String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str::<Json>(l).unwrap()["index"].as_u64().unwrap())
            .collect();
        let want: Vec<u64> = if index.starts_with('0') { (0..bad).collect() } else { vec![] };
        assert_eq!(shown, want, "--index {index}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "--index {index}: {err}");
        assert!(err.contains(&format!("record {bad}")), "--index {index}: {err}");
    }
    // An empty index list is an error, not a successful run printing nothing.
    let out = reel().args(["cat", "--index", ""]).arg(&path).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("names no records"));
    assert!(out.stdout.is_empty());
}

/// The backend name `inspect` prints, `io_uring+direct`, is accepted where a backend is
/// named (it was refused: only `io_uring-direct` was), and bench rows keep the listed name.
#[test]
fn the_printed_backend_name_is_accepted_back() {
    if !reel::backend_names().contains(&"io_uring-direct") {
        eprintln!("built without io_uring: skipped");
        return;
    }
    let (_, dir, m) = golden("ffrecord").into_iter().find(|c| c.0 == "normal").unwrap();
    let path = ffrecord_path(&dir, &m);
    for backend in ["io_uring+direct", "io_uring-direct"] {
        let out = reel().args(["inspect", "--backend", backend]).arg(&path).output().unwrap();
        assert!(out.status.success(), "{backend}: {}", String::from_utf8_lossy(&out.stderr));
    }
    let out = reel()
        .args(["bench", "--mode", "warm", "--secs", "0.1", "--no-fio", "--crc-size", "0"])
        .args(["--backends", "io_uring+direct", "--json"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let rows: Vec<Json> = serde_json::from_slice(&out.stdout).unwrap();
    // The row is named for what read: io_uring-direct, or the fallback with what was asked.
    assert!(rows.iter().all(|r| r["reader"].as_str().unwrap().contains("io_uring-direct")));
}

/// A legacy FFRecord file (metadata checksum 0) verifies clean with the warning `inspect`
/// gives, in the text and in JSON: verify printed none.
#[test]
fn verify_prints_the_sources_warnings() {
    let path = golden_root().join("ffrecord/corrupt/legacy_zero_meta_checksum/data.ffr");
    let inspect = stdout(reel().args(["inspect"]).arg(&path));
    let warning = inspect.lines().find(|l| l.starts_with("warning: ")).unwrap().to_string();
    let out = reel().args(["verify", "--quiet"]).arg(&path).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.lines().any(|l| l == warning), "{warning:?} not in\n{text}");
    let out = reel().args(["verify", "--json"]).arg(&path).output().unwrap();
    let j: Json = serde_json::from_slice(&out.stdout).unwrap();
    let message = warning.trim_start_matches("warning: ");
    assert_eq!(j["warnings"], serde_json::json!([message]), "{j}");
    // A clean file has none.
    let (_, dir, m) = golden("ffrecord").into_iter().find(|c| c.0 == "normal").unwrap();
    let out = reel().args(["verify", "--json"]).arg(ffrecord_path(&dir, &m)).output().unwrap();
    let j: Json = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["warnings"], serde_json::json!([]), "{j}");
}

/// A clean verify of a format without checksums says that nothing could be checksummed; of
/// FFRecord it does not.
#[test]
fn verify_says_when_the_format_has_no_checksums_to_check() {
    let dir = tempfile::tempdir().unwrap();
    for (format, stores) in [("ffrecord", true), ("syrah", false), ("ofrecord", false)] {
        let path = dir.path().join(format);
        stdout(
            reel().args(["generate", "--quiet", "--records", "20", "--format", format]).arg(&path),
        );
        let text = stdout(reel().args(["verify", "--quiet"]).arg(&path));
        assert!(text.contains("20 good, 0 bad"), "{format}: {text}");
        assert_eq!(!text.contains("stores no checksums"), stores, "{format}: {text}");
        let json = stdout(reel().args(["verify", "--json"]).arg(&path));
        let j: Json = serde_json::from_str(&json).unwrap();
        assert_eq!(j["checksums"], Json::Bool(stores), "{format}: {j}");
    }
}

/// `--format` reads a dataset whose files say too little to tell its format: an empty
/// GulpIO2 directory (no chunks) is zero videos, not an unknown format.
#[test]
fn format_reads_a_dataset_its_files_cannot_name() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("empty-gulp");
    let sink = reel::create(&path, reel::Format::Gulp, &reel::CreateOptions::default());
    sink.unwrap().finish().unwrap();
    let out = reel().args(["inspect"]).arg(&path).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot tell the format"));
    for command in ["inspect", "verify", "cat"] {
        let out = reel().args([command, "--format", "gulp"]).arg(&path).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{command}: {}", String::from_utf8_lossy(&out.stderr));
        if command != "cat" {
            assert!(text.contains("gulp") && text.contains('0'), "{command}: {text}");
        }
    }
    let copy = dir.path().join("copy.ffr");
    let mut convert = reel();
    convert.args(["convert", "--quiet", "--format", "gulp", "--to", "ffrecord"]);
    let out = convert.arg(&path).arg(&copy).output().unwrap();
    assert!(out.status.success(), "convert: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(reel::open(&copy).unwrap().len(), 0);
    let out = reel().args(["inspect", "--format", "tfrecord"]).arg(&path).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--format \"tfrecord\"") && err.contains("ffrecord"), "{err}");
}

/// A field name holding control characters (a terminal escape, a newline) is shown escaped
/// by `cat` and `inspect`, never sent to the terminal as it is.
#[test]
fn names_with_control_characters_are_printed_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("odd.syr");
    let name = "a\x1b[2Jb\nrecord 7";
    let mut sink =
        reel::create(&path, reel::Format::Syrah, &reel::CreateOptions::default()).unwrap();
    let mut r = reel::Record::new();
    r.push_array(name, reel::DType::U8, &[2], &[1, 2]).unwrap();
    sink.append_ref(r.view()).unwrap();
    sink.finish().unwrap();
    for command in ["cat", "inspect"] {
        let text = stdout(reel().arg(command).arg(&path));
        assert!(!text.contains('\x1b') && !text.contains("\nrecord 7"), "{command}: {text:?}");
        assert!(text.contains(r#""a\u{1b}[2Jb\nrecord 7""#), "{command}: {text:?}");
    }
    // Errors too: a path with a terminal escape and a newline in it.
    let odd = dir.path().join("x\x1b[2J\nreel: all good");
    let out = reel().arg("inspect").arg(&odd).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains('\x1b') && err.lines().count() == 1, "{err:?}");
    assert!(err.contains(r"x\u{1b}[2J\nreel: all good"), "{err:?}");
}

/// Where a golden case's dataset opens from: the case directory when it is recognised as a
/// dataset, its `parts/` subdirectory, or its data file.
fn golden_dataset(dir: &Path) -> PathBuf {
    if dir.join("parts").is_dir() {
        return dir.join("parts");
    }
    if reel::sniff(dir).is_ok() {
        return dir.to_path_buf();
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().is_some_and(|n| n != "expected.json"))
        .collect();
    files.sort();
    files.into_iter().find(|f| reel::sniff(f).is_ok()).unwrap_or_else(|| dir.to_path_buf())
}

/// Whether the reference reader failed at any of its probes of a case.
fn reference_failed(m: &Json) -> bool {
    let probes = m["reference_reader_behaviour"].to_string();
    probes.contains("\"outcome\":\"error\"") || probes.contains("\"outcome\":\"crash\"")
}

/// Every golden corrupt case of every format: verify always runs (exit 0 or 1, never 2);
/// when the damage is detectable — the reference itself failed somewhere — it exits 1 and
/// says where; when the manifest names the damaged record and the dataset opens, that
/// record is among those named. Damage the format cannot detect (a flipped byte inside a
/// JPEG scan or a Syrah array: no checksums) reads as the reference reads it.
#[test]
fn verify_names_the_damage_in_every_corrupt_case() {
    let index = read_json(&golden_root().join("index.json"));
    let mut cases = 0;
    for key in index["formats"].as_object().unwrap().keys() {
        for (name, dir, m) in golden(key).into_iter().filter(|c| c.2.get("mutation").is_some()) {
            cases += 1;
            let path = golden_dataset(&dir);
            let out = reel().args(["verify", "--json", "--quiet"]).arg(&path).output().unwrap();
            let what = format!("{key}/{name}");
            assert!(
                matches!(out.status.code(), Some(0 | 1)),
                "{what}: verify could not run: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let j: Json =
                serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{what}: {e}"));
            if reference_failed(&m) {
                assert_eq!(
                    out.status.code(),
                    Some(1),
                    "{what}: the reference failed but verify found nothing: {j}"
                );
            }
            let problems = j["problems"].as_array().unwrap();
            if out.status.code() == Some(1) {
                assert!(!problems.is_empty(), "{what}");
                assert!(
                    problems.iter().all(|p| p["path"].is_string()
                        && p["message"].as_str().is_some_and(|s| !s.is_empty())),
                    "{what}: {j}"
                );
            }
            let target = m["mutation"]["record_index"].as_u64();
            if let (Some(r), true, Some(1)) = (target, j["opened"] == true, out.status.code()) {
                assert!(
                    j["bad_records"].as_array().unwrap().iter().any(|b| b.as_u64() == Some(r)),
                    "{what}: record {r} not named: {j}"
                );
            }
        }
    }
    assert!(cases >= 30, "only {cases} corrupt cases found");
}

#[test]
fn verify_exit_code_two_when_it_cannot_run() {
    let out = reel().args(["verify", "/nonexistent/dataset"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/dataset"));
}

#[test]
fn verify_reports_a_missing_file_of_a_dataset_as_damage() {
    // A Granular bag, or a bags dataset's refs.bag, deleted: verification ran with exit
    // 2 ("could not run") and no report, and for bags named data.idx, a file that layout
    // never has.
    let tmp = tempfile::tempdir().unwrap();
    for (format, missing) in [("granular", "label.bag"), ("bags", "refs.bag")] {
        let dir = tmp.path().join(format);
        reel()
            .args(["generate", "--quiet", "--format", format, "--records", "20"])
            .arg(&dir)
            .assert()
            .success();
        std::fs::remove_file(dir.join(missing)).unwrap();
        let out = reel().args(["verify", "--json", "--quiet"]).arg(&dir).output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(1),
            "{format}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let report: Json = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(report["opened"], false, "{format}: {report}");
        let problem = &report["problems"][0];
        assert_eq!(problem["kind"], "not-found", "{format}: {report}");
        assert!(problem["path"].as_str().unwrap().ends_with(missing), "{format}: {report}");
    }
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

#[test]
fn salvage_keeps_the_frames_before_an_ofrecord_part_breaks() {
    // A part cut inside its last frame (a writer killed mid-frame) keeps the dataset from
    // opening: --salvage refused ("the dataset does not open") though every other frame
    // is whole.
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("g.ffr");
    reel().args(["generate", "--quiet", "--records", "200"]).arg(&src).assert().success();
    let convert = |out: &Path| {
        reel()
            .args(["convert", "--quiet", "--to", "ofrecord", "--part-size", "10K"])
            .arg(&src)
            .arg(out)
            .assert()
            .success();
    };
    let (parts, intact) = (tmp.path().join("parts"), tmp.path().join("intact"));
    convert(&parts);
    convert(&intact);
    let torn = parts.join("part-00002");
    let len = std::fs::metadata(&torn).unwrap().len();
    std::fs::OpenOptions::new().write(true).open(&torn).unwrap().set_len(len - 3).unwrap();
    let good = tmp.path().join("good");
    let out =
        reel().args(["verify", "--quiet", "--salvage"]).arg(&good).arg(&parts).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let records = |path: &Path| -> Vec<String> {
        use reel::RecordSourceExt;
        let source = reel::open_as(path, reel::Format::Ofrecord, &reel::OpenOptions::default());
        let source = source.unwrap();
        // The fields only (the index moves down past the torn record).
        let fields = |i| format!("{:?}", source.read(i).unwrap().view().iter().collect::<Vec<_>>());
        (0..source.len()).map(fields).collect()
    };
    // Every record but the torn one, in order, with its values.
    let (saved, all) = (records(&good), records(&intact));
    assert_eq!((saved.len(), all.len()), (199, 200));
    let cut = saved.iter().zip(&all).position(|(a, b)| a != b).unwrap_or(199);
    assert!(cut > 0, "the first part was lost");
    assert!(saved[cut..] == all[cut + 1..], "the records after the torn one differ");
}

#[test]
fn inspect_with_a_payload_shows_the_fields_it_decodes() {
    // A payload declares no fields, so `inspect --payload` printed none (`schema: null`).
    let tmp = tempfile::tempdir().unwrap();
    let packed = tmp.path().join("p.ffr");
    let syrah = golden_root().join("syrah/normal");
    reel()
        .args(["convert", "--quiet", "--to", "ffrecord", "--pack", "msgpack"])
        .arg(&syrah)
        .arg(&packed)
        .assert()
        .success();
    let text = stdout(reel().args(["inspect", "--payload", "msgpack"]).arg(&packed));
    assert!(text.contains("fields (of record 0, decoded from the payload"), "{text}");
    assert!(text.contains("  text: str"), "{text}");
    let j: Json = serde_json::from_str(&stdout(
        reel().args(["inspect", "--json", "--payload", "msgpack"]).arg(&packed),
    ))
    .unwrap();
    let fields = j["first_record_fields"].as_array().unwrap();
    assert!(fields.iter().any(|f| f["name"] == "text" && f["kind"] == "str"), "{j}");
    // Without a payload the one raw field is declared.
    let raw: Json =
        serde_json::from_str(&stdout(reel().args(["inspect", "--json"]).arg(&packed))).unwrap();
    assert!(raw["first_record_fields"].is_null() && raw["schema"].is_array(), "{raw}");
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

/// A gulp directory of five 3-frame videos `v0`…`v4`; `damage(video, frame, jpeg)` may
/// change a frame's JPEG bytes before they are stored. Returns the directory.
fn gulp_with(dir: &Path, damage: impl Fn(usize, usize, &mut Vec<u8>)) -> PathBuf {
    use reel::gulp::{Frame, GulpWriteOptions, GulpWriter, JsonValue, encode_jpeg};
    let path = dir.join("gulp");
    let mut w = GulpWriter::create(&path, &GulpWriteOptions::default()).unwrap();
    for v in 0..5 {
        let frames: Vec<Vec<u8>> = (0..3)
            .map(|f| {
                let pixels: Vec<u8> =
                    (0..48 * 32 * 3).map(|i| ((i * 7 + v * 31 + f * 13) % 251) as u8).collect();
                let mut jpeg = encode_jpeg(&pixels, 48, 32, 3, 90).unwrap();
                damage(v, f, &mut jpeg);
                jpeg
            })
            .collect();
        let frames: Vec<Frame<'_>> = frames.iter().map(|j| Frame::Jpeg(j)).collect();
        w.write_video(
            &format!("v{v}"),
            JsonValue::object([("n", JsonValue::from(v as i64))]),
            &frames,
        )
        .unwrap();
    }
    w.finish().unwrap();
    path
}

/// Cuts 8 bytes of scan data before the end-of-image marker: the scan stops short, which
/// the reference's decoder rejects ("premature end of data segment") and a forgiving
/// decoder fills with gray.
fn cut_scan_short(jpeg: &mut Vec<u8>) {
    let end = jpeg.len() - 2;
    jpeg.drain(end - 8..end);
}

#[test]
fn verify_names_every_damaged_gulp_frame_and_salvage_leaves_those_videos_out() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = gulp_with(tmp.path(), |v, f, jpeg| match (v, f) {
        (1, 2) => cut_scan_short(jpeg),
        (3, 0) => {
            // Stray bytes before the end-of-image marker, more than libjpeg-turbo's bit
            // buffer swallows (it takes in up to 7 of them and reports the rest).
            let end = jpeg.len() - 2;
            jpeg.splice(end..end, [0x41; 40]);
        }
        // Bytes after the end-of-image marker: the reference never reads them.
        (4, 1) => jpeg.extend_from_slice(b"trailer"),
        _ => {}
    });
    let out = reel().args(["verify", "--json"]).arg(&dir).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let j: Json = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["records"], 5);
    assert_eq!(j["bad_records"], serde_json::json!([1, 3]));
    assert_eq!(j["good_records"], 3);
    let messages: Vec<&str> =
        j["problems"].as_array().unwrap().iter().map(|p| p["message"].as_str().unwrap()).collect();
    assert_eq!(messages.len(), 2, "{messages:?}");
    assert!(messages[0].starts_with("video \"v1\", frame 2: "), "{}", messages[0]);
    assert!(messages[0].contains("premature end of data segment"), "{}", messages[0]);
    assert!(messages[1].starts_with("video \"v3\", frame 0: "), "{}", messages[1]);
    assert!(messages[1].contains(" extraneous bytes before marker 0xd9"), "{}", messages[1]);

    let salvaged = tmp.path().join("salvaged");
    let out = reel().args(["verify", "--quiet", "--salvage"]).arg(&salvaged).arg(&dir).output();
    assert_eq!(out.unwrap().status.code(), Some(1));
    let kept = reel::gulp::GulpReader::open(&salvaged).unwrap();
    assert_eq!(kept.ids().collect::<Vec<_>>(), ["v0", "v2", "v4"]);
    assert_eq!(
        reel().args(["verify", "--quiet"]).arg(&salvaged).output().unwrap().status.code(),
        Some(0)
    );
}

#[test]
fn lenient_jpeg_keeps_the_forgiving_decode() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = gulp_with(tmp.path(), |v, f, jpeg| {
        if (v, f) == (2, 1) {
            cut_scan_short(jpeg);
        }
    });
    let strict = reel().args(["verify", "--quiet"]).arg(&dir).output().unwrap();
    assert_eq!(strict.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&strict.stdout).contains("video \"v2\", frame 1"));
    let lenient = reel().args(["verify", "--quiet", "--lenient-jpeg"]).arg(&dir).output().unwrap();
    assert_eq!(lenient.status.code(), Some(0), "{}", String::from_utf8_lossy(&lenient.stdout));
}

/// `reel bench DATA` on an existing dataset: one row per backend asked for, each having
/// read records, at the dataset's mean record size.
#[test]
fn bench_measures_an_existing_dataset() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("g");
    let out = Command::cargo_bin("reel")
        .unwrap()
        .args(["generate", "--quiet", "--format", "granular", "--records", "600"])
        .args(["--max-record", "2048"])
        .arg(&data)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = Command::cargo_bin("reel")
        .unwrap()
        .arg("bench")
        .arg(&data)
        .args(["--mode", "warm", "--secs", "0.1", "--no-fio", "--backends", "pread,mmap"])
        .args(["--batch", "64", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    let readers: Vec<&str> = rows.iter().map(|r| r["reader"].as_str().unwrap()).collect();
    assert_eq!(readers, ["pread", "mmap"]);
    for row in &rows {
        assert_eq!(row["mode"], "warm");
        assert!(row["records_per_sec"].as_f64().unwrap() > 0.0, "{row}");
        let size = row["record_bytes"].as_u64().unwrap();
        assert!((16..=2048).contains(&size), "mean record size {size}");
    }

    // A path that holds no dataset is an error naming it, not a table.
    let out = Command::cargo_bin("reel")
        .unwrap()
        .arg("bench")
        .arg(dir.path().join("missing"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("missing"));
}
