//! Test support shared by every format crate (feature `testing`).
//!
//! * [`conformance`]: the checks every [`RecordSource`](crate::RecordSource) must pass on
//!   every backend: same records, same errors, batch equals one-by-one, threads agree.
//! * [`golden`]: finding the golden corpus and comparing values with manifest descriptors.
//! * [`truncation`]: cutting a dataset at many lengths and reading what is left.
//!
//! These functions panic with a descriptive message when a check fails; they are meant to
//! be called from `#[test]` functions.

#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used)]

pub mod conformance;
pub mod golden;
pub mod truncation;
