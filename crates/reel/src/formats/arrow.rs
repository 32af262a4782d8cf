use std::collections::HashMap;
use std::path::{Path, PathBuf};

use reel_arrow::{ArrowFileSource, FileKind, ReadOptions};
use reel_core::{
    ConcatSource, Error, ErrorKind, FieldSpec, RecordSource, Result, SourceInfo, Store,
};

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

/// Whether the directory `path` is a table in parts of `kind`: the first of its files
/// whose format can be told (by its name, or by the first bytes of at most
/// [`MAX_FILES_SNIFFED`] files) is of `kind`, or its tree is too large to walk (a symbolic
/// link looping back up it), which opening it then reports instead of "cannot tell the
/// format".
fn holds_parts(store: &dyn Store, path: &Path, kind: FileKind) -> bool {
    // The first part found answers: a tree of many partitions need not be walked whole.
    let mut sniffed = 0;
    let mut answer = false;
    let walked = walk_parts(store, path, |file| {
        let told = match kind_by_name(&file.path) {
            Some(told) => Some(told),
            None if sniffed < MAX_FILES_SNIFFED => {
                sniffed += 1;
                reel_arrow::sniff_in(store, &file.path)
            }
            None => return false,
        };
        match told {
            Some(told) => {
                answer = told == kind;
                false
            }
            None => true,
        }
    });
    match walked {
        Ok(()) => answer,
        Err(e) => e.kind() == ErrorKind::Limit,
    }
}

/// Files whose first bytes recognising a directory reads at most, when their names do not
/// tell their format: a directory of something else (photos, say) is not read through
/// for a Parquet file among them.
const MAX_FILES_SNIFFED: usize = 16;

/// The format a part's name tells (`.parquet`, `.parq`, `.arrow`, `.feather`, `.ipc`, in
/// any case), or `None`: Hive names its parts `000000_0`, whose first bytes tell.
fn kind_by_name(path: &Path) -> Option<FileKind> {
    let ext = path.extension()?.to_str()?.to_ascii_lowercase();
    match ext.as_str() {
        "parquet" | "parq" => Some(FileKind::Parquet),
        "arrow" | "feather" | "ipc" => Some(FileKind::ArrowIpc),
        _ => None,
    }
}

/// What a table of parts of `kind` is called in messages.
fn kind_name(kind: FileKind) -> &'static str {
    match kind {
        FileKind::Parquet => "Parquet",
        FileKind::ArrowIpc => "Arrow IPC",
    }
}

/// One file of a directory of parts: where it is, its path relative to the dataset's root
/// (how messages name it), and the directory it lies in relative to the root
/// (`year=2024/lang=en`, `""` for the root), whose `key=value` names are its rows' Hive
/// partition columns.
struct PartFile {
    path: PathBuf,
    relative: String,
    dir: String,
}

/// The files of a directory of Parquet or IPC parts (what `reel convert --shard k/n` and
/// `reel::parts` publish, or Spark, Hive, Dask and Hugging Face write): every file in it
/// and in its subdirectories, at any depth up to
/// [`MAX_PARTITION_DEPTH`](reel_arrow::MAX_PARTITION_DEPTH), in the order of their paths
/// relative to it, as `pyarrow.dataset` lists them (`a/x` after `a.b/x`: the paths compare
/// as text). Names starting with `.` or `_` are left out, files and directories alike, as
/// pyarrow leaves them out: staging files, `_metadata`, `_SUCCESS`, Spark's `_temporary/`.
/// Every other file is a part, whatever its name (Hive's `000000_0`): one that is not a
/// file of `kind` (a `README.txt`) is refused, naming it, as pyarrow refuses it, rather
/// than left out — it could be a part whose first bytes are damaged.
fn part_files(store: &dyn Store, dir: &Path, kind: FileKind) -> Result<Vec<PartFile>> {
    let mut files: Vec<PartFile> = Vec::new();
    walk_parts(store, dir, |file| {
        files.push(file);
        true
    })?;
    if files.is_empty() {
        return Err(Error::new(
            ErrorKind::NotFound,
            format!(
                "the directory holds no {} part, nor do its subdirectories (files named \
                 with a leading _ or . are not parts)",
                kind_name(kind)
            ),
        )
        .with_path(dir));
    }
    files.sort_by(|a, b| a.relative.cmp(&b.relative));
    let mut strangers: Vec<(PathBuf, Option<FileKind>)> = Vec::new();
    files.retain(|file| {
        match kind_by_name(&file.path).or_else(|| reel_arrow::sniff_in(store, &file.path)) {
            Some(told) if told == kind => true,
            told => {
                strangers.push((file.path.clone(), told));
                false
            }
        }
    });
    if let Some((first, told)) = strangers.first() {
        let what = match told {
            Some(FileKind::Parquet) => "it is a Parquet file".to_string(),
            Some(FileKind::ArrowIpc) => "it is an Arrow IPC file".to_string(),
            None => "its first bytes are neither Parquet's nor Arrow's".to_string(),
        };
        let more = match strangers.len() - 1 {
            0 => String::new(),
            1 => "; 1 more file is not either".to_string(),
            n => format!("; {n} more files are not either"),
        };
        return Err(Error::corrupt(format!(
            "not a part of the {} table in {} ({what}): every file in a table's directories \
             is one of its parts, as pyarrow reads them; a file that is not must have a name \
             starting with _ or . to be left out{more}",
            kind_name(kind),
            dir.display()
        ))
        .with_path(first));
    }
    Ok(files)
}

