//! A dataset written in parts by many workers at once (Ray tasks, processes of
//! `reel convert --shard`) and published in one step when every part is done.
//!
//! The driver of the job picks a staging location beside the destination
//! ([`parts_staging`]: a hidden directory, or a hidden key prefix in the same bucket); each
//! worker writes its part under [`staged_part`]`(staging, task)` with
//! [`create_part`](crate::create_part) (for a URL the worker stages the part on its own local
//! disk and uploads it when the part is complete); when every worker has succeeded, the
//! driver calls [`publish_parts`], which lays the parts out under their final names (part
//! `i` of however many there turned out to be) at the destination:
//!
//! * on a file system, by renames into a directory that is then made durable and renamed
//!   into place ([`publish_path`](reel_core::staged::publish_path));
//! * in an object store, by server-side copies, data first and the objects that make the
//!   dataset openable last (the order of a single writer's upload), then the staging objects
//!   are deleted.
//!
//! Until then nothing exists at the destination. A job that fails calls
//! [`discard_staging`], which removes everything its workers wrote.
//!
//! A worker may still be writing when its job is called off (Ray, for one, does not wait
//! for the tasks it cancels), so a part cannot be allowed to appear under a staging location
//! that was already discarded. A staging location holds a `job-open` marker (a file, or an
//! object in a store) while its job runs, and [`discard_staging`] deletes it before anything
//! else. On a file system a part's directory is created only inside the job's existing
//! `tasks` directory while the marker is there, and the marker is looked at again once the
//! part's writer exists (a writer may create its directories, with their parents, as it
//! starts; see `LocalFence`); after that a writer only adds to directories that a discard
//! removes. In an object store, where a PUT needs no directory, a part checks the marker
//! after its last upload and deletes what it uploaded when the marker is gone: either the
//! discard's listing, which follows the marker's deletion, sees the part, or the part sees
//! the marker gone.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use reel_core::paths::{Existing, check_destination};
use reel_core::{Error, Result};

use crate::{CreateOptions, Format, part_names};

/// What marks a staging location in its name ([`discard_staging`] removes nothing else).
const STAGING_MARK: &str = ".reel-staging-";

/// One part a worker wrote under a staging location.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StagedPart {
    /// The directory (or key prefix) the worker wrote into: [`staged_part`]'s answer.
    pub location: PathBuf,
    /// The part the worker wrote it as, `(k, count)`: its files are named by
    /// [`part_names`]`(format, k, count)` in `location` (a worker that does not know how many
    /// parts there will be writes part `(0, 1)`).
    pub written_as: (u64, u64),
}

/// Starts a job writing a dataset at `dst` in parts: checks `dst` (something there is
/// refused with [`ErrorKind::InvalidInput`](reel_core::ErrorKind::InvalidInput) unless
/// `options.overwrite`; it is checked again when publishing) and returns a fresh staging
/// location beside it (for a local `dst` the directory is created, with its parents).
pub fn parts_staging(dst: &Path, options: &CreateOptions) -> Result<PathBuf> {
    #[cfg(feature = "object-store")]
    if let Some(reel_store::Address::Remote(url)) = crate::create::remote_address(dst)? {
        return remote::staging(&url, options);
    }
    let existing = if options.overwrite { Existing::Overwrite } else { Existing::Refuse };
    check_destination(dst, &[], existing)?;
    crate::create::refuse_replacing_a_non_dataset(dst)?;
    let name = dst.file_name().and_then(|n| n.to_str()).ok_or_else(|| {
        Error::invalid_input("the destination has no UTF-8 file name").with_path(dst)
    })?;
    let staging = dst.with_file_name(staging_name(name));
    // With the directory the parts' locations are in, which a part's writer expects.
    let tasks = staging.join(TASKS_DIR);
    std::fs::create_dir_all(&tasks)
        .map_err(|e| Error::io(e, "cannot create the staging directory").with_path(&tasks))?;
    let marker = staging.join(JOB_OPEN_MARKER);
    std::fs::File::create(&marker)
        .map_err(|e| Error::io(e, "cannot create the staging directory").with_path(&marker))?;
    Ok(staging)
}

