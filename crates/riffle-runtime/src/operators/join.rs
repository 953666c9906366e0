//! Regular streaming joins (Flink's `StreamingJoinOperator` and `StreamingSemiAntiJoinOperator`)
//! and what every join operator shares: key encoding, the residual condition, padded output.
//!
//! A regular join keeps every row of both sides, grouped by join key. A row of one side is
//! matched against the rows of the other side with the same key that pass the residual
//! condition. Outer sides remember how many matches each row has, so that the padded row
//! (`+I[row, null]`) is retracted with `-D` when the first match arrives and re-emitted when the
//! last match goes away; inner joins forward the input's change kind.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray};
use arrow::datatypes::{DataType, SchemaRef};
use arrow::record_batch::{RecordBatch, RecordBatchOptions};
use arrow::row::RowConverter;
use datafusion::common::ScalarValue;
use datafusion::physical_expr::PhysicalExpr;
use riffle_connectors::{ChangeBatch, RowKind};
use riffle_plan::{JoinSpec, JoinType};

use super::aggregate::{field_types, RowsOut};
use super::{evaluate, Emit, StreamOperator};
use crate::exchange::key_converter;
use crate::keyed_snapshot::{KeyedSnapshot, KeyedSnapshotWriter};

use crate::state_codec::ScalarCodec;
use crate::task::RuntimeError;

/// One side's view of a join: its key columns and which of them let NULL match NULL.
pub(super) struct JoinKeys {
    columns: Vec<usize>,
    null_safe: Vec<bool>,
    converter: RowConverter,
}

/// The join key of one row: its encoded bytes, and whether it can match at all (a NULL in a
/// key compared with `=` matches nothing).
pub(super) struct RowKey {
    pub(super) bytes: Box<[u8]>,
    pub(super) matchable: bool,
}

impl JoinKeys {
    /// The keys `columns` of an input with schema `input`.
    pub(super) fn new(
        columns: &[usize],
        null_safe: &[bool],
        input: &SchemaRef,
    ) -> Result<Self, RuntimeError> {
        let mut types = Vec::with_capacity(columns.len());
        for c in columns {
            match input.fields().get(*c) {
                Some(f) => types.push(f.data_type().clone()),
                None => return Err(RuntimeError::new("join key column out of range")),
            }
        }
        // No keys (a join on a condition only): every row has the same, empty key.
        if types.is_empty() {
            types.push(DataType::Int8);
        }
        Ok(Self {
            columns: columns.to_vec(),
            null_safe: null_safe.to_vec(),
            converter: key_converter(&types)?,
        })
    }

    /// The keys of every row of `batch`.
    pub(super) fn keys(&self, batch: &RecordBatch) -> Result<Vec<RowKey>, RuntimeError> {
        let rows = batch.num_rows();
        let mut columns: Vec<ArrayRef> = Vec::with_capacity(self.columns.len());
        for c in &self.columns {
            match batch.columns().get(*c) {
                Some(a) => columns.push(a.clone()),
                None => return Err(RuntimeError::new("join key column out of range")),
            }
        }
        if columns.is_empty() {
            columns.push(Arc::new(arrow::array::Int8Array::from(vec![0i8; rows])));
        }
        let encoded = self.converter.convert_columns(&columns)?;
        Ok((0..rows)
            .map(|row| RowKey {
                bytes: Box::from(encoded.row(row).data()),
                matchable: self
                    .columns
                    .iter()
                    .zip(&self.null_safe)
                    .zip(&columns)
                    .all(|((_, safe), a)| *safe || a.is_valid(row)),
            })
            .collect())
    }
}

/// The values of row `row` of `batch`.
pub(super) fn row_values(
    batch: &RecordBatch,
    row: usize,
) -> Result<Vec<ScalarValue>, RuntimeError> {
    batch
        .columns()
        .iter()
        .map(|c| Ok(ScalarValue::try_from_array(c.as_ref(), row)?))
        .collect()
}

