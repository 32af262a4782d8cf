//! The first and last bytes of objects, kept while a dataset is open.
//!
//! Formats read their metadata at the ends of files: a header and an index table at the
//! start (FFRecord, Syrah), a footer and an index at the end (Granular's bags), small frames
//! one after another (OFRecord's scan). Each of those reads is a round trip when made
//! alone. Instead, a small read near an end fetches that end's whole window
//! ([`END_BYTES`]) once, and every later read inside it is answered from memory; learning an
//! object's size by a ranged GET keeps its first window the same way.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Mutex, PoisonError};

use bytes::Bytes;

use crate::ObjectPath;

/// Bytes of each end of an object kept (the whole object when it is smaller).
pub const END_BYTES: u64 = 64 << 10;

/// The most bytes kept for one open dataset; past it, windows are fetched but not kept, so a
/// dataset of thousands of objects does not hold all their ends.
const BUDGET: usize = 16 << 20;

/// Which end of an object.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum End {
    /// Bytes `0..min(len, END_BYTES)`.
    Head,
    /// Bytes `len - END_BYTES..len` of an object longer than [`END_BYTES`].
    Tail,
}

/// The window of an object of `len` bytes that holds `range`, if one does.
pub(crate) fn window_for(len: u64, range: &Range<u64>) -> Option<(End, Range<u64>)> {
    if range.end <= END_BYTES.min(len) {
        return Some((End::Head, 0..END_BYTES.min(len)));
    }
    if len > END_BYTES && range.start >= len - END_BYTES && range.end <= len {
        return Some((End::Tail, len - END_BYTES..len));
    }
    None
}

/// Kept ends of the objects of one open dataset.
#[derive(Debug, Default)]
pub(crate) struct Ends {
    kept: Mutex<Kept>,
}

#[derive(Debug, Default)]
struct Kept {
    windows: HashMap<(ObjectPath, End), Bytes>,
    bytes: usize,
}

impl Ends {
    /// `range` of the object `key` (`len` bytes long), if a kept window holds it.
    pub fn get(&self, key: &ObjectPath, len: u64, range: &Range<u64>) -> Option<Bytes> {
        let (end, window) = window_for(len, range)?;
        let kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        let bytes = kept.windows.get(&(key.clone(), end))?;
        let from = (range.start - window.start) as usize;
        let to = (range.end - window.start) as usize;
        (to <= bytes.len()).then(|| bytes.slice(from..to))
    }

    /// Keeps `bytes` as the window `end` of `key`, within the budget.
    pub fn keep(&self, key: &ObjectPath, end: End, bytes: Bytes) {
        let mut kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        let slot = (key.clone(), end);
        if kept.bytes + bytes.len() <= BUDGET && !kept.windows.contains_key(&slot) {
            kept.bytes += bytes.len();
            kept.windows.insert(slot, bytes);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_cover_the_ends_only() {
        let w = END_BYTES;
        assert_eq!(window_for(100, &(10..20)), Some((End::Head, 0..100)));
        assert_eq!(window_for(100, &(90..100)), Some((End::Head, 0..100)));
        assert_eq!(window_for(10 * w, &(0..12)), Some((End::Head, 0..w)));
        assert_eq!(window_for(10 * w, &(10 * w - 8..10 * w)), Some((End::Tail, 9 * w..10 * w)));
        assert_eq!(window_for(10 * w, &(5 * w..5 * w + 8)), None);
        assert_eq!(window_for(10 * w, &(w - 4..w + 4)), None);
    }

    #[test]
    fn kept_windows_answer_reads_inside_them() {
        let ends = Ends::default();
        let key = ObjectPath::from("a/b");
        let len = 3 * END_BYTES;
        let tail: Bytes = (0..END_BYTES).map(|i| i as u8).collect::<Vec<_>>().into();
        assert!(ends.get(&key, len, &(len - 4..len)).is_none());
        ends.keep(&key, End::Tail, tail.clone());
        assert_eq!(ends.get(&key, len, &(len - 4..len)).unwrap(), tail.slice(tail.len() - 4..));
        assert!(ends.get(&key, len, &(0..4)).is_none(), "the head was never kept");
        assert!(ends.get(&ObjectPath::from("a/c"), len, &(len - 4..len)).is_none());
    }
}
