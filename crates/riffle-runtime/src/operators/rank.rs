//! Ranking operators: streaming Top-N, deduplication and window Top-N, with the changelogs
//! Flink's `AppendOnlyTopNFunction`/`RetractableTopNFunction`, deduplicate functions and
//! window rank processors emit.

use std::collections::{BTreeMap, HashMap};

use arrow::array::{Array, ArrayRef};
use arrow::datatypes::{DataType, SchemaRef};
use arrow::record_batch::RecordBatch;
use arrow::row::{OwnedRow, RowConverter, SortField};
use datafusion::common::ScalarValue;
use riffle_connectors::{ChangeBatch, RowKind};
use riffle_plan::rank::{RankSpec, RankStrategy};

use riffle_connectors::snapshot::{StateReader, StateWriter};

use super::aggregate::{field_types, key_columns, key_values, RowsOut};
use super::keyed::{read_timers, write_timers, KeyedState};
use crate::keyed_snapshot::{min_time, KeyedSnapshot, KeyedSnapshotWriter};

use super::{millis, Emit, StreamOperator};
use crate::state_codec::ScalarCodec;
use crate::task::RuntimeError;

/// Tables of the keyed snapshots.
const PARTITIONS: u8 = 0;
const TIMERS: u8 = 1;

/// Builds the operator of a [`RankSpec`]; `append_only` tells whether its input only inserts.
pub(super) fn create(
    spec: &RankSpec,
    input: &SchemaRef,
    schema: SchemaRef,
    append_only: bool,
) -> Result<Box<dyn StreamOperator>, RuntimeError> {
    let types = field_types(input);
    let width = input.fields().len();
    Ok(match spec.strategy {
        RankStrategy::TopN => Box::new(TopNRank {
            spec: spec.clone(),
            sort: SortKeys::new(spec, input)?,
            partitions: KeyedState::new(&spec.partition, &types)?,
            rows: ScalarCodec::new(&types)?,
            append_only,
            width,
            next_id: 0,
            pending: None,
            schema,
        }),
        RankStrategy::ProcTimeDedup { keep_last } => Box::new(ProcTimeDedup {
            keep_last,
            on_changelog: false,
            partitions: KeyedState::new(&spec.partition, &types)?,
            rows: ScalarCodec::new(&types)?,
            width,
            schema,
        }),
        RankStrategy::RowTimeDedup { keep_last, time } => Box::new(RowTimeDedup {
            keep_last,
            time,
            partitions: KeyedState::new(&spec.partition, &types)?,
            rows: ScalarCodec::new(&types)?,
            timers: BTreeMap::new(),
            watermark: i64::MIN,
            width,
            schema,
        }),
        RankStrategy::Window {
            window_end,
            latest_first,
        } => Box::new(WindowRank {
            spec: spec.clone(),
            sort: SortKeys::new(spec, input)?,
            window_end,
            latest_first,
            partitions: KeyedState::new(&spec.partition, &types)?,
            rows: ScalarCodec::new(&types)?,
            windows: BTreeMap::new(),
            watermark: i64::MIN,
            width,
            schema,
        }),
    })
}

/// Encodes the sort keys of rows so that byte order is rank order.
struct SortKeys {
    columns: Vec<usize>,
    converter: RowConverter,
}

impl SortKeys {
    fn new(spec: &RankSpec, input: &SchemaRef) -> Result<Self, RuntimeError> {
        let mut fields = Vec::new();
        for key in &spec.order {
            let Some(f) = input.fields().get(key.column) else {
                return Err(RuntimeError::new("sort column out of range"));
            };
            fields.push(SortField::new_with_options(
                f.data_type().clone(),
                arrow::compute::SortOptions {
                    descending: !key.ascending,
                    nulls_first: key.nulls_first,
                },
            ));
        }
        let columns = spec.order.iter().map(|k| k.column).collect();
        if fields.is_empty() {
            // No ORDER BY: every row sorts equal (arrival order).
            fields.push(SortField::new(DataType::Int8));
        }
        Ok(Self {
            columns,
            converter: RowConverter::new(fields)?,
        })
    }

    fn encode(&self, batch: &RecordBatch) -> Result<arrow::row::Rows, RuntimeError> {
        let columns: Vec<ArrayRef> = key_columns(batch, &self.columns);
        Ok(self.converter.convert_columns(&columns)?)
    }
}

/// A kept row: its sort key, an identity (to tell equal rows apart) and its values.
#[derive(Clone)]
struct Ranked {
    sort: OwnedRow,
    id: u64,
    values: Vec<ScalarValue>,
}

/// Emits `values` with the rank number appended.
fn push_ranked(out: &mut RowsOut, kind: RowKind, values: &[ScalarValue], rank: usize) {
    out.push(kind, values, &[ScalarValue::Int64(Some(rank as i64))]);
}

