//! The pickle subset that `ffrecord.pack_folder` writes: nested `collections.OrderedDict`s
//! mapping names to record indices.
//!
//! Unpickling in Python runs arbitrary code; this parser understands exactly the opcodes a
//! folder index needs and refuses everything else with an `Unsupported` error, so a
//! crafted file can at worst be rejected. Strings and dicts fetched from the memo are
//! shared, never copied, and a directory may appear only once in the tree, so a small input
//! cannot expand into a huge tree.
//!
//! Memory is linear in the input and small: while parsing, every opcode adds at most 8 bytes
//! of state per byte it takes in the input (strings stay in the input, named by position;
//! stack, memo and dict entries are small fixed-size items), and the tree built at the end
//! holds one map entry per name set.

use std::collections::HashMap;
use std::sync::Arc;

use indexmap::IndexMap;
use reel_core::pickle::{Op, OpReader, long_to_i64, opcode_text};
use reel_core::{Error, ErrorKind, Result};

/// One entry of a packed folder: a file (its record index) or a directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FolderEntry {
    /// A file stored as the record with this index.
    File(u64),
    /// A directory.
    Dir(FolderDir),
}

/// A directory of a packed folder: names in stored order, found by name in constant time.
#[derive(Clone, Debug, Default)]
pub struct FolderDir {
    entries: IndexMap<Arc<str>, FolderEntry>,
}

/// Two directories are equal when they hold the same names, in the same order, with equal
/// entries: the order is part of what `pack_folder` writes.
impl PartialEq for FolderDir {
    fn eq(&self, other: &Self) -> bool {
        self.entries.len() == other.entries.len() && self.entries.iter().eq(other.entries.iter())
    }
}

impl Eq for FolderDir {}

impl FolderDir {
    /// An empty directory.
    pub fn new() -> Self {
        FolderDir::default()
    }

    /// The entries (name, entry) in stored order.
    pub fn entries(&self) -> impl ExactSizeIterator<Item = (&Arc<str>, &FolderEntry)> {
        self.entries.iter()
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the directory is empty.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The entry called `name`.
    pub fn get(&self, name: &str) -> Option<&FolderEntry> {
        self.entries.get(name)
    }

    /// Adds an entry, replacing the value of an existing one with the same name in place
    /// (what `OrderedDict.__setitem__` does).
    pub fn insert(&mut self, name: Arc<str>, entry: FolderEntry) {
        self.entries.insert(name, entry);
    }
}

// Opcodes the writer emits (the reader goes through `reel_core::pickle::OpReader`).
const MAGIC_PROTO: u8 = 0x80;
const FRAME: u8 = 0x95;
const SHORT_BINUNICODE: u8 = 0x8c;
const BINUNICODE: u8 = b'X';
const BINUNICODE8: u8 = 0x8d;
const MEMOIZE: u8 = 0x94;
const BINGET: u8 = b'h';
const LONG_BINGET: u8 = b'j';
const STACK_GLOBAL: u8 = 0x93;
const EMPTY_TUPLE: u8 = b')';
const REDUCE: u8 = b'R';
const MARK: u8 = b'(';
const SETITEM: u8 = b's';
const SETITEMS: u8 = b'u';
const BININT: u8 = b'J';
const BININT1: u8 = b'K';
const BININT2: u8 = b'M';
const LONG1: u8 = 0x8a;
const STOP: u8 = b'.';

const WHAT: &str = "folder index pickle";

/// A value on the parser's stack or in its memo: 8 bytes, naming strings, integers and
/// dicts by their number in the parser's tables.
#[derive(Clone, Copy, Debug)]
enum Item {
    /// `strings[n]`.
    Str(u32),
    /// `ints[n]`.
    Int(u32),
    /// The `n`-th dict made.
    Dict(u32),
    OrderedDictClass,
    EmptyTuple,
}

/// `dicts[dict][key] = value`, as set by `SETITEM(S)`, in the order set.
#[derive(Clone, Copy, Debug)]
struct SetItem {
    dict: u32,
    key: u32,
    value: Item,
}

struct Parser<'a> {
    input: &'a [u8],
    ops: OpReader<'a>,
    stack: Vec<Item>,
    marks: Vec<u32>,
    /// Memo entries by index; pickles number them in order (CPython's pickler uses the
    /// memo's length), so a vector holds them.
    memo: Vec<Item>,
    /// Every string's place in the input (offset, length), validated as UTF-8.
    strings: Vec<(u32, u32)>,
    ints: Vec<i64>,
    /// Number of dicts made.
    dicts: u32,
    /// Every item set, in order; a name set twice is resolved when the tree is built, so
    /// setting an item is O(1) instead of a scan of its dict.
    set: Vec<SetItem>,
}

