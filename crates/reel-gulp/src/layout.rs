//! Plan and decode for GulpIO2: where a video's frames are and what the record is.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use reel_core::{
    Error, FieldName, FieldSpec, Layout, Limits, Plan, ReadAt, RecordOut, Result, SourceInfo, Span,
    Value, Warning, WarningKind,
};

use crate::discovery::chunk_number;
use crate::jpeg::{FrameDecode, JpegStrictness, decode_into_record};
use crate::json::{JsonValue, parse_json};
use crate::meta::{FrameInfo, parse_index};
use crate::{FORMAT, FRAMES_FIELD, ID_FIELD, META_EXTRA_FIELD, META_FIELD};

/// One chunk of an open gulp directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GulpChunkInfo {
    /// The chunk number (from the file names).
    pub number: u64,
    /// The `data_<n>.gulp` file.
    pub data_path: PathBuf,
    /// The `meta_<n>.gmeta` file.
    pub meta_path: PathBuf,
    /// Size of the data file when it was opened.
    pub data_size: u64,
    /// Size of the meta file.
    pub meta_size: u64,
    /// Record index of the chunk's first video.
    pub first_video: u64,
    /// Number of videos in the chunk.
    pub video_count: u64,
}

/// An id that occurs in more than one chunk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DuplicateId {
    /// The id.
    pub id: String,
    /// The numbers of the chunks holding it, in reading order.
    pub chunks: Vec<u64>,
}

#[derive(Debug)]
struct Video {
    id: Arc<str>,
    chunk: u32,
    first_frame: usize,
    frame_count: usize,
    meta_span: std::ops::Range<usize>,
    meta_count: usize,
    /// Bytes of all the video's frame records together.
    bytes: u64,
}

/// The index of a gulp directory as read at open: chunks, videos in reading order, their
/// frame tables and where their metadata is.
///
/// The file set it reads from holds each chunk's data file and meta file as files `2k` and
/// `2k + 1`, chunks in reading order.
#[derive(Debug)]
pub struct GulpLayout {
    info: SourceInfo,
    chunks: Vec<GulpChunkInfo>,
    meta_texts: Vec<String>,
    videos: Vec<Video>,
    frames: Vec<FrameInfo>,
    by_id: HashMap<Arc<str>, u64>,
    duplicates: Vec<DuplicateId>,
    decode: FrameDecode,
    strictness: JpegStrictness,
    max_depth: u32,
    max_decoded_bytes: u64,
    names: [FieldName; 4],
}

