//! Building the subtasks of a job and running them.

use std::fmt;
use std::future::Future;
use std::pin::Pin;

use std::collections::VecDeque;
use std::sync::mpsc as std_mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use riffle_connectors::{open_sink, open_source, ChangeBatch, SourceReader, SubtaskInfo};
use riffle_plan::{FlinkSession, JobGraph, OperatorKind};
use tokio::sync::mpsc::{self, Receiver, Sender};
use tokio::task::JoinSet;

use crate::checkpoint::coordinator::{Coordinator, Report, SourceCommand};
use crate::checkpoint::redistribute::{self, SubtaskState};
use crate::checkpoint::storage::{read_checkpoint, CheckpointStore, OperatorMeta, Restored};
use crate::checkpoint::{fingerprint, CheckpointConfig, TaskId};
use crate::exchange::{EdgeOutput, Envelope, Message, Output};
use crate::metrics::{JobMetrics, QueueBacklog, SubtaskMetrics, BACKLOG_INTERVAL};
use crate::operators::{self, Emit, StreamOperator};
use crate::{RunOptions, StopHandle, CHANNEL_CAPACITY};

/// A failure while building or running a job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuntimeError {
    /// What went wrong.
    pub message: String,
}

impl RuntimeError {
    /// An error with the given message.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }
}

impl fmt::Display for RuntimeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for RuntimeError {}

impl From<arrow::error::ArrowError> for RuntimeError {
    fn from(e: arrow::error::ArrowError) -> Self {
        RuntimeError::new(e.to_string())
    }
}

impl From<datafusion::error::DataFusionError> for RuntimeError {
    fn from(e: datafusion::error::DataFusionError) -> Self {
        RuntimeError::new(e.to_string())
    }
}

impl From<riffle_connectors::ConnectorError> for RuntimeError {
    fn from(e: riffle_connectors::ConnectorError) -> Self {
        RuntimeError::new(e.message)
    }
}

type TaskFuture = Pin<Box<dyn Future<Output = Result<(), RuntimeError>> + Send>>;

/// A job whose subtasks are built and wired, ready to run.
pub struct Job {
    tasks: Vec<TaskFuture>,
}

/// What one subtask does.
enum Work {
    /// Produces batches on a blocking thread.
    Source(Box<dyn SourceReader>),
    /// Consumes its inputs.
    Operator(Box<dyn StreamOperator>, Receiver<Envelope>, Vec<usize>),
}

/// A checkpointed job's wiring while it is built.
struct Checkpointing {
    config: CheckpointConfig,
    restored: Option<Restored>,
    reports: std_mpsc::Sender<Report>,
    coordinator: Coordinator,
}

impl Checkpointing {
    fn new(
        graph: &JobGraph,
        config: CheckpointConfig,
        stop: &StopHandle,
        savepoint: Option<&std::path::Path>,
        metrics: &Arc<JobMetrics>,
    ) -> Result<Self, RuntimeError> {
        let store = CheckpointStore::new(&config.root, &config.job_id);
        let operators: Vec<OperatorMeta> = graph
            .operators
            .iter()
            .map(|op| OperatorMeta {
                id: op.id,
                fingerprint: fingerprint(op),
                parallelism: op.parallelism,
            })
            .collect();
        let restored = match savepoint {
            Some(dir) => Some(read_checkpoint(dir)?),
            None => store.latest()?,
        };
        if let Some(r) = &restored {
            check_compatible(r, &operators, &config)?;
        }
        store.clean()?;
        // Numbers go on after both the restored checkpoint and any of the job's own.
        let newest = store.newest_number()?.unwrap_or(0);
        let next = restored
            .as_ref()
            .map_or(0, |r| r.metadata.checkpoint)
            .max(newest)
            + 1;
        let (reports, rx) = std_mpsc::channel();
        Ok(Self {
            coordinator: Coordinator {
                config: config.clone(),
                store,
                operators,
                sources: Vec::new(),
                committers: Vec::new(),
                reports: rx,
                next,
                stop: stop.clone(),
                metrics: metrics.clone(),
                on_written: None,
                checkpoint_now: None,
            },
            config,
            restored,
            reports,
        })
    }

