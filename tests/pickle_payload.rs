//! `--payload pickle`: records pickled by Python's own `pickle` (protocols 2 to 5, made by
//! tests/pickle/make_fixtures.py and checked in) decode to exactly what `pickle.loads`
//! gives; pickles that name anything outside the allow-list, or that abuse the memo, nest
//! too deep or claim huge lengths, are refused cleanly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

use reel::{
    CreateOptions, ErrorKind, Format, Limits, OpenOptions, Payload, Record, RecordSink,
    RecordSource, RecordSourceExt, ValueRef,
};
use serde_json::{Value as Json, json};

fn pickle_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/pickle")
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The descriptor form of tests/pickle/make_fixtures.py.
fn describe(v: ValueRef<'_>) -> Json {
    match v {
        ValueRef::Null => Json::Null,
        ValueRef::Bool(b) => json!({ "bool": b }),
        ValueRef::Int(i) => json!({ "int": i.to_string() }),
        ValueRef::UInt(u) => json!({ "int": u.to_string() }),
        ValueRef::Float(f) => json!({ "float": format!("0x{}", hex(&f.to_be_bytes())) }),
        ValueRef::Str(s) => json!({ "str": s }),
        ValueRef::Bytes(b) => json!({ "bytes": hex(b) }),
        ValueRef::Array(a) => json!({ "array": {
            "dtype": a.dtype.numpy_str(), "shape": a.shape, "data": hex(a.data),
        }}),
        ValueRef::List(l) => json!({ "list": l.iter().map(describe).collect::<Vec<_>>() }),
        ValueRef::Map(m) => json!({
            "map": m.iter().map(|(k, v)| json!([describe(k), describe(v)])).collect::<Vec<_>>()
        }),
    }
}

fn expected() -> Vec<Json> {
    let text = std::fs::read_to_string(pickle_dir().join("expected.json")).unwrap();
    let doc: Json = serde_json::from_str(&text).unwrap();
    doc["cases"].as_array().unwrap().clone()
}

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(pickle_dir().join("fixtures").join(name)).unwrap()
}

/// An FFRecord dataset holding `payloads`, one per record, opened with `--payload pickle`.
fn pickled_dataset(dir: &Path, payloads: &[Vec<u8>]) -> Box<dyn RecordSource> {
    let path = dir.join("pickles.ffr");
    let mut sink = reel::create(
        &path,
        Format::Ffrecord,
        &CreateOptions::default().records(payloads.len() as u64),
    )
    .unwrap();
    for p in payloads {
        sink.append(Record::from_bytes(p).view()).unwrap();
    }
    sink.finish().unwrap();
    let options =
        OpenOptions { limits: Limits::strict(), ..OpenOptions::default() }.payload(Payload::Pickle);
    reel::open_with(&path, &options).unwrap()
}

#[test]
fn python_pickles_decode_to_what_pickle_loads_gives() {
    let cases: Vec<Json> = expected().into_iter().filter(|c| c.get("fields").is_some()).collect();
    assert!(cases.len() >= 40, "expected.json lost its cases");
    let payloads: Vec<Vec<u8>> =
        cases.iter().map(|c| fixture(c["file"].as_str().unwrap())).collect();
    let dir = tempfile::tempdir().unwrap();
    let source = pickled_dataset(dir.path(), &payloads);
    for protocol in 2..=5 {
        assert!(
            cases
                .iter()
                .any(|c| c["file"].as_str().unwrap().ends_with(&format!(".p{protocol}.pkl"))),
            "no protocol {protocol} fixture"
        );
    }
    // Batch reads and single reads both decode.
    let all: Vec<u64> = (0..cases.len() as u64).collect();
    let batch = source.read_batch(&all).unwrap();
    for (i, case) in cases.iter().enumerate() {
        let file = case["file"].as_str().unwrap();
        let single = source.read(i as u64).unwrap();
        let from_batch = batch.get(i).unwrap();
        assert_eq!(single.view(), from_batch, "{file}: batch and single reads differ");
        let got: Vec<Json> = single.iter().map(|(n, v)| json!([n, describe(v)])).collect();
        assert_eq!(Json::Array(got), case["fields"], "{file}");
    }
}

#[test]
fn hostile_python_pickles_are_refused_naming_what_they_hold() {
    let cases: Vec<Json> = expected().into_iter().filter(|c| c.get("refused").is_some()).collect();
    assert!(cases.len() >= 20);
    let payloads: Vec<Vec<u8>> =
        cases.iter().map(|c| fixture(c["file"].as_str().unwrap())).collect();
    let dir = tempfile::tempdir().unwrap();
    let source = pickled_dataset(dir.path(), &payloads);
    for (i, case) in cases.iter().enumerate() {
        let (file, want) = (case["file"].as_str().unwrap(), case["refused"].as_str().unwrap());
        let e = source.read(i as u64).unwrap_err();
        assert!(
            e.message().to_lowercase().contains(&want.to_lowercase()),
            "{file}: {:?} does not mention {want:?}",
            e.message()
        );
        assert_eq!(e.record(), Some(i as u64), "{file}: the error names the record");
        assert!(
            matches!(e.kind(), ErrorKind::Unsupported | ErrorKind::Corrupt),
            "{file}: {:?}",
            e.kind()
        );
    }
}

