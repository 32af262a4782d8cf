//! Object storage for reel: dataset addresses (`s3://`, `gs://`, `az://`/`abfs://`,
//! `http(s)://`, `file://`, plain paths), stores built with the `object_store` crate from a
//! URL, the standard environment and per-call [`StoreOptions`], and the tokio runtime those
//! stores run on, behind a synchronous facade ([`block_on`]) so reel's API stays synchronous.
//!
//! ```no_run
//! use reel_store::{Address, Store, StoreOptions};
//! let Address::Remote(url) = Address::parse("s3://bucket/datasets/train")? else { unreachable!() };
//! let store = Store::new(&url, &StoreOptions::default().with("aws_region", "eu-west-1"))?;
//! for (key, size) in store.list(url.path())? {
//!     println!("{key}: {size} bytes");
//! }
//! # Ok::<(), reel_core::Error>(())
//! ```

#![forbid(unsafe_code)]

mod address;
pub mod cache;
mod ends;
mod error;
mod options;
pub mod read;
mod remote;
pub mod runtime;
mod store;
#[cfg(feature = "testing")]
pub mod testing;
mod upload;

pub use address::{
    Address, ObjectUrl, StoreKind, check_remote_destination, is_remote, location_url,
};
/// The byte buffer [`Store::put`] and [`Store::read_all`] take and give.
pub use bytes::Bytes;
pub use cache::{CACHE_DIR_ENV, CACHE_SIZE_ENV, CacheSettings, parse_size};
pub use ends::END_BYTES;
pub use error::store_error;
pub use object_store;
pub use object_store::path::Path as ObjectPath;
pub use options::{REEL_STORE_KEYS, RetrySettings, StoreOptions};
pub use read::{ObjectFiles, ReadSettings, ReadStats};
pub use remote::RemoteStore;
pub use runtime::block_on;
pub use store::Store;
pub use upload::{CopyItem, MULTIPART_PART_BYTES, UploadItem};
