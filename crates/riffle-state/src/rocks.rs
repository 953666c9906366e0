//! The RocksDB state backend.

use std::ops::Range;
use std::path::{Path, PathBuf};

use rocksdb::checkpoint::Checkpoint;
use rocksdb::{Direction, IteratorMode, Options, WriteOptions, DB};

use crate::{KeyGroups, Result, StateBackend, StateError};

/// Keyed state in a RocksDB database of its own (one per operator subtask): one column family
/// per state table, keys prefixed by their key group.
pub struct RocksDbBackend {
    db: DB,
    dir: PathBuf,
    /// The key groups keys are prefixed with.
    groups: KeyGroups,
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
fn prefixed(groups: KeyGroups, key: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(key.len() + 2);
    out.extend_from_slice(&groups.of_key(key).to_be_bytes());
    out.extend_from_slice(key);
    out
}

/// A raw RocksDB entry: the key (with its key-group prefix) and the value.
type RawEntry = (Box<[u8]>, Box<[u8]>);

/// The entries of column family `table` of `db` whose key group is in `groups`.
fn scan(
    db: &DB,
    dir: &Path,
    table: &rocksdb::ColumnFamily,
    groups: Range<u16>,
) -> Result<Vec<RawEntry>> {
    let start = groups.start.to_be_bytes();
    let mode = IteratorMode::From(&start, Direction::Forward);
    let mut out = Vec::new();
    for item in db.iterator_cf(table, mode) {
        let (key, value) = item.map_err(|e| error("scan", dir, e))?;
        match key.first_chunk::<2>() {
            Some(group) if u16::from_be_bytes(*group) >= groups.end => break,
            Some(_) => out.push((key, value)),
            None => continue,
        }
    }
    Ok(out)
}

impl RocksDbBackend {
    /// Opens a fresh database in `dir` (its previous content is removed) with `tables`, or,
    /// with `restore_from`, a copy of a checkpoint written by [`StateBackend::checkpoint`]
    /// (hard links where the file system allows, copies otherwise). Keys are prefixed with
    /// their group among `groups`.
    pub fn open(
        dir: &Path,
        tables: &[&str],
        restore_from: Option<&Path>,
        groups: KeyGroups,
    ) -> Result<Self> {
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
            groups,
            write,
        })
    }

    /// Opens a fresh database in `dir` with `tables` holding the entries of key groups `range`
    /// found in the checkpoints `sources` (of subtasks of another parallelism): each is
    /// opened in a scratch copy next to `dir`, its range scanned in every table and copied.
    pub fn restore_key_groups(
        dir: &Path,
        tables: &[&str],
        sources: &[&Path],
        range: Range<u16>,
        groups: KeyGroups,
    ) -> Result<Self> {
        let mut target = Self::open(dir, tables, None, groups)?;
        let scratch = dir.with_extension("rescale");
        for source in sources {
            let from = Self::open(&scratch, &[], Some(source), groups)?;
            let names =
                DB::list_cf(&options(), &scratch).map_err(|e| error("list tables", &scratch, e))?;
            for name in names.iter().filter(|n| n.as_str() != "default") {
                let entries = scan(&from.db, &scratch, from.table(name)?, range.clone())?;
                if target.db.cf_handle(name).is_none() {
                    target
                        .db
                        .create_cf(name, &options())
                        .map_err(|e| error("create table", dir, e))?;
                }
                let cf = target.table(name)?;
                for (key, value) in entries {
                    target
                        .db
                        .put_cf_opt(cf, key, value, &target.write)
                        .map_err(|e| error("write", dir, e))?;
                }
            }
            drop(from);
            std::fs::remove_dir_all(&scratch).map_err(|e| error("remove", &scratch, e))?;
        }
        // Flushed, so that the next checkpoint's hard links hold the copied entries.
        target.db.flush().map_err(|e| error("flush", dir, e))?;
        Ok(target)
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
            .get_cf(self.table(table)?, prefixed(self.groups, key))
            .map_err(|e| error("read", &self.dir, e))
    }

    fn put(&mut self, table: &str, key: &[u8], value: &[u8]) -> Result<()> {
        self.db
            .put_cf_opt(
                self.table(table)?,
                prefixed(self.groups, key),
                value,
                &self.write,
            )
            .map_err(|e| error("write", &self.dir, e))
    }

    fn delete(&mut self, table: &str, key: &[u8]) -> Result<()> {
        self.db
            .delete_cf_opt(self.table(table)?, prefixed(self.groups, key), &self.write)
            .map_err(|e| error("delete", &self.dir, e))
    }

    fn entries(&self, table: &str, groups: Range<u16>) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let entries = scan(&self.db, &self.dir, self.table(table)?, groups)?;
        Ok(entries
            .into_iter()
            .map(|(key, value)| (key.get(2..).unwrap_or_default().to_vec(), value.to_vec()))
            .collect())
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

    #[test]
    fn tables_keys_and_checkpoints() {
        let tmp = tempfile::tempdir().unwrap();
        let groups = KeyGroups::default();
        let mut db =
            RocksDbBackend::open(&tmp.path().join("a"), &["counts", "rows"], None, groups).unwrap();
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
            RocksDbBackend::open(&tmp.path().join("b"), &["counts"], Some(&chk), groups).unwrap();
        let all = restored.entries("counts", 0..128).unwrap();
        assert_eq!(all, vec![(b"k1".to_vec(), b"1".to_vec())]);
        assert_eq!(
            restored.get("rows", b"k1").unwrap().unwrap(),
            b"other table"
        );
        let group = groups.of_key(b"k1");
        assert!(restored.entries("counts", 0..group).unwrap().is_empty());
        assert_eq!(
            restored.entries("counts", group..group + 1).unwrap().len(),
            1
        );
    }

    #[test]
    fn a_key_group_range_is_gathered_from_several_checkpoints() {
        let tmp = tempfile::tempdir().unwrap();
        let groups = KeyGroups::new(16).unwrap();
        let keys: Vec<String> = (0..200).map(|i| format!("key-{i}")).collect();
        // Two subtasks of parallelism 2, each holding its own keys.
        let mut checkpoints = Vec::new();
        for index in 0..2 {
            let dir = tmp.path().join(format!("old-{index}"));
            let mut db = RocksDbBackend::open(&dir, &["counts"], None, groups).unwrap();
            for key in &keys {
                if groups.subtask_of(groups.of_key(key.as_bytes()), 2) == index {
                    db.put("counts", key.as_bytes(), key.as_bytes()).unwrap();
                }
            }
            let chk = tmp.path().join(format!("chk-{index}"));
            db.checkpoint(&chk).unwrap();
            checkpoints.push(chk);
        }
        let sources: Vec<&Path> = checkpoints.iter().map(PathBuf::as_path).collect();
        let mut seen = 0;
        for index in 0..3 {
            let range = groups.range_of(index, 3);
            let db = RocksDbBackend::restore_key_groups(
                &tmp.path().join(format!("new-{index}")),
                &["counts"],
                &sources,
                range.clone(),
                groups,
            )
            .unwrap();
            let entries = db.entries("counts", 0..16).unwrap();
            for (key, value) in &entries {
                assert_eq!(key, value);
                assert!(range.contains(&groups.of_key(key)));
            }
            seen += entries.len();
        }
        assert_eq!(seen, keys.len());
    }
}
