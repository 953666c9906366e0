//! A job's live figures ([`riffle_runtime::metrics`]): records in and out per operator
//! subtask, watermarks, and checkpoint figures, read after a bounded job ran.

use std::sync::{Arc, Mutex};

use riffle_plan::OperatorKind;
use riffle_runtime::metrics::{JobMetrics, MetricsSnapshot};
use riffle_runtime::{PrintTarget, RunOptions};

/// Runs `sql`; returns the printed lines and the job's figures at its end.
fn run(sql: &str, job_id: &str) -> (Vec<String>, MetricsSnapshot, riffle_plan::JobGraph) {
    let graph = riffle_plan::plan_sql(sql).unwrap_or_else(|d| panic!("{d:?}"));
    let lines = Arc::new(Mutex::new(Vec::new()));
    let options = RunOptions {
        print_target: PrintTarget::Capture(lines.clone()),
        job_id: Some(job_id.to_string()),
        ..RunOptions::default()
    };
    let metrics = JobMetrics::new(&graph);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    runtime
        .block_on(riffle_runtime::run_with_metrics(
            &graph,
            options,
            metrics.clone(),
        ))
        .unwrap_or_else(|e| panic!("{e}"));
    let out = lines.lock().unwrap_or_else(|e| panic!("{e}")).clone();
    (out, metrics.snapshot(), graph)
}

fn total(subtasks: &[riffle_runtime::metrics::SubtaskFigures], out: bool) -> u64 {
    subtasks
        .iter()
        .map(|s| if out { s.records_out } else { s.records_in })
        .sum()
}

#[test]
fn records_and_watermarks_are_counted_per_operator_subtask() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let rows: String = (0..200)
        .map(|i| format!("2024-01-01 10:{:02}:{:02},{i}\n", i / 60, i % 60))
        .collect();
    let size = rows.len() as u64;
    std::fs::write(dir.path().join("a.csv"), rows).unwrap_or_else(|e| panic!("{e}"));
    let sql = format!(
        "SET 'parallelism.default' = '2';
CREATE TABLE t (ts TIMESTAMP(3), v INT, WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');
SELECT v % 3, COUNT(*) FROM t WHERE v >= 50 GROUP BY v % 3;",
        dir.path().display()
    );
    let (lines, snapshot, graph) = run(&sql, "figures");
    assert_eq!(snapshot.operators.len(), graph.operators.len());
    for (op, subtasks) in graph.operators.iter().zip(&snapshot.operators) {
        assert_eq!(subtasks.len(), op.parallelism, "operator {}", op.id);
        match &op.kind {
            OperatorKind::Source { .. } => {
                assert_eq!(total(subtasks, true), 200, "source reads every row");
                assert_eq!(total(subtasks, false), 0);
                // The file's bytes, all read (one subtask has the file, the other none).
                let progress: Vec<(u64, u64)> =
                    subtasks.iter().filter_map(|s| s.progress).collect();
                assert_eq!(progress.len(), 2);
                let read: (u64, u64) = progress
                    .iter()
                    .fold((0, 0), |(d, t), (a, b)| (d + a, t + b));
                assert_eq!(read, (size, size));
            }
            OperatorKind::Sink { .. } => {
                assert_eq!(total(subtasks, false), lines.len() as u64, "sink rows");
            }
            OperatorKind::Calc {
                filter: Some(_), ..
            } => {
                assert_eq!(total(subtasks, false), 200);
                assert_eq!(total(subtasks, true), 150, "the filter keeps v >= 50");
            }
            _ => {}
        }
        // Every subtask saw the end of its input: the maximum watermark.
        for s in subtasks {
            assert_eq!(s.watermark, Some(i64::MAX), "operator {}", op.id);
        }
    }
    // Without checkpointing there are no checkpoint figures.
    assert_eq!(snapshot.checkpoints.completed, 0);
    assert_eq!(snapshot.state_bytes(), 0);
}

#[test]
fn checkpoints_record_their_duration_size_and_the_state_size() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let rows: String = (0..100).map(|i| format!("k{},{i}\n", i % 5)).collect();
    std::fs::write(dir.path().join("a.csv"), rows).unwrap_or_else(|e| panic!("{e}"));
    let checkpoints = dir.path().join("checkpoints");
    let sql = format!(
        "SET 'execution.checkpointing.interval' = '50 ms';
SET 'state.checkpoints.dir' = '{}';
CREATE TABLE t (k STRING, v INT) WITH ('connector' = 'filesystem', 'path' = '{}/a.csv', 'format' = 'csv');
SELECT k, SUM(v) FROM t GROUP BY k;",
        checkpoints.display(),
        dir.path().display()
    );
    let (_, snapshot, _) = run(&sql, "figures-checkpointed");
    // At least the final checkpoint of the bounded job.
    assert!(snapshot.checkpoints.completed >= 1);
    let last = snapshot
        .checkpoints
        .last
        .clone()
        .expect("a last checkpoint");
    assert!(last.id >= 1);
    assert!(last.size_bytes > 0, "{last:?}");
    // The aggregation's keyed state is in it, and the job's state adds up to the checkpoint.
    assert!(snapshot.state_bytes() > 0);
    assert_eq!(snapshot.state_bytes(), last.size_bytes);
}
