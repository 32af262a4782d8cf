//! `reel::convert::convert_batches`: Arrow record batches handed over in memory (what
//! Python's `reel.write_arrow` passes from a pyarrow table) written to reel formats under
//! the rules of a Parquet source, read once, with refusals naming the column or field and
//! nothing left behind by a failed write.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use reel::arrow::arrow_array::{
    ArrayRef, BinaryArray, Decimal128Array, Int64Array, RecordBatch, RecordBatchIterator,
    StringArray,
};
use reel::arrow::arrow_schema::{ArrowError, DataType, Field, Schema};
use reel::convert::convert_batches;
use reel::{ConvertOptions, ErrorKind, Format, RecordSourceExt, ValueRef};

fn schema() -> Arc<Schema> {
    Arc::new(Schema::new(vec![
        Field::new("image", DataType::Binary, false),
        Field::new("label", DataType::Int64, false),
        Field::new("caption", DataType::Utf8, false),
    ]))
}

/// Rows `range` as one batch.
fn batch(range: std::ops::Range<i64>) -> RecordBatch {
    let images: Vec<Vec<u8>> = range.clone().map(|i| vec![i as u8; i as usize % 7]).collect();
    let columns: Vec<ArrayRef> = vec![
        Arc::new(BinaryArray::from_iter_values(images.iter())),
        Arc::new(Int64Array::from_iter_values(range.clone())),
        Arc::new(StringArray::from_iter_values(range.map(|i| format!("n{i}")))),
    ];
    RecordBatch::try_new(schema(), columns).unwrap()
}

fn stream(
    batches: Vec<Result<RecordBatch, ArrowError>>,
) -> RecordBatchIterator<std::vec::IntoIter<Result<RecordBatch, ArrowError>>> {
    RecordBatchIterator::new(batches.into_iter(), schema())
}

#[test]
fn batches_convert_to_granular_and_read_back_in_order() {
    let tmp = tempfile::tempdir().unwrap();
    let dst = tmp.path().join("ds");
    // An empty batch and a batch larger than one conversion batch (64 records) included.
    let batches = vec![Ok(batch(0..0)), Ok(batch(0..100)), Ok(batch(100..103))];
    let report =
        convert_batches(stream(batches), &dst, &ConvertOptions::new(Format::Granular)).unwrap();
    assert_eq!((report.from, report.records), (Format::ArrowIpc, 103));
    let back = reel::open(&dst).unwrap();
    assert_eq!(back.len(), 103);
    for i in [0u64, 63, 64, 99, 100, 102] {
        let r = back.read(i).unwrap();
        assert_eq!(r.get("label").unwrap().as_i64(), Some(i as i64));
        assert_eq!(r.get("caption").unwrap().as_str(), Some(format!("n{i}").as_str()));
        assert_eq!(
            r.get("image").unwrap().as_bytes(),
            Some(vec![i as u8; i as usize % 7].as_slice())
        );
    }
}

#[test]
fn refusals_name_the_column_or_field_and_leave_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    // FFRecord holds one bytes field: the other columns are named.
    let dst = tmp.path().join("a.ffr");
    let err = convert_batches(
        stream(vec![Ok(batch(0..5))]),
        &dst,
        &ConvertOptions::new(Format::Ffrecord),
    )
    .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Schema, "{err}");
    assert!(err.to_string().contains("label") || err.to_string().contains("caption"), "{err}");
    assert!(!dst.exists());

    // A column reel has no value for is refused before anything is written.
    let decimal =
        Arc::new(Schema::new(vec![Field::new("price", DataType::Decimal128(10, 2), true)]));
    let column = Decimal128Array::from(vec![1234i128]).with_precision_and_scale(10, 2).unwrap();
    let b = RecordBatch::try_new(decimal.clone(), vec![Arc::new(column)]).unwrap();
    let dst = tmp.path().join("d");
    let err = convert_batches(
        RecordBatchIterator::new(vec![Ok(b)], decimal),
        &dst,
        &ConvertOptions::new(Format::Granular),
    )
    .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unsupported, "{err}");
    assert!(err.to_string().contains("price"), "{err}");
    assert!(!dst.exists());

    // A stream failing midway: the error says so, and the half-written dataset is gone.
    let dst = tmp.path().join("s.syr");
    let failing = vec![Ok(batch(0..70)), Err(ArrowError::ComputeError("producer broke".into()))];
    let err =
        convert_batches(stream(failing), &dst, &ConvertOptions::new(Format::Syrah)).unwrap_err();
    assert!(err.to_string().contains("producer broke") && err.to_string().contains("70"), "{err}");
    assert!(!dst.exists());
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0, "leftovers");

    // An existing destination is refused unless replacing was asked for; shards need a length.
    std::fs::write(&dst, b"keep").unwrap();
    let err =
        convert_batches(stream(vec![Ok(batch(0..2))]), &dst, &ConvertOptions::new(Format::Syrah))
            .unwrap_err();
    assert_eq!(std::fs::read(&dst).unwrap(), b"keep", "{err}");
    let options = ConvertOptions::new(Format::Syrah).overwrite(true);
    convert_batches(stream(vec![Ok(batch(0..2))]), &dst, &options).unwrap();
    assert_eq!(reel::open(&dst).unwrap().len(), 2);
    let sharded = ConvertOptions::new(Format::Syrah).shard(0, 2);
    let err = convert_batches(stream(vec![]), tmp.path().join("p"), &sharded).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
}

