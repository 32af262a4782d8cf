//! Checking a gulp directory: the reference's `gulp2_sanity_check`, done right, and more.
//!
//! The reference runs four checks and has three bugs in them (see the spec): an empty
//! chunk (a 0-byte data file with `{}` as metadata, which its own writer produces) is
//! reported as broken by the empty-data-file check and crashes the size check, the size
//! check compares the file size with the end of the *last frame of the last id*, which is
//! wrong after an append that extended an earlier id, and the duplicate-id check cannot be
//! reached because opening the directory already fails on duplicates. Here the size check
//! uses the largest frame end, empty chunks pass, duplicates are listed per id, and every
//! frame is checked against its data file: bounds, overlaps, padding and JPEG markers
//! (optionally a full decode).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use reel_core::{Backend, Limits, ReadAt, Result, Store, StoreRef};

use crate::discovery::{self, chunk_number};
use crate::jpeg::{FrameDecode, JpegStrictness, decode_jpeg_with};
use crate::meta::{IndexEntry, parse_index};

/// How serious an issue is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// Worth knowing; nothing is wrong.
    Info,
    /// Unusual, but every video still reads.
    Warning,
    /// Some videos (or the whole directory) cannot be read correctly.
    Error,
}

impl Severity {
    /// `"info"`, `"warning"` or `"error"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

/// What an issue is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SanityIssueKind {
    /// Chunk files that do not pair up (a data file without meta file or the reverse, a
    /// name without a number, two chunks with one number): neither reel nor the reference
    /// opens the directory.
    ChunkFiles,
    /// A meta file of 0 bytes (the reference's first check).
    EmptyMetaFile,
    /// A data file of 0 bytes whose meta file lists frames (the reference's second check,
    /// without its false alarm on empty chunks).
    EmptyDataFile,
    /// A meta file that is not UTF-8, not JSON, or not shaped like a `.gmeta`.
    UnreadableMeta,
    /// A data file shorter than the frames it indexes (the reference's third check).
    DataTruncated,
    /// Bytes after the last indexed frame, e.g. from an interrupted append.
    TrailingData,
    /// A frame that lies partly or wholly outside its data file.
    FrameOutOfBounds,
    /// Frames that share bytes.
    OverlappingFrames,
    /// Padding the reference never writes (more than 3 bytes, or a record length that is
    /// not a multiple of 4).
    UnusualPadding,
    /// Padding bytes that are not zero.
    NonZeroPadding,
    /// A frame that does not start with the JPEG start-of-image marker, does not end with
    /// the end-of-image marker, or (with decoding on) does not decode.
    BadJpeg,
    /// An id in more than one chunk (the reference's fourth check): the reference cannot
    /// open the directory.
    DuplicateId,
    /// A video without frames (the reference's ingestor skips these; `append` keeps them).
    NoFrames,
    /// A video whose `meta_data` is empty: the reference fails to read it (IndexError).
    NoMetaData,
}

impl SanityIssueKind {
    /// A short stable name for reports and `--json` output (`"data-truncated"`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            SanityIssueKind::ChunkFiles => "chunk-files",
            SanityIssueKind::EmptyMetaFile => "empty-meta-file",
            SanityIssueKind::EmptyDataFile => "empty-data-file",
            SanityIssueKind::UnreadableMeta => "unreadable-meta",
            SanityIssueKind::DataTruncated => "data-truncated",
            SanityIssueKind::TrailingData => "trailing-data",
            SanityIssueKind::FrameOutOfBounds => "frame-out-of-bounds",
            SanityIssueKind::OverlappingFrames => "overlapping-frames",
            SanityIssueKind::UnusualPadding => "unusual-padding",
            SanityIssueKind::NonZeroPadding => "non-zero-padding",
            SanityIssueKind::BadJpeg => "bad-jpeg",
            SanityIssueKind::DuplicateId => "duplicate-id",
            SanityIssueKind::NoFrames => "no-frames",
            SanityIssueKind::NoMetaData => "no-meta-data",
        }
    }
}

