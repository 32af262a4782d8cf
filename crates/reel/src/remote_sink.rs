//! Writing a dataset to object storage: the format's own writer fills a local staging
//! directory, and on finish the files go up with the objects that make the dataset openable
//! last (data first, then indexes and metadata, the file that names the dataset last). A
//! writer that fails or is dropped leaves nothing; an upload that fails removes what it
//! wrote.
//!
//! Data files a writer completes before the dataset is (OFRecord parts, Granular shards,
//! GulpIO2 chunks: see [`RecordSink::take_sealed`]) go up while the writing goes on, on a
//! thread of their own, and their local copies are removed, so a dataset of many files
//! needs a few files' room on local disk rather than its whole size (`EarlyUploads`).

use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;

use reel_core::{Error, RecordRef, RecordSink, Result, SealedFile, SinkSummary};
use reel_store::{ObjectPath, ObjectUrl, Store, UploadItem};

use crate::{CreateOptions, Format};

/// The environment variable naming the directory where datasets bound for object storage
/// are staged before upload (default: the system's temporary directory).
pub const STAGING_DIR_ENV: &str = "REEL_STAGING_DIR";

/// A writer for a new `format` dataset at the object-store address `url`.
pub(crate) fn create_remote(
    url: &ObjectUrl,
    format: Format,
    options: &CreateOptions,
) -> Result<Box<dyn RecordSink>> {
    let store = Store::new(url, &options.store)?;
    let key = url.path().clone();
    let old = refuse_existing(&store, &key, options.overwrite)?;
    let staging = local_staging()?;
    let name = key.filename().unwrap_or("dataset").to_string();
    let local = staging.path().join(name);
    let inner = crate::formats::create(format, &local, options)?;
    Ok(Box::new(RemoteSink {
        inner,
        local,
        store: Arc::new(store),
        key,
        shown: url.to_string(),
        local_url: url.to_string(),
        format,
        // Replacing a dataset, nothing goes up early: the old one would have to be deleted
        // first, and a writer that then fails (an exception in the `with` block) would
        // leave no dataset at all. The new one is staged whole and goes up on finish.
        early: old.is_empty().then(EarlyUploads::default),
        old,
        job_marker: None,
        published: false,
        _staging: staging,
    }))
}

/// A writer for part `k` of `count` of a multi-part `format` dataset under the object-store
/// address `dir` ([`create_part`](crate::create_part) for a URL): the part is written into a
/// local staging directory by the local part writer and uploaded on finish under the names
/// [`part_names`](crate::part_names) gives, like a whole dataset ([`create_remote`]). Returns
/// the sink and the part's address.
pub(crate) fn create_remote_part(
    dir: &ObjectUrl,
    format: Format,
    k: u64,
    count: u64,
    options: &CreateOptions,
) -> Result<(Box<dyn RecordSink>, PathBuf)> {
    let store = Store::new(dir, &options.store)?;
    let mut old = Vec::new();
    for name in crate::part_names(format, k, count) {
        old.extend(refuse_existing(
            &store,
            &dir.path().clone().join(name.as_str()),
            options.overwrite,
        )?);
    }
    // The marker of the job this part belongs to, checked when the part is up.
    let dir_text = dir.to_string();
    let job_marker = match crate::parts::staging_of(Path::new(&dir_text)) {
        Some(staging) => {
            Some(crate::parts::job_marker(ObjectUrl::parse(&staging.to_string_lossy())?.path()))
        }
        None => None,
    };
    let shown =
        format!("{}/{}", dir_text.trim_end_matches('/'), crate::part_names(format, k, count)[0]);
    if let Some(marker) = &job_marker {
        job_still_open(&store, marker, &shown)?; // nothing to write for a called-off job
    }
    let staging = local_staging()?;
    let local = staging.path().join("part");
    let (inner, _) = crate::create_part(&local, format, k, count, options)?;
    let sink = RemoteSink {
        inner,
        local,
        store: Arc::new(store),
        key: dir.path().clone(),
        shown: shown.clone(),
        local_url: dir_text.clone(),
        format,
        old,
        // A part's files are renamed when the part is published: they go up on finish.
        early: None,
        job_marker,
        published: false,
        _staging: staging,
    };
    Ok((Box::new(sink), PathBuf::from(shown)))
}