    /// What subtask `task` of an operator with `parallelism` subtasks restores.
    fn state(&self, task: TaskId, parallelism: usize) -> SubtaskState<'_> {
        match &self.restored {
            Some(r) => redistribute::subtask_state(r, task, parallelism, self.config.key_groups),
            None => SubtaskState::None,
        }
    }
}

/// Refuses to restore a checkpoint of a different job graph or maximum parallelism (a changed
/// parallelism is fine: state is redistributed by key group).
fn check_compatible(
    restored: &Restored,
    operators: &[OperatorMeta],
    config: &CheckpointConfig,
) -> Result<(), RuntimeError> {
    let job_id = &config.job_id;
    let theirs = &restored.metadata.operators;
    let where_ = restored.dir.display();
    let max = config.key_groups.max_parallelism();
    if restored.metadata.max_parallelism != max {
        return Err(RuntimeError::new(format!(
            "checkpoint {where_} of job '{job_id}' was taken with 'pipeline.max-parallelism' {}, the job now has {max}: the maximum parallelism (the number of key groups) cannot change",
            restored.metadata.max_parallelism
        )));
    }
    if theirs.len() != operators.len() {
        return Err(RuntimeError::new(format!(
            "checkpoint {where_} has {} operators, the job has {}: the job changed since it was checkpointed (run it under another job id, e.g. `--job-id`)",
            theirs.len(),
            operators.len()
        )));
    }
    for (a, b) in theirs.iter().zip(operators) {
        if a.fingerprint != b.fingerprint {
            return Err(RuntimeError::new(format!(
                "checkpoint {where_} of job '{job_id}': operator {} was {}, it is now {}: the job changed since it was checkpointed (run it under another job id, e.g. `--job-id`)",
                a.id, a.fingerprint, b.fingerprint
            )));
        }
    }
    Ok(())
}

