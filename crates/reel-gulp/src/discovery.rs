//! Finding the chunks of a gulp directory, in the reference's order.
//!
//! gulpio2 globs `data*.gulp` and `meta*.gmeta`, sorts each list by file name, takes the
//! first run of decimal digits in each name as the chunk number and pairs the lists
//! position by position, insisting that both have the same numbers in the same order.
//! Sorting by name means `data_10.gulp` comes before `data_2.gulp`: a directory with more
//! than ten chunks is read in the order 0, 1, 10, 11, …, 2, 3, … and reel keeps that order,
//! so record `i` is the same video in both.

use std::path::{Path, PathBuf};

use reel_core::{Error, Result, Store};

use crate::FORMAT;

/// The two files of one chunk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChunkPaths {
    /// The chunk number (the first number in the file names).
    pub number: u64,
    /// `data_<n>.gulp`: the frames.
    pub data: PathBuf,
    /// `meta_<n>.gmeta`: the JSON index and metadata.
    pub meta: PathBuf,
}

/// The number to give chunk `k` of `count` chunks written in order, so that the reference's
/// name order (lexicographic: `data_10` sorts before `data_2`) is the write order: `k` itself
/// for at most ten chunks, else `k` offset to the first number with enough digits for all of
/// them (`10 + k` up to 90 chunks, `100 + k` up to 900, …). Chunk numbers cannot be
/// zero-padded: the reference takes `data_01` and `data_1` as the same chunk.
pub fn ordered_chunk_number(k: u64, count: u64) -> u64 {
    if count <= 10 {
        return k;
    }
    let mut first = 10u64;
    while 9u64.saturating_mul(first) < count {
        first = first.saturating_mul(10);
    }
    first.saturating_add(k)
}

/// The file name of chunk `n`'s data file, as the reference names new chunks.
pub fn data_file_name(n: u64) -> String {
    format!("data_{n}.gulp")
}

/// The file name of chunk `n`'s meta file, as the reference names new chunks.
pub fn meta_file_name(n: u64) -> String {
    format!("meta_{n}.gmeta")
}

/// Whether `name` matches the reference's glob `data*.gulp`.
pub fn is_data_name(name: &str) -> bool {
    name.len() >= "data.gulp".len() && name.starts_with("data") && name.ends_with(".gulp")
}

/// Whether `name` matches the reference's glob `meta*.gmeta`.
pub fn is_meta_name(name: &str) -> bool {
    name.len() >= "meta.gmeta".len() && name.starts_with("meta") && name.ends_with(".gmeta")
}

/// The chunk number in a file name: its first run of ASCII digits. `None` when there is
/// none (the reference crashes on such a name) or it does not fit in 64 bits.
pub fn chunk_number(name: &str) -> Option<u64> {
    let start = name.find(|c: char| c.is_ascii_digit())?;
    let rest = &name[start..];
    let end = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
    rest[..end].parse().ok()
}

/// The chunk files in `dir` as the reference sees them: names matching the globs, each list
/// sorted by name. Names that are not valid UTF-8 are compared by their bytes.
pub(crate) struct Listing {
    pub data: Vec<(String, PathBuf)>,
    pub meta: Vec<(String, PathBuf)>,
}

pub(crate) fn list(store: &dyn Store, dir: &Path) -> Result<Listing> {
    let entries = store.list(dir).map_err(|e| e.with_format(FORMAT))?;
    let mut data = Vec::new();
    let mut meta = Vec::new();
    for entry in entries {
        let name = entry.name().into_owned();
        if is_data_name(&name) {
            data.push((name, entry.path));
        } else if is_meta_name(&name) {
            meta.push((name, entry.path));
        }
    }
    let by_bytes = |a: &(String, PathBuf), b: &(String, PathBuf)| {
        a.1.file_name()
            .map(|n| n.as_encoded_bytes())
            .cmp(&b.1.file_name().map(|n| n.as_encoded_bytes()))
    };
    data.sort_by(by_bytes);
    meta.sort_by(by_bytes);
    Ok(Listing { data, meta })
}