impl GulpLayout {
    /// Reads every chunk's meta file from `files` (data and meta files alternating, see
    /// above) and builds the index. Metadata sizes are checked against `limits` before they
    /// are read; frame positions are checked against the data file when a video is read, so
    /// a damaged chunk leaves the other videos readable, as with the reference.
    pub fn open(
        files: &dyn ReadAt,
        limits: &Limits,
        decode: FrameDecode,
        strictness: JpegStrictness,
    ) -> Result<Self> {
        let count = files.file_count();
        if !count.is_multiple_of(2) {
            return Err(Error::invalid_input(format!(
                "a gulp file set holds a data file and a meta file per chunk; got {count} files"
            ))
            .with_format(FORMAT));
        }
        let mut layout = GulpLayout {
            info: SourceInfo::new(FORMAT),
            chunks: Vec::with_capacity(count / 2),
            meta_texts: Vec::with_capacity(count / 2),
            videos: Vec::new(),
            frames: Vec::new(),
            by_id: HashMap::new(),
            duplicates: Vec::new(),
            decode,
            strictness,
            max_depth: limits.max_nesting,
            max_decoded_bytes: limits.max_decoded_bytes,
            names: [
                Arc::from(ID_FIELD),
                Arc::from(META_FIELD),
                Arc::from(FRAMES_FIELD),
                Arc::from(META_EXTRA_FIELD),
            ],
        };
        let mut meta_total: u64 = 0;
        let mut duplicates: HashMap<Arc<str>, Vec<u64>> = HashMap::new();
        let mut lossy_ids = 0usize;
        for k in 0..count / 2 {
            let (data, meta) = ((2 * k) as u32, (2 * k + 1) as u32);
            let meta_path = files.file_path(meta).to_path_buf();
            let fail = |e: Error| e.with_path(&meta_path).with_format(FORMAT);
            let number = pair_number(files, data, meta).map_err(fail)?;
            let meta_size = files.file_len(meta);
            meta_total = meta_total.saturating_add(meta_size);
            limits.check_metadata(meta_size).map_err(fail)?;
            limits.check_metadata(meta_total).map_err(fail)?;
            if meta_size > 16 << 20 {
                // A large meta file must at least start like a JSON object before it is
                // read whole (the zeros of a sparse file do not).
                let mut head = [0u8; 256];
                files.read_exact_at(meta, 0, &mut head).map_err(fail)?;
                if head.iter().find(|b| !b.is_ascii_whitespace()).is_some_and(|&b| b != b'{') {
                    return Err(fail(
                        Error::corrupt("the meta file does not start with a JSON object")
                            .with_offset(0),
                    ));
                }
            }
            let bytes = files.read_to_vec(meta, 0, meta_size).map_err(fail)?;
            let text = String::from_utf8(bytes).map_err(|e| {
                let at = e.utf8_error().valid_up_to();
                fail(
                    Error::corrupt(format!(
                        "the meta file is not UTF-8 text (bad byte at offset {at}; the \
                         reference fails with UnicodeDecodeError)"
                    ))
                    .with_offset(at as u64),
                )
            })?;
            let entries = parse_index(&text, limits.max_nesting).map_err(fail)?;
            let chunk = layout.chunks.len() as u32;
            let first_video = layout.videos.len() as u64;
            for e in entries {
                let id: Arc<str> = Arc::from(e.id.to_str_lossy());
                if e.id.as_str().is_none() {
                    lossy_ids += 1;
                }
                let bytes = e.frames.iter().fold(0u64, |a, f| a.saturating_add(f.length));
                let index = layout.videos.len() as u64;
                match layout.by_id.get(&id) {
                    Some(&first) => {
                        let first_chunk = layout.videos[first as usize].chunk as usize;
                        duplicates
                            .entry(id.clone())
                            .or_insert_with(|| vec![layout.chunks[first_chunk].number])
                            .push(number);
                    }
                    None => {
                        layout.by_id.insert(id.clone(), index);
                    }
                }
                layout.videos.push(Video {
                    id,
                    chunk,
                    first_frame: layout.frames.len(),
                    frame_count: e.frames.len(),
                    meta_span: e.meta_span,
                    meta_count: e.meta_count,
                    bytes,
                });
                layout.frames.extend_from_slice(&e.frames);
                limits.check_records(layout.videos.len() as u64).map_err(fail)?;
            }
            layout.chunks.push(GulpChunkInfo {
                number,
                data_path: files.file_path(data).to_path_buf(),
                meta_path: meta_path.clone(),
                data_size: files.file_len(data),
                meta_size,
                first_video,
                video_count: layout.videos.len() as u64 - first_video,
            });
            layout.meta_texts.push(text);
            layout.info.paths.push(files.file_path(data).to_path_buf());
            layout.info.paths.push(meta_path);
        }
        // Report duplicates in the order their ids were first seen.
        let mut dups: Vec<(u64, DuplicateId)> = duplicates
            .into_iter()
            .map(|(id, chunks)| {
                (
                    layout.by_id.get(&id).copied().unwrap_or(0),
                    DuplicateId { id: id.to_string(), chunks },
                )
            })
            .collect();
        dups.sort_by_key(|(first, _)| *first);
        layout.duplicates = dups.into_iter().map(|(_, d)| d).collect();
        if !layout.duplicates.is_empty() {
            let shown: Vec<&str> =
                layout.duplicates.iter().take(5).map(|d| d.id.as_str()).collect();
            layout.info.warnings.push(Warning {
                kind: WarningKind::ReferenceQuirk,
                path: None,
                message: format!(
                    "{} id(s) occur in more than one chunk (e.g. {shown:?}); the reference \
                     refuses to open this directory (\"Duplicate id detected\"). reel reads every \
                     video and looks an id up in the first chunk that has it",
                    layout.duplicates.len()
                ),
            });
        }
        if lossy_ids > 0 {
            layout.info.warnings.push(Warning {
                kind: WarningKind::ReferenceQuirk,
                path: None,
                message: format!(
                    "{lossy_ids} id(s) contain unpaired UTF-16 surrogates (Python's \
                     surrogateescape); they are shown with U+FFFD in their place"
                ),
            });
        }
        layout.info.version = Some("gulpio2 0.0.4 (JSON .gmeta)".into());
        let frames_kind =
            if decode == FrameDecode::Raw { "jpeg bytes list" } else { "uint8 array list" };
        layout.info.schema = Some(vec![
            FieldSpec { name: ID_FIELD.into(), kind: "str".into() },
            FieldSpec { name: META_FIELD.into(), kind: "json".into() },
            FieldSpec { name: FRAMES_FIELD.into(), kind: frames_kind.into() },
        ]);
        Ok(layout)
    }

