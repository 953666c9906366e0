//! One queue of a topic: a directory of segments, the newest of which takes appends.
//!
//! Several processes may share a queue. `<queue>/LOCK` orders them: whoever changes the queue's
//! files (append, roll, retention, compaction's swap, recovery of a torn tail) holds its
//! exclusive `flock` and first *catches up* with what other processes did. The file also holds
//! the queue's *head*: a generation number bumped whenever the set of segment files changes,
//! and a deleted mark. A process compares the head and the newest log's size with what it
//! has published to notice, cheaply, that another process appended, rolled or compacted.

use std::collections::HashMap;
use std::fs::{self, File};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::time::Instant;

use crate::error::{IoContext, Result, StoreError};
use crate::flock::{open_lock_file, FlockGuard, LockedFile};
use crate::fsutil::{remove_if_exists, sync_dir};
use crate::lease::{Leases, HANDOVER_PAUSE, LEASE};
use crate::record::{self, Message, Record};
use crate::segment::{self, IndexEntry, Recovery, Segment, INDEX_ENTRY_BYTES};

/// Suffix of files being written by compaction; leftovers are removed by the next compaction.
const CLEANED_SUFFIX: &str = ".cleaned";
/// The queue's lock and head file.
pub(crate) const QUEUE_LOCK_FILE: &str = "LOCK";
/// Head flag: the topic was deleted; holders of the queue must drop it.
const HEAD_DELETED: u64 = 1;

/// The 16 bytes of `<queue>/LOCK`: generation u64 and flags u64, little-endian. A missing or
/// short file reads as generation 0, no flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Head {
    generation: u64,
    flags: u64,
}

impl Head {
    fn read(file: &File, path: &Path) -> Result<Head> {
        let mut b = [0u8; 16];
        let n = file
            .read_at(&mut b, 0)
            .ctx(|| format!("reading {}", path.display()))?;
        if n < 16 {
            return Ok(Head {
                generation: 0,
                flags: 0,
            });
        }
        let mut g = [0u8; 8];
        let mut f = [0u8; 8];
        g.copy_from_slice(&b[..8]);
        f.copy_from_slice(&b[8..]);
        Ok(Head {
            generation: u64::from_le_bytes(g),
            flags: u64::from_le_bytes(f),
        })
    }

    /// Written without fsync: the head only tells running processes that something changed;
    /// after an OS crash every process starts afresh from the files themselves.
    fn write(self, file: &File, path: &Path) -> Result<()> {
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&self.generation.to_le_bytes());
        b[8..].copy_from_slice(&self.flags.to_le_bytes());
        file.write_all_at(&b, 0)
            .ctx(|| format!("writing {}", path.display()))
    }

    fn deleted(self) -> bool {
        self.flags & HEAD_DELETED != 0
    }
}

/// Marks the queue in `queue_dir` deleted for every process that has it open (they stop using
/// it at their next append, or read at its end). Does nothing if the queue has no lock file.
pub(crate) fn mark_deleted(queue_dir: &Path) -> Result<()> {
    let path = queue_dir.join(QUEUE_LOCK_FILE);
    if !path.exists() {
        return Ok(());
    }
    let held = LockedFile::open(&path)?;
    let head = Head::read(held.file(), &path)?;
    Head {
        generation: head.generation + 1,
        flags: head.flags | HEAD_DELETED,
    }
    .write(held.file(), &path)
}

/// Limits that apply to appends, taken from the store and topic configuration.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AppendRules {
    /// fsync the log before returning.
    pub sync: bool,
    /// Roll to a new segment when the next write would make the newest one larger than this.
    pub segment_bytes: u64,
    /// Largest encoded record accepted.
    pub max_record_bytes: usize,
    /// Every message needs a key (compacted topics).
    pub require_key: bool,
}

/// Mutable state of the append path, guarded by [`Queue::writer`].
#[derive(Debug)]
struct Writer {
    next_offset: u64,
    last_store_ts: i64,
    frames: Vec<u8>,
    entries: Vec<IndexEntry>,
    /// Since when this process holds the queue's flock between appends (see `lease`).
    lease: Option<Instant>,
}

