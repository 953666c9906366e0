//! Checks the public API against the embedded data files.

use riffle_dialects::{
    config_option, connector, connectors, did_you_mean, feature, format, formats, function,
    function_categories, functions, init, ChangelogMode, FunctionKind, Nullability, OptionType,
    ReturnRule, Role, Support,
};

#[test]
fn registry_initialises() {
    if let Err(e) = init() {
        panic!("{e}");
    }
}

#[test]
fn every_brief_connector_and_format_exists() {
    for name in [
        "rocketmq",
        "kafka",
        "upsert-kafka",
        "filesystem",
        "datagen",
        "print",
        "blackhole",
        "nexmark",
    ] {
        assert!(connector(name).is_some(), "connector {name}");
    }
    for name in [
        "json",
        "csv",
        "raw",
        "debezium-json",
        "canal-json",
        "avro",
        "avro-confluent",
        "debezium-avro-confluent",
        "maxwell-json",
        "ogg-json",
    ] {
        assert!(format(name).is_some(), "format {name}");
    }
    assert!(
        connector("Kafka").is_none(),
        "connector identifiers are case-sensitive like Flink's"
    );
    assert_eq!(connectors().len(), 8);
    assert_eq!(formats().len(), 10);
}

#[test]
fn kafka_options_types_and_fallbacks() {
    let kafka = connector("kafka").expect("kafka");
    assert!(matches!(kafka.support, Support::NeedsMigration { .. }));
    let guarantee = kafka
        .option("sink.semantic")
        .expect("deprecated key resolves");
    assert_eq!(guarantee.key, "sink.delivery-guarantee");
    assert_eq!(guarantee.roles, vec![Role::Sink]);
    let props = kafka
        .option("properties.max.poll.records")
        .expect("properties.* family");
    assert_eq!(props.key, "properties.*");
    let bootstrap = kafka
        .option("properties.bootstrap.servers")
        .expect("exact key wins");
    assert!(bootstrap.required);
    assert!(kafka.option("scan.startup.mod").is_none());
    assert_eq!(
        did_you_mean("scan.startup.mod", kafka.known_keys()),
        Some("scan.startup.mode")
    );
    let mode = kafka.option("scan.startup.mode").expect("mode");
    assert!(mode.ty.validate("latest-offset").is_ok());
    assert!(mode.ty.validate("latest").is_err());
    assert!(kafka.format.required);
    let interval = kafka
        .option("scan.topic-partition-discovery.interval")
        .expect("interval");
    assert_eq!(interval.ty, OptionType::Duration);
}

#[test]
fn datagen_field_patterns_match_column_names() {
    let datagen = connector("datagen").expect("datagen");
    let kind = datagen
        .option("fields.user_id.kind")
        .expect("fields.#.kind");
    assert!(kind.ty.validate("sequence").is_ok());
    assert!(kind.ty.validate("sequential").is_err());
    assert!(datagen.option("fields.user_id.kinds").is_none());
    assert!(datagen.format.is_none());
}

#[test]
fn rocketmq_generations_share_canonical_meanings() {
    let mq = connector("rocketmq").expect("rocketmq");
    for generation in ["legacy", "rocketmq-dot", "rsqldb", "riffle"] {
        assert!(
            mq.generation(generation).next().is_some(),
            "generation {generation}"
        );
    }
    let canonical = |key: &str| mq.option(key).and_then(|o| o.canonical.clone());
    assert_eq!(
        canonical("nameServerAddress"),
        canonical("rocketmq.client.endpoints")
    );
    assert_eq!(
        canonical("namesrvAddr"),
        canonical("rocketmq.client.endpoints")
    );
    assert_eq!(
        canonical("consumerGroup"),
        canonical("rocketmq.source.group")
    );
    assert_eq!(canonical("groupName"), canonical("rocketmq.source.group"));
    // Every legacy or rsqlDB spelling says what it becomes, is still read as it is by the
    // current connector, or is rejected with a reason.
    for o in mq.generation("legacy").chain(mq.generation("rsqldb")) {
        let accounted = match &o.support {
            Support::NeedsMigration { .. } => true,
            Support::Unsupported { reason } => {
                o.description.contains("still read under this name")
                    || reason.contains("no Flink format")
            }
            // Accepted as written by Riffle's own connector.
            Support::Supported => o.description.contains("still read under this name"),
        };
        assert!(accounted, "{} lacks a migration", o.key);
    }
    let store = mq.option("riffle.store.dir").expect("riffle option");
    assert!(store.description.starts_with("Riffle-only"));
}

