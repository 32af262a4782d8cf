//! Reader behaviour: masks, caching, generations, codecs, and hostile input.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::fs;
use std::path::Path;
use std::sync::Arc;

use proptest::prelude::*;
use reel_core::testing::HintLog;
use reel_core::{
    DType, ErrorKind, MemFiles, Record, RecordOut, RecordSource, RecordSourceExt, Result, Span,
    Value, ValueRef, WarningKind,
};
use reel_granular::codec::{CodecFamily, CodecSettings, codec_for};
use reel_granular::{
    BagKind, BagOptions, BagReader, BagsWriter, CodecTable, DatasetFiles, Generation,
    GranularCodec, GranularMask, GranularOptions, GranularReader, GranularSpec, GranularWriter,
    IntSigning, RefsFlavor, ShardSelection,
};

fn u64s(v: &[u64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// A bags 0.5.1 dataset: `n` int, `tags` utf8[] with i tags for datapoint i.
fn bags_dataset(dir: &Path) {
    let spec = GranularSpec::new().with("n", "int").with("tags", "utf8[]").with("blob", "bytes");
    let mut w = BagsWriter::create(dir, &spec, RefsFlavor::Bags051).unwrap();
    for i in 0..6u8 {
        let mut r = Record::new().with_int("n", 250 + i64::from(i)).with_bytes("blob", &[i; 3]);
        let mut out = r.out();
        let tags = (0..i).map(|k| out.append_str(&format!("t{i}.{k}"))).collect();
        out.push("tags".into(), Value::List(tags));
        w.append(r.view()).unwrap();
    }
    w.finish().unwrap();
}

fn current_dataset(dir: &Path, n: u64) {
    let spec = GranularSpec::new().with("k", "int").with("s", "utf8");
    let mut w = GranularWriter::create(dir, &spec).unwrap();
    for i in 0..n {
        w.append(
            Record::new().with_int("k", i as i64).with_str("s", &"x".repeat(i as usize)).view(),
        )
        .unwrap();
    }
    w.finish().unwrap();
}

#[test]
fn masks_and_available_on_sequences() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("ds");
    bags_dataset(&dir);
    let r = GranularReader::open(&dir).unwrap();
    assert_eq!(r.generation(), Generation::Refs);
    assert_eq!(r.int_signing(), IntSigning::Unsigned);
    assert!(r.info().warnings.iter().any(|w| w.kind == WarningKind::LegacyLayout));
    let avail = r.available(4).unwrap();
    assert_eq!(
        avail.iter().map(|a| (a.key.to_string(), a.items.clone())).collect::<Vec<_>>(),
        [("blob".to_string(), None), ("n".to_string(), None), ("tags".to_string(), Some(0..4)),]
    );
    let tags = |rec: &Record| -> Vec<String> {
        rec.get("tags")
            .unwrap()
            .as_list()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().to_string())
            .collect()
    };
    let part = r.read_masked(4, &GranularMask::new().items("tags", 1..3)).unwrap();
    assert_eq!(part.len(), 1);
    assert_eq!(tags(&part), ["t4.1", "t4.2"]);
    // The stop is clamped; a start past the items gives none (as bags 0.5.1 does).
    assert_eq!(
        tags(&r.read_masked(4, &GranularMask::new().items("tags", 3..99)).unwrap()),
        ["t4.3"]
    );
    assert!(tags(&r.read_masked(4, &GranularMask::new().items("tags", 7..9)).unwrap()).is_empty());
    assert!(tags(&r.read_masked(0, &GranularMask::new().key("tags")).unwrap()).is_empty());
    // Fields come back in spec order whatever the mask's order.
    let both = r.read_masked(5, &GranularMask::new().key("tags").key("n")).unwrap();
    assert_eq!(both.iter().map(|(k, _)| k).collect::<Vec<_>>(), ["n", "tags"]);
    assert_eq!(both.get("n").unwrap().as_i64(), Some(255));
    let e = r.read_masked(0, &GranularMask::new().items("n", 0..1)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    let e = r.read_masked(0, &GranularMask::new().key("nope")).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound);
    // Batch masked reads and ranges.
    let mut batch = reel_core::RecordBatch::new();
    r.read_batch_masked_into(&[5, 1, 5], &GranularMask::keys(["blob"]), &mut batch).unwrap();
    assert_eq!(batch.get(2).unwrap().bytes("blob"), Some(&[5u8; 3][..]));
    assert_eq!(r.read_range(2..100, None).unwrap().len(), 4);
    let (start, end) = (3, 2);
    assert!(r.read_range(start..end, None).is_err());

    // int read as signed instead: 250..255 were written unsigned in one byte.
    let signed = GranularReader::open_with(
        &dir,
        &GranularOptions::default().int_signing(IntSigning::Signed),
    )
    .unwrap();
    assert_eq!(signed.read(5).unwrap().get("n").unwrap().as_i64(), Some(-1));
}

