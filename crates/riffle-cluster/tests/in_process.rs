//! A job split into units and run in one process gives the same sink contents as the job run
//! as one graph: a TUMBLE window aggregation (watermarks cross the shuffle topic as markers)
//! and a regular join followed by a group aggregation into an upsert topic.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use riffle_cluster::{ClusterJob, Solo};
use riffle_runtime::{PrintTarget, RunOptions, StopHandle};
use riffle_store::{queue_for_key, Message, TopicConfig};

fn store(dir: &Path) -> Arc<riffle_store::Store> {
    riffle_connectors::rocketmq::shared_store(dir).expect("open store")
}

/// Appends JSON rows keyed by `key` to `topic` (created with `queues` queues).
fn produce(dir: &Path, topic: &str, queues: u32, rows: &[(String, String)]) {
    let s = store(dir);
    s.create_topic(
        topic,
        TopicConfig {
            queues,
            ..TopicConfig::default()
        },
    )
    .expect("create topic");
    let mut by_queue: BTreeMap<u32, Vec<Message>> = BTreeMap::new();
    for (key, body) in rows {
        by_queue
            .entry(queue_for_key(key, queues))
            .or_default()
            .push(Message::new(body.clone()).with_key(key.clone()));
    }
    for (q, messages) in by_queue {
        s.append_batch(topic, q, &messages).expect("append");
    }
}

/// Every message of `topic`: (keys, body), sorted.
fn contents(dir: &Path, topic: &str) -> Vec<(String, String)> {
    let s = store(dir);
    let queues = s.topic_config(topic).expect("sink topic").queues;
    let mut out = Vec::new();
    for q in 0..queues {
        for m in s.read(topic, q, 0, 1_000_000).expect("read") {
            out.push((
                m.message.keys.join(" "),
                String::from_utf8_lossy(&m.message.body).into_owned(),
            ));
        }
    }
    out.sort();
    out
}

