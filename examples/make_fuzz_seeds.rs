//! Writes the seed inputs of every fuzz target into `fuzz/seeds/<target>/`: small valid
//! datasets made by reel's own writers (never copies of the golden corpus), encoded the
//! way each target reads its input, so fuzzing starts from inputs that reach deep into
//! each parser.
//!
//! Run from the workspace root: `cargo run -p reel --example make_fuzz_seeds` (it needs
//! every format, i.e. the default features).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[cfg(all(feature = "syrah", feature = "ofrecord", feature = "granular", feature = "gulp"))]
#[path = "../fuzz/harness/mod.rs"]
mod harness;

#[cfg(not(all(feature = "syrah", feature = "ofrecord", feature = "granular", feature = "gulp")))]
fn main() {
    eprintln!("make_fuzz_seeds needs every format feature (build with the default features)");
    std::process::exit(2);
}

#[cfg(all(feature = "syrah", feature = "ofrecord", feature = "granular", feature = "gulp"))]
fn main() {
    seeds::write_all();
    println!("seeds written to fuzz/seeds/");
}

#[cfg(all(feature = "syrah", feature = "ofrecord", feature = "granular", feature = "gulp"))]
mod seeds {
    use std::path::{Path, PathBuf};

    use reel::ffrecord::{FfrecordWriter, FolderDir, FolderEntry, pickle};
    use reel::granular::codec::{CodecFamily, CodecSettings, CodecTable, codec_for};
    use reel::granular::{
        BagKind, BagsWriter, DatasetFiles, Generation, GranularSpec, GranularWriter, RefsFlavor,
        bag,
    };
    use reel::gulp::{Frame, GulpWriteOptions, GulpWriter, JsonValue, encode_jpeg};
    use reel::ofrecord::{EncodeOptions, OfrecordFileWriter, encode_record};
    use reel::syrah::SyrahWriter;
    use reel::{DType, Record, Value};

    use crate::harness::granular::{CODEC_TYPES, DATASET_KEYS, SPEC_SELECTOR, dataset_spec, flags};
    use crate::harness::input::InputBuilder;

    fn seeds_dir(target: &str) -> PathBuf {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/seeds").join(target);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn write(target: &str, name: &str, bytes: &[u8]) {
        std::fs::write(seeds_dir(target).join(name), bytes).unwrap();
    }

    /// Runs `f` with a fresh path in a temporary directory and returns the bytes it left
    /// there.
    fn written(name: &str, f: impl FnOnce(&Path)) -> Vec<u8> {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(name);
        f(&p);
        std::fs::read(p).unwrap()
    }

    /// A directory description for the dir targets: (name index, u16 length, content).
    fn dir_entry(name: &str, content: &[u8]) -> Vec<u8> {
        let index = crate::harness::dir::NAMES.iter().position(|n| *n == name).unwrap();
        let mut b = InputBuilder::default();
        b.byte(index as u8).chunk(content);
        b.bytes
    }

    pub fn write_all() {
        let dirs = ffrecord();
        let dirs = [dirs, syrah(), ofrecord(), granular(), gulp()].concat();
        for target in ["open_dir", "backends_agree"] {
            for (name, bytes) in &dirs {
                write(target, name, bytes);
            }
        }
    }

    fn ffrecord_bytes(records: &[&[u8]]) -> Vec<u8> {
        written("s.ffr", |p| {
            let mut w = FfrecordWriter::create(p, records.len() as u64).unwrap();
            for r in records {
                w.write_one(r).unwrap();
            }
            w.finish().unwrap();
        })
    }

    fn packed_bytes() -> Vec<u8> {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("src");
        std::fs::create_dir_all(src.join("sub/e")).unwrap();
        std::fs::write(src.join("a.txt"), "A").unwrap();
        std::fs::write(src.join("sub/b"), "BB").unwrap();
        let out = dir.path().join("p.ffr");
        reel::ffrecord::pack_folder(&src, &out).unwrap();
        std::fs::read(out).unwrap()
    }

