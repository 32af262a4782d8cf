//! reel-arrow on records made here: schema inference and its errors, given schemas, extra
//! columns, Arrow types written by other tools and hostile files.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use arrow_array::builder::{Int32Builder, ListBuilder, StringDictionaryBuilder};
use arrow_array::types::Int32Type;
use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray, StructArray};
use arrow_schema::{DataType, Field};
use parquet::arrow::ArrowWriter;
use reel_arrow::{
    ArrowFileSource, ArrowOptions, ArrowSink, FileKind, ReadOptions, SourceBatchReader,
    WriteOptions, write_parquet,
};
use reel_core::{
    DType, ErrorKind, Record, RecordBatch as ReelBatch, RecordSink, RecordSource, RecordSourceExt,
    Result, SourceInfo, Value,
};

/// Records held in memory.
struct VecSource {
    info: SourceInfo,
    records: Vec<Record>,
}

impl VecSource {
    fn new(records: Vec<Record>) -> Self {
        VecSource { info: SourceInfo::new("memory"), records }
    }
}

impl RecordSource for VecSource {
    fn info(&self) -> &SourceInfo {
        &self.info
    }
    fn len(&self) -> u64 {
        self.records.len() as u64
    }
    fn read_into(&self, index: u64, out: &mut Record) -> Result<()> {
        let r = self
            .records
            .get(index as usize)
            .ok_or(reel_core::Error::out_of_range(index, self.len()))?;
        *out = r.clone();
        out.set_index(index);
        Ok(())
    }
    fn read_batch_into(&self, indices: &[u64], out: &mut ReelBatch) -> Result<()> {
        out.clear();
        for &i in indices {
            let mut r = self.read(i)?;
            r.set_index(i);
            out.push_copy(r.view());
        }
        Ok(())
    }
}

fn labelled(i: i64) -> Record {
    let mut r = Record::new();
    r.push_bytes("image", &[i as u8; 5]).push_int("label", i).push_str("caption", &format!("n{i}"));
    r.push_array("emb", DType::F32, &[3], &[0u8; 12]).unwrap();
    r.push_array("mask", DType::U8, &[2, 2], &[1, 0, 0, 1]).unwrap();
    r
}

#[test]
fn inferred_types_are_the_documented_ones_and_read_back() {
    let records: Vec<Record> = (0..50).map(labelled).collect();
    let source = VecSource::new(records.clone());
    let reader = SourceBatchReader::new(&source, &ArrowOptions::default()).unwrap();
    let schema = reader.schema();
    assert_eq!(schema.field_with_name("image").unwrap().data_type(), &DataType::Binary);
    assert_eq!(schema.field_with_name("label").unwrap().data_type(), &DataType::Int64);
    assert_eq!(schema.field_with_name("caption").unwrap().data_type(), &DataType::Utf8);
    assert!(
        matches!(schema.field_with_name("emb").unwrap().data_type(), DataType::List(f) if f.data_type() == &DataType::Float32)
    );
    let mask = schema.field_with_name("mask").unwrap();
    assert!(
        matches!(mask.data_type(), DataType::FixedSizeList(f, 4) if f.data_type() == &DataType::UInt8)
    );
    assert_eq!(mask.metadata()["ARROW:extension:name"], "arrow.fixed_shape_tensor");
    assert_eq!(mask.metadata()["ARROW:extension:metadata"], r#"{"shape":[2,2]}"#);

    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("x.parquet");
    write_parquet(&source, &path, &WriteOptions::default()).unwrap();
    let back = ArrowFileSource::open(&path, &ReadOptions::default()).unwrap();
    for (i, want) in records.iter().enumerate() {
        assert_eq!(back.read(i as u64).unwrap(), *want, "#{i}");
    }
    // Random order, across windows.
    let back = ArrowFileSource::open(&path, &ReadOptions { window_rows: 7, ..Default::default() })
        .unwrap();
    let order = [49u64, 0, 20, 21, 3, 48, 7];
    let batch = back.read_batch(&order).unwrap();
    for (r, &i) in batch.iter().zip(&order) {
        assert_eq!(r, records[i as usize].view(), "#{i}");
    }
    // A projection, in the order asked.
    let cols =
        ReadOptions { columns: Some(vec!["label".into(), "image".into()]), ..Default::default() };
    let back = ArrowFileSource::open(&path, &cols).unwrap();
    let r = back.read(9).unwrap();
    assert_eq!(r.iter().map(|(n, _)| n).collect::<Vec<_>>(), ["label", "image"]);
    let err = ArrowFileSource::open(
        &path,
        &ReadOptions { columns: Some(vec!["nope".into()]), ..Default::default() },
    )
    .err()
    .unwrap();
    assert!(err.to_string().contains("\"nope\""), "{err}");
}

#[test]
fn a_record_that_does_not_fit_is_named_with_its_field() {
    let mut records: Vec<Record> = (0..10).map(labelled).collect();
    records[7] = labelled(7);
    records[7].clear();
    records[7].push_str("label", "seven");
    let options = ArrowOptions { sample_records: 3, ..Default::default() };
    let source = VecSource::new(records.clone());
    let mut reader = SourceBatchReader::new(&source, &options).unwrap();
    let err = reader.next_batch().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Schema);
    assert_eq!(err.record(), Some(7));
    assert!(err.to_string().contains("\"label\""), "{err}");

    // A field no sampled record had.
    records[7] = labelled(7).with_int("extra", 1);
    let source = VecSource::new(records.clone());
    let err = SourceBatchReader::new(&source, &options).unwrap().next_batch().unwrap_err();
    assert!(err.to_string().contains("record 7") && err.to_string().contains("\"extra\""), "{err}");
    // The record is said once, as the error's context.
    assert_eq!(err.to_string().matches("record 7").count(), 1, "{err}");

    // Nested: the path into the value is named.
    let nested = |v: i64| {
        let mut r = Record::new();
        let mut o = r.out();
        let k = o.append_str("w");
        let val = if v < 5 { Value::Int(v) } else { o.append_str("x") };
        o.push("meta".into(), Value::Map(vec![(k, val)]));
        r
    };
    let source = VecSource::new((0..8).map(nested).collect());
    let err = SourceBatchReader::new(&source, &options).unwrap().next_batch().unwrap_err();
    assert!(err.to_string().contains("record 5") && err.to_string().contains("meta.w"), "{err}");

    // Sampling every record instead: the column falls back to JSON and everything fits.
    let all = ArrowOptions { sample_records: 100, ..Default::default() };
    let reader = SourceBatchReader::new(&source, &all).unwrap();
    let meta = reader.schema().field(0).clone();
    let DataType::Struct(children) = meta.data_type() else { panic!("{meta:?}") };
    assert_eq!(children[0].metadata()["reel.type"], "json");
    let rows: usize = reader.map(|b| b.unwrap().num_rows()).sum();
    assert_eq!(rows, 8);
}

