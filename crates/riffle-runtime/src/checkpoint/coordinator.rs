//! The checkpoint coordinator: triggers checkpoints, collects the subtasks' snapshots, writes
//! completed checkpoints and commits the sinks' transactions.
//!
//! One checkpoint is in flight at a time; the next is triggered `interval` after the previous
//! one completed. When every source has exhausted its (bounded) input, the coordinator takes a
//! final checkpoint — after the sources' last watermark, so every window has fired — commits
//! it, and only then lets the sources end; a bounded job thus publishes its last results
//! exactly once too.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc as std_mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use riffle_connectors::Committer;

use super::storage::{CheckpointStore, Metadata, OperatorMeta};
use super::{CheckpointConfig, TaskId};
use crate::metrics::JobMetrics;
use crate::task::RuntimeError;
use crate::StopHandle;

/// What the coordinator tells a source subtask.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceCommand {
    /// Snapshot the position and send barrier `n` downstream.
    Barrier(u64),
    /// Checkpoint `n` is complete.
    Complete(u64),
    /// The final checkpoint is complete: end the input.
    Finish,
}

/// What subtasks tell the coordinator.
#[derive(Debug)]
pub enum Report {
    /// A subtask took its snapshot for checkpoint `checkpoint` (empty: no state).
    Ack {
        /// Checkpoint number.
        checkpoint: u64,
        /// The subtask.
        task: TaskId,
        /// Its state.
        state: Vec<u8>,
        /// Whether the state is a keyed snapshot (`crate::keyed_snapshot`).
        keyed: bool,
    },
    /// A source subtask has read all its input and sent its last watermark.
    Exhausted(TaskId),
}

/// A sink subtask's committer.
pub type SinkCommitter = (TaskId, Arc<dyn Committer>);

/// Called with a checkpoint's number and directory once it is written, before any sink
/// transaction of it is committed (a scaled-out job's unit copies it to a state topic, so that
/// another process can restore it; an error fails the checkpoint, which then commits nothing).
pub type CheckpointHook =
    Arc<dyn Fn(u64, &std::path::Path) -> Result<(), RuntimeError> + Send + Sync>;

/// Runs the checkpoints of one job.
pub struct Coordinator {
    /// How the job checkpoints.
    pub config: CheckpointConfig,
    /// Where checkpoints go.
    pub store: CheckpointStore,
    /// The job's operators (for the metadata).
    pub operators: Vec<OperatorMeta>,
    /// Command channels of the source subtasks.
    pub sources: Vec<(TaskId, std_mpsc::Sender<SourceCommand>)>,
    /// Committers of the exactly-once sink subtasks.
    pub committers: Vec<SinkCommitter>,
    /// Reports from every subtask.
    pub reports: std_mpsc::Receiver<Report>,
    /// Number of the next checkpoint.
    pub next: u64,
    /// Stops triggering when the job is asked to stop.
    pub stop: StopHandle,
    /// Where completed checkpoints are counted.
    pub metrics: Arc<JobMetrics>,
    /// Runs after a checkpoint is written, before its commits.
    pub on_written: Option<CheckpointHook>,
    /// Set by others to trigger a checkpoint now, before the interval has passed (a
    /// scaled-out job's unit whose inputs are aligned on a job-wide checkpoint).
    pub checkpoint_now: Option<Arc<AtomicBool>>,
}

/// A checkpoint being collected.
struct Pending {
    id: u64,
    started: Instant,
    states: BTreeMap<TaskId, Vec<u8>>,
    /// The subtasks whose state is a keyed snapshot.
    keyed: BTreeSet<TaskId>,
    /// Taken after every source was exhausted.
    last: bool,
}

impl Coordinator {
    fn tasks(&self) -> usize {
        self.operators.iter().map(|o| o.parallelism).sum()
    }

    fn trigger(&mut self, last: bool) -> Pending {
        let id = self.next;
        self.next += 1;
        if log_enabled() {
            eprintln!("riffle: checkpoint {id} triggered");
        }
        for (_, tx) in &self.sources {
            // A source that already ended needs no barrier; the job is ending anyway.
            let _ = tx.send(SourceCommand::Barrier(id));
        }
        Pending {
            id,
            started: Instant::now(),
            states: BTreeMap::new(),
            keyed: BTreeSet::new(),
            last,
        }
    }