/// The directory of a staging location holding the workers' parts.
const TASKS_DIR: &str = "tasks";

/// The file (or object, in an object store) in a staging location that exists while its job
/// runs (see the module documentation).
const JOB_OPEN_MARKER: &str = "job-open";

#[cfg(feature = "object-store")]
pub(crate) use remote::job_marker;

/// The staging location that `location` (an answer of [`staged_part`]) lies under; `None`
/// for a location that is not a part of a job.
pub(crate) fn staging_of(location: &Path) -> Option<&Path> {
    let tasks = location.parent()?;
    if tasks.file_name()? != TASKS_DIR {
        return None;
    }
    let staging = tasks.parent()?;
    check_staging(staging).ok().map(|()| staging)
}

/// The error of a part whose job was called off while it was written.
pub(crate) fn called_off(location: &Path) -> Error {
    Error::new(
        reel_core::ErrorKind::Closed,
        "the job writing this dataset in parts was called off (its staging location was \
         discarded): the part is not kept",
    )
    .with_path(location)
}

/// Refuses, as called off, a part `location` on a file system whose job's staging location
/// was discarded; anything else passes.
pub(crate) fn refuse_called_off(location: &Path) -> Result<()> {
    staging_of(location).map_or(Ok(()), |staging| require_open(staging, location))
}

/// Fails, as called off, unless the job staging at `staging` on a file system still runs
/// (its marker is there); `location` is the part the error names.
fn require_open(staging: &Path, location: &Path) -> Result<()> {
    if staging.join(JOB_OPEN_MARKER).is_file() { Ok(()) } else { Err(called_off(location)) }
}

/// The guard of a part being created under a job's staging location on a file system.
///
/// Only the part's own directory is created, inside the job's `tasks` directory, and only
/// while the job's marker is there. A format writer may create its directories (with their
/// parents) as it starts, and a discard between [`enter`](Self::enter) and that would let it
/// re-create the staging location, so [`check`](Self::check) looks at the marker again once
/// the writer exists. A discard deletes the marker before anything else, so a marker seen
/// then means that the discard, if it comes, removes what the writer created too.
pub(crate) struct LocalFence {
    staging: PathBuf,
    location: PathBuf,
}

impl LocalFence {
    /// Creates the part's directory `location` inside the job's `tasks` directory, if the
    /// job still runs.
    pub(crate) fn enter(staging: &Path, location: &Path) -> Result<Self> {
        require_open(staging, location)?;
        match std::fs::create_dir(location) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(called_off(location));
            }
            Err(e) => {
                return Err(Error::io(e, "cannot create the part's directory").with_path(location));
            }
        }
        Ok(LocalFence { staging: staging.to_path_buf(), location: location.to_path_buf() })
    }

    /// Returns `sink` if the job still runs; else drops it, removes what its creation may
    /// have re-created and reports the part called off. From here on the writer only adds
    /// to directories that exist, and those a discard removes.
    pub(crate) fn check(
        self,
        sink: Box<dyn reel_core::RecordSink>,
    ) -> Result<Box<dyn reel_core::RecordSink>> {
        let Err(called_off) = require_open(&self.staging, &self.location) else {
            return Ok(sink);
        };
        drop(sink);
        if let Err(e) = remove_local_staging(&self.staging) {
            log::warn!(
                "cannot remove a re-created staging location {}: {e}",
                self.staging.display()
            );
        }
        Err(called_off)
    }
}

/// Where worker `task` of a job writes its part, under the job's `staging` location.
pub fn staged_part(staging: &Path, task: u64) -> PathBuf {
    staging.join(TASKS_DIR).join(format!("{task:06}"))
}

