//! Several sources read as one: the records of the first part, then those of the second,
//! and so on. A directory of Parquet or Arrow IPC files (what `reel convert --shard k/n`,
//! Spark or Hugging Face write) is one dataset this way.

use std::path::Path;

use crate::{Error, Located, Record, RecordBatch, RecordSource, Result, SourceInfo};

/// The concatenation of `parts` (record indices run through part 0, then part 1, …).
///
/// Records and errors name indices of the whole (a part's own index is shifted by the
/// records before it); byte locations name files of the whole, numbered part after part.
/// A batch within one part is that part's batched read; a batch across parts reads each
/// part's share in one batched read and puts the records in the order asked (copying
/// them once).
pub struct ConcatSource {
    info: SourceInfo,
    parts: Vec<Box<dyn RecordSource>>,
    /// `starts[p]`: the index of part `p`'s first record; one more entry, the total.
    starts: Vec<u64>,
    /// `file_bases[p]`: the number of part `p`'s first file among the files of the whole.
    file_bases: Vec<u32>,
}

impl ConcatSource {
    /// The parts read as one, described by `info` (its `paths` should list every part's
    /// files in order, as [`ConcatSource::paths_of`] gives them).
    pub fn new(info: SourceInfo, parts: Vec<Box<dyn RecordSource>>) -> Result<Self> {
        let mut starts = Vec::with_capacity(parts.len() + 1);
        let mut file_bases = Vec::with_capacity(parts.len());
        let (mut total, mut files) = (0u64, 0u32);
        for part in &parts {
            starts.push(total);
            file_bases.push(files);
            total = total.checked_add(part.len()).ok_or_else(|| {
                Error::invalid_input("the parts hold more than 2^64 records together")
            })?;
            let count = u32::try_from(part.info().paths.len()).ok();
            files = count.and_then(|c| files.checked_add(c)).ok_or_else(|| {
                Error::invalid_input("the parts have more than 2^32 files together")
            })?;
        }
        starts.push(total);
        Ok(ConcatSource { info, parts, starts, file_bases })
    }

    /// Every part's files, part after part: the `paths` of the whole.
    pub fn paths_of(parts: &[Box<dyn RecordSource>]) -> Vec<std::path::PathBuf> {
        parts.iter().flat_map(|p| p.info().paths.iter().cloned()).collect()
    }

    /// The parts, in order.
    pub fn parts(&self) -> &[Box<dyn RecordSource>] {
        &self.parts
    }

    /// The part holding record `index` of the whole, and the record's index in it.
    fn locate_part(&self, index: u64) -> Result<(usize, u64)> {
        let total = self.len();
        if index >= total {
            return Err(Error::out_of_range(index, total));
        }
        // The last part starting at or before `index` (parts may be empty).
        let p = self.starts.partition_point(|&s| s <= index) - 1;
        Ok((p, index - self.starts[p]))
    }

    /// An error of part `p`, naming the record by its index in the whole.
    fn whole(&self, p: usize, e: Error) -> Error {
        let start = self.starts[p];
        e.map_record(|r| r.saturating_add(start))
    }

    /// Reads `indices` (of the whole) into `out` with `read` (a part's batched read).
    fn read_batch_with(
        &self,
        indices: &[u64],
        out: &mut RecordBatch,
        read: impl Fn(&dyn RecordSource, &[u64], &mut RecordBatch) -> Result<()>,
    ) -> Result<()> {
        out.clear();
        let mut located = Vec::with_capacity(indices.len());
        for &index in indices {
            located.push(self.locate_part(index)?);
        }
        let first_part = located.first().map(|&(p, _)| p);
        if located.iter().all(|&(p, _)| Some(p) == first_part) {
            let Some(p) = first_part else { return Ok(()) };
            let local: Vec<u64> = located.iter().map(|&(_, i)| i).collect();
            read(&*self.parts[p], &local, out).map_err(|e| self.whole(p, e))?;
            return out.renumber(indices);
        }
        // Across parts: each part's share in one read, then the records in the order asked.
        let mut order: Vec<usize> = (0..located.len()).collect();
        order.sort_by_key(|&k| located[k].0);
        let mut share = RecordBatch::new();
        let mut filled = Vec::with_capacity(order.len()); // position asked, in filling order
        for group in order.chunk_by(|&a, &b| located[a].0 == located[b].0) {
            let p = located[group[0]].0;
            let local: Vec<u64> = group.iter().map(|&k| located[k].1).collect();
            if let Err(e) = read(&*self.parts[p], &local, &mut share) {
                out.clear();
                return Err(self.whole(p, e));
            }
            for record in share.iter() {
                out.push_copy(record);
            }
            filled.extend_from_slice(group);
        }
        // Record `filled[j]` of the order asked sits at place `j`.
        let mut place = vec![0usize; filled.len()];
        for (j, &k) in filled.iter().enumerate() {
            place[k] = j;
        }
        out.reorder(&place)?;
        out.renumber(indices)
    }
}

