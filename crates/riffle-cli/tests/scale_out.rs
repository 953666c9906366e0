//! `riffle run --group`: a stateful job (a regular join feeding group aggregations into
//! upsert topics) split into per-queue units over shuffle topics gives the same final sink
//! contents as a plain `riffle run` of the same input.

#[path = "support/status.rs"]
mod status_support;

#[path = "support/cli.rs"]
mod cli;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Stdio;

use cli::{ok, riffle, WorkDir};

/// Orders of the one-process test; the kill test has more, so the job runs long enough.
const ORDERS: usize = 20_000;
const ORDERS_KILL: usize = 80_000;
const CUSTOMERS: usize = 300;

/// The job: orders joined with their customer, totals per region and per customer, into
/// upsert topics `<prefix>_regions` and `<prefix>_customers`.
fn job(prefix: &str) -> String {
    format!(
        "SET 'execution.checkpointing.interval' = '300 ms';
SET 'riffle.job-checkpoint.interval' = '500 ms';
SET 'parallelism.default' = '2';
CREATE TABLE orders (order_id BIGINT, customer STRING, amount BIGINT) WITH (
  'connector' = 'rocketmq', 'rocketmq.source.topic' = 'orders',
  'rocketmq.source.startup.scan.mode' = 'earliest', 'scan.bounded.mode' = 'latest-offset',
  'format' = 'json');
CREATE TABLE customers (customer STRING, region STRING) WITH (
  'connector' = 'rocketmq', 'rocketmq.source.topic' = 'customers',
  'rocketmq.source.startup.scan.mode' = 'earliest', 'scan.bounded.mode' = 'latest-offset',
  'format' = 'json');
CREATE TABLE regions (region STRING, orders BIGINT, total BIGINT,
  PRIMARY KEY (region) NOT ENFORCED)
WITH ('connector' = 'rocketmq', 'rocketmq.sink.topic' = '{prefix}_regions', 'format' = 'json');
CREATE TABLE per_customer (customer STRING, region STRING, total BIGINT, biggest BIGINT,
  PRIMARY KEY (customer) NOT ENFORCED)
WITH ('connector' = 'rocketmq', 'rocketmq.sink.topic' = '{prefix}_customers', 'format' = 'json');
CREATE TEMPORARY VIEW enriched AS
SELECT o.order_id, o.customer, o.amount, c.region
FROM orders AS o JOIN customers AS c ON o.customer = c.customer;
EXECUTE STATEMENT SET BEGIN
INSERT INTO regions SELECT region, COUNT(*), SUM(amount) FROM enriched GROUP BY region;
INSERT INTO per_customer SELECT customer, region, SUM(amount), MAX(amount)
  FROM enriched GROUP BY customer, region;
END;
"
    )
}

/// A fresh directory with the input topics (orders in 4 queues, customers in 2).
fn prepare(name: &str, orders: usize) -> WorkDir {
    let dir = std::env::temp_dir().join(format!("riffle-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let work = WorkDir(dir.clone());
    let orders: String = (0..orders)
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
    std::fs::write(dir.join("orders.jsonl"), orders).unwrap();
    std::fs::write(dir.join("customers.jsonl"), customers).unwrap();
    ok(&dir, &["topic", "create", "orders", "--queues", "4"]);
    ok(&dir, &["topic", "create", "customers", "--queues", "2"]);
    ok(
        &dir,
        &[
            "topic",
            "produce",
            "orders",
            "--key-field",
            "order_id",
            "--file",
            "orders.jsonl",
        ],
    );
    ok(
        &dir,
        &[
            "topic",
            "produce",
            "customers",
            "--key-field",
            "customer",
            "--file",
            "customers.jsonl",
        ],
    );
    work
}

/// The latest body per key of an upsert topic.
fn upserted(dir: &Path, topic: &str) -> BTreeMap<String, String> {
    let out = ok(
        dir,
        &[
            "topic", "consume", topic, "--from", "earliest", "--format", "json",
        ],
    );
    let mut latest = BTreeMap::new();
    let mut lines: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).expect("json line"))
        .collect();
    // Within a queue the offsets order a key's messages.
    lines.sort_by_key(|v| (v["queue"].as_u64(), v["offset"].as_u64()));
    for v in lines {
        latest.insert(
            v["keys"].to_string(),
            v["body"].as_str().unwrap_or_default().to_string(),
        );
    }
    latest
}

