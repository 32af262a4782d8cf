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

use reel_core::pickle::{Op, OpReader, long_to_i64};
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

#[derive(Clone, Debug)]
enum Item {
    Str(Arc<str>),
    Int(i64),
    Dict(usize),
    OrderedDictClass,
    EmptyTuple,
}

struct Parser<'a> {
    ops: OpReader<'a>,
    stack: Vec<Item>,
    marks: Vec<usize>,
    memo: HashMap<u32, Item>,
    /// Every dict's entries in the order they were set; a name set twice is resolved when
    /// the tree is built, so setting an item is O(1) instead of a scan of its dict.
    dicts: Vec<Vec<(Arc<str>, Item)>>,
    /// Bytes held by strings, dicts, dict entries and memo entries so far.
    held: usize,
    /// The most the parser may hold: [`MEMORY_PER_BYTE`] per input byte plus a fixed slack.
    budget: usize,
    /// The input's length, for messages.
    input_len: usize,
}

/// How many bytes of memory the parser may hold per byte of input. A pickle written by
/// `pack_folder` needs about 13 (one-letter names, each a dict entry and a memo entry); a
/// crafted one made of nothing but `EMPTY_DICT` opcodes would need 48 and is refused.
const MEMORY_PER_BYTE: usize = 24;

/// What the budget counts for one memo entry (a hash-map slot), one dict and one entry.
const MEMO_ENTRY: usize = 48;
const DICT: usize = std::mem::size_of::<Vec<(Arc<str>, Item)>>();
const DICT_ENTRY: usize = std::mem::size_of::<(Arc<str>, Item)>();

