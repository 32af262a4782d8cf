//! The Python package `reel`, compiled part (`reel._reel`).
//!
//! A thin adapter over the Rust crates (see DESIGN.md, "Wave 2"): it converts values and
//! errors and releases the GIL around every read. Formats, shuffling, sharding and resume
//! all come from the Rust side; nothing here re-implements them.

mod args;
mod arrow;
mod buffer;
mod dataset;
mod errors;
mod ffrecord;
mod fork;
mod fspath;
mod gulp;
mod interrupt;
mod loader;
mod parts;
mod records;
mod shutdown;
mod storage;
mod values;
mod writer;

use pyo3::prelude::*;

/// reel's compiled extension; import `reel`, not this module.
///
/// `gil_used = true`: the module relies on the GIL (reading a list's items in place, for
/// one), so a free-threaded interpreter that imports it turns its GIL back on.
#[pymodule(gil_used = true)]
fn _reel(m: &Bound<'_, PyModule>) -> PyResult<()> {
    fork::install()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(dataset::open, m)?)?;
    m.add_function(wrap_pyfunction!(dataset::reopen, m)?)?;
    m.add_class::<dataset::Dataset>()?;
    m.add_class::<dataset::DatasetIter>()?;
    m.add_class::<dataset::Info>()?;
    m.add_class::<buffer::BatchBuffer>()?;
    m.add_class::<arrow::ArrowStream>()?;
    m.add_class::<writer::Sink>()?;
    m.add_class::<loader::IndexPlan>()?;
    m.add_class::<loader::BatchStream>()?;
    m.add_function(wrap_pyfunction!(writer::convert, m)?)?;
    m.add_function(wrap_pyfunction!(shutdown::exiting, m)?)?;
    m.add_function(wrap_pyfunction!(arrow::write_arrow, m)?)?;
    m.add_function(wrap_pyfunction!(writer::part_names, m)?)?;
    m.add_function(wrap_pyfunction!(parts::parts_staging, m)?)?;
    m.add_function(wrap_pyfunction!(parts::staged_part, m)?)?;
    m.add_function(wrap_pyfunction!(parts::publish_parts, m)?)?;
    m.add_function(wrap_pyfunction!(parts::discard_staging, m)?)?;
    m.add_function(wrap_pyfunction!(writer::verify, m)?)?;
    m.add_function(wrap_pyfunction!(writer::generate, m)?)?;
    m.add_function(wrap_pyfunction!(gulp::gulp_index, m)?)?;
    m.add_function(wrap_pyfunction!(ffrecord::ffrecord_tables, m)?)?;
    m.add_function(wrap_pyfunction!(ffrecord::ffrecord_validate, m)?)?;
    Ok(())
}
