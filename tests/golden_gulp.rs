//! Golden conformance for GulpIO2: every case in `REEL_GOLDEN_DIR/gulpio2` reads as its
//! manifest says (chunks in the reference's order, ids, frame tables, stored and returned
//! metadata, JPEG bytes, decoded shapes), the writers reproduce the reference's `.gmeta`
//! and `.gulp` bytes from the same JPEG bytes, corrupt copies behave as the reference's
//! probes say (or as reel's documented stricter checks say), the sanity check agrees, and
//! no truncation of any golden file panics or goes unnoticed.
//!
//! Cases are told apart by the structure of their manifests, never by name: a manifest
//! with `mutation` is a corrupt copy, one with `chunks` and `records` is a dataset. Any
//! key, probe or descriptor field this harness does not know fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use common::{Case, cases, check_bytes, check_value, sha256_hex, summary};
use reel::gulp::{
    Frame, FrameDecode, FrameSelection, GulpChunkWriter, GulpOptions, GulpReader, GulpWriteOptions,
    GulpWriter, JsonValue, SanityIssueKind, Severity, dataset_files, sanity_check,
};
use reel::testing::{conformance, truncation};
use reel::{
    Backend, ErrorKind, Format, MemFiles, Record, RecordSink, RecordSource, RecordSourceExt,
    ValueRef,
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
    "chunk_count",
    "chunks",
    "record_count",
    "record_schema",
    "records",
    "notes",
    "files",
    "original",
    "mutation",
    "reference_reader_behaviour",
];
const CHUNK_KEYS: &[&str] = &[
    "chunk_id",
    "data_file",
    "meta_file",
    "data_size",
    "meta_json_sha256",
    "meta_json_text",
    "video_ids_in_order",
];
const RECORD_KEYS: &[&str] =
    &["id", "chunk_id", "frame_count", "meta_data_stored", "meta_returned", "frames"];
/// `source` and `reencoded_jpeg_identical` describe the reference's writer input and its
/// encoder (simplejpeg); reel encodes with another encoder and is not expected to
/// reproduce those JPEG bytes, so they are known and not compared.
const FRAME_KEYS: &[&str] = &[
    "frame",
    "loc",
    "pad",
    "length",
    "record",
    "jpeg",
    "jpeg_header",
    "decoded",
    "source",
    "reencoded_jpeg_identical",
];
const ORIGINAL_KEYS: &[&str] = &["files", "chunks", "records"];
const PROBES: &[&str] = &["open", "read_decoded", "read_raw_jpeg"];

fn known_keys(case: &Case, what: &str, obj: &Json, known: &[&str]) {
    let obj = obj.as_object().unwrap_or_else(|| panic!("{}: {what} is not an object", case.name));
    for key in obj.keys() {
        assert!(known.contains(&key.as_str()), "{}: unknown {what} key {key:?}", case.name);
    }
}

fn options(backend: Backend, decode: FrameDecode) -> GulpOptions {
    GulpOptions::default().backend(backend).decode(decode)
}

fn open_boxed(
    dir: &Path,
    backend: Backend,
    decode: FrameDecode,
) -> reel::Result<Box<dyn RecordSource>> {
    Ok(Box::new(GulpReader::open_with(dir, &options(backend, decode))?))
}

/// A JSON value as serde_json holds it, to compare with a manifest's stored JSON.
fn to_serde(v: &JsonValue) -> Json {
    match v {
        JsonValue::Null => Json::Null,
        JsonValue::Bool(b) => Json::Bool(*b),
        JsonValue::Int(i) => Json::from(*i),
        JsonValue::UInt(u) => Json::from(*u),
        JsonValue::Float(f) => serde_json::Number::from_f64(*f)
            .map(Json::Number)
            .unwrap_or_else(|| panic!("non-finite float {f} cannot be in a manifest")),
        JsonValue::BigInt(d) => panic!("integer {d} beyond 64 bits cannot be compared"),
        JsonValue::Str(s) => Json::String(s.to_str_lossy().into_owned()),
        JsonValue::Array(items) => Json::Array(items.iter().map(to_serde).collect()),
        JsonValue::Object(pairs) => Json::Object(
            pairs.iter().map(|(k, v)| (k.to_str_lossy().into_owned(), to_serde(v))).collect(),
        ),
    }
}

fn frames_of(r: &Record) -> Vec<ValueRef<'_>> {
    r.get("frames").and_then(|f| f.as_list()).expect("a frames list").iter().collect()
}

