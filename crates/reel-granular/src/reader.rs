//! Opening Granular and bags datasets.

use std::ops::Range;
use std::path::Path;

use reel_core::{
    Backend, Error, ErrorKind, LayoutSource, Limits, PartlyOpen, ReadAt, Record, RecordBatch,
    RecordSource, Result, SourceInfo, StoreRef,
};

use crate::FORMAT;
use crate::bag::BagTable;
use crate::codec::{CodecTable, IntSigning};
use crate::files::{DatasetFiles, Generation, ShardSelection};
use crate::layout::{DiskRanges, GranularLayout};
use crate::mask::{Available, GranularMask, Selection};
use crate::spec::GranularSpec;

/// How to open a Granular dataset.
#[derive(Clone, Debug)]
pub struct GranularOptions {
    /// The I/O backend (default: pread).
    pub backend: Backend,
    /// Where the files are (default: the local file system).
    pub store: StoreRef,
    /// Size and count limits.
    pub limits: Limits,
    /// Hold every index table in memory (the reference's `cache_index`, on by default).
    /// Off, the current layout reads the index entries of each batch in one extra batched
    /// request; refs-based datasets always hold their tables (the table position is only
    /// known from the end of each file).
    pub cache_index: bool,
    /// Keys whose whole data file is loaded into memory at open (the reference's
    /// `cache_keys`): reading them then costs no I/O. `"refs"` is accepted for refs-based
    /// datasets, whose `refs.bag` is always held in memory.
    pub cache_keys: Vec<String>,
    /// Read the directory as this generation instead of telling it from the files.
    pub generation: Option<Generation>,
    /// How `int` fields are read (default: unsigned for single-file v1 datasets, written by
    /// bags and granular < 0.17.1, signed otherwise).
    pub int_signing: Option<IntSigning>,
    /// Decode records with the type's codec (on by default). Off, every field is the stored
    /// bytes (the reference's `decoders=None`).
    pub decode: bool,
    /// Decode `jpg`/`jpeg`/`png` fields to pixel arrays instead of keeping the encoded bytes.
    pub decode_images: bool,
    /// Decode `mp4`/`webm` fields (not supported: opening fails with `Unsupported`; keep it
    /// off to get the encoded bytes).
    pub decode_video: bool,
    /// Refuse msgpack maps whose keys are not str or bytes, as the reference's decoder does
    /// (`strict_map_key`). Off by default: reel reads such maps.
    pub strict_map_keys: bool,
    /// Codecs for types the standard table does not know (or to replace standard ones).
    pub codecs: CodecTable,
    /// Which shards of a sharded dataset to read.
    pub shards: ShardSelection,
    /// Read only these keys (default: all). Records then hold the selected keys, in spec
    /// order, and the schema lists only them; the other keys' record data is never read
    /// and their values never decoded, so damaged records (or a type reel cannot decode) of
    /// a key left out do not fail a read. In the current layout their indexes are not read
    /// at open either: the length comes from the selected keys, so a torn or short index of
    /// a key left out fails only a [`read_masked`](GranularReader::read_masked) of that key
    /// (which reads its index entries from disk). Their files are still opened, so a
    /// missing one fails the open; refs-based datasets read every bag's table at open. A
    /// name the spec does not have is an error naming the keys it has.
    pub keys: Option<Vec<String>>,
    /// Leave these keys out (of [`keys`](Self::keys), or of all), as `keys` does.
    pub skip_keys: Vec<String>,
}

impl Default for GranularOptions {
    fn default() -> Self {
        GranularOptions {
            backend: Backend::Pread,
            store: reel_core::local_store(),
            limits: Limits::default(),
            cache_index: true,
            cache_keys: Vec::new(),
            generation: None,
            int_signing: None,
            decode: true,
            decode_images: false,
            decode_video: false,
            strict_map_keys: false,
            codecs: CodecTable::new(),
            shards: ShardSelection::default(),
            keys: None,
            skip_keys: Vec::new(),
        }
    }
}

impl GranularOptions {
    /// Reads the files from `store`.
    pub fn store(mut self, store: StoreRef) -> Self {
        self.store = store;
        self
    }

    /// Uses `backend` for reads.
    pub fn backend(mut self, backend: Backend) -> Self {
        self.backend = backend;
        self
    }

    /// Uses `limits`.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Sets [`cache_index`](Self::cache_index).
    pub fn cache_index(mut self, on: bool) -> Self {
        self.cache_index = on;
        self
    }

    /// Sets [`cache_keys`](Self::cache_keys).
    pub fn cache_keys<S: Into<String>>(mut self, keys: impl IntoIterator<Item = S>) -> Self {
        self.cache_keys = keys.into_iter().map(Into::into).collect();
        self
    }

