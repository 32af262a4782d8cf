//! Batched reads from object storage: the [`ReadAt`] behind every format opened from a URL.
//!
//! A batch of record reads becomes as few requests as possible: its ranges are sorted and
//! merged where the gap between them is at most [`ReadSettings::coalesce_gap`] (reading a few
//! unwanted bytes costs less than a round trip), the merged ranges are fetched with at most
//! [`ReadSettings::concurrency`] range GETs in flight at once, and each record's bytes are
//! copied once, from the response body into the batch buffer. So a random batch costs about one
//! round trip plus its transfer time, not one round trip per record.
//!
//! Every request has a deadline ([`ReadSettings::request_timeout`]). A request that fails with
//! an I/O error (a timeout, a 5xx or throttling answer that object_store's own retries gave up
//! on, a connection cut mid-body) or whose body is shorter than asked is tried again, up to
//! [`ReadSettings::attempts`] times, after an exponential backoff with jitter; a short body is
//! never returned. The error that ends it names the object's URL and the byte range.

use std::collections::BTreeSet;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use futures_util::{StreamExt, TryStreamExt};
use object_store::{GetOptions, GetRange};
use reel_core::io::cancel::CancelCheck;
use reel_core::{Error, ErrorKind, ReadAt, ReadReq, Result};

use crate::ObjectPath;
use crate::cache::{CacheSettings, ChunkCache, ObjectId};
use crate::ends::{Ends, window_for};
use crate::error::store_error;
use crate::runtime::block_on;

/// How batched reads from an object store are shaped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadSettings {
    /// Two ranges of one object whose gap is at most this many bytes are fetched by one
    /// request (the gap is read and dropped). Default 1 MiB, as `object_store` and
    /// parquet-rs coalesce: at the 50–100 MB/s one S3 connection carries, 1 MiB transfers
    /// in 10–20 ms, less than the round trip a separate request costs, and a store bills
    /// by the request, not by the byte read within a region. (At 64 KiB, issue 20's moto
    /// benchmark read 64 KiB records at 11.5–14× one request per record; at 1 MiB, 28–31×.)
    pub coalesce_gap: u64,
    /// A merged request grows to at most this many bytes (unless one record is larger), so a
    /// batch of neighbouring records still spreads over several concurrent requests. Default
    /// 8 MiB.
    pub max_request_bytes: u64,
    /// Requests of one batch in flight at once. Default 64.
    pub concurrency: usize,
    /// Tries per request (the first included) on I/O errors and short bodies. Default 5.
    pub attempts: u32,
    /// The first wait before trying again; it doubles with each try, drawn at random (full
    /// jitter) up to that value. Default 50 ms.
    pub initial_backoff: Duration,
    /// Deadline of one request, from sending it to the end of its body. Default 60 s.
    pub request_timeout: Duration,
    /// A local cache of record bytes (see [`crate::cache`]); none by default. The facade
    /// also takes it from the environment ([`crate::CACHE_DIR_ENV`]).
    pub cache: Option<CacheSettings>,
}

impl Default for ReadSettings {
    fn default() -> Self {
        ReadSettings {
            coalesce_gap: 1 << 20,
            max_request_bytes: 8 << 20,
            concurrency: 64,
            attempts: 5,
            initial_backoff: Duration::from_millis(50),
            request_timeout: Duration::from_secs(60),
            cache: None,
        }
    }
}

/// Counts of what a reader did, for reports and tests.
#[derive(Debug, Default)]
pub struct ReadStats {
    requests: AtomicU64,
    retries: AtomicU64,
    bytes: AtomicU64,
    pub(crate) metadata_requests: AtomicU64,
}

impl ReadStats {
    /// Range requests sent (retries included).
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    /// Requests that were tries after a failure.
    pub fn retries(&self) -> u64 {
        self.retries.load(Ordering::Relaxed)
    }

    /// Bytes received in bodies that were used.
    pub fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    /// Requests that asked about objects rather than read records: HEADs, listings and the
    /// first-bytes GETs that learn an object's size (see [`crate::RemoteStore`]).
    pub fn metadata_requests(&self) -> u64 {
        self.metadata_requests.load(Ordering::Relaxed)
    }
}