/// The latest body per key of an upsert topic (keys are in one queue each, in order).
fn upserted(dir: &Path, topic: &str) -> BTreeMap<String, String> {
    let s = store(dir);
    let queues = s.topic_config(topic).expect("sink topic").queues;
    let mut out = BTreeMap::new();
    for q in 0..queues {
        for m in s.read(topic, q, 0, 1_000_000).expect("read") {
            out.insert(
                m.message.keys.join(" "),
                String::from_utf8_lossy(&m.message.body).into_owned(),
            );
        }
    }
    out
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

fn run_single(sql: &str) {
    let graph = riffle_plan::plan_sql(sql).unwrap_or_else(|d| panic!("{d:?}"));
    runtime()
        .block_on(riffle_runtime::run(
            &graph,
            RunOptions {
                print_target: PrintTarget::Stdout,
                stop: StopHandle::default(),
                job_id: None,
                from_savepoint: None,
            },
        ))
        .expect("single run");
}

/// The units of `sql` as job `job`, checkpointed every 100 ms into `checkpoints`.
fn checkpointed_job(sql: &str, job: &str, checkpoints: &Path) -> ClusterJob {
    let mut graph = riffle_plan::plan_sql(sql).unwrap_or_else(|d| panic!("{d:?}"));
    graph
        .config
        .insert("execution.checkpointing.interval".into(), "100 ms".into());
    graph.config.insert(
        "execution.checkpointing.dir".into(),
        checkpoints.display().to_string(),
    );
    graph.config.insert(
        riffle_cluster::job_checkpoint::INTERVAL_OPTION.into(),
        "200 ms".into(),
    );
    ClusterJob::new(&graph, job, PrintTarget::Stdout).expect("split")
}

/// The transaction (unit checkpoint) a shuffle message was committed in.
fn transaction_of(message: &Message) -> u64 {
    let txn = &message.properties[riffle_connectors::rocketmq::transaction::TRANSACTION_PROPERTY];
    txn.rsplit('/')
        .next()
        .and_then(|n| n.parse().ok())
        .expect("transaction id")
}

/// The producer unit of a shuffle message.
fn producer_of(message: &Message) -> usize {
    let p = &message.properties;
    let text = p
        .get(riffle_cluster::shuffle::PRODUCER_PROPERTY)
        .or_else(|| p.get(riffle_cluster::shuffle::WATERMARK_PROPERTY))
        .or_else(|| p.get(riffle_cluster::job_checkpoint::CUT_PROPERTY))
        .expect("a message naming its producer");
    text.split(':')
        .next()
        .and_then(|p| p.parse().ok())
        .expect("producer")
}

/// Checks that every recorded job checkpoint of `cluster` is a consistent cut: for each
/// consumer unit's cut of job checkpoint `N`, in every shuffle queue it reads, each producer's
/// messages before the recorded offset are exactly those the producer committed up to its own
/// cut of `N` — the offset is right after the producer's cut marker `N`, every message of the
/// producer before it was committed in a checkpoint at or before the producer's cut, every
/// one after it later. A producer that had ended has no rows after the offset. Returns the
/// newest complete job checkpoint and how many (consumer, queue, producer) cuts were checked.
fn assert_consistent_cuts(dir: &Path, cluster: &ClusterJob) -> (u64, usize) {
    let s = store(dir);
    let seen = riffle_cluster::job_checkpoint::read_all(s.as_ref(), &cluster.plan.job)
        .expect("job checkpoints");
    let mut checked = 0;
    for (n, cuts) in &seen.cuts {
        if *n <= seen.complete {
            let units = cluster.plan.units();
            assert!(
                units
                    .iter()
                    .all(|u| cuts.contains_key(u) || cluster.is_finished(*u)),
                "job checkpoint {n} completed without every unit: {cuts:?}"
            );
        }
        for (consumer, cut) in cuts {
            assert_eq!(cut.job_checkpoint, *n);
            for input in &cut.inputs {
                let shuffle = cluster
                    .plan
                    .shuffles
                    .iter()
                    .find(|sh| sh.topic == input.topic && sh.to_stage == consumer.stage)
                    .expect("the input's shuffle");
                let producer = riffle_cluster::UnitId {
                    stage: shuffle.from_stage,
                    unit: input.producer,
                };
                let messages: Vec<_> = s
                    .read(&input.topic, input.queue, 0, 10_000_000)
                    .expect("read shuffle queue")
                    .into_iter()
                    .filter(|m| producer_of(&m.message) == input.producer)
                    .collect();
                let what = format!(
                    "job checkpoint {n}: unit {consumer} reading {producer} in {}[{}] up to {}",
                    input.topic, input.queue, input.offset
                );
                if input.ended {
                    assert!(
                        messages.iter().all(|m| m.offset < input.offset
                            || m.message
                                .properties
                                .contains_key(riffle_cluster::shuffle::WATERMARK_PROPERTY)
                            || m.message
                                .properties
                                .contains_key(riffle_cluster::job_checkpoint::CUT_PROPERTY)),
                        "{what}: rows of the ended producer after the cut"
                    );
                    checked += 1;
                    continue;
                }
                let own = cuts
                    .get(&producer)
                    .unwrap_or_else(|| panic!("{what}: the producer did not record the cut"));
                let marker = messages
                    .iter()
                    .find(|m| m.offset + 1 == input.offset)
                    .unwrap_or_else(|| {
                        panic!("{what}: no message of the producer before the offset")
                    });
                assert_eq!(
                    marker
                        .message
                        .properties
                        .get(riffle_cluster::job_checkpoint::CUT_PROPERTY),
                    Some(&format!("{}:{n}", input.producer)),
                    "{what}: not the producer's cut marker"
                );
                assert_eq!(
                    transaction_of(&marker.message),
                    own.unit_checkpoint,
                    "{what}"
                );
                for m in &messages {
                    let txn = transaction_of(&m.message);
                    if m.offset < input.offset {
                        assert!(
                            txn <= own.unit_checkpoint,
                            "{what}: message {} of checkpoint {txn} is in the cut",
                            m.offset
                        );
                    } else {
                        assert!(
                            txn > own.unit_checkpoint,
                            "{what}: message {} of checkpoint {txn} is not in the cut",
                            m.offset
                        );
                    }
                }
                checked += 1;
            }
        }
    }
    (seen.complete, checked)
}

fn run_units(sql: &str, job: &str, checkpoints: &Path) -> ClusterJob {
    let cluster = checkpointed_job(sql, job, checkpoints);
    runtime()
        .block_on(cluster.run(&Solo, &StopHandle::default()))
        .expect("units run");
    cluster
}

fn orders_sql(dir: &Path, sink: &str) -> String {
    windows_sql(dir, "orders", sink, 4)
}

fn windows_sql(dir: &Path, topic: &str, sink: &str, parallelism: usize) -> String {
    let d = dir.display();
    format!(
        "SET 'parallelism.default' = '{parallelism}';
SET 'riffle.shuffle.queues' = '3';
CREATE TABLE orders (customer STRING, amount INT, ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
WITH ('connector' = 'rocketmq', 'rocketmq.source.topic' = '{topic}', 'riffle.store.dir' = '{d}',
  'rocketmq.source.startup.scan.mode' = 'earliest', 'scan.bounded.mode' = 'latest-offset',
  'format' = 'json');
CREATE TABLE per_minute (customer STRING, window_start TIMESTAMP(3), orders BIGINT, total INT)
WITH ('connector' = 'rocketmq', 'rocketmq.sink.topic' = '{sink}', 'riffle.store.dir' = '{d}',
  'rocketmq.sink.key.columns' = 'customer', 'rocketmq.sink.key.write.to.body' = 'true',
  'format' = 'json');
INSERT INTO per_minute
SELECT customer, window_start, COUNT(*) AS orders, SUM(amount) AS total
FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '1' MINUTE))
GROUP BY customer, window_start, window_end;
"
    )
}

