//! Tests of the `riffle topic` operations in `riffle_store::admin`.

mod common;

use std::io::Cursor;
use std::sync::Arc;
use std::time::Duration;

use common::options;
use riffle_store::admin::{
    self, parse_duration_ms, parse_size, parse_start, ConsumeOptions, OutputFormat, ProduceOptions,
    StartFrom,
};
use riffle_store::{queue_for_key, CleanupPolicy, Store, TopicConfig};

fn store_with_topic(queues: u32) -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), options(1 << 20)).unwrap();
    store
        .create_topic(
            "t",
            TopicConfig {
                queues,
                ..TopicConfig::default()
            },
        )
        .unwrap();
    (dir, store)
}

fn consume_text(store: &Store, options: &ConsumeOptions) -> String {
    let mut out = Vec::new();
    admin::consume(store, "t", options, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn value_parsers() {
    assert_eq!(parse_duration_ms("500"), Ok(500));
    assert_eq!(parse_duration_ms("500ms"), Ok(500));
    assert_eq!(parse_duration_ms("30s"), Ok(30_000));
    assert_eq!(parse_duration_ms("2h"), Ok(7_200_000));
    assert_eq!(parse_duration_ms("7d"), Ok(604_800_000));
    assert!(parse_duration_ms("0s").is_err());
    assert!(parse_duration_ms("7w")
        .unwrap_err()
        .contains("unknown time unit"));
    assert!(parse_duration_ms("").is_err());
    assert!(parse_duration_ms("99999999999999999999d").is_err());
    assert_eq!(parse_size("4096"), Ok(4096));
    assert_eq!(parse_size("512MiB"), Ok(512 << 20));
    assert_eq!(parse_size("1 GB"), Ok(1 << 30));
    assert!(parse_size("1PB").is_err());
    assert_eq!(parse_start("earliest"), Ok(StartFrom::Earliest));
    assert_eq!(parse_start("latest"), Ok(StartFrom::Latest));
    assert_eq!(parse_start("42"), Ok(StartFrom::Offset(42)));
    assert!(parse_start("-1").is_err());
}

#[test]
fn produce_json_lines_by_key_field_and_round_robin() {
    let (_dir, store) = store_with_topic(3);
    let input = "{\"id\":\"a\",\"v\":1}\n\n{\"id\":7,\"v\":2}\r\n{\"v\":3}\n";
    let opts = ProduceOptions {
        key_field: Some("id".into()),
        tag: Some("T".into()),
        ..ProduceOptions::default()
    };
    let err = admin::produce(&store, "t", &opts, Cursor::new(input)).unwrap_err();
    // The third message has no key field: the first two are stored, the error names line 4.
    assert_eq!(
        err.to_string(),
        "input line 4: key field 'id' is missing or null"
    );
    let qa = queue_for_key("a", 3);
    let q7 = queue_for_key("7", 3);
    let a = store.read("t", qa, 0, 10).unwrap();
    assert!(a
        .iter()
        .any(|m| m.message.keys == ["a"] && m.message.tag.as_deref() == Some("T")));
    let seven = store.read("t", q7, 0, 10).unwrap();
    assert!(seven
        .iter()
        .any(|m| m.message.body == b"{\"id\":7,\"v\":2}"));

    // Without keys: round-robin, starting at the queue with the fewest messages.
    let (_dir, store) = store_with_topic(3);
    let summary = admin::produce(
        &store,
        "t",
        &ProduceOptions::default(),
        Cursor::new("1\n2\n3\n4\n"),
    )
    .unwrap();
    assert_eq!(summary.total(), 4);
    assert_eq!(
        summary.per_queue.values().copied().collect::<Vec<_>>(),
        vec![2, 1, 1]
    );
}

#[test]
fn produce_raw_lines_and_errors() {
    let (_dir, store) = store_with_topic(2);
    let opts = ProduceOptions {
        raw: true,
        key: Some("k".into()),
        queue: Some(1),
        ..ProduceOptions::default()
    };
    let summary = admin::produce(&store, "t", &opts, Cursor::new("not json\n\nlast")).unwrap();
    assert_eq!(summary.total(), 3);
    let bodies: Vec<Vec<u8>> = store
        .read("t", 1, 0, 10)
        .unwrap()
        .into_iter()
        .map(|m| m.message.body)
        .collect();
    assert_eq!(
        bodies,
        vec![b"not json".to_vec(), Vec::new(), b"last".to_vec()]
    );

    let bad_json = admin::produce(&store, "t", &ProduceOptions::default(), Cursor::new("{x"));
    assert!(bad_json
        .unwrap_err()
        .to_string()
        .starts_with("input line 1: not valid JSON"));
    let bad_queue = ProduceOptions {
        queue: Some(5),
        ..ProduceOptions::default()
    };
    assert!(admin::produce(&store, "t", &bad_queue, Cursor::new("1")).is_err());
    let raw_with_field = ProduceOptions {
        raw: true,
        key_field: Some("id".into()),
        ..ProduceOptions::default()
    };
    assert!(admin::produce(&store, "t", &raw_with_field, Cursor::new("1")).is_err());
}

#[test]
fn consume_positions_groups_and_formats() {
    let (_dir, store) = store_with_topic(2);
    for i in 0..5 {
        store
            .append(
                "t",
                i % 2,
                &riffle_store::Message::new(format!("m{i}")).with_key(format!("k{i}")),
            )
            .unwrap();
    }
    let all = ConsumeOptions::default();
    assert_eq!(consume_text(&store, &all), "m0\nm2\nm4\nm1\nm3\n");
    let from_one = ConsumeOptions {
        start: Some(StartFrom::Offset(1)),
        ..ConsumeOptions::default()
    };
    assert_eq!(consume_text(&store, &from_one), "m2\nm4\nm3\n");
    let latest = ConsumeOptions {
        start: Some(StartFrom::Latest),
        ..ConsumeOptions::default()
    };
    assert_eq!(consume_text(&store, &latest), "");
    let first_ts = store.read("t", 0, 0, 1).unwrap()[0].store_timestamp;
    let by_time = ConsumeOptions {
        start: Some(StartFrom::Timestamp(first_ts)),
        queue: Some(1),
        ..ConsumeOptions::default()
    };
    assert_eq!(consume_text(&store, &by_time), "m1\nm3\n");

    // A group resumes where it committed.
    let group = ConsumeOptions {
        group: Some("g".into()),
        max: Some(2),
        ..ConsumeOptions::default()
    };
    assert_eq!(consume_text(&store, &group), "m0\nm2\n");
    assert_eq!(store.committed_offset("g", "t", 0).unwrap(), Some(2));
    assert_eq!(consume_text(&store, &group), "m4\nm1\n");
    assert_eq!(consume_text(&store, &group), "m3\n");
    assert_eq!(consume_text(&store, &group), "");

    let json = ConsumeOptions {
        format: OutputFormat::Json,
        queue: Some(0),
        max: Some(1),
        ..ConsumeOptions::default()
    };
    let line = consume_text(&store, &json);
    let v: serde_json::Value = serde_json::from_str(line.trim_end()).unwrap();
    assert_eq!(v["queue"], 0);
    assert_eq!(v["offset"], 0);
    assert_eq!(v["keys"], serde_json::json!(["k0"]));
    assert_eq!(v["body"], "m0");
    assert!(v["store_timestamp"].as_i64().unwrap() >= v["born_timestamp"].as_i64().unwrap());
}

#[test]
fn consume_json_envelope_hex_encodes_binary_bodies() {
    let (_dir, store) = store_with_topic(1);
    store
        .append("t", 0, &riffle_store::Message::new(vec![0xff, 0x00]))
        .unwrap();
    let opts = ConsumeOptions {
        format: OutputFormat::Json,
        ..ConsumeOptions::default()
    };
    let v: serde_json::Value =
        serde_json::from_str(consume_text(&store, &opts).trim_end()).unwrap();
    assert_eq!(v["body_hex"], "ff00");
    assert!(v.get("body").is_none());
}

#[test]
fn consume_follow_sees_later_appends() {
    let (_dir, store) = store_with_topic(1);
    let store = Arc::new(store);
    let producer = {
        let store = Arc::clone(&store);
        std::thread::spawn(move || {
            for i in 0..3 {
                std::thread::sleep(Duration::from_millis(30));
                store
                    .append("t", 0, &riffle_store::Message::new(format!("late{i}")))
                    .unwrap();
            }
        })
    };
    let opts = ConsumeOptions {
        follow: true,
        max: Some(3),
        poll_interval: Duration::from_millis(5),
        ..ConsumeOptions::default()
    };
    assert_eq!(consume_text(&store, &opts), "late0\nlate1\nlate2\n");
    producer.join().unwrap();
}

#[test]
fn list_and_describe_reports() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), options(1 << 20)).unwrap();
    store
        .create_topic(
            "orders",
            TopicConfig {
                queues: 2,
                retention_ms: Some(86_400_000),
                retention_bytes: Some(1 << 30),
                ..TopicConfig::default()
            },
        )
        .unwrap();
    store
        .create_topic(
            "state",
            TopicConfig {
                queues: 1,
                cleanup_policy: CleanupPolicy::Compaction,
                ..TopicConfig::default()
            },
        )
        .unwrap();
    for i in 0..3 {
        store
            .append("orders", 0, &riffle_store::Message::new(format!("{i}")))
            .unwrap();
    }
    store.commit_offset("billing", "orders", 0, 1).unwrap();
    let mut out = Vec::new();
    admin::list(&store, &mut out).unwrap();
    insta::assert_snapshot!("list", String::from_utf8(out).unwrap());
    let mut out = Vec::new();
    admin::describe(&store, "orders", false, &mut out).unwrap();
    insta::assert_snapshot!("describe_text", String::from_utf8(out).unwrap());
    let mut out = Vec::new();
    admin::describe(&store, "state", true, &mut out).unwrap();
    insta::assert_snapshot!("describe_json", String::from_utf8(out).unwrap());
}