impl<'a> Parser<'a> {
    fn corrupt(&self, what: impl std::fmt::Display) -> Error {
        self.ops.corrupt(self.ops.position(), what)
    }

    fn pop(&mut self) -> Result<Item> {
        let floor = self.marks.last().map_or(0, |&m| m as usize);
        if self.stack.len() <= floor {
            return Err(self.corrupt("stack underflow"));
        }
        self.stack.pop().ok_or_else(|| self.corrupt("stack underflow"))
    }

    fn top(&self) -> Result<Item> {
        self.stack.last().copied().ok_or_else(|| self.corrupt("stack underflow"))
    }

    fn str(&self, id: u32) -> &'a str {
        let (at, len) = self.strings[id as usize];
        let bytes = &self.input[at as usize..at as usize + len as usize];
        // Validated when the string was read.
        std::str::from_utf8(bytes).unwrap_or_default()
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

    fn new_dict(&mut self) {
        self.stack.push(Item::Dict(self.dicts));
        self.dicts += 1;
    }

    /// Sets the items `stack[from..]` (key, value pairs) on the dict at `stack[from - 1]`
    /// and removes them from the stack.
    fn set_items(&mut self, at: usize, from: usize) -> Result<()> {
        let Some(Item::Dict(dict)) = from.checked_sub(1).and_then(|d| self.stack.get(d)) else {
            return Err(self.ops.corrupt(at, "items set on something that is not a dict"));
        };
        let dict = *dict;
        let items = &self.stack[from..];
        if !items.len().is_multiple_of(2) {
            return Err(self.ops.corrupt(at, "odd number of items for a dict"));
        }
        for pair in items.chunks_exact(2) {
            let Item::Str(key) = pair[0] else {
                return Err(Error::unsupported("folder index has a key that is not a string"));
            };
            if !matches!(pair[1], Item::Int(_) | Item::Dict(_)) {
                return Err(Error::unsupported(format!(
                    "folder index entry {:?} is neither a record index nor a directory",
                    self.str(key)
                )));
            }
            self.set.push(SetItem { dict, key, value: pair[1] });
        }
        self.stack.truncate(from);
        Ok(())
    }

