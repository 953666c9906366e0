//! Checkpointed runs in process: the output of a checkpointed job (stopped after a checkpoint and
//! resumed, or run through) equals the output of the same job without checkpoints; damaged or
//! unsupported checkpoints fail with errors that name the problem.

use std::path::Path;
use std::time::Duration;

use riffle_runtime::{RunOptions, StopHandle};

/// Runs `sql` under `job_id`; with `stop_at`, stops the job once that directory holds a
/// completed checkpoint.
fn run(sql: &str, job_id: &str, stop_at: Option<&Path>) -> Result<(), String> {
    let graph = riffle_plan::plan_sql(sql).map_err(|d| format!("{d:?}"))?;
    let stop = StopHandle::default();
    let options = RunOptions {
        stop: stop.clone(),
        job_id: Some(job_id.to_string()),
        ..RunOptions::default()
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    if let Some(dir) = stop_at.map(Path::to_path_buf) {
        std::thread::spawn(move || loop {
            let done = std::fs::read_dir(&dir)
                .map(|entries| {
                    entries
                        .filter_map(|e| e.ok())
                        .any(|e| e.path().join("_metadata").is_file())
                })
                .unwrap_or(false);
            if done {
                stop.stop();
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        });
    }
    runtime
        .block_on(riffle_runtime::run(&graph, options))
        .map_err(|e| e.to_string())
}

/// Every line of every visible file under `dir`, sorted.
fn sink_lines(dir: &Path) -> Vec<String> {
    let mut lines = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if name.starts_with('.') {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        lines.extend(text.lines().map(str::to_string));
    }
    lines.sort();
    lines
}

/// A join of orders with their customers and a per-minute window aggregation, from CSV files
/// into CSV sinks.
fn job(data: &Path, out: &str, checkpoints: Option<&Path>) -> String {
    let set = match checkpoints {
        Some(dir) => format!(
            "SET 'execution.checkpointing.interval' = '20 ms';\nSET 'execution.checkpointing.dir' = '{}';\n",
            dir.display()
        ),
        None => String::new(),
    };
    let d = data.display();
    format!(
        "{set}SET 'parallelism.default' = '2';
CREATE TABLE orders (id BIGINT, customer INT, amount INT, ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
  WITH ('connector' = 'filesystem', 'path' = '{d}/orders.csv', 'format' = 'csv');
CREATE TABLE customers (customer INT, name STRING)
  WITH ('connector' = 'filesystem', 'path' = '{d}/customers.csv', 'format' = 'csv');
CREATE TABLE joined (id BIGINT, name STRING, amount INT)
  WITH ('connector' = 'filesystem', 'path' = '{d}/{out}/joined', 'format' = 'csv');
CREATE TABLE minutes (window_start TIMESTAMP(3), customer INT, total INT, cnt BIGINT)
  WITH ('connector' = 'filesystem', 'path' = '{d}/{out}/minutes', 'format' = 'csv');
EXECUTE STATEMENT SET BEGIN
INSERT INTO joined SELECT o.id, c.name, o.amount FROM orders o JOIN customers c ON o.customer = c.customer;
INSERT INTO minutes SELECT window_start, customer, SUM(amount), COUNT(*)
  FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '1' MINUTE))
  GROUP BY window_start, window_end, customer;
END;
"
    )
}

fn write_data(dir: &Path) {
    let mut orders = String::new();
    for i in 0..10_000u64 {
        let minute = i / 250;
        let second = (i * 7) % 60;
        orders.push_str(&format!(
            "{i},{},{},2024-01-01 10:{:02}:{:02}.000\n",
            i % 13,
            i % 100,
            minute % 60,
            second
        ));
    }
    let customers: String = (0..13).map(|c| format!("{c},customer-{c}\n")).collect();
    std::fs::write(dir.join("orders.csv"), orders).unwrap();
    std::fs::write(dir.join("customers.csv"), customers).unwrap();
}

#[test]
fn stopped_and_resumed_job_writes_what_an_uninterrupted_one_writes() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    write_data(data);
    run(&job(data, "plain", None), "plain", None).unwrap();
    let expected_joined = sink_lines(&data.join("plain/joined"));
    let expected_minutes = sink_lines(&data.join("plain/minutes"));
    assert_eq!(expected_joined.len(), 10_000);

    let checkpoints = data.join("checkpoints");
    let sql = job(data, "resumed", Some(&checkpoints));
    run(&sql, "resumed", Some(&checkpoints.join("resumed"))).unwrap();
    run(&sql, "resumed", None).unwrap();
    assert_eq!(sink_lines(&data.join("resumed/joined")), expected_joined);
    assert_eq!(sink_lines(&data.join("resumed/minutes")), expected_minutes);

    // Running a finished job again restores its final checkpoint and adds nothing.
    run(&sql, "resumed", None).unwrap();
    assert_eq!(sink_lines(&data.join("resumed/joined")), expected_joined);
}

