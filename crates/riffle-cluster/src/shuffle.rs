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
//!
//! Job-wide checkpoints ([`crate::job_checkpoint`]) add *cut markers*: a producer unit ends
//! the transaction of its cut of job checkpoint `N` with the marker [`CUT_PROPERTY`] =
//! `<producer>:<N>` in every queue; a consumer skips the later messages of a producer whose
//! marker arrived until every producer's did (alignment), then reads the queue again from the
//! first message it skipped. Every message names its producer ([`PRODUCER_PROPERTY`]), so a
//! consumer's position is, per producer, the offset before which it has processed that
//! producer's messages: a message read again is processed only if it lies past its producer's
//! position, and an alignment keeps nothing in memory — the topic is its buffer.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
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
use riffle_store::{Message, StoredMessage, Topics};

use crate::codec::{DecodedRows, RowCodec};
use crate::job_checkpoint::{self, InputCut, SourceCut, UnitCuts, CUT_PROPERTY};

/// The connector name of shuffle topics in a unit's job graph (never written in SQL).
pub const CONNECTOR: &str = "riffle-shuffle";

/// The message property of a watermark marker: `<producer unit>:<watermark millis>`.
pub const WATERMARK_PROPERTY: &str = "RIFFLE_WM";

/// The message property naming the producer unit of a message of rows.
pub const PRODUCER_PROPERTY: &str = "RIFFLE_P";

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
    /// `<job>.<stage>`: with the subtask index, the unit's job id, by which its connectors
    /// find the unit's job checkpoint cuts ([`crate::job_checkpoint::for_unit`]).
    pub const UNIT: &str = "unit";
}

