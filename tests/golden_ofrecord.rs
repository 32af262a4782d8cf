//! Golden conformance for OFRecord: every case in `REEL_GOLDEN_DIR/ofrecord` decodes to its
//! manifest (frame positions, serialized bytes, every feature), the writers reproduce the
//! reference's bytes, corrupt copies behave as the reference's probes say, no truncation of
//! any golden file panics or goes unnoticed, and the facade recognises every dataset.
//!
//! Cases are told apart by the structure of their manifests, never by name: one with
//! `mutation` is a corrupt copy, one with `parts` a dataset. Any manifest key, probe or
//! descriptor field this harness does not know fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};

use common::{Case, cases, check_value, sha256_hex, summary};
use reel::ofrecord::{
    FeatureKind, FeatureRef, OfrecordFeatures, OfrecordFileWriter, OfrecordOptions, OfrecordReader,
    OfrecordStream, OfrecordWriter, proto,
};
use reel::testing::{conformance, truncation};
use reel::{
    Backend, DType, ErrorKind, MemFiles, Record, RecordRef, RecordSource, RecordSourceExt,
    ValueRef, WarningKind,
};
use serde_json::Value as Json;

const TOP_KEYS: &[&str] = &[
    "schema",
    "format",
    "set",
    "case",
    "description",
    "reference",
    "generator",
    "parts",
    "record_count",
    "record_schema",
    "records",
    "notes",
    "files",
    "interpretations",
    "original",
    "mutation",
    "reference_reader_behaviour",
];
const RECORD_KEYS: &[&str] = &[
    "index",
    "part",
    "index_in_part",
    "length_field_offset",
    "length",
    "serialized_sha256",
    "serialized_hex",
    "features",
];
const FEATURE_KEYS: &[&str] = &["kind", "count", "values", "values_bits_hex", "le_bytes_sha256"];
const PART_KEYS: &[&str] = &["path", "record_count", "size"];
const PROBES: &[&str] = &["read_stream", "read_and_parse", "parse_each_record"];

fn known_keys(case: &Case, what: &str, obj: &Json, known: &[&str]) {
    for key in
        obj.as_object().unwrap_or_else(|| panic!("{}: {what} is not an object", case.name)).keys()
    {
        assert!(known.contains(&key.as_str()), "{}: unknown {what} key {key:?}", case.name);
    }
}

fn open(path: &Path, backend: Backend) -> reel::Result<Box<dyn RecordSource>> {
    let options = OfrecordOptions::default().backend(backend);
    Ok(Box::new(OfrecordReader::open_with(path, &options)?))
}

fn file_name(p: &Path) -> String {
    p.file_name().unwrap().to_str().unwrap().to_string()
}

