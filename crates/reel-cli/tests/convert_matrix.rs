//! The convert matrix: every format and generation (FFRecord, Syrah, OFRecord, Granular
//! 0.24, bags 0.5.1, GulpIO2) to every other, from sources generated here and from the
//! golden corpus, through `reel convert`.
//!
//! Every pair either succeeds, and reel reads the output back as the same records, or is
//! refused with exit code 2 and a message naming the field that cannot be carried, leaving
//! nothing at the destination. "The same records" is exact (field order aside) where the
//! target stores every value kind (granular, bags) or is the source's own format; for the
//! other targets it allows the representation changes `reel convert` states as losses (text
//! as bytes, numbers as one-element arrays, widened dtypes, flattened shapes, a list of one
//! as its item) but never a changed value.
//!
//! `refread_matrix` (ignored: it needs the reference readers, which a fresh clone does not
//! have) converts the same pairs and checks every output with `REEL_REFREAD` — see
//! `tests/refread_matrix.sh` at the workspace root.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::Command;

use reel::granular::{GranularOptions, GranularReader};
use reel::testing::golden::{Compare, check_bytes, check_value_with, golden_root, sha256_hex};
use reel::{CreateOptions, DType, Format, Record, RecordSink, RecordSourceExt, Value, ValueRef};
use serde_json::{Value as Json, json};

/// Every target, by the name `reel convert --to` takes.
const TARGETS: [&str; 6] = ["ffrecord", "syrah", "ofrecord", "granular", "bags", "gulp"];

/// A dataset to convert from.
struct Source {
    /// Where it came from, for messages.
    label: String,
    /// Its format and generation (a `TARGETS` name).
    generation: &'static str,
    path: PathBuf,
}

/// What `reel convert` did with one pair.
enum Outcome {
    /// Exit 0; the output is at `out`.
    Converted(PathBuf),
    /// Exit 2 naming a field; the message.
    Refused(String),
}

fn write(format: Format, path: &Path, records: &[Record]) {
    let options = CreateOptions::default().records(records.len() as u64);
    let mut sink = reel::create(path, format, &options).unwrap();
    for r in records {
        sink.append(r.view()).unwrap();
    }
    sink.finish().unwrap();
}

fn le<T: Copy, const N: usize>(values: &[T], to: fn(T) -> [u8; N]) -> Vec<u8> {
    values.iter().flat_map(|v| to(*v)).collect()
}

fn ffrecord_records() -> Vec<Record> {
    (0..25u32)
        .map(|i| Record::from_bytes(&(0..i * 5).map(|k| (k * 7 + i) as u8).collect::<Vec<_>>()))
        .collect()
}

fn syrah_records() -> Vec<Record> {
    (0..20i64)
        .map(|i| {
            let mut r = Record::new();
            r.push_array("f", DType::F32, &[3], &le(&[1.5f32, -2.0, i as f32], f32::to_le_bytes))
                .unwrap();
            r.push_array("d", DType::F64, &[2], &le(&[f64::NAN, i as f64], f64::to_le_bytes))
                .unwrap();
            r.push_array("l", DType::I64, &[1], &(i - 10).to_le_bytes()).unwrap();
            r.push_array("k", DType::I32, &[0], &[]).unwrap();
            r.push_array("img", DType::U8, &[5], &[1, 2, 3, 4, i as u8]).unwrap();
            r.push_array("h", DType::F16, &[1], &[0, 0x3c]).unwrap();
            r.push_str("caption", &format!("item {i} ✓"));
            r
        })
        .collect()
}

fn ofrecord_records() -> Vec<Record> {
    (0..20u32)
        .map(|i| {
            let mut r = Record::new();
            let mut out = r.out();
            let items = (0..1 + i % 3)
                .map(|k| Value::Bytes(out.append(format!("blob {i}/{k}").as_bytes())))
                .collect();
            out.push("blobs".into(), Value::List(items));
            out.push("nothing".into(), Value::Null);
            r.push_array("x", DType::F32, &[2], &le(&[0.5f32, i as f32], f32::to_le_bytes))
                .unwrap();
            r.push_array("y", DType::I64, &[1], &(i as i64 * -3).to_le_bytes()).unwrap();
            r
        })
        .collect()
}