/// Nullable columns to Granular: a null cell is written as null, which a column holds only
/// as msgpack. A column whose first value is null is msgpack already; one whose first
/// value is not is refused at the first null, naming field and record, unless named in
/// `nullable`.
#[test]
fn null_cells_to_granular_are_nulls_in_msgpack_columns() {
    let schema = Arc::new(Schema::new(vec![
        Field::new("label", DataType::Int64, true),
        Field::new("caption", DataType::Utf8, true),
    ]));
    let b = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(Int64Array::from(vec![None, Some(1), Some(2)])),
            Arc::new(StringArray::from(vec![Some("a"), None, Some("c")])),
        ],
    )
    .unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let dst = tmp.path().join("g");
    let batches = || RecordBatchIterator::new(vec![Ok(b.clone())].into_iter(), schema.clone());
    let err = convert_batches(batches(), &dst, &ConvertOptions::new(Format::Granular)).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Schema);
    assert_eq!(err.record(), Some(1), "{err}");
    let text = err.to_string();
    assert!(text.contains("\"caption\"") && text.contains("--nullable caption"), "{text}");
    assert!(!dst.exists());

    for to in [Format::Granular, Format::Bags] {
        let dst = tmp.path().join(format!("ok-{to}"));
        let mut options = ConvertOptions::new(to);
        options.nullable = vec!["caption".into()];
        convert_batches(batches(), &dst, &options).unwrap();
        let back = reel::open(&dst).unwrap();
        let (r0, r1, r2) = (back.read(0).unwrap(), back.read(1).unwrap(), back.read(2).unwrap());
        assert!(matches!(r0.get("label"), Some(ValueRef::Null)), "{to}");
        assert_eq!(r0.get("caption").unwrap().as_str(), Some("a"));
        assert_eq!(r1.get("label").unwrap().as_i64(), Some(1));
        assert!(matches!(r1.get("caption"), Some(ValueRef::Null)), "{to}");
        assert_eq!(r2.get("label").unwrap().as_i64(), Some(2));
        assert_eq!(r2.get("caption").unwrap().as_str(), Some("c"));
    }

    // `nullable` belongs to Granular and bags.
    let mut options = ConvertOptions::new(Format::Syrah);
    options.nullable = vec!["caption".into()];
    let err = convert_batches(batches(), tmp.path().join("s.syr"), &options).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
}

/// What reading Arrow columns loses of their types (a timestamp's unit and zone, an int32's
/// width, a list's array type where a row holds a null item) is stated, under the written
/// name, and `lossless_only` refuses it before anything is written; a dropped column states
/// nothing.
#[test]
fn arrow_types_lost_on_reading_are_stated_and_refused_when_lossless() {
    use reel::arrow::arrow_array::builder::{Float32Builder, ListBuilder};
    use reel::arrow::arrow_array::{Int32Array, TimestampMicrosecondArray};
    let tmp = tempfile::tempdir().unwrap();
    let mut lists = ListBuilder::new(Float32Builder::new());
    // Every row has a null item (a column of arrays and lists would need two types).
    lists.values().append_value(1.0);
    lists.values().append_null();
    lists.append(true);
    lists.values().append_value(2.0);
    lists.values().append_null();
    lists.append(true);
    let columns: Vec<(&str, ArrayRef)> = vec![
        ("at", Arc::new(TimestampMicrosecondArray::from(vec![1, 2]).with_timezone("UTC"))),
        ("n", Arc::new(Int32Array::from(vec![1, 2]))),
        ("v", Arc::new(lists.finish())),
        ("id", Arc::new(Int64Array::from(vec![1, 2]))),
    ];
    let table = RecordBatch::try_from_iter(columns).unwrap();
    let reader = || {
        let schema = table.schema();
        RecordBatchIterator::new(vec![Ok(table.clone())], schema)
    };

    let mut options = ConvertOptions::new(Format::Granular);
    options.fields.rename = vec![("at".into(), "when".into())];
    let report = convert_batches(reader(), tmp.path().join("g"), &options).unwrap();
    let said: Vec<String> = report.losses.iter().map(|l| l.to_string()).collect();
    let has = |field: &str, words: &str| {
        said.iter().any(|l| l.starts_with(&format!("{field}: ")) && l.contains(words))
    };
    assert!(has("when", "timestamp") && has("when", "UTC"), "{said:?}");
    assert!(has("n", "int32 values"), "{said:?}");
    assert!(has("v", "null item"), "{said:?}");
    assert!(!said.iter().any(|l| l.starts_with("id:")), "{said:?}");

    options.lossless_only = true;
    let dst = tmp.path().join("refused");
    let err = convert_batches(reader(), &dst, &options).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Schema);
    assert!(err.to_string().contains("\"when\"") || err.to_string().contains("when:"), "{err}");
    assert!(!dst.exists());

    // Only the lossless column left: nothing to state.
    options.fields.rename.clear();
    options.fields.keep = Some(vec!["id".into()]);
    let report = convert_batches(reader(), tmp.path().join("ok"), &options).unwrap();
    assert!(report.losses.is_empty(), "{:?}", report.losses);
}

