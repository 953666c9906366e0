//! End-to-end runs of joins on several subtasks: both inputs are hash-partitioned on the join
//! key, so every subtask holds whole keys and the result does not depend on the parallelism.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use riffle_runtime::{PrintTarget, RunOptions, StopHandle};

/// Plans and runs `sql`, returning the printed lines.
fn run(sql: &str) -> Vec<String> {
    let graph = riffle_plan::plan_sql(sql).unwrap_or_else(|d| panic!("{d:?}"));
    let lines = Arc::new(Mutex::new(Vec::new()));
    let options = RunOptions {
        print_target: PrintTarget::Capture(lines.clone()),
        stop: StopHandle::default(),
        job_id: None,
        from_savepoint: None,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    runtime
        .block_on(riffle_runtime::run(&graph, options))
        .unwrap_or_else(|e| panic!("{e}"));
    let out = lines.lock().unwrap_or_else(|e| panic!("{e}")).clone();
    out
}

/// Applies a changelog (`+I`/`+U` add, `-U`/`-D` remove) and returns the remaining rows.
fn final_table(lines: &[String]) -> Vec<String> {
    let mut rows: BTreeMap<String, i64> = BTreeMap::new();
    for line in lines {
        let (kind, row) = line.split_at(2);
        let delta = if kind == "+I" || kind == "+U" { 1 } else { -1 };
        *rows.entry(row.to_string()).or_default() += delta;
    }
    assert!(
        rows.values().all(|n| *n >= 0),
        "a row was retracted more often than added"
    );
    rows.into_iter()
        .flat_map(|(r, n)| std::iter::repeat_n(r, n as usize))
        .collect()
}

fn data_dir(files: &[(&str, String)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    for (name, content) in files {
        std::fs::write(dir.path().join(name), content).unwrap_or_else(|e| panic!("{e}"));
    }
    dir
}

#[test]
fn parallel_left_join_matches_every_key_once_per_right_copy() {
    // 200 left rows over keys 0..10; keys 0..5 appear twice on the right.
    let left: String = (0..200).map(|i| format!("{},{i}\n", i % 10)).collect();
    let right: String = (0..10).map(|i| format!("{},r{i}\n", i % 5)).collect();
    let dir = data_dir(&[("l.csv", left), ("r.csv", right)]);
    let job = |parallelism: usize| {
        format!(
            "SET 'parallelism.default' = '{parallelism}';
CREATE TABLE l (k INT, v INT) WITH ('connector' = 'filesystem', 'path' = '{0}/l.csv', 'format' = 'csv');
CREATE TABLE r (k INT, w STRING) WITH ('connector' = 'filesystem', 'path' = '{0}/r.csv', 'format' = 'csv');
SELECT l.k, l.v, r.w FROM l LEFT JOIN r ON l.k = r.k;",
            dir.path().display()
        )
    };
    let parallel = final_table(&run(&job(3)));
    assert_eq!(parallel.len(), 100 * 2 + 100);
    assert_eq!(
        parallel.iter().filter(|r| r.ends_with(", null]")).count(),
        100
    );
    assert_eq!(parallel, final_table(&run(&job(1))));
}

#[test]
fn parallel_interval_join_keeps_rows_within_the_bounds() {
    // Left row i at minute i, right rows at minute i + 1 and i + 3; the join accepts up to 2
    // minutes.
    let left: String = (0..60)
        .map(|i| format!("2024-03-01 10:{i:02}:00,{}\n", i % 4))
        .collect();
    let right: String = (0..56)
        .flat_map(|i| {
            [
                format!("2024-03-01 10:{:02}:00,{}\n", i + 1, i % 4),
                format!("2024-03-01 10:{:02}:00,{}\n", i + 3, (i + 3) % 4),
            ]
        })
        .collect();
    let dir = data_dir(&[("l.csv", left), ("r.csv", right)]);
    let sql = format!(
        "SET 'parallelism.default' = '2';
CREATE TABLE l (ts TIMESTAMP(3), k INT, WATERMARK FOR ts AS ts) WITH ('connector' = 'filesystem', 'path' = '{0}/l.csv', 'format' = 'csv');
CREATE TABLE r (ts TIMESTAMP(3), k INT, WATERMARK FOR ts AS ts) WITH ('connector' = 'filesystem', 'path' = '{0}/r.csv', 'format' = 'csv');
SELECT l.ts, r.ts FROM l, r WHERE l.k = r.k AND r.ts BETWEEN l.ts AND l.ts + INTERVAL '2' MINUTE;",
        dir.path().display()
    );
    let out = run(&sql);
    assert!(out.iter().all(|l| l.starts_with("+I")));
    // Right rows at i + 1 with key i % 4 match left row i (the i + 3 rows carry key
    // (i + 3) % 4 and are 0 minutes after left row i + 3: they match it too).
    assert_eq!(out.len(), 56 + 56);
}
