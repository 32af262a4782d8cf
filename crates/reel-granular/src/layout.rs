//! Plan and decode for Granular datasets: where each field of datapoint `i` lives and how
//! its bytes become values.
//!
//! A datapoint's fields come from one byte range per key: record `i` of `<key>.bag` in the
//! current layout; for refs-based datasets the record (or, for a sequence, the contiguous
//! run of records) that `refs.bag` names. Index tables and `refs.bag` are held in memory,
//! so planning a datapoint does no I/O; decoding reads the fetched ranges.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use reel_core::{
    Error, FieldName, FieldSpec, Layout, Limits, Plan, ReadAt, RecordOut, Result, SourceInfo, Span,
    Value, Warning, WarningKind, check_within,
};

use crate::FORMAT;
use crate::bag::{self, BagKind, BagTable, ENTRY};
use crate::codec::{self, CodecFamily, CodecSettings, GranularCodec, IntSigning};
use crate::files::{ColumnFiles, DatasetFiles, Generation, ShardFiles};
use crate::mask::{GranularMask, Items, Pick, Selection};
use crate::reader::GranularOptions;
use crate::refs::{RefItem, for_each_ref};
use crate::spec::{GranularSpec, TypeSpec};

/// A field of the dataset: its name, type and codec (shared by all shards).
pub(crate) struct Column {
    pub(crate) name: FieldName,
    pub(crate) type_string: String,
    pub(crate) sequence: bool,
    codec: Arc<dyn GranularCodec>,
}

/// Where a column's record boundaries come from.
pub(crate) enum ColumnIndex {
    /// Read at open (the reference's `cache_index=True`).
    Memory(BagTable),
    /// Read from `<key>.idx` per batch (`cache_index=False`); `len` entries.
    OnDisk { idx_file: u32, len: u64 },
}

pub(crate) struct ShardColumn {
    pub(crate) data_file: u32,
    data_path: PathBuf,
    pub(crate) index: ColumnIndex,
    /// The whole data file, when the key is in `cache_keys`.
    cached: Option<Arc<[u8]>>,
}

impl ShardColumn {
    fn len(&self) -> u64 {
        match &self.index {
            ColumnIndex::Memory(t) => t.len(),
            ColumnIndex::OnDisk { len, .. } => *len,
        }
    }

    pub(crate) fn table(&self) -> Option<&BagTable> {
        match &self.index {
            ColumnIndex::Memory(t) => Some(t),
            ColumnIndex::OnDisk { .. } => None,
        }
    }
}

/// `refs.bag` in memory: its table and record bytes.
pub(crate) struct Refs {
    pub(crate) table: BagTable,
    data: Arc<[u8]>,
    path: PathBuf,
}

impl Refs {
    fn record(&self, local: u64) -> Result<&[u8]> {
        let (off, len) = self
            .table
            .range(local)
            .ok_or_else(|| Error::corrupt("datapoint missing from refs.bag"))?;
        usize::try_from(off)
            .ok()
            .and_then(|o| self.data.get(o..o.checked_add(usize::try_from(len).ok()?)?))
            .ok_or_else(|| Error::corrupt("refs.bag record lies outside the file"))
    }
}

pub(crate) struct Shard {
    pub(crate) dir: PathBuf,
    pub(crate) generation: Generation,
    pub(crate) columns: Vec<ShardColumn>,
    pub(crate) refs: Option<Refs>,
    pub(crate) size: u64,
}

/// The index of a Granular dataset (one directory or a sharded root) as read at open.
pub(crate) struct GranularLayout {
    info: SourceInfo,
    pub(crate) spec: GranularSpec,
    pub(crate) columns: Vec<Column>,
    pub(crate) shards: Vec<Shard>,
    /// Global index of each shard's first datapoint, then the total.
    starts: Vec<u64>,
    all: Selection,
    sequence_flags: Vec<bool>,
    pub(crate) int_signing: IntSigning,
    /// Whether some column's index is read per batch (`cache_index` off).
    any_on_disk: bool,
}

/// Where a field of one datapoint is stored in its column bag.
#[derive(Clone, Copy, Debug)]
enum Target {
    Scalar(u64),
    Items { first: u64, count: u64 },
}