/// Whether the job that the part `shown` belongs to still runs: its marker is there (see
/// [`crate::parts`]); a missing marker is the job called off.
fn job_still_open(store: &Store, marker: &ObjectPath, shown: &str) -> Result<()> {
    if store.exists(marker)? { Ok(()) } else { Err(crate::parts::called_off(Path::new(shown))) }
}

/// Deletes `keys`, best effort: a failure is logged as `what`, and the rest are still tried.
fn delete_quietly<'a>(store: &Store, keys: impl IntoIterator<Item = &'a ObjectPath>, what: &str) {
    for key in keys {
        if let Err(e) = store.delete(key) {
            log::warn!("cannot remove {what}: {e}");
        }
    }
}

/// A fresh local directory to stage a dataset bound for object storage in, under
/// [`STAGING_DIR_ENV`] (default: the system's temporary directory); removed when dropped.
///
/// A process killed before it can remove its staging directory (SIGKILL, a Ray worker that
/// dies) leaves it behind, so each staging directory carries a lock file its process holds
/// (`flock`, released by the kernel when the process ends), and making a new one first
/// removes the directories whose lock nobody holds any more.
fn local_staging() -> Result<LocalStaging> {
    let root =
        std::env::var_os(STAGING_DIR_ENV).map(PathBuf::from).unwrap_or_else(std::env::temp_dir);
    owner_lock::remove_abandoned(&root);
    let dir = tempfile::Builder::new()
        .prefix(UPLOAD_PREFIX)
        .tempdir_in(&root)
        .map_err(|e| Error::io(e, "cannot create a staging directory").with_path(&root))?;
    let lock = owner_lock::take(dir.path());
    Ok(LocalStaging { dir, _lock: lock })
}

/// How the names of local staging directories start.
const UPLOAD_PREFIX: &str = ".reel-upload-";

/// A local staging directory and the lock that marks it as in use.
struct LocalStaging {
    // Dropped first: the directory goes, then the lock is released.
    dir: tempfile::TempDir,
    _lock: Option<std::fs::File>,
}

impl LocalStaging {
    fn path(&self) -> &Path {
        self.dir.path()
    }
}

/// The lock file in a local staging directory that tells a live owner from a dead one.
#[cfg(unix)]
mod owner_lock {
    use std::fs::File;
    use std::path::Path;

    use rustix::fs::{FlockOperation, flock};

    /// The lock file's name in a staging directory.
    const LOCK: &str = "owner.lock";

    /// Locks a new lock file in `dir` for this process (best effort: `None` where the file
    /// system has no `flock`; such a directory is then never removed by another process).
    /// The file gets its name only once locked, so a lock file that exists is locked until
    /// its owner ends.
    pub(super) fn take(dir: &Path) -> Option<File> {
        let unnamed = dir.join(".owner.lock.new");
        let file = File::create(&unnamed).ok()?;
        flock(&file, FlockOperation::NonBlockingLockExclusive).ok()?;
        std::fs::rename(&unnamed, dir.join(LOCK)).ok()?;
        Some(file)
    }

    /// Removes the staging directories under `root` whose lock file exists and is not held
    /// (their process ended without removing them). Directories without a lock file, or
    /// whose lock cannot be tried, are left alone.
    pub(super) fn remove_abandoned(root: &Path) {
        let Ok(entries) = std::fs::read_dir(root) else { return };
        for entry in entries.flatten() {
            // Directories only: a symbolic link by that name may lead anywhere.
            let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
            if !is_dir || !entry.file_name().to_string_lossy().starts_with(super::UPLOAD_PREFIX) {
                continue;
            }
            let dir = entry.path();
            let Ok(lock) = File::open(dir.join(LOCK)) else { continue };
            if flock(&lock, FlockOperation::NonBlockingLockExclusive).is_ok()
                && let Err(e) = std::fs::remove_dir_all(&dir)
            {
                log::warn!("{}: cannot remove an abandoned staging directory: {e}", dir.display());
            }
        }
    }
}

