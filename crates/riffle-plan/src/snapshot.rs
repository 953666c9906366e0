//! `table FOR SYSTEM_TIME AS OF left.time` as a DataFusion logical node.
//!
//! The relation is planned as it is, wrapped in a [`SnapshotNode`] that remembers the period
//! column; the join above it becomes a temporal join. The period names a column of the join's
//! left input, which the relation itself cannot resolve, so it is kept as identifier parts.

use std::cmp::Ordering;
use std::fmt;

use datafusion::common::{DFSchemaRef, Result as DfResult};
use datafusion::logical_expr::{Expr, LogicalPlan, UserDefinedLogicalNodeCore};

/// A versioned relation read as of the time of each row of the join's left input.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SnapshotNode {
    /// The versioned relation.
    pub input: LogicalPlan,
    /// The period column as identifier parts (`o.ots` is `["o", "ots"]`).
    pub period: Vec<String>,
}

impl PartialOrd for SnapshotNode {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        // Plans are only compared for deduplication; the period orders them.
        self.period.partial_cmp(&other.period)
    }
}

impl UserDefinedLogicalNodeCore for SnapshotNode {
    fn name(&self) -> &str {
        "Snapshot"
    }

    fn inputs(&self) -> Vec<&LogicalPlan> {
        vec![&self.input]
    }

    fn schema(&self) -> &DFSchemaRef {
        self.input.schema()
    }

    fn expressions(&self) -> Vec<Expr> {
        Vec::new()
    }

    fn fmt_for_explain(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "Snapshot: period={}", self.period.join("."))
    }

    fn with_exprs_and_inputs(
        &self,
        _exprs: Vec<Expr>,
        mut inputs: Vec<LogicalPlan>,
    ) -> DfResult<Self> {
        match inputs.pop() {
            Some(input) if inputs.is_empty() => Ok(Self {
                input,
                period: self.period.clone(),
            }),
            _ => datafusion::common::internal_err!("Snapshot takes exactly one input"),
        }
    }
}
