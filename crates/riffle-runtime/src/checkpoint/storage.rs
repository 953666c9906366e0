//! Checkpoints on disk.
//!
//! ```text
//! <checkpoint dir>/<job id>/chk-<n>/<operator>-<subtask>.state   one file per subtask with state
//! <checkpoint dir>/<job id>/chk-<n>/_metadata                      JSON, written last (tmp + rename)
//! ```
//!
//! A checkpoint counts only once its `_metadata` exists; directories without one are leftovers
//! of checkpoints that never completed and are removed. `_metadata` lists every subtask's file
//! with its size and CRC-32, so a damaged state file is reported (naming it) before decoding.

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::TaskId;
use crate::task::RuntimeError;

/// Version of the checkpoint format (2: operator state in keyed snapshots, split by key group;
/// filesystem positions per file; the maximum parallelism recorded). Checkpoints of another
/// format are refused by name rather than misread.
const FORMAT: u32 = 2;
/// Name of the metadata file of a checkpoint.
pub const METADATA: &str = "_metadata";
/// Completed checkpoints kept per job (the newest ones).
const RETAINED: usize = 2;

/// What a completed checkpoint holds (the `_metadata` file).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Metadata {
    /// Format version.
    pub format: u32,
    /// The job the checkpoint belongs to.
    pub job_id: String,
    /// Checkpoint number.
    pub checkpoint: u64,
    /// The job's maximum parallelism (its number of key groups); checkpoints written before
    /// it was recorded had Flink's default, 128.
    #[serde(default = "default_max_parallelism")]
    pub max_parallelism: usize,
    /// The job's operators when the checkpoint was taken.
    pub operators: Vec<OperatorMeta>,
    /// One entry per subtask.
    pub tasks: Vec<TaskMeta>,
}

fn default_max_parallelism() -> usize {
    riffle_state::DEFAULT_MAX_PARALLELISM
}

/// An operator of a checkpointed job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OperatorMeta {
    /// Operator id in the job graph.
    pub id: usize,
    /// What the operator is (its kind and schema), to refuse restoring into a different job.
    pub fingerprint: String,
    /// Number of subtasks.
    pub parallelism: usize,
}

/// The state of one subtask in a checkpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskMeta {
    /// Operator id.
    pub operator: usize,
    /// Subtask index.
    pub subtask: usize,
    /// State file in the checkpoint directory (none for a stateless subtask).
    pub file: Option<String>,
    /// Size of the state file.
    pub bytes: u64,
    /// CRC-32 of the state file.
    pub crc32: u32,
    /// Whether the state file is a keyed snapshot (`crate::keyed_snapshot`), whose entries
    /// may be stored and restored one by one, in any order.
    #[serde(default)]
    pub keyed: bool,
}

/// A completed checkpoint read back for a restore.
#[derive(Debug)]
pub struct Restored {
    /// Its metadata.
    pub metadata: Metadata,
    /// Its directory.
    pub dir: PathBuf,
    /// The state of every subtask that had one.
    pub states: BTreeMap<TaskId, Vec<u8>>,
}

/// The checkpoints of one job.
#[derive(Debug, Clone)]
pub struct CheckpointStore {
    dir: PathBuf,
}

fn io_error(what: &str, path: &Path, e: std::io::Error) -> RuntimeError {
    RuntimeError::new(format!("checkpoint: cannot {what} {}: {e}", path.display()))
}

/// Writes `bytes` to `path` and syncs it.
fn write_synced(path: &Path, bytes: &[u8]) -> Result<(), RuntimeError> {
    let mut file = File::create(path).map_err(|e| io_error("create", path, e))?;
    file.write_all(bytes)
        .map_err(|e| io_error("write", path, e))?;
    file.sync_all().map_err(|e| io_error("sync", path, e))
}

/// Syncs a directory so that renames and new files in it survive a crash.
fn sync_dir(dir: &Path) -> Result<(), RuntimeError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| io_error("sync", dir, e))
}

