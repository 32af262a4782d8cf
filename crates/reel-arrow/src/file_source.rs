//! Any Parquet or Arrow IPC file as a [`RecordSource`]: each row a record, each column a
//! field (see [`crate::decode`] for how types map).

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReader,
    ParquetRecordBatchReaderBuilder, RowSelection, RowSelector,
};
use reel_core::{
    Error, ErrorKind, FieldSpec, Record, RecordBatch as ReelBatch, RecordOut, RecordSource, Result,
    SourceInfo, Store, StoreRef,
};

use crate::decode::{Column, catch_panics, columns_of, decode_row};
use crate::input::FileInput;
use crate::ipc_file::{BatchesAhead, IpcFile, ipc_corrupt, ipc_layout};
use crate::write::FileKind;

/// How to read a Parquet or Arrow IPC file.
#[derive(Clone, Debug)]
pub struct ReadOptions {
    /// Only these columns, in this order (default: all). Columns not selected are never
    /// decoded nor checked for a value type, so a file with a column reel has no value for
    /// (a decimal, a union) opens when that column is left out. (The stated lengths of an
    /// LZ4-compressed IPC batch are checked for every column: a damaged one in a column
    /// left out still refuses the batch.)
    pub columns: Option<Vec<String>>,
    /// Leave these columns out (of [`columns`](Self::columns), or of all). A name the file
    /// has no column for is an error naming the columns it has.
    pub skip_columns: Vec<String>,
    /// Rows decoded at a time at most (default 1024). Memory holds one such window of the
    /// selected columns (for IPC, one of the file's record batches). Parquet windows hold
    /// fewer rows where rows are large, so that a window stays near [`WINDOW_BYTES`].
    pub window_rows: usize,
    /// Map a local Arrow IPC file into memory (default `true`) and decode its batches
    /// where they lie: a random read then costs the header of its batch (and the
    /// decompression of a compressed one) instead of reading the whole batch, and memory
    /// holds no copy of it, only the mapped pages the kernel may drop. A file another
    /// process truncates while it is mapped crashes the process (SIGBUS), as with the mmap
    /// backend; `false` reads each batch into memory instead. Objects in a store are always
    /// read; Parquet files are unaffected.
    pub map: bool,
    /// Values every row of the file has as fields after the file's own columns: one row,
    /// its columns named and typed as the fields are (the Hive partition keys of the
    /// directories the file lies in, from [`hive_partition_columns`](crate::hive_partition_columns)).
    /// [`columns`](Self::columns) and [`skip_columns`](Self::skip_columns) select among
    /// them as among the file's columns: in the order `columns` names them, or after the
    /// file's columns, in their order, when it names none.
    /// A name the file has a column of too is a [`Schema`](ErrorKind::Schema) error.
    pub partition: Option<RecordBatch>,
    /// Names in [`columns`](Self::columns) and [`skip_columns`](Self::skip_columns) that
    /// neither the file nor its partition keys have are left out instead of refused
    /// (default `false`), and listed by [`ArrowFileSource::missing_columns`]. For the parts
    /// of one table, where a column added later is missing from the older parts: a
    /// selection names the table's columns, and a part without one gives records without
    /// that field.
    pub allow_missing_columns: bool,
    /// An Arrow IPC file in object storage: a batched read reads the rows it wants of a
    /// record batch alone, without the rest of the batch (in three batched reads of the
    /// store: the batches' headers, then each row's offsets, then its values), when it
    /// wants at most one row in 8 of the batch and those rows lie at least this many bytes
    /// apart on average (default 2 MiB); otherwise it fetches the batch whole. Closer rows
    /// would be read through their batch anyway, since a store merges ranges that lie
    /// closer than its coalescing gap (1 MiB by default) into one request. Only for
    /// uncompressed batches whose selected columns are bytes, text, integers or floats.
    /// `u64::MAX` always fetches whole batches.
    pub row_read_spacing: u64,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            columns: None,
            skip_columns: Vec::new(),
            window_rows: 1024,
            map: true,
            partition: None,
            allow_missing_columns: false,
            row_read_spacing: 2 << 20,
        }
    }
}

