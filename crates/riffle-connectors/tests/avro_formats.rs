//! The `avro` and `avro-confluent` formats through the rocketmq connector on the embedded store,
//! against an independent encoder: `tests/data/avro/fixtures.json` holds messages fastavro wrote
//! (`make_fixtures.py`), bare and Confluent-framed, with the schemas Riffle derives and with a
//! producer's own evolved schemas. The registry is a loopback test double
//! (`support/registry.rs`); no real registry runs in CI.

#[path = "support/registry.rs"]
mod registry;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::array::Array;
use arrow::datatypes::{DataType, Field as ArrowField, Fields, Schema, TimeUnit};
use riffle_connectors::avro::schema::derive;
use riffle_connectors::avro::{AvroDecoder, AvroEncoder, AvroFormat};
use riffle_connectors::format::write_row;
use riffle_connectors::print::PrintTarget;
use riffle_connectors::rocketmq::shared_store;
use riffle_connectors::{open_sink, open_source, ChangeBatch, SubtaskInfo};
use riffle_plan::{ConnectorSpec, Field};
use riffle_store::{Message, TopicConfig};

use registry::TestRegistry;

const ONE: SubtaskInfo = SubtaskInfo {
    index: 0,
    parallelism: 1,
    earlier_reads: 0,
};

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/avro")
}

