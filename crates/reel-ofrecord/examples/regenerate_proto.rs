//! Regenerates `crates/reel-ofrecord/src/generated/oneflow.rs` from `proto/record.proto`.
//!
//! ```text
//! cargo run -p reel-ofrecord --example regenerate_proto
//! ```
//!
//! Uses prost-build with protox, so no `protoc` is needed. Run it after editing the
//! schema; `tests/generated_code.rs` fails while the checked-in file is stale.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../codegen/mod.rs"]
mod codegen;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let code = codegen::generate()?;
    let path = codegen::generated_path();
    std::fs::write(&path, code)?;
    println!("wrote {}", path.display());
    Ok(())
}
