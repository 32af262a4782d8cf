//! A conversion in shards ([`ConvertOptions::shard`](super::ConvertOptions::shard)) writes
//! part `k` of `n` into a directory that the other shards fill. Shards run with different
//! counts (`--shard 0/2`, then `--shard 1/3`) or from different sources, or written into a
//! directory that holds another dataset already, make a directory that opens and verifies
//! clean while it holds some records twice and lacks others: nothing in a part's name or
//! bytes says which count it was cut for. So before a shard writes, it looks at the parts
//! already in the directory: a name that no part of `n` has is refused, and so is a part
//! whose record count is not the count its number has in `n` parts of this source.
//!
//! It looks at a few parts ([`PARTS_CHECKED`]), not all: `n` shards checking every other
//! part would open `n²` parts, and a mixed count shows in any part. Parts still being
//! written are staged under hidden names and not seen; a Gulp chunk is checked by name only
//! (a chunk does not open without its directory). Destinations in object stores are not
//! checked.

use std::ops::Range;
use std::path::Path;

use reel_core::{Error, Result};

use super::part_names;
use crate::{Format, OpenOptions};

/// How many of the parts already in the directory a shard opens to check their record
/// counts.
pub(super) const PARTS_CHECKED: usize = 8;

/// The records (of `total`) part `k` of `count` holds.
pub(super) fn part_range(k: u64, count: u64, total: u64) -> Range<u64> {
    let at = |k: u64| (u128::from(k) * u128::from(total) / u128::from(count)) as u64;
    at(k)..at(k + 1)
}

/// Refuses to write part `k` of `count` (of a source of `total` records) in `format` into
/// `dir` when a part there was cut for another count or from another source (see the
/// module documentation). A `dir` that does not exist yet holds nothing to check.
pub(super) fn check_parts_present(
    dir: &Path,
    format: Format,
    k: u64,
    count: u64,
    total: u64,
) -> Result<()> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Ok(()) };
    let mut present: Vec<(String, Option<u64>)> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let number = part_number(format, &name)?;
            let j = part_of(format, &name, number, count);
            Some((name, j))
        })
        .collect();
    present.sort();
    let other_count = |name: &str| {
        Error::invalid_input(format!(
            "{name} is not one of the names of {count} parts: the directory holds a part of a \
             conversion into another number of shards (write every shard with the same \
             --shard K/{count}, into a directory of its own)"
        ))
        .with_path(dir)
    };
    if let Some((name, _)) = present.iter().find(|(_, j)| j.is_none()) {
        return Err(other_count(name));
    }
    let others =
        present.iter().filter_map(|(name, j)| Some((name, (*j)?))).filter(|(_, j)| *j != k);
    for (name, j) in others.take(PARTS_CHECKED) {
        // A Gulp chunk is two files of a directory, and opens only with it.
        if format == Format::Gulp {
            continue;
        }
        let path = dir.join(name);
        let part = crate::open_as(&path, format, &OpenOptions::default())?;
        let expected = part_range(j, count, total);
        let expected = expected.end - expected.start;
        if part.len() != expected {
            return Err(Error::invalid_input(format!(
                "{name} holds {} records, but part {j} of {count} of this source holds \
                 {expected}: it was written with another shard count or from another source \
                 (write every shard of one conversion with the same --shard K/{count}, into \
                 a directory of its own)",
                part.len()
            ))
            .with_path(dir));
        }
    }
    Ok(())
}

/// The number in `name` when it is named as a part of `format` is named (by
/// [`part_names`], for some count): `PART_00003.ffr`, `part-00003`, `000003`,
/// `data_13.gulp`, …
fn part_number(format: Format, name: &str) -> Option<u64> {
    let (prefix, suffix) = match format {
        Format::Ffrecord => ("PART_", ".ffr"),
        Format::Ofrecord => ("part-", ""),
        Format::Syrah => ("part-", ".syr"),
        Format::Granular | Format::Bags => ("", ""),
        Format::Parquet => ("part-", ".parquet"),
        Format::ArrowIpc => ("part-", ".arrow"),
        Format::Gulp => ("data_", ".gulp"),
    };
    let digits = name.strip_prefix(prefix)?.strip_suffix(suffix)?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// Which part of `count` the part named `name` (with number `number`) is, or `None` when
/// no part of `count` has that name (its number is past the last part, or padded to
/// another width).
fn part_of(format: Format, name: &str, number: u64, count: u64) -> Option<u64> {
    let j = match format {
        // Chunk numbers are offset so that their names sort in order (see `part_names`).
        Format::Gulp => number.checked_sub(super::gulp_chunk_number(0, count))?,
        _ => number,
    };
    (j < count && part_names(format, j, count).first().map(String::as_str) == Some(name))
        .then_some(j)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn part_names_are_told_by_the_count_they_were_cut_for() {
        assert_eq!(part_number(Format::Ffrecord, "PART_00003.ffr"), Some(3));
        assert_eq!(part_number(Format::Ffrecord, "PART_3x.ffr"), None);
        assert_eq!(part_number(Format::Ofrecord, "part-00003"), Some(3));
        assert_eq!(part_number(Format::Ofrecord, "part-"), None);
        assert_eq!(part_number(Format::Granular, "000003"), Some(3));
        assert_eq!(part_of(Format::Ffrecord, "PART_00003.ffr", 3, 4), Some(3));
        // Past the last part, or padded for another count.
        assert_eq!(part_of(Format::Ffrecord, "PART_00003.ffr", 3, 3), None);
        assert_eq!(part_of(Format::Ffrecord, "PART_000003.ffr", 3, 4), None);
        assert_eq!(part_of(Format::Gulp, "data_13.gulp", 13, 20), Some(3));
        assert_eq!(part_of(Format::Gulp, "data_3.gulp", 3, 20), None);
        assert_eq!(part_range(1, 3, 100), 33..66);
    }
}
