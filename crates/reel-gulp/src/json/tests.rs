#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use reel_core::ErrorKind;

use super::*;

fn parse(s: &str) -> reel_core::Result<JsonValue> {
    parse_json(s, 64)
}

fn dump(v: &JsonValue) -> String {
    v.to_python_json()
}

/// `json.dumps(x)` for these floats, taken from CPython 3.11.
const PYTHON_FLOATS: &[(u64, &str)] = &[
    (0x4341c37937e08000, "1e+16"),
    (0x3ee4f8b588e368f1, "1e-05"),
    (0x3fd3333333333334, "0.30000000000000004"),
    (0x0000000000000001, "5e-324"),
    (0x7fefffffffffffff, "1.7976931348623157e+308"),
    (0x437b69b4ba630f35, "1.2345678901234568e+17"),
    (0x430c6bf526340000, "1000000000000000.0"),
    (0x3f1a36e2eb1c432d, "0.0001"),
    (0x8000000000000000, "-0.0"),
    (0x0000000000000000, "0.0"),
    (0x4059000000000000, "100.0"),
    (0x434aa535d3d0c000, "1.5e+16"),
    (0x3e90c6f7a0b5ed8d, "2.5e-07"),
    (0x4341c37937e07fff, "9999999999999998.0"),
    (0x4480f0cf064dd592, "1e+22"),
    (0x3e7ad7f29abcaf48, "1e-07"),
    (0x40c81cd6c8b43958, "12345.678"),
    (0x54b249ad2594c37d, "1e+100"),
    (0x3df49da7e361ce4c, "3e-10"),
    (0x3fe39233df2a9d62, "0.611597"),
    (0x4029000000000000, "12.5"),
    (0x0010000000000000, "2.2250738585072014e-308"),
    (0x4340000000000000, "9007199254740992.0"),
    (0x3f202e4b6ce5dc68, "0.00012345"),
    (0xbc6c7733a7c7d2fc, "-1.2345e-17"),
    (0x4164d8399f767c45, "10928588.983213553"),
    (0x5bc8fbbcbde5c099, "1.4186613525849614e+134"),
    (0xb0c11fdecb91ce37, "-7.571968556055867e-74"),
    (0xd76d4330f1446bea, "-1.4074705188261364e+113"),
    (0xa6eb8c9ebd69fe29, "-3.3339745473042614e-121"),
    (0x87b0b125ec1d7da0, "-1.2342180766211395e-271"),
    (0xc6a5387777330bdb, "-2.1520217579844227e+32"),
    (0x3fc1ea36f17fd374, "0.1399601630397701"),
    (0x0d464138a6233255, "1.01853664031722e-244"),
    (0x617959ce3f1f65a8, "3.56409621163656e+161"),
    (0x41020d5301c0e570, "147882.37585620163"),
    (0xc12db7973ddc6825, "-973771.6208221955"),
    (0x412222ebf739bdde, "594293.982862409"),
];

#[test]
fn floats_are_written_like_python_repr() {
    for &(bits, want) in PYTHON_FLOATS {
        let x = f64::from_bits(bits);
        assert_eq!(python_float_repr(x), want, "bits {bits:#018x}");
        // And read back to the same bits.
        assert_eq!(parse(want).unwrap(), JsonValue::Float(x), "{want}");
    }
    assert_eq!(python_float_repr(f64::NAN), "NaN");
    assert_eq!(python_float_repr(f64::INFINITY), "Infinity");
    assert_eq!(python_float_repr(f64::NEG_INFINITY), "-Infinity");
}

