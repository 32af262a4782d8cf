//! The `.gmeta` file: reading its index, and rewriting it the way gulpio2 does.
//!
//! A `.gmeta` is a JSON object mapping each item id to
//! `{"frame_info": [[loc, pad, length], ...], "meta_data": [dict, ...]}`. Readers need the
//! frame table and where each item's `meta_data` sits in the text ([`parse_index`], no tree
//! built for the metadata); writers appending to a chunk need the whole document as Python
//! would hold it, to write it back exactly ([`MetaDoc`]).

use std::collections::HashMap;
use std::ops::Range;

use reel_core::{Error, Result};

use crate::json::{JsonStr, JsonValue, Parser, parse_json, write_python_json, write_str};

/// Where one frame is in a chunk's data file: one `[loc, pad, length]` triple of the
/// `.gmeta` (the reference's `ImgInfo`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FrameInfo {
    /// Byte offset of the frame's record in the `.gulp` file.
    pub loc: u64,
    /// Zero bytes after the JPEG (0–3 as the reference writes them).
    pub pad: u64,
    /// Record length, padding included.
    pub length: u64,
}

impl FrameInfo {
    /// Length of the JPEG itself (`length - pad`).
    pub fn jpeg_len(&self) -> u64 {
        self.length.saturating_sub(self.pad)
    }

    /// One past the record's last byte, `None` on overflow.
    pub fn end(&self) -> Option<u64> {
        self.loc.checked_add(self.length)
    }
}

/// One item of a chunk's index.
#[derive(Debug)]
pub(crate) struct IndexEntry {
    pub id: JsonStr,
    pub frames: Vec<FrameInfo>,
    /// The bytes of the `meta_data` list in the meta text.
    pub meta_span: Range<usize>,
    /// Number of elements in `meta_data`.
    pub meta_count: usize,
}

/// Reads the index of a `.gmeta` text: items in file order (an id given twice keeps its
/// first position and its last entry, as Python's `OrderedDict` does), each with its frame
/// table and the location of its `meta_data`. The metadata is fully validated but not kept.
///
/// Everything the readers rely on is checked here: the top level is an object of objects,
/// each with a `frame_info` list of three non-negative integers per frame (padding not
/// larger than the record) and a `meta_data` list.
pub(crate) fn parse_index(text: &str, max_depth: u32) -> Result<Vec<IndexEntry>> {
    let mut p = Parser::new(text, max_depth);
    p.skip_ws();
    let depth = p.begin_object(0)?;
    let mut entries: Vec<IndexEntry> = Vec::new();
    let mut position: HashMap<JsonStr, usize> = HashMap::new();
    let mut first = true;
    while let Some(id) = p.next_key(&mut first)? {
        let entry = parse_entry(&mut p, depth, id)?;
        match position.get(&entry.id) {
            Some(&at) => entries[at] = entry,
            None => {
                position.insert(entry.id.clone(), entries.len());
                entries.push(entry);
            }
        }
    }
    p.finish()?;
    Ok(entries)
}

fn parse_entry(p: &mut Parser<'_>, depth: u32, id: JsonStr) -> Result<IndexEntry> {
    let at = p.pos();
    let shape_error = |what: &str| {
        Error::corrupt(format!("the entry of id {:?} {what}", id.to_str_lossy()))
            .with_offset(at as u64)
    };
    let depth = p.begin_object(depth).map_err(|_| shape_error("is not an object"))?;
    let mut frames = None;
    let mut meta = None;
    let mut first = true;
    while let Some(key) = p.next_key(&mut first)? {
        match key.as_str() {
            Some("frame_info") => frames = Some(parse_frame_info(p, depth)?),
            Some("meta_data") => {
                let start = p.pos();
                match p.parse_value(depth)? {
                    JsonValue::Array(items) => meta = Some((start..p.pos(), items.len())),
                    _ => return Err(shape_error("has a meta_data that is not a list")),
                }
            }
            // Keys the reference does not write are kept by Python and ignored by readers.
            _ => drop(p.parse_value(depth)?),
        }
    }
    let frames = frames.ok_or_else(|| shape_error("has no frame_info"))?;
    let (meta_span, meta_count) = meta.ok_or_else(|| shape_error("has no meta_data"))?;
    Ok(IndexEntry { id, frames, meta_span, meta_count })
}