impl ReadOptions {
    /// These options without the selected and skipped names that neither the file (`has`)
    /// nor the partition keys have, and those names, when
    /// [`allow_missing_columns`](Self::allow_missing_columns) asks for it; else as they are.
    fn narrowed(&self, has: impl Fn(&str) -> bool) -> (ReadOptions, Vec<String>) {
        let mut narrowed = self.clone();
        let mut missing = Vec::new();
        if self.allow_missing_columns {
            let keys = partition_keys(self);
            let mut kept = |name: &String| {
                let here = has(name) || keys.contains(name);
                if !here && !missing.contains(name) {
                    missing.push(name.clone());
                }
                here
            };
            if let Some(columns) = &mut narrowed.columns {
                columns.retain(&mut kept);
            }
            narrowed.skip_columns.retain(kept);
        }
        (narrowed, missing)
    }
}

/// The partition columns of a file: the one-row batch of their values, and how each
/// selected one decodes.
struct Partition {
    values: RecordBatch,
    columns: Vec<Column>,
    /// The selected columns' fields, for the source's schema.
    specs: Vec<FieldSpec>,
}

impl Partition {
    /// The partition columns `options` selects, and `options` with its selection narrowed
    /// to the file's own columns; refused when a partition key names a column of the file
    /// (`has_column`), which would make two values for one field.
    fn split(
        options: &ReadOptions,
        has_column: impl Fn(&str) -> bool,
        path: &Path,
    ) -> Result<(Option<Partition>, ReadOptions)> {
        let Some(values) = &options.partition else { return Ok((None, options.clone())) };
        let schema = values.schema();
        let is_key = |name: &str| schema.index_of(name).is_ok();
        if let Some(clash) = schema.fields().iter().find(|f| has_column(f.name())) {
            return Err(Error::schema(format!(
                "{:?} is both a column of the file and a partition key of the directory it \
                 lies in ({}=…); rename the directory or the column",
                clash.name(),
                clash.name()
            ))
            .with_path(path));
        }
        let mut own = options.clone();
        own.partition = None;
        own.columns =
            options.columns.as_ref().map(|c| c.iter().filter(|n| !is_key(n)).cloned().collect());
        own.skip_columns.retain(|n| !is_key(n));
        let skipped = |name: &str| options.skip_columns.iter().any(|n| n == name);
        let mut order: Vec<usize> = match &options.columns {
            Some(wanted) => wanted.iter().filter_map(|n| schema.index_of(n).ok()).collect(),
            None => (0..schema.fields().len()).collect(),
        };
        order.retain(|&i| !skipped(schema.field(i).name()));
        let (columns, specs) = columns_of(&schema, &order).map_err(|e| e.with_path(path))?;
        Ok((Some(Partition { values: values.clone(), columns, specs }), own))
    }
}

/// The names of the partition keys `options` gives the file's rows, for messages.
fn partition_keys(options: &ReadOptions) -> Vec<String> {
    options.partition.as_ref().map_or_else(Vec::new, |values| {
        values.schema().fields().iter().map(|f| f.name().clone()).collect()
    })
}

/// Bytes of decoded rows a Parquet window aims at: rows per window are this divided by the
/// largest row size of the file's row groups (their uncompressed size over their rows, from
/// the footer), at least one row. 300 rows of 1 MiB took 728 MiB at the fixed 1024 rows a
/// window; the batch reader and the Parquet writer keep 16 MiB batches and row groups too.
pub const WINDOW_BYTES: usize = 16 << 20;

/// Bytes [`sniff`] looks at: enough for `PAR1`, `ARROW1`, and the schema message an Arrow
/// IPC stream starts with (a few hundred bytes for a table of a few columns; a longer one
/// is told by its marker and length).
const SNIFF_BYTES: usize = 4096;

/// Whether the file at `path` starts like a Parquet file (`PAR1`) or an Arrow IPC file
/// (`ARROW1`) or stream (its schema message; read as IPC too).
pub fn sniff(path: &Path) -> Option<FileKind> {
    let f = File::open(path).ok()?;
    if !f.metadata().ok()?.is_file() {
        return None;
    }
    let mut head = Vec::with_capacity(SNIFF_BYTES);
    f.take(SNIFF_BYTES as u64).read_to_end(&mut head).ok()?;
    kind_of_head(&head)
}

