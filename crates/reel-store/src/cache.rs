//! A local cache of object bytes, so that later epochs read from local disk instead of the
//! store.
//!
//! Objects are cached in fixed-size chunks ([`CacheSettings::chunk_bytes`]): chunk `i` of an
//! object holds its bytes `i * chunk_bytes ..` up to the next chunk or the object's end. A
//! chunk is one file, named by a hash of the object's identity (its URL, size and entity
//! tag, so a replaced object is never answered from the old one's chunks) and the chunk
//! number. Each file starts with a header that holds a CRC-32 of every block of
//! [`BLOCK_BYTES`], so a read of a few bytes checks only the blocks it touches, and a damaged
//! or truncated file is found, deleted and fetched again rather than returned.
//!
//! Several processes may share one directory (DataLoader workers, several jobs on one
//! machine): a chunk is written under a temporary name and renamed into place, so a reader
//! sees a whole file or none; the bytes in use are counted in a small `usage` file guarded by
//! an advisory lock (`flock`) on `lock`; and when a write takes the total past
//! [`CacheSettings::max_bytes`], the writer holding the lock deletes the least recently used
//! chunks (by modification time, which a read refreshes) until the total is 90 % of the
//! bound. A chunk deleted while another process reads it stays readable to that reader.

use std::fs::{self, File};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use reel_core::{Error, Result};
use sha2::{Digest, Sha256};

/// The environment variable naming a cache directory, used when the settings name none.
pub const CACHE_DIR_ENV: &str = "REEL_CACHE_DIR";
/// The environment variable bounding the cache's size (bytes, or with a `K`, `M`, `G` or `T`
/// suffix: powers of 1024), used with [`CACHE_DIR_ENV`].
pub const CACHE_SIZE_ENV: &str = "REEL_CACHE_SIZE";

/// Bytes per checksummed block of a chunk file.
pub const BLOCK_BYTES: u64 = 16 << 10;

const MAGIC: &[u8; 8] = b"REELCHK1";
/// Magic, chunk length, block count, then one CRC per block, then the header's own CRC.
const FIXED_HEADER: u64 = 8 + 8 + 4;

/// A local cache of fetched object bytes (see the [module documentation](self)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CacheSettings {
    /// The cache's directory (created when missing). Processes that share it share chunks.
    pub dir: PathBuf,
    /// The most bytes of chunk files the directory holds (after each write). Default 10 GiB.
    pub max_bytes: u64,
    /// Bytes per chunk, the unit fetched and kept. A record read that misses fetches the
    /// whole chunks it lies in, so the first pass over randomly ordered small records
    /// transfers more than they hold (each chunk once, while it stays cached); later passes
    /// read only the records' blocks from disk. Default 1 MiB.
    pub chunk_bytes: u64,
}

impl CacheSettings {
    /// A cache in `dir` with the default bound and chunk size.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        CacheSettings { dir: dir.into(), max_bytes: 10 << 30, chunk_bytes: 1 << 20 }
    }

    /// The cache a caller's options ask for: a directory `dir`, bounded by `max_bytes`
    /// (default 10 GiB), or none without a directory. A bound without a directory is refused
    /// rather than ignored: it would bound nothing.
    pub fn from_options(dir: Option<&Path>, max_bytes: Option<u64>) -> Result<Option<Self>> {
        match (dir, max_bytes) {
            (Some(dir), bound) => {
                let mut settings = CacheSettings::new(dir);
                if let Some(bound) = bound {
                    settings.max_bytes = bound;
                }
                Ok(Some(settings))
            }
            (None, Some(_)) => Err(Error::invalid_input(
                "a cache size needs a cache directory to bound (give both)",
            )),
            (None, None) => Ok(None),
        }
    }

    /// The cache the environment asks for: [`CACHE_DIR_ENV`] (none when unset or empty)
    /// and [`CACHE_SIZE_ENV`]. A size that does not parse is an error naming the variable.
    pub fn from_env() -> Result<Option<Self>> {
        let Some(dir) = std::env::var_os(CACHE_DIR_ENV).filter(|d| !d.is_empty()) else {
            return Ok(None);
        };
        let mut settings = CacheSettings::new(dir);
        if let Some(size) = std::env::var_os(CACHE_SIZE_ENV).filter(|s| !s.is_empty()) {
            let text = size.to_string_lossy();
            settings.max_bytes = parse_size(&text).ok_or_else(|| {
                Error::invalid_input(format!(
                    "{CACHE_SIZE_ENV}={text:?} is not a size (bytes, or a number with K, M, G \
                     or T)"
                ))
            })?;
        }
        Ok(Some(settings))
    }
}

