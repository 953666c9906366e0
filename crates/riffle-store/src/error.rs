//! The store's error type.

use std::path::PathBuf;

/// Everything that can go wrong in the store. Messages name the topic, queue or file involved.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// An operating-system I/O error, with the path or action that failed.
    #[error("{context}: {source}")]
    Io {
        /// What the store was doing, usually naming a file.
        context: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The topic does not exist.
    #[error("topic '{0}' does not exist")]
    TopicNotFound(String),
    /// The topic already exists.
    #[error("topic '{0}' already exists")]
    TopicExists(String),
    /// The queue id is outside the topic's queues.
    #[error("topic '{topic}' has {queues} queue(s); queue {queue} does not exist")]
    QueueNotFound {
        /// The topic.
        topic: String,
        /// The requested queue.
        queue: u32,
        /// How many queues the topic has.
        queues: u32,
    },
    /// A caller-supplied value is not acceptable (bad name, zero queues, oversized message, ...).
    #[error("{0}")]
    Invalid(String),
    /// Stored data is damaged in a place recovery may not repair (not the tail of the newest segment).
    #[error("corrupt data in {path}: {reason}")]
    Corrupt {
        /// The damaged file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// A real RocketMQ cluster failed or refused a request (the message names the address).
    #[error("{0}")]
    Remote(String),
}

/// Result alias for store operations.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// Adds a description of the failed action to an I/O error.
pub(crate) trait IoContext<T> {
    /// Wraps the error with `context()`; the closure runs only on failure.
    fn ctx(self, context: impl FnOnce() -> String) -> Result<T>;
}

impl<T> IoContext<T> for std::io::Result<T> {
    fn ctx(self, context: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|source| StoreError::Io {
            context: context(),
            source,
        })
    }
}
