//! The REST API's routes and handlers (described in `openapi.json`).

use std::convert::Infallible;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{header, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use futures_util::stream::Stream;
use riffle_session::{JobInfo, Outcome, QueryColumn, QueryHandle, ResultRow, StatementSplitter};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::persist::Desired;
use crate::state::{lock, AppState};

/// Every route, behind the token check.
pub fn router(state: Arc<AppState>) -> Router {
    Router::new()
        .route("/", get(console))
        .route("/api/v1/openapi.json", get(openapi))
        .route("/api/v1/statements", post(submit))
        .route("/api/v1/jobs", get(list_jobs))
        .route("/api/v1/jobs/{id}", get(job))
        .route("/api/v1/jobs/{id}/stop", post(stop_job))
        .route("/api/v1/jobs/{id}/resume", post(resume_job))
        .route("/api/v1/jobs/{id}/savepoints", post(savepoint_job))
        .route("/api/v1/queries/{id}", axum::routing::delete(cancel_query))
        .route("/api/v1/queries/{id}/events", get(query_events))
        .route("/metrics", get(crate::metrics::render))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            crate::auth::require_token,
        ))
        .with_state(state)
}

/// An API error: a status and a message, as `{"error": "..."}`.
pub struct ApiError {
    status: StatusCode,
    body: serde_json::Value,
}

impl ApiError {
    fn new(status: StatusCode, message: impl Into<String>) -> Self {
        Self {
            status,
            body: json!({ "error": message.into() }),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, Json(self.body)).into_response()
    }
}

async fn console() -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        include_str!("../console/index.html"),
    )
}

async fn openapi() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "application/json")], crate::OPENAPI)
}

/// `POST /api/v1/statements` body.
#[derive(Deserialize)]
struct SubmitRequest {
    /// One or more statements, each ending with `;` (the last may omit it).
    sql: String,
}

/// The result of one statement.
#[derive(Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum StatementResult {
    Done {
        statement: String,
        message: String,
    },
    Rows {
        statement: String,
        header: Vec<String>,
        rows: Vec<Vec<String>>,
    },
    Explain {
        statement: String,
        plan: String,
    },
    Job {
        statement: String,
        job: JobInfo,
    },
    Query {
        statement: String,
        query_id: String,
        columns: Vec<QueryColumn>,
        events: String,
    },
}

/// Executes the statements in order; the first failure stops the rest (what ran before it
/// took effect and is listed in `results`).
async fn submit(
    State(state): State<Arc<AppState>>,
    Json(request): Json<SubmitRequest>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let mut splitter = StatementSplitter::new();
    let mut statements = splitter.push(&request.sql);
    statements.extend(splitter.finish());
    if statements.is_empty() {
        return Err(ApiError::new(StatusCode::BAD_REQUEST, "no statement given"));
    }
    let mut results = Vec::new();
    for statement in statements {
        // Planning is CPU work: keep it off the threads that serve requests.
        let worker = state.clone();
        let text = statement.clone();
        let outcome = tokio::task::spawn_blocking(move || worker.execute(&text))
            .await
            .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
        let outcome = match outcome {
            Ok(outcome) => outcome,
            Err(e) => {
                return Err(ApiError {
                    status: StatusCode::BAD_REQUEST,
                    body: json!({
                        "error": e.message,
                        "statement": statement,
                        "results": results,
                    }),
                })
            }
        };
        results.push(match outcome {
            Outcome::Done(message) => StatementResult::Done { statement, message },
            Outcome::Rows { header, rows } => StatementResult::Rows {
                statement,
                header,
                rows,
            },
            Outcome::Explain(plan) => StatementResult::Explain { statement, plan },
            Outcome::Job(job) => StatementResult::Job { statement, job },
            Outcome::Query(query) => {
                let columns = query.columns.clone();
                let query_id = state.add_query(query);
                StatementResult::Query {
                    statement,
                    events: format!("/api/v1/queries/{query_id}/events"),
                    query_id,
                    columns,
                }
            }
        });
    }
    Ok(Json(json!({ "results": results })))
}

/// A job as the API shows it.
#[derive(Serialize)]
struct JobView {
    id: String,
    statement: String,
    /// `RUNNING`, `FINISHED`, `STOPPED`, `FAILED`.
    status: String,
    error: Option<String>,
    started_at_ms: Option<u64>,
    ended_at_ms: Option<u64>,
    uptime_ms: Option<u64>,
}

