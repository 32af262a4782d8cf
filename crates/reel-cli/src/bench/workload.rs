//! The benchmark's data and access pattern: fixed-size records in one FFRecord file, read
//! in batches of random distinct indices.

use std::path::{Path, PathBuf};

use reel::ffrecord::{FfrecordReader, FfrecordWriter};
use reel::{Format, Record, RecordSink, Value};

use reel::loader::FeistelPermutation;
use reel::synth::SplitMix;

/// How the names of the datasets [`dataset`] writes begin.
pub const DATA_PREFIX: &str = "bench-";

/// The bytes of the datasets kept in `dir` ([`DATA_PREFIX`]…), and how many there are.
pub fn kept(dir: &Path) -> (u64, usize) {
    let entries = std::fs::read_dir(dir).into_iter().flatten().flatten();
    let ours = entries.filter(|e| e.file_name().to_string_lossy().starts_with(DATA_PREFIX));
    ours.fold((0, 0), |(bytes, n), e| (bytes + super::total_size(&e.path()), n + 1))
}

/// A benchmark dataset on disk: the records as a flat FFRecord file (what the yardsticks
/// read) and, for another format, the same records in that format (what reel reads).
pub struct Dataset {
    /// The `.ffr` file.
    pub path: PathBuf,
    /// The same records in the benchmarked format (the `.ffr` file itself for FFRecord).
    pub formatted: PathBuf,
    /// The benchmarked format.
    pub format: Format,
    /// Bytes per record.
    pub record_size: usize,
    /// Number of records.
    pub records: u64,
    /// File offset of each record (from the FFRecord header).
    pub offsets: Vec<u64>,
}

/// Writes `total_bytes` worth of `record_size`-byte records (at least `min_records`) to
/// `dir` as FFRecord and, for another format, again in that format; files from an earlier
/// run with the same shape are reused (they are kept in `dir`, named [`DATA_PREFIX`]…,
/// for that; [`kept`] says how much they hold).
pub fn dataset(
    dir: &Path,
    format: Format,
    record_size: usize,
    total_bytes: u64,
    min_records: u64,
) -> reel::Result<Dataset> {
    let records = (total_bytes / record_size as u64).max(min_records.max(1));
    let path = dir.join(format!("{DATA_PREFIX}{record_size}x{records}.ffr"));
    // Writing the data takes a while at large sizes: on Ctrl-C it stops at the next
    // record, and the unfinished writer removes what it staged (on tmpfs, memory).
    let cancel = reel::io::cancel::CancelCheck::current();
    let reusable = FfrecordReader::open(&path).is_ok_and(|r| r.n() == records);
    if !reusable {
        let mut w = FfrecordWriter::create(&path, records)?;
        let mut g = SplitMix::new(record_size as u64);
        let mut buf = vec![0u8; record_size];
        for _ in 0..records {
            cancel.stop_if_cancelled("writing the benchmark's data")?;
            for chunk in buf.chunks_mut(8) {
                let v = g.next_u64().to_le_bytes();
                chunk.copy_from_slice(&v[..chunk.len()]);
            }
            w.write_one(&buf)?;
        }
        w.finish()?;
    }
    let r = FfrecordReader::open(&path)?;
    let mut offsets = r.get_offsets(0).map(<[u64]>::to_vec).unwrap_or_default();
    offsets.pop();
    let formatted = if format == Format::Ffrecord {
        path.clone()
    } else {
        let formatted = dir.join(format!("{DATA_PREFIX}{record_size}x{records}.{format}"));
        let reusable = reel::open_as(&formatted, format, &reel::OpenOptions::default())
            .is_ok_and(|s| s.len() == records);
        if !reusable {
            if formatted.is_dir() {
                std::fs::remove_dir_all(&formatted)
                    .map_err(|e| reel::Error::io(e, "cannot remove").with_path(&formatted))?;
            } else if formatted.exists() {
                std::fs::remove_file(&formatted)
                    .map_err(|e| reel::Error::io(e, "cannot remove").with_path(&formatted))?;
            }
            let mut sink =
                reel::create(&formatted, format, &reel::CreateOptions::default().records(records))?;
            let mut record = Record::new();
            for i in 0..records {
                cancel.stop_if_cancelled("writing the benchmark's data")?;
                record.clear();
                fixed_size_record(format, i, &r.read_one(i)?, &mut record);
                sink.append(record.view())?;
            }
            sink.finish()?;
        }
        formatted
    };
    Ok(Dataset { path, formatted, format, record_size, records, offsets })
}

