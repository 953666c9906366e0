//! The feature collector finds each construct with its location, and every code it emits for a
//! query/DDL/statement construct exists in the support registry.

use riffle_toolkit::features::{collect, FeatureUse};

fn uses(sql: &str) -> Vec<FeatureUse> {
    let parsed = riffle_sql::parse_script(sql);
    assert!(parsed.diagnostics.is_empty(), "{:?}", parsed.diagnostics);
    let analysis = riffle_catalog::analyze(&parsed.script);
    collect(&parsed.script, &analysis.catalog)
}

fn listing(uses: &[FeatureUse]) -> String {
    uses.iter()
        .map(|u| format!("{}:{} {}", u.span.start.line, u.span.start.column, u.code))
        .collect::<Vec<_>>()
        .join("\n")
}

const JOB: &str = r#"SET 'table.local-time-zone' = 'UTC';
CREATE TABLE orders (
  order_id BIGINT,
  user_id STRING,
  amount DECIMAL(10, 2),
  ts TIMESTAMP(3),
  proc AS PROCTIME(),
  topic STRING METADATA VIRTUAL,
  WATERMARK FOR ts AS ts - INTERVAL '5' SECOND,
  PRIMARY KEY (order_id) NOT ENFORCED
) WITH ('connector' = 'kafka', 'topic' = 'orders', 'properties.bootstrap.servers' = 'k:9092', 'format' = 'json');
CREATE TABLE users (user_id STRING, name STRING, ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts, PRIMARY KEY (user_id) NOT ENFORCED)
  WITH ('connector' = 'upsert-kafka', 'topic' = 'users', 'properties.bootstrap.servers' = 'k:9092',
        'key.format' = 'json', 'value.format' = 'json');
CREATE TABLE out_t (ws TIMESTAMP(3), we TIMESTAMP(3), c BIGINT) WITH ('connector' = 'print');
INSERT INTO out_t
SELECT window_start, window_end, COUNT(DISTINCT user_id)
FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '1' MINUTE))
GROUP BY window_start, window_end;
SELECT o.order_id, u.name FROM orders AS o
  JOIN users FOR SYSTEM_TIME AS OF o.ts AS u ON o.user_id = u.user_id;
SELECT * FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY user_id ORDER BY ts DESC) AS rn FROM orders
) WHERE rn <= 3;
SELECT user_id, TUMBLE_START(ts, INTERVAL '1' HOUR), SUM(amount) FROM orders
GROUP BY user_id, TUMBLE(ts, INTERVAL '1' HOUR);
"#;

#[test]
fn collects_features_with_locations() {
    insta::assert_snapshot!(listing(&uses(JOB)));
}

#[test]
fn every_construct_code_is_in_the_registry() {
    for feature_use in uses(JOB) {
        let code = feature_use.code.as_str();
        let dynamic = ["function.", "connector.", "format.", "option.", "config."];
        if dynamic.iter().any(|prefix| code.starts_with(prefix)) {
            continue;
        }
        assert!(
            riffle_dialects::feature(code).is_some(),
            "{code} missing from dialects/riffle/features.toml"
        );
    }
}
