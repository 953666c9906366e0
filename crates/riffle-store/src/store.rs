//! The store: topics, queues, consumer-group offsets, background flush and maintenance.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, RwLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::error::{IoContext, Result, StoreError};
use crate::flock::LockedFile;
use crate::fsutil::{remove_if_exists, sync_dir, write_atomic};
use crate::lease::Leases;
use crate::offsets::{list_groups, read_group, update_group};
use crate::queue::{mark_deleted, AppendRules, CompactionStats, Queue, QueueInfo};
use crate::record::{now_ms, Message, StoredMessage};
use crate::segment::Recovery;

/// When an append counts as durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FlushMode {
    /// `append` fsyncs the log before it returns: a returned offset survives power loss.
    Sync,
    /// `append` returns after the write system call; a background thread fsyncs every
    /// [`StoreOptions::flush_interval`]. A returned offset survives a crash of the process at
    /// once, and power loss or an OS crash once the next periodic flush (or [`Store::flush`])
    /// has completed.
    #[default]
    Async,
}

/// Store-wide settings.
#[derive(Debug, Clone)]
pub struct StoreOptions {
    /// Durability of appends.
    pub flush_mode: FlushMode,
    /// Period of the background fsync in [`FlushMode::Async`].
    pub flush_interval: Duration,
    /// A queue rolls to a new segment when a write would make the newest one larger than this.
    pub segment_bytes: u64,
    /// Largest encoded message (body, keys, tag, properties and ~40 bytes of framing).
    pub max_message_bytes: usize,
    /// Period of background retention and compaction; `None` disables them (then call
    /// [`Store::apply_retention`] and [`Store::compact`] yourself).
    pub maintenance_interval: Option<Duration>,
    /// Background compaction of a compacted queue starts once its sealed segments not yet
    /// compacted (since the store opened) hold at least this many bytes.
    pub compaction_min_dirty_bytes: u64,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            flush_mode: FlushMode::Async,
            flush_interval: Duration::from_millis(200),
            segment_bytes: 64 * 1024 * 1024,
            max_message_bytes: 4 * 1024 * 1024,
            maintenance_interval: Some(Duration::from_secs(30)),
            compaction_min_dirty_bytes: 64 * 1024 * 1024,
        }
    }
}

/// RocketMQ's `cleanup.policy` topic attribute.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum CleanupPolicy {
    /// Old segments are deleted by retention time/size.
    #[default]
    Delete,
    /// The latest message per key is kept forever; older ones are removed by compaction.
    Compaction,
}

/// A topic's settings, fixed at creation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TopicConfig {
    /// Number of queues (at least 1).
    pub queues: u32,
    /// Delete or compact.
    pub cleanup_policy: CleanupPolicy,
    /// `Delete` topics: segments whose newest message is older than this many ms are deleted.
    pub retention_ms: Option<i64>,
    /// `Delete` topics: per-queue size cap; oldest sealed segments are deleted while a queue is
    /// larger (the newest segment is kept, so a queue may exceed the cap by one segment).
    pub retention_bytes: Option<u64>,
}

impl Default for TopicConfig {
    fn default() -> Self {
        TopicConfig {
            queues: 4,
            cleanup_policy: CleanupPolicy::Delete,
            retention_ms: None,
            retention_bytes: None,
        }
    }
}

impl TopicConfig {
    fn validate(&self) -> Result<()> {
        if self.queues == 0 {
            return Err(StoreError::Invalid(
                "a topic needs at least one queue".into(),
            ));
        }
        if self.queues > 1024 {
            return Err(StoreError::Invalid(format!(
                "{} queues requested; at most 1024 are supported",
                self.queues
            )));
        }
        if self.cleanup_policy == CleanupPolicy::Compaction
            && (self.retention_ms.is_some() || self.retention_bytes.is_some())
        {
            return Err(StoreError::Invalid(
                "retention applies to DELETE topics; a COMPACTION topic keeps the latest value per key"
                    .into(),
            ));
        }
        if self.retention_ms.is_some_and(|ms| ms <= 0) {
            return Err(StoreError::Invalid(
                "retention time must be positive".into(),
            ));
        }
        if self.retention_bytes == Some(0) {
            return Err(StoreError::Invalid(
                "retention size must be positive".into(),
            ));
        }
        Ok(())
    }
}

