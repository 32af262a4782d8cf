//! Writing datasets in the current layout (granular 0.22+): `spec.json` and a resumable
//! two-file bag per key.

use std::fs;
use std::path::{Path, PathBuf};

use reel_core::staged::publish_dir;
use reel_core::{Error, ErrorKind, RecordRef, RecordSink, Result, SinkSummary, UnfinishedGuard};

use super::bag_writer::BagWriter;
use super::claim::{self, Claim};
use super::encode::{FieldEncoder, check_keys, field_encoders};
use crate::FORMAT;
use crate::codec::{CodecFamily, CodecSettings, CodecTable};
use crate::spec::GranularSpec;

/// The name `spec.json` has inside a staging directory, so that an unfinished dataset
/// cannot be opened as a valid one by reel or the reference.
pub const PARTIAL_SPEC: &str = "spec.json.reel-partial";

/// The staging directory of a dataset being written to `target`: a hidden sibling with a
/// fixed name, so a writer that crashed can be resumed.
pub fn staging_path(target: &Path) -> Result<PathBuf> {
    let name = target
        .file_name()
        .ok_or_else(|| Error::invalid_input("output path has no file name").with_path(target))?;
    let mut staged = std::ffi::OsString::from(".");
    staged.push(name);
    staged.push(".reel-partial");
    Ok(target.with_file_name(staged))
}

/// How a dataset writer encodes and buffers.
#[derive(Clone, Debug)]
pub struct GranularWriterOptions {
    /// Codecs for types the standard table does not know (or to replace standard ones).
    pub codecs: CodecTable,
    /// Encode field values with the type's codec (on by default). Off, every field must
    /// already be the record bytes (the reference's `encoders=None`), e.g. records read
    /// with [`GranularOptions::decode`](crate::GranularOptions::decode) off.
    pub encode: bool,
    /// Buffered bytes after which appended records are written out (1 MiB by default).
    /// Larger is not faster: measured on a 1 GB FFRecord → Granular conversion, 8 MiB
    /// writes made the kernel's copy out of the buffer 3–4× slower (1.3–2.2 s against
    /// 0.46–0.51 s at 1 MiB), because each write streams a buffer larger than the caches.
    pub flush_bytes: usize,
    /// Delete the staging directory an interrupted write left beside the target (its
    /// process ended before `finish`) and start again, where by default `create` refuses
    /// it and says how to resume it. A staging directory that a live writer holds is
    /// refused either way. The facade sets it from `CreateOptions::overwrite`.
    pub replace_interrupted: bool,
}

impl Default for GranularWriterOptions {
    fn default() -> Self {
        GranularWriterOptions {
            codecs: CodecTable::new(),
            encode: true,
            flush_bytes: 1 << 20,
            replace_interrupted: false,
        }
    }
}

impl GranularWriterOptions {
    /// Sets [`encode`](Self::encode).
    pub fn encode(mut self, on: bool) -> Self {
        self.encode = on;
        self
    }

    /// Sets [`codecs`](Self::codecs).
    pub fn codecs(mut self, codecs: CodecTable) -> Self {
        self.codecs = codecs;
        self
    }

    /// Sets [`replace_interrupted`](Self::replace_interrupted).
    pub fn replace_interrupted(mut self, on: bool) -> Self {
        self.replace_interrupted = on;
        self
    }
}

#[derive(Debug)]
enum Mode {
    /// A new dataset, written under its staging name and moved into place on finish.
    Staged { target: PathBuf },
    /// An existing dataset, appended to in place (the format's resumable design).
    InPlace,
}

