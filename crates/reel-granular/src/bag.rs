//! The bag container: an ordered list of byte strings and the table that delimits them.
//!
//! Three layouts exist on disk (spec §2):
//!
//! * two-file (granular ≥ 0.22): `<name>.bag` holds the records back to back, `<name>.idx`
//!   one u64 little-endian END offset per record;
//! * single-file v1 (bags 0.5, granular ≤ 0.19): records, then START offsets `0, s1, …` and
//!   the total data length D;
//! * single-file v2 (granular 0.20–0.21): records, then END offsets whose last one is D.
//!
//! Every table is validated when it is read: offsets must not decrease, the table must lie
//! after the data it describes, and a two-file index must be a whole number of entries.
//! Any violation is [`ErrorKind::Corrupt`](reel_core::ErrorKind::Corrupt), so a record
//! range handed to a reader is always well formed.

use std::sync::Arc;

use reel_core::{Error, Limits, ReadAt, Result};

/// Bytes per table entry.
pub const ENTRY: u64 = 8;

/// How a bag stores its table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BagKind {
    /// `<name>.bag` plus `<name>.idx` of end offsets (granular ≥ 0.22).
    TwoFile,
    /// One file: records, start offsets, total length (bags 0.5, granular ≤ 0.19).
    SingleV1,
    /// One file: records, end offsets (granular 0.20–0.21).
    SingleV2,
}

impl BagKind {
    /// A short description for messages and [`SourceInfo::version`](reel_core::SourceInfo).
    pub fn describe(self) -> &'static str {
        match self {
            BagKind::TwoFile => "two-file bag (.bag + .idx)",
            BagKind::SingleV1 => "single-file bag v1 (start offsets + total)",
            BagKind::SingleV2 => "single-file bag v2 (end offsets)",
        }
    }
}

/// The validated record boundaries of one bag.
///
/// Record `i` spans `[start(i), end(i))` of the data, with `start(0) = 0` and
/// `start(i) = end(i - 1)`; offsets never decrease.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BagTable {
    kind: BagKind,
    ends: Arc<[u64]>,
}

impl BagTable {
    /// A table from end offsets, after checking that they never decrease.
    pub fn from_ends(kind: BagKind, ends: Vec<u64>) -> Result<Self> {
        if let Some(k) = ends.windows(2).position(|w| w[1] < w[0]) {
            return Err(Error::corrupt(format!(
                "bag offsets decrease: record {} ends at byte {} but record {} ends at byte {}",
                k,
                ends[k],
                k + 1,
                ends[k + 1]
            )));
        }
        Ok(BagTable { kind, ends: ends.into() })
    }

    /// The layout the table was read from.
    pub fn kind(&self) -> BagKind {
        self.kind
    }

    /// Number of records.
    pub fn len(&self) -> u64 {
        self.ends.len() as u64
    }

    /// Whether the bag has no records.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The end offset of every record.
    pub fn ends(&self) -> &[u64] {
        &self.ends
    }

    /// The start offset of every record (what a v1 table stores before its total).
    pub fn starts(&self) -> Vec<u64> {
        let mut v = Vec::with_capacity(self.ends.len());
        if !self.ends.is_empty() {
            v.push(0);
            v.extend_from_slice(&self.ends[..self.ends.len() - 1]);
        }
        v
    }

    /// Bytes of record data the table accounts for (the end of the last record).
    pub fn data_len(&self) -> u64 {
        self.ends.last().copied().unwrap_or(0)
    }

    /// Where record `i` starts.
    pub fn start(&self, i: u64) -> Option<u64> {
        match i {
            0 if !self.ends.is_empty() => Some(0),
            0 => None,
            _ => (i < self.len()).then(|| self.ends[i as usize - 1]),
        }
    }

    /// `(offset, len)` of record `i`.
    pub fn range(&self, i: u64) -> Option<(u64, u64)> {
        let start = self.start(i)?;
        Some((start, self.ends[i as usize] - start))
    }

    /// Warms the table entries [`range`](Self::range) reads for record `i`: its end, and
    /// its start (the previous end, on the cache line before one time in eight).
    pub fn prefetch(&self, i: u64) {
        let Ok(i) = usize::try_from(i) else { return };
        for entry in [i.checked_sub(1), Some(i)].into_iter().flatten() {
            if let Some(end) = self.ends.get(entry) {
                reel_core::prefetch_read(end);
            }
        }
    }

    /// `(offset, len)` of the `count` consecutive records from `first` (one contiguous read).
    pub fn span(&self, first: u64, count: u64) -> Option<(u64, u64)> {
        if count == 0 {
            return Some((self.start(first).unwrap_or_else(|| self.data_len()), 0));
        }
        let last = first.checked_add(count - 1)?;
        let start = self.start(first)?;
        let end = *self.ends.get(usize::try_from(last).ok()?)?;
        Some((start, end - start))
    }
}

