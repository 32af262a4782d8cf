//! A cheap look at the structure of a large frame before anyone reads it whole.
//!
//! A frame's length field is checked against the file at open, but a file can be large and
//! still hold nothing: a sparse part file of 1.5 GiB whose first frame claims all of it reads
//! as 1.5 GiB of zeros, which is only found to be malformed protobuf after all of it has
//! been read into memory. Frames of [`CHECKED_FRAME_BYTES`] or more are therefore walked at
//! open through small reads: the tags and lengths of the record's fields, descending into
//! the large map entries, features and lists that make up an `OFRecord`, and skipping every
//! value by its length. The zeros of a sparse file fail at the first tag (field number 0),
//! at whatever level they start.
//!
//! The walk only refuses what the full decoder refuses too (a malformed tag, a length or
//! fixed-width value running past its message, an end-group tag outside a group), so no
//! readable record is refused. It gives up, accepting the frame, at a group (which would
//! need its end tag found) and after [`MAX_STEPS`] fields: it is a check that the frame
//! starts like an `OFRecord` at every level that is large, not a full parse.

use reel_core::{ReadAt, Result};

use crate::wire::{WireReader, WireType, too_long};

/// Frames of at least this many bytes are walked at open.
pub(crate) const CHECKED_FRAME_BYTES: u64 = 16 << 20;

/// Most fields the walk of one frame reads (each costs one small read).
pub(crate) const MAX_STEPS: u32 = 1024;

/// A tag (at most 5 bytes) and a length (at most 10) fit in one read of this size.
const HEAD: u64 = 16;

/// Which message of `record.proto` the walk is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Level {
    /// `OFRecord`: `map<string, Feature> feature = 1`.
    Record,
    /// A map entry: `string key = 1; Feature value = 2`.
    Entry,
    /// `Feature`: a oneof of five lists, fields 1 to 5.
    Feature,
    /// `BytesList`, `FloatList`, …: values only (any bytes are valid values).
    List,
}

impl Level {
    /// The message that field `field` of wire type `wire` holds at this level, if any.
    fn child(self, field: u32, wire: WireType) -> Option<Level> {
        match (self, field, wire) {
            (Level::Record, 1, WireType::Len) => Some(Level::Entry),
            (Level::Entry, 2, WireType::Len) => Some(Level::Feature),
            (Level::Feature, 1..=5, WireType::Len) => Some(Level::List),
            _ => None,
        }
    }
}

