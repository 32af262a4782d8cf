//! Plan and decode for Syrah: where item `i`'s arrays are and what they are.
//!
//! An item's arrays are usually written back to back, so the whole item (or the arrays
//! asked for) is planned as one range covering them, and each field points at its part of
//! that range: no copy, one read per item. Items whose arrays lie far apart are planned as
//! one range per array instead.

use reel_core::{
    Error, ErrorKind, FieldSpec, Layout, Limits, Plan, ReadAt, RecordOut, Result, Shape,
    SourceInfo, Span, Value, Warning, WarningKind,
};

use crate::FORMAT;
use crate::dtype::SyrahDType;
use crate::header::{HEADER_LEN, MAGIC, SyrahHeader};
use crate::metadata::{ArrayLocation, SyrahMetadata};

/// Gap between an item's arrays up to which one covering read is cheaper than several.
const GAP_SLACK: u64 = 4096;

/// One Syrah file of a dataset: its header and metadata.
#[derive(Clone, Debug)]
pub struct SyrahFile {
    header: SyrahHeader,
    metadata: SyrahMetadata,
}

impl SyrahFile {
    /// The header.
    pub fn header(&self) -> &SyrahHeader {
        &self.header
    }

    /// The parsed metadata document.
    pub fn metadata(&self) -> &SyrahMetadata {
        &self.metadata
    }

    /// Reads and validates the header and metadata of file `k` of `files`.
    fn open(
        files: &dyn ReadAt,
        k: u32,
        limits: &Limits,
        warnings: &mut Vec<Warning>,
    ) -> Result<Self> {
        let file_len = files.file_len(k);
        let mut head = [0u8; HEADER_LEN as usize];
        if file_len < HEADER_LEN {
            let short = &mut head[..file_len as usize];
            files.read_exact_at(k, 0, short)?;
            // The reference checks the magic first; say "not Syrah" when even that is wrong.
            if short.len() >= 2 && short[..2] != MAGIC {
                return Err(Error::corrupt(format!(
                    "not a Syrah file: expected the magic bytes \"GS\" (47 53), found {:02x} {:02x}",
                    short[0], short[1]
                ))
                .with_offset(0));
            }
            return Err(Error::corrupt(format!(
                "the file is {file_len} bytes, shorter than the {HEADER_LEN}-byte Syrah header"
            )));
        }
        files.read_exact_at(k, 0, &mut head)?;
        let header = SyrahHeader::parse(&head)?;
        let block = header.metadata_in(file_len)?;
        limits.check_metadata(block).map_err(|e| e.with_offset(14))?;
        // The document's own length comes first: a block that cannot be a BSON document of
        // the size the header gives (say, the zeros of a sparse file) is refused before the
        // block is read into memory.
        if block >= 4 {
            let mut declared = [0u8; 4];
            files.read_exact_at(k, header.metadata_offset, &mut declared)?;
            let declared = i32::from_le_bytes(declared);
            if !u64::try_from(declared).is_ok_and(|d| (5..=block).contains(&d)) {
                // The block is the header's length cut at the end of the file: say which.
                let room = if header.metadata_length > block {
                    format!(
                        "the file holds only {block} bytes from its start (the header gives it \
                         {})",
                        header.metadata_length
                    )
                } else {
                    format!("the header gives it {block} bytes")
                };
                return Err(Error::corrupt(format!(
                    "the BSON metadata says it is {declared} bytes long, but {room}"
                ))
                .with_offset(header.metadata_offset));
            }
        }
        if block > 16 << 20 {
            // A large block must at least hold an element where the document says it goes
            // on: the zeros of a sparse file end the document at once.
            let mut first_type = [0u8; 1];
            files.read_exact_at(k, header.metadata_offset + 4, &mut first_type)?;
            if first_type[0] == 0 {
                return Err(Error::corrupt(format!(
                    "the BSON metadata says it is {block} bytes long, but it ends after 5"
                ))
                .with_offset(header.metadata_offset + 4));
            }
        }
        let bytes = files.read_to_vec(k, header.metadata_offset, block)?;
        let (metadata, notes) =
            SyrahMetadata::parse(bytes, header.metadata_offset, file_len, limits)?;
        let path = Some(files.file_path(k).to_path_buf());
        let block_end = header.metadata_offset + block;
        if block < header.metadata_length {
            warnings.push(Warning {
                kind: WarningKind::ReferenceQuirk,
                path: path.clone(),
                message: format!(
                    "the header gives the metadata {} bytes, but only {block} are read (up to \
                     the end of the file or of what BSON can hold), as the reference reads them",
                    header.metadata_length
                ),
            });
        }
        if file_len > block_end {
            warnings.push(Warning {
                kind: WarningKind::TrailingBytes,
                path: path.clone(),
                message: format!("{} bytes after the metadata are ignored", file_len - block_end),
            });
        }
        if notes.trailing_bytes > 0 {
            let how = if notes.past_declared_end {
                "its last entry runs past that end and is read from the rest of the block"
            } else {
                "the rest of the block is ignored"
            };
            warnings.push(Warning {
                kind: WarningKind::ReferenceQuirk,
                path: path.clone(),
                message: format!(
                    "the BSON metadata document says it is {} bytes long, {} bytes less than \
                     the metadata block; read as the reference reads it: {how}",
                    block - notes.trailing_bytes,
                    notes.trailing_bytes
                ),
            });
        }
        if notes.arrays_outside_data > 0 {
            warnings.push(Warning {
                kind: WarningKind::ReferenceQuirk,
                path,
                message: format!(
                    "{} arrays point into the header or the metadata instead of the data region; \
                     the reference leaves such a phantom item when add_item rejects an item for \
                     a dtype mismatch. They are read as stored.",
                    notes.arrays_outside_data
                ),
            });
        }
        Ok(SyrahFile { header, metadata })
    }
}

