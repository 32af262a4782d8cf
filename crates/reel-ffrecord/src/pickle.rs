//! The pickle subset that `ffrecord.pack_folder` writes: nested `collections.OrderedDict`s
//! mapping names to record indices.
//!
//! Unpickling in Python runs arbitrary code; this parser understands exactly the opcodes a
//! folder index needs and refuses everything else with an `Unsupported` error, so a
//! crafted file can at worst be rejected. Strings and dicts fetched from the memo are
//! shared, never copied, and a directory may appear only once in the tree, so a small input
//! cannot expand into a huge tree.

use std::collections::HashMap;
use std::sync::Arc;

use reel_core::{Error, ErrorKind, Result};

/// One entry of a packed folder: a file (its record index) or a directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FolderEntry {
    /// A file stored as the record with this index.
    File(u64),
    /// A directory.
    Dir(FolderDir),
}

/// A directory of a packed folder: names in stored order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FolderDir {
    entries: Vec<(Arc<str>, FolderEntry)>,
}

impl FolderDir {
    /// An empty directory.
    pub fn new() -> Self {
        FolderDir::default()
    }

    /// The entries in stored order.
    pub fn entries(&self) -> &[(Arc<str>, FolderEntry)] {
        &self.entries
    }

    /// The entry called `name`.
    pub fn get(&self, name: &str) -> Option<&FolderEntry> {
        self.entries.iter().find(|(k, _)| &**k == name).map(|(_, v)| v)
    }

    /// Adds an entry, replacing the value of an existing one with the same name in place
    /// (what `OrderedDict.__setitem__` does).
    pub fn insert(&mut self, name: Arc<str>, entry: FolderEntry) {
        match self.entries.iter_mut().find(|(k, _)| *k == name) {
            Some(slot) => slot.1 = entry,
            None => self.entries.push((name, entry)),
        }
    }
}

const MAGIC_PROTO: u8 = 0x80;
const FRAME: u8 = 0x95;
const SHORT_BINUNICODE: u8 = 0x8c;
const BINUNICODE: u8 = b'X';
const BINUNICODE8: u8 = 0x8d;
const MEMOIZE: u8 = 0x94;
const BINPUT: u8 = b'q';
const LONG_BINPUT: u8 = b'r';
const BINGET: u8 = b'h';
const LONG_BINGET: u8 = b'j';
const GLOBAL: u8 = b'c';
const STACK_GLOBAL: u8 = 0x93;
const EMPTY_TUPLE: u8 = b')';
const REDUCE: u8 = b'R';
const EMPTY_DICT: u8 = b'}';
const MARK: u8 = b'(';
const SETITEM: u8 = b's';
const SETITEMS: u8 = b'u';
const BININT: u8 = b'J';
const BININT1: u8 = b'K';
const BININT2: u8 = b'M';
const LONG1: u8 = 0x8a;
const STOP: u8 = b'.';

#[derive(Clone, Debug)]
enum Item {
    Str(Arc<str>),
    Int(i64),
    Dict(usize),
    OrderedDictClass,
    EmptyTuple,
}

struct Parser<'a> {
    bytes: &'a [u8],
    pos: usize,
    stack: Vec<Item>,
    marks: Vec<usize>,
    memo: HashMap<u32, Item>,
    dicts: Vec<Vec<(Arc<str>, Item)>>,
}

fn corrupt(pos: usize, what: impl Into<String>) -> Error {
    Error::corrupt(format!("folder index pickle, byte {pos}: {}", what.into()))
}

