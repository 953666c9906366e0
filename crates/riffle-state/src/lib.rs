//! Riffle's keyed state backends.
//!
//! Operators keep per-key state either in their own in-memory structures (`state.backend.type`
//! = `hashmap`, Flink's default and Riffle's) or in a [`StateBackend`]: Riffle's own trait, so
//! that the RocksDB crate version can move without touching operators. The RocksDB backend
//! ([`RocksDbBackend`]) keeps one column family per state table of an operator and prefixes
//! every key with its *key group* ([`key_group`], big-endian `u16`), Flink's unit of state
//! redistribution: a subtask owns a contiguous range of key groups, so state can be split or
//! merged by key-group range when the parallelism changes. A checkpoint is a RocksDB checkpoint
//! (hard links to the immutable SST files plus a fresh manifest) in a directory of the job's
//! checkpoint.

#![warn(missing_docs)]

mod rocks;

use std::ops::Range;
use std::path::Path;

pub use rocks::RocksDbBackend;

/// Number of key groups (Flink's default maximum parallelism).
pub const KEY_GROUPS: u16 = 128;

/// A state backend failure.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct StateError(pub String);

/// Result of state operations.
pub type Result<T> = std::result::Result<T, StateError>;

/// Where keyed state lives (`state.backend.type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BackendKind {
    /// The operators' own in-memory structures (`hashmap`, the default).
    #[default]
    HashMap,
    /// RocksDB on local disk (`rocksdb`).
    RocksDb,
}

impl BackendKind {
    /// Parses a `state.backend.type` value (Flink's names, any case).
    pub fn parse(value: &str) -> Result<Self> {
        match value.trim().to_ascii_lowercase().as_str() {
            "hashmap" | "heap" | "filesystem" => Ok(BackendKind::HashMap),
            "rocksdb" => Ok(BackendKind::RocksDb),
            other => Err(StateError(format!(
                "unsupported feature: state backend '{other}' ('state.backend.type' is 'hashmap' or 'rocksdb')"
            ))),
        }
    }
}

/// Keyed state of one operator subtask: byte values under byte keys in named tables.
pub trait StateBackend: Send {
    /// The value of `key` in `table`.
    fn get(&self, table: &str, key: &[u8]) -> Result<Option<Vec<u8>>>;
    /// Sets the value of `key` in `table`.
    fn put(&mut self, table: &str, key: &[u8], value: &[u8]) -> Result<()>;
    /// Removes `key` from `table`.
    fn delete(&mut self, table: &str, key: &[u8]) -> Result<()>;
    /// Every `(key, value)` of `table` whose key group is in `groups`, in key-group order.
    fn entries(&self, table: &str, groups: Range<u16>) -> Result<Vec<(Vec<u8>, Vec<u8>)>>;
    /// Writes a consistent copy of every table into the new directory `dir`.
    fn checkpoint(&mut self, dir: &Path) -> Result<()>;
}

/// The key group of a key: a stable hash (FNV-1a) modulo [`KEY_GROUPS`].
pub fn key_group(key: &[u8]) -> u16 {
    let hash = key.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    });
    (hash % u64::from(KEY_GROUPS)) as u16
}

/// The key groups subtask `index` of `parallelism` owns (Flink's
/// `KeyGroupRangeAssignment`: contiguous, as even as possible).
pub fn key_groups_of(index: usize, parallelism: usize) -> Range<u16> {
    let p = parallelism.max(1);
    let total = usize::from(KEY_GROUPS);
    let start = (index * total).div_ceil(p);
    let end = ((index + 1) * total).div_ceil(p);
    (start.min(total) as u16)..(end.min(total) as u16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_group_ranges_cover_every_group_once() {
        for p in [1, 2, 3, 7, 128] {
            let mut next = 0;
            for i in 0..p {
                let r = key_groups_of(i, p);
                assert_eq!(r.start, next);
                next = r.end;
            }
            assert_eq!(next, KEY_GROUPS);
        }
        assert!(key_group(b"user-7") < KEY_GROUPS);
        assert_eq!(key_group(b"user-7"), key_group(b"user-7"));
    }

    #[test]
    fn backend_names_follow_flink() {
        assert_eq!(BackendKind::parse("RocksDB").unwrap(), BackendKind::RocksDb);
        assert_eq!(BackendKind::parse("hashmap").unwrap(), BackendKind::HashMap);
        assert!(BackendKind::parse("forst").is_err());
    }
}
