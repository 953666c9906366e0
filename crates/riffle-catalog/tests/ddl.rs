//! DDL semantics: LIKE merging with Flink's defaults, time attributes, primary keys, column
//! roles, connector resolution, catalog paths, functions.

mod common;

use common::{analyze, render};
use riffle_catalog::{ColumnRole, FunctionRef, OptionStyle, TimeAttribute};
use riffle_sql::ast::{Ident, ObjectName};

fn name(parts: &[&str]) -> ObjectName {
    ObjectName::from(parts.iter().map(|p| Ident::new(*p)).collect::<Vec<_>>())
}

const BASE: &str = "CREATE TABLE base (
    id BIGINT,
    ts TIMESTAMP(3),
    doubled AS id * 2,
    part STRING METADATA FROM 'partition' VIRTUAL,
    WATERMARK FOR ts AS ts - INTERVAL '1' SECOND,
    PRIMARY KEY (id) NOT ENFORCED
) PARTITIONED BY (id) WITH ('connector' = 'datagen', 'rows-per-second' = '5');
";

#[test]
fn like_defaults_include_all_and_overwrite_options() {
    let sql =
        format!("{BASE}CREATE TABLE d (extra STRING) WITH ('rows-per-second' = '10') LIKE base;");
    let analysis = analyze(&sql);
    assert!(
        analysis.diagnostics.is_empty(),
        "{}",
        render(&sql, &analysis)
    );
    let d = analysis.catalog.table(&name(&["d"])).unwrap();
    let columns: Vec<&str> = d.columns.iter().map(|c| c.name.as_str()).collect();
    // Base columns first, then the new ones (MergeTableLikeUtil).
    assert_eq!(columns, ["id", "ts", "doubled", "part", "extra"]);
    assert_eq!(d.primary_key, ["id"]);
    assert_eq!(d.partition_keys, ["id"]);
    assert_eq!(d.watermark.as_ref().map(|w| w.column.as_str()), Some("ts"));
    assert_eq!(
        d.column("ts").unwrap().time_attribute,
        Some(TimeAttribute::Rowtime)
    );
    assert_eq!(d.option("rows-per-second"), Some("10"));
    assert_eq!(d.option("connector"), Some("datagen"));
}

#[test]
fn like_excluding_all_keeps_physical_columns_only() {
    let sql =
        format!("{BASE}CREATE TABLE d WITH ('connector' = 'blackhole') LIKE base (EXCLUDING ALL);");
    let analysis = analyze(&sql);
    assert!(
        analysis.diagnostics.is_empty(),
        "{}",
        render(&sql, &analysis)
    );
    let d = analysis.catalog.table(&name(&["d"])).unwrap();
    let columns: Vec<&str> = d.columns.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(columns, ["id", "ts"]);
    assert!(d.primary_key.is_empty() && d.partition_keys.is_empty() && d.watermark.is_none());
    assert_eq!(
        d.options,
        [("connector".to_string(), "blackhole".to_string())]
    );
    // Without the watermark the column is a plain timestamp. Columns are copied from the base
    // table's resolved schema, where the key column already is NOT NULL.
    assert_eq!(d.column("ts").unwrap().time_attribute, None);
    assert_eq!(
        d.column("id").unwrap().data_type.to_string(),
        "BIGINT NOT NULL"
    );
}

#[test]
fn like_including_all_excluding_generated() {
    let sql = format!("{BASE}CREATE TABLE d LIKE base (INCLUDING ALL EXCLUDING GENERATED);");
    let analysis = analyze(&sql);
    assert!(
        analysis.diagnostics.is_empty(),
        "{}",
        render(&sql, &analysis)
    );
    let d = analysis.catalog.table(&name(&["d"])).unwrap();
    assert!(d.column("doubled").is_none());
    assert!(d.column("part").is_some());
}

#[test]
fn like_overwriting_watermarks_replaces_the_strategy() {
    let sql = format!(
        "{BASE}CREATE TABLE d (WATERMARK FOR ts AS ts) LIKE base (OVERWRITING WATERMARKS);"
    );
    let analysis = analyze(&sql);
    assert!(
        analysis.diagnostics.is_empty(),
        "{}",
        render(&sql, &analysis)
    );
    let d = analysis.catalog.table(&name(&["d"])).unwrap();
    assert_eq!(d.watermark.as_ref().unwrap().expr.to_string(), "ts");
    // The default (INCLUDING WATERMARKS) rejects a second watermark on the same column.
    let sql = format!("{BASE}CREATE TABLE e (WATERMARK FOR ts AS ts) LIKE base;");
    let analysis = analyze(&sql);
    assert_eq!(analysis.diagnostics.len(), 1, "{}", render(&sql, &analysis));
    assert!(analysis.diagnostics[0]
        .message
        .starts_with("There already exists a watermark spec"));
}