/// Writes kept rows (for checkpoints).
fn write_ranked(
    codec: &ScalarCodec,
    rows: &[Ranked],
    w: &mut StateWriter,
) -> Result<(), RuntimeError> {
    w.length(rows.len());
    for r in rows {
        w.bytes(r.sort.row().data());
        w.u64(r.id);
        codec.write(w, &r.values)?;
    }
    Ok(())
}

/// Reads kept rows written by [`write_ranked`].
fn read_ranked(
    codec: &ScalarCodec,
    sort: &SortKeys,
    r: &mut StateReader<'_>,
) -> Result<Vec<Ranked>, RuntimeError> {
    let n = r.length()?;
    let mut rows = Vec::with_capacity(n);
    for _ in 0..n {
        rows.push(Ranked {
            sort: sort.converter.parser().parse(r.bytes()?).owned(),
            id: r.u64()?,
            values: codec.read(r)?,
        });
    }
    Ok(rows)
}

/// Streaming Top-N per partition. Rows are kept sorted (ties in arrival order); after every
/// change the kept ranks before and after are compared: with the rank number (or a range not
/// starting at 1) each changed rank emits `-U`/`+U` (`+I` for a newly filled rank, `-D` for an
/// emptied one), otherwise rows that left emit `-D` and rows that entered emit `+I`. On
/// append-only input only the best `end` rows are kept; on updating input every row is (a
/// retraction may bring a lower row back into range).
struct TopNRank {
    spec: RankSpec,
    sort: SortKeys,
    partitions: KeyedState<Vec<Ranked>>,
    /// Encodes kept rows (for checkpoints).
    rows: ScalarCodec,
    append_only: bool,
    width: usize,
    next_id: u64,
    /// Update-fast without a row key: the values of the last update-before row, which the
    /// next update-after replaces (the two arrive together).
    pending: Option<Vec<ScalarValue>>,
    schema: SchemaRef,
}

/// The kept ranks `start..=end` of `rows`.
fn kept(rows: &[Ranked], start: usize, end: usize) -> Vec<Ranked> {
    let from = start.saturating_sub(1).min(rows.len());
    let to = end.min(rows.len());
    rows[from..to].to_vec()
}

/// Whether two kept rows differ (another row, or the same row updated in place).
fn changed(b: &Ranked, a: &Ranked) -> bool {
    b.id != a.id || b.values != a.values
}

impl TopNRank {
    fn emit_changes(&self, before: &[Ranked], after: &[Ranked], out: &mut RowsOut) {
        let start = self.spec.start;
        // Flink's FastTop1Function (Top-1 over an insert-only or update-fast input) replaces
        // the kept row with an update, without -U when the planner declared it insert-only.
        let fast_top1 = start == 1
            && self.spec.end == 1
            && !self.spec.output_rank
            && (self.append_only || self.spec.row_key.is_some());
        if fast_top1 {
            match (before.first(), after.first()) {
                (Some(b), Some(a)) if changed(b, a) => {
                    if !self.spec.drop_update_before {
                        push_ranked(out, RowKind::UpdateBefore, &b.values, 1);
                    }
                    push_ranked(out, RowKind::UpdateAfter, &a.values, 1);
                }
                (None, Some(a)) => push_ranked(out, RowKind::Insert, &a.values, 1),
                (Some(b), None) => push_ranked(out, RowKind::Delete, &b.values, 1),
                _ => {}
            }
            return;
        }
        if self.spec.output_rank || start > 1 {
            for i in 0..before.len().max(after.len()) {
                let rank = start + i;
                match (before.get(i), after.get(i)) {
                    (Some(b), Some(a)) if changed(b, a) => {
                        push_ranked(out, RowKind::UpdateBefore, &b.values, rank);
                        push_ranked(out, RowKind::UpdateAfter, &a.values, rank);
                    }
                    (None, Some(a)) => push_ranked(out, RowKind::Insert, &a.values, rank),
                    (Some(b), None) => push_ranked(out, RowKind::Delete, &b.values, rank),
                    _ => {}
                }
            }
            return;
        }
        for (i, b) in before.iter().enumerate() {
            if !after.iter().any(|a| a.id == b.id) {
                push_ranked(out, RowKind::Delete, &b.values, start + i);
            }
        }
        for (i, a) in after.iter().enumerate() {
            match before.iter().find(|b| b.id == a.id) {
                None => push_ranked(out, RowKind::Insert, &a.values, start + i),
                // A row updated in place (update-fast Top-N) stays kept.
                Some(b) if b.values != a.values => {
                    push_ranked(out, RowKind::UpdateBefore, &b.values, start + i);
                    push_ranked(out, RowKind::UpdateAfter, &a.values, start + i);
                }
                Some(_) => {}
            }
        }
    }
}

impl StreamOperator for TopNRank {
    fn checkpoint_unsupported(&self) -> Option<String> {
        None
    }

    fn snapshot(&mut self, _checkpoint: u64) -> Result<Vec<u8>, RuntimeError> {
        let mut out = KeyedSnapshotWriter::new();
        let mut w = StateWriter::new();
        w.u64(self.next_id);
        out.global(w.finish());
        let codec = &self.rows;
        self.partitions
            .write(&mut out, PARTITIONS, |rows, w| write_ranked(codec, rows, w))?;
        Ok(out.finish())
    }