#[test]
fn caching_options_read_the_same() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("g3");
    current_dataset(&dir, 40);
    let base = GranularReader::open(&dir).unwrap();
    for o in [
        GranularOptions::default().cache_index(false),
        GranularOptions::default().cache_keys(["s"]),
        GranularOptions::default().cache_index(false).cache_keys(["k", "s"]),
    ] {
        let outcomes = reel_core::testing::conformance::check_backends(|b| {
            Ok(Box::new(GranularReader::open_with(&dir, &o.clone().backend(b))?)
                as Box<dyn RecordSource>)
        })
        .unwrap();
        for (i, out) in outcomes.iter().enumerate() {
            assert!(out.as_ref().unwrap() == &base.read(i as u64).unwrap());
        }
        let r = GranularReader::open_with(&dir, &o).unwrap();
        assert_eq!(
            r.read_masked(7, &GranularMask::new().key("s")).unwrap().view().str("s"),
            Some("xxxxxxx")
        );
    }
    let e = GranularReader::open_with(&dir, &GranularOptions::default().cache_keys(["zz"]))
        .err()
        .unwrap();
    assert_eq!(e.kind(), ErrorKind::NotFound);

    let bags = tmp.path().join("g1");
    bags_dataset(&bags);
    let r = GranularReader::open_with(
        &bags,
        &GranularOptions::default().cache_keys(["refs", "tags"]).cache_index(false),
    )
    .unwrap();
    assert_eq!(r.read(3).unwrap().get("tags").unwrap().as_list().unwrap().len(), 3);
}

