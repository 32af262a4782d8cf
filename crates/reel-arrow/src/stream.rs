//! A source's records as a stream of Arrow record batches.

use std::ops::Range;

use arrow_array::ffi_stream::FFI_ArrowArrayStream;
use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::{ArrowError, SchemaRef};
use reel_core::{Error, FieldSpec, Located, RecordRef, RecordSource, Result};

use crate::encode::{
    Encoder, ExtraColumns, FILE_COLUMN, INDEX_COLUMN, LENGTH_COLUMN, OFFSET_COLUMN,
};
use crate::kind::{Kind, kind_of_type_name};

/// How records become Arrow batches: the schema (given or inferred), extra columns and
/// batch sizes.
#[derive(Clone, Debug)]
pub struct ArrowOptions {
    /// Records sampled to infer the schema (default 1000). Fields whose values vary per
    /// record (OFRecord features, Granular and bags values, Gulp metadata) get the
    /// narrowest Arrow type that holds every sampled value; a later record that does not
    /// fit is an error naming the record and the field.
    pub sample_records: usize,
    /// Stop sampling after this many bytes of records (default 16 MiB).
    pub sample_bytes: usize,
    /// The schema to write, instead of inferring one. A field of a type reel writes (see
    /// the crate documentation) is built as it is; one of another Arrow type (`int32`,
    /// `float32`, `timestamp`, `date32`, `dictionary<int32, utf8>`, `large_list<…>`,
    /// `fixed_size_binary`, a struct holding such types …) is built as the reel values its
    /// type reads back as (integers for int32 and timestamps, text for a dictionary of
    /// text, arrays for lists of numbers) and cast to it with every value checked: a value
    /// the type cannot hold (out of range; a float beyond float32's range in a top-level
    /// column — nested float32 fields are cast as Arrow casts, to infinity) is an
    /// [`ErrorKind::Schema`](reel_core::ErrorKind::Schema) error naming the field and the
    /// record, never wrapped nor made null. Types reel has no value for (decimal, union,
    /// interval) are refused naming the field. Bytes or text with 64-bit offsets anywhere
    /// (`large_binary`, `large_utf8`) turn on [`large_types`](Self::large_types). Reading
    /// ([`SourceBatchReader`]), like [`columns`](Self::columns) it selects: record fields
    /// it has no column for are left out. Writing (`ArrowSink`, `write_file`), such a field
    /// is refused, naming it. A column a record lacks is null.
    pub schema: Option<SchemaRef>,
    /// Only these columns, in this order (default: every field). Other fields of the
    /// records are skipped; a name that is neither declared by the format, sampled, nor in
    /// [`schema`](Self::schema) is an error naming the columns there are.
    pub columns: Option<Vec<String>>,
    /// `LargeBinary`/`LargeUtf8` (64-bit offsets) instead of `Binary`/`Utf8`, for batches
    /// over 2 GiB of one column.
    pub large_types: bool,
    /// Extra columns for joining back to the dataset.
    pub extra: ExtraColumns,
    /// Rows per batch at most (default 65536).
    pub batch_rows: usize,
    /// Bytes of values per batch at most (default 16 MiB; a single larger record makes a
    /// batch of one). With the Parquet row-group size, this bounds a conversion's memory.
    pub batch_bytes: usize,
}

impl Default for ArrowOptions {
    fn default() -> Self {
        ArrowOptions {
            sample_records: 1000,
            sample_bytes: 16 << 20,
            schema: None,
            columns: None,
            large_types: false,
            extra: ExtraColumns::default(),
            batch_rows: 65536,
            batch_bytes: 16 << 20,
        }
    }
}

