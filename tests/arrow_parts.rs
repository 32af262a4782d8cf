//! Directories of Parquet and Arrow IPC parts (what `reel convert --shard k/n` writes, and
//! what Spark, Dask and Hugging Face publish) open as one dataset: the parts' records one
//! after another, in the order of the files' names.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

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
    assert!(e.to_string().contains("*.parquet"), "{e}");
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