/// Opens every connector, compiles every expression and wires the channels; with a
/// checkpoint configuration, restores the job's latest completed checkpoint. With `unit`,
/// single-subtask operators open their connectors as that subtask of a wider job.
pub fn build(
    graph: &JobGraph,
    session: &FlinkSession,
    options: &RunOptions,
    checkpoint: Option<CheckpointConfig>,
    unit: Option<&crate::UnitOptions>,
    metrics: &Arc<JobMetrics>,
) -> Result<Job, RuntimeError> {
    let stop = &options.stop;
    let ops = &graph.operators;
    let key_groups = crate::checkpoint::key_groups(graph)?;
    let mut checkpointing = checkpoint
        .map(|c| Checkpointing::new(graph, c, stop, options.from_savepoint.as_deref(), metrics))
        .transpose()?;
    if let (Some(c), Some(u)) = (checkpointing.as_mut(), unit) {
        c.coordinator.on_written = u.on_checkpoint.clone();
        c.coordinator.checkpoint_now = u.checkpoint_now.clone();
    }
    // One receiver per subtask.
    let mut senders: Vec<Vec<Sender<Envelope>>> = Vec::with_capacity(ops.len());
    let mut receivers: Vec<Vec<Option<Receiver<Envelope>>>> = Vec::with_capacity(ops.len());
    for op in ops {
        let (s, r): (Vec<_>, Vec<_>) = (0..op.parallelism)
            .map(|_| mpsc::channel(CHANNEL_CAPACITY))
            .unzip();
        senders.push(s);
        receivers.push(r.into_iter().map(Some).collect());
    }
    // Channel numbering at a consumer: input edges in input order, then producer subtask.
    let mut channel_base = vec![Vec::new(); graph.edges.len()];
    let mut channel_inputs: Vec<Vec<usize>> = vec![Vec::new(); ops.len()];
    for op in ops {
        for edge in graph.inputs_of(op.id) {
            let Some(edge_idx) = graph.edges.iter().position(|e| e == edge) else {
                continue;
            };
            let producer = ops
                .get(edge.from)
                .ok_or_else(|| RuntimeError::new("edge from an unknown operator"))?;
            channel_base[edge_idx] = vec![channel_inputs[op.id].len()];
            for _ in 0..producer.parallelism {
                channel_inputs[op.id].push(edge.input);
            }
        }
    }
    let mut tasks: Vec<TaskFuture> = Vec::new();
    for op in ops {
        let schema = operators::runtime_schema(&op.schema)?;
        let mut op_receivers = std::mem::take(&mut receivers[op.id]).into_iter();
        let earlier_reads = earlier_reads(graph, op);
        for index in 0..op.parallelism {
            let receiver = op_receivers.next().flatten();
            let subtask = match unit {
                Some(unit) if op.parallelism == 1 => SubtaskInfo {
                    earlier_reads,
                    ..unit.subtask
                },
                _ => SubtaskInfo {
                    index,
                    parallelism: op.parallelism,
                    earlier_reads,
                },
            };
            let task_id = TaskId {
                operator: op.id,
                subtask: index,
            };
            let mut output = Output::default();
            for (edge_idx, edge) in graph.edges.iter().enumerate() {
                if edge.from != op.id {
                    continue;
                }
                let base = channel_base[edge_idx].first().copied().unwrap_or(0);
                let targets = senders[edge.to]
                    .iter()
                    .map(|tx| (tx.clone(), base + index))
                    .collect();
                output.edges.push(EdgeOutput {
                    partitioning: edge.partitioning.clone(),
                    targets,
                    subtask: index,
                    next: index,
                    key_groups,
                });
            }
            let work = match &op.kind {
                OperatorKind::Source { connector } => {
                    let mut reader = open_source(connector, schema.clone(), subtask)?;
                    if checkpointing.is_some() && !reader.enable_checkpointing() {
                        return Err(RuntimeError::new(format!(
                            "unsupported feature: checkpointing a job that reads table '{}' (connector '{}' cannot be checkpointed)",
                            connector.table, connector.connector
                        )));
                    }
                    Work::Source(reader)
                }
                OperatorKind::Values { rows } => Work::Source(operators::values(
                    rows,
                    schema.clone(),
                    session,
                    subtask.index,
                )?),
                kind => {
                    let inputs: Vec<&riffle_plan::Operator> = graph
                        .inputs_of(op.id)
                        .iter()
                        .filter_map(|e| ops.get(e.from))
                        .collect();
                    let consumers: Vec<operators::Consumer<'_>> = graph
                        .outputs_of(op.id)
                        .into_iter()
                        .filter_map(|e| ops.get(e.to).map(|to| (&e.partitioning, to)))
                        .collect();
                    let operator: Box<dyn StreamOperator> = match kind {
                        OperatorKind::Sink { connector } => {
                            let mut writer =
                                open_sink(connector, &op.schema, subtask, &options.print_target)?;
                            if let Some(c) = checkpointing.as_mut() {
                                let id = format!("{}-{}-{}", c.config.job_id, op.id, index);
                                if let Some(committer) = writer.enable_exactly_once(&id)? {
                                    // A restored transaction may not have been published yet.
                                    if let Some(r) = &c.restored {
                                        commit_restored(r, task_id, op.parallelism, &committer)?;
                                    }
                                    c.coordinator.committers.push((task_id, committer));
                                }
                            }
                            Box::new(operators::SinkOperator::new(writer))
                        }
                        _ => operators::create(
                            op,
                            &inputs,
                            &consumers,
                            session,
                            &state_context(graph, checkpointing.as_ref(), task_id, key_groups)?,
                        )?,
                    };
                    if let Some(reason) = checkpointing
                        .as_ref()
                        .and_then(|_| operator.checkpoint_unsupported())
                    {
                        return Err(RuntimeError::new(format!(
                            "unsupported feature: checkpointing a job with operator {} ({}): {reason}",
                            op.id,
                            fingerprint(op)
                        )));
                    }
                    let rx = receiver.ok_or_else(|| RuntimeError::new("subtask wired twice"))?;
                    Work::Operator(operator, rx, channel_inputs[op.id].clone())
                }
            };
            let control = checkpointing.as_mut().map(|c| Control {
                task: task_id,
                reports: c.reports.clone(),
                commands: None,
            });
            tasks.push(match work {
                Work::Source(mut reader) => {
                    let control = match (control, checkpointing.as_mut()) {
                        (Some(mut control), Some(c)) => {
                            match c.state(task_id, op.parallelism) {
                                SubtaskState::None => {}
                                SubtaskState::Same(state) => reader.restore_position(state)?,
                                SubtaskState::Rescaled {
                                    old_parallelism,
                                    all,
                                    ..
                                } => {
                                    let positions: Vec<&[u8]> =
                                        all.into_iter().map(Option::unwrap_or_default).collect();
                                    reader.restore_rescaled(&positions).map_err(|e| {
                                        let what = match &op.kind {
                                            OperatorKind::Source { connector } => format!(
                                                "table '{}' (connector '{}')",
                                                connector.table, connector.connector
                                            ),
                                            _ => "VALUES".to_string(),
                                        };
                                        RuntimeError::new(format!(
                                            "unsupported feature: restoring the source of {what} with another parallelism ({old_parallelism} subtasks in the checkpoint, {} now): {}",
                                            op.parallelism,
                                            e.message
                                        ))
                                    })?;
                                }
                            }
                            let (tx, rx) = std_mpsc::channel();
                            c.coordinator.sources.push((task_id, tx));
                            control.commands = Some(rx);
                            Some(control)
                        }
                        _ => None,
                    };
                    let figures = metrics.subtask(task_id);
                    Box::pin(run_source(reader, output, stop.clone(), control, figures))
                }
                Work::Operator(mut operator, rx, inputs) => {
                    if let Some(c) = checkpointing.as_ref() {
                        if !matches!(op.kind, OperatorKind::Sink { .. }) {
                            restore_operator(
                                operator.as_mut(),
                                c.state(task_id, op.parallelism),
                                op,
                                key_groups,
                            )?;
                        }
                    }
                    let figures = metrics.subtask(task_id);
                    Box::pin(run_operator(operator, rx, inputs, output, control, figures))
                }
            });
        }
    }
    if let Some(c) = checkpointing {
        let coordinator = c.coordinator;
        tasks.push(Box::pin(async move {
            tokio::task::spawn_blocking(move || coordinator.run())
                .await
                .map_err(|e| RuntimeError::new(format!("checkpoint coordinator failed: {e}")))?
        }));
    }
    Ok(Job { tasks })
}