/// One finding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SanityIssue {
    /// How serious it is.
    pub severity: Severity,
    /// What it is about.
    pub kind: SanityIssueKind,
    /// The chunk number, when it concerns one chunk.
    pub chunk: Option<u64>,
    /// The file concerned.
    pub path: Option<PathBuf>,
    /// The record index (reading order) of the video concerned.
    pub record: Option<u64>,
    /// The byte offset in [`path`](Self::path) concerned.
    pub offset: Option<u64>,
    /// The video id concerned.
    pub id: Option<String>,
    /// The frame position within the video.
    pub frame: Option<usize>,
    /// Plain-words description.
    pub message: String,
}

/// The result of [`sanity_check`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GulpSanityReport {
    /// The directory checked.
    pub dir: PathBuf,
    /// Chunks found (with both files).
    pub chunks: usize,
    /// Videos in the readable meta files.
    pub videos: u64,
    /// Frames in the readable meta files.
    pub frames: u64,
    /// Total size of the data files.
    pub data_bytes: u64,
    /// Everything found, in directory order.
    pub issues: Vec<SanityIssue>,
}

impl GulpSanityReport {
    /// Whether nothing of [`Severity::Error`] was found.
    pub fn is_ok(&self) -> bool {
        !self.issues.iter().any(|i| i.severity == Severity::Error)
    }

    /// The issues of at least `severity`.
    pub fn at_least(&self, severity: Severity) -> impl Iterator<Item = &SanityIssue> + '_ {
        self.issues.iter().filter(move |i| i.severity >= severity)
    }

    /// The issues of `kind`.
    pub fn of_kind(&self, kind: SanityIssueKind) -> impl Iterator<Item = &SanityIssue> + '_ {
        self.issues.iter().filter(move |i| i.kind == kind)
    }
}

/// Options for [`sanity_check_with`].
#[derive(Clone, Debug)]
pub struct SanityOptions {
    /// Where the directory is (default: the local file system).
    pub store: StoreRef,
    /// Limits for reading meta files and decoding frames.
    pub limits: Limits,
    /// Decode every frame (slow; finds damage inside the JPEG data).
    pub decode_frames: bool,
    /// How strictly decoded frames are judged (default: like the reference).
    pub strictness: JpegStrictness,
}

impl Default for SanityOptions {
    fn default() -> Self {
        SanityOptions {
            store: reel_core::local_store(),
            limits: Limits::default(),
            decode_frames: false,
            strictness: JpegStrictness::default(),
        }
    }
}

/// Issues of one kind reported per chunk before the rest are summarised.
const PER_KIND: usize = 20;

struct Collector {
    issues: Vec<SanityIssue>,
    counts: HashMap<(Option<u64>, SanityIssueKind), usize>,
}

impl Collector {
    fn push(&mut self, issue: SanityIssue) {
        let n = self.counts.entry((issue.chunk, issue.kind)).or_insert(0);
        *n += 1;
        if *n <= PER_KIND {
            self.issues.push(issue);
        }
    }

    fn finish(mut self) -> Vec<SanityIssue> {
        let mut more: Vec<_> = self.counts.into_iter().filter(|(_, n)| *n > PER_KIND).collect();
        more.sort_by_key(|((chunk, _), _)| *chunk);
        for ((chunk, kind), n) in more {
            let severity = self
                .issues
                .iter()
                .find(|i| i.chunk == chunk && i.kind == kind)
                .map_or(Severity::Warning, |i| i.severity);
            let message =
                format!("… and {} more issue(s) of this kind in this chunk", n - PER_KIND);
            self.issues.push(SanityIssue { chunk, ..issue(severity, kind, message) });
        }
        self.issues
    }
}

fn issue(severity: Severity, kind: SanityIssueKind, message: String) -> SanityIssue {
    SanityIssue {
        severity,
        kind,
        chunk: None,
        path: None,
        record: None,
        offset: None,
        id: None,
        frame: None,
        message,
    }
}

/// Checks the gulp directory `dir` with default options. Fails only when the directory
/// cannot be listed; everything else is reported in the [`GulpSanityReport`].
pub fn sanity_check(dir: impl AsRef<Path>) -> Result<GulpSanityReport> {
    sanity_check_with(dir, &SanityOptions::default())
}