impl CheckpointStore {
    /// The checkpoints of job `job_id` under `root`.
    pub fn new(root: &Path, job_id: &str) -> Self {
        Self {
            dir: root.join(job_id),
        }
    }

    /// The job's checkpoint directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Directory of checkpoint `n`.
    pub fn checkpoint_dir(&self, n: u64) -> PathBuf {
        self.dir.join(format!("chk-{n}"))
    }

    /// Numbers of the checkpoint directories, with whether each is complete.
    fn list(&self) -> Result<Vec<(u64, bool)>, RuntimeError> {
        let entries = match fs::read_dir(&self.dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io_error("list", &self.dir, e)),
        };
        let mut out = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| io_error("list", &self.dir, e))?;
            let name = entry.file_name().to_string_lossy().to_string();
            let Some(n) = name.strip_prefix("chk-").and_then(|n| n.parse().ok()) else {
                continue;
            };
            out.push((n, entry.path().join(METADATA).is_file()));
        }
        out.sort();
        Ok(out)
    }

    /// Writes the state files and then the metadata of checkpoint `n`; the checkpoint is
    /// complete when this returns. Returns the total size of the state files.
    pub fn write(
        &self,
        metadata: &mut Metadata,
        states: &BTreeMap<TaskId, Vec<u8>>,
    ) -> Result<u64, RuntimeError> {
        let dir = self.checkpoint_dir(metadata.checkpoint);
        fs::create_dir_all(&dir).map_err(|e| io_error("create", &dir, e))?;
        let mut total = 0;
        for (task, state) in states {
            let meta = metadata
                .tasks
                .iter_mut()
                .find(|t| t.operator == task.operator && t.subtask == task.subtask);
            let Some(meta) = meta else {
                continue;
            };
            if state.is_empty() {
                continue;
            }
            let name = format!("{}-{}.state", task.operator, task.subtask);
            write_synced(&dir.join(&name), state)?;
            meta.file = Some(name);
            meta.bytes = state.len() as u64;
            meta.crc32 = crc32fast::hash(state);
            total += state.len() as u64;
        }
        let json = serde_json::to_vec_pretty(metadata)
            .map_err(|e| RuntimeError::new(format!("checkpoint: cannot encode metadata: {e}")))?;
        let tmp = dir.join(format!("{METADATA}.tmp"));
        write_synced(&tmp, &json)?;
        let path = dir.join(METADATA);
        fs::rename(&tmp, &path).map_err(|e| io_error("rename", &tmp, e))?;
        sync_dir(&dir)?;
        sync_dir(&self.dir)?;
        Ok(total)
    }

    /// Removes incomplete checkpoints and all but the newest completed ones.
    pub fn clean(&self) -> Result<(), RuntimeError> {
        let all = self.list()?;
        let complete: Vec<u64> = all.iter().filter(|(_, c)| *c).map(|(n, _)| *n).collect();
        let keep = &complete[complete.len().saturating_sub(RETAINED)..];
        for (n, _) in all {
            if !keep.contains(&n) {
                let dir = self.checkpoint_dir(n);
                fs::remove_dir_all(&dir).map_err(|e| io_error("remove", &dir, e))?;
            }
        }
        Ok(())
    }

    /// The number of the newest checkpoint directory, complete or not.
    pub fn newest_number(&self) -> Result<Option<u64>, RuntimeError> {
        Ok(self.list()?.last().map(|(n, _)| *n))
    }

    /// Reads the newest completed checkpoint, if any.
    pub fn latest(&self) -> Result<Option<Restored>, RuntimeError> {
        let Some((n, _)) = self.list()?.into_iter().rev().find(|(_, c)| *c) else {
            return Ok(None);
        };
        read_checkpoint(&self.checkpoint_dir(n)).map(Some)
    }
}

