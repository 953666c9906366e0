use std::collections::{BTreeMap, BTreeSet};

use riffle_runtime::checkpoint::storage::{
    read_checkpoint, CheckpointStore, Metadata, OperatorMeta,
};
use riffle_runtime::checkpoint::TaskId;
use riffle_runtime::keyed_snapshot::{KeyedSnapshot, KeyedSnapshotWriter};
use riffle_store::StoreError;

use super::*;

/// A unit's checkpoint: a keyed operator (1) with `entries`, a source (0) with `position`,
/// and a RocksDB directory with `ssts`.
struct Checkpoint<'a> {
    entries: &'a BTreeMap<String, String>,
    position: &'a str,
    ssts: &'a [(&'a str, Vec<u8>)],
}

fn write(root: &Path, n: u64, c: &Checkpoint<'_>) -> PathBuf {
    let store = CheckpointStore::new(root, "j.1-1");
    let ops = vec![
        OperatorMeta {
            id: 0,
            fingerprint: "source".into(),
            parallelism: 1,
        },
        OperatorMeta {
            id: 1,
            fingerprint: "aggregate".into(),
            parallelism: 1,
        },
    ];
    let mut metadata = Metadata::new("j.1-1", n, 128, ops);
    metadata.tasks[1].keyed = true;
    let mut snapshot = KeyedSnapshotWriter::new();
    snapshot.global(vec![n as u8]);
    for (k, v) in c.entries {
        snapshot
            .entry(7, k.as_bytes(), |w| {
                w.str(v);
                Ok(())
            })
            .unwrap();
        // A second entry of the same key (as a timer would be).
        snapshot
            .entry(8, k.as_bytes(), |w| {
                w.u64(1);
                Ok(())
            })
            .unwrap();
    }
    let mut states = BTreeMap::new();
    states.insert(
        TaskId {
            operator: 0,
            subtask: 0,
        },
        c.position.as_bytes().to_vec(),
    );
    states.insert(
        TaskId {
            operator: 1,
            subtask: 0,
        },
        snapshot.finish(),
    );
    let dir = store.checkpoint_dir(n);
    std::fs::create_dir_all(dir.join("1-0.rocksdb")).unwrap();
    for (name, bytes) in c.ssts {
        std::fs::write(dir.join("1-0.rocksdb").join(name), bytes).unwrap();
    }
    std::fs::write(dir.join("1-0.rocksdb/CURRENT"), format!("MANIFEST-{n}")).unwrap();
    store.write(&mut metadata, &states).unwrap();
    dir
}