    /// The chunks in reading order.
    pub fn chunks(&self) -> &[GulpChunkInfo] {
        &self.chunks
    }

    /// The id of video `index`.
    pub fn id(&self, index: u64) -> Option<&str> {
        self.video(index).map(|v| &*v.id)
    }

    /// The record index of the video with `id` (its first chunk's, if it occurs in several).
    pub fn index_of(&self, id: &str) -> Option<u64> {
        self.by_id.get(id).copied()
    }

    /// The chunk holding video `index` (the reference's `chunk_lookup`).
    pub fn chunk_of(&self, index: u64) -> Option<&GulpChunkInfo> {
        self.chunks.get(self.video(index)?.chunk as usize)
    }

    /// The frame table of video `index`.
    pub fn frame_info(&self, index: u64) -> Option<&[FrameInfo]> {
        let v = self.video(index)?;
        self.frames.get(v.first_frame..v.first_frame + v.frame_count)
    }

    /// The `meta_data` list of video `index` as stored (one element per append; readers of
    /// the reference only see the first).
    pub fn meta_data(&self, index: u64) -> Result<Vec<JsonValue>> {
        let v = self.video(index).ok_or_else(|| Error::out_of_range(index, self.len()))?;
        match self.parse_meta(v)? {
            JsonValue::Array(items) => Ok(items),
            _ => Err(Error::corrupt("meta_data is not a list")),
        }
    }

    /// Ids that occur in more than one chunk (the reference refuses such directories).
    pub fn duplicate_ids(&self) -> &[DuplicateId] {
        &self.duplicates
    }

    /// How strictly frames are judged when decoded.
    pub fn strictness(&self) -> JpegStrictness {
        self.strictness
    }

    /// What frames decode to in records read through [`Layout::decode`].
    pub fn frame_decode(&self) -> FrameDecode {
        self.decode
    }

    fn video(&self, index: u64) -> Option<&Video> {
        self.videos.get(usize::try_from(index).ok()?)
    }

    fn parse_meta(&self, v: &Video) -> Result<JsonValue> {
        let text = self
            .meta_texts
            .get(v.chunk as usize)
            .and_then(|t| t.get(v.meta_span.clone()))
            .ok_or_else(|| Error::corrupt("metadata location lost"))?;
        parse_json(text, self.max_depth)
    }

    /// Plans the frames at `positions` (all frames when `None`) of video `index`: each
    /// frame's whole padded record, so that consecutive frames are adjacent in the file and
    /// in the buffer and the backend fetches them in one read.
    pub(crate) fn plan_frames(
        &self,
        index: u64,
        positions: Option<&[usize]>,
        plan: &mut Plan<'_>,
    ) -> Result<()> {
        let v = self.video(index).ok_or_else(|| Error::out_of_range(index, self.len()))?;
        let chunk = &self.chunks[v.chunk as usize];
        if v.bytes > chunk.data_size {
            // Frames of one video never overlap, so more bytes than the data file holds
            // means a damaged index (and would make one read allocate more than the file).
            return Err(Error::corrupt(format!(
                "the video's {} frames claim {} bytes, more than the {} bytes of its data file",
                v.frame_count, v.bytes, chunk.data_size
            ))
            .with_path(&chunk.data_path));
        }
        let file = 2 * v.chunk;
        let frames = &self.frames[v.first_frame..v.first_frame + v.frame_count];
        match positions {
            None => frames.iter().for_each(|f| plan.push(file, f.loc, f.length)),
            Some(list) => {
                for &k in list {
                    let f = frames.get(k).ok_or_else(|| {
                        Error::new(reel_core::ErrorKind::OutOfRange, format!("no frame {k}"))
                    })?;
                    plan.push(file, f.loc, f.length);
                }
            }
        }
        Ok(())
    }

