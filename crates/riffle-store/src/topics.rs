//! [`Topics`]: the operations on topics that Riffle's rocketmq connector and `riffle topic` need,
//! so the same code runs on the embedded [`Store`] and on a real RocketMQ cluster (whose client
//! implements this trait in `riffle-connectors`).

use crate::{Message, QueueInfo, Result, Store, StoredMessage, TopicConfig, TopicInfo};

/// Topics, queues, messages and consumer-group offsets, wherever they are kept.
///
/// Queues are numbered `0..queues`; offsets are per queue, as in RocketMQ. Every call blocks.
pub trait Topics: Send + Sync {
    /// Where the topics live, for messages (a data directory or a name server address).
    fn location(&self) -> String;
    /// Names of the topics.
    fn topics(&self) -> Result<Vec<String>>;
    /// Creates a topic; fails with [`crate::StoreError::TopicExists`] if it exists.
    fn create_topic(&self, name: &str, config: TopicConfig) -> Result<()>;
    /// Deletes a topic with its messages and group offsets.
    fn delete_topic(&self, name: &str) -> Result<()>;
    /// A topic's settings; fails with [`crate::StoreError::TopicNotFound`] if it is missing.
    fn topic_config(&self, name: &str) -> Result<TopicConfig>;
    /// A topic's settings, queues and consumer groups.
    fn describe(&self, name: &str) -> Result<TopicInfo>;
    /// The offsets of one queue.
    fn queue_info(&self, topic: &str, queue: u32) -> Result<QueueInfo>;
    /// Up to `max` messages of a queue from `offset` on (fewer, or none, at the end).
    fn read(&self, topic: &str, queue: u32, offset: u64, max: usize) -> Result<Vec<StoredMessage>>;
    /// The first offset of a queue whose message was stored at or after `timestamp_ms`.
    fn offset_for_timestamp(&self, topic: &str, queue: u32, timestamp_ms: i64) -> Result<u64>;
    /// Appends messages to a queue, in order.
    fn append_batch(&self, topic: &str, queue: u32, messages: &[Message]) -> Result<()>;
    /// The next offset `group` will consume in a queue, if it committed one.
    fn committed_offset(&self, group: &str, topic: &str, queue: u32) -> Result<Option<u64>>;
    /// Commits `group`'s next offsets (queue, offset).
    fn commit_offsets(&self, group: &str, topic: &str, offsets: &[(u32, u64)]) -> Result<()>;
    /// Makes appended messages durable as the store is configured to.
    fn flush(&self) -> Result<()>;
    /// The embedded store itself, for what only it offers (compaction on demand).
    fn as_store(&self) -> Option<&Store> {
        None
    }
}

impl Topics for Store {
    fn location(&self) -> String {
        format!("the embedded store {}", self.dir().display())
    }

    fn topics(&self) -> Result<Vec<String>> {
        Ok(Store::topics(self))
    }

    fn create_topic(&self, name: &str, config: TopicConfig) -> Result<()> {
        Store::create_topic(self, name, config)
    }

    fn delete_topic(&self, name: &str) -> Result<()> {
        Store::delete_topic(self, name)
    }

    fn topic_config(&self, name: &str) -> Result<TopicConfig> {
        Store::topic_config(self, name)
    }

    fn describe(&self, name: &str) -> Result<TopicInfo> {
        Store::describe(self, name)
    }

    fn queue_info(&self, topic: &str, queue: u32) -> Result<QueueInfo> {
        Store::queue_info(self, topic, queue)
    }

    fn read(&self, topic: &str, queue: u32, offset: u64, max: usize) -> Result<Vec<StoredMessage>> {
        Store::read(self, topic, queue, offset, max)
    }

    fn offset_for_timestamp(&self, topic: &str, queue: u32, timestamp_ms: i64) -> Result<u64> {
        Store::offset_for_timestamp(self, topic, queue, timestamp_ms)
    }

    fn append_batch(&self, topic: &str, queue: u32, messages: &[Message]) -> Result<()> {
        Store::append_batch(self, topic, queue, messages).map(|_| ())
    }

    fn committed_offset(&self, group: &str, topic: &str, queue: u32) -> Result<Option<u64>> {
        Store::committed_offset(self, group, topic, queue)
    }

    fn commit_offsets(&self, group: &str, topic: &str, offsets: &[(u32, u64)]) -> Result<()> {
        Store::commit_offsets(self, group, topic, offsets)
    }

    fn flush(&self) -> Result<()> {
        Store::flush(self)
    }

    fn as_store(&self) -> Option<&Store> {
        Some(self)
    }
}