/// The record boundaries of columns whose index is not in memory, fetched for one batch.
#[derive(Default)]
pub(crate) struct DiskRanges {
    map: HashMap<(u64, usize), (u64, u64)>,
}

impl GranularLayout {
    /// Reads and validates the metadata of every shard of `desc` through `files`.
    pub(crate) fn open(
        desc: &DatasetFiles,
        files: &dyn ReadAt,
        opt: &GranularOptions,
    ) -> Result<Self> {
        let first = desc
            .shards()
            .first()
            .ok_or_else(|| Error::invalid_input("the dataset has no shards"))?;
        let spec = read_spec(files, first, &opt.limits)?;
        let family = match first.generation {
            Generation::Indexed => CodecFamily::Granular,
            Generation::Refs => {
                let refs_file = first.refs.unwrap_or(0);
                match bag::read_single_file(files, refs_file, &opt.limits)
                    .map_err(|e| e.with_path(files.file_path(refs_file)))?
                    .kind()
                {
                    BagKind::SingleV1 => CodecFamily::Bags,
                    _ => CodecFamily::Granular,
                }
            }
        };
        let mut settings = CodecSettings::new(family);
        if let Some(s) = opt.int_signing {
            settings.int_signing = s;
        }
        settings.decode_images = opt.decode_images;
        settings.strict_map_keys = opt.strict_map_keys;
        settings.limits = opt.limits.clone();
        let int_signing = settings.int_signing;

        let selected = selected_keys(&spec, opt).map_err(|e| e.with_path(&first.dir))?;
        // The keys whose indexes are loaded and checked, and whose record counts make the
        // length: the selected ones, or every key when none is selected.
        let counted: Vec<bool> = if selected.iter().any(|on| *on) {
            selected.clone()
        } else {
            vec![true; selected.len()]
        };
        let mut columns = Vec::with_capacity(spec.len());
        for ((key, type_string), &wanted) in spec.iter().zip(&selected) {
            let t =
                TypeSpec::parse(type_string).map_err(|e| e.with_path(spec_path(files, first)))?;
            let sequence = t.sequence && first.generation == Generation::Refs;
            let codec = if !opt.decode {
                Ok(codec::raw_codec())
            } else if t.sequence && !sequence {
                Err(Error::schema(format!(
                    "field {key:?} has the sequence type {type_string:?}, which only \
                     refs-based datasets support"
                ))
                .with_path(spec_path(files, first)))
            } else if matches!(t.name.as_str(), "mp4" | "webm") && opt.decode_video {
                Err(Error::unsupported(format!(
                    "decoding video (field {key:?}, type {type_string:?}) is not supported; \
                     read with decode_video off to get the encoded bytes"
                )))
            } else {
                let base = if sequence { t.base() } else { type_string.to_string() };
                codec::codec_for(&base, &opt.codecs, &settings)
                    .map_err(|e| e.with_path(spec_path(files, first)))
            };
            // A key left out whose type reel cannot decode does not stop the others from
            // being read: a masked read of it gives its stored bytes.
            let codec = match codec {
                Err(_) if !wanted => codec::raw_codec(),
                other => other?,
            };
            columns.push(Column {
                name: Arc::from(key),
                type_string: type_string.to_string(),
                sequence,
                codec,
            });
        }
        for k in &opt.cache_keys {
            if spec.get(k).is_none() && !(k == "refs" && first.generation == Generation::Refs) {
                return Err(Error::new(
                    reel_core::ErrorKind::NotFound,
                    format!("cache key {k:?} is not a key of the spec"),
                ));
            }
        }

        let mut shards = Vec::with_capacity(desc.shards().len());
        let mut starts = vec![0u64];
        let mut warnings = Vec::new();
        for (n, sf) in desc.shards().iter().enumerate() {
            let shard_spec = if n == 0 { spec.clone() } else { read_spec(files, sf, &opt.limits)? };
            if shard_spec != spec || sf.generation != first.generation {
                return Err(Error::corrupt(format!(
                    "shard {} has a different spec or generation than shard {}",
                    sf.dir.display(),
                    first.dir.display()
                ))
                .with_path(&sf.dir));
            }
            let shard = open_shard(sf, files, opt, &columns, &counted, &mut warnings)?;
            let total = starts[n]
                .checked_add(shard_len(&shard, &columns, &counted)?)
                .ok_or_else(|| Error::corrupt("datapoint counts overflow"))?;
            opt.limits.check_records(total)?;
            starts.push(total);
            shards.push(shard);
        }

        let mut info = SourceInfo::new(FORMAT);
        info.version = Some(describe_version(&shards));
        info.schema = Some(
            columns
                .iter()
                .zip(&selected)
                .filter(|(_, wanted)| **wanted)
                .map(|(c, _)| FieldSpec { name: c.name.to_string(), kind: c.type_string.clone() })
                .collect(),
        );
        info.paths = paths_read(desc, &selected);
        if first.generation == Generation::Refs {
            warnings.push(Warning {
                kind: WarningKind::LegacyLayout,
                path: Some(first.dir.clone()),
                message: format!(
                    "refs-based dataset (bags 0.5 – granular 0.21); `int` fields are read as \
                     {} integers, which no file records (GranularOptions::int_signing in Rust \
                     chooses)",
                    if int_signing == IntSigning::Signed { "signed" } else { "unsigned" }
                ),
            });
        }
        info.warnings = warnings;
        let sequence_flags = columns.iter().map(|c| c.sequence).collect();
        let any_on_disk = shards.iter().any(|s: &Shard| {
            s.columns.iter().any(|c| matches!(c.index, ColumnIndex::OnDisk { .. }))
        });
        Ok(GranularLayout {
            any_on_disk,
            info,
            spec,
            all: Selection::of(&selected),
            columns,
            shards,
            starts,
            sequence_flags,
            int_signing,
        })
    }

