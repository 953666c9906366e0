//! Exactly-once publication of messages to a topic, in two phases: messages staged per queue
//! are closed into a *transaction* on a checkpoint barrier ([`prepare_transaction`]; the bytes
//! go into the checkpoint) and published by a [`TopicCommitter`] once the checkpoint is
//! complete, and again after a restore: a commit first looks for its own marker, so
//! publishing twice changes nothing. Used by the rocketmq sink and by the shuffle topics
//! between the stages of a scaled-out job.

use std::collections::BTreeMap;
use std::sync::Arc;

use riffle_store::{Message, Topics};

use super::store_error;
use crate::snapshot::{StateReader, StateWriter};
use crate::{Committer, ConnectorError, Result};

/// Closes the messages staged per queue into transaction `txn` (unique per sink subtask and
/// checkpoint); the bytes are what [`TopicCommitter::commit`] publishes.
pub fn prepare_transaction(
    store: &dyn Topics,
    table: &str,
    topic: &str,
    txn: &str,
    staged: BTreeMap<u32, Vec<Message>>,
) -> Result<Vec<u8>> {
    let mut w = StateWriter::new();
    w.str(txn);
    w.length(staged.len());
    for (queue, messages) in staged {
        // The commit appends after this offset: it looks for its marker only from here.
        let scan_from = store
            .queue_info(topic, queue)
            .map_err(|e| store_error(table, e))?
            .max_offset;
        w.u64(u64::from(queue));
        w.u64(scan_from);
        w.length(messages.len());
        for m in &messages {
            write_message(&mut w, m);
        }
    }
    Ok(w.finish())
}

/// The message property naming the transaction a message was committed in: a commit that finds
/// its marker in a queue knows that queue's part is already published.
pub const TRANSACTION_PROPERTY: &str = "RIFFLE_TXN";

/// Publishes the transactions of one sink subtask (see [`crate::SinkWriter::prepare_commit`]).
pub struct TopicCommitter {
    store: Arc<dyn Topics>,
    table: String,
    topic: String,
}

impl TopicCommitter {
    /// A committer publishing to `topic` (of table `table`, for messages) in `store`.
    pub fn new(store: Arc<dyn Topics>, table: &str, topic: &str) -> Self {
        Self {
            store,
            table: table.to_string(),
            topic: topic.to_string(),
        }
    }

    /// Whether a message of transaction `txn` is in `queue` at or after `from`.
    fn published(&self, queue: u32, from: u64, txn: &str) -> Result<bool> {
        let mut next = from;
        loop {
            let read = self
                .store
                .read(&self.topic, queue, next, 1024)
                .map_err(|e| store_error(&self.table, e))?;
            let Some(last) = read.last() else {
                return Ok(false);
            };
            next = last.offset + 1;
            if read.iter().any(|m| {
                m.message
                    .properties
                    .get(TRANSACTION_PROPERTY)
                    .map(String::as_str)
                    == Some(txn)
            }) {
                return Ok(true);
            }
        }
    }
}

impl Committer for TopicCommitter {
    fn commit(&self, _checkpoint: u64, transaction: &[u8]) -> Result<()> {
        if transaction.is_empty() {
            return Ok(());
        }
        let what = format!("the transaction of rocketmq table '{}'", self.table);
        let mut r = StateReader::new(transaction, &what);
        let txn = r.str()?;
        for _ in 0..r.length()? {
            let queue = u32::try_from(r.u64()?).map_err(|_| {
                ConnectorError::new(format!("corrupted {what}: queue out of range"))
            })?;
            let scan_from = r.u64()?;
            let count = r.length()?;
            let mut messages = Vec::with_capacity(count);
            for _ in 0..count {
                let mut m = read_message(&mut r)?;
                m.properties
                    .insert(TRANSACTION_PROPERTY.to_string(), txn.clone());
                messages.push(m);
            }
            // One batch per queue is one write: it is published whole or not at all.
            if messages.is_empty() || self.published(queue, scan_from, &txn)? {
                continue;
            }
            self.store
                .append_batch(&self.topic, queue, &messages)
                .map_err(|e| store_error(&self.table, e))?;
        }
        r.finish()?;
        self.store.flush().map_err(|e| store_error(&self.table, e))
    }
}

fn write_message(w: &mut StateWriter, m: &Message) {
    w.length(m.keys.len());
    for k in &m.keys {
        w.str(k);
    }
    w.bool(m.tag.is_some());
    if let Some(tag) = &m.tag {
        w.str(tag);
    }
    w.length(m.properties.len());
    for (k, v) in &m.properties {
        w.str(k);
        w.str(v);
    }
    w.bytes(&m.body);
    w.i64(m.born_timestamp);
}

fn read_message(r: &mut StateReader<'_>) -> Result<Message> {
    let mut m = Message::default();
    for _ in 0..r.length()? {
        m.keys.push(r.str()?);
    }
    if r.bool()? {
        m.tag = Some(r.str()?);
    }
    for _ in 0..r.length()? {
        let k = r.str()?;
        let v = r.str()?;
        m.properties.insert(k, v);
    }
    m.body = r.bytes()?.to_vec();
    m.born_timestamp = r.i64()?;
    Ok(m)
}
