//! A JSON reader that accepts exactly what Python's `json.loads` accepts (strict mode, the
//! default): the bare `NaN`, `Infinity` and `-Infinity` tokens, integers of any size,
//! `\uXXXX` escapes including unpaired surrogates, and nothing else: no comments, no trailing
//! commas, no raw control characters in strings.
//!
//! Nesting is bounded, so no input can exhaust the stack; every failure is an error with
//! the byte offset, never a panic.

use reel_core::{Error, ErrorKind, Result};

use super::value::{JsonStr, JsonValue, dedupe_keys};

/// Deepest nesting followed whatever the limits say: Python's own recursion limit stops
/// its decoder at about this depth, and the trees built here are dropped recursively.
pub const MAX_DEPTH_CAP: u32 = 1000;

/// Parses a complete JSON document (surrounding whitespace allowed) with at most
/// `max_depth` nested arrays and objects.
pub fn parse_json(text: &str, max_depth: u32) -> Result<JsonValue> {
    let mut p = Parser::new(text, max_depth);
    p.skip_ws();
    let v = p.parse_value(0)?;
    p.finish()?;
    Ok(v)
}

/// A cursor over JSON text. The `.gmeta` index reader drives it directly to walk the top
/// level without building a tree.
pub(crate) struct Parser<'a> {
    text: &'a str,
    s: &'a [u8],
    pos: usize,
    max_depth: u32,
}

impl<'a> Parser<'a> {
    pub(crate) fn new(text: &'a str, max_depth: u32) -> Self {
        Parser { text, s: text.as_bytes(), pos: 0, max_depth: max_depth.min(MAX_DEPTH_CAP) }
    }

    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    pub(crate) fn error(&self, message: impl Into<String>) -> Error {
        Error::corrupt(format!("invalid JSON: {}", message.into())).with_offset(self.pos as u64)
    }