#[test]
fn formats_carry_changelog_modes_and_full_keys() {
    assert_eq!(
        format("json").map(|f| f.changelog),
        Some(ChangelogMode::InsertOnly)
    );
    assert_eq!(
        format("debezium-json").map(|f| f.changelog),
        Some(ChangelogMode::All)
    );
    let csv = format("csv").expect("csv");
    let delimiter = csv.option("csv.field-delimiter").expect("delimiter");
    assert!(delimiter.ty.validate("\\t").is_ok());
    assert!(delimiter.ty.validate(",,").is_err());
    let standard = format("json")
        .and_then(|f| f.option("json.timestamp-format.standard"))
        .expect("standard");
    assert!(standard.ty.validate("ISO-8601").is_ok());
    assert!(
        standard.ty.validate("iso-8601").is_err(),
        "Flink compares this value exactly"
    );
}

#[test]
fn features_follow_the_status_policy() {
    assert!(feature("stmt.set").is_some_and(|f| f.support.is_supported()));
    assert!(matches!(
        feature("ddl.legacy-watermark").map(|f| &f.support),
        Some(Support::NeedsMigration { .. })
    ));
    // Derived ids mirror the connector/format files.
    assert_eq!(
        feature("connector.kafka").map(|f| &f.support),
        connector("kafka").map(|c| &c.support)
    );
    assert!(feature("format.csv").is_some());
    // Whether a supported status is true is the engine's to say: riffle-toolkit's
    // `engine_agreement` test holds these statuses to the planner.
    assert!(feature("query.window-tvf.tumble").is_some_and(|f| f.support.is_supported()));
}

#[test]
fn functions_cover_the_documented_list() {
    let names = [
        "COUNT",
        "SUM",
        "AVG",
        "MIN",
        "MAX",
        "STDDEV_POP",
        "STDDEV_SAMP",
        "VAR_POP",
        "VAR_SAMP",
        "COLLECT",
        "LISTAGG",
        "FIRST_VALUE",
        "LAST_VALUE",
        "ARRAY_AGG",
        "JSON_OBJECTAGG",
        "JSON_ARRAYAGG",
        "ROW_NUMBER",
        "RANK",
        "DENSE_RANK",
        "CUME_DIST",
        "PERCENT_RANK",
        "NTILE",
        "LEAD",
        "LAG",
        "TUMBLE",
        "HOP",
        "CUMULATE",
        "SESSION",
        "TUMBLE_START",
        "TUMBLE_END",
        "TUMBLE_ROWTIME",
        "TUMBLE_PROCTIME",
        "HOP_START",
        "SESSION_END",
        "PROCTIME",
        "CURRENT_WATERMARK",
        "||",
        "IS DISTINCT FROM",
        "LIKE",
        "BETWEEN",
        "IN",
        "CASE",
        "CAST",
        "TRY_CAST",
        "EXTRACT",
        "POSITION",
        "TRIM",
        "OVERLAY",
        "SUBSTRING",
        "FLOOR",
        "CEIL",
        "JSON_VALUE",
        "DATE_FORMAT",
        "TO_TIMESTAMP_LTZ",
        "UNNEST",
    ];
    for name in names {
        assert!(function(name).is_some(), "missing function {name}");
    }
    assert!(function("cast").is_some_and(|f| f.syntax));
    assert_eq!(function("ceiling").map(|f| f.name.as_str()), Some("CEIL"));
    assert_eq!(
        function("character_length").map(|f| f.name.as_str()),
        Some("CHAR_LENGTH")
    );
    assert!(function("no_such_function").is_none());
    let sum = function("sum").expect("sum");
    assert_eq!(sum.kind, FunctionKind::Aggregate);
    assert_eq!(sum.signatures[0].returns, ReturnRule::SumOf(0));
    assert_eq!(
        function("row_number").map(|f| f.kind),
        Some(FunctionKind::OverOnly)
    );
    // Every function's category is one of the declared ones.
    for f in functions() {
        assert!(function_categories().contains(&f.category), "{}", f.name);
    }
}

