//! `reel convert` with field mapping (`--fields`, `--drop`, `--rename`) across the convert
//! matrix, payload decoding of pickled FFRecord datasets (`--payload pickle`), and
//! `--pack` / `--encode-nested` round trips through `--payload msgpack|json`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support {
    pub mod datasets;
}

use std::path::Path;

use reel::{DType, Format, OpenOptions, Payload, Record, RecordSourceExt, Value};
use support::datasets::{reel, write};

fn run(args: &[&str], src: &Path, dst: &Path) -> std::process::Output {
    reel().args(["convert", "--quiet"]).args(args).arg(src).arg(dst).output().unwrap()
}

fn convert(args: &[&str], src: &Path, dst: &Path) -> String {
    let out = run(args, src, dst);
    assert!(out.status.success(), "convert {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Every record with its fields sorted by name (formats that sort fields compare equal).
fn read_sorted_with(path: &Path, options: &OpenOptions) -> Vec<Vec<(String, Record)>> {
    let src = reel::open_with(path, options).unwrap();
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

fn read_sorted(path: &Path) -> Vec<Vec<(String, Record)>> {
    read_sorted_with(path, &OpenOptions::default())
}

fn names(path: &Path) -> Vec<String> {
    let src = reel::open(path).unwrap();
    src.read(0).unwrap().iter().map(|(n, _)| n.to_string()).collect()
}

/// Records with text, arrays, numbers, bytes and a map: the shape of a real sample.
fn samples() -> Vec<Record> {
    (0..20i64)
        .map(|i| {
            let mut r = Record::new();
            r.push_str("caption", &format!("sample {i} ✓"));
            r.push_array(
                "f",
                DType::F32,
                &[2, 2],
                &[1.5f32, -2.0, i as f32, f32::NAN]
                    .iter()
                    .flat_map(|x| x.to_le_bytes())
                    .collect::<Vec<_>>(),
            )
            .unwrap();
            r.push_array("label", DType::I64, &[1], &(i * 3).to_le_bytes()).unwrap();
            r.push_bytes("raw", &(0..i as u8 * 5).collect::<Vec<_>>());
            let mut out = r.out();
            let (k1, k2, v) = (out.append(b"w"), out.append(b"tags"), out.append(b"t"));
            let meta = Value::Map(vec![
                (Value::Str(k1), Value::Int(i)),
                (Value::Str(k2), Value::List(vec![Value::Str(v), Value::Null, Value::Float(0.5)])),
            ]);
            out.push("meta".into(), meta);
            r
        })
        .collect()
}

/// (target, mapping options, field names written (sorted), renamed fields as (new, old)).
type Case<'a> = (&'a str, &'a [&'a str], &'a [&'a str], &'a [(&'a str, &'a str)]);

#[test]
fn field_mapping_on_the_convert_matrix() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    write(Format::Granular, &src, &samples());
    let original = read_sorted(&src);
    let field = |rec: &Vec<(String, Record)>, name: &str| -> Record {
        rec.iter().find(|(n, _)| n == name).unwrap().1.clone()
    };
    // (target, mapping, fields expected (sorted), renamed: (new, old)).
    let cases: [Case<'_>; 5] = [
        ("ffrecord", &["--fields", "raw"], &["data"], &[("data", "raw")]),
        (
            "syrah",
            &["--drop", "meta,raw", "--rename", "caption=text"],
            &["f", "label", "text"],
            &[("text", "caption")],
        ),
        (
            "ofrecord",
            &["--fields", "raw,label", "--rename", "label=y", "--rename", "raw=x"],
            &["x", "y"],
            &[],
        ),
        (
            "granular",
            &["--fields", "meta,f", "--rename", "meta=info"],
            &["f", "info"],
            &[("info", "meta")],
        ),
        ("ffrecord", &["--fields", "caption", "--rename", "caption=data"], &["data"], &[]),
    ];
    for (k, (to, mapping, want, renamed)) in cases.iter().enumerate() {
        let dst = dir.path().join(format!("out{k}-{to}"));
        let mut args = vec!["--to", to];
        args.extend_from_slice(mapping);
        convert(&args, &src, &dst);
        let got = read_sorted(&dst);
        assert_eq!(got.len(), original.len(), "{to} {mapping:?}");
        let mut got_names: Vec<String> = names(&dst);
        got_names.sort();
        assert_eq!(got_names, *want, "{to} {mapping:?}");
        // Values that the target keeps as they are come through under their new names.
        for (new, old) in *renamed {
            for (g, o) in got.iter().zip(&original) {
                if *to == "ffrecord" {
                    assert_eq!(field(g, new).bytes("v"), field(o, old).bytes("v"));
                } else {
                    assert_eq!(field(g, new), field(o, old), "{to}: {old} -> {new}");
                }
            }
        }
    }
    // Names a record does not have are refused by name, and nothing is written.
    for (mapping, bad) in [
        (&["--fields", "caption,nosuch"][..], "nosuch"),
        (&["--drop", "mta"][..], "mta"),
        (&["--rename", "capton=text"][..], "capton"),
        (&["--rename", "caption=f"][..], "\"f\""),
    ] {
        let dst = dir.path().join("refused");
        let mut args = vec!["--to", "granular"];
        args.extend_from_slice(mapping);
        let out = run(&args, &src, &dst);
        assert_eq!(out.status.code(), Some(2), "{mapping:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(bad), "{mapping:?}: {err}");
        assert!(!dst.exists(), "{mapping:?} left {}", dst.display());
    }
}

#[test]
fn pack_and_payload_round_trip_for_every_target_that_needs_them() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    write(Format::Granular, &src, &samples());
    let original = read_sorted(&src);
    for codec in ["msgpack", "json"] {
        let payload = OpenOptions::default().payload(Payload::from_name(codec).unwrap());
        for to in ["ffrecord", "ofrecord", "syrah"] {
            let packed = dir.path().join(format!("packed-{codec}-{to}"));
            let stdout = convert(&["--to", to, "--pack", codec], &src, &packed);
            assert!(
                stdout.contains(&format!("lost: *: all fields are packed into one {codec} value")),
                "{stdout}"
            );
            assert_eq!(read_sorted_with(&packed, &payload), original, "{codec} via {to}");
            // And back to a format with fields, through the CLI.
            let back = dir.path().join(format!("back-{codec}-{to}"));
            convert(&["--to", "granular", "--payload", codec], &packed, &back);
            assert_eq!(read_sorted(&back), original, "{codec} via {to} and back");
        }
        // --encode-nested: the map becomes bytes that the codec reads back as the map.
        let nested = dir.path().join(format!("nested-{codec}"));
        let stdout =
            convert(&["--to", "syrah", "--drop", "raw", "--encode-nested", codec], &src, &nested);
        assert!(
            stdout.contains(&format!("lost: meta: the map is stored as {codec} bytes")),
            "{stdout}"
        );
        let with_meta = OpenOptions { payload_field: Some("meta".into()), ..payload.clone() };
        let of = dir.path().join(format!("nested-of-{codec}"));
        convert(
            &["--to", "ofrecord", "--fields", "meta,caption", "--encode-nested", codec],
            &src,
            &of,
        );
        let src_read = reel::open(&src).unwrap();
        // Syrah keeps the bytes as a uint8 array, OFRecord as a bytes list of one: both
        // read back as the map.
        for target in [&nested, &of] {
            let read = reel::open_with(target, &with_meta).unwrap();
            for i in 0..src_read.len() {
                let (a, b) = (src_read.read(i).unwrap(), read.read(i).unwrap());
                assert_eq!(a.get("meta"), b.get("meta"), "{codec}: record {i}");
            }
        }
    }
}

