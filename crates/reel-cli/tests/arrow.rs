//! `reel convert` to and from Parquet and Arrow IPC: settings reach the file, every format
//! goes in and comes back, impossible mappings are refused naming the field.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support {
    pub mod datasets;
}

use std::path::Path;

use reel::arrow::parquet::file::reader::{FileReader, SerializedFileReader};
use reel::{DType, Format, Record, RecordSourceExt};
use support::datasets::{reel, write};

fn read_all(path: &Path) -> Vec<Record> {
    let src = reel::open(path).unwrap();
    (0..src.len()).map(|i| src.read(i).unwrap()).collect()
}

#[test]
fn ffrecord_to_parquet_and_back_with_settings() {
    let tmp = tempfile::tempdir().unwrap();
    let records: Vec<Record> =
        (0..300u32).map(|i| Record::from_bytes(&i.to_le_bytes().repeat(i as usize % 50))).collect();
    let ffr = tmp.path().join("a.ffr");
    write(Format::Ffrecord, &ffr, &records);

    let pq = tmp.path().join("a.parquet");
    let out = reel()
        .args(["convert", "--quiet", "--to", "parquet", "--row-group-rows", "100"])
        .args(["--compression", "snappy", "--with-index"])
        .arg(&ffr)
        .arg(&pq)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let meta = SerializedFileReader::new(std::fs::File::open(&pq).unwrap()).unwrap();
    let meta = meta.metadata();
    assert_eq!(meta.num_row_groups(), 3);
    let col = meta.row_group(0).column(0);
    assert_eq!(col.compression(), reel::arrow::parquet::basic::Compression::SNAPPY);
    assert_eq!(meta.file_metadata().schema_descr().column(1).name(), "_index");

    // Back to FFRecord: the index column cannot go, and is named.
    let back = tmp.path().join("b.ffr");
    let out = reel()
        .args(["convert", "--quiet", "--to", "ffrecord"])
        .arg(&pq)
        .arg(&back)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("_index"), "{err}");
    assert!(!back.exists());

    // Without it, the records come back as they were.
    let pq2 = tmp.path().join("plain.parquet");
    reel().args(["convert", "--quiet", "--to", "parquet"]).arg(&ffr).arg(&pq2).assert().success();
    reel().args(["convert", "--quiet", "--to", "ffrecord"]).arg(&pq2).arg(&back).assert().success();
    assert_eq!(read_all(&back), records);
    let meta = SerializedFileReader::new(std::fs::File::open(&pq2).unwrap()).unwrap();
    let col = meta.metadata().row_group(0).column(0);
    assert!(matches!(col.compression(), reel::arrow::parquet::basic::Compression::ZSTD(_)));

    // `--with-location`: where each record is stored, the bytes it is.
    let located = tmp.path().join("located.parquet");
    let out = reel()
        .args(["convert", "--quiet", "--to", "parquet", "--with-location"])
        .arg(&ffr)
        .arg(&located)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let file = std::fs::read(&ffr).unwrap();
    let rows = reel::open(&located).unwrap();
    for (i, want) in records.iter().enumerate() {
        let row = rows.read(i as u64).unwrap();
        assert_eq!(row.get("_file").and_then(|v| v.as_str()), ffr.to_str(), "#{i}");
        let offset = row.get("_offset").and_then(|v| v.as_u64()).unwrap() as usize;
        let len = row.get("_length").and_then(|v| v.as_u64()).unwrap() as usize;
        assert_eq!(Some(&file[offset..offset + len]), want.bytes("data"), "#{i}");
    }
}

