//! Plan and decode for OFRecord: where frame `i` is and what its record holds.

use reel_core::{
    Error, Layout, Limits, Plan, RecordOut, Result, SourceInfo, Span, Warning, WarningKind,
};

use crate::FORMAT;
use crate::decode::{FeatureNames, Names, collect_names, decode_into};
use crate::frames::{FrameInfo, LENGTH_FIELD, scan_part};
use crate::skeleton::{CHECKED_FRAME_BYTES, check_frame};

/// Records whose feature names are learnt at open, so that reading records of the same
/// shape allocates no names.
const NAME_SAMPLE_RECORDS: usize = 16;
/// At most this many bytes are read at open to learn them.
const NAME_SAMPLE_BYTES: u64 = 1 << 20;

/// The frame index of an OFRecord dataset (one or more part files) as built at open.
#[derive(Debug)]
pub struct OfrecordLayout {
    /// Per part: offset of each frame's length field, then the file size.
    parts: Vec<Vec<u64>>,
    /// Global index of each part's first record, then the total.
    starts: Vec<u64>,
    names: FeatureNames,
    info: SourceInfo,
    /// Large frames whose structure was found malformed at open (see
    /// [`skeleton`](crate::skeleton)), as (global index, what is wrong), sorted by index:
    /// reading one fails without reading it (its part and offset are the frame's).
    malformed: Vec<(u64, String)>,
}

impl OfrecordLayout {
    /// Scans every part file of `files` (in order) and indexes its frames.
    ///
    /// Fails with [`ErrorKind::Corrupt`](reel_core::ErrorKind::Corrupt) on a negative
    /// length, a frame running past the end of its file or a file ending inside a length
    /// field, and with [`ErrorKind::Limit`](reel_core::ErrorKind::Limit) on a frame above
    /// `limits.max_record_bytes`. With `strict`, frames current OneFlow rejects (length 0,
    /// 2 GiB or more) and empty part files fail too; without, they are accepted and each
    /// gives a [`WarningKind::ReferenceQuirk`] warning.
    pub fn open(files: &dyn reel_core::ReadAt, limits: &Limits, strict: bool) -> Result<Self> {
        let mut info = SourceInfo::new(FORMAT);
        let mut parts = Vec::with_capacity(files.file_count());
        let mut starts = Vec::with_capacity(files.file_count() + 1);
        let mut total = 0u64;
        let mut malformed = Vec::new();
        for k in 0..files.file_count() as u32 {
            let path = files.file_path(k);
            let scan = scan_part(files, k, limits, strict, total)
                .map_err(|e| e.with_path(path).with_format(FORMAT))?;
            let n = scan.starts.len() as u64 - 1;
            for (local, pair) in scan.starts.windows(2).enumerate() {
                let length = pair[1] - pair[0] - LENGTH_FIELD;
                if length < CHECKED_FRAME_BYTES {
                    continue;
                }
                let payload_offset = pair[0] + LENGTH_FIELD;
                if let Err(e) = check_frame(files, k, payload_offset, length, CHECKED_FRAME_BYTES) {
                    if e.kind() != reel_core::ErrorKind::Corrupt {
                        return Err(e.with_path(path).with_format(FORMAT));
                    }
                    malformed.push((total + local as u64, e.message().to_owned()));
                }
            }
            if let Some(first) = scan.first_empty {
                info.warnings.push(Warning {
                    kind: WarningKind::ReferenceQuirk,
                    path: Some(path.to_path_buf()),
                    message: format!(
                        "{} record(s) of length 0 (no features), the first is record {}: reel \
                         reads them as empty records, current OneFlow aborts on them",
                        scan.empty_frames,
                        total + first
                    ),
                });
            }
            if n == 0 {
                info.warnings.push(Warning {
                    kind: WarningKind::ReferenceQuirk,
                    path: Some(path.to_path_buf()),
                    message: "empty part file: reel reads it as no records, OneFlow stops on \
                              it unless it is the last part a rank reads"
                        .into(),
                });
            }
            starts.push(total);
            total += n;
            info.paths.push(path.to_path_buf());
            parts.push(scan.starts);
        }
        starts.push(total);
        let mut layout =
            OfrecordLayout { parts, starts, names: FeatureNames::default(), info, malformed };
        layout.learn_names(files);
        Ok(layout)
    }