/// Publishes at `dst` the `format` dataset whose parts workers wrote under `staging`: part `i`
/// of `parts.len()` is `parts[i]`. Fails, leaving `dst` as it was, when a part's files are
/// missing or `dst` holds something (unless `options.overwrite`: then the old dataset is
/// replaced; in an object store, which cannot swap many objects at once, it is deleted before
/// the new one is copied in). On success the staging location is removed; on failure the
/// caller removes it with [`discard_staging`].
pub fn publish_parts(
    staging: &Path,
    format: Format,
    parts: &[StagedPart],
    dst: &Path,
    options: &CreateOptions,
) -> Result<()> {
    if parts.is_empty() {
        return Err(Error::invalid_input(
            "no parts to publish (write an empty dataset with reel::create instead)",
        )
        .with_path(dst));
    }
    check_staging(staging)?;
    #[cfg(feature = "object-store")]
    if let Some(reel_store::Address::Remote(url)) = crate::create::remote_address(dst)? {
        return remote::publish(staging, format, parts, &url, options);
    }
    let dataset = staging.join("dataset");
    std::fs::create_dir(&dataset)
        .map_err(|e| Error::io(e, "cannot create the dataset directory").with_path(&dataset))?;
    for (i, part) in parts.iter().enumerate() {
        for (old, new) in renames(format, part, i, parts.len()) {
            let from = part.location.join(&old);
            std::fs::rename(&from, dataset.join(&new)).map_err(|e| {
                Error::io(e, format!("cannot move part {i} into place")).with_path(&from)
            })?;
        }
    }
    if options.overwrite {
        // Checked again: something else may have come to `dst` since the job started.
        crate::create::refuse_replacing_a_non_dataset(dst)?;
    }
    reel_core::staged::publish_path(&dataset, dst, options.overwrite)?;
    discard_staging(staging, options)
}

/// Removes everything a job's workers wrote under `staging` (a location [`parts_staging`]
/// gave; any other path is refused, so that a mistake cannot delete a dataset). Removing a
/// location that is already gone succeeds.
pub fn discard_staging(staging: &Path, options: &CreateOptions) -> Result<()> {
    check_staging(staging)?;
    #[cfg(feature = "object-store")]
    if let Some(reel_store::Address::Remote(url)) = crate::create::remote_address(staging)? {
        let store = reel_store::Store::new(&url, &options.store)?;
        return remote::clear(&store, url.path());
    }
    let _ = options;
    // The marker first: a part created from here on sees the job called off.
    match std::fs::remove_file(staging.join(JOB_OPEN_MARKER)) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(Error::io(e, "cannot remove the staging directory").with_path(staging));
        }
        _ => {}
    }
    remove_local_staging(staging)
        .map_err(|e| Error::io(e, "cannot remove the staging directory").with_path(staging))
}

/// Removes the local staging directory `staging` and everything in it; one already gone
/// is no error. A worker still writing can add a file between the removal's listing of a
/// directory and its removal of it ("directory not empty"); once a directory is gone
/// nothing can be added to it, so a few attempts finish the job.
fn remove_local_staging(staging: &Path) -> std::io::Result<()> {
    let mut attempts = 0;
    loop {
        match std::fs::remove_dir_all(staging) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::DirectoryNotEmpty && attempts < 8 => {
                attempts += 1;
                // Give the writer a moment to see its directory gone (and a network file
                // system to drop the names of files still open).
                std::thread::sleep(std::time::Duration::from_millis(5 * attempts));
            }
            done => return done,
        }
    }
}

/// The hidden, unique name of a staging location beside a destination named `name`.
fn staging_name(name: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let mut cut = name.len().min(160);
    while !name.is_char_boundary(cut) {
        cut -= 1;
    }
    format!(".{}{STAGING_MARK}{}-{nanos:x}-{n}", &name[..cut], std::process::id())
}

/// Refuses a path that is not a staging location (its last component carries the mark).
fn check_staging(staging: &Path) -> Result<()> {
    let text = staging.to_string_lossy();
    let last = text.trim_end_matches('/').rsplit('/').next().unwrap_or("");
    if last.starts_with('.') && last.contains(STAGING_MARK) {
        Ok(())
    } else {
        Err(Error::invalid_input("not a staging location of a job writing in parts")
            .with_path(staging))
    }
}

