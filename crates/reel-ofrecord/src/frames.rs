//! The frame index of a part file: one sequential scan of the length fields at open.
//!
//! A part file is `(i64 little-endian length, payload)*` with nothing else. Every length is
//! checked against what is left of the file before it is believed, so a damaged length
//! field (a frame claiming a terabyte in a 400-byte file) fails at once, without reading or
//! allocating anything for it.

use reel_core::{Error, Limits, ReadAt, Result};

/// Bytes of a frame's length field.
pub const LENGTH_FIELD: u64 = 8;

/// Frames of 2 GiB or more cannot be parsed by protobuf (its sizes are `int`), so neither
/// OneFlow nor any protobuf reader can read them.
pub const MAX_PROTOBUF_MESSAGE: u64 = (1 << 31) - 1;

/// Where one frame of a dataset is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FrameInfo {
    /// Part file number (position in the dataset's part list).
    pub part: usize,
    /// Index of the frame within its part.
    pub index_in_part: u64,
    /// Offset of the frame's 8-byte length field in the part file.
    pub length_field_offset: u64,
    /// Length of the serialized record (the payload after the length field).
    pub length: u64,
}

impl FrameInfo {
    /// Offset of the payload in the part file.
    pub fn payload_offset(&self) -> u64 {
        self.length_field_offset + LENGTH_FIELD
    }
}

/// What scanning one part found besides the frame offsets.
#[derive(Debug, Default)]
pub(crate) struct PartScan {
    /// Offset of every frame's length field, then the file size (`n + 1` entries).
    pub(crate) starts: Vec<u64>,
    /// Frames of length 0 (OFRecords with no features).
    pub(crate) empty_frames: u64,
    /// Local index of the first of them.
    pub(crate) first_empty: Option<u64>,
}

/// Reads the 8 bytes at each frame boundary, through a window so that a file of small
/// frames costs one read per window instead of one per frame.
struct Window<'a> {
    files: &'a dyn ReadAt,
    file: u32,
    whole: Option<&'a [u8]>,
    buf: Vec<u8>,
    start: u64,
}

const WINDOW: u64 = 64 << 10;

impl Window<'_> {
    fn read8(&mut self, pos: u64, file_len: u64) -> Result<[u8; 8]> {
        let mut out = [0u8; 8];
        if let Some(whole) = self.whole {
            let at = usize::try_from(pos).unwrap_or(usize::MAX);
            let src = whole.get(at..at.saturating_add(8)).ok_or_else(|| {
                Error::corrupt("file changed size while it was being indexed").with_offset(pos)
            })?;
            out.copy_from_slice(src);
            return Ok(out);
        }
        let end = self.start + self.buf.len() as u64;
        if pos < self.start || pos + 8 > end {
            let n = WINDOW.min(file_len - pos);
            self.buf.resize(n as usize, 0);
            self.files.read_exact_at(self.file, pos, &mut self.buf)?;
            self.start = pos;
        }
        let at = (pos - self.start) as usize;
        out.copy_from_slice(&self.buf[at..at + 8]);
        Ok(out)
    }
}

/// Scans part file `file`. `first_index` is the global index of its first frame (for
/// messages); with `strict`, what current OneFlow cannot read (a zero-length frame, a frame
/// of 2 GiB or more) is an error instead of being accepted.
pub(crate) fn scan_part(
    files: &dyn ReadAt,
    file: u32,
    limits: &Limits,
    strict: bool,
    first_index: u64,
) -> Result<PartScan> {
    let file_len = files.file_len(file);
    let mut window = Window { files, file, whole: files.bytes(file), buf: Vec::new(), start: 0 };
    let mut scan = PartScan::default();
    let mut pos = 0u64;
    while pos < file_len {
        let local = scan.starts.len() as u64;
        let index = first_index + local;
        let fail = |e: Error| Err(e.with_offset(pos).with_record(index));
        let remaining = file_len - pos;
        if remaining < LENGTH_FIELD {
            return fail(Error::corrupt(format!(
                "truncated length field at byte {pos}: {remaining} of 8 bytes (the file ends \
                 inside a frame header)"
            )));
        }
        let length = i64::from_le_bytes(window.read8(pos, file_len)?);
        let Ok(length) = u64::try_from(length) else {
            return fail(Error::corrupt(format!("negative frame length {length} at byte {pos}")));
        };
        let left = remaining - LENGTH_FIELD;
        if length > left {
            return fail(Error::corrupt(format!(
                "truncated frame at byte {pos}: the length field says {length} bytes but only \
                 {left} remain in the file"
            )));
        }
        if let Err(e) = limits.check_record(length) {
            return fail(e);
        }
        if length == 0 {
            if strict {
                return fail(Error::corrupt(format!(
                    "zero-length frame at byte {pos} (an OFRecord with no features): current \
                     OneFlow aborts on it (Check failed: OFRecord_size > 0)"
                )));
            }
            scan.empty_frames += 1;
            scan.first_empty.get_or_insert(local);
        }
        if strict && length > MAX_PROTOBUF_MESSAGE {
            return fail(Error::corrupt(format!(
                "frame of {length} bytes at byte {pos}: protobuf, and so OneFlow, cannot parse \
                 a message of 2 GiB or more"
            )));
        }
        if scan.starts.len() == scan.starts.capacity() {
            // The index is 8 bytes per frame, and frames can be 8 bytes each (length 0: the
            // zeros of a sparse file read as such frames): it grows fallibly and within the
            // metadata limit, so a file claiming millions of them cannot abort the process.
            let more = scan.starts.len().max(1024) as u64;
            let bytes = (scan.starts.len() as u64 + more) * 8;
            limits.check_metadata(bytes).map_err(|e| e.with_offset(pos).with_record(index))?;
            reel_core::try_reserve(&mut scan.starts, more, "the frame index")?;
        }
        scan.starts.push(pos);
        pos += LENGTH_FIELD + length;
    }
    if strict && file_len == 0 {
        return Err(Error::corrupt(
            "empty part file: OneFlow stops on it (Check failed: cur_buf_begin_ < cur_buf_end_)",
        ));
    }
    limits.check_records(first_index + scan.starts.len() as u64)?;
    scan.starts.push(file_len);
    Ok(scan)
}
