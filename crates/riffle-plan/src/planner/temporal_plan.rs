//! Planning of event-time temporal joins (`JOIN t FOR SYSTEM_TIME AS OF l.rowtime ON ...`).
//!
//! The right relation is planned under a [`SnapshotNode`]; the join above it becomes a
//! temporal join when the relation is a versioned table as Flink defines one: it has a primary
//! key (declared, or the partition key of a `ROW_NUMBER() ... = 1` deduplication) and a rowtime
//! attribute, and the join condition holds an equality on every primary key column. Shapes Flink
//! rejects fail with Flink's message.

use std::sync::Arc;

use datafusion::common::{Column, Result as DfResult};
use datafusion::logical_expr::planner::{
    PlannedRelation, RelationPlannerContext, RelationPlanning,
};
use datafusion::logical_expr::{Expr, Extension, Join, JoinType as DfJoinType, LogicalPlan};
use datafusion::sql::sqlparser::ast as sql;

use super::rank_plan::{first_row_filter, is_proctime};
use super::{df_error, plan_error, unsupported, Catalog, GraphBuilder, Node, PlanResult};
use crate::snapshot::SnapshotNode;

/// Plans `relation FOR SYSTEM_TIME AS OF period`: the relation as it is, under a snapshot.
pub(super) fn snapshot_relation(
    relation: sql::TableFactor,
    period: sql::Expr,
    context: &mut dyn RelationPlannerContext,
) -> DfResult<RelationPlanning> {
    let period = match period {
        sql::Expr::Identifier(i) => vec![i.value],
        sql::Expr::CompoundIdentifier(parts) => parts.into_iter().map(|i| i.value).collect(),
        _ => {
            return datafusion::common::not_impl_err!(
                "unsupported feature: FOR SYSTEM_TIME AS OF an expression"
            )
        }
    };
    let mut bare = relation;
    let alias = match &mut bare {
        sql::TableFactor::Table { version, alias, .. } => {
            *version = None;
            alias.take()
        }
        _ => None,
    };
    let input = context.plan(bare)?;
    let node = LogicalPlan::Extension(Extension {
        node: Arc::new(SnapshotNode { input, period }),
    });
    Ok(RelationPlanning::Planned(Box::new(PlannedRelation::new(
        node, alias,
    ))))
}

/// The snapshot a join's right input reads, if it is one.
pub(super) fn snapshot_of(plan: &LogicalPlan) -> Option<&SnapshotNode> {
    match plan {
        LogicalPlan::SubqueryAlias(a) => snapshot_of(&a.input),
        LogicalPlan::Extension(e) => e.node.as_any().downcast_ref::<SnapshotNode>(),
        _ => None,
    }
}

/// What makes a relation versioned: a unique key and a rowtime attribute (column indices).
#[derive(Default)]
struct Versioned {
    key: Option<Vec<usize>>,
    time: Option<usize>,
}

