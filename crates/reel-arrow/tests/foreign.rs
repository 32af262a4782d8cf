//! Parquet and Arrow IPC files as other tools write them: every codec, the types the file
//! declares, and what reel cannot take.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::sync::Arc;

use arrow_array::{ArrayRef, BinaryArray, Int64Array, RecordBatch, StringArray};
use parquet::arrow::ArrowWriter;
use parquet::basic::{BrotliLevel, Compression, GzipLevel, ZstdLevel};
use parquet::file::properties::WriterProperties;
use reel_arrow::{ArrowFileSource, ReadOptions};
use reel_core::{RecordSource, RecordSourceExt};

/// Writes `batch` as a Parquet file compressed with `codec`.
fn parquet_file(path: &Path, batch: &RecordBatch, codec: Compression) {
    let props = WriterProperties::builder().set_compression(codec).build();
    let mut w =
        ArrowWriter::try_new(std::fs::File::create(path).unwrap(), batch.schema(), Some(props))
            .unwrap();
    w.write(batch).unwrap();
    w.close().unwrap();
}

/// Writes `batch` as an Arrow IPC file with its buffers compressed with `codec`.
fn ipc_file(path: &Path, batch: &RecordBatch, codec: Option<arrow_ipc::CompressionType>) {
    let options =
        arrow_ipc::writer::IpcWriteOptions::default().try_with_compression(codec).unwrap();
    let mut w = arrow_ipc::writer::FileWriter::try_new_with_options(
        std::fs::File::create(path).unwrap(),
        &batch.schema(),
        options,
    )
    .unwrap();
    w.write(batch).unwrap();
    w.finish().unwrap();
}

fn sample_batch() -> RecordBatch {
    let n = 300;
    let columns: Vec<(&str, ArrayRef)> = vec![
        ("id", Arc::new(Int64Array::from_iter_values(0..n))),
        ("text", Arc::new(StringArray::from_iter_values((0..n).map(|i| format!("row {i}"))))),
        ("blob", Arc::new(BinaryArray::from_iter_values((0..n).map(|i| vec![i as u8; 40])))),
    ];
    RecordBatch::try_from_iter(columns).unwrap()
}

fn check_sample(src: &ArrowFileSource, what: &str) {
    assert_eq!(src.len(), 300, "{what}");
    for i in [0u64, 1, 150, 299] {
        let r = src.read(i).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(r.get("id").unwrap().as_i64(), Some(i as i64), "{what}");
        assert_eq!(r.get("text").unwrap().as_str(), Some(format!("row {i}").as_str()), "{what}");
        assert_eq!(r.bytes("blob").unwrap(), &vec![i as u8; 40][..], "{what}");
    }
}

/// Every codec Parquet defines and both IPC buffer codecs (pyarrow's Feather files are LZ4
/// by default) read back.
#[test]
fn every_codec_reads() {
    let tmp = tempfile::tempdir().unwrap();
    let batch = sample_batch();
    for (name, codec) in [
        ("none", Compression::UNCOMPRESSED),
        ("snappy", Compression::SNAPPY),
        ("gzip", Compression::GZIP(GzipLevel::default())),
        ("lz4", Compression::LZ4),
        ("lz4_raw", Compression::LZ4_RAW),
        ("brotli", Compression::BROTLI(BrotliLevel::default())),
        ("zstd", Compression::ZSTD(ZstdLevel::default())),
    ] {
        let path = tmp.path().join(format!("{name}.parquet"));
        parquet_file(&path, &batch, codec);
        let src = ArrowFileSource::open(&path, &ReadOptions::default())
            .unwrap_or_else(|e| panic!("parquet {name}: {e}"));
        check_sample(&src, &format!("parquet {name}"));
    }
    for (name, codec) in [
        ("none", None),
        ("lz4", Some(arrow_ipc::CompressionType::LZ4_FRAME)),
        ("zstd", Some(arrow_ipc::CompressionType::ZSTD)),
    ] {
        let path = tmp.path().join(format!("{name}.arrow"));
        ipc_file(&path, &batch, codec);
        // Mapped (decoded where the batches lie) and read into memory.
        for map in [true, false] {
            let options = ReadOptions { map, ..ReadOptions::default() };
            let src = ArrowFileSource::open(&path, &options)
                .unwrap_or_else(|e| panic!("ipc {name} (map {map}): {e}"));
            check_sample(&src, &format!("ipc {name} (map {map})"));
            // A compressed file says what its random reads cost (`reel inspect` shows it).
            let fact = src.info().facts.iter().find(|(k, _)| k == "compression");
            match codec {
                None => assert!(fact.is_none(), "ipc {name}: {fact:?}"),
                Some(_) => {
                    let (_, text) = fact.unwrap_or_else(|| panic!("ipc {name}: no fact"));
                    let named = if name == "lz4" { "LZ4" } else { "zstd" };
                    assert!(text.starts_with(named) && text.contains("whole"), "{text}");
                }
            }
        }
    }
}

