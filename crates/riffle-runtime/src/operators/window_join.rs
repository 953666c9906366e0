//! Window join (Flink's `WindowJoinOperator`): rows of two window TVF outputs are buffered per
//! window; when the watermark reaches `window_end - 1` the window's rows are grouped by join
//! key, joined (inner, outer, semi or anti) and dropped. Rows of windows that already fired are
//! late and dropped.
//!
//! Rows stay columnar: a window holds, per side, the parts of the input batches whose rows fall
//! into it (the whole batch when all of its rows do, as when a window aggregate emits a window)
//! with their encoded join keys. Firing gathers the rows of the candidate pairs to test the
//! condition on whole columns, and the joined rows' columns to emit them. Rows become scalars
//! only in checkpoints.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow::array::{new_null_array, Array, ArrayRef, UInt32Array};
use arrow::compute::{cast, interleave, take_record_batch};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use arrow::record_batch::{RecordBatch, RecordBatchOptions};
use datafusion::common::{HashMap as FastMap, ScalarValue};
use datafusion::physical_expr::PhysicalExpr;
use riffle_connectors::{ChangeBatch, RowKind};
use riffle_plan::{JoinSpec, JoinType};

use riffle_connectors::snapshot::StateWriter;

use super::aggregate::{field_types, RowsOut};
use super::join::{row_values, BatchKeys, JoinKeys, PairCondition};
use super::{millis, of_field_type, Emit, StreamOperator};
use crate::keyed_snapshot::{min_time, KeyedSnapshot, KeyedSnapshotWriter};
use crate::state_codec::ScalarCodec;
use crate::task::RuntimeError;

/// The table of the keyed snapshot: both sides' rows per window and key.
const WINDOWS: u8 = 0;

/// Row pairs whose join condition one evaluation tests, at most (unless one left row has
/// more candidates).
const PAIRS_PER_TEST: usize = 8192;

/// Rows of one side that fall into one window: every row of `batch` (with the side's declared
/// column types), and their join keys.
struct Part {
    batch: RecordBatch,
    keys: BatchKeys,
}

/// The buffered rows of one window: the parts of each side, in arrival order.
type Window = [Vec<Part>; 2];

/// A buffered row: the index of its part (among a side's parts) and its row in the part.
type RowRef = (usize, usize);

/// The rows of one join key of a window: its encoded key and its rows of each side.
type KeyRows<'a> = (&'a [u8], [Vec<RowRef>; 2]);

/// The rows of `window` by join key, keys in order of first arrival (left rows first), rows in
/// arrival order.
fn by_key(window: &Window) -> Vec<KeyRows<'_>> {
    let mut index: FastMap<&[u8], usize> = FastMap::default();
    let mut keys: Vec<KeyRows<'_>> = Vec::new();
    for (side, parts) in window.iter().enumerate() {
        for (p, part) in parts.iter().enumerate() {
            // Consecutive rows mostly share their key (a window aggregate's rows of one key).
            let mut last: Option<(&[u8], usize)> = None;
            for row in 0..part.batch.num_rows() {
                let key = part.keys.rows.row(row).data();
                let at = match last {
                    Some((k, at)) if k == key => at,
                    _ => *index.entry(key).or_insert_with(|| {
                        keys.push((key, [Vec::new(), Vec::new()]));
                        keys.len() - 1
                    }),
                };
                last = Some((key, at));
                keys[at].1[side].push((p, row));
            }
        }
    }
    keys
}

/// The columns of the rows `rows` of `parts` (batches of one side, with column types
/// `types`); the part index `parts.len()` stands for a row of NULLs (outer join padding).
fn gather(
    parts: &[&RecordBatch],
    types: &[DataType],
    rows: &[RowRef],
) -> Result<Vec<ArrayRef>, RuntimeError> {
    types
        .iter()
        .enumerate()
        .map(|(c, t)| {
            let padding = new_null_array(t, 1);
            let mut sources: Vec<&dyn Array> = Vec::with_capacity(parts.len() + 1);
            for part in parts {
                match part.columns().get(c) {
                    Some(column) => sources.push(column.as_ref()),
                    None => return Err(RuntimeError::new("window join column out of range")),
                }
            }
            sources.push(padding.as_ref());
            Ok(interleave(&sources, rows)?)
        })
        .collect()
}

/// Joined rows to emit: per row, its left and its right row (a part index over all fired
/// windows' parts of the side, where one past the last part is the NULL padding).
#[derive(Default)]
struct Joined {
    left: Vec<RowRef>,
    right: Vec<RowRef>,
}