/// The on-disk `topic.json`.
#[derive(Debug, Serialize, Deserialize)]
struct TopicMeta {
    format: u32,
    name: String,
    config: TopicConfig,
}

/// A committed offset and the lag behind the queue's end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct QueueLag {
    /// Queue id.
    pub queue: u32,
    /// The next offset the group will consume.
    pub committed: u64,
    /// The queue's max offset.
    pub max_offset: u64,
    /// Messages not yet consumed: `max_offset - committed`, at least 0.
    pub lag: u64,
}

/// A consumer group's position on a topic.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GroupLag {
    /// Group name.
    pub group: String,
    /// Per queue with a committed offset.
    pub queues: Vec<QueueLag>,
    /// Sum of the queues' lags.
    pub lag: u64,
}

/// What [`Store::describe`] reports.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TopicInfo {
    /// Topic name.
    pub name: String,
    /// Its settings.
    pub config: TopicConfig,
    /// Its queues.
    pub queues: Vec<QueueInfo>,
    /// Consumer groups that committed offsets on it.
    pub groups: Vec<GroupLag>,
}

/// What recovery did to one queue when the store opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueRecovery {
    /// Topic name.
    pub topic: String,
    /// Queue id.
    pub queue: u32,
    /// Torn/corrupt bytes cut from the newest segment, and whether an index was rebuilt.
    pub recovery: Recovery,
}

#[derive(Debug)]
struct Topic {
    config: TopicConfig,
    queues: Vec<Queue>,
}

impl Topic {
    fn queue(&self, name: &str, id: u32) -> Result<&Queue> {
        usize::try_from(id)
            .ok()
            .and_then(|i| self.queues.get(i))
            .ok_or_else(|| StoreError::QueueNotFound {
                topic: name.to_owned(),
                queue: id,
                queues: self.config.queues,
            })
    }

    /// Whether another process (or this one) deleted the topic.
    fn is_deleted(&self) -> bool {
        self.queues.iter().any(Queue::is_deleted)
    }
}

#[derive(Debug)]
struct Inner {
    dir: PathBuf,
    options: StoreOptions,
    /// Topics this process has opened, by name. Another process may create or delete topics:
    /// a name missing here is looked up on disk, and a queue that finds its topic deleted
    /// makes the store drop the entry and look again.
    topics: RwLock<TopicMap>,
    /// Leases of queue locks this process holds between appends.
    leases: Arc<Leases>,
    /// The first background flush failure; sticky because a failed fsync may have dropped data.
    flush_error: Mutex<Option<String>>,
    maintenance_error: Mutex<Option<String>>,
    stop: Mutex<bool>,
    wake: Condvar,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The embedded topic store. See the crate documentation for the model and the guarantees.
///
/// All methods take `&self`; share a store between threads with `Arc<Store>`. Dropping the store
/// stops its background threads and flushes; [`Store::close`] does the same and reports errors.
#[derive(Debug)]
pub struct Store {
    inner: Arc<Inner>,
    workers: Vec<JoinHandle<()>>,
    recovery: Vec<QueueRecovery>,
}

/// Held while topics are created, deleted or loaded, by any process.
const TOPICS_LOCK_FILE: &str = "topics.lock";
/// Held by the one process that runs retention and compaction at a time.
const MAINTENANCE_LOCK_FILE: &str = "maintenance.lock";
const TOPICS_DIR: &str = "topics";
/// Consumer-group offsets and memberships.
pub(crate) const GROUPS_DIR: &str = "groups";
const TOPIC_META: &str = "topic.json";
const FORMAT: u32 = 1;

/// Checks a topic or group name: 1–127 characters from `A-Z a-z 0-9 _ - %` (RocketMQ's rule,
/// which also makes every name a safe file name).
pub fn validate_name(kind: &str, name: &str) -> Result<()> {
    let ok_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '%');
    if name.is_empty() || name.len() > 127 || !name.chars().all(ok_char) {
        return Err(StoreError::Invalid(format!(
            "invalid {kind} name '{name}': use 1-127 characters from A-Z a-z 0-9 _ - %"
        )));
    }
    Ok(())
}

