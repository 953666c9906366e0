//! Riffle's streaming runtime: runs a [`JobGraph`] on tokio.
//!
//! Every operator of the graph runs as `parallelism` subtasks (tokio tasks; sources read on
//! blocking threads). Subtasks talk over bounded channels, so a slow consumer slows its producers
//! (backpressure). Records travel as Arrow batches with a change kind per row; watermarks travel
//! in band, and an operator's watermark is the minimum over its input channels. A bounded source
//! ends with the maximum watermark, so every pending window fires, then closes its channels; the
//! job ends when every sink has seen the end of all its inputs.
//!
//! All connectors and expressions are opened and compiled before any task starts, so a bad
//! option or expression fails the job before it produces anything.

#![warn(missing_docs)]

mod accumulator;
pub mod checkpoint;
mod exchange;
pub mod keyed_snapshot;
pub mod metrics;
mod operators;
mod state_codec;
mod task;

use std::future::Future;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use riffle_plan::{FlinkSession, JobGraph};

pub use task::RuntimeError;

/// Capacity (in messages) of every channel between subtasks.
pub const CHANNEL_CAPACITY: usize = 8;

/// Asks a running job to stop: sources stop reading and the pipeline drains.
#[derive(Debug, Clone, Default)]
pub struct StopHandle {
    stopped: Arc<AtomicBool>,
}

impl StopHandle {
    /// Requests the stop.
    pub fn stop(&self) {
        self.stopped.store(true, Ordering::SeqCst);
    }

    /// True once [`Self::stop`] was called.
    pub fn is_stopped(&self) -> bool {
        self.stopped.load(Ordering::SeqCst)
    }
}

pub use riffle_connectors::print::PrintTarget;

/// How a job runs.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Where `print` sinks and query results write.
    pub print_target: PrintTarget,
    /// Stops the job when requested.
    pub stop: StopHandle,
    /// The job's id, naming its checkpoints (default: a hash of the job graph).
    pub job_id: Option<String>,
    /// A savepoint (or checkpoint) directory to start from instead of the job's newest
    /// checkpoint.
    pub from_savepoint: Option<PathBuf>,
}

/// Runs `graph` to completion (bounded inputs) or until `options.stop` is requested.
pub async fn run(graph: &JobGraph, options: RunOptions) -> Result<(), RuntimeError> {
    run_with_metrics(graph, options, metrics::JobMetrics::new(graph)).await
}

/// [`run`], with the job's live figures kept in `metrics` (made for `graph` with
/// [`metrics::JobMetrics::new`]) for others to read while it runs.
pub async fn run_with_metrics(
    graph: &JobGraph,
    options: RunOptions,
    metrics: Arc<metrics::JobMetrics>,
) -> Result<(), RuntimeError> {
    let session = FlinkSession::for_config(&graph.config).with_user_functions(&graph.functions);
    let checkpoint = checkpoint::CheckpointConfig::from_graph(graph, options.job_id.as_deref())?;
    let job = task::build(graph, &session, &options, checkpoint, None, &metrics)?;
    job.run().await
}

/// How a unit of a scaled-out job runs (see [`run_as_subtask`]).
#[derive(Clone)]
pub struct UnitOptions {
    /// The subtask of the wider job whose share the unit runs.
    pub subtask: riffle_connectors::SubtaskInfo,
    /// Called when a checkpoint is written, before its commits.
    pub on_checkpoint: Option<checkpoint::coordinator::CheckpointHook>,
    /// Set to take a checkpoint now rather than at the end of the interval.
    pub checkpoint_now: Option<Arc<AtomicBool>>,
}

/// Runs `graph`, whose operators each have one subtask, as subtask `unit.subtask` of a wider
/// job: connectors are opened as subtask `index` of `parallelism` (a source reads that
/// subtask's share of its splits). The units of a scaled-out job (`riffle-cluster`) each run
/// one queue's share of a stage this way, as a job of their own with their own checkpoints.
pub async fn run_as_subtask(
    graph: &JobGraph,
    options: RunOptions,
    unit: UnitOptions,
) -> Result<(), RuntimeError> {
    let session = FlinkSession::for_config(&graph.config).with_user_functions(&graph.functions);
    let checkpoint = checkpoint::CheckpointConfig::from_graph(graph, options.job_id.as_deref())?;
    let job = task::build(
        graph,
        &session,
        &options,
        checkpoint,
        Some(&unit),
        &metrics::JobMetrics::new(graph),
    )?;
    job.run().await
}

/// Runs `graph` on a new multi-threaded tokio runtime; a Ctrl-C (or `extra_stop` completing)
/// stops the job cleanly.
pub fn run_blocking<F>(
    graph: &JobGraph,
    job_id: Option<String>,
    extra_stop: F,
) -> Result<(), RuntimeError>
where
    F: Future<Output = ()> + Send + 'static,
{
    let options = RunOptions {
        print_target: PrintTarget::Stdout,
        job_id,
        ..RunOptions::default()
    };
    run_blocking_with(graph, options, extra_stop)
}

/// [`run_blocking`] with every option (its stop handle is replaced by one that Ctrl-C and
/// `extra_stop` trigger).
pub fn run_blocking_with<F>(
    graph: &JobGraph,
    options: RunOptions,
    extra_stop: F,
) -> Result<(), RuntimeError>
where
    F: Future<Output = ()> + Send + 'static,
{
    run_blocking_with_metrics(graph, options, extra_stop, metrics::JobMetrics::new(graph))
}

/// [`run_blocking_with`], with the job's live figures kept in `metrics` (see
/// [`run_with_metrics`]).
pub fn run_blocking_with_metrics<F>(
    graph: &JobGraph,
    options: RunOptions,
    extra_stop: F,
    metrics: Arc<metrics::JobMetrics>,
) -> Result<(), RuntimeError>
where
    F: Future<Output = ()> + Send + 'static,
{
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| RuntimeError::new(format!("cannot start the tokio runtime: {e}")))?;
    runtime.block_on(async {
        let stop = StopHandle::default();
        let watcher = stop.clone();
        let signal = tokio::spawn(async move {
            tokio::select! {
                r = tokio::signal::ctrl_c() => {
                    if r.is_ok() {
                        eprintln!("riffle: stopping (Ctrl-C)");
                    }
                }
                _ = extra_stop => {}
            }
            watcher.stop();
        });
        let result = run_with_metrics(graph, RunOptions { stop, ..options }, metrics).await;
        signal.abort();
        result
    })
}