    /// Sets [`generation`](Self::generation).
    pub fn generation(mut self, generation: Generation) -> Self {
        self.generation = Some(generation);
        self
    }

    /// Sets [`int_signing`](Self::int_signing).
    pub fn int_signing(mut self, signing: IntSigning) -> Self {
        self.int_signing = Some(signing);
        self
    }

    /// Sets [`decode`](Self::decode).
    pub fn decode(mut self, on: bool) -> Self {
        self.decode = on;
        self
    }

    /// Sets [`decode_images`](Self::decode_images).
    pub fn decode_images(mut self, on: bool) -> Self {
        self.decode_images = on;
        self
    }

    /// Sets [`strict_map_keys`](Self::strict_map_keys).
    pub fn strict_map_keys(mut self, on: bool) -> Self {
        self.strict_map_keys = on;
        self
    }

    /// Sets [`codecs`](Self::codecs).
    pub fn codecs(mut self, codecs: CodecTable) -> Self {
        self.codecs = codecs;
        self
    }

    /// Reads only the keys `keys` (see [`keys`](Self::keys)).
    pub fn keys<S: Into<String>>(mut self, keys: impl IntoIterator<Item = S>) -> Self {
        self.keys = Some(keys.into_iter().map(Into::into).collect());
        self
    }

    /// Leaves the keys `keys` out (see [`skip_keys`](Self::skip_keys)).
    pub fn skip_keys<S: Into<String>>(mut self, keys: impl IntoIterator<Item = S>) -> Self {
        self.skip_keys = keys.into_iter().map(Into::into).collect();
        self
    }

    /// Reads shards `start, start + step, …` of a sharded dataset.
    pub fn shards(mut self, start: usize, step: usize) -> Self {
        self.shards = ShardSelection { start, step };
        self
    }
}

/// A Granular or bags dataset of any generation, sharded or not, as one [`RecordSource`].
///
/// Each datapoint is a record with one field per spec key, in spec order, decoded by the
/// key's codec: bytes and text are zero-copy spans of the read, msgpack and tree values are
/// built over spans of the record, sequence (`type[]`) keys are lists.
///
/// * [`read_masked`](Self::read_masked) reads some keys, and for sequence keys a range of
///   items with one contiguous read; [`available`](Self::available) tells what a datapoint
///   has; [`read_range`](Self::read_range) reads consecutive datapoints.
/// * Batch reads plan one byte range per key and datapoint and fetch them with one
///   `read_many`; index tables (and `refs.bag`) are held in memory, so no index I/O
///   happens per read unless [`GranularOptions::cache_index`] is off.
///
/// Differences from the reference readers: refs-based datasets (which granular 0.22+
/// cannot open at all) are read, with their sequences; every inconsistency of a table
/// (decreasing offsets, a table past the data, a torn index entry, refs pointing past a
/// bag) is [`Corrupt`](reel_core::ErrorKind::Corrupt) instead of garbage or a crash; an
/// index equal to the length is out of range (bags 0.5.1's sharded reader returns `None`);
/// files beside the shard folders of a sharded root are ignored; msgpack maps with integer
/// keys are read unless [`GranularOptions::strict_map_keys`] is set.
pub struct GranularReader<F: ReadAt = Box<dyn ReadAt>> {
    source: LayoutSource<GranularLayout, F>,
    files: DatasetFiles,
}

impl GranularReader {
    /// Opens the dataset directory or sharded root at `path` with default options.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        Self::open_with(path, &GranularOptions::default())
    }

    /// Opens the dataset directory or sharded root at `path`.
    pub fn open_with(path: impl AsRef<Path>, options: &GranularOptions) -> Result<Self> {
        let path = path.as_ref();
        let desc =
            DatasetFiles::discover_in(&*options.store, path, options.generation, options.shards)
                .map_err(|e| e.with_format(FORMAT))?;
        let (desc, files) = match options.store.open_files(desc.paths(), &options.backend) {
            Ok(files) => (desc, files),
            Err(e) if e.kind() == ErrorKind::NotFound => {
                open_without_keys_left_out(desc, options, e).map_err(|e| e.with_format(FORMAT))?
            }
            Err(e) => return Err(e.with_format(FORMAT)),
        };
        GranularReader::from_files(desc, files, options)
    }
}

