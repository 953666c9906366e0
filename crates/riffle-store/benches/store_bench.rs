//! Append and read throughput of the store: `cargo bench -p riffle-store`.
//!
//! Prints one line per case: messages, seconds, messages/s and MB/s of message bodies. Cases:
//! 100-byte and 1-KiB bodies; single appends and batches of 256; async and sync flush; and
//! sequential reads of what was written; and several processes appending to one store at
//! once, each to its own queue or all to the same queue. Set `RIFFLE_BENCH_DIR` to measure on
//! another disk (default: the system temporary directory); set `RIFFLE_BENCH_ONLY=processes`
//! to run only the multi-process cases. Not run by `cargo test`.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use riffle_store::{FlushMode, Message, Store, StoreOptions, TopicConfig};

const BATCH: usize = 256;

struct Case {
    name: String,
    messages: u64,
    body_bytes: usize,
    elapsed: Duration,
}

impl Case {
    fn print(&self) {
        let secs = self.elapsed.as_secs_f64();
        let rate = self.messages as f64 / secs;
        let mb = rate * self.body_bytes as f64 / 1e6;
        println!(
            "{:<34} {:>9} msgs {:>8.3} s {:>12.0} msgs/s {:>9.1} MB/s",
            self.name, self.messages, secs, rate, mb
        );
    }
}

fn open(dir: &std::path::Path, flush_mode: FlushMode) -> Store {
    let options = StoreOptions {
        flush_mode,
        maintenance_interval: None,
        ..StoreOptions::default()
    };
    let store = Store::open(dir, options).expect("open store");
    if store.topics().is_empty() {
        store
            .create_topic(
                "bench",
                TopicConfig {
                    queues: 1,
                    ..TopicConfig::default()
                },
            )
            .expect("create topic");
    }
    store
}

/// Appends `count` messages (singly or in batches) until done or `budget` is spent; returns
/// the case with the number actually appended.
fn append_case(
    store: &Store,
    body_bytes: usize,
    count: u64,
    batched: bool,
    budget: Duration,
    name: String,
) -> Case {
    let message = Message::new(vec![b'x'; body_bytes]).with_key("key");
    let batch = vec![message.clone(); BATCH];
    let start = Instant::now();
    let mut done = 0u64;
    while done < count && start.elapsed() < budget {
        if batched {
            store
                .append_batch("bench", 0, &batch)
                .expect("append batch");
            done += BATCH as u64;
        } else {
            store.append("bench", 0, &message).expect("append");
            done += 1;
        }
    }
    store.flush().expect("flush");
    Case {
        name,
        messages: done,
        body_bytes,
        elapsed: start.elapsed(),
    }
}

fn read_case(store: &Store, body_bytes: usize) -> Case {
    let start = Instant::now();
    let mut next = 0u64;
    loop {
        let batch = store.read("bench", 0, next, 1024).expect("read");
        let Some(last) = batch.last() else { break };
        next = last.offset + 1;
    }
    Case {
        name: format!("read {body_bytes} B (batches of 1024)"),
        messages: next,
        body_bytes,
        elapsed: start.elapsed(),
    }
}

/// Set in a child process of a multi-process case: `dir queue count batch`.
const CHILD_ENV: &str = "RIFFLE_BENCH_CHILD";
const PROCESS_QUEUES: u32 = 4;

/// A multi-process child: appends `count` 100-byte messages to `queue` in batches of `batch`.
fn child(spec: &str) {
    let fields: Vec<&str> = spec.split(' ').collect();
    let [dir, queue, count, batch] = fields[..] else {
        panic!("bad {CHILD_ENV}: {spec}");
    };
    let store = open(Path::new(dir), FlushMode::Async);
    let queue: u32 = queue.parse().expect("queue");
    let count: u64 = count.parse().expect("count");
    let batch: usize = batch.parse().expect("batch");
    let messages = vec![Message::new(vec![b'x'; 100]).with_key("key"); batch];
    let mut done = 0u64;
    while done < count {
        store
            .append_batch("bench", queue, &messages)
            .expect("append batch");
        done += batch as u64;
    }
    store.close().expect("close");
}

