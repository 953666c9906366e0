//! Riffle's embedded topic store, modelled on RocketMQ.
//!
//! A [`Store`] holds *topics*; a topic has a fixed number of *queues*; a queue is an
//! append-only sequence of [`Message`]s numbered by *offset* (0, 1, 2, ... at append time).
//! Consumer groups commit, per queue, the next offset they will consume. Topics use
//! `cleanup.policy` [`CleanupPolicy::Delete`] (retention by time and size deletes whole old
//! segments) or [`CleanupPolicy::Compaction`] (the latest message per key survives).
//!
//! ```
//! use riffle_store::{Message, Store, StoreOptions, TopicConfig, queue_for_key};
//! # let dir = tempfile::tempdir().unwrap();
//! let store = Store::open(dir.path(), StoreOptions::default())?;
//! store.create_topic("orders", TopicConfig { queues: 4, ..TopicConfig::default() })?;
//! let queue = queue_for_key("customer-7", 4);
//! let offset = store.append("orders", queue, &Message::new("{\"total\": 12}").with_key("customer-7"))?;
//! let read = store.read("orders", queue, offset, 10)?;
//! assert_eq!(read[0].message.body, b"{\"total\": 12}");
//! store.commit_offset("billing", "orders", queue, offset + 1)?;
//! store.close()?;
//! # Ok::<(), riffle_store::StoreError>(())
//! ```
//!
//! # Per-queue logs, not one commit log
//!
//! RocketMQ writes every message of a broker into one shared CommitLog and keeps per-queue
//! ConsumeQueue files of pointers into it: one sequential write stream for many topics on a
//! spinning disk. This store keeps the same two-level idea — a log of full records plus a
//! fixed-width offset index — but gives **each queue its own log**. For an embedded store
//! that choice wins on every operation Riffle needs: compaction, retention and topic deletion
//! are file operations on one queue's segments instead of a rewrite or reference counting of a
//! shared log; recovery and index rebuilds touch one queue at a time; appends to different
//! queues do not contend on one lock; and a queue, the unit of parallelism, can later be moved
//! between processes with its files. The cost — more files and less sequential I/O when many
//! queues are written at once — does not matter on SSDs at Riffle's scale.
//!
//! # On-disk layout
//!
//! ```text
//! <dir>/topics.lock                            flock: creating, deleting or loading topics
//! <dir>/maintenance.lock                       flock: the one process running retention/compaction
//! <dir>/topics/<topic>/topic.json              {"format":1,"name":..,"config":{queues,cleanup_policy,retention_ms,retention_bytes}}
//! <dir>/topics/<topic>/<queue>/LOCK            flock of the queue's writers; head: generation u64, flags u64
//! <dir>/topics/<topic>/<queue>/<base>.log      records, base = 20-digit lower bound of offsets
//! <dir>/topics/<topic>/<queue>/<base>.idx      24-byte entries: offset u64, position u64, store ts i64
//! <dir>/groups/<group>.json                    {"format":1,"offsets":{topic:{queue:next offset}}}
//! <dir>/groups/<group>.lock                    flock: committing the group's offsets
//! <dir>/groups/<group>/generation              membership generation u64 (and its flock)
//! <dir>/groups/<group>/members/<id>.lock       flock held by a live member; {"id","pid","joined_ms"}
//! ```
//!
//! A record is framed as `len u32 | crc32 u32 | payload` (little-endian; the CRC covers the
//! length bytes and the payload); the payload holds the offset, born and store timestamps,
//! keys, tag, properties and body (see the `record` module source for the byte layout). Every
//! record carries its own offset, so offsets survive compaction and the index is rebuildable
//! from the log. A queue rolls to a new segment when a write would make the newest one larger
//! than [`StoreOptions::segment_bytes`] (a single batch is never split). Store timestamps never
//! decrease within a queue (the store uses `max(now, previous)`), so both offsets and times are
//! binary-searched in the index ([`Store::offset_for_timestamp`]).
//!
//! `topic.json` is written last when creating a topic; a topic directory without it is an
//! interrupted create and is removed on open. Deleting a topic first sets the deleted flag in
//! every queue's head (the commit point), then removes `topic.json` and the files. JSON files
//! are replaced atomically (temporary file, fsync, rename, directory fsync).
//!
//! # Durability and recovery
//!
//! *Acknowledged* means `append`/`append_batch` returned `Ok`:
//!
//! - Every append is written to the log with a `pwrite` system call before it returns; there
//!   is no buffering in the process. An acknowledged message therefore survives a crash or
//!   `kill -9` of the process in both flush modes.
//! - [`FlushMode::Sync`]: the log is fsynced (`fdatasync`) before `append` returns, so an
//!   acknowledged message also survives power loss or an OS crash.
//! - [`FlushMode::Async`] (default): a background thread fsyncs every
//!   [`StoreOptions::flush_interval`] (200 ms by default); a message is safe from power loss
//!   once the flush that follows its append has completed, or after [`Store::flush`] or
//!   [`Store::close`] returns. A failed background fsync is sticky: later appends fail, since
//!   the kernel may have dropped the unsynced data.
//! - A segment is fsynced (log and index) before the next one is created, and directories are
//!   fsynced after files are created, renamed or removed.
//! - If `append` returns an error after writing, the messages may be stored; their offsets
//!   are never reused.
//!
//! On open, the newest segment of every queue is read in full and CRC-checked: a torn or
//! corrupt tail (including a zero-filled one) is truncated at the first invalid record, and
//! the index is rewritten if it does not match the log. Older segments, fsynced when sealed,
//! get a cheap check (whole index entries; the last entry points at a valid record ending at
//! the end of the log) and an index rebuild if it fails; damage inside them is reported as
//! [`StoreError::Corrupt`] rather than silently dropped. [`Store::recovery`] reports what was
//! repaired. Leftovers of interrupted compactions are removed by the next compaction.
//!
//! # Compaction
//!
//! The compaction key is a message's first key; messages of compacted topics must have one.
//! Compaction finds the latest offset of every key in the queue, then rewrites each sealed
//! segment keeping only records that are the latest for their key and not tombstones (a key
//! with an empty body). Offsets never change, so compacted queues have gaps; reading from
//! offset 0 yields the latest value per key at its original offset. [`Store::compact`] first
//! seals the newest segment, so everything appended before the call is compacted; background
//! compaction (every [`StoreOptions::maintenance_interval`]) only rewrites already sealed
//! segments, once at least [`StoreOptions::compaction_min_dirty_bytes`] of them are
//! uncompacted. A tombstone still in the newest segment stays readable until it is compacted;
//! a consumer that lags behind a compaction may miss a deletion, as in any compacted log.
//! A compaction holds every distinct key of the queue in memory while it runs, and rewrites
//! one segment at a time through a temporary file, so a crash leaves the old or the new segment.
//!
//! # Retention
//!
//! For `Delete` topics, whole segments are deleted from the oldest: those whose newest record
//! is older than `retention_ms` (the newest segment too, after rolling it), and sealed
//! segments while a queue is larger than `retention_bytes`. The min offset advances; reading
//! below it starts at it.
//!
//! # Concurrency
//!
//! A `Store` is `Send + Sync`. Appends to one queue are serialised; readers never wait for
//! appends (they read only fully written, published records) and may run concurrently with
//! compaction and retention (a reader keeps using the files it started on) — except that a
//! read reaching the end of what its process has published catches up with other processes.
//!
//! # Several processes
//!
//! Any number of processes may open the same directory at once (for example every process of
//! a job run with `riffle run --group`, plus `riffle topic consume --follow`). Advisory locks
//! (`flock`, released by the OS when a process dies, even by `kill -9`) order them:
//!
//! - **Appends.** A writer holds the queue's `LOCK` for the duration of the append and first
//!   *catches up*: it compares the queue's head (a generation bumped whenever the set of
//!   segment files changes) and the newest log's size with what its process has published;
//!   if they differ it indexes the records other processes appended (CRC-checked) or reloads
//!   the segment list. So offsets stay dense and unique across processes. A torn tail left by
//!   a process killed mid-append is truncated by the next writer, under the lock, exactly as
//!   recovery on open would. A writer keeps the lock as a *lease* for up to 20 ms after it
//!   took it: while it holds the lock nobody else can have written, so further appends skip
//!   the lock and the check and cost what they cost with one process. Expired leases are
//!   released by the appender itself or by a keeper thread (for idle queues), so another
//!   process waits at most about one lease for a queue.
//! - **Reads.** A read that reaches the end of the published records checks, without locks,
//!   whether the head or the newest log's size moved, and catches up if so: a consumer in
//!   one process sees messages appended by another at its next poll.
//! - **Topics.** Creating, deleting and loading topics hold `topics.lock`. A topic created by
//!   another process is loaded on first use; [`Store::topics`] lists the directory. A
//!   deletion marks every queue's head deleted first: other processes get
//!   [`StoreError::TopicNotFound`] at their next append or read at the end, and use a
//!   re-created topic of the same name afterwards.
//! - **Consumer-group offsets** are read from their file when asked for and committed under
//!   `groups/<group>.lock` with a re-read, merge and atomic rename, so concurrent commits of
//!   different queues by different processes all survive.
//! - **Maintenance.** Background retention and compaction run in at most one process at a
//!   time (`maintenance.lock`; the others skip their pass); [`Store::compact`] and
//!   [`Store::apply_retention`] wait for it. Swapping or deleting segment files happens under
//!   the queue's lock and bumps its generation, so other processes reload the segment list.
//! - **Flush.** Each process fsyncs what it appended; an fsync covers the whole file, and a
//!   segment is fsynced by whoever rolls past it.
//!
//! Which process works on which queue is decided by consumer-group [`membership`].

#![deny(missing_docs)]

pub mod admin;
mod error;
mod flock;
mod fsutil;
mod hash;
mod lease;
pub mod membership;
mod offsets;
mod queue;
mod record;
mod segment;
mod store;
mod topics;

pub use error::{Result, StoreError};
pub use hash::{java_string_hash, queue_for_key};
pub use queue::{CompactionStats, QueueInfo};
pub use record::{now_ms, Message, StoredMessage};
pub use segment::Recovery;
pub use store::{
    validate_name, CleanupPolicy, FlushMode, GroupLag, QueueLag, QueueRecovery, Store,
    StoreOptions, TopicConfig, TopicInfo,
};
pub use topics::Topics;