fn job_view(info: &JobInfo) -> JobView {
    let end = info
        .ended_at_ms
        .unwrap_or_else(riffle_session::jobs::now_ms);
    JobView {
        id: info.id.clone(),
        statement: info.statement.clone(),
        status: info.status.label().to_string(),
        error: match &info.status {
            riffle_session::JobStatus::Failed(e) => Some(e.clone()),
            _ => None,
        },
        started_at_ms: Some(info.started_at_ms),
        ended_at_ms: info.ended_at_ms,
        uptime_ms: Some(end.saturating_sub(info.started_at_ms)),
    }
}

/// Jobs of this run, and persisted jobs not started in this run (stopped or ended before it).
fn all_jobs(state: &AppState) -> Vec<JobView> {
    let mut views: Vec<JobView> = state.jobs.list().iter().map(job_view).collect();
    for record in lock(&state.records).values() {
        if views.iter().any(|v| v.id == record.id) {
            continue;
        }
        views.push(JobView {
            id: record.id.clone(),
            statement: record.statement.clone(),
            status: match record.desired {
                Desired::Running | Desired::Stopped => "STOPPED",
                Desired::Ended => "FINISHED",
            }
            .to_string(),
            error: None,
            started_at_ms: None,
            ended_at_ms: None,
            uptime_ms: None,
        });
    }
    views.sort_by(|a, b| a.id.cmp(&b.id));
    views
}

async fn list_jobs(State(state): State<Arc<AppState>>) -> Json<Vec<JobView>> {
    Json(all_jobs(&state))
}

async fn job(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let view = all_jobs(&state)
        .into_iter()
        .find(|j| j.id == id)
        .ok_or_else(|| ApiError::new(StatusCode::NOT_FOUND, format!("no job '{id}'")))?;
    let graph = state.jobs.graph(&id).map(|g| {
        json!({
            "operators": g.operators.iter().map(|op| json!({
                "id": op.id,
                "name": riffle_plan::explain::describe(op),
                "parallelism": op.parallelism,
                "changelog": op.changelog.notation(),
            })).collect::<Vec<_>>(),
            "edges": g.edges.iter().map(|e| json!({
                "from": e.from,
                "to": e.to,
                "partitioning": format!("{:?}", e.partitioning).to_lowercase(),
            })).collect::<Vec<_>>(),
        })
    });
    let metrics = state
        .jobs
        .graph(&id)
        .zip(state.jobs.metrics(&id))
        .map(|(graph, snapshot)| crate::metrics::job_metrics_json(&graph, &snapshot));
    Ok(Json(
        json!({ "job": view, "graph": graph, "metrics": metrics }),
    ))
}

async fn stop_job(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
) -> Result<Json<serde_json::Value>, ApiError> {
    state
        .stop_job(&id)
        .map_err(|e| ApiError::new(StatusCode::CONFLICT, e))?;
    Ok(Json(json!({ "stopping": id })))
}

/// An optional JSON body: `T`'s defaults when the request has none.
fn optional_body<T: serde::de::DeserializeOwned + Default>(body: &Bytes) -> Result<T, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(T::default());
    }
    serde_json::from_slice(body).map_err(|e| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            format!("invalid request body: {e}"),
        )
    })
}

/// `POST /api/v1/jobs/{id}/resume` body (optional).
#[derive(Deserialize, Default)]
struct ResumeRequest {
    /// Start from this savepoint (or checkpoint) directory instead of the latest checkpoint.
    savepoint: Option<PathBuf>,
}

