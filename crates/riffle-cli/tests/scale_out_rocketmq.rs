//! `riffle run --group` on a real RocketMQ cluster (`RIFFLE_TEST_NAMESRV=host:port`, which
//! `.ci/rocketmq` starts; without it the test says so and skips, unless
//! `RIFFLE_REQUIRE_BROKER=1` makes that a failure): two processes share a stateful job (a
//! regular join feeding group aggregations into upsert topics) whose shuffle, state and
//! coordination topics live on the broker; the sinks end up as after a plain `riffle run`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const ORDERS: usize = 4000;
const CUSTOMERS: usize = 60;

fn namesrv() -> Option<String> {
    match std::env::var("RIFFLE_TEST_NAMESRV") {
        Ok(addr) if !addr.trim().is_empty() => Some(addr.trim().to_string()),
        _ => {
            assert!(
                std::env::var("RIFFLE_REQUIRE_BROKER").as_deref() != Ok("1"),
                "RIFFLE_REQUIRE_BROKER=1 but RIFFLE_TEST_NAMESRV is not set (source .ci/rocketmq first)"
            );
            eprintln!("\n*** SKIPPED scale_out_rocketmq: no RocketMQ broker (set RIFFLE_TEST_NAMESRV=host:port, e.g. `source .ci/rocketmq`) ***\n");
            None
        }
    }
}

fn riffle(dir: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_riffle"));
    command.args(args).current_dir(dir).stdin(Stdio::null());
    command
}