#[test]
fn a_given_schema_is_used_and_a_sink_writes_ipc() {
    let records: Vec<Record> = (0..20).map(labelled).collect();
    let tmp = tempfile::tempdir().unwrap();
    let first = tmp.path().join("first.arrow");
    let mut sink =
        ArrowSink::create(&first, FileKind::ArrowIpc, None, &WriteOptions::default()).unwrap();
    for r in &records[..5] {
        sink.append(r.view()).unwrap();
    }
    assert!(!first.exists(), "published before finish");
    let summary = sink.finish().unwrap();
    assert_eq!(summary.records, 5);
    assert!(matches!(sink.append(records[0].view()), Err(e) if e.kind() == ErrorKind::Closed));

    // The first file's schema, given, writes records whose first ones alone would infer
    // other types (a null label).
    let mut odd = records.clone();
    odd[0] = labelled(0);
    odd[0].clear();
    let mut options = WriteOptions::default();
    options.arrow.schema = Some(reel_arrow::schema_of_file(&first).unwrap());
    options.arrow.sample_records = 1;
    options.arrow.extra.index = true;
    let second = tmp.path().join("second.parquet");
    let mut sink = ArrowSink::create(&second, FileKind::Parquet, None, &options).unwrap();
    for (i, r) in odd.iter().enumerate() {
        let mut r = r.clone();
        r.set_index(100 + i as u64);
        sink.append(r.view()).unwrap();
    }
    sink.finish().unwrap();
    let back = ArrowFileSource::open(&second, &ReadOptions::default()).unwrap();
    assert_eq!(back.read(0).unwrap().iter().map(|(n, _)| n).collect::<Vec<_>>(), ["_index"]);
    let r = back.read(3).unwrap();
    assert_eq!(r.get("_index").unwrap().as_i64(), Some(103));
    assert_eq!(r.get("caption").unwrap().as_str(), Some("n3"));
}

#[test]
fn a_failed_write_leaves_no_file() {
    let mut records: Vec<Record> = (0..10).map(labelled).collect();
    records[9].push_int("late", 1);
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("x.parquet");
    let mut options = WriteOptions::default();
    options.arrow.sample_records = 2;
    let err = write_parquet(&VecSource::new(records), &path, &options).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Schema);
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0, "leftovers");
}