/// [`sniff`] for a file in `store` (an object store, say): its first bytes, one ranged
/// read.
pub fn sniff_in(store: &dyn Store, path: &Path) -> Option<FileKind> {
    if store.name() == "file" {
        return sniff(path);
    }
    if !store.is_file(path) {
        return None;
    }
    let size = store.size(path).ok()?;
    let head = store.read_range(path, 0, size.min(SNIFF_BYTES as u64)).ok()?;
    kind_of_head(&head)
}

/// The kind of file whose first bytes are `head`.
fn kind_of_head(head: &[u8]) -> Option<FileKind> {
    if head.starts_with(b"PAR1") {
        Some(FileKind::Parquet)
    } else if head.starts_with(b"ARROW1") || crate::ipc_file::is_ipc_stream(head) {
        Some(FileKind::ArrowIpc)
    } else {
        None
    }
}

/// The rows currently decoded: `batch` holds rows `start..start + batch.num_rows()`.
struct Window {
    start: u64,
    batch: RecordBatch,
    /// When the batch holds only some rows of its window (an IPC batch read a few rows at
    /// a time from object storage), those rows, counted from `start`, ascending.
    rows: Option<Vec<usize>>,
}

impl Window {
    /// The window's row of record `index`, if it holds it.
    fn row(&self, index: u64) -> Option<usize> {
        let row = usize::try_from(index.checked_sub(self.start)?).ok()?;
        match &self.rows {
            Some(rows) => rows.binary_search(&row).ok(),
            None => (row < self.batch.num_rows()).then_some(row),
        }
    }
}

// One cursor per source: the size of the larger variant costs nothing worth a box.
#[allow(clippy::large_enum_variant)]
enum Cursor {
    Parquet {
        file: FileInput,
        meta: ArrowReaderMetadata,
        mask: ProjectionMask,
        group_starts: Vec<u64>,
        /// Whether a selected column is repeated (has lists), so that rows are decoded
        /// rather than skipped (see `seek_unguarded`).
        repeated: bool,
        /// An open reader and the row it returns next.
        reader: Option<(ParquetRecordBatchReader, u64)>,
    },
    Ipc {
        file: Box<IpcFile>,
        batch_starts: Vec<u64>,
        /// The batches the batched read under way decodes next (in object storage).
        ahead: BatchesAhead,
    },
}

struct State {
    cursor: Cursor,
    window: Option<Window>,
}

/// A Parquet or Arrow IPC file read as records.
///
/// Sequential reads (conversion, iteration) decode each window of rows once; a random
/// read outside the current window decodes from the start of its row group (Parquet) or
/// record batch (IPC). The source is shared between threads behind a lock.
pub struct ArrowFileSource {
    info: SourceInfo,
    path: PathBuf,
    len: u64,
    window_rows: usize,
    /// Field name, column index in the decoded batches, plan.
    columns: Vec<Column>,
    /// The selected partition columns, whose values every row has after its own.
    partition: Option<Partition>,
    /// Where each field of a record comes from, in order, when the selection puts a
    /// partition key before a column of the file (`columns=["year", "id"]`); `None` when
    /// the keys follow the file's columns, decoded as two runs.
    interleaved: Option<Vec<FieldFrom>>,
    /// Selected or skipped names the file has no column for (only with
    /// [`ReadOptions::allow_missing_columns`]).
    missing: Vec<String>,
    state: Mutex<State>,
}

/// The source of one field of a record: a column of the file, or a partition key (their
/// positions in [`ArrowFileSource::columns`] and [`Partition::columns`]).
#[derive(Clone, Copy, Debug, PartialEq)]
enum FieldFrom {
    File(usize),
    Key(usize),
}