impl Parser<'_> {
    /// Checks all the parser holds (the stack and marks included) against the budget, so
    /// that memory stays linear in the input's size.
    fn within_budget(&self, at: usize) -> Result<()> {
        let live = self.held
            + self.stack.len() * std::mem::size_of::<Item>()
            + self.marks.len() * std::mem::size_of::<usize>();
        if live > self.budget {
            return Err(Error::new(
                ErrorKind::Limit,
                format!(
                    "the folder index pickle ({} bytes) needs more than {MEMORY_PER_BYTE} bytes \
                     of memory per byte to parse (stopped at byte {at})",
                    self.input_len
                ),
            ));
        }
        Ok(())
    }

    fn corrupt(&self, what: impl std::fmt::Display) -> Error {
        self.ops.corrupt(self.ops.position(), what)
    }

    fn pop(&mut self) -> Result<Item> {
        let floor = self.marks.last().copied().unwrap_or(0);
        if self.stack.len() <= floor {
            return Err(self.corrupt("stack underflow"));
        }
        self.stack.pop().ok_or_else(|| self.corrupt("stack underflow"))
    }

    fn top(&self) -> Result<&Item> {
        self.stack.last().ok_or_else(|| self.corrupt("stack underflow"))
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
            return Err(self.corrupt("items set on something that is not a dict"));
        };
        if items.len() % 2 != 0 {
            return Err(self.corrupt("odd number of items for a dict"));
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
            self.held += DICT_ENTRY;
            self.dicts[id].push((k, v));
        }
        Ok(())
    }

    fn run(&mut self) -> Result<Item> {
        loop {
            let (at, op) = self.ops.next_op()?;
            self.within_budget(at)?;
            match op {
                Op::Proto(p) => {
                    if !(2..=5).contains(&p) {
                        return Err(Error::unsupported(format!(
                            "pickle protocol {p} (2 to 5 are read)"
                        )));
                    }
                }
                Op::Frame(_) => {}
                Op::Text { bytes, .. } => {
                    let s = std::str::from_utf8(bytes)
                        .map_err(|_| self.ops.corrupt(at, "a name is not valid UTF-8"))?;
                    self.held += 16 + s.len();
                    self.stack.push(Item::Str(Arc::from(s)));
                }
                Op::Memoize => {
                    let item = self.top()?.clone();
                    let idx = self.memo.len() as u32;
                    self.held += MEMO_ENTRY;
                    self.memo.insert(idx, item);
                }
                Op::Put(idx) => {
                    let item = self.top()?.clone();
                    self.held += MEMO_ENTRY;
                    self.memo.insert(idx, item);
                }
                Op::Get(idx) => {
                    let item = self.memo.get(&idx).cloned().ok_or_else(|| {
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
                    self.global(&module, &name)?;
                }
                Op::EmptyTuple => self.stack.push(Item::EmptyTuple),
                Op::Reduce => {
                    let args = self.pop()?;
                    let callable = self.pop()?;
                    if !matches!((&callable, &args), (Item::OrderedDictClass, Item::EmptyTuple)) {
                        return Err(Error::unsupported(
                            "folder index pickle calls something other than OrderedDict()",
                        ));
                    }
                    self.held += DICT;
                    self.dicts.push(Vec::new());
                    self.stack.push(Item::Dict(self.dicts.len() - 1));
                }
                Op::EmptyDict => {
                    self.held += DICT;
                    self.dicts.push(Vec::new());
                    self.stack.push(Item::Dict(self.dicts.len() - 1));
                }
                Op::Mark => self.marks.push(self.stack.len()),
                Op::SetItem => {
                    let v = self.pop()?;
                    let k = self.pop()?;
                    let dict_pos = self
                        .stack
                        .len()
                        .checked_sub(1)
                        .ok_or_else(|| self.ops.corrupt(at, "SETITEM without a dict"))?;
                    self.set_items(dict_pos, vec![k, v])?;
                }
                Op::SetItems => {
                    let mark = self
                        .marks
                        .pop()
                        .ok_or_else(|| self.ops.corrupt(at, "SETITEMS without MARK"))?;
                    let items = self.stack.split_off(mark);
                    let dict_pos = mark
                        .checked_sub(1)
                        .ok_or_else(|| self.ops.corrupt(at, "SETITEMS without a dict"))?;
                    self.set_items(dict_pos, items)?;
                }
                Op::Int(v) => self.stack.push(Item::Int(v)),
                Op::Long(b) => {
                    let v = long_to_i64(b).ok_or_else(|| {
                        Error::unsupported(format!(
                            "integer of {} bytes in folder index does not fit in 64 bits",
                            b.len()
                        ))
                    })?;
                    self.stack.push(Item::Int(v));
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
        // A name set again keeps its first position and takes its last value (what
        // OrderedDict.__setitem__ does).
        let set = &self.dicts[id];
        let mut last: HashMap<&str, usize> = HashMap::with_capacity(set.len());
        for (k, (name, _)) in set.iter().enumerate() {
            last.insert(name, k);
        }
        let mut built: std::collections::HashSet<&str> =
            std::collections::HashSet::with_capacity(last.len());
        for (name, _) in set {
            if !built.insert(name) {
                continue;
            }
            let item = &set[last[&**name]].1;
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

/// A short name of an opcode for messages.
fn op_name(op: &Op<'_>) -> String {
    match op {
        Op::Other(code, name) => format!("{name} ({code:#04x})"),
        other => format!("{other:?}").split(['(', ' ', '{']).next().unwrap_or("?").to_string(),
    }
}

/// Parses a folder index pickle into its root directory.
pub fn parse_folder_index(bytes: &[u8], max_depth: u32) -> Result<FolderDir> {
    let mut p = Parser {
        ops: OpReader::new(bytes, WHAT),
        stack: Vec::new(),
        marks: Vec::new(),
        memo: HashMap::new(),
        dicts: Vec::new(),
        held: 0,
        budget: bytes.len().saturating_mul(MEMORY_PER_BYTE).saturating_add(1 << 20),
        input_len: bytes.len(),
    };
    let Item::Dict(root) = p.run()? else {
        return Err(Error::unsupported("folder index pickle does not hold a dict"));
    };
    let mut placed =
        reel_core::try_vec_with_capacity(p.dicts.len() as u64, u64::MAX, "the folder index")?;
    placed.resize(p.dicts.len(), false);
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

#[cfg(test)]
mod budget_tests {
    use super::*;

    #[test]
    fn a_pickle_of_empty_dicts_is_refused_by_its_memory_budget() {
        // 4 MiB of EMPTY_DICT would need 48 bytes of memory per byte.
        let mut bytes = vec![0x80, 4];
        bytes.resize(4 << 20, b'}');
        let e = parse_folder_index(&bytes, 64).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Limit, "{e}");
        assert!(e.message().contains("bytes of memory per byte"), "{e}");
    }

    #[test]
    fn many_names_in_one_dict_parse_in_linear_time_and_repeats_replace_in_place() {
        let mut root = FolderDir::new();
        for i in 0..20_000u64 {
            root.insert(Arc::from(format!("f{i}").as_str()), FolderEntry::File(i));
        }
        let bytes = write_folder_index(&root);
        let t = std::time::Instant::now();
        let parsed = parse_folder_index(&bytes, 64).unwrap();
        assert!(t.elapsed() < std::time::Duration::from_secs(5), "{:?}", t.elapsed());
        assert_eq!(parsed.entries().len(), 20_000);
        // SETITEM of an existing name: first position, last value.
        let mut bytes = vec![0x80, 4, b'}', 0x8c, 1, b'a', b'K', 1, b's', 0x8c, 1, b'b', b'K', 2];
        bytes.extend_from_slice(&[b's', 0x8c, 1, b'a', b'K', 3, b's', b'.']);
        let dir = parse_folder_index(&bytes, 64).unwrap();
        assert_eq!(
            dir.entries(),
            &[(Arc::from("a"), FolderEntry::File(3)), (Arc::from("b"), FolderEntry::File(2))]
        );
    }
}
