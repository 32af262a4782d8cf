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
    let text = err.to_string();
    // S3 answers a request to a bucket that does not exist with a 404 that object_store
    // reports as a generic error carrying the XML body (request and host ids).
    if text.contains("<Code>NoSuchBucket</Code>") {
        return Error::new(
            ErrorKind::NotFound,
            format!("{what}: no such bucket (the store answered NoSuchBucket)"),
        )
        .with_path(address);
    }
    let cause = root_cause(&err);
    // object_store's own text can end at "error sending request": the cause (a refused
    // connection, a name that does not resolve) is what tells the user what to fix. A cause
    // that is the operating system's error means no answer came at all: it becomes the
    // error's I/O error, which tells "the store did not answer" from "the store said no".
    if kind == ErrorKind::Io
        && let Some(io) = cause.and_then(|c| c.downcast_ref::<std::io::Error>())
    {
        let os = std::io::Error::new(io.kind(), io.to_string());
        return Error::io(os, format!("{what}: {text}")).with_path(address);
    }
    let message = match cause.map(ToString::to_string) {
        Some(cause) if !text.contains(&cause) => format!("{what}: {text} ({cause})"),
        _ => format!("{what}: {text}"),
    };
    Error::new(kind, message).with_path(address)
}

/// The innermost error in `err`'s chain of sources, if it has one.
fn root_cause<'a>(
    err: &'a (dyn std::error::Error + 'static),
) -> Option<&'a (dyn std::error::Error + 'static)> {
    let mut cause = err.source()?;
    // The chain is finite in practice; the bound keeps a cyclic one from hanging.
    for _ in 0..32 {
        match cause.source() {
            Some(next) => cause = next,
            None => break,
        }
    }
    Some(cause)
}