/// Columns as pyarrow and other tools write them: dictionary-encoded text, nullable
/// integers, nested structs and lists.
#[test]
fn other_tools_arrow_types_read_as_records() {
    let mut dict = StringDictionaryBuilder::<Int32Type>::new();
    for s in ["cat", "dog", "cat"] {
        dict.append_value(s);
    }
    let mut lists = ListBuilder::new(Int32Builder::new());
    lists.values().append_value(1);
    lists.values().append_null();
    lists.append(true);
    lists.append(false);
    lists.values().append_value(7);
    lists.append(true);
    let ints = Int64Array::from(vec![Some(1), None, Some(3)]);
    let inner = StructArray::from(vec![(
        Arc::new(Field::new("s", DataType::Utf8, true)),
        Arc::new(StringArray::from(vec![Some("a"), None, Some("c")])) as ArrayRef,
    )]);
    let columns: Vec<(&str, ArrayRef)> = vec![
        ("kind", Arc::new(dict.finish())),
        ("n", Arc::new(ints)),
        ("l", Arc::new(lists.finish())),
        ("st", Arc::new(inner)),
    ];
    let batch = RecordBatch::try_from_iter(columns).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("tools.parquet");
    let mut w =
        ArrowWriter::try_new(std::fs::File::create(&path).unwrap(), batch.schema(), None).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();

    let src = ArrowFileSource::open(&path, &ReadOptions::default()).unwrap();
    let r0 = src.read(0).unwrap();
    assert_eq!(r0.get("kind").unwrap().as_str(), Some("cat"));
    assert_eq!(r0.get("n").unwrap().as_i64(), Some(1));
    // A list with a null item reads as a list; one without as a 1-D array.
    let l0 = r0.get("l").unwrap().as_list().unwrap();
    assert_eq!(l0.len(), 2);
    assert!(matches!(l0.get(1), Some(reel_core::ValueRef::Null)));
    let r1 = src.read(1).unwrap();
    assert!(r1.get("n").is_none() && r1.get("l").is_none(), "null cells are absent fields");
    assert_eq!(
        src.read(2).unwrap().get("l").unwrap().as_array().unwrap().to_i32_vec(),
        Some(vec![7])
    );
    let st = r1.get("st").unwrap().as_map().unwrap();
    assert!(matches!(st.get("s"), Some(reel_core::ValueRef::Null)));
    assert_eq!(src.read(2).unwrap().get("kind").unwrap().as_str(), Some("cat"));

    // A type reel has no value for is refused naming the column.
    let dec =
        arrow_array::Decimal128Array::from(vec![1i128]).with_precision_and_scale(10, 2).unwrap();
    let batch = RecordBatch::try_from_iter(vec![("price", Arc::new(dec) as ArrayRef)]).unwrap();
    let path = tmp.path().join("decimal.parquet");
    let mut w =
        ArrowWriter::try_new(std::fs::File::create(&path).unwrap(), batch.schema(), None).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
    let err = ArrowFileSource::open(&path, &ReadOptions::default()).err().unwrap();
    assert_eq!(err.kind(), ErrorKind::Unsupported);
    assert!(err.to_string().contains("\"price\""), "{err}");
}

/// Every prefix and a byte flip of a small Parquet and IPC file: an error or records,
/// never a panic.
#[test]
fn damaged_files_are_errors() {
    let records: Vec<Record> = (0..30).map(labelled).collect();
    let tmp = tempfile::tempdir().unwrap();
    for kind in [FileKind::Parquet, FileKind::ArrowIpc] {
        let path = tmp.path().join("good");
        reel_arrow::write_file(
            &VecSource::new(records.clone()),
            &path,
            kind,
            &WriteOptions::default(),
            &mut |_, _| {},
        )
        .unwrap();
        let bytes = std::fs::read(&path).unwrap();
        let cut = tmp.path().join("cut");
        let step = (bytes.len() / 97).max(1);
        let mut lengths: Vec<usize> = (0..bytes.len()).step_by(step).collect();
        lengths.extend(bytes.len().saturating_sub(16)..bytes.len());
        for len in lengths {
            std::fs::write(&cut, &bytes[..len]).unwrap();
            if let Ok(src) = ArrowFileSource::open_as(&cut, kind, &ReadOptions::default()) {
                for i in 0..src.len().min(40) {
                    let _ = src.read(i);
                }
            }
        }
        for at in (0..bytes.len()).step_by(step) {
            let mut damaged = bytes.clone();
            damaged[at] ^= 0x5a;
            std::fs::write(&cut, &damaged).unwrap();
            if let Ok(src) = ArrowFileSource::open_as(&cut, kind, &ReadOptions::default()) {
                for i in 0..src.len().min(40) {
                    let _ = src.read(i);
                }
            }
        }
    }
}