impl<'a> Parser<'a> {
    fn take(&mut self, n: u64) -> Result<&'a [u8]> {
        let start = self.pos;
        let end = usize::try_from(n).ok().and_then(|n| start.checked_add(n));
        match end.and_then(|end| self.bytes.get(start..end)) {
            Some(s) => {
                self.pos += s.len();
                Ok(s)
            }
            None => Err(corrupt(start, format!("needs {n} more bytes but the data ends"))),
        }
    }

    fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }

    fn uint(&mut self, n: usize) -> Result<u64> {
        let b = self.take(n as u64)?;
        Ok(b.iter().rev().fold(0u64, |acc, &x| (acc << 8) | x as u64))
    }

    fn pop(&mut self) -> Result<Item> {
        let floor = self.marks.last().copied().unwrap_or(0);
        if self.stack.len() <= floor {
            return Err(corrupt(self.pos, "stack underflow"));
        }
        self.stack.pop().ok_or_else(|| corrupt(self.pos, "stack underflow"))
    }

    fn top(&self) -> Result<&Item> {
        self.stack.last().ok_or_else(|| corrupt(self.pos, "stack underflow"))
    }

    fn string(&mut self, len: u64) -> Result<()> {
        let at = self.pos;
        let b = self.take(len)?;
        let s = std::str::from_utf8(b).map_err(|_| corrupt(at, "a name is not valid UTF-8"))?;
        self.stack.push(Item::Str(Arc::from(s)));
        Ok(())
    }

    fn global(&mut self, module: &str, name: &str) -> Result<()> {
        if module != "collections" || name != "OrderedDict" {
            return Err(Error::unsupported(format!(
                "folder index pickle refers to {module}.{name}; only collections.OrderedDict is accepted"
            )));
        }
        self.stack.push(Item::OrderedDictClass);
        Ok(())
    }

    fn set_items(&mut self, dict_pos: usize, items: Vec<Item>) -> Result<()> {
        let Some(Item::Dict(id)) = self.stack.get(dict_pos).cloned() else {
            return Err(corrupt(self.pos, "items set on something that is not a dict"));
        };
        if items.len() % 2 != 0 {
            return Err(corrupt(self.pos, "odd number of items for a dict"));
        }
        let mut it = items.into_iter();
        while let (Some(k), Some(v)) = (it.next(), it.next()) {
            let Item::Str(k) = k else {
                return Err(Error::unsupported("folder index has a key that is not a string"));
            };
            if !matches!(v, Item::Int(_) | Item::Dict(_)) {
                return Err(Error::unsupported(format!(
                    "folder index entry {k:?} is neither a record index nor a directory"
                )));
            }
            let dict = &mut self.dicts[id];
            match dict.iter_mut().find(|(name, _)| *name == k) {
                Some(slot) => slot.1 = v,
                None => dict.push((k, v)),
            }
        }
        Ok(())
    }

    fn run(&mut self) -> Result<Item> {
        loop {
            let at = self.pos;
            let op = self.u8()?;
            match op {
                MAGIC_PROTO => {
                    let p = self.u8()?;
                    if !(2..=5).contains(&p) {
                        return Err(Error::unsupported(format!(
                            "pickle protocol {p} (2 to 5 are read)"
                        )));
                    }
                }
                FRAME => {
                    let len = self.uint(8)?;
                    if len > (self.bytes.len() - self.pos) as u64 {
                        return Err(corrupt(at, "frame runs past the end of the data"));
                    }
                }
                SHORT_BINUNICODE => {
                    let n = self.uint(1)?;
                    self.string(n)?;
                }
                BINUNICODE => {
                    let n = self.uint(4)?;
                    self.string(n)?;
                }
                BINUNICODE8 => {
                    let n = self.uint(8)?;
                    self.string(n)?;
                }
                MEMOIZE => {
                    let item = self.top()?.clone();
                    let idx = self.memo.len() as u32;
                    self.memo.insert(idx, item);
                }
                BINPUT | LONG_BINPUT => {
                    let idx = self.uint(if op == BINPUT { 1 } else { 4 })? as u32;
                    let item = self.top()?.clone();
                    self.memo.insert(idx, item);
                }
                BINGET | LONG_BINGET => {
                    let idx = self.uint(if op == BINGET { 1 } else { 4 })? as u32;
                    let item =
                        self.memo.get(&idx).cloned().ok_or_else(|| {
                            corrupt(at, format!("memo entry {idx} is not defined"))
                        })?;
                    self.stack.push(item);
                }
                GLOBAL => {
                    let rest = &self.bytes[self.pos..];
                    let mut lines = rest.splitn(3, |&b| b == b'\n');
                    let (Some(m), Some(n), Some(_)) = (lines.next(), lines.next(), lines.next())
                    else {
                        return Err(corrupt(at, "GLOBAL without two lines"));
                    };
                    self.pos += m.len() + n.len() + 2;
                    let m = String::from_utf8_lossy(m).into_owned();
                    let n = String::from_utf8_lossy(n).into_owned();
                    self.global(&m, &n)?;
                }
                STACK_GLOBAL => {
                    let (Item::Str(name), Item::Str(module)) = (self.pop()?, self.pop()?) else {
                        return Err(corrupt(at, "STACK_GLOBAL needs two strings"));
                    };
                    self.global(&module, &name)?;
                }
                EMPTY_TUPLE => self.stack.push(Item::EmptyTuple),
                REDUCE => {
                    let args = self.pop()?;
                    let callable = self.pop()?;
                    if !matches!((&callable, &args), (Item::OrderedDictClass, Item::EmptyTuple)) {
                        return Err(Error::unsupported(
                            "folder index pickle calls something other than OrderedDict()",
                        ));
                    }
                    self.dicts.push(Vec::new());
                    self.stack.push(Item::Dict(self.dicts.len() - 1));
                }
                EMPTY_DICT => {
                    self.dicts.push(Vec::new());
                    self.stack.push(Item::Dict(self.dicts.len() - 1));
                }
                MARK => self.marks.push(self.stack.len()),
                SETITEM => {
                    let v = self.pop()?;
                    let k = self.pop()?;
                    let dict_pos = self
                        .stack
                        .len()
                        .checked_sub(1)
                        .ok_or_else(|| corrupt(at, "SETITEM without a dict"))?;
                    self.set_items(dict_pos, vec![k, v])?;
                }
                SETITEMS => {
                    let mark =
                        self.marks.pop().ok_or_else(|| corrupt(at, "SETITEMS without MARK"))?;
                    let items = self.stack.split_off(mark);
                    let dict_pos = mark
                        .checked_sub(1)
                        .ok_or_else(|| corrupt(at, "SETITEMS without a dict"))?;
                    self.set_items(dict_pos, items)?;
                }
                BININT => {
                    let v = self.uint(4)? as u32 as i32;
                    self.stack.push(Item::Int(v as i64));
                }
                BININT1 => {
                    let v = self.uint(1)?;
                    self.stack.push(Item::Int(v as i64));
                }
                BININT2 => {
                    let v = self.uint(2)?;
                    self.stack.push(Item::Int(v as i64));
                }
                LONG1 => {
                    let n = self.uint(1)? as usize;
                    if n > 8 {
                        return Err(Error::unsupported(format!(
                            "integer of {n} bytes in folder index"
                        )));
                    }
                    let b = self.take(n as u64)?;
                    let mut v: i64 = 0;
                    for (i, &x) in b.iter().enumerate() {
                        v |= (x as i64) << (8 * i);
                    }
                    if n > 0 && n < 8 && b[n - 1] & 0x80 != 0 {
                        v -= 1i64 << (8 * n);
                    }
                    self.stack.push(Item::Int(v));
                }
                STOP => return self.pop(),
                other => {
                    return Err(Error::unsupported(format!(
                        "pickle opcode {other:#04x} at byte {at} is outside the subset pack_folder writes"
                    )));
                }
            }
        }
    }

    fn build(
        &self,
        id: usize,
        placed: &mut [bool],
        depth: u32,
        max_depth: u32,
    ) -> Result<FolderDir> {
        if depth > max_depth {
            return Err(Error::new(
                ErrorKind::Limit,
                format!("folder index nests deeper than the limit of {max_depth} directories"),
            ));
        }
        let mut dir = FolderDir { entries: Vec::with_capacity(self.dicts[id].len()) };
        for (name, item) in &self.dicts[id] {
            let entry = match *item {
                Item::Int(i) => FolderEntry::File(u64::try_from(i).map_err(|_| {
                    Error::corrupt(format!(
                        "folder index gives {name:?} the negative record index {i}"
                    ))
                })?),
                Item::Dict(child) => {
                    if std::mem::replace(&mut placed[child], true) {
                        return Err(Error::unsupported(format!(
                            "folder index uses the same directory object twice (at {name:?})"
                        )));
                    }
                    FolderEntry::Dir(self.build(child, placed, depth + 1, max_depth)?)
                }
                _ => return Err(Error::corrupt("folder index holds an invalid entry")),
            };
            dir.entries.push((name.clone(), entry));
        }
        Ok(dir)
    }
}

