//! Generating `src/generated/oneflow.rs` from `proto/record.proto` with prost-build, using
//! protox (a pure-Rust protobuf compiler) so that no `protoc` is needed.
//!
//! Shared by `examples/regenerate_proto.rs` (which writes the file) and
//! `tests/generated_code.rs` (which fails when the checked-in file is stale).

use std::path::PathBuf;

/// The crate directory.
pub fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The schema, `proto/record.proto` at the workspace root.
pub fn proto_path() -> PathBuf {
    crate_dir().join("../../proto/record.proto")
}

/// Where the generated code is checked in.
pub fn generated_path() -> PathBuf {
    crate_dir().join("src/generated/oneflow.rs")
}

/// The header every generated file starts with.
pub const HEADER: &str = "\
// @generated from proto/record.proto by prost-build (with protox). DO NOT EDIT.
// Regenerate with: cargo run -p reel-ofrecord --example regenerate_proto
// (tests/generated_code.rs fails while this file differs from what that command writes).
";

/// The content `src/generated/oneflow.rs` must have.
pub fn generate() -> Result<String, Box<dyn std::error::Error>> {
    let proto = proto_path();
    let include = proto.parent().ok_or("proto path has no parent")?.to_path_buf();
    let fds = protox::compile([&proto], [&include])?;
    let out = tempfile::tempdir()?;
    let mut config = prost_build::Config::new();
    // Sorted maps: iteration order is the key order deterministic serialization uses.
    config.btree_map(["."]);
    config.out_dir(out.path());
    config.compile_fds(fds)?;
    let code = std::fs::read_to_string(out.path().join("oneflow.rs"))?;
    Ok(format!("{HEADER}{code}"))
}