/// How many source operators before `op` read the same table with the same options (only
/// when sub-plan reuse is off, which would otherwise have merged them).
fn earlier_reads(graph: &JobGraph, op: &riffle_plan::Operator) -> usize {
    let OperatorKind::Source { connector } = &op.kind else {
        return 0;
    };
    graph.operators[..op.id]
        .iter()
        .filter(|o| matches!(&o.kind, OperatorKind::Source { connector: c } if c == connector))
        .count()
}

/// Commits again the restored transactions sink subtask `task` (of `parallelism` now) takes:
/// its own, or, when the parallelism changed, those [`redistribute::transactions_of`] gives it.
fn commit_restored(
    restored: &Restored,
    task: TaskId,
    parallelism: usize,
    committer: &std::sync::Arc<dyn riffle_connectors::Committer>,
) -> Result<(), RuntimeError> {
    let old = restored
        .metadata
        .operators
        .iter()
        .find(|o| o.id == task.operator)
        .map_or(parallelism, |o| o.parallelism);
    let olds = if old == parallelism {
        vec![task.subtask]
    } else {
        redistribute::transactions_of(task.subtask, parallelism, old)
    };
    for subtask in olds {
        let theirs = TaskId {
            operator: task.operator,
            subtask,
        };
        if let Some(txn) = restored.states.get(&theirs) {
            committer.commit(restored.metadata.checkpoint, txn)?;
        }
    }
    Ok(())
}