/// The columns for records like `sample`: the declared fields in their order, other fields
/// where the sampled records put them.
fn infer_kinds<'a>(
    declared: Option<&[FieldSpec]>,
    sample: impl IntoIterator<Item = RecordRef<'a>>,
) -> Vec<(String, Kind)> {
    // A column a Parquet or Arrow IPC file declares starts from the kind its type reads
    // as, which the sample can only widen: its values may all be null in the sample, or
    // the large ones come later. Other formats' type names are weaker hints (a Granular
    // `int` may hold any integer), used only for fields no sampled record has.
    let (mut kinds, mut seen): (Vec<(String, Kind)>, Vec<bool>) = declared
        .unwrap_or_default()
        .iter()
        .map(|f| {
            let read = kind_of_type_name(&f.kind);
            let known = read.is_some();
            ((f.name.clone(), read.unwrap_or(Kind::Null)), known)
        })
        .unzip();
    for record in sample {
        // A new field goes right after the record's previous field, so that records whose
        // fields come in one order (OFRecord and Granular sort them) read back in it.
        let mut after: Option<usize> = None;
        for (name, value) in record.iter() {
            let k = Kind::of(value);
            match kinds.iter().position(|(n, _)| n == name) {
                Some(i) => {
                    kinds[i].1 = std::mem::replace(&mut kinds[i].1, Kind::Null).merge(k);
                    seen[i] = true;
                    after = Some(i);
                }
                None => {
                    let at = after.map_or(0, |a| a + 1);
                    kinds.insert(at, (name.to_string(), k));
                    seen.insert(at, true);
                    after = Some(at);
                }
            }
        }
    }
    // A declared field no sampled record had: take the type its declaration names.
    for ((name, kind), seen) in kinds.iter_mut().zip(seen) {
        if !seen {
            let spec = declared.unwrap_or_default().iter().find(|f| f.name == *name);
            *kind = spec.map_or(Kind::Null, |s| declared_kind(&s.kind));
        }
    }
    kinds
}

/// What the batches of an encoder are for: read (a given schema then selects columns) or
/// written to a file (a given schema names the columns, and a field it lacks is refused).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Purpose {
    Reading,
    Writing,
}

/// The encoder for records like `sample` (or for [`ArrowOptions::schema`] when given, the
/// sample then unused): its columns, their selection ([`ArrowOptions::columns`]) and offset
/// width. The batch reader and the sink both start here, so a conversion writes the batches
/// the reader would give.
pub(crate) fn encoder_for<'a>(
    options: &ArrowOptions,
    declared: Option<&[FieldSpec]>,
    sample: impl IntoIterator<Item = RecordRef<'a>>,
    purpose: Purpose,
) -> Result<Encoder> {
    let (mut kinds, casts) = match &options.schema {
        Some(schema) => kinds_of_schema(schema)?,
        None => (infer_kinds(declared, sample), Vec::new()),
    };
    if let Some(columns) = &options.columns {
        kinds = select_columns(kinds, columns)?;
    }
    // A given schema with 64-bit offsets asks for them (reel writes one offset width).
    let large = options.large_types
        || options
            .schema
            .as_ref()
            .is_some_and(|s| s.fields().iter().any(|f| has_large_offsets(f.data_type())));
    let extra_names = [
        (options.extra.index, &[INDEX_COLUMN][..]),
        (options.extra.location, &[FILE_COLUMN, OFFSET_COLUMN, LENGTH_COLUMN][..]),
    ];
    for name in extra_names.iter().filter(|(on, _)| *on).flat_map(|(_, names)| names.iter()) {
        if kinds.iter().any(|(n, _)| n == name) {
            return Err(Error::invalid_input(format!(
                "the records already have a field {name:?}, which the extra column of that name \
                 would repeat; drop or rename the field, or leave the extra columns out"
            )));
        }
    }
    let mut encoder = Encoder::new(&kinds, large, options.extra);
    for (name, target) in &casts {
        encoder.cast_column(name, target)?;
    }
    if options.schema.is_none()
        && let Some(declared) = declared
    {
        encoder.keep_declared_types(declared);
    }
    // A column selection leaves the other fields out; so does a given schema with fewer
    // columns than the records have fields, when reading. Writing, the schema names the
    // columns: a field it lacks is refused (a stale schema must not drop it unsaid).
    let selects = options.schema.is_some() && purpose == Purpose::Reading;
    encoder.skip_unknown(options.columns.is_some() || selects);
    Ok(encoder)
}

