//! Riffle's connectors and formats.
//!
//! Sources produce Arrow [`RecordBatch`]es of a table's physical columns; sinks consume
//! [`ChangeBatch`]es (rows plus their change kind). Every connector reads Flink's option names
//! from the table's `WITH` clause ([`ConnectorSpec`]); an invalid option is reported when the
//! connector is opened, which the runtime does for every connector before the job starts.
//!
//! Connectors: `filesystem` (formats `csv`, `json`, `raw`, `debezium-json`, `canal-json`, source
//! and sink, partitioned or not), `datagen`, `nexmark`, `print`, `blackhole`, `rocketmq` (source and sink on the
//! embedded topic store or a real RocketMQ cluster; the same formats). The changelog formats
//! (`debezium-json`, `canal-json`) make a source emit `+I`/`-U`/`+U`/`-D` rows
//! ([`SourceReader::next_changes`]) and a sink write op-typed records.

#![warn(missing_docs)]
// The RocketMQ client's futures are deeply nested types; proving them `Send` needs more room.
#![recursion_limit = "256"]

pub mod avro;
pub mod blackhole;
pub mod changelog;
pub mod csv;
pub mod datagen;
mod file_metadata;
pub mod file_sink;
pub mod filesystem;
pub mod format;
pub mod json;
mod json_scan;
pub mod nexmark;
pub mod options;
pub mod partitions;
pub mod print;
pub mod probe;
pub mod raw;
pub mod rocketmq;
pub mod rows;
pub mod snapshot;
mod text;

use std::fmt;
use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use riffle_plan::{ConnectorSpec, Field, MetadataColumn};

/// The kind of change a row carries (Flink's `RowKind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RowKind {
    /// `+I`
    Insert,
    /// `-U`
    UpdateBefore,
    /// `+U`
    UpdateAfter,
    /// `-D`
    Delete,
}

impl RowKind {
    /// Flink's short string: `+I`, `-U`, `+U`, `-D`.
    pub fn short(self) -> &'static str {
        match self {
            RowKind::Insert => "+I",
            RowKind::UpdateBefore => "-U",
            RowKind::UpdateAfter => "+U",
            RowKind::Delete => "-D",
        }
    }

    /// True for `+I` and `+U` (the row is added), false for `-U` and `-D` (retracted).
    pub fn is_addition(self) -> bool {
        matches!(self, RowKind::Insert | RowKind::UpdateAfter)
    }
}

/// Rows with their change kinds; `kinds == None` means every row is `+I`.
#[derive(Debug, Clone)]
pub struct ChangeBatch {
    /// The rows.
    pub batch: RecordBatch,
    /// One kind per row, or `None` when all rows are inserts.
    pub kinds: Option<Arc<[RowKind]>>,
}

impl ChangeBatch {
    /// A batch of inserts.
    pub fn inserts(batch: RecordBatch) -> Self {
        Self { batch, kinds: None }
    }

    /// The kind of row `i`.
    pub fn kind(&self, i: usize) -> RowKind {
        match &self.kinds {
            None => RowKind::Insert,
            Some(k) => k.get(i).copied().unwrap_or(RowKind::Insert),
        }
    }

    /// Number of rows.
    pub fn num_rows(&self) -> usize {
        self.batch.num_rows()
    }
}

/// A failure of a connector or format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectorError {
    /// What went wrong (names the table, option or file).
    pub message: String,
}

impl ConnectorError {
    /// An error with the given message.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }
}

impl fmt::Display for ConnectorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ConnectorError {}

impl From<arrow::error::ArrowError> for ConnectorError {
    fn from(e: arrow::error::ArrowError) -> Self {
        ConnectorError::new(e.to_string())
    }
}

/// Result of connector operations.
pub type Result<T> = std::result::Result<T, ConnectorError>;

