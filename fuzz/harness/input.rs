//! Reading fuzz input front to back as the pieces a target needs (numbers, lengths, byte
//! strings, text). Past the end every read gives zeros or empty pieces, so any input is a
//! complete description and the fuzzer can shorten it freely.

/// A cursor over fuzz input.
pub struct Input<'a> {
    data: &'a [u8],
}

impl<'a> Input<'a> {
    /// A cursor at the start of `data`.
    pub fn new(data: &'a [u8]) -> Self {
        Input { data }
    }

    /// Whether everything has been read.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// The next byte (0 past the end).
    pub fn byte(&mut self) -> u8 {
        match self.data.split_first() {
            Some((&b, rest)) => {
                self.data = rest;
                b
            }
            None => 0,
        }
    }

    /// The next byte as a number in `0..=max`.
    pub fn small(&mut self, max: usize) -> usize {
        self.byte() as usize % (max + 1)
    }

    /// The next two bytes, little-endian.
    pub fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.byte(), self.byte()])
    }

    /// The next eight bytes, little-endian.
    pub fn u64(&mut self) -> u64 {
        let mut b = [0u8; 8];
        b.iter_mut().for_each(|x| *x = self.byte());
        u64::from_le_bytes(b)
    }

    /// Up to `n` bytes (fewer at the end).
    pub fn bytes(&mut self, n: usize) -> &'a [u8] {
        let (head, rest) = self.data.split_at(n.min(self.data.len()));
        self.data = rest;
        head
    }

    /// A byte string preceded by a one-byte length.
    pub fn short(&mut self) -> &'a [u8] {
        let n = self.byte() as usize;
        self.bytes(n)
    }

    /// A byte string preceded by a two-byte little-endian length (a file's contents).
    pub fn chunk(&mut self) -> &'a [u8] {
        let n = self.u16() as usize;
        self.bytes(n)
    }

    /// Text preceded by a one-byte length (invalid UTF-8 replaced).
    pub fn text(&mut self) -> String {
        String::from_utf8_lossy(self.short()).into_owned()
    }

    /// Everything not read yet.
    pub fn rest(&mut self) -> &'a [u8] {
        std::mem::take(&mut self.data)
    }
}

/// Encodes pieces the way [`Input`] reads them (for seed generators and tests).
#[derive(Default)]
pub struct InputBuilder {
    /// The input built so far.
    pub bytes: Vec<u8>,
}

impl InputBuilder {
    /// A byte.
    pub fn byte(&mut self, b: u8) -> &mut Self {
        self.bytes.push(b);
        self
    }

    /// A little-endian u16.
    pub fn u16(&mut self, v: u16) -> &mut Self {
        self.bytes.extend_from_slice(&v.to_le_bytes());
        self
    }

    /// A little-endian u64.
    pub fn u64(&mut self, v: u64) -> &mut Self {
        self.bytes.extend_from_slice(&v.to_le_bytes());
        self
    }

    /// Raw bytes.
    pub fn raw(&mut self, b: &[u8]) -> &mut Self {
        self.bytes.extend_from_slice(b);
        self
    }

    /// A one-byte length then the bytes (at most 255 of them).
    pub fn short(&mut self, b: &[u8]) -> &mut Self {
        let b = &b[..b.len().min(255)];
        self.byte(b.len() as u8).raw(b)
    }

    /// A two-byte length then the bytes (at most 65535 of them).
    pub fn chunk(&mut self, b: &[u8]) -> &mut Self {
        let b = &b[..b.len().min(65535)];
        self.u16(b.len() as u16).raw(b)
    }
}