/// Restores an operator subtask's state; with another parallelism, from the entries of its key
/// groups (an operator whose state is not split by key group is refused by name).
fn restore_operator(
    operator: &mut dyn StreamOperator,
    state: SubtaskState<'_>,
    op: &riffle_plan::Operator,
    key_groups: riffle_state::KeyGroups,
) -> Result<(), RuntimeError> {
    match state {
        SubtaskState::None => Ok(()),
        SubtaskState::Same(state) => operator.restore(state),
        SubtaskState::Rescaled {
            old_parallelism,
            overlapping,
            range,
            ..
        } => {
            if !operator.keyed_snapshot() {
                return Err(RuntimeError::new(format!(
                    "unsupported feature: restoring operator {} ({}) with another parallelism ({old_parallelism} subtasks in the checkpoint, {} now): its state is not split by key group",
                    op.id,
                    fingerprint(op),
                    op.parallelism
                )));
            }
            let what = format!("operator {}", op.id);
            let merged = crate::keyed_snapshot::merge(&overlapping, range, key_groups, &what)?;
            operator.restore(&merged)
        }
    }
}

/// How many temporary state directories this process has handed out.
static EPHEMERAL_STATE_DIRS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Where subtask `task` keeps its keyed state: `state.backend.type`; RocksDB works in the
/// job's checkpoint directory when checkpointing, else in a temporary directory.
fn state_context(
    graph: &JobGraph,
    checkpointing: Option<&Checkpointing>,
    task: TaskId,
    key_groups: riffle_state::KeyGroups,
) -> Result<operators::StateContext, RuntimeError> {
    let parallelism = graph
        .operators
        .get(task.operator)
        .map_or(1, |op| op.parallelism);
    let backend = match graph
        .config
        .get("state.backend.type")
        .or_else(|| graph.config.get("state.backend"))
    {
        Some(name) => riffle_state::BackendKind::parse(name)?,
        None => riffle_state::BackendKind::default(),
    };
    let name = format!("{}-{}", task.operator, task.subtask);
    Ok(match checkpointing {
        Some(c) => {
            let dir = c.coordinator.store.dir().to_path_buf();
            operators::StateContext {
                backend,
                working_dir: dir.join("work").join(name),
                ephemeral: false,
                checkpoint_dir: Some(dir),
                restore_dir: c.restored.as_ref().map(|r| r.dir.clone()),
                task,
                key_groups: c.config.key_groups,
                rescaled: c.restored.as_ref().is_some_and(|r| {
                    r.metadata
                        .operators
                        .iter()
                        .any(|o| o.id == task.operator && o.parallelism != parallelism)
                }),
                key_group_range: c.config.key_groups.range_of(task.subtask, parallelism),
            }
        }
        None => operators::StateContext {
            backend,
            // One directory per subtask straight under the temporary directory, numbered
            // across the process: jobs that run side by side never share one, and removing it
            // when the state closes leaves nothing behind.
            working_dir: std::env::temp_dir().join(format!(
                "riffle-state-{}-{}-{name}",
                std::process::id(),
                EPHEMERAL_STATE_DIRS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            )),
            ephemeral: true,
            checkpoint_dir: None,
            restore_dir: None,
            task,
            key_groups,
            rescaled: false,
            key_group_range: key_groups.range_of(task.subtask, parallelism),
        },
    })
}

/// A subtask's link to the checkpoint coordinator.
struct Control {
    task: TaskId,
    reports: std_mpsc::Sender<Report>,
    /// Commands to a source subtask.
    commands: Option<std_mpsc::Receiver<SourceCommand>>,
}

impl Control {
    fn ack(&self, checkpoint: u64, state: Vec<u8>, keyed: bool) {
        // The coordinator ends only after every subtask: a closed channel means the job is
        // already failing, which is reported elsewhere.
        let _ = self.reports.send(Report::Ack {
            checkpoint,
            task: self.task,
            state,
            keyed,
        });
    }
}

