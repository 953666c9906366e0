//! One test per kind of error: each asserts the diagnostic's code and the exact source text its
//! span covers (and the Flink wording where Flink has one).

mod common;

use common::{analyze, assert_error, render};

const ORDERS: &str = "CREATE TABLE orders (
    id BIGINT, item STRING, price DECIMAL(10, 2), qty INT, ts TIMESTAMP(3),
    WATERMARK FOR ts AS ts - INTERVAL '5' SECOND
) WITH ('connector' = 'datagen');
CREATE TABLE items (id BIGINT, item STRING) WITH ('connector' = 'datagen');
CREATE TABLE sink (id BIGINT, total DECIMAL(38, 2)) WITH ('connector' = 'blackhole');
";

fn with_orders(sql: &str) -> String {
    format!("{ORDERS}{sql}")
}

#[test]
fn unknown_table_in_from() {
    let d = assert_error(
        &with_orders("SELECT * FROM order_lines;"),
        "unknown-table",
        "order_lines",
    );
    assert_eq!(d.message, "Object 'order_lines' not found");
}

#[test]
fn unknown_table_suggests_close_name() {
    let d = assert_error(
        &with_orders("SELECT * FROM ordres;"),
        "unknown-table",
        "ordres",
    );
    assert_eq!(d.help.as_deref(), Some("did you mean 'orders'?"));
}

#[test]
fn unknown_column() {
    let d = assert_error(
        &with_orders("SELECT amount FROM orders;"),
        "unknown-column",
        "amount",
    );
    assert_eq!(d.message, "Column 'amount' not found in any table");
}

#[test]
fn unknown_qualified_column() {
    let d = assert_error(
        &with_orders("SELECT o.prise FROM orders o;"),
        "unknown-column",
        "prise",
    );
    assert_eq!(d.message, "Column 'prise' not found in table 'o'");
    assert_eq!(d.help.as_deref(), Some("did you mean 'price'?"));
}

#[test]
fn unknown_qualifier() {
    let d = assert_error(
        &with_orders("SELECT x.id FROM orders o;"),
        "unknown-table",
        "x",
    );
    assert_eq!(d.message, "Table 'x' not found");
}

#[test]
fn ambiguous_column() {
    let d = assert_error(
        &with_orders("SELECT item FROM orders o JOIN items i ON o.id = i.id;"),
        "ambiguous-column",
        "item",
    );
    assert_eq!(d.message, "Column 'item' is ambiguous");
}

#[test]
fn unknown_function() {
    let d = assert_error(
        &with_orders("SELECT my_fn(item, qty) FROM orders;"),
        "unknown-function",
        "my_fn",
    );
    assert_eq!(
        d.message,
        "No match found for function signature my_fn(<CHARACTER>, <NUMERIC>)"
    );
}

#[test]
fn misspelled_function_gets_a_suggestion() {
    let d = assert_error(
        &with_orders("SELECT UPPPER(item) FROM orders;"),
        "unknown-function",
        "UPPPER",
    );
    assert_eq!(d.help.as_deref(), Some("did you mean 'UPPER'?"));
}

#[test]
fn wrong_argument_count() {
    let d = assert_error(
        &with_orders("SELECT UPPER(item, item) FROM orders;"),
        "wrong-argument-count",
        "UPPER",
    );
    assert_eq!(
        d.message,
        "Invalid number of arguments to function 'UPPER'. Was expecting 1 arguments"
    );
}

#[test]
fn wrong_argument_type() {
    let d = assert_error(
        &with_orders("SELECT CHAR_LENGTH(qty) FROM orders;"),
        "type-mismatch",
        "CHAR_LENGTH",
    );
    assert_eq!(
        d.message,
        "Cannot apply 'CHAR_LENGTH' to arguments of type 'CHAR_LENGTH(<INTEGER>)'. \
         Supported form(s): 'CHAR_LENGTH(<CHARACTER>)'"
    );
}

#[test]
fn arithmetic_on_boolean() {
    let d = assert_error(
        &with_orders("SELECT TRUE + qty FROM orders;"),
        "type-mismatch",
        "TRUE + qty",
    );
    assert!(d
        .message
        .starts_with("Cannot apply '+' to arguments of type '<BOOLEAN> + <INTEGER>'"));
}

#[test]
fn case_branches_without_common_type() {
    let d = assert_error(
        &with_orders("SELECT CASE WHEN qty > 1 THEN qty ELSE item END FROM orders;"),
        "type-mismatch",
        "CASE WHEN qty > 1 THEN qty ELSE item END",
    );
    assert_eq!(
        d.message,
        "Illegal mixing of types in CASE or COALESCE statement"
    );
}

