//! A strict, safe unpickler for records that hold `pickle.dumps(sample)`.
//!
//! Python's `pickle.loads` runs whatever the data names; this one runs nothing. It follows
//! the opcodes of protocols 2 to 5 (split by [`reel_core::pickle::OpReader`], which the
//! FFRecord folder-index parser shares) and builds dicts, tuples and lists, `str`,
//! `bytes`/`bytearray`, `int` (up to what fits in `i64`/`u64`), `float`, `bool` and
//! `None`, plus NumPy arrays and scalars. Globals are names on an allow-list that this
//! module *interprets*; no Python object is ever constructed by name. The list:
//!
//! | global | what it means here |
//! | --- | --- |
//! | `numpy.core.multiarray._reconstruct`, `numpy._core.multiarray._reconstruct` | an array whose `BUILD` state gives dtype, shape, order and bytes |
//! | `numpy.ndarray` | only as the first argument of `_reconstruct` |
//! | `numpy.dtype` | a dtype (`'f8'`, `'<U4'` …) whose `BUILD` state gives its byte order |
//! | `numpy.core.multiarray.scalar`, `numpy._core.multiarray.scalar` | a NumPy scalar: a 0-d array |
//! | `numpy.core.numeric._frombuffer`, `numpy._core.numeric._frombuffer` | how protocol 5 pickles arrays in band |
//! | `_codecs.encode` | with `'latin1'`: how protocol 2 writes `bytes` |
//! | `builtins.bytes`, `builtins.bytearray` (`__builtin__.*` in protocol 2) | empty bytes, or a copy of bytes |
//! | `collections.OrderedDict` | a dict |
//!
//! Anything else — another global, `REDUCE` on anything but these, object construction
//! (`NEWOBJ`, `INST`, `OBJ`), extensions, persistent ids, out-of-band buffers, sets and the
//! text opcodes of protocols 0 and 1 — is refused with an
//! [`ErrorKind::Unsupported`](reel_core::ErrorKind::Unsupported) error that names it.
//!
//! # Bounds
//!
//! Each opcode adds at most one object, so the parse holds O(input) objects. Objects fetched
//! from the memo are shared, never copied, while parsing; turning them into values copies
//! shared parts, so the number of values produced is bounded (32 per input byte, at least
//! 65 536) and a reference cycle is refused. Nesting follows
//! [`Limits::max_nesting`](reel_core::Limits) and the bytes produced by byte swapping,
//! Fortran-order arrays and protocol-2 text follow
//! [`Limits::max_decoded_bytes`](reel_core::Limits). Text and bytes point into the record
//! (no copy).
//!
//! NumPy arrays become [`Value::Array`] in C order and little-endian (big-endian and
//! Fortran-order data are rearranged); scalars become 0-d arrays, keeping their dtype.
//! Tuples become lists. Object, structured, datetime and other dtypes reel has no type for
//! are refused.

use std::collections::HashMap;

use reel_core::pickle::{Op, OpReader, long_to_i64, long_to_u64, opcode_text};
use reel_core::{
    ArrayValue, DType, Error, ErrorKind, Limits, RecordOut, Result, Shape, Span, Value,
};

const WHAT: &str = "pickled record";

/// Where the bytes of a `bytes` or array object are.
#[derive(Clone, Debug)]
enum Data {
    /// `len` bytes at `at` in the pickle.
    Input { at: usize, len: usize },
    /// Bytes the parse produced (protocol 2 `_codecs.encode`).
    Owned(Vec<u8>),
}

impl Data {
    fn len(&self) -> usize {
        match self {
            Data::Input { len, .. } => *len,
            Data::Owned(v) => v.len(),
        }
    }
}

/// The globals this unpickler understands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Known {
    Reconstruct,
    NdArray,
    Dtype,
    Scalar,
    FromBuffer,
    CodecsEncode,
    Bytes,
    ByteArray,
    OrderedDict,
}

