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

parses!(
    create_view,
    "CREATE TEMPORARY VIEW IF NOT EXISTS big_orders (id, amount) COMMENT 'large ones' AS
SELECT id, amount FROM orders WHERE amount > 100;"
);

parses!(
    create_function_forms,
    "CREATE TEMPORARY SYSTEM FUNCTION parse_ua AS 'com.example.ParseUa' LANGUAGE JAVA USING JAR '/opt/udf.jar', JAR '/opt/dep.jar';
CREATE FUNCTION IF NOT EXISTS cat.db.py_f AS 'pkg.mod.f' LANGUAGE PYTHON;
CREATE TEMPORARY FUNCTION plain AS 'com.example.Plain';"
);

parses!(
    create_catalog_and_database,
    "CREATE CATALOG my_catalog WITH ('type' = 'generic_in_memory', 'default-database' = 'db');
CREATE DATABASE IF NOT EXISTS my_catalog.analytics COMMENT 'analytics data' WITH ('owner' = 'team');"
);

parses!(
    drop_forms,
    "DROP TABLE IF EXISTS cat.db.orders;
DROP TEMPORARY VIEW v;
DROP TEMPORARY SYSTEM FUNCTION IF EXISTS parse_ua;
DROP CATALOG my_catalog;
DROP DATABASE analytics CASCADE;"
);

parses!(
    use_forms,
    "USE CATALOG my_catalog;
USE my_catalog.analytics;
USE MODULES hive, core;"
);

parses!(
    client_and_alter_statements,
    "SHOW TABLES;
SHOW CREATE TABLE orders;
DESCRIBE orders;
DESC orders;
LOAD MODULE hive WITH ('hive-version' = '3.1.2');
UNLOAD MODULE hive;
ALTER TABLE orders SET ('scan.startup.mode' = 'latest-offset');
ADD JAR '/opt/udf.jar';"
);

parses!(
    insert_overwrite_partition_columns,
    "INSERT OVERWRITE fs_sink PARTITION (dt = '2024-01-01', hr = 10) (user_id, cnt)
SELECT user_id, COUNT(*) FROM clicks GROUP BY user_id;
INSERT INTO sink (SELECT * FROM src);
INSERT INTO sink VALUES (1, 'a'), (2, 'b');"
);

parses!(
    execute_forms,
    "EXECUTE INSERT INTO sink SELECT * FROM src;
EXECUTE SELECT 1;"
);

parses!(
    execute_statement_set,
    "EXECUTE STATEMENT SET
BEGIN
  INSERT INTO pageviews SELECT page_id, COUNT(*) FROM clicks GROUP BY page_id;
  INSERT INTO uniques SELECT page_id, COUNT(DISTINCT user_id) FROM clicks GROUP BY page_id;
END;"
);

parses!(
    begin_statement_set,
    "BEGIN STATEMENT SET;
INSERT INTO pageviews SELECT page_id, COUNT(*) FROM clicks GROUP BY page_id;
INSERT INTO uniques SELECT page_id, COUNT(DISTINCT user_id) FROM clicks GROUP BY page_id;
END;"
);

parses!(
    explain_forms,
    "EXPLAIN PLAN FOR SELECT * FROM orders;
EXPLAIN ESTIMATED_COST, CHANGELOG_MODE, JSON_EXECUTION_PLAN SELECT id FROM orders;
EXPLAIN INSERT INTO sink SELECT * FROM orders;
EXPLAIN STATEMENT SET BEGIN INSERT INTO a SELECT * FROM orders; INSERT INTO b SELECT * FROM orders; END;"
);

parses!(
    hop_and_cumulate_tvfs,
    "SELECT window_start, window_end, SUM(price) FROM TABLE(
  HOP(TABLE bids, DESCRIPTOR(bidtime), INTERVAL '5' MINUTES, INTERVAL '10' MINUTES))
GROUP BY window_start, window_end;
SELECT window_start, window_end, SUM(price) FROM TABLE(
  CUMULATE(TABLE bids, DESCRIPTOR(bidtime), INTERVAL '2' MINUTES, INTERVAL '10' MINUTES))
GROUP BY window_start, window_end;"
);