/// Parses a folder index pickle into its root directory.
pub fn parse_folder_index(bytes: &[u8], max_depth: u32) -> Result<FolderDir> {
    let mut p = Parser {
        bytes,
        pos: 0,
        stack: Vec::new(),
        marks: Vec::new(),
        memo: HashMap::new(),
        dicts: Vec::new(),
    };
    let Item::Dict(root) = p.run()? else {
        return Err(Error::unsupported("folder index pickle does not hold a dict"));
    };
    let mut placed = vec![false; p.dicts.len()];
    placed[root] = true;
    p.build(root, &mut placed, 0, max_depth)
}

/// Writes `root` the way CPython's pickler (protocol 4) writes the `OrderedDict` tree that
/// `pack_folder` builds, byte for byte: framing, memoization, batching and the sharing of
/// one-character strings (which CPython caches) included.
pub fn write_folder_index(root: &FolderDir) -> Vec<u8> {
    let mut w = Writer {
        out: vec![MAGIC_PROTO, 4],
        frame: Vec::new(),
        memo_len: 0,
        class_memo: None,
        chars: HashMap::new(),
    };
    w.save_dict(root);
    w.frame.push(STOP);
    w.commit_frame(true);
    w.out
}

const FRAME_SIZE_TARGET: usize = 64 * 1024;
const BATCHSIZE: usize = 1000;

