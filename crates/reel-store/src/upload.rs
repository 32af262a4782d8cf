//! Uploading finished local files and directory trees, so that what makes a dataset
//! openable appears last and a failed upload leaves nothing behind.

use std::io::Read;
use std::path::{Path, PathBuf};

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

    /// Uploads `items` stage by stage (see [`UploadItem::stage`]). When anything fails, the
    /// uploads in flight are aborted and every object this call already wrote is deleted
    /// (best effort: a store that stops answering keeps what it had), then the first error
    /// is returned. Returns the bytes uploaded.
    pub fn upload_staged(&self, items: &[UploadItem]) -> Result<u64> {
        let client = self.client()?;
        let mut stages: Vec<u8> = items.iter().map(|i| i.stage).collect();
        stages.sort_unstable();
        stages.dedup();
        let mut written: Vec<ObjectPath> = Vec::new();
        let mut total = 0u64;
        for stage in stages {
            let batch: Vec<&UploadItem> = items.iter().filter(|i| i.stage == stage).collect();
            let results = block_on(async {
                futures_util::stream::iter(batch.iter().map(|item| {
                    let client = client.as_ref();
                    let address = self.address_of(&item.key);
                    async move {
                        (item, upload_one(client, &item.local, &item.key, &address).await)
                    }
                }))
                .buffer_unordered(FILES_IN_FLIGHT)
                .collect::<Vec<_>>()
                .await
            })?;
            let mut failure = None;
            for (item, result) in results {
                match result {
                    Ok(bytes) => {
                        total += bytes;
                        written.push(item.key.clone());
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

async fn upload_one(
    client: &dyn ObjectStore,
    local: &Path,
    key: &ObjectPath,
    address: &str,
) -> Result<u64> {
    let read_error = |e: std::io::Error| {
        Error::io(e, format!("cannot read {} to upload it", local.display())).with_path(address)
    };
    let mut file = std::fs::File::open(local).map_err(read_error)?;
    let size = file.metadata().map_err(read_error)?.len();
    if size <= MULTIPART_PART_BYTES as u64 {
        let mut bytes = Vec::with_capacity(size as usize);
        file.read_to_end(&mut bytes).map_err(read_error)?;
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
            let n = read_full(&mut file, &mut buf).map_err(read_error)?;
            if n == 0 {
                break;
            }
            writer.write(&buf[..n]);
            sent += n as u64;
        }
        if sent != size {
            return Err(Error::new(
                reel_core::ErrorKind::Io,
                format!("{} changed size while it was uploaded", local.display()),
            )
            .with_path(address));
        }
        Ok(())
    }
    .await;
    match outcome {
        Ok(()) => {
            writer
                .finish()
                .await
                .map_err(|e| store_error(e, address, "cannot complete the multipart upload"))?;
            Ok(size)
        }
        Err(e) => {
            if let Err(abort) = writer.abort().await {
                log::warn!("{address}: cannot abort the multipart upload: {abort}");
            }
            Err(e)
        }
    }
}

/// Reads until `buf` is full or the file ends.
fn read_full(file: &mut std::fs::File, buf: &mut [u8]) -> std::io::Result<usize> {
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