    /// Row identities only order rows of one partition by arrival: merged subtasks go on
    /// after the largest.
    fn restore(&mut self, state: &[u8]) -> Result<(), RuntimeError> {
        let what = "a Top-N";
        let snapshot = KeyedSnapshot::parse(state, what)?;
        self.next_id = snapshot
            .globals(what, |r| Ok(r.u64()?))?
            .into_iter()
            .max()
            .unwrap_or(0);
        let (codec, sort) = (&self.rows, &self.sort);
        self.partitions
            .read(&snapshot, PARTITIONS, what, |r| read_ranked(codec, sort, r))
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
        let sorts = self.sort.encode(&batch.batch)?;
        let all: Vec<usize> = (0..self.width).collect();
        let mut emitted = RowsOut::new(self.schema.fields().len());
        for row in 0..batch.num_rows() {
            let key = keys.row(row).owned();
            let sort = sorts.row(row);
            let values = key_values(&batch.batch, &all, row)?;
            let (start, end) = (self.spec.start, self.spec.end);
            let append_only = self.append_only;
            let Some(rows) = (if batch.kind(row).is_addition() {
                Some(self.partitions.get_or_insert_with(&key, Vec::new))
            } else {
                self.partitions.get_mut(&key)
            }) else {
                continue; // retraction of an unknown partition
            };
            let before;
            let kind = batch.kind(row);
            if let (Some(row_key), true) = (&self.spec.row_key, kind.is_addition()) {
                // Update-fast: the row replaces the kept row of its key, keeping its identity;
                // it goes after the rows it ties with, as a newly arrived row.
                before = kept(rows, start, end);
                let replaced = self.pending.take();
                let found = if row_key.is_empty() {
                    replaced.and_then(|old| rows.iter().position(|r| r.values == old))
                } else {
                    rows.iter()
                        .position(|r| row_key.iter().all(|k| r.values.get(*k) == values.get(*k)))
                };
                let id = match found {
                    Some(old) => rows.remove(old).id,
                    None => {
                        self.next_id += 1;
                        self.next_id - 1
                    }
                };
                let position = rows.partition_point(|r| r.sort.row() <= sort);
                rows.insert(
                    position,
                    Ranked {
                        sort: sort.owned(),
                        id,
                        values,
                    },
                );
            } else if self.spec.row_key.is_some() && kind == RowKind::UpdateBefore {
                self.pending = Some(values); // the update-after replaces this row
                continue;
            } else if kind.is_addition() {
                let position = rows.partition_point(|r| r.sort.row() <= sort);
                if append_only && position >= end {
                    continue; // cannot enter the top
                }
                before = kept(rows, start, end);
                rows.insert(
                    position,
                    Ranked {
                        sort: sort.owned(),
                        id: self.next_id,
                        values,
                    },
                );
                self.next_id += 1;
                if append_only {
                    rows.truncate(end);
                }
            } else {
                let from = rows.partition_point(|r| r.sort.row() < sort);
                let to = rows.partition_point(|r| r.sort.row() <= sort);
                let Some(found) = (from..to).find(|i| rows[*i].values == values) else {
                    continue; // retraction of a row never kept
                };
                before = kept(rows, start, end);
                rows.remove(found);
            }
            let after = kept(rows, start, end);
            let empty = rows.is_empty();
            self.emit_changes(&before, &after, &mut emitted);
            if empty {
                self.partitions.remove(&key);
            }
        }
        emitted.emit(&self.schema, out)
    }
}

/// Builds Flink's `ChangelogNormalize` over an upsert (or duplicating CDC) changelog keyed by
/// `keys`: keep-last deduplication on processing time over a changelog input, as Flink runs it.
pub(super) fn changelog_normalize(
    keys: &[usize],
    input: &SchemaRef,
    schema: SchemaRef,
) -> Result<Box<dyn StreamOperator>, RuntimeError> {
    let types = field_types(input);
    Ok(Box::new(ProcTimeDedup {
        keep_last: true,
        on_changelog: true,
        partitions: KeyedState::new(keys, &types)?,
        rows: ScalarCodec::new(&types)?,
        width: types.len(),
        schema,
    }))
}

/// Deduplication on processing time: the first row of each key (`+I`), or the last one
/// (`+I`, then `-U` of the previous row and `+U` of the new one for every later row).
///
/// Over a changelog (`on_changelog`, Flink's `ChangelogNormalize`) it keeps the last row of each
/// key: an insert or update-after equal to the kept row emits nothing, a different one `-U`/`+U`
/// (or `+I` for a new key), a delete emits `-D` of the kept row (which is complete where an
/// upsert tombstone carries only the key) and forgets the key, and update-before rows are
/// dropped.
struct ProcTimeDedup {
    keep_last: bool,
    on_changelog: bool,
    partitions: KeyedState<Vec<ScalarValue>>,
    /// Encodes kept rows (for checkpoints).
    rows: ScalarCodec,
    width: usize,
    schema: SchemaRef,
}