/// Directories a walk of a table's tree lists at most. A partitioned table has one per
/// partition (a year of daily partitions has 365); a walk that reaches this many is a
/// tree that is not one table (a bucket's root), refused rather than listed for minutes.
const MAX_PART_DIRECTORIES: usize = 100_000;

/// Walks the tree under `dir` breadth first, handing each file to `found` until `found`
/// returns `false`. Names starting with `.` or `_` are not walked. A tree deeper than
/// [`MAX_PARTITION_DEPTH`](reel_arrow::MAX_PARTITION_DEPTH) or with more than
/// [`MAX_PART_DIRECTORIES`] directories is a [`ErrorKind::Limit`] error.
fn walk_parts(
    store: &dyn Store,
    dir: &Path,
    mut found: impl FnMut(PartFile) -> bool,
) -> Result<()> {
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
            if !found(PartFile { path: entry.path, relative: joined, dir: relative.clone() }) {
                return Ok(());
            }
        }
    }
    Ok(())
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
    let open_part = |k: usize, read: &ReadOptions| {
        let mut read = read.clone();
        read.partition = partitions.as_ref().map(|p| p[k].clone());
        ArrowFileSource::open_in(&options.store, &files[k].path, kind, &read)
    };
    if files.len() == 1 {
        return Ok(Box::new(open_part(0, &read)?));
    }
    // A selection names the table's columns; a part from before a column was added lacks
    // it, and its records lack that field (pyarrow gives them nulls).
    let lenient = ReadOptions { allow_missing_columns: true, ..read.clone() };
    let mut parts = Vec::with_capacity(files.len());
    for k in 0..files.len() {
        parts.push(open_part(k, &lenient)?);
    }
    let table = match table_columns(&parts) {
        Ok(table) => table,
        Err((k, j)) => {
            let describe = |part: &ArrowFileSource| {
                let fields = part.info().schema.clone().unwrap_or_default();
                fields.iter().map(|f| format!("{}: {}", f.name, f.kind)).collect::<Vec<_>>()
            };
            return Err(Error::schema(format!(
                "the parts are not one table: {} has the columns ({}) where {} has ({})",
                files[k].relative,
                describe(&parts[k]).join(", "),
                files[j].relative,
                describe(&parts[j]).join(", ")
            ))
            .with_format(format)
            .with_path(path));
        }
    };
    // A name selected or skipped that no part has is a typo: the first part's own open
    // says so, naming the columns it has.
    let nowhere = |name: &String| parts.iter().all(|p| p.missing_columns().contains(name));
    if parts[0].missing_columns().iter().any(nowhere) {
        open_part(0, &read)?;
    }
    // By name: a table may have thousands of columns, and a directory thousands of parts.
    let position: HashMap<&str, usize> =
        table.iter().enumerate().map(|(i, t)| (t.name.as_str(), i)).collect();
    let mut kept: Vec<Box<dyn RecordSource>> = Vec::with_capacity(parts.len());
    for (k, part) in parts.into_iter().enumerate() {
        let fields = part.info().schema.as_deref().unwrap_or_default();
        let Some(positions) = fields
            .iter()
            .map(|f| position.get(f.name.as_str()).copied().filter(|&i| alike(&table[i], f)))
            .collect::<Option<Vec<usize>>>()
        else {
            // Only a part without rows gets here (see `table_columns`): it adds nothing to
            // the table, whatever its column types (pandas writes an empty column of
            // objects as `null`, others as text).
            continue;
        };
        if positions.windows(2).all(|w| w[0] < w[1]) {
            kept.push(Box::new(part));
        } else {
            // Its records' fields come in the table's order, as pyarrow gives them.
            let mut sorted = positions;
            sorted.sort_unstable();
            let mut reordered = lenient.clone();
            reordered.columns = Some(sorted.iter().map(|&i| table[i].name.clone()).collect());
            kept.push(Box::new(open_part(k, &reordered)?));
        }
    }
    let info = parts_info(&kept, table);
    Ok(Box::new(ConcatSource::new(info, kept)?))
}