#[test]
fn decoding_off_and_user_codecs() {
    struct Reversed;
    impl GranularCodec for Reversed {
        fn decode(&self, raw: Span, out: &mut RecordOut<'_>) -> Result<Value> {
            let mut b = out.bytes(raw).to_vec();
            b.reverse();
            Ok(Value::Bytes(out.append(&b)))
        }
        fn encode(&self, value: ValueRef<'_>, buf: &mut Vec<u8>) -> Result<()> {
            buf.extend(value.as_bytes().unwrap_or_default().iter().rev());
            Ok(())
        }
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("ds");
    let spec = GranularSpec::new().with("r", "reversed").with("n", "i64");
    let codecs = CodecTable::new().with("reversed", Arc::new(Reversed));
    let o = reel_granular::GranularWriterOptions::default().codecs(codecs.clone());
    let mut w = GranularWriter::create_with(&dir, &spec, &o).unwrap();
    w.append(Record::new().with_bytes("r", b"abc").with_int("n", -3).view()).unwrap();
    w.finish().unwrap();
    assert_eq!(fs::read(dir.join("r.bag")).unwrap(), b"cba");
    // Without the codec the type is unknown: opening says so; raw reads work.
    assert_eq!(GranularReader::open(&dir).err().unwrap().kind(), ErrorKind::Schema);
    let raw = GranularReader::open_with(&dir, &GranularOptions::default().decode(false)).unwrap();
    assert_eq!(raw.read(0).unwrap().bytes("n"), Some(&(-3i64).to_le_bytes()[..]));
    let r = GranularReader::open_with(&dir, &GranularOptions::default().codecs(codecs)).unwrap();
    assert_eq!(r.read(0).unwrap().bytes("r"), Some(&b"abc"[..]));
    assert_eq!(r.info().schema.as_ref().unwrap()[1].kind, "reversed");
}

#[test]
fn images_encode_and_decode() {
    let settings =
        CodecSettings { decode_images: true, ..CodecSettings::new(CodecFamily::Granular) };
    for (t, channels) in [("png", 3u64), ("png", 1), ("png", 4), ("jpg", 3), ("jpg", 1)] {
        let codec = codec_for(t, &CodecTable::new(), &settings).unwrap();
        let (h, w) = (9u64, 13u64);
        let pixels: Vec<u8> = (0..h * w * channels).map(|k| (k * 7 % 251) as u8).collect();
        let mut rec = Record::new();
        let shape: Vec<u64> = if channels == 1 { vec![h, w] } else { vec![h, w, channels] };
        rec.push_array("img", DType::U8, &shape, &pixels).unwrap();
        let mut encoded = Vec::new();
        codec.encode(rec.get("img").unwrap(), &mut encoded).unwrap();
        let mut back = Record::new();
        let mut out = back.out();
        let span = out.append(&encoded);
        let v = codec.decode(span, &mut out).unwrap();
        out.push("img".into(), v);
        let a = back.get("img").unwrap().as_array().unwrap();
        assert_eq!(a.shape, &shape[..], "{t} {channels}");
        if t == "png" {
            assert_eq!(a.data, &pixels[..], "PNG is lossless");
        }
    }
    let png = codec_for("png", &CodecTable::new(), &settings).unwrap();
    let mut rec = Record::new();
    let mut out = rec.out();
    let garbage = out.append(b"\x89PNG\r\n\x1a\nnot really");
    assert_eq!(png.decode(garbage, &mut out).unwrap_err().kind(), ErrorKind::Corrupt);
    let jpg = codec_for("jpg", &CodecTable::new(), &settings).unwrap();
    let garbage = out.append(&[0xff, 0xd8, 0xff, 0xc0, 0, 3, 8]);
    assert_eq!(jpg.decode(garbage, &mut out).unwrap_err().kind(), ErrorKind::Corrupt);
    // Video stays encoded; decoding it is refused at open.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("v");
    let mut w = GranularWriter::create(&dir, &GranularSpec::new().with("clip", "mp4")).unwrap();
    w.append(Record::new().with_bytes("clip", b"\0\0\0\x18ftypmp42").view()).unwrap();
    w.finish().unwrap();
    assert_eq!(
        GranularReader::open(&dir).unwrap().read(0).unwrap().bytes("clip").unwrap().len(),
        12
    );
    let o = GranularOptions { decode_video: true, ..Default::default() };
    assert_eq!(GranularReader::open_with(&dir, &o).err().unwrap().kind(), ErrorKind::Unsupported);
}

/// Writes `files` into `dir` and opens it.
fn open_files(
    dir: &Path,
    files: &[(&str, Vec<u8>)],
    o: &GranularOptions,
) -> reel_core::Result<GranularReader> {
    let _ = fs::remove_dir_all(dir);
    fs::create_dir_all(dir).unwrap();
    for (name, bytes) in files {
        fs::write(dir.join(name), bytes).unwrap();
    }
    GranularReader::open_with(dir, o)
}

#[test]
fn inconsistencies_are_corrupt() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("x");
    let o = GranularOptions::default();
    let spec = br#"{"a": "bytes", "b": "bytes"}"#.to_vec();
    let kind = |files: &[(&str, Vec<u8>)]| open_files(&dir, files, &o).err().map(|e| e.kind());
    let good = [
        ("spec.json", spec.clone()),
        ("a.bag", b"xyz".to_vec()),
        ("a.idx", u64s(&[1, 3])),
        ("b.bag", b"pq".to_vec()),
        ("b.idx", u64s(&[0, 2])),
    ];
    assert_eq!(kind(&good), None);
    let with = |name: &str, bytes: Vec<u8>| {
        let mut v = good.to_vec();
        v.iter_mut().find(|(n, _)| *n == name).unwrap().1 = bytes;
        v
    };
    // Column lengths differ; torn index entry; decreasing offsets.
    assert_eq!(kind(&with("b.idx", u64s(&[2]))), Some(ErrorKind::Corrupt));
    assert_eq!(
        kind(&with("b.idx", [u64s(&[0, 2]), vec![1, 2]].concat())),
        Some(ErrorKind::Corrupt)
    );
    assert_eq!(kind(&with("a.idx", u64s(&[3, 1]))), Some(ErrorKind::Corrupt));
    // Data shorter than the index: the record past the end fails, with its file named.
    let r = open_files(&dir, &with("a.bag", b"xy".to_vec()), &o).unwrap();
    assert!(r.read(0).is_ok());
    let e = r.read(1).unwrap_err();
    assert_eq!((e.kind(), e.record()), (ErrorKind::Corrupt, Some(1)));
    assert!(e.path().unwrap().ends_with("a.bag"), "{e}");
    // Unindexed data after the last record is a warning.
    let r = open_files(&dir, &with("a.bag", b"xyzjunk".to_vec()), &o).unwrap();
    assert_eq!(r.info().warnings[0].kind, WarningKind::TrailingBytes);
    // Specs: empty, not an object, a path in a key, missing.
    assert_eq!(kind(&with("spec.json", b"{}".to_vec())), Some(ErrorKind::Corrupt));
    assert_eq!(kind(&with("spec.json", b"[\"a\"]".to_vec())), Some(ErrorKind::Corrupt));
    assert_eq!(
        kind(&with("spec.json", br#"{"../a": "bytes"}"#.to_vec())),
        Some(ErrorKind::Unsupported)
    );
    assert_eq!(kind(&good[1..]), Some(ErrorKind::NotFound));

    // Refs-based: refs past the end of a column, a wrong count, mixed bag versions.
    let v1 = |records: &[&[u8]]| reel_granular::bag::single_file_bytes(BagKind::SingleV1, records);
    let spec = br#"{"t": "utf8[]", "n": "int"}"#.to_vec();
    let good = [
        ("spec.json", spec.clone()),
        ("refs.bag", v1(&[b"\x92\x92\x00\x02\x00", b"\x92\x90\x01"])),
        ("t.bag", v1(&[b"a", b"b"])),
        ("n.bag", v1(&[b"\x01", b"\x02"])),
    ];
    let r = open_files(&dir, &good, &o).unwrap();
    assert_eq!(r.read(0).unwrap().get("t").unwrap().as_list().unwrap().len(), 2);
    let past = [("refs.bag", v1(&[b"\x92\x92\x01\x02\x00", b"\x92\x90\x01"]))];
    let mut files = good.to_vec();
    files[1] = past[0].clone();
    let r = open_files(&dir, &files, &o).unwrap();
    let e = r.read(0).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Corrupt);
    assert!(r.available(0).is_err() && r.read(1).is_ok());
    files[1] = ("refs.bag", v1(&[b"\x92\x92\x00\x02\x00"]));
    assert_eq!(open_files(&dir, &files, &o).err().unwrap().kind(), ErrorKind::Corrupt);
    let mut files = good.to_vec();
    files[2] = ("t.bag", reel_granular::bag::single_file_bytes(BagKind::SingleV2, &[b"a", b"b"]));
    assert_eq!(open_files(&dir, &files, &o).err().unwrap().kind(), ErrorKind::Corrupt);
    // Both generations' files: ambiguous unless the generation is given.
    let mut files = good.to_vec();
    files.push(("n.idx", u64s(&[1, 2])));
    assert_eq!(open_files(&dir, &files, &o).err().unwrap().kind(), ErrorKind::Corrupt);
    let r =
        open_files(&dir, &files, &GranularOptions::default().generation(Generation::Refs)).unwrap();
    assert_eq!(r.len(), 2);
}

#[test]
fn single_bags() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("v2.bag");
    fs::write(&p, reel_granular::bag::single_file_bytes(BagKind::SingleV2, &[b"ab", b"", b"c"]))
        .unwrap();
    let r = BagReader::open(&p).unwrap();
    assert_eq!((r.kind(), r.len()), (BagKind::SingleV2, 3));
    assert_eq!(r.get_range(0..9).unwrap(), [b"ab".to_vec(), vec![], b"c".to_vec()]);
    assert_eq!(r.size(), fs::metadata(&p).unwrap().len());
    let mut w = reel_granular::BagWriter::open(tmp.path().join("two.bag")).unwrap();
    w.append(b"hello");
    w.sync().unwrap();
    let r = BagReader::open(tmp.path().join("two.bag")).unwrap();
    assert_eq!((r.kind(), r.get(0).unwrap()), (BagKind::TwoFile, b"hello".to_vec()));
    let forced = BagReader::open_with(
        tmp.path().join("two.bag"),
        &BagOptions { single_file: Some(true), ..Default::default() },
    );
    assert_eq!(forced.err().unwrap().kind(), ErrorKind::Corrupt);
}