impl Job {
    /// Runs every subtask; the first failure aborts the others. The failure reported is the
    /// cause: an upstream subtask that saw its downstream end may be joined first.
    pub async fn run(self) -> Result<(), RuntimeError> {
        let mut set = JoinSet::new();
        for t in self.tasks {
            set.spawn(t);
        }
        while let Some(result) = set.join_next().await {
            let outcome = match result {
                Ok(r) => r,
                Err(e) => Err(RuntimeError::new(format!("a task failed: {e}"))),
            };
            if let Err(first) = outcome {
                set.abort_all();
                let mut cause = first;
                while let Some(result) = set.join_next().await {
                    if let Ok(Err(e)) = result {
                        if cause.message == crate::exchange::DOWNSTREAM_STOPPED
                            && e.message != crate::exchange::DOWNSTREAM_STOPPED
                        {
                            cause = e;
                        }
                    }
                }
                return Err(cause);
            }
        }
        Ok(())
    }
}

/// What a source's reading thread hands to its task.
enum SourceItem {
    Batch(ChangeBatch),
    /// The source's own watermark advanced (see [`SourceReader::take_watermark`]).
    Watermark(i64),
    /// Barrier `n` with the reader's position.
    Barrier(u64, Vec<u8>),
    /// The input is exhausted (checkpointed sources then wait for the final checkpoint).
    Exhausted,
}

/// How often an exhausted checkpointed source looks for a stop while it waits.
const COMMAND_POLL: Duration = Duration::from_millis(100);

/// The reading thread of a source: reads batches and, when checkpointing, answers the
/// coordinator's commands between batches.
fn read_source(
    mut reader: Box<dyn SourceReader>,
    tx: Sender<Result<SourceItem, RuntimeError>>,
    stop: StopHandle,
    commands: Option<std_mpsc::Receiver<SourceCommand>>,
    figures: Arc<SubtaskMetrics>,
) {
    let mut exhausted = false;
    let mut backlog_due = Instant::now();
    let send = |item: Result<SourceItem, RuntimeError>| {
        let failed = item.is_err();
        tx.blocking_send(item).is_ok() && !failed
    };
    loop {
        if stop.is_stopped() {
            return;
        }
        if let Some(commands) = &commands {
            let command = if exhausted {
                match commands.recv_timeout(COMMAND_POLL) {
                    Ok(c) => Some(c),
                    Err(std_mpsc::RecvTimeoutError::Timeout) => continue,
                    Err(std_mpsc::RecvTimeoutError::Disconnected) => return,
                }
            } else {
                commands.try_recv().ok()
            };
            match command {
                Some(SourceCommand::Barrier(n)) => {
                    let item = reader
                        .snapshot_position(n)
                        .map(|p| SourceItem::Barrier(n, p))
                        .map_err(RuntimeError::from);
                    if !send(item) {
                        return;
                    }
                    continue;
                }
                Some(SourceCommand::Complete(n)) => {
                    if let Err(e) = reader.checkpoint_complete(n) {
                        let _ = send(Err(e.into()));
                        return;
                    }
                    continue;
                }
                Some(SourceCommand::Finish) => return,
                None => {}
            }
        }
        if Instant::now() >= backlog_due {
            backlog_due = Instant::now() + BACKLOG_INTERVAL;
            report_backlog(reader.as_mut(), &figures);
        }
        let next = match reader.next_changes() {
            Ok(None) => {
                // The last figures of an input that ended.
                report_backlog(reader.as_mut(), &figures);
                if commands.is_some() {
                    exhausted = true;
                    Ok(SourceItem::Exhausted)
                } else {
                    return;
                }
            }
            Ok(Some(batch)) => {
                let watermark = reader.take_watermark();
                if !send(Ok(SourceItem::Batch(batch))) {
                    return;
                }
                match watermark {
                    Some(w) => Ok(SourceItem::Watermark(w)),
                    None => continue,
                }
            }
            Err(e) => Err(RuntimeError::from(e)),
        };
        if !send(next) {
            return;
        }
    }
}

