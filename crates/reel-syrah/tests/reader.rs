//! Reader behaviour: conformance on every backend, concatenation, partial reads, hostile
//! input, truncation, reference quirks.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use reel_core::testing::{conformance, truncation};
use reel_core::{
    Backend, DType, ErrorKind, Limits, MemFiles, ReadAt, ReadReq, Record, RecordSource,
    RecordSourceExt, Result, WarningKind,
};
use reel_syrah::{SyrahDType, SyrahOptions, SyrahReader, SyrahWriter};

/// `n` items with a numeric, a text and a 2-D array each, of varying sizes.
fn items(n: usize, prefix: &str) -> Vec<Record> {
    (0..n)
        .map(|i| {
            let mut r = Record::new();
            let label = (i as i64 * 7 - 3).to_le_bytes();
            r.push_array(format!("{prefix}label"), DType::I64, &[1], &label).unwrap();
            r.push_str(format!("{prefix}text"), &"é".repeat(i % 5));
            let m: Vec<u8> = (0..(i % 4) * 6).flat_map(|v| (v as f32).to_le_bytes()).collect();
            r.push_array(format!("{prefix}m"), DType::F32, &[(i % 4) as u64, 6], &m).unwrap();
            r
        })
        .collect()
}

fn write(path: &Path, items: &[Record]) {
    let mut w = SyrahWriter::create(path).unwrap();
    for item in items {
        w.add_item(item).unwrap();
    }
    w.finish().unwrap();
}

fn open_boxed(paths: &[PathBuf], backend: Backend) -> Result<Box<dyn RecordSource>> {
    Ok(Box::new(SyrahReader::open_concat(paths, &SyrahOptions::default().backend(backend))?))
}

fn mem(bytes: Vec<u8>) -> Result<SyrahReader<MemFiles>> {
    SyrahReader::from_files(MemFiles::single("x.syr", bytes), &SyrahOptions::default())
}

#[test]
fn conformance_on_every_backend() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("x.syr");
    let written = items(40, "");
    write(&p, &written);
    let outcomes =
        conformance::check_backends(|b| open_boxed(std::slice::from_ref(&p), b)).unwrap();
    for (i, (o, w)) in outcomes.iter().zip(&written).enumerate() {
        let got = o.as_ref().unwrap();
        assert_eq!(got.len(), 3);
        for (name, value) in got.iter() {
            let want = w.get(name).unwrap();
            match (value.as_array(), want.as_array()) {
                // Shapes are not stored: a 2-D array reads back 1-D.
                (Some(a), Some(b)) => {
                    assert_eq!((a.dtype, a.data), (b.dtype, b.data), "{i} {name}");
                    assert_eq!(a.shape, &[b.len()]);
                }
                _ => assert_eq!(value, want, "{i} {name}"),
            }
        }
    }
}

/// Several files read as one (the reference's `SyrahConcatDataset`), including files with
/// different array names.
#[test]
fn concatenation_of_files() {
    let dir = tempfile::tempdir().unwrap();
    let parts = [("a.syr", 5, ""), ("b.syr", 1, ""), ("c.syr", 7, "other_")];
    let mut paths = Vec::new();
    let mut all = Vec::new();
    for (name, n, prefix) in parts {
        let p = dir.path().join(name);
        let it = items(n, prefix);
        write(&p, &it);
        paths.push(p);
        all.extend(it);
    }
    let outcomes = conformance::check_backends(|b| open_boxed(&paths, b)).unwrap();
    assert_eq!(outcomes.len(), 13);
    let r = SyrahReader::open_concat(&paths, &SyrahOptions::default()).unwrap();
    assert_eq!(r.files().len(), 3);
    assert!(r.info().schema.is_none(), "files disagree on names, so there is no one schema");
    assert_eq!(r.info().version.as_deref(), Some("0.2.0"));
    for (i, want) in all.iter().enumerate() {
        let got = outcomes[i].as_ref().unwrap();
        let first = want.iter().next().unwrap().0;
        assert_eq!(got.get(first), want.get(first), "item {i}");
    }
    let (path, loc) = r.array_location(5, "label").unwrap();
    assert_eq!(path, paths[1]);
    assert_eq!(r.array_location(12, "other_label").unwrap().0, paths[2]);
    let e = r.get_array(12, "label").unwrap_err();
    assert_eq!((e.kind(), e.record()), (ErrorKind::NotFound, Some(12)));
    assert!(loc.size == 8);
    // A directory of .syr files opens as their concatenation in name order.
    let by_dir = SyrahReader::open(dir.path()).unwrap();
    assert_eq!(by_dir.num_items(), 13);
    assert_eq!(by_dir.read(12).unwrap(), r.read(12).unwrap());
}

/// A backend that records the requests it is asked for.
struct Recording {
    inner: MemFiles,
    reqs: Mutex<Vec<ReadReq>>,
}

