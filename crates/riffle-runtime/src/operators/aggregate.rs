//! Window aggregation (fires per window on the watermark) and unbounded group aggregation
//! (emits a changelog per input row).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray};
use arrow::datatypes::{DataType, SchemaRef};
use arrow::record_batch::{RecordBatch, RecordBatchOptions};
use arrow::row::{OwnedRow, RowConverter};
use datafusion::common::hash_map::{Entry, EntryRef};
use datafusion::common::{HashMap as FastMap, ScalarValue};
use riffle_connectors::{ChangeBatch, RowKind};
use riffle_plan::window::{next_window_end, window_start};
use riffle_plan::{AggregateCall, LocalZone, SharedSlices, SliceTriggers, WindowSpec};

use super::{millis, Emit, StreamOperator};
use riffle_jvm::JavaAggregateFunction;
use riffle_udf::host::NativeAggregate;

use crate::accumulator::Accumulator;
use crate::exchange::key_converter;
use riffle_connectors::snapshot::{StateReader, StateWriter};

use super::group_store::{GroupStore, StateContext};
use crate::keyed_snapshot::{min_time, KeyedSnapshot, KeyedSnapshotWriter};
use crate::state_codec::ScalarCodec;
use crate::task::RuntimeError;

/// The aggregate calls of an operator with their argument and result types.
struct Calls {
    calls: Vec<AggregateCall>,
    arg_types: Vec<Option<DataType>>,
    out_types: Vec<DataType>,
    /// The function of each user-defined aggregate call.
    user: Vec<Option<UserFunction>>,
    /// Whether rows are only ever added (window aggregations), which lets `MIN`/`MAX` keep
    /// just the extreme value.
    append_only: bool,
}

/// A user-defined aggregate function, loaded.
enum UserFunction {
    Java(Arc<JavaAggregateFunction>),
    Rust(Arc<NativeAggregate>),
}

impl UserFunction {
    fn load(call: &riffle_plan::UserAggregate) -> Result<Self, RuntimeError> {
        if call.language == riffle_plan::rust_udf::RUST {
            let library = call.jars.first().map(String::as_str).unwrap_or_default();
            return NativeAggregate::open(library, &call.class)
                .map(|f| Self::Rust(Arc::new(f)))
                .map_err(RuntimeError::new);
        }
        JavaAggregateFunction::resolve(&call.name, &call.class, &call.jars, &call.arg_types)
            .map(|f| Self::Java(Arc::new(f)))
            .map_err(|e| RuntimeError::new(e.to_string()))
    }

    fn accumulator(&self) -> Result<Accumulator, RuntimeError> {
        match self {
            Self::Java(f) => Accumulator::java(f.clone()),
            Self::Rust(f) => Accumulator::rust(f.clone()),
        }
    }
}

impl Calls {
    fn new(
        calls: &[AggregateCall],
        input: &SchemaRef,
        output: &SchemaRef,
        keys: usize,
    ) -> Result<Self, RuntimeError> {
        let mut arg_types = Vec::new();
        let mut out_types = Vec::new();
        for (i, call) in calls.iter().enumerate() {
            arg_types.push(match call.arg {
                Some(a) => Some(
                    input
                        .fields()
                        .get(a)
                        .map(|f| f.data_type().clone())
                        .ok_or_else(|| RuntimeError::new("aggregate argument out of range"))?,
                ),
                None => None,
            });
            out_types.push(
                output
                    .fields()
                    .get(keys + i)
                    .map(|f| f.data_type().clone())
                    .ok_or_else(|| RuntimeError::new("aggregate output out of range"))?,
            );
        }
        let user = calls
            .iter()
            .map(|c| c.user.as_ref().map(UserFunction::load).transpose())
            .collect::<Result<_, _>>()?;
        Ok(Self {
            calls: calls.to_vec(),
            arg_types,
            out_types,
            user,
            append_only: false,
        })
    }

    /// The same calls over an input whose rows are only ever added.
    fn appending(mut self) -> Self {
        self.append_only = true;
        self
    }

    fn fresh(&self) -> Result<Vec<Accumulator>, RuntimeError> {
        let mut accs = Vec::with_capacity(self.calls.len());
        self.push_fresh(&mut accs)?;
        Ok(accs)
    }

    /// Appends a fresh accumulator per call to `accs`.
    fn push_fresh(&self, accs: &mut Vec<Accumulator>) -> Result<(), RuntimeError> {
        for ((c, t), user) in self.calls.iter().zip(&self.arg_types).zip(&self.user) {
            accs.push(match user {
                Some(f) => f.accumulator()?,
                None => {
                    let acc = Accumulator::new(c.function, c.distinct, t.as_ref())
                        .with_separator(c.separator.as_deref());
                    if self.append_only {
                        acc.append_only()
                    } else {
                        acc
                    }
                }
            });
        }
        Ok(())
    }

    /// Applies row `row` of `batch` to `accs` (adding or retracting).
    fn update(
        &self,
        accs: &mut [Accumulator],
        batch: &RecordBatch,
        row: usize,
        add: bool,
    ) -> Result<(), RuntimeError> {
        for (acc, call) in accs.iter_mut().zip(&self.calls) {
            if let Some(f) = call.filter {
                let passes = batch
                    .columns()
                    .get(f)
                    .and_then(|c| c.as_boolean_opt())
                    .is_some_and(|m| m.is_valid(row) && m.value(row));
                if !passes {
                    continue;
                }
            }
            if let Some(user) = &call.user {
                let args: Vec<ArrayRef> = user
                    .args
                    .iter()
                    .filter_map(|a| batch.columns().get(*a).cloned())
                    .collect();
                acc.update_user(&args, row, add)?;
                continue;
            }
            let arg: Option<&ArrayRef> = call.arg.and_then(|a| batch.columns().get(a));
            acc.update(arg, row, add)?;
        }
        Ok(())
    }

    /// Why the accumulators cannot be checkpointed: a Java aggregate's accumulator is a Java
    /// object Riffle cannot serialize (a Rust aggregate's is a row of values, which it can).
    fn checkpoint_unsupported(&self) -> Option<String> {
        let java = self
            .calls
            .iter()
            .filter_map(|c| c.user.as_ref())
            .find(|u| u.language != riffle_plan::rust_udf::RUST);
        java.map(|user| {
            format!(
                "its Java aggregate function {} keeps its accumulators as Java objects, which cannot be checkpointed",
                user.name
            )
        })
    }

    /// Codecs of the calls' argument values (for checkpoints).
    fn arg_codecs(&self) -> Result<Vec<Option<ScalarCodec>>, RuntimeError> {
        self.arg_types
            .iter()
            .map(|t| {
                t.as_ref()
                    .map(|t| ScalarCodec::new(std::slice::from_ref(t)))
                    .transpose()
            })
            .collect()
    }