/// The index of a Syrah dataset: one file, or several read one after another (the
/// reference's `SyrahConcatDataset`).
#[derive(Debug)]
pub struct SyrahLayout {
    files: Vec<SyrahFile>,
    /// Global index of each file's first item, then the total.
    starts: Vec<u64>,
    info: SourceInfo,
}

impl SyrahLayout {
    /// Adds a warning found outside the files (while listing the dataset's directory).
    pub(crate) fn warn(&mut self, warning: reel_core::Warning) {
        self.info.warnings.push(warning);
    }

    /// Reads and validates the header and metadata of every file in `files`.
    pub fn open(files: &dyn ReadAt, limits: &Limits) -> Result<Self> {
        let mut out = Vec::with_capacity(files.file_count());
        let mut starts = Vec::with_capacity(files.file_count() + 1);
        let mut info = SourceInfo::new(FORMAT);
        let mut total: u64 = 0;
        for k in 0..files.file_count() as u32 {
            let path = files.file_path(k);
            let file = SyrahFile::open(files, k, limits, &mut info.warnings)
                .map_err(|e| e.with_path(path).with_format(FORMAT))?;
            starts.push(total);
            total = total
                .checked_add(file.metadata.items())
                .ok_or_else(|| Error::corrupt("item counts overflow").with_format(FORMAT))?;
            limits.check_records(total).map_err(|e| e.with_format(FORMAT))?;
            info.paths.push(path.to_path_buf());
            out.push(file);
        }
        starts.push(total);
        info.version = common_version(&out);
        info.schema = common_schema(&out);
        Ok(SyrahLayout { files: out, starts, info })
    }

    /// Number of files.
    pub fn file_count(&self) -> usize {
        self.files.len()
    }

    /// The files, in order.
    pub fn files(&self) -> &[SyrahFile] {
        &self.files
    }

    /// File `k`.
    pub fn file(&self, k: usize) -> Option<&SyrahFile> {
        self.files.get(k)
    }