    /// Writes a checkpoint whose snapshots are all in, commits the sinks, tells the sources.
    fn complete(&mut self, pending: Pending) -> Result<(), RuntimeError> {
        let Pending {
            id,
            started,
            states,
            keyed,
            ..
        } = pending;
        let mut metadata = Metadata::new(
            &self.config.job_id,
            id,
            self.config.key_groups.max_parallelism(),
            self.operators.clone(),
        );
        for task in &mut metadata.tasks {
            task.keyed = keyed.contains(&TaskId {
                operator: task.operator,
                subtask: task.subtask,
            });
        }
        let bytes = self.store.write(&mut metadata, &states)?;
        if let Some(hook) = &self.on_written {
            hook(id, &self.store.checkpoint_dir(id))?;
        }
        commit_all(&self.committers, id, &states)?;
        self.store.clean()?;
        self.metrics.checkpoint_completed(
            id,
            started.elapsed(),
            bytes,
            states.iter().map(|(task, state)| (*task, state.len())),
        );
        if log_enabled() {
            eprintln!(
                "riffle: checkpoint {id} of job {} complete: {bytes} bytes in {} ms",
                self.config.job_id,
                started.elapsed().as_millis()
            );
        }
        for (_, tx) in &self.sources {
            let _ = tx.send(SourceCommand::Complete(id));
        }
        Ok(())
    }

    /// Whether a checkpoint was asked for ([`Self::checkpoint_now`]); clears the request.
    fn requested(&self) -> bool {
        self.checkpoint_now
            .as_ref()
            .is_some_and(|r| r.swap(false, Ordering::SeqCst))
    }

    /// Runs until every subtask has ended (or the job stops). Runs on its own thread, so
    /// that busy operator tasks never delay a checkpoint's trigger.
    pub fn run(mut self) -> Result<(), RuntimeError> {
        let total = self.tasks();
        let mut exhausted: BTreeSet<TaskId> = BTreeSet::new();
        let mut pending: Option<Pending> = None;
        let mut finished = false;
        let mut due = Instant::now() + self.config.interval;
        loop {
            let stopped = self.stop.is_stopped();
            let all_exhausted = !self.sources.is_empty() && exhausted.len() == self.sources.len();
            if pending.is_none() && !finished && !stopped {
                if all_exhausted {
                    pending = Some(self.trigger(true));
                } else if Instant::now() >= due || self.requested() {
                    pending = Some(self.trigger(false));
                }
            }
            let poll = match self.checkpoint_now {
                Some(_) => REQUEST_POLL,
                None => STOP_POLL,
            };
            let wait = match &pending {
                Some(_) => STOP_POLL,
                None => due.saturating_duration_since(Instant::now()).min(poll),
            };
            let report = match self.reports.recv_timeout(wait) {
                Ok(r) => r,
                Err(std_mpsc::RecvTimeoutError::Timeout) => continue,
                // Every subtask has ended.
                Err(std_mpsc::RecvTimeoutError::Disconnected) => return Ok(()),
            };
            match report {
                Report::Exhausted(task) => {
                    exhausted.insert(task);
                }
                Report::Ack {
                    checkpoint,
                    task,
                    state,
                    keyed,
                } => {
                    let Some(p) = pending.as_mut().filter(|p| p.id == checkpoint) else {
                        continue;
                    };
                    p.states.insert(task, state);
                    if keyed {
                        p.keyed.insert(task);
                    }
                    if p.states.len() < total {
                        continue;
                    }
                    let Some(done) = pending.take() else {
                        continue;
                    };
                    let last = done.last;
                    self.complete(done)?;
                    due = Instant::now() + self.config.interval;
                    if last {
                        finished = true;
                        for (_, tx) in &self.sources {
                            let _ = tx.send(SourceCommand::Finish);
                        }
                    }
                }
            }
        }
    }
}

/// How often the coordinator looks for a stop request while it waits.
const STOP_POLL: Duration = Duration::from_millis(100);

/// How often the coordinator looks for [`Coordinator::checkpoint_now`] while it waits.
const REQUEST_POLL: Duration = Duration::from_millis(10);

/// Progress lines on stderr when `RIFFLE_CHECKPOINT_LOG` is set.
fn log_enabled() -> bool {
    std::env::var_os("RIFFLE_CHECKPOINT_LOG").is_some()
}

/// Commits every sink transaction of checkpoint `id` (also used when restoring one).
pub fn commit_all(
    committers: &[SinkCommitter],
    id: u64,
    states: &BTreeMap<TaskId, Vec<u8>>,
) -> Result<(), RuntimeError> {
    for (task, committer) in committers {
        if let Some(txn) = states.get(task) {
            committer.commit(id, txn)?;
        }
    }
    Ok(())
}
