//! Python arguments that count something (sizes, numbers of records or threads, seeds,
//! ranks): a negative or too large `int` is a `ValueError`, as for Python's own counts
//! (`bytes(-1)`), not the `OverflowError` an unsigned Rust parameter would raise. Callers
//! catching `ValueError` for bad arguments then catch these too.
//!
//! The error names the argument (`argument 'batch_size': cannot be negative`), as pyo3
//! does for a `TypeError`. A `bool` is refused (`TypeError`), though Python counts it as
//! an `int`: `records=True` means something else than one record. pyo3 adds the name to `TypeError`s only, so each count carries
//! its argument's name in its type: `Count<u64, name::Seed>`.

use std::marker::PhantomData;

use pyo3::exceptions::{PyOverflowError, PyValueError};
use pyo3::prelude::*;

/// A non-negative integer argument that fits in `T` (`u64` or `usize`), named by `A`.
pub(crate) struct Count<T, A>(pub(crate) T, PhantomData<fn() -> A>);

impl<'a, 'py, T, A> FromPyObject<'a, 'py> for Count<T, A>
where
    T: FromPyObject<'a, 'py, Error = PyErr> + Bounded,
    A: ArgName,
{
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        let py = obj.py();
        // `True` is an `int` to Python, but `records=True` is a mistake, not one record.
        if obj.is_instance_of::<pyo3::types::PyBool>() {
            return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                "argument '{}': an integer, not a bool",
                A::NAME
            )));
        }
        match obj.extract::<T>() {
            Ok(value) => Ok(Count(value, PhantomData)),
            Err(e) if e.is_instance_of::<PyOverflowError>(py) => {
                // The number itself is not quoted: an `int` may have thousands of digits.
                let negative = obj.lt(0i32)?;
                let name = A::NAME;
                Err(PyValueError::new_err(if negative {
                    format!("argument '{name}': cannot be negative")
                } else {
                    format!("argument '{name}': must be at most {}", T::MAX_VALUE)
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

/// The Python name of a count argument, for its errors.
pub(crate) trait ArgName {
    /// The name, as the Python signature spells it.
    const NAME: &'static str;
}

macro_rules! arg_names {
    ($($marker:ident = $name:literal),* $(,)?) => {
        $(
            #[doc = concat!("The argument `", $name, "`.")]
            pub(crate) enum $marker {}

            impl super::ArgName for $marker {
                const NAME: &'static str = $name;
            }
        )*
    };
}

/// The count arguments of the module's functions and methods.
pub(crate) mod name {
    arg_names! {
        BatchBytes = "batch_bytes",
        BatchRows = "batch_rows",
        BatchSize = "batch_size",
        CacheSize = "cache_size",
        Epoch = "epoch",
        Epochs = "epochs",
        Interleave = "interleave",
        K = "k",
        MaxRecord = "max_record",
        N = "n",
        Part = "part",
        PartSize = "part_size",
        Prefetch = "prefetch",
        Rank = "rank",
        Records = "records",
        SampleRecords = "sample_records",
        Seed = "seed",
        Shard = "shard",
        Start = "start",
        Stop = "stop",
        Threads = "threads",
        WorldSize = "world_size",
    }
}

/// The values of optional counts.
pub(crate) fn opt<T, A>(count: Option<Count<T, A>>) -> Option<T> {
    count.map(|Count(v, _)| v)
}

/// The values of an optional pair of counts (`part=(k, n)`).
pub(crate) fn opt_pair<A>(pair: Option<(Count<u64, A>, Count<u64, A>)>) -> Option<(u64, u64)> {
    pair.map(|(Count(a, _), Count(b, _))| (a, b))
}

/// A count argument through `#[pyo3(from_py_with = count::<T, name::X>)]`, for parameters
/// with a literal default (which then shows in the method's signature as it is).
pub(crate) fn count<T, A>(obj: &Bound<'_, PyAny>) -> PyResult<T>
where
    T: for<'a, 'py> FromPyObject<'a, 'py, Error = PyErr> + Bounded,
    A: ArgName,
{
    obj.extract::<Count<T, A>>().map(|Count(v, _)| v)
}

/// A pair of counts (`interleave=(n, k)`).
pub(crate) fn count_pair<A: ArgName>(obj: &Bound<'_, PyAny>) -> PyResult<(u64, u64)> {
    let (Count(a, _), Count(b, _)) = obj.extract::<(Count<u64, A>, Count<u64, A>)>()?;
    Ok((a, b))
}
