//! Writing a gulp directory record by record: [`GulpWriter`], the [`RecordSink`].

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use reel_core::{
    Error, ErrorKind, RecordRef, RecordSink, Result, SealedFile, SinkSummary, StagedDir,
    UnfinishedGuard, ValueRef,
};

use super::chunk::{ChunkSummary, GulpChunkWriter, GulpWriteOptions, PreparedChunk};
use crate::discovery::{data_file_name, discover_chunks, meta_file_name, next_chunk_number};
use crate::jpeg::Frame;
use crate::json::JsonValue;
use crate::meta::parse_index;
use crate::{FORMAT, FRAMES_FIELD, ID_FIELD, META_EXTRA_FIELD, META_FIELD};

/// Writes videos into a gulp directory, [`GulpWriteOptions::videos_per_chunk`] per chunk
/// (the last chunk may hold fewer), like the reference's `GulpIngestor` does.
///
/// Two ways to start:
///
/// * [`create`](Self::create) writes a new directory. It is built under a temporary name
///   beside the target and renamed into place by [`finish`](RecordSink::finish), so a
///   writer dropped before finishing leaves nothing.
/// * [`append_chunks`](Self::append_chunks) adds new chunks, numbered after the existing
///   ones, to an existing directory (what re-running the reference's ingestor does). New
///   chunk files are staged under names the readers ignore and renamed into place on
///   `finish`; dropped unfinished, the writer leaves the directory as it was.
///
/// Every id must be new: an id that is already in the directory, or written twice, is an
/// [`ErrorKind::InvalidInput`] error, because the reference cannot open a directory with
/// an id in two chunks. (To extend a video the reference's way, use
/// [`GulpChunkWriter::append_to`].)
///
/// As a [`RecordSink`] it takes the records [`GulpReader`](crate::GulpReader) returns:
/// `id` (`Str`, or an integer, stored as its decimal text like the reference's `str(id)`),
/// `meta` (any JSON-representable value; absent means `{}`), `frames` (a list of JPEG
/// `Bytes`, stored unchanged, or of `uint8` arrays `[h, w, 3]` / `[h, w]`, encoded at
/// quality 90 with 4:4:4 chroma) and optionally `meta_extra` (more `meta_data` elements).
/// Any other field is a [`Schema`](ErrorKind::Schema) error rather than silently dropped.
///
/// Chunks are named `data_<n>.gulp` like the reference's. With more than ten chunks the
/// readers' name order (`data_10` before `data_2`) differs from the write order, so
/// videos read back in a different order than they were written.
pub struct GulpWriter {
    dir: PathBuf,
    staged: Option<StagedDir>,
    options: GulpWriteOptions,
    next_number: u64,
    current: Option<GulpChunkWriter>,
    current_videos: u64,
    prepared: Vec<PreparedChunk>,
    ids: HashSet<String>,
    records: u64,
    finished: bool,
    broken: bool,
    summaries: Vec<ChunkSummary>,
    /// Chunk files closed before `finish`, not yet taken by [`RecordSink::take_sealed`].
    sealed: Vec<SealedFile>,
    unfinished: UnfinishedGuard,
}

impl GulpWriter {
    /// Starts a new gulp directory at `dir`, which must not exist or be an empty directory.
    pub fn create(dir: impl AsRef<Path>, options: &GulpWriteOptions) -> Result<Self> {
        let dir = dir.as_ref();
        check_options(options)?;
        if let Ok(mut entries) = std::fs::read_dir(dir) {
            if entries.next().is_some() {
                return Err(Error::invalid_input(
                    "the directory exists and is not empty; add chunks to a gulp directory with \
                     GulpWriter::append_chunks",
                )
                .with_path(dir)
                .with_format(FORMAT));
            }
        } else if dir.exists() {
            return Err(Error::invalid_input("the output exists and is not a directory")
                .with_path(dir)
                .with_format(FORMAT));
        }
        let staged = StagedDir::create(dir).map_err(|e| e.with_format(FORMAT))?;
        Ok(Self::new(dir, Some(staged), options, 0, HashSet::new()))
    }