const ALLOWED: &str = "numpy.core.multiarray._reconstruct, numpy.ndarray, numpy.dtype, \
     numpy.core.multiarray.scalar, numpy.core.numeric._frombuffer (or their numpy._core \
     names), _codecs.encode, builtins.bytes, builtins.bytearray, collections.OrderedDict";

fn known(module: &str, name: &str) -> Option<Known> {
    Some(match (module, name) {
        ("numpy.core.multiarray" | "numpy._core.multiarray", "_reconstruct") => Known::Reconstruct,
        ("numpy", "ndarray") => Known::NdArray,
        ("numpy", "dtype") => Known::Dtype,
        ("numpy.core.multiarray" | "numpy._core.multiarray", "scalar") => Known::Scalar,
        ("numpy.core.numeric" | "numpy._core.numeric", "_frombuffer") => Known::FromBuffer,
        ("_codecs", "encode") => Known::CodecsEncode,
        ("builtins" | "__builtin__", "bytes") => Known::Bytes,
        ("builtins" | "__builtin__", "bytearray") => Known::ByteArray,
        ("collections", "OrderedDict") => Known::OrderedDict,
        _ => return None,
    })
}

/// A NumPy dtype: element type and whether the data is big-endian.
#[derive(Clone, Copy, Debug)]
struct NpDtype {
    dtype: DType,
    big_endian: bool,
}

#[derive(Clone, Debug)]
enum Obj {
    None,
    Bool(bool),
    Int(i64),
    UInt(u64),
    Float(f64),
    Str {
        at: usize,
        len: usize,
    },
    Bytes(Data),
    Tuple(Vec<usize>),
    List(Vec<usize>),
    Dict(Vec<(usize, usize)>),
    Global(Known),
    Dtype(NpDtype),
    /// `_reconstruct(ndarray, …)` before its `BUILD`.
    EmptyArray,
    Array {
        dtype: NpDtype,
        shape: Vec<u64>,
        fortran: bool,
        data: Data,
    },
}

impl Obj {
    fn kind(&self) -> &'static str {
        match self {
            Obj::None => "None",
            Obj::Bool(_) => "a bool",
            Obj::Int(_) | Obj::UInt(_) => "an int",
            Obj::Float(_) => "a float",
            Obj::Str { .. } => "a str",
            Obj::Bytes(_) => "bytes",
            Obj::Tuple(_) => "a tuple",
            Obj::List(_) => "a list",
            Obj::Dict(_) => "a dict",
            Obj::Global(_) => "a global",
            Obj::Dtype(_) => "a numpy dtype",
            Obj::EmptyArray | Obj::Array { .. } => "a numpy array",
        }
    }
}

fn refused(what: impl std::fmt::Display) -> Error {
    Error::unsupported(format!("{WHAT}: {what}"))
}

struct Parser<'a> {
    input: &'a [u8],
    ops: OpReader<'a>,
    objs: Vec<Obj>,
    stack: Vec<usize>,
    marks: Vec<usize>,
    memo: HashMap<u32, usize>,
}

impl<'a> Parser<'a> {
    fn corrupt(&self, at: usize, what: impl std::fmt::Display) -> Error {
        self.ops.corrupt(at, what)
    }

    fn push(&mut self, obj: Obj) {
        self.objs.push(obj);
        self.stack.push(self.objs.len() - 1);
    }

    fn floor(&self) -> usize {
        self.marks.last().copied().unwrap_or(0)
    }

    fn pop(&mut self, at: usize) -> Result<usize> {
        if self.stack.len() <= self.floor() {
            return Err(self.corrupt(at, "stack underflow"));
        }
        self.stack.pop().ok_or_else(|| self.corrupt(at, "stack underflow"))
    }

    fn top(&self, at: usize) -> Result<usize> {
        match self.stack.last() {
            Some(&id) if self.stack.len() > self.floor() => Ok(id),
            _ => Err(self.corrupt(at, "stack underflow")),
        }
    }

    fn pop_mark(&mut self, at: usize) -> Result<Vec<usize>> {
        let mark = self.marks.pop().ok_or_else(|| self.corrupt(at, "no MARK to pop to"))?;
        Ok(self.stack.split_off(mark.min(self.stack.len())))
    }

