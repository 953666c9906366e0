//! Event-time temporal joins: which relations are versioned tables, the operator and its time
//! columns, and the shapes Flink rejects.

use riffle_plan::{explain, plan_sql, JobGraph, OperatorKind, PLAN_ERROR, UNSUPPORTED};

const TABLES: &str = "SET 'parallelism.default' = '2';
CREATE TABLE orders (ots TIMESTAMP(3), oid STRING, currency STRING, amount INT, WATERMARK FOR ots AS ots)
WITH ('connector' = 'filesystem', 'path' = '/data/orders.csv', 'format' = 'csv');
CREATE TABLE rates (currency STRING, rate DECIMAL(6, 2), rts TIMESTAMP(3),
  PRIMARY KEY (currency) NOT ENFORCED, WATERMARK FOR rts AS rts)
WITH ('connector' = 'filesystem', 'path' = '/data/rates.json', 'format' = 'debezium-json');
CREATE TABLE rate_log (rts TIMESTAMP(3), currency STRING, rate DECIMAL(6, 2), WATERMARK FOR rts AS rts)
WITH ('connector' = 'filesystem', 'path' = '/data/rates.csv', 'format' = 'csv');
CREATE TABLE rates_no_time (currency STRING, rate DECIMAL(6, 2), PRIMARY KEY (currency) NOT ENFORCED)
WITH ('connector' = 'filesystem', 'path' = '/data/rates2.csv', 'format' = 'csv');
";

fn plan(sql: &str) -> JobGraph {
    plan_sql(&format!("{TABLES}{sql}")).unwrap_or_else(|d| panic!("does not plan: {d:?}"))
}

/// The temporal join of a plan and its output columns (as `name rowtime?` strings).
fn temporal_join(graph: &JobGraph) -> (&OperatorKind, Vec<String>) {
    let op = graph
        .operators
        .iter()
        .find(|o| matches!(o.kind, OperatorKind::TemporalJoin { .. }))
        .unwrap_or_else(|| panic!("no temporal join: {}", explain::to_text(graph)));
    let columns = op
        .schema
        .iter()
        .map(|f| format!("{}{}", f.name, if f.rowtime { " *ROWTIME*" } else { "" }))
        .collect();
    (&op.kind, columns)
}

#[test]
fn a_changelog_table_with_a_primary_key_and_a_watermark_is_versioned() {
    let graph = plan(
        "SELECT o.oid, r.rate FROM orders AS o
LEFT JOIN rates FOR SYSTEM_TIME AS OF o.ots AS r ON o.currency = r.currency AND o.amount > 1;",
    );
    insta::assert_snapshot!(explain::to_text(&graph));
}

#[test]
fn a_deduplicated_view_is_versioned_and_keeps_its_time_attribute() {
    let graph = plan(
        "CREATE TEMPORARY VIEW latest AS SELECT rate, currency, rts FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY currency ORDER BY rts DESC) AS rn FROM rate_log)
WHERE rn = 1;
SELECT o.oid, v.rate, v.rts FROM orders o JOIN latest FOR SYSTEM_TIME AS OF o.ots AS v
ON v.currency = o.currency;",
    );
    let (kind, columns) = temporal_join(&graph);
    let OperatorKind::TemporalJoin {
        spec,
        left_time,
        right_time,
    } = kind
    else {
        unreachable!()
    };
    assert_eq!((*left_time, *right_time), (0, 2));
    assert_eq!(
        (spec.left_keys.as_slice(), spec.right_keys.as_slice()),
        (&[2][..], &[1][..])
    );
    assert_eq!(
        columns,
        [
            "ots *ROWTIME*",
            "oid",
            "currency",
            "amount",
            "rate",
            "currency0",
            "rts *ROWTIME*"
        ]
    );
}

#[test]
fn temporal_joins_flink_rejects() {
    for (sql, code, message) in [
        (
            "SELECT o.oid FROM orders o JOIN rate_log FOR SYSTEM_TIME AS OF o.ots AS r ON o.currency = r.currency;",
            PLAN_ERROR,
            "Temporal Table Join requires primary key in versioned table",
        ),
        (
            "SELECT o.oid FROM orders o JOIN rates FOR SYSTEM_TIME AS OF o.ots AS r ON o.amount = r.rate;",
            PLAN_ERROR,
            "Temporal Table Join requires primary key in versioned table",
        ),
        (
            "SELECT o.oid FROM orders o JOIN rates_no_time FOR SYSTEM_TIME AS OF o.ots AS r ON o.currency = r.currency;",
            PLAN_ERROR,
            "Event-Time Temporal Table Join requires both primary key and row time attribute",
        ),
        (
            "CREATE TEMPORARY VIEW op AS SELECT *, PROCTIME() AS pt FROM orders;
SELECT o.oid FROM op o JOIN rates FOR SYSTEM_TIME AS OF o.pt AS r ON o.currency = r.currency;",
            PLAN_ERROR,
            "Processing-time temporal join is not supported yet.",
        ),
        (
            "SELECT o.oid FROM orders o FULL JOIN rates FOR SYSTEM_TIME AS OF o.ots AS r ON o.currency = r.currency;",
            UNSUPPORTED,
            "temporal joins",
        ),
    ] {
        let diagnostics = match plan_sql(&format!("{TABLES}{sql}")) {
            Ok(_) => panic!("planned: {sql}"),
            Err(d) => d,
        };
        assert_eq!(diagnostics[0].code, code, "{sql}: {diagnostics:?}");
        assert!(
            diagnostics[0].message.contains(message),
            "{sql}: {diagnostics:?}"
        );
    }
}

#[test]
fn an_upper_case_alias_names_the_period_column_as_written() {
    let graph = plan(
        "SELECT O.oid, R.rate FROM orders AS O
JOIN rates FOR SYSTEM_TIME AS OF O.ots AS R ON O.currency = R.currency;",
    );
    temporal_join(&graph);
}