impl ReadAt for Recording {
    fn backend_name(&self) -> &'static str {
        "recording"
    }
    fn file_count(&self) -> usize {
        self.inner.file_count()
    }
    fn file_len(&self, file: u32) -> u64 {
        self.inner.file_len(file)
    }
    fn file_path(&self, file: u32) -> &Path {
        self.inner.file_path(file)
    }
    fn read_exact_at(&self, file: u32, offset: u64, buf: &mut [u8]) -> Result<()> {
        self.inner.read_exact_at(file, offset, buf)
    }
    fn read_many(&self, reqs: &[ReadReq], dest: &mut [u8]) -> Result<()> {
        self.reqs.lock().unwrap().extend_from_slice(reqs);
        self.inner.read_many(reqs, dest)
    }
}

#[test]
fn items_are_one_read_and_single_arrays_read_only_their_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("x.syr");
    write(&p, &items(10, ""));
    let files = Recording {
        inner: MemFiles::single("x.syr", std::fs::read(&p).unwrap()),
        reqs: Mutex::new(Vec::new()),
    };
    let r = SyrahReader::from_files(files, &SyrahOptions::default()).unwrap();
    let take =
        |r: &SyrahReader<Recording>| std::mem::take(&mut *r.source().files().reqs.lock().unwrap());
    take(&r);

    let item = r.get_item(7).unwrap();
    let reqs = take(&r);
    assert_eq!(reqs.len(), 1, "one range for the whole item: {reqs:?}");
    let (_, first) = r.array_location(7, "label").unwrap();
    let (_, last) = r.array_location(7, "m").unwrap();
    assert_eq!((reqs[0].offset, reqs[0].len as u64), (first.offset, last.end() - first.offset));

    let one = r.get_array(7, "text").unwrap();
    let reqs = take(&r);
    let (_, loc) = r.array_location(7, "text").unwrap();
    assert_eq!(reqs.len(), 1);
    assert_eq!((reqs[0].offset, reqs[0].len as u64), (loc.offset, loc.size));
    assert_eq!((one.len(), one.get("text")), (1, item.get("text")));

    // Two arrays, asked for in reverse order: still one read, fields in the order asked.
    let mut two = Record::new();
    r.read_arrays_into(7, &["m", "label"], &mut two).unwrap();
    assert_eq!(take(&r).len(), 1);
    let names: Vec<&str> = two.iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["m", "label"]);
    assert_eq!(two.get("m"), item.get("m"));

    let mut batch = reel_core::RecordBatch::new();
    r.read_batch_arrays_into(&[3, 1, 3], &["label"], &mut batch).unwrap();
    assert_eq!(batch.len(), 3);
    assert_eq!(take(&r).iter().map(|q| q.len).sum::<usize>(), 24);
    assert_eq!(batch.get(1).unwrap().get("label"), r.read(1).unwrap().get("label"));
    let e = r.read_batch_arrays_into(&[0, 1], &["nope"], &mut batch).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound);
    assert!(e.to_string().contains("label, text, m"), "{e}");
}

#[test]
fn dtype_override_reinterprets_the_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("x.syr");
    write(&p, &items(3, ""));
    let r = SyrahReader::open(&p).unwrap();
    let raw = r.get_array_as(2, "m", SyrahDType::Array(DType::U8)).unwrap();
    let a = raw.get("m").unwrap().as_array().unwrap();
    assert_eq!((a.dtype, a.shape), (DType::U8, &[48u64][..]));
    let as_text = r.get_array_as(1, "label", SyrahDType::Str);
    // The 8 bytes of a little-endian 4 are valid UTF-8; the trailing NULs go, as in numpy.
    assert_eq!(as_text.unwrap().get("label").unwrap().as_str(), Some("\u{4}"));
    let e = r.get_array_as(1, "m", SyrahDType::Array(DType::F128)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Corrupt, "24 bytes are not whole float128s: {e}");
}

/// Builds a file by hand: data bytes, then a BSON document given as `(name, offsets,
/// sizes, dtype)` entries, written with the crate's own writer conventions.
fn craft(data: &[u8], entries: &[(&str, &[i64], &[i64], &str)], trailing: &[u8]) -> Vec<u8> {
    let mut doc = bson::RawDocumentBuf::new();
    for (name, offsets, sizes, dtype) in entries {
        let bin = |v: &[i64]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
        let (o, s) = (bin(offsets), bin(sizes));
        let mut sub = bson::RawDocumentBuf::new();
        let g = bson::spec::BinarySubtype::Generic;
        sub.append(bson::raw::cstr!("offset"), bson::RawBinaryRef { subtype: g, bytes: &o });
        sub.append(bson::raw::cstr!("size"), bson::RawBinaryRef { subtype: g, bytes: &s });
        sub.append(bson::raw::cstr!("dtype"), *dtype);
        let key: &bson::raw::CStr = (*name).try_into().unwrap();
        doc.append(key, &sub);
    }
    let meta = doc.into_bytes();
    let mut out = b"GS\0\0\x02\0".to_vec();
    out.extend(((22 + data.len()) as i64).to_le_bytes());
    out.extend((meta.len() as i64).to_le_bytes());
    out.extend(data);
    out.extend(meta);
    out.extend(trailing);
    out
}