/// The kind a format's own type name stands for, where that is unambiguous.
fn declared_kind(name: &str) -> Kind {
    match name {
        "bytes" | "jpg" | "png" | "mp4" => Kind::Bytes,
        "utf8" | "str" | "string" => Kind::Str,
        "int" | "i64" => Kind::Int { negative: true, huge: false },
        "u64" => Kind::Int { negative: false, huge: true },
        // Syrah names its columns' numpy dtypes: 1-D arrays.
        other => match reel_core::DType::from_name(other) {
            Some(dt) => Kind::of(reel_core::ValueRef::Array(reel_core::ArrayRef {
                dtype: dt,
                shape: &[0],
                data: &[],
            })),
            None => Kind::Null,
        },
    }
}

/// The columns of a given Arrow schema, and the fields of those whose type reel does not
/// build (they are cast, see [`Kind::for_given`]).
type GivenColumns = (Vec<(String, Kind)>, Vec<(String, arrow_schema::Field)>);

fn kinds_of_schema(schema: &arrow_schema::Schema) -> Result<GivenColumns> {
    let mut kinds = Vec::with_capacity(schema.fields().len());
    let mut casts = Vec::new();
    for f in schema.fields() {
        let (kind, cast) = Kind::for_given(f)?;
        kinds.push((f.name().clone(), kind));
        casts.extend(cast.map(|c| (f.name().clone(), c)));
    }
    Ok((kinds, casts))
}

/// Reads a source's records as Arrow record batches, in order, through its batch read
/// path. It is an Arrow [`RecordBatchReader`], so it can be written to Parquet or IPC,
/// or handed across the C stream interface ([`into_ffi_stream`]) to pyarrow, Polars or
/// DuckDB.
///
/// ```no_run
/// # fn demo(source: Box<dyn reel_core::RecordSource>) -> reel_core::Result<()> {
/// let reader = reel_arrow::SourceBatchReader::new(source, &Default::default())?;
/// println!("{}", reader.schema());
/// for batch in reader {
///     let batch = batch.map_err(|e| reel_core::Error::invalid_input(e.to_string()))?;
///     println!("{} rows", batch.num_rows());
/// }
/// # Ok(()) }
/// ```
pub struct SourceBatchReader<S> {
    source: S,
    encoder: Encoder,
    options: ArrowOptions,
    rows: Rows,
    /// Position in `rows` of the next record to read.
    next: u64,
    batch: reel_core::RecordBatch,
    indices: Vec<u64>,
    /// The first records, read to infer the schema, served from here instead of being read
    /// again (emptied once passed).
    sampled: reel_core::RecordBatch,
    /// Where the records being added are stored (the location columns).
    located: Located,
    failed: bool,
}

/// Adds `records` (those at `indices`) to `encoder`, with where `source` stores them when
/// the batches have the location columns (located for the whole batch at once, into
/// `located`).
fn push_all<'b>(
    encoder: &mut Encoder,
    source: &dyn RecordSource,
    records: impl Iterator<Item = RecordRef<'b>>,
    indices: &[u64],
    located: &mut Located,
) -> Result<()> {
    let locator = if encoder.wants_location() {
        source.locate_many(indices, located)?.then_some(source)
    } else {
        None
    };
    for (k, record) in records.enumerate() {
        encoder.push_located(record, locator.and_then(|s| located.location(k, s)))?;
    }
    Ok(())
}

impl<S: RecordSource> SourceBatchReader<S> {
    /// A reader over every record of `source`.
    pub fn new(source: S, options: &ArrowOptions) -> Result<Self> {
        let len = source.len();
        Self::with_range(source, 0..len, options)
    }

