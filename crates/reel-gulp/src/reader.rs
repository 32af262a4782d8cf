//! Opening gulp directories and reading videos.

use std::ops::Range;
use std::path::{Path, PathBuf};

use reel_core::{
    Backend, Error, ErrorKind, LayoutSource, Limits, ReadAt, Record, RecordBatch, RecordSource,
    Result, Store, StoreRef,
};

use crate::FORMAT;
use crate::discovery::discover_chunks_in;
use crate::jpeg::{FrameDecode, JpegStrictness};
use crate::json::JsonValue;
use crate::layout::{DuplicateId, GulpChunkInfo, GulpLayout};
use crate::meta::FrameInfo;
use crate::select::FrameSelection;

/// How to open a gulp directory.
#[derive(Clone, Debug)]
pub struct GulpOptions {
    /// The I/O backend (default: pread).
    pub backend: Backend,
    /// Where the files are (default: the local file system).
    pub store: StoreRef,
    /// Size, count and nesting limits.
    pub limits: Limits,
    /// What frames become in records read through [`RecordSource`] (default: the stored
    /// JPEG bytes).
    pub decode: FrameDecode,
    /// How strictly frames are judged when they are decoded (default: strictly, like the
    /// reference; see [`JpegStrictness`]).
    pub strictness: JpegStrictness,
}

impl Default for GulpOptions {
    fn default() -> Self {
        GulpOptions {
            backend: Backend::default(),
            store: reel_core::local_store(),
            limits: Limits::default(),
            decode: FrameDecode::default(),
            strictness: JpegStrictness::default(),
        }
    }
}

impl GulpOptions {
    /// Reads the files from `store`.
    pub fn store(mut self, store: StoreRef) -> Self {
        self.store = store;
        self
    }

    /// Uses `backend` for reads.
    pub fn backend(mut self, backend: Backend) -> Self {
        self.backend = backend;
        self
    }

    /// Uses `limits`.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Decodes frames as `decode` says.
    pub fn decode(mut self, decode: FrameDecode) -> Self {
        self.decode = decode;
        self
    }

    /// Judges frames as `strictness` says when decoding them.
    pub fn strictness(mut self, strictness: JpegStrictness) -> Self {
        self.strictness = strictness;
        self
    }
}

/// The files to open for the gulp directory `dir`, in the order [`GulpReader::from_files`]
/// takes them: each chunk's data file then its meta file, chunks in the reference's order.
pub fn dataset_files(dir: impl AsRef<Path>) -> Result<Vec<PathBuf>> {
    dataset_files_in(&reel_core::LocalStore, dir.as_ref())
}

/// [`dataset_files`] of a directory in `store`.
pub fn dataset_files_in(store: &dyn Store, dir: &Path) -> Result<Vec<PathBuf>> {
    Ok(discover_chunks_in(store, dir)?.into_iter().flat_map(|c| [c.data, c.meta]).collect())
}

/// A frame that does not decode (see [`GulpReader::bad_frames`]).
#[derive(Debug)]
pub struct BadFrame {
    /// The frame's position in its video.
    pub frame: usize,
    /// Where the frame starts in its chunk's data file.
    pub offset: Option<u64>,
    /// Why it does not decode.
    pub error: Error,
}

/// A gulp directory opened for reading (the reference's `GulpDirectory`).
///
/// Record `i` is the `i`-th video in the reference's order (chunks sorted by file name,
/// then each chunk's `.gmeta` order). Its fields:
///
/// | field | value |
/// | --- | --- |
/// | `id` | `Str`: the id (always a string in the files; `7` and `"7"` are one id) |
/// | `meta` | the first element of `meta_data`, converted from JSON (object → `Map` with `Str` keys in file order, integer → `Int`/`UInt`, float → `Float` including NaN and ±inf, string → `Str`, list → `List`, `null` → `Null`); `Null` if `meta_data` is empty (which the reference never writes and cannot read; written back, it becomes `[null]`) |
/// | `frames` | `List` of `Bytes`: each frame's JPEG without its padding, zero-copy; or, with [`FrameDecode`], of `uint8` arrays `[h, w, 3]` / `[h, w]` |
/// | `meta_extra` | only when the id was appended more than once: `List` of the other `meta_data` elements, which the reference stores but never returns |
///
/// With `meta_extra`, the record holds everything the files say about the video, so
/// [`GulpWriter`](crate::GulpWriter) writes it back losslessly.
///
/// Differences from the reference, all deliberate:
///
/// * A directory with an id in two chunks opens (with a warning, see
///   [`duplicate_ids`](Self::duplicate_ids)); the reference refuses it. Lookups by id find
///   the first chunk's video.
/// * The `.gmeta` structure is validated at open (an entry without `frame_info` or
///   `meta_data`, or a frame that is not three non-negative integers, is
///   [`Corrupt`](ErrorKind::Corrupt)); the reference fails later, when the video is read.
/// * A frame that lies beyond the end of its data file is a `Corrupt` error on read; the
///   reference returns the truncated bytes (and its decoder then fails).
/// * Metadata nesting is bounded by [`Limits::max_nesting`] (the reference by Python's
///   recursion limit); integers beyond 64 bits in `meta` are an
///   [`Unsupported`](ErrorKind::Unsupported) error when the video is read.
pub struct GulpReader<F: ReadAt = Box<dyn ReadAt>> {
    source: LayoutSource<GulpLayout, F>,
}