/// A size written `123`, `64K`, `1.5G`, `2t` … (powers of 1024), or `None`.
pub fn parse_size(text: &str) -> Option<u64> {
    let text = text.trim();
    let (number, scale) = match text.char_indices().last()? {
        (i, c) if c.is_ascii_alphabetic() => {
            let scale: u64 = match c.to_ascii_uppercase() {
                'K' => 1 << 10,
                'M' => 1 << 20,
                'G' => 1 << 30,
                'T' => 1 << 40,
                _ => return None,
            };
            (&text[..i], scale)
        }
        _ => (text, 1),
    };
    let value: f64 = number.trim().parse().ok()?;
    (value.is_finite() && value >= 0.0 && value * scale as f64 <= u64::MAX as f64)
        .then_some((value * scale as f64) as u64)
}

/// The identity of one object's bytes, as cache files are named.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ObjectId(String);

impl ObjectId {
    /// The identity of the object at `url` with `size` bytes in the version the store
    /// names `version` (its entity tag, or when it last changed).
    pub fn new(url: &str, size: u64, version: &str) -> Self {
        let mut hash = Sha256::new();
        for part in [url.as_bytes(), &size.to_le_bytes(), version.as_bytes()] {
            hash.update((part.len() as u64).to_le_bytes());
            hash.update(part);
        }
        let digest = hash.finalize();
        ObjectId(digest[..16].iter().map(|b| format!("{b:02x}")).collect())
    }
}

/// An open cache directory.
#[derive(Debug)]
pub(crate) struct ChunkCache {
    settings: CacheSettings,
}

/// Temporary names written by this process, made unique by a counter.
static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// A temporary file older than this was left by a writer that died; eviction removes it.
const STALE_TEMP: Duration = Duration::from_secs(3600);

fn cache_error(e: std::io::Error, what: &str, path: &Path) -> Error {
    Error::io(e, format!("cache: {what}")).with_path(path)
}

impl ChunkCache {
    /// Opens (creating) the cache directory of `settings`.
    pub fn open(settings: &CacheSettings) -> Result<Self> {
        if settings.chunk_bytes == 0 || settings.chunk_bytes > (1 << 30) {
            return Err(Error::invalid_input(format!(
                "cache: a chunk of {} bytes is outside 1 byte..1 GiB",
                settings.chunk_bytes
            )));
        }
        for sub in ["chunks", "tmp"] {
            let dir = settings.dir.join(sub);
            fs::create_dir_all(&dir).map_err(|e| cache_error(e, "cannot create", &dir))?;
        }
        Ok(ChunkCache { settings: settings.clone() })
    }

    /// Bytes per chunk.
    pub fn chunk_bytes(&self) -> u64 {
        self.settings.chunk_bytes
    }

    fn chunk_path(&self, id: &ObjectId, chunk: u64) -> PathBuf {
        self.settings.dir.join("chunks").join(&id.0[..2]).join(format!("{}-{chunk}", id.0))
    }