fn frame_bytes(r: &Record) -> Vec<Vec<u8>> {
    frames_of(r).iter().map(|f| f.as_bytes().expect("JPEG bytes").to_vec()).collect()
}

fn check_chunks(case: &Case, reader: &GulpReader, chunks: &Json) {
    let chunks = chunks.as_array().unwrap();
    assert_eq!(reader.chunks().len(), chunks.len(), "{}: chunk count", case.name);
    for (got, want) in reader.chunks().iter().zip(chunks) {
        known_keys(case, "chunk", want, CHUNK_KEYS);
        let n = want["chunk_id"].as_u64().unwrap();
        assert_eq!(got.number, n, "{}: chunk order", case.name);
        assert!(got.data_path.ends_with(want["data_file"].as_str().unwrap()));
        assert!(got.meta_path.ends_with(want["meta_file"].as_str().unwrap()));
        assert_eq!(got.data_size, want["data_size"].as_u64().unwrap(), "{}: chunk {n}", case.name);
        let text = std::fs::read(&got.meta_path).unwrap();
        assert_eq!(sha256_hex(&text), want["meta_json_sha256"].as_str().unwrap());
        assert_eq!(text, want["meta_json_text"].as_str().unwrap().as_bytes());
        let ids: Vec<&str> =
            reader.chunk_videos(n).unwrap().map(|i| reader.id(i).unwrap()).collect();
        let want_ids: Vec<&str> = want["video_ids_in_order"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert_eq!(ids, want_ids, "{}: ids of chunk {n}", case.name);
    }
}

fn check_record(case: &Case, reader: &GulpReader, i: u64, got: &Record, want: &Json) {
    known_keys(case, "record", want, RECORD_KEYS);
    let what = format!("{}: record {i}", case.name);
    let id = want["id"].as_str().unwrap();
    assert_eq!(got.view().str("id"), Some(id), "{what}: id");
    assert_eq!(reader.index_of(id), Some(i), "{what}: lookup");
    assert_eq!(reader.chunk_of(id), want["chunk_id"].as_u64(), "{what}: chunk_lookup");
    let stored = reader.meta_data(i).unwrap();
    assert_eq!(
        Json::Array(stored.iter().map(to_serde).collect()),
        want["meta_data_stored"],
        "{what}: meta_data"
    );
    check_value(got.get("meta").unwrap(), &want["meta_returned"])
        .unwrap_or_else(|d| panic!("{what}: meta: {d}"));
    match got.get("meta_extra") {
        None => assert!(stored.len() <= 1, "{what}: meta_extra missing"),
        Some(extra) => {
            let extra: Vec<JsonValue> = extra
                .as_list()
                .unwrap()
                .iter()
                .map(|v| JsonValue::from_value(v).unwrap())
                .collect();
            assert_eq!(extra, stored[1..], "{what}: meta_extra");
        }
    }
    let frames = frame_bytes(got);
    let want_frames = want["frames"].as_array().unwrap();
    assert_eq!(frames.len() as u64, want["frame_count"].as_u64().unwrap(), "{what}: frame count");
    assert_eq!(frames.len(), want_frames.len());
    let info = reader.frame_info(i).unwrap();
    let data = std::fs::read(&reader.layout().chunk_of(i).unwrap().data_path).unwrap();
    for (k, (bytes, w)) in frames.iter().zip(want_frames).enumerate() {
        known_keys(case, "frame", w, FRAME_KEYS);
        assert_eq!(w["frame"].as_u64(), Some(k as u64));
        let f = info[k];
        assert_eq!(
            (f.loc, f.pad, f.length),
            (w["loc"].as_u64().unwrap(), w["pad"].as_u64().unwrap(), w["length"].as_u64().unwrap()),
            "{what}: frame_info {k}"
        );
        let record = &data[f.loc as usize..(f.loc + f.length) as usize];
        check_bytes(record, &w["record"])
            .unwrap_or_else(|d| panic!("{what}: frame {k} record: {d}"));
        check_bytes(bytes, &w["jpeg"]).unwrap_or_else(|d| panic!("{what}: frame {k} jpeg: {d}"));
        assert!(record[bytes.len()..].iter().all(|&b| b == 0), "{what}: padding");
        // The header and decoded shape; pixel hashes depend on the decoder (README).
        let decoded = reel::gulp::decode_jpeg(bytes, FrameDecode::Auto).unwrap();
        let h = &w["jpeg_header"];
        assert_eq!(u64::from(decoded.height), h["height"].as_u64().unwrap());
        assert_eq!(u64::from(decoded.width), h["width"].as_u64().unwrap());
        let channels = match h["colorspace"].as_str().unwrap() {
            "Gray" => 1,
            "YCbCr" => 3,
            other => panic!("{what}: colour space {other} not known to this harness"),
        };
        assert_eq!(decoded.channels, channels, "{what}: frame {k} channels");
        let shape: Vec<u64> =
            w["decoded"]["shape"].as_array().unwrap().iter().map(|d| d.as_u64().unwrap()).collect();
        assert_eq!(decoded.shape(), shape, "{what}: frame {k} decoded shape");
        assert_eq!(w["decoded"]["dtype"], "uint8");
    }
}

/// Reads videos with frame selections and compares the bytes with the manifest's.
fn check_selections(case: &Case, reader: &GulpReader, records: &[Json]) {
    for (i, want) in records.iter().enumerate() {
        let hashes: Vec<&Json> =
            want["frames"].as_array().unwrap().iter().map(|f| &f["jpeg"]).collect();
        let n = hashes.len();
        if n < 2 {
            continue;
        }
        let n64 = n as i64;
        // Python: [n-1, 0, -1], [::-2], [::2], [1:-1], [1:2].
        let selections = [
            (FrameSelection::Indices(vec![n64 - 1, 0, -1]), vec![n - 1, 0, n - 1]),
            (
                FrameSelection::Slice { start: None, stop: None, step: -2 },
                (0..n).rev().step_by(2).collect(),
            ),
            (FrameSelection::every(2), (0..n).step_by(2).collect()),
            (
                FrameSelection::Slice { start: Some(1), stop: Some(-1), step: 1 },
                (1..n - 1).collect(),
            ),
            (FrameSelection::range(1, 2), vec![1]),
        ];
        let mut r = Record::new();
        for (sel, positions) in selections {
            reader.read_video(i as u64, &sel, &mut r).unwrap();
            let got = frame_bytes(&r);
            assert_eq!(got.len(), positions.len(), "{}: {sel:?}", case.name);
            for (bytes, &p) in got.iter().zip(&positions) {
                check_bytes(bytes, hashes[p])
                    .unwrap_or_else(|d| panic!("{}: {sel:?}: {d}", case.name));
            }
        }
        let e =
            reader.read_video(i as u64, &FrameSelection::Indices(vec![n64]), &mut r).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::OutOfRange);
    }
}