#[test]
fn tumble_window_over_units_equals_the_single_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    let rows: Vec<(String, String)> = (0..3000)
        .map(|i| {
            let customer = format!("c{}", i % 13);
            // Every customer's rows are in time order; times span about 8 minutes.
            let second = i / 6;
            let ts = format!("2024-01-01 00:{:02}:{:02}.000", second / 60, second % 60);
            let body = format!(
                r#"{{"customer":"{customer}","amount":{},"ts":"{ts}"}}"#,
                i % 7
            );
            (customer, body)
        })
        .collect();
    produce(dir.path(), "orders", 4, &rows);
    run_single(&orders_sql(dir.path(), "single_out"));
    let cluster = run_units(
        &orders_sql(dir.path(), "units_out"),
        "tumble",
        &dir.path().join("checkpoints"),
    );
    // The source stage's 4 units (one per queue) and the window stage's.
    let units: Vec<usize> = cluster.plan.stages.iter().map(|s| s.units).collect();
    assert_eq!(units, vec![4, 3], "{:?}", cluster.plan);
    assert_eq!(cluster.plan.shuffles.len(), 1);
    assert_eq!(cluster.plan.shuffles[0].topic, "tumble-3-4-shuffle");
    assert_consistent_cuts(dir.path(), &cluster);
    let single = contents(dir.path(), "single_out");
    assert!(single.len() > 50, "{}", single.len());
    assert_eq!(single, contents(dir.path(), "units_out"));
}

