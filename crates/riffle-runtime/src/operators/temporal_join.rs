//! Event-time temporal join (`FOR SYSTEM_TIME AS OF left.rowtime`, Flink's
//! `TemporalRowTimeJoinOperator`).
//!
//! The left (probe) rows are buffered per key until the watermark passes their time; each is
//! then joined with the version of the right (versioned) table that was valid at that time: the
//! right row with the largest time not after the left row's. Right rows are versions keyed by
//! their time (a later row at the same time replaces the earlier one); a deletion is a version
//! that matches nothing. Update-before rows of the right side are dropped, as Flink's planner
//! does for this join. Inner joins drop left rows without a valid version (or whose version
//! fails the residual condition), left joins pad them with NULLs. Like Flink, each key keeps one
//! event-time timer (its smallest pending time) that emits the due left rows and drops the
//! versions no left row can need any more. The output is append-only.
//!
//! Which right rows a left row sees in Flink depends on how its two inputs interleave: a left
//! row is joined as soon as the watermark passes it, with the right rows that arrived by then.
//! This operator makes that deterministic as if the left input were always ahead: a right row
//! is visible to a left row only when it arrived before the right input's watermark reached the
//! left row's time (so a right row arriving after that watermark, e.g. a deletion stamped with
//! an older time, does not change the result of a left row the watermark already released).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use arrow::array::Array;
use arrow::datatypes::SchemaRef;
use datafusion::common::ScalarValue;
use datafusion::physical_expr::PhysicalExpr;
use riffle_connectors::snapshot::StateWriter;
use riffle_connectors::{ChangeBatch, RowKind};
use riffle_plan::JoinSpec;

use super::aggregate::{field_types, RowsOut};
use super::join::{nulls, row_values, JoinKeys, PairCondition};
use super::{millis, Emit, StreamOperator};
use crate::keyed_snapshot::{min_time, KeyedSnapshot, KeyedSnapshotWriter};
use crate::state_codec::ScalarCodec;
use crate::task::RuntimeError;

/// The table of the keyed snapshot: probes, versions and timer per join key.
const STATES: u8 = 0;

/// A buffered left row: its time, whether its key can match at all, and its values.
struct Probe {
    time: i64,
    matchable: bool,
    values: Vec<ScalarValue>,
}

/// A version of the right table: the right input's watermark when it arrived, whether it is a
/// row (`+I`/`+U`) or a deletion, and its values.
struct Version {
    epoch: i64,
    accumulate: bool,
    values: Vec<ScalarValue>,
}

/// The versions of one time, in arrival order (a later one replaces an earlier one for the left
/// rows that see both).
type Versions = BTreeMap<i64, Vec<Version>>;

/// The version a left row at `time` joins: at the largest time not after it, the last version
/// that arrived before the right watermark reached `time`.
fn valid_version(versions: &Versions, time: i64) -> Option<&Version> {
    versions
        .range(..=time)
        .rev()
        .find_map(|(_, list)| list.iter().rev().find(|v| v.epoch < time))
}

/// Drops the versions no left row after `watermark` can see: at each time, those replaced by a
/// later one that arrived before the right watermark reached `watermark`, and every time before
/// the latest one such rows see.
fn clean_versions(versions: &mut Versions, watermark: i64) {
    for list in versions.values_mut() {
        if let Some(last) = list.iter().rposition(|v| v.epoch < watermark) {
            list.drain(..last);
        }
    }
    let keep = versions
        .range(..=watermark)
        .rev()
        .find(|(_, list)| list.iter().any(|v| v.epoch < watermark))
        .map(|(t, _)| *t);
    if let Some(keep) = keep {
        *versions = versions.split_off(&keep);
    }
}

/// The state of one join key.
#[derive(Default)]
struct KeyState {
    /// Left rows by arrival sequence.
    probes: BTreeMap<u64, Probe>,
    /// Right versions by time.
    versions: Versions,
    /// The registered event-time timer.
    timer: Option<i64>,
}