    /// FFRecord seeds; returns the dataset directories for the dir targets.
    fn ffrecord() -> Vec<(String, Vec<u8>)> {
        let small = ffrecord_bytes(&[b"hello", b"AB", b"", b"x"]);
        let packed = packed_bytes();
        write("ffrecord_file", "small.ffr", &small);
        write("ffrecord_file", "empty.ffr", &ffrecord_bytes(&[]));
        write("ffrecord_file", "packed.ffr", &packed);

        let mut tree = FolderDir::new();
        tree.insert("a".into(), FolderEntry::File(0));
        let mut sub = FolderDir::new();
        sub.insert("b".into(), FolderEntry::File(1));
        sub.insert("empty".into(), FolderEntry::Dir(FolderDir::new()));
        tree.insert("sub".into(), FolderEntry::Dir(sub));
        write("ffrecord_pickle", "tree.pickle", &pickle::write_folder_index(&tree));
        write("ffrecord_pickle", "packed_meta.pickle", &packed[packed.len() - 120..]);

        write("ffrecord_roundtrip", "records.bin", b"\x05hello\x00\x02AB\x03xyz");

        vec![
            ("ffrecord_file.dir".into(), dir_entry("data.ffr", &small)),
            (
                "ffrecord_parts.dir".into(),
                [dir_entry("PART_00000.ffr", &small), dir_entry("PART_00001.ffr", &small)].concat(),
            ),
        ]
    }

    fn syrah_bytes(items: &[Record]) -> Vec<u8> {
        written("s.syr", |p| {
            let mut w = SyrahWriter::create(p).unwrap();
            for item in items {
                w.add_item(item).unwrap();
            }
            w.finish().unwrap();
        })
    }

    fn syrah() -> Vec<(String, Vec<u8>)> {
        let mut items = Vec::new();
        for k in 0..3u8 {
            let mut r = Record::new();
            r.push_array("label", DType::I32, &[1], &i32::from(k).to_le_bytes()).unwrap();
            r.push_str("text", &"héllo".repeat(k as usize));
            r.push_array("f", DType::F64, &[2], &[k; 16]).unwrap();
            r.push_array("flags", DType::Bool, &[3], &[1, 0, k & 1]).unwrap();
            r.push_array("half", DType::F16, &[1], &[k, 0x3c]).unwrap();
            items.push(r);
        }
        let many = syrah_bytes(&items);
        let mut one = Record::new();
        one.push_array("x", DType::U8, &[4], b"abcd").unwrap();
        let single = syrah_bytes(&[one]);
        write("syrah_file", "items.syr", &many);
        write("syrah_file", "single.syr", &single);

        // Three arrays (int32, str, float32), two items, the second in another order.
        let mut b = InputBuilder::default();
        b.byte(2).short(b"a").byte(5).short(b"b").byte(13).short(b"c").byte(10).byte(1);
        b.byte(0)
            .byte(2)
            .raw(&[1, 0, 0, 0, 2, 0, 0, 0])
            .byte(3)
            .raw(b"xyz")
            .byte(1)
            .raw(&[0, 0, 128, 63]);
        b.byte(1).byte(2).raw(b"hi").byte(0).byte(1).raw(&[7, 0, 0, 0]);
        write("syrah_roundtrip", "items.bin", &b.bytes);
        write("syrah_roundtrip", "dtypes.bin", &(0u8..=255).collect::<Vec<_>>());

        vec![("syrah.dir".into(), dir_entry("data.syr", &many))]
    }

    fn ofrecord_records() -> Vec<Record> {
        let mut records = Vec::new();
        for k in 0..3u8 {
            let mut r = Record::new();
            r.push_bytes("encoded", &[0xff, 0xd8, k]);
            r.push_array("class/label", DType::I32, &[1], &i32::from(k).to_le_bytes()).unwrap();
            r.push_array("f", DType::F32, &[2], &[k; 8]).unwrap();
            r.push_array("d", DType::F64, &[1], &[k; 8]).unwrap();
            r.push_array("i", DType::I64, &[2], &[k; 16]).unwrap();
            r.push_null("none");
            let mut out = r.out();
            let list =
                Value::List(vec![Value::Bytes(out.append(b"a")), Value::Bytes(out.append(b""))]);
            out.push("list".into(), list);
            records.push(r);
        }
        records.push(Record::new());
        records
    }

