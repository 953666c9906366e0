//! `GET /metrics`: the service's figures in Prometheus' text format.

use std::fmt::Write;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use riffle_session::JobStatus;

use crate::state::{lock, AppState};

/// Jobs by state, per-job liveness and uptime, open result streams and rows sent.
pub async fn render(State(state): State<Arc<AppState>>) -> impl IntoResponse {
    let jobs = state.jobs.list();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# HELP riffle_jobs Jobs started since the service started, by state."
    );
    let _ = writeln!(out, "# TYPE riffle_jobs gauge");
    for label in ["RUNNING", "FINISHED", "STOPPED", "FAILED"] {
        let count = jobs.iter().filter(|j| j.status.label() == label).count();
        let _ = writeln!(
            out,
            "riffle_jobs{{state=\"{}\"}} {count}",
            label.to_lowercase()
        );
    }
    let _ = writeln!(
        out,
        "# HELP riffle_job_running Whether a job runs (1) or not (0)."
    );
    let _ = writeln!(out, "# TYPE riffle_job_running gauge");
    for job in &jobs {
        let running = u8::from(job.status == JobStatus::Running);
        let _ = writeln!(
            out,
            "riffle_job_running{{job=\"{}\"}} {running}",
            escape(&job.id)
        );
    }
    let _ = writeln!(
        out,
        "# HELP riffle_job_uptime_seconds How long a job has run."
    );
    let _ = writeln!(out, "# TYPE riffle_job_uptime_seconds gauge");
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
    let _ = writeln!(
        out,
        "# HELP riffle_queries_pending Started queries no client streams yet."
    );
    let _ = writeln!(out, "# TYPE riffle_queries_pending gauge");
    let _ = writeln!(out, "riffle_queries_pending {}", lock(&state.queries).len());
    let _ = writeln!(
        out,
        "# HELP riffle_result_streams Open query result streams."
    );
    let _ = writeln!(out, "# TYPE riffle_result_streams gauge");
    let _ = writeln!(
        out,
        "riffle_result_streams {}",
        state.streams_open.load(Ordering::SeqCst)
    );
    let _ = writeln!(
        out,
        "# HELP riffle_result_rows_sent_total Result rows sent to clients."
    );
    let _ = writeln!(out, "# TYPE riffle_result_rows_sent_total counter");
    let _ = writeln!(
        out,
        "riffle_result_rows_sent_total {}",
        state.rows_sent.load(Ordering::Relaxed)
    );
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], out)
}

/// A label value with `\`, `"` and newlines escaped.
fn escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}
