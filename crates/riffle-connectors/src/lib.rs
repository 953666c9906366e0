//! Riffle's connectors and formats.
//!
//! Sources produce Arrow [`RecordBatch`]es of a table's physical columns; sinks consume
//! [`ChangeBatch`]es (rows plus their change kind). Every connector reads Flink's option names
//! from the table's `WITH` clause ([`ConnectorSpec`]); an invalid option is reported when the
//! connector is opened, which the runtime does for every connector before the job starts.
//!
//! Connectors: `filesystem` (formats `csv` and `json`, source and sink), `datagen`, `print`,
//! `blackhole`, `rocketmq` (source and sink on the embedded topic store; formats `json`, `csv`,
//! `raw`).

#![warn(missing_docs)]

pub mod blackhole;
pub mod csv;
pub mod datagen;
pub mod filesystem;
pub mod format;
pub mod json;
pub mod options;
pub mod print;
pub mod rocketmq;
pub mod rows;
mod text;

use std::fmt;
use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use riffle_plan::{ConnectorSpec, Field};

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
pub trait SourceReader: Send {
    /// The next batch, or `None` when the (bounded) input is exhausted.
    fn next_batch(&mut self) -> Result<Option<RecordBatch>>;
}

/// A writer of one sink subtask.
pub trait SinkWriter: Send {
    /// Writes rows with their change kinds.
    fn write(&mut self, batch: &ChangeBatch) -> Result<()>;
    /// Flushes and closes the sink at the end of a bounded job.
    fn finish(&mut self) -> Result<()>;
}

/// Where a subtask stands among its operator's subtasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SubtaskInfo {
    /// 0-based subtask index.
    pub index: usize,
    /// Number of subtasks.
    pub parallelism: usize,
}

/// Rows per batch sources aim for.
pub const BATCH_SIZE: usize = 8192;

/// Opens a source subtask for a table's physical columns (`schema`).
pub fn open_source(
    spec: &ConnectorSpec,
    schema: SchemaRef,
    subtask: SubtaskInfo,
) -> Result<Box<dyn SourceReader>> {
    reject_metadata(spec)?;
    match spec.connector.as_str() {
        "filesystem" => filesystem::open_source(spec, schema, subtask),
        "datagen" => datagen::open_source(spec, schema, subtask),
        rocketmq::options::CONNECTOR => rocketmq::source::open_source(spec, schema, subtask),
        other => Err(ConnectorError::new(format!(
            "unsupported feature: connector '{other}' as a source (table '{}')",
            spec.table
        ))),
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
    reject_metadata(spec)?;
    match spec.connector.as_str() {
        "print" => print::open_sink(spec, fields, subtask, target),
        riffle_plan::COLLECT_CONNECTOR => print::open_collect(fields, subtask, target),
        "blackhole" => blackhole::open_sink(spec),
        "filesystem" => filesystem::open_sink(spec, fields, subtask),
        rocketmq::options::CONNECTOR => rocketmq::sink::open_sink(spec, fields, subtask),
        other => Err(ConnectorError::new(format!(
            "unsupported feature: connector '{other}' as a sink (table '{}')",
            spec.table
        ))),
    }
}

/// Fails for `METADATA` columns of connectors that provide no metadata.
fn reject_metadata(spec: &ConnectorSpec) -> Result<()> {
    match spec.metadata.first() {
        Some(m) if spec.connector != rocketmq::options::CONNECTOR => {
            Err(ConnectorError::new(format!(
                "unsupported feature: METADATA columns of connector '{}' (column '{}' of table '{}')",
                spec.connector, m.column, spec.table
            )))
        }
        _ => Ok(()),
    }
}