    fn ofrecord() -> Vec<(String, Vec<u8>)> {
        let records = ofrecord_records();
        let part = written("part-00000", |p| {
            let mut w = OfrecordFileWriter::create(p).unwrap();
            for r in &records {
                w.write_record(r.view()).unwrap();
            }
            w.finish().unwrap();
        });
        write("ofrecord_frames", "part.bin", &part);
        write("ofrecord_frames", "empty.bin", b"");
        for (k, r) in records.iter().enumerate().take(2) {
            let payload = encode_record(r.view(), EncodeOptions::default()).unwrap();
            write("ofrecord_protobuf", &format!("record{k}.pb"), &payload);
        }

        // Two records per part, three records of every kind.
        let mut b = InputBuilder::default();
        b.byte(1).byte(3);
        for k in 0..3u8 {
            b.byte(4).short(b"bytes").byte(1).byte(2).short(b"ab").short(b"");
            b.short(b"f").byte(2).byte(2).raw(&[k; 8]);
            b.short(b"i").byte(4 + k % 2).byte(1).raw(&[k; 8]);
            b.short(b"d").byte(if k == 0 { 0 } else { 3 }).byte(1).raw(&[k; 8]);
        }
        write("ofrecord_roundtrip", "records.bin", &b.bytes);

        vec![
            ("ofrecord_file.dir".into(), dir_entry("part-00000", &part)),
            (
                "ofrecord_parts.dir".into(),
                [dir_entry("part-00000", &part), dir_entry("part-00001", &part)].concat(),
            ),
        ]
    }

    /// A value for a key of [`DATASET_KEYS`] (datapoint `k`).
    fn dataset_value(key: &str, k: u8, out: &mut reel::RecordOut<'_>) -> Value {
        match key {
            "blob" | "video" => Value::Bytes(out.append(&[k, 1, 2])),
            "text" => out.append_str(&format!("text {k}")),
            "int" | "i64" | "small" => Value::Int(i64::from(k) * 300),
            "u64" => Value::from_u64(u64::MAX - u64::from(k)),
            "meta" | "tree" => {
                let s = out.append_str("key");
                let v = out.append_str("value");
                let pixels = out.append(&[k; 6]);
                let arr = out.array_value(DType::U8, reel::Shape::new(&[2, 3]), pixels).unwrap();
                let mut entries = vec![(s, Value::List(vec![Value::Int(1), v, Value::Float(0.5)]))];
                if key == "tree" {
                    let a = out.append_str("arr");
                    entries.push((a, arr));
                }
                Value::Map(entries)
            }
            "arr" | "jpg" | "png" | "jpeg" => {
                let span = out.append(&[k.wrapping_mul(40); 12]);
                out.array_value(DType::U8, reel::Shape::new(&[2, 2, 3]), span).unwrap()
            }
            "vec" => {
                let span = out.append(&[k; 12]);
                out.array_value(DType::F32, reel::Shape::new(&[3]), span).unwrap()
            }
            "words" => {
                let items = (0..k).map(|i| out.append_str(&format!("w{i}"))).collect();
                Value::List(items)
            }
            "counts" => Value::List((0..k + 1).map(|i| Value::Int(i64::from(i))).collect()),
            other => panic!("no seed value for {other}"),
        }
    }

    fn dataset_records(spec: &GranularSpec) -> Vec<Record> {
        (1..4u8)
            .map(|k| {
                let mut r = Record::new();
                let mut out = r.out();
                for key in spec.keys() {
                    let v = dataset_value(key, k, &mut out);
                    out.push(key.into(), v);
                }
                r
            })
            .collect()
    }

    /// The `granular_dataset` input for the dataset at `dir`.
    fn dataset_input(dir: &Path, f: u8, mask: u16, generation: Generation) -> Vec<u8> {
        let spec = dataset_spec(mask);
        let desc = DatasetFiles::in_memory(dir, generation, &spec).unwrap();
        let spec_file = desc.shards()[0].spec as usize;
        let mut b = InputBuilder::default();
        b.byte(f).u16(mask);
        for (k, p) in desc.paths().iter().enumerate() {
            if k != spec_file {
                b.chunk(&std::fs::read(p).unwrap());
            }
        }
        b.bytes
    }

    fn mask_of(keys: &[&str]) -> u16 {
        keys.iter()
            .map(|k| 1u16 << DATASET_KEYS.iter().position(|(key, _)| key == k).unwrap())
            .fold(0, |a, b| a | b)
    }

    /// A dataset directory's files as a dir-target input, under `prefix` (for shards).
    fn dir_input(dir: &Path, prefix: &str) -> Vec<u8> {
        let mut out = Vec::new();
        let mut names: Vec<_> =
            std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
        names.sort();
        for p in names {
            let name = format!("{prefix}{}", p.file_name().unwrap().to_str().unwrap());
            out.extend(dir_entry(&name, &std::fs::read(&p).unwrap()));
        }
        out
    }

