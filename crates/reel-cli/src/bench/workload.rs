//! The benchmark's data and access pattern: fixed-size records in one FFRecord file, read
//! in batches of random distinct indices.

use std::path::{Path, PathBuf};

use reel::ffrecord::{FfrecordReader, FfrecordWriter};
use reel::{Format, Record, RecordSink, Value};

use reel::synth::SplitMix;

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

/// Writes `total_bytes` worth of `record_size`-byte records (at least 1024 records) to
/// `dir` as FFRecord and, for another format, again in that format; files from an earlier
/// run with the same shape are reused.
pub fn dataset(
    dir: &Path,
    format: Format,
    record_size: usize,
    total_bytes: u64,
) -> reel::Result<Dataset> {
    let records = (total_bytes / record_size as u64).max(1024);
    let path = dir.join(format!("bench-{record_size}x{records}.ffr"));
    let reusable = FfrecordReader::open(&path).is_ok_and(|r| r.n() == records);
    if !reusable {
        let mut w = FfrecordWriter::create(&path, records)?;
        let mut g = SplitMix::new(record_size as u64);
        let mut buf = vec![0u8; record_size];
        for _ in 0..records {
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
        let formatted = dir.join(format!("bench-{record_size}x{records}.{format}"));
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
pub struct Batches {
    batches: Vec<Vec<u64>>,
    next: usize,
}

impl Batches {
    /// 512 batches of `size` distinct indices below `n` (fewer if `n` is small).
    pub fn new(n: u64, size: usize, seed: u64) -> Self {
        let mut rng = SplitMix::new(seed);
        let size = size.min(n as usize).max(1);
        let mut seen = std::collections::HashSet::with_capacity(size);
        let batches = (0..512)
            .map(|_| {
                seen.clear();
                let mut b = Vec::with_capacity(size);
                while b.len() < size {
                    let i = rng.below(n);
                    if seen.insert(i) {
                        b.push(i);
                    }
                }
                b
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
}
