//! Window join (Flink's `WindowJoinOperator`): rows of two window TVF outputs are buffered per
//! window and join key; when the watermark reaches `window_end - 1` the window's rows are
//! joined (inner, outer, semi or anti) and dropped. Rows of windows that already fired are late
//! and dropped.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow::array::Array;
use arrow::datatypes::SchemaRef;
use datafusion::common::{HashMap as FastMap, ScalarValue};
use datafusion::physical_expr::PhysicalExpr;
use riffle_connectors::{ChangeBatch, RowKind};
use riffle_plan::{JoinSpec, JoinType};

use riffle_connectors::snapshot::StateWriter;

use super::aggregate::{field_types, RowsOut};
use super::join::{nulls, row_values, JoinKeys, PairCondition};
use super::{millis, Emit, StreamOperator};
use crate::keyed_snapshot::{min_time, KeyedSnapshot, KeyedSnapshotWriter};
use crate::state_codec::ScalarCodec;
use crate::task::RuntimeError;

/// The table of the keyed snapshot: both sides' rows per window and key.
const WINDOWS: u8 = 0;

/// Row pairs whose join condition one evaluation tests, at most (unless one left row has
/// more candidates).
const PAIRS_PER_TEST: usize = 8192;

/// The buffered rows of one window and key: per side, the rows and whether their key can match.
type Buffered = [Vec<(Vec<ScalarValue>, bool)>; 2];

/// Window join operator.
pub struct WindowJoin {
    join_type: JoinType,
    keys: [JoinKeys; 2],
    condition: PairCondition,
    /// `window_end` column of each input.
    window_end: [usize; 2],
    windows: BTreeMap<i64, FastMap<Box<[u8]>, Buffered>>,
    watermark: i64,
    padding: [Vec<ScalarValue>; 2],
    /// Encode each side's rows (for checkpoints).
    codecs: [ScalarCodec; 2],
    schema: SchemaRef,
}

impl WindowJoin {
    /// Builds the operator; `combined` is the schema of the condition (left then right).
    pub fn new(
        spec: &JoinSpec,
        window_end: [usize; 2],
        condition: Option<Arc<dyn PhysicalExpr>>,
        inputs: [&SchemaRef; 2],
        combined: SchemaRef,
        schema: SchemaRef,
    ) -> Result<Self, RuntimeError> {
        Ok(Self {
            join_type: spec.join_type,
            keys: [
                JoinKeys::new(&spec.left_keys, &spec.null_safe, inputs[0])?,
                JoinKeys::new(&spec.right_keys, &spec.null_safe, inputs[1])?,
            ],
            condition: PairCondition::new(condition, combined),
            window_end,
            windows: BTreeMap::new(),
            watermark: i64::MIN,
            padding: [nulls(inputs[0])?, nulls(inputs[1])?],
            codecs: [
                ScalarCodec::new(&field_types(inputs[0]))?,
                ScalarCodec::new(&field_types(inputs[1]))?,
            ],
            schema,
        })
    }

    /// Joins the rows of one window and key, testing the condition on many pairs at once.
    fn join(&self, rows: &Buffered, out: &mut RowsOut) -> Result<(), RuntimeError> {
        let [lefts, rights] = rows;
        let mut right_matched = vec![false; rights.len()];
        let matchable_rights: Vec<usize> = (0..rights.len()).filter(|i| rights[*i].1).collect();
        // Lefts per condition evaluation: about PAIRS_PER_TEST pairs, at least one left.
        let block = (PAIRS_PER_TEST / matchable_rights.len().max(1)).max(1);
        for lefts in lefts.chunks(block) {
            let pairs: Vec<(&[ScalarValue], &[ScalarValue])> = lefts
                .iter()
                .filter(|(_, matchable)| *matchable)
                .flat_map(|(left, _)| {
                    matchable_rights
                        .iter()
                        .map(|i| (left.as_slice(), rights[*i].0.as_slice()))
                })
                .collect();
            let mut passes = self.condition.test_pairs(&pairs)?.into_iter();
            for (left, left_matchable) in lefts {
                let mut matched = false;
                if *left_matchable {
                    for i in &matchable_rights {
                        if !passes.next().unwrap_or(false) {
                            continue;
                        }
                        matched = true;
                        right_matched[*i] = true;
                        if !self.join_type.left_only() {
                            out.push(RowKind::Insert, left, &rights[*i].0);
                        }
                    }
                }
                match self.join_type {
                    JoinType::Semi if matched => out.push(RowKind::Insert, left, &[]),
                    JoinType::Anti if !matched => out.push(RowKind::Insert, left, &[]),
                    JoinType::Left | JoinType::Full if !matched => {
                        out.push(RowKind::Insert, left, &self.padding[1])
                    }
                    _ => {}
                }
            }
        }
        if self.join_type.right_outer() {
            for ((right, _), matched) in rights.iter().zip(right_matched) {
                if !matched {
                    out.push(RowKind::Insert, &self.padding[0], right);
                }
            }
        }
        Ok(())
    }
}

impl StreamOperator for WindowJoin {
    fn checkpoint_unsupported(&self) -> Option<String> {
        None
    }

    fn snapshot(&mut self, _checkpoint: u64) -> Result<Vec<u8>, RuntimeError> {
        let mut out = KeyedSnapshotWriter::new();
        let mut w = StateWriter::new();
        w.i64(self.watermark);
        out.global(w.finish());
        for (end, keys) in &self.windows {
            for (key, sides) in keys {
                out.entry(WINDOWS, key, |w| {
                    w.i64(*end);
                    for (rows, codec) in sides.iter().zip(&self.codecs) {
                        w.length(rows.len());
                        for (row, matchable) in rows {
                            codec.write(w, row)?;
                            w.bool(*matchable);
                        }
                    }
                    Ok(())
                })?;
            }
        }
        Ok(out.finish())
    }

