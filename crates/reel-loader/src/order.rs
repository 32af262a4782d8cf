//! The order of one epoch: which record sits at each position.

use std::sync::{Arc, Mutex, PoisonError};

use serde::{Deserialize, Serialize};

use crate::NumpyRng;
use crate::feistel::{FeistelPermutation, splitmix64};

/// How the records of each epoch are ordered.
///
/// Every mode is a function of `(seed, epoch, dataset length)` only — not of the batch
/// size, the world size, the worker count or the history of the run — which is what makes
/// sharding elastic and resuming exact.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Shuffle {
    /// Index order, every epoch the same.
    #[default]
    None,
    /// A pseudo-random permutation per epoch from a keyed Feistel network with cycle
    /// walking ([`FeistelPermutation`]), keyed by `(seed, epoch)`. O(1) memory and O(1)
    /// time per position, whatever the dataset size: nothing is materialised, so jumping
    /// to any position of any epoch (resuming) costs nothing.
    Feistel,
    /// Granular's order: numpy's `default_rng([seed, epoch]).permutation(len)`, bit for bit
    /// (`granular.md` §9.3). With seed 0 this is the order of Granular ≥ 0.21's `Epochs`
    /// source (which ignores its seed argument); with seed `s` it is the order of Granular
    /// 0.12–0.20's `Loader(..., seed=s)`. The permutation is materialised: O(len) memory
    /// (4 bytes per record below 2³² records) and O(len) time once per epoch.
    Granular,
}

impl Shuffle {
    /// The order of epoch `epoch` of a dataset of `len` records.
    pub fn epoch_order(self, seed: u64, epoch: u64, len: u64) -> EpochOrder {
        match self {
            Shuffle::None => EpochOrder::Identity { len },
            Shuffle::Feistel => {
                EpochOrder::Feistel(FeistelPermutation::new(len, feistel_key(seed, epoch)))
            }
            Shuffle::Granular => {
                EpochOrder::Table(Arc::new(PermutationTable::granular(len, seed, epoch)))
            }
        }
    }

    /// The name used in [`LoaderState`](crate::LoaderState) JSON.
    pub fn name(self) -> &'static str {
        match self {
            Shuffle::None => "none",
            Shuffle::Feistel => "feistel",
            Shuffle::Granular => "granular",
        }
    }
}

/// The Feistel key of an epoch: the seed and the epoch mixed so that neighbouring seeds
/// and neighbouring epochs give unrelated keys.
fn feistel_key(seed: u64, epoch: u64) -> u64 {
    let mut s = seed;
    let seed_word = splitmix64(&mut s);
    let mut e = epoch ^ seed_word;
    splitmix64(&mut e)
}

/// A materialised permutation (Granular mode), shared by the loader's workers.
#[derive(Debug)]
pub struct PermutationTable(Table);

/// Stored as narrowly as the dataset allows.
#[derive(Debug)]
enum Table {
    Narrow(Vec<u32>),
    Wide(Vec<u64>),
}

impl PermutationTable {
    fn granular(len: u64, seed: u64, epoch: u64) -> Self {
        let mut rng = NumpyRng::new(&[seed, epoch]);
        if len <= 1 << 32 {
            // Indices below 2^32 fit in u32; the draws depend only on positions, so
            // shuffling narrow values gives the same permutation as numpy's int64 array.
            let mut v: Vec<u32> = (0..len).map(|i| i as u32).collect();
            rng.shuffle(&mut v);
            PermutationTable(Table::Narrow(v))
        } else {
            let mut v: Vec<u64> = (0..len).collect();
            rng.shuffle(&mut v);
            PermutationTable(Table::Wide(v))
        }
    }

    fn get(&self, position: u64) -> u64 {
        match &self.0 {
            Table::Narrow(v) => v.get(position as usize).map_or(position, |&i| i.into()),
            Table::Wide(v) => v.get(position as usize).copied().unwrap_or(position),
        }
    }
}

/// The order of one epoch: [`index_at`](Self::index_at) maps a position `0..len` of the
/// epoch to the record read there. Cheap to clone.
#[derive(Clone, Debug)]
pub enum EpochOrder {
    /// Position `p` reads record `p`.
    Identity {
        /// Records in the epoch.
        len: u64,
    },
    /// A keyed Feistel permutation.
    Feistel(FeistelPermutation),
    /// A materialised permutation (Granular mode).
    Table(Arc<PermutationTable>),
}

impl EpochOrder {
    /// The record at position `position` of the epoch (`position < len`; other positions
    /// are returned unchanged).
    pub fn index_at(&self, position: u64) -> u64 {
        match self {
            EpochOrder::Identity { .. } => position,
            EpochOrder::Feistel(p) => p.apply(position),
            EpochOrder::Table(t) => t.get(position),
        }
    }
}

/// Epoch orders for the loader's workers, with the last two materialised permutations
/// kept so that workers straddling an epoch boundary do not recompute them.
pub(crate) struct OrderCache {
    shuffle: Shuffle,
    seed: u64,
    len: u64,
    tables: Mutex<Vec<(u64, Arc<PermutationTable>)>>,
}

impl OrderCache {
    pub(crate) fn new(shuffle: Shuffle, seed: u64, len: u64) -> Self {
        OrderCache { shuffle, seed, len, tables: Mutex::new(Vec::with_capacity(2)) }
    }

    pub(crate) fn epoch(&self, epoch: u64) -> EpochOrder {
        if self.shuffle != Shuffle::Granular {
            return self.shuffle.epoch_order(self.seed, epoch, self.len);
        }
        // Computed under the lock: a second worker wanting the same epoch waits instead
        // of computing it again.
        let mut tables = self.tables.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((_, t)) = tables.iter().find(|(e, _)| *e == epoch) {
            return EpochOrder::Table(t.clone());
        }
        let table = Arc::new(PermutationTable::granular(self.len, self.seed, epoch));
        if tables.len() >= 2 {
            // Evict the older epoch.
            let oldest = usize::from(tables[1].0 < tables[0].0);
            tables.remove(oldest);
        }
        tables.push((epoch, table.clone()));
        EpochOrder::Table(table)
    }
}