/// Without `flock`, staging directories carry no lock and are never removed by others.
#[cfg(not(unix))]
mod owner_lock {
    use std::path::Path;

    pub(super) fn take(_dir: &Path) -> Option<std::fs::File> {
        None
    }

    pub(super) fn remove_abandoned(_root: &Path) {}
}

/// The objects at or under `key`, refused with [`ErrorKind::InvalidInput`] naming the
/// first unless `overwrite` (then returned, to be removed when the new objects are ready).
///
/// [`ErrorKind::InvalidInput`]: reel_core::ErrorKind::InvalidInput
pub(crate) fn refuse_existing(
    store: &Store,
    key: &ObjectPath,
    overwrite: bool,
) -> Result<Vec<ObjectPath>> {
    let old = existing_objects(store, key)?;
    if !old.is_empty() && !overwrite {
        return Err(Error::invalid_input(format!(
            "{} objects already exist there (the first: {}); replace them with overwrite (`--force` on the command line)",
            old.len(),
            old[0]
        ))
        .with_path(store.address_of(key)));
    }
    refuse_a_prefix_not_a_dataset(store, key, &old)?;
    Ok(old)
}

/// Refuses to replace the prefix `key`, holding the objects `old`, unless they are a
/// dataset reel recognises, as a local directory is refused (see
/// `create::refuse_replacing_a_non_dataset`): replacing deletes every object under the
/// prefix, a user's notes and models beside a dataset as well. A single object at `key` is
/// replaced as a file is.
fn refuse_a_prefix_not_a_dataset(
    store: &Store,
    key: &ObjectPath,
    old: &[ObjectPath],
) -> Result<()> {
    let depth = key.parts().count();
    let mut names: Vec<String> = old
        .iter()
        .filter(|k| *k != key)
        .filter_map(|k| k.parts().nth(depth).map(|p| p.as_ref().to_string()))
        .collect();
    names.dedup();
    if names.is_empty() {
        return Ok(());
    }
    let reader = reel_store::RemoteStore::open(
        store.url(),
        store.options(),
        reel_store::ReadSettings::default(),
    )?;
    let location = PathBuf::from(store.address_of(key).trim_end_matches('/'));
    crate::create::refuse_a_directory_not_a_dataset(&reader, &location, &names)
}

/// The objects at `key` (one object) or under it (a directory dataset).
fn existing_objects(store: &Store, key: &ObjectPath) -> Result<Vec<ObjectPath>> {
    let mut found: Vec<ObjectPath> = store.list(key)?.into_iter().map(|(k, _)| k).collect();
    // The root of a bucket is no object (asking for the empty key answers about the bucket).
    if !key.as_ref().is_empty() && store.exists(key)? {
        found.insert(0, key.clone());
    }
    Ok(found)
}

struct RemoteSink {
    // Dropped first: an unfinished writer removes its own files before the staging
    // directory goes.
    inner: Box<dyn RecordSink>,
    /// The staged dataset (a file or directory), or the directory holding a staged part.
    local: PathBuf,
    store: Arc<Store>,
    /// Where `local` goes: the dataset's key, or the directory a part goes into.
    key: ObjectPath,
    /// The address the summary names.
    shown: String,
    /// The URL `local` stands for: the dataset's, or the directory a part goes into.
    local_url: String,
    format: Format,
    /// The objects of the dataset being replaced, removed before the first new one goes up.
    old: Vec<ObjectPath>,
    /// Sealed data files uploaded while the dataset is written (`None` for a part).
    early: Option<EarlyUploads>,
    /// For a part of a job in parts, the object that exists while the job runs: a part that
    /// finds it gone once it is up removes itself (see `reel::parts`).
    job_marker: Option<ObjectPath>,
    /// Set once everything is uploaded: until then, dropping removes what went up early.
    published: bool,
    _staging: LocalStaging,
}