#[test]
fn like_rejects_a_second_primary_key_and_physical_duplicates() {
    let sql = format!("{BASE}CREATE TABLE d (id BIGINT, PRIMARY KEY (ts) NOT ENFORCED) LIKE base;");
    let analysis = analyze(&sql);
    let messages: Vec<&str> = analysis
        .diagnostics
        .iter()
        .map(|d| d.message.as_str())
        .collect();
    assert_eq!(
        messages,
        [
            "A column named 'id' already exists in the base table.",
            "The base table already has a primary key. You might want to specify EXCLUDING CONSTRAINTS.",
        ]
    );
}

#[test]
fn column_roles_time_attributes_and_sink_schema() {
    let sql = "CREATE TABLE t (
        id INT PRIMARY KEY NOT ENFORCED,
        payload STRING,
        ts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp',
        topic STRING METADATA VIRTUAL,
        pt AS PROCTIME(),
        WATERMARK FOR ts AS ts - INTERVAL '5' SECOND
    ) WITH ('connector' = 'kafka', 'topic' = 't', 'properties.bootstrap.servers' = 'b:9092',
            'format' = 'json');";
    let analysis = analyze(sql);
    assert!(
        analysis.diagnostics.is_empty(),
        "{}",
        render(sql, &analysis)
    );
    let t = analysis.catalog.table(&name(&["t"])).unwrap();
    assert_eq!(
        t.column("id").unwrap().data_type.to_string(),
        "INT NOT NULL"
    );
    assert_eq!(
        t.column("ts").unwrap().kind,
        ColumnRole::Metadata {
            key: "timestamp".into(),
            is_virtual: false
        }
    );
    assert_eq!(
        t.column("ts").unwrap().time_attribute,
        Some(TimeAttribute::Rowtime)
    );
    let pt = t.column("pt").unwrap();
    assert_eq!(pt.data_type.to_string(), "TIMESTAMP_LTZ(3) NOT NULL");
    assert_eq!(pt.time_attribute, Some(TimeAttribute::Proctime));
    // Sources read every column; sinks write physical and non-virtual metadata columns.
    assert_eq!(
        t.source_schema().to_string(),
        "[id: INT NOT NULL, payload: STRING, ts: TIMESTAMP_LTZ(3) *ROWTIME*, topic: STRING, \
         pt: TIMESTAMP_LTZ(3) NOT NULL *PROCTIME*]"
    );
    assert_eq!(
        t.sink_schema().to_string(),
        "[id: INT NOT NULL, payload: STRING, ts: TIMESTAMP_LTZ(3) *ROWTIME*]"
    );
    assert_eq!(t.connector.formats, ["json"]);
}

#[test]
fn computed_columns_see_physical_and_metadata_columns_only() {
    let sql = "CREATE TABLE t (a INT, b AS a + 1, c AS b + 1) WITH ('connector' = 'datagen');";
    let analysis = analyze(sql);
    let d = &analysis.diagnostics;
    assert_eq!(d.len(), 1, "{}", render(sql, &analysis));
    assert_eq!(d[0].message, "Column 'b' not found in any table");
}

#[test]
fn connector_styles() {
    let sql = "CREATE TABLE cur (a INT) WITH ('connector' = 'rocketmq',
            'rocketmq.client.endpoints' = 'h:8081', 'rocketmq.source.topic' = 't',
            'rocketmq.source.group' = 'g', 'format' = 'json');
        CREATE TABLE rsq (a INT) WITH (type = 'rocketmq', topic = 't', namesrvAddr = 'h:9876');
        CREATE TABLE old (a INT) WITH ('connector.type' = 'kafka', 'connector.topic' = 't');";
    let analysis = analyze(sql);
    assert!(!analysis.has_errors(), "{}", render(sql, &analysis));
    let info = |n: &str| {
        analysis
            .catalog
            .table(&name(&[n]))
            .unwrap()
            .connector
            .clone()
    };
    let cur = info("cur");
    assert_eq!(cur.name.as_deref(), Some("rocketmq"));
    assert_eq!(cur.option_style, OptionStyle::Current);
    assert_eq!(cur.generation.as_deref(), Some("rocketmq-dot"));
    let rsq = info("rsq");
    assert_eq!(rsq.option_style, OptionStyle::RsqldbType);
    assert!(
        rsq.generation
            .as_deref()
            .is_some_and(|g| g.contains("rsqldb")),
        "{rsq:?}"
    );
    let old = info("old");
    assert_eq!(old.name.as_deref(), Some("kafka"));
    assert_eq!(old.option_style, OptionStyle::LegacyConnectorType);
}