/// Damaged copies of small datasets, opened from memory: reading never panics, batch and
/// single reads agree.
fn check_damaged(desc: &DatasetFiles, files: Files) {
    let files = MemFiles::new(files.into_iter().map(|(p, b)| (p, Arc::<[u8]>::from(b))));
    for o in [
        GranularOptions::default(),
        GranularOptions::default().cache_index(false).strict_map_keys(true),
    ] {
        if let Ok(r) = GranularReader::from_files(desc.clone(), files.clone(), &o) {
            let all: Vec<u64> = (0..r.len().min(64)).collect();
            let singles: Vec<bool> = all.iter().map(|&i| r.read(i).is_ok()).collect();
            let batch = r.read_batch(&all).is_ok();
            assert_eq!(batch, singles.iter().all(|&x| x));
            for &i in &all {
                let _ = r.available(i);
                let _ = r.read_masked(i, &GranularMask::new().items("tags", 1..3));
            }
        }
    }
}

fn dataset_bytes(dir: &Path) -> (DatasetFiles, Files) {
    let desc = DatasetFiles::discover(dir, None, ShardSelection::default()).unwrap();
    let files = desc.paths().iter().map(|p| (p.clone(), fs::read(p).unwrap())).collect();
    (desc, files)
}

/// The pristine files of a bags and a current-layout dataset, written once.
/// The files of a dataset: paths and contents.
type Files = Vec<(std::path::PathBuf, Vec<u8>)>;