/// Offsets and size of a queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct QueueInfo {
    /// Queue id.
    pub id: u32,
    /// Smallest offset still stored (equals `max_offset` when the queue is empty).
    pub min_offset: u64,
    /// One past the largest offset stored: the offset the next message will get.
    pub max_offset: u64,
    /// Number of messages stored (fewer than `max_offset - min_offset` after compaction).
    pub messages: u64,
    /// Number of segments.
    pub segments: usize,
    /// Bytes of log data.
    pub bytes: u64,
}

/// What one compaction did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct CompactionStats {
    /// Records removed (older values and tombstones).
    pub removed: u64,
    /// Records kept in the rewritten segments.
    pub kept: u64,
    /// Log bytes before compaction, over the segments examined.
    pub bytes_before: u64,
    /// Log bytes after compaction, over the same segments.
    pub bytes_after: u64,
}

impl CompactionStats {
    /// Adds another queue's statistics.
    pub fn add(&mut self, other: CompactionStats) {
        self.removed += other.removed;
        self.kept += other.kept;
        self.bytes_before += other.bytes_before;
        self.bytes_after += other.bytes_after;
    }
}

/// A queue. Appends are serialised by `writer` inside the process and by the `flock` of `head`
/// between processes; readers take a snapshot of `segments` and read only what has been
/// published, so they never wait for an append's write or fsync — except at the end of the
/// published data, where they catch up with other processes' appends.
#[derive(Debug)]
pub(crate) struct Queue {
    id: u32,
    /// The topic's name, for errors.
    topic: String,
    dir: PathBuf,
    /// `<queue>/LOCK`, open for the queue's lifetime.
    head: File,
    head_path: PathBuf,
    /// The head generation `segments` reflects.
    generation: AtomicU64,
    /// Set once the head carries the deleted mark.
    deleted: AtomicBool,
    /// The store's count of held leases.
    leases: Arc<Leases>,
    writer: Mutex<Writer>,
    /// Segments by base offset; the last one is the newest and takes appends.
    segments: RwLock<Vec<Arc<Segment>>>,
    /// The offset the next append gets, published after the append is visible.
    next_offset: AtomicU64,
    /// Serialises compaction and retention of this queue.
    maintenance: Mutex<()>,
    /// Appended data not yet fsynced (async flush mode).
    dirty: AtomicBool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding the lock cannot leave the data half-updated in a way the next user
    // must not see (published state only changes after a complete write), so poisoning is ignored.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Queue {
    /// Creates an empty queue directory with its lock file and one empty segment at offset 0.
    /// The caller holds the store's topics lock and the topic is not visible yet.
    pub fn create(dir: PathBuf, id: u32, topic: &str, leases: &Arc<Leases>) -> Result<Queue> {
        fs::create_dir_all(&dir).ctx(|| format!("creating {}", dir.display()))?;
        let head_path = dir.join(QUEUE_LOCK_FILE);
        let head = open_lock_file(&head_path)?;
        let seg = Segment::create(&dir, 0)?;
        sync_dir(&dir)?;
        Ok(Queue::from_segments(QueueParts {
            dir,
            id,
            topic,
            leases,
            head,
            head_path,
            generation: 0,
            segments: vec![Arc::new(seg)],
            next_offset: 0,
            last_store_ts: 0,
        }))
    }

    fn from_segments(p: QueueParts<'_>) -> Queue {
        Queue {
            id: p.id,
            topic: p.topic.to_owned(),
            dir: p.dir,
            head: p.head,
            head_path: p.head_path,
            generation: AtomicU64::new(p.generation),
            deleted: AtomicBool::new(false),
            leases: Arc::clone(p.leases),
            writer: Mutex::new(Writer {
                next_offset: p.next_offset,
                last_store_ts: p.last_store_ts,
                frames: Vec::new(),
                entries: Vec::new(),
                lease: None,
            }),
            segments: RwLock::new(p.segments),
            next_offset: AtomicU64::new(p.next_offset),
            maintenance: Mutex::new(()),
            dirty: AtomicBool::new(false),
        }
    }

