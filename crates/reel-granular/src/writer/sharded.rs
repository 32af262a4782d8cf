//! Writing sharded datasets: a root of `000000/`, `000001/`, … shard folders, each a
//! complete dataset (the reference's `ShardedDatasetWriter`).

use std::fs;
use std::path::{Path, PathBuf};

use reel_core::staged::publish_dir;
use reel_core::{
    Error, ErrorKind, RecordRef, RecordSink, Result, SealedFile, SinkSummary, UnfinishedGuard,
};

use super::claim::{self, Claim};
use super::dataset::{GranularWriter, GranularWriterOptions, PARTIAL_SPEC, staging_path};
use super::refs_writer::{BagsWriter, RefsFlavor};
use crate::FORMAT;
use crate::files::shard_name;
use crate::spec::GranularSpec;

/// The layout of each shard.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ShardFormat {
    /// The current layout ([`GranularWriter`]); resumable.
    Indexed,
    /// A refs-based layout ([`BagsWriter`]).
    Refs(RefsFlavor),
}

impl ShardFormat {
    /// The layout a Granular source's [`SourceInfo::version`](reel_core::SourceInfo) names
    /// (for writing a dataset *like* that source, as `verify --salvage` does); `None` when
    /// the text names none.
    pub fn from_version(version: &str) -> Option<ShardFormat> {
        if version.contains("single-file bags v1") {
            Some(ShardFormat::Refs(RefsFlavor::Bags051))
        } else if version.contains("single-file bags v2") {
            Some(ShardFormat::Refs(RefsFlavor::Granular021))
        } else if version.contains(".idx") {
            Some(ShardFormat::Indexed)
        } else {
            None
        }
    }
}

/// How a sharded dataset is split into shards.
#[derive(Clone, Debug)]
pub struct ShardedWriterOptions {
    /// Datapoints per shard; `None` writes a single, unbounded shard (unless
    /// `shard_bytes` bounds it).
    pub shard_len: Option<u64>,
    /// A new shard starts after the datapoint that takes the current one to this many bytes
    /// of records (`None`: no bound by size). With `shard_len` too, whichever comes first.
    pub shard_bytes: Option<u64>,
    /// Number of the first shard this writer writes.
    pub shard_start: u64,
    /// Distance between the shard numbers this writer writes (several writers can fill
    /// one root: writer k of n uses start k, step n). Needs `shard_len` when above 1, as
    /// does a start above 0.
    pub shard_step: u64,
    /// The layout of each shard.
    pub format: ShardFormat,
    /// Options of the shard writers.
    pub writer: GranularWriterOptions,
}

impl Default for ShardedWriterOptions {
    fn default() -> Self {
        ShardedWriterOptions {
            shard_len: None,
            shard_bytes: None,
            shard_start: 0,
            shard_step: 1,
            format: ShardFormat::Indexed,
            writer: GranularWriterOptions::default(),
        }
    }
}

impl ShardedWriterOptions {
    /// Datapoints per shard.
    pub fn shard_len(mut self, len: u64) -> Self {
        self.shard_len = Some(len);
        self
    }

    /// Bytes of records per shard (see [`shard_bytes`](Self::shard_bytes)).
    pub fn shard_bytes(mut self, bytes: u64) -> Self {
        self.shard_bytes = Some(bytes);
        self
    }

    /// Whether a shard of `len` datapoints and `bytes()` bytes of records is full (its size
    /// is only summed when the shards have one).
    fn full(&self, len: u64, bytes: impl FnOnce() -> u64) -> bool {
        self.shard_len.is_some_and(|n| len >= n) || self.shard_bytes.is_some_and(|b| bytes() >= b)
    }

    /// The first shard number and the step between shard numbers.
    pub fn shards(mut self, start: u64, step: u64) -> Self {
        self.shard_start = start;
        self.shard_step = step;
        self
    }

    /// The layout of each shard.
    pub fn format(mut self, format: ShardFormat) -> Self {
        self.format = format;
        self
    }
}

/// The writer of the shard being filled. The bags writer is boxed: it holds one bag
/// writer per key and is much larger than the indexed writer.
enum ShardSink {
    Indexed(GranularWriter),
    Refs(Box<BagsWriter>),
}

impl ShardSink {
    fn append(&mut self, record: RecordRef<'_>) -> Result<u64> {
        match self {
            ShardSink::Indexed(w) => w.append(record),
            ShardSink::Refs(w) => w.append(record),
        }
    }

