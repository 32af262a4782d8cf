//! Lossless cross-format conversion: any supported format to any other, through the
//! common record model.
//!
//! # How values travel
//!
//! Checksums of the source are verified while reading. Each target keeps what it can hold;
//! what it must change is *stated* in [`ConvertReport::losses`] (and printed by
//! `reel convert`), and what it cannot hold at all is refused with an
//! [`ErrorKind::Schema`](reel_core::ErrorKind::Schema) error naming the field — before
//! anything appears at the destination (writers stage their output).
//!
//! | value ↓ / target → | FFRecord | Syrah | OFRecord | Granular | Gulp |
//! | --- | --- | --- | --- | --- | --- |
//! | bytes | kept (the only field) | uint8 array | bytes list of one | kept (`bytes`) | a frame, in `frames` |
//! | text | UTF-8 bytes | kept | bytes list of one | kept (`utf8`) | `id`, or in `meta` |
//! | int / float / bool | refused | one-element array | one-element int64/double/int32 list | kept (`int`, `msgpack`) | in `meta` |
//! | null | refused | refused | feature with no kind | kept (`msgpack`) | in `meta` |
//! | 1-D array | its bytes (uint8 kept) | kept (not complex/void/text) | f32/f64/i32/i64 kept; small ints widened to int32, f16 to f32 | kept (`array`) | uint8 H×W(×3) frames JPEG-encoded |
//! | n-d array | its bytes | flattened | flattened | kept | frames only |
//! | list of bytes | a list of one only | refused | kept | kept (`tree`) | `frames` |
//! | list / map | refused | refused | refused (list of text → bytes list) | kept (`tree`) | in `meta` (JSON values) |
//! | field names | not stored (read back as `data`) | kept, in order | kept, sorted | kept, sorted | `id`, `meta`, `frames` only |
//!
//! The target names the generation written, never the source: [`Format::Granular`] is
//! granular 0.24's layout (`<key>.bag` + `<key>.idx`) even from a bags 0.5.1 source, and
//! [`Format::Bags`] bags 0.5.1's refs layout. Bags holds what the Granular column says with
//! its own types (`array(dtype,-1,…)`, `type[]` sequences, `msgpack` for negative numbers,
//! floats and maps), except arrays inside lists or maps, which are refused naming the field.
//!
//! From a table (Parquet, Arrow IPC, Arrow batches) to Granular or bags, a record lacking a
//! declared column (a null cell) gets it as null, since a datapoint needs every key of its
//! spec; a column holds null only as `msgpack`, which [`ConvertOptions::nullable`] chooses
//! up front (otherwise a null in a column whose first value fixed another type is refused,
//! naming the field and the record).
//!
//! Round trips that are lossless (A → B → A gives the same records: same field names and
//! values; Granular and OFRecord keep fields sorted by name) and are tested:
//!
//! * FFRecord → Syrah, OFRecord or Granular → FFRecord;
//! * Syrah → Granular → Syrah; OFRecord → Granular → OFRecord; Gulp → Granular → Gulp;
//! * Syrah ↔ OFRecord when every array is f32, f64, i32 or i64 (OFRecord's list types).
//!
//! # Fields, payloads and packing
//!
//! [`ConvertOptions::fields`] chooses, drops and renames fields; records that are bytes
//! holding a pickle, msgpack or JSON document are read as fields with
//! [`OpenOptions::payload`](crate::OpenOptions); [`ConvertOptions::pack`] stores all of a
//! record's fields as one bytes value and [`ConvertOptions::encode_nested`] each map or
//! list field the target has no type for (layouts in [`Codec`]). A refusal names every
//! field it concerns, with the option that would carry it.
//!
//! # Parallel conversion
//!
//! With [`ConvertOptions::shard`] = `(k, n)`, a conversion writes only records
//! `[k·N/n, (k+1)·N/n)`, as part `k` of a multi-part destination (named by [`part_names`]:
//! `PART_0000k.ffr`, `part-0000k`, `part-0000k.syr`, a chunk of a gulp directory numbered so
//! that the reference's name order is part order, shard `00000k/` of a Granular root), so `n` processes can convert one dataset at once into one directory
//! that then opens as a whole — except for Parquet and Arrow IPC targets: their parts
//! (`part-0000k.parquet`, `part-0000k.arrow`) are separate files, each of which reel opens
//! on its own (a directory of them does not open; `pyarrow.dataset.dataset(dir)` reads it
//! as one table).

mod fields;
mod rules;
mod shards;

use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use reel_core::{
    Error, Record, RecordBatch, RecordRef, RecordSink, RecordSource, Result, SinkSummary,
};

pub use fields::FieldMap;
pub use rules::Loss;
pub(crate) use rules::has_non_text_keys;

use reel_core::io::cancel::CancelCheck;
use reel_core::paths::{Existing, check_destination};
use reel_core::stream::{PassRecords, StreamOptions, WholePass};

use crate::payload::{Codec, encode_nested, pack_record};
use crate::{CreateOptions, Format, OpenOptions};