impl Store {
    /// Opens (creating if needed) the store in `dir`, recovers every queue and starts the
    /// background threads. Other processes may have the same directory open: see "Several
    /// processes" in the crate documentation.
    pub fn open(dir: impl AsRef<Path>, options: StoreOptions) -> Result<Store> {
        let dir = dir.as_ref().to_path_buf();
        if options.segment_bytes == 0 {
            return Err(StoreError::Invalid("segment size must be positive".into()));
        }
        fs::create_dir_all(&dir).ctx(|| format!("creating data directory {}", dir.display()))?;
        let topics_dir = dir.join(TOPICS_DIR);
        let groups_dir = dir.join(GROUPS_DIR);
        for d in [&topics_dir, &groups_dir] {
            fs::create_dir_all(d).ctx(|| format!("creating {}", d.display()))?;
        }
        let leases = Arc::new(Leases::default());
        let (topics, recovery) = {
            let _topics_lock = LockedFile::open(&dir.join(TOPICS_LOCK_FILE))?;
            load_topics(&topics_dir, &leases)?
        };
        let inner = Arc::new(Inner {
            dir,
            options,
            topics: RwLock::new(topics),
            leases,
            flush_error: Mutex::new(None),
            maintenance_error: Mutex::new(None),
            stop: Mutex::new(false),
            wake: Condvar::new(),
        });
        let mut workers = vec![spawn_lease_keeper(&inner)?];
        if inner.options.flush_mode == FlushMode::Async {
            let period = inner.options.flush_interval;
            workers.push(spawn_periodic(
                &inner,
                "riffle-store-flush",
                period,
                |inner| {
                    if let Err(e) = inner.flush_all() {
                        let mut slot = lock(&inner.flush_error);
                        slot.get_or_insert_with(|| e.to_string());
                    }
                },
            )?);
        }
        if let Some(period) = inner.options.maintenance_interval {
            workers.push(spawn_periodic(
                &inner,
                "riffle-store-maintenance",
                period,
                |inner| {
                    *lock(&inner.maintenance_error) = inner.maintain().err().map(|e| e.to_string());
                },
            )?);
        }
        Ok(Store {
            inner,
            workers,
            recovery,
        })
    }

    /// The data directory.
    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

    /// What recovery did when the store opened (only queues where it did something).
    pub fn recovery(&self) -> &[QueueRecovery] {
        &self.recovery
    }

    /// Creates a topic with empty queues.
    pub fn create_topic(&self, name: &str, config: TopicConfig) -> Result<()> {
        validate_name("topic", name)?;
        config.validate()?;
        let _topics_lock = self.inner.lock_topics()?;
        let topics_dir = self.inner.dir.join(TOPICS_DIR);
        let dir = topics_dir.join(name);
        if dir.join(TOPIC_META).exists() {
            return Err(StoreError::TopicExists(name.to_owned()));
        }
        // A directory without topic.json is an interrupted create or delete: start afresh,
        // telling any process that still has its queues open.
        if dir.exists() {
            remove_topic_dir(&dir)?;
        }
        fs::create_dir_all(&dir).ctx(|| format!("creating {}", dir.display()))?;
        let queues = (0..config.queues)
            .map(|id| Queue::create(dir.join(id.to_string()), id, name, &self.inner.leases))
            .collect::<Result<Vec<_>>>()?;
        sync_dir(&dir)?;
        let meta = TopicMeta {
            format: FORMAT,
            name: name.to_owned(),
            config: config.clone(),
        };
        let json = serde_json::to_vec_pretty(&meta)
            .map_err(|e| StoreError::Invalid(format!("encoding topic metadata: {e}")))?;
        // topic.json is written last: its presence is what makes the topic exist.
        write_atomic(&dir.join(TOPIC_META), &json)?;
        sync_dir(&topics_dir)?;
        let mut topics = self.inner.topics.write().unwrap_or_else(|e| e.into_inner());
        topics.insert(name.to_owned(), Arc::new(Topic { config, queues }));
        Ok(())
    }

