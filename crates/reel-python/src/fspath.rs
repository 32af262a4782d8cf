//! Path arguments as Python's own file functions take them: `str`, `bytes` or an
//! `os.PathLike` returning either (`open(b"/data/x")` works in Python, so `reel.open` takes
//! it too). pyo3's `PathBuf` takes `str` and `str`-returning `os.PathLike` only.

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::PathBuf;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

/// A path argument (through `#[pyo3(from_py_with = fs_path)]`): `str`, `bytes` (the file
/// system's bytes, which may be any but NUL on Unix) or an `os.PathLike` returning one of
/// them.
pub(crate) fn fs_path(obj: &Bound<'_, PyAny>) -> PyResult<PathBuf> {
    // `os.fspath` gives the `str` or `bytes` of any path-like, and its own TypeError
    // ("expected str, bytes or os.PathLike object, not int") for anything else; pyo3 puts
    // the argument's name in front of it.
    let raw = if obj.is_instance_of::<PyBytes>() || obj.is_instance_of::<PyString>() {
        obj.clone()
    } else {
        obj.py().import("os")?.getattr("fspath")?.call1((obj,))?
    };
    if let Ok(bytes) = raw.cast::<PyBytes>() {
        return Ok(PathBuf::from(OsString::from_vec(bytes.as_bytes().to_vec())));
    }
    // A `str`, with the surrogate escapes of undecodable bytes (`os.fsdecode`) turned back
    // into those bytes.
    raw.extract::<PathBuf>()
}

/// An optional path argument (`None` or as [`fs_path`]).
pub(crate) fn opt_fs_path(obj: &Bound<'_, PyAny>) -> PyResult<Option<PathBuf>> {
    if obj.is_none() { Ok(None) } else { fs_path(obj).map(Some) }
}

/// A path or object URL given back to Python: a local path as a `pathlib.Path` (what
/// pyo3 makes of a `PathBuf`), an object URL as a `str` URL with its key percent-encoded
/// (`s3://b/my%20data.ffr`), which `reel.open` takes back: a `pathlib.Path` folds a URL's
/// `//` (`s3:/b/…`), and the store's own spelling of a key (`my data.ffr`) is no URL of it.
#[derive(Clone, Debug)]
pub(crate) struct Location(pub(crate) PathBuf);

impl<'py> IntoPyObject<'py> for Location {
    type Target = PyAny;
    type Output = Bound<'py, PyAny>;
    type Error = PyErr;

    fn into_pyobject(self, py: Python<'py>) -> PyResult<Self::Output> {
        path_object(py, self.0, reel::store::location_url)
    }
}

/// Each of `paths` as a [`Location`].
pub(crate) fn locations(paths: &[PathBuf]) -> Vec<Location> {
    paths.iter().cloned().map(Location).collect()
}

/// A path or address as the user gave it (or as a writer's summary names it: already a
/// URL), given back to Python: a URL as the same `str`, a local path as a `pathlib.Path`.
#[derive(Clone, Debug)]
pub(crate) struct GivenPath(pub(crate) PathBuf);

impl<'py> IntoPyObject<'py> for GivenPath {
    type Target = PyAny;
    type Output = Bound<'py, PyAny>;
    type Error = PyErr;

    fn into_pyobject(self, py: Python<'py>) -> PyResult<Self::Output> {
        path_object(py, self.0, str::to_owned)
    }
}

/// `path` as Python gets it: an object URL as the `str` `url` makes of its text, anything
/// else as a `pathlib.Path`.
fn path_object(
    py: Python<'_>,
    path: PathBuf,
    url: fn(&str) -> String,
) -> PyResult<Bound<'_, PyAny>> {
    match path.to_str() {
        Some(text) if reel::store::is_remote(text) => Ok(PyString::new(py, &url(text)).into_any()),
        _ => Ok(path.into_pyobject(py)?.into_any()),
    }
}