/// Writes a dataset in the current layout, byte-identical to granular 0.24's
/// `DatasetWriter` for the same datapoints: `spec.json` (keys sorted, Python's JSON style)
/// and `<key>.bag` + `<key>.idx` per key.
///
/// # Staging and resuming
///
/// * [`create`](Self::create) writes a new dataset under a hidden staging directory
///   beside the target (`.<name>.reel-partial`), with the spec stored as
///   `spec.json.reel-partial`: nothing there opens as a dataset, for reel or the
///   reference. [`finish`](Self::finish) syncs every file, renames the spec to `spec.json`
///   and the directory to its final name.
/// * Records are written in flushes, data before index entries, so after a crash the
///   staging directory holds every flushed datapoint. [`resume`](Self::resume) picks it up:
///   it cuts torn index entries and unindexed data, brings the columns back to a common
///   length (a column can be ahead when the crash hit between columns) and appends from
///   there. [`len`](Self::len) says where to continue.
/// * Dropping an unfinished writer deletes its staging directory (the [`RecordSink`]
///   contract: an abandoned write leaves nothing). [`suspend`](Self::suspend) instead
///   flushes and keeps it for a later `resume`; so does a writer whose write or finish
///   failed (the directory still does not open as a dataset).
/// * [`resume`](Self::resume) on a finished dataset (or one written by the reference)
///   appends in place, as the reference does: each flush makes the new datapoints visible.
///   A torn index entry left by a crashed reference writer is repaired first (the
///   reference itself appends after it, misaligning the index).
///
/// Values the reference's `int` encoder rejects (128–255, negatives, …) are written in the
/// shortest signed form its decoder reads back; see [`IntSigning`](crate::IntSigning).
pub struct GranularWriter {
    mode: Mode,
    dir: PathBuf,
    spec: GranularSpec,
    fields: Vec<FieldEncoder>,
    bags: Vec<BagWriter>,
    flush_bytes: usize,
    scratch: Vec<Vec<u8>>,
    state: State,
    pub(crate) unfinished: UnfinishedGuard,
    /// The claim on `dir` until finished (see [`claim`](super::claim)): a write interrupted
    /// later is told from this one by whether its directory can still be claimed.
    claim: Option<Claim>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Open,
    Broken,
    Finished,
    Suspended,
}

impl GranularWriter {
    /// Starts a new dataset at `dir` (which must not exist, or be an empty directory).
    pub fn create(dir: impl AsRef<Path>, spec: &GranularSpec) -> Result<Self> {
        Self::create_with(dir, spec, &GranularWriterOptions::default())
    }

    /// [`create`](Self::create) with options.
    pub fn create_with(
        dir: impl AsRef<Path>,
        spec: &GranularSpec,
        options: &GranularWriterOptions,
    ) -> Result<Self> {
        let target = dir.as_ref().to_path_buf();
        let spec = check_spec(spec)?;
        let fields = encoders(&spec, options)?;
        if target.exists() && !is_empty_dir(&target) {
            return Err(Error::invalid_input(
                "the output already exists (use GranularWriter::resume to append to it)",
            )
            .with_path(&target)
            .with_format(FORMAT));
        }
        let staging = staging_path(&target)?;
        if staging.exists() {
            let how = "GranularWriter::resume";
            claim::clear_interrupted(&staging, &target, options.replace_interrupted, how)?;
        }
        if let Some(parent) = target.parent().filter(|p| !p.as_os_str().is_empty()) {
            fs::create_dir_all(parent)
                .map_err(|e| Error::io(e, "cannot create directory").with_path(parent))?;
        }
        fs::create_dir(&staging)
            .map_err(|e| Error::io(e, "cannot create staging directory").with_path(&staging))?;
        let Some(claimed) = claim::claim(&staging)? else {
            // Another writer made the same staging directory since the check above.
            return Err(claim::busy(&staging, &target));
        };
        let mut w = GranularWriter {
            claim: Some(claimed),
            unfinished: UnfinishedGuard::new(FORMAT, &target),
            mode: Mode::Staged { target },
            dir: staging.clone(),
            spec,
            fields,
            bags: Vec::new(),
            flush_bytes: options.flush_bytes,
            scratch: Vec::new(),
            state: State::Open,
        };
        // From here on, a failure drops `w`, which removes the staging directory. The spec
        // appears whole or not at all (staged, synced, renamed): a kill while it is being
        // written must leave a staging directory that `resume` calls empty, not a spec
        // that is cut short.
        let opened = write_spec_whole(&staging.join(PARTIAL_SPEC), &w.spec.to_json_bytes())
            .and_then(|()| w.open_bags());
        if let Err(e) = opened {
            w.unfinished.finished(); // never handed out, so nobody lost records
            return Err(e.with_format(FORMAT));
        }
        Ok(w)
    }