/// Decodes one hand-made pickle.
fn decode(bytes: &[u8]) -> reel::Result<Record> {
    let dir = tempfile::tempdir().unwrap();
    let source = pickled_dataset(dir.path(), &[bytes.to_vec()]);
    source.read(0)
}

fn refused(bytes: &[u8], kind: ErrorKind, words: &str) {
    let e = decode(bytes).unwrap_err();
    assert_eq!(e.kind(), kind, "{}", e.message());
    assert!(e.message().contains(words), "{:?} does not mention {words:?}", e.message());
}

/// `module\nname` as protocol 2's GLOBAL and as protocol 4's STACK_GLOBAL, then called.
fn calls(module: &str, name: &str) -> [Vec<u8>; 2] {
    let mut p2 = b"\x80\x02c".to_vec();
    p2.extend_from_slice(format!("{module}\n{name}\n").as_bytes());
    p2.extend_from_slice(b")R.");
    let mut p4 = b"\x80\x04".to_vec();
    for s in [module, name] {
        p4.push(0x8c);
        p4.push(s.len() as u8);
        p4.extend_from_slice(s.as_bytes());
    }
    p4.extend_from_slice(b"\x93)R.");
    [p2, p4]
}

#[test]
fn every_global_outside_the_allow_list_is_refused_by_name() {
    for (m, n) in [
        ("os", "system"),
        ("posix", "system"),
        ("nt", "system"),
        ("subprocess", "Popen"),
        ("builtins", "eval"),
        ("builtins", "exec"),
        ("builtins", "getattr"),
        ("builtins", "__import__"),
        ("__builtin__", "eval"),
        ("builtins", "set"),
        ("builtins", "object"),
        ("copyreg", "_reconstructor"),
        ("pickle", "loads"),
        ("numpy", "load"),
        ("numpy", "frombuffer"),
        ("numpy.core.multiarray", "_reconstructx"),
        ("numpy.lib.format", "read_array"),
        ("torch._utils", "_rebuild_tensor_v2"),
        ("collections", "Counter"),
        ("", ""),
    ] {
        for bytes in calls(m, n) {
            refused(&bytes, ErrorKind::Unsupported, &format!("{m}.{n}"));
        }
    }
}

#[test]
fn reduce_on_anything_but_an_allowed_callable_is_refused() {
    // [] () REDUCE; "x" () REDUCE; numpy.dtype as the class of _reconstruct.
    refused(b"\x80\x02])R.", ErrorKind::Unsupported, "REDUCE calls a list");
    refused(b"\x80\x04\x8c\x01x)R.", ErrorKind::Unsupported, "REDUCE calls a str");
    let mut b =
        b"\x80\x02cnumpy.core.multiarray\n_reconstruct\ncnumpy\ndtype\nK\x00\x85C\x01b\x87R."
            .to_vec();
    refused(&b, ErrorKind::Unsupported, "_reconstruct(numpy.ndarray");
    // Allowed callables with arguments they are not read with: bytes(10**6) would allocate,
    // _codecs.encode with another codec would run it.
    refused(
        b"\x80\x02c__builtin__\nbytes\nJ\x40\x42\x0f\x00\x85R.",
        ErrorKind::Unsupported,
        "bytes",
    );
    refused(
        b"\x80\x02c_codecs\nencode\nX\x01\x00\x00\x00xX\x05\x00\x00\x00rot13\x86R.",
        ErrorKind::Unsupported,
        "_codecs.encode",
    );
    // BUILD on plain data (what __setstate__ of an arbitrary class would do).
    refused(b"\x80\x02}}b.", ErrorKind::Unsupported, "BUILD");
    // Object construction opcodes.
    b = b"\x80\x04\x8c\x08builtins\x8c\x06object\x93)\x81.".to_vec();
    refused(&b, ErrorKind::Unsupported, "builtins.object");
    refused(b"\x80\x02]\x81.", ErrorKind::Unsupported, "NEWOBJ");
    refused(b"\x80\x05\x97.", ErrorKind::Unsupported, "NEXT_BUFFER");
    refused(b"\x80\x02\x82\x01.", ErrorKind::Unsupported, "EXT1");
    refused(b"\x80\x02X\x01\x00\x00\x00x\x51.", ErrorKind::Unsupported, "BINPERSID");
    // Text protocols.
    refused(b"I42\n.", ErrorKind::Unsupported, "INT");
    refused(b"\x80\x01N.", ErrorKind::Unsupported, "protocol 1");
}

