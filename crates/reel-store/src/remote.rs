//! An object store as a [`reel_core::Store`], so every format opens from a URL by the same
//! code that opens it from a local path.
//!
//! Locations are object URLs (`s3://bucket/data/train.ffr`, see [`reel_core::store`]). A
//! "directory" is a prefix with objects under it; listing it asks the store for one level
//! (`list_with_delimiter`). Metadata reads and record batches go through the same fetcher:
//! deadlines, retries, short bodies refused (see [`crate::read`]).

use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use object_store::{GetOptions, GetRange, ObjectMeta, ObjectStore, ObjectStoreExt};
use reel_core::paths::InputKind;
use reel_core::{Backend, Entry, Error, ErrorKind, ReadAt, Result};

use crate::cache::ChunkCache;
use crate::ends::{END_BYTES, End, Ends};
use crate::error::store_error;
use crate::read::{Fetcher, Object, ObjectFiles, ReadSettings, ReadStats};
use crate::runtime::block_on;
use crate::{ObjectPath, Store};

/// Bytes fetched per request by [`reel_core::Store::read_sequential`].
const SEQUENTIAL_CHUNK: u64 = 8 << 20;

/// One object store (a bucket, container or HTTP origin) as a [`reel_core::Store`].
///
/// It remembers what it learnt (per open, since each opened dataset has its own store):
/// each object's size and entity tag, which objects are missing, each prefix's listing and
/// the ends of objects whose metadata was read (see the `ends` module). Opening a dataset asks each
/// question of the store once, however often the format code asks it: sniffing the format,
/// then opening it, stat the same names again. A dataset is taken not to change while it is
/// read.
#[derive(Debug)]
pub struct RemoteStore {
    /// The URL of the store's root, without a trailing slash (`s3://bucket`).
    root: String,
    fetcher: Fetcher,
    memo: Mutex<Memo>,
}

/// What a [`RemoteStore`] has learnt about its objects.
#[derive(Debug, Default)]
struct Memo {
    /// Objects asked about by name: their size and tag, or `None` when there is none.
    objects: HashMap<ObjectPath, Option<Known>>,
    /// One level of each prefix listed.
    listings: HashMap<ObjectPath, Arc<Listing>>,
    /// The first failure a yes-or-no question answered `false` for (see
    /// [`Store::take_failed_question`](reel_core::Store::take_failed_question)).
    failed_question: Option<Error>,
}

/// An object's size, entity tag and time of last change.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Known {
    size: u64,
    etag: Option<String>,
    /// In whole seconds since 1970: a listing tells milliseconds and a `HEAD` seconds, and
    /// the two must name one version of the object.
    modified: i64,
}

impl From<&ObjectMeta> for Known {
    fn from(meta: &ObjectMeta) -> Self {
        Known {
            size: meta.size,
            etag: meta.e_tag.clone(),
            modified: meta.last_modified.timestamp(),
        }
    }
}

/// One level of a prefix: its objects and the prefixes under it, in the store's order, with
/// an index by name (a dataset of N shards asks about each of them: N lookups in one
/// listing).
#[derive(Debug)]
struct Listing {
    objects: Vec<(ObjectPath, Known)>,
    prefixes: Vec<ObjectPath>,
    object_at: HashMap<ObjectPath, usize>,
    prefix_set: HashSet<ObjectPath>,
}

impl Listing {
    fn new(objects: Vec<(ObjectPath, Known)>, prefixes: Vec<ObjectPath>) -> Self {
        let object_at = objects.iter().enumerate().map(|(i, (k, _))| (k.clone(), i)).collect();
        let prefix_set = prefixes.iter().cloned().collect();
        Listing { objects, prefixes, object_at, prefix_set }
    }

    /// The object `key` of this level, if listed.
    fn object(&self, key: &ObjectPath) -> Option<&Known> {
        self.object_at.get(key).map(|&i| &self.objects[i].1)
    }

    /// Whether `key` is a prefix of this level.
    fn has_prefix(&self, key: &ObjectPath) -> bool {
        self.prefix_set.contains(key)
    }

    fn is_empty(&self) -> bool {
        self.objects.is_empty() && self.prefixes.is_empty()
    }
}