/// Fetches byte ranges of objects with deadlines and retries; shared by the readers and the
/// store's metadata reads.
///
/// It holds the [`Store`], not a client: the store rebuilds its client in a forked child (a
/// PyTorch DataLoader worker), and a reader opened before the fork must follow it rather
/// than use the parent's connections.
#[derive(Debug, Clone)]
pub(crate) struct Fetcher {
    pub store: Arc<crate::Store>,
    pub settings: ReadSettings,
    pub stats: Arc<ReadStats>,
    /// Ends of objects fetched while opening, shared by the store and its file sets.
    pub ends: Arc<Ends>,
    /// The local chunk cache, when the settings ask for one.
    pub cache: Option<Arc<ChunkCache>>,
}

impl Fetcher {
    /// `range` of `object` for a read made alone: from a kept end window, else, if the range
    /// lies in an end window, by fetching and keeping that whole window, else as asked.
    pub async fn fetch_near_end(&self, object: &Object, range: Range<u64>) -> Result<Bytes> {
        if let Some(bytes) = self.ends.get(&object.key, object.len, &range) {
            return Ok(bytes);
        }
        let Some((end, window)) = window_for(object.len, &range) else {
            return self.fetch(object, range).await;
        };
        let bytes = self.fetch(object, window.clone()).await?;
        self.ends.keep(&object.key, end, bytes.clone());
        Ok(bytes.slice((range.start - window.start) as usize..(range.end - window.start) as usize))
    }

    /// Exactly `range` of `object`, retried as the module docs say.
    pub async fn fetch(&self, object: &Object, range: Range<u64>) -> Result<Bytes> {
        let (url, key) = (&object.url, &object.key);
        let want = range.end - range.start;
        if want == 0 {
            return Ok(Bytes::new());
        }
        let what = format!("cannot read bytes {}..{}", range.start, range.end);
        let client = self.store.client()?;
        let attempts = self.settings.attempts.max(1);
        let mut last = None;
        let mut tries = 0;
        for attempt in 0..attempts {
            tries = attempt + 1;
            if attempt > 0 {
                self.stats.retries.fetch_add(1, Ordering::Relaxed);
                tokio::time::sleep(backoff(self.settings.initial_backoff, attempt)).await;
            }
            self.stats.requests.fetch_add(1, Ordering::Relaxed);
            // Each read names the version of the object that was opened: bytes of an
            // object replaced since (a new upload to the same key) would be read as part of
            // the old one, and mixed with what is cached or already read, without a word.
            let options = GetOptions {
                range: Some(GetRange::Bounded(range.clone())),
                if_match: object.strong_etag(),
                ..GetOptions::default()
            };
            let request = async { client.get_opts(key, options).await?.bytes().await };
            let error = match tokio::time::timeout(self.settings.request_timeout, request).await {
                Ok(Ok(bytes)) if bytes.len() as u64 == want => {
                    self.stats.bytes.fetch_add(want, Ordering::Relaxed);
                    return Ok(bytes);
                }
                Ok(Ok(bytes)) => Error::new(
                    ErrorKind::Io,
                    format!("{what}: the store sent {} bytes of {want}", bytes.len()),
                ),
                Ok(Err(object_store::Error::Precondition { .. })) => {
                    // Another try would meet the same new object.
                    return Err(Error::new(
                        ErrorKind::Io,
                        format!(
                            "{what}: the object changed after the dataset was opened (it no \
                             longer has the entity tag {}); open the dataset again",
                            object.etag.as_deref().unwrap_or("")
                        ),
                    )
                    .with_path(url)
                    .with_offset(range.start));
                }
                Ok(Err(e)) => store_error(e, &url.to_string_lossy(), &what),
                Err(_) => Error::io(
                    std::io::Error::from(std::io::ErrorKind::TimedOut),
                    format!(
                        "{what}: no complete answer within {:?} (the request deadline)",
                        self.settings.request_timeout
                    ),
                ),
            };
            // Only transient failures are worth another try: a missing object, a refused
            // range or bad credentials will not change. Nor is a request that got no answer
            // within the deadline while object_store retried it inside that time: trying
            // again would multiply the wait (five deadlines of a minute against a server
            // that never answers) for a store whose retries have been spent.
            let timed_out =
                error.io_error().is_some_and(|e| e.kind() == std::io::ErrorKind::TimedOut);
            // (object_store had time to retry only when its own timeout is well inside the
            // deadline: a user's `timeout` sets both alike, and reel retries then.)
            let store = self.store.options();
            let retried_inside = store.retry.max_retries > 0
                && self.settings.request_timeout >= store.timeout.saturating_mul(2);
            let transient = error.kind() == ErrorKind::Io && !(timed_out && retried_inside);
            last = Some(error);
            if !transient {
                break;
            }
        }
        let error = last.unwrap_or_else(|| Error::new(ErrorKind::Io, what.clone()));
        let message = if tries > 1 {
            format!("{} (gave up after {tries} tries)", error.message())
        } else {
            error.message().to_string()
        };
        Err(Error::new(error.kind(), message).with_path(url).with_offset(range.start))
    }
}

