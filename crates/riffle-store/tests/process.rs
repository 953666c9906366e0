//! Tests with real child processes: SIGKILL during appends, then recovery on open. (Several
//! processes appending at once: `tests/multiprocess.rs`.)
//!
//! The child is this same test executable, re-run with `--exact <entry test>` and an environment
//! variable naming the data directory; without the variable the entry tests return at once.

mod common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::Rng;
use riffle_store::{FlushMode, Message, Store, StoreOptions, TopicConfig};

const KILL_CHILD_ENV: &str = "RIFFLE_STORE_TEST_KILL_CHILD_DIR";
/// Set to `async` to make the kill child append in [`FlushMode::Async`].
const KILL_CHILD_MODE_ENV: &str = "RIFFLE_STORE_TEST_KILL_CHILD_MODE";
const QUEUES: u32 = 2;

fn sync_options() -> StoreOptions {
    options(FlushMode::Sync)
}

fn options(flush_mode: FlushMode) -> StoreOptions {
    StoreOptions {
        flush_mode,
        // Small segments so that kills also land around segment rolls.
        segment_bytes: 16 * 1024,
        maintenance_interval: None,
        ..StoreOptions::default()
    }
}

/// The body every message at (queue, offset) must have: its length and bytes follow from the
/// position, so any damaged or misplaced message is detected.
fn expected_body(queue: u32, offset: u64) -> Vec<u8> {
    let len = 1 + ((offset * 7919 + u64::from(queue) * 104_729) % 3000) as usize;
    let seed = offset.wrapping_mul(31).wrapping_add(u64::from(queue));
    (0..len)
        .map(|i| (seed.wrapping_add(i as u64) % 251) as u8)
        .collect()
}

fn message_for(queue: u32, offset: u64) -> Message {
    let mut m = Message::new(expected_body(queue, offset)).with_key(format!("{queue}-{offset}"));
    m.born_timestamp = offset as i64;
    m
}

/// Child entry: appends forever (up to a time bound), printing every acknowledged
/// range as `ACK <queue> <first offset> <count>`.
#[test]
fn kill_child_entry() {
    let Ok(dir) = std::env::var(KILL_CHILD_ENV) else {
        return;
    };
    let mode = match std::env::var(KILL_CHILD_MODE_ENV).as_deref() {
        Ok("async") => FlushMode::Async,
        _ => FlushMode::Sync,
    };
    let store = Store::open(&dir, options(mode)).unwrap();
    if !store.topics().contains(&"t".to_string()) {
        store
            .create_topic(
                "t",
                TopicConfig {
                    queues: QUEUES,
                    ..TopicConfig::default()
                },
            )
            .unwrap();
    }
    let mut rng = Rng(u64::from(std::process::id()) | 1);
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        let queue = rng.below(u64::from(QUEUES)) as u32;
        let next = store.queue_info("t", queue).unwrap().max_offset;
        // Large batches make a kill during a write (a torn record) likely.
        let count = if rng.below(2) == 0 {
            1
        } else {
            1 + rng.below(200)
        };
        let batch: Vec<Message> = (next..next + count)
            .map(|o| message_for(queue, o))
            .collect();
        let first = if count == 1 {
            store.append("t", queue, &batch[0]).unwrap()
        } else {
            store.append_batch("t", queue, &batch).unwrap()
        };
        assert_eq!(first, next);
        println!("ACK {queue} {first} {count}");
    }
}

/// Reads the child's stdout on a thread, sending every acknowledgement.
fn spawn_reader(
    stdout: std::process::ChildStdout,
    tx: mpsc::Sender<(u32, u64, u64)>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            // The test harness may print its own text before ours on the same line.
            let Some(pos) = line.find("ACK ") else {
                continue;
            };
            let fields: Vec<u64> = line[pos + 4..]
                .split_whitespace()
                .filter_map(|f| f.parse().ok())
                .collect();
            if let [q, first, count] = fields[..] {
                if tx.send((q as u32, first, count)).is_err() {
                    break;
                }
            }
        }
    })
}