/// The prefix `key` is directly under (the empty path for a key at the root).
///
/// Built from `key`'s parts as they are: `ObjectPath::from` of the text before the last
/// `/` would percent-encode it again, so that the parent of `k=a%20b/part-0` (a Hive
/// partition value, as pyarrow encodes it) became `k=a%2520b`, a prefix no listing holds,
/// and the object read as missing.
fn parent(key: &ObjectPath) -> ObjectPath {
    let mut parts: Vec<_> = key.parts().collect();
    parts.pop();
    parts.into_iter().collect()
}

impl Memo {
    /// What is known of the object `key`: `Some(Some(_))` it exists, `Some(None)` it does
    /// not, `None` not known (never asked, and its prefix not listed).
    fn object(&self, key: &ObjectPath) -> Option<Option<Known>> {
        if let Some(known) = self.objects.get(key) {
            return Some(known.clone());
        }
        if self.under_a_missing_prefix(key) {
            return Some(None);
        }
        let listing = self.listings.get(&parent(key))?;
        Some(listing.object(key).cloned())
    }

    /// Whether `key` is a prefix with something under it, if known.
    fn is_prefix(&self, key: &ObjectPath) -> Option<bool> {
        if let Some(listing) = self.listings.get(key) {
            return Some(!listing.is_empty());
        }
        if self.under_a_missing_prefix(key) {
            return Some(false);
        }
        let listing = self.listings.get(&parent(key))?;
        Some(listing.has_prefix(key))
    }

    /// Whether a listed prefix above `key`'s parent shows that the prefix `key` would be
    /// under does not exist (`a/b/c` when the listing of `a` has no `a/b`), so nothing named
    /// `key` does either.
    fn under_a_missing_prefix(&self, key: &ObjectPath) -> bool {
        let mut child = parent(key);
        while !child.as_ref().is_empty() {
            let above = parent(&child);
            if let Some(listing) = self.listings.get(&above) {
                return !listing.has_prefix(&child);
            }
            child = above;
        }
        false
    }
}

impl RemoteStore {
    /// Reads from `store` with `settings`.
    pub fn new(store: Arc<Store>, settings: ReadSettings) -> Result<Self> {
        let root = store.url().store_url().trim_end_matches('/').to_string();
        // Building the client now makes a store that cannot be built fail here, at open.
        store.client()?;
        let cache = settings.cache.as_ref().map(ChunkCache::open).transpose()?.map(Arc::new);
        let fetcher = Fetcher {
            store,
            settings,
            stats: Arc::new(ReadStats::default()),
            ends: Arc::new(Ends::default()),
            cache,
        };
        Ok(RemoteStore { root, fetcher, memo: Mutex::default() })
    }

    /// A store for the bucket, container or origin of `url`, configured by `options` (and
    /// the environment), reading with `settings`.
    pub fn open(
        url: &crate::ObjectUrl,
        options: &crate::StoreOptions,
        settings: ReadSettings,
    ) -> Result<Self> {
        RemoteStore::new(Arc::new(Store::new(url, options)?), settings)
    }

    /// The store this reads from.
    pub fn store(&self) -> &Arc<Store> {
        &self.fetcher.store
    }

    /// Requests, retries and bytes of every read through this store so far (file sets it
    /// opened included).
    pub fn stats(&self) -> &ReadStats {
        &self.fetcher.stats
    }

    fn client(&self) -> Result<Arc<dyn ObjectStore>> {
        // The store rebuilds its client in a forked child; follow it.
        self.fetcher.store.client()
    }

    /// The answer of a yes-or-no question: `None` for an error, kept for
    /// [`take_failed_question`](reel_core::Store::take_failed_question) when the store did
    /// not answer at all (no connection, no answer in time). An answer that refuses (not
    /// found, forbidden, a server without listings) is a plain "no".
    fn answer<T>(&self, result: Result<T>) -> Option<T> {
        match result {
            Ok(value) => Some(value),
            Err(e) => {
                if unanswered(&e) {
                    self.memo().failed_question.get_or_insert(e);
                }
                None
            }
        }
    }

