//! Shuffle topics: the exchange between two stages of a scaled-out job.
//!
//! The producing stage's units write with a [`ShuffleSink`]: rows go to the queue of their
//! key's hash (or to every queue, queue 0, round-robin, as the edge's partitioning says), as
//! messages in Arrow's row format ([`crate::codec`]). Watermarks travel in band as *markers*:
//! an empty message whose property [`WATERMARK_PROPERTY`] holds `<producer unit>:<millis>`,
//! written to every queue right after the rows that preceded the watermark; the end of bounded
//! input is the marker `i64::MAX`. Rows and markers of one checkpoint are one exactly-once
//! transaction of the topic ([`riffle_connectors::rocketmq::transaction`]), so a replay
//! after a failure writes neither twice.
//!
//! The consuming stage's unit `u` reads queue `u` with a [`ShuffleSource`]: it tracks the
//! latest marker of every producer unit and reports the minimum as its watermark; a batch ends
//! at a marker that raises it, so rows and watermarks reach the operators in the order the
//! producers emitted them. It ends when every producer's end marker arrived.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use arrow::datatypes::SchemaRef;
use arrow::row::{RowConverter, SortField};
use riffle_connectors::rocketmq::transaction::{prepare_transaction, TopicCommitter};
use riffle_connectors::snapshot::{StateReader, StateWriter};
use riffle_connectors::{
    ChangeBatch, Committer, ConnectorError, Result, SinkWriter, SourceReader, SubtaskInfo,
    BATCH_SIZE,
};
use riffle_plan::{ConnectorSpec, Field};
use riffle_store::{Message, Topics};

use crate::codec::{DecodedRows, RowCodec};

/// The connector name of shuffle topics in a unit's job graph (never written in SQL).
pub const CONNECTOR: &str = "riffle-shuffle";

/// The message property of a watermark marker: `<producer unit>:<watermark millis>`.
pub const WATERMARK_PROPERTY: &str = "RIFFLE_WM";

/// Rows per message: keeps a message small whatever the batch size.
const ROWS_PER_MESSAGE: usize = 1024;

/// Messages read from the queue at a time.
const READ_MESSAGES: usize = 256;

/// How long a source waits when its queue has nothing new.
const IDLE_WAIT: Duration = Duration::from_millis(50);

/// Registers the shuffle connector with the runtime's connectors.
pub fn register() {
    riffle_connectors::register_connector(CONNECTOR, open_source, open_sink);
}

/// How a shuffle sink distributes rows over the topic's queues.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Distribution {
    /// By a stable hash of these columns.
    Hash(Vec<usize>),
    /// Every row to every queue.
    Broadcast,
    /// Every row to queue 0.
    Global,
    /// Round-robin.
    Rebalance,
}

impl Distribution {
    /// The option text of this distribution.
    pub fn option(&self) -> String {
        match self {
            Distribution::Hash(keys) => {
                let keys: Vec<String> = keys.iter().map(usize::to_string).collect();
                format!("hash:{}", keys.join(","))
            }
            Distribution::Broadcast => "broadcast".into(),
            Distribution::Global => "global".into(),
            Distribution::Rebalance => "rebalance".into(),
        }
    }

    fn parse(text: &str) -> Result<Self> {
        Ok(match text {
            "broadcast" => Distribution::Broadcast,
            "global" => Distribution::Global,
            "rebalance" => Distribution::Rebalance,
            t => match t.strip_prefix("hash:") {
                Some("") => Distribution::Hash(Vec::new()),
                Some(keys) => Distribution::Hash(
                    keys.split(',')
                        .map(|k| k.parse().map_err(|_| bad_option("distribution", t)))
                        .collect::<Result<_>>()?,
                ),
                None => return Err(bad_option("distribution", t)),
            },
        })
    }
}

/// The options of a shuffle connector (see [`crate::units`], which writes them).
pub mod options {
    /// The topic (where it lives: [`crate::backend::options`]).
    pub const TOPIC: &str = "topic";
    /// Sink: the distribution ([`super::Distribution::option`]).
    pub const DISTRIBUTION: &str = "distribution";
    /// Source: how many producer units write the topic.
    pub const PRODUCERS: &str = "producers";
    /// Source: the consumer group whose offsets record what completed checkpoints consumed
    /// (for `riffle job status`).
    pub const GROUP: &str = "group";
}

