//! Several real processes share one data directory: they append to the same queues at once
//! while one of them is killed with SIGKILL, and the parent tails the queues meanwhile.
//!
//! The children are this test executable re-run with `--exact append_child_entry` and an
//! environment variable naming the data directory; without it the entry returns at once.

mod common;

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::Rng;
use riffle_store::{FlushMode, Message, Store, StoreOptions, TopicConfig};

const CHILD_DIR_ENV: &str = "RIFFLE_STORE_TEST_APPEND_CHILD_DIR";
const CHILD_ID_ENV: &str = "RIFFLE_STORE_TEST_APPEND_CHILD_ID";
const QUEUES: u32 = 2;
const BATCHES_PER_CHILD: u64 = 400;

fn options() -> StoreOptions {
    StoreOptions {
        flush_mode: FlushMode::Async,
        // Small segments: rolls by one process happen under the others' feet.
        segment_bytes: 256 * 1024,
        maintenance_interval: None,
        ..StoreOptions::default()
    }
}

/// The body of message `seq` of `child`: names both, padded to a length that varies so that a
/// kill often tears a record.
fn body(child: u64, seq: u64) -> Vec<u8> {
    let mut b = format!("{child}:{seq}:").into_bytes();
    let pad = ((seq * 7919 + child * 104_729) % 1500) as usize;
    b.extend((0..pad).map(|i| b'a' + ((i as u64 + seq) % 26) as u8));
    b
}

/// Parses a body back into (child, seq), checking the padding.
fn parse(bytes: &[u8]) -> (u64, u64) {
    let text = std::str::from_utf8(bytes).expect("utf-8 body");
    let mut parts = text.splitn(3, ':');
    let child: u64 = parts.next().unwrap().parse().unwrap();
    let seq: u64 = parts.next().unwrap().parse().unwrap();
    assert_eq!(bytes, body(child, seq), "damaged body of {child}:{seq}");
    (child, seq)
}

/// Child entry: appends batches to random queues, printing `ACK queue first count child seq`
/// for every acknowledged batch, then exits.
#[test]
fn append_child_entry() {
    let Ok(dir) = std::env::var(CHILD_DIR_ENV) else {
        return;
    };
    let child: u64 = std::env::var(CHILD_ID_ENV).unwrap().parse().unwrap();
    let store = Store::open(&dir, options()).unwrap();
    let mut rng = Rng((child + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let mut seq = 0u64;
    for _ in 0..BATCHES_PER_CHILD {
        let queue = rng.below(u64::from(QUEUES)) as u32;
        let count = 1 + rng.below(40);
        let batch: Vec<Message> = (seq..seq + count)
            .map(|s| Message::new(body(child, s)))
            .collect();
        let first = store.append_batch("t", queue, &batch).unwrap();
        println!("ACK {queue} {first} {count} {child} {seq}");
        seq += count;
    }
    store.close().unwrap();
}

/// One acknowledged batch.
#[derive(Debug, Clone, Copy)]
struct Ack {
    queue: u32,
    first: u64,
    count: u64,
    child: u64,
    seq: u64,
}

fn spawn_child(dir: &std::path::Path, id: u64, tx: mpsc::Sender<Ack>) -> Child {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "append_child_entry",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_DIR_ENV, dir)
        .env(CHILD_ID_ENV, id.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            // The test harness may print its own text before ours on the same line.
            let Some(pos) = line.find("ACK ") else {
                continue;
            };
            let f: Vec<u64> = line[pos + 4..]
                .split_whitespace()
                .filter_map(|f| f.parse().ok())
                .collect();
            if let [queue, first, count, child, seq] = f[..] {
                let ack = Ack {
                    queue: queue as u32,
                    first,
                    count,
                    child,
                    seq,
                };
                if tx.send(ack).is_err() {
                    break;
                }
            }
        }
    });
    child
}

