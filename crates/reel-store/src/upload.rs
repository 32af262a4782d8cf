//! Uploading finished local files and directory trees, so that what makes a dataset
//! openable appears last and a failed upload leaves nothing behind.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures_util::StreamExt;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload, WriteMultipart};
use reel_core::{Error, Result};

use crate::error::store_error;
use crate::runtime::block_on;
use crate::store::Store;

/// Files above this size go up as multipart uploads, in parts of this size: S3's smallest
/// part is 5 MiB, and 16 MiB parts keep a 100 GiB file under S3's 10 000-part limit.
pub const MULTIPART_PART_BYTES: usize = 16 << 20;

/// Parts of one multipart upload in flight at once (each holds one part in memory).
const PARTS_IN_FLIGHT: usize = 4;

/// Objects uploaded at once in one stage of a tree upload.
const FILES_IN_FLIGHT: usize = 4;

/// One file of a tree upload and the stage it goes up in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UploadItem {
    /// The local file.
    pub local: PathBuf,
    /// Its key in the store.
    pub key: ObjectPath,
    /// Stages go up one after another, lowest first; items of one stage go up concurrently.
    /// The objects that make a dataset openable (its metadata) get the highest stage.
    pub stage: u8,
}

impl Store {
    /// Uploads the local file `local` as the object `key`: one request for small files, a
    /// multipart upload (aborted on failure) for large ones. The object appears complete or
    /// not at all.
    pub fn upload_file(&self, local: &Path, key: &ObjectPath) -> Result<u64> {
        let client = self.client()?;
        let address = self.address_of(key);
        block_on(upload_one(client.as_ref(), local, key, &address))?
    }

    /// Uploads the `size` bytes that `reader` gives as the object `key`, like
    /// [`Store::upload_file`]; a reader that fails, ends early or runs long aborts the
    /// upload and leaves no object. `source` names the reader in errors.
    pub fn upload_reader(
        &self,
        reader: &mut (dyn Read + Send),
        size: u64,
        key: &ObjectPath,
        source: &str,
    ) -> Result<u64> {
        let client = self.client()?;
        let address = self.address_of(key);
        block_on(upload_reader(client.as_ref(), reader, size, key, &address, source))?
    }

    /// Uploads `items` stage by stage (see [`UploadItem::stage`]). When anything fails, the
    /// uploads in flight are aborted and every object this call already wrote is deleted
    /// (best effort: a store that stops answering keeps what it had), then the first error
    /// is returned. Returns the bytes uploaded.
    pub fn upload_staged(&self, items: &[UploadItem]) -> Result<u64> {
        let staged: Vec<_> = items.iter().map(|i| (i.stage, i.key.clone(), i.clone())).collect();
        self.run_staged(staged, |client, address, item| async move {
            upload_one(client.as_ref(), &item.local, &item.key, &address).await
        })
    }

    /// Copies objects inside this store, stage by stage (see [`CopyItem::stage`]), as
    /// [`Store::upload_staged`] uploads files: the copies of one stage run concurrently, a
    /// stage starts when the one before has succeeded, and when anything fails every object
    /// this call already wrote is deleted (best effort) and the first error returned. The
    /// store copies the bytes itself (S3 `CopyObject`, which takes objects of up to 5 GiB;
    /// GCS rewrite; Azure copy blob); nothing passes through this process. Returns the
    /// number of objects copied.
    pub fn copy_staged(&self, items: &[CopyItem]) -> Result<u64> {
        let staged: Vec<_> = items.iter().map(|i| (i.stage, i.key.clone(), i.clone())).collect();
        self.run_staged(staged, |client, address, item| async move {
            client
                .copy(&item.from, &item.key)
                .await
                .map(|()| 1)
                .map_err(|e| store_error(e, &address, "cannot copy the object into place"))
        })
    }

    /// Deletes every object under `prefix` (recursively); returns how many there were.
    pub fn delete_prefix(&self, prefix: &ObjectPath) -> Result<usize> {
        let listed = self.list(prefix)?;
        for (key, _) in &listed {
            self.delete(key)?;
        }
        Ok(listed.len())
    }

