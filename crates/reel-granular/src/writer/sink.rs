//! A sink for conversions: picks the layout and the spec from what the source declares, or
//! from the first record.

use std::path::{Path, PathBuf};

use reel_core::{Error, ErrorKind, FieldSpec, RecordRef, RecordSink, Result, SinkSummary};

use super::dataset::{GranularWriter, GranularWriterOptions};
use super::refs_writer::{BagsWriter, RefsFlavor};
use crate::FORMAT;
use crate::codec::{CodecFamily, CodecSettings, CodecTable, codec_for};
use crate::spec::{GranularSpec, TypeSpec};

enum Target {
    Current(GranularWriter),
    Refs(BagsWriter),
}

/// A [`RecordSink`] writing a Granular dataset whose spec need not be known up front.
///
/// * Given a source's schema whose types are all Granular types (a Granular or bags source,
///   or a raw format whose only field is `bytes`), that spec is written; a spec with
///   sequence (`type[]`) or parameterised (`array(uint8,2)`) types, or a source version
///   naming single-file bags, selects the refs layout of the matching writer
///   ([`RefsFlavor::Bags051`] for v1, [`RefsFlavor::Granular021`] for v2).
/// * Otherwise the current layout is written with the spec inferred from the first record
///   ([`GranularSpec::infer`]).
///
/// The dataset appears on [`finish`](RecordSink::finish), as with the writers it wraps.
pub struct GranularSink {
    path: PathBuf,
    spec: Option<GranularSpec>,
    flavor: Option<RefsFlavor>,
    options: GranularWriterOptions,
    target: Option<Target>,
    finished: bool,
}

impl GranularSink {
    /// A sink for `path`, using `schema` and `version` (a source's
    /// [`SourceInfo`](reel_core::SourceInfo) fields) when they describe a Granular spec.
    pub fn new(
        path: impl AsRef<Path>,
        schema: Option<&[FieldSpec]>,
        version: Option<&str>,
        options: GranularWriterOptions,
    ) -> Self {
        let spec = schema
            .map(|s| GranularSpec::from_pairs(s.iter().map(|f| (f.name.clone(), f.kind.clone()))))
            .filter(|spec| !spec.is_empty() && is_granular_spec(spec, &options.codecs));
        let refs_types = spec.as_ref().is_some_and(|s| {
            s.iter()
                .any(|(_, t)| TypeSpec::parse(t).is_ok_and(|t| t.sequence || !t.args.is_empty()))
        });
        let flavor = match version {
            Some(v) if v.contains("single-file bags v2") => Some(RefsFlavor::Granular021),
            Some(v) if v.contains("single-file bags v1") => Some(RefsFlavor::Bags051),
            _ if refs_types => Some(RefsFlavor::Bags051),
            _ => None,
        };
        GranularSink {
            path: path.as_ref().to_path_buf(),
            spec,
            flavor,
            options,
            target: None,
            finished: false,
        }
    }

    fn open(&mut self, first: Option<&RecordRef<'_>>) -> Result<&mut Target> {
        if self.target.is_none() {
            let spec = match (&self.spec, first) {
                (Some(s), _) => s.clone(),
                (None, Some(r)) => GranularSpec::infer(r),
                (None, None) => {
                    return Err(Error::invalid_input(
                        "no records and no spec: a Granular dataset needs its keys",
                    )
                    .with_path(&self.path)
                    .with_format(FORMAT));
                }
            };
            let target = match self.flavor {
                Some(flavor) => Target::Refs(BagsWriter::create_with(
                    &self.path,
                    &spec,
                    flavor,
                    &self.options.codecs,
                    self.options.encode,
                )?),
                None => {
                    Target::Current(GranularWriter::create_with(&self.path, &spec, &self.options)?)
                }
            };
            self.target = Some(target);
        }
        self.target.as_mut().ok_or_else(|| Error::new(ErrorKind::Closed, "no writer"))
    }
}

/// Whether every type of `spec` is one a Granular codec handles (so the spec came from a
/// Granular source rather than another format's type names).
fn is_granular_spec(spec: &GranularSpec, codecs: &CodecTable) -> bool {
    spec.iter().all(|(_, t)| {
        TypeSpec::parse(t).is_ok_and(|parsed| {
            let family =
                if parsed.args.is_empty() { CodecFamily::Granular } else { CodecFamily::Bags };
            codec_for(&parsed.base(), codecs, &CodecSettings::new(family)).is_ok()
        })
    })
}

impl RecordSink for GranularSink {
    fn append(&mut self, record: RecordRef<'_>) -> Result<u64> {
        if self.finished {
            return Err(Error::new(ErrorKind::Closed, "the sink is finished").with_format(FORMAT));
        }
        match self.open(Some(&record))? {
            Target::Current(w) => w.append(record),
            Target::Refs(w) => w.append(record),
        }
    }

    fn finish(&mut self) -> Result<SinkSummary> {
        if self.finished {
            return Err(Error::new(ErrorKind::Closed, "the sink is finished").with_format(FORMAT));
        }
        let r = match self.open(None)? {
            Target::Current(w) => w.finish(),
            Target::Refs(w) => w.finish(),
        };
        if r.is_ok() {
            self.finished = true;
        }
        r
    }
}