/// A bounded or unbounded reader of one source subtask. Blocking; the runtime runs it on a
/// blocking thread.
///
/// Checkpointing (see `docs/checkpoints.md`): when a job checkpoints, the runtime calls
/// [`Self::enable_checkpointing`] once after opening; a source that returns `true` then reports
/// its position on every checkpoint barrier ([`Self::snapshot_position`]), can be moved back to
/// such a position before its first batch ([`Self::restore_position`]), and does side effects
/// tied to consumed input (like committing a consumer group's offsets) only in
/// [`Self::checkpoint_complete`].
pub trait SourceReader: Send {
    /// The next batch, or `None` when the (bounded) input is exhausted.
    fn next_batch(&mut self) -> Result<Option<RecordBatch>>;

    /// The next batch with the change kind of each row (what the runtime reads). Sources of
    /// changelog formats (`debezium-json`, `canal-json`) override it; the default reads
    /// [`Self::next_batch`] as inserts.
    fn next_changes(&mut self) -> Result<Option<ChangeBatch>> {
        Ok(self.next_batch()?.map(ChangeBatch::inserts))
    }

    /// Switches the reader to checkpointed operation; `false` when it cannot be checkpointed.
    fn enable_checkpointing(&mut self) -> bool {
        false
    }

    /// The position right after the last batch returned, to be stored in checkpoint
    /// `checkpoint` (encode it with [`snapshot::StateWriter`]).
    fn snapshot_position(&mut self, _checkpoint: u64) -> Result<Vec<u8>> {
        Err(ConnectorError::new("this source cannot be checkpointed"))
    }

    /// Continues from a position returned by [`Self::snapshot_position`] (before any batch).
    fn restore_position(&mut self, _position: &[u8]) -> Result<()> {
        Err(ConnectorError::new(
            "this source cannot be restored from a checkpoint",
        ))
    }

    /// Continues from the positions of every subtask of a checkpoint taken with another
    /// parallelism (`positions[i]`: old subtask `i`'s, empty when it had none): the reader
    /// takes the position of each split it now reads. The default refuses (the error says why).
    fn restore_rescaled(&mut self, _positions: &[&[u8]]) -> Result<()> {
        Err(ConnectorError::new(
            "its read positions cannot be redistributed over other subtasks",
        ))
    }

    /// Checkpoint `checkpoint` is complete: its position will never be replayed before.
    fn checkpoint_complete(&mut self, _checkpoint: u64) -> Result<()> {
        Ok(())
    }

    /// The source's own watermark after the last batch, when it advanced since the previous
    /// call. Sources whose input carries event-time progress (shuffle topics between the
    /// stages of a scaled-out job) report it here; the runtime sends it downstream right after
    /// the batch. Other sources keep the default: their watermarks come from the plan's
    /// watermark assigners.
    fn take_watermark(&mut self) -> Option<i64> {
        None
    }

    /// How far behind the end of each queue it reads the reader is, as `(queue name, messages
    /// not read yet)`; `None` when the source has no queues. The runtime asks about once a
    /// second, between batches.
    fn backlog(&mut self) -> Option<Vec<(String, u64)>> {
        None
    }

    /// How much of a bounded input the reader has read, as `(done, total)` in a unit of its
    /// own (bytes of files, say); `None` when it cannot tell. Asked with [`Self::backlog`].
    fn progress(&mut self) -> Option<(u64, u64)> {
        None
    }
}

/// A writer of one sink subtask.
///
/// Exactly-once sinks are two-phase: with checkpointing on, the runtime calls
/// [`Self::enable_exactly_once`] once after opening; an exactly-once sink then stages what it is
/// given instead of publishing it, hands the staged rows over as a *transaction* on every
/// checkpoint barrier ([`Self::prepare_commit`]; the bytes are stored in the checkpoint), and
/// its [`Committer`] publishes a transaction once the checkpoint is complete — again after a
/// restore, so committing must be idempotent. Sinks without a committer (print, blackhole)
/// stay at-least-once, as in Flink.
pub trait SinkWriter: Send {
    /// Writes rows with their change kinds.
    fn write(&mut self, batch: &ChangeBatch) -> Result<()>;
    /// Flushes and closes the sink at the end of a bounded job.
    fn finish(&mut self) -> Result<()>;