    /// Deletes a topic, its data and every group's offsets on it.
    pub fn delete_topic(&self, name: &str) -> Result<()> {
        validate_name("topic", name)?;
        let _topics_lock = self.inner.lock_topics()?;
        let dir = self.inner.dir.join(TOPICS_DIR).join(name);
        let exists = dir.join(TOPIC_META).exists();
        if exists {
            // The topic stays in the map meanwhile, so that the lease keeper can release this
            // process's leases on its queues, which marking them deleted waits for.
            remove_topic_dir(&dir)?;
        }
        self.inner
            .topics
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .remove(name);
        if !exists {
            return Err(StoreError::TopicNotFound(name.to_owned()));
        }
        let groups_dir = self.inner.dir.join(GROUPS_DIR);
        for group in list_groups(&groups_dir)? {
            if read_group(&groups_dir, &group)?.contains_key(name) {
                update_group(&groups_dir, &group, |offsets| {
                    offsets.remove(name);
                })?;
            }
        }
        Ok(())
    }

    /// Topic names, sorted (the topics on disk, whichever process created them).
    pub fn topics(&self) -> Vec<String> {
        match list_topic_names(&self.inner.dir.join(TOPICS_DIR)) {
            Ok(names) => names,
            // Listing a directory this process created rarely fails; the topics it knows are
            // the best answer a method without an error can give then.
            Err(_) => self
                .inner
                .topics
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .keys()
                .cloned()
                .collect(),
        }
    }

    /// A topic's settings.
    pub fn topic_config(&self, name: &str) -> Result<TopicConfig> {
        Ok(self.inner.topic(name)?.config.clone())
    }

    /// Queues with their offsets, and consumer groups with their lag.
    pub fn describe(&self, name: &str) -> Result<TopicInfo> {
        let (config, queues) = self.inner.with_topic(name, |topic| {
            let queues = topic
                .queues
                .iter()
                .map(Queue::info)
                .collect::<Result<Vec<_>>>()?;
            Ok((topic.config.clone(), queues))
        })?;
        let groups_dir = self.inner.dir.join(GROUPS_DIR);
        let mut lags = Vec::new();
        for group in list_groups(&groups_dir)? {
            let offsets = read_group(&groups_dir, &group)?;
            let Some(committed) = offsets.get(name) else {
                continue;
            };
            let mut per_queue = Vec::new();
            for (&queue, &offset) in committed {
                let Some(info) = queues.iter().find(|q| q.id == queue) else {
                    continue;
                };
                per_queue.push(QueueLag {
                    queue,
                    committed: offset,
                    max_offset: info.max_offset,
                    lag: info.max_offset.saturating_sub(offset),
                });
            }
            lags.push(GroupLag {
                group,
                lag: per_queue.iter().map(|q| q.lag).sum(),
                queues: per_queue,
            });
        }
        Ok(TopicInfo {
            name: name.to_owned(),
            config,
            queues,
            groups: lags,
        })
    }

    /// Appends one message; returns its offset. See [`FlushMode`] for when it is durable.
    pub fn append(&self, topic: &str, queue: u32, message: &Message) -> Result<u64> {
        self.append_batch(topic, queue, std::slice::from_ref(message))
    }