/// Whether every chunk's frames follow each other in video order from offset 0 to the end
/// of the data file: then writing the same videos again must give the same bytes.
fn canonical(reader: &GulpReader) -> bool {
    reader.chunks().iter().all(|c| {
        let mut pos = 0;
        for i in c.first_video..c.first_video + c.video_count {
            for f in reader.frame_info(i).unwrap() {
                if f.loc != pos {
                    return false;
                }
                pos += f.length;
            }
        }
        pos == c.data_size
    })
}

fn same_files(case: &Case, a: &Path, b: &Path) {
    let list = |d: &Path| {
        let mut v: Vec<_> =
            dataset_files(d).unwrap().iter().map(|p| p.file_name().unwrap().to_owned()).collect();
        v.sort();
        v
    };
    assert_eq!(list(a), list(b), "{}: chunk files", case.name);
    for name in list(a) {
        assert!(
            std::fs::read(a.join(&name)).unwrap() == std::fs::read(b.join(&name)).unwrap(),
            "{}: {} differs from the reference's",
            case.name,
            name.to_string_lossy()
        );
    }
}

/// Writes the videos again, chunk by chunk and through the record sink, from the JPEG bytes
/// and metadata read; compares with the reference's files.
fn check_writer(case: &Case, dir: &Path, reader: &GulpReader, records: &[Record]) -> bool {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("chunks");
    std::fs::create_dir(&out).unwrap();
    let opts = GulpWriteOptions::default();
    for c in reader.chunks() {
        let mut w = GulpChunkWriter::create(&out, c.number, &opts).unwrap();
        for i in c.first_video..c.first_video + c.video_count {
            let meta = reader.meta_data(i).unwrap();
            let frames = frame_bytes(&records[i as usize]);
            let frames: Vec<Frame<'_>> = frames.iter().map(|f| Frame::Jpeg(f)).collect();
            let id = reader.id(i).unwrap();
            w.append(id, meta[0].clone(), &frames).unwrap();
            for extra in &meta[1..] {
                w.append_meta(id, extra.clone()).unwrap();
            }
        }
        let s = w.finish().unwrap();
        assert_eq!(
            (s.number, s.data_bytes),
            (c.number, c.data_size),
            "{}: chunk summary",
            case.name
        );
    }
    let is_canonical = canonical(reader);
    if is_canonical {
        same_files(case, dir, &out);
    }
    // Whatever the layout, what was written reads back as the same records.
    let again = GulpReader::open(&out).unwrap();
    assert_eq!(again.len(), reader.len());
    for (i, r) in records.iter().enumerate() {
        assert!(again.read(i as u64).unwrap() == *r, "{}: record {i} after rewriting", case.name);
    }

    // The sink: records in chunk-number order, a chunk break where the reference had one.
    let mut by_number: Vec<_> = reader.chunks().to_vec();
    by_number.sort_by_key(|c| c.number);
    let sinkable =
        by_number.iter().enumerate().all(|(k, c)| c.number == k as u64 && c.video_count > 0);
    if sinkable {
        let sink_dir = tmp.path().join("sink");
        let mut w =
            GulpWriter::create(&sink_dir, &GulpWriteOptions::default().videos_per_chunk(u64::MAX))
                .unwrap();
        for c in &by_number {
            for i in c.first_video..c.first_video + c.video_count {
                RecordSink::append_ref(&mut w, records[i as usize].view()).unwrap();
            }
            w.next_chunk().unwrap();
        }
        let summary = RecordSink::finish(&mut w).unwrap();
        assert_eq!(summary.records, reader.len());
        if is_canonical {
            same_files(case, dir, &sink_dir);
        }
        let again = GulpReader::open(&sink_dir).unwrap();
        for (i, r) in records.iter().enumerate() {
            assert!(
                again.read(i as u64).unwrap() == *r,
                "{}: record {i} through the sink",
                case.name
            );
        }
    }
    is_canonical
}

