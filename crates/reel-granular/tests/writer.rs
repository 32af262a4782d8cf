//! Writers: the spec's worked examples byte for byte, staging and resuming, sharding.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::fs;
use std::path::Path;

use reel_core::testing::golden::unhex;
use reel_core::{DType, ErrorKind, Record, RecordSink, RecordSource, RecordSourceExt};
use reel_granular::{
    BagsWriter, GranularMask, GranularReader, GranularSpec, GranularWriter, GranularWriterOptions,
    PARTIAL_SPEC, RefsFlavor, ShardFormat, ShardedWriter, ShardedWriterOptions, staging_path,
};

fn u64s(v: &[u64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn files_of(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into())
        .collect();
    v.sort();
    v
}

fn example_spec() -> GranularSpec {
    GranularSpec::new().with("name", "utf8").with("label", "int").with("vec", "array")
}

#[test]
fn current_layout_worked_example() {
    // spec §10.1: granular 0.24.2 writes exactly these bytes.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("ds");
    let mut w = GranularWriter::create(&dir, &example_spec()).unwrap();
    let mut a = Record::new().with_str("name", "hi").with_int("label", 7);
    a.push_array("vec", DType::U8, &[2], &[1, 2]).unwrap();
    let mut b = Record::new().with_str("name", "abc").with_int("label", 300);
    b.push_array("vec", DType::F32, &[0], &[]).unwrap();
    assert_eq!(w.append(a.view()).unwrap(), 0);
    assert_eq!(w.append(b.view()).unwrap(), 1);
    assert_eq!(w.size(), 76);
    assert!(!dir.exists(), "nothing appears before finish");
    let summary = w.finish().unwrap();
    assert_eq!((summary.records, summary.bytes), (2, 76));
    assert_eq!(
        fs::read_to_string(dir.join("spec.json")).unwrap(),
        r#"{"label": "int", "name": "utf8", "vec": "array"}"#
    );
    assert_eq!(fs::read(dir.join("label.bag")).unwrap(), unhex("072c01"));
    assert_eq!(fs::read(dir.join("label.idx")).unwrap(), u64s(&[1, 3]));
    assert_eq!(fs::read(dir.join("name.bag")).unwrap(), b"hiabc");
    assert_eq!(fs::read(dir.join("name.idx")).unwrap(), u64s(&[2, 5]));
    assert_eq!(
        fs::read(dir.join("vec.bag")).unwrap(),
        unhex("93a37c753191 02c4020102 93a33c663491 00c400".replace(' ', "").as_str())
    );
    assert_eq!(fs::read(dir.join("vec.idx")).unwrap(), u64s(&[11, 20]));
    assert_eq!(files_of(tmp.path()), ["ds"]);

    let r = GranularReader::open(&dir).unwrap();
    assert_eq!(r.read(1).unwrap().get("label").unwrap().as_i64(), Some(300));
}

#[test]
fn empty_values_and_zero_datapoints() {
    let tmp = tempfile::tempdir().unwrap();
    let spec = GranularSpec::new().with("a", "utf8").with("b", "bytes");
    let dir = tmp.path().join("e");
    let mut w = GranularWriter::create(&dir, &spec).unwrap();
    w.append(Record::new().with_str("a", "").with_bytes("b", b"").view()).unwrap();
    w.append(Record::new().with_str("a", "x").with_bytes("b", b"").view()).unwrap();
    w.finish().unwrap();
    assert_eq!(fs::read(dir.join("a.bag")).unwrap(), b"x");
    assert_eq!(fs::read(dir.join("a.idx")).unwrap(), u64s(&[0, 1]));
    assert_eq!(fs::read(dir.join("b.idx")).unwrap(), u64s(&[0, 0]));

    let dir = tmp.path().join("zero");
    GranularWriter::create(&dir, &spec).unwrap().finish().unwrap();
    assert_eq!(files_of(&dir), ["a.bag", "a.idx", "b.bag", "b.idx", "spec.json"]);
    assert!(fs::read(dir.join("a.bag")).unwrap().is_empty());
    assert_eq!(GranularReader::open(&dir).unwrap().len(), 0);
}

#[test]
fn refs_layouts_worked_examples() {
    let tmp = tempfile::tempdir().unwrap();
    // spec §10.2: granular 0.21.2, single-file v2 bags.
    let spec =
        GranularSpec::new().with("name", "utf8").with("label", "int").with("words", "utf8[]");
    let dir = tmp.path().join("g2");
    let mut w = BagsWriter::create(&dir, &spec, RefsFlavor::Granular021).unwrap();
    for (name, label, words) in [("hi", 7, &["a", "bc"][..]), ("abc", 300, &[]), ("z", 1, &["d"])] {
        let mut r = Record::new().with_str("name", name).with_int("label", label);
        let mut out = r.out();
        let items = words.iter().map(|w| out.append_str(w)).collect();
        out.push("words".into(), reel_core::Value::List(items));
        w.append(r.view()).unwrap();
    }
    w.finish().unwrap();
    let mut label = unhex("072c0101");
    label.extend(u64s(&[1, 3, 4]));
    assert_eq!(fs::read(dir.join("label.bag")).unwrap(), label);
    let mut refs = unhex("930000920002930101909302029202 01".replace(' ', "").as_str());
    refs.extend(u64s(&[6, 10, 16]));
    assert_eq!(fs::read(dir.join("refs.bag")).unwrap(), refs);
    assert_eq!(fs::read(dir.join("words.bag")).unwrap().len(), 28);
    assert_eq!(fs::read(dir.join("spec.json")).unwrap().len(), 51);
    let r = GranularReader::open(&dir).unwrap();
    let avail = r.available(1).unwrap();
    assert_eq!(avail[2].items, Some(0..0));
    let part = r.read_masked(0, &GranularMask::new().items("words", 1..5)).unwrap();
    assert_eq!(part.get("words").unwrap().as_list().unwrap().get(0).unwrap().as_str(), Some("bc"));

    // spec §10.3: bags 0.5.1, single-file v1 bags, unsigned int with 0 as an empty record.
    let spec = GranularSpec::new()
        .with("name", "utf8")
        .with("label", "int")
        .with("words", "utf8[]")
        .with("vec", "array(uint8,2)");
    let dir = tmp.path().join("g1");
    let mut w = BagsWriter::create(&dir, &spec, RefsFlavor::Bags051).unwrap();
    for (name, label, words, vec) in [("hi", 7, &["a", "bc"][..], [1u8, 2]), ("", 0, &[], [3, 4])] {
        let mut r = Record::new().with_str("name", name).with_int("label", label);
        r.push_array("vec", DType::U8, &[2], &vec).unwrap();
        let mut out = r.out();
        let items = words.iter().map(|w| out.append_str(w)).collect();
        out.push("words".into(), reel_core::Value::List(items));
        w.append(r.view()).unwrap();
    }
    w.finish().unwrap();
    assert_eq!(
        fs::read_to_string(dir.join("spec.json")).unwrap(),
        r#"{"label": "int", "name": "utf8", "vec": "array(uint8,2)", "words": "utf8[]"}"#
    );
    let mut label = vec![7u8];
    label.extend(u64s(&[0, 1, 1]));
    assert_eq!(fs::read(dir.join("label.bag")).unwrap(), label);
    let mut refs = unhex("94000000920002940101 0190".replace(' ', "").as_str());
    refs.extend(u64s(&[0, 7, 12]));
    assert_eq!(fs::read(dir.join("refs.bag")).unwrap(), refs);
    for (f, size) in [("name.bag", 26), ("vec.bag", 28), ("words.bag", 27)] {
        assert_eq!(fs::read(dir.join(f)).unwrap().len(), size, "{f}");
    }
    let r = GranularReader::open(&dir).unwrap();
    let dp = r.read(1).unwrap();
    assert_eq!(dp.get("label").unwrap().as_i64(), Some(0));
    assert!(dp.get("words").unwrap().as_list().unwrap().is_empty());
    assert_eq!(dp.get("vec").unwrap().as_array().unwrap().data, &[3, 4]);
}

#[test]
fn v2_bags_refuse_a_leading_empty_record() {
    let tmp = tempfile::tempdir().unwrap();
    let spec = GranularSpec::new().with("s", "utf8");
    let mut w = BagsWriter::create(tmp.path().join("d"), &spec, RefsFlavor::Granular021).unwrap();
    let e = w.append(Record::new().with_str("s", "").view()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    // The dataset cannot be finished consistently any more, and nothing is left behind.
    assert!(w.finish().is_err());
    drop(w);
    assert!(files_of(tmp.path()).is_empty());
}

#[test]
fn dropped_writers_leave_nothing_that_opens() {
    let tmp = tempfile::tempdir().unwrap();
    let spec = GranularSpec::new().with("x", "bytes");
    {
        let mut w = GranularWriter::create(tmp.path().join("a"), &spec).unwrap();
        w.append(Record::new().with_bytes("x", b"1").view()).unwrap();
        w.flush().unwrap();
        // The staging directory exists but is not a dataset for any reader.
        assert!(GranularReader::open(w.files_dir()).is_err());
    }
    {
        let mut w = BagsWriter::create(tmp.path().join("b"), &spec, RefsFlavor::Bags051).unwrap();
        w.append(Record::new().with_bytes("x", b"1").view()).unwrap();
    }
    {
        let o = ShardedWriterOptions::default().shard_len(1);
        let mut w = ShardedWriter::create(tmp.path().join("c"), &spec, &o).unwrap();
        for _ in 0..3 {
            w.append(Record::new().with_bytes("x", b"1").view()).unwrap();
        }
    }
    assert!(files_of(tmp.path()).is_empty(), "{:?}", files_of(tmp.path()));
}

#[test]
fn crashed_write_resumes_without_the_torn_index_bug() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("ds");
    let spec = GranularSpec::new().with("k", "int").with("t", "utf8");
    let mut w = GranularWriter::create(&dir, &spec).unwrap();
    for i in 0..5 {
        w.append(Record::new().with_int("k", i).with_str("t", &format!("r{i}")).view()).unwrap();
    }
    w.suspend().unwrap();
    // Simulate a crash in the middle of the next flush: column k got data and a torn index
    // entry, column t one whole record more than k.
    let staging = staging_path(&dir).unwrap();
    assert!(staging.join(PARTIAL_SPEC).is_file() && !dir.exists());
    let append = |name: &str, bytes: &[u8]| {
        use std::io::Write;
        fs::OpenOptions::new()
            .append(true)
            .open(staging.join(name))
            .unwrap()
            .write_all(bytes)
            .unwrap();
    };
    append("k.bag", b"\x05\x06");
    append("k.idx", &[1, 2, 3]);
    append("t.bag", b"r5junk");
    append("t.idx", &u64s(&[12]));

    let mut w = GranularWriter::resume(&dir).unwrap();
    assert_eq!(w.len(), 5);
    for i in 5..8 {
        w.append(Record::new().with_int("k", i).with_str("t", &format!("r{i}")).view()).unwrap();
    }
    w.finish().unwrap();
    assert!(!staging.exists());
    let r = GranularReader::open(&dir).unwrap();
    assert!(r.info().warnings.is_empty());
    assert_eq!(r.len(), 8);
    for i in 0..8 {
        let dp = r.read(i).unwrap();
        assert_eq!(dp.get("k").unwrap().as_i64(), Some(i as i64));
        assert_eq!(dp.view().str("t"), Some(format!("r{i}").as_str()));
    }
    assert_eq!(fs::read(dir.join("k.idx")).unwrap(), u64s(&(1..=8).collect::<Vec<_>>()));

    // A finished dataset is appended to in place; a torn entry there is repaired too.
    {
        use std::io::Write;
        fs::OpenOptions::new()
            .append(true)
            .open(dir.join("t.idx"))
            .unwrap()
            .write_all(&[9; 5])
            .unwrap();
    }
    assert_eq!(GranularReader::open(&dir).err().unwrap().kind(), ErrorKind::Corrupt);
    let mut w = GranularWriter::resume(&dir).unwrap();
    w.append(Record::new().with_int("k", 8).with_str("t", "r8").view()).unwrap();
    w.finish().unwrap();
    assert_eq!(GranularReader::open(&dir).unwrap().read(8).unwrap().view().str("t"), Some("r8"));
}

/// A writer killed after making its staging directory but before its spec was saved
/// (the spec is renamed into place whole) leaves nothing to resume, and `resume` says so
/// instead of calling a cut-short spec corrupt; a spec that is there is always whole.
#[test]
fn a_write_killed_before_its_spec_was_saved_has_nothing_to_resume() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("ds");
    let staging = staging_path(&dir).unwrap();
    std::fs::create_dir(&staging).unwrap();
    // What a kill between staging the spec and renaming it leaves.
    std::fs::write(staging.join(".spec.json.reel-partial.tmp-1"), b"{\"x\"").unwrap();
    let e = GranularWriter::resume(&dir).err().unwrap();
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
    assert!(e.to_string().contains("before it saved its spec"), "{e}");
    // A fresh write starts once the user deletes it, as both messages say.
    let spec = GranularSpec::new().with("x", "bytes");
    assert!(GranularWriter::create(&dir, &spec).err().unwrap().to_string().contains("delete it"));
    std::fs::remove_dir_all(&staging).unwrap();
    let mut w = GranularWriter::create(&dir, &spec).unwrap();
    let saved = std::fs::read(staging.join("spec.json.reel-partial")).unwrap();
    assert_eq!(GranularSpec::parse(&saved).unwrap(), spec);
    w.append(Record::new().with_bytes("x", b"a").view()).unwrap();
    w.finish().unwrap();
    assert_eq!(GranularReader::open(&dir).unwrap().len(), 1);
}

