//! The migrated `fixtures/jobs/kafka/payments_avro_bounded_backfill.sql` runs on Riffle: its
//! source topic holds Confluent-framed Avro messages written by fastavro with a producer's own
//! (evolved) schemas (`crates/riffle-connectors/tests/data/avro/`), its registry is a loopback
//! test double, and its JSON sink topic gets the settled payments. (No real registry runs in CI,
//! and no Flink with flink-avro is here to compare with: `migrate-run/NOT_COMPARABLE`.)

// Shared with the other CLI tests (this one needs only `ok`).
#[allow(dead_code)]
#[path = "support/cli.rs"]
mod cli;
// Shared with the connector's tests, which use all of it.
#[allow(dead_code)]
#[path = "../../riffle-connectors/tests/support/registry.rs"]
mod registry;

use std::path::{Path, PathBuf};

use riffle_connectors::rocketmq::shared_store;
use riffle_store::{Message, TopicConfig};

use registry::TestRegistry;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn hex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).expect("hex"))
        .collect()
}

#[test]
fn the_migrated_avro_confluent_backfill_job_runs() {
    let data = root().join("crates/riffle-connectors/tests/data/avro");
    let fixtures: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(data.join("fixtures.json")).expect("fixtures.json"),
    )
    .expect("fixtures JSON");
    let writers = &fixtures["writer_schemas"];
    let registry = TestRegistry::start(&[
        (42, writers["42"].as_str().unwrap_or_default()),
        (43, writers["43"].as_str().unwrap_or_default()),
    ]);
    let dir = tempfile::tempdir().expect("a temporary directory");
    let work = dir.path();
    let job = root().join("fixtures/jobs/kafka/payments_avro_bounded_backfill.sql");
    cli::ok(
        work,
        &["migrate", &job.display().to_string(), "-o", "migrated"],
    );
    let migrated =
        std::fs::read_to_string(work.join("migrated/payments_avro_bounded_backfill.sql"))
            .expect("the migrated job");
    // Kafka topic names become RocketMQ ones (no dots).
    for kept in [
        "'value.format' = 'avro-confluent'",
        "'rocketmq.source.topic' = 'payments_v2'",
        "'rocketmq.sink.topic' = 'payments_settled_json'",
    ] {
        assert!(migrated.contains(kept), "{kept} in\n{migrated}");
    }
    // The job's registry is this test's.
    let sql = migrated.replace("http://schema-registry:8081", &registry.url);
    std::fs::write(work.join("job.sql"), &sql).expect("job file");

    // The source topic, in the embedded store of the work directory, holds fastavro's messages.
    let store_dir = work.join(".riffle");
    {
        let store = shared_store(&store_dir).expect("the embedded store");
        let config = TopicConfig {
            queues: 1,
            ..TopicConfig::default()
        };
        store.create_topic("payments_v2", config).expect("topic");
        let messages: Vec<Message> = fixtures["payments_confluent"]
            .as_array()
            .expect("messages")
            .iter()
            .map(|m| Message::new(hex(m.as_str().unwrap_or_default())))
            .collect();
        store
            .append_batch("payments_v2", 0, &messages)
            .expect("append");
        store.flush().expect("flush");
    }

    cli::ok(work, &["run", "job.sql"]);

    let store = shared_store(&store_dir).expect("the embedded store");
    let queues = store
        .topic_config("payments_settled_json")
        .expect("the sink topic")
        .queues;
    let mut bodies: Vec<String> = (0..queues)
        .flat_map(|q| {
            store
                .read("payments_settled_json", q, 0, 100)
                .expect("read")
        })
        .map(|m| String::from_utf8_lossy(&m.message.body).into_owned())
        .collect();
    bodies.sort();
    // p-2 is PENDING; p-3 was written with schema 43, which has no status (NULL).
    assert_eq!(
        bodies,
        [
            r#"{"payment_id":"p-1","merchant_id":7,"amount":19.99,"currency":"EUR","settled_at":"2025-01-03T10:15:30.123"}"#,
            r#"{"payment_id":"p-4","merchant_id":null,"amount":null,"currency":null,"settled_at":"1969-12-31T23:59:59.5"}"#,
        ]
    );
    assert_eq!(
        registry.requests(),
        ["GET /schemas/ids/42", "GET /schemas/ids/43"]
    );
}
