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
        return part_files(store, path, FileKind::Parquet).is_ok();
    }
    reel_arrow::sniff_in(store, path) == Some(FileKind::Parquet)
}

fn sniff_ipc(store: &dyn Store, path: &Path) -> bool {
    if store.is_dir(path) {
        return part_files(store, path, FileKind::ArrowIpc).is_ok();
    }
    reel_arrow::sniff_in(store, path) == Some(FileKind::ArrowIpc)
}

/// The file name endings of `kind`'s files in a directory of parts.
fn part_extensions(kind: FileKind) -> &'static [&'static str] {
    match kind {
        FileKind::Parquet => &["parquet"],
        FileKind::ArrowIpc => &["arrow", "feather", "ipc"],
    }
}

/// The files of a directory of Parquet or IPC parts (what `reel convert --shard k/n` and
/// `reel::parts` publish, or Spark, Dask and Hugging Face write): the files directly in it
/// with `kind`'s extension, in the order of their names, as `pyarrow.dataset` lists them.
/// Names starting with `.` or `_` are left out, as pyarrow leaves them out: staging files,
/// `_metadata`, `_SUCCESS`. Subdirectories (Hive partitions) are not read.
fn part_files(store: &dyn Store, dir: &Path, kind: FileKind) -> Result<Vec<PathBuf>> {
    let extensions = part_extensions(kind);
    let mut files: Vec<PathBuf> = store
        .list(dir)?
        .into_iter()
        .filter(|entry| !entry.is_dir)
        .map(|entry| entry.path)
        .filter(|path| {
            let name = path.file_name().map(|n| n.to_string_lossy()).unwrap_or_default();
            let visible = !name.starts_with('.') && !name.starts_with('_');
            let ext = path.extension().map(|e| e.to_string_lossy()).unwrap_or_default();
            visible && extensions.contains(&&*ext)
        })
        .collect();
    if files.is_empty() {
        let names = extensions.iter().map(|e| format!("*.{e}")).collect::<Vec<_>>().join(", ");
        return Err(Error::new(
            ErrorKind::NotFound,
            format!("the directory holds no {names} file"),
        )
        .with_path(dir));
    }
    files.sort_by(|a, b| a.file_name().cmp(&b.file_name()));
    Ok(files)
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

/// One file, or a directory of parts read as one dataset, part after part.
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
    if let [only] = &files[..] {
        return Ok(Box::new(ArrowFileSource::open_in(&options.store, only, kind, &read)?));
    }
    let mut parts: Vec<Box<dyn RecordSource>> = Vec::with_capacity(files.len());
    for file in &files {
        parts.push(Box::new(ArrowFileSource::open_in(&options.store, file, kind, &read)?));
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
