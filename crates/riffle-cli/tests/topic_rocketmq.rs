//! End to end through the `riffle` binary, as a user runs it from a shell: `riffle topic
//! create/produce`, `riffle run` of a rocketmq job, `riffle topic consume/describe` — on the
//! embedded store, and the same job with only the name server option added against a real
//! RocketMQ broker (`RIFFLE_TEST_NAMESRV=host:port`, which `.ci/rocketmq` starts; without it
//! those tests say so and skip, unless `RIFFLE_REQUIRE_BROKER=1` makes that a failure).
//!
//! The window aggregation's input and expected rows are those of the Flink-produced conformance
//! case `windows/tumble_sum` (expectations from real Flink 2.3): its CSV input is produced to a
//! topic as JSON lines, the job writes a rocketmq sink topic, and a second job reads that topic
//! back with the rocketmq source and prints rows in Flink's text form for comparison.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn riffle(dir: &Path, args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_riffle"))
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn riffle");
    let mut input = child.stdin.take().expect("stdin");
    if let Some(text) = stdin {
        input.write_all(text.as_bytes()).expect("write stdin");
    }
    drop(input);
    child.wait_with_output().expect("wait for riffle")
}

fn ok(dir: &Path, args: &[&str], stdin: Option<&str>) -> String {
    let out = riffle(dir, args, stdin);
    assert!(
        out.status.success(),
        "riffle {args:?} failed: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A fresh working directory, removed when dropped.
struct WorkDir(PathBuf);

impl WorkDir {
    fn new(name: &str) -> Self {
        let dir =
            std::env::temp_dir().join(format!("riffle-topic-test-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create work dir");
        WorkDir(dir)
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The sections of a conformance case file (`--- name` headers).
fn case_sections(text: &str) -> Vec<(String, Vec<String>)> {
    let mut sections: Vec<(String, Vec<String>)> = Vec::new();
    for line in text.lines() {
        if let Some(name) = line.strip_prefix("--- ") {
            sections.push((name.to_string(), Vec::new()));
        } else if let Some((_, lines)) = sections.last_mut() {
            if !line.trim().is_empty() {
                lines.push(line.to_string());
            }
        }
    }
    sections
}

fn section<'a>(sections: &'a [(String, Vec<String>)], prefix: &str) -> &'a [String] {
    sections
        .iter()
        .find(|(name, _)| name.starts_with(prefix))
        .map(|(_, lines)| lines.as_slice())
        .unwrap_or_else(|| panic!("no section {prefix}"))
}

fn sorted(lines: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut v: Vec<String> = lines.into_iter().collect();
    v.sort();
    v
}

/// The real broker's name server, or `None` (after saying so) when no broker is configured.
fn test_cluster(test: &str) -> Option<String> {
    match std::env::var("RIFFLE_TEST_NAMESRV") {
        Ok(addr) if !addr.trim().is_empty() => Some(addr.trim().to_string()),
        _ => {
            assert!(
                std::env::var("RIFFLE_REQUIRE_BROKER").as_deref() != Ok("1"),
                "{test}: RIFFLE_REQUIRE_BROKER=1 but RIFFLE_TEST_NAMESRV is not set (source .ci/rocketmq first)"
            );
            eprintln!(
                "\n*** SKIPPED {test}: no RocketMQ broker (set RIFFLE_TEST_NAMESRV=host:port, e.g. `source .ci/rocketmq`) ***\n"
            );
            None
        }
    }
}

/// Arguments that point `riffle topic` at the cluster, if any.
fn topic_args<'a>(args: &[&'a str], namesrv: Option<&'a str>) -> Vec<&'a str> {
    let mut all = args.to_vec();
    if let Some(addr) = namesrv {
        all.extend(["--namesrv", addr]);
    }
    all
}

/// A name unique to this run, so tests sharing one broker never see each other's topics.
fn unique(name: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!("{name}_{}_{nanos}", std::process::id())
}

#[test]
fn window_job_reads_and_writes_topics_like_flink() {
    window_job(None);
}

#[test]
fn window_job_reads_and_writes_topics_of_a_real_broker_like_flink() {
    if let Some(namesrv) =
        test_cluster("window_job_reads_and_writes_topics_of_a_real_broker_like_flink")
    {
        window_job(Some(&namesrv));
    }
}

/// The window job on the embedded store, or with only the name server option added on a
/// cluster.
fn window_job(namesrv: Option<&str>) {
    let case =
        std::fs::read_to_string(repo_root().join("compat-tests/cases/windows/tumble_sum.test"))
            .expect("read the conformance case");
    let sections = case_sections(&case);
    let input = section(&sections, "input bids");
    let expected = section(&sections, "expected");
    // The case's CSV rows (ts, price, item) as JSON messages, in file order on one queue so
    // the late row stays late.
    let messages: String = input
        .iter()
        .map(|line| {
            let f: Vec<&str> = line.split(',').collect();
            format!(
                "{{\"ts\":\"{}\",\"price\":{},\"item\":\"{}\"}}\n",
                f[0], f[1], f[2]
            )
        })
        .collect();
    let work = WorkDir::new(if namesrv.is_some() {
        "window_job_cluster"
    } else {
        "window_job"
    });
    let dir = work.0.as_path();
    let (bids, totals) = match namesrv {
        Some(_) => (unique("bids"), unique("totals")),
        None => ("bids".to_string(), "totals".to_string()),
    };
    let cluster_option = namesrv
        .map(|addr| format!("  'rocketmq.client.endpoints' = '{addr}',\n"))
        .unwrap_or_default();
    ok(
        dir,
        &topic_args(&["topic", "create", &bids, "--queues", "1"], namesrv),
        None,
    );
    ok(
        dir,
        &topic_args(&["topic", "produce", &bids], namesrv),
        Some(&messages),
    );
    if namesrv.is_some() {
        wait_for_messages(dir, &bids, namesrv, input.len());
    }
    let job = format!(
        "
CREATE TABLE bids (
  ts TIMESTAMP(3),
  price DECIMAL(10, 2),
  item STRING,
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND
) WITH (
  'connector' = 'rocketmq',
{cluster_option}  'rocketmq.source.topic' = '{bids}',
  'rocketmq.source.group' = 'totals_job',
  'rocketmq.source.startup.scan.mode' = 'earliest',
  'scan.bounded.mode' = 'latest-offset',
  'format' = 'json'
);
CREATE TABLE totals (
  window_start TIMESTAMP(3),
  window_end TIMESTAMP(3),
  total DECIMAL(38, 2),
  cnt BIGINT
) WITH (
  'connector' = 'rocketmq',
{cluster_option}  'rocketmq.sink.topic' = '{totals}',
  'rocketmq.sink.tag' = 'ten-minutes',
  'format' = 'json'
);
INSERT INTO totals
SELECT window_start, window_end, SUM(price) AS total, COUNT(*) AS cnt
FROM TABLE(TUMBLE(TABLE bids, DESCRIPTOR(ts), INTERVAL '10' MINUTES))
GROUP BY window_start, window_end;
"
    );
    std::fs::write(dir.join("job.sql"), job).expect("write job");
    ok(dir, &["run", "job.sql"], None);

    // The sink topic holds one JSON message per window row.
    if namesrv.is_some() {
        wait_for_messages(dir, &totals, namesrv, 2);
    }
    let consumed = ok(
        dir,
        &topic_args(
            &["topic", "consume", &totals, "--from", "earliest"],
            namesrv,
        ),
        None,
    );
    assert_eq!(
        sorted(consumed.lines().map(str::to_string)),
        vec![
            r#"{"window_start":"2020-04-15 08:00:00","window_end":"2020-04-15 08:10:00","total":11.00,"cnt":3}"#,
            r#"{"window_start":"2020-04-15 08:10:00","window_end":"2020-04-15 08:20:00","total":10.00,"cnt":3}"#,
        ]
    );
    // The source committed its group's offsets: all 7 input messages are consumed.
    let described = ok(
        dir,
        &topic_args(&["topic", "describe", &bids], namesrv),
        None,
    );
    assert!(described.contains("totals_job"), "{described}");

    // Read the sink topic back with the rocketmq source and compare with Flink's rows.
    // rocketmq-flink's legacy spelling of the name server, to cover a second generation.
    let legacy_cluster_option = namesrv
        .map(|addr| format!("  'nameServerAddress' = '{addr}',\n"))
        .unwrap_or_default();
    let check = format!(
        "
CREATE TABLE totals (
  window_start TIMESTAMP(3),
  window_end TIMESTAMP(3),
  total DECIMAL(38, 2),
  cnt BIGINT,
  tag STRING METADATA VIRTUAL,
  queue_offset BIGINT METADATA FROM 'queue-offset' VIRTUAL
) WITH (
  'connector' = 'rocketmq',
{legacy_cluster_option}  'topic' = '{totals}',
  'consumerGroup' = 'check',
  'scanStartupMode' = 'earliest',
  'scan.bounded.mode' = 'latest-offset',
  'format' = 'json'
);
SELECT window_start, window_end, total, cnt FROM totals WHERE tag = 'ten-minutes';
"
    );
    std::fs::write(dir.join("check.sql"), check).expect("write check job");
    let printed = ok(dir, &["run", "check.sql"], None);
    assert_eq!(
        sorted(printed.lines().map(str::to_string)),
        sorted(expected.iter().cloned())
    );
}

/// Waits until `topic` on the cluster holds `count` messages (a broker makes fresh messages
/// readable a little after it acknowledged them).
fn wait_for_messages(dir: &Path, topic: &str, namesrv: Option<&str>, count: usize) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let out = riffle(
            dir,
            &topic_args(&["topic", "consume", topic, "--from", "earliest"], namesrv),
            None,
        );
        let seen = String::from_utf8_lossy(&out.stdout).lines().count();
        if seen >= count {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "topic {topic} holds {seen} of {count} messages after 30 s: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        std::thread::sleep(std::time::Duration::from_millis(300));
    }
}

#[test]
fn topic_commands_follow_the_documented_interface() {
    let work = WorkDir::new("interface");
    let dir = work.0.as_path();
    ok(dir, &["topic", "create", "events", "--queues", "3"], None);
    assert!(dir.join(".riffle").is_dir(), "the store lives in ./.riffle");
    let lines = "{\"id\":1}\n{\"id\":2}\n{\"id\":3}\n";
    ok(dir, &["topic", "produce", "events"], Some(lines));
    let all = ok(
        dir,
        &["topic", "consume", "events", "--from", "earliest"],
        None,
    );
    assert_eq!(
        sorted(all.lines().map(str::to_string)),
        vec!["{\"id\":1}", "{\"id\":2}", "{\"id\":3}"]
    );
    assert_eq!(
        ok(
            dir,
            &["topic", "consume", "events", "--from", "latest"],
            None
        ),
        ""
    );
    // An offset applies to every queue: offset 1 skips each queue's first message.
    let from_one = ok(dir, &["topic", "consume", "events", "--from", "1"], None);
    assert_eq!(from_one.lines().count(), 0, "{from_one}");
    let described = ok(dir, &["topic", "describe", "events"], None);
    assert!(described.contains("events"), "{described}");
    let missing = riffle(dir, &["topic", "describe", "nope"], None);
    assert_eq!(missing.status.code(), Some(2));
}

#[test]
fn an_unreachable_name_server_fails_naming_its_address() {
    let work = WorkDir::new("namesrv");
    let dir = work.0.as_path();
    // Port 9 (discard) on loopback: nothing listens there.
    let job = "
CREATE TABLE src (id BIGINT) WITH (
  'connector' = 'rocketmq',
  'rocketmq.client.endpoints' = '127.0.0.1:9',
  'rocketmq.source.topic' = 'src',
  'rocketmq.source.group' = 'g',
  'format' = 'json'
);
SELECT * FROM src;
";
    std::fs::write(dir.join("job.sql"), job).expect("write job");
    let out = riffle(dir, &["run", "job.sql"], None);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("127.0.0.1:9"), "{stderr}");
    assert!(!dir.join(".riffle/topics/src").exists());
    let out = riffle(dir, &["topic", "list", "--namesrv", "127.0.0.1:9"], None);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("127.0.0.1:9"), "{stderr}");
}