fn req_end(r: &ReadReq) -> u64 {
    r.offset + r.len as u64
}

/// Full jitter: a wait drawn uniformly from `0..=initial * 2^(attempt-1)`, capped at 5 s.
fn backoff(initial: Duration, attempt: u32) -> Duration {
    let ceiling = initial.saturating_mul(1u32 << attempt.saturating_sub(1).min(16));
    let ceiling = ceiling.min(Duration::from_secs(5));
    let nanos = ceiling.as_nanos() as u64;
    if nanos == 0 {
        return ceiling;
    }
    Duration::from_nanos(jitter() % (nanos + 1))
}

/// A cheap pseudo-random number (splitmix64 over the clock and a counter): jitter only needs
/// callers not to wait in lockstep.
fn jitter() -> u64 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let clock = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let mut z = clock ^ COUNTER.fetch_add(0x9e37_79b9_7f4a_7c15, Ordering::Relaxed);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// One object of a file set, or one whose metadata is read.
#[derive(Clone, Debug)]
pub(crate) struct Object {
    /// Its URL, for messages.
    pub url: PathBuf,
    pub key: ObjectPath,
    pub len: u64,
    /// Its entity tag, when the store told it (a replaced object has another).
    pub etag: Option<String>,
    /// When it last changed, in seconds since 1970 (what tells a replaced object from the
    /// one opened when the store sends no entity tag).
    pub modified: i64,
}

impl Object {
    /// Its identity in the chunk cache: URL, size and tag, or without a tag the time it
    /// last changed, so that an object replaced by one of the same size is not read from
    /// chunks of the old one.
    fn cache_id(&self) -> ObjectId {
        let version = match &self.etag {
            // Without quotes, which a listing and a HEAD may spell differently.
            Some(tag) => format!("etag {}", tag.trim_matches('"')),
            None => format!("modified {}", self.modified),
        };
        ObjectId::new(&self.url.to_string_lossy(), self.len, &version)
    }

    /// The entity tag a range read is made conditional on, quoted as `If-Match` wants it: a
    /// strong tag only, since a server compares `If-Match` strongly and refuses every read
    /// against a weak one (`W/"…"`, which servers that compress on the fly send). Listings
    /// may spell a tag without its quotes (Azure's `<Etag>0x8D…</Etag>` against the header's
    /// `"0x8D…"`): the quotes are put back.
    fn strong_etag(&self) -> Option<String> {
        let tag = self.etag.as_deref().filter(|tag| !tag.starts_with("W/") && !tag.is_empty())?;
        Some(if tag.starts_with('"') { tag.to_owned() } else { format!("\"{tag}\"") })
    }
}

/// A set of objects read as one [`ReadAt`]: coalesced, concurrent range GETs per batch.
#[derive(Debug)]
pub struct ObjectFiles {
    objects: Vec<Object>,
    /// Each object's name in the chunk cache (empty without a cache).
    cache_ids: Vec<ObjectId>,
    fetcher: Fetcher,
}

/// One request of a batch: a range of one object and the batch requests it serves.
#[derive(Debug, PartialEq, Eq)]
struct Fetch {
    file: u32,
    start: u64,
    end: u64,
    /// Indices into the sorted request list.
    members: Range<usize>,
}

/// Sorts `reqs` by object and offset and merges neighbours into fetches (see
/// [`ReadSettings::coalesce_gap`] and [`ReadSettings::max_request_bytes`]).
fn plan(reqs: &[ReadReq], settings: &ReadSettings) -> (Vec<ReadReq>, Vec<Fetch>) {
    let mut sorted: Vec<ReadReq> = reqs.iter().copied().filter(|r| r.len > 0).collect();
    sorted.sort_by_key(|r| (r.file, r.offset, r.len));
    let mut fetches: Vec<Fetch> = Vec::new();
    for (i, r) in sorted.iter().enumerate() {
        let end = r.offset + r.len as u64;
        if let Some(f) = fetches.last_mut() {
            let near = r.file == f.file && r.offset <= f.end.saturating_add(settings.coalesce_gap);
            let small = end.max(f.end) - f.start <= settings.max_request_bytes;
            if near && small {
                f.end = f.end.max(end);
                f.members.end = i + 1;
                continue;
            }
        }
        fetches.push(Fetch { file: r.file, start: r.offset, end, members: i..i + 1 });
    }
    (sorted, fetches)
}