#[test]
fn role_specific_required_options_follow_use() {
    // upsert-kafka needs a primary key and key/value formats for every role; kafka's
    // `properties.group.id` is only optional. A table that is never used is not held to
    // role-specific options.
    let sql = "CREATE TABLE k (a INT) WITH ('connector' = 'kafka', 'topic' = 't',
        'properties.bootstrap.servers' = 'b:9092', 'format' = 'json');
        CREATE TABLE s (a INT) WITH ('connector' = 'blackhole');
        INSERT INTO s SELECT a FROM k;";
    let analysis = analyze(sql);
    assert!(
        analysis.diagnostics.is_empty(),
        "{}",
        render(sql, &analysis)
    );
    assert_eq!(
        analysis.statements[2].output.as_ref().unwrap().to_string(),
        "[a: INT]"
    );
}

#[test]
fn use_database_and_qualified_names() {
    let sql = "CREATE TABLE a (x INT) WITH ('connector' = 'datagen');
        USE other;
        CREATE TABLE a (y INT) WITH ('connector' = 'datagen');
        SELECT x FROM default_database.a;
        SELECT y FROM a;
        SELECT a.y, default_catalog.other.a.y FROM other.a;";
    let analysis = analyze(sql);
    assert!(
        analysis.diagnostics.is_empty(),
        "{}",
        render(sql, &analysis)
    );
    let t = analysis
        .catalog
        .table(&name(&["default_catalog", "other", "a"]))
        .unwrap();
    assert_eq!(t.path.to_string(), "default_catalog.other.a");
}

#[test]
fn temporary_tables_shadow_permanent_ones() {
    let sql = "CREATE TABLE a (x INT) WITH ('connector' = 'datagen');
        CREATE TEMPORARY TABLE a (y INT) WITH ('connector' = 'datagen');
        SELECT y FROM a;";
    let analysis = analyze(sql);
    assert!(
        analysis.diagnostics.is_empty(),
        "{}",
        render(sql, &analysis)
    );
}

#[test]
fn views_carry_their_query_schema() {
    let sql = "CREATE TABLE a (x INT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts)
            WITH ('connector' = 'datagen');
        CREATE VIEW v (k, t) AS SELECT x, ts FROM a WHERE x > 0;
        SELECT * FROM TABLE(TUMBLE(TABLE v, DESCRIPTOR(t), INTERVAL '1' MINUTE));
        DROP VIEW v;
        DROP VIEW IF EXISTS v;";
    let analysis = analyze(sql);
    assert!(
        analysis.diagnostics.is_empty(),
        "{}",
        render(sql, &analysis)
    );
    assert_eq!(
        analysis.statements[1].output.as_ref().unwrap().to_string(),
        "[k: INT, t: TIMESTAMP(3) *ROWTIME*]"
    );
    assert!(analysis.catalog.view(&name(&["v"])).is_none());
}

#[test]
fn regular_join_output_is_not_a_time_attribute() {
    // compat-tests/cases/errors/regular_join_loses_rowtime.test
    let sql = "CREATE TABLE t (id INT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts)
            WITH ('connector' = 'datagen');
        CREATE TEMPORARY VIEW j AS SELECT a.ts, a.id FROM t a JOIN t b ON a.id = b.id;
        CREATE TEMPORARY VIEW i AS SELECT a.ts, a.id FROM t a JOIN t b
            ON a.id = b.id AND a.ts BETWEEN b.ts - INTERVAL '1' MINUTE AND b.ts;";
    let analysis = analyze(sql);
    assert!(
        analysis.diagnostics.is_empty(),
        "{}",
        render(sql, &analysis)
    );
    let view = |n: &str| {
        analysis
            .catalog
            .view(&name(&[n]))
            .unwrap()
            .schema
            .to_string()
    };
    assert_eq!(view("j"), "[ts: TIMESTAMP(3), id: INT]");
    // An interval join keeps it.
    assert_eq!(view("i"), "[ts: TIMESTAMP(3) *ROWTIME*, id: INT]");
}