#[test]
fn create_and_resume_guard_existing_data() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("ds");
    let spec = GranularSpec::new().with("x", "bytes");
    let mut w = GranularWriter::create(&dir, &spec).unwrap();
    w.append(Record::new().with_bytes("x", b"a").view()).unwrap();
    w.finish().unwrap();
    assert_eq!(GranularWriter::create(&dir, &spec).err().unwrap().kind(), ErrorKind::InvalidInput);
    let other = GranularSpec::new().with("y", "bytes");
    let e = GranularWriter::create_or_resume(&dir, &other, &GranularWriterOptions::default());
    assert_eq!(e.err().unwrap().kind(), ErrorKind::Schema);
    let mut w =
        GranularWriter::create_or_resume(&dir, &spec, &GranularWriterOptions::default()).unwrap();
    assert_eq!(w.len(), 1);
    // A datapoint with a missing or an extra key is refused and changes nothing.
    assert_eq!(w.append(Record::new().view()).unwrap_err().kind(), ErrorKind::Schema);
    let extra = Record::new().with_bytes("x", b"b").with_int("z", 1);
    assert_eq!(w.append(extra.view()).unwrap_err().kind(), ErrorKind::Schema);
    assert_eq!(
        w.append(Record::new().with_int("x", 1).view()).unwrap_err().kind(),
        ErrorKind::Schema
    );
    assert_eq!(w.len(), 1);
    w.finish().unwrap();
    assert_eq!(
        w.append(Record::new().with_bytes("x", b"c").view()).unwrap_err().kind(),
        ErrorKind::Closed
    );
    // Specs the reference would refuse.
    for bad in [
        GranularSpec::new(),
        GranularSpec::new().with("Up", "bytes"),
        GranularSpec::new().with("a/b", "bytes"),
    ] {
        assert!(GranularWriter::create(tmp.path().join("bad"), &bad).is_err());
    }
    assert!(
        GranularWriter::create(tmp.path().join("bad"), &GranularSpec::new().with("a", "nope"))
            .is_err()
    );
    assert!(
        !tmp.path().join("bad").exists()
            && !staging_path(&tmp.path().join("bad")).unwrap().exists()
    );
}