    fn memo(&self) -> std::sync::MutexGuard<'_, Memo> {
        self.memo.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The key of the location `path` (an URL under this store's root).
    pub fn key(&self, path: &Path) -> Result<ObjectPath> {
        let text = path.to_str().ok_or_else(|| {
            Error::invalid_input("an object URL must be valid UTF-8").with_path(path)
        })?;
        let rest = text.strip_prefix(&self.root).filter(|r| r.is_empty() || r.starts_with('/'));
        let Some(rest) = rest else {
            return Err(
                Error::invalid_input(format!("is not in the store {}", self.root)).with_path(path)
            );
        };
        ObjectPath::parse(rest.trim_matches('/')).map_err(|e| {
            Error::invalid_input(format!("not a valid object key: {e}")).with_path(path)
        })
    }

    /// The URL of `key`.
    fn url_of(&self, key: &ObjectPath) -> PathBuf {
        if key.as_ref().is_empty() {
            PathBuf::from(&self.root)
        } else {
            PathBuf::from(format!("{}/{}", self.root, key))
        }
    }

    fn timeout(&self) -> Duration {
        self.fetcher.settings.request_timeout
    }

    fn count_metadata_request(&self) {
        self.fetcher.stats.metadata_requests.fetch_add(1, Ordering::Relaxed);
    }

    /// One HEAD of `key`: its size and tag.
    async fn head(&self, client: &dyn ObjectStore, path: &Path, key: &ObjectPath) -> Result<Known> {
        Ok(Known::from(&self.head_meta(client, path, key).await?))
    }

    /// The object's metadata (one HEAD, under the request deadline).
    async fn head_meta(
        &self,
        client: &dyn ObjectStore,
        path: &Path,
        key: &ObjectPath,
    ) -> Result<ObjectMeta> {
        let what = "cannot get the object's size";
        self.count_metadata_request();
        match tokio::time::timeout(self.timeout(), client.head(key)).await {
            Ok(Ok(meta)) => Ok(meta),
            Ok(Err(e)) => Err(store_error(e, &path.to_string_lossy(), what)),
            Err(_) => Err(no_answer_in_time(what).with_path(path)),
        }
    }

    /// One GET of the first [`END_BYTES`] of `key`: its size and tag (from the answer's
    /// `Content-Range`) and its first bytes. `None` when that did not work out for any
    /// reason but a missing object (an empty object has no bytes to range over, a server
    /// may not answer ranges): the caller asks with a HEAD instead.
    async fn probe(
        &self,
        client: &dyn ObjectStore,
        key: &ObjectPath,
    ) -> Option<Result<(Known, Bytes)>> {
        self.count_metadata_request();
        let options =
            GetOptions { range: Some(GetRange::Bounded(0..END_BYTES)), ..GetOptions::default() };
        let request = async {
            let answer = client.get_opts(key, options).await?;
            let (meta, range) = (answer.meta.clone(), answer.range.clone());
            let body = answer.bytes().await?;
            Ok::<_, object_store::Error>((meta, range, body))
        };
        match tokio::time::timeout(self.timeout(), request).await {
            Ok(Ok((meta, range, body)))
                if range.start == 0
                    && range.end == meta.size.min(END_BYTES)
                    && body.len() as u64 == range.end =>
            {
                Some(Ok((Known::from(&meta), body)))
            }
            Ok(Err(e @ object_store::Error::NotFound { .. })) => {
                Some(Err(store_error(e, &self.address(key), "cannot get the object's size")))
            }
            _ => None,
        }
    }

    fn address(&self, key: &ObjectPath) -> String {
        self.url_of(key).to_string_lossy().into_owned()
    }

    /// What `stat` says of a name that is no object when the store answered the listing
    /// that would find a prefix of that name with a refusal: a missing bucket (S3 answers
    /// 404 `NoSuchBucket`), a missing prefix, or a file server that lists nothing (a plain
    /// HTTP server refuses WebDAV's `PROPFIND`) mean nothing is there, a `NotFound` error
    /// in plain words rather than the refusal's status and body. Other refusals (forbidden
    /// listings) are kept: they may hide a prefix.
    fn missing_unlisted(&self, path: &Path, refused: Error) -> Error {
        let text = refused.message();
        let missing = |why: String| Error::new(ErrorKind::NotFound, why).with_path(path);
        if text.contains("NoSuchBucket") || text.contains("no such bucket") {
            missing(format!("no such bucket: {} does not exist", self.root))
        } else if text.contains("404 Not Found") {
            missing("no such object or prefix".into())
        } else if self.fetcher.store.url().kind() == crate::StoreKind::Http
            && ["405", "501", "Method Not Allowed", "Not Implemented"]
                .iter()
                .any(|s| text.contains(s))
        {
            missing(
                "no such object (and the server does not list directories, so no dataset \
                 that is a directory can be read from it either)"
                    .into(),
            )
        } else {
            refused
        }
    }

    /// The size and tag of the object `key`: remembered, or asked for once (with its first
    /// bytes). A missing object is a [`ErrorKind::NotFound`] error.
    fn object(&self, path: &Path, key: &ObjectPath) -> Result<Known> {
        let missing = || Error::new(ErrorKind::NotFound, "no such object").with_path(path);
        if let Some(known) = self.memo().object(key) {
            return known.ok_or_else(missing);
        }
        let client = self.client()?;
        let found = match block_on(self.probe(&*client, key))? {
            Some(Ok((known, head))) => {
                self.fetcher.ends.keep(key, End::Head, head);
                Ok(known)
            }
            Some(Err(e)) => Err(e),
            None => block_on(self.head(&*client, path, key))?,
        };
        match found {
            Ok(known) => {
                self.memo().objects.insert(key.clone(), Some(known.clone()));
                Ok(known)
            }
            Err(e) if e.kind() == ErrorKind::NotFound => {
                self.memo().objects.insert(key.clone(), None);
                Err(missing())
            }
            Err(e) => Err(e),
        }
    }

    /// One level of the prefix `key`: remembered, or listed once.
    fn listing(&self, path: &Path, key: &ObjectPath) -> Result<Arc<Listing>> {
        if let Some(listing) = self.memo().listings.get(key) {
            return Ok(Arc::clone(listing));
        }
        let client = self.client()?;
        let prefix = (!key.as_ref().is_empty()).then_some(key);
        self.count_metadata_request();
        let timeout = self.timeout();
        let request =
            async { tokio::time::timeout(timeout, client.list_with_delimiter(prefix)).await };
        let listed = match block_on(request)? {
            Ok(listed) => {
                listed.map_err(|e| store_error(e, &path.to_string_lossy(), "cannot list"))?
            }
            Err(_) => {
                return Err(no_answer_in_time("cannot list").with_path(path));
            }
        };
        let listing = Arc::new(Listing::new(
            listed.objects.iter().map(|m| (m.location.clone(), Known::from(m))).collect(),
            listed.common_prefixes,
        ));
        self.memo().listings.insert(key.clone(), Arc::clone(&listing));
        Ok(listing)
    }

    /// The object `key` as the fetcher reads it.
    fn described(&self, path: &Path, key: &ObjectPath, known: Known) -> Object {
        Object {
            url: path.to_path_buf(),
            key: key.clone(),
            len: known.size,
            etag: known.etag,
            modified: known.modified,
        }
    }

    /// Bytes `offset..offset + len` of `path`, checked against its size: from a kept end
    /// window, or fetching one when the range lies in it, else one ranged GET.
    fn read_bytes(&self, path: &Path, offset: u64, len: u64) -> Result<Bytes> {
        let key = self.key(path)?;
        let known = self.object(path, &key)?;
        reel_core::check_within(offset, len, known.size, "read").map_err(|e| e.with_path(path))?;
        let object = self.described(path, &key, known);
        block_on(self.fetcher.fetch_near_end(&object, offset..offset + len))?
    }
}

impl reel_core::Store for RemoteStore {
    fn name(&self) -> &'static str {
        self.fetcher.store.url().kind().as_str()
    }

