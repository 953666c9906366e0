//! Sub-plan reuse: operators that compute the same rows from the same inputs run once, and
//! their consumers share the output.
//!
//! Flink does this by default (`table.optimizer.reuse-sub-plan-enabled`, and for sources
//! `table.optimizer.reuse-source-enabled`), and it is visible in results, not only in cost: a
//! `datagen` table read twice, or a view with `RAND()` joined with itself, sees the *same* rows
//! on both sides (the real Flink 2.3 oracle confirms it, see
//! `compat-tests/cases/joins/self_join_reuses_*`). Sinks are never merged: two INSERTs into
//! one table write twice.

use std::collections::HashMap;

use crate::graph::{Edge, JobGraph, OperatorId, OperatorKind};

/// `graph` with every operator that repeats an earlier one (same kind, parallelism, schema,
/// changelog and the same inputs, after their own merging) removed and its consumers fed by
/// the earlier one, as the job's `table.optimizer.reuse-*` options allow.
pub fn reuse_sub_plans(graph: JobGraph) -> JobGraph {
    let enabled = |key: &str| {
        graph
            .config
            .get(key)
            .is_none_or(|v| !v.trim().eq_ignore_ascii_case("false"))
    };
    let sub_plans = enabled("table.optimizer.reuse-sub-plan-enabled");
    let sources = sub_plans && enabled("table.optimizer.reuse-source-enabled");
    if !sub_plans {
        return graph;
    }
    // The operators are in topological order, so an operator's inputs are settled first.
    let mut canonical: Vec<OperatorId> = (0..graph.operators.len()).collect();
    let mut first_of: HashMap<String, OperatorId> = HashMap::new();
    for op in &graph.operators {
        let mergeable = match op.kind {
            OperatorKind::Sink { .. } => false,
            OperatorKind::Source { .. } => sources,
            _ => true,
        };
        if !mergeable {
            continue;
        }
        let inputs: Vec<_> = graph
            .inputs_of(op.id)
            .into_iter()
            .map(|e| (canonical[e.from], e.input, &e.partitioning, e.changelog))
            .collect();
        // The serialized form is the operator's whole definition (its expressions as SQL).
        let Ok(signature) =
            serde_json::to_string(&(&op.kind, op.parallelism, &op.schema, op.changelog, inputs))
        else {
            continue;
        };
        canonical[op.id] = *first_of.entry(signature).or_insert(op.id);
    }
    if canonical.iter().enumerate().all(|(i, c)| i == *c) {
        return graph;
    }
    let mut new_id: Vec<Option<OperatorId>> = vec![None; graph.operators.len()];
    let mut operators = Vec::new();
    for op in graph.operators {
        if canonical[op.id] == op.id {
            new_id[op.id] = Some(operators.len());
            operators.push(crate::graph::Operator {
                id: operators.len(),
                ..op
            });
        }
    }
    let edges = graph
        .edges
        .into_iter()
        .filter(|e| canonical[e.to] == e.to)
        .filter_map(|e| {
            Some(Edge {
                from: new_id[canonical[e.from]]?,
                to: new_id[e.to]?,
                ..e
            })
        })
        .collect();
    JobGraph {
        operators,
        edges,
        ..graph
    }
}
