//! State topics: every unit's checkpoints, copied to a compacted topic of the store, so that
//! a process that gets a unit restores it even when the unit's checkpoint directory is not
//! on its machine. The local checkpoint directory stays the fast path.
//!
//! Stage `s` of job `j` has the topic `<j>-<s>-state` (COMPACTION), one queue per unit. When
//! a unit's checkpoint `n` is written — before any of its transactions is committed — every
//! file of it is appended to the unit's queue in pieces of at most [`PIECE_BYTES`] (key
//! `<unit>/<i>`, properties [`CHECKPOINT_PROPERTY`] and [`PATH_PROPERTY`]) followed by a
//! header (key `<unit>`, the piece count in its body), all in one append. Compaction keeps
//! the latest message per key, so the topic holds the newest checkpoint of each unit. Before
//! a unit starts, [`StateTopic::restore_into`] writes that checkpoint into the local
//! checkpoint directory when it is newer than what the directory holds.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use riffle_store::{CleanupPolicy, Message, StoreError, TopicConfig, Topics};

use crate::units::UnitId;
use crate::ClusterError;

/// The largest piece of a file in one message.
pub const PIECE_BYTES: usize = 3 << 20;
/// The property naming a piece's checkpoint number.
pub const CHECKPOINT_PROPERTY: &str = "RIFFLE_CHK";
/// The property naming a piece's file, relative to the checkpoint directory.
pub const PATH_PROPERTY: &str = "RIFFLE_PATH";

/// Where one unit's checkpoints are copied.
#[derive(Clone)]
pub struct StateTopic {
    store: Arc<dyn Topics>,
    topic: String,
    unit: UnitId,
}

/// The state topic of `stage` of job `job`.
pub fn topic_name(job: &str, stage: usize) -> String {
    crate::stages::store_name(&format!("{job}-{stage}-state"))
}

/// Creates the state topic of a stage with `units` queues when it is missing.
pub fn create(
    store: &dyn Topics,
    job: &str,
    stage: usize,
    units: usize,
) -> Result<(), ClusterError> {
    let topic = topic_name(job, stage);
    let config = TopicConfig {
        queues: u32::try_from(units).map_err(|_| ClusterError::new("too many units"))?,
        cleanup_policy: CleanupPolicy::Compaction,
        ..TopicConfig::default()
    };
    match store.create_topic(&topic, config) {
        Ok(()) | Err(StoreError::TopicExists(_)) => Ok(()),
        Err(e) => Err(ClusterError::new(format!(
            "cannot create state topic '{topic}': {e}"
        ))),
    }
}

impl StateTopic {
    /// The state topic of `unit` of job `job`.
    pub fn new(store: Arc<dyn Topics>, job: &str, unit: UnitId) -> Self {
        Self {
            store,
            topic: topic_name(job, unit.stage),
            unit,
        }
    }

    fn queue(&self) -> u32 {
        self.unit.unit as u32
    }

    fn error(&self, e: impl std::fmt::Display) -> ClusterError {
        ClusterError::new(format!("state topic '{}': {e}", self.topic))
    }

    /// Appends checkpoint `checkpoint` (the files under `dir`) to the unit's queue.
    pub fn publish(&self, checkpoint: u64, dir: &Path) -> Result<(), ClusterError> {
        let mut files = Vec::new();
        collect_files(dir, Path::new(""), &mut files)?;
        let mut messages = Vec::new();
        for (relative, path) in files {
            let bytes = std::fs::read(&path)
                .map_err(|e| ClusterError::new(format!("cannot read {}: {e}", path.display())))?;
            let pieces: Vec<&[u8]> = if bytes.is_empty() {
                vec![&[]]
            } else {
                bytes.chunks(PIECE_BYTES).collect()
            };
            for piece in pieces {
                let mut m = Message::new(piece.to_vec()).with_key(format!(
                    "{}/{}",
                    self.unit,
                    messages.len()
                ));
                m.properties
                    .insert(CHECKPOINT_PROPERTY.into(), checkpoint.to_string());
                m.properties.insert(PATH_PROPERTY.into(), relative.clone());
                messages.push(m);
            }
        }
        let mut header = Message::new(messages.len().to_string()).with_key(self.unit.to_string());
        header
            .properties
            .insert(CHECKPOINT_PROPERTY.into(), checkpoint.to_string());
        messages.push(header);
        self.store
            .append_batch(&self.topic, self.queue(), &messages)
            .map_err(|e| self.error(e))?;
        self.store.flush().map_err(|e| self.error(e))
    }

