//! Every golden dataset of every format, converted to Parquet and to an Arrow IPC file and
//! read back: the parquet crate's reader finds the manifest's record count, and every
//! record reads back equal to what reel reads from the reference's files (which the
//! golden_* tests check against the manifests value by value). Where the manifest gives a
//! record's values in the common descriptor form (FFRecord contents, Granular and bags
//! columns, Gulp metadata), the Parquet values are checked against the manifest directly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};

use common::{Case, cases, check_bytes, check_value};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use reel::arrow::{ArrowFileSource, ReadOptions, WriteOptions, parquet};
use reel::{ConvertOptions, Format, Record, RecordRef, RecordSource, RecordSourceExt, ValueRef};
use serde_json::Value as Json;

/// What opens as the case's dataset: the case directory, or its first data file.
fn open_case(format_key: &str, case: &Case) -> reel::Result<(PathBuf, Box<dyn RecordSource>)> {
    let format = match format_key.split('/').next().unwrap() {
        "gulpio2" => Format::Gulp,
        other => Format::from_name(other).unwrap_or_else(|| panic!("format {other}")),
    };
    // As the golden tests do: a directory of parts, a single data file, or the case
    // directory (Granular, Gulp).
    let mut candidates = Vec::new();
    let files: Vec<&str> = case.manifest["files"]
        .as_array()
        .map(|f| f.iter().filter_map(|x| x["path"].as_str()).collect())
        .unwrap_or_default();
    if let Some(first) = files.first().map(Path::new) {
        if case.manifest.get("parts").is_some() {
            candidates.push(case.dir.join(first.parent().unwrap()));
        }
        if files.len() == 1 {
            candidates.push(case.dir.join(first));
        }
    }
    candidates.push(case.dir.clone());
    // A bare bag without spec.json opens as its `.bag` file.
    candidates.extend(files.iter().filter(|f| f.ends_with(".bag")).map(|f| case.dir.join(f)));
    let mut last = None;
    for c in candidates {
        match reel::open_as(&c, format, &Default::default()) {
            Ok(s) => return Ok((c, s)),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap())
}

/// The record as a Parquet row reads back: a null field is a null cell, which reads as an
/// absent field.
fn without_null_fields(r: RecordRef<'_>) -> Record {
    let mut out = Record::new();
    for (name, value) in r.iter() {
        if !matches!(value, ValueRef::Null) {
            out.push_value(name, value);
        }
    }
    out
}

fn manifest_count(case: &Case) -> u64 {
    case.manifest["record_count"].as_u64().unwrap_or_else(|| panic!("{}: record_count", case.name))
}

/// Direct checks against the manifest for the formats whose records use the common
/// descriptors.
fn check_against_manifest(format_key: &str, case: &Case, i: usize, got: &Record) {
    let want = &case.manifest["records"][i];
    let name = &case.name;
    if format_key == "ffrecord" && want.get("content").is_some() {
        let bytes = got.bytes("data").unwrap_or_else(|| panic!("{name} #{i}: no data"));
        check_bytes(bytes, &want["content"]).unwrap_or_else(|m| panic!("{name} #{i}: {m}"));
    }
    if format_key.starts_with("granular")
        && let Some(cols) = want.get("columns").and_then(Json::as_object)
    {
        for (key, col) in cols {
            let Some(decoded) = col.get("decoded") else { continue };
            // Images are opaque bytes in reel by default; the manifest gives pixels.
            let codec = case.manifest["spec"][key.as_str()].as_str().unwrap_or_default();
            if ["jpg", "jpeg", "png", "mp4"].iter().any(|c| codec.contains(c)) {
                continue;
            }
            match got.get(key) {
                Some(v) => {
                    check_value(v, decoded).unwrap_or_else(|m| panic!("{name} #{i} {key}: {m}"))
                }
                None => assert_eq!(decoded["type"], "null", "{name} #{i} {key}: missing"),
            }
        }
    }
    if format_key == "gulpio2"
        && let (Some(meta), Some(got)) = (want.get("meta_returned"), got.get("meta"))
    {
        check_value(got, meta).unwrap_or_else(|m| panic!("{name} #{i} meta: {m}"));
    }
}

#[test]
fn every_golden_case_survives_parquet_and_arrow_ipc() {
    let tmp = tempfile::tempdir().unwrap();
    let mut converted = 0;
    let mut refused = 0;
    for format_key in reel_core::testing::golden::format_keys() {
        for case in cases(&format_key) {
            if case.is_corrupt() {
                continue;
            }
            let label = format!("{format_key}/{}", case.name);
            let stem = label.replace('/', "_");
            let source: std::sync::Arc<dyn RecordSource> = match open_case(&format_key, &case) {
                Ok((_, s)) => s.into(),
                Err(e) => {
                    // A dataset reel cannot open (e.g. bags' zero-record directory without
                    // spec.json, which the reference cannot open either) converts to nothing.
                    let out = tmp.path().join(format!("{stem}.refused.parquet"));
                    let err = reel::convert::convert(
                        &case.dir,
                        &out,
                        &ConvertOptions::new(Format::Parquet),
                    )
                    .expect_err(&format!("{label}: an unopenable dataset converted"));
                    assert!(!out.exists(), "{label}: {err}: a failed conversion left a file");
                    eprintln!("{label}: not opened ({e}), conversion refused");
                    refused += 1;
                    continue;
                }
            };
            let originals: reel::Result<Vec<Record>> = source.iter().collect();
            let originals = match originals {
                Ok(r) => r,
                Err(e) => {
                    // A quirk case reel refuses to read must be refused by the conversion too.
                    let out = tmp.path().join(format!("{stem}.refused.parquet"));
                    let err = reel::arrow::write_parquet(&*source, &out, &WriteOptions::default())
                        .expect_err(&format!("{label}: unreadable records converted"));
                    assert_eq!(err.kind(), e.kind(), "{label}");
                    assert!(!out.exists(), "{label}: a failed write left a file");
                    refused += 1;
                    continue;
                }
            };
            assert_eq!(originals.len() as u64, manifest_count(&case), "{label}: record count");

            // Source → Parquet through the batch reader.
            let pq = tmp.path().join(format!("{stem}.parquet"));
            let summary = reel::arrow::write_parquet(&*source, &pq, &WriteOptions::default())
                .unwrap_or_else(|e| panic!("{label}: to parquet: {e}"));
            assert_eq!(summary.records, originals.len() as u64, "{label}");

            // The parquet crate's own reader sees every row.
            let file = std::fs::File::open(&pq).unwrap();
            let reader = ParquetRecordBatchReaderBuilder::try_new(file).unwrap().build().unwrap();
            let rows: usize = reader.map(|b| b.unwrap().num_rows()).sum();
            assert_eq!(rows as u64, manifest_count(&case), "{label}: parquet rows");

            // Every record reads back as it was.
            let back = ArrowFileSource::open(&pq, &ReadOptions::default())
                .unwrap_or_else(|e| panic!("{label}: open parquet: {e}"));
            assert_eq!(back.len(), originals.len() as u64, "{label}");
            for (i, want) in originals.iter().enumerate() {
                let got = back.read(i as u64).unwrap_or_else(|e| panic!("{label} #{i}: {e}"));
                assert_eq!(got, without_null_fields(want.view()), "{label} #{i}");
                check_against_manifest(&format_key, &case, i, &got);
            }

            // Source → Arrow IPC through `convert` (the sink path), opened by sniffing.
            let ipc = tmp.path().join(format!("{stem}.arrow"));
            let opts = ConvertOptions::new(Format::ArrowIpc);
            let report = reel::convert::convert_source(source.clone(), &ipc, &opts, &mut |_, _| {})
                .unwrap_or_else(|e| panic!("{label}: to arrow: {e}"));
            let has_nulls =
                originals.iter().any(|r| r.iter().any(|(_, v)| matches!(v, ValueRef::Null)));
            assert_eq!(!report.losses.is_empty(), has_nulls, "{label}: {:?}", report.losses);
            let back = reel::open(&ipc).unwrap();
            assert_eq!(back.info().format, "arrow");
            let batch = back.read_batch(&(0..back.len()).rev().collect::<Vec<_>>()).unwrap();
            assert_eq!(batch.len(), originals.len(), "{label}");
            for (got, want) in batch.iter().zip(originals.iter().rev()) {
                assert_eq!(
                    got,
                    without_null_fields(want.view()).view(),
                    "{label} #{}",
                    got.index()
                );
            }
            converted += 1;
        }
    }
    assert!(converted >= 30, "only {converted} golden cases converted");
    println!(
        "arrow golden: {converted} datasets through Parquet and Arrow IPC, {refused} refused alike"
    );
}

/// The raw byte strings of a value (bytes, text, array data, inside lists and maps too).
fn leaves<'a>(value: ValueRef<'a>, out: &mut Vec<&'a [u8]>) {
    match value {
        ValueRef::Bytes(b) => out.push(b),
        ValueRef::Str(s) => out.push(s.as_bytes()),
        ValueRef::Array(a) => out.push(a.data),
        ValueRef::List(l) => l.iter().for_each(|v| leaves(v, out)),
        ValueRef::Map(m) => m.iter().for_each(|(_, v)| leaves(v, out)),
        _ => {}
    }
}