    /// A reader over every record of `source` whose batches are written to a file
    /// ([`Purpose::Writing`]).
    pub(crate) fn for_writing(source: S, options: &ArrowOptions) -> Result<Self> {
        let len = source.len();
        Self::with_rows(source, Rows::Range(0..len), options, Purpose::Writing)
    }

    /// A reader over records `range` of `source` (e.g. one Parquet part of many, or one
    /// read task's share of a dataset).
    pub fn with_range(source: S, range: Range<u64>, options: &ArrowOptions) -> Result<Self> {
        if range.end > source.len() || range.start > range.end {
            return Err(Error::out_of_range(range.end, source.len()));
        }
        Self::with_rows(source, Rows::Range(range), options, Purpose::Reading)
    }

    /// A reader over the records at `indices` of `source`, in that order (repeats
    /// allowed). The `_index` column, when asked for, holds each record's index in
    /// `source`.
    pub fn with_indices(source: S, indices: Vec<u64>, options: &ArrowOptions) -> Result<Self> {
        if let Some(&bad) = indices.iter().find(|&&i| i >= source.len()) {
            return Err(Error::out_of_range(bad, source.len()));
        }
        Self::with_rows(source, Rows::List(indices), options, Purpose::Reading)
    }

    fn with_rows(source: S, rows: Rows, options: &ArrowOptions, purpose: Purpose) -> Result<Self> {
        let sampled = match &options.schema {
            Some(_) => reel_core::RecordBatch::new(),
            None => sample(&source, &rows, options)?,
        };
        let declared = source.info().schema.as_deref();
        let encoder = encoder_for(options, declared, sampled.iter(), purpose)?;
        Ok(SourceBatchReader {
            encoder,
            source,
            options: options.clone(),
            rows,
            next: 0,
            batch: reel_core::RecordBatch::new(),
            indices: Vec::new(),
            sampled,
            located: Located::default(),
            failed: false,
        })
    }

    /// The schema of every batch.
    pub fn schema(&self) -> SchemaRef {
        self.encoder.schema()
    }

    /// The next batch, or `None` after the last record.
    pub fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        if self.failed || self.next >= self.rows.len() {
            return Ok(None);
        }
        let result = self.fill();
        if result.is_err() {
            self.failed = true;
        }
        result.map(Some)
    }

    fn fill(&mut self) -> Result<RecordBatch> {
        let opts = &self.options;
        let end = self.rows.len();
        while self.next < end
            && self.encoder.rows() < opts.batch_rows.max(1)
            && (self.encoder.rows() == 0 || self.encoder.buffered_bytes() < opts.batch_bytes)
        {
            // Read as many records at once as fit the byte budget at the average size so
            // far (one to start with), never more than the batch has room for.
            let rows = self.encoder.rows();
            let fit = match self.encoder.buffered_bytes().checked_div(rows) {
                Some(avg) => {
                    opts.batch_bytes.saturating_sub(self.encoder.buffered_bytes()) / avg.max(1)
                }
                None => 1,
            };
            let take = fit.clamp(1, 256).min(opts.batch_rows.max(1) - rows) as u64;
            let take = take.min(end - self.next);
            let sampled = self.sampled.len() as u64;
            if self.next < sampled {
                // The first records were read once already, to infer the schema.
                let stop = (self.next + take).min(sampled);
                self.indices.clear();
                self.rows.extend_into(self.next..stop, &mut self.indices);
                let sampled_batch = &self.sampled;
                let records = (self.next..stop).filter_map(|k| sampled_batch.get(k as usize));
                push_all(
                    &mut self.encoder,
                    &self.source,
                    records,
                    &self.indices,
                    &mut self.located,
                )?;
                self.next = stop;
                if stop == sampled {
                    self.sampled = reel_core::RecordBatch::new();
                }
                continue;
            }
            self.indices.clear();
            self.rows.extend_into(self.next..self.next + take, &mut self.indices);
            self.source.read_batch_into(&self.indices, &mut self.batch)?;
            push_all(
                &mut self.encoder,
                &self.source,
                self.batch.iter(),
                &self.indices,
                &mut self.located,
            )?;
            self.next += take;
        }
        self.encoder.finish_batch()
    }
}