    /// Reads the first records' feature names so later records reuse them. Damage is
    /// ignored here: it is reported when the record is read.
    fn learn_names(&mut self, files: &dyn reel_core::ReadAt) {
        let mut budget = NAME_SAMPLE_BYTES;
        for index in 0..self.len().min(NAME_SAMPLE_RECORDS as u64) {
            let Some(frame) = self.frame(index) else { break };
            if frame.length > budget {
                break;
            }
            budget -= frame.length;
            if let Ok(payload) =
                files.read_to_vec(frame.part as u32, frame.payload_offset(), frame.length)
            {
                collect_names(&payload, &mut self.names);
            }
        }
    }

    /// Number of part files.
    pub fn part_count(&self) -> usize {
        self.parts.len()
    }

    /// Number of records in part `part`.
    pub fn part_len(&self, part: usize) -> Option<u64> {
        Some(self.parts.get(part)?.len() as u64 - 1)
    }

    /// The part holding global record `index` and the record's index within it.
    pub fn locate(&self, index: u64) -> Option<(usize, u64)> {
        if index >= *self.starts.last()? {
            return None;
        }
        // Empty parts share their start with the next part: take the last match.
        let part = self.starts.partition_point(|&s| s <= index) - 1;
        Some((part, index - self.starts[part]))
    }

    /// Where record `index` is.
    pub fn frame(&self, index: u64) -> Option<FrameInfo> {
        let (part, local) = self.locate(index)?;
        let starts = &self.parts[part];
        let at = *starts.get(local as usize)?;
        let next = *starts.get(local as usize + 1)?;
        Some(FrameInfo {
            part,
            index_in_part: local,
            length_field_offset: at,
            length: next - at - LENGTH_FIELD,
        })
    }

    /// Decodes the record whose payload is `raw[0]`, keeping only the features `keep`
    /// accepts (all without it).
    pub(crate) fn decode_features(
        &self,
        raw: &[Span],
        out: &mut RecordOut<'_>,
        keep: Option<&dyn Fn(&str) -> bool>,
    ) -> Result<()> {
        let [span] = raw else {
            return Err(Error::corrupt("an OFRecord record is read as exactly one range"));
        };
        decode_into(out, *span, &mut Names::Shared(&self.names), keep)
    }

    /// Pushes the payload range of record `index`.
    pub(crate) fn plan_payload(&self, index: u64, plan: &mut Plan<'_>) -> Result<()> {
        let frame = self.frame(index).ok_or_else(|| Error::out_of_range(index, self.len()))?;
        if let Ok(at) = self.malformed.binary_search_by_key(&index, |m| m.0) {
            return Err(Error::corrupt(format!(
                "{} (found at open, without reading the {}-byte frame)",
                self.malformed[at].1, frame.length
            ))
            .with_offset(frame.payload_offset())
            .with_path(&self.info.paths[frame.part]));
        }
        plan.push(frame.part as u32, frame.payload_offset(), frame.length);
        Ok(())
    }
}

impl Layout for OfrecordLayout {
    fn info(&self) -> &SourceInfo {
        &self.info
    }

    fn len(&self) -> u64 {
        self.starts.last().copied().unwrap_or(0)
    }

    fn plan(&self, index: u64, plan: &mut Plan<'_>) -> Result<()> {
        self.plan_payload(index, plan)
    }

    fn prefetch(&self, index: u64) {
        let Some((part, local)) = self.locate(index) else { return };
        let entry = self.parts.get(part).and_then(|starts| starts.get(local as usize));
        if let Some(entry) = entry {
            reel_core::prefetch_read(entry);
        }
    }

    fn decode(&self, index: u64, raw: &[Span], out: &mut RecordOut<'_>) -> Result<()> {
        self.decode_features(raw, out, None).map_err(|e| match self.frame(index) {
            Some(f) => e.with_offset(f.payload_offset()),
            None => e,
        })
    }
}