    /// The shard holding global datapoint `index` and the index within it.
    pub(crate) fn locate(&self, index: u64) -> Result<(usize, u64)> {
        let total = self.starts.last().copied().unwrap_or(0);
        if index >= total {
            return Err(Error::out_of_range(index, total));
        }
        let s = self.starts.partition_point(|&st| st <= index) - 1;
        Ok((s, index - self.starts[s]))
    }

    /// Datapoints in shard `s`.
    pub(crate) fn shard_len(&self, s: usize) -> Option<u64> {
        Some(self.starts.get(s + 1)? - self.starts.get(s)?)
    }

    /// Resolves a user mask to column numbers in spec order.
    pub(crate) fn select(&self, mask: &GranularMask) -> Result<Selection> {
        let mut picks = Vec::with_capacity(mask.entries.len());
        for (key, items) in &mask.entries {
            let col = self.columns.iter().position(|c| &*c.name == key).ok_or_else(|| {
                Error::new(reel_core::ErrorKind::NotFound, format!("no key {key:?} in the spec"))
            })?;
            let range = match items {
                Items::All => None,
                Items::Range(r) if self.columns[col].sequence => Some((r.start, r.end)),
                Items::Range(_) => {
                    return Err(Error::invalid_input(format!(
                        "key {key:?} is not a sequence; an item range applies to `type[]` keys only"
                    )));
                }
            };
            picks.push(Pick { col, range });
        }
        picks.sort_by_key(|p| p.col);
        Ok(Selection { picks })
    }

    /// Calls `f` with where each selected field of datapoint `local` of shard `s` lives.
    fn targets(
        &self,
        s: usize,
        local: u64,
        sel: &Selection,
        mut f: impl FnMut(&Pick, Target) -> Result<()>,
    ) -> Result<()> {
        let shard = &self.shards[s];
        let Some(refs) = &shard.refs else {
            for pick in &sel.picks {
                f(pick, Target::Scalar(local))?;
            }
            return Ok(());
        };
        let record = refs.record(local).map_err(|e| e.with_path(&refs.path))?;
        let mut p = 0;
        let mut in_refs = true;
        let r = for_each_ref(record, &self.sequence_flags, |col, item| {
            while let Some(pick) = sel.picks.get(p).filter(|pk| pk.col == col) {
                let len = shard.columns[col].len();
                let target = match item {
                    RefItem::Scalar(j) if j < len => Target::Scalar(j),
                    RefItem::Items { start, count }
                        if start.checked_add(count).is_some_and(|end| end <= len) =>
                    {
                        let (a, b) = pick.range.unwrap_or((0, count));
                        let first = start + a.min(count);
                        let end = start + b.min(count);
                        Target::Items { first, count: end.saturating_sub(first) }
                    }
                    _ => {
                        return Err(Error::corrupt(format!(
                            "refs.bag points past the end of {}.bag ({len} records) for key {:?}",
                            self.columns[col].name, self.columns[col].name
                        )));
                    }
                };
                in_refs = false;
                f(pick, target)?;
                in_refs = true;
                p += 1;
            }
            Ok(())
        });
        // Errors of the refs record name refs.bag; errors of a field name its own file.
        r.map_err(|e| if in_refs { e.with_path(&refs.path) } else { e })
    }

