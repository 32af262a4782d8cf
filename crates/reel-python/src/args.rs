//! Python arguments that count something (sizes, numbers of records or threads, seeds,
//! ranks): a negative or too large `int` is a `ValueError`, as for Python's own counts
//! (`bytes(-1)`), not the `OverflowError` an unsigned Rust parameter would raise. Callers
//! catching `ValueError` for bad arguments then catch these too.

use pyo3::exceptions::{PyOverflowError, PyValueError};
use pyo3::prelude::*;

/// A non-negative integer argument that fits in `T` (`u64` or `usize`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Count<T>(pub(crate) T);

impl<'a, 'py, T> FromPyObject<'a, 'py> for Count<T>
where
    T: FromPyObject<'a, 'py, Error = PyErr> + Bounded,
{
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        let py = obj.py();
        match obj.extract::<T>() {
            Ok(value) => Ok(Count(value)),
            Err(e) if e.is_instance_of::<PyOverflowError>(py) => {
                // The number itself is not quoted: an `int` may have thousands of digits.
                let negative = obj.lt(0i32)?;
                Err(PyValueError::new_err(if negative {
                    "a count, size, seed or rank cannot be negative".to_string()
                } else {
                    format!("a count, size, seed or rank must be at most {}", T::MAX_VALUE)
                }))
            }
            Err(e) => Err(e),
        }
    }
}

/// The largest value of an unsigned type, for messages.
pub(crate) trait Bounded {
    /// That value.
    const MAX_VALUE: u64;
}

impl Bounded for u64 {
    const MAX_VALUE: u64 = u64::MAX;
}

impl Bounded for usize {
    const MAX_VALUE: u64 = usize::MAX as u64;
}

/// The values of optional counts.
pub(crate) fn opt<T>(count: Option<Count<T>>) -> Option<T> {
    count.map(|Count(v)| v)
}

/// A count argument through `#[pyo3(from_py_with = count)]`, for parameters with a literal
/// default (which then shows in the method's signature as it is).
pub(crate) fn count<T>(obj: &Bound<'_, PyAny>) -> PyResult<T>
where
    T: for<'a, 'py> FromPyObject<'a, 'py, Error = PyErr> + Bounded,
{
    obj.extract::<Count<T>>().map(|Count(v)| v)
}

/// A pair of counts (`interleave=(n, k)`).
pub(crate) fn count_pair(obj: &Bound<'_, PyAny>) -> PyResult<(u64, u64)> {
    let (Count(a), Count(b)) = obj.extract::<(Count<u64>, Count<u64>)>()?;
    Ok((a, b))
}
