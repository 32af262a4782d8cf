//! The library as a user meets it (issue 25): errors from every entry point, writers'
//! shared shape, and the warning an unfinished writer leaves.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::sync::Mutex;

use reel::prelude::*;
use reel::{ffrecord, granular, gulp, ofrecord, syrah};

/// Every reader entry point, by the format prefix its errors must carry.
fn open_everything(path: &Path) -> Vec<(&'static str, reel::Result<()>)> {
    vec![
        ("ffrecord", ffrecord::FfrecordReader::open(path).map(drop)),
        ("ffrecord", ffrecord::PackedFolder::open(path).map(drop)),
        ("syrah", syrah::SyrahReader::open(path).map(drop)),
        ("ofrecord", ofrecord::OfrecordReader::open(path).map(drop)),
        ("ofrecord", ofrecord::OfrecordStream::open(path, &Default::default()).map(drop)),
        ("granular", granular::GranularReader::open(path).map(drop)),
        ("granular", granular::BagReader::open(path).map(drop)),
        ("gulp", gulp::GulpReader::open(path).map(drop)),
        ("ffrecord", reel::open_as(path, Format::Ffrecord, &OpenOptions::default()).map(drop)),
        ("syrah", reel::open_as(path, Format::Syrah, &OpenOptions::default()).map(drop)),
        ("ofrecord", reel::open_as(path, Format::Ofrecord, &OpenOptions::default()).map(drop)),
        ("granular", reel::open_as(path, Format::Granular, &OpenOptions::default()).map(drop)),
        ("gulp", reel::open_as(path, Format::Gulp, &OpenOptions::default()).map(drop)),
    ]
}

#[test]
fn a_missing_file_is_not_found_from_every_entry_point() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("no-such-dataset");
    let wrong: Vec<String> = open_everything(&missing)
        .into_iter()
        .enumerate()
        .filter_map(|(k, (format, result))| match result {
            Err(e) if e.kind() == ErrorKind::NotFound && e.format() == Some(format) => None,
            other => Some(format!("entry point {k} ({format}): {other:?}")),
        })
        .collect();
    assert!(wrong.is_empty(), "{wrong:#?}");
    for (format, result) in open_everything(&missing) {
        let e = result.expect_err(format);
        assert!(e.to_string().starts_with(&format!("{format}: ")), "{e}");
        // The OS message is in the text once and not repeated as the source.
        assert!(std::error::Error::source(&e).is_none(), "{format}: {e:?}");
        let debug = format!("{e:?}").to_lowercase();
        let once = |what: &str| debug.matches(what).count() <= 1;
        assert!(once("no such file") && once("os error"), "{debug}");
    }
    let e = reel::open(&missing).map(drop).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
}

#[test]
fn errors_about_a_file_that_is_not_ffrecord_say_so_before_limits() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("text.ffr");
    std::fs::write(&path, b"this is plain text, long enough to have a header").unwrap();
    let e = ffrecord::FfrecordReader::open(&path).map(drop).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Corrupt, "{e}");
    assert!(e.to_string().starts_with("ffrecord: "), "{e}");
    assert!(e.message().starts_with("not an FFRecord file ("), "{e}");
}

/// A record no writer of the format can take, and the index it was to get.
fn refused_after_one(sink: &mut dyn RecordSink, good: &Record, bad: &Record, format: &str) {
    assert_eq!(sink.append_ref(good.view()).unwrap(), 0);
    assert_eq!(sink.records(), 1);
    let e = sink.append_ref(bad.view()).unwrap_err();
    assert_eq!(e.record(), Some(1), "{format}: {e}");
    assert_eq!(e.format(), Some(format), "{e}");
    assert!(e.to_string().contains("record 1"), "{e}");
}