/// Checks the gulp directory `dir`.
pub fn sanity_check_with(
    dir: impl AsRef<Path>,
    options: &SanityOptions,
) -> Result<GulpSanityReport> {
    let dir = dir.as_ref();
    let listing = discovery::list(&*options.store, dir)?;
    let mut out = Collector { issues: Vec::new(), counts: HashMap::new() };
    let mut report = GulpSanityReport { dir: dir.to_path_buf(), ..Default::default() };

    // Pair the files by number, reporting what does not pair, in the reference's order.
    let mut by_number: BTreeMap<u64, (Option<PathBuf>, Option<PathBuf>)> = BTreeMap::new();
    let mut order = Vec::new();
    for (is_data, list) in [(true, &listing.data), (false, &listing.meta)] {
        for (name, path) in list {
            let Some(n) = chunk_number(name) else {
                out.push(SanityIssue {
                    path: Some(path.clone()),
                    ..issue(
                        Severity::Error,
                        SanityIssueKind::ChunkFiles,
                        format!("{name:?} matches the chunk file pattern but has no chunk number"),
                    )
                });
                continue;
            };
            let slot = by_number.entry(n).or_default();
            let side = if is_data { &mut slot.0 } else { &mut slot.1 };
            if let Some(previous) = side.replace(path.clone()) {
                out.push(SanityIssue {
                    chunk: Some(n),
                    path: Some(path.clone()),
                    ..issue(
                        Severity::Error,
                        SanityIssueKind::ChunkFiles,
                        format!(
                            "two {} files are numbered {n}: {previous:?} and {path:?}",
                            if is_data { "data" } else { "meta" }
                        ),
                    )
                });
            }
            if is_data {
                order.push(n);
            }
        }
    }
    let mut chunks = Vec::new();
    for (&n, (data, meta)) in &by_number {
        match (data, meta) {
            (Some(_), Some(_)) => {}
            (Some(p), None) | (None, Some(p)) => out.push(SanityIssue {
                chunk: Some(n),
                path: Some(p.clone()),
                ..issue(
                    Severity::Error,
                    SanityIssueKind::ChunkFiles,
                    format!(
                        "chunk {n} has a {} file but no {} file",
                        if data.is_some() { "data" } else { "meta" },
                        if data.is_some() { "meta" } else { "data" }
                    ),
                )
            }),
            (None, None) => {}
        }
    }
    order.dedup();
    for n in order {
        if let Some((Some(data), Some(meta))) = by_number.get(&n) {
            chunks.push((n, data.clone(), meta.clone()));
        }
    }

    let mut owners: HashMap<String, Vec<u64>> = HashMap::new();
    let mut first_seen: Vec<String> = Vec::new();
    let mut first_record = 0u64;
    for (n, data, meta) in chunks {
        report.chunks += 1;
        let Some(entries) = read_meta(&*options.store, n, &meta, &options.limits, &mut out) else {
            continue;
        };
        for e in &entries {
            let id = e.id.to_str_lossy().into_owned();
            let list = owners.entry(id.clone()).or_default();
            if list.is_empty() {
                first_seen.push(id);
            }
            list.push(n);
        }
        check_chunk(n, &data, first_record, &entries, options, &mut out, &mut report);
        first_record += entries.len() as u64;
    }
    for id in first_seen {
        if let Some(chunks) = owners.get(&id).filter(|c| c.len() > 1) {
            out.push(SanityIssue {
                id: Some(id.clone()),
                ..issue(
                    Severity::Error,
                    SanityIssueKind::DuplicateId,
                    format!("the id {id:?} occurs in chunks {chunks:?}"),
                )
            });
        }
    }
    report.issues = out.finish();
    Ok(report)
}

