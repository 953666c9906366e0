//! The jobs' figures: `GET /metrics` in Prometheus' text format, and the `metrics` object of
//! a job's status (what the console shows).

use std::fmt::Write;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use riffle_plan::{JobGraph, OperatorKind};
use riffle_session::jobs::{MetricsSnapshot, SubtaskFigures};
use riffle_session::JobStatus;
use serde_json::{json, Value};

use crate::state::{lock, AppState};

/// A watermark as JSON: epoch milliseconds, `null` before the first one and once the input
/// ended (then `input_ended` says so).
fn watermark_json(watermark: Option<i64>) -> Value {
    match watermark {
        Some(w) if w != i64::MAX => json!(w),
        _ => Value::Null,
    }
}

/// An operator's watermark: the minimum over its subtasks (none while one has none).
fn operator_watermark(subtasks: &[SubtaskFigures]) -> Option<i64> {
    subtasks
        .iter()
        .map(|s| s.watermark)
        .collect::<Option<Vec<i64>>>()?
        .into_iter()
        .min()
}

/// The `metrics` object of a job's status: per operator (summed over subtasks, and per
/// subtask) records in/out, watermark and state size; per source subtask the backlog of its
/// queues; the job's checkpoints and state size.
pub fn job_metrics_json(graph: &JobGraph, snapshot: &MetricsSnapshot) -> Value {
    let mut operators = Vec::new();
    let mut sources = Vec::new();
    for (op, subtasks) in graph.operators.iter().zip(&snapshot.operators) {
        let source = matches!(
            op.kind,
            OperatorKind::Source { .. } | OperatorKind::Values { .. }
        );
        let watermark = operator_watermark(subtasks);
        operators.push(json!({
            "id": op.id,
            "source": source,
            "sink": matches!(op.kind, OperatorKind::Sink { .. }),
            "records_in": subtasks.iter().map(|s| s.records_in).sum::<u64>(),
            "records_out": subtasks.iter().map(|s| s.records_out).sum::<u64>(),
            "watermark_ms": watermark_json(watermark),
            "input_ended": watermark == Some(i64::MAX),
            "state_bytes": subtasks.iter().map(|s| s.state_bytes).sum::<u64>(),
            "subtasks": subtasks.iter().enumerate().map(|(i, s)| json!({
                "subtask": i,
                "records_in": s.records_in,
                "records_out": s.records_out,
                "watermark_ms": watermark_json(s.watermark),
                "state_bytes": s.state_bytes,
            })).collect::<Vec<_>>(),
        }));
        if source {
            for (i, s) in subtasks.iter().enumerate() {
                sources.push(json!({
                    "operator": op.id,
                    "subtask": i,
                    "queues": s.backlog,
                    "progress": s.progress.map(|(done, total)| json!({ "done": done, "total": total })),
                }));
            }
        }
    }
    json!({
        "operators": operators,
        "sources": sources,
        "checkpoints": snapshot.checkpoints,
        "state_bytes": snapshot.state_bytes(),
    })
}

/// Writes one metric's `HELP` and `TYPE` lines.
fn header(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

/// Jobs by state, per-job liveness and uptime, open result streams and rows sent; per job
/// and operator subtask records in/out and watermark, per source queue the lag, per job its
/// checkpoints and state size.
pub async fn render(State(state): State<Arc<AppState>>) -> impl IntoResponse {
    let jobs = state.jobs.list();
    let mut out = String::new();
    header(
        &mut out,
        "riffle_jobs",
        "gauge",
        "Jobs started since the service started, by state.",
    );
    for label in ["RUNNING", "FINISHED", "STOPPED", "FAILED"] {
        let count = jobs.iter().filter(|j| j.status.label() == label).count();
        let _ = writeln!(
            out,
            "riffle_jobs{{state=\"{}\"}} {count}",
            label.to_lowercase()
        );
    }
    header(
        &mut out,
        "riffle_job_running",
        "gauge",
        "Whether a job runs (1) or not (0).",
    );
    for job in &jobs {
        let running = u8::from(job.status == JobStatus::Running);
        let _ = writeln!(
            out,
            "riffle_job_running{{job=\"{}\"}} {running}",
            escape(&job.id)
        );
    }
    header(
        &mut out,
        "riffle_job_uptime_seconds",
        "gauge",
        "How long a job has run.",
    );
    let now = riffle_session::jobs::now_ms();
    for job in &jobs {
        let end = job.ended_at_ms.unwrap_or(now);
        let seconds = end.saturating_sub(job.started_at_ms) as f64 / 1000.0;
        let _ = writeln!(
            out,
            "riffle_job_uptime_seconds{{job=\"{}\"}} {seconds}",
            escape(&job.id)
        );
    }
    let figures: Vec<(String, MetricsSnapshot)> = jobs
        .iter()
        .filter_map(|j| Some((escape(&j.id), state.jobs.metrics(&j.id)?)))
        .collect();
    render_job_figures(&mut out, &figures);
    header(
        &mut out,
        "riffle_queries_pending",
        "gauge",
        "Started queries no client streams yet.",
    );
    let _ = writeln!(out, "riffle_queries_pending {}", lock(&state.queries).len());
    header(
        &mut out,
        "riffle_result_streams",
        "gauge",
        "Open query result streams.",
    );
    let _ = writeln!(
        out,
        "riffle_result_streams {}",
        state.streams_open.load(Ordering::SeqCst)
    );
    header(
        &mut out,
        "riffle_result_rows_sent_total",
        "counter",
        "Result rows sent to clients.",
    );
    let _ = writeln!(
        out,
        "riffle_result_rows_sent_total {}",
        state.rows_sent.load(Ordering::Relaxed)
    );
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], out)
}

