//! The rocketmq connector on the embedded store, through the public `open_source` /
//! `open_sink`: startup modes, metadata columns (read and written), and the `raw`,
//! `debezium-json` and `canal-json` body formats.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use arrow::array::{ArrayRef, MapBuilder, StringArray, StringBuilder};
use arrow::datatypes::{DataType, Field as ArrowField, Schema};
use arrow::record_batch::RecordBatch;
use riffle_connectors::format::write_row;
use riffle_connectors::print::PrintTarget;
use riffle_connectors::rocketmq::shared_store;
use riffle_connectors::{open_sink, open_source, ChangeBatch, RowKind, SubtaskInfo};
use riffle_plan::{ConnectorSpec, Field, MetadataColumn};
use riffle_store::{Message, TopicConfig};

const ONE: SubtaskInfo = SubtaskInfo {
    index: 0,
    parallelism: 1,
    earlier_reads: 0,
};

fn spec(dir: &Path, topic: &str, extra: &[(&str, &str)]) -> ConnectorSpec {
    let mut options: BTreeMap<String, String> = [
        ("connector", "rocketmq"),
        ("topic", topic),
        ("riffle.store.dir", dir.to_str().unwrap_or_default()),
    ]
    .iter()
    .chain(extra)
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    options.insert("connector".into(), "rocketmq".into());
    ConnectorSpec {
        table: "t".into(),
        connector: "rocketmq".into(),
        options,
        metadata: Vec::new(),
        primary_key: Vec::new(),
        partition_keys: Vec::new(),
        read_columns: None,
    }
}

fn schema(columns: &[(&str, DataType)]) -> Arc<Schema> {
    Arc::new(Schema::new(
        columns
            .iter()
            .map(|(n, t)| ArrowField::new(*n, t.clone(), true))
            .collect::<Vec<_>>(),
    ))
}

fn produce(dir: &Path, topic: &str, bodies: &[&str]) {
    let store = shared_store(dir).unwrap();
    if store.topic_config(topic).is_err() {
        let config = TopicConfig {
            queues: 1,
            ..TopicConfig::default()
        };
        store.create_topic(topic, config).unwrap();
    }
    let messages: Vec<Message> = bodies.iter().map(|b| Message::new(b.as_bytes())).collect();
    store.append_batch(topic, 0, &messages).unwrap();
}

/// Every row of a bounded source, printed as Flink prints rows.
fn read_all(spec: &ConnectorSpec, schema: Arc<Schema>) -> Vec<String> {
    let mut source = open_source(spec, schema, ONE).unwrap();
    let mut rows = Vec::new();
    while let Some(changes) = source.next_changes().unwrap() {
        for i in 0..changes.num_rows() {
            let mut s = String::new();
            write_row(&mut s, changes.kind(i), &changes.batch, i);
            rows.push(s);
        }
    }
    rows
}

fn bounded<'a>(mode: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
    let mut options = vec![("scan.bounded.mode", "latest-offset")];
    options.extend_from_slice(mode);
    options
}

#[test]
fn startup_modes_pick_where_each_queue_starts() {
    let dir = tempfile::tempdir().unwrap();
    let (d, s) = (dir.path(), schema(&[("v", DataType::Utf8)]));
    produce(d, "t1", &["a", "b"]);
    std::thread::sleep(std::time::Duration::from_millis(30));
    let between = riffle_store::now_ms();
    std::thread::sleep(std::time::Duration::from_millis(30));
    produce(d, "t1", &["c", "d"]);
    let read = |extra: &[(&str, &str)]| {
        let mut options = bounded(extra);
        options.push(("format", "raw"));
        read_all(&spec(d, "t1", &options), s.clone())
    };
    assert_eq!(
        read(&[("rocketmq.source.startup.scan.mode", "earliest")]),
        ["+I[a]", "+I[b]", "+I[c]", "+I[d]"]
    );
    assert!(read(&[("rocketmq.source.startup.scan.mode", "latest")]).is_empty());
    assert_eq!(read(&[("startMessageOffset", "3")]), ["+I[d]"]);
    let at = between.to_string();
    assert_eq!(
        read(&[
            ("rocketmq.source.startup.scan.mode", "timestamp"),
            ("rocketmq.source.startup.offset.timestamp", &at)
        ]),
        ["+I[c]", "+I[d]"]
    );
    // A group with committed offsets starts there, whatever the startup mode.
    shared_store(d)
        .unwrap()
        .commit_offsets("g", "t1", &[(0, 2)])
        .unwrap();
    let grouped = [
        ("rocketmq.source.startup.scan.mode", "earliest"),
        ("consumerGroup", "g"),
    ];
    assert_eq!(read(&grouped), ["+I[c]", "+I[d]"]);
    // ... and the source committed what it read.
    assert!(read(&grouped).is_empty());
}

