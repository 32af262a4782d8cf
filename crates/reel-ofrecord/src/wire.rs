//! The protobuf wire format, as far as OFRecord needs it: varints, tags, length-delimited
//! fields and skipping unknown fields (groups included).
//!
//! The rules follow the reference parser (upb, the runtime the golden files were checked
//! with) rather than prost where the two differ: a varint's bits beyond 64 are dropped, a
//! known field with an unexpected wire type is an unknown field, and unknown groups are
//! skipped. Every malformed input is an [`ErrorKind::Corrupt`](reel_core::ErrorKind) error.

use reel_core::{Error, Result};

/// How deep unknown groups may nest; protobuf runtimes stop at 100 levels as well.
const MAX_GROUP_DEPTH: u32 = 100;

/// The wire type of a field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WireType {
    Varint,
    Fixed64,
    Len,
    StartGroup,
    EndGroup,
    Fixed32,
}

/// A cursor over one serialized message (or a packed field's payload).
#[derive(Clone, Copy, Debug)]
pub(crate) struct WireReader<'a> {
    buf: &'a [u8],
    pos: usize,
    /// Where `buf` starts in the record, so positions and messages are record offsets.
    base: usize,
}

/// A malformed-protobuf error at byte `pos` of the record. Cold: errors must not slow down
/// the parsing of good records.
#[cold]
#[inline(never)]
pub(crate) fn malformed(pos: usize, what: &str) -> Error {
    Error::corrupt(format!("invalid protobuf at byte {pos} of the record: {what}"))
}

impl<'a> WireReader<'a> {
    /// A reader over `buf`, which starts at byte `base` of the record.
    #[inline]
    pub(crate) fn new(buf: &'a [u8], base: usize) -> Self {
        WireReader { buf, pos: 0, base }
    }

    /// Record offset of the next byte.
    #[inline]
    pub(crate) fn offset(&self) -> usize {
        self.base + self.pos
    }

    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.pos >= self.buf.len()
    }

    /// Reads a varint of up to ten bytes. Bits beyond the 64th are dropped, as upb and
    /// the C++ runtime do.
    #[inline]
    pub(crate) fn varint(&mut self) -> Result<u64> {
        // Most varints (tags, small lengths) are one byte.
        if let Some(&byte) = self.buf.get(self.pos)
            && byte < 0x80
        {
            self.pos += 1;
            return Ok(u64::from(byte));
        }
        self.varint_slow()
    }

    #[inline(never)]
    fn varint_slow(&mut self) -> Result<u64> {
        let mut value = 0u64;
        for i in 0..10 {
            let Some(&byte) = self.buf.get(self.pos + i) else {
                return Err(malformed(self.offset(), "varint runs past the end"));
            };
            // At the tenth byte the shift is 63, so bits past the 64th fall off.
            value |= u64::from(byte & 0x7f) << (7 * i);
            if byte & 0x80 == 0 {
                self.pos += i + 1;
                return Ok(value);
            }
        }
        Err(malformed(self.offset(), "varint longer than 10 bytes"))
    }

    /// Reads a field tag: field number and wire type.
    #[inline]
    pub(crate) fn tag(&mut self) -> Result<(u32, WireType)> {
        let at = self.offset();
        let tag = self.varint()?;
        let wire = match tag & 7 {
            0 => WireType::Varint,
            1 => WireType::Fixed64,
            2 => WireType::Len,
            3 => WireType::StartGroup,
            4 => WireType::EndGroup,
            5 => WireType::Fixed32,
            _ => return Err(bad_tag(at, tag)),
        };
        match u32::try_from(tag >> 3) {
            Ok(field) if field != 0 && tag <= u64::from(u32::MAX) => Ok((field, wire)),
            _ => Err(bad_tag(at, tag)),
        }
    }

    /// Reads a length-delimited payload; returns its record offset and bytes.
    #[inline]
    pub(crate) fn len_delimited(&mut self) -> Result<(usize, &'a [u8])> {
        let at = self.offset();
        let len = self.varint()?;
        let start = self.pos;
        match usize::try_from(len).ok().and_then(|l| self.buf.get(start..start.checked_add(l)?)) {
            Some(bytes) => {
                self.pos = start + bytes.len();
                Ok((self.base + start, bytes))
            }
            None => Err(too_long(at, len, self.buf.len() - start)),
        }
    }

    /// Reads `n` raw bytes (a fixed32/fixed64 value).
    #[inline]
    pub(crate) fn fixed(&mut self, n: usize) -> Result<&'a [u8]> {
        match self.buf.get(self.pos..self.pos + n) {
            Some(b) => {
                self.pos += n;
                Ok(b)
            }
            None => Err(malformed(self.offset(), "fixed-width value runs past the end")),
        }
    }

    /// Skips the value of an unknown field whose tag was just read.
    pub(crate) fn skip(&mut self, field: u32, wire: WireType) -> Result<()> {
        self.skip_at_depth(field, wire, 0)
    }

    fn skip_at_depth(&mut self, field: u32, wire: WireType, depth: u32) -> Result<()> {
        match wire {
            WireType::Varint => self.varint().map(drop),
            WireType::Fixed64 => self.fixed(8).map(drop),
            WireType::Fixed32 => self.fixed(4).map(drop),
            WireType::Len => self.len_delimited().map(drop),
            WireType::StartGroup => {
                if depth >= MAX_GROUP_DEPTH {
                    return Err(malformed(self.offset(), "groups nested too deeply"));
                }
                loop {
                    if self.is_empty() {
                        return Err(malformed(self.offset(), "group without its end tag"));
                    }
                    let at = self.offset();
                    let (f, w) = self.tag()?;
                    if w == WireType::EndGroup {
                        if f != field {
                            return Err(malformed(at, "end-group tag of another group"));
                        }
                        return Ok(());
                    }
                    self.skip_at_depth(f, w, depth + 1)?;
                }
            }
            WireType::EndGroup => Err(malformed(self.offset(), "end-group tag outside a group")),
        }
    }
}

