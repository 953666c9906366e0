//! Append and read throughput of the store: `cargo bench -p riffle-store`.
//!
//! Prints one line per case: messages, seconds, messages/s and MB/s of message bodies. Cases:
//! 100-byte and 1-KiB bodies; single appends and batches of 256; async and sync flush; and
//! sequential reads of what was written. Set `RIFFLE_BENCH_DIR` to measure on another disk
//! (default: the system temporary directory). Not run by `cargo test`.

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

fn main() {
    let root = std::env::var_os("RIFFLE_BENCH_DIR").map_or_else(std::env::temp_dir, Into::into);
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
}