/// `_index`, `_file`, `_offset` and `_length` of every golden dataset of every format,
/// written by the batch reader (`write_parquet`) and by `convert` (the sink path, as `reel
/// convert --with-index --with-location`) alike: each row names the file its record's first
/// byte range is in, and a range of it that exists and holds the record's stored bytes
/// (FFRecord: exactly its bytes; the other formats: at least one of the record's raw values,
/// a frame, an array, a feature's bytes, a column's value). A record stored in no byte range
/// (a video without frames, an item without arrays) has null cells.
#[test]
fn location_columns_point_at_each_records_bytes_in_every_format() {
    let tmp = tempfile::tempdir().unwrap();
    let mut options = WriteOptions::default();
    options.arrow.extra.index = true;
    options.arrow.extra.location = true;
    let mut checked_formats = std::collections::BTreeSet::new();
    let mut located = 0;
    for format_key in reel_core::testing::golden::format_keys() {
        for case in cases(&format_key) {
            if case.is_corrupt() {
                continue;
            }
            let label = format!("{format_key}/{}", case.name);
            let Ok((_, source)) = open_case(&format_key, &case) else { continue };
            let source: std::sync::Arc<dyn RecordSource> = source.into();
            let Ok(originals) = source.iter().collect::<reel::Result<Vec<Record>>>() else {
                continue;
            };
            let stem = label.replace('/', "_");
            let by_reader = tmp.path().join(format!("{stem}.located.parquet"));
            reel::arrow::write_parquet(&*source, &by_reader, &options)
                .unwrap_or_else(|e| panic!("{label}: {e}"));
            let by_convert = tmp.path().join(format!("{stem}.converted.parquet"));
            let mut convert = ConvertOptions::new(Format::Parquet);
            convert.arrow = options.clone();
            reel::convert::convert_source(source.clone(), &by_convert, &convert, &mut |_, _| {})
                .unwrap_or_else(|e| panic!("{label}: convert: {e}"));
            let rows = ArrowFileSource::open(&by_reader, &ReadOptions::default()).unwrap();
            let converted = ArrowFileSource::open(&by_convert, &ReadOptions::default()).unwrap();
            assert_eq!(rows.len(), originals.len() as u64, "{label}");
            let mut ranges = Vec::new();
            for (i, want) in originals.iter().enumerate() {
                let row = rows.read(i as u64).unwrap();
                let other = converted.read(i as u64).unwrap();
                let columns = ["_index", "_file", "_offset", "_length"];
                for c in columns {
                    assert_eq!(row.get(c), other.get(c), "{label} #{i} {c}: reader vs convert");
                }
                assert_eq!(row.get("_index").and_then(|v| v.as_u64()), Some(i as u64), "{label}");
                ranges.clear();
                assert!(source.locate(i as u64, &mut ranges).unwrap(), "{label}: locate");
                let Some(file) = row.get("_file").and_then(|v| v.as_str()) else {
                    assert!(ranges.is_empty(), "{label} #{i}: a stored record has no _file");
                    assert!(row.get("_offset").is_none() && row.get("_length").is_none());
                    continue;
                };
                let offset = row.get("_offset").and_then(|v| v.as_u64()).unwrap();
                let len = row.get("_length").and_then(|v| v.as_u64()).unwrap();
                let bytes = std::fs::read(file).unwrap_or_else(|e| panic!("{label}: {file}: {e}"));
                assert!(
                    Path::new(file).starts_with(&case.dir),
                    "{label}: {file} is outside the dataset"
                );
                let end = offset.checked_add(len).unwrap();
                assert!(end <= bytes.len() as u64, "{label} #{i}: {offset}+{len} past the file");
                let stored = &bytes[offset as usize..end as usize];
                if format_key == "ffrecord" {
                    assert_eq!(
                        Some(stored),
                        want.bytes("data"),
                        "{label} #{i}: the record's bytes"
                    );
                }
                if format_key == "ofrecord" {
                    // The payload of a frame, right after its 8-byte length.
                    let at = offset as usize;
                    let prefix: [u8; 8] = bytes[at - 8..at].try_into().unwrap();
                    assert_eq!(u64::from_le_bytes(prefix), len, "{label} #{i}: frame length");
                }
                let mut raw = Vec::new();
                if format_key.starts_with("granular") {
                    // A datapoint is one record per key, each in the key's own `<key>.bag`:
                    // the location is the first key's, its stored value (raw for bytes and
                    // utf8 columns).
                    let key = Path::new(file).file_stem().and_then(|s| s.to_str()).unwrap();
                    let value = want.get(key);
                    assert!(value.is_some(), "{label} #{i}: {file} is no key's file");
                    if let Some(v) =
                        value.and_then(|v| v.as_bytes().or(v.as_str().map(str::as_bytes)))
                    {
                        assert_eq!(stored, v, "{label} #{i} {key}");
                    }
                    located += 1;
                    checked_formats.insert("granular".to_string());
                    continue;
                }
                want.iter().for_each(|(_, v)| leaves(v, &mut raw));
                // Long enough to be found by chance nowhere else; OFRecord's int lists are
                // varints, not their raw values.
                raw.retain(|l| l.len() >= 4);
                if format_key == "ofrecord" {
                    raw.retain(|l| !want.iter().any(|(_, v)| matches!(v, ValueRef::Array(a) if a.data == *l && a.dtype == reel::DType::I64)));
                }
                let found = raw.iter().any(|l| stored.windows(l.len()).any(|w| w == *l));
                assert!(
                    raw.is_empty() || found,
                    "{label} #{i}: none of the record's values is in {file} at {offset}+{len}"
                );
                located += 1;
                checked_formats.insert(format_key.split('/').next().unwrap().to_string());
            }
        }
    }
    let formats: Vec<&str> = checked_formats.iter().map(String::as_str).collect();
    assert_eq!(formats, ["ffrecord", "granular", "gulpio2", "ofrecord", "syrah"]);
    println!("location columns: {located} records located in {formats:?}");

    // Extra columns never repeat a field's name.
    let table = tmp.path().join("ffrecord_normal.located.parquet");
    let table_source = ArrowFileSource::open(&table, &ReadOptions::default()).unwrap();
    let again = tmp.path().join("again.parquet");
    let err = reel::arrow::write_parquet(&table_source, &again, &options).unwrap_err();
    assert!(err.to_string().contains("\"_index\""), "{err}");
    assert!(!again.exists());

    // A source that does not store records in byte ranges (a Parquet file) has null cells.
    let plain = tmp.path().join("plain.parquet");
    let normal = cases("ffrecord").into_iter().find(|c| c.name == "normal").unwrap();
    let (_, ffrecord) = open_case("ffrecord", &normal).unwrap();
    reel::arrow::write_parquet(&*ffrecord, &plain, &WriteOptions::default()).unwrap();
    let table_source = ArrowFileSource::open(&plain, &ReadOptions::default()).unwrap();
    reel::arrow::write_parquet(&table_source, &again, &options).unwrap();
    let back = ArrowFileSource::open(&again, &ReadOptions::default()).unwrap();
    let first = back.read(0).unwrap();
    assert_eq!(first.get("_index").and_then(|v| v.as_u64()), Some(0));
    assert!(first.get("_file").is_none() && first.get("_length").is_none(), "{first:?}");
}