    fn stat(&self, path: &Path) -> Result<InputKind> {
        let key = self.key(path)?;
        if key.as_ref().is_empty() {
            // The root of a bucket is a directory if the bucket is there: one listing
            // (which recognising the format makes anyway) tells.
            return match self.listing(path, &key) {
                Ok(_) => Ok(InputKind::Dir),
                Err(e) if unanswered(&e) => Err(e),
                Err(refused) => Err(self.missing_unlisted(path, refused)),
            };
        }
        match self.object(path, &key) {
            Ok(known) => return Ok(InputKind::File(known.size)),
            Err(e) if e.kind() != ErrorKind::NotFound => return Err(e),
            Err(_) => {}
        }
        let remembered = self.memo().is_prefix(&key);
        let is_prefix = match remembered {
            Some(known) => known,
            None => match self.listing(path, &key) {
                Ok(listing) => !listing.is_empty(),
                Err(e) if unanswered(&e) => return Err(e),
                Err(refused) => return Err(self.missing_unlisted(path, refused)),
            },
        };
        if !is_prefix {
            return Err(Error::new(ErrorKind::NotFound, "no such object or prefix").with_path(path));
        }
        Ok(InputKind::Dir)
    }

    /// Asks about an object only: after a missing object, `stat`'s listing can only find a
    /// prefix, which is not a file.
    fn is_file(&self, path: &Path) -> bool {
        let Ok(key) = self.key(path) else { return false };
        !key.as_ref().is_empty() && self.answer(self.object(path, &key)).is_some()
    }

