//! Arrow record batches handed over by a caller (a pyarrow table or a Polars frame through
//! the C stream interface, batches made in Rust) read as records, front to back, one
//! batch in memory at a time: what `reel::convert::convert_batches` writes from.

use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::SchemaRef;
use reel_core::{Error, RecordBatch as ReelBatch, Result, SourceInfo};

use crate::decode::{Column, catch_panics, columns_of, decode_row};

/// The rows of a stream of Arrow record batches as records: each row a record, each
/// column a field, typed as for Parquet and Arrow IPC files (see the crate documentation;
/// a null cell is an absent field). Its [`SourceInfo`] says format `"arrow"` and lists
/// the columns, so a conversion from it follows the rules for Arrow sources.
///
/// Unlike a [`RecordSource`](reel_core::RecordSource) it reads forward only, and does not
/// know how many records will come: a stream is read once, holding the batch being decoded
/// and nothing before it.
pub struct BatchRecords<R> {
    reader: R,
    schema: SchemaRef,
    info: SourceInfo,
    columns: Vec<Column>,
    /// The batch being decoded and its next row.
    current: Option<(RecordBatch, usize)>,
    /// The index the next record gets.
    next_index: u64,
    done: bool,
}

impl<R: RecordBatchReader> BatchRecords<R> {
    /// The records of `reader`'s batches. A column reel has no value for (decimal, union,
    /// interval, …) is refused here, naming it.
    pub fn new(reader: R) -> Result<Self> {
        let schema = reader.schema();
        let order: Vec<usize> = (0..schema.fields().len()).collect();
        let (columns, specs) = columns_of(&schema, &order).map_err(|e| e.with_format("arrow"))?;
        let mut info = SourceInfo::new("arrow");
        info.version = Some("Arrow record batches".into());
        info.schema = Some(specs);
        Ok(BatchRecords {
            reader,
            schema,
            info,
            columns,
            current: None,
            next_index: 0,
            done: false,
        })
    }

    /// What the records are: format `"arrow"`, a field per column.
    pub fn info(&self) -> &SourceInfo {
        &self.info
    }

    /// Records read so far.
    pub fn records_read(&self) -> u64 {
        self.next_index
    }

    /// Decodes the next records into `out`, numbered from 0 in stream order: up to
    /// `max_records`, stopping early once they hold `max_bytes` (at least one record);
    /// false once the stream is at its end (`out` then empty). After an error the stream
    /// is over.
    pub fn next_records(
        &mut self,
        max_records: usize,
        max_bytes: usize,
        out: &mut ReelBatch,
    ) -> Result<bool> {
        out.clear();
        let result = self.fill(max_records.max(1), max_bytes, out);
        if result.is_err() {
            out.clear();
            self.done = true;
            self.current = None;
        }
        result.map(|()| !out.is_empty())
    }

    fn fill(&mut self, max_records: usize, max_bytes: usize, out: &mut ReelBatch) -> Result<()> {
        while out.len() < max_records
            && (out.is_empty() || out.buffer_len() < max_bytes)
            && !self.done
        {
            let Some((batch, row)) = &mut self.current else {
                self.current = self.pull()?.map(|b| (b, 0));
                continue;
            };
            if *row >= batch.num_rows() {
                self.current = None;
                continue;
            }
            let index = self.next_index;
            let (batch, r) = (&*batch, *row);
            let columns = &self.columns;
            catch_panics(|| out.push_with(index, |o| decode_row(columns, batch, r, o)))
                .map_err(|e| e.with_record(index).with_format("arrow"))?;
            *row += 1;
            self.next_index += 1;
        }
        Ok(())
    }

    /// The next batch of the stream, checked against its schema; `None` at its end.
    fn pull(&mut self) -> Result<Option<RecordBatch>> {
        let batch = match self.reader.next() {
            None => {
                self.done = true;
                return Ok(None);
            }
            Some(Err(e)) => {
                return Err(Error::invalid_input(format!(
                    "reading the Arrow stream failed after {} records: {e}",
                    self.next_index
                ))
                .with_format("arrow"));
            }
            Some(Ok(batch)) => batch,
        };
        let same = batch.num_columns() == self.schema.fields().len()
            && batch
                .columns()
                .iter()
                .zip(self.schema.fields())
                .all(|(c, f)| c.data_type() == f.data_type());
        if !same {
            return Err(Error::invalid_input(format!(
                "a record batch of the Arrow stream (after {} records) has other columns than \
                 the stream's schema",
                self.next_index
            ))
            .with_format("arrow"));
        }
        Ok(Some(batch))
    }
}
