//! Batches of records sharing one reusable buffer.

use crate::Result;
use crate::io::SharedBytes;
use crate::record::{Arena, FieldList, RecordOut, RecordRef};

#[derive(Clone, Copy, Debug)]
pub(crate) struct Slot {
    pub(crate) index: u64,
    pub(crate) first_field: usize,
    pub(crate) end_field: usize,
    /// Where the record's values point: 0 into the batch's own buffer, `k` into
    /// `shared[k - 1]` (a record read without a copy).
    pub(crate) buffer: u32,
}

/// The result of a batch read: the records in the order they were asked for.
///
/// All records share one byte buffer and one field list. Reusing a `RecordBatch` across
/// calls to [`RecordSource::read_batch_into`](crate::RecordSource::read_batch_into) costs no
/// allocation once the buffers have grown to the largest batch.
///
/// # Not Arrow's `RecordBatch`
///
/// The name is Arrow's, the layout is not: this batch is *row-oriented*. Each entry is one
/// whole record ([`RecordRef`]) with its own fields, records of one batch may have different
/// fields, and values are reel [`ValueRef`](crate::ValueRef)s rather than typed columns. An
/// Arrow `RecordBatch` is columnar: one typed array per field, every row with the same
/// schema. The name stays because every reader's batch API (`read_batch`, the loader's
/// batches) says "batch of records"; converting to Arrow's columns is a separate step.
///
/// ```
/// use reel_core::{RecordBatch, RecordSourceExt};
/// # fn demo(source: &dyn reel_core::RecordSource) -> reel_core::Result<()> {
/// let mut batch = RecordBatch::new();
/// source.read_batch_into(&[2, 0], &mut batch)?;
/// for record in &batch {
///     println!("record {} has {} fields", record.index(), record.len());
/// }
/// # Ok(()) }
/// ```
#[derive(Default)]
pub struct RecordBatch {
    pub(crate) arena: Arena,
    pub(crate) fields: FieldList,
    pub(crate) scratch: crate::layout::Scratch,
    pub(crate) slots: Vec<Slot>,
    /// Memory-held files that borrowed records point into
    /// ([`RecordSource::read_batch_borrowed`](crate::RecordSource::read_batch_borrowed));
    /// holding them keeps those bytes alive as long as the batch holds the records.
    pub(crate) shared: Vec<SharedBytes>,
}

impl RecordBatch {
    /// An empty batch.
    pub fn new() -> Self {
        RecordBatch::default()
    }

    /// Number of records.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Whether the batch holds no records.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Record `k` of the batch (the `k`-th index asked for).
    #[inline]
    pub fn get(&self, k: usize) -> Option<RecordRef<'_>> {
        let s = self.slots.get(k)?;
        let buf = match s.buffer {
            0 => self.arena.as_slice(),
            b => self.shared.get(b as usize - 1).map_or(&[][..], |m| &m[..]),
        };
        Some(RecordRef::new(s.index, buf, &self.fields.as_slice()[s.first_field..s.end_field]))
    }

    /// The records in order (also `for record in &batch`).
    pub fn iter(&self) -> BatchIter<'_> {
        self.into_iter()
    }

    /// Bytes held by the batch (raw reads plus decoded values; not the bytes of records
    /// that borrow from a memory-held file).
    pub fn buffer_len(&self) -> usize {
        self.arena.used()
    }

    /// Whether record `k` borrows its bytes from a memory-held file instead of holding a
    /// copy (see [`RecordSource::read_batch_borrowed`](crate::RecordSource::read_batch_borrowed)).
    pub fn is_borrowed(&self, k: usize) -> bool {
        self.slots.get(k).is_some_and(|s| s.buffer != 0)
    }

    /// Removes every record, keeping the allocated capacity (and letting go of the files
    /// borrowed records pointed into).
    pub fn clear(&mut self) {
        self.arena.clear();
        self.fields.clear();
        self.slots.clear();
        self.shared.clear();
    }

    /// Adds one record built by `fill`. If `fill` fails, the batch is left as it was.
    ///
    /// This is how a [`RecordSource`](crate::RecordSource) that does not go through
    /// [`LayoutSource`](crate::LayoutSource) fills a batch.
    pub fn push_with(
        &mut self,
        index: u64,
        fill: impl FnOnce(&mut RecordOut<'_>) -> Result<()>,
    ) -> Result<()> {
        let first_field = self.fields.len();
        let used = self.arena.used();
        let mut out = RecordOut::new(&mut self.arena, &mut self.fields);
        if let Err(e) = fill(&mut out) {
            self.fields.truncate(first_field);
            self.arena.truncate(used);
            return Err(e);
        }
        self.slots.push(Slot { index, first_field, end_field: self.fields.len(), buffer: 0 });
        Ok(())
    }

    /// Puts the records in another order: record `k` becomes the record that is `order[k]`
    /// now. Only their places change; no bytes are copied.
    ///
    /// For sources that fill a batch in an order of their own (by position in the file,
    /// so that each block is read or decoded once) and must return the records in the
    /// order asked for. `order` must name every record exactly once (a permutation of
    /// `0..len`); anything else is an [`ErrorKind::InvalidInput`](crate::ErrorKind) error
    /// and leaves the batch as it was.
    pub fn reorder(&mut self, order: &[usize]) -> Result<()> {
        let n = self.slots.len();
        let not_a_permutation = || {
            crate::Error::invalid_input(format!(
                "cannot reorder a batch of {n} records: the order must name each record once"
            ))
        };
        if order.len() != n {
            return Err(not_a_permutation());
        }
        let mut seen = vec![false; n];
        for &k in order {
            match seen.get_mut(k) {
                Some(s) if !*s => *s = true,
                _ => return Err(not_a_permutation()),
            }
        }
        let slots: Vec<Slot> = order.iter().map(|&k| self.slots[k]).collect();
        self.slots = slots;
        Ok(())
    }

    /// Gives record `k` the index `indices[k]`, for a source made of other sources, whose
    /// records know only their index in their part ([`ConcatSource`](crate::ConcatSource)).
    /// `indices` must have one entry per record; anything else is an
    /// [`ErrorKind::InvalidInput`](crate::ErrorKind) error and leaves the batch as it was.
    pub fn renumber(&mut self, indices: &[u64]) -> Result<()> {
        if indices.len() != self.slots.len() {
            return Err(crate::Error::invalid_input(format!(
                "cannot renumber a batch of {} records with {} indices",
                self.slots.len(),
                indices.len()
            )));
        }
        for (slot, &index) in self.slots.iter_mut().zip(indices) {
            slot.index = index;
        }
        Ok(())
    }

    /// Adds a copy of `record`.
    pub fn push_copy(&mut self, record: RecordRef<'_>) {
        let first_field = self.fields.len();
        let mut out = RecordOut::new(&mut self.arena, &mut self.fields);
        for (name, value) in
            record.raw_fields().iter().map(|f| (&f.name, f.value.view(record.raw_buffer())))
        {
            let v = out.copy_value(value);
            out.push(name.clone(), v);
        }
        let end_field = self.fields.len();
        self.slots.push(Slot { index: record.index(), first_field, end_field, buffer: 0 });
    }
}