impl Dataset {
    /// What reel reads of this dataset, in cache state `mode`.
    pub(super) fn subject(&self, mode: &'static str, cold: bool) -> super::Subject<'_> {
        super::Subject {
            path: &self.formatted,
            format: self.format,
            records: self.records,
            mode,
            cold,
            size: self.record_size,
            // Warm data lies on tmpfs, in memory already.
            read_through: false,
            // `memory` reads the whole file at open, and the pages a live mapping holds stay
            // cached whatever the eviction says (`posix_fadvise(DONTNEED)` leaves mapped
            // pages alone), so a cold `mmap` row read from memory all but its first touch
            // of each page: neither can be measured cold ([`super::cold_skip_reason`]).
            cold_skips: &["memory", "mmap"],
        }
    }

    /// The bytes an `O_DIRECT` read of one record fetches: its range widened to whole
    /// 4 KiB pages. FFRecord packs records after its header at any offset, so most records
    /// straddle one page more than their size; this is the median over the records.
    pub fn direct_span(&self) -> usize {
        const PAGE: u64 = 4096;
        let size = self.record_size as u64;
        let mut spans: Vec<u64> = self
            .offsets
            .iter()
            .map(|&o| (o + size).div_ceil(PAGE) * PAGE - o / PAGE * PAGE)
            .collect();
        let middle = spans.len() / 2;
        if spans.is_empty() {
            return self.record_size;
        }
        *spans.select_nth_unstable(middle).1 as usize
    }
}

/// A record of `format` whose only payload is `payload` (Gulp needs an id and JPEG-looking
/// frames: the payload starts with the JPEG start marker).
fn fixed_size_record(format: Format, i: u64, payload: &[u8], out: &mut Record) {
    match format {
        Format::Syrah => {
            out.push_array("data", reel::DType::U8, &[payload.len() as u64], payload).ok();
        }
        Format::Ofrecord => {
            let mut o = out.out();
            let span = o.append(payload);
            o.push("data".into(), Value::List(vec![Value::Bytes(span)]));
        }
        Format::Gulp => {
            out.push_str("id", &format!("r{i}"));
            let mut o = out.out();
            let mut frame = payload.to_vec();
            if frame.len() >= 2 {
                frame[..2].copy_from_slice(&[0xff, 0xd8]);
            }
            let span = o.append(&frame);
            o.push("frames".into(), Value::List(vec![Value::Bytes(span)]));
        }
        _ => {
            out.push_bytes("data", payload);
        }
    }
}

/// A cycle of batches of distinct random indices below `n`, generated before timing starts
/// so that every reader pays nothing for them and reads the same batches in the same order.
///
/// Each batch is the first `size` positions of its own random permutation of `0..n`
/// (the loader's [`FeistelPermutation`]), so making it costs `size` steps and no memory
/// beyond the batch, however close `size` comes to `n`. The cycle holds [`MAX_BATCHES`] batches, fewer when
/// they are large: together at most [`INDEX_BUDGET`] indices (1 MiB), or one batch.
pub struct Batches {
    batches: Vec<Vec<u64>>,
    next: usize,
}

/// Batches in a cycle, at most.
pub const MAX_BATCHES: usize = 512;

/// Indices the batches of a cycle hold together, at most, unless one batch alone is larger.
pub const INDEX_BUDGET: usize = 1 << 17;

impl Batches {
    /// Up to [`MAX_BATCHES`] batches of `size` distinct indices below `n` (of `n` indices
    /// when `n` is smaller; of one when `size` is 0).
    pub fn new(n: u64, size: usize, seed: u64) -> Self {
        let mut rng = SplitMix::new(seed);
        let size = size.min(usize::try_from(n).unwrap_or(usize::MAX)).max(1);
        if n == 0 {
            return Batches { batches: vec![Vec::new()], next: 0 };
        }
        let count = (INDEX_BUDGET / size).clamp(1, MAX_BATCHES);
        let batches = (0..count)
            .map(|_| {
                let permutation = FeistelPermutation::new(n, rng.next_u64());
                (0..size as u64).map(|i| permutation.apply(i)).collect()
            })
            .collect();
        Batches { batches, next: 0 }
    }

