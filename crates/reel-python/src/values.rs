//! Record values to Python objects, as the reference readers return them.
//!
//! `bytes`, `str`, `int`, `float`, `bool`, `None`, `list`, `dict`, and NumPy arrays with the
//! stored dtype and shape. Arrays are copied into memory NumPy owns (aligned, writable), so
//! they outlive the batch buffer. Byte fields are copied into `bytes` unless the caller asked
//! for zero-copy views, in which case they are `memoryview` slices of a [`BatchBuffer`]
//! that keeps the whole batch alive.

use std::collections::HashMap;

use numpy::PyArray1;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyMemoryView, PySlice, PyString, PyTuple};
use reel_core::{ArrayRef, RecordRef, ValueRef};

/// Converts the records of one read. Field names are made into Python strings once per read.
pub(crate) struct Converter<'py, 'a> {
    py: Python<'py>,
    /// For zero-copy reads: a memoryview over the buffer the current record's values point
    /// into, and that buffer.
    view: Option<(Bound<'py, PyMemoryView>, &'a [u8])>,
    /// The key made for the field at each position of the last record: records of a batch
    /// nearly always name their fields alike and in the same order, so most fields find
    /// their key here with one comparison, without hashing.
    by_position: Vec<(&'a str, Bound<'py, PyString>)>,
    /// Every key made so far, for fields that are not where the last record had them.
    names: HashMap<&'a str, Bound<'py, PyString>>,
    /// The record and field being converted, for the error a map that cannot become a
    /// dict raises.
    at: Option<(u64, &'a str)>,
}

impl<'py, 'a> Converter<'py, 'a> {
    /// A converter that copies byte fields into `bytes`.
    pub(crate) fn copying(py: Python<'py>) -> Self {
        Converter { py, view: None, by_position: Vec::new(), names: HashMap::new(), at: None }
    }

    /// From now on, hands out byte fields that lie in `buffer` as slices of `view`, a
    /// memoryview over it (zero-copy reads); others are copied into `bytes`.
    pub(crate) fn view_into(&mut self, view: Bound<'py, PyMemoryView>, buffer: &'a [u8]) {
        self.view = Some((view, buffer));
    }

    /// The record as a dict of field name to value, in the record's field order.
    pub(crate) fn record(&mut self, record: RecordRef<'a>) -> PyResult<Bound<'py, PyDict>> {
        let dict = PyDict::new(self.py);
        for (position, (name, value)) in record.iter().enumerate() {
            let key = self.key(position, name);
            self.at = Some((record.index(), name));
            dict.set_item(key, self.value(value)?)?;
        }
        self.at = None;
        Ok(dict)
    }

    /// The dict key for field `name` at `position` in its record (interned, made once).
    fn key(&mut self, position: usize, name: &'a str) -> Bound<'py, PyString> {
        if let Some((known, key)) = self.by_position.get(position)
            && *known == name
        {
            return key.clone();
        }
        let key = match self.names.get(name) {
            Some(k) => k.clone(),
            None => {
                let k = PyString::intern(self.py, name);
                self.names.insert(name, k.clone());
                k
            }
        };
        if position < self.by_position.len() {
            self.by_position[position] = (name, key.clone());
        } else if position == self.by_position.len() {
            self.by_position.push((name, key.clone()));
        }
        key
    }

    /// One value.
    pub(crate) fn value(&mut self, value: ValueRef<'a>) -> PyResult<Bound<'py, PyAny>> {
        let py = self.py;
        Ok(match value {
            ValueRef::Null => py.None().into_bound(py),
            ValueRef::Bool(b) => b.into_pyobject(py)?.to_owned().into_any(),
            ValueRef::Int(i) => i.into_pyobject(py)?.into_any(),
            ValueRef::UInt(u) => u.into_pyobject(py)?.into_any(),
            ValueRef::Float(f) => f.into_pyobject(py)?.into_any(),
            ValueRef::Bytes(b) => self.bytes(b)?,
            ValueRef::Str(s) => PyString::new(py, s).into_any(),
            ValueRef::Array(a) => array(py, a)?,
            ValueRef::List(items) => {
                let list = PyList::empty(py);
                for item in items.iter() {
                    list.append(self.value(item)?)?;
                }
                list.into_any()
            }
            ValueRef::Map(entries) => {
                let dict = PyDict::new(py);
                for (k, v) in entries.iter() {
                    let key = self.value(k)?;
                    // msgpack and JSON maps may have list keys; Python needs hashable ones.
                    let key = match key.cast::<PyList>() {
                        Ok(list) => PyTuple::new(py, list.iter())?.into_any(),
                        Err(_) => key,
                    };
                    let before = dict.len();
                    dict.set_item(&key, self.value(v)?)?;
                    if dict.len() == before {
                        return Err(self.key_twice(&key));
                    }
                }
                dict.into_any()
            }
        })
    }

    /// The error for a map holding `key` more than once (an Arrow map, a struct with two
    /// children of one name, a msgpack map): a dict keeps one value per key, and returning
    /// it would drop the others without a word. pyarrow refuses such a struct alike.
    fn key_twice(&self, key: &Bound<'py, PyAny>) -> PyErr {
        let key = key.repr().map_or_else(|_| "?".to_owned(), |r| r.to_string());
        let mut message = format!("a map holds the key {key} more than once");
        if let Some((_, field)) = self.at {
            message = format!("field {field:?}: {message}");
        }
        message.push_str(
            ", and a dict would keep one of its values; read the record through \
             Dataset.to_arrow(), which keeps every entry",
        );
        let mut err = reel_core::Error::unsupported(message);
        if let Some((record, _)) = self.at {
            err = err.with_record(record);
        }
        crate::errors::to_py(self.py, err)
    }

    fn bytes(&self, b: &'a [u8]) -> PyResult<Bound<'py, PyAny>> {
        if let Some((view, buffer)) = &self.view {
            let base = buffer.as_ptr() as usize;
            let start = (b.as_ptr() as usize).wrapping_sub(base);
            // A byte value lies inside the buffer its record points into; anything else
            // (a value decoded elsewhere) is copied.
            if start <= buffer.len() && b.len() <= buffer.len() - start {
                let end = start + b.len();
                // `slice(start, end)` made by calling the type, not `PySlice::new`: pyo3
                // 0.28's `PySlice::new` hands `PySlice_New` new references to its bounds
                // and never releases them, which leaked two ints per value read.
                let slice = self.py.get_type::<PySlice>().call1((start, end))?;
                return view.as_any().get_item(slice);
            }
        }
        Ok(PyBytes::new(self.py, b).into_any())
    }
}

/// A NumPy array with the value's dtype and shape, in memory NumPy owns.
pub(crate) fn array<'py>(py: Python<'py>, a: ArrayRef<'_>) -> PyResult<Bound<'py, PyAny>> {
    let raw = PyArray1::<u8>::from_slice(py, a.data);
    let typed = raw.call_method1("view", (a.dtype.numpy_str(),))?;
    let shape = PyTuple::new(py, a.shape.iter().copied())?;
    typed.call_method1("reshape", (shape,))
}