impl StreamOperator for ProcTimeDedup {
    fn checkpoint_unsupported(&self) -> Option<String> {
        None
    }

    fn snapshot(&mut self, _checkpoint: u64) -> Result<Vec<u8>, RuntimeError> {
        let mut out = KeyedSnapshotWriter::new();
        let codec = &self.rows;
        self.partitions
            .write(&mut out, PARTITIONS, |values, w| codec.write(w, values))?;
        Ok(out.finish())
    }

    fn restore(&mut self, state: &[u8]) -> Result<(), RuntimeError> {
        let what = "a deduplication";
        let snapshot = KeyedSnapshot::parse(state, what)?;
        let codec = &self.rows;
        self.partitions
            .read(&snapshot, PARTITIONS, what, |r| codec.read(r))
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
        let all: Vec<usize> = (0..self.width).collect();
        let mut emitted = RowsOut::new(self.schema.fields().len());
        for row in 0..batch.num_rows() {
            let key = keys.row(row).owned();
            let values = key_values(&batch.batch, &all, row)?;
            if self.on_changelog {
                self.normalize(batch.kind(row), key, values, &mut emitted);
                continue;
            }
            match self.partitions.get_mut(&key) {
                None => {
                    push_ranked(&mut emitted, RowKind::Insert, &values, 1);
                    self.partitions.get_or_insert_with(&key, || values);
                }
                Some(previous) if self.keep_last => {
                    push_ranked(&mut emitted, RowKind::UpdateBefore, previous, 1);
                    push_ranked(&mut emitted, RowKind::UpdateAfter, &values, 1);
                    *previous = values;
                }
                Some(_) => {}
            }
        }
        emitted.emit(&self.schema, out)
    }
}

impl ProcTimeDedup {
    /// One change of a changelog input (Flink's `DropUpdateBefore` then
    /// `processLastRowOnChangelog`, without state TTL).
    fn normalize(
        &mut self,
        kind: RowKind,
        key: OwnedRow,
        values: Vec<ScalarValue>,
        emitted: &mut RowsOut,
    ) {
        match kind {
            RowKind::Insert | RowKind::UpdateAfter => match self.partitions.get_mut(&key) {
                None => {
                    push_ranked(emitted, RowKind::Insert, &values, 1);
                    self.partitions.get_or_insert_with(&key, || values);
                }
                Some(previous) if *previous == values => {}
                Some(previous) => {
                    push_ranked(emitted, RowKind::UpdateBefore, previous, 1);
                    push_ranked(emitted, RowKind::UpdateAfter, &values, 1);
                    *previous = values;
                }
            },
            RowKind::Delete => {
                if let Some(previous) = self.partitions.remove(&key) {
                    push_ranked(emitted, RowKind::Delete, &previous, 1);
                }
            }
            // Flink drops update-before rows ahead of the normalization (`DropUpdateBefore`):
            // the update-after that follows replaces the key's row.
            RowKind::UpdateBefore => {}
        }
    }
}

/// What event-time deduplication holds for one key.
enum DedupState {
    /// Keep-first: the earliest row so far, waiting for the watermark to pass its time.
    Pending(i64, Vec<ScalarValue>),
    /// Keep-first: the key's row was emitted; later rows are dropped.
    Emitted,
    /// Keep-last: the row emitted last, with its time.
    Last(i64, Vec<ScalarValue>),
}

/// Deduplication on event time. Keep-last emits at once: a row at the same or a later time than
/// the key's current row replaces it (`-U`/`+U`), an earlier one is dropped. Keep-first buffers
/// the earliest row of each key until the watermark passes its time and emits it once (`+I`);
/// rows at or below the watermark on arrival are late and dropped.
struct RowTimeDedup {
    keep_last: bool,
    time: usize,
    partitions: KeyedState<DedupState>,
    /// Encodes kept rows (for checkpoints).
    rows: ScalarCodec,
    /// Keep-first: keys waiting for the watermark, by time.
    timers: BTreeMap<i64, Vec<OwnedRow>>,
    watermark: i64,
    width: usize,
    schema: SchemaRef,
}

impl StreamOperator for RowTimeDedup {
    fn checkpoint_unsupported(&self) -> Option<String> {
        None
    }

    fn snapshot(&mut self, _checkpoint: u64) -> Result<Vec<u8>, RuntimeError> {
        let mut out = KeyedSnapshotWriter::new();
        let mut w = StateWriter::new();
        w.i64(self.watermark);
        out.global(w.finish());
        write_timers(&mut out, TIMERS, &self.timers)?;
        let codec = &self.rows;
        self.partitions.write(&mut out, PARTITIONS, |state, w| {
            match state {
                DedupState::Pending(ts, values) => {
                    w.u8(0);
                    w.i64(*ts);
                    codec.write(w, values)?;
                }
                DedupState::Emitted => w.u8(1),
                DedupState::Last(ts, values) => {
                    w.u8(2);
                    w.i64(*ts);
                    codec.write(w, values)?;
                }
            }
            Ok(())
        })?;
        Ok(out.finish())
    }

