//! `MATCH_RECOGNIZE` (Flink's `CepOperator` on event time): rows wait per partition until the
//! watermark passes their time (rows at or behind the watermark on arrival are late and
//! dropped), then run through the pattern's automaton ([`super::match_nfa`]) in time order, in
//! arrival order within a time. Before the rows of each time, and at each watermark, partial
//! matches older than `WITHIN` are dropped. Every released match emits the partition columns
//! and the measures.

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use arrow::array::{Array, ArrayRef};
use arrow::datatypes::{DataType, SchemaRef};
use arrow::record_batch::{RecordBatch, RecordBatchOptions};
use arrow::row::OwnedRow;
use datafusion::common::ScalarValue;
use datafusion::physical_expr::PhysicalExpr;
use riffle_connectors::snapshot::{StateReader, StateWriter};
use riffle_connectors::{ChangeBatch, RowKind};
use riffle_plan::match_recognize::{MatchExpr, MatchSpec, Primitive};
use riffle_plan::{FlinkSession, SortKey};

use super::aggregate::{field_types, key_values, RowsOut};
use super::keyed::{read_timers, write_timers, KeyedState};
use super::match_nfa::{Conditions, EventId, Found, Matcher, Nfa, PartialMatch, Skip};
use super::{evaluate, millis, runtime_schema, Emit, StreamOperator};
use crate::accumulator::Accumulator;
use crate::keyed_snapshot::{min_time, KeyedSnapshot, KeyedSnapshotWriter};
use crate::state_codec::ScalarCodec;
use crate::task::RuntimeError;

/// Tables of the keyed snapshot.
const PARTITIONS: u8 = 0;
const TIMERS: u8 = 1;

/// A `MATCH_RECOGNIZE` or `DEFINE` expression, compiled over its primitives.
struct Compiled {
    primitives: Vec<Primitive>,
    schema: SchemaRef,
    expr: Arc<dyn PhysicalExpr>,
}

impl Compiled {
    fn new(m: &MatchExpr, session: &FlinkSession) -> Result<Self, RuntimeError> {
        let schema = runtime_schema(&m.fields)?;
        let expr = session
            .physical_expr(&m.sql, &schema)
            .map_err(|e| RuntimeError::new(format!("cannot compile `{}`: {e}", m.sql)))?;
        Ok(Self {
            primitives: m.primitives.clone(),
            schema,
            expr,
        })
    }

    /// The value over primitive values `values`.
    fn value(&self, values: Vec<ScalarValue>) -> Result<ScalarValue, RuntimeError> {
        let mut columns: Vec<ArrayRef> = Vec::with_capacity(values.len());
        for (v, field) in values.into_iter().zip(self.schema.fields()) {
            let v = if v.is_null() {
                ScalarValue::try_from(field.data_type())?
            } else {
                v
            };
            let array = v.to_array()?;
            columns.push(super::of_field_type(array, field)?);
        }
        let options = RecordBatchOptions::new().with_row_count(Some(1));
        let batch = RecordBatch::try_new_with_options(self.schema.clone(), columns, &options)?;
        let array = evaluate(&self.expr, &batch)?;
        Ok(ScalarValue::try_from_array(array.as_ref(), 0)?)
    }
}

/// One partition: rows waiting for the watermark, the rows pending matches hold, and the
/// automaton's state.
#[derive(Clone)]
struct Partition {
    waiting: BTreeMap<i64, Vec<Vec<ScalarValue>>>,
    rows: BTreeMap<EventId, Vec<ScalarValue>>,
    matcher: Matcher,
    next_row: u64,
}

/// The rows and expressions conditions and measures read.
struct Context<'a> {
    rows: &'a BTreeMap<EventId, Vec<ScalarValue>>,
    row_types: &'a [DataType],
}

