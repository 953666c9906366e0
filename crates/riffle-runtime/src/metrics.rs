//! Live figures of a running job: records in and out and the input watermark of every subtask,
//! the backlog of every source queue, and the job's checkpoints (duration, size, state size).
//!
//! Subtasks update their figures with relaxed atomics once per batch or watermark — never per
//! row — and a source refreshes its queues' backlog and its progress through a bounded input
//! at most once per [`BACKLOG_INTERVAL`].
//! Anyone holding the job's [`JobMetrics`] reads a consistent-enough [`MetricsSnapshot`] at
//! any time (each figure is exact; figures of different subtasks may be a batch apart).

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use riffle_plan::JobGraph;
use serde::Serialize;

use crate::checkpoint::TaskId;

/// How often a source asks its reader for the backlog of its queues.
pub const BACKLOG_INTERVAL: Duration = Duration::from_secs(1);

/// The figures of one job, shared by its subtasks (writers) and its observers (readers).
#[derive(Debug)]
pub struct JobMetrics {
    /// `[operator][subtask]`, as in the job graph.
    subtasks: Vec<Vec<Arc<SubtaskMetrics>>>,
    checkpoints: Mutex<CheckpointFigures>,
}

/// The figures one subtask updates.
#[derive(Debug)]
pub struct SubtaskMetrics {
    records_in: AtomicU64,
    records_out: AtomicU64,
    /// `i64::MIN`: no watermark yet.
    watermark: AtomicI64,
    /// Bytes of its snapshot in the last completed checkpoint.
    state_bytes: AtomicU64,
    /// Sources: the backlog of each queue they read.
    backlog: Mutex<Vec<QueueBacklog>>,
    /// Sources of a known size: (done, total), see [`SubtaskMetrics::progress`].
    progress: Mutex<Option<(u64, u64)>>,
}

impl Default for SubtaskMetrics {
    fn default() -> Self {
        Self {
            records_in: AtomicU64::new(0),
            records_out: AtomicU64::new(0),
            watermark: AtomicI64::new(i64::MIN),
            state_bytes: AtomicU64::new(0),
            backlog: Mutex::new(Vec::new()),
            progress: Mutex::new(None),
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every update is one assignment: a poisoned lock still holds consistent figures.
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

impl SubtaskMetrics {
    /// Counts `rows` records taken in.
    pub fn records_in(&self, rows: usize) {
        self.records_in.fetch_add(rows as u64, Ordering::Relaxed);
    }

    /// Counts `rows` records sent on.
    pub fn records_out(&self, rows: usize) {
        self.records_out.fetch_add(rows as u64, Ordering::Relaxed);
    }

    /// Records the subtask's current (input) watermark.
    pub fn watermark(&self, watermark: i64) {
        self.watermark.store(watermark, Ordering::Relaxed);
    }

    /// Replaces the backlog of the source's queues.
    pub fn backlog(&self, queues: Vec<QueueBacklog>) {
        *lock(&self.backlog) = queues;
    }

    /// Records how much of its bounded input a source has read: `(done, total)` in a unit of
    /// the source's own.
    pub fn progress(&self, done: u64, total: u64) {
        *lock(&self.progress) = Some((done, total));
    }

    fn figures(&self) -> SubtaskFigures {
        let watermark = self.watermark.load(Ordering::Relaxed);
        SubtaskFigures {
            records_in: self.records_in.load(Ordering::Relaxed),
            records_out: self.records_out.load(Ordering::Relaxed),
            watermark: (watermark != i64::MIN).then_some(watermark),
            state_bytes: self.state_bytes.load(Ordering::Relaxed),
            backlog: lock(&self.backlog).clone(),
            progress: *lock(&self.progress),
        }
    }
}

/// How far a source is behind the end of one queue it reads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct QueueBacklog {
    /// The queue, as `topic/queue`.
    pub queue: String,
    /// Messages in the queue not read yet.
    pub lag: u64,
}

/// One subtask's figures at one moment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SubtaskFigures {
    /// Records taken in (a source's reads count as records out).
    pub records_in: u64,
    /// Records sent downstream (a sink's are the records it wrote: its records in).
    pub records_out: u64,
    /// The current input watermark in epoch milliseconds (`i64::MAX` once its input ended).
    pub watermark: Option<i64>,
    /// Bytes of its snapshot in the last completed checkpoint.
    pub state_bytes: u64,
    /// Sources: how far behind each queue they are.
    pub backlog: Vec<QueueBacklog>,
    /// Sources of a known size: how much they read, `(done, total)` in a unit of their own
    /// (bytes of files, say).
    pub progress: Option<(u64, u64)>,
}

/// The last completed checkpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CompletedCheckpoint {
    /// Its number.
    pub id: u64,
    /// From trigger to completion (written and committed).
    pub duration_ms: u64,
    /// Bytes of state written.
    pub size_bytes: u64,
    /// When it completed, epoch milliseconds.
    pub completed_at_ms: u64,
}

