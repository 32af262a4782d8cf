//! Bounds on what a reader will believe a file about sizes and counts.
//!
//! The promise: no input makes reel allocate much more than the input's size or the
//! configured limits, whatever the backend — and when even that much memory is not there,
//! reel fails with an [`ErrorKind::Limit`] error instead of aborting.
//!
//! How it is kept:
//!
//! * every length a reader takes from a file is checked against the size of the file it
//!   claims to describe ([`check_within`]), and then against these limits, before anything
//!   is allocated;
//! * tables and buffers sized by numbers in a file are allocated fallibly
//!   ([`try_vec_with_capacity`], [`try_zeroed`], [`try_reserve`]), so a sparse file that
//!   legitimately claims gigabytes gives an error naming the number, not an abort;
//! * a batch's bytes are bounded by [`Limits::max_batch_bytes`] (1 GiB by default), and
//!   records that point at the same bytes count once per record: tools that stream a
//!   dataset read with [`RecordSourceExt::read_batch_fitting`](crate::RecordSourceExt),
//!   which shrinks a batch until it fits;
//! * text read whole (JSON metadata, `spec.json`) goes through
//!   [`paths::read_input`](crate::paths::read_input), bounded by the metadata limit.
//!
//! `Limits` lets a caller go further, e.g. refuse a 40 GiB record in a service that only
//! expects thumbnails.

use crate::{Error, ErrorKind, Result};

/// Upper bounds that readers and writers enforce. Exceeding one is an
/// [`ErrorKind::Limit`] error naming the limit.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// Largest record a reader returns, in bytes (all planned ranges of the record together).
    pub max_record_bytes: u64,
    /// Largest batch of several records a reader reads in one call, in bytes (a batch of one
    /// record is bounded by `max_record_bytes` alone). Records that share bytes in the file
    /// count once each, since each gets its own copy.
    pub max_batch_bytes: u64,
    /// Most records a dataset may claim to hold.
    pub max_records: u64,
    /// Largest metadata block (header tables, index, BSON/JSON documents) read at open.
    ///
    /// 2 GiB by default: the most a BSON document (Syrah) can be, and more than the tables of
    /// an FFRecord file of 170 million records or a Granular index of 130 million entries
    /// need. Metadata is read whole, so the limit is memory that a file's size must justify
    /// (each format also checks that a large block does not start like the zeros of a
    /// sparse file before reading it); raise it for larger single files.
    pub max_metadata_bytes: u64,
    /// Deepest nesting of lists and maps a decoder follows.
    pub max_nesting: u32,
    /// Largest decoded form of one value (e.g. JPEG pixels), in bytes.
    pub max_decoded_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_record_bytes: 1 << 40,
            max_batch_bytes: 1 << 30,
            max_records: 1 << 40,
            max_metadata_bytes: 2 << 30,
            max_nesting: Limits::DEFAULT_MAX_NESTING,
            max_decoded_bytes: 4 << 30,
        }
    }
}

impl Limits {
    /// The default [`max_nesting`](Self::max_nesting): writers that take nested values
    /// from users (Python's) refuse deeper ones, so that nothing is written that the
    /// readers would refuse by default.
    pub const DEFAULT_MAX_NESTING: u32 = 128;

    /// Limits for untrusted input in tests and fuzzing: small enough to fail fast.
    pub fn strict() -> Self {
        Limits {
            max_record_bytes: 256 << 20,
            max_batch_bytes: 1 << 30,
            max_records: 1 << 32,
            max_metadata_bytes: 256 << 20,
            max_nesting: 64,
            max_decoded_bytes: 256 << 20,
        }
    }

    /// Fails with [`ErrorKind::Limit`] when `value` exceeds `limit`; `what` names the quantity.
    pub fn check(value: u64, limit: u64, what: &str) -> Result<()> {
        if value > limit {
            return Err(Error::new(
                ErrorKind::Limit,
                format!("{what} is {value}, above the configured limit of {limit}"),
            ));
        }
        Ok(())
    }