/// Parquet and Arrow settings given for a target that would not use them are refused,
/// naming the option, rather than ignored; nothing is written.
#[test]
fn settings_a_target_would_ignore_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let ffr = tmp.path().join("a.ffr");
    write(Format::Ffrecord, &ffr, &[Record::from_bytes(b"x")]);
    let cases: [(&str, &[&str], &str); 4] = [
        ("granular", &["--with-index"], "--with-index applies to --to parquet and --to arrow"),
        ("ffrecord", &["--row-group-rows", "5"], "--row-group-rows applies to --to parquet,"),
        ("arrow", &["--compression", "none"], "--compression applies to --to parquet, not to"),
        ("arrow", &["--row-group-bytes", "1M"], "--row-group-bytes applies to --to parquet"),
    ];
    for (to, options, words) in cases {
        let out_path = tmp.path().join(format!("out-{to}"));
        let out = reel()
            .args(["convert", "--quiet", "--to", to])
            .args(options)
            .arg(&ffr)
            .arg(&out_path)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{to} {options:?}: {err}");
        assert!(err.contains(words), "{to} {options:?}: {err}");
        assert!(!out_path.exists(), "{to} {options:?}");
    }
    // The settings that apply to IPC are taken there.
    let ipc = tmp.path().join("a.arrow");
    reel()
        .args(["convert", "--quiet", "--to", "arrow", "--with-index", "--batch-bytes", "1M"])
        .arg(&ffr)
        .arg(&ipc)
        .assert()
        .success();
    let back = reel::open(&ipc).unwrap().read(0).unwrap();
    assert!(back.get("_index").is_some(), "{back:?}");
}

#[test]
fn every_format_goes_through_arrow_ipc_and_parquet() {
    let tmp = tempfile::tempdir().unwrap();
    let mut r = Record::new();
    r.push_str("id", "v1")
        .push_array("x", DType::F32, &[2], &[0, 0, 128, 63, 0, 0, 0, 64])
        .unwrap();
    let rows = vec![r.clone(), r];
    let src = tmp.path().join("s.syr");
    write(Format::Syrah, &src, &rows);
    for (to, ext) in [("arrow", "arrow"), ("parquet", "parquet")] {
        let mid = tmp.path().join(format!("mid.{ext}"));
        reel().args(["convert", "--quiet", "--to", to]).arg(&src).arg(&mid).assert().success();
        let info = reel().args(["inspect", "--json"]).arg(&mid).output().unwrap();
        assert!(String::from_utf8_lossy(&info.stdout).contains(to), "inspect {to}");
        for target in ["syrah", "ofrecord", "granular"] {
            let out = tmp.path().join(format!("{ext}-{target}"));
            reel()
                .args(["convert", "--quiet", "--to", target])
                .arg(&mid)
                .arg(&out)
                .assert()
                .success();
            let back = read_all(&out);
            assert_eq!(back.len(), 2, "{to} -> {target}");
            assert_eq!(
                back[1].get("x").unwrap().as_array().unwrap().to_f32_vec(),
                Some(vec![1.0, 2.0])
            );
        }
    }
    let err = reel()
        .args(["convert", "--to", "parquet", "--compression", "lzma"])
        .arg(&src)
        .arg(tmp.path().join("z"))
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&err.stderr).contains("lzma"));
}

/// `--schema-from` a file with 64-bit offsets writes them (`large_binary`, not `binary`).
#[test]
fn schema_from_a_file_with_large_offsets_keeps_them() {
    use reel::arrow::arrow_array::{LargeBinaryArray, RecordBatch};
    use reel::arrow::arrow_schema::{DataType, Field, Schema};
    use std::sync::Arc;

    let tmp = tempfile::tempdir().unwrap();
    let schema = Arc::new(Schema::new(vec![Field::new("data", DataType::LargeBinary, true)]));
    let template = tmp.path().join("large.parquet");
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![Arc::new(LargeBinaryArray::from_iter_values([b"x".as_slice()]))],
    )
    .unwrap();
    let mut w = reel::arrow::parquet::arrow::ArrowWriter::try_new(
        std::fs::File::create(&template).unwrap(),
        schema,
        None,
    )
    .unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();

    let records: Vec<Record> = (0..5u8).map(|i| Record::from_bytes(&[i; 7])).collect();
    let ffr = tmp.path().join("a.ffr");
    write(Format::Ffrecord, &ffr, &records);
    let pq = tmp.path().join("a.parquet");
    reel()
        .args(["convert", "--quiet", "--to", "parquet", "--schema-from"])
        .arg(&template)
        .arg(&ffr)
        .arg(&pq)
        .assert()
        .success();
    let written = reel::arrow::schema_of_file(&pq).unwrap();
    assert_eq!(written.field(0).data_type(), &DataType::LargeBinary);
    assert_eq!(read_all(&pq).len(), 5);
}