impl ObjectFiles {
    pub(crate) fn new(objects: Vec<Object>, fetcher: Fetcher) -> Self {
        let cache_ids = match fetcher.cache {
            Some(_) => objects.iter().map(Object::cache_id).collect(),
            None => Vec::new(),
        };
        ObjectFiles { objects, cache_ids, fetcher }
    }

    /// [`ReadAt::read_many`] through the chunk cache: each request is read from the chunks
    /// it lies in; the chunks that are missing (or damaged, which the cache finds and
    /// deletes) are fetched, as runs of consecutive chunks with concurrent range GETs, kept
    /// in the cache, and copied out as each run arrives.
    fn read_many_cached(
        &self,
        cache: &ChunkCache,
        reqs: &[ReadReq],
        dest: &mut [u8],
    ) -> Result<()> {
        let chunk = cache.chunk_bytes();
        let mut pending: Vec<ReadReq> = Vec::new();
        let mut missing: BTreeSet<(u32, u64)> = BTreeSet::new();
        for r in reqs.iter().filter(|r| r.len > 0) {
            let object = &self.objects[r.file as usize];
            let id = &self.cache_ids[r.file as usize];
            let (end, out) = (req_end(r), reel_core::io::dest_slice(dest, r)?);
            let (first, last) = (r.offset / chunk, (end - 1) / chunk);
            // Only the chunks the cache lacks are fetched: those it has are copied out here,
            // and fetching them again would also count their bytes twice in its usage.
            let mut served = true;
            for c in first..=last {
                let (start, stop) = ((c * chunk).max(r.offset), ((c + 1) * chunk).min(end));
                let piece = &mut out[(start - r.offset) as usize..(stop - r.offset) as usize];
                let chunk_len = chunk.min(object.len - c * chunk);
                if !cache.read(id, c, chunk_len, start - c * chunk, piece) {
                    served = false;
                    missing.insert((r.file, c));
                }
            }
            if !served {
                pending.push(*r);
            }
        }
        if pending.is_empty() {
            return Ok(());
        }
        // Runs of consecutive chunks of one object, each at most `max_request_bytes` (and
        // at least one chunk).
        let per_run = (self.fetcher.settings.max_request_bytes / chunk).max(1);
        let mut runs: Vec<(u32, Range<u64>)> = Vec::new();
        for (file, c) in missing {
            match runs.last_mut() {
                Some((f, run)) if *f == file && run.end == c && run.end - run.start < per_run => {
                    run.end += 1;
                }
                _ => runs.push((file, c..c + 1)),
            }
        }
        // A cancelled read ([`reel_core::io::cancel`]) starts no more requests and
        // abandons those in flight.
        let cancel = &CancelCheck::current();
        let requests: Vec<_> = runs
            .iter()
            .map(|(file, run)| {
                let object = &self.objects[*file as usize];
                let bytes = run.start * chunk..(run.end * chunk).min(object.len);
                async move {
                    cancel.check()?;
                    let body = self.fetcher.fetch(object, bytes.clone()).await?;
                    Ok::<_, Error>((*file, run.clone(), bytes, body))
                }
            })
            .collect();
        let concurrency = self.fetcher.settings.concurrency.max(1);
        let pending = &pending;
        // Bytes of new chunk files, counted in the cache's shared usage once, at the end,
        // whether or not every request succeeded.
        let mut added = 0u64;
        let added_ref = &mut added;
        // Each answer is copied and stored whole between two awaits, so a batch abandoned
        // when it is cancelled leaves no chunk half-stored.
        let result = block_on(unless_cancelled(cancel, async move {
            let mut arriving = futures_util::stream::iter(requests).buffer_unordered(concurrency);
            while let Some(answer) = arriving.next().await {
                let (file, run, bytes, body) = answer?;
                let id = &self.cache_ids[file as usize];
                for c in run {
                    let from = (c * chunk - bytes.start) as usize;
                    let to = (from + chunk as usize).min(body.len());
                    *added_ref += cache.store(id, c, &body[from..to]);
                }
                for r in pending.iter().filter(|r| r.file == file) {
                    let (start, stop) = (r.offset.max(bytes.start), req_end(r).min(bytes.end));
                    if start >= stop {
                        continue;
                    }
                    let out = reel_core::io::dest_slice(dest, r)?;
                    out[(start - r.offset) as usize..(stop - r.offset) as usize].copy_from_slice(
                        &body[(start - bytes.start) as usize..(stop - bytes.start) as usize],
                    );
                }
            }
            Ok(())
        }));
        cache.count_added(added);
        result?
    }