/// Compares one decoded record with a manifest `features` object (keys listed sorted).
fn check_features(case: &Case, what: &str, record: RecordRef<'_>, expected: &Json) {
    let expected = expected.as_object().unwrap_or_else(|| panic!("{}: {what}", case.name));
    let names: Vec<&str> = record.iter().map(|(n, _)| n).collect();
    let want: Vec<&str> = expected.keys().map(String::as_str).collect();
    assert_eq!(names, want, "{}: {what}: feature names (in key order)", case.name);
    for (name, desc) in expected {
        let what = format!("{what}: feature {name:?}");
        known_keys(case, &what, desc, FEATURE_KEYS);
        let feature = record.feature(name).unwrap_or_else(|e| panic!("{}: {what}: {e}", case.name));
        let kind = feature.kind().map(FeatureKind::name);
        assert_eq!(kind, desc["kind"].as_str(), "{}: {what}: kind", case.name);
        if kind.is_none() {
            assert!(desc.get("count").is_none(), "{}: {what}: a count without a kind", case.name);
            continue;
        }
        assert_eq!(feature.len() as u64, desc["count"].as_u64().unwrap(), "{}: {what}", case.name);
        match feature {
            FeatureRef::BytesList(list) => {
                let values = desc["values"].as_array().unwrap();
                assert_eq!(list.len(), values.len());
                for (k, (v, d)) in list.iter().zip(values).enumerate() {
                    check_value(v, d).unwrap_or_else(|m| panic!("{}: {what}[{k}]: {m}", case.name));
                }
                assert!(
                    desc.get("le_bytes_sha256").is_none() && desc.get("values_bits_hex").is_none()
                );
            }
            FeatureRef::Int32List(a) | FeatureRef::Int64List(a) => {
                assert_eq!(sha256_hex(a.data), desc["le_bytes_sha256"].as_str().unwrap());
                let ints: Vec<i64> = match feature {
                    FeatureRef::Int32List(_) => {
                        a.to_i32_vec().unwrap().into_iter().map(i64::from).collect()
                    }
                    _ => a.to_i64_vec().unwrap(),
                };
                if let Some(values) = desc.get("values") {
                    let want: Vec<i64> =
                        values.as_array().unwrap().iter().map(|v| v.as_i64().unwrap()).collect();
                    assert_eq!(ints, want, "{}: {what}: values", case.name);
                }
                assert!(desc.get("values_bits_hex").is_none(), "{}: {what}", case.name);
            }
            FeatureRef::FloatList(a) | FeatureRef::DoubleList(a) => {
                assert_eq!(sha256_hex(a.data), desc["le_bytes_sha256"].as_str().unwrap());
                let (bits, values): (Vec<String>, Vec<f64>) = match feature {
                    FeatureRef::FloatList(_) => a
                        .to_f32_vec()
                        .unwrap()
                        .into_iter()
                        .map(|f| (format!("{:08x}", f.to_bits()), f64::from(f)))
                        .unzip(),
                    _ => a
                        .to_f64_vec()
                        .unwrap()
                        .into_iter()
                        .map(|f| (format!("{:016x}", f.to_bits()), f))
                        .unzip(),
                };
                if let Some(want) = desc.get("values_bits_hex") {
                    let want: Vec<&str> =
                        want.as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
                    assert_eq!(bits, want, "{}: {what}: bit patterns", case.name);
                }
                if let Some(want) = desc.get("values") {
                    let want = want.as_array().unwrap();
                    assert_eq!(values.len(), want.len());
                    for (got, w) in values.iter().zip(want) {
                        match w.as_str() {
                            Some("nan") => assert!(got.is_nan()),
                            Some("inf") => assert_eq!(*got, f64::INFINITY),
                            Some("-inf") => assert_eq!(*got, f64::NEG_INFINITY),
                            Some(other) => panic!("{}: {what}: float {other:?}", case.name),
                            None => assert_eq!(
                                got.to_bits(),
                                w.as_f64().unwrap().to_bits(),
                                "{}: {what}",
                                case.name
                            ),
                        }
                    }
                }
            }
            FeatureRef::NoKind => unreachable!(),
        }
    }
}

/// Reshapes a flattened feature by its sibling `…/shape` feature, as the manifest's notes
/// describe, and compares the array with the descriptor.
fn check_interpretation(case: &Case, record: RecordRef<'_>, name: &str, desc: &Json) {
    let shape_name = match name.rsplit_once('/') {
        Some((dir, _)) => format!("{dir}/shape"),
        None => panic!("{}: interpretation of {name:?} without a shape feature", case.name),
    };
    let shape: Vec<u64> =
        record.get_i64s(&shape_name).unwrap().into_iter().map(|d| d as u64).collect();
    let array = match record.feature(name).unwrap() {
        FeatureRef::FloatList(a)
        | FeatureRef::DoubleList(a)
        | FeatureRef::Int32List(a)
        | FeatureRef::Int64List(a) => a,
        other => panic!("{}: {name}: {other:?} cannot be reshaped", case.name),
    };
    let mut r = Record::new();
    r.push_array("x", array.dtype, &shape, array.data).unwrap();
    check_value(r.get("x").unwrap(), desc)
        .unwrap_or_else(|m| panic!("{}: interpretation of {name}: {m}", case.name));
}