/// How to convert.
#[derive(Clone, Debug)]
pub struct ConvertOptions {
    /// The target format.
    pub to: Format,
    /// How to read the source (checksums are verified unless `open.verify` is off).
    pub open: OpenOptions,
    /// Write only part `k` of `n` (see the module documentation).
    pub shard: Option<(u64, u64)>,
    /// Refuse conversions that would lose anything (instead of stating the losses).
    pub lossless_only: bool,
    /// Replace a dataset already at the destination, once the new one is complete (off by
    /// default: an existing destination is refused before anything is read). A destination
    /// that is the source, or lies inside it, is refused either way.
    pub overwrite: bool,
    /// Which fields to write, and under which names (default: all, as they are).
    pub fields: FieldMap,
    /// Store each map, list or tree field the target has no type for as bytes in this
    /// codec's layout (a stated loss).
    pub encode_nested: Option<Codec>,
    /// Store all of a record's fields as one bytes value `data` in this codec's layout,
    /// which `--payload msgpack|json` reads back as the same fields (a stated loss).
    pub pack: Option<Codec>,
    /// Granular and bags targets: these fields (named as written) get the type `msgpack`,
    /// which holds null beside every other value, instead of the type their first value
    /// would pick. A null cell of a Parquet or Arrow column is written as null (see the
    /// module documentation); `bytes`, `utf8`, `int` and `array` columns cannot hold it.
    pub nullable: Vec<String>,
    /// Parquet and Arrow IPC targets: schema, batch and row-group sizes, compression.
    #[cfg(feature = "arrow")]
    pub arrow: reel_arrow::WriteOptions,
    /// OFRecord targets: part naming and rolling (see [`CreateOptions::ofrecord`]). The
    /// conversion rules already widen and flatten values OFRecord has no form for, stating
    /// the loss, so the encoding options change nothing here.
    #[cfg(feature = "ofrecord")]
    pub ofrecord: reel_ofrecord::OfrecordWriterOptions,
    /// Multi-file targets in files of about this many bytes (see
    /// [`CreateOptions::part_bytes`]).
    pub part_bytes: Option<u64>,
    /// The destination's object-store settings when `dst` is a URL (see
    /// [`CreateOptions::store`]).
    #[cfg(feature = "object-store")]
    pub output_store: reel_store::StoreOptions,
}

impl ConvertOptions {
    /// Converting to `to`, with default reading options.
    pub fn new(to: Format) -> Self {
        ConvertOptions {
            to,
            open: OpenOptions::default(),
            shard: None,
            lossless_only: false,
            overwrite: false,
            fields: FieldMap::default(),
            encode_nested: None,
            pack: None,
            nullable: Vec::new(),
            #[cfg(feature = "arrow")]
            arrow: Default::default(),
            #[cfg(feature = "ofrecord")]
            ofrecord: Default::default(),
            part_bytes: None,
            #[cfg(feature = "object-store")]
            output_store: Default::default(),
        }
    }

    /// Replaces an existing destination when the conversion is complete.
    pub fn overwrite(mut self, on: bool) -> Self {
        self.overwrite = on;
        self
    }

    /// Writes part `index` of `count`.
    pub fn shard(mut self, index: u64, count: u64) -> Self {
        self.shard = Some((index, count));
        self
    }

    /// Options writing the target in files of about `bytes` bytes: OFRecord parts, Granular
    /// and bags shards (see [`CreateOptions::part_bytes`]; other targets are refused).
    pub fn part_size(mut self, bytes: u64) -> crate::Result<Self> {
        crate::create::check_part_size(self.to, bytes)?;
        self.part_bytes = Some(bytes);
        Ok(self)
    }
}

/// What a conversion did.
#[derive(Clone, Debug)]
pub struct ConvertReport {
    /// The source's format.
    pub from: Format,
    /// The target format.
    pub to: Format,
    /// Records written.
    pub records: u64,
    /// Bytes written.
    pub bytes: u64,
    /// What the target could not keep, once per field and kind of loss.
    pub losses: Vec<Loss>,
    /// The files or directories written.
    pub outputs: Vec<PathBuf>,
}

/// Converts the dataset at `src` into a new dataset at `dst`.
pub fn convert(
    src: impl AsRef<Path>,
    dst: impl AsRef<Path>,
    options: &ConvertOptions,
) -> Result<ConvertReport> {
    convert_with_progress(src, dst, options, &mut |_, _| {})
}