parses!(
    session_tvf_partitioned,
    "SELECT window_start, window_end, item, SUM(price) AS total
FROM TABLE(SESSION(TABLE bids PARTITION BY item, DESCRIPTOR(bidtime), INTERVAL '5' MINUTES))
GROUP BY item, window_start, window_end;"
);

parses!(
    tvf_named_arguments,
    "SELECT * FROM TABLE(
  TUMBLE(
    DATA => TABLE bids,
    TIMECOL => DESCRIPTOR(bidtime),
    SIZE => INTERVAL '10' MINUTES,
    OFFSET => INTERVAL '1' MINUTES));"
);

parses!(
    legacy_group_windows,
    "SELECT user_id,
  TUMBLE_START(ts, INTERVAL '1' HOUR) AS wstart,
  TUMBLE_END(ts, INTERVAL '1' HOUR) AS wend,
  TUMBLE_ROWTIME(ts, INTERVAL '1' HOUR) AS wrowtime,
  COUNT(*) AS cnt
FROM clicks
GROUP BY TUMBLE(ts, INTERVAL '1' HOUR), user_id;
SELECT HOP_START(ts, INTERVAL '1' MINUTE, INTERVAL '1' HOUR), HOP_PROCTIME(pt, INTERVAL '1' MINUTE, INTERVAL '1' HOUR)
FROM clicks GROUP BY HOP(ts, INTERVAL '1' MINUTE, INTERVAL '1' HOUR);
SELECT SESSION_END(ts, INTERVAL '30' MINUTE) FROM clicks GROUP BY SESSION(ts, INTERVAL '30' MINUTE), user_id;"
);

parses!(
    temporal_join,
    "SELECT o.order_id, o.price * r.rate AS converted
FROM orders AS o
JOIN currency_rates FOR SYSTEM_TIME AS OF o.order_time AS r
ON o.currency = r.currency;"
);

parses!(
    lateral_table_functions,
    "SELECT a, word, len FROM docs, LATERAL TABLE(split_words(a)) AS T(word, len);
SELECT a, word FROM docs LEFT JOIN LATERAL TABLE(split_words(a)) AS T(word) ON TRUE;"
);

parses!(
    cross_join_unnest,
    "SELECT order_id, tag FROM orders CROSS JOIN UNNEST(tags) AS t(tag);"
);

parses!(
    match_recognize_within,
    "SELECT * FROM ticker
MATCH_RECOGNIZE (
  PARTITION BY symbol
  ORDER BY rowtime
  MEASURES
    START_ROW.rowtime AS start_tstamp,
    LAST(PRICE_DOWN.rowtime) AS bottom_tstamp
  ONE ROW PER MATCH
  AFTER MATCH SKIP TO LAST PRICE_UP
  PATTERN (START_ROW PRICE_DOWN+ PRICE_UP)
  WITHIN INTERVAL '1' HOUR
  DEFINE
    PRICE_DOWN AS PRICE_DOWN.price < START_ROW.price,
    PRICE_UP AS PRICE_UP.price > LAST(PRICE_DOWN.price, 1)
) MR;"
);

parses!(
    over_windows,
    "SELECT product, SUM(amount) OVER (PARTITION BY product ORDER BY order_time ROWS BETWEEN 5 PRECEDING AND CURRENT ROW) AS s
FROM orders;
SELECT product, SUM(amount) OVER w, MAX(amount) OVER w
FROM orders
WINDOW w AS (PARTITION BY product ORDER BY order_time RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW);"
);

parses!(
    top_n_and_dedup,
    "SELECT * FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY category ORDER BY sales DESC) AS rn FROM shop_sales)
WHERE rn <= 3;
SELECT order_id, user_id FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY order_id ORDER BY proctime ASC) AS row_num FROM orders)
WHERE row_num = 1;"
);

parses!(
    interval_join,
    "SELECT o.id, s.ship_time FROM orders o, shipments s
WHERE o.id = s.order_id AND o.order_time BETWEEN s.ship_time - INTERVAL '4' HOURS AND s.ship_time;"
);

parses!(
    interval_literals,
    "SELECT INTERVAL '5' MINUTES, INTERVAL '10' SECONDS, INTERVAL '2' HOURS, INTERVAL '3' DAYS,
  INTERVAL '1 2' DAY TO HOUR, INTERVAL '1-6' YEAR TO MONTH, INTERVAL '7' DAY;"
);

