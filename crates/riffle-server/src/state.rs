//! The service's state: its SQL session, the persisted job records, and the queries whose
//! results wait for a client.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use riffle_session::{JobInfo, JobRegistry, JobStatus, QueryHandle, Session, SessionError};
use tokio::runtime::Handle;

use crate::persist::{Desired, JobRecord, StateLog};

/// Everything the handlers share.
pub struct AppState {
    /// The service's session (one catalog for every client).
    pub session: Mutex<Session>,
    /// Jobs running or ended since the start.
    pub jobs: JobRegistry,
    /// Every job ever submitted, as persisted.
    pub records: Mutex<BTreeMap<String, JobRecord>>,
    /// Started queries, until a client takes their result stream.
    pub queries: Mutex<BTreeMap<String, QueryHandle>>,
    /// The token requests must carry, if any.
    pub token: Option<String>,
    /// Result rows sent to clients since the start (a metric).
    pub rows_sent: AtomicU64,
    /// Result streams open now (a metric).
    pub streams_open: AtomicU64,
    /// The store's directory; savepoints go to its `savepoints` directory unless a request
    /// names another.
    pub data_dir: PathBuf,
    log: StateLog,
    next_query: AtomicU64,
}

/// Locks a mutex whose data stays consistent even if a holder panicked (every update is a
/// single insert or assignment).
pub fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

impl AppState {
    /// Opens the store in `data_dir`, restores the catalog and resumes the jobs that were
    /// running.
    pub fn restore(data_dir: &Path, token: Option<String>) -> Result<Arc<AppState>, String> {
        let store = riffle_connectors::rocketmq::shared_store(data_dir).map_err(|e| e.message)?;
        let log = StateLog::open(store)?;
        let restored = log.restore()?;
        let jobs = JobRegistry::new();
        let mut session =
            Session::new(Handle::current(), jobs.clone()).with_store_dir(data_dir.to_path_buf());
        session.set_catalog(restored.catalog);
        let state = Arc::new(AppState {
            session: Mutex::new(session),
            jobs,
            records: Mutex::new(BTreeMap::new()),
            queries: Mutex::new(BTreeMap::new()),
            token,
            rows_sent: AtomicU64::new(0),
            streams_open: AtomicU64::new(0),
            data_dir: data_dir.to_path_buf(),
            log,
            next_query: AtomicU64::new(1),
        });
        for record in restored.jobs.into_values() {
            let resume = record.desired == Desired::Running;
            lock(&state.records).insert(record.id.clone(), record.clone());
            if resume {
                match state.start_job(&record.id, &record.statement, &record.script, None) {
                    Ok(_) => eprintln!("riffle serve: resumed job '{}'", record.id),
                    Err(e) => eprintln!(
                        "riffle serve: cannot resume job '{}': {}",
                        record.id, e.message
                    ),
                }
            }
        }
        Ok(state)
    }

    /// Executes one statement in the service's session, persisting what it changed.
    pub fn execute(
        self: &Arc<Self>,
        statement: &str,
    ) -> Result<riffle_session::Outcome, SessionError> {
        let mut session = lock(&self.session);
        let before = session.catalog().clone();
        let outcome = session.execute_with(statement, Some(self.on_job_end()))?;
        if *session.catalog() != before {
            self.log
                .save_catalog(session.catalog())
                .map_err(|e| SessionError {
                    message: format!("the statement took effect but was not persisted: {e}"),
                })?;
        }
        drop(session);
        if let riffle_session::Outcome::Job(info) = &outcome {
            self.record(info, Desired::Running)?;
        }
        // A `STOP JOB` statement stops a job as the stop route does: it stays stopped.
        let stopped: Vec<String> = lock(&self.records)
            .values()
            .filter(|r| r.desired == Desired::Running && self.jobs.stop_requested(&r.id))
            .map(|r| r.id.clone())
            .collect();
        for id in stopped {
            self.persist_stopped(&id).map_err(|e| SessionError {
                message: format!("job '{id}' is stopping but that was not persisted: {e}"),
            })?;
        }
        Ok(outcome)
    }

    /// Starts (or resumes) job `id` from its script — from `savepoint` when given, else from
    /// its latest checkpoint — and records it as running.
    pub fn start_job(
        self: &Arc<Self>,
        id: &str,
        statement: &str,
        script: &str,
        savepoint: Option<PathBuf>,
    ) -> Result<JobInfo, SessionError> {
        let info = lock(&self.session).submit_script(
            Some(id),
            statement,
            script,
            Some(self.on_job_end()),
            savepoint,
        )?;
        self.record(&info, Desired::Running)?;
        Ok(info)
    }

    /// Stops job `id` and records that it should stay stopped.
    pub fn stop_job(&self, id: &str) -> Result<(), String> {
        self.jobs.stop(id)?;
        self.persist_stopped(id)
    }

    /// Records that job `id` should stay stopped.
    fn persist_stopped(&self, id: &str) -> Result<(), String> {
        let record = lock(&self.records).get(id).cloned();
        if let Some(mut record) = record {
            record.desired = Desired::Stopped;
            self.log.save_job(&record)?;
            lock(&self.records).insert(id.to_string(), record);
        }
        Ok(())
    }

    /// Keeps a started query until a client asks for its results; returns its id.
    pub fn add_query(&self, query: QueryHandle) -> String {
        let id = format!("q{}", self.next_query.fetch_add(1, Ordering::SeqCst));
        lock(&self.queries).insert(id.clone(), query);
        id
    }

    fn record(&self, info: &JobInfo, desired: Desired) -> Result<(), SessionError> {
        let record = JobRecord {
            id: info.id.clone(),
            statement: info.statement.clone(),
            script: info.script.clone(),
            desired,
        };
        self.log.save_job(&record).map_err(|e| SessionError {
            message: format!("job '{}' started but was not persisted: {e}", info.id),
        })?;
        lock(&self.records).insert(info.id.clone(), record);
        Ok(())
    }

    /// A job that ends by itself (finished or failed) is never restarted; one stopped by a
    /// shutdown keeps its record and resumes at the next start.
    fn on_job_end(self: &Arc<Self>) -> riffle_session::jobs::OnJobEnd {
        let state = Arc::downgrade(self);
        Box::new(move |info: &JobInfo| {
            let Some(state) = state.upgrade() else { return };
            if matches!(info.status, JobStatus::Finished | JobStatus::Failed(_)) {
                let record = lock(&state.records).get(&info.id).cloned();
                if let Some(mut record) = record {
                    record.desired = Desired::Ended;
                    if let Err(e) = state.log.save_job(&record) {
                        eprintln!("riffle serve: cannot persist the end of '{}': {e}", info.id);
                    }
                    lock(&state.records).insert(info.id.clone(), record);
                }
            }
        })
    }

    /// Cancels queries, stops jobs and waits (up to `timeout`) for them to drain.
    pub async fn shutdown(&self, timeout: Duration) {
        for query in lock(&self.queries).values() {
            query.cancel();
        }
        self.jobs.stop_all();
        let start = Instant::now();
        while start.elapsed() < timeout
            && self
                .jobs
                .list()
                .iter()
                .any(|j| j.status == JobStatus::Running)
        {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}