/// The plain run's final contents of both sinks.
fn reference(dir: &Path) -> (BTreeMap<String, String>, BTreeMap<String, String>) {
    std::fs::write(dir.join("reference.sql"), job("reference")).unwrap();
    ok(dir, &["run", "reference.sql", "--job-id", "reference"]);
    let regions = upserted(dir, "reference_regions");
    let customers = upserted(dir, "reference_customers");
    assert_eq!(regions.len(), 9);
    assert_eq!(customers.len(), CUSTOMERS);
    (regions, customers)
}

#[test]
fn one_process_group_equals_the_plain_run() {
    let work = prepare("scale-out-one", ORDERS);
    let dir = work.0.as_path();
    let (regions, customers) = reference(dir);
    std::fs::write(dir.join("units.sql"), job("units")).unwrap();
    ok(
        dir,
        &["run", "units.sql", "--job-id", "units", "--group", "g"],
    );
    assert_eq!(upserted(dir, "units_regions"), regions);
    assert_eq!(upserted(dir, "units_customers"), customers);
    // Shuffle topics are named after the job and the operators they connect.
    let topics = ok(dir, &["topic", "list"]);
    assert!(
        topics
            .lines()
            .filter_map(|line| line.split_whitespace().next())
            .any(|t| t.starts_with("units-") && t.ends_with("-shuffle")),
        "{topics}"
    );
    let status = ok(dir, &["job", "status", "units", "--group", "g"]);
    insta::assert_snapshot!(
        "finished_job_status_text",
        status_support::normalize_text(&status)
    );
    let json: serde_json::Value = serde_json::from_str(&ok(
        dir,
        &["job", "status", "units", "--group", "g", "--format", "json"],
    ))
    .expect("status json");
    insta::assert_json_snapshot!(
        "finished_job_status_json",
        status_support::normalize_json(json)
    );
    assert!(status.contains("0 process(es)"), "{status}");
    assert!(
        !status.contains("waiting") && !status.contains("running"),
        "{status}"
    );
    assert!(status.contains("group_aggregate("), "{status}");
    // Every input queue was consumed to its end.
    assert!(
        status.contains("lag 0") && !status.contains("lag 1"),
        "{status}"
    );
    // A finished job run again has nothing left to do.
    ok(
        dir,
        &["run", "units.sql", "--job-id", "units", "--group", "g"],
    );
    assert_eq!(upserted(dir, "units_regions"), regions);
}

fn spawn_member(dir: &Path, name: &str) -> std::process::Child {
    let log = std::fs::File::create(dir.join(format!("{name}.log"))).expect("log file");
    riffle(
        dir,
        &["run", "units.sql", "--job-id", "units", "--group", "g"],
    )
    .env("RIFFLE_CLUSTER_LOG", "1")
    .stdout(Stdio::null())
    .stderr(log)
    .spawn()
    .expect("start riffle")
}

/// Waits until `riffle job status` shows `n` processes; returns the status text.
fn wait_for_members(dir: &Path, n: usize) -> String {
    wait_for_member_count(dir, &format!("{n}"), |count| count == n)
}