/// Typed NULLs for every column of `schema` (the padding of an outer join).
pub(super) fn nulls(schema: &SchemaRef) -> Result<Vec<ScalarValue>, RuntimeError> {
    schema
        .fields()
        .iter()
        .map(|f| Ok(ScalarValue::try_from(f.data_type())?))
        .collect()
}

/// The residual join condition, evaluated on (left row, right row) pairs.
pub(super) struct PairCondition {
    expr: Option<Arc<dyn PhysicalExpr>>,
    /// Left columns followed by right columns.
    schema: SchemaRef,
}

impl PairCondition {
    /// A condition over `schema` (the left then the right columns); `None` accepts every pair.
    pub(super) fn new(expr: Option<Arc<dyn PhysicalExpr>>, schema: SchemaRef) -> Self {
        Self { expr, schema }
    }

    /// For every candidate, whether (`row`, candidate) satisfies the condition; `row` is a row
    /// of the left side when `row_is_left`, else of the right side.
    pub(super) fn test<'a>(
        &self,
        row: &[ScalarValue],
        row_is_left: bool,
        candidates: impl ExactSizeIterator<Item = &'a [ScalarValue]> + Clone,
    ) -> Result<Vec<bool>, RuntimeError> {
        let n = candidates.len();
        let Some(expr) = &self.expr else {
            return Ok(vec![true; n]);
        };
        if n == 0 {
            return Ok(Vec::new());
        }
        let width = candidates.clone().next().map_or(0, |c| c.len());
        let mut columns: Vec<ArrayRef> = Vec::with_capacity(row.len() + width);
        let repeated = |columns: &mut Vec<ArrayRef>| -> Result<(), RuntimeError> {
            for v in row {
                columns.push(v.to_array_of_size(n)?);
            }
            Ok(())
        };
        let gathered = |columns: &mut Vec<ArrayRef>| -> Result<(), RuntimeError> {
            for i in 0..width {
                let values = candidates.clone().map(|c| c[i].clone());
                columns.push(ScalarValue::iter_to_array(values)?);
            }
            Ok(())
        };
        if row_is_left {
            repeated(&mut columns)?;
            gathered(&mut columns)?;
        } else {
            gathered(&mut columns)?;
            repeated(&mut columns)?;
        }
        self.evaluate(expr, columns, n)
    }

    /// For every (left row, right row) pair, whether it satisfies the condition: one
    /// evaluation for all of them.
    pub(super) fn test_pairs(
        &self,
        pairs: &[(&[ScalarValue], &[ScalarValue])],
    ) -> Result<Vec<bool>, RuntimeError> {
        let n = pairs.len();
        let Some(expr) = &self.expr else {
            return Ok(vec![true; n]);
        };
        let Some((left, right)) = pairs.first() else {
            return Ok(Vec::new());
        };
        let mut columns: Vec<ArrayRef> = Vec::with_capacity(left.len() + right.len());
        for i in 0..left.len() {
            let values = pairs.iter().filter_map(|(l, _)| l.get(i).cloned());
            columns.push(ScalarValue::iter_to_array(values)?);
        }
        for i in 0..right.len() {
            let values = pairs.iter().filter_map(|(_, r)| r.get(i).cloned());
            columns.push(ScalarValue::iter_to_array(values)?);
        }
        self.evaluate(expr, columns, n)
    }

    /// Evaluates the condition over `n` pairs given as the left then the right columns.
    fn evaluate(
        &self,
        expr: &Arc<dyn PhysicalExpr>,
        mut columns: Vec<ArrayRef>,
        n: usize,
    ) -> Result<Vec<bool>, RuntimeError> {
        // Arrays built from scalars may differ in nullability or dictionary-ness: cast to the
        // declared types.
        for (column, field) in columns.iter_mut().zip(self.schema.fields()) {
            if column.data_type() != field.data_type() {
                *column = arrow::compute::cast(column, field.data_type())?;
            }
        }
        let options = RecordBatchOptions::new().with_row_count(Some(n));
        let batch = RecordBatch::try_new_with_options(self.schema.clone(), columns, &options)?;
        let mask = evaluate(expr, &batch)?;
        let Some(mask) = mask.as_boolean_opt() else {
            return Err(RuntimeError::new("join condition is not boolean"));
        };
        Ok((0..n).map(|i| mask.is_valid(i) && mask.value(i)).collect())
    }
}

