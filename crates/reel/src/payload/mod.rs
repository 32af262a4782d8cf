//! Payload codecs: records that are opaque bytes (FFRecord's, or any bytes field) read as
//! fields, and fields written back as one bytes value.
//!
//! Many datasets keep one `pickle.dumps(sample)` per record, or one msgpack or JSON
//! document. With [`OpenOptions::payload`](crate::OpenOptions) set, [`open`](crate::open)
//! decodes each record's bytes:
//!
//! * a top-level dict (msgpack map, JSON object) becomes the record's fields, named by
//!   its keys (text keys as they are, integer keys in decimal);
//! * a top-level tuple or list (msgpack or JSON array) becomes fields `0`, `1`, …;
//! * anything else becomes one field `data`.
//!
//! With [`OpenOptions::payload_field`](crate::OpenOptions) the named bytes field is decoded
//! instead, and its value replaces it in place (a dict stays one map field).
//!
//! The codecs: [`Payload::Pickle`] (a strict unpickler that runs nothing, see
//! `payload/pickle.rs`), [`Payload::Msgpack`] and [`Payload::Json`] in
//! the layout that [`ConvertOptions::pack`](crate::ConvertOptions) writes (see
//! [`Codec`]).

mod pack;
mod pickle;

use std::sync::Mutex;

use reel_core::{
    Error, FieldName, Limits, RAW_FIELD, Record, RecordBatch, RecordOut, RecordRef, RecordSource,
    Result, SourceInfo, Span, Value, ValueRef,
};

pub(crate) use pack::{encode_nested, pack_record};

/// How to read the bytes of a record.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Payload {
    /// As bytes (the default: nothing is decoded).
    #[default]
    Raw,
    /// As a pickle, with the strict unpickler: plain data and NumPy arrays only; every
    /// other global is refused, never run.
    Pickle,
    /// As msgpack; `['_', dtype, shape, bytes]` lists are arrays (the [`Codec::Msgpack`]
    /// layout).
    Msgpack,
    /// As JSON, with the tagged values of the [`Codec::Json`] layout.
    Json,
}

impl Payload {
    /// The codec's name (`raw`, `pickle`, `msgpack`, `json`).
    pub fn name(self) -> &'static str {
        match self {
            Payload::Raw => "raw",
            Payload::Pickle => "pickle",
            Payload::Msgpack => "msgpack",
            Payload::Json => "json",
        }
    }

    /// The codec called `name`.
    pub fn from_name(name: &str) -> Option<Payload> {
        [Payload::Raw, Payload::Pickle, Payload::Msgpack, Payload::Json]
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(name))
    }
}

/// How [`ConvertOptions::pack`](crate::ConvertOptions) and
/// [`ConvertOptions::encode_nested`](crate::ConvertOptions) write values as bytes.
///
/// # Layouts
///
/// A packed record is one document holding a map from field name to value, in field order.
///
/// **msgpack** (as `msgpack.packb` writes it): null, bool, int, float (float64), str, bytes
/// (bin), list (array) and map as themselves; an n-dimensional array as the 4-item list
/// `['_', dtype.str, shape, bytes]` (little-endian `dtype.str` such as `'<f4'`, C-order
/// bytes), which is granular's `tree` form. In Python:
/// `{k: np.frombuffer(v[3], v[1]).reshape(v[2]) if isinstance(v, list) and len(v) == 4 and v[0] == '_' else v for k, v in msgpack.unpackb(b).items()}`.
///
/// **json** (UTF-8): reel's tagged JSON ([`reel_core::tagged_json`], the convention Arrow
/// and Parquet columns of mixed values use too): null, bool, int, str, list as themselves;
/// finite floats as numbers (always with a fraction or exponent); other values as objects
/// with one `$` key: `{"$bytes": base64}`,
/// `{"$array": {"dtype": "<f4", "shape": [2, 3], "data": base64}}`,
/// `{"$float": "nan" | "inf" | "-inf"}`, and `{"$map": [[key, value], …]}` for a map whose
/// keys are not all distinct text or that has a single key starting with `$`. Other maps
/// are objects. Base64 is the standard alphabet with padding.
///
/// `--payload msgpack|json` reads these layouts back as the same fields and values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Codec {
    /// msgpack.
    Msgpack,
    /// JSON.
    Json,
}

