use std::sync::Arc;

use arrow::array::{
    ArrayRef, BinaryArray, BooleanArray, Date32Array, Decimal128Array, Float32Array, Float64Array,
    Int16Array, Int32Array, Int64Array, Int8Array, ListArray, MapBuilder, StringArray,
    StringBuilder, StructArray, Time32MillisecondArray, TimestampMillisecondArray,
};
use arrow::datatypes::{DataType, Field, Fields, Schema as ArrowSchema, TimeUnit};
use arrow::record_batch::RecordBatch;

use super::schema::{derive, Schema};
use super::*;
use crate::format::write_row;
use crate::RowKind;

fn nullable(name: &str, t: DataType) -> Field {
    Field::new(name, t, true)
}

fn map_type() -> DataType {
    DataType::Map(
        Arc::new(Field::new(
            "entries",
            DataType::Struct(Fields::from(vec![
                Field::new("key", DataType::Utf8, false),
                Field::new("value", DataType::Int64, true),
            ])),
            false,
        )),
        false,
    )
}

fn address_type() -> DataType {
    DataType::Struct(Fields::from(vec![
        Field::new("city", DataType::Utf8, false),
        nullable("zip", DataType::Int32),
    ]))
}

/// A table with a column of every type the Avro formats map (legacy timestamp mapping).
fn every_type() -> Arc<ArrowSchema> {
    Arc::new(ArrowSchema::new(vec![
        Field::new("id", DataType::Int64, false),
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
        nullable(
            "tags",
            DataType::List(Arc::new(Field::new("item", DataType::Utf8, true))),
        ),
        nullable("counts", map_type()),
        nullable("address", address_type()),
        nullable(
            "history",
            DataType::List(Arc::new(Field::new("item", address_type(), true))),
        ),
    ]))
}

#[test]
fn the_derived_schema_follows_flinks_schema_converter() {
    let text = derive(every_type().fields(), true).unwrap();
    let pretty =
        serde_json::to_string_pretty(&serde_json::from_str::<Value>(&text).unwrap()).unwrap();
    insta::assert_snapshot!(pretty);
    // The registered text is Avro's compact form: no spaces, attributes in Avro's order.
    assert!(text.starts_with(
        r#"{"type":"record","name":"record","namespace":"org.apache.flink.avro.generated","fields":[{"name":"id","type":"long"},{"name":"flag","type":["null","boolean"],"default":null}"#
    ), "{text}");
    // Both Riffle's parser and arrow-avro take it.
    Schema::parse(&text).unwrap().record().unwrap();
    let mut store = SchemaStore::new_with_type(FingerprintAlgorithm::Id);
    store
        .set(Fingerprint::Id(1), AvroSchema::new(text.clone()))
        .unwrap();
    ReaderBuilder::new()
        .with_reader_schema(AvroSchema::new(text))
        .with_writer_schema_store(store)
        .build_decoder()
        .unwrap();
}

#[test]
fn the_new_timestamp_mapping_and_what_no_mapping_has() {
    let ts = |unit, tz: Option<&str>| {
        let schema = ArrowSchema::new(vec![Field::new(
            "ts",
            DataType::Timestamp(unit, tz.map(Arc::from)),
            false,
        )]);
        derive(schema.fields(), false)
    };
    let field = |text: String| -> Value {
        serde_json::from_str::<Value>(&text).unwrap()["fields"][0]["type"].clone()
    };
    assert_eq!(
        field(ts(TimeUnit::Millisecond, None).unwrap())["logicalType"],
        "local-timestamp-millis"
    );
    assert_eq!(
        field(ts(TimeUnit::Microsecond, None).unwrap())["logicalType"],
        "local-timestamp-micros"
    );
    assert_eq!(
        field(ts(TimeUnit::Microsecond, Some("UTC")).unwrap())["logicalType"],
        "timestamp-micros"
    );
    // Legacy mapping: TIMESTAMP up to precision 3 only, no TIMESTAMP_LTZ.
    let legacy = |unit, tz: Option<&str>| {
        let schema = ArrowSchema::new(vec![Field::new(
            "ts",
            DataType::Timestamp(unit, tz.map(Arc::from)),
            true,
        )]);
        derive(schema.fields(), true)
    };
    assert!(legacy(TimeUnit::Microsecond, None)
        .unwrap_err()
        .contains("precision"));
    assert!(legacy(TimeUnit::Millisecond, Some("UTC"))
        .unwrap_err()
        .contains("TIMESTAMP_LTZ"));
    let int_keys = ArrowSchema::new(vec![Field::new(
        "m",
        DataType::Map(
            Arc::new(Field::new(
                "entries",
                DataType::Struct(Fields::from(vec![
                    Field::new("key", DataType::Int32, false),
                    Field::new("value", DataType::Int32, true),
                ])),
                false,
            )),
            false,
        ),
        true,
    )]);
    assert!(derive(int_keys.fields(), true)
        .unwrap_err()
        .contains("non-string as key type"));
}

