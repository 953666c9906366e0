//! OVER aggregation, as Flink's `{RowTime,ProcTime}{Rows,Range}{Bounded,Unbounded}Preceding`
//! functions. On processing time every row is processed as it arrives. On event time rows wait
//! per partition until the watermark passes their time and are then
//! processed in time order. `ROWS` frames add rows one by one; in `RANGE` frames the rows of
//! one time are added together and see each other. Late rows are dropped: with an unbounded
//! frame those at or below the watermark on arrival, with a bounded frame (as Flink) those at
//! or below the last time the partition processed.

use std::collections::{BTreeMap, VecDeque};

use arrow::array::{Array, ArrayRef};
use arrow::datatypes::{DataType, SchemaRef};
use arrow::row::OwnedRow;
use datafusion::common::ScalarValue;
use riffle_connectors::{ChangeBatch, RowKind};
use riffle_plan::over::{OverCall, OverFunction, OverSpec};

use riffle_connectors::snapshot::{StateReader, StateWriter};

use super::aggregate::{key_values, RowsOut};
use super::keyed::{read_timers, write_timers, KeyedState};
use crate::keyed_snapshot::{min_time, KeyedSnapshot, KeyedSnapshotWriter};

use super::{millis, Emit, StreamOperator};
use crate::accumulator::Accumulator;
use crate::state_codec::ScalarCodec;
use crate::task::RuntimeError;

/// Tables of the keyed snapshot.
const PARTITIONS: u8 = 0;
const TIMERS: u8 = 1;

/// The running state of one call in one partition.
#[derive(Clone)]
enum CallState {
    Aggregate(Accumulator),
    RowNumber(i64),
    /// First/last non-null value of an unbounded frame (bounded frames scan their rows).
    Value(Option<ScalarValue>),
    /// The arguments of the last `offset + 1` rows, the current row's last.
    Lag(VecDeque<ScalarValue>),
}

/// One partition: rows waiting for the watermark, the rows of the current frame (bounded
/// frames only) and every call's state.
#[derive(Clone)]
struct Partition {
    waiting: BTreeMap<i64, Vec<Vec<ScalarValue>>>,
    frame: VecDeque<(i64, Vec<ScalarValue>)>,
    calls: Vec<CallState>,
    /// The last time processed (Flink starts it at 0).
    last_fired: i64,
}

/// The encoders of an OVER aggregation's state.
struct Codecs {
    row: ScalarCodec,
    args: Vec<Option<ScalarCodec>>,
}

impl Codecs {
    fn write_partition(&self, p: &Partition, w: &mut StateWriter) -> Result<(), RuntimeError> {
        w.i64(p.last_fired);
        w.length(p.waiting.len());
        for (time, rows) in &p.waiting {
            w.i64(*time);
            w.length(rows.len());
            for row in rows {
                self.row.write(w, row)?;
            }
        }
        w.length(p.frame.len());
        for (time, row) in &p.frame {
            w.i64(*time);
            self.row.write(w, row)?;
        }
        for (call, codec) in p.calls.iter().zip(&self.args) {
            match call {
                CallState::Aggregate(acc) => acc.write_state(w, codec.as_ref())?,
                CallState::RowNumber(n) => w.i64(*n),
                CallState::Value(v) => self.write_value(w, codec.as_ref(), v.as_ref())?,
                CallState::Lag(history) => {
                    w.length(history.len());
                    for v in history {
                        self.write_value(w, codec.as_ref(), Some(v))?;
                    }
                }
            }
        }
        Ok(())
    }

    fn write_value(
        &self,
        w: &mut StateWriter,
        codec: Option<&ScalarCodec>,
        value: Option<&ScalarValue>,
    ) -> Result<(), RuntimeError> {
        match codec {
            Some(c) => c.write_optional(w, value),
            None => {
                w.bool(false);
                Ok(())
            }
        }
    }