    fn granular() -> Vec<(String, Vec<u8>)> {
        let tmp = tempfile::tempdir().unwrap();

        // Current layout, every key the granular codecs know.
        let current = mask_of(&[
            "blob", "text", "int", "i64", "u64", "meta", "tree", "arr", "jpg", "png", "jpeg",
            "video", "vec",
        ]);
        let dir = tmp.path().join("current");
        let spec = dataset_spec(current);
        let mut w = GranularWriter::create(&dir, &spec).unwrap();
        for r in dataset_records(&spec) {
            w.append(r.view()).unwrap();
        }
        w.finish().unwrap();
        write(
            "granular_dataset",
            "current.bin",
            &dataset_input(&dir, 0, current, Generation::Indexed),
        );
        write(
            "granular_dataset",
            "current_decoded.bin",
            &dataset_input(
                &dir,
                flags::DECODE_IMAGES | flags::INDEX_ON_DISK,
                current,
                Generation::Indexed,
            ),
        );

        // Refs layouts: bags 0.5.1 (bags codecs) and granular 0.21 (granular codecs).
        let bags = mask_of(&[
            "blob", "text", "int", "meta", "png", "jpeg", "video", "vec", "small", "words",
            "counts",
        ]);
        let g021 = mask_of(&["text", "int", "i64", "meta", "tree", "arr", "words", "counts"]);
        for (name, flavor, mask) in
            [("bags", RefsFlavor::Bags051, bags), ("g021", RefsFlavor::Granular021, g021)]
        {
            let dir = tmp.path().join(name);
            let spec = dataset_spec(mask);
            let mut w = BagsWriter::create(&dir, &spec, flavor).unwrap();
            for r in dataset_records(&spec) {
                w.append(r.view()).unwrap();
            }
            w.finish().unwrap();
            let input = dataset_input(&dir, flags::REFS, mask, Generation::Refs);
            write("granular_dataset", &format!("{name}.bin"), &input);
        }

        // Every codec on a value it encodes.
        let mut rec = Record::new();
        let mut out = rec.out();
        let samples: Vec<(&str, Value)> = [
            ("bytes", "blob"),
            ("utf8", "text"),
            ("int", "int"),
            ("int(2)", "small"),
            ("i64", "i64"),
            ("u64", "u64"),
            ("msgpack", "meta"),
            ("tree", "tree"),
            ("array", "arr"),
            ("array(float32,3)", "vec"),
            ("jpg", "jpg"),
            ("png", "png"),
            ("mp4", "video"),
        ]
        .into_iter()
        .map(|(t, key)| (t, dataset_value(key, 2, &mut out)))
        .collect();
        for (t, v) in samples {
            let index = CODEC_TYPES.iter().position(|c| *c == t).unwrap();
            let bags = t.starts_with("int(");
            let family = if bags { CodecFamily::Bags } else { CodecFamily::Granular };
            let codec = codec_for(t, &CodecTable::new(), &CodecSettings::new(family)).unwrap();
            let mut encoded = Vec::new();
            codec.encode(v.view(rec.view().raw_buffer()), &mut encoded).unwrap();
            let mut b = InputBuilder::default();
            b.byte(index as u8).byte(u8::from(bags) | if t == "png" { 8 } else { 0 }).raw(&encoded);
            write("granular_codecs", &format!("{}.bin", t.replace(['(', ')', ','], "_")), &b.bytes);
        }

        // spec.json, through the codec target's spec mode.
        let all = dataset_spec(u16::MAX).with("é\u{1F600}\"\\", "array(<U2,-1)");
        let mut b = InputBuilder::default();
        b.byte(SPEC_SELECTOR).byte(0).raw(&all.to_json_bytes());
        write("granular_codecs", "spec.json", &b.bytes);

        // Bags: single-file v1 and v2, two-file.
        let recs: [&[u8]; 3] = [b"one", b"", b"three"];
        for (name, kind) in [("v1", BagKind::SingleV1), ("v2", BagKind::SingleV2)] {
            let recs: Vec<&[u8]> = recs
                .iter()
                .copied()
                .filter(|r| kind == BagKind::SingleV1 || !r.is_empty())
                .collect();
            let mut b = InputBuilder::default();
            b.byte(0).raw(&bag::single_file_bytes(kind, &recs));
            write("granular_bag", &format!("{name}.bin"), &b.bytes);
        }
        let data: Vec<u8> = recs.concat();
        let mut idx = Vec::new();
        let mut end = 0u64;
        for r in recs {
            end += r.len() as u64;
            idx.extend_from_slice(&end.to_le_bytes());
        }
        let mut b = InputBuilder::default();
        b.byte(1).u16(data.len() as u16).raw(&data).raw(&idx);
        write("granular_bag", "two_file.bin", &b.bytes);

        write("granular_roundtrip", "current.bin", &[0, 3, 0x33].repeat(40));
        write("granular_roundtrip", "bags.bin", &[1, 3, 0x21].repeat(40));
        write("granular_roundtrip", "g021.bin", &[2, 3, 0x0f].repeat(40));

        // Datasets for the dir targets: one key "a" (a.bag, a.idx), refs, and sharded.
        let simple = GranularSpec::new().with("a", "bytes");
        let mut dirs = Vec::new();
        let one = tmp.path().join("one");
        let mut w = GranularWriter::create(&one, &simple).unwrap();
        for k in 0..3u8 {
            w.append(Record::new().with_bytes("a", &[k; 3]).view()).unwrap();
        }
        w.finish().unwrap();
        dirs.push(("granular.dir".to_string(), dir_input(&one, "")));
        dirs.push((
            "granular_sharded.dir".to_string(),
            [dir_input(&one, "000000/"), dir_input(&one, "000001/")].concat(),
        ));
        let refs = tmp.path().join("refs");
        let mut w = BagsWriter::create(&refs, &simple, RefsFlavor::Bags051).unwrap();
        for k in 0..3u8 {
            w.append(Record::new().with_bytes("a", &[k; 2]).view()).unwrap();
        }
        w.finish().unwrap();
        dirs.push(("granular_refs.dir".to_string(), dir_input(&refs, "")));
        dirs
    }