/// Three rows of [`every_type`]: values, NULLs, and edge values.
fn every_type_batch() -> RecordBatch {
    let ts = 1_586_937_605_120_i64; // 2020-04-15T08:00:05.120
    let mut counts = MapBuilder::new(None, StringBuilder::new(), Int64Array::builder(0));
    counts.keys().append_value("b");
    counts.values().append_value(2);
    counts.keys().append_value("a");
    counts.values().append_null();
    counts.append(true).unwrap();
    counts.append(false).unwrap();
    counts.append(true).unwrap();
    let counts = counts.finish();
    let counts = conform(&(Arc::new(counts) as ArrayRef), &map_type()).unwrap();
    let DataType::Struct(address_fields) = address_type() else {
        unreachable!("a struct type")
    };
    let address = StructArray::try_new(
        address_fields.clone(),
        vec![
            Arc::new(StringArray::from(vec!["Lyon", "", "Oslo"])) as ArrayRef,
            Arc::new(Int32Array::from(vec![Some(69000), None, Some(150)])),
        ],
        Some(vec![true, false, true].into()),
    )
    .unwrap();
    let history_values = StructArray::try_new(
        address_fields,
        vec![
            Arc::new(StringArray::from(vec!["Rome", "Bern"])) as ArrayRef,
            Arc::new(Int32Array::from(vec![Some(1), None])),
        ],
        None,
    )
    .unwrap();
    let history = ListArray::try_new(
        Arc::new(Field::new("item", address_type(), true)),
        arrow::buffer::OffsetBuffer::new(vec![0, 2, 2, 2].into()),
        Arc::new(history_values),
        Some(vec![true, false, true].into()),
    )
    .unwrap();
    let tags = {
        let mut b = arrow::array::ListBuilder::new(StringBuilder::new());
        b.values().append_value("x");
        b.values().append_null();
        b.append(true);
        b.append(false);
        b.append(true);
        b.finish()
    };
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from(vec![1, 2, i64::MIN])),
        Arc::new(BooleanArray::from(vec![Some(true), None, Some(false)])),
        Arc::new(Int8Array::from(vec![Some(-128), None, Some(127)])),
        Arc::new(Int16Array::from(vec![Some(-300), None, Some(32767)])),
        Arc::new(Int32Array::from(vec![Some(42), None, Some(i32::MIN)])),
        Arc::new(Float32Array::from(vec![
            Some(1.5),
            None,
            Some(f32::INFINITY),
        ])),
        Arc::new(Float64Array::from(vec![Some(-0.25), None, Some(1e300)])),
        Arc::new(StringArray::from(vec![Some("héllo"), None, Some("")])),
        Arc::new(BinaryArray::from(vec![
            Some(&[0u8, 255][..]),
            None,
            Some(&[][..]),
        ])),
        Arc::new(
            Decimal128Array::from(vec![Some(1234), None, Some(-99_999_999_999_999_999)])
                .with_precision_and_scale(18, 2)
                .unwrap(),
        ),
        Arc::new(Date32Array::from(vec![Some(18_367), None, Some(-1)])),
        Arc::new(Time32MillisecondArray::from(vec![
            Some(29_105_120),
            None,
            Some(0),
        ])),
        Arc::new(TimestampMillisecondArray::from(vec![
            Some(ts),
            None,
            Some(-1),
        ])),
        Arc::new(tags),
        counts,
        Arc::new(address),
        Arc::new(history),
    ];
    RecordBatch::try_new(every_type(), columns).unwrap()
}