#[test]
fn strings_are_escaped_like_python() {
    // json.dumps({'a\x7f\x00\u00e9\U0001F44B\ud800': ['"\\/\b\f\n\r\t']})
    let v = JsonValue::Object(vec![(
        JsonStr::Utf16("a\u{7f}\u{0}\u{e9}\u{1F44B}".encode_utf16().chain([0xd800]).collect()),
        JsonValue::Array(vec!["\"\\/\u{8}\u{c}\n\r\t".into()]),
    )]);
    assert_eq!(dump(&v), r#"{"a\u007f\u0000\u00e9\ud83d\udc4b\ud800": ["\"\\/\b\f\n\r\t"]}"#);
    assert_eq!(parse(&dump(&v)).unwrap(), v);
}

#[test]
fn spec_examples_round_trip_byte_for_byte() {
    let texts = [
        r#"{"7": {"frame_info": [[0, 0, 632], [632, 0, 632]], "meta_data": [{"label": "a", "n": 1}]}, "x": {"frame_info": [[1264, 1, 332]], "meta_data": [{}]}}"#,
        r#"{"z": {"frame_info": [], "meta_data": [{"e": null, "f": NaN, "u": "\u00e9", "3": "intkey"}]}}"#,
        r#"{"a": {"frame_info": [[0, 0, 632], [1896, 0, 632]], "meta_data": [{"k": 1}, {"k": 3}]}, "b": {"frame_info": [[632, 0, 632], [1264, 0, 632]], "meta_data": [{"k": 2}]}}"#,
        r#"{"v": {"frame_info": [], "meta_data": [{"label": "wave \ud83d\udc4b", "big": 1099511627779, "neg": -3, "x": [true, false, null, 1e-05, -Infinity, Infinity, 18446744073709551616, -9223372036854775809, 9223372036854775808]}]}}"#,
        "{}",
    ];
    for t in texts {
        let v = parse(t).unwrap();
        assert_eq!(dump(&v), t);
    }
}

#[test]
fn accepts_what_python_accepts() {
    let ok: &[(&str, JsonValue)] = &[
        ("{}", JsonValue::Object(vec![])),
        (" [1, 2] ", JsonValue::Array(vec![JsonValue::Int(1), JsonValue::Int(2)])),
        ("-0", JsonValue::Int(0)),
        ("1e5", JsonValue::Float(100000.0)),
        ("1E+5", JsonValue::Float(100000.0)),
        ("1.0e400", JsonValue::Float(f64::INFINITY)),
        ("-Infinity", JsonValue::Float(f64::NEG_INFINITY)),
        ("9223372036854775808", JsonValue::UInt(9223372036854775808)),
        ("18446744073709551616", JsonValue::BigInt("18446744073709551616".into())),
        ("-9223372036854775809", JsonValue::BigInt("-9223372036854775809".into())),
        (r#""\/""#, "/".into()),
        ("\"\u{e9}\"", "\u{e9}".into()),
        (r#""\ud83d\udc4b""#, "\u{1F44B}".into()),
        (r#""\ud83d""#, JsonValue::Str(JsonStr::Utf16(vec![0xd83d]))),
        (r#""\udc4b\ud83d""#, JsonValue::Str(JsonStr::Utf16(vec![0xdc4b, 0xd83d]))),
        (r#""\ud83dx""#, JsonValue::Str(JsonStr::Utf16(vec![0xd83d, 0x78]))),
        ("\t\n\r {}\n", JsonValue::Object(vec![])),
    ];
    for (text, want) in ok {
        assert_eq!(&parse(text).unwrap_or_else(|e| panic!("{text:?}: {e}")), want, "{text:?}");
    }
    assert!(matches!(parse("NaN").unwrap(), JsonValue::Float(f) if f.is_nan()));
}

#[test]
fn refuses_what_python_refuses() {
    for text in [
        "",
        "[1,]",
        r#"{"a":1,}"#,
        "01",
        "1.",
        ".5",
        "1e",
        "-",
        "- 1",
        "-NaN",
        "infinity",
        "\"a\u{1}\"",
        r#""\x""#,
        r#""\u12""#,
        "[1 2]",
        r#"{"a" 1}"#,
        "{1:2}",
        "\u{feff}{}",
        "{} x",
        "tru",
        "[]]",
        "\"abc",
        "[",
        "{\"a\":",
        r#""\ud83d\uzzzz""#,
    ] {
        let e = parse(text).expect_err(text);
        assert_eq!(e.kind(), ErrorKind::Corrupt, "{text:?}: {e}");
    }
}

#[test]
fn nesting_is_bounded() {
    let deep = "[".repeat(100) + &"]".repeat(100);
    assert_eq!(parse_json(&deep, 100).unwrap(), parse_json(&deep, 200).unwrap());
    assert_eq!(parse_json(&deep, 99).unwrap_err().kind(), ErrorKind::Limit);
    // Whatever the limit says, the cap protects the stack.
    let very_deep = "[".repeat(100_000);
    assert_eq!(parse_json(&very_deep, u32::MAX).unwrap_err().kind(), ErrorKind::Limit);
    let objects = "{\"a\":".repeat(5000);
    assert_eq!(parse_json(&objects, u32::MAX).unwrap_err().kind(), ErrorKind::Limit);
}

#[test]
fn repeated_keys_keep_first_position_and_last_value() {
    let v = parse(r#"{"a": 1, "b": 2, "a": 3}"#).unwrap();
    assert_eq!(dump(&v), r#"{"a": 3, "b": 2}"#);
    // The hashed path for large objects behaves the same.
    let mut text = String::from("{");
    for k in 0..100 {
        text.push_str(&format!("\"k{k}\": {k}, "));
    }
    text.push_str("\"k3\": -1}");
    let v = parse(&text).unwrap();
    let JsonValue::Object(pairs) = &v else { panic!() };
    assert_eq!(pairs.len(), 100);
    assert_eq!(pairs[3], (JsonStr::from("k3"), JsonValue::Int(-1)));
}

#[test]
fn record_values_convert_like_python_json() {
    use reel_core::Record;
    let mut r = Record::new();
    let mut out = r.out();
    let k_int = reel_core::Value::Int(3);
    let s = out.append_str("v");
    let b = out.append_str("b");
    let map = reel_core::Value::Map(vec![
        (k_int, s.clone()),
        (reel_core::Value::Float(2.5), reel_core::Value::Bool(true)),
        (reel_core::Value::Bool(true), reel_core::Value::Null),
        (reel_core::Value::Null, reel_core::Value::Float(f64::NAN)),
        (b, reel_core::Value::List(vec![reel_core::Value::UInt(u64::MAX)])),
    ]);
    out.push("m".into(), map);
    let v = JsonValue::from_value(r.get("m").unwrap()).unwrap();
    assert_eq!(
        dump(&v),
        r#"{"3": "v", "2.5": true, "true": null, "null": NaN, "b": [18446744073709551615]}"#
    );
    // And back: keys are strings now, values keep int vs float.
    let mut back = Record::new();
    let mut o = back.out();
    let value = v.to_value(&mut o).unwrap();
    o.push("m".into(), value);
    let m = back.get("m").unwrap().as_map().unwrap();
    assert_eq!(m.len(), 5);
    let bytes = Record::new().with_bytes("x", b"\x00");
    assert_eq!(
        JsonValue::from_value(bytes.get("x").unwrap()).unwrap_err().kind(),
        ErrorKind::Schema
    );
}

#[test]
fn big_integers_have_no_record_form() {
    let v = parse("[18446744073709551616]").unwrap();
    let mut r = reel_core::Record::new();
    assert_eq!(v.to_value(&mut r.out()).unwrap_err().kind(), ErrorKind::Unsupported);
}