impl Codec {
    /// The codec's name.
    pub fn name(self) -> &'static str {
        match self {
            Codec::Msgpack => "msgpack",
            Codec::Json => "json",
        }
    }

    /// The codec called `name`.
    pub fn from_name(name: &str) -> Option<Codec> {
        [Codec::Msgpack, Codec::Json].into_iter().find(|c| c.name().eq_ignore_ascii_case(name))
    }

    /// Appends `value` in this codec's layout.
    pub fn encode(self, value: ValueRef<'_>, out: &mut Vec<u8>) -> Result<()> {
        match self {
            Codec::Msgpack => msgpack_encode(value, out),
            Codec::Json => {
                reel_core::tagged_json::encode(value, out);
                Ok(())
            }
        }
    }

    /// The payload codec that reads this layout back.
    pub fn payload(self) -> Payload {
        match self {
            Codec::Msgpack => Payload::Msgpack,
            Codec::Json => Payload::Json,
        }
    }
}

#[cfg(feature = "granular")]
fn msgpack_encode(value: ValueRef<'_>, out: &mut Vec<u8>) -> Result<()> {
    reel_granular::msgpack::encode_tree(value, out)
}

#[cfg(not(feature = "granular"))]
fn msgpack_encode(_: ValueRef<'_>, _: &mut Vec<u8>) -> Result<()> {
    Err(no_msgpack())
}

#[cfg(not(feature = "granular"))]
fn no_msgpack() -> Error {
    Error::unsupported(
        "this reel is built without the granular feature, whose msgpack codec the msgpack \
         payload shares",
    )
}

/// Decodes the bytes at `span` of the record being built into one value.
pub fn decode_value(
    payload: Payload,
    span: Span,
    out: &mut RecordOut<'_>,
    limits: &Limits,
) -> Result<Value> {
    match payload {
        Payload::Raw => Ok(Value::Bytes(span)),
        Payload::Pickle => pickle::decode(span, out, limits),
        #[cfg(feature = "granular")]
        Payload::Msgpack => reel_granular::msgpack::decode_tree(span, out, limits)
            .map_err(|e| Error::new(e.kind(), format!("msgpack payload: {}", e.message()))),
        #[cfg(not(feature = "granular"))]
        Payload::Msgpack => Err(no_msgpack()),
        Payload::Json => reel_core::tagged_json::decode_span(span, out, limits.max_nesting),
    }
}

/// The field name a top-level map key gives.
fn key_name(key: &Value, out: &RecordOut<'_>) -> Result<FieldName> {
    match key {
        Value::Str(s) => {
            Ok(FieldName::from(std::str::from_utf8(out.bytes(*s)).unwrap_or_default()))
        }
        Value::Int(i) => Ok(FieldName::from(i.to_string())),
        Value::UInt(u) => Ok(FieldName::from(u.to_string())),
        other => Err(Error::schema(format!(
            "the payload is a map with a {} key, which cannot name a field",
            other.view(&[]).kind_name()
        ))),
    }
}

/// Pushes the fields a decoded payload gives (see the module documentation).
fn push_fields(value: Value, out: &mut RecordOut<'_>) -> Result<()> {
    match value {
        Value::Map(entries) => {
            let mut names: Vec<FieldName> = Vec::with_capacity(entries.len());
            for (k, _) in &entries {
                let name = key_name(k, out)?;
                if names.contains(&name) {
                    return Err(Error::schema(format!(
                        "the payload has two keys that both name field {name:?}"
                    )));
                }
                names.push(name);
            }
            for (name, (_, v)) in names.into_iter().zip(entries) {
                out.push(name, v);
            }
        }
        Value::List(items) => {
            for (i, v) in items.into_iter().enumerate() {
                out.push(FieldName::from(i.to_string()), v);
            }
        }
        other => out.push(FieldName::from(RAW_FIELD), other),
    }
    Ok(())
}