    fn run(&mut self) -> Result<Item> {
        loop {
            let (at, op) = self.ops.next_op()?;
            match op {
                Op::Proto(p) => {
                    if !(2..=5).contains(&p) {
                        return Err(Error::unsupported(format!(
                            "pickle protocol {p} (2 to 5 are read)"
                        )));
                    }
                }
                Op::Frame(_) => {}
                Op::Text { at: start, bytes } => {
                    std::str::from_utf8(bytes)
                        .map_err(|_| self.ops.corrupt(at, "a name is not valid UTF-8"))?;
                    // The input is at most 4 GiB (checked before parsing).
                    self.strings.push((start as u32, bytes.len() as u32));
                    self.stack.push(Item::Str(self.strings.len() as u32 - 1));
                }
                Op::Memoize => {
                    let item = self.top()?;
                    self.memo.push(item);
                }
                Op::Put(idx) => {
                    let item = self.top()?;
                    let defined = self.memo.len();
                    match self.memo.get_mut(idx as usize) {
                        Some(slot) => *slot = item,
                        None if idx as usize == defined => self.memo.push(item),
                        None => {
                            return Err(Error::unsupported(format!(
                                "folder index pickle stores memo entry {idx} before entry \
                                 {defined} (picklers number them in order)"
                            )));
                        }
                    }
                }
                Op::Get(idx) => {
                    let item = self.memo.get(idx as usize).copied().ok_or_else(|| {
                        self.ops.corrupt(at, format!("memo entry {idx} is not defined"))
                    })?;
                    self.stack.push(item);
                }
                Op::Global { module, name } => {
                    let m = String::from_utf8_lossy(module).into_owned();
                    let n = String::from_utf8_lossy(name).into_owned();
                    self.global(&m, &n)?;
                }
                Op::StackGlobal => {
                    let (Item::Str(name), Item::Str(module)) = (self.pop()?, self.pop()?) else {
                        return Err(self.ops.corrupt(at, "STACK_GLOBAL needs two strings"));
                    };
                    let (module, name) = (self.str(module), self.str(name));
                    self.global(module, name)?;
                }
                Op::EmptyTuple => self.stack.push(Item::EmptyTuple),
                Op::Reduce => {
                    let args = self.pop()?;
                    let callable = self.pop()?;
                    if !matches!((callable, args), (Item::OrderedDictClass, Item::EmptyTuple)) {
                        return Err(Error::unsupported(
                            "folder index pickle calls something other than OrderedDict()",
                        ));
                    }
                    self.new_dict();
                }
                Op::EmptyDict => self.new_dict(),
                Op::Mark => self.marks.push(self.stack.len() as u32),
                Op::SetItem => {
                    let from = self.stack.len().saturating_sub(2);
                    let floor = self.marks.last().map_or(0, |&m| m as usize);
                    if self.stack.len() < floor + 2 {
                        return Err(self.ops.corrupt(at, "stack underflow"));
                    }
                    self.set_items(at, from)?;
                }
                Op::SetItems => {
                    let mark = self
                        .marks
                        .pop()
                        .ok_or_else(|| self.ops.corrupt(at, "SETITEMS without MARK"))?;
                    self.set_items(at, mark as usize)?;
                }
                Op::Int(v) => self.push_int(v),
                Op::Long(b) => {
                    let v = long_to_i64(b).ok_or_else(|| {
                        Error::unsupported(format!(
                            "integer of {} bytes in folder index does not fit in 64 bits",
                            b.len()
                        ))
                    })?;
                    self.push_int(v);
                }
                Op::Stop => return self.pop(),
                other => {
                    return Err(Error::unsupported(format!(
                        "pickle opcode {} at byte {at} is outside the subset pack_folder writes",
                        op_name(&other)
                    )));
                }
            }
        }
    }

    fn push_int(&mut self, v: i64) {
        self.ints.push(v);
        self.stack.push(Item::Int(self.ints.len() as u32 - 1));
    }
}

/// The parsed dicts, ready to become the tree: each dict's items in the order set.
struct Dicts<'p, 'a> {
    parser: &'p Parser<'a>,
    /// `set` indices grouped by dict: dict `d`'s are `order[first[d]..first[d + 1]]`.
    order: Vec<u32>,
    first: Vec<u32>,
    /// Whether each dict has been placed in the tree (a dict may appear only once).
    placed: Vec<bool>,
    /// One `Arc` per string, made when first used, so names fetched from the memo share it.
    names: Vec<Option<Arc<str>>>,
    max_depth: u32,
}

impl Dicts<'_, '_> {
    fn new<'p, 'a>(parser: &'p Parser<'a>, max_depth: u32) -> Result<Dicts<'p, 'a>> {
        let dicts = parser.dicts as usize;
        let alloc = |n: usize| reel_core::try_vec_with_capacity::<u32>(n as u64, u64::MAX, WHAT);
        // A counting sort of the items by dict, keeping the order they were set in.
        let mut first = alloc(dicts + 1)?;
        first.resize(dicts + 1, 0);
        for s in &parser.set {
            first[s.dict as usize + 1] += 1;
        }
        for d in 0..dicts {
            first[d + 1] += first[d];
        }
        let mut next = first.clone();
        let mut order = alloc(parser.set.len())?;
        order.resize(parser.set.len(), 0);
        for (k, s) in parser.set.iter().enumerate() {
            let slot = &mut next[s.dict as usize];
            order[*slot as usize] = k as u32;
            *slot += 1;
        }
        let mut placed = reel_core::try_vec_with_capacity(dicts as u64, u64::MAX, WHAT)?;
        placed.resize(dicts, false);
        let mut names =
            reel_core::try_vec_with_capacity(parser.strings.len() as u64, u64::MAX, WHAT)?;
        names.resize(parser.strings.len(), None);
        Ok(Dicts { parser, order, first, placed, names, max_depth })
    }