fn ok(dir: &Path, args: &[&str]) -> String {
    let out = riffle(dir, args).output().expect("run riffle");
    assert!(
        out.status.success(),
        "riffle {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A fresh working directory, removed when dropped.
struct WorkDir(PathBuf);

impl Drop for WorkDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn job(namesrv: &str, suffix: &str, prefix: &str) -> String {
    format!(
        "SET 'execution.checkpointing.interval' = '500 ms';
CREATE TABLE orders (order_id BIGINT, customer STRING, amount BIGINT) WITH (
  'connector' = 'rocketmq', 'rocketmq.client.endpoints' = '{namesrv}',
  'rocketmq.source.topic' = 'orders_{suffix}',
  'rocketmq.source.startup.scan.mode' = 'earliest', 'scan.bounded.mode' = 'latest-offset',
  'format' = 'json');
CREATE TABLE customers (customer STRING, region STRING) WITH (
  'connector' = 'rocketmq', 'rocketmq.client.endpoints' = '{namesrv}',
  'rocketmq.source.topic' = 'customers_{suffix}',
  'rocketmq.source.startup.scan.mode' = 'earliest', 'scan.bounded.mode' = 'latest-offset',
  'format' = 'json');
CREATE TABLE per_customer (customer STRING, region STRING, total BIGINT, biggest BIGINT,
  PRIMARY KEY (customer) NOT ENFORCED)
WITH ('connector' = 'rocketmq', 'rocketmq.client.endpoints' = '{namesrv}',
  'rocketmq.sink.topic' = '{prefix}_customers_{suffix}', 'format' = 'json');
INSERT INTO per_customer
SELECT o.customer, c.region, SUM(o.amount), MAX(o.amount)
FROM orders AS o JOIN customers AS c ON o.customer = c.customer
GROUP BY o.customer, c.region;
"
    )
}

/// The latest body per key of an upsert topic, once `expected` keys are readable.
fn upserted(dir: &Path, namesrv: &str, topic: &str, expected: usize) -> BTreeMap<String, String> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let mut previous = BTreeMap::new();
    loop {
        let out = ok(
            dir,
            &[
                "topic", "consume", topic, "--from", "earliest", "--format", "json", "--namesrv",
                namesrv,
            ],
        );
        let mut lines: Vec<serde_json::Value> = out
            .lines()
            .map(|l| serde_json::from_str(l).expect("json line"))
            .collect();
        lines.sort_by_key(|v| (v["queue"].as_u64(), v["offset"].as_u64()));
        let mut latest = BTreeMap::new();
        for v in lines {
            latest.insert(
                v["keys"].to_string(),
                v["body"].as_str().unwrap_or_default().to_string(),
            );
        }
        // A broker makes fresh messages readable a little after it stored them: the contents
        // count once every key is there and two reads agree.
        if latest.len() >= expected && latest == previous {
            return latest;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{topic}: {} of {expected} keys after 60 s",
            latest.len()
        );
        previous = latest;
        std::thread::sleep(std::time::Duration::from_millis(1000));
    }
}

#[test]
fn two_processes_on_a_rocketmq_cluster_equal_the_plain_run() {
    let Some(namesrv) = namesrv() else {
        return;
    };
    let suffix = format!(
        "{}_{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis())
            .unwrap_or_default()
    );
    let dir = std::env::temp_dir().join(format!("riffle-scale-out-cluster-{suffix}"));
    std::fs::create_dir_all(&dir).expect("work dir");
    let work = WorkDir(dir.clone());
    let dir = work.0.as_path();
    let orders: String = (0..ORDERS)
        .map(|i| {
            format!(
                "{{\"order_id\":{i},\"customer\":\"c{}\",\"amount\":{}}}\n",
                (i * 7) % CUSTOMERS,
                (i * 31) % 1000
            )
        })
        .collect();
    let customers: String = (0..CUSTOMERS)
        .map(|i| format!("{{\"customer\":\"c{i}\",\"region\":\"r{}\"}}\n", i % 9))
        .collect();
    std::fs::write(dir.join("orders.jsonl"), orders).expect("orders");
    std::fs::write(dir.join("customers.jsonl"), customers).expect("customers");
    for (topic, queues, file, key) in [
        ("orders", "4", "orders.jsonl", "order_id"),
        ("customers", "2", "customers.jsonl", "customer"),
    ] {
        let topic = format!("{topic}_{suffix}");
        ok(
            dir,
            &["topic", "create", &topic, "--queues", queues, "--namesrv", &namesrv],
        );
        ok(
            dir,
            &[
                "topic", "produce", &topic, "--key-field", key, "--file", file, "--namesrv",
                &namesrv,
            ],
        );
    }
    // The produced messages are readable before a job captures its bounded end offsets.
    upserted(dir, &namesrv, &format!("orders_{suffix}"), ORDERS);

    std::fs::write(dir.join("reference.sql"), job(&namesrv, &suffix, "reference")).unwrap();
    ok(dir, &["run", "reference.sql", "--job-id", "reference"]);
    let reference = upserted(
        dir,
        &namesrv,
        &format!("reference_customers_{suffix}"),
        CUSTOMERS,
    );

    std::fs::write(dir.join("units.sql"), job(&namesrv, &suffix, "units")).unwrap();
    let job_id = format!("units-{suffix}");
    let members: Vec<std::process::Child> = ["a", "b"]
        .iter()
        .map(|name| {
            let log = std::fs::File::create(dir.join(format!("{name}.log"))).expect("log");
            riffle(
                dir,
                &["run", "units.sql", "--job-id", &job_id, "--group", "g"],
            )
            .env("RIFFLE_CLUSTER_LOG", "1")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start riffle")
        })
        .collect();
    for (name, mut member) in ["a", "b"].into_iter().zip(members) {
        let status = member.wait().expect("wait for member");
        let log = std::fs::read_to_string(dir.join(format!("{name}.log"))).unwrap_or_default();
        assert!(status.success(), "member {name} failed: {log}");
    }
    let logs: String = ["a", "b"]
        .iter()
        .map(|n| std::fs::read_to_string(dir.join(format!("{n}.log"))).unwrap_or_default())
        .collect();
    // Both processes formed one group and shared the units.
    assert!(logs.contains(" of 2: units"), "{logs}");
    let units = upserted(dir, &namesrv, &format!("units_customers_{suffix}"), CUSTOMERS);
    assert_eq!(units, reference, "{logs}");
}
