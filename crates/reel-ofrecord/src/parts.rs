//! Part-file naming and finding the parts of a dataset directory.

use std::path::{Path, PathBuf};

use reel_core::{Error, ErrorKind, Result, Store};

use crate::FORMAT;

/// How part files are named: `prefix` followed by the part number, zero-padded to at
/// least `suffix_length` digits (OneFlow's `part_name_prefix` and
/// `part_name_suffix_length`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartNaming {
    /// The text before the number (OneFlow's default: `"part-"`).
    pub prefix: String,
    /// Minimum number of digits; `None` for no padding (OneFlow's `-1`).
    pub suffix_length: Option<u32>,
}

impl Default for PartNaming {
    /// `part-` with no fixed width: reading accepts `part-0` … as well as `part-00000` …
    /// (the width is taken from part 0).
    fn default() -> Self {
        PartNaming { prefix: "part-".into(), suffix_length: None }
    }
}

impl PartNaming {
    /// `prefix` with numbers padded to `suffix_length` digits.
    pub fn new(prefix: impl Into<String>, suffix_length: Option<u32>) -> Self {
        PartNaming { prefix: prefix.into(), suffix_length }
    }

    /// OneFlow's two attributes as they appear in its API: a suffix length of `-1` (or
    /// anything below 1) means no padding.
    pub fn oneflow(prefix: impl Into<String>, suffix_length: i32) -> Self {
        let width = u32::try_from(suffix_length).ok().filter(|&w| w > 0);
        PartNaming::new(prefix, width)
    }

    /// `part-00000` style names (what reel's writer uses by default, and the golden files).
    pub fn padded5() -> Self {
        PartNaming::new("part-", Some(5))
    }

    /// The file name of part `index`.
    pub fn name(&self, index: u64) -> String {
        let width = self.suffix_length.unwrap_or(0) as usize;
        format!("{}{index:0width$}", self.prefix)
    }

    /// The part number of `file_name` if it is the prefix followed by decimal digits only
    /// (and, with a fixed `suffix_length`, exactly the name [`name`](Self::name) gives).
    pub fn parse(&self, file_name: &str) -> Option<u64> {
        let digits = file_name.strip_prefix(&self.prefix)?;
        if digits.is_empty() || digits.len() > 18 || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let n: u64 = digits.parse().ok()?;
        if self.suffix_length.is_some() && self.name(n) != file_name {
            return None;
        }
        Some(n)
    }

    /// The paths OneFlow opens for `count` parts in `dir` (it never lists the directory).
    pub fn paths(&self, dir: &Path, count: u64) -> Vec<PathBuf> {
        (0..count).map(|i| dir.join(self.name(i))).collect()
    }
}

/// The part files a path stands for.
///
/// * A file is a one-part dataset, whatever its name.
/// * A directory with `part_count` given: exactly the names OneFlow opens for that many
///   parts; a missing one is [`ErrorKind::NotFound`] (OneFlow aborts with "Fail to open
///   file").
/// * A directory without `part_count`: every entry named by `naming` (prefix + digits),
///   in numeric order (so `part-10` comes after `part-9`, as OneFlow numbers them, not as
///   names sort). The numbers must run 0, 1, 2, … without a gap (OneFlow would fail on
///   the missing part) and each must appear once (`part-1` next to `part-01` is refused as
///   ambiguous). Other entries (`expected.json`, `_SUCCESS`, …) are ignored.
pub fn dataset_files(
    path: &Path,
    naming: &PartNaming,
    part_count: Option<u64>,
) -> Result<Vec<PathBuf>> {
    dataset_files_in(&reel_core::LocalStore, path, naming, part_count)
}