#[test]
fn topic_commands_work_against_a_real_broker() {
    let Some(namesrv) = test_cluster("topic_commands_work_against_a_real_broker") else {
        return;
    };
    let namesrv = Some(namesrv.as_str());
    let work = WorkDir::new("cluster_interface");
    let dir = work.0.as_path();
    let topic = unique("events");
    ok(
        dir,
        &topic_args(&["topic", "create", &topic, "--queues", "3"], namesrv),
        None,
    );
    let listed = ok(dir, &topic_args(&["topic", "list"], namesrv), None);
    assert!(listed.contains(&topic), "{listed}");
    let again = riffle(
        dir,
        &topic_args(&["topic", "create", &topic], namesrv),
        None,
    );
    assert_eq!(again.status.code(), Some(2));
    let lines = "{\"id\":1,\"k\":\"a\"}\n{\"id\":2,\"k\":\"b\"}\n{\"id\":3,\"k\":\"a\"}\n";
    ok(
        dir,
        &topic_args(
            &[
                "topic",
                "produce",
                &topic,
                "--key-field",
                "k",
                "--tag",
                "t1",
            ],
            namesrv,
        ),
        Some(lines),
    );
    wait_for_messages(dir, &topic, namesrv, 3);
    let envelopes = ok(
        dir,
        &topic_args(
            &[
                "topic", "consume", &topic, "--from", "earliest", "--format", "json",
            ],
            namesrv,
        ),
        None,
    );
    let mut seen = Vec::new();
    for line in envelopes.lines() {
        let v: serde_json::Value = serde_json::from_str(line).expect("a JSON envelope");
        assert_eq!(v["tag"], "t1", "{line}");
        let body: serde_json::Value =
            serde_json::from_str(v["body"].as_str().expect("a UTF-8 body")).expect("JSON body");
        assert_eq!(v["keys"][0], body["k"], "{line}");
        seen.push(body["id"].as_i64().expect("id"));
    }
    seen.sort();
    assert_eq!(seen, vec![1, 2, 3]);
    // Same key, same queue: both "a" messages share one.
    let latest = ok(
        dir,
        &topic_args(&["topic", "consume", &topic, "--from", "latest"], namesrv),
        None,
    );
    assert_eq!(latest, "");
    // A group commits what it printed; a second run of it prints nothing new.
    let first = ok(
        dir,
        &topic_args(
            &["topic", "consume", &topic, "--group", "riffle_test_group"],
            namesrv,
        ),
        None,
    );
    assert_eq!(first.lines().count(), 3, "{first}");
    let second = ok(
        dir,
        &topic_args(
            &["topic", "consume", &topic, "--group", "riffle_test_group"],
            namesrv,
        ),
        None,
    );
    assert_eq!(second, "");
    let described = ok(
        dir,
        &topic_args(&["topic", "describe", &topic], namesrv),
        None,
    );
    assert!(described.contains("queues: 3"), "{described}");
    ok(
        dir,
        &topic_args(&["topic", "delete", &topic], namesrv),
        None,
    );
    let missing = riffle(
        dir,
        &topic_args(&["topic", "describe", &topic], namesrv),
        None,
    );
    assert_eq!(missing.status.code(), Some(2));
}