fn pristine() -> &'static [(DatasetFiles, Files)] {
    static DATASETS: std::sync::OnceLock<Vec<(DatasetFiles, Files)>> = std::sync::OnceLock::new();
    DATASETS.get_or_init(|| {
        let tmp = tempfile::tempdir().unwrap();
        let (a, b) = (tmp.path().join("bags"), tmp.path().join("current"));
        bags_dataset(&a);
        current_dataset(&b, 9);
        vec![dataset_bytes(&a), dataset_bytes(&b)]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn damaged_datasets_never_panic(flips in proptest::collection::vec((any::<u16>(), any::<u32>(), any::<u8>()), 1..4), cut in any::<u16>()) {
        for (desc, files) in pristine() {
            let mut files = files.clone();
            let n = files.len();
            for &(f, at, xor) in &flips {
                let bytes = &mut files[f as usize % n].1;
                if !bytes.is_empty() {
                    let at = at as usize % bytes.len();
                    bytes[at] ^= xor.max(1);
                }
            }
            let victim = cut as usize % n;
            let len = files[victim].1.len();
            files[victim].1.truncate(len - (cut as usize % (len + 1)).min(len) / 2);
            check_damaged(desc, files);
        }
    }

    #[test]
    fn codecs_never_panic_on_any_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..80)) {
        let settings = CodecSettings { decode_images: true, ..CodecSettings::new(CodecFamily::Granular) };
        for t in ["msgpack", "tree", "array", "int", "i64", "u64", "utf8", "png", "jpg", "array(float32,-1)", "array(int16,2,3)"] {
            let codec = codec_for(t, &CodecTable::new(), &settings).unwrap();
            let mut rec = Record::new();
            let mut out = rec.out();
            let span = out.append(&bytes);
            let _ = codec.decode(span, &mut out);
        }
        let _ = reel_granular::bag::parse_single_file(&bytes);
        let _ = reel_granular::bag::parse_index(&bytes);
    }
}