    fn write_accs(
        codecs: &[Option<ScalarCodec>],
        accs: &[Accumulator],
        w: &mut StateWriter,
    ) -> Result<(), RuntimeError> {
        for (acc, codec) in accs.iter().zip(codecs) {
            acc.write_state(w, codec.as_ref())?;
        }
        Ok(())
    }

    fn read_accs(
        &self,
        codecs: &[Option<ScalarCodec>],
        r: &mut StateReader<'_>,
    ) -> Result<Vec<Accumulator>, RuntimeError> {
        let mut accs = self.fresh()?;
        for (acc, codec) in accs.iter_mut().zip(codecs) {
            acc.read_state(r, codec.as_ref())?;
        }
        Ok(accs)
    }

    fn values(&self, accs: &[Accumulator]) -> Result<Vec<ScalarValue>, RuntimeError> {
        accs.iter()
            .zip(&self.out_types)
            .map(|(a, t)| a.value(t))
            .collect()
    }
}

/// Collects output rows column by column.
pub(super) struct RowsOut {
    columns: Vec<Vec<ScalarValue>>,
    kinds: Vec<RowKind>,
}

impl RowsOut {
    pub(super) fn new(width: usize) -> Self {
        Self {
            columns: vec![Vec::new(); width],
            kinds: Vec::new(),
        }
    }

    pub(super) fn push(&mut self, kind: RowKind, key: &[ScalarValue], values: &[ScalarValue]) {
        for (column, v) in self.columns.iter_mut().zip(key.iter().chain(values)) {
            column.push(v.clone());
        }
        self.kinds.push(kind);
    }

    pub(super) fn emit(self, schema: &SchemaRef, out: &mut Vec<Emit>) -> Result<(), RuntimeError> {
        if self.kinds.is_empty() {
            return Ok(());
        }
        let mut arrays = Vec::with_capacity(self.columns.len());
        for (column, field) in self.columns.into_iter().zip(schema.fields()) {
            let array = ScalarValue::iter_to_array(column)?;
            arrays.push(super::of_field_type(array, field)?);
        }
        let options = RecordBatchOptions::new().with_row_count(Some(self.kinds.len()));
        let batch = RecordBatch::try_new_with_options(schema.clone(), arrays, &options)?;
        let kinds = if self.kinds.iter().all(|k| *k == RowKind::Insert) {
            None
        } else {
            Some(Arc::from(self.kinds))
        };
        out.push(Emit::Data(ChangeBatch { batch, kinds }));
        Ok(())
    }
}

/// The key scalars of row `row`.
pub(super) fn key_values(
    batch: &RecordBatch,
    keys: &[usize],
    row: usize,
) -> Result<Vec<ScalarValue>, RuntimeError> {
    keys.iter()
        .map(|k| match batch.columns().get(*k) {
            Some(c) => Ok(ScalarValue::try_from_array(c.as_ref(), row)?),
            None => Err(RuntimeError::new("key column out of range")),
        })
        .collect()
}

/// The key columns of `batch`; a constant column when there are no keys (global aggregation),
/// so that every row gets the same (empty) key.
pub(crate) fn key_columns(batch: &RecordBatch, keys: &[usize]) -> Vec<ArrayRef> {
    if keys.is_empty() {
        return vec![Arc::new(arrow::array::Int8Array::from(vec![
            0i8;
            batch
                .num_rows()
        ]))];
    }
    keys.iter()
        .filter_map(|k| batch.columns().get(*k).cloned())
        .collect()
}

/// `rows` copies of the time `millis` (milliseconds, in the time base of the window bounds)
/// as an array of the timestamp type `data_type`.
fn time_column(millis: i64, rows: usize, data_type: &DataType) -> Result<ArrayRef, RuntimeError> {
    let DataType::Timestamp(_, zone) = data_type else {
        return Err(RuntimeError::new(format!(
            "window bound column of type {data_type} is not a timestamp"
        )));
    };
    let column = arrow::array::TimestampMillisecondArray::from(vec![millis; rows])
        .with_timezone_opt(zone.clone());
    Ok(arrow::compute::cast(&column, data_type)?)
}

/// The column types of `schema`.
pub(super) fn field_types(schema: &SchemaRef) -> Vec<DataType> {
    schema
        .fields()
        .iter()
        .map(|f| f.data_type().clone())
        .collect()
}

/// The table of a window or session aggregation's keyed snapshot.
const GROUPS: u8 = 0;

/// The converter of a key made of `types` (see [`key_columns`] for the empty key).
pub(super) fn group_converter(types: &[DataType]) -> Result<RowConverter, RuntimeError> {
    if types.is_empty() {
        return key_converter(&[DataType::Int8]);
    }
    key_converter(types)
}

/// The accumulators of one group of a window (its key is the group's encoded key, decoded for
/// a whole window when it fires).
struct Group {
    accs: Vec<Accumulator>,
}

/// Aggregates per key and window; a window fires when the watermark reaches `window_end - 1`;
/// rows of windows that already fired are dropped as late.
pub struct WindowAggregate {
    keys: Vec<usize>,
    /// The group key columns a group's encoded key holds: every key, except the window bounds
    /// when sharing slices (they are the window's).
    encoded: Vec<usize>,
    /// The types of the `encoded` columns.
    key_types: Vec<DataType>,
    window_end: usize,
    calls: Calls,
    converter: RowConverter,
    /// Groups per window end (per slice end when sharing slices), keyed by the encoded group
    /// key (a fast non-keyed hasher: the keys are the job's own data, hashed once per row).
    windows: BTreeMap<i64, FastMap<Vec<u8>, Group>>,
    /// Set when the input carries rows per slice (see [`SharedSlices`]).
    slicing: Option<Slicing>,
    watermark: i64,
    schema: SchemaRef,
    clock: WindowClock,
    /// Rows not yet put into their windows (window TVFs only; see [`SliceBuffer`]).
    buffer: Option<SliceBuffer>,
}

/// The slices of a window aggregation that shares them (see [`SharedSlices`]).
#[derive(Debug, Clone, Copy)]
struct Slicing {
    window: WindowSpec,
    slice: i64,
    size: i64,
    slide: i64,
    /// Positions of `window_start` and `window_end` among the group keys.
    bounds: [usize; 2],
}

impl Slicing {
    /// The end of the first window holding the slice ending at `end`.
    fn first_window(&self, end: i64) -> i64 {
        next_window_end(&self.window, end.saturating_sub(1)).unwrap_or(i64::MAX)
    }

