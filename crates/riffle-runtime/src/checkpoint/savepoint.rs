//! Savepoints: self-contained copies of a job's newest completed checkpoint.
//!
//! A job's checkpoints are its own (only the newest two are kept, and they are removed as the
//! job goes on); a savepoint is copied out of them, state files, RocksDB checkpoints and
//! `_metadata` (written last, so a savepoint without it is incomplete), and stays until the
//! user removes it. `riffle run --from-savepoint DIR` starts a job from one, under any job id.

use std::fs;
use std::path::{Path, PathBuf};

use super::storage::{read_checkpoint, CheckpointStore, METADATA};
use crate::task::RuntimeError;

/// How often copying is retried when the running job removes the checkpoint being copied.
const ATTEMPTS: usize = 3;

fn io_error(what: &str, path: &Path, e: std::io::Error) -> RuntimeError {
    RuntimeError::new(format!("savepoint: cannot {what} {}: {e}", path.display()))
}

/// Copies the newest completed checkpoint of `job_id` (under the checkpoint directory `root`)
/// to `<target>/savepoint-<job id>-<checkpoint>` and returns that directory.
pub fn create(root: &Path, job_id: &str, target: &Path) -> Result<PathBuf, RuntimeError> {
    let store = CheckpointStore::new(root, job_id);
    let mut last_error = None;
    for _ in 0..ATTEMPTS {
        let Some(latest) = store.latest()? else {
            return Err(RuntimeError::new(format!(
                "job '{job_id}' has no completed checkpoint in {} (a job checkpoints when it sets 'execution.checkpointing.interval')",
                store.dir().display()
            )));
        };
        let dest = target.join(format!("savepoint-{job_id}-{}", latest.metadata.checkpoint));
        if dest.join(METADATA).is_file() {
            return Ok(dest);
        }
        match copy_checkpoint(&latest.dir, &dest) {
            Ok(()) => return Ok(dest),
            // A running job removed the checkpoint while it was copied: take the next one.
            Err(e) if !latest.dir.join(METADATA).is_file() => {
                let _ = fs::remove_dir_all(&dest);
                last_error = Some(e);
            }
            Err(e) => return Err(e),
        }
    }
    Err(last_error.unwrap_or_else(|| RuntimeError::new("savepoint: copying failed")))
}

/// Copies a completed checkpoint directory, its metadata last, and checks the copy.
fn copy_checkpoint(from: &Path, to: &Path) -> Result<(), RuntimeError> {
    fs::create_dir_all(to).map_err(|e| io_error("create", to, e))?;
    copy_tree(from, to, true)?;
    let tmp = to.join(format!("{METADATA}.tmp"));
    fs::copy(from.join(METADATA), &tmp).map_err(|e| io_error("copy", &from.join(METADATA), e))?;
    fs::rename(&tmp, to.join(METADATA)).map_err(|e| io_error("rename", &tmp, e))?;
    read_checkpoint(to).map(|_| ())
}

/// Copies the files and directories of `from` into `to` (without the metadata at the top).
fn copy_tree(from: &Path, to: &Path, top: bool) -> Result<(), RuntimeError> {
    for entry in fs::read_dir(from).map_err(|e| io_error("list", from, e))? {
        let entry = entry.map_err(|e| io_error("list", from, e))?;
        let name = entry.file_name();
        if top && name.to_string_lossy().starts_with(METADATA) {
            continue;
        }
        let (source, dest) = (entry.path(), to.join(&name));
        if source.is_dir() {
            fs::create_dir_all(&dest).map_err(|e| io_error("create", &dest, e))?;
            copy_tree(&source, &dest, false)?;
        } else {
            fs::copy(&source, &dest).map_err(|e| io_error("copy", &source, e))?;
        }
    }
    Ok(())
}