/// The order of a record's fields when `options` selects partition keys among the file's
/// columns in another order than columns first, keys after (see
/// [`ArrowFileSource::interleaved`]); `files` is how many of the file's columns it selects.
fn interleaving(
    options: &ReadOptions,
    partition: Option<&Partition>,
    files: usize,
) -> Option<Vec<FieldFrom>> {
    let (wanted, partition) = (options.columns.as_ref()?, partition?);
    let is_key = |name: &str| partition.specs.iter().any(|s| s.name == name);
    let (mut file, mut key) = (0, 0);
    let mut from = Vec::with_capacity(wanted.len());
    for name in wanted.iter().filter(|n| !options.skip_columns.contains(n)) {
        if is_key(name) {
            from.push(FieldFrom::Key(key));
            key += 1;
        } else {
            from.push(FieldFrom::File(file));
            file += 1;
        }
    }
    let keys_trail = from
        .iter()
        .skip_while(|f| matches!(f, FieldFrom::File(_)))
        .all(|f| matches!(f, FieldFrom::Key(_)));
    (!keys_trail && file == files && key == partition.columns.len()).then_some(from)
}

fn pq_err(e: impl std::fmt::Display, path: &Path) -> Error {
    Error::corrupt(format!("Parquet: {e}")).with_format("parquet").with_path(path)
}

/// Indices in `schema` of the columns `options` selects (`columns` in their order, or all,
/// less `skip_columns`), or an error naming a column neither the file nor its
/// `partition_keys` have. (`options` is narrowed to the file's own columns already: a
/// partition key is never looked up here, only listed as a name the user could have meant.)
fn projection(
    schema: &arrow_schema::Schema,
    options: &ReadOptions,
    partition_keys: &[String],
    path: &Path,
) -> Result<Vec<usize>> {
    let index_of = |name: &str| {
        schema.index_of(name).map_err(|_| {
            let have: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
            let keys = if partition_keys.is_empty() {
                String::new()
            } else {
                format!(", and its directories the partition keys {}", partition_keys.join(", "))
            };
            Error::invalid_input(format!(
                "no column {name:?} (the file has {}{keys})",
                have.join(", ")
            ))
            .with_path(path)
        })
    };
    let mut out = match &options.columns {
        Some(wanted) => {
            // A name two columns have selects neither: the first one would be a guess (and
            // pyarrow refuses it too). Leaving such a name out (`skip_columns`) leaves both.
            let mut seen = std::collections::HashSet::with_capacity(schema.fields().len());
            let twice: std::collections::HashSet<&str> = schema
                .fields()
                .iter()
                .map(|f| f.name().as_str())
                .filter(|name| !seen.insert(*name))
                .collect();
            if let Some(name) = wanted.iter().find(|n| twice.contains(n.as_str())) {
                return Err(Error::unsupported(format!(
                    "the table has more than one column named {name:?}, so selecting it by \
                     name cannot tell which is meant"
                ))
                .with_path(path));
            }
            wanted.iter().map(|n| index_of(n)).collect::<Result<Vec<_>>>()?
        }
        None => (0..schema.fields().len()).collect(),
    };
    for name in &options.skip_columns {
        index_of(name)?;
    }
    out.retain(|&i| !options.skip_columns.iter().any(|n| n == schema.field(i).name()));
    Ok(out)
}

/// Runs a step of the Parquet or IPC decoders, which can panic on damaged input (e.g. a
/// page that names a dictionary the column chunk does not have): a panic becomes an
/// [`ErrorKind::Corrupt`] error.
fn guarded<T>(path: &Path, step: impl FnOnce() -> Result<T>) -> Result<T> {
    catch_panics(step).map_err(|e| e.with_path(path))
}

impl ArrowFileSource {
    /// Opens `path`, telling Parquet from Arrow IPC by its first bytes.
    pub fn open(path: impl AsRef<Path>, options: &ReadOptions) -> Result<Self> {
        let path = path.as_ref();
        match sniff(path) {
            Some(kind) => Self::open_as(path, kind, options),
            None => Err(Error::unsupported("not a Parquet or Arrow IPC file").with_path(path)),
        }
    }

    /// Opens `path` as `kind`.
    pub fn open_as(path: impl AsRef<Path>, kind: FileKind, options: &ReadOptions) -> Result<Self> {
        Self::open_in(&reel_core::local_store(), path, kind, options)
    }

    /// Opens `path` in `store` (an object store, say) as `kind`. Outside the local file
    /// system the file is read by ranges: its footer and metadata, then each column chunk
    /// (Parquet) or record batch (IPC) a read needs, in requests of up to 1 MiB.
    pub fn open_in(
        store: &StoreRef,
        path: impl AsRef<Path>,
        kind: FileKind,
        options: &ReadOptions,
    ) -> Result<Self> {
        let path = path.as_ref();
        guarded(path, || Self::open_unguarded(store, path, kind, options))
    }