    /// The end of the last window holding the slice ending at `end`.
    fn last_window(&self, end: i64) -> i64 {
        next_window_end(&self.window, end - self.slice + self.size)
            .map_or(i64::MAX, |next| next - self.slide)
    }
}

/// Flink's slicing window operator (window TVF aggregations) buffers incoming rows and puts them
/// into their windows only when the watermark reaches its next trigger point (a slice end, see
/// [`SliceTriggers`]) and the buffer holds a row of a window due to fire. A window gets its timer
/// when rows are put into it, and only if the watermark before the one that flushed the buffer
/// had not passed it yet: rows flushed into a window that was already due are lost. In UTC the
/// trigger points are the windows' ends, so nothing is lost; for local windows in a zone without
/// daylight saving, Flink computes the trigger points on UTC instants, which are not the local
/// windows' ends, so the watermark can pass a window's end between two trigger points.
struct SliceBuffer {
    triggers: SliceTriggers,
    /// The zone trigger points are aligned in when it observes daylight saving.
    zone: Option<LocalZone>,
    /// The watermark at which the buffer is flushed next.
    next_trigger: i64,
    /// Buffered rows: a batch and its (row, window end) pairs, in arrival order.
    rows: Vec<(RecordBatch, Vec<(usize, i64)>)>,
    /// The earliest watermark at which a buffered row's window fires.
    first_due: i64,
}

impl SliceBuffer {
    /// The first trigger point after `watermark` (Flink's
    /// `TimeWindowUtil.getNextTriggerWatermark`).
    fn next_trigger(&self, watermark: i64) -> i64 {
        if watermark == i64::MAX {
            return watermark;
        }
        let SliceTriggers { length, offset } = self.triggers;
        let mut current = watermark;
        loop {
            let trigger = match self.zone {
                Some(zone) => {
                    let start = window_start(zone.to_local(current), offset, length);
                    zone.to_utc(start.saturating_add(length - 1))
                }
                None => window_start(current, offset, length).saturating_add(length - 1),
            };
            if trigger > watermark || trigger == i64::MAX {
                return trigger;
            }
            current = current.max(trigger).saturating_add(1);
        }
    }
}

/// When a window fires: once the watermark reaches its last millisecond, which for windows laid
/// out in a session time zone (`TIMESTAMP_LTZ` time attributes) is that local time's instant.
#[derive(Debug, Clone, Copy)]
pub struct WindowClock(pub Option<LocalZone>);

impl WindowClock {
    /// The watermark at which the window ending at `end` fires.
    fn fires_at(self, end: i64) -> i64 {
        let last = end.saturating_sub(1);
        match self.0 {
            Some(zone) if end != i64::MAX => zone.to_utc(last),
            _ => last,
        }
    }
}

impl WindowAggregate {
    /// Builds the operator.
    pub fn new(
        keys: &[usize],
        window_end: usize,
        calls: &[AggregateCall],
        input: &SchemaRef,
        schema: SchemaRef,
        clock: WindowClock,
        slices: Option<SharedSlices>,
    ) -> Result<Self, RuntimeError> {
        let slicing = match slices {
            Some(shared) => {
                let WindowSpec::Hop { slide, size, .. } = shared.window else {
                    return Err(RuntimeError::new(
                        "only hopping windows share slices in a window aggregation",
                    ));
                };
                let position = |column: usize| {
                    keys.iter().position(|k| *k == column).ok_or_else(|| {
                        RuntimeError::new("a window bound of shared slices is not a group key")
                    })
                };
                Some(Slicing {
                    window: shared.window,
                    slice: shared.slice.max(1),
                    size,
                    slide,
                    bounds: [position(shared.window_start)?, position(window_end)?],
                })
            }
            None => None,
        };
        let encoded: Vec<usize> = keys
            .iter()
            .enumerate()
            .filter(|(i, _)| slicing.is_none_or(|s| !s.bounds.contains(i)))
            .map(|(_, k)| *k)
            .collect();
        let types: Vec<DataType> = encoded
            .iter()
            .filter_map(|k| input.fields().get(*k).map(|f| f.data_type().clone()))
            .collect();
        Ok(Self {
            keys: keys.to_vec(),
            encoded,
            slicing,
            window_end,
            calls: Calls::new(calls, input, &schema, keys.len())?.appending(),
            converter: group_converter(&types)?,
            key_types: types,
            windows: BTreeMap::new(),
            watermark: i64::MIN,
            schema,
            clock,
            buffer: None,
        })
    }

    /// Buffers rows as Flink's slicing window operator does (see [`SliceBuffer`]).
    pub fn buffered(mut self, triggers: SliceTriggers) -> Self {
        self.buffer = Some(SliceBuffer {
            triggers: SliceTriggers {
                length: triggers.length.max(1),
                ..triggers
            },
            zone: self.clock.0.filter(|z| z.observes_daylight_saving()),
            next_trigger: i64::MIN,
            rows: Vec::new(),
            first_due: i64::MAX,
        });
        self
    }

    /// Puts row `row` of `batch` (whose group key is `key`) into the window ending at `end`.
    fn accumulate(
        &mut self,
        batch: &RecordBatch,
        row: usize,
        key: &[u8],
        end: i64,
    ) -> Result<(), RuntimeError> {
        let groups = self.windows.entry(end).or_default();
        // Look up by borrowed bytes; allocate the key only for a new group.
        let group = match groups.entry_ref(key) {
            EntryRef::Occupied(e) => e.into_mut(),
            EntryRef::Vacant(e) => e.insert(Group {
                accs: self.calls.fresh()?,
            }),
        };
        self.calls.update(&mut group.accs, batch, row, true)
    }

    /// The `encoded` key columns of the groups whose encoded keys are `rows` (none for a
    /// global aggregation, whose encoded key is a constant).
    fn decode_keys(&self, rows: &[&[u8]]) -> Result<Vec<ArrayRef>, RuntimeError> {
        if self.encoded.is_empty() {
            return Ok(Vec::new());
        }
        let parser = self.converter.parser();
        Ok(self
            .converter
            .convert_rows(rows.iter().map(|r| parser.parse(r)))?)
    }

    /// The watermark at which the first window holding rows of the window (or slice) ending
    /// at `end` fires.
    fn first_fire(&self, end: i64) -> i64 {
        self.clock
            .fires_at(self.slicing.map_or(end, |s| s.first_window(end)))
    }

    /// The watermark at which the last window holding rows of the window (or slice) ending
    /// at `end` fires: a row is late once it has passed.
    fn last_fire(&self, end: i64) -> i64 {
        self.clock
            .fires_at(self.slicing.map_or(end, |s| s.last_window(end)))
    }