impl GulpReader {
    /// Opens the gulp directory `dir` with default options.
    pub fn open(dir: impl AsRef<Path>) -> Result<Self> {
        Self::open_with(dir, &GulpOptions::default())
    }

    /// Opens the gulp directory `dir`.
    pub fn open_with(dir: impl AsRef<Path>, options: &GulpOptions) -> Result<Self> {
        let dir = dir.as_ref();
        // Stat first: a FIFO, device or socket is refused here instead of blocking later.
        let kind = options.store.stat(dir).map_err(|e| e.with_format(FORMAT))?;
        if kind != reel_core::paths::InputKind::Dir {
            return Err(Error::invalid_input(
                "a GulpIO2 dataset is a directory of data_<n>.gulp and meta_<n>.gmeta files",
            )
            .with_path(dir)
            .with_format(FORMAT));
        }
        let paths = dataset_files_in(&*options.store, dir)?;
        let files = options
            .store
            .open_files(&paths, &options.backend)
            .map_err(|e| e.with_format(FORMAT))?;
        GulpReader::from_files(files, options)
    }
}

impl<F: ReadAt> GulpReader<F> {
    /// Reads a gulp directory from an already opened file set: chunk `k`'s data file as
    /// file `2k` and its meta file as file `2k + 1`, chunks in reading order (see
    /// [`dataset_files`]). The chunk numbers come from the file names.
    pub fn from_files(files: F, options: &GulpOptions) -> Result<Self> {
        let layout = GulpLayout::open(&files, &options.limits, options.decode, options.strictness)?;
        Ok(GulpReader { source: LayoutSource::new(layout, files, options.limits.clone()) })
    }

    /// The index: chunks, ids, frame tables.
    pub fn layout(&self) -> &GulpLayout {
        self.source.layout()
    }

    /// The chunks in reading order (the reference's `chunk_objs_lookup`).
    pub fn chunks(&self) -> &[GulpChunkInfo] {
        self.layout().chunks()
    }

    /// The record indices of the videos of the chunk numbered `number`.
    pub fn chunk_videos(&self, number: u64) -> Option<Range<u64>> {
        let c = self.chunks().iter().find(|c| c.number == number)?;
        Some(c.first_video..c.first_video + c.video_count)
    }

    /// The id of video `index`.
    pub fn id(&self, index: u64) -> Option<&str> {
        self.layout().id(index)
    }

