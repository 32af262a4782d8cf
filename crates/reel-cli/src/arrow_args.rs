//! Options of `reel convert` for Parquet and Arrow IPC targets.

use std::path::PathBuf;

use clap::Args;
use reel::Format;
use reel::arrow::{Compression, WriteOptions};

/// Settings for `--to parquet` and `--to arrow`.
#[derive(Args, Debug, Clone)]
pub struct ArrowArgs {
    /// Parquet compression: none, snappy, zstd or zstd:LEVEL [default: zstd].
    #[arg(long, help_heading = "Parquet / Arrow targets")]
    compression: Option<String>,
    /// Parquet: rows per row group at most [default: 1048576].
    #[arg(long, help_heading = "Parquet / Arrow targets")]
    row_group_rows: Option<usize>,
    /// Parquet: encoded bytes per row group at most (K, M, G suffixes) [default: 16M]. A row
    /// group is held in memory until written, so with --batch-bytes this bounds the memory
    /// used; row groups no larger than a batch as encoded are written as each batch arrives
    /// (fastest).
    #[arg(long, help_heading = "Parquet / Arrow targets")]
    row_group_bytes: Option<String>,
    /// Bytes of values per Arrow batch at most (K, M, G suffixes) [default: 16M].
    #[arg(long, help_heading = "Parquet / Arrow targets")]
    batch_bytes: Option<String>,
    /// Records sampled to infer the schema of fields that vary per record [default: 1000].
    #[arg(long, help_heading = "Parquet / Arrow targets")]
    sample: Option<usize>,
    /// Use the schema of this Parquet or Arrow IPC file instead of inferring one.
    #[arg(long, help_heading = "Parquet / Arrow targets")]
    schema_from: Option<PathBuf>,
    /// Add the column `_index`: each record's index in the source.
    #[arg(long, help_heading = "Parquet / Arrow targets")]
    with_index: bool,
    /// Add the columns `_file`, `_offset` and `_length`: where the source stores each
    /// record (the file of its first byte range and the byte range of that file holding it).
    #[arg(long, help_heading = "Parquet / Arrow targets")]
    with_location: bool,
    /// 64-bit offsets (large_binary / large_utf8) for columns over 2 GiB per batch.
    #[arg(long, help_heading = "Parquet / Arrow targets")]
    large_types: bool,
}

/// `123`, `64K`, `128M`, `2G` (powers of 1024; [`crate::bench::parse_size`]) given to
/// `option`, above zero and within `usize`; each refusal says which of these it broke.
fn parse_size(s: &str, option: &str) -> reel::Result<usize> {
    let bad = |why: &str| reel::Error::invalid_input(format!("{option} {s:?}: {why}"));
    let n = crate::bench::parse_size(s)
        .map_err(|_| bad("expected a number of bytes, optionally with K, M or G"))?;
    if n == 0 {
        return Err(bad("must be at least 1 byte (0 is not allowed)"));
    }
    usize::try_from(n).map_err(|_| bad("too large for this machine"))
}

/// A count given to `option`, which must be at least 1: 0 is refused rather than quietly
/// taken as 1.
fn at_least_one(n: usize, option: &str) -> reel::Result<usize> {
    if n == 0 {
        return Err(reel::Error::invalid_input(format!("{option} 0: {option} must be at least 1")));
    }
    Ok(n)
}

impl ArrowArgs {
    /// The writer options these arguments ask for, for a conversion to `to`. Options the
    /// target would not use are refused rather than ignored: every one of them with a
    /// target other than Parquet or Arrow IPC, and the row-group and compression settings
    /// with Arrow IPC (written uncompressed, in batches).
    pub fn options(&self, to: Format) -> reel::Result<WriteOptions> {
        let given = self.given();
        let parquet_only = ["--compression", "--row-group-rows", "--row-group-bytes"];
        let ignored: Vec<&str> = match to {
            Format::Parquet => Vec::new(),
            Format::ArrowIpc => given.into_iter().filter(|o| parquet_only.contains(o)).collect(),
            _ => given,
        };
        if let Some(first) = ignored.first() {
            let applies = if parquet_only.contains(first) {
                "--to parquet"
            } else {
                "--to parquet and --to arrow"
            };
            return Err(reel::Error::invalid_input(format!(
                "{first} applies to {applies}, not to --to {}",
                to.name()
            )));
        }
        let defaults = WriteOptions::default();
        let mut o = WriteOptions {
            compression: match &self.compression {
                Some(c) => c.parse::<Compression>()?,
                None => defaults.compression,
            },
            row_group_rows: match self.row_group_rows {
                Some(n) => at_least_one(n, "--row-group-rows")?,
                None => defaults.row_group_rows,
            },
            row_group_bytes: match &self.row_group_bytes {
                Some(b) => parse_size(b, "--row-group-bytes")?,
                None => defaults.row_group_bytes,
            },
            ..defaults
        };
        if let Some(b) = &self.batch_bytes {
            o.arrow.batch_bytes = parse_size(b, "--batch-bytes")?;
        }
        if let Some(n) = self.sample {
            o.arrow.sample_records = at_least_one(n, "--sample")?;
        }
        o.arrow.extra.index = self.with_index;
        o.arrow.extra.location = self.with_location;
        o.arrow.large_types = self.large_types;
        if let Some(path) = &self.schema_from {
            o.arrow.schema = Some(reel::arrow::schema_of_file(path)?);
        }
        Ok(o)
    }

    /// The options the command line gave, by name.
    fn given(&self) -> Vec<&'static str> {
        [
            (self.compression.is_some(), "--compression"),
            (self.row_group_rows.is_some(), "--row-group-rows"),
            (self.row_group_bytes.is_some(), "--row-group-bytes"),
            (self.batch_bytes.is_some(), "--batch-bytes"),
            (self.sample.is_some(), "--sample"),
            (self.schema_from.is_some(), "--schema-from"),
            (self.with_index, "--with-index"),
            (self.with_location, "--with-location"),
            (self.large_types, "--large-types"),
        ]
        .into_iter()
        .filter_map(|(given, name)| given.then_some(name))
        .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        let size = |s| parse_size(s, "--row-group-bytes");
        assert_eq!(size("128M").unwrap(), 128 << 20);
        assert_eq!(size("4k").unwrap(), 4096);
        assert_eq!(size("77").unwrap(), 77);
        let zero = size("0").unwrap_err().to_string();
        assert!(zero.contains("--row-group-bytes") && zero.contains("0 is not allowed"), "{zero}");
        assert!(size("M").unwrap_err().to_string().contains("expected a number"));
        assert!(size("99999999999G").is_err());
    }

    #[test]
    fn zero_counts_are_refused() {
        let e = at_least_one(0, "--row-group-rows").unwrap_err();
        assert_eq!(e.kind(), reel::ErrorKind::InvalidInput);
        assert!(e.to_string().contains("--row-group-rows must be at least 1"), "{e}");
        assert_eq!(at_least_one(5, "--sample").unwrap(), 5);
    }
}
