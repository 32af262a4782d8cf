//! One pass over many records through a [`BatchStream`], for tools that read a whole
//! dataset (`cat`, `convert`): a batch the source refuses as over its byte budget is read
//! again in pieces that fit instead of failing the pass.

use std::ops::Range;
use std::sync::Arc;

use super::{BatchPlan, BatchStream, StreamBatch, StreamOptions};
use crate::pool::PooledBatch;
use crate::{ErrorKind, RecordBatch, RecordSource, RecordSourceExt, Result};

/// The records a [`WholePass`] reads, in order.
#[derive(Clone, Debug)]
pub enum PassRecords {
    /// A range of indices, in order (nothing is allocated per record).
    Range(Range<u64>),
    /// Any list of indices, in its order.
    List(Arc<[u64]>),
}

impl PassRecords {
    /// The number of records.
    pub fn len(&self) -> u64 {
        match self {
            PassRecords::Range(r) => r.end.saturating_sub(r.start),
            PassRecords::List(l) => l.len() as u64,
        }
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The indices of batch `k` of batches of `size`, into `out`.
    fn chunk(&self, k: u64, size: usize, out: &mut Vec<u64>) {
        out.clear();
        let start = k.saturating_mul(size as u64);
        let end = self.len().min(start.saturating_add(size as u64));
        match self {
            PassRecords::Range(r) => out.extend(r.start + start..r.start + end.max(start)),
            PassRecords::List(l) => {
                out.extend_from_slice(l.get(start as usize..end as usize).unwrap_or_default())
            }
        }
    }

    fn plan(&self, size: usize) -> BatchPlan {
        match self {
            PassRecords::Range(r) => BatchPlan::sequential(r.clone(), size),
            PassRecords::List(_) => {
                let mut k = 0;
                let this = self.clone();
                BatchPlan::from_fn(move |out| {
                    this.chunk(k, size, out);
                    k += 1;
                    !out.is_empty()
                })
                .batch_size_hint(size)
            }
        }
    }
}

/// Every record of a [`PassRecords`] in order, in batches of up to `size`, read ahead on
/// helper threads as the [`StreamOptions`] say. A batch the source refuses with
/// [`ErrorKind::Limit`] (over [`Limits::max_batch_bytes`](crate::Limits::max_batch_bytes),
/// which records sharing bytes can reach) is read again on the consumer's thread in pieces
/// that fit ([`RecordSourceExt::read_batch_fitting`]), each piece an item of its own. Any
/// other error is an item too, and the pass goes on with the next batch.
pub struct WholePass {
    stream: BatchStream,
    records: PassRecords,
    size: usize,
    /// Batches of the stream seen so far.
    seen: u64,
    /// A refused batch being read again here: its indices, how many are done, its number.
    refit: Vec<u64>,
    refit_done: usize,
    refit_seq: u64,
}

impl WholePass {
    /// Starts reading `records` of `source` in batches of `size` (0 counts as 1).
    pub fn new(
        source: Arc<dyn RecordSource>,
        records: PassRecords,
        size: usize,
        options: &StreamOptions,
    ) -> Result<Self> {
        let size = size.max(1);
        let stream = BatchStream::new(source, records.plan(size), options)?;
        Ok(WholePass {
            stream,
            records,
            size,
            seen: 0,
            refit: Vec::new(),
            refit_done: 0,
            refit_seq: 0,
        })
    }

    /// The number of records the pass reads.
    pub fn len(&self) -> u64 {
        self.records.len()
    }

    /// Whether the pass reads no record.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// The next piece of a refused batch, read on this thread.
    fn next_piece(&mut self) -> Result<StreamBatch> {
        let source = self.stream.source();
        // A new buffer: this path is for the rare batch over budget, and its pieces may be
        // held while the stream's buffers keep circulating.
        let mut batch = RecordBatch::new();
        match source.read_batch_fitting(&self.refit[self.refit_done..], &mut batch) {
            Ok(n) => {
                self.refit_done += n;
                Ok(StreamBatch { batch: PooledBatch::unpooled(batch), seq: self.refit_seq })
            }
            Err(e) => {
                self.refit_done = self.refit.len();
                Err(e)
            }
        }
    }
}

impl Iterator for WholePass {
    type Item = Result<StreamBatch>;

    fn next(&mut self) -> Option<Result<StreamBatch>> {
        loop {
            if self.refit_done < self.refit.len() {
                return Some(self.next_piece());
            }
            let item = self.stream.next()?;
            let seq = self.seen;
            self.seen += 1;
            match item {
                Err(e) if e.kind() == ErrorKind::Limit => {
                    self.records.chunk(seq, self.size, &mut self.refit);
                    self.refit_done = 0;
                    self.refit_seq = seq;
                }
                other => return Some(other),
            }
        }
    }
}

impl std::fmt::Debug for WholePass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WholePass")
            .field("records", &self.records.len())
            .field("size", &self.size)
            .field("seen", &self.seen)
            .finish()
    }
}
