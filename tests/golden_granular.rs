//! Golden conformance for Granular and bags: every case of `REEL_GOLDEN_DIR/granular/
//! granular-0.24.2` and `…/bags-0.5.1` decodes to its manifest, the writers reproduce the
//! reference's bytes where they are deterministic, corrupt copies and quirks behave as the
//! manifests describe (or as reel documents it deviates), every backend agrees, and no
//! truncation of any golden file panics or goes unnoticed.
//!
//! The harness is driven by the structure of the manifests: a key, probe or column entry it
//! does not know fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use common::{Case, cases, check_bytes, check_value, hex, summary};
use reel::granular::codec::{CodecFamily, CodecSettings, codec_for};
use reel::granular::dtype::parse_dtype;
use reel::granular::{
    BagKind, BagReader, BagsWriter, CodecTable, DatasetFiles, GranularMask, GranularOptions,
    GranularReader, GranularSpec, GranularWriter, GranularWriterOptions, RefsFlavor, ShardFormat,
    ShardSelection, ShardedWriter, ShardedWriterOptions,
};
use reel::testing::{conformance, truncation};
use reel::{
    ErrorKind, MemFiles, Record, RecordRef, RecordSource, RecordSourceExt, ValueRef, WarningKind,
};
use serde_json::Value as Json;

const TREES: [&str; 2] = ["granular/granular-0.24.2", "granular/bags-0.5.1"];

/// Which reference tree a case comes from.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Tree {
    Granular,
    Bags,
}

fn tree_of(key: &str) -> Tree {
    if key.ends_with("bags-0.5.1") { Tree::Bags } else { Tree::Granular }
}

fn opts() -> GranularOptions {
    GranularOptions::default()
}

fn open(path: &Path, o: &GranularOptions) -> reel::Result<GranularReader> {
    GranularReader::open_with(path, o)
}

fn boxed(path: &Path, o: GranularOptions) -> reel::Result<Box<dyn RecordSource>> {
    Ok(Box::new(GranularReader::open_with(path, &o)?))
}

// ---------------------------------------------------------------------------------------
// Comparing records with manifest descriptors
// ---------------------------------------------------------------------------------------

/// Compares a record with a `{"type":"map","entries":[[key, value], …]}` descriptor, in
/// order.
fn check_record_map(r: RecordRef<'_>, want: &Json) -> Result<(), String> {
    assert_eq!(want["type"], "map", "a record probe result is a map");
    let entries = want["entries"].as_array().unwrap();
    if entries.len() != r.len() {
        return Err(format!("{} fields, expected {}", r.len(), entries.len()));
    }
    for (k, e) in entries.iter().enumerate() {
        let (name, value) = r.field(k).unwrap();
        let key = e[0]["value"].as_str().unwrap();
        if name != key {
            return Err(format!("field {k} is {name:?}, expected {key:?}"));
        }
        check_value(value, &e[1]).map_err(|m| format!("{key}: {m}"))?;
    }
    Ok(())
}

/// Checks an array value against the manifest's `msgpack_triple`.
fn check_triple(value: ValueRef<'_>, triple: &Json) -> Result<(), String> {
    let a = value.as_array().ok_or("not an array")?;
    let dt = parse_dtype(triple["dtype_str"].as_str().unwrap()).map_err(|e| e.to_string())?;
    let shape: Vec<u64> =
        triple["shape"].as_array().unwrap().iter().map(|d| d.as_u64().unwrap()).collect();
    if a.dtype != dt.dtype || a.shape != shape || a.data.len() as u64 != triple["data_len"] {
        return Err(format!(
            "array {:?} {:?} {} != triple {triple}",
            a.dtype,
            a.shape,
            a.data.len()
        ));
    }
    Ok(())
}

/// Whether a stored msgpack record holds a big-endian dtype string (`">…"`): such arrays
/// are decoded to little-endian and re-encoded as such, so their bytes cannot round-trip.
fn has_big_endian_dtype(stored: &[u8]) -> bool {
    stored.windows(2).any(|w| (0xa2..=0xa6).contains(&w[0]) && w[1] == b'>')
}

// ---------------------------------------------------------------------------------------
// Datasets
// ---------------------------------------------------------------------------------------

/// Which columns hold images, and whether their pixels are decoder-dependent (JPEG).
fn image_columns(m: &Json) -> Vec<(String, bool)> {
    let mut cols = Vec::new();
    for entry in m.get("images").and_then(Json::as_array).into_iter().flatten() {
        for (k, v) in entry.as_object().unwrap() {
            if k == "index" || cols.iter().any(|(c, _)| c == k) {
                continue;
            }
            let first = if v.is_array() { v.get(0).cloned() } else { Some(v.clone()) };
            let Some(first) = first else { continue };
            cols.push((k.clone(), first.get("decoded_note").is_some()));
        }
    }
    cols
}