/// Parquet files of many row groups and IPC files of many batches pass the core conformance
/// checks (batches of every size, reversed, with repeats, shuffled, borrowed, and four
/// threads sharing the source), mapped and read, windows smaller than row groups included,
/// and every record reads as it was written.
#[test]
fn parquet_and_ipc_sources_pass_the_conformance_checks() {
    let records: Vec<Record> = (0..150).map(labelled).collect();
    let source = VecSource::new(records.clone());
    let dir = tempfile::tempdir().unwrap();
    let write = WriteOptions {
        arrow: ArrowOptions { batch_rows: 16, ..Default::default() },
        row_group_rows: 16,
        ..Default::default()
    };
    let parquet = dir.path().join("t.parquet");
    let ipc = dir.path().join("t.arrow");
    write_parquet(&source, &parquet, &write).unwrap();
    reel_arrow::write_ipc(&source, &ipc, &write).unwrap();
    for (path, map, window_rows) in
        [(&parquet, false, 1024), (&parquet, false, 5), (&ipc, true, 1024), (&ipc, false, 1024)]
    {
        let label = format!("{} map={map} window_rows={window_rows}", path.display());
        let options = ReadOptions { map, window_rows, ..Default::default() };
        let back = ArrowFileSource::open(path, &options).unwrap();
        let outcomes = reel_core::testing::conformance::check_source(&back);
        assert_eq!(outcomes.len(), records.len(), "{label}");
        for (i, (got, want)) in outcomes.iter().zip(&records).enumerate() {
            assert_eq!(got.as_ref().unwrap(), want, "{label}: record {i}");
        }
    }
}

/// A column nested as deep as Parquet and IPC readers accept is written and reads back; one
/// level deeper is refused before anything is written, naming the column, in both kinds.
#[test]
fn columns_nested_deeper_than_readers_accept_are_refused() {
    fn nested(depth: usize) -> Record {
        let mut value = Value::Int(7);
        for _ in 0..depth {
            value = Value::List(vec![value]);
        }
        let mut r = Record::new();
        r.out().push("deep".into(), value);
        r
    }
    let dir = tempfile::tempdir().unwrap();
    for (kind, ext) in [(FileKind::Parquet, "parquet"), (FileKind::ArrowIpc, "arrow")] {
        let deepest = VecSource::new(vec![nested(reel_arrow::MAX_COLUMN_NESTING)]);
        let ok = dir.path().join(format!("ok.{ext}"));
        reel_arrow::write_file(&deepest, &ok, kind, &WriteOptions::default(), &mut |_, _| {})
            .unwrap();
        let back = ArrowFileSource::open(&ok, &ReadOptions::default()).unwrap();
        assert_eq!(back.read(0).unwrap(), deepest.records[0], "{ext}");

        let deeper = VecSource::new(vec![nested(reel_arrow::MAX_COLUMN_NESTING + 1)]);
        let bad = dir.path().join(format!("bad.{ext}"));
        let e =
            reel_arrow::write_file(&deeper, &bad, kind, &WriteOptions::default(), &mut |_, _| {})
                .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Schema, "{e}");
        assert!(e.to_string().contains("\"deep\"") && e.to_string().contains("61 deep"), "{e}");
        assert!(!bad.exists(), "{ext}: a refused file was left behind");
    }
}

#[test]
fn ranges_index_lists_and_column_selections() {
    let records: Vec<Record> = (0..40).map(labelled).collect();
    let source = VecSource::new(records.clone());
    let labels = |batches: Vec<RecordBatch>, col: &str| -> Vec<i64> {
        batches
            .iter()
            .flat_map(|b| {
                let a = b.column_by_name(col).unwrap();
                let a = a.as_any().downcast_ref::<Int64Array>().unwrap();
                a.values().to_vec()
            })
            .collect()
    };
    let small = ArrowOptions { batch_rows: 4, ..Default::default() };
    let range = SourceBatchReader::with_range(&source, 10..21, &small).unwrap();
    let got: Vec<RecordBatch> = range.map(|b| b.unwrap()).collect();
    assert_eq!(got.len(), 3);
    assert_eq!(labels(got, "label"), (10..21).collect::<Vec<i64>>());

    // An index list, in its order with repeats; `_index` names the source's records.
    let opts = ArrowOptions {
        columns: Some(vec!["label".into(), "caption".into()]),
        extra: reel_arrow::ExtraColumns { index: true, location: false },
        ..small.clone()
    };
    let order = vec![39u64, 2, 2, 17, 0];
    let reader = SourceBatchReader::with_indices(&source, order.clone(), &opts).unwrap();
    let names: Vec<String> = reader.schema().fields().iter().map(|f| f.name().clone()).collect();
    assert_eq!(names, ["label", "caption", "_index"]);
    let got: Vec<RecordBatch> = reader.map(|b| b.unwrap()).collect();
    assert_eq!(labels(got.clone(), "label"), [39, 2, 2, 17, 0]);
    let index: Vec<u64> = got
        .iter()
        .flat_map(|b| {
            let a = b.column_by_name("_index").unwrap();
            a.as_any().downcast_ref::<arrow_array::UInt64Array>().unwrap().values().to_vec()
        })
        .collect();
    assert_eq!(index, order);

    // Out of range and unknown columns are refused up front.
    let err = SourceBatchReader::with_indices(&source, vec![3, 40], &small).err().unwrap();
    assert_eq!(err.kind(), ErrorKind::OutOfRange);
    assert!(SourceBatchReader::with_range(&source, 30..41, &small).is_err());
    let bad = ArrowOptions { columns: Some(vec!["nope".into()]), ..Default::default() };
    let err = SourceBatchReader::new(&source, &bad).err().unwrap();
    assert!(err.to_string().contains("\"nope\"") && err.to_string().contains("label"), "{err}");
}

