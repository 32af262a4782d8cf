//! Plan and decode for FFRecord: where record `i` lives and how to check it.

use std::sync::Arc;

use reel_core::{
    Error, FieldName, Layout, Limits, Plan, RAW_FIELD, ReadAt, RecordOut, Result, SourceInfo, Span,
    Value, Warning, WarningKind,
};

use crate::FORMAT;
use crate::header::{FIXED_HEADER_LEN, FileTables, FixedHeader, verify_meta};

/// The index of an FFRecord dataset (one or more files) as read at open.
#[derive(Debug)]
pub struct FfrecordLayout {
    files: Vec<FileTables>,
    /// Global index of each file's first record, then the total.
    starts: Vec<u64>,
    verify_records: bool,
    field: FieldName,
    info: SourceInfo,
}

impl FfrecordLayout {
    /// Adds a warning found outside the files (while listing the dataset's directory).
    pub(crate) fn warn(&mut self, warning: reel_core::Warning) {
        self.info.warnings.push(warning);
    }

    /// Reads and validates the header of every file in `files`.
    ///
    /// With `verify_metadata`, a stored metadata checksum that does not match is a
    /// [`ErrorKind::Checksum`](reel_core::ErrorKind::Checksum) error; a stored 0 (legacy file) gives a
    /// [`WarningKind::MetadataChecksumAbsent`] warning. The structure of the tables (record
    /// count, offsets within the file and in order) is checked either way.
    pub fn open(
        files: &dyn ReadAt,
        limits: &Limits,
        verify_metadata: bool,
        verify_records: bool,
    ) -> Result<Self> {
        let mut tables = Vec::with_capacity(files.file_count());
        let mut starts = Vec::with_capacity(files.file_count() + 1);
        let mut info = SourceInfo::new(FORMAT);
        let mut total: u64 = 0;
        for k in 0..files.file_count() as u32 {
            let path = files.file_path(k);
            let (t, checked) = read_tables(files, k, limits, verify_metadata)
                .map_err(|e| e.with_path(path).with_format(FORMAT))?;
            if verify_metadata && !checked {
                info.warnings.push(Warning {
                    kind: WarningKind::MetadataChecksumAbsent,
                    path: Some(path.to_path_buf()),
                    message: "old-version FFRecord file (stored metadata checksum is 0): the \
                              header could not be verified; record checksums still are"
                        .into(),
                });
            }
            starts.push(total);
            total = total
                .checked_add(t.len())
                .ok_or_else(|| Error::corrupt("record counts overflow"))?;
            limits.check_records(total)?;
            info.paths.push(path.to_path_buf());
            tables.push(t);
        }
        starts.push(total);
        info.version = Some(if tables.iter().any(|t| t.meta_crc == 0) {
            "legacy (no metadata checksum)".into()
        } else {
            "1 (metadata checksum)".into()
        });
        info.schema =
            Some(vec![reel_core::FieldSpec { name: RAW_FIELD.into(), kind: "bytes".into() }]);
        info.facts.push(("files".into(), tables.len().to_string()));
        let header_bytes: u64 = tables.iter().map(|t| 12 + 12 * t.len()).sum();
        info.facts.push(("header bytes".into(), header_bytes.to_string()));
        let checked = if !verify_metadata {
            "not checked"
        } else if tables.iter().any(|t| t.meta_crc == 0) {
            "absent in some files (legacy)"
        } else {
            "verified"
        };
        info.facts.push(("metadata checksum".into(), checked.into()));
        info.facts.push((
            "record checksums".into(),
            if verify_records { "verified on read" } else { "not checked" }.into(),
        ));
        Ok(FfrecordLayout {
            files: tables,
            starts,
            verify_records,
            field: Arc::from(RAW_FIELD),
            info,
        })
    }

    /// The tables of file `file`.
    pub fn file_tables(&self, file: usize) -> Option<&FileTables> {
        self.files.get(file)
    }

    /// Number of files.
    pub fn file_count(&self) -> usize {
        self.files.len()
    }

    /// The file holding global record `index` and the record's index within it.
    pub fn locate(&self, index: u64) -> Option<(usize, usize)> {
        if index >= *self.starts.last()? {
            return None;
        }
        // starts is sorted; the owning file is the last one starting at or before index.
        // Empty files share their start with the next file, so skip to the last match.
        let file = self.starts.partition_point(|&s| s <= index) - 1;
        Some((file, (index - self.starts[file]) as usize))
    }

    /// Whether record checksums are verified on read.
    pub fn verifies_records(&self) -> bool {
        self.verify_records
    }
}

