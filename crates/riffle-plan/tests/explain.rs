//! Snapshots of the JobGraphs of representative jobs, and planner diagnostics.

use riffle_plan::{explain, plan_sql, UNSUPPORTED};

const BIDS: &str = "CREATE TABLE bids (
  ts TIMESTAMP(3),
  price DECIMAL(10, 2),
  item STRING,
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND
) WITH ('connector' = 'filesystem', 'path' = '/data/bids.csv', 'format' = 'csv');
";

fn plan_text(sql: &str) -> String {
    match plan_sql(sql) {
        Ok(graph) => explain::to_text(&graph),
        Err(d) => panic!("does not plan: {d:?}"),
    }
}

#[test]
fn tumble_window_aggregation_into_print() {
    let sql = format!(
        "{BIDS}SET 'parallelism.default' = '2';
CREATE TABLE out (ws TIMESTAMP(3), item STRING, total DECIMAL(38, 2), cnt BIGINT) WITH ('connector' = 'print');
INSERT INTO out
SELECT window_start, item, SUM(price), COUNT(*)
FROM TABLE(TUMBLE(TABLE bids, DESCRIPTOR(ts), INTERVAL '10' MINUTES))
GROUP BY window_start, window_end, item;"
    );
    insta::assert_snapshot!(plan_text(&sql));
}

#[test]
fn updating_aggregation_and_union() {
    let sql = format!(
        "{BIDS}SELECT item, COUNT(*) AS c FROM (
  SELECT item FROM bids WHERE price > 2
  UNION ALL
  SELECT 'x' FROM bids
) GROUP BY item;"
    );
    insta::assert_snapshot!(plan_text(&sql));
}

#[test]
fn dot_output_names_every_operator_and_edge() {
    let sql = format!("{BIDS}SELECT UPPER(item) FROM bids;");
    let graph = plan_sql(&sql).unwrap_or_else(|d| panic!("{d:?}"));
    let dot = explain::to_dot(&graph);
    insta::assert_snapshot!(dot);
}

#[test]
fn job_graph_round_trips_through_json() {
    let sql = format!("{BIDS}SELECT item, price * 2 FROM bids;");
    let graph = plan_sql(&sql).unwrap_or_else(|d| panic!("{d:?}"));
    let json = serde_json::to_string(&graph).unwrap_or_else(|e| panic!("{e}"));
    let back: riffle_plan::JobGraph = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(back, graph);
}

#[test]
fn unsupported_features_are_located_diagnostics() {
    for (sql, feature) in [
        (
            "CREATE FUNCTION f AS 'udfs.f' LANGUAGE PYTHON;\nSELECT 1;",
            "LANGUAGE PYTHON",
        ),
        (
            "CREATE TABLE t (s STRING) WITH ('connector' = 'datagen');\nSELECT PARSE_JSON(s) FROM t;",
            "PARSE_JSON",
        ),
        (
            "SET 'table.local-time-zone' = 'Asia/Shanghai';\n\
             CREATE TABLE e (ms BIGINT, ts AS TO_TIMESTAMP_LTZ(ms, 3), WATERMARK FOR ts AS ts) \
             WITH ('connector' = 'datagen');\n\
             SELECT a.ms FROM TABLE(TUMBLE(TABLE e, DESCRIPTOR(ts), INTERVAL '1' DAY)) a \
             JOIN TABLE(TUMBLE(TABLE e, DESCRIPTOR(ts), INTERVAL '1' DAY)) b \
             ON a.window_start = b.window_start AND a.window_end = b.window_end;",
            "TIMESTAMP_LTZ windows",
        ),
    ] {
        let diagnostics = match plan_sql(sql) {
            Ok(_) => panic!("planned: {sql}"),
            Err(d) => d,
        };
        let d = &diagnostics[0];
        assert_eq!(d.code, UNSUPPORTED, "{sql}: {d:?}");
        assert!(d.message.contains(feature), "{sql}: {}", d.message);
        assert!(!d.span.is_unknown() || sql.starts_with("SET"), "{sql}: no location");
    }
}

#[test]
fn errors_name_the_problem() {
    let sql = format!("{BIDS}SELECT nocol FROM bids;");
    let d = plan_sql(&sql).err().unwrap_or_default();
    assert_eq!(d.len(), 1);
    assert!(d[0].message.contains("nocol"), "{}", d[0].message);
    assert_eq!(d[0].span.start.line, 7);
}

#[test]
fn unsupported_functions_and_casts_point_at_their_call() {
    let sql = "CREATE TABLE t (a INT, s STRING) WITH ('connector' = 'datagen');\nSELECT a,\n  PARSE_JSON(s) FROM t;";
    let d = plan_sql(sql).err().unwrap_or_default();
    assert_eq!(
        (d[0].span.start.line, d[0].span.start.column),
        (3, 3),
        "{d:?}"
    );
    let sql = "CREATE TABLE t (a ARRAY<BOOLEAN>) WITH ('connector' = 'datagen');\nSELECT 1,\n   CAST(a AS ARRAY<DATE>) FROM t;";
    let d = plan_sql(sql).err().unwrap_or_default();
    // sqlparser spans a CAST by its operand.
    assert_eq!(
        (d[0].span.start.line, d[0].span.start.column),
        (3, 9),
        "{d:?}"
    );
}
