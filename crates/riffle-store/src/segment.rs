//! One segment of a queue: an append-only log file and its offset index.
//!
//! Files are named by the segment's *base offset*, zero-padded to 20 digits:
//! `00000000000000001024.log` and `00000000000000001024.idx`. The base is a lower bound of the
//! offsets inside; after compaction the first record may have a larger offset.
//!
//! The index holds one 24-byte entry per record, in log order: `offset u64 | position u64 |
//! store_timestamp i64`, little-endian. Offsets strictly increase and store timestamps never
//! decrease, so both can be binary-searched. The index is derived data: it is rebuilt from the log
//! whenever it does not match.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::error::{IoContext, Result, StoreError};
use crate::record::{self, FrameHeader, Record, FRAME_HEADER_BYTES};

/// Bytes of one index entry.
pub(crate) const INDEX_ENTRY_BYTES: u64 = 24;
/// Read-ahead when scanning a log.
const SCAN_CHUNK_BYTES: usize = 256 * 1024;

/// One index entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct IndexEntry {
    /// Queue offset of the record.
    pub offset: u64,
    /// Byte position of the record's frame in the log.
    pub position: u64,
    /// Store timestamp of the record.
    pub store_ts: i64,
}

impl IndexEntry {
    /// Appends the entry's 24 bytes to `buf`.
    pub fn encode_into(&self, buf: &mut Vec<u8>) {
        buf.extend_from_slice(&self.offset.to_le_bytes());
        buf.extend_from_slice(&self.position.to_le_bytes());
        buf.extend_from_slice(&self.store_ts.to_le_bytes());
    }

    fn decode(b: &[u8; INDEX_ENTRY_BYTES as usize]) -> Self {
        let mut o = [0u8; 8];
        let mut p = [0u8; 8];
        let mut t = [0u8; 8];
        o.copy_from_slice(&b[0..8]);
        p.copy_from_slice(&b[8..16]);
        t.copy_from_slice(&b[16..24]);
        IndexEntry {
            offset: u64::from_le_bytes(o),
            position: u64::from_le_bytes(p),
            store_ts: i64::from_le_bytes(t),
        }
    }
}

/// The path of a segment's log file.
pub(crate) fn log_path(dir: &Path, base: u64) -> PathBuf {
    dir.join(format!("{base:020}.log"))
}

/// The path of a segment's index file.
pub(crate) fn index_path(dir: &Path, base: u64) -> PathBuf {
    dir.join(format!("{base:020}.idx"))
}