#[test]
fn sink_errors_name_the_record_and_the_format() {
    let tmp = tempfile::tempdir().unwrap();
    let t = |name: &str| tmp.path().join(name);
    let raw = Record::from_bytes(b"ok");
    let two_fields = Record::new().with_int("a", 1).with_str("b", "x");
    let mut array = Record::new();
    array.push_array("x", DType::I32, &[1], &1i32.to_le_bytes()).unwrap();
    let floats = Record::new().with_value("x", ValueRef::Float(1.5));

    let mut w = ffrecord::FfrecordWriter::create_counted(t("a.ffr")).unwrap();
    refused_after_one(&mut w, &raw, &two_fields, "ffrecord");
    let mut w = syrah::SyrahWriter::create(t("a.syr")).unwrap();
    refused_after_one(&mut w, &array, &floats, "syrah");
    let mut w = ofrecord::OfrecordWriter::create(t("of")).unwrap();
    refused_after_one(
        &mut w,
        &array,
        &Record::new().with_value("y", ValueRef::Bool(true)),
        "ofrecord",
    );
    let spec = granular::GranularSpec::new().with("a", "int").with("b", "utf8");
    let mut w = granular::GranularWriter::create(t("gr"), &spec).unwrap();
    refused_after_one(&mut w, &two_fields, &raw, "granular");
    let mut w = gulp::GulpWriter::create(t("gu"), &Default::default()).unwrap();
    let video =
        Record::new().with_str("id", "v0").with_value("frames", empty_list().get("l").unwrap());
    refused_after_one(&mut w, &video, &raw, "gulp");
}

fn empty_list() -> Record {
    let mut r = Record::new();
    r.push("l", reel::Value::List(Vec::new()));
    r
}

/// Collects the `log` records of this test binary (the logger is process-wide).
struct Captured(Mutex<Vec<String>>);

impl log::Log for Captured {
    fn enabled(&self, m: &log::Metadata<'_>) -> bool {
        m.level() <= log::Level::Warn
    }
    fn log(&self, r: &log::Record<'_>) {
        if let Ok(mut v) = self.0.lock() {
            v.push(format!("{} {}", r.level(), r.args()));
        }
    }
    fn flush(&self) {}
}

static LOGGER: Captured = Captured(Mutex::new(Vec::new()));

fn warnings_while(work: impl FnOnce(&Path)) -> Vec<String> {
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let _ = log::set_logger(&LOGGER);
    log::set_max_level(log::LevelFilter::Warn);
    LOGGER.0.lock().unwrap().clear();
    let tmp = tempfile::tempdir().unwrap();
    work(tmp.path());
    // Other tests of this binary drop writers too: keep what is about this one's files.
    let mine = tmp.path().display().to_string();
    let all = std::mem::take(&mut *LOGGER.0.lock().unwrap());
    all.into_iter().filter(|w| w.contains(&mine)).collect()
}

type Create = Box<dyn Fn(&Path) -> Box<dyn RecordSink>>;