fn bad_option(key: &str, value: &str) -> ConnectorError {
    ConnectorError::new(format!("shuffle connector: invalid '{key}' = '{value}'"))
}

fn option<'a>(spec: &'a ConnectorSpec, key: &str) -> Result<&'a str> {
    spec.options
        .get(key)
        .map(String::as_str)
        .ok_or_else(|| ConnectorError::new(format!("shuffle connector: missing option '{key}'")))
}

fn topics(spec: &ConnectorSpec) -> Result<Arc<dyn Topics>> {
    crate::backend::TopicBackend::from_options(&spec.options)
        .and_then(|b| b.open())
        .map_err(|e| ConnectorError::new(e.message))
}

fn store_error(topic: &str, e: riffle_store::StoreError) -> ConnectorError {
    ConnectorError::new(format!("shuffle topic '{topic}': {e}"))
}

fn open_sink(
    spec: &ConnectorSpec,
    fields: &[Field],
    subtask: SubtaskInfo,
) -> Result<Box<dyn SinkWriter>> {
    let topic = option(spec, options::TOPIC)?.to_string();
    let distribution = Distribution::parse(option(spec, options::DISTRIBUTION)?)?;
    let store = topics(spec)?;
    let queues = store
        .topic_config(&topic)
        .map_err(|e| store_error(&topic, e))?
        .queues;
    let schema = Arc::new(riffle_plan::arrow_schema(fields)?);
    let key_converter = match &distribution {
        Distribution::Hash(keys) if !keys.is_empty() => {
            let mut sort_fields = Vec::with_capacity(keys.len());
            for k in keys {
                let field = schema
                    .fields()
                    .get(*k)
                    .ok_or_else(|| bad_option(options::DISTRIBUTION, &distribution.option()))?;
                sort_fields.push(SortField::new(field.data_type().clone()));
            }
            Some(RowConverter::new(sort_fields)?)
        }
        _ => None,
    };
    Ok(Box::new(ShuffleSink {
        codec: RowCodec::new(schema)?,
        store,
        topic,
        queues,
        distribution,
        key_converter,
        producer: subtask.index,
        next_queue: subtask.index as u32,
        staged: BTreeMap::new(),
        transaction: None,
        watermark: i64::MIN,
    }))
}

/// Writes one producer unit's rows and watermarks to a shuffle topic.
pub struct ShuffleSink {
    store: Arc<dyn Topics>,
    topic: String,
    queues: u32,
    distribution: Distribution,
    key_converter: Option<RowConverter>,
    codec: RowCodec,
    producer: usize,
    next_queue: u32,
    /// Messages not yet published, per queue.
    staged: BTreeMap<u32, Vec<Message>>,
    /// Exactly-once: the transactional id (else messages are published on every write).
    transaction: Option<String>,
    /// The newest watermark written.
    watermark: i64,
}

impl ShuffleSink {
    /// The queue of each row.
    fn queues_of(&mut self, batch: &ChangeBatch) -> Result<Vec<Vec<u32>>> {
        let n = self.queues.max(1) as usize;
        let mut parts: Vec<Vec<u32>> = vec![Vec::new(); n];
        let rows = batch.num_rows() as u32;
        match &self.distribution {
            Distribution::Global => parts[0].extend(0..rows),
            Distribution::Broadcast => parts.iter_mut().for_each(|p| p.extend(0..rows)),
            Distribution::Rebalance => {
                for row in 0..rows {
                    self.next_queue = (self.next_queue + 1) % n as u32;
                    parts[self.next_queue as usize].push(row);
                }
            }
            Distribution::Hash(keys) => match &self.key_converter {
                None => parts[0].extend(0..rows),
                Some(converter) => {
                    let columns: Vec<_> = keys
                        .iter()
                        .map(|k| batch.batch.column(*k).clone())
                        .collect();
                    let encoded = converter.convert_columns(&columns)?;
                    for row in 0..rows {
                        // A stable hash: the same queue for the same key in every process and build.
                        let h = riffle_state::fnv1a(encoded.row(row as usize).as_ref());
                        parts[(h % n as u64) as usize].push(row);
                    }
                }
            },
        }
        Ok(parts)
    }

    fn publish(&mut self) -> Result<()> {
        for (queue, messages) in std::mem::take(&mut self.staged) {
            self.store
                .append_batch(&self.topic, queue, &messages)
                .map_err(|e| store_error(&self.topic, e))?;
        }
        Ok(())
    }
}