/// Reads a completed checkpoint (or savepoint) directory, checking every state file.
pub fn read_checkpoint(dir: &Path) -> Result<Restored, RuntimeError> {
    let path = dir.join(METADATA);
    let text = fs::read(&path).map_err(|e| io_error("read", &path, e))?;
    let metadata: Metadata = serde_json::from_slice(&text).map_err(|e| {
        RuntimeError::new(format!(
            "checkpoint metadata {} is corrupted: {e}",
            path.display()
        ))
    })?;
    if metadata.format != FORMAT {
        return Err(RuntimeError::new(format!(
            "checkpoint metadata {} has format {}, this Riffle reads format {FORMAT}",
            path.display(),
            metadata.format
        )));
    }
    let mut states = BTreeMap::new();
    for task in &metadata.tasks {
        let Some(file) = &task.file else {
            continue;
        };
        if file.contains('/') || file.contains("..") {
            return Err(RuntimeError::new(format!(
                "checkpoint metadata {} is corrupted: bad state file name '{file}'",
                path.display()
            )));
        }
        let state_path = dir.join(file);
        let bytes = fs::read(&state_path).map_err(|e| io_error("read", &state_path, e))?;
        if bytes.len() as u64 != task.bytes || crc32fast::hash(&bytes) != task.crc32 {
            return Err(RuntimeError::new(format!(
                "checkpoint state file {} is corrupted (size or checksum differs from {})",
                state_path.display(),
                path.display()
            )));
        }
        states.insert(
            TaskId {
                operator: task.operator,
                subtask: task.subtask,
            },
            bytes,
        );
    }
    Ok(Restored {
        metadata,
        dir: dir.to_path_buf(),
        states,
    })
}

impl Metadata {
    /// Metadata of checkpoint `checkpoint` of a job with `operators`, before states are written.
    pub fn new(
        job_id: &str,
        checkpoint: u64,
        max_parallelism: usize,
        operators: Vec<OperatorMeta>,
    ) -> Self {
        let tasks = operators
            .iter()
            .flat_map(|op| {
                (0..op.parallelism).map(move |subtask| TaskMeta {
                    operator: op.id,
                    subtask,
                    file: None,
                    bytes: 0,
                    crc32: 0,
                    keyed: false,
                })
            })
            .collect();
        Self {
            format: FORMAT,
            job_id: job_id.to_string(),
            checkpoint,
            max_parallelism,
            operators,
            tasks,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(operator: usize, subtask: usize) -> TaskId {
        TaskId { operator, subtask }
    }

    #[test]
    fn only_complete_checkpoints_count_and_corruption_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let store = CheckpointStore::new(dir.path(), "job");
        let ops = vec![OperatorMeta {
            id: 0,
            fingerprint: "source".into(),
            parallelism: 2,
        }];
        let mut states = BTreeMap::new();
        states.insert(task(0, 0), b"offsets-a".to_vec());
        states.insert(task(0, 1), Vec::new());
        for n in 1..=3 {
            store
                .write(&mut Metadata::new("job", n, 128, ops.clone()), &states)
                .unwrap();
        }
        // A checkpoint that never got its metadata.
        fs::create_dir_all(store.checkpoint_dir(4)).unwrap();
        let latest = store.latest().unwrap().unwrap();
        assert_eq!(latest.metadata.checkpoint, 3);
        assert_eq!(latest.states.get(&task(0, 0)).unwrap(), b"offsets-a");
        assert!(!latest.states.contains_key(&task(0, 1)));
        store.clean().unwrap();
        let left: Vec<(u64, bool)> = store.list().unwrap();
        assert_eq!(left, vec![(2, true), (3, true)]);

        fs::write(store.checkpoint_dir(3).join("0-0.state"), b"offsets-b").unwrap();
        let err = store.latest().unwrap_err();
        assert!(err.message.contains("0-0.state is corrupted"), "{err}");
        fs::write(store.checkpoint_dir(3).join(METADATA), b"{not json").unwrap();
        let err = store.latest().unwrap_err();
        assert!(err.message.contains("_metadata is corrupted"), "{err}");
    }
}