/// Parses a two-file index (`<name>.idx`): u64 little-endian end offsets.
///
/// A length that is not a multiple of 8 is a torn entry from an interrupted write. The
/// reference ignores it (and a resuming reference writer then misaligns the table); reel
/// reports it as corruption. Use a resuming writer to repair such a bag.
pub fn parse_index(idx: &[u8]) -> Result<BagTable> {
    if !(idx.len() as u64).is_multiple_of(ENTRY) {
        return Err(torn_index(idx.len() as u64));
    }
    BagTable::from_ends(BagKind::TwoFile, read_u64s(idx)?)
}

/// The error for an index file of `len` bytes that ends in a partial entry.
pub(crate) fn torn_index(len: u64) -> Error {
    Error::corrupt(format!(
        "index file is {len} bytes, not a whole number of 8-byte entries: its last entry is torn \
         (an interrupted write; resume the writer to repair it)"
    ))
    .with_offset(len / ENTRY * ENTRY)
}

/// Parses a whole single-file bag (v1 or v2) held in memory. See [`read_single_file`].
pub fn parse_single_file(bytes: &[u8]) -> Result<BagTable> {
    let size = bytes.len() as u64;
    match single_file_table_start(size, |off| Ok(u64_at(bytes, off)))? {
        None => BagTable::from_ends(BagKind::SingleV2, Vec::new()),
        Some(table_start) => table_from_entries(table_start, &bytes[table_start as usize..]),
    }
}

/// Reads and validates the table of single-file bag `file`, detecting v1 or v2 the way
/// granular 0.20+ does: the last u64 is the table start T; if the u64 at T is 0 the table
/// is a v1 start-offset table (skip that zero), otherwise v2 end offsets.
///
/// A 0-byte file is an empty v2 bag and 8 zero bytes an empty v1 bag. Unlike the reference
/// (which takes any file shorter than 8 bytes for empty), a 1–7 byte file, a table start
/// past the end, a table that is not a whole number of entries, and offsets that decrease
/// or exceed the table start are all corruption.
pub fn read_single_file(files: &dyn ReadAt, file: u32, limits: &Limits) -> Result<BagTable> {
    let size = files.file_len(file);
    let start = single_file_table_start(size, |off| {
        let mut b = [0u8; 8];
        files.read_exact_at(file, off, &mut b)?;
        Ok(u64::from_le_bytes(b))
    })?;
    let Some(table_start) = start else {
        return BagTable::from_ends(BagKind::SingleV2, Vec::new());
    };
    let table_len = size - table_start;
    limits.check_metadata(table_len)?;
    let table = files.read_to_vec(file, table_start, table_len)?;
    table_from_entries(table_start, &table)
}

/// Where the table of a single-file bag of `size` bytes starts (`None` for a 0-byte bag).
fn single_file_table_start(
    size: u64,
    read_u64: impl Fn(u64) -> Result<u64>,
) -> Result<Option<u64>> {
    if size == 0 {
        return Ok(None);
    }
    if size < ENTRY {
        return Err(Error::corrupt(format!(
            "single-file bag is {size} bytes, too short for its 8-byte table pointer"
        )));
    }
    let table_start = read_u64(size - ENTRY)?;
    if table_start > size - ENTRY {
        return Err(Error::corrupt(format!(
            "single-file bag says its offset table starts at byte {table_start}, past the end of \
             its {size} bytes"
        ))
        .with_offset(size - ENTRY));
    }
    if !(size - table_start).is_multiple_of(ENTRY) {
        return Err(Error::corrupt(format!(
            "single-file bag's offset table (bytes {table_start}..{size}) is not a whole number \
             of 8-byte entries"
        ))
        .with_offset(table_start));
    }
    Ok(Some(table_start))
}

/// Builds the table from the entries stored from `table_start` to the end of the file.
fn table_from_entries(table_start: u64, table: &[u8]) -> Result<BagTable> {
    let entries = read_u64s(table)?;
    let (kind, ends) = match entries.first() {
        // v1: start(0) = 0, start(1), …, D. Dropping the leading zero leaves the end offsets.
        Some(0) => (BagKind::SingleV1, entries[1..].to_vec()),
        _ => (BagKind::SingleV2, entries),
    };
    // The last entry is the u64 the table start was read from, so it equals the table start
    // by construction; offsets that never decrease therefore all lie within the data.
    BagTable::from_ends(kind, ends).map_err(|e| e.with_offset(table_start))
}

/// The little-endian u64s of a table read from a file, allocated fallibly (the table may
/// be as large as a sparse file claims).
fn read_u64s(bytes: &[u8]) -> Result<Vec<u64>> {
    let mut v = reel_core::try_vec_with_capacity(
        (bytes.len() / ENTRY as usize) as u64,
        u64::MAX,
        "the bag's offset table",
    )?;
    v.extend(
        bytes
            .chunks_exact(ENTRY as usize)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap_or_default())),
    );
    Ok(v)
}