/// [`convert`], calling `progress(done, total)` as records are written.
pub fn convert_with_progress(
    src: impl AsRef<Path>,
    dst: impl AsRef<Path>,
    options: &ConvertOptions,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<ConvertReport> {
    let (src, dst) = (src.as_ref(), dst.as_ref());
    let (src, dst) = (&*crate::create::local_form(src)?, &*crate::create::local_form(dst)?);
    // Before anything is read: the destination must not be the source (or inside it), and
    // must not exist unless replacing was asked for. With shards, `dst` is the directory
    // that receives the parts, which may exist; each part is checked when created.
    let existing = if options.overwrite || options.shard.is_some() {
        Existing::Overwrite
    } else {
        Existing::Refuse
    };
    if !is_remote(dst)? {
        crate::parts::refuse_called_off(dst)?;
        check_destination(dst, &[src], existing)?;
    }
    // The same overlap between two objects' addresses: replacing the destination would
    // delete the source's objects while they are read.
    #[cfg(feature = "object-store")]
    if let (Some(d), Some(s)) = (dst.to_str(), src.to_str()) {
        reel_store::check_remote_destination(d, s)?;
    }
    // A conversion reads its source once, front to back. Under the default backend it reads
    // with pread, so the kernel reads ahead and the process holds only the batches in
    // flight, instead of mapping the source (which shows the whole source as resident).
    let mut open = options.open.clone();
    if open.backend.name() == "auto" {
        open.backend = reel_core::Backend::Pread;
    }
    let (src, open) = crate::locate(src, &open)?;
    let format = open.format_of(&src)?;
    // Before the selection moves into the open, where a contradiction would read as
    // fields missing from the records.
    options.fields.check()?;
    let pushed = push_down_fields(format, &open, options);
    let (open, options) = match &pushed {
        Some((open, options)) => (open, options),
        None => (&open, options),
    };
    let source = crate::open_as(&src, format, &crate::streaming(open))?;
    convert_source(Arc::from(source), dst, options, progress)
}

/// For a Parquet, Arrow IPC or Granular source, the open and conversion options that read
/// only the columns (keys) [`ConvertOptions::fields`] keeps: the selection moves into the
/// open, so that a column left out is never decoded nor checked (one of a type reel has no
/// value for, a decimal, no longer stops a conversion that drops it; a Granular key left
/// out is never read), and the conversion then keeps every column the source reads,
/// renaming as asked. `None` when there is nothing to move:
/// another format, no selection, a selection the open options already make, or a payload
/// decoded from the records (whose fields are not the file's columns).
fn push_down_fields(
    format: Format,
    open: &OpenOptions,
    options: &ConvertOptions,
) -> Option<(OpenOptions, ConvertOptions)> {
    let map = &options.fields;
    let selects = map.keep.is_some() || !map.drop.is_empty();
    if !format.reads_columns()
        || !selects
        || open.selects_columns()
        || open.payload != crate::Payload::Raw
    {
        return None;
    }
    let mut open = open.clone();
    open.columns = map.keep.clone();
    open.skip_columns = map.drop.clone();
    let mut options = options.clone();
    // A Granular source gives its keys in spec order: the conversion still puts them in
    // the order `--fields` names them.
    let keep = map.keep.clone().filter(|_| !format.selects_in_order());
    options.fields = FieldMap { keep, drop: Vec::new(), rename: map.rename.clone() };
    Some((open, options))
}

/// Whether `dst` is an object-store address (checked by the store when the sink is made).
fn is_remote(dst: &Path) -> Result<bool> {
    #[cfg(feature = "object-store")]
    return Ok(crate::create::remote_address(dst)?.is_some());
    #[cfg(not(feature = "object-store"))]
    {
        let _ = dst; // without object storage every destination is local
        Ok(false)
    }
}

/// Bytes a batch read aims at: enough that the hand-over between the reading and the
/// writing thread is rare (at 64 records of 1 KiB a batch, the thread switches took about a
/// tenth of an FFRecord → Parquet conversion), few enough that the batches in flight stay
/// small next to the writers' own buffers.
const BATCH_BYTES: u64 = 1 << 20;

/// Fewest and most records per batch read, whatever the records' size.
const BATCH_RECORDS: std::ops::RangeInclusive<usize> = 64..=4096;

/// Records per batch for a source whose records in `range` look like its first ones: the
/// mean stored size of up to 64 of them sets a batch of about [`BATCH_BYTES`]. The sizes
/// come from the format's read plan (`locate_many`, no data read); a source that cannot tell
/// has 8 records read instead, and one whose sample cannot be read gets the fewest (the
/// conversion meets that error itself).
fn batch_records(source: &dyn RecordSource, range: &std::ops::Range<u64>) -> usize {
    let fewest = *BATCH_RECORDS.start();
    let first: Vec<u64> = (range.start..range.end).take(fewest).collect();
    let mut located = reel_core::Located::default();
    let (mut sampled, mut bytes) = (0u64, 0u64);
    if matches!(source.locate_many(&first, &mut located), Ok(true)) {
        sampled = located.len() as u64;
        bytes = (0..located.len())
            .filter_map(|k| located.ranges(k))
            .flatten()
            .map(|r| r.len)
            .sum::<u64>();
    }
    if sampled == 0 {
        let sample: Vec<u64> = (range.start..range.end).take(8).collect();
        let mut batch = reel_core::RecordBatch::new();
        if sample.is_empty() || source.read_batch_into(&sample, &mut batch).is_err() {
            return fewest;
        }
        (sampled, bytes) = (sample.len() as u64, batch.buffer_len() as u64);
    }
    let mean = (bytes / sampled).max(1);
    usize::try_from(BATCH_BYTES / mean).unwrap_or(usize::MAX).clamp(fewest, *BATCH_RECORDS.end())
}

/// Batches read ahead of the writer.
const READ_AHEAD: usize = 2;

/// Converts an open source (shared, because helper threads read it ahead of the writer).
pub fn convert_source(
    source: Arc<dyn RecordSource>,
    dst: &Path,
    options: &ConvertOptions,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<ConvertReport> {
    let from = Format::of_source(source.info()).ok_or_else(|| {
        Error::unsupported(format!("unknown source format {}", source.info().format))
    })?;
    let n = source.len();
    let range = match options.shard {
        Some((k, count)) if count == 0 || k >= count => {
            return Err(Error::invalid_input(format!("shard {k} of {count} does not exist")));
        }
        Some((k, count)) => {
            if !is_remote(dst)? {
                shards::check_parts_present(dst, options.to, k, count, n)?;
            }
            shards::part_range(k, count, n)
        }
        None => 0..n,
    };

    // The target format names the generation written; the source's version is not passed
    // on (a bags source converted `--to granular` gives granular 0.24's layout).
    let target = Target {
        from,
        schema: source.info().schema.as_ref(),
        records: Some(range.end - range.start),
        dst,
        source: Some(&*source),
    };
    let total = range.end - range.start;
    // A helper thread reads batches ahead while this one adapts and writes, so reading and
    // writing overlap; at most `READ_AHEAD` batches wait, each within the batch budget of
    // `streaming` (a batch over it is read again in pieces that fit), so memory stays a few
    // batches.
    let stream_options = StreamOptions::default()
        .read_ahead(READ_AHEAD)
        .max_ahead_bytes(crate::verify::STREAM_BATCH_BYTES);
    let per_batch = batch_records(&*source, &range);
    let mut pass =
        WholePass::new(source.clone(), PassRecords::Range(range), per_batch, &stream_options)?;
    let mut done = 0;
    write_batches(&target, options, &mut pass, &mut |batch| {
        done += batch.len() as u64;
        progress(done, total);
    })
}

/// Where a conversion writes, and what it knows of its source.
struct Target<'a> {
    from: Format,
    /// The fields the source declares.
    schema: Option<&'a Vec<reel_core::FieldSpec>>,
    /// How many records will come, when known.
    records: Option<u64>,
    dst: &'a Path,
    /// The source, which locates records for the location columns of a Parquet or Arrow
    /// target.
    source: Option<&'a dyn RecordSource>,
}

/// Whether the target has location columns ([`reel_arrow::ExtraColumns::location`]).
fn wants_location(options: &ConvertOptions) -> bool {
    #[cfg(feature = "arrow")]
    return options.arrow.arrow.extra.location;
    #[cfg(not(feature = "arrow"))]
    return {
        let _ = options;
        false
    };
}

/// Writes the records of `batches` (in order) to a new dataset at `target.dst`, after
/// checking the mapping on the first record, before anything is created; `written` gets
/// each batch back once its records are appended.
fn write_batches<B: Deref<Target = RecordBatch>>(
    target: &Target<'_>,
    options: &ConvertOptions,
    batches: &mut dyn Iterator<Item = Result<B>>,
    written: &mut dyn FnMut(B),
) -> Result<ConvertReport> {
    let (from, to) = (target.from, options.to);
    let mut losses = rules::Losses::new();
    let mut stages = Stages {
        complete: null_fields(target.schema, from, to),
        declared: target.schema.cloned().unwrap_or_default(),
        ..Stages::default()
    };
    let array_columns = table_read_losses(target, options, &mut losses);
    // Check the mapping on the first record before anything is created.
    let mut held = Vec::new();
    for batch in &mut *batches {
        let batch = batch?;
        let has_records = !batch.is_empty();
        held.push(batch);
        if has_records {
            break;
        }
    }
    if let Some(first) = held.last().and_then(|b| b.iter().next()) {
        lists_read_as_lists(&array_columns, &first, &mut losses);
        stages.prepare(options, &first, &mut losses).map_err(|e| e.with_record(first.index()))?;
    }
    if options.lossless_only && !losses.is_empty() {
        let list: Vec<String> = losses.iter().map(|l| l.to_string()).collect();
        return Err(Error::schema(format!("converting to {to} would lose: {}", list.join("; "))));
    }

    let mut schema = match target.schema {
        // Packed or encoded fields change kind; the target works the schema out from the
        // records.
        _ if options.pack.is_some() || options.encode_nested.is_some() => None,
        Some(schema) if !options.fields.is_identity() => options.fields.apply_schema(schema),
        other => other.cloned(),
    };
    declare_nullable(&mut schema, options)?;
    #[cfg(feature = "arrow")]
    restore_declared_types(&mut schema, from, to);
    let create = CreateOptions {
        records: target.records,
        schema,
        version: None,
        overwrite: options.overwrite,
        #[cfg(feature = "arrow")]
        arrow: options.arrow.clone(),
        #[cfg(feature = "ofrecord")]
        ofrecord: options.ofrecord.clone(),
        part_bytes: options.part_bytes,
        #[cfg(feature = "object-store")]
        store: options.output_store.clone(),
    };
    let (mut sink, output) = match options.shard {
        Some((k, count)) => create_part(target.dst, to, k, count, &create)?,
        None => (crate::create(target.dst, to, &create)?, target.dst.to_path_buf()),
    };
    let locator = target.source.filter(|_| wants_location(options));
    // Where each record of a batch is stored, located for the whole batch at once.
    let (mut located, mut indices) = (reel_core::Located::default(), Vec::new());
    // A cancelled conversion (the calling thread's flag raised: Ctrl-C in the `reel`
    // command or in Python) stops at the next batch; the sink, dropped unfinished, removes
    // what it staged.
    let cancel = CancelCheck::current();
    let held = held.into_iter().map(Ok);
    for batch in held.chain(batches) {
        cancel.stop_if_cancelled("the conversion")?;
        let batch = batch?;
        let locator = match locator {
            Some(source) => {
                indices.clear();
                indices.extend(batch.iter().map(|r| r.index()));
                source.locate_many(&indices, &mut located)?.then_some(source)
            }
            None => None,
        };
        for (k, r) in batch.iter().enumerate() {
            let index = r.index();
            lists_read_as_lists(&array_columns, &r, &mut losses);
            let ready =
                stages.prepare(options, &r, &mut losses).map_err(|e| e.with_record(index))?;
            if options.lossless_only && !losses.is_empty() {
                return Err(Error::schema(format!(
                    "record {index} would lose information in {to}"
                ))
                .with_record(index));
            }
            let at = locator.and_then(|source| located.location(k, source));
            sink.append_located(ready, at)
                .map_err(|e| null_refused(e, &ready, to).with_record(index))?;
        }
        written(batch);
    }
    let SinkSummary { records, bytes, .. } = sink.finish()?;
    Ok(ConvertReport {
        from,
        to,
        records,
        bytes,
        losses: losses.into_iter().collect(),
        outputs: vec![output],
    })
}

/// Converts Arrow record batches into a new dataset at `dst`: each row a record, each
/// column a field, read as a Parquet or Arrow IPC file's are
/// ([`BatchRecords`](reel_arrow::BatchRecords)) and written under the same rules, losses
/// and refusals as converting such a file. `batches` is read once, front to back, one
/// batch at a time, so memory stays about one of its batches plus the writer's own.
/// A shard ([`ConvertOptions::shard`]) needs a dataset's length and is refused here.
#[cfg(feature = "arrow")]
pub fn convert_batches(
    batches: impl reel_arrow::arrow_array::RecordBatchReader,
    dst: impl AsRef<Path>,
    options: &ConvertOptions,
) -> Result<ConvertReport> {
    let dst = dst.as_ref();
    if options.shard.is_some() {
        return Err(Error::invalid_input(
            "a stream of Arrow batches converts whole: its length is not known, so it has no \
             shards",
        ));
    }
    let existing = if options.overwrite { Existing::Overwrite } else { Existing::Refuse };
    if !is_remote(dst)? {
        check_destination(dst, &[], existing)?;
    }
    let mut records = reel_arrow::BatchRecords::new(batches)?;
    let info = records.info().clone();
    let target = Target {
        from: Format::ArrowIpc,
        schema: info.schema.as_ref(),
        records: None,
        dst,
        source: None,
    };
    let mut feed = std::iter::from_fn(|| {
        let mut batch = RecordBatch::new();
        let budget = crate::verify::STREAM_BATCH_BYTES as usize;
        match records.next_records(*BATCH_RECORDS.start(), budget, &mut batch) {
            Ok(true) => Some(Ok(reel_core::PooledBatch::unpooled(batch))),
            Ok(false) => None,
            Err(e) => Some(Err(e)),
        }
    });
    write_batches(&target, options, &mut feed, &mut drop)
}

/// States what reading a Parquet or Arrow IPC source loses of its columns' Arrow types
/// ([`reel_arrow::read_losses`]: timestamps and dates as plain integers, narrower numbers
/// widened, …), for the fields written and under their written names, so that
/// `--lossless-only` refuses them before anything is written. Returns the columns whose rows
/// read as 1-D arrays except where a row holds a null item ([`lists_read_as_lists`]), as
/// (source name, written name).
fn table_read_losses(
    target: &Target<'_>,
    options: &ConvertOptions,
    losses: &mut rules::Losses,
) -> Vec<(String, String)> {
    let (true, Some(schema)) =
        (matches!(target.from, Format::Parquet | Format::ArrowIpc), target.schema)
    else {
        return Vec::new();
    };
    #[cfg(feature = "arrow")]
    {
        let mut arrays = Vec::new();
        // A Parquet or IPC target given a schema writes some columns back as the source
        // declares them (`--schema-from` the source itself): nothing of theirs is lost.
        let given = options
            .arrow
            .arrow
            .schema
            .as_ref()
            .filter(|_| matches!(options.to, Format::Parquet | Format::ArrowIpc));
        for spec in schema {
            let Some(name) = options.fields.written_name(&spec.name) else { continue };
            let restored = given
                .and_then(|s| s.field_with_name(name).ok())
                .is_some_and(|target| reel_arrow::type_restored(spec, target));
            if restored {
                continue;
            }
            for loss in reel_arrow::read_losses(spec) {
                // The path below the column keeps its own names; the column is renamed.
                let field =
                    format!("{name}{}", &loss.field[spec.name.len().min(loss.field.len())..]);
                rules::lose(losses, &field, &loss.what);
            }
            if reel_arrow::reads_as_arrays(spec) {
                arrays.push((spec.name.clone(), name.to_string()));
            }
        }
        arrays
    }
    #[cfg(not(feature = "arrow"))]
    {
        let _ = (schema, options, losses);
        Vec::new()
    }
}

/// States the loss of a row of an array column ([`table_read_losses`]) that read as a list
/// because it holds a null item: the column's other rows are arrays.
fn lists_read_as_lists(
    array_columns: &[(String, String)],
    record: &RecordRef<'_>,
    losses: &mut rules::Losses,
) {
    for (source, written) in array_columns {
        if let Some(reel_core::ValueRef::List(_)) = record.get(source) {
            rules::lose(
                losses,
                written,
                "a list holding a null item is read as a list of values, not as a 1-D array \
                 like the column's other rows",
            );
        }
    }
}

/// The declared fields a record gets as null where it lacks them: a null cell of a Parquet
/// or Arrow column reads as no field, and a Granular or bags datapoint needs every key of
/// its spec (the reference writer asserts it).
fn null_fields(
    schema: Option<&Vec<reel_core::FieldSpec>>,
    from: Format,
    to: Format,
) -> Vec<String> {
    let table_source = matches!(from, Format::Parquet | Format::ArrowIpc);
    let needs_every_key = matches!(to, Format::Granular | Format::Bags);
    match schema {
        Some(schema) if table_source && needs_every_key => {
            schema.iter().map(|f| f.name.clone()).collect()
        }
        _ => Vec::new(),
    }
}

/// Declares again the types a Granular or bags dataset's columns had before they went
/// through Parquet or Arrow IPC (`jpg`, `png` …, kept in the columns' metadata: see
/// [`reel_arrow::REEL_DECLARED_KEY`]), for targets that have them: so images written back
/// to Granular decode as images again, not as bytes.
#[cfg(feature = "arrow")]
fn restore_declared_types(
    schema: &mut Option<Vec<reel_core::FieldSpec>>,
    from: Format,
    to: Format,
) {
    let table_source = matches!(from, Format::Parquet | Format::ArrowIpc);
    let keeps_them =
        matches!(to, Format::Granular | Format::Bags | Format::Parquet | Format::ArrowIpc);
    if !(table_source && keeps_them) {
        return;
    }
    for field in schema.iter_mut().flatten() {
        if let Some(declared) = reel_arrow::declared_type(&field.kind) {
            field.kind = declared.to_string();
        }
    }
}

/// Gives the fields of [`ConvertOptions::nullable`] the type `msgpack` in `schema`.
fn declare_nullable(
    schema: &mut Option<Vec<reel_core::FieldSpec>>,
    options: &ConvertOptions,
) -> Result<()> {
    if options.nullable.is_empty() {
        return Ok(());
    }
    if !matches!(options.to, Format::Granular | Format::Bags) {
        return Err(Error::invalid_input(format!(
            "nullable fields are a Granular and bags setting; {} is not one",
            options.to
        )));
    }
    let fields = schema.get_or_insert_with(Vec::new);
    for name in &options.nullable {
        match fields.iter_mut().find(|f| f.name == *name) {
            Some(f) => f.kind = "msgpack".into(),
            None => {
                fields.push(reel_core::FieldSpec { name: name.clone(), kind: "msgpack".into() })
            }
        }
    }
    Ok(())
}

/// A writer's refusal of `record`, saying which null field it was and what to do when the
/// record holds a null the target's column type cannot (Granular's `bytes`, `utf8`, `int`,
/// `array` …).
fn null_refused(e: Error, record: &RecordRef<'_>, to: Format) -> Error {
    if !matches!(to, Format::Granular | Format::Bags) || e.kind() != reel_core::ErrorKind::Schema {
        return e;
    }
    let nulls: Vec<&str> = record
        .iter()
        .filter(|(_, v)| matches!(v, reel_core::ValueRef::Null))
        .map(|(name, _)| name)
        .filter(|name| e.message().contains(&format!("{name:?}")))
        .collect();
    if nulls.is_empty() {
        return e;
    }
    Error::new(
        e.kind(),
        format!(
            "{}: field {} is null (a null cell), which the column's {to} type, chosen from the \
             first record, cannot hold; only msgpack and tree columns hold null (--nullable {} \
             writes it as msgpack)",
            e.message(),
            nulls.iter().map(|n| format!("{n:?}")).collect::<Vec<_>>().join(", "),
            nulls.join(",")
        ),
    )
}

/// The buffers a record passes through on its way to the sink, reused for every record.
#[derive(Default)]
struct Stages {
    /// Fields a record lacking them gets as null ([`null_fields`]).
    complete: Vec<String>,
    /// The fields the source declares, which a field mapping may name although a record
    /// lacks them.
    declared: Vec<reel_core::FieldSpec>,
    completed: Record,
    mapped: Record,
    nested: Record,
    packed: Record,
    adapted: Record,
    scratch: Vec<u8>,
}

impl Stages {
    /// Field mapping, nested encoding, packing, then the target's own rules; returns the
    /// record to append.
    fn prepare<'a>(
        &'a mut self,
        options: &ConvertOptions,
        record: &RecordRef<'a>,
        losses: &mut rules::Losses,
    ) -> Result<RecordRef<'a>> {
        let Stages { complete, declared, completed, mapped, nested, packed, adapted, scratch } =
            self;
        let mut current = *record;
        if complete.iter().any(|name| current.get(name).is_none()) {
            completed.clear();
            for name in complete.iter() {
                match current.get(name) {
                    Some(v) => completed.push_value(name.as_str(), v),
                    None => completed.push_value(name.as_str(), reel_core::ValueRef::Null),
                };
            }
            completed.set_index(record.index());
            current = completed.view();
        }
        if !options.fields.is_identity() {
            options.fields.apply(&current, declared, mapped)?;
            mapped.set_index(record.index());
            current = mapped.view();
        }
        if let Some(codec) = options.encode_nested {
            let encoded = encode_nested(codec, options.to, &current, nested, scratch)?;
            if !encoded.is_empty() {
                for (name, kind) in encoded {
                    rules::lose(
                        losses,
                        &name,
                        &format!(
                            "the {kind} is stored as {} bytes (reel::Codec layout; --payload {} \
                             with --payload-field {name} reads it back)",
                            codec.name(),
                            codec.name()
                        ),
                    );
                }
                nested.set_index(record.index());
                current = nested.view();
            }
        }
        if let Some(codec) = options.pack {
            pack_record(codec, &current, packed, scratch)?;
            rules::lose(
                losses,
                "*",
                &format!(
                    "all fields are packed into one {} value in the bytes field \"data\" \
                     (--payload {} reads them back)",
                    codec.name(),
                    codec.name()
                ),
            );
            packed.set_index(record.index());
            current = packed.view();
        }
        if rules::adapt(options.to, &current, adapted, losses)? {
            adapted.set_index(record.index());
            Ok(adapted.view())
        } else {
            Ok(current)
        }
    }
}