/// The job's checkpoints so far.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CheckpointFigures {
    /// Checkpoints completed since the job started.
    pub completed: u64,
    /// The newest of them.
    pub last: Option<CompletedCheckpoint>,
}

/// Every figure of a job at one moment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MetricsSnapshot {
    /// Per operator (by graph id), per subtask.
    pub operators: Vec<Vec<SubtaskFigures>>,
    /// Its checkpoints.
    pub checkpoints: CheckpointFigures,
}

impl MetricsSnapshot {
    /// Bytes of state in the last completed checkpoint, over all subtasks.
    pub fn state_bytes(&self) -> u64 {
        self.operators.iter().flatten().map(|s| s.state_bytes).sum()
    }
}

impl JobMetrics {
    /// Zeroed figures for every subtask of `graph`.
    pub fn new(graph: &JobGraph) -> Arc<Self> {
        Arc::new(Self {
            subtasks: graph
                .operators
                .iter()
                .map(|op| {
                    (0..op.parallelism)
                        .map(|_| Arc::new(SubtaskMetrics::default()))
                        .collect()
                })
                .collect(),
            checkpoints: Mutex::new(CheckpointFigures::default()),
        })
    }

    /// The figures subtask `task` updates (fresh, unshared ones for a task the graph this
    /// was made for does not have).
    pub fn subtask(&self, task: TaskId) -> Arc<SubtaskMetrics> {
        self.subtasks
            .get(task.operator)
            .and_then(|op| op.get(task.subtask))
            .cloned()
            .unwrap_or_default()
    }

    /// Records a completed checkpoint and the size of every subtask's snapshot in it.
    pub fn checkpoint_completed(
        &self,
        id: u64,
        duration: Duration,
        size_bytes: u64,
        states: impl Iterator<Item = (TaskId, usize)>,
    ) {
        for (task, bytes) in states {
            self.subtask(task)
                .state_bytes
                .store(bytes as u64, Ordering::Relaxed);
        }
        let completed_at_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        let mut figures = lock(&self.checkpoints);
        figures.completed += 1;
        figures.last = Some(CompletedCheckpoint {
            id,
            duration_ms: u64::try_from(duration.as_millis()).unwrap_or(u64::MAX),
            size_bytes,
            completed_at_ms,
        });
    }

    /// Every figure now.
    pub fn snapshot(&self) -> MetricsSnapshot {
        MetricsSnapshot {
            operators: self
                .subtasks
                .iter()
                .map(|op| op.iter().map(|s| s.figures()).collect())
                .collect(),
            checkpoints: lock(&self.checkpoints).clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(operator: usize, subtask: usize) -> TaskId {
        TaskId { operator, subtask }
    }

    #[test]
    fn figures_add_up_per_subtask_and_checkpoints_record_sizes() {
        let metrics = Arc::new(JobMetrics {
            subtasks: vec![
                vec![Arc::new(SubtaskMetrics::default())],
                vec![
                    Arc::new(SubtaskMetrics::default()),
                    Arc::new(SubtaskMetrics::default()),
                ],
            ],
            checkpoints: Mutex::new(CheckpointFigures::default()),
        });
        let source = metrics.subtask(task(0, 0));
        source.records_out(10);
        source.records_out(5);
        source.backlog(vec![QueueBacklog {
            queue: "t/0".into(),
            lag: 7,
        }]);
        let second = metrics.subtask(task(1, 1));
        second.records_in(15);
        second.watermark(1_000);
        // A task outside the graph gets figures nobody reads.
        metrics.subtask(task(5, 0)).records_in(99);
        metrics.checkpoint_completed(
            3,
            Duration::from_millis(12),
            40,
            [(task(0, 0), 8), (task(1, 1), 32)].into_iter(),
        );

        let snapshot = metrics.snapshot();
        assert_eq!(snapshot.operators[0][0].records_out, 15);
        assert_eq!(snapshot.operators[0][0].backlog[0].lag, 7);
        assert_eq!(snapshot.operators[0][0].watermark, None);
        assert_eq!(snapshot.operators[1][1].records_in, 15);
        assert_eq!(snapshot.operators[1][1].watermark, Some(1_000));
        assert_eq!(snapshot.operators[1][0].records_in, 0);
        assert_eq!(snapshot.state_bytes(), 40);
        assert_eq!(snapshot.checkpoints.completed, 1);
        let last = snapshot.checkpoints.last.expect("last checkpoint");
        assert_eq!((last.id, last.duration_ms, last.size_bytes), (3, 12, 40));
    }
}
