//! The rocketmq sink, on the embedded store or a cluster (any [`Topics`]).
//!
//! Every row becomes one message. Its body holds the row in the table's format (`json`, `csv`,
//! `raw`, or rocketmq-flink's delimited text) without the key columns (unless
//! `rocketmq.sink.key.write.to.body` / `writeKeysToBody`) and without a dynamic tag column
//! (unless `...dynamic.write.included`). Key columns (`rocketmq.sink.key.columns` /
//! `keyColumns`) give the message keys, the tag is static (`rocketmq.sink.tag`) or taken from a
//! column, and the queue is chosen by the hash of the keys (round-robin without keys).
//!
//! Append-only input is written as is. A table with a `PRIMARY KEY` is written as an upsert
//! changelog, as Flink's upsert-kafka does: the message key is the primary key (its columns'
//! values, a JSON array when there are several), `-U` rows are dropped, `+I`/`+U` rows are
//! messages and `-D` rows are tombstones (the key with an empty body); a topic the sink creates
//! for such a table is a COMPACTION topic. Updating input without a primary key is rejected by
//! the planner, as Flink rejects it.
//!
//! In a changelog format (`debezium-json`, `canal-json`) every change is a message holding its
//! event (Flink's Kafka sink with these formats); a primary key then only keys the messages.
//!
//! With checkpointing the sink is two-phase: it publishes the messages of a checkpoint when the
//! checkpoint completes. Without checkpointing it publishes as it writes, except with
//! `EXACTLY_ONCE` delivery, where it publishes when its input ends (as Flink's Kafka sink
//! commits its transaction at the end of input when checkpointing is off).

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow::array::{Array, AsArray};
use arrow::datatypes::DataType;
use riffle_plan::{ConnectorSpec, Field};

use crate::avro::{arrow_fields, AvroEncoder};
use riffle_store::{queue_for_key, CleanupPolicy, Message, StoreError, TopicConfig, Topics};

use super::options::{normalize, BodyFormat, RocketMqOptions, Role};
use super::transaction::{prepare_transaction, TopicCommitter};
use super::{open_topics, store_error};
use crate::changelog::ChangelogEncoder;
use crate::options::Options;
use crate::raw::RawEncoder;
use crate::rows::{is_writable_text_type, RowEncoder};
use crate::{ChangeBatch, Committer, ConnectorError, Result, RowKind, SinkWriter, SubtaskInfo};

/// Opens sink subtask `subtask` of a rocketmq table writing rows of `fields`.
pub fn open_sink(
    spec: &ConnectorSpec,
    fields: &[Field],
    subtask: SubtaskInfo,
) -> Result<Box<dyn SinkWriter>> {
    let mut options = Options::new(spec);
    let opts = normalize(spec, Role::Sink, &mut options)?;
    options.finish()?;
    let column = |name: &str, what: &str| {
        fields.iter().position(|f| f.name == name).ok_or_else(|| {
            ConnectorError::new(format!(
                "{what} column '{name}' is not a column of rocketmq table '{}'",
                spec.table
            ))
        })
    };
    let changelog = matches!(opts.body, BodyFormat::Changelog(_));
    let keyed_by_primary_key = !spec.primary_key.is_empty();
    if opts.upsert_changelog && (!keyed_by_primary_key || changelog) {
        return Err(ConnectorError::new(format!(
            "rocketmq table '{}' is an upsert changelog ('riffle.changelog-mode' = 'upsert'), which needs a PRIMARY KEY to key its messages and a format that holds rows, not change events",
            spec.table
        )));
    }
    let upsert = keyed_by_primary_key && !changelog;
    let primary_key = spec
        .primary_key
        .iter()
        .map(|c| column(c, "primary key"))
        .collect::<Result<Vec<_>>>()?;
    let mut key_columns = opts
        .key_columns
        .iter()
        .map(|c| column(c, "key"))
        .collect::<Result<Vec<_>>>()?;
    let mut keys_in_body = opts.keys_in_body;
    if keyed_by_primary_key {
        if !key_columns.is_empty() && key_columns != primary_key {
            return Err(ConnectorError::new(format!(
                "rocketmq table '{}' has a PRIMARY KEY, which keys its messages; its key columns must be the primary key columns",
                spec.table
            )));
        }
        if key_columns.is_empty() {
            // Keys derived from the primary key stay in the body, as upsert-kafka's default.
            keys_in_body = true;
        }
        key_columns = primary_key;
    }
    let tag_column = opts
        .tag_column
        .as_deref()
        .map(|c| column(c, "tag"))
        .transpose()?;
    let metadata = WrittenMetadata::of(spec, fields)?;
    let body_columns: Vec<usize> = (0..fields.len())
        .filter(|i| !metadata.columns().contains(i))
        .filter(|i| keys_in_body || !key_columns.contains(i))
        .filter(|i| opts.tag_column_in_body || tag_column != Some(*i))
        .collect();
    let body = body_encoder(&opts, fields, &body_columns)?;
    let store = open_topics(&opts)?;
    let queues = ensure_topic(store.as_ref(), &opts, upsert)?;
    Ok(Box::new(RocketMqSink {
        store,
        table: opts.table.clone(),
        topic: opts.topic.clone(),
        queues,
        body,
        body_columns,
        key_columns,
        static_key: opts.message_key.clone(),
        static_tag: opts.sink_tag.clone(),
        tag_column,
        metadata,
        upsert,
        next_queue: subtask.index as u32,
        text: String::new(),
        staged: opts.exactly_once.then(|| (String::new(), BTreeMap::new())),
        publish_at_end: opts.exactly_once,
    }))
}

