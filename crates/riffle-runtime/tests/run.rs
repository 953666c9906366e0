//! End-to-end runs of small jobs: parallel shuffles, windows, changelogs, datagen and stopping.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use riffle_runtime::{PrintTarget, RunOptions, StopHandle};

/// A job of `sql` ready to run: its graph, options printing into `lines`, its stop handle and a
/// runtime.
struct Prepared {
    graph: riffle_plan::JobGraph,
    options: RunOptions,
    lines: Arc<Mutex<Vec<String>>>,
    stop: StopHandle,
    runtime: tokio::runtime::Runtime,
}

fn prepare(sql: &str) -> Result<Prepared, String> {
    let graph = riffle_plan::plan_sql(sql).map_err(|d| format!("{d:?}"))?;
    let lines = Arc::new(Mutex::new(Vec::new()));
    let stop = StopHandle::default();
    let options = RunOptions {
        print_target: PrintTarget::Capture(lines.clone()),
        stop: stop.clone(),
        job_id: None,
        from_savepoint: None,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    Ok(Prepared {
        graph,
        options,
        lines,
        stop,
        runtime,
    })
}

/// Plans and runs `sql`, returning the printed lines.
fn run(sql: &str) -> Result<Vec<String>, String> {
    let job = prepare(sql)?;
    let (graph, options) = (job.graph, job.options);
    job.runtime
        .block_on(riffle_runtime::run(&graph, options))
        .map_err(|e| e.to_string())?;
    let out = job.lines.lock().map_err(|e| e.to_string())?.clone();
    Ok(out)
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

/// Writes `files` into a temporary directory and returns it.
fn data_dir(files: &[(&str, String)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    for (name, content) in files {
        std::fs::write(dir.path().join(name), content).unwrap_or_else(|e| panic!("{e}"));
    }
    dir
}

/// Applies a changelog (`+I`/`+U` add, `-U`/`-D` remove) and returns the remaining rows.
fn final_table(lines: &[String]) -> Vec<String> {
    let mut rows: BTreeMap<String, i64> = BTreeMap::new();
    for line in lines {
        let (kind, row) = line.split_at(2);
        let delta = if kind == "+I" || kind == "+U" { 1 } else { -1 };
        *rows.entry(row.to_string()).or_default() += delta;
    }
    rows.into_iter()
        .flat_map(|(r, n)| std::iter::repeat_n(r, n.max(0) as usize))
        .collect()
}

#[test]
fn parallel_group_aggregation_has_the_same_final_table() {
    let rows: String = (0..300).map(|i| format!("k{},{}\n", i % 7, i)).collect();
    let dir = data_dir(&[("a.csv", rows.clone()), ("b.csv", rows)]);
    let table = format!(
        "CREATE TABLE t (k STRING, v INT) WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');\n",
        dir.path().display()
    );
    let query = "SELECT k, COUNT(*), SUM(v), MAX(v) FROM t GROUP BY k;";
    let single = run(&format!("{table}{query}")).unwrap_or_else(|e| panic!("{e}"));
    let parallel = run(&format!("SET 'parallelism.default' = '3';\n{table}{query}"))
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        single.iter().any(|l| l.starts_with("-U")),
        "updates expected: {single:?}"
    );
    let expected = final_table(&single);
    assert_eq!(expected.len(), 7);
    assert!(
        expected.contains(&"[k0, 86, 12642, 294]".to_string()),
        "{expected:?}"
    );
    assert_eq!(final_table(&parallel), expected);
}

#[test]
fn windows_fire_at_end_of_input_with_parallel_sources() {
    let first: String = (0..60)
        .map(|m| format!("2024-01-01 10:{m:02}:00,1\n"))
        .collect();
    let second: String = (0..60)
        .map(|m| format!("2024-01-01 10:{m:02}:30,2\n"))
        .collect();
    let dir = data_dir(&[("a.csv", first), ("b.csv", second)]);
    let sql = format!(
        "SET 'parallelism.default' = '2';
CREATE TABLE t (ts TIMESTAMP(3), v INT, WATERMARK FOR ts AS ts - INTERVAL '10' MINUTE)
WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');
SELECT window_start, SUM(v), COUNT(*) FROM TABLE(HOP(TABLE t, DESCRIPTOR(ts), INTERVAL '10' MINUTES, INTERVAL '20' MINUTES))
GROUP BY window_start, window_end;",
        dir.path().display()
    );
    let out = sorted(run(&sql).unwrap_or_else(|e| panic!("{e}")));
    assert_eq!(
        out,
        vec![
            "+I[2024-01-01T09:50, 30, 20]",
            "+I[2024-01-01T10:00, 60, 40]",
            "+I[2024-01-01T10:10, 60, 40]",
            "+I[2024-01-01T10:20, 60, 40]",
            "+I[2024-01-01T10:30, 60, 40]",
            "+I[2024-01-01T10:40, 60, 40]",
            "+I[2024-01-01T10:50, 30, 20]",
        ]
    );
}

#[test]
fn late_rows_are_dropped_by_window_aggregation() {
    let dir = data_dir(&[(
        "t.csv",
        "2024-01-01 10:01:00,1\n2024-01-01 10:12:00,2\n2024-01-01 10:02:00,4\n2024-01-01 10:13:00,8\n".to_string(),
    )]);
    let sql = format!(
        "CREATE TABLE t (ts TIMESTAMP(3), v INT, WATERMARK FOR ts AS ts)
WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');
SELECT window_start, SUM(v) FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '10' MINUTES)) GROUP BY window_start, window_end;",
        dir.path().display()
    );
    let out = sorted(run(&sql).unwrap_or_else(|e| panic!("{e}")));
    assert_eq!(
        out,
        vec!["+I[2024-01-01T10:00, 1]", "+I[2024-01-01T10:10, 10]"]
    );
}

