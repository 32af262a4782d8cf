//! The 22-byte Syrah header: `"GS" | u8[4] version | i64 metadata_offset | i64 metadata_length`.
//!
//! Pure functions over bytes. The reference writes the two integers in host byte order
//! (`numpy.array([x], int64).tobytes()`), which is little-endian on every platform it runs
//! on; reel reads and writes them little-endian.

use std::fmt;

use reel_core::{Error, Result};

/// Bytes of the header.
pub const HEADER_LEN: u64 = 22;

/// The two bytes every Syrah file starts with.
pub const MAGIC: [u8; 2] = *b"GS";

/// The smallest BSON document (an empty one: `05 00 00 00 00`).
pub const MIN_METADATA_LEN: u64 = 5;

/// The version recorded in bytes 2–5 of the header: `00, major, minor, bugfix`.
///
/// The reference writes the version of the syrah package that wrote the file and never
/// checks it when reading; every released version (0.1.3, 0.2.0) has the same layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SyrahVersion {
    /// The first byte, always 0 in files the reference writes (it is dropped when the
    /// reference turns the bytes into a version string).
    pub lead: u8,
    /// Major version.
    pub major: u8,
    /// Minor version.
    pub minor: u8,
    /// Bugfix version.
    pub bugfix: u8,
}

impl SyrahVersion {
    /// syrah 0.2.0 (`00 00 02 00`), the newest release and what reel writes by default.
    pub const V0_2_0: SyrahVersion = SyrahVersion { lead: 0, major: 0, minor: 2, bugfix: 0 };
    /// syrah 0.1.3 (`00 00 01 03`), the first version on `master`; same layout as 0.2.0.
    pub const V0_1_3: SyrahVersion = SyrahVersion { lead: 0, major: 0, minor: 1, bugfix: 3 };

    /// The version of the four header bytes.
    pub fn from_bytes(b: [u8; 4]) -> Self {
        SyrahVersion { lead: b[0], major: b[1], minor: b[2], bugfix: b[3] }
    }

    /// The four header bytes.
    pub fn to_bytes(self) -> [u8; 4] {
        [self.lead, self.major, self.minor, self.bugfix]
    }
}

impl Default for SyrahVersion {
    fn default() -> Self {
        SyrahVersion::V0_2_0
    }
}

impl fmt::Display for SyrahVersion {
    /// `major.minor.bugfix`, as the reference's `File.version` shows it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.bugfix)
    }
}

/// A parsed header, checked against the size of its file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SyrahHeader {
    /// The version bytes.
    pub version: SyrahVersion,
    /// Absolute offset of the BSON metadata document.
    pub metadata_offset: u64,
    /// Length of the BSON metadata document.
    pub metadata_length: u64,
}

impl SyrahHeader {
    /// Parses the first 22 bytes of a file.
    ///
    /// Fails with [`ErrorKind::Corrupt`](reel_core::ErrorKind::Corrupt) on a wrong magic, a
    /// negative offset or length, metadata that starts inside the header or is shorter
    /// than an empty BSON document. Whether the metadata fits in the file is the caller's
    /// business ([`metadata_in`](Self::metadata_in)). The version is not checked, as in the
    /// reference.
    pub fn parse(bytes: &[u8; 22]) -> Result<Self> {
        if bytes[..2] != MAGIC {
            return Err(Error::corrupt(format!(
                "not a Syrah file: expected the magic bytes \"GS\" (47 53), found {:02x} {:02x}",
                bytes[0], bytes[1]
            ))
            .with_offset(0));
        }
        let version = SyrahVersion::from_bytes([bytes[2], bytes[3], bytes[4], bytes[5]]);
        let offset = read_i64(bytes, 6);
        let length = read_i64(bytes, 14);
        let metadata_offset = u64::try_from(offset).map_err(|_| {
            Error::corrupt(format!("the header gives a negative metadata offset ({offset})"))
                .with_offset(6)
        })?;
        let metadata_length = u64::try_from(length).map_err(|_| {
            Error::corrupt(format!("the header gives a negative metadata length ({length})"))
                .with_offset(14)
        })?;
        if metadata_offset < HEADER_LEN {
            return Err(Error::corrupt(format!(
                "the header puts the metadata at byte {metadata_offset}, inside the \
                 {HEADER_LEN}-byte header"
            ))
            .with_offset(6));
        }
        if metadata_length < MIN_METADATA_LEN {
            return Err(Error::corrupt(format!(
                "the header gives a metadata length of {metadata_length} bytes; the smallest \
                 BSON document has {MIN_METADATA_LEN}"
            ))
            .with_offset(14));
        }
        Ok(SyrahHeader { version, metadata_offset, metadata_length })
    }

