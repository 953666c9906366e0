//! A Riffle SQL session, as Flink's SQL client has one: statements are executed one at a time
//! against a session catalog (`CREATE TABLE/VIEW/FUNCTION`, `SET`), `INSERT`s run as background
//! jobs, and a `SELECT` streams its changelog back to the caller.
//!
//! `riffle sql` (the REPL) and `riffle serve` (the REST service) both drive a [`Session`]; how
//! results are shown is theirs, except [`materialize::MaterializedTable`], the `table` result
//! mode's changelog applied to a set of rows, which both use.

#![warn(missing_docs)]

pub mod catalog;
pub mod jobs;
pub mod materialize;
pub mod query;
pub mod session;
pub mod split;

pub use jobs::{JobInfo, JobRegistry, JobStatus};
pub use query::{QueryColumn, QueryHandle};
pub use riffle_connectors::print::ResultRow;
pub use riffle_connectors::RowKind;
pub use session::{Outcome, Session, SessionError};
pub use split::StatementSplitter;