/// Event-time temporal join operator.
pub struct TemporalJoin {
    left_outer: bool,
    keys: [JoinKeys; 2],
    condition: PairCondition,
    /// Rowtime column of each input.
    times: [usize; 2],
    states: HashMap<Box<[u8]>, KeyState>,
    /// Event-time timers: (time, key).
    timers: BTreeSet<(i64, Box<[u8]>)>,
    /// Arrival sequence of the next left row.
    next_sequence: u64,
    watermark: i64,
    /// The watermark of the right input alone.
    right_watermark: i64,
    right_padding: Vec<ScalarValue>,
    /// Encode each side's rows (for checkpoints).
    codecs: [ScalarCodec; 2],
    schema: SchemaRef,
}

impl TemporalJoin {
    /// Builds the operator; `times` are the rowtime columns of the left and the right input,
    /// `combined` the schema of the condition (left then right columns).
    pub fn new(
        spec: &JoinSpec,
        times: [usize; 2],
        condition: Option<Arc<dyn PhysicalExpr>>,
        inputs: [&SchemaRef; 2],
        combined: SchemaRef,
        schema: SchemaRef,
    ) -> Result<Self, RuntimeError> {
        Ok(Self {
            left_outer: spec.join_type.left_outer(),
            keys: [
                JoinKeys::new(&spec.left_keys, &spec.null_safe, inputs[0])?,
                JoinKeys::new(&spec.right_keys, &spec.null_safe, inputs[1])?,
            ],
            condition: PairCondition::new(condition, combined),
            times,
            states: HashMap::new(),
            timers: BTreeSet::new(),
            next_sequence: 0,
            watermark: i64::MIN,
            right_watermark: i64::MIN,
            right_padding: nulls(inputs[1])?,
            codecs: [
                ScalarCodec::new(&field_types(inputs[0]))?,
                ScalarCodec::new(&field_types(inputs[1]))?,
            ],
            schema,
        })
    }

    /// Keeps the key's single timer at its smallest pending time (Flink's
    /// `registerSmallestTimer`).
    fn register_smallest(&mut self, key: &[u8], time: i64) {
        let state = self.states.entry(Box::from(key)).or_default();
        match state.timer {
            Some(at) if at <= time => {}
            previous => {
                if let Some(at) = previous {
                    self.timers.remove(&(at, Box::from(key)));
                }
                state.timer = Some(time);
                self.timers.insert((time, Box::from(key)));
            }
        }
    }

    /// The timer of `key` fired: joins the left rows due at the watermark in arrival order,
    /// then drops the versions older than the one valid at the watermark.
    fn on_timer(&mut self, key: &[u8], out: &mut RowsOut) -> Result<(), RuntimeError> {
        let watermark = self.watermark;
        let Some(state) = self.states.get_mut(key) else {
            return Ok(());
        };
        state.timer = None;
        let due: Vec<u64> = state
            .probes
            .iter()
            .filter(|(_, p)| p.time <= watermark)
            .map(|(seq, _)| *seq)
            .collect();
        for seq in due {
            let Some(probe) = state.probes.remove(&seq) else {
                continue;
            };
            let version = valid_version(&state.versions, probe.time)
                .filter(|v| v.accumulate && probe.matchable);
            let joined = match version {
                Some(v) => {
                    let passes = self.condition.test(
                        &probe.values,
                        true,
                        std::iter::once(v.values.as_slice()),
                    )?;
                    passes
                        .first()
                        .copied()
                        .unwrap_or(false)
                        .then_some(v.values.as_slice())
                }
                None => None,
            };
            match joined {
                Some(right) => out.push(RowKind::Insert, &probe.values, right),
                None if self.left_outer => {
                    out.push(RowKind::Insert, &probe.values, &self.right_padding)
                }
                None => {}
            }
        }
        clean_versions(&mut state.versions, watermark);
        let pending = state.probes.values().map(|p| p.time).min();
        let empty = state.probes.is_empty() && state.versions.is_empty();
        if let Some(at) = pending {
            self.register_smallest(key, at);
        } else if empty {
            self.states.remove(key);
        }
        Ok(())
    }
}