    /// Number of items of each file, in order.
    pub fn items_per_file(&self) -> impl ExactSizeIterator<Item = u64> + '_ {
        self.files.iter().map(|f| f.metadata.items())
    }

    /// The file holding global item `index` and the item's index within it.
    pub fn locate(&self, index: u64) -> Option<(usize, u64)> {
        if index >= *self.starts.last()? {
            return None;
        }
        // Files with no items share their start with the next file: take the last match.
        let file = self.starts.partition_point(|&s| s <= index) - 1;
        Some((file, index - self.starts[file]))
    }

    fn locate_or_err(&self, index: u64) -> Result<(&SyrahFile, u32, u64)> {
        let (k, local) =
            self.locate(index).ok_or_else(|| Error::out_of_range(index, self.len()))?;
        Ok((&self.files[k], k as u32, local))
    }

    /// Where array `name` of item `index` is stored (file number and byte range).
    pub fn array_location(&self, index: u64, name: &str) -> Result<(u32, ArrayLocation)> {
        let (file, k, local) = self.locate_or_err(index)?;
        let column = column_of(file, name, index)?;
        Ok((k, location(file, column, local)?))
    }

    /// Plans the arrays named `names` of item `index` (all arrays when `names` is `None`).
    pub fn plan_arrays<S: AsRef<str>>(
        &self,
        index: u64,
        names: Option<&[S]>,
        plan: &mut Plan<'_>,
    ) -> Result<()> {
        let (file, k, local) = self.locate_or_err(index)?;
        match names {
            None => plan_columns(file, k, local, 0..file.metadata.columns().len(), plan),
            Some(names) => {
                for n in names {
                    column_of(file, n.as_ref(), index)?;
                }
                let columns = names
                    .iter()
                    .map(|n| file.metadata.column_index(n.as_ref()).unwrap_or(usize::MAX));
                plan_columns(file, k, local, columns, plan)
            }
        }
    }

    /// Decodes what [`plan_arrays`](Self::plan_arrays) planned. With `dtype`, every array
    /// is read as that dtype instead of its stored one (the reference's
    /// `get_array(..., dtype=...)`).
    pub fn decode_arrays<S: AsRef<str>>(
        &self,
        index: u64,
        names: Option<&[S]>,
        dtype: Option<SyrahDType>,
        raw: &[Span],
        out: &mut RecordOut<'_>,
    ) -> Result<()> {
        let (file, _, local) = self.locate_or_err(index)?;
        match names {
            None => decode_columns(file, local, 0..file.metadata.columns().len(), dtype, raw, out),
            Some(names) => {
                let columns = names
                    .iter()
                    .map(|n| file.metadata.column_index(n.as_ref()).unwrap_or(usize::MAX));
                decode_columns(file, local, columns, dtype, raw, out)
            }
        }
    }
}

fn column_of(file: &SyrahFile, name: &str, index: u64) -> Result<usize> {
    file.metadata.column_index(name).ok_or_else(|| {
        let names: Vec<&str> = file.metadata.columns().iter().map(|c| c.name()).collect();
        Error::new(
            ErrorKind::NotFound,
            format!("item {index} has no array named {name:?} (its arrays: {})", names.join(", ")),
        )
        .with_record(index)
    })
}

fn location(file: &SyrahFile, column: usize, local: u64) -> Result<ArrayLocation> {
    file.metadata
        .location(column, local)
        .ok_or_else(|| Error::corrupt("an array is missing from the metadata"))
}

/// Pushes either one range covering the arrays (when they are close together) or one
/// range per array, in `columns` order.
fn plan_columns(
    file: &SyrahFile,
    k: u32,
    local: u64,
    columns: impl Iterator<Item = usize> + Clone,
    plan: &mut Plan<'_>,
) -> Result<()> {
    let (mut count, mut start, mut end, mut sum) = (0u64, u64::MAX, 0u64, 0u64);
    for c in columns.clone() {
        let loc = location(file, c, local)?;
        count += 1;
        start = start.min(loc.offset);
        end = end.max(loc.end());
        sum = sum.saturating_add(loc.size);
    }
    if count == 0 {
        return Ok(());
    }
    if count == 1 || end - start <= sum.saturating_add(GAP_SLACK) {
        plan.push(k, start, end - start);
    } else {
        for c in columns {
            let loc = location(file, c, local)?;
            plan.push(k, loc.offset, loc.size);
        }
    }
    Ok(())
}