/// Runs an unbounded `sql` for `millis`, then stops it and returns the printed lines; fails
/// unless the job stops cleanly.
fn run_for(sql: &str, millis: u64) -> Vec<String> {
    let job = prepare(sql).unwrap_or_else(|e| panic!("{e}"));
    let (graph, options, stop) = (job.graph, job.options, job.stop);
    let result = job.runtime.block_on(async move {
        let job = tokio::spawn(async move { riffle_runtime::run(&graph, options).await });
        tokio::time::sleep(Duration::from_millis(millis)).await;
        stop.stop();
        tokio::time::timeout(Duration::from_secs(10), job).await
    });
    match result {
        Ok(Ok(Ok(()))) => {}
        other => panic!("job did not stop cleanly: {other:?}"),
    }
    let out = job.lines.lock().unwrap_or_else(|e| panic!("{e}")).clone();
    out
}

#[test]
fn processing_time_windows_fire_on_the_wall_clock() {
    // Four rows a second for about three seconds, in one-second processing-time windows: the
    // windows that end while the job runs fire on the clock, between rows, each exactly once.
    let sql = "CREATE TABLE g (k INT, pt AS PROCTIME())
WITH ('connector' = 'datagen', 'rows-per-second' = '4', 'fields.k.min' = '1', 'fields.k.max' = '1');
SELECT k, COUNT(*), TIMESTAMPDIFF(SECOND, window_start, window_end), CAST(window_start AS STRING)
FROM TABLE(TUMBLE(TABLE g, DESCRIPTOR(pt), INTERVAL '1' SECOND))
GROUP BY k, window_start, window_end;";
    let out = run_for(sql, 3_200);
    assert!(out.len() >= 2, "windows fired on the clock: {out:?}");
    let mut starts = std::collections::BTreeSet::new();
    for line in &out {
        let fields: Vec<&str> = line
            .trim_start_matches("+I[")
            .trim_end_matches(']')
            .split(", ")
            .collect();
        assert!(line.starts_with("+I["), "{line}");
        assert_eq!(fields.first(), Some(&"1"), "{line}");
        let count: i64 = fields[1].parse().unwrap_or_else(|e| panic!("{line}: {e}"));
        assert!((1..=8).contains(&count), "{line}");
        assert_eq!(fields[2], "1", "one-second windows: {line}");
        assert!(
            starts.insert(fields[3].to_string()),
            "a window fired twice: {out:?}"
        );
    }
}