fn printed(batch: &RecordBatch) -> Vec<String> {
    (0..batch.num_rows())
        .map(|row| {
            let mut s = String::new();
            write_row(&mut s, RowKind::Insert, batch, row);
            s
        })
        .collect()
}

fn encode_all(encoder: &AvroEncoder, batch: &RecordBatch) -> Vec<Vec<u8>> {
    let columns: Vec<&dyn Array> = batch.columns().iter().map(|c| c.as_ref()).collect();
    (0..batch.num_rows())
        .map(|row| {
            let mut body = Vec::new();
            encoder.encode(&columns, row, &mut body).unwrap();
            body
        })
        .collect()
}

#[test]
fn every_type_round_trips_through_bare_avro() {
    let format = AvroFormat::Plain {
        legacy_timestamps: true,
    };
    let batch = every_type_batch();
    let encoder = AvroEncoder::new("t", every_type().fields(), &format, "unused").unwrap();
    let bodies = encode_all(&encoder, &batch);
    let mut decoder = AvroDecoder::new("t", every_type(), &format).unwrap();
    let here = || "here".to_string();
    for body in &bodies {
        assert!(decoder.decode(body, &here).unwrap());
    }
    // An empty body (a tombstone) holds no row.
    assert!(!decoder.decode(&[], &here).unwrap());
    let decoded = decoder.flush().unwrap();
    assert_eq!(printed(&decoded), printed(&batch));
    assert_eq!(decoded.schema(), every_type());
    assert_eq!(decoder.flush().unwrap().num_rows(), 0);
}

#[test]
fn malformed_bodies_fail_naming_where_they_are() {
    let format = AvroFormat::Plain {
        legacy_timestamps: true,
    };
    let schema = Arc::new(ArrowSchema::new(vec![
        Field::new("id", DataType::Int64, false),
        nullable("s", DataType::Utf8),
    ]));
    let mut decoder = AvroDecoder::new("t", schema, &format).unwrap();
    let at = || "topic 'x' queue 0 offset 7".to_string();
    // id = 1, s = branch 1 with a string of 5 bytes of which only 2 are there.
    let err = decoder.decode(&[2, 2, 10, b'a', b'b'], &at).unwrap_err();
    assert!(err.message.contains("offset 7"), "{}", err.message);
    assert!(err.message.contains("truncated"), "{}", err.message);
    let err = decoder.decode(&[2, 6], &at).unwrap_err();
    assert!(err.message.contains("union branch 3"), "{}", err.message);
    // Bytes after the datum are not read, as Avro's DatumReader leaves them.
    assert!(decoder.decode(&[4, 0, 0xff, 0xff], &at).unwrap());
    assert_eq!(printed(&decoder.flush().unwrap()), ["+I[2, null]"]);
}

#[test]
fn the_reader_takes_the_writers_record_names() {
    let writer = Schema::parse(
        r#"{"type":"record","name":"Payment","namespace":"com.example","fields":[
            {"name":"extra","type":"string"},
            {"name":"address","type":{"type":"record","name":"Addr","fields":[
                {"name":"city","type":"string"}]}}]}"#,
    )
    .unwrap();
    let mut reader: Value = serde_json::from_str(
        &derive(
            ArrowSchema::new(vec![nullable("address", address_type())]).fields(),
            true,
        )
        .unwrap(),
    )
    .unwrap();
    align_names(&mut reader, &writer);
    assert_eq!(reader["name"], "Payment");
    assert_eq!(reader["namespace"], "com.example");
    let address = &reader["fields"][0]["type"][1];
    assert_eq!(address["name"], "Addr");
    assert!(address.get("namespace").is_none());
}

