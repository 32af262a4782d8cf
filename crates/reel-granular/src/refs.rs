//! `refs.bag` records of refs-based datasets (bags 0.5 – granular 0.21, spec §3.4).
//!
//! One record per datapoint: a msgpack array with one entry per spec key (in spec order):
//! the record index in `<key>.bag` for a scalar key, `[start, count]` for a non-empty
//! sequence (`type[]`) key, `[]` for an empty one. Parsed without allocating, since it is
//! done for every datapoint read.

use reel_core::{Error, Result};

/// Where one field of a datapoint is stored in its column bag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RefItem {
    /// A scalar field: record `0` of the column.
    Scalar(u64),
    /// A sequence field: `count` consecutive records from `start`.
    Items { start: u64, count: u64 },
}

/// Walks a refs record, calling `f(column, item)` for every column in order. `sequence[k]`
/// says whether column `k` is a sequence. Fails with `Corrupt` unless the record is exactly
/// one array with one well-formed entry per column.
pub(crate) fn for_each_ref(
    record: &[u8],
    sequence: &[bool],
    mut f: impl FnMut(usize, RefItem) -> Result<()>,
) -> Result<()> {
    let mut r = Reader { data: record, pos: 0 };
    let n = r.array_len().ok_or_else(|| malformed("it is not a msgpack array"))?;
    if n != sequence.len() as u64 {
        return Err(malformed(&format!(
            "it has {n} entries for a spec of {} keys",
            sequence.len()
        )));
    }
    for (k, &is_seq) in sequence.iter().enumerate() {
        let item = if is_seq {
            match r.array_len() {
                Some(0) => RefItem::Items { start: 0, count: 0 },
                Some(2) => {
                    let start =
                        r.uint().ok_or_else(|| malformed("a sequence start is not an index"))?;
                    let count =
                        r.uint().ok_or_else(|| malformed("a sequence length is not a count"))?;
                    RefItem::Items { start, count }
                }
                _ => {
                    return Err(malformed(&format!(
                        "entry {k} of a sequence key is not [] or [start, count]"
                    )));
                }
            }
        } else {
            RefItem::Scalar(
                r.uint().ok_or_else(|| malformed(&format!("entry {k} is not a record index")))?,
            )
        };
        f(k, item)?;
    }
    if r.pos != record.len() {
        return Err(malformed("it has extra data after the array"));
    }
    Ok(())
}

fn malformed(why: &str) -> Error {
    Error::corrupt(format!("refs.bag record is malformed: {why}"))
}

struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
}

impl Reader<'_> {
    fn byte(&mut self) -> Option<u8> {
        let b = *self.data.get(self.pos)?;
        self.pos += 1;
        Some(b)
    }

    fn be(&mut self, n: usize) -> Option<u64> {
        let bytes = self.data.get(self.pos..self.pos.checked_add(n)?)?;
        self.pos += n;
        Some(bytes.iter().fold(0u64, |a, &b| a << 8 | u64::from(b)))
    }

    fn array_len(&mut self) -> Option<u64> {
        match self.byte()? {
            b @ 0x90..=0x9f => Some(u64::from(b & 0x0f)),
            0xdc => self.be(2),
            0xdd => self.be(4),
            _ => None,
        }
    }

    /// A non-negative integer in any msgpack integer encoding.
    fn uint(&mut self) -> Option<u64> {
        let v = match self.byte()? {
            b @ 0x00..=0x7f => u64::from(b),
            0xcc => self.be(1)?,
            0xcd => self.be(2)?,
            0xce => self.be(4)?,
            0xcf => self.be(8)?,
            0xd0 => u64::try_from(self.be(1)? as u8 as i8).ok()?,
            0xd1 => u64::try_from(self.be(2)? as u16 as i16).ok()?,
            0xd2 => u64::try_from(self.be(4)? as u32 as i32).ok()?,
            0xd3 => u64::try_from(self.be(8)? as i64).ok()?,
            _ => return None,
        };
        Some(v)
    }
}

/// The msgpack bytes of a refs record (what the reference writers pack).
pub(crate) fn encode_refs(items: &[RefItem], out: &mut Vec<u8>) {
    let _ = rmp::encode::write_array_len(out, items.len() as u32);
    for item in items {
        match *item {
            RefItem::Scalar(i) => {
                let _ = rmp::encode::write_uint(out, i);
            }
            RefItem::Items { count: 0, .. } => out.push(0x90),
            RefItem::Items { start, count } => {
                out.push(0x92);
                let _ = rmp::encode::write_uint(out, start);
                let _ = rmp::encode::write_uint(out, count);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(record: &[u8], seq: &[bool]) -> Result<Vec<RefItem>> {
        let mut v = Vec::new();
        for_each_ref(record, seq, |_, item| {
            v.push(item);
            Ok(())
        })?;
        Ok(v)
    }

    #[test]
    fn spec_examples() {
        // [0, 0, [0, 2]], [5, []], [200, 70000, [128, 3]] (spec §3.4).
        let items = collect(&[0x93, 0x00, 0x00, 0x92, 0x00, 0x02], &[false, false, true]).unwrap();
        assert_eq!(items[2], RefItem::Items { start: 0, count: 2 });
        let items = collect(&[0x92, 0x05, 0x90], &[false, true]).unwrap();
        assert_eq!(items, [RefItem::Scalar(5), RefItem::Items { start: 0, count: 0 }]);
        let bytes = [0x93, 0xcc, 0xc8, 0xce, 0x00, 0x01, 0x11, 0x70, 0x92, 0xcc, 0x80, 0x03];
        let items = collect(&bytes, &[false, false, true]).unwrap();
        let mut again = Vec::new();
        encode_refs(&items, &mut again);
        assert_eq!(again, bytes);
    }

    #[test]
    fn malformed_refs_are_corrupt() {
        assert!(collect(&[0x6c, 0x00], &[false]).is_err()); // not an array
        assert!(collect(&[0x92, 0x00], &[false]).is_err()); // wrong count
        assert!(collect(&[0x91, 0x00, 0x00], &[false]).is_err()); // extra data
        assert!(collect(&[0x91, 0x91, 0x00], &[true]).is_err()); // [x] for a sequence
        assert!(collect(&[0x91, 0xff], &[false]).is_err()); // negative index
        assert!(collect(&[0x91, 0x90], &[false]).is_err()); // [] for a scalar
        assert!(collect(&[], &[]).is_err());
    }
}