struct Writer {
    out: Vec<u8>,
    frame: Vec<u8>,
    memo_len: u32,
    class_memo: Option<u32>,
    chars: HashMap<char, u32>,
}

impl Writer {
    fn commit_frame(&mut self, force: bool) {
        if self.frame.len() >= FRAME_SIZE_TARGET || (force && !self.frame.is_empty()) {
            if self.frame.len() >= 4 {
                self.out.push(FRAME);
                self.out.extend_from_slice(&(self.frame.len() as u64).to_le_bytes());
            }
            self.out.append(&mut self.frame);
        }
    }

    /// Every `save` in CPython starts by committing a full frame.
    fn begin_save(&mut self) {
        self.commit_frame(false);
    }

    fn memoize(&mut self) -> u32 {
        self.frame.push(MEMOIZE);
        self.memo_len += 1;
        self.memo_len - 1
    }

    fn get(&mut self, idx: u32) {
        if idx < 256 {
            self.frame.extend_from_slice(&[BINGET, idx as u8]);
        } else {
            self.frame.push(LONG_BINGET);
            self.frame.extend_from_slice(&idx.to_le_bytes());
        }
    }

    fn save_str(&mut self, s: &str) {
        self.begin_save();
        let mut chars = s.chars();
        let single = match (chars.next(), chars.next()) {
            (Some(c), None) if (c as u32) < 256 => Some(c),
            _ => None,
        };
        if let Some(idx) = single.and_then(|c| self.chars.get(&c).copied()) {
            self.get(idx);
            return;
        }
        let b = s.as_bytes();
        if b.len() < 256 {
            self.frame.extend_from_slice(&[SHORT_BINUNICODE, b.len() as u8]);
            self.frame.extend_from_slice(b);
        } else if b.len() >= FRAME_SIZE_TARGET {
            // CPython writes large strings outside any frame.
            self.commit_frame(true);
            if b.len() > u32::MAX as usize {
                self.out.push(BINUNICODE8);
                self.out.extend_from_slice(&(b.len() as u64).to_le_bytes());
            } else {
                self.out.push(BINUNICODE);
                self.out.extend_from_slice(&(b.len() as u32).to_le_bytes());
            }
            self.out.extend_from_slice(b);
        } else {
            self.frame.push(BINUNICODE);
            self.frame.extend_from_slice(&(b.len() as u32).to_le_bytes());
            self.frame.extend_from_slice(b);
        }
        let idx = self.memoize();
        if let Some(c) = single {
            self.chars.insert(c, idx);
        }
    }

    fn save_int(&mut self, v: u64) {
        self.begin_save();
        if v <= 0xff {
            self.frame.extend_from_slice(&[BININT1, v as u8]);
        } else if v <= 0xffff {
            self.frame.push(BININT2);
            self.frame.extend_from_slice(&(v as u16).to_le_bytes());
        } else if v <= 0x7fff_ffff {
            self.frame.push(BININT);
            self.frame.extend_from_slice(&(v as u32).to_le_bytes());
        } else {
            // Python's encode_long: minimal little-endian two's complement.
            let mut b = v.to_le_bytes().to_vec();
            while b.len() > 1 && b[b.len() - 1] == 0 && b[b.len() - 2] & 0x80 == 0 {
                b.pop();
            }
            if b[b.len() - 1] & 0x80 != 0 {
                b.push(0);
            }
            self.frame.extend_from_slice(&[LONG1, b.len() as u8]);
            self.frame.extend_from_slice(&b);
        }
    }

