//! `INTERSECT ALL` and `EXCEPT ALL`, planned as Flink plans them: both inputs tagged with a
//! per-side counter and unioned, the rows counted per side by an aggregation, and each
//! distinct row replicated as many times as the result keeps it — `min(m, n)` for
//! `INTERSECT ALL`, `m - n` for `EXCEPT ALL` — by a correlate with `REPLICATE_ROWS`.
//!
//! DataFusion plans both as a semi (anti) join on every column with NULL equal to NULL whose
//! left input is not made distinct; those joins are replaced before translation.

use std::sync::Arc;

use datafusion::common::tree_node::Transformed;
use datafusion::common::{Column, NullEquality, Result as DfResult};
use datafusion::functions_aggregate::expr_fn::sum;
use datafusion::logical_expr::{
    cast, col, lit, when, Expr, ExprSchemable, Extension, Join, JoinType, LogicalPlan,
    LogicalPlanBuilder,
};

use crate::correlate::TableFunctionNode;

/// Replaces the `INTERSECT ALL` / `EXCEPT ALL` joins in `plan`.
pub(super) fn rewrite(plan: LogicalPlan) -> DfResult<LogicalPlan> {
    plan.transform_up_with_subqueries(|node| match node {
        LogicalPlan::Join(join) if is_set_operation_all(&join) => {
            set_operation_all(join).map(Transformed::yes)
        }
        other => Ok(Transformed::no(other)),
    })
    .map(|t| t.data)
}

/// The join DataFusion plans for `INTERSECT ALL` (semi) or `EXCEPT ALL` (anti).
fn is_set_operation_all(join: &Join) -> bool {
    matches!(join.join_type, JoinType::LeftSemi | JoinType::LeftAnti)
        && join.null_equality == NullEquality::NullEqualsNull
        && join.filter.is_none()
        && join.on.len() == join.left.schema().fields().len()
        && !matches!(join.left.as_ref(), LogicalPlan::Distinct(_))
}

const LEFT_COUNT: &str = "__left_count";
const RIGHT_COUNT: &str = "__right_count";
const COPIES: &str = "__copies";

/// The replacement of a set operation join: counts per row and side, replicated.
fn set_operation_all(join: Join) -> DfResult<LogicalPlan> {
    let intersect = join.join_type == JoinType::LeftSemi;
    let output = join.schema.clone();
    let left = Arc::unwrap_or_clone(join.left);
    let right = Arc::unwrap_or_clone(join.right);
    let names: Vec<String> = (0..output.fields().len())
        .map(|i| format!("__c{i}"))
        .collect();
    // Each side's columns (the right's cast to the left's types) and its counter columns.
    let tagged = |plan: LogicalPlan, counters: (i64, i64)| -> DfResult<LogicalPlan> {
        let mut exprs = Vec::with_capacity(names.len() + 2);
        for ((column, target), name) in plan
            .schema()
            .columns()
            .into_iter()
            .zip(output.fields())
            .zip(&names)
        {
            let value = Expr::Column(column);
            let typed = match value.get_type(plan.schema())? {
                t if &t == target.data_type() => value,
                _ => cast(value, target.data_type().clone()),
            };
            exprs.push(typed.alias(name));
        }
        exprs.push(lit(counters.0).alias(LEFT_COUNT));
        exprs.push(lit(counters.1).alias(RIGHT_COUNT));
        LogicalPlanBuilder::from(plan).project(exprs)?.build()
    };
    let left = tagged(left, (1, 0))?;
    let right = tagged(right, (0, 1))?;
    let (left_count, right_count) = (col(LEFT_COUNT), col(RIGHT_COUNT));
    let counted = LogicalPlanBuilder::from(left).union(right)?.aggregate(
        names.iter().map(|n| col(n.as_str())),
        [
            sum(left_count.clone()).alias(LEFT_COUNT),
            sum(right_count.clone()).alias(RIGHT_COUNT),
        ],
    )?;
    let (kept, copies) = if intersect {
        (
            left_count
                .clone()
                .gt_eq(lit(1i64))
                .and(right_count.clone().gt_eq(lit(1i64))),
            when(left_count.clone().gt(right_count.clone()), right_count).otherwise(left_count)?,
        )
    } else {
        let difference = left_count - right_count;
        (difference.clone().gt(lit(0i64)), difference)
    };
    let mut columns: Vec<Expr> = names.iter().map(|n| col(n.as_str())).collect();
    columns.push(copies.alias(COPIES));
    let counted = counted.filter(kept)?.project(columns)?.build()?;
    let copies_field = counted
        .schema()
        .field_with_unqualified_name(COPIES)?
        .clone();
    let replicate = TableFunctionNode::replicate(Expr::OuterReferenceColumn(
        copies_field,
        Column::from_name(COPIES),
    ))?;
    // The result columns under the names and relations of the set operation's output.
    let renamed = names
        .iter()
        .zip(output.iter())
        .map(|(name, (qualifier, field))| {
            col(name.as_str()).alias_qualified(qualifier.cloned(), field.name())
        });
    LogicalPlanBuilder::from(counted)
        .cross_join(LogicalPlan::Extension(Extension {
            node: Arc::new(replicate),
        }))?
        .project(renamed)?
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::datatypes::{DataType, Field, Schema};
    use datafusion::logical_expr::table_scan;

    fn table(name: &str, t: DataType) -> LogicalPlan {
        let schema = Schema::new(vec![Field::new("id", t, true)]);
        table_scan(Some(name), &schema, None)
            .and_then(|b| b.build())
            .expect("scan")
    }

    fn rewritten(all: bool, intersect: bool) -> String {
        let (a, b) = (table("a", DataType::Int32), table("b", DataType::Int64));
        let b = LogicalPlanBuilder::from(b)
            .project([cast(col("b.id"), DataType::Int32).alias("id")])
            .and_then(|p| p.build())
            .expect("project");
        let plan = if intersect {
            LogicalPlanBuilder::intersect(a, b, all)
        } else {
            LogicalPlanBuilder::except(a, b, all)
        }
        .expect("set operation");
        rewrite(plan).expect("rewrite").display_indent().to_string()
    }

    #[test]
    fn intersect_all_replicates_the_smaller_count() {
        insta::assert_snapshot!(rewritten(true, true));
    }

    #[test]
    fn except_all_replicates_the_difference() {
        insta::assert_snapshot!(rewritten(true, false));
    }

    #[test]
    fn distinct_set_operations_stay_joins() {
        let plan = rewritten(false, true);
        assert!(plan.contains("LeftSemi Join"), "{plan}");
        assert!(!plan.contains(COPIES), "{plan}");
    }
}