    /// Continues writing the dataset at `dir`: its interrupted staging directory if there
    /// is one, otherwise the finished dataset itself (appending in place).
    pub fn resume(dir: impl AsRef<Path>) -> Result<Self> {
        Self::resume_with(dir, &GranularWriterOptions::default())
    }

    /// [`resume`](Self::resume) with options.
    pub fn resume_with(dir: impl AsRef<Path>, options: &GranularWriterOptions) -> Result<Self> {
        let target = dir.as_ref().to_path_buf();
        let staging = staging_path(&target)?;
        let (mode, files_dir, spec_file) = if staging.join(PARTIAL_SPEC).is_file() {
            (Mode::Staged { target: target.clone() }, staging.clone(), staging.join(PARTIAL_SPEC))
        } else if target.join("spec.json").is_file() {
            (Mode::InPlace, target.clone(), target.join("spec.json"))
        } else if staging.is_dir() {
            // Killed before its spec was saved: no record was written either.
            return Err(Error::new(
                ErrorKind::NotFound,
                format!(
                    "the interrupted write at {} stopped before it saved its spec, so it holds \
                     no records to resume: delete it and start again",
                    staging.display()
                ),
            )
            .with_path(&target)
            .with_format(FORMAT));
        } else {
            return Err(Error::new(
                ErrorKind::NotFound,
                "no dataset and no interrupted write to resume",
            )
            .with_path(&target)
            .with_format(FORMAT));
        };
        let Some(claimed) = claim::claim(&files_dir)? else {
            return Err(claim::busy(&files_dir, &target));
        };
        let bytes = reel_core::paths::read_input(
            &spec_file,
            reel_core::Limits::default().max_metadata_bytes,
            "spec.json",
        )?;
        let spec = check_spec(&GranularSpec::parse(&bytes).map_err(|e| e.with_path(&spec_file))?)?;
        let fields = encoders(&spec, options)?;
        let mut w = GranularWriter {
            claim: Some(claimed),
            unfinished: UnfinishedGuard::new(FORMAT, dir.as_ref()),
            mode,
            dir: files_dir,
            spec,
            fields,
            bags: Vec::new(),
            flush_bytes: options.flush_bytes,
            scratch: Vec::new(),
            // A failed resume must not delete the staging directory it came to rescue.
            state: State::Suspended,
        };
        if let Err(e) = w.open_bags() {
            w.unfinished.finished(); // never handed out, so nobody lost records
            return Err(e.with_format(FORMAT));
        }
        w.state = State::Open;
        Ok(w)
    }

    /// Resumes the dataset at `dir` if it (or its interrupted write) exists and has the
    /// same spec, else creates it — what the reference's `DatasetWriter(dir, spec, …)`
    /// does.
    pub fn create_or_resume(
        dir: impl AsRef<Path>,
        spec: &GranularSpec,
        options: &GranularWriterOptions,
    ) -> Result<Self> {
        let dir = dir.as_ref();
        let exists =
            staging_path(dir)?.join(PARTIAL_SPEC).is_file() || dir.join("spec.json").is_file();
        if !exists {
            return Self::create_with(dir, spec, options);
        }
        let w = Self::resume_with(dir, options)?;
        if !w.spec.same_mapping(spec) {
            let mut w = w;
            w.state = State::Suspended;
            return Err(Error::schema(format!(
                "the existing dataset has the spec {:?}, not {:?}",
                w.spec,
                spec.sorted()
            ))
            .with_path(dir)
            .with_format(FORMAT));
        }
        Ok(w)
    }

    fn open_bags(&mut self) -> Result<()> {
        for f in &self.fields {
            self.bags.push(BagWriter::open(self.dir.join(format!("{}.bag", f.key)))?);
        }
        // Columns can be ahead of each other after a crash; keep the datapoints all have.
        let len = self.bags.iter().map(BagWriter::len).min().unwrap_or(0);
        for b in &mut self.bags {
            b.truncate(len)?;
        }
        self.scratch = vec![Vec::new(); self.fields.len()];
        Ok(())
    }

