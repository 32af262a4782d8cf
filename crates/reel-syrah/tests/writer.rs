//! Writer behaviour: bytes identical to the reference, failure modes, round trips.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

use proptest::prelude::*;
use reel_core::testing::golden::unhex;
use reel_core::{DType, ErrorKind, Record, RecordSink, RecordSource, RecordSourceExt, ValueRef};
use reel_syrah::{
    SyrahDType, SyrahReader, SyrahVersion, SyrahWriteOptions, SyrahWriter, looks_like_syrah,
};

fn array(r: &mut Record, name: &str, dtype: DType, shape: &[u64], data: &[u8]) {
    r.push_array(name, dtype, shape, data).unwrap();
}

fn write(path: &Path, items: &[Record]) -> Vec<u8> {
    let mut w = SyrahWriter::create(path).unwrap();
    for item in items {
        w.add_item(item).unwrap();
    }
    let summary = w.finish().unwrap();
    let bytes = std::fs::read(path).unwrap();
    assert_eq!(summary.bytes, bytes.len() as u64);
    assert_eq!(summary.records, items.len() as u64);
    bytes
}

fn f32s(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// Bytes from the spec's notation: hex groups and quoted strings (`\0` is a NUL).
fn spec_bytes(text: &str) -> Vec<u8> {
    let mut out = Vec::new();
    for token in text.split_whitespace() {
        match token.strip_prefix('"').and_then(|t| t.strip_suffix('"')) {
            Some(s) => out.extend(s.replace("\\0", "\0").bytes()),
            None => out.extend(unhex(token)),
        }
    }
    out
}

/// The worked example of the spec (§6), produced and verified with the reference.
#[test]
fn spec_worked_example_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("x.syr");
    let mut a = Record::new();
    array(&mut a, "label", DType::I32, &[1], &1i32.to_le_bytes());
    array(&mut a, "x", DType::F32, &[2], &f32s(&[1.5, -2.0]));
    let mut b = Record::new();
    array(&mut b, "label", DType::I32, &[1], &7i32.to_le_bytes());
    array(&mut b, "x", DType::F32, &[1], &f32s(&[0.25]));
    let expected = spec_bytes(
        r#"
        4753 00000200 2a00000000000000 ad00000000000000
        01000000 0000c03f 000000c0 07000000 0000803e
        ad000000
          03 "label\0" 4e000000
             05 "offset\0" 10000000 00 1600000000000000 2200000000000000
             05 "size\0"   10000000 00 0400000000000000 0400000000000000
             02 "dtype\0"  06000000 "int32\0"
             00
          03 "x\0" 50000000
             05 "offset\0" 10000000 00 1a00000000000000 2600000000000000
             05 "size\0"   10000000 00 0800000000000000 0400000000000000
             02 "dtype\0"  08000000 "float32\0"
             00
          00
        "#,
    );
    let bytes = write(&p, &[a, b]);
    assert_eq!(bytes.len(), 215);
    assert_eq!(bytes, expected);
    assert!(looks_like_syrah(&bytes, bytes.len() as u64));
}

/// The key-order example of the spec: the metadata keeps the first item's order, each
/// item's bytes follow its own order.
#[test]
fn key_order_follows_first_item_and_data_order_each_item() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("x.syr");
    let mut a = Record::new();
    array(&mut a, "z", DType::U8, &[1], &[1]);
    array(&mut a, "a", DType::U8, &[1], &[2]);
    let mut b = Record::new();
    array(&mut b, "a", DType::U8, &[1], &[3]);
    array(&mut b, "z", DType::U8, &[1], &[4]);
    let bytes = write(&p, &[a, b]);
    assert_eq!(&bytes[22..26], &[1, 2, 3, 4]);
    let r = SyrahReader::open(&p).unwrap();
    let names: Vec<&str> = r.arrays_of(0).unwrap().iter().map(|c| c.name()).collect();
    assert_eq!(names, ["z", "a"]);
    let at = |i, n| r.array_location(i, n).unwrap().1.offset;
    assert_eq!([at(0, "z"), at(1, "z"), at(0, "a"), at(1, "a")], [22, 25, 23, 24]);
    let item1 = r.read(1).unwrap();
    let fields: Vec<(&str, &[u8])> =
        item1.iter().map(|(n, v)| (n, v.as_array().unwrap().data)).collect();
    assert_eq!(fields, [("z", &[4u8][..]), ("a", &[3u8][..])]);
}