    /// Opens a queue directory under its lock, recovering the newest segment (see
    /// [`Segment::open`]). Fails with [`StoreError::TopicNotFound`] if the queue is marked
    /// deleted.
    pub fn open(
        dir: PathBuf,
        id: u32,
        topic: &str,
        leases: &Arc<Leases>,
    ) -> Result<(Queue, Recovery)> {
        let head_path = dir.join(QUEUE_LOCK_FILE);
        let head = open_lock_file(&head_path)?;
        let _lock = FlockGuard::lock(&head, &head_path)?;
        let h = Head::read(&head, &head_path)?;
        if h.deleted() {
            return Err(StoreError::TopicNotFound(topic.to_owned()));
        }
        let (segments, recovery) = load_segments(&dir, &[])?;
        let (next_offset, last_store_ts) = end_of(&segments)?;
        let queue = Queue::from_segments(QueueParts {
            dir,
            id,
            topic,
            leases,
            head: head
                .try_clone()
                .ctx(|| "duplicating a queue lock handle".to_owned())?,
            head_path,
            generation: h.generation,
            segments,
            next_offset,
            last_store_ts,
        });
        Ok((queue, recovery))
    }

    /// Whether the topic of this queue was deleted (by any process).
    pub fn is_deleted(&self) -> bool {
        self.deleted.load(Ordering::Acquire)
    }

    fn not_found(&self) -> StoreError {
        StoreError::TopicNotFound(self.topic.clone())
    }

    /// Brings this process's view up to the files: other processes' appends, rolls and
    /// compactions, and a torn tail left by a killed writer (truncated). The caller holds
    /// `writer` (passed as `w`) and the queue's flock.
    fn catch_up(&self, w: &mut Writer) -> Result<()> {
        let head = Head::read(&self.head, &self.head_path)?;
        if head.deleted() {
            self.deleted.store(true, Ordering::Release);
            return Err(self.not_found());
        }
        if head.generation == self.generation.load(Ordering::Acquire) {
            let newest = self.newest()?;
            if newest.file_len()? == newest.len_bytes() {
                return Ok(());
            }
            newest.catch_up(true)?;
        } else {
            let current = self.snapshot();
            let (segments, _) = load_segments(&self.dir, &current)?;
            *self.segments.write().unwrap_or_else(|e| e.into_inner()) = segments;
            self.generation.store(head.generation, Ordering::Release);
        }
        let (next_offset, last_store_ts) = end_of(&self.snapshot())?;
        w.next_offset = next_offset.max(w.next_offset);
        w.last_store_ts = last_store_ts.max(w.last_store_ts);
        self.next_offset.store(w.next_offset, Ordering::Release);
        Ok(())
    }