    /// Appends messages to one queue in a single write (one fsync in sync mode); they get
    /// consecutive offsets. Returns the first offset (the max offset if `messages` is empty).
    pub fn append_batch(&self, topic: &str, queue: u32, messages: &[Message]) -> Result<u64> {
        if let Some(e) = lock(&self.inner.flush_error).as_ref() {
            return Err(StoreError::Invalid(format!(
                "a background flush failed ({e}); data appended before it may be lost. \
                 Reopen the store to recover"
            )));
        }
        self.inner.with_topic(topic, |t| {
            let rules = AppendRules {
                sync: self.inner.options.flush_mode == FlushMode::Sync,
                segment_bytes: self.inner.options.segment_bytes,
                max_record_bytes: self.inner.options.max_message_bytes,
                require_key: t.config.cleanup_policy == CleanupPolicy::Compaction,
            };
            t.queue(topic, queue)?.append(messages, &rules)
        })
    }

    /// Up to `max_messages` messages of a queue with offsets `>= from_offset`, in order. Reading
    /// below the queue's min offset starts at the min offset; compacted topics have gaps.
    pub fn read(
        &self,
        topic: &str,
        queue: u32,
        from_offset: u64,
        max_messages: usize,
    ) -> Result<Vec<StoredMessage>> {
        let records = self.inner.with_topic(topic, |t| {
            t.queue(topic, queue)?.read(from_offset, max_messages)
        })?;
        Ok(records
            .into_iter()
            .map(|r| StoredMessage {
                queue,
                offset: r.offset,
                store_timestamp: r.store_ts,
                message: r.message,
            })
            .collect())
    }

    /// A queue's offsets and size.
    pub fn queue_info(&self, topic: &str, queue: u32) -> Result<QueueInfo> {
        self.inner
            .with_topic(topic, |t| t.queue(topic, queue)?.info())
    }

    /// The offset of the first message whose store timestamp is `>= timestamp_ms`, or the max
    /// offset if there is none (binary search on the index).
    pub fn offset_for_timestamp(&self, topic: &str, queue: u32, timestamp_ms: i64) -> Result<u64> {
        self.inner.with_topic(topic, |t| {
            t.queue(topic, queue)?.offset_for_timestamp(timestamp_ms)
        })
    }

    /// Records that `group` will next consume `offset` of the queue. Persisted before returning
    /// (temporary file, fsync, rename, directory fsync).
    pub fn commit_offset(&self, group: &str, topic: &str, queue: u32, offset: u64) -> Result<()> {
        self.commit_offsets(group, topic, &[(queue, offset)])
    }

    /// Commits several queues of one topic in one atomic file write.
    pub fn commit_offsets(&self, group: &str, topic: &str, offsets: &[(u32, u64)]) -> Result<()> {
        validate_name("group", group)?;
        self.inner.with_topic(topic, |t| {
            for &(queue, offset) in offsets {
                let max = t.queue(topic, queue)?.max_offset()?;
                if offset > max {
                    return Err(StoreError::Invalid(format!(
                        "cannot commit offset {offset} for {topic}/{queue}: the queue ends at {max}"
                    )));
                }
            }
            Ok(())
        })?;
        update_group(&self.inner.dir.join(GROUPS_DIR), group, |updated| {
            let per_queue = updated.entry(topic.to_owned()).or_default();
            for &(queue, offset) in offsets {
                per_queue.insert(queue, offset);
            }
        })
    }

    /// The offset `group` will next consume from the queue, if it committed one.
    pub fn committed_offset(&self, group: &str, topic: &str, queue: u32) -> Result<Option<u64>> {
        validate_name("group", group)?;
        self.inner.topic(topic)?.queue(topic, queue)?;
        Ok(read_group(&self.inner.dir.join(GROUPS_DIR), group)?
            .get(topic)
            .and_then(|q| q.get(&queue))
            .copied())
    }

