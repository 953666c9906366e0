//! Riffle's streaming planner.
//!
//! [`plan_script`] turns a parsed Flink SQL script into a [`JobGraph`]: plain, serializable data
//! (operators with parallelism, edges forward / hash / broadcast, changelog mode per edge, SQL
//! expressions as text) that `riffle explain` prints and `riffle-runtime` runs. Expressions are
//! typed and coerced with DataFusion in a [`FlinkSession`], the same session configuration the
//! runtime compiles them with.

#![warn(missing_docs)]

mod checks;
pub mod correlate;
pub mod explain;
mod fetch;
mod functions;
pub mod graph;
pub mod java_hash;
pub mod java_text;
mod legacy;
pub mod match_recognize;
pub mod over;
mod planner;
pub mod rank;
mod read_columns;
mod reuse;
pub mod rust_udf;
pub mod session;
mod slicing;
pub mod snapshot;
pub mod types;
pub mod udf;
pub mod window;

pub use functions::{decimal_of_double, double_of_decimal, now_ms, LocalZone};
pub use graph::{
    arrow_schema, join_fields, AggregateCall, AggregateFunction, ChangelogMode, ConnectorSpec,
    Edge, Field, JobGraph, JoinSpec, JoinType, MetadataColumn, NamedExpr, Operator, OperatorId,
    OperatorKind, Partitioning, SharedSlices, SliceTriggers, SortKey, UserAggregate, WindowSpec,
};
pub use planner::{plan_analyzed, plan_script, COLLECT_CONNECTOR, PLAN_ERROR, UNSUPPORTED};
pub use session::FlinkSession;

/// Parses, validates and plans a Flink SQL script. Parse errors, the errors Flink's validation
/// would raise (from the catalog analysis, with Flink's messages) and planning errors (including
/// unsupported features) come back as diagnostics located in `sql`, in that order of precedence:
/// a job Flink rejects is reported as Flink reports it, not as a feature Riffle lacks.
pub fn plan_sql(sql: &str) -> Result<JobGraph, Vec<riffle_sql::Diagnostic>> {
    let parsed = riffle_sql::parse_script(sql);
    let errors = |diagnostics: Vec<riffle_sql::Diagnostic>| -> Vec<riffle_sql::Diagnostic> {
        diagnostics
            .into_iter()
            .filter(|d| d.severity == riffle_sql::Severity::Error)
            .collect()
    };
    let parse_errors = errors(parsed.diagnostics);
    if !parse_errors.is_empty() {
        return Err(parse_errors);
    }
    let analysis = riffle_catalog::analyze(&parsed.script);
    let invalid = errors(analysis.diagnostics.clone());
    if !invalid.is_empty() {
        return Err(invalid);
    }
    plan_analyzed(&parsed.script, &analysis)
}