    fn read_value(
        &self,
        r: &mut StateReader<'_>,
        codec: Option<&ScalarCodec>,
    ) -> Result<Option<ScalarValue>, RuntimeError> {
        match codec {
            Some(c) => c.read_optional(r),
            None => {
                r.bool()?;
                Ok(None)
            }
        }
    }

    /// Reads a partition into `fresh` (a new partition with the calls' initial states).
    fn read_partition(
        &self,
        mut fresh: Partition,
        r: &mut StateReader<'_>,
    ) -> Result<Partition, RuntimeError> {
        fresh.last_fired = r.i64()?;
        for _ in 0..r.length()? {
            let time = r.i64()?;
            let n = r.length()?;
            let mut rows = Vec::with_capacity(n);
            for _ in 0..n {
                rows.push(self.row.read(r)?);
            }
            fresh.waiting.insert(time, rows);
        }
        for _ in 0..r.length()? {
            let time = r.i64()?;
            fresh.frame.push_back((time, self.row.read(r)?));
        }
        for (call, codec) in fresh.calls.iter_mut().zip(&self.args) {
            match call {
                CallState::Aggregate(acc) => acc.read_state(r, codec.as_ref())?,
                CallState::RowNumber(n) => *n = r.i64()?,
                CallState::Value(v) => *v = self.read_value(r, codec.as_ref())?,
                CallState::Lag(history) => {
                    for _ in 0..r.length()? {
                        let v = self.read_value(r, codec.as_ref())?;
                        history.push_back(v.unwrap_or(ScalarValue::Null));
                    }
                }
            }
        }
        Ok(fresh)
    }
}

/// An OVER aggregation subtask.
pub(super) struct OverAggregate {
    spec: OverSpec,
    arg_types: Vec<Option<DataType>>,
    out_types: Vec<DataType>,
    partitions: KeyedState<Partition>,
    /// Encode rows and each call's argument values (for checkpoints).
    codecs: Codecs,
    /// Partitions with rows waiting, by time.
    timers: BTreeMap<i64, Vec<OwnedRow>>,
    watermark: i64,
    width: usize,
    schema: SchemaRef,
}

impl OverAggregate {
    /// Builds the operator.
    pub(super) fn new(
        spec: &OverSpec,
        input: &SchemaRef,
        schema: SchemaRef,
    ) -> Result<Self, RuntimeError> {
        let types: Vec<DataType> = input
            .fields()
            .iter()
            .map(|f| f.data_type().clone())
            .collect();
        let arg_types: Vec<Option<DataType>> = spec
            .calls
            .iter()
            .map(|c| c.arg.and_then(|a| types.get(a).cloned()))
            .collect();
        let out_types = (0..spec.calls.len())
            .map(|i| {
                schema
                    .fields()
                    .get(spec.forwarded + i)
                    .map(|f| f.data_type().clone())
                    .ok_or_else(|| RuntimeError::new("OVER output column out of range"))
            })
            .collect::<Result<_, _>>()?;
        let codecs = Codecs {
            row: ScalarCodec::new(&types)?,
            args: arg_types
                .iter()
                .map(|t: &Option<DataType>| {
                    t.as_ref()
                        .map(|t| ScalarCodec::new(std::slice::from_ref(t)))
                        .transpose()
                })
                .collect::<Result<_, _>>()?,
        };
        Ok(Self {
            spec: spec.clone(),
            arg_types,
            out_types,
            partitions: KeyedState::new(&spec.partition, &types)?,
            codecs,
            timers: BTreeMap::new(),
            watermark: i64::MIN,
            width: types.len(),
            schema,
        })
    }

    fn fresh(&self) -> Partition {
        let calls = self
            .spec
            .calls
            .iter()
            .zip(&self.arg_types)
            .map(|(c, t)| match c.function {
                OverFunction::Aggregate(f) => {
                    CallState::Aggregate(Accumulator::new(f, c.distinct, t.as_ref()))
                }
                OverFunction::RowNumber => CallState::RowNumber(0),
                OverFunction::FirstValue | OverFunction::LastValue => CallState::Value(None),
                OverFunction::Lag => CallState::Lag(VecDeque::new()),
            })
            .collect();
        Partition {
            waiting: BTreeMap::new(),
            frame: VecDeque::new(),
            calls,
            last_fired: 0,
        }
    }