/// [`dataset_files`] of a dataset in `store`.
pub fn dataset_files_in(
    store: &dyn Store,
    path: &Path,
    naming: &PartNaming,
    part_count: Option<u64>,
) -> Result<Vec<PathBuf>> {
    // Stat first: a FIFO, device or socket is refused here instead of blocking later.
    let kind = store.stat(path).map_err(|e| e.with_format(FORMAT))?;
    if kind != reel_core::paths::InputKind::Dir {
        return Ok(vec![path.to_path_buf()]);
    }
    if let Some(count) = part_count {
        let paths = naming.paths(path, count);
        if let Some(missing) = paths.iter().find(|p| !store.is_file(p)) {
            return Err(Error::new(
                ErrorKind::NotFound,
                format!("part file {} of {count} is missing", file_name(missing)),
            )
            .with_path(missing)
            .with_format(FORMAT));
        }
        return Ok(paths);
    }
    let mut found: Vec<(u64, PathBuf)> = Vec::new();
    for entry in store.list(path).map_err(|e| e.with_format(FORMAT))? {
        let Some(n) = naming.parse(&entry.name()) else {
            continue;
        };
        // Anything so named but a directory is a part, so a FIFO or a dangling link is
        // reported when opened rather than silently left out.
        if !entry.is_dir {
            found.push((n, entry.path));
        }
    }
    if found.is_empty() {
        return Err(Error::new(
            ErrorKind::NotFound,
            format!("no part files (named {}<number>) in the directory", naming.prefix),
        )
        .with_path(path)
        .with_format(FORMAT));
    }
    found.sort();
    for (i, (n, p)) in found.iter().enumerate() {
        let i = i as u64;
        if *n == i {
            continue;
        }
        let (kind, message) = if *n < i {
            (
                ErrorKind::InvalidInput,
                format!(
                    "two part files have number {n} ({} and {}); pass the naming to use",
                    file_name(&found[i as usize - 1].1),
                    file_name(p)
                ),
            )
        } else {
            (
                ErrorKind::NotFound,
                format!(
                    "part number {i} is missing (found {} part files, the highest numbered {})",
                    found.len(),
                    found.last().map(|f| f.0).unwrap_or_default()
                ),
            )
        };
        return Err(Error::new(kind, message).with_path(path).with_format(FORMAT));
    }
    Ok(found.into_iter().map(|(_, p)| p).collect())
}

fn file_name(p: &Path) -> String {
    p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn names_follow_oneflow() {
        let unpadded = PartNaming::oneflow("part-", -1);
        assert_eq!(unpadded.name(0), "part-0");
        assert_eq!(unpadded.name(10), "part-10");
        let padded = PartNaming::oneflow("part-", 5);
        assert_eq!(padded.name(7), "part-00007");
        assert_eq!(padded.name(123456), "part-123456");
        assert_eq!(padded.parse("part-00007"), Some(7));
        assert_eq!(padded.parse("part-7"), None);
        assert_eq!(unpadded.parse("part-00007"), Some(7));
        assert_eq!(unpadded.parse("part-"), None);
        assert_eq!(unpadded.parse("part-1a"), None);
        assert_eq!(unpadded.parse("part-00000-3f2a.snappy"), None);
        assert_eq!(PartNaming::new("shard_", Some(3)).name(4), "shard_004");
    }

    #[test]
    fn directories_list_in_numeric_order_and_refuse_gaps() {
        let dir = tempfile::tempdir().unwrap();
        for n in ["part-0", "part-1", "part-10", "part-2", "part-3", "part-4", "part-5"] {
            std::fs::write(dir.path().join(n), b"").unwrap();
        }
        for n in ["part-6", "part-7", "part-8", "part-9", "expected.json"] {
            std::fs::write(dir.path().join(n), b"").unwrap();
        }
        let files = dataset_files(dir.path(), &PartNaming::default(), None).unwrap();
        let names: Vec<_> = files.iter().map(|p| file_name(p)).collect();
        assert_eq!(names.len(), 11);
        assert_eq!(names[10], "part-10");
        assert_eq!(names[2], "part-2");
        std::fs::remove_file(dir.path().join("part-4")).unwrap();
        let e = dataset_files(dir.path(), &PartNaming::default(), None).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NotFound);
        assert!(e.message().contains("part number 4"), "{e}");
        let e = dataset_files(dir.path(), &PartNaming::default(), Some(5)).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NotFound);
        assert_eq!(dataset_files(dir.path(), &PartNaming::default(), Some(4)).unwrap().len(), 4);
        std::fs::write(dir.path().join("part-04"), b"").unwrap();
        assert_eq!(dataset_files(dir.path(), &PartNaming::default(), None).unwrap().len(), 11);
        std::fs::write(dir.path().join("part-004"), b"").unwrap();
        let e = dataset_files(dir.path(), &PartNaming::default(), None).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput);
        let empty = tempfile::tempdir().unwrap();
        let e = dataset_files(empty.path(), &PartNaming::default(), None).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NotFound);
    }
}