/// The dataset's files as an in-memory set, with file `cut` replaced by `bytes`.
fn mem_set(paths: &[PathBuf], contents: &[Arc<[u8]>], cut: usize, bytes: &[u8]) -> MemFiles {
    MemFiles::new(paths.iter().enumerate().map(|(j, p)| {
        let b: Arc<[u8]> = if j == cut { Arc::from(bytes) } else { contents[j].clone() };
        (p.clone(), b)
    }))
}

/// Cuts each file of the dataset at many lengths, the others intact. Intact datasets must
/// have every cut detected; damaged ones only must not panic. Chunks are independent, so
/// each cut is read with its own chunk only (keeps the sweep fast).
fn sweep(case: &Case, dir: &Path, must_detect: bool) {
    let all = dataset_files(dir).unwrap();
    for pair in all.chunks(2) {
        let paths = pair.to_vec();
        let contents: Vec<Arc<[u8]>> =
            paths.iter().map(|p| Arc::from(std::fs::read(p).unwrap())).collect();
        for (k, path) in paths.iter().enumerate() {
            let lengths = truncation::lengths(contents[k].len(), &[]);
            let cuts = truncation::sweep(&contents[k], &lengths, |b| {
                let files = mem_set(&paths, &contents, k, b);
                Ok(Box::new(GulpReader::from_files(files, &GulpOptions::default())?))
            });
            if must_detect {
                for (len, cut) in cuts {
                    assert!(
                        cut.detected(),
                        "{}: {} cut at {len} went unnoticed: {cut:?}",
                        case.name,
                        path.display()
                    );
                }
            }
        }
    }
}

