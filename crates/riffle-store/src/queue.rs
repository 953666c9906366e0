//! One queue of a topic: a directory of segments, the newest of which takes appends.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

use crate::error::{IoContext, Result, StoreError};
use crate::fsutil::{remove_if_exists, sync_dir};
use crate::record::{self, Message, Record};
use crate::segment::{self, IndexEntry, Recovery, Segment, INDEX_ENTRY_BYTES};

/// Suffix of files being written by compaction; leftovers are removed on open.
const CLEANED_SUFFIX: &str = ".cleaned";

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

/// A queue. Appends are serialised by `writer`; readers take a snapshot of `segments` and read
/// only what has been published, so they never wait for an append's write or fsync.
#[derive(Debug)]
pub(crate) struct Queue {
    id: u32,
    dir: PathBuf,
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
    /// Creates an empty queue directory with one empty segment at offset 0.
    pub fn create(dir: PathBuf, id: u32) -> Result<Queue> {
        fs::create_dir_all(&dir).ctx(|| format!("creating {}", dir.display()))?;
        let seg = Segment::create(&dir, 0)?;
        sync_dir(&dir)?;
        Ok(Queue::from_segments(dir, id, vec![Arc::new(seg)], 0, 0))
    }

    fn from_segments(
        dir: PathBuf,
        id: u32,
        segments: Vec<Arc<Segment>>,
        next_offset: u64,
        last_store_ts: i64,
    ) -> Queue {
        Queue {
            id,
            dir,
            writer: Mutex::new(Writer {
                next_offset,
                last_store_ts,
                frames: Vec::new(),
                entries: Vec::new(),
            }),
            segments: RwLock::new(segments),
            next_offset: AtomicU64::new(next_offset),
            maintenance: Mutex::new(()),
            dirty: AtomicBool::new(false),
        }
    }

    /// Opens a queue directory, recovering the newest segment (see [`Segment::open`]).
    pub fn open(dir: PathBuf, id: u32) -> Result<(Queue, Recovery)> {
        let mut bases = Vec::new();
        let listing = fs::read_dir(&dir).ctx(|| format!("listing {}", dir.display()))?;
        let mut index_files = Vec::new();
        for entry in listing {
            let entry = entry.ctx(|| format!("listing {}", dir.display()))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.ends_with(CLEANED_SUFFIX) {
                remove_if_exists(&entry.path())?;
            } else if let Some(base) = segment::parse_log_name(&name) {
                bases.push(base);
            } else if name.ends_with(".idx") {
                index_files.push(entry.path());
            }
        }
        bases.sort_unstable();
        // An index without its log is left over from a deleted segment.
        for idx in index_files {
            let has_log = bases.iter().any(|&b| segment::index_path(&dir, b) == idx);
            if !has_log {
                remove_if_exists(&idx)?;
            }
        }
        if bases.is_empty() {
            return Ok((Queue::create(dir, id)?, Recovery::default()));
        }
        let mut segments = Vec::with_capacity(bases.len());
        let mut recovery = Recovery::default();
        let mut prev_last: Option<u64> = None;
        for (i, &base) in bases.iter().enumerate() {
            let newest = i + 1 == bases.len();
            let (seg, rec) = Segment::open(&dir, base, newest)?;
            if rec.index_rebuilt {
                recovery.index_rebuilt = true;
            }
            recovery.truncated_bytes += rec.truncated_bytes;
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
            segments.push(Arc::new(seg));
        }
        let newest_base = bases.last().copied().unwrap_or(0);
        let next_offset = prev_last.map_or(newest_base, |l| (l + 1).max(newest_base));
        let mut last_store_ts = 0;
        for seg in segments.iter().rev() {
            if let Some(last) = seg.last_entry()? {
                last_store_ts = last.store_ts;
                break;
            }
        }
        let queue = Queue::from_segments(dir, id, segments, next_offset, last_store_ts);
        Ok((queue, recovery))
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
        let mut guard = lock(&self.writer);
        let w = &mut *guard;
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

    /// Seals the newest segment and starts a new one at `next_offset`. Caller holds `writer`.
    fn roll(&self, next_offset: u64) -> Result<Arc<Segment>> {
        self.newest()?.seal()?;
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

    /// The offset the next message will get.
    pub fn max_offset(&self) -> u64 {
        self.next_offset.load(Ordering::Acquire)
    }

    /// Offsets and size.
    pub fn info(&self) -> Result<QueueInfo> {
        let max_offset = self.max_offset();
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

    /// Up to `max` messages with offsets `>= from`, in offset order.
    pub fn read(&self, from: u64, max: usize) -> Result<Vec<Record>> {
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
        let max_offset = self.max_offset();
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
        let writer = lock(&self.writer);
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
        drop(writer);
        if doomed == 0 {
            return Ok(0);
        }
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
    pub fn compact(&self, seal_newest: bool) -> Result<CompactionStats> {
        let _maintenance = lock(&self.maintenance);
        if seal_newest {
            let writer = lock(&self.writer);
            if self.newest()?.len_bytes() > 0 {
                self.roll(writer.next_offset)?;
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
            self.segments
                .write()
                .unwrap_or_else(|e| e.into_inner())
                .retain(|s| !Arc::ptr_eq(s, old));
            self.remove_segment_files(base)?;
            return sync_dir(&self.dir);
        }
        let log_tmp = with_suffix(&log, CLEANED_SUFFIX);
        write_synced(&log_tmp, frames)?;
        remove_if_exists(&idx)?;
        sync_dir(&self.dir)?;
        fs::rename(&log_tmp, &log).ctx(|| format!("renaming {}", log_tmp.display()))?;
        sync_dir(&self.dir)?;
        let mut idx_bytes = Vec::with_capacity(entries.len() * INDEX_ENTRY_BYTES as usize);
        for e in entries {
            e.encode_into(&mut idx_bytes);
        }
        let idx_tmp = with_suffix(&idx, CLEANED_SUFFIX);
        write_synced(&idx_tmp, &idx_bytes)?;
        fs::rename(&idx_tmp, &idx).ctx(|| format!("renaming {}", idx_tmp.display()))?;
        sync_dir(&self.dir)?;
        let (fresh, _) = Segment::open(&self.dir, base, false)?;
        fresh.compacted.store(true, Ordering::Release);
        let fresh = Arc::new(fresh);
        let mut segs = self.segments.write().unwrap_or_else(|e| e.into_inner());
        if let Some(slot) = segs.iter_mut().find(|s| Arc::ptr_eq(s, old)) {
            *slot = fresh;
        }
        Ok(())
    }
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