fn marker(producer: usize, watermark: i64) -> Message {
    let mut m = Message::new(Vec::new());
    m.properties.insert(
        WATERMARK_PROPERTY.to_string(),
        format!("{producer}:{watermark}"),
    );
    m
}

/// The producer and watermark of a marker message.
fn parse_marker(message: &Message) -> Option<Result<(usize, i64)>> {
    let text = message.properties.get(WATERMARK_PROPERTY)?;
    let parsed = text
        .split_once(':')
        .and_then(|(p, w)| Some((p.parse().ok()?, w.parse().ok()?)));
    Some(parsed.ok_or_else(|| ConnectorError::new(format!("corrupted watermark marker '{text}'"))))
}

impl SinkWriter for ShuffleSink {
    fn write(&mut self, batch: &ChangeBatch) -> Result<()> {
        for (queue, rows) in self.queues_of(batch)?.into_iter().enumerate() {
            for chunk in rows.chunks(ROWS_PER_MESSAGE) {
                let body = self.codec.encode(batch, chunk)?;
                self.staged
                    .entry(queue as u32)
                    .or_default()
                    .push(Message::new(body));
            }
        }
        if self.transaction.is_none() {
            self.publish()?;
        }
        Ok(())
    }

    fn write_watermark(&mut self, watermark: i64) -> Result<()> {
        // A marker that does not raise this producer's watermark tells the consumers nothing
        // (the end of input can be reported twice, the second time in a later checkpoint, where
        // a consumer that ended at the first one would never read it).
        if watermark <= self.watermark {
            return Ok(());
        }
        self.watermark = watermark;
        for queue in 0..self.queues {
            let messages = self.staged.entry(queue).or_default();
            // A marker right after this producer's previous one replaces it: nothing of this
            // producer lies between them in the queue.
            match messages.last_mut() {
                Some(last) if parse_marker(last).is_some() => {
                    *last = marker(self.producer, watermark)
                }
                _ => messages.push(marker(self.producer, watermark)),
            }
        }
        if self.transaction.is_none() {
            self.publish()?;
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<()> {
        if self.transaction.is_none() {
            self.publish()?;
        }
        self.store.flush().map_err(|e| store_error(&self.topic, e))
    }

    fn enable_exactly_once(
        &mut self,
        transactional_id: &str,
    ) -> Result<Option<Arc<dyn Committer>>> {
        self.transaction = Some(transactional_id.to_string());
        Ok(Some(Arc::new(TopicCommitter::new(
            self.store.clone(),
            &format!("shuffle {}", self.topic),
            &self.topic,
        ))))
    }

    fn prepare_commit(&mut self, checkpoint: u64) -> Result<Vec<u8>> {
        let Some(id) = &self.transaction else {
            return Ok(Vec::new());
        };
        prepare_transaction(
            self.store.as_ref(),
            &format!("shuffle {}", self.topic),
            &self.topic,
            &format!("{id}/{checkpoint}"),
            std::mem::take(&mut self.staged),
        )
    }
}

fn open_source(
    spec: &ConnectorSpec,
    schema: SchemaRef,
    subtask: SubtaskInfo,
) -> Result<Box<dyn SourceReader>> {
    let topic = option(spec, options::TOPIC)?.to_string();
    let text = option(spec, options::PRODUCERS)?;
    let producers: usize = text
        .parse()
        .map_err(|_| bad_option(options::PRODUCERS, text))?;
    let store = topics(spec)?;
    let queues = store
        .topic_config(&topic)
        .map_err(|e| store_error(&topic, e))?
        .queues;
    let queue = u32::try_from(subtask.index)
        .ok()
        .filter(|q| *q < queues)
        .ok_or_else(|| {
            ConnectorError::new(format!(
                "shuffle topic '{topic}' has {queues} queues, unit {} has none to read",
                subtask.index
            ))
        })?;
    let next = store
        .queue_info(&topic, queue)
        .map_err(|e| store_error(&topic, e))?
        .min_offset;
    let group = option(spec, options::GROUP)?.to_string();
    Ok(Box::new(ShuffleSource {
        group,
        snapshots: Vec::new(),
        codec: RowCodec::new(schema)?,
        store,
        topic,
        queue,
        next,
        producers: vec![i64::MIN; producers],
        emitted: i64::MIN,
        rows: DecodedRows::default(),
    }))
}

/// Reads one queue of a shuffle topic for one consumer unit.
pub struct ShuffleSource {
    store: Arc<dyn Topics>,
    topic: String,
    queue: u32,
    /// Next offset to read.
    next: u64,
    /// The group committing the offsets of completed checkpoints.
    group: String,
    /// Offsets of checkpoints taken but not yet complete.
    snapshots: Vec<(u64, u64)>,
    /// The latest watermark of every producer unit.
    producers: Vec<i64>,
    /// The watermark last reported.
    emitted: i64,
    codec: RowCodec,
    rows: DecodedRows,
}

impl ShuffleSource {
    fn watermark(&self) -> i64 {
        self.producers.iter().copied().min().unwrap_or(i64::MAX)
    }

    fn ended(&self) -> bool {
        self.watermark() == i64::MAX
    }
}

impl SourceReader for ShuffleSource {
    fn next_batch(&mut self) -> Result<Option<arrow::record_batch::RecordBatch>> {
        Err(ConnectorError::new(
            "a shuffle topic holds a changelog: read it with its change kinds",
        ))
    }

    fn next_changes(&mut self) -> Result<Option<ChangeBatch>> {
        if self.ended() && self.watermark() == self.emitted {
            return Ok(None);
        }
        let mut idle = false;
        'read: while self.rows.len() < BATCH_SIZE && !self.ended() {
            let messages = self
                .store
                .read(&self.topic, self.queue, self.next, READ_MESSAGES)
                .map_err(|e| store_error(&self.topic, e))?;
            if messages.is_empty() {
                idle = true;
                break;
            }
            for stored in &messages {
                self.next = stored.offset + 1;
                match parse_marker(&stored.message) {
                    Some(marker) => {
                        let (producer, watermark) = marker?;
                        let slot = self.producers.get_mut(producer).ok_or_else(|| {
                            ConnectorError::new(format!(
                                "shuffle topic '{}': a marker of producer {producer}, which does not exist",
                                self.topic
                            ))
                        })?;
                        *slot = (*slot).max(watermark);
                        // The rows before the marker go out before the watermark it raises.
                        if self.watermark() > self.emitted {
                            break 'read;
                        }
                    }
                    None => self.codec.decode(&stored.message.body, &mut self.rows)?,
                }
            }
        }
        if idle && self.rows.is_empty() && self.watermark() == self.emitted {
            std::thread::sleep(IDLE_WAIT);
        }
        self.codec.finish(&mut self.rows).map(Some)
    }

    fn take_watermark(&mut self) -> Option<i64> {
        let w = self.watermark();
        (w > self.emitted).then(|| {
            self.emitted = w;
            w
        })
    }

    fn enable_checkpointing(&mut self) -> bool {
        true
    }

    fn checkpoint_complete(&mut self, checkpoint: u64) -> Result<()> {
        let Some(i) = self.snapshots.iter().position(|(c, _)| *c == checkpoint) else {
            return Ok(());
        };
        let (_, offset) = self.snapshots.remove(i);
        self.snapshots.retain(|(c, _)| *c > checkpoint);
        self.store
            .commit_offsets(&self.group, &self.topic, &[(self.queue, offset)])
            .map_err(|e| store_error(&self.topic, e))
    }

    fn snapshot_position(&mut self, checkpoint: u64) -> Result<Vec<u8>> {
        self.snapshots.push((checkpoint, self.next));
        let mut w = StateWriter::new();
        w.str(&self.topic);
        w.u64(u64::from(self.queue));
        w.u64(self.next);
        w.length(self.producers.len());
        for p in &self.producers {
            w.i64(*p);
        }
        Ok(w.finish())
    }

    fn restore_position(&mut self, position: &[u8]) -> Result<()> {
        let what = format!("the position in shuffle topic '{}'", self.topic);
        let mut r = StateReader::new(position, &what);
        let topic = r.str()?;
        let queue = r.u64()?;
        if topic != self.topic || queue != u64::from(self.queue) {
            return Err(ConnectorError::new(format!(
                "{what}: the checkpoint read '{topic}' queue {queue}, this unit reads queue {}",
                self.queue
            )));
        }
        self.next = r.u64()?;
        let n = r.length()?;
        if n != self.producers.len() {
            return Err(ConnectorError::new(format!(
                "{what}: the checkpoint had {n} producers, the job has {}",
                self.producers.len()
            )));
        }
        for p in self.producers.iter_mut() {
            *p = r.i64()?;
        }
        r.finish()
    }
}