    /// The metadata bytes to read from a file of `file_len` bytes: from the metadata offset
    /// up to the header's length or the end of the file, whichever comes first (the
    /// reference reads what is there), and never more than a BSON document can hold.
    /// Fails with [`ErrorKind::Corrupt`](reel_core::ErrorKind::Corrupt) when fewer than an
    /// empty document's 5 bytes are left.
    pub fn metadata_in(&self, file_len: u64) -> Result<u64> {
        let available = file_len.saturating_sub(self.metadata_offset);
        if available < MIN_METADATA_LEN {
            return Err(Error::corrupt(format!(
                "the header puts the metadata at byte {}, but the file ends at byte {file_len}",
                self.metadata_offset
            ))
            .with_offset(6));
        }
        Ok(self.metadata_length.min(available).min(i32::MAX as u64))
    }

    /// The 22 header bytes.
    pub fn to_bytes(&self) -> [u8; 22] {
        let mut b = [0u8; 22];
        b[..2].copy_from_slice(&MAGIC);
        b[2..6].copy_from_slice(&self.version.to_bytes());
        b[6..14].copy_from_slice(&(self.metadata_offset as i64).to_le_bytes());
        b[14..22].copy_from_slice(&(self.metadata_length as i64).to_le_bytes());
        b
    }

    /// One past the last metadata byte.
    pub fn metadata_end(&self) -> u64 {
        self.metadata_offset + self.metadata_length
    }
}

/// Whether a file of `file_len` bytes starting with `head` looks like Syrah (for format
/// sniffing): the magic, then metadata that starts after the header and ends within the file.
pub fn looks_like_syrah(head: &[u8], file_len: u64) -> bool {
    match head.get(..HEADER_LEN as usize).and_then(|h| <&[u8; 22]>::try_from(h).ok()) {
        Some(h) => SyrahHeader::parse(h).is_ok_and(|h| {
            h.metadata_offset.checked_add(h.metadata_length).is_some_and(|end| end <= file_len)
        }),
        None => false,
    }
}

fn read_i64(bytes: &[u8; 22], at: usize) -> i64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&bytes[at..at + 8]);
    i64::from_le_bytes(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use reel_core::ErrorKind;

    fn header(offset: i64, length: i64) -> [u8; 22] {
        let mut b = [0u8; 22];
        b[..2].copy_from_slice(b"GS");
        b[2..6].copy_from_slice(&[0, 0, 2, 0]);
        b[6..14].copy_from_slice(&offset.to_le_bytes());
        b[14..22].copy_from_slice(&length.to_le_bytes());
        b
    }

    #[test]
    fn round_trip() {
        let h = SyrahHeader::parse(&header(42, 173)).unwrap();
        assert_eq!(h.version, SyrahVersion::V0_2_0);
        assert_eq!(h.version.to_string(), "0.2.0");
        assert_eq!((h.metadata_offset, h.metadata_length, h.metadata_end()), (42, 173, 215));
        assert_eq!(h.to_bytes(), header(42, 173));
    }

    #[test]
    fn hostile_values_are_corrupt() {
        for (o, l) in [(-1, 10), (30, -5), (3, 10), (30, 4)] {
            let e = SyrahHeader::parse(&header(o, l)).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Corrupt, "{o} {l}: {e}");
        }
        // Lengths past the end of the file are cut to what is there, as the reference's
        // read is; an offset past the end leaves nothing to read.
        let read = |o, l| SyrahHeader::parse(&header(o, l)).unwrap().metadata_in(100);
        assert_eq!(read(30, 50).unwrap(), 50);
        assert_eq!(read(30, 1 << 40).unwrap(), 70);
        assert_eq!(read(30, i64::MAX).unwrap(), 70);
        assert_eq!(read(96, 10).unwrap_err().kind(), ErrorKind::Corrupt);
        assert_eq!(read(i64::MAX, 10).unwrap_err().kind(), ErrorKind::Corrupt);
        assert!(!looks_like_syrah(&header(30, 71), 100));
        assert!(looks_like_syrah(&header(30, 70), 100));
        let mut bad = header(30, 10);
        bad[0] = 0xb8;
        let e = SyrahHeader::parse(&bad).unwrap_err();
        assert!(e.message().contains("magic"), "{e}");
    }

    #[test]
    fn any_version_is_accepted() {
        let mut b = header(22, 5);
        b[2..6].copy_from_slice(&[9, 9, 9, 9]);
        let h = SyrahHeader::parse(&b).unwrap();
        assert_eq!(h.version.to_string(), "9.9.9");
        assert_eq!(h.version.to_bytes(), [9, 9, 9, 9]);
    }
}