    fn len(&self) -> u64 {
        match self {
            ShardSink::Indexed(w) => w.len(),
            ShardSink::Refs(w) => w.len(),
        }
    }

    /// Bytes of records written so far.
    fn size(&self) -> u64 {
        match self {
            ShardSink::Indexed(w) => w.size(),
            ShardSink::Refs(w) => w.size(),
        }
    }

    fn finish(&mut self) -> Result<SinkSummary> {
        match self {
            ShardSink::Indexed(w) => w.finish(),
            ShardSink::Refs(w) => w.finish(),
        }
    }
}

/// Writes a sharded dataset: shard `shard_start` first, a new shard every `shard_len`
/// datapoints (or `shard_bytes` bytes), shard numbers advancing by `shard_step`.
///
/// Each shard is written by a shard writer that stages it and publishes it complete (a
/// [`GranularWriter`] or [`BagsWriter`]). When the root does not exist yet, the writer
/// creates it under a staging name too and moves it into place on
/// [`finish`](Self::finish), so an unfinished sharded dataset never appears under its
/// name; when the root exists (several writers filling one root), each shard appears when
/// it is complete. [`resume`](Self::resume) continues after a crash (current layout only).
pub struct ShardedWriter {
    root: PathBuf,
    base: PathBuf,
    root_staged: bool,
    spec: GranularSpec,
    options: ShardedWriterOptions,
    next_shard: u64,
    current: Option<ShardSink>,
    done_len: u64,
    done_bytes: u64,
    done_shards: u64,
    state: State,
    /// Files of shards closed before `finish` in a root this writer stages, not yet taken
    /// by [`RecordSink::take_sealed`].
    sealed: Vec<SealedFile>,
    unfinished: UnfinishedGuard,
    /// The claim on `base` until finished (see [`claim`](super::claim)), so that an
    /// interrupted write of the root is told from this one.
    claim: Option<Claim>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Open,
    Broken,
    Finished,
    Suspended,
}

impl ShardedWriter {
    /// Starts writing shards of `spec` under `root`.
    pub fn create(
        root: impl AsRef<Path>,
        spec: &GranularSpec,
        options: &ShardedWriterOptions,
    ) -> Result<Self> {
        check_options(options)?;
        let root = root.as_ref().to_path_buf();
        let (base, root_staged) = if root.exists() {
            if !root.is_dir() {
                return Err(Error::invalid_input("the sharded root is not a directory")
                    .with_path(&root)
                    .with_format(FORMAT));
            }
            (root.clone(), false)
        } else {
            let staging = staging_path(&root)?;
            if staging.exists() {
                let replace = options.writer.replace_interrupted;
                claim::clear_interrupted(&staging, &root, replace, "ShardedWriter::resume")?;
            }
            if let Some(parent) = root.parent().filter(|p| !p.as_os_str().is_empty()) {
                fs::create_dir_all(parent)
                    .map_err(|e| Error::io(e, "cannot create directory").with_path(parent))?;
            }
            fs::create_dir(&staging)
                .map_err(|e| Error::io(e, "cannot create staging directory").with_path(&staging))?;
            (staging, true)
        };
        let Some(claimed) = claim::claim(&base)? else {
            return Err(claim::busy(&base, &root));
        };
        Ok(ShardedWriter {
            claim: Some(claimed),
            unfinished: UnfinishedGuard::new(FORMAT, &root),
            root,
            base,
            root_staged,
            spec: spec.sorted(),
            next_shard: options.shard_start,
            options: options.clone(),
            current: None,
            done_len: 0,
            done_bytes: 0,
            done_shards: 0,
            state: State::Open,
            sealed: Vec::new(),
        })
    }