/// Hands a source's backlog and progress to its figures.
fn report_backlog(reader: &mut dyn SourceReader, figures: &SubtaskMetrics) {
    if let Some(queues) = reader.backlog() {
        figures.backlog(
            queues
                .into_iter()
                .map(|(queue, lag)| QueueBacklog { queue, lag })
                .collect(),
        );
    }
    if let Some((done, total)) = reader.progress() {
        figures.progress(done, total);
    }
}

/// Reads a source on a blocking thread and routes its batches; ends with the maximum watermark
/// (bounded input exhausted) or without it (stopped).
async fn run_source(
    reader: Box<dyn SourceReader>,
    mut output: Output,
    stop: StopHandle,
    mut control: Option<Control>,
    figures: Arc<SubtaskMetrics>,
) -> Result<(), RuntimeError> {
    let (tx, mut rx) = mpsc::channel::<Result<SourceItem, RuntimeError>>(2);
    let reader_stop = stop.clone();
    let commands = control.as_mut().and_then(|c| c.commands.take());
    let reader_figures = figures.clone();
    let reading = tokio::task::spawn_blocking(move || {
        read_source(reader, tx, reader_stop, commands, reader_figures)
    });
    let mut final_watermark_sent = false;
    while let Some(item) = rx.recv().await {
        match item? {
            SourceItem::Batch(batch) => {
                figures.records_out(batch.batch.num_rows());
                output.send(batch).await?
            }
            SourceItem::Watermark(w) => {
                figures.watermark(w);
                output.broadcast(Message::Watermark(w)).await?
            }
            SourceItem::Barrier(n, position) => {
                if let Some(c) = &control {
                    c.ack(n, position, false);
                }
                output.broadcast(Message::Barrier(n)).await?;
            }
            SourceItem::Exhausted => {
                figures.watermark(i64::MAX);
                output.broadcast(Message::Watermark(i64::MAX)).await?;
                final_watermark_sent = true;
                if let Some(c) = &control {
                    let _ = c.reports.send(Report::Exhausted(c.task));
                }
            }
        }
    }
    reading
        .await
        .map_err(|e| RuntimeError::new(format!("source thread failed: {e}")))?;
    if stop.is_stopped() {
        return output.broadcast(Message::End).await;
    }
    if !final_watermark_sent {
        figures.watermark(i64::MAX);
        output.broadcast(Message::Watermark(i64::MAX)).await?;
    }
    output.broadcast(Message::End).await
}

/// Barrier alignment of one subtask's input channels.
#[derive(Default)]
struct Alignment {
    /// Channels whose barrier arrived: their messages wait in `held`.
    blocked: Vec<bool>,
    /// Messages of blocked channels, in arrival order.
    held: VecDeque<Envelope>,
}

impl Alignment {
    /// The next held message of a channel that is no longer blocked.
    fn next_released(&mut self) -> Option<Envelope> {
        let i = self.held.iter().position(|(c, _)| !self.blocked[*c])?;
        self.held.remove(i)
    }
}

