//! The `print` connector and the stdout sink of bare queries.
//!
//! Each row is one line in Flink's format (see [`crate::format`]), prefixed as Flink's print sink
//! prefixes it: `identifier> ` with `print-identifier`, the 1-based subtask index (`2> `) when the
//! sink runs with parallelism above 1, both as `identifier:2> `.

use std::io::Write;

use arrow::array::Array;
use std::sync::{Arc, Mutex};

use riffle_plan::{ConnectorSpec, Field};

use crate::format::{write_row, write_value};
use crate::options::Options;
use crate::{ChangeBatch, ConnectorError, Result, RowKind, SinkWriter, SubtaskInfo};

/// Where printed lines go.
#[derive(Debug, Clone, Default)]
pub enum PrintTarget {
    /// The process's stdout (or stderr with `'standard-error' = 'true'`).
    #[default]
    Stdout,
    /// An in-memory list of lines (tests, conformance runs).
    Capture(Arc<Mutex<Vec<String>>>),
    /// Query results as structured rows, streamed to a client (the SQL REPL, the server).
    /// `print` sinks still write to stdout.
    Rows(ResultSender),
}

/// One change of a query result: its kind and each value in Flink's text rendering
/// (`None` for NULL).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResultRow {
    /// `+I`, `-U`, `+U` or `-D`.
    pub kind: RowKind,
    /// The row's values, in the query's column order.
    pub values: Vec<Option<String>>,
}

/// Where a query's [`ResultRow`]s go. Unbounded: the sink never blocks a runtime thread on a
/// slow client; a client that goes away simply stops receiving.
pub type ResultSender = tokio::sync::mpsc::UnboundedSender<ResultRow>;

/// Opens a `print` sink subtask.
pub fn open_sink(
    spec: &ConnectorSpec,
    _fields: &[Field],
    subtask: SubtaskInfo,
    target: &PrintTarget,
) -> Result<Box<dyn SinkWriter>> {
    let mut options = Options::new(spec);
    let identifier = options.get("print-identifier").unwrap_or("").to_string();
    let stderr = options.bool("standard-error", false)?;
    options.accept("sink.parallelism");
    options.finish()?;
    Ok(Box::new(PrintSink {
        prefix: prefix(&identifier, subtask),
        stderr,
        target: target.clone(),
        line: String::new(),
        rows: None,
    }))
}

/// Opens the sink of a bare query: rows without prefix, or structured rows to a client.
pub fn open_collect(
    _fields: &[Field],
    _subtask: SubtaskInfo,
    target: &PrintTarget,
) -> Result<Box<dyn SinkWriter>> {
    Ok(Box::new(PrintSink {
        prefix: String::new(),
        stderr: false,
        target: target.clone(),
        line: String::new(),
        rows: match target {
            PrintTarget::Rows(sender) => Some(sender.clone()),
            _ => None,
        },
    }))
}

/// Flink's print prefix.
pub fn prefix(identifier: &str, subtask: SubtaskInfo) -> String {
    let mut p = identifier.to_string();
    if subtask.parallelism > 1 {
        if !p.is_empty() {
            p.push(':');
        }
        p.push_str(&(subtask.index + 1).to_string());
    }
    if !p.is_empty() {
        p.push_str("> ");
    }
    p
}

struct PrintSink {
    prefix: String,
    stderr: bool,
    target: PrintTarget,
    line: String,
    /// Set for a query's results streamed to a client.
    rows: Option<ResultSender>,
}

impl SinkWriter for PrintSink {
    fn write(&mut self, batch: &ChangeBatch) -> Result<()> {
        if let Some(sender) = &self.rows {
            send_rows(sender, batch);
            return Ok(());
        }
        self.line.clear();
        for row in 0..batch.num_rows() {
            self.line.push_str(&self.prefix);
            write_row(&mut self.line, batch.kind(row), &batch.batch, row);
            self.line.push('\n');
        }
        if let PrintTarget::Capture(lines) = &self.target {
            let mut lines = lines
                .lock()
                .map_err(|_| ConnectorError::new("print capture poisoned"))?;
            lines.extend(self.line.lines().map(str::to_string));
            return Ok(());
        }
        // One locked write per batch keeps lines of parallel subtasks whole.
        let result = if self.stderr {
            std::io::stderr().lock().write_all(self.line.as_bytes())
        } else {
            let mut out = std::io::stdout().lock();
            out.write_all(self.line.as_bytes())
                .and_then(|_| out.flush())
        };
        result.map_err(|e| ConnectorError::new(format!("print sink: {e}")))
    }

    fn finish(&mut self) -> Result<()> {
        std::io::stdout()
            .flush()
            .map_err(|e| ConnectorError::new(format!("print sink: {e}")))
    }
}

/// Sends every row of `batch`; rows for a client that went away are dropped (the client's
/// session stops the query).
fn send_rows(sender: &ResultSender, batch: &ChangeBatch) {
    for row in 0..batch.num_rows() {
        let values = batch
            .batch
            .columns()
            .iter()
            .map(|column| {
                (!column.is_null(row)).then(|| {
                    let mut value = String::new();
                    write_value(&mut value, column.as_ref(), row);
                    value
                })
            })
            .collect();
        let sent = sender.send(ResultRow {
            kind: batch.kind(row),
            values,
        });
        if sent.is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_follow_flink() {
        let one = SubtaskInfo {
            index: 0,
            parallelism: 1,
            earlier_reads: 0,
        };
        let second = SubtaskInfo {
            index: 1,
            parallelism: 2,
            earlier_reads: 0,
        };
        assert_eq!(prefix("", one), "");
        assert_eq!(prefix("ident", one), "ident> ");
        assert_eq!(prefix("", second), "2> ");
        assert_eq!(prefix("ident", second), "ident:2> ");
    }
}
