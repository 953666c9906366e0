//! Interval join on rowtime (Flink's `RowTimeIntervalJoin` / `TimeIntervalJoin`).
//!
//! Rows match when their keys are equal, `left_time - right_time` lies in `[lower, upper]` and
//! the residual condition holds. Each row is cached per key and time until the watermark shows
//! that no row of the other side can match it any more; clean-up runs on per-key event-time
//! timers exactly as Flink registers them, so rows arriving late join (or not) as they do in
//! Flink. Outer sides emit their never-matched rows padded with NULLs when they are cleaned up.
//! The output is append-only; its watermark is held back by the larger relative window size.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use arrow::array::Array;
use arrow::datatypes::SchemaRef;
use datafusion::common::ScalarValue;
use datafusion::physical_expr::PhysicalExpr;
use riffle_connectors::{ChangeBatch, RowKind};
use riffle_plan::JoinSpec;

use riffle_connectors::snapshot::{StateReader, StateWriter};

use super::aggregate::{field_types, RowsOut};
use super::join::{nulls, row_values, JoinKeys, PairCondition};
use super::{millis, Emit, StreamOperator};
use crate::keyed_snapshot::{min_time, KeyedSnapshot, KeyedSnapshotWriter};
use crate::state_codec::ScalarCodec;
use crate::task::RuntimeError;

/// Tables of the keyed snapshot.
const STATES: u8 = 0;
const TIMERS: u8 = 1;

/// Cached rows of one side by row time, each with "has been joined" flag.
type Cache = BTreeMap<i64, Vec<(Vec<ScalarValue>, bool)>>;

/// The state of one join key.
#[derive(Default)]
struct KeyState {
    caches: [Cache; 2],
    /// The registered clean-up timer of each side's cache.
    timers: [Option<i64>; 2],
}

/// The time bounds and sides of an interval join.
pub struct IntervalBounds {
    /// Rowtime column of each input.
    pub times: [usize; 2],
    /// Smallest `left_time - right_time` that matches.
    pub lower: i64,
    /// Largest `left_time - right_time` that matches.
    pub upper: i64,
}

/// Interval join operator.
pub struct IntervalJoin {
    spec: JoinSpec,
    keys: [JoinKeys; 2],
    condition: PairCondition,
    times: [usize; 2],
    /// How far a left row reaches back (`-lower`) and a right row (`upper`), as Flink's
    /// `leftRelativeSize` and `rightRelativeSize`.
    relative: [i64; 2],
    min_cleanup: i64,
    /// Rows of each side at or before this time can no longer match (operator-wide, as Flink).
    expiration: [i64; 2],
    states: HashMap<Box<[u8]>, KeyState>,
    /// Event-time timers: (time, key).
    timers: BTreeSet<(i64, Box<[u8]>)>,
    watermark: i64,
    padding: [Vec<ScalarValue>; 2],
    /// Encode each side's rows (for checkpoints).
    codecs: [ScalarCodec; 2],
    schema: SchemaRef,
}

/// Writes one side's cached rows.
fn write_cache(
    cache: &Cache,
    codec: &ScalarCodec,
    w: &mut StateWriter,
) -> Result<(), RuntimeError> {
    w.length(cache.len());
    for (time, rows) in cache {
        w.i64(*time);
        w.length(rows.len());
        for (row, joined) in rows {
            codec.write(w, row)?;
            w.bool(*joined);
        }
    }
    Ok(())
}

/// Reads one side's cached rows written by [`write_cache`].
fn read_cache(codec: &ScalarCodec, r: &mut StateReader<'_>) -> Result<Cache, RuntimeError> {
    let mut cache = Cache::new();
    for _ in 0..r.length()? {
        let time = r.i64()?;
        let n = r.length()?;
        let mut rows = Vec::with_capacity(n);
        for _ in 0..n {
            rows.push((codec.read(r)?, r.bool()?));
        }
        cache.insert(time, rows);
    }
    Ok(cache)
}

fn write_timer(w: &mut StateWriter, timer: Option<i64>) {
    w.bool(timer.is_some());
    w.i64(timer.unwrap_or(0));
}

fn read_timer(r: &mut StateReader<'_>) -> Result<Option<i64>, RuntimeError> {
    let set = r.bool()?;
    let at = r.i64()?;
    Ok(set.then_some(at))
}

