//! Record checksums computed as bytes arrive (`Layout::record_crc32`), on every core backend:
//! records in several parts (stored out of order in the file), larger than one copy piece,
//! empty, damaged in their bytes or in their stored checksum.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;

use reel_core::checksum::crc32;
use reel_core::io::OBSERVED_PIECE;
use reel_core::{
    Backend, ErrorKind, FieldName, Layout, LayoutSource, Limits, Plan, ReadAt, ReadReq,
    RecordBatch, RecordOut, RecordSource, RecordSourceExt, Result, SourceInfo, Span, Value,
};

/// Record `i` is `parts[i]` (file ranges, read in this order, concatenated) and must have
/// CRC-32 `crcs[i]`.
struct Split {
    info: SourceInfo,
    parts: Vec<Vec<(u64, u64)>>,
    crcs: Vec<u32>,
    name: FieldName,
}

impl Layout for Split {
    fn info(&self) -> &SourceInfo {
        &self.info
    }
    fn len(&self) -> u64 {
        self.parts.len() as u64
    }
    fn plan(&self, index: u64, plan: &mut Plan<'_>) -> Result<()> {
        for &(offset, len) in &self.parts[index as usize] {
            plan.push(0, offset, len);
        }
        Ok(())
    }
    fn decode(&self, _index: u64, raw: &[Span], out: &mut RecordOut<'_>) -> Result<()> {
        for span in raw {
            out.push(self.name.clone(), Value::Bytes(*span));
        }
        Ok(())
    }
    fn record_crc32(&self, index: u64) -> Option<u32> {
        self.crcs.get(index as usize).copied()
    }
    fn has_record_crc32(&self) -> bool {
        true
    }
}

/// The part lengths of each record: empty, tiny, across copy pieces, and both.
fn shapes() -> Vec<Vec<usize>> {
    vec![
        vec![100],
        vec![0],
        vec![3 * OBSERVED_PIECE + 5],
        vec![7, 0, 9],
        vec![OBSERVED_PIECE, OBSERVED_PIECE + 1],
        vec![OBSERVED_PIECE / 2, 1, 2 * OBSERVED_PIECE],
        vec![],
        vec![5000],
    ]
}

/// Each record's parts: (offset, length) in the file.
type Places = Vec<Vec<(u64, u64)>>;

/// Writes the records' parts into one file, each record's parts in reverse order with gaps,
/// and returns the file, where the parts are and the expected bytes of every record.
fn dataset(dir: &std::path::Path) -> (PathBuf, Places, Vec<Vec<u8>>) {
    let mut file = Vec::new();
    let (mut parts, mut records) = (Vec::new(), Vec::new());
    for (i, shape) in shapes().into_iter().enumerate() {
        let bytes: Vec<Vec<u8>> = shape
            .iter()
            .enumerate()
            .map(|(k, &len)| (0..len).map(|j| (i * 131 + k * 17 + j * 7 + j / 251) as u8).collect())
            .collect();
        let mut places = vec![(0, 0); shape.len()];
        for k in (0..shape.len()).rev() {
            file.extend_from_slice(&[0xAA; 3]);
            places[k] = (file.len() as u64, shape[k] as u64);
            file.extend_from_slice(&bytes[k]);
        }
        parts.push(places);
        records.push(bytes.concat());
    }
    let path = dir.join("split.bin");
    std::fs::write(&path, &file).unwrap();
    (path, parts, records)
}

fn open(
    path: &std::path::Path,
    parts: &[Vec<(u64, u64)>],
    crcs: Vec<u32>,
    backend: &Backend,
) -> LayoutSource<Split> {
    let files = backend.open(&[path.to_path_buf()]).unwrap();
    let layout =
        Split { info: SourceInfo::new("split"), parts: parts.to_vec(), crcs, name: "data".into() };
    LayoutSource::new(layout, files, Limits::default())
}

fn record_bytes(batch: &RecordBatch, k: usize) -> Vec<u8> {
    let record = batch.get(k).unwrap();
    record.iter().flat_map(|(_, v)| v.as_bytes().unwrap().to_vec()).collect()
}

#[test]
fn intact_records_pass_alone_and_in_batches_on_every_backend() {
    let dir = tempfile::tempdir().unwrap();
    let (path, parts, records) = dataset(dir.path());
    let crcs: Vec<u32> = records.iter().map(|r| crc32(r)).collect();
    for backend in Backend::core_backends() {
        let source = open(&path, &parts, crcs.clone(), &backend);
        let all: Vec<u64> = (0..records.len() as u64).rev().chain([2, 2, 5]).collect();
        let mut batch = RecordBatch::new();
        source.read_batch_into(&all, &mut batch).unwrap();
        for (k, &i) in all.iter().enumerate() {
            assert_eq!(record_bytes(&batch, k), records[i as usize], "{backend:?} record {i}");
        }
        for i in 0..records.len() as u64 {
            source.read(i).unwrap_or_else(|e| panic!("{backend:?} record {i}: {e}"));
        }
    }
}