    /// Runs `op` on every `(stage, key, item)` of `items`, the stages one after another
    /// (lowest first), up to [`FILES_IN_FLIGHT`] items of one stage at once; on a failure,
    /// deletes the keys already written and returns the first error. Returns the sum of what
    /// `op` returned.
    fn run_staged<T, F, Fut>(&self, items: Vec<(u8, ObjectPath, T)>, op: F) -> Result<u64>
    where
        T: Send + 'static,
        F: Fn(Arc<dyn ObjectStore>, String, T) -> Fut,
        Fut: std::future::Future<Output = Result<u64>> + Send,
    {
        let client = self.client()?;
        let mut stages: Vec<u8> = items.iter().map(|i| i.0).collect();
        stages.sort_unstable();
        stages.dedup();
        let mut pending = items;
        let mut written: Vec<ObjectPath> = Vec::new();
        let mut total = 0u64;
        for stage in stages {
            let (now, later): (Vec<_>, Vec<_>) = pending.into_iter().partition(|i| i.0 == stage);
            pending = later;
            // The futures own what they use (no closure borrows across the await), which
            // keeps them `Send` for the runtime.
            let runs: Vec<_> = now
                .into_iter()
                .map(|(_, key, item)| {
                    let run = op(Arc::clone(&client), self.address_of(&key), item);
                    async move { (key, run.await) }
                })
                .collect();
            let results = block_on(
                futures_util::stream::iter(runs)
                    .buffer_unordered(FILES_IN_FLIGHT)
                    .collect::<Vec<_>>(),
            )?;
            let mut failure = None;
            for (key, result) in results {
                match result {
                    Ok(n) => {
                        total += n;
                        written.push(key);
                    }
                    Err(e) => {
                        failure.get_or_insert(e);
                    }
                }
            }
            if let Some(e) = failure {
                for key in &written {
                    if let Err(cleanup) = self.delete(key) {
                        log::warn!("{cleanup}");
                    }
                }
                return Err(e);
            }
        }
        Ok(total)
    }
}

/// One object of a staged copy ([`Store::copy_staged`]) and the stage it is copied in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopyItem {
    /// The object copied.
    pub from: ObjectPath,
    /// Where its copy goes.
    pub key: ObjectPath,
    /// Stages are copied one after another, lowest first (see [`UploadItem::stage`]).
    pub stage: u8,
}

async fn upload_one(
    client: &dyn ObjectStore,
    local: &Path,
    key: &ObjectPath,
    address: &str,
) -> Result<u64> {
    let open_error = |e: std::io::Error| {
        Error::io(e, format!("cannot read {} to upload it", local.display())).with_path(address)
    };
    let mut file = std::fs::File::open(local).map_err(open_error)?;
    let size = file.metadata().map_err(open_error)?.len();
    upload_reader(client, &mut file, size, key, address, &local.display().to_string()).await
}

/// Uploads the `size` bytes `reader` gives as `key`; `source` names the reader in errors.
/// Over [`MULTIPART_PART_BYTES`] this is a multipart upload, aborted when anything fails
/// (a read error, a reader that ends early or runs long, a part the store refuses), so no
/// incomplete upload is left to be billed or completed by mistake.
async fn upload_reader(
    client: &dyn ObjectStore,
    reader: &mut (dyn Read + Send),
    size: u64,
    key: &ObjectPath,
    address: &str,
    source: &str,
) -> Result<u64> {
    let read_error = |e: std::io::Error| {
        Error::io(e, format!("cannot read {source} to upload it")).with_path(address)
    };
    let changed = || {
        Error::new(reel_core::ErrorKind::Io, format!("{source} changed size while it was uploaded"))
            .with_path(address)
    };
    if size <= MULTIPART_PART_BYTES as u64 {
        let mut bytes = Vec::with_capacity(size as usize);
        // One byte more than announced shows a reader that runs long.
        reader.take(size + 1).read_to_end(&mut bytes).map_err(read_error)?;
        if bytes.len() as u64 != size {
            return Err(changed());
        }
        client
            .put(key, PutPayload::from(bytes))
            .await
            .map_err(|e| store_error(e, address, "cannot write the object"))?;
        return Ok(size);
    }
    let upload = client
        .put_multipart(key)
        .await
        .map_err(|e| store_error(e, address, "cannot start a multipart upload"))?;
    let mut writer = WriteMultipart::new_with_chunk_size(upload, MULTIPART_PART_BYTES);
    let mut buf = vec![0u8; MULTIPART_PART_BYTES];
    let mut sent = 0u64;
    let outcome: Result<()> = async {
        loop {
            writer
                .wait_for_capacity(PARTS_IN_FLIGHT)
                .await
                .map_err(|e| store_error(e, address, "cannot upload a part"))?;
            let n = read_full(reader, &mut buf).map_err(read_error)?;
            if n == 0 {
                break;
            }
            sent += n as u64;
            if sent > size {
                return Err(changed());
            }
            writer.write(&buf[..n]);
        }
        if sent != size {
            return Err(changed());
        }
        Ok(())
    }
    .await;
    match outcome {
        // `finish` aborts the upload itself when a part or the completion fails.
        Ok(()) => writer
            .finish()
            .await
            .map(|_| size)
            .map_err(|e| store_error(e, address, "cannot complete the multipart upload")),
        Err(e) => {
            if let Err(abort) = writer.abort().await {
                log::warn!("{address}: cannot abort the multipart upload: {abort}");
            }
            Err(e)
        }
    }
}

/// Reads until `buf` is full or the file ends.
fn read_full(file: &mut (dyn Read + Send), buf: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match file.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}