fn check_dataset(case: &Case) {
    let m = &case.manifest;
    let dir = &case.dir;
    let parts = m["parts"].as_array().unwrap();
    let outcomes = conformance::check_backends(|b| open(dir, b))
        .unwrap_or_else(|k| panic!("{}: open failed ({k:?})", case.name));
    let reader = OfrecordReader::open(dir).unwrap();
    assert_eq!(reader.len(), m["record_count"].as_u64().unwrap(), "{}: record count", case.name);
    assert_eq!(reader.part_count(), parts.len(), "{}: part count", case.name);
    for (k, p) in parts.iter().enumerate() {
        known_keys(case, "part", p, PART_KEYS);
        let path = &reader.part_paths()[k];
        assert_eq!(file_name(path), p["path"].as_str().unwrap(), "{}: part order", case.name);
        assert_eq!(reader.part_len(k), p["record_count"].as_u64(), "{}: part {k}", case.name);
        assert_eq!(std::fs::metadata(path).unwrap().len(), p["size"].as_u64().unwrap());
    }

    let records: Vec<Record> = outcomes
        .into_iter()
        .enumerate()
        .map(|(i, o)| o.unwrap_or_else(|k| panic!("{}: record {i} failed: {k:?}", case.name)))
        .collect();
    let mut payloads = Vec::new();
    for e in m["records"].as_array().unwrap() {
        known_keys(case, "record", e, RECORD_KEYS);
        let i = e["index"].as_u64().unwrap();
        let what = format!("record {i}");
        let frame = reader.frame(i).unwrap();
        assert_eq!(
            (
                file_name(&reader.part_paths()[frame.part]),
                frame.index_in_part,
                frame.length_field_offset,
                frame.length
            ),
            (
                e["part"].as_str().unwrap().to_string(),
                e["index_in_part"].as_u64().unwrap(),
                e["length_field_offset"].as_u64().unwrap(),
                e["length"].as_u64().unwrap()
            ),
            "{}: {what}: frame",
            case.name
        );
        let payload = reader.read_serialized(i).unwrap();
        assert_eq!(sha256_hex(&payload), e["serialized_sha256"].as_str().unwrap());
        if let Some(h) = e.get("serialized_hex") {
            assert_eq!(common::hex(&payload), h.as_str().unwrap(), "{}: {what}", case.name);
        }
        check_features(case, &what, records[i as usize].view(), &e["features"]);
        // prost's decoder agrees with reel's on every golden record.
        let via_prost = proto::from_proto(&proto::decode_proto(&payload).unwrap());
        assert!(
            via_prost == records[i as usize],
            "{}: {what}: prost decodes differently",
            case.name
        );
        payloads.push(payload);
    }
    assert_eq!(payloads.len(), records.len(), "{}: manifest lists every record", case.name);
    if let Some(list) = m.get("interpretations") {
        for entry in list.as_array().unwrap() {
            let i = entry["index"].as_u64().unwrap() as usize;
            for (name, desc) in entry.as_object().unwrap() {
                if name != "index" {
                    check_interpretation(case, records[i].view(), name, desc);
                }
            }
        }
    }

    // Warnings name exactly what current OneFlow cannot read.
    let has_empty_frame = payloads.iter().any(Vec::is_empty);
    let has_empty_part = parts.iter().any(|p| p["record_count"].as_u64() == Some(0));
    let quirks = reader.info().warnings.iter().filter(|w| w.kind == WarningKind::ReferenceQuirk);
    assert_eq!(
        quirks.count(),
        usize::from(has_empty_frame) + usize::from(has_empty_part),
        "{}: warnings {:?}",
        case.name,
        reader.info().warnings
    );
    let strict = OfrecordReader::open_with(dir, &OfrecordOptions::default().oneflow_strict(true));
    assert_eq!(strict.is_err(), has_empty_frame || has_empty_part, "{}: strict open", case.name);

    check_stream(case, dir, &records, &payloads);
    check_writers(case, &reader, &records, &payloads);
    check_facade(case, dir, records.len() as u64);
    for p in reader.part_paths() {
        sweep(case, p, &reader, true);
    }
}

/// The one-pass reader gives the same records and bytes as the indexed one.
fn check_stream(case: &Case, dir: &Path, records: &[Record], payloads: &[Vec<u8>]) {
    let got: Vec<Record> = OfrecordStream::open(dir, &OfrecordOptions::default())
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(got.len(), records.len(), "{}: stream length", case.name);
    for (i, (a, b)) in got.iter().zip(records).enumerate() {
        assert!(a == b, "{}: stream record {i} differs", case.name);
        assert_eq!(a.index(), i as u64);
    }
    let mut stream = OfrecordStream::open(dir, &OfrecordOptions::default()).unwrap();
    let mut buf = Vec::new();
    for p in payloads {
        stream.next_serialized(&mut buf).unwrap().unwrap();
        assert_eq!(&buf, p);
    }
    assert!(stream.next_serialized(&mut buf).unwrap().is_none());
}