#[test]
fn dropping_an_unfinished_writer_warns_once() {
    let raw = Record::from_bytes(b"x");
    let row = Record::new().with_int("a", 1);
    let spec = || granular::GranularSpec::new().with("a", "int");
    // (format, writer, a record it takes, how many it needs to finish)
    let cases: Vec<(&str, Create, &Record, u64)> = vec![
        (
            "ffrecord",
            Box::new(|d| Box::new(ffrecord::FfrecordWriter::create(d.join("a"), 3).unwrap())),
            &raw,
            3,
        ),
        (
            "ffrecord",
            Box::new(|d| {
                Box::new(ffrecord::FfrecordPartsWriter::create(d.join("a"), 4, 2).unwrap())
            }),
            &raw,
            4,
        ),
        (
            "ofrecord",
            Box::new(|d| Box::new(ofrecord::OfrecordWriter::create(d.join("a")).unwrap())),
            &raw,
            1,
        ),
        (
            "granular",
            Box::new(move |d| {
                Box::new(granular::GranularWriter::create(d.join("a"), &spec()).unwrap())
            }),
            &row,
            1,
        ),
        (
            "granular",
            Box::new(move |d| {
                let options = granular::ShardedWriterOptions::default().shard_len(1);
                Box::new(granular::ShardedWriter::create(d.join("a"), &spec(), &options).unwrap())
            }),
            &row,
            2,
        ),
        (
            "gulp",
            Box::new(|d| {
                Box::new(gulp::GulpWriter::create(d.join("a"), &Default::default()).unwrap())
            }),
            &raw,
            0,
        ),
    ];
    for (format, create, record, need) in &cases {
        let dropped = warnings_while(|d| {
            let mut w = create(d);
            for _ in 0..(*need).min(2) {
                w.append(*record).unwrap();
            }
            drop(w);
        });
        assert_eq!(dropped.len(), 1, "{format}: {dropped:?}");
        assert!(dropped[0].starts_with(&format!("WARN {format}: ")), "{dropped:?}");
        assert!(dropped[0].contains("without finish()"), "{dropped:?}");

        let finished = warnings_while(|d| {
            let mut w = create(d);
            for _ in 0..*need {
                w.append(*record).unwrap();
            }
            w.finish().unwrap();
        });
        assert!(finished.is_empty(), "{format}: {finished:?}");
    }
    let syrah = warnings_while(|d| drop(syrah::SyrahWriter::create(d.join("a")).unwrap()));
    assert_eq!(syrah.len(), 1, "{syrah:?}");

    // The writers that are not sinks: a Gulp chunk and a single-file bag. (A two-file
    // BagWriter has no finish and writes what it holds when dropped: no warning.)
    let bag = |d: &Path| {
        let mut w =
            granular::SingleFileBagWriter::create(d.join("a.bag"), granular::BagKind::SingleV2)
                .unwrap();
        w.append(b"x").unwrap();
        w
    };
    let dropped = warnings_while(|d| drop(bag(d)));
    assert_eq!(dropped.len(), 1, "{dropped:?}");
    assert!(dropped[0].starts_with("WARN granular: "), "{dropped:?}");
    assert!(
        warnings_while(|d| {
            bag(d).finish().unwrap();
        })
        .is_empty()
    );
    let chunk = |d: &Path| {
        let mut w = gulp::GulpChunkWriter::create(d, 0, &Default::default()).unwrap();
        w.append_meta("v", gulp::JsonValue::object([("label", gulp::JsonValue::from(1))])).unwrap();
        w
    };
    let dropped = warnings_while(|d| drop(chunk(d)));
    assert_eq!(dropped.len(), 1, "{dropped:?}");
    assert!(dropped[0].starts_with("WARN gulp: "), "{dropped:?}");
    assert!(
        warnings_while(|d| {
            chunk(d).finish().unwrap();
        })
        .is_empty()
    );
    // A Gulp directory writer's chunks leave the warning to it: one, not one per chunk.
    let dir = warnings_while(|d| {
        let mut w = gulp::GulpWriter::create(d.join("g"), &Default::default()).unwrap();
        w.write_video("v", gulp::JsonValue::object([("label", gulp::JsonValue::from(1))]), &[])
            .unwrap();
        drop(w);
    });
    assert_eq!(dir.len(), 1, "{dir:?}");
}

#[test]
fn create_options_carry_ofrecord_encoding() {
    let tmp = tempfile::tempdir().unwrap();
    let mut record = Record::new();
    record.push_array("pixels", DType::U8, &[3], &[1, 2, 250]).unwrap();
    // Without widening, the refusal says where the option is.
    let mut sink =
        reel::create(tmp.path().join("plain"), Format::Ofrecord, &CreateOptions::default())
            .unwrap();
    let e = sink.append(&record).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Schema, "{e}");
    assert!(e.message().contains("CreateOptions::ofrecord"), "{e}");
    drop(sink);
    let encode = ofrecord::EncodeOptions { widen_numbers: true, ..Default::default() };
    let options = CreateOptions::default()
        .ofrecord(ofrecord::OfrecordWriterOptions::default().encode(encode));
    let path = tmp.path().join("widened");
    let mut sink = reel::create(&path, Format::Ofrecord, &options).unwrap();
    sink.append(&record).unwrap();
    sink.finish().unwrap();
    let back = reel::open(&path).unwrap().read(0).unwrap();
    let pixels = back.get("pixels").and_then(|v| v.as_array()).expect("an array");
    assert_eq!(pixels.to_vec::<i32>().unwrap(), [1, 2, 250]);
    // A conversion states the widening as a loss by itself; its OFRecord options carry the
    // part rolling to the writer.
    let src = tmp.path().join("src.syr");
    let mut w = syrah::SyrahWriter::create(&src).unwrap();
    for _ in 0..3 {
        w.append(&record).unwrap();
    }
    w.finish().unwrap();
    let mut convert = ConvertOptions::new(Format::Ofrecord);
    convert.ofrecord =
        ofrecord::OfrecordWriterOptions { max_records_per_part: Some(1), ..Default::default() };
    let out = tmp.path().join("c");
    let report = reel::convert(&src, &out, &convert).unwrap();
    assert!(report.losses.iter().any(|l| l.what.contains("widened")), "{report:?}");
    let mut parts: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    parts.sort();
    assert_eq!(parts, ["part-00000", "part-00001", "part-00002"]);
    assert_eq!(reel::open(&out).unwrap().len(), 3);
}