impl IntervalJoin {
    /// Builds the operator; `combined` is the schema of the condition (left then right).
    pub fn new(
        spec: &JoinSpec,
        bounds: IntervalBounds,
        condition: Option<Arc<dyn PhysicalExpr>>,
        inputs: [&SchemaRef; 2],
        combined: SchemaRef,
        schema: SchemaRef,
    ) -> Result<Self, RuntimeError> {
        let relative = [bounds.lower.saturating_neg(), bounds.upper];
        Ok(Self {
            spec: spec.clone(),
            keys: [
                JoinKeys::new(&spec.left_keys, &spec.null_safe, inputs[0])?,
                JoinKeys::new(&spec.right_keys, &spec.null_safe, inputs[1])?,
            ],
            condition: PairCondition::new(condition, combined),
            times: bounds.times,
            relative,
            min_cleanup: relative[0].saturating_add(relative[1]) / 2,
            expiration: [0, 0],
            states: HashMap::new(),
            timers: BTreeSet::new(),
            watermark: i64::MIN,
            padding: [nulls(inputs[0])?, nulls(inputs[1])?],
            codecs: [
                ScalarCodec::new(&field_types(inputs[0]))?,
                ScalarCodec::new(&field_types(inputs[1]))?,
            ],
            schema,
        })
    }

    fn outer(&self, side: usize) -> bool {
        if side == 0 {
            self.spec.join_type.left_outer()
        } else {
            self.spec.join_type.right_outer()
        }
    }

    /// Flink's operator time: the watermark, but never below 0.
    fn operator_time(&self) -> i64 {
        self.watermark.max(0)
    }

    fn emit_pair(out: &mut RowsOut, side: usize, row: &[ScalarValue], other: &[ScalarValue]) {
        if side == 0 {
            out.push(RowKind::Insert, row, other);
        } else {
            out.push(RowKind::Insert, other, row);
        }
    }

    /// Registers the clean-up timer of `side`'s cache for a row at `time`.
    fn register_cleanup(&mut self, key: &[u8], time: i64, side: usize) {
        let at = time
            .saturating_add(self.relative[side])
            .saturating_add(self.min_cleanup)
            .saturating_add(1);
        self.timers.insert((at, Box::from(key)));
        if let Some(state) = self.states.get_mut(key) {
            state.timers[side] = Some(at);
        }
    }

    /// One row of side `side` at time `time` (Flink's `processElement1/2`).
    fn row(
        &mut self,
        side: usize,
        key: &[u8],
        matchable: bool,
        time: i64,
        values: Vec<ScalarValue>,
        out: &mut RowsOut,
    ) -> Result<(), RuntimeError> {
        let other = 1 - side;
        // Times of the other side this row can match.
        let lower = time.saturating_sub(self.relative[other]);
        let upper = time.saturating_add(self.relative[side]);
        let other_outer = self.outer(other);
        let mut emitted = false;
        if self.expiration[other] < upper {
            let expiration = self
                .operator_time()
                .saturating_sub(self.relative[other])
                .saturating_sub(1);
            self.expiration[other] = expiration;
            let state = self.states.entry(Box::from(key)).or_default();
            let mut expired = Vec::new();
            for (t, rows) in state.caches[other].iter_mut() {
                if matchable && *t >= lower && *t <= upper {
                    let passes = self.condition.test(
                        &values,
                        side == 0,
                        rows.iter().map(|(r, _)| r.as_slice()),
                    )?;
                    for ((r, joined), pass) in rows.iter_mut().zip(passes) {
                        if pass {
                            Self::emit_pair(out, side, &values, r);
                            emitted = true;
                            *joined = true;
                        }
                    }
                }
                if *t <= expiration {
                    expired.push(*t);
                }
            }
            for t in expired {
                if let Some(rows) = state.caches[other].remove(&t) {
                    if other_outer {
                        for (r, joined) in rows {
                            if !joined {
                                Self::emit_pair(out, other, &r, &self.padding[side]);
                            }
                        }
                    }
                }
            }
        }
        if self.operator_time() < upper {
            let state = self.states.entry(Box::from(key)).or_default();
            state.caches[side]
                .entry(time)
                .or_default()
                .push((values, emitted));
            if state.timers[side].is_none() {
                self.register_cleanup(key, time, side);
            }
        } else if !emitted && self.outer(side) {
            Self::emit_pair(out, side, &values, &self.padding[other]);
        }
        Ok(())
    }

