//! Opening OFRecord part files and directories for random access.

use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use reel_core::{
    Backend, Error, FieldName, LayoutSource, Limits, RAW_FIELD, ReadAt, Record, RecordBatch,
    RecordSource, RecordSourceExt, Result, StoreRef, Value,
};

use crate::FORMAT;
use crate::frames::FrameInfo;
use crate::layout::OfrecordLayout;
use crate::parts::{PartNaming, dataset_files_in};
use crate::proto;

/// How to open an OFRecord dataset.
#[derive(Clone, Debug)]
pub struct OfrecordOptions {
    /// The I/O backend (default: pread).
    pub backend: Backend,
    /// Where the parts are (default: the local file system).
    pub store: StoreRef,
    /// Size and count limits.
    pub limits: Limits,
    /// How part files are named (default: `part-` and any width).
    pub naming: PartNaming,
    /// Open exactly this many parts (OneFlow's `data_part_num`) instead of listing the
    /// directory.
    pub part_count: Option<u64>,
    /// Refuse what current OneFlow cannot read instead of reading it: zero-length frames,
    /// frames of 2 GiB or more and empty part files become
    /// [`ErrorKind::Corrupt`](reel_core::ErrorKind::Corrupt) errors at open. Off by
    /// default; use it to check a dataset before training on it with OneFlow.
    pub oneflow_strict: bool,
}

impl Default for OfrecordOptions {
    fn default() -> Self {
        OfrecordOptions {
            backend: Backend::default(),
            store: reel_core::local_store(),
            limits: Limits::default(),
            naming: PartNaming::default(),
            part_count: None,
            oneflow_strict: false,
        }
    }
}

impl OfrecordOptions {
    /// Reads the parts from `store`.
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

    /// Uses `naming` to find part files.
    pub fn naming(mut self, naming: PartNaming) -> Self {
        self.naming = naming;
        self
    }

    /// Opens exactly `count` parts (OneFlow's `data_part_num`).
    pub fn part_count(mut self, count: u64) -> Self {
        self.part_count = Some(count);
        self
    }

    /// Turns OneFlow-strict checking on or off (see [`oneflow_strict`](Self::oneflow_strict)).
    pub fn oneflow_strict(mut self, on: bool) -> Self {
        self.oneflow_strict = on;
        self
    }
}

/// An OFRecord dataset opened for random access: one part file, or a directory of them
/// read as one source (records numbered across parts in part order).
///
/// Opening scans the length fields of every part once and keeps the frame offsets (8 bytes
/// per record); after that a record costs one planned read, and batches go through core's
/// batched path (one `read_many` per batch) on any backend. For one pass over a dataset
/// without the index, see [`OfrecordStream`](crate::OfrecordStream).
///
/// Where OneFlow aborts the process, reel returns an error or reads on:
///
/// * a truncated frame or length field, a negative length, or a length running past the
///   end of its part is [`ErrorKind::Corrupt`](reel_core::ErrorKind::Corrupt) at open
///   (OneFlow aborts, or in its default cyclic mode returns a garbage record first);
/// * malformed protobuf is `Corrupt` when that record is read (OneFlow aborts);
/// * a zero-length frame reads as a record with no fields, and an empty part file as no
///   records, each with a [`WarningKind::ReferenceQuirk`](reel_core::WarningKind) warning
///   in [`SourceInfo::warnings`](reel_core::SourceInfo::warnings) (current OneFlow aborts on both; older OneFlow and the
///   Python framing recipe accept them). With
///   [`OfrecordOptions::oneflow_strict`] they are `Corrupt` errors instead;
/// * a missing part (with [`OfrecordOptions::part_count`], or a gap in the numbering) is
///   [`ErrorKind::NotFound`](reel_core::ErrorKind::NotFound).
///
/// Unlike OneFlow, reel does not join part files into one byte stream: each part must
/// hold whole frames, and a frame cut at the end of a part is `Corrupt` (OneFlow reads on
/// into the next part, which only works if both are read by the same rank).
pub struct OfrecordReader<F: ReadAt = Box<dyn ReadAt>> {
    source: LayoutSource<OfrecordLayout, F>,
}

impl OfrecordReader {
    /// Opens a part file or a directory of parts with default options.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        Self::open_with(path, &OfrecordOptions::default())
    }

    /// Opens a part file or a directory of parts.
    pub fn open_with(path: impl AsRef<Path>, options: &OfrecordOptions) -> Result<Self> {
        let files =
            dataset_files_in(&*options.store, path.as_ref(), &options.naming, options.part_count)?;
        Self::open_paths(&files, options)
    }

    /// Opens the given part files as one dataset, in the order given.
    pub fn open_paths(paths: &[PathBuf], options: &OfrecordOptions) -> Result<Self> {
        let files =
            options.store.open_files(paths, &options.backend).map_err(|e| e.with_format(FORMAT))?;
        OfrecordReader::from_files(files, options)
    }
}

