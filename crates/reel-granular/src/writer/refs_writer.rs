//! Writing refs-based datasets: the layout of bags 0.5.1 (single-file v1 bags) and of
//! granular 0.20–0.21 (single-file v2 bags), with sequence (`type[]`) keys.

use std::fs;
use std::path::{Path, PathBuf};

use reel_core::{
    Error, ErrorKind, RecordRef, RecordSink, Result, SinkSummary, StagedDir, UnfinishedGuard,
    ValueRef,
};

use super::bag_writer::SingleFileBagWriter;
use super::encode::{FieldEncoder, check_keys, field_encoders};
use crate::FORMAT;
use crate::bag::BagKind;
use crate::codec::{CodecFamily, CodecSettings, CodecTable};
use crate::refs::{RefItem, encode_refs};
use crate::spec::{GranularSpec, TypeSpec};

/// Which writer of the refs-based layout to reproduce.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RefsFlavor {
    /// bags 0.5.1: single-file v1 bags, bags codecs (unsigned `int` with 0 as an empty
    /// record, `array(dtype,dims…)` raw arrays, `jpeg`/`png`).
    Bags051,
    /// granular 0.20–0.21: single-file v2 bags, granular codecs (signed `int`).
    Granular021,
}

impl RefsFlavor {
    fn bag_kind(self) -> BagKind {
        match self {
            RefsFlavor::Bags051 => BagKind::SingleV1,
            RefsFlavor::Granular021 => BagKind::SingleV2,
        }
    }
}

/// Writes a refs-based dataset: `spec.json`, `refs.bag` and one single-file bag per key,
/// byte-identical to bags 0.5.1 (or granular 0.20–0.21) for the same datapoints — so older
/// pipelines can be fed.
///
/// Per datapoint, every key in sorted order is encoded and appended to its bag (each item
/// of a sequence key as its own record), then the refs record (`[index, …, [start, count]
/// or [], …]`) to `refs.bag`. The bags' offset tables are written on finish; until then the
/// dataset is staged under a temporary name (the format cannot be resumed: the reference
/// writes its tables only on close, too).
///
/// Difference from bags 0.5.1: `spec.json` is written even for a dataset with no
/// datapoints (bags writes it at the first flush, so its empty datasets cannot be opened).
pub struct BagsWriter {
    flavor: RefsFlavor,
    staged: Option<StagedDir>,
    target: PathBuf,
    spec: GranularSpec,
    fields: Vec<FieldEncoder>,
    bags: Vec<SingleFileBagWriter>,
    refs: SingleFileBagWriter,
    scratch: Vec<u8>,
    items: Vec<RefItem>,
    broken: bool,
    pub(crate) unfinished: UnfinishedGuard,
}

impl BagsWriter {
    /// Starts a new dataset at `dir` (which must not exist, or be an empty directory).
    pub fn create(dir: impl AsRef<Path>, spec: &GranularSpec, flavor: RefsFlavor) -> Result<Self> {
        Self::create_with(dir, spec, flavor, &CodecTable::new(), true)
    }

