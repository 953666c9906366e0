//! Checkpointed runs in process: the output of a checkpointed job (stopped after a checkpoint and
//! resumed, or run through) equals the output of the same job without checkpoints; damaged or
//! damaged checkpoints fail with errors that name the problem.

use std::path::Path;
use std::time::Duration;

use riffle_runtime::{RunOptions, StopHandle};

/// Runs `sql` under `job_id`; with `stop_at`, stops the job once that directory holds a
/// completed checkpoint.
fn run(sql: &str, job_id: &str, stop_at: Option<&Path>) -> Result<(), String> {
    run_from(sql, job_id, stop_at, None)
}

/// [`run`], starting from `savepoint` when given.
fn run_from(
    sql: &str,
    job_id: &str,
    stop_at: Option<&Path>,
    savepoint: Option<&Path>,
) -> Result<(), String> {
    let graph = riffle_plan::plan_sql(sql).map_err(|d| format!("{d:?}"))?;
    let stop = StopHandle::default();
    let options = RunOptions {
        stop: stop.clone(),
        job_id: Some(job_id.to_string()),
        from_savepoint: savepoint.map(Path::to_path_buf),
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
    // A sink that committed nothing yet has no directory.
    let Ok(entries) = std::fs::read_dir(dir) else {
        return lines;
    };
    for entry in entries {
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
fn damaged_checkpoints_are_named() {
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

/// Every stateful operator family with an append-only output: session windows, interval
/// join, window join, OVER aggregation (ROWS and RANGE), window Top-N and event-time
/// deduplication.
fn stateful_job(data: &Path, out: &str, checkpoints: Option<&Path>) -> String {
    let set = match checkpoints {
        Some(dir) => format!(
            "SET 'execution.checkpointing.interval' = '20 ms';\nSET 'execution.checkpointing.dir' = '{}';\n",
            dir.display()
        ),
        None => String::new(),
    };
    let d = data.display();
    let sink = |name: &str, columns: &str| {
        format!(
            "CREATE TABLE {name} ({columns}) WITH ('connector' = 'filesystem', 'path' = '{d}/{out}/{name}', 'format' = 'csv');\n"
        )
    };
    let sinks = [
        sink("sessions", "customer INT, window_start TIMESTAMP(3), window_end TIMESTAMP(3), total INT, cnt BIGINT"),
        sink("shipped", "id BIGINT, amount INT, shipped TIMESTAMP(3)"),
        sink("same_minute", "id BIGINT, window_start TIMESTAMP(3), shipped TIMESTAMP(3)"),
        sink("running", "id BIGINT, customer INT, last4 INT, biggest INT"),
        sink("ranged", "id BIGINT, recent BIGINT, previous INT"),
        sink("top3", "window_start TIMESTAMP(3), id BIGINT, amount INT, rn BIGINT"),
        sink("firsts", "id BIGINT, customer INT, amount INT"),
    ]
    .concat();
    format!(
        "{set}SET 'parallelism.default' = '2';
CREATE TABLE orders (id BIGINT, customer INT, amount INT, ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
  WITH ('connector' = 'filesystem', 'path' = '{d}/orders', 'format' = 'csv');
CREATE TABLE shipments (id BIGINT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
  WITH ('connector' = 'filesystem', 'path' = '{d}/shipments.csv', 'format' = 'csv');
{sinks}EXECUTE STATEMENT SET BEGIN
INSERT INTO sessions SELECT customer, window_start, window_end, SUM(amount), COUNT(*)
  FROM TABLE(SESSION(TABLE orders PARTITION BY customer, DESCRIPTOR(ts), INTERVAL '5' SECOND))
  GROUP BY customer, window_start, window_end;
INSERT INTO shipped SELECT o.id, o.amount, s.ts FROM orders o LEFT JOIN shipments s
  ON o.id = s.id AND s.ts BETWEEN o.ts AND o.ts + INTERVAL '10' SECOND;
INSERT INTO same_minute SELECT o.id, o.window_start, s.ts
  FROM (SELECT * FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '1' MINUTE))) o
  JOIN (SELECT * FROM TABLE(TUMBLE(TABLE shipments, DESCRIPTOR(ts), INTERVAL '1' MINUTE))) s
  ON o.id = s.id AND o.window_start = s.window_start AND o.window_end = s.window_end;
INSERT INTO running SELECT id, customer,
  SUM(amount) OVER (PARTITION BY customer ORDER BY ts ROWS BETWEEN 3 PRECEDING AND CURRENT ROW),
  MAX(amount) OVER (PARTITION BY customer ORDER BY ts ROWS BETWEEN 3 PRECEDING AND CURRENT ROW)
  FROM orders;
INSERT INTO ranged SELECT id, COUNT(*) OVER w, LAG(amount) OVER w FROM orders
  WINDOW w AS (PARTITION BY customer ORDER BY ts RANGE BETWEEN INTERVAL '10' SECOND PRECEDING AND CURRENT ROW);
INSERT INTO top3 SELECT window_start, id, amount, rn FROM (
  SELECT window_start, id, amount, ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY amount DESC, id) AS rn
  FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '1' MINUTE))) WHERE rn <= 3;
INSERT INTO firsts SELECT id, customer, amount FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY customer ORDER BY ts) AS rn FROM orders) WHERE rn = 1;
END;
"
    )
}