#[test]
fn config_lookups_follow_fallback_keys_and_types() {
    assert!(config_option("pipeline.name").is_some());
    let backend = config_option("state.backend").expect("deprecated key resolves");
    assert_eq!(backend.key, "state.backend.type");
    let ttl = config_option("table.exec.state.ttl").expect("ttl");
    assert!(ttl.ty.validate("1 h").is_ok());
    assert!(ttl.ty.validate("one hour").is_err());
    let mode = config_option("execution.runtime-mode").expect("mode");
    assert!(
        mode.ty.validate("batch").is_ok(),
        "Flink enum options ignore case"
    );
    for key in [
        "table.exec.mini-batch.enabled",
        "table.dml-sync",
        "sql-client.execution.result-mode",
        "execution.checkpointing.interval",
    ] {
        assert!(config_option(key).is_some(), "missing {key}");
    }
}

#[test]
fn function_results_say_when_they_are_null() {
    let nullability = |name: &str| -> Vec<Nullability> {
        let f = function(name).unwrap_or_else(|| panic!("missing function {name}"));
        f.signatures.iter().map(|s| s.nullable).collect()
    };
    // Flink's forceNullable / FlinkSqlOperatorTable's *_FORCE_NULLABLE: NULL on bad input.
    for name in [
        "TO_TIMESTAMP",
        "TO_TIMESTAMP_LTZ",
        "TO_DATE",
        "DATE_FORMAT",
        "CONVERT_TZ",
        "PARSE_URL",
        "URL_DECODE",
        "URL_ENCODE",
        "STR_TO_MAP",
        "CHR",
        "FROM_UNIXTIME",
        "PRINTF",
        "JSON_VALUE",
        "TRY_CAST",
    ] {
        assert!(
            nullability(name).iter().all(|n| *n == Nullability::Always),
            "{name} is always nullable"
        );
    }
    assert_eq!(nullability("UPPER"), [Nullability::Args]);
    assert_eq!(nullability("COALESCE"), [Nullability::AllArgs]);
    assert_eq!(nullability("LAG"), [Nullability::Arg(2)]);
    assert_eq!(nullability("TRANSLATE"), [Nullability::Arg(0)]);
    assert_eq!(nullability("COLLECT"), [Nullability::Never]);
    assert_eq!(nullability("IS_DIGIT"), [Nullability::Never; 2]);
    // Calcite's ReturnTypes.explicit(CHAR, n) for the fixed-length hashes.
    for (name, n) in [
        ("MD5", 32),
        ("SHA1", 40),
        ("SHA224", 56),
        ("SHA256", 64),
        ("SHA384", 96),
        ("SHA512", 128),
    ] {
        let f = function(name).expect("hash function");
        for s in &f.signatures {
            assert_eq!(s.returns, ReturnRule::Type(format!("CHAR({n})")), "{name}");
        }
    }
    // GROUPING(a) and JSON_OBJECT() are valid calls.
    let grouping = function("GROUPING").expect("grouping");
    assert!(grouping.signatures[0]
        .args
        .iter()
        .all(|a| a.variadic && !a.optional));
    let json_object = function("JSON_OBJECT").expect("json_object");
    assert!(json_object.signatures[0].args.iter().all(|a| a.optional));
    assert!(function("HASH_CODE").is_some());
}

#[test]
fn only_filesystem_leaves_format_options_unchecked() {
    for c in connectors() {
        assert_eq!(
            c.format.unchecked_format_options,
            c.name == "filesystem",
            "{}",
            c.name
        );
    }
}
