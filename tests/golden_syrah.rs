//! Golden conformance for Syrah: every case in `REEL_GOLDEN_DIR/syrah` decodes to its
//! manifest, the writer reproduces the reference's bytes (from what was read, and from the
//! items as the reference was given them), corrupt copies and quirks behave as the
//! manifests say, and no truncation of any golden file panics or goes unnoticed.
//!
//! Cases are told apart by the structure of their manifests, never by name: a manifest
//! with `records` is a dataset, one with `mutation` is a corrupt copy, one with only
//! reader/writer outcomes is a quirk the reference cannot round-trip. Any key, probe or
//! descriptor field this harness does not know fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};

use common::{Case, cases, check_value, sha256_hex, summary, unhex};
use reel::syrah::{SyrahHeader, SyrahReader, SyrahWriter};
use reel::testing::{conformance, truncation};
use reel::{Backend, DType, ErrorKind, MemFiles, Record, RecordSource, ValueRef};
use serde_json::Value as Json;

const TOP_KEYS: &[&str] = &[
    "schema",
    "format",
    "set",
    "case",
    "description",
    "reference",
    "generator",
    "header",
    "array_dtypes",
    "record_count",
    "record_schema",
    "records",
    "notes",
    "files",
    "writer_outcome",
    "reference_reader_behaviour",
    "original",
    "mutation",
];

const HEADER_KEYS: &[&str] = &[
    "file_size",
    "magic_hex",
    "version_bytes_hex",
    "version",
    "metadata_offset",
    "metadata_length",
    "metadata_sha256",
    "data_region",
    "layout_note",
    "metadata_bson_hex",
    "metadata_decoded",
    "metadata_key_order",
    "note",
];

fn known_keys(case: &Case, what: &str, obj: &Json, known: &[&str]) {
    for key in
        obj.as_object().unwrap_or_else(|| panic!("{}: {what} is not an object", case.name)).keys()
    {
        assert!(known.contains(&key.as_str()), "{}: unknown {what} key {key:?}", case.name);
    }
}

fn open(path: &Path, backend: Backend) -> reel::Result<Box<dyn RecordSource>> {
    let options = reel::syrah::SyrahOptions::default().backend(backend);
    Ok(Box::new(SyrahReader::open_with(path, &options)?))
}

fn data_file(case: &Case, files: &Json) -> PathBuf {
    let files = files.as_array().unwrap();
    assert_eq!(files.len(), 1, "{}: a Syrah dataset is one file", case.name);
    case.dir.join(files[0]["path"].as_str().unwrap())
}

fn u64_list(v: &Json) -> Vec<u64> {
    v.as_array().unwrap().iter().map(|x| x.as_u64().unwrap()).collect()
}