#[test]
fn where_must_be_boolean() {
    let d = assert_error(
        &with_orders("SELECT id FROM orders WHERE qty;"),
        "type-mismatch",
        "qty",
    );
    assert_eq!(d.message, "WHERE clause must be a condition");
}

#[test]
fn invalid_cast() {
    let d = assert_error(
        &with_orders("SELECT CAST(ts AS BOOLEAN) FROM orders;"),
        "type-mismatch",
        "ts",
    );
    assert!(
        d.message
            .contains("cannot convert value of type TIMESTAMP(3) to type BOOLEAN"),
        "{}",
        d.message
    );
}

#[test]
fn column_not_grouped() {
    let d = assert_error(
        &with_orders("SELECT item, qty, COUNT(*) FROM orders GROUP BY item;"),
        "not-grouped",
        "qty",
    );
    assert_eq!(d.message, "Expression 'qty' is not being grouped");
}

#[test]
fn column_not_grouped_without_group_by() {
    assert_error(
        &with_orders("SELECT id, SUM(price) FROM orders;"),
        "not-grouped",
        "id",
    );
}

#[test]
fn sink_column_count_mismatch() {
    let d = assert_error(
        &with_orders("INSERT INTO sink SELECT id FROM orders;"),
        "sink-schema-mismatch",
        "SELECT id FROM orders",
    );
    assert_eq!(
        d.message,
        "Column types of query result and sink for 'default_catalog.default_database.sink' do not match.\n\
         Cause: Different number of columns.\n\n\
         Query schema: [id: BIGINT]\n\
         Sink schema:  [id: BIGINT, total: DECIMAL(38, 2)]"
    );
}

#[test]
fn sink_column_type_mismatch() {
    let d = assert_error(
        &with_orders("INSERT INTO sink SELECT id, item FROM orders;"),
        "sink-schema-mismatch",
        "item",
    );
    assert!(
        d.message
            .contains("Cause: Incompatible types for sink column 'total' at position 1."),
        "{}",
        d.message
    );
}

#[test]
fn insert_into_unknown_table() {
    assert_error(
        &with_orders("INSERT INTO nowhere SELECT id FROM orders;"),
        "unknown-table",
        "nowhere",
    );
}

#[test]
fn insert_into_view() {
    assert_error(
        &with_orders(
            "CREATE VIEW v AS SELECT id FROM orders;\nINSERT INTO v SELECT id FROM orders;",
        ),
        "insert-into-view",
        "v",
    );
}

#[test]
fn insert_unknown_target_column() {
    let d = assert_error(
        &with_orders("INSERT INTO sink (id, totl) SELECT id, price FROM orders;"),
        "unknown-column",
        "totl",
    );
    assert_eq!(d.message, "Unknown target column 'totl'");
}

#[test]
fn unknown_option_with_suggestion() {
    let sql = "CREATE TABLE k (a INT) WITH (
        'connector' = 'kafka', 'topic' = 't', 'properties.bootstrap.servers' = 'b:9092',
        'format' = 'json', 'scan.startup.mod' = 'earliest-offset');
        SELECT * FROM k;";
    let d = assert_error(sql, "unknown-option", "'scan.startup.mod'");
    assert_eq!(d.message, "Unsupported options found for 'kafka'.");
    assert_eq!(d.help.as_deref(), Some("did you mean 'scan.startup.mode'?"));
}

#[test]
fn format_options_are_known_through_the_format() {
    let sql = "CREATE TABLE k (a INT) WITH (
        'connector' = 'kafka', 'topic' = 't', 'properties.bootstrap.servers' = 'b:9092',
        'format' = 'json', 'json.ignore-parse-errors' = 'true', 'json.ignore-parse-error' = 'true');";
    let d = assert_error(sql, "unknown-option", "'json.ignore-parse-error'");
    assert_eq!(
        d.help.as_deref(),
        Some("did you mean 'json.ignore-parse-errors'?")
    );
}

#[test]
fn missing_required_option_of_a_used_table() {
    let sql =
        "CREATE TABLE k (a INT) WITH ('connector' = 'kafka', 'topic' = 't', 'format' = 'json');
        SELECT * FROM k;";
    let d = assert_error(sql, "missing-option", "k");
    assert!(
        d.message
            .starts_with("One or more required options are missing."),
        "{}",
        d.message
    );
    assert!(
        d.message.ends_with("properties.bootstrap.servers"),
        "{}",
        d.message
    );
}

