//! A configured object store, rebuilt in a forked child, with synchronous operations.

use std::ops::Range;
use std::sync::{Arc, Mutex, Once, PoisonError};

use bytes::Bytes;
use futures_util::TryStreamExt;
use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
use object_store::azure::{AzureConfigKey, MicrosoftAzureBuilder};
use object_store::gcp::{GoogleCloudStorageBuilder, GoogleConfigKey};
use object_store::http::HttpBuilder;
use object_store::path::Path as ObjectPath;
use object_store::{ClientConfigKey, ObjectStore, ObjectStoreExt};
use reel_core::{Error, Result};

use crate::address::{ObjectUrl, StoreKind};
use crate::error::store_error;
use crate::options::{StoreOptions, duration_setting};
use crate::runtime::{block_on, current_pid};

/// One object store (a bucket, container or HTTP origin) with its settings.
///
/// The underlying `object_store` client is built on first use and rebuilt when the process
/// id changes: its pooled connections belong to the runtime of the process that opened them,
/// which a forked child does not have (see [`crate::runtime`]).
#[derive(Debug)]
pub struct Store {
    url: ObjectUrl,
    options: StoreOptions,
    client: Mutex<Option<(u32, Arc<dyn ObjectStore>)>>,
}

impl Store {
    /// A store for the bucket, container or origin of `url`, configured from the
    /// environment (unless `options.use_env` is false) and `options`. Settings are checked
    /// here: an unknown option or a missing bucket fails now, not at the first read.
    pub fn new(url: &ObjectUrl, options: &StoreOptions) -> Result<Store> {
        let store = Store { url: url.clone(), options: options.clone(), client: Mutex::new(None) };
        store.client()?;
        Ok(store)
    }

    /// The URL this store was made from (its path is the dataset's key prefix).
    pub fn url(&self) -> &ObjectUrl {
        &self.url
    }

    /// The settings this store was made with.
    pub fn options(&self) -> &StoreOptions {
        &self.options
    }

    /// The object_store client of this process, for async callers and for operations the
    /// synchronous helpers below do not cover. Run its futures on [`crate::runtime`].
    pub fn client(&self) -> Result<Arc<dyn ObjectStore>> {
        let pid = current_pid();
        let mut slot = self.client.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((owner, client)) = slot.as_ref()
            && *owner == pid
        {
            return Ok(Arc::clone(client));
        }
        if let Some((_, inherited)) = slot.take() {
            // Its connections are registered with the parent's runtime; dropping them here
            // could touch that runtime's state, so they are leaked like the runtime itself.
            std::mem::forget(inherited);
        }
        let client = build_client(&self.url, &self.options)?;
        *slot = Some((pid, Arc::clone(&client)));
        Ok(client)
    }

    /// The address of `key` for messages: the store URL followed by the key.
    pub fn address_of(&self, key: &ObjectPath) -> String {
        format!("{}/{}", self.url.store_url(), key)
    }

    /// Bytes `range` of the object `key`. A body of any other length is an error, never
    /// returned.
    pub fn read_range(&self, key: &ObjectPath, range: Range<u64>) -> Result<Bytes> {
        let client = self.client()?;
        let what = || format!("cannot read bytes {}..{}", range.start, range.end);
        if range.start > range.end {
            return Err(Error::invalid_input(what()).with_path(self.address_of(key)));
        }
        if range.start == range.end {
            return Ok(Bytes::new());
        }
        let bytes = block_on(async { client.get_range(key, range.clone()).await })?
            .map_err(|e| store_error(e, &self.address_of(key), &what()))?;
        let want = range.end - range.start;
        if bytes.len() as u64 != want {
            return Err(Error::new(
                reel_core::ErrorKind::Io,
                format!("{}: the store answered {} bytes", what(), bytes.len()),
            )
            .with_path(self.address_of(key)));
        }
        Ok(bytes)
    }

    /// The size of the object `key` (one HEAD). A missing object is
    /// [`ErrorKind::NotFound`](reel_core::ErrorKind::NotFound).
    pub fn size(&self, key: &ObjectPath) -> Result<u64> {
        let client = self.client()?;
        let meta = block_on(async { client.head(key).await })?
            .map_err(|e| store_error(e, &self.address_of(key), "cannot get the object's size"))?;
        Ok(meta.size)
    }