/// The primary key and rowtime attribute of `plan`'s rows, traced through the plan.
fn versioned(catalog: &Catalog, plan: &LogicalPlan) -> Versioned {
    match plan {
        LogicalPlan::SubqueryAlias(a) => versioned(catalog, &a.input),
        LogicalPlan::TableScan(scan) => {
            let Some(table) = catalog.tables.get(scan.table_name.table()) else {
                return Versioned::default();
            };
            let columns: Vec<usize> = match &scan.projection {
                Some(p) => p.clone(),
                None => (0..table.columns.len()).collect(),
            };
            let position = |name: &str| {
                let at = table.columns.iter().position(|c| c.name == name)?;
                columns.iter().position(|c| *c == at)
            };
            let key = &table.connector.primary_key;
            Versioned {
                key: (!key.is_empty())
                    .then(|| key.iter().map(|k| position(k)).collect::<Option<Vec<_>>>())
                    .flatten(),
                time: table
                    .columns
                    .iter()
                    .find(|c| c.rowtime)
                    .and_then(|c| position(&c.name)),
            }
        }
        LogicalPlan::Projection(p) => {
            let inner = versioned(catalog, &p.input);
            let output = |idx: usize| {
                p.expr.iter().position(|e| {
                    matches!(e.clone().unalias(), Expr::Column(c)
                        if p.input.schema().index_of_column(&c).ok() == Some(idx))
                })
            };
            Versioned {
                key: inner
                    .key
                    .and_then(|k| k.into_iter().map(output).collect::<Option<Vec<_>>>()),
                time: inner.time.and_then(output),
            }
        }
        LogicalPlan::Filter(f) => match first_row_filter(f) {
            Some(first) => {
                // A deduplication keeps one row per partition; ordered by the rowtime
                // attribute it keeps that attribute (Flink's versioned view).
                let inner = versioned(catalog, first.input);
                let time = inner
                    .time
                    .filter(|t| first.order == Some(*t))
                    .and_then(|t| first.output_column(t));
                Versioned {
                    key: first.key,
                    time,
                }
            }
            None => versioned(catalog, &f.input),
        },
        _ => Versioned::default(),
    }
}

/// The rowtime columns of a temporal join: the left input's and the right input's.
pub(super) struct TemporalTimes {
    pub(super) left: usize,
    pub(super) right: usize,
}

impl GraphBuilder<'_> {
    /// Checks a join against a snapshot as Flink does and finds its time columns;
    /// `right_keys` are the right sides of the condition's equalities.
    pub(super) fn temporal_times(
        &self,
        join: &Join,
        snapshot: &SnapshotNode,
        right_keys: &[&Expr],
        left: &Node,
    ) -> PlanResult<TemporalTimes> {
        let span = self.span;
        if !matches!(join.join_type, DfJoinType::Inner | DfJoinType::Left) {
            return Err(unsupported(
                format!(
                    "{} temporal joins (Flink has INNER and LEFT)",
                    join.join_type
                ),
                span,
            ));
        }
        let column = match snapshot.period.as_slice() {
            [name] => Column::from_name(name.clone()),
            // As written: a String would be parsed as an identifier and lower-cased.
            [relation, name] => Column::new(
                Some(datafusion::common::TableReference::bare(relation.clone())),
                name.clone(),
            ),
            _ => {
                return Err(unsupported(
                    "FOR SYSTEM_TIME AS OF a column of a qualified relation",
                    span,
                ))
            }
        };
        let left_time = join
            .left
            .schema()
            .index_of_column(&column)
            .map_err(|e| df_error(e, span))?;
        // Flink looks for a primary key among the right sides of the condition's equalities.
        let version = versioned(self.catalog, &snapshot.input);
        let right_schema = join.right.schema();
        let equal: Vec<usize> = right_keys
            .iter()
            .filter_map(|e| match e {
                Expr::Column(c) => right_schema.index_of_column(c).ok(),
                _ => None,
            })
            .collect();
        if !version
            .key
            .is_some_and(|key| key.iter().all(|k| equal.contains(k)))
        {
            return Err(plan_error(
                "Temporal Table Join requires primary key in versioned table, but no primary key \
                 can be found.",
                span,
            ));
        }
        if !left.fields.get(left_time).is_some_and(|f| f.rowtime) {
            return Err(plan_error(
                if is_proctime(self.catalog, &join.left, left_time) {
                    "Processing-time temporal join is not supported yet."
                } else {
                    "Temporal table join currently only supports 'FOR SYSTEM_TIME AS OF' left \
                     table's time attribute field"
                },
                span,
            ));
        }
        let Some(right_time) = version.time else {
            return Err(plan_error(
                "Event-Time Temporal Table Join requires both primary key and row time attribute \
                 in versioned table, but no row time attribute can be found.",
                span,
            ));
        };
        Ok(TemporalTimes {
            left: left_time,
            right: right_time,
        })
    }
}