/// The sink table's writable metadata columns (`tag`, `keys`, `properties`), by index in the
/// written row.
#[derive(Debug, Default)]
struct WrittenMetadata {
    tag: Option<usize>,
    keys: Option<usize>,
    properties: Option<usize>,
}

impl WrittenMetadata {
    /// The non-VIRTUAL metadata columns of `spec`; keys the connector cannot write fail, as
    /// Flink's sinks reject them.
    fn of(spec: &ConnectorSpec, fields: &[Field]) -> Result<Self> {
        let schema = riffle_dialects::connector(super::options::CONNECTOR).ok_or_else(|| {
            ConnectorError::new("the rocketmq connector's data (dialects/) did not load")
        })?;
        let mut written = Self::default();
        for m in spec.metadata.iter().filter(|m| !m.is_virtual) {
            let writable = schema.metadata_key(&m.key).is_some_and(|k| k.writable);
            let index = fields.iter().position(|f| f.name == m.column);
            let slot = match m.key.as_str() {
                "tag" => Some(&mut written.tag),
                "keys" => Some(&mut written.keys),
                "properties" => Some(&mut written.properties),
                _ => None,
            };
            match (index, slot) {
                (Some(i), Some(slot)) if writable => *slot = Some(i),
                _ => {
                    let keys: Vec<&str> = schema
                        .metadata
                        .iter()
                        .filter(|k| k.writable)
                        .map(|k| k.key.as_str())
                        .collect();
                    return Err(ConnectorError::new(format!(
                        "Invalid metadata key '{}' in column '{}' of table '{}'. The rocketmq connector supports the following metadata keys for writing:\n{}\n(declare other metadata columns VIRTUAL)",
                        m.key,
                        m.column,
                        spec.table,
                        keys.join("\n")
                    )));
                }
            }
        }
        Ok(written)
    }

    fn columns(&self) -> Vec<usize> {
        [self.tag, self.keys, self.properties]
            .into_iter()
            .flatten()
            .collect()
    }

    /// Sets the tag, keys and properties of `message` from row `row`.
    fn apply(&self, batch: &ChangeBatch, row: usize, message: &mut Message) {
        let text = |column: Option<usize>| {
            column.and_then(|i| RocketMqSink::value_text(batch.batch.column(i).as_ref(), row))
        };
        if let Some(tag) = text(self.tag) {
            message.tag = Some(tag);
        }
        if let Some(keys) = text(self.keys) {
            message
                .keys
                .extend(keys.split_whitespace().map(str::to_string));
        }
        let Some(map) = self
            .properties
            .map(|i| batch.batch.column(i))
            .filter(|a| !a.is_null(row))
            .and_then(|a| a.as_map_opt().map(|m| m.value(row)))
        else {
            return;
        };
        let (keys, values) = (map.column(0), map.column(1));
        for i in 0..map.len() {
            let key = RocketMqSink::value_text(keys.as_ref(), i);
            let value = RocketMqSink::value_text(values.as_ref(), i);
            if let (Some(k), Some(v)) = (key, value) {
                message.properties.insert(k, v);
            }
        }
    }
}

/// How bodies are written.
enum BodyEncoder {
    Text(RowEncoder),
    Changelog(ChangelogEncoder),
    Raw(RawEncoder),
    Avro(AvroEncoder),
}

