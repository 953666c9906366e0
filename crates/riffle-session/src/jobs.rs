//! Background jobs: every `INSERT` (or statement set) a session submits runs on the session's
//! tokio runtime until its bounded inputs end, it fails, or it is stopped.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use riffle_plan::JobGraph;
use riffle_runtime::checkpoint::CheckpointConfig;
use riffle_runtime::metrics::JobMetrics;
pub use riffle_runtime::metrics::{MetricsSnapshot, SubtaskFigures};
use riffle_runtime::{PrintTarget, RunOptions, StopHandle};
use serde::{Deserialize, Serialize};
use tokio::runtime::Handle;

/// Where a job is in its life.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", content = "error", rename_all = "snake_case")]
pub enum JobStatus {
    /// Running (or draining after a stop request).
    Running,
    /// Its bounded inputs ended and every sink finished.
    Finished,
    /// Stopped on request.
    Stopped,
    /// Failed, with the runtime's message.
    Failed(String),
}

impl JobStatus {
    /// `RUNNING`, `FINISHED`, `STOPPED`, `FAILED` (as Flink's `SHOW JOBS` spells states).
    pub fn label(&self) -> &'static str {
        match self {
            JobStatus::Running => "RUNNING",
            JobStatus::Finished => "FINISHED",
            JobStatus::Stopped => "STOPPED",
            JobStatus::Failed(_) => "FAILED",
        }
    }
}

/// What is known about one job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobInfo {
    /// The job's id (names its checkpoints).
    pub id: String,
    /// The statement that submitted it.
    pub statement: String,
    /// The whole script it was planned from (the catalog's prelude and the statement): what
    /// re-plans it on a resume.
    pub script: String,
    /// Current status.
    pub status: JobStatus,
    /// Start time, milliseconds since the Unix epoch.
    pub started_at_ms: u64,
    /// End time, once it ended.
    pub ended_at_ms: Option<u64>,
}

/// Called once with a job's final status (the server persists it).
pub type OnJobEnd = Box<dyn FnOnce(&JobInfo) + Send>;

struct Job {
    info: JobInfo,
    stop: StopHandle,
    graph: Arc<JobGraph>,
    metrics: Arc<JobMetrics>,
}

/// The jobs of a session (or of a server), shared between the threads that look at them.
#[derive(Clone, Default)]
pub struct JobRegistry {
    jobs: Arc<Mutex<BTreeMap<String, Job>>>,
}

impl JobRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<String, Job>> {
        // A panic while holding the lock cannot leave a job half-updated (every update is one
        // assignment), so a poisoned lock is still usable.
        self.jobs
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Starts `graph` (planned from `script`) as job `id` on `runtime`, from `from_savepoint`
    /// when given (else from the job's latest checkpoint, if any); fails when a job of that id
    /// is running.
    pub fn submit(
        &self,
        runtime: &Handle,
        id: String,
        (statement, script): (String, String),
        graph: JobGraph,
        on_end: Option<OnJobEnd>,
        from_savepoint: Option<PathBuf>,
    ) -> Result<JobInfo, String> {
        if let Some(dir) = &from_savepoint {
            // A bad savepoint is the request's error, not a job that fails later.
            riffle_runtime::checkpoint::storage::read_checkpoint(dir).map_err(|e| e.message)?;
        }
        let stop = StopHandle::default();
        let info = JobInfo {
            id: id.clone(),
            statement,
            script,
            status: JobStatus::Running,
            started_at_ms: now_ms(),
            ended_at_ms: None,
        };
        let metrics = JobMetrics::new(&graph);
        let graph = Arc::new(graph);
        {
            let mut jobs = self.lock();
            if jobs
                .get(&id)
                .is_some_and(|j| j.info.status == JobStatus::Running)
            {
                return Err(format!("job '{id}' is already running"));
            }
            jobs.insert(
                id.clone(),
                Job {
                    info: info.clone(),
                    stop: stop.clone(),
                    graph: graph.clone(),
                    metrics: metrics.clone(),
                },
            );
        }
        let registry = self.clone();
        let options = RunOptions {
            print_target: PrintTarget::Stdout,
            stop: stop.clone(),
            job_id: Some(id.clone()),
            from_savepoint,
        };
        runtime.spawn(async move {
            let result = riffle_runtime::run_with_metrics(&graph, options, metrics).await;
            let status = match result {
                Err(e) => JobStatus::Failed(e.message),
                Ok(()) if stop.is_stopped() => JobStatus::Stopped,
                Ok(()) => JobStatus::Finished,
            };
            let ended = registry.finish(&id, status);
            if let (Some(info), Some(on_end)) = (ended, on_end) {
                on_end(&info);
            }
        });
        Ok(info)
    }