#[test]
fn options_are_read_and_unsupported_ones_refused() {
    let spec = |options: &[(&str, &str)]| riffle_plan::ConnectorSpec {
        table: "t".into(),
        connector: "rocketmq".into(),
        options: options
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        ..riffle_plan::ConnectorSpec::default()
    };
    let read = |name: &str, options: &[(&str, &str)]| {
        let spec = spec(options);
        let mut o = Options::new(&spec);
        AvroFormat::from_options(name, "t", &mut o).map(|f| f.map(|f| f.name()))
    };
    assert_eq!(read("avro", &[]).unwrap(), Some("avro"));
    assert_eq!(read("json", &[]).unwrap(), None);
    let err = read("avro", &[("avro.encoding", "json")]).unwrap_err();
    assert!(
        err.message.contains("unsupported feature"),
        "{}",
        err.message
    );
    let err = read("avro-confluent", &[]).unwrap_err();
    assert!(
        err.message.contains("avro-confluent.url"),
        "{}",
        err.message
    );
    let url = ("value.avro-confluent.url", "http://registry:8081");
    assert_eq!(
        read("avro-confluent", &[url]).unwrap(),
        Some("avro-confluent")
    );
    let err = read(
        "avro-confluent",
        &[url, ("avro-confluent.ssl.truststore.location", "/x")],
    )
    .unwrap_err();
    assert!(
        err.message
            .contains("avro-confluent.ssl.truststore.location"),
        "{}",
        err.message
    );
    let err = read(
        "avro-confluent",
        &[
            url,
            (
                "avro-confluent.bearer-auth.credentials-source",
                "OAUTHBEARER",
            ),
            ("avro-confluent.bearer-auth.token", "x"),
        ],
    )
    .unwrap_err();
    assert!(err.message.contains("OAUTHBEARER"), "{}", err.message);
}

#[test]
fn the_new_timestamp_mapping_round_trips_micros_and_instants() {
    let schema = Arc::new(ArrowSchema::new(vec![
        nullable("ts6", DataType::Timestamp(TimeUnit::Microsecond, None)),
        nullable(
            "ltz3",
            DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into())),
        ),
        nullable(
            "ltz6",
            DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
        ),
    ]));
    let micros = 1_586_937_605_123_456_i64;
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(arrow::array::TimestampMicrosecondArray::from(vec![
                Some(micros),
                Some(-1),
                None,
            ])),
            Arc::new(
                TimestampMillisecondArray::from(vec![Some(micros / 1000), None, Some(-1)])
                    .with_timezone("UTC"),
            ),
            Arc::new(
                arrow::array::TimestampMicrosecondArray::from(vec![None, Some(micros), Some(0)])
                    .with_timezone("UTC"),
            ),
        ],
    )
    .unwrap();
    let format = AvroFormat::Plain {
        legacy_timestamps: false,
    };
    let encoder = AvroEncoder::new("t", schema.fields(), &format, "unused").unwrap();
    let mut decoder = AvroDecoder::new("t", schema.clone(), &format).unwrap();
    for body in encode_all(&encoder, &batch) {
        decoder.decode(&body, &|| "here".to_string()).unwrap();
    }
    let decoded = decoder.flush().unwrap();
    assert_eq!(decoded, batch);
    assert_eq!(
        printed(&decoded)[0],
        "+I[2020-04-15T08:00:05.123456, 2020-04-15T08:00:05.123Z, null]"
    );
}

#[test]
fn more_rows_than_a_decoder_batch_and_a_given_schema_of_another_shape() {
    let schema = Arc::new(ArrowSchema::new(vec![Field::new(
        "n",
        DataType::Int64,
        false,
    )]));
    let format = AvroFormat::Plain {
        legacy_timestamps: true,
    };
    let mut decoder = AvroDecoder::new("t", schema.clone(), &format).unwrap();
    let rows = crate::BATCH_SIZE as i64 + 10;
    for n in 0..rows {
        let mut body = Vec::new();
        super::schema::write_long(&mut body, n);
        assert!(decoder.decode(&body, &|| "here".to_string()).unwrap());
    }
    let batch = decoder.flush().unwrap();
    let values = batch
        .column(0)
        .as_primitive::<arrow::datatypes::Int64Type>();
    assert_eq!(values.len() as i64, rows);
    assert!(values.iter().enumerate().all(|(i, v)| v == Some(i as i64)));
    let registry = registry::Registry::new("http://127.0.0.1:1", registry::Auth::None).unwrap();
    let given = AvroFormat::Confluent(ConfluentOptions {
        registry: Arc::new(registry),
        subject: None,
        schema: Some(r#"{"type":"record","name":"r","fields":[{"name":"a","type":"long"},{"name":"b","type":"long"}]}"#.into()),
    });
    let err = AvroDecoder::new("t", schema, &given).err().unwrap();
    assert!(err.message.contains("2 fields"), "{}", err.message);
}
