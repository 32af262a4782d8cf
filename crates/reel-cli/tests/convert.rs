//! `reel convert`: every round trip the mapping table calls lossless gives back the same
//! records; impossible mappings fail naming the field and leave nothing; sharded
//! conversion by several processes gives the same dataset as one; checksums are
//! re-verified while reading.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support {
    pub mod datasets;
}

use std::path::Path;

use reel::{CreateOptions, DType, Format, Record, RecordSink, RecordSourceExt, Value};
use support::datasets::{reel, write};

/// Records as (sorted fields) so that formats storing fields by name compare equal.
fn read_sorted(path: &Path) -> Vec<Vec<(String, Record)>> {
    let src = reel::open(path).unwrap();
    (0..src.len())
        .map(|i| {
            let r = src.read(i).unwrap();
            let mut fields: Vec<(String, Record)> = r
                .iter()
                .map(|(name, v)| (name.to_string(), Record::new().with_value("v", v)))
                .collect();
            fields.sort_by(|a, b| a.0.cmp(&b.0));
            fields
        })
        .collect()
}

fn convert(src: &Path, dst: &Path, to: &str) {
    let out = reel().args(["convert", "--quiet", "--to", to]).arg(src).arg(dst).output().unwrap();
    assert!(out.status.success(), "convert to {to}: {}", String::from_utf8_lossy(&out.stderr));
}

fn round_trip(a: Format, b: &str, records: &[Record]) {
    let dir = tempfile::tempdir().unwrap();
    let (src, mid, back) = (dir.path().join("a"), dir.path().join("b"), dir.path().join("c"));
    write(a, &src, records);
    convert(&src, &mid, b);
    convert(&mid, &back, a.name());
    let (want, got) = (read_sorted(&src), read_sorted(&back));
    assert_eq!(want.len(), records.len());
    assert_eq!(got.len(), want.len(), "{a} -> {b} -> {a}: record count");
    for (i, (w, g)) in want.iter().zip(&got).enumerate() {
        assert!(w == g, "{a} -> {b} -> {a}: record {i} differs");
    }
}

fn bytes_records() -> Vec<Record> {
    (0..40u32)
        .map(|i| Record::from_bytes(&(0..i * 7).map(|k| (k * i) as u8).collect::<Vec<_>>()))
        .collect()
}

fn syrah_records(numeric_only: bool) -> Vec<Record> {
    (0..30i64)
        .map(|i| {
            let mut r = Record::new();
            r.push_array(
                "f",
                DType::F32,
                &[3],
                &[1.5f32, -2.0, i as f32].iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<_>>(),
            )
            .unwrap();
            r.push_array(
                "d",
                DType::F64,
                &[2],
                &[f64::NAN, i as f64].iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<_>>(),
            )
            .unwrap();
            r.push_array("l", DType::I64, &[1], &(i - 15).to_le_bytes()).unwrap();
            r.push_array("k", DType::I32, &[0], &[]).unwrap();
            if !numeric_only {
                r.push_array("img", DType::U8, &[5], &[1, 2, 3, 4, i as u8]).unwrap();
                r.push_array("h", DType::F16, &[1], &[0, 0x3c]).unwrap();
                r.push_str("caption", &format!("item {i} ✓"));
            }
            r
        })
        .collect()
}

fn ofrecord_records() -> Vec<Record> {
    (0..30u32)
        .map(|i| {
            let mut r = Record::new();
            let mut out = r.out();
            let items = (0..i % 3)
                .map(|k| Value::Bytes(out.append(format!("blob {i}/{k}").as_bytes())))
                .collect();
            out.push("blobs".into(), Value::List(items));
            out.push("nothing".into(), Value::Null);
            r.push_array(
                "x",
                DType::F32,
                &[2],
                &[0.5f32, i as f32].iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<_>>(),
            )
            .unwrap();
            r.push_array("y", DType::I64, &[1], &(i as i64 * -3).to_le_bytes()).unwrap();
            r
        })
        .collect()
}

fn gulp_records() -> Vec<Record> {
    let jpeg = |seed: u8| -> Vec<u8> {
        let pixels: Vec<u8> = (0..8 * 8 * 3).map(|k| (k as u8).wrapping_mul(seed)).collect();
        reel::gulp::encode_jpeg(&pixels, 8, 8, 3, 90).unwrap()
    };
    (0..12u8)
        .map(|i| {
            let mut r = Record::new();
            r.push_str("id", &format!("v{i}"));
            let mut out = r.out();
            let (k1, k2, k3) = (out.append(b"label"), out.append(b"ratio"), out.append(b"tags"));
            let tag = out.append(format!("t{i}").as_bytes());
            let meta = Value::Map(vec![
                (Value::Str(k1), Value::Int(i as i64)),
                (Value::Str(k2), Value::Float(i as f64 / 3.0)),
                (
                    Value::Str(k3),
                    Value::List(vec![Value::Str(tag), Value::Null, Value::Bool(true)]),
                ),
            ]);
            out.push("meta".into(), meta);
            let frames =
                (0..1 + i % 3).map(|f| Value::Bytes(out.append(&jpeg(i * 3 + f + 1)))).collect();
            out.push("frames".into(), Value::List(frames));
            r
        })
        .collect()
}

