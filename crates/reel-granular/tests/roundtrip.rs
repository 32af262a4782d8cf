//! Round trips (proptest): whatever the writers write, the reader reads back unchanged, on
//! every backend; masks and range reads agree with whole reads.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use proptest::prelude::*;
use reel_core::testing::conformance;
use reel_core::{DType, Record, RecordOut, RecordSource, RecordSourceExt, Shape, Value};
use reel_granular::{
    BagsWriter, GranularMask, GranularOptions, GranularReader, GranularSpec, GranularWriter,
    RefsFlavor,
};

/// A value to put into a record.
#[derive(Clone, Debug)]
enum Gen {
    Null,
    Bool(bool),
    Int(i64),
    Big(u64),
    Float(u64),
    Str(String),
    Bytes(Vec<u8>),
    List(Vec<Gen>),
    Map(Vec<(Gen, Gen)>),
    Array(usize, Vec<u64>, u64),
}

const DTYPES: [DType; 8] = [
    DType::U8,
    DType::I16,
    DType::F32,
    DType::F64,
    DType::Bool,
    DType::U64,
    DType::C64,
    DType::Unicode(2),
];

fn scalar() -> impl Strategy<Value = Gen> {
    prop_oneof![
        Just(Gen::Null),
        any::<bool>().prop_map(Gen::Bool),
        any::<i64>().prop_map(Gen::Int),
        (i64::MAX as u64 + 1..=u64::MAX).prop_map(Gen::Big),
        any::<u64>().prop_map(Gen::Float),
        "[a-zé😀 ]{0,40}".prop_map(Gen::Str),
        proptest::collection::vec(any::<u8>(), 0..40).prop_map(Gen::Bytes),
    ]
}

fn array() -> impl Strategy<Value = Gen> {
    (0..DTYPES.len(), proptest::collection::vec(0u64..4, 0..3), any::<u64>())
        .prop_map(|(d, shape, seed)| Gen::Array(d, shape, seed))
}

/// Nested values; `arrays` allows n-dimensional arrays inside (the `tree` type).
fn nested(arrays: bool) -> BoxedStrategy<Gen> {
    let leaf = if arrays { prop_oneof![scalar(), array()].boxed() } else { scalar().boxed() };
    leaf.prop_recursive(3, 24, 5, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..5).prop_map(Gen::List),
            proptest::collection::vec(("[a-z]{1,6}".prop_map(Gen::Str), inner), 0..5)
                .prop_map(Gen::Map),
        ]
    })
    .boxed()
}

fn build(g: &Gen, out: &mut RecordOut<'_>) -> Value {
    match g {
        Gen::Null => Value::Null,
        Gen::Bool(b) => Value::Bool(*b),
        Gen::Int(i) => Value::Int(*i),
        Gen::Big(u) => Value::from_u64(*u),
        Gen::Float(bits) => Value::Float(f64::from_bits(*bits)),
        Gen::Str(s) => out.append_str(s),
        Gen::Bytes(b) => Value::Bytes(out.append(b)),
        Gen::List(items) => Value::List(items.iter().map(|x| build(x, out)).collect()),
        Gen::Map(entries) => {
            Value::Map(entries.iter().map(|(k, v)| (build(k, out), build(v, out))).collect())
        }
        Gen::Array(d, shape, seed) => {
            let dtype = DTYPES[*d];
            let shape = Shape::new(shape);
            let n = shape.element_count().unwrap() * dtype.item_size();
            let mut bytes: Vec<u8> =
                (0..n).map(|k| (seed.wrapping_mul(k + 7) >> 13) as u8).collect();
            if dtype == DType::Bool {
                bytes.iter_mut().for_each(|b| *b &= 1);
            }
            let span = out.append(&bytes);
            out.array_value(dtype, shape, span).unwrap()
        }
    }
}

#[derive(Clone, Debug)]
struct Datapoint {
    blob: Vec<u8>,
    text: String,
    small: i64,
    wide: i64,
    big: u64,
    meta: Gen,
    tree: Gen,
    arr: Gen,
}

fn datapoint() -> impl Strategy<Value = Datapoint> {
    (
        proptest::collection::vec(any::<u8>(), 0..64),
        ".{0,20}",
        any::<i64>(),
        any::<i64>(),
        any::<u64>(),
        nested(false),
        nested(true),
        array(),
    )
        .prop_map(|(blob, text, small, wide, big, meta, tree, arr)| Datapoint {
            blob,
            text,
            small,
            wide,
            big,
            meta,
            tree,
            arr,
        })
}

fn record(d: &Datapoint) -> Record {
    let mut r = Record::new()
        .with_bytes("blob", &d.blob)
        .with_str("text", &d.text)
        .with_int("small", d.small)
        .with_int("wide", d.wide);
    r.push_uint("big", d.big);
    let mut out = r.out();
    for (name, g) in [("meta", &d.meta), ("tree", &d.tree), ("arr", &d.arr)] {
        let v = build(g, &mut out);
        out.push(name.into(), v);
    }
    r
}

