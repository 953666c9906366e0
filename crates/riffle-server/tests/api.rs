//! The REST API against a running service, through a real HTTP client: statements, a query's
//! result over server-sent events, jobs (graph, stop, resume), metrics, the OpenAPI description,
//! the token, and a restart that resumes a checkpointed job with no output lost or repeated.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use riffle_server::{ServeOptions, Server};
use riffle_store::{Message, Store, TopicConfig};
use serde_json::{json, Value};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// A service running in this process until `stop`.
struct Running {
    base: String,
    shutdown: oneshot::Sender<()>,
    task: JoinHandle<Result<(), String>>,
}

impl Running {
    async fn stop(self) {
        let _ = self.shutdown.send(());
        self.task
            .await
            .expect("service task")
            .expect("service ran cleanly");
    }
}

async fn start(dir: &Path, addr: &str, token: Option<&str>) -> Result<Running, String> {
    let addr: SocketAddr = addr.parse().expect("address");
    let server = Server::bind(ServeOptions {
        addr,
        token: token.map(str::to_string),
        data_dir: dir.to_path_buf(),
    })
    .await?;
    let port = server.local_addr()?.port();
    let (shutdown, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(server.run(async move {
        let _ = stopped.await;
    }));
    Ok(Running {
        base: format!("http://127.0.0.1:{port}"),
        shutdown,
        task,
    })
}

async fn sql(base: &str, statements: &str) -> (u16, Value) {
    let response = reqwest::Client::new()
        .post(format!("{base}/api/v1/statements"))
        .header("content-type", "application/json")
        .body(json!({ "sql": statements }).to_string())
        .send()
        .await
        .expect("POST statements");
    let status = response.status().as_u16();
    let body = response.text().await.expect("body");
    (status, serde_json::from_str(&body).expect("JSON body"))
}

async fn get(base: &str, path: &str) -> Value {
    let body = reqwest::get(format!("{base}{path}"))
        .await
        .expect("GET")
        .text()
        .await
        .expect("body");
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("{path}: {e}: {body}"))
}

/// POSTs to `path`; fails the test unless the answer has status `expected`.
async fn post(base: &str, path: &str, expected: u16) {
    let response = reqwest::Client::new()
        .post(format!("{base}{path}"))
        .send()
        .await
        .expect("POST");
    let status = response.status().as_u16();
    let body = response.text().await.unwrap_or_default();
    assert_eq!(status, expected, "POST {path}: {body}");
}

async fn job_status(base: &str, id: &str) -> String {
    let detail = get(base, &format!("/api/v1/jobs/{id}")).await;
    detail["job"]["status"]
        .as_str()
        .expect("status")
        .to_string()
}

