//! Truncation sweeps: what is left of a dataset cut short must never crash a reader.

use crate::{ErrorKind, RecordBatch, RecordSource};

/// What reading a truncated copy gave.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Cut {
    /// Opening failed with this kind.
    OpenFailed(ErrorKind),
    /// Opening worked; `records` records were readable and `failed` were not.
    Opened {
        /// Number of records the source claimed.
        len: u64,
        /// Records that read without error.
        readable: u64,
        /// Errors met (kinds), one per failing record.
        errors: Vec<ErrorKind>,
    },
}

impl Cut {
    /// Whether the damage was noticed (open failed or some record failed).
    pub fn detected(&self) -> bool {
        match self {
            Cut::OpenFailed(_) => true,
            Cut::Opened { errors, .. } => !errors.is_empty(),
        }
    }
}

/// The lengths a sweep over a file of `len` bytes tries: every length for small files;
/// for large ones every length of the first and last 4 KiB, `extra` lengths of interest
/// (record boundaries ± 1) and about 2000 evenly spread lengths.
pub fn lengths(len: usize, extra: &[usize]) -> Vec<usize> {
    if len <= 16 * 1024 {
        return (0..len).collect();
    }
    let mut v: Vec<usize> = (0..4096).chain(len.saturating_sub(4096)..len).collect();
    let step = (len / 2000).max(1);
    v.extend((0..len).step_by(step));
    for &e in extra {
        v.extend([e.saturating_sub(1), e, e + 1]);
    }
    v.retain(|&l| l < len);
    v.sort_unstable();
    v.dedup();
    v
}

/// Opens each truncated copy with `open` and reads every record and one batch of all of
/// them. A panic anywhere fails the calling test; the outcomes are returned so the caller
/// can assert what its format guarantees (e.g. that every cut is detected).
pub fn sweep<F>(bytes: &[u8], lengths: &[usize], open: F) -> Vec<(usize, Cut)>
where
    F: Fn(&[u8]) -> crate::Result<Box<dyn RecordSource>>,
{
    let mut out = Vec::with_capacity(lengths.len());
    let mut batch = RecordBatch::new();
    for &l in lengths {
        let cut = match open(&bytes[..l]) {
            Err(e) => Cut::OpenFailed(e.kind()),
            Ok(source) => {
                let n = source.len();
                let mut errors = Vec::new();
                let mut readable = 0;
                for i in 0..n.min(100_000) {
                    match source.read(i) {
                        Ok(_) => readable += 1,
                        Err(e) => errors.push(e.kind()),
                    }
                }
                let all: Vec<u64> = (0..n.min(100_000)).collect();
                let batch_ok = source.read_batch_into(&all, &mut batch).is_ok();
                assert_eq!(
                    batch_ok,
                    errors.is_empty(),
                    "cut at {l}: batch and single reads disagree"
                );
                Cut::Opened { len: n, readable, errors }
            }
        };
        out.push((l, cut));
    }
    out
}

use crate::RecordSourceExt as _;