/// A stored row: its values, how many copies of it are held, and (outer and semi/anti sides)
/// how many rows of the other side it matches.
struct Stored {
    values: Vec<ScalarValue>,
    count: usize,
    associations: usize,
}

/// The rows of one join side by join key (in memory; the seam for a keyed state backend).
#[derive(Default)]
struct SideRows {
    rows: HashMap<Box<[u8]>, Vec<Stored>>,
}

impl SideRows {
    fn get(&self, key: &[u8]) -> &[Stored] {
        self.rows.get(key).map_or(&[], |v| v.as_slice())
    }

    /// Adds one copy of `values`; its match count becomes `associations` (as Flink's state
    /// views do).
    fn add(&mut self, key: &[u8], values: Vec<ScalarValue>, associations: usize) {
        let rows = self.rows.entry(Box::from(key)).or_default();
        match rows.iter_mut().find(|s| s.values == values) {
            Some(s) => {
                s.count += 1;
                s.associations = associations;
            }
            None => rows.push(Stored {
                values,
                count: 1,
                associations,
            }),
        }
    }

    /// Removes one copy of `values` (nothing when it is not held).
    fn retract(&mut self, key: &[u8], values: &[ScalarValue]) {
        let Some(rows) = self.rows.get_mut(key) else {
            return;
        };
        if let Some(i) = rows.iter().position(|s| s.values == values) {
            rows[i].count -= 1;
            if rows[i].count == 0 {
                rows.remove(i);
            }
        }
        if rows.is_empty() {
            self.rows.remove(key);
        }
    }

    fn set_associations(&mut self, key: &[u8], index: usize, associations: usize) {
        if let Some(s) = self.rows.get_mut(key).and_then(|r| r.get_mut(index)) {
            s.associations = associations;
        }
    }
}

/// A matched row of the other side: its position in the key's rows and a snapshot of it.
struct Match {
    index: usize,
    values: Vec<ScalarValue>,
    count: usize,
    associations: usize,
}

/// Regular join (inner, outer, semi, anti) over two possibly updating inputs.
pub struct Join {
    join_type: JoinType,
    keys: [JoinKeys; 2],
    condition: PairCondition,
    sides: [SideRows; 2],
    /// NULL padding of each side.
    padding: [Vec<ScalarValue>; 2],
    /// Column types of each side (for checkpoints).
    side_types: [Vec<DataType>; 2],
    schema: SchemaRef,
}