/// Parses a segment base offset from a `NNNN.log` file name.
pub(crate) fn parse_log_name(name: &str) -> Option<u64> {
    let digits = name.strip_suffix(".log")?;
    if digits.len() != 20 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// An open segment. Readers see only the bytes and entries published by `append`.
#[derive(Debug)]
pub(crate) struct Segment {
    /// Lower bound of the offsets in this segment; names its files.
    pub base: u64,
    log_path: PathBuf,
    log: File,
    /// Inode of the log file: tells a segment replaced by another process's compaction (same
    /// name, new file) from the one this process has open.
    inode: u64,
    index: File,
    /// Published log length in bytes.
    log_len: AtomicU64,
    /// Published number of index entries.
    entries: AtomicU64,
    /// Whether compaction has already processed this (sealed) segment since the store opened.
    pub compacted: AtomicBool,
}

/// How a scan of a log ended.
#[derive(Debug)]
pub(crate) struct ScanEnd {
    /// End of the last valid record visited.
    pub valid_end: u64,
    /// Why the scan stopped before the end, if the data was invalid there.
    pub problem: Option<String>,
}

/// Calls `visit(position, payload)` for every CRC-valid record in `file[pos..end)`, in order,
/// until `visit` returns `false`, the end is reached, or an invalid frame is met (reported in
/// [`ScanEnd::problem`], not as an error).
pub(crate) fn scan_frames(
    file: &File,
    path: &Path,
    mut pos: u64,
    end: u64,
    chunk_hint: usize,
    mut visit: impl FnMut(u64, &[u8]) -> Result<bool>,
) -> Result<ScanEnd> {
    let mut buf: Vec<u8> = Vec::new();
    let mut buf_start = pos;
    let stop = |valid_end: u64, problem: String| {
        Ok(ScanEnd {
            valid_end,
            problem: Some(problem),
        })
    };
    loop {
        if pos >= end {
            return Ok(ScanEnd {
                valid_end: pos,
                problem: None,
            });
        }
        if end - pos < FRAME_HEADER_BYTES as u64 {
            return stop(pos, format!("incomplete record header at byte {pos}"));
        }
        ensure_buffered(
            file,
            path,
            &mut buf,
            &mut buf_start,
            pos,
            FRAME_HEADER_BYTES as u64,
            end,
            chunk_hint,
        )?;
        let rel =
            usize::try_from(pos - buf_start).map_err(|_| corrupt(path, "position overflow"))?;
        let mut hdr_bytes = [0u8; FRAME_HEADER_BYTES];
        hdr_bytes.copy_from_slice(&buf[rel..rel + FRAME_HEADER_BYTES]);
        let hdr = FrameHeader::parse(hdr_bytes);
        if hdr.len == 0 {
            return stop(pos, format!("zero-length record at byte {pos}"));
        }
        let frame_len = hdr.frame_len();
        if frame_len > end - pos {
            return stop(
                pos,
                format!(
                    "incomplete record at byte {pos}: needs {frame_len} bytes, {} left",
                    end - pos
                ),
            );
        }
        ensure_buffered(
            file,
            path,
            &mut buf,
            &mut buf_start,
            pos,
            frame_len,
            end,
            chunk_hint,
        )?;
        let rel =
            usize::try_from(pos - buf_start).map_err(|_| corrupt(path, "position overflow"))?;
        let payload_end =
            usize::try_from(frame_len).map_err(|_| corrupt(path, "record too large"))? + rel;
        let payload = &buf[rel + FRAME_HEADER_BYTES..payload_end];
        if !hdr.check(payload) {
            return stop(pos, format!("CRC mismatch in record at byte {pos}"));
        }
        if !visit(pos, payload)? {
            return Ok(ScanEnd {
                valid_end: pos + frame_len,
                problem: None,
            });
        }
        pos += frame_len;
    }
}

/// Makes `buf` (which starts at file position `buf_start`) cover `[pos, pos + need)`.
#[allow(clippy::too_many_arguments)]
fn ensure_buffered(
    file: &File,
    path: &Path,
    buf: &mut Vec<u8>,
    buf_start: &mut u64,
    pos: u64,
    need: u64,
    end: u64,
    chunk_hint: usize,
) -> Result<()> {
    let have_end = *buf_start + buf.len() as u64;
    if pos >= *buf_start && pos + need <= have_end {
        return Ok(());
    }
    let want = need.max(chunk_hint as u64).min(end - pos);
    let want = usize::try_from(want).map_err(|_| corrupt(path, "record too large"))?;
    buf.clear();
    buf.resize(want, 0);
    file.read_exact_at(buf, pos)
        .ctx(|| format!("reading {}", path.display()))?;
    *buf_start = pos;
    Ok(())
}

fn corrupt(path: &Path, reason: impl Into<String>) -> StoreError {
    StoreError::Corrupt {
        path: path.to_path_buf(),
        reason: reason.into(),
    }
}

/// Opens a file for reading and writing, creating it if asked.
fn open_rw(path: &Path, create: bool) -> Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(create)
        .truncate(false)
        .open(path)
        .ctx(|| format!("opening {}", path.display()))
}

/// What recovery did to the newest segment.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Recovery {
    /// Bytes cut from the log's tail because they were torn or corrupt.
    pub truncated_bytes: u64,
    /// Whether the index was rewritten from the log.
    pub index_rebuilt: bool,
}