#[test]
fn print_sink_prefixes_and_datagen_sequences() {
    let sql = "CREATE TABLE g (id BIGINT, s STRING) WITH ('connector' = 'datagen', 'fields.id.kind' = 'sequence',
  'fields.id.start' = '1', 'fields.id.end' = '5', 'fields.s.length' = '4');
CREATE TABLE p (id BIGINT, n INT) WITH ('connector' = 'print', 'print-identifier' = 'out');
INSERT INTO p SELECT id, CHARACTER_LENGTH(s) FROM g WHERE id <> 3;";
    let out = sorted(run(sql).unwrap_or_else(|e| panic!("{e}")));
    assert_eq!(
        out,
        vec![
            "out> +I[1, 4]",
            "out> +I[2, 4]",
            "out> +I[4, 4]",
            "out> +I[5, 4]"
        ]
    );
}

#[test]
fn bad_input_fails_the_job_with_a_located_message() {
    let dir = data_dir(&[("t.csv", "1\nx\n".to_string())]);
    let sql = format!(
        "CREATE TABLE t (a INT) WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');\nSELECT a FROM t;",
        dir.path().display()
    );
    let err = run(&sql).err().unwrap_or_default();
    assert!(err.contains("t.csv:2") && err.contains("'x'"), "{err}");
}

#[test]
fn an_unbounded_job_stops_on_request() {
    let sql = "CREATE TABLE g (id INT) WITH ('connector' = 'datagen', 'rows-per-second' = '100');
CREATE TABLE b (id INT) WITH ('connector' = 'blackhole');
INSERT INTO b SELECT id FROM g;";
    // run_for fails unless the job stops cleanly within its timeout.
    assert!(run_for(sql, 200).is_empty());
}

#[test]
fn filesystem_sinks_write_flink_text_and_read_back() {
    let dir = data_dir(&[(
        "in.csv",
        "1,\"a,b\",2.50,2024-01-01 10:00:00.5\n2,,0.10,2024-01-01 10:00:00\n".to_string(),
    )]);
    let out_csv = dir.path().join("out-csv");
    let out_json = dir.path().join("out-json");
    let sql = format!(
        "CREATE TABLE t (id INT, s STRING, d DECIMAL(5, 2), ts TIMESTAMP(3))
WITH ('connector' = 'filesystem', 'path' = '{input}', 'format' = 'csv', 'csv.null-literal' = '');
CREATE TABLE c (id INT, s STRING, d DECIMAL(5, 2), ts TIMESTAMP(3))
WITH ('connector' = 'filesystem', 'path' = '{csv}', 'format' = 'csv');
CREATE TABLE j (id INT, s STRING, d DECIMAL(5, 2), ts TIMESTAMP(3))
WITH ('connector' = 'filesystem', 'path' = '{json}', 'format' = 'json');
EXECUTE STATEMENT SET BEGIN
INSERT INTO c SELECT * FROM t;
INSERT INTO j SELECT * FROM t;
END;",
        input = dir.path().join("in.csv").display(),
        csv = out_csv.display(),
        json = out_json.display()
    );
    run(&sql).unwrap_or_else(|e| panic!("{e}"));
    let csv =
        std::fs::read_to_string(out_csv.join("part-0-0.csv")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        csv,
        "1,\"a,b\",2.50,2024-01-01 10:00:00.5\n2,,0.10,2024-01-01 10:00:00\n"
    );
    let json =
        std::fs::read_to_string(out_json.join("part-0-0.json")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        json,
        "{\"id\":1,\"s\":\"a,b\",\"d\":2.50,\"ts\":\"2024-01-01 10:00:00.5\"}\n{\"id\":2,\"s\":null,\"d\":0.10,\"ts\":\"2024-01-01 10:00:00\"}\n"
    );
    let back = format!(
        "CREATE TABLE j (id INT, s STRING, d DECIMAL(5, 2), ts TIMESTAMP(3))
WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'json');
SELECT * FROM j;",
        out_json.display()
    );
    let rows = sorted(run(&back).unwrap_or_else(|e| panic!("{e}")));
    assert_eq!(
        rows,
        vec![
            "+I[1, a,b, 2.50, 2024-01-01T10:00:00.500]",
            "+I[2, null, 0.10, 2024-01-01T10:00]"
        ]
    );
}