#[test]
fn latest_reads_only_what_arrives_after_the_start() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    produce(d, "t2", &["old"]);
    let options = [
        ("format", "raw"),
        ("rocketmq.source.startup.scan.mode", "latest"),
    ];
    let mut source = open_source(
        &spec(d, "t2", &options),
        schema(&[("v", DataType::Utf8)]),
        ONE,
    )
    .unwrap();
    produce(d, "t2", &["new"]);
    let mut rows = Vec::new();
    for _ in 0..50 {
        if let Some(batch) = source.next_changes().unwrap() {
            for i in 0..batch.num_rows() {
                let mut s = String::new();
                write_row(&mut s, batch.kind(i), &batch.batch, i);
                rows.push(s);
            }
        }
        if !rows.is_empty() {
            break;
        }
    }
    assert_eq!(rows, ["+I[new]"]);
}

#[test]
fn the_backlog_counts_the_messages_of_each_queue_not_read_yet() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    produce(d, "t5", &["a", "b", "c"]);
    let options = [
        ("format", "raw"),
        ("rocketmq.source.startup.scan.mode", "earliest"),
    ];
    let mut source = open_source(
        &spec(d, "t5", &options),
        schema(&[("v", DataType::Utf8)]),
        ONE,
    )
    .unwrap();
    let backlog = |source: &mut Box<dyn riffle_connectors::SourceReader>| source.backlog();
    assert_eq!(backlog(&mut source), Some(vec![("t5/0".to_string(), 3)]));
    let batch = source.next_changes().unwrap().expect("a batch");
    assert_eq!(batch.num_rows(), 3);
    assert_eq!(backlog(&mut source), Some(vec![("t5/0".to_string(), 0)]));
    produce(d, "t5", &["d", "e"]);
    assert_eq!(backlog(&mut source), Some(vec![("t5/0".to_string(), 2)]));
}

#[test]
fn changelog_bodies_read_as_changes_with_metadata() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    produce(
        d,
        "cdc",
        &[
            r#"{"before":null,"after":{"id":1,"name":"a"},"op":"c"}"#,
            r#"{"before":{"id":1,"name":"a"},"after":{"id":1,"name":"b"},"op":"u"}"#,
            "",
            r#"{"before":{"id":1,"name":"b"},"after":null,"op":"d"}"#,
        ],
    );
    let mut options = bounded(&[("rocketmq.source.startup.scan.mode", "earliest")]);
    options.push(("format", "debezium-json"));
    let mut table = spec(d, "cdc", &options);
    table.metadata.push(MetadataColumn {
        column: "off".into(),
        key: "queue-offset".into(),
        is_virtual: true,
    });
    let s = schema(&[
        ("id", DataType::Int32),
        ("name", DataType::Utf8),
        ("off", DataType::Int64),
    ]);
    assert_eq!(
        read_all(&table, s),
        ["+I[1, a, 0]", "-U[1, a, 1]", "+U[1, b, 1]", "-D[1, b, 3]"]
    );
}

fn field(name: &str, flink: &str, arrow: &DataType) -> Field {
    Field {
        name: name.into(),
        data_type: flink.into(),
        arrow_type: arrow.to_string(),
        nullable: true,
        rowtime: false,
    }
}