    /// Adds new chunks to the existing gulp directory `dir`, numbered after its chunks.
    pub fn append_chunks(dir: impl AsRef<Path>, options: &GulpWriteOptions) -> Result<Self> {
        let dir = dir.as_ref();
        check_options(options)?;
        let chunks = discover_chunks(dir)?;
        let next = next_chunk_number(&chunks).map_err(|e| e.with_path(dir).with_format(FORMAT))?;
        let ids = existing_ids(dir, options)?;
        Ok(Self::new(dir, None, options, next, ids))
    }

    /// Writes every video into one new chunk numbered `number` of the gulp directory `dir`
    /// (created if missing). Several processes can each write their own chunk of one
    /// directory at once (parallel conversion); ids are not checked against other chunks,
    /// which may be being written at the same moment.
    pub fn create_chunk(
        dir: impl AsRef<Path>,
        number: u64,
        options: &GulpWriteOptions,
    ) -> Result<Self> {
        let dir = dir.as_ref();
        check_options(options)?;
        std::fs::create_dir_all(dir).map_err(|e| {
            Error::io(e, "cannot create the gulp directory").with_path(dir).with_format(FORMAT)
        })?;
        let options = GulpWriteOptions { videos_per_chunk: u64::MAX, ..options.clone() };
        Ok(Self::new(dir, None, &options, number, HashSet::new()))
    }

    fn new(
        dir: &Path,
        staged: Option<StagedDir>,
        options: &GulpWriteOptions,
        next_number: u64,
        ids: HashSet<String>,
    ) -> Self {
        GulpWriter {
            dir: dir.to_path_buf(),
            staged,
            options: options.clone(),
            next_number,
            current: None,
            current_videos: 0,
            prepared: Vec::new(),
            ids,
            records: 0,
            finished: false,
            broken: false,
            summaries: Vec::new(),
            sealed: Vec::new(),
            unfinished: UnfinishedGuard::new(FORMAT, dir),
        }
    }

    fn check_open(&self) -> Result<()> {
        if self.finished {
            return Err(Error::new(ErrorKind::Closed, "the gulp writer is already finished")
                .with_path(&self.dir)
                .with_format(FORMAT));
        }
        if self.broken {
            return Err(Error::new(
                ErrorKind::Io,
                "an earlier write failed; the gulp writer cannot continue (nothing was saved)",
            )
            .with_path(&self.dir)
            .with_format(FORMAT));
        }
        Ok(())
    }