/// The names in `part.location` and the names in the dataset of part `i` of `count`.
fn renames(format: Format, part: &StagedPart, i: usize, count: usize) -> Vec<(String, String)> {
    let (k, written) = part.written_as;
    part_names(format, k, written)
        .into_iter()
        .zip(part_names(format, i as u64, count as u64))
        .collect()
}

#[cfg(feature = "object-store")]
mod remote {
    //! The object-store side: staging key prefixes and publishing by server-side copies.

    use std::path::{Path, PathBuf};

    use reel_core::{Error, Result};
    use reel_store::{CopyItem, ObjectPath, ObjectUrl, Store};

    use super::{StagedPart, renames, staging_name};
    use crate::remote_sink::{publication_stages, refuse_existing, remove_dataset};
    use crate::{CreateOptions, Format};

    /// A staging key prefix beside the dataset key of `url`, in the same bucket.
    pub(super) fn staging(url: &ObjectUrl, options: &CreateOptions) -> Result<PathBuf> {
        let store = Store::new(url, &options.store)?;
        refuse_existing(&store, url.path(), options.overwrite)?;
        let name = url.path().filename().ok_or_else(|| {
            Error::invalid_input("a dataset needs a key, not a whole bucket")
                .with_path(url.to_string())
        })?;
        let mut staged = url.url().clone();
        staged
            .path_segments_mut()
            .map_err(|()| {
                Error::invalid_input("not a hierarchical URL").with_path(url.to_string())
            })?
            .pop()
            .push(&staging_name(name));
        let staging = staged.to_string();
        store.put(&job_marker(ObjectUrl::parse(&staging)?.path()), reel_store::Bytes::new())?;
        Ok(PathBuf::from(staging))
    }

    /// The key of the marker that exists while the job staging under the key prefix
    /// `staging` runs.
    pub(crate) fn job_marker(staging: &ObjectPath) -> ObjectPath {
        staging.clone().join(super::JOB_OPEN_MARKER)
    }

    /// Removes a job's staging objects under `staging`: the marker first, so that a part
    /// finishing from then on sees the job called off and removes itself, then the rest.
    pub(super) fn clear(store: &Store, staging: &ObjectPath) -> Result<()> {
        store.delete(&job_marker(staging))?;
        store.delete_prefix(staging).map(|_| ())
    }

