//! Directories of Parquet and Arrow IPC parts (what `reel convert --shard k/n` writes, and
//! what Spark, Dask and Hugging Face publish) open as one dataset: the parts' records one
//! after another, in the order of the files' names.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::sync::Arc;

use reel::arrow::arrow_array::types::Int32Type;
use reel::arrow::arrow_array::{
    ArrayRef, DictionaryArray, Int32Array, Int64Array, LargeStringArray, NullArray, RecordBatch,
    StringArray, TimestampMicrosecondArray, TimestampMillisecondArray,
};
use reel::arrow::arrow_schema::{DataType, TimeUnit};
use reel::arrow::parquet::arrow::ArrowWriter;
use reel::{ConvertOptions, CreateOptions, ErrorKind, Format, RecordSource, RecordSourceExt};
use reel_core::testing::conformance;

/// A generated FFRecord dataset of `n` records.
fn source(dir: &Path, n: u64) -> std::path::PathBuf {
    let path = dir.join("src.ffr");
    reel::synth::generate(&path, Format::Ffrecord, n, 300, &CreateOptions::default(), &mut |_| {})
        .unwrap();
    path
}

/// `src` converted to `to` in `count` shards into `dir`.
fn shards(src: &Path, dir: &Path, to: Format, count: u64) {
    for k in 0..count {
        reel::convert(src, dir, &ConvertOptions::new(to).shard(k, count)).unwrap();
    }
}

fn bytes_of(source: &dyn RecordSource, i: u64) -> Vec<u8> {
    source.read(i).unwrap().view().bytes("data").unwrap().to_vec()
}

#[test]
fn shards_of_a_conversion_open_as_the_dataset_they_came_from() {
    let tmp = tempfile::tempdir().unwrap();
    let src = source(tmp.path(), 1000);
    let original = reel::open(&src).unwrap();
    for (to, count) in [(Format::Parquet, 3), (Format::ArrowIpc, 4), (Format::Parquet, 1)] {
        let dir = tmp.path().join(format!("{}-{count}", to.name()));
        shards(&src, &dir, to, count);
        let parts = reel::open(&dir).unwrap();
        assert_eq!(parts.info().format, to.name());
        assert_eq!(parts.info().paths.len() as u64, count, "{dir:?}");
        assert_eq!(parts.len(), 1000);
        for i in 0..1000 {
            assert_eq!(bytes_of(&*parts, i), bytes_of(&*original, i), "{to:?} record {i}");
        }
        // Batches within and across parts, in any order, with repeats; threads; borrowed.
        conformance::check_source(&*parts);
        let across = [999, 0, 500, 250, 999, 1, 749, 750];
        let batch = parts.read_batch(&across).unwrap();
        for (k, &i) in across.iter().enumerate() {
            let record = batch.get(k).unwrap();
            assert_eq!(record.index(), i);
            assert_eq!(record.bytes("data").unwrap(), bytes_of(&*original, i));
        }
        // Converted back as one dataset.
        let back = tmp.path().join(format!("back-{}-{count}.ffr", to.name()));
        reel::convert(&dir, &back, &ConvertOptions::new(Format::Ffrecord)).unwrap();
        let back = reel::open(&back).unwrap();
        assert_eq!(back.len(), 1000);
        assert_eq!(bytes_of(&*back, 637), bytes_of(&*original, 637));
    }
}

#[test]
fn the_parts_facts_count_the_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let src = source(tmp.path(), 90);
    let dir = tmp.path().join("pq");
    shards(&src, &dir, Format::Parquet, 3);
    let info = reel::open(&dir).unwrap().info().clone();
    let fact = |name: &str| info.facts.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone());
    assert_eq!(fact("parts").as_deref(), Some("3"));
    assert_eq!(fact("row groups").as_deref(), Some("3"));
    let names: Vec<String> =
        info.paths.iter().map(|p| p.file_name().unwrap().to_string_lossy().into()).collect();
    assert_eq!(names, ["part-00000.parquet", "part-00001.parquet", "part-00002.parquet"]);
}