#[test]
fn bad_items_fail_alone() {
    // Item 0 fine; item 1 has 3 bytes of int16 and invalid UTF-8.
    let data = [1, 0, 2, 0, b'o', b'k', 9, 9, 9, 0xff, 0xfe];
    let f =
        craft(&data, &[("a", &[22, 28], &[4, 3], "int16"), ("s", &[26, 31], &[2, 2], "str")], &[]);
    let r = mem(f).unwrap();
    assert_eq!(r.num_items(), 2);
    let ok = r.read(0).unwrap();
    assert_eq!(ok.get("a").unwrap().as_array().unwrap().data, &[1, 0, 2, 0]);
    assert_eq!(ok.get("s").unwrap().as_str(), Some("ok"));
    let e = r.read(1).unwrap_err();
    assert_eq!((e.kind(), e.record()), (ErrorKind::Corrupt, Some(1)));
    assert!(e.to_string().contains("array \"a\""), "{e}");
    let e = r.get_array(1, "s").unwrap_err();
    assert!(e.to_string().contains("UTF-8"), "{e}");
    // Trailing NULs of a str array are dropped, as numpy drops them in the reference.
    let f = craft(b"ab\0\0", &[("s", &[22], &[4], "str")], &[]);
    assert_eq!(mem(f).unwrap().read(0).unwrap().get("s").unwrap().as_str(), Some("ab"));
    // Errors point at the array's bytes.
    let e = r.get_array(1, "a").unwrap_err();
    assert_eq!(e.offset(), Some(28));
}

#[test]
fn phantom_items_and_trailing_bytes_are_read_with_warnings() {
    // Item 1's array points into the metadata, as the reference's phantom item does.
    let data = [5u8, 6];
    let f = craft(&data, &[("a", &[22, 23], &[1, 8], "uint8")], b"xyz");
    let r = mem(f.clone()).unwrap();
    let kinds: Vec<WarningKind> = r.info().warnings.iter().map(|w| w.kind).collect();
    assert_eq!(kinds, [WarningKind::TrailingBytes, WarningKind::ReferenceQuirk]);
    let phantom = r.read(1).unwrap();
    assert_eq!(phantom.get("a").unwrap().as_array().unwrap().data, &f[23..31]);
}

#[test]
fn metadata_without_arrays_is_refused_and_zero_items_read() {
    let e = mem(craft(&[], &[], &[])).err().unwrap();
    assert_eq!(e.kind(), ErrorKind::Corrupt);
    assert!(e.to_string().contains("names no arrays"), "{e}");
    // Zero-length vectors: a zero-item file the reference can open (its writer cannot make
    // one).
    let r = mem(craft(&[], &[("a", &[], &[], "uint8")], &[])).unwrap();
    assert_eq!(r.num_items(), 0);
    assert_eq!(r.read(0).unwrap_err().kind(), ErrorKind::OutOfRange);
}

