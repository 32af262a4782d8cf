//! Writing one chunk: `data_<n>.gulp` + `meta_<n>.gmeta`, like gulpio2's `GulpChunk`.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use reel_core::{Error, ErrorKind, Limits, Result, StagedFile, UnfinishedGuard};

use crate::FORMAT;
use crate::discovery::{data_file_name, meta_file_name};
use crate::jpeg::{Frame, REFERENCE_QUALITY};
use crate::json::{JsonStr, JsonValue};
use crate::meta::{FrameInfo, MetaDoc, parse_index};

const BUFFER: usize = 1 << 20;

/// Options of the GulpIO2 writers.
#[derive(Clone, Debug)]
pub struct GulpWriteOptions {
    /// Videos per chunk for [`GulpWriter`](crate::GulpWriter) (the reference scripts'
    /// `--videos_per_chunk`, default 100).
    pub videos_per_chunk: u64,
    /// JPEG quality for frames given as pixels (the reference's 90).
    pub jpeg_quality: u8,
    /// Refuse frames given as JPEG bytes that do not start with the JPEG start-of-image
    /// marker (on by default: the reference can only write real JPEGs).
    pub check_jpeg: bool,
    /// Limits for reading existing meta files in append mode.
    pub limits: Limits,
}

impl Default for GulpWriteOptions {
    fn default() -> Self {
        GulpWriteOptions {
            videos_per_chunk: 100,
            jpeg_quality: REFERENCE_QUALITY,
            check_jpeg: true,
            limits: Limits::default(),
        }
    }
}

impl GulpWriteOptions {
    /// Uses `n` videos per chunk.
    pub fn videos_per_chunk(mut self, n: u64) -> Self {
        self.videos_per_chunk = n;
        self
    }

    /// Encodes pixel frames at `quality`.
    pub fn jpeg_quality(mut self, quality: u8) -> Self {
        self.jpeg_quality = quality;
        self
    }

    /// Turns the JPEG marker check of frames given as bytes on or off.
    pub fn check_jpeg(mut self, on: bool) -> Self {
        self.check_jpeg = on;
        self
    }
}

/// What a finished chunk holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChunkSummary {
    /// The chunk number.
    pub number: u64,
    /// Its data file.
    pub data_path: PathBuf,
    /// Its meta file.
    pub meta_path: PathBuf,
    /// Items in the meta file (old and new).
    pub videos: u64,
    /// Frames written by this writer.
    pub frames_written: u64,
    /// Size of the data file.
    pub data_bytes: u64,
    /// Size of the meta file.
    pub meta_bytes: u64,
}

enum Target {
    /// A new chunk beside others: both files under temporary names until finished.
    Staged(StagedFile),
    /// A new chunk inside a directory that is itself staged: final names, no renames.
    Direct,
    /// An existing chunk continued in place; its data file is cut back to `original_len`
    /// if the writer is dropped before finishing.
    Appending { original_len: u64, committed: bool },
}