/// The names, in the directory of a multi-part dataset, of the files or directory making up
/// part `k` of `count`: `PART_0000k.ffr`, `part-0000k`, `part-0000k.syr`, the Granular shard
/// `00000k`, the gulp chunk's data and meta files. Numbers are zero-padded to at least five
/// digits (six for shards) and to as many as `count` needs, so names sort in part order;
/// gulp chunks, which cannot be padded, are numbered by
/// [`ordered_chunk_number`](reel_gulp::discovery::ordered_chunk_number) where the `gulp`
/// feature is built.
pub fn part_names(to: Format, k: u64, count: u64) -> Vec<String> {
    let digits = count.saturating_sub(1).max(1).ilog10() as usize + 1;
    let (w5, w6) = (digits.max(5), digits.max(6));
    match to {
        Format::Ffrecord => vec![format!("PART_{k:0w5$}.ffr")],
        Format::Ofrecord => vec![format!("part-{k:0w5$}")],
        Format::Syrah => vec![format!("part-{k:0w5$}.syr")],
        Format::Granular | Format::Bags => vec![format!("{k:0w6$}")],
        Format::Parquet => vec![format!("part-{k:0w5$}.parquet")],
        Format::ArrowIpc => vec![format!("part-{k:0w5$}.arrow")],
        Format::Gulp => {
            let n = gulp_chunk_number(k, count);
            vec![format!("data_{n}.gulp"), format!("meta_{n}.gmeta")]
        }
    }
}

