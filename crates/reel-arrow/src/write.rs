//! Writing Parquet and Arrow IPC files: a [`RecordSink`] for conversions, and
//! [`write_parquet`]/[`write_ipc`] for a whole source.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use arrow_array::RecordBatch;
use arrow_schema::{DataType, SchemaRef};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression as PqCompression, ZstdLevel};
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::schema::types::ColumnPath;
use reel_core::{
    Error, ErrorKind, FieldSpec, Location, RecordRef, RecordSink, RecordSource, Result,
    SinkSummary, StagedFile, UnfinishedGuard,
};

use crate::encode::Encoder;
use crate::stream::{ArrowOptions, Purpose, SourceBatchReader, encoder_for};

/// Which file to write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileKind {
    /// Apache Parquet.
    Parquet,
    /// The Arrow IPC file format (Feather v2), uncompressed.
    ArrowIpc,
}

/// Parquet column compression.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    /// None.
    None,
    /// Snappy.
    Snappy,
    /// Zstandard at a level (1 to 22).
    Zstd(i32),
}

impl Default for Compression {
    /// Zstandard level 1: a good ratio at a speed close to Snappy's.
    fn default() -> Self {
        Compression::Zstd(1)
    }
}

impl std::str::FromStr for Compression {
    type Err = Error;

    /// `none`, `snappy`, `zstd` or `zstd:LEVEL`.
    fn from_str(s: &str) -> Result<Self> {
        let bad = || {
            Error::invalid_input(format!(
                "compression {s:?}: expected none, snappy, zstd or zstd:LEVEL (1-22)"
            ))
        };
        Ok(match s.to_ascii_lowercase().as_str() {
            "none" | "uncompressed" => Compression::None,
            "snappy" => Compression::Snappy,
            "zstd" => Compression::default(),
            other => match other.strip_prefix("zstd:").map(str::parse::<i32>) {
                Some(Ok(level)) if (1..=22).contains(&level) => Compression::Zstd(level),
                _ => return Err(bad()),
            },
        })
    }
}

/// How to write a Parquet or Arrow IPC file.
#[derive(Clone, Debug)]
pub struct WriteOptions {
    /// Schema, extra columns and batch sizes.
    pub arrow: ArrowOptions,
    /// Parquet: rows per row group at most (default 1,048,576).
    pub row_group_rows: usize,
    /// Parquet: bytes per row group at most, as encoded (default 16 MiB, the default batch's
    /// size). A row group is held in memory until it is flushed, so this (plus a few
    /// batches) bounds the memory a conversion needs, however large the dataset. When a
    /// batch's encoded size reaches it (uncompressed output of batches that end at their
    /// byte budget), each batch is written as a row group as it arrives, which keeps the
    /// writing thread busy: in one series of runs of the same build, a 1 GB FFRecord →
    /// Parquet conversion of 1 KiB records without compression took 0.60 s with 16 MiB row
    /// groups against 0.87 s with 64 MiB ones.
    pub row_group_bytes: usize,
    /// Parquet: column compression (default zstd level 1).
    pub compression: Compression,
}

impl Default for WriteOptions {
    fn default() -> Self {
        WriteOptions {
            arrow: ArrowOptions::default(),
            row_group_rows: 1 << 20,
            row_group_bytes: 16 << 20,
            compression: Compression::default(),
        }
    }
}

fn parquet_error(e: parquet::errors::ParquetError, path: &Path) -> Error {
    Error::new(ErrorKind::Io, format!("Parquet: {e}")).with_format("parquet").with_path(path)
}

fn arrow_error(e: arrow_schema::ArrowError, path: &Path) -> Error {
    match e {
        arrow_schema::ArrowError::IoError(_, io) => {
            Error::io(io, "cannot write the Arrow file").with_format("arrow").with_path(path)
        }
        other => Error::new(ErrorKind::Io, format!("Arrow IPC: {other}"))
            .with_format("arrow")
            .with_path(path),
    }
}