#[test]
fn functions_resolve_builtin_then_user() {
    let sql =
        "CREATE FUNCTION my_upper AS 'com.example.Upper' LANGUAGE JAVA USING JAR '/tmp/u.jar';
        CREATE TEMPORARY SYSTEM FUNCTION upper AS 'com.example.MyUpper';
        CREATE FUNCTION lower AS 'com.example.MyLower';";
    let analysis = analyze(sql);
    assert!(
        analysis.diagnostics.is_empty(),
        "{}",
        render(sql, &analysis)
    );
    let catalog = &analysis.catalog;
    match catalog.function("MY_UPPER") {
        Some(FunctionRef::User(f)) => {
            assert_eq!(f.identifier, "com.example.Upper");
            assert_eq!(f.language, "JAVA");
            assert_eq!(f.jars, ["/tmp/u.jar"]);
        }
        other => panic!("{other:?}"),
    }
    // A temporary system function shadows the built-in; a catalog function does not.
    assert!(matches!(
        catalog.function("upper"),
        Some(FunctionRef::User(_))
    ));
    assert!(matches!(
        catalog.function("lower"),
        Some(FunctionRef::Builtin(_))
    ));
    assert!(
        matches!(catalog.function("count"), Some(FunctionRef::Builtin(f)) if f.name == "COUNT")
    );
    assert!(catalog.function("nope").is_none());
}

#[test]
fn ctas_takes_the_query_schema() {
    let sql = "CREATE TABLE a (x INT, s STRING) WITH ('connector' = 'datagen');
        CREATE TABLE b WITH ('connector' = 'blackhole') AS SELECT x, UPPER(s) AS u FROM a;";
    let analysis = analyze(sql);
    assert!(
        analysis.diagnostics.is_empty(),
        "{}",
        render(sql, &analysis)
    );
    let b = analysis.catalog.table(&name(&["b"])).unwrap();
    assert_eq!(b.source_schema().to_string(), "[x: INT, u: STRING]");
}

#[test]
fn alter_table_add_column() {
    // compat-tests/cases/ddl/alter_table_add_column.test
    let sql = "CREATE TABLE items (id INT, price DECIMAL(6, 2)) WITH ('connector' = 'datagen');
        ALTER TABLE items ADD cost AS price * 100;
        ALTER TABLE items ADD note STRING;
        ALTER TABLE items RENAME TO goods;
        SELECT id, cost, note, other FROM items;";
    let analysis = analyze(sql);
    // The RENAME is not modelled: the table is only marked as altered, so an unknown column is
    // accepted with an unknown type instead of being reported.
    assert!(
        analysis.diagnostics.is_empty(),
        "{}",
        render(sql, &analysis)
    );
    assert_eq!(
        analysis.statements[4].output.as_ref().unwrap().to_string(),
        "[id: INT, cost: DECIMAL(17, 2), note: STRING, other: UNKNOWN]"
    );
    let path = analysis.catalog.resolve_path(&name(&["items"])).unwrap();
    assert!(analysis.catalog.is_altered(&path));
}

#[test]
fn filesystem_leaves_format_options_unchecked() {
    // compat-tests/cases/errors/unknown_format_option.test: Flink ran it.
    let sql = "CREATE TABLE f (a INT) WITH ('connector' = 'filesystem', 'path' = '/tmp/f',
        'format' = 'csv', 'csv.no-such-thing' = 'x', 'csv.field-delimiter' = ';');
        SELECT * FROM f;";
    let analysis = analyze(sql);
    assert!(
        analysis.diagnostics.is_empty(),
        "{}",
        render(sql, &analysis)
    );
}

#[test]
fn other_connectors_check_format_options() {
    // Only connectors whose schema sets `unchecked_format_options` (filesystem) let unknown
    // `<format>.*` keys through; Flink's kafka factory validates them.
    let sql = "CREATE TABLE k (a INT) WITH ('connector' = 'kafka', 'topic' = 't',
        'properties.bootstrap.servers' = 'b:9092', 'format' = 'csv', 'csv.no-such-thing' = 'x');
        SELECT * FROM k;";
    let analysis = analyze(sql);
    assert!(
        analysis
            .diagnostics
            .iter()
            .any(|d| d.code == "unknown-option" && d.message.contains("'kafka'")),
        "{}",
        render(sql, &analysis)
    );
}