    /// Writes the unit's newest checkpoint in the topic into `<root>/<job id>/chk-<n>/` when
    /// the directory has no completed checkpoint as new; returns its number then. With
    /// `authoritative` the topic is the truth: the directory's other checkpoints (left by an
    /// earlier stay of the unit on this machine, or never published) are removed first.
    pub fn restore_into(
        &self,
        root: &Path,
        job_id: &str,
        authoritative: bool,
    ) -> Result<Option<u64>, ClusterError> {
        let job_dir = root.join(job_id);
        let newest = self.newest()?;
        if authoritative {
            remove_checkpoints_except(&job_dir, newest.as_ref().map(|(n, _)| *n))?;
        }
        let Some((checkpoint, files)) = newest else {
            return Ok(None);
        };
        if local_newest(&job_dir).is_some_and(|local| local >= checkpoint) && !authoritative {
            return Ok(None);
        }
        let target = job_dir.join(format!("chk-{checkpoint}"));
        let _ = std::fs::remove_dir_all(&target);
        // `_metadata` last: a checkpoint without it never completed.
        let (metadata, others): (Vec<_>, Vec<_>) =
            files.into_iter().partition(|(p, _)| p == "_metadata");
        for (relative, bytes) in others.into_iter().chain(metadata) {
            let path = target.join(&relative);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).map_err(|e| {
                    ClusterError::new(format!("cannot create {}: {e}", parent.display()))
                })?;
            }
            std::fs::write(&path, bytes)
                .map_err(|e| ClusterError::new(format!("cannot write {}: {e}", path.display())))?;
        }
        Ok(Some(checkpoint))
    }

    /// The newest complete checkpoint in the unit's queue: its number and the size of each of
    /// its files (for `riffle job status`).
    pub fn newest_sizes(&self) -> Result<Option<(u64, FileSizes)>, ClusterError> {
        Ok(self.newest()?.map(|(checkpoint, files)| {
            let sizes = files
                .into_iter()
                .map(|(path, bytes)| (path, bytes.len() as u64))
                .collect();
            (checkpoint, sizes)
        }))
    }

    /// The newest complete checkpoint in the unit's queue: its number and files.
    fn newest(&self) -> Result<Option<(u64, Files)>, ClusterError> {
        let info = self
            .store
            .queue_info(&self.topic, self.queue())
            .map_err(|e| self.error(e))?;
        let mut pieces: Vec<(u64, String, Vec<u8>)> = Vec::new();
        let mut newest = None;
        let mut next = info.min_offset;
        loop {
            let read = self
                .store
                .read(&self.topic, self.queue(), next, 256)
                .map_err(|e| self.error(e))?;
            let Some(last) = read.last() else {
                break;
            };
            next = last.offset + 1;
            for stored in read {
                let m = stored.message;
                let Some(checkpoint) = m
                    .properties
                    .get(CHECKPOINT_PROPERTY)
                    .and_then(|c| c.parse::<u64>().ok())
                else {
                    continue;
                };
                match m.properties.get(PATH_PROPERTY) {
                    Some(path) => pieces.push((checkpoint, path.clone(), m.body)),
                    None => {
                        let count: usize = String::from_utf8_lossy(&m.body)
                            .parse()
                            .map_err(|_| self.error("corrupted checkpoint header"))?;
                        let mine: Vec<(u64, String, Vec<u8>)> = std::mem::take(&mut pieces)
                            .into_iter()
                            .filter(|(c, _, _)| *c == checkpoint)
                            .collect();
                        if mine.len() == count {
                            newest = Some((checkpoint, mine));
                        }
                    }
                }
            }
        }
        Ok(newest.map(|(checkpoint, pieces)| {
            let mut files: Files = Vec::new();
            for (_, path, bytes) in pieces {
                match files.last_mut() {
                    Some((p, b)) if *p == path => b.extend_from_slice(&bytes),
                    _ => files.push((path, bytes)),
                }
            }
            (checkpoint, files)
        }))
    }
}