impl RemoteSink {
    /// `error` naming the files it is about by their URLs: the writer inside writes to the
    /// staging directory, whose name means nothing to the user.
    fn addressed(&self, error: Error) -> Error {
        error.map_path(|path| {
            let rest = path.strip_prefix(&self.local).ok()?;
            let mut url = self.local_url.trim_end_matches('/').to_string();
            for part in rest.components() {
                url.push('/');
                url.push_str(&part.as_os_str().to_string_lossy());
            }
            Some(PathBuf::from(url))
        })
    }

    /// Sends the files the writer sealed during the last call up early, where they may go.
    fn send_sealed(&mut self) -> Result<()> {
        let sealed = self.inner.take_sealed();
        let Some(early) = self.early.as_mut() else { return Ok(()) };
        for file in sealed {
            if !early.may_go_early(self.format, &file) {
                continue; // it stays in the staging directory and goes up on finish
            }
            if !self.old.is_empty() {
                // New objects must not mix with the old dataset's, some of which may have
                // the same names: the old one goes first (what makes it openable first).
                remove_dataset(&self.store, std::mem::take(&mut self.old))?;
            }
            let key = key_of(&self.key, &file.name);
            early.send(&self.store, file.path, key)?;
        }
        Ok(())
    }
}

impl RecordSink for RemoteSink {
    fn append_ref(&mut self, record: RecordRef<'_>) -> Result<u64> {
        let index = self.inner.append_ref(record).map_err(|e| self.addressed(e))?;
        self.send_sealed()?;
        Ok(index)
    }

    fn append_located(
        &mut self,
        record: RecordRef<'_>,
        location: Option<reel_core::Location<'_>>,
    ) -> Result<u64> {
        let index = self.inner.append_located(record, location).map_err(|e| self.addressed(e))?;
        self.send_sealed()?;
        Ok(index)
    }

    fn records(&self) -> u64 {
        self.inner.records()
    }

    fn finish(&mut self) -> Result<SinkSummary> {
        let uploaded = match self.early.as_mut() {
            Some(early) => early.wait()?,
            None => Vec::new(),
        };
        let mut summary = self.inner.finish().map_err(|e| self.addressed(e))?;
        let mut items = upload_items(&self.local, &self.key, self.format)?;
        // A file whose local copy could not be removed after its early upload is up already.
        items.retain(|item| !uploaded.contains(&item.key));
        // A bucket cannot swap many objects at once. A single object is replaced whole by
        // its PUT, so the old one stays readable until then; anything else is removed
        // first, so that old and new objects never mix into something that opens.
        let replaced_whole = matches!(&items[..], [one] if self.old.iter().all(|o| o == &one.key));
        if !replaced_whole {
            remove_dataset(&self.store, std::mem::take(&mut self.old))?;
        }
        self.store.upload_staged(&items)?;
        if let Some(marker) = &self.job_marker
            && let Err(e) = job_still_open(&self.store, marker, &self.shown)
        {
            // Called off (or the marker cannot be seen): what went up must not outlive the
            // job's discard, which may have listed the prefix before it arrived.
            delete_quietly(&self.store, items.iter().map(|i| &i.key), "a part of a called-off job");
            return Err(e);
        }
        self.published = true;
        summary.paths = vec![PathBuf::from(&self.shown)];
        Ok(summary)
    }
}

impl Drop for RemoteSink {
    fn drop(&mut self) {
        let Some(early) = self.early.as_mut() else { return };
        // Whatever the worker finished is in its list, whether or not it failed later.
        let uploaded = early.stop();
        if self.published {
            return;
        }
        // The early uploads are data files that open nothing by themselves; they are
        // removed so that an unfinished or failed dataset leaves no objects behind.
        delete_quietly(&self.store, &uploaded, "an object of an unfinished dataset");
    }
}