fn read_meta(
    store: &dyn Store,
    n: u64,
    path: &Path,
    limits: &Limits,
    out: &mut Collector,
) -> Option<Vec<IndexEntry>> {
    let at = |severity, kind, message| SanityIssue {
        chunk: Some(n),
        path: Some(path.to_path_buf()),
        ..issue(severity, kind, message)
    };
    let len = match store.stat(path) {
        Ok(reel_core::paths::InputKind::File(len)) => len,
        Ok(reel_core::paths::InputKind::Dir) => {
            out.push(at(
                Severity::Error,
                SanityIssueKind::UnreadableMeta,
                "is a directory, not a file".into(),
            ));
            return None;
        }
        Err(e) => {
            out.push(at(Severity::Error, SanityIssueKind::UnreadableMeta, e.message().into()));
            return None;
        }
    };
    if len == 0 {
        out.push(at(
            Severity::Error,
            SanityIssueKind::EmptyMetaFile,
            "the meta file is empty".into(),
        ));
        return None;
    }
    if let Err(e) = limits.check_metadata(len) {
        out.push(at(Severity::Error, SanityIssueKind::UnreadableMeta, e.to_string()));
        return None;
    }
    let parsed = store
        .read_whole(path, limits.max_metadata_bytes, "the meta file")
        .map_err(|e| (e.message().to_string(), None))
        .and_then(|b| {
            String::from_utf8(b).map_err(|e| {
                let at = e.utf8_error().valid_up_to() as u64;
                (format!("not UTF-8 text (bad byte at offset {at})"), Some(at))
            })
        })
        .and_then(|t| {
            parse_index(&t, limits.max_nesting).map_err(|e| (e.message().to_string(), e.offset()))
        });
    match parsed {
        Ok(entries) => Some(entries),
        Err((message, offset)) => {
            out.push(SanityIssue {
                offset,
                ..at(Severity::Error, SanityIssueKind::UnreadableMeta, message)
            });
            None
        }
    }
}

fn check_chunk(
    n: u64,
    data: &Path,
    first_record: u64,
    entries: &[IndexEntry],
    options: &SanityOptions,
    out: &mut Collector,
    report: &mut GulpSanityReport,
) {
    let at = |severity, kind, message: String| SanityIssue {
        chunk: Some(n),
        path: Some(data.to_path_buf()),
        ..issue(severity, kind, message)
    };
    let files = match options.store.open_files(&[data.to_path_buf()], &Backend::Pread) {
        Ok(f) => f,
        Err(e) => {
            out.push(at(Severity::Error, SanityIssueKind::ChunkFiles, e.to_string()));
            return;
        }
    };
    let size = files.file_len(0);
    report.data_bytes += size;
    let frame_count: usize = entries.iter().map(|e| e.frames.len()).sum();
    report.videos += entries.len() as u64;
    report.frames += frame_count as u64;
    for (v, e) in entries.iter().enumerate() {
        let id = e.id.to_str_lossy();
        let record = Some(first_record + v as u64);
        if e.frames.is_empty() {
            out.push(SanityIssue {
                id: Some(id.to_string()),
                record,
                ..at(
                    Severity::Info,
                    SanityIssueKind::NoFrames,
                    format!("the video {id:?} has no frames"),
                )
            });
        }
        if e.meta_count == 0 {
            out.push(SanityIssue {
                id: Some(id.to_string()),
                record,
                ..at(
                    Severity::Warning,
                    SanityIssueKind::NoMetaData,
                    format!("the video {id:?} has an empty meta_data list (the reference cannot read it)"),
                )
            });
        }
    }
    if size == 0 && frame_count > 0 {
        out.push(at(
            Severity::Error,
            SanityIssueKind::EmptyDataFile,
            format!("the data file is empty but the meta file lists {frame_count} frames"),
        ));
        return;
    }
    let indexed_end = entries
        .iter()
        .flat_map(|e| &e.frames)
        .map(|f| f.end().unwrap_or(u64::MAX))
        .max()
        .unwrap_or(0);
    if indexed_end > size {
        out.push(at(
            Severity::Error,
            SanityIssueKind::DataTruncated,
            format!("the frames need {indexed_end} bytes but the data file has {size}"),
        ));
    } else if indexed_end < size {
        out.push(at(
            Severity::Warning,
            SanityIssueKind::TrailingData,
            format!(
                "{} bytes after the last indexed frame (at {indexed_end}) belong to no frame",
                size - indexed_end
            ),
        ));
    }

    let mut ranges: Vec<(u64, u64, usize, usize)> = Vec::with_capacity(frame_count);
    for (v, e) in entries.iter().enumerate() {
        let id = e.id.to_str_lossy();
        for (k, f) in e.frames.iter().enumerate() {
            let frame_issue = |severity, kind, message: String| SanityIssue {
                id: Some(id.to_string()),
                record: Some(first_record + v as u64),
                offset: Some(f.loc),
                frame: Some(k),
                ..at(severity, kind, message)
            };
            let end = f.end().unwrap_or(u64::MAX);
            if end > size {
                out.push(frame_issue(
                    Severity::Error,
                    SanityIssueKind::FrameOutOfBounds,
                    format!("frame {k} of {id:?} spans bytes {}..{end}, past the end of the data file ({size})", f.loc),
                ));
                continue;
            }
            ranges.push((f.loc, end, v, k));
            if f.pad > 3 || f.length % 4 != 0 {
                out.push(frame_issue(
                    Severity::Warning,
                    SanityIssueKind::UnusualPadding,
                    format!(
                        "frame {k} of {id:?} has {} padding bytes in a {}-byte record",
                        f.pad, f.length
                    ),
                ));
            }
            check_frame_bytes(&files, f, options, |kind, severity, message| {
                out.push(frame_issue(severity, kind, format!("frame {k} of {id:?}: {message}")))
            });
        }
    }
    ranges.sort_unstable();
    for w in ranges.windows(2) {
        let (a, b) = (w[0], w[1]);
        if b.0 < a.1 && a.1 > a.0 && b.1 > b.0 {
            let (ida, idb) = (entries[a.2].id.to_str_lossy(), entries[b.2].id.to_str_lossy());
            out.push(SanityIssue {
                id: Some(idb.to_string()),
                record: Some(first_record + b.2 as u64),
                offset: Some(b.0),
                frame: Some(b.3),
                ..at(
                    Severity::Error,
                    SanityIssueKind::OverlappingFrames,
                    format!(
                        "frame {} of {idb:?} overlaps frame {} of {ida:?} (bytes {}..{})",
                        b.3, a.3, b.0, a.1
                    ),
                )
            });
        }
    }
}