/// Overwriting replaces a dataset, never a directory of other things: `--force` with a
/// mistyped destination deleted it whole. An empty directory, and a dataset written before,
/// are replaced.
#[test]
fn overwriting_replaces_datasets_not_other_directories() {
    let dir = tempfile::tempdir().unwrap();
    let write = |path: &Path| -> reel::Result<()> {
        let options = reel::CreateOptions::default().overwrite(true);
        let mut sink = reel::create(path, reel::Format::Ffrecord, &options)?;
        sink.append(Record::new().push_bytes("data", b"x").view())?;
        sink.finish().map(|_| ())
    };
    let project = dir.path().join("project");
    std::fs::create_dir(&project).unwrap();
    std::fs::write(project.join("notes.txt"), b"keep me").unwrap();
    let e = write(&project).unwrap_err();
    assert_eq!(e.kind(), reel::ErrorKind::InvalidInput, "{e}");
    assert!(e.to_string().contains("holds something other than a dataset"), "{e}");
    assert_eq!(std::fs::read(project.join("notes.txt")).unwrap(), b"keep me");

    // One file of the format beside others is not a dataset of it either.
    std::fs::copy(dir.path().join("project/notes.txt"), project.join("x.ffr")).unwrap();
    let e = write(&project).unwrap_err();
    assert!(e.to_string().contains("holds something other than a dataset"), "{e}");
    assert_eq!(std::fs::read(project.join("notes.txt")).unwrap(), b"keep me");

    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    write(&empty).unwrap();
    write(&empty).unwrap(); // now a dataset: replaced again
    assert_eq!(reel::open(&empty).unwrap().len(), 1);

    // A directory of Parquet parts (what `reel::parts` publishes) is a dataset to replace.
    let parts = dir.path().join("parts");
    std::fs::create_dir(&parts).unwrap();
    for k in 0..2 {
        let part = parts.join(format!("part-0000{k}.parquet"));
        reel::convert(&empty, &part, &reel::ConvertOptions::new(reel::Format::Parquet)).unwrap();
    }
    write(&parts).unwrap();
    assert_eq!(reel::open(&parts).unwrap().len(), 1);
}

/// A Granular dataset whose key `s` holds text that is no longer UTF-8 (its last byte
/// replaced), beside an intact key `k`.
fn granular_with_a_damaged_key(dir: &Path) {
    let spec = granular::GranularSpec::new().with("k", "int").with("s", "utf8");
    let mut w = granular::GranularWriter::create(dir, &spec).unwrap();
    for i in 0..4i64 {
        w.append(Record::new().with_int("k", i).with_str("s", "text").view()).unwrap();
    }
    w.finish().unwrap();
    let bag = dir.join("s.bag");
    let mut bytes = std::fs::read(&bag).unwrap();
    let last = bytes.len() - 1;
    bytes[last] = 0xff;
    std::fs::write(&bag, bytes).unwrap();
}