#[test]
fn sinks_write_metadata_and_changelog_events() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut table = spec(d, "out", &[("format", "canal-json")]);
    for key in ["tag", "keys", "properties"] {
        table.metadata.push(MetadataColumn {
            column: format!("m_{key}"),
            key: key.into(),
            is_virtual: false,
        });
    }
    let mut properties = MapBuilder::new(None, StringBuilder::new(), StringBuilder::new());
    properties.keys().append_value("source");
    properties.values().append_value("crm");
    properties.append(true).unwrap();
    let properties: ArrayRef = Arc::new(properties.finish());
    let columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from(vec!["ann"])),
        Arc::new(StringArray::from(vec!["vip"])),
        Arc::new(StringArray::from(vec!["k1 k2"])),
        properties.clone(),
    ];
    let fields = vec![
        field("name", "STRING", &DataType::Utf8),
        field("m_tag", "STRING", &DataType::Utf8),
        field("m_keys", "STRING", &DataType::Utf8),
        field(
            "m_properties",
            "MAP<STRING, STRING>",
            properties.data_type(),
        ),
    ];
    let arrow_schema = Arc::new(riffle_plan::arrow_schema(&fields).unwrap());
    let batch = RecordBatch::try_new(arrow_schema, columns).unwrap();
    let mut sink = open_sink(&table, &fields, ONE, &PrintTarget::default()).unwrap();
    sink.write(&ChangeBatch {
        batch,
        kinds: Some(Arc::from(vec![RowKind::Delete])),
    })
    .unwrap();
    sink.finish().unwrap();
    let store = shared_store(d).unwrap();
    let queues = store.topic_config("out").unwrap().queues;
    let messages: Vec<_> = (0..queues)
        .flat_map(|q| store.read("out", q, 0, 10).unwrap())
        .collect();
    let [stored] = messages.as_slice() else {
        panic!("one message expected, got {}", messages.len());
    };
    let m = &stored.message;
    assert_eq!(
        String::from_utf8_lossy(&m.body),
        r#"{"data":[{"name":"ann"}],"type":"DELETE"}"#
    );
    assert_eq!(m.tag.as_deref(), Some("vip"));
    assert_eq!(m.keys, ["k1", "k2"]);
    assert_eq!(m.properties.get("source").map(String::as_str), Some("crm"));

    let mut read_only = spec(d, "out", &[("format", "json")]);
    read_only.metadata.push(MetadataColumn {
        column: "off".into(),
        key: "queue-offset".into(),
        is_virtual: false,
    });
    let fields = [field("off", "BIGINT", &DataType::Int64)];
    let err = open_sink(&read_only, &fields, ONE, &PrintTarget::default())
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains("Invalid metadata key 'queue-offset'"), "{err}");
}

/// Messages stored in every queue of `topic`.
fn stored(d: &Path, topic: &str) -> Vec<Message> {
    let store = shared_store(d).unwrap();
    let queues = store.topic_config(topic).map(|c| c.queues).unwrap_or(0);
    (0..queues)
        .flat_map(|q| store.read(topic, q, 0, 100).unwrap())
        .map(|m| m.message)
        .collect()
}

fn names(values: &[&str]) -> (Vec<Field>, RecordBatch) {
    let fields = vec![field("name", "STRING", &DataType::Utf8)];
    let arrow_schema = Arc::new(riffle_plan::arrow_schema(&fields).unwrap());
    let column: ArrayRef = Arc::new(StringArray::from(values.to_vec()));
    (
        fields,
        RecordBatch::try_new(arrow_schema, vec![column]).unwrap(),
    )
}

#[test]
fn exactly_once_without_checkpointing_publishes_when_the_input_ends() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (fields, batch) = names(&["ann", "bob"]);
    let exactly_once = [
        ("format", "json"),
        ("rocketmq.sink.delivery.guarantee", "EXACTLY_ONCE"),
    ];
    let mut sink = open_sink(
        &spec(d, "eo", &exactly_once),
        &fields,
        ONE,
        &PrintTarget::default(),
    )
    .unwrap();
    sink.write(&ChangeBatch {
        batch: batch.clone(),
        kinds: None,
    })
    .unwrap();
    assert!(
        stored(d, "eo").is_empty(),
        "published before the input ended"
    );
    sink.finish().unwrap();
    assert_eq!(stored(d, "eo").len(), 2);
    // At least once: published as written.
    let at_least_once = [
        ("format", "json"),
        ("rocketmq.sink.delivery.guarantee", "AT_LEAST_ONCE"),
    ];
    let mut sink = open_sink(
        &spec(d, "alo", &at_least_once),
        &fields,
        ONE,
        &PrintTarget::default(),
    )
    .unwrap();
    sink.write(&ChangeBatch { batch, kinds: None }).unwrap();
    assert_eq!(stored(d, "alo").len(), 2);
}