    /// The spec, keys sorted.
    pub fn spec(&self) -> &GranularSpec {
        &self.spec
    }

    /// Datapoints in the dataset (written or buffered): the index the next one gets.
    /// Every reel writer has this counter.
    pub fn records(&self) -> u64 {
        self.bags.first().map_or(0, BagWriter::len)
    }

    /// [`records`](Self::records), as the reference's `len(writer)`.
    pub fn len(&self) -> u64 {
        self.records()
    }

    /// Whether the dataset has no datapoints.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes of data and index (the reference's `size`).
    pub fn size(&self) -> u64 {
        self.bags.iter().map(BagWriter::size).sum()
    }

    /// The directory the files are being written to (the staging directory until finish).
    pub fn files_dir(&self) -> &Path {
        &self.dir
    }

    fn check_open(&self) -> Result<()> {
        match self.state {
            State::Open => Ok(()),
            State::Broken => Err(Error::new(
                ErrorKind::Io,
                "an earlier write failed; resume the dataset with a new writer",
            )
            .with_path(&self.dir)
            .with_format(FORMAT)),
            _ => Err(Error::new(ErrorKind::Closed, "the writer is finished").with_format(FORMAT)),
        }
    }

    /// Encodes and appends one datapoint; returns its index. The record must have exactly
    /// the spec's keys. `&record` and `record.view()` both work.
    pub fn append<'a>(&mut self, record: impl Into<RecordRef<'a>>) -> Result<u64> {
        let index = self.records();
        self.append_inner(record.into()).map_err(|e| e.with_format(FORMAT).with_record(index))
    }

    fn append_inner(&mut self, record: RecordRef<'_>) -> Result<u64> {
        self.check_open()?;
        check_keys(&self.fields, &record).map_err(|e| e.with_format(FORMAT))?;
        for (f, buf) in self.fields.iter().zip(&mut self.scratch) {
            buf.clear();
            f.encode(f.value(&record)?, buf).map_err(|e| e.with_format(FORMAT))?;
        }
        self.push_scratch()
    }

    /// Appends one datapoint given as the record bytes of each key, in sorted key order.
    pub fn append_encoded(&mut self, fields: &[&[u8]]) -> Result<u64> {
        let index = self.records();
        self.append_encoded_inner(fields).map_err(|e| e.with_format(FORMAT).with_record(index))
    }

    fn append_encoded_inner(&mut self, fields: &[&[u8]]) -> Result<u64> {
        self.check_open()?;
        if fields.len() != self.fields.len() {
            return Err(Error::schema(format!(
                "expected {} fields, got {}",
                self.fields.len(),
                fields.len()
            ))
            .with_format(FORMAT));
        }
        for (buf, f) in self.scratch.iter_mut().zip(fields) {
            buf.clear();
            buf.extend_from_slice(f);
        }
        self.push_scratch()
    }

    fn push_scratch(&mut self) -> Result<u64> {
        let index = self.len();
        for (bag, buf) in self.bags.iter_mut().zip(&self.scratch) {
            bag.append(buf);
        }
        let pending: usize = self.bags.iter().map(BagWriter::pending_bytes).sum();
        if pending >= self.flush_bytes {
            self.flush()?;
        }
        Ok(index)
    }

    /// Writes every buffered datapoint: the data of all columns, then their index entries.
    pub fn flush(&mut self) -> Result<()> {
        self.check_open()?;
        let r = self
            .bags
            .iter_mut()
            .try_for_each(BagWriter::flush_data)
            .and_then(|()| self.bags.iter_mut().try_for_each(BagWriter::flush_index));
        if r.is_err() {
            self.state = State::Broken;
        }
        r
    }

    /// Flushes, syncs, and (for a new dataset) moves it into place.
    pub fn finish(&mut self) -> Result<SinkSummary> {
        self.check_open()?;
        if let Mode::Staged { target } = &self.mode
            && target.exists()
            && !is_empty_dir(target)
        {
            return Err(Error::invalid_input(
                "the output appeared while writing and is not an empty directory; move it \
                 away and finish again",
            )
            .with_path(target)
            .with_format(FORMAT));
        }
        self.unfinished.finished();
        let r = self.finish_inner();
        self.state = if r.is_ok() { State::Finished } else { State::Broken };
        if r.is_ok() {
            self.claim = None; // finished: anyone may append to it now
        }
        r
    }

    fn finish_inner(&mut self) -> Result<SinkSummary> {
        for b in &mut self.bags {
            b.sync()?;
        }
        let path = match &self.mode {
            Mode::InPlace => self.dir.clone(),
            Mode::Staged { target } => {
                let target = target.clone();
                let (partial, spec) = (self.dir.join(PARTIAL_SPEC), self.dir.join("spec.json"));
                fs::rename(&partial, &spec).map_err(|e| {
                    Error::io(e, "cannot publish spec").with_path(&spec).with_format(FORMAT)
                })?;
                if let Err(e) = publish_dir(&self.dir, &target) {
                    // Not published: make the staging directory unopenable again.
                    let _ = fs::rename(&spec, &partial);
                    return Err(e.with_format(FORMAT));
                }
                self.dir = target.clone();
                target
            }
        };
        Ok(SinkSummary { records: self.len(), bytes: self.size(), paths: vec![path] })
    }

    /// Flushes and syncs what was appended and stops, keeping an unfinished dataset's
    /// staging directory so that [`resume`](Self::resume) can continue it.
    pub fn suspend(mut self) -> Result<()> {
        self.check_open()?;
        self.unfinished.finished();
        let r = self.bags.iter_mut().try_for_each(BagWriter::sync);
        self.state = State::Suspended;
        r
    }
}