/// `keys` / `skip_keys` read only the keys selected, in spec order, for both layouts: the
/// schema lists them, and the other keys' data files are never read, so damage there (or a
/// type reel cannot decode) does not fail a read.
#[test]
fn selected_keys_are_the_only_ones_read() {
    let tmp = tempfile::tempdir().unwrap();
    let refs = tmp.path().join("refs");
    bags_dataset(&refs);
    let current = tmp.path().join("current");
    current_dataset(&current, 5);

    let names = |r: &GranularReader| -> Vec<String> {
        r.info().schema.as_ref().unwrap().iter().map(|f| f.name.clone()).collect()
    };
    let fields = |rec: &Record| -> Vec<String> { rec.iter().map(|(k, _)| k.to_string()).collect() };

    // Named out of spec order: spec order comes back (the refs-based dataset's spec is
    // blob, n, tags).
    let whole = GranularReader::open(&refs).unwrap();
    assert_eq!(names(&whole), ["blob", "n", "tags"]);
    let r =
        GranularReader::open_with(&refs, &GranularOptions::default().keys(["n", "blob"])).unwrap();
    assert_eq!(names(&r), ["blob", "n"]);
    for i in 0..whole.len() {
        let (part, all) = (r.read(i).unwrap(), whole.read(i).unwrap());
        assert_eq!(fields(&part), ["blob", "n"]);
        assert_eq!(part.get("n"), all.get("n"));
        assert_eq!(part.get("blob"), all.get("blob"));
    }
    let batch = r.read_batch(&[4, 0, 4]).unwrap();
    assert_eq!(batch.get(0).unwrap().bytes("blob"), Some(&[4u8; 3][..]));
    // A masked read still reaches every key.
    let tags = r.read_masked(3, &GranularMask::new().key("tags")).unwrap();
    assert_eq!(tags.get("tags").unwrap().as_list().unwrap().len(), 3);

    // The files listed are those records are read from: no tags.bag.
    let listed: Vec<String> = r
        .info()
        .paths
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert!(listed.contains(&"blob.bag".to_string()) && listed.contains(&"refs.bag".into()));
    assert!(!listed.iter().any(|n| n.starts_with("tags")), "{listed:?}");
    assert_eq!(whole.info().paths.len(), listed.len() + 1);

    let skip = GranularOptions::default().skip_keys(["tags"]);
    assert_eq!(names(&GranularReader::open_with(&refs, &skip).unwrap()), ["blob", "n"]);
    let both = GranularOptions::default().keys(["tags", "blob"]).skip_keys(["blob"]);
    assert_eq!(names(&GranularReader::open_with(&refs, &both).unwrap()), ["tags"]);

    // A name the spec does not have is refused, naming what it has.
    for bad in [
        GranularOptions::default().keys(["s", "nope"]),
        GranularOptions::default().skip_keys(["nope"]),
    ] {
        let e = GranularReader::open_with(&current, &bad).err().unwrap();
        assert_eq!(e.kind(), ErrorKind::InvalidInput);
        assert!(e.to_string().contains("\"nope\"") && e.to_string().contains("k, s"), "{e}");
    }

    // A masked read reaches a key left out, its index read from disk for the batch.
    let k = GranularReader::open_with(&current, &GranularOptions::default().keys(["k"])).unwrap();
    let s_of_3 = k.read_masked(3, &GranularMask::new().key("s")).unwrap();
    assert_eq!(s_of_3.view().str("s"), Some("xxx"), "{s_of_3:?}");

    // The current layout: damage the data of key `s` (its text is no longer UTF-8). Reading
    // every key fails; reading `k` alone does not read `s.bag` at all.
    let bag = current.join("s.bag");
    let mut bytes = fs::read(&bag).unwrap();
    let last = bytes.len() - 1;
    bytes[last] = 0xff;
    fs::write(&bag, &bytes).unwrap();
    let all = GranularReader::open(&current).unwrap();
    assert!(all.read_batch(&[0, 1, 2, 3, 4]).is_err());
    let k = GranularReader::open_with(&current, &GranularOptions::default().keys(["k"])).unwrap();
    let batch = k.read_batch(&[4, 3, 2, 1, 0]).unwrap();
    let ks: Vec<i64> = batch.iter().map(|r| r.get("k").unwrap().as_i64().unwrap()).collect();
    assert_eq!(ks, [4, 3, 2, 1, 0]);
    // The index of a key left out is not read either: a torn or short one (an interrupted
    // write of that key) fails only reads of that key.
    fs::write(current.join("s.idx"), [1u8; 5]).unwrap();
    assert_eq!(GranularReader::open(&current).err().unwrap().kind(), ErrorKind::Corrupt);
    let k = GranularReader::open_with(&current, &GranularOptions::default().keys(["k"])).unwrap();
    assert_eq!(k.len(), 5);
    assert_eq!(k.read(4).unwrap().get("k").unwrap().as_i64(), Some(4));
    assert!(k.read_masked(0, &GranularMask::new().key("s")).is_err());
    fs::write(current.join("s.idx"), u64s(&[1, 2])).unwrap(); // two records where k has five
    let k = GranularReader::open_with(&current, &GranularOptions::default().keys(["k"])).unwrap();
    assert_eq!(k.read_batch(&[0, 4]).unwrap().len(), 2);

    // An empty selection reads records without fields.
    let none = GranularOptions::default().keys(Vec::<String>::new());
    let r = GranularReader::open_with(&refs, &none).unwrap();
    assert!(names(&r).is_empty());
    assert_eq!(r.read(2).unwrap().len(), 0);
}