/// Parquet writer properties: compression, row-group limits; no dictionary and no
/// statistics for binary columns (blobs do not repeat, and min/max of images help no
/// query), which keeps large-blob conversions at copy speed.
fn writer_properties(schema: &SchemaRef, options: &WriteOptions) -> WriterProperties {
    let compression = match options.compression {
        Compression::None => PqCompression::UNCOMPRESSED,
        Compression::Snappy => PqCompression::SNAPPY,
        Compression::Zstd(level) => {
            PqCompression::ZSTD(ZstdLevel::try_new(level).unwrap_or_default())
        }
    };
    let mut props = WriterProperties::builder()
        .set_compression(compression)
        .set_max_row_group_row_count(Some(options.row_group_rows.max(1)))
        .set_max_row_group_bytes(Some(options.row_group_bytes.max(1)))
        .set_created_by(format!("reel {}", env!("CARGO_PKG_VERSION")));
    for f in schema.fields() {
        if matches!(f.data_type(), DataType::Binary | DataType::LargeBinary) {
            let col = ColumnPath::new(vec![f.name().clone()]);
            props = props
                .set_column_dictionary_enabled(col.clone(), false)
                .set_column_statistics_enabled(col, EnabledStatistics::None);
        }
    }
    props.build()
}

/// Why writing the file failed, before the error is given the file's name (the thread that
/// writes does not know the name the caller reports).
enum WriteFailure {
    Parquet(parquet::errors::ParquetError),
    Arrow(arrow_schema::ArrowError),
    /// What the format cannot hold (a `Schema` error of that format).
    Refused(&'static str, &'static str),
}

impl WriteFailure {
    fn named(self, path: &Path) -> Error {
        match self {
            WriteFailure::Parquet(e) => parquet_error(e, path),
            WriteFailure::Arrow(e) => arrow_error(e, path),
            WriteFailure::Refused(format, why) => {
                Error::schema(why).with_format(format).with_path(path)
            }
        }
    }
}

/// A Parquet or Arrow IPC file writer, driven by a [`Writer`]'s thread.
trait BatchFileWriter: Send + 'static {
    fn write_batch(&mut self, batch: &RecordBatch) -> std::result::Result<(), WriteFailure>;
    /// Writes the footer and flushes.
    fn finish_file(self: Box<Self>) -> std::result::Result<(), WriteFailure>;
}

impl BatchFileWriter for ArrowWriter<File> {
    fn write_batch(&mut self, batch: &RecordBatch) -> std::result::Result<(), WriteFailure> {
        // A Parquet file counts its rows in its column chunks: rows without columns would
        // be written as none, and the records lost without a word (pyarrow loses them so).
        if batch.num_columns() == 0 && batch.num_rows() > 0 {
            return Err(WriteFailure::Refused(
                "parquet",
                "the records have no fields, and a Parquet file cannot hold rows without \
                 columns (an Arrow IPC file, --to arrow, keeps their count)",
            ));
        }
        self.write(batch).map_err(WriteFailure::Parquet)
    }

    fn finish_file(self: Box<Self>) -> std::result::Result<(), WriteFailure> {
        self.close().map(drop).map_err(WriteFailure::Parquet)
    }
}

impl BatchFileWriter for arrow_ipc::writer::FileWriter<BufWriter<File>> {
    fn write_batch(&mut self, batch: &RecordBatch) -> std::result::Result<(), WriteFailure> {
        self.write(batch).map_err(WriteFailure::Arrow)
    }

    fn finish_file(mut self: Box<Self>) -> std::result::Result<(), WriteFailure> {
        self.finish().map_err(WriteFailure::Arrow)?;
        let buffered = self.into_inner().map_err(WriteFailure::Arrow)?;
        buffered.into_inner().map(drop).map_err(|e| WriteFailure::Arrow(e.into_error().into()))
    }
}

/// Batches a [`Writer`] holds at once: the one it writes and the one waiting for it. The
/// encoder fills a third while they are written.
const IN_FLIGHT: usize = 2;

