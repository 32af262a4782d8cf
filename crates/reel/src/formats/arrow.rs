use std::path::{Path, PathBuf};

use reel_arrow::{ArrowFileSource, FileKind, ReadOptions};
use reel_core::{ConcatSource, Error, ErrorKind, RecordSource, Result, SourceInfo, Store};

use super::Handler;
use crate::OpenOptions;

pub(super) const PARQUET: Handler = Handler { sniff: sniff_parquet, open: open_parquet };
pub(super) const ARROW_IPC: Handler = Handler { sniff: sniff_ipc, open: open_ipc };

// Parquet and Arrow IPC files are read by arrow-rs's own readers, from the local file
// system or by ranges from any other store (`ArrowFileSource::open_in`).
fn sniff_parquet(store: &dyn Store, path: &Path) -> bool {
    if store.is_dir(path) {
        return holds_parts(store, path, FileKind::Parquet);
    }
    reel_arrow::sniff_in(store, path) == Some(FileKind::Parquet)
}

fn sniff_ipc(store: &dyn Store, path: &Path) -> bool {
    if store.is_dir(path) {
        return holds_parts(store, path, FileKind::ArrowIpc);
    }
    reel_arrow::sniff_in(store, path) == Some(FileKind::ArrowIpc)
}

/// Whether the directory `path` is a table in parts of `kind`: it holds such files, or its
/// tree is too large to walk (a symbolic link looping back up it), which opening it then
/// reports instead of "cannot tell the format".
fn holds_parts(store: &dyn Store, path: &Path, kind: FileKind) -> bool {
    // The first part found answers: a tree of many partitions need not be walked whole.
    match walk_parts(store, path, kind, |_, _| false) {
        Ok(found) => found,
        Err(e) => e.kind() == ErrorKind::Limit,
    }
}

/// The file name endings of `kind`'s files in a directory of parts.
fn part_extensions(kind: FileKind) -> &'static [&'static str] {
    match kind {
        FileKind::Parquet => &["parquet"],
        FileKind::ArrowIpc => &["arrow", "feather", "ipc"],
    }
}

/// One file of a directory of parts: where it is, and the directory it lies in relative
/// to the dataset's root (`year=2024/lang=en`, `""` for the root), whose `key=value`
/// names are its rows' Hive partition columns.
struct PartFile {
    path: PathBuf,
    dir: String,
}

/// The files of a directory of Parquet or IPC parts (what `reel convert --shard k/n` and
/// `reel::parts` publish, or Spark, Dask and Hugging Face write): the files with `kind`'s
/// extension in it and in its subdirectories, at any depth up to
/// [`MAX_PARTITION_DEPTH`](reel_arrow::MAX_PARTITION_DEPTH), in the order of their paths
/// relative to it, as `pyarrow.dataset` lists them (`a/x` after `a.b/x`: the paths compare
/// as text). Names starting with `.` or `_` are left out, files and directories alike, as
/// pyarrow leaves them out: staging files, `_metadata`, `_SUCCESS`, Spark's `_temporary/`.
fn part_files(store: &dyn Store, dir: &Path, kind: FileKind) -> Result<Vec<PartFile>> {
    let mut files: Vec<(String, PartFile)> = Vec::new();
    walk_parts(store, dir, kind, |relative, file| {
        files.push((relative, file));
        true
    })?;
    if files.is_empty() {
        let extensions = part_extensions(kind);
        let names = extensions.iter().map(|e| format!("*.{e}")).collect::<Vec<_>>().join(", ");
        return Err(Error::new(
            ErrorKind::NotFound,
            format!("the directory holds no {names} file (nor do its subdirectories)"),
        )
        .with_path(dir));
    }
    files.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(files.into_iter().map(|(_, file)| file).collect())
}

/// Directories a walk of a table's tree lists at most. A partitioned table has one per
/// partition (a year of daily partitions has 365); a walk that reaches this many is a
/// tree that is not one table (a bucket's root), refused rather than listed for minutes.
const MAX_PART_DIRECTORIES: usize = 100_000;

/// Walks the tree under `dir` breadth first, handing each file with `kind`'s extension to
/// `found` (with its path relative to `dir`, and where it lies) until `found` returns
/// `false`; answers whether any file was found. Names starting with `.` or `_` are not
/// walked. A tree deeper than [`MAX_PARTITION_DEPTH`](reel_arrow::MAX_PARTITION_DEPTH) or
/// with more than [`MAX_PART_DIRECTORIES`] directories is a [`ErrorKind::Limit`] error.
fn walk_parts(
    store: &dyn Store,
    dir: &Path,
    kind: FileKind,
    mut found: impl FnMut(String, PartFile) -> bool,
) -> Result<bool> {
    let extensions = part_extensions(kind);
    let mut any = false;
    let mut listed = 0usize;
    // Directories still to list, with their path relative to `dir` and their depth.
    let mut pending = std::collections::VecDeque::from([(dir.to_path_buf(), String::new(), 0)]);
    while let Some((at, relative, depth)) = pending.pop_front() {
        listed += 1;
        if listed > MAX_PART_DIRECTORIES {
            return Err(Error::new(
                ErrorKind::Limit,
                format!(
                    "more than {MAX_PART_DIRECTORIES} directories lie under it, which is not \
                     one table's tree"
                ),
            )
            .with_path(dir));
        }
        for entry in store.list(&at)? {
            let name = entry.name().into_owned();
            if name.starts_with('.') || name.starts_with('_') {
                continue;
            }
            let joined =
                if relative.is_empty() { name.clone() } else { format!("{relative}/{name}") };
            if entry.is_dir {
                if depth + 1 > reel_arrow::MAX_PARTITION_DEPTH {
                    return Err(Error::new(
                        ErrorKind::Limit,
                        format!(
                            "{joined:?} lies more than {} directories deep (a symbolic link \
                             to a directory above it?)",
                            reel_arrow::MAX_PARTITION_DEPTH
                        ),
                    )
                    .with_path(dir));
                }
                pending.push_back((entry.path, joined, depth + 1));
                continue;
            }
            let ext = entry.path.extension().map(|e| e.to_string_lossy()).unwrap_or_default();
            if extensions.contains(&&*ext) {
                any = true;
                if !found(joined, PartFile { path: entry.path, dir: relative.clone() }) {
                    return Ok(true);
                }
            }
        }
    }
    Ok(any)
}