/// Sealed files of a dataset being written, uploaded one after another by a thread of
/// their own while the writer goes on; each local copy is removed once its object is
/// written.
///
/// Only files that open nothing by themselves go early: data files (upload stage 0; a
/// GulpIO2 chunk's `.gmeta`, Granular indexes and specs wait for finish). For formats made
/// only of data parts (OFRecord, the one of them that seals files), the first part in name
/// order is held back too, since a reader that finds it takes the directory for a dataset;
/// it goes up last, on finish. The queue holds one file, so local disk holds at most the
/// file being written, the one queued, the one going up and those held back.
#[derive(Default)]
struct EarlyUploads {
    queue: Option<SyncSender<(PathBuf, ObjectPath)>>,
    worker: Option<JoinHandle<()>>,
    outcome: Arc<Mutex<EarlyOutcome>>,
    /// The name-first data file seen so far, of a format made only of data parts.
    held: Option<String>,
    /// An upload failed (its error was returned).
    failed: bool,
}

/// What the upload thread has done so far.
#[derive(Default)]
struct EarlyOutcome {
    uploaded: Vec<ObjectPath>,
    failure: Option<Error>,
}

impl EarlyUploads {
    /// Whether `file` may go up before the dataset is finished (see the type).
    fn may_go_early(&mut self, format: Format, file: &SealedFile) -> bool {
        if upload_stage(format, &file.name) != 0 {
            return false;
        }
        if format == Format::Ofrecord {
            // Hold the first of the names seen so far; the dataset's first name is among
            // the held ones, whatever order the parts come in.
            if self.held.as_deref().is_none_or(|held| file.name.as_str() < held) {
                self.held = Some(file.name.clone());
                return false;
            }
        }
        true
    }

    /// Queues `local` for upload as `key`, starting the upload thread on first use; waits
    /// while the queue is full. Fails with the upload thread's error once it has one.
    fn send(&mut self, store: &Arc<Store>, local: PathBuf, key: ObjectPath) -> Result<()> {
        self.check()?;
        if self.queue.is_none() {
            let (queue, files) = sync_channel(1);
            let store = Arc::clone(store);
            let outcome = Arc::clone(&self.outcome);
            let worker = std::thread::Builder::new()
                .name("reel-upload".into())
                .spawn(move || upload_worker(&store, &files, &outcome))
                .map_err(|e| Error::io(e, "cannot start the upload thread"))?;
            self.queue = Some(queue);
            self.worker = Some(worker);
        }
        let sent = self.queue.as_ref().is_some_and(|q| q.send((local, key)).is_ok());
        self.check()?;
        if !sent {
            return Err(Error::new(reel_core::ErrorKind::Io, "the upload thread ended early"));
        }
        Ok(())
    }

    /// The upload thread's error, once: later calls say that an upload failed.
    fn check(&mut self) -> Result<()> {
        let failure = self.outcome.lock().unwrap_or_else(PoisonError::into_inner).failure.take();
        if let Some(e) = failure {
            self.failed = true;
            return Err(e);
        }
        if self.failed {
            return Err(Error::new(
                reel_core::ErrorKind::Io,
                "an earlier upload of this dataset failed; it cannot be finished",
            ));
        }
        Ok(())
    }

    /// Lets the queued uploads finish; returns the keys uploaded, or the first error.
    fn wait(&mut self) -> Result<Vec<ObjectPath>> {
        let uploaded = self.stop();
        self.check()?;
        Ok(uploaded)
    }

    /// Closes the queue, waits for the thread and returns the keys it uploaded.
    fn stop(&mut self) -> Vec<ObjectPath> {
        self.queue = None;
        if let Some(worker) = self.worker.take()
            && worker.join().is_err()
        {
            log::warn!("the upload thread panicked");
        }
        let outcome = self.outcome.lock().unwrap_or_else(PoisonError::into_inner);
        outcome.uploaded.clone()
    }
}

