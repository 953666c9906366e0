-- File benchmark, pass-through: every row of the CSV file into a blackhole sink, unchanged.
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

CREATE TABLE bench_passthrough (
    id BIGINT,
    user_id BIGINT,
    item STRING,
    price DOUBLE,
    ts TIMESTAMP(3)
) WITH (
    'connector' = 'blackhole'
);

INSERT INTO bench_passthrough
SELECT id, user_id, item, price, ts FROM bench_rows;