    fn text(&self, id: usize) -> Option<&'a str> {
        match self.objs[id] {
            // Validated when pushed.
            Obj::Str { at, len } => std::str::from_utf8(&self.input[at..at + len]).ok(),
            _ => None,
        }
    }

    fn global(&mut self, module: &str, name: &str) -> Result<()> {
        match known(module, name) {
            Some(k) => {
                self.push(Obj::Global(k));
                Ok(())
            }
            None => Err(refused(format!(
                "refers to the global {module}.{name}, which is not allowed (it is never \
                 run; allowed: {ALLOWED})"
            ))),
        }
    }

    fn run(&mut self) -> Result<usize> {
        loop {
            let (at, op) = self.ops.next_op()?;
            match op {
                Op::Proto(p) => {
                    if !(2..=5).contains(&p) {
                        return Err(refused(format!("pickle protocol {p} (2 to 5 are read)")));
                    }
                }
                Op::Frame(_) => {}
                Op::Stop => {
                    let id = self.pop(at)?;
                    if !self.stack.is_empty() || !self.marks.is_empty() {
                        return Err(self.corrupt(at, "STOP with more than one value left"));
                    }
                    return Ok(id);
                }
                Op::Mark => self.marks.push(self.stack.len()),
                Op::Pop => {
                    self.pop(at)?;
                }
                Op::PopMark => {
                    self.pop_mark(at)?;
                }
                Op::Dup => {
                    let id = self.top(at)?;
                    self.stack.push(id);
                }
                Op::Memoize => {
                    let id = self.top(at)?;
                    let idx = self.memo.len() as u32;
                    self.memo.insert(idx, id);
                }
                Op::Put(idx) => {
                    let id = self.top(at)?;
                    self.memo.insert(idx, id);
                }
                Op::Get(idx) => {
                    let id = *self.memo.get(&idx).ok_or_else(|| {
                        self.corrupt(at, format!("memo entry {idx} is not defined"))
                    })?;
                    self.stack.push(id);
                }
                Op::Global { module, name } => {
                    let m = String::from_utf8_lossy(module).into_owned();
                    let n = String::from_utf8_lossy(name).into_owned();
                    self.global(&m, &n)?;
                }
                Op::StackGlobal => {
                    let name = self.pop(at)?;
                    let module = self.pop(at)?;
                    let (Some(m), Some(n)) = (self.text(module), self.text(name)) else {
                        return Err(self.corrupt(at, "STACK_GLOBAL needs two strings"));
                    };
                    self.global(m, n)?;
                }
                Op::Reduce => {
                    let args = self.pop(at)?;
                    let callable = self.pop(at)?;
                    let obj = self.reduce(at, callable, args)?;
                    self.push(obj);
                }
                Op::Build => {
                    let state = self.pop(at)?;
                    let target = self.top(at)?;
                    self.build(at, target, state)?;
                }
                Op::None => self.push(Obj::None),
                Op::Bool(b) => self.push(Obj::Bool(b)),
                Op::Int(i) => self.push(Obj::Int(i)),
                Op::Long(b) => {
                    let obj = match (long_to_i64(b), long_to_u64(b)) {
                        (Some(i), _) => Obj::Int(i),
                        (None, Some(u)) => Obj::UInt(u),
                        (None, None) => {
                            return Err(refused(format!(
                                "byte {at}: an integer of {} bytes does not fit in 64 bits \
                                 (reel's integers are i64, or u64 when positive)",
                                b.len()
                            )));
                        }
                    };
                    self.push(obj);
                }
                Op::Float(f) => self.push(Obj::Float(f)),
                Op::Text { at: start, bytes } => {
                    if let Err(e) = std::str::from_utf8(bytes) {
                        return Err(self.corrupt(at, format!("text is not valid UTF-8: {e}")));
                    }
                    self.push(Obj::Str { at: start, len: bytes.len() });
                }
                Op::Bytes { at, bytes } | Op::ByteArray { at, bytes } => {
                    self.push(Obj::Bytes(Data::Input { at, len: bytes.len() }));
                }
                Op::EmptyTuple => self.push(Obj::Tuple(Vec::new())),
                Op::TupleN(n) => {
                    let mut items = Vec::with_capacity(n as usize);
                    for _ in 0..n {
                        items.push(self.pop(at)?);
                    }
                    items.reverse();
                    self.push(Obj::Tuple(items));
                }
                Op::Tuple => {
                    let items = self.pop_mark(at)?;
                    self.push(Obj::Tuple(items));
                }
                Op::EmptyList => self.push(Obj::List(Vec::new())),
                Op::List => {
                    let items = self.pop_mark(at)?;
                    self.push(Obj::List(items));
                }
                Op::Append => {
                    let item = self.pop(at)?;
                    let list = self.top(at)?;
                    self.extend_list(at, list, vec![item])?;
                }
                Op::Appends => {
                    let items = self.pop_mark(at)?;
                    let list = self.top(at)?;
                    self.extend_list(at, list, items)?;
                }
                Op::EmptyDict => self.push(Obj::Dict(Vec::new())),
                Op::Dict => {
                    let items = self.pop_mark(at)?;
                    self.push(Obj::Dict(Vec::new()));
                    let dict = self.top(at)?;
                    self.set_items(at, dict, items)?;
                }
                Op::SetItem => {
                    let v = self.pop(at)?;
                    let k = self.pop(at)?;
                    let dict = self.top(at)?;
                    self.set_items(at, dict, vec![k, v])?;
                }
                Op::SetItems => {
                    let items = self.pop_mark(at)?;
                    let dict = self.top(at)?;
                    self.set_items(at, dict, items)?;
                }
                Op::Other(code, name) => {
                    return Err(refused(format!(
                        "byte {at}: opcode {} is not read (it builds \
                         objects other than plain data and NumPy arrays, or belongs to \
                         protocols 0 and 1)",
                        opcode_text(code, name)
                    )));
                }
                _ => {
                    return Err(refused(format!("byte {at}: an opcode this reader does not know")));
                }
            }
        }
    }

    fn extend_list(&mut self, at: usize, list: usize, items: Vec<usize>) -> Result<()> {
        match &mut self.objs[list] {
            Obj::List(v) => {
                v.extend(items);
                Ok(())
            }
            other => Err(refused(format!("byte {at}: APPEND to {}, not a list", other.kind()))),
        }
    }

    fn set_items(&mut self, at: usize, dict: usize, items: Vec<usize>) -> Result<()> {
        if !items.len().is_multiple_of(2) {
            return Err(self.corrupt(at, "an odd number of items for a dict"));
        }
        let keys: Vec<Option<KeyId<'a>>> =
            items.chunks_exact(2).map(|kv| self.key_identity(kv[0])).collect();
        let Obj::Dict(entries) = &self.objs[dict] else {
            return Err(refused(format!(
                "byte {at}: SETITEM on {}, not a dict",
                self.objs[dict].kind()
            )));
        };
        let mut entries = entries.clone();
        for (kv, key) in items.chunks_exact(2).zip(keys) {
            let Some(key) = key else {
                return Err(refused(format!(
                    "byte {at}: a dict key is {}; str, bytes, int, float, bool and None keys are read",
                    self.objs[kv[0]].kind()
                )));
            };
            // Python dicts keep one entry per key, in first-insertion order.
            match entries.iter_mut().find(|(k, _)| self.key_identity(*k).as_ref() == Some(&key)) {
                Some(slot) => slot.1 = kv[1],
                None => entries.push((kv[0], kv[1])),
            }
        }
        self.objs[dict] = Obj::Dict(entries);
        Ok(())
    }

    /// What makes two keys the same key, for the hashable scalars a sample's dict uses.
    fn key_identity(&self, id: usize) -> Option<KeyId<'a>> {
        Some(match &self.objs[id] {
            Obj::None => KeyId::None,
            // True == 1 and 1.0 == 1 in Python; all of them are the same key.
            Obj::Bool(b) => KeyId::Int(i128::from(*b)),
            Obj::Int(i) => KeyId::Int(i128::from(*i)),
            Obj::UInt(u) => KeyId::Int(i128::from(*u)),
            Obj::Float(f) if f.fract() == 0.0 && f.abs() < 1e30 => KeyId::Int(*f as i128),
            Obj::Float(f) => KeyId::Float(f.to_bits()),
            Obj::Str { at, len } => KeyId::Str(&self.input[*at..*at + *len]),
            Obj::Bytes(Data::Input { at, len }) => KeyId::Bytes(&self.input[*at..*at + *len]),
            _ => return None,
        })
    }

    fn tuple(&self, id: usize) -> Option<&[usize]> {
        match &self.objs[id] {
            Obj::Tuple(items) => Some(items),
            _ => None,
        }
    }

    fn reduce(&mut self, at: usize, callable: usize, args: usize) -> Result<Obj> {
        let Obj::Global(k) = self.objs[callable] else {
            return Err(refused(format!(
                "byte {at}: REDUCE calls {}, which is not an allowed callable",
                self.objs[callable].kind()
            )));
        };
        let Some(args) = self.tuple(args).map(<[usize]>::to_vec) else {
            return Err(self.corrupt(at, "REDUCE arguments are not a tuple"));
        };
        let bad_args = |what: &str| refused(format!("byte {at}: {what}"));
        match (k, args.as_slice()) {
            (Known::Reconstruct, [cls, _shape, _dtype])
                if matches!(self.objs[*cls], Obj::Global(Known::NdArray)) =>
            {
                Ok(Obj::EmptyArray)
            }
            (Known::Reconstruct, _) => {
                Err(bad_args("_reconstruct is only read as _reconstruct(numpy.ndarray, …)"))
            }
            (Known::Dtype, [spec, ..]) => {
                let spec =
                    self.text(*spec).ok_or_else(|| bad_args("numpy.dtype of a non-string"))?;
                Ok(Obj::Dtype(parse_dtype(at, spec)?))
            }
            (Known::Scalar, [dtype, data]) => {
                let Obj::Dtype(dtype) = self.objs[*dtype] else {
                    return Err(bad_args("a numpy scalar without a dtype"));
                };
                let Obj::Bytes(data) = &self.objs[*data] else {
                    return Err(refused(format!(
                        "byte {at}: a numpy scalar of {} whose value is {} (object scalars \
                         are not read)",
                        dtype.dtype,
                        self.objs[*data].kind()
                    )));
                };
                Ok(Obj::Array { dtype, shape: Vec::new(), fortran: false, data: data.clone() })
            }
            (Known::FromBuffer, [buf, dtype, shape, order]) => {
                let Obj::Bytes(data) = &self.objs[*buf] else {
                    return Err(bad_args("_frombuffer of something that is not a buffer"));
                };
                let Obj::Dtype(dtype) = self.objs[*dtype] else {
                    return Err(bad_args("_frombuffer without a dtype"));
                };
                let shape = self.shape(at, *shape)?;
                let fortran = match self.text(*order) {
                    Some("C") => false,
                    Some("F") => true,
                    _ => return Err(bad_args("_frombuffer order is not 'C' or 'F'")),
                };
                Ok(Obj::Array { dtype, shape, fortran, data: data.clone() })
            }
            (Known::CodecsEncode, [text, encoding])
                if matches!(self.text(*encoding), Some("latin1" | "latin-1")) =>
            {
                let text =
                    self.text(*text).ok_or_else(|| bad_args("_codecs.encode of a non-string"))?;
                Ok(Obj::Bytes(Data::Owned(latin1(at, text)?)))
            }
            (Known::CodecsEncode, _) => {
                Err(bad_args("_codecs.encode is only read as _codecs.encode(str, 'latin1')"))
            }
            (Known::Bytes | Known::ByteArray, []) => Ok(Obj::Bytes(Data::Owned(Vec::new()))),
            (Known::Bytes | Known::ByteArray, [b]) if matches!(self.objs[*b], Obj::Bytes(_)) => {
                Ok(self.objs[*b].clone())
            }
            (Known::ByteArray, [text, encoding])
                if matches!(self.text(*encoding), Some("latin1" | "latin-1")) =>
            {
                let text = self.text(*text).ok_or_else(|| bad_args("bytearray of a non-string"))?;
                Ok(Obj::Bytes(Data::Owned(latin1(at, text)?)))
            }
            (Known::OrderedDict, []) => Ok(Obj::Dict(Vec::new())),
            (k, args) => Err(bad_args(&format!(
                "{} called with {} arguments of a kind it is not read with",
                known_name(k),
                args.len()
            ))),
        }
    }

    fn shape(&self, at: usize, id: usize) -> Result<Vec<u64>> {
        let items = self
            .tuple(id)
            .ok_or_else(|| refused(format!("byte {at}: an array shape is not a tuple")))?;
        items
            .iter()
            .map(|&d| match self.objs[d] {
                Obj::Int(i) if i >= 0 => Ok(i as u64),
                _ => Err(refused(format!(
                    "byte {at}: an array shape holds something other than a size"
                ))),
            })
            .collect()
    }

    fn build(&mut self, at: usize, target: usize, state: usize) -> Result<()> {
        let items = self.tuple(state).map(<[usize]>::to_vec);
        match (&self.objs[target], items.as_deref()) {
            // numpy.dtype.__setstate__: (version, byteorder, subdescr, names, fields,
            // elsize, alignment, flags[, metadata]).
            (
                Obj::Dtype(dt),
                Some([_version, order, sub, names, fields, _elsize, _align, _flags, ..]),
            ) => {
                let mut dt = *dt;
                if ![sub, names, fields].iter().all(|&&i| matches!(self.objs[i], Obj::None)) {
                    return Err(refused(format!(
                        "byte {at}: a structured or sub-array numpy dtype (reel has no type for it)"
                    )));
                }
                match self.text(*order) {
                    Some(">") => dt.big_endian = dt.dtype.swap_unit() > 0,
                    Some("<" | "|" | "=") => dt.big_endian = false,
                    _ => {
                        return Err(self.corrupt(at, "a dtype byte order that is not <, >, | or ="));
                    }
                }
                self.objs[target] = Obj::Dtype(dt);
                Ok(())
            }
            // numpy.ndarray.__setstate__: (version, shape, dtype, is_fortran, rawdata).
            (Obj::EmptyArray, Some([_version, shape, dtype, fortran, data])) => {
                let shape = self.shape(at, *shape)?;
                let Obj::Dtype(dtype) = self.objs[*dtype] else {
                    return Err(self.corrupt(at, "an array state without a dtype"));
                };
                let fortran = match self.objs[*fortran] {
                    Obj::Bool(b) => b,
                    Obj::Int(i) => i != 0,
                    _ => return Err(self.corrupt(at, "an array's Fortran flag is not a bool")),
                };
                let data = match &self.objs[*data] {
                    Obj::Bytes(d) => d.clone(),
                    other => {
                        return Err(refused(format!(
                            "byte {at}: an array whose data is {} (object arrays are not read)",
                            other.kind()
                        )));
                    }
                };
                self.objs[target] = Obj::Array { dtype, shape, fortran, data };
                Ok(())
            }
            (other, _) => Err(refused(format!(
                "byte {at}: BUILD sets the state of {}, which is not read",
                other.kind()
            ))),
        }
    }
}