/// Writes `batch` as Parquet, converts that file to Parquet again with reel (inferring the
/// schema from the first 1000 records, the default) and returns the new file's schema and
/// its reader.
fn reconvert(dir: &Path, batch: &RecordBatch) -> (arrow_schema::SchemaRef, ArrowFileSource) {
    let src = dir.join("in.parquet");
    parquet_file(&src, batch, Compression::SNAPPY);
    let source = ArrowFileSource::open(&src, &ReadOptions::default()).unwrap();
    let out = dir.join("out.parquet");
    reel_arrow::write_parquet(&source, &out, &reel_arrow::WriteOptions::default())
        .unwrap_or_else(|e| panic!("{e}"));
    let schema = reel_arrow::schema_of_file(&out).unwrap();
    (schema, ArrowFileSource::open(&out, &ReadOptions::default()).unwrap())
}

/// The types a file declares hold although the sampled rows do not show them: a column
/// null in its first rows, a uint64 column whose large values come late, a file without
/// rows.
#[test]
fn declared_types_are_kept_beyond_the_sample() {
    use arrow_array::{Float32Array, UInt64Array};
    use arrow_schema::DataType;
    let tmp = tempfile::tempdir().unwrap();
    let n = 3000usize;
    let late: Vec<Option<i64>> = (0..n).map(|i| (i >= 1500).then_some(i as i64)).collect();
    let big: Vec<u64> = (0..n as u64).map(|i| if i < 2000 { i } else { u64::MAX - i }).collect();
    let batch = RecordBatch::try_from_iter(vec![
        ("x", Arc::new(Int64Array::from(late)) as ArrayRef),
        ("u", Arc::new(UInt64Array::from(big)) as ArrayRef),
        ("never", Arc::new(Float32Array::from(vec![None::<f32>; n])) as ArrayRef),
    ])
    .unwrap();
    let (schema, back) = reconvert(tmp.path(), &batch);
    assert_eq!(schema.field(0).data_type(), &DataType::Int64);
    assert_eq!(schema.field(1).data_type(), &DataType::UInt64);
    assert_eq!(schema.field(2).data_type(), &DataType::Float64);
    assert_eq!(back.read(2999).unwrap().get("x").unwrap().as_i64(), Some(2999));
    assert_eq!(back.read(2999).unwrap().get("u").unwrap().as_u64(), Some(u64::MAX - 2999));
    assert!(back.read(0).unwrap().get("x").is_none());

    // No rows at all: the columns keep their types.
    let (schema, back) = reconvert(tmp.path(), &batch.slice(0, 0));
    assert_eq!(back.len(), 0);
    let types: Vec<&DataType> = schema.fields().iter().map(|f| f.data_type()).collect();
    assert_eq!(types, [&DataType::Int64, &DataType::UInt64, &DataType::Float64]);
}

