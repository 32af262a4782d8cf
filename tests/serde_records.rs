//! Feature `serde`: records serialise as maps of their fields and deserialise into a user's
//! struct, nested values (from a JSON payload) and arrays included; what does not fit is a
//! `Schema` error naming the record.

use std::collections::BTreeMap;

use reel::prelude::*;
use reel::{DType, ErrorKind, Format, OpenOptions, Payload};
use serde::Deserialize;
use serde_json::json;

fn sample() -> reel::Result<Record> {
    let mut record = Record::new()
        .with_int("label", -3)
        .with_str("caption", "a cat")
        .with_bytes("jpeg", b"\xff\xd8")
        .with_float("score", 0.5);
    record.push_uint("id", u64::MAX).push_bool("ok", true).push_null("none");
    record.push_array("pixels", DType::U16, &[2, 2], &[1, 0, 2, 0, 3, 0, 4, 0])?;
    Ok(record)
}

#[test]
fn a_record_serialises_as_a_map_of_its_fields() {
    let out = serde_json::to_value(sample().unwrap()).unwrap();
    assert_eq!(
        out,
        json!({
            "label": -3, "caption": "a cat", "jpeg": [255, 216], "score": 0.5,
            "id": u64::MAX, "ok": true, "none": null, "pixels": [1, 2, 3, 4],
        })
    );
    // A view and an owned record serialise alike.
    assert_eq!(serde_json::to_value(sample().unwrap().view()).unwrap(), out);
}

#[derive(Deserialize, Debug, PartialEq)]
struct Sample<'a> {
    label: i32,
    caption: &'a str,
    #[serde(borrow)]
    jpeg: &'a [u8],
    score: f32,
    id: u64,
    ok: bool,
    none: Option<i64>,
    pixels: Vec<u16>,
    #[serde(default)]
    missing: Option<String>,
}

#[test]
fn a_record_deserialises_into_a_struct_borrowing_its_bytes() {
    let record = sample().unwrap();
    let s: Sample<'_> = record.deserialize().unwrap();
    assert_eq!(
        s,
        Sample {
            label: -3,
            caption: "a cat",
            jpeg: b"\xff\xd8",
            score: 0.5,
            id: u64::MAX,
            ok: true,
            none: None,
            pixels: vec![1, 2, 3, 4],
            missing: None,
        }
    );
}

#[test]
fn nested_lists_and_maps_from_a_payload_deserialise() {
    #[derive(Deserialize, Debug, PartialEq)]
    struct Nested {
        label: i64,
        tags: Vec<String>,
        meta: BTreeMap<String, f64>,
    }
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("data.ffr");
    let mut sink = reel::create(&path, Format::Ffrecord, &Default::default()).unwrap();
    let payloads = [
        json!({"label": 1, "tags": ["a", "b"], "meta": {"w": 2.5}}),
        json!({"label": 2, "tags": [], "meta": {}}),
    ];
    for p in &payloads {
        sink.append(&Record::from_bytes(p.to_string().as_bytes())).unwrap();
    }
    sink.finish().unwrap();
    let source = reel::open_with(&path, &OpenOptions::default().payload(Payload::Json)).unwrap();
    let first: Nested = source.read(0).unwrap().deserialize().unwrap();
    assert_eq!(
        first,
        Nested {
            label: 1,
            tags: vec!["a".into(), "b".into()],
            meta: BTreeMap::from([("w".into(), 2.5)]),
        }
    );
    // Serialising gives the payload back.
    assert_eq!(serde_json::to_value(source.read(1).unwrap()).unwrap(), payloads[1]);
}

#[test]
fn what_does_not_fit_is_a_schema_error_naming_the_record() {
    #[derive(Deserialize, Debug)]
    #[allow(dead_code)] // only the failure is looked at
    struct NeedsWidth {
        width: u32,
    }
    let mut record = sample().unwrap();
    record.set_index(7);
    let e = record.deserialize::<NeedsWidth>().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Schema, "{e}");
    assert_eq!(e.record(), Some(7));
    assert!(e.to_string().contains("missing field `width`"), "{e}");

    #[derive(Deserialize, Debug)]
    #[allow(dead_code)] // only the failure is looked at
    struct LabelAsText {
        label: String,
    }
    let e = record.deserialize::<LabelAsText>().unwrap_err();
    assert!(e.to_string().contains("invalid type: integer `-3`"), "{e}");

    // An array with no serde form is refused naming its dtype, both ways.
    let mut complex = Record::new();
    complex.push_array("z", DType::C64, &[1], &[0; 8]).unwrap();
    let e = serde_json::to_value(&complex).unwrap_err();
    assert!(e.to_string().contains("complex64"), "{e}");
    #[derive(Deserialize, Debug)]
    #[allow(dead_code)] // only the failure is looked at
    struct Z {
        z: Vec<f32>,
    }
    let e = complex.deserialize::<Z>().unwrap_err();
    assert!(e.to_string().contains("complex64"), "{e}");
}