#[test]
fn damaged_checkpoints_and_unsupported_operators_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    write_data(data);
    let checkpoints = data.join("checkpoints");
    let sql = job(data, "out", Some(&checkpoints));
    run(&sql, "damaged", None).unwrap();
    let chk = std::fs::read_dir(checkpoints.join("damaged"))
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .find(|p| p.join("_metadata").is_file())
        .unwrap();
    std::fs::write(chk.join("_metadata"), "{\"format\": 1,").unwrap();
    let err = run(&sql, "damaged", None).unwrap_err();
    assert!(
        err.contains("_metadata is corrupted") && err.contains(&chk.display().to_string()),
        "{err}"
    );

    let session = format!(
        "SET 'execution.checkpointing.interval' = '1 s';
SET 'execution.checkpointing.dir' = '{}';
CREATE TABLE orders (id BIGINT, customer INT, amount INT, ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
  WITH ('connector' = 'filesystem', 'path' = '{}/orders.csv', 'format' = 'csv');
SELECT window_start, COUNT(*) FROM TABLE(SESSION(TABLE orders, DESCRIPTOR(ts), INTERVAL '1' MINUTE))
GROUP BY window_start, window_end;",
        checkpoints.display(),
        data.display()
    );
    let err = run(&session, "session", None).unwrap_err();
    assert!(
        err.contains("unsupported feature: checkpointing a job with operator"),
        "{err}"
    );
}

#[test]
fn datagen_resumes_its_sequences_and_random_values() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    let checkpoints = data.join("checkpoints");
    let job = |out: &str, checkpointed: bool| {
        let set = if checkpointed {
            format!(
                "SET 'execution.checkpointing.interval' = '20 ms';\nSET 'execution.checkpointing.dir' = '{}';\n",
                checkpoints.display()
            )
        } else {
            String::new()
        };
        format!(
            "{set}SET 'parallelism.default' = '2';
CREATE TABLE g (id BIGINT, v INT) WITH ('connector' = 'datagen', 'rows-per-second' = '20000',
  'fields.id.kind' = 'sequence', 'fields.id.start' = '1', 'fields.id.end' = '20000',
  'fields.v.min' = '0', 'fields.v.max' = '999');
CREATE TABLE out (id BIGINT, v INT)
  WITH ('connector' = 'filesystem', 'path' = '{}/{out}', 'format' = 'csv');
INSERT INTO out SELECT id, v FROM g;",
            data.display()
        )
    };
    run(&job("plain", false), "plain", None).unwrap();
    let expected = sink_lines(&data.join("plain"));
    assert_eq!(expected.len(), 20_000);
    let sql = job("resumed", true);
    run(&sql, "datagen", Some(&checkpoints.join("datagen"))).unwrap();
    run(&sql, "datagen", None).unwrap();
    assert_eq!(sink_lines(&data.join("resumed")), expected);
}