impl Context<'_> {
    /// The rows of `variable` (`None`: all), with `current` counted as `defined`'s last.
    fn rows_of(
        &self,
        variable: Option<usize>,
        events: &[(usize, EventId)],
        current: Option<(usize, EventId)>,
    ) -> Vec<&[ScalarValue]> {
        let in_scope = |v: usize| variable.is_none_or(|want| want == v);
        events
            .iter()
            .copied()
            .chain(current)
            .filter(|(v, _)| in_scope(*v))
            .filter_map(|(_, e)| self.rows.get(&e).map(Vec::as_slice))
            .collect()
    }

    /// The values of `compiled`'s primitives for a match that took `events` (plus `current`).
    fn primitives(
        &self,
        compiled: &Compiled,
        events: &[(usize, EventId)],
        current: Option<(usize, EventId)>,
        emitted_at: i64,
    ) -> Result<Vec<ScalarValue>, RuntimeError> {
        let mut out = Vec::with_capacity(compiled.primitives.len());
        for (p, field) in compiled.primitives.iter().zip(compiled.schema.fields()) {
            out.push(match p {
                Primitive::Navigation {
                    variable,
                    column,
                    from_first,
                    offset,
                } => {
                    let rows = self.rows_of(*variable, events, current);
                    let at = if *from_first {
                        Some(*offset)
                    } else {
                        rows.len().checked_sub(offset + 1)
                    };
                    at.and_then(|i| rows.get(i))
                        .and_then(|r| r.get(*column).cloned())
                        .unwrap_or(ScalarValue::Null)
                }
                Primitive::Aggregate {
                    variable,
                    function,
                    column,
                } => {
                    let arg_type = column.and_then(|c| self.row_types.get(c));
                    let mut acc = Accumulator::new(*function, false, arg_type);
                    for row in self.rows_of(*variable, events, current) {
                        let arg = match column.and_then(|c| row.get(c)) {
                            Some(v) => Some(v.to_array()?),
                            None => None,
                        };
                        acc.update(arg.as_ref(), 0, true)?;
                    }
                    acc.value(field.data_type())?
                }
                Primitive::MatchRowtime => match field.data_type() {
                    DataType::Timestamp(_, tz) => {
                        ScalarValue::TimestampMillisecond(Some(emitted_at), tz.clone())
                    }
                    _ => ScalarValue::Null,
                },
            });
        }
        Ok(out)
    }
}

/// Evaluates `DEFINE` conditions for the automaton.
struct Defines<'a> {
    context: Context<'a>,
    defines: &'a [Option<Compiled>],
}

impl Conditions for Defines<'_> {
    fn holds(
        &mut self,
        variable: usize,
        events: &[(usize, EventId)],
        row: EventId,
    ) -> Result<bool, RuntimeError> {
        let Some(Some(define)) = self.defines.get(variable) else {
            return Ok(true);
        };
        let values = self
            .context
            .primitives(define, events, Some((variable, row)), row.0)?;
        Ok(matches!(
            define.value(values)?,
            ScalarValue::Boolean(Some(true))
        ))
    }
}

/// A `MATCH_RECOGNIZE` subtask.
pub(super) struct MatchRecognize {
    spec: MatchSpec,
    nfa: Nfa,
    skip: Skip,
    /// Aggregate arguments appended to every row.
    row_exprs: Vec<Arc<dyn PhysicalExpr>>,
    row_types: Vec<DataType>,
    defines: Vec<Option<Compiled>>,
    measures: Vec<Compiled>,
    partitions: KeyedState<Partition>,
    /// Partitions with rows waiting, by time.
    timers: BTreeMap<i64, Vec<OwnedRow>>,
    watermark: i64,
    row_codec: ScalarCodec,
    schema: SchemaRef,
}

impl MatchRecognize {
    /// Builds the operator over `input`, emitting `schema`.
    pub(super) fn new(
        spec: &MatchSpec,
        input: &SchemaRef,
        schema: SchemaRef,
        session: &FlinkSession,
    ) -> Result<Self, RuntimeError> {
        let mut row_types = field_types(input);
        let mut row_exprs = Vec::new();
        for sql in &spec.row_columns {
            let expr = session
                .physical_expr(sql, input)
                .map_err(|e| RuntimeError::new(format!("cannot compile `{sql}`: {e}")))?;
            row_types.push(expr.data_type(input)?);
            row_exprs.push(expr);
        }
        let defines = spec
            .defines
            .iter()
            .map(|d| d.as_ref().map(|d| Compiled::new(d, session)).transpose())
            .collect::<Result<_, _>>()?;
        let measures = spec
            .measures
            .iter()
            .map(|m| Compiled::new(m, session))
            .collect::<Result<_, _>>()?;
        Ok(Self {
            nfa: Nfa::compile(&spec.pattern),
            skip: Skip::new(&spec.skip, &spec.pattern)?,
            spec: spec.clone(),
            row_exprs,
            defines,
            measures,
            partitions: KeyedState::new(&spec.partition, &field_types(input))?,
            timers: BTreeMap::new(),
            watermark: i64::MIN,
            row_codec: ScalarCodec::new(&row_types)?,
            row_types,
            schema,
        })
    }