// Parquet and IPC have their own page and body checksums where they have any; the reader
// options of the record formats do not apply. The column selection does: the columns left
// out are never decoded nor checked. Of the backend, only whether files may be mapped
// applies: a local IPC file is mapped under `auto` and `mmap`, and read otherwise.
fn read_options(options: &OpenOptions) -> ReadOptions {
    ReadOptions {
        columns: options.columns.clone(),
        skip_columns: options.skip_columns.clone(),
        map: crate::maps_ipc_files(options.backend.name()),
        ..ReadOptions::default()
    }
}

fn open_parquet(path: &Path, options: &OpenOptions) -> Result<Box<dyn RecordSource>> {
    open_file_or_parts(path, options, FileKind::Parquet)
}

fn open_ipc(path: &Path, options: &OpenOptions) -> Result<Box<dyn RecordSource>> {
    open_file_or_parts(path, options, FileKind::ArrowIpc)
}

/// One file, or a directory of parts read as one dataset, part after part, each part's
/// rows with the Hive partition columns of the directories it lies in.
fn open_file_or_parts(
    path: &Path,
    options: &OpenOptions,
    kind: FileKind,
) -> Result<Box<dyn RecordSource>> {
    let read = read_options(options);
    if !options.store.is_dir(path) {
        return Ok(Box::new(ArrowFileSource::open_in(&options.store, path, kind, &read)?));
    }
    let format = match kind {
        FileKind::Parquet => "parquet",
        FileKind::ArrowIpc => "arrow",
    };
    let files = part_files(&*options.store, path, kind).map_err(|e| e.with_format(format))?;
    let dirs: Vec<&str> = files.iter().map(|f| f.dir.as_str()).collect();
    let partitions = reel_arrow::hive_partition_columns(&dirs)
        .map_err(|e| e.with_format(format).with_path(path))?;
    let open_part = |k: usize| {
        let mut read = read.clone();
        read.partition = partitions.as_ref().map(|p| p[k].clone());
        ArrowFileSource::open_in(&options.store, &files[k].path, kind, &read)
    };
    if files.len() == 1 {
        return Ok(Box::new(open_part(0)?));
    }
    let mut parts: Vec<Box<dyn RecordSource>> = Vec::with_capacity(files.len());
    for k in 0..files.len() {
        parts.push(Box::new(open_part(k)?));
    }
    let info = parts_info(path, &parts)?;
    Ok(Box::new(ConcatSource::new(info, parts)?))
}

/// What a directory of parts is: the first part's format, version and fields (every part
/// must have the same fields: the parts of one table), every part's files and warnings,
/// the number of parts, and the other facts summed where they are counts.
fn parts_info(dir: &Path, parts: &[Box<dyn RecordSource>]) -> Result<SourceInfo> {
    let first = parts[0].info();
    for part in &parts[1..] {
        if part.info().schema != first.schema {
            let describe = |info: &SourceInfo| match &info.schema {
                Some(fields) => fields
                    .iter()
                    .map(|f| format!("{}: {}", f.name, f.kind))
                    .collect::<Vec<_>>()
                    .join(", "),
                None => "no declared fields".to_string(),
            };
            let name = |info: &SourceInfo| {
                info.paths
                    .first()
                    .and_then(|p| p.file_name())
                    .map_or_else(|| "a part".to_string(), |n| n.to_string_lossy().into_owned())
            };
            return Err(Error::schema(format!(
                "the parts are not one table: {} has the columns ({}) where {} has ({})",
                name(part.info()),
                describe(part.info()),
                name(first),
                describe(first)
            ))
            .with_format(first.format)
            .with_path(dir));
        }
    }
    let mut info = SourceInfo::new(first.format);
    info.version = first.version.clone();
    info.schema = first.schema.clone();
    info.paths = ConcatSource::paths_of(parts);
    info.warnings = parts.iter().flat_map(|p| p.info().warnings.iter().cloned()).collect();
    info.facts.push(("parts".into(), parts.len().to_string()));
    for (name, value) in &first.facts {
        let counts: Option<Vec<u64>> = parts
            .iter()
            .map(|p| p.info().facts.iter().find(|(n, _)| n == name)?.1.parse().ok())
            .collect();
        let value = match counts {
            Some(counts) => counts.iter().sum::<u64>().to_string(),
            None => value.clone(),
        };
        info.facts.push((name.clone(), value));
    }
    Ok(info)
}

/// A Parquet or IPC writer for `create`.
pub(super) fn create(
    kind: FileKind,
    path: &Path,
    options: &crate::CreateOptions,
) -> Result<Box<dyn reel_core::RecordSink>> {
    Ok(Box::new(reel_arrow::ArrowSink::create(path, kind, options.schema.clone(), &options.arrow)?))
}