    /// Processes the waiting rows of partition `key` at time `ts`, appending the output rows.
    fn fire(&mut self, key: &OwnedRow, ts: i64, out: &mut RowsOut) -> Result<(), RuntimeError> {
        let Some(partition) = self.partitions.get_mut(key) else {
            return Ok(());
        };
        let Some(rows) = partition.waiting.remove(&ts) else {
            return Ok(());
        };
        partition.last_fired = ts;
        process_rows(&self.spec, &self.out_types, partition, ts, rows, out)
    }
}

/// Processes `rows`, all at time `ts`, in `partition`, appending the output rows.
fn process_rows(
    spec: &OverSpec,
    out_types: &[DataType],
    partition: &mut Partition,
    ts: i64,
    rows: Vec<Vec<ScalarValue>>,
    out: &mut RowsOut,
) -> Result<(), RuntimeError> {
    let bounded = spec.frame.preceding.is_some();
    if spec.frame.rows {
        for row in rows {
            add(spec, partition, &row)?;
            if bounded {
                partition.frame.push_back((ts, row.clone()));
            }
            if let Some(n) = spec.frame.preceding {
                while partition.frame.len() > usize::try_from(n).unwrap_or(usize::MAX) + 1 {
                    if let Some((_, old)) = partition.frame.pop_front() {
                        retract(spec, partition, &old)?;
                    }
                }
            }
            let values = values(spec, out_types, partition, &row)?;
            out.push(RowKind::Insert, &row[..spec.forwarded], &values);
        }
        return Ok(());
    }
    for row in &rows {
        add(spec, partition, row)?;
        if bounded {
            partition.frame.push_back((ts, row.clone()));
        }
    }
    if let Some(p) = spec.frame.preceding {
        let lowest = ts.saturating_sub(p);
        while partition.frame.front().is_some_and(|(t, _)| *t < lowest) {
            if let Some((_, old)) = partition.frame.pop_front() {
                retract(spec, partition, &old)?;
            }
        }
    }
    for row in &rows {
        let values = values(spec, out_types, partition, row)?;
        out.push(RowKind::Insert, &row[..spec.forwarded], &values);
    }
    Ok(())
}

/// The argument of `call` in `row` as a one-element array (`None` without argument).
fn arg_array(call: &OverCall, row: &[ScalarValue]) -> Result<Option<ArrayRef>, RuntimeError> {
    match call.arg.and_then(|a| row.get(a)) {
        Some(v) => Ok(Some(v.to_array()?)),
        None => Ok(None),
    }
}

/// Adds `row` to every call of `partition`.
fn add(
    spec: &OverSpec,
    partition: &mut Partition,
    row: &[ScalarValue],
) -> Result<(), RuntimeError> {
    let bounded = spec.frame.preceding.is_some();
    for (call, state) in spec.calls.iter().zip(partition.calls.iter_mut()) {
        let arg = call.arg.and_then(|a| row.get(a));
        match state {
            CallState::Aggregate(acc) => acc.update(arg_array(call, row)?.as_ref(), 0, true)?,
            CallState::RowNumber(n) => *n += 1,
            CallState::Value(v) if !bounded => {
                if let Some(a) = arg.filter(|a| !a.is_null()) {
                    let first = call.function == OverFunction::FirstValue;
                    if !first || v.is_none() {
                        *v = Some(a.clone());
                    }
                }
            }
            CallState::Value(_) => {}
            CallState::Lag(history) => {
                history.push_back(arg.cloned().unwrap_or(ScalarValue::Null));
                while history.len() > call.offset + 1 {
                    history.pop_front();
                }
            }
        }
    }
    Ok(())
}

