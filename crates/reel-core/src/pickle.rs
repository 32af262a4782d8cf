//! Reading pickle opcodes (protocols 2 to 5) without running anything.
//!
//! Two parsers build on this: the folder index of an FFRecord packed folder
//! (`reel_ffrecord::pickle`) and the payload unpickler of the facade (`reel --payload
//! pickle`). Both interpret opcodes themselves and refuse what they do not know; this
//! module only splits the bytes into opcodes with their arguments, so the byte-level
//! bounds checks live in one place. Every length an opcode claims is checked against the
//! bytes that are left before anything is sliced, so a hostile length costs nothing.

use crate::{Error, Result};

/// One opcode with its argument. Byte and text arguments borrow the input; `at` fields
/// give their offset in it, so a caller can keep them as spans without copying.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum Op<'a> {
    /// `PROTO n`.
    Proto(u8),
    /// `FRAME len`: the next `len` bytes are a frame (checked to lie within the input).
    Frame(u64),
    /// `STOP`: the value on top of the stack is the result.
    Stop,
    /// `MARK`.
    Mark,
    /// `POP`.
    Pop,
    /// `POP_MARK`.
    PopMark,
    /// `DUP`.
    Dup,
    /// `MEMOIZE`.
    Memoize,
    /// `BINPUT` / `LONG_BINPUT`.
    Put(u32),
    /// `BINGET` / `LONG_BINGET`.
    Get(u32),
    /// `GLOBAL module\nname\n` (the text form protocol 2 writes).
    Global {
        /// The module line.
        module: &'a [u8],
        /// The name line.
        name: &'a [u8],
    },
    /// `STACK_GLOBAL`: module and name are the two strings on the stack.
    StackGlobal,
    /// `REDUCE`: call the callable below the argument tuple.
    Reduce,
    /// `BUILD`: set the state of the object below.
    Build,
    /// `NONE`.
    None,
    /// `NEWTRUE` / `NEWFALSE`.
    Bool(bool),
    /// `BININT`, `BININT1`, `BININT2`.
    Int(i64),
    /// `LONG1` / `LONG4`: little-endian two's complement of any length.
    Long(&'a [u8]),
    /// `BINFLOAT`.
    Float(f64),
    /// `SHORT_BINUNICODE`, `BINUNICODE`, `BINUNICODE8`: UTF-8 text (not yet validated).
    Text {
        /// Offset of the first byte in the input.
        at: usize,
        /// The bytes.
        bytes: &'a [u8],
    },
    /// `SHORT_BINBYTES`, `BINBYTES`, `BINBYTES8`.
    Bytes {
        /// Offset of the first byte in the input.
        at: usize,
        /// The bytes.
        bytes: &'a [u8],
    },
    /// `BYTEARRAY8` (protocol 5).
    ByteArray {
        /// Offset of the first byte in the input.
        at: usize,
        /// The bytes.
        bytes: &'a [u8],
    },
    /// `EMPTY_TUPLE`.
    EmptyTuple,
    /// `TUPLE1`, `TUPLE2`, `TUPLE3`: a tuple of the top 1–3 items.
    TupleN(u8),
    /// `TUPLE`: a tuple of the items above the last mark.
    Tuple,
    /// `EMPTY_LIST`.
    EmptyList,
    /// `LIST`.
    List,
    /// `APPEND`.
    Append,
    /// `APPENDS`.
    Appends,
    /// `EMPTY_DICT`.
    EmptyDict,
    /// `DICT`.
    Dict,
    /// `SETITEM`.
    SetItem,
    /// `SETITEMS`.
    SetItems,
    /// Any other opcode (text protocols 0/1, sets, object construction, extensions,
    /// out-of-band buffers …), by its byte and CPython name (empty for a byte that is no
    /// opcode; [`opcode_text`] describes either); the caller refuses it.
    Other(u8, &'static str),
}

/// Splits pickle bytes into [`Op`]s.
pub struct OpReader<'a> {
    bytes: &'a [u8],
    pos: usize,
    what: &'static str,
}

fn other_name(op: u8) -> &'static str {
    match op {
        b'I' => "INT",
        b'L' => "LONG",
        b'S' => "STRING",
        b'T' => "BINSTRING",
        b'U' => "SHORT_BINSTRING",
        b'V' => "UNICODE",
        b'F' => "FLOAT",
        b'p' => "PUT",
        b'g' => "GET",
        b'l' => "LIST",
        b'd' => "DICT",
        b't' => "TUPLE",
        b'i' => "INST",
        b'o' => "OBJ",
        b'P' => "PERSID",
        b'Q' => "BINPERSID",
        0x81 => "NEWOBJ",
        0x92 => "NEWOBJ_EX",
        0x82 => "EXT1",
        0x83 => "EXT2",
        0x84 => "EXT4",
        0x8f => "EMPTY_SET",
        0x90 => "ADDITEMS",
        0x91 => "FROZENSET",
        0x97 => "NEXT_BUFFER",
        0x98 => "READONLY_BUFFER",
        // No opcode of any protocol: [`opcode_text`] says so instead of naming it.
        _ => "",
    }
}