    /// `(offset, len)` of a target in its column's data file.
    fn target_range(
        &self,
        s: usize,
        col: usize,
        target: Target,
        disk: Option<&DiskRanges>,
        index: u64,
    ) -> Result<(u64, u64)> {
        let column = &self.shards[s].columns[col];
        match (target, &column.index) {
            (Target::Scalar(j), ColumnIndex::Memory(t)) => {
                t.range(j).ok_or_else(|| Error::corrupt("record missing from the bag table"))
            }
            (Target::Items { first, count }, ColumnIndex::Memory(t)) => t
                .span(first, count)
                .ok_or_else(|| Error::corrupt("records missing from the bag table")),
            (_, ColumnIndex::OnDisk { .. }) => {
                disk.and_then(|d| d.map.get(&(index, col)).copied()).ok_or_else(|| {
                    Error::invalid_input(
                        "the index of this column is not in memory (cache_index is off); \
                         read through GranularReader",
                    )
                })
            }
        }
    }

    /// Announces the table entries that planning datapoint `index` for `sel` reads first:
    /// its `refs.bag` entry (G1), or, without refs, its entry in each selected, uncached
    /// key's table (G2, where datapoint `i` is record `i` of every key). A random batch then
    /// misses the tables together instead of one lookup after another: without it, the
    /// lookups took a third of a warm batch of 1 KiB records (`perf` of `reel bench
    /// --format granular`).
    pub(crate) fn prefetch_with(&self, index: u64, sel: &Selection) {
        let Ok((s, local)) = self.locate(index) else { return };
        let shard = &self.shards[s];
        if let Some(refs) = &shard.refs {
            refs.table.prefetch(local);
            return;
        }
        for pick in &sel.picks {
            if let Some(column) = shard.columns.get(pick.col)
                && column.cached.is_none()
                && let ColumnIndex::Memory(table) = &column.index
            {
                table.prefetch(local);
            }
        }
    }

    /// Pushes the ranges datapoint `index` needs for `sel`: one per selected, uncached key.
    pub(crate) fn plan_with(
        &self,
        index: u64,
        sel: &Selection,
        disk: Option<&DiskRanges>,
        plan: &mut Plan<'_>,
    ) -> Result<()> {
        let (s, local) = self.locate(index)?;
        let shard = &self.shards[s];
        self.targets(s, local, sel, |pick, target| {
            let column = &shard.columns[pick.col];
            if column.cached.is_none() {
                let (off, len) = self.target_range(s, pick.col, target, disk, index)?;
                plan.push(column.data_file, off, len);
            }
            Ok(())
        })
    }