/// Opens the files of `desc` but the missing ones of keys `options` leaves out (a dataset
/// copied without its image bags, read for its labels), which are numbered last and read
/// as not found; `missing`, the error opening every file gave, when no key is left out,
/// or no missing file is one of theirs.
fn open_without_keys_left_out(
    desc: DatasetFiles,
    options: &GranularOptions,
    missing: Error,
) -> Result<(DatasetFiles, Box<dyn ReadAt>)> {
    let wanted = |key: &str| {
        options.keys.as_ref().is_none_or(|keys| keys.iter().any(|k| k == key))
            && !options.skip_keys.iter().any(|k| k == key)
    };
    let Some(first) = desc.shards().first() else { return Err(missing) };
    // Every key wanted, or none (then every key's index counts): nothing may be missing.
    if first.columns.iter().all(|c| wanted(&c.key)) || !first.columns.iter().any(|c| wanted(&c.key))
    {
        return Err(missing);
    }
    let mut absent = std::collections::HashSet::new();
    for shard in desc.shards() {
        for column in shard.columns.iter().filter(|c| !wanted(&c.key)) {
            for file in std::iter::once(column.bag).chain(column.idx) {
                let path = &desc.paths()[file as usize];
                if !options.store.exists(path) {
                    absent.insert(path.clone());
                }
            }
        }
    }
    if absent.is_empty() {
        return Err(missing);
    }
    let (desc, opened) = desc.with_first(|path| !absent.contains(path));
    let files = options.store.open_files(&desc.paths()[..opened], &options.backend)?;
    let files = PartlyOpen::new(
        files,
        desc.paths()[opened..].to_vec(),
        "it is a file of a key left out when the dataset was opened, which is not there",
    );
    Ok((desc, Box::new(files)))
}

impl<F: ReadAt> GranularReader<F> {
    /// Reads a dataset whose files are already open (numbered as `desc` says), e.g. a
    /// [`MemFiles`](reel_core::MemFiles) set built from [`DatasetFiles::in_memory`].
    pub fn from_files(desc: DatasetFiles, files: F, options: &GranularOptions) -> Result<Self> {
        let layout =
            GranularLayout::open(&desc, &files, options).map_err(|e| e.with_format(FORMAT))?;
        Ok(GranularReader {
            source: LayoutSource::new(layout, files, options.limits.clone()),
            files: desc,
        })
    }

    /// The spec, in the order `spec.json` lists the keys (the order of record fields).
    pub fn spec(&self) -> &GranularSpec {
        &self.source.layout().spec
    }

    /// The generation of the dataset.
    pub fn generation(&self) -> Generation {
        self.source.layout().shards.first().map_or(Generation::Indexed, |s| s.generation)
    }

    /// How `int` fields are read.
    pub fn int_signing(&self) -> IntSigning {
        self.source.layout().int_signing
    }

    /// Bytes of record data and index tables (the reference's `size`).
    pub fn size(&self) -> u64 {
        self.source.layout().size()
    }

    /// Number of shards read (1 for an unsharded dataset).
    pub fn shard_count(&self) -> usize {
        self.source.layout().shards.len()
    }

    /// Datapoints in shard `shard` of the selection.
    pub fn shard_len(&self, shard: usize) -> Option<u64> {
        self.source.layout().shard_len(shard)
    }

    /// The files read, by role.
    pub fn dataset_files(&self) -> &DatasetFiles {
        &self.files
    }

    /// The table of `key`'s bag in shard `shard` (`"refs"` for `refs.bag`), when it is held
    /// in memory.
    pub fn bag_table(&self, shard: usize, key: &str) -> Option<&BagTable> {
        let layout = self.source.layout();
        let s = layout.shards.get(shard)?;
        if key == "refs" && !layout.columns.iter().any(|c| &*c.name == "refs") {
            return s.refs.as_ref().map(|r| &r.table);
        }
        let col = layout.columns.iter().position(|c| &*c.name == key)?;
        s.columns.get(col)?.table()
    }

    /// Reads the keys (and sequence items) `mask` selects of datapoint `index`.
    pub fn read_masked(&self, index: u64, mask: &GranularMask) -> Result<Record> {
        let mut r = Record::new();
        self.read_masked_into(index, mask, &mut r)?;
        Ok(r)
    }

    /// [`read_masked`](Self::read_masked) into a reused record.
    pub fn read_masked_into(
        &self,
        index: u64,
        mask: &GranularMask,
        out: &mut Record,
    ) -> Result<()> {
        let sel = self.source.layout().select(mask).map_err(|e| e.with_format(FORMAT))?;
        self.read_selection(index, &sel, out)
    }

    /// Reads `mask` of each datapoint of `indices` in one batched read.
    pub fn read_batch_masked_into(
        &self,
        indices: &[u64],
        mask: &GranularMask,
        out: &mut RecordBatch,
    ) -> Result<()> {
        let sel = self.source.layout().select(mask).map_err(|e| e.with_format(FORMAT))?;
        self.read_batch_selection(indices, &sel, out)
    }

