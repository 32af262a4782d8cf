//! Syrah targets: a file's header, BSON metadata and items; items written and read back.

use reel::syrah::{SyrahDType, SyrahOptions, SyrahReader, SyrahWriter};
use reel::{DType, MemFiles, Record, RecordSource, RecordSourceExt};

use super::input::Input;
use super::{exercise, limits};

fn options() -> SyrahOptions {
    SyrahOptions::default().limits(limits())
}

/// Items looked at array by array (the rest are covered by [`exercise`]).
const ITEMS_CHECKED: u64 = 64;

/// Bytes as one `.syr` file: the reader, single arrays, arrays in stored order, and the
/// same file twice as a concatenated dataset.
pub fn syrah_file(data: &[u8]) {
    let Ok(reader) = SyrahReader::from_files(MemFiles::single("fuzz.syr", data), &options()) else {
        return;
    };
    exercise(&reader);
    let n = reader.len();
    for i in 0..n.min(ITEMS_CHECKED) {
        let whole = reader.read(i);
        let names: Vec<String> = reader
            .arrays_of(i)
            .map(|c| c.iter().map(|c| c.name().to_string()).collect())
            .unwrap_or_default();
        for name in names.iter().take(16) {
            let one = reader.get_array(i, name);
            if let Ok(whole) = &whole {
                let one = one.expect("an array of an item that reads fails alone");
                assert!(one.get(name) == whole.get(name), "item {i} array {name:?} differs");
            }
            let _ = reader.get_array_as(i, name, SyrahDType::Array(DType::U8));
            let _ = reader.get_array_as(i, name, SyrahDType::Str);
            let _ = reader.array_location(i, name);
        }
        if let Ok(order) = reader.stored_order(i) {
            let mut some = Record::new();
            let got = reader.read_arrays_into(i, &order, &mut some);
            if let Ok(whole) = &whole {
                got.expect("reading an item's arrays in stored order fails");
                for (name, value) in whole.iter() {
                    assert!(some.get(name) == Some(value), "item {i}: stored order differs");
                }
            }
        }
    }
    if n > 0 {
        let mut batch = reel::RecordBatch::new();
        let _ = reader.read_batch_arrays_into(&[0, n - 1], &names_of(&reader), &mut batch);
    }
    let twice = MemFiles::new([("a.syr", data), ("b.syr", data)]);
    let concat = SyrahReader::from_files(twice, &options())
        .expect("a file that opens alone must open concatenated with itself");
    assert_eq!(concat.len(), 2 * n);
    for i in 0..n.min(ITEMS_CHECKED) {
        let first = reader.read(i).map_err(|e| e.kind());
        let second = concat.read(n + i).map_err(|e| e.kind());
        match (&first, &second) {
            (Ok(a), Ok(b)) => assert!(a.view() == b.view(), "item {i} differs in the second copy"),
            _ => assert_eq!(first.err(), second.err(), "item {i}"),
        }
    }
}

fn names_of<F: reel::ReadAt>(reader: &SyrahReader<F>) -> Vec<String> {
    reader
        .arrays_of(0)
        .map(|c| c.iter().map(|c| c.name().to_string()).collect())
        .unwrap_or_default()
}

/// Every dtype a Syrah file can store.
const DTYPES: [SyrahDType; 14] = [
    SyrahDType::Array(DType::Bool),
    SyrahDType::Array(DType::I8),
    SyrahDType::Array(DType::U8),
    SyrahDType::Array(DType::I16),
    SyrahDType::Array(DType::U16),
    SyrahDType::Array(DType::I32),
    SyrahDType::Array(DType::U32),
    SyrahDType::Array(DType::I64),
    SyrahDType::Array(DType::U64),
    SyrahDType::Array(DType::F16),
    SyrahDType::Array(DType::F32),
    SyrahDType::Array(DType::F64),
    SyrahDType::Array(DType::F128),
    SyrahDType::Str,
];

/// Arbitrary items of every dtype through `SyrahWriter`, read back equal: whole items,
/// single arrays, and arrays in the order each item gave them.
pub fn syrah_roundtrip(data: &[u8]) {
    let mut input = Input::new(data);
    let columns: Vec<(String, SyrahDType)> = (0..1 + input.small(3))
        .map(|k| {
            let text: String = input.text().chars().filter(|&c| c != '\0').collect();
            (format!("{text}#{k}"), DTYPES[input.small(DTYPES.len() - 1)])
        })
        .collect();
    let items = 1 + input.small(15);
    let mut records = Vec::with_capacity(items);
    for _ in 0..items {
        let mut r = Record::new();
        let rotate = input.small(columns.len() - 1);
        for (name, dtype) in columns.iter().cycle().skip(rotate).take(columns.len()) {
            let count = input.small(31);
            match dtype {
                SyrahDType::Str => {
                    let text = String::from_utf8_lossy(input.bytes(count));
                    r.push_str(name.as_str(), text.trim_end_matches('\0'));
                }
                SyrahDType::Array(dt) => {
                    let mut bytes = input.bytes(count * dt.item_size() as usize).to_vec();
                    bytes.truncate(bytes.len() / dt.item_size() as usize * dt.item_size() as usize);
                    if *dt == DType::Bool {
                        bytes.iter_mut().for_each(|b| *b &= 1);
                    }
                    let n = bytes.len() as u64 / dt.item_size();
                    r.push_array(name.as_str(), *dt, &[n], &bytes).unwrap();
                }
            }
        }
        records.push(r);
    }

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rt.syr");
    let mut w = SyrahWriter::create(&path).unwrap();
    for r in &records {
        w.add_item(r).unwrap();
    }
    w.finish().unwrap();

    let bytes = std::fs::read(&path).unwrap();
    let reader = SyrahReader::from_files(MemFiles::single("rt.syr", bytes), &options()).unwrap();
    assert_eq!(reader.len(), records.len() as u64);
    for (i, want) in records.iter().enumerate() {
        let i = i as u64;
        let got = reader.read(i).unwrap();
        assert_eq!(got.len(), want.len());
        for (name, value) in want.iter() {
            assert!(got.get(name) == Some(value), "item {i} array {name:?} differs");
            let one = reader.get_array(i, name).unwrap();
            assert!(one.get(name) == Some(value), "item {i} array {name:?} alone differs");
        }
        let order = reader.stored_order(i).unwrap();
        let given: Vec<&str> = want.iter().map(|(n, _)| n).collect();
        // Empty arrays share their neighbour's offset, so only non-empty ones keep order.
        let non_empty = |names: &[&str]| -> Vec<String> {
            names
                .iter()
                .filter(|n| reader.array_location(i, n).unwrap().1.size > 0)
                .map(|n| n.to_string())
                .collect()
        };
        assert_eq!(non_empty(&order), non_empty(&given), "item {i}: stored order");
    }
}