impl Segment {
    /// Creates the empty files of a new segment. Files left by an earlier failed attempt to
    /// create the same segment are emptied: a new segment's base is past every stored offset.
    pub fn create(dir: &Path, base: u64) -> Result<Segment> {
        let log_path = log_path(dir, base);
        let idx_path = index_path(dir, base);
        let log = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&log_path)
            .ctx(|| format!("creating {}", log_path.display()))?;
        let index = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&idx_path)
            .ctx(|| format!("creating {}", idx_path.display()))?;
        Segment::from_parts(base, log_path, log, index, 0)
    }

    fn from_parts(
        base: u64,
        log_path: PathBuf,
        log: File,
        index: File,
        log_len: u64,
    ) -> Result<Segment> {
        let inode = log
            .metadata()
            .ctx(|| format!("reading metadata of {}", log_path.display()))?
            .ino();
        Ok(Segment {
            base,
            log_path,
            log,
            inode,
            index,
            log_len: AtomicU64::new(log_len),
            entries: AtomicU64::new(0),
            compacted: AtomicBool::new(false),
        })
    }

    /// Opens a segment. A sealed segment (`newest == false`) gets a cheap consistency check of its
    /// index and a rebuild if that fails; its log must be intact. The newest segment's log is
    /// fully CRC-checked: a torn or corrupt tail is truncated and the index rebuilt if it differs.
    pub fn open(dir: &Path, base: u64, newest: bool) -> Result<(Segment, Recovery)> {
        let log_path = log_path(dir, base);
        let idx_path = index_path(dir, base);
        let log = open_rw(&log_path, false)?;
        let index = open_rw(&idx_path, true)?;
        let file_len = log
            .metadata()
            .ctx(|| format!("reading size of {}", log_path.display()))?
            .len();
        let seg = Segment::from_parts(base, log_path, log, index, file_len)?;
        let mut recovery = Recovery::default();
        if !newest && seg.sealed_index_consistent(file_len)? {
            let idx_len = seg.index_file_len()?;
            seg.entries
                .store(idx_len / INDEX_ENTRY_BYTES, Ordering::Release);
            return Ok((seg, recovery));
        }
        let (entries, scan) = seg.scan_entries(0, file_len, None)?;
        if let Some(problem) = scan.problem {
            if !newest {
                return Err(corrupt(&seg.log_path, problem));
            }
            recovery.truncated_bytes = file_len - scan.valid_end;
            seg.log
                .set_len(scan.valid_end)
                .ctx(|| format!("truncating {}", seg.log_path.display()))?;
            seg.log
                .sync_all()
                .ctx(|| format!("syncing {}", seg.log_path.display()))?;
        }
        seg.log_len.store(scan.valid_end, Ordering::Release);
        if seg.read_index_file()? != entries {
            seg.write_index_file(&entries)?;
            recovery.index_rebuilt = true;
        }
        seg.entries.store(entries.len() as u64, Ordering::Release);
        Ok((seg, recovery))
    }

    /// Whether a sealed segment's index plausibly matches its log: whole entries, and the last
    /// entry points at a valid record that ends exactly at the end of the log.
    fn sealed_index_consistent(&self, file_len: u64) -> Result<bool> {
        let idx_len = self.index_file_len()?;
        if idx_len % INDEX_ENTRY_BYTES != 0 {
            return Ok(false);
        }
        let count = idx_len / INDEX_ENTRY_BYTES;
        if count == 0 {
            return Ok(file_len == 0);
        }
        let last = self.entry(count - 1)?;
        if last.position >= file_len {
            return Ok(false);
        }
        let mut seen = None;
        let scan = scan_frames(
            &self.log,
            &self.log_path,
            last.position,
            file_len,
            4096,
            |_, payload| {
                seen = record::peek_position(payload).ok();
                Ok(false)
            },
        )?;
        Ok(scan.problem.is_none()
            && scan.valid_end == file_len
            && seen == Some((last.offset, last.store_ts)))
    }

    /// Index entries for every valid record of the log in `[start, end)`, and where validity
    /// ended; `prev` is the entry of the record just before `start`, if any.
    fn scan_entries(
        &self,
        start: u64,
        end: u64,
        prev: Option<IndexEntry>,
    ) -> Result<(Vec<IndexEntry>, ScanEnd)> {
        let mut entries: Vec<IndexEntry> = Vec::new();
        let mut bad_order: Option<(u64, String)> = None;
        let base = self.base;
        let mut scan = scan_frames(
            &self.log,
            &self.log_path,
            start,
            end,
            SCAN_CHUNK_BYTES,
            |pos, payload| {
                let (offset, store_ts) = match record::peek_position(payload) {
                    Ok(p) => p,
                    Err(e) => {
                        bad_order = Some((pos, format!("undecodable record at byte {pos}: {e}")));
                        return Ok(false);
                    }
                };
                let in_order = match entries.last().or(prev.as_ref()) {
                    Some(prev) => offset > prev.offset,
                    None => offset >= base,
                };
                if !in_order {
                    bad_order = Some((pos, format!("offset {offset} out of order at byte {pos}")));
                    return Ok(false);
                }
                entries.push(IndexEntry {
                    offset,
                    position: pos,
                    store_ts,
                });
                Ok(true)
            },
        )?;
        if let Some((pos, problem)) = bad_order {
            scan = ScanEnd {
                valid_end: pos,
                problem: Some(problem),
            };
        }
        Ok((entries, scan))
    }

    fn index_file_len(&self) -> Result<u64> {
        Ok(self
            .index
            .metadata()
            .ctx(|| format!("reading size of index of {}", self.log_path.display()))?
            .len())
    }

    fn read_index_file(&self) -> Result<Vec<IndexEntry>> {
        let len = self.index_file_len()?;
        let whole = len - len % INDEX_ENTRY_BYTES;
        let mut bytes = vec![
            0u8;
            usize::try_from(whole)
                .map_err(|_| corrupt(&self.log_path, "index too large"))?
        ];
        self.index
            .read_exact_at(&mut bytes, 0)
            .ctx(|| format!("reading index of {}", self.log_path.display()))?;
        Ok(bytes
            .chunks_exact(INDEX_ENTRY_BYTES as usize)
            .filter_map(|c| c.try_into().ok())
            .map(IndexEntry::decode)
            .collect())
    }

    fn write_index_file(&self, entries: &[IndexEntry]) -> Result<()> {
        let mut buf = Vec::with_capacity(entries.len() * INDEX_ENTRY_BYTES as usize);
        for e in entries {
            e.encode_into(&mut buf);
        }
        self.index
            .set_len(0)
            .and_then(|()| self.index.write_all_at(&buf, 0))
            .and_then(|()| self.index.sync_all())
            .ctx(|| format!("rewriting index of {}", self.log_path.display()))
    }

    /// Published log length.
    pub fn len_bytes(&self) -> u64 {
        self.log_len.load(Ordering::Acquire)
    }

    /// Published number of records.
    pub fn count(&self) -> u64 {
        self.entries.load(Ordering::Acquire)
    }

    /// The log file's length on disk, which is past the published length while an append is
    /// being written, after another process appended, or when a killed writer left a torn tail.
    pub fn file_len(&self) -> Result<u64> {
        Ok(self
            .log
            .metadata()
            .ctx(|| format!("reading size of {}", self.log_path.display()))?
            .len())
    }

    /// The log file's inode.
    pub fn inode(&self) -> u64 {
        self.inode
    }

    /// Publishes what other processes appended to this segment since this process last looked:
    /// the records after the published end are CRC-checked and indexed. A torn or corrupt tail
    /// (a writer killed mid-append) is truncated if this is the `newest` segment and is
    /// [`StoreError::Corrupt`] otherwise. The caller holds the queue's cross-process lock, so
    /// nobody writes meanwhile. Returns the number of bytes truncated.
    pub fn catch_up(&self, newest: bool) -> Result<u64> {
        let file_len = self.file_len()?;
        let published = self.len_bytes();
        if file_len == published {
            return Ok(0);
        }
        if file_len < published {
            return Err(corrupt(
                &self.log_path,
                format!("the log shrank from {published} to {file_len} bytes"),
            ));
        }
        let count = self.count();
        let (entries, scan) = self.scan_entries(published, file_len, self.last_entry()?)?;
        let mut truncated = 0;
        if let Some(problem) = scan.problem {
            if !newest {
                return Err(corrupt(&self.log_path, problem));
            }
            truncated = file_len - scan.valid_end;
            self.log
                .set_len(scan.valid_end)
                .and_then(|()| self.log.sync_all())
                .ctx(|| format!("truncating {}", self.log_path.display()))?;
        }
        // The writer of these records may have died before writing their index entries.
        let mut idx = Vec::with_capacity(entries.len() * INDEX_ENTRY_BYTES as usize);
        for e in &entries {
            e.encode_into(&mut idx);
        }
        let idx_end = (count + entries.len() as u64) * INDEX_ENTRY_BYTES;
        self.index
            .write_all_at(&idx, count * INDEX_ENTRY_BYTES)
            .ctx(|| format!("writing index of {}", self.log_path.display()))?;
        if self.index_file_len()? != idx_end {
            self.index
                .set_len(idx_end)
                .ctx(|| format!("truncating index of {}", self.log_path.display()))?;
        }
        self.log_len.store(scan.valid_end, Ordering::Release);
        self.entries
            .store(count + entries.len() as u64, Ordering::Release);
        Ok(truncated)
    }

    /// The i-th index entry (must be below the published count or the file length).
    pub fn entry(&self, i: u64) -> Result<IndexEntry> {
        let mut b = [0u8; INDEX_ENTRY_BYTES as usize];
        self.index
            .read_exact_at(&mut b, i * INDEX_ENTRY_BYTES)
            .ctx(|| format!("reading index of {}", self.log_path.display()))?;
        Ok(IndexEntry::decode(&b))
    }

    /// The first published entry, if any.
    pub fn first_entry(&self) -> Result<Option<IndexEntry>> {
        if self.count() == 0 {
            return Ok(None);
        }
        self.entry(0).map(Some)
    }

    /// The last published entry, if any.
    pub fn last_entry(&self) -> Result<Option<IndexEntry>> {
        match self.count() {
            0 => Ok(None),
            n => self.entry(n - 1).map(Some),
        }
    }

    /// The number of published entries for which `before(entry)` holds, assuming it holds for a
    /// prefix (binary search over the index file).
    pub fn partition_point(&self, before: impl Fn(&IndexEntry) -> bool) -> Result<u64> {
        let (mut lo, mut hi) = (0u64, self.count());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if before(&self.entry(mid)?) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        Ok(lo)
    }

    /// Appends encoded frames and their index entries (positions already relative to this log),
    /// then publishes them. A failed write leaves nothing published; the next append overwrites
    /// the unpublished bytes.
    pub fn append(&self, frames: &[u8], entries: &[IndexEntry]) -> Result<()> {
        let log_len = self.len_bytes();
        let count = self.count();
        self.log
            .write_all_at(frames, log_len)
            .ctx(|| format!("writing {}", self.log_path.display()))?;
        let mut idx = Vec::with_capacity(entries.len() * INDEX_ENTRY_BYTES as usize);
        for e in entries {
            e.encode_into(&mut idx);
        }
        self.index
            .write_all_at(&idx, count * INDEX_ENTRY_BYTES)
            .ctx(|| format!("writing index of {}", self.log_path.display()))?;
        self.log_len
            .store(log_len + frames.len() as u64, Ordering::Release);
        self.entries
            .store(count + entries.len() as u64, Ordering::Release);
        Ok(())
    }

    /// Forces the log's data to disk (the index is rebuildable and is synced only when sealing).
    pub fn sync_log(&self) -> Result<()> {
        self.log
            .sync_data()
            .ctx(|| format!("syncing {}", self.log_path.display()))
    }

    /// Forces log and index to disk, before the segment stops being the newest.
    pub fn seal(&self) -> Result<()> {
        self.sync_log()?;
        self.index
            .sync_data()
            .ctx(|| format!("syncing index of {}", self.log_path.display()))
    }

    /// Decodes up to `max` records starting at the `first`-th published entry.
    pub fn read(&self, first: u64, max: usize, out: &mut Vec<Record>) -> Result<()> {
        let count = self.count();
        if first >= count || max == 0 {
            return Ok(());
        }
        let end = self.len_bytes();
        let start = self.entry(first)?.position;
        let want = usize::try_from(count - first)
            .unwrap_or(usize::MAX)
            .min(max);
        let target = out.len() + want;
        let path = &self.log_path;
        let chunk = SCAN_CHUNK_BYTES.min(want.saturating_mul(1024).max(4096));
        let scan = scan_frames(&self.log, path, start, end, chunk, |_, payload| {
            let rec = record::decode_payload(payload).map_err(|e| corrupt(path, e))?;
            out.push(rec);
            Ok(out.len() < target)
        })?;
        match scan.problem {
            Some(problem) => Err(corrupt(path, problem)),
            None => Ok(()),
        }
    }

    /// Visits every record (decoded) of the published log in order.
    pub fn for_each_record(&self, mut visit: impl FnMut(Record) -> Result<()>) -> Result<()> {
        let path = &self.log_path;
        let scan = scan_frames(
            &self.log,
            path,
            0,
            self.len_bytes(),
            SCAN_CHUNK_BYTES,
            |_, payload| {
                visit(record::decode_payload(payload).map_err(|e| corrupt(path, e))?)?;
                Ok(true)
            },
        )?;
        match scan.problem {
            Some(problem) => Err(corrupt(path, problem)),
            None => Ok(()),
        }
    }

    /// The log file's path.
    pub fn log_path(&self) -> &Path {
        &self.log_path
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{encode, Message};

    fn write_records(seg: &Segment, offsets: &[u64]) {
        let mut frames = Vec::new();
        let mut entries = Vec::new();
        for &o in offsets {
            let position = seg.len_bytes() + frames.len() as u64;
            encode(
                &mut frames,
                o,
                1000 + o as i64,
                &Message::new(format!("m{o}")),
            )
            .unwrap();
            entries.push(IndexEntry {
                offset: o,
                position,
                store_ts: 1000 + o as i64,
            });
        }
        seg.append(&frames, &entries).unwrap();
    }

    #[test]
    fn names_round_trip() {
        let p = log_path(Path::new("/x"), 1024);
        let name = p.file_name().unwrap().to_str().unwrap();
        assert_eq!(name, "00000000000000001024.log");
        assert_eq!(parse_log_name(name), Some(1024));
        assert_eq!(parse_log_name("1024.log"), None);
        assert_eq!(parse_log_name("00000000000000001024.idx"), None);
    }

    #[test]
    fn append_read_and_search() {
        let dir = tempfile::tempdir().unwrap();
        let seg = Segment::create(dir.path(), 10).unwrap();
        write_records(&seg, &[10, 11, 13, 20]);
        assert_eq!(seg.count(), 4);
        assert_eq!(seg.partition_point(|e| e.offset < 12).unwrap(), 2);
        assert_eq!(seg.partition_point(|e| e.store_ts < 1020).unwrap(), 3);
        let mut out = Vec::new();
        seg.read(1, 2, &mut out).unwrap();
        let offsets: Vec<u64> = out.iter().map(|r| r.offset).collect();
        assert_eq!(offsets, vec![11, 13]);
        assert_eq!(out[1].message.body, b"m13");
    }

    #[test]
    fn reopen_newest_truncates_torn_tail_and_rebuilds_index() {
        let dir = tempfile::tempdir().unwrap();
        let seg = Segment::create(dir.path(), 0).unwrap();
        write_records(&seg, &[0, 1, 2]);
        let good_len = seg.len_bytes();
        drop(seg);
        let path = log_path(dir.path(), 0);
        let bytes = std::fs::read(&path).unwrap();
        // Cut the last record in half and drop the index entirely.
        std::fs::write(&path, &bytes[..bytes.len() - 5]).unwrap();
        std::fs::remove_file(index_path(dir.path(), 0)).unwrap();
        let (seg, rec) = Segment::open(dir.path(), 0, true).unwrap();
        assert!(rec.index_rebuilt);
        assert!(rec.truncated_bytes > 0);
        assert_eq!(seg.count(), 2);
        assert!(seg.len_bytes() < good_len);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), seg.len_bytes());
    }

    #[test]
    fn sealed_segment_with_corrupt_middle_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let seg = Segment::create(dir.path(), 0).unwrap();
        write_records(&seg, &[0, 1, 2]);
        let second = seg.entry(1).unwrap().position;
        drop(seg);
        let path = log_path(dir.path(), 0);
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[second as usize + 12] ^= 0xFF;
        std::fs::write(&path, &bytes).unwrap();
        std::fs::remove_file(index_path(dir.path(), 0)).unwrap();
        let err = Segment::open(dir.path(), 0, false).unwrap_err();
        assert!(matches!(err, StoreError::Corrupt { .. }), "{err}");
    }

    #[test]
    fn sealed_segment_with_stale_index_is_rebuilt() {
        let dir = tempfile::tempdir().unwrap();
        let seg = Segment::create(dir.path(), 0).unwrap();
        write_records(&seg, &[0, 1, 2]);
        drop(seg);
        let idx = index_path(dir.path(), 0);
        let bytes = std::fs::read(&idx).unwrap();
        std::fs::write(&idx, &bytes[..INDEX_ENTRY_BYTES as usize]).unwrap();
        let (seg, rec) = Segment::open(dir.path(), 0, false).unwrap();
        assert!(rec.index_rebuilt);
        assert_eq!(seg.count(), 3);
    }
}
