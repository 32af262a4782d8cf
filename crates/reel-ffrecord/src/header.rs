//! The FFRecord header: `u32 meta_crc | i64 n | u32 crc32[n] | i64 offset[n]`, little-endian.
//!
//! Pure functions over bytes; the reader feeds them what it read through core.

use reel_core::{Error, ErrorKind, Limits, Result};

/// Bytes before the tables: the metadata checksum and the record count.
pub const FIXED_HEADER_LEN: u64 = 12;

/// Size of the whole header for `n` records (`12 + 12·n`), `None` on overflow.
pub fn header_len(n: u64) -> Option<u64> {
    n.checked_mul(12)?.checked_add(FIXED_HEADER_LEN)
}

/// The first 12 bytes: stored metadata checksum and record count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FixedHeader {
    /// Stored CRC-32 of bytes `[4, 12 + 12·n)`; 0 marks a legacy file without one.
    pub meta_crc: u32,
    /// Number of records.
    pub n: u64,
}

impl FixedHeader {
    /// Parses the first 12 bytes of a file of `file_len` bytes and checks that the tables
    /// it announces fit in the file and in `limits`, in that order: bytes that cannot be an
    /// FFRecord header are reported as "not an FFRecord file (…)" ([`ErrorKind::Corrupt`])
    /// before any count is judged against `limits` ([`ErrorKind::Limit`]).
    pub fn parse(bytes: &[u8; 12], file_len: u64, limits: &Limits) -> Result<Self> {
        let meta_crc = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
        let mut n_bytes = [0u8; 8];
        n_bytes.copy_from_slice(&bytes[4..12]);
        let n = i64::from_le_bytes(n_bytes);
        let n = u64::try_from(n).map_err(|_| {
            Error::corrupt(format!(
                "not an FFRecord file (its header says {n} records, a negative count)"
            ))
            .with_offset(4)
        })?;
        match header_len(n) {
            Some(len) if len <= file_len => {}
            _ => {
                return Err(Error::corrupt(format!(
                    "not an FFRecord file (its header says {n} records, whose tables need {} \
                     bytes, but the file has {file_len} bytes)",
                    12u128 + 12 * n as u128
                ))
                .with_offset(4));
            }
        }
        limits.check_records(n).map_err(|e| e.with_offset(4))?;
        limits.check_metadata(n * 12)?;
        Ok(FixedHeader { meta_crc, n })
    }
}

/// The per-file index: record checksums and offsets, validated against the file size.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileTables {
    /// Stored metadata checksum.
    pub meta_crc: u32,
    /// CRC-32 of each record.
    pub checksums: Vec<u32>,
    /// `n + 1` offsets: where each record starts, then the file size (where the last ends).
    pub offsets: Vec<u64>,
}

impl FileTables {
    /// Number of records.
    pub fn len(&self) -> u64 {
        self.checksums.len() as u64
    }

    /// Whether the file holds no records.
    pub fn is_empty(&self) -> bool {
        self.checksums.is_empty()
    }

    /// Parses the tables (`tables` = bytes `[12, 12 + 12·n)`) and checks that the records lie
    /// back to back after the header, in order, within the file.
    ///
    /// The reference never checks offsets; it computes lengths by subtraction and fails
    /// (or allocates garbage) later. Checking here means a damaged index is reported as
    /// corrupt on open, even when checksum verification is off.
    pub fn parse(fixed: FixedHeader, tables: &[u8], file_len: u64) -> Result<Self> {
        let n = fixed.n as usize;
        if tables.len() != n * 12 {
            return Err(Error::corrupt(format!(
                "header tables are {} bytes, expected {}",
                tables.len(),
                n * 12
            )));
        }
        let (crc_bytes, off_bytes) = tables.split_at(n * 4);
        // Allocated fallibly: a sparse file may claim more records than memory holds.
        let mut checksums: Vec<u32> =
            reel_core::try_vec_with_capacity(fixed.n, u64::MAX, "the checksum table")?;
        checksums.extend(
            crc_bytes.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])),
        );
        let mut offsets =
            reel_core::try_vec_with_capacity(fixed.n + 1, u64::MAX, "the offset table")?;
        let header_end = FIXED_HEADER_LEN + 12 * fixed.n;
        let mut prev = header_end;
        for (i, c) in off_bytes.chunks_exact(8).enumerate() {
            let mut b = [0u8; 8];
            b.copy_from_slice(c);
            let raw = i64::from_le_bytes(b);
            let at = FIXED_HEADER_LEN + 4 * fixed.n + 8 * i as u64;
            let off = u64::try_from(raw).map_err(|_| {
                Error::corrupt(format!("offset of record {i} is negative ({raw})")).with_offset(at)
            })?;
            if off < prev || off > file_len {
                let why = if off > file_len {
                    format!("lies past the end of the file ({file_len} bytes)")
                } else if i == 0 {
                    format!("lies inside the header, which ends at {header_end}")
                } else {
                    format!("is before the start of record {} ({prev})", i - 1)
                };
                return Err(Error::corrupt(format!("offset of record {i} ({off}) {why}"))
                    .with_record(i as u64)
                    .with_offset(at));
            }
            offsets.push(off);
            prev = off;
        }
        offsets.push(file_len);
        Ok(FileTables { meta_crc: fixed.meta_crc, checksums, offsets })
    }

    /// Byte range of record `i` within its file.
    pub fn range(&self, i: usize) -> Option<(u64, u64)> {
        let start = *self.offsets.get(i)?;
        let end = *self.offsets.get(i + 1)?;
        Some((start, end - start))
    }

    /// The metadata checksum the tables should carry: CRC-32 over `n`, the checksum table
    /// and the offset table as stored (offsets without the trailing file size).
    pub fn compute_meta_crc(&self) -> u32 {
        meta_crc(&self.checksums, &self.offsets[..self.checksums.len()])
    }

    /// Compares the stored metadata checksum with the computed one. `Ok(false)` for a legacy
    /// file (stored checksum 0), which has nothing to compare.
    pub fn verify_meta_crc(&self) -> Result<bool> {
        if self.meta_crc == 0 {
            return Ok(false);
        }
        verify_meta(self.meta_crc, self.compute_meta_crc())?;
        Ok(true)
    }
}