    /// Checks a record size against [`max_record_bytes`](Self::max_record_bytes).
    pub fn check_record(&self, bytes: u64) -> Result<()> {
        Self::check(bytes, self.max_record_bytes, "record size")
    }

    /// Checks a record count against [`max_records`](Self::max_records).
    pub fn check_records(&self, count: u64) -> Result<()> {
        Self::check(count, self.max_records, "record count")
    }

    /// Checks a metadata size against [`max_metadata_bytes`](Self::max_metadata_bytes).
    pub fn check_metadata(&self, bytes: u64) -> Result<()> {
        Self::check(bytes, self.max_metadata_bytes, "metadata size")
    }
}

/// Fails with [`ErrorKind::Corrupt`] unless `offset + len` lies within a file of `file_len`
/// bytes. `what` names the region for the message.
pub fn check_within(offset: u64, len: u64, file_len: u64, what: &str) -> Result<()> {
    match offset.checked_add(len) {
        Some(end) if end <= file_len => Ok(()),
        _ => Err(Error::corrupt(format!(
            "{what} claims bytes {offset}..{} but the file has only {file_len} bytes",
            offset as u128 + len as u128
        ))
        .with_offset(offset)),
    }
}

/// An empty vector with room for `count` elements of `T`, for a table whose size comes from
/// a file: the total byte size is checked against `limit` first, then allocated fallibly, so
/// a sparse file claiming a billion entries, or a machine short of memory, gives an
/// [`ErrorKind::Limit`] error naming `what` and the number instead of an abort.
pub fn try_vec_with_capacity<T>(count: u64, limit: u64, what: &str) -> Result<Vec<T>> {
    let bytes = count.saturating_mul(std::mem::size_of::<T>() as u64);
    if bytes > limit {
        return Err(Error::new(
            ErrorKind::Limit,
            format!(
                "{what} claims {count} entries ({bytes} bytes in memory), above the configured limit of {limit} bytes"
            ),
        ));
    }
    let mut v = Vec::new();
    try_reserve(&mut v, count, what)?;
    Ok(v)
}

/// A zeroed byte buffer of `len` bytes for data whose size comes from a file, checked
/// against `limit` and allocated fallibly (see [`try_vec_with_capacity`]).
pub fn try_zeroed(len: u64, limit: u64, what: &str) -> Result<Vec<u8>> {
    let mut v = try_vec_with_capacity::<u8>(len, limit, what)?;
    v.resize(len as usize, 0);
    Ok(v)
}

/// Reserves room for `additional` more elements, failing with [`ErrorKind::Limit`] (naming
/// `what` and the number) instead of aborting when the memory is not there.
pub fn try_reserve<T>(v: &mut Vec<T>, additional: u64, what: &str) -> Result<()> {
    let n = to_usize(additional, what)?;
    v.try_reserve_exact(n).map_err(|_| {
        Error::new(
            ErrorKind::Limit,
            format!(
                "cannot allocate memory for {what}: {additional} entries of {} bytes",
                std::mem::size_of::<T>()
            ),
        )
    })
}

/// Converts a length read from a file to `usize`, failing (instead of truncating) on
/// targets where it does not fit.
pub fn to_usize(len: u64, what: &str) -> Result<usize> {
    usize::try_from(len).map_err(|_| {
        Error::new(ErrorKind::Limit, format!("{what} of {len} bytes does not fit in memory"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_within_rejects_overflow_and_past_end() {
        assert!(check_within(0, 10, 10, "x").is_ok());
        assert_eq!(check_within(5, 6, 10, "x").unwrap_err().kind(), ErrorKind::Corrupt);
        assert_eq!(check_within(u64::MAX, 2, 10, "x").unwrap_err().kind(), ErrorKind::Corrupt);
    }

    #[test]
    fn limit_errors_name_the_quantity() {
        let e = Limits::strict().check_record(1 << 40).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Limit);
        assert!(e.message().contains("record size"));
    }
}