fn check_dataset(case: &Case) -> bool {
    let m = &case.manifest;
    let dir = &case.dir;
    let outcomes = conformance::check_backends(|b| open_boxed(dir, b, FrameDecode::Raw))
        .unwrap_or_else(|k| panic!("{}: open failed ({k:?})", case.name));
    let reader = GulpReader::open(dir).unwrap();
    assert!(
        reader.info().warnings.is_empty(),
        "{}: warnings {:?}",
        case.name,
        reader.info().warnings
    );
    assert_eq!(reader.chunks().len() as u64, m["chunk_count"].as_u64().unwrap());
    check_chunks(case, &reader, &m["chunks"]);
    let records_json = m["records"].as_array().unwrap();
    assert_eq!(
        outcomes.len() as u64,
        m["record_count"].as_u64().unwrap(),
        "{}: record count",
        case.name
    );
    assert_eq!(records_json.len(), outcomes.len());
    let records: Vec<Record> = outcomes
        .into_iter()
        .enumerate()
        .map(|(i, o)| o.unwrap_or_else(|k| panic!("{}: record {i} failed: {k:?}", case.name)))
        .collect();
    for (i, (got, want)) in records.iter().zip(records_json).enumerate() {
        check_record(case, &reader, i as u64, got, want);
    }
    check_selections(case, &reader, records_json);

    // Decoded reads: same shapes as the reference's decoder, on every backend.
    let decoded = conformance::check_backends(|b| open_boxed(dir, b, FrameDecode::Auto)).unwrap();
    for (i, (o, want)) in decoded.iter().zip(records_json).enumerate() {
        let r = o.as_ref().unwrap_or_else(|k| panic!("{}: decoded record {i}: {k:?}", case.name));
        for (f, w) in frames_of(r).iter().zip(want["frames"].as_array().unwrap()) {
            let a = f.as_array().expect("decoded frames are arrays");
            assert_eq!(a.dtype, reel::DType::U8);
            let shape: Vec<u64> = w["decoded"]["shape"]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| d.as_u64().unwrap())
                .collect();
            assert_eq!(a.shape, &shape[..], "{}: decoded record {i}", case.name);
        }
    }

    // The facade: sniffed when there is a chunk, opened as gulp either way.
    let via_facade = reel::open_as(dir, Format::Gulp, &reel::OpenOptions::default()).unwrap();
    assert_eq!(via_facade.len(), reader.len());
    if reader.chunks().is_empty() {
        assert!(
            reel::sniff(dir).is_err(),
            "{}: a directory without chunks is not sniffed",
            case.name
        );
    } else {
        assert_eq!(reel::sniff(dir).unwrap(), Format::Gulp, "{}: sniff", case.name);
        assert_eq!(reel::open(dir).unwrap().info().format, "gulp");
    }

    // The sanity check finds nothing wrong; videos without frames are noted.
    let report = sanity_check(dir).unwrap();
    let zero_frames = records_json.iter().filter(|r| r["frame_count"] == 0).count();
    assert!(report.is_ok(), "{}: {:?}", case.name, report.issues);
    assert_eq!(report.issues.len(), zero_frames, "{}: {:?}", case.name, report.issues);
    assert!(
        report
            .issues
            .iter()
            .all(|i| i.kind == SanityIssueKind::NoFrames && i.severity == Severity::Info)
    );
    assert_eq!(report.videos, reader.len());

    let is_canonical = check_writer(case, dir, &reader, &records);
    sweep(case, dir, true);
    is_canonical
}

fn outcome(p: &Json) -> &str {
    p["outcome"].as_str().unwrap()
}

