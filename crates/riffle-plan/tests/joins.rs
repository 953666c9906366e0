//! Snapshots of join plans: key extraction and hash partitioning, interval and window join
//! detection, semi/anti joins from subqueries, and the joins Flink (or Riffle) rejects.

use riffle_plan::{explain, plan_sql, JobGraph, OperatorKind, PLAN_ERROR};

const TABLES: &str = "SET 'parallelism.default' = '2';
CREATE TABLE orders (ots TIMESTAMP(3), id INT, cid BIGINT, amount INT, WATERMARK FOR ots AS ots)
WITH ('connector' = 'filesystem', 'path' = '/data/orders.csv', 'format' = 'csv');
CREATE TABLE shipments (sts TIMESTAMP(3), oid INT, note STRING, WATERMARK FOR sts AS sts)
WITH ('connector' = 'filesystem', 'path' = '/data/shipments.csv', 'format' = 'csv');
CREATE TABLE customers (id INT, name STRING)
WITH ('connector' = 'filesystem', 'path' = '/data/customers.csv', 'format' = 'csv');
";

fn plan(sql: &str) -> JobGraph {
    plan_sql(&format!("{TABLES}{sql}")).unwrap_or_else(|d| panic!("does not plan: {d:?}"))
}

/// The join operator of a plan (there is exactly one in these tests).
fn join_of(graph: &JobGraph) -> &OperatorKind {
    let joins: Vec<&OperatorKind> = graph
        .operators
        .iter()
        .map(|o| &o.kind)
        .filter(|k| {
            matches!(
                k,
                OperatorKind::Join { .. }
                    | OperatorKind::IntervalJoin { .. }
                    | OperatorKind::WindowJoin { .. }
            )
        })
        .collect();
    assert_eq!(joins.len(), 1, "{}", explain::to_text(graph));
    joins[0]
}

#[test]
fn left_join_hashes_both_inputs_on_the_keys_and_casts_keys_to_a_common_type() {
    let graph = plan(
        "SELECT o.id, c.name FROM orders o LEFT JOIN customers c ON o.cid = c.id AND o.amount > 10;",
    );
    insta::assert_snapshot!(explain::to_text(&graph));
}

#[test]
fn time_bounds_between_rowtimes_make_an_interval_join() {
    let graph = plan(
        "SELECT o.id, s.note FROM orders o, shipments s
WHERE o.id = s.oid AND s.sts > o.ots - INTERVAL '5' MINUTE AND s.sts <= o.ots + INTERVAL '1' HOUR;",
    );
    match join_of(&graph) {
        OperatorKind::IntervalJoin {
            lower,
            upper,
            left_time,
            right_time,
            ..
        } => {
            // o.ots - s.sts lies in [-1 h, 5 min - 1 ms].
            assert_eq!((*lower, *upper), (-3_600_000, 299_999));
            assert_eq!((*left_time, *right_time), (0, 0));
        }
        other => panic!("not an interval join: {other:?}"),
    }
    // One bound only: a regular join.
    let graph = plan(
        "SELECT o.id, s.note FROM orders o JOIN shipments s ON o.id = s.oid AND s.sts > o.ots;",
    );
    assert!(matches!(join_of(&graph), OperatorKind::Join { .. }));
}

#[test]
fn equal_window_bounds_of_two_window_tvfs_make_a_window_join() {
    let graph = plan(
        "SELECT L.id, R.note FROM
(SELECT * FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ots), INTERVAL '5' MINUTES))) L
FULL JOIN (SELECT * FROM TABLE(TUMBLE(TABLE shipments, DESCRIPTOR(sts), INTERVAL '5' MINUTES))) R
ON L.id = R.oid AND L.window_start = R.window_start AND L.window_end = R.window_end;",
    );
    insta::assert_snapshot!(explain::to_text(&graph));
}