/// A checkpoint's files: (path relative to its directory, bytes).
type Files = Vec<(String, Vec<u8>)>;

/// The sizes of a checkpoint's files: (path relative to its directory, bytes).
pub type FileSizes = Vec<(String, u64)>;

/// Removes every `chk-<n>` directory of `job_dir` but `keep`.
fn remove_checkpoints_except(job_dir: &Path, keep: Option<u64>) -> Result<(), ClusterError> {
    let Ok(entries) = std::fs::read_dir(job_dir) else {
        return Ok(());
    };
    for entry in entries.flatten() {
        let number = entry
            .file_name()
            .to_str()
            .and_then(|n| n.strip_prefix("chk-")?.parse::<u64>().ok());
        if number.is_some_and(|n| Some(n) != keep) {
            std::fs::remove_dir_all(entry.path()).map_err(|e| {
                ClusterError::new(format!("cannot remove {}: {e}", entry.path().display()))
            })?;
        }
    }
    Ok(())
}

/// The newest completed checkpoint in a job's checkpoint directory.
fn local_newest(job_dir: &Path) -> Option<u64> {
    std::fs::read_dir(job_dir)
        .ok()?
        .flatten()
        .filter(|e| e.path().join("_metadata").is_file())
        .filter_map(|e| e.file_name().to_str()?.strip_prefix("chk-")?.parse().ok())
        .max()
}

/// Every file under `dir` (recursively), as (relative path with `/`, full path), sorted.
fn collect_files(
    dir: &Path,
    relative: &Path,
    out: &mut Vec<(String, PathBuf)>,
) -> Result<(), ClusterError> {
    let here = dir.join(relative);
    let mut entries: Vec<_> = std::fs::read_dir(&here)
        .map_err(|e| ClusterError::new(format!("cannot read {}: {e}", here.display())))?
        .flatten()
        .collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let rel = relative.join(entry.file_name());
        let path = entry.path();
        if path.is_dir() {
            collect_files(dir, &rel, out)?;
        } else {
            let text = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("/");
            out.push((text, path));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_checkpoint_round_trips_through_the_topic() {
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn Topics> =
            riffle_connectors::rocketmq::shared_store(&dir.path().join("store")).unwrap();
        create(store.as_ref(), "j", 1, 2).unwrap();
        let unit = UnitId { stage: 1, unit: 1 };
        let topic = StateTopic::new(store, "j", unit);
        let root = dir.path().join("checkpoints");
        assert_eq!(topic.restore_into(&root, "j.1-1", false).unwrap(), None);
        for n in [3u64, 4] {
            let chk = dir.path().join(format!("local-{n}"));
            std::fs::create_dir_all(chk.join("0-0.rocksdb")).unwrap();
            std::fs::write(chk.join("_metadata"), format!("meta {n}")).unwrap();
            std::fs::write(chk.join("1-0.state"), vec![n as u8; PIECE_BYTES + 5]).unwrap();
            std::fs::write(chk.join("0-0.rocksdb/CURRENT"), b"").unwrap();
            topic.publish(n, &chk).unwrap();
        }
        assert_eq!(topic.restore_into(&root, "j.1-1", false).unwrap(), Some(4));
        let restored = root.join("j.1-1/chk-4");
        assert_eq!(
            std::fs::read(restored.join("_metadata")).unwrap(),
            b"meta 4"
        );
        assert_eq!(
            std::fs::read(restored.join("1-0.state")).unwrap(),
            vec![4u8; PIECE_BYTES + 5]
        );
        assert!(restored.join("0-0.rocksdb/CURRENT").is_file());
        // The local directory now has it: nothing more to restore.
        assert_eq!(topic.restore_into(&root, "j.1-1", false).unwrap(), None);
    }
}