/// Which field holds the payload, and its bytes (bytes, or what the targets of
/// `--pack` keep bytes as: a uint8 vector, a list of one bytes value).
fn payload_bytes<'a>(record: &RecordRef<'a>, field: Option<&str>) -> Result<(usize, &'a [u8])> {
    let pick = |i: usize, name: &str, v: ValueRef<'a>| -> Result<(usize, &'a [u8])> {
        match v {
            ValueRef::Bytes(b) => Ok((i, b)),
            // Syrah keeps bytes as a uint8 array.
            ValueRef::Array(a) if a.dtype == reel_core::DType::U8 && a.shape.len() == 1 => {
                Ok((i, a.data))
            }
            // OFRecord keeps bytes as a list of one.
            ValueRef::List(l) if l.len() == 1 && l.get(0).and_then(|x| x.as_bytes()).is_some() => {
                Ok((i, l.get(0).and_then(|x| x.as_bytes()).unwrap_or_default()))
            }
            other => Err(Error::schema(format!(
                "field {name:?} is a {}, not bytes, so it has no payload to decode",
                other.kind_name()
            ))),
        }
    };
    match field {
        Some(want) => {
            let i = record.iter().position(|(n, _)| n == want).ok_or_else(|| {
                Error::schema(format!("the record has no field {want:?} to decode"))
            })?;
            let (name, v) = record.field(i).unwrap_or(("", ValueRef::Null));
            pick(i, name, v)
        }
        None if record.len() == 1 => {
            let (name, v) = record.field(0).unwrap_or(("", ValueRef::Null));
            pick(0, name, v)
        }
        None => {
            let names: Vec<String> = record.iter().map(|(n, _)| format!("{n:?}")).collect();
            Err(Error::schema(format!(
                "the record has {} fields ({}); name the one to decode with --payload-field (OpenOptions::payload_field)",
                record.len(),
                names.join(", ")
            )))
        }
    }
}

/// Decodes `record`'s payload into `out` (a record being built).
pub(crate) fn decode_record(
    payload: Payload,
    field: Option<&str>,
    record: &RecordRef<'_>,
    out: &mut RecordOut<'_>,
    limits: &Limits,
) -> Result<()> {
    let (at, bytes) = payload_bytes(record, field)?;
    if field.is_none() {
        let span = out.append(bytes);
        let value = decode_value(payload, span, out, limits)?;
        return push_fields(value, out);
    }
    for (i, (name, v)) in record.iter().enumerate() {
        let value = if i == at {
            let span = out.append(bytes);
            decode_value(payload, span, out, limits)?
        } else {
            out.copy_value(v)
        };
        out.push(FieldName::from(name), value);
    }
    Ok(())
}

/// A source whose records are another source's records with their payload decoded.
pub(crate) struct PayloadSource {
    inner: Box<dyn RecordSource>,
    info: SourceInfo,
    payload: Payload,
    field: Option<String>,
    limits: Limits,
    /// Batches to read raw records into, reused across calls.
    scratch: Mutex<Vec<RecordBatch>>,
}

impl PayloadSource {
    /// Wraps `inner`.
    pub(crate) fn new(
        inner: Box<dyn RecordSource>,
        payload: Payload,
        field: Option<String>,
        limits: Limits,
    ) -> Self {
        let mut info = inner.info().clone();
        // The declared schema is of the raw records; the decoded fields are not declared.
        info.schema = None;
        let what = match &field {
            Some(f) => format!("{} (field {f:?})", payload.name()),
            None => payload.name().to_string(),
        };
        info.facts.push(("payload".to_string(), what));
        PayloadSource { inner, info, payload, field, limits, scratch: Mutex::new(Vec::new()) }
    }

