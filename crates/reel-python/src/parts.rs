//! Datasets written in parts by many workers and published once (`reel::parts`): what
//! `reel.ray`'s sink and distributed convert drive.

use std::path::PathBuf;

use pyo3::prelude::*;
use reel::parts::StagedPart;

use crate::errors::IntoPyResult;
use crate::storage::{StorageOptions, create_options, storage_options};
use crate::writer::format_named;

/// Starts a job writing a dataset at `dst` (a path or an object URL) in parts: refuses
/// something at `dst` unless `overwrite`, and returns a fresh hidden staging location beside
/// it (a directory, or a key prefix in the same bucket).
#[pyfunction]
#[pyo3(signature = (dst, *, overwrite, storage_options=Vec::new()))]
pub(crate) fn parts_staging(
    py: Python<'_>,
    dst: PathBuf,
    overwrite: bool,
    #[pyo3(from_py_with = storage_options)] storage_options: StorageOptions,
) -> PyResult<String> {
    let options = create_options(overwrite, &storage_options).py_err(py)?;
    let staging =
        crate::shutdown::detach(py, || reel::parts::parts_staging(&dst, &options)).py_err(py)?;
    text(staging).py_err(py)
}

/// Where worker `task` writes its part under `staging`.
#[pyfunction]
pub(crate) fn staged_part(py: Python<'_>, staging: PathBuf, task: u64) -> PyResult<String> {
    text(reel::parts::staged_part(&staging, task)).py_err(py)
}

/// A location as `str`: a `pathlib.Path` (what a `PathBuf` becomes) would fold the `//` of
/// an object URL.
fn text(location: PathBuf) -> reel::Result<String> {
    location.into_os_string().into_string().map_err(|raw| {
        reel::Error::invalid_input("a location that is not UTF-8").with_path(PathBuf::from(raw))
    })
}

/// Publishes at `dst` the `format` dataset whose part `i` a worker wrote at `parts[i] =
/// (location, k, n)` as part `k` of `n`: renamed into place on a file system, copied in by
/// the store (data first, what makes it openable last) in a bucket; the staging location is
/// removed on success.
#[pyfunction]
#[pyo3(signature = (staging, format, parts, dst, *, overwrite, storage_options=Vec::new()))]
pub(crate) fn publish_parts(
    py: Python<'_>,
    staging: PathBuf,
    format: &str,
    parts: Vec<(PathBuf, u64, u64)>,
    dst: PathBuf,
    overwrite: bool,
    #[pyo3(from_py_with = storage_options)] storage_options: StorageOptions,
) -> PyResult<()> {
    let format = format_named(format).py_err(py)?;
    let parts: Vec<StagedPart> = parts
        .into_iter()
        .map(|(location, k, n)| StagedPart { location, written_as: (k, n) })
        .collect();
    let options = create_options(overwrite, &storage_options).py_err(py)?;
    crate::shutdown::detach(py, || {
        reel::parts::publish_parts(&staging, format, &parts, &dst, &options)
    })
    .py_err(py)
}

/// Removes everything a job's workers wrote under `staging` (a location `parts_staging`
/// gave; any other path is refused).
#[pyfunction]
#[pyo3(signature = (staging, *, storage_options=Vec::new()))]
pub(crate) fn discard_staging(
    py: Python<'_>,
    staging: PathBuf,
    #[pyo3(from_py_with = storage_options)] storage_options: StorageOptions,
) -> PyResult<()> {
    let options = create_options(false, &storage_options).py_err(py)?;
    crate::shutdown::detach(py, || reel::parts::discard_staging(&staging, &options)).py_err(py)
}