/// A Parquet file with null cells to Granular: refused at the first null a column cannot
/// hold, naming field and record; `--nullable` writes that column as msgpack, and the
/// nulls read back as nulls.
#[test]
fn nullable_parquet_columns_to_granular() {
    use reel::arrow::arrow_array::{Int64Array, RecordBatch, StringArray};
    use reel::arrow::arrow_schema::{DataType, Field, Schema};
    use std::sync::Arc;

    let tmp = tempfile::tempdir().unwrap();
    let schema = Arc::new(Schema::new(vec![
        Field::new("label", DataType::Int64, true),
        Field::new("caption", DataType::Utf8, true),
    ]));
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(Int64Array::from(vec![Some(7), None, Some(9)])),
            Arc::new(StringArray::from(vec![Some("a"), Some("b"), None])),
        ],
    )
    .unwrap();
    let pq = tmp.path().join("t.parquet");
    let mut w = reel::arrow::parquet::arrow::ArrowWriter::try_new(
        std::fs::File::create(&pq).unwrap(),
        schema,
        None,
    )
    .unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();

    let dst = tmp.path().join("g");
    let out = reel()
        .args(["convert", "--quiet", "--to", "granular"])
        .arg(&pq)
        .arg(&dst)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("record 1") && err.contains("\"label\"") && err.contains("--nullable label"),
        "{err}"
    );
    assert!(!dst.exists());

    reel()
        .args(["convert", "--quiet", "--to", "granular", "--nullable", "label,caption"])
        .arg(&pq)
        .arg(&dst)
        .assert()
        .success();
    let spec = std::fs::read_to_string(dst.join("spec.json")).unwrap();
    assert_eq!(spec, r#"{"caption": "msgpack", "label": "msgpack"}"#);
    let back = read_all(&dst);
    assert_eq!(back[0].get("label").unwrap().as_i64(), Some(7));
    assert!(matches!(back[1].get("label"), Some(reel::ValueRef::Null)));
    assert!(matches!(back[2].get("caption"), Some(reel::ValueRef::Null)));
    assert_eq!(back[2].get("label").unwrap().as_i64(), Some(9));
}

/// `--fields`, `--drop` and `--rename` may name a Parquet column whose cell is null in the
/// first record (a declared field that record lacks); a name that no column has is still
/// refused, named.
#[test]
fn field_options_name_nullable_columns() {
    let tmp = tempfile::tempdir().unwrap();
    let records: Vec<Record> = (0..6i64)
        .map(|i| {
            let mut r = Record::new();
            r.push_int("id", i).push_bytes("image", &[i as u8; 4]);
            if i % 2 == 1 {
                r.push_str("caption", &format!("c{i}"));
            }
            r
        })
        .collect();
    let pq = tmp.path().join("t.parquet");
    write(Format::Parquet, &pq, &records);

    let syr = tmp.path().join("t.syr");
    let out = reel()
        .args(["convert", "--quiet", "--to", "syrah", "--drop", "caption"])
        .arg(&pq)
        .arg(&syr)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let items = read_all(&syr);
    assert_eq!(items.len(), 6);
    assert!(items.iter().all(|r| r.get("caption").is_none() && r.get("image").is_some()));

    let gran = tmp.path().join("t.gran");
    let out = reel()
        .args(["convert", "--quiet", "--to", "granular", "--fields", "caption,image"])
        .args(["--rename", "caption=text"])
        .arg(&pq)
        .arg(&gran)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let rows = read_all(&gran);
    assert!(matches!(rows[0].get("text"), Some(reel::ValueRef::Null)), "{:?}", rows[0]);
    assert_eq!(rows[1].get("text").and_then(|v| v.as_str()), Some("c1"));
    assert!(rows[0].get("id").is_none());

    for option in [["--drop", "captoin"], ["--fields", "captoin"], ["--rename", "captoin=x"]] {
        let bad = tmp.path().join("bad.syr");
        let out = reel()
            .args(["convert", "--quiet", "--to", "syrah"])
            .args(option)
            .arg(&pq)
            .arg(&bad)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{option:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("\"captoin\""), "{option:?}: {err}");
        assert!(!bad.exists());
    }
}