    fn keyed_snapshot(&self) -> bool {
        true
    }

    fn restore(&mut self, state: &[u8]) -> Result<(), RuntimeError> {
        let what = "a deduplication";
        let snapshot = KeyedSnapshot::parse(state, what)?;
        self.watermark = min_time(snapshot.globals(what, |r| Ok(r.i64()?))?);
        self.timers = read_timers(&snapshot, TIMERS, what, |b| self.partitions.key_of(b))?;
        let codec = &self.rows;
        self.partitions.read(&snapshot, PARTITIONS, what, |r| {
            Ok(match r.u8()? {
                0 => DedupState::Pending(r.i64()?, codec.read(r)?),
                1 => DedupState::Emitted,
                2 => DedupState::Last(r.i64()?, codec.read(r)?),
                tag => {
                    return Err(RuntimeError::new(format!(
                        "deduplication state has an unknown tag {tag}"
                    )))
                }
            })
        })
    }

    fn process(
        &mut self,
        _input: usize,
        batch: ChangeBatch,
        out: &mut Vec<Emit>,
    ) -> Result<(), RuntimeError> {
        let keys = self.partitions.keys(&batch.batch)?;
        let Some(time) = batch.batch.columns().get(self.time) else {
            return Err(RuntimeError::new("rowtime column out of range"));
        };
        let times = millis(time)?;
        let all: Vec<usize> = (0..self.width).collect();
        let mut emitted = RowsOut::new(self.schema.fields().len());
        for row in 0..batch.num_rows() {
            if times.is_null(row) {
                continue;
            }
            let ts = times.value(row);
            let key = keys.row(row).owned();
            if self.keep_last {
                let values = key_values(&batch.batch, &all, row)?;
                match self.partitions.get_mut(&key) {
                    Some(DedupState::Last(previous_ts, previous)) => {
                        if ts >= *previous_ts {
                            push_ranked(&mut emitted, RowKind::UpdateBefore, previous, 1);
                            push_ranked(&mut emitted, RowKind::UpdateAfter, &values, 1);
                            *previous_ts = ts;
                            *previous = values;
                        }
                    }
                    _ => {
                        push_ranked(&mut emitted, RowKind::Insert, &values, 1);
                        *self
                            .partitions
                            .get_or_insert_with(&key, || DedupState::Emitted) =
                            DedupState::Last(ts, values);
                    }
                }
                continue;
            }
            if ts <= self.watermark {
                continue; // late
            }
            let replace = match self.partitions.get_mut(&key) {
                None => true,
                Some(DedupState::Pending(pending_ts, _)) => ts < *pending_ts,
                Some(_) => false,
            };
            if replace {
                let values = key_values(&batch.batch, &all, row)?;
                let state = self
                    .partitions
                    .get_or_insert_with(&key, || DedupState::Emitted);
                *state = DedupState::Pending(ts, values);
                self.timers.entry(ts).or_default().push(key);
            }
        }
        emitted.emit(&self.schema, out)
    }

    fn watermark(&mut self, watermark: i64, out: &mut Vec<Emit>) -> Result<(), RuntimeError> {
        self.watermark = watermark;
        let mut emitted = RowsOut::new(self.schema.fields().len());
        while let Some(entry) = self.timers.first_entry() {
            if *entry.key() > watermark {
                break;
            }
            let ts = *entry.key();
            for key in entry.remove() {
                if let Some(state) = self.partitions.get_mut(&key) {
                    if matches!(state, DedupState::Pending(t, _) if *t == ts) {
                        if let DedupState::Pending(_, values) =
                            std::mem::replace(state, DedupState::Emitted)
                        {
                            push_ranked(&mut emitted, RowKind::Insert, &values, 1);
                        }
                    }
                }
            }
        }
        emitted.emit(&self.schema, out)?;
        out.push(Emit::Watermark(watermark));
        Ok(())
    }
}

/// Window Top-N: per window and partition the best `end` rows are kept; when the watermark
/// passes the window's end its ranks `start..=end` are emitted once (`+I`). Rows of windows
/// that already fired are late and dropped.
struct WindowRank {
    spec: RankSpec,
    sort: SortKeys,
    window_end: usize,
    latest_first: bool,
    /// Encodes the partition keys (the windows hold the rows).
    partitions: KeyedState<()>,
    /// Encodes kept rows (for checkpoints).
    rows: ScalarCodec,
    /// Per window end, per partition key: the kept rows.
    windows: BTreeMap<i64, HashMap<OwnedRow, Vec<Ranked>>>,
    watermark: i64,
    width: usize,
    schema: SchemaRef,
}

impl StreamOperator for WindowRank {
    fn checkpoint_unsupported(&self) -> Option<String> {
        None
    }

