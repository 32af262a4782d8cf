//! OFRecord in the facade: recognising and opening it.

use std::path::Path;

use reel_core::{Error, RecordSource, Result};

use super::Handler;
use crate::OpenOptions;

pub(super) const HANDLER: Handler = Handler { sniff, open };

fn open(path: &Path, _options: &OpenOptions) -> Result<Box<dyn RecordSource>> {
    Err(Error::unsupported("reading OFRecord is not implemented yet").with_path(path))
}

fn sniff(_path: &Path) -> bool {
    false
}