    fn open_unguarded(
        store: &StoreRef,
        path: &Path,
        kind: FileKind,
        options: &ReadOptions,
    ) -> Result<Self> {
        let file = FileInput::open(store, path)?;
        let mut info = SourceInfo::new(match kind {
            FileKind::Parquet => "parquet",
            FileKind::ArrowIpc => "arrow",
        });
        info.paths = vec![path.to_path_buf()];
        let mut window_rows = options.window_rows.max(1);
        let keys = partition_keys(options);
        let (cursor, schema, len, order, partition, narrowed) = match kind {
            FileKind::Parquet => {
                let meta = ArrowReaderMetadata::load(&file, ArrowReaderOptions::new())
                    .map_err(|e| file.failure_or(|| pq_err(e, path)).with_path(path))?;
                let schema = meta.schema().clone();
                let (narrowed, missing) = options.narrowed(|n| schema.index_of(n).is_ok());
                let (partition, options) =
                    Partition::split(&narrowed, |n| schema.index_of(n).is_ok(), path)?;
                let order = projection(&schema, &options, &keys, path)?;
                let mut sorted = order.clone();
                sorted.sort_unstable();
                let mask = ProjectionMask::roots(meta.parquet_schema(), sorted.iter().copied());
                let leaves = meta.parquet_schema().columns();
                let repeated = leaves
                    .iter()
                    .enumerate()
                    .any(|(i, c)| mask.leaf_included(i) && c.max_rep_level() > 0);
                let mut group_starts = Vec::new();
                let mut total = 0u64;
                let mut row_bytes = 1u64;
                for g in meta.metadata().row_groups() {
                    if let (Ok(size), Ok(rows)) =
                        (u64::try_from(g.total_byte_size()), u64::try_from(g.num_rows()))
                        && rows > 0
                    {
                        row_bytes = row_bytes.max(size.div_ceil(rows));
                    }
                    group_starts.push(total);
                    let rows = u64::try_from(g.num_rows()).map_err(|_| {
                        pq_err(
                            parquet::errors::ParquetError::General("negative row count".into()),
                            path,
                        )
                    })?;
                    total = total
                        .checked_add(rows)
                        .ok_or_else(|| Error::corrupt("row count overflows").with_path(path))?;
                }
                let fm = meta.metadata().file_metadata();
                info.version = Some(format!("Parquet {}", fm.version()));
                info.facts.push(("row groups".into(), group_starts.len().to_string()));
                if let Some(by) = fm.created_by() {
                    info.facts.push(("created by".into(), by.to_string()));
                }
                // Decoded batches hold the selected columns in file order.
                let order: Vec<usize> =
                    order.iter().map(|i| sorted.iter().position(|s| s == i).unwrap_or(0)).collect();
                let projected: Vec<usize> = sorted.clone();
                let fields = projected.iter().map(|&i| schema.field(i).clone()).collect::<Vec<_>>();
                let pschema = Arc::new(arrow_schema::Schema::new(fields));
                // Every column's bytes count, selected or not: an upper bound, cheaper than
                // mapping the selection to its leaf columns.
                let fit = usize::try_from(WINDOW_BYTES as u64 / row_bytes).unwrap_or(usize::MAX);
                window_rows = window_rows.min(fit.max(1));
                (
                    Cursor::Parquet { file, meta, mask, group_starts, repeated, reader: None },
                    pschema,
                    total,
                    order,
                    partition,
                    (narrowed, missing),
                )
            }
            FileKind::ArrowIpc => {
                // Rows per batch come from the batches' message headers (read and checked
                // before arrow-rs reads anything the footer points at), not from decoding
                // every batch, which held the largest batch in memory only to count it.
                let layout = ipc_layout(&file, path)?;
                let (narrowed, missing) = options.narrowed(|n| layout.schema.index_of(n).is_ok());
                let (partition, options) =
                    Partition::split(&narrowed, |n| layout.schema.index_of(n).is_ok(), path)?;
                let order = projection(&layout.schema, &options, &keys, path)?;
                let ipc = IpcFile::open(file, path, &layout, order, &options)?;
                let mut batch_starts = Vec::with_capacity(layout.batch_rows.len());
                let mut total = 0u64;
                for &rows in &layout.batch_rows {
                    batch_starts.push(total);
                    total = total.checked_add(rows).ok_or_else(|| {
                        ipc_corrupt(path, "the record batches' row counts overflow")
                    })?;
                }
                info.facts.push(("record batches".into(), batch_starts.len().to_string()));
                if let Some(codec) = layout.compression {
                    // A random read decompresses the whole of each batch it touches (every
                    // buffer is compressed as one piece), which users of `to_feather`'s
                    // default LZ4 meet as reads hundreds of times slower than uncompressed.
                    let largest = layout.batch_rows.iter().max().copied().unwrap_or(0);
                    info.facts.push((
                        "compression".into(),
                        format!(
                            "{codec}: a random read decompresses each record batch it touches \
                             whole (up to {largest} rows); for random access write the file \
                             uncompressed (reel convert --to arrow)"
                        ),
                    ));
                }
                let schema = ipc.schema();
                let n = schema.fields().len();
                let cursor = Cursor::Ipc {
                    file: Box::new(ipc),
                    batch_starts,
                    ahead: BatchesAhead::default(),
                };
                (cursor, schema, total, (0..n).collect(), partition, (narrowed, missing))
            }
        };
        let (options, missing) = narrowed;
        let (columns, mut specs) = columns_of(&schema, &order).map_err(|e| e.with_path(path))?;
        let interleaved = interleaving(&options, partition.as_ref(), columns.len());
        if let Some(partition) = &partition {
            match &interleaved {
                Some(from) => {
                    let own = std::mem::take(&mut specs);
                    specs = from
                        .iter()
                        .map(|f| match *f {
                            FieldFrom::File(i) => own[i].clone(),
                            FieldFrom::Key(k) => partition.specs[k].clone(),
                        })
                        .collect();
                }
                None => specs.extend(partition.specs.iter().cloned()),
            }
        }
        info.schema = Some(specs);
        Ok(ArrowFileSource {
            info,
            path: path.to_path_buf(),
            len,
            window_rows,
            columns,
            partition,
            interleaved,
            missing,
            state: Mutex::new(State { cursor, window: None }),
        })
    }

