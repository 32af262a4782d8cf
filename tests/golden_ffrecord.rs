//! Golden conformance for FFRecord: every case in `REEL_GOLDEN_DIR/ffrecord` decodes to its
//! manifest, the writer reproduces the reference's bytes, corrupt copies give the matching
//! error kinds, and no truncation of any golden file panics or goes unnoticed.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};

use common::{Case, cases, check_bytes, summary, unhex};
use reel::ffrecord::{
    FfrecordOptions, FfrecordReader, FfrecordWriter, FolderEntry, PackedFolder, dump, pack_folder,
};
use reel::testing::{conformance, truncation};
use reel::{Backend, ErrorKind, MemFiles, RecordSource, RecordSourceExt, ValueRef, WarningKind};
use serde_json::Value as Json;

fn options(backend: Backend, verify: bool) -> FfrecordOptions {
    FfrecordOptions::default().backend(backend).check_data(verify)
}

fn open_boxed(path: &Path, backend: Backend, verify: bool) -> reel::Result<Box<dyn RecordSource>> {
    Ok(Box::new(FfrecordReader::open_with(path, &options(backend, verify))?))
}

/// The path a case's dataset is opened from: its single file, or the directory of its parts.
fn dataset_path(case: &Case) -> PathBuf {
    let m = &case.manifest;
    if case.is_corrupt() {
        return case.dir.join(m["original"]["file"]["path"].as_str().unwrap());
    }
    let files = m["files"].as_array().unwrap();
    let first = Path::new(files[0]["path"].as_str().unwrap());
    if m.get("parts").is_some() {
        return case.dir.join(first.parent().unwrap());
    }
    assert_eq!(files.len(), 1, "{}: one file expected", case.name);
    case.dir.join(first)
}

fn data_files(path: &Path) -> Vec<PathBuf> {
    reel::ffrecord::dataset_files(path).unwrap()
}

fn record_bytes(r: &reel::Record) -> Vec<u8> {
    r.bytes("data").unwrap().to_vec()
}

fn check_dataset(case: &Case) {
    let m = &case.manifest;
    let path = dataset_path(case);
    let outcomes = conformance::check_backends(|b| open_boxed(&path, b, true))
        .unwrap_or_else(|k| panic!("{}: open failed ({k:?})", case.name));
    let reader = FfrecordReader::open(&path).unwrap();
    assert!(reader.info().warnings.is_empty(), "{}: unexpected warnings", case.name);
    reader.validate().unwrap();
    assert_eq!(
        outcomes.len() as u64,
        m["record_count"].as_u64().unwrap(),
        "{}: record count",
        case.name
    );

    let mut records = Vec::new();
    for (i, o) in outcomes.iter().enumerate() {
        let r = o.as_ref().unwrap_or_else(|k| panic!("{}: record {i} failed: {k:?}", case.name));
        records.push(record_bytes(r));
    }
    for e in m["records"].as_array().unwrap() {
        let i = e["index"].as_u64().unwrap() as usize;
        check_bytes(&records[i], &e["content"])
            .unwrap_or_else(|d| panic!("{}: record {i}: {d}", case.name));
        if let Some(len) = e.get("len") {
            assert_eq!(records[i].len() as u64, len.as_u64().unwrap());
        }
        if let Some(off) = e.get("offset") {
            assert_eq!(
                reader.get_offsets(0).unwrap()[i],
                off.as_u64().unwrap(),
                "{}: offset of {i}",
                case.name
            );
        }
        if let Some(crc) = e.get("crc32") {
            assert_eq!(reader.get_checksums(0).unwrap()[i] as u64, crc.as_u64().unwrap());
        }
    }
    if let Some(h) = m.get("header") {
        check_header(case, &reader, 0, h);
    }
    if let Some(parts) = m.get("parts").and_then(Json::as_array) {
        assert_eq!(reader.fnames().len(), parts.len(), "{}: part count", case.name);
        for (k, p) in parts.iter().enumerate() {
            assert!(
                reader.fnames()[k].ends_with(p["path"].as_str().unwrap()),
                "{}: part order",
                case.name
            );
            check_header(case, &reader, k, &p["header"]);
        }
    }

    // The facade recognises it.
    let sniffed = reel::open(&path).unwrap();
    assert_eq!((sniffed.info().format, sniffed.len()), ("ffrecord", records.len() as u64));

    check_writer(case, &path, &records);
    if m.get("packed_folder").is_some() {
        check_packed(case, &path);
    }
    for file in data_files(&path) {
        sweep(case, &file, true);
    }
}