    fn exists(&self, path: &Path) -> bool {
        self.answer(self.stat(path)).is_some()
    }

    fn is_dir(&self, path: &Path) -> bool {
        matches!(self.answer(self.stat(path)), Some(InputKind::Dir))
    }

    fn take_failed_question(&self) -> Option<Error> {
        self.memo().failed_question.take()
    }

    fn opened_version(&self, path: &Path) -> Option<String> {
        let key = self.key(path).ok()?;
        let known = self.memo().object(&key)??;
        // The tag without its quotes: a listing and a HEAD may spell one tag either way.
        Some(match &known.etag {
            Some(tag) => format!("{} {}", known.size, tag.trim_matches('"')),
            None => format!("{} modified {}", known.size, known.modified),
        })
    }

    /// One HEAD: the object's size, ETag and last-modified time (an object written again
    /// gets a new last-modified time even with the same bytes).
    fn version(&self, path: &Path) -> Result<String> {
        let key = self.key(path)?;
        let client = self.client()?;
        let meta = block_on(self.head_meta(&*client, path, &key))??;
        Ok(format!(
            "{} {} {}",
            meta.size,
            meta.e_tag.as_deref().unwrap_or("-"),
            meta.last_modified.timestamp_nanos_opt().unwrap_or_default()
        ))
    }

    /// A listing the store did not answer is also kept for
    /// [`take_failed_question`](reel_core::Store::take_failed_question): recognising a format
    /// lists directories and takes a failed listing for "not this format".
    fn list(&self, dir: &Path) -> Result<Vec<Entry>> {
        let key = self.key(dir)?;
        let listing = self.listing(dir, &key).inspect_err(|e| {
            if unanswered(e) {
                // The error goes back to the caller too: what is kept is its text and path.
                self.memo().failed_question.get_or_insert(e.copy_of_text());
            }
        })?;
        let mut out = Vec::with_capacity(listing.objects.len() + listing.prefixes.len());
        for (object, _) in &listing.objects {
            out.push(Entry { path: self.url_of(object), is_dir: false });
        }
        for prefix in &listing.prefixes {
            out.push(Entry { path: self.url_of(prefix), is_dir: true });
        }
        Ok(out)
    }

    fn read_range(&self, path: &Path, offset: u64, len: u64) -> Result<Vec<u8>> {
        Ok(self.read_bytes(path, offset, len)?.to_vec())
    }

    fn read_whole(&self, path: &Path, limit: u64, what: &str) -> Result<Vec<u8>> {
        let key = self.key(path)?;
        let len = self.object(path, &key)?.size;
        if len > limit {
            return Err(Error::new(
                ErrorKind::Limit,
                format!("{what} is {len} bytes, above the configured limit of {limit}"),
            )
            .with_path(path));
        }
        self.read_range(path, 0, len)
    }

