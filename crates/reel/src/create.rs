//! Creating a dataset of any format through one call.

use std::path::Path;

use reel_core::{FieldSpec, RecordSink, RecordSource, Result};

use crate::Format;

/// What a writer may need to know up front.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct CreateOptions {
    /// How many records will come, if known (FFRecord then writes in place, with no
    /// extra copy).
    pub records: Option<u64>,
    /// The fields and their format-native types, when the source declared them (a
    /// Granular `spec.json`, Syrah dtypes …).
    pub schema: Option<Vec<FieldSpec>>,
    /// The source's format version or generation, for writers that can write several.
    pub version: Option<String>,
}

impl CreateOptions {
    /// Options saying `records` records will come.
    pub fn records(mut self, n: u64) -> Self {
        self.records = Some(n);
        self
    }

    /// Options carrying `schema`.
    pub fn schema(mut self, schema: Option<Vec<FieldSpec>>) -> Self {
        self.schema = schema;
        self
    }
}

/// A writer for a new `format` dataset at `path`. The dataset appears only when the sink
/// finishes.
pub fn create(
    path: impl AsRef<Path>,
    format: Format,
    options: &CreateOptions,
) -> Result<Box<dyn RecordSink>> {
    crate::formats::create(format, path.as_ref(), options)
}

/// A writer for a dataset of the same format, version and schema as `source`, about to
/// receive `records` of its records (used by `verify --salvage`).
pub fn create_like(
    source: &dyn RecordSource,
    path: impl AsRef<Path>,
    records: u64,
) -> Result<Box<dyn RecordSink>> {
    let info = source.info();
    let format = Format::from_name(info.format).ok_or_else(|| {
        reel_core::Error::unsupported(format!("no writer for format {}", info.format))
    })?;
    let options = CreateOptions {
        records: Some(records),
        schema: info.schema.clone(),
        version: info.version.clone(),
    };
    create(path, format, &options)
}