    /// Takes the writer lock and the queue's flock, and catches up — unless this process holds
    /// a lease on the flock, during which nobody else can have changed the queue. With
    /// `keep_lease`, a flock taken here stays held as a lease after the returned guard drops.
    fn lock_and_catch_up(&self, keep_lease: bool) -> Result<QueueLock<'_>> {
        let mut writer = lock(&self.writer);
        if writer.lease.is_some() {
            return Ok(QueueLock {
                queue: self,
                unlock: false,
                writer,
            });
        }
        let flock = FlockGuard::lock(&self.head, &self.head_path)?;
        self.catch_up(&mut writer)?;
        // From here the returned guard (or the lease) owns the flock.
        std::mem::forget(flock);
        if keep_lease {
            writer.lease = Some(Instant::now());
            self.leases.taken();
        }
        Ok(QueueLock {
            queue: self,
            unlock: !keep_lease,
            writer,
        })
    }

    /// Releases this process's lease on the queue's flock if it is at least [`LEASE`] old.
    /// Called by the store's lease keeper for idle queues: it never waits for the writer lock
    /// (whose holder may itself wait for another process's lease, which that process's keeper
    /// must be free to release), and a busy writer releases its own lease after an append.
    pub fn expire_idle_lease(&self, now: Instant) {
        if let Ok(mut writer) = self.writer.try_lock() {
            self.expire_lease(&mut writer, now);
        }
    }

    /// Releases the lease if it is at least [`LEASE`] old, then keeps the writer lock (held by
    /// the caller) for [`HANDOVER_PAUSE`] so that a process waiting for the flock gets it
    /// before this one takes it again.
    fn expire_lease(&self, writer: &mut Writer, now: Instant) {
        if writer
            .lease
            .is_some_and(|since| now.saturating_duration_since(since) >= LEASE)
        {
            // Unlocking an open file does not fail in a way that leaves it locked.
            let _ = self.head.unlock();
            writer.lease = None;
            self.leases.released();
            std::thread::sleep(HANDOVER_PAUSE);
        }
    }

    /// Whether the files may hold more than this process has published: the head changed or
    /// the newest log is longer than published. Checked without locks.
    fn disk_moved(&self) -> Result<bool> {
        if self.is_deleted() {
            return Err(self.not_found());
        }
        let head = Head::read(&self.head, &self.head_path)?;
        if head.deleted() || head.generation != self.generation.load(Ordering::Acquire) {
            return Ok(true);
        }
        let newest = self.newest()?;
        Ok(newest.file_len()? != newest.len_bytes())
    }

    /// Catches up with other processes if the files moved.
    fn refresh(&self) -> Result<()> {
        if self.disk_moved()? {
            drop(self.lock_and_catch_up(false)?);
        }
        Ok(())
    }

    /// Announces a change of the set of segment files. Caller holds the flock, is caught up,
    /// and bumps *before* changing files: if it dies halfway, the others still reload.
    fn bump_generation(&self) -> Result<()> {
        let generation = self.generation.load(Ordering::Acquire) + 1;
        Head {
            generation,
            flags: 0,
        }
        .write(&self.head, &self.head_path)?;
        self.generation.store(generation, Ordering::Release);
        Ok(())
    }

    fn snapshot(&self) -> Vec<Arc<Segment>> {
        self.segments
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn newest(&self) -> Result<Arc<Segment>> {
        self.snapshot()
            .last()
            .cloned()
            .ok_or_else(|| StoreError::Corrupt {
                path: self.dir.clone(),
                reason: "queue has no segment".into(),
            })
    }

    /// Appends messages as one write (and one fsync in sync mode); returns the first offset.
    ///
    /// If an error is returned after the write, the messages may be stored and visible; the
    /// offsets they took are never reused.
    pub fn append(&self, messages: &[Message], rules: &AppendRules) -> Result<u64> {
        let mut guard = self.lock_and_catch_up(true)?;
        let w = &mut *guard.writer;
        let first_offset = w.next_offset;
        if messages.is_empty() {
            return Ok(first_offset);
        }
        let store_ts = record::now_ms().max(w.last_store_ts);
        w.frames.clear();
        w.entries.clear();
        for (i, msg) in messages.iter().enumerate() {
            if rules.require_key && msg.keys.is_empty() {
                return Err(StoreError::Invalid(
                    "messages of a compacted topic need a key".into(),
                ));
            }
            let offset = first_offset + i as u64;
            let position = w.frames.len() as u64;
            let len = record::encode(&mut w.frames, offset, store_ts, msg)?;
            if len > rules.max_record_bytes {
                return Err(StoreError::Invalid(format!(
                    "message of {len} bytes (encoded) exceeds the limit of {} bytes",
                    rules.max_record_bytes
                )));
            }
            w.entries.push(IndexEntry {
                offset,
                position,
                store_ts,
            });
        }
        let mut active = self.newest()?;
        let batch_len = w.frames.len() as u64;
        if active.len_bytes() > 0 && active.len_bytes() + batch_len > rules.segment_bytes {
            active = self.roll(w.next_offset)?;
        }
        let base_pos = active.len_bytes();
        for e in &mut w.entries {
            e.position += base_pos;
        }
        active.append(&w.frames, &w.entries)?;
        w.next_offset += messages.len() as u64;
        w.last_store_ts = store_ts;
        self.next_offset.store(w.next_offset, Ordering::Release);
        if rules.sync {
            active.sync_log()?;
        } else {
            self.dirty.store(true, Ordering::Release);
        }
        Ok(first_offset)
    }

    /// Seals the newest segment and starts a new one at `next_offset`. Caller holds `writer`
    /// and the flock, and is caught up.
    fn roll(&self, next_offset: u64) -> Result<Arc<Segment>> {
        self.newest()?.seal()?;
        self.bump_generation()?;
        let seg = Arc::new(Segment::create(&self.dir, next_offset)?);
        sync_dir(&self.dir)?;
        self.segments
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .push(Arc::clone(&seg));
        Ok(seg)
    }

    /// fsyncs appended data if there is any not yet synced.
    pub fn flush(&self) -> Result<()> {
        if self.dirty.swap(false, Ordering::AcqRel) {
            if let Err(e) = self.newest().and_then(|s| s.sync_log()) {
                self.dirty.store(true, Ordering::Release);
                return Err(e);
            }
        }
        Ok(())
    }

    /// The offset the next message will get (after catching up with other processes).
    pub fn max_offset(&self) -> Result<u64> {
        self.refresh()?;
        Ok(self.next_offset.load(Ordering::Acquire))
    }

    /// Offsets and size.
    pub fn info(&self) -> Result<QueueInfo> {
        let max_offset = self.max_offset()?;
        let segs = self.snapshot();
        let mut min_offset = None;
        for seg in &segs {
            if let Some(first) = seg.first_entry()? {
                min_offset = Some(first.offset);
                break;
            }
        }
        Ok(QueueInfo {
            id: self.id,
            min_offset: min_offset.unwrap_or(max_offset).min(max_offset),
            max_offset,
            messages: segs.iter().map(|s| s.count()).sum(),
            segments: segs.len(),
            bytes: segs.iter().map(|s| s.len_bytes()).sum(),
        })
    }

    /// Up to `max` messages with offsets `>= from`, in offset order. A read that reaches the
    /// end of what this process has published first catches up with other processes.
    pub fn read(&self, from: u64, max: usize) -> Result<Vec<Record>> {
        let out = self.read_published(from, max)?;
        if out.len() < max && self.disk_moved()? {
            drop(self.lock_and_catch_up(false)?);
            return self.read_published(from, max);
        }
        Ok(out)
    }

    fn read_published(&self, from: u64, max: usize) -> Result<Vec<Record>> {
        let segs = self.snapshot();
        let mut out = Vec::new();
        let mut i = segs.partition_point(|s| s.base <= from).saturating_sub(1);
        while let Some(seg) = segs.get(i) {
            if out.len() >= max {
                break;
            }
            let first = seg.partition_point(|e| e.offset < from)?;
            seg.read(first, max - out.len(), &mut out)?;
            i += 1;
        }
        Ok(out)
    }

    /// The offset of the first message stored at or after `ts`, or `max_offset` if none is.
    pub fn offset_for_timestamp(&self, ts: i64) -> Result<u64> {
        let max_offset = self.max_offset()?;
        for seg in self.snapshot() {
            match seg.last_entry()? {
                Some(last) if last.store_ts >= ts => {
                    let i = seg.partition_point(|e| e.store_ts < ts)?;
                    return Ok(seg.entry(i)?.offset);
                }
                _ => {}
            }
        }
        Ok(max_offset)
    }

    /// Deletes whole old segments: those whose newest record is older than `retention_ms`
    /// (the newest segment included, which is rolled first), and oldest sealed segments while
    /// the queue is larger than `retention_bytes`. Returns the number of segments deleted.
    pub fn apply_retention(
        &self,
        retention_ms: Option<i64>,
        retention_bytes: Option<u64>,
        now: i64,
    ) -> Result<usize> {
        let _maintenance = lock(&self.maintenance);
        let guard = self.lock_and_catch_up(false)?;
        let writer = &guard.writer;
        let segs = self.snapshot();
        let mut total: u64 = segs.iter().map(|s| s.len_bytes()).sum();
        let mut doomed = 0;
        for (i, seg) in segs.iter().enumerate() {
            let Some(last) = seg.last_entry()? else {
                break;
            };
            let newest = i + 1 == segs.len();
            let expired = retention_ms.is_some_and(|ms| last.store_ts < now.saturating_sub(ms));
            let oversized = !newest && retention_bytes.is_some_and(|cap| total > cap);
            if !(expired || oversized) {
                break;
            }
            if newest {
                self.roll(writer.next_offset)?;
            }
            total -= seg.len_bytes();
            doomed += 1;
        }
        if doomed == 0 {
            return Ok(0);
        }
        self.bump_generation()?;
        self.segments
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .drain(..doomed);
        for seg in &segs[..doomed] {
            self.remove_segment_files(seg.base)?;
        }
        sync_dir(&self.dir)?;
        Ok(doomed)
    }

    /// Removes a segment's files, log first so that a crash leaves at worst an orphan index
    /// (which open removes).
    fn remove_segment_files(&self, base: u64) -> Result<()> {
        remove_if_exists(&segment::log_path(&self.dir, base))?;
        remove_if_exists(&segment::index_path(&self.dir, base))
    }

    /// Bytes in sealed segments that compaction has not processed since the store opened.
    pub fn uncompacted_bytes(&self) -> u64 {
        let segs = self.snapshot();
        let sealed = segs.len().saturating_sub(1);
        segs.iter()
            .take(sealed)
            .filter(|s| !s.compacted.load(Ordering::Acquire))
            .map(|s| s.len_bytes())
            .sum()
    }

    /// Compacts the sealed segments: keeps, per compaction key, only the record with the latest
    /// offset in the whole queue, and drops it too if it is a tombstone. Offsets never change.
    /// The newest segment is not rewritten, so its records (tombstones included) stay readable;
    /// with `seal_newest` a non-empty newest segment is sealed first, so that everything
    /// appended before the call is compacted.
    ///
    /// The caller holds the store's maintenance lock, so no other process compacts meanwhile.
    pub fn compact(&self, seal_newest: bool) -> Result<CompactionStats> {
        let _maintenance = lock(&self.maintenance);
        self.remove_cleaned_leftovers()?;
        {
            let guard = self.lock_and_catch_up(false)?;
            if seal_newest && self.newest()?.len_bytes() > 0 {
                self.roll(guard.writer.next_offset)?;
            }
        }
        let segs = self.snapshot();
        let mut stats = CompactionStats::default();
        let sealed = segs.len().saturating_sub(1);
        if sealed == 0 {
            return Ok(stats);
        }
        let mut latest: HashMap<String, u64> = HashMap::new();
        for seg in &segs {
            seg.for_each_record(|rec| {
                if let Some(key) = rec.message.compaction_key() {
                    latest.insert(key.to_owned(), rec.offset);
                }
                Ok(())
            })?;
        }
        for seg in segs.iter().take(sealed) {
            let mut frames = Vec::new();
            let mut entries = Vec::new();
            let mut removed = 0u64;
            seg.for_each_record(|rec: Record| {
                let keep = match rec.message.compaction_key() {
                    Some(key) => {
                        latest.get(key) == Some(&rec.offset) && !rec.message.is_tombstone()
                    }
                    None => true,
                };
                if keep {
                    let position = frames.len() as u64;
                    record::encode(&mut frames, rec.offset, rec.store_ts, &rec.message)?;
                    entries.push(IndexEntry {
                        offset: rec.offset,
                        position,
                        store_ts: rec.store_ts,
                    });
                } else {
                    removed += 1;
                }
                Ok(())
            })?;
            stats.bytes_before += seg.len_bytes();
            stats.bytes_after += frames.len() as u64;
            stats.kept += entries.len() as u64;
            stats.removed += removed;
            if removed == 0 {
                seg.compacted.store(true, Ordering::Release);
                continue;
            }
            self.replace_segment(seg, &frames, &entries)?;
        }
        Ok(stats)
    }

    /// Swaps a sealed segment for its compacted content (or removes it when nothing is left).
    ///
    /// Order: new log written and synced under a temporary name; old index removed; log renamed
    /// into place; new index written the same way. A crash at any point leaves either the old
    /// or the new log, and an index that is either correct or missing (then rebuilt on open).
    fn replace_segment(
        &self,
        old: &Arc<Segment>,
        frames: &[u8],
        entries: &[IndexEntry],
    ) -> Result<()> {
        let base = old.base;
        let log = segment::log_path(&self.dir, base);
        let idx = segment::index_path(&self.dir, base);
        if entries.is_empty() {
            let _guard = self.lock_and_catch_up(false)?;
            self.bump_generation()?;
            self.segments
                .write()
                .unwrap_or_else(|e| e.into_inner())
                .retain(|s| s.base != base);
            self.remove_segment_files(base)?;
            return sync_dir(&self.dir);
        }
        // Both new files are written before taking the queue's lock, which is held only for
        // the renames.
        let log_tmp = with_suffix(&log, CLEANED_SUFFIX);
        write_synced(&log_tmp, frames)?;
        let mut idx_bytes = Vec::with_capacity(entries.len() * INDEX_ENTRY_BYTES as usize);
        for e in entries {
            e.encode_into(&mut idx_bytes);
        }
        let idx_tmp = with_suffix(&idx, CLEANED_SUFFIX);
        write_synced(&idx_tmp, &idx_bytes)?;
        let _guard = self.lock_and_catch_up(false)?;
        self.bump_generation()?;
        remove_if_exists(&idx)?;
        sync_dir(&self.dir)?;
        fs::rename(&log_tmp, &log).ctx(|| format!("renaming {}", log_tmp.display()))?;
        sync_dir(&self.dir)?;
        fs::rename(&idx_tmp, &idx).ctx(|| format!("renaming {}", idx_tmp.display()))?;
        sync_dir(&self.dir)?;
        let (fresh, _) = Segment::open(&self.dir, base, false)?;
        fresh.compacted.store(true, Ordering::Release);
        let fresh = Arc::new(fresh);
        {
            let mut segs = self.segments.write().unwrap_or_else(|e| e.into_inner());
            if let Some(slot) = segs.iter_mut().find(|s| s.base == base) {
                *slot = fresh;
            }
        }
        Ok(())
    }
}

