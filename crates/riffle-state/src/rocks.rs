//! The RocksDB state backend.

use std::ops::Range;
use std::path::{Path, PathBuf};

use rocksdb::checkpoint::Checkpoint;
use rocksdb::{Direction, IteratorMode, Options, WriteOptions, DB};

use crate::{key_group, Result, StateBackend, StateError};

/// Keyed state in a RocksDB database of its own (one per operator subtask): one column family
/// per state table, keys prefixed by their key group.
pub struct RocksDbBackend {
    db: DB,
    dir: PathBuf,
    /// Checkpoints make state durable, so writes skip RocksDB's write-ahead log (as Flink does).
    write: WriteOptions,
}

fn error(what: &str, path: &Path, e: impl std::fmt::Display) -> StateError {
    StateError(format!(
        "RocksDB state {}: cannot {what}: {e}",
        path.display()
    ))
}

fn options() -> Options {
    let mut options = Options::default();
    options.create_if_missing(true);
    options.create_missing_column_families(true);
    options
}

/// `key` prefixed with its key group.
fn prefixed(key: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(key.len() + 2);
    out.extend_from_slice(&key_group(key).to_be_bytes());
    out.extend_from_slice(key);
    out
}

impl RocksDbBackend {
    /// Opens a fresh database in `dir` (its previous content is removed) with `tables`, or,
    /// with `restore_from`, a copy of a checkpoint written by [`StateBackend::checkpoint`]
    /// (hard links where the file system allows, copies otherwise).
    pub fn open(dir: &Path, tables: &[&str], restore_from: Option<&Path>) -> Result<Self> {
        if dir.exists() {
            std::fs::remove_dir_all(dir).map_err(|e| error("clear", dir, e))?;
        }
        std::fs::create_dir_all(dir).map_err(|e| error("create", dir, e))?;
        if let Some(from) = restore_from {
            let entries = std::fs::read_dir(from).map_err(|e| error("read checkpoint", from, e))?;
            for entry in entries {
                let entry = entry.map_err(|e| error("read checkpoint", from, e))?;
                let target = dir.join(entry.file_name());
                if std::fs::hard_link(entry.path(), &target).is_err() {
                    std::fs::copy(entry.path(), &target)
                        .map_err(|e| error("copy checkpoint", from, e))?;
                }
            }
        }
        let mut names: Vec<String> = match restore_from {
            Some(_) => DB::list_cf(&options(), dir).map_err(|e| error("list tables", dir, e))?,
            None => Vec::new(),
        };
        for t in tables {
            if !names.iter().any(|n| n == t) {
                names.push(t.to_string());
            }
        }
        let db = DB::open_cf(&options(), dir, &names).map_err(|e| error("open", dir, e))?;
        let mut write = WriteOptions::default();
        write.disable_wal(true);
        Ok(Self {
            db,
            dir: dir.to_path_buf(),
            write,
        })
    }

    fn table(&self, table: &str) -> Result<&rocksdb::ColumnFamily> {
        self.db.cf_handle(table).ok_or_else(|| {
            StateError(format!(
                "RocksDB state {}: no table '{table}'",
                self.dir.display()
            ))
        })
    }
}

impl StateBackend for RocksDbBackend {
    fn get(&self, table: &str, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.db
            .get_cf(self.table(table)?, prefixed(key))
            .map_err(|e| error("read", &self.dir, e))
    }

    fn put(&mut self, table: &str, key: &[u8], value: &[u8]) -> Result<()> {
        self.db
            .put_cf_opt(self.table(table)?, prefixed(key), value, &self.write)
            .map_err(|e| error("write", &self.dir, e))
    }

    fn delete(&mut self, table: &str, key: &[u8]) -> Result<()> {
        self.db
            .delete_cf_opt(self.table(table)?, prefixed(key), &self.write)
            .map_err(|e| error("delete", &self.dir, e))
    }

    fn entries(&self, table: &str, groups: Range<u16>) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let start = groups.start.to_be_bytes();
        let mode = IteratorMode::From(&start, Direction::Forward);
        let mut out = Vec::new();
        for item in self.db.iterator_cf(self.table(table)?, mode) {
            let (key, value) = item.map_err(|e| error("scan", &self.dir, e))?;
            let Some((group, rest)) = key.split_first_chunk::<2>() else {
                continue;
            };
            if u16::from_be_bytes(*group) >= groups.end {
                break;
            }
            out.push((rest.to_vec(), value.to_vec()));
        }
        Ok(out)
    }

    fn checkpoint(&mut self, dir: &Path) -> Result<()> {
        Checkpoint::new(&self.db)
            .and_then(|c| c.create_checkpoint(dir))
            .map_err(|e| error("checkpoint into", dir, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::KEY_GROUPS;

    #[test]
    fn tables_keys_and_checkpoints() {
        let tmp = tempfile::tempdir().unwrap();
        let mut db =
            RocksDbBackend::open(&tmp.path().join("a"), &["counts", "rows"], None).unwrap();
        db.put("counts", b"k1", b"1").unwrap();
        db.put("counts", b"k2", b"2").unwrap();
        db.put("rows", b"k1", b"other table").unwrap();
        db.delete("counts", b"k2").unwrap();
        assert_eq!(db.get("counts", b"k1").unwrap().unwrap(), b"1");
        assert_eq!(db.get("counts", b"k2").unwrap(), None);
        assert!(db.get("missing", b"k1").is_err());
        let chk = tmp.path().join("chk");
        db.checkpoint(&chk).unwrap();
        db.put("counts", b"k3", b"after the checkpoint").unwrap();

        let restored =
            RocksDbBackend::open(&tmp.path().join("b"), &["counts"], Some(&chk)).unwrap();
        let all = restored.entries("counts", 0..KEY_GROUPS).unwrap();
        assert_eq!(all, vec![(b"k1".to_vec(), b"1".to_vec())]);
        assert_eq!(
            restored.get("rows", b"k1").unwrap().unwrap(),
            b"other table"
        );
        let group = key_group(b"k1");
        assert!(restored.entries("counts", 0..group).unwrap().is_empty());
        assert_eq!(
            restored.entries("counts", group..group + 1).unwrap().len(),
            1
        );
    }
}