    /// An empty partition waiting at the automaton's start.
    fn fresh(nfa: &Nfa) -> Partition {
        Partition {
            waiting: BTreeMap::new(),
            rows: BTreeMap::new(),
            matcher: Matcher::new(nfa),
            next_row: 0,
        }
    }

    /// Runs the rows of partition `key` up to the watermark through the automaton.
    fn fire(&mut self, key: &OwnedRow, out: &mut RowsOut) -> Result<(), RuntimeError> {
        let watermark = self.watermark;
        let Some(partition) = self.partitions.get_mut(key) else {
            return Ok(());
        };
        let Partition {
            waiting,
            rows,
            matcher,
            next_row,
        } = partition;
        let mut found: Vec<(Found, i64)> = Vec::new();
        while let Some(entry) = waiting.first_entry() {
            let time = *entry.key();
            if time > watermark {
                break;
            }
            let mut due = entry.remove();
            sort_rows(&mut due, &self.spec.order);
            for f in matcher.advance_time(time, self.spec.within, self.skip)? {
                found.push((f, time));
            }
            for values in due {
                let id = (time, *next_row);
                *next_row += 1;
                rows.insert(id, values);
                let mut defines = Defines {
                    context: Context {
                        rows,
                        row_types: &self.row_types,
                    },
                    defines: &self.defines,
                };
                for f in matcher.process(&self.nfa, id, self.skip, &mut defines)? {
                    found.push((f, time));
                }
                // Emit before the rows the match holds may be dropped.
                emit(
                    &self.spec,
                    &self.measures,
                    &self.row_types,
                    rows,
                    &found,
                    out,
                )?;
                found.clear();
                collect_rows(rows, matcher);
            }
        }
        for f in matcher.advance_time(watermark, self.spec.within, self.skip)? {
            found.push((f, watermark));
        }
        emit(
            &self.spec,
            &self.measures,
            &self.row_types,
            rows,
            &found,
            out,
        )?;
        collect_rows(rows, matcher);
        let idle = waiting.is_empty() && matcher.is_idle();
        if idle {
            self.partitions.remove(key);
        }
        Ok(())
    }
}

/// Orders rows of one time by the further `ORDER BY` keys (a stable sort: ties keep their
/// arrival order).
fn sort_rows(rows: &mut [Vec<ScalarValue>], order: &[SortKey]) {
    if order.is_empty() {
        return;
    }
    rows.sort_by(|a, b| {
        for k in order {
            let (x, y) = (a.get(k.column), b.get(k.column));
            let (x_null, y_null) = (x.is_none_or(|v| v.is_null()), y.is_none_or(|v| v.is_null()));
            let o = match (x_null, y_null) {
                (true, true) => Ordering::Equal,
                (true, false) if k.nulls_first => Ordering::Less,
                (true, false) => Ordering::Greater,
                (false, true) if k.nulls_first => Ordering::Greater,
                (false, true) => Ordering::Less,
                (false, false) => {
                    let o = x.partial_cmp(&y).unwrap_or(Ordering::Equal);
                    if k.ascending {
                        o
                    } else {
                        o.reverse()
                    }
                }
            };
            if o != Ordering::Equal {
                return o;
            }
        }
        Ordering::Equal
    });
}

/// Drops the rows no pending match holds.
fn collect_rows(rows: &mut BTreeMap<EventId, Vec<ScalarValue>>, matcher: &Matcher) {
    let held: HashSet<EventId> = matcher.referenced().collect();
    rows.retain(|id, _| held.contains(id));
}