    /// Compacts every queue of a `COMPACTION` topic now: afterwards, reading a queue from its
    /// start yields, for every key written before the call, only its latest message (none if
    /// that is a tombstone), at its original offset.
    ///
    /// Waits while another process runs maintenance on the store.
    pub fn compact(&self, topic: &str) -> Result<CompactionStats> {
        let _maintenance = self.inner.lock_maintenance()?;
        self.inner.with_topic(topic, |t| {
            if t.config.cleanup_policy != CleanupPolicy::Compaction {
                return Err(StoreError::Invalid(format!(
                    "topic '{topic}' has cleanup policy DELETE; only COMPACTION topics are compacted"
                )));
            }
            let mut stats = CompactionStats::default();
            for q in &t.queues {
                stats.add(q.compact(true)?);
            }
            Ok(stats)
        })
    }

    /// Applies retention to every `DELETE` topic now; returns the number of segments deleted.
    /// Waits while another process runs maintenance on the store.
    pub fn apply_retention(&self) -> Result<usize> {
        let _maintenance = self.inner.lock_maintenance()?;
        self.inner.apply_retention(now_ms())
    }

    /// fsyncs everything appended so far.
    pub fn flush(&self) -> Result<()> {
        self.inner.flush_all()
    }

    /// The error of the last background maintenance run, if it failed.
    pub fn last_maintenance_error(&self) -> Option<String> {
        lock(&self.inner.maintenance_error).clone()
    }

    /// Stops the background threads and flushes.
    pub fn close(mut self) -> Result<()> {
        self.shutdown()
    }

    fn shutdown(&mut self) -> Result<()> {
        *lock(&self.inner.stop) = true;
        self.inner.wake.notify_all();
        self.inner.leases.stop();
        for worker in self.workers.drain(..) {
            // A worker that panicked has nothing left to clean up; the flush below still runs.
            let _ = worker.join();
        }
        self.inner.flush_all()
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        // Errors cannot be returned from drop; `close` reports them.
        let _ = self.shutdown();
    }
}

impl Inner {
    /// The topic, from this process's map or else from disk (another process created it).
    fn topic(&self, name: &str) -> Result<Arc<Topic>> {
        let known = self
            .topics
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(name)
            .cloned();
        match known {
            Some(t) => Ok(t),
            None => self.load_topic(name),
        }
    }

    /// Runs `work` on the topic; if it fails because another process deleted the topic, drops
    /// it and runs `work` once more on the topic now on disk (it may have been re-created).
    fn with_topic<R>(&self, name: &str, work: impl Fn(&Topic) -> Result<R>) -> Result<R> {
        let t = self.topic(name)?;
        match work(&t) {
            Err(StoreError::TopicNotFound(_)) if t.is_deleted() => {
                self.forget(name, &t);
                // Dropped before looking again: its queues may hold leases (closing them
                // releases the locks) that a deleter holding the topics lock waits for.
                drop(t);
                work(&*self.topic(name)?)
            }
            other => other,
        }
    }

    /// Drops a deleted topic from the map, unless it was replaced meanwhile.
    fn forget(&self, name: &str, stale: &Arc<Topic>) {
        let mut topics = self.topics.write().unwrap_or_else(|e| e.into_inner());
        if topics.get(name).is_some_and(|t| Arc::ptr_eq(t, stale)) {
            topics.remove(name);
        }
    }

    /// Loads a topic another process created.
    fn load_topic(&self, name: &str) -> Result<Arc<Topic>> {
        validate_name("topic", name)?;
        let dir = self.dir.join(TOPICS_DIR).join(name);
        if !dir.join(TOPIC_META).exists() {
            return Err(StoreError::TopicNotFound(name.to_owned()));
        }
        let _topics_lock = self.lock_topics()?;
        if let Some(t) = self
            .topics
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(name)
        {
            return Ok(Arc::clone(t));
        }
        let Some((topic, _recovery)) = open_topic(&dir, &self.leases)? else {
            return Err(StoreError::TopicNotFound(name.to_owned()));
        };
        let topic = Arc::new(topic);
        self.topics
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(name.to_owned(), Arc::clone(&topic));
        Ok(topic)
    }

