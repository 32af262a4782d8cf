//! Finding the files of a dataset: which generation it is, its shards and its column bags.
//!
//! There is no version marker in any Granular file, so the generation is told from which
//! files exist (spec §1): `refs.bag` without `<key>.idx` files is a refs-based dataset
//! (bags 0.5 – granular 0.21), `<key>.idx` files without `refs.bag` the current layout.
//! A directory without `spec.json` whose sub-directories are named `000000`, `000001`, …
//! is a sharded dataset.

use std::path::{Path, PathBuf};

use reel_core::{Error, ErrorKind, Result, Store};

use crate::spec::{GranularSpec, check_key_is_file_name};

/// The layout generation of a dataset directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Generation {
    /// `refs.bag` plus one single-file bag per key (bags 0.5 – granular 0.21); sequences
    /// (`type[]`) are possible.
    Refs,
    /// `<key>.bag` + `<key>.idx` per key, no `refs.bag` (granular ≥ 0.22).
    Indexed,
}

impl Generation {
    /// A short description for messages.
    pub fn describe(self) -> &'static str {
        match self {
            Generation::Refs => "refs.bag with single-file bags (bags 0.5 – granular 0.21)",
            Generation::Indexed => "per-key .bag + .idx files (granular 0.22+)",
        }
    }
}

/// The files of one dataset directory, as numbered in a [`DatasetFiles`] set.
#[derive(Clone, Debug)]
pub struct ShardFiles {
    /// The dataset directory.
    pub dir: PathBuf,
    /// Its generation.
    pub generation: Generation,
    /// File number of `spec.json`.
    pub spec: u32,
    /// File number of `refs.bag` (refs-based datasets).
    pub refs: Option<u32>,
    /// One entry per spec key, in spec order.
    pub columns: Vec<ColumnFiles>,
}

/// The files of one column.
#[derive(Clone, Debug)]
pub struct ColumnFiles {
    /// The spec key.
    pub key: String,
    /// File number of `<key>.bag`.
    pub bag: u32,
    /// File number of `<key>.idx` (current layout only).
    pub idx: Option<u32>,
}

/// Every file a dataset (possibly sharded) is read from, numbered for a
/// [`ReadAt`](reel_core::ReadAt) set.
#[derive(Clone, Debug)]
pub struct DatasetFiles {
    root: PathBuf,
    sharded: bool,
    shards: Vec<ShardFiles>,
    paths: Vec<PathBuf>,
}

/// Which shards of a sharded dataset to read: `start, start + step, …` (the reference's
/// `shardstart`/`shardstep`, for splitting a dataset between readers).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShardSelection {
    /// First shard.
    pub start: usize,
    /// Distance between selected shards (at least 1).
    pub step: usize,
}

impl Default for ShardSelection {
    fn default() -> Self {
        ShardSelection { start: 0, step: 1 }
    }
}

impl DatasetFiles {
    /// Finds the files of the dataset at `path`: a dataset directory or a sharded root.
    /// `generation` overrides detection.
    pub fn discover(
        path: &Path,
        generation: Option<Generation>,
        shards: ShardSelection,
    ) -> Result<Self> {
        Self::discover_in(&reel_core::LocalStore, path, generation, shards)
    }

    /// [`discover`](Self::discover) for a dataset in `store`.
    pub fn discover_in(
        store: &dyn Store,
        path: &Path,
        generation: Option<Generation>,
        shards: ShardSelection,
    ) -> Result<Self> {
        if store.stat(path)? != reel_core::paths::InputKind::Dir {
            return Err(Error::invalid_input(
                "a Granular dataset is a directory (open a single .bag file with BagReader)",
            )
            .with_path(path));
        }
        let mut set = DatasetFiles {
            root: path.to_path_buf(),
            sharded: false,
            shards: Vec::new(),
            paths: Vec::new(),
        };
        // Any entry named spec.json (even a FIFO or a directory) makes this a dataset
        // directory, so that reading it reports what is wrong with it.
        if store.exists(&path.join("spec.json")) {
            set.add_shard(store, path, generation)?;
            return Ok(set);
        }
        let all = shard_dirs(store, path)?;
        if all.is_empty() {
            set.add_shard(store, path, generation)?;
            return Ok(set);
        }
        set.sharded = true;
        if shards.step == 0 {
            return Err(Error::invalid_input("the shard step must be at least 1"));
        }
        let selected: Vec<_> = all.iter().skip(shards.start).step_by(shards.step).collect();
        if selected.is_empty() {
            return Err(Error::invalid_input(format!(
                "no shard selected: the dataset has {} shards, the selection starts at {}",
                all.len(),
                shards.start
            ))
            .with_path(path));
        }
        for dir in selected {
            set.add_shard(store, dir, generation)?;
        }
        Ok(set)
    }