async fn wait_for<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let start = Instant::now();
    while !check().await {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// `(event, data)` pairs of a server-sent event stream.
fn sse_events(text: &str) -> Vec<(String, Value)> {
    text.split("\n\n")
        .filter_map(|block| {
            let mut event = None;
            let mut data = None;
            for line in block.lines() {
                if let Some(e) = line.strip_prefix("event:") {
                    event = Some(e.trim().to_string());
                }
                if let Some(d) = line.strip_prefix("data:") {
                    data = serde_json::from_str(d.trim()).ok();
                }
            }
            Some((event?, data?))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn statements_queries_and_jobs() {
    let dir = tempfile::tempdir().expect("temp dir");
    let service = start(dir.path(), "127.0.0.1:0", None).await.expect("start");
    let base = service.base.clone();

    // A bounded query: its whole result arrives as events, then the end.
    let (status, body) = sql(
        &base,
        "CREATE TABLE nums (id BIGINT) WITH ('connector' = 'datagen', 'fields.id.kind' = 'sequence',
           'fields.id.start' = '1', 'fields.id.end' = '5');
         SELECT id, id * id AS sq FROM nums WHERE id > 2;",
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let results = body["results"].as_array().expect("results");
    assert_eq!(results[0]["kind"], "done");
    assert_eq!(results[1]["kind"], "query");
    assert_eq!(results[1]["columns"][1]["name"], "sq");
    let events_url = results[1]["events"].as_str().expect("events url");
    let stream = reqwest::get(format!("{base}{events_url}"))
        .await
        .expect("GET events");
    assert_eq!(
        stream.headers()["content-type"].to_str().expect("header"),
        "text/event-stream"
    );
    let events = sse_events(&stream.text().await.expect("event stream"));
    let changes: Vec<&Value> = events
        .iter()
        .filter(|(e, _)| e == "change")
        .map(|(_, d)| d)
        .collect();
    assert_eq!(
        changes,
        vec![
            &json!({"op": "+I", "values": ["3", "9"]}),
            &json!({"op": "+I", "values": ["4", "16"]}),
            &json!({"op": "+I", "values": ["5", "25"]}),
        ]
    );
    assert_eq!(events[0].0, "columns");
    assert_eq!(
        events
            .last()
            .map(|(e, d)| (e.as_str(), d["status"].clone())),
        Some(("end", json!("finished")))
    );
    // One client per query.
    let again = reqwest::get(format!("{base}{events_url}"))
        .await
        .expect("GET events again");
    assert_eq!(again.status().as_u16(), 404);

    // A failing statement names what is wrong; the ones before it took effect.
    let (status, body) = sql(&base, "SHOW TABLES; SELECT nope FROM nums;").await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"].as_str().expect("error").contains("nope"),
        "{body}"
    );
    assert_eq!(body["results"][0]["rows"], json!([["nums"]]));

    // A continuous job: listed, its graph shown, stopped.
    let (status, body) = sql(
        &base,
        "CREATE TABLE ticks (id BIGINT) WITH ('connector' = 'datagen', 'rows-per-second' = '5',
           'fields.id.kind' = 'sequence', 'fields.id.start' = '1', 'fields.id.end' = '1000000');
         CREATE TABLE out_topic (id BIGINT) WITH ('connector' = 'rocketmq', 'rocketmq.sink.topic' = 'out', 'format' = 'json');
         SET 'pipeline.name' = 'ticker';
         INSERT INTO out_topic SELECT id FROM ticks;",
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["results"][3]["job"]["id"], "ticker");
    let jobs = get(&base, "/api/v1/jobs").await;
    assert_eq!(jobs[0]["id"], "ticker");
    assert_eq!(jobs[0]["status"], "RUNNING");
    let detail = get(&base, "/api/v1/jobs/ticker").await;
    let operators = detail["graph"]["operators"].as_array().expect("operators");
    assert!(operators.len() >= 2, "{detail}");
    assert!(!detail["graph"]["edges"]
        .as_array()
        .expect("edges")
        .is_empty());
    post(&base, "/api/v1/jobs/ticker/stop", 200).await;
    wait_for("the job to stop", || async {
        job_status(&base, "ticker").await == "STOPPED"
    })
    .await;
    post(&base, "/api/v1/jobs/ticker/stop", 409).await;
    post(&base, "/api/v1/jobs/nope/stop", 409).await;

    let metrics = reqwest::get(format!("{base}/metrics"))
        .await
        .expect("GET metrics")
        .text()
        .await
        .expect("metrics");
    assert!(
        metrics.contains("riffle_jobs{state=\"stopped\"} 1"),
        "{metrics}"
    );
    assert!(
        metrics.contains("riffle_result_rows_sent_total 3"),
        "{metrics}"
    );

    // The OpenAPI description covers every route.
    let openapi = get(&base, "/api/v1/openapi.json").await;
    for path in [
        "/api/v1/statements",
        "/api/v1/jobs",
        "/api/v1/jobs/{id}",
        "/api/v1/jobs/{id}/stop",
        "/api/v1/jobs/{id}/resume",
        "/api/v1/jobs/{id}/savepoints",
        "/api/v1/queries/{id}",
        "/api/v1/queries/{id}/events",
        "/metrics",
    ] {
        assert!(openapi["paths"].get(path).is_some(), "{path} undocumented");
    }
    let console = reqwest::get(format!("{base}/"))
        .await
        .expect("GET console")
        .text()
        .await
        .expect("console");
    assert!(console.contains("Riffle console"));
    service.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_addresses_need_a_token_and_requests_without_it_are_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let refused = start(dir.path(), "0.0.0.0:0", None).await;
    assert!(
        refused
            .as_ref()
            .err()
            .is_some_and(|e| e.contains("requires a token")),
        "bound without a token"
    );
    let service = start(dir.path(), "0.0.0.0:0", Some("s3cret"))
        .await
        .expect("start with a token");
    let url = format!("{}/api/v1/jobs", service.base);
    let client = reqwest::Client::new();
    let status = |r: reqwest::Response| r.status().as_u16();
    assert_eq!(status(client.get(&url).send().await.expect("GET")), 401);
    assert_eq!(
        status(
            client
                .get(&url)
                .bearer_auth("wrong")
                .send()
                .await
                .expect("GET")
        ),
        401
    );
    let refused_post = client
        .post(format!("{}/api/v1/statements", service.base))
        .body(r#"{"sql": "SHOW TABLES;"}"#)
        .header("content-type", "application/json")
        .send()
        .await
        .expect("POST");
    assert_eq!(status(refused_post), 401);
    assert_eq!(
        status(
            client
                .get(&url)
                .bearer_auth("s3cret")
                .send()
                .await
                .expect("GET")
        ),
        200
    );
    assert_eq!(
        status(
            client
                .get(format!("{url}?token=s3cret"))
                .send()
                .await
                .expect("GET")
        ),
        200
    );
    service.stop().await;
}

/// `{"id": n}` messages for `ids` appended to queue 0 of `topic`.
fn produce(store: &Store, topic: &str, ids: std::ops::RangeInclusive<u64>) {
    let messages: Vec<Message> = ids
        .map(|id| Message::new(format!("{{\"id\":{id}}}")))
        .collect();
    store
        .append_batch(topic, 0, &messages)
        .expect("append input");
}

/// The ids in every message of `topic`.
fn ids_in(store: &Store, topic: &str) -> Vec<u64> {
    let Ok(messages) = store.read(topic, 0, 0, 100_000) else {
        return Vec::new();
    };
    messages
        .iter()
        .filter_map(|m| serde_json::from_slice::<Value>(&m.message.body).ok())
        .filter_map(|v| v["id"].as_u64())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_restart_resumes_running_jobs_from_their_checkpoints() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store: Arc<Store> = riffle_connectors::rocketmq::shared_store(dir.path()).expect("store");
    let one_queue = TopicConfig {
        queues: 1,
        ..TopicConfig::default()
    };
    store
        .create_topic("input", one_queue.clone())
        .expect("input topic");
    store
        .create_topic("output", one_queue)
        .expect("output topic");
    produce(&store, "input", 1..=100);

    let service = start(dir.path(), "127.0.0.1:0", None).await.expect("start");
    let checkpoints = dir.path().join("checkpoints");
    let (status, body) = sql(
        &service.base,
        &format!("SET 'execution.checkpointing.interval' = '200 ms';
         SET 'state.checkpoints.dir' = '{}';
         CREATE TABLE input (id BIGINT) WITH ('connector' = 'rocketmq', 'rocketmq.source.topic' = 'input',
           'rocketmq.source.group' = 'copy', 'rocketmq.source.startup.scan.mode' = 'earliest', 'format' = 'json');
         CREATE TABLE output (id BIGINT) WITH ('connector' = 'rocketmq', 'rocketmq.sink.topic' = 'output', 'format' = 'json');
         SET 'pipeline.name' = 'copy';
         INSERT INTO output SELECT id FROM input;
         SET 'pipeline.name' = 'idle';
         INSERT INTO output SELECT id FROM input WHERE id < 0;", checkpoints.display()),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    post(&service.base, "/api/v1/jobs/idle/stop", 200).await;
    wait_for("the first 100 rows", || async {
        ids_in(&store, "output").len() >= 100
    })
    .await;
    service.stop().await;

    // More input while the service is down; the restarted job picks up where it left off.
    produce(&store, "input", 101..=200);
    let service = start(dir.path(), "127.0.0.1:0", None)
        .await
        .expect("restart");
    let base = service.base.clone();
    assert_eq!(job_status(&base, "copy").await, "RUNNING");
    assert_eq!(job_status(&base, "idle").await, "STOPPED");
    let (_, tables) = sql(&base, "SHOW TABLES;").await;
    assert_eq!(tables["results"][0]["rows"], json!([["input"], ["output"]]));
    wait_for("all 200 rows", || async {
        ids_in(&store, "output").len() >= 200
    })
    .await;
    // Give a wrongly repeated output time to show up.
    tokio::time::sleep(Duration::from_millis(600)).await;
    let mut ids = ids_in(&store, "output");
    ids.sort_unstable();
    assert_eq!(ids, (1..=200).collect::<Vec<u64>>());

    // A stopped job resumes on request.
    post(&base, "/api/v1/jobs/idle/resume", 200).await;
    assert_eq!(job_status(&base, "idle").await, "RUNNING");
    service.stop().await;
}

/// POSTs `body` to `path`; returns the status and the JSON answer.
async fn post_json(base: &str, path: &str, body: Value) -> (u16, Value) {
    let response = reqwest::Client::new()
        .post(format!("{base}{path}"))
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .expect("POST");
    let status = response.status().as_u16();
    let text = response.text().await.expect("body");
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn jobs_show_per_operator_figures_and_resume_from_a_savepoint() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store: Arc<Store> = riffle_connectors::rocketmq::shared_store(dir.path()).expect("store");
    let one_queue = TopicConfig {
        queues: 1,
        ..TopicConfig::default()
    };
    for topic in ["input", "output"] {
        store.create_topic(topic, one_queue.clone()).expect("topic");
    }
    produce(&store, "input", 1..=100);
    let service = start(dir.path(), "127.0.0.1:0", None).await.expect("start");
    let base = service.base.clone();
    let (status, body) = sql(
        &base,
        &format!("SET 'execution.checkpointing.interval' = '200 ms';
         SET 'state.checkpoints.dir' = '{}';
         CREATE TABLE input (id BIGINT) WITH ('connector' = 'rocketmq', 'rocketmq.source.topic' = 'input',
           'rocketmq.source.group' = 'copy', 'rocketmq.source.startup.scan.mode' = 'earliest', 'format' = 'json');
         CREATE TABLE output (id BIGINT) WITH ('connector' = 'rocketmq', 'rocketmq.sink.topic' = 'output', 'format' = 'json');
         SET 'pipeline.name' = 'copy';
         INSERT INTO output SELECT id FROM input;
         RESET 'execution.checkpointing.interval';
         SET 'pipeline.name' = 'plain';
         INSERT INTO output SELECT id FROM input WHERE id < 0;",
            dir.path().join("checkpoints").display()),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    wait_for("the first 100 rows", || async {
        ids_in(&store, "output").len() >= 100
    })
    .await;

    // The job's figures: what its source read, what its sink wrote, the queue's backlog
    // and its checkpoints.
    wait_for("the job's figures", || async {
        let metrics = get(&base, "/api/v1/jobs/copy").await["metrics"].clone();
        let operators = metrics["operators"].as_array().cloned().unwrap_or_default();
        let sink = operators.iter().find(|o| o["sink"] == true);
        operators
            .first()
            .is_some_and(|o| o["source"] == true && o["records_out"] == 100)
            && sink.is_some_and(|s| s["records_in"] == 100)
            && metrics["sources"][0]["queues"] == json!([{ "queue": "input/0", "lag": 0 }])
            && metrics["checkpoints"]["completed"].as_u64() >= Some(1)
    })
    .await;
    let detail = get(&base, "/api/v1/jobs/copy").await;
    let last = &detail["metrics"]["checkpoints"]["last"];
    assert!(last["size_bytes"].as_u64() > Some(0), "{detail}");
    assert!(last["duration_ms"].is_u64(), "{detail}");
    assert_eq!(
        detail["metrics"]["operators"][0]["subtasks"][0]["records_out"],
        100
    );
    let metrics = reqwest::get(format!("{base}/metrics"))
        .await
        .expect("GET metrics")
        .text()
        .await
        .expect("metrics");
    for line in [
        "riffle_operator_records_out_total{job=\"copy\",operator=\"0\",subtask=\"0\"} 100",
        "riffle_source_queue_lag{job=\"copy\",operator=\"0\",subtask=\"0\",queue=\"input/0\"} 0",
        "riffle_operator_records_in_total{job=\"plain\",operator=\"1\",subtask=\"0\"} 100",
    ] {
        assert!(metrics.contains(line), "no {line} in\n{metrics}");
    }
    for name in [
        "riffle_checkpoints_completed_total{job=\"copy\"}",
        "riffle_checkpoint_last_duration_seconds{job=\"copy\"}",
        "riffle_checkpoint_last_size_bytes{job=\"copy\"}",
        "riffle_job_state_bytes{job=\"copy\"}",
        "riffle_operator_state_bytes{job=\"copy\",operator=\"0\",subtask=\"0\"}",
    ] {
        assert!(metrics.contains(name), "no {name} in\n{metrics}");
    }

    // Savepoints: only of checkpointed jobs the service knows.
    let (status, body) = post_json(&base, "/api/v1/jobs/plain/savepoints", json!({})).await;
    assert_eq!(status, 409, "{body}");
    assert!(
        body["error"]
            .as_str()
            .is_some_and(|e| e.contains("does not checkpoint")),
        "{body}"
    );
    let (status, _) = post_json(&base, "/api/v1/jobs/nope/savepoints", json!({})).await;
    assert_eq!(status, 404);
    let target = dir.path().join("my-savepoints");
    let (status, body) = post_json(
        &base,
        "/api/v1/jobs/copy/savepoints",
        json!({ "target_directory": target }),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let savepoint = std::path::PathBuf::from(body["savepoint"].as_str().expect("savepoint path"));
    assert!(savepoint.starts_with(&target), "{body}");
    assert!(savepoint.join("_metadata").is_file(), "{body}");

    // After the savepoint the job copies 50 more rows; resumed from the savepoint, it reads
    // them again (its position in the savepoint is before them).
    produce(&store, "input", 101..=150);
    wait_for("150 rows", || async {
        ids_in(&store, "output").len() >= 150
    })
    .await;
    post(&base, "/api/v1/jobs/copy/stop", 200).await;
    wait_for("the job to stop", || async {
        job_status(&base, "copy").await == "STOPPED"
    })
    .await;
    let (status, body) = post_json(
        &base,
        "/api/v1/jobs/copy/resume",
        json!({ "savepoint": dir.path().join("no-such-savepoint") }),
    )
    .await;
    assert_eq!(status, 409, "{body}");
    let (status, body) = post_json(
        &base,
        "/api/v1/jobs/copy/resume",
        json!({ "savepoint": savepoint }),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    wait_for("the rows after the savepoint again", || async {
        ids_in(&store, "output").len() >= 200
    })
    .await;
    tokio::time::sleep(Duration::from_millis(600)).await;
    let mut ids = ids_in(&store, "output");
    ids.sort_unstable();
    let mut expected: Vec<u64> = (1..=150).chain(101..=150).collect();
    expected.sort_unstable();
    assert_eq!(ids, expected);

    // `STOP JOB ... WITH SAVEPOINT`, as in Flink's SQL client: into 'state.savepoints.dir'.
    let (status, body) = sql(&base, "STOP JOB 'copy' WITH SAVEPOINT;").await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"]
            .as_str()
            .is_some_and(|e| e.contains("state.savepoints.dir")),
        "{body}"
    );
    let stop_dir = dir.path().join("stop-savepoints");
    let (status, body) = sql(
        &base,
        &format!(
            "SET 'state.savepoints.dir' = '{}'; STOP JOB 'copy' WITH SAVEPOINT;",
            stop_dir.display()
        ),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["results"][1]["header"], json!(["savepoint path"]));
    let path = body["results"][1]["rows"][0][0].as_str().expect("a path");
    assert!(
        Path::new(path).starts_with(&stop_dir) && Path::new(path).join("_metadata").is_file(),
        "{body}"
    );
    wait_for("the job to stop", || async {
        job_status(&base, "copy").await == "STOPPED"
    })
    .await;
    service.stop().await;
    // Stopped by a statement, it stays stopped across a restart.
    let service = start(dir.path(), "127.0.0.1:0", None)
        .await
        .expect("restart");
    assert_eq!(job_status(&service.base, "copy").await, "STOPPED");
    service.stop().await;
}