#[test]
fn a_tensor_with_a_zero_dimension_makes_a_batch_of_the_right_length() {
    let mut r = Record::new();
    r.push_array("arr", DType::F64, &[0, 3, 1], &[]).unwrap();
    r.push_int("label", 1);
    let source = VecSource::new(vec![r.clone(), r.clone(), r]);
    let reader = SourceBatchReader::new(&source, &ArrowOptions::default()).unwrap();
    let batches: Vec<RecordBatch> = reader.map(|b| b.unwrap()).collect();
    assert_eq!(batches.iter().map(|b| b.num_rows()).sum::<usize>(), 3);
    assert!(matches!(batches[0].schema().field(0).data_type(), DataType::FixedSizeList(_, 0)));
}

#[test]
fn a_given_schema_with_large_offsets_is_written_with_them() {
    let source = VecSource::new((0..4).map(labelled).collect());
    let schema = Arc::new(arrow_schema::Schema::new(vec![
        Field::new("caption", DataType::LargeUtf8, true),
        Field::new("image", DataType::LargeBinary, true),
    ]));
    let opts = ArrowOptions {
        schema: Some(schema.clone()),
        columns: Some(vec!["caption".into(), "image".into()]),
        ..Default::default()
    };
    let reader = SourceBatchReader::new(&source, &opts).unwrap();
    assert_eq!(reader.schema(), schema);
    let rows: usize = reader.map(|b| b.unwrap().num_rows()).sum();
    assert_eq!(rows, 4);
}

/// The schema a sink writes for `options`, fed `records`.
fn sink_schema(records: &[Record], options: &ArrowOptions) -> arrow_schema::SchemaRef {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("s.arrow");
    let write = WriteOptions { arrow: options.clone(), ..Default::default() };
    let mut sink = ArrowSink::create(&path, FileKind::ArrowIpc, None, &write).unwrap();
    for r in records {
        sink.append(r.view()).unwrap();
    }
    sink.finish().unwrap();
    reel_arrow::schema_of_file(&path).unwrap()
}

/// A conversion (through the sink) writes the schema the batch reader gives for the same
/// options: a given schema's 64-bit offsets, a column selection, an inferred schema.
#[test]
fn the_sink_and_the_batch_reader_agree_on_the_schema() {
    let records: Vec<Record> = (0..6).map(labelled).collect();
    let source = VecSource::new(records.clone());
    let large = Arc::new(arrow_schema::Schema::new(vec![
        Field::new("caption", DataType::LargeUtf8, true),
        Field::new("label", DataType::Int64, true),
    ]));
    let cases = [
        ArrowOptions { columns: Some(vec!["label".into()]), ..Default::default() },
        ArrowOptions {
            schema: Some(large),
            columns: Some(vec!["label".into(), "caption".into()]),
            ..Default::default()
        },
        ArrowOptions::default(),
    ];
    for options in cases {
        let expected = SourceBatchReader::new(&source, &options).unwrap().schema();
        let written = sink_schema(&records, &options);
        let fields = |s: &arrow_schema::SchemaRef| -> Vec<(String, DataType)> {
            s.fields().iter().map(|f| (f.name().clone(), f.data_type().clone())).collect()
        };
        assert_eq!(fields(&written), fields(&expected), "{options:?}");
    }
    let only_label = ArrowOptions { columns: Some(vec!["label".into()]), ..Default::default() };
    let written = sink_schema(&records, &only_label);
    assert_eq!(written.fields().len(), 1);
    let given = ArrowOptions {
        schema: Some(Arc::new(arrow_schema::Schema::new(vec![Field::new(
            "caption",
            DataType::LargeUtf8,
            true,
        )]))),
        columns: Some(vec!["caption".into()]),
        ..Default::default()
    };
    assert_eq!(sink_schema(&records, &given).field(0).data_type(), &DataType::LargeUtf8);
}