#[test]
fn hidden_and_underscore_files_are_not_parts() {
    let tmp = tempfile::tempdir().unwrap();
    let src = source(tmp.path(), 50);
    let dir = tmp.path().join("pq");
    shards(&src, &dir, Format::Parquet, 2);
    // What Spark and Dask leave beside the parts, and a staging file: not read.
    std::fs::write(dir.join("_SUCCESS"), b"").unwrap();
    std::fs::write(dir.join("_metadata"), b"not parquet").unwrap();
    std::fs::copy(dir.join("part-00000.parquet"), dir.join(".part-00002.parquet")).unwrap();
    std::fs::copy(dir.join("part-00000.parquet"), dir.join("_part-00003.parquet")).unwrap();
    let parts = reel::open(&dir).unwrap();
    assert_eq!((parts.len(), parts.info().paths.len()), (50, 2));
}

#[test]
fn parts_of_different_tables_are_refused_naming_both() {
    let tmp = tempfile::tempdir().unwrap();
    let src = source(tmp.path(), 40);
    let dir = tmp.path().join("pq");
    shards(&src, &dir, Format::Parquet, 2);
    // A part of another table: the golden Syrah case's fields, as Parquet.
    let other = reel_core::testing::golden::golden_root().join("syrah/normal");
    let mut options = ConvertOptions::new(Format::Parquet);
    options.overwrite = true;
    reel::convert(&other, dir.join("part-00001.parquet"), &options).unwrap();
    let e = reel::open(&dir).err().expect("parts of two tables");
    assert_eq!(e.kind(), ErrorKind::Schema, "{e}");
    let text = e.to_string();
    assert!(text.contains("part-00001.parquet") && text.contains("part-00000.parquet"), "{text}");
    assert!(text.contains("data"), "{text}");
}

#[test]
fn a_directory_without_parts_is_not_found() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("_SUCCESS"), b"").unwrap();
    let e = reel::open_as(tmp.path(), Format::Parquet, &reel::OpenOptions::default())
        .err()
        .expect("no parts");
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
    assert!(e.to_string().contains("no Parquet part"), "{e}");
}

/// Writes one Parquet file of the columns `columns` (`x` int64 0.., `s` text `s0`.., as
/// the named Arrow types) in their order, with `n` rows.
fn typed_parquet(path: &Path, columns: &[(&str, DataType)], n: i64) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let arrays: Vec<(&str, ArrayRef, bool)> = columns
        .iter()
        .map(|(name, dt)| {
            let array: ArrayRef = match dt {
                DataType::Int64 => Arc::new(Int64Array::from_iter_values(0..n)),
                DataType::Int32 => Arc::new(Int32Array::from_iter_values(0..n as i32)),
                DataType::Utf8 => {
                    Arc::new(StringArray::from_iter_values((0..n).map(|i| format!("s{i}"))))
                }
                DataType::LargeUtf8 => {
                    Arc::new(LargeStringArray::from_iter_values((0..n).map(|i| format!("s{i}"))))
                }
                DataType::Dictionary(..) => {
                    let texts: Vec<String> = (0..n).map(|i| format!("s{i}")).collect();
                    Arc::new(
                        texts.iter().map(String::as_str).collect::<DictionaryArray<Int32Type>>(),
                    )
                }
                DataType::Timestamp(TimeUnit::Millisecond, tz) => Arc::new(
                    TimestampMillisecondArray::from_iter_values(0..n).with_timezone_opt(tz.clone()),
                ),
                DataType::Timestamp(TimeUnit::Microsecond, tz) => Arc::new(
                    TimestampMicrosecondArray::from_iter_values(0..n).with_timezone_opt(tz.clone()),
                ),
                DataType::Null => Arc::new(NullArray::new(n as usize)),
                other => panic!("no column of {other} here"),
            };
            (*name, array, true)
        })
        .collect();
    let batch = RecordBatch::try_from_iter_with_nullable(arrays).unwrap();
    let file = std::fs::File::create(path).unwrap();
    let mut w = ArrowWriter::try_new(file, batch.schema(), None).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
}