fn check_dataset(tree: Tree, case: &Case) {
    let m = &case.manifest;
    let name = &case.name;
    for key in m.as_object().unwrap().keys() {
        assert!(
            [
                "schema",
                "format",
                "set",
                "case",
                "description",
                "reference",
                "generator",
                "files",
                "notes",
                "spec",
                "record_count",
                "layout",
                "records",
                "images",
                "int_encoder_probe",
                "shards",
                "reference_reader_behaviour",
                "record_schema"
            ]
            .contains(&key.as_str()),
            "{name}: unknown manifest key {key}"
        );
    }
    let path = case.dir.clone();
    let reader = open(&path, &opts()).unwrap_or_else(|e| panic!("{name}: open: {e}"));
    let raw = open(&path, &opts().decode(false)).unwrap();
    let images = open(&path, &opts().decode_images(true)).unwrap();
    assert_eq!(reader.len(), m["record_count"].as_u64().unwrap(), "{name}: record count");

    // The spec, as a mapping (manifests list it in the writer's order; files are sorted).
    let spec = GranularSpec::from_pairs(
        m["spec"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string())),
    );
    assert!(reader.spec().same_mapping(&spec), "{name}: spec {:?}", reader.spec());
    let schema = reader.info().schema.clone().unwrap();
    assert!(schema.iter().all(|f| spec.get(&f.name) == Some(f.kind.as_str())));

    let outcomes =
        conformance::check_backend_list(&reel::all_backends(), |b| boxed(&path, opts().backend(b)))
            .unwrap_or_else(|k| panic!("{name}: open failed ({k:?})"));
    let image_cols = image_columns(m);

    for rec in m["records"].as_array().unwrap() {
        let i = rec["index"].as_u64().unwrap();
        let got = outcomes[i as usize].as_ref().ok();
        for key in rec.as_object().unwrap().keys() {
            assert!(
                ["index", "columns", "refs", "refs_hex", "reader"].contains(&key.as_str()),
                "{name}: unknown record key {key}"
            );
        }
        if let Some(probe) = rec.get("reader") {
            check_reader_probe(case, &path, i, probe, got.map(Record::view));
        }
        let raw_rec = raw.read(i).unwrap();
        let img_rec = images.read(i).unwrap();
        for (key, col) in rec["columns"].as_object().unwrap() {
            let image = image_cols.iter().find(|(c, _)| c == key);
            for (what, want) in col.as_object().unwrap() {
                let ctx = format!("{name}: record {i} key {key} {what}");
                match what.as_str() {
                    "decoded" => {
                        let (value, shape_only) = match image {
                            Some((_, jpeg)) => (img_rec.get(key).unwrap(), *jpeg),
                            None => {
                                let r = got.unwrap_or_else(|| panic!("{ctx}: record failed"));
                                (r.get(key).unwrap(), false)
                            }
                        };
                        check_decoded(value, want, shape_only)
                            .unwrap_or_else(|d| panic!("{ctx}: {d}"));
                    }
                    "stored" => {
                        let stored = raw_rec.get(key).unwrap();
                        match (stored, want) {
                            (ValueRef::List(items), Json::Array(wants)) => {
                                assert_eq!(items.len(), wants.len(), "{ctx}");
                                for (a, w) in items.iter().zip(wants) {
                                    check_bytes(a.as_bytes().unwrap(), w)
                                        .unwrap_or_else(|d| panic!("{ctx}: {d}"));
                                }
                            }
                            (v, w) => check_bytes(v.as_bytes().unwrap(), w)
                                .unwrap_or_else(|d| panic!("{ctx}: {d}")),
                        }
                        if image.is_some() {
                            // Kept encoded by default: the field is the stored bytes.
                            let r = got.unwrap();
                            assert!(r.get(key).unwrap() == stored, "{ctx}: image bytes");
                        }
                    }
                    "msgpack_triple" => check_triple(got.unwrap().get(key).unwrap(), want)
                        .unwrap_or_else(|d| panic!("{ctx}: {d}")),
                    "bag_indices" => check_bag_indices(&reader, i, key, want, &ctx),
                    other => panic!("{ctx}: unknown column entry {other}"),
                }
            }
        }
        if let Some(refs_hex) = rec.get("refs_hex") {
            let refs = BagReader::open(path.join("refs.bag")).unwrap().get(i).unwrap();
            assert_eq!(hex(&refs), refs_hex.as_str().unwrap(), "{name}: refs {i}");
            check_refs(&reader, i, &rec["refs"], name);
        }
    }
    if let Some(layout) = m.get("layout") {
        check_layout(tree, case, &reader, layout);
    }
    if let Some(shards) = m.get("shards").and_then(Json::as_array) {
        assert_eq!(reader.shard_count(), shards.len(), "{name}: shard count");
        for (k, s) in shards.iter().enumerate() {
            let dir = &reader.dataset_files().shards()[k].dir;
            assert!(dir.ends_with(s["dir"].as_str().unwrap()), "{name}: shard order");
            assert_eq!(reader.shard_len(k), s["record_count"].as_u64(), "{name}: shard {k}");
        }
        // shardstart/shardstep select shards 1, 3, … of the same root.
        if shards.len() > 1 {
            let odd = open(&path, &opts().shards(1, 2)).unwrap();
            let want: u64 =
                shards.iter().skip(1).step_by(2).map(|s| s["record_count"].as_u64().unwrap()).sum();
            assert_eq!(odd.len(), want, "{name}: shard selection");
            let first = odd.read(0).unwrap();
            let global = shards[0]["record_count"].as_u64().unwrap();
            assert!(first == reader.read(global).unwrap(), "{name}: shard selection content");
        }
    }
    if let Some(probes) = m.get("reference_reader_behaviour") {
        for (probe, want) in probes.as_object().unwrap() {
            check_dataset_probe(case, &reader, probe, want);
        }
    }
    if let Some(probe) = m.get("int_encoder_probe") {
        check_int_probe(tree, probe, name);
    }
    if !image_cols.is_empty() {
        check_images(case, &images, &raw, &image_cols);
    }

    // The facade recognises it.
    let sniffed = reel::open(&path).unwrap();
    assert_eq!((sniffed.info().format, sniffed.len()), ("granular", reader.len()));

    check_writers(tree, case, &reader);
    check_masks(case, &reader, &outcomes);
    sweep_dataset(case, true);
}

fn check_decoded(value: ValueRef<'_>, want: &Json, shape_only: bool) -> Result<(), String> {
    if !shape_only {
        return check_value(value, want);
    }
    if want["type"] == "list" {
        let (l, w) = (value.as_list().ok_or("not a list")?, want["items"].as_array().unwrap());
        if l.len() != w.len() {
            return Err(format!("{} items, expected {}", l.len(), w.len()));
        }
        return l.iter().zip(w).try_for_each(|(v, w)| check_decoded(v, w, true));
    }
    // JPEG pixels depend on the decoder: dtype, shape and size must match, not the hash.
    let a = value.as_array().ok_or("not an array")?;
    let shape: Vec<u64> =
        want["shape"].as_array().unwrap().iter().map(|d| d.as_u64().unwrap()).collect();
    if a.dtype.name() != want["dtype"].as_str().unwrap() || a.shape != shape {
        return Err(format!("{} {:?} != {want}", a.dtype, a.shape));
    }
    Ok(())
}

/// `bag_indices`: where the datapoint's values sit in `<key>.bag`, from `refs.bag`.
fn check_bag_indices(reader: &GranularReader, i: u64, key: &str, want: &Json, ctx: &str) {
    let want: Vec<u64> = want.as_array().unwrap().iter().map(|x| x.as_u64().unwrap()).collect();
    let avail = reader.available(i).unwrap();
    let a = avail.iter().find(|a| &*a.key == key).unwrap();
    match &a.items {
        Some(r) => assert_eq!(want.len() as u64, r.end - r.start, "{ctx}"),
        None => assert_eq!(want.len(), 1, "{ctx}"),
    }
}