    /// [`create`](Self::create) with user codecs; with `encode` off every field must already
    /// be the record bytes (a list of them for sequence keys).
    pub fn create_with(
        dir: impl AsRef<Path>,
        spec: &GranularSpec,
        flavor: RefsFlavor,
        codecs: &CodecTable,
        encode: bool,
    ) -> Result<Self> {
        let target = dir.as_ref().to_path_buf();
        let spec = spec.sorted();
        check_spec(&spec, flavor)?;
        let family = match flavor {
            RefsFlavor::Bags051 => CodecFamily::Bags,
            RefsFlavor::Granular021 => CodecFamily::Granular,
        };
        let fields = field_encoders(&spec, true, encode, codecs, &CodecSettings::new(family))
            .map_err(|e| e.with_format(FORMAT))?;
        if target.exists() && fs::read_dir(&target).is_ok_and(|mut d| d.next().is_some()) {
            return Err(Error::invalid_input(
                "the output already exists (refs-based datasets cannot be appended to)",
            )
            .with_path(&target)
            .with_format(FORMAT));
        }
        if let Some(parent) = target.parent().filter(|p| !p.as_os_str().is_empty()) {
            fs::create_dir_all(parent)
                .map_err(|e| Error::io(e, "cannot create directory").with_path(parent))?;
        }
        let staged = StagedDir::create(&target).map_err(|e| e.with_format(FORMAT))?;
        let kind = flavor.bag_kind();
        let refs = SingleFileBagWriter::create(staged.path().join("refs.bag"), kind)?;
        let bags = fields
            .iter()
            .map(|f| {
                SingleFileBagWriter::create(staged.path().join(format!("{}.bag", f.key)), kind)
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(BagsWriter {
            unfinished: UnfinishedGuard::new(FORMAT, &target),
            flavor,
            staged: Some(staged),
            target,
            spec,
            fields,
            bags,
            refs,
            scratch: Vec::new(),
            items: Vec::new(),
            broken: false,
        })
    }

    /// The flavor being written.
    pub fn flavor(&self) -> RefsFlavor {
        self.flavor
    }

    /// The spec, keys sorted.
    pub fn spec(&self) -> &GranularSpec {
        &self.spec
    }

    /// Datapoints appended (the index the next one gets); every reel writer has this counter.
    pub fn records(&self) -> u64 {
        self.refs.len()
    }

    /// [`records`](Self::records), as the reference's `len(writer)`.
    pub fn len(&self) -> u64 {
        self.records()
    }

    /// Whether no datapoint was appended.
    pub fn is_empty(&self) -> bool {
        self.refs.is_empty()
    }

    /// Appends one datapoint (sequence keys hold lists) and returns its index. `&record`
    /// and `record.view()` both work.
    pub fn append<'a>(&mut self, record: impl Into<RecordRef<'a>>) -> Result<u64> {
        let index = self.records();
        self.append_inner(record.into()).map_err(|e| e.with_format(FORMAT).with_record(index))
    }

    fn append_inner(&mut self, record: RecordRef<'_>) -> Result<u64> {
        if self.staged.is_none() {
            return Err(Error::new(ErrorKind::Closed, "the writer is finished").with_format(FORMAT));
        }
        if self.broken {
            return Err(Error::new(ErrorKind::Io, "an earlier write failed").with_format(FORMAT));
        }
        check_keys(&self.fields, &record).map_err(|e| e.with_format(FORMAT))?;
        // Check the kinds first, so a bad datapoint leaves the bags untouched.
        for f in &self.fields {
            let v = f.value(&record)?;
            if f.sequence && !matches!(v, ValueRef::List(_)) {
                return Err(Error::schema(format!(
                    "field {:?} is a sequence and needs a list, not a {} value",
                    f.key,
                    v.kind_name()
                ))
                .with_format(FORMAT));
            }
        }
        let r = self.append_checked(&record);
        if r.is_err() {
            // Some bags may hold records of this datapoint already: the dataset can no
            // longer be finished consistently.
            self.broken = true;
        }
        r
    }

    fn append_checked(&mut self, record: &RecordRef<'_>) -> Result<u64> {
        self.items.clear();
        for (f, bag) in self.fields.iter().zip(&mut self.bags) {
            let v = f.value(record)?;
            match v {
                ValueRef::List(list) if f.sequence => {
                    let start = bag.len();
                    for item in list.iter() {
                        self.scratch.clear();
                        f.encode(item, &mut self.scratch).map_err(|e| e.with_format(FORMAT))?;
                        bag.append(&self.scratch)?;
                    }
                    self.items.push(RefItem::Items { start, count: list.len() as u64 });
                }
                v => {
                    self.scratch.clear();
                    f.encode(v, &mut self.scratch).map_err(|e| e.with_format(FORMAT))?;
                    self.items.push(RefItem::Scalar(bag.append(&self.scratch)?));
                }
            }
        }
        self.scratch.clear();
        encode_refs(&self.items, &mut self.scratch);
        self.refs.append(&self.scratch)
    }

    /// Bytes of records written so far, `refs.bag`'s included (the offset tables come on
    /// finish).
    pub fn size(&self) -> u64 {
        self.bags.iter().map(SingleFileBagWriter::data_len).sum::<u64>() + self.refs.data_len()
    }

    /// Writes the offset tables and `spec.json`, syncs, and moves the dataset into place.
    pub fn finish(&mut self) -> Result<SinkSummary> {
        if self.broken {
            return Err(Error::new(ErrorKind::Io, "an earlier write failed; nothing was saved")
                .with_format(FORMAT));
        }
        let staged = self.staged.take().ok_or_else(|| {
            Error::new(ErrorKind::Closed, "the writer is finished").with_format(FORMAT)
        })?;
        self.unfinished.finished();
        let mut bytes = self.refs.finish()?;
        for b in &mut self.bags {
            bytes += b.finish()?;
        }
        let spec_path = staged.path().join("spec.json");
        fs::write(&spec_path, self.spec.to_json_bytes())
            .map_err(|e| Error::io(e, "cannot write spec").with_path(&spec_path))?;
        staged.commit().map_err(|e| e.with_format(FORMAT))?;
        Ok(SinkSummary { records: self.len(), bytes, paths: vec![self.target.clone()] })
    }
}

impl RecordSink for BagsWriter {
    fn append_ref(&mut self, record: RecordRef<'_>) -> Result<u64> {
        BagsWriter::append(self, record)
    }

    fn records(&self) -> u64 {
        BagsWriter::records(self)
    }

    fn finish(&mut self) -> Result<SinkSummary> {
        BagsWriter::finish(self)
    }
}

/// The checks bags 0.5.1's `parse_spec` makes (granular 0.20–0.21 check only the first
/// characters).
fn check_spec(spec: &GranularSpec, flavor: RefsFlavor) -> Result<()> {
    for (k, t) in spec.iter() {
        let parsed = TypeSpec::parse(t).map_err(|e| e.with_format(FORMAT))?;
        let ok = match flavor {
            RefsFlavor::Bags051 => {
                let word = |s: &str, extra: &str| {
                    !s.is_empty()
                        && s.chars().all(|c| {
                            c.is_ascii_lowercase()
                                || c.is_ascii_digit()
                                || "-_".contains(c)
                                || extra.contains(c)
                        })
                };
                k != "refs"
                    && word(&parsed.name, "")
                    && parsed.args.iter().all(|a| a.is_empty() || word(a, "."))
                    && t.ends_with("[]") == parsed.sequence
            }
            RefsFlavor::Granular021 => {
                let first = |s: &str| s.starts_with(|c: char| c.is_ascii_lowercase() || c == '_');
                k != "refs" && first(k) && first(t)
            }
        };
        if !ok {
            return Err(Error::invalid_input(format!(
                "key {k:?} with type {t:?} is not allowed by the {flavor:?} writer"
            ))
            .with_format(FORMAT));
        }
    }
    Ok(())
}