/// Late rows are dropped by the window stage exactly as in the single run: the producer's
/// watermark markers reach every queue in order with its rows.
#[test]
fn late_rows_are_dropped_as_in_the_single_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    let rows: Vec<(String, String)> = (0..2000)
        .map(|i| {
            let customer = format!("c{}", i % 7);
            // Every 40th row is two minutes late.
            let second = i / 4 - if i % 40 == 39 { 120 } else { 0 };
            let second = second.max(0);
            let ts = format!("2024-01-01 00:{:02}:{:02}.000", second / 60, second % 60);
            let body = format!(r#"{{"customer":"{customer}","amount":1,"ts":"{ts}"}}"#);
            (customer, body)
        })
        .collect();
    produce(dir.path(), "late", 1, &rows);
    run_single(&windows_sql(dir.path(), "late", "late_single", 1));
    let cluster = run_units(
        &windows_sql(dir.path(), "late", "late_units", 1),
        "late",
        &dir.path().join("checkpoints"),
    );
    let units: Vec<usize> = cluster.plan.stages.iter().map(|s| s.units).collect();
    assert_eq!(units, vec![1, 3]);
    let single = contents(dir.path(), "late_single");
    let counted: i64 = single
        .iter()
        .map(|(_, body)| {
            let v: serde_json::Value = serde_json::from_str(body).expect("json");
            v["orders"].as_i64().expect("orders")
        })
        .sum();
    assert!(counted < 2000, "no row was late: {counted}");
    assert_eq!(single, contents(dir.path(), "late_units"));
}

fn join_sql(dir: &Path, sink: &str) -> String {
    let d = dir.display();
    format!(
        "SET 'parallelism.default' = '3';
CREATE TABLE orders (order_id BIGINT, customer STRING, amount INT)
WITH ('connector' = 'rocketmq', 'rocketmq.source.topic' = 'jorders', 'riffle.store.dir' = '{d}',
  'rocketmq.source.startup.scan.mode' = 'earliest', 'scan.bounded.mode' = 'latest-offset',
  'format' = 'json');
CREATE TABLE customers (customer STRING, region STRING)
WITH ('connector' = 'rocketmq', 'rocketmq.source.topic' = 'jcustomers', 'riffle.store.dir' = '{d}',
  'rocketmq.source.startup.scan.mode' = 'earliest', 'scan.bounded.mode' = 'latest-offset',
  'format' = 'json');
CREATE TABLE per_region (region STRING, orders BIGINT, total BIGINT,
  PRIMARY KEY (region) NOT ENFORCED)
WITH ('connector' = 'rocketmq', 'rocketmq.sink.topic' = '{sink}', 'riffle.store.dir' = '{d}',
  'format' = 'json');
INSERT INTO per_region
SELECT c.region, COUNT(*) AS orders, SUM(CAST(o.amount AS BIGINT)) AS total
FROM orders AS o JOIN customers AS c ON o.customer = c.customer
GROUP BY c.region;
"
    )
}

#[test]
fn join_and_aggregation_over_units_equal_the_single_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    let orders: Vec<(String, String)> = (0..2000)
        .map(|i| {
            let customer = format!("c{}", i % 50);
            let body = format!(
                r#"{{"order_id":{i},"customer":"{customer}","amount":{}}}"#,
                i % 11
            );
            (i.to_string(), body)
        })
        .collect();
    let customers: Vec<(String, String)> = (0..50)
        .map(|i| {
            let body = format!(r#"{{"customer":"c{i}","region":"r{}"}}"#, i % 6);
            (format!("c{i}"), body)
        })
        .collect();
    produce(dir.path(), "jorders", 3, &orders);
    produce(dir.path(), "jcustomers", 2, &customers);
    run_single(&join_sql(dir.path(), "single_regions"));
    let cluster = run_units(
        &join_sql(dir.path(), "units_regions"),
        "join",
        &dir.path().join("checkpoints"),
    );
    assert_consistent_cuts(dir.path(), &cluster);
    let single = upserted(dir.path(), "single_regions");
    assert_eq!(single.len(), 6);
    assert_eq!(single, upserted(dir.path(), "units_regions"));
}

/// `yyyy-MM-dd HH:mm:ss` (UTC) of epoch seconds `secs`.
fn utc_date_time(secs: i64) -> String {
    // Howard Hinnant's civil-from-days.
    let (days, rest) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}",
        rest / 3600,
        rest / 60 % 60,
        rest % 60
    )
}

fn now_millis() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or_default()
}