impl Queue {
    /// Removes files of compactions that were interrupted. Caller holds the store's
    /// maintenance lock, so no compaction is writing them now.
    fn remove_cleaned_leftovers(&self) -> Result<()> {
        let listing = fs::read_dir(&self.dir).ctx(|| format!("listing {}", self.dir.display()))?;
        for entry in listing {
            let entry = entry.ctx(|| format!("listing {}", self.dir.display()))?;
            if entry
                .file_name()
                .to_string_lossy()
                .ends_with(CLEANED_SUFFIX)
            {
                remove_if_exists(&entry.path())?;
            }
        }
        Ok(())
    }
}

impl Drop for Queue {
    fn drop(&mut self) {
        // Closing the file releases the flock itself.
        if lock(&self.writer).lease.is_some() {
            self.leases.released();
        }
    }
}

/// The in-process writer lock and the cross-process flock (or lease) of a queue, caught up
/// with the files. A flock taken without a lease is released in `drop`, before the writer
/// lock: a thread that takes the writer lock next must not find the flock still held through
/// the shared file handle and then lose it.
struct QueueLock<'a> {
    queue: &'a Queue,
    unlock: bool,
    writer: MutexGuard<'a, Writer>,
}

impl Drop for QueueLock<'_> {
    fn drop(&mut self) {
        if self.unlock {
            // Unlocking an open file does not fail in a way that leaves it locked.
            let _ = self.queue.head.unlock();
        } else {
            self.queue.expire_lease(&mut self.writer, Instant::now());
        }
    }
}