    /// The names [`ReadOptions::columns`] or [`ReadOptions::skip_columns`] gave that the
    /// file has no column (nor partition key) for, left out because
    /// [`ReadOptions::allow_missing_columns`] allowed it.
    pub fn missing_columns(&self) -> &[String] {
        &self.missing
    }

    /// Makes the window hold row `index`. After a failure the next read starts afresh.
    fn seek(&self, state: &mut State, index: u64) -> Result<()> {
        let result = guarded(&self.path, || self.seek_unguarded(state, index));
        if result.is_err() {
            state.window = None;
            if let Cursor::Parquet { reader, .. } = &mut state.cursor {
                *reader = None;
            }
        }
        result
    }

    fn seek_unguarded(&self, state: &mut State, index: u64) -> Result<()> {
        if state.window.as_ref().is_some_and(|w| w.row(index).is_some()) {
            return Ok(());
        }
        let path = &self.path;
        match &mut state.cursor {
            Cursor::Parquet { file, meta, mask, group_starts, repeated, reader } => {
                // Keep reading forward when the row is near; otherwise start a reader at it.
                let near = matches!(reader, Some((_, next)) if *next <= index
                    && index - *next < 4 * self.window_rows as u64);
                if !near {
                    let g = group_starts.partition_point(|&s| s <= index).saturating_sub(1);
                    let f = file.try_clone().map_err(|e| e.with_path(path))?;
                    let mut b = ParquetRecordBatchReaderBuilder::new_with_metadata(f, meta.clone())
                        .with_projection(mask.clone())
                        .with_row_groups((g..group_starts.len()).collect())
                        .with_batch_size(self.window_rows);
                    // The rows before the one wanted are skipped with a row selection, or,
                    // where a selected column is repeated (a list), decoded window by
                    // window: parquet's skip of repetition levels looped for good on a
                    // damaged list column (a fuzzer found it; decoding the same rows fails
                    // at once), and a read must never hang. Decoding costs more: random
                    // reads of a flat file of 16 MiB row groups ran 4x faster skipping.
                    let mut start = group_starts[g];
                    if !*repeated && index > start {
                        let (skip, rest) = (index - start, self.len - start);
                        b = b.with_row_selection(RowSelection::from(vec![
                            RowSelector::skip(skip as usize),
                            RowSelector::select((rest - skip) as usize),
                        ]));
                        start = index;
                    }
                    let built = b.build().map_err(|e| file.failure_or(|| pq_err(e, path)));
                    *reader = Some((built.map_err(|e| e.with_path(path))?, start));
                }
                let Some((r, next)) = reader else { return Err(Error::corrupt("no reader")) };
                loop {
                    let batch = r
                        .next()
                        .transpose()
                        .map_err(|e| file.failure_or(|| pq_err(e, path)).with_path(path))?
                        .ok_or_else(|| {
                            Error::corrupt("Parquet file has fewer rows than its footer says")
                                .with_path(path)
                        })?;
                    let start = *next;
                    *next += batch.num_rows() as u64;
                    if index < *next {
                        state.window = Some(Window { start, batch, rows: None });
                        return Ok(());
                    }
                }
            }
            Cursor::Ipc { file, batch_starts, ahead } => {
                // Only the batch holding the row is read (its message and whole body, every
                // column's buffers): memory per read is bounded by that batch, and by
                // AHEAD_BYTES more when a batched read fetches batches together.
                let b = batch_starts.partition_point(|&s| s <= index).saturating_sub(1);
                if let Some((rows, batch)) = ahead.take_rows(b) {
                    state.window = Some(Window { start: batch_starts[b], batch, rows: Some(rows) });
                    return Ok(());
                }
                let batch = file.read_batch_ahead(b, ahead, path)?;
                // The length the header gave at open is the one the decoder builds the
                // batch with; a difference means the file changed since it was opened.
                let rows = batch_len(batch_starts, self.len, b);
                if batch.num_rows() as u64 != rows {
                    return Err(ipc_corrupt(
                        path,
                        &format!(
                            "record batch {b} has {} rows, but its header said {rows} when \
                             the file was opened",
                            batch.num_rows(),
                        ),
                    ));
                }
                state.window = Some(Window { start: batch_starts[b], batch, rows: None });
                Ok(())
            }
        }
    }