/// The `refs` entry: an index per scalar key, `[start, count]` or `[]` per sequence key.
fn check_refs(reader: &GranularReader, i: u64, refs: &Json, name: &str) {
    let avail = reader.available(i).unwrap();
    let mut keys: Vec<&str> = reader.spec().keys().collect();
    keys.sort();
    for (j, key) in keys.iter().enumerate() {
        let a = avail.iter().find(|a| &*a.key == *key).unwrap();
        match (&refs[j], &a.items) {
            (Json::Number(_), None) => {}
            (Json::Array(v), Some(r)) if v.is_empty() => assert_eq!(r.end, 0, "{name}"),
            (Json::Array(v), Some(r)) => {
                assert_eq!(v[1].as_u64(), Some(r.end), "{name}: refs {i} {key}")
            }
            (w, got) => panic!("{name}: refs {i} {key}: {w} vs {got:?}"),
        }
    }
}

fn check_layout(tree: Tree, case: &Case, reader: &GranularReader, layout: &Json) {
    let name = &case.name;
    for key in layout.as_object().unwrap().keys() {
        assert!(
            ["spec_json_text", "bags"].contains(&key.as_str()),
            "{name}: unknown layout key {key}"
        );
    }
    if let Some(text) = layout.get("spec_json_text") {
        let file = std::fs::read_to_string(case.dir.join("spec.json")).unwrap();
        assert_eq!(file, text.as_str().unwrap(), "{name}: spec.json");
        assert_eq!(
            reader.spec().to_json_bytes(),
            file.as_bytes(),
            "{name}: spec.json as reel writes it"
        );
    }
    for b in layout["bags"].as_array().unwrap() {
        let bag = b["bag"].as_str().unwrap();
        let key = bag.strip_suffix(".bag").unwrap();
        let table =
            reader.bag_table(0, key).unwrap_or_else(|| panic!("{name}: no table for {bag}"));
        assert_eq!(table.len(), b["record_count"].as_u64().unwrap(), "{name}: {bag} count");
        let file_size = std::fs::metadata(case.dir.join(bag)).unwrap().len();
        for (k, v) in b.as_object().unwrap() {
            match k.as_str() {
                "bag" | "record_count" => {}
                "idx" => assert_eq!(v.as_str().unwrap(), format!("{key}.idx")),
                "bag_size" | "file_size" => {
                    assert_eq!(file_size, v.as_u64().unwrap(), "{name}: {bag} size")
                }
                "idx_size" => {
                    let idx = std::fs::metadata(case.dir.join(format!("{key}.idx"))).unwrap().len();
                    assert_eq!(idx, v.as_u64().unwrap());
                }
                "record_bytes_end" => {
                    assert_eq!(table.data_len(), v.as_u64().unwrap(), "{name}: {bag} D")
                }
                "end_offsets_u64le" => check_offsets(table.ends(), v, name),
                "start_offsets_u64le" => {
                    assert_eq!(table.kind(), BagKind::SingleV1, "{name}: {bag} is a v1 bag");
                    check_offsets(&table.starts(), v, name)
                }
                other => panic!("{name}: unknown bag layout key {other}"),
            }
        }
        let want_kind = if tree == Tree::Bags { BagKind::SingleV1 } else { BagKind::TwoFile };
        assert_eq!(table.kind(), want_kind, "{name}: {bag}");
    }
}

fn check_offsets(ours: &[u64], want: &Json, name: &str) {
    match want {
        Json::Array(v) => {
            let v: Vec<u64> = v.iter().map(|x| x.as_u64().unwrap()).collect();
            assert_eq!(ours, &v[..], "{name}: offsets");
        }
        Json::Object(o) => {
            assert_eq!(ours.len() as u64, o["count"].as_u64().unwrap(), "{name}: offset count");
            let bytes: Vec<u8> = ours.iter().flat_map(|x| x.to_le_bytes()).collect();
            check_bytes(&bytes, want).unwrap_or_else(|d| panic!("{name}: offsets {d}"));
        }
        other => panic!("{name}: offsets {other}"),
    }
}

/// A per-record `reader` probe (quirk cases): the reference's result of `reader[i]`.
fn check_reader_probe(case: &Case, path: &Path, i: u64, probe: &Json, lax: Option<RecordRef<'_>>) {
    let name = &case.name;
    let strict = open(path, &opts().strict_map_keys(true)).unwrap();
    match probe["outcome"].as_str().unwrap() {
        "ok" => {
            let r = strict.read(i).unwrap_or_else(|e| panic!("{name}: record {i}: {e}"));
            check_record_map(r.view(), &probe["result"])
                .unwrap_or_else(|d| panic!("{name}: record {i}: {d}"));
            check_record_map(lax.unwrap(), &probe["result"]).unwrap();
        }
        "error" => {
            let e = strict.read(i).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Corrupt, "{name}: record {i}: {e}");
            let message = probe["message"].as_str().unwrap();
            if message.contains("strict_map_key") {
                // reel reads such maps by default; they re-encode to the stored bytes.
                let r = lax.unwrap_or_else(|| {
                    panic!("{name}: record {i} should read without strict keys")
                });
                let raw = open(path, &opts().decode(false)).unwrap().read(i).unwrap();
                for (key, t) in open(path, &opts()).unwrap().spec().iter() {
                    let codec = codec_for(
                        t,
                        &CodecTable::new(),
                        &CodecSettings::new(CodecFamily::Granular),
                    )
                    .unwrap();
                    let mut again = Vec::new();
                    codec.encode(r.get(key).unwrap(), &mut again).unwrap();
                    assert_eq!(
                        &again[..],
                        raw.bytes(key).unwrap(),
                        "{name}: record {i} {key} re-encoded"
                    );
                }
            } else {
                assert!(lax.is_none(), "{name}: record {i} reads although the reference fails");
            }
        }
        other => panic!("{name}: unknown outcome {other}"),
    }
}

/// Top-level probes of non-corrupt cases.
fn check_dataset_probe(case: &Case, reader: &GranularReader, probe: &str, want: &Json) {
    let name = &case.name;
    if let Some(key) = probe.strip_prefix("read_key_").and_then(|p| p.strip_suffix("_only")) {
        let strict = open(&case.dir, &opts().strict_map_keys(true)).unwrap();
        let mask = GranularMask::new().key(key);
        for (i, p) in want.as_array().unwrap().iter().enumerate() {
            assert_eq!(p["outcome"], "ok", "{name}: {probe}");
            for r in [reader, &strict] {
                let got = r
                    .read_masked(i as u64, &mask)
                    .unwrap_or_else(|e| panic!("{name}: {probe} {i}: {e}"));
                check_record_map(got.view(), &p["result"])
                    .unwrap_or_else(|d| panic!("{name}: {probe} {i}: {d}"));
            }
        }
        return;
    }
    match probe {
        // bags 0.5.1's sharded reader checks 0 <= i <= len and returns None for i == len;
        // reel reports the index as out of range (documented on GranularReader).
        "index_equal_to_length" => {
            assert_eq!(want["outcome"], "ok");
            assert_eq!(want["result"]["type"], "null");
            assert_eq!(reader.read(reader.len()).unwrap_err().kind(), ErrorKind::OutOfRange);
        }
        other => panic!("{name}: unknown probe {other}"),
    }
}