impl Drop for GranularWriter {
    /// An abandoned new dataset is deleted. After a failed write or finish the staging
    /// directory is kept (it does not open as a dataset) so that `resume` can rescue it.
    fn drop(&mut self) {
        if let (Mode::Staged { .. }, State::Open) = (&self.mode, self.state) {
            let _ = fs::remove_dir_all(&self.dir);
        }
    }
}

impl RecordSink for GranularWriter {
    fn append_ref(&mut self, record: RecordRef<'_>) -> Result<u64> {
        GranularWriter::append(self, record)
    }

    fn records(&self) -> u64 {
        GranularWriter::records(self)
    }

    fn finish(&mut self) -> Result<SinkSummary> {
        GranularWriter::finish(self)
    }
}

/// The spec sorted, after the checks granular's `DatasetWriter` makes (a key and a type
/// must start with `[a-z_]`; the spec must not be empty).
fn check_spec(spec: &GranularSpec) -> Result<GranularSpec> {
    if spec.is_empty() {
        return Err(Error::invalid_input(
            "a dataset needs at least one key (the number of datapoints is the length of the \
             columns)",
        )
        .with_format(FORMAT));
    }
    let starts_ok = |s: &str| s.starts_with(|c: char| c.is_ascii_lowercase() || c == '_');
    for (k, t) in spec.iter() {
        if !starts_ok(k) || !starts_ok(t) {
            return Err(Error::invalid_input(format!(
                "key {k:?} and type {t:?} must start with a lowercase letter or underscore \
                 (granular asserts it)"
            ))
            .with_format(FORMAT));
        }
    }
    Ok(spec.sorted())
}

fn encoders(spec: &GranularSpec, options: &GranularWriterOptions) -> Result<Vec<FieldEncoder>> {
    let settings = CodecSettings::new(CodecFamily::Granular);
    field_encoders(spec, false, options.encode, &options.codecs, &settings)
        .map_err(|e| e.with_format(FORMAT))
}

fn is_empty_dir(p: &Path) -> bool {
    fs::read_dir(p).is_ok_and(|mut d| d.next().is_none())
}

/// Writes `bytes` to `path` so that `path` holds all of them or does not exist.
fn write_spec_whole(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write as _;
    let mut staged = reel_core::staged::StagedFile::create(path)?;
    staged
        .file_mut()
        .write_all(bytes)
        .map_err(|e| Error::io(e, "cannot write spec").with_path(path))?;
    staged.commit()
}