    /// Copies the parts into place under `dst` (data first, what makes the dataset openable
    /// last), then deletes the staging objects.
    pub(super) fn publish(
        staging: &Path,
        format: Format,
        parts: &[StagedPart],
        dst: &ObjectUrl,
        options: &CreateOptions,
    ) -> Result<()> {
        let store = Store::new(dst, &options.store)?;
        let staging_url = object_url(staging)?;
        if staging_url.store_url() != dst.store_url() {
            return Err(Error::invalid_input(format!(
                "the parts are staged in {}, not in the destination's store {}",
                staging_url.store_url(),
                dst.store_url()
            ))
            .with_path(dst.to_string()));
        }
        let mut copies: Vec<(String, ObjectPath, ObjectPath)> = Vec::new();
        for (i, part) in parts.iter().enumerate() {
            let location = object_url(&part.location)?;
            if !location.path().prefix_matches(staging_url.path()) {
                return Err(Error::invalid_input("a part outside the job's staging location")
                    .with_path(part.location.clone()));
            }
            let renames = renames(format, part, i, parts.len());
            let mut found = vec![false; renames.len()];
            for (key, _) in store.list(location.path())? {
                let rel: Vec<String> = key
                    .prefix_match(location.path())
                    .map(|parts| parts.map(|p| p.as_ref().to_string()).collect())
                    .unwrap_or_default();
                let slot =
                    rel.first().and_then(|first| renames.iter().position(|(old, _)| old == first));
                let Some(slot) = slot else {
                    return Err(Error::invalid_input(format!(
                        "part {i}: {key} is not one of the part's files ({})",
                        renames.iter().map(|(old, _)| old.as_str()).collect::<Vec<_>>().join(", ")
                    ))
                    .with_path(part.location.clone()));
                };
                found[slot] = true;
                let mut rel_new = rel;
                rel_new[0] = renames[slot].1.clone();
                let target = rel_new.iter().fold(dst.path().clone(), |k, p| k.join(p.as_str()));
                copies.push((rel_new.join("/"), key, target));
            }
            if let Some(missing) = found.iter().position(|f| !f) {
                return Err(Error::new(
                    reel_core::ErrorKind::NotFound,
                    format!("part {i}: {} was not written", renames[missing].0),
                )
                .with_path(part.location.clone()));
            }
        }
        copies.sort_by(|a, b| a.0.cmp(&b.0));
        let stages = publication_stages(format, copies.iter().map(|(rel, _, _)| rel.as_str()));
        let items: Vec<CopyItem> = copies
            .into_iter()
            .zip(stages)
            .map(|((_, from, key), stage)| CopyItem { from, key, stage })
            .collect();
        let old = refuse_existing(&store, dst.path(), options.overwrite)?;
        if !old.is_empty() {
            remove_dataset(&store, old)?;
        }
        store.copy_staged(&items)?;
        // The dataset is complete: a staging object left by a failed delete costs storage
        // but cannot make anything open wrong. Cleared as a discard clears, so that a
        // straggling part (an attempt not among `parts`) cannot land after the listing.
        if let Err(e) = clear(&store, staging_url.path()) {
            log::warn!("the dataset is published, but its staging objects remain: {e}");
        }
        Ok(())
    }