#[test]
fn invalid_option_value() {
    let sql = "CREATE TABLE g (a INT) WITH ('connector' = 'datagen', 'rows-per-second' = 'fast');";
    let d = assert_error(sql, "invalid-option-value", "'fast'");
    assert_eq!(d.message, "Invalid value for option 'rows-per-second'.");
    assert!(d.help.is_some());
}

#[test]
fn unknown_connector() {
    let sql = "CREATE TABLE k (a INT) WITH ('connector' = 'kafak');";
    let d = assert_error(sql, "unknown-connector", "'kafak'");
    assert!(d
        .message
        .starts_with("Could not find any factory for identifier 'kafak'"));
    assert_eq!(d.help.as_deref(), Some("did you mean 'kafka'?"));
}

#[test]
fn unknown_format() {
    let sql = "CREATE TABLE k (a INT) WITH ('connector' = 'kafka', 'topic' = 't',
        'properties.bootstrap.servers' = 'b:9092', 'format' = 'jsn');";
    let d = assert_error(sql, "unknown-format", "'jsn'");
    assert_eq!(d.help.as_deref(), Some("did you mean 'json'?"));
}

#[test]
fn missing_connector_of_a_used_table() {
    let sql = "CREATE TABLE n (a INT) WITH ('format' = 'json');\nSELECT * FROM n;";
    let d = assert_error(sql, "missing-option", "n");
    assert!(d
        .message
        .contains("do not contain an option key 'connector'"));
}

#[test]
fn watermark_on_bigint_column() {
    // Flink stops at the time field (compat-tests errors/watermark_on_non_timestamp).
    let sql = "CREATE TABLE e (ts BIGINT, WATERMARK FOR ts AS ts) WITH ('connector' = 'datagen');";
    let d = assert_error(sql, "invalid-watermark", "ts");
    assert!(d.message.ends_with("but the time field type is BIGINT"));
    // A valid field with a strategy of the wrong type reports the strategy.
    let sql = "CREATE TABLE e (ts TIMESTAMP(3), n INT, WATERMARK FOR ts AS n) WITH ('connector' = 'datagen');";
    let d = assert_error(sql, "invalid-watermark", "n");
    assert!(d
        .message
        .ends_with("but the watermark expression type is INT"));
}

#[test]
fn watermark_precision_above_three() {
    let sql = "CREATE TABLE e (ts TIMESTAMP(6), WATERMARK FOR ts AS CAST(ts AS TIMESTAMP(3)))
        WITH ('connector' = 'datagen');";
    let d = assert_error(sql, "invalid-watermark", "ts");
    assert!(d
        .message
        .ends_with("but the time field type is TIMESTAMP(6)"));
}

#[test]
fn watermark_on_unknown_column() {
    let sql = "CREATE TABLE e (ts TIMESTAMP(3), WATERMARK FOR event_time AS ts) WITH ('connector' = 'datagen');";
    let d = assert_error(sql, "unknown-column", "event_time");
    assert!(d.message.starts_with(
        "The rowtime attribute field 'event_time' is not defined in the table schema"
    ));
    assert!(
        d.message.ends_with("Available fields: ['ts']"),
        "{}",
        d.message
    );
}

#[test]
fn primary_key_on_unknown_column() {
    let sql =
        "CREATE TABLE p (id INT, PRIMARY KEY (uid) NOT ENFORCED) WITH ('connector' = 'datagen');";
    let d = assert_error(sql, "unknown-column", "uid");
    assert!(d
        .message
        .starts_with("Primary key column 'uid' is not defined in the schema at line 1"));
}

#[test]
fn primary_key_on_computed_column() {
    let sql = "CREATE TABLE p (id INT, id2 AS id * 2, PRIMARY KEY (id2) NOT ENFORCED)
        WITH ('connector' = 'datagen');";
    let d = assert_error(sql, "invalid-primary-key", "id2");
    assert!(d
        .message
        .contains("A PRIMARY KEY constraint must be declared on physical columns."));
}

#[test]
fn unknown_partition_column() {
    let sql = "CREATE TABLE f (a INT, dt STRING) PARTITIONED BY (day)
        WITH ('connector' = 'filesystem', 'path' = '/tmp/f', 'format' = 'json');";
    let d = assert_error(sql, "unknown-column", "day");
    assert_eq!(
        d.message,
        "Partition column 'day' not defined in the table schema. Available columns: ['a', 'dt']"
    );
}