#[test]
fn sharded_writer_splits_and_resumes() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    let spec = GranularSpec::new().with("n", "i64");
    let o = ShardedWriterOptions::default().shard_len(4);
    let mut w = ShardedWriter::create(&root, &spec, &o).unwrap();
    for i in 0..6 {
        assert_eq!(w.append(Record::new().with_int("n", i).view()).unwrap(), i as u64);
    }
    assert_eq!(w.shards(), 2);
    w.suspend().unwrap();
    assert!(!root.exists());
    let mut w = ShardedWriter::resume(&root, &spec, &o).unwrap();
    assert_eq!(w.len(), 6);
    for i in 6..10 {
        w.append(Record::new().with_int("n", i).view()).unwrap();
    }
    let s = w.finish().unwrap();
    assert_eq!(s.records, 10);
    assert_eq!(files_of(&root), ["000000", "000001", "000002"]);
    let r = GranularReader::open(&root).unwrap();
    assert_eq!((r.len(), r.shard_count()), (10, 3));
    for i in 0..10 {
        assert_eq!(r.read(i).unwrap().get("n").unwrap().as_i64(), Some(i as i64));
    }
    let odd = reel_granular::GranularReader::open_with(
        &root,
        &reel_granular::GranularOptions::default().shards(1, 2),
    )
    .unwrap();
    assert_eq!(odd.len(), 4);
    assert_eq!(odd.read(0).unwrap().get("n").unwrap().as_i64(), Some(4));

    // Two writers fill one existing root: shards 0, 2, … and 1, 3, ….
    let root = tmp.path().join("multi");
    fs::create_dir(&root).unwrap();
    for start in 0..2 {
        let o = ShardedWriterOptions::default()
            .shard_len(2)
            .shards(start, 2)
            .format(ShardFormat::Refs(RefsFlavor::Bags051));
        let mut w = ShardedWriter::create(&root, &spec.clone().with("n", "int"), &o).unwrap();
        for i in 0..4 {
            w.append(Record::new().with_int("n", 10 * start as i64 + i).view()).unwrap();
        }
        w.finish().unwrap();
    }
    let r = GranularReader::open(&root).unwrap();
    let values: Vec<i64> =
        (0..8).map(|i| r.read(i).unwrap().get("n").unwrap().as_i64().unwrap()).collect();
    assert_eq!(values, [0, 1, 10, 11, 2, 3, 12, 13]);
    assert!(
        ShardedWriter::create(
            tmp.path().join("x"),
            &spec,
            &ShardedWriterOptions::default().shards(1, 1)
        )
        .is_err()
    );
}