fn body_encoder(
    opts: &RocketMqOptions,
    fields: &[Field],
    body_columns: &[usize],
) -> Result<BodyEncoder> {
    let types = body_columns
        .iter()
        .map(|i| fields[*i].arrow().map_err(ConnectorError::from))
        .collect::<Result<Vec<_>>>()?;
    let names = || {
        body_columns
            .iter()
            .map(|i| fields[*i].name.clone())
            .collect::<Vec<_>>()
    };
    match &opts.body {
        BodyFormat::Raw(options) => {
            let columns: Vec<(String, DataType)> = names().into_iter().zip(types).collect();
            Ok(BodyEncoder::Raw(RawEncoder::new(
                &opts.table,
                &columns,
                *options,
            )?))
        }
        BodyFormat::Avro(format) => {
            let columns: Vec<(String, DataType, bool)> = body_columns
                .iter()
                .zip(types)
                .map(|(i, t)| (fields[*i].name.clone(), t, fields[*i].nullable))
                .collect();
            Ok(BodyEncoder::Avro(AvroEncoder::new(
                &opts.table,
                &arrow_fields(&columns),
                format,
                // The subject Flink's Kafka tables default to.
                &format!("{}-value", opts.topic),
            )?))
        }
        BodyFormat::Changelog(format) => Ok(BodyEncoder::Changelog(ChangelogEncoder::new(
            &opts.table,
            names(),
            &types,
            format.clone(),
        )?)),
        BodyFormat::Text(format) => {
            for (i, t) in body_columns.iter().zip(&types) {
                if !is_writable_text_type(t) {
                    return Err(ConnectorError::new(format!(
                        "unsupported feature: writing column '{}' of type {} to rocketmq table '{}' in the {} format",
                        fields[*i].name,
                        fields[*i].data_type,
                        opts.table,
                        format.name()
                    )));
                }
            }
            Ok(BodyEncoder::Text(RowEncoder::new(names(), format.clone())))
        }
    }
}

/// Creates the topic if it is missing (several sink subtasks may race); returns its queues.
fn ensure_topic(store: &dyn Topics, opts: &RocketMqOptions, upsert: bool) -> Result<u32> {
    match store.topic_config(&opts.topic) {
        Ok(config) => return Ok(config.queues),
        Err(StoreError::TopicNotFound(_)) => {}
        Err(e) => return Err(store_error(&opts.table, e)),
    }
    let config = TopicConfig {
        queues: opts.store_queues,
        cleanup_policy: if upsert {
            CleanupPolicy::Compaction
        } else {
            CleanupPolicy::Delete
        },
        ..TopicConfig::default()
    };
    match store.create_topic(&opts.topic, config) {
        Ok(()) | Err(StoreError::TopicExists(_)) => store
            .topic_config(&opts.topic)
            .map(|c| c.queues)
            .map_err(|e| store_error(&opts.table, e)),
        Err(e) => Err(store_error(&opts.table, e)),
    }
}

struct RocketMqSink {
    store: Arc<dyn Topics>,
    table: String,
    topic: String,
    queues: u32,
    body: BodyEncoder,
    body_columns: Vec<usize>,
    key_columns: Vec<usize>,
    static_key: Option<String>,
    static_tag: Option<String>,
    tag_column: Option<usize>,
    metadata: WrittenMetadata,
    upsert: bool,
    /// Round-robin queue for messages without keys.
    next_queue: u32,
    text: String,
    /// Exactly-once: messages of the open transaction, per queue, and the transactional id.
    staged: Option<(String, BTreeMap<u32, Vec<Message>>)>,
    /// `EXACTLY_ONCE` without checkpointing: the staged messages are published when the input
    /// ends, as Flink's committer commits at the end of input when checkpointing is off (a job
    /// that fails publishes nothing).
    publish_at_end: bool,
}

impl RocketMqSink {
    /// The text of a non-null value, as Flink's text formats render it.
    fn value_text(array: &dyn Array, row: usize) -> Option<String> {
        if array.is_null(row) {
            return None;
        }
        let mut out = String::new();
        if !crate::format::write_sql_temporal(&mut out, array, row, false) {
            crate::format::write_value(&mut out, array, row);
        }
        Some(out)
    }