/// Locating a batch of records at once gives what locating each gives, for every golden
/// dataset of every format (and with Granular's indexes left on disk, which are then read
/// once for the batch);
/// an index out of range fails the batch and leaves nothing located.
#[test]
fn locating_a_batch_gives_what_locating_each_record_gives() {
    let (mut checked, mut on_disk) = (0, 0);
    for format_key in reel_core::testing::golden::format_keys() {
        for case in cases(&format_key) {
            if case.is_corrupt() {
                continue;
            }
            let Ok((path, opened)) = open_case(&format_key, &case) else { continue };
            let label = format!("{format_key}/{}", case.name);
            let mut sources = vec![(label.clone(), opened)];
            if format_key.starts_with("granular") {
                // The index tables left on disk, read per batch.
                let options = reel::granular::GranularOptions::default().cache_index(false);
                if let Ok(r) = reel::granular::GranularReader::open_with(&path, &options) {
                    sources.push((format!("{label} (indexes on disk)"), Box::new(r)));
                    on_disk += 1;
                }
            }
            for (label, source) in sources {
                check_locate_many(&label, &*source);
                checked += 1;
            }
        }
    }
    assert!(on_disk >= 6, "only {on_disk} Granular datasets were read with indexes on disk");
    assert!(checked >= 30, "only {checked} golden datasets were checked");
}