    /// What this reader has done so far.
    pub fn stats(&self) -> &ReadStats {
        &self.fetcher.stats
    }

    /// The settings reads are shaped by.
    pub fn settings(&self) -> &ReadSettings {
        &self.fetcher.settings
    }

    fn object(&self, file: u32) -> Result<&Object> {
        self.objects
            .get(file as usize)
            .ok_or_else(|| Error::invalid_input(format!("no file number {file} in the set")))
    }

    async fn fetch_one(&self, i: usize, f: &Fetch) -> Result<(usize, Bytes)> {
        let object = self.object(f.file)?;
        let body = self.fetcher.fetch(object, f.start..f.end).await?;
        Ok((i, body))
    }

    fn check(&self, r: &ReadReq) -> Result<()> {
        let object = self.object(r.file)?;
        let end = r.offset.checked_add(r.len as u64);
        if end.is_none_or(|end| end > object.len) {
            return Err(Error::corrupt(format!(
                "unexpected end of object: wanted {} bytes at offset {}, the object has {} bytes",
                r.len, r.offset, object.len
            ))
            .with_path(&object.url)
            .with_offset(r.offset));
        }
        Ok(())
    }
}

impl ReadAt for ObjectFiles {
    fn backend_name(&self) -> &'static str {
        "object-store"
    }

    fn file_count(&self) -> usize {
        self.objects.len()
    }

    fn file_len(&self, file: u32) -> u64 {
        self.objects.get(file as usize).map_or(0, |o| o.len)
    }

    fn file_path(&self, file: u32) -> &Path {
        self.objects.get(file as usize).map_or(Path::new("<no such object>"), |o| &o.url)
    }

    /// A read alone is a format reading its metadata (a header, an index, a frame during
    /// a scan): near an end of the object it fetches that end's whole window, which the
    /// next such reads find in memory.
    fn read_exact_at(&self, file: u32, offset: u64, buf: &mut [u8]) -> Result<()> {
        let req = ReadReq { file, offset, len: buf.len(), dest: 0 };
        self.check(&req)?;
        let object = self.object(file)?;
        let range = offset..req_end(&req);
        if self.fetcher.cache.is_some()
            && self.fetcher.ends.get(&object.key, object.len, &range).is_none()
        {
            // A record read alone; the cache has it, or will.
            return self.read_many(&[req], buf);
        }
        let bytes = block_on(self.fetcher.fetch_near_end(object, range))??;
        buf.copy_from_slice(&bytes);
        Ok(())
    }

    fn read_many(&self, reqs: &[ReadReq], dest: &mut [u8]) -> Result<()> {
        for r in reqs {
            self.check(r)?;
            reel_core::io::dest_slice(dest, r)?;
        }
        if let Some(cache) = &self.fetcher.cache {
            return self.read_many_cached(cache, reqs, dest);
        }
        // Reads inside an end of an object that opening it fetched (a header read at open,
        // again) are answered from memory.
        let mut remote = Vec::new();
        for r in reqs {
            let object = &self.objects[r.file as usize];
            let range = r.offset..r.offset + r.len as u64;
            match self.fetcher.ends.get(&object.key, object.len, &range) {
                Some(bytes) => reel_core::io::dest_slice(dest, r)?.copy_from_slice(&bytes),
                None => remote.push(*r),
            }
        }
        let (sorted, fetches) = plan(&remote, &self.fetcher.settings);
        if fetches.is_empty() {
            return Ok(());
        }
        let concurrency = self.fetcher.settings.concurrency.max(1);
        // The futures are made here, outside the async block, so that block holds no
        // closure over borrowed data (which the Send bound of `block_on` cannot name).
        // A cancelled read ([`reel_core::io::cancel`]) starts no more requests and
        // abandons those in flight.
        let cancel = &CancelCheck::current();
        let requests: Vec<_> = fetches
            .iter()
            .enumerate()
            .map(|(i, f)| async move {
                cancel.check()?;
                self.fetch_one(i, f).await
            })
            .collect();
        let all = async move {
            futures_util::stream::iter(requests).buffer_unordered(concurrency).try_collect().await
        };
        let bodies: Vec<(usize, Bytes)> = block_on(unless_cancelled(cancel, all))??;
        for (i, body) in bodies {
            let f = &fetches[i];
            for r in &sorted[f.members.clone()] {
                let from = (r.offset - f.start) as usize;
                let out = reel_core::io::dest_slice(dest, r)?;
                out.copy_from_slice(&body[from..from + r.len]);
            }
        }
        Ok(())
    }
}