    /// A clean-up timer of `key` fired at `at`.
    fn on_timer(&mut self, key: &[u8], at: i64, out: &mut RowsOut) {
        for side in [1, 0] {
            let expiration = self
                .operator_time()
                .saturating_sub(self.relative[side])
                .saturating_sub(1);
            let outer = self.outer(side);
            let Some(state) = self.states.get_mut(key) else {
                return;
            };
            if state.timers[side] != Some(at) {
                continue;
            }
            self.expiration[side] = expiration;
            let kept = state.caches[side].split_off(&expiration.saturating_add(1));
            let expired = std::mem::replace(&mut state.caches[side], kept);
            if outer {
                for (r, joined) in expired.into_values().flatten() {
                    if !joined {
                        Self::emit_pair(out, side, &r, &self.padding[1 - side]);
                    }
                }
            }
            match state.caches[side].keys().next().copied() {
                // Flink re-registers only for a positive earliest time.
                Some(earliest) if earliest > 0 => self.register_cleanup(key, earliest, side),
                _ => {
                    state.timers[side] = None;
                    state.caches[side].clear();
                }
            }
        }
        if let Some(state) = self.states.get(key) {
            if state.caches.iter().all(|c| c.is_empty()) && state.timers.iter().all(Option::is_none)
            {
                self.states.remove(key);
            }
        }
    }
}

impl StreamOperator for IntervalJoin {
    fn checkpoint_unsupported(&self) -> Option<String> {
        None
    }

    fn snapshot(&mut self, _checkpoint: u64) -> Result<Vec<u8>, RuntimeError> {
        let mut out = KeyedSnapshotWriter::new();
        let mut w = StateWriter::new();
        w.i64(self.watermark);
        w.i64(self.expiration[0]);
        w.i64(self.expiration[1]);
        out.global(w.finish());
        for (at, key) in &self.timers {
            out.entry(TIMERS, key, |w| {
                w.i64(*at);
                Ok(())
            })?;
        }
        for (key, state) in &self.states {
            out.entry(STATES, key, |w| {
                for side in 0..2 {
                    write_cache(&state.caches[side], &self.codecs[side], w)?;
                    write_timer(w, state.timers[side]);
                }
                Ok(())
            })?;
        }
        Ok(out.finish())
    }

    /// Merged subtasks go on from the least advanced watermark and expiration times (the
    /// expiration time only decides when a key's cache is scanned for expired rows).
    fn restore(&mut self, state: &[u8]) -> Result<(), RuntimeError> {
        let what = "an interval join";
        let snapshot = KeyedSnapshot::parse(state, what)?;
        let globals = snapshot.globals(what, |r| Ok([r.i64()?, r.i64()?, r.i64()?]))?;
        self.watermark = min_time(globals.iter().map(|g| g[0]));
        self.expiration = [
            min_time(globals.iter().map(|g| g[1])),
            min_time(globals.iter().map(|g| g[2])),
        ];
        self.timers.clear();
        let timers = &mut self.timers;
        snapshot.read_table(TIMERS, what, |key, r| {
            timers.insert((r.i64()?, Box::from(key)));
            Ok(())
        })?;
        self.states.clear();
        let (states, codecs) = (&mut self.states, &self.codecs);
        snapshot.read_table(STATES, what, |key, r| {
            let mut state = KeyState::default();
            for (side, codec) in codecs.iter().enumerate() {
                state.caches[side] = read_cache(codec, r)?;
                state.timers[side] = read_timer(r)?;
            }
            states.insert(Box::from(key), state);
            Ok(())
        })
    }

    fn keyed_snapshot(&self) -> bool {
        true
    }

    fn process(
        &mut self,
        input: usize,
        batch: ChangeBatch,
        out: &mut Vec<Emit>,
    ) -> Result<(), RuntimeError> {
        let side = input.min(1);
        let keys = self.keys[side].keys(&batch.batch)?;
        let Some(time_column) = batch.batch.columns().get(self.times[side]) else {
            return Err(RuntimeError::new("interval join time column out of range"));
        };
        let times = millis(time_column)?;
        let mut emitted = RowsOut::new(self.schema.fields().len());
        for (row, key) in keys.iter().enumerate() {
            if times.is_null(row) {
                return Err(RuntimeError::new(
                    "RowTime field should not be null, please convert it to a non-null long value.",
                ));
            }
            let values = row_values(&batch.batch, row)?;
            self.row(
                side,
                &key.bytes,
                key.matchable,
                times.value(row),
                values,
                &mut emitted,
            )?;
        }
        emitted.emit(&self.schema, out)
    }