fn parse_frame_info(p: &mut Parser<'_>, depth: u32) -> Result<Vec<FrameInfo>> {
    let depth = p.begin_array(depth)?;
    let mut frames = Vec::new();
    let mut first = true;
    while p.next_element(&mut first)? {
        let at = p.pos();
        let bad = || {
            Error::corrupt("a frame_info entry is not [loc, pad, length]").with_offset(at as u64)
        };
        p.begin_array(depth).map_err(|_| bad())?;
        let mut values = [0u64; 3];
        let mut n = 0;
        let mut inner_first = true;
        while p.next_element(&mut inner_first)? {
            let slot = values.get_mut(n).ok_or_else(bad)?;
            *slot = p.parse_index_int("a frame_info field")?;
            n += 1;
        }
        if n != 3 {
            return Err(bad());
        }
        let [loc, pad, length] = values;
        if pad > length {
            return Err(Error::corrupt(format!(
                "a frame_info entry has {pad} padding bytes in a record of {length} bytes"
            ))
            .with_offset(at as u64));
        }
        frames.push(FrameInfo { loc, pad, length });
    }
    Ok(frames)
}

/// A chunk's whole `.gmeta` document as gulpio2 holds it in memory (an ordered mapping of
/// id to entry), for writers: entries are appended to or extended in place, then the text
/// is written back exactly as Python's `json.dump` would write the same mapping.
#[derive(Debug, Default)]
pub(crate) struct MetaDoc {
    /// Each id with its entry's keys and values in order.
    entries: Vec<(JsonStr, Vec<(JsonStr, JsonValue)>)>,
    position: HashMap<JsonStr, usize>,
}

impl MetaDoc {
    /// Reads an existing `.gmeta`.
    pub(crate) fn parse(text: &str, max_depth: u32) -> Result<Self> {
        let JsonValue::Object(pairs) = parse_json(text, max_depth)? else {
            return Err(Error::corrupt("the metadata is not a JSON object"));
        };
        let mut entries = Vec::with_capacity(pairs.len());
        for (id, entry) in pairs {
            let JsonValue::Object(fields) = entry else {
                return Err(Error::corrupt(format!(
                    "the entry of id {:?} is not an object",
                    id.to_str_lossy()
                )));
            };
            entries.push((id, fields));
        }
        let position = entries.iter().enumerate().map(|(k, (id, _))| (id.clone(), k)).collect();
        Ok(MetaDoc { entries, position })
    }

    /// Number of items.
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// The ids in order (with U+FFFD for unpaired surrogates).
    pub(crate) fn ids(&self) -> Vec<String> {
        self.entries.iter().map(|(id, _)| id.to_str_lossy().into_owned()).collect()
    }

    /// The entry of `id`, created as `{"frame_info": [], "meta_data": []}` when missing.
    fn entry(&mut self, id: &JsonStr) -> &mut Vec<(JsonStr, JsonValue)> {
        let at = match self.position.get(id) {
            Some(&at) => at,
            None => {
                let empty = vec![
                    (JsonStr::from("frame_info"), JsonValue::Array(Vec::new())),
                    (JsonStr::from("meta_data"), JsonValue::Array(Vec::new())),
                ];
                self.position.insert(id.clone(), self.entries.len());
                self.entries.push((id.clone(), empty));
                self.entries.len() - 1
            }
        };
        &mut self.entries[at].1
    }

    fn list<'a>(&'a mut self, id: &JsonStr, key: &str) -> Result<&'a mut Vec<JsonValue>> {
        let entry = self.entry(id);
        match entry.iter_mut().find(|(k, _)| k.as_str() == Some(key)) {
            Some((_, JsonValue::Array(items))) => Ok(items),
            _ => Err(Error::corrupt(format!(
                "the entry of id {:?} has no {key} list to append to",
                id.to_str_lossy()
            ))),
        }
    }

    /// Appends a `meta_data` element to `id` (creating the entry), like the reference's
    /// `_append_meta`.
    pub(crate) fn append_meta(&mut self, id: &JsonStr, meta: JsonValue) -> Result<()> {
        self.list(id, "meta_data")?.push(meta);
        Ok(())
    }

    /// Appends a frame to `id`'s `frame_info` (creating the entry).
    pub(crate) fn append_frame(&mut self, id: &JsonStr, frame: FrameInfo) -> Result<()> {
        self.list(id, "frame_info")?.push(JsonValue::Array(vec![
            JsonValue::from_u64(frame.loc),
            JsonValue::from_u64(frame.pad),
            JsonValue::from_u64(frame.length),
        ]));
        Ok(())
    }

    /// The text gulpio2 writes for this document.
    pub(crate) fn to_text(&self) -> String {
        let mut out = String::from("{");
        for (k, (id, fields)) in self.entries.iter().enumerate() {
            if k > 0 {
                out.push_str(", ");
            }
            write_str(id, &mut out);
            out.push_str(": {");
            for (j, (key, value)) in fields.iter().enumerate() {
                if j > 0 {
                    out.push_str(", ");
                }
                write_str(key, &mut out);
                out.push_str(": ");
                write_python_json(value, &mut out);
            }
            out.push('}');
        }
        out.push('}');
        out
    }
}
