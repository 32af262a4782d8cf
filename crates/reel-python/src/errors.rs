//! The one mapping from `reel_core::Error` to Python exceptions.
//!
//! The classes live in `reel/_errors.py` (so they can also derive from the built-in class a
//! Python user expects, such as `FileNotFoundError`); this module only picks the class for a
//! kind and copies the context. Every error crossing into Python goes through [`to_py`].

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use reel_core::{Error, ErrorKind};

/// The name of the class in `reel._errors` for `kind`.
fn class_name(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::Io => "IoError",
        ErrorKind::Corrupt => "CorruptError",
        ErrorKind::Checksum => "ChecksumError",
        ErrorKind::Unsupported => "UnsupportedError",
        ErrorKind::OutOfRange => "OutOfRangeError",
        ErrorKind::NotFound => "NotFoundError",
        ErrorKind::Schema => "SchemaError",
        ErrorKind::Limit => "LimitError",
        ErrorKind::Closed => "ClosedError",
        ErrorKind::InvalidInput => "InvalidInputError",
        _ => "ReelError",
    }
}

/// The Python exception for `err`: its class by kind, its message the Rust error's display
/// text (context first), and the context as attributes.
pub(crate) fn to_py(py: Python<'_>, err: Error) -> PyErr {
    build(py, &err).unwrap_or_else(|failure| {
        // Only a broken installation (reel._errors missing) gets here; keep the text.
        PyRuntimeError::new_err(format!("{err} (and the reel error class failed: {failure})"))
    })
}

fn build(py: Python<'_>, err: &Error) -> PyResult<PyErr> {
    let class = py.import("reel._errors")?.getattr(class_name(err.kind()))?;
    let value = class.call1((err.to_string(),))?;
    value.setattr("kind", err.kind().as_str())?;
    value.setattr("format", err.format())?;
    value.setattr("path", err.path().map(|p| p.to_string_lossy().into_owned()))?;
    value.setattr("record", err.record())?;
    value.setattr("offset", err.offset())?;
    Ok(PyErr::from_value(value))
}

/// Extension to turn `reel_core::Result` into `PyResult` at the boundary.
pub(crate) trait IntoPyResult<T> {
    /// Maps the error through [`to_py`].
    fn py_err(self, py: Python<'_>) -> PyResult<T>;
}

impl<T> IntoPyResult<T> for reel_core::Result<T> {
    fn py_err(self, py: Python<'_>) -> PyResult<T> {
        self.map_err(|e| to_py(py, e))
    }
}