    /// Continues the sharded dataset at `root` (or its interrupted staging root) written
    /// in the current layout: complete shards of this writer's sequence are counted, a
    /// shard that is not full (or was interrupted) is resumed, and new shards follow.
    pub fn resume(
        root: impl AsRef<Path>,
        spec: &GranularSpec,
        options: &ShardedWriterOptions,
    ) -> Result<Self> {
        check_options(options)?;
        if options.format != ShardFormat::Indexed {
            return Err(Error::unsupported(
                "only shards in the current layout can be resumed (refs-based bags are \
                 unreadable until finished)",
            )
            .with_format(FORMAT));
        }
        let root = root.as_ref().to_path_buf();
        let staging = staging_path(&root)?;
        let (base, root_staged) = if staging.is_dir() {
            (staging, true)
        } else if root.is_dir() {
            (root.clone(), false)
        } else {
            return Err(Error::new(ErrorKind::NotFound, "no sharded dataset to resume")
                .with_path(&root)
                .with_format(FORMAT));
        };
        let Some(claimed) = claim::claim(&base)? else {
            return Err(claim::busy(&base, &root));
        };
        let mut quiet = UnfinishedGuard::new(FORMAT, &root);
        quiet.finished(); // armed once the resume succeeded: a failed resume loses nothing
        let mut w = ShardedWriter {
            claim: Some(claimed),
            unfinished: quiet,
            root,
            base,
            root_staged,
            spec: spec.sorted(),
            next_shard: options.shard_start,
            options: options.clone(),
            current: None,
            done_len: 0,
            done_bytes: 0,
            done_shards: 0,
            // Until resumed, a failure must not delete what is being rescued.
            state: State::Suspended,
            sealed: Vec::new(),
        };
        loop {
            let dir = w.base.join(shard_name(w.next_shard));
            let partial = staging_path(&dir)?.join(PARTIAL_SPEC).is_file();
            if !partial && !dir.join("spec.json").is_file() {
                break;
            }
            let shard = GranularWriter::resume_with(&dir, &w.options.writer)?;
            if !shard.spec().same_mapping(&w.spec) {
                return Err(Error::schema(format!(
                    "shard {} has another spec than the one given",
                    dir.display()
                ))
                .with_format(FORMAT));
            }
            let full = w.options.full(shard.len(), || shard.size());
            if partial || !full {
                let mut shard = shard;
                shard.unfinished.finished(); // this writer warns for the whole dataset
                w.current = Some(ShardSink::Indexed(shard));
                break;
            }
            w.done_len += shard.len();
            w.done_bytes += shard.size();
            w.done_shards += 1;
            w.next_shard += w.options.shard_step;
            // A complete shard was opened only to be counted: leave it untouched.
            shard.suspend()?;
        }
        w.state = State::Open;
        w.unfinished = UnfinishedGuard::new(FORMAT, &w.root);
        Ok(w)
    }

    /// Datapoints written by this writer (and found by `resume`); every reel writer has
    /// this counter.
    pub fn records(&self) -> u64 {
        self.done_len + self.current.as_ref().map_or(0, ShardSink::len)
    }

    /// [`records`](Self::records), as the reference's `len(writer)`.
    pub fn len(&self) -> u64 {
        self.records()
    }

    /// Whether no datapoint was written.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Shards written (the current one included).
    pub fn shards(&self) -> u64 {
        self.done_shards + u64::from(self.current.is_some())
    }

    /// The spec, keys sorted.
    pub fn spec(&self) -> &GranularSpec {
        &self.spec
    }

    fn check_open(&self) -> Result<()> {
        match self.state {
            State::Open => Ok(()),
            State::Broken => {
                Err(Error::new(ErrorKind::Io, "an earlier write failed").with_format(FORMAT))
            }
            _ => Err(Error::new(ErrorKind::Closed, "the writer is finished").with_format(FORMAT)),
        }
    }