/// Feeds an operator from its input channels, tracking the minimum watermark over them and
/// aligning checkpoint barriers.
async fn run_operator(
    mut operator: Box<dyn StreamOperator>,
    mut rx: Receiver<Envelope>,
    channel_inputs: Vec<usize>,
    mut output: Output,
    control: Option<Control>,
    figures: Arc<SubtaskMetrics>,
) -> Result<(), RuntimeError> {
    let channels = channel_inputs.len();
    let mut watermarks = vec![i64::MIN; channels];
    let mut ended = vec![false; channels];
    let mut current = i64::MIN;
    let mut emits: Vec<Emit> = Vec::new();
    let mut alignment = Alignment {
        blocked: vec![false; channels],
        ..Alignment::default()
    };
    if channels == 0 {
        operator.end(&mut emits)?;
        flush(&mut emits, &mut output, &figures).await?;
        return output.broadcast(Message::End).await;
    }
    loop {
        // Processing-time timers fire when due, whether or not rows keep arriving.
        if let Some(at) = operator.processing_timer() {
            let now = riffle_plan::now_ms();
            if now >= at {
                operator.processing_time(now, &mut emits)?;
                flush(&mut emits, &mut output, &figures).await?;
                continue;
            }
        }
        let (channel, message) = match alignment.next_released() {
            Some(m) => m,
            None => match receive(&mut rx, operator.processing_timer()).await {
                Received::Message(m) => m,
                Received::TimerDue => continue,
                // All senders dropped without an end: upstream failed; the failure is
                // reported there.
                Received::Closed => return Ok(()),
            },
        };
        let Some(input) = channel_inputs.get(channel).copied() else {
            return Err(RuntimeError::new("message on an unknown channel"));
        };
        if alignment.blocked[channel] {
            alignment.held.push_back((channel, message));
            continue;
        }
        match message {
            Message::Data(batch) => {
                figures.records_in(batch.batch.num_rows());
                operator.process(input, batch, &mut emits)?
            }
            Message::Watermark(w) => {
                let before = input_watermark(&watermarks, &channel_inputs, input);
                watermarks[channel] = watermarks[channel].max(w);
                let after = input_watermark(&watermarks, &channel_inputs, input);
                if after > before {
                    operator.input_watermark(input, after);
                }
                let min = watermarks.iter().copied().min().unwrap_or(i64::MIN);
                if min > current {
                    current = min;
                    figures.watermark(min);
                    operator.watermark(min, &mut emits)?;
                }
            }
            Message::Barrier(n) => {
                alignment.blocked[channel] = true;
                let aligned = alignment.blocked.iter().zip(&ended).all(|(b, e)| *b || *e);
                if aligned {
                    flush(&mut emits, &mut output, &figures).await?;
                    let state = operator.snapshot(n)?;
                    if let Some(c) = &control {
                        c.ack(n, state, operator.keyed_snapshot());
                    }
                    output.broadcast(Message::Barrier(n)).await?;
                    alignment.blocked.iter_mut().for_each(|b| *b = false);
                }
            }
            Message::End => {
                ended[channel] = true;
                if ended.iter().all(|e| *e) {
                    operator.end(&mut emits)?;
                    flush(&mut emits, &mut output, &figures).await?;
                    return output.broadcast(Message::End).await;
                }
            }
        }
        flush(&mut emits, &mut output, &figures).await?;
    }
}

/// What waiting for an operator's next input gave.
enum Received {
    /// A message arrived.
    Message(Envelope),
    /// The operator's processing-time timer is due.
    TimerDue,
    /// Every sender is gone.
    Closed,
}

/// Waits for the next message, or until the processing-time timer `timer` (wall-clock
/// milliseconds) is due.
async fn receive(rx: &mut Receiver<Envelope>, timer: Option<i64>) -> Received {
    let message = match timer {
        None => rx.recv().await,
        Some(at) => {
            let wait = u64::try_from(at - riffle_plan::now_ms()).unwrap_or(0);
            match tokio::time::timeout(Duration::from_millis(wait), rx.recv()).await {
                Ok(message) => message,
                Err(_) => return Received::TimerDue,
            }
        }
    };
    message.map_or(Received::Closed, Received::Message)
}

/// The watermark of input `input`: the minimum over its channels.
fn input_watermark(watermarks: &[i64], channel_inputs: &[usize], input: usize) -> i64 {
    watermarks
        .iter()
        .zip(channel_inputs)
        .filter(|(_, i)| **i == input)
        .map(|(w, _)| *w)
        .min()
        .unwrap_or(i64::MIN)
}

async fn flush(
    emits: &mut Vec<Emit>,
    output: &mut Output,
    figures: &SubtaskMetrics,
) -> Result<(), RuntimeError> {
    for e in emits.drain(..) {
        match e {
            Emit::Data(batch) => {
                figures.records_out(batch.batch.num_rows());
                output.send(batch).await?
            }
            Emit::Watermark(w) => output.broadcast(Message::Watermark(w)).await?,
        }
    }
    Ok(())
}
