//! One module per format: how to recognise it and how to open it as a boxed source.

use std::path::Path;

use reel_core::{RecordSource, Result, Store};

use crate::{Format, OpenOptions};

#[cfg(feature = "arrow")]
mod arrow;
#[cfg(feature = "ffrecord")]
mod ffrecord;
#[cfg(feature = "granular")]
mod granular;
#[cfg(feature = "gulp")]
mod gulp;
#[cfg(feature = "ofrecord")]
mod ofrecord;
#[cfg(feature = "syrah")]
mod syrah;

/// What the facade needs from a format.
pub(crate) struct Handler {
    /// Whether `path` in the store looks like this format (cheap: names and a few bytes).
    pub sniff: fn(&dyn Store, &Path) -> bool,
    /// Opens `path` as this format.
    pub open: fn(&Path, &OpenOptions) -> Result<Box<dyn RecordSource>>,
}

/// A format's structural checks beyond reading every record (duplicate ids, column
/// lengths …), for `verify`.
pub(crate) type Check = fn(&Path, &OpenOptions) -> Result<Vec<crate::verify::Problem>>;

/// The extra checks of `format`, if it has any.
pub(crate) fn check(format: Format) -> Option<Check> {
    match format {
        #[cfg(feature = "gulp")]
        Format::Gulp => Some(gulp_check),
        #[allow(unreachable_patterns)]
        _ => None,
    }
}

/// The GulpIO2 sanity check (duplicate ids across chunks, frames out of bounds or
/// overlapping, bad padding, sizes) as verify problems, informational notes left out;
/// then every frame decoded, each one that fails named (video id and frame).
#[cfg(feature = "gulp")]
fn gulp_check(path: &Path, options: &OpenOptions) -> Result<Vec<crate::verify::Problem>> {
    let sanity = reel_gulp::SanityOptions { store: options.store.clone(), ..Default::default() };
    let report = reel_gulp::sanity_check_with(path, &sanity)?;
    let mut problems: Vec<crate::verify::Problem> = report
        .issues
        .iter()
        .filter(|i| i.severity >= reel_gulp::Severity::Warning)
        // Frames are judged by decoding them below, as the reference does: a frame that
        // does not end in FF D9 but has its end marker earlier (trailing bytes) is fine.
        .filter(|i| i.kind != reel_gulp::SanityIssueKind::BadJpeg)
        .map(|i| crate::verify::Problem {
            record: i.record,
            path: i.path.clone(),
            offset: i.offset,
            kind: reel_core::ErrorKind::Corrupt,
            message: match &i.id {
                Some(id) => format!("video {id:?}: {}", i.message),
                None => i.message.clone(),
            },
        })
        .collect();
    problems.extend(gulp::bad_frames(path, options)?);
    Ok(problems)
}

/// The handler of `format`, if its feature is enabled.
pub(crate) fn handler(format: Format) -> Option<Handler> {
    match format {
        #[cfg(feature = "ffrecord")]
        Format::Ffrecord => Some(ffrecord::HANDLER),
        #[cfg(feature = "syrah")]
        Format::Syrah => Some(syrah::HANDLER),
        #[cfg(feature = "ofrecord")]
        Format::Ofrecord => Some(ofrecord::HANDLER),
        #[cfg(feature = "granular")]
        Format::Granular => Some(granular::HANDLER),
        #[cfg(feature = "granular")]
        Format::Bags => Some(granular::BAGS_HANDLER),
        #[cfg(feature = "gulp")]
        Format::Gulp => Some(gulp::HANDLER),
        #[cfg(feature = "arrow")]
        Format::Parquet => Some(arrow::PARQUET),
        #[cfg(feature = "arrow")]
        Format::ArrowIpc => Some(arrow::ARROW_IPC),
        #[allow(unreachable_patterns)]
        _ => None,
    }
}

/// A writer for a new dataset of `format` at `path`. With `options.records`, it takes
/// exactly that many records: one more is refused, and finishing with fewer is refused
/// with the writer left open (FFRecord checks this itself, since it writes its header in
/// place; the other formats through [`Promised`]).
pub(crate) fn create(
    format: Format,
    path: &Path,
    options: &crate::CreateOptions,
) -> Result<Box<dyn reel_core::RecordSink>> {
    let sink = format_sink(format, path, options)?;
    Ok(match options.records {
        Some(promised) if format != Format::Ffrecord => {
            Box::new(Promised { inner: sink, promised, path: path.to_path_buf() })
        }
        _ => sink,
    })
}

/// A sink held to the number of records it was created for, as FFRecord's writer holds
/// itself: a count given and then not kept was published silently (a conversion or a
/// Python writer with `records=` that wrote another number).
struct Promised {
    inner: Box<dyn reel_core::RecordSink>,
    promised: u64,
    path: std::path::PathBuf,
}

impl Promised {
    fn check_room(&self) -> Result<()> {
        if self.inner.records() >= self.promised {
            return Err(reel_core::Error::invalid_input(format!(
                "the writer was created for {} records (indices 0 to {}); one more does not \
                 fit",
                self.promised,
                self.promised.saturating_sub(1)
            ))
            .with_path(&self.path));
        }
        Ok(())
    }
}

impl reel_core::RecordSink for Promised {
    fn append_ref(&mut self, record: reel_core::RecordRef<'_>) -> Result<u64> {
        self.check_room()?;
        self.inner.append_ref(record)
    }

    fn append_located(
        &mut self,
        record: reel_core::RecordRef<'_>,
        location: Option<reel_core::Location<'_>>,
    ) -> Result<u64> {
        self.check_room()?;
        self.inner.append_located(record, location)
    }