    fn watermark(&mut self, watermark: i64, out: &mut Vec<Emit>) -> Result<(), RuntimeError> {
        self.watermark = watermark;
        let mut emitted = RowsOut::new(self.schema.fields().len());
        while let Some(first) = self.timers.first() {
            if first.0 > watermark {
                break;
            }
            let Some((at, key)) = self.timers.pop_first() else {
                break;
            };
            self.on_timer(&key, at, &mut emitted);
        }
        emitted.emit(&self.schema, out)?;
        // Output rows may be as old as the watermark minus the larger relative size.
        let delay = self.relative[0].max(self.relative[1]).max(0);
        let forwarded = if watermark == i64::MAX {
            watermark
        } else {
            watermark.saturating_sub(delay)
        };
        out.push(Emit::Watermark(forwarded));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use riffle_connectors::RowKind::Insert;
    use riffle_plan::JoinType;

    use super::super::join::tests::{batch, combined, lines, side_schema, spec};
    use super::*;

    /// `l.ts - r.ts` within [-10, 0]: a right row matches left rows up to 10 ms older.
    fn interval(join_type: JoinType) -> IntervalJoin {
        let (l, r) = (side_schema("l"), side_schema("r"));
        let bounds = IntervalBounds {
            times: [2, 2],
            lower: -10,
            upper: 0,
        };
        IntervalJoin::new(
            &spec(join_type),
            bounds,
            None,
            [&l, &r],
            combined(),
            combined(),
        )
        .unwrap()
    }

    #[test]
    fn rows_within_the_bounds_match_and_unmatched_outer_rows_come_out_on_the_watermark() {
        let mut op = interval(JoinType::Left);
        let (l, r) = (side_schema("l"), side_schema("r"));
        let mut out = Vec::new();
        op.process(
            0,
            batch(
                &l,
                &[(Insert, Some(1), "a", 100), (Insert, Some(2), "b", 100)],
            ),
            &mut out,
        )
        .unwrap();
        op.process(
            1,
            batch(
                &r,
                &[(Insert, Some(1), "x", 110), (Insert, Some(1), "y", 111)],
            ),
            &mut out,
        )
        .unwrap();
        assert_eq!(lines(&out), ["+I[1, a, 100, 1, x, 110]"]);
        out.clear();
        // Left row 2 can match right rows up to time 110; its cleanup timer is at
        // 100 + 10 + 5 + 1 = 116.
        op.watermark(115, &mut out).unwrap();
        assert_eq!(lines(&out), ["WM 105"]);
        out.clear();
        op.watermark(116, &mut out).unwrap();
        assert_eq!(lines(&out), ["+I[2, b, 100, null, null, null]", "WM 106"]);
    }

    use super::super::resume::{assert_rescales_anywhere, assert_resumes_anywhere, Step};

    #[test]
    fn interval_joins_resume_from_a_snapshot() {
        let (l, r) = (side_schema("l"), side_schema("r"));
        let steps = [
            Step::Rows(
                0,
                batch(
                    &l,
                    &[(Insert, Some(1), "a", 100), (Insert, Some(2), "b", 100)],
                ),
            ),
            Step::Rows(
                1,
                batch(
                    &r,
                    &[(Insert, Some(1), "x", 110), (Insert, Some(3), "y", 95)],
                ),
            ),
            Step::Watermark(104),
            Step::Rows(
                0,
                batch(
                    &l,
                    &[(Insert, Some(3), "c", 96), (Insert, Some(1), "d", 112)],
                ),
            ),
            Step::Rows(
                1,
                batch(
                    &r,
                    &[(Insert, Some(1), "z", 112), (Insert, Some(2), "w", 140)],
                ),
            ),
            Step::Watermark(116),
            Step::Rows(0, batch(&l, &[(Insert, Some(2), "e", 135)])),
            Step::Watermark(200),
        ];
        for join_type in [JoinType::Inner, JoinType::Left, JoinType::Full] {
            let make = || Box::new(interval(join_type)) as Box<dyn StreamOperator>;
            let out = assert_resumes_anywhere(&make, &steps);
            assert_rescales_anywhere(&make, &steps, &[&[0], &[0]]);
            assert!(out.iter().any(|l| l.starts_with("+I")), "{out:?}");
        }
    }
}
