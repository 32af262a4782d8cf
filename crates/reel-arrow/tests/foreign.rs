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
        let src = ArrowFileSource::open(&path, &ReadOptions::default())
            .unwrap_or_else(|e| panic!("ipc {name}: {e}"));
        check_sample(&src, &format!("ipc {name}"));
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
    // The identity permutation is no permutation.
    let path = tensor_file(r#"{"shape":[2,3],"permutation":[0,1]}"#);
    let src = ArrowFileSource::open(&path, &ReadOptions::default()).unwrap();
    assert_eq!(src.read(0).unwrap().get("t").unwrap().as_array().unwrap().shape, &[2, 3]);
}