    /// Whether the object `key` exists (one HEAD).
    pub fn exists(&self, key: &ObjectPath) -> Result<bool> {
        match self.size(key) {
            Ok(_) => Ok(true),
            Err(e) if e.kind() == reel_core::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// The whole object `key` (one GET).
    pub fn read_all(&self, key: &ObjectPath) -> Result<Bytes> {
        let client = self.client()?;
        let what = "cannot read the object";
        block_on(async {
            let body = client.get(key).await?;
            body.bytes().await
        })?
        .map_err(|e| store_error(e, &self.address_of(key), what))
    }

    /// Writes `bytes` as the object `key` in one request (it appears whole or not at all).
    /// Large files go through [`Store::upload_file`] instead.
    pub fn put(&self, key: &ObjectPath, bytes: Bytes) -> Result<()> {
        let client = self.client()?;
        block_on(async { client.put(key, bytes.into()).await })?
            .map_err(|e| store_error(e, &self.address_of(key), "cannot write the object"))?;
        Ok(())
    }

    /// Deletes the object `key`; deleting an object that is not there succeeds.
    pub fn delete(&self, key: &ObjectPath) -> Result<()> {
        let client = self.client()?;
        match block_on(async { client.delete(key).await })? {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(store_error(e, &self.address_of(key), "cannot delete the object")),
        }
    }

    /// Every object under `prefix` (recursively), as (key, size), sorted by key.
    pub fn list(&self, prefix: &ObjectPath) -> Result<Vec<(ObjectPath, u64)>> {
        let client = self.client()?;
        let mut listed = block_on(async {
            client
                .list(Some(prefix))
                .map_ok(|meta| (meta.location, meta.size))
                .try_collect::<Vec<_>>()
                .await
        })?
        .map_err(|e| store_error(e, &self.address_of(prefix), "cannot list the objects"))?;
        listed.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(listed)
    }
}

/// rustls needs one process-wide crypto provider; reel uses ring (see Cargo.toml). Another
/// library may have installed one already, which is fine.
fn install_crypto_provider() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let _already_installed = rustls::crypto::ring::default_provider().install_default();
    });
}

/// The environment variables that name an S3 endpoint, as object_store reads them.
const ENDPOINT_VARIABLES: [&str; 2] = ["AWS_ENDPOINT_URL", "AWS_ENDPOINT"];

/// The settings (object_store's names) whose values are endpoint URLs.
const ENDPOINT_KEYS: [&str; 4] = ["aws_endpoint", "aws_endpoint_url", "endpoint", "endpoint_url"];

/// The settings whose values go into request headers (a region is part of the signature).
const HEADER_KEYS: [&str; 4] = ["aws_region", "region", "aws_default_region", "default_region"];

/// Refuses settings object_store takes at build time and panics on at the first request:
/// an S3 endpoint that is not an `http(s)` URL (no scheme, spaces around it), and a region
/// holding control characters (a newline makes an invalid header). Other values are left
/// to the builder: a service account key is JSON over several lines.
fn check_settings(kind: StoreKind, options: &StoreOptions) -> Result<()> {
    let from_env =
        ENDPOINT_VARIABLES.iter().filter(|_| options.use_env && kind == StoreKind::S3).filter_map(
            |name| std::env::var(name).ok().map(|value| (name.to_ascii_lowercase(), value)),
        );
    let given = options.config.iter().map(|(k, v)| (k.to_ascii_lowercase(), v.clone()));
    for (name, value) in given.chain(from_env) {
        // The variables, lowercased, are among the keys (object_store reads them so).
        let endpoint = ENDPOINT_KEYS.contains(&name.as_str());
        let header = HEADER_KEYS.contains(&name.as_str());
        if (endpoint || header) && value.chars().any(char::is_control) {
            return Err(Error::invalid_input(format!(
                "storage option {name}: {value:?} holds control characters"
            )));
        }
        let parsed = url::Url::parse(&value);
        let is_http = parsed.as_ref().is_ok_and(|u| matches!(u.scheme(), "http" | "https"));
        if endpoint && (value.trim() != value || !is_http) {
            return Err(Error::invalid_input(format!(
                "storage option {name}: {value:?} is not an http:// or https:// URL \
                 (an endpoint is written like http://127.0.0.1:9000)"
            )));
        }
    }
    Ok(())
}

fn build_client(url: &ObjectUrl, options: &StoreOptions) -> Result<Arc<dyn ObjectStore>> {
    install_crypto_provider();
    check_settings(url.kind(), options)?;
    let root = url.store_url();
    let bad = |e: object_store::Error| {
        Error::invalid_input(format!("cannot set up the {} store: {e}", url.kind()))
            .with_path(root.clone())
    };
    let timeouts = [
        (ClientConfigKey::Timeout, duration_setting(options.timeout)),
        (ClientConfigKey::ConnectTimeout, duration_setting(options.connect_timeout)),
    ];
    let retry = options.retry.to_object_store();
    let client: Arc<dyn ObjectStore> = match url.kind() {
        StoreKind::S3 => {
            let mut b =
                if options.use_env { AmazonS3Builder::from_env() } else { AmazonS3Builder::new() };
            for (key, value) in &timeouts {
                b = b.with_config(AmazonS3ConfigKey::Client(*key), value);
            }
            for (key, value) in &options.config {
                b = b.with_config(key.to_ascii_lowercase().parse().map_err(bad)?, value);
            }
            Arc::new(b.with_url(&root).with_retry(retry).build().map_err(bad)?)
        }
        StoreKind::Gcs => {
            let mut b = if options.use_env {
                GoogleCloudStorageBuilder::from_env()
            } else {
                GoogleCloudStorageBuilder::new()
            };
            for (key, value) in &timeouts {
                b = b.with_config(GoogleConfigKey::Client(*key), value);
            }
            for (key, value) in &options.config {
                b = b.with_config(key.to_ascii_lowercase().parse().map_err(bad)?, value);
            }
            Arc::new(b.with_url(&root).with_retry(retry).build().map_err(bad)?)
        }
        StoreKind::Azure => {
            let mut b = if options.use_env {
                MicrosoftAzureBuilder::from_env()
            } else {
                MicrosoftAzureBuilder::new()
            };
            for (key, value) in &timeouts {
                b = b.with_config(AzureConfigKey::Client(*key), value);
            }
            for (key, value) in &options.config {
                b = b.with_config(key.to_ascii_lowercase().parse().map_err(bad)?, value);
            }
            Arc::new(b.with_url(&root).with_retry(retry).build().map_err(bad)?)
        }
        StoreKind::Http => {
            let mut b = HttpBuilder::new();
            // Whoever writes `http://` means plain HTTP, which object_store refuses unless
            // told; a setting of the caller's (below) still decides.
            if url.url().scheme() == "http" {
                b = b.with_config(ClientConfigKey::AllowHttp, "true");
            }
            for (key, value) in &timeouts {
                b = b.with_config(*key, value);
            }
            for (key, value) in &options.config {
                b = b.with_config(key.to_ascii_lowercase().parse().map_err(bad)?, value);
            }
            Arc::new(b.with_url(&root).with_retry(retry).build().map_err(bad)?)
        }
    };
    Ok(client)
}