    fn name(&mut self, id: u32) -> Arc<str> {
        let parser = self.parser;
        self.names[id as usize].get_or_insert_with(|| Arc::from(parser.str(id))).clone()
    }

    fn build(&mut self, dict: u32, depth: u32) -> Result<FolderDir> {
        if depth > self.max_depth {
            return Err(Error::new(
                ErrorKind::Limit,
                format!(
                    "folder index nests deeper than the limit of {} directories",
                    self.max_depth
                ),
            ));
        }
        let (from, to) =
            (self.first[dict as usize] as usize, self.first[dict as usize + 1] as usize);
        // A name set again keeps its first position and takes its last value (what
        // OrderedDict.__setitem__ does): only the last value of each name is built, so a
        // directory replaced by a later value is never placed.
        let mut last: HashMap<&str, usize> = HashMap::with_capacity(to - from);
        for k in from..to {
            let s = self.parser.set[self.order[k] as usize];
            last.insert(self.parser.str(s.key), k);
        }
        let mut dir = FolderDir::new();
        dir.entries.reserve(last.len());
        for k in from..to {
            let s = self.parser.set[self.order[k] as usize];
            let name = self.parser.str(s.key);
            if last.get(name) != Some(&k) {
                // Reserve the first position; the last value fills it.
                if !dir.entries.contains_key(name) {
                    dir.entries.insert(self.name(s.key), FolderEntry::File(0));
                }
                continue;
            }
            let entry = match s.value {
                Item::Int(i) => {
                    let i = self.parser.ints[i as usize];
                    FolderEntry::File(u64::try_from(i).map_err(|_| {
                        Error::corrupt(format!(
                            "folder index gives {name:?} the negative record index {i}"
                        ))
                    })?)
                }
                Item::Dict(child) => {
                    if std::mem::replace(&mut self.placed[child as usize], true) {
                        return Err(Error::unsupported(format!(
                            "folder index uses the same directory object twice (at {name:?})"
                        )));
                    }
                    FolderEntry::Dir(self.build(child, depth + 1)?)
                }
                _ => return Err(Error::corrupt("folder index holds an invalid entry")),
            };
            let key = self.name(s.key);
            dir.entries.insert(key, entry);
        }
        Ok(dir)
    }
}

/// A short name of an opcode for messages.
fn op_name(op: &Op<'_>) -> String {
    match op {
        Op::Other(code, name) => opcode_text(*code, name),
        other => format!("{other:?}").split(['(', ' ', '{']).next().unwrap_or("?").to_string(),
    }
}