/// `source.locate_many` against `source.locate`, record by record.
fn check_locate_many(label: &str, source: &dyn RecordSource) {
    // Every record, in an order that is not the stored one, and one twice.
    let mut indices: Vec<u64> = (0..source.len()).rev().collect();
    if let Some(&first) = indices.first() {
        indices.push(first);
    }
    let mut located = reel_core::Located::default();
    assert!(source.locate_many(&indices, &mut located).unwrap(), "{label}");
    assert_eq!(located.len(), indices.len(), "{label}");
    let mut one = Vec::new();
    for (k, &index) in indices.iter().enumerate() {
        one.clear();
        assert!(source.locate(index, &mut one).unwrap(), "{label} #{index}");
        assert_eq!(located.ranges(k).unwrap(), &one[..], "{label} #{index}");
        let each = source.location(index, &mut one).unwrap();
        assert_eq!(located.location(k, source), each, "{label} #{index}");
    }
    let past = [0, source.len()];
    assert!(source.locate_many(&past, &mut located).is_err(), "{label}");
    assert!(located.is_empty(), "{label}");
}

#[test]
fn image_columns_keep_their_declared_types_through_parquet_and_arrow() {
    // Granular's `jpg`/`png` and bags' `jpeg[]` columns hold encoded images, which the
    // references decode. Through Parquet or Arrow they became plain bytes (Arrow has no
    // such type), and back in Granular the reference returned bytes instead of images,
    // with no loss stated. The declared type now travels in the column's metadata.
    let root = reel_core::testing::golden::golden_root().join("granular");
    let tmp = tempfile::tempdir().unwrap();
    let declared = |source: &dyn RecordSource| {
        let mut fields = source.info().schema.clone().unwrap_or_default();
        fields.sort_by(|a, b| a.name.cmp(&b.name));
        // The image columns: an integer's type name changes (`i64` is Arrow's `int`).
        let image = |kind: &str| ["jpg", "jpeg", "png"].iter().any(|t| kind.starts_with(t));
        fields.retain(|f| image(&f.kind));
        fields.into_iter().map(|f| format!("{}: {}", f.name, f.kind)).collect::<Vec<_>>()
    };
    for (case, back_to) in
        [("granular-0.24.2/images", Format::Granular), ("bags-0.5.1/images", Format::Bags)]
    {
        let src = root.join(case);
        let want = declared(&*reel::open(&src).unwrap());
        assert!(want.len() >= 2, "{case}: {want:?}");
        for (to, name) in [(Format::Parquet, "t.parquet"), (Format::ArrowIpc, "t.arrow")] {
            let table = tmp.path().join(format!("{}-{name}", back_to.name()));
            let mut options = ConvertOptions::new(to);
            options.lossless_only = true;
            reel::convert(&src, &table, &options).unwrap();
            let back = tmp.path().join(format!("{}-back-{name}", back_to.name()));
            reel::convert(&table, &back, &ConvertOptions::new(back_to)).unwrap();
            let reopened = reel::open(&back).unwrap();
            assert_eq!(declared(&*reopened), want, "{case} through {to}");
            for i in 0..reopened.len() {
                let src_record = reel::open(&src).unwrap().read(i).unwrap();
                assert_eq!(reopened.read(i).unwrap(), src_record, "{case} through {to} #{i}");
            }
        }
    }
}
