//! Two `Store` handles on one directory, as two processes would have it: each sees the other's
//! topics, appends, commits, deletions and compactions. (Real processes: `tests/multiprocess.rs`.)

mod common;

use common::{keyed, one_queue, options};
use riffle_store::{CleanupPolicy, Message, Store, StoreError, TopicConfig};

fn bodies(store: &Store, topic: &str, queue: u32) -> Vec<(u64, String)> {
    store
        .read(topic, queue, 0, usize::MAX)
        .unwrap()
        .into_iter()
        .map(|m| (m.offset, String::from_utf8(m.message.body).unwrap()))
        .collect()
}

#[test]
fn two_handles_share_topics_appends_and_offsets() {
    let dir = tempfile::tempdir().unwrap();
    let a = Store::open(dir.path(), options(512)).unwrap();
    let b = Store::open(dir.path(), options(512)).unwrap();
    a.create_topic("t", one_queue(CleanupPolicy::Delete))
        .unwrap();
    assert_eq!(b.topics(), vec!["t".to_string()]);
    assert!(matches!(
        b.create_topic("t", one_queue(CleanupPolicy::Delete)),
        Err(StoreError::TopicExists(_))
    ));
    // Interleaved appends (small segments: both roll) get contiguous offsets.
    for i in 0..100u64 {
        let (store, name) = if i % 3 == 0 { (&a, "a") } else { (&b, "b") };
        let offset = store
            .append("t", 0, &Message::new(format!("{name}{i}")))
            .unwrap();
        assert_eq!(offset, i);
    }
    for store in [&a, &b] {
        let got = bodies(store, "t", 0);
        assert_eq!(got.len(), 100);
        for (i, (offset, body)) in got.iter().enumerate() {
            assert_eq!(*offset, i as u64);
            assert!(body.ends_with(&i.to_string()), "{body}");
        }
        let info = store.queue_info("t", 0).unwrap();
        assert_eq!(info.max_offset, 100);
        assert!(info.segments > 1, "{info:?}");
    }
    a.commit_offset("g", "t", 0, 40).unwrap();
    assert_eq!(b.committed_offset("g", "t", 0).unwrap(), Some(40));
    b.commit_offsets("g", "t", &[(0, 60)]).unwrap();
    assert_eq!(a.committed_offset("g", "t", 0).unwrap(), Some(60));
    assert_eq!(a.describe("t").unwrap().groups[0].lag, 40);
}

#[test]
fn a_deletion_is_seen_by_the_other_handle() {
    let dir = tempfile::tempdir().unwrap();
    let a = Store::open(dir.path(), options(1 << 20)).unwrap();
    let b = Store::open(dir.path(), options(1 << 20)).unwrap();
    a.create_topic("t", one_queue(CleanupPolicy::Delete))
        .unwrap();
    a.append("t", 0, &Message::new("old")).unwrap();
    assert_eq!(b.read("t", 0, 0, 10).unwrap().len(), 1);
    a.commit_offset("g", "t", 0, 1).unwrap();
    b.delete_topic("t").unwrap();
    let err = a.append("t", 0, &Message::new("lost?")).unwrap_err();
    assert!(matches!(err, StoreError::TopicNotFound(_)), "{err}");
    assert!(a.topics().is_empty());
    assert_eq!(a.committed_offset("g", "t", 0).ok().flatten(), None);
    // Re-created with two queues by the other handle: the first one uses the new topic.
    b.create_topic(
        "t",
        TopicConfig {
            queues: 2,
            ..TopicConfig::default()
        },
    )
    .unwrap();
    assert_eq!(a.append("t", 1, &Message::new("new")).unwrap(), 0);
    assert_eq!(bodies(&b, "t", 1), vec![(0, "new".to_string())]);
    assert!(b.read("t", 0, 0, 10).unwrap().is_empty());
}

#[test]
fn compaction_by_one_handle_while_the_other_appends() {
    let dir = tempfile::tempdir().unwrap();
    let a = Store::open(dir.path(), options(256)).unwrap();
    let b = Store::open(dir.path(), options(256)).unwrap();
    a.create_topic("c", one_queue(CleanupPolicy::Compaction))
        .unwrap();
    for i in 0..60 {
        a.append("c", 0, &keyed(&format!("k{}", i % 5), &format!("v{i}")))
            .unwrap();
    }
    std::thread::scope(|s| {
        s.spawn(|| {
            for i in 60..120 {
                b.append("c", 0, &keyed(&format!("k{}", i % 5), &format!("v{i}")))
                    .unwrap();
            }
        });
        a.compact("c").unwrap();
    });
    b.compact("c").unwrap();
    for store in [&a, &b] {
        let got = bodies(store, "c", 0);
        let latest: Vec<String> = (115..120).map(|i| format!("v{i}")).collect();
        let tail: Vec<String> = got.iter().map(|(_, v)| v.clone()).collect();
        assert_eq!(tail, latest, "{got:?}");
        assert_eq!(store.queue_info("c", 0).unwrap().max_offset, 120);
    }
    assert_eq!(b.append("c", 0, &keyed("k0", "after")).unwrap(), 120);
}

/// One handle keeps appending to every queue of a topic (holding leases) while the other
/// deletes and re-creates it: neither waits for the other forever, and the appender always
/// ends on the re-created topic.
#[test]
fn deleting_a_topic_another_handle_appends_to_does_not_deadlock() {
    let dir = tempfile::tempdir().unwrap();
    let a = Store::open(dir.path(), options(1 << 20)).unwrap();
    let b = Store::open(dir.path(), options(1 << 20)).unwrap();
    let config = TopicConfig {
        queues: 3,
        ..TopicConfig::default()
    };
    a.create_topic("t", config.clone()).unwrap();
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    std::thread::scope(|s| {
        s.spawn(|| {
            for _ in 0..5 {
                std::thread::sleep(std::time::Duration::from_millis(30));
                b.delete_topic("t").unwrap();
                b.create_topic("t", config.clone()).unwrap();
            }
            done_tx.send(()).unwrap();
        });
        let mut not_found = 0;
        let start = std::time::Instant::now();
        loop {
            for q in 0..3 {
                match a.append("t", q, &Message::new("x")) {
                    Ok(_) => {}
                    Err(StoreError::TopicNotFound(_)) => not_found += 1,
                    Err(e) => panic!("{e}"),
                }
            }
            if done_rx.try_recv().is_ok() {
                break;
            }
            assert!(
                start.elapsed() < std::time::Duration::from_secs(30),
                "delete and append wait for each other"
            );
        }
        eprintln!("appends refused while the topic was gone: {not_found}");
    });
    // The appender's handle now writes the topic the other handle created last.
    let offset = a.append("t", 0, &Message::new("last")).unwrap();
    let read = b.read("t", 0, offset, 1).unwrap();
    assert_eq!(read[0].message.body, b"last");
}