/// Orders 700 ms apart, in bursts of 50 per customer (so sessions close); every third order
/// is shipped 0 to 14 seconds later, in time order.
fn write_stateful_data(dir: &Path) {
    let time = |ms: u64| {
        let s = ms / 1000;
        format!(
            "2024-01-01 {:02}:{:02}:{:02}.{:03}",
            10 + s / 3600,
            (s / 60) % 60,
            s % 60,
            ms % 1000
        )
    };
    let mut orders = String::new();
    let mut shipments: Vec<(u64, u64)> = Vec::new();
    for i in 0..8_000u64 {
        let ms = i * 700;
        orders.push_str(&format!(
            "{i},{},{},{}\n",
            (i / 50) % 13,
            (i * 37) % 100,
            time(ms)
        ));
        if i % 3 == 0 {
            shipments.push((ms + (i % 15) * 1000, i));
        }
    }
    shipments.sort();
    let shipments: String = shipments
        .iter()
        .map(|(ms, id)| format!("{id},{}\n", time(*ms)))
        .collect();
    // 400 files, each one batch, so that checkpoints fall between them and the first run is
    // stopped long before its end (with 20 files, decoding had become fast enough for the
    // whole job to end before its first checkpoint).
    let orders: Vec<&str> = orders.lines().collect();
    std::fs::create_dir(dir.join("orders")).unwrap();
    for (n, part) in orders.chunks(20).enumerate() {
        let text = part.join("\n") + "\n";
        std::fs::write(dir.join(format!("orders/{n:03}.csv")), text).unwrap();
    }
    std::fs::write(dir.join("shipments.csv"), shipments).unwrap();
}

#[test]
fn every_stateful_operator_resumes_exactly_once() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    write_stateful_data(data);
    run(&stateful_job(data, "plain", None), "plain", None).unwrap();
    let sinks = [
        "sessions",
        "shipped",
        "same_minute",
        "running",
        "ranged",
        "top3",
        "firsts",
    ];
    let expected: Vec<Vec<String>> = sinks
        .iter()
        .map(|s| sink_lines(&data.join("plain").join(s)))
        .collect();
    for (sink, lines) in sinks.iter().zip(&expected) {
        assert!(lines.len() >= 13, "{sink}: {} rows", lines.len());
    }

    let checkpoints = data.join("checkpoints");
    let sql = stateful_job(data, "resumed", Some(&checkpoints));
    run(&sql, "stateful", Some(&checkpoints.join("stateful"))).unwrap();
    let partial: usize = sinks
        .iter()
        .map(|s| sink_lines(&data.join("resumed").join(s)).len())
        .sum();
    let total: usize = expected.iter().map(Vec::len).sum();
    assert!(
        partial < total,
        "the first run was not stopped before its end"
    );
    run(&sql, "stateful", None).unwrap();
    for (sink, lines) in sinks.iter().zip(&expected) {
        assert_eq!(
            &sink_lines(&data.join("resumed").join(sink)),
            lines,
            "sink {sink}"
        );
    }
}

#[test]
fn a_savepoint_starts_another_job_where_the_first_one_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    write_data(data);
    run(&job(data, "plain", None), "plain", None).unwrap();
    let expected = sink_lines(&data.join("plain/minutes"));

    let checkpoints = data.join("checkpoints");
    let sql = job(data, "moved", Some(&checkpoints));
    run(&sql, "first", Some(&checkpoints.join("first"))).unwrap();
    let savepoints = data.join("savepoints");
    let savepoint =
        riffle_runtime::checkpoint::savepoint::create(&checkpoints, "first", &savepoints).unwrap();
    // The first job's checkpoints are gone: the savepoint holds everything.
    std::fs::remove_dir_all(checkpoints.join("first")).unwrap();
    run_from(&sql, "second", None, Some(&savepoint)).unwrap();
    assert_eq!(sink_lines(&data.join("moved/minutes")), expected);

    let err = riffle_runtime::checkpoint::savepoint::create(&checkpoints, "nobody", &savepoints)
        .unwrap_err();
    assert!(
        err.message
            .contains("job 'nobody' has no completed checkpoint"),
        "{err}"
    );
}