    /// Emits one window's groups (encoded keys and accumulators) as one batch: keys decoded at
    /// once, one column of values per call. `bounds` are the window's start and end when
    /// sharing slices (the group keys do not hold them then).
    fn emit_groups(
        &self,
        keys: &[&[u8]],
        accs: &[&[Accumulator]],
        bounds: Option<[i64; 2]>,
        out: &mut Vec<Emit>,
    ) -> Result<(), RuntimeError> {
        let mut decoded = self.decode_keys(keys)?.into_iter();
        let mut columns = Vec::with_capacity(self.schema.fields().len());
        for (i, field) in self
            .schema
            .fields()
            .iter()
            .take(self.keys.len())
            .enumerate()
        {
            let bound = self
                .slicing
                .zip(bounds)
                .and_then(|(s, bounds)| s.bounds.iter().position(|b| *b == i).map(|j| bounds[j]));
            let column = match bound {
                Some(value) => time_column(value, keys.len(), field.data_type())?,
                None => decoded
                    .next()
                    .ok_or_else(|| RuntimeError::new("window aggregation key out of range"))?,
            };
            columns.push(super::of_field_type(column, field)?);
        }
        let mut values: Vec<Vec<ScalarValue>> = (0..self.calls.calls.len())
            .map(|_| Vec::with_capacity(keys.len()))
            .collect();
        for group in accs {
            for ((acc, t), column) in group.iter().zip(&self.calls.out_types).zip(&mut values) {
                column.push(acc.value(t)?);
            }
        }
        for (column, field) in values
            .into_iter()
            .zip(self.schema.fields().iter().skip(self.keys.len()))
        {
            let array = ScalarValue::iter_to_array(column)?;
            columns.push(super::of_field_type(array, field)?);
        }
        let options = RecordBatchOptions::new().with_row_count(Some(keys.len()));
        let batch = RecordBatch::try_new_with_options(self.schema.clone(), columns, &options)?;
        out.push(Emit::Data(ChangeBatch::inserts(batch)));
        Ok(())
    }

    /// Emits the window `(start, end]`: the accumulators of its slices merged, oldest slice
    /// first, into fresh ones per group.
    fn merge_slices(&self, start: i64, end: i64, out: &mut Vec<Emit>) -> Result<(), RuntimeError> {
        // The window's groups in order of first appearance, their accumulators side by
        // side in one vector (`width` per group).
        let width = self.calls.calls.len();
        let mut positions: FastMap<&[u8], usize> = FastMap::default();
        let mut keys: Vec<&[u8]> = Vec::new();
        let mut merged: Vec<Accumulator> = Vec::new();
        for groups in self.windows.range(start + 1..=end).map(|(_, g)| g) {
            for (key, group) in groups {
                let position = match positions.entry(key.as_slice()) {
                    Entry::Occupied(e) => *e.get(),
                    Entry::Vacant(e) => {
                        keys.push(key);
                        self.calls.push_fresh(&mut merged)?;
                        *e.insert(keys.len() - 1)
                    }
                };
                let accs = &mut merged[position * width..(position + 1) * width];
                for (acc, other) in accs.iter_mut().zip(&group.accs) {
                    acc.merge(other)?;
                }
            }
        }
        if !keys.is_empty() {
            let accs: Vec<&[Accumulator]> = if width == 0 {
                vec![&[]; keys.len()]
            } else {
                merged.chunks(width).collect()
            };
            self.emit_groups(&keys, &accs, Some([start, end]), out)?;
        }
        Ok(())
    }

    /// Fires, oldest first, the windows due by `watermark` that had not fired by `previous`:
    /// each merges the accumulators of its slices, oldest slice first, into fresh ones (as
    /// Flink's slicing operator does); slices no later window holds are dropped.
    fn fire_slices(
        &mut self,
        slicing: Slicing,
        previous: i64,
        watermark: i64,
        out: &mut Vec<Emit>,
    ) -> Result<(), RuntimeError> {
        // The end of the last window fired here.
        let mut fired = i64::MIN;
        while let Some(&oldest) = self.windows.keys().next() {
            let mut end = slicing.first_window(oldest);
            while self.clock.fires_at(end) <= previous || end <= fired {
                end = end.saturating_add(slicing.slide);
            }
            if self.clock.fires_at(end) > watermark {
                break;
            }
            let start = end - slicing.size;
            self.merge_slices(start, end, out)?;
            fired = end;
            let last_needed = end + slicing.slide - slicing.size;
            while let Some(entry) = self.windows.first_entry() {
                if *entry.key() > last_needed {
                    break;
                }
                entry.remove();
            }
        }
        Ok(())
    }

    /// Puts the buffered rows into their windows; a row whose window was due by the watermark
    /// `previous` gets no timer in Flink, so it is dropped.
    fn flush(&mut self, previous: i64) -> Result<(), RuntimeError> {
        let Some(buffer) = self.buffer.as_mut() else {
            return Ok(());
        };
        buffer.first_due = i64::MAX;
        for (batch, entries) in std::mem::take(&mut buffer.rows) {
            let rows = self
                .converter
                .convert_columns(&key_columns(&batch, &self.encoded))?;
            for (row, end) in entries {
                if self.last_fire(end) > previous {
                    self.accumulate(&batch, row, rows.row(row).data(), end)?;
                }
            }
        }
        Ok(())
    }
}

impl StreamOperator for WindowAggregate {
    fn checkpoint_unsupported(&self) -> Option<String> {
        self.calls.checkpoint_unsupported()
    }

    fn snapshot(&mut self, _checkpoint: u64) -> Result<Vec<u8>, RuntimeError> {
        // Flink flushes the buffer before a checkpoint as well.
        self.flush(self.watermark)?;
        let keys = ScalarCodec::new(&self.key_types)?;
        let codecs = self.calls.arg_codecs()?;
        let mut out = KeyedSnapshotWriter::new();
        let mut w = StateWriter::new();
        w.i64(self.watermark);
        out.global(w.finish());
        for (end, groups) in &self.windows {
            // The key values, decoded for the whole window, as the snapshot stores them.
            let rows: Vec<&[u8]> = groups.keys().map(Vec::as_slice).collect();
            let key_columns = self.decode_keys(&rows)?;
            for (i, (row, group)) in groups.iter().enumerate() {
                let key = key_columns
                    .iter()
                    .map(|c| ScalarValue::try_from_array(c.as_ref(), i))
                    .collect::<Result<Vec<_>, _>>()?;
                out.entry(GROUPS, row, |w| {
                    w.i64(*end);
                    keys.write(w, &key)?;
                    Calls::write_accs(&codecs, &group.accs, w)
                })?;
            }
        }
        Ok(out.finish())
    }