impl RecordSource for ConcatSource {
    fn info(&self) -> &SourceInfo {
        &self.info
    }

    fn len(&self) -> u64 {
        self.starts.last().copied().unwrap_or(0)
    }

    fn read_into(&self, index: u64, out: &mut Record) -> Result<()> {
        let (p, local) = self.locate_part(index)?;
        self.parts[p].read_into(local, out).map_err(|e| self.whole(p, e))?;
        out.set_index(index);
        Ok(())
    }

    fn read_batch_into(&self, indices: &[u64], out: &mut RecordBatch) -> Result<()> {
        self.read_batch_with(indices, out, |part, local, out| part.read_batch_into(local, out))
    }

    fn read_batch_borrowed(&self, indices: &[u64], out: &mut RecordBatch) -> Result<()> {
        self.read_batch_with(indices, out, |part, local, out| part.read_batch_borrowed(local, out))
    }

    /// Hands each part the hinted records it holds, as its own indices, in the order given
    /// (a part reading asynchronously then reads its share ahead). Indices past the end are
    /// left out: a hint fails never.
    fn will_read(&self, indices: &[u64]) {
        let mut by_part: Vec<(usize, u64)> =
            indices.iter().filter_map(|&i| self.locate_part(i).ok()).collect();
        // Stable: each part's share keeps the order of the hint.
        by_part.sort_by_key(|&(p, _)| p);
        let mut local = Vec::new();
        for group in by_part.chunk_by(|a, b| a.0 == b.0) {
            local.clear();
            local.extend(group.iter().map(|&(_, i)| i));
            self.parts[group[0].0].will_read(&local);
        }
    }