/// Writes one chunk, like gulpio2's `GulpChunk` opened with `'wb'` (a new chunk) or `'ab'`
/// (continuing an existing one).
///
/// Each frame is stored as its JPEG followed by 0–3 zero bytes up to a multiple of 4, and
/// `[loc, pad, length]` (length including the padding) is added to the item's
/// `frame_info`; [`finish`](Self::finish) writes the `.gmeta` exactly as the reference's
/// `json.dump` does. Appending an id that is already in the chunk adds its frames to the
/// same entry and its metadata as another `meta_data` element, as in the reference.
///
/// Crash safety, and where reel differs from the reference:
///
/// * A new chunk is written under temporary names (`.data_<n>.gulp.reel-tmp-…`, which the
///   reader's globs do not match) and renamed into place on `finish`, data file first.
///   Dropped unfinished, it leaves nothing. A crash between the two renames leaves a data
///   file without its meta file, which readers (reel's and the reference's) refuse to
///   open rather than misread.
/// * In append mode new frames go to the end of the existing data file and the meta file
///   is replaced atomically on `finish`, after the data is synced. Dropped unfinished, the
///   writer cuts the data file back to its old length, so the chunk is exactly as before.
///   After a crash (no drop), the old meta file still describes the old content correctly;
///   the new frames remain as unindexed bytes at the end, which
///   [`sanity_check`](crate::sanity_check) reports.
/// * Creating a chunk that exists is refused: the reference's `'wb'` on an existing chunk
///   truncates the data but keeps the old index entries, which then point at nothing.
/// * Appending to a chunk whose index already points past its data file, or to a data
///   file whose meta file is missing (or the reverse), is refused instead of producing an
///   index that points at the wrong bytes.
pub struct GulpChunkWriter {
    number: u64,
    data_path: PathBuf,
    meta_path: PathBuf,
    target: Target,
    out: Option<BufWriter<File>>,
    pos: u64,
    doc: MetaDoc,
    options: GulpWriteOptions,
    frames_written: u64,
    broken: bool,
    /// For a chunk inside a staged directory: the directory's final path, for summaries.
    summary_dir: Option<PathBuf>,
    /// Warns once when a chunk writer of its own is dropped before `finish` (a chunk of a
    /// directory writer leaves that to the directory writer's guard).
    unfinished: UnfinishedGuard,
}

fn exists(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok()
}

impl GulpChunkWriter {
    /// Starts the new chunk `number` in `dir` (the reference's `GulpChunk` opened with
    /// `'wb'`). Fails with [`ErrorKind::InvalidInput`] if either of its files exists.
    pub fn create(dir: impl AsRef<Path>, number: u64, options: &GulpWriteOptions) -> Result<Self> {
        let dir = dir.as_ref();
        let (data_path, meta_path) =
            (dir.join(data_file_name(number)), dir.join(meta_file_name(number)));
        if exists(&data_path) || exists(&meta_path) {
            return Err(Error::invalid_input(format!(
                "chunk {number} already exists; continue it with GulpChunkWriter::append_to \
                 (writing it anew would leave the old index entries pointing at nothing, as the \
                 reference's 'wb' does)"
            ))
            .with_path(&data_path)
            .with_format(FORMAT));
        }
        let staged = StagedFile::create(&data_path).map_err(|e| e.with_format(FORMAT))?;
        let file = staged.file().try_clone().map_err(|e| {
            Error::io(e, "cannot clone file handle").with_path(&data_path).with_format(FORMAT)
        })?;
        Ok(Self::new(
            number,
            data_path,
            meta_path,
            Target::Staged(staged),
            file,
            0,
            MetaDoc::default(),
            options,
        ))
    }

    /// Starts a new chunk numbered after the existing ones in `dir` (the reference's
    /// `GulpDirectory(dir).new_chunks(1)`).
    pub fn create_next(dir: impl AsRef<Path>, options: &GulpWriteOptions) -> Result<Self> {
        let dir = dir.as_ref();
        let chunks = crate::discovery::discover_chunks(dir)?;
        let number = crate::discovery::next_chunk_number(&chunks).map_err(|e| e.with_path(dir))?;
        Self::create(dir, number, options)
    }

    /// A new chunk whose files are written under their final names in `dir`, a directory
    /// the caller stages and publishes as a whole.
    pub(crate) fn create_direct(
        dir: &Path,
        final_dir: &Path,
        number: u64,
        options: &GulpWriteOptions,
    ) -> Result<Self> {
        let data_path = dir.join(data_file_name(number));
        let file =
            OpenOptions::new().write(true).create_new(true).open(&data_path).map_err(|e| {
                Error::io(e, "cannot create data file").with_path(&data_path).with_format(FORMAT)
            })?;
        let mut w = Self::new(
            number,
            data_path,
            dir.join(meta_file_name(number)),
            Target::Direct,
            file,
            0,
            MetaDoc::default(),
            options,
        );
        // Summaries name the files where they will be once the directory is published.
        w.summary_dir = Some(final_dir.to_path_buf());
        w.unfinished.finished();
        Ok(w)
    }

