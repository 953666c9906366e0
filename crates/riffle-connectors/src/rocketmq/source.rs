//! The rocketmq source, on the embedded store or a cluster (any [`Topics`]).
//!
//! Each queue of the topic is one split; subtask `i` of `n` reads the queues `q` with
//! `q % n == i`. A queue starts at the group's committed offset when there is one (RocketMQ's
//! consumer semantics: the startup mode applies to a group without offsets), unless the table
//! names an explicit start offset or time; otherwise at the startup mode's position (default
//! `latest`, as rocketmq-flink). The source is unbounded — it waits for new messages until the
//! job is stopped — unless `scan.bounded.mode = 'latest-offset'` (stop at the end offsets seen
//! when the source opened) or a stop time is given. Riffle commits the group's offsets itself
//! (never on a timer): the offsets after a batch are committed when the next batch is asked
//! for, i.e. once the runtime has taken the batch, and at the end.

use std::sync::Arc;
use std::time::Duration;

use arrow::array::ArrayRef;
use arrow::datatypes::{Schema, SchemaRef};
use arrow::record_batch::{RecordBatch, RecordBatchOptions};
use riffle_plan::ConnectorSpec;
use riffle_store::{StoredMessage, Topics};

use super::metadata::{check_keys, MetadataBuilder};
use super::options::{normalize, BodyFormat, RocketMqOptions, Role, StartupMode};
use super::{open_topics, store_error};
use crate::avro::AvroDecoder;
use crate::changelog::ChangelogDecoder;
use crate::options::Options;
use crate::raw::RawDecoder;
use crate::rows::{Projection, RowDecoder};
use crate::snapshot::{StateReader, StateWriter};
use crate::{ChangeBatch, ConnectorError, Result, RowKind, SourceReader, SubtaskInfo, BATCH_SIZE};

/// How long an unbounded source waits for new messages before handing back an empty batch (so
/// the runtime can notice a stop).
const IDLE_WAIT: Duration = Duration::from_millis(50);

/// Opens source subtask `subtask` of a rocketmq table whose non-computed columns are `schema`.
pub fn open_source(
    spec: &ConnectorSpec,
    schema: SchemaRef,
    subtask: SubtaskInfo,
) -> Result<Box<dyn SourceReader>> {
    let mut options = Options::new(spec);
    let opts = normalize(spec, Role::Source, &mut options)?;
    options.finish()?;
    let metadata_columns = check_keys(spec)?;
    // Columns come in declaration order; physical ones are decoded from the body.
    let mut slots = Vec::with_capacity(schema.fields().len());
    let mut physical_fields = Vec::new();
    let mut metadata = Vec::new();
    for field in schema.fields() {
        match metadata_columns.iter().find(|m| m.column == *field.name()) {
            Some(m) => {
                slots.push(Slot::Metadata(metadata.len()));
                metadata.push(MetadataBuilder::new(m, field.data_type().clone())?);
            }
            None => {
                slots.push(Slot::Physical(physical_fields.len()));
                physical_fields.push(field.clone());
            }
        }
    }
    let physical = Arc::new(Schema::new(physical_fields));
    let body = if opts.upsert_changelog {
        Body::Upsert(UpsertBody::new(spec, &opts, physical)?)
    } else {
        Body::new(&opts, physical)?
    };
    let store = open_topics(&opts)?;
    let queues = store
        .topic_config(&opts.topic)
        .map_err(|e| {
            let namesrv = opts
                .cluster
                .as_ref()
                .map(|c| format!(" --namesrv {}", c.namesrv))
                .unwrap_or_default();
            ConnectorError::new(format!(
                "rocketmq table '{}': {e} in {} (create it with `riffle topic create {} --queues N{namesrv}`)",
                opts.table,
                store.location(),
                opts.topic
            ))
        })?
        .queues;
    let mut cursors = Vec::new();
    for queue in (0..queues).filter(|q| *q as usize % subtask.parallelism.max(1) == subtask.index) {
        cursors.push(start_cursor(store.as_ref(), &opts, queue)?);
    }
    Ok(Box::new(RocketMqSource {
        store,
        opts,
        schema,
        slots,
        body,
        metadata,
        cursors,
        next_cursor: 0,
        uncommitted: false,
        checkpointing: false,
        snapshots: Vec::new(),
    }))
}

/// Where one queue is read.
#[derive(Debug, Clone, Copy)]
struct Cursor {
    queue: u32,
    /// Next offset to read.
    next: u64,
    /// Bounded: the end offset captured at start.
    end: Option<u64>,
    done: bool,
}