    /// Fills `dest` with the bytes at `offset` of chunk `chunk` (whose length is
    /// `chunk_len`) of object `id`, if the cache has that chunk whole and undamaged. A
    /// damaged or truncated chunk file is deleted. Returns whether `dest` was filled.
    pub fn read(
        &self,
        id: &ObjectId,
        chunk: u64,
        chunk_len: u64,
        offset: u64,
        dest: &mut [u8],
    ) -> bool {
        let path = self.chunk_path(id, chunk);
        let Ok(file) = File::open(&path) else { return false };
        match read_checked(&file, chunk_len, offset, dest) {
            Ok(()) => {
                // Least recently *used*: a read makes the chunk young again. Failing to
                // (another user's file) only makes it older than it should be.
                let _ = file.set_modified(SystemTime::now());
                true
            }
            Err(why) => {
                log::warn!("cache: {}: {why}; fetching it again", path.display());
                let _ = fs::remove_file(&path);
                false
            }
        }
    }

    /// Keeps `bytes` as chunk `chunk` of object `id`, without counting it yet; returns the
    /// bytes it takes on disk (0 when it was not kept), which the caller passes to
    /// [`count_added`](Self::count_added), once for all the chunks of a read: the count is
    /// shared by every process using the cache, under a lock, and taking it once per chunk
    /// made a read of many chunks wait on it as often. A cache that cannot be written to is
    /// not an error for the read that fetched the bytes: it is logged and the read goes on.
    pub fn store(&self, id: &ObjectId, chunk: u64, bytes: &[u8]) -> u64 {
        if bytes.len() as u64 > self.settings.max_bytes {
            return 0;
        }
        match self.write_chunk(id, chunk, bytes) {
            Ok(size) => size,
            Err(e) => {
                log::warn!("{e}");
                0
            }
        }
    }

    /// Adds `size` bytes of new chunks ([`store`](Self::store)) to the shared count of bytes
    /// in use, evicting when the total passes the bound. Nothing to add, nothing done.
    pub fn count_added(&self, size: u64) {
        if size == 0 {
            return;
        }
        if let Err(e) = self.account(size) {
            log::warn!("{e}");
        }
    }