/// The records a reader reads: a range of the source, or a list of its indices.
enum Rows {
    Range(Range<u64>),
    List(Vec<u64>),
}

impl Rows {
    fn len(&self) -> u64 {
        match self {
            Rows::Range(r) => r.end - r.start,
            Rows::List(l) => l.len() as u64,
        }
    }

    /// Appends the source indices at positions `at` to `out`.
    fn extend_into(&self, at: Range<u64>, out: &mut Vec<u64>) {
        match self {
            Rows::Range(r) => out.extend(r.start + at.start..r.start + at.end),
            Rows::List(l) => out.extend_from_slice(&l[at.start as usize..at.end as usize]),
        }
    }
}

/// Whether `t` or a type inside it is bytes or text with 64-bit offsets. A `large_list`
/// does not count: reel builds no list with 64-bit offsets, so such a column is built as a
/// list and cast (its own offsets are then 64-bit), leaving the other columns as given.
fn has_large_offsets(t: &arrow_schema::DataType) -> bool {
    use arrow_schema::DataType as T;
    match t {
        T::LargeBinary | T::LargeUtf8 => true,
        T::List(f) | T::FixedSizeList(f, _) => has_large_offsets(f.data_type()),
        T::Struct(fields) => fields.iter().any(|f| has_large_offsets(f.data_type())),
        _ => false,
    }
}

/// `kinds` cut down to `columns`, in their order.
fn select_columns(kinds: Vec<(String, Kind)>, columns: &[String]) -> Result<Vec<(String, Kind)>> {
    columns
        .iter()
        .map(|name| {
            kinds.iter().find(|(n, _)| n == name).cloned().ok_or_else(|| {
                let have: Vec<&str> = kinds.iter().map(|(n, _)| n.as_str()).collect();
                Error::invalid_input(format!(
                    "no column {name:?} (the records have {}; a field missing from the sampled \
                     records needs a schema or a larger sample)",
                    if have.is_empty() { "no fields".to_string() } else { have.join(", ") }
                ))
            })
        })
        .collect()
}

/// Reads up to the sample limits from the start of `rows`.
fn sample(
    source: &dyn RecordSource,
    rows: &Rows,
    options: &ArrowOptions,
) -> Result<reel_core::RecordBatch> {
    let mut all = reel_core::RecordBatch::new();
    let mut chunk = reel_core::RecordBatch::new();
    let mut next = 0;
    let end = rows.len().min(options.sample_records as u64);
    let mut indices = Vec::new();
    while next < end && all.buffer_len() < options.sample_bytes {
        let take = (end - next).min(16);
        indices.clear();
        rows.extend_into(next..next + take, &mut indices);
        source.read_batch_into(&indices, &mut chunk)?;
        for r in chunk.iter() {
            all.push_copy(r);
        }
        next += take;
    }
    Ok(all)
}

impl<S: RecordSource> Iterator for SourceBatchReader<S> {
    type Item = std::result::Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_batch().map_err(|e| ArrowError::ExternalError(Box::new(e))).transpose()
    }
}

impl<S: RecordSource> RecordBatchReader for SourceBatchReader<S> {
    fn schema(&self) -> SchemaRef {
        self.encoder.schema()
    }
}

/// Wraps a batch reader in the Arrow C stream interface (`ArrowArrayStream`), which
/// pyarrow (`RecordBatchReader._import_from_c`, or a PyCapsule named
/// `"arrow_array_stream"` returned from `__arrow_c_stream__`), Polars and DuckDB import
/// without copying the data buffers. A reel error surfaces through the stream's
/// `get_last_error` with its message.
pub fn into_ffi_stream(reader: impl RecordBatchReader + Send + 'static) -> FFI_ArrowArrayStream {
    FFI_ArrowArrayStream::new(Box::new(reader))
}