/// Removes `row` (leaving a bounded frame) from the aggregates of `partition`.
fn retract(
    spec: &OverSpec,
    partition: &mut Partition,
    row: &[ScalarValue],
) -> Result<(), RuntimeError> {
    for (call, state) in spec.calls.iter().zip(partition.calls.iter_mut()) {
        if let CallState::Aggregate(acc) = state {
            acc.update(arg_array(call, row)?.as_ref(), 0, false)?;
        }
    }
    Ok(())
}

/// The values of every call for `row`, the row just processed.
fn values(
    spec: &OverSpec,
    out_types: &[DataType],
    partition: &Partition,
    row: &[ScalarValue],
) -> Result<Vec<ScalarValue>, RuntimeError> {
    let mut out = Vec::with_capacity(spec.calls.len());
    for ((call, state), t) in spec.calls.iter().zip(&partition.calls).zip(out_types) {
        let value = match state {
            CallState::Aggregate(acc) => acc.value(t)?,
            CallState::RowNumber(n) => ScalarValue::Int64(Some(*n)),
            CallState::Value(v) if spec.frame.preceding.is_none() => {
                v.clone().unwrap_or(ScalarValue::Null)
            }
            CallState::Value(_) => {
                let non_null = |(_, r): &&(i64, Vec<ScalarValue>)| {
                    call.arg
                        .and_then(|a| r.get(a))
                        .is_some_and(|v| !v.is_null())
                };
                let found = if call.function == OverFunction::FirstValue {
                    partition.frame.iter().find(non_null)
                } else {
                    partition.frame.iter().rev().find(non_null)
                };
                found
                    .and_then(|(_, r)| call.arg.and_then(|a| r.get(a)).cloned())
                    .unwrap_or(ScalarValue::Null)
            }
            CallState::Lag(history) => {
                if history.len() == call.offset + 1 {
                    history.front().cloned().unwrap_or(ScalarValue::Null)
                } else {
                    call.default
                        .and_then(|d| row.get(d).cloned())
                        .unwrap_or(ScalarValue::Null)
                }
            }
        };
        out.push(if value.is_null() {
            ScalarValue::try_from(t)?
        } else {
            value
        });
    }
    Ok(out)
}

impl StreamOperator for OverAggregate {
    fn checkpoint_unsupported(&self) -> Option<String> {
        None
    }

    fn snapshot(&mut self, _checkpoint: u64) -> Result<Vec<u8>, RuntimeError> {
        let mut out = KeyedSnapshotWriter::new();
        let mut w = StateWriter::new();
        w.i64(self.watermark);
        out.global(w.finish());
        write_timers(&mut out, TIMERS, &self.timers)?;
        let codecs = &self.codecs;
        self.partitions
            .write(&mut out, PARTITIONS, |p, w| codecs.write_partition(p, w))?;
        Ok(out.finish())
    }

    fn restore(&mut self, state: &[u8]) -> Result<(), RuntimeError> {
        let what = "an OVER aggregation";
        let snapshot = KeyedSnapshot::parse(state, what)?;
        self.watermark = min_time(snapshot.globals(what, |r| Ok(r.i64()?))?);
        self.timers = read_timers(&snapshot, TIMERS, what, |b| self.partitions.key_of(b))?;
        let template = self.fresh();
        let codecs = &self.codecs;
        self.partitions.read(&snapshot, PARTITIONS, what, |r| {
            codecs.read_partition(template.clone(), r)
        })
    }

    fn keyed_snapshot(&self) -> bool {
        true
    }