    /// Reads datapoints `range` (the end clamped to the length, as the reference's slices
    /// are), with `mask` or every key when `None`.
    pub fn read_range(
        &self,
        range: Range<u64>,
        mask: Option<&GranularMask>,
    ) -> Result<RecordBatch> {
        if range.start > range.end {
            return Err(Error::invalid_input(format!(
                "range start {} is after its end {}",
                range.start, range.end
            ))
            .with_format(FORMAT));
        }
        let end = range.end.min(self.len());
        let indices: Vec<u64> = (range.start..end.max(range.start)).collect();
        let mut batch = RecordBatch::new();
        match mask {
            Some(m) => self.read_batch_masked_into(&indices, m, &mut batch)?,
            None => self.read_batch_into(&indices, &mut batch)?,
        }
        Ok(batch)
    }

    /// What datapoint `index` has of each key: `None` for scalar keys, the item range of
    /// sequence keys (the reference's `available(i)`). Costs no I/O.
    pub fn available(&self, index: u64) -> Result<Vec<Available>> {
        self.source.layout().available(index)
    }

    fn disk_ranges(&self, indices: &[u64], sel: &Selection) -> Result<Option<DiskRanges>> {
        let layout = self.source.layout();
        if !layout.needs_disk(sel) {
            return Ok(None);
        }
        layout.resolve_on_disk(indices, sel, self.source.files()).map(Some)
    }

    /// Appends the ranges of record `index` (every key) to `ranges`, with the index entries
    /// `disk` resolved from disk where the dataset keeps them there.
    fn locate_in(
        &self,
        index: u64,
        disk: Option<&DiskRanges>,
        ranges: &mut Vec<reel_core::ReadRange>,
    ) -> Result<bool> {
        let (layout, sel) = (self.source.layout(), self.source.layout().all());
        self.source.locate_with(index, ranges, |i, p| layout.plan_with(i, sel, disk, p))?;
        Ok(true)
    }

    fn read_selection(&self, index: u64, sel: &Selection, out: &mut Record) -> Result<()> {
        let disk = match self.disk_ranges(&[index], sel) {
            Ok(d) => d,
            Err(e) => {
                out.clear();
                return Err(e);
            }
        };
        let layout = self.source.layout();
        let disk = disk.as_ref();
        self.source.read_with(
            index,
            out,
            |i, p| layout.plan_with(i, sel, disk, p),
            |i, raw, o| layout.decode_with(i, sel, disk, raw, o),
        )
    }

    fn read_batch_selection(
        &self,
        indices: &[u64],
        sel: &Selection,
        out: &mut RecordBatch,
    ) -> Result<()> {
        let disk = match self.disk_ranges(indices, sel) {
            Ok(d) => d,
            Err(e) => {
                out.clear();
                return Err(e);
            }
        };
        let layout = self.source.layout();
        let disk = disk.as_ref();
        self.source.read_batch_prefetched(
            indices,
            out,
            |i| layout.prefetch_with(i, sel),
            |i, p| layout.plan_with(i, sel, disk, p),
            |i, raw, o| layout.decode_with(i, sel, disk, raw, o),
        )
    }
}

impl<F: ReadAt> RecordSource for GranularReader<F> {
    fn info(&self) -> &SourceInfo {
        self.source.info()
    }

    fn len(&self) -> u64 {
        self.source.len()
    }

    fn read_into(&self, index: u64, out: &mut Record) -> Result<()> {
        let sel = self.source.layout().all();
        if self.source.layout().needs_disk(sel) {
            return self.read_selection(index, sel, out);
        }
        self.source.read_into(index, out)
    }

    fn read_batch_into(&self, indices: &[u64], out: &mut RecordBatch) -> Result<()> {
        let sel = self.source.layout().all();
        if self.source.layout().needs_disk(sel) {
            return self.read_batch_selection(indices, sel, out);
        }
        self.source.read_batch_into(indices, out)
    }

    /// Passes the hint on while the bags' index entries are all in memory, where the
    /// records are planned as the read will plan them. Entries left on disk would have to
    /// be read before anything could be hinted: no hint then.
    fn will_read(&self, indices: &[u64]) {
        if !self.source.layout().needs_disk(self.source.layout().all()) {
            self.source.will_read(indices)
        }
    }

    fn backend_name(&self) -> &'static str {
        self.source.backend_name()
    }

    fn locate(&self, index: u64, ranges: &mut Vec<reel_core::ReadRange>) -> Result<bool> {
        let disk = self.disk_ranges(&[index], self.source.layout().all())?;
        self.locate_in(index, disk.as_ref(), ranges)
    }

    fn locate_many(&self, indices: &[u64], out: &mut reel_core::Located) -> Result<bool> {
        // Index entries left on disk are read once for the batch (one batched read), not
        // once per record.
        let disk =
            self.disk_ranges(indices, self.source.layout().all()).inspect_err(|_| out.clear())?;
        out.locate_each(indices, |index, ranges| self.locate_in(index, disk.as_ref(), ranges))
    }

    fn file_path(&self, file: u32) -> Option<&Path> {
        self.source.file_path(file)
    }
}
