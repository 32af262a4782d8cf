//! Ingestion: chunks of K items from an adapter on several threads, all or nothing.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::{fake_jpeg, frames, json, snapshot};
use reel_core::{Error, ErrorKind, RecordSource, RecordSourceExt, Result};
use reel_gulp::{
    FrameDecode, GulpAdapter, GulpIngestor, GulpItem, GulpOptions, GulpReader, IngestProgress,
    OwnedFrame, calculate_chunk_slices, encode_jpeg,
};

fn small_jpeg(i: usize) -> Vec<u8> {
    encode_jpeg(&[i as u8; 4 * 4 * 3], 4, 4, 3, 80).unwrap()
}

/// Items `prefix0..prefixN`; every 4th has no frames; one may fail.
struct Adapter {
    prefix: &'static str,
    n: usize,
    fail_at: Option<usize>,
}

impl GulpAdapter for Adapter {
    fn len(&self) -> usize {
        self.n
    }

    fn iter_data(&self, items: Range<usize>) -> Box<dyn Iterator<Item = Result<GulpItem>> + '_> {
        Box::new(items.map(move |i| {
            if Some(i) == self.fail_at {
                return Err(Error::invalid_input(format!("item {i} cannot be loaded")));
            }
            let (w, h) = (4 + i as u32 % 5, 3 + i as u32 % 3);
            let frames = match i % 4 {
                0 => vec![],
                1 => vec![OwnedFrame::Rgb {
                    width: w,
                    height: h,
                    pixels: vec![i as u8; (w * h * 3) as usize],
                }],
                2 => vec![
                    OwnedFrame::Gray {
                        width: w,
                        height: h,
                        pixels: vec![i as u8; (w * h) as usize]
                    };
                    2
                ],
                _ => vec![OwnedFrame::Jpeg(small_jpeg(i))],
            };
            Ok(GulpItem {
                id: format!("{}{i}", self.prefix),
                meta: json(&format!(r#"{{"i": {i}}}"#)),
                frames,
            })
        }))
    }
}

#[test]
fn chunk_slices_follow_the_reference() {
    assert_eq!(calculate_chunk_slices(4, 10).unwrap(), vec![0..4, 4..8, 8..10]);
    assert_eq!(calculate_chunk_slices(10, 3).unwrap(), vec![0..3]);
    assert_eq!(calculate_chunk_slices(0, 3).unwrap_err().kind(), ErrorKind::InvalidInput);
    assert_eq!(calculate_chunk_slices(3, 0).unwrap_err().kind(), ErrorKind::InvalidInput);
}

#[test]
fn ingests_in_parallel_and_appends_new_chunks() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("out");
    let adapter = Adapter { prefix: "a", n: 23, fail_at: None };
    let calls = AtomicUsize::new(0);
    let progress = |p: IngestProgress| {
        calls.fetch_add(1, Ordering::Relaxed);
        assert!(p.chunks_done <= p.chunks_total && p.chunks_total == 5);
    };
    let summary = GulpIngestor::new(&adapter, &d, 5, 3).progress(&progress).run().unwrap();
    assert_eq!(calls.load(Ordering::Relaxed), 5);
    assert_eq!(summary.chunks.iter().map(|c| c.number).collect::<Vec<_>>(), [0, 1, 2, 3, 4]);
    let skipped: Vec<String> = (0..23).filter(|i| i % 4 == 0).map(|i| format!("a{i}")).collect();
    assert_eq!(summary.skipped_ids, skipped);
    assert_eq!(summary.videos, 23 - 6);
    assert!(summary.chunks.iter().all(|c| c.data_path.starts_with(&d) && c.data_path.exists()));