/// The columns of a table in parts, as `pyarrow.dataset` reads it with a unified schema:
/// every column any part with rows has, in the order the parts first have them, each of
/// the type its first part gives it (a column of `null`s takes the type of a later part).
/// The columns of one name must read alike ([`reel_arrow::read_alike`]: `string` and
/// `large_string`, `int32` and `int64`, …) in every part with rows, or be `null`, and
/// every part with rows must share a column with the parts before it (a part that shares
/// none is another table, not a newer version of this one); else the numbers of the part
/// that differs and of a part it differs from. Parts without rows count only when all are
/// so.
fn table_columns(parts: &[ArrowFileSource]) -> std::result::Result<Vec<FieldSpec>, (usize, usize)> {
    let any_rows = parts.iter().any(|p| p.len() > 0);
    // Each column, and the part it has its type from.
    let mut table: Vec<(FieldSpec, usize)> = Vec::new();
    let mut position: HashMap<String, usize> = HashMap::new();
    for (k, part) in parts.iter().enumerate() {
        if any_rows && part.len() == 0 {
            continue;
        }
        let fields = part.info().schema.as_deref().unwrap_or_default();
        let shares = fields.iter().any(|f| position.contains_key(&f.name));
        if let Some((_, first)) = table.first()
            && !fields.is_empty()
            && !shares
        {
            return Err((k, *first));
        }
        for field in fields {
            let Some(&i) = position.get(&field.name) else {
                position.insert(field.name.clone(), table.len());
                table.push((field.clone(), k));
                continue;
            };
            let (column, from) = &mut table[i];
            if !alike(column, field) {
                return Err((k, *from));
            }
            if is_null(&column.kind) {
                (*column, *from) = (field.clone(), k);
            }
        }
    }
    Ok(table.into_iter().map(|(t, _)| t).collect())
}

/// Whether a part's column `field` can be the table's `column` of the same name: of a
/// type that reads alike, or either a column of nulls only.
fn alike(column: &FieldSpec, field: &FieldSpec) -> bool {
    is_null(&column.kind)
        || is_null(&field.kind)
        || reel_arrow::read_alike(&column.kind, &field.kind)
}

/// Whether a declared column type is Arrow's `null` (a column of nulls only).
fn is_null(kind: &str) -> bool {
    kind == "Null"
}

/// What a directory of parts is: the first part's format and version, the table's
/// columns (see [`table_columns`]), every part's files and warnings, the number of parts,
/// and the other facts summed where they are counts.
fn parts_info(parts: &[Box<dyn RecordSource>], table: Vec<FieldSpec>) -> SourceInfo {
    let first = parts[0].info();
    let mut info = SourceInfo::new(first.format);
    info.version = first.version.clone();
    info.schema = Some(table);
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
    info
}

/// A Parquet or IPC writer for `create`.
pub(super) fn create(
    kind: FileKind,
    path: &Path,
    options: &crate::CreateOptions,
) -> Result<Box<dyn reel_core::RecordSink>> {
    Ok(Box::new(reel_arrow::ArrowSink::create(path, kind, options.schema.clone(), &options.arrow)?))
}