#[derive(Debug, PartialEq)]
enum KeyId<'a> {
    None,
    Int(i128),
    Float(u64),
    Str(&'a [u8]),
    Bytes(&'a [u8]),
}

fn known_name(k: Known) -> &'static str {
    match k {
        Known::Reconstruct => "numpy _reconstruct",
        Known::NdArray => "numpy.ndarray",
        Known::Dtype => "numpy.dtype",
        Known::Scalar => "numpy scalar",
        Known::FromBuffer => "numpy _frombuffer",
        Known::CodecsEncode => "_codecs.encode",
        Known::Bytes => "bytes",
        Known::ByteArray => "bytearray",
        Known::OrderedDict => "collections.OrderedDict",
    }
}

/// `str.encode('latin1')`.
fn latin1(at: usize, text: &str) -> Result<Vec<u8>> {
    text.chars()
        .map(|c| u8::try_from(u32::from(c)).ok())
        .collect::<Option<Vec<u8>>>()
        .ok_or_else(|| refused(format!("byte {at}: latin1 text with a character above U+00FF")))
}

/// A dtype from `numpy.dtype(spec, …)`: `'f8'`, `'i2'`, `'b1'`, `'U4'`, `'S3'`, `'V8'`.
fn parse_dtype(at: usize, spec: &str) -> Result<NpDtype> {
    match DType::from_numpy_str(spec) {
        Some((dtype, big_endian)) => Ok(NpDtype { dtype, big_endian }),
        None => Err(refused(format!(
            "byte {at}: numpy dtype {spec:?} has no reel type (object, datetime and \
             structured dtypes are not read)"
        ))),
    }
}