    /// Writes the chunk file under a temporary name and renames it into place; returns its
    /// size on disk.
    fn write_chunk(&self, id: &ObjectId, chunk: u64, bytes: &[u8]) -> Result<u64> {
        let path = self.chunk_path(id, chunk);
        let dir = path.parent().unwrap_or(&self.settings.dir);
        fs::create_dir_all(dir).map_err(|e| cache_error(e, "cannot create", dir))?;
        let temp = self.settings.dir.join("tmp").join(format!(
            "{}-{chunk}.{}.{}",
            id.0,
            std::process::id(),
            TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let encoded = encode(bytes);
        let written = File::create(&temp)
            .and_then(|mut f| f.write_all(&encoded))
            .and_then(|()| fs::rename(&temp, &path));
        if let Err(e) = written {
            let _ = fs::remove_file(&temp);
            return Err(cache_error(e, "cannot write a chunk", &path));
        }
        Ok(encoded.len() as u64)
    }

    /// Adds `size` to the shared count of bytes in use, evicting under the lock when the
    /// total passes the bound.
    fn account(&self, size: u64) -> Result<()> {
        let lock_path = self.settings.dir.join("lock");
        let lock = File::options()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(&lock_path)
            .map_err(|e| cache_error(e, "cannot open the lock", &lock_path))?;
        rustix::fs::flock(&lock, rustix::fs::FlockOperation::LockExclusive)
            .map_err(|e| cache_error(e.into(), "cannot lock", &lock_path))?;
        // The lock is released when `lock` is closed, at the end of this function.
        let usage_path = self.settings.dir.join("usage");
        let counted = fs::read_to_string(&usage_path).ok().and_then(|t| t.trim().parse().ok());
        let total = match counted {
            Some(total) => u64::saturating_add(total, size),
            // Never counted, or a count a crash cut short: count the files.
            None => self.scan()?.iter().map(|c| c.size).sum(),
        };
        let total = if total > self.settings.max_bytes { self.evict()? } else { total };
        fs::write(&usage_path, format!("{total}\n"))
            .map_err(|e| cache_error(e, "cannot write the usage count", &usage_path))?;
        Ok(())
    }

    /// Every chunk file, with its size and last use; stale temporary files are deleted.
    fn scan(&self) -> Result<Vec<Cached>> {
        let mut found = Vec::new();
        let chunks = self.settings.dir.join("chunks");
        let listed = fs::read_dir(&chunks).map_err(|e| cache_error(e, "cannot list", &chunks))?;
        for sub in listed.flatten() {
            let Ok(files) = fs::read_dir(sub.path()) else { continue };
            for file in files.flatten() {
                let Ok(meta) = file.metadata() else { continue };
                let used = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
                found.push(Cached { path: file.path(), size: meta.len(), used });
            }
        }
        let temp = self.settings.dir.join("tmp");
        for file in fs::read_dir(&temp).into_iter().flatten().flatten() {
            let stale = file
                .metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|t| t.elapsed().is_ok_and(|age| age > STALE_TEMP));
            if stale {
                let _ = fs::remove_file(file.path());
            }
        }
        Ok(found)
    }

    /// Deletes the least recently used chunks until the rest fit in 90 % of the bound;
    /// returns the bytes left.
    fn evict(&self) -> Result<u64> {
        let mut chunks = self.scan()?;
        let mut total: u64 = chunks.iter().map(|c| c.size).sum();
        let target = self.settings.max_bytes / 10 * 9;
        chunks.sort_by_key(|c| c.used);
        for chunk in chunks {
            if total <= target {
                break;
            }
            match fs::remove_file(&chunk.path) {
                Ok(()) => total -= chunk.size,
                // Someone else deleted it (a damaged chunk found by a reader).
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => total -= chunk.size,
                Err(e) => log::warn!("cache: cannot delete {}: {e}", chunk.path.display()),
            }
        }
        Ok(total)
    }
}

/// A chunk file found by a scan.
struct Cached {
    path: PathBuf,
    size: u64,
    used: SystemTime,
}

fn header_len(blocks: u64) -> u64 {
    FIXED_HEADER + 4 * blocks + 4
}

fn block_count(len: u64) -> u64 {
    len.div_ceil(BLOCK_BYTES)
}

/// A chunk file: magic, length, block count, a CRC-32 per block, the header's CRC, data.
fn encode(bytes: &[u8]) -> Vec<u8> {
    let len = bytes.len() as u64;
    let blocks = block_count(len);
    let mut out = Vec::with_capacity((header_len(blocks) + len) as usize);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&(blocks as u32).to_le_bytes());
    for block in bytes.chunks(BLOCK_BYTES as usize) {
        out.extend_from_slice(&crc32(block).to_le_bytes());
    }
    let header_crc = crc32(&out);
    out.extend_from_slice(&header_crc.to_le_bytes());
    out.extend_from_slice(bytes);
    out
}