/// Columns reel cannot read are refused at open, naming the column: a type nested in it
/// (`list<decimal>`, named by the column and the path, not by the list's item field), two
/// columns of one name, a tensor whose layout is permuted.
#[test]
fn unreadable_columns_are_refused_naming_the_column() {
    use arrow_array::{Decimal128Array, FixedSizeListArray, Float32Array, ListArray};
    use arrow_buffer::OffsetBuffer;
    use arrow_schema::{DataType, Field, Schema};
    use reel_core::ErrorKind;
    let tmp = tempfile::tempdir().unwrap();
    let open = |path: &Path| ArrowFileSource::open(path, &ReadOptions::default()).err().unwrap();

    let dec: ArrayRef =
        Arc::new(Decimal128Array::from(vec![1i128, 2]).with_precision_and_scale(10, 2).unwrap());
    let item = Arc::new(Field::new("element", dec.data_type().clone(), true));
    let prices = ListArray::new(item, OffsetBuffer::from_lengths([2]), dec, None);
    let batch = RecordBatch::try_from_iter(vec![("prices", Arc::new(prices) as ArrayRef)]).unwrap();
    let path = tmp.path().join("nested.parquet");
    parquet_file(&path, &batch, Compression::SNAPPY);
    let err = open(&path);
    assert_eq!(err.kind(), ErrorKind::Unsupported);
    assert!(err.to_string().contains("column \"prices\"") && err.to_string().contains("prices[]"));
    assert!(!err.to_string().contains("\"element\""), "{err}");

    let ids: ArrayRef = Arc::new(Int64Array::from(vec![1]));
    let schema = Arc::new(Schema::new(vec![
        Field::new("a", DataType::Int64, true),
        Field::new("a", DataType::Int64, true),
    ]));
    let batch = RecordBatch::try_new(schema, vec![ids.clone(), ids]).unwrap();
    let path = tmp.path().join("twice.arrow");
    ipc_file(&path, &batch, None);
    let err = open(&path);
    assert_eq!(err.kind(), ErrorKind::Unsupported);
    assert!(err.to_string().contains("\"a\""), "{err}");
    // Selected by that name, neither is taken for it (the first one was).
    let only_a = ReadOptions { columns: Some(vec!["a".into()]), ..Default::default() };
    let err = ArrowFileSource::open(&path, &only_a).err().unwrap();
    assert_eq!(err.kind(), ErrorKind::Unsupported);
    assert!(err.to_string().contains("cannot tell which is meant"), "{err}");
    // A column selected twice would be a field twice as well.
    let ids: ArrayRef = Arc::new(Int64Array::from(vec![1, 2]));
    let single = RecordBatch::try_from_iter([("a", ids)]).unwrap();
    let path = tmp.path().join("once.arrow");
    ipc_file(&path, &single, None);
    let twice = ReadOptions { columns: Some(vec!["a".into(), "a".into()]), ..Default::default() };
    let err = ArrowFileSource::open(&path, &twice).err().unwrap();
    assert_eq!(err.kind(), ErrorKind::Unsupported);
    assert!(err.to_string().contains("more than one column named \"a\""), "{err}");

    let values: ArrayRef = Arc::new(Float32Array::from(vec![0.0f32; 6]));
    let item = Arc::new(Field::new("item", DataType::Float32, false));
    let tensors = FixedSizeListArray::new(item.clone(), 6, values, None);
    let field = |meta: &str| {
        Field::new("t", DataType::FixedSizeList(item.clone(), 6), true).with_metadata(
            [
                (reel_arrow::EXTENSION_NAME_KEY.to_string(), reel_arrow::FIXED_SHAPE_TENSOR.into()),
                (reel_arrow::EXTENSION_METADATA_KEY.to_string(), meta.to_string()),
            ]
            .into_iter()
            .collect::<std::collections::HashMap<String, String>>(),
        )
    };
    let tensor_file = |meta: &str| {
        let schema = Arc::new(Schema::new(vec![field(meta)]));
        let batch = RecordBatch::try_new(schema, vec![Arc::new(tensors.clone())]).unwrap();
        let path = tmp.path().join("tensor.arrow");
        ipc_file(&path, &batch, None);
        path
    };
    let err = open(&tensor_file(r#"{"shape":[2,3],"permutation":[1,0]}"#));
    assert_eq!(err.kind(), ErrorKind::Unsupported);
    assert!(err.to_string().contains("\"t\"") && err.to_string().contains("permutation"), "{err}");
    // Metadata is quoted only in part: it may be as long as the file wants.
    let long: Vec<String> = (0..10_000).rev().map(|k| k.to_string()).collect();
    let err =
        open(&tensor_file(&format!(r#"{{"shape":[2,3],"permutation":[{}]}}"#, long.join(","))));
    assert!(err.to_string().len() < 400, "{err}");
    // The identity permutation is no permutation.
    let path = tensor_file(r#"{"shape":[2,3],"permutation":[0,1]}"#);
    let src = ArrowFileSource::open(&path, &ReadOptions::default()).unwrap();
    assert_eq!(src.read(0).unwrap().get("t").unwrap().as_array().unwrap().shape, &[2, 3]);
}

/// Writes batches of `rows` rows each (`id`, and a 3-byte `blob` per row) as an IPC file
/// and gives each record batch's block: offset, metadata length, body length.
fn ipc_batches(path: &Path, rows: &[i64]) -> Vec<(u64, u64, u64)> {
    let mut start = 0;
    let batches: Vec<RecordBatch> = rows
        .iter()
        .map(|&n| {
            let ids = start..start + n;
            start += n;
            let columns: Vec<(&str, ArrayRef)> = vec![
                ("id", Arc::new(Int64Array::from_iter_values(ids.clone()))),
                ("blob", Arc::new(BinaryArray::from_iter_values(ids.map(|i| vec![i as u8; 3])))),
            ];
            RecordBatch::try_from_iter(columns).unwrap()
        })
        .collect();
    let mut w = arrow_ipc::writer::FileWriter::try_new(
        std::fs::File::create(path).unwrap(),
        &batches[0].schema(),
    )
    .unwrap();
    for b in &batches {
        w.write(b).unwrap();
    }
    w.finish().unwrap();
    let bytes = std::fs::read(path).unwrap();
    let tail: [u8; 10] = bytes[bytes.len() - 10..].try_into().unwrap();
    let footer_len = arrow_ipc::reader::read_footer_length(tail).unwrap();
    let footer_at = bytes.len() - 10 - footer_len;
    let footer = arrow_ipc::root_as_footer(&bytes[footer_at..bytes.len() - 10]).unwrap();
    footer
        .recordBatches()
        .unwrap()
        .iter()
        .map(|b| (b.offset() as u64, b.metaDataLength() as u64, b.bodyLength() as u64))
        .collect()
}

/// Replaces every occurrence of `from` with `to` in `bytes[range]`; says how many there were.
fn patch(bytes: &mut [u8], range: std::ops::Range<usize>, from: &[u8], to: &[u8]) -> usize {
    let mut n = 0;
    let mut at = range.start;
    while at + from.len() <= range.end {
        if &bytes[at..at + from.len()] == from {
            bytes[at..at + from.len()].copy_from_slice(to);
            n += 1;
            at += from.len();
        } else {
            at += 1;
        }
    }
    n
}

/// A footer block as the file stores it: offset, metadata length, padding, body length.
fn block_bytes(offset: i64, meta: i32, body: i64) -> Vec<u8> {
    let mut b = offset.to_le_bytes().to_vec();
    b.extend(meta.to_le_bytes());
    b.extend([0; 4]);
    b.extend(body.to_le_bytes());
    b
}

/// An IPC file's row count comes from its record batch headers: a file whose batch body is
/// damaged opens with the right length (the body is never read at open), its other batches
/// read, and a record in the damaged batch is a Corrupt error naming the file and record.
#[test]
fn ipc_row_counts_come_from_the_batch_headers() {
    use reel_core::ErrorKind;
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("damaged.arrow");
    let blocks = ipc_batches(&path, &[5, 777, 4099]);
    let mut bytes = std::fs::read(&path).unwrap();
    let (offset, meta, body) = blocks[1];
    let body_at = (offset + meta) as usize;
    bytes[body_at..body_at + body as usize].fill(0xff);
    std::fs::write(&path, &bytes).unwrap();

    let src = ArrowFileSource::open(&path, &ReadOptions::default()).unwrap();
    assert_eq!(src.len(), 5 + 777 + 4099);
    assert_eq!(src.read(4).unwrap().get("id").unwrap().as_i64(), Some(4));
    assert_eq!(src.read(5 + 777).unwrap().get("id").unwrap().as_i64(), Some(782));
    let err = src.read(6).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Corrupt, "{err}");
    assert!(err.to_string().contains("damaged.arrow") && err.record() == Some(6), "{err}");
    // The batches around it still read after the failure.
    assert_eq!(src.read(5 + 777 + 4098).unwrap().get("id").unwrap().as_i64(), Some(4880));
    assert_eq!(src.read(0).unwrap().bytes("blob").unwrap(), &[0u8; 3]);
}

/// Offsets and lengths the footer and the batch headers give are checked against the file
/// before anything is read through them: each damage is a Corrupt error naming the file,
/// never a panic, a huge allocation or a wrong length.
#[test]
fn hostile_ipc_footers_are_refused_naming_the_file() {
    use reel_core::ErrorKind;
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("hostile.arrow");
    let blocks = ipc_batches(&path, &[5, 777, 4099]);
    let good = std::fs::read(&path).unwrap();
    let size = good.len();
    let footer =
        size - 10 - i32::from_le_bytes(good[size - 10..size - 6].try_into().unwrap()) as usize;
    let block = |k: usize| {
        let (o, m, b) = blocks[k];
        block_bytes(o as i64, m as i32, b as i64)
    };
    let (o1, m1, b1) = blocks[1];
    let (o0, m0, b0) = blocks[0];
    let meta1 = o1 as usize..(o1 + m1) as usize;
    let meta2 = blocks[2].0 as usize..(blocks[2].0 + blocks[2].1) as usize;
    let rows = |n: i64| n.to_le_bytes().to_vec();
    // (what, footer edit or header edit, words the error has)
    type Edit = Box<dyn Fn(&mut Vec<u8>) -> usize>;
    let in_footer = |from: Vec<u8>, to: Vec<u8>| -> Edit {
        Box::new(move |b: &mut Vec<u8>| patch(b, footer..size - 10, &from, &to))
    };
    let cases: Vec<(&str, Edit, &str)> = vec![
        (
            "offset beyond the file",
            in_footer(block(1), block_bytes(size as i64, m1 as i32, b1 as i64)),
            "outside",
        ),
        (
            "negative offset",
            in_footer(block(1), block_bytes(-8, m1 as i32, b1 as i64)),
            "negative offset",
        ),
        (
            "huge offset",
            in_footer(block(1), block_bytes(i64::MAX, m1 as i32, b1 as i64)),
            "outside",
        ),
        (
            "negative metadata length",
            in_footer(block(1), block_bytes(o1 as i64, -1, b1 as i64)),
            "metadata length",
        ),
        (
            "negative body length",
            in_footer(block(1), block_bytes(o1 as i64, m1 as i32, -5)),
            "negative body",
        ),
        (
            "body beyond the file",
            in_footer(block(1), block_bytes(o1 as i64, m1 as i32, 1 << 40)),
            "outside",
        ),
        (
            "overflowing body",
            in_footer(block(1), block_bytes(o1 as i64, m1 as i32, i64::MAX)),
            "outside",
        ),
        (
            "overlapping batches",
            in_footer(block(1), block_bytes(o0 as i64, m0 as i32, b0 as i64)),
            "overlap",
        ),
        (
            "metadata running into the next batch",
            in_footer(block(1), block_bytes(o1 as i64, (m1 + b1) as i32 + 1, b1 as i64)),
            "overlap",
        ),
        (
            "huge metadata length",
            in_footer(block(2), {
                let (o2, _, b2) = blocks[2];
                block_bytes(o2 as i64, i32::MAX, b2 as i64)
            }),
            "outside",
        ),
        (
            "negative row count",
            {
                let meta1 = meta1.clone();
                Box::new(move |b: &mut Vec<u8>| patch(b, meta1.clone(), &rows(777), &rows(-1)))
            },
            "negative row count",
        ),
        (
            "row counts that overflow",
            Box::new(move |b: &mut Vec<u8>| {
                patch(b, meta1.clone(), &rows(777), &rows(i64::MAX))
                    + patch(b, meta2.clone(), &rows(4099), &rows(i64::MAX))
            }),
            "overflow",
        ),
        (
            "message length beyond its block",
            Box::new(move |b: &mut Vec<u8>| {
                let at = o1 as usize + 4;
                b[at..at + 4].copy_from_slice(&i32::MAX.to_le_bytes());
                1
            }),
            "message length",
        ),
        (
            "footer length beyond the file",
            Box::new(move |b: &mut Vec<u8>| {
                b[size - 10..size - 6].copy_from_slice(&(size as i32).to_le_bytes());
                1
            }),
            "footer",
        ),
    ];
    for (what, edit, words) in cases {
        let mut bytes = good.clone();
        assert!(edit(&mut bytes) > 0, "{what}: nothing to patch");
        std::fs::write(&path, &bytes).unwrap();
        let err = match ArrowFileSource::open(&path, &ReadOptions::default()) {
            Ok(src) => panic!("{what}: opened with {} records", src.len()),
            Err(e) => e,
        };
        assert_eq!(err.kind(), ErrorKind::Corrupt, "{what}: {err}");
        let text = err.to_string();
        assert!(text.contains("hostile.arrow") && text.contains(words), "{what}: {text}");
        // The schema alone does not need the row counts to add up.
        if let Err(e) = reel_arrow::schema_of_file(&path) {
            assert_eq!(e.kind(), ErrorKind::Corrupt, "{what}: {e}");
        }
    }
}

/// A column of a type reel has no value for blocks the file only when it is read: left out
/// (`skip_columns`, or a `columns` selection without it) it is never decoded nor checked,
/// in Parquet and IPC alike; leaving out a column the file lacks is an error naming it.
#[test]
fn unreadable_columns_left_out_are_never_checked() {
    use arrow_array::Decimal128Array;
    use reel_core::ErrorKind;
    let tmp = tempfile::tempdir().unwrap();
    let n = 40;
    let price = Decimal128Array::from_iter_values((0..n).map(i128::from))
        .with_precision_and_scale(10, 2)
        .unwrap();
    let columns: Vec<(&str, ArrayRef)> = vec![
        ("x", Arc::new(Int64Array::from_iter_values(0..n))),
        ("price", Arc::new(price)),
        ("y", Arc::new(StringArray::from_iter_values((0..n).map(|i| format!("y{i}"))))),
    ];
    let batch = RecordBatch::try_from_iter(columns).unwrap();
    let parquet = tmp.path().join("prices.parquet");
    parquet_file(&parquet, &batch, Compression::SNAPPY);
    let ipc = tmp.path().join("prices.arrow");
    ipc_file(&ipc, &batch, None);
    for path in [&parquet, &ipc] {
        let err = ArrowFileSource::open(path, &ReadOptions::default()).err().unwrap();
        assert_eq!(err.kind(), ErrorKind::Unsupported, "{err}");
        assert!(err.to_string().contains("\"price\"") && err.to_string().contains("leave"));

        let skip = ReadOptions { skip_columns: vec!["price".into()], ..Default::default() };
        let src = ArrowFileSource::open(path, &skip).unwrap();
        let names: Vec<&str> =
            src.info().schema.as_ref().unwrap().iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["x", "y"], "{path:?}");
        let r = src.read(7).unwrap();
        assert_eq!(r.get("x").unwrap().as_i64(), Some(7));
        assert_eq!(r.get("y").unwrap().as_str(), Some("y7"));
        assert!(r.get("price").is_none());

        let keep =
            ReadOptions { columns: Some(vec!["y".into(), "x".into()]), ..Default::default() };
        let src = ArrowFileSource::open(path, &keep).unwrap();
        let r = src.read(39).unwrap();
        let fields: Vec<&str> = r.iter().map(|(name, _)| name).collect();
        assert_eq!(fields, ["y", "x"], "{path:?}");

        // Both: the selection less the skipped.
        let both = ReadOptions {
            columns: Some(vec!["y".into(), "price".into()]),
            skip_columns: vec!["price".into()],
            ..Default::default()
        };
        assert_eq!(
            ArrowFileSource::open(path, &both).unwrap().info().schema.as_ref().unwrap().len(),
            1
        );

        let typo = ReadOptions { skip_columns: vec!["prise".into()], ..Default::default() };
        let err = ArrowFileSource::open(path, &typo).err().unwrap();
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
        assert!(err.to_string().contains("\"prise\"") && err.to_string().contains("x, price, y"));
    }
}

/// Replaces the occurrences of `from` in the file with `to` (same length), at least one.
fn patch_file(path: &Path, from: &[u8], to: &[u8]) {
    let mut bytes = std::fs::read(path).unwrap();
    let len = bytes.len();
    assert!(patch(&mut bytes, 0..len, from, to) > 0, "pattern in the file");
    std::fs::write(path, bytes).unwrap();
}

/// A compressed buffer states the length it decompresses to, and the decoder reserves that
/// much before decompressing: a stated length far beyond what LZ4 or zstd expands to
/// (2^60 bytes) is refused as damage, naming the file and batch, instead of aborting the
/// process on the allocation. Dictionaries, decoded when the file opens, are checked at
/// open.
#[test]
fn compressed_buffers_that_claim_more_than_their_codec_expands_to_are_refused() {
    // Mapped (batches decoded where they lie) and read into memory alike, LZ4 and zstd
    // (which a fuzzer found stating 2^54 bytes).
    for map in [true, false] {
        for (codec, name) in [
            (arrow_ipc::CompressionType::LZ4_FRAME, "LZ4"),
            (arrow_ipc::CompressionType::ZSTD, "zstd"),
        ] {
            stated_lengths_are_checked(&ReadOptions { map, ..ReadOptions::default() }, codec, name);
        }
    }
}

fn stated_lengths_are_checked(
    options: &ReadOptions,
    codec: arrow_ipc::CompressionType,
    name: &str,
) {
    use reel_core::ErrorKind;
    let tmp = tempfile::tempdir().unwrap();
    let huge = (1u64 << 60).to_le_bytes();
    // 300 int64 ids: a data buffer stated as 2400 bytes.
    let path = tmp.path().join("lz4.arrow");
    ipc_file(&path, &sample_batch(), Some(codec));
    let fine = ArrowFileSource::open(&path, options).unwrap();
    assert_eq!(fine.read(7).unwrap().get("id").unwrap().as_i64(), Some(7));
    drop(fine);
    patch_file(&path, &2400u64.to_le_bytes(), &huge);
    let src = ArrowFileSource::open(&path, options).unwrap();
    let err = src.read(7).err().unwrap();
    assert_eq!(err.kind(), ErrorKind::Corrupt);
    let text = err.to_string();
    assert!(text.contains("record batch 0") && text.contains(name), "{text}");
    assert!(text.contains("says it holds"), "{text}");
    assert!(text.contains("lz4.arrow"), "{text}");

    // A dictionary of 200 distinct 12-byte words: its values buffer is stated as 2400 bytes.
    let words: Vec<String> = (0..200).map(|i| format!("word-{i:07}")).collect();
    let keys = arrow_array::Int32Array::from_iter_values((0..400).map(|i| i % 200));
    let dict = arrow_array::DictionaryArray::new(keys, Arc::new(StringArray::from(words)));
    let batch = RecordBatch::try_from_iter([("w", Arc::new(dict) as ArrayRef)]).unwrap();
    let path = tmp.path().join("dict.arrow");
    ipc_file(&path, &batch, Some(codec));
    assert!(ArrowFileSource::open(&path, options).is_ok());
    patch_file(&path, &2400u64.to_le_bytes(), &huge);
    let err = ArrowFileSource::open(&path, options).err().unwrap();
    assert_eq!(err.kind(), ErrorKind::Corrupt);
    assert!(err.to_string().contains("dictionary batch 0"), "{err}");
    assert!(err.to_string().contains("says it holds"), "{err}");
}

/// A Parquet list of numbers reads as 1-D arrays, and as lists where an item is null; the
/// column stays a list of numbers in Arrow (it became JSON text when the sample held both).
#[test]
fn list_columns_with_null_items_stay_lists() {
    use arrow_array::Array;
    use arrow_array::builder::{Float32Builder, ListBuilder};
    let tmp = tempfile::tempdir().unwrap();
    let mut lists = ListBuilder::new(Float32Builder::new());
    for row in [vec![Some(1.0), None], vec![Some(2.0), Some(3.0)], vec![None], vec![Some(4.5)]] {
        lists.values().extend(row);
        lists.append(true);
    }
    let batch = RecordBatch::try_from_iter([("v", Arc::new(lists.finish()) as ArrayRef)]).unwrap();
    let path = tmp.path().join("lists.parquet");
    parquet_file(&path, &batch, Compression::UNCOMPRESSED);
    let src = ArrowFileSource::open(&path, &ReadOptions::default()).unwrap();
    let reader = reel_arrow::SourceBatchReader::new(&src, &Default::default()).unwrap();
    let out: Vec<RecordBatch> = reader.map(|b| b.unwrap()).collect();
    let column = out[0].column(0);
    let list = column.as_any().downcast_ref::<arrow_array::ListArray>().unwrap();
    let values = list.values().as_any().downcast_ref::<arrow_array::Float64Array>().unwrap();
    let rows: Vec<Vec<Option<f64>>> = (0..list.len())
        .map(|r| {
            let range = list.value_offsets()[r] as usize..list.value_offsets()[r + 1] as usize;
            range.map(|k| values.is_valid(k).then(|| values.value(k))).collect()
        })
        .collect();
    assert_eq!(
        rows,
        [vec![Some(1.0), None], vec![Some(2.0), Some(3.0)], vec![None], vec![Some(4.5)]]
    );
}

/// A list-of-numbers column whose first null item comes after the sampled rows: the column
/// was typed from 1-D arrays, and the late row (a list, since an item is null) goes into it
/// with a null element, keeping the element type, where it was refused as a misfit.
#[test]
fn a_null_item_after_the_sample_goes_into_the_column_of_arrays() {
    use arrow_array::builder::{Float32Builder, Int64Builder, ListBuilder};
    use arrow_schema::DataType;
    let tmp = tempfile::tempdir().unwrap();
    let n = 2000i64;
    let late = |i: i64| i == 1500;
    let mut ints = ListBuilder::new(Int64Builder::new());
    let mut floats = ListBuilder::new(Float32Builder::new());
    for i in 0..n {
        ints.values().extend([Some(i), (!late(i)).then_some(-i)]);
        ints.append(true);
        floats.values().extend([(!late(i)).then_some(i as f32 / 2.0), Some(0.25)]);
        floats.append(true);
    }
    let batch = RecordBatch::try_from_iter([
        ("i", Arc::new(ints.finish()) as ArrayRef),
        ("f", Arc::new(floats.finish()) as ArrayRef),
    ])
    .unwrap();
    let (schema, back) = reconvert(tmp.path(), &batch);
    let item_type = |k: usize| match schema.field(k).data_type() {
        DataType::List(item) => item.data_type().clone(),
        other => panic!("{other}"),
    };
    assert_eq!((item_type(0), item_type(1)), (DataType::Int64, DataType::Float32));
    // Read back as reel reads it: arrays where no item is null, lists where one is.
    let record = back.read(1500).unwrap();
    let items = |name: &str| -> Vec<String> {
        let value = record.get(name).unwrap();
        let list = value.as_list().unwrap_or_else(|| panic!("{name}: {value:?}"));
        list.iter().map(|v| format!("{v:?}")).collect()
    };
    assert_eq!(items("i"), ["1500", "null"]);
    assert_eq!(items("f"), ["null", "0.25"]);
    let record = back.read(1499).unwrap();
    assert_eq!(
        record.get("i").unwrap().as_array().unwrap().values::<i64>().unwrap().collect::<Vec<_>>(),
        [1499, -1499]
    );
    assert_eq!(back.len(), n as u64);
}

/// Writes `batches` (of one schema) as an Arrow IPC stream, as `pyarrow.ipc.new_stream`,
/// Polars' `write_ipc_stream` and Hugging Face `datasets` write them.
fn ipc_stream(path: &Path, batches: &[RecordBatch], codec: Option<arrow_ipc::CompressionType>) {
    let options =
        arrow_ipc::writer::IpcWriteOptions::default().try_with_compression(codec).unwrap();
    let mut w = arrow_ipc::writer::StreamWriter::try_new_with_options(
        std::fs::File::create(path).unwrap(),
        &batches[0].schema(),
        options,
    )
    .unwrap();
    for b in batches {
        w.write(b).unwrap();
    }
    w.finish().unwrap();
}

/// An IPC stream (no footer: its messages are walked at open) reads as the IPC file of the
/// same batches, compressed or not, with a dictionary column, and with or without the
/// end-of-stream marker; a stream cut inside a message or with garbage between messages
/// is a `Corrupt` error naming the byte, never a panic.
#[test]
fn ipc_streams_read_as_ipc_files() {
    use arrow_array::DictionaryArray;
    use arrow_array::types::Int32Type;
    use reel_core::ErrorKind;
    let tmp = tempfile::tempdir().unwrap();
    let sample = sample_batch();
    let pieces = [sample.slice(0, 100), sample.slice(100, 0), sample.slice(100, 200)];
    for codec in [None, Some(arrow_ipc::CompressionType::LZ4_FRAME)] {
        let path = tmp.path().join(format!("stream-{codec:?}.arrows"));
        ipc_stream(&path, &pieces, codec);
        assert_eq!(reel_arrow::sniff(&path), Some(reel_arrow::FileKind::ArrowIpc));
        let src = ArrowFileSource::open(&path, &ReadOptions::default()).unwrap();
        check_sample(&src, &format!("stream {codec:?}"));
        let batches = src.info().facts.iter().find(|(k, _)| k == "record batches").unwrap();
        assert_eq!(batches.1, "3");
        reel_core::testing::conformance::check_source(&src);
    }

    // Dictionary-encoded text, as Hugging Face's class labels and polars' categoricals.
    let labels: DictionaryArray<Int32Type> =
        (0..50).map(|i| ["cat", "dog", "bird"][i % 3]).collect();
    let batch = RecordBatch::try_from_iter([("label", Arc::new(labels) as ArrayRef)]).unwrap();
    let path = tmp.path().join("dict.arrows");
    ipc_stream(&path, &[batch.slice(0, 25), batch.slice(25, 25)], None);
    let src = ArrowFileSource::open(&path, &ReadOptions::default()).unwrap();
    assert_eq!(src.len(), 50);
    assert_eq!(src.read(49).unwrap().get("label").unwrap().as_str(), Some("dog"));

    // Without its end-of-stream marker (8 bytes: the marker and a zero length).
    let full = std::fs::read(tmp.path().join("stream-None.arrows")).unwrap();
    assert_eq!(full[full.len() - 8..], [0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0]);
    let open_bytes = |name: &str, bytes: &[u8]| {
        let path = tmp.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        ArrowFileSource::open(&path, &ReadOptions::default())
    };
    check_sample(&open_bytes("no-eos.arrows", &full[..full.len() - 8]).unwrap(), "no marker");
    // Cut anywhere inside a message, or with bytes that are no message between two.
    for cut in [full.len() - 9, full.len() / 2, 20, 9] {
        let e = open_bytes("cut.arrows", &full[..cut]).err().expect("a cut stream");
        assert_eq!(e.kind(), ErrorKind::Corrupt, "cut at {cut}: {e}");
        assert!(e.to_string().contains("the message at byte"), "{e}");
    }
    let mut garbage = full[..full.len() - 8].to_vec();
    garbage.extend_from_slice(b"not a message at all");
    let e = open_bytes("garbage.arrows", &garbage).err().expect("garbage after the batches");
    assert_eq!(e.kind(), ErrorKind::Corrupt, "{e}");
    assert!(e.to_string().contains("0xFFFFFFFF"), "{e}");
}

/// A dictionary cell whose key points at a null value (IPC allows one) is a null cell, so
/// the record lacks the field, as for a null key.
#[test]
fn a_null_dictionary_value_is_a_null_cell() {
    use arrow_array::{DictionaryArray, Int32Array};
    let tmp = tempfile::tempdir().unwrap();
    let values: ArrayRef = Arc::new(StringArray::from(vec![Some("u"), None]));
    let keys = Int32Array::from(vec![Some(0), Some(1), None]);
    let d = DictionaryArray::try_new(keys, values).unwrap();
    let batch = RecordBatch::try_from_iter([("d", Arc::new(d) as ArrayRef)]).unwrap();
    let path = tmp.path().join("dict.arrow");
    ipc_file(&path, &batch, None);
    let src = ArrowFileSource::open(&path, &ReadOptions::default()).unwrap();
    assert_eq!(src.read(0).unwrap().get("d").unwrap().as_str(), Some("u"));
    assert!(src.read(1).unwrap().get("d").is_none());
    assert!(src.read(2).unwrap().get("d").is_none());
}