fn check_header(case: &Case, reader: &FfrecordReader, file: usize, h: &Json) {
    let offsets = reader.get_offsets(file).unwrap();
    let n = offsets.len() as u64 - 1;
    assert_eq!(n, h["n"].as_u64().unwrap(), "{}: n of file {file}", case.name);
    let bytes = std::fs::read(&reader.fnames()[file]).unwrap();
    assert_eq!(
        u32::from_le_bytes(bytes[..4].try_into().unwrap()) as u64,
        h["meta_checksum_u32"].as_u64().unwrap()
    );
    assert_eq!(12 + 12 * n, h["data_offset"].as_u64().unwrap(), "{}: data offset", case.name);
    if let Some(hex) = h["header_hex"].as_str() {
        assert_eq!(
            &bytes[..(12 + 12 * n) as usize],
            &unhex(hex)[..],
            "{}: header bytes",
            case.name
        );
    }
}

/// The reference writer is deterministic: writing the decoded records again gives the same
/// files, byte for byte.
fn check_writer(case: &Case, path: &Path, records: &[Vec<u8>]) {
    let tmp = tempfile::tempdir().unwrap();
    let files = data_files(path);
    if path.is_dir() {
        let out = tmp.path().join("parts");
        dump(records, &out, files.len() as u64).unwrap();
        let written = data_files(&out);
        assert_eq!(written.len(), files.len(), "{}: part count", case.name);
        for (a, b) in files.iter().zip(&written) {
            assert_eq!(a.file_name(), b.file_name());
            assert!(
                std::fs::read(a).unwrap() == std::fs::read(b).unwrap(),
                "{}: {} differs",
                case.name,
                a.display()
            );
        }
    } else {
        let out = tmp.path().join("x.ffr");
        let mut w = FfrecordWriter::create(&out, records.len() as u64).unwrap();
        records.iter().for_each(|r| {
            w.write_one(r).unwrap();
        });
        w.finish().unwrap();
        assert!(
            std::fs::read(path).unwrap() == std::fs::read(&out).unwrap(),
            "{}: writer bytes differ",
            case.name
        );
    }
}

fn tree_json(dir: &reel::ffrecord::FolderDir) -> Json {
    let mut m = serde_json::Map::new();
    for (name, e) in dir.entries() {
        let v = match e {
            FolderEntry::File(i) => Json::from(*i),
            FolderEntry::Dir(d) => tree_json(d),
        };
        m.insert(name.to_string(), v);
    }
    Json::Object(m)
}

fn check_packed(case: &Case, path: &Path) {
    let pf = &case.manifest["packed_folder"];
    let p = PackedFolder::open(path).unwrap();
    assert_eq!(p.num_files(), pf["file_count"].as_u64().unwrap());
    assert_eq!(tree_json(p.root()), pf["structure"], "{}: folder tree", case.name);
    let strings = |v: &Json| {
        v.as_array().unwrap().iter().map(|s| s.as_str().unwrap().to_string()).collect::<Vec<_>>()
    };
    assert_eq!(p.list("", true, true, false).unwrap(), strings(&pf["listing_root"]));
    assert_eq!(p.list("", true, true, true).unwrap(), strings(&pf["listing_recursive"]));
    let meta = p.reader().read_one(p.num_files()).unwrap();
    assert_eq!(hex_of(&meta[..9]), pf["meta_magic_hex"].as_str().unwrap());
    assert_eq!(hex_of(&meta[9..]), pf["meta_pickle_hex"].as_str().unwrap());
    for f in pf["files"].as_array().unwrap() {
        let name = f["path"].as_str().unwrap();
        assert!(p.is_file(name));
        check_bytes(&p.read_one(name).unwrap(), &f["content"])
            .unwrap_or_else(|d| panic!("{name}: {d}"));
    }
    // Unpack into a real directory and pack it again: the same file comes out.
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("tree");
    unpack(&p, "", &root);
    let again = tmp.path().join("again.ffr");
    pack_folder(&root, &again).unwrap();
    assert!(
        std::fs::read(path).unwrap() == std::fs::read(&again).unwrap(),
        "{}: pack_folder bytes differ",
        case.name
    );
}