    fn restore(&mut self, state: &[u8]) -> Result<(), RuntimeError> {
        let what = "a window join";
        let snapshot = KeyedSnapshot::parse(state, what)?;
        self.watermark = min_time(snapshot.globals(what, |r| Ok(r.i64()?))?);
        self.windows.clear();
        let (windows, codecs) = (&mut self.windows, &self.codecs);
        snapshot.read_table(WINDOWS, what, |key, r| {
            let end = r.i64()?;
            let mut sides: Buffered = [Vec::new(), Vec::new()];
            for (rows, codec) in sides.iter_mut().zip(codecs) {
                for _ in 0..r.length()? {
                    rows.push((codec.read(r)?, r.bool()?));
                }
            }
            windows
                .entry(end)
                .or_default()
                .insert(Box::from(key), sides);
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
        let Some(end_column) = batch.batch.columns().get(self.window_end[side]) else {
            return Err(RuntimeError::new("window_end column out of range"));
        };
        let ends = millis(end_column)?;
        for (row, key) in keys.into_iter().enumerate() {
            if ends.is_null(row) {
                continue;
            }
            let end = ends.value(row);
            if end.saturating_sub(1) <= self.watermark {
                continue; // late: the window already fired
            }
            let values = row_values(&batch.batch, row)?;
            self.windows
                .entry(end)
                .or_default()
                .entry(key.bytes)
                .or_default()[side]
                .push((values, key.matchable));
        }
        Ok(())
    }

    fn watermark(&mut self, watermark: i64, out: &mut Vec<Emit>) -> Result<(), RuntimeError> {
        self.watermark = watermark;
        let mut rows = RowsOut::new(self.schema.fields().len());
        while let Some(entry) = self.windows.first_entry() {
            if entry.key().saturating_sub(1) > watermark {
                break;
            }
            for buffered in entry.remove().values() {
                self.join(buffered, &mut rows)?;
            }
        }
        rows.emit(&self.schema, out)?;
        out.push(Emit::Watermark(watermark));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use riffle_connectors::RowKind::Insert;

    use super::super::join::tests::{batch, combined, lines, side_schema, spec};
    use super::*;

    #[test]
    fn windows_join_when_the_watermark_passes_their_end_and_late_rows_are_dropped() {
        let (l, r) = (side_schema("l"), side_schema("r"));
        // The `ts` column plays window_end.
        let mut op = WindowJoin::new(
            &spec(JoinType::Full),
            [2, 2],
            None,
            [&l, &r],
            combined(),
            combined(),
        )
        .unwrap();
        let mut out = Vec::new();
        op.process(
            0,
            batch(
                &l,
                &[(Insert, Some(1), "a", 10), (Insert, Some(2), "b", 10)],
            ),
            &mut out,
        )
        .unwrap();
        op.process(
            1,
            batch(
                &r,
                &[(Insert, Some(1), "x", 10), (Insert, Some(3), "y", 10)],
            ),
            &mut out,
        )
        .unwrap();
        assert!(out.is_empty());
        op.watermark(9, &mut out).unwrap();
        let mut got = lines(&out);
        got.sort();
        assert_eq!(
            got,
            [
                "+I[1, a, 10, 1, x, 10]",
                "+I[2, b, 10, null, null, null]",
                "+I[null, null, null, 3, y, 10]",
                "WM 9"
            ]
        );
        out.clear();
        op.process(0, batch(&l, &[(Insert, Some(1), "late", 10)]), &mut out)
            .unwrap();
        op.watermark(20, &mut out).unwrap();
        assert_eq!(lines(&out), ["WM 20"]);
    }

    use super::super::resume::{assert_rescales_anywhere, assert_resumes_anywhere, Step};

    #[test]
    fn window_joins_resume_from_a_snapshot() {
        let (l, r) = (side_schema("l"), side_schema("r"));
        let steps = [
            Step::Rows(
                0,
                batch(
                    &l,
                    &[(Insert, Some(1), "a", 10), (Insert, Some(2), "b", 10)],
                ),
            ),
            Step::Rows(
                1,
                batch(&r, &[(Insert, Some(1), "x", 10), (Insert, None, "y", 20)]),
            ),
            Step::Watermark(9),
            Step::Rows(
                0,
                batch(
                    &l,
                    &[(Insert, Some(1), "c", 20), (Insert, Some(1), "late", 10)],
                ),
            ),
            Step::Rows(1, batch(&r, &[(Insert, Some(1), "z", 20)])),
            Step::Watermark(30),
        ];
        for join_type in [
            JoinType::Inner,
            JoinType::Full,
            JoinType::Semi,
            JoinType::Anti,
        ] {
            let output = if join_type.left_only() {
                l.clone()
            } else {
                combined()
            };
            let make = || {
                Box::new(
                    WindowJoin::new(
                        &spec(join_type),
                        [2, 2],
                        None,
                        [&l, &r],
                        combined(),
                        output.clone(),
                    )
                    .unwrap(),
                ) as Box<dyn StreamOperator>
            };
            let out = assert_resumes_anywhere(&make, &steps);
            assert_rescales_anywhere(&make, &steps, &[&[0], &[0]]);
            assert!(out.iter().any(|l| l.starts_with("+I")), "{out:?}");
        }
    }
}