impl StreamOperator for TemporalJoin {
    fn checkpoint_unsupported(&self) -> Option<String> {
        None
    }

    fn snapshot(&mut self, _checkpoint: u64) -> Result<Vec<u8>, RuntimeError> {
        let mut out = KeyedSnapshotWriter::new();
        let mut w = StateWriter::new();
        w.i64(self.watermark);
        w.i64(self.right_watermark);
        w.i64(self.next_sequence as i64);
        out.global(w.finish());
        for (key, state) in &self.states {
            out.entry(STATES, key, |w| {
                w.length(state.probes.len());
                for (seq, probe) in &state.probes {
                    w.i64(*seq as i64);
                    w.i64(probe.time);
                    w.bool(probe.matchable);
                    self.codecs[0].write(w, &probe.values)?;
                }
                w.length(state.versions.len());
                for (time, list) in &state.versions {
                    w.i64(*time);
                    w.length(list.len());
                    for version in list {
                        w.i64(version.epoch);
                        w.bool(version.accumulate);
                        self.codecs[1].write(w, &version.values)?;
                    }
                }
                w.bool(state.timer.is_some());
                w.i64(state.timer.unwrap_or(0));
                Ok(())
            })?;
        }
        Ok(out.finish())
    }

    /// Merged subtasks go on from the least advanced watermarks; probe sequence numbers
    /// (which order a key's probes) go on after the largest.
    fn restore(&mut self, state: &[u8]) -> Result<(), RuntimeError> {
        let what = "a temporal join";
        let snapshot = KeyedSnapshot::parse(state, what)?;
        let globals = snapshot.globals(what, |r| Ok([r.i64()?, r.i64()?, r.i64()?]))?;
        self.watermark = min_time(globals.iter().map(|g| g[0]));
        self.right_watermark = min_time(globals.iter().map(|g| g[1]));
        self.next_sequence = globals.iter().map(|g| g[2] as u64).max().unwrap_or(0);
        self.states.clear();
        self.timers.clear();
        let (states, timers, codecs) = (&mut self.states, &mut self.timers, &self.codecs);
        snapshot.read_table(STATES, what, |key, r| {
            let key: Box<[u8]> = Box::from(key);
            let mut state = KeyState::default();
            for _ in 0..r.length()? {
                let seq = r.i64()? as u64;
                let time = r.i64()?;
                let matchable = r.bool()?;
                let values = codecs[0].read(r)?;
                state.probes.insert(
                    seq,
                    Probe {
                        time,
                        matchable,
                        values,
                    },
                );
            }
            for _ in 0..r.length()? {
                let time = r.i64()?;
                let mut list = Vec::new();
                for _ in 0..r.length()? {
                    let epoch = r.i64()?;
                    let accumulate = r.bool()?;
                    let values = codecs[1].read(r)?;
                    list.push(Version {
                        epoch,
                        accumulate,
                        values,
                    });
                }
                state.versions.insert(time, list);
            }
            let set = r.bool()?;
            let at = r.i64()?;
            if set {
                state.timer = Some(at);
                timers.insert((at, key.clone()));
            }
            states.insert(key, state);
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
        _out: &mut Vec<Emit>,
    ) -> Result<(), RuntimeError> {
        let side = input.min(1);
        let keys = self.keys[side].keys(&batch.batch)?;
        let Some(time_column) = batch.batch.columns().get(self.times[side]) else {
            return Err(RuntimeError::new("temporal join time column out of range"));
        };
        let times = millis(time_column)?;
        for (row, key) in keys.into_iter().enumerate() {
            let kind = batch.kind(row);
            // The versioned side is read as upserts: update-before rows carry nothing new.
            if side == 1 && kind == RowKind::UpdateBefore {
                continue;
            }
            if times.is_null(row) {
                return Err(RuntimeError::new(
                    "RowTime field should not be null, please convert it to a non-null long value.",
                ));
            }
            let time = times.value(row);
            let values = row_values(&batch.batch, row)?;
            let state = self.states.entry(key.bytes.clone()).or_default();
            if side == 0 {
                let seq = self.next_sequence;
                self.next_sequence += 1;
                state.probes.insert(
                    seq,
                    Probe {
                        time,
                        matchable: key.matchable,
                        values,
                    },
                );
            } else {
                state.versions.entry(time).or_default().push(Version {
                    epoch: self.right_watermark,
                    accumulate: matches!(kind, RowKind::Insert | RowKind::UpdateAfter),
                    values,
                });
            }
            self.register_smallest(&key.bytes, time);
        }
        Ok(())
    }

    fn input_watermark(&mut self, input: usize, watermark: i64) {
        if input == 1 {
            self.right_watermark = self.right_watermark.max(watermark);
        }
    }

    fn watermark(&mut self, watermark: i64, out: &mut Vec<Emit>) -> Result<(), RuntimeError> {
        self.watermark = watermark;
        let mut emitted = RowsOut::new(self.schema.fields().len());
        while let Some(first) = self.timers.first() {
            if first.0 > watermark {
                break;
            }
            let Some((_, key)) = self.timers.pop_first() else {
                break;
            };
            self.on_timer(&key, &mut emitted)?;
        }
        emitted.emit(&self.schema, out)?;
        out.push(Emit::Watermark(watermark));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use riffle_connectors::RowKind::{Delete, Insert, UpdateAfter, UpdateBefore};
    use riffle_plan::JoinType;

    use super::super::join::tests::{batch, combined, lines, side_schema, spec};
    use super::super::resume::{assert_rescales_anywhere, assert_resumes_anywhere, Step};
    use super::*;

    fn temporal(join_type: JoinType) -> TemporalJoin {
        let (l, r) = (side_schema("l"), side_schema("r"));
        TemporalJoin::new(
            &spec(join_type),
            [2, 2],
            None,
            [&l, &r],
            combined(),
            combined(),
        )
        .unwrap()
    }

    #[test]
    fn left_rows_join_the_version_valid_at_their_time_once_the_watermark_passes() {
        let mut op = temporal(JoinType::Left);
        let (l, r) = (side_schema("l"), side_schema("r"));
        let mut out = Vec::new();
        op.process(
            1,
            batch(
                &r,
                &[
                    (Insert, Some(1), "v1", 10),
                    (UpdateBefore, Some(1), "v1", 10),
                    (UpdateAfter, Some(1), "v2", 20),
                    (Delete, Some(1), "v2", 30),
                ],
            ),
            &mut out,
        )
        .unwrap();
        op.process(
            0,
            batch(
                &l,
                &[
                    (Insert, Some(1), "a", 5),
                    (Insert, Some(1), "b", 15),
                    (Insert, Some(1), "c", 20),
                    (Insert, Some(1), "d", 35),
                    (Insert, Some(2), "e", 15),
                    (Insert, None, "f", 15),
                ],
            ),
            &mut out,
        )
        .unwrap();
        assert!(out.is_empty());
        op.watermark(15, &mut out).unwrap();
        let mut first = lines(&out);
        first.sort();
        assert_eq!(
            first,
            [
                "+I[1, a, 5, null, null, null]",
                "+I[1, b, 15, 1, v1, 10]",
                "+I[2, e, 15, null, null, null]",
                "+I[null, f, 15, null, null, null]",
                "WM 15"
            ]
        );
        out.clear();
        op.watermark(40, &mut out).unwrap();
        assert_eq!(
            lines(&out),
            [
                "+I[1, c, 20, 1, v2, 20]",
                "+I[1, d, 35, null, null, null]",
                "WM 40"
            ]
        );
    }

    #[test]
    fn inner_joins_drop_rows_without_a_version_and_old_versions_are_cleaned() {
        let mut op = temporal(JoinType::Inner);
        let (l, r) = (side_schema("l"), side_schema("r"));
        let mut out = Vec::new();
        op.process(
            1,
            batch(
                &r,
                &[(Insert, Some(1), "v1", 10), (Insert, Some(1), "v2", 20)],
            ),
            &mut out,
        )
        .unwrap();
        op.process(0, batch(&l, &[(Insert, Some(1), "a", 5)]), &mut out)
            .unwrap();
        op.watermark(25, &mut out).unwrap();
        assert_eq!(lines(&out), ["WM 25"]);
        // Only the version valid at the watermark is kept: a late row after it finds it, one
        // before it finds nothing any more.
        assert_eq!(
            op.states.values().map(|s| s.versions.len()).sum::<usize>(),
            1
        );
        out.clear();
        op.process(
            0,
            batch(
                &l,
                &[
                    (Insert, Some(1), "late", 21),
                    (Insert, Some(1), "older", 12),
                ],
            ),
            &mut out,
        )
        .unwrap();
        op.watermark(26, &mut out).unwrap();
        assert_eq!(lines(&out), ["+I[1, late, 21, 1, v2, 20]", "WM 26"]);
    }

    #[test]
    fn a_right_row_arriving_after_the_right_watermark_passed_a_left_row_does_not_change_it() {
        let mut op = temporal(JoinType::Left);
        let (l, r) = (side_schema("l"), side_schema("r"));
        let mut out = Vec::new();
        op.process(0, batch(&l, &[(Insert, Some(1), "a", 15)]), &mut out)
            .unwrap();
        op.process(1, batch(&r, &[(Insert, Some(1), "v1", 10)]), &mut out)
            .unwrap();
        // The right input reaches 20 before the deletion of the version at 10 arrives: the
        // left row at 15 is released with v1, whichever input the operator hears from first.
        op.input_watermark(1, 20);
        op.process(1, batch(&r, &[(Delete, Some(1), "v1", 10)]), &mut out)
            .unwrap();
        op.process(0, batch(&l, &[(Insert, Some(1), "b", 25)]), &mut out)
            .unwrap();
        op.input_watermark(0, 30);
        op.watermark(20, &mut out).unwrap();
        assert_eq!(lines(&out), ["+I[1, a, 15, 1, v1, 10]", "WM 20"]);
        out.clear();
        op.input_watermark(1, 30);
        op.watermark(30, &mut out).unwrap();
        assert_eq!(lines(&out), ["+I[1, b, 25, null, null, null]", "WM 30"]);
    }

    #[test]
    fn temporal_joins_resume_from_a_snapshot() {
        let (l, r) = (side_schema("l"), side_schema("r"));
        let steps = [
            Step::Rows(
                1,
                batch(
                    &r,
                    &[(Insert, Some(1), "x", 100), (Insert, Some(2), "y", 90)],
                ),
            ),
            Step::Rows(
                0,
                batch(
                    &l,
                    &[(Insert, Some(1), "a", 105), (Insert, Some(2), "b", 80)],
                ),
            ),
            Step::InputWatermark(1, 104),
            Step::Watermark(104),
            Step::Rows(
                1,
                batch(
                    &r,
                    &[
                        (UpdateBefore, Some(1), "x", 100),
                        (UpdateAfter, Some(1), "z", 110),
                        (Delete, Some(2), "y", 120),
                    ],
                ),
            ),
            Step::Rows(
                0,
                batch(
                    &l,
                    &[(Insert, Some(1), "c", 112), (Insert, Some(2), "d", 125)],
                ),
            ),
            Step::InputWatermark(1, 121),
            Step::Watermark(110),
            Step::Rows(0, batch(&l, &[(Insert, Some(2), "e", 119)])),
            Step::Rows(1, batch(&r, &[(Insert, Some(2), "late", 105)])),
            Step::InputWatermark(1, 200),
            Step::Watermark(200),
        ];
        for join_type in [JoinType::Inner, JoinType::Left] {
            let make = || Box::new(temporal(join_type)) as Box<dyn StreamOperator>;
            let out = assert_resumes_anywhere(&make, &steps);
            assert_rescales_anywhere(&make, &steps, &[&[0], &[0]]);
            assert!(out.iter().any(|l| l.starts_with("+I")), "{out:?}");
        }
    }
}