/// Granular 0.24 holds any value; no arrays inside lists or maps, so bags can hold it too.
fn granular_records() -> Vec<Record> {
    (0..20i64)
        .map(|i| {
            let mut r = Record::new().with_bytes("blob", &[i as u8; 3]).with_str("text", "ü");
            r.push_int("n", i * 1000 - 7000).push_float("w", i as f64 / 3.0);
            r.push_array("m", DType::I16, &[2, 2], &le(&[1i16, -2, 3, i as i16], i16::to_le_bytes))
                .unwrap();
            let mut out = r.out();
            let (k, tag) = (out.append(b"k"), out.append(format!("t{i}").as_bytes()));
            let meta = Value::Map(vec![(Value::Str(k), Value::Int(i))]);
            out.push("meta".into(), meta);
            out.push("tags".into(), Value::List(vec![Value::Str(tag), Value::Bool(i % 2 == 0)]));
            r
        })
        .collect()
}

/// bags 0.5.1's own kinds: unsigned ints, fixed-shape arrays, sequences, msgpack.
fn bags_records() -> Vec<Record> {
    (0..20u32)
        .map(|i| {
            let mut r = Record::new().with_bytes("blob", &[i as u8; 2]).with_int("n", i as i64);
            r.push_str("text", &format!("s{i}"));
            r.push_array("vec", DType::F32, &[4], &le(&[i as f32; 4], f32::to_le_bytes)).unwrap();
            let mut out = r.out();
            let words = (0..1 + i % 3)
                .map(|k| Value::Str(out.append(format!("w{k}").as_bytes())))
                .collect();
            out.push("words".into(), Value::List(words));
            let key = out.append(b"score");
            out.push("meta".into(), Value::Map(vec![(Value::Str(key), Value::Float(0.5))]));
            r
        })
        .collect()
}

fn gulp_records() -> Vec<Record> {
    let jpeg = |seed: u8| -> Vec<u8> {
        let pixels: Vec<u8> = (0..8 * 8 * 3).map(|k| (k as u8).wrapping_mul(seed)).collect();
        reel::gulp::encode_jpeg(&pixels, 8, 8, 3, 90).unwrap()
    };
    (0..10u8)
        .map(|i| {
            let mut r = Record::new();
            r.push_str("id", &format!("v{i}"));
            let mut out = r.out();
            let (k1, k2) = (out.append(b"label"), out.append(b"ratio"));
            let meta = Value::Map(vec![
                (Value::Str(k1), Value::Int(i as i64)),
                (Value::Str(k2), Value::Float(i as f64 / 3.0)),
            ]);
            out.push("meta".into(), meta);
            let frames =
                (0..1 + i % 3).map(|f| Value::Bytes(out.append(&jpeg(i * 3 + f + 1)))).collect();
            out.push("frames".into(), Value::List(frames));
            r
        })
        .collect()
}