#[test]
fn writers_are_record_sinks() {
    let tmp = tempfile::tempdir().unwrap();
    let spec = GranularSpec::new().with("x", "utf8");
    let mut sinks: Vec<Box<dyn RecordSink>> = vec![
        Box::new(GranularWriter::create(tmp.path().join("a"), &spec).unwrap()),
        Box::new(BagsWriter::create(tmp.path().join("b"), &spec, RefsFlavor::Bags051).unwrap()),
        Box::new(
            ShardedWriter::create(tmp.path().join("c"), &spec, &ShardedWriterOptions::default())
                .unwrap(),
        ),
    ];
    for s in &mut sinks {
        s.append(Record::new().with_str("x", "hello").view()).unwrap();
        assert_eq!(s.finish().unwrap().records, 1);
        assert_eq!(s.finish().unwrap_err().kind(), ErrorKind::Closed);
    }
    for d in ["a", "b", "c"] {
        assert_eq!(
            GranularReader::open(tmp.path().join(d)).unwrap().read(0).unwrap().view().str("x"),
            Some("hello")
        );
    }
}

#[test]
fn finish_refuses_to_overwrite_and_can_be_retried() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("ds");
    let spec = GranularSpec::new().with("x", "bytes");
    let mut w = GranularWriter::create(&dir, &spec).unwrap();
    w.append(Record::new().with_bytes("x", b"a").view()).unwrap();
    fs::create_dir(&dir).unwrap();
    fs::write(dir.join("other"), b"precious").unwrap();
    assert_eq!(w.finish().unwrap_err().kind(), ErrorKind::InvalidInput);
    assert_eq!(fs::read(dir.join("other")).unwrap(), b"precious");
    fs::remove_dir_all(&dir).unwrap();
    w.append(Record::new().with_bytes("x", b"b").view()).unwrap();
    assert_eq!(w.finish().unwrap().records, 2);
    assert_eq!(GranularReader::open(&dir).unwrap().len(), 2);
}