#[cold]
#[inline(never)]
fn bad_tag(at: usize, tag: u64) -> Error {
    if tag > u64::from(u32::MAX) {
        malformed(at, "field tag above 2^32")
    } else if tag >> 3 == 0 {
        malformed(at, "field number 0")
    } else {
        malformed(at, &format!("invalid wire type {}", tag & 7))
    }
}

#[cold]
#[inline(never)]
pub(crate) fn too_long(at: usize, len: u64, remaining: usize) -> Error {
    malformed(at, &format!("length-delimited field of {len} bytes, only {remaining} remain"))
}

/// Number of bytes `v` takes as a varint.
#[inline]
pub(crate) fn varint_len(v: u64) -> usize {
    // 1 + floor(log2(v) / 7), with 0 taking one byte.
    (((64 - (v | 1).leading_zeros()) as usize) * 9 + 64) / 64
}

/// Appends `v` as a varint.
#[inline]
pub(crate) fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Counts the varints of a packed field, checking that the payload ends on a varint
/// boundary and that no varint is longer than 10 bytes.
pub(crate) fn count_packed_varints(payload: &[u8], base: usize) -> Result<usize> {
    let ends = payload.iter().filter(|&&b| b & 0x80 == 0).count();
    if payload.last().is_some_and(|&b| b & 0x80 != 0) {
        return Err(malformed(base + payload.len(), "packed varints end inside a varint"));
    }
    // A run of more than nine continuation bytes is a varint longer than ten bytes.
    let mut run = 0;
    for (i, &b) in payload.iter().enumerate() {
        if b & 0x80 != 0 {
            run += 1;
            if run > 9 {
                return Err(malformed(base + i, "varint longer than 10 bytes"));
            }
        } else {
            run = 0;
        }
    }
    Ok(ends)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn encode(v: u64) -> Vec<u8> {
        let mut out = Vec::new();
        put_varint(&mut out, v);
        out
    }

    #[test]
    fn varints_round_trip_and_lengths_agree() {
        for v in [0, 1, 127, 128, 300, 1 << 35, u64::MAX - 1, u64::MAX, (-1i64) as u64] {
            let bytes = encode(v);
            assert_eq!(bytes.len(), varint_len(v), "{v}");
            let mut r = WireReader::new(&bytes, 0);
            assert_eq!(r.varint().unwrap(), v);
            assert!(r.is_empty());
        }
    }

    #[test]
    fn overlong_and_truncated_varints_fail() {
        assert!(WireReader::new(&[0x80; 10], 0).varint().is_err());
        assert!(WireReader::new(&[0x80, 0x80], 0).varint().is_err());
        // Tenth byte with extra bits: they are dropped (upb, protobuf C++).
        let mut b = vec![0xff; 9];
        b.push(0x7f);
        assert_eq!(WireReader::new(&b, 0).varint().unwrap(), u64::MAX);
    }

    #[test]
    fn tags_reject_field_zero_and_bad_wire_types() {
        assert!(WireReader::new(&[0x02], 0).tag().is_err());
        assert!(WireReader::new(&[0x0e], 0).tag().is_err());
        assert!(WireReader::new(&[0x0f], 0).tag().is_err());
        assert_eq!(WireReader::new(&[0x0a], 0).tag().unwrap(), (1, WireType::Len));
        // A tag above 2^32 is malformed.
        assert!(WireReader::new(&[0xff, 0xff, 0xff, 0xff, 0x7f], 0).tag().is_err());
    }

    #[test]
    fn groups_are_skipped_and_must_match() {
        // field 3 start group, field 1 varint 5, field 3 end group
        let mut r = WireReader::new(&[0x1b, 0x08, 0x05, 0x1c], 0);
        let (f, w) = r.tag().unwrap();
        r.skip(f, w).unwrap();
        assert!(r.is_empty());
        let mut r = WireReader::new(&[0x1b, 0x08, 0x05, 0x24], 0);
        let (f, w) = r.tag().unwrap();
        assert!(r.skip(f, w).is_err());
        let mut r = WireReader::new(&[0x1b, 0x08, 0x05], 0);
        let (f, w) = r.tag().unwrap();
        assert!(r.skip(f, w).is_err());
        let mut deep = vec![0x1b; 200];
        deep.extend(vec![0x1c; 200]);
        let mut r = WireReader::new(&deep, 0);
        let (f, w) = r.tag().unwrap();
        assert!(r.skip(f, w).is_err());
    }

    #[test]
    fn packed_varint_counting_checks_boundaries() {
        assert_eq!(count_packed_varints(&[1, 0xac, 0x02], 0).unwrap(), 2);
        assert!(count_packed_varints(&[1, 0xac], 0).is_err());
        assert!(
            count_packed_varints(&[0x80; 11].iter().copied().chain([1]).collect::<Vec<_>>(), 0)
                .is_err()
        );
        assert_eq!(count_packed_varints(&[], 0).unwrap(), 0);
    }
}