#[cfg(test)]
mod tests {
    use super::*;
    use reel_core::ErrorKind;

    #[test]
    fn an_endpoint_that_is_no_url_is_refused_when_the_store_is_built() {
        for (key, value) in [
            ("aws_endpoint", "127.0.0.1:9000"),
            ("aws_endpoint", " http://127.0.0.1:9000"),
            ("aws_endpoint", "not a url"),
            ("aws_endpoint", "http://[::1"),
            ("aws_region", "us-east-1\n"),
        ] {
            let options = StoreOptions { use_env: false, ..StoreOptions::default() }
                .with(key, value)
                .with("allow_http", "true");
            let Err(e) = Store::new(&url("s3://b/k"), &options) else { panic!("{value}") };
            assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
            assert!(e.to_string().contains(key), "{e}");
        }
        let fine = StoreOptions { use_env: false, ..StoreOptions::default() }
            .with("aws_endpoint", "http://127.0.0.1:9000");
        assert!(Store::new(&url("s3://b/k"), &fine).is_ok());
        // Values that are not endpoints or headers are the builder's to judge: a key file's
        // JSON spans lines, and `azure_use_fabric_endpoint` takes "true".
        let azure = StoreOptions { use_env: false, ..StoreOptions::default() }
            .with("azure_storage_account_name", "acct")
            .with("azure_storage_account_key", "a2V5")
            .with("azure_use_fabric_endpoint", "false");
        assert!(Store::new(&url("az://container/k"), &azure).is_ok());
    }

    fn url(text: &str) -> ObjectUrl {
        ObjectUrl::parse(text).unwrap()
    }

    fn offline() -> StoreOptions {
        StoreOptions { use_env: false, ..StoreOptions::default() }
    }

    #[test]
    fn every_kind_builds_from_its_url_and_options() {
        let s3 = offline()
            .with("aws_region", "eu-west-1")
            .with("aws_endpoint", "http://127.0.0.1:1")
            .with("allow_http", "true");
        assert!(Store::new(&url("s3://bucket/prefix"), &s3).is_ok());
        assert!(Store::new(&url("http://127.0.0.1:1/data"), &offline()).is_ok());
        let azure = offline()
            .with("azure_storage_account_name", "acct")
            .with("azure_storage_account_key", "a2V5");
        assert!(Store::new(&url("az://container/p"), &azure).is_ok());
        let gcs = offline().with("google_bucket", "ignored-the-url-wins");
        // GCS without credentials builds (anonymous access is allowed), so this must work.
        Store::new(&url("gs://bucket/p"), &gcs).unwrap();
    }

    #[test]
    fn unknown_options_are_refused_with_the_store_named() {
        let e = Store::new(&url("s3://bucket/p"), &offline().with("aws_no_such_thing", "1"))
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput);
        assert!(e.to_string().contains("s3://bucket"), "{e}");
        assert!(e.to_string().contains("aws_no_such_thing"), "{e}");
        let e = Store::new(&url("http://h/p"), &offline().with("bogus", "1")).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput);
    }

    #[test]
    fn unreachable_server_is_an_io_error_naming_the_object() {
        // Port 1 on loopback refuses connections; no retries so the test is quick.
        let mut options = offline();
        options.retry.max_retries = 0;
        let store = Store::new(&url("http://127.0.0.1:1/data"), &options).unwrap();
        let key = ObjectPath::from("data/part-0");
        let e = store.read_range(&key, 0..10).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Io);
        assert!(e.to_string().contains("http://127.0.0.1:1/data/part-0"), "{e}");
        assert!(e.to_string().contains("bytes 0..10"), "{e}");
        assert!(store.read_range(&key, 5..5).unwrap().is_empty());
        #[allow(clippy::reversed_empty_ranges)] // a caller's backwards range must be refused
        let backwards = 6..5;
        let e = store.read_range(&key, backwards).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput);
    }
}
