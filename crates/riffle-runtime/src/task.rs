//! Building the subtasks of a job and running them.

use std::fmt;
use std::future::Future;
use std::pin::Pin;

use riffle_connectors::{open_sink, open_source, ChangeBatch, SourceReader, SubtaskInfo};
use riffle_plan::{FlinkSession, JobGraph, OperatorKind};
use tokio::sync::mpsc::{self, Receiver, Sender};
use tokio::task::JoinSet;

use crate::exchange::{EdgeOutput, Envelope, Message, Output};
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

/// Opens every connector, compiles every expression and wires the channels.
pub fn build(
    graph: &JobGraph,
    session: &FlinkSession,
    options: &RunOptions,
) -> Result<Job, RuntimeError> {
    let stop = &options.stop;
    let ops = &graph.operators;
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
        for index in 0..op.parallelism {
            let receiver = op_receivers.next().flatten();
            let subtask = SubtaskInfo {
                index,
                parallelism: op.parallelism,
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
                });
            }
            let work = match &op.kind {
                OperatorKind::Source { connector } => {
                    Work::Source(open_source(connector, schema.clone(), subtask)?)
                }
                OperatorKind::Values { rows } => {
                    Work::Source(operators::values(rows, schema.clone(), session, index)?)
                }
                kind => {
                    let inputs: Vec<&riffle_plan::Operator> = graph
                        .inputs_of(op.id)
                        .iter()
                        .filter_map(|e| ops.get(e.from))
                        .collect();
                    let operator: Box<dyn StreamOperator> = match kind {
                        OperatorKind::Sink { connector } => Box::new(operators::SinkOperator::new(
                            open_sink(connector, &op.schema, subtask, &options.print_target)?,
                        )),
                        _ => operators::create(op, &inputs, session)?,
                    };
                    let rx = receiver.ok_or_else(|| RuntimeError::new("subtask wired twice"))?;
                    Work::Operator(operator, rx, channel_inputs[op.id].clone())
                }
            };
            tasks.push(match work {
                Work::Source(reader) => Box::pin(run_source(reader, output, stop.clone())),
                Work::Operator(operator, rx, inputs) => {
                    Box::pin(run_operator(operator, rx, inputs, output))
                }
            });
        }
    }
    Ok(Job { tasks })
}

impl Job {
    /// Runs every subtask; the first failure aborts the others.
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
            if let Err(e) = outcome {
                set.abort_all();
                return Err(e);
            }
        }
        Ok(())
    }
}

/// Reads a source on a blocking thread and routes its batches; ends with the maximum watermark
/// (bounded input exhausted) or without it (stopped).
async fn run_source(
    mut reader: Box<dyn SourceReader>,
    mut output: Output,
    stop: StopHandle,
) -> Result<(), RuntimeError> {
    let (tx, mut rx) = mpsc::channel::<Result<ChangeBatch, RuntimeError>>(2);
    let reader_stop = stop.clone();
    let reading = tokio::task::spawn_blocking(move || loop {
        if reader_stop.is_stopped() {
            return;
        }
        let next = match reader.next_batch() {
            Ok(Some(batch)) => Ok(ChangeBatch::inserts(batch)),
            Ok(None) => return,
            Err(e) => Err(RuntimeError::from(e)),
        };
        let failed = next.is_err();
        if tx.blocking_send(next).is_err() || failed {
            return;
        }
    });
    while let Some(batch) = rx.recv().await {
        output.send(batch?).await?;
    }
    reading
        .await
        .map_err(|e| RuntimeError::new(format!("source thread failed: {e}")))?;
    if !stop.is_stopped() {
        output.broadcast(Message::Watermark(i64::MAX)).await?;
    }
    output.broadcast(Message::End).await
}

/// Feeds an operator from its input channels, tracking the minimum watermark over them.
async fn run_operator(
    mut operator: Box<dyn StreamOperator>,
    mut rx: Receiver<Envelope>,
    channel_inputs: Vec<usize>,
    mut output: Output,
) -> Result<(), RuntimeError> {
    let channels = channel_inputs.len();
    let mut watermarks = vec![i64::MIN; channels];
    let mut ended = vec![false; channels];
    let mut current = i64::MIN;
    let mut emits: Vec<Emit> = Vec::new();
    if channels == 0 {
        operator.end(&mut emits)?;
        flush(&mut emits, &mut output).await?;
        return output.broadcast(Message::End).await;
    }
    while let Some((channel, message)) = rx.recv().await {
        let Some(input) = channel_inputs.get(channel).copied() else {
            return Err(RuntimeError::new("message on an unknown channel"));
        };
        match message {
            Message::Data(batch) => operator.process(input, batch, &mut emits)?,
            Message::Watermark(w) => {
                watermarks[channel] = watermarks[channel].max(w);
                let min = watermarks.iter().copied().min().unwrap_or(i64::MIN);
                if min > current {
                    current = min;
                    operator.watermark(min, &mut emits)?;
                }
            }
            Message::End => {
                ended[channel] = true;
                if ended.iter().all(|e| *e) {
                    operator.end(&mut emits)?;
                    flush(&mut emits, &mut output).await?;
                    return output.broadcast(Message::End).await;
                }
            }
        }
        flush(&mut emits, &mut output).await?;
    }
    // All senders dropped without an end: upstream failed; the failure is reported there.
    Ok(())
}

async fn flush(emits: &mut Vec<Emit>, output: &mut Output) -> Result<(), RuntimeError> {
    for e in emits.drain(..) {
        match e {
            Emit::Data(batch) => output.send(batch).await?,
            Emit::Watermark(w) => output.broadcast(Message::Watermark(w)).await?,
        }
    }
    Ok(())
}