/// The job checkpoint cuts of the unit a connector of `spec` belongs to.
fn unit_cuts(spec: &ConnectorSpec, subtask: &SubtaskInfo) -> Option<Arc<UnitCuts>> {
    let stage = spec.options.get(options::UNIT)?;
    job_checkpoint::for_unit(&format!("{stage}-{}", subtask.index))
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
        cuts: unit_cuts(spec, &subtask),
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
    /// The unit's job checkpoint cuts (a unit of a group job).
    cuts: Option<Arc<UnitCuts>>,
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

/// The cut marker of `producer` for job checkpoint `n`.
fn cut_marker(producer: usize, n: u64) -> Message {
    let mut m = Message::new(Vec::new());
    m.properties
        .insert(CUT_PROPERTY.to_string(), format!("{producer}:{n}"));
    m
}

/// The producer and job checkpoint of a cut marker.
fn parse_cut(message: &Message) -> Option<Result<(usize, u64)>> {
    let text = message.properties.get(CUT_PROPERTY)?;
    let parsed = text
        .split_once(':')
        .and_then(|(p, n)| Some((p.parse().ok()?, n.parse().ok()?)));
    Some(parsed.ok_or_else(|| ConnectorError::new(format!("corrupted cut marker '{text}'"))))
}

/// The producer unit of a message: markers name it, rows carry [`PRODUCER_PROPERTY`].
fn producer_of(message: &Message) -> Result<usize> {
    if let Some(marker) = parse_marker(message) {
        return marker.map(|(p, _)| p);
    }
    if let Some(cut) = parse_cut(message) {
        return cut.map(|(p, _)| p);
    }
    message
        .properties
        .get(PRODUCER_PROPERTY)
        .and_then(|p| p.parse().ok())
        .ok_or_else(|| {
            ConnectorError::new(
                "a shuffle message without its producer (written by an older Riffle: start the job afresh under a new job id)",
            )
        })
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
                let mut message = Message::new(body);
                message
                    .properties
                    .insert(PRODUCER_PROPERTY.to_string(), self.producer.to_string());
                self.staged.entry(queue as u32).or_default().push(message);
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
        // The unit's cut of a job checkpoint: the marker closes what the producer wrote
        // before it, in the same transaction. After its end marker a producer writes none:
        // consumers take an ended producer as aligned, and may end before reading it.
        let cut = self.cuts.as_ref().and_then(|c| c.decide(checkpoint));
        if let Some(n) = cut.filter(|_| self.watermark < i64::MAX) {
            for queue in 0..self.queues {
                self.staged
                    .entry(queue)
                    .or_default()
                    .push(cut_marker(self.producer, n));
            }
        }
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
    let cuts = unit_cuts(spec, &subtask).map(|c| {
        let index = c.register_source();
        (c, index)
    });
    Ok(Box::new(ShuffleSource {
        group,
        snapshots: Vec::new(),
        codec: RowCodec::new(schema)?,
        store,
        topic,
        queue,
        next,
        producers: vec![i64::MIN; producers],
        done: vec![next; producers],
        held: vec![None; producers],
        pending: VecDeque::new(),
        skipped_from: None,
        cuts,
        emitted: i64::MIN,
        rows: DecodedRows::default(),
    }))
}

/// Reads one queue of a shuffle topic for one consumer unit.
pub struct ShuffleSource {
    store: Arc<dyn Topics>,
    topic: String,
    queue: u32,
    /// Next offset to read from the queue.
    next: u64,
    /// The group committing the offsets of completed checkpoints.
    group: String,
    /// Offsets of checkpoints taken but not yet complete.
    snapshots: Vec<(u64, u64)>,
    /// The latest watermark of every producer unit.
    producers: Vec<i64>,
    /// Per producer: its messages before this offset are processed.
    done: Vec<u64>,
    /// Per producer: the job checkpoint whose cut marker it is held at.
    held: Vec<Option<u64>>,
    /// Messages read and not processed yet, in queue order: at most one read's worth.
    pending: VecDeque<StoredMessage>,
    /// The offset of the first message of a held producer skipped in the current alignment:
    /// the cut reads the queue again from there (the held producers' messages are not kept,
    /// so an alignment costs no memory however long a producer takes to reach its marker).
    skipped_from: Option<u64>,
    /// The unit's job checkpoint cuts and this source's index there.
    cuts: Option<(Arc<UnitCuts>, usize)>,
    /// The watermark last reported.
    emitted: i64,
    codec: RowCodec,
    rows: DecodedRows,
}

/// What processing one message asks of the reading loop.
enum Flow {
    Continue,
    /// Emit what was decoded (a watermark rose, or the source is aligned on a cut).
    Pause,
}

impl ShuffleSource {
    fn watermark(&self) -> i64 {
        self.producers.iter().copied().min().unwrap_or(i64::MAX)
    }

    fn ended(&self) -> bool {
        self.watermark() == i64::MAX
    }

    /// The job checkpoint this source is aligned on: `Some(Some(n))` when every producer's cut
    /// marker `n` arrived or it ended (and one is held), `Some(None)` when every producer
    /// ended, `None` while some producer is neither.
    fn alignment(&self) -> Result<Option<Option<u64>>> {
        let mut n = None;
        for (p, held) in self.held.iter().enumerate() {
            match held {
                Some(h) if n.is_some_and(|n| n != *h) => {
                    return Err(ConnectorError::new(format!(
                    "shuffle topic '{}': its producers cut different job checkpoints ({} and {h})",
                    self.topic,
                    n.unwrap_or_default()
                )))
                }
                Some(h) => n = Some(*h),
                None if self.producers[p] == i64::MAX => {}
                None => return Ok(None),
            }
        }
        Ok(Some(n))
    }

    /// Whether the source waits for the barrier of its unit's cut.
    fn waiting_for_cut(&self) -> bool {
        self.cuts.is_some() && self.held.iter().any(Option::is_some)
    }

    /// Tells the unit where this source stands.
    fn report_cut(&self) -> Result<()> {
        let Some((cuts, index)) = &self.cuts else {
            return Ok(());
        };
        let cut = match self.alignment()? {
            None => SourceCut::Reading,
            Some(n) => SourceCut::Aligned {
                n,
                inputs: (0..self.producers.len())
                    .map(|p| InputCut {
                        topic: self.topic.clone(),
                        queue: self.queue,
                        producer: p,
                        offset: self.done[p],
                        ended: self.held[p].is_none(),
                    })
                    .collect(),
            },
        };
        cuts.set_source(*index, cut);
        Ok(())
    }

    /// Processes one message read from the queue.
    fn process(&mut self, stored: StoredMessage) -> Result<Flow> {
        let p = producer_of(&stored.message)?;
        let done = *self.done.get(p).ok_or_else(|| {
            ConnectorError::new(format!(
                "shuffle topic '{}': a message of producer {p}, which does not exist",
                self.topic
            ))
        })?;
        // Processed before the checkpoint this source was restored from.
        if stored.offset < done {
            return Ok(Flow::Continue);
        }
        if self.held[p].is_some() {
            self.skipped_from = Some(self.skipped_from.unwrap_or(stored.offset));
            return Ok(Flow::Continue);
        }
        self.done[p] = stored.offset + 1;
        if let Some(cut) = parse_cut(&stored.message) {
            let (_, n) = cut?;
            // Without a unit to cut (not run by a group), nothing would release it; an ended
            // producer (its cut after its end) has nothing left to align.
            if self.cuts.is_none() || self.producers[p] == i64::MAX {
                return Ok(Flow::Continue);
            }
            self.held[p] = Some(n);
            self.report_cut()?;
            return Ok(if self.alignment()?.is_some() {
                Flow::Pause
            } else {
                Flow::Continue
            });
        }
        match parse_marker(&stored.message) {
            Some(marker) => {
                let (_, watermark) = marker?;
                self.producers[p] = self.producers[p].max(watermark);
                if watermark == i64::MAX {
                    self.report_cut()?;
                }
                // The rows before the marker go out before the watermark it raises.
                if self.watermark() > self.emitted {
                    return Ok(Flow::Pause);
                }
            }
            None => self.codec.decode(&stored.message.body, &mut self.rows)?,
        }
        Ok(Flow::Continue)
    }

    /// The unit cut its job checkpoint: the held producers go on where they were held. The
    /// queue is read again from the first message skipped or not yet processed; what was
    /// processed before lies below its producer's position and is skipped.
    fn release(&mut self) -> Result<()> {
        self.held.iter_mut().for_each(|h| *h = None);
        let first_pending = self.pending.front().map(|m| m.offset);
        self.next = [self.skipped_from.take(), first_pending]
            .into_iter()
            .flatten()
            .fold(self.next, u64::min);
        self.pending.clear();
        self.report_cut()
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
            // Aligned: nothing more until the unit's barrier has taken the cut.
            if self.waiting_for_cut() && self.alignment()?.is_some() {
                idle = true;
                break;
            }
            let batch: Vec<StoredMessage> = if self.pending.is_empty() {
                let read = self
                    .store
                    .read(&self.topic, self.queue, self.next, READ_MESSAGES)
                    .map_err(|e| store_error(&self.topic, e))?;
                let Some(last) = read.last() else {
                    idle = true;
                    break;
                };
                self.next = last.offset + 1;
                read
            } else {
                self.pending.drain(..).collect()
            };
            let mut messages = batch.into_iter();
            while let Some(stored) = messages.next() {
                if let Flow::Pause = self.process(stored)? {
                    self.pending.extend(messages);
                    break 'read;
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
        // This barrier is the unit's cut when every shuffle source of the unit is aligned:
        // the position below is then exactly the cut, and the held producers' messages,
        // read again from the queue, follow it.
        if let Some((cuts, _)) = &self.cuts {
            let cut = cuts.decide(checkpoint);
            if cut.is_some() && self.held.contains(&cut) {
                self.release()?;
            }
        }
        // Per producer, the offset from which its messages are still to be processed: the
        // first it has read and not processed, or the end of what was read.
        let mut unprocessed = BTreeSet::new();
        for stored in &self.pending {
            unprocessed.insert(producer_of(&stored.message)?);
        }
        let from: Vec<u64> = (0..self.producers.len())
            .map(|p| {
                // A held producer's stays right after its cut marker: the cut's offset.
                if unprocessed.contains(&p) || self.held[p].is_some() {
                    self.done[p]
                } else {
                    self.done[p].max(self.next)
                }
            })
            .collect();
        let resume = from.iter().copied().min().unwrap_or(self.next);
        self.snapshots.push((checkpoint, resume));
        let mut w = StateWriter::new();
        w.str(&self.topic);
        w.u64(u64::from(self.queue));
        w.u64(self.next);
        w.length(self.producers.len());
        for p in &self.producers {
            w.i64(*p);
        }
        for (p, from) in from.iter().enumerate() {
            w.u64(*from);
            w.u64(self.held[p].unwrap_or(0));
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
        let next = r.u64()?;
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
        for p in 0..n {
            self.done[p] = r.u64()?;
            self.held[p] = Some(r.u64()?).filter(|h| *h > 0);
        }
        r.finish()?;
        // Read again from the first message not processed; `done` skips the others.
        self.next = self.done.iter().copied().min().unwrap_or(next);
        self.report_cut()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Array, Int64Array};
    use arrow::datatypes::{DataType, Field as ArrowField, Schema};
    use arrow::record_batch::RecordBatch;

    const TOPIC: &str = "t-shuffle";

    fn schema() -> SchemaRef {
        Arc::new(Schema::new(vec![ArrowField::new(
            "v",
            DataType::Int64,
            false,
        )]))
    }

    /// A message of `producer` holding the row `v`.
    fn row(producer: usize, v: i64) -> Message {
        let batch = RecordBatch::try_new(schema(), vec![Arc::new(Int64Array::from(vec![v]))])
            .expect("batch");
        let codec = RowCodec::new(schema()).expect("codec");
        let body = codec
            .encode(&ChangeBatch { batch, kinds: None }, &[0])
            .expect("encode");
        let mut m = Message::new(body);
        m.properties
            .insert(PRODUCER_PROPERTY.to_string(), producer.to_string());
        m
    }

    /// A source of `TOPIC`'s queue 0 written by two producers, in a unit with `cuts`.
    fn source(store: &Arc<dyn Topics>, cuts: &Arc<UnitCuts>) -> ShuffleSource {
        let index = cuts.register_source();
        ShuffleSource {
            store: store.clone(),
            topic: TOPIC.to_string(),
            queue: 0,
            next: 0,
            group: "g".to_string(),
            snapshots: Vec::new(),
            producers: vec![i64::MIN; 2],
            done: vec![0; 2],
            held: vec![None; 2],
            pending: VecDeque::new(),
            skipped_from: None,
            cuts: Some((cuts.clone(), index)),
            emitted: i64::MIN,
            codec: RowCodec::new(schema()).expect("codec"),
            rows: DecodedRows::default(),
        }
    }

    /// A store in `dir` holding the one-queue shuffle topic, and job `j`'s checkpoint log.
    fn one_queue_job(
        dir: &std::path::Path,
    ) -> (Arc<dyn Topics>, Arc<job_checkpoint::CheckpointLog>) {
        let store: Arc<dyn Topics> = riffle_connectors::rocketmq::shared_store(dir).expect("store");
        store
            .create_topic(
                TOPIC,
                riffle_store::TopicConfig {
                    queues: 1,
                    ..riffle_store::TopicConfig::default()
                },
            )
            .expect("topic");
        let log = job_checkpoint::CheckpointLog::open(store.clone(), "j", Duration::from_secs(60))
            .expect("checkpoint log");
        (store, log)
    }

    /// The rows the source delivers until it has nothing more (or ended).
    fn drain(source: &mut ShuffleSource) -> Vec<i64> {
        let mut out = Vec::new();
        for _ in 0..4 {
            let Some(changes) = source.next_changes().expect("read") else {
                break;
            };
            let column = changes.batch.column(0);
            let values = column.as_any().downcast_ref::<Int64Array>().expect("int64");
            out.extend((0..values.len()).map(|i| values.value(i)));
        }
        out
    }

    /// A consumer aligns on two producers' cut markers: it holds back the rows a producer
    /// wrote after its marker until the other's arrived, a checkpoint in the middle of the
    /// alignment restores into a source that resumes it (every row delivered once), and the
    /// cut is the offset right after each producer's marker.
    #[test]
    fn a_consumer_aligns_on_every_producers_cut_marker_across_a_restore() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (store, log) = one_queue_job(dir.path());
        let append = |messages: Vec<Message>| store.append_batch(TOPIC, 0, &messages).unwrap();
        // Producer 0 cuts job checkpoint 1 after row 1; producer 1 has not cut yet.
        append(vec![
            row(0, 1),
            cut_marker(0, 1),
            row(0, 2),
            row(1, 10),
            row(1, 11),
        ]);
        let first_cuts = UnitCuts::new(log.clone(), None);
        let mut first = source(&store, &first_cuts);
        let mut delivered = drain(&mut first);
        assert_eq!(delivered, vec![1, 10, 11], "row 2 is held back");
        // A checkpoint in the middle of the alignment is no cut.
        assert_eq!(first_cuts.decide(1), None);
        let position = first.snapshot_position(1).expect("snapshot");

        // Producer 1 cuts after row 11; both end.
        append(vec![
            cut_marker(1, 1),
            row(1, 12),
            marker(0, i64::MAX),
            marker(1, i64::MAX),
        ]);
        let cuts = UnitCuts::new(log, None);
        let mut restored = source(&store, &cuts);
        restored.restore_position(&position).expect("restore");
        // Aligned: nothing more before the cut's barrier.
        assert_eq!(drain(&mut restored), Vec::<i64>::new());
        assert_eq!(cuts.decide(2), Some(1));
        restored.snapshot_position(2).expect("snapshot");
        let cut = cuts.last().expect("the unit's cut");
        assert_eq!(cut.unit_checkpoint, 2);
        let offsets: Vec<(usize, u64, bool)> = cut
            .inputs
            .iter()
            .map(|i| (i.producer, i.offset, i.ended))
            .collect();
        assert_eq!(offsets, vec![(0, 2, false), (1, 6, false)]);
        delivered.extend(drain(&mut restored));
        delivered.sort();
        assert_eq!(delivered, vec![1, 2, 10, 11, 12]);
        assert!(restored.ended());
    }

    /// While one producer has not reached its cut marker (stalled, or its process killed),
    /// a consumer keeps none of the messages the other producers wrote after theirs: memory
    /// stays within one read however many there are. Once aligned and cut, it reads them
    /// again from the queue and delivers every row exactly once.
    #[test]
    fn an_alignment_holds_no_messages_of_producers_already_at_their_cut() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (store, log) = one_queue_job(dir.path());
        let append = |messages: Vec<Message>| store.append_batch(TOPIC, 0, &messages).unwrap();
        // Producer 0 cuts job checkpoint 1 and goes on writing; producer 1 stalls before
        // its marker.
        append(vec![row(0, 1), cut_marker(0, 1), row(1, 10)]);
        const AFTER_CUT: i64 = 20_000;
        for chunk in (0..AFTER_CUT).collect::<Vec<_>>().chunks(1000) {
            append(chunk.iter().map(|v| row(0, 100 + v)).collect());
        }
        let cuts = UnitCuts::new(log, None);
        let mut source = source(&store, &cuts);
        let mut delivered = Vec::new();
        let mut most_held = 0;
        for _ in 0..10 {
            delivered.extend(drain(&mut source));
            most_held = most_held.max(source.pending.len());
        }
        eprintln!(
            "{AFTER_CUT} messages of an aligned producer skipped, at most {most_held} in memory"
        );
        assert!(most_held <= READ_MESSAGES, "{most_held} messages in memory");
        // The whole queue was read, and only the first skipped message's offset kept.
        assert_eq!(source.next, 3 + AFTER_CUT as u64);
        assert_eq!(source.skipped_from, Some(3));
        assert_eq!(delivered, vec![1, 10]);
        assert_eq!(cuts.decide(1), None, "not aligned yet");

        // Producer 1 arrives at its marker: aligned; the cut rereads producer 0's rows.
        append(vec![
            cut_marker(1, 1),
            row(1, 11),
            marker(0, i64::MAX),
            marker(1, i64::MAX),
        ]);
        assert_eq!(drain(&mut source), Vec::<i64>::new());
        assert_eq!(cuts.decide(2), Some(1));
        source.snapshot_position(2).expect("snapshot");
        let cut = cuts.last().expect("the unit's cut");
        let offsets: Vec<(usize, u64)> =
            cut.inputs.iter().map(|i| (i.producer, i.offset)).collect();
        assert_eq!(offsets, vec![(0, 2), (1, 4 + AFTER_CUT as u64)]);
        while !source.ended() {
            delivered.extend(drain(&mut source));
            assert!(source.pending.len() <= READ_MESSAGES);
        }
        delivered.sort();
        let mut expected = vec![1, 10, 11];
        expected.extend((0..AFTER_CUT).map(|v| 100 + v));
        expected.sort();
        assert_eq!(delivered, expected, "every row exactly once");
    }
}