    fn gulp() -> Vec<(String, Vec<u8>)> {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("clips");
        let gray = encode_jpeg(&[10, 200, 30, 90, 0, 255], 3, 2, 1, 90).unwrap();
        let rgb = encode_jpeg(&[120; 2 * 2 * 3], 2, 2, 3, 90).unwrap();
        let mut w = GulpWriter::create(&dir, &GulpWriteOptions::default()).unwrap();
        let meta = JsonValue::object([
            ("label", JsonValue::from("wave")),
            ("n", JsonValue::from(3i64)),
            ("x", JsonValue::from(f64::NAN)),
        ]);
        w.write_video("clip-0", meta.clone(), &[Frame::Jpeg(&gray), Frame::Jpeg(&rgb)]).unwrap();
        w.write_video("7", JsonValue::empty_object(), &[Frame::Jpeg(&rgb)]).unwrap();
        w.write_video("none", JsonValue::Null, &[]).unwrap();
        w.finish().unwrap();
        let data = std::fs::read(dir.join("data_0.gulp")).unwrap();
        let meta_text = std::fs::read(dir.join("meta_0.gmeta")).unwrap();
        for (name, mode) in [("raw", 0u8), ("auto", 1), ("gray", 3)] {
            let mut b = InputBuilder::default();
            b.byte(mode).byte(0).chunk(&meta_text).raw(&data);
            write("gulp_chunk", &format!("{name}.bin"), &b.bytes);
        }
        let mut b = InputBuilder::default();
        b.byte(1).byte(1).raw(&[0xff, 1, 0xff, 3]).chunk(&meta_text).raw(&data);
        write("gulp_chunk", "slice.bin", &b.bytes);

        write("gulp_meta", "meta.json", &meta_text);
        write("gulp_meta", "values.json", meta.to_python_json().as_bytes());
        write(
            "gulp_meta",
            "python.json",
            br#"[1e400, -0.0, NaN, -Infinity, 123456789012345678901234567890, "\ud800x", {"a": 1, "a": 2}]"#,
        );

        let mut b = InputBuilder::default();
        b.byte(1).byte(3);
        for k in 0..3u8 {
            b.short(b"clip").byte(7).byte(1).short(b"label").byte(2).u64(u64::from(k));
            b.byte(3).byte(0).short(&[0xff, 0xd8, k]).byte(1).byte(2).byte(2).raw(&[k; 9]);
            b.byte(2).byte(1).byte(1).raw(&[k; 12]);
        }
        write("gulp_roundtrip", "videos.bin", &b.bytes);

        let files = [dir_entry("data_0.gulp", &data), dir_entry("meta_0.gmeta", &meta_text)];
        vec![("gulp.dir".into(), files.concat())]
    }
}