    fn snapshot(&mut self, _checkpoint: u64) -> Result<Vec<u8>, RuntimeError> {
        let mut out = KeyedSnapshotWriter::new();
        let mut w = StateWriter::new();
        w.i64(self.watermark);
        out.global(w.finish());
        for (end, partitions) in &self.windows {
            for (key, rows) in partitions {
                out.entry(PARTITIONS, key.row().data(), |w| {
                    w.i64(*end);
                    write_ranked(&self.rows, rows, w)
                })?;
            }
        }
        Ok(out.finish())
    }

    fn restore(&mut self, state: &[u8]) -> Result<(), RuntimeError> {
        let what = "a window Top-N";
        let snapshot = KeyedSnapshot::parse(state, what)?;
        self.watermark = min_time(snapshot.globals(what, |r| Ok(r.i64()?))?);
        self.windows.clear();
        let windows = &mut self.windows;
        let (keys, rows, sort) = (&self.partitions, &self.rows, &self.sort);
        snapshot.read_table(PARTITIONS, what, |key, r| {
            let end = r.i64()?;
            windows
                .entry(end)
                .or_default()
                .insert(keys.key_of(key), read_ranked(rows, sort, r)?);
            Ok(())
        })
    }

    fn keyed_snapshot(&self) -> bool {
        true
    }

    fn process(
        &mut self,
        _input: usize,
        batch: ChangeBatch,
        _out: &mut Vec<Emit>,
    ) -> Result<(), RuntimeError> {
        let keys = self.partitions.keys(&batch.batch)?;
        let sorts = self.sort.encode(&batch.batch)?;
        let Some(end_column) = batch.batch.columns().get(self.window_end) else {
            return Err(RuntimeError::new("window_end column out of range"));
        };
        let ends = millis(end_column)?;
        let all: Vec<usize> = (0..self.width).collect();
        for row in 0..batch.num_rows() {
            if ends.is_null(row) {
                continue;
            }
            let end = ends.value(row);
            if end.saturating_sub(1) <= self.watermark {
                continue; // late: the window already fired
            }
            let sort = sorts.row(row);
            let rows = self
                .windows
                .entry(end)
                .or_default()
                .entry(keys.row(row).owned())
                .or_default();
            // Ties rank in arrival order, or latest first for keep-last deduplication.
            let position = if self.latest_first {
                rows.partition_point(|r| r.sort.row() < sort)
            } else {
                rows.partition_point(|r| r.sort.row() <= sort)
            };
            if position >= self.spec.end {
                continue;
            }
            let values = key_values(&batch.batch, &all, row)?;
            rows.insert(
                position,
                Ranked {
                    sort: sort.owned(),
                    id: 0,
                    values,
                },
            );
            rows.truncate(self.spec.end);
        }
        Ok(())
    }