/// Pairs sorted data and meta names into chunks, with the reference's rules: equal counts,
/// a number in every name, the same numbers in the same order. Reel also refuses two
/// chunks with the same number (`data_1` and `data_01`), which the reference silently
/// merges into one lookup entry.
pub(crate) fn pair(listing: Listing) -> Result<Vec<ChunkPaths>> {
    let numbered = |list: &[(String, PathBuf)]| -> Result<Vec<u64>> {
        list.iter()
            .map(|(name, path)| {
                chunk_number(name).ok_or_else(|| {
                    Error::corrupt(format!(
                        "chunk file name {name:?} has no chunk number (the reference crashes on \
                         it too)"
                    ))
                    .with_path(path)
                })
            })
            .collect()
    };
    let data_numbers = numbered(&listing.data)?;
    let meta_numbers = numbered(&listing.meta)?;
    if data_numbers != meta_numbers {
        let only = |a: &[u64], b: &[u64]| -> Vec<u64> {
            a.iter().filter(|n| !b.contains(n)).copied().collect()
        };
        return Err(Error::corrupt(format!(
            "data and meta files do not pair up: {} data file(s) numbered {:?}, {} meta file(s) \
             numbered {:?}; without a partner: data {:?}, meta {:?}",
            data_numbers.len(),
            data_numbers,
            meta_numbers.len(),
            meta_numbers,
            only(&data_numbers, &meta_numbers),
            only(&meta_numbers, &data_numbers),
        )));
    }
    let mut seen = std::collections::HashSet::new();
    for n in &data_numbers {
        if !seen.insert(*n) {
            return Err(Error::corrupt(format!(
                "two chunks are numbered {n} (for example data_{n} and data_0{n})"
            )));
        }
    }
    Ok(listing
        .data
        .into_iter()
        .zip(listing.meta)
        .zip(data_numbers)
        .map(|(((_, data), (_, meta)), number)| ChunkPaths { number, data, meta })
        .collect())
}

/// The chunks of the gulp directory `dir`, in the order the reference reads them.
pub fn discover_chunks(dir: impl AsRef<Path>) -> Result<Vec<ChunkPaths>> {
    discover_chunks_in(&reel_core::LocalStore, dir.as_ref())
}

/// [`discover_chunks`] of a directory in `store`.
pub fn discover_chunks_in(store: &dyn Store, dir: &Path) -> Result<Vec<ChunkPaths>> {
    pair(list(store, dir)?).map_err(|e| e.with_path(dir).with_format(FORMAT))
}

/// The number the next new chunk gets: one more than the largest existing number, 0 for a
/// directory without chunks (the reference's `_next_chunk_id`).
pub fn next_chunk_number(chunks: &[ChunkPaths]) -> Result<u64> {
    match chunks.iter().map(|c| c.number).max() {
        None => Ok(0),
        Some(n) => n.checked_add(1).ok_or_else(|| {
            Error::unsupported("the chunk numbers are exhausted (the largest is 2^64 - 1)")
        }),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn names_and_numbers() {
        assert!(
            is_data_name("data_0.gulp") && is_data_name("data.gulp") && is_data_name("dataX7.gulp")
        );
        assert!(!is_data_name("data_0.gulp.tmp") && !is_data_name(".data_0.gulp.reel-tmp-1-2"));
        assert!(is_meta_name("meta_12.gmeta") && !is_meta_name("meta_1.gulp"));
        assert_eq!(chunk_number("data_10.gulp"), Some(10));
        assert_eq!(chunk_number("meta_007.gmeta"), Some(7));
        assert_eq!(chunk_number("data.gulp"), None);
        assert_eq!(chunk_number("data_99999999999999999999999.gulp"), None);
    }

    #[test]
    fn ordered_chunk_numbers_sort_by_name_in_write_order() {
        for count in [1, 2, 10, 11, 90, 91, 900, 901, 2000] {
            let names: Vec<String> =
                (0..count).map(|k| data_file_name(ordered_chunk_number(k, count))).collect();
            let mut sorted = names.clone();
            sorted.sort();
            assert_eq!(names, sorted, "{count} chunks");
        }
        assert_eq!(ordered_chunk_number(3, 10), 3);
        assert_eq!(ordered_chunk_number(0, 11), 10);
        assert_eq!(ordered_chunk_number(0, 91), 100);
    }

    #[test]
    fn reference_order_and_pairing() {
        let dir = tempfile::tempdir().unwrap();
        for n in [0, 1, 2, 10, 11] {
            std::fs::write(dir.path().join(data_file_name(n)), b"").unwrap();
            std::fs::write(dir.path().join(meta_file_name(n)), b"{}").unwrap();
        }
        std::fs::write(dir.path().join("label2idx.json"), b"{}").unwrap();
        let chunks = discover_chunks(dir.path()).unwrap();
        let numbers: Vec<u64> = chunks.iter().map(|c| c.number).collect();
        assert_eq!(numbers, [0, 1, 10, 11, 2]);
        assert_eq!(next_chunk_number(&chunks).unwrap(), 12);
        std::fs::remove_file(dir.path().join(meta_file_name(11))).unwrap();
        let e = discover_chunks(dir.path()).unwrap_err();
        assert_eq!(e.kind(), reel_core::ErrorKind::Corrupt);
        assert!(e.to_string().contains("without a partner: data [11]"), "{e}");
        std::fs::remove_file(dir.path().join(data_file_name(11))).unwrap();
        std::fs::write(dir.path().join("data.gulp"), b"").unwrap();
        std::fs::write(dir.path().join("meta.gmeta"), b"").unwrap();
        assert!(discover_chunks(dir.path()).unwrap_err().to_string().contains("no chunk number"));
    }
}
