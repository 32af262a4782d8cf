//! Round trips (proptest): any record of the OFRecord value mapping survives writing and
//! reading unchanged, reel's encoder and prost agree, and every legal wire form of a
//! record (any entry order, unpacked or split lists, unknown fields, overridden entries)
//! reads as the same record, as prost reads it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::collections::BTreeMap;

use proptest::prelude::*;
use prost::Message;
use reel_core::{DType, Record, RecordSource, RecordSourceExt, Value};
use reel_ofrecord::{
    OfrecordOptions, OfrecordReader, OfrecordStream, OfrecordWriter, OfrecordWriterOptions,
    decode_record, encode_record, proto,
};
use support::Wire;

#[derive(Clone, Debug)]
enum F {
    NoKind,
    Bytes(Vec<Vec<u8>>),
    F32(Vec<u32>),
    F64(Vec<u64>),
    I32(Vec<i32>),
    I64(Vec<i64>),
}

fn feature() -> impl Strategy<Value = F> {
    let bits32 = prop_oneof![any::<u32>(), Just(0x7fc0_0001u32), Just(0x8000_0000u32)];
    prop_oneof![
        Just(F::NoKind),
        prop::collection::vec(prop::collection::vec(any::<u8>(), 0..40), 0..4).prop_map(F::Bytes),
        prop::collection::vec(bits32, 0..20).prop_map(F::F32),
        prop::collection::vec(any::<u64>(), 0..6).prop_map(F::F64),
        prop::collection::vec(any::<i32>(), 0..8).prop_map(F::I32),
        prop::collection::vec(any::<i64>(), 0..8).prop_map(F::I64),
    ]
}

fn key() -> impl Strategy<Value = String> {
    // Small alphabets make prefixes and the empty key common (they order specially).
    prop_oneof!["[ab]{0,3}", "[a-z/]{1,12}", "[à-ÿ✓ключ]{1,4}"]
}

fn features() -> impl Strategy<Value = BTreeMap<String, F>> {
    prop::collection::btree_map(key(), feature(), 0..7)
}

/// The record the reader gives for `features` (fields in byte order of the keys).
fn record_of(features: &BTreeMap<String, F>) -> Record {
    let mut r = Record::new();
    for (k, f) in features {
        let k = k.as_str();
        match f {
            F::NoKind => {
                r.push_null(k);
            }
            F::Bytes(values) => {
                let values: Vec<&[u8]> = values.iter().map(Vec::as_slice).collect();
                support::push_bytes_list(&mut r, k, &values);
            }
            F::F32(v) => push(&mut r, k, DType::F32, v.iter().flat_map(|x| x.to_le_bytes())),
            F::F64(v) => push(&mut r, k, DType::F64, v.iter().flat_map(|x| x.to_le_bytes())),
            F::I32(v) => push(&mut r, k, DType::I32, v.iter().flat_map(|x| x.to_le_bytes())),
            F::I64(v) => push(&mut r, k, DType::I64, v.iter().flat_map(|x| x.to_le_bytes())),
        }
    }
    r
}

fn push(r: &mut Record, k: &str, dtype: DType, bytes: impl Iterator<Item = u8>) {
    let bytes: Vec<u8> = bytes.collect();
    let n = bytes.len() as u64 / dtype.item_size();
    r.push_array(k, dtype, &[n], &bytes).unwrap();
}

/// One legal, non-canonical encoding of a feature's list message, chosen by `style`.
fn list_message(f: &F, style: u8) -> Vec<u8> {
    let unpack = style & 1 != 0;
    let mut w = Wire::new();
    if style & 2 != 0 {
        w = w.varint_field(7, 42).len_field(8, b"unknown");
    }
    match f {
        F::NoKind => {}
        F::Bytes(values) => {
            for v in values {
                w = w.len_field(1, v);
            }
        }
        F::F32(v) if unpack => {
            for x in v {
                w = w.fixed32_field(1, x.to_le_bytes());
            }
        }
        F::F64(v) if unpack => {
            for x in v {
                w = w.fixed64_field(1, x.to_le_bytes());
            }
        }
        F::I32(v) if unpack => {
            for x in v {
                w = w.varint_field(1, *x as i64 as u64);
            }
        }
        F::I64(v) if unpack => {
            for x in v {
                w = w.varint_field(1, *x as u64);
            }
        }
        F::F32(v) => {
            let b: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
            if !b.is_empty() {
                w = w.len_field(1, &b);
            }
        }
        F::F64(v) => {
            let b: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
            if !b.is_empty() {
                w = w.len_field(1, &b);
            }
        }
        F::I32(v) => {
            let b = v.iter().fold(Wire::new(), |w, x| w.varint(*x as i64 as u64)).0;
            if !b.is_empty() {
                w = w.len_field(1, &b);
            }
        }
        F::I64(v) => {
            let b = v.iter().fold(Wire::new(), |w, x| w.varint(*x as u64)).0;
            if !b.is_empty() {
                w = w.len_field(1, &b);
            }
        }
    }
    w.0
}

fn kind_number(f: &F) -> Option<u32> {
    match f {
        F::NoKind => None,
        F::Bytes(_) => Some(1),
        F::F32(_) => Some(2),
        F::F64(_) => Some(3),
        F::I32(_) => Some(4),
        F::I64(_) => Some(5),
    }
}

