//! The packed-folder index parser's memory is linear in the index and small: at most 8
//! bytes of parser state per input byte (16 with the slack of growing vectors) on the
//! pickles that need the most, and the tree it returns is in proportion to its entries.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use reel_ffrecord::pickle::{parse_folder_index, write_folder_index};
use reel_ffrecord::{FolderDir, FolderEntry};

#[path = "../../reel-core/tests/support/tracking_alloc.rs"]
mod tracking_alloc;

#[global_allocator]
static GLOBAL: tracking_alloc::TrackingAllocator = tracking_alloc::TrackingAllocator;

/// Bytes live at the peak of parsing `bytes`, beyond what was live before, and whether it
/// parsed.
fn peak_of_parse(bytes: &[u8]) -> (u64, bool) {
    let before = tracking_alloc::live_bytes();
    tracking_alloc::reset_peak();
    let parsed = parse_folder_index(bytes, 64);
    let peak = tracking_alloc::peak_bytes() - before;
    (peak, parsed.is_ok())
}

/// A protocol-4 pickle: `body` repeated to about `len` bytes after `prefix`, then STOP.
fn stream(prefix: &[u8], body: &[u8], len: usize) -> Vec<u8> {
    let mut v = vec![0x80, 4];
    v.extend_from_slice(prefix);
    while v.len() + body.len() < len {
        v.extend_from_slice(body);
    }
    v.push(b'.');
    v
}

// One test, so that no other test's allocations run on other threads while it measures.
#[test]
fn parsing_memory_is_linear_in_the_index_and_small() {
    const MIB: usize = 1 << 20;
    let len = 4 * MIB;
    // (what, pickle, whether it is a valid index: a string, a number or a STOP under an
    // open MARK on top is not).
    let cases: Vec<(&str, Vec<u8>, bool)> = vec![
        ("EMPTY_DICT", stream(b"", b"}", len), true),
        ("MEMOIZE", stream(b"}", b"\x94", len), true),
        ("MARK", stream(b"}", b"(", len), false),
        ("empty strings", stream(b"}", b"\x8c\x00", len), false),
        ("BININT1", stream(b"}", b"K\x01", len), false),
        ("dict entries", stream(b"}\x8c\x01a\x94K\x01\x94s", b"h\x00h\x01s", len), true),
    ];
    for (what, bytes, valid) in &cases {
        let (peak, ok) = peak_of_parse(bytes);
        assert_eq!(ok, *valid, "{what}");
        let per_byte = peak as f64 / bytes.len() as f64;
        eprintln!(
            "{what}: {peak} bytes at the peak for {} input bytes ({per_byte:.2}/byte)",
            bytes.len()
        );
        assert!(per_byte <= 16.0, "{what}: {per_byte:.2} bytes of memory per input byte");
    }

    // What pack_folder writes for 100,000 files in 1,000 directories: the tree itself is
    // most of the memory, in proportion to the entries.
    let mut root = FolderDir::new();
    for d in 0..1000u64 {
        let mut dir = FolderDir::new();
        for f in 0..100u64 {
            dir.insert(
                Arc::from(format!("img_{f:06}.jpg").as_str()),
                FolderEntry::File(d * 100 + f),
            );
        }
        root.insert(Arc::from(format!("class_{d:04}").as_str()), FolderEntry::Dir(dir));
    }
    let bytes = write_folder_index(&root);
    let (peak, ok) = peak_of_parse(&bytes);
    assert!(ok);
    let per_byte = peak as f64 / bytes.len() as f64;
    eprintln!(
        "pack_folder index of 101,000 entries: {peak} bytes at the peak for {} input bytes \
         ({per_byte:.2}/byte, {} per entry)",
        bytes.len(),
        peak / 101_000
    );
    assert!(peak / 101_000 <= 256, "{} bytes per entry", peak / 101_000);
}