    fn watermark(&mut self, watermark: i64, out: &mut Vec<Emit>) -> Result<(), RuntimeError> {
        self.watermark = watermark;
        let mut emitted = RowsOut::new(self.schema.fields().len());
        while let Some(entry) = self.windows.first_entry() {
            if entry.key().saturating_sub(1) > watermark {
                break;
            }
            for rows in entry.remove().into_values() {
                let skip = self.spec.start.saturating_sub(1);
                for (i, r) in rows.iter().enumerate().skip(skip) {
                    push_ranked(&mut emitted, RowKind::Insert, &r.values, i + 1);
                }
            }
        }
        emitted.emit(&self.schema, out)?;
        out.push(Emit::Watermark(watermark));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{Int32Array, StringArray, TimestampMillisecondArray};
    use arrow::datatypes::{Field, Schema, TimeUnit};
    use riffle_plan::SortKey;

    use super::*;

    fn spec(end: usize, output_rank: bool, strategy: RankStrategy) -> RankSpec {
        RankSpec {
            partition: vec![0],
            order: vec![SortKey {
                column: 1,
                ascending: false,
                nulls_first: false,
            }],
            start: 1,
            end,
            output_rank,
            strategy,
            row_key: None,
            drop_update_before: false,
        }
    }

    fn schemas() -> (SchemaRef, SchemaRef) {
        let fields = vec![
            Field::new("k", DataType::Utf8, true),
            Field::new("v", DataType::Int32, true),
            Field::new("ts", DataType::Timestamp(TimeUnit::Millisecond, None), true),
        ];
        let input = Arc::new(Schema::new(fields.clone()));
        let mut out = fields;
        out.push(Field::new("rn", DataType::Int64, true));
        (input, Arc::new(Schema::new(out)))
    }

    /// Rows `(key, value, time)` with their kinds.
    fn batch(rows: &[(RowKind, &str, i32, i64)]) -> ChangeBatch {
        let (input, _) = schemas();
        let columns: Vec<ArrayRef> = vec![
            Arc::new(StringArray::from(
                rows.iter().map(|r| r.1).collect::<Vec<_>>(),
            )),
            Arc::new(Int32Array::from(
                rows.iter().map(|r| r.2).collect::<Vec<_>>(),
            )),
            Arc::new(TimestampMillisecondArray::from(
                rows.iter().map(|r| r.3).collect::<Vec<_>>(),
            )),
        ];
        let batch = RecordBatch::try_new(input, columns).expect("batch");
        ChangeBatch {
            batch,
            kinds: Some(rows.iter().map(|r| r.0).collect()),
        }
    }

    /// The emitted rows as `kind key value rank` lines.
    fn lines(out: &[Emit]) -> Vec<String> {
        let mut lines = Vec::new();
        for e in out {
            let Emit::Data(b) = e else { continue };
            for row in 0..b.num_rows() {
                let value = |c: usize| {
                    ScalarValue::try_from_array(b.batch.column(c).as_ref(), row)
                        .expect("value")
                        .to_string()
                };
                lines.push(format!(
                    "{} {} {} {}",
                    b.kind(row).short(),
                    value(0),
                    value(1),
                    value(3)
                ));
            }
        }
        lines
    }

    fn run(op: &mut dyn StreamOperator, rows: &[(RowKind, &str, i32, i64)]) -> Vec<String> {
        let mut out = Vec::new();
        op.process(0, batch(rows), &mut out).expect("process");
        lines(&out)
    }

    const I: RowKind = RowKind::Insert;

    #[test]
    fn top_n_with_rank_number_updates_every_shifted_rank() {
        let (input, output) = schemas();
        let mut op =
            create(&spec(2, true, RankStrategy::TopN), &input, output, true).expect("operator");
        let got = run(
            op.as_mut(),
            &[
                (I, "a", 50, 0),
                (I, "a", 65, 0),
                (I, "b", 1, 0),
                (I, "a", 80, 0),
            ],
        );
        assert_eq!(
            got,
            [
                "+I a 50 1",
                "-U a 50 1",
                "+U a 65 1",
                "+I a 50 2",
                "+I b 1 1",
                "-U a 65 1",
                "+U a 80 1",
                "-U a 50 2",
                "+U a 65 2",
            ]
        );
    }

    #[test]
    fn update_fast_top_n_updates_a_kept_row_in_place() {
        let (input, output) = schemas();
        // Rows keyed by (k, ts); with an empty key the update-before names the replaced row.
        for row_key in [vec![0, 2], vec![]] {
            let mut spec = spec(2, false, RankStrategy::TopN);
            spec.row_key = Some(row_key);
            let mut op = create(&spec, &input, output.clone(), false).expect("operator");
            let (ub, ua) = (RowKind::UpdateBefore, RowKind::UpdateAfter);
            let got = run(
                op.as_mut(),
                &[
                    (I, "a", 1, 1),
                    (I, "a", 1, 2),
                    (I, "a", 1, 3),
                    (ub, "a", 1, 3),
                    (ua, "a", 2, 3),
                    (ub, "a", 1, 1),
                    (ua, "a", 2, 1),
                ],
            );
            assert_eq!(
                got,
                ["+I a 1 1", "+I a 1 2", "-D a 1 2", "+I a 2 1", "-U a 1 2", "+U a 2 2",]
            );
        }
    }

    #[test]
    fn top_one_over_an_insert_only_input_updates_the_kept_row() {
        let (input, output) = schemas();
        for (drop_update_before, expected) in [
            (false, &["+I a 5 1", "-U a 5 1", "+U a 7 1"][..]),
            (true, &["+I a 5 1", "+U a 7 1"][..]),
        ] {
            let mut spec = spec(1, false, RankStrategy::TopN);
            spec.drop_update_before = drop_update_before;
            let mut op = create(&spec, &input, output.clone(), true).expect("operator");
            let got = run(
                op.as_mut(),
                &[(I, "a", 5, 0), (I, "a", 3, 0), (I, "a", 7, 0)],
            );
            assert_eq!(got, expected);
        }
    }

    #[test]
    fn top_n_without_rank_number_deletes_the_row_pushed_out() {
        let (input, output) = schemas();
        let mut op =
            create(&spec(2, false, RankStrategy::TopN), &input, output, true).expect("operator");
        let got = run(
            op.as_mut(),
            &[
                (I, "a", 50, 0),
                (I, "a", 65, 0),
                (I, "a", 50, 0),
                (I, "a", 80, 0),
            ],
        );
        assert_eq!(got, ["+I a 50 1", "+I a 65 1", "-D a 50 2", "+I a 80 1"]);
    }

    #[test]
    fn changelog_normalize_drops_repeats_and_deletes_the_kept_row() {
        let (input, output) = schemas();
        let mut op = changelog_normalize(&[0], &input, output).expect("operator");
        let got = run(
            op.as_mut(),
            &[
                (I, "a", 1, 0),
                (I, "a", 1, 0),
                (RowKind::UpdateAfter, "a", 2, 0),
                (I, "b", 7, 0),
                // A tombstone carries the key only: the kept row is deleted.
                (RowKind::Delete, "a", 0, 0),
                (RowKind::Delete, "a", 0, 0),
                // A repeated CDC update: its update-before is dropped, its update-after equals
                // the kept row.
                (RowKind::UpdateBefore, "b", 7, 0),
                (RowKind::UpdateAfter, "b", 7, 0),
                (I, "a", 3, 0),
            ],
        );
        assert_eq!(
            got,
            ["+I a 1 1", "-U a 1 1", "+U a 2 1", "+I b 7 1", "-D a 2 1", "+I a 3 1"]
        );
    }

    #[test]
    fn retracting_a_kept_row_brings_the_next_one_in() {
        let (input, output) = schemas();
        let mut op =
            create(&spec(1, false, RankStrategy::TopN), &input, output, false).expect("operator");
        run(op.as_mut(), &[(I, "a", 50, 0), (I, "a", 70, 0)]);
        let got = run(op.as_mut(), &[(RowKind::UpdateBefore, "a", 70, 0)]);
        assert_eq!(got, ["-D a 70 1", "+I a 50 1"]);
    }

    #[test]
    fn keep_first_on_event_time_waits_for_the_watermark_and_drops_late_rows() {
        let (input, output) = schemas();
        let strategy = RankStrategy::RowTimeDedup {
            keep_last: false,
            time: 2,
        };
        let mut op = create(&spec(1, false, strategy), &input, output, true).expect("operator");
        assert!(run(op.as_mut(), &[(I, "a", 1, 5_000), (I, "a", 2, 3_000)]).is_empty());
        let mut out = Vec::new();
        op.watermark(4_000, &mut out).expect("watermark");
        assert_eq!(lines(&out), ["+I a 2 1"]);
        // At or below the watermark: late; after the key's first row: dropped.
        assert!(run(op.as_mut(), &[(I, "b", 3, 4_000), (I, "a", 4, 9_000)]).is_empty());
        let mut out = Vec::new();
        op.watermark(i64::MAX, &mut out).expect("watermark");
        assert!(lines(&out).is_empty());
    }

    #[test]
    fn keep_last_on_event_time_ignores_older_rows() {
        let (input, output) = schemas();
        let strategy = RankStrategy::RowTimeDedup {
            keep_last: true,
            time: 2,
        };
        let mut op = create(&spec(1, false, strategy), &input, output, true).expect("operator");
        let got = run(
            op.as_mut(),
            &[(I, "a", 1, 5_000), (I, "a", 2, 3_000), (I, "a", 3, 5_000)],
        );
        assert_eq!(got, ["+I a 1 1", "-U a 1 1", "+U a 3 1"]);
    }

    use super::super::resume::{assert_rescales_anywhere, assert_resumes_anywhere, Step};

    const U: RowKind = RowKind::UpdateBefore;

    /// Steps over the test schema: rows (as `batch` takes them) or a watermark.
    fn rows(rows: &[(RowKind, &str, i32, i64)]) -> Step {
        Step::Rows(0, batch(rows))
    }

    fn resumes(strategy: RankStrategy, output_rank: bool, append_only: bool, steps: &[Step]) {
        let make = || {
            let (input, output) = schemas();
            create(&spec(2, output_rank, strategy), &input, output, append_only).expect("operator")
        };
        let out = assert_resumes_anywhere(&make, steps);
        assert_rescales_anywhere(&make, steps, &[&[0]]);
        assert!(out.iter().any(|l| !l.starts_with("WM")), "{out:?}");
    }

    #[test]
    fn every_ranking_operator_resumes_from_a_snapshot() {
        let updating = [
            rows(&[(I, "a", 50, 1), (I, "a", 65, 2), (I, "b", 1, 3)]),
            rows(&[(I, "a", 80, 4), (U, "a", 65, 2)]),
            rows(&[(I, "b", 7, 5), (U, "a", 80, 4), (I, "a", 10, 6)]),
        ];
        resumes(RankStrategy::TopN, true, false, &updating);
        resumes(RankStrategy::TopN, false, false, &updating);
        let appends = [
            rows(&[(I, "a", 50, 1), (I, "a", 65, 2), (I, "b", 1, 3)]),
            Step::Watermark(2),
            rows(&[(I, "a", 80, 4), (I, "b", 2, 1), (I, "c", 3, 9)]),
            Step::Watermark(5),
            rows(&[(I, "b", 9, 7), (I, "a", 90, 3), (I, "c", 4, 8)]),
            Step::Watermark(20),
        ];
        resumes(RankStrategy::TopN, true, true, &appends);
        for keep_last in [false, true] {
            resumes(
                RankStrategy::ProcTimeDedup { keep_last },
                true,
                true,
                &appends,
            );
            resumes(
                RankStrategy::RowTimeDedup { keep_last, time: 2 },
                true,
                true,
                &appends,
            );
        }
        for latest_first in [false, true] {
            resumes(
                RankStrategy::Window {
                    window_end: 2,
                    latest_first,
                },
                true,
                true,
                &appends,
            );
        }
    }
}