/// The fields of record `i`, by name and in order, as text.
fn fields_of(source: &dyn RecordSource, i: u64) -> Vec<(String, String)> {
    let record = source.read(i).unwrap();
    record
        .view()
        .iter()
        .map(|(name, v)| {
            let text =
                v.as_i64().map_or_else(|| v.as_str().unwrap().to_string(), |v| v.to_string());
            (name.to_string(), text)
        })
        .collect()
}

#[test]
fn every_file_of_a_table_is_a_part_whatever_its_name() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("table");
    // Hive's `000000_0`, `.parq`, an extension in capitals: parts, as pyarrow reads them.
    let x = [("x", DataType::Int64)];
    typed_parquet(&dir.join("k=1/000000_0"), &x, 2);
    typed_parquet(&dir.join("k=2/PART-0.PARQUET"), &x, 3);
    typed_parquet(&dir.join("k=3/part-0.parq"), &x, 4);
    std::fs::write(dir.join("_SUCCESS"), b"").unwrap();
    let table = reel::open(&dir).unwrap();
    assert_eq!(table.info().format, "parquet");
    assert_eq!(table.len(), 9);
    assert_eq!(text_of(&*table, 0, "k").as_deref(), Some("1"));
    assert_eq!(text_of(&*table, 8, "k").as_deref(), Some("3"));

    // A file that is no part is refused, named, not left out: it could be a damaged part.
    std::fs::write(dir.join("k=2/README.txt"), b"made by a job").unwrap();
    std::fs::write(dir.join("k=3/notes"), b"").unwrap();
    let e = reel::open(&dir).err().expect("a file that is not Parquet");
    assert_eq!(e.kind(), ErrorKind::Corrupt, "{e}");
    let text = e.to_string();
    assert!(text.contains("k=2/README.txt") && text.contains("1 more file"), "{text}");
    assert!(text.contains("starting with _ or ."), "{text}");
    std::fs::rename(dir.join("k=2/README.txt"), dir.join("k=2/_README.txt")).unwrap();
    std::fs::remove_file(dir.join("k=3/notes")).unwrap();
    assert_eq!(reel::open(&dir).unwrap().len(), 9);

    // An Arrow IPC file among Parquet parts: one table is of one format.
    let ipc = tmp.path().join("one.arrow");
    reel::convert(dir.join("k=1/000000_0"), &ipc, &ConvertOptions::new(Format::ArrowIpc)).unwrap();
    // (Deeper than the Parquet parts, so that the walk, breadth first, meets them first.)
    std::fs::create_dir_all(dir.join("k=4/v=1")).unwrap();
    std::fs::copy(&ipc, dir.join("k=4/v=1/part")).unwrap();
    let e = reel::open(&dir).err().expect("an IPC file among Parquet parts");
    let text = e.to_string();
    assert!(text.contains("k=4/v=1/part: not a part of the Parquet table"), "{text}");
    assert!(text.contains("it is an Arrow IPC file"), "{text}");
}

#[test]
fn parts_whose_columns_differ_only_in_order_or_encoding_are_one_table() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("table");
    let dict = DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8));
    // pyarrow's, polars' and another writer's parts of one table.
    typed_parquet(&dir.join("d=1/a.parquet"), &[("x", DataType::Int64), ("s", DataType::Utf8)], 2);
    typed_parquet(
        &dir.join("d=2/a.parquet"),
        &[("s", DataType::LargeUtf8), ("x", DataType::Int32)],
        2,
    );
    typed_parquet(&dir.join("d=3/a.parquet"), &[("x", DataType::Int64), ("s", dict)], 2);
    let table = reel::open(&dir).unwrap();
    assert_eq!(table.len(), 6);
    let expected = |d: &str, i: i64| {
        vec![
            ("x".to_string(), i.to_string()),
            ("s".to_string(), format!("s{i}")),
            ("d".to_string(), d.to_string()),
        ]
    };
    // Every record's fields in the first part's order.
    assert_eq!(fields_of(&*table, 1), expected("1", 1));
    assert_eq!(fields_of(&*table, 3), expected("2", 1));
    assert_eq!(fields_of(&*table, 4), expected("3", 0));
    conformance::check_source(&*table);

    // A part with a column of values of another kind is no part of it, named by its path.
    typed_parquet(&dir.join("d=4/a.parquet"), &[("x", DataType::Utf8), ("s", DataType::Utf8)], 1);
    let e = reel::open(&dir).err().expect("text where the table has integers");
    assert_eq!(e.kind(), ErrorKind::Schema, "{e}");
    assert!(e.to_string().contains("d=4/a.parquet has the columns"), "{e}");
    assert!(e.to_string().contains("where d=1/a.parquet has"), "{e}");
}