    /// The next batch.
    pub fn next_batch(&mut self) -> &[u64] {
        let k = self.next % self.batches.len();
        self.next += 1;
        &self.batches[k]
    }

    /// The batches of the cycle.
    #[cfg(test)]
    fn all(&self) -> &[Vec<u64>] {
        &self.batches
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn packed(header: u64, record_size: usize, records: u64) -> Dataset {
        Dataset {
            path: PathBuf::new(),
            formatted: PathBuf::new(),
            format: Format::Ffrecord,
            record_size,
            records,
            offsets: (0..records).map(|i| header + i * record_size as u64).collect(),
        }
    }

    #[test]
    fn direct_span_counts_the_pages_a_packed_record_straddles() {
        // Every 16 KiB record 12 bytes past a page boundary touches five pages.
        assert_eq!(packed(12, 16 << 10, 64).direct_span(), 20 << 10);
        // Three of four 1 KiB records fit in one page; the fourth straddles two.
        assert_eq!(packed(12, 1 << 10, 64).direct_span(), 4 << 10);
        // Page-aligned records fetch exactly their size.
        assert_eq!(packed(4096, 16 << 10, 64).direct_span(), 16 << 10);
    }

    fn distinct_below(batch: &[u64], n: u64) {
        let mut sorted = batch.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), batch.len(), "indices repeat in a batch");
        assert!(sorted.last().is_none_or(|&i| i < n), "an index is out of range");
    }

    #[test]
    fn batches_hold_distinct_indices_below_n() {
        for (n, size) in [(1, 256), (2, 1), (3, 3), (1000, 256), (1000, 999), (4097, 4097)] {
            let b = Batches::new(n, size, 7);
            for batch in b.all() {
                assert_eq!(batch.len() as u64, (size as u64).min(n));
                distinct_below(batch, n);
            }
        }
        // A batch of every record is a permutation of them.
        let b = Batches::new(1000, 1000, 3);
        let mut all = b.all()[0].clone();
        all.sort_unstable();
        assert_eq!(all, (0..1000).collect::<Vec<u64>>());
        // Batches differ from each other (and are not just 0..size).
        let b = Batches::new(1 << 20, 256, 9);
        assert_ne!(b.all()[0], b.all()[1]);
        assert_ne!(b.all()[0], (0..256).collect::<Vec<u64>>());
    }

    #[test]
    fn large_batches_keep_the_cycle_small() {
        // 512 batches of 256, as before.
        assert_eq!(Batches::new(1 << 20, 256, 1).all().len(), MAX_BATCHES);
        // Large batches: the cycle holds no more than the budget, or one batch.
        for size in [20_000usize, 1 << 20] {
            let b = Batches::new(1 << 20, size, 1);
            let held: usize = b.all().iter().map(Vec::len).sum();
            assert!(held <= INDEX_BUDGET.max(size), "{held} indices held for batches of {size}");
            distinct_below(&b.all()[0], 1 << 20);
        }
        // A batch of 0 reads one record; an empty dataset gives empty batches.
        assert_eq!(Batches::new(10, 0, 1).next_batch().len(), 1);
        assert!(Batches::new(0, 256, 1).next_batch().is_empty());
    }
}
