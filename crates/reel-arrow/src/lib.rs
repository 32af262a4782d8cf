//! reel records as Arrow record batches; Parquet and Arrow IPC files in and out.
//!
//! * [`SourceBatchReader`]: any [`RecordSource`](reel_core::RecordSource) as an Arrow
//!   [`RecordBatchReader`](arrow_array::RecordBatchReader), read in batches through the
//!   source's batch path, bounded in memory by [`ArrowOptions::batch_bytes`];
//!   [`into_ffi_stream`] hands it to Python (pyarrow, Polars, DuckDB) through the Arrow C
//!   stream interface.
//! * [`write_parquet`], [`write_ipc`] and [`ArrowSink`] (a [`RecordSink`](reel_core::RecordSink)
//!   for conversions): Parquet (zstd by default, row groups bounded in rows and bytes) and
//!   Arrow IPC files, staged and published only when complete.
//! * [`ArrowFileSource`]: any Parquet or Arrow IPC file as a record source, so it converts
//!   to every reel format; [`BatchRecords`]: the same for a stream of record batches a
//!   caller hands over (a pyarrow table through the C stream interface), read once.
//! * [`hive_partition_columns`]: the `key=value` directories above a part of a partitioned
//!   table as its rows' extra columns ([`ReadOptions::partition`]), as pyarrow reads them.
//!
//! # One schema mapping
//!
//! A column's Arrow type comes from its values (sampled from the first
//! [`ArrowOptions::sample_records`] records, after the fields the format declares; a Parquet
//! or Arrow IPC source's columns start from the types the file declares, so rows beyond the
//! sample fit them too), or from a schema given in [`ArrowOptions::schema`]:
//!
//! | reel value | Arrow type |
//! | --- | --- |
//! | bytes | `binary` (`large_binary` with [`ArrowOptions::large_types`]) |
//! | text | `utf8` (`large_utf8`) |
//! | int | `int64`; `uint64` when values above `i64::MAX` occur and none is negative |
//! | float, bool, null | `float64`, `bool`, `null` |
//! | 1-D array of bool, (u)int8–64, float16/32/64 | `list<that type>` (field metadata `reel.type = array`) |
//! | n-d arrays of one such dtype and one shape | `arrow.fixed_shape_tensor` (a `fixed_size_list` with the canonical extension metadata) |
//! | other arrays (mixed dtypes or shapes, complex, text, void) | `struct<dtype: utf8, shape: list<uint64>, data: binary>` (`reel.type = ndarray`; `numpy.frombuffer(data, dtype).reshape(shape)`) |
//! | list | `list<item type>` (`reel.type = list`) |
//! | map with text keys | `struct` with a child per key |
//! | values with no common type | tagged JSON text (`reel.type = json`, lossless: [`reel_core::tagged_json`], the convention of reel's JSON payloads too: bytes, non-finite floats, arrays and maps with other keys as `{"$bytes": base64}`, `{"$float": "nan"}`, `{"$array": {"dtype", "shape", "data"}}`, `{"$map": [[k, v], …]}`) |
//!
//! A given schema may also ask for other Arrow types (`int32`, `float32`, `timestamp`,
//! `dictionary<int32, utf8>`, `large_list<float32>` …): the column is built as above from the
//! values its type reads back as, then cast to it with Arrow's cast kernel, every value
//! checked (see [`ArrowOptions::schema`]).
//!
//! Every column is nullable: a record without a field has a null there. A record whose
//! field does not fit the inferred column (a new field, another type) is an
//! [`ErrorKind::Schema`](reel_core::ErrorKind::Schema) error naming the record and the field
//! (path into nested values included); give a schema or sample more records.
//!
//! Reading Arrow data back gives the same values (an n-d tensor its shape, a `list<number>` without nulls a 1-D array, a dictionary column its values, dates and timestamps their stored count); what reel
//! wrote reads back as the same records (a null cell reads as an absent field).

#![forbid(unsafe_code)]

mod batches;
mod decode;
mod encode;
mod file_source;
mod input;
mod ipc_file;
mod ipc_rows;
mod kind;
mod losses;
mod partition;
mod stream;
mod write;

pub use batches::BatchRecords;
pub use encode::{Encoder, ExtraColumns, FILE_COLUMN, INDEX_COLUMN, LENGTH_COLUMN, OFFSET_COLUMN};
pub use file_source::{
    ArrowFileSource, ReadOptions, WINDOW_BYTES, schema_of_file, sniff, sniff_in,
};
pub use kind::{
    EXTENSION_METADATA_KEY, EXTENSION_NAME_KEY, FIXED_SHAPE_TENSOR, REEL_DECLARED_KEY,
    REEL_TYPE_KEY, declared_type, read_alike,
};
pub use losses::{ReadLoss, read_losses, reads_as_arrays, type_restored};
pub use partition::{HIVE_NULL_VALUE, MAX_PARTITION_DEPTH, hive_partition_columns};
pub use stream::{ArrowOptions, SourceBatchReader, into_ffi_stream};
pub use write::{
    ArrowSink, Compression, FileKind, MAX_COLUMN_NESTING, WriteOptions, write_file, write_ipc,
    write_parquet,
};

/// The Arrow crates this one is built on, for callers that need their types.
pub use {arrow_array, arrow_schema, parquet};