/// A dataset copied without the files of a key (its image bags, say) opens for the keys
/// it still has when that key is left out, and reads as the whole dataset does for them;
/// reading the missing key is a "not found" naming its file.
#[test]
fn a_key_left_out_need_not_have_its_files() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("current");
    current_dataset(&dir, 6);
    let whole: Vec<Option<i64>> = {
        let r = GranularReader::open(&dir).unwrap();
        (0..6).map(|i| r.read(i).unwrap().get("k").unwrap().as_i64()).collect()
    };
    fs::remove_file(dir.join("s.bag")).unwrap();
    fs::remove_file(dir.join("s.idx")).unwrap();

    let e = GranularReader::open(&dir).err().expect("s.bag is gone");
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
    for options in
        [GranularOptions::default().keys(["k"]), GranularOptions::default().skip_keys(["s"])]
    {
        let r = GranularReader::open_with(&dir, &options).unwrap();
        assert_eq!(r.len(), 6);
        let batch = r.read_batch(&[5, 0, 3]).unwrap();
        let ks: Vec<Option<i64>> = batch.iter().map(|rec| rec.get("k").unwrap().as_i64()).collect();
        assert_eq!(ks, [whole[5], whole[0], whole[3]]);
        assert_eq!(r.read(2).unwrap().len(), 1, "only k");
        let e = r.read_masked(1, &GranularMask::new().key("s")).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
        assert!(e.to_string().contains("s.idx") && e.to_string().contains("left out"), "{e}");
    }
    // A file of a key that is read stays required.
    fs::remove_file(dir.join("k.idx")).unwrap();
    let e = GranularReader::open_with(&dir, &GranularOptions::default().keys(["k"]))
        .err()
        .expect("k.idx is gone");
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
    assert!(e.to_string().contains("k.idx"), "{e}");
}

#[test]
fn a_hint_names_the_reads_of_the_batch_it_announces() {
    let dir = tempfile::tempdir().unwrap();
    current_dataset(dir.path(), 50);
    let (desc, files) = dataset_bytes(dir.path());
    for cache_index in [true, false] {
        let memory =
            MemFiles::new(files.iter().map(|(p, b)| (p.clone(), Arc::<[u8]>::from(&b[..]))));
        let log = Arc::new(HintLog::new(memory));
        let options = GranularOptions { cache_index, ..GranularOptions::default() };
        let reader = GranularReader::from_files(desc.clone(), log.clone(), &options).unwrap();
        log.take_reads(); // what opening read
        let batch = [7u64, 3, 42, 3, 49];
        reader.will_read(&batch);
        let records = reader.read_batch(&batch).unwrap();
        // Record i's `s` is i times "x".
        let lens: Vec<usize> = records.iter().map(|r| r.str("s").unwrap().len()).collect();
        assert_eq!(lens, [7, 3, 42, 3, 49]);
        let (hinted, read) = (log.take_hints().concat(), log.take_reads());
        if cache_index {
            // Planned as the read plans them: the same requests, each record's bags.
            assert!(!hinted.is_empty());
            assert_eq!(hinted, read);
        } else {
            // The index entries of the batch are on disk and must be read first: no hint.
            assert!(hinted.is_empty(), "{hinted:?}");
            assert!(!read.is_empty());
        }
        // A hint never fails, even naming records that are not there.
        reader.will_read(&[50, u64::MAX]);
    }
}
