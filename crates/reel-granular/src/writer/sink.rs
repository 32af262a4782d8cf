//! A sink for conversions: writes the generation it is told to, with a spec of that
//! generation's types fitted from what the source declares and the first record.

use std::path::{Path, PathBuf};

use reel_core::{
    Error, ErrorKind, FieldSpec, RecordRef, RecordSink, Result, SealedFile, SinkSummary,
};

use super::dataset::{GranularWriter, GranularWriterOptions};
use super::fit::fit_spec;
use super::refs_writer::BagsWriter;
use super::sharded::{ShardFormat, ShardedWriter, ShardedWriterOptions};
use crate::FORMAT;
use crate::spec::GranularSpec;

/// The writer chosen at the first record. The bags and sharded writers are boxed: they
/// are much larger than the indexed writer.
enum Target {
    Current(GranularWriter),
    Refs(Box<BagsWriter>),
    Sharded(Box<ShardedWriter>),
}

/// A [`RecordSink`] writing a Granular dataset of a chosen generation whose spec need not be
/// known up front.
///
/// The layout is the caller's choice and never follows the source: [`ShardFormat::Indexed`]
/// writes what granular 0.22–0.24 read (`<key>.bag` + `<key>.idx`), [`ShardFormat::Refs`]
/// the refs layout of bags 0.5.1 or granular 0.20–0.21. The spec keeps each type the source
/// declared (a Granular or bags `spec.json`) when the target generation knows it, renames
/// it where the generations differ only in name (`jpeg` ↔ `jpg`, `array(float32,4)` →
/// `array`, `utf8[]` → `tree`), and otherwise picks it from the first record's value. A
/// value the generation has no type for is a [`Schema`](ErrorKind::Schema) error naming
/// the field.
///
/// With [`shard_bytes`](Self::shard_bytes) it writes a sharded dataset (`000000/`,
/// `000001/`, … each a dataset of the chosen layout) of shards of about that size.
///
/// The dataset appears on [`finish`](Self::finish), as with the writers it wraps.
pub struct GranularSink {
    path: PathBuf,
    declared: Option<GranularSpec>,
    layout: ShardFormat,
    options: GranularWriterOptions,
    shard_bytes: Option<u64>,
    target: Option<Target>,
    finished: bool,
}

impl GranularSink {
    /// A sink writing `layout` at `path`, using `schema` (a source's
    /// [`SourceInfo::schema`](reel_core::SourceInfo)) for the types it can keep.
    pub fn new(
        path: impl AsRef<Path>,
        schema: Option<&[FieldSpec]>,
        layout: ShardFormat,
        options: GranularWriterOptions,
    ) -> Self {
        let declared = schema
            .map(|s| GranularSpec::from_pairs(s.iter().map(|f| (f.name.clone(), f.kind.clone()))))
            .filter(|spec| !spec.is_empty());
        GranularSink {
            path: path.as_ref().to_path_buf(),
            declared,
            layout,
            options,
            shard_bytes: None,
            target: None,
            finished: false,
        }
    }

    /// Writes a sharded dataset whose shards hold about `bytes` bytes of records each (a
    /// new shard starts after the record that reaches it; [`ShardedWriterOptions::shard_bytes`]).
    /// Each shard is complete when the next starts, so its files are sealed
    /// ([`RecordSink::take_sealed`]).
    pub fn shard_bytes(mut self, bytes: u64) -> Self {
        self.shard_bytes = Some(bytes);
        self
    }

    /// The layout this sink writes.
    pub fn layout(&self) -> ShardFormat {
        self.layout
    }

    fn open(&mut self, first: Option<&RecordRef<'_>>) -> Result<&mut Target> {
        if self.target.is_none() {
            let spec = fit_spec(self.declared.as_ref(), first, self.layout)
                .map_err(|e| e.with_path(&self.path).with_format(FORMAT))?;
            let target = match (self.layout, self.shard_bytes) {
                (layout, Some(bytes)) => {
                    let options = ShardedWriterOptions {
                        shard_bytes: Some(bytes),
                        format: layout,
                        writer: self.options.clone(),
                        ..ShardedWriterOptions::default()
                    };
                    Target::Sharded(Box::new(ShardedWriter::create(&self.path, &spec, &options)?))
                }
                (ShardFormat::Refs(flavor), None) => {
                    Target::Refs(Box::new(BagsWriter::create_with(
                        &self.path,
                        &spec,
                        flavor,
                        &self.options.codecs,
                        self.options.encode,
                    )?))
                }
                (ShardFormat::Indexed, None) => {
                    Target::Current(GranularWriter::create_with(&self.path, &spec, &self.options)?)
                }
            };
            self.target = Some(target);
        }
        self.target.as_mut().ok_or_else(|| Error::new(ErrorKind::Closed, "no writer"))
    }
}

impl GranularSink {
    /// Records appended so far (the index the next one gets).
    pub fn records(&self) -> u64 {
        match &self.target {
            Some(Target::Current(w)) => w.records(),
            Some(Target::Refs(w)) => w.records(),
            Some(Target::Sharded(w)) => w.records(),
            None => 0,
        }
    }

    /// Appends a record (the first one fixes the spec when the schema gave none) and
    /// returns its index. `&record` and `record.view()` both work.
    pub fn append<'a>(&mut self, record: impl Into<RecordRef<'a>>) -> Result<u64> {
        let record = record.into();
        if self.finished {
            return Err(Error::new(ErrorKind::Closed, "the sink is finished").with_format(FORMAT));
        }
        match self.open(Some(&record))? {
            Target::Current(w) => w.append(record),
            Target::Refs(w) => w.append(record),
            Target::Sharded(w) => w.append(record),
        }
    }

    /// Finishes the writer it chose (see [`RecordSink::finish`]).
    pub fn finish(&mut self) -> Result<SinkSummary> {
        if self.finished {
            return Err(Error::new(ErrorKind::Closed, "the sink is finished").with_format(FORMAT));
        }
        let r = match self.open(None)? {
            Target::Current(w) => w.finish(),
            Target::Refs(w) => w.finish(),
            Target::Sharded(w) => w.finish(),
        };
        if r.is_ok() {
            self.finished = true;
        }
        r
    }
}

impl RecordSink for GranularSink {
    fn append_ref(&mut self, record: RecordRef<'_>) -> Result<u64> {
        GranularSink::append(self, record)
    }

    fn records(&self) -> u64 {
        GranularSink::records(self)
    }

    fn take_sealed(&mut self) -> Vec<SealedFile> {
        match &mut self.target {
            Some(Target::Sharded(w)) => w.take_sealed(),
            _ => Vec::new(),
        }
    }

    fn finish(&mut self) -> Result<SinkSummary> {
        GranularSink::finish(self)
    }
}