/// A Parquet or Arrow IPC file written on a thread of its own. Encoding Parquet pages and
/// writing them copies every byte twice more after the Arrow batch was built; on the
/// converting thread that made it the longest stage of a conversion (two thirds of an
/// FFRecord → Parquet conversion's samples at 1 KiB records, with the reading thread half
/// idle), and for Arrow IPC the kernel's copy into the file alone was. So the file is
/// written here while the next batch is built. Batches come back once written, so their
/// buffers are filled again.
///
/// The thread ends at its first error, which the next [`write`](Self::write) or
/// [`close`](Self::close) returns, naming the file (so an error may surface a batch or two
/// after the one that caused it); every call after that fails too, so a failed file is
/// never closed as if it were whole. Dropped without `close`, the writer stops the thread
/// without writing the batches still queued or the footer, and waits for it.
struct Writer {
    batches: Option<std::sync::mpsc::SyncSender<RecordBatch>>,
    written: std::sync::mpsc::Receiver<RecordBatch>,
    in_flight: usize,
    /// Set when the writer is dropped unfinished: the thread then stops at once.
    abandoned: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// Ends with the file writer's first error, which the caller names its file in.
    thread: Option<std::thread::JoinHandle<std::result::Result<(), WriteFailure>>>,
    /// The first error the thread ended with (its text and format), reported again by later
    /// calls.
    failed: Option<(String, Option<&'static str>)>,
}

/// The deepest nesting of lists, maps and structs a written column may have. Parquet and
/// IPC files carry their schema as a flatbuffer, which arrow-rs's readers (reel's own) check
/// against a depth limit: a column nested 60 deep read back, 61 was refused
/// ("DepthLimitReached"), both as Parquet and as IPC. A file no reader opens is not
/// written.
pub const MAX_COLUMN_NESTING: usize = 60;

/// How deep `data_type` nests lists, maps, structs and dictionaries (0 for a flat type).
fn nesting(data_type: &DataType) -> usize {
    use DataType as T;
    match data_type {
        T::List(f) | T::LargeList(f) | T::ListView(f) | T::LargeListView(f) => {
            1 + nesting(f.data_type())
        }
        T::FixedSizeList(f, _) | T::Map(f, _) => 1 + nesting(f.data_type()),
        T::Struct(fields) => 1 + fields.iter().map(|f| nesting(f.data_type())).max().unwrap_or(0),
        T::Union(fields, _) => {
            1 + fields.iter().map(|(_, f)| nesting(f.data_type())).max().unwrap_or(0)
        }
        // A dictionary's values are a nested table of their own in the schema: 59 lists
        // over a dictionary read back, 60 did not.
        T::Dictionary(_, value) => 1 + nesting(value),
        T::RunEndEncoded(_, values) => nesting(values.data_type()),
        _ => 0,
    }
}

/// Refuses a schema with a column nested deeper than [`MAX_COLUMN_NESTING`], naming it.
fn check_nesting(schema: &SchemaRef, path: &Path) -> Result<()> {
    for field in schema.fields() {
        let depth = nesting(field.data_type());
        if depth > MAX_COLUMN_NESTING {
            return Err(Error::schema(format!(
                "column {:?} nests lists, maps, structs or dictionaries {depth} deep; Parquet \
                 and Arrow IPC readers refuse schemas nested deeper than {MAX_COLUMN_NESTING} \
                 (store the value as JSON or msgpack bytes instead, as `reel convert \
                 --encode-nested` does)",
                field.name()
            ))
            .with_path(path));
        }
    }
    Ok(())
}

impl Writer {
    fn new(
        kind: FileKind,
        staged: &StagedFile,
        schema: &SchemaRef,
        options: &WriteOptions,
    ) -> Result<Writer> {
        check_nesting(schema, staged.final_path())?;
        let path = staged.temp_path();
        let file = staged
            .file()
            .try_clone()
            .map_err(|e| Error::io(e, "cannot open the staged file").with_path(path))?;
        let writer: Box<dyn BatchFileWriter> = match kind {
            FileKind::Parquet => Box::new(
                ArrowWriter::try_new(
                    file,
                    schema.clone(),
                    Some(writer_properties(schema, options)),
                )
                .map_err(|e| parquet_error(e, path))?,
            ),
            FileKind::ArrowIpc => Box::new(
                arrow_ipc::writer::FileWriter::try_new(
                    BufWriter::with_capacity(1 << 20, file),
                    schema,
                )
                .map_err(|e| arrow_error(e, path))?,
            ),
        };
        Writer::start(writer, path)
    }