fn le_bytes(values: &[u64]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// Checks the header facts of a manifest against the file and (when it opens) the reader.
fn check_header(case: &Case, path: &Path, h: &Json, reader: Option<&SyrahReader>) {
    known_keys(case, "header", h, HEADER_KEYS);
    let bytes = std::fs::read(path).unwrap();
    assert_eq!(bytes.len() as u64, h["file_size"].as_u64().unwrap(), "{}: file size", case.name);
    if bytes.len() < 22 {
        assert!(h.get("metadata_offset").is_none(), "{}: header facts of a short file", case.name);
        return;
    }
    let header = SyrahHeader::parse(bytes[..22].try_into().unwrap()).unwrap();
    assert_eq!(common::hex(&bytes[..2]), h["magic_hex"].as_str().unwrap());
    assert_eq!(common::hex(&header.version.to_bytes()), h["version_bytes_hex"].as_str().unwrap());
    assert_eq!(header.version.to_string(), h["version"].as_str().unwrap());
    assert_eq!(header.metadata_offset, h["metadata_offset"].as_u64().unwrap());
    assert_eq!(header.metadata_length, h["metadata_length"].as_u64().unwrap());
    assert_eq!(vec![22, header.metadata_offset], u64_list(&h["data_region"]), "{}", case.name);
    let meta = &bytes[header.metadata_offset as usize..header.metadata_end() as usize];
    assert_eq!(sha256_hex(meta), h["metadata_sha256"].as_str().unwrap(), "{}", case.name);
    if let Some(hex) = h.get("metadata_bson_hex") {
        assert_eq!(meta, &unhex(hex.as_str().unwrap())[..], "{}: metadata bytes", case.name);
    }
    let Some(reader) = reader else { return };
    assert_eq!(reader.info().version.as_deref(), h["version"].as_str());
    let file = &reader.files()[0];
    assert_eq!(file.metadata().stored_len(), meta.len() as u64, "{}: parsed metadata", case.name);
    let names: Vec<&str> = file.metadata().columns().iter().map(|c| c.name()).collect();
    let order: Vec<&str> =
        h["metadata_key_order"].as_array().unwrap().iter().map(|k| k.as_str().unwrap()).collect();
    assert_eq!(names, order, "{}: metadata key order", case.name);
    let decoded = h["metadata_decoded"].as_object().unwrap();
    assert_eq!(decoded.keys().map(String::as_str).collect::<Vec<_>>(), order);
    for (name, d) in decoded {
        known_keys(
            case,
            "metadata_decoded entry",
            d,
            &["dtype", "offset_i64le", "size_i64le", "bson_field_order"],
        );
        let column = &file.metadata().columns()[file.metadata().column_index(name).unwrap()];
        assert_eq!(column.dtype_name(), d["dtype"].as_str().unwrap(), "{}: {name}", case.name);
        // The writer emits exactly this order; the byte comparisons prove the file has it.
        assert_eq!(d["bson_field_order"], serde_json::json!(["offset", "size", "dtype"]));
        let n = reader.num_items();
        let locs: Vec<_> = (0..n).map(|i| reader.array_location(i, name).unwrap().1).collect();
        let offsets: Vec<u64> = locs.iter().map(|l| l.offset).collect();
        let sizes: Vec<u64> = locs.iter().map(|l| l.size).collect();
        for (key, ours) in [("offset_i64le", offsets), ("size_i64le", sizes)] {
            let want = &d[key];
            if want.is_array() {
                assert_eq!(ours, u64_list(want), "{}: {name} {key}", case.name);
            } else {
                known_keys(case, key, want, &["count", "sha256"]);
                assert_eq!(ours.len() as u64, want["count"].as_u64().unwrap());
                assert_eq!(sha256_hex(&le_bytes(&ours)), want["sha256"].as_str().unwrap());
            }
        }
    }
}

/// Element values of an array as JSON numbers/bools, for the manifests' `values`.
fn element_values(dtype: DType, data: &[u8]) -> Vec<Json> {
    let size = dtype.item_size() as usize;
    data.chunks_exact(size)
        .map(|c| {
            let mut b = [0u8; 8];
            b[..size.min(8)].copy_from_slice(&c[..size.min(8)]);
            let u = u64::from_le_bytes(b);
            match dtype {
                DType::Bool => Json::from(c[0] != 0),
                DType::I8 => Json::from(c[0] as i8),
                DType::I16 => Json::from(u as u16 as i16),
                DType::I32 => Json::from(u as u32 as i32),
                DType::I64 => Json::from(u as i64),
                DType::U8 | DType::U16 | DType::U32 | DType::U64 => Json::from(u),
                other => panic!("values given for a {other} array"),
            }
        })
        .collect()
}

/// Checks one array against the manifests' short `decoded` form.
fn check_decoded(case: &Case, what: &str, value: ValueRef<'_>, d: &Json) {
    known_keys(case, "decoded", d, &["shape", "sha256", "hex", "values", "value"]);
    if let Some(text) = d.get("value") {
        assert_eq!(value.as_str(), text.as_str(), "{}: {what}", case.name);
        return;
    }
    let a = value.as_array().unwrap_or_else(|| panic!("{}: {what} is not an array", case.name));
    assert_eq!(a.shape, &u64_list(&d["shape"])[..], "{}: {what} shape", case.name);
    assert_eq!(sha256_hex(a.data), d["sha256"].as_str().unwrap(), "{}: {what}", case.name);
    if let Some(hex) = d.get("hex") {
        assert_eq!(common::hex(a.data), hex.as_str().unwrap(), "{}: {what}", case.name);
    }
    if let Some(values) = d.get("values") {
        assert_eq!(
            &element_values(a.dtype, a.data),
            values.as_array().unwrap(),
            "{}: {what}",
            case.name
        );
    }
}

/// The strings of a (possibly nested, for a multi-dimensional array) JSON list, in C order.
fn flatten_strings<'a>(v: &'a Json, out: &mut Vec<&'a str>) {
    match v {
        Json::String(s) => out.push(s),
        Json::Array(items) => items.iter().for_each(|i| flatten_strings(i, out)),
        other => panic!("written value {other} is not a string"),
    }
}