    fn process(
        &mut self,
        _input: usize,
        batch: ChangeBatch,
        out: &mut Vec<Emit>,
    ) -> Result<(), RuntimeError> {
        let keys = self.partitions.keys(&batch.batch)?;
        let times = match self.spec.time {
            Some(t) => match batch.batch.columns().get(t) {
                Some(column) => Some(millis(column)?),
                None => return Err(RuntimeError::new("OVER time column out of range")),
            },
            None => None,
        };
        let all: Vec<usize> = (0..self.width).collect();
        let bounded = self.spec.frame.preceding.is_some();
        let mut now = RowsOut::new(self.schema.fields().len());
        for row in 0..batch.num_rows() {
            let key = keys.row(row).owned();
            if self.partitions.get_mut(&key).is_none() {
                let fresh = self.fresh();
                self.partitions.get_or_insert_with(&key, || fresh);
            }
            let Some(partition) = self.partitions.get_mut(&key) else {
                continue;
            };
            let values = key_values(&batch.batch, &all, row)?;
            let Some(times) = &times else {
                // Processing time: every row is processed as it arrives.
                process_rows(
                    &self.spec,
                    &self.out_types,
                    partition,
                    0,
                    vec![values],
                    &mut now,
                )?;
                continue;
            };
            if times.is_null(row) {
                continue;
            }
            let ts = times.value(row);
            let late = if bounded {
                ts <= partition.last_fired
            } else {
                ts <= self.watermark
            };
            if late {
                continue;
            }
            let waiting = partition.waiting.entry(ts).or_default();
            if waiting.is_empty() {
                self.timers.entry(ts).or_default().push(key);
            }
            waiting.push(values);
        }
        now.emit(&self.schema, out)
    }