    /// Switches to exactly-once delivery; `transactional_id` is unique and stable per job, sink
    /// and subtask. `None`: the sink stays at-least-once.
    fn enable_exactly_once(
        &mut self,
        _transactional_id: &str,
    ) -> Result<Option<Arc<dyn Committer>>> {
        Ok(None)
    }

    /// Closes the transaction of everything written since the previous barrier, for
    /// checkpoint `checkpoint`. At-least-once sinks flush and return nothing.
    fn prepare_commit(&mut self, _checkpoint: u64) -> Result<Vec<u8>> {
        Ok(Vec::new())
    }

    /// The sink's input watermark advanced to `watermark` (milliseconds; `i64::MAX` at the end
    /// of bounded input). Sinks that carry event-time progress on to another job (shuffle
    /// topics) record it in order with the rows; others ignore it.
    fn write_watermark(&mut self, _watermark: i64) -> Result<()> {
        Ok(())
    }
}

/// Publishes the transactions of one exactly-once sink subtask.
pub trait Committer: Send + Sync {
    /// Publishes `transaction` (from [`SinkWriter::prepare_commit`] for checkpoint
    /// `checkpoint`); committing a transaction that was already committed changes nothing.
    fn commit(&self, checkpoint: u64, transaction: &[u8]) -> Result<()>;
}

/// Where a subtask stands among its operator's subtasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SubtaskInfo {
    /// 0-based subtask index.
    pub index: usize,
    /// Number of subtasks.
    pub parallelism: usize,
    /// How many sources earlier in the job read the same table with the same options (0
    /// unless sub-plan reuse is off): random generators mix it into their seed, so repeated
    /// reads of a table differ, as Flink's unseeded ones do.
    pub earlier_reads: usize,
}

/// Rows per batch sources aim for.
pub const BATCH_SIZE: usize = 8192;

/// Opens a source subtask of a connector registered with [`register_connector`].
pub type SourceFactory =
    fn(&ConnectorSpec, SchemaRef, SubtaskInfo) -> Result<Box<dyn SourceReader>>;

/// Opens a sink subtask of a connector registered with [`register_connector`].
pub type SinkFactory = fn(&ConnectorSpec, &[Field], SubtaskInfo) -> Result<Box<dyn SinkWriter>>;

