//! `ORDER BY` a time attribute on a stream (Flink's `RowTimeSortOperator`): a row waits until
//! the watermark passes its time, then leaves with the other rows of that time, ordered by the
//! further sort keys (ties keep their arrival order). A row at or before the last time that
//! already left is late and dropped (as in Flink, the watermark itself does not decide: a row
//! behind the watermark but after the last emitted time still leaves, with the next watermark).

use std::collections::BTreeMap;

use arrow::array::Array;
use arrow::datatypes::SchemaRef;
use arrow::row::{OwnedRow, RowConverter};
use datafusion::common::ScalarValue;
use riffle_connectors::snapshot::{StateReader, StateWriter};
use riffle_connectors::{ChangeBatch, RowKind};
use riffle_plan::SortKey;

use super::aggregate::{field_types, key_columns, key_values, sort_converter, RowsOut};
use super::{millis, Emit, StreamOperator};
use crate::state_codec::ScalarCodec;
use crate::task::RuntimeError;

/// The sort operator (one subtask: the order is global).
pub(super) struct TemporalSort {
    time_column: usize,
    /// Columns of the further sort keys.
    order: Vec<usize>,
    /// Encodes the further sort keys so that byte order is their order.
    converter: RowConverter,
    /// Rows waiting for the watermark by time: their sort key and values, in arrival order.
    waiting: BTreeMap<i64, Vec<(OwnedRow, Vec<ScalarValue>)>>,
    /// The last time whose rows left.
    last_emitted: i64,
    row_codec: ScalarCodec,
    schema: SchemaRef,
}

impl TemporalSort {
    pub(super) fn new(
        time_column: usize,
        order: &[SortKey],
        input: &SchemaRef,
    ) -> Result<Self, RuntimeError> {
        if time_column >= input.fields().len() {
            return Err(RuntimeError::new("sort time column out of range"));
        }
        Ok(Self {
            time_column,
            order: order.iter().map(|k| k.column).collect(),
            converter: sort_converter(order, input)?,
            waiting: BTreeMap::new(),
            last_emitted: i64::MIN,
            row_codec: ScalarCodec::new(&field_types(input))?,
            schema: input.clone(),
        })
    }
}

impl StreamOperator for TemporalSort {
    fn process(
        &mut self,
        _input: usize,
        batch: ChangeBatch,
        _out: &mut Vec<Emit>,
    ) -> Result<(), RuntimeError> {
        let batch = batch.batch;
        let times = millis(batch.column(self.time_column))?;
        let keys = self
            .converter
            .convert_columns(&key_columns(&batch, &self.order))?;
        let all: Vec<usize> = (0..batch.num_columns()).collect();
        for row in 0..batch.num_rows() {
            if times.is_null(row) || times.value(row) <= self.last_emitted {
                continue;
            }
            let values = key_values(&batch, &all, row)?;
            self.waiting
                .entry(times.value(row))
                .or_default()
                .push((keys.row(row).owned(), values));
        }
        Ok(())
    }

    fn watermark(&mut self, watermark: i64, out: &mut Vec<Emit>) -> Result<(), RuntimeError> {
        let mut rows = RowsOut::new(self.schema.fields().len());
        while let Some(entry) = self.waiting.first_entry() {
            if *entry.key() > watermark {
                break;
            }
            self.last_emitted = *entry.key();
            let mut due = entry.remove();
            // A stable sort: rows equal in every key keep their arrival order.
            due.sort_by(|(a, _), (b, _)| a.cmp(b));
            for (_, values) in &due {
                rows.push(RowKind::Insert, values, &[]);
            }
        }
        rows.emit(&self.schema, out)?;
        out.push(Emit::Watermark(watermark));
        Ok(())
    }

    fn checkpoint_unsupported(&self) -> Option<String> {
        None
    }