/// `processes` processes append `per_process` 100-byte messages each in batches of `batch`,
/// to their own queue or all to queue 0; the time runs from the first spawn to the last exit.
fn processes_case(
    root: &Path,
    processes: u32,
    shared_queue: bool,
    batch: usize,
    per_process: u64,
) -> Case {
    let dir = tempfile::tempdir_in(root).expect("temp dir");
    let store = Store::open(dir.path(), StoreOptions::default()).expect("open store");
    store
        .create_topic(
            "bench",
            TopicConfig {
                queues: PROCESS_QUEUES,
                ..TopicConfig::default()
            },
        )
        .expect("create topic");
    store.close().expect("close");
    let exe = std::env::current_exe().expect("bench executable");
    let start = Instant::now();
    let children: Vec<_> = (0..processes)
        .map(|p| {
            let queue = if shared_queue { 0 } else { p % PROCESS_QUEUES };
            Command::new(&exe)
                .env(
                    CHILD_ENV,
                    format!("{} {queue} {per_process} {batch}", dir.path().display()),
                )
                .spawn()
                .expect("spawn child")
        })
        .collect();
    for mut c in children {
        assert!(c.wait().expect("wait").success(), "a child failed");
    }
    let elapsed = start.elapsed();
    let store = open(dir.path(), FlushMode::Async);
    let stored: u64 = (0..PROCESS_QUEUES)
        .map(|q| store.queue_info("bench", q).expect("queue info").max_offset)
        .sum();
    assert_eq!(
        stored,
        u64::from(processes) * per_process.div_ceil(batch as u64) * batch as u64
    );
    let kind = if batch == 1 {
        "single".to_string()
    } else {
        format!("batch {batch}")
    };
    let target = if shared_queue {
        "one queue"
    } else {
        "own queues"
    };
    Case {
        name: format!("{processes} proc {target} 100 B {kind}"),
        messages: stored,
        body_bytes: 100,
        elapsed,
    }
}

fn processes_cases(root: &Path) {
    for (batch, per_process) in [(BATCH, 400_000u64), (1, 50_000)] {
        for processes in [1, 2, 4] {
            processes_case(root, processes, false, batch, per_process).print();
        }
        for processes in [2, 4] {
            processes_case(root, processes, true, batch, per_process).print();
        }
    }
}

fn main() {
    if let Ok(spec) = std::env::var(CHILD_ENV) {
        return child(&spec);
    }
    let root = std::env::var_os("RIFFLE_BENCH_DIR").map_or_else(std::env::temp_dir, Into::into);
    if std::env::var("RIFFLE_BENCH_ONLY").as_deref() == Ok("processes") {
        return processes_cases(Path::new(&root));
    }
    for body_bytes in [100usize, 1024] {
        let async_count: u64 = if body_bytes == 100 {
            1_000_000
        } else {
            300_000
        };
        for (mode, label) in [(FlushMode::Async, "async"), (FlushMode::Sync, "sync")] {
            for batched in [false, true] {
                let dir = tempfile::tempdir_in(&root).expect("temp dir");
                let store = open(dir.path(), mode);
                let (count, budget) = match (mode, batched) {
                    (FlushMode::Sync, false) => (5_000, Duration::from_secs(5)),
                    _ => (async_count, Duration::from_secs(20)),
                };
                let kind = if batched { "batch 256" } else { "single" };
                let case = append_case(
                    &store,
                    body_bytes,
                    count,
                    batched,
                    budget,
                    format!("append {body_bytes} B {kind} {label}"),
                );
                case.print();
                if mode == FlushMode::Async && batched {
                    read_case(&store, body_bytes).print();
                }
            }
        }
    }
    processes_cases(Path::new(&root));
}