fn hex_of(b: &[u8]) -> String {
    reel::testing::golden::hex(b)
}

fn unpack(p: &PackedFolder, dir: &str, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for name in p.list(dir, true, true, false).unwrap() {
        let full = if dir.is_empty() { name.clone() } else { format!("{dir}/{name}") };
        if p.is_dir(&full) {
            unpack(p, &full, &to.join(&name));
        } else {
            std::fs::write(to.join(&name), p.read_one(&full).unwrap()).unwrap();
        }
    }
}

/// Cuts a file at many lengths. Intact golden files must have every cut detected (a
/// checksum or structure error); damaged ones only must not panic.
fn sweep(case: &Case, file: &Path, must_detect: bool) {
    let bytes = std::fs::read(file).unwrap();
    let cuts = truncation::sweep(&bytes, &truncation::lengths(bytes.len(), &[]), |b| {
        Ok(Box::new(FfrecordReader::from_files(
            MemFiles::single("cut.ffr", b),
            &FfrecordOptions::default(),
        )?))
    });
    if must_detect {
        for (len, cut) in cuts {
            assert!(
                cut.detected(),
                "{}: {} cut at {len} went unnoticed: {cut:?}",
                case.name,
                file.display()
            );
        }
    }
}

/// What our reader gives for a probe, in the probe's terms.
fn expect_bytes(case: &Case, what: &str, got: &[u8], result: &Json) {
    check_bytes(got, result).unwrap_or_else(|d| panic!("{}: {what}: {d}", case.name));
}