#[test]
fn duplicate_column() {
    let d = assert_error(
        "CREATE TABLE d (a INT, b INT, a STRING) WITH ('connector' = 'datagen');",
        "duplicate-column",
        "a",
    );
    assert_eq!(d.message, "Duplicate column name [a]");
    assert_eq!(d.span.start.column, 31);
}

#[test]
fn duplicate_table() {
    let sql = "CREATE TABLE d (a INT) WITH ('connector' = 'datagen');\nCREATE TABLE d (a INT) WITH ('connector' = 'datagen');";
    let d = assert_error(sql, "duplicate-table", "d");
    assert_eq!(d.span.start.line, 2);
    // IF NOT EXISTS keeps the first definition silently.
    let ok = analyze(&sql.replace("\nCREATE TABLE d", "\nCREATE TABLE IF NOT EXISTS d"));
    assert!(ok.diagnostics.is_empty());
}

#[test]
fn like_options_conflict() {
    let sql = "CREATE TABLE base (a INT) WITH ('connector' = 'datagen', 'rows-per-second' = '5');
        CREATE TABLE derived WITH ('rows-per-second' = '10') LIKE base (INCLUDING OPTIONS);";
    let d = assert_error(sql, "duplicate-option", "'rows-per-second'");
    assert!(d
        .message
        .starts_with("There already exists an option ['rows-per-second' -> '5']"));
}

#[test]
fn like_unknown_source_table() {
    let d = assert_error(
        "CREATE TABLE derived (b INT) LIKE nope;",
        "unknown-table",
        "nope",
    );
    assert!(d.message.starts_with(
        "Source table 'default_catalog.default_database.nope' of the LIKE clause not found"
    ));
}

#[test]
fn window_tvf_on_non_time_attribute() {
    let sql = "CREATE TABLE e (id INT, ts TIMESTAMP(3)) WITH ('connector' = 'datagen');
        SELECT * FROM TABLE(TUMBLE(TABLE e, DESCRIPTOR(ts), INTERVAL '1' MINUTE));";
    let d = assert_error(sql, "invalid-time-attribute", "ts");
    // compat-tests/cases/errors/window_on_non_time_attribute.test
    assert_eq!(
        d.message,
        "The window function requires the timecol is a time attribute type, but is TIMESTAMP(3)."
    );
}

#[test]
fn union_column_count_mismatch() {
    let d = assert_error(
        &with_orders("SELECT id, item FROM orders UNION ALL SELECT id FROM items;"),
        "column-count-mismatch",
        "SELECT id, item FROM orders UNION ALL SELECT id FROM items",
    );
    assert_eq!(d.message, "Column count mismatch in UNION ALL");
}

#[test]
fn view_column_list_mismatch() {
    let d = assert_error(
        &with_orders("CREATE VIEW v (a, b) AS SELECT id FROM orders;"),
        "column-count-mismatch",
        "v",
    );
    assert!(d
        .message
        .starts_with("VIEW definition and input fields not match:"));
}

#[test]
fn duplicate_function() {
    let sql = "CREATE FUNCTION f AS 'com.example.F';\nCREATE FUNCTION f AS 'com.example.G';";
    assert_error(sql, "duplicate-function", "f");
}

#[test]
fn drop_unknown_table() {
    let d = assert_error("DROP TABLE nope;", "unknown-table", "nope");
    assert_eq!(
        d.message,
        "Table with identifier 'default_catalog.default_database.nope' does not exist."
    );
    assert!(analyze("DROP TABLE IF EXISTS nope;").diagnostics.is_empty());
}

#[test]
fn dropped_table_is_gone() {
    let sql =
        "CREATE TABLE d (a INT) WITH ('connector' = 'datagen');\nDROP TABLE d;\nSELECT a FROM d;";
    assert_error(sql, "unknown-table", "d");
}

#[test]
fn user_functions_are_opaque_but_known() {
    let sql = with_orders(
        "CREATE TEMPORARY FUNCTION parse_item AS 'com.example.ParseItem';
         SELECT parse_item(item) FROM orders;",
    );
    let analysis = analyze(&sql);
    assert!(
        analysis.diagnostics.is_empty(),
        "{}",
        render(&sql, &analysis)
    );
}

