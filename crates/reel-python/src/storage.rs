//! `storage_options=`: object-store settings given per call, as a mapping of names to
//! values (as fsspec, pyarrow and lance take them), on top of the environment.
//!
//! Names are reel's own (`timeout`, `connect_timeout`, `retries`, `retry_timeout`) or
//! object_store's builder settings (`aws_endpoint`, `aws_region`, `allow_http` …); the
//! Rust side (`reel::store::StoreOptions::set`) tells them apart and checks the values.
//! Here the mapping only becomes text: `True` is `"true"`, `3` is `"3"`.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyMapping, PyString};

/// Storage options as (name, value) pairs, in the mapping's order.
pub(crate) type StorageOptions = Vec<(String, String)>;

/// The `storage_options` argument: `None` (none), or a mapping of `str` names to `str`,
/// `int`, `float` or `bool` values. Anything else is a `TypeError` naming the option.
pub(crate) fn storage_options(obj: &Bound<'_, PyAny>) -> PyResult<StorageOptions> {
    if obj.is_none() {
        return Ok(Vec::new());
    }
    let mapping = obj.cast::<PyMapping>().map_err(|_| {
        PyTypeError::new_err(format!("a mapping of option names to values, not {}", type_name(obj)))
    })?;
    let mut pairs = Vec::new();
    for item in mapping.items()?.iter() {
        let (key, value): (Bound<'_, PyAny>, Bound<'_, PyAny>) = item.extract()?;
        let Ok(name) = key.cast::<PyString>() else {
            return Err(PyTypeError::new_err(format!(
                "option names are str, not {}",
                type_name(&key)
            )));
        };
        let name = name.to_str()?.to_owned();
        let text = if value.is_instance_of::<PyBool>() {
            if value.is_truthy()? { "true" } else { "false" }.to_owned()
        } else if value.is_instance_of::<PyString>()
            || value.is_instance_of::<PyInt>()
            || value.is_instance_of::<PyFloat>()
        {
            value.str()?.to_str()?.to_owned()
        } else {
            return Err(PyTypeError::new_err(format!(
                "the option {name:?} takes a str, int, float or \
                 bool, not {}",
                type_name(&value)
            )));
        };
        pairs.push((name, text));
    }
    Ok(pairs)
}

/// Writer options with `overwrite` and the store settings `storage`.
pub(crate) fn create_options(
    overwrite: bool,
    storage: &StorageOptions,
) -> reel::Result<reel::CreateOptions> {
    let mut options = reel::CreateOptions::default().overwrite(overwrite);
    for (name, value) in storage {
        options.storage_option(name, value)?;
    }
    Ok(options)
}

/// The options as a dict again, for pickling.
pub(crate) fn storage_dict<'py>(
    py: Python<'py>,
    pairs: &StorageOptions,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (name, value) in pairs {
        d.set_item(name, value)?;
    }
    Ok(d)
}

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type().name().map_or_else(|_| "?".to_owned(), |n| n.to_string())
}