/// `OpenOptions::columns` on a Granular dataset reads only the keys named, so a damaged key
/// left out does not fail the read or a conversion that drops it (`FieldMap`, pushed down
/// into the open); a lone bag's one field may be named but not left out; formats without
/// separately stored fields refuse a selection.
#[test]
fn a_column_selection_reads_only_the_granular_keys_named() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("ds");
    granular_with_a_damaged_key(&dir);
    assert!(reel::open(&dir).unwrap().read_batch(&[0, 1, 2, 3]).is_err());
    for options in
        [OpenOptions::default().columns(["k"]), OpenOptions::default().skip_columns(["s"])]
    {
        let ds = reel::open_with(&dir, &options).unwrap();
        let names: Vec<&str> =
            ds.info().schema.as_ref().unwrap().iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["k"]);
        let batch = ds.read_batch(&[3, 1]).unwrap();
        assert_eq!(batch.get(0).unwrap().get("k").and_then(|v| v.as_i64()), Some(3));
        assert_eq!(batch.get(1).unwrap().iter().count(), 1);
    }
    let e = reel::open_with(&dir, &OpenOptions::default().columns(["k", "x"])).err().unwrap();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    assert!(e.to_string().contains("\"x\""), "{e}");

    // A conversion that keeps `k` never reads `s`; one that keeps both fails on it.
    let keep = |names: &[&str]| {
        let mut options = reel::ConvertOptions::new(Format::Granular);
        options.fields.keep = Some(names.iter().map(|n| n.to_string()).collect());
        options
    };
    reel::convert(&dir, tmp.path().join("k-only"), &keep(&["k"])).unwrap();
    let out = reel::open(tmp.path().join("k-only")).unwrap();
    assert_eq!(out.read(2).unwrap().get("k").and_then(|v| v.as_i64()), Some(2));
    assert!(reel::convert(&dir, tmp.path().join("both"), &keep(&["s", "k"])).is_err());

    // The order `--fields` names survives the push-down, though Granular reads spec order.
    let good = tmp.path().join("good");
    let spec = granular::GranularSpec::new().with("a", "int").with("b", "int").with("c", "int");
    let mut w = granular::GranularWriter::create(&good, &spec).unwrap();
    w.append(Record::new().with_int("a", 1).with_int("b", 2).with_int("c", 3).view()).unwrap();
    w.finish().unwrap();
    // (Into Parquet, which keeps the order written: Granular writers sort their keys.)
    let mut to_parquet = keep(&["c", "b"]);
    to_parquet.to = Format::Parquet;
    reel::convert(&good, tmp.path().join("cb.parquet"), &to_parquet).unwrap();
    let cb = reel::open(tmp.path().join("cb.parquet")).unwrap();
    let names: Vec<String> = cb.read(0).unwrap().iter().map(|(k, _)| k.to_string()).collect();
    assert_eq!(names, ["c", "b"]);

    // A lone bag: its field is `data`.
    let bag = tmp.path().join("one.bag");
    let mut w = granular::SingleFileBagWriter::create(&bag, granular::BagKind::SingleV2).unwrap();
    w.append(b"payload").unwrap();
    w.finish().unwrap();
    let ds = reel::open_with(&bag, &OpenOptions::default().columns(["data"])).unwrap();
    assert_eq!(ds.read(0).unwrap().bytes("data"), Some(&b"payload"[..]));
    for options in [
        OpenOptions::default().columns(["other"]),
        OpenOptions::default().skip_columns(["data"]),
        OpenOptions::default().columns(Vec::<String>::new()),
    ] {
        let e = reel::open_with(&bag, &options).err().unwrap();
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
        assert!(e.to_string().contains("lone bag"), "{e}");
    }

    // FFRecord has no fields stored apart.
    let ffr = tmp.path().join("a.ffr");
    let mut w = ffrecord::FfrecordWriter::create_counted(&ffr).unwrap();
    w.append(Record::new().with_bytes("data", b"x").view()).unwrap();
    w.finish().unwrap();
    let e = reel::open_with(&ffr, &OpenOptions::default().columns(["data"])).err().unwrap();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
}

/// Conversions: a field named twice by `--fields`, or both kept and dropped, is refused
/// saying so (the messages spoke of renaming, or of a field the record lacks); a record
/// whose fields are already in sorted order loses no order going to Granular, and one
/// whose fields are not is told it does.
#[test]
fn field_selections_that_contradict_themselves_and_the_sorted_order_loss() {
    let tmp = tempfile::tempdir().unwrap();
    let sorted = tmp.path().join("sorted");
    let spec = granular::GranularSpec::new().with("a", "int").with("b", "int");
    let mut w = granular::GranularWriter::create(&sorted, &spec).unwrap();
    w.append(Record::new().with_int("a", 1).with_int("b", 2).view()).unwrap();
    w.finish().unwrap();

    let mut twice = reel::ConvertOptions::new(Format::Granular);
    twice.fields.keep = Some(vec!["a".into(), "a".into()]);
    let e = reel::convert(&sorted, tmp.path().join("x"), &twice).unwrap_err();
    assert!(e.to_string().contains("names \"a\" twice"), "{e}");
    let mut both = reel::ConvertOptions::new(Format::Granular);
    both.fields.keep = Some(vec!["a".into()]);
    both.fields.drop = vec!["a".into()];
    let e = reel::convert(&sorted, tmp.path().join("y"), &both).unwrap_err();
    assert!(e.to_string().contains("--drop leaves it out"), "{e}");

    let order_loss = |report: &reel::ConvertReport| {
        report.losses.iter().any(|l| l.what.contains("sorted name order"))
    };
    let report = reel::convert(
        &sorted,
        tmp.path().join("copy"),
        &reel::ConvertOptions::new(Format::Granular),
    )
    .unwrap();
    assert!(!order_loss(&report), "{:?}", report.losses);
    // b before a (Parquet keeps the order written): the order is lost, and said so.
    let mut reversed = reel::ConvertOptions::new(Format::Parquet);
    reversed.fields.keep = Some(vec!["b".into(), "a".into()]);
    reel::convert(&sorted, tmp.path().join("ba.parquet"), &reversed).unwrap();
    let report = reel::convert(
        tmp.path().join("ba.parquet"),
        tmp.path().join("again"),
        &reel::ConvertOptions::new(Format::Granular),
    )
    .unwrap();
    assert!(order_loss(&report), "{:?}", report.losses);
}