#[test]
fn legacy_rsqldb_tables_only_warn() {
    let sql = "CREATE TABLE src (ts TIMESTAMP, WATERMARK FOR ts AS ts) WITH (type = 'rocketmq', topic = 't');";
    let analysis = analyze(sql);
    assert!(!analysis.has_errors(), "{}", render(sql, &analysis));
    assert!(
        analysis
            .diagnostics
            .iter()
            .any(|d| d.code == "invalid-watermark"),
        "{}",
        render(sql, &analysis)
    );
}

#[test]
fn legacy_group_window_on_non_time_attribute() {
    // compat-tests/cases/errors/legacy_window_on_non_time_attribute.test
    let sql = "CREATE TABLE t (id INT, ts TIMESTAMP(3)) WITH ('connector' = 'datagen');
        SELECT COUNT(*) FROM t GROUP BY TUMBLE(ts, INTERVAL '1' MINUTE);";
    let d = assert_error(sql, "invalid-time-attribute", "ts");
    assert_eq!(
        d.message,
        "Window aggregate can only be defined over a time attribute column, but TIMESTAMP(3) encountered."
    );
}

#[test]
fn aggregate_in_where() {
    let d = assert_error(
        &with_orders("SELECT id FROM orders WHERE SUM(qty) > 1;"),
        "invalid-aggregate",
        "SUM",
    );
    assert_eq!(d.message, "Aggregate expression is illegal in WHERE clause");
}

#[test]
fn insert_leaves_out_a_not_null_column() {
    let sql = with_orders(
        "CREATE TABLE k (id BIGINT NOT NULL, note STRING) WITH ('connector' = 'blackhole');
         INSERT INTO k (note) SELECT item FROM orders;",
    );
    let d = assert_error(&sql, "missing-column", "k");
    assert_eq!(
        d.message,
        "Column 'id' has no default value and does not allow NULLs"
    );
}

#[test]
fn unnest_of_a_scalar() {
    // compat-tests/cases/errors/unnest_non_collection.test
    let d = assert_error(
        &with_orders("SELECT x FROM orders CROSS JOIN UNNEST(orders.item) AS u(x);"),
        "type-mismatch",
        "orders.item",
    );
    assert!(d.message.starts_with(
        "Cannot apply 'UNNEST' to arguments of type 'UNNEST(<VARCHAR(2147483647)>)'. \
         Supported form(s): 'UNNEST(<MULTISET>)'"
    ));
}

#[test]
fn window_tvf_over_a_regular_join_view() {
    // compat-tests/cases/errors/regular_join_loses_rowtime.test
    let sql = "CREATE TABLE t (id INT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts) WITH ('connector' = 'datagen');
        CREATE TEMPORARY VIEW j AS SELECT a.ts, a.id FROM t a JOIN t b ON a.id = b.id;
        SELECT window_start, COUNT(*) FROM TABLE(TUMBLE(TABLE j, DESCRIPTOR(ts), INTERVAL '1' MINUTE))
        GROUP BY window_start, window_end;";
    assert_error(sql, "invalid-time-attribute", "ts");
}

#[test]
fn temporal_join_on_a_plain_timestamp() {
    let sql = "CREATE TABLE o (id INT, ts TIMESTAMP(3)) WITH ('connector' = 'datagen');
        CREATE TABLE r (id INT, v STRING) WITH ('connector' = 'datagen');
        SELECT o.id, r.v FROM o JOIN r FOR SYSTEM_TIME AS OF o.ts ON o.id = r.id;";
    let d = assert_error(sql, "invalid-time-attribute", "o.ts");
    assert!(d
        .message
        .starts_with("Temporal table join currently only supports 'FOR SYSTEM_TIME AS OF'"));
}

#[test]
fn options_hint_with_unknown_key() {
    let sql = "CREATE TABLE k (a INT) WITH ('connector' = 'kafka', 'topic' = 't',
        'properties.bootstrap.servers' = 'b:9092', 'format' = 'json');
        CREATE TABLE g (a INT) WITH ('connector' = 'datagen');
        SELECT * FROM g /*+ OPTIONS('rows-per-second' = '5') */
        JOIN k /*+ OPTIONS('scan.startup.mode' = 'earliest-offset', 'scan.start.mode' = 'x') */ ON g.a = k.a;";
    let d = assert_error(
        sql,
        "unknown-option",
        "OPTIONS('scan.startup.mode' = 'earliest-offset', 'scan.start.mode' = 'x')",
    );
    assert_eq!(d.message, "Unsupported options found for 'kafka'.");
    assert_eq!(d.help.as_deref(), Some("did you mean 'scan.startup.mode'?"));
}