fn check_corrupt(case: &Case) {
    let path = dataset_path(case);
    let mutation = &case.manifest["mutation"];
    let verified = FfrecordReader::open_with(&path, &options(Backend::Pread, true));
    let unverified = FfrecordReader::open_with(&path, &options(Backend::Pread, false));
    for (probe, want) in case.probes() {
        match probe.as_str() {
            "open_check_data_true" => match (want["outcome"].as_str().unwrap(), &verified) {
                ("ok", Ok(r)) => {
                    assert_eq!(r.n(), want["result"]["value"].as_u64().unwrap());
                    if mutation["kind"] == "meta_checksum_set_to_zero" {
                        assert_eq!(r.info().warnings[0].kind, WarningKind::MetadataChecksumAbsent);
                    }
                }
                ("error", Err(e)) => {
                    assert!(
                        matches!(e.kind(), ErrorKind::Checksum | ErrorKind::Corrupt),
                        "{}: {e}",
                        case.name
                    )
                }
                (o, r) => {
                    panic!("{}: {probe}: reference {o}, reel {:?}", case.name, r.as_ref().err())
                }
            },
            // Without checks the reference trusts a damaged header; reel still validates the
            // structure, so it may refuse (Corrupt) where the reference returned garbage.
            "open_check_data_false" => match (want["outcome"].as_str().unwrap(), &unverified) {
                ("ok", Ok(r)) => assert_eq!(r.n(), want["result"]["value"].as_u64().unwrap()),
                (_, Err(e)) => assert_eq!(e.kind(), ErrorKind::Corrupt, "{}: {e}", case.name),
                (o, Ok(_)) => panic!("{}: {probe}: reference {o}, reel opened", case.name),
            },
            "read_one_check_data_true" => {
                let r = verified.as_ref().unwrap();
                for p in want.as_array().unwrap() {
                    let i = p["index"].as_u64().unwrap();
                    match (p["outcome"].as_str().unwrap(), r.read_one(i)) {
                        ("ok", Ok(b)) => expect_bytes(case, probe, &b, &p["result"]),
                        ("error", Err(e)) => {
                            assert_eq!(
                                (e.kind(), e.record()),
                                (ErrorKind::Checksum, Some(i)),
                                "{}: {e}",
                                case.name
                            )
                        }
                        (o, got) => {
                            panic!("{}: {probe} {i}: reference {o}, reel {got:?}", case.name)
                        }
                    }
                }
            }
            "read_batch_all_check_data_true" | "read_batch_all_check_data_false" => {
                let r = if probe.ends_with("true") { &verified } else { &unverified };
                let Ok(r) = r else {
                    continue_if_refused(case, probe, r);
                    continue;
                };
                let all: Vec<u64> = (0..r.n()).collect();
                match (want["outcome"].as_str().unwrap(), r.read_many(&all)) {
                    ("ok", Ok(list)) => {
                        let items = want["result"]["items"].as_array().unwrap();
                        assert_eq!(list.len(), items.len());
                        list.iter().zip(items).for_each(|(b, d)| expect_bytes(case, probe, b, d));
                    }
                    ("error", Err(e)) if probe.ends_with("true") => {
                        assert_eq!(e.kind(), ErrorKind::Checksum)
                    }
                    // Informative probes (damaged header, no checks): reel may read fine.
                    ("error", _) => {}
                    (o, got) => {
                        panic!("{}: {probe}: reference {o}, reel {:?}", case.name, got.err())
                    }
                }
            }
            "read_one_check_data_false" => {
                let Ok(r) = &unverified else {
                    continue_if_refused(case, probe, &unverified);
                    continue;
                };
                for p in want.as_array().unwrap() {
                    let i = p["index"].as_u64().unwrap();
                    match (p["outcome"].as_str().unwrap(), r.read_one(i)) {
                        ("ok", Ok(b)) => expect_bytes(case, probe, &b, &p["result"]),
                        ("error", _) => {}
                        (o, got) => panic!(
                            "{}: {probe} {i}: reference {o}, reel {:?}",
                            case.name,
                            got.err()
                        ),
                    }
                }
            }
            // The reference prints a warning on stderr; reel reports it on the source.
            "open_stderr" => {
                let warned = want.as_str().is_some_and(|s| !s.is_empty());
                let r = verified.as_ref().unwrap();
                assert_eq!(
                    !r.info().warnings.is_empty(),
                    warned,
                    "{}: warnings {:?}",
                    case.name,
                    r.info().warnings
                );
            }
            other => panic!("{}: unhandled probe {other}", case.name),
        }
    }
    // Every backend agrees on the damaged file, and no cut of it panics.
    let _ = conformance::check_backends(|b| open_boxed(&path, b, true));
    sweep(case, &path, false);
    if let Ok(r) = verified {
        // Errors name the damaged record.
        for i in 0..r.n() {
            if let Err(e) = r.read(i) {
                assert_eq!(e.record(), Some(i));
                let _ = e.to_string();
            }
        }
    }
}

fn continue_if_refused(case: &Case, probe: &str, r: &reel::Result<FfrecordReader>) {
    let e = r.as_ref().err().unwrap();
    assert_eq!(e.kind(), ErrorKind::Corrupt, "{}: {probe}: {e}", case.name);
}

#[test]
fn golden_ffrecord() {
    let mut datasets = 0;
    let mut corrupt = 0;
    for case in cases("ffrecord") {
        let m = &case.manifest;
        if case.is_corrupt() {
            check_corrupt(&case);
            corrupt += 1;
        } else if m.get("header").is_some() || m.get("parts").is_some() {
            check_dataset(&case);
            datasets += 1;
        } else {
            panic!("{}: a case this harness does not know how to check", case.name);
        }
    }
    summary("ffrecord", datasets, corrupt);
}

#[test]
fn bytes_view_is_zero_copy_of_the_read() {
    // Reading a raw record hands out the bytes that were read: one field, a Bytes value.
    let case = cases("ffrecord")
        .into_iter()
        .find(|c| !c.is_corrupt() && c.manifest["record_count"].as_u64() > Some(0))
        .unwrap();
    let r = reel::open(dataset_path(&case)).unwrap().read(0).unwrap();
    assert_eq!(r.len(), 1);
    assert!(matches!(r.get("data"), Some(ValueRef::Bytes(_))));
}