#[test]
fn a_checkpointed_job_on_a_real_broker_publishes_once_and_commits_on_checkpoints() {
    let Some(namesrv) = test_cluster(
        "a_checkpointed_job_on_a_real_broker_publishes_once_and_commits_on_checkpoints",
    ) else {
        return;
    };
    let ns = Some(namesrv.as_str());
    let work = WorkDir::new("cluster_checkpoints");
    let dir = work.0.as_path();
    let (input, output, group) = (unique("eo_in"), unique("eo_out"), unique("eo_group"));
    ok(
        dir,
        &topic_args(&["topic", "create", &input, "--queues", "2"], ns),
        None,
    );
    let lines: String = (1..=40).map(|i| format!("{{\"id\":{i}}}\n")).collect();
    ok(
        dir,
        &topic_args(&["topic", "produce", &input], ns),
        Some(&lines),
    );
    wait_for_messages(dir, &input, ns, 40);
    let job = format!(
        "
SET 'execution.checkpointing.interval' = '1 s';
CREATE TABLE src (id BIGINT) WITH (
  'connector' = 'rocketmq',
  'rocketmq.client.endpoints' = '{namesrv}',
  'rocketmq.source.topic' = '{input}',
  'rocketmq.source.group' = '{group}',
  'rocketmq.source.startup.scan.mode' = 'earliest',
  'scan.bounded.mode' = 'latest-offset',
  'format' = 'json'
);
CREATE TABLE dst (id BIGINT) WITH (
  'connector' = 'rocketmq',
  'rocketmq.client.endpoints' = '{namesrv}',
  'rocketmq.sink.topic' = '{output}',
  'format' = 'json'
);
INSERT INTO dst SELECT id FROM src;
"
    );
    std::fs::write(dir.join("job.sql"), job).expect("write job");
    ok(dir, &["run", "job.sql"], None);
    wait_for_messages(dir, &output, ns, 40);
    let envelopes = ok(
        dir,
        &topic_args(
            &[
                "topic", "consume", &output, "--from", "earliest", "--format", "json",
            ],
            ns,
        ),
        None,
    );
    let mut ids = Vec::new();
    for line in envelopes.lines() {
        let v: serde_json::Value = serde_json::from_str(line).expect("a JSON envelope");
        // Published by a committed transaction of the two-phase sink.
        assert!(v["properties"]["RIFFLE_TXN"].is_string(), "{line}");
        let body: serde_json::Value =
            serde_json::from_str(v["body"].as_str().expect("a UTF-8 body")).expect("JSON body");
        ids.push(body["id"].as_i64().expect("id"));
    }
    ids.sort();
    assert_eq!(
        ids,
        (1..=40).collect::<Vec<i64>>(),
        "every row exactly once"
    );
    // The group's offsets were committed on the broker when checkpoints completed.
    let described = ok(dir, &topic_args(&["topic", "describe", &input], ns), None);
    let total = described
        .lines()
        .find(|l| l.starts_with(group.as_str()) && l.contains("total"))
        .unwrap_or_else(|| panic!("group {group} committed nothing: {described}"));
    assert!(total.trim_end().ends_with(" 0"), "lag left: {described}");
}