/// Writing the decoded records (and the serialized bytes, and the prost messages) again
/// gives the reference's files, byte for byte, part by part.
fn check_writers(case: &Case, reader: &OfrecordReader, records: &[Record], payloads: &[Vec<u8>]) {
    let tmp = tempfile::tempdir().unwrap();
    for mode in ["records", "serialized", "proto"] {
        let out = tmp.path().join(mode);
        let mut w = OfrecordWriter::create(&out).unwrap();
        let mut i = 0usize;
        for part in 0..reader.part_count() {
            w.start_new_part().unwrap();
            for _ in 0..reader.part_len(part).unwrap() {
                match mode {
                    "records" => w.write_record(records[i].view()),
                    "serialized" => w.write_serialized(&payloads[i]),
                    _ => w.write_proto(&reader.read_proto(i as u64).unwrap()),
                }
                .unwrap();
                i += 1;
            }
        }
        w.finish().unwrap();
        let written: Vec<PathBuf> = {
            let mut v: Vec<_> =
                std::fs::read_dir(&out).unwrap().map(|e| e.unwrap().path()).collect();
            v.sort();
            v
        };
        // A part with no records cannot be written (reel never writes empty parts) unless
        // the whole dataset is empty.
        let nonempty: Vec<&PathBuf> = reader
            .part_paths()
            .iter()
            .enumerate()
            .filter(|(k, _)| reader.part_len(*k) != Some(0) || reader.is_empty())
            .map(|(_, p)| p)
            .collect();
        assert_eq!(written.len(), nonempty.len(), "{}: {mode}: part files", case.name);
        for (a, b) in nonempty.iter().zip(&written) {
            assert_eq!(file_name(a), file_name(b), "{}: {mode}: part names", case.name);
            assert!(
                std::fs::read(a).unwrap() == std::fs::read(b).unwrap(),
                "{}: {mode}: {} differs",
                case.name,
                file_name(a)
            );
        }
    }
    // The single-file writer gives each part on its own.
    let mut i = 0usize;
    for (k, part) in reader.part_paths().iter().enumerate() {
        let out = tmp.path().join(format!("single-{k}"));
        let mut w = OfrecordFileWriter::create(&out).unwrap();
        for _ in 0..reader.part_len(k).unwrap() {
            w.write_record(records[i].view()).unwrap();
            i += 1;
        }
        w.finish().unwrap();
        assert!(std::fs::read(part).unwrap() == std::fs::read(&out).unwrap(), "{}", case.name);
    }
}

fn check_facade(case: &Case, dir: &Path, len: u64) {
    assert_eq!(reel::sniff(dir).unwrap(), reel::Format::Ofrecord, "{}: sniff dir", case.name);
    let source = reel::open(dir).unwrap();
    assert_eq!((source.info().format, source.len()), ("ofrecord", len), "{}", case.name);
    for p in OfrecordReader::open(dir).unwrap().part_paths() {
        assert_eq!(reel::sniff(p).unwrap(), reel::Format::Ofrecord, "{}: sniff part", case.name);
    }
}

/// Cuts a part at every length. An intact part cut exactly between two frames is a valid
/// shorter part (OFRecord has no header or trailer to tell); every other cut must be
/// noticed at open. Damaged parts only must not panic.
fn sweep(case: &Case, file: &Path, reader: &OfrecordReader, must_detect: bool) {
    let bytes = std::fs::read(file).unwrap();
    let part = reader.part_paths().iter().position(|p| p == file).unwrap();
    let boundaries: Vec<usize> = (0..reader.len())
        .filter_map(|i| reader.frame(i))
        .filter(|f| f.part == part)
        .map(|f| f.length_field_offset as usize)
        .collect();
    let cuts = truncation::sweep(&bytes, &truncation::lengths(bytes.len(), &boundaries), |b| {
        Ok(Box::new(OfrecordReader::from_files(
            MemFiles::single("part-00000", b),
            &OfrecordOptions::default(),
        )?))
    });
    if !must_detect {
        return;
    }
    for (len, cut) in cuts {
        match boundaries.iter().position(|&b| b == len) {
            Some(k) => assert_eq!(
                cut,
                truncation::Cut::Opened { len: k as u64, readable: k as u64, errors: vec![] },
                "{}: cut at frame boundary {len}",
                case.name
            ),
            None => assert_eq!(
                cut,
                truncation::Cut::OpenFailed(ErrorKind::Corrupt),
                "{}: {} cut at {len}",
                case.name,
                file.display()
            ),
        }
    }
}

