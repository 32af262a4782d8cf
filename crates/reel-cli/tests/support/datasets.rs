//! What the conversion tests share: the `reel` binary as a command, and writing test
//! records as a dataset of any format through the library.

use std::path::Path;

use assert_cmd::Command;
use reel::{CreateOptions, Format, Record, RecordSink};

/// The `reel` binary built for this test run.
pub fn reel() -> Command {
    Command::cargo_bin("reel").unwrap()
}

/// Writes `records` as a `format` dataset at `path` through the library.
pub fn write(format: Format, path: &Path, records: &[Record]) {
    let mut sink =
        reel::create(path, format, &CreateOptions::default().records(records.len() as u64))
            .unwrap();
    for r in records {
        sink.append_ref(r.view()).unwrap();
    }
    sink.finish().unwrap();
}