/// Appends one output row per match: the partition columns, then the measures.
fn emit(
    spec: &MatchSpec,
    measures: &[Compiled],
    row_types: &[DataType],
    rows: &BTreeMap<EventId, Vec<ScalarValue>>,
    found: &[(Found, i64)],
    out: &mut RowsOut,
) -> Result<(), RuntimeError> {
    let context = Context { rows, row_types };
    for (events, emitted_at) in found {
        let Some(first) = events.first().and_then(|(_, e)| rows.get(e)) else {
            continue;
        };
        let key: Vec<ScalarValue> = spec
            .partition
            .iter()
            .map(|c| first.get(*c).cloned().unwrap_or(ScalarValue::Null))
            .collect();
        let mut values = Vec::with_capacity(measures.len());
        for m in measures {
            let primitives = context.primitives(m, events, None, *emitted_at)?;
            values.push(m.value(primitives)?);
        }
        out.push(RowKind::Insert, &key, &values);
    }
    Ok(())
}

impl StreamOperator for MatchRecognize {
    fn process(
        &mut self,
        _input: usize,
        batch: ChangeBatch,
        _out: &mut Vec<Emit>,
    ) -> Result<(), RuntimeError> {
        let batch = batch.batch;
        let keys = self.partitions.keys(&batch)?;
        let Some(time_column) = batch.columns().get(self.spec.time) else {
            return Err(RuntimeError::new(
                "MATCH_RECOGNIZE time column out of range",
            ));
        };
        let times = millis(time_column)?;
        let mut extra: Vec<ArrayRef> = Vec::with_capacity(self.row_exprs.len());
        for e in &self.row_exprs {
            extra.push(evaluate(e, &batch)?);
        }
        let all: Vec<usize> = (0..batch.num_columns()).collect();
        for row in 0..batch.num_rows() {
            if times.is_null(row) || times.value(row) <= self.watermark {
                continue;
            }
            let ts = times.value(row);
            let mut values = key_values(&batch, &all, row)?;
            for column in &extra {
                values.push(ScalarValue::try_from_array(column.as_ref(), row)?);
            }
            let key = keys.row(row).owned();
            // Only a new partition builds its automaton start; a known one is not rebuilt per row.
            let nfa = &self.nfa;
            let partition = self
                .partitions
                .get_or_insert_with(&key, || Self::fresh(nfa));
            let waiting = partition.waiting.entry(ts).or_default();
            if waiting.is_empty() {
                self.timers.entry(ts).or_default().push(key);
            }
            waiting.push(values);
        }
        Ok(())
    }

    fn watermark(&mut self, watermark: i64, out: &mut Vec<Emit>) -> Result<(), RuntimeError> {
        self.watermark = watermark;
        let mut due: Vec<OwnedRow> = Vec::new();
        while let Some(entry) = self.timers.first_entry() {
            if *entry.key() > watermark {
                break;
            }
            due.extend(entry.remove());
        }
        if self.spec.within.is_some() {
            // Partial matches time out even in partitions without new rows.
            due.extend(self.partitions.keys_where(|p| !p.matcher.is_idle()));
        }
        let mut seen = HashSet::new();
        due.retain(|k| seen.insert(k.clone()));
        let mut rows = RowsOut::new(self.schema.fields().len());
        for key in &due {
            self.fire(key, &mut rows)?;
        }
        rows.emit(&self.schema, out)?;
        out.push(Emit::Watermark(watermark));
        Ok(())
    }

    fn checkpoint_unsupported(&self) -> Option<String> {
        None
    }

    fn snapshot(&mut self, _checkpoint: u64) -> Result<Vec<u8>, RuntimeError> {
        let mut out = KeyedSnapshotWriter::new();
        let mut w = StateWriter::new();
        w.i64(self.watermark);
        out.global(w.finish());
        write_timers(&mut out, TIMERS, &self.timers)?;
        let codec = &self.row_codec;
        self.partitions
            .write(&mut out, PARTITIONS, |p, w| write_partition(codec, p, w))?;
        Ok(out.finish())
    }

    fn restore(&mut self, state: &[u8]) -> Result<(), RuntimeError> {
        let what = "a MATCH_RECOGNIZE";
        let snapshot = KeyedSnapshot::parse(state, what)?;
        self.watermark = min_time(snapshot.globals(what, |r| Ok(r.i64()?))?);
        self.timers = read_timers(&snapshot, TIMERS, what, |b| self.partitions.key_of(b))?;
        let codec = &self.row_codec;
        let template = Self::fresh(&self.nfa);
        self.partitions.read(&snapshot, PARTITIONS, what, |r| {
            read_partition(codec, template.clone(), r)
        })
    }

