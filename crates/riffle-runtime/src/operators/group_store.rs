//! Per-key state of an operator subtask in the configured state backend
//! (`state.backend.type`): the operator's own hash map (`hashmap`, the default) or RocksDB.
//!
//! The hash map keeps live values; RocksDB keeps encoded values and is read and written per
//! row (like Flink's RocksDB backend). In a checkpoint the hash map writes its entries, RocksDB
//! a RocksDB checkpoint (hard links) next to the checkpoint's state files. Both store the
//! value bytes the operator's codec writes, so a hash-map checkpoint restores into RocksDB.

use std::collections::HashMap;
use std::path::PathBuf;

use arrow::row::{OwnedRow, RowConverter};
use riffle_connectors::snapshot::{StateReader, StateWriter};
use riffle_state::{BackendKind, RocksDbBackend, StateBackend};

use crate::checkpoint::TaskId;
use crate::keyed_snapshot::{KeyedSnapshot, KeyedSnapshotWriter};
use crate::task::RuntimeError;

/// Where one operator subtask keeps its keyed state.
#[derive(Debug, Clone)]
pub struct StateContext {
    /// The backend.
    pub backend: BackendKind,
    /// The subtask's working directory (RocksDB).
    pub working_dir: PathBuf,
    /// Removes the working directory when the operator is dropped (no checkpoints to keep).
    pub ephemeral: bool,
    /// The job's checkpoint directory (holding `chk-<n>`), when the job checkpoints.
    pub checkpoint_dir: Option<PathBuf>,
    /// The checkpoint or savepoint directory the job restores from (RocksDB checkpoints are
    /// found there).
    pub restore_dir: Option<PathBuf>,
    /// The subtask.
    pub task: TaskId,
    /// The job's key groups.
    pub key_groups: riffle_state::KeyGroups,
    /// The key groups this subtask owns.
    pub key_group_range: std::ops::Range<u16>,
    /// The restored checkpoint has another parallelism for this operator: RocksDB state is
    /// gathered by key-group range instead of hard-linked.
    pub rescaled: bool,
}

impl From<riffle_state::StateError> for RuntimeError {
    fn from(e: riffle_state::StateError) -> Self {
        RuntimeError::new(e.0)
    }
}