/// The newest completed checkpoint of `unit` of job `job` under `checkpoints`.
fn newest_checkpoint(checkpoints: &Path, job: &str, unit: riffle_cluster::UnitId) -> u64 {
    std::fs::read_dir(checkpoints.join(unit.job_id(job)))
        .map(|entries| {
            entries
                .flatten()
                .filter(|e| e.path().join("_metadata").is_file())
                .filter_map(|e| e.file_name().to_str()?.strip_prefix("chk-")?.parse().ok())
                .max()
                .unwrap_or(0)
        })
        .unwrap_or(0)
}

/// Waits (polling) until `ready` holds; fails the test after two minutes.
async fn until(what: &str, mut ready: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while !ready() {
        assert!(std::time::Instant::now() < deadline, "never: {what}");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// Units move between members while the job runs: member A starts alone, B joins once A
/// checkpointed (A hands half of its units over), A stops and leaves once B checkpointed
/// units of its own (B takes the rest and resumes them from their checkpoints). The result
/// equals the single run. The job cannot outrun these steps: its sources read up to a stop
/// time, and end only at the messages the test appends after the last step.
#[test]
fn units_move_between_members_exactly_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let orders: Vec<(String, String)> = (0..20_000)
        .map(|i| {
            let customer = format!("c{}", (i * 7) % 200);
            let body = format!(
                r#"{{"order_id":{i},"customer":"{customer}","amount":{}}}"#,
                (i * 31) % 1000
            );
            (i.to_string(), body)
        })
        .collect();
    let customers: Vec<(String, String)> = (0..200)
        .map(|i| {
            let body = format!(r#"{{"customer":"c{i}","region":"r{}"}}"#, i % 6);
            (format!("c{i}"), body)
        })
        .collect();
    produce(dir.path(), "jorders", 3, &orders);
    produce(dir.path(), "jcustomers", 2, &customers);
    run_single(&join_sql(dir.path(), "single_moves"));

    // Every input message is older than the stop time; the sources wait for one after it.
    let stop_secs = now_millis() / 1000 + 2;
    let sql = join_sql(dir.path(), "moved").replace(
        "'scan.bounded.mode' = 'latest-offset'",
        &format!(
            "'rocketmq.source.stop.offset.timestamp' = '{}'",
            utc_date_time(stop_secs)
        ),
    );
    let checkpoints = dir.path().join("checkpoints");
    let a = checkpointed_job(&sql, "moves", &checkpoints);
    let b = checkpointed_job(&sql, "moves", &checkpoints);
    let units = a.plan.units();
    let group_a = a.membership(Some("g")).expect("join a");
    let (stop_a, stop_b) = (StopHandle::default(), StopHandle::default());
    let newest = |u| newest_checkpoint(&checkpoints, "moves", u);
    runtime().block_on(async {
        let run_a = async {
            a.run(group_a.as_ref(), &stop_a).await.expect("member a");
            drop(group_a);
        };
        let run_b = async {
            until("a checkpointed", || units.iter().any(|u| newest(*u) > 0)).await;
            let group_b = b.membership(Some("g")).expect("join b");
            let control = async {
                // b resumed a unit it took over and checkpointed it.
                let mut first_seen: BTreeMap<riffle_cluster::UnitId, u64> = BTreeMap::new();
                until("b checkpointed a unit it took over", || {
                    b.running().into_iter().any(|u| {
                        let now = newest(u);
                        now > *first_seen.entry(u).or_insert(now)
                    })
                })
                .await;
                assert!(
                    !a.running().is_empty() && a.running().len() < units.len(),
                    "{:?}",
                    a.running()
                );
                stop_a.stop();
                until("a left", || {
                    group_b
                        .assignment(&units)
                        .is_ok_and(|s| s.members.len() == 1)
                })
                .await;
                // Now the sources may end: a message after the stop time in every queue.
                let wait = (stop_secs * 1000 + 1 - now_millis()).max(0) as u64;
                tokio::time::sleep(std::time::Duration::from_millis(wait)).await;
                let s = store(dir.path());
                for (topic, queues) in [("jorders", 3), ("jcustomers", 2)] {
                    for q in 0..queues {
                        s.append_batch(topic, q, &[Message::new("{}")])
                            .expect("append the end");
                    }
                }
            };
            let (result, ()) = tokio::join!(b.run(group_b.as_ref(), &stop_b), control);
            result.expect("member b");
        };
        tokio::join!(run_a, run_b);
    });
    assert!(units.iter().all(|u| b.is_finished(*u)));
    let (complete, checked) = assert_consistent_cuts(dir.path(), &b);
    assert!(
        complete >= 1 && checked > 0,
        "{complete} complete, {checked} cuts checked"
    );
    let single = upserted(dir.path(), "single_moves");
    assert_eq!(single.len(), 6);
    assert_eq!(single, upserted(dir.path(), "moved"));
}

/// A member alone in its group waits until the group has been unchanged for the settle time
/// before it starts units: processes started together then share the units from the start.
#[test]
fn a_member_alone_waits_the_settle_time_before_it_starts_units() {
    let dir = tempfile::tempdir().expect("tempdir");
    let orders: Vec<(String, String)> = (0..100)
        .map(|i| {
            let body = format!(r#"{{"customer":"c{i}","amount":{i},"ts":"2024-01-01 00:00:00"}}"#);
            (i.to_string(), body)
        })
        .collect();
    produce(dir.path(), "settle_orders", 3, &orders);
    let sql = format!(
        "SET 'riffle.group.settle-time' = '1 h';\n{}",
        windows_sql(dir.path(), "settle_orders", "settle_out", 2)
    );
    let checkpoints = dir.path().join("checkpoints");
    let job = checkpointed_job(&sql, "settle", &checkpoints);
    let group = job.membership(Some("g")).expect("join");
    let stop = StopHandle::default();
    runtime().block_on(async {
        let watch = async {
            // Well past the group's first looks (every 100 ms), far short of the settle time.
            for _ in 0..15 {
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                assert!(job.running().is_empty(), "{:?} started", job.running());
            }
            stop.stop();
        };
        let (result, ()) = tokio::join!(job.run(group.as_ref(), &stop), watch);
        result.expect("member");
    });
    assert!(job.plan.units().iter().all(|u| !job.is_finished(*u)));

    let bad = sql.replace("'1 h'", "'soon'");
    let mut graph = riffle_plan::plan_sql(&bad).unwrap_or_else(|d| panic!("{d:?}"));
    graph.config.insert(
        "execution.checkpointing.dir".into(),
        checkpoints.display().to_string(),
    );
    let error = ClusterJob::new(&graph, "settle-bad", PrintTarget::Stdout)
        .err()
        .expect("an invalid settle time is an error");
    assert!(
        error.message.contains("'riffle.group.settle-time'"),
        "{}",
        error.message
    );
}

/// True when a completed checkpoint (`_metadata`) exists anywhere below `dir`.
fn has_completed_checkpoint(dir: &std::path::Path) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    entries.flatten().any(|e| {
        let path = e.path();
        if path.is_dir() {
            has_completed_checkpoint(&path)
        } else {
            e.file_name() == "_metadata"
        }
    })
}

/// Whether a completed checkpoint of a unit of `stage` of job `job` holds an SST file.
fn has_rocksdb_files(dir: &std::path::Path, job: &str, stage: usize) -> bool {
    let Ok(units) = std::fs::read_dir(dir) else {
        return false;
    };
    units
        .flatten()
        .filter(|u| {
            u.file_name()
                .to_string_lossy()
                .starts_with(&format!("{job}.{stage}-"))
        })
        .flat_map(|u| std::fs::read_dir(u.path()).into_iter().flatten().flatten())
        .filter(|chk| chk.path().join("_metadata").is_file())
        .flat_map(|chk| {
            std::fs::read_dir(chk.path())
                .into_iter()
                .flatten()
                .flatten()
        })
        .flat_map(|db| std::fs::read_dir(db.path()).into_iter().flatten().flatten())
        .any(|f| f.file_name().to_string_lossy().ends_with(".sst"))
}

/// A job stopped in the middle resumes on "another machine": the local checkpoint directory
/// is gone, every unit restores its newest checkpoint from its stage's state topic.
#[test]
fn units_resume_from_their_state_topics_without_local_checkpoints() {
    resume_from_state_topics("hashmap");
}

#[test]
fn rocksdb_units_resume_from_their_state_topics_without_local_checkpoints() {
    resume_from_state_topics("rocksdb");
}

/// Stops a job whose units keep their state in `backend` once a unit completed a checkpoint,
/// deletes every local checkpoint, runs it again to its end from the state topics alone, and
/// compares the result with a single-process run.
fn resume_from_state_topics(backend: &str) {
    use std::time::Duration;

    let dir = tempfile::tempdir().expect("tempdir");
    let orders: Vec<(String, String)> = (0..40_000)
        .map(|i| {
            let body = format!(
                r#"{{"order_id":{i},"customer":"c{}","amount":{}}}"#,
                (i * 7) % 200,
                (i * 31) % 1000
            );
            (i.to_string(), body)
        })
        .collect();
    let customers: Vec<(String, String)> = (0..200)
        .map(|i| {
            let body = format!(r#"{{"customer":"c{i}","region":"r{}"}}"#, i % 6);
            (format!("c{i}"), body)
        })
        .collect();
    produce(dir.path(), "jorders", 3, &orders);
    produce(dir.path(), "jcustomers", 2, &customers);
    run_single(&join_sql(dir.path(), "single_state"));

    let checkpoints = dir.path().join("checkpoints");
    let sql = format!(
        "SET 'state.backend.type' = '{backend}';\n{}",
        join_sql(dir.path(), "from_state")
    );
    // A job id of its own: the two backends' tests run at once in this process, where units
    // find their job checkpoint cuts by unit job id.
    let job = format!("state-{backend}");
    let first = checkpointed_job(&sql, &job, &checkpoints);
    let units = first.plan.units();
    // With RocksDB, the group aggregation's units (the last stage) must have checkpointed
    // SST files before the stop, so that they come back through the state topic.
    let last_stage = units.iter().map(|u| u.stage).max().expect("units");
    let stop = StopHandle::default();
    runtime().block_on(async {
        // Stopped as soon as some unit completed a checkpoint: a fixed delay raced the job's
        // speed (on a fast machine the job ended first).
        let stopper = async {
            for _ in 0..1500 {
                if has_completed_checkpoint(&checkpoints)
                    && (backend != "rocksdb" || has_rocksdb_files(&checkpoints, &job, last_stage))
                {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            stop.stop();
        };
        let (result, ()) = tokio::join!(first.run(&Solo, &stop), stopper);
        result.expect("first run");
    });
    assert!(
        !units.iter().all(|u| first.is_finished(*u)),
        "the job ended before it was stopped"
    );
    drop(first);
    std::fs::remove_dir_all(&checkpoints).expect("remove local checkpoints");
    run_units(&sql, &job, &checkpoints);
    let single = upserted(dir.path(), "single_state");
    assert_eq!(single, upserted(dir.path(), "from_state"));
}

fn two_readings_sql(dir: &Path, prefix: &str) -> String {
    let d = dir.display();
    format!(
        "SET 'parallelism.default' = '2';
SET 'table.optimizer.reuse-source-enabled' = 'false';
CREATE TABLE orders (order_id BIGINT, customer STRING, amount INT)
WITH ('connector' = 'rocketmq', 'rocketmq.source.topic' = 'torders', 'riffle.store.dir' = '{d}',
  'rocketmq.source.startup.scan.mode' = 'earliest', 'scan.bounded.mode' = 'latest-offset',
  'format' = 'json');
CREATE TABLE per_customer (customer STRING, orders BIGINT, total BIGINT,
  PRIMARY KEY (customer) NOT ENFORCED)
WITH ('connector' = 'rocketmq', 'rocketmq.sink.topic' = '{prefix}_customers',
  'riffle.store.dir' = '{d}', 'format' = 'json');
CREATE TABLE biggest (customer STRING, amount INT, PRIMARY KEY (customer) NOT ENFORCED)
WITH ('connector' = 'rocketmq', 'rocketmq.sink.topic' = '{prefix}_biggest',
  'riffle.store.dir' = '{d}', 'format' = 'json');
EXECUTE STATEMENT SET BEGIN
INSERT INTO per_customer SELECT customer, COUNT(*), SUM(CAST(amount AS BIGINT))
  FROM orders GROUP BY customer;
INSERT INTO biggest SELECT customer, MAX(amount) FROM orders GROUP BY customer;
END;
"
    )
}

/// A group whose only member first runs just the units of one stage and, once they all
/// finished, every unit: a unit of another stage then starts long after the first stage's
/// units committed their offsets.
struct OneStageFirst {
    cluster_dir: std::path::PathBuf,
    first: usize,
}

impl riffle_cluster::Membership for OneStageFirst {
    fn name(&self) -> &str {
        "one-stage-first"
    }

    fn assignment(
        &self,
        units: &[riffle_cluster::UnitId],
    ) -> Result<riffle_cluster::membership::Assignment, riffle_cluster::ClusterError> {
        let first: Vec<_> = units
            .iter()
            .copied()
            .filter(|u| u.stage == self.first)
            .collect();
        let first_done = first
            .iter()
            .all(|u| self.cluster_dir.join(format!("{u}.finished")).exists());
        Ok(riffle_cluster::membership::Assignment {
            generation: u64::from(first_done),
            members: vec![self.name().to_string()],
            mine: if first_done { units.to_vec() } else { first },
        })
    }
}

/// Two INSERTs read one table: two source operators over the same queues (source reuse is
/// switched off; by default the two readings are one source). The one whose units start after
/// the other's finished still reads every row (each source commits its offsets to a group of
/// its own, so neither starts from what the other consumed).
#[test]
fn two_readings_of_a_table_each_read_everything_whenever_they_start() {
    let dir = tempfile::tempdir().expect("tempdir");
    let orders: Vec<(String, String)> = (0..3000)
        .map(|i| {
            let body = format!(
                r#"{{"order_id":{i},"customer":"c{}","amount":{}}}"#,
                (i * 7) % 40,
                (i * 31) % 1000
            );
            (i.to_string(), body)
        })
        .collect();
    produce(dir.path(), "torders", 3, &orders);
    run_single(&two_readings_sql(dir.path(), "single"));

    let checkpoints = dir.path().join("checkpoints");
    let cluster = checkpointed_job(
        &two_readings_sql(dir.path(), "late"),
        "readings",
        &checkpoints,
    );
    // Both readings of `orders` are source stages of their own.
    let reading_orders: Vec<usize> = (0..cluster.plan.stages.len())
        .filter(|s| {
            cluster.stage_graph(*s).is_some_and(|g| {
                g.operators.iter().any(|op| {
                    matches!(&op.kind, riffle_plan::OperatorKind::Source { connector }
                        if connector.table.ends_with("orders"))
                })
            })
        })
        .collect();
    assert_eq!(reading_orders.len(), 2, "{:?}", cluster.plan);
    let membership = OneStageFirst {
        cluster_dir: cluster.cluster_dir(),
        first: reading_orders[0],
    };
    runtime()
        .block_on(cluster.run(&membership, &StopHandle::default()))
        .expect("units run");
    for sink in ["customers", "biggest"] {
        let single = upserted(dir.path(), &format!("single_{sink}"));
        assert_eq!(single.len(), 40);
        assert_eq!(
            single,
            upserted(dir.path(), &format!("late_{sink}")),
            "{sink}"
        );
    }
}