impl Joined {
    fn push(&mut self, left: RowRef, right: RowRef) {
        self.left.push(left);
        self.right.push(right);
    }
}

/// Window join operator.
pub struct WindowJoin {
    join_type: JoinType,
    keys: [JoinKeys; 2],
    condition: PairCondition,
    /// `window_end` column of each input.
    window_end: [usize; 2],
    windows: BTreeMap<i64, Window>,
    watermark: i64,
    /// Each input's schema with its declared types, every field nullable (the schema of the
    /// buffered batches that are cast or restored).
    inputs: [SchemaRef; 2],
    /// Each input's declared column types.
    types: [Vec<DataType>; 2],
    /// Encode each side's rows (for checkpoints).
    codecs: [ScalarCodec; 2],
    schema: SchemaRef,
}

/// `schema` with every field nullable.
fn nullable(schema: &SchemaRef) -> SchemaRef {
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .map(|f| f.as_ref().clone().with_nullable(true))
        .collect();
    Arc::new(Schema::new(fields))
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
        let types = [field_types(inputs[0]), field_types(inputs[1])];
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
            inputs: [nullable(inputs[0]), nullable(inputs[1])],
            codecs: [ScalarCodec::new(&types[0])?, ScalarCodec::new(&types[1])?],
            types,
            schema,
        })
    }

    /// `batch` (of side `side`) with the side's declared column types.
    fn declared(&self, side: usize, batch: RecordBatch) -> Result<RecordBatch, RuntimeError> {
        let types = &self.types[side];
        if batch.num_columns() != types.len() {
            return Err(RuntimeError::new(format!(
                "window join input has {} columns, expected {}",
                batch.num_columns(),
                types.len()
            )));
        }
        if batch
            .columns()
            .iter()
            .zip(types)
            .all(|(c, t)| c.data_type() == t)
        {
            return Ok(batch);
        }
        let columns = batch
            .columns()
            .iter()
            .zip(types)
            .map(|(c, t)| Ok(cast(c, t)?))
            .collect::<Result<Vec<_>, RuntimeError>>()?;
        let options = RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
        Ok(RecordBatch::try_new_with_options(
            self.inputs[side].clone(),
            columns,
            &options,
        )?)
    }

    /// Buffers `batch`, rows of side `side` that fall into the window ending at `end`.
    fn buffer(&mut self, side: usize, end: i64, batch: RecordBatch) -> Result<(), RuntimeError> {
        let keys = self.keys[side].encode(&batch)?;
        self.windows.entry(end).or_default()[side].push(Part { batch, keys });
        Ok(())
    }

    /// For every (left row, right row) pair of `window`, whether it satisfies the condition:
    /// one evaluation over the pairs' gathered columns.
    fn test(&self, window: &Window, pairs: &[(RowRef, RowRef)]) -> Result<Vec<bool>, RuntimeError> {
        if pairs.is_empty() || self.condition.accepts_all() {
            return Ok(vec![true; pairs.len()]);
        }
        let mut columns = Vec::with_capacity(self.types[0].len() + self.types[1].len());
        for (side, (parts, types)) in window.iter().zip(&self.types).enumerate() {
            let parts: Vec<&RecordBatch> = parts.iter().map(|p| &p.batch).collect();
            let rows: Vec<RowRef> = pairs
                .iter()
                .map(|p| if side == 0 { p.0 } else { p.1 })
                .collect();
            columns.extend(gather(&parts, types, &rows)?);
        }
        self.condition.test_columns(columns, pairs.len())
    }

    /// Joins the rows of `window` key by key, testing the condition on many pairs at once;
    /// `first` is the index of the window's first part of each side among all fired parts,
    /// `padding` the number of fired parts of each side (the index of the NULL padding).
    fn join(
        &self,
        window: &Window,
        first: [usize; 2],
        padding: [usize; 2],
        out: &mut Joined,
    ) -> Result<(), RuntimeError> {
        let matchable = |side: usize, (p, row): RowRef| window[side][p].keys.matchable[row];
        let fired = |side: usize, (p, row): RowRef| (first[side] + p, row);
        let padding = |side: usize| (padding[side], 0);
        for (_, [lefts, rights]) in by_key(window) {
            let mut right_matched = vec![false; rights.len()];
            let matchable_rights: Vec<usize> = (0..rights.len())
                .filter(|i| matchable(1, rights[*i]))
                .collect();
            // Lefts per condition evaluation: about PAIRS_PER_TEST pairs, at least one left.
            let block = (PAIRS_PER_TEST / matchable_rights.len().max(1)).max(1);
            for lefts in lefts.chunks(block) {
                let pairs: Vec<(RowRef, RowRef)> = lefts
                    .iter()
                    .filter(|left| matchable(0, **left))
                    .flat_map(|left| matchable_rights.iter().map(|i| (*left, rights[*i])))
                    .collect();
                let mut passes = self.test(window, &pairs)?.into_iter();
                for left in lefts {
                    let mut matched = false;
                    if matchable(0, *left) {
                        for i in &matchable_rights {
                            if !passes.next().unwrap_or(false) {
                                continue;
                            }
                            matched = true;
                            right_matched[*i] = true;
                            if !self.join_type.left_only() {
                                out.push(fired(0, *left), fired(1, rights[*i]));
                            }
                        }
                    }
                    match self.join_type {
                        JoinType::Semi if matched => out.push(fired(0, *left), padding(1)),
                        JoinType::Anti if !matched => out.push(fired(0, *left), padding(1)),
                        JoinType::Left | JoinType::Full if !matched => {
                            out.push(fired(0, *left), padding(1))
                        }
                        _ => {}
                    }
                }
            }
            if self.join_type.right_outer() {
                for (right, matched) in rights.iter().zip(right_matched) {
                    if !matched {
                        out.push(padding(0), fired(1, *right));
                    }
                }
            }
        }
        Ok(())
    }

    /// Joins the windows `fired` and emits their joined rows (one batch).
    fn emit(&self, fired: &[Window], out: &mut Vec<Emit>) -> Result<(), RuntimeError> {
        let parts = |side: usize| -> Vec<&RecordBatch> {
            fired
                .iter()
                .flat_map(|w| w[side].iter().map(|p| &p.batch))
                .collect()
        };
        let parts = [parts(0), parts(1)];
        let padding = [parts[0].len(), parts[1].len()];
        let mut joined = Joined::default();
        let mut first = [0, 0];
        for window in fired {
            self.join(window, first, padding, &mut joined)?;
            first = [first[0] + window[0].len(), first[1] + window[1].len()];
        }
        let rows = joined.left.len();
        if rows == 0 {
            return Ok(());
        }
        let mut columns = gather(&parts[0], &self.types[0], &joined.left)?;
        if !self.join_type.left_only() {
            columns.extend(gather(&parts[1], &self.types[1], &joined.right)?);
        }
        let columns = columns
            .into_iter()
            .zip(self.schema.fields())
            .map(|(c, field)| of_field_type(c, field))
            .collect::<Result<Vec<_>, _>>()?;
        let options = RecordBatchOptions::new().with_row_count(Some(rows));
        let batch = RecordBatch::try_new_with_options(self.schema.clone(), columns, &options)?;
        out.push(Emit::Data(ChangeBatch { batch, kinds: None }));
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
        for (end, window) in &self.windows {
            for (key, sides) in by_key(window) {
                out.entry(WINDOWS, key, |w| {
                    w.i64(*end);
                    for ((rows, parts), codec) in sides.iter().zip(window).zip(&self.codecs) {
                        w.length(rows.len());
                        for (p, row) in rows {
                            let part = &parts[*p];
                            codec.write(w, &row_values(&part.batch, *row)?)?;
                            w.bool(part.keys.matchable[*row]);
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
        // The rows of each window and side, all keys together.
        let mut restored: BTreeMap<i64, [Vec<Vec<ScalarValue>>; 2]> = BTreeMap::new();
        let codecs = &self.codecs;
        snapshot.read_table(WINDOWS, what, |_key, r| {
            let end = r.i64()?;
            let sides = restored.entry(end).or_default();
            for (rows, codec) in sides.iter_mut().zip(codecs) {
                for _ in 0..r.length()? {
                    rows.push(codec.read(r)?);
                    // Whether the row can match follows from its key, encoded again below.
                    r.bool()?;
                }
            }
            Ok(())
        })?;
        for (end, sides) in restored {
            for (side, rows) in sides.into_iter().enumerate() {
                if rows.is_empty() {
                    continue;
                }
                let mut columns = RowsOut::new(self.types[side].len());
                for row in &rows {
                    columns.push(RowKind::Insert, row, &[]);
                }
                let mut emitted = Vec::new();
                columns.emit(&self.inputs[side], &mut emitted)?;
                let Some(Emit::Data(batch)) = emitted.pop() else {
                    return Err(RuntimeError::new(
                        "restored window join rows became no batch",
                    ));
                };
                self.buffer(side, end, batch.batch)?;
            }
        }
        Ok(())
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
        let batch = self.declared(side, batch.batch)?;
        let Some(end_column) = batch.columns().get(self.window_end[side]) else {
            return Err(RuntimeError::new("window_end column out of range"));
        };
        let ends = millis(end_column)?;
        // The rows of each window, windows in order of first arrival.
        let mut windows: Vec<(i64, Vec<u32>)> = Vec::new();
        let mut index: FastMap<i64, usize> = FastMap::default();
        for row in 0..batch.num_rows() {
            if ends.is_null(row) {
                continue;
            }
            let end = ends.value(row);
            if end.saturating_sub(1) <= self.watermark {
                continue; // late: the window already fired
            }
            let at = match windows.last() {
                Some((last, _)) if *last == end => windows.len() - 1,
                _ => *index.entry(end).or_insert_with(|| {
                    windows.push((end, Vec::new()));
                    windows.len() - 1
                }),
            };
            windows[at].1.push(row as u32);
        }
        for (end, rows) in windows {
            let (first, count) = (rows[0] as usize, rows.len());
            let part = if count == batch.num_rows() {
                batch.clone()
            } else if rows[count - 1] as usize == first + count - 1 {
                batch.slice(first, count) // consecutive rows: no copy
            } else {
                take_record_batch(&batch, &UInt32Array::from(rows))?
            };
            self.buffer(side, end, part)?;
        }
        Ok(())
    }

    fn watermark(&mut self, watermark: i64, out: &mut Vec<Emit>) -> Result<(), RuntimeError> {
        self.watermark = watermark;
        let mut fired = Vec::new();
        while let Some(entry) = self.windows.first_entry() {
            if entry.key().saturating_sub(1) > watermark {
                break;
            }
            fired.push(entry.remove());
        }
        self.emit(&fired, out)?;
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

    /// A window join of type `join_type` on `k` with the condition `l.v < r.v`; the `ts`
    /// column plays window_end.
    fn on_values(join_type: JoinType) -> WindowJoin {
        use datafusion::logical_expr::Operator;
        use datafusion::physical_expr::expressions::{BinaryExpr, Column};
        let (l, r) = (side_schema("l"), side_schema("r"));
        let condition = Arc::new(BinaryExpr::new(
            Arc::new(Column::new("lv", 1)),
            Operator::Lt,
            Arc::new(Column::new("rv", 4)),
        ));
        let output = if join_type.left_only() {
            l.clone()
        } else {
            combined()
        };
        WindowJoin::new(
            &spec(join_type),
            [2, 2],
            Some(condition),
            [&l, &r],
            combined(),
            output,
        )
        .unwrap()
    }

    /// Windows 10 and 20 with several keys (NULL among them), each side's rows arriving in
    /// two batches, some batches spanning both windows (in runs or interleaved).
    fn two_windows() -> Vec<Step> {
        let (l, r) = (side_schema("l"), side_schema("r"));
        vec![
            Step::Rows(
                0,
                batch(
                    &l,
                    &[
                        (Insert, Some(1), "a", 10),
                        (Insert, Some(1), "b", 20),
                        (Insert, Some(2), "c", 10),
                        (Insert, None, "n", 10),
                    ],
                ),
            ),
            Step::Rows(
                1,
                batch(
                    &r,
                    &[
                        (Insert, Some(1), "m", 10),
                        (Insert, Some(2), "a", 10),
                        (Insert, None, "z", 10),
                    ],
                ),
            ),
            Step::Rows(0, batch(&l, &[(Insert, Some(1), "d", 10)])),
            Step::Rows(
                1,
                batch(
                    &r,
                    &[
                        (Insert, Some(1), "x", 20),
                        (Insert, Some(1), "y", 20),
                        (Insert, Some(3), "q", 10),
                    ],
                ),
            ),
            Step::Watermark(9),
            Step::Watermark(19),
        ]
    }

    /// The output of `op` for `steps`, in emission order.
    fn run(mut op: WindowJoin, steps: Vec<Step>) -> Vec<String> {
        let mut out = Vec::new();
        for step in steps {
            match step {
                Step::Rows(input, batch) => op.process(input, batch, &mut out).unwrap(),
                Step::Watermark(w) => op.watermark(w, &mut out).unwrap(),
                _ => unreachable!("only rows and watermarks"),
            }
        }
        lines(&out)
    }

    #[test]
    fn a_window_joins_its_rows_of_every_batch_key_by_key_and_pads_the_unmatched() {
        assert_eq!(
            run(on_values(JoinType::Full), two_windows()),
            [
                // Key 1: both left rows (of two batches) pass `l.v < r.v` with `m`.
                "+I[1, a, 10, 1, m, 10]",
                "+I[1, d, 10, 1, m, 10]",
                // Key 2: the pair fails the condition, both rows are padded.
                "+I[2, c, 10, null, null, null]",
                "+I[null, null, null, 2, a, 10]",
                // NULL keys match nothing, not even each other.
                "+I[null, n, 10, null, null, null]",
                "+I[null, null, null, null, z, 10]",
                "+I[null, null, null, 3, q, 10]",
                "WM 9",
                "+I[1, b, 20, 1, x, 20]",
                "+I[1, b, 20, 1, y, 20]",
                "WM 19"
            ]
        );
        assert_eq!(
            run(on_values(JoinType::Inner), two_windows()),
            [
                "+I[1, a, 10, 1, m, 10]",
                "+I[1, d, 10, 1, m, 10]",
                "WM 9",
                "+I[1, b, 20, 1, x, 20]",
                "+I[1, b, 20, 1, y, 20]",
                "WM 19"
            ]
        );
        assert_eq!(
            run(on_values(JoinType::Left), two_windows()),
            [
                "+I[1, a, 10, 1, m, 10]",
                "+I[1, d, 10, 1, m, 10]",
                "+I[2, c, 10, null, null, null]",
                "+I[null, n, 10, null, null, null]",
                "WM 9",
                "+I[1, b, 20, 1, x, 20]",
                "+I[1, b, 20, 1, y, 20]",
                "WM 19"
            ]
        );
        assert_eq!(
            run(on_values(JoinType::Right), two_windows()),
            [
                "+I[1, a, 10, 1, m, 10]",
                "+I[1, d, 10, 1, m, 10]",
                "+I[null, null, null, 2, a, 10]",
                "+I[null, null, null, null, z, 10]",
                "+I[null, null, null, 3, q, 10]",
                "WM 9",
                "+I[1, b, 20, 1, x, 20]",
                "+I[1, b, 20, 1, y, 20]",
                "WM 19"
            ]
        );
        assert_eq!(
            run(on_values(JoinType::Semi), two_windows()),
            [
                "+I[1, a, 10]",
                "+I[1, d, 10]",
                "WM 9",
                "+I[1, b, 20]",
                "WM 19"
            ]
        );
        assert_eq!(
            run(on_values(JoinType::Anti), two_windows()),
            ["+I[2, c, 10]", "+I[null, n, 10]", "WM 9", "WM 19"]
        );
    }

    #[test]
    fn a_key_with_more_pairs_than_one_test_is_tested_in_blocks_of_lefts() {
        let (l, r) = (side_schema("l"), side_schema("r"));
        let lefts: Vec<_> = (0..PAIRS_PER_TEST)
            .map(|i| (Insert, Some(1), if i % 2 == 0 { "a" } else { "z" }, 10))
            .collect();
        let rights = [
            (Insert, Some(1), "m", 10),
            (Insert, Some(1), "n", 10),
            (Insert, Some(1), "b", 10),
        ];
        let steps = vec![
            Step::Rows(0, batch(&l, &lefts)),
            Step::Rows(1, batch(&r, &rights)),
            Step::Watermark(9),
        ];
        let out = run(on_values(JoinType::Left), steps);
        // Every "a" matches all three rights, every "z" none (padded).
        let half = PAIRS_PER_TEST / 2;
        assert_eq!(out.len(), half * 3 + half + 1);
        assert_eq!(
            out[..4],
            [
                "+I[1, a, 10, 1, m, 10]",
                "+I[1, a, 10, 1, n, 10]",
                "+I[1, a, 10, 1, b, 10]",
                "+I[1, z, 10, null, null, null]"
            ]
        );
        assert_eq!(
            out[out.len() - 2..],
            ["+I[1, z, 10, null, null, null]", "WM 9"]
        );
    }

    #[test]
    fn one_watermark_fires_several_windows_into_one_batch() {
        let mut steps = two_windows();
        steps.truncate(4);
        steps.push(Step::Watermark(30));
        let out = run(on_values(JoinType::Full), steps);
        assert_eq!(out.len(), 10, "{out:?}");
        assert_eq!(out[9], "WM 30");
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

    #[test]
    fn windows_of_several_batches_and_keys_resume_from_a_snapshot() {
        for join_type in [
            JoinType::Inner,
            JoinType::Left,
            JoinType::Right,
            JoinType::Full,
            JoinType::Semi,
            JoinType::Anti,
        ] {
            let make = || Box::new(on_values(join_type)) as Box<dyn StreamOperator>;
            let steps = two_windows();
            let out = assert_resumes_anywhere(&make, &steps);
            assert_rescales_anywhere(&make, &steps, &[&[0], &[0]]);
            assert!(out.iter().any(|l| l.starts_with("+I")), "{out:?}");
        }
    }
}