    fn restore(&mut self, state: &[u8]) -> Result<(), RuntimeError> {
        let keys = ScalarCodec::new(&self.key_types)?;
        let codecs = self.calls.arg_codecs()?;
        let what = "a window aggregation";
        let snapshot = KeyedSnapshot::parse(state, what)?;
        self.watermark = min_time(snapshot.globals(what, |r| Ok(r.i64()?))?);
        self.windows.clear();
        let (windows, calls) = (&mut self.windows, &self.calls);
        snapshot.read_table(GROUPS, what, |row, r| {
            let end = r.i64()?;
            // The key values are the entry's encoded key, decoded when the window fires.
            keys.read(r)?;
            let accs = calls.read_accs(&codecs, r)?;
            windows
                .entry(end)
                .or_default()
                .insert(row.to_vec(), Group { accs });
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
        let batch = batch.batch;
        let Some(end_column) = batch.columns().get(self.window_end) else {
            return Err(RuntimeError::new("window_end column out of range"));
        };
        let ends = millis(end_column)?;
        let live: Vec<(usize, i64)> = (0..batch.num_rows())
            .filter_map(|row| {
                let end = ends.is_valid(row).then(|| ends.value(row))?;
                // Late: the (last) window already fired.
                (self.last_fire(end) > self.watermark).then_some((row, end))
            })
            .collect();
        if self.buffer.is_some() {
            let first_due = live.iter().map(|(_, end)| self.first_fire(*end)).min();
            if let (Some(buffer), Some(due)) = (self.buffer.as_mut(), first_due) {
                buffer.first_due = buffer.first_due.min(due);
                buffer.rows.push((batch, live));
            }
            return Ok(());
        }
        let rows = self
            .converter
            .convert_columns(&key_columns(&batch, &self.encoded))?;
        for (row, end) in live {
            self.accumulate(&batch, row, rows.row(row).data(), end)?;
        }
        Ok(())
    }

    fn watermark(&mut self, watermark: i64, out: &mut Vec<Emit>) -> Result<(), RuntimeError> {
        let previous = self.watermark;
        if let Some(buffer) = self.buffer.as_mut() {
            if watermark > previous && watermark >= buffer.next_trigger {
                buffer.next_trigger = buffer.next_trigger(watermark);
                if buffer.first_due <= watermark {
                    self.flush(previous)?;
                }
            }
        }
        self.watermark = watermark;
        if let Some(slicing) = self.slicing {
            self.fire_slices(slicing, previous, watermark, out)?;
            out.push(Emit::Watermark(watermark));
            return Ok(());
        }
        while let Some(entry) = self.windows.first_entry() {
            if self.clock.fires_at(*entry.key()) > watermark {
                break;
            }
            let groups = entry.remove();
            if groups.is_empty() {
                continue;
            }
            let (keys, accs): (Vec<&[u8]>, Vec<&[Accumulator]>) = groups
                .iter()
                .map(|(key, group)| (key.as_slice(), group.accs.as_slice()))
                .unzip();
            self.emit_groups(&keys, &accs, None, out)?;
        }
        out.push(Emit::Watermark(watermark));
        Ok(())
    }
}

/// The state of one group of a group aggregation.
pub(super) struct KeyState {
    key: Vec<ScalarValue>,
    accs: Vec<Accumulator>,
    /// Accumulated minus retracted rows.
    count: i64,
    previous: Vec<ScalarValue>,
}

/// Encodes a group's state (for checkpoints and for the RocksDB backend).
pub(super) struct KeyStateCodec {
    keys: ScalarCodec,
    args: Vec<Option<ScalarCodec>>,
}

impl KeyStateCodec {
    fn new(key_types: &[DataType], calls: &Calls) -> Result<Self, RuntimeError> {
        Ok(Self {
            keys: ScalarCodec::new(key_types)?,
            args: calls.arg_codecs()?,
        })
    }

    fn write(&self, state: &KeyState, w: &mut StateWriter) -> Result<(), RuntimeError> {
        self.keys.write(w, &state.key)?;
        w.i64(state.count);
        Calls::write_accs(&self.args, &state.accs, w)
    }

    fn read(&self, calls: &Calls, r: &mut StateReader<'_>) -> Result<KeyState, RuntimeError> {
        let key = self.keys.read(r)?;
        let count = r.i64()?;
        let accs = calls.read_accs(&self.args, r)?;
        // The last emitted result is the accumulators' value (set after every change).
        let previous = calls.values(&accs)?;
        Ok(KeyState {
            key,
            accs,
            count,
            previous,
        })
    }
}

/// Unbounded aggregation per key, emitting `+I` for a new key, `-U`/`+U` when its result
/// changes and `-D` when its last row is retracted (Flink's `GroupAggFunction`).
pub struct GroupAggregate {
    keys: Vec<usize>,
    calls: Calls,
    converter: RowConverter,
    codec: KeyStateCodec,
    groups: GroupStore<KeyState>,
    schema: SchemaRef,
}

impl GroupAggregate {
    /// Builds the operator, keeping its groups as `state` says.
    pub fn new(
        keys: &[usize],
        calls: &[AggregateCall],
        input: &SchemaRef,
        schema: SchemaRef,
        state: &StateContext,
    ) -> Result<Self, RuntimeError> {
        let types: Vec<DataType> = keys
            .iter()
            .filter_map(|k| input.fields().get(*k).map(|f| f.data_type().clone()))
            .collect();
        let calls = Calls::new(calls, input, &schema, keys.len())?;
        Ok(Self {
            keys: keys.to_vec(),
            converter: group_converter(&types)?,
            codec: KeyStateCodec::new(&types, &calls)?,
            calls,
            groups: GroupStore::open(state, "groups")?,
            schema,
        })
    }
}

impl StreamOperator for GroupAggregate {
    fn checkpoint_unsupported(&self) -> Option<String> {
        self.calls.checkpoint_unsupported()
    }

    fn snapshot(&mut self, checkpoint: u64) -> Result<Vec<u8>, RuntimeError> {
        let codec = &self.codec;
        self.groups
            .snapshot(checkpoint, &|state, w| codec.write(state, w))
    }

    fn restore(&mut self, state: &[u8]) -> Result<(), RuntimeError> {
        let (codec, calls) = (&self.codec, &self.calls);
        self.groups
            .restore(state, &self.converter, &|r| codec.read(calls, r))
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
        let rows = self
            .converter
            .convert_columns(&key_columns(&batch.batch, &self.keys))?;
        let mut emitted = RowsOut::new(self.schema.fields().len());
        let (codec, calls) = (&self.codec, &self.calls);
        for row in 0..batch.num_rows() {
            let add = batch.kind(row).is_addition();
            let key = rows.row(row).owned();
            let existing = self.groups.take(&key, &|r| codec.read(calls, r))?;
            let first = existing.is_none();
            if first && !add {
                continue; // retraction of an unknown key: nothing to retract
            }
            let mut state = match existing {
                Some(s) => s,
                None => KeyState {
                    key: key_values(&batch.batch, &self.keys, row)?,
                    accs: calls.fresh()?,
                    count: 0,
                    previous: Vec::new(),
                },
            };
            calls.update(&mut state.accs, &batch.batch, row, add)?;
            state.count += if add { 1 } else { -1 };
            if state.count <= 0 {
                if !first {
                    emitted.push(RowKind::Delete, &state.key, &state.previous);
                    self.groups.remove(&key)?;
                }
                continue;
            }
            let values = calls.values(&state.accs)?;
            if first {
                emitted.push(RowKind::Insert, &state.key, &values);
            } else if values != state.previous {
                emitted.push(RowKind::UpdateBefore, &state.key, &state.previous);
                emitted.push(RowKind::UpdateAfter, &state.key, &values);
            }
            state.previous = values;
            self.groups.put(key, state, &|s, w| codec.write(s, w))?;
        }
        emitted.emit(&self.schema, out)
    }
}

/// One session of one key.
struct Session {
    start: i64,
    end: i64,
    key: Vec<ScalarValue>,
    accs: Vec<Accumulator>,
}

/// Session window aggregation (Flink's merging windows): per session key, a row at time `t`
/// opens the window `[t, t + gap)` and merges it with every window it touches; a window fires
/// when the watermark reaches `end - 1`, and a row whose (merged) window has already passed the
/// watermark is dropped as late.
pub struct SessionWindowAggregate {
    keys: Vec<usize>,
    /// Positions of window_start and window_end among the keys.
    window: (usize, usize),
    /// Keys that identify a session (all keys but the window's).
    session_keys: Vec<usize>,
    gap: i64,
    calls: Calls,
    converter: RowConverter,
    /// Encodes a session's key values (all group keys, for checkpoints).
    key_codec: ScalarCodec,
    sessions: HashMap<OwnedRow, Vec<Session>>,
    watermark: i64,
    schema: SchemaRef,
    clock: WindowClock,
}

impl SessionWindowAggregate {
    /// Builds the operator; `window` holds the key positions of window_start and window_end.
    pub fn new(
        keys: &[usize],
        window: (usize, usize),
        gap: i64,
        calls: &[AggregateCall],
        input: &SchemaRef,
        schema: SchemaRef,
        clock: WindowClock,
    ) -> Result<Self, RuntimeError> {
        let session_keys: Vec<usize> = keys
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != window.0 && *i != window.1)
            .map(|(_, k)| *k)
            .collect();
        let types: Vec<DataType> = session_keys
            .iter()
            .filter_map(|k| input.fields().get(*k).map(|f| f.data_type().clone()))
            .collect();
        let key_types: Vec<DataType> = keys
            .iter()
            .filter_map(|k| input.fields().get(*k).map(|f| f.data_type().clone()))
            .collect();
        Ok(Self {
            key_codec: ScalarCodec::new(&key_types)?,
            keys: keys.to_vec(),
            window,
            session_keys,
            gap,
            calls: Calls::new(calls, input, &schema, keys.len())?.appending(),
            converter: group_converter(&types)?,
            sessions: HashMap::new(),
            watermark: i64::MIN,
            schema,
            clock,
        })
    }
}

impl StreamOperator for SessionWindowAggregate {
    fn checkpoint_unsupported(&self) -> Option<String> {
        self.calls.checkpoint_unsupported()
    }