fn fixtures() -> serde_json::Value {
    let text = std::fs::read_to_string(data_dir().join("fixtures.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn hex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
        .collect()
}

fn messages(key: &str) -> Vec<Vec<u8>> {
    fixtures()[key]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| hex(m.as_str().unwrap()))
        .collect()
}

/// The physical columns of `payments` in `fixtures/jobs/kafka/payments_avro_bounded_backfill.sql`.
fn payments() -> Arc<Schema> {
    Arc::new(Schema::new(vec![
        ArrowField::new("payment_id", DataType::Utf8, true),
        ArrowField::new("merchant_id", DataType::Int64, true),
        ArrowField::new("amount", DataType::Decimal128(18, 2), true),
        ArrowField::new("currency", DataType::Utf8, true),
        ArrowField::new("status", DataType::Utf8, true),
        ArrowField::new(
            "settled_at",
            DataType::Timestamp(TimeUnit::Millisecond, None),
            true,
        ),
    ]))
}

fn address() -> DataType {
    DataType::Struct(Fields::from(vec![
        ArrowField::new("city", DataType::Utf8, false),
        ArrowField::new("zip", DataType::Int32, true),
    ]))
}

/// A table with a column of every type the formats map.
fn every_type() -> Arc<Schema> {
    let nullable = |name: &str, t: DataType| ArrowField::new(name, t, true);
    let list = |t: DataType| DataType::List(Arc::new(ArrowField::new("item", t, true)));
    let map = DataType::Map(
        Arc::new(ArrowField::new(
            "entries",
            DataType::Struct(Fields::from(vec![
                ArrowField::new("key", DataType::Utf8, false),
                ArrowField::new("value", DataType::Int64, true),
            ])),
            false,
        )),
        false,
    );
    Arc::new(Schema::new(vec![
        ArrowField::new("id", DataType::Int64, false),
        nullable("flag", DataType::Boolean),
        nullable("tiny", DataType::Int8),
        nullable("small", DataType::Int16),
        nullable("i", DataType::Int32),
        nullable("f", DataType::Float32),
        nullable("d", DataType::Float64),
        nullable("s", DataType::Utf8),
        nullable("b", DataType::Binary),
        nullable("amount", DataType::Decimal128(18, 2)),
        nullable("day", DataType::Date32),
        nullable("t", DataType::Time32(TimeUnit::Millisecond)),
        nullable("ts", DataType::Timestamp(TimeUnit::Millisecond, None)),
        nullable("tags", list(DataType::Utf8)),
        nullable("counts", map),
        nullable("address", address()),
        nullable("history", list(address())),
    ]))
}

const PAYMENT_ROWS: [&str; 4] = [
    "+I[p-1, 7, 19.99, EUR, SETTLED, 2025-01-03T10:15:30.123]",
    "+I[p-2, 8, -5.00, USD, PENDING, null]",
    "+I[p-3, 7, 1234567890123456.78, EUR, SETTLED, 2024-12-31T23:59:59.999]",
    "+I[p-4, null, null, null, SETTLED, 1969-12-31T23:59:59.500]",
];

const EVERY_TYPE_ROWS: [&str; 3] = [
    "+I[1, true, -128, -300, 42, 1.5, -0.25, héllo, [0, -1], 12.34, 2020-04-15, 08:05:05.120, 2020-04-15T08:00:05.120, [x, null], {b=2}, +I[Lyon, 69000], [+I[Rome, 1], +I[Bern, null]]]",
    "+I[2, null, null, null, null, null, null, null, null, null, null, null, null, null, null, null, null]",
    "+I[-9007199254740993, false, 127, 32767, -2147483648, -3.25, 1.0E300, , [], -9999999999999999.99, 1969-12-31, 00:00, 1969-12-31T23:59:59.999, [], {}, +I[, null], []]",
];

fn spec(dir: &Path, topic: &str, extra: &[(&str, &str)]) -> ConnectorSpec {
    let mut options: BTreeMap<String, String> = [
        ("connector", "rocketmq"),
        ("topic", topic),
        ("riffle.store.dir", dir.to_str().unwrap_or_default()),
        ("rocketmq.source.startup.scan.mode", "earliest"),
        ("scan.bounded.mode", "latest-offset"),
    ]
    .iter()
    .chain(extra)
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    options.insert("connector".into(), "rocketmq".into());
    ConnectorSpec {
        table: "payments".into(),
        connector: "rocketmq".into(),
        options,
        ..ConnectorSpec::default()
    }
}

fn produce(dir: &Path, topic: &str, bodies: &[Vec<u8>]) {
    let store = shared_store(dir).unwrap();
    let config = TopicConfig {
        queues: 1,
        ..TopicConfig::default()
    };
    store.create_topic(topic, config).unwrap();
    let messages: Vec<Message> = bodies.iter().map(|b| Message::new(b.clone())).collect();
    store.append_batch(topic, 0, &messages).unwrap();
}

fn printed(batch: &arrow::record_batch::RecordBatch) -> Vec<String> {
    (0..batch.num_rows())
        .map(|i| {
            let mut s = String::new();
            write_row(&mut s, riffle_connectors::RowKind::Insert, batch, i);
            s
        })
        .collect()
}

fn read_all(spec: &ConnectorSpec, schema: Arc<Schema>) -> Vec<String> {
    let mut source = open_source(spec, schema, ONE).unwrap();
    let mut rows = Vec::new();
    while let Some(changes) = source.next_changes().unwrap() {
        rows.extend(printed(&changes.batch));
    }
    rows
}

#[test]
fn the_committed_schemas_are_the_derived_ones() {
    for (file, table) in [
        ("payments.avsc", payments()),
        ("every_type.avsc", every_type()),
    ] {
        let committed = std::fs::read_to_string(data_dir().join(file)).unwrap();
        assert_eq!(
            derive(table.fields(), true).unwrap(),
            committed.trim(),
            "{file} (fixtures.json was made with it: rerun make_fixtures.py if it changed)"
        );
    }
}

#[test]
fn bare_messages_fastavro_wrote_read_as_their_rows() {
    let dir = tempfile::tempdir().unwrap();
    produce(dir.path(), "pay", &messages("payments_bare"));
    produce(dir.path(), "every", &messages("every_type_bare"));
    let read = |topic, schema| read_all(&spec(dir.path(), topic, &[("format", "avro")]), schema);
    assert_eq!(read("pay", payments()), PAYMENT_ROWS);
    assert_eq!(read("every", every_type()), EVERY_TYPE_ROWS);
}

#[test]
fn riffle_writes_the_bytes_fastavro_writes() {
    let format = AvroFormat::Plain {
        legacy_timestamps: true,
    };
    for (key, schema) in [
        ("payments_bare", payments()),
        ("every_type_bare", every_type()),
    ] {
        let bodies = messages(key);
        let mut decoder = AvroDecoder::new("t", schema.clone(), &format).unwrap();
        for body in &bodies {
            assert!(decoder.decode(body, &|| "fixture".to_string()).unwrap());
        }
        let batch = decoder.flush().unwrap();
        let encoder = AvroEncoder::new("t", schema.fields(), &format, "unused").unwrap();
        let columns: Vec<&dyn Array> = batch.columns().iter().map(|c| c.as_ref()).collect();
        for (row, expected) in bodies.iter().enumerate() {
            let mut body = Vec::new();
            encoder.encode(&columns, row, &mut body).unwrap();
            assert_eq!(&body, expected, "{key} row {row}");
        }
    }
}

/// Runs fastavro on what Riffle writes, when the oracle's Python is here (CI has committed
/// fixtures instead: `riffle_writes_the_bytes_fastavro_writes`).
#[test]
fn fastavro_reads_what_riffle_writes() {
    let python = std::env::var("RIFFLE_ORACLE_PYTHON").map_or_else(
        |_| {
            std::env::var("HOME")
                .map(|h| PathBuf::from(h).join(".cache/riffle-oracle-venv/bin/python"))
                .unwrap_or_default()
        },
        PathBuf::from,
    );
    let check = std::process::Command::new(&python)
        .args(["-c", "import fastavro"])
        .output();
    if !check.is_ok_and(|o| o.status.success()) {
        eprintln!(
            "SKIPPED fastavro_reads_what_riffle_writes: no Python with fastavro at {}",
            python.display()
        );
        return;
    }
    let format = AvroFormat::Plain {
        legacy_timestamps: true,
    };
    let mut decoder = AvroDecoder::new("t", every_type(), &format).unwrap();
    for body in messages("every_type_bare") {
        decoder.decode(&body, &|| "fixture".to_string()).unwrap();
    }
    let batch = decoder.flush().unwrap();
    let encoder = AvroEncoder::new("t", every_type().fields(), &format, "unused").unwrap();
    let columns: Vec<&dyn Array> = batch.columns().iter().map(|c| c.as_ref()).collect();
    let bodies: Vec<String> = (0..batch.num_rows())
        .map(|row| {
            let mut body = Vec::new();
            encoder.encode(&columns, row, &mut body).unwrap();
            body.iter().map(|b| format!("{b:02x}")).collect()
        })
        .collect();
    // fastavro decodes each body and must find the record make_fixtures.py started from.
    let script = r#"
import io, sys, fastavro, make_fixtures as m
schema = m.schema("every_type.avsc")
for i, line in enumerate(sys.stdin.read().split()):
    record = fastavro.schemaless_reader(io.BytesIO(bytes.fromhex(line)), schema, schema)
    assert m.datum(schema, record) == m.datum(schema, m.EVERY_TYPE[i]), (i, record)
print("ok", i + 1)
"#;
    let mut child = std::process::Command::new(&python)
        .args(["-c", script])
        .current_dir(data_dir())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(bodies.join("\n").as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "ok 3");
}

#[test]
fn confluent_messages_resolve_their_writer_schemas_against_the_table() {
    let f = fixtures();
    let writers = &f["writer_schemas"];
    let registry = TestRegistry::start(&[
        (42, writers["42"].as_str().unwrap()),
        (43, writers["43"].as_str().unwrap()),
    ]);
    let dir = tempfile::tempdir().unwrap();
    produce(dir.path(), "payments_v2", &messages("payments_confluent"));
    let options = [
        ("value.format", "avro-confluent"),
        ("value.avro-confluent.url", registry.url.as_str()),
    ];
    let rows = read_all(&spec(dir.path(), "payments_v2", &options), payments());
    // v2 (id 43) has no `status`: the reader's default, NULL.
    let mut expected = PAYMENT_ROWS.map(str::to_string);
    expected[2] = expected[2].replace("SETTLED", "null");
    assert_eq!(rows, expected);
    // Each id is looked up once.
    assert_eq!(
        registry.requests(),
        ["GET /schemas/ids/42", "GET /schemas/ids/43"]
    );
}

#[test]
fn unknown_ids_and_unreachable_registries_fail_naming_them() {
    let registry = TestRegistry::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    produce(dir.path(), "p", &messages("payments_confluent"));
    let read = |url: &str| {
        let options = [("format", "avro-confluent"), ("avro-confluent.url", url)];
        let spec = spec(dir.path(), "p", &options);
        let mut source = open_source(&spec, payments(), ONE).unwrap();
        let mut error = None;
        while error.is_none() {
            match source.next_changes() {
                Ok(Some(_)) => {}
                Ok(None) => break,
                Err(e) => error = Some(e.message),
            }
        }
        error.expect("an error")
    };
    let err = read(&registry.url);
    assert!(err.contains("offset 0"), "{err}");
    assert!(
        err.contains("HTTP 404") && err.contains("Schema 42 not found"),
        "{err}"
    );
    // A port nobody listens on: bind one, then let it go.
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", free.local_addr().unwrap());
    drop(free);
    let err = read(&url);
    assert!(
        err.contains(&format!("schema registry {url} is unreachable")),
        "{err}"
    );
}

#[test]
fn a_sink_registers_its_schema_and_frames_rows_with_the_id() {
    let registry = TestRegistry::start(&[(1, "\"string\"")]);
    let dir = tempfile::tempdir().unwrap();
    // The rows: fastavro's bare payments, decoded.
    let format = AvroFormat::Plain {
        legacy_timestamps: true,
    };
    let mut decoder = AvroDecoder::new("t", payments(), &format).unwrap();
    for body in messages("payments_bare") {
        decoder.decode(&body, &|| "fixture".to_string()).unwrap();
    }
    let batch = decoder.flush().unwrap();
    let fields: Vec<Field> = payments()
        .fields()
        .iter()
        .map(|f| Field {
            name: f.name().clone(),
            data_type: riffle_plan::types::flink_type(f.data_type(), true),
            arrow_type: f.data_type().to_string(),
            nullable: true,
            rowtime: false,
        })
        .collect();
    let options = [
        ("format", "avro-confluent"),
        ("avro-confluent.url", registry.url.as_str()),
    ];
    let sink_spec = spec(dir.path(), "out", &options);
    let mut sink = open_sink(&sink_spec, &fields, ONE, &PrintTarget::Stdout).unwrap();
    sink.write(&ChangeBatch::inserts(batch)).unwrap();
    sink.finish().unwrap();
    // Registered under `<topic>-value`, the derived schema text.
    let derived = std::fs::read_to_string(data_dir().join("payments.avsc")).unwrap();
    assert_eq!(
        registry.registered(),
        [("out-value".to_string(), derived.trim().to_string())]
    );
    let store = shared_store(dir.path()).unwrap();
    let queues = store.topic_config("out").unwrap().queues;
    let bodies: Vec<Vec<u8>> = (0..queues)
        .flat_map(|q| store.read("out", q, 0, 10).unwrap())
        .map(|m| m.message.body)
        .collect();
    assert_eq!(bodies.len(), 4);
    for body in &bodies {
        assert_eq!(&body[..5], &[0, 0, 0, 0, 2], "magic byte and id 2");
    }
    // The bodies after the prefix are the bytes fastavro wrote for the same rows.
    let mut expected: Vec<Vec<u8>> = messages("payments_bare");
    let mut written: Vec<Vec<u8>> = bodies.iter().map(|b| b[5..].to_vec()).collect();
    expected.sort();
    written.sort();
    assert_eq!(written, expected);
    // And the source reads them back.
    let mut rows = read_all(&spec(dir.path(), "out", &options), payments());
    rows.sort();
    assert_eq!(rows, PAYMENT_ROWS);
}