    /// Decodes row `index` (which the window holds) into `out`.
    fn decode(&self, window: &Window, index: u64, out: &mut RecordOut<'_>) -> Result<()> {
        let row = window.row(index).ok_or_else(|| Error::corrupt("the window lacks the row"))?;
        guarded(&self.path, || {
            if let (Some(from), Some(p)) = (&self.interleaved, &self.partition) {
                for f in from {
                    match *f {
                        FieldFrom::File(i) => {
                            decode_row(&self.columns[i..=i], &window.batch, row, out)?
                        }
                        FieldFrom::Key(k) => decode_row(&p.columns[k..=k], &p.values, 0, out)?,
                    }
                }
                return Ok(());
            }
            decode_row(&self.columns, &window.batch, row, out)?;
            match &self.partition {
                Some(p) => decode_row(&p.columns, &p.values, 0, out),
                None => Ok(()),
            }
        })
    }

    fn lock(&self) -> Result<std::sync::MutexGuard<'_, State>> {
        self.state.lock().map_err(|_| Error::new(ErrorKind::Closed, "an earlier read panicked"))
    }
}

/// The rows of record batch `b` of an IPC file whose batches start at `batch_starts` and
/// which has `len` rows in all.
fn batch_len(batch_starts: &[u64], len: u64, b: usize) -> u64 {
    let start = batch_starts.get(b).copied().unwrap_or(len);
    batch_starts.get(b + 1).copied().unwrap_or(len).saturating_sub(start)
}

impl RecordSource for ArrowFileSource {
    fn info(&self) -> &SourceInfo {
        &self.info
    }

    fn len(&self) -> u64 {
        self.len
    }