/// Turns parsed objects into values, within the bounds of the module documentation.
struct Builder<'p, 'o, 'r> {
    objs: &'p [Obj],
    out: &'o mut RecordOut<'r>,
    /// Where the pickle's first byte is in the record buffer.
    base: usize,
    nodes_left: u64,
    decoded_left: u64,
    max_nesting: u32,
    open: Vec<bool>,
    appended: HashMap<usize, Span>,
}

impl Builder<'_, '_, '_> {
    fn data_span(&mut self, id: usize, data: &Data) -> Result<Span> {
        match data {
            Data::Input { at, len } => Ok(Span::new(self.base + at, *len)),
            Data::Owned(v) => {
                if let Some(&s) = self.appended.get(&id) {
                    return Ok(s);
                }
                self.spend_bytes(v.len())?;
                let s = self.out.append(v);
                self.appended.insert(id, s);
                Ok(s)
            }
        }
    }

    fn spend_bytes(&mut self, n: usize) -> Result<()> {
        self.decoded_left = self.decoded_left.checked_sub(n as u64).ok_or_else(|| {
            Error::new(
                ErrorKind::Limit,
                format!("{WHAT}: decoding needs more bytes than the configured max_decoded_bytes"),
            )
        })?;
        Ok(())
    }

    fn value(&mut self, id: usize, depth: u32) -> Result<Value> {
        self.nodes_left = self.nodes_left.checked_sub(1).ok_or_else(|| {
            Error::new(
                ErrorKind::Limit,
                format!(
                    "{WHAT}: shared (memoized) objects expand to more values than the pickle's \
                     size justifies"
                ),
            )
        })?;
        let objs = self.objs;
        Ok(match &objs[id] {
            Obj::None => Value::Null,
            Obj::Bool(b) => Value::Bool(*b),
            Obj::Int(i) => Value::Int(*i),
            Obj::UInt(u) => Value::from_u64(*u),
            Obj::Float(f) => Value::Float(*f),
            Obj::Str { at, len } => Value::Str(Span::new(self.base + at, *len)),
            Obj::Bytes(d) => Value::Bytes(self.data_span(id, d)?),
            Obj::Array { dtype, shape, fortran, data } => {
                self.array(id, *dtype, shape, *fortran, data)?
            }
            Obj::Tuple(items) | Obj::List(items) => {
                let depth = self.enter(id, depth)?;
                let mut values = Vec::with_capacity(items.len().min(4096));
                for &item in items {
                    values.push(self.value(item, depth)?);
                }
                self.open[id] = false;
                Value::List(values)
            }
            Obj::Dict(entries) => {
                let depth = self.enter(id, depth)?;
                let mut values = Vec::with_capacity(entries.len().min(4096));
                for &(k, v) in entries {
                    values.push((self.value(k, depth)?, self.value(v, depth)?));
                }
                self.open[id] = false;
                Value::Map(values)
            }
            other @ (Obj::Global(_) | Obj::Dtype(_) | Obj::EmptyArray) => {
                return Err(refused(format!(
                    "holds {} as a value, which is not read",
                    other.kind()
                )));
            }
        })
    }

    fn enter(&mut self, id: usize, depth: u32) -> Result<u32> {
        if depth >= self.max_nesting {
            return Err(Error::new(
                ErrorKind::Limit,
                format!(
                    "{WHAT}: nesting is deeper than the configured limit of {}",
                    self.max_nesting
                ),
            ));
        }
        if std::mem::replace(&mut self.open[id], true) {
            return Err(refused("contains itself (a reference cycle), which has no value form"));
        }
        Ok(depth + 1)
    }

    fn array(
        &mut self,
        id: usize,
        np: NpDtype,
        shape: &[u64],
        fortran: bool,
        data: &Data,
    ) -> Result<Value> {
        let shape = Shape::new(shape);
        reel_core::check_array_len(np.dtype, &shape, data.len() as u64)
            .map_err(|e| Error::corrupt(format!("{WHAT}: {}", e.message())))?;
        let unit = if np.big_endian { np.dtype.swap_unit() } else { 0 };
        let reorder = fortran && shape.dims().len() > 1;
        let span = if unit == 0 && !reorder {
            self.data_span(id, data)?
        } else {
            if let Some(&s) = self.appended.get(&id) {
                return Ok(Value::Array(ArrayValue { dtype: np.dtype, shape, data: s }));
            }
            self.spend_bytes(data.len())?;
            let item = np.dtype.item_size() as usize;
            let dims = shape.dims().to_vec();
            let base = self.base;
            let s = self.out.append_with(data.len(), |old, new| {
                let src = match data {
                    Data::Input { at, len } => &old[base + at..base + at + len],
                    Data::Owned(v) => v.as_slice(),
                };
                if reorder {
                    fortran_to_c(src, new, &dims, item);
                } else {
                    new.copy_from_slice(src);
                }
                if unit > 0 {
                    for chunk in new.chunks_exact_mut(unit) {
                        chunk.reverse();
                    }
                }
                Ok(())
            })?;
            self.appended.insert(id, s);
            s
        };
        Ok(Value::Array(ArrayValue { dtype: np.dtype, shape, data: span }))
    }
}