/// Starts a stopped (or ended) job again under its id: a checkpointed job resumes from its
/// latest checkpoint, or from the savepoint the body names.
async fn resume_job(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Json<JobView>, ApiError> {
    let request: ResumeRequest = optional_body(&body)?;
    let record = lock(&state.records)
        .get(&id)
        .cloned()
        .ok_or_else(|| ApiError::new(StatusCode::NOT_FOUND, format!("no job '{id}'")))?;
    let worker = state.clone();
    let info = tokio::task::spawn_blocking(move || {
        worker.start_job(
            &record.id,
            &record.statement,
            &record.script,
            request.savepoint,
        )
    })
    .await
    .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?
    .map_err(|e| ApiError::new(StatusCode::CONFLICT, e.message))?;
    Ok(Json(job_view(&info)))
}

/// `POST /api/v1/jobs/{id}/savepoints` body (optional).
#[derive(Deserialize, Default)]
struct SavepointRequest {
    /// Where the savepoint goes (default: `savepoints` in the service's data directory).
    target_directory: Option<PathBuf>,
}

/// How long a savepoint waits for the running job's next checkpoint.
const SAVEPOINT_TIMEOUT: Duration = Duration::from_secs(60);

/// Takes a savepoint of a checkpointed job: once a checkpoint completes after the request
/// (right away for a job that no longer runs), its newest completed checkpoint is copied to
/// `<target>/savepoint-<job>-<checkpoint>`.
async fn savepoint_job(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Json<serde_json::Value>, ApiError> {
    let request: SavepointRequest = optional_body(&body)?;
    if state.jobs.get(&id).is_none() {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            format!("no job '{id}' started since the service started"),
        ));
    }
    let target = request
        .target_directory
        .unwrap_or_else(|| state.data_dir.join("savepoints"));
    let worker = state.clone();
    let job = id.clone();
    let path = tokio::task::spawn_blocking(move || {
        worker.jobs.savepoint(&job, &target, SAVEPOINT_TIMEOUT)
    })
    .await
    .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?
    .map_err(|e| ApiError::new(StatusCode::CONFLICT, e))?;
    Ok(Json(json!({ "job": id, "savepoint": path })))
}

async fn cancel_query(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    let query = lock(&state.queries)
        .remove(&id)
        .ok_or_else(|| ApiError::new(StatusCode::NOT_FOUND, format!("no pending query '{id}'")))?;
    query.cancel();
    Ok(StatusCode::NO_CONTENT)
}

/// The query's result as server-sent events: `columns` once, a `change` per row
/// (`{"op": "+I", "values": [..]}`), then `end` (`{"status": "finished"}` or
/// `{"status": "failed", "error": ..}`). One client per query; the query is cancelled when the
/// client goes away.
async fn query_events(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    let query = lock(&state.queries).remove(&id).ok_or_else(|| {
        ApiError::new(
            StatusCode::NOT_FOUND,
            format!("no query '{id}' waiting for a client"),
        )
    })?;
    state.streams_open.fetch_add(1, Ordering::SeqCst);
    let stream = futures_util::stream::unfold(
        Streaming::Columns(Box::new(ResultStream::new(query, state))),
        next_event,
    );
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()))
}

/// A query being streamed; dropping it (the client went away) cancels the query.
struct ResultStream {
    query: QueryHandle,
    state: Arc<AppState>,
}

impl ResultStream {
    fn new(query: QueryHandle, state: Arc<AppState>) -> Self {
        Self { query, state }
    }
}

impl Drop for ResultStream {
    fn drop(&mut self) {
        self.query.cancel();
        self.state.streams_open.fetch_sub(1, Ordering::SeqCst);
    }
}

enum Streaming {
    Columns(Box<ResultStream>),
    Rows(Box<ResultStream>),
    Ended,
}

async fn next_event(phase: Streaming) -> Option<(Result<Event, Infallible>, Streaming)> {
    match phase {
        Streaming::Columns(stream) => {
            let event = json_event("columns", &stream.query.columns);
            Some((Ok(event), Streaming::Rows(stream)))
        }
        Streaming::Rows(mut stream) => match stream.query.rows.recv().await {
            Some(row) => {
                stream.state.rows_sent.fetch_add(1, Ordering::Relaxed);
                Some((Ok(change_event(&row)), Streaming::Rows(stream)))
            }
            None => {
                let end = match (&mut stream.query.done).await {
                    Ok(Ok(())) => json!({ "status": "finished" }),
                    Ok(Err(e)) => json!({ "status": "failed", "error": e.message }),
                    Err(e) => json!({ "status": "failed", "error": e.to_string() }),
                };
                Some((Ok(json_event("end", &end)), Streaming::Ended))
            }
        },
        Streaming::Ended => None,
    }
}

fn change_event(row: &ResultRow) -> Event {
    json_event(
        "change",
        &json!({ "op": row.kind.short(), "values": row.values }),
    )
}

fn json_event<T: Serialize>(name: &str, data: &T) -> Event {
    let data = serde_json::to_string(data).unwrap_or_else(|e| {
        json!({ "error": format!("cannot encode the event: {e}") }).to_string()
    });
    Event::default().event(name).data(data)
}