#[test]
fn damage_is_named_by_record_on_every_backend() {
    let dir = tempfile::tempdir().unwrap();
    let (path, parts, records) = dataset(dir.path());
    let mut crcs: Vec<u32> = records.iter().map(|r| crc32(r)).collect();
    // Record 1 is empty but claims a checksum (only the check after the read sees it);
    // record 4's stored checksum is wrong; record 5's last part is damaged on disk.
    crcs[1] = 0x1234_5678;
    crcs[4] ^= 1;
    let mut file = std::fs::read(&path).unwrap();
    let (offset, len) = parts[5][2];
    file[(offset + len - 1) as usize] ^= 0x40;
    std::fs::write(&path, &file).unwrap();
    let bad = [1u64, 4, 5];
    for backend in Backend::core_backends() {
        let source = open(&path, &parts, crcs.clone(), &backend);
        for i in 0..records.len() as u64 {
            match source.read(i) {
                Ok(_) => assert!(!bad.contains(&i), "{backend:?}: record {i} passed"),
                Err(e) => {
                    assert!(bad.contains(&i), "{backend:?}: record {i} failed: {e}");
                    assert_eq!(e.kind(), ErrorKind::Checksum, "{backend:?}: {e}");
                    assert_eq!(e.record(), Some(i), "{backend:?}: {e}");
                    assert!(e.to_string().contains("record checksum mismatch"), "{e}");
                    if let Some(&(first, _)) = parts[i as usize].first() {
                        assert_eq!(e.offset(), Some(first), "{backend:?}: {e}");
                    }
                }
            }
        }
        let mut batch = RecordBatch::new();
        for &b in &bad {
            let e = source.read_batch_into(&[0, 2, b, 7], &mut batch).unwrap_err();
            assert_eq!((e.kind(), e.record()), (ErrorKind::Checksum, Some(b)), "{backend:?}");
            assert!(batch.is_empty());
        }
        source.read_batch_into(&[7, 0, 6, 3, 2], &mut batch).unwrap();
        assert_eq!(batch.len(), 5);
    }
}

/// The default `read_many_observed` hands over every request's bytes, in order, in pieces
/// of at most `OBSERVED_PIECE` when it copies out of memory, and each piece after it is in
/// the destination.
#[test]
fn observed_reads_hand_over_every_request_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let data: Vec<u8> = (0..200_000u32).map(|i| (i * 7 + i / 300) as u8).collect();
    let path = dir.path().join("flat.bin");
    std::fs::write(&path, &data).unwrap();
    let sizes = [0usize, 1, OBSERVED_PIECE, OBSERVED_PIECE + 1, 50_000, 10];
    let mut reqs = Vec::new();
    let mut dest_at = 0;
    for (k, &len) in sizes.iter().enumerate() {
        reqs.push(ReadReq { file: 0, offset: (k * 21_000) as u64, len, dest: dest_at });
        dest_at += len;
    }
    for backend in Backend::core_backends() {
        let files = backend.open(std::slice::from_ref(&path)).unwrap();
        let mut dest = vec![0u8; dest_at];
        let mut seen: Vec<Vec<u8>> = vec![Vec::new(); reqs.len()];
        let mut pieces = 0;
        files
            .read_many_observed(&reqs, &mut dest, &mut |k: usize, bytes: &[u8]| {
                assert!(bytes.len() <= OBSERVED_PIECE || files.bytes(0).is_none());
                seen[k].extend_from_slice(bytes);
                pieces += 1;
                Ok(())
            })
            .unwrap();
        for (k, r) in reqs.iter().enumerate() {
            let want = &data[r.offset as usize..][..r.len];
            assert_eq!(&dest[r.dest..][..r.len], want, "{backend:?}: request {k} in dest");
            assert_eq!(seen[k], want, "{backend:?}: request {k} handed over");
        }
        let expected_pieces: usize = if files.bytes(0).is_some() {
            sizes.iter().map(|&l| l.div_ceil(OBSERVED_PIECE)).sum()
        } else {
            sizes.len()
        };
        assert_eq!(pieces, expected_pieces, "{backend:?}");
        // An error from the observer stops the batch and comes back.
        let e = files
            .read_many_observed(&reqs, &mut dest, &mut |k: usize, _: &[u8]| {
                if k == 3 {
                    Err(reel_core::Error::new(ErrorKind::Checksum, "stop here"))
                } else {
                    Ok(())
                }
            })
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Checksum, "{backend:?}");
    }
}