#[test]
fn hostile_metadata_fails_fast_without_allocating() {
    let good = craft(&[1, 2, 3], &[("a", &[22], &[3], "uint8")], &[]);
    let meta_at = 25;
    // The header claims a 2 GiB (and an 8 EiB) metadata block in a tiny file: like the
    // reference, reel reads what is there (never more than the file holds), and says so.
    for len in [(1i64 << 31) - 1, 1 << 31, i64::MAX, 1 << 40] {
        let mut f = good.clone();
        f[14..22].copy_from_slice(&len.to_le_bytes());
        let r = mem(f).unwrap();
        assert_eq!(r.info().warnings.len(), 1, "{len}");
        assert_eq!(r.info().warnings[0].kind, WarningKind::ReferenceQuirk);
        assert_eq!(
            r.get_array(0, "a").unwrap().get("a").unwrap().as_array().unwrap().data,
            &[1, 2, 3]
        );
    }
    // A metadata offset past the end leaves nothing to read.
    let mut f = good.clone();
    f[6..14].copy_from_slice(&(good.len() as i64 - 4).to_le_bytes());
    assert_eq!(mem(f).err().unwrap().kind(), ErrorKind::Corrupt);
    // A metadata limit smaller than the document is a Limit error before reading it.
    let mut limits = Limits::default();
    limits.max_metadata_bytes = 10;
    let e = SyrahReader::from_files(
        MemFiles::single("x.syr", good.clone()),
        &SyrahOptions::default().limits(limits),
    )
    .err()
    .unwrap();
    assert_eq!(e.kind(), ErrorKind::Limit);
    let mut limits = Limits::default();
    limits.max_records = 0;
    let e = SyrahReader::from_files(
        MemFiles::single("x.syr", good.clone()),
        &SyrahOptions::default().limits(limits),
    )
    .err()
    .unwrap();
    assert_eq!(e.kind(), ErrorKind::Limit);
    // The BSON document's own length claims 2 GiB.
    let mut f = good.clone();
    f[meta_at..meta_at + 4].copy_from_slice(&i32::MAX.to_le_bytes());
    assert_eq!(mem(f).err().unwrap().kind(), ErrorKind::Corrupt);
    // Offsets and sizes: negative, past the end, overflowing.
    for (o, s) in [(-1, 3), (22, -1), (22, 10_000), (i64::MAX, 1), (24, i64::MAX)] {
        let f = craft(&[1, 2, 3], &[("a", &[o], &[s], "uint8")], &[]);
        let e = mem(f).err().unwrap();
        assert_eq!(e.kind(), ErrorKind::Corrupt, "{o} {s}: {e}");
    }
    // Vectors of different lengths, a length not a multiple of 8, unknown dtype.
    let f =
        craft(&[1, 2, 3], &[("a", &[22], &[3], "uint8"), ("b", &[22, 22], &[0, 0], "uint8")], &[]);
    assert_eq!(mem(f).err().unwrap().kind(), ErrorKind::Corrupt);
    // An unknown dtype name opens (as in the reference) and fails when read.
    let f =
        craft(&[1, 2, 3], &[("a", &[22], &[3], "complex256"), ("b", &[22], &[1], "uint8")], &[]);
    let r = mem(f).unwrap();
    assert_eq!(r.arrays_of(0).unwrap()[0].dtype_name(), "complex256");
    let e = r.read(0).unwrap_err();
    assert_eq!((e.kind(), e.record()), (ErrorKind::Unsupported, Some(0)));
    assert!(e.to_string().contains("complex256"), "{e}");
    assert_eq!(r.get_array(0, "b").unwrap().get("b").unwrap().as_array().unwrap().data, &[1]);
}

/// Every single-byte change of the header and metadata either fails with a typed error or
/// reads; nothing panics.
#[test]
fn flipped_bytes_never_panic() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("x.syr");
    write(&p, &items(4, ""));
    let bytes = std::fs::read(&p).unwrap();
    let meta_at = u64::from_le_bytes(bytes[6..14].try_into().unwrap()) as usize;
    let positions = (0..22).chain(meta_at..bytes.len());
    for at in positions {
        for mask in [0x01u8, 0x80, 0xff] {
            let mut f = bytes.clone();
            f[at] ^= mask;
            if let Ok(r) = mem(f) {
                for i in 0..r.num_items() {
                    let _ = r.read(i);
                }
            }
        }
    }
}

#[test]
fn every_truncation_is_detected() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("x.syr");
    write(&p, &items(30, ""));
    let bytes = std::fs::read(&p).unwrap();
    let cuts = truncation::sweep(&bytes, &truncation::lengths(bytes.len(), &[]), |b| {
        Ok(Box::new(mem(b.to_vec())?))
    });
    for (len, cut) in cuts {
        assert!(cut.detected(), "cut at {len} went unnoticed: {cut:?}");
    }
}

#[test]
fn short_files_and_bad_magic() {
    for len in 0..22 {
        let e = mem(b"GS\0\0\x02\0".iter().copied().cycle().take(len).collect()).err().unwrap();
        assert_eq!(e.kind(), ErrorKind::Corrupt);
    }
    let e = mem(b"PK\x03\x04 not syrah at all".to_vec()).err().unwrap();
    assert!(e.to_string().contains("magic"), "{e}");
}

#[test]
fn a_directory_with_parts_missing_from_its_numbering_warns() {
    let dir = tempfile::tempdir().unwrap();
    write(&dir.path().join("part-00001.syr"), &items(3, ""));
    write(&dir.path().join("part-00002.syr"), &items(2, ""));
    let r = SyrahReader::open(dir.path()).unwrap();
    assert_eq!(r.num_items(), 5);
    let missing: Vec<_> =
        r.info().warnings.iter().filter(|w| w.kind == WarningKind::MissingParts).collect();
    assert_eq!(missing.len(), 1, "{:?}", r.info().warnings);
    assert!(missing[0].message.contains("(0)"), "{missing:?}");
    write(&dir.path().join("part-00000.syr"), &items(1, ""));
    let r = SyrahReader::open(dir.path()).unwrap();
    assert!(r.info().warnings.iter().all(|w| w.kind != WarningKind::MissingParts));
}
