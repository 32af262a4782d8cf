//! Writers: one chunk at a time ([`GulpChunkWriter`]) or a whole directory
//! ([`GulpWriter`], also the [`RecordSink`](reel_core::RecordSink)).

mod chunk;
mod dir;

pub(crate) use chunk::PreparedChunk;
pub use chunk::{ChunkSummary, GulpChunkWriter, GulpWriteOptions};
pub use dir::GulpWriter;
pub(crate) use dir::existing_ids;