    pub(crate) fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.s.get(self.pos) {
            self.pos += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.pos).copied()
    }

    /// Fails unless only whitespace is left.
    pub(crate) fn finish(&mut self) -> Result<()> {
        self.skip_ws();
        if self.pos != self.s.len() {
            return Err(self.error("extra data after the end of the document"));
        }
        Ok(())
    }

    fn enter(&self, depth: u32) -> Result<u32> {
        let depth = depth + 1;
        if depth > self.max_depth {
            return Err(Error::new(
                ErrorKind::Limit,
                format!(
                    "JSON nesting deeper than {} levels (raise Limits::max_nesting to read it)",
                    self.max_depth
                ),
            )
            .with_offset(self.pos as u64));
        }
        Ok(depth)
    }

    /// Consumes `{` and returns the depth inside the object.
    pub(crate) fn begin_object(&mut self, depth: u32) -> Result<u32> {
        if self.peek() != Some(b'{') {
            return Err(self.error("expecting an object"));
        }
        let inner = self.enter(depth)?;
        self.pos += 1;
        Ok(inner)
    }

    /// Consumes `[` and returns the depth inside the array.
    pub(crate) fn begin_array(&mut self, depth: u32) -> Result<u32> {
        if self.peek() != Some(b'[') {
            return Err(self.error("expecting an array"));
        }
        let inner = self.enter(depth)?;
        self.pos += 1;
        Ok(inner)
    }

    /// Moves to the next key of an object opened with [`begin_object`](Self::begin_object):
    /// returns the key (with the `:` after it consumed), or `None` at the closing `}`.
    pub(crate) fn next_key(&mut self, first: &mut bool) -> Result<Option<JsonStr>> {
        self.skip_ws();
        if self.peek() == Some(b'}') {
            self.pos += 1;
            return Ok(None);
        }
        if !*first {
            if self.peek() != Some(b',') {
                return Err(self.error("expecting ',' delimiter"));
            }
            self.pos += 1;
            self.skip_ws();
        }
        *first = false;
        if self.peek() != Some(b'"') {
            return Err(self.error("expecting a property name enclosed in double quotes"));
        }
        let key = self.parse_string()?;
        self.skip_ws();
        if self.peek() != Some(b':') {
            return Err(self.error("expecting ':' delimiter"));
        }
        self.pos += 1;
        self.skip_ws();
        Ok(Some(key))
    }

    /// Moves to the next element of an array opened with [`begin_array`](Self::begin_array):
    /// true when a value follows (whitespace skipped), false at the closing `]`.
    pub(crate) fn next_element(&mut self, first: &mut bool) -> Result<bool> {
        self.skip_ws();
        if self.peek() == Some(b']') {
            self.pos += 1;
            return Ok(false);
        }
        if !*first {
            if self.peek() != Some(b',') {
                return Err(self.error("expecting ',' delimiter"));
            }
            self.pos += 1;
            self.skip_ws();
            // `[1,]` is refused, as by Python.
            if self.peek() == Some(b']') {
                return Err(self.error("expecting a value after ','"));
            }
        }
        *first = false;
        Ok(true)
    }

    /// Parses the value at the cursor; `depth` counts the containers around it.
    pub(crate) fn parse_value(&mut self, depth: u32) -> Result<JsonValue> {
        match self.peek() {
            Some(b'"') => Ok(JsonValue::Str(self.parse_string()?)),
            Some(b'{') => {
                let inner = self.begin_object(depth)?;
                let mut pairs = Vec::new();
                let mut first = true;
                while let Some(key) = self.next_key(&mut first)? {
                    let v = self.parse_value(inner)?;
                    pairs.push((key, v));
                }
                Ok(JsonValue::Object(dedupe_keys(pairs)))
            }
            Some(b'[') => {
                let inner = self.begin_array(depth)?;
                let mut items = Vec::new();
                let mut first = true;
                while self.next_element(&mut first)? {
                    items.push(self.parse_value(inner)?);
                }
                Ok(JsonValue::Array(items))
            }
            Some(b'n') => self.literal("null", JsonValue::Null),
            Some(b't') => self.literal("true", JsonValue::Bool(true)),
            Some(b'f') => self.literal("false", JsonValue::Bool(false)),
            Some(b'N') => self.literal("NaN", JsonValue::Float(f64::NAN)),
            Some(b'I') => self.literal("Infinity", JsonValue::Float(f64::INFINITY)),
            Some(b'-') if self.s.get(self.pos + 1) == Some(&b'I') => {
                self.literal("-Infinity", JsonValue::Float(f64::NEG_INFINITY))
            }
            Some(b'-' | b'0'..=b'9') => self.parse_number(),
            _ => Err(self.error("expecting a value")),
        }
    }

    fn literal(&mut self, word: &str, value: JsonValue) -> Result<JsonValue> {
        if self.s[self.pos..].starts_with(word.as_bytes()) {
            self.pos += word.len();
            Ok(value)
        } else {
            Err(self.error("expecting a value"))
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.pos;
        while let Some(b'0'..=b'9') = self.peek() {
            self.pos += 1;
        }
        self.pos - start
    }

    /// Scans a number token: returns its text and whether it has a fraction or exponent.
    fn number_token(&mut self) -> Result<(&'a str, bool)> {
        let start = self.pos;
        if self.peek() == Some(b'-') {
            self.pos += 1;
        }
        match self.peek() {
            Some(b'0') => self.pos += 1,
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => {
                self.pos = start;
                return Err(self.error("expecting a value"));
            }
        }
        let mut is_float = false;
        if self.peek() == Some(b'.') && matches!(self.s.get(self.pos + 1), Some(b'0'..=b'9')) {
            self.pos += 1;
            self.digits();
            is_float = true;
        }
        if let Some(b'e' | b'E') = self.peek() {
            let e_start = self.pos;
            self.pos += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.pos += 1;
            }
            if self.digits() == 0 {
                // Not an exponent after all: the number ends before the `e`, as in Python.
                self.pos = e_start;
            } else {
                is_float = true;
            }
        }
        let text = self.text.get(start..self.pos).ok_or_else(|| self.error("bad number"))?;
        Ok((text, is_float))
    }

    fn parse_number(&mut self) -> Result<JsonValue> {
        let (text, is_float) = self.number_token()?;
        if is_float {
            // Rust and Python both round correctly; out-of-range magnitudes become ±inf or
            // ±0.0 in both.
            return text
                .parse::<f64>()
                .map(JsonValue::Float)
                .map_err(|e| self.error(e.to_string()));
        }
        if let Ok(i) = text.parse::<i64>() {
            return Ok(JsonValue::Int(i));
        }
        if let Ok(u) = text.parse::<u64>() {
            return Ok(JsonValue::UInt(u));
        }
        Ok(JsonValue::BigInt(text.to_string()))
    }

    /// Parses a non-negative integer token that fits in `u64` (a `frame_info` field).
    pub(crate) fn parse_index_int(&mut self, what: &str) -> Result<u64> {
        let at = self.pos;
        let fail = || {
            Error::corrupt(format!("{what} must be a non-negative integer")).with_offset(at as u64)
        };
        let (text, is_float) = self.number_token().map_err(|_| fail())?;
        if is_float || text.starts_with('-') {
            return Err(fail());
        }
        text.parse::<u64>().map_err(|_| fail())
    }

    /// Parses the string at the cursor (which must be at `"`).
    pub(crate) fn parse_string(&mut self) -> Result<JsonStr> {
        if self.peek() != Some(b'"') {
            return Err(self.error("expecting a string"));
        }
        self.pos += 1;
        let mut buf = StrBuf::Text(String::new());
        loop {
            let start = self.pos;
            while let Some(&b) = self.s.get(self.pos) {
                if b == b'"' || b == b'\\' || b < 0x20 {
                    break;
                }
                self.pos += 1;
            }
            // The delimiters are ASCII, so this slice lies on character boundaries.
            let chunk = self.text.get(start..self.pos).ok_or_else(|| self.error("bad string"))?;
            buf.push_str(chunk);
            match self.peek() {
                None => return Err(self.error("unterminated string")),
                Some(b'"') => {
                    self.pos += 1;
                    return Ok(buf.finish());
                }
                Some(b'\\') => self.escape(&mut buf)?,
                Some(_) => return Err(self.error("invalid control character in a string")),
            }
        }
    }

    fn escape(&mut self, buf: &mut StrBuf) -> Result<()> {
        let c = self.s.get(self.pos + 1).copied();
        let simple = match c {
            Some(b'"') => Some('"'),
            Some(b'\\') => Some('\\'),
            Some(b'/') => Some('/'),
            Some(b'b') => Some('\u{8}'),
            Some(b'f') => Some('\u{c}'),
            Some(b'n') => Some('\n'),
            Some(b'r') => Some('\r'),
            Some(b't') => Some('\t'),
            Some(b'u') => None,
            _ => return Err(self.error("invalid \\escape")),
        };
        if let Some(ch) = simple {
            buf.push_char(ch);
            self.pos += 2;
            return Ok(());
        }
        let unit = self.hex4(self.pos + 2)?;
        self.pos += 6;
        if (0xd800..0xdc00).contains(&unit)
            && self.s.get(self.pos) == Some(&b'\\')
            && self.s.get(self.pos + 1) == Some(&b'u')
        {
            let low = self.hex4(self.pos + 2)?;
            if (0xdc00..0xe000).contains(&low) {
                let code = 0x10000 + ((u32::from(unit) - 0xd800) << 10) + (u32::from(low) - 0xdc00);
                buf.push_char(char::from_u32(code).unwrap_or(char::REPLACEMENT_CHARACTER));
                self.pos += 6;
                return Ok(());
            }
        }
        match char::from_u32(u32::from(unit)) {
            Some(ch) => buf.push_char(ch),
            None => buf.push_unpaired(unit),
        }
        Ok(())
    }

    fn hex4(&self, at: usize) -> Result<u16> {
        let digits = self.s.get(at..at + 4).ok_or_else(|| self.error("invalid \\uXXXX escape"))?;
        let mut v: u16 = 0;
        for &d in digits {
            let x = (d as char).to_digit(16).ok_or_else(|| self.error("invalid \\uXXXX escape"))?;
            v = v * 16 + x as u16;
        }
        Ok(v)
    }
}

/// A string being decoded: UTF-8 until an unpaired surrogate forces UTF-16.
enum StrBuf {
    Text(String),
    Utf16(Vec<u16>),
}

impl StrBuf {
    fn push_str(&mut self, s: &str) {
        match self {
            StrBuf::Text(t) => t.push_str(s),
            StrBuf::Utf16(u) => u.extend(s.encode_utf16()),
        }
    }

    fn push_char(&mut self, c: char) {
        match self {
            StrBuf::Text(t) => t.push(c),
            StrBuf::Utf16(u) => {
                let mut b = [0u16; 2];
                u.extend_from_slice(c.encode_utf16(&mut b));
            }
        }
    }

    fn push_unpaired(&mut self, unit: u16) {
        if let StrBuf::Text(t) = self {
            *self = StrBuf::Utf16(t.encode_utf16().collect());
        }
        if let StrBuf::Utf16(u) = self {
            u.push(unit);
        }
    }

    fn finish(self) -> JsonStr {
        match self {
            StrBuf::Text(t) => JsonStr::Text(t),
            StrBuf::Utf16(u) => JsonStr::Utf16(u),
        }
    }
}