    fn records(&self) -> u64 {
        self.inner.records()
    }

    fn take_sealed(&mut self) -> Vec<reel_core::SealedFile> {
        self.inner.take_sealed()
    }

    fn finish(&mut self) -> Result<reel_core::SinkSummary> {
        let written = self.inner.records();
        if written != self.promised {
            return Err(reel_core::Error::invalid_input(format!(
                "the writer was created for {} records but {written} were written; nothing \
                 was saved yet (write the rest, then finish again)",
                self.promised
            ))
            .with_path(&self.path));
        }
        self.inner.finish()
    }
}

/// The writer of `format` itself (see [`create`]).
fn format_sink(
    format: Format,
    path: &Path,
    options: &crate::CreateOptions,
) -> Result<Box<dyn reel_core::RecordSink>> {
    if let Some(bytes) = options.part_bytes {
        crate::create::check_part_size(format, bytes).map_err(|e| e.with_path(path))?;
    }
    match format {
        #[cfg(feature = "ffrecord")]
        Format::Ffrecord => Ok(match options.records {
            Some(n) => Box::new(reel_ffrecord::FfrecordWriter::create(path, n)?),
            None => Box::new(reel_ffrecord::FfrecordWriter::create_counted(path)?),
        }),
        #[cfg(feature = "syrah")]
        Format::Syrah => {
            // Bytes and scalar fields are stored as 1-D arrays (Syrah holds only arrays).
            let opts = reel_syrah::SyrahWriteOptions::default().coerce_values(true);
            Ok(Box::new(reel_syrah::SyrahWriter::create_with(path, &opts)?))
        }
        #[cfg(feature = "ofrecord")]
        Format::Ofrecord => {
            let mut ofrecord = options.ofrecord.clone();
            if let Some(bytes) = options.part_bytes {
                ofrecord = ofrecord.max_bytes_per_part(bytes);
            }
            Ok(Box::new(reel_ofrecord::OfrecordWriter::create_with(path, &ofrecord)?))
        }
        // The target names the generation: granular 0.24's layout, or bags 0.5.1's. Only
        // granular 0.20–0.21's refs layout is chosen by version (writing like such a source).
        #[cfg(feature = "granular")]
        Format::Granular | Format::Bags => {
            use reel_granular::{RefsFlavor, ShardFormat};
            let layout =
                match (format, options.version.as_deref().and_then(ShardFormat::from_version)) {
                    (Format::Bags, _) => ShardFormat::Refs(RefsFlavor::Bags051),
                    (_, Some(v2 @ ShardFormat::Refs(RefsFlavor::Granular021))) => v2,
                    _ => ShardFormat::Indexed,
                };
            // Overwriting also replaces what a killed write of this target left (its fixed
            // staging name would otherwise refuse every later write).
            let writer = reel_granular::GranularWriterOptions::default()
                .replace_interrupted(options.overwrite);
            let sink =
                reel_granular::GranularSink::new(path, options.schema.as_deref(), layout, writer);
            Ok(Box::new(match options.part_bytes {
                Some(bytes) => sink.shard_bytes(bytes),
                None => sink,
            }))
        }
        #[cfg(feature = "gulp")]
        Format::Gulp => {
            // Readers take chunks in name order, where data_10 sorts before data_2. At most
            // ten chunks keep that order equal to the write order, so records read back in
            // the order they were written.
            let per_chunk = options.records.map_or(100, |n| n.div_ceil(10).max(100));
            let opts =
                reel_gulp::GulpWriteOptions { videos_per_chunk: per_chunk, ..Default::default() };
            Ok(Box::new(reel_gulp::GulpWriter::create(path, &opts)?))
        }
        #[cfg(feature = "arrow")]
        Format::Parquet => arrow::create(reel_arrow::FileKind::Parquet, path, options),
        #[cfg(feature = "arrow")]
        Format::ArrowIpc => arrow::create(reel_arrow::FileKind::ArrowIpc, path, options),
        #[allow(unreachable_patterns)]
        other => {
            let _ = options;
            Err(reel_core::Error::unsupported(format!(
                "writing {other} is not built into this reel"
            ))
            .with_path(path))
        }
    }
}

/// A sink writing chunk `k` of the gulp directory `dir` (for sharded conversion).
pub(crate) fn gulp_chunk_sink(dir: &Path, k: u64) -> Result<Box<dyn reel_core::RecordSink>> {
    #[cfg(feature = "gulp")]
    {
        Ok(Box::new(reel_gulp::GulpWriter::create_chunk(
            dir,
            k,
            &reel_gulp::GulpWriteOptions::default(),
        )?))
    }
    #[cfg(not(feature = "gulp"))]
    {
        let _ = k;
        Err(reel_core::Error::unsupported("writing gulp is not built into this reel")
            .with_path(dir))
    }
}

/// A sink writing the single OFRecord part file `path` (for sharded conversion).
pub(crate) fn ofrecord_part_sink(
    path: &Path,
    options: &crate::CreateOptions,
) -> Result<Box<dyn reel_core::RecordSink>> {
    #[cfg(feature = "ofrecord")]
    {
        Ok(Box::new(reel_ofrecord::OfrecordFileWriter::create_with(path, &options.ofrecord)?))
    }
    #[cfg(not(feature = "ofrecord"))]
    {
        let _ = options;
        Err(reel_core::Error::unsupported("writing ofrecord is not built into this reel")
            .with_path(path))
    }
}