    fn snapshot(&mut self, _checkpoint: u64) -> Result<Vec<u8>, RuntimeError> {
        let codecs = self.calls.arg_codecs()?;
        let mut out = KeyedSnapshotWriter::new();
        let mut w = StateWriter::new();
        w.i64(self.watermark);
        out.global(w.finish());
        for (row, sessions) in &self.sessions {
            out.entry(GROUPS, row.row().data(), |w| {
                w.length(sessions.len());
                for s in sessions {
                    w.i64(s.start);
                    w.i64(s.end);
                    self.key_codec.write(w, &s.key)?;
                    Calls::write_accs(&codecs, &s.accs, w)?;
                }
                Ok(())
            })?;
        }
        Ok(out.finish())
    }

    fn restore(&mut self, state: &[u8]) -> Result<(), RuntimeError> {
        let codecs = self.calls.arg_codecs()?;
        let what = "a session window aggregation";
        let snapshot = KeyedSnapshot::parse(state, what)?;
        self.watermark = min_time(snapshot.globals(what, |r| Ok(r.i64()?))?);
        self.sessions.clear();
        let parser = self.converter.parser();
        let (all, calls, key_codec) = (&mut self.sessions, &self.calls, &self.key_codec);
        snapshot.read_table(GROUPS, what, |row, r| {
            let n = r.length()?;
            let mut sessions = Vec::with_capacity(n);
            for _ in 0..n {
                sessions.push(Session {
                    start: r.i64()?,
                    end: r.i64()?,
                    key: key_codec.read(r)?,
                    accs: calls.read_accs(&codecs, r)?,
                });
            }
            all.insert(parser.parse(row).owned(), sessions);
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
        let batch = batch.batch;
        let Some(time_column) = self
            .keys
            .get(self.window.0)
            .and_then(|k| batch.columns().get(*k))
        else {
            return Err(RuntimeError::new("session time column out of range"));
        };
        let times = millis(time_column)?;
        let rows = self
            .converter
            .convert_columns(&key_columns(&batch, &self.session_keys))?;
        for row in 0..batch.num_rows() {
            if times.is_null(row) {
                continue;
            }
            let ts = times.value(row);
            let (mut start, mut end) = (ts, ts.saturating_add(self.gap));
            let sessions = self.sessions.entry(rows.row(row).owned()).or_default();
            // Windows merge when they overlap or touch, as Flink's TimeWindow.intersects.
            let (touching, rest): (Vec<Session>, Vec<Session>) = std::mem::take(sessions)
                .into_iter()
                .partition(|s| s.start <= end && start <= s.end);
            *sessions = rest;
            for s in &touching {
                start = start.min(s.start);
                end = end.max(s.end);
            }
            if self.clock.fires_at(end) <= self.watermark {
                sessions.extend(touching); // late: nothing changes
                continue;
            }
            let mut merged = match touching.first() {
                Some(first) => Session {
                    start,
                    end,
                    key: first.key.clone(),
                    accs: self.calls.fresh()?,
                },
                None => Session {
                    start,
                    end,
                    key: key_values(&batch, &self.keys, row)?,
                    accs: self.calls.fresh()?,
                },
            };
            for s in &touching {
                for (acc, other) in merged.accs.iter_mut().zip(&s.accs) {
                    acc.merge(other)?;
                }
            }
            self.calls.update(&mut merged.accs, &batch, row, true)?;
            sessions.push(merged);
        }
        Ok(())
    }

    fn watermark(&mut self, watermark: i64, out: &mut Vec<Emit>) -> Result<(), RuntimeError> {
        self.watermark = watermark;
        let mut fired: Vec<Session> = Vec::new();
        let clock = self.clock;
        for sessions in self.sessions.values_mut() {
            let (done, open): (Vec<Session>, Vec<Session>) = std::mem::take(sessions)
                .into_iter()
                .partition(|s| clock.fires_at(s.end) <= watermark);
            *sessions = open;
            fired.extend(done);
        }
        self.sessions.retain(|_, s| !s.is_empty());
        fired.sort_by_key(|s| (s.end, s.start));
        let mut rows = RowsOut::new(self.schema.fields().len());
        for s in fired {
            let mut key = s.key.clone();
            if let Some(k) = key.get_mut(self.window.0) {
                *k = ScalarValue::TimestampMillisecond(Some(s.start), None);
            }
            if let Some(k) = key.get_mut(self.window.1) {
                *k = ScalarValue::TimestampMillisecond(Some(s.end), None);
            }
            let values = self.calls.values(&s.accs)?;
            rows.push(RowKind::Insert, &key, &values);
        }
        rows.emit(&self.schema, out)?;
        out.push(Emit::Watermark(watermark));
        Ok(())
    }
}

/// Encodes the sort keys `order` of `input`'s rows so that byte order is sort order.
pub(super) fn sort_converter(
    order: &[riffle_plan::SortKey],
    input: &SchemaRef,
) -> Result<RowConverter, RuntimeError> {
    let mut fields = Vec::new();
    for key in order {
        let Some(f) = input.fields().get(key.column) else {
            return Err(RuntimeError::new("sort column out of range"));
        };
        let options = arrow::compute::SortOptions {
            descending: !key.ascending,
            nulls_first: key.nulls_first,
        };
        fields.push(arrow::row::SortField::new_with_options(
            f.data_type().clone(),
            options,
        ));
    }
    Ok(RowConverter::new(fields)?)
}

/// Global Top-N over an append-only stream (Flink's `AppendOnlyTopNFunction` without rank
/// number): rows are kept sorted; a row that enters the best `fetch` pushes the last one out
/// (`-D`) and is emitted (`+I`). Rows equal in every sort key rank after the earlier ones.
pub struct TopN {
    order: Vec<usize>,
    fetch: usize,
    converter: RowConverter,
    /// The best rows, sorted: sort key bytes and row values.
    best: Vec<(OwnedRow, Vec<ScalarValue>)>,
    /// Encodes a row's values (for checkpoints).
    row_codec: ScalarCodec,
    schema: SchemaRef,
}

impl TopN {
    /// Builds the operator.
    pub fn new(
        order: &[riffle_plan::SortKey],
        fetch: usize,
        input: &SchemaRef,
    ) -> Result<Self, RuntimeError> {
        Ok(Self {
            order: order.iter().map(|k| k.column).collect(),
            fetch,
            converter: sort_converter(order, input)?,
            best: Vec::new(),
            row_codec: ScalarCodec::new(&field_types(input))?,
            schema: input.clone(),
        })
    }
}

impl StreamOperator for TopN {
    fn checkpoint_unsupported(&self) -> Option<String> {
        None
    }

    fn snapshot(&mut self, _checkpoint: u64) -> Result<Vec<u8>, RuntimeError> {
        let mut w = StateWriter::new();
        w.length(self.best.len());
        for (key, values) in &self.best {
            w.bytes(key.row().data());
            self.row_codec.write(&mut w, values)?;
        }
        Ok(w.finish())
    }

    fn restore(&mut self, state: &[u8]) -> Result<(), RuntimeError> {
        let mut r = StateReader::new(state, "a Top-N");
        self.best.clear();
        for _ in 0..r.length()? {
            let key = self.converter.parser().parse(r.bytes()?).owned();
            self.best.push((key, self.row_codec.read(&mut r)?));
        }
        Ok(r.finish()?)
    }

    fn process(
        &mut self,
        _input: usize,
        batch: ChangeBatch,
        out: &mut Vec<Emit>,
    ) -> Result<(), RuntimeError> {
        let batch = batch.batch;
        let keys = self
            .converter
            .convert_columns(&key_columns(&batch, &self.order))?;
        let all: Vec<usize> = (0..batch.num_columns()).collect();
        let mut emitted = RowsOut::new(self.schema.fields().len());
        for row in 0..batch.num_rows() {
            let key = keys.row(row);
            // After every row that sorts before or equal to this one.
            let position = self.best.partition_point(|(k, _)| k.row() <= key);
            if position >= self.fetch {
                continue;
            }
            let values = key_values(&batch, &all, row)?;
            self.best.insert(position, (key.owned(), values.clone()));
            if self.best.len() > self.fetch {
                if let Some((_, removed)) = self.best.pop() {
                    emitted.push(RowKind::Delete, &removed, &[]);
                }
            }
            emitted.push(RowKind::Insert, &values, &[]);
        }
        emitted.emit(&self.schema, out)
    }
}

#[cfg(test)]
mod tests {
    use arrow::array::{Int32Array, TimestampMillisecondArray};
    use arrow::datatypes::{Field, Schema, TimeUnit};
    use riffle_plan::{AggregateFunction, SortKey};

    use super::super::resume::{assert_rescales_anywhere, assert_resumes_anywhere, Step};
    use super::*;

    fn ts() -> DataType {
        DataType::Timestamp(TimeUnit::Millisecond, None)
    }

    fn slice_buffer(length: i64, offset: i64, zone: Option<&str>) -> SliceBuffer {
        SliceBuffer {
            triggers: SliceTriggers { length, offset },
            zone: zone.and_then(LocalZone::parse),
            next_trigger: i64::MIN,
            rows: Vec::new(),
            first_due: i64::MAX,
        }
    }

    #[test]
    fn slice_trigger_points_follow_flink() {
        const MIN: i64 = 60_000;
        const HOUR: i64 = 60 * MIN;
        // UTC, 5-minute slices shifted by 2 minutes: the window ends' last milliseconds.
        let utc = slice_buffer(5 * MIN, 2 * MIN, None);
        assert_eq!(utc.next_trigger(0), 2 * MIN - 1);
        assert_eq!(utc.next_trigger(2 * MIN - 1), 7 * MIN - 1);
        assert_eq!(utc.next_trigger(i64::MAX), i64::MAX);
        // A zone observing daylight saving aligns them to local days: New York's midnight on
        // 2024-03-01 is 05:00 UTC.
        let new_york = slice_buffer(24 * HOUR, 0, Some("America/New_York"));
        let noon_utc = 1_709_294_400_000; // 2024-03-01T12:00Z
        assert_eq!(new_york.next_trigger(noon_utc), 1_709_355_600_000 - 1);
    }

    /// Input `(k INT, v INT, ts TIMESTAMP(3))`.
    fn input() -> SchemaRef {
        Arc::new(Schema::new(vec![
            Field::new("k", DataType::Int32, true),
            Field::new("v", DataType::Int32, true),
            Field::new("ts", ts(), true),
        ]))
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

    fn call(function: AggregateFunction, distinct: bool) -> AggregateCall {
        AggregateCall {
            function,
            arg: Some(1),
            distinct,
            filter: None,
            name: "a".into(),
            data_type: "BIGINT".into(),
            user: None,
            separator: None,
        }
    }

    fn steps() -> Vec<Step> {
        vec![
            rows(&[(1, 10, 1), (1, 20, 4), (2, 5, 2)]),
            Step::Watermark(3),
            rows(&[(1, 30, 12), (2, 6, 20), (1, 7, 8)]),
            Step::Watermark(14),
            rows(&[(1, 40, 15), (2, 8, 6), (2, 1, 26)]),
            Step::Watermark(40),
        ]
    }

    #[test]
    fn session_windows_resume_from_a_snapshot() {
        // Keys k, window_start, window_end; the rowtime plays both window columns.
        let output = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Int32, true),
            Field::new("window_start", ts(), true),
            Field::new("window_end", ts(), true),
            Field::new("s", DataType::Int64, true),
            Field::new("m", DataType::Int32, true),
            Field::new("d", DataType::Int64, true),
        ]));
        let make = || {
            Box::new(
                SessionWindowAggregate::new(
                    &[0, 2, 2],
                    (1, 2),
                    5,
                    &[
                        call(AggregateFunction::Sum, false),
                        call(AggregateFunction::Max, false),
                        call(AggregateFunction::Count, true),
                    ],
                    &input(),
                    output.clone(),
                    WindowClock(None),
                )
                .expect("operator"),
            ) as Box<dyn StreamOperator>
        };
        let out = assert_resumes_anywhere(&make, &steps());
        assert_rescales_anywhere(&make, &steps(), &[&[0]]);
        assert!(
            out.iter().filter(|l| l.starts_with("+I")).count() >= 4,
            "{out:?}"
        );
    }