fn check_corrupt(case: &Case) {
    let m = &case.manifest;
    let files = m["files"].as_array().unwrap();
    assert_eq!(files.len(), 1, "{}: one damaged part", case.name);
    let path = case.dir.join(files[0]["path"].as_str().unwrap());
    let opened = OfrecordReader::open(&path);
    let probes = case.probes();
    for (probe, _) in probes {
        assert!(PROBES.contains(&probe.as_str()), "{}: unhandled probe {probe}", case.name);
    }
    for probe in PROBES {
        let want = probes.get(*probe).unwrap_or_else(|| panic!("{}: no {probe}", case.name));
        match (*probe, want.get("outcome").and_then(Json::as_str), &opened) {
            // Framing: the list of payload hashes, or a framing error (reel: at open).
            ("read_stream", Some("ok"), Ok(r)) => {
                let items = want["result"]["items"].as_array().unwrap();
                assert_eq!(r.len(), items.len() as u64, "{}: {probe}", case.name);
                for (i, item) in items.iter().enumerate() {
                    let h = sha256_hex(&r.read_serialized(i as u64).unwrap());
                    assert_eq!(h, item["value"].as_str().unwrap(), "{}: {probe} {i}", case.name);
                }
            }
            ("read_stream" | "read_and_parse", Some("error"), Err(e)) => {
                assert_eq!(e.kind(), ErrorKind::Corrupt, "{}: {probe}: {e}", case.name);
                assert!(e.path().is_some() && e.offset().is_some() && e.record().is_some());
                assert_eq!(e.format(), Some("ofrecord"));
                let _ = e.to_string();
                stream_fails_too(case, &path);
            }
            // Whole-file parse: every record as the reference decoded it.
            ("read_and_parse", Some("ok"), Ok(r)) => {
                let results = want["result"].as_array().unwrap();
                assert_eq!(r.len(), results.len() as u64);
                for (i, expected) in results.iter().enumerate() {
                    let rec = r.read(i as u64).unwrap();
                    check_features(case, &format!("{probe} {i}"), rec.view(), expected);
                }
            }
            ("read_and_parse", Some("error"), Ok(r)) => {
                // Framing was fine but protobuf refused a record: reel refuses it too.
                let failing = (0..r.len()).filter(|&i| r.read(i).is_err()).count();
                assert!(failing > 0, "{}: {probe}: every record decoded", case.name);
            }
            ("parse_each_record", None, _) => check_each(case, want, &opened),
            (probe, outcome, got) => panic!(
                "{}: {probe}: reference {outcome:?}, reel {:?}",
                case.name,
                got.as_ref().err()
            ),
        }
    }
    // Every backend agrees on the damaged file, and no cut of it panics.
    let _ = conformance::check_backends(|b| open(&path, b));
    if let Ok(r) = &opened {
        sweep(case, &path, r, false);
    } else {
        let bytes = std::fs::read(&path).unwrap();
        truncation::sweep(&bytes, &truncation::lengths(bytes.len(), &[]), |b| {
            Ok(Box::new(OfrecordReader::from_files(
                MemFiles::single("part-00000", b),
                &OfrecordOptions::default(),
            )?))
        });
    }
}