#[test]
fn ffrecord_round_trips_through_syrah_ofrecord_and_granular() {
    for b in ["syrah", "ofrecord", "granular"] {
        round_trip(Format::Ffrecord, b, &bytes_records());
    }
}

#[test]
fn syrah_round_trips_through_granular() {
    round_trip(Format::Syrah, "granular", &syrah_records(false));
}

#[test]
fn ofrecord_round_trips_through_granular() {
    round_trip(Format::Ofrecord, "granular", &ofrecord_records());
}

#[test]
fn gulp_round_trips_through_granular() {
    round_trip(Format::Gulp, "granular", &gulp_records());
}

#[test]
fn syrah_and_ofrecord_round_trip_with_their_common_array_types() {
    round_trip(Format::Syrah, "ofrecord", &syrah_records(true));
    let numeric: Vec<Record> = ofrecord_records()
        .iter()
        .map(|r| {
            let mut n = Record::new();
            for (name, v) in r.iter().filter(|(_, v)| matches!(v, reel::ValueRef::Array(_))) {
                n.push_value(name, v);
            }
            n
        })
        .collect();
    round_trip(Format::Ofrecord, "syrah", &numeric);
}

#[test]
fn impossible_mappings_fail_naming_the_field_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("g");
    write(Format::Gulp, &src, &gulp_records());
    // Every field concerned is named on its own, with the option that would carry it.
    for (to, fields, option) in [
        ("syrah", &["meta"][..], "--encode-nested"),
        ("ofrecord", &["meta"][..], "--encode-nested"),
        ("ffrecord", &["id", "meta", "frames"][..], "--pack"),
    ] {
        let dst = dir.path().join(format!("out-{to}"));
        let out =
            reel().args(["convert", "--quiet", "--to", to]).arg(&src).arg(&dst).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{to}");
        let err = String::from_utf8_lossy(&out.stderr);
        for field in fields {
            assert!(err.contains(&format!("field \"{field}\"")), "{to}: {err}");
        }
        assert!(err.contains(option), "{to}: {err}");
        assert!(!dst.exists(), "{to}: a refused conversion left {}", dst.display());
    }
    // Lossy mappings are stated, and refused on request.
    let s = dir.path().join("s");
    write(Format::Syrah, &s, &syrah_records(false));
    let out = reel()
        .args(["convert", "--to", "ofrecord"])
        .arg(&s)
        .arg(dir.path().join("o"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("lost: caption: text is stored as a bytes list of one"), "{text}");
    assert!(text.contains("lost: img: uint8 values are widened to int32"), "{text}");
    let out = reel()
        .args(["convert", "--lossless-only", "--to", "ofrecord"])
        .arg(&s)
        .arg(dir.path().join("o2"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(!dir.path().join("o2").exists());
}

#[test]
fn sharded_conversion_equals_one_conversion() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src.ffr");
    write(Format::Ffrecord, &src, &bytes_records());
    for to in ["ffrecord", "ofrecord", "syrah", "granular"] {
        let whole = dir.path().join(format!("whole-{to}"));
        convert(&src, &whole, to);
        let parts = dir.path().join(format!("parts-{to}"));
        // Three "processes", out of order.
        for k in [2, 0, 1] {
            let out = reel()
                .args(["convert", "--quiet", "--to", to, "--shard", &format!("{k}/3")])
                .arg(&src)
                .arg(&parts)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{to} shard {k}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        assert_eq!(read_sorted(&whole), read_sorted(&parts), "{to}: sharded output differs");
    }
}

#[test]
fn shards_cut_for_another_count_or_source_are_refused() {
    // `--shard 0/2` then `--shard 1/3` into one directory opened and verified clean while
    // it held records 33..49 twice and lacked 66..99.
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src.ffr");
    write(Format::Ffrecord, &src, &bytes_records());
    let shard = |to: &str, spec: &str, out: &Path| {
        reel()
            .args(["convert", "--quiet", "--to", to, "--shard", spec])
            .arg(&src)
            .arg(out)
            .output()
            .unwrap()
    };
    for to in ["ffrecord", "ofrecord", "granular", "parquet"] {
        let parts = dir.path().join(format!("mixed-{to}"));
        assert!(shard(to, "0/2", &parts).status.success(), "{to}");
        let before = reel_core::testing::names_in(&parts);
        let out = shard(to, "1/3", &parts);
        assert_eq!(out.status.code(), Some(2), "{to}");
        let text = String::from_utf8_lossy(&out.stderr);
        assert!(text.contains("another shard count or from another source"), "{to}: {text}");
        assert_eq!(reel_core::testing::names_in(&parts), before, "{to}: a part was written");
        // The same count goes on.
        assert!(shard(to, "1/2", &parts).status.success(), "{to}");
        // A part past the last part of the count.
        let out = shard(to, "0/1", &parts);
        assert_eq!(out.status.code(), Some(2), "{to}");
        let text = String::from_utf8_lossy(&out.stderr);
        assert!(text.contains("another number of shards"), "{to}: {text}");
    }
}

#[test]
fn checksums_are_verified_while_converting() {
    let golden =
        reel::testing::golden::golden_root().join("ffrecord/corrupt/record_byte_flip/data.ffr");
    let dir = tempfile::tempdir().unwrap();
    let dst = dir.path().join("out");
    let out = reel()
        .args(["convert", "--quiet", "--to", "granular"])
        .arg(&golden)
        .arg(&dst)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("record 3") && err.contains("checksum"), "{err}");
    assert!(!dst.exists());
}

#[test]
fn the_target_names_the_granular_generation_whatever_the_source() {
    let dir = tempfile::tempdir().unwrap();
    let bags = reel::testing::golden::golden_root().join("granular/bags-0.5.1/normal");
    let keys: Vec<String> = reel::open(&bags)
        .unwrap()
        .info()
        .schema
        .clone()
        .unwrap()
        .into_iter()
        .map(|f| f.name)
        .collect();
    // bags 0.5.1 --to granular: granular 0.24's two files per key and spec.json.
    let current = dir.path().join("current");
    convert(&bags, &current, "granular");
    let mut want: Vec<String> =
        keys.iter().flat_map(|k| [format!("{k}.bag"), format!("{k}.idx")]).collect();
    want.push("spec.json".into());
    want.sort();
    assert_eq!(reel_core::testing::names_in(&current), want);
    let info = reel::open(&current).unwrap().info().clone();
    assert!(info.version.as_deref().unwrap().contains(".idx"), "{:?}", info.version);
    // ... and --to bags (from that granular dataset) gives bags 0.5.1's layout back.
    let back = dir.path().join("back");
    convert(&current, &back, "bags");
    let mut want: Vec<String> = keys.iter().map(|k| format!("{k}.bag")).collect();
    want.extend(["refs.bag".to_string(), "spec.json".to_string()]);
    want.sort();
    assert_eq!(reel_core::testing::names_in(&back), want);
    let source = reel::open(&back).unwrap();
    assert_eq!(Format::of_source(source.info()), Some(Format::Bags));
    // The library says the same: the format passed to `create` decides, never the schema.
    let schema = reel::open(&bags).unwrap().info().schema.clone();
    for (format, has_idx) in [(Format::Granular, true), (Format::Bags, false)] {
        let out = dir.path().join(format!("lib-{format}"));
        let options = CreateOptions::default().schema(schema.clone());
        let src = reel::open(&bags).unwrap();
        let mut sink = reel::create(&out, format, &options).unwrap();
        for i in 0..3 {
            sink.append(src.read(i).unwrap().view()).unwrap();
        }
        sink.finish().unwrap();
        assert_eq!(out.join("blob.idx").exists(), has_idx, "{format}");
        assert_eq!(out.join("refs.bag").exists(), !has_idx, "{format}");
    }
}

#[test]
fn part_size_splits_ofrecord_into_parts_and_granular_into_shards() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src.ffr");
    let records: Vec<Record> =
        (0..40u32).map(|i| Record::from_bytes(&vec![i as u8; 300])).collect();
    write(Format::Ffrecord, &src, &records);
    let dst = dir.path().join("parts");
    let out = reel()
        .args(["convert", "--quiet", "--to", "ofrecord", "--part-size", "1K"])
        .arg(&src)
        .arg(&dst)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let parts = reel_core::testing::names_in(&dst);
    assert!(parts.len() >= 10, "{parts:?}");
    for part in &parts {
        let len = std::fs::metadata(dst.join(part)).unwrap().len();
        assert!(len <= 1024, "{part}: {len} bytes");
    }
    // The same records as one part would hold: back to FFRecord, they are the source's.
    let back = dir.path().join("back.ffr");
    convert(&dst, &back, "ffrecord");
    assert!(read_sorted(&back) == read_sorted(&src));

    // Granular and bags: a sharded dataset, shards of about that size.
    for to in ["granular", "bags"] {
        let sharded = dir.path().join(format!("sharded-{to}"));
        let out = reel()
            .args(["convert", "--quiet", "--to", to, "--part-size", "3K"])
            .arg(&src)
            .arg(&sharded)
            .output()
            .unwrap();
        assert!(out.status.success(), "{to}: {}", String::from_utf8_lossy(&out.stderr));
        let shards = reel_core::testing::names_in(&sharded);
        assert!(shards.len() >= 3 && shards[0] == "000000", "{to}: {shards:?}");
        let back = dir.path().join(format!("back-{to}.ffr"));
        convert(&sharded, &back, "ffrecord");
        assert!(read_sorted(&back) == read_sorted(&src), "{to}");
    }

    // Other targets have no parts of a size, and a size must be one.
    for (to, size, says) in [
        ("ffrecord", "1K", "applies to OFRecord"),
        ("ofrecord", "lots", "expected a size"),
        ("ofrecord", "0", "above zero"),
    ] {
        let out = reel()
            .args(["convert", "--quiet", "--to", to, "--part-size", size])
            .arg(&src)
            .arg(dir.path().join(format!("refused-{to}")))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{to} {size}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says), "{err}");
        assert!(!dir.path().join(format!("refused-{to}")).exists());
    }
}