/// A column of values with no common Arrow type is tagged JSON text in reel's one convention
/// (`reel_core::tagged_json`, shared with the JSON payloads): base64 bytes, `$array` with a
/// numpy dtype string. What another tool wrote in it reads back too, big-endian arrays
/// (numpy's `>i4`) swapped into reel's little-endian values.
#[test]
fn mixed_values_are_tagged_json_and_big_endian_arrays_read_back() {
    let records: Vec<Record> = (0..4)
        .map(|i| {
            let mut r = Record::new();
            match i {
                0 => r.push_bytes("v", &[0, 255, 7]),
                1 => r.push_array("v", DType::I16, &[2], &[1, 0, 2, 0]).unwrap(),
                2 => r.push_float("v", f64::NAN),
                _ => r.push_str("v", "text"),
            };
            r
        })
        .collect();
    let source = VecSource::new(records.clone());
    let reader = SourceBatchReader::new(&source, &ArrowOptions::default()).unwrap();
    let field = reader.schema().field(0).clone();
    assert_eq!(field.metadata()["reel.type"], "json");
    let batches: Vec<RecordBatch> = reader.map(|b| b.unwrap()).collect();
    let text = batches[0].column(0).as_any().downcast_ref::<StringArray>().unwrap();
    assert_eq!(text.value(0), r#"{"$bytes":"AP8H"}"#);
    assert_eq!(text.value(1), r#"{"$array":{"dtype":"<i2","shape":[2],"data":"AQACAA=="}}"#);
    assert_eq!(text.value(2), r#"{"$float":"nan"}"#);
    assert_eq!(text.value(3), r#""text""#);

    // Written by another tool: numpy's np.array([1, -2], dtype=">i4"), base64-encoded.
    let column = StringArray::from(vec![
        r#"{"$array": {"dtype": ">i4", "shape": [2], "data": "AAAAAf////4="}}"#,
        r#"{"$array": {"dtype": "<i4", "shape": [2], "data": "AQAAAP7///8="}}"#,
        r#"{"$bytes": "AP8H"}"#,
    ]);
    let field = Field::new("v", DataType::Utf8, true).with_metadata(
        [("reel.type".to_string(), "json".to_string())]
            .into_iter()
            .collect::<std::collections::HashMap<_, _>>(),
    );
    let schema = Arc::new(arrow_schema::Schema::new(vec![field]));
    let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(column) as ArrayRef]).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("tagged.parquet");
    let mut w = ArrowWriter::try_new(std::fs::File::create(&path).unwrap(), schema, None).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
    let src = ArrowFileSource::open(&path, &ReadOptions::default()).unwrap();
    for i in 0..2 {
        let r = src.read(i).unwrap();
        let a = r.get("v").unwrap().as_array().unwrap();
        assert_eq!(a.dtype, DType::I32);
        assert_eq!(a.to_i32_vec(), Some(vec![1, -2]), "row {i}");
    }
    assert_eq!(src.read(2).unwrap().get("v").unwrap().as_bytes(), Some(&[0u8, 255, 7][..]));
}

/// Integers beyond int64 beside negative ones have no Arrow integer type: they are tagged
/// JSON text, which Parquet and IPC write and read back as the same integers.
#[test]
fn integers_beyond_int64_beside_negative_ones_round_trip() {
    let big = (1u64 << 63) + 5;
    let mut a = Record::new();
    a.push_value("v", reel_core::ValueRef::UInt(big));
    let b = Record::new().with_int("v", -1);
    let tmp = tempfile::tempdir().unwrap();
    for kind in [FileKind::Parquet, FileKind::ArrowIpc] {
        let path = tmp.path().join("ints");
        let source = VecSource::new(vec![a.clone(), b.clone()]);
        reel_arrow::write_file(&source, &path, kind, &WriteOptions::default(), &mut |_, _| {})
            .unwrap_or_else(|e| panic!("{kind:?}: {e}"));
        let back = ArrowFileSource::open(&path, &ReadOptions::default()).unwrap();
        assert_eq!(back.read(0).unwrap().get("v").unwrap().as_u64(), Some(big), "{kind:?}");
        assert_eq!(back.read(1).unwrap().get("v").unwrap().as_i64(), Some(-1), "{kind:?}");
    }
}

/// Maps that are all empty (which Parquet cannot write as a struct without children) are
/// written as tagged JSON and read back as empty maps, at the top and nested.
#[test]
fn empty_maps_round_trip() {
    let record = || {
        let mut r = Record::new();
        let mut o = r.out();
        let inner = o.append_str("inner");
        o.push("m".into(), Value::Map(Vec::new()));
        o.push("n".into(), Value::Map(vec![(inner, Value::Map(Vec::new()))]));
        r
    };
    let tmp = tempfile::tempdir().unwrap();
    for kind in [FileKind::Parquet, FileKind::ArrowIpc] {
        let path = tmp.path().join("maps");
        let source = VecSource::new(vec![record(), record()]);
        reel_arrow::write_file(&source, &path, kind, &WriteOptions::default(), &mut |_, _| {})
            .unwrap_or_else(|e| panic!("{kind:?}: {e}"));
        let back = ArrowFileSource::open(&path, &ReadOptions::default()).unwrap().read(1).unwrap();
        assert_eq!(back.get("m").unwrap().as_map().unwrap().len(), 0, "{kind:?}");
        let n = back.get("n").unwrap().as_map().unwrap();
        assert_eq!(n.get("inner").unwrap().as_map().unwrap().len(), 0, "{kind:?}");
    }
}

/// A given schema with fewer columns than the records have fields reads those columns,
/// leaving the other fields out, as a column selection does. Writing, the schema names the
/// columns instead: a field it lacks is refused, naming it (a stale schema file must not
/// drop a newer field unsaid).
#[test]
fn a_given_schema_with_fewer_columns_selects_them() {
    let records: Vec<Record> = (0..5).map(labelled).collect();
    let schema = Arc::new(arrow_schema::Schema::new(vec![
        Field::new("label", DataType::Int64, true),
        Field::new("caption", DataType::Utf8, true),
    ]));
    let options = ArrowOptions { schema: Some(schema.clone()), ..Default::default() };
    let source = VecSource::new(records);
    let reader = SourceBatchReader::new(&source, &options).unwrap();
    let batches: Vec<RecordBatch> = reader.map(|b| b.unwrap()).collect();
    assert_eq!(batches[0].schema().fields().len(), 2);
    assert_eq!(batches.iter().map(|b| b.num_rows()).sum::<usize>(), 5);
    let labels = batches[0].column(0).as_any().downcast_ref::<Int64Array>().unwrap();
    assert_eq!(labels.value(4), 4);

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("stale.parquet");
    let write = WriteOptions { arrow: options, ..Default::default() };
    let mut sink = ArrowSink::create(&path, FileKind::Parquet, None, &write).unwrap();
    let err = sink.append(&labelled(0)).and_then(|_| sink.finish().map(|_| 0)).unwrap_err();
    assert_eq!(err.kind(), reel_core::ErrorKind::Schema);
    assert!(err.to_string().contains("\"image\"") && err.to_string().contains("given"), "{err}");
    assert!(!path.exists());
    // So does writing a whole source to a file.
    let err = reel_arrow::write_parquet(&source, &path, &write).unwrap_err();
    assert_eq!(err.kind(), reel_core::ErrorKind::Schema);
    assert!(err.to_string().contains("\"image\""), "{err}");
    assert!(!path.exists());
}

/// Records for the cast tests: integers, floats, millisecond times, text and float32
/// arrays; record `i` holds `i` in each.
fn typed(i: i64) -> Record {
    let mut r = Record::new();
    r.push_int("label", i)
        .push_float("score", i as f64 / 4.0)
        .push_int("when", 1_700_000_000_000 + i)
        .push_str("tag", if i % 2 == 0 { "even" } else { "odd" })
        .push_int("small", i);
    let emb: Vec<u8> = [i as f32, 1.5].iter().flat_map(|f| f.to_le_bytes()).collect();
    r.push_array("emb", DType::F32, &[2], &emb).unwrap();
    r
}

fn typed_schema() -> arrow_schema::SchemaRef {
    use arrow_schema::{Schema, TimeUnit};
    let item = Arc::new(Field::new("item", DataType::Float32, true));
    Arc::new(Schema::new(vec![
        Field::new("label", DataType::Int32, true),
        Field::new("score", DataType::Float32, true),
        Field::new("when", DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into())), true),
        Field::new(
            "tag",
            DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8)),
            true,
        ),
        Field::new("emb", DataType::LargeList(item), true),
        Field::new("small", DataType::UInt8, true),
    ]))
}

