-- File benchmark, TUMBLE aggregation: per user and one-minute event-time window, the row count,
-- the sum and the maximum of the price, into a blackhole sink.
-- `riffle bench file` and benches/flink_file.py point the filesystem table at the generated file.

CREATE TABLE bench_rows (
    id BIGINT,
    user_id BIGINT,
    item STRING,
    price DOUBLE,
    ts TIMESTAMP(3),
    WATERMARK FOR ts AS ts - INTERVAL '1' SECOND
) WITH (
    'connector' = 'filesystem',
    'path' = '/tmp/riffle-bench/rows.csv',
    'format' = 'csv'
);

CREATE TABLE bench_tumble (
    window_start TIMESTAMP(3),
    window_end TIMESTAMP(3),
    user_id BIGINT,
    cnt BIGINT,
    total DOUBLE,
    top DOUBLE
) WITH (
    'connector' = 'blackhole'
);

INSERT INTO bench_tumble
SELECT window_start, window_end, user_id, COUNT(*), SUM(price), MAX(price)
FROM TABLE(TUMBLE(TABLE bench_rows, DESCRIPTOR(ts), INTERVAL '1' MINUTE))
GROUP BY window_start, window_end, user_id;