    /// Decodes the fields of datapoint `index` for `sel` from the planned ranges.
    pub(crate) fn decode_with(
        &self,
        index: u64,
        sel: &Selection,
        disk: Option<&DiskRanges>,
        raw: &[Span],
        out: &mut RecordOut<'_>,
    ) -> Result<()> {
        let (s, local) = self.locate(index)?;
        let shard = &self.shards[s];
        let mut next = raw.iter();
        self.targets(s, local, sel, |pick, target| {
            let column = &self.columns[pick.col];
            let sc = &shard.columns[pick.col];
            let block = match &sc.cached {
                Some(data) => {
                    let (off, len) = self.target_range(s, pick.col, target, disk, index)?;
                    check_within(off, len, data.len() as u64, "record")?;
                    out.append(&data[off as usize..(off + len) as usize])
                }
                None => *next
                    .next()
                    .ok_or_else(|| Error::corrupt("fewer ranges were read than planned"))?,
            };
            let value = match target {
                Target::Scalar(_) => column.codec.decode(block, out),
                Target::Items { first, count } => {
                    decode_items(column, sc, first, count, block, out)
                }
            }
            .map_err(|e| {
                let msg =
                    format!("field {:?} ({}): {}", &*column.name, column.type_string, e.message());
                let e = Error::new(e.kind(), msg).with_path(&sc.data_path);
                match self.target_range(s, pick.col, target, disk, index) {
                    Ok((off, _)) => e.with_offset(off),
                    Err(_) => e,
                }
            })?;
            out.push_named(&column.name, value);
            Ok(())
        })
    }

    /// What datapoint `index` has of each key (the reference's `available`).
    pub(crate) fn available(&self, index: u64) -> Result<Vec<crate::mask::Available>> {
        let (s, local) = self.locate(index)?;
        let mut out = Vec::with_capacity(self.columns.len());
        self.targets(s, local, &self.all, |pick, target| {
            let items = match target {
                Target::Scalar(_) => None,
                Target::Items { count, .. } => Some(0..count),
            };
            out.push(crate::mask::Available { key: self.columns[pick.col].name.clone(), items });
            Ok(())
        })
        .map_err(|e| e.with_record(index).with_format(FORMAT))?;
        Ok(out)
    }

    /// For every (datapoint, column) of `indices` × `sel` whose index is on disk, the byte
    /// range of its record, read in one batched request.
    pub(crate) fn resolve_on_disk(
        &self,
        indices: &[u64],
        sel: &Selection,
        files: &dyn ReadAt,
    ) -> Result<DiskRanges> {
        let mut wanted: Vec<(u64, usize, u32, u64)> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for &index in indices {
            if !seen.insert(index) {
                continue;
            }
            let (s, local) = match self.locate(index) {
                Ok(x) => x,
                Err(e) => return Err(e.with_format(FORMAT)),
            };
            for pick in &sel.picks {
                if let ColumnIndex::OnDisk { idx_file, .. } = self.shards[s].columns[pick.col].index
                {
                    wanted.push((index, pick.col, idx_file, local));
                }
            }
        }
        let mut reqs = Vec::with_capacity(wanted.len());
        for (k, &(_, _, file, local)) in wanted.iter().enumerate() {
            let (offset, len) = if local == 0 { (0, 8) } else { ((local - 1) * ENTRY, 16) };
            reqs.push(reel_core::ReadReq { file, offset, len, dest: k * 16 });
        }
        let mut buf = vec![0u8; wanted.len() * 16];
        files.read_many(&reqs, &mut buf).map_err(|e| e.with_format(FORMAT))?;
        let mut map = HashMap::with_capacity(wanted.len());
        for (k, &(index, col, file, local)) in wanted.iter().enumerate() {
            let word = |n: usize| {
                let o = k * 16 + n * 8;
                u64::from_le_bytes(buf[o..o + 8].try_into().unwrap_or_default())
            };
            let (start, end) = if local == 0 { (0, word(0)) } else { (word(0), word(1)) };
            if end < start {
                return Err(Error::corrupt(format!(
                    "bag offsets decrease: record {} ends at byte {end} but the previous one at {start}",
                    local
                ))
                .with_path(files.file_path(file))
                .with_record(index)
                .with_format(FORMAT));
            }
            map.insert((index, col), (start, end - start));
        }
        Ok(DiskRanges { map })
    }

    /// Whether some selected column has its index on disk.
    pub(crate) fn needs_disk(&self, sel: &Selection) -> bool {
        if !self.any_on_disk {
            return false;
        }
        self.shards.iter().any(|s| {
            sel.picks.iter().any(|p| matches!(s.columns[p.col].index, ColumnIndex::OnDisk { .. }))
        })
    }

    /// The keys the records hold (every key unless the options select some).
    pub(crate) fn all(&self) -> &Selection {
        &self.all
    }