/// A given schema may use Arrow types reel does not build: int32, float32, timestamp,
/// dictionary<utf8>, large_list, uint8 columns are built from reel's values and cast, so
/// the batches have exactly the types asked for, and read back as the same values; the
/// file's own schema given again (`--schema-from` it) writes the same types.
#[test]
fn given_types_reel_does_not_build_are_cast() {
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Float32Type, TimestampMillisecondType, UInt8Type};
    let records: Vec<Record> = (0..10).map(typed).collect();
    let schema = typed_schema();
    let options = ArrowOptions { schema: Some(schema.clone()), ..Default::default() };
    let mut reader = SourceBatchReader::new(VecSource::new(records.clone()), &options).unwrap();
    let batch = reader.next_batch().unwrap().unwrap();
    for (got, want) in batch.schema().fields().iter().zip(schema.fields()) {
        assert_eq!(got.data_type(), want.data_type(), "{}", want.name());
    }
    assert_eq!(batch.column(0).as_primitive::<Int32Type>().value(3), 3);
    assert_eq!(batch.column(1).as_primitive::<Float32Type>().value(3), 0.75);
    let when = batch.column(2).as_primitive::<TimestampMillisecondType>();
    assert_eq!(when.value(3), 1_700_000_000_003);
    let tags = batch.column(3).as_dictionary::<Int32Type>();
    assert_eq!(tags.values().len(), 2, "text not dictionary-encoded");
    let emb = batch.column(4).as_list::<i64>();
    assert_eq!(emb.value(3).as_primitive::<Float32Type>().values(), &[3.0, 1.5]);
    assert_eq!(batch.column(5).as_primitive::<UInt8Type>().value(9), 9);

    let tmp = tempfile::tempdir().unwrap();
    let first = tmp.path().join("typed.parquet");
    let mut write = WriteOptions::default();
    write.arrow.schema = Some(schema.clone());
    write_parquet(&VecSource::new(records.clone()), &first, &write).unwrap();
    let back = ArrowFileSource::open(&first, &ReadOptions::default()).unwrap();
    let r = back.read(5).unwrap();
    assert_eq!(r.get("label").unwrap().as_i64(), Some(5));
    assert_eq!(r.get("score").unwrap().as_f64(), Some(1.25));
    assert_eq!(r.get("when").unwrap().as_i64(), Some(1_700_000_000_005));
    assert_eq!(r.get("tag").unwrap().as_str(), Some("odd"));
    assert_eq!(r.get("emb").unwrap().as_array().unwrap().to_vec::<f32>().unwrap(), [5.0, 1.5]);
    assert_eq!(r.get("small").unwrap().as_i64(), Some(5));
    // The file's own schema, given again for its records, writes the same types.
    write.arrow.schema = Some(reel_arrow::schema_of_file(&first).unwrap());
    let second = tmp.path().join("again.arrow");
    reel_arrow::write_ipc(&back, &second, &write).unwrap();
    let again = reel_arrow::schema_of_file(&second).unwrap();
    let first_schema = reel_arrow::schema_of_file(&first).unwrap();
    for (a, b) in again.fields().iter().zip(first_schema.fields()) {
        assert_eq!(a.data_type(), b.data_type(), "{}", a.name());
    }
    assert_eq!(ArrowFileSource::open(&second, &ReadOptions::default()).unwrap().len(), 10);
}