    /// Records the end of job `id`.
    fn finish(&self, id: &str, status: JobStatus) -> Option<JobInfo> {
        let mut jobs = self.lock();
        let job = jobs.get_mut(id)?;
        job.info.status = status;
        job.info.ended_at_ms = Some(now_ms());
        Some(job.info.clone())
    }

    /// Every job, by id.
    pub fn list(&self) -> Vec<JobInfo> {
        self.lock().values().map(|j| j.info.clone()).collect()
    }

    /// Job `id`.
    pub fn get(&self, id: &str) -> Option<JobInfo> {
        self.lock().get(id).map(|j| j.info.clone())
    }

    /// The job graph job `id` runs.
    pub fn graph(&self, id: &str) -> Option<Arc<JobGraph>> {
        self.lock().get(id).map(|j| j.graph.clone())
    }

    /// The live figures of job `id` (of its last run, once it ended).
    pub fn metrics(&self, id: &str) -> Option<MetricsSnapshot> {
        self.lock().get(id).map(|j| j.metrics.snapshot())
    }

    /// Takes a savepoint of job `id` into `target` and returns its directory: waits (up to
    /// `timeout`) for a checkpoint that completes after this call when the job runs, then
    /// copies the job's newest completed checkpoint.
    pub fn savepoint(&self, id: &str, target: &Path, timeout: Duration) -> Result<PathBuf, String> {
        let (graph, metrics, running) = {
            let jobs = self.lock();
            let job = jobs.get(id).ok_or_else(|| format!("no job '{id}'"))?;
            let running = job.info.status == JobStatus::Running;
            (job.graph.clone(), job.metrics.clone(), running)
        };
        let config = CheckpointConfig::from_graph(&graph, Some(id))
            .map_err(|e| e.message)?
            .ok_or_else(|| {
                format!(
                    "job '{id}' does not checkpoint, so it cannot take a savepoint: set 'execution.checkpointing.interval' before submitting it"
                )
            })?;
        if running {
            let before = metrics.snapshot().checkpoints.completed;
            let start = Instant::now();
            while metrics.snapshot().checkpoints.completed == before {
                if start.elapsed() > timeout {
                    return Err(format!(
                        "job '{id}' completed no checkpoint within {} s",
                        timeout.as_secs()
                    ));
                }
                if self.get(id).is_some_and(|j| j.status != JobStatus::Running) {
                    break;
                }
                std::thread::sleep(SAVEPOINT_POLL);
            }
        }
        riffle_runtime::checkpoint::savepoint::create(&config.root, &config.job_id, target)
            .map_err(|e| e.message)
    }

    /// Asks job `id` to stop (its sources stop reading and the pipeline drains).
    pub fn stop(&self, id: &str) -> Result<(), String> {
        let jobs = self.lock();
        let job = jobs.get(id).ok_or_else(|| format!("no job '{id}'"))?;
        if job.info.status != JobStatus::Running {
            return Err(format!(
                "job '{id}' is not running ({})",
                job.info.status.label()
            ));
        }
        job.stop.stop();
        Ok(())
    }

    /// True when job `id` was asked to stop (it may still be draining, or have ended since).
    pub fn stop_requested(&self, id: &str) -> bool {
        self.lock().get(id).is_some_and(|j| j.stop.is_stopped())
    }

    /// Asks every running job to stop.
    pub fn stop_all(&self) {
        for job in self.lock().values() {
            job.stop.stop();
        }
    }
}

/// How often a savepoint looks for its checkpoint.
const SAVEPOINT_POLL: Duration = Duration::from_millis(20);

/// The id of a job: `given`, else `pipeline.name` (characters other than letters, digits, `-`,
/// `_` and `.` become `-`), else a hash of the script text. A job with checkpointing resumes
/// from the latest checkpoint of its id.
pub fn job_id(given: Option<&str>, graph: &JobGraph, script: &str) -> String {
    if let Some(id) = given {
        return id.to_string();
    }
    match graph.config.get("pipeline.name") {
        Some(name) if !name.trim().is_empty() => name
            .trim()
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                    c
                } else {
                    '-'
                }
            })
            .collect::<String>()
            .trim_start_matches('.')
            .to_string(),
        _ => riffle_runtime::checkpoint::job_id_for(script),
    }
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}