#[test]
fn parts_whose_times_count_in_other_units_are_other_tables() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("table");
    let ms = |tz: Option<&str>| DataType::Timestamp(TimeUnit::Millisecond, tz.map(Into::into));
    // A time zone changes no stored count: pandas' naive and Spark's UTC parts are one table.
    typed_parquet(&dir.join("part-0.parquet"), &[("t", ms(None))], 2);
    typed_parquet(&dir.join("part-1.parquet"), &[("t", ms(Some("UTC")))], 2);
    assert_eq!(reel::open(&dir).unwrap().len(), 4);
    // Counts of microseconds beside counts of milliseconds would read as one column of
    // numbers meaning different things: refused, naming the part.
    let us = DataType::Timestamp(TimeUnit::Microsecond, None);
    typed_parquet(&dir.join("part-2.parquet"), &[("t", us)], 2);
    let e = reel::open(&dir).err().expect("milliseconds and microseconds");
    assert_eq!(e.kind(), ErrorKind::Schema, "{e}");
    assert!(e.to_string().contains("part-2.parquet has the columns"), "{e}");
    // And so would plain integers beside timestamps.
    std::fs::remove_file(dir.join("part-2.parquet")).unwrap();
    typed_parquet(&dir.join("part-2.parquet"), &[("t", DataType::Int64)], 2);
    let e = reel::open(&dir).err().expect("integers and timestamps");
    assert_eq!(e.kind(), ErrorKind::Schema, "{e}");
}

/// The declared columns of `source`, as `name: type`.
fn declared(source: &dyn RecordSource) -> Vec<String> {
    let fields = source.info().schema.clone().unwrap_or_default();
    fields.iter().map(|f| format!("{}: {}", f.name, f.kind)).collect()
}

#[test]
fn parts_of_a_table_whose_columns_came_and_went_read_as_pyarrow_unifies_them() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("table");
    // A column added after the first part was written: the older part's records lack it.
    typed_parquet(&dir.join("part-0.parquet"), &[("x", DataType::Int64)], 2);
    typed_parquet(&dir.join("part-1.parquet"), &[("s", DataType::Utf8), ("x", DataType::Int64)], 2);
    // A column of nulls only (pandas writes an all-None column so): the type comes from a
    // part that has values, and its records lack the field.
    typed_parquet(&dir.join("part-2.parquet"), &[("x", DataType::Int64), ("s", DataType::Null)], 1);
    // A part without rows, of other types (an empty column of objects is `null` to
    // pandas, and of text to others): it adds nothing.
    typed_parquet(&dir.join("part-3.parquet"), &[("x", DataType::Utf8), ("z", DataType::Utf8)], 0);
    let table = reel::open(&dir).unwrap();
    assert_eq!(table.len(), 5);
    assert_eq!(declared(&*table), ["x: Int64", "s: Utf8"]);
    assert_eq!(fields_of(&*table, 1), [("x".to_string(), "1".to_string())]);
    // The newer part's fields in the table's order, which is not the file's.
    assert_eq!(
        fields_of(&*table, 3),
        [("x".to_string(), "1".to_string()), ("s".to_string(), "s1".to_string())]
    );
    assert_eq!(fields_of(&*table, 4), [("x".to_string(), "0".to_string())]);
    assert_eq!(table.info().paths.len(), 3, "the empty part of other types is left out");
    conformance::check_source(&*table);

    // A selection names the table's columns: parts without one give records without it.
    let only_s = reel::OpenOptions::default().columns(["s"]);
    let s = reel::open_with(&dir, &only_s).unwrap();
    assert_eq!(declared(&*s), ["s: Utf8"]);
    assert_eq!(fields_of(&*s, 0), Vec::<(String, String)>::new());
    assert_eq!(fields_of(&*s, 2), [("s".to_string(), "s0".to_string())]);
    // A name no part has is a typo, refused naming what the first part has.
    let typo = reel::OpenOptions::default().columns(["x", "y"]);
    let e = reel::open_with(&dir, &typo).err().expect("no part has y");
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    assert!(e.to_string().contains("no column \"y\""), "{e}");

    // Rows whose columns are of another kind still make another table, and so does a part
    // that shares no column with the others.
    typed_parquet(&dir.join("part-4.parquet"), &[("s", DataType::Int64)], 1);
    let e = reel::open(&dir).err().expect("integers where the table has text");
    assert_eq!(e.kind(), ErrorKind::Schema, "{e}");
    assert!(e.to_string().contains("part-4.parquet has the columns"), "{e}");
    std::fs::remove_file(dir.join("part-4.parquet")).unwrap();
    typed_parquet(&dir.join("part-4.parquet"), &[("other", DataType::Int64)], 1);
    let e = reel::open(&dir).err().expect("no column in common");
    assert_eq!(e.kind(), ErrorKind::Schema, "{e}");
}