    /// Videos written so far (the index the next one gets); every reel writer has this
    /// counter.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Writes a video: its id, metadata and frames, the reference's `GulpChunk.append`
    /// arguments. Returns how many videos were written before it. The same as
    /// [`append`](Self::append) of a record with these fields.
    pub fn write_video(&mut self, id: &str, meta: JsonValue, frames: &[Frame<'_>]) -> Result<u64> {
        self.write_video_with_extra(id, meta, Vec::new(), frames)
    }

    /// Writes a video whose `meta_data` has more than one element: `meta` first, then
    /// `extra` (what a reference chunk holds after an id was appended several times).
    pub fn write_video_with_extra(
        &mut self,
        id: &str,
        meta: JsonValue,
        extra: Vec<JsonValue>,
        frames: &[Frame<'_>],
    ) -> Result<u64> {
        let index = self.records;
        self.write_video_inner(id, meta, extra, frames)
            .map_err(|e| e.with_format(FORMAT).with_record(index))
    }

    fn write_video_inner(
        &mut self,
        id: &str,
        meta: JsonValue,
        extra: Vec<JsonValue>,
        frames: &[Frame<'_>],
    ) -> Result<u64> {
        self.check_open()?;
        if self.ids.contains(id) {
            return Err(Error::invalid_input(format!(
                "the id {id:?} is already in the gulp directory; the reference cannot open a \
                 directory with an id in two chunks"
            ))
            .with_path(&self.dir)
            .with_format(FORMAT));
        }
        if self.current.is_none() {
            let chunk = match &self.staged {
                Some(s) => GulpChunkWriter::create_direct(
                    s.path(),
                    &self.dir,
                    self.next_number,
                    &self.options,
                )?,
                None => GulpChunkWriter::create(&self.dir, self.next_number, &self.options)?,
            };
            self.next_number = self.next_number.checked_add(1).ok_or_else(|| {
                Error::unsupported("the chunk numbers are exhausted").with_format(FORMAT)
            })?;
            self.current = Some(chunk);
            self.current_videos = 0;
        }
        let Some(chunk) = self.current.as_mut() else {
            return Err(Error::new(ErrorKind::Closed, "no open chunk").with_format(FORMAT));
        };
        let frames_before = chunk.data_len();
        let result = chunk
            .append(id, meta, frames)
            .and_then(|()| extra.into_iter().try_for_each(|m| chunk.append_meta(id, m)));
        if let Err(e) = result {
            // An encoding error leaves the chunk as it was; a failed write does not.
            if chunk.data_len() != frames_before || e.kind() == ErrorKind::Io {
                self.broken = true;
            }
            return Err(e);
        }
        self.ids.insert(id.to_string());
        self.current_videos += 1;
        self.records += 1;
        if self.current_videos >= self.options.videos_per_chunk {
            self.close_chunk()?;
        }
        Ok(self.records - 1)
    }

    /// Ends the current chunk: the next video starts a new one.
    pub fn next_chunk(&mut self) -> Result<()> {
        self.check_open()?;
        self.close_chunk()
    }

    fn close_chunk(&mut self) -> Result<()> {
        if let Some(chunk) = self.current.take() {
            match chunk.prepare() {
                Ok(p) => {
                    // In a new directory the chunk's files have their final names in the
                    // staged directory and nothing touches them again: they are sealed. Added
                    // chunks (`append_chunks`) are renamed on finish, so they are not.
                    if let Some(staged) = &self.staged {
                        let number = p.summary.number;
                        for name in [data_file_name(number), meta_file_name(number)] {
                            let path = staged.path().join(&name);
                            self.sealed.push(SealedFile { path, name });
                        }
                    }
                    self.prepared.push(p)
                }
                Err(e) => {
                    self.broken = true;
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    /// The chunks written, once [`finish`](RecordSink::finish) has published them.
    pub fn chunk_summaries(&self) -> &[ChunkSummary] {
        &self.summaries
    }

    /// Writes one record (see the type's documentation for the fields it takes) and returns
    /// its index. `&record` and `record.view()` both work.
    pub fn append<'a>(&mut self, record: impl Into<RecordRef<'a>>) -> Result<u64> {
        let index = self.records;
        self.append_inner(record.into()).map_err(|e| e.with_format(FORMAT).with_record(index))
    }

    /// An alias of [`append`](Self::append), the name earlier reel versions used.
    pub fn write_record(&mut self, record: RecordRef<'_>) -> Result<u64> {
        self.append(record)
    }

    fn append_inner(&mut self, record: RecordRef<'_>) -> Result<u64> {
        let mut id = None;
        let mut meta = None;
        let mut frames: Option<Vec<Frame<'_>>> = None;
        let mut extra = Vec::new();
        for (name, value) in record.iter() {
            let ctx = |e: Error| {
                Error::new(e.kind(), format!("field {name:?}: {}", e.message())).with_format(FORMAT)
            };
            match name {
                ID_FIELD => {
                    id = Some(match value {
                        ValueRef::Str(s) => s.to_string(),
                        ValueRef::Int(i) => i.to_string(),
                        ValueRef::UInt(u) => u.to_string(),
                        other => {
                            return Err(ctx(Error::schema(format!(
                                "a GulpIO2 id is a string or an integer, not {}",
                                other.kind_name()
                            ))));
                        }
                    })
                }
                META_FIELD => meta = Some(JsonValue::from_value(value).map_err(ctx)?),
                FRAMES_FIELD => {
                    let list = value
                        .as_list()
                        .ok_or_else(|| ctx(Error::schema("frames must be a list")))?;
                    frames = Some(
                        list.iter().map(Frame::from_value).collect::<Result<_>>().map_err(ctx)?,
                    );
                }
                META_EXTRA_FIELD => {
                    let list = value
                        .as_list()
                        .ok_or_else(|| ctx(Error::schema("meta_extra must be a list")))?;
                    extra = list
                        .iter()
                        .map(JsonValue::from_value)
                        .collect::<Result<_>>()
                        .map_err(ctx)?;
                }
                other => {
                    return Err(Error::schema(format!(
                        "a GulpIO2 video has the fields id, meta, frames and meta_extra; the \
                         field {other:?} has no place in it"
                    ))
                    .with_format(FORMAT));
                }
            }
        }
        let id = id.ok_or_else(|| {
            Error::schema("a GulpIO2 video needs an id field").with_format(FORMAT)
        })?;
        let frames = frames.ok_or_else(|| {
            Error::schema("a GulpIO2 video needs a frames field").with_format(FORMAT)
        })?;
        self.write_video_with_extra(
            &id,
            meta.unwrap_or_else(JsonValue::empty_object),
            extra,
            &frames,
        )
    }

    /// Publishes every chunk (see the type's documentation).
    pub fn finish(&mut self) -> Result<SinkSummary> {
        self.check_open()?;
        self.unfinished.finished();
        self.close_chunk()?;
        self.sealed.clear();
        let result = self.publish();
        if result.is_err() {
            self.broken = true;
        }
        result
    }

    fn publish(&mut self) -> Result<SinkSummary> {
        let mut summaries = Vec::with_capacity(self.prepared.len());
        for p in self.prepared.drain(..) {
            summaries.push(p.commit()?);
        }
        if let Some(staged) = self.staged.take() {
            staged.commit().map_err(|e| e.with_format(FORMAT))?;
        }
        self.finished = true;
        let bytes = summaries.iter().map(|s| s.data_bytes + s.meta_bytes).sum();
        self.summaries = summaries;
        Ok(SinkSummary { records: self.records, bytes, paths: vec![self.dir.clone()] })
    }
}

fn check_options(options: &GulpWriteOptions) -> Result<()> {
    if options.videos_per_chunk == 0 {
        return Err(Error::invalid_input("videos_per_chunk must be at least 1").with_format(FORMAT));
    }
    Ok(())
}

/// Every id already in the gulp directory `dir`.
pub(crate) fn existing_ids(dir: &Path, options: &GulpWriteOptions) -> Result<HashSet<String>> {
    let mut ids = HashSet::new();
    for chunk in discover_chunks(dir)? {
        let fail = |e: Error| e.with_path(&chunk.meta).with_format(FORMAT);
        let bytes = reel_core::paths::read_input(
            &chunk.meta,
            options.limits.max_metadata_bytes,
            "the meta file",
        )
        .map_err(|e| e.with_format(FORMAT))?;
        let text = String::from_utf8(bytes)
            .map_err(|_| fail(Error::corrupt("the meta file is not UTF-8 text")))?;
        for e in parse_index(&text, options.limits.max_nesting).map_err(fail)? {
            ids.insert(e.id.to_str_lossy().into_owned());
        }
    }
    Ok(ids)
}

impl RecordSink for GulpWriter {
    fn append_ref(&mut self, record: RecordRef<'_>) -> Result<u64> {
        self.append(record)
    }

    fn records(&self) -> u64 {
        self.records
    }

    fn take_sealed(&mut self) -> Vec<SealedFile> {
        std::mem::take(&mut self.sealed)
    }

    fn finish(&mut self) -> Result<SinkSummary> {
        GulpWriter::finish(self)
    }
}