    /// Input `(k, v, ts)` with its tumbling window's end (5 ms windows) as a fourth column.
    fn windowed(steps: &[Step]) -> Vec<Step> {
        let schema = windowed_input();
        steps
            .iter()
            .map(|step| match step {
                Step::Rows(i, change) => {
                    let times = change
                        .batch
                        .column(2)
                        .as_primitive::<arrow::datatypes::TimestampMillisecondType>();
                    let ends: TimestampMillisecondArray =
                        times.iter().map(|t| t.map(|t| (t / 5 + 1) * 5)).collect();
                    let mut columns = change.batch.columns().to_vec();
                    columns.push(Arc::new(ends));
                    let batch = RecordBatch::try_new(schema.clone(), columns).expect("batch");
                    Step::Rows(*i, ChangeBatch::inserts(batch))
                }
                other => other.clone(),
            })
            .collect()
    }

    /// A window aggregation's groups keep their keys only encoded; they are decoded when the
    /// window fires and for snapshots (whose format is unchanged), with the same results
    /// wherever the job is stopped, and a global aggregation has no key columns.
    #[test]
    fn window_aggregates_resume_from_a_snapshot() {
        let keyed = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Int32, true),
            Field::new("window_end", ts(), true),
            Field::new("s", DataType::Int64, true),
            Field::new("m", DataType::Int32, true),
        ]));
        let calls = [
            call(AggregateFunction::Sum, false),
            call(AggregateFunction::Max, false),
        ];
        let steps = windowed(&steps());
        let make = |keys: &'static [usize], schema: SchemaRef| {
            let calls = calls.clone();
            move || {
                Box::new(
                    WindowAggregate::new(
                        keys,
                        3,
                        &calls,
                        &windowed_input(),
                        schema.clone(),
                        WindowClock(None),
                        None,
                    )
                    .expect("operator"),
                ) as Box<dyn StreamOperator>
            }
        };
        let out = assert_resumes_anywhere(&make(&[0, 3], keyed.clone()), &steps);
        assert_rescales_anywhere(&make(&[0, 3], keyed), &steps, &[&[0]]);
        assert!(out.iter().any(|l| l == "+I[1, 5, 30, 20]"), "{out:?}");
        let global = Arc::new(Schema::new(vec![
            Field::new("s", DataType::Int64, true),
            Field::new("m", DataType::Int32, true),
        ]));
        let out = assert_resumes_anywhere(&make(&[], global), &steps);
        assert!(out.iter().any(|l| l == "+I[35, 20]"), "{out:?}");
    }

    fn windowed_input() -> SchemaRef {
        let mut fields: Vec<Field> = input()
            .fields()
            .iter()
            .map(|f| f.as_ref().clone())
            .collect();
        fields.push(Field::new("window_end", ts(), true));
        Arc::new(Schema::new(fields))
    }

    #[test]
    fn global_top_n_resumes_from_a_snapshot() {
        let order = [SortKey {
            column: 1,
            ascending: false,
            nulls_first: false,
        }];
        let make = || Box::new(TopN::new(&order, 2, &input()).expect("operator")) as _;
        let out = assert_resumes_anywhere(&make, &steps());
        assert!(out.iter().any(|l| l.starts_with("-D")), "{out:?}");
    }

    #[test]
    fn java_aggregates_are_refused_for_checkpoints_by_name() {
        let mut java = call(AggregateFunction::Sum, false);
        java.user = Some(riffle_plan::UserAggregate {
            name: "MyAgg".into(),
            language: "JAVA".into(),
            class: "com.example.MyAgg".into(),
            jars: Vec::new(),
            args: vec![1],
            arg_types: vec!["INT".into()],
        });
        let calls = Calls {
            calls: vec![java],
            arg_types: vec![Some(DataType::Int32)],
            out_types: vec![DataType::Int64],
            user: vec![None],
            append_only: false,
        };
        let reason = calls.checkpoint_unsupported().unwrap_or_default();
        assert!(reason.contains("Java aggregate function MyAgg"), "{reason}");
    }
}
