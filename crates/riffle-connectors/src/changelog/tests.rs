use arrow::array::{Int32Array, StringArray};
use arrow::datatypes::{DataType, Field, Schema};
use riffle_plan::ConnectorSpec;

use super::*;

fn format(name: &str, pairs: &[(&str, &str)]) -> ChangelogFormat {
    let spec = ConnectorSpec {
        table: "t".into(),
        connector: "filesystem".into(),
        options: pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        metadata: Vec::new(),
        primary_key: Vec::new(),
        partition_keys: Vec::new(),
        read_columns: None,
    };
    let mut options = Options::new(&spec);
    let format = ChangelogFormat::from_options(name, &mut options)
        .unwrap()
        .unwrap();
    options.finish().unwrap();
    format
}

fn decoder(format: ChangelogFormat) -> ChangelogDecoder {
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int32, true),
        Field::new("name", DataType::Utf8, true),
    ]));
    ChangelogDecoder::new("t", schema, format).unwrap()
}

/// The decoded rows as Flink prints them.
fn rows(decoder: &mut ChangelogDecoder) -> Vec<String> {
    let changes = decoder.flush().unwrap();
    (0..changes.num_rows())
        .map(|i| {
            let mut s = String::new();
            crate::format::write_row(&mut s, changes.kind(i), &changes.batch, i);
            s
        })
        .collect()
}

#[test]
fn debezium_events_become_changes() {
    let mut d = decoder(format("debezium-json", &[]));
    for record in [
        r#"{"before":null,"after":{"id":1,"name":"a"},"op":"c"}"#,
        r#"{"before":{"id":1,"name":"a"},"after":{"id":1,"name":"b"},"op":"u"}"#,
        r#"{"before":{"id":1,"name":"b"},"after":null,"op":"d"}"#,
        r#"{"after":{"id":2},"op":"r"}"#,
    ] {
        d.decode(record, &String::new).unwrap();
    }
    assert_eq!(
        rows(&mut d),
        [
            "+I[1, a]",
            "-U[1, a]",
            "+U[1, b]",
            "-D[1, b]",
            "+I[2, null]"
        ]
    );
}

#[test]
fn debezium_schema_envelope_and_corrupt_events() {
    let mut d = decoder(format(
        "debezium-json",
        &[("debezium-json.schema-include", "true")],
    ));
    d.decode(
        r#"{"schema":{},"payload":{"after":{"id":1,"name":"a"},"op":"c"}}"#,
        &String::new,
    )
    .unwrap();
    let err = d
        .decode(r#"{"after":{"id":1},"op":"c"}"#, &|| "f:2".into())
        .unwrap_err();
    assert!(
        err.message.starts_with("Corrupt Debezium JSON message"),
        "{err}"
    );
    let err = decoder(format("debezium-json", &[]))
        .decode(r#"{"before":null,"after":{"id":1},"op":"u"}"#, &String::new)
        .unwrap_err();
    assert!(err.message.contains("REPLICA IDENTITY"), "{err}");
    assert_eq!(rows(&mut d), ["+I[1, a]"]);
}

#[test]
fn ignored_errors_skip_unreadable_events_and_null_bad_fields() {
    let mut d = decoder(format(
        "debezium-json",
        &[("debezium-json.ignore-parse-errors", "true")],
    ));
    for record in [
        r#"{"before":{"id":1,"name":"a"},"after":{"id":"x","name":"b"},"op":"u"}"#,
        "not json",
        r#"{"after":{"id":3},"op":"t"}"#,
        r#"{"after":{"id":4,"name":"d"},"op":"c"}"#,
        r#"{"before":null,"after":{"id":5},"op":"u"}"#,
    ] {
        d.decode(record, &String::new).unwrap();
    }
    assert_eq!(rows(&mut d), ["-U[1, a]", "+U[null, b]", "+I[4, d]"]);
}

#[test]
fn canal_updates_fill_unchanged_fields_and_filters_match_whole_names() {
    let mut d = decoder(format(
        "canal-json",
        &[
            ("canal-json.database.include", "db[0-9]"),
            ("canal-json.table.include", "t"),
        ],
    ));
    for record in [
        r#"{"data":[{"id":"1","name":"a"},{"id":"2","name":"b"}],"type":"INSERT","database":"db1","table":"t"}"#,
        r#"{"data":[{"id":"1","name":"z"}],"type":"INSERT","database":"db12","table":"t"}"#,
        r#"{"data":[{"id":"1","name":"z"}],"type":"INSERT","database":"db1","table":"tt"}"#,
        r#"{"data":[{"id":"1","name":"c"}],"old":[{"name":"a"}],"type":"UPDATE","database":"db1","table":"t"}"#,
        r#"{"data":[{"id":"2","name":"b"}],"type":"DELETE","database":"db1","table":"t"}"#,
        r#"{"data":null,"type":"CREATE","database":"db1","table":"t"}"#,
    ] {
        d.decode(record, &String::new).unwrap();
    }
    assert_eq!(
        rows(&mut d),
        ["+I[1, a]", "+I[2, b]", "-U[1, a]", "+U[1, c]", "-D[2, b]"]
    );
    let err = d
        .decode(
            r#"{"data":[{"id":"1"}],"type":"ALTER","database":"db1","table":"t"}"#,
            &String::new,
        )
        .unwrap_err();
    assert!(
        err.message.contains("Unknown \"type\" value \"ALTER\""),
        "{err}"
    );
}

#[test]
fn sinks_write_op_typed_events() {
    let columns: Vec<Arc<dyn Array>> = vec![
        Arc::new(Int32Array::from(vec![1])),
        Arc::new(StringArray::from(vec![Some("a")])),
    ];
    let columns: Vec<&dyn Array> = columns.iter().map(|c| c.as_ref()).collect();
    let types = [DataType::Int32, DataType::Utf8];
    let names = vec!["id".to_string(), "name".to_string()];
    let mut out = Vec::new();
    for name in ["debezium-json", "canal-json"] {
        let mut e = ChangelogEncoder::new("t", names.clone(), &types, format(name, &[])).unwrap();
        for kind in [RowKind::UpdateAfter, RowKind::Delete] {
            let mut s = String::new();
            e.encode(kind, &columns, 0, &mut s);
            out.push(s);
        }
    }
    assert_eq!(
        out,
        [
            r#"{"before":null,"after":{"id":1,"name":"a"},"op":"c"}"#,
            r#"{"before":{"id":1,"name":"a"},"after":null,"op":"d"}"#,
            r#"{"data":[{"id":1,"name":"a"}],"type":"INSERT"}"#,
            r#"{"data":[{"id":1,"name":"a"}],"type":"DELETE"}"#,
        ]
    );
    let include = format("debezium-json", &[("debezium-json.schema-include", "true")]);
    assert!(ChangelogEncoder::new("t", names, &types, include).is_err());
}
