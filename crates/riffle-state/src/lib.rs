//! Riffle's keyed state backends.
//!
//! Operators keep per-key state either in their own in-memory structures (`state.backend.type`
//! = `hashmap`, Flink's default and Riffle's) or in a [`StateBackend`]: Riffle's own trait, so
//! that the RocksDB crate version can move without touching operators. The RocksDB backend
//! ([`RocksDbBackend`]) keeps one column family per state table of an operator and prefixes
//! every key with its *key group* ([`KeyGroups`], big-endian `u16`), Flink's unit of state
//! redistribution: a subtask owns a contiguous range of key groups, so state can be split or
//! merged by key-group range when the parallelism changes. A checkpoint is a RocksDB checkpoint
//! (hard links to the immutable SST files plus a fresh manifest) in a directory of the job's
//! checkpoint.

#![warn(missing_docs)]

mod rocks;

use std::ops::Range;
use std::path::Path;

pub use rocks::RocksDbBackend;

/// Flink's default maximum parallelism (`pipeline.max-parallelism`), the number of key groups.
pub const DEFAULT_MAX_PARALLELISM: usize = 128;
/// The largest maximum parallelism Flink accepts (2^15).
pub const UPPER_MAX_PARALLELISM: usize = 32_768;

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

/// 64-bit FNV-1a of `bytes`: a stable hash (the same on every build and platform).
pub fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The key groups of a job: as many as its maximum parallelism (Flink's
/// `KeyGroupRangeAssignment`). A key's group is the FNV-1a hash of its encoded bytes modulo
/// that number; subtask `i` of `p` owns a contiguous range of groups. The exchange routes a
/// row to the subtask owning its key's group and state is split by the same function, so a
/// key's state is always where its rows go, whatever the parallelism.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyGroups {
    count: u16,
}

impl Default for KeyGroups {
    fn default() -> Self {
        Self {
            count: DEFAULT_MAX_PARALLELISM as u16,
        }
    }
}

impl KeyGroups {
    /// The key groups of a job whose maximum parallelism is `max_parallelism` (1 to 32768).
    pub fn new(max_parallelism: usize) -> Result<Self> {
        if max_parallelism == 0 || max_parallelism > UPPER_MAX_PARALLELISM {
            return Err(StateError(format!(
                "'pipeline.max-parallelism' must be between 1 and {UPPER_MAX_PARALLELISM}, got {max_parallelism}"
            )));
        }
        Ok(Self {
            count: max_parallelism as u16,
        })
    }

    /// The maximum parallelism: the number of key groups.
    pub fn max_parallelism(self) -> usize {
        usize::from(self.count)
    }

    /// The key group of an encoded key.
    pub fn of_key(self, key: &[u8]) -> u16 {
        self.of_hash(fnv1a(key))
    }

    /// The key group of a key whose [`fnv1a`] hash is `hash`.
    pub fn of_hash(self, hash: u64) -> u16 {
        (hash % u64::from(self.count)) as u16
    }

    /// The subtask (of `parallelism`) that owns key group `group`: Flink's
    /// `group * parallelism / maxParallelism`.
    pub fn subtask_of(self, group: u16, parallelism: usize) -> usize {
        usize::from(group) * parallelism.max(1) / usize::from(self.count)
    }

    /// The key groups subtask `index` of `parallelism` owns: contiguous, as even as possible.
    pub fn range_of(self, index: usize, parallelism: usize) -> Range<u16> {
        let p = parallelism.max(1);
        let total = usize::from(self.count);
        let start = (index * total).div_ceil(p);
        let end = ((index + 1) * total).div_ceil(p);
        (start.min(total) as u16)..(end.min(total) as u16)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_group_ranges_cover_every_group_once_and_match_the_owner() {
        for max in [1, 7, 128, 1000] {
            let groups = KeyGroups::new(max).unwrap();
            for p in [1, 2, 3, 7, max] {
                if p > max {
                    continue;
                }
                let mut next = 0;
                for i in 0..p {
                    let r = groups.range_of(i, p);
                    assert_eq!(r.start, next);
                    for g in r.clone() {
                        assert_eq!(groups.subtask_of(g, p), i, "max {max} p {p} group {g}");
                    }
                    next = r.end;
                }
                assert_eq!(usize::from(next), max);
            }
        }
        let groups = KeyGroups::default();
        assert!(groups.of_key(b"user-7") < 128);
        assert_eq!(groups.of_key(b"user-7"), groups.of_key(b"user-7"));
        assert_eq!(groups.of_key(b"user-7"), groups.of_hash(fnv1a(b"user-7")));
        assert!(KeyGroups::new(0).is_err());
        assert!(KeyGroups::new(40_000).is_err());
    }

    #[test]
    fn backend_names_follow_flink() {
        assert_eq!(BackendKind::parse("RocksDB").unwrap(), BackendKind::RocksDb);
        assert_eq!(BackendKind::parse("hashmap").unwrap(), BackendKind::HashMap);
        assert!(BackendKind::parse("forst").is_err());
    }
}
