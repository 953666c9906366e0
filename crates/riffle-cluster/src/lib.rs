//! Riffle's scale-out, the RStreams way: a job split into stages at its shuffles, each stage
//! into one *unit* per queue; shuffles go through topics of the embedded store; every unit
//! runs as a job of its own on the ordinary runtime, with its own exactly-once checkpoints,
//! so a group of processes can share the units and hand them over when members come and go.
//! The job's topics live in the embedded store or on a real RocketMQ cluster
//! ([`backend::TopicBackend`]); the same code runs on both.
//! See `docs/scale-out.md`.

#![warn(missing_docs)]

pub mod backend;
pub mod codec;
pub mod coord_log;
pub mod coordination;
pub mod job_checkpoint;
pub mod membership;
pub mod runner;
pub mod shuffle;
pub mod stages;
pub mod state_topic;
pub mod status;
pub mod units;

use std::fmt;

pub use membership::{Membership, Solo, StoreGroup};
pub use runner::ClusterJob;
pub use stages::{split, StagePlan};
pub use units::UnitId;

/// A failure of a scaled-out job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterError {
    /// What went wrong.
    pub message: String,
}

impl ClusterError {
    /// An error with the given message.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }
}

impl fmt::Display for ClusterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ClusterError {}

impl From<riffle_connectors::ConnectorError> for ClusterError {
    fn from(e: riffle_connectors::ConnectorError) -> Self {
        ClusterError::new(e.message)
    }
}

impl From<riffle_runtime::RuntimeError> for ClusterError {
    fn from(e: riffle_runtime::RuntimeError) -> Self {
        ClusterError::new(e.message)
    }
}