    /// Every id in reading order.
    pub fn ids(&self) -> impl Iterator<Item = &str> + '_ {
        (0..self.len()).filter_map(|i| self.layout().id(i))
    }

    /// The record index of the video with `id`.
    pub fn index_of(&self, id: &str) -> Option<u64> {
        self.layout().index_of(id)
    }

    /// Whether a video has the id `id` (the reference's `id in chunk`).
    pub fn contains(&self, id: &str) -> bool {
        self.index_of(id).is_some()
    }

    /// The number of the chunk holding `id` (the reference's `chunk_lookup[id]`).
    pub fn chunk_of(&self, id: &str) -> Option<u64> {
        self.layout().chunk_of(self.index_of(id)?).map(|c| c.number)
    }

    /// The frame table of video `index` (the reference's `frame_info`).
    pub fn frame_info(&self, index: u64) -> Option<&[FrameInfo]> {
        self.layout().frame_info(index)
    }

    /// The `meta_data` list of video `index` as stored (the reference's
    /// `merged_meta_dict[id]['meta_data']`).
    pub fn meta_data(&self, index: u64) -> Result<Vec<JsonValue>> {
        self.layout().meta_data(index).map_err(|e| e.with_record(index).with_format(FORMAT))
    }

    /// Ids occurring in more than one chunk.
    pub fn duplicate_ids(&self) -> &[DuplicateId] {
        self.layout().duplicate_ids()
    }

    /// Reads the chosen frames of video `index` into `out`, decoded as the reader was
    /// opened (the reference's `gd[id, selector]`).
    pub fn read_video(&self, index: u64, frames: &FrameSelection, out: &mut Record) -> Result<()> {
        self.read_video_with(index, frames, self.layout().frame_decode(), out)
    }

    /// [`read_video`](Self::read_video) with an explicit decode mode. Only the chosen
    /// frames are read; consecutive ones in one request.
    pub fn read_video_with(
        &self,
        index: u64,
        frames: &FrameSelection,
        decode: FrameDecode,
        out: &mut Record,
    ) -> Result<()> {
        let layout = self.layout();
        let positions = self.positions(index, frames)?;
        let positions = positions.as_deref();
        self.source.read_with(
            index,
            out,
            |i, p| layout.plan_frames(i, positions, p),
            |i, raw, o| layout.decode_frames(i, positions, decode, raw, o),
        )
    }

    /// The video with `id`, its chosen frames decoded as the reader was opened. An unknown
    /// id is [`ErrorKind::NotFound`] (the reference's `KeyError`).
    pub fn get(&self, id: &str, frames: &FrameSelection) -> Result<Record> {
        let index = self.index_of(id).ok_or_else(|| {
            Error::new(ErrorKind::NotFound, format!("no video has the id {id:?}"))
                .with_format(FORMAT)
        })?;
        let mut r = Record::new();
        self.read_video(index, frames, &mut r)?;
        Ok(r)
    }

    /// Reads the chosen frames of several videos in one batched read.
    pub fn read_videos(
        &self,
        indices: &[u64],
        frames: &FrameSelection,
        decode: FrameDecode,
        out: &mut RecordBatch,
    ) -> Result<()> {
        let layout = self.layout();
        let resolve = |i: u64| -> Result<Option<Vec<usize>>> {
            match frames {
                FrameSelection::All => Ok(None),
                sel => {
                    let count = layout.frame_info(i).map_or(0, <[FrameInfo]>::len);
                    sel.resolve(count).map(Some)
                }
            }
        };
        self.source.read_batch_with(
            indices,
            out,
            |i, p| layout.plan_frames(i, resolve(i)?.as_deref(), p),
            |i, raw, o| layout.decode_frames(i, resolve(i)?.as_deref(), decode, raw, o),
        )
    }

    fn positions(&self, index: u64, frames: &FrameSelection) -> Result<Option<Vec<usize>>> {
        if *frames == FrameSelection::All {
            return Ok(None);
        }
        let count = self
            .frame_info(index)
            .ok_or_else(|| Error::out_of_range(index, self.len()).with_format(FORMAT))?
            .len();
        frames.resolve(count).map(Some).map_err(|e| e.with_record(index).with_format(FORMAT))
    }

    /// Decodes every frame of video `index` like the reference's default decoder, judged
    /// as the reader was opened ([`GulpOptions::strictness`]), and returns the frames that
    /// fail, in order. An `Err` means the video itself could not be read.
    pub fn bad_frames(&self, index: u64) -> Result<Vec<BadFrame>> {
        let mut record = Record::new();
        self.read_video_with(index, &FrameSelection::All, FrameDecode::Raw, &mut record)?;
        let infos = self.frame_info(index).unwrap_or(&[]);
        let Some(frames) = record.get(crate::FRAMES_FIELD).and_then(|f| f.as_list()) else {
            return Err(Error::corrupt("the video has no frame list").with_record(index));
        };
        let strictness = self.layout().strictness();
        let mut bad = Vec::new();
        for (k, frame) in frames.iter().enumerate() {
            let bytes = frame.as_bytes().unwrap_or(&[]);
            if let Err(e) = crate::jpeg::decode_jpeg_with(bytes, FrameDecode::Auto, strictness) {
                let offset = infos.get(k).map(|f| f.loc);
                bad.push(BadFrame { frame: k, offset, error: e });
            }
        }
        Ok(bad)
    }

    /// The underlying generic source.
    pub fn source(&self) -> &LayoutSource<GulpLayout, F> {
        &self.source
    }
}

reel_core::delegate_record_source!(GulpReader, source);