    fn object_url(path: &Path) -> Result<ObjectUrl> {
        let text = path.to_str().ok_or_else(|| {
            Error::invalid_input("an object-store address must be UTF-8").with_path(path)
        })?;
        ObjectUrl::parse(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reel_core::{RecordSink, RecordSourceExt};

    #[test]
    fn staging_locations_are_hidden_unique_and_the_only_paths_discarded() {
        let dir = tempfile::tempdir().unwrap();
        let dst = dir.path().join("out");
        let options = CreateOptions::default();
        let (a, b) =
            (parts_staging(&dst, &options).unwrap(), parts_staging(&dst, &options).unwrap());
        assert_ne!(a, b);
        assert!(a.file_name().unwrap().to_str().unwrap().starts_with(".out.reel-staging-"));
        assert!(a.is_dir() && !dst.exists());
        std::fs::create_dir_all(dst.join("x")).unwrap();
        let e = discard_staging(&dst, &options).unwrap_err();
        assert_eq!(e.kind(), reel_core::ErrorKind::InvalidInput);
        assert!(dst.join("x").exists());
        // Something at the destination is refused unless overwriting, and overwriting
        // replaces only a dataset (here, Parquet parts), never a directory of other things.
        let overwrite = CreateOptions::default().overwrite(true);
        assert!(parts_staging(&dst, &options).is_err());
        let e = parts_staging(&dst, &overwrite).unwrap_err();
        assert!(e.to_string().contains("other than a dataset"), "{e}");
        std::fs::remove_dir(dst.join("x")).unwrap();
        std::fs::write(dst.join("part-00000.parquet"), b"").unwrap();
        assert!(parts_staging(&dst, &options).is_err());
        assert!(parts_staging(&dst, &overwrite).is_ok());
        discard_staging(&a, &options).unwrap();
        discard_staging(&a, &options).unwrap();
        assert!(!a.exists());
    }

    #[test]
    fn parts_written_as_one_are_published_under_their_place_among_all() {
        let dir = tempfile::tempdir().unwrap();
        let dst = dir.path().join("out");
        let options = CreateOptions::default();
        let staging = parts_staging(&dst, &options).unwrap();
        let mut parts = Vec::new();
        for task in [3u64, 7, 9] {
            let location = staged_part(&staging, task);
            let (mut sink, _) =
                crate::create_part(&location, Format::Ffrecord, 0, 1, &options).unwrap();
            let mut record = reel_core::Record::new();
            record.push_bytes("data", &[task as u8; 4]);
            sink.append(record.view()).unwrap();
            sink.finish().unwrap();
            parts.push(StagedPart { location, written_as: (0, 1) });
        }
        publish_parts(&staging, Format::Ffrecord, &parts, &dst, &options).unwrap();
        let mut names: Vec<_> = std::fs::read_dir(&dst)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(names, ["PART_00000.ffr", "PART_00001.ffr", "PART_00002.ffr"]);
        let source = crate::open(&dst).unwrap();
        let last = source.read(2).unwrap();
        assert_eq!(last.bytes("data").unwrap(), [9u8; 4]);
        assert!(!staging.exists());
        // A missing part fails before anything appears.
        let staging = parts_staging(&dir.path().join("again"), &options).unwrap();
        let missing = StagedPart { location: staged_part(&staging, 0), written_as: (0, 1) };
        assert!(
            publish_parts(
                &staging,
                Format::Ffrecord,
                &[missing],
                &dir.path().join("again"),
                &options
            )
            .is_err()
        );
        assert!(!dir.path().join("again").exists());
        discard_staging(&staging, &options).unwrap();
    }

    /// A worker still writing when its job is discarded leaves nothing behind: its part
    /// cannot re-create the staging location, and a part started after the discard is
    /// refused as called off.
    #[test]
    fn a_part_written_after_its_job_was_discarded_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let dst = dir.path().join("out");
        let options = CreateOptions::default();
        for format in [Format::Ffrecord, Format::Granular] {
            let staging = parts_staging(&dst, &options).unwrap();
            let location = staged_part(&staging, 4);
            assert_eq!(staging_of(&location), Some(staging.as_path()));
            let (mut sink, _) = crate::create_part(&location, format, 0, 1, &options).unwrap();
            let mut record = reel_core::Record::new();
            record.push_bytes("data", &[1u8; 4]);
            let appended = sink.append(record.view());
            discard_staging(&staging, &options).unwrap();
            let finished = appended.and_then(|_| sink.finish().map(|_| ()));
            drop(sink);
            assert!(finished.is_err(), "{format:?}: a part finished in a discarded staging");
            assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "{format:?}");
            let e = crate::create_part(&location, format, 0, 1, &options).err().unwrap();
            assert_eq!(e.kind(), reel_core::ErrorKind::Closed, "{format:?}: {e}");
            assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "{format:?}");
        }
        // A discard between the part's directory and its writer: writers that create their
        // directories (with parents) as they start re-create the staging location, and the
        // fence's second look removes it again.
        for format in [Format::Ffrecord, Format::Granular, Format::Gulp] {
            let staging = parts_staging(&dst, &options).unwrap();
            let location = staged_part(&staging, 5);
            let fence = LocalFence::enter(&staging, &location).unwrap();
            discard_staging(&staging, &options).unwrap();
            let created = crate::convert::create_local_part(&location, format, 0, 1, &options);
            // Gulp's chunk writer creates its directory itself (what the fence is for); the
            // others check their destination's directory first and fail.
            let recreates = format == Format::Gulp;
            assert!(!recreates || created.is_ok(), "{format:?}: the scenario did not happen");
            if let Ok((sink, _)) = created {
                let e = fence.check(sink).err().unwrap();
                assert_eq!(e.kind(), reel_core::ErrorKind::Closed, "{format:?}: {e}");
            }
            assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "{format:?}");
        }
        // Locations that are not parts of a job are not mistaken for one.
        assert_eq!(staging_of(&dir.path().join("tasks").join("000001")), None);
        assert_eq!(
            staging_of(Path::new("s3://b/.x.reel-staging-1/tasks/000002")).unwrap(),
            Path::new("s3://b/.x.reel-staging-1")
        );
    }
}
