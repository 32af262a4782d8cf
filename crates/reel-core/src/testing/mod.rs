//! Test support shared by every format crate (feature `testing`).
//!
//! * [`conformance`]: the checks every [`RecordSource`](crate::RecordSource) must pass on
//!   every backend: same records, same errors, batch equals one-by-one, threads agree.
//! * [`golden`]: finding the golden corpus and comparing values with manifest descriptors.
//! * [`truncation`]: cutting a dataset at many lengths and reading what is left.
//! * [`HintLog`]: files that log the read-ahead hints and batched reads a source gives them.
//! * [`names_in`]: what a directory holds, for tests that a failed or cancelled writer
//!   left nothing (its staged output is hidden, so the listing includes hidden names).
//!
//! These functions panic with a descriptive message when a check fails; they are meant to
//! be called from `#[test]` functions.

#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used)]

pub mod conformance;
pub mod golden;
mod hints;
pub mod truncation;

pub use hints::HintLog;

/// The names in `dir`, hidden ones (a writer's staged output) included, sorted.
pub fn names_in(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}