fn start_cursor(store: &dyn Topics, opts: &RocketMqOptions, queue: u32) -> Result<Cursor> {
    let err = |e| store_error(&opts.table, e);
    let info = store.queue_info(&opts.topic, queue).map_err(err)?;
    let committed = match &opts.group {
        Some(group) if !opts.startup_explicit => store
            .committed_offset(group, &opts.topic, queue)
            .map_err(err)?,
        _ => None,
    };
    let next = match committed {
        Some(offset) => offset,
        None => match opts.startup {
            StartupMode::Earliest => info.min_offset,
            StartupMode::Latest => info.max_offset,
            StartupMode::Timestamp(ts) => store
                .offset_for_timestamp(&opts.topic, queue, ts)
                .map_err(err)?,
            StartupMode::SpecificOffset(offset) => offset.clamp(info.min_offset, info.max_offset),
        },
    };
    let end = opts.bounded.then_some(info.max_offset);
    Ok(Cursor {
        queue,
        next,
        end,
        done: end.is_some_and(|e| next >= e),
    })
}

/// Where an output column comes from.
enum Slot {
    /// The i-th column decoded from the body.
    Physical(usize),
    /// The i-th metadata column.
    Metadata(usize),
}

/// Decoded physical columns and their rows' change kinds (`None`: all inserts).
type DecodedColumns = (Vec<ArrayRef>, Option<Arc<[RowKind]>>);

/// Decodes message bodies into the physical columns.
enum Body {
    Text(RowDecoder),
    Changelog(ChangelogDecoder),
    Raw(RawDecoder),
    Avro(AvroDecoder),
    Upsert(UpsertBody),
}

/// Reads a topic as an upsert changelog keyed by the primary key (Flink's upsert-kafka source;
/// `'riffle.changelog-mode' = 'upsert'`): a message with a body is an insert of the row it holds,
/// a message without body (a tombstone) a delete of its key, whose columns come from the message
/// key as the rocketmq sink writes it (the key's value, several key columns as one JSON array of
/// their texts). The planner normalizes the changes per key (`ChangelogNormalize`).
struct UpsertBody {
    rows: RowDecoder,
    /// Physical column index of each primary key column.
    key_columns: Vec<usize>,
    width: usize,
    kinds: Vec<RowKind>,
}