fn current_spec() -> GranularSpec {
    GranularSpec::new()
        .with("blob", "bytes")
        .with("text", "utf8")
        .with("small", "int")
        .with("wide", "i64")
        .with("big", "u64")
        .with("meta", "msgpack")
        .with("tree", "tree")
        .with("arr", "array")
}

/// A `tree` value written with a 4-item list starting with "_" comes back as an array
/// (the reference's quirk); such generated values are not expected to round-trip.
fn has_marker_list(g: &Gen) -> bool {
    match g {
        Gen::List(items) => {
            matches!(items.first(), Some(Gen::Str(s)) if s == "_") && items.len() == 4
                || items.iter().any(has_marker_list)
        }
        Gen::Map(e) => e.iter().any(|(_, v)| has_marker_list(v)),
        _ => false,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn current_layout_round_trips(points in proptest::collection::vec(datapoint(), 0..12)) {
        prop_assume!(!points.iter().any(|p| has_marker_list(&p.tree)));
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("ds");
        let mut w = GranularWriter::create(&dir, &current_spec()).unwrap();
        let records: Vec<Record> = points.iter().map(record).collect();
        for r in &records {
            w.append(r.view()).unwrap();
        }
        w.finish().unwrap();
        let outcomes = conformance::check_backends(|b| {
            Ok(Box::new(GranularReader::open_with(&dir, &GranularOptions::default().backend(b))?) as Box<dyn RecordSource>)
        })
        .unwrap();
        let reader = GranularReader::open(&dir).unwrap();
        for (i, want) in records.iter().enumerate() {
            let got = outcomes[i].as_ref().unwrap();
            // Fields come back in spec order (sorted keys); compare them by name.
            prop_assert_eq!(got.len(), want.len());
            for (name, value) in want.iter() {
                prop_assert!(got.get(name).unwrap() == value, "record {} field {}", i, name);
            }
            let one = reader.read_masked(i as u64, &GranularMask::new().key("tree").key("blob")).unwrap();
            prop_assert_eq!(one.len(), 2);
            prop_assert!(one.get("tree").unwrap() == want.get("tree").unwrap());
        }
        let batch = reader.read_range(0..records.len() as u64, None).unwrap();
        prop_assert_eq!(batch.len(), records.len());
    }

    #[test]
    fn bags_layout_round_trips(
        points in proptest::collection::vec(
            (
                proptest::collection::vec("[a-z]{0,8}", 0..4),
                proptest::collection::vec(0u64..1 << 40, 0..4),
                any::<u64>(),
                proptest::collection::vec(any::<u8>(), 12),
                nested(false),
            ),
            0..10,
        ),
        flavor in prop_oneof![Just(RefsFlavor::Bags051), Just(RefsFlavor::Granular021)],
    ) {
        let spec = GranularSpec::new()
            .with("words", "utf8[]")
            .with("counts", "int[]")
            .with("n", "int")
            .with("meta", "msgpack");
        let spec = if flavor == RefsFlavor::Bags051 { spec.with("vec", "array(float32,3)") } else { spec };
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("ds");
        let mut w = BagsWriter::create(&dir, &spec, flavor).unwrap();
        let mut records = Vec::new();
        for (words, counts, n, vec, meta) in &points {
            let mut r = Record::new().with_int("n", (*n >> 2) as i64);
            if flavor == RefsFlavor::Bags051 {
                r.push_array("vec", DType::F32, &[3], vec).unwrap();
            }
            let mut out = r.out();
            // granular 0.20–0.21 cannot start a v2 bag with an empty record.
            let words = words
                .iter()
                .map(|s| if flavor == RefsFlavor::Granular021 && s.is_empty() { out.append_str("x") } else { out.append_str(s) })
                .collect();
            out.push("words".into(), Value::List(words));
            out.push("counts".into(), Value::List(counts.iter().map(|&c| Value::Int(c as i64)).collect()));
            let m = build(meta, &mut out);
            out.push("meta".into(), m);
            w.append(r.view()).unwrap();
            records.push(r);
        }
        w.finish().unwrap();
        let reader = GranularReader::open(&dir).unwrap();
        prop_assert_eq!(reader.len(), records.len() as u64);
        for (i, want) in records.iter().enumerate() {
            let got = reader.read(i as u64).unwrap();
            for (name, value) in want.iter() {
                prop_assert!(got.get(name).unwrap() == value, "record {} field {}", i, name);
            }
            let avail = reader.available(i as u64).unwrap();
            let words = want.get("words").unwrap().as_list().unwrap().len() as u64;
            prop_assert_eq!(avail.iter().find(|a| &*a.key == "words").unwrap().items.clone(), Some(0..words));
            if words > 1 {
                let part = reader.read_masked(i as u64, &GranularMask::new().items("words", 1..words)).unwrap();
                let part = part.get("words").unwrap().as_list().unwrap();
                prop_assert_eq!(part.len() as u64, words - 1);
            }
        }
    }
}