/// Compares a stored metadata checksum with a computed one.
pub fn verify_meta(stored: u32, computed: u32) -> Result<()> {
    if computed != stored {
        return Err(Error::new(
            ErrorKind::Checksum,
            format!(
                "metadata checksum mismatch: stored {stored:#010x}, computed {computed:#010x} \
                 (the header or its index tables are damaged)"
            ),
        )
        .with_offset(0));
    }
    Ok(())
}

/// CRC-32 (zlib) over `n`, then `checksums`, then `offsets`, each little-endian: the value
/// the first four bytes of a file hold.
pub fn meta_crc(checksums: &[u32], offsets: &[u64]) -> u32 {
    let mut h = reel_core::checksum::Crc32::new();
    h.update(&(checksums.len() as i64).to_le_bytes());
    let mut buf = Vec::with_capacity(8192);
    for chunk in checksums.chunks(1024) {
        buf.clear();
        chunk.iter().for_each(|c| buf.extend_from_slice(&c.to_le_bytes()));
        h.update(&buf);
    }
    for chunk in offsets.chunks(1024) {
        buf.clear();
        chunk.iter().for_each(|o| buf.extend_from_slice(&o.to_le_bytes()));
        h.update(&buf);
    }
    h.finalize()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
    }

    /// The spec's worked example 5.1: records "hello" and "AB".
    #[test]
    fn spec_example_two_records() {
        let file = hex("d2a49ef4020000000000000086a61036074c693024000000000000002900000000000000");
        let mut fixed = [0u8; 12];
        fixed.copy_from_slice(&file[..12]);
        let h = FixedHeader::parse(&fixed, 43, &Limits::default()).unwrap();
        assert_eq!(h, FixedHeader { meta_crc: 0xF49EA4D2, n: 2 });
        let t = FileTables::parse(h, &file[12..], 43).unwrap();
        assert_eq!(t.offsets, vec![36, 41, 43]);
        assert_eq!(t.checksums, vec![0x3610A686, 0x30694C07]);
        assert_eq!(t.compute_meta_crc(), 0xF49EA4D2);
        assert!(t.verify_meta_crc().unwrap());
    }

    #[test]
    fn zero_records_crc_matches_spec() {
        assert_eq!(meta_crc(&[], &[]), 0x6522DF69);
    }

    #[test]
    fn huge_counts_are_refused_without_allocating() {
        let mut fixed = [0u8; 12];
        fixed[4..].copy_from_slice(&(1i64 << 62).to_le_bytes());
        let e = FixedHeader::parse(&fixed, 1000, &Limits::default()).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Corrupt);
        assert!(e.message().starts_with("not an FFRecord file ("), "{e}");
        // Tables that fit the file but exceed the limits are a Limit error.
        fixed[4..].copy_from_slice(&1000i64.to_le_bytes());
        let mut tight = Limits::default();
        tight.max_records = 10;
        assert_eq!(
            FixedHeader::parse(&fixed, 1 << 20, &tight).unwrap_err().kind(),
            ErrorKind::Limit
        );
        fixed[4..].copy_from_slice(&(-1i64).to_le_bytes());
        assert_eq!(
            FixedHeader::parse(&fixed, 1000, &Limits::default()).unwrap_err().kind(),
            ErrorKind::Corrupt
        );
    }

    #[test]
    fn offsets_must_be_ordered_and_inside() {
        let h = FixedHeader { meta_crc: 0, n: 2 };
        let mut tables = vec![0u8; 8];
        tables.extend_from_slice(&40i64.to_le_bytes());
        tables.extend_from_slice(&36i64.to_le_bytes());
        assert_eq!(FileTables::parse(h, &tables, 50).unwrap_err().kind(), ErrorKind::Corrupt);
        let mut tables = vec![0u8; 8];
        tables.extend_from_slice(&36i64.to_le_bytes());
        tables.extend_from_slice(&60i64.to_le_bytes());
        assert_eq!(FileTables::parse(h, &tables, 50).unwrap_err().kind(), ErrorKind::Corrupt);
    }
}