/// A value the given type cannot hold is an error naming the field and the record, never
/// wrapped, clamped or made null: an integer beyond int32, a negative one for uint8, a
/// float beyond float32's range. A type reel has no value for is refused naming the field.
#[test]
fn values_a_given_type_cannot_hold_are_refused_naming_field_and_record() {
    type Spoil = fn(&mut Record);
    let cases: [(&str, Spoil); 3] = [
        ("label", |r| {
            r.push_int("label", 1 << 40);
        }),
        ("small", |r| {
            r.push_int("small", -1);
        }),
        ("score", |r| {
            r.push_float("score", 1e300);
        }),
    ];
    for (field, spoil) in cases {
        let mut records: Vec<Record> = (0..10).map(typed).collect();
        let mut bad = Record::new();
        for (name, value) in records[7].iter() {
            if name != field {
                bad.push_value(name, value);
            }
        }
        spoil(&mut bad);
        records[7] = bad;
        let options = ArrowOptions { schema: Some(typed_schema()), ..Default::default() };
        let mut reader = SourceBatchReader::new(VecSource::new(records), &options).unwrap();
        let err = reader.next_batch().unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Schema, "{field}: {err}");
        assert_eq!(err.record(), Some(7), "{field}: {err}");
        assert!(err.to_string().contains(&format!("{field:?}")), "{field}: {err}");
    }

    let decimal =
        arrow_schema::Schema::new(vec![Field::new("price", DataType::Decimal128(10, 2), true)]);
    let options = ArrowOptions { schema: Some(Arc::new(decimal)), ..Default::default() };
    let err = SourceBatchReader::new(VecSource::new(vec![typed(0)]), &options).err().unwrap();
    assert_eq!(err.kind(), ErrorKind::Schema, "{err}");
    assert!(err.to_string().contains("\"price\""), "{err}");
}