    /// The lock every process holds while it creates, deletes or loads topics.
    fn lock_topics(&self) -> Result<LockedFile> {
        LockedFile::open(&self.dir.join(TOPICS_LOCK_FILE))
    }

    /// The lock of the one process that runs maintenance.
    fn lock_maintenance(&self) -> Result<LockedFile> {
        LockedFile::open(&self.dir.join(MAINTENANCE_LOCK_FILE))
    }

    fn all_topics(&self) -> Vec<Arc<Topic>> {
        self.topics
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .cloned()
            .collect()
    }

    fn flush_all(&self) -> Result<()> {
        let mut first_error = None;
        for topic in self.all_topics() {
            for q in &topic.queues {
                if let Err(e) = q.flush() {
                    first_error.get_or_insert(e);
                }
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    fn apply_retention(&self, now: i64) -> Result<usize> {
        let mut deleted = 0;
        for topic in self.all_topics() {
            let c = &topic.config;
            if c.cleanup_policy != CleanupPolicy::Delete
                || (c.retention_ms.is_none() && c.retention_bytes.is_none())
            {
                continue;
            }
            for q in &topic.queues {
                deleted += q.apply_retention(c.retention_ms, c.retention_bytes, now)?;
            }
        }
        Ok(deleted)
    }

    /// One background maintenance pass: retention, then compaction of queues with enough
    /// uncompacted data. Skipped while another process runs one.
    fn maintain(&self) -> Result<()> {
        let Some(_maintenance) = LockedFile::try_open(&self.dir.join(MAINTENANCE_LOCK_FILE))?
        else {
            return Ok(());
        };
        self.apply_retention(now_ms())?;
        for topic in self.all_topics() {
            if topic.config.cleanup_policy != CleanupPolicy::Compaction {
                continue;
            }
            for q in &topic.queues {
                if q.uncompacted_bytes() >= self.options.compaction_min_dirty_bytes {
                    q.compact(false)?;
                }
            }
        }
        Ok(())
    }
}

/// Starts the thread that releases expired leases on queue locks (see the `lease` module).
fn spawn_lease_keeper(inner: &Arc<Inner>) -> Result<JoinHandle<()>> {
    let inner = Arc::clone(inner);
    std::thread::Builder::new()
        .name("riffle-store-leases".to_owned())
        .spawn(move || {
            while inner.leases.wait_for_expiry() {
                let now = Instant::now();
                for topic in inner.all_topics() {
                    for q in &topic.queues {
                        q.expire_idle_lease(now);
                    }
                }
            }
        })
        .ctx(|| "starting thread riffle-store-leases".to_owned())
}

/// Runs `work` every `period` on a named thread until the store stops.
fn spawn_periodic(
    inner: &Arc<Inner>,
    name: &str,
    period: Duration,
    work: fn(&Inner),
) -> Result<JoinHandle<()>> {
    let inner = Arc::clone(inner);
    std::thread::Builder::new()
        .name(name.to_owned())
        .spawn(move || loop {
            {
                let stop = lock(&inner.stop);
                let (stop, _) = inner
                    .wake
                    .wait_timeout_while(stop, period, |stop| !*stop)
                    .unwrap_or_else(|e| e.into_inner());
                if *stop {
                    return;
                }
            }
            work(&inner);
        })
        .ctx(|| format!("starting thread {name}"))
}

/// Topics by name.
type TopicMap = BTreeMap<String, Arc<Topic>>;

/// Opens every topic of the store. Caller holds the topics lock. Directories without
/// `topic.json`, and topics whose queues carry the deleted mark, are interrupted creates or
/// deletes: they are removed.
fn load_topics(topics_dir: &Path, leases: &Arc<Leases>) -> Result<(TopicMap, Vec<QueueRecovery>)> {
    let mut topics = BTreeMap::new();
    let mut recovery = Vec::new();
    let listing = fs::read_dir(topics_dir).ctx(|| format!("listing {}", topics_dir.display()))?;
    for entry in listing {
        let entry = entry.ctx(|| format!("listing {}", topics_dir.display()))?;
        let dir = entry.path();
        if !dir.is_dir() {
            continue;
        }
        let Some((topic, mut rec)) = open_topic(&dir, leases)? else {
            continue;
        };
        recovery.append(&mut rec);
        let name = entry.file_name().to_string_lossy().into_owned();
        topics.insert(name, Arc::new(topic));
    }
    Ok((topics, recovery))
}

/// Opens one topic directory, or removes it and returns `None` if it is an interrupted create
/// or delete. Caller holds the topics lock.
fn open_topic(dir: &Path, leases: &Arc<Leases>) -> Result<Option<(Topic, Vec<QueueRecovery>)>> {
    let meta_path = dir.join(TOPIC_META);
    let bytes = match fs::read(&meta_path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            remove_topic_dir(dir)?;
            return Ok(None);
        }
        Err(e) => return Err(e).ctx(|| format!("reading {}", meta_path.display())),
    };
    let meta: TopicMeta = serde_json::from_slice(&bytes).map_err(|e| StoreError::Corrupt {
        path: meta_path.clone(),
        reason: e.to_string(),
    })?;
    meta.config.validate()?;
    let mut queues = Vec::new();
    let mut recovery = Vec::new();
    for id in 0..meta.config.queues {
        match Queue::open(dir.join(id.to_string()), id, &meta.name, leases) {
            Ok((queue, rec)) => {
                if rec != Recovery::default() {
                    recovery.push(QueueRecovery {
                        topic: meta.name.clone(),
                        queue: id,
                        recovery: rec,
                    });
                }
                queues.push(queue);
            }
            Err(StoreError::TopicNotFound(_)) => {
                // A deletion marked the queues and was interrupted: finish it.
                remove_topic_dir(dir)?;
                return Ok(None);
            }
            Err(e) => return Err(e),
        }
    }
    let topic = Topic {
        config: meta.config,
        queues,
    };
    Ok(Some((topic, recovery)))
}

/// Deletes a topic directory. Caller holds the topics lock.
///
/// The deleted mark in every queue's head is the commit point: processes that have the queues
/// open stop using them, and a crash afterwards leaves a directory that the next load removes.
/// Then `topic.json` goes, then the rest.
fn remove_topic_dir(dir: &Path) -> Result<()> {
    let listing = match fs::read_dir(dir) {
        Ok(listing) => listing,
        // Removed by another process since this one looked.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e).ctx(|| format!("listing {}", dir.display())),
    };
    for entry in listing {
        let entry = entry.ctx(|| format!("listing {}", dir.display()))?;
        if entry.path().is_dir() {
            mark_deleted(&entry.path())?;
        }
    }
    remove_if_exists(&dir.join(TOPIC_META))?;
    sync_dir(dir)?;
    fs::remove_dir_all(dir).ctx(|| format!("removing {}", dir.display()))?;
    if let Some(parent) = dir.parent() {
        sync_dir(parent)?;
    }
    Ok(())
}

/// Names of the topic directories that have a `topic.json`, sorted.
fn list_topic_names(topics_dir: &Path) -> Result<Vec<String>> {
    let listing = fs::read_dir(topics_dir).ctx(|| format!("listing {}", topics_dir.display()))?;
    let mut names = Vec::new();
    for entry in listing {
        let entry = entry.ctx(|| format!("listing {}", topics_dir.display()))?;
        if entry.path().join(TOPIC_META).exists() {
            names.push(entry.file_name().to_string_lossy().into_owned());
        }
    }
    names.sort();
    Ok(names)
}