#[test]
fn sink_writes_the_layout_it_is_told_with_the_spec_fitted_to_it() {
    use reel_granular::GranularSink;
    let tmp = tempfile::tempdir().unwrap();
    let spec =
        GranularSpec::new().with("words", "utf8[]").with("n", "int").with("v", "array(int16,2)");
    let src = tmp.path().join("src");
    let mut w = BagsWriter::create(&src, &spec, RefsFlavor::Bags051).unwrap();
    for i in 0..4 {
        let mut r = Record::new().with_int("n", i);
        let mut out = r.out();
        let words = (0..i).map(|k| out.append_str(&format!("{i}{k}"))).collect();
        out.push("words".into(), reel_core::Value::List(words));
        r.push_array("v", DType::I16, &[2], &[i as u8, 0, 1, 0]).unwrap();
        w.append(r.view()).unwrap();
    }
    w.finish().unwrap();
    let reader = GranularReader::open(&src).unwrap();
    let info = reader.info();
    let copy = |dst: &Path, layout: ShardFormat| {
        let mut sink = GranularSink::new(
            dst,
            info.schema.as_deref(),
            layout,
            GranularWriterOptions::default(),
        );
        for i in 0..reader.len() {
            sink.append(reader.read(i).unwrap().view()).unwrap();
        }
        assert_eq!(sink.finish().unwrap().records, 4);
    };
    // Told the bags layout, a bags source converts to an identical bags dataset.
    let dst = tmp.path().join("dst");
    copy(&dst, ShardFormat::Refs(RefsFlavor::Bags051));
    for f in files_of(&src) {
        assert_eq!(fs::read(src.join(&f)).unwrap(), fs::read(dst.join(&f)).unwrap(), "{f}");
    }
    // Told the current layout, the same source gives granular 0.24's layout and types,
    // holding the same datapoints.
    let current = tmp.path().join("current");
    copy(&current, ShardFormat::Indexed);
    assert!(!current.join("refs.bag").exists());
    for key in ["n", "v", "words"] {
        assert!(current.join(format!("{key}.idx")).is_file(), "{key}.idx");
    }
    let back = GranularReader::open(&current).unwrap();
    assert_eq!(back.generation(), reel_granular::Generation::Indexed);
    let types: Vec<(&str, &str)> = back.spec().iter().collect();
    assert_eq!(types, [("n", "int"), ("v", "array"), ("words", "tree")]);
    for i in 0..reader.len() {
        let (want, got) = (reader.read(i).unwrap(), back.read(i).unwrap());
        for (name, value) in want.iter() {
            assert!(got.get(name) == Some(value), "datapoint {i}, {name}");
        }
    }
    // Another format's schema is not a spec: the first record decides.
    let schema = [reel_core::FieldSpec { name: "x".into(), kind: "int16".into() }];
    let sink_for = |path: &Path| {
        GranularSink::new(
            path,
            Some(&schema),
            ShardFormat::Indexed,
            GranularWriterOptions::default(),
        )
    };
    let other = tmp.path().join("other");
    let mut sink = sink_for(&other);
    let mut r = Record::new().with_str("label", "cat");
    r.push_array("x", DType::I16, &[2], &[1, 0, 2, 0]).unwrap();
    sink.append(r.view()).unwrap();
    sink.finish().unwrap();
    let back = GranularReader::open(&other).unwrap();
    assert_eq!(back.spec().get("x"), Some("array"));
    // With no record the schema's keys are kept, as msgpack (which holds any value).
    let empty = tmp.path().join("empty");
    sink_for(&empty).finish().unwrap();
    let empty = GranularReader::open(&empty).unwrap();
    assert_eq!((empty.len(), empty.spec().get("x")), (0, Some("msgpack")));
    assert!(back.read(0).unwrap() == r);
}