/// The number of gulp chunk `k` of `count` (see [`part_names`]).
fn gulp_chunk_number(k: u64, count: u64) -> u64 {
    #[cfg(feature = "gulp")]
    {
        reel_gulp::discovery::ordered_chunk_number(k, count)
    }
    #[cfg(not(feature = "gulp"))]
    {
        let _ = count;
        k
    }
}

/// A sink writing part `k` of `count` of a multi-part dataset in the directory `dir` (created
/// if needed, except under a job's staging location: see [`crate::parts`]), under the names
/// [`part_names`] gives: what `reel convert --shard k/count`
/// writes, and what a distributed writer (Ray) writes per task. Returns the sink and the path
/// it writes (the part, or `dir` for a gulp chunk, which is two files).
///
/// `dir` may be an object-store URL: the part is then staged locally and uploaded when the
/// sink finishes, as [`create`](crate::create) does for a whole dataset (objects of this
/// part already there are refused unless [`CreateOptions::overwrite`]). Parts uploaded this
/// way become visible one by one; [`crate::parts`] publishes a dataset written in parts
/// only once every part is done.
pub fn create_part(
    dir: &Path,
    to: Format,
    k: u64,
    count: u64,
    create: &CreateOptions,
) -> Result<(Box<dyn RecordSink>, PathBuf)> {
    if k >= count {
        // Part 5 of 2 would be named as no reader of the dataset expects.
        return Err(Error::invalid_input(format!(
            "part {k} of {count} does not exist (parts are numbered 0 to count - 1)"
        ))
        .with_path(dir));
    }
    if create.part_bytes.is_some() {
        return Err(Error::invalid_input(
            "a part size does not apply to one part of a multi-part dataset (each part is \
             one file or shard): give one or the other",
        )
        .with_path(dir));
    }
    #[cfg(feature = "object-store")]
    if let Some(reel_store::Address::Remote(url)) = crate::create::remote_address(dir)? {
        return crate::remote_sink::create_remote_part(&url, to, k, count, create);
    }
    let fence = match crate::parts::staging_of(dir) {
        // A part of a job in parts (`reel::parts`): a discarded staging location is never
        // re-created, not even by the format writer's own directory creation.
        Some(staging) => Some(crate::parts::LocalFence::enter(staging, dir)?),
        None => {
            std::fs::create_dir_all(dir)
                .map_err(|e| Error::io(e, "cannot create the output directory").with_path(dir))?;
            None
        }
    };
    let (sink, path) = create_local_part(dir, to, k, count, create)?;
    let sink = match fence {
        Some(fence) => fence.check(sink)?,
        None => sink,
    };
    Ok((sink, path))
}