parses!(
    broadcast_hint,
    "SELECT /*+ BROADCAST(dim) */ * FROM fact JOIN dim ON fact.k = dim.k;"
);

parses!(
    casts_with_flink_types,
    "SELECT CAST(a AS STRING), CAST(b AS BYTES), CAST(c AS DECIMAL(10, 2)), CAST(d AS TIMESTAMP_LTZ(3)),
  CAST(e AS TIMESTAMP(3) WITH LOCAL TIME ZONE), TRY_CAST(f AS INT NOT NULL), CAST(g AS ROW<x INT, y STRING>),
  CAST(h AS ROW(x INT, y STRING)), CAST(i AS ARRAY<BIGINT>), CAST(j AS MAP<STRING, ARRAY<INT>>), CAST(k AS INT ARRAY)
FROM t;"
);

parses!(
    expression_forms,
    "SELECT PROCTIME(), CURRENT_TIMESTAMP, x IS DISTINCT FROM y, x IS NOT DISTINCT FROM y, s SIMILAR TO 'a%',
  a || b, ARRAY[1, 2], MAP['a', 1, 'b', 2], ROW(1, 'a'), arr[1], row_col.field, `select`, t.`m`['k']
FROM t;"
);

parses!(
    function_call_syntax,
    "SELECT JSON_VALUE(payload, '$.a' RETURNING INT DEFAULT 0 ON EMPTY), TIMESTAMPADD(MINUTE, 1, ts),
  TIMESTAMPDIFF(DAY, a, b), EXTRACT(HOUR FROM ts), DATE '2020-01-01', TIMESTAMP '2020-01-01 00:00:00',
  TO_TIMESTAMP_LTZ(1700000000000, 3), FLOOR(ts TO HOUR), CEIL(ts TO DAY), POSITION('a' IN s),
  TRIM(BOTH ' ' FROM s), OVERLAY(s PLACING 'xx' FROM 2 FOR 3), SUBSTRING(s FROM 1 FOR 2)
FROM t;"
);

parses!(
    aggregates_and_sets,
    "WITH agg AS (SELECT a, COUNT(DISTINCT b) FILTER (WHERE c > 0) AS n FROM t GROUP BY GROUPING SETS ((a), ()))
SELECT a, n FROM agg UNION ALL SELECT 'x', 0;
VALUES (1, 'a'), (2, 'b');"
);

parses!(
    json_functions,
    "SELECT JSON_OBJECT(KEY 'a' VALUE b, 'c' VALUE 1 ABSENT ON NULL), JSON_ARRAY(1, 'a' NULL ON NULL),
  JSON_EXISTS(s, '$.a' FALSE ON ERROR), JSON_QUERY(s, '$.a' WITH CONDITIONAL ARRAY WRAPPER EMPTY ARRAY ON EMPTY),
  JSON_VALUE(s, '$.b' RETURNING DOUBLE NULL ON EMPTY ERROR ON ERROR), JSON_ARRAYAGG(a ORDER BY b ABSENT ON NULL)
FROM t;"
);

parses!(
    watermark_variants,
    "CREATE TABLE w (
  r ROW<b TIMESTAMP(3)>,
  ts TIMESTAMP_LTZ(3),
  WATERMARK FOR r.b AS r.b - INTERVAL '1' SECOND
) WITH ('connector' = 'datagen');
CREATE TABLE s (ts TIMESTAMP(3), WATERMARK FOR ts AS SOURCE_WATERMARK()) WITH ('connector' = 'kafka');"
);

parses!(
    create_table_as_select,
    "CREATE TABLE out_items WITH ('connector' = 'print') AS SELECT id, UPPER(name) AS uname FROM items;"
);

parses!(
    predicates_between_symmetric_is_json_trim,
    "SELECT n BETWEEN SYMMETRIC 20 AND 0, n NOT BETWEEN ASYMMETRIC 0 AND 20, body IS JSON OBJECT, body IS NOT JSON,
  TRIM(LEADING FROM p), TRIM(FROM p), TRIM(TRAILING 'x' FROM p)
FROM t;"
);