impl<F: ReadAt> OfrecordReader<F> {
    /// Reads a dataset from an already opened file set (e.g. [`reel_core::MemFiles`]),
    /// one part per file.
    pub fn from_files(files: F, options: &OfrecordOptions) -> Result<Self> {
        let layout = OfrecordLayout::open(&files, &options.limits, options.oneflow_strict)?;
        Ok(OfrecordReader { source: LayoutSource::new(layout, files, options.limits.clone()) })
    }

    /// Where record `index` is (part, offset, length).
    pub fn frame(&self, index: u64) -> Option<FrameInfo> {
        self.source.layout().frame(index)
    }

    /// Number of part files.
    pub fn part_count(&self) -> usize {
        self.source.layout().part_count()
    }

    /// Number of records in part `part`.
    pub fn part_len(&self, part: usize) -> Option<u64> {
        self.source.layout().part_len(part)
    }

    /// The part files, in order.
    pub fn part_paths(&self) -> &[PathBuf] {
        &self.source.info().paths
    }

    /// The serialized record (frame payload) at `index`, undecoded.
    pub fn read_serialized(&self, index: u64) -> Result<Vec<u8>> {
        let mut r = Record::new();
        self.read_serialized_into(index, &mut r)?;
        Ok(r.bytes(RAW_FIELD).unwrap_or_default().to_vec())
    }

    /// Reads the serialized record at `index` into `out` as one `Bytes` field named
    /// `data` (no decoding, no copy beyond the read).
    pub fn read_serialized_into(&self, index: u64, out: &mut Record) -> Result<()> {
        let layout = self.source.layout();
        self.source.read_with(index, out, |i, p| layout.plan_payload(i, p), raw_field)
    }

    /// Reads the serialized records at `indices` into `out`, each as one `Bytes` field
    /// named `data`, in one batched read. For copying records between OFRecord datasets
    /// (see [`OfrecordWriter::write_serialized`](crate::OfrecordWriter::write_serialized))
    /// or into raw formats.
    pub fn read_serialized_batch_into(&self, indices: &[u64], out: &mut RecordBatch) -> Result<()> {
        let layout = self.source.layout();
        self.source.read_batch_with(indices, out, |i, p| layout.plan_payload(i, p), raw_field)
    }

    /// Reads record `index` keeping only the features named in `names` (the record is
    /// still read whole; the others are not decoded).
    pub fn read_features_into(&self, index: u64, names: &[&str], out: &mut Record) -> Result<()> {
        let layout = self.source.layout();
        let keep = |n: &str| names.contains(&n);
        self.source.read_with(
            index,
            out,
            |i, p| layout.plan_payload(i, p),
            |_, raw, o| layout.decode_features(raw, o, Some(&keep)),
        )
    }

    /// [`read_features_into`](Self::read_features_into) for a batch.
    pub fn read_batch_features_into(
        &self,
        indices: &[u64],
        names: &[&str],
        out: &mut RecordBatch,
    ) -> Result<()> {
        let layout = self.source.layout();
        let keep = |n: &str| names.contains(&n);
        self.source.read_batch_with(
            indices,
            out,
            |i, p| layout.plan_payload(i, p),
            |_, raw, o| layout.decode_features(raw, o, Some(&keep)),
        )
    }

    /// Record `index` as the prost message of `record.proto`.
    pub fn read_proto(&self, index: u64) -> Result<proto::OfRecord> {
        let record = self.source.read(index)?;
        proto::to_proto(record.view(), crate::EncodeOptions::default())
            .map_err(|e| e.with_record(index))
    }

    /// The underlying generic source (layout and files).
    pub fn source(&self) -> &LayoutSource<OfrecordLayout, F> {
        &self.source
    }
}

/// One shared name for the raw field, so raw reads allocate no name.
static RAW_NAME: LazyLock<FieldName> = LazyLock::new(|| FieldName::from(RAW_FIELD));

fn raw_field(_: u64, raw: &[reel_core::Span], out: &mut reel_core::RecordOut<'_>) -> Result<()> {
    let [span] = raw else {
        return Err(Error::corrupt("an OFRecord record is read as exactly one range"));
    };
    out.push_named(&RAW_NAME, Value::Bytes(*span));
    Ok(())
}

reel_core::delegate_record_source!(OfrecordReader, source);
