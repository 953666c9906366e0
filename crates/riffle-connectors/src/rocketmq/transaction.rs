//! Exactly-once publication of messages to a topic, in two phases: messages staged per queue
//! are closed into a *transaction* on a checkpoint barrier ([`prepare_transaction`]; the bytes
//! go into the checkpoint) and published by a [`TopicCommitter`] once the checkpoint is
//! complete, and again after a restore: a commit first counts the messages that carry its own
//! marker, so publishing twice changes nothing. A process killed while it appends a batch can
//! leave a prefix of it (the store keeps every complete record and cuts the torn one): the
//! commit after the restore then appends just the rest. Used by the rocketmq sink and by the
//! shuffle topics between the stages of a scaled-out job.

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

    /// How many messages of transaction `txn` are in `queue` at or after `from`.
    fn published(&self, queue: u32, from: u64, txn: &str) -> Result<usize> {
        let mut next = from;
        let mut count = 0;
        loop {
            let read = self
                .store
                .read(&self.topic, queue, next, 1024)
                .map_err(|e| store_error(&self.table, e))?;
            let Some(last) = read.last() else {
                return Ok(count);
            };
            next = last.offset + 1;
            count += read
                .iter()
                .filter(|m| {
                    m.message
                        .properties
                        .get(TRANSACTION_PROPERTY)
                        .map(String::as_str)
                        == Some(txn)
                })
                .count();
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
            // One batch per queue is one write; a write cut short by a kill leaves a prefix of
            // it, so the messages already there are the first ones.
            if messages.is_empty() {
                continue;
            }
            let done = self.published(queue, scan_from, &txn)?;
            let Some(rest) = messages.get(done..).filter(|rest| !rest.is_empty()) else {
                continue;
            };
            self.store
                .append_batch(&self.topic, queue, rest)
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

#[cfg(test)]
mod tests {
    use riffle_store::TopicConfig;

    use super::*;

    #[test]
    fn a_commit_after_a_torn_batch_appends_only_the_missing_messages() {
        let dir = tempfile::tempdir().unwrap();
        let store = super::super::shared_store(dir.path()).unwrap();
        let config = TopicConfig {
            queues: 1,
            ..TopicConfig::default()
        };
        store.create_topic("out", config).unwrap();
        let message = |i: usize| Message {
            body: format!("m{i}").into_bytes(),
            ..Message::default()
        };
        let staged = BTreeMap::from([(0, (0..5).map(message).collect::<Vec<_>>())]);
        let txn = prepare_transaction(store.as_ref(), "t", "out", "job-3-0/7", staged).unwrap();
        // A kill during the commit's write left the batch's first two messages.
        let torn: Vec<Message> = (0..2)
            .map(|i| {
                let mut m = message(i);
                m.properties
                    .insert(TRANSACTION_PROPERTY.to_string(), "job-3-0/7".to_string());
                m
            })
            .collect();
        store.append_batch("out", 0, &torn).unwrap();
        let committer = TopicCommitter::new(store.clone(), "t", "out");
        committer.commit(7, &txn).unwrap();
        committer.commit(7, &txn).unwrap();
        let bodies: Vec<String> = store
            .read("out", 0, 0, 100)
            .unwrap()
            .iter()
            .map(|m| String::from_utf8_lossy(&m.message.body).into_owned())
            .collect();
        assert_eq!(bodies, ["m0", "m1", "m2", "m3", "m4"]);
    }
}