    /// Bytes of data and index the dataset holds (the reference's `size`).
    pub(crate) fn size(&self) -> u64 {
        self.shards.iter().fold(0, |total, s| total.saturating_add(s.size))
    }
}

fn decode_items(
    column: &Column,
    sc: &ShardColumn,
    first: u64,
    count: u64,
    block: Span,
    out: &mut RecordOut<'_>,
) -> Result<Value> {
    let table = sc.table().ok_or_else(|| Error::corrupt("sequence column without a table"))?;
    let base = table.start(first).unwrap_or(0);
    let mut items = Vec::with_capacity(count.min(1024) as usize);
    for k in 0..count {
        let (off, len) = table
            .range(first + k)
            .ok_or_else(|| Error::corrupt("sequence item missing from the bag table"))?;
        let sub = usize::try_from(off - base)
            .ok()
            .zip(usize::try_from(len).ok())
            .and_then(|(o, l)| block.sub(o, l))
            .ok_or_else(|| Error::corrupt("sequence item lies outside the bytes read"))?;
        items.push(column.codec.decode(sub, out)?);
    }
    Ok(Value::List(items))
}

impl Layout for GranularLayout {
    fn info(&self) -> &SourceInfo {
        &self.info
    }

    fn len(&self) -> u64 {
        self.starts.last().copied().unwrap_or(0)
    }

    fn plan(&self, index: u64, plan: &mut Plan<'_>) -> Result<()> {
        self.plan_with(index, &self.all, None, plan)
    }

    fn decode(&self, index: u64, raw: &[Span], out: &mut RecordOut<'_>) -> Result<()> {
        self.decode_with(index, &self.all, None, raw, out)
    }

    /// Every key's table entry (see [`prefetch_with`](GranularLayout::prefetch_with)).
    fn prefetch(&self, index: u64) {
        self.prefetch_with(index, &self.all);
    }
}

/// The files of `desc` whose bytes records are read from: with some keys selected, the
/// specs, `refs.bag` and the selected keys' files, so that a selection's size
/// (`stored_bytes`, which Ray sizes its read tasks by) is what it reads.
fn paths_read(desc: &DatasetFiles, selected: &[bool]) -> Vec<PathBuf> {
    let all = desc.paths();
    if selected.iter().all(|on| *on) {
        return all.to_vec();
    }
    let mut read = vec![false; all.len()];
    let mut mark = |file: u32| {
        if let Some(slot) = read.get_mut(file as usize) {
            *slot = true;
        }
    };
    for shard in desc.shards() {
        mark(shard.spec);
        shard.refs.into_iter().for_each(&mut mark);
        for (column, _) in shard.columns.iter().zip(selected).filter(|(_, on)| **on) {
            mark(column.bag);
            column.idx.into_iter().for_each(&mut mark);
        }
    }
    all.iter().zip(read).filter(|(_, r)| *r).map(|(p, _)| p.clone()).collect()
}

/// Which keys of `spec` (in spec order) the records hold: [`GranularOptions::keys`] less
/// [`GranularOptions::skip_keys`], every key by default. A name the spec does not have is
/// an error naming the keys it has.
fn selected_keys(spec: &GranularSpec, opt: &GranularOptions) -> Result<Vec<bool>> {
    let named = opt.keys.iter().flatten().chain(&opt.skip_keys);
    if let Some(unknown) = named.into_iter().find(|k| spec.get(k).is_none()) {
        let have: Vec<&str> = spec.keys().collect();
        return Err(Error::invalid_input(format!(
            "no key {unknown:?} in the spec (it has {})",
            have.join(", ")
        )));
    }
    Ok(spec
        .keys()
        .map(|k| {
            opt.keys.as_ref().is_none_or(|keys| keys.iter().any(|w| w == k))
                && !opt.skip_keys.iter().any(|s| s == k)
        })
        .collect())
}

fn spec_path(files: &dyn ReadAt, sf: &ShardFiles) -> PathBuf {
    files.file_path(sf.spec).to_path_buf()
}