/// Total size of the `.log` files of a queue.
fn log_bytes_on_disk(dir: &Path, queue: u32) -> u64 {
    std::fs::read_dir(dir.join("topics/t").join(queue.to_string()))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .map(|p| std::fs::metadata(p).unwrap().len())
        .sum()
}

#[test]
fn acknowledged_appends_survive_sigkill() {
    kill_rounds("sync");
}

/// In async flush mode an acknowledged append has been written (not fsynced): it must survive
/// the death of the process, which leaves the page cache intact.
#[test]
fn acknowledged_async_appends_survive_sigkill() {
    kill_rounds("async");
}

/// Rounds of: start a child appending in `mode`, SIGKILL it at a random moment, reopen and check
/// that every acknowledged message is there and nothing follows the last record.
fn kill_rounds(mode: &str) {
    let dir = tempfile::tempdir().unwrap();
    let exe = std::env::current_exe().unwrap();
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
        | 1;
    eprintln!("kill test seed {seed}");
    let mut rng = Rng(seed);
    // Per queue: one past the highest acknowledged offset.
    let mut acked = [0u64; QUEUES as usize];
    let mut total_acks = 0;
    for round in 0..8 {
        let mut child = Command::new(&exe)
            .args([
                "--exact",
                "kill_child_entry",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(KILL_CHILD_ENV, dir.path())
            .env(KILL_CHILD_MODE_ENV, mode)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let (tx, rx) = mpsc::channel();
        let reader = spawn_reader(child.stdout.take().unwrap(), tx);
        let mut round_acks = Vec::new();
        if round % 4 == 3 {
            // Sometimes kill early, possibly while the child is still opening the store.
            std::thread::sleep(Duration::from_millis(rng.below(30)));
        } else {
            let first = rx
                .recv_timeout(Duration::from_secs(60))
                .expect("child acknowledged nothing");
            round_acks.push(first);
            std::thread::sleep(Duration::from_millis(20 + rng.below(400)));
        }
        child.kill().unwrap(); // SIGKILL on Unix
        child.wait().unwrap();
        reader.join().unwrap();
        round_acks.extend(rx.try_iter());
        for &(q, first, count) in &round_acks {
            let slot = &mut acked[q as usize];
            *slot = (*slot).max(first + count);
        }
        total_acks += round_acks.len();

        let store = Store::open(dir.path(), sync_options()).unwrap();
        eprintln!(
            "round {round}: {} acknowledgements, recovery {:?}",
            round_acks.len(),
            store.recovery()
        );
        if !store.topics().contains(&"t".to_string()) {
            assert!(
                round_acks.is_empty() && acked == [0, 0],
                "acknowledged topic lost"
            );
            continue;
        }
        for q in 0..QUEUES {
            let info = store.queue_info("t", q).unwrap();
            assert!(
                info.max_offset >= acked[q as usize],
                "round {round} queue {q}: acknowledged up to {} but only {} survived",
                acked[q as usize],
                info.max_offset
            );
            let all = store.read("t", q, 0, usize::MAX).unwrap();
            assert_eq!(all.len() as u64, info.max_offset, "offsets are dense");
            for (i, m) in all.iter().enumerate() {
                assert_eq!(m.offset, i as u64);
                assert_eq!(
                    m.message,
                    message_for(q, m.offset),
                    "round {round} queue {q}"
                );
            }
            // No garbage after the last record.
            assert_eq!(log_bytes_on_disk(dir.path(), q), info.bytes);
            // Appends continue at the right offset (and keep the body pattern).
            let next = store
                .append("t", q, &message_for(q, info.max_offset))
                .unwrap();
            assert_eq!(next, info.max_offset);
            acked[q as usize] = next + 1;
        }
        store.close().unwrap();
    }
    assert!(total_acks > 0, "the children never appended");
}