    fn save_class(&mut self) {
        self.begin_save();
        if let Some(idx) = self.class_memo {
            self.get(idx);
            return;
        }
        self.save_str("collections");
        self.save_str("OrderedDict");
        self.frame.push(STACK_GLOBAL);
        self.class_memo = Some(self.memoize());
    }

    fn save_entry(&mut self, entry: &FolderEntry) {
        match entry {
            FolderEntry::File(i) => self.save_int(*i),
            FolderEntry::Dir(d) => self.save_dict(d),
        }
    }

    fn save_dict(&mut self, dir: &FolderDir) {
        self.begin_save();
        self.save_class();
        self.begin_save(); // saving the empty argument tuple
        self.frame.push(EMPTY_TUPLE);
        self.frame.push(REDUCE);
        self.memoize();
        for batch in dir.entries.chunks(BATCHSIZE) {
            if let [(k, v)] = batch {
                self.save_str(k);
                self.save_entry(v);
                self.frame.push(SETITEM);
            } else {
                self.frame.push(MARK);
                for (k, v) in batch {
                    self.save_str(k);
                    self.save_entry(v);
                }
                self.frame.push(SETITEMS);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
    }

    fn dir(entries: Vec<(&str, FolderEntry)>) -> FolderDir {
        FolderDir { entries: entries.into_iter().map(|(k, v)| (Arc::from(k), v)).collect() }
    }

    /// The spec's worked example (section 7): 144-byte meta record minus the 9-byte magic.
    #[test]
    fn spec_example_bytes() {
        let tree = dir(vec![
            ("Z.txt", FolderEntry::File(0)),
            ("a.txt", FolderEntry::File(1)),
            ("b.txt", FolderEntry::File(2)),
            ("emptydir", FolderEntry::Dir(dir(vec![]))),
            (
                "sub",
                FolderEntry::Dir(dir(vec![
                    ("c.bin", FolderEntry::File(3)),
                    ("deep", FolderEntry::Dir(dir(vec![("e", FolderEntry::File(4))]))),
                ])),
            ),
        ]);
        let expected = hex(concat!(
            "8004957c00000000000000",
            "8c0b636f6c6c656374696f6e73948c0b4f726465726564446963749493942952942",
            "88c055a2e747874944b008c05612e747874944b018c05622e747874944b02",
            "8c08656d707479646972946802295294",
            "8c03737562946802295294288c05632e62696e944b03",
            "8c0464656570946802295294",
            "8c0165944b047375752e"
        ));
        let bytes = write_folder_index(&tree);
        assert_eq!(bytes, expected);
        assert_eq!(parse_folder_index(&bytes, 64).unwrap(), tree);
    }

    #[test]
    fn one_char_names_are_shared_like_cpython() {
        let tree = dir(vec![
            ("a", FolderEntry::Dir(dir(vec![("e", FolderEntry::File(0))]))),
            ("b", FolderEntry::Dir(dir(vec![("e", FolderEntry::File(1))]))),
        ]);
        let bytes = write_folder_index(&tree);
        // The second "e" is a BINGET, not a new string.
        assert_eq!(bytes.windows(3).filter(|w| w == b"\x8c\x01e").count(), 1);
        assert_eq!(parse_folder_index(&bytes, 64).unwrap(), tree);
    }

    #[test]
    fn refuses_foreign_globals_and_shared_dirs() {
        let evil = b"\x80\x04\x8c\x02os\x94\x8c\x06system\x94\x93\x94.";
        assert_eq!(parse_folder_index(evil, 64).unwrap_err().kind(), ErrorKind::Unsupported);
        // root = {}, root["a"] = d, root["b"] = d (same dict twice)
        let shared = b"\x80\x04}\x94(\x8c\x01a}\x94\x8c\x01bh\x01u.";
        assert_eq!(parse_folder_index(shared, 64).unwrap_err().kind(), ErrorKind::Unsupported);
    }

    #[test]
    fn truncations_never_panic() {
        let tree = dir(vec![("x.bin", FolderEntry::File(0)), ("d", FolderEntry::Dir(dir(vec![])))]);
        let bytes = write_folder_index(&tree);
        for n in 0..bytes.len() {
            assert!(parse_folder_index(&bytes[..n], 64).is_err());
        }
    }
}