/// Reads `dest.len()` bytes at `offset` of the chunk in `file` (expected `chunk_len` bytes
/// long), checking the header, the file's length and the CRC of every block read.
fn read_checked(
    file: &File,
    chunk_len: u64,
    offset: u64,
    dest: &mut [u8],
) -> std::result::Result<(), String> {
    let end = offset.checked_add(dest.len() as u64).filter(|&e| e <= chunk_len);
    let end = end.ok_or("the read lies outside the chunk")?;
    let blocks = block_count(chunk_len);
    let head_len = header_len(blocks);
    let mut header = vec![0u8; head_len as usize];
    let mut reader = file;
    reader.seek(SeekFrom::Start(0)).map_err(|e| e.to_string())?;
    reader.read_exact(&mut header).map_err(|_| "the header is cut short".to_string())?;
    let (fields, stored) = header.split_at(head_len as usize - 4);
    if &fields[..8] != MAGIC
        || u64::from_le_bytes(fields[8..16].try_into().unwrap_or_default()) != chunk_len
        || u32::from_le_bytes(fields[16..20].try_into().unwrap_or_default()) as u64 != blocks
    {
        return Err("the header does not describe this chunk".into());
    }
    if crc32(fields).to_le_bytes() != stored {
        return Err("the header's checksum does not match".into());
    }
    let file_len = file.metadata().map_err(|e| e.to_string())?.len();
    if file_len != head_len + chunk_len {
        return Err(format!("the file has {file_len} bytes, not {}", head_len + chunk_len));
    }
    if dest.is_empty() {
        return Ok(());
    }
    let (first, last) = (offset / BLOCK_BYTES, (end - 1) / BLOCK_BYTES);
    let span_start = first * BLOCK_BYTES;
    let span_end = ((last + 1) * BLOCK_BYTES).min(chunk_len);
    let mut span = vec![0u8; (span_end - span_start) as usize];
    file.read_exact_at(&mut span, head_len + span_start).map_err(|e| e.to_string())?;
    for (i, block) in span.chunks(BLOCK_BYTES as usize).enumerate() {
        let at = FIXED_HEADER as usize + 4 * (first as usize + i);
        if crc32(block).to_le_bytes() != fields[at..at + 4] {
            return Err(format!("block {} fails its checksum", first as usize + i));
        }
    }
    let from = (offset - span_start) as usize;
    dest.copy_from_slice(&span[from..from + dest.len()]);
    Ok(())
}

