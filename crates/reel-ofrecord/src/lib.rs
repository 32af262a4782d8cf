//! OFRecord for reel. Work in progress: see the crate's issue.

#![forbid(unsafe_code)]

/// The format's name in [`SourceInfo`](reel_core::SourceInfo) and errors.
pub const FORMAT: &str = "ofrecord";