impl Join {
    /// Builds the operator; `combined` is the schema of the condition (left then right
    /// columns).
    pub fn new(
        spec: &JoinSpec,
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
            sides: [SideRows::default(), SideRows::default()],
            padding: [nulls(inputs[0])?, nulls(inputs[1])?],
            side_types: [field_types(inputs[0]), field_types(inputs[1])],
            schema,
        })
    }

    fn outer(&self, side: usize) -> bool {
        if side == 0 {
            self.join_type.left_outer()
        } else {
            self.join_type.right_outer()
        }
    }

    /// The rows of the other side that match `values` of side `side`.
    fn matches(
        &self,
        side: usize,
        key: &RowKey,
        values: &[ScalarValue],
    ) -> Result<Vec<Match>, RuntimeError> {
        if !key.matchable {
            return Ok(Vec::new());
        }
        let stored = self.sides[1 - side].get(&key.bytes);
        let passes = self.condition.test(
            values,
            side == 0,
            stored.iter().map(|s| s.values.as_slice()),
        )?;
        Ok(stored
            .iter()
            .zip(passes)
            .enumerate()
            .filter(|(_, (_, pass))| *pass)
            .map(|(index, (s, _))| Match {
                index,
                values: s.values.clone(),
                count: s.count,
                associations: s.associations,
            })
            .collect())
    }

    /// Emits the joined row of `row` (of side `side`) and `other`.
    fn pair(
        out: &mut RowsOut,
        kind: RowKind,
        side: usize,
        row: &[ScalarValue],
        other: &[ScalarValue],
    ) {
        if side == 0 {
            out.push(kind, row, other);
        } else {
            out.push(kind, other, row);
        }
    }

    /// One row of an inner or outer join (Flink's `StreamingJoinOperator.processElement`).
    fn join_row(
        &mut self,
        side: usize,
        kind: RowKind,
        key: &RowKey,
        values: Vec<ScalarValue>,
        out: &mut RowsOut,
    ) -> Result<(), RuntimeError> {
        let other = 1 - side;
        let (input_outer, other_outer) = (self.outer(side), self.outer(other));
        let matched = self.matches(side, key, &values)?;
        let copies: usize = matched.iter().map(|m| m.count).sum();
        if kind.is_addition() {
            if !matched.is_empty() && other_outer {
                // The other side's rows lose their padded form on their first match.
                for m in &matched {
                    if m.associations == 0 {
                        for _ in 0..m.count {
                            Self::pair(out, RowKind::Delete, other, &m.values, &self.padding[side]);
                        }
                    }
                    self.sides[other].set_associations(&key.bytes, m.index, m.associations + 1);
                }
            }
            let out_kind = if input_outer || other_outer {
                RowKind::Insert
            } else {
                kind
            };
            if matched.is_empty() && input_outer {
                Self::pair(out, RowKind::Insert, side, &values, &self.padding[other]);
            }
            for m in &matched {
                for _ in 0..m.count {
                    Self::pair(out, out_kind, side, &values, &m.values);
                }
            }
            self.sides[side].add(&key.bytes, values, copies);
        } else {
            self.sides[side].retract(&key.bytes, &values);
            if matched.is_empty() {
                if input_outer {
                    Self::pair(out, RowKind::Delete, side, &values, &self.padding[other]);
                }
                return Ok(());
            }
            let out_kind = if input_outer { RowKind::Delete } else { kind };
            for m in &matched {
                for _ in 0..m.count {
                    Self::pair(out, out_kind, side, &values, &m.values);
                }
            }
            if other_outer {
                // The other side's rows fall back to their padded form on their last match.
                for m in &matched {
                    if m.associations == 1 {
                        for _ in 0..m.count {
                            Self::pair(out, RowKind::Insert, other, &m.values, &self.padding[side]);
                        }
                    }
                    let left = m.associations.saturating_sub(1);
                    self.sides[other].set_associations(&key.bytes, m.index, left);
                }
            }
        }
        Ok(())
    }

    /// One row of a semi or anti join (Flink's `StreamingSemiAntiJoinOperator`): left rows are
    /// emitted while they have (semi) or lack (anti) a match.
    fn semi_anti_row(
        &mut self,
        side: usize,
        kind: RowKind,
        key: &RowKey,
        values: Vec<ScalarValue>,
        out: &mut RowsOut,
    ) -> Result<(), RuntimeError> {
        let anti = self.join_type == JoinType::Anti;
        let matched = self.matches(side, key, &values)?;
        if side == 0 {
            if matched.is_empty() == anti {
                out.push(kind, &values, &[]);
            }
            if kind.is_addition() {
                let copies = matched.iter().map(|m| m.count).sum();
                self.sides[0].add(&key.bytes, values, copies);
            } else {
                self.sides[0].retract(&key.bytes, &values);
            }
            return Ok(());
        }
        let add = kind.is_addition();
        if add {
            self.sides[1].add(&key.bytes, values, 0);
        } else {
            self.sides[1].retract(&key.bytes, &values);
        }
        for m in &matched {
            let flips = if add {
                m.associations == 0
            } else {
                m.associations == 1
            };
            if flips {
                let out_kind = match (anti, add) {
                    (true, true) => RowKind::Delete,
                    (true, false) => RowKind::Insert,
                    (false, _) => kind,
                };
                for _ in 0..m.count {
                    out.push(out_kind, &m.values, &[]);
                }
            }
            let associations = if add {
                m.associations + 1
            } else {
                m.associations.saturating_sub(1)
            };
            self.sides[0].set_associations(&key.bytes, m.index, associations);
        }
        Ok(())
    }
}