    fn start(mut writer: Box<dyn BatchFileWriter>, path: &Path) -> Result<Writer> {
        use std::sync::atomic::Ordering;
        let (batches, to_write) = std::sync::mpsc::sync_channel::<RecordBatch>(1);
        let (give_back, written) = std::sync::mpsc::channel();
        let abandoned = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stop = abandoned.clone();
        let thread = std::thread::Builder::new()
            .name("reel-write".into())
            .spawn(move || {
                for batch in to_write {
                    if stop.load(Ordering::Relaxed) {
                        return Ok(());
                    }
                    writer.write_batch(&batch)?;
                    // The writer copied the batch into its pages or file; its buffers may
                    // be reused.
                    let _ = give_back.send(batch);
                }
                if stop.load(Ordering::Relaxed) {
                    return Ok(());
                }
                writer.finish_file()
            })
            .map_err(|e| Error::io(e, "cannot start the writing thread").with_path(path))?;
        Ok(Writer {
            batches: Some(batches),
            written,
            in_flight: 0,
            abandoned,
            thread: Some(thread),
            failed: None,
        })
    }

    /// Writes `batch`, and gives back a batch written earlier once the writer is done with
    /// it, for its buffers to be filled again ([`Encoder::recycle`]).
    fn write(&mut self, batch: RecordBatch, path: &Path) -> Result<Option<RecordBatch>> {
        let sent = self.batches.as_ref().is_some_and(|to| to.send(batch).is_ok());
        if !sent {
            return Err(self.failure(path));
        }
        self.in_flight += 1;
        if self.in_flight < IN_FLIGHT {
            return Ok(None);
        }
        match self.written.recv() {
            Ok(done) => {
                self.in_flight -= 1;
                Ok(Some(done))
            }
            Err(_) => Err(self.failure(path)),
        }
    }

    /// Writes what is queued and the file's footer, and says whether all of it went well.
    fn close(mut self, path: &Path) -> Result<()> {
        self.batches = None;
        self.join(path)
    }

    /// Why the thread stopped taking batches: its error (it ends at the first one).
    fn failure(&mut self, path: &Path) -> Error {
        self.batches = None;
        match self.join(path) {
            Err(e) => e,
            Ok(()) => Error::new(ErrorKind::Io, "the writing thread stopped early").with_path(path),
        }
    }