/// Encodes a value into checkpoint or backend bytes.
pub(super) type Encode<'a, V> = &'a dyn Fn(&V, &mut StateWriter) -> Result<(), RuntimeError>;
/// Decodes a value written by an [`Encode`].
pub(super) type Decode<'a, V> = &'a dyn Fn(&mut StateReader<'_>) -> Result<V, RuntimeError>;

/// Where a snapshot's entries are (its operator-wide part).
const MEMORY: u8 = 0;
const ROCKSDB: u8 = 1;
/// The table of a snapshot's entries.
const GROUPS: u8 = 0;

/// Values of type `V` per encoded key.
pub(super) enum GroupStore<V> {
    /// In the operator's memory.
    Memory(HashMap<OwnedRow, V>),
    /// In RocksDB.
    Backend(Box<BackendStore>),
}

/// A RocksDB table of one operator subtask.
pub(super) struct BackendStore {
    db: Option<RocksDbBackend>,
    table: &'static str,
    context: StateContext,
}

impl BackendStore {
    fn db(&mut self) -> Result<&mut RocksDbBackend, RuntimeError> {
        self.db
            .as_mut()
            .ok_or_else(|| RuntimeError::new("the RocksDB state is closed"))
    }
}

impl Drop for BackendStore {
    fn drop(&mut self) {
        drop(self.db.take());
        if self.context.ephemeral {
            let _ = std::fs::remove_dir_all(&self.context.working_dir);
        }
    }
}

impl<V> GroupStore<V> {
    /// Opens the store of state table `table` in the backend `context` names.
    pub(super) fn open(context: &StateContext, table: &'static str) -> Result<Self, RuntimeError> {
        Ok(match context.backend {
            BackendKind::HashMap => GroupStore::Memory(HashMap::new()),
            BackendKind::RocksDb => GroupStore::Backend(Box::new(BackendStore {
                db: Some(RocksDbBackend::open(
                    &context.working_dir,
                    &[table],
                    None,
                    context.key_groups,
                )?),
                table,
                context: context.clone(),
            })),
        })
    }

    /// Removes and returns the value of `key`.
    pub(super) fn take(
        &mut self,
        key: &OwnedRow,
        decode: Decode<'_, V>,
    ) -> Result<Option<V>, RuntimeError> {
        match self {
            GroupStore::Memory(map) => Ok(map.remove(key)),
            GroupStore::Backend(store) => {
                let table = store.table;
                match store.db()?.get(table, key.row().data())? {
                    Some(bytes) => {
                        let mut r = StateReader::new(&bytes, "a RocksDB state value");
                        let v = decode(&mut r)?;
                        r.finish()?;
                        Ok(Some(v))
                    }
                    None => Ok(None),
                }
            }
        }
    }

    /// Sets the value of `key`.
    pub(super) fn put(
        &mut self,
        key: OwnedRow,
        value: V,
        encode: Encode<'_, V>,
    ) -> Result<(), RuntimeError> {
        match self {
            GroupStore::Memory(map) => {
                map.insert(key, value);
                Ok(())
            }
            GroupStore::Backend(store) => {
                let mut w = StateWriter::new();
                encode(&value, &mut w)?;
                let table = store.table;
                Ok(store.db()?.put(table, key.row().data(), &w.finish())?)
            }
        }
    }

    /// Removes the value of `key` (a taken value is already gone from memory).
    pub(super) fn remove(&mut self, key: &OwnedRow) -> Result<(), RuntimeError> {
        match self {
            GroupStore::Memory(map) => {
                map.remove(key);
                Ok(())
            }
            GroupStore::Backend(store) => {
                let table = store.table;
                Ok(store.db()?.delete(table, key.row().data())?)
            }
        }
    }

    /// The state for checkpoint `checkpoint`: a keyed snapshot whose operator-wide part
    /// says where the entries are (in the snapshot, or in a RocksDB checkpoint).
    pub(super) fn snapshot(
        &mut self,
        checkpoint: u64,
        encode: Encode<'_, V>,
    ) -> Result<Vec<u8>, RuntimeError> {
        let mut out = KeyedSnapshotWriter::new();
        let mut w = StateWriter::new();
        match self {
            GroupStore::Memory(map) => {
                w.u8(MEMORY);
                for (key, value) in map.iter() {
                    out.entry(GROUPS, key.row().data(), |v| encode(value, v))?;
                }
            }
            GroupStore::Backend(store) => {
                let Some(job_dir) = store.context.checkpoint_dir.clone() else {
                    return Err(RuntimeError::new("RocksDB state: no checkpoint directory"));
                };
                let task = store.context.task;
                let relative = format!(
                    "chk-{checkpoint}/{}-{}.rocksdb",
                    task.operator, task.subtask
                );
                let chk = job_dir.join(format!("chk-{checkpoint}"));
                std::fs::create_dir_all(&chk).map_err(|e| {
                    RuntimeError::new(format!("checkpoint: cannot create {}: {e}", chk.display()))
                })?;
                store.db()?.checkpoint(&job_dir.join(&relative))?;
                w.u8(ROCKSDB);
                w.str(&relative);
            }
        }
        out.global(w.finish());
        Ok(out.finish())
    }

    /// Replaces the (empty) store with a snapshot's content (possibly merged from several
    /// subtasks of another parallelism).
    pub(super) fn restore(
        &mut self,
        state: &[u8],
        converter: &RowConverter,
        decode: Decode<'_, V>,
    ) -> Result<(), RuntimeError> {
        let snapshot = KeyedSnapshot::parse(state, "keyed state")?;
        let mut rocksdb = Vec::new();
        for global in &snapshot.globals {
            let mut r = StateReader::new(global, "keyed state");
            match r.u8()? {
                MEMORY => {}
                ROCKSDB => rocksdb.push(r.str()?),
                other => {
                    return Err(RuntimeError::new(format!(
                        "corrupted keyed state (kind {other})"
                    )))
                }
            }
            r.finish()?;
        }
        match self {
            GroupStore::Memory(_) if !rocksdb.is_empty() => {
                return Err(RuntimeError::new(
                    "the checkpoint holds RocksDB state: set 'state.backend.type' = 'rocksdb' to restore it",
                ))
            }
            GroupStore::Memory(map) => {
                let parser = converter.parser();
                map.clear();
                for e in snapshot.table(GROUPS) {
                    let mut v = StateReader::new(e.value, "keyed state");
                    map.insert(parser.parse(e.key).owned(), decode(&mut v)?);
                    v.finish()?;
                }
            }
            GroupStore::Backend(store) => {
                if !rocksdb.is_empty() {
                    store.reopen(&rocksdb)?;
                }
                let table = store.table;
                for e in snapshot.table(GROUPS) {
                    store.db()?.put(table, e.key, e.value)?;
                }
            }
        }
        Ok(())
    }
}

impl BackendStore {
    /// Reopens the database from the RocksDB checkpoints `relative` (paths written by
    /// [`GroupStore::snapshot`], found next to the restored state files): hard links of the
    /// subtask's own checkpoint, or, when the parallelism changed, the entries of this
    /// subtask's key groups gathered from every checkpoint given.
    fn reopen(&mut self, relative: &[String]) -> Result<(), RuntimeError> {
        let Some(restore_dir) = self.context.restore_dir.clone() else {
            return Err(RuntimeError::new("RocksDB state: no checkpoint directory"));
        };
        let mut sources = Vec::with_capacity(relative.len());
        for path in relative {
            // The RocksDB checkpoint sits next to the state file (also in a savepoint).
            let name = std::path::Path::new(path)
                .file_name()
                .ok_or_else(|| RuntimeError::new("corrupted keyed state (RocksDB path)"))?;
            sources.push(restore_dir.join(name));
        }
        drop(self.db.take());
        let c = &self.context;
        self.db = Some(match sources.as_slice() {
            [own] if !c.rescaled => {
                RocksDbBackend::open(&c.working_dir, &[self.table], Some(own), c.key_groups)?
            }
            _ => {
                let sources: Vec<&std::path::Path> = sources.iter().map(|p| p.as_path()).collect();
                RocksDbBackend::restore_key_groups(
                    &c.working_dir,
                    &[self.table],
                    &sources,
                    c.key_group_range.clone(),
                    c.key_groups,
                )?
            }
        });
        Ok(())
    }
}
