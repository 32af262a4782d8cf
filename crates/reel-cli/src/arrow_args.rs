//! Options of `reel convert` for Parquet and Arrow IPC targets.

use std::path::PathBuf;

use clap::Args;
use reel::arrow::{Compression, WriteOptions};

/// Settings for `--to parquet` and `--to arrow`.
#[derive(Args, Debug, Clone)]
pub struct ArrowArgs {
    /// Parquet compression: none, snappy, zstd or zstd:LEVEL.
    #[arg(long, default_value = "zstd", help_heading = "Parquet / Arrow targets")]
    compression: String,
    /// Parquet: rows per row group at most.
    #[arg(long, default_value_t = 1 << 20, help_heading = "Parquet / Arrow targets")]
    row_group_rows: usize,
    /// Parquet: encoded bytes per row group at most (K, M, G suffixes). A row group is held
    /// in memory until written, so with --batch-bytes this bounds the memory used; row
    /// groups no larger than a batch as encoded are written as each batch arrives (fastest).
    #[arg(long, default_value = "16M", help_heading = "Parquet / Arrow targets")]
    row_group_bytes: String,
    /// Bytes of values per Arrow batch at most (K, M, G suffixes).
    #[arg(long, default_value = "16M", help_heading = "Parquet / Arrow targets")]
    batch_bytes: String,
    /// Records sampled to infer the schema of fields that vary per record.
    #[arg(long, default_value_t = 1000, help_heading = "Parquet / Arrow targets")]
    sample: usize,
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

/// `123`, `64K`, `128M`, `2G` (powers of 1024; [`crate::bench::parse_size`]), above zero
/// and within `usize`.
fn parse_size(s: &str) -> reel::Result<usize> {
    let bad =
        || reel::Error::invalid_input(format!("size {s:?}: expected a number with K, M or G"));
    crate::bench::parse_size(s)
        .ok()
        .and_then(|n| usize::try_from(n).ok())
        .filter(|&n| n > 0)
        .ok_or_else(bad)
}

impl ArrowArgs {
    /// The writer options these arguments ask for.
    pub fn options(&self) -> reel::Result<WriteOptions> {
        let mut o = WriteOptions {
            compression: self.compression.parse::<Compression>()?,
            row_group_rows: self.row_group_rows.max(1),
            row_group_bytes: parse_size(&self.row_group_bytes)?,
            ..Default::default()
        };
        o.arrow.batch_bytes = parse_size(&self.batch_bytes)?;
        o.arrow.sample_records = self.sample.max(1);
        o.arrow.extra.index = self.with_index;
        o.arrow.extra.location = self.with_location;
        o.arrow.large_types = self.large_types;
        if let Some(path) = &self.schema_from {
            o.arrow.schema = Some(reel::arrow::schema_of_file(path)?);
        }
        Ok(o)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("128M").unwrap(), 128 << 20);
        assert_eq!(parse_size("4k").unwrap(), 4096);
        assert_eq!(parse_size("77").unwrap(), 77);
        assert!(parse_size("0").is_err());
        assert!(parse_size("M").is_err());
        assert!(parse_size("99999999999G").is_err());
    }
}
