//! The checked-in prost code is exactly what the documented command generates.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../codegen/mod.rs"]
mod codegen;

#[test]
fn checked_in_prost_code_is_up_to_date() {
    let expected = codegen::generate().unwrap();
    let path = codegen::generated_path();
    let actual = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    assert!(
        actual == expected,
        "{} is stale: run `cargo run -p reel-ofrecord --example regenerate_proto`",
        path.display()
    );
}