/// A numpy `<Un` array of `values` (n = the longest value, at least 1, as numpy makes it).
fn unicode_array(values: &[&str]) -> (u32, Vec<u8>) {
    let n = values.iter().map(|v| v.chars().count()).max().unwrap_or(0).max(1);
    let mut data = Vec::new();
    for v in values {
        let mut points: Vec<u32> = v.chars().map(u32::from).collect();
        points.resize(n, 0);
        points.iter().for_each(|p| data.extend_from_slice(&p.to_le_bytes()));
    }
    (n as u32, data)
}

fn write_items(path: &Path, items: &[Record]) -> Vec<u8> {
    let mut w = SyrahWriter::create(path).unwrap();
    for item in items {
        w.add_item(item).unwrap();
    }
    w.finish().unwrap();
    std::fs::read(path).unwrap()
}

fn check_dataset(case: &Case) {
    let m = &case.manifest;
    let path = data_file(case, &m["files"]);
    let outcomes = conformance::check_backends(|b| open(&path, b))
        .unwrap_or_else(|k| panic!("{}: open failed ({k:?})", case.name));
    let reader = SyrahReader::open(&path).unwrap();
    assert!(reader.info().warnings.is_empty(), "{}: {:?}", case.name, reader.info().warnings);
    let n = m["record_count"].as_u64().unwrap();
    assert_eq!(outcomes.len() as u64, n, "{}: record count", case.name);
    check_header(case, &path, &m["header"], Some(&reader));

    let dtypes = m["array_dtypes"].as_object().unwrap();
    let schema = reader.info().schema.clone().unwrap();
    assert_eq!(schema.len(), dtypes.len());
    for (spec, (name, dtype)) in schema.iter().zip(dtypes) {
        assert_eq!(
            (spec.name.as_str(), spec.kind.as_str()),
            (name.as_str(), dtype.as_str().unwrap())
        );
    }

    let entries = m["records"].as_array().unwrap();
    assert_eq!(entries.len() as u64, n, "{}: records listed", case.name);
    // Items rebuilt as the reference was given them (shapes, unicode elements), in the
    // order each item's bytes are stored.
    let mut given = Vec::new();
    for e in entries {
        known_keys(case, "record", e, &["index", "arrays"]);
        let i = e["index"].as_u64().unwrap();
        let record = outcomes[i as usize].as_ref().unwrap();
        let arrays = e["arrays"].as_object().unwrap();
        let names: Vec<&str> = record.iter().map(|(n, _)| n).collect();
        assert_eq!(
            names,
            arrays.keys().map(String::as_str).collect::<Vec<_>>(),
            "{}: item {i}",
            case.name
        );
        for (name, a) in arrays {
            known_keys(
                case,
                "array",
                a,
                &["offset", "size", "written_shape", "written_values", "decoded"],
            );
            let what = format!("item {i} array {name}");
            let (_, loc) = reader.array_location(i, name).unwrap();
            assert_eq!(
                (loc.offset, loc.size),
                (a["offset"].as_u64().unwrap(), a["size"].as_u64().unwrap()),
                "{}: {what}",
                case.name
            );
            let value = record.get(name).unwrap();
            check_decoded(case, &what, value, &a["decoded"]);
            // Reading the one array gives the same value.
            assert_eq!(reader.get_array(i, name).unwrap().get(name), Some(value));
        }
        let mut item = Record::new();
        for name in reader.stored_order(i).unwrap() {
            let a = &arrays[name];
            let shape = u64_list(&a["written_shape"]);
            match (record.get(name).unwrap(), a.get("written_values")) {
                (ValueRef::Str(_), Some(values)) => {
                    let mut flat = Vec::new();
                    flatten_strings(values, &mut flat);
                    let values = flat;
                    let (width, data) = unicode_array(&values);
                    item.push_array(name, DType::Unicode(width), &shape, &data).unwrap();
                }
                (ValueRef::Array(arr), None) => {
                    item.push_array(name, arr.dtype, &shape, arr.data).unwrap();
                }
                (v, w) => panic!("{}: {name}: {v:?} written as {w:?}", case.name),
            }
        }
        given.push(item);
    }

    // The writer is deterministic: the bytes must equal the reference's, whether it is
    // given what reel read (in stored order) or the items as the reference was given them.
    let original = std::fs::read(&path).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let read_back: Vec<Record> = (0..n)
        .map(|i| {
            let mut r = Record::new();
            reader.read_arrays_into(i, &reader.stored_order(i).unwrap(), &mut r).unwrap();
            r
        })
        .collect();
    assert!(
        write_items(&tmp.path().join("a.syr"), &read_back) == original,
        "{}: rewrite differs",
        case.name
    );
    assert!(
        write_items(&tmp.path().join("b.syr"), &given) == original,
        "{}: writing the given items differs",
        case.name
    );

    // The facade recognises it, by extension and by its header alone.
    let sniffed = reel::open(&path).unwrap();
    assert_eq!((sniffed.info().format, sniffed.len()), ("syrah", n));
    let bare = tmp.path().join("no_extension");
    std::fs::copy(&path, &bare).unwrap();
    assert_eq!(reel::sniff(&bare).unwrap(), reel::Format::Syrah, "{}", case.name);
    sweep(case, &path, true);
}