impl SideRows {
    /// Adds the rows of every key to a keyed snapshot, as entries of `table`.
    fn write(
        &self,
        codec: &ScalarCodec,
        out: &mut KeyedSnapshotWriter,
        table: u8,
    ) -> Result<(), RuntimeError> {
        for (key, rows) in &self.rows {
            out.entry(table, key, |w| {
                w.length(rows.len());
                for s in rows {
                    codec.write(w, &s.values)?;
                    w.length(s.count);
                    w.length(s.associations);
                }
                Ok(())
            })?;
        }
        Ok(())
    }

    /// The rows of the entries of `table`.
    fn read(
        codec: &ScalarCodec,
        snapshot: &KeyedSnapshot<'_>,
        table: u8,
    ) -> Result<Self, RuntimeError> {
        let mut rows = HashMap::new();
        snapshot.read_table(table, "a join", |key, r| {
            let n = r.length()?;
            let mut stored = Vec::with_capacity(n);
            for _ in 0..n {
                stored.push(Stored {
                    values: codec.read(r)?,
                    count: r.u64()? as usize,
                    associations: r.u64()? as usize,
                });
            }
            rows.insert(Box::from(key), stored);
            Ok(())
        })?;
        Ok(Self { rows })
    }
}

impl StreamOperator for Join {
    fn checkpoint_unsupported(&self) -> Option<String> {
        None
    }

    /// One table per side: its rows by join key.
    fn snapshot(&mut self, _checkpoint: u64) -> Result<Vec<u8>, RuntimeError> {
        let mut out = KeyedSnapshotWriter::new();
        for (side, (rows, types)) in self.sides.iter().zip(&self.side_types).enumerate() {
            rows.write(&ScalarCodec::new(types)?, &mut out, side as u8)?;
        }
        Ok(out.finish())
    }

    fn restore(&mut self, state: &[u8]) -> Result<(), RuntimeError> {
        let snapshot = KeyedSnapshot::parse(state, "a join")?;
        for i in 0..2 {
            let codec = ScalarCodec::new(&self.side_types[i])?;
            self.sides[i] = SideRows::read(&codec, &snapshot, i as u8)?;
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
        out: &mut Vec<Emit>,
    ) -> Result<(), RuntimeError> {
        let side = input.min(1);
        let keys = self.keys[side].keys(&batch.batch)?;
        let mut emitted = RowsOut::new(self.schema.fields().len());
        for (row, key) in keys.iter().enumerate() {
            let values = row_values(&batch.batch, row)?;
            let kind = batch.kind(row);
            if self.join_type.left_only() {
                self.semi_anti_row(side, kind, key, values, &mut emitted)?;
            } else {
                self.join_row(side, kind, key, values, &mut emitted)?;
            }
        }
        emitted.emit(&self.schema, out)
    }
}

#[cfg(test)]
pub(super) mod tests {
    use arrow::array::{Int32Array, StringArray, TimestampMillisecondArray};
    use arrow::datatypes::{Field, Schema, TimeUnit};

    use super::*;

    /// Schema `(k INT, v STRING, ts TIMESTAMP(3))` with the given column names.
    pub(crate) fn side_schema(prefix: &str) -> SchemaRef {
        Arc::new(Schema::new(vec![
            Field::new(format!("{prefix}k"), DataType::Int32, true),
            Field::new(format!("{prefix}v"), DataType::Utf8, true),
            Field::new(
                format!("{prefix}ts"),
                DataType::Timestamp(TimeUnit::Millisecond, None),
                true,
            ),
        ]))
    }

