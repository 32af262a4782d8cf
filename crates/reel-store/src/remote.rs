//! An object store as a [`reel_core::Store`], so every format opens from a URL by the same
//! code that opens it from a local path.
//!
//! Locations are object URLs (`s3://bucket/data/train.ffr`, see [`reel_core::store`]). A
//! "directory" is a prefix with objects under it; listing it asks the store for one level
//! (`list_with_delimiter`). Metadata reads and record batches go through the same fetcher:
//! deadlines, retries, short bodies refused (see [`crate::read`]).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use object_store::{ObjectStore, ObjectStoreExt};
use reel_core::paths::InputKind;
use reel_core::{Backend, Entry, Error, ErrorKind, ReadAt, Result};

use crate::error::store_error;
use crate::read::{Fetcher, Object, ObjectFiles, ReadSettings, ReadStats};
use crate::runtime::block_on;
use crate::{ObjectPath, Store};

/// Bytes fetched per request by [`reel_core::Store::read_sequential`].
const SEQUENTIAL_CHUNK: u64 = 8 << 20;

/// One object store (a bucket, container or HTTP origin) as a [`reel_core::Store`].
#[derive(Debug)]
pub struct RemoteStore {
    /// The URL of the store's root, without a trailing slash (`s3://bucket`).
    root: String,
    fetcher: Fetcher,
}

impl RemoteStore {
    /// Reads from `store` with `settings`.
    pub fn new(store: Arc<Store>, settings: ReadSettings) -> Result<Self> {
        let root = store.url().store_url().trim_end_matches('/').to_string();
        // Building the client now makes a store that cannot be built fail here, at open.
        store.client()?;
        let fetcher = Fetcher { store, settings, stats: Arc::new(ReadStats::default()) };
        Ok(RemoteStore { root, fetcher })
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

    async fn head(&self, client: &dyn ObjectStore, path: &Path, key: &ObjectPath) -> Result<u64> {
        Ok(self.head_meta(client, path, key).await?.size)
    }

    /// The object's metadata (one HEAD, under the request deadline).
    async fn head_meta(
        &self,
        client: &dyn ObjectStore,
        path: &Path,
        key: &ObjectPath,
    ) -> Result<object_store::ObjectMeta> {
        let what = "cannot get the object's size";
        let head = tokio::time::timeout(self.fetcher.settings.request_timeout, client.head(key));
        match head.await {
            Ok(Ok(meta)) => Ok(meta),
            Ok(Err(e)) => Err(store_error(e, &path.to_string_lossy(), what)),
            Err(_) => {
                Err(Error::new(ErrorKind::Io, format!("{what}: no answer in time")).with_path(path))
            }
        }
    }
}

impl reel_core::Store for RemoteStore {
    fn name(&self) -> &'static str {
        self.fetcher.store.url().kind().as_str()
    }

    fn stat(&self, path: &Path) -> Result<InputKind> {
        let key = self.key(path)?;
        if key.as_ref().is_empty() {
            return Ok(InputKind::Dir);
        }
        let client = self.client()?;
        let found = block_on(self.head(&*client, path, &key))?;
        match found {
            Ok(len) => return Ok(InputKind::File(len)),
            Err(e) if e.kind() != ErrorKind::NotFound => return Err(e),
            Err(_) => {}
        }
        let listed = block_on(async { client.list_with_delimiter(Some(&key)).await })?
            .map_err(|e| store_error(e, &path.to_string_lossy(), "cannot list"))?;
        if listed.objects.is_empty() && listed.common_prefixes.is_empty() {
            return Err(Error::new(ErrorKind::NotFound, "no such object or prefix").with_path(path));
        }
        Ok(InputKind::Dir)
    }

    /// One HEAD: `stat`'s listing, after a missing object, can only find a prefix, which is
    /// not a file.
    fn is_file(&self, path: &Path) -> bool {
        let Ok(key) = self.key(path) else { return false };
        if key.as_ref().is_empty() {
            return false;
        }
        let Ok(client) = self.client() else { return false };
        matches!(block_on(self.head(&*client, path, &key)), Ok(Ok(_)))
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

    fn list(&self, dir: &Path) -> Result<Vec<Entry>> {
        let key = self.key(dir)?;
        let prefix = (!key.as_ref().is_empty()).then_some(&key);
        let client = self.client()?;
        let listed = block_on(async { client.list_with_delimiter(prefix).await })?
            .map_err(|e| store_error(e, &dir.to_string_lossy(), "cannot list"))?;
        let mut out = Vec::with_capacity(listed.objects.len() + listed.common_prefixes.len());
        for object in &listed.objects {
            out.push(Entry { path: self.url_of(&object.location), is_dir: false });
        }
        for prefix in &listed.common_prefixes {
            out.push(Entry { path: self.url_of(prefix), is_dir: true });
        }
        Ok(out)
    }

    fn read_range(&self, path: &Path, offset: u64, len: u64) -> Result<Vec<u8>> {
        let files = self.open_files(&[path.to_path_buf()], &Backend::default())?;
        files.read_to_vec(0, offset, len)
    }

    fn read_whole(&self, path: &Path, limit: u64, what: &str) -> Result<Vec<u8>> {
        let len = self.size(path)?;
        if len > limit {
            return Err(Error::new(
                ErrorKind::Limit,
                format!("{what} is {len} bytes, above the configured limit of {limit}"),
            )
            .with_path(path));
        }
        let key = self.key(path)?;
        let body = block_on(self.fetcher.fetch(path, &key, 0..len))??;
        Ok(body.to_vec())
    }

    fn read_sequential(&self, path: &Path) -> Result<(Box<dyn Read + Send>, u64)> {
        let len = self.size(path)?;
        let reader = ChunkReader {
            fetcher: self.fetcher.clone(),
            url: path.to_path_buf(),
            key: self.key(path)?,
            len,
            pos: 0,
            chunk: Bytes::new(),
        };
        Ok((Box::new(reader), len))
    }

    fn open_files(&self, paths: &[PathBuf], _backend: &Backend) -> Result<Box<dyn ReadAt>> {
        let client = self.client()?;
        let keys = paths.iter().map(|p| self.key(p)).collect::<Result<Vec<_>>>()?;
        let heads: Vec<_> =
            paths.iter().zip(&keys).map(|(path, key)| self.head(&*client, path, key)).collect();
        let concurrency = self.fetcher.settings.concurrency.max(1);
        let lens = block_on(async move {
            use futures_util::{StreamExt, TryStreamExt};
            futures_util::stream::iter(heads).buffered(concurrency).try_collect::<Vec<u64>>().await
        })??;
        let objects = paths
            .iter()
            .zip(keys)
            .zip(lens)
            .map(|((url, key), len)| Object { url: url.clone(), key, len })
            .collect();
        Ok(Box::new(ObjectFiles::new(objects, self.fetcher.clone())))
    }
}

/// An object read from start to end in large range requests.
struct ChunkReader {
    fetcher: Fetcher,
    url: PathBuf,
    key: ObjectPath,
    len: u64,
    pos: u64,
    chunk: Bytes,
}

impl Read for ChunkReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.chunk.is_empty() {
            if self.pos >= self.len || buf.is_empty() {
                return Ok(0);
            }
            let end = self.len.min(self.pos + SEQUENTIAL_CHUNK);
            let fetch = self.fetcher.fetch(&self.url, &self.key, self.pos..end);
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