/// The records of `n` generated records as a Parquet file at `path` (its directories made).
fn parquet_part(tmp: &Path, path: &Path, n: u64) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let src = tmp.join(format!("src-{n}.ffr"));
    if !src.exists() {
        reel::synth::generate(
            &src,
            Format::Ffrecord,
            n,
            300,
            &CreateOptions::default(),
            &mut |_| {},
        )
        .unwrap();
    }
    reel::convert(&src, path, &ConvertOptions::new(Format::Parquet)).unwrap();
}

/// The value of `field` in record `i`, as text (`None` where the record lacks it).
fn text_of(source: &dyn RecordSource, i: u64, field: &str) -> Option<String> {
    let record = source.read(i).unwrap();
    let value = record.view().get(field)?;
    Some(value.as_i64().map_or_else(|| value.as_str().unwrap().to_string(), |v| v.to_string()))
}

#[test]
fn hive_partition_directories_are_read_and_their_keys_are_columns() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("table");
    // Spark's and Hive's layout: key=value directories, a null key, a value with a space
    // (percent-encoded), a part at the root (no keys), and a `_temporary` directory of an
    // unfinished job, which is not read. The paths compare as text: `year=2020/lang=de`
    // before `year=2020/lang=en`, `year=2021` before `year=__HIVE_DEFAULT_PARTITION__`.
    let layout: [(&str, u64); 5] = [
        ("year=2021/lang=x%20y/part-0.parquet", 3),
        ("year=2020/lang=en/part-0.parquet", 2),
        ("year=2020/lang=de/part-0.parquet", 4),
        ("year=__HIVE_DEFAULT_PARTITION__/lang=en/part-0.parquet", 1),
        ("a-root-part.parquet", 5),
    ];
    for (path, n) in layout {
        parquet_part(tmp.path(), &dir.join(path), n);
    }
    parquet_part(tmp.path(), &dir.join("_temporary/0/part-9.parquet"), 7);
    let table = reel::open(&dir).unwrap();
    assert_eq!(table.len(), 15);
    let schema = table.info().schema.clone().unwrap();
    let names: Vec<&str> = schema.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["data", "year", "lang"], "{schema:?}");
    assert_eq!(schema[1].kind, "Int32");
    assert_eq!(schema[2].kind, "Utf8");
    // Part order, and each record's keys: (year, lang) for records 0.., part after part.
    let expect: Vec<(Option<&str>, Option<&str>)> = [
        (None, None, 5),
        (Some("2020"), Some("de"), 4),
        (Some("2020"), Some("en"), 2),
        (Some("2021"), Some("x y"), 3),
        (None, Some("en"), 1),
    ]
    .iter()
    .flat_map(|&(y, l, n)| std::iter::repeat_n((y, l), n))
    .collect();
    for (i, (year, lang)) in expect.iter().enumerate() {
        let i = i as u64;
        assert_eq!(text_of(&*table, i, "year").as_deref(), *year, "record {i}");
        assert_eq!(text_of(&*table, i, "lang").as_deref(), *lang, "record {i}");
    }
    // The part's own columns are untouched: record 5 is the first record of its part.
    let first = reel::open(dir.join("year=2020/lang=de/part-0.parquet")).unwrap();
    assert_eq!(bytes_of(&*table, 5), bytes_of(&*first, 0));
    assert_eq!(first.info().schema.as_ref().unwrap().len(), 1, "one file alone has no keys");
    conformance::check_source(&*table);

    // A key can be selected or left out like a column.
    let only = reel::OpenOptions { columns: Some(vec!["lang".into()]), ..Default::default() };
    let only = reel::open_with(&dir, &only).unwrap();
    let record = only.read(6).unwrap();
    let fields: Vec<&str> = record.view().iter().map(|(name, _)| name).collect();
    assert_eq!(fields, ["lang"]);
    // Keys and columns come in the order asked for, as pyarrow gives them.
    let mixed = ["year", "data", "lang"].map(String::from).to_vec();
    let mixed = reel::OpenOptions { columns: Some(mixed), ..Default::default() };
    let mixed = reel::open_with(&dir, &mixed).unwrap();
    let names: Vec<String> =
        mixed.info().schema.as_ref().unwrap().iter().map(|f| f.name.clone()).collect();
    assert_eq!(names, ["year", "data", "lang"]);
    let record = mixed.read(6).unwrap();
    let fields: Vec<&str> = record.view().iter().map(|(name, _)| name).collect();
    assert_eq!(fields, ["year", "data", "lang"]);
    assert_eq!(record.view().bytes("data").unwrap(), bytes_of(&*table, 6));
    assert_eq!(text_of(&*mixed, 6, "lang"), text_of(&*table, 6, "lang"));
    conformance::check_source(&*mixed);
    let skip = reel::OpenOptions { skip_columns: vec!["year".into()], ..Default::default() };
    let skip = reel::open_with(&dir, &skip).unwrap();
    let names: Vec<String> =
        skip.info().schema.as_ref().unwrap().iter().map(|f| f.name.clone()).collect();
    assert_eq!(names, ["data", "lang"]);
    // A name that is neither is refused, listing the file's columns and the keys.
    let typo = reel::OpenOptions { columns: Some(vec!["langs".into()]), ..Default::default() };
    let e = reel::open_with(&dir, &typo).err().expect("no column langs");
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    assert!(
        e.to_string()
            .contains("the file has data, and its directories the partition keys year, lang"),
        "{e}"
    );

    // Converted to another format, the keys are fields of every record.
    let out = tmp.path().join("out.granular");
    reel::convert(&dir, &out, &ConvertOptions::new(Format::Granular)).unwrap();
    let out = reel::open(&out).unwrap();
    assert_eq!(text_of(&*out, 12, "lang").as_deref(), Some("x y"));
    assert_eq!(text_of(&*out, 12, "year").as_deref(), Some("2021"));
}

#[test]
fn a_partition_key_that_is_also_a_column_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("table");
    parquet_part(tmp.path(), &dir.join("data=1/part-0.parquet"), 2);
    parquet_part(tmp.path(), &dir.join("data=2/part-0.parquet"), 2);
    let e = reel::open(&dir).err().expect("a key clashing with a column");
    assert_eq!(e.kind(), ErrorKind::Schema, "{e}");
    assert!(e.to_string().contains("\"data\" is both a column"), "{e}");
}

#[cfg(unix)]
#[test]
fn a_symbolic_link_looping_back_up_the_tree_is_refused_not_walked() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("table");
    parquet_part(tmp.path(), &dir.join("k=1/part-0.parquet"), 2);
    std::os::unix::fs::symlink(&dir, dir.join("k=1/again")).unwrap();
    let e = reel::open(&dir).err().expect("a loop");
    assert_eq!(e.kind(), ErrorKind::Limit, "{e}");
    assert!(e.to_string().contains("directories deep"), "{e}");
}