/// Turns the planned spans into one field per array, each pointing at its own bytes.
fn decode_columns(
    file: &SyrahFile,
    local: u64,
    columns: impl Iterator<Item = usize> + Clone,
    dtype: Option<SyrahDType>,
    raw: &[Span],
    out: &mut RecordOut<'_>,
) -> Result<()> {
    let count = columns.clone().count();
    let covering = match raw {
        // One range for several arrays (or for the only one): find where it starts.
        [span] if count >= 1 => {
            let mut start = u64::MAX;
            for c in columns.clone() {
                start = start.min(location(file, c, local)?.offset);
            }
            Some((*span, start))
        }
        _ if raw.len() == count => None,
        _ => {
            return Err(Error::corrupt(format!(
                "{} ranges were read for {count} arrays",
                raw.len()
            )));
        }
    };
    for (k, c) in columns.enumerate() {
        let loc = location(file, c, local)?;
        let span = match covering {
            Some((span, start)) => span.sub((loc.offset - start) as usize, loc.size as usize),
            None => raw.get(k).copied().filter(|s| s.len as u64 == loc.size),
        }
        .ok_or_else(|| Error::corrupt("an array's bytes were not read").with_offset(loc.offset))?;
        let column = &file.metadata.columns()[c];
        let value = match dtype.or(column.dtype()) {
            Some(dtype) => array_value(out, dtype, span),
            None => Err(Error::unsupported(format!(
                "dtype {:?} is not one of the reference's dtype names ({})",
                column.dtype_name(),
                crate::dtype::DTYPE_NAMES.join(", ")
            ))),
        }
        .map_err(|e| {
            Error::new(e.kind(), format!("array {:?}: {}", column.name(), e.message()))
                .with_offset(loc.offset)
        })?;
        out.push_named(column.field_name(), value);
    }
    Ok(())
}

/// The value of one array's bytes: a 1-D array (the shape is not stored), or the text of a
/// `str` array.
pub(crate) fn array_value(out: &RecordOut<'_>, dtype: SyrahDType, span: Span) -> Result<Value> {
    match dtype {
        // numpy drops trailing NUL characters from a unicode string, so the reference
        // never returns them; the span is shortened (still no copy).
        SyrahDType::Str => {
            let kept = out.bytes(span).iter().rposition(|&b| b != 0).map_or(0, |p| p + 1);
            out.str_value(Span::new(span.start, kept))
        }
        SyrahDType::Array(dt) => {
            let item = dt.item_size();
            let len = span.len as u64;
            if !len.is_multiple_of(item) {
                return Err(Error::corrupt(format!(
                    "{len} bytes are not a whole number of {item}-byte {} elements",
                    dtype.name()
                )));
            }
            out.array_value(dt, Shape::vector(len / item), span)
        }
    }
}

fn common_version(files: &[SyrahFile]) -> Option<String> {
    let first = files.first()?.header.version;
    if files.iter().all(|f| f.header.version == first) {
        Some(first.to_string())
    } else {
        let all: Vec<String> = files.iter().map(|f| f.header.version.to_string()).collect();
        Some(format!("mixed ({})", all.join(", ")))
    }
}

/// The array names and dtypes, when every file has the same ones in the same order.
fn common_schema(files: &[SyrahFile]) -> Option<Vec<FieldSpec>> {
    let first = files.first()?.metadata.columns();
    let same = files.iter().all(|f| {
        let c = f.metadata.columns();
        c.len() == first.len()
            && c.iter()
                .zip(first)
                .all(|(a, b)| a.name() == b.name() && a.dtype_name() == b.dtype_name())
    });
    same.then(|| {
        first
            .iter()
            .map(|c| FieldSpec { name: c.name().to_string(), kind: c.dtype_name().to_string() })
            .collect()
    })
}

impl Layout for SyrahLayout {
    fn info(&self) -> &SourceInfo {
        &self.info
    }

    fn len(&self) -> u64 {
        self.starts.last().copied().unwrap_or(0)
    }

    fn plan(&self, index: u64, plan: &mut Plan<'_>) -> Result<()> {
        self.plan_arrays::<&str>(index, None, plan)
    }

    fn prefetch(&self, index: u64) {
        if let Some((k, local)) = self.locate(index) {
            self.files[k].metadata.prefetch(local);
        }
    }

    fn decode(&self, index: u64, raw: &[Span], out: &mut RecordOut<'_>) -> Result<()> {
        self.decode_arrays::<&str>(index, None, None, raw, out)
    }
}