/// Writes a Parquet file of `x` (int64), `price` (decimal, which reel has no value for)
/// and `y` (text).
fn prices_parquet(path: &std::path::Path) {
    let n = 30;
    let price = Decimal128Array::from_iter_values((0..n).map(i128::from))
        .with_precision_and_scale(10, 2)
        .unwrap();
    let columns: Vec<(&str, ArrayRef)> = vec![
        ("x", Arc::new(Int64Array::from_iter_values(0..n))),
        ("price", Arc::new(price)),
        ("y", Arc::new(StringArray::from_iter_values((0..n).map(|i| format!("y{i}"))))),
    ];
    let batch = RecordBatch::try_from_iter(columns).unwrap();
    let file = std::fs::File::create(path).unwrap();
    let mut w =
        reel::arrow::parquet::arrow::ArrowWriter::try_new(file, batch.schema(), None).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
}

/// A conversion's field selection reaches the open of a Parquet source: a column it leaves
/// out (`--drop price`, `--fields x,y`) is never decoded nor checked, so a decimal column
/// no longer stops the conversion of the others; renames still apply. Opening, the same
/// selection is `OpenOptions::columns` / `skip_columns`, which other formats refuse.
#[test]
fn conversions_leave_out_unreadable_columns_they_drop() {
    use reel::convert::FieldMap;
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("prices.parquet");
    prices_parquet(&src);
    let err = reel::open(&src).err().unwrap();
    assert_eq!(err.kind(), ErrorKind::Unsupported, "{err}");
    assert!(err.to_string().contains("price"), "{err}");
    let err = reel::convert(&src, tmp.path().join("no"), &ConvertOptions::new(Format::Granular))
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unsupported, "{err}");

    let fields = |keep: Option<&[&str]>, drop: &[&str], rename: &[(&str, &str)]| FieldMap {
        keep: keep.map(|k| k.iter().map(|s| s.to_string()).collect()),
        drop: drop.iter().map(|s| s.to_string()).collect(),
        rename: rename.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect(),
    };
    let cases = [
        ("dropped", fields(None, &["price"], &[]), vec![("x", "x"), ("y", "y")]),
        ("kept", fields(Some(&["y", "x"]), &[], &[]), vec![("y", "y"), ("x", "x")]),
        ("renamed", fields(None, &["price"], &[("x", "z")]), vec![("x", "z"), ("y", "y")]),
    ];
    for (what, map, written) in cases {
        let dst = tmp.path().join(what);
        let mut options = ConvertOptions::new(Format::Granular);
        options.fields = map;
        let report = reel::convert(&src, &dst, &options).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(report.records, 30, "{what}");
        let back = reel::open(&dst).unwrap();
        let r = back.read(29).unwrap();
        let mut names: Vec<&str> = r.iter().map(|(n, _)| n).collect();
        names.sort_unstable();
        let mut want: Vec<&str> = written.iter().map(|(_, new)| *new).collect();
        want.sort_unstable();
        assert_eq!(names, want, "{what}");
        for (old, new) in written {
            let v = r.get(new).unwrap();
            match old {
                "x" => assert_eq!(v.as_i64(), Some(29), "{what}"),
                _ => assert_eq!(v.as_str(), Some("y29"), "{what}"),
            }
        }
    }
    // A typo in --drop is still an error naming the field.
    let mut options = ConvertOptions::new(Format::Granular);
    options.fields = fields(None, &["prise"], &[]);
    let err = reel::convert(&src, tmp.path().join("typo"), &options).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    assert!(err.to_string().contains("prise"), "{err}");

    let open = |options: reel::OpenOptions| reel::open_with(&src, &options);
    let only = open(reel::OpenOptions::default().columns(["y"])).unwrap();
    assert_eq!(only.read(3).unwrap().get("y").unwrap().as_str(), Some("y3"));
    let skipped = open(reel::OpenOptions::default().skip_columns(["price"])).unwrap();
    assert_eq!(skipped.read(3).unwrap().get("x").unwrap().as_i64(), Some(3));
    let ffr = tmp.path().join("a.ffr");
    convert_batches(stream(vec![Ok(batch(0..2))]), &ffr, &{
        let mut o = ConvertOptions::new(Format::Ffrecord);
        o.fields.keep = Some(vec!["image".into()]);
        o
    })
    .unwrap();
    let err = reel::open_with(&ffr, &reel::OpenOptions::default().columns(["data"])).err().unwrap();
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
}