#[test]
fn multi_dimensional_arrays_are_flattened_and_text_joined() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("x.syr");
    let mut item = Record::new();
    let data: Vec<u8> = (0..6i16).flat_map(|v| v.to_le_bytes()).collect();
    array(&mut item, "m", DType::I16, &[3, 2], &data);
    // numpy ['héllo', 'ab'] is a <U5 array: 5 UCS-4 code points per element, NUL-padded.
    let mut ucs4 = Vec::new();
    for s in ["héllo", "ab"] {
        let mut cps: Vec<u32> = s.chars().map(|c| c as u32).collect();
        cps.resize(5, 0);
        cps.iter().for_each(|c| ucs4.extend_from_slice(&c.to_le_bytes()));
    }
    array(&mut item, "t", DType::Unicode(5), &[2], &ucs4);
    item.push_str("s", "");
    let bytes = write(&p, &[item]);
    // Spec §3: ['héllo', 'ab'] is stored as the 8 bytes 68 c3 a9 6c 6c 6f 61 62.
    assert_eq!(&bytes[34..42], unhex("68c3a96c6c6f6162"));
    let r = SyrahReader::open(&p).unwrap();
    let item = r.read(0).unwrap();
    let m = item.get("m").unwrap().as_array().unwrap();
    assert_eq!((m.shape, m.data), (&[6u64][..], &data[..]));
    assert_eq!(item.get("t").unwrap().as_str(), Some("hélloab"));
    assert_eq!(item.get("s").unwrap().as_str(), Some(""));
    let schema = r.info().schema.clone().unwrap();
    let kinds: Vec<(&str, &str)> =
        schema.iter().map(|f| (f.name.as_str(), f.kind.as_str())).collect();
    assert_eq!(kinds, [("m", "int16"), ("t", "str"), ("s", "str")]);
}

#[test]
fn version_option_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("x.syr");
    let opts = SyrahWriteOptions::default().version(SyrahVersion::V0_1_3);
    let mut w = SyrahWriter::create_with(&p, &opts).unwrap();
    w.add_item(Record::new().with_str("a", "x").view()).unwrap();
    w.finish().unwrap();
    let bytes = std::fs::read(&p).unwrap();
    assert_eq!(&bytes[..6], &[0x47, 0x53, 0, 0, 1, 3]);
    let r = SyrahReader::open(&p).unwrap();
    assert_eq!(r.info().version.as_deref(), Some("0.1.3"));
}

#[test]
fn zero_items_is_an_error_and_the_writer_stays_usable() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("x.syr");
    let mut w = SyrahWriter::create(&p).unwrap();
    let e = w.finish().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    assert!(e.to_string().contains("zero items"), "{e}");
    assert!(!p.exists());
    w.add_item(Record::new().with_str("a", "x").view()).unwrap();
    w.finish().unwrap();
    assert_eq!(SyrahReader::open(&p).unwrap().num_items(), 1);
    assert_eq!(w.finish().unwrap_err().kind(), ErrorKind::Closed);
    assert_eq!(
        w.add_item(Record::new().with_str("a", "y").view()).unwrap_err().kind(),
        ErrorKind::Closed
    );
}

#[test]
fn items_without_arrays_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = SyrahWriter::create(dir.path().join("x.syr")).unwrap();
    let e = w.add_item(&Record::new()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    assert!(e.to_string().contains("at least one array"), "{e}");
    assert_eq!(w.num_items(), 0);
}