/// `parse_each_record`: per record, the decoded features or a protobuf error; or one
/// framing error for the whole file.
fn check_each(case: &Case, want: &Json, opened: &reel::Result<OfrecordReader>) {
    if let Some(msg) = want.get("framing_error") {
        known_keys(case, "parse_each_record", want, &["framing_error"]);
        let e = opened.as_ref().err().unwrap_or_else(|| panic!("{}: {msg} not seen", case.name));
        assert_eq!(e.kind(), ErrorKind::Corrupt, "{}", case.name);
        return;
    }
    let r = opened.as_ref().unwrap_or_else(|e| panic!("{}: open failed: {e}", case.name));
    let list = want.as_array().unwrap();
    assert_eq!(r.len(), list.len() as u64, "{}: parse_each_record", case.name);
    for p in list {
        let i = p["index"].as_u64().unwrap();
        match (p["outcome"].as_str().unwrap(), r.read(i)) {
            ("ok", Ok(rec)) => {
                check_features(case, &format!("parse_each_record {i}"), rec.view(), &p["result"])
            }
            ("error", Err(e)) => {
                assert_eq!((e.kind(), e.record()), (ErrorKind::Corrupt, Some(i)), "{}", case.name)
            }
            (o, got) => panic!("{}: record {i}: reference {o}, reel {:?}", case.name, got.err()),
        }
    }
}

/// The one-pass reader ends with the framing error (records before it may read, or fail
/// on their own if the damage made their protobuf invalid).
fn stream_fails_too(case: &Case, path: &Path) {
    let results: Vec<_> =
        OfrecordStream::open(path, &OfrecordOptions::default()).unwrap().collect();
    let last = results.last().unwrap_or_else(|| panic!("{}: stream gave nothing", case.name));
    assert_eq!(last.as_ref().err().map(|e| e.kind()), Some(ErrorKind::Corrupt), "{}", case.name);
}

#[test]
fn golden_ofrecord() {
    let mut datasets = 0;
    let mut corrupt = 0;
    for case in cases("ofrecord") {
        known_keys(&case, "manifest", &case.manifest, TOP_KEYS);
        if case.is_corrupt() {
            check_corrupt(&case);
            corrupt += 1;
        } else if case.manifest.get("parts").is_some() {
            check_dataset(&case);
            datasets += 1;
        } else {
            panic!("{}: a case this harness does not know how to check", case.name);
        }
    }
    summary("ofrecord", datasets, corrupt);
}

/// Every other format's golden files are not taken for OFRecord (the sniff has no magic
/// number to go by, so it must be precise).
#[test]
fn sniff_leaves_other_formats_alone() {
    let root = common::golden_root();
    let mut checked = 0;
    for key in reel::testing::golden::format_keys().into_iter().filter(|k| k != "ofrecord") {
        for name in common::datasets(&key) {
            let dir = root.join(&key).join(&name);
            let mut paths = vec![dir.clone()];
            paths.extend(std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()));
            for p in paths {
                if p.file_name().is_some_and(|n| n == "expected.json") {
                    continue;
                }
                let sniffed = reel::sniff(&p).ok();
                assert_ne!(
                    sniffed,
                    Some(reel::Format::Ofrecord),
                    "{} taken for OFRecord",
                    p.display()
                );
                checked += 1;
            }
        }
    }
    assert!(checked > 0);
}

/// Decoded values point into the read buffer: packed float lists and byte strings are
/// the bytes that were read, not copies.
#[test]
fn float_lists_and_bytes_are_spans_of_the_read() {
    let case = cases("ofrecord")
        .into_iter()
        .find(|c| c.manifest.get("interpretations").is_some())
        .unwrap();
    let reader = OfrecordReader::open(&case.dir).unwrap();
    let mut record = Record::new();
    reader.read_into(0, &mut record).unwrap();
    let payload = reader.read_serialized(0).unwrap();
    let view = record.view();
    let buffer = view.raw_buffer();
    assert_eq!(&buffer[..payload.len()], &payload[..], "the record buffer starts with the read");
    for (name, value) in view.iter() {
        let data = match value {
            ValueRef::Array(a) if matches!(a.dtype, DType::F32 | DType::F64) => a.data,
            ValueRef::List(l) => match l.get(0) {
                Some(ValueRef::Bytes(b)) => b,
                _ => continue,
            },
            _ => continue,
        };
        let inside = data.as_ptr() as usize >= buffer.as_ptr() as usize
            && data.as_ptr() as usize + data.len() <= buffer.as_ptr() as usize + payload.len();
        assert!(inside, "{name}: not a span of the read bytes");
    }
}