fn read_spec(files: &dyn ReadAt, sf: &ShardFiles, limits: &Limits) -> Result<GranularSpec> {
    let path = spec_path(files, sf);
    let len = files.file_len(sf.spec);
    limits.check_metadata(len).map_err(|e| e.with_path(&path))?;
    let bytes = files.read_to_vec(sf.spec, 0, len).map_err(|e| e.with_path(&path))?;
    let spec = GranularSpec::parse(&bytes).map_err(|e| e.with_path(&path))?;
    let keys: Vec<&str> = spec.keys().collect();
    let expected: Vec<&str> = sf.columns.iter().map(|c| c.key.as_str()).collect();
    if keys != expected {
        return Err(Error::corrupt(format!(
            "spec.json lists the keys {keys:?}, but the dataset was opened for {expected:?}"
        ))
        .with_path(&path));
    }
    Ok(spec)
}

/// Opens the shard `sf`. In the current layout, the indexes of keys not `counted` (left
/// out of a selection) are neither read nor checked: they stay on disk, read per batch if a
/// masked read asks for such a key, so that damage there fails only reads of that key.
fn open_shard(
    sf: &ShardFiles,
    files: &dyn ReadAt,
    opt: &GranularOptions,
    columns: &[Column],
    counted: &[bool],
    warnings: &mut Vec<Warning>,
) -> Result<Shard> {
    if sf.generation == Generation::Indexed {
        // Column lengths follow from the .idx sizes alone: compare them before any index
        // is read, so one huge (say, sparse) .idx among small ones costs nothing.
        let counted_files: Vec<&ColumnFiles> =
            sf.columns.iter().zip(counted).filter(|(_, on)| **on).map(|(cf, _)| cf).collect();
        let lens: Vec<u64> = counted_files
            .iter()
            .filter_map(|cf| cf.idx)
            .map(|f| files.file_len(f) / ENTRY)
            .collect();
        if lens.windows(2).any(|w| w[0] != w[1]) && lens.len() == counted_files.len() {
            return Err(Error::corrupt(format!(
                "inconsistent column lengths {lens:?}: a column is ahead or behind (an interrupted \
                 write; resume the writer to repair it)"
            ))
            .with_path(&sf.dir)
            .with_format(FORMAT));
        }
    }
    let mut shard_columns = Vec::with_capacity(sf.columns.len());
    let mut size = 0u64;
    for ((cf, column), &counts) in sf.columns.iter().zip(columns).zip(counted) {
        let data_path = files.file_path(cf.bag).to_path_buf();
        let index = match (sf.generation, cf.idx) {
            (Generation::Indexed, Some(idx_file)) if !counts => {
                ColumnIndex::OnDisk { idx_file, len: files.file_len(idx_file) / ENTRY }
            }
            (Generation::Indexed, Some(idx_file)) => {
                let idx_path = files.file_path(idx_file).to_path_buf();
                let idx_len = files.file_len(idx_file);
                if idx_len % ENTRY != 0 {
                    return Err(bag::torn_index(idx_len).with_path(&idx_path).with_format(FORMAT));
                }
                let table = if opt.cache_index {
                    opt.limits.check_metadata(idx_len).map_err(|e| e.with_path(&idx_path))?;
                    let bytes = files
                        .read_to_vec(idx_file, 0, idx_len)
                        .map_err(|e| e.with_path(&idx_path))?;
                    ColumnIndex::Memory(
                        bag::parse_index(&bytes)
                            .map_err(|e| e.with_path(&idx_path).with_format(FORMAT))?,
                    )
                } else {
                    ColumnIndex::OnDisk { idx_file, len: idx_len / ENTRY }
                };
                let data_end = match &table {
                    ColumnIndex::Memory(t) => t.data_len(),
                    ColumnIndex::OnDisk { len: 0, .. } => 0,
                    ColumnIndex::OnDisk { len, .. } => {
                        let mut b = [0u8; 8];
                        files.read_exact_at(idx_file, (len - 1) * ENTRY, &mut b)?;
                        u64::from_le_bytes(b)
                    }
                };
                let data_len = files.file_len(cf.bag);
                if data_len > data_end {
                    warnings.push(Warning {
                        kind: WarningKind::TrailingBytes,
                        path: Some(data_path.clone()),
                        message: format!(
                            "{} bytes after the last record (left by an interrupted write; \
                             ignored)",
                            data_len - data_end
                        ),
                    });
                }
                // The index is not checked against the data until a record is read, so a
                // damaged one can claim any end offset.
                size = size.saturating_add(data_end.saturating_add(idx_len));
                table
            }
            _ => {
                let t = bag::read_single_file(files, cf.bag, &opt.limits)
                    .map_err(|e| e.with_path(&data_path).with_format(FORMAT))?;
                size = size.saturating_add(files.file_len(cf.bag));
                ColumnIndex::Memory(t)
            }
        };
        let cached = if opt.cache_keys.iter().any(|k| *k == *column.name) {
            let len = match &index {
                ColumnIndex::Memory(t) if sf.generation == Generation::Refs => t.data_len(),
                _ => files.file_len(cf.bag),
            };
            opt.limits.check_metadata(len).map_err(|e| e.with_path(&data_path))?;
            Some(Arc::from(files.read_to_vec(cf.bag, 0, len).map_err(|e| e.with_path(&data_path))?))
        } else {
            None
        };
        shard_columns.push(ShardColumn { data_file: cf.bag, data_path, index, cached });
    }
    let refs = match sf.refs {
        Some(refs_file) => {
            let path = files.file_path(refs_file).to_path_buf();
            let table = bag::read_single_file(files, refs_file, &opt.limits)
                .map_err(|e| e.with_path(&path).with_format(FORMAT))?;
            opt.limits.check_metadata(table.data_len()).map_err(|e| e.with_path(&path))?;
            let data = files
                .read_to_vec(refs_file, 0, table.data_len())
                .map_err(|e| e.with_path(&path))?;
            size = size.saturating_add(files.file_len(refs_file));
            Some(Refs { table, data: Arc::from(data), path })
        }
        None => None,
    };
    Ok(Shard { dir: sf.dir.clone(), generation: sf.generation, columns: shard_columns, refs, size })
}