/// The reference keeps half of an item rejected for a dtype mismatch, which leaves a
/// phantom item. reel refuses the whole item and the file stays exactly as if it had
/// never been offered.
#[test]
fn rejected_items_leave_no_trace() {
    let dir = tempfile::tempdir().unwrap();
    let clean = dir.path().join("clean.syr");
    let messy = dir.path().join("messy.syr");
    let item = |v: u8| {
        let mut r = Record::new();
        array(&mut r, "a", DType::U8, &[1], &[v]);
        r.push_str("b", "text");
        r
    };
    let expected = write(&clean, &[item(1), item(2)]);

    let mut w = SyrahWriter::create(&messy).unwrap();
    w.add_item(&item(1)).unwrap();
    // dtype mismatch on the second array (after the first was accepted).
    let mut bad = Record::new();
    array(&mut bad, "a", DType::U8, &[1], &[9]);
    array(&mut bad, "b", DType::U8, &[1], &[9]);
    let e = w.add_item(&bad).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Schema);
    assert!(e.to_string().contains("\"b\" is uint8 in this item but str"), "{e}");
    // Key mismatches: missing, extra, renamed; duplicates.
    let missing = Record::new().with_str("b", "x");
    assert_eq!(w.add_item(&missing).unwrap_err().kind(), ErrorKind::Schema);
    let mut extra = item(5);
    extra.push_str("c", "x");
    let e = w.add_item(&extra).unwrap_err();
    assert!(e.to_string().contains("extra [c]"), "{e}");
    let mut dup = item(5);
    dup.push_str("b", "again");
    assert_eq!(w.add_item(&dup).unwrap_err().kind(), ErrorKind::InvalidInput);
    w.add_item(&item(2)).unwrap();
    w.finish().unwrap();
    assert_eq!(std::fs::read(&messy).unwrap(), expected);
}

#[test]
fn unsupported_values_are_schema_errors_unless_coerced() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("x.syr");
    let mut w = SyrahWriter::create(&p).unwrap();
    let mut complex = Record::new();
    array(&mut complex, "c", DType::C64, &[1], &[0; 8]);
    let e = w.add_item(&complex).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Schema);
    assert!(e.to_string().contains("complex64"), "{e}");
    let e = w.add_item(Record::new().with_int("i", 3).view()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Schema);
    assert!(e.to_string().contains("coerce_values"), "{e}");
    let e = w.add_item(Record::new().with_str("a\0b", "x").view()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    let e = w.add_item(Record::new().with_str("t", "x\0").view()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    assert!(e.to_string().contains("NUL"), "{e}");
    drop(w);

    let mut w =
        SyrahWriter::create_with(&p, &SyrahWriteOptions::default().coerce_values(true)).unwrap();
    let mut item =
        Record::new().with_bytes("b", b"\x00\xff").with_int("i", -3).with_float("f", 0.5);
    item.push_uint("u", u64::MAX).push_bool("t", true);
    w.add_item(&item).unwrap();
    w.finish().unwrap();
    let r = SyrahReader::open(&p).unwrap();
    let got = r.read(0).unwrap();
    let arr = |n| got.get(n).unwrap().as_array().unwrap();
    assert_eq!((arr("b").dtype, arr("b").data), (DType::U8, &[0u8, 255][..]));
    assert_eq!(arr("i").to_i64_vec(), Some(vec![-3]));
    assert_eq!(arr("f").to_f64_vec(), Some(vec![0.5]));
    assert_eq!((arr("u").dtype, arr("u").data), (DType::U64, &u64::MAX.to_le_bytes()[..]));
    assert_eq!((arr("t").dtype, arr("t").data), (DType::Bool, &[1u8][..]));
}

#[test]
fn dropped_writer_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("x.syr");
    let mut w = SyrahWriter::create(&p).unwrap();
    w.add_item(Record::new().with_str("a", "x").view()).unwrap();
    drop(w);
    assert!(!p.exists());
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "staging files left behind");
}

#[test]
fn sink_interface_writes_the_same_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.syr");
    let b = dir.path().join("b.syr");
    let items: Vec<Record> =
        (0..5u8).map(|i| Record::new().with_str("s", &"x".repeat(i as usize))).collect();
    let expected = write(&a, &items);
    let mut sink: Box<dyn RecordSink> = Box::new(SyrahWriter::create(&b).unwrap());
    for item in &items {
        sink.append(item.view()).unwrap();
    }
    sink.finish().unwrap();
    assert_eq!(std::fs::read(&b).unwrap(), expected);
}

