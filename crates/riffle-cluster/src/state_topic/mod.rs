//! State topics: every unit's checkpoints, kept in a compacted topic of the store, so that
//! a process that gets a unit restores it even when the unit's checkpoint directory is not
//! on its machine. The local checkpoint directory stays the fast path.
//!
//! Stage `s` of job `j` has the topic `<j>-<s>-state` (COMPACTION), one queue per unit. When
//! a unit's checkpoint is written — before any of its transactions is committed — what changed
//! since the unit's previous checkpoint in the topic is appended to the unit's queue, followed
//! by the checkpoint's header (its manifest), in one append ([`changes`]). Before a unit
//! starts, [`StateTopic::restore_into`] rebuilds the newest checkpoint of the queue ([`scan`])
//! into the local checkpoint directory when it is newer than what the directory holds.

mod changes;
mod format;
mod scan;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use riffle_store::{CleanupPolicy, StoreError, TopicConfig, Topics};

pub use format::{CHECKPOINT_PROPERTY, PIECE_BYTES};

use crate::units::UnitId;
use crate::ClusterError;
use changes::Committed;
use scan::Scan;

/// Where one unit's checkpoints are kept.
#[derive(Clone)]
pub struct StateTopic {
    store: Arc<dyn Topics>,
    topic: String,
    unit: UnitId,
    /// What the unit's queue holds (its newest checkpoint), once read; `None` after a failed
    /// append, whose torn rest the next append must take into account.
    committed: Arc<Mutex<Option<Committed>>>,
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
            committed: Arc::new(Mutex::new(None)),
        }
    }

    fn queue(&self) -> u32 {
        self.unit.unit as u32
    }

    fn error(&self, e: impl std::fmt::Display) -> ClusterError {
        ClusterError::new(format!("state topic '{}': {e}", self.topic))
    }

    fn scan(&self) -> Result<Scan, ClusterError> {
        scan::scan(
            self.store.as_ref(),
            &self.topic,
            self.queue(),
            &self.unit.to_string(),
        )
    }

    /// Reads the unit's queue, and rebuilds the files of its newest checkpoint `n` when
    /// `rebuild(n)`. A queue compacted while it is read can look as if a deleted entry were
    /// still there (its older value read before, its tombstone compacted away after); the
    /// checks of the rebuilt files then fail, and a second reading sees the compacted queue.
    fn scan_newest(
        &self,
        rebuild: impl Fn(u64) -> bool,
    ) -> Result<(Scan, Option<(u64, scan::Files)>), ClusterError> {
        let unit = self.unit.to_string();
        let mut retried = false;
        loop {
            let scan = self.scan()?;
            if !scan.newest.as_ref().is_some_and(|(n, _)| rebuild(*n)) {
                return Ok((scan, None));
            }
            match scan.files(&unit) {
                Ok(files) => return Ok((scan, files)),
                Err(_) if !retried => retried = true,
                Err(e) => return Err(e),
            }
        }
    }

    /// Appends checkpoint `checkpoint` (the files under `dir`) to the unit's queue: what
    /// changed since the newest checkpoint there, then the header. Returns the number of
    /// bytes appended (keys and bodies).
    pub fn publish(&self, checkpoint: u64, dir: &Path) -> Result<u64, ClusterError> {
        let mut files = Vec::new();
        collect_files(dir, Path::new(""), &mut files)?;
        let keyed = keyed_files(dir)?;
        let unit = self.unit.to_string();
        let mut committed = self
            .committed
            .lock()
            .map_err(|_| self.error("a previous append panicked"))?;
        let current = match committed.take() {
            Some(c) => c,
            None => Committed::from_scan(&self.scan()?, &unit),
        };
        let append = changes::build(&unit, checkpoint, &files, &keyed, &current)?;
        let bytes: u64 = append
            .messages
            .iter()
            .map(|m| (m.body.len() + m.keys.iter().map(String::len).sum::<usize>()) as u64)
            .sum();
        // On failure `committed` stays `None`: the next append reads the queue again.
        self.store
            .append_batch(&self.topic, self.queue(), &append.messages)
            .map_err(|e| self.error(e))?;
        self.store.flush().map_err(|e| self.error(e))?;
        if std::env::var_os("RIFFLE_CHECKPOINT_LOG").is_some() {
            let total: u64 = files
                .iter()
                .filter_map(|(_, p)| std::fs::metadata(p).ok())
                .map(|m| m.len())
                .sum();
            eprintln!(
                "riffle: unit {unit} checkpoint {checkpoint}: {bytes} bytes in {} messages appended to its state topic (checkpoint files: {total} bytes)",
                append.messages.len()
            );
        }
        *committed = Some(append.next);
        Ok(bytes)
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
        let unit = self.unit.to_string();
        let (scan, files) = self.scan_newest(|n| {
            authoritative
                || crate::status::newest_checkpoint(&job_dir).is_none_or(|local| local < n)
        })?;
        if authoritative {
            remove_checkpoints_except(&job_dir, scan.newest.as_ref().map(|(n, _)| *n))?;
        }
        if let Ok(mut committed) = self.committed.lock() {
            *committed = Some(Committed::from_scan(&scan, &unit));
        }
        let Some((checkpoint, files)) = files else {
            return Ok(None);
        };
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
        let (_, files) = self.scan_newest(|_| true)?;
        Ok(files.map(|(checkpoint, files)| {
            let sizes = files
                .into_iter()
                .map(|(path, bytes)| (path, bytes.len() as u64))
                .collect();
            (checkpoint, sizes)
        }))
    }
}

/// The files of the checkpoint in `dir` that are keyed snapshots, as its `_metadata` says.
fn keyed_files(dir: &Path) -> Result<HashSet<String>, ClusterError> {
    use riffle_runtime::checkpoint::storage::{Metadata, METADATA};
    let path = dir.join(METADATA);
    let text = std::fs::read(&path)
        .map_err(|e| ClusterError::new(format!("cannot read {}: {e}", path.display())))?;
    let metadata: Metadata = serde_json::from_slice(&text)
        .map_err(|e| ClusterError::new(format!("{} is corrupted: {e}", path.display())))?;
    Ok(metadata
        .tasks
        .into_iter()
        .filter(|t| t.keyed)
        .filter_map(|t| t.file)
        .collect())
}

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
mod tests;