/// One generated source per format and generation, the golden `normal` case of each, and
/// the golden Granular and bags cases with images, empty values and shards.
fn sources(dir: &Path) -> Vec<Source> {
    let generated: [(&'static str, Format, Vec<Record>, &str); 6] = [
        ("ffrecord", Format::Ffrecord, ffrecord_records(), "src.ffr"),
        ("syrah", Format::Syrah, syrah_records(), "src.syr"),
        ("ofrecord", Format::Ofrecord, ofrecord_records(), "src-ofrecord"),
        ("granular", Format::Granular, granular_records(), "src-granular"),
        ("bags", Format::Bags, bags_records(), "src-bags"),
        ("gulp", Format::Gulp, gulp_records(), "src-gulp"),
    ];
    std::fs::create_dir_all(dir).unwrap();
    let mut out = Vec::new();
    for (generation, format, records, name) in generated {
        let path = dir.join(name);
        write(format, &path, &records);
        out.push(Source { label: format!("generated {generation}"), generation, path });
    }
    let golden = golden_root();
    for (generation, case) in [
        ("ffrecord", "ffrecord/normal/data.ffr"),
        ("syrah", "syrah/normal/data.syr"),
        ("ofrecord", "ofrecord/normal"),
        ("granular", "granular/granular-0.24.2/normal"),
        ("bags", "granular/bags-0.5.1/normal"),
        ("gulp", "gulpio2/normal"),
        ("granular", "granular/granular-0.24.2/images"),
        ("bags", "granular/bags-0.5.1/images"),
        ("granular", "granular/granular-0.24.2/empty_values"),
        ("bags", "granular/bags-0.5.1/empty_values"),
        ("granular", "granular/granular-0.24.2/sharded"),
        ("bags", "granular/bags-0.5.1/sharded"),
    ] {
        out.push(Source { label: format!("golden {case}"), generation, path: golden.join(case) });
    }
    out
}

/// Runs `reel convert --to target`; panics on anything but success or a refusal naming a
/// field (exit 2) that leaves nothing behind.
fn convert(src: &Source, target: &str, out: &Path) -> Outcome {
    let run = Command::new(env!("CARGO_BIN_EXE_reel"))
        .args(["convert", "--quiet", "--to", target])
        .arg(&src.path)
        .arg(out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr).trim().to_string();
    if run.status.success() {
        return Outcome::Converted(out.to_path_buf());
    }
    let what = format!("{} -> {target}", src.label);
    assert_eq!(run.status.code(), Some(2), "{what}: {stderr}");
    let names_a_field = stderr.contains("field \"") || stderr.contains("field name \"");
    assert!(names_a_field, "{what}: refused without naming a field: {stderr}");
    assert!(!out.exists(), "{what}: a refused conversion left {}", out.display());
    Outcome::Refused(stderr)
}

/// Pairs that must convert: granular holds every value kind, every format converts to
/// itself, bags holds everything these sources hold except arrays nested in a golden
/// granular `tree` or of several dtypes in one `array` column, and single bytes fields go
/// anywhere but gulp. (The golden OFRecord
/// case has a feature named `tensor/f32`, which cannot name a Granular bag file.)
fn must_convert(src: &Source, target: &str) -> bool {
    // granular 0.24's `array` and `tree` may vary in dtype or nest arrays; bags may not.
    let free_arrays = src.label.contains("granular-0.24.2/normal")
        || src.label.contains("granular-0.24.2/empty_values");
    let path_names = src.label.contains("golden ofrecord");
    target == src.generation
        || (target == "granular" && !path_names)
        || (target == "bags" && !free_arrays && !path_names)
        || (src.generation == "ffrecord" && target != "gulp")
}

/// Pairs that cannot convert: several fields into FFRecord's one, a gulp video into formats
/// without maps, anything but a video into gulp.
fn must_refuse(src: &Source, target: &str) -> bool {
    let single_field = src.generation == "ffrecord";
    (target == "ffrecord" && !single_field)
        || (src.generation == "gulp" && matches!(target, "syrah" | "ofrecord" | "ffrecord"))
        || (target == "gulp" && src.generation != "gulp")
}

// ---- comparing records ---------------------------------------------------------------------

/// IEEE half to single precision.
fn f16_to_f32(h: u16) -> f32 {
    let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    let (exp, frac) = (i32::from((h >> 10) & 0x1f), f32::from(h & 0x3ff));
    sign * match exp {
        0 => frac * 2f32.powi(-24),
        0x1f if frac == 0.0 => f32::INFINITY,
        0x1f => f32::NAN,
        e => (1.0 + frac / 1024.0) * 2f32.powi(e - 15),
    }
}

/// The elements of an array as tagged numbers (`i:` integers, `f:` f64 bits), whatever
/// their width.
fn numbers(dtype: DType, data: &[u8]) -> Vec<String> {
    let int = |v: i128| format!("i:{v}");
    let float = |v: f64| format!("f:{:016x}", if v.is_nan() { f64::NAN } else { v }.to_bits());
    macro_rules! each {
        ($t:ty, $f:expr) => {
            data.chunks_exact(std::mem::size_of::<$t>())
                .map(|c| $f(<$t>::from_le_bytes(c.try_into().unwrap())))
                .collect()
        };
    }
    match dtype {
        DType::Bool | DType::U8 => data.iter().map(|&b| int(b.into())).collect(),
        DType::I8 => data.iter().map(|&b| int((b as i8).into())).collect(),
        DType::I16 => each!(i16, |v: i16| int(v.into())),
        DType::U16 => each!(u16, |v: u16| int(v.into())),
        DType::I32 => each!(i32, |v: i32| int(v.into())),
        DType::U32 => each!(u32, |v: u32| int(v.into())),
        DType::I64 => each!(i64, |v: i64| int(v.into())),
        DType::U64 => each!(u64, |v: u64| int(v.into())),
        DType::F16 => each!(u16, |v: u16| float(f16_to_f32(v).into())),
        DType::F32 => each!(f32, |v: f32| float(v.into())),
        DType::F64 => each!(f64, float),
        other => vec![format!("{other}:{}", sha256_hex(data))],
    }
}

/// A value in a form where two values compare equal exactly when they are the same value;
/// `loose` also equates the representations a target may choose (see the module docs).
fn canon(v: ValueRef<'_>, loose: bool) -> Json {
    let bytes = |b: &[u8]| {
        if loose { json!(numbers(DType::U8, b)) } else { json!({ "bytes": sha256_hex(b) }) }
    };
    let nums = |n: Vec<String>| if loose { json!(n) } else { json!({ "n": n }) };
    match v {
        ValueRef::Null => Json::Null,
        ValueRef::Bool(b) if loose => json!([format!("i:{}", u8::from(b))]),
        ValueRef::Bool(b) => json!(b),
        ValueRef::Int(i) => nums(vec![format!("i:{i}")]),
        ValueRef::UInt(u) => nums(vec![format!("i:{u}")]),
        ValueRef::Float(f) => nums(numbers(DType::F64, &f.to_le_bytes())),
        ValueRef::Bytes(b) => bytes(b),
        ValueRef::Str(s) if loose => bytes(s.as_bytes()),
        ValueRef::Str(s) => json!({ "str": s }),
        ValueRef::Array(a) if loose => json!(numbers(a.dtype, a.data)),
        ValueRef::Array(a) => {
            json!({ "dtype": a.dtype.name(), "shape": a.shape, "n": numbers(a.dtype, a.data) })
        }
        ValueRef::List(l) if loose && l.len() == 1 => canon(l.get(0).unwrap(), loose),
        ValueRef::List(l) => {
            json!({ "list": l.iter().map(|x| canon(x, loose)).collect::<Vec<_>>() })
        }
        ValueRef::Map(m) => {
            let mut entries: Vec<Json> =
                m.iter().map(|(k, x)| json!([canon(k, loose), canon(x, loose)])).collect();
            entries.sort_by_key(|e| e.to_string());
            json!({ "map": entries })
        }
    }
}

/// A record's fields in name order, each canonical; for FFRecord, its one value, nameless.
fn canon_record(r: &reel::RecordRef<'_>, target: &str, loose: bool) -> Json {
    if target == "ffrecord" {
        return json!(r.iter().map(|(_, v)| canon(v, loose)).collect::<Vec<_>>());
    }
    let mut fields: Vec<(String, Json)> =
        r.iter().map(|(n, v)| (n.to_string(), canon(v, loose))).collect();
    fields.sort_by(|a, b| a.0.cmp(&b.0));
    json!(fields)
}

/// Whether reel reads `out` back as the records of `src`; the first difference otherwise.
fn same_records(src: &Source, target: &str, out: &Path) -> Result<(), String> {
    let (a, b) = (reel::open(&src.path).unwrap(), reel::open(out).map_err(|e| e.to_string())?);
    if a.len() != b.len() {
        return Err(format!("{} records read back, {} written", b.len(), a.len()));
    }
    let loose = !matches!(target, "granular" | "bags") && target != src.generation;
    for i in 0..a.len() {
        let (want, got) = (a.read(i).unwrap(), b.read(i).map_err(|e| format!("record {i}: {e}"))?);
        let (want, got) =
            (canon_record(&want.view(), target, loose), canon_record(&got.view(), target, loose));
        if want != got {
            return Err(format!("record {i}: wrote {want}\nread back {got}"));
        }
    }
    Ok(())
}

/// Runs the whole matrix; `check` judges each converted output. Returns the table of
/// outcomes, one line per pair, and the number of pairs that failed `check`.
fn run_matrix(check: &dyn Fn(&Source, &str, &Path) -> Result<(), String>) -> (Vec<String>, usize) {
    let dir = tempfile::tempdir().unwrap();
    let sources = sources(&dir.path().join("sources"));
    let (mut lines, mut failed) = (Vec::new(), 0);
    for (s, src) in sources.iter().enumerate() {
        for target in TARGETS {
            let out = dir.path().join(format!("out-{s}-{target}"));
            let pair = format!("{} -> {target}", src.label);
            let line = match convert(src, target, &out) {
                Outcome::Converted(out) => {
                    assert!(!must_refuse(src, target), "{pair}: converted, but cannot be");
                    match check(src, target, &out) {
                        Ok(()) => format!("ok        {pair}"),
                        Err(e) => {
                            failed += 1;
                            format!("MISMATCH  {pair}: {e}")
                        }
                    }
                }
                Outcome::Refused(why) => {
                    assert!(!must_convert(src, target), "{pair}: refused: {why}");
                    format!("refused   {pair}: {why}")
                }
            };
            lines.push(line);
        }
    }
    (lines, failed)
}

#[test]
fn every_pair_converts_to_the_same_records_or_is_refused_naming_a_field() {
    let (lines, failed) = run_matrix(&same_records);
    let text = lines.join("\n");
    assert_eq!(failed, 0, "records changed in conversion:\n{text}");
    assert_eq!(lines.len(), 18 * TARGETS.len());
    // Both outcomes occur (a matrix that refuses everything, or nothing, is broken).
    assert!(lines.iter().filter(|l| l.starts_with("ok")).count() >= 30, "{text}");
    assert!(lines.iter().any(|l| l.starts_with("refused")), "{text}");
}

// ---- the reference readers -----------------------------------------------------------------

/// `refread`'s name for a target.
fn refread_format(target: &str) -> &str {
    if target == "gulp" { "gulpio2" } else { target }
}

/// Checks a Granular value against the reference's decoded form. Image columns (`jpg`,
/// `png`, `jpeg[]` …) are decoded by the reference and kept encoded by reel: there reel's
/// own decode (`pixels`) must give the same dtype and shape, and for lossless PNG the
/// same pixels (JPEG pixels depend on the decoder).
fn check_decoded(raw: ValueRef<'_>, pixels: ValueRef<'_>, want: &Json) -> Result<(), String> {
    let ty = want["type"].as_str();
    match (raw, pixels) {
        (ValueRef::Bytes(encoded), ValueRef::Array(a)) if ty == Some("ndarray") => {
            let jpeg = encoded.starts_with(&[0xff, 0xd8]);
            let same = want["dtype"] == json!(a.dtype.name())
                && want["shape"] == json!(a.shape)
                && (jpeg || want["sha256"] == json!(sha256_hex(a.data)));
            if same { Ok(()) } else { Err(format!("image decodes to {a:?}, the reference {want}")) }
        }
        (ValueRef::List(l), ValueRef::List(p)) if ty == Some("list") => {
            let items = want["items"].as_array().ok_or("list without items")?;
            if items.len() != l.len() || p.len() != l.len() {
                return Err(format!("{} items, the reference {}", l.len(), items.len()));
            }
            for (k, ((r, x), w)) in l.iter().zip(p.iter()).zip(items).enumerate() {
                check_decoded(r, x, w).map_err(|e| format!("[{k}]: {e}"))?;
            }
            Ok(())
        }
        _ => check_value_with(raw, want, Compare { unordered_maps: true }),
    }
}

/// Checks one field read by reel (`got`, and `pixels` with images decoded) against the
/// reference's description of it.
fn check_field(
    target: &str,
    name: &str,
    got: ValueRef<'_>,
    pixels: Option<ValueRef<'_>>,
    line: &Json,
) -> Result<(), String> {
    let unordered = Compare { unordered_maps: true };
    let what = |e: String| format!("field {name:?}: {e}");
    match target {
        "granular" | "bags" => {
            let col = &line["columns"][name];
            let want = col.get("decoded").ok_or_else(|| what(format!("reference gave {col}")))?;
            // The reference reads the very bytes reel wrote, where it shows them.
            if let (Some(stored), Some(bytes)) = (col.get("stored"), got.as_bytes()) {
                check_bytes(bytes, stored).map_err(|e| what(format!("stored bytes: {e}")))?;
            }
            check_decoded(got, pixels.unwrap_or(got), want).map_err(what)
        }
        "syrah" => {
            let d = &line["arrays"][name]["decoded"];
            match got {
                ValueRef::Str(s) if d["value"].as_str() == Some(s) => Ok(()),
                ValueRef::Array(a)
                    if d["sha256"].as_str() == Some(&sha256_hex(a.data))
                        && d["shape"] == json!([a.len()]) =>
                {
                    Ok(())
                }
                other => Err(what(format!("reel read {other:?}, the reference {d}"))),
            }
        }
        "ofrecord" => {
            let f = &line["features"][name];
            let kind = f["kind"].as_str();
            match got {
                ValueRef::Null if f["kind"].is_null() => Ok(()),
                ValueRef::List(l) if kind == Some("bytes_list") => {
                    let want = f["values"].as_array().ok_or_else(|| what(f.to_string()))?;
                    if want.len() != l.len() {
                        return Err(what(format!(
                            "{} items, the reference {}",
                            l.len(),
                            want.len()
                        )));
                    }
                    l.iter().zip(want).try_for_each(|(v, w)| {
                        check_bytes(v.as_bytes().unwrap_or_default(), w).map_err(&what)
                    })
                }
                ValueRef::Array(a) => {
                    let kind_of = match a.dtype {
                        DType::F32 => "float_list",
                        DType::F64 => "double_list",
                        DType::I32 => "int32_list",
                        DType::I64 => "int64_list",
                        _ => "?",
                    };
                    let same = kind == Some(kind_of)
                        && f["le_bytes_sha256"].as_str() == Some(&sha256_hex(a.data));
                    if same {
                        Ok(())
                    } else {
                        Err(what(format!("reel read {a:?}, the reference {f}")))
                    }
                }
                other => Err(what(format!("reel read {other:?}, the reference {f}"))),
            }
        }
        "gulp" => match name {
            "id" if line["id"].as_str() == got.as_str() => Ok(()),
            "meta" => check_value_with(got, &line["meta_returned"], unordered).map_err(what),
            "frames" => {
                let want = line["frames"].as_array().ok_or_else(|| what(line.to_string()))?;
                let l = got.as_list().ok_or_else(|| what(format!("{got:?}")))?;
                if want.len() != l.len() {
                    return Err(what(format!("{} frames, the reference {}", l.len(), want.len())));
                }
                l.iter().zip(want).try_for_each(|(v, w)| {
                    check_bytes(v.as_bytes().unwrap_or_default(), &w["jpeg"]).map_err(&what)
                })
            }
            _ => Err(what(format!("reel read {got:?}, the reference {line}"))),
        },
        "ffrecord" => {
            check_bytes(got.as_bytes().unwrap_or_default(), &line["content"]).map_err(what)
        }
        other => Err(format!("no reference check for {other}")),
    }
}

/// Whether the reference reader of `target` reads `out` as reel reads it.
fn reference_reads_the_same(refread: &Path, target: &str, out: &Path) -> Result<(), String> {
    let run = Command::new(refread).arg(refread_format(target)).arg(out).output().unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    if !run.status.success() {
        let last = stdout.lines().last().unwrap_or_default();
        return Err(format!("the reference failed ({}): {last}", run.status));
    }
    let lines: Vec<Json> = stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let ours = reel::open(out).map_err(|e| e.to_string())?;
    if lines.len() as u64 != ours.len() {
        return Err(format!("the reference read {} records, reel {}", lines.len(), ours.len()));
    }
    let decoded = GranularOptions::default().decode_images(true);
    let pixels = match target {
        "granular" | "bags" => {
            Some(GranularReader::open_with(out, &decoded).map_err(|e| e.to_string())?)
        }
        _ => None,
    };
    for (i, line) in lines.iter().enumerate() {
        let record = ours.read(i as u64).map_err(|e| e.to_string())?;
        let pixel_record = match &pixels {
            Some(p) => Some(p.read(i as u64).map_err(|e| e.to_string())?),
            None => None,
        };
        for (name, value) in record.iter() {
            let pixel_value = pixel_record.as_ref().and_then(|r| r.get(name));
            check_field(target, name, value, pixel_value, line)
                .map_err(|e| format!("record {i}: {e}"))?;
        }
    }
    Ok(())
}

/// The matrix again, each output also read by the reference readers
/// (`REEL_REFREAD=/path/to/refread`; run by `tests/refread_matrix.sh`).
#[test]
#[ignore = "needs the reference readers: REEL_REFREAD=/path/to/refread (tests/refread_matrix.sh)"]
fn refread_matrix() {
    let refread = PathBuf::from(
        std::env::var_os("REEL_REFREAD").expect("set REEL_REFREAD to the refread tool"),
    );
    assert!(refread.is_file(), "REEL_REFREAD={} is not a file", refread.display());
    let (lines, failed) = run_matrix(&|src, target, out| {
        same_records(src, target, out)?;
        reference_reads_the_same(&refread, target, out)
    });
    let count = |p: &str| lines.iter().filter(|l| l.starts_with(p)).count();
    println!("{}", lines.join("\n"));
    println!(
        "pairs: {} ok, {} refused, {} mismatched",
        count("ok"),
        count("refused"),
        count("MISMATCH")
    );
    assert_eq!(failed, 0, "see the MISMATCH lines above");
}