/// Number of datapoints of a shard: `refs.bag`'s length, or the common length of the
/// `counted` columns (which must agree, as the reference asserts).
fn shard_len(shard: &Shard, columns: &[Column], counted: &[bool]) -> Result<u64> {
    if let Some(refs) = &shard.refs {
        // One writer wrote every bag: all share the single-file version, and every
        // datapoint appended exactly one record to each scalar column.
        for (c, sc) in columns.iter().zip(&shard.columns) {
            let Some(t) = sc.table() else { continue };
            if t.kind() != refs.table.kind() {
                return Err(Error::corrupt(format!(
                    "{}.bag is a {} but refs.bag a {}: the bags of one dataset share a version",
                    c.name,
                    t.kind().describe(),
                    refs.table.kind().describe()
                ))
                .with_path(&shard.dir));
            }
            if !c.sequence && t.len() != refs.table.len() {
                return Err(Error::corrupt(format!(
                    "refs.bag has {} datapoints but {}.bag has {} records (one per datapoint)",
                    refs.table.len(),
                    c.name,
                    t.len()
                ))
                .with_path(&shard.dir));
            }
        }
        return Ok(refs.table.len());
    }
    let lens: Vec<u64> =
        shard.columns.iter().zip(counted).filter(|(_, on)| **on).map(|(c, _)| c.len()).collect();
    let Some(&first) = lens.first() else {
        return Err(Error::corrupt(
            "spec.json has no keys, so the number of datapoints is unknown",
        )
        .with_path(&shard.dir));
    };
    if lens.iter().any(|&l| l != first) {
        return Err(Error::corrupt(format!(
            "inconsistent column lengths {lens:?}: a column is ahead or behind (an interrupted \
             write; resume the writer to repair it)"
        ))
        .with_path(&shard.dir));
    }
    Ok(first)
}

fn describe_version(shards: &[Shard]) -> String {
    let Some(first) = shards.first() else { return String::new() };
    match (&first.refs, first.generation) {
        (Some(refs), _) => match refs.table.kind() {
            BagKind::SingleV1 => {
                "refs.bag + single-file bags v1 (bags 0.5 / granular ≤ 0.19)".to_string()
            }
            _ => "refs.bag + single-file bags v2 (granular 0.20–0.21)".to_string(),
        },
        _ => "per-key .bag + .idx (granular 0.22+)".to_string(),
    }
}
