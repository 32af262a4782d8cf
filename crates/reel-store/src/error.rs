//! object_store errors as `reel_core::Error`, naming the object.

use reel_core::{Error, ErrorKind};

/// Converts an object_store error from `what` (e.g. "cannot read bytes 0..100") on the object
/// at `address` into reel's error, with the address as the error's path.
pub fn store_error(err: object_store::Error, address: &str, what: &str) -> Error {
    let kind = match &err {
        object_store::Error::NotFound { .. } => ErrorKind::NotFound,
        object_store::Error::NotSupported { .. } | object_store::Error::NotImplemented { .. } => {
            ErrorKind::Unsupported
        }
        object_store::Error::InvalidPath { .. } => ErrorKind::InvalidInput,
        _ => ErrorKind::Io,
    };
    Error::new(kind, format!("{what}: {err}")).with_path(address)
}