    /// The left then the right columns.
    pub(crate) fn combined() -> SchemaRef {
        let mut fields: Vec<Field> = Vec::new();
        for s in [side_schema("l"), side_schema("r")] {
            fields.extend(s.fields().iter().map(|f| f.as_ref().clone()));
        }
        Arc::new(Schema::new(fields))
    }

    /// One batch of rows `(kind, k, v, ts)` of a side.
    pub(crate) fn batch(
        schema: &SchemaRef,
        rows: &[(RowKind, Option<i32>, &str, i64)],
    ) -> ChangeBatch {
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int32Array::from(
                rows.iter().map(|r| r.1).collect::<Vec<_>>(),
            )),
            Arc::new(StringArray::from(
                rows.iter().map(|r| r.2).collect::<Vec<_>>(),
            )),
            Arc::new(TimestampMillisecondArray::from(
                rows.iter().map(|r| r.3).collect::<Vec<_>>(),
            )),
        ];
        let batch = RecordBatch::try_new(schema.clone(), columns).unwrap();
        ChangeBatch {
            batch,
            kinds: Some(rows.iter().map(|r| r.0).collect()),
        }
    }

    /// The emitted rows as `+I[1, a, ...]` lines (watermarks as `WM n`).
    pub(crate) fn lines(out: &[Emit]) -> Vec<String> {
        let mut lines = Vec::new();
        for e in out {
            match e {
                Emit::Watermark(w) => lines.push(format!("WM {w}")),
                Emit::Data(b) => {
                    for row in 0..b.num_rows() {
                        let values: Vec<String> = b
                            .batch
                            .columns()
                            .iter()
                            .map(|c| {
                                let v = ScalarValue::try_from_array(c.as_ref(), row).unwrap();
                                if v.is_null() {
                                    "null".to_string()
                                } else {
                                    v.to_string()
                                }
                            })
                            .collect();
                        lines.push(format!("{}[{}]", b.kind(row).short(), values.join(", ")));
                    }
                }
            }
        }
        lines
    }

    pub(crate) fn spec(join_type: JoinType) -> JoinSpec {
        JoinSpec {
            join_type,
            left_keys: vec![0],
            right_keys: vec![0],
            null_safe: vec![false],
            condition: None,
        }
    }

    fn join(join_type: JoinType) -> Join {
        let (l, r) = (side_schema("l"), side_schema("r"));
        let out = if join_type.left_only() {
            l.clone()
        } else {
            combined()
        };
        Join::new(&spec(join_type), None, [&l, &r], combined(), out).unwrap()
    }

    fn feed(op: &mut Join, side: usize, rows: &[(RowKind, Option<i32>, &str, i64)]) -> Vec<String> {
        let schema = side_schema(if side == 0 { "l" } else { "r" });
        let mut out = Vec::new();
        op.process(side, batch(&schema, rows), &mut out).unwrap();
        lines(&out)
    }

    use RowKind::{Delete, Insert, UpdateAfter, UpdateBefore};

    #[test]
    fn left_join_pads_then_retracts_the_padding_and_restores_it() {
        let mut op = join(JoinType::Left);
        assert_eq!(
            feed(&mut op, 0, &[(Insert, Some(1), "a", 0)]),
            ["+I[1, a, 0, null, null, null]"]
        );
        assert_eq!(
            feed(&mut op, 1, &[(Insert, Some(1), "x", 0)]),
            ["-D[1, a, 0, null, null, null]", "+I[1, a, 0, 1, x, 0]"]
        );
        assert_eq!(
            feed(&mut op, 1, &[(Delete, Some(1), "x", 0)]),
            ["-D[1, a, 0, 1, x, 0]", "+I[1, a, 0, null, null, null]"]
        );
        // A NULL key matches nothing, even another NULL key.
        feed(&mut op, 1, &[(Insert, None, "n", 0)]);
        assert_eq!(
            feed(&mut op, 0, &[(Insert, None, "b", 0)]),
            ["+I[null, b, 0, null, null, null]"]
        );
    }

    #[test]
    fn inner_join_forwards_update_kinds_and_multiplies_duplicates() {
        let mut op = join(JoinType::Inner);
        feed(
            &mut op,
            0,
            &[(Insert, Some(1), "a", 0), (Insert, Some(1), "a", 0)],
        );
        let out = feed(
            &mut op,
            1,
            &[
                (UpdateBefore, Some(1), "x", 0),
                (UpdateAfter, Some(1), "y", 0),
            ],
        );
        // Flink retracts the pairs of a retraction even if the retracted row was never held.
        assert_eq!(
            out,
            [
                "-U[1, a, 0, 1, x, 0]",
                "-U[1, a, 0, 1, x, 0]",
                "+U[1, a, 0, 1, y, 0]",
                "+U[1, a, 0, 1, y, 0]"
            ]
        );
        let out = feed(&mut op, 1, &[(UpdateBefore, Some(1), "y", 0)]);
        assert_eq!(out.len(), 2);
        assert!(out.iter().all(|l| l.starts_with("-U[1, a")));
    }

    #[test]
    fn anti_join_retracts_left_rows_when_a_match_arrives_and_restores_them() {
        let mut op = join(JoinType::Anti);
        assert_eq!(
            feed(&mut op, 0, &[(Insert, Some(1), "a", 0)]),
            ["+I[1, a, 0]"]
        );
        assert_eq!(
            feed(&mut op, 1, &[(Insert, Some(1), "x", 0)]),
            ["-D[1, a, 0]"]
        );
        assert!(feed(&mut op, 1, &[(Insert, Some(1), "y", 0)]).is_empty());
        assert!(feed(&mut op, 1, &[(Delete, Some(1), "x", 0)]).is_empty());
        assert_eq!(
            feed(&mut op, 1, &[(Delete, Some(1), "y", 0)]),
            ["+I[1, a, 0]"]
        );
    }

    #[test]
    fn semi_join_emits_a_left_row_once_on_its_first_match() {
        let mut op = join(JoinType::Semi);
        assert!(feed(&mut op, 0, &[(Insert, Some(1), "a", 0)]).is_empty());
        assert_eq!(
            feed(
                &mut op,
                1,
                &[(Insert, Some(1), "x", 0), (Insert, Some(1), "y", 0)]
            ),
            ["+I[1, a, 0]"]
        );
    }

    #[test]
    fn joins_resume_and_rescale_from_snapshots() {
        use super::super::resume::{assert_rescales_anywhere, assert_resumes_anywhere, Step};
        let (l, r) = (side_schema("l"), side_schema("r"));
        let rows = |side: usize, rows: &[(RowKind, Option<i32>, &str, i64)]| {
            Step::Rows(side, batch(if side == 0 { &l } else { &r }, rows))
        };
        let steps = vec![
            rows(0, &[(Insert, Some(1), "a", 0), (Insert, Some(2), "b", 0)]),
            rows(1, &[(Insert, Some(1), "x", 0), (Insert, Some(3), "y", 0)]),
            rows(0, &[(Insert, Some(3), "c", 0), (Insert, Some(4), "d", 0)]),
            rows(1, &[(Delete, Some(1), "x", 0), (Insert, Some(2), "z", 0)]),
            rows(
                0,
                &[
                    (UpdateBefore, Some(2), "b", 0),
                    (UpdateAfter, Some(2), "e", 0),
                ],
            ),
            rows(1, &[(Insert, Some(4), "w", 0), (Insert, Some(5), "v", 0)]),
        ];
        for join_type in [JoinType::Inner, JoinType::Full, JoinType::Anti] {
            let make = || Box::new(join(join_type)) as Box<dyn StreamOperator>;
            let out = assert_resumes_anywhere(&make, &steps);
            assert!(out.len() >= 4, "{join_type:?}: {out:?}");
            assert_rescales_anywhere(&make, &steps, &[&[0], &[0]]);
        }
    }
}