#[test]
fn shards_of_a_size_are_sealed_when_the_next_starts() {
    let tmp = tempfile::tempdir().unwrap();
    let spec = GranularSpec::new().with("blob", "bytes");
    let blob = |i: u8| Record::new().with_bytes("blob", &[i; 300]);
    for layout in [ShardFormat::Indexed, ShardFormat::Refs(RefsFlavor::Bags051)] {
        let root = tmp.path().join(format!("{layout:?}"));
        let moved = tmp.path().join(format!("{layout:?}-moved"));
        fs::create_dir(&moved).unwrap();
        let o = ShardedWriterOptions::default().shard_bytes(1000).format(layout);
        let mut w = ShardedWriter::create(&root, &spec, &o).unwrap();
        let mut sealed = Vec::new();
        for i in 0..10 {
            w.append(blob(i).view()).unwrap();
            for file in RecordSink::take_sealed(&mut w) {
                // A shard's files, complete: its spec is there.
                let shard = file.name.split('/').next().unwrap().to_string();
                assert!(file.path.parent().unwrap().join("spec.json").is_file(), "{}", file.name);
                if file.name.ends_with(".bag") {
                    fs::create_dir_all(moved.join(&shard)).unwrap();
                    fs::rename(&file.path, moved.join(&file.name)).unwrap();
                }
                sealed.push(file.name);
            }
        }
        // Four records of 300 bytes pass 1000: shards of four, the third still open.
        assert_eq!(w.shards(), 3);
        assert!(sealed.iter().any(|n| n.starts_with("000000/")), "{sealed:?}");
        assert!(sealed.iter().any(|n| n.starts_with("000001/")), "{sealed:?}");
        assert!(!sealed.iter().any(|n| n.starts_with("000002/")), "{sealed:?}");
        w.finish().unwrap();
        assert!(RecordSink::take_sealed(&mut w).is_empty(), "{layout:?}");
        for name in sealed.iter().filter(|n| n.ends_with(".bag")) {
            assert!(!root.join(name).exists());
            fs::rename(moved.join(name), root.join(name)).unwrap();
        }
        let r = GranularReader::open(&root).unwrap();
        assert_eq!((r.len(), r.shard_count()), (10, 3), "{layout:?}");
        for i in 0..10u8 {
            let record = r.read(u64::from(i)).unwrap();
            assert_eq!(record.get("blob").unwrap().as_bytes(), Some(&[i; 300][..]));
        }
    }

    // Shards written into a root that exists appear as each is complete: nothing is sealed.
    let shared = tmp.path().join("shared");
    fs::create_dir(&shared).unwrap();
    let o = ShardedWriterOptions::default().shard_bytes(1000);
    let mut w = ShardedWriter::create(&shared, &spec, &o).unwrap();
    for i in 0..6 {
        w.append(blob(i).view()).unwrap();
    }
    assert_eq!(w.shards(), 2);
    assert!(RecordSink::take_sealed(&mut w).is_empty());
    w.finish().unwrap();

    // A resumed writer counts a shard of that size as full.
    let root = tmp.path().join("resumed");
    let mut w = ShardedWriter::create(&root, &spec, &o).unwrap();
    for i in 0..5 {
        w.append(blob(i).view()).unwrap();
    }
    w.suspend().unwrap();
    let mut w = ShardedWriter::resume(&root, &spec, &o).unwrap();
    for i in 5..9 {
        w.append(blob(i).view()).unwrap();
    }
    w.finish().unwrap();
    let r = GranularReader::open(&root).unwrap();
    assert_eq!((r.len(), r.shard_count()), (9, 3));
    assert!(
        ShardedWriter::create(tmp.path().join("zero"), &spec, &o.clone().shard_bytes(0)).is_err()
    );
}