    fn keyed_snapshot(&self) -> bool {
        true
    }
}

fn write_event(w: &mut StateWriter, (time, id): EventId) {
    w.i64(time);
    w.u64(id);
}

fn read_event(r: &mut StateReader<'_>) -> Result<EventId, RuntimeError> {
    Ok((r.i64()?, r.u64()?))
}

fn write_matches(w: &mut StateWriter, matches: &[PartialMatch]) {
    w.length(matches.len());
    for m in matches {
        w.length(m.state);
        w.u64(m.seq);
        w.bool(m.start.is_some());
        if let Some(s) = m.start {
            write_event(w, s);
        }
        w.length(m.events.len());
        for (v, e) in &m.events {
            w.length(*v);
            write_event(w, *e);
        }
    }
}

fn read_matches(r: &mut StateReader<'_>) -> Result<Vec<PartialMatch>, RuntimeError> {
    let mut out = Vec::new();
    for _ in 0..r.length()? {
        let state = r.length()?;
        let seq = r.u64()?;
        let start = if r.bool()? {
            Some(read_event(r)?)
        } else {
            None
        };
        let mut events = Vec::new();
        for _ in 0..r.length()? {
            let v = r.length()?;
            events.push((v, read_event(r)?));
        }
        out.push(PartialMatch {
            state,
            events,
            start,
            seq,
        });
    }
    Ok(out)
}

fn write_partition(
    codec: &ScalarCodec,
    p: &Partition,
    w: &mut StateWriter,
) -> Result<(), RuntimeError> {
    w.length(p.waiting.len());
    for (time, rows) in &p.waiting {
        w.i64(*time);
        w.length(rows.len());
        for row in rows {
            codec.write(w, row)?;
        }
    }
    w.length(p.rows.len());
    for (id, row) in &p.rows {
        write_event(w, *id);
        codec.write(w, row)?;
    }
    write_matches(w, &p.matcher.partials);
    write_matches(w, &p.matcher.completed);
    w.u64(p.matcher.next_seq);
    w.u64(p.next_row);
    Ok(())
}

fn read_partition(
    codec: &ScalarCodec,
    mut p: Partition,
    r: &mut StateReader<'_>,
) -> Result<Partition, RuntimeError> {
    for _ in 0..r.length()? {
        let time = r.i64()?;
        let mut rows = Vec::new();
        for _ in 0..r.length()? {
            rows.push(codec.read(r)?);
        }
        p.waiting.insert(time, rows);
    }
    for _ in 0..r.length()? {
        let id = read_event(r)?;
        p.rows.insert(id, codec.read(r)?);
    }
    p.matcher.partials = read_matches(r)?;
    p.matcher.completed = read_matches(r)?;
    p.matcher.next_seq = r.u64()?;
    p.next_row = r.u64()?;
    Ok(p)
}

#[cfg(test)]
mod tests {
    use arrow::array::{Int32Array, TimestampMillisecondArray};
    use arrow::datatypes::{Field as ArrowField, Schema, TimeUnit};
    use riffle_plan::match_recognize::{AfterMatch, PatternVariable};
    use riffle_plan::{AggregateFunction, Field};

    use super::super::resume::{assert_rescales_anywhere, assert_resumes_anywhere, Step};
    use super::*;

    fn ts_type() -> DataType {
        DataType::Timestamp(TimeUnit::Millisecond, None)
    }

    /// Input `(k INT, v INT, ts TIMESTAMP(3))`.
    fn input() -> SchemaRef {
        Arc::new(Schema::new(vec![
            ArrowField::new("k", DataType::Int32, true),
            ArrowField::new("v", DataType::Int32, true),
            ArrowField::new("ts", ts_type(), true),
        ]))
    }

    /// `sql` over one primitive of type `t`, or two.
    fn expr(sql: &str, primitives: Vec<(Primitive, DataType)>) -> MatchExpr {
        let fields = primitives
            .iter()
            .enumerate()
            .map(|(i, (_, t))| Field::from_arrow(format!("__p{i}"), t, true))
            .collect();
        MatchExpr {
            sql: sql.into(),
            primitives: primitives.into_iter().map(|(p, _)| p).collect(),
            fields,
        }
    }