/// Parses a folder index pickle into its root directory.
pub fn parse_folder_index(bytes: &[u8], max_depth: u32) -> Result<FolderDir> {
    if u32::try_from(bytes.len()).is_err() {
        return Err(Error::new(
            ErrorKind::Limit,
            format!("the folder index pickle is {} bytes; at most 4 GiB are read", bytes.len()),
        ));
    }
    let mut p = Parser {
        input: bytes,
        ops: OpReader::new(bytes, WHAT),
        stack: Vec::new(),
        marks: Vec::new(),
        memo: Vec::new(),
        strings: Vec::new(),
        ints: Vec::new(),
        dicts: 0,
        set: Vec::new(),
    };
    let Item::Dict(root) = p.run()? else {
        return Err(Error::unsupported("folder index pickle does not hold a dict"));
    };
    // What only parsing needed goes before the tree is built.
    p.stack = Vec::new();
    p.memo = Vec::new();
    p.marks = Vec::new();
    let mut dicts = Dicts::new(&p, max_depth)?;
    dicts.placed[root as usize] = true;
    dicts.build(root, 0)
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
        let entries = dir.entries.as_slice();
        for start in (0..entries.len()).step_by(BATCHSIZE) {
            let batch = &entries[start..(start + BATCHSIZE).min(entries.len())];
            if batch.len() == 1 {
                for (k, v) in batch {
                    self.save_str(k);
                    self.save_entry(v);
                }
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

#[cfg(test)]
mod scale_tests {
    use super::*;

    #[test]
    fn a_pickle_of_empty_dicts_parses_in_linear_memory() {
        // 4 MiB of EMPTY_DICT: 4 Mi stack items of 8 bytes, and the last dict is the result.
        let mut bytes = vec![0x80, 4];
        bytes.resize(4 << 20, b'}');
        bytes.push(b'.');
        assert!(parse_folder_index(&bytes, 64).unwrap().is_empty());
    }

    #[test]
    fn memo_entries_out_of_order_are_refused() {
        // BINPUT 5 with no entry 0..4: CPython's pickler never writes it.
        let bytes = b"\x80\x02}q\x05.";
        let e = parse_folder_index(bytes, 64).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
        assert!(e.message().contains("memo entry 5 before entry 0"), "{e}");
        // In order, and overwriting an entry, is fine.
        assert!(parse_folder_index(b"\x80\x02}q\x00q\x00.", 64).is_ok());
    }

    #[test]
    fn many_names_in_one_dict_parse_in_linear_time_and_repeats_replace_in_place() {
        let mut root = FolderDir::new();
        for i in 0..200_000u64 {
            root.insert(Arc::from(format!("f{i}").as_str()), FolderEntry::File(i));
        }
        assert!(matches!(root.get("f199999"), Some(FolderEntry::File(199_999))));
        let bytes = write_folder_index(&root);
        let t = std::time::Instant::now();
        let parsed = parse_folder_index(&bytes, 64).unwrap();
        assert!(t.elapsed() < std::time::Duration::from_secs(5), "{:?}", t.elapsed());
        assert_eq!(parsed.len(), 200_000);
        assert_eq!(parsed, root);
        // SETITEM of an existing name: first position, last value.
        let mut bytes = vec![0x80, 4, b'}', 0x8c, 1, b'a', b'K', 1, b's', 0x8c, 1, b'b', b'K', 2];
        bytes.extend_from_slice(&[b's', 0x8c, 1, b'a', b'K', 3, b's', b'.']);
        let dir = parse_folder_index(&bytes, 64).unwrap();
        let entries: Vec<_> = dir.entries().map(|(k, v)| (&**k, v.clone())).collect();
        assert_eq!(entries, [("a", FolderEntry::File(3)), ("b", FolderEntry::File(2))]);
        // A directory replaced by a later value is not placed, so it may be set again.
        let mut bytes = vec![0x80, 4, b'}', 0x8c, 1, b'a', b'}', 0x94, b's'];
        bytes
            .extend_from_slice(&[0x8c, 1, b'a', b'K', 7, b's', 0x8c, 1, b'b', b'h', 0, b's', b'.']);
        let dir = parse_folder_index(&bytes, 64).unwrap();
        assert_eq!(dir.get("a"), Some(&FolderEntry::File(7)));
        assert_eq!(dir.get("b"), Some(&FolderEntry::Dir(FolderDir::new())));
    }

    #[test]
    fn directories_compare_in_order() {
        let mut ab = FolderDir::new();
        ab.insert("a".into(), FolderEntry::File(0));
        ab.insert("b".into(), FolderEntry::File(1));
        let mut ba = FolderDir::new();
        ba.insert("b".into(), FolderEntry::File(1));
        ba.insert("a".into(), FolderEntry::File(0));
        assert_ne!(ab, ba);
        ba.insert("a".into(), FolderEntry::File(5));
        assert_eq!(ba.get("a"), Some(&FolderEntry::File(5)));
        assert_eq!(ba.entries().next().map(|(k, _)| &**k), Some("b"));
    }
}