/// Waits until the number of processes `riffle job status` shows is accepted; returns the
/// status text.
fn wait_for_member_count(dir: &Path, wanted: &str, accept: impl Fn(usize) -> bool) -> String {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        let out = riffle(dir, &["job", "status", "units", "--group", "g"])
            .output()
            .expect("job status");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let count = text
            .split_once(" process(es)")
            .and_then(|(before, _)| before.rsplit(' ').next())
            .and_then(|n| n.parse().ok());
        if count.is_some_and(&accept) {
            return text;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "never saw {wanted} processes: {text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

/// The done-when test of scale-out: three processes share the job, one is killed with
/// SIGKILL in the middle, a fourth joins later; the sinks end up exactly as after a plain run.
#[test]
fn three_processes_one_killed_one_joining_equal_the_plain_run() {
    let work = prepare("scale-out-kill", ORDERS_KILL);
    let dir = work.0.as_path();
    let (regions, customers) = reference(dir);
    std::fs::write(dir.join("units.sql"), job("units")).unwrap();
    let mut members: Vec<std::process::Child> = ["a", "b", "c"]
        .iter()
        .map(|n| spawn_member(dir, n))
        .collect();
    let status = wait_for_members(dir, 3);
    assert!(
        status.contains("running") || status.contains("waiting"),
        "{status}"
    );
    // Let every member work for a while, then kill one in the middle of the job
    // (`RIFFLE_KILL_AFTER_MS` varies the moment when the test is repeated to hunt races).
    let kill_after = std::env::var("RIFFLE_KILL_AFTER_MS")
        .ok()
        .and_then(|ms| ms.parse().ok())
        .unwrap_or(2000);
    std::thread::sleep(std::time::Duration::from_millis(kill_after));
    assert!(
        members
            .iter_mut()
            .all(|m| m.try_wait().expect("poll").is_none()),
        "the job ended before the kill"
    );
    members[1].kill().expect("SIGKILL");
    members[1].wait().expect("reap");
    // The group sees the death before the fourth member joins. Under load the survivors may
    // finish the job between two polls of the status, so fewer than 2 also counts.
    wait_for_member_count(dir, "at most 2", |count| count <= 2);
    members.push(spawn_member(dir, "d"));
    for (i, m) in members.iter_mut().enumerate() {
        if i == 1 {
            continue;
        }
        let status = m.wait().expect("wait for member");
        let name = ["a", "b", "c", "d"][i];
        let log = std::fs::read_to_string(dir.join(format!("{name}.log"))).unwrap_or_default();
        assert!(status.success(), "member {name} failed: {log}");
    }
    let logs: String = ["a", "b", "c", "d"]
        .iter()
        .map(|n| std::fs::read_to_string(dir.join(format!("{n}.log"))).unwrap_or_default())
        .collect();
    // The survivors took the killed member's units over.
    assert!(logs.contains("of 2: units"), "{logs}");
    assert!(logs.contains("of 3: units"), "{logs}");
    // Job-wide checkpoints went on through the kill.
    let status = ok(dir, &["job", "status", "units", "--group", "g"]);
    assert!(
        status.contains("job checkpoint: ") && !status.contains("none complete"),
        "{status}"
    );
    assert_same(
        "per-region",
        &regions,
        &upserted(dir, "units_regions"),
        &logs,
    );
    assert_same(
        "per-customer",
        &customers,
        &upserted(dir, "units_customers"),
        &logs,
    );
}

/// Fails naming the keys whose latest value differs from the plain run's (and the members'
/// logs), instead of printing two whole sinks.
fn assert_same(
    sink: &str,
    expected: &BTreeMap<String, String>,
    actual: &BTreeMap<String, String>,
    logs: &str,
) {
    let keys: std::collections::BTreeSet<&String> = expected.keys().chain(actual.keys()).collect();
    let differing: Vec<String> = keys
        .into_iter()
        .filter(|k| expected.get(*k) != actual.get(*k))
        .map(|k| {
            format!(
                "{k}: plain {:?}, group {:?}",
                expected.get(k),
                actual.get(k)
            )
        })
        .collect();
    assert!(
        differing.is_empty(),
        "the {sink} sink differs from the plain run in {} of {} keys:\n{}\nlogs:\n{logs}",
        differing.len(),
        expected.len(),
        differing.join("\n")
    );
}
