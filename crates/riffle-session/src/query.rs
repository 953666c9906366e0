//! A running `SELECT`: its columns, and its changelog as it is produced.

use riffle_connectors::print::ResultRow;
use riffle_runtime::{RuntimeError, StopHandle};
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::task::JoinHandle;

/// A column of a query's result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueryColumn {
    /// Column name.
    pub name: String,
    /// Flink type (`BIGINT NOT NULL`, `STRING`, ...).
    pub data_type: String,
}

/// A query running on the session's runtime. Dropping the handle does not stop the query;
/// [`QueryHandle::cancel`] does.
pub struct QueryHandle {
    /// The result's columns.
    pub columns: Vec<QueryColumn>,
    /// Changes of the result, in order; closed once the query ended.
    pub rows: UnboundedReceiver<ResultRow>,
    /// The query's end: `Ok` when its bounded inputs ended or it was cancelled.
    pub done: JoinHandle<Result<(), RuntimeError>>,
    pub(crate) stop: StopHandle,
}

impl QueryHandle {
    /// Stops the query: its sources stop reading and what is in flight drains.
    pub fn cancel(&self) {
        self.stop.stop();
    }

    /// A handle that cancels the query from elsewhere (a Ctrl-C watcher, a client's disconnect).
    pub fn stop_handle(&self) -> StopHandle {
        self.stop.clone()
    }
}
