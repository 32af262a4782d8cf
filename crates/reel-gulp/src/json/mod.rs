//! The JSON dialect of `.gmeta` files: Python's `json` module with default options.
//!
//! [`parse_json`] reads what Python reads (including `NaN`/`Infinity`, integers beyond 64
//! bits and unpaired surrogates) with bounded nesting; [`write_python_json`] writes what
//! Python writes, byte for byte. [`JsonValue`] is the tree in between.

mod parse;
mod value;
mod write;

pub(crate) use parse::Parser;
pub use parse::{MAX_DEPTH_CAP, parse_json};
pub use value::{JsonStr, JsonValue};
pub use write::{python_float_repr, write_python_json, write_str};

#[cfg(test)]
mod tests;
