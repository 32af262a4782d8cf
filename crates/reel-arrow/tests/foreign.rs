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
    let options = arrow_ipc::writer::IpcWriteOptions::default().try_with_compression(codec).unwrap();
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