#[test]
fn long_operations_stop_when_their_cancel_flag_is_raised_and_leave_nothing() {
    use reel::io::cancel::CancelFlag;
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src.ffr");
    let options = CreateOptions::default();
    reel::synth::generate(&src, Format::Ffrecord, 2000, 512, &options, &mut |_| {}).unwrap();
    let raised = CancelFlag::new();
    raised.cancel();
    let closed = |what: &str, r: reel::Result<()>| {
        let e = r.expect_err(what);
        assert_eq!(e.kind(), ErrorKind::Closed, "{what}: {e}");
        assert!(e.to_string().contains("cancelled"), "{what}: {e}");
    };
    // A conversion to a file (staged file) and to a directory (staged directory).
    for to in [Format::Syrah, Format::Granular, Format::Parquet] {
        let out = dir.path().join(format!("out-{to}"));
        let converted = raised.scope(|| reel::convert(&src, &out, &ConvertOptions::new(to)));
        closed(&format!("convert to {to}"), converted.map(drop));
    }
    let generated = raised.scope(|| {
        reel::synth::generate(
            dir.path().join("gen"),
            Format::Granular,
            500,
            64,
            &options,
            &mut |_| {},
        )
    });
    closed("generate", generated.map(drop));
    closed("verify", raised.scope(|| reel::verify(&src, &OpenOptions::default())).map(drop));
    let folder = dir.path().join("folder");
    std::fs::create_dir(&folder).unwrap();
    std::fs::write(folder.join("a.txt"), b"a").unwrap();
    let packed = raised.scope(|| ffrecord::pack_folder(&folder, dir.path().join("packed.ffr")));
    closed("pack_folder", packed.map(drop));
    assert_eq!(reel_core::testing::names_in(dir.path()), ["folder", "src.ffr"], "left behind");
    // A flag not raised changes nothing.
    let calm = CancelFlag::new();
    let out = dir.path().join("out.syr");
    let report = calm.scope(|| reel::convert(&src, &out, &ConvertOptions::new(Format::Syrah)));
    assert_eq!(report.unwrap().records, 2000);
}

/// A `file://` URL names the local path for writing as for reading: `create`, `convert`
/// and `synth::generate` wrote to a directory named `file:` (which then failed).
#[test]
fn file_urls_are_local_paths_for_writers_too() {
    let dir = tempfile::tempdir().unwrap();
    let url = |name: &str| format!("file://{}/{name}", dir.path().display());
    let mut sink =
        reel::create(url("a.ffr"), reel::Format::Ffrecord, &reel::CreateOptions::default())
            .unwrap();
    sink.append_ref(Record::new().with_bytes("data", b"x").view()).unwrap();
    sink.finish().unwrap();
    assert!(dir.path().join("a.ffr").is_file());
    let options = reel::ConvertOptions::new(reel::Format::Syrah);
    reel::convert(url("a.ffr"), url("b.syr"), &options).unwrap();
    assert_eq!(reel::open(dir.path().join("b.syr")).unwrap().len(), 1);
    let options = reel::CreateOptions::default();
    reel::synth::generate(url("c.ofr"), reel::Format::Ofrecord, 3, 10, &options, &mut |_| {})
        .unwrap();
    assert_eq!(reel::open(url("c.ofr")).unwrap().len(), 3);
    assert!(!Path::new("file:").exists());
}