/// How often a request in flight looks at the cancel flag of the read it belongs to.
const CANCEL_POLL: Duration = Duration::from_millis(10);

/// `requests` (a batch's range requests, with their retries), or a `Closed` error once the
/// read they belong to is cancelled ([`reel_core::io::cancel`]): before they start, or
/// within [`CANCEL_POLL`] while they wait for answers, retries or backoffs. They are then
/// dropped, abandoning their connections; an answer is copied into the batch only whole.
/// One watch per batch, not per request: a timer per request in flight woke the runtime
/// thousands of times a second.
async fn unless_cancelled<T>(
    cancel: &CancelCheck,
    requests: impl std::future::Future<Output = Result<T>>,
) -> Result<T> {
    cancel.check()?;
    if !cancel.watched() {
        return requests.await;
    }
    let watch = async {
        loop {
            tokio::time::sleep(CANCEL_POLL).await;
            if let Err(e) = cancel.check() {
                return e;
            }
        }
    };
    futures_util::pin_mut!(requests, watch);
    match futures_util::future::select(requests, watch).await {
        futures_util::future::Either::Left((answer, _)) => answer,
        futures_util::future::Either::Right((cancelled, _)) => Err(cancelled),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(file: u32, offset: u64, len: usize, dest: usize) -> ReadReq {
        ReadReq { file, offset, len, dest }
    }

    #[test]
    fn plan_sorts_merges_within_the_gap_and_caps_request_size() {
        let settings =
            ReadSettings { coalesce_gap: 10, max_request_bytes: 80, ..Default::default() };
        let reqs = [
            req(0, 50, 10, 0),  // 50..60
            req(0, 0, 10, 10),  // 0..10
            req(0, 15, 5, 20),  // 15..20: gap 5 from 0..10, merges
            req(1, 0, 4, 25),   // another object
            req(0, 95, 30, 29), // 95..125: 35 bytes after 50..60, beyond the gap
            req(0, 130, 60, 0), // 130..190: near, but 95..190 is 95 bytes > 80
            req(0, 140, 0, 0),  // empty: no request
        ];
        let (sorted, fetches) = plan(&reqs, &settings);
        assert_eq!(sorted.len(), 6);
        let ranges: Vec<_> = fetches.iter().map(|f| (f.file, f.start, f.end)).collect();
        assert_eq!(ranges, vec![(0, 0, 20), (0, 50, 60), (0, 95, 125), (0, 130, 190), (1, 0, 4)]);
        let members: usize = fetches.iter().map(|f| f.members.len()).sum();
        assert_eq!(members, 6);
    }

    #[test]
    fn an_object_replaced_by_one_of_its_size_is_another_object_in_the_cache() {
        let object = |etag: Option<&str>, modified| Object {
            url: PathBuf::from("http://h/x.ffr"),
            key: ObjectPath::from("x.ffr"),
            len: 4096,
            etag: etag.map(str::to_owned),
            modified,
        };
        // Without a tag, the time of the change tells the versions apart.
        assert_ne!(object(None, 100).cache_id(), object(None, 101).cache_id());
        assert_eq!(object(None, 100).cache_id(), object(None, 100).cache_id());
        // With one, the tag does, and a copy that only moved the time is the same bytes.
        assert_ne!(object(Some("\"a\""), 100).cache_id(), object(Some("\"b\""), 100).cache_id());
        assert_eq!(object(Some("\"a\""), 100).cache_id(), object(Some("\"a\""), 101).cache_id());
        // Only a strong tag makes reads conditional: servers compare If-Match strongly.
        assert_eq!(object(Some("\"a\""), 0).strong_etag().as_deref(), Some("\"a\""));
        assert_eq!(object(Some("0x8D1"), 0).strong_etag().as_deref(), Some("\"0x8D1\""));
        assert_eq!(object(Some("W/\"a\""), 0).strong_etag(), None);
    }

    #[test]
    fn backoff_stays_within_its_ceiling() {
        for attempt in 1..20 {
            let wait = backoff(Duration::from_millis(50), attempt);
            assert!(wait <= Duration::from_secs(5), "{wait:?}");
            let ceiling = Duration::from_millis(50) * (1 << (attempt - 1).min(16));
            assert!(wait <= ceiling);
        }
    }
}
