//! Copies a Syrah file item by item through reel's reader and writer. Each item's arrays
//! are read in the order they are stored ([`SyrahReader::stored_order`]), so the copy of a
//! file the reference wrote is byte-identical to it:
//!
//! ```text
//! cargo run -p reel-syrah --example syrah_copy -- in.syr out.syr && cmp in.syr out.syr
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use reel_core::Record;
use reel_syrah::{SyrahReader, SyrahWriteOptions, SyrahWriter};

fn main() -> reel_core::Result<()> {
    let mut args = std::env::args().skip(1);
    let (input, output) = match (args.next(), args.next()) {
        (Some(i), Some(o)) => (i, o),
        _ => panic!("usage: syrah_copy IN.syr OUT.syr"),
    };
    let reader = SyrahReader::open(&input)?;
    // Keep the input's version bytes.
    let version = reader.files()[0].header().version;
    let options = SyrahWriteOptions::default().version(version);
    let mut writer = SyrahWriter::create_with(&output, &options)?;
    let mut item = Record::new();
    for i in 0..reader.num_items() {
        reader.read_arrays_into(i, &reader.stored_order(i)?, &mut item)?;
        writer.add_item(&item)?;
    }
    let summary = writer.finish()?;
    println!("{} items, {} bytes", summary.records, summary.bytes);
    Ok(())
}