impl<'a> IntoIterator for &'a RecordBatch {
    type Item = RecordRef<'a>;
    type IntoIter = BatchIter<'a>;

    /// The records in order, as [`RecordBatch::iter`]: `for record in &batch`.
    fn into_iter(self) -> BatchIter<'a> {
        BatchIter { batch: self, next: 0 }
    }
}

/// The records of a [`RecordBatch`] in order (`for record in &batch`).
#[derive(Clone, Debug)]
pub struct BatchIter<'a> {
    batch: &'a RecordBatch,
    next: usize,
}

impl<'a> Iterator for BatchIter<'a> {
    type Item = RecordRef<'a>;

    #[inline]
    fn next(&mut self) -> Option<RecordRef<'a>> {
        let record = self.batch.get(self.next)?;
        self.next += 1;
        Some(record)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.batch.len().saturating_sub(self.next);
        (left, Some(left))
    }
}

impl ExactSizeIterator for BatchIter<'_> {}

impl std::fmt::Debug for RecordBatch {
    /// The records, each with its fields (not the raw buffer).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ErrorKind, Value};

    /// A batch of records `indices`, each with one bytes field holding its index as text.
    fn batch_of(indices: &[u64]) -> RecordBatch {
        let mut batch = RecordBatch::new();
        for &i in indices {
            batch
                .push_with(i, |o| {
                    let v = Value::Bytes(o.append(i.to_string().as_bytes()));
                    o.push("data".into(), v);
                    Ok(())
                })
                .unwrap();
        }
        batch
    }

    fn contents(batch: &RecordBatch) -> Vec<(u64, Vec<u8>)> {
        batch
            .iter()
            .map(|r| (r.index(), r.bytes("data").expect("a bytes field").to_vec()))
            .collect()
    }

    #[test]
    fn reorder_moves_whole_records() {
        let mut batch = batch_of(&[10, 20, 30, 40]);
        batch.reorder(&[2, 0, 3, 1]).unwrap();
        let want: Vec<(u64, Vec<u8>)> =
            [30u64, 10, 40, 20].iter().map(|&i| (i, i.to_string().into_bytes())).collect();
        assert_eq!(contents(&batch), want);
        // A batch reordered is filled again like any other.
        batch.clear();
        assert!(batch.is_empty());
    }

    #[test]
    fn reorder_refuses_what_is_not_a_permutation_and_keeps_the_batch() {
        let mut batch = batch_of(&[1, 2, 3]);
        let before = contents(&batch);
        for order in [&[0usize, 1][..], &[0, 1, 2, 3], &[0, 0, 1], &[0, 1, 3]] {
            let e = batch.reorder(order).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidInput, "{order:?}");
            assert_eq!(contents(&batch), before, "{order:?}");
        }
        batch.reorder(&[]).unwrap_err();
        RecordBatch::new().reorder(&[]).unwrap();
    }
}