/// [`create_part`] in the existing local directory `dir`.
pub(crate) fn create_local_part(
    dir: &Path,
    to: Format,
    k: u64,
    count: u64,
    create: &CreateOptions,
) -> Result<(Box<dyn RecordSink>, PathBuf)> {
    if to == Format::Gulp {
        let n = gulp_chunk_number(k, count);
        return crate::formats::gulp_chunk_sink(dir, n).map(|s| (s, dir.to_path_buf()));
    }
    let mut names = part_names(to, k, count);
    let part = dir.join(names.swap_remove(0));
    let sink = match to {
        Format::Ofrecord => {
            let existing = if create.overwrite { Existing::Overwrite } else { Existing::Refuse };
            check_destination(&part, &[], existing)?;
            crate::formats::ofrecord_part_sink(&part, create)?
        }
        _ => crate::create(&part, to, create)?,
    };
    Ok((sink, part))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// An FFRecord file of `n` records of `size` bytes, opened.
    fn source(dir: &Path, n: usize, size: usize) -> Box<dyn RecordSource> {
        let path = dir.join(format!("{n}x{size}.ffr"));
        crate::ffrecord::dump((0..n).map(|_| vec![7u8; size]), &path, 1).unwrap();
        crate::open(&path).unwrap()
    }

    /// A part that does not exist (`k >= count`, or no parts at all) is refused before
    /// anything is created, as a shard of a conversion is.
    #[test]
    fn parts_outside_their_count_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("parts");
        for (k, count) in [(5, 2), (2, 2), (0, 0), (u64::MAX, 1)] {
            let refused = create_part(&out, Format::Ffrecord, k, count, &CreateOptions::default());
            let e = refused.err().unwrap();
            assert_eq!(e.kind(), reel_core::ErrorKind::InvalidInput, "{k} of {count}");
            assert!(e.message().contains(&format!("part {k} of {count} does not exist")), "{e}");
        }
        assert!(!out.exists());
        assert!(create_part(&out, Format::Ffrecord, 1, 2, &CreateOptions::default()).is_ok());
    }

    /// Batches aim at about 1 MiB: small records many to a batch (fewer hand-overs between
    /// the threads), large ones at least 64, and an empty range the fewest.
    #[test]
    fn batch_size_follows_the_records_size() {
        let dir = tempfile::tempdir().unwrap();
        let small = source(dir.path(), 100, 1024);
        assert_eq!(batch_records(&*small, &(0..100)), 1024);
        assert_eq!(batch_records(&*small, &(50..50)), 64);
        let tiny = source(dir.path(), 100, 16);
        assert_eq!(batch_records(&*tiny, &(0..100)), 4096);
        let large = source(dir.path(), 80, 64 << 10);
        assert_eq!(batch_records(&*large, &(10..80)), 64);
        // A source that cannot locate its records has a few of them read instead.
        let hidden = Unlocated(source(dir.path(), 100, 4096));
        assert_eq!(batch_records(&hidden, &(0..100)), 256);
    }

    /// A source that does not tell where its records are stored.
    struct Unlocated(Box<dyn RecordSource>);

    impl RecordSource for Unlocated {
        fn info(&self) -> &reel_core::SourceInfo {
            self.0.info()
        }
        fn len(&self) -> u64 {
            self.0.len()
        }
        fn read_into(&self, index: u64, out: &mut reel_core::Record) -> Result<()> {
            self.0.read_into(index, out)
        }
        fn read_batch_into(&self, indices: &[u64], out: &mut RecordBatch) -> Result<()> {
            self.0.read_batch_into(indices, out)
        }
    }
}
