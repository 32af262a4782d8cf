//! Reading part of a datapoint: some keys, and for sequence keys a range of items.

use std::ops::Range;

use reel_core::FieldName;

/// Which keys (and which items of sequence keys) to read — the reference's `reader[i, keys]`
/// (current layout) and `reader[i, {key: True | range(a, b)}]` (refs-based datasets).
///
/// Keys not named are not read: their bytes are not even fetched. Fields come back in spec
/// order whatever order the mask names them in.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GranularMask {
    pub(crate) entries: Vec<(String, Items)>,
}

/// What to read of one key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Items {
    /// The whole value (every item of a sequence).
    All,
    /// Items `start..end` of a sequence key, clamped to the items the datapoint has; read
    /// with a single contiguous read. Only valid for sequence (`type[]`) keys.
    Range(Range<u64>),
}

impl GranularMask {
    /// A mask that selects nothing.
    pub fn new() -> Self {
        GranularMask::default()
    }

    /// A mask selecting each of `keys` whole.
    pub fn keys<S: Into<String>>(keys: impl IntoIterator<Item = S>) -> Self {
        let mut m = GranularMask::new();
        for k in keys {
            m = m.key(k);
        }
        m
    }

    /// Selects `key` whole.
    pub fn key(mut self, key: impl Into<String>) -> Self {
        self.set(key.into(), Items::All);
        self
    }

    /// Selects items `range` of the sequence key `key`.
    pub fn items(mut self, key: impl Into<String>, range: Range<u64>) -> Self {
        self.set(key.into(), Items::Range(range));
        self
    }

    fn set(&mut self, key: String, items: Items) {
        match self.entries.iter_mut().find(|(k, _)| *k == key) {
            Some(e) => e.1 = items,
            None => self.entries.push((key, items)),
        }
    }

    /// The selected keys and what to read of each.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&str, &Items)> + '_ {
        self.entries.iter().map(|(k, i)| (k.as_str(), i))
    }
}

/// What a datapoint has of one key (the reference's `available(i)`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Available {
    /// The key.
    pub key: FieldName,
    /// `None` for a scalar key; `Some(0..count)` for a sequence key.
    pub items: Option<Range<u64>>,
}

/// A mask resolved against a spec: column numbers in spec order.
#[derive(Clone, Debug, Default)]
pub(crate) struct Selection {
    pub(crate) picks: Vec<Pick>,
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct Pick {
    pub(crate) col: usize,
    /// Items `start..end` of a sequence (`None`: all of them, or a scalar).
    pub(crate) range: Option<(u64, u64)>,
}

impl Selection {
    /// The whole value of each column whose flag is set, in column order.
    pub(crate) fn of(selected: &[bool]) -> Self {
        let picks = selected.iter().enumerate().filter(|(_, on)| **on);
        Selection { picks: picks.map(|(col, _)| Pick { col, range: None }).collect() }
    }
}