fn fixture(name: &str) -> Vec<u8> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/pickle/fixtures");
    std::fs::read(dir.join(name)).unwrap()
}

#[test]
fn pickled_ffrecord_converts_to_granular_and_ofrecord() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("pickled.ffr");
    // The same sample pickled with each protocol, plus a nested one.
    let files =
        ["image_label.p2.pkl", "image_label.p3.pkl", "image_label.p4.pkl", "image_label.p5.pkl"];
    let records: Vec<Record> = files.iter().map(|f| Record::from_bytes(&fixture(f))).collect();
    write(Format::Ffrecord, &src, &records);
    let pickle = OpenOptions::default().payload(Payload::Pickle);
    let decoded = read_sorted_with(&src, &pickle);
    assert_eq!(
        decoded[0].iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(),
        ["image", "label", "name"]
    );
    for r in &decoded {
        assert_eq!(r, &decoded[0], "every protocol gives the same sample");
    }
    // Granular keeps every field as it is.
    let g = dir.path().join("g");
    convert(&["--to", "granular", "--payload", "pickle"], &src, &g);
    assert_eq!(read_sorted(&g), decoded);
    let img = reel::open(&g).unwrap().read(0).unwrap();
    let a = img.get("image").and_then(|v| v.as_array()).unwrap();
    assert_eq!((a.dtype, a.shape), (DType::U8, &[4u64, 5, 3][..]));
    // Without --payload the record is opaque bytes and cannot be a Granular sample with fields.
    let raw = dir.path().join("raw");
    convert(&["--to", "granular"], &src, &raw);
    assert_eq!(names(&raw), ["data"]);
    // OFRecord: the label and name are stated losses, the image flattened and widened.
    let o = dir.path().join("o");
    let stdout = convert(&["--to", "ofrecord", "--payload", "pickle"], &src, &o);
    assert!(stdout.contains("lost: image: the array's shape is not stored"), "{stdout}");
    let back = reel::open(&o).unwrap().read(0).unwrap();
    assert_eq!(
        back.get("label").and_then(|v| v.as_array()).and_then(|a| a.to_i64_vec()),
        Some(vec![7])
    );
    let name = back
        .get("name")
        .and_then(|v| v.as_list())
        .and_then(|l| l.get(0))
        .and_then(|v| v.as_bytes());
    assert_eq!(name, Some(&b"cat_001.jpg"[..]));
    // A nested sample needs --encode-nested for OFRecord; the refusal says so per field.
    let nested = dir.path().join("nested.ffr");
    write(Format::Ffrecord, &nested, &[Record::from_bytes(&fixture("nested.p4.pkl"))]);
    let out = run(&["--to", "ofrecord", "--payload", "pickle"], &nested, &dir.path().join("x"));
    let err = String::from_utf8_lossy(&out.stderr);
    for field in ["meta", "boxes", "deep", "int_keys", "shared"] {
        assert!(err.contains(&format!("field \"{field}\"")), "{field}: {err}");
    }
    assert!(err.contains("--encode-nested"), "{err}");
    let on = dir.path().join("on");
    convert(
        &["--to", "ofrecord", "--payload", "pickle", "--encode-nested", "msgpack"],
        &nested,
        &on,
    );
    let meta = OpenOptions {
        payload_field: Some("meta".into()),
        ..OpenOptions::default().payload(Payload::Msgpack)
    };
    let want = reel::open_with(&nested, &pickle).unwrap().read(0).unwrap();
    let got = reel::open_with(&on, &meta).unwrap().read(0).unwrap();
    assert_eq!(got.get("meta"), want.get("meta"));
    // Granular holds nested values, but its reference reads text map keys only.
    let out = run(&["--to", "granular", "--payload", "pickle"], &nested, &dir.path().join("y"));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("field \"int_keys\"") && err.contains("--encode-nested"), "{err}");
    assert!(!err.contains("field \"meta\""), "{err}");
    let gn = dir.path().join("gn");
    convert(&["--to", "granular", "--payload", "pickle", "--encode-nested", "json"], &nested, &gn);
    let keys = OpenOptions {
        payload_field: Some("int_keys".into()),
        ..OpenOptions::default().payload(Payload::Json)
    };
    let got = reel::open_with(&gn, &keys).unwrap().read(0).unwrap();
    assert_eq!(got.get("int_keys"), want.get("int_keys"));
    assert_eq!(got.get("meta"), want.get("meta"), "text-keyed maps stay maps");
    // verify and cat take --payload too: a pickle that does not decode is a bad record.
    let mixed = dir.path().join("mixed.ffr");
    let bad = fixture("hostile_os_system.p5.pkl");
    write(Format::Ffrecord, &mixed, &[records[0].clone(), Record::from_bytes(&bad)]);
    let out =
        reel().args(["verify", "--quiet", "--payload", "pickle"]).arg(&mixed).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("record 1") && text.contains("posix.system"), "{text}");
    let out =
        reel().args(["cat", "--payload", "pickle", "--index", "0"]).arg(&mixed).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("label: 7") && text.contains("name: \"cat_001.jpg\""), "{text}");
}
