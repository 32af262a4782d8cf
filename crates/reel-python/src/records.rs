//! Python values to reel records, for the writers.
//!
//! The inverse of `values.rs`: `bytes`-like objects become bytes, `str` text, `int`/`float`/
//! `bool`/`None` scalars, NumPy arrays arrays (with their dtype and shape; big-endian input
//! is swapped to the little-endian form reel stores), lists and tuples lists, dicts maps.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{
    PyBool, PyByteArray, PyBytes, PyDict, PyFloat, PyInt, PyList, PyMemoryView, PyString, PyTuple,
};
use reel::{DType, FieldName, Record, RecordOut, Shape, Value};

/// The record a dict (or any mapping of str to value) stands for.
pub(crate) fn record_from(obj: &Bound<'_, PyAny>) -> PyResult<Record> {
    let mut record = Record::new();
    let mut out = record.out();
    let items = match obj.cast::<PyDict>() {
        Ok(dict) => dict.items(),
        Err(_) => obj
            .call_method0("items")
            .map_err(|_| PyTypeError::new_err("a record is a dict of field name to value"))?
            .try_iter()?
            .collect::<PyResult<Vec<_>>>()
            .and_then(|v| PyList::new(obj.py(), v))?,
    };
    for item in items.iter() {
        let (name, value): (Bound<'_, PyAny>, Bound<'_, PyAny>) = item.extract()?;
        let name: String =
            name.extract().map_err(|_| PyTypeError::new_err("field names are str"))?;
        let value = to_value(&mut out, &value, 0)
            .map_err(|e| prefix(obj.py(), e, &format!("field {name:?}")))?;
        out.push(FieldName::from(name.as_str()), value);
    }
    Ok(record)
}

fn prefix(py: Python<'_>, err: PyErr, what: &str) -> PyErr {
    let msg = format!("{what}: {}", err.value(py));
    if err.is_instance_of::<PyTypeError>(py) {
        PyTypeError::new_err(msg)
    } else if err.is_instance_of::<PyValueError>(py) {
        PyValueError::new_err(msg)
    } else {
        err
    }
}

/// Lists, tuples and dicts a value may nest: what reel's readers follow
/// ([`reel::Limits::max_nesting`]), so that nothing is written that they would refuse. It
/// also ends the walk of a list or dict that contains itself, which recursed until the
/// stack overflowed.
const MAX_NESTING: u32 = reel::Limits::DEFAULT_MAX_NESTING;

/// One value, `depth` lists, tuples or dicts down.
fn to_value(out: &mut RecordOut<'_>, obj: &Bound<'_, PyAny>, depth: u32) -> PyResult<Value> {
    let py = obj.py();
    if obj.is_none() {
        return Ok(Value::Null);
    }
    if let Ok(b) = obj.cast::<PyBool>() {
        return Ok(Value::Bool(b.is_true()));
    }
    if obj.is_instance_of::<PyInt>() {
        if let Ok(i) = obj.extract::<i64>() {
            return Ok(Value::Int(i));
        }
        let u: u64 =
            obj.extract().map_err(|_| PyValueError::new_err("integer does not fit in 64 bits"))?;
        return Ok(Value::from_u64(u));
    }
    if let Ok(f) = obj.cast::<PyFloat>() {
        return Ok(Value::Float(f.value()));
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(out.append_str(s.to_str()?));
    }
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok(Value::Bytes(out.append(b.as_bytes())));
    }
    if obj.is_instance_of::<PyByteArray>() || obj.is_instance_of::<PyMemoryView>() {
        let bytes = PyBytes::new(py, &[]).get_type().call1((obj,))?;
        let bytes = bytes.cast::<PyBytes>()?;
        return Ok(Value::Bytes(out.append(bytes.as_bytes())));
    }
    if let Ok(array) = obj.cast::<numpy::PyUntypedArray>() {
        return array_value(out, array.as_any());
    }
    let nested = obj.is_instance_of::<PyList>()
        || obj.is_instance_of::<PyTuple>()
        || obj.is_instance_of::<PyDict>();
    if nested && depth >= MAX_NESTING {
        return Err(PyValueError::new_err(format!(
            "lists, tuples and dicts nest more than {MAX_NESTING} deep (or one contains \
             itself): reel's readers refuse values nested deeper"
        )));
    }
    if let Ok(list) = obj.cast::<PyList>() {
        let values = list.iter().map(|v| to_value(out, &v, depth + 1));
        return values.collect::<PyResult<_>>().map(Value::List);
    }
    if let Ok(tuple) = obj.cast::<PyTuple>() {
        let values = tuple.iter().map(|v| to_value(out, &v, depth + 1));
        return values.collect::<PyResult<_>>().map(Value::List);
    }
    if let Ok(dict) = obj.cast::<PyDict>() {
        let mut entries = Vec::with_capacity(dict.len());
        for (k, v) in dict.iter() {
            entries.push((to_value(out, &k, depth + 1)?, to_value(out, &v, depth + 1)?));
        }
        return Ok(Value::Map(entries));
    }
    // Anything else NumPy can view (a NumPy scalar, a CPU torch tensor) goes through the
    // array NumPy makes of it: with a shape, stored as that array (`item()` made a
    // one-element tensor a scalar and failed on any other); 0-d (`numpy.float32(1.5)`,
    // `torch.tensor(3)`, a label), the Python number `item()` gives. A tensor that requires
    // grad is detached first (NumPy refuses it).
    if obj.hasattr("dtype")? && obj.hasattr("__array__")? {
        let plain = if obj.hasattr("detach")? { obj.call_method0("detach")? } else { obj.clone() };
        let array = py.import("numpy")?.call_method1("asarray", (plain,))?;
        if let Ok(array) = array.cast::<numpy::PyUntypedArray>() {
            if numpy::PyUntypedArrayMethods::ndim(array) > 0 {
                return array_value(out, array.as_any());
            }
            let item = array.call_method0("item")?;
            // An `item()` that is NumPy's again (a type with no Python counterpart) would
            // come back here for ever: it falls through to the error below.
            if !item.hasattr("dtype")? {
                return to_value(out, &item, depth);
            }
        }
    }
    Err(PyTypeError::new_err(format!(
        "reel cannot store a {} (use bytes, str, int, float, bool, None, a NumPy array, or \
         lists/dicts of those)",
        obj.get_type().name()?
    )))
}

/// A NumPy array as an array value: its little-endian bytes in C order, dtype and shape.
fn array_value(out: &mut RecordOut<'_>, array: &Bound<'_, PyAny>) -> PyResult<Value> {
    let dtype_str: String = array.getattr("dtype")?.getattr("str")?.extract()?;
    let (dtype, big_endian) = DType::from_numpy_str(&dtype_str).ok_or_else(|| {
        PyTypeError::new_err(format!("reel cannot store NumPy arrays of dtype {dtype_str}"))
    })?;
    let array = if big_endian {
        let little = array.getattr("dtype")?.call_method1("newbyteorder", ("<",))?;
        array.call_method1("astype", (little,))?
    } else {
        array.clone()
    };
    let dims: Vec<u64> = array.getattr("shape")?.extract()?;
    let bytes = array.call_method0("tobytes")?;
    let span = out.append(bytes.cast::<PyBytes>()?.as_bytes());
    out.array_value(dtype, Shape::new(&dims), span)
        .map_err(|e| PyValueError::new_err(e.to_string()))
}