    /// Waits for the thread and gives its outcome; once it has ended with an error, that
    /// error again.
    fn join(&mut self, path: &Path) -> Result<()> {
        let outcome = match self.thread.take().map(std::thread::JoinHandle::join) {
            Some(Ok(result)) => result.map_err(|e| e.named(path)),
            Some(Err(panic)) => {
                let what = reel_core::stream::panic_message(&*panic);
                Err(Error::new(ErrorKind::Io, format!("the writing thread panicked: {what}"))
                    .with_path(path))
            }
            None => match &self.failed {
                Some((first, format)) => {
                    let again = Error::new(
                        ErrorKind::Io,
                        format!("an earlier write to the file failed ({first})"),
                    );
                    Err(match format {
                        Some(format) => again.with_format(format),
                        None => again,
                    }
                    .with_path(path))
                }
                None => Ok(()),
            },
        };
        if let Err(e) = &outcome
            && self.failed.is_none()
        {
            self.failed = Some((e.message().to_string(), e.format()));
        }
        outcome
    }
}

impl Drop for Writer {
    /// An abandoned writer (a failed conversion) stops its thread without writing what is
    /// queued or the footer, and waits for it, so nothing writes to the staged file after.
    fn drop(&mut self) {
        self.abandoned.store(true, std::sync::atomic::Ordering::Relaxed);
        self.batches = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The state once the schema is known.
struct Writing {
    encoder: Encoder,
    writer: Writer,
}

/// A [`RecordSink`] writing one Parquet or Arrow IPC file.
///
/// Records are buffered until the schema is known (the first
/// [`ArrowOptions::sample_records`] records, or the given [`ArrowOptions::schema`]), then
/// encoded into batches of [`ArrowOptions::batch_rows`]/`batch_bytes` and written. Its
/// columns are set up exactly as [`SourceBatchReader`]'s for the same options (column
/// selection, a given schema's offset width). The file is staged beside `path` and appears
/// only on [`finish`](RecordSink::finish).
pub struct ArrowSink {
    kind: FileKind,
    options: WriteOptions,
    declared: Option<Vec<FieldSpec>>,
    /// Declared before `staged`, so a dropped sink stops its writer (and the writer's
    /// thread) before the staged file is removed.
    writing: Option<Writing>,
    staged: Option<StagedFile>,
    path: PathBuf,
    sample: reel_core::RecordBatch,
    /// Where the sampled records are stored, when the location columns are written.
    sample_locations: Vec<Option<(PathBuf, u64, u64)>>,
    records: u64,
    unfinished: UnfinishedGuard,
}

impl ArrowSink {
    /// A sink for a new file at `path`. `declared` are the source's fields, if it declares
    /// them (their order is kept, and they name types for fields no sampled record has).
    pub fn create(
        path: impl AsRef<Path>,
        kind: FileKind,
        declared: Option<Vec<FieldSpec>>,
        options: &WriteOptions,
    ) -> Result<ArrowSink> {
        let path = path.as_ref().to_path_buf();
        let staged = StagedFile::create(&path)?;
        let mut sink = ArrowSink {
            kind,
            options: options.clone(),
            declared,
            staged: Some(staged),
            path: path.clone(),
            sample: reel_core::RecordBatch::new(),
            sample_locations: Vec::new(),
            writing: None,
            records: 0,
            unfinished: UnfinishedGuard::new(
                match kind {
                    FileKind::Parquet => "parquet",
                    FileKind::ArrowIpc => "arrow",
                },
                &path,
            ),
        };
        if options.arrow.schema.is_some() {
            sink.start()?;
        }
        Ok(sink)
    }

    /// Fixes the schema (from the given one or the sample) and writes the sample.
    fn start(&mut self) -> Result<()> {
        let declared = self.declared.as_deref();
        let encoder =
            encoder_for(&self.options.arrow, declared, self.sample.iter(), Purpose::Writing)?;
        let staged = self.staged.as_ref().ok_or_else(closed)?;
        let writer = Writer::new(self.kind, staged, &encoder.schema(), &self.options)?;
        self.writing = Some(Writing { encoder, writer });
        let sample = std::mem::take(&mut self.sample);
        let mut locations = std::mem::take(&mut self.sample_locations).into_iter();
        for r in sample.iter() {
            let at = locations.next().flatten();
            let at = at.as_ref().map(|(path, offset, len)| Location {
                path,
                offset: *offset,
                len: *len,
            });
            self.push(r, at)?;
        }
        Ok(())
    }

    fn push(&mut self, record: RecordRef<'_>, location: Option<Location<'_>>) -> Result<()> {
        let batch_rows = self.options.arrow.batch_rows.max(1);
        let batch_bytes = self.options.arrow.batch_bytes;
        let w = self.writing.as_mut().ok_or_else(closed)?;
        w.encoder.push_located(record, location)?;
        if w.encoder.rows() >= batch_rows || w.encoder.buffered_bytes() >= batch_bytes {
            let batch = w.encoder.finish_batch()?;
            if let Some(written) = w.writer.write(batch, &self.path)? {
                w.encoder.recycle(written);
            }
        }
        Ok(())
    }
}

fn closed() -> Error {
    Error::new(ErrorKind::Closed, "the writer is already finished")
}

impl RecordSink for ArrowSink {
    fn append_ref(&mut self, record: RecordRef<'_>) -> Result<u64> {
        self.append_located(record, None)
    }

    fn append_located(
        &mut self,
        record: RecordRef<'_>,
        location: Option<Location<'_>>,
    ) -> Result<u64> {
        if self.staged.is_none() {
            return Err(closed());
        }
        if self.writing.is_some() {
            self.push(record, location)?;
        } else {
            self.sample.push_copy(record);
            if self.options.arrow.extra.location {
                self.sample_locations
                    .push(location.map(|at| (at.path.to_path_buf(), at.offset, at.len)));
            }
            let o = &self.options.arrow;
            if self.sample.len() >= o.sample_records.max(1)
                || self.sample.buffer_len() >= o.sample_bytes
            {
                self.start()?;
            }
        }
        self.records += 1;
        Ok(self.records - 1)
    }

    fn records(&self) -> u64 {
        self.records
    }

    fn finish(&mut self) -> Result<SinkSummary> {
        self.unfinished.finished();
        let finished = self.finish_file();
        if finished.is_err() {
            // Whatever failed (a batch written earlier included: the writer reports its
            // failure again at the last write and at close), the sink is done: its writer
            // stops (first), the staged file is removed, and every later call fails as
            // closed instead of writing a second file over the first's remains.
            self.writing = None;
            self.staged = None;
        }
        finished
    }
}

impl ArrowSink {
    /// [`RecordSink::finish`]'s work: the last batch, the footer, and publishing.
    fn finish_file(&mut self) -> Result<SinkSummary> {
        if self.writing.is_none() {
            self.start()?;
        }
        let Writing { mut encoder, writer } = self.writing.take().ok_or_else(closed)?;
        let mut writer = writer;
        if encoder.rows() > 0 {
            let batch = encoder.finish_batch()?;
            writer.write(batch, &self.path)?;
        }
        writer.close(&self.path)?;
        let staged = self.staged.take().ok_or_else(closed)?;
        let bytes = staged.file().metadata().map(|m| m.len()).unwrap_or(0);
        staged.commit()?;
        Ok(SinkSummary { records: self.records, bytes, paths: vec![self.path.clone()] })
    }
}

/// Writes every record of `source` to a new Parquet (`kind` = Parquet) or Arrow IPC file
/// at `path`, with the schema from the source's declared fields and a sample of its
/// records (or [`ArrowOptions::schema`]). Memory stays within about three batches (the
/// one being built, one queued and one being written) plus one row group, whatever the
/// dataset's size.
pub fn write_file(
    source: &dyn RecordSource,
    path: impl AsRef<Path>,
    kind: FileKind,
    options: &WriteOptions,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<SinkSummary> {
    let path = path.as_ref();
    let mut reader = SourceBatchReader::for_writing(source, &options.arrow)?;
    let schema = reader.schema();
    let staged = StagedFile::create(path)?;
    let mut writer = Writer::new(kind, &staged, &schema, options)?;
    let total = source.len();
    let mut done = 0;
    while let Some(batch) = reader.next_batch()? {
        done += batch.num_rows() as u64;
        writer.write(batch, path)?;
        progress(done, total);
    }
    writer.close(path)?;
    let bytes = staged.file().metadata().map(|m| m.len()).unwrap_or(0);
    staged.commit()?;
    Ok(SinkSummary { records: done, bytes, paths: vec![path.to_path_buf()] })
}

/// [`write_file`] to Parquet.
pub fn write_parquet(
    source: &dyn RecordSource,
    path: impl AsRef<Path>,
    options: &WriteOptions,
) -> Result<SinkSummary> {
    write_file(source, path, FileKind::Parquet, options, &mut |_, _| {})
}

/// [`write_file`] to an Arrow IPC file.
pub fn write_ipc(
    source: &dyn RecordSource,
    path: impl AsRef<Path>,
    options: &WriteOptions,
) -> Result<SinkSummary> {
    write_file(source, path, FileKind::ArrowIpc, options, &mut |_, _| {})
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::BinaryArray;
    use arrow_schema::{Field, Schema};

    use super::*;

    #[test]
    fn a_dictionary_counts_as_a_level_of_nesting() {
        // 59 lists over a dictionary of text read back, 60 were refused like 61 lists.
        let mut t = DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8));
        for _ in 0..59 {
            t = DataType::List(Arc::new(Field::new("item", t, true)));
        }
        assert_eq!(nesting(&t), MAX_COLUMN_NESTING);
        let deeper = DataType::List(Arc::new(Field::new("item", t, true)));
        assert_eq!(nesting(&deeper), MAX_COLUMN_NESTING + 1);
    }

    fn binary_schema() -> SchemaRef {
        Arc::new(Schema::new(vec![Field::new("data", DataType::Binary, false)]))
    }

    /// A writer thread of `kind` over `file`. Parquet: uncompressed, two rows a row group,
    /// so every batch reaches the file as it is written.
    fn thread_over(kind: FileKind, file: File, path: &Path) -> Writer {
        let schema = binary_schema();
        let writer: Box<dyn BatchFileWriter> = match kind {
            FileKind::Parquet => {
                let options = WriteOptions {
                    row_group_rows: 2,
                    compression: Compression::None,
                    ..Default::default()
                };
                let props = writer_properties(&schema, &options);
                Box::new(ArrowWriter::try_new(file, schema, Some(props)).unwrap())
            }
            FileKind::ArrowIpc => Box::new(
                arrow_ipc::writer::FileWriter::try_new(BufWriter::new(file), &schema).unwrap(),
            ),
        };
        Writer::start(writer, path).unwrap()
    }

    /// Four values of 64 KiB.
    fn batch() -> RecordBatch {
        let value = vec![7u8; 64 << 10];
        let column = BinaryArray::from_iter_values(std::iter::repeat_n(&value, 4));
        RecordBatch::try_new(binary_schema(), vec![Arc::new(column)]).unwrap()
    }

    /// The rows of the batches in the file at `path`, read back by the format's own reader.
    fn rows_in(kind: FileKind, path: &Path) -> usize {
        let file = File::open(path).unwrap();
        match kind {
            FileKind::Parquet => {
                parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
                    .unwrap()
                    .build()
                    .unwrap()
                    .map(|b| b.unwrap().num_rows())
                    .sum()
            }
            FileKind::ArrowIpc => arrow_ipc::reader::FileReader::try_new(file, None)
                .unwrap()
                .map(|b| b.unwrap().num_rows())
                .sum(),
        }
    }

    const KINDS: [FileKind; 2] = [FileKind::Parquet, FileKind::ArrowIpc];

    /// A write that fails on the writing thread (here: the file is open read-only, which
    /// the format's writer finds out when its buffer first goes to the file) comes back
    /// from `write` or `close` as the format's own error naming the file, never hangs the
    /// caller, and is reported again by every later call, `close` included, so a failed
    /// file is never finished as if it were whole.
    #[test]
    fn a_failed_write_on_the_thread_is_an_error_naming_the_file_and_stays_one() {
        let dir = tempfile::tempdir().unwrap();
        for (kind, wording) in KINDS.into_iter().zip(["Parquet:", "cannot write the Arrow file"]) {
            let path = dir.path().join(format!("out-{kind:?}"));
            std::fs::write(&path, b"").unwrap();
            let mut thread = thread_over(kind, File::open(&path).unwrap(), &path);
            let mut failed = None;
            for _ in 0..8 {
                if let Err(e) = thread.write(batch(), &path) {
                    failed = Some(e);
                    break;
                }
            }
            let first = failed.expect("writing to a read-only file succeeded for 8 batches");
            assert_eq!(first.kind(), ErrorKind::Io, "{first}");
            let text = first.to_string();
            assert!(text.contains(&format!("out-{kind:?}")) && text.contains(wording), "{text}");
            assert!(!text.contains("stopped early") && !text.contains("earlier"), "{text}");
            let again =
                thread.write(batch(), &path).expect_err("a write after a failure succeeded");
            assert!(again.to_string().contains("earlier write"), "{again}");
            assert_eq!(again.format(), first.format(), "{again}");
            let closed = thread.close(&path).expect_err("closing a failed file succeeded");
            assert!(closed.to_string().contains(first.message()), "{closed}");
        }
    }

    /// Closed, the file holds every batch and ends with its format's footer (Parquet's and
    /// Arrow IPC's); dropped unfinished, the thread stops without writing the footer (nor
    /// what was still queued).
    #[test]
    fn close_writes_every_batch_and_the_footer_and_drop_does_not() {
        let dir = tempfile::tempdir().unwrap();
        for (kind, magic) in KINDS.into_iter().zip([&b"PAR1"[..], b"ARROW1"]) {
            for close in [true, false] {
                let path = dir.path().join(format!("out-{kind:?}-{close}"));
                let mut thread = thread_over(kind, File::create(&path).unwrap(), &path);
                for _ in 0..3 {
                    thread.write(batch(), &path).unwrap();
                }
                if close {
                    thread.close(&path).unwrap();
                } else {
                    drop(thread);
                }
                let bytes = std::fs::read(&path).unwrap();
                assert_eq!(bytes.ends_with(magic), close, "{kind:?}: {} bytes", bytes.len());
                if close {
                    assert_eq!(rows_in(kind, &path), 12, "{kind:?}");
                }
            }
        }
    }
}