#[test]
fn an_upsert_changelog_sink_needs_a_primary_key() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (fields, batch) = names(&["ann"]);
    let upsert = [("format", "json"), ("riffle.changelog-mode", "upsert")];
    let err = open_sink(
        &spec(d, "u", &upsert),
        &fields,
        ONE,
        &PrintTarget::default(),
    )
    .err()
    .map(|e| e.to_string())
    .unwrap_or_default();
    assert!(err.contains("needs a PRIMARY KEY"), "{err}");
    let mut keyed = spec(d, "u", &upsert);
    keyed.primary_key = vec!["name".into()];
    let mut sink = open_sink(&keyed, &fields, ONE, &PrintTarget::default()).unwrap();
    sink.write(&ChangeBatch {
        batch,
        kinds: Some(Arc::from(vec![RowKind::Delete])),
    })
    .unwrap();
    sink.finish().unwrap();
    let [tombstone] = stored(d, "u")
        .try_into()
        .unwrap_or_else(|m: Vec<Message>| panic!("one message expected, got {}", m.len()));
    assert_eq!(tombstone.keys, ["ann"]);
    assert!(tombstone.body.is_empty());
    // A source reads the topic as an upsert changelog keyed by its primary key, which it needs.
    let mut source_options = bounded(&upsert);
    source_options.push(("rocketmq.source.startup.scan.mode", "earliest"));
    let err = open_source(
        &spec(d, "u", &source_options),
        schema(&[("name", DataType::Utf8)]),
        ONE,
    )
    .err()
    .map(|e| e.to_string())
    .unwrap_or_default();
    assert!(err.contains("needs a PRIMARY KEY"), "{err}");
    let mut keyed_source = spec(d, "u", &source_options);
    keyed_source.primary_key = vec!["name".into()];
    assert_eq!(
        read_all(&keyed_source, schema(&[("name", DataType::Utf8)])),
        ["-D[ann]"]
    );
}

#[test]
fn an_upsert_changelog_source_reads_what_the_sink_wrote() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let fields = vec![
        field("region", "STRING", &DataType::Utf8),
        field("id", "BIGINT", &DataType::Int64),
        field("v", "STRING", &DataType::Utf8),
    ];
    let arrow = schema(&[
        ("region", DataType::Utf8),
        ("id", DataType::Int64),
        ("v", DataType::Utf8),
    ]);
    let batch = RecordBatch::try_new(
        arrow.clone(),
        vec![
            Arc::new(StringArray::from(vec!["eu", "eu", "us", "eu"])) as ArrayRef,
            Arc::new(arrow::array::Int64Array::from(vec![1, 2, 1, 1])),
            Arc::new(StringArray::from(vec![
                Some("a"),
                Some("b"),
                None,
                Some("a"),
            ])),
        ],
    )
    .unwrap();
    let options = [("format", "json"), ("riffle.changelog-mode", "upsert")];
    let mut table = spec(d, "kv", &options);
    table.primary_key = vec!["region".into(), "id".into()];
    let mut sink = open_sink(&table, &fields, ONE, &PrintTarget::default()).unwrap();
    let kinds = [
        RowKind::Insert,
        RowKind::Insert,
        RowKind::Insert,
        RowKind::Delete,
    ];
    sink.write(&ChangeBatch {
        batch,
        kinds: Some(Arc::from(kinds.to_vec())),
    })
    .unwrap();
    sink.finish().unwrap();
    let mut source_options = bounded(&options);
    source_options.push(("rocketmq.source.startup.scan.mode", "earliest"));
    let mut source = spec(d, "kv", &source_options);
    source.primary_key = table.primary_key.clone();
    // Values are inserts of their rows; a tombstone is a delete whose key comes from the
    // message key (a JSON array for two key columns) and whose other columns are NULL. A key's
    // messages share a queue, so they keep their order (queues are read in turn).
    let rows = read_all(&source, arrow);
    let of_key = |key: &str| -> Vec<&str> {
        rows.iter()
            .map(String::as_str)
            .filter(|r| r[3..].starts_with(key))
            .collect()
    };
    assert_eq!(of_key("eu, 1,"), ["+I[eu, 1, a]", "-D[eu, 1, null]"]);
    assert_eq!(of_key("eu, 2,"), ["+I[eu, 2, b]"]);
    assert_eq!(of_key("us, 1,"), ["+I[us, 1, null]"]);
    assert_eq!(rows.len(), 4);
}