    /// The file layout of a dataset whose files are not on disk (for [`MemFiles`]-backed
    /// readers in tests and fuzzing): `spec` gives the keys, the paths are synthetic names
    /// under `root`. Fill the file set in [`paths`](Self::paths) order.
    ///
    /// [`MemFiles`]: reel_core::MemFiles
    pub fn in_memory(root: &Path, generation: Generation, spec: &GranularSpec) -> Result<Self> {
        let mut set = DatasetFiles {
            root: root.to_path_buf(),
            sharded: false,
            shards: Vec::new(),
            paths: Vec::new(),
        };
        set.push_shard(root, generation, spec)?;
        Ok(set)
    }

    fn add_shard(
        &mut self,
        store: &dyn Store,
        dir: &Path,
        generation: Option<Generation>,
    ) -> Result<()> {
        let spec_path = dir.join("spec.json");
        let limit = reel_core::Limits::default().max_metadata_bytes;
        let bytes = store.read_whole(&spec_path, limit, "spec.json")?;
        let spec = GranularSpec::parse(&bytes).map_err(|e| e.with_path(&spec_path))?;
        let generation = match generation {
            Some(g) => g,
            None => detect(store, dir, &spec)?,
        };
        self.push_shard(dir, generation, &spec)
    }

    fn push_shard(
        &mut self,
        dir: &Path,
        generation: Generation,
        spec: &GranularSpec,
    ) -> Result<()> {
        let add = |paths: &mut Vec<PathBuf>, p: PathBuf| {
            paths.push(p);
            (paths.len() - 1) as u32
        };
        let spec_file = add(&mut self.paths, dir.join("spec.json"));
        let refs = match generation {
            Generation::Refs => Some(add(&mut self.paths, dir.join("refs.bag"))),
            Generation::Indexed => None,
        };
        let mut columns = Vec::with_capacity(spec.len());
        for key in spec.keys() {
            check_key_is_file_name(key).map_err(|e| e.with_path(dir.join("spec.json")))?;
            let bag = add(&mut self.paths, dir.join(format!("{key}.bag")));
            let idx = match generation {
                Generation::Indexed => Some(add(&mut self.paths, dir.join(format!("{key}.idx")))),
                Generation::Refs => None,
            };
            columns.push(ColumnFiles { key: key.to_string(), bag, idx });
        }
        self.shards.push(ShardFiles {
            dir: dir.to_path_buf(),
            generation,
            spec: spec_file,
            refs,
            columns,
        });
        Ok(())
    }

    /// The path the dataset was opened from.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Whether the dataset is a sharded root.
    pub fn is_sharded(&self) -> bool {
        self.sharded
    }

    /// The selected shards (one for an unsharded dataset).
    pub fn shards(&self) -> &[ShardFiles] {
        &self.shards
    }

    /// Every file, in file-number order.
    pub fn paths(&self) -> &[PathBuf] {
        &self.paths
    }