fn crc32(bytes: &[u8]) -> u32 {
    crc32fast::hash(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cache(dir: &Path, max_bytes: u64, chunk_bytes: u64) -> ChunkCache {
        ChunkCache::open(&CacheSettings { dir: dir.to_path_buf(), max_bytes, chunk_bytes }).unwrap()
    }

    /// Keeps one chunk and counts it, as a read of one chunk does.
    fn put(cache: &ChunkCache, id: &ObjectId, chunk: u64, bytes: &[u8]) {
        let size = cache.store(id, chunk, bytes);
        cache.count_added(size);
    }

    fn bytes(n: usize, seed: u8) -> Vec<u8> {
        (0..n).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect()
    }

    #[test]
    fn a_chunk_reads_back_at_any_offset() {
        let dir = tempfile::tempdir().unwrap();
        let cache = cache(dir.path(), 1 << 30, 100_000);
        let id = ObjectId::new("s3://b/k", 250_000, "etag \"tag\"");
        let data = bytes(100_000, 1);
        put(&cache, &id, 0, &data);
        for (offset, len) in [(0, 10), (16_380, 10), (99_990, 10), (0, 100_000), (5, 0)] {
            let mut out = vec![0u8; len];
            assert!(cache.read(&id, 0, 100_000, offset, &mut out), "{offset}+{len}");
            assert_eq!(out, data[offset as usize..offset as usize + len]);
        }
        let mut out = vec![0u8; 10];
        assert!(!cache.read(&id, 1, 100_000, 0, &mut out), "chunk 1 was never written");
        let other = ObjectId::new("s3://b/k", 250_000, "etag \"new\"");
        assert!(!cache.read(&other, 0, 100_000, 0, &mut out), "another tag is another object");
        assert!(!cache.read(&id, 0, 100_000, 99_995, &mut out), "past the chunk's end");
    }

    #[test]
    fn damaged_and_truncated_chunks_are_refused_and_deleted() {
        let dir = tempfile::tempdir().unwrap();
        let cache = cache(dir.path(), 1 << 30, 65_536);
        let id = ObjectId::new("http://h/x", 65_536, "modified 0");
        let data = bytes(65_536, 7);
        let path = cache.chunk_path(&id, 0);
        /// A way to damage the chunk file at a path.
        type Damage = fn(&Path);
        let damages: [(&str, Damage); 4] = [
            ("a flipped data byte", |p| {
                let mut b = fs::read(p).unwrap();
                let at = b.len() - 100;
                b[at] ^= 1;
                fs::write(p, b).unwrap();
            }),
            ("a truncated file", |p| {
                let b = fs::read(p).unwrap();
                fs::write(p, &b[..b.len() - 1]).unwrap();
            }),
            ("a flipped header byte", |p| {
                let mut b = fs::read(p).unwrap();
                b[9] ^= 0x40;
                fs::write(p, b).unwrap();
            }),
            ("an empty file", |p| fs::write(p, b"").unwrap()),
        ];
        for (what, damage) in damages {
            put(&cache, &id, 0, &data);
            damage(&path);
            let mut out = vec![0u8; 200];
            assert!(!cache.read(&id, 0, 65_536, 65_000, &mut out), "{what} was returned");
            assert!(!path.exists(), "{what} was kept");
        }
        // A flip in a block the read does not touch is found by the read that touches it.
        put(&cache, &id, 0, &data);
        let mut b = fs::read(&path).unwrap();
        let last = b.len() - 1;
        b[last] ^= 1;
        fs::write(&path, b).unwrap();
        let mut out = vec![0u8; 100];
        assert!(cache.read(&id, 0, 65_536, 0, &mut out));
        assert_eq!(out, data[..100]);
        assert!(!cache.read(&id, 0, 65_536, 65_000, &mut out));
    }

    #[test]
    fn the_size_bound_holds_and_evicts_least_recently_used() {
        let dir = tempfile::tempdir().unwrap();
        let chunk = 10_000u64;
        let bound = 100_000u64;
        let cache = cache(dir.path(), bound, chunk);
        let id = ObjectId::new("s3://b/big", 1 << 30, "modified 0");
        let on_disk = |dir: &Path| -> u64 {
            let mut total = 0;
            for sub in fs::read_dir(dir.join("chunks")).unwrap().flatten() {
                for f in fs::read_dir(sub.path()).unwrap().flatten() {
                    total += f.metadata().unwrap().len();
                }
            }
            total
        };
        let data = bytes(chunk as usize, 3);
        let mut out = vec![0u8; 10];
        for i in 0..40u64 {
            put(&cache, &id, i, &data);
            assert!(on_disk(dir.path()) <= bound, "over the bound after chunk {i}");
            // Chunk 0 is read after every write, so it stays the most recently used.
            assert!(cache.read(&id, 0, chunk, 0, &mut out), "chunk 0 was evicted at {i}");
            // Modification times have a granularity; keep uses apart.
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(!cache.read(&id, 1, chunk, 0, &mut out), "an old chunk survived");
        assert!(cache.read(&id, 39, chunk, 0, &mut out), "the newest chunk was evicted");
        let counted: u64 =
            fs::read_to_string(dir.path().join("usage")).unwrap().trim().parse().unwrap();
        assert_eq!(counted, on_disk(dir.path()));
    }

    #[test]
    fn options_give_a_cache_only_with_a_directory() {
        let dir = Path::new("/tmp/some-cache");
        let default = CacheSettings::from_options(Some(dir), None).unwrap().unwrap();
        assert_eq!((default.dir.as_path(), default.max_bytes), (dir, 10 << 30));
        let bounded = CacheSettings::from_options(Some(dir), Some(5 << 20)).unwrap().unwrap();
        assert_eq!(bounded.max_bytes, 5 << 20);
        assert!(CacheSettings::from_options(None, None).unwrap().is_none());
        let e = CacheSettings::from_options(None, Some(1)).unwrap_err();
        assert_eq!(e.kind(), reel_core::ErrorKind::InvalidInput);
    }

    #[test]
    fn sizes_parse_with_binary_suffixes() {
        assert_eq!(parse_size("123"), Some(123));
        assert_eq!(parse_size("64K"), Some(64 << 10));
        assert_eq!(parse_size("1.5g"), Some(3 << 29));
        assert_eq!(parse_size("2T"), Some(2 << 40));
        assert_eq!(parse_size("lots"), None);
        assert_eq!(parse_size("-1"), None);
        assert_eq!(parse_size("1X"), None);
    }
}