/// A case the reference can write or read only partly: no records, just outcomes.
fn check_quirk(case: &Case) {
    let m = &case.manifest;
    let path = data_file(case, &m["files"]);
    let opened = SyrahReader::open(&path);
    for (probe, want) in case.probes() {
        match probe.as_str() {
            "open" => match (want["outcome"].as_str().unwrap(), &opened) {
                ("ok", Ok(r)) => {
                    assert_eq!(r.num_items(), want["result"]["value"].as_u64().unwrap())
                }
                ("error", Err(e)) => assert_eq!(e.kind(), ErrorKind::Corrupt, "{}: {e}", case.name),
                (o, r) => panic!("{}: open: reference {o}, reel {:?}", case.name, r.as_ref().err()),
            },
            other => panic!("{}: unhandled probe {other}", case.name),
        }
    }
    check_header(case, &path, &m["header"], opened.as_ref().ok());
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("x.syr");
    let mut w = SyrahWriter::create(&out).unwrap();
    match &m["writer_outcome"] {
        // The reference wrote it: a file whose metadata names no arrays can only come from
        // items without arrays, which reel refuses (it could not record the item count).
        Json::String(s) if s == "ok" => {
            assert_eq!(m["header"]["metadata_key_order"], serde_json::json!([]), "{}", case.name);
            let e = w.add_item(&Record::new()).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidInput, "{}: {e}", case.name);
        }
        // The reference failed to write. Without records this is the zero-item dataset:
        // reel refuses to finish it and leaves no file.
        Json::Object(o) if o.get("outcome").and_then(Json::as_str) == Some("error") => {
            assert!(m.get("records").is_none() && m["header"]["file_size"] == 0, "{}", case.name);
            let e = w.finish().unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidInput, "{}: {e}", case.name);
            assert!(!out.exists());
        }
        other => panic!("{}: writer outcome {other} not understood", case.name),
    }
    sweep(case, &path, false);
}