    fn read_into(&self, index: u64, out: &mut Record) -> Result<()> {
        out.clear();
        if index >= self.len {
            return Err(Error::out_of_range(index, self.len).with_path(&self.path));
        }
        let mut state = self.lock()?;
        self.seek(&mut state, index).map_err(|e| e.with_record(index))?;
        let window = state.window.as_ref().ok_or_else(|| Error::corrupt("no window"))?;
        let result = self.decode(window, index, &mut out.out());
        if result.is_err() {
            out.clear();
        } else {
            out.set_index(index);
        }
        result.map_err(|e| e.with_record(index).with_path(&self.path))
    }

    /// Decodes the records in file order, so that each window (an IPC record batch, a run
    /// of a Parquet row group) is read and decoded once however the indices are ordered,
    /// and then puts them in the order asked for. In the order asked, a random batch
    /// decoded a window for nearly every record: a whole record batch, decompressed,
    /// per record of a compressed IPC file.
    fn read_batch_into(&self, indices: &[u64], out: &mut ReelBatch) -> Result<()> {
        out.clear();
        if let Some(&index) = indices.iter().find(|&&i| i >= self.len) {
            return Err(Error::out_of_range(index, self.len).with_path(&self.path));
        }
        // Positions in `indices`, in file order (stable: repeats keep their order).
        let in_order = indices.is_sorted();
        let by_position: Vec<usize> = if in_order {
            Vec::new()
        } else {
            let mut by_position: Vec<usize> = (0..indices.len()).collect();
            by_position.sort_by_key(|&k| indices[k]);
            by_position
        };
        let in_file_order = |j: usize| indices[if in_order { j } else { by_position[j] }];
        let mut state = self.lock()?;
        if let Cursor::Ipc { file, batch_starts, ahead } = &mut state.cursor
            && file.fetches_ahead()
        {
            let batch_of = |i: u64| batch_starts.partition_point(|&s| s <= i).saturating_sub(1);
            ahead.plan((0..indices.len()).map(|j| {
                let i = in_file_order(j);
                let b = batch_of(i);
                (b, (i - batch_starts[b]) as usize)
            }));
            let (len, starts) = (self.len, &*batch_starts);
            if let Err(e) = file.read_sparse(ahead, |b| batch_len(starts, len, b), &self.path) {
                ahead.clear();
                out.clear();
                return Err(e.with_path(&self.path));
            }
        }
        let mut result = Ok(());
        for j in 0..indices.len() {
            let index = in_file_order(j);
            let r = self.seek(&mut state, index).and_then(|()| {
                let window = state.window.as_ref().ok_or_else(|| Error::corrupt("no window"))?;
                out.push_with(index, |o| self.decode(window, index, o))
            });
            if let Err(e) = r {
                out.clear();
                result = Err(e.with_record(index).with_path(&self.path));
                break;
            }
        }
        if let Cursor::Ipc { ahead, .. } = &mut state.cursor {
            ahead.clear();
        }
        result?;
        if !in_order {
            // Record `j` of the batch is `indices[by_position[j]]`: the `k`-th asked for is
            // the `j` with `by_position[j] == k`.
            let mut order = vec![0; indices.len()];
            for (j, &k) in by_position.iter().enumerate() {
                order[k] = j;
            }
            out.reorder(&order)?;
        }
        Ok(())
    }
}

/// The Arrow schema of a Parquet or Arrow IPC file, to give as
/// [`ArrowOptions::schema`](crate::ArrowOptions::schema) when writing.
pub fn schema_of_file(path: impl AsRef<Path>) -> Result<SchemaRef> {
    let path = path.as_ref();
    let file = File::open(path).map_err(|e| Error::io(e, "cannot open").with_path(path))?;
    match sniff(path) {
        Some(FileKind::Parquet) => Ok(ArrowReaderMetadata::load(&file, ArrowReaderOptions::new())
            .map_err(|e| pq_err(e, path))?
            .schema()
            .clone()),
        Some(FileKind::ArrowIpc) => {
            drop(file);
            let input = FileInput::open(&reel_core::local_store(), path)?;
            Ok(Arc::new(ipc_layout(&input, path)?.schema))
        }
        None => Err(Error::unsupported("not a Parquet or Arrow IPC file").with_path(path)),
    }
}