/// An [`Op::Other`] for messages: its CPython name and byte (`BUILD (0x62)`), or, for a
/// byte that is no pickle opcode, the byte saying so (`0x5f, not a pickle opcode`).
pub fn opcode_text(code: u8, name: &str) -> String {
    if name.is_empty() {
        format!("{code:#04x}, not a pickle opcode")
    } else {
        format!("{name} ({code:#04x})")
    }
}

impl<'a> OpReader<'a> {
    /// A reader over `bytes`; `what` names the data in error messages ("folder index
    /// pickle", "pickled record").
    pub fn new(bytes: &'a [u8], what: &'static str) -> Self {
        OpReader { bytes, pos: 0, what }
    }

    /// The offset of the next opcode.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// A corruption error at byte `at`, prefixed with what the data is.
    pub fn corrupt(&self, at: usize, message: impl std::fmt::Display) -> Error {
        Error::corrupt(format!("{}, byte {at}: {message}", self.what)).with_offset(at as u64)
    }

    fn take(&mut self, n: u64) -> Result<(usize, &'a [u8])> {
        let start = self.pos;
        let end = usize::try_from(n).ok().and_then(|n| start.checked_add(n));
        match end.and_then(|end| self.bytes.get(start..end)) {
            Some(s) => {
                self.pos += s.len();
                Ok((start, s))
            }
            None => Err(self.corrupt(
                start,
                format!(
                    "needs {n} more bytes but only {} are left",
                    self.bytes.len().saturating_sub(start)
                ),
            )),
        }
    }

    fn uint(&mut self, n: usize) -> Result<u64> {
        let (_, b) = self.take(n as u64)?;
        Ok(b.iter().rev().fold(0u64, |acc, &x| (acc << 8) | x as u64))
    }

    fn sized(&mut self, width: usize) -> Result<(usize, &'a [u8])> {
        let n = self.uint(width)?;
        self.take(n)
    }

    /// Reads the next opcode and its argument; returns the opcode's offset with it.
    pub fn next_op(&mut self) -> Result<(usize, Op<'a>)> {
        let at = self.pos;
        let (_, code) = self.take(1)?;
        let op = match code[0] {
            0x80 => Op::Proto(self.uint(1)? as u8),
            0x95 => {
                let len = self.uint(8)?;
                if len > (self.bytes.len() - self.pos) as u64 {
                    return Err(self.corrupt(at, "a frame runs past the end of the data"));
                }
                Op::Frame(len)
            }
            b'.' => Op::Stop,
            b'(' => Op::Mark,
            b'0' => Op::Pop,
            b'1' => Op::PopMark,
            b'2' => Op::Dup,
            0x94 => Op::Memoize,
            b'q' => Op::Put(self.uint(1)? as u32),
            b'r' => Op::Put(self.uint(4)? as u32),
            b'h' => Op::Get(self.uint(1)? as u32),
            b'j' => Op::Get(self.uint(4)? as u32),
            b'c' => {
                let rest = &self.bytes[self.pos..];
                let mut lines = rest.splitn(3, |&b| b == b'\n');
                let (Some(module), Some(name), Some(_)) =
                    (lines.next(), lines.next(), lines.next())
                else {
                    return Err(self.corrupt(at, "GLOBAL without a module and a name line"));
                };
                self.pos += module.len() + name.len() + 2;
                Op::Global { module, name }
            }
            0x93 => Op::StackGlobal,
            b'R' => Op::Reduce,
            b'b' => Op::Build,
            b'N' => Op::None,
            0x88 => Op::Bool(true),
            0x89 => Op::Bool(false),
            b'J' => Op::Int(i64::from(self.uint(4)? as u32 as i32)),
            b'K' => Op::Int(self.uint(1)? as i64),
            b'M' => Op::Int(self.uint(2)? as i64),
            0x8a => Op::Long(self.sized(1)?.1),
            0x8b => {
                let n = self.uint(4)? as u32 as i32;
                if n < 0 {
                    return Err(self.corrupt(at, "LONG4 with a negative length"));
                }
                Op::Long(self.take(n as u64)?.1)
            }
            b'G' => Op::Float(f64::from_bits(u64::from_be_bytes(
                self.take(8)?.1.try_into().unwrap_or_default(),
            ))),
            0x8c => {
                let (at, bytes) = self.sized(1)?;
                Op::Text { at, bytes }
            }
            b'X' => {
                let (at, bytes) = self.sized(4)?;
                Op::Text { at, bytes }
            }
            0x8d => {
                let (at, bytes) = self.sized(8)?;
                Op::Text { at, bytes }
            }
            b'C' => {
                let (at, bytes) = self.sized(1)?;
                Op::Bytes { at, bytes }
            }
            b'B' => {
                let (at, bytes) = self.sized(4)?;
                Op::Bytes { at, bytes }
            }
            0x8e => {
                let (at, bytes) = self.sized(8)?;
                Op::Bytes { at, bytes }
            }
            0x96 => {
                let (at, bytes) = self.sized(8)?;
                Op::ByteArray { at, bytes }
            }
            b')' => Op::EmptyTuple,
            0x85 => Op::TupleN(1),
            0x86 => Op::TupleN(2),
            0x87 => Op::TupleN(3),
            b't' => Op::Tuple,
            b']' => Op::EmptyList,
            b'l' => Op::List,
            b'a' => Op::Append,
            b'e' => Op::Appends,
            b'}' => Op::EmptyDict,
            b'd' => Op::Dict,
            b's' => Op::SetItem,
            b'u' => Op::SetItems,
            other => Op::Other(other, other_name(other)),
        };
        Ok((at, op))
    }
}

