//! `riffle migrate` on single tables: the Kafka -> RocketMQ option mapping, rsqlDB formats, and the
//! layout of the rewritten `WITH` clause.

use riffle_toolkit::migrate::{migrate_job, JobChanges, MigrateOptions};
use riffle_toolkit::JobSource;

fn migrate(sql: &str) -> JobChanges {
    let options = MigrateOptions {
        namesrv: Some("ns:9876".into()),
        ..MigrateOptions::default()
    };
    let result = migrate_job(
        &JobSource {
            path: "t.sql".into(),
            text: sql.into(),
        },
        &options,
    );
    assert_eq!(result.error, None);
    result
}

#[test]
fn a_table_read_and_written_gets_both_topic_keys() {
    let out = migrate(
        "CREATE TABLE t (a INT) WITH ('connector' = 'kafka', 'topic' = 'x', 'properties.bootstrap.servers' = 'k:9092', 'properties.group.id' = 'g', 'format' = 'json');
INSERT INTO t SELECT a + 1 FROM t;",
    );
    assert!(
        out.output
            .contains("'rocketmq.source.topic' = 'x', 'rocketmq.sink.topic' = 'x'"),
        "{}",
        out.output
    );
    assert!(out.output.contains("'rocketmq.source.group' = 'g'"));
}

#[test]
fn group_offsets_start_where_the_reset_policy_says() {
    let out = migrate(
        "CREATE TABLE t (a INT) WITH ('connector' = 'kafka', 'topic' = 'x', 'properties.bootstrap.servers' = 'k:9092',
  'properties.group.id' = 'g', 'scan.startup.mode' = 'group-offsets', 'properties.auto.offset.reset' = 'earliest', 'format' = 'json');
SELECT a FROM t;",
    );
    assert!(!out.output.contains("scan.startup.mode"), "{}", out.output);
    assert!(
        out.output
            .contains("'rocketmq.source.startup.scan.mode' = 'earliest'"),
        "{}",
        out.output
    );
    // With another startup mode Kafka ignores the reset policy, and so does the migrated table.
    let out = migrate(
        "CREATE TABLE t (a INT) WITH ('connector' = 'kafka', 'topic' = 'x', 'properties.bootstrap.servers' = 'k:9092',
  'properties.group.id' = 'g', 'scan.startup.mode' = 'latest-offset', 'properties.auto.offset.reset' = 'earliest', 'format' = 'json');
SELECT a FROM t;",
    );
    assert!(
        out.output
            .contains("'rocketmq.source.startup.scan.mode' = 'latest'"),
        "{}",
        out.output
    );
    assert!(!out.output.contains("auto.offset.reset"));
}

#[test]
fn sink_options_translate_values_and_kafka_properties_are_left() {
    let out = migrate(
        "CREATE TABLE t (a INT) WITH ('connector' = 'kafka', 'topic' = 'x', 'properties.bootstrap.servers' = 'k:9092',
  'sink.semantic' = 'exactly-once', 'properties.max.request.size' = '1048576', 'scan.bounded.mode' = 'unbounded', 'format' = 'json');
INSERT INTO t VALUES (1);",
    );
    assert!(
        out.output
            .contains("'rocketmq.sink.delivery.guarantee' = 'EXACTLY_ONCE'"),
        "{}",
        out.output
    );
    assert!(out
        .output
        .contains("'properties.max.request.size' = '1048576'"));
    assert!(!out.output.contains("scan.bounded.mode"));
    let manual: Vec<&str> = out.manual.iter().map(|m| m.code.as_str()).collect();
    assert_eq!(manual, ["option.kafka.properties.max.request.size"]);
}

#[test]
fn non_json_rsqldb_bodies_become_raw_or_csv() {
    let one = migrate(
        "CREATE TABLE t (line VARCHAR) WITH (type = 'rocketmq', topic = 'x', groupName = 'g', namesrvAddr = 'n:9876', isJsonData = 'false');
SELECT line FROM t;",
    );
    assert!(one.output.contains("'format' = 'raw'"), "{}", one.output);
    let many = migrate(
        "CREATE TABLE t (a VARCHAR, b INT) WITH (type = 'rocketmq', topic = 'x', groupName = 'g', namesrvAddr = 'n:9876', isJsonData = 'false', fieldDelimiter = '|');
SELECT a FROM t;",
    );
    assert!(
        many.output
            .contains("'format' = 'csv', 'csv.field-delimiter' = '|'"),
        "{}",
        many.output
    );
    assert!(many
        .output
        .contains("'rocketmq.client.message.field.delimiter' = '|'"));
}

#[test]
fn rsqldb_group_names_follow_the_table_role() {
    let out = migrate(
        "CREATE TABLE s (a INT) WITH (type = 'rocketmq', topic = 'in', groupName = 'c');
CREATE TABLE k (a INT) WITH (type = 'rocketmq', topic = 'out', groupName = 'p');
INSERT INTO k SELECT a FROM s;",
    );
    assert!(
        out.output.contains("'rocketmq.source.group' = 'c'"),
        "{}",
        out.output
    );
    assert!(
        out.output.contains("'rocketmq.sink.group' = 'p'"),
        "{}",
        out.output
    );
}

#[test]
fn options_in_one_line_keep_one_line() {
    let out = migrate(
        "CREATE TABLE t (a INT) WITH ('connector'='kafka','topic'='x','properties.bootstrap.servers'='k:9092','format'='json','sink.partitioner'='default');
INSERT INTO t VALUES (1);",
    );
    assert_eq!(
        out.output.lines().next().unwrap_or_default(),
        "CREATE TABLE t (a INT) WITH ('connector'='rocketmq','rocketmq.sink.topic'='x','rocketmq.client.endpoints'='ns:9876','format'='json');"
    );
}

#[test]
fn statements_that_do_not_parse_are_left_and_reported() {
    let out = migrate(
        "CREATE TABLE t (a INT) WITH ('connector' = 'kafka', 'topic' = 'x', 'properties.bootstrap.servers' = 'k:9092', 'format' = 'json');
SELEC a FROM t;
INSERT INTO t VALUES (1);",
    );
    assert!(out.output.contains("SELEC a FROM t;"));
    assert!(out.output.contains("'connector' = 'rocketmq'"));
    assert!(out.manual.iter().any(|m| m.code == "parse-error"));
}
