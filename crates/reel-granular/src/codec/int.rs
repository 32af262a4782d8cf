//! The `int` family: variable-width `int`, bags' fixed-width `int(k)`, granular's `i64`/`u64`.

use reel_core::{Error, Result, Value, ValueRef};

use super::{CodecFamily, wrong_value};
use crate::spec::TypeSpec;

/// How the bytes of an `int` record are interpreted.
///
/// No file says which applies: bags and granular before 0.17.1 wrote unsigned integers,
/// granular from 0.17.1 on signed ones (spec §5.2). Readers default to the generation's
/// writer (unsigned for single-file v1 datasets, signed otherwise) and take an override.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IntSigning {
    /// Little-endian two's complement (granular ≥ 0.17.1).
    Signed,
    /// Little-endian unsigned (bags, granular < 0.17.1).
    Unsigned,
}

#[derive(Clone, Debug)]
pub(crate) struct IntCodec {
    signed: bool,
    /// Exact record length: checked on decode (granular asserts it for `i64`/`u64`) and
    /// used on encode.
    width: Option<usize>,
    check_width_on_decode: bool,
    /// Whether 0 encodes to an empty record (bags' minimal width) instead of one zero byte.
    zero_is_empty: bool,
    /// The largest record granular's decoder accepts.
    max_len: usize,
}

impl IntCodec {
    pub(crate) fn for_type(t: &TypeSpec, family: CodecFamily, signing: IntSigning) -> Option<Self> {
        let width = match t.args.as_slice() {
            [] => None,
            // bags' `int(k)`: encoded in exactly k bytes; the decoder ignores k.
            [k] if family == CodecFamily::Bags => Some(k.trim().parse::<usize>().ok()?),
            _ => return None,
        };
        Some(IntCodec {
            signed: signing == IntSigning::Signed,
            width,
            check_width_on_decode: false,
            zero_is_empty: family == CodecFamily::Bags,
            max_len: 16,
        })
    }

    pub(crate) fn fixed64(signed: bool) -> Self {
        IntCodec {
            signed,
            width: Some(8),
            check_width_on_decode: true,
            zero_is_empty: false,
            max_len: 8,
        }
    }

    pub(crate) fn decode(&self, bytes: &[u8]) -> Result<Value> {
        if self.check_width_on_decode && Some(bytes.len()) != self.width {
            return Err(Error::corrupt(format!(
                "a fixed-width integer record must be {} bytes, this one is {}",
                self.width.unwrap_or(0),
                bytes.len()
            )));
        }
        if bytes.len() > self.max_len {
            return Err(Error::corrupt(format!(
                "integer record of {} bytes is longer than the {} bytes the decoder accepts",
                bytes.len(),
                self.max_len
            )));
        }
        let mut buf = [0u8; 16];
        buf[..bytes.len()].copy_from_slice(bytes);
        let negative = self.signed && bytes.last().is_some_and(|b| b & 0x80 != 0);
        if negative {
            buf[bytes.len()..].fill(0xff);
        }
        let wide = i128::from_le_bytes(buf);
        if !self.signed {
            let v = u128::from_le_bytes(buf);
            // An unsigned codec's values are one kind, whatever their size.
            return u64::try_from(v).map(Value::UInt).map_err(|_| too_wide(bytes.len()));
        }
        if let Ok(i) = i64::try_from(wide) {
            Ok(Value::Int(i))
        } else if let Ok(u) = u64::try_from(wide) {
            Ok(Value::UInt(u))
        } else {
            Err(too_wide(bytes.len()))
        }
    }

    pub(crate) fn encode(&self, value: ValueRef<'_>, buf: &mut Vec<u8>) -> Result<()> {
        let v: i128 = match value {
            ValueRef::Int(i) => i128::from(i),
            ValueRef::UInt(u) => i128::from(u),
            // Python's bool is an int subclass: the reference encodes True as 1.
            ValueRef::Bool(b) => i128::from(b),
            other => return Err(wrong_value("an integer", other)),
        };
        if !self.signed && v < 0 {
            return Err(Error::schema(format!(
                "{v} cannot be stored by an unsigned integer codec"
            )));
        }
        let width = match self.width {
            Some(w) => {
                if w > 16 || !fits(v, w, self.signed) {
                    return Err(Error::schema(format!(
                        "{v} does not fit in {w} {} bytes",
                        if self.signed { "signed" } else { "unsigned" }
                    )));
                }
                w
            }
            None => minimal_width(v, self.signed, self.zero_is_empty),
        };
        buf.extend_from_slice(&v.to_le_bytes()[..width]);
        Ok(())
    }
}