/// An item description for property tests: (name, dtype, element count) per array, in
/// the item's order.
fn dtype_strategy() -> impl Strategy<Value = SyrahDType> {
    prop::sample::select(reel_syrah::DTYPE_NAMES.to_vec())
        .prop_map(|n| SyrahDType::from_name(n).unwrap())
}

fn build(name: &str, dtype: SyrahDType, seed: &[u8], r: &mut Record) {
    match dtype {
        SyrahDType::Str => {
            let text: String =
                seed.iter().map(|b| char::from(b'a' + b % 26)).chain(['é']).collect();
            r.push_str(name, &text);
        }
        SyrahDType::Array(dt) => {
            let item = dt.item_size() as usize;
            let n = seed.len() / item;
            let mut data = seed[..n * item].to_vec();
            if dt == DType::Bool {
                data.iter_mut().for_each(|b| *b &= 1);
            }
            r.push_array(name, dt, &[n as u64], &data).unwrap();
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn round_trip(
        columns in prop::collection::vec(dtype_strategy(), 1..6),
        items in prop::collection::vec(
            (prop::collection::vec(prop::collection::vec(any::<u8>(), 0..70), 6), any::<u64>()),
            1..12,
        ),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.syr");
        let names: Vec<String> = (0..columns.len()).map(|k| format!("a{k}")).collect();
        let mut records = Vec::new();
        for (seeds, order_seed) in &items {
            // Each item lists its arrays in its own order (rotated), except the first,
            // whose order fixes the metadata.
            let rot = if records.is_empty() { 0 } else { (*order_seed as usize) % columns.len() };
            let mut r = Record::new();
            for j in 0..columns.len() {
                let k = (j + rot) % columns.len();
                build(&names[k], columns[k], &seeds[k], &mut r);
            }
            records.push(r);
        }
        let bytes = write(&p, &records);
        let reader = SyrahReader::open(&p).unwrap();
        prop_assert_eq!(reader.num_items(), records.len() as u64);
        prop_assert!(reader.info().warnings.is_empty());
        let all: Vec<u64> = (0..records.len() as u64).rev().collect();
        let batch = reader.read_batch(&all).unwrap();
        for (k, got) in batch.iter().enumerate() {
            let want = &records[records.len() - 1 - k];
            prop_assert_eq!(got.len(), columns.len());
            for (name, value) in got.iter() {
                prop_assert_eq!(Some(value), want.get(name));
            }
            // Fields come in metadata order.
            let got_names: Vec<&str> = got.iter().map(|(n, _)| n).collect();
            prop_assert_eq!(got_names, names.iter().map(String::as_str).collect::<Vec<_>>());
        }
        // Data is laid out in each item's own order, with no gaps.
        let mut pos = 22;
        for (i, r) in records.iter().enumerate() {
            for (name, _) in r.iter() {
                let (_, loc) = reader.array_location(i as u64, name).unwrap();
                prop_assert_eq!(loc.offset, pos);
                pos = loc.end();
            }
        }
        prop_assert_eq!(reader.files()[0].header().metadata_offset, pos);
        // Rewriting what was read (fields in metadata order) is stable.
        let again = dir.path().join("again.syr");
        let reread: Vec<Record> = (0..reader.num_items()).map(|i| reader.read(i).unwrap()).collect();
        let rewritten = write(&again, &reread);
        if items.len() == 1 || columns.len() == 1 {
            prop_assert_eq!(&rewritten, &bytes);
        }
        prop_assert_eq!(rewritten.len(), bytes.len());
        let single = reader.get_array(records.len() as u64 - 1, &names[0]).unwrap();
        prop_assert_eq!(single.len(), 1);
        let value: Option<ValueRef<'_>> = single.get(&names[0]);
        prop_assert_eq!(value, records.last().unwrap().get(&names[0]));
    }
}