/// The value of a `LONG1`/`LONG4` argument (little-endian two's complement), if it fits
/// in an `i64`.
pub fn long_to_i64(bytes: &[u8]) -> Option<i64> {
    let sign_fill = if bytes.last().is_some_and(|&b| b & 0x80 != 0) { 0xff } else { 0 };
    let (low, high) = bytes.split_at(bytes.len().min(8));
    if high.iter().any(|&b| b != sign_fill) {
        return None;
    }
    let mut buf = [sign_fill; 8];
    buf[..low.len()].copy_from_slice(low);
    let v = i64::from_le_bytes(buf);
    // The sign of the 8-byte value must be the sign of the whole number.
    ((v < 0) == (sign_fill == 0xff)).then_some(v)
}

/// The value of a non-negative `LONG1`/`LONG4` argument, if it fits in a `u64`.
pub fn long_to_u64(bytes: &[u8]) -> Option<u64> {
    if bytes.last().is_some_and(|&b| b & 0x80 != 0) {
        return None;
    }
    let (low, high) = bytes.split_at(bytes.len().min(8));
    if high.iter().any(|&b| b != 0) {
        return None;
    }
    let mut buf = [0; 8];
    buf[..low.len()].copy_from_slice(low);
    Some(u64::from_le_bytes(buf))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn longs_fit_or_say_so() {
        assert_eq!(long_to_i64(&[]), Some(0));
        assert_eq!(long_to_i64(&[0xff]), Some(-1));
        assert_eq!(long_to_i64(&[0x80, 0x00]), Some(128));
        assert_eq!(long_to_i64(&[0, 0, 0, 0, 0, 0, 0, 0x80]), Some(i64::MIN));
        // 2**63 needs a ninth byte to stay positive: not an i64, but a u64.
        let two_63 = [0, 0, 0, 0, 0, 0, 0, 0x80, 0];
        assert_eq!(long_to_i64(&two_63), None);
        assert_eq!(long_to_u64(&two_63), Some(1 << 63));
        assert_eq!(long_to_u64(&[0xff; 8]), None);
        assert_eq!(
            long_to_u64(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0]),
            Some(u64::MAX)
        );
        // 2**64 fits in neither.
        let two_64 = [0, 0, 0, 0, 0, 0, 0, 0, 1];
        assert_eq!((long_to_i64(&two_64), long_to_u64(&two_64)), (None, None));
        // -(2**63) - 1.
        assert_eq!(long_to_i64(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0xff]), None);
    }

    #[test]
    fn hostile_lengths_are_refused_before_slicing() {
        let mut r = OpReader::new(b"\x8d\xff\xff\xff\xff\xff\xff\xff\x7fabc", "test pickle");
        let e = r.next_op().unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::Corrupt);
        assert!(e.message().contains("only 3 are left"), "{}", e.message());
        let mut r = OpReader::new(b"\x95\x10\0\0\0\0\0\0\0.", "test pickle");
        assert!(r.next_op().is_err());
    }

    #[test]
    fn splits_a_protocol_4_dict() {
        // pickle.dumps({'a': 1}, 4)
        let b = b"\x80\x04\x95\x0a\0\0\0\0\0\0\0}\x94\x8c\x01a\x94K\x01s.";
        let mut r = OpReader::new(b, "test pickle");
        let mut ops = Vec::new();
        loop {
            let (_, op) = r.next_op().unwrap();
            ops.push(op);
            if op == Op::Stop {
                break;
            }
        }
        assert_eq!(
            ops,
            vec![
                Op::Proto(4),
                Op::Frame(10),
                Op::EmptyDict,
                Op::Memoize,
                Op::Text { at: 15, bytes: b"a" },
                Op::Memoize,
                Op::Int(1),
                Op::SetItem,
                Op::Stop
            ]
        );
    }
}
