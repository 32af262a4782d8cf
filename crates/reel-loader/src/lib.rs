//! The reel batch loader. Work in progress: see the loader issue.

#![forbid(unsafe_code)]