    fn last(variable: usize, column: usize, offset: usize) -> Primitive {
        Primitive::Navigation {
            variable: Some(variable),
            column,
            from_first: false,
            offset,
        }
    }

    /// `PARTITION BY k ORDER BY ts MEASURES A.ts, COUNT(B.*), C.v
    /// PATTERN (A B+? C) DEFINE A AS A.v < 10, B AS B.v >= 10, C AS C.v < LAST(B.v)`.
    fn operator() -> Box<dyn StreamOperator> {
        let var = |name: &str, min, max, greedy| PatternVariable {
            name: name.into(),
            min,
            max,
            greedy,
        };
        let spec = MatchSpec {
            partition: vec![0],
            time: 2,
            order: Vec::new(),
            pattern: vec![
                var("A", 1, Some(1), true),
                var("B", 1, None, false),
                var("C", 1, Some(1), true),
            ],
            skip: AfterMatch::PastLastRow,
            within: None,
            row_columns: Vec::new(),
            defines: vec![
                Some(expr("__p0 < 10", vec![(last(0, 1, 0), DataType::Int32)])),
                Some(expr("__p0 >= 10", vec![(last(1, 1, 0), DataType::Int32)])),
                Some(expr(
                    "__p0 < __p1",
                    vec![
                        (last(2, 1, 0), DataType::Int32),
                        (last(1, 1, 0), DataType::Int32),
                    ],
                )),
            ],
            measures: vec![
                expr("__p0", vec![(last(0, 2, 0), ts_type())]),
                expr(
                    "__p0",
                    vec![(
                        Primitive::Aggregate {
                            variable: Some(1),
                            function: AggregateFunction::CountStar,
                            column: None,
                        },
                        DataType::Int64,
                    )],
                ),
                expr("__p0", vec![(last(2, 1, 0), DataType::Int32)]),
            ],
        };
        let output = Arc::new(Schema::new(vec![
            ArrowField::new("k", DataType::Int32, true),
            ArrowField::new("a_ts", ts_type(), true),
            ArrowField::new("nb", DataType::Int64, true),
            ArrowField::new("c_v", DataType::Int32, true),
        ]));
        Box::new(
            MatchRecognize::new(&spec, &input(), output, &FlinkSession::new()).expect("operator"),
        )
    }

    fn rows(rows: &[(i32, i32, i64)]) -> Step {
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
        let batch = RecordBatch::try_new(input(), columns).expect("batch");
        Step::Rows(0, ChangeBatch::inserts(batch))
    }

    fn steps() -> Vec<Step> {
        vec![
            rows(&[(1, 5, 10), (2, 1, 10), (1, 20, 30), (1, 12, 20)]),
            Step::Watermark(20),
            rows(&[(2, 15, 20), (1, 30, 40), (1, 99, 5), (2, 16, 30)]),
            Step::Watermark(35),
            rows(&[(1, 3, 50), (2, 2, 40), (1, 40, 25)]),
            Step::Watermark(45),
            rows(&[(1, 8, 60), (1, 11, 70), (1, 4, 80)]),
            Step::Watermark(i64::MAX),
        ]
    }

    #[test]
    fn matches_follow_event_time_per_partition_and_late_rows_are_dropped() {
        let out = assert_resumes_anywhere(&operator, &steps());
        // k=1: 5@10, 12@20, 20@30, 30@40, 3@50 (99@5 and 40@25 are late): A=5, B=12,20,30,
        // C=3. Then 8@60, 11@70, 4@80: A=8, B=11, C=4. k=2: 1@10, 16@30, 2@40 (15@20 came
        // after the watermark 20).
        let mut matches: Vec<&String> = out.iter().filter(|l| l.starts_with("+I")).collect();
        matches.sort();
        assert_eq!(
            matches,
            ["+I[1, 10, 3, 3]", "+I[1, 60, 1, 4]", "+I[2, 10, 1, 2]"],
            "{out:?}"
        );
    }

    #[test]
    fn a_match_recognize_rescales_by_partition() {
        assert_rescales_anywhere(&operator, &steps(), &[&[0]]);
    }
}