fn check_frame_bytes(
    files: &dyn ReadAt,
    f: &crate::meta::FrameInfo,
    options: &SanityOptions,
    mut report: impl FnMut(SanityIssueKind, Severity, String),
) {
    let jpeg_len = f.jpeg_len();
    if jpeg_len < 4 {
        report(
            SanityIssueKind::BadJpeg,
            Severity::Error,
            format!("{jpeg_len} bytes cannot be a JPEG"),
        );
        return;
    }
    let mut head = [0u8; 2];
    let mut tail = [0u8; 2 + 3];
    let tail_len = (2 + f.pad.min(3)) as usize;
    let tail_at = f.loc + jpeg_len - 2;
    let read = files
        .read_exact_at(0, f.loc, &mut head)
        .and_then(|()| files.read_exact_at(0, tail_at, &mut tail[..tail_len]));
    if let Err(e) = read {
        report(SanityIssueKind::FrameOutOfBounds, Severity::Error, e.to_string());
        return;
    }
    if head != [0xff, 0xd8] {
        report(
            SanityIssueKind::BadJpeg,
            Severity::Error,
            format!(
                "starts with {:02x} {:02x}, not the JPEG start-of-image marker ff d8",
                head[0], head[1]
            ),
        );
    } else if tail[..2] != [0xff, 0xd9] {
        report(
            SanityIssueKind::BadJpeg,
            Severity::Warning,
            format!(
                "ends with {:02x} {:02x}, not the JPEG end-of-image marker ff d9",
                tail[0], tail[1]
            ),
        );
    }
    // Padding beyond 3 bytes (already reported as unusual) is checked for its first 3.
    if tail[2..tail_len].iter().any(|&b| b != 0) {
        report(
            SanityIssueKind::NonZeroPadding,
            Severity::Warning,
            "padding bytes are not zero".into(),
        );
    }
    if options.decode_frames && head == [0xff, 0xd8] {
        let decoded = reel_core::check_within(f.loc, jpeg_len, files.file_len(0), "frame")
            .and_then(|()| Limits::check(jpeg_len, options.limits.max_record_bytes, "frame size"))
            .and_then(|()| files.read_to_vec(0, f.loc, jpeg_len))
            .and_then(|bytes| decode_jpeg_with(&bytes, FrameDecode::Auto, options.strictness));
        if let Err(e) = decoded {
            report(
                SanityIssueKind::BadJpeg,
                Severity::Error,
                format!("does not decode: {}", e.message()),
            );
        }
    }
}