    fn snapshot(&mut self, _checkpoint: u64) -> Result<Vec<u8>, RuntimeError> {
        let mut w = StateWriter::new();
        w.i64(self.last_emitted);
        w.length(self.waiting.len());
        for (time, rows) in &self.waiting {
            w.i64(*time);
            w.length(rows.len());
            for (key, values) in rows {
                w.bytes(key.row().data());
                self.row_codec.write(&mut w, values)?;
            }
        }
        Ok(w.finish())
    }

    fn restore(&mut self, state: &[u8]) -> Result<(), RuntimeError> {
        let mut r = StateReader::new(state, "a temporal sort");
        self.last_emitted = r.i64()?;
        self.waiting.clear();
        for _ in 0..r.length()? {
            let time = r.i64()?;
            let mut rows = Vec::new();
            for _ in 0..r.length()? {
                let key = self.converter.parser().parse(r.bytes()?).owned();
                rows.push((key, self.row_codec.read(&mut r)?));
            }
            self.waiting.insert(time, rows);
        }
        Ok(r.finish()?)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{ArrayRef, Int32Array, TimestampMillisecondArray};
    use arrow::datatypes::{DataType, Field, Schema, TimeUnit};
    use arrow::record_batch::RecordBatch;

    use super::super::resume::{assert_resumes_anywhere, Step};
    use super::*;

    /// Input `(v INT, ts TIMESTAMP(3))`.
    fn input() -> SchemaRef {
        Arc::new(Schema::new(vec![
            Field::new("v", DataType::Int32, true),
            Field::new("ts", DataType::Timestamp(TimeUnit::Millisecond, None), true),
        ]))
    }

    fn rows(rows: &[(i32, i64)]) -> Step {
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int32Array::from(
                rows.iter().map(|r| r.0).collect::<Vec<_>>(),
            )),
            Arc::new(TimestampMillisecondArray::from(
                rows.iter().map(|r| r.1).collect::<Vec<_>>(),
            )),
        ];
        let batch = RecordBatch::try_new(input(), columns).expect("batch");
        Step::Rows(0, ChangeBatch::inserts(batch))
    }

    fn operator() -> Box<dyn StreamOperator> {
        let order = [SortKey {
            column: 0,
            ascending: false,
            nulls_first: false,
        }];
        Box::new(TemporalSort::new(1, &order, &input()).expect("operator"))
    }

    fn steps() -> Vec<Step> {
        vec![
            rows(&[(1, 50), (7, 20), (3, 50)]),
            Step::Watermark(20),
            rows(&[(9, 10), (2, 40), (4, 50)]),
            Step::Watermark(60),
            rows(&[(5, 60), (6, 70)]),
            Step::Watermark(i64::MAX),
        ]
    }

    #[test]
    fn rows_leave_in_time_then_key_order_and_late_rows_are_dropped() {
        let mut op = operator();
        let mut out = Vec::new();
        for step in steps() {
            match step {
                Step::Rows(input, batch) => op.process(input, batch, &mut out),
                Step::Watermark(w) => op.watermark(w, &mut out),
                Step::InputWatermark(..) => Ok(()),
            }
            .expect("step");
        }
        let mut emitted = Vec::new();
        for emit in &out {
            if let Emit::Data(b) = emit {
                let v = b.batch.column(0).as_any().downcast_ref::<Int32Array>();
                emitted.extend(v.expect("INT column").iter().flatten());
            }
        }
        // 9 (time 10) arrives after time 20 left; 5 (time 60) is behind the watermark (60)
        // but after the last time that left (50), so it leaves with the next watermark.
        assert_eq!(emitted, [7, 2, 4, 3, 1, 5, 6]);
    }

    #[test]
    fn a_sort_resumes_from_a_snapshot() {
        let out = assert_resumes_anywhere(&operator, &steps());
        assert_eq!(
            out.iter().filter(|l| l.starts_with("+I")).count(),
            7,
            "{out:?}"
        );
    }
}
