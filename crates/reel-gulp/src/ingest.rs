//! Ingestion: filling new chunks from an adapter on several threads, like gulpio2's
//! `GulpIngestor` + `ChunkWriter` + `AbstractDatasetAdapter`.

use std::collections::HashMap;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use reel_core::{Error, Result, StagedDir};

use crate::FORMAT;
use crate::discovery::{discover_chunks, next_chunk_number};
use crate::jpeg::{Frame, OwnedFrame};
use crate::json::JsonValue;
use crate::writer::{ChunkSummary, GulpChunkWriter, GulpWriteOptions, PreparedChunk, existing_ids};

/// One item an adapter yields (the reference's `{'id': …, 'meta': …, 'frames': […]}`).
#[derive(Clone, Debug, PartialEq)]
pub struct GulpItem {
    /// The id (the reference stores `str(id)`).
    pub id: String,
    /// The metadata, stored as the item's `meta_data` element.
    pub meta: JsonValue,
    /// The frames; an item without frames is skipped, as by the reference.
    pub frames: Vec<OwnedFrame>,
}

/// A source of items to ingest (the reference's `AbstractDatasetAdapter`).
///
/// `iter_data` is called once per chunk, from several threads at once, with the range of
/// item positions that chunk holds.
pub trait GulpAdapter: Sync {
    /// Number of items.
    fn len(&self) -> usize;

    /// Whether there are no items.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The items at positions `items`, in order (the reference's `iter_data(slice)`).
    fn iter_data(&self, items: Range<usize>) -> Box<dyn Iterator<Item = Result<GulpItem>> + '_>;
}

/// Consecutive ranges of `items_per_chunk` positions covering `num_items` items, the last
/// one shorter (the reference's `calculate_chunk_slices`). Both must be positive, as the
/// reference asserts.
pub fn calculate_chunk_slices(
    items_per_chunk: usize,
    num_items: usize,
) -> Result<Vec<Range<usize>>> {
    if items_per_chunk == 0 {
        return Err(Error::invalid_input("items per chunk must be at least 1").with_format(FORMAT));
    }
    if num_items == 0 {
        return Err(Error::invalid_input("the adapter has no items to ingest").with_format(FORMAT));
    }
    Ok((0..num_items)
        .step_by(items_per_chunk)
        .map(|start| start..num_items.min(start + items_per_chunk))
        .collect())
}

/// Progress of an ingestion, reported after each finished chunk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IngestProgress {
    /// Chunks finished so far.
    pub chunks_done: usize,
    /// Chunks in total.
    pub chunks_total: usize,
}

/// What an ingestion wrote.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IngestSummary {
    /// The new chunks, in number order.
    pub chunks: Vec<ChunkSummary>,
    /// Videos written.
    pub videos: u64,
    /// Frames written.
    pub frames: u64,
    /// Ids of items skipped because they had no frames (the reference prints "Failed to
    /// write video with id …; no frames" for each).
    pub skipped_ids: Vec<String>,
}

/// Ingests an adapter into new chunks of a gulp directory on `num_workers` threads (the
/// reference's `GulpIngestor(adapter, output_folder, videos_per_chunk, num_workers)()`).
///
/// Chunk `k` holds items `k·K .. (k+1)·K` and is numbered after the chunks already in the
/// directory. Differences from the reference:
///
/// * All or nothing: if an item or a write fails, no chunk appears. Into a new (or empty)
///   directory the whole directory is staged and renamed into place; into a directory with
///   chunks, the new chunk files are staged beside them and renamed at the end.
/// * An id in two chunks (of this run, or already in the directory) is an
///   [`InvalidInput`](reel_core::ErrorKind::InvalidInput) error before anything is
///   published, because the reference cannot open such a directory. An id given twice to
///   the same chunk is merged into one entry, as the reference's `append` does.
/// * Threads, not processes; frames are encoded in the worker threads.
pub struct GulpIngestor<'a, A: GulpAdapter + ?Sized> {
    adapter: &'a A,
    output: PathBuf,
    videos_per_chunk: usize,
    num_workers: usize,
    options: GulpWriteOptions,
    progress: Option<&'a (dyn Fn(IngestProgress) + Sync)>,
}

type ChunkResult = Result<(PreparedChunk, Vec<String>)>;

impl<'a, A: GulpAdapter + ?Sized> GulpIngestor<'a, A> {
    /// An ingestor of `adapter` into `output_folder`.
    pub fn new(
        adapter: &'a A,
        output_folder: impl AsRef<Path>,
        videos_per_chunk: usize,
        num_workers: usize,
    ) -> Self {
        GulpIngestor {
            adapter,
            output: output_folder.as_ref().to_path_buf(),
            videos_per_chunk,
            num_workers,
            options: GulpWriteOptions::default(),
            progress: None,
        }
    }

    /// Uses `options` for JPEG quality and checks (`videos_per_chunk` there is ignored).
    pub fn options(mut self, options: &GulpWriteOptions) -> Self {
        self.options = options.clone();
        self
    }

    /// Calls `report` after each finished chunk (from the worker threads).
    pub fn progress(mut self, report: &'a (dyn Fn(IngestProgress) + Sync)) -> Self {
        self.progress = Some(report);
        self
    }