#[test]
fn window_aggregations_keep_their_windows_for_a_window_join_and_a_cascaded_aggregation() {
    // Renamed window bounds of window aggregations still identify the windows (Flink's
    // window-attached windowing), so the MAX over window counts is a window aggregation too.
    let graph = plan(
        "SELECT a.id FROM
(SELECT window_start AS ws, window_end AS we, id, COUNT(*) AS n FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ots), INTERVAL '1' MINUTE)) GROUP BY window_start, window_end, id) a
JOIN (SELECT ws, we, MAX(n) AS m FROM (SELECT window_start AS ws, window_end AS we, COUNT(*) AS n FROM TABLE(TUMBLE(TABLE shipments, DESCRIPTOR(sts), INTERVAL '1' MINUTE)) GROUP BY window_start, window_end, oid) GROUP BY ws, we) b
ON a.ws = b.ws AND a.we = b.we AND a.n >= b.m;",
    );
    assert!(matches!(join_of(&graph), OperatorKind::WindowJoin { .. }));
    let window_aggregates = graph
        .operators
        .iter()
        .filter(|o| matches!(o.kind, OperatorKind::WindowAggregate { .. }))
        .count();
    assert_eq!(window_aggregates, 3, "{}", explain::to_text(&graph));
}

#[test]
fn not_in_is_a_null_aware_anti_join_without_keys() {
    let graph = plan("SELECT name FROM customers WHERE id NOT IN (SELECT oid FROM shipments);");
    match join_of(&graph) {
        OperatorKind::Join { spec } => {
            assert_eq!(spec.join_type, riffle_plan::JoinType::Anti);
            assert!(spec.left_keys.is_empty());
            let condition = spec.condition.clone().unwrap_or_default();
            assert!(condition.contains("IS NULL"), "{condition}");
        }
        other => panic!("not a regular join: {other:?}"),
    }
    // No keys: a single subtask sees every row.
    assert!(graph
        .operators
        .iter()
        .any(|o| matches!(o.kind, OperatorKind::Join { .. }) && o.parallelism == 1));
}

#[test]
fn intersect_and_except_all_replicate_counted_rows() {
    for set_operation in ["INTERSECT ALL", "EXCEPT ALL"] {
        let graph = plan(&format!(
            "SELECT id FROM customers {set_operation} SELECT oid FROM shipments;"
        ));
        let text = explain::to_text(&graph);
        assert!(text.contains("REPLICATE_ROWS"), "{set_operation}: {text}");
        assert!(
            !graph
                .operators
                .iter()
                .any(|o| matches!(o.kind, OperatorKind::Join { .. })),
            "{set_operation}: {text}"
        );
    }
}

#[test]
fn rejected_joins() {
    for (sql, code, message) in [
        (
            "CREATE TEMPORARY VIEW j AS SELECT o.ots, o.id FROM orders o JOIN customers c ON o.id = c.id;
SELECT window_start, COUNT(*) FROM TABLE(TUMBLE(TABLE j, DESCRIPTOR(ots), INTERVAL '1' MINUTE)) GROUP BY window_start, window_end;",
            "invalid-time-attribute",
            "requires the timecol is a time attribute",
        ),
        (
            "CREATE TABLE sink (id INT, name STRING) WITH ('connector' = 'filesystem', 'path' = '/tmp/x', 'format' = 'csv');
INSERT INTO sink SELECT c.id, s.note FROM customers c LEFT JOIN shipments s ON c.id = s.oid;",
            PLAN_ERROR,
            "doesn't support consuming update",
        ),
    ] {
        let diagnostics = match plan_sql(&format!("{TABLES}{sql}")) {
            Ok(_) => panic!("planned: {sql}"),
            Err(d) => d,
        };
        assert_eq!(diagnostics[0].code, code, "{sql}: {diagnostics:?}");
        assert!(
            diagnostics[0].message.contains(message),
            "{sql}: {}",
            diagnostics[0].message
        );
    }
}