/// Reads a queue from `next` on, checking that offsets are contiguous; returns the new end.
fn tail(store: &Store, queue: u32, mut next: u64) -> u64 {
    loop {
        let batch = store.read("t", queue, next, 500).unwrap();
        if batch.is_empty() {
            return next;
        }
        for m in batch {
            assert_eq!(m.offset, next, "queue {queue}: offsets must be contiguous");
            parse(&m.message.body);
            next += 1;
        }
    }
}

#[test]
fn processes_append_to_shared_queues_while_one_is_killed() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), options()).unwrap();
    store
        .create_topic(
            "t",
            TopicConfig {
                queues: QUEUES,
                ..TopicConfig::default()
            },
        )
        .unwrap();
    let (tx, rx) = mpsc::channel();
    let mut children: Vec<Child> = (0..4)
        .map(|id| spawn_child(dir.path(), id, tx.clone()))
        .collect();
    drop(tx);
    // The parent tails both queues while the children append; child 0 is killed mid-stream.
    let mut ends = [0u64; QUEUES as usize];
    let mut acks = Vec::new();
    let start = Instant::now();
    let mut killed = false;
    loop {
        for q in 0..QUEUES {
            ends[q as usize] = tail(&store, q, ends[q as usize]);
        }
        acks.extend(rx.try_iter());
        let from_victim = acks.iter().filter(|a| a.child == 0).count();
        if !killed && (from_victim >= 50 || start.elapsed() > Duration::from_secs(20)) {
            children[0].kill().unwrap(); // SIGKILL
            killed = true;
        }
        if killed && children.iter_mut().all(|c| c.try_wait().unwrap().is_some()) {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(120), "children hang");
        std::thread::sleep(Duration::from_millis(5));
    }
    for c in &mut children[1..] {
        assert!(c.wait().unwrap().success(), "a surviving child failed");
    }
    // The reader threads end with the children's stdout.
    std::thread::sleep(Duration::from_millis(200));
    acks.extend(rx.try_iter());
    let survivors = acks.iter().filter(|a| a.child != 0).count() as u64;
    assert_eq!(
        survivors,
        3 * BATCHES_PER_CHILD,
        "every surviving batch acknowledged"
    );
    assert!(
        acks.iter().any(|a| a.child == 0),
        "the victim appended before its death"
    );

    // Everything written, by every process, read back by the parent's long-open handle and by
    // a fresh one.
    let fresh = Store::open(dir.path(), options()).unwrap();
    for reader in [&store, &fresh] {
        let mut by_pos: HashMap<(u32, u64), (u64, u64)> = HashMap::new();
        let mut seen: HashMap<(u64, u64), (u32, u64)> = HashMap::new();
        for q in 0..QUEUES {
            let all = reader.read("t", q, 0, usize::MAX).unwrap();
            assert_eq!(
                all.len() as u64,
                reader.queue_info("t", q).unwrap().max_offset
            );
            for (i, m) in all.iter().enumerate() {
                assert_eq!(m.offset, i as u64, "queue {q}: offsets are dense");
                let id = parse(&m.message.body);
                assert!(
                    seen.insert(id, (q, m.offset)).is_none(),
                    "{id:?} stored twice"
                );
                by_pos.insert((q, m.offset), id);
            }
        }
        for a in &acks {
            for i in 0..a.count {
                assert_eq!(
                    by_pos.get(&(a.queue, a.first + i)),
                    Some(&(a.child, a.seq + i)),
                    "acknowledged message {}:{} at {}/{}",
                    a.child,
                    a.seq + i,
                    a.queue,
                    a.first + i
                );
            }
        }
        // Unacknowledged messages can only be the victim's last, interrupted batch.
        let acked: u64 = acks.iter().map(|a| a.count).sum();
        assert!(
            seen.len() as u64 - acked < 40,
            "{} unacknowledged",
            seen.len() as u64 - acked
        );
    }
    // Appends go on at the end.
    let next = fresh.queue_info("t", 0).unwrap().max_offset;
    assert_eq!(
        fresh.append("t", 0, &Message::new(body(9, 0))).unwrap(),
        next
    );
}
