//! The payload codecs of the facade (`--payload pickle|msgpack|json`).

use reel::{Codec, Payload, Record, ValueRef};

use super::limits;

/// Equal values, with any NaN equal to any NaN (JSON keeps NaN, not its payload bits).
fn same(a: ValueRef<'_>, b: ValueRef<'_>) -> bool {
    match (a, b) {
        (ValueRef::Float(x), ValueRef::Float(y)) if x.is_nan() && y.is_nan() => true,
        (ValueRef::List(x), ValueRef::List(y)) => {
            x.len() == y.len() && x.iter().zip(y.iter()).all(|(p, q)| same(p, q))
        }
        (ValueRef::Map(x), ValueRef::Map(y)) => {
            x.len() == y.len()
                && x.iter().zip(y.iter()).all(|((k1, v1), (k2, v2))| same(k1, k2) && same(v1, v2))
        }
        (x, y) => x == y,
    }
}

/// Arbitrary bytes through the strict unpickler (and the msgpack and JSON payload
/// readers). What unpickles must survive the JSON pack layout unchanged.
pub fn payload_pickle(data: &[u8]) {
    let limits = limits();
    for payload in [Payload::Msgpack, Payload::Json] {
        let mut r = Record::new();
        let mut out = r.out();
        let span = out.append(data);
        let _ = reel::payload::decode_value(payload, span, &mut out, &limits);
    }
    let mut r = Record::new();
    let value = {
        let mut out = r.out();
        let span = out.append(data);
        reel::payload::decode_value(Payload::Pickle, span, &mut out, &limits)
    };
    let Ok(value) = value else { return };
    r.push("v", value);
    let decoded = r.get("v").expect("the field just pushed");
    let mut json = Vec::new();
    Codec::Json.encode(decoded, &mut json).expect("every value has a JSON form");
    let mut back = Record::new();
    let again = {
        let mut out = back.out();
        let span = out.append(&json);
        reel::payload::decode_value(Payload::Json, span, &mut out, &limits)
            .expect("reel's own JSON must decode")
    };
    back.push("v", again);
    assert!(same(decoded, back.get("v").expect("pushed")), "JSON pack layout changed a value");
}