fn check_int_probe(tree: Tree, probe: &Json, name: &str) {
    let family = if tree == Tree::Bags { CodecFamily::Bags } else { CodecFamily::Granular };
    let codec = codec_for("int", &CodecTable::new(), &CodecSettings::new(family)).unwrap();
    for p in probe.as_array().unwrap() {
        let v = &p["value"];
        let value = match v.as_i64() {
            Some(i) => ValueRef::Int(i),
            None => ValueRef::UInt(v.as_u64().unwrap()),
        };
        let mut bytes = Vec::new();
        let r = codec.encode(value, &mut bytes);
        match p["outcome"].as_str().unwrap() {
            "ok" => {
                r.unwrap();
                check_bytes(&bytes, &p["result"])
                    .unwrap_or_else(|d| panic!("{name}: int {v}: {d}"));
            }
            // Where the reference raises, reel either refuses too or writes a form the
            // reference's decoder reads back as the same value.
            "error" => {
                if r.is_ok() {
                    let mut rec = Record::new();
                    let mut out = rec.out();
                    let span = out.append(&bytes);
                    let back = codec.decode(span, &mut out).unwrap();
                    out.push("v".into(), back);
                    assert!(rec.get("v").unwrap() == value, "{name}: int {v} does not read back");
                }
            }
            other => panic!("{name}: unknown outcome {other}"),
        }
    }
}