/// A write interrupted (its writer gone, its staging directory left) is told from one still
/// going on: a new `create` refuses the first, saying how to resume, replace or delete it,
/// and with `replace_interrupted` deletes it and starts again; a writer that is alive holds
/// its directory, so neither `create` (replacing or not) nor `resume` takes it over.
#[test]
fn an_interrupted_write_is_told_from_a_live_one() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("ds");
    let spec = GranularSpec::new().with("k", "int");
    let staging = staging_path(&dir).unwrap();
    let replacing = GranularWriterOptions::default().replace_interrupted(true);

    let mut live = GranularWriter::create(&dir, &spec).unwrap();
    live.append(Record::new().with_int("k", 1).view()).unwrap();
    for attempt in [
        GranularWriter::create(&dir, &spec).err(),
        GranularWriter::create_with(&dir, &spec, &replacing).err(),
        GranularWriter::resume(&dir).err(),
    ] {
        let e = attempt.expect("a live writer's directory was taken over");
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
        assert!(e.to_string().contains("another writer is writing"), "{e}");
    }
    assert!(staging.join(PARTIAL_SPEC).is_file());
    live.suspend().unwrap(); // what a killed process leaves: its records, no writer

    let e = GranularWriter::create(&dir, &spec).err().unwrap();
    let text = e.to_string();
    assert!(text.contains("interrupted") && text.contains("--force"), "{text}");
    assert!(staging.is_dir());
    let mut w = GranularWriter::create_with(&dir, &spec, &replacing).unwrap();
    w.append(Record::new().with_int("k", 7).view()).unwrap();
    w.finish().unwrap();
    assert!(!staging.exists());
    let r = GranularReader::open(&dir).unwrap();
    assert_eq!(r.len(), 1);
    assert_eq!(r.read(0).unwrap().get("k").unwrap().as_i64(), Some(7));

    // Appending in place claims the dataset itself.
    let mut appending = GranularWriter::resume(&dir).unwrap();
    let e = GranularWriter::resume(&dir).err().unwrap();
    assert!(e.to_string().contains("another writer is writing"), "{e}");
    appending.append(Record::new().with_int("k", 8).view()).unwrap();
    appending.finish().unwrap();
    assert_eq!(GranularReader::open(&dir).unwrap().len(), 2);
}

/// The same for a sharded root staged beside its target.
#[test]
fn an_interrupted_sharded_write_is_replaced_only_when_asked() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    let spec = GranularSpec::new().with("k", "int");
    let options = ShardedWriterOptions { shard_len: Some(2), ..ShardedWriterOptions::default() };
    let mut live = ShardedWriter::create(&root, &spec, &options).unwrap();
    for i in 0..3 {
        live.append(Record::new().with_int("k", i).view()).unwrap();
    }
    let e = ShardedWriter::create(&root, &spec, &options).err().unwrap();
    assert!(e.to_string().contains("another writer is writing"), "{e}");
    live.suspend().unwrap();
    let e = ShardedWriter::create(&root, &spec, &options).err().unwrap();
    assert!(e.to_string().contains("ShardedWriter::resume"), "{e}");
    let mut replacing = options.clone();
    replacing.writer.replace_interrupted = true;
    let mut w = ShardedWriter::create(&root, &spec, &replacing).unwrap();
    w.append(Record::new().with_int("k", 5).view()).unwrap();
    w.finish().unwrap();
    assert!(!staging_path(&root).unwrap().exists());
    assert_eq!(GranularReader::open(&root).unwrap().len(), 1);
}