    fn watermark(&mut self, watermark: i64, out: &mut Vec<Emit>) -> Result<(), RuntimeError> {
        self.watermark = watermark;
        let mut rows = RowsOut::new(self.schema.fields().len());
        while let Some(entry) = self.timers.first_entry() {
            if *entry.key() > watermark {
                break;
            }
            let ts = *entry.key();
            for key in entry.remove() {
                self.fire(&key, ts, &mut rows)?;
            }
        }
        rows.emit(&self.schema, out)?;
        out.push(Emit::Watermark(watermark));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{Int32Array, Int64Array, TimestampMillisecondArray};
    use arrow::datatypes::{Field, Schema, TimeUnit};
    use arrow::record_batch::RecordBatch;
    use riffle_plan::over::OverFrame;
    use riffle_plan::AggregateFunction;

    use super::*;

    /// `SUM(v)` over `(k, v, ts)` with the given frame.
    fn operator(frame: OverFrame) -> OverAggregate {
        let input = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Int32, true),
            Field::new("v", DataType::Int32, true),
            Field::new("ts", DataType::Timestamp(TimeUnit::Millisecond, None), true),
        ]));
        let output = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Int32, true),
            Field::new("v", DataType::Int32, true),
            Field::new("ts", DataType::Timestamp(TimeUnit::Millisecond, None), true),
            Field::new("s", DataType::Int64, true),
        ]));
        let spec = OverSpec {
            partition: vec![0],
            time: Some(2),
            frame,
            forwarded: 3,
            calls: vec![OverCall {
                function: OverFunction::Aggregate(AggregateFunction::Sum),
                arg: Some(1),
                distinct: false,
                offset: 1,
                default: None,
                name: "s".into(),
            }],
        };
        OverAggregate::new(&spec, &input, output).expect("operator")
    }

    fn feed(op: &mut OverAggregate, rows: &[(i32, i32, i64)]) {
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int32Array::from(
                rows.iter().map(|r| r.0).collect::<Vec<_>>(),
            )),
            Arc::new(Int32Array::from(
                rows.iter().map(|r| r.1).collect::<Vec<_>>(),
            )),
            Arc::new(TimestampMillisecondArray::from(
                rows.iter().map(|r| r.2).collect::<Vec<_>>(),
            )),
        ];
        let schema = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Int32, true),
            Field::new("v", DataType::Int32, true),
            Field::new("ts", DataType::Timestamp(TimeUnit::Millisecond, None), true),
        ]));
        let batch = RecordBatch::try_new(schema, columns).expect("batch");
        let mut out = Vec::new();
        op.process(0, ChangeBatch::inserts(batch), &mut out)
            .expect("process");
        assert!(out.is_empty(), "event-time rows wait for the watermark");
    }

    /// `(v, sum)` of every emitted row.
    fn fire(op: &mut OverAggregate, watermark: i64) -> Vec<(i32, i64)> {
        let mut out = Vec::new();
        op.watermark(watermark, &mut out).expect("watermark");
        let mut rows = Vec::new();
        for e in &out {
            let Emit::Data(b) = e else { continue };
            let v = b.batch.column(1).as_any().downcast_ref::<Int32Array>();
            let s = b.batch.column(3).as_any().downcast_ref::<Int64Array>();
            if let (Some(v), Some(s)) = (v, s) {
                rows.extend((0..b.num_rows()).map(|i| (v.value(i), s.value(i))));
            }
        }
        rows
    }

    #[test]
    fn rows_frames_add_rows_of_one_time_one_by_one() {
        let mut op = operator(OverFrame {
            rows: true,
            preceding: Some(1),
        });
        feed(
            &mut op,
            &[(1, 1, 1_000), (1, 2, 2_000), (1, 4, 2_000), (1, 8, 3_000)],
        );
        assert_eq!(fire(&mut op, 2_000), [(1, 1), (2, 3), (4, 6)]);
        assert_eq!(fire(&mut op, 3_000), [(8, 12)]);
    }

    #[test]
    fn range_frames_let_rows_of_one_time_see_each_other() {
        let mut op = operator(OverFrame {
            rows: false,
            preceding: Some(1_000),
        });
        feed(
            &mut op,
            &[(1, 1, 1_000), (1, 2, 2_000), (1, 4, 2_000), (1, 8, 3_000)],
        );
        assert_eq!(fire(&mut op, i64::MAX), [(1, 1), (2, 7), (4, 7), (8, 14)]);
    }

    #[test]
    fn unbounded_frames_drop_rows_behind_the_watermark() {
        let mut op = operator(OverFrame {
            rows: true,
            preceding: None,
        });
        feed(&mut op, &[(1, 1, 1_000)]);
        assert_eq!(fire(&mut op, 1_000), [(1, 1)]);
        feed(&mut op, &[(2, 5, 1_000), (1, 2, 3_000)]);
        assert_eq!(fire(&mut op, i64::MAX), [(2, 3)]);
    }

    use super::super::resume::{assert_rescales_anywhere, assert_resumes_anywhere, Step};

    fn rows(rows: &[(i32, i32, i64)]) -> Step {
        let schema = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Int32, true),
            Field::new("v", DataType::Int32, true),
            Field::new("ts", DataType::Timestamp(TimeUnit::Millisecond, None), true),
        ]));
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int32Array::from(
                rows.iter().map(|r| r.0).collect::<Vec<_>>(),
            )),
            Arc::new(Int32Array::from(
                rows.iter().map(|r| r.1).collect::<Vec<_>>(),
            )),
            Arc::new(TimestampMillisecondArray::from(
                rows.iter().map(|r| r.2).collect::<Vec<_>>(),
            )),
        ];
        let batch = RecordBatch::try_new(schema, columns).expect("batch");
        Step::Rows(0, ChangeBatch::inserts(batch))
    }

    #[test]
    fn every_frame_resumes_from_a_snapshot() {
        let steps = [
            rows(&[(1, 10, 1), (1, 20, 2), (2, 5, 2), (1, 7, 2)]),
            Step::Watermark(1),
            rows(&[(1, 30, 3), (2, 6, 3), (2, 1, 1)]),
            Step::Watermark(2),
            rows(&[(1, 40, 5), (2, 8, 6), (1, 2, 9)]),
            Step::Watermark(6),
            Step::Watermark(i64::MAX),
        ];
        for rows_frame in [true, false] {
            for preceding in [None, Some(1), Some(3)] {
                let frame = OverFrame {
                    rows: rows_frame,
                    preceding,
                };
                let make = || Box::new(operator(frame)) as Box<dyn StreamOperator>;
                let out = assert_resumes_anywhere(&make, &steps);
                assert_rescales_anywhere(&make, &steps, &[&[0]]);
                assert!(out.iter().filter(|l| l.starts_with("+I")).count() >= 9);
            }
        }
    }
}