    fn decode_into(&self, record: &RecordRef<'_>, out: &mut RecordOut<'_>) -> Result<()> {
        decode_record(self.payload, self.field.as_deref(), record, out, &self.limits)
            .map_err(|e| e.with_record(record.index()))
    }
}

impl RecordSource for PayloadSource {
    fn info(&self) -> &SourceInfo {
        &self.info
    }

    fn len(&self) -> u64 {
        self.inner.len()
    }

    fn read_into(&self, index: u64, out: &mut Record) -> Result<()> {
        let mut raw = Record::new();
        self.inner.read_into(index, &mut raw)?;
        out.clear();
        out.set_index(index);
        let mut o = out.out();
        let r = self.decode_into(&raw.view(), &mut o);
        if r.is_err() {
            out.clear();
        }
        r
    }

    fn read_batch_into(&self, indices: &[u64], out: &mut RecordBatch) -> Result<()> {
        let mut raw = self.scratch.lock().ok().and_then(|mut v| v.pop()).unwrap_or_default();
        out.clear();
        let result = self.inner.read_batch_into(indices, &mut raw).and_then(|()| {
            for r in raw.iter() {
                out.push_with(r.index(), |o| self.decode_into(&r, o))?;
            }
            Ok(())
        });
        if result.is_err() {
            out.clear();
        }
        if let Ok(mut pool) = self.scratch.lock() {
            pool.push(raw);
        }
        result
    }

    /// The decoded records are the inner source's, one for one: its hint is this one.
    fn will_read(&self, indices: &[u64]) {
        self.inner.will_read(indices)
    }

    fn backend_name(&self) -> &'static str {
        self.inner.backend_name()
    }

    fn locate(&self, index: u64, ranges: &mut Vec<reel_core::ReadRange>) -> Result<bool> {
        self.inner.locate(index, ranges)
    }

    fn locate_many(&self, indices: &[u64], out: &mut reel_core::Located) -> Result<bool> {
        self.inner.locate_many(indices, out)
    }

    fn file_path(&self, file: u32) -> Option<&std::path::Path> {
        self.inner.file_path(file)
    }
}

/// Wraps `source` so its payload is decoded, unless `payload` is [`Payload::Raw`].
pub(crate) fn wrap(
    source: Box<dyn RecordSource>,
    payload: Payload,
    field: Option<&str>,
    limits: &Limits,
) -> Box<dyn RecordSource> {
    if payload == Payload::Raw {
        return source;
    }
    Box::new(PayloadSource::new(source, payload, field.map(str::to_string), limits.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// A source of `n` empty records that logs the hints it is given.
    struct Hinted {
        info: SourceInfo,
        n: u64,
        hints: Arc<Mutex<Vec<Vec<u64>>>>,
    }

    impl RecordSource for Hinted {
        fn info(&self) -> &SourceInfo {
            &self.info
        }
        fn len(&self) -> u64 {
            self.n
        }
        fn read_into(&self, index: u64, out: &mut Record) -> Result<()> {
            out.clear();
            out.set_index(index);
            Ok(())
        }
        fn read_batch_into(&self, indices: &[u64], out: &mut RecordBatch) -> Result<()> {
            out.clear();
            for &index in indices {
                out.push_with(index, |_| Ok(()))?;
            }
            Ok(())
        }
        fn will_read(&self, indices: &[u64]) {
            self.hints.lock().unwrap().push(indices.to_vec());
        }
    }

    #[test]
    fn a_hint_reaches_the_source_whose_payloads_are_decoded() {
        let hints = Arc::new(Mutex::new(Vec::new()));
        let inner = Hinted { info: SourceInfo::new("test"), n: 10, hints: hints.clone() };
        let decoded = wrap(Box::new(inner), Payload::Json, None, &Limits::default());
        decoded.will_read(&[4, 1, 9]);
        assert_eq!(*hints.lock().unwrap(), vec![vec![4, 1, 9]]);
    }
}