fn check_corrupt(case: &Case) {
    let m = &case.manifest;
    known_keys(case, "manifest", m, TOP_KEYS);
    known_keys(case, "original", &m["original"], ORIGINAL_KEYS);
    let dir = &case.dir;
    let probes = case.probes();
    for name in probes.keys() {
        assert!(PROBES.contains(&name.as_str()), "{}: unhandled probe {name}", case.name);
    }
    let original: HashMap<&str, &Json> = m["original"]["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["id"].as_str().unwrap(), r))
        .collect();
    let opened = GulpReader::open(dir);
    let open = &probes["open"];
    let reader = match (outcome(open), opened) {
        ("ok", Ok(r)) => {
            assert_eq!(
                r.chunks().len() as u64,
                open["result"]["value"].as_u64().unwrap(),
                "{}: chunks",
                case.name
            );
            r
        }
        ("error", Err(e)) => {
            assert_eq!(e.kind(), ErrorKind::Corrupt, "{}: {e}", case.name);
            assert!(probes.len() == 1, "{}: probes after a failed open", case.name);
            assert!(!sanity_check(dir).unwrap().is_ok(), "{}: sanity check passed", case.name);
            let _ = conformance::check_backends(|b| open_boxed(dir, b, FrameDecode::Raw));
            sweep(case, dir, false);
            return;
        }
        (o, got) => panic!("{}: open: reference {o}, reel {:?}", case.name, got.err()),
    };
    let decoding = GulpReader::open_with(dir, &options(Backend::Pread, FrameDecode::Auto)).unwrap();

    // Raw reads. Where the reference returned fewer bytes than the index says (a frame cut
    // off by the end of the file), reel reports the video as Corrupt instead (documented).
    let mut damaged: HashMap<String, bool> = HashMap::new();
    for p in probes["read_raw_jpeg"].as_array().unwrap() {
        let id = p["id"].as_str().unwrap();
        let got = reader.get(id, &FrameSelection::All);
        let orig_frames = original[id]["frames"].as_array().unwrap();
        match (outcome(p), got) {
            ("ok", Ok(r)) => {
                let want = p["result"]["frames"].as_array().unwrap();
                let frames = frame_bytes(&r);
                assert_eq!(frames.len(), want.len());
                for (b, w) in frames.iter().zip(want) {
                    check_bytes(b, w).unwrap_or_else(|d| panic!("{}: {id}: {d}", case.name));
                }
            }
            ("ok", Err(e)) => {
                let short = p["result"]["frames"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .zip(orig_frames)
                    .any(|(w, o)| w["len"].as_u64() < o["jpeg"]["len"].as_u64());
                assert!(
                    short,
                    "{}: {id}: reel failed ({e}) where the reference read every byte",
                    case.name
                );
                assert_eq!(e.kind(), ErrorKind::Corrupt, "{}: {id}: {e}", case.name);
                assert_eq!(e.record(), reader.index_of(id));
            }
            ("error", Err(e)) => {
                assert_eq!(e.kind(), ErrorKind::Corrupt, "{}: {id}: {e}", case.name)
            }
            (o, got) => panic!("{}: {id} raw: reference {o}, reel {:?}", case.name, got.err()),
        }
        let changed = p.get("result").and_then(|r| r["frames"].as_array()).is_none_or(|w| {
            w.iter().zip(orig_frames).any(|(w, o)| w["sha256"] != o["jpeg"]["sha256"])
        });
        damaged.insert(id.to_string(), changed);
    }

    // Decoded reads. A reference error must be an error here too. A damaged JPEG that the
    // reference's decoder still decoded may or may not be noticed by another decoder
    // (entropy-coded data has no checksum), so there reel may also report Corrupt; an
    // undamaged video must decode to the reference's shapes.
    let mut reference_failed = false;
    for p in probes["read_decoded"].as_array().unwrap() {
        let id = p["id"].as_str().unwrap();
        let got = decoding.get(id, &FrameSelection::All);
        match (outcome(p), got) {
            ("ok", Ok(r)) => {
                let want = p["result"]["frames"].as_array().unwrap();
                let frames = frames_of(&r);
                assert_eq!(frames.len(), want.len());
                for (f, w) in frames.iter().zip(want) {
                    let shape: Vec<u64> = w["shape"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|d| d.as_u64().unwrap())
                        .collect();
                    assert_eq!(f.as_array().unwrap().shape, &shape[..], "{}: {id}", case.name);
                }
                check_value(r.get("meta").unwrap(), &p["result"]["meta"]).unwrap();
            }
            ("ok", Err(e)) => {
                assert!(damaged[id], "{}: {id}: undamaged video failed to decode: {e}", case.name);
                assert_eq!(e.kind(), ErrorKind::Corrupt, "{}: {id}: {e}", case.name);
            }
            ("error", Err(e)) => {
                reference_failed = true;
                assert_eq!(e.kind(), ErrorKind::Corrupt, "{}: {id}: {e}", case.name);
                assert_eq!(e.record(), reader.index_of(id), "{}: {e}", case.name);
            }
            (o, got) => panic!(
                "{}: {id} decoded: reference {o}, reel {:?}",
                case.name,
                got.err().map(|e| e.to_string())
            ),
        }
    }
    if reference_failed {
        let report = sanity_check(dir).unwrap();
        assert!(
            !report.is_ok(),
            "{}: the sanity check found nothing: {:?}",
            case.name,
            report.issues
        );
    }
    let _ = conformance::check_backends(|b| open_boxed(dir, b, FrameDecode::Raw));
    let _ = conformance::check_backends(|b| open_boxed(dir, b, FrameDecode::Auto));
    sweep(case, dir, false);
}

#[test]
fn golden_gulp() {
    let mut datasets = 0;
    let mut corrupt = 0;
    let mut canonical = 0;
    for case in cases("gulpio2") {
        let m = &case.manifest;
        known_keys(&case, "manifest", m, TOP_KEYS);
        if case.is_corrupt() {
            check_corrupt(&case);
            corrupt += 1;
        } else if m.get("chunks").is_some() && m.get("records").is_some() {
            canonical += usize::from(check_dataset(&case));
            datasets += 1;
        } else {
            panic!("{}: a case this harness does not know how to check", case.name);
        }
    }
    // The reference's writer lays frames out canonically; byte comparison must have run.
    assert!(canonical > 0, "no dataset was compared byte for byte");
    summary("gulpio2", datasets, corrupt);
}