fn too_wide(len: usize) -> Error {
    Error::unsupported(format!("the {len}-byte integer does not fit in 64 bits"))
}

fn fits(v: i128, width: usize, signed: bool) -> bool {
    let bits = 8 * width as u32;
    if bits >= 128 {
        return true;
    }
    if signed {
        let half = 1i128 << (bits - 1);
        (-half..half).contains(&v)
    } else {
        (0..1i128 << bits).contains(&v)
    }
}

/// The width the reference's `int` encoder picks: `ceil(log2(1 + v) / 8)` bytes (at least
/// one unless 0 is empty).
///
/// granular computes that width for the unsigned value and then encodes signed, so it
/// raises `OverflowError` for 128–255, 32768–65535, … and for every negative number. reel
/// writes those values in the shortest signed form instead, which granular's decoder reads
/// back correctly; for every value granular accepts, the bytes are identical.
fn minimal_width(v: i128, signed: bool, zero_is_empty: bool) -> usize {
    if v == 0 {
        return usize::from(!zero_is_empty);
    }
    (1..=16).find(|&w| fits(v, w, signed)).unwrap_or(16)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(c: &IntCodec, v: i64) -> Vec<u8> {
        let mut b = Vec::new();
        c.encode(ValueRef::Int(v), &mut b).unwrap();
        b
    }

    #[test]
    fn granular_int_matches_reference_where_it_succeeds() {
        let t = TypeSpec::parse("int").unwrap();
        let c = IntCodec::for_type(&t, CodecFamily::Granular, IntSigning::Signed).unwrap();
        assert_eq!(enc(&c, 0), [0x00]);
        assert_eq!(enc(&c, 7), [0x07]);
        assert_eq!(enc(&c, 127), [0x7f]);
        assert_eq!(enc(&c, 256), [0x00, 0x01]);
        assert_eq!(enc(&c, 300), [0x2c, 0x01]);
        assert_eq!(enc(&c, 32767), [0xff, 0x7f]);
        assert_eq!(enc(&c, 65536), [0x00, 0x00, 0x01]);
        // Where the reference raises, reel writes the shortest signed form.
        assert_eq!(enc(&c, 128), [0x80, 0x00]);
        assert_eq!(enc(&c, -1), [0xff]);
        assert_eq!(c.decode(&[0x80, 0x00]).unwrap(), Value::Int(128));
        assert_eq!(c.decode(&[0xff]).unwrap(), Value::Int(-1));
        assert_eq!(c.decode(&[]).unwrap(), Value::Int(0));
        assert!(c.decode(&[0; 17]).is_err());
    }

    #[test]
    fn bags_int_is_unsigned_and_zero_is_empty() {
        let t = TypeSpec::parse("int").unwrap();
        let c = IntCodec::for_type(&t, CodecFamily::Bags, IntSigning::Unsigned).unwrap();
        assert_eq!(enc(&c, 0), Vec::<u8>::new());
        assert_eq!(enc(&c, 255), [0xff]);
        assert_eq!(enc(&c, 65535), [0xff, 0xff]);
        assert_eq!(enc(&c, 65536), [0, 0, 1]);
        assert_eq!(c.decode(&[0xff]).unwrap(), Value::UInt(255)); // one kind for every value
        assert!(c.encode(ValueRef::Int(-1), &mut Vec::new()).is_err());
        let mut b = Vec::new();
        c.encode(ValueRef::UInt(u64::MAX), &mut b).unwrap();
        assert_eq!(c.decode(&b).unwrap(), Value::UInt(u64::MAX));
        let t = TypeSpec::parse("int(4)").unwrap();
        let c = IntCodec::for_type(&t, CodecFamily::Bags, IntSigning::Unsigned).unwrap();
        assert_eq!(enc(&c, 1), [1, 0, 0, 0]);
    }

    #[test]
    fn fixed_width_checks_length() {
        let c = IntCodec::fixed64(true);
        assert_eq!(enc(&c, -2), (-2i64).to_le_bytes());
        assert!(c.decode(&[1, 2]).is_err());
        let u = IntCodec::fixed64(false);
        assert_eq!(u.decode(&u64::MAX.to_le_bytes()).unwrap(), Value::UInt(u64::MAX));
        assert!(u.encode(ValueRef::Int(-1), &mut Vec::new()).is_err());
    }
}