/// A Parquet file with a decimal column (which reel has no value for): `reel cat --fields`
/// and `reel convert --drop` / `--fields` read only the columns they name, so the decimal
/// no longer stops them; without a selection, the refusal names the column.
#[test]
fn a_decimal_column_left_out_does_not_stop_cat_or_convert() {
    use reel::arrow::arrow_array::{ArrayRef, Decimal128Array, Int64Array, RecordBatch};
    use std::sync::Arc;
    let tmp = tempfile::tempdir().unwrap();
    let pq = tmp.path().join("prices.parquet");
    let price =
        Decimal128Array::from_iter_values([100i128, 250]).with_precision_and_scale(10, 2).unwrap();
    let columns: Vec<(&str, ArrayRef)> = vec![
        ("x", Arc::new(Int64Array::from(vec![1, 2]))),
        ("y", Arc::new(Int64Array::from(vec![10, 20]))),
        ("price", Arc::new(price)),
    ];
    let batch = RecordBatch::try_from_iter(columns).unwrap();
    let mut w = reel::arrow::parquet::arrow::ArrowWriter::try_new(
        std::fs::File::create(&pq).unwrap(),
        batch.schema(),
        None,
    )
    .unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();

    let out = reel().args(["cat", "--json"]).arg(&pq).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("\"price\""));
    let out = reel().args(["cat", "--json", "--fields", "y,x"]).arg(&pq).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("\"y\":20") && text.contains("\"x\":2") && !text.contains("price"));

    for (what, selection) in [("drop", ["--drop", "price"]), ("keep", ["--fields", "x,y"])] {
        let dst = tmp.path().join(what);
        let out = reel()
            .args(["convert", "--quiet", "--to", "granular"])
            .args(selection)
            .arg(&pq)
            .arg(&dst)
            .output()
            .unwrap();
        assert!(out.status.success(), "{what}: {}", String::from_utf8_lossy(&out.stderr));
        let back = read_all(&dst);
        assert_eq!(back.len(), 2);
        assert_eq!(back[1].get("x").unwrap().as_i64(), Some(2), "{what}");
        assert_eq!(back[1].get("y").unwrap().as_i64(), Some(20), "{what}");
        assert!(back[1].get("price").is_none(), "{what}");
    }
}

/// `--schema-from` the source itself writes its columns back with their own types
/// (int32, a timestamp): what reading them loses is restored, so it is no stated loss and
/// `--lossless-only` lets the conversion through; without the schema it refuses it.
#[test]
fn schema_from_the_source_itself_loses_nothing() {
    use reel::arrow::arrow_array::{ArrayRef, Int32Array, RecordBatch, TimestampMillisecondArray};
    use std::sync::Arc;

    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("typed.parquet");
    let batch = RecordBatch::try_from_iter([
        ("n", Arc::new(Int32Array::from(vec![1, -2, 3])) as ArrayRef),
        ("t", Arc::new(TimestampMillisecondArray::from(vec![0i64, 1, 2])) as ArrayRef),
    ])
    .unwrap();
    let file = std::fs::File::create(&src).unwrap();
    let mut w =
        reel::arrow::parquet::arrow::ArrowWriter::try_new(file, batch.schema(), None).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();

    let out = tmp.path().join("out.parquet");
    let refused = reel()
        .args(["convert", "--quiet", "--to", "parquet", "--lossless-only"])
        .arg(&src)
        .arg(&out)
        .output()
        .unwrap();
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("int32"));
    let kept = reel()
        .args(["convert", "--to", "parquet", "--lossless-only", "--schema-from"])
        .arg(&src)
        .arg(&src)
        .arg(&out)
        .output()
        .unwrap();
    let said =
        String::from_utf8_lossy(&kept.stderr).to_string() + &String::from_utf8_lossy(&kept.stdout);
    assert!(kept.status.success(), "{said}");
    assert!(!said.contains("lost"), "{said}");
    let written = reel::arrow::schema_of_file(&out).unwrap();
    assert_eq!(written.fields().len(), 2);
    for (a, b) in written.fields().iter().zip(batch.schema().fields()) {
        assert_eq!(a.data_type(), b.data_type());
    }
}