impl UpsertBody {
    fn new(spec: &ConnectorSpec, opts: &RocketMqOptions, physical: SchemaRef) -> Result<Self> {
        let BodyFormat::Text(format) = &opts.body else {
            return Err(ConnectorError::new(format!(
                "rocketmq table '{}' is read as an upsert changelog ('riffle.changelog-mode' = 'upsert'), which needs a format that holds rows ('json' or 'csv')",
                opts.table
            )));
        };
        if spec.primary_key.is_empty() {
            return Err(ConnectorError::new(format!(
                "rocketmq table '{}' is read as an upsert changelog ('riffle.changelog-mode' = 'upsert'), which needs a PRIMARY KEY (the key of its messages)",
                opts.table
            )));
        }
        let key_columns = spec
            .primary_key
            .iter()
            .map(|k| {
                physical.index_of(k).map_err(|_| {
                    ConnectorError::new(format!(
                        "primary key column '{k}' of rocketmq table '{}' is not a physical column",
                        opts.table
                    ))
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            width: physical.fields().len(),
            // Every column: the rows of one key are compared as a whole.
            rows: RowDecoder::new(&opts.table, physical, format.clone(), Projection::ALL)?,
            key_columns,
            kinds: Vec::new(),
        })
    }

    /// Decodes one message; returns the number of rows it produced.
    fn decode(&mut self, message: &StoredMessage, location: &dyn Fn() -> String) -> Result<usize> {
        let body = &message.message.body;
        if body.is_empty() {
            let texts = self.key_texts(message, location)?;
            let mut keys: Vec<Option<&str>> = vec![None; self.width];
            for (column, text) in self.key_columns.iter().zip(&texts) {
                keys[*column] = text.as_deref();
            }
            self.rows.append_key_row(&keys, location)?;
            self.kinds.push(RowKind::Delete);
            return Ok(1);
        }
        let text = String::from_utf8_lossy(body);
        let mut rows = 0;
        for line in text.split('\n').map(|l| l.trim_end_matches('\r')) {
            if !line.trim().is_empty() && self.rows.decode(line, location)? {
                self.kinds.push(RowKind::Insert);
                rows += 1;
            }
        }
        Ok(rows)
    }

    /// The text of each key column in a message's key (`None`: NULL).
    fn key_texts(
        &self,
        message: &StoredMessage,
        location: &dyn Fn() -> String,
    ) -> Result<Vec<Option<String>>> {
        let Some(key) = message.message.keys.first() else {
            return Ok(vec![None; self.key_columns.len()]);
        };
        if self.key_columns.len() == 1 {
            return Ok(vec![Some(key.clone())]);
        }
        let invalid = || {
            ConnectorError::new(format!(
                "message key '{key}' at {} is not a JSON array of {} key values",
                location(),
                self.key_columns.len()
            ))
        };
        let values: Vec<serde_json::Value> = serde_json::from_str(key).map_err(|_| invalid())?;
        if values.len() != self.key_columns.len() {
            return Err(invalid());
        }
        values
            .into_iter()
            .map(|v| match v {
                serde_json::Value::Null => Ok(None),
                serde_json::Value::String(s) => Ok(Some(s)),
                _ => Err(invalid()),
            })
            .collect()
    }

    fn finish(&mut self) -> Result<DecodedColumns> {
        let batch = self.rows.flush()?;
        let kinds: Arc<[RowKind]> = std::mem::take(&mut self.kinds).into();
        Ok((batch.columns().to_vec(), Some(kinds)))
    }
}

impl Body {
    fn new(opts: &RocketMqOptions, physical: SchemaRef) -> Result<Self> {
        Ok(match &opts.body {
            BodyFormat::Text(format) => {
                // Skips the strings the job does not read; which columns Flink's source leaves
                // unconverted is only known for the filesystem source.
                let projection = Projection {
                    read_columns: opts.read_columns.as_deref(),
                    skip_unread_columns: false,
                };
                Body::Text(RowDecoder::new(
                    &opts.table,
                    physical,
                    format.clone(),
                    projection,
                )?)
            }
            BodyFormat::Changelog(format) => Body::Changelog(ChangelogDecoder::new(
                &opts.table,
                physical,
                format.clone(),
            )?),
            BodyFormat::Raw(options) => {
                Body::Raw(RawDecoder::new(&opts.table, physical, *options)?)
            }
            BodyFormat::Avro(format) => {
                Body::Avro(AvroDecoder::new(&opts.table, physical, format)?)
            }
        })
    }

    /// Decodes one message; returns the number of rows it produced.
    fn decode(&mut self, topic: &str, message: &StoredMessage) -> Result<usize> {
        let body = &message.message.body;
        let location = || {
            format!(
                "topic '{topic}' queue {} offset {}",
                message.queue, message.offset
            )
        };
        match self {
            Body::Raw(decoder) => {
                decoder.decode(body, &location)?;
                Ok(1)
            }
            Body::Upsert(upsert) => upsert.decode(message, &location),
            Body::Avro(decoder) => Ok(usize::from(decoder.decode(body, &location)?)),
            // An empty body is a tombstone (a deleted key): it holds no row.
            Body::Changelog(_) if body.is_empty() => Ok(0),
            Body::Changelog(decoder) => decoder.decode(&String::from_utf8_lossy(body), &location),
            Body::Text(decoder) => {
                let text = String::from_utf8_lossy(body);
                let mut rows = 0;
                // One message may hold several rows, one per line (rocketmq-flink's row format).
                for line in text.split('\n') {
                    let line = line.trim_end_matches('\r');
                    if line.trim().is_empty() {
                        continue;
                    }
                    if decoder.decode(line, &location)? {
                        rows += 1;
                    }
                }
                Ok(rows)
            }
        }
    }

    /// The decoded columns and their change kinds (`None`: all inserts).
    fn finish(&mut self) -> Result<DecodedColumns> {
        Ok(match self {
            Body::Text(decoder) => (decoder.flush()?.columns().to_vec(), None),
            Body::Changelog(decoder) => {
                let changes = decoder.flush()?;
                (changes.batch.columns().to_vec(), changes.kinds)
            }
            Body::Raw(decoder) => (decoder.flush()?.columns().to_vec(), None),
            Body::Avro(decoder) => (decoder.flush()?.columns().to_vec(), None),
            Body::Upsert(upsert) => upsert.finish()?,
        })
    }

    fn report_ignored(&mut self) {
        match self {
            Body::Text(decoder) => decoder.report_ignored(),
            Body::Changelog(decoder) => decoder.report_ignored(),
            Body::Upsert(upsert) => upsert.rows.report_ignored(),
            Body::Raw(_) | Body::Avro(_) => {}
        }
    }
}

struct RocketMqSource {
    store: Arc<dyn Topics>,
    opts: RocketMqOptions,
    schema: SchemaRef,
    slots: Vec<Slot>,
    body: Body,
    metadata: Vec<MetadataBuilder>,
    cursors: Vec<Cursor>,
    next_cursor: usize,
    /// Offsets moved since the last commit.
    uncommitted: bool,
    /// Checkpointed: positions live in checkpoints, and the group's offsets are committed when
    /// a checkpoint completes (rocketmq-flink's commit on checkpoint), never per batch.
    checkpointing: bool,
    /// Offsets of checkpoints taken but not yet complete.
    snapshots: Vec<(u64, Vec<(u32, u64)>)>,
}

impl RocketMqSource {
    fn commit(&mut self) -> Result<()> {
        let Some(group) = &self.opts.group else {
            return Ok(());
        };
        if !self.uncommitted || self.checkpointing {
            return Ok(());
        }
        let offsets: Vec<(u32, u64)> = self.cursors.iter().map(|c| (c.queue, c.next)).collect();
        self.store
            .commit_offsets(group, &self.opts.topic, &offsets)
            .map_err(|e| store_error(&self.opts.table, e))?;
        self.uncommitted = false;
        Ok(())
    }

    /// Reads messages of one queue into the builders; returns the rows added.
    fn read_queue(&mut self, index: usize, budget: usize) -> Result<usize> {
        let cursor = self.cursors[index];
        let limit = match cursor.end {
            Some(end) => budget.min(end.saturating_sub(cursor.next) as usize),
            None => budget,
        };
        if limit == 0 {
            self.cursors[index].done = cursor.end.is_some();
            return Ok(0);
        }
        let messages = self
            .store
            .read(&self.opts.topic, cursor.queue, cursor.next, limit)
            .map_err(|e| store_error(&self.opts.table, e))?;
        if messages.is_empty() && cursor.end.is_some() {
            // Compaction or retention removed the rest of the bounded range.
            self.cursors[index].done = true;
            return Ok(0);
        }
        let mut rows = 0;
        for message in &messages {
            if cursor.end.is_some_and(|end| message.offset >= end)
                || self
                    .opts
                    .stop_timestamp
                    .is_some_and(|stop| message.store_timestamp > stop)
            {
                self.cursors[index].done = true;
                break;
            }
            self.cursors[index].next = message.offset + 1;
            self.uncommitted = true;
            if !self.opts.tag_filter.accepts(message.message.tag.as_deref()) {
                continue;
            }
            let added = self.body.decode(&self.opts.topic, message)?;
            for _ in 0..added {
                for m in &mut self.metadata {
                    m.append(&self.opts.topic, message)?;
                }
            }
            rows += added;
        }
        let c = &mut self.cursors[index];
        if c.end.is_some_and(|end| c.next >= end) {
            c.done = true;
        }
        Ok(rows)
    }

    fn flush(&mut self, rows: usize) -> Result<ChangeBatch> {
        let (physical, kinds) = self.body.finish()?;
        let mut metadata = Vec::with_capacity(self.metadata.len());
        for m in &mut self.metadata {
            metadata.push(m.finish()?);
        }
        let columns = self
            .slots
            .iter()
            .map(|s| match s {
                Slot::Physical(i) => physical[*i].clone(),
                Slot::Metadata(i) => metadata[*i].clone(),
            })
            .collect();
        let options = RecordBatchOptions::new().with_row_count(Some(rows));
        let batch = RecordBatch::try_new_with_options(self.schema.clone(), columns, &options)?;
        Ok(ChangeBatch { batch, kinds })
    }
}

impl RocketMqSource {
    fn read_batch(&mut self) -> Result<Option<ChangeBatch>> {
        // The previous batch has been taken by the runtime: its offsets are consumed.
        self.commit()?;
        let mut rows = 0;
        let mut idle_rounds = 0;
        while rows < BATCH_SIZE {
            let open: Vec<usize> = (0..self.cursors.len())
                .filter(|i| !self.cursors[*i].done)
                .collect();
            if open.is_empty() {
                break;
            }
            let mut progressed = false;
            for _ in 0..open.len() {
                let index = open[self.next_cursor % open.len()];
                self.next_cursor = self.next_cursor.wrapping_add(1);
                let before = self.cursors[index].next;
                rows += self.read_queue(index, BATCH_SIZE - rows)?;
                progressed |= self.cursors[index].next != before;
                if rows >= BATCH_SIZE {
                    break;
                }
            }
            if !progressed {
                if rows > 0 {
                    break;
                }
                // Nothing new: an unbounded source waits a little, then lets the runtime look
                // for a stop with an empty batch.
                idle_rounds += 1;
                if idle_rounds > 1 {
                    return self.flush(0).map(Some);
                }
                std::thread::sleep(IDLE_WAIT);
            }
        }
        if rows == 0 && self.cursors.iter().all(|c| c.done) {
            self.commit()?;
            self.body.report_ignored();
            return Ok(None);
        }
        self.flush(rows).map(Some)
    }
}

impl RocketMqSource {
    fn what(&self) -> String {
        format!("rocketmq table '{}'", self.opts.table)
    }
}

impl SourceReader for RocketMqSource {
    fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        match self.read_batch()? {
            Some(changes) if changes.kinds.is_some() => Err(ConnectorError::new(format!(
                "{} holds a changelog: read it with its change kinds",
                self.what()
            ))),
            changes => Ok(changes.map(|c| c.batch)),
        }
    }

    fn next_changes(&mut self) -> Result<Option<ChangeBatch>> {
        self.read_batch()
    }

    fn enable_checkpointing(&mut self) -> bool {
        self.checkpointing = true;
        true
    }

    fn snapshot_position(&mut self, checkpoint: u64) -> Result<Vec<u8>> {
        let mut w = StateWriter::new();
        w.str(&self.opts.topic);
        w.length(self.cursors.len());
        for c in &self.cursors {
            w.u64(u64::from(c.queue));
            w.u64(c.next);
            w.bool(c.done);
        }
        let offsets = self.cursors.iter().map(|c| (c.queue, c.next)).collect();
        self.snapshots.push((checkpoint, offsets));
        Ok(w.finish())
    }

    /// Every old subtask's queue offsets: this subtask keeps those of the queues it reads now.
    fn restore_rescaled(&mut self, positions: &[&[u8]]) -> Result<()> {
        for position in positions.iter().filter(|p| !p.is_empty()) {
            self.restore_position(position)?;
        }
        Ok(())
    }

    fn restore_position(&mut self, position: &[u8]) -> Result<()> {
        let what = self.what();
        let mut r = StateReader::new(position, &what);
        let topic = r.str()?;
        if topic != self.opts.topic {
            return Err(ConnectorError::new(format!(
                "{what}: the checkpoint read topic '{topic}', the table now reads '{}'",
                self.opts.topic
            )));
        }
        let n = r.length()?;
        for _ in 0..n {
            let queue = r.u64()?;
            let next = r.u64()?;
            let done = r.bool()?;
            // A queue this subtask no longer reads (other parallelism) is not restored here.
            if let Some(c) = self
                .cursors
                .iter_mut()
                .find(|c| u64::from(c.queue) == queue)
            {
                c.next = next;
                c.done = done || c.end.is_some_and(|e| next >= e);
            }
        }
        r.finish()
    }

    fn checkpoint_complete(&mut self, checkpoint: u64) -> Result<()> {
        let Some(i) = self.snapshots.iter().position(|(c, _)| *c == checkpoint) else {
            return Ok(());
        };
        let (_, offsets) = self.snapshots.remove(i);
        self.snapshots.retain(|(c, _)| *c > checkpoint);
        if let Some(group) = &self.opts.group {
            self.store
                .commit_offsets(group, &self.opts.topic, &offsets)
                .map_err(|e| store_error(&self.opts.table, e))?;
        }
        Ok(())
    }

    /// Per queue: the messages between the next offset to read and the queue's end (a
    /// bounded source's end offset); a queue that cannot be asked now is left out.
    fn backlog(&mut self) -> Option<Vec<(String, u64)>> {
        let queues = self
            .cursors
            .iter()
            .filter_map(|c| {
                let end = match c.end {
                    Some(end) => end,
                    None => {
                        self.store
                            .queue_info(&self.opts.topic, c.queue)
                            .ok()?
                            .max_offset
                    }
                };
                let lag = if c.done {
                    0
                } else {
                    end.saturating_sub(c.next)
                };
                Some((format!("{}/{}", self.opts.topic, c.queue), lag))
            })
            .collect();
        Some(queues)
    }
}