    /// Builds the record of video `index` from the planned frame records.
    pub(crate) fn decode_frames(
        &self,
        index: u64,
        positions: Option<&[usize]>,
        mode: FrameDecode,
        raw: &[Span],
        out: &mut RecordOut<'_>,
    ) -> Result<()> {
        let v = self.video(index).ok_or_else(|| Error::out_of_range(index, self.len()))?;
        let frames = &self.frames[v.first_frame..v.first_frame + v.frame_count];
        let wanted = positions.map_or(frames.len(), <[usize]>::len);
        if raw.len() != wanted {
            return Err(Error::corrupt("frame records and plan disagree"));
        }
        let mut values = Vec::with_capacity(raw.len());
        for (k, span) in raw.iter().enumerate() {
            let position = positions.map_or(Some(k), |p| p.get(k).copied());
            let f = position
                .and_then(|p| frames.get(p))
                .copied()
                .ok_or_else(|| Error::corrupt("frame records and plan disagree"))?;
            let position = position.unwrap_or(k);
            let jpeg = span
                .sub(0, f.jpeg_len() as usize)
                .ok_or_else(|| Error::corrupt("frame record shorter than its JPEG"))?;
            let value = match mode {
                FrameDecode::Raw => Value::Bytes(jpeg),
                _ => decode_into_record(out, jpeg, mode, self.strictness, self.max_decoded_bytes)
                    .map_err(|e| {
                    Error::new(
                        e.kind(),
                        format!("video {:?}, frame {position}: {}", &*v.id, e.message()),
                    )
                    .with_offset(f.loc)
                })?,
            };
            values.push(value);
        }
        let id = out.append_str(&v.id);
        let (meta, extra) = match self.parse_meta(v)? {
            JsonValue::Array(items) if v.meta_count == items.len() => {
                let mut items = items.iter();
                let meta = match items.next() {
                    Some(first) => first.to_value(out)?,
                    None => Value::Null,
                };
                let extra: Vec<Value> = items.map(|m| m.to_value(out)).collect::<Result<_>>()?;
                (meta, extra)
            }
            _ => return Err(Error::corrupt("meta_data changed since the directory was opened")),
        };
        let [id_name, meta_name, frames_name, extra_name] = &self.names;
        out.push_named(id_name, id);
        out.push_named(meta_name, meta);
        out.push_named(frames_name, Value::List(values));
        if !extra.is_empty() {
            out.push_named(extra_name, Value::List(extra));
        }
        Ok(())
    }
}

/// The chunk number shared by data file `data` and meta file `meta`, from their names.
fn pair_number(files: &dyn ReadAt, data: u32, meta: u32) -> Result<u64> {
    let name = |f: u32| {
        files.file_path(f).file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
    };
    let (d, m) = (name(data), name(meta));
    match (chunk_number(&d), chunk_number(&m)) {
        (Some(a), Some(b)) if a == b => Ok(a),
        _ => Err(Error::invalid_input(format!(
            "{d:?} and {m:?} are not the data and meta files of one chunk"
        ))),
    }
}

impl Layout for GulpLayout {
    fn info(&self) -> &SourceInfo {
        &self.info
    }

    fn len(&self) -> u64 {
        self.videos.len() as u64
    }

    fn plan(&self, index: u64, plan: &mut Plan<'_>) -> Result<()> {
        self.plan_frames(index, None, plan)
    }

    /// A video's entry, frame table, id and metadata text are four places in memory that a
    /// random read meets; all are touched.
    fn prefetch(&self, index: u64) {
        let Some(v) = self.video(index) else { return };
        reel_core::prefetch_read(&v.bytes);
        if let Some(frame) = self.frames.get(v.first_frame) {
            reel_core::prefetch_read(&frame.loc);
        }
        if let Some(b) = v.id.as_bytes().first() {
            reel_core::prefetch_read(b);
        }
        let meta = self.meta_texts.get(v.chunk as usize).map(String::as_bytes);
        if let Some(b) = meta.and_then(|m| m.get(v.meta_span.start)) {
            reel_core::prefetch_read(b);
        }
    }

    fn decode(&self, index: u64, raw: &[Span], out: &mut RecordOut<'_>) -> Result<()> {
        self.decode_frames(index, None, self.decode, raw, out)
    }
}