/// The features serialized in one of many legal ways: entries in the order `order`
/// gives, each preceded (when `style` says so) by an overridden entry of the same key,
/// lists packed or unpacked, split over two members, with unknown fields.
fn variant_bytes(features: &BTreeMap<String, F>, order: &[usize], styles: &[u8]) -> Vec<u8> {
    let entries: Vec<(&String, &F)> = features.iter().collect();
    let mut out = Wire::new();
    for (n, &i) in order.iter().enumerate() {
        let (k, f) = entries[i];
        let style = styles[n % styles.len()];
        if style & 4 != 0 {
            // An earlier entry of the same key with another value: the later one wins.
            let decoy = Wire::new()
                .len_field(1, k.as_bytes())
                .len_field(2, &Wire::new().len_field(5, &Wire::new().varint_field(1, 1).0).0)
                .0;
            out = out.len_field(1, &decoy);
        }
        let mut feat = Wire::new();
        if style & 8 != 0 && kind_number(f).is_some() {
            // A member of another kind first: the later member replaces it.
            feat = feat.len_field(if kind_number(f) == Some(1) { 2 } else { 1 }, &[]);
        }
        if let Some(kind) = kind_number(f) {
            feat = feat.len_field(kind, &list_message(f, style));
        }
        let entry = Wire::new().len_field(2, &feat.0).len_field(1, k.as_bytes()).0;
        out = out.len_field(1, &entry);
        if style & 16 != 0 {
            out = out.fixed32_field(99, [1, 2, 3, 4]);
        }
    }
    out.0
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 200,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn encode_decode_and_prost_agree(features in features()) {
        let record = record_of(&features);
        let bytes = encode_record(record.view(), Default::default()).unwrap();
        prop_assert!(decode_record(&bytes).unwrap() == record);
        // prost reads reel's bytes as the same record, and the proto path writes them.
        let message = proto::decode_proto(&bytes).unwrap();
        prop_assert!(proto::from_proto(&message) == record);
        prop_assert_eq!(&proto::encode_proto(&message).unwrap(), &bytes);
        // (Compared as bytes: NaN values make the messages unequal to themselves.)
        let again = proto::to_proto(record.view(), Default::default()).unwrap();
        prop_assert_eq!(again.encode_to_vec(), message.encode_to_vec());
        // prost's own serialization (entries in another order, empty keys and values left
        // out) reads as the same record.
        prop_assert!(decode_record(&message.encode_to_vec()).unwrap() == record);
    }

    #[test]
    fn every_wire_form_reads_the_same(
        features in features(),
        seed in any::<u64>(),
        styles in prop::collection::vec(any::<u8>(), 1..8),
    ) {
        let record = record_of(&features);
        let order = reel_core::testing::conformance::shuffled(features.len() as u64, seed);
        let order: Vec<usize> = order.into_iter().map(|i| i as usize).collect();
        let bytes = variant_bytes(&features, &order, &styles);
        let ours = decode_record(&bytes).unwrap();
        prop_assert!(ours == record);
        let theirs = proto::decode_proto(&bytes).unwrap();
        prop_assert!(proto::from_proto(&theirs) == record);
    }

    #[test]
    fn written_datasets_read_back(
        sets in prop::collection::vec(features(), 0..12),
        per_part in 1u64..5,
        max_bytes in prop::option::of(16u64..400),
    ) {
        let records: Vec<Record> = sets.iter().map(record_of).collect();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ds");
        let mut options = OfrecordWriterOptions::default().max_records_per_part(per_part);
        options.max_bytes_per_part = max_bytes;
        let mut w = OfrecordWriter::create_with(&path, &options).unwrap();
        for r in &records {
            w.write_record(r.view()).unwrap();
        }
        let summary = w.finish().unwrap();
        prop_assert_eq!(summary.records, records.len() as u64);

        let reader = OfrecordReader::open(&path).unwrap();
        prop_assert_eq!(reader.len(), records.len() as u64);
        for (i, r) in records.iter().enumerate() {
            prop_assert!(&reader.read(i as u64).unwrap() == r);
        }
        let streamed: Vec<Record> =
            OfrecordStream::open(&path, &OfrecordOptions::default()).unwrap().map(Result::unwrap).collect();
        prop_assert!(streamed == records);
        // Parts respect the limits and are never empty (unless the dataset is).
        let mut total = 0;
        for k in 0..reader.part_count() {
            let n = reader.part_len(k).unwrap();
            prop_assert!(n <= per_part);
            prop_assert!(n > 0 || records.is_empty());
            let size = std::fs::metadata(&reader.part_paths()[k]).unwrap().len();
            if let Some(m) = max_bytes {
                prop_assert!(size <= m || n == 1, "part {} of {} bytes, {} records", k, size, n);
            }
            total += size;
        }
        prop_assert_eq!(total, summary.bytes);
    }
}

#[test]
fn scalars_and_text_are_written_as_one_element_lists() {
    let mut r = Record::new();
    r.push_bytes("b", b"xy").push_str("s", "hé").push_int("i", -5).push_float("f", 0.25);
    let mut out = r.out();
    let t = out.append(b"t");
    out.push("l".into(), Value::List(vec![Value::Str(t)]));
    let back = decode_record(&encode_record(r.view(), Default::default()).unwrap()).unwrap();
    use reel_ofrecord::OfrecordFeatures;
    assert_eq!(back.get_bytes("b").unwrap(), b"xy");
    assert_eq!(back.get_bytes("s").unwrap(), "hé".as_bytes());
    assert_eq!(back.get_i64s("i").unwrap(), [-5]);
    assert_eq!(back.get_f64s("f").unwrap(), [0.25]);
    assert_eq!(back.get_bytes_list("l").unwrap(), [b"t"]);
}