    /// Appends a datapoint and returns the number of datapoints written so far minus one
    /// (its global index when this writer writes every shard). `&record` and
    /// `record.view()` both work.
    pub fn append<'a>(&mut self, record: impl Into<RecordRef<'a>>) -> Result<u64> {
        let index = self.records();
        self.append_inner(record.into()).map_err(|e| e.with_format(FORMAT).with_record(index))
    }

    fn append_inner(&mut self, record: RecordRef<'_>) -> Result<u64> {
        self.check_open()?;
        if self.current.is_none() {
            let dir = self.base.join(shard_name(self.next_shard));
            let sink = match self.options.format {
                ShardFormat::Indexed => {
                    let mut w =
                        GranularWriter::create_with(&dir, &self.spec, &self.options.writer)?;
                    w.unfinished.finished(); // this writer warns for the whole dataset
                    ShardSink::Indexed(w)
                }
                ShardFormat::Refs(flavor) => {
                    let mut w = BagsWriter::create_with(
                        &dir,
                        &self.spec,
                        flavor,
                        &self.options.writer.codecs,
                        self.options.writer.encode,
                    )?;
                    w.unfinished.finished(); // this writer warns for the whole dataset
                    ShardSink::Refs(Box::new(w))
                }
            };
            self.current = Some(sink);
        }
        let Some(current) = self.current.as_mut() else {
            return Err(Error::new(ErrorKind::Closed, "no open shard").with_format(FORMAT));
        };
        current.append(record)?;
        if self.options.full(current.len(), || current.size()) {
            let dir = self.base.join(shard_name(self.next_shard));
            self.close_shard()?;
            if self.root_staged {
                // The shard is complete in a root nobody else sees until finish: its files
                // are sealed (in the one the writer shares with others, they are published).
                self.seal_shard(&dir)?;
            }
        }
        Ok(self.len() - 1)
    }

    /// Offers the files of the closed shard `dir` to [`RecordSink::take_sealed`], named
    /// `<shard>/<file>`.
    fn seal_shard(&mut self, dir: &Path) -> Result<()> {
        let shard = dir.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_string();
        let listed = fs::read_dir(dir)
            .map_err(|e| Error::io(e, "cannot list a finished shard").with_path(dir))?;
        let mut files = Vec::new();
        for entry in listed {
            let entry =
                entry.map_err(|e| Error::io(e, "cannot list a finished shard").with_path(dir))?;
            let is_file = entry.file_type().is_ok_and(|t| t.is_file());
            if let (true, Some(name)) = (is_file, entry.file_name().to_str()) {
                files.push(SealedFile { path: entry.path(), name: format!("{shard}/{name}") });
            }
        }
        files.sort_by(|a, b| a.name.cmp(&b.name));
        self.sealed.extend(files);
        Ok(())
    }

    fn close_shard(&mut self) -> Result<()> {
        if let Some(mut shard) = self.current.take() {
            match shard.finish() {
                Ok(summary) => {
                    self.done_len += summary.records;
                    self.done_bytes += summary.bytes;
                    self.done_shards += 1;
                    self.next_shard += self.options.shard_step;
                }
                Err(e) => {
                    self.state = State::Broken;
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    /// Finishes the current shard and, when the root was created by this writer, moves
    /// the root into place.
    pub fn finish(&mut self) -> Result<SinkSummary> {
        self.check_open()?;
        self.unfinished.finished();
        self.close_shard()?;
        self.sealed.clear();
        if self.root_staged {
            let r = publish_dir(&self.base, &self.root);
            if let Err(e) = r {
                self.state = State::Broken;
                return Err(e);
            }
        }
        self.state = State::Finished;
        self.claim = None; // finished: anyone may append to it now
        Ok(SinkSummary {
            records: self.done_len,
            bytes: self.done_bytes,
            paths: vec![self.root.clone()],
        })
    }

    /// Flushes and keeps what was written for [`resume`](Self::resume) (current layout only).
    pub fn suspend(mut self) -> Result<()> {
        self.check_open()?;
        self.unfinished.finished();
        self.state = State::Suspended;
        match self.current.take() {
            Some(ShardSink::Indexed(w)) => w.suspend(),
            Some(ShardSink::Refs(_)) => Err(Error::unsupported(
                "a refs-based shard cannot be suspended (its tables are written on finish); \
                 its datapoints are lost",
            )
            .with_format(FORMAT)),
            None => Ok(()),
        }
    }
}

impl Drop for ShardedWriter {
    fn drop(&mut self) {
        // The current shard's writer removes its own staging directory.
        self.current = None;
        if self.root_staged && self.state == State::Open {
            let _ = fs::remove_dir_all(&self.base);
        }
    }
}

impl RecordSink for ShardedWriter {
    fn append_ref(&mut self, record: RecordRef<'_>) -> Result<u64> {
        ShardedWriter::append(self, record)
    }

    fn records(&self) -> u64 {
        ShardedWriter::records(self)
    }

    fn take_sealed(&mut self) -> Vec<SealedFile> {
        std::mem::take(&mut self.sealed)
    }

    fn finish(&mut self) -> Result<SinkSummary> {
        ShardedWriter::finish(self)
    }
}

fn check_options(o: &ShardedWriterOptions) -> Result<()> {
    if o.shard_step == 0 {
        return Err(Error::invalid_input("the shard step must be at least 1").with_format(FORMAT));
    }
    if o.shard_len == Some(0) {
        return Err(
            Error::invalid_input("a shard must hold at least one datapoint").with_format(FORMAT)
        );
    }
    if o.shard_bytes == Some(0) {
        return Err(Error::invalid_input("a shard size must be above zero").with_format(FORMAT));
    }
    if (o.shard_start > 0 || o.shard_step > 1) && o.shard_len.is_none() {
        return Err(Error::invalid_input(
            "a shard start above 0 or a step above 1 needs a shard length",
        )
        .with_format(FORMAT));
    }
    Ok(())
}