    /// Runs the ingestion.
    pub fn run(&self) -> Result<IngestSummary> {
        if self.num_workers == 0 {
            return Err(Error::invalid_input("num_workers must be at least 1").with_format(FORMAT));
        }
        let slices = calculate_chunk_slices(self.videos_per_chunk, self.adapter.len())?;
        let fresh = match std::fs::read_dir(&self.output) {
            Ok(mut entries) => entries.next().is_none(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => true,
            Err(e) => {
                return Err(Error::io(e, "cannot list the output folder")
                    .with_path(&self.output)
                    .with_format(FORMAT));
            }
        };
        let (staged, first, existing) = if fresh {
            let staged = StagedDir::create(&self.output).map_err(|e| e.with_format(FORMAT))?;
            (Some(staged), 0, Default::default())
        } else {
            let chunks = discover_chunks(&self.output)?;
            let first = next_chunk_number(&chunks).map_err(|e| e.with_format(FORMAT))?;
            (None, first, existing_ids(&self.output, &self.options)?)
        };
        let write_dir = staged.as_ref().map_or(self.output.as_path(), |s| s.path());
        let results = self.write_chunks(&slices, write_dir, first, staged.is_some())?;

        // Refuse ids in two chunks before anything is published.
        let mut owner: HashMap<&str, u64> = HashMap::new();
        let mut clashes = Vec::new();
        for (prepared, _) in &results {
            for id in &prepared.ids {
                if existing.contains(id) {
                    clashes.push(format!("{id:?} (already in the directory)"));
                } else if let Some(other) = owner.insert(id, prepared.summary.number) {
                    clashes
                        .push(format!("{id:?} (chunks {other} and {})", prepared.summary.number));
                }
            }
        }
        if !clashes.is_empty() {
            clashes.truncate(10);
            return Err(Error::invalid_input(format!(
                "ids would occur in more than one chunk, which the reference cannot open; \
                 nothing was written: {}",
                clashes.join(", ")
            ))
            .with_path(&self.output)
            .with_format(FORMAT));
        }
        let mut summary = IngestSummary::default();
        for (prepared, skipped) in results {
            let chunk = prepared.commit()?;
            summary.videos += chunk.videos;
            summary.frames += chunk.frames_written;
            summary.chunks.push(chunk);
            summary.skipped_ids.extend(skipped);
        }
        if let Some(staged) = staged {
            staged.commit().map_err(|e| e.with_format(FORMAT))?;
        }
        Ok(summary)
    }

    /// Writes every chunk on the worker threads; returns them prepared, in order.
    fn write_chunks(
        &self,
        slices: &[Range<usize>],
        dir: &Path,
        first: u64,
        direct: bool,
    ) -> Result<Vec<(PreparedChunk, Vec<String>)>> {
        let next = AtomicUsize::new(0);
        let done = AtomicUsize::new(0);
        let stop = AtomicBool::new(false);
        let results: Mutex<Vec<Option<ChunkResult>>> =
            Mutex::new((0..slices.len()).map(|_| None).collect());
        std::thread::scope(|scope| {
            for _ in 0..self.num_workers.min(slices.len()) {
                scope.spawn(|| {
                    while !stop.load(Ordering::Relaxed) {
                        let k = next.fetch_add(1, Ordering::Relaxed);
                        let Some(range) = slices.get(k) else { break };
                        let number = first + k as u64;
                        let r = self.write_chunk(range.clone(), dir, number, direct);
                        if r.is_err() {
                            stop.store(true, Ordering::Relaxed);
                        }
                        if let Ok(mut all) = results.lock() {
                            all[k] = Some(r);
                        }
                        let chunks_done = done.fetch_add(1, Ordering::Relaxed) + 1;
                        if let Some(report) = self.progress {
                            report(IngestProgress { chunks_done, chunks_total: slices.len() });
                        }
                    }
                });
            }
        });
        let all = results.into_inner().map_err(|_| {
            Error::new(reel_core::ErrorKind::Io, "an ingestion worker panicked").with_format(FORMAT)
        })?;
        let mut out = Vec::with_capacity(all.len());
        let mut first_error = None;
        for r in all {
            match r {
                Some(Ok(p)) => out.push(p),
                Some(Err(e)) => {
                    first_error.get_or_insert(e);
                }
                // Not reached because another chunk failed first.
                None => {}
            }
        }
        match first_error {
            Some(e) => Err(e),
            None if out.len() == slices.len() => Ok(out),
            None => Err(Error::new(reel_core::ErrorKind::Io, "an ingestion worker stopped early")
                .with_format(FORMAT)),
        }
    }

    /// One chunk, the reference's `ChunkWriter.write_chunk`.
    fn write_chunk(
        &self,
        items: Range<usize>,
        dir: &Path,
        number: u64,
        direct: bool,
    ) -> ChunkResult {
        let mut chunk = if direct {
            GulpChunkWriter::create_direct(dir, &self.output, number, &self.options)?
        } else {
            GulpChunkWriter::create(dir, number, &self.options)?
        };
        let mut skipped = Vec::new();
        for item in self.adapter.iter_data(items) {
            let item = item?;
            if item.frames.is_empty() {
                skipped.push(item.id);
                continue;
            }
            let frames: Vec<Frame<'_>> = item.frames.iter().map(OwnedFrame::as_frame).collect();
            chunk.append(&item.id, item.meta, &frames)?;
        }
        Ok((chunk.prepare()?, skipped))
    }
}