/// The entries (table 7) of a restored checkpoint, its source position and SST files.
fn read_back(dir: &Path) -> (BTreeMap<String, String>, String, BTreeSet<String>) {
    let restored = read_checkpoint(dir).unwrap();
    let keyed = &restored.states[&TaskId {
        operator: 1,
        subtask: 0,
    }];
    let snapshot = KeyedSnapshot::parse(keyed, "test").unwrap();
    let mut entries = BTreeMap::new();
    snapshot
        .read_table(7, "test", |key, r| {
            entries.insert(String::from_utf8(key.to_vec()).unwrap(), r.str()?);
            Ok(())
        })
        .unwrap();
    assert_eq!(snapshot.table(8).count(), entries.len());
    let position = String::from_utf8(
        restored.states[&TaskId {
            operator: 0,
            subtask: 0,
        }]
            .clone(),
    )
    .unwrap();
    let ssts = std::fs::read_dir(dir.join("1-0.rocksdb"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    (entries, position, ssts)
}

struct Env {
    _dir: tempfile::TempDir,
    root: PathBuf,
    local: PathBuf,
    store: Arc<dyn Topics>,
}

fn env() -> Env {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Topics> =
        riffle_connectors::rocketmq::shared_store(&dir.path().join("store")).unwrap();
    create(store.as_ref(), "j", 1, 2).unwrap();
    Env {
        root: dir.path().join("restored"),
        local: dir.path().join("local"),
        store,
        _dir: dir,
    }
}

const UNIT: UnitId = UnitId { stage: 1, unit: 1 };

fn keys(range: std::ops::Range<usize>, value: &str) -> BTreeMap<String, String> {
    range
        .map(|i| (format!("k{i}"), value.to_string()))
        .collect()
}

fn compact(store: &Arc<dyn Topics>) {
    store
        .as_store()
        .unwrap()
        .compact(&topic_name("j", 1))
        .unwrap();
}

#[test]
fn only_changed_entries_and_new_files_are_appended() {
    let env = env();
    let topic = StateTopic::new(env.store.clone(), "j", UNIT);
    assert_eq!(topic.restore_into(&env.root, "j.1-1", false).unwrap(), None);
    let sst = vec![5u8; PIECE_BYTES + 5];
    let mut entries = keys(0..1000, "old");
    let first = topic
        .publish(
            1,
            &write(
                &env.local,
                1,
                &Checkpoint {
                    entries: &entries,
                    position: "offset 10",
                    ssts: &[("000001.sst", sst.clone())],
                },
            ),
        )
        .unwrap();
    assert!(first > sst.len() as u64 + 1000 * 8, "{first}");
    // Two entries change, one disappears, one is new; the SST file stays.
    entries.insert("k1".into(), "new".into());
    entries.insert("k2".into(), "new".into());
    entries.remove("k3");
    entries.insert("k1000".into(), "new".into());
    let ssts = [("000001.sst", sst.clone()), ("000002.sst", vec![6u8; 100])];
    let second = topic
        .publish(
            2,
            &write(
                &env.local,
                2,
                &Checkpoint {
                    entries: &entries,
                    position: "offset 20",
                    ssts: &ssts,
                },
            ),
        )
        .unwrap();
    // Seven entry messages, the new SST file and the small files (metadata, header...).
    assert!(second < 4_000, "{second}");
    // Nothing changes but the source position.
    let third = topic
        .publish(
            3,
            &write(
                &env.local,
                3,
                &Checkpoint {
                    entries: &entries,
                    position: "offset 30",
                    ssts: &ssts,
                },
            ),
        )
        .unwrap();
    assert!(third < second, "{third}");
    for compacted in [false, true] {
        if compacted {
            compact(&env.store);
        }
        let _ = std::fs::remove_dir_all(&env.root);
        let fresh = StateTopic::new(env.store.clone(), "j", UNIT);
        assert_eq!(
            fresh.restore_into(&env.root, "j.1-1", false).unwrap(),
            Some(3)
        );
        let (got, position, files) = read_back(&env.root.join("j.1-1/chk-3"));
        assert_eq!(got, entries);
        assert_eq!(position, "offset 30");
        let want: BTreeSet<String> = ["000001.sst", "000002.sst", "CURRENT"]
            .map(String::from)
            .into();
        assert_eq!(files, want);
        assert_eq!(
            std::fs::read(env.root.join("j.1-1/chk-3/1-0.rocksdb/000001.sst")).unwrap(),
            sst
        );
    }
    // The local directory has it now: nothing more to restore.
    assert_eq!(topic.restore_into(&env.root, "j.1-1", false).unwrap(), None);
}

#[test]
fn deleted_entries_and_unneeded_files_leave_the_compacted_topic() {
    let env = env();
    let topic = StateTopic::new(env.store.clone(), "j", UNIT);
    let big = keys(0..50, "v");
    let small = keys(0..2, "v");
    let sst = [("000001.sst", vec![1u8; 1000])];
    for (n, entries, ssts) in [
        (1, &big, &sst[..]),
        (2, &small, &[][..]),
        (3, &small, &[][..]),
    ] {
        let dir = write(
            &env.local,
            n,
            &Checkpoint {
                entries,
                position: "p",
                ssts,
            },
        );
        topic.publish(n, &dir).unwrap();
    }
    compact(&env.store);
    let info = env.store.queue_info(&topic_name("j", 1), 1).unwrap();
    // 2 keys × 2 tables (one slot each), and one message each for the globals, the
    // position, CURRENT, _metadata and the header.
    assert!(info.messages <= 10, "{info:?}");
    let fresh = StateTopic::new(env.store.clone(), "j", UNIT);
    assert_eq!(
        fresh.restore_into(&env.root, "j.1-1", true).unwrap(),
        Some(3)
    );
    let (got, _, files) = read_back(&env.root.join("j.1-1/chk-3"));
    assert_eq!(got, small);
    assert_eq!(files, BTreeSet::from(["CURRENT".to_string()]));
}

#[test]
fn a_torn_append_is_never_mixed_into_the_newest_checkpoint() {
    let env = env();
    let topic = StateTopic::new(env.store.clone(), "j", UNIT);
    let before = keys(0..100, "committed");
    let dir = write(
        &env.local,
        1,
        &Checkpoint {
            entries: &before,
            position: "offset 1",
            ssts: &[],
        },
    );
    topic.publish(1, &dir).unwrap();
    // Checkpoint 2 changes every entry, but its append stops before its header.
    let after = keys(0..100, "torn");
    let dir = write(
        &env.local,
        2,
        &Checkpoint {
            entries: &after,
            position: "offset 2",
            ssts: &[],
        },
    );
    let mut files = Vec::new();
    collect_files(&dir, Path::new(""), &mut files).unwrap();
    let scan = topic.scan().unwrap();
    let append = changes::build(
        "1-1",
        2,
        &files,
        &keyed_files(&dir).unwrap(),
        &Committed::from_scan(&scan, "1-1"),
    )
    .unwrap();
    let header = append
        .messages
        .iter()
        .position(|m| m.keys[0] == "1-1")
        .unwrap();
    env.store
        .append_batch(&topic_name("j", 1), 1, &append.messages[..header])
        .unwrap();
    // Compaction drops nothing checkpoint 1 needs: the torn values went to other slots.
    compact(&env.store);
    let restorer = StateTopic::new(env.store.clone(), "j", UNIT);
    assert_eq!(
        restorer.restore_into(&env.root, "j.1-1", true).unwrap(),
        Some(1)
    );
    let (got, position, _) = read_back(&env.root.join("j.1-1/chk-1"));
    assert_eq!((got, position.as_str()), (before.clone(), "offset 1"));
    // The restorer goes on from checkpoint 1 with its own checkpoint 2: nothing of the torn
    // one may survive in it, compacted or not (here only k0 changed).
    let mut mine = before.clone();
    mine.insert("k0".into(), "restorer".into());
    let dir = write(
        &env.local,
        2,
        &Checkpoint {
            entries: &mine,
            position: "offset 2'",
            ssts: &[],
        },
    );
    restorer.publish(2, &dir).unwrap();
    for compacted in [false, true] {
        if compacted {
            compact(&env.store);
        }
        let _ = std::fs::remove_dir_all(&env.root);
        let fresh = StateTopic::new(env.store.clone(), "j", UNIT);
        assert_eq!(
            fresh.restore_into(&env.root, "j.1-1", true).unwrap(),
            Some(2)
        );
        let (got, position, _) = read_back(&env.root.join("j.1-1/chk-2"));
        assert_eq!((got, position.as_str()), (mine.clone(), "offset 2'"));
    }
}

/// The embedded store, but an append can be made to stop after some messages and fail (as
/// one to a broker does when a batch of a large append fails).
struct Tearing {
    store: Arc<riffle_store::Store>,
    cut: std::sync::Mutex<Option<usize>>,
}

impl Topics for Tearing {
    fn location(&self) -> String {
        self.store.location()
    }
    fn topics(&self) -> riffle_store::Result<Vec<String>> {
        Topics::topics(self.store.as_ref())
    }
    fn create_topic(&self, name: &str, config: TopicConfig) -> riffle_store::Result<()> {
        Topics::create_topic(self.store.as_ref(), name, config)
    }
    fn delete_topic(&self, name: &str) -> riffle_store::Result<()> {
        Topics::delete_topic(self.store.as_ref(), name)
    }
    fn topic_config(&self, name: &str) -> riffle_store::Result<TopicConfig> {
        Topics::topic_config(self.store.as_ref(), name)
    }
    fn describe(&self, name: &str) -> riffle_store::Result<riffle_store::TopicInfo> {
        Topics::describe(self.store.as_ref(), name)
    }
    fn queue_info(&self, topic: &str, queue: u32) -> riffle_store::Result<riffle_store::QueueInfo> {
        Topics::queue_info(self.store.as_ref(), topic, queue)
    }
    fn read(
        &self,
        topic: &str,
        queue: u32,
        offset: u64,
        max: usize,
    ) -> riffle_store::Result<Vec<riffle_store::StoredMessage>> {
        Topics::read(self.store.as_ref(), topic, queue, offset, max)
    }
    fn offset_for_timestamp(&self, topic: &str, queue: u32, ts: i64) -> riffle_store::Result<u64> {
        Topics::offset_for_timestamp(self.store.as_ref(), topic, queue, ts)
    }
    fn append_batch(
        &self,
        topic: &str,
        queue: u32,
        messages: &[riffle_store::Message],
    ) -> riffle_store::Result<()> {
        match self.cut.lock().unwrap().take() {
            Some(n) => {
                Topics::append_batch(self.store.as_ref(), topic, queue, &messages[..n])?;
                Err(StoreError::Invalid("the broker went away".into()))
            }
            None => Topics::append_batch(self.store.as_ref(), topic, queue, messages),
        }
    }
    fn committed_offset(
        &self,
        group: &str,
        topic: &str,
        queue: u32,
    ) -> riffle_store::Result<Option<u64>> {
        Topics::committed_offset(self.store.as_ref(), group, topic, queue)
    }
    fn commit_offsets(
        &self,
        group: &str,
        topic: &str,
        offsets: &[(u32, u64)],
    ) -> riffle_store::Result<()> {
        Topics::commit_offsets(self.store.as_ref(), group, topic, offsets)
    }
    fn flush(&self) -> riffle_store::Result<()> {
        Topics::flush(self.store.as_ref())
    }
    fn as_store(&self) -> Option<&riffle_store::Store> {
        Some(&self.store)
    }
}

#[test]
fn a_failed_append_is_repaired_by_the_next_one_of_the_same_unit() {
    let dir = tempfile::tempdir().unwrap();
    let tearing = Arc::new(Tearing {
        store: riffle_connectors::rocketmq::shared_store(&dir.path().join("store")).unwrap(),
        cut: std::sync::Mutex::new(None),
    });
    let store: Arc<dyn Topics> = tearing.clone();
    create(store.as_ref(), "j", 1, 2).unwrap();
    let local = dir.path().join("local");
    let topic = StateTopic::new(store.clone(), "j", UNIT);
    let committed = keys(0..100, "committed");
    let checkpoint = |n: u64, entries: &BTreeMap<String, String>| {
        write(
            &local,
            n,
            &Checkpoint {
                entries,
                position: "p",
                ssts: &[],
            },
        )
    };
    topic.publish(1, &checkpoint(1, &committed)).unwrap();
    // Checkpoint 2 changes every entry; its append fails after 60 of its messages.
    *tearing.cut.lock().unwrap() = Some(60);
    assert!(topic
        .publish(2, &checkpoint(2, &keys(0..100, "torn")))
        .is_err());
    compact(&store);
    // The unit's next checkpoint changes one entry only; it must overwrite the torn rest.
    let mut next = committed.clone();
    next.insert("k5".into(), "next".into());
    topic.publish(3, &checkpoint(3, &next)).unwrap();
    for compacted in [false, true] {
        if compacted {
            compact(&store);
        }
        let root = dir.path().join(format!("restored-{compacted}"));
        let fresh = StateTopic::new(store.clone(), "j", UNIT);
        assert_eq!(fresh.restore_into(&root, "j.1-1", true).unwrap(), Some(3));
        let (got, _, _) = read_back(&root.join("j.1-1/chk-3"));
        assert_eq!(got, next);
    }
}