fn u64_at(bytes: &[u8], off: u64) -> u64 {
    usize::try_from(off)
        .ok()
        .and_then(|o| bytes.get(o..o.checked_add(8)?))
        .map_or(0, |b| u64::from_le_bytes(b.try_into().unwrap_or_default()))
}

/// The bytes of a single-file bag holding `records` (for writers and tests).
pub fn single_file_bytes(kind: BagKind, records: &[&[u8]]) -> Vec<u8> {
    let mut out: Vec<u8> = records.concat();
    let mut ends = Vec::with_capacity(records.len());
    let mut pos = 0u64;
    for r in records {
        pos += r.len() as u64;
        ends.push(pos);
    }
    append_single_file_table(&mut out, kind, &ends);
    out
}

/// Appends the table of a single-file bag whose records end at `ends`.
pub(crate) fn append_single_file_table(out: &mut Vec<u8>, kind: BagKind, ends: &[u64]) {
    let total = ends.last().copied().unwrap_or(0);
    if kind == BagKind::SingleV1 {
        out.extend_from_slice(&0u64.to_le_bytes());
        for e in ends.iter().take(ends.len().saturating_sub(1)) {
            out.extend_from_slice(&e.to_le_bytes());
        }
        if !ends.is_empty() {
            out.extend_from_slice(&total.to_le_bytes());
        }
    } else {
        for e in ends {
            out.extend_from_slice(&e.to_le_bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reel_core::ErrorKind;

    #[test]
    fn spec_examples_parse() {
        // spec §10.3: label.bag of bags 0.5.1 = data 07, table 0, 1, 1.
        let mut v1 = vec![7u8];
        for x in [0u64, 1, 1] {
            v1.extend_from_slice(&x.to_le_bytes());
        }
        let t = parse_single_file(&v1).unwrap();
        assert_eq!((t.kind(), t.ends()), (BagKind::SingleV1, &[1, 1][..]));
        assert_eq!(t.range(0), Some((0, 1)));
        assert_eq!(t.range(1), Some((1, 0)));
        assert_eq!(t.starts(), vec![0, 1]);
        // spec §10.2: label.bag of granular 0.21 = data 07 2c 01 01, ends 1, 3, 4.
        let v2 = single_file_bytes(BagKind::SingleV2, &[b"\x07", b"\x2c\x01", b"\x01"]);
        assert_eq!(v2.len(), 28);
        let t = parse_single_file(&v2).unwrap();
        assert_eq!((t.kind(), t.ends()), (BagKind::SingleV2, &[1, 3, 4][..]));
        assert_eq!(t.span(1, 2), Some((1, 3)));
        assert_eq!(t.starts(), vec![0, 1, 3]);
    }

    #[test]
    fn empty_bags() {
        assert!(parse_single_file(&[]).unwrap().is_empty());
        let t = parse_single_file(&[0; 8]).unwrap();
        assert_eq!((t.kind(), t.len()), (BagKind::SingleV1, 0));
        assert_eq!(single_file_bytes(BagKind::SingleV1, &[]), vec![0; 8]);
        assert!(single_file_bytes(BagKind::SingleV2, &[]).is_empty());
        // All-empty v1 records: (N + 1) zero words.
        let t = parse_single_file(&[0; 32]).unwrap();
        assert_eq!(t.ends(), &[0, 0, 0]);
    }

    #[test]
    fn inconsistencies_are_corrupt() {
        let corrupt = |b: &[u8]| parse_single_file(b).unwrap_err().kind();
        assert_eq!(corrupt(&[1, 2, 3]), ErrorKind::Corrupt);
        // Table start past the end.
        assert_eq!(corrupt(&100u64.to_le_bytes()), ErrorKind::Corrupt);
        // Not a whole number of entries: 3 data bytes + pointer 0..
        let mut b = vec![1, 2, 3];
        b.extend_from_slice(&1u64.to_le_bytes());
        assert_eq!(corrupt(&b), ErrorKind::Corrupt);
        // Decreasing offsets.
        let mut b = vec![0u8; 4];
        for x in [3u64, 1, 4] {
            b.extend_from_slice(&x.to_le_bytes());
        }
        assert_eq!(corrupt(&b), ErrorKind::Corrupt);
        // Torn two-file index entry.
        assert_eq!(parse_index(&[0; 12]).unwrap_err().kind(), ErrorKind::Corrupt);
        let mut idx = Vec::new();
        for x in [5u64, 2] {
            idx.extend_from_slice(&x.to_le_bytes());
        }
        assert_eq!(parse_index(&idx).unwrap_err().kind(), ErrorKind::Corrupt);
    }
}