/// Runs `sql` under `job_id` until its checkpoint directory `dir` holds a completed
/// checkpoint numbered above `after`; returns the newest completed checkpoint's number.
fn run_until_checkpoint_after(sql: &str, job_id: &str, dir: &Path, after: u64) -> u64 {
    let newest = |dir: &Path| -> u64 {
        std::fs::read_dir(dir)
            .map(|entries| {
                entries
                    .filter_map(|e| e.ok())
                    .filter(|e| e.path().join("_metadata").is_file())
                    .filter_map(|e| {
                        let name = e.file_name().to_string_lossy().to_string();
                        name.strip_prefix("chk-").and_then(|n| n.parse().ok())
                    })
                    .max()
                    .unwrap_or(0)
            })
            .unwrap_or(0)
    };
    let graph = riffle_plan::plan_sql(sql).unwrap();
    let stop = StopHandle::default();
    let options = RunOptions {
        stop: stop.clone(),
        job_id: Some(job_id.to_string()),
        ..RunOptions::default()
    };
    let watched = dir.to_path_buf();
    std::thread::spawn(move || loop {
        if newest(&watched) > after {
            stop.stop();
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime
        .block_on(riffle_runtime::run(&graph, options))
        .unwrap();
    newest(dir)
}

/// A group aggregation, a regular join and a Top-N at `parallelism`, from CSV files into
/// changelog (`debezium-json`) and CSV sinks.
fn rescaled_job(
    data: &Path,
    parallelism: usize,
    backend: &str,
    checkpoints: Option<&Path>,
) -> String {
    let set = match checkpoints {
        Some(dir) => format!(
            "SET 'execution.checkpointing.interval' = '20 ms';\nSET 'execution.checkpointing.dir' = '{}';\n",
            dir.display()
        ),
        None => String::new(),
    };
    let d = data.display();
    let out = if checkpoints.is_some() {
        "rescaled"
    } else {
        "plain"
    };
    format!(
        "{set}SET 'parallelism.default' = '{parallelism}';
SET 'state.backend.type' = '{backend}';
CREATE TABLE orders (id BIGINT, customer INT, amount INT, ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
  WITH ('connector' = 'filesystem', 'path' = '{d}/orders', 'format' = 'csv');
CREATE TABLE customers (customer INT, name STRING)
  WITH ('connector' = 'filesystem', 'path' = '{d}/customers.csv', 'format' = 'csv');
CREATE TABLE totals (customer INT, total INT, cnt BIGINT)
  WITH ('connector' = 'filesystem', 'path' = '{d}/{out}/totals', 'format' = 'debezium-json');
CREATE TABLE named (id BIGINT, name STRING, amount INT)
  WITH ('connector' = 'filesystem', 'path' = '{d}/{out}/named', 'format' = 'csv');
CREATE TABLE top3 (customer INT, id BIGINT, amount INT, rn BIGINT)
  WITH ('connector' = 'filesystem', 'path' = '{d}/{out}/top3', 'format' = 'debezium-json');
EXECUTE STATEMENT SET BEGIN
INSERT INTO totals SELECT customer, SUM(amount), COUNT(*) FROM orders GROUP BY customer;
INSERT INTO named SELECT o.id, c.name, o.amount FROM orders o JOIN customers c ON o.customer = c.customer;
INSERT INTO top3 SELECT customer, id, amount, rn FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY customer ORDER BY amount DESC, id) AS rn FROM orders)
  WHERE rn <= 3;
END;
"
    )
}

/// 6,000 orders of 97 customers in 300 files (each one batch, so that checkpoints fall
/// between them and a run is stopped long before its end).
fn write_rescale_data(dir: &Path) {
    std::fs::create_dir(dir.join("orders")).unwrap();
    for file in 0..300u64 {
        let mut text = String::new();
        for i in file * 20..(file + 1) * 20 {
            text.push_str(&format!(
                "{i},{},{},2024-01-01 10:{:02}:{:02}.000\n",
                (i * 7) % 97,
                (i * 37) % 1000,
                (i / 60) % 60,
                i % 60
            ));
        }
        std::fs::write(dir.join(format!("orders/{file:03}.csv")), text).unwrap();
    }
    let customers: String = (0..97).map(|c| format!("{c},customer-{c}\n")).collect();
    std::fs::write(dir.join("customers.csv"), customers).unwrap();
}

/// The rows a changelog sink's lines (`debezium-json`) leave: every `after` added, every
/// `before` removed (a removal of a row that is not there fails: it was emitted twice or lost).
fn materialize(dir: &Path) -> Vec<String> {
    let mut rows: Vec<String> = Vec::new();
    let mut lines = Vec::new();
    let mut names: Vec<_> = std::fs::read_dir(dir)
        .map(|e| e.filter_map(|e| e.ok()).map(|e| e.path()).collect())
        .unwrap_or_default();
    // Part files by checkpoint number then subtask: each key's changes in the order they
    // were committed (a key's changes come from one subtask between two checkpoints).
    names.retain(|p: &std::path::PathBuf| {
        !p.file_name().unwrap().to_string_lossy().starts_with('.')
    });
    let order = |p: &std::path::PathBuf| {
        let name = p.file_stem().unwrap().to_string_lossy().to_string();
        let parts: Vec<u64> = name.split('-').filter_map(|s| s.parse().ok()).collect();
        (
            parts.get(1).copied().unwrap_or(0),
            parts.first().copied().unwrap_or(0),
        )
    };
    names.sort_by_key(order);
    for path in names {
        lines.extend(
            std::fs::read_to_string(&path)
                .unwrap()
                .lines()
                .map(str::to_string)
                .collect::<Vec<_>>(),
        );
    }
    for line in lines {
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        if !v["before"].is_null() {
            let row = v["before"].to_string();
            let i = rows
                .iter()
                .position(|r| *r == row)
                .unwrap_or_else(|| panic!("{}: retracts {row}, which is not there", dir.display()));
            rows.swap_remove(i);
        }
        if !v["after"].is_null() {
            rows.push(v["after"].to_string());
        }
    }
    rows.sort();
    rows
}

#[test]
fn a_job_resumes_with_another_parallelism_exactly_once() {
    for backend in ["hashmap", "rocksdb"] {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path();
        write_rescale_data(data);
        run(&rescaled_job(data, 2, backend, None), "plain", None).unwrap();
        let plain = data.join("plain");
        let expected_totals = materialize(&plain.join("totals"));
        let expected_top3 = materialize(&plain.join("top3"));
        let expected_named = sink_lines(&plain.join("named"));
        assert_eq!(expected_totals.len(), 97);
        assert_eq!(expected_top3.len(), 97 * 3);
        assert_eq!(expected_named.len(), 6_000);

        // 2 subtasks, then 3, then 1 to the end; each run stops after a new checkpoint.
        let checkpoints = data.join("checkpoints");
        let job_dir = checkpoints.join("rescaled");
        let mut last = 0;
        for parallelism in [2, 3] {
            let sql = rescaled_job(data, parallelism, backend, Some(&checkpoints));
            last = run_until_checkpoint_after(&sql, "rescaled", &job_dir, last);
        }
        let partial = sink_lines(&data.join("rescaled/named")).len();
        assert!(
            partial < 6_000,
            "{backend}: the runs were not stopped before the end"
        );
        run(
            &rescaled_job(data, 1, backend, Some(&checkpoints)),
            "rescaled",
            None,
        )
        .unwrap();
        let rescaled = data.join("rescaled");
        assert_eq!(
            materialize(&rescaled.join("totals")),
            expected_totals,
            "{backend}"
        );
        assert_eq!(
            materialize(&rescaled.join("top3")),
            expected_top3,
            "{backend}"
        );
        assert_eq!(
            sink_lines(&rescaled.join("named")),
            expected_named,
            "{backend}"
        );
    }
}

#[test]
fn a_changed_max_parallelism_or_an_unsplittable_source_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    write_rescale_data(data);
    let checkpoints = data.join("checkpoints");
    let sql = rescaled_job(data, 2, "hashmap", Some(&checkpoints));
    run(&sql, "job", Some(&checkpoints.join("job"))).unwrap();
    let err = run(
        &format!("SET 'pipeline.max-parallelism' = '64';\n{sql}"),
        "job",
        None,
    )
    .unwrap_err();
    assert!(
        err.contains("'pipeline.max-parallelism' 128, the job now has 64"),
        "{err}"
    );

    let datagen = |parallelism: usize| {
        format!(
            "SET 'execution.checkpointing.interval' = '20 ms';
SET 'execution.checkpointing.dir' = '{}';
SET 'parallelism.default' = '{parallelism}';
CREATE TABLE g (id BIGINT) WITH ('connector' = 'datagen', 'rows-per-second' = '2000',
  'fields.id.kind' = 'sequence', 'fields.id.start' = '1', 'fields.id.end' = '100000');
CREATE TABLE out (id BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO out SELECT id FROM g;",
            checkpoints.display()
        )
    };
    run(&datagen(2), "gen", Some(&checkpoints.join("gen"))).unwrap();
    let err = run(&datagen(3), "gen", None).unwrap_err();
    assert!(
        err.contains("unsupported feature: restoring the source of table 'g' (connector 'datagen') with another parallelism (2 subtasks in the checkpoint, 3 now)"),
        "{err}"
    );
}