/// A per-subtask metric: name, type, help, and its value (none: no sample).
type SubtaskMetric = (
    &'static str,
    &'static str,
    &'static str,
    fn(&SubtaskFigures) -> Option<i64>,
);

/// The per-operator, per-queue and checkpoint figures of every job (`job` already escaped).
fn render_job_figures(out: &mut String, jobs: &[(String, MetricsSnapshot)]) {
    // Every subtask of every job: (labels, figures).
    let subtasks: Vec<(String, &SubtaskFigures)> = jobs
        .iter()
        .flat_map(|(job, snapshot)| {
            snapshot
                .operators
                .iter()
                .enumerate()
                .flat_map(move |(op, subtasks)| {
                    subtasks.iter().enumerate().map(move |(i, s)| {
                        (
                            format!("job=\"{job}\",operator=\"{op}\",subtask=\"{i}\""),
                            s,
                        )
                    })
                })
        })
        .collect();
    let per_subtask: [SubtaskMetric; 4] = [
        (
            "riffle_operator_records_in_total",
            "counter",
            "Records an operator subtask took in.",
            |s| i64::try_from(s.records_in).ok(),
        ),
        (
            "riffle_operator_records_out_total",
            "counter",
            "Records an operator subtask sent downstream (a source: records read).",
            |s| i64::try_from(s.records_out).ok(),
        ),
        (
            "riffle_operator_watermark_milliseconds",
            "gauge",
            "An operator subtask's current input watermark (epoch ms; absent before the first and after the input ended).",
            |s| s.watermark.filter(|w| *w != i64::MAX),
        ),
        (
            "riffle_operator_state_bytes",
            "gauge",
            "Bytes of an operator subtask's snapshot in the job's last completed checkpoint.",
            |s| i64::try_from(s.state_bytes).ok(),
        ),
    ];
    for (name, kind, help, value) in per_subtask {
        header(out, name, kind, help);
        for (labels, figures) in &subtasks {
            if let Some(v) = value(figures) {
                let _ = writeln!(out, "{name}{{{labels}}} {v}");
            }
        }
    }
    header(
        out,
        "riffle_source_queue_lag",
        "gauge",
        "Messages of a source queue not read yet.",
    );
    for (labels, figures) in &subtasks {
        for queue in &figures.backlog {
            let _ = writeln!(
                out,
                "riffle_source_queue_lag{{{labels},queue=\"{}\"}} {}",
                escape(&queue.queue),
                queue.lag
            );
        }
    }
    header(
        out,
        "riffle_checkpoints_completed_total",
        "counter",
        "Checkpoints a job completed since it started.",
    );
    for (job, snapshot) in jobs {
        let _ = writeln!(
            out,
            "riffle_checkpoints_completed_total{{job=\"{job}\"}} {}",
            snapshot.checkpoints.completed
        );
    }
    let last: Vec<_> = jobs
        .iter()
        .filter_map(|(job, s)| Some((job, s.checkpoints.last.as_ref()?)))
        .collect();
    header(
        out,
        "riffle_checkpoint_last_duration_seconds",
        "gauge",
        "How long a job's last completed checkpoint took, from trigger to commit.",
    );
    for (job, checkpoint) in &last {
        let seconds = checkpoint.duration_ms as f64 / 1000.0;
        let _ = writeln!(
            out,
            "riffle_checkpoint_last_duration_seconds{{job=\"{job}\"}} {seconds}"
        );
    }
    header(
        out,
        "riffle_checkpoint_last_size_bytes",
        "gauge",
        "Bytes of state a job's last completed checkpoint wrote.",
    );
    for (job, checkpoint) in &last {
        let _ = writeln!(
            out,
            "riffle_checkpoint_last_size_bytes{{job=\"{job}\"}} {}",
            checkpoint.size_bytes
        );
    }
    header(
        out,
        "riffle_job_state_bytes",
        "gauge",
        "Bytes of a job's state in its last completed checkpoint.",
    );
    for (job, snapshot) in jobs {
        let _ = writeln!(
            out,
            "riffle_job_state_bytes{{job=\"{job}\"}} {}",
            snapshot.state_bytes()
        );
    }
}

/// A label value with `\`, `"` and newlines escaped.
fn escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}