#[test]
fn memo_abuse_is_refused() {
    // A get of a memo entry never put.
    refused(b"\x80\x02h\x05.", ErrorKind::Corrupt, "memo entry 5");
    refused(b"\x80\x02j\xff\xff\xff\xff.", ErrorKind::Corrupt, "memo entry");
    // Billion laughs: each level is a list of two references to the level below, 60 deep
    // (2^60 values from ~500 bytes).
    let mut b = b"\x80\x02]q\x000".to_vec();
    for level in 1..=60u8 {
        b.extend_from_slice(&[b'(', b'h', level - 1, b'h', level - 1, b'l', b'q', level, b'0']);
    }
    b.extend_from_slice(&[b'h', 60, b'.']);
    let e = decode(&b).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::Limit), "{:?}: {}", e.kind(), e.message());
    // A list that contains itself.
    refused(b"\x80\x02]q\x00h\x00a.", ErrorKind::Unsupported, "cycle");
    // A dict that is its own value, through the memo.
    refused(b"\x80\x02}q\x00X\x01\x00\x00\x00kh\x00s.", ErrorKind::Unsupported, "cycle");
}

#[test]
fn deep_nesting_is_a_limit_error_not_a_stack_overflow() {
    for depth in [65usize, 1_000, 200_000] {
        let mut b = b"\x80\x02".to_vec();
        b.extend(std::iter::repeat_n(b']', depth));
        b.extend(std::iter::repeat_n(b'a', depth - 1));
        b.push(b'.');
        let e = decode(&b).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Limit, "{depth}: {}", e.message());
        assert!(e.message().contains("nesting"), "{}", e.message());
    }
    // Within the limit it reads.
    let mut b = b"\x80\x02".to_vec();
    b.extend(std::iter::repeat_n(b']', 10));
    b.extend(std::iter::repeat_n(b'a', 9));
    b.push(b'.');
    let r = decode(&b).unwrap();
    assert_eq!(r.len(), 1);
}

#[test]
fn huge_lengths_are_refused_before_anything_is_allocated() {
    let mut cases: Vec<Vec<u8>> = Vec::new();
    for op in [0x8du8, 0x8e, 0x96] {
        let mut b = vec![0x80, 0x05, op];
        b.extend_from_slice(&(1u64 << 62).to_le_bytes());
        b.extend_from_slice(b"abc.");
        cases.push(b);
    }
    cases.push(b"\x80\x02X\xff\xff\xff\x7fabc.".to_vec());
    cases.push(b"\x80\x02B\xff\xff\xff\x7fabc.".to_vec());
    cases.push(b"\x80\x02\x8b\xff\xff\xff\x7fabc.".to_vec());
    cases.push(b"\x80\x04\x95\xff\xff\xff\xff\xff\xff\xff\x7f.".to_vec());
    for b in &cases {
        let e = decode(b).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Corrupt, "{b:02x?}: {}", e.message());
    }
    // An array whose shape claims 2^40 elements over 4 bytes of data.
    let b = b"\x80\x05cnumpy._core.numeric\n_frombuffer\n(C\x04\x00\x00\x00\x00cnumpy\ndtype\nX\x02\x00\x00\x00u1\x89\x88\x87R\x8a\x06\x00\x00\x00\x00\x00\x01\x85X\x01\x00\x00\x00Ct\x94R.";
    let e = decode(b).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Corrupt, "{}", e.message());
    assert!(e.message().contains("needs"), "{}", e.message());
}

#[test]
fn malformed_pickles_are_errors() {
    // Stack underflow, STOP with leftovers, no STOP, a MARK never closed, odd SETITEMS,
    // invalid UTF-8, SETITEM on a list.
    for b in [
        &b"\x80\x02."[..],
        b"\x80\x02NN.",
        b"\x80\x02N",
        b"\x80\x02(N.",
        b"\x80\x02}(Nu.",
        b"\x80\x02X\x01\x00\x00\x00\xff.",
        b"\x80\x02]NNs.",
        b"",
    ] {
        assert!(decode(b).is_err(), "{b:02x?} decoded");
    }
}

#[test]
fn every_truncation_of_every_fixture_is_an_error_never_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let cases: Vec<Json> = expected().into_iter().filter(|c| c.get("fields").is_some()).collect();
    let mut payloads = Vec::new();
    for c in cases.iter().filter(|c| c["file"].as_str().unwrap().ends_with("p4.pkl")) {
        let full = fixture(c["file"].as_str().unwrap());
        let step = (full.len() / 200).max(1);
        payloads.extend((0..full.len()).step_by(step).map(|n| full[..n].to_vec()));
    }
    let source = pickled_dataset(dir.path(), &payloads);
    for i in 0..source.len() {
        assert!(source.read(i).is_err(), "truncated pickle {i} decoded");
    }
}

#[test]
fn int_sizes_are_kept_or_refused_clearly() {
    // LONG1 2**64 - 1 reads as u64; 2**64 is refused naming the size.
    let r = decode(b"\x80\x02\x8a\x09\xff\xff\xff\xff\xff\xff\xff\xff\x00.").unwrap();
    assert_eq!(r.get("data"), Some(ValueRef::UInt(u64::MAX)));
    refused(
        b"\x80\x02\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x00\x01.",
        ErrorKind::Unsupported,
        "does not fit in 64 bits",
    );
}