/// Copies elements of `item` bytes from Fortran order in `src` to C order in `dst`.
fn fortran_to_c(src: &[u8], dst: &mut [u8], dims: &[u64], item: usize) {
    let n = dst.len() / item.max(1);
    let mut index = vec![0u64; dims.len()];
    for c in 0..n {
        // Fortran offset of the C-order multi-index.
        let mut f = 0u64;
        let mut stride = 1u64;
        for (i, &d) in index.iter().zip(dims) {
            f += i * stride;
            stride *= d;
        }
        let f = f as usize * item;
        dst[c * item..(c + 1) * item].copy_from_slice(&src[f..f + item]);
        // Next C-order index: the last dimension moves fastest.
        for k in (0..dims.len()).rev() {
            index[k] += 1;
            if index[k] < dims[k] {
                break;
            }
            index[k] = 0;
        }
    }
}

/// Unpickles the bytes at `span` of the record being built into one value whose text,
/// bytes and (little-endian, C-order) arrays point into the record.
pub(crate) fn decode(span: Span, out: &mut RecordOut<'_>, limits: &Limits) -> Result<Value> {
    let (objs, root, input_len) = {
        let input = out.bytes(span);
        let mut parser = Parser {
            input,
            ops: OpReader::new(input, WHAT),
            objs: Vec::new(),
            stack: Vec::new(),
            marks: Vec::new(),
            memo: HashMap::new(),
        };
        let root = parser.run()?;
        (parser.objs, root, input.len())
    };
    let mut b = Builder {
        objs: &objs,
        out,
        base: span.start,
        nodes_left: (input_len as u64).saturating_mul(32).max(1 << 16),
        decoded_left: limits.max_decoded_bytes,
        max_nesting: limits.max_nesting,
        open: vec![false; objs.len()],
        appended: HashMap::new(),
    };
    b.value(root, 0)
}
