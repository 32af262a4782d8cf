//! Writing a dataset to object storage: the format's own writer fills a local staging
//! directory, and on finish the files go up with the objects that make the dataset openable
//! last (data first, then indexes and metadata, the file that names the dataset last). A
//! writer that fails or is dropped uploads nothing; an upload that fails removes what it
//! wrote.

use std::path::{Path, PathBuf};

use reel_core::{Error, RecordRef, RecordSink, Result, SinkSummary};
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
    let old = existing_objects(&store, &key)?;
    if !old.is_empty() && !options.overwrite {
        return Err(Error::invalid_input(format!(
            "{} objects already exist there (the first: {}); replace them with overwrite (`--force` on the command line)",
            old.len(),
            old[0]
        ))
        .with_path(url.to_string()));
    }
    let root =
        std::env::var_os(STAGING_DIR_ENV).map(PathBuf::from).unwrap_or_else(std::env::temp_dir);
    let staging = tempfile::Builder::new()
        .prefix(".reel-upload-")
        .tempdir_in(&root)
        .map_err(|e| Error::io(e, "cannot create a staging directory").with_path(&root))?;
    let name = key.filename().unwrap_or("dataset").to_string();
    let local = staging.path().join(name);
    let inner = crate::formats::create(format, &local, options)?;
    Ok(Box::new(RemoteSink {
        inner,
        local,
        store,
        url: url.clone(),
        format,
        old,
        _staging: staging,
    }))
}

/// The objects at `key` (one object) or under it (a directory dataset).
fn existing_objects(store: &Store, key: &ObjectPath) -> Result<Vec<ObjectPath>> {
    let mut found: Vec<ObjectPath> = store.list(key)?.into_iter().map(|(k, _)| k).collect();
    match store.size(key) {
        Ok(_) => found.insert(0, key.clone()),
        Err(e) if e.kind() == reel_core::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    Ok(found)
}

struct RemoteSink {
    // Dropped first: an unfinished writer removes its own files before the staging
    // directory goes.
    inner: Box<dyn RecordSink>,
    local: PathBuf,
    store: Store,
    url: ObjectUrl,
    format: Format,
    old: Vec<ObjectPath>,
    _staging: tempfile::TempDir,
}

impl RecordSink for RemoteSink {
    fn append_ref(&mut self, record: RecordRef<'_>) -> Result<u64> {
        self.inner.append_ref(record)
    }

    fn records(&self) -> u64 {
        self.inner.records()
    }

    fn finish(&mut self) -> Result<SinkSummary> {
        let mut summary = self.inner.finish()?;
        let items = upload_items(&self.local, self.url.path(), self.format)?;
        // A bucket cannot swap many objects at once. A single object is replaced whole by
        // its PUT, so the old one stays readable until then; anything else is removed
        // first, so that old and new objects never mix into something that opens.
        let replaced_whole = matches!(&items[..], [one] if self.old.iter().all(|o| o == &one.key));
        if !replaced_whole {
            remove_dataset(&self.store, std::mem::take(&mut self.old))?;
        }
        self.store.upload_staged(&items)?;
        summary.paths = vec![PathBuf::from(self.url.to_string())];
        Ok(summary)
    }
}

/// Deletes the objects of a replaced dataset, those that make it openable first (its
/// `spec.json`, then indexes and metadata, then data in name order, so an OFRecord
/// directory loses `part-00000` before the rest): from the first deletion on, what is left
/// does not open.
fn remove_dataset(store: &Store, mut old: Vec<ObjectPath>) -> Result<()> {
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
    let mut items = Vec::with_capacity(files.len());
    for file in &files {
        let rel = file.strip_prefix(local).map_err(|_| {
            Error::invalid_input("a staged file outside the staging directory").with_path(file)
        })?;
        let rel_text = rel.to_str().ok_or_else(|| {
            Error::invalid_input("a file name that is not UTF-8 cannot be an object key")
                .with_path(file)
        })?;
        let mut child = key.clone();
        for part in rel_text.split(std::path::MAIN_SEPARATOR) {
            child = child.clone().join(part);
        }
        items.push(UploadItem {
            local: file.clone(),
            key: child,
            stage: upload_stage(format, rel_text),
        });
    }
    // Formats made only of data parts (FFRecord, OFRecord directories): the first part in
    // name order goes last, so a reader that lists and finds nothing at the start finds
    // no dataset while the rest is still on its way.
    if items.iter().all(|i| i.stage == 0) {
        if let Some(first) = items.first_mut() {
            first.stage = 1;
        }
    }
    Ok(items)
}

/// The stage of one file of a directory dataset: data first, then the indexes and
/// metadata without which the data does not open, and the file that names the dataset
/// (Granular's `spec.json`, the first shard's last of all).
fn upload_stage(format: Format, rel: &str) -> u8 {
    let name = rel.rsplit(std::path::MAIN_SEPARATOR).next().unwrap_or(rel);
    let nested = rel.contains(std::path::MAIN_SEPARATOR);
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

    #[test]
    fn metadata_goes_up_after_data() {
        let sep = std::path::MAIN_SEPARATOR;
        assert_eq!(upload_stage(Format::Gulp, "data_0.gulp"), 0);
        assert_eq!(upload_stage(Format::Gulp, "meta_0.gmeta"), 1);
        assert_eq!(upload_stage(Format::Granular, "data.bag"), 0);
        assert_eq!(upload_stage(Format::Granular, "data.idx"), 1);
        assert_eq!(upload_stage(Format::Granular, &format!("000001{sep}spec.json")), 2);
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