    fn backend_name(&self) -> &'static str {
        self.parts.first().map_or("none", |p| p.backend_name())
    }

    fn locate(&self, index: u64, ranges: &mut Vec<crate::ReadRange>) -> Result<bool> {
        let (p, local) = self.locate_part(index)?;
        let first = ranges.len();
        let found = self.parts[p].locate(local, ranges).map_err(|e| self.whole(p, e))?;
        let base = self.file_bases[p];
        for range in &mut ranges[first..] {
            range.file = range.file.saturating_add(base);
        }
        Ok(found)
    }

    fn locate_many(&self, indices: &[u64], out: &mut Located) -> Result<bool> {
        out.locate_each(indices, |index, ranges| self.locate(index, ranges))
    }

    fn file_path(&self, file: u32) -> Option<&Path> {
        // The last part whose files start at or before `file`.
        let p = self.file_bases.partition_point(|&b| b <= file).checked_sub(1)?;
        self.parts[p].file_path(file - self.file_bases[p])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ErrorKind, RecordSourceExt};

    /// Records held in memory, for these tests: record `k` has one bytes field naming
    /// `first + k`, its index in the whole; a record named in `bad` fails to read.
    type Hints = std::sync::Arc<std::sync::Mutex<Vec<(usize, Vec<u64>)>>>;

    struct Held {
        info: SourceInfo,
        records: Vec<Record>,
        bad: Option<u64>,
        /// This part's number, for `hints`.
        part: usize,
        /// The hints given to every part ([`RecordSource::will_read`]): (part, indices).
        hints: Hints,
    }

    impl Held {
        fn get(&self, index: u64) -> Result<&Record> {
            if Some(index) == self.bad {
                return Err(Error::corrupt("damaged").with_record(index));
            }
            let len = self.records.len() as u64;
            self.records.get(index as usize).ok_or_else(|| Error::out_of_range(index, len))
        }
    }

    impl RecordSource for Held {
        fn info(&self) -> &SourceInfo {
            &self.info
        }
        fn len(&self) -> u64 {
            self.records.len() as u64
        }
        fn read_into(&self, index: u64, out: &mut Record) -> Result<()> {
            *out = self.get(index)?.clone();
            out.set_index(index);
            Ok(())
        }
        fn read_batch_into(&self, indices: &[u64], out: &mut RecordBatch) -> Result<()> {
            out.clear();
            for &index in indices {
                match self.get(index) {
                    Ok(r) => {
                        let mut r = r.clone();
                        r.set_index(index);
                        out.push_copy(r.view());
                    }
                    Err(e) => {
                        out.clear();
                        return Err(e);
                    }
                }
            }
            Ok(())
        }
        fn will_read(&self, indices: &[u64]) {
            self.hints.lock().unwrap().push((self.part, indices.to_vec()));
        }
    }

    fn whole_with(sizes: &[u64], bad: Option<u64>) -> ConcatSource {
        whole_hinted(sizes, bad).0
    }

    /// [`whole_with`], and the log of the hints its parts are given.
    fn whole_hinted(sizes: &[u64], bad: Option<u64>) -> (ConcatSource, Hints) {
        let hints = Hints::default();
        let mut start = 0;
        let mut parts: Vec<Box<dyn RecordSource>> = Vec::new();
        for (part, &n) in sizes.iter().enumerate() {
            let records = (start..start + n)
                .map(|i| {
                    let mut r = Record::new();
                    r.push_bytes("data", format!("record {i}").as_bytes());
                    r
                })
                .collect();
            let local_bad = bad.filter(|b| (start..start + n).contains(b)).map(|b| b - start);
            parts.push(Box::new(Held {
                info: SourceInfo::new("test"),
                records,
                bad: local_bad,
                part,
                hints: hints.clone(),
            }));
            start += n;
        }
        (ConcatSource::new(SourceInfo::new("test"), parts).unwrap(), hints)
    }

    fn names(batch: &RecordBatch) -> Vec<(u64, String)> {
        let text = |r: crate::RecordRef<'_>| String::from_utf8(r.bytes("data").unwrap().to_vec());
        batch.iter().map(|r| (r.index(), text(r).unwrap())).collect()
    }

    fn want(indices: &[u64]) -> Vec<(u64, String)> {
        indices.iter().map(|&i| (i, format!("record {i}"))).collect()
    }

    #[test]
    fn a_hint_reaches_each_part_as_its_own_indices_in_the_order_given() {
        let (source, hints) = whole_hinted(&[3, 0, 5, 1], None);
        source.will_read(&[8, 4, 0, 3, 99, 2, 7]);
        let given = std::mem::take(&mut *hints.lock().unwrap());
        assert_eq!(given, vec![(0, vec![0, 2]), (2, vec![1, 0, 4]), (3, vec![0])]);
        // Nothing to hint, or only indices past the end: no part is bothered.
        source.will_read(&[]);
        source.will_read(&[9, u64::MAX]);
        assert!(hints.lock().unwrap().is_empty());
    }

    #[test]
    fn records_run_through_the_parts_in_order() {
        for sizes in [&[3u64, 0, 5, 1, 0][..], &[9], &[0, 9], &[1; 9]] {
            let source = whole_with(sizes, None);
            assert_eq!(source.len(), 9);
            for i in 0..9 {
                let r = source.read(i).unwrap();
                assert_eq!(r.view().index(), i);
                assert_eq!(r.view().bytes("data").unwrap(), format!("record {i}").as_bytes());
            }
            assert_eq!(source.read(9).unwrap_err().kind(), ErrorKind::OutOfRange);
            let mut batch = RecordBatch::new();
            for indices in
                [&[8u64, 0, 4, 3, 8, 2][..], &[4, 5, 6], &[], &[8, 7, 6, 5, 4, 3, 2, 1, 0]]
            {
                source.read_batch_into(indices, &mut batch).unwrap();
                assert_eq!(names(&batch), want(indices), "{sizes:?} {indices:?}");
                source.read_batch_borrowed(indices, &mut batch).unwrap();
                assert_eq!(names(&batch), want(indices), "{sizes:?} {indices:?}");
            }
        }
        assert!(whole_with(&[], None).is_empty());
    }

    #[test]
    fn errors_name_the_record_of_the_whole_and_leave_the_batch_empty() {
        let source = whole_with(&[2, 3, 2], Some(3));
        assert_eq!(source.read(3).unwrap_err().record(), Some(3));
        let mut batch = source.read_batch(&[0, 1]).unwrap();
        for indices in [&[2u64, 3][..], &[0, 6, 3], &[3]] {
            let e = source.read_batch_into(indices, &mut batch).unwrap_err();
            assert_eq!((e.kind(), e.record()), (ErrorKind::Corrupt, Some(3)), "{indices:?}");
            assert!(batch.is_empty());
        }
        let e = source.read_batch_into(&[0, 7], &mut batch).unwrap_err();
        assert_eq!((e.kind(), e.record()), (ErrorKind::OutOfRange, Some(7)));
        assert!(batch.is_empty());
    }
}