/// Connectors added by other crates (name, source, sink): the runtime opens them like the
/// built-in ones. Used for connectors that never appear in SQL, such as the shuffle topics
/// between the stages of a scaled-out job (`riffle-cluster`).
static REGISTERED: std::sync::RwLock<Vec<(&'static str, SourceFactory, SinkFactory)>> =
    std::sync::RwLock::new(Vec::new());

/// Registers connector `name` (registering a name again replaces it).
pub fn register_connector(name: &'static str, source: SourceFactory, sink: SinkFactory) {
    if let Ok(mut registered) = REGISTERED.write() {
        registered.retain(|(n, _, _)| *n != name);
        registered.push((name, source, sink));
    }
}

/// The registered connector `name`'s factories.
fn registered(name: &str) -> Option<(SourceFactory, SinkFactory)> {
    let registered = REGISTERED.read().ok()?;
    registered
        .iter()
        .find(|(n, _, _)| *n == name)
        .map(|(_, source, sink)| (*source, *sink))
}

/// Opens a source subtask for a table's physical columns (`schema`).
pub fn open_source(
    spec: &ConnectorSpec,
    schema: SchemaRef,
    subtask: SubtaskInfo,
) -> Result<Box<dyn SourceReader>> {
    reject_metadata(spec, &["filesystem", rocketmq::options::CONNECTOR])?;
    match spec.connector.as_str() {
        "filesystem" => filesystem::open_source(spec, schema, subtask),
        "datagen" => datagen::open_source(spec, schema, subtask),
        "nexmark" => nexmark::open_source(spec, schema, subtask),
        rocketmq::options::CONNECTOR => rocketmq::source::open_source(spec, schema, subtask),
        other => match registered(other) {
            Some((source, _)) => source(spec, schema, subtask),
            None => Err(ConnectorError::new(format!(
                "unsupported feature: connector '{other}' as a source (table '{}')",
                spec.table
            ))),
        },
    }
}

/// Opens a sink subtask writing rows of `fields`; `print` sinks and query results write their
/// lines to `target`.
pub fn open_sink(
    spec: &ConnectorSpec,
    fields: &[Field],
    subtask: SubtaskInfo,
    target: &print::PrintTarget,
) -> Result<Box<dyn SinkWriter>> {
    reject_metadata(spec, &[rocketmq::options::CONNECTOR])?;
    reject_partitions(spec)?;
    match spec.connector.as_str() {
        "print" => print::open_sink(spec, fields, subtask, target),
        riffle_plan::COLLECT_CONNECTOR => print::open_collect(fields, subtask, target),
        "blackhole" => blackhole::open_sink(spec),
        "filesystem" => file_sink::open_sink(spec, fields, subtask),
        rocketmq::options::CONNECTOR => rocketmq::sink::open_sink(spec, fields, subtask),
        other => match registered(other) {
            Some((_, sink)) => sink(spec, fields, subtask),
            None => Err(ConnectorError::new(format!(
                "unsupported feature: connector '{other}' as a sink (table '{}')",
                spec.table
            ))),
        },
    }
}

/// Fails for `METADATA` columns of connectors that provide no metadata (`readers`: the
/// connectors that read some).
fn reject_metadata(spec: &ConnectorSpec, readers: &[&str]) -> Result<()> {
    match spec.metadata.first() {
        Some(m) if !readers.contains(&spec.connector.as_str()) => {
            Err(ConnectorError::new(format!(
                "unsupported feature: METADATA columns of connector '{}' (column '{}' of table '{}')",
                spec.connector, m.column, spec.table
            )))
        }
        _ => Ok(()),
    }
}

/// Fails for a `PARTITIONED BY` sink of a connector that cannot write partitions (Flink's
/// `print`, `blackhole` and `filesystem` sinks can; the others cannot).
fn reject_partitions(spec: &ConnectorSpec) -> Result<()> {
    let partitioning = ["filesystem", "print", "blackhole"];
    if spec.partition_keys.is_empty() || partitioning.contains(&spec.connector.as_str()) {
        return Ok(());
    }
    Err(ConnectorError::new(format!(
        "Table '{}' is a partitioned table, but the underlying DynamicTableSink doesn't implement the SupportsPartitioning interface.",
        spec.table
    )))
}

/// Checks the metadata keys of `spec` against connector `connector`'s data (`dialects/`)
/// and what its reader implements (`implemented`); returns the columns in order.
fn check_metadata_keys<'a>(
    spec: &'a ConnectorSpec,
    connector: &str,
    implemented: impl Fn(&str) -> bool,
) -> Result<Vec<&'a MetadataColumn>> {
    let schema = riffle_dialects::connector(connector).ok_or_else(|| {
        ConnectorError::new(format!(
            "the {connector} connector's data (dialects/) did not load"
        ))
    })?;
    spec.metadata
        .iter()
        .map(|m| match schema.metadata_key(&m.key) {
            Some(_) if implemented(&m.key) => Ok(m),
            _ => Err(ConnectorError::new(format!(
                "Invalid metadata key '{}' in column '{}' of table '{}'. The {connector} connector supports the following metadata keys for reading:\n{}",
                m.key,
                m.column,
                spec.table,
                schema
                    .metadata
                    .iter()
                    .map(|k| k.key.as_str())
                    .collect::<Vec<_>>()
                    .join("\n")
            ))),
        })
        .collect()
}