    /// This set numbered again so that the files `first` picks come first (in their
    /// order), then the others: the set, and how many files `first` picked. A file set
    /// whose last files were not opened ([`PartlyOpen`](reel_core::PartlyOpen)) is read
    /// through it.
    pub fn with_first(&self, first: impl Fn(&Path) -> bool) -> (DatasetFiles, usize) {
        let picked: Vec<bool> = self.paths.iter().map(|p| first(p)).collect();
        let order: Vec<usize> = (0..self.paths.len())
            .filter(|&i| picked[i])
            .chain((0..self.paths.len()).filter(|&i| !picked[i]))
            .collect();
        let mut number = vec![0u32; self.paths.len()];
        for (new, &old) in order.iter().enumerate() {
            number[old] = new as u32;
        }
        let renumber = |old: u32| number[old as usize];
        let shards = self
            .shards
            .iter()
            .map(|shard| ShardFiles {
                dir: shard.dir.clone(),
                generation: shard.generation,
                spec: renumber(shard.spec),
                refs: shard.refs.map(renumber),
                columns: shard
                    .columns
                    .iter()
                    .map(|c| ColumnFiles {
                        key: c.key.clone(),
                        bag: renumber(c.bag),
                        idx: c.idx.map(renumber),
                    })
                    .collect(),
            })
            .collect();
        let set = DatasetFiles {
            root: self.root.clone(),
            sharded: self.sharded,
            shards,
            paths: order.iter().map(|&i| self.paths[i].clone()).collect(),
        };
        (set, picked.iter().filter(|on| **on).count())
    }
}

/// Tells the generation of a dataset directory from the files in it.
pub fn detect(store: &dyn Store, dir: &Path, spec: &GranularSpec) -> Result<Generation> {
    let refs = store.is_file(&dir.join("refs.bag"));
    let any_idx = spec.keys().any(|k| store.is_file(&dir.join(format!("{k}.idx"))));
    match (refs, any_idx) {
        (true, false) => Ok(Generation::Refs),
        // Bags without their indexes, and no refs.bag: the refs layout (whose bags have no
        // .idx files) lacking the file that lists its datapoints, rather than the indexed
        // layout lacking every index (which the error would name as the first .idx file).
        (false, false)
            if !spec.is_empty()
                && spec.keys().all(|k| store.is_file(&dir.join(format!("{k}.bag")))) =>
        {
            Err(Error::new(
                ErrorKind::NotFound,
                "refs.bag is missing: the directory has a .bag file for every key and no .idx \
                 file, the layout of bags 0.5 and granular 0.19-0.21, whose refs.bag lists \
                 the datapoints (or, in granular 0.22's layout, every .idx file is missing)",
            )
            .with_path(dir.join("refs.bag")))
        }
        (false, _) => Ok(Generation::Indexed),
        (true, true) => Err(Error::corrupt(
            "the directory has both refs.bag and .idx files, so its generation is ambiguous \
             (choose one with the generation option)",
        )
        .with_path(dir)),
    }
}

/// The shard folders of a sharded root, in order: every sub-directory named by decimal
/// digits. They must be numbered 0, 1, 2, … without gaps, as the reference's sharded reader
/// requires. Files beside them and hidden entries (a writer's staging folders) are skipped
/// (the reference takes every entry for a shard and fails on them).
pub fn shard_dirs(store: &dyn Store, root: &Path) -> Result<Vec<PathBuf>> {
    let mut numbered: Vec<(u64, PathBuf)> = Vec::new();
    for entry in store.list(root)? {
        let name = entry.name().into_owned();
        if name.starts_with('.') || !entry.is_dir {
            continue;
        }
        match name.parse::<u64>() {
            Ok(n) if name.bytes().all(|b| b.is_ascii_digit()) => numbered.push((n, entry.path)),
            _ => {
                return Err(Error::corrupt(format!(
                    "sharded dataset has a folder {name:?} that is not a shard number"
                ))
                .with_path(root));
            }
        }
    }
    numbered.sort();
    for (k, (n, p)) in numbered.iter().enumerate() {
        if *n != k as u64 {
            return Err(Error::corrupt(format!(
                "shard folders must be numbered 0, 1, 2, …; shard {k} is missing (next is {})",
                p.display()
            ))
            .with_path(root));
        }
    }
    Ok(numbered.into_iter().map(|(_, p)| p).collect())
}

/// The folder name of shard `n` (`000042`).
pub fn shard_name(n: u64) -> String {
    format!("{n:06}")
}