    fn keys(&self, batch: &ChangeBatch, row: usize) -> Vec<String> {
        let values: Vec<Option<String>> = self
            .key_columns
            .iter()
            .map(|i| Self::value_text(batch.batch.column(*i).as_ref(), row))
            .collect();
        let mut keys: Vec<String> = if self.upsert && values.len() > 1 {
            let array: Vec<serde_json::Value> = values
                .into_iter()
                .map(|v| v.map_or(serde_json::Value::Null, serde_json::Value::String))
                .collect();
            vec![serde_json::Value::Array(array).to_string()]
        } else {
            values.into_iter().flatten().collect()
        };
        if let Some(key) = &self.static_key {
            keys.push(key.clone());
        }
        keys
    }

    fn body(&mut self, batch: &ChangeBatch, row: usize) -> Result<Vec<u8>> {
        let columns: Vec<&dyn Array> = self
            .body_columns
            .iter()
            .map(|i| batch.batch.column(*i).as_ref())
            .collect();
        self.text.clear();
        match &mut self.body {
            // A NULL value is an empty body.
            BodyEncoder::Raw(encoder) => {
                return Ok(columns
                    .first()
                    .and_then(|c| encoder.encode(*c, row))
                    .unwrap_or_default())
            }
            BodyEncoder::Avro(encoder) => {
                let mut body = Vec::new();
                encoder.encode(&columns, row, &mut body)?;
                return Ok(body);
            }
            BodyEncoder::Text(encoder) => encoder.encode(&columns, row, &mut self.text),
            BodyEncoder::Changelog(encoder) => {
                encoder.encode(batch.kind(row), &columns, row, &mut self.text)
            }
        }
        Ok(self.text.as_bytes().to_vec())
    }
}

impl SinkWriter for RocketMqSink {
    fn write(&mut self, batch: &ChangeBatch) -> Result<()> {
        let mut by_queue: BTreeMap<u32, Vec<Message>> = BTreeMap::new();
        for row in 0..batch.num_rows() {
            let kind = batch.kind(row);
            let changelog = matches!(self.body, BodyEncoder::Changelog(_));
            let body = match (kind, self.upsert) {
                _ if changelog => self.body(batch, row)?,
                (RowKind::Insert, _) | (RowKind::UpdateAfter, true) => self.body(batch, row)?,
                (RowKind::UpdateBefore, true) => continue,
                // A tombstone: the key without a body.
                (RowKind::Delete, true) => Vec::new(),
                (_, false) => {
                    return Err(ConnectorError::new(format!(
                    "rocketmq table '{}' has no PRIMARY KEY and cannot take update changes ({})",
                    self.table,
                    kind.short()
                )))
                }
            };
            let mut message = Message::new(body);
            message.keys = self.keys(batch, row);
            let tag = match self.tag_column {
                Some(i) => Self::value_text(batch.batch.column(i).as_ref(), row),
                None => self.static_tag.clone(),
            };
            message.tag = tag;
            self.metadata.apply(batch, row, &mut message);
            let queue = if message.keys.is_empty() {
                self.next_queue = (self.next_queue + 1) % self.queues;
                self.next_queue
            } else {
                queue_for_key(&message.keys.join(" "), self.queues)
            };
            by_queue.entry(queue).or_default().push(message);
        }
        if let Some((_, staged)) = &mut self.staged {
            for (queue, messages) in by_queue {
                staged.entry(queue).or_default().extend(messages);
            }
            return Ok(());
        }
        for (queue, messages) in by_queue {
            self.store
                .append_batch(&self.topic, queue, &messages)
                .map_err(|e| store_error(&self.table, e))?;
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<()> {
        if self.publish_at_end {
            let staged = self.staged.take().map(|(_, s)| s).unwrap_or_default();
            for (queue, messages) in staged {
                self.store
                    .append_batch(&self.topic, queue, &messages)
                    .map_err(|e| store_error(&self.table, e))?;
            }
        }
        self.store.flush().map_err(|e| store_error(&self.table, e))
    }

    fn enable_exactly_once(
        &mut self,
        transactional_id: &str,
    ) -> Result<Option<Arc<dyn Committer>>> {
        // Checkpoints publish the staged messages from now on.
        self.publish_at_end = false;
        self.staged = Some((transactional_id.to_string(), BTreeMap::new()));
        Ok(Some(Arc::new(TopicCommitter::new(
            self.store.clone(),
            &self.table,
            &self.topic,
        ))))
    }

    fn prepare_commit(&mut self, checkpoint: u64) -> Result<Vec<u8>> {
        let Some((id, staged)) = &mut self.staged else {
            return Ok(Vec::new());
        };
        prepare_transaction(
            self.store.as_ref(),
            &self.table,
            &self.topic,
            &format!("{id}/{checkpoint}"),
            std::mem::take(staged),
        )
    }
}