fn check_corrupt(case: &Case) {
    let m = &case.manifest;
    let original = &m["original"];
    known_keys(case, "original", original, &["file", "header", "record_count", "records"]);
    let path = case.dir.join(original["file"]["path"].as_str().unwrap());
    let bytes = std::fs::read(&path).unwrap();
    let mutation = &m["mutation"];
    known_keys(
        case,
        "mutation",
        mutation,
        &["kind", "offset", "old", "new", "xor_mask", "old_size", "new_size"],
    );
    if let Some(at) = mutation.get("offset") {
        let at = at.as_u64().unwrap() as usize;
        assert_eq!(bytes[at] as u64, mutation["new"].as_u64().unwrap(), "{}: mutation", case.name);
        assert_eq!(
            mutation["old"].as_u64().unwrap() ^ mutation["xor_mask"].as_u64().unwrap(),
            mutation["new"].as_u64().unwrap()
        );
    }
    if let Some(size) = mutation.get("new_size") {
        assert_eq!(bytes.len() as u64, size.as_u64().unwrap(), "{}: truncation", case.name);
    }
    let opened = SyrahReader::open(&path);
    for (probe, want) in case.probes() {
        match probe.as_str() {
            "open" => match (want["outcome"].as_str().unwrap(), &opened) {
                ("ok", Ok(r)) => {
                    assert_eq!(r.num_items(), want["result"]["value"].as_u64().unwrap())
                }
                ("error", Err(e)) => assert!(
                    matches!(e.kind(), ErrorKind::Corrupt | ErrorKind::Unsupported),
                    "{}: {e}",
                    case.name
                ),
                (o, r) => panic!("{}: open: reference {o}, reel {:?}", case.name, r.as_ref().err()),
            },
            "get_item" => {
                let r = opened.as_ref().unwrap_or_else(|e| panic!("{}: {e}", case.name));
                for p in want.as_array().unwrap() {
                    known_keys(
                        case,
                        "get_item probe",
                        p,
                        &["index", "outcome", "result", "exception", "exception_module", "message"],
                    );
                    let i = p["index"].as_u64().unwrap();
                    match (p["outcome"].as_str().unwrap(), r.get_item(i)) {
                        ("ok", Ok(got)) => {
                            check_item(case, &format!("get_item {i}"), &got, &p["result"])
                        }
                        ("error", Err(e)) => assert_eq!(e.record(), Some(i), "{}: {e}", case.name),
                        (o, got) => panic!(
                            "{}: get_item {i}: reference {o}, reel {:?}",
                            case.name,
                            got.err()
                        ),
                    }
                }
            }
            other => panic!("{}: unhandled probe {other}", case.name),
        }
    }
    // Where reel opens the damaged file, items whose bytes the mutation did not touch
    // still read as the original did.
    if let Ok(r) = &opened {
        let records = original["records"].as_array().unwrap();
        assert_eq!(records.len() as u64, original["record_count"].as_u64().unwrap());
        let touched = mutation.get("offset").and_then(Json::as_u64);
        for (i, want) in records.iter().enumerate() {
            let i = i as u64;
            let hit = touched.is_some_and(|at| {
                r.arrays_of(i).unwrap().iter().any(|c| {
                    let loc = r.array_location(i, c.name()).unwrap().1;
                    at >= loc.offset && at < loc.end()
                })
            });
            if !hit {
                check_item(case, &format!("original item {i}"), &r.get_item(i).unwrap(), want);
            }
        }
    }
    let _ = conformance::check_backends(|b| open(&path, b));
    sweep(case, &path, false);
}

/// Checks a record against a `{name: descriptor}` map, names in order.
fn check_item(case: &Case, what: &str, got: &Record, want: &Json) {
    let want = want.as_object().unwrap();
    let names: Vec<&str> = got.iter().map(|(n, _)| n).collect();
    assert_eq!(names, want.keys().map(String::as_str).collect::<Vec<_>>(), "{}: {what}", case.name);
    for (name, d) in want {
        let value = got.get(name).unwrap();
        check_value(value, d).unwrap_or_else(|e| panic!("{}: {what} {name}: {e}", case.name));
        if let Some(len) = d.get("utf8_len") {
            assert_eq!(value.as_str().map(str::len), len.as_u64().map(|l| l as usize));
        }
        if let (Some(values), Some(a)) = (d.get("values"), value.as_array()) {
            assert_eq!(&element_values(a.dtype, a.data), values.as_array().unwrap());
        }
    }
}

/// Cuts a file at many lengths. Intact files must have every cut detected (the metadata
/// sits at the end, so every cut damages it); damaged ones only must not panic.
fn sweep(case: &Case, file: &Path, must_detect: bool) {
    let bytes = std::fs::read(file).unwrap();
    let cuts = truncation::sweep(&bytes, &truncation::lengths(bytes.len(), &[]), |b| {
        let files = MemFiles::single("cut.syr", b.to_vec());
        Ok(Box::new(SyrahReader::from_files(files, &Default::default())?))
    });
    if must_detect {
        for (len, cut) in cuts {
            assert!(cut.detected(), "{}: cut at {len} went unnoticed: {cut:?}", case.name);
        }
    }
}

#[test]
fn golden_syrah() {
    let mut datasets = 0;
    let mut corrupt = 0;
    for case in cases("syrah") {
        let m = &case.manifest;
        known_keys(&case, "manifest", m, TOP_KEYS);
        assert_eq!(m["format"], "syrah", "{}", case.name);
        if case.is_corrupt() {
            check_corrupt(&case);
            corrupt += 1;
        } else if m.get("records").is_some() {
            check_dataset(&case);
            datasets += 1;
        } else if m.get("reference_reader_behaviour").is_some() && m.get("writer_outcome").is_some()
        {
            check_quirk(&case);
            datasets += 1;
        } else {
            panic!("{}: a case this harness does not know how to check", case.name);
        }
    }
    summary("syrah", datasets, corrupt);
}