    let r = GulpReader::open_with(&d, &GulpOptions::default().decode(FrameDecode::Auto)).unwrap();
    assert_eq!(r.len(), 17);
    // Chunk k holds the items k*5 .. k*5+5 that have frames, in order.
    for (k, c) in r.chunks().iter().enumerate() {
        let ids: Vec<&str> = r.chunk_videos(c.number).unwrap().map(|i| r.id(i).unwrap()).collect();
        let want: Vec<String> =
            (k * 5..(k * 5 + 5).min(23)).filter(|i| i % 4 != 0).map(|i| format!("a{i}")).collect();
        assert_eq!(ids, want);
    }
    for i in 0..r.len() {
        let rec = r.read(i).unwrap();
        let n: usize = rec.view().str("id").unwrap()[1..].parse().unwrap();
        let list: Vec<_> = rec.get("frames").unwrap().as_list().unwrap().iter().collect();
        let (w, h) = (4 + n as u64 % 5, 3 + n as u64 % 3);
        match n % 4 {
            1 => assert_eq!(list[0].as_array().unwrap().shape, [h, w, 3]),
            2 => assert_eq!(
                list.iter().map(|f| f.as_array().unwrap().shape.to_vec()).collect::<Vec<_>>(),
                vec![vec![h, w]; 2]
            ),
            _ => {}
        }
    }
    let raw = GulpReader::open(&d).unwrap();
    assert_eq!(frames(&raw.get("a3", &reel_gulp::FrameSelection::All).unwrap()), [small_jpeg(3)]);

    // Running again with new ids adds chunks after the existing ones.
    let more = Adapter { prefix: "b", n: 6, fail_at: None };
    let s = GulpIngestor::new(&more, &d, 5, 2).run().unwrap();
    assert_eq!(s.chunks.iter().map(|c| c.number).collect::<Vec<_>>(), [5, 6]);
    assert_eq!(GulpReader::open(&d).unwrap().len(), 17 + 4);

    // Running again with the same ids would put them in two chunks: refused, nothing written.
    let before = snapshot(&d);
    let e = GulpIngestor::new(&more, &d, 5, 2).run().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    assert!(e.to_string().contains("\"b1\" (already in the directory)"), "{e}");
    assert_eq!(snapshot(&d), before);
}

#[test]
fn a_failing_item_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("out");
    let bad = Adapter { prefix: "a", n: 20, fail_at: Some(13) };
    let e = GulpIngestor::new(&bad, &d, 3, 4).run().unwrap_err();
    assert!(e.message().contains("item 13"), "{e}");
    assert!(!d.exists());
    assert!(common::names(dir.path()).is_empty());

    GulpIngestor::new(&Adapter { prefix: "a", n: 4, fail_at: None }, &d, 3, 1).run().unwrap();
    let before = snapshot(&d);
    let bad = Adapter { prefix: "c", n: 20, fail_at: Some(19) };
    assert!(GulpIngestor::new(&bad, &d, 3, 2).run().is_err());
    assert_eq!(snapshot(&d), before);

    let empty = Adapter { prefix: "e", n: 0, fail_at: None };
    assert_eq!(
        GulpIngestor::new(&empty, &d, 3, 2).run().unwrap_err().kind(),
        ErrorKind::InvalidInput
    );
    let one = Adapter { prefix: "o", n: 1, fail_at: None };
    assert_eq!(
        GulpIngestor::new(&one, &d, 3, 0).run().unwrap_err().kind(),
        ErrorKind::InvalidInput
    );
}

#[test]
fn ids_repeated_across_new_chunks_are_refused() {
    struct Repeating;
    impl GulpAdapter for Repeating {
        fn len(&self) -> usize {
            4
        }
        fn iter_data(
            &self,
            items: Range<usize>,
        ) -> Box<dyn Iterator<Item = Result<GulpItem>> + '_> {
            Box::new(items.map(|i| {
                Ok(GulpItem {
                    id: format!("id{}", i % 2),
                    meta: json("{}"),
                    frames: vec![OwnedFrame::Jpeg(fake_jpeg(40, i as u8))],
                })
            }))
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("out");
    // Within one chunk an id given twice is merged, as by the reference's append.
    let s = GulpIngestor::new(&Repeating, &d, 4, 2).run().unwrap();
    assert_eq!(s.videos, 2);
    let r = GulpReader::open(&d).unwrap();
    assert_eq!(frames(&r.read(0).unwrap()), [fake_jpeg(40, 0), fake_jpeg(40, 2)]);
    // Across chunks it would make the directory unreadable for the reference.
    let d2 = dir.path().join("out2");
    let e = GulpIngestor::new(&Repeating, &d2, 2, 2).run().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    assert!(!d2.exists());
}