fn check_images(
    case: &Case,
    images: &GranularReader,
    raw: &GranularReader,
    cols: &[(String, bool)],
) {
    let name = &case.name;
    for entry in case.manifest["images"].as_array().unwrap() {
        let i = entry["index"].as_u64().unwrap();
        let decoded = images.read(i).unwrap();
        let stored = raw.read(i).unwrap();
        for (key, _) in cols {
            let (d, s) = (decoded.get(key).unwrap(), stored.get(key).unwrap());
            let pairs: Vec<(ValueRef<'_>, ValueRef<'_>, &Json)> = match (&entry[key], d, s) {
                (Json::Array(e), ValueRef::List(dl), ValueRef::List(sl)) => {
                    dl.iter().zip(sl.iter()).zip(e).map(|((a, b), c)| (a, b, c)).collect()
                }
                (e, d, s) => vec![(d, s, e)],
            };
            for (d, s, e) in pairs {
                for (k, v) in e.as_object().unwrap() {
                    let a = d.as_array().unwrap();
                    match k.as_str() {
                        "encoded" => check_bytes(s.as_bytes().unwrap(), v).unwrap(),
                        "pil_format" => {
                            let magic: &[u8] = if v == "PNG" { b"\x89PNG" } else { b"\xff\xd8" };
                            assert!(
                                s.as_bytes().unwrap().starts_with(magic),
                                "{name}: {key} format"
                            );
                        }
                        "pil_mode" => {
                            // Pillow's mode → numpy's shape: grey images are 2-D.
                            let (rank, channels) = match v.as_str().unwrap() {
                                "L" | "I;16" | "I;16B" => (2, 1),
                                "LA" => (3, 2),
                                "RGB" => (3, 3),
                                "RGBA" => (3, 4),
                                m => panic!("{name}: mode {m}"),
                            };
                            let got = if a.shape.len() == 2 { 1 } else { a.shape[2] as usize };
                            assert_eq!(
                                (a.shape.len(), got),
                                (rank, channels),
                                "{name}: {key} mode"
                            );
                        }
                        "decoded_shape" => {
                            let shape: Vec<u64> =
                                v.as_array().unwrap().iter().map(|x| x.as_u64().unwrap()).collect();
                            assert_eq!(a.shape, &shape[..], "{name}: {key} shape");
                        }
                        "decoded_dtype" => assert_eq!(a.dtype.name(), v.as_str().unwrap()),
                        "decoded_sha256" => {
                            if e.get("decoded_note").is_none() {
                                assert_eq!(
                                    common::sha256_hex(a.data),
                                    v.as_str().unwrap(),
                                    "{name}: {key} pixels"
                                );
                            }
                        }
                        "source_pixels" => {
                            if e["decoded_equals_source"] == true {
                                check_value(d, v).unwrap_or_else(|m| panic!("{name}: {key}: {m}"));
                            }
                        }
                        "decoded_note" | "decoded_equals_source" => {}
                        other => panic!("{name}: unknown image entry {other}"),
                    }
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Writers
// ---------------------------------------------------------------------------------------

fn golden_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap() != "expected.json")
        .collect();
    v.sort();
    v
}

/// Every file of `a` (recursively) equals the same file of `b`, and `b` has no others.
fn assert_same_tree(a: &Path, b: &Path, what: &str) {
    let (fa, fb) = (golden_files(a), golden_files(b));
    let names =
        |v: &[PathBuf]| v.iter().map(|p| p.file_name().unwrap().to_owned()).collect::<Vec<_>>();
    assert_eq!(names(&fa), names(&fb), "{what}: file list");
    for (x, y) in fa.iter().zip(&fb) {
        if x.is_dir() {
            assert_same_tree(x, y, what);
        } else {
            assert!(
                std::fs::read(x).unwrap() == std::fs::read(y).unwrap(),
                "{what}: {} differs",
                x.display()
            );
        }
    }
}

/// Writes `source` to `out` with the writer for the tree (encoding or not).
fn write_dataset(tree: Tree, case: &Case, source: &GranularReader, out: &Path, encode: bool) {
    let spec = source.spec();
    let records = (0..source.len()).map(|i| source.read(i).unwrap());
    let shards = case.manifest.get("shards").and_then(Json::as_array);
    if let Some(shards) = shards {
        let format = if tree == Tree::Bags {
            ShardFormat::Refs(RefsFlavor::Bags051)
        } else {
            ShardFormat::Indexed
        };
        let mut o = ShardedWriterOptions::default()
            .shard_len(shards[0]["record_count"].as_u64().unwrap())
            .format(format);
        o.writer = GranularWriterOptions::default().encode(encode);
        let mut w = ShardedWriter::create(out, spec, &o).unwrap();
        for r in records {
            w.append(r.view()).unwrap();
        }
        w.finish().unwrap();
    } else if tree == Tree::Bags {
        let mut w =
            BagsWriter::create_with(out, spec, RefsFlavor::Bags051, &CodecTable::new(), encode)
                .unwrap();
        for r in records {
            w.append(r.view()).unwrap();
        }
        w.finish().unwrap();
    } else {
        let o = GranularWriterOptions::default().encode(encode);
        let mut w = GranularWriter::create_with(out, spec, &o).unwrap();
        for r in records {
            w.append(r.view()).unwrap();
        }
        w.finish().unwrap();
    }
}

/// The values of a field: the items of a list, or the value itself.
fn items(v: ValueRef<'_>) -> Vec<ValueRef<'_>> {
    match v {
        ValueRef::List(l) => l.iter().collect(),
        v => vec![v],
    }
}

fn check_writers(tree: Tree, case: &Case, reader: &GranularReader) {
    let name = &case.name;
    let tmp = tempfile::tempdir().unwrap();
    // Stored bytes in, stored bytes out: every file identical.
    let raw = open(&case.dir, &opts().decode(false)).unwrap();
    let out = tmp.path().join("raw");
    write_dataset(tree, case, &raw, &out, false);
    assert_same_tree(&case.dir, &out, &format!("{name}: raw round trip"));

    // Decoded values in, encoded by reel: identical except arrays stored big-endian (read
    // as little-endian values, written back as such).
    let out = tmp.path().join("decoded");
    write_dataset(tree, case, reader, &out, true);
    let again = open(&out, &opts().decode(false)).unwrap();
    assert_eq!(again.len(), raw.len());
    let mut differing = 0;
    for i in 0..raw.len() {
        let (a, b) = (raw.read(i).unwrap(), again.read(i).unwrap());
        if a == b {
            continue;
        }
        for (key, _) in reader.spec().iter() {
            let (x, y) = (a.get(key).unwrap(), b.get(key).unwrap());
            if x == y {
                continue;
            }
            let stored =
                x.as_bytes().unwrap_or_else(|| panic!("{name}: {i} {key}: sequences differ"));
            assert!(
                has_big_endian_dtype(stored),
                "{name}: record {i} key {key} re-encoded differently"
            );
            let decoded = open(&out, &opts()).unwrap().read(i).unwrap();
            assert!(
                decoded.get(key).unwrap() == reader.read(i).unwrap().get(key).unwrap(),
                "{name}: {i} {key}"
            );
            differing += 1;
        }
    }
    if differing == 0 {
        assert_same_tree(&case.dir, &out, &format!("{name}: decoded round trip"));
    }

    // Images decoded to pixels and encoded by reel read back: PNG exactly, JPEG closely.
    if case.manifest.get("images").is_some() && case.manifest.get("shards").is_none() {
        let pixels = open(&case.dir, &opts().decode_images(true)).unwrap();
        let out = tmp.path().join("pixels");
        write_dataset(tree, case, &pixels, &out, true);
        let back = open(&out, &opts().decode_images(true)).unwrap();
        for i in 0..pixels.len() {
            let (a, b) = (pixels.read(i).unwrap(), back.read(i).unwrap());
            for ((key, x), (_, y)) in a.iter().zip(b.iter()) {
                let t = reader.spec().get(key).unwrap();
                for (x, y) in items(x).into_iter().zip(items(y)) {
                    match (x, y) {
                        (ValueRef::Array(p), ValueRef::Array(q)) if t.starts_with("jp") => {
                            assert_eq!(p.shape, q.shape, "{name}: {i} {key}");
                            let diff: u64 =
                                p.data.iter().zip(q.data).map(|(u, v)| u.abs_diff(*v) as u64).sum();
                            assert!(
                                diff <= 24 * p.data.len() as u64,
                                "{name}: {i} {key}: JPEG re-encoding drifted"
                            );
                        }
                        (x, y) => {
                            assert!(x == y, "{name}: {i} {key}: pixels differ after re-encoding")
                        }
                    }
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Masks
// ---------------------------------------------------------------------------------------

/// Reading keys one at a time (and item ranges of sequences) gives the same values as
/// whole reads.
fn check_masks(case: &Case, reader: &GranularReader, outcomes: &[conformance::Outcome]) {
    let keys: Vec<String> = reader.spec().keys().map(str::to_string).collect();
    for (i, o) in outcomes.iter().enumerate() {
        let Ok(full) = o else { continue };
        let avail = reader.available(i as u64).unwrap();
        for (key, a) in keys.iter().zip(&avail) {
            let one = reader.read_masked(i as u64, &GranularMask::new().key(key)).unwrap();
            assert_eq!(one.len(), 1);
            assert!(one.get(key).unwrap() == full.get(key).unwrap(), "{}: {i} {key}", case.name);
            if let Some(r) = &a.items {
                let n = r.end;
                let whole = full.get(key).unwrap().as_list().unwrap();
                for (s, e) in [(0, n), (1, 3), (n, n + 2), (2, 1)] {
                    let part = reader
                        .read_masked(i as u64, &GranularMask::new().items(key, s..e))
                        .unwrap();
                    let part = part.get(key).unwrap().as_list().unwrap();
                    let (lo, hi) = (s.min(n) as usize, e.min(n).max(s.min(n)) as usize);
                    assert_eq!(part.len(), hi - lo, "{}: {i} {key} {s}..{e}", case.name);
                    for (k, v) in part.iter().enumerate() {
                        assert!(v == whole.get(lo + k).unwrap());
                    }
                }
            }
        }
    }
    // A range read equals the single reads, and a mask of no keys reads empty records.
    let batch = reader.read_range(0..reader.len() + 5, None).unwrap();
    assert_eq!(batch.len() as u64, reader.len());
    for (k, r) in batch.iter().enumerate() {
        if let Ok(full) = &outcomes[k] {
            assert!(r == full.view());
        }
    }
    if reader.len() > 0 {
        assert!(reader.read_masked(0, &GranularMask::new()).unwrap().is_empty());
    }
    assert_eq!(
        reader.read_masked(0, &GranularMask::new().key("no such key")).unwrap_err().kind(),
        ErrorKind::NotFound
    );
}

// ---------------------------------------------------------------------------------------
// Truncation sweeps
// ---------------------------------------------------------------------------------------

/// Lengths to cut a file of `len` bytes at: all for small files; otherwise the first and
/// last 48, 48 spread over the file, and both sides of 24 record boundaries spread over
/// the table. (Readers check a record's range against the file before decoding it, so
/// cuts between two boundaries of a two-file bag all behave alike.)
fn cut_lengths(len: usize, boundaries: &[u64]) -> Vec<usize> {
    if len <= 512 {
        return (0..len).collect();
    }
    let mut v: Vec<usize> = (0..48).chain(len - 48..len).collect();
    v.extend((0..len).step_by(len / 48));
    for &b in boundaries.iter().step_by(boundaries.len().div_ceil(24).max(1)) {
        let b = b as usize;
        v.extend([b.saturating_sub(1), b, b + 1]);
    }
    v.retain(|&l| l < len);
    v.sort_unstable();
    v.dedup();
    v
}

/// Cuts every file of the dataset (one at a time) and reads what is left from memory.
/// Intact golden datasets must have every cut noticed, except cuts that leave a valid,
/// shorter dataset (a lone column's index cut at an entry boundary), which must show as
/// unindexed trailing data unless only empty records were cut away.
fn sweep_dataset(case: &Case, must_detect: bool) {
    let name = &case.name;
    let Ok(desc) = DatasetFiles::discover(&case.dir, None, ShardSelection::default()) else {
        return;
    };
    let originals: Vec<(PathBuf, Arc<[u8]>)> =
        desc.paths().iter().map(|p| (p.clone(), Arc::from(std::fs::read(p).unwrap()))).collect();
    let whole = GranularReader::from_files(desc.clone(), MemFiles::new(originals.clone()), &opts());
    let full_len = whole.as_ref().map_or(0, |r| r.len());
    for (n, (path, bytes)) in originals.iter().enumerate() {
        let boundaries: Vec<u64> = whole
            .as_ref()
            .ok()
            .and_then(|r| {
                let key = path.file_stem()?.to_str()?;
                let shard = desc.shards().iter().position(|s| path.starts_with(&s.dir))?;
                Some(r.bag_table(shard, key)?.ends().to_vec())
            })
            .unwrap_or_default();
        let lengths = cut_lengths(bytes.len(), &boundaries);
        let cuts = truncation::sweep(bytes, &lengths, |b| {
            let mut files = originals.clone();
            files[n].1 = Arc::from(b);
            Ok(Box::new(GranularReader::from_files(desc.clone(), MemFiles::new(files), &opts())?))
        });
        if !must_detect {
            continue;
        }
        for (len, cut) in cuts {
            if cut.detected() {
                continue;
            }
            // Undetectable by construction: a lone column's index cut at an entry boundary.
            let is_idx = path.extension().is_some_and(|e| e == "idx");
            assert!(
                is_idx && len % 8 == 0,
                "{name}: {} cut at {len} went unnoticed: {cut:?}",
                path.display()
            );
            let mut files = originals.clone();
            files[n].1 = Arc::from(&bytes[..len]);
            let r =
                GranularReader::from_files(desc.clone(), MemFiles::new(files), &opts()).unwrap();
            let warned = r.info().warnings.iter().any(|w| w.kind == WarningKind::TrailingBytes);
            let ends = whole
                .as_ref()
                .unwrap()
                .bag_table(0, path.file_stem().unwrap().to_str().unwrap())
                .unwrap()
                .ends()
                .to_vec();
            let kept = len / 8;
            let cut_bytes =
                ends.last().copied().unwrap_or(0) - if kept == 0 { 0 } else { ends[kept - 1] };
            assert!(
                warned || cut_bytes == 0,
                "{name}: {} cut at {len}: no trailing-data warning",
                path.display()
            );
            assert!(r.len() < full_len);
        }
    }
}

/// Cuts a lone bag file.
fn sweep_bag(name: &str, path: &Path, two_file: bool, must_detect: bool) {
    let data = std::fs::read(path).unwrap();
    let idx = if two_file {
        std::fs::read(reel::granular::index_path(path)).unwrap()
    } else {
        Vec::new()
    };
    let open_with = |d: &[u8], x: &[u8]| -> reel::Result<Box<dyn RecordSource>> {
        let mut files = MemFiles::single("data.bag", d.to_vec());
        if two_file {
            files.push("data.idx", x.to_vec());
        }
        Ok(Box::new(BagReader::from_files(files, two_file, &reel::Limits::strict())?))
    };
    let whole = BagReader::from_files(
        {
            let mut f = MemFiles::single("data.bag", data.clone());
            if two_file {
                f.push("data.idx", idx.clone());
            }
            f
        },
        two_file,
        &reel::Limits::strict(),
    );
    let ends = whole.as_ref().map(|r| r.table().ends().to_vec()).unwrap_or_default();
    let cuts = truncation::sweep(&data, &cut_lengths(data.len(), &ends), |b| open_with(b, &idx));
    if must_detect {
        for (len, cut) in &cuts {
            // A 0-byte file is a valid, empty single-file (v2) bag.
            let valid_empty = !two_file && *len == 0;
            assert!(
                cut.detected() || valid_empty,
                "{name}: data cut at {len} went unnoticed: {cut:?}"
            );
        }
    }
    if two_file {
        let cuts = truncation::sweep(&idx, &cut_lengths(idx.len(), &[]), |b| open_with(&data, b));
        for (len, cut) in cuts {
            if must_detect && !cut.detected() {
                // A shorter, valid bag: the data it no longer indexes shows as trailing bytes.
                assert_eq!(len % 8, 0, "{name}: index cut at {len} went unnoticed");
                let r = BagReader::from_files(
                    {
                        let mut f = MemFiles::single("data.bag", data.clone());
                        f.push("data.idx", idx[..len].to_vec());
                        f
                    },
                    true,
                    &reel::Limits::strict(),
                )
                .unwrap();
                let cut_bytes = ends.last().copied().unwrap_or(0) - r.table().data_len();
                let warned = r.info().warnings.iter().any(|w| w.kind == WarningKind::TrailingBytes);
                assert!(warned || cut_bytes == 0, "{name}: index cut at {len}: no warning");
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Raw bags
// ---------------------------------------------------------------------------------------

fn check_raw_bag(tree: Tree, case: &Case) {
    let m = &case.manifest;
    let name = &case.name;
    for key in m.as_object().unwrap().keys() {
        assert!(
            [
                "schema",
                "format",
                "set",
                "case",
                "description",
                "reference",
                "generator",
                "files",
                "notes",
                "layout",
                "record_count",
                "records",
                "slice_read_1_4",
                "reference_reader_behaviour"
            ]
            .contains(&key.as_str()),
            "{name}: unknown manifest key {key}"
        );
    }
    let layout = &m["layout"];
    let path = case.dir.join(layout["bag"].as_str().unwrap());
    let two_file = layout.get("idx").is_some();
    let reader = BagReader::open(&path).unwrap();
    assert_eq!(
        reader.kind(),
        if two_file { BagKind::TwoFile } else { BagKind::SingleV1 },
        "{name}"
    );
    assert_eq!(reader.len(), m["record_count"].as_u64().unwrap());
    let outcomes = conformance::check_backend_list(&reel::all_backends(), |b| {
        let o = reel::granular::BagOptions { backend: b, ..Default::default() };
        Ok(Box::new(BagReader::open_with(&path, &o)?) as Box<dyn RecordSource>)
    })
    .unwrap();
    let mut records = Vec::new();
    for e in m["records"].as_array().unwrap() {
        let i = e["index"].as_u64().unwrap() as usize;
        let r = outcomes[i].as_ref().unwrap().bytes("data").unwrap().to_vec();
        check_bytes(&r, &e["content"]).unwrap_or_else(|d| panic!("{name}: {i}: {d}"));
        records.push(r);
    }
    for (k, v) in layout.as_object().unwrap() {
        match k.as_str() {
            "bag" | "idx" => {}
            "bag_size" | "file_size" => {
                assert_eq!(std::fs::metadata(&path).unwrap().len(), v.as_u64().unwrap())
            }
            "idx_size" => assert_eq!(reader.table().len() * 8, v.as_u64().unwrap()),
            "record_count" => assert_eq!(reader.len(), v.as_u64().unwrap()),
            "record_bytes_end" => assert_eq!(reader.table().data_len(), v.as_u64().unwrap()),
            "end_offsets_u64le" => check_offsets(reader.table().ends(), v, name),
            "start_offsets_u64le" => check_offsets(&reader.table().starts(), v, name),
            other => panic!("{name}: unknown layout key {other}"),
        }
    }
    if let Some(slice) = m.get("slice_read_1_4") {
        let got = reader.get_range(1..4).unwrap();
        let want = slice.as_array().unwrap();
        assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(want) {
            check_bytes(g, w).unwrap();
        }
    }
    if let Some(probes) = m.get("reference_reader_behaviour") {
        for (probe, want) in probes.as_object().unwrap() {
            match probe.as_str() {
                "len" => {
                    assert_eq!(Some(reader.len()), want["result"]["value"].as_u64(), "{name}: len")
                }
                other => panic!("{name}: unknown probe {other}"),
            }
        }
    }
    // The writers reproduce the file(s).
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("data.bag");
    if two_file {
        let mut w = reel::granular::BagWriter::open(&out).unwrap();
        for r in &records {
            w.append(r);
        }
        w.sync().unwrap();
        assert!(std::fs::read(&out).unwrap() == std::fs::read(&path).unwrap(), "{name}: bag bytes");
        assert!(
            std::fs::read(tmp.path().join("data.idx")).unwrap()
                == std::fs::read(case.dir.join(layout["idx"].as_str().unwrap())).unwrap(),
            "{name}: idx bytes"
        );
    } else {
        let kind = if tree == Tree::Bags { BagKind::SingleV1 } else { BagKind::SingleV2 };
        let mut w = reel::granular::SingleFileBagWriter::create(&out, kind).unwrap();
        for r in &records {
            w.append(r).unwrap();
        }
        w.finish().unwrap();
        assert!(std::fs::read(&out).unwrap() == std::fs::read(&path).unwrap(), "{name}: bag bytes");
    }
    assert_eq!(reel::open(&path).unwrap().len(), reader.len(), "{name}: facade");
    sweep_bag(name, &path, two_file, true);
}

// ---------------------------------------------------------------------------------------
// Datasets the reference cannot open
// ---------------------------------------------------------------------------------------

/// bags 0.5.1 with zero datapoints: no spec.json, so neither the reference nor reel can
/// open it; reel's bags writer writes the same bags (and a spec.json, documented).
fn check_unopenable(case: &Case) {
    let m = &case.manifest;
    let name = &case.name;
    let want = &m["reference_reader_behaviour"]["open"];
    assert_eq!(want["outcome"], "error", "{name}");
    assert!(want["exception"] == "FileNotFoundError", "{name}: {want}");
    let e = open(&case.dir, &opts()).err().unwrap();
    assert_eq!(e.kind(), ErrorKind::NotFound, "{name}: {e}");
    assert!(reel::open(&case.dir).is_err());
    let spec = GranularSpec::from_pairs(
        m["spec_passed_to_writer"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string())),
    );
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("empty");
    BagsWriter::create(&out, &spec, RefsFlavor::Bags051).unwrap().finish().unwrap();
    for f in m["files"].as_array().unwrap() {
        let p = f["path"].as_str().unwrap();
        assert!(
            std::fs::read(out.join(p)).unwrap() == std::fs::read(case.dir.join(p)).unwrap(),
            "{name}: {p}"
        );
    }
    assert_eq!(open(&out, &opts()).unwrap().len(), 0, "{name}: reel's empty dataset opens");
    for l in m["layout"]["bags"].as_array().unwrap() {
        assert_eq!(l["record_count"], 0);
    }
}

// ---------------------------------------------------------------------------------------
// Corrupt cases
// ---------------------------------------------------------------------------------------

/// Mutations that damage a table: the reference reads on (returning garbage or failing
/// later); reel validates tables and may refuse with `Corrupt` where it read.
fn damages_structure(kind: &str) -> bool {
    matches!(
        kind,
        "flip_byte_in_idx"
            | "flip_byte_in_offset_table"
            | "flip_byte_in_end_pointer"
            | "truncate_bag"
            | "truncate_idx"
    )
}

fn check_corrupt(case: &Case) {
    let m = &case.manifest;
    let name = &case.name;
    for key in m.as_object().unwrap().keys() {
        assert!(
            [
                "schema",
                "format",
                "set",
                "case",
                "description",
                "reference",
                "generator",
                "files",
                "notes",
                "mutation",
                "original",
                "reference_reader_behaviour"
            ]
            .contains(&key.as_str()),
            "{name}: unknown manifest key {key}"
        );
    }
    let kind = m["mutation"]["kind"].as_str().unwrap();
    assert!(
        damages_structure(kind) || matches!(kind, "flip_byte_in_bag_record" | "flip_byte_in_refs"),
        "{name}: unknown mutation {kind}"
    );
    let strict = opts().strict_map_keys(true);
    let opened = open(&case.dir, &strict);
    let probes = case.probes();
    for probe in probes.keys() {
        assert!(["open", "read"].contains(&probe.as_str()), "{name}: unknown probe {probe}");
    }
    let want_open = &probes["open"];
    let reader = match (want_open["outcome"].as_str().unwrap(), opened) {
        ("ok", Ok(r)) => {
            assert_eq!(r.len(), want_open["result"]["value"].as_u64().unwrap(), "{name}: len");
            Some(r)
        }
        ("ok", Err(e)) => {
            assert!(damages_structure(kind), "{name}: reel refuses what the reference opens: {e}");
            assert_eq!(e.kind(), ErrorKind::Corrupt, "{name}: {e}");
            assert!(e.path().is_some(), "{name}: the error names the file: {e}");
            None
        }
        ("error", Err(e)) => {
            assert_eq!(e.kind(), ErrorKind::Corrupt, "{name}: {e}");
            None
        }
        ("error", Ok(_)) => panic!("{name}: reel opens what the reference refuses"),
        (o, _) => panic!("{name}: unknown outcome {o}"),
    };
    if let (Some(reader), Some(reads)) = (&reader, probes.get("read")) {
        for p in reads.as_array().unwrap() {
            let i = p["index"].as_u64().unwrap();
            match (p["outcome"].as_str().unwrap(), reader.read(i)) {
                ("ok", Ok(r)) => check_record_map(r.view(), &p["result"])
                    .unwrap_or_else(|d| panic!("{name}: read {i}: {d}")),
                ("ok", Err(e)) => {
                    assert!(damages_structure(kind), "{name}: read {i} fails in reel only: {e}");
                    assert_eq!(e.kind(), ErrorKind::Corrupt, "{name}: {e}");
                }
                ("error", Err(e)) => {
                    assert_eq!(e.kind(), ErrorKind::Corrupt, "{name}: read {i}: {e}");
                    assert_eq!(e.record(), Some(i), "{name}: the error names the datapoint");
                    let _ = e.to_string();
                }
                ("error", Ok(_)) => {
                    panic!("{name}: read {i} succeeds although the reference fails")
                }
                (o, _) => panic!("{name}: unknown outcome {o}"),
            }
        }
    }
    // Every backend agrees on the damaged dataset, and no cut of it panics.
    let _ = conformance::check_backend_list(&reel::all_backends(), |b| {
        boxed(&case.dir, strict.clone().backend(b))
    });
    sweep_dataset(case, false);
}

// ---------------------------------------------------------------------------------------

#[test]
fn golden_granular() {
    let mut datasets = 0;
    let mut corrupt = 0;
    for key in TREES {
        let tree = tree_of(key);
        for case in cases(key) {
            let m = &case.manifest;
            if case.is_corrupt() {
                check_corrupt(&case);
                corrupt += 1;
            } else if m["layout"].get("bag").is_some() {
                check_raw_bag(tree, &case);
                datasets += 1;
            } else if m.get("spec_passed_to_writer").is_some() {
                check_unopenable(&case);
                datasets += 1;
            } else if m.get("spec").is_some() {
                check_dataset(tree, &case);
                datasets += 1;
            } else {
                panic!("{}: a case this harness does not know how to check", case.name);
            }
        }
    }
    summary("granular", datasets, corrupt);
}

#[test]
fn uncached_index_reads_the_same() {
    let key = TREES[0];
    for case in
        cases(key).into_iter().filter(|c| !c.is_corrupt() && c.manifest.get("spec").is_some())
    {
        let cached = open(&case.dir, &opts()).unwrap();
        let keys: Vec<String> = cached.spec().keys().map(str::to_string).collect();
        let uncached_outcomes = conformance::check_backend_list(&reel::all_backends(), |b| {
            boxed(
                &case.dir,
                opts().backend(b).cache_index(false).cache_keys(keys.iter().take(1).cloned()),
            )
        })
        .unwrap();
        for (i, o) in uncached_outcomes.iter().enumerate() {
            assert!(o.as_ref().unwrap() == &cached.read(i as u64).unwrap(), "{}: {i}", case.name);
        }
    }
}

#[test]
fn a_directory_of_one_bare_bag_opens_as_that_bag() {
    let root = common::golden_root();
    for generation in ["granular-0.24.2", "bags-0.5.1"] {
        let dir = root.join("granular").join(generation).join("raw_bag");
        let (whole, bag) = (reel::open(&dir).unwrap(), reel::open(dir.join("data.bag")).unwrap());
        assert_eq!(whole.info().paths, bag.info().paths, "{generation}");
        assert_eq!(whole.len(), bag.len(), "{generation}");
        assert!(!whole.is_empty(), "{generation}");
        for i in 0..whole.len() {
            assert!(whole.read(i).unwrap() == bag.read(i).unwrap(), "{generation}: record {i}");
        }
    }
    // A bag with an .idx that is not its own is not one bare bag.
    let tmp = tempfile::tempdir().unwrap();
    std::fs::copy(
        root.join("granular/granular-0.24.2/raw_bag/data.bag"),
        tmp.path().join("data.bag"),
    )
    .unwrap();
    std::fs::write(tmp.path().join("other.idx"), [0u8; 8]).unwrap();
    assert_eq!(reel::sniff(tmp.path()).unwrap_err().kind(), ErrorKind::Unsupported);
}

#[test]
fn facade_sniffs_precisely() {
    let root = common::golden_root();
    for (path, granular) in [
        ("granular/granular-0.24.2/normal", true),
        ("granular/granular-0.24.2/sharded", true),
        ("granular/bags-0.5.1/sharded", true),
        ("granular/bags-0.5.1/raw_bag/data.bag", true),
        ("granular/granular-0.24.2/raw_bag/data.bag", true),
        // A directory holding one bare bag (with its .idx, or a single-file bag).
        ("granular/granular-0.24.2/raw_bag", true),
        ("granular/bags-0.5.1/raw_bag", true),
        // No spec.json (bags writes none for zero datapoints) and no shard folders.
        ("granular/bags-0.5.1/empty", false),
        ("granular/granular-0.24.2/normal/spec.json", false),
        ("granular/granular-0.24.2/normal/text.idx", false),
        ("granular", false),
    ] {
        let p = root.join(path);
        let sniffed = reel::sniff(&p).ok();
        assert_eq!(sniffed == Some(reel::Format::Granular), granular, "{path}: {sniffed:?}");
    }
}
