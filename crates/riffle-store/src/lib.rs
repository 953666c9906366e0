//! Riffle's embedded topic store, modelled on RocketMQ (docs written below).

pub mod admin;
mod error;
mod fsutil;
mod hash;
mod queue;
mod record;
mod segment;
mod store;

pub use error::{Result, StoreError};
pub use hash::{java_string_hash, queue_for_key};
pub use queue::{CompactionStats, QueueInfo};
pub use record::{now_ms, Message, StoredMessage};
pub use segment::Recovery;
pub use store::{
    validate_name, CleanupPolicy, FlushMode, GroupLag, QueueLag, QueueRecovery, Store,
    StoreOptions, TopicConfig, TopicInfo,
};
