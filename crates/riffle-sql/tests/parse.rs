//! Snapshot tests: one realistic Flink SQL statement per construct, rendered compactly
//! (see `common::render`). Statements that must parse also assert that no diagnostic was raised.

mod common;

use common::render;
use riffle_sql::parse_script;

/// Parses `sql`, asserts it produced no diagnostics, and snapshots the rendering.
macro_rules! parses {
    ($name:ident, $sql:expr) => {
        #[test]
        fn $name() {
            let parsed = parse_script($sql);
            assert!(parsed.diagnostics.is_empty(), "{}", render(&parsed));
            insta::assert_snapshot!(stringify!($name), render(&parsed), $sql);
        }
    };
}

/// Parses `sql`, which must produce at least one diagnostic, and snapshots the rendering.
macro_rules! fails {
    ($name:ident, $sql:expr) => {
        #[test]
        fn $name() {
            let parsed = parse_script($sql);
            assert!(!parsed.diagnostics.is_empty(), "{}", render(&parsed));
            insta::assert_snapshot!(stringify!($name), render(&parsed), $sql);
        }
    };
}

parses!(
    create_table_full,
    "CREATE TEMPORARY TABLE IF NOT EXISTS cat.db.orders (
  order_id BIGINT NOT NULL COMMENT 'order key',
  `user` STRING,
  price DECIMAL(10, 2),
  cost AS price * quantity COMMENT 'computed',
  quantity INT,
  ts TIMESTAMP(3),
  event_time TIMESTAMP_LTZ(3) METADATA FROM 'timestamp' VIRTUAL,
  `partition` BIGINT METADATA VIRTUAL,
  headers MAP<STRING, BYTES> METADATA,
  proc AS PROCTIME(),
  WATERMARK FOR ts AS ts - INTERVAL '5' SECOND,
  CONSTRAINT pk PRIMARY KEY (order_id) NOT ENFORCED
) COMMENT 'all orders'
PARTITIONED BY (`user`)
WITH (
  'connector' = 'kafka',
  'topic' = 'orders',
  'properties.bootstrap.servers' = 'localhost:9092',
  'format' = 'json'
);"
);

parses!(
    create_table_inline_primary_key,
    "CREATE TABLE users (id INT PRIMARY KEY NOT ENFORCED, name VARCHAR(20)) WITH ('connector' = 'upsert-kafka');"
);

parses!(
    create_table_like,
    "CREATE TABLE orders_copy (extra INT) WITH ('topic' = 'copy') LIKE orders (EXCLUDING ALL INCLUDING GENERATED OVERWRITING OPTIONS);"
);

parses!(
    create_table_legacy_rsqldb,
    "CREATE TABLE rocketmq_source (
  id VARCHAR,
  ts BIGINT,
  tag VARCHAR header,
  WATERMARK wk FOR ts AS withOffset(ts, 2000)
) WITH (
  type = 'rocketmq',
  topic = 'source_topic',
  consumerGroup = 'group_a',
  nameServerAddress = '127.0.0.1:9876'
);"
);

parses!(
    set_reset_forms,
    "SET 'parallelism.default' = '4';
SET table.exec.mini-batch.enabled = true;
SET execution.checkpointing.interval = 10 s;
SET;
RESET 'parallelism.default';
RESET table.exec.state.ttl;
RESET;"
);

parses!(
    insert_window_tvf,
    "INSERT INTO sink
SELECT window_start, window_end, item, SUM(price) AS total
FROM TABLE(TUMBLE(TABLE bids, DESCRIPTOR(bidtime), INTERVAL '10' MINUTES))
GROUP BY window_start, window_end, item;"
);

parses!(
    select_with_hints,
    "SELECT /*+ STATE_TTL('o' = '1d', 'c' = '20d') */ o.id, c.name
FROM orders /*+ OPTIONS('scan.startup.mode' = 'earliest-offset') */ AS o
JOIN customers /*+ LOOKUP('table' = 'customers', 'retry-predicate' = 'lookup_miss') */ AS c
ON o.cid = c.id;"
);

fails!(
    several_errors_are_reported,
    "SELECT FROM;
CREATE TABLE t (a INT,);
SELECT 1;
INSERT INTO t VALUES (1, ;
SELECT 2"
);