    /// Continues chunk `number` in `dir` (the reference's `'ab'`): new frames go after the
    /// existing data, existing entries are kept. A chunk that does not exist yet is
    /// created.
    pub fn append_to(
        dir: impl AsRef<Path>,
        number: u64,
        options: &GulpWriteOptions,
    ) -> Result<Self> {
        let dir = dir.as_ref();
        let (data_path, meta_path) =
            (dir.join(data_file_name(number)), dir.join(meta_file_name(number)));
        match (exists(&data_path), exists(&meta_path)) {
            (false, false) => return Self::create(dir, number, options),
            (true, true) => {}
            (data, _) => {
                return Err(Error::invalid_input(format!(
                    "chunk {number} has a {} file but no {} file; appending would index the \
                     wrong bytes",
                    if data { "data" } else { "meta" },
                    if data { "meta" } else { "data" },
                ))
                .with_path(if data { &data_path } else { &meta_path })
                .with_format(FORMAT));
            }
        }
        let fail = |e: Error, p: &Path| e.with_path(p).with_format(FORMAT);
        let text = reel_core::paths::read_input(
            &meta_path,
            options.limits.max_metadata_bytes,
            "the meta file",
        )
        .map_err(|e| e.with_format(FORMAT))?;
        let text = String::from_utf8(text)
            .map_err(|_| fail(Error::corrupt("the meta file is not UTF-8 text"), &meta_path))?;
        let max_depth = options.limits.max_nesting;
        let index = parse_index(&text, max_depth).map_err(|e| fail(e, &meta_path))?;
        let doc = MetaDoc::parse(&text, max_depth).map_err(|e| fail(e, &meta_path))?;
        let mut file = OpenOptions::new()
            .write(true)
            .open(&data_path)
            .map_err(|e| fail(Error::io(e, "cannot open data file"), &data_path))?;
        let original_len = file
            .seek(SeekFrom::End(0))
            .map_err(|e| fail(Error::io(e, "cannot seek"), &data_path))?;
        let indexed_end = index
            .iter()
            .flat_map(|e| e.frames.iter())
            .map(|f| f.end().unwrap_or(u64::MAX))
            .max()
            .unwrap_or(0);
        if indexed_end > original_len {
            return Err(fail(
                Error::corrupt(format!(
                    "the chunk's index needs {indexed_end} bytes but its data file has \
                     {original_len}; refusing to append to a damaged chunk"
                )),
                &data_path,
            ));
        }
        Ok(Self::new(
            number,
            data_path,
            meta_path,
            Target::Appending { original_len, committed: false },
            file,
            original_len,
            doc,
            options,
        ))
    }

    #[allow(clippy::too_many_arguments)]
    fn new(
        number: u64,
        data_path: PathBuf,
        meta_path: PathBuf,
        target: Target,
        file: File,
        pos: u64,
        doc: MetaDoc,
        options: &GulpWriteOptions,
    ) -> Self {
        GulpChunkWriter {
            unfinished: UnfinishedGuard::new(FORMAT, &data_path),
            number,
            data_path,
            meta_path,
            target,
            out: Some(BufWriter::with_capacity(BUFFER, file)),
            pos,
            doc,
            options: options.clone(),
            frames_written: 0,
            broken: false,
            summary_dir: None,
        }
    }
}

impl GulpChunkWriter {
    /// The chunk number.
    pub fn number(&self) -> u64 {
        self.number
    }

    /// Items in the chunk so far (existing ones included in append mode).
    pub fn video_count(&self) -> usize {
        self.doc.len()
    }

    /// Bytes in the data file so far.
    pub fn data_len(&self) -> u64 {
        self.pos
    }

    fn check_open(&self) -> Result<()> {
        if self.out.is_none() {
            return Err(Error::new(ErrorKind::Closed, "the chunk writer is already finished")
                .with_path(&self.data_path)
                .with_format(FORMAT));
        }
        if self.broken {
            return Err(Error::new(
                ErrorKind::Io,
                "an earlier write failed; the chunk writer cannot continue (nothing was saved)",
            )
            .with_path(&self.data_path)
            .with_format(FORMAT));
        }
        Ok(())
    }