/// The upload thread: uploads each queued file and removes its local copy, until the queue
/// closes or an upload fails (then the files still queued stay local, and the writer learns
/// of the failure at its next sealed file or at finish).
fn upload_worker(
    store: &Store,
    files: &Receiver<(PathBuf, ObjectPath)>,
    outcome: &Mutex<EarlyOutcome>,
) {
    for (local, key) in files {
        let result = store.upload_file(&local, &key);
        let mut outcome = outcome.lock().unwrap_or_else(PoisonError::into_inner);
        match result {
            Ok(_) => {
                outcome.uploaded.push(key);
                drop(outcome);
                if let Err(e) = std::fs::remove_file(&local) {
                    log::warn!("{}: cannot remove an uploaded file: {e}", local.display());
                }
            }
            Err(e) => {
                outcome.failure = Some(e);
                return;
            }
        }
    }
}

/// Deletes the objects of a replaced dataset, those that make it openable first (its
/// `spec.json`, then indexes and metadata, then data in name order, so an OFRecord
/// directory loses `part-00000` before the rest): from the first deletion on, what is left
/// does not open.
pub(crate) fn remove_dataset(store: &Store, mut old: Vec<ObjectPath>) -> Result<()> {
    let rank = |key: &ObjectPath| match key.filename().unwrap_or("") {
        "spec.json" => 0,
        name if name.ends_with(".gmeta") || name.ends_with(".idx") || name.ends_with(".json") => 1,
        _ => 2,
    };
    old.sort_by(|a, b| rank(a).cmp(&rank(b)).then_with(|| a.cmp(b)));
    for key in &old {
        store.delete(key)?;
    }
    Ok(())
}

/// The files of the finished local dataset at `local` with their keys under `key` and
/// their upload stages.
fn upload_items(local: &Path, key: &ObjectPath, format: Format) -> Result<Vec<UploadItem>> {
    let meta = std::fs::symlink_metadata(local)
        .map_err(|e| Error::io(e, "the writer left no output").with_path(local))?;
    if !meta.is_dir() {
        return Ok(vec![UploadItem { local: local.to_path_buf(), key: key.clone(), stage: 0 }]);
    }
    let mut files = Vec::new();
    collect_files(local, &mut files)?;
    files.sort();
    let mut named = Vec::with_capacity(files.len());
    for file in files {
        let rel = file.strip_prefix(local).map_err(|_| {
            Error::invalid_input("a staged file outside the staging directory").with_path(&file)
        })?;
        let parts = rel
            .components()
            .map(|c| c.as_os_str().to_str().map(str::to_string))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| {
                Error::invalid_input("a file name that is not UTF-8 cannot be an object key")
                    .with_path(&file)
            })?;
        named.push((parts.join("/"), file));
    }
    let stages = publication_stages(format, named.iter().map(|(rel, _)| rel.as_str()));
    Ok(named
        .into_iter()
        .zip(stages)
        .map(|((rel, file), stage)| {
            let key = key_of(key, &rel);
            UploadItem { local: file, key, stage }
        })
        .collect())
}

/// The key of the file at `/`-separated path `rel` inside the dataset at `key`.
fn key_of(key: &ObjectPath, rel: &str) -> ObjectPath {
    rel.split('/').fold(key.clone(), |k, part| k.join(part))
}

/// The stages in which the objects of a directory dataset, named by their `/`-separated
/// paths in it (in name order), are published: data first, then the indexes and metadata
/// without which the data does not open, and the file that names the dataset (Granular's
/// `spec.json`, the first shard's last of all). Formats made only of data parts (FFRecord,
/// OFRecord directories): the first part in name order goes last, so a reader that lists
/// and finds nothing at the start finds no dataset while the rest is still on its way.
pub(crate) fn publication_stages<'a>(
    format: Format,
    rels: impl Iterator<Item = &'a str>,
) -> Vec<u8> {
    let mut stages: Vec<u8> = rels.map(|rel| upload_stage(format, rel)).collect();
    if stages.iter().all(|&s| s == 0)
        && let Some(first) = stages.first_mut()
    {
        *first = 1;
    }
    stages
}