/// What [`Queue::from_segments`] assembles.
struct QueueParts<'a> {
    dir: PathBuf,
    id: u32,
    topic: &'a str,
    leases: &'a Arc<Leases>,
    head: File,
    head_path: PathBuf,
    generation: u64,
    segments: Vec<Arc<Segment>>,
    next_offset: u64,
    last_store_ts: i64,
}

/// Loads the segments of a queue directory. Segments in `known` whose files are unchanged
/// (same base, same log inode) are kept and caught up; the others are opened, recovering the
/// newest (see [`Segment::open`]). An empty directory gets an empty segment at offset 0. The
/// caller holds the queue's flock.
fn load_segments(dir: &Path, known: &[Arc<Segment>]) -> Result<(Vec<Arc<Segment>>, Recovery)> {
    let mut bases = Vec::new();
    let listing = fs::read_dir(dir).ctx(|| format!("listing {}", dir.display()))?;
    let mut index_files = Vec::new();
    for entry in listing {
        let entry = entry.ctx(|| format!("listing {}", dir.display()))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(base) = segment::parse_log_name(&name) {
            bases.push(base);
        } else if name.ends_with(".idx") {
            index_files.push(entry.path());
        }
    }
    bases.sort_unstable();
    // An index without its log is left over from a deleted segment.
    for idx in index_files {
        let has_log = bases.iter().any(|&b| segment::index_path(dir, b) == idx);
        if !has_log {
            remove_if_exists(&idx)?;
        }
    }
    if bases.is_empty() {
        let seg = Segment::create(dir, 0)?;
        sync_dir(dir)?;
        return Ok((vec![Arc::new(seg)], Recovery::default()));
    }
    let mut segments: Vec<Arc<Segment>> = Vec::with_capacity(bases.len());
    let mut recovery = Recovery::default();
    let mut prev_last: Option<u64> = None;
    for (i, &base) in bases.iter().enumerate() {
        let newest = i + 1 == bases.len();
        let inode = fs::metadata(segment::log_path(dir, base))
            .ctx(|| {
                format!(
                    "reading metadata of {}",
                    segment::log_path(dir, base).display()
                )
            })?
            .ino();
        let reusable = known
            .iter()
            .find(|s| s.base == base && s.inode() == inode)
            .cloned();
        let seg = match reusable {
            Some(seg) => {
                recovery.truncated_bytes += seg.catch_up(newest)?;
                seg
            }
            None => {
                let (seg, rec) = Segment::open(dir, base, newest)?;
                if rec.index_rebuilt {
                    recovery.index_rebuilt = true;
                }
                recovery.truncated_bytes += rec.truncated_bytes;
                Arc::new(seg)
            }
        };
        if let (Some(prev), Some(first)) = (prev_last, seg.first_entry()?) {
            if first.offset <= prev {
                return Err(StoreError::Corrupt {
                    path: seg.log_path().to_path_buf(),
                    reason: format!(
                        "first offset {} is not after the previous segment's last offset {prev}",
                        first.offset
                    ),
                });
            }
        }
        if let Some(last) = seg.last_entry()? {
            prev_last = Some(last.offset);
        }
        segments.push(seg);
    }
    Ok((segments, recovery))
}

/// The offset the next append gets and the newest store timestamp, from the segments.
fn end_of(segments: &[Arc<Segment>]) -> Result<(u64, i64)> {
    let newest_base = segments.last().map_or(0, |s| s.base);
    let mut next_offset = newest_base;
    let mut last_store_ts = 0;
    for seg in segments.iter().rev() {
        if let Some(last) = seg.last_entry()? {
            next_offset = next_offset.max(last.offset + 1);
            last_store_ts = last.store_ts;
            break;
        }
    }
    Ok((next_offset, last_store_ts))
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

fn write_synced(path: &Path, bytes: &[u8]) -> Result<()> {
    fs::write(path, bytes)
        .and_then(|()| fs::File::open(path)?.sync_all())
        .ctx(|| format!("writing {}", path.display()))
}