    /// Appends an item: its metadata as a new `meta_data` element and its frames (the
    /// reference's `GulpChunk.append(id, meta_data, frames)`). An empty frame list stores
    /// the item with no frames, as the reference's `append` does.
    ///
    /// Frames are encoded (or checked) before anything is written, so a frame that cannot
    /// be stored fails the call and leaves the chunk unchanged.
    pub fn append(&mut self, id: &str, meta: JsonValue, frames: &[Frame<'_>]) -> Result<()> {
        self.check_open()?;
        let jpegs = frames
            .iter()
            .enumerate()
            .map(|(k, f)| {
                f.to_jpeg(self.options.jpeg_quality, self.options.check_jpeg).map_err(|e| {
                    Error::new(e.kind(), format!("frame {k} of {id:?}: {}", e.message()))
                        .with_format(FORMAT)
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let key = JsonStr::from(id);
        self.doc.append_meta(&key, meta).map_err(|e| e.with_format(FORMAT))?;
        for jpeg in &jpegs {
            self.write_frame(&key, jpeg)?;
        }
        Ok(())
    }

    /// Adds a `meta_data` element to `id` without frames (the reference's
    /// `append(id, meta, [])`), creating the item if needed.
    pub fn append_meta(&mut self, id: &str, meta: JsonValue) -> Result<()> {
        self.check_open()?;
        self.doc.append_meta(&JsonStr::from(id), meta).map_err(|e| e.with_format(FORMAT))
    }

    fn write_frame(&mut self, id: &JsonStr, jpeg: &[u8]) -> Result<()> {
        let pad = (4 - jpeg.len() % 4) % 4;
        let length = (jpeg.len() + pad) as u64;
        let out = self.out.as_mut().ok_or_else(|| Error::new(ErrorKind::Closed, "finished"))?;
        let written = out.write_all(jpeg).and_then(|()| out.write_all(&[0u8; 3][..pad]));
        if let Err(e) = written {
            self.broken = true;
            return Err(Error::io(e, "cannot write frame")
                .with_path(&self.data_path)
                .with_format(FORMAT));
        }
        let frame = FrameInfo { loc: self.pos, pad: pad as u64, length };
        self.pos += length;
        self.frames_written += 1;
        self.doc.append_frame(id, frame).map_err(|e| e.with_format(FORMAT))
    }

    /// Flushes the data, writes the meta file and publishes the chunk (see the type's
    /// documentation for the order of operations).
    pub fn finish(self) -> Result<ChunkSummary> {
        if matches!(self.target, Target::Appending { .. }) {
            return self.finish_append();
        }
        self.prepare()?.commit()
    }

    fn flushed_file(&mut self) -> Result<File> {
        self.check_open()?;
        let out = self.out.take().ok_or_else(|| Error::new(ErrorKind::Closed, "finished"))?;
        let path = self.data_path.clone();
        out.into_inner().map_err(|e| {
            self.broken = true;
            Error::io(e.into_error(), "cannot write data file").with_path(&path).with_format(FORMAT)
        })
    }

    fn summary(&self, meta_bytes: u64) -> ChunkSummary {
        let relocate = |p: &Path| match (&self.summary_dir, p.file_name()) {
            (Some(dir), Some(name)) => dir.join(name),
            _ => p.to_path_buf(),
        };
        ChunkSummary {
            number: self.number,
            data_path: relocate(&self.data_path),
            meta_path: relocate(&self.meta_path),
            videos: self.doc.len() as u64,
            frames_written: self.frames_written,
            data_bytes: self.pos,
            meta_bytes,
        }
    }

    /// Finishes a new chunk up to, but not including, publishing it.
    pub(crate) fn prepare(mut self) -> Result<PreparedChunk> {
        // From here the chunk is published or the error says why not: no drop warning.
        self.unfinished.finished();
        let file = self.flushed_file()?;
        let text = self.doc.to_text();
        let io = |e: std::io::Error, what: &str, p: &Path| {
            Error::io(e, what).with_path(p).with_format(FORMAT)
        };
        let ids = self.doc.ids();
        match std::mem::replace(&mut self.target, Target::Direct) {
            Target::Staged(data) => {
                drop(file);
                let mut meta =
                    StagedFile::create(&self.meta_path).map_err(|e| e.with_format(FORMAT))?;
                meta.file_mut()
                    .write_all(text.as_bytes())
                    .map_err(|e| io(e, "cannot write meta file", &self.meta_path))?;
                let summary = self.summary(text.len() as u64);
                Ok(PreparedChunk { files: Some((data, meta)), summary, ids })
            }
            Target::Direct => {
                file.sync_all().map_err(|e| io(e, "cannot sync data file", &self.data_path))?;
                let mut meta = File::create(&self.meta_path)
                    .map_err(|e| io(e, "cannot create meta file", &self.meta_path))?;
                meta.write_all(text.as_bytes())
                    .and_then(|()| meta.sync_all())
                    .map_err(|e| io(e, "cannot write meta file", &self.meta_path))?;
                let summary = self.summary(text.len() as u64);
                Ok(PreparedChunk { files: None, summary, ids })
            }
            Target::Appending { .. } => {
                Err(Error::invalid_input("an appending chunk writer is finished with finish()"))
            }
        }
    }

    fn finish_append(mut self) -> Result<ChunkSummary> {
        self.unfinished.finished();
        let file = self.flushed_file()?;
        let io = |e: std::io::Error, what: &str, p: &Path| {
            Error::io(e, what).with_path(p).with_format(FORMAT)
        };
        // The new frames must be on disk before the index that points at them.
        file.sync_all().map_err(|e| io(e, "cannot sync data file", &self.data_path))?;
        let text = self.doc.to_text();
        let mut meta = StagedFile::create(&self.meta_path).map_err(|e| e.with_format(FORMAT))?;
        meta.file_mut()
            .write_all(text.as_bytes())
            .map_err(|e| io(e, "cannot write meta file", &self.meta_path))?;
        let temp = meta.temp_path().to_path_buf();
        let result = meta.commit();
        // Once the new index is in place (even if syncing the directory failed after the
        // rename), the appended frames must stay.
        if (result.is_ok() || !temp.exists())
            && let Target::Appending { committed, .. } = &mut self.target
        {
            *committed = true;
        }
        result.map_err(|e| e.with_format(FORMAT))?;
        Ok(self.summary(text.len() as u64))
    }
}

impl Drop for GulpChunkWriter {
    fn drop(&mut self) {
        if let Target::Appending { original_len, committed: false } = self.target {
            // Discard buffered frames without writing them, then cut off what was written.
            let file = match self.out.take() {
                Some(out) => Some(out.into_parts().0),
                None => OpenOptions::new().write(true).open(&self.data_path).ok(),
            };
            if let Some(f) = file {
                let _ = f.set_len(original_len);
                let _ = f.sync_all();
            }
        }
    }
}

/// A new chunk whose files are complete but not yet published.
pub(crate) struct PreparedChunk {
    /// Staged data and meta files, or `None` when they already have their final names in a
    /// staged directory.
    files: Option<(StagedFile, StagedFile)>,
    pub(crate) summary: ChunkSummary,
    /// The distinct ids of the chunk.
    pub(crate) ids: Vec<String>,
}

impl PreparedChunk {
    /// Renames the files into place: data first, so a crash in between leaves a data file
    /// without meta file (refused by readers), never an index without its data.
    pub(crate) fn commit(self) -> Result<ChunkSummary> {
        if let Some((data, meta)) = self.files {
            data.commit().map_err(|e| e.with_format(FORMAT))?;
            meta.commit().map_err(|e| e.with_format(FORMAT))?;
        }
        Ok(self.summary)
    }
}
