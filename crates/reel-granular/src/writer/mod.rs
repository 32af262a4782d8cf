//! Writers: the current layout (resumable), the refs-based layouts of bags 0.5.1 and
//! granular 0.20–0.21, sharded roots of either, and single bags.

mod bag_writer;
mod claim;
mod dataset;
mod encode;
mod fit;
mod refs_writer;
mod sharded;
mod sink;

pub use bag_writer::{BagWriter, SingleFileBagWriter};
pub use dataset::{GranularWriter, GranularWriterOptions, PARTIAL_SPEC, staging_path};
pub use fit::check_declared_types;
pub use refs_writer::{BagsWriter, RefsFlavor};
pub use sharded::{ShardFormat, ShardedWriter, ShardedWriterOptions};
pub use sink::GranularSink;