    fn read_sequential(&self, path: &Path) -> Result<(Box<dyn Read + Send>, u64)> {
        let key = self.key(path)?;
        let known = self.object(path, &key)?;
        let len = known.size;
        let reader = ChunkReader {
            fetcher: self.fetcher.clone(),
            object: self.described(path, &key, known),
            pos: 0,
            chunk: Bytes::new(),
        };
        Ok((Box::new(reader), len))
    }

    /// Objects whose size is not yet known are asked about with concurrent HEADs (their
    /// first bytes are not wanted: records are read in batches).
    fn open_files(&self, paths: &[PathBuf], _backend: &Backend) -> Result<Box<dyn ReadAt>> {
        let keys = paths.iter().map(|p| self.key(p)).collect::<Result<Vec<_>>>()?;
        let known: Vec<Option<Option<Known>>> = {
            let memo = self.memo();
            keys.iter().map(|k| memo.object(k)).collect()
        };
        let unknown: Vec<usize> = (0..keys.len()).filter(|&i| known[i].is_none()).collect();
        let mut known = known;
        if !unknown.is_empty() {
            let client = self.client()?;
            let heads: Vec<_> =
                unknown.iter().map(|&i| self.head(&*client, &paths[i], &keys[i])).collect();
            let concurrency = self.fetcher.settings.concurrency.max(1);
            let answers = block_on(async move {
                use futures_util::{StreamExt, TryStreamExt};
                futures_util::stream::iter(heads)
                    .buffered(concurrency)
                    .try_collect::<Vec<_>>()
                    .await
            })??;
            // Every object asked about has its answer now (or the error returned above).
            let mut memo = self.memo();
            for (&i, answer) in unknown.iter().zip(answers) {
                memo.objects.insert(keys[i].clone(), Some(answer.clone()));
                known[i] = Some(Some(answer));
            }
        }
        let mut objects = Vec::with_capacity(paths.len());
        for ((path, key), known) in paths.iter().zip(keys).zip(known) {
            match known.flatten() {
                Some(known) => objects.push(self.described(path, &key, known)),
                None => {
                    return Err(Error::new(ErrorKind::NotFound, "no such object").with_path(path));
                }
            }
        }
        Ok(Box::new(ObjectFiles::new(objects, self.fetcher.clone())))
    }
}

/// An object read from start to end in large range requests.
struct ChunkReader {
    fetcher: Fetcher,
    object: Object,
    pos: u64,
    chunk: Bytes,
}

impl Read for ChunkReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.chunk.is_empty() {
            if self.pos >= self.object.len || buf.is_empty() {
                return Ok(0);
            }
            let end = self.object.len.min(self.pos + SEQUENTIAL_CHUNK);
            let fetch = self.fetcher.fetch(&self.object, self.pos..end);
            self.chunk = block_on(fetch)
                .and_then(|r| r)
                .map_err(|e| std::io::Error::other(e.to_string()))?;
        }
        let n = buf.len().min(self.chunk.len());
        buf[..n].copy_from_slice(&self.chunk[..n]);
        self.chunk = self.chunk.slice(n..);
        self.pos += n as u64;
        Ok(n)
    }
}

/// Whether `failure` says the store did not answer at all (an I/O error: no connection, no
/// answer in time), as opposed to an answer that refuses (not found, forbidden, a server
/// without listings), which is a plain "no" to a yes-or-no question.
fn unanswered(failure: &Error) -> bool {
    failure.io_error().is_some()
}

/// A request's deadline passed: `what` failed with no answer (an I/O error, so that a
/// yes-or-no question counts it as unanswered).
fn no_answer_in_time(what: &str) -> Error {
    Error::io(
        std::io::Error::from(std::io::ErrorKind::TimedOut),
        format!("{what}: no answer in time"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_parent_is_its_keys_leading_parts_unchanged() {
        let key = ObjectPath::parse("tables/k=a%20b/part-0.parquet").unwrap();
        assert_eq!(parent(&key).as_ref(), "tables/k=a%20b");
        assert_eq!(parent(&parent(&parent(&key))).as_ref(), "");
        assert_eq!(parent(&ObjectPath::default()).as_ref(), "");
    }
}