/// Walks the frame payload of `len` bytes at `start` in file `file`, descending into
/// sub-messages of at least `descend_from` bytes. Fails with
/// [`ErrorKind::Corrupt`](reel_core::ErrorKind::Corrupt) (the message gives the byte of
/// the record, as the decoder's do) when the structure it reads is malformed.
pub(crate) fn check_frame(
    files: &dyn ReadAt,
    file: u32,
    start: u64,
    len: u64,
    descend_from: u64,
) -> Result<()> {
    // (level, end) of each message the walk is inside; positions are record offsets.
    let mut stack = vec![(Level::Record, len)];
    let mut pos = 0u64;
    let mut head = [0u8; HEAD as usize];
    for _ in 0..MAX_STEPS {
        let Some(&(level, end)) = stack.last() else { return Ok(()) };
        if pos >= end {
            stack.pop();
            continue;
        }
        let n = HEAD.min(end - pos) as usize;
        files.read_exact_at(file, start + pos, &mut head[..n])?;
        let mut r = WireReader::new(&head[..n], pos as usize);
        let (field, wire) = r.tag()?;
        let value_at = r.offset();
        pos = match wire {
            WireType::Len => {
                // Only the body's length is in `head`, not the body: checked here.
                let body_len = r.varint()?;
                let body = r.offset() as u64;
                if body_len > end - body {
                    return Err(too_long(value_at, body_len, (end - body) as usize));
                }
                match level.child(field, wire) {
                    Some(child) if body_len >= descend_from => {
                        stack.push((child, body + body_len));
                        body
                    }
                    _ => body + body_len,
                }
            }
            // Skipping a group means finding its end tag: leave that to the decoder.
            WireType::StartGroup => return Ok(()),
            // Varints, fixed-width values and stray end-group tags fit in `head` (cut at the
            // message's end), so the decoder's own skip checks them.
            _ => {
                r.skip(field, wire)?;
                r.offset() as u64
            }
        };
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use reel_core::{ErrorKind, MemFiles};

    use crate::wire::put_varint;

    fn len_field(out: &mut Vec<u8>, field: u32, body: &[u8]) {
        put_varint(out, u64::from(field) << 3 | 2);
        put_varint(out, body.len() as u64);
        out.extend_from_slice(body);
    }

    /// An OFRecord with one bytes feature `name` holding `value`.
    fn record(name: &str, value: &[u8]) -> Vec<u8> {
        let mut list = Vec::new();
        len_field(&mut list, 1, value);
        let mut feature = Vec::new();
        len_field(&mut feature, 1, &list);
        let mut entry = Vec::new();
        len_field(&mut entry, 1, name.as_bytes());
        len_field(&mut entry, 2, &feature);
        let mut rec = Vec::new();
        len_field(&mut rec, 1, &entry);
        rec
    }

    fn check(payload: &[u8], descend_from: u64) -> Result<()> {
        let mut file = vec![9u8; 3];
        file.extend_from_slice(payload);
        let files = MemFiles::single("part-0", file);
        check_frame(&files, 0, 3, payload.len() as u64, descend_from)
    }

    #[test]
    fn well_formed_records_pass_even_when_their_values_are_zeros() {
        let rec = record("image", &[0u8; 300]);
        check(&rec, 0).unwrap();
        check(&rec, 100).unwrap();
        let mut two = rec.clone();
        two.extend_from_slice(&record("label", &[1, 2, 3]));
        check(&two, 0).unwrap();
    }

    #[test]
    fn zeros_fail_at_the_first_tag_of_whatever_level_they_start() {
        let e = check(&[0u8; 64], 0).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Corrupt);
        assert!(e.message().contains("byte 0 of the record"), "{e}");
        // A map entry that claims the whole frame and holds zeros: found inside the entry.
        let mut rec = Vec::new();
        len_field(&mut rec, 1, &[0u8; 200]);
        let e = check(&rec, 100).unwrap_err();
        assert!(e.message().contains("field number 0"), "{e}");
        assert!(e.message().contains("byte 3 of the record"), "{e}");
        // Below the descent threshold the entry is skipped by its length.
        check(&rec, 1000).unwrap();
        // A good entry followed by zeros: found at the next top-level tag.
        let mut rec = record("a", b"xyz");
        let at = rec.len();
        rec.resize(at + 50, 0);
        let e = check(&rec, 1000).unwrap_err();
        assert!(e.message().contains(&format!("byte {at} of the record")), "{e}");
    }

    #[test]
    fn lengths_and_fixed_values_past_their_message_fail() {
        // The entry claims 100 bytes but the frame ends after 10.
        let mut rec = vec![0x0a];
        put_varint(&mut rec, 100);
        rec.extend_from_slice(&[1u8; 8]);
        let e = check(&rec, 0).unwrap_err();
        assert!(e.message().contains("only 8 remain"), "{e}");
        // A fixed64 unknown field with 3 bytes left.
        let e = check(&[0x09, 1, 2, 3], 0).unwrap_err();
        assert!(e.message().contains("fixed-width"), "{e}");
        let e = check(&[0x0c], 0).unwrap_err();
        assert!(e.message().contains("end-group"), "{e}");
    }

    #[test]
    fn groups_and_long_walks_are_accepted_unread() {
        // A group: the walk stops there, whatever follows.
        let mut rec = vec![0x0b];
        rec.resize(40, 0);
        check(&rec, 0).unwrap();
        // More fields than the walk reads: the zeros after them are left to the decoder.
        let mut rec = Vec::new();
        for _ in 0..MAX_STEPS {
            rec.extend_from_slice(&[0x10, 1]);
        }
        rec.resize(rec.len() + 10, 0);
        check(&rec, 0).unwrap();
    }
}
