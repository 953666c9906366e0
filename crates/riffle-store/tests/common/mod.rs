//! Helpers shared by the integration tests.

#![allow(dead_code)] // each test file uses a different subset

use std::time::Duration;

use riffle_store::{CleanupPolicy, FlushMode, Message, StoreOptions, TopicConfig};

/// Options for tests: small segments, no background maintenance.
pub fn options(segment_bytes: u64) -> StoreOptions {
    StoreOptions {
        flush_mode: FlushMode::Async,
        flush_interval: Duration::from_millis(50),
        segment_bytes,
        maintenance_interval: None,
        ..StoreOptions::default()
    }
}

/// A one-queue topic config with the given policy.
pub fn one_queue(policy: CleanupPolicy) -> TopicConfig {
    TopicConfig {
        queues: 1,
        cleanup_policy: policy,
        ..TopicConfig::default()
    }
}

/// A keyed message.
pub fn keyed(key: &str, body: &str) -> Message {
    Message::new(body.as_bytes().to_vec()).with_key(key)
}

/// A deterministic pseudo-random sequence (xorshift), so failures reproduce.
pub struct Rng(pub u64);

impl Rng {
    /// Next value.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A value in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}