/// The stage of one file of a directory dataset, named by its `/`-separated path in it (see
/// [`publication_stages`]).
fn upload_stage(format: Format, rel: &str) -> u8 {
    let name = rel.rsplit('/').next().unwrap_or(rel);
    let nested = rel.contains('/');
    match format {
        Format::Gulp if name.ends_with(".gmeta") => 1,
        _ if name == "spec.json" && nested => 2,
        _ if name == "spec.json" => 3,
        _ if name.ends_with(".idx") || name.ends_with(".json") => 1,
        _ => 0,
    }
}

fn collect_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let entries = std::fs::read_dir(dir)
        .map_err(|e| Error::io(e, "cannot list the staged dataset").with_path(dir))?;
    for entry in entries {
        let entry =
            entry.map_err(|e| Error::io(e, "cannot list the staged dataset").with_path(dir))?;
        let path = entry.path();
        let kind = entry
            .file_type()
            .map_err(|e| Error::io(e, "cannot stat a staged file").with_path(&path))?;
        if kind.is_dir() {
            collect_files(&path, out)?;
        } else if kind.is_file() {
            out.push(path);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn staging_directories_of_ended_processes_are_removed_and_live_ones_kept() {
        let root = tempfile::tempdir().unwrap();
        let make = || {
            let dir =
                tempfile::Builder::new().prefix(UPLOAD_PREFIX).tempdir_in(root.path()).unwrap();
            let lock = owner_lock::take(dir.path()).unwrap();
            (dir.keep(), lock)
        };
        let (ended, lock) = make();
        drop(lock); // its process ended: the kernel released the lock
        let (live, _held) = make();
        let unlocked = root.path().join(".reel-upload-without-lock");
        std::fs::create_dir(&unlocked).unwrap();
        let other = root.path().join("not-staging");
        std::fs::create_dir(&other).unwrap();
        std::fs::write(other.join("owner.lock"), b"").unwrap();
        // A link named like a staging directory, to a directory with an unheld lock file.
        let elsewhere = tempfile::tempdir().unwrap();
        drop(owner_lock::take(elsewhere.path()).unwrap());
        std::os::unix::fs::symlink(elsewhere.path(), root.path().join(".reel-upload-link"))
            .unwrap();
        owner_lock::remove_abandoned(root.path());
        assert!(!ended.exists());
        assert!(live.join("owner.lock").exists());
        assert!(unlocked.exists() && other.exists());
        assert!(elsewhere.path().join("owner.lock").exists());
    }

    #[test]
    fn metadata_goes_up_after_data() {
        assert_eq!(upload_stage(Format::Gulp, "data_0.gulp"), 0);
        assert_eq!(upload_stage(Format::Gulp, "meta_0.gmeta"), 1);
        assert_eq!(upload_stage(Format::Granular, "data.bag"), 0);
        assert_eq!(upload_stage(Format::Granular, "data.idx"), 1);
        assert_eq!(upload_stage(Format::Granular, "000001/spec.json"), 2);
        assert_eq!(upload_stage(Format::Granular, "spec.json"), 3);
    }

    #[test]
    fn a_tree_of_parts_keeps_its_first_part_for_last() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["part-00001", "part-00000", "part-00002"] {
            std::fs::write(dir.path().join(name), b"x").unwrap();
        }
        let items = upload_items(dir.path(), &ObjectPath::from("ds"), Format::Ofrecord).unwrap();
        let keys: Vec<_> = items.iter().map(|i| (i.key.to_string(), i.stage)).collect();
        assert_eq!(
            keys,
            [
                ("ds/part-00000".to_string(), 1),
                ("ds/part-00001".to_string(), 0),
                ("ds/part-00002".to_string(), 0)
            ]
        );
        let one = dir.path().join("part-00000");
        let items = upload_items(&one, &ObjectPath::from("a/b"), Format::Ofrecord).unwrap();
        assert_eq!(items, [UploadItem { local: one, key: ObjectPath::from("a/b"), stage: 0 }]);
    }
}