/// Reads file `k`'s tables. The metadata checksum (when asked for) is compared on the raw
/// bytes before the tables are interpreted, as the reference does, so a damaged header is
/// reported as a checksum error; the structure is validated after that either way.
/// Returns the tables and whether a checksum was verified (false for legacy files).
fn read_tables(
    files: &dyn ReadAt,
    k: u32,
    limits: &Limits,
    verify_metadata: bool,
) -> Result<(FileTables, bool)> {
    let file_len = files.file_len(k);
    if file_len < FIXED_HEADER_LEN {
        return Err(Error::corrupt(format!(
            "not an FFRecord file (it is {file_len} bytes, shorter than the \
             {FIXED_HEADER_LEN}-byte header)"
        )));
    }
    let mut fixed_bytes = [0u8; 12];
    files.read_exact_at(k, 0, &mut fixed_bytes)?;
    let fixed = FixedHeader::parse(&fixed_bytes, file_len, limits)?;
    limits.check_metadata(fixed.n * 12).map_err(|e| e.with_offset(4))?;
    sampled_offsets_fit(files, k, &fixed)?;
    let tables = files.read_to_vec(k, FIXED_HEADER_LEN, fixed.n * 12)?;
    let checked = verify_metadata && fixed.meta_crc != 0 && !cfg!(fuzzing);
    if checked {
        let mut h = reel_core::checksum::Crc32::new();
        h.update(&fixed_bytes[4..]);
        h.update(&tables);
        verify_meta(fixed.meta_crc, h.finalize())?;
    }
    Ok((FileTables::parse(fixed, &tables, file_len)?, checked))
}

impl Layout for FfrecordLayout {
    fn info(&self) -> &SourceInfo {
        &self.info
    }

    fn len(&self) -> u64 {
        self.starts.last().copied().unwrap_or(0)
    }

    fn plan(&self, index: u64, plan: &mut Plan<'_>) -> Result<()> {
        let (file, local) =
            self.locate(index).ok_or_else(|| Error::out_of_range(index, self.len()))?;
        let (offset, len) = self.files[file]
            .range(local)
            .ok_or_else(|| Error::corrupt("record missing from the offset table"))?;
        plan.push(file as u32, offset, len);
        Ok(())
    }

    fn prefetch(&self, index: u64) {
        let Some((file, local)) = self.locate(index) else { return };
        let tables = &self.files[file];
        if let Some(offset) = tables.offsets.get(local) {
            reel_core::prefetch_read(offset);
        }
        if self.verify_records
            && let Some(checksum) = tables.checksums.get(local)
        {
            reel_core::prefetch_read(checksum);
        }
    }

    fn decode(&self, _index: u64, raw: &[Span], out: &mut RecordOut<'_>) -> Result<()> {
        let [span] = raw else {
            return Err(Error::corrupt("an FFRecord record is read as exactly one range"));
        };
        out.push_named(&self.field, Value::Bytes(*span));
        Ok(())
    }

    /// A record is its raw bytes: it can be handed out where it lies.
    fn decodes_in_place(&self) -> bool {
        true
    }

    /// The stored CRC-32 of the record, which core compares as the bytes arrive. Fuzzing
    /// skips it so that mutated inputs reach the code behind it.
    fn has_record_crc32(&self) -> bool {
        self.verify_records && !cfg!(fuzzing)
    }

    fn record_crc32(&self, index: u64) -> Option<u32> {
        let (file, local) = self.locate(index)?;
        self.files[file].checksums.get(local).copied()
    }
}

/// Samples the offset table before large header tables are read whole: the first offset,
/// 64 evenly spread ones and the last must lie after the header, within the file and in
/// order. A header that claims millions of records over the zeros of a sparse file is
/// refused here, reading a few hundred bytes instead of allocating its tables. (Small
/// tables are read first, so that a damaged header is reported as the checksum mismatch
/// it is.)
fn sampled_offsets_fit(files: &dyn ReadAt, k: u32, fixed: &FixedHeader) -> Result<()> {
    if fixed.n * 12 < 16 << 20 {
        return Ok(());
    }
    let file_len = files.file_len(k);
    let header_end = FIXED_HEADER_LEN + 12 * fixed.n;
    let mut prev = header_end;
    let samples = (0..64).map(|s| s * (fixed.n / 64)).chain([fixed.n - 1]);
    for i in samples {
        let at = FIXED_HEADER_LEN + 4 * fixed.n + 8 * i;
        let mut b = [0u8; 8];
        files.read_exact_at(k, at, &mut b)?;
        let off = i64::from_le_bytes(b);
        if u64::try_from(off).map_or(true, |o| o < prev || o > file_len) {
            return Err(Error::corrupt(format!(
                "offset of record {i} ({off}) is not between the previous records' ({prev}) \
                 and the end of the file ({file_len})"
            ))
            .with_offset(at));
        }
        prev = off as u64;
    }
    Ok(())
}
