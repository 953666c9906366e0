//! Subqueries inside expressions: `x IN (SELECT ...)`, `EXISTS (...)` and quantified
//! comparisons (`x > ALL (...)`, `x <> SOME (...)`) anywhere but as a conjunct of a `WHERE`
//! (those become semi and anti joins, see `join::prepare`).
//!
//! Like Flink (Calcite's sub-query removal), each subquery becomes joins with aggregates of its
//! rows, and the expression a `CASE` over the joined columns that keeps SQL's three-valued
//! logic: `x IN (s)` is NULL when `x` is NULL or `s` holds a NULL and no equal value.
//!
//! * `x IN (s)`: a cross join with `(COUNT(*) c, COUNT(y) ck)` of `s`, then a left join with the
//!   distinct values of `s` on `x = y`;
//! * `EXISTS (s)`: a left join with `SELECT DISTINCT TRUE` of `s` (correlated: with the
//!   distinct inner sides of the correlating equalities, joined on the outer sides);
//! * `x op SOME (s)` for `<`, `<=`, `>`, `>=`: a cross join with the maximum (or minimum) and the
//!   counts of `s`; `=` is `IN`, `<>` counts the distinct values of `s`; `op ALL` is
//!   `NOT (x negated-op SOME s)`.
//!
//! The joined aggregates update as the subquery's input grows, so the results retract and
//! re-emit rows as Flink's do. Of the correlated subqueries in expressions only `EXISTS` whose
//! correlation is equalities in its `WHERE` is supported (the others are rejected).

use std::sync::Arc;

use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{not_impl_err, Column, Result as DfResult, ScalarValue};
use datafusion::functions_aggregate::expr_fn::{count, max, min};
use datafusion::logical_expr::expr::{Exists, InSubquery, SetComparison, SetQuantifier};
use datafusion::logical_expr::utils::{conjunction, split_conjunction_owned};
use datafusion::logical_expr::{
    lit, when, Expr, Filter, JoinType, LogicalPlan, LogicalPlanBuilder, Operator, Projection,
    Subquery,
};

/// Replaces every subquery inside an expression of `plan` (and of its subqueries) by joins.
pub(super) fn rewrite(plan: LogicalPlan) -> DfResult<LogicalPlan> {
    let mut aliases = Aliases::default();
    plan.transform_up_with_subqueries(|node| rewrite_node(node, &mut aliases))
        .map(|t| t.data)
}

/// Unique relation names for the joined subquery results.
#[derive(Default)]
struct Aliases(usize);

impl Aliases {
    fn next(&mut self) -> String {
        self.0 += 1;
        format!("__subquery_{}", self.0)
    }
}

fn rewrite_node(node: LogicalPlan, aliases: &mut Aliases) -> DfResult<Transformed<LogicalPlan>> {
    match node {
        LogicalPlan::Projection(p) if p.expr.iter().any(has_subquery) => {
            let mut input = Arc::unwrap_or_clone(p.input);
            let mut exprs = Vec::with_capacity(p.expr.len());
            for (expr, (qualifier, field)) in p.expr.into_iter().zip(p.schema.iter()) {
                if !has_subquery(&expr) {
                    exprs.push(expr);
                    continue;
                }
                let aliased = matches!(expr, Expr::Alias(_));
                let (joined, replaced) = replace_subqueries(input, expr, aliases)?;
                input = joined;
                // The column keeps its name (an unaliased expression would be renamed).
                exprs.push(if aliased {
                    replaced
                } else {
                    replaced.alias_qualified(qualifier.cloned(), field.name())
                });
            }
            let projection = Projection::try_new(exprs, Arc::new(input))?;
            Ok(Transformed::yes(LogicalPlan::Projection(projection)))
        }
        LogicalPlan::Filter(f) if has_subquery(&f.predicate) => {
            let (embedded, mut kept): (Vec<Expr>, Vec<Expr>) = split_conjunction_owned(f.predicate)
                .into_iter()
                .partition(|c| has_subquery(c) && !becomes_semi_join(c));
            if embedded.is_empty() {
                let predicate = conjunction(kept).unwrap_or_else(|| lit(true));
                let filter = Filter::try_new(predicate, f.input)?;
                return Ok(Transformed::no(LogicalPlan::Filter(filter)));
            }
            let columns: Vec<Expr> = f
                .input
                .schema()
                .columns()
                .into_iter()
                .map(Expr::from)
                .collect();
            let mut input = Arc::unwrap_or_clone(f.input);
            for conjunct in embedded {
                let (joined, replaced) = replace_subqueries(input, conjunct, aliases)?;
                input = joined;
                kept.push(replaced);
            }
            let predicate = conjunction(kept).unwrap_or_else(|| lit(true));
            // Back to the filter input's columns: the joined ones are the filter's own.
            let plan = LogicalPlanBuilder::from(input)
                .filter(predicate)?
                .project(columns)?
                .build()?;
            Ok(Transformed::yes(plan))
        }
        other => Ok(Transformed::no(other)),
    }
}

/// Whether the expression holds a subquery this module replaces.
fn has_subquery(expr: &Expr) -> bool {
    expr.exists(|e| {
        Ok(matches!(
            e,
            Expr::InSubquery(_) | Expr::Exists(_) | Expr::SetComparison(_)
        ))
    })
    .unwrap_or(false)
}

/// A `WHERE` conjunct DataFusion's decorrelation turns into a semi or anti join.
fn becomes_semi_join(conjunct: &Expr) -> bool {
    match conjunct {
        Expr::Not(inner) => matches!(inner.as_ref(), Expr::InSubquery(_) | Expr::Exists(_)),
        other => matches!(other, Expr::InSubquery(_) | Expr::Exists(_)),
    }
}

/// Joins what every subquery in `expr` needs to `input`; returns the joined plan and the
/// expression over its columns.
fn replace_subqueries(
    input: LogicalPlan,
    expr: Expr,
    aliases: &mut Aliases,
) -> DfResult<(LogicalPlan, Expr)> {
    let mut plan = input;
    let replaced = expr.transform_up(|e| {
        let (joined, replacement) = match e {
            Expr::InSubquery(InSubquery {
                expr,
                subquery,
                negated,
            }) => {
                let (joined, is_in) = in_subquery(plan.clone(), *expr, &subquery, aliases)?;
                (joined, negate_if(is_in, negated))
            }
            Expr::Exists(Exists { subquery, negated }) => {
                let (joined, exists) = exists(plan.clone(), &subquery, aliases)?;
                (joined, negate_if(exists, negated))
            }
            Expr::SetComparison(comparison) => set_comparison(plan.clone(), comparison, aliases)?,
            other => return Ok(Transformed::no(other)),
        };
        plan = joined;
        Ok(Transformed::yes(replacement))
    })?;
    Ok((plan, replaced.data))
}

fn negate_if(expr: Expr, negated: bool) -> Expr {
    if negated {
        Expr::Not(Box::new(expr))
    } else {
        expr
    }
}

fn null_boolean() -> Expr {
    lit(ScalarValue::Boolean(None))
}

/// The subquery's plan under a fresh relation name (its columns may share names with the
/// outer query's) and its first column.
fn subquery_relation(subquery: &Subquery, aliases: &mut Aliases) -> DfResult<(LogicalPlan, Expr)> {
    if !subquery.outer_ref_columns.is_empty() {
        return not_impl_err!("unsupported feature: correlated subqueries in expressions");
    }
    let name = aliases.next();
    let plan = LogicalPlanBuilder::from(subquery.subquery.as_ref().clone())
        .alias(name.as_str())?
        .build()?;
    let first = plan.schema().qualified_field(0);
    let value = Expr::Column(Column::from(first));
    Ok((plan, value))
}

/// A column of the relation named `relation`.
fn column(relation: &str, name: &str) -> Expr {
    Expr::Column(Column::new(Some(relation), name))
}

/// `input` cross-joined with one row of aggregates of `relation` (named `name`).
fn cross_join_aggregates(
    input: LogicalPlan,
    relation: LogicalPlan,
    aggregates: Vec<Expr>,
    name: &str,
) -> DfResult<LogicalPlan> {
    let aggregated = LogicalPlanBuilder::from(relation)
        .aggregate(Vec::<Expr>::new(), aggregates)?
        .alias(name)?
        .build()?;
    LogicalPlanBuilder::from(input)
        .cross_join(aggregated)?
        .build()
}

/// `value IN (subquery)`.
fn in_subquery(
    input: LogicalPlan,
    value: Expr,
    subquery: &Subquery,
    aliases: &mut Aliases,
) -> DfResult<(LogicalPlan, Expr)> {
    let (relation, element) = subquery_relation(subquery, aliases)?;
    let counts = aliases.next();
    let input = cross_join_aggregates(
        input,
        relation.clone(),
        vec![count(lit(1)).alias("c"), count(element.clone()).alias("ck")],
        &counts,
    )?;
    let distinct = aliases.next();
    let values = LogicalPlanBuilder::from(relation)
        .project([element.alias("v"), lit(true).alias("i")])?
        .distinct()?
        .alias(distinct.as_str())?
        .build()?;
    let joined = LogicalPlanBuilder::from(input)
        .join_on(
            values,
            JoinType::Left,
            [value.clone().eq(column(&distinct, "v"))],
        )?
        .build()?;
    let (c, ck) = (column(&counts, "c"), column(&counts, "ck"));
    let result = when(c.clone().eq(lit(0i64)), lit(false))
        .when(value.is_null(), null_boolean())
        .when(column(&distinct, "i").is_not_null(), lit(true))
        .when(ck.lt(c), null_boolean())
        .otherwise(lit(false))?;
    Ok((joined, result))
}

/// `EXISTS (subquery)`; correlated by equalities (`WHERE inner = outer AND ...`), the distinct
/// inner values are left-joined on the outer ones.
fn exists(
    input: LogicalPlan,
    subquery: &Subquery,
    aliases: &mut Aliases,
) -> DfResult<(LogicalPlan, Expr)> {
    let (rows, keys) = if subquery.outer_ref_columns.is_empty() {
        (subquery_relation(subquery, aliases)?.0, Vec::new())
    } else {
        equality_correlation(subquery.subquery.as_ref())?
    };
    let name = aliases.next();
    let key_names: Vec<String> = (0..keys.len()).map(|k| format!("k{k}")).collect();
    let mut marker_columns: Vec<Expr> = keys
        .iter()
        .zip(&key_names)
        .map(|((_, inner), key)| inner.clone().alias(key))
        .collect();
    marker_columns.push(lit(true).alias("i"));
    let marker = LogicalPlanBuilder::from(rows)
        .project(marker_columns)?
        .distinct()?
        .alias(name.as_str())?
        .build()?;
    let mut on: Vec<Expr> = keys
        .into_iter()
        .zip(&key_names)
        .map(|((outer, _), key)| outer.eq(column(&name, key)))
        .collect();
    if on.is_empty() {
        on.push(lit(true));
    }
    let joined = LogicalPlanBuilder::from(input)
        .join_on(marker, JoinType::Left, on)?
        .build()?;
    Ok((joined, column(&name, "i").is_not_null()))
}

/// A correlated `EXISTS` subquery (projections over a filter) as its rows without the
/// correlation, and the (outer, inner) expression pairs of its `outer = inner` conjuncts.
fn equality_correlation(plan: &LogicalPlan) -> DfResult<(LogicalPlan, Vec<(Expr, Expr)>)> {
    match plan {
        // The subquery's columns do not matter to EXISTS.
        LogicalPlan::Projection(p) => equality_correlation(&p.input),
        LogicalPlan::SubqueryAlias(a) => equality_correlation(&a.input),
        LogicalPlan::Filter(f) if !has_outer_reference(&f.input) => {
            let mut keys = Vec::new();
            let mut kept = Vec::new();
            for conjunct in split_conjunction_owned(f.predicate.clone()) {
                if !expr_has_outer_reference(&conjunct) {
                    kept.push(conjunct);
                    continue;
                }
                match correlation_pair(&conjunct) {
                    Some(pair) => keys.push(pair),
                    None => {
                        return not_impl_err!(
                            "unsupported feature: correlated subqueries in expressions (correlation other than equalities)"
                        )
                    }
                }
            }
            let rows = match conjunction(kept) {
                Some(predicate) => {
                    LogicalPlan::Filter(Filter::try_new(predicate, f.input.clone())?)
                }
                None => f.input.as_ref().clone(),
            };
            Ok((rows, keys))
        }
        _ => not_impl_err!("unsupported feature: correlated subqueries in expressions"),
    }
}

/// `outer = inner` (either way round) as (outer over plain columns, inner).
fn correlation_pair(conjunct: &Expr) -> Option<(Expr, Expr)> {
    let Expr::BinaryExpr(datafusion::logical_expr::BinaryExpr {
        left,
        op: Operator::Eq,
        right,
    }) = conjunct
    else {
        return None;
    };
    let only_outer = |e: &Expr| expr_has_outer_reference(e) && e.column_refs().is_empty();
    let only_inner = |e: &Expr| !expr_has_outer_reference(e) && !e.column_refs().is_empty();
    let (outer, inner) = if only_outer(left) && only_inner(right) {
        (left, right)
    } else if only_outer(right) && only_inner(left) {
        (right, left)
    } else {
        return None;
    };
    let outer = outer
        .as_ref()
        .clone()
        .transform(|e| match e {
            Expr::OuterReferenceColumn(_, c) => Ok(Transformed::yes(Expr::Column(c))),
            other => Ok(Transformed::no(other)),
        })
        .ok()?
        .data;
    Some((outer, inner.as_ref().clone()))
}

fn expr_has_outer_reference(e: &Expr) -> bool {
    e.exists(|e| Ok(matches!(e, Expr::OuterReferenceColumn(..))))
        .unwrap_or(true)
}

fn has_outer_reference(plan: &LogicalPlan) -> bool {
    !plan.all_out_ref_exprs().is_empty()
}

/// `value op ANY / SOME / ALL (subquery)`.
fn set_comparison(
    input: LogicalPlan,
    comparison: SetComparison,
    aliases: &mut Aliases,
) -> DfResult<(LogicalPlan, Expr)> {
    let SetComparison {
        expr,
        subquery,
        op,
        quantifier,
    } = comparison;
    // `x op ALL (s)` is `NOT (x negated-op SOME (s))`.
    let (op, negated) = match quantifier {
        SetQuantifier::Any => (op, false),
        SetQuantifier::All => match op.negate() {
            Some(negated_op) => (negated_op, true),
            None => return not_impl_err!("unsupported feature: {op} ALL (subquery)"),
        },
    };
    let (joined, some) = match op {
        Operator::Eq => in_subquery(input, *expr, &subquery, aliases)?,
        Operator::NotEq => not_equal_some(input, *expr, &subquery, aliases)?,
        Operator::Lt | Operator::LtEq | Operator::Gt | Operator::GtEq => {
            ordered_some(input, *expr, op, &subquery, aliases)?
        }
        other => return not_impl_err!("unsupported feature: {other} SOME (subquery)"),
    };
    Ok((joined, negate_if(some, negated)))
}

/// `value op SOME (subquery)` for an order comparison: against the subquery's maximum for `<`
/// and `<=`, its minimum for `>` and `>=`.
fn ordered_some(
    input: LogicalPlan,
    value: Expr,
    op: Operator,
    subquery: &Subquery,
    aliases: &mut Aliases,
) -> DfResult<(LogicalPlan, Expr)> {
    let (relation, element) = subquery_relation(subquery, aliases)?;
    let extreme = match op {
        Operator::Lt | Operator::LtEq => max(element.clone()),
        _ => min(element.clone()),
    };
    let name = aliases.next();
    let joined = cross_join_aggregates(
        input,
        relation,
        vec![
            extreme.alias("m"),
            count(lit(1)).alias("c"),
            count(element).alias("d"),
        ],
        &name,
    )?;
    let (m, c, d) = (column(&name, "m"), column(&name, "c"), column(&name, "d"));
    let compared = Expr::BinaryExpr(datafusion::logical_expr::BinaryExpr::new(
        Box::new(value),
        op,
        Box::new(m),
    ));
    let result = when(c.clone().eq(lit(0i64)), lit(false))
        .when(compared.clone().is_true(), lit(true))
        .when(c.gt(d), null_boolean())
        .otherwise(compared)?;
    Ok((joined, result))
}

/// `value <> SOME (subquery)`: true once the subquery holds a non-NULL value other than `value`.
///
/// Over the subquery's distinct values `c = COUNT(*)`, `d = COUNT(y)` and `m = MAX(y)`: FALSE
/// when `c = 0`, UNKNOWN for a NULL `value`, `value <> m OR UNKNOWN` when there is a NULL and at
/// most one other value, `value <> m` for one value, TRUE otherwise. Flink (Calcite's sub-query
/// removal) looks `c` and `d` up by name in the joined row, so the first columns so named win:
/// the outer query's own `c` / `d`, or those of an earlier subquery's aggregates.
fn not_equal_some(
    input: LogicalPlan,
    value: Expr,
    subquery: &Subquery,
    aliases: &mut Aliases,
) -> DfResult<(LogicalPlan, Expr)> {
    let (relation, element) = subquery_relation(subquery, aliases)?;
    let relation = LogicalPlanBuilder::from(relation)
        .project([element.clone()])?
        .distinct()?
        .build()?;
    let name = aliases.next();
    let joined = cross_join_aggregates(
        input,
        relation,
        vec![
            count(lit(1)).alias("c"),
            count(element.clone()).alias("d"),
            max(element).alias("m"),
        ],
        &name,
    )?;
    let by_name = |field: &str| {
        joined
            .schema()
            .iter()
            .find(|(_, f)| f.name() == field)
            .map(|(qualifier, f)| Expr::Column(Column::new(qualifier.cloned(), f.name())))
            .unwrap_or_else(|| column(&name, field))
    };
    let (c, d, m) = (by_name("c"), by_name("d"), column(&name, "m"));
    let differs = value.clone().not_eq(m);
    let result = when(c.clone().eq(lit(0i64)), lit(false))
        .when(value.is_null(), null_boolean())
        .when(
            c.not_eq(d.clone()).and(d.clone().lt_eq(lit(1i64))),
            differs.clone().or(null_boolean()),
        )
        .when(d.eq(lit(1i64)), differs)
        .otherwise(lit(true))?;
    Ok((joined, result))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::datatypes::{DataType, Field, Schema};
    use datafusion::logical_expr::expr_fn::{col, exists, in_subquery, not_exists};
    use datafusion::logical_expr::{out_ref_col, table_scan};

    fn table(name: &str, columns: &[&str]) -> LogicalPlan {
        let fields: Vec<Field> = columns
            .iter()
            .map(|c| Field::new(*c, DataType::Int32, true))
            .collect();
        table_scan(Some(name), &Schema::new(fields), None)
            .and_then(|b| b.build())
            .expect("scan")
    }

    fn s() -> Arc<LogicalPlan> {
        let plan = LogicalPlanBuilder::from(table("s", &["y"]))
            .project([col("s.y")])
            .and_then(|b| b.build())
            .expect("subquery");
        Arc::new(plan)
    }

    /// `t.x <op> <quantifier> (SELECT y FROM s)`.
    fn x_compared_with_s(op: Operator, quantifier: SetQuantifier) -> Expr {
        Expr::SetComparison(SetComparison::new(
            Box::new(col("t.x")),
            Subquery {
                subquery: s(),
                outer_ref_columns: vec![],
                spans: Default::default(),
            },
            op,
            quantifier,
        ))
    }

    fn rewritten(plan: LogicalPlan) -> String {
        rewrite(plan).expect("rewrite").display_indent().to_string()
    }

    #[test]
    fn in_in_a_projection_joins_counts_and_values() {
        let plan = LogicalPlanBuilder::from(table("t", &["x", "y"]))
            .project([col("t.x"), in_subquery(col("t.x"), s()).alias("found")])
            .and_then(|b| b.build())
            .expect("plan");
        insta::assert_snapshot!(rewritten(plan));
    }

    #[test]
    fn embedded_filter_subqueries_are_replaced_and_where_conjuncts_kept() {
        let all = x_compared_with_s(Operator::Gt, SetQuantifier::All);
        let plan = LogicalPlanBuilder::from(table("t", &["x", "y"]))
            .filter(
                all.or(col("t.y").eq(lit(1)))
                    .and(in_subquery(col("t.x"), s())),
            )
            .and_then(|b| b.build())
            .expect("plan");
        insta::assert_snapshot!(rewritten(plan));
    }

    #[test]
    fn exists_and_not_equal_some_in_a_projection() {
        let some = x_compared_with_s(Operator::NotEq, SetQuantifier::Any);
        let plan = LogicalPlanBuilder::from(table("t", &["x", "y"]))
            .project([
                not_exists(s()).alias("e"),
                some.alias("n"),
                exists(s()).alias("p"),
            ])
            .and_then(|b| b.build())
            .expect("plan");
        insta::assert_snapshot!(rewritten(plan));
    }

    #[test]
    fn correlated_exists_joins_distinct_inner_keys() {
        let correlated = LogicalPlanBuilder::from(table("s", &["y"]))
            .filter(
                out_ref_col(DataType::Int32, "t.y")
                    .eq(col("s.y"))
                    .and(col("s.y").gt(lit(0))),
            )
            .and_then(|b| b.project([lit(1)]))
            .and_then(|b| b.build())
            .expect("subquery");
        let plan = LogicalPlanBuilder::from(table("t", &["x", "y"]))
            .project([col("t.x"), exists(Arc::new(correlated)).alias("found")])
            .and_then(|b| b.build())
            .expect("plan");
        insta::assert_snapshot!(rewritten(plan));
    }

    #[test]
    fn correlated_subqueries_in_expressions_are_rejected() {
        let correlated = LogicalPlanBuilder::from(table("s", &["y"]))
            .filter(col("s.y").eq(out_ref_col(DataType::Int32, "t.y")))
            .and_then(|b| b.project([col("s.y")]))
            .and_then(|b| b.build())
            .expect("subquery");
        let plan = LogicalPlanBuilder::from(table("t", &["x", "y"]))
            .project([in_subquery(col("t.x"), Arc::new(correlated)).alias("found")])
            .and_then(|b| b.build())
            .expect("plan");
        let error = rewrite(plan).expect_err("correlated").to_string();
        assert!(
            error.contains("correlated subqueries in expressions"),
            "{error}"
        );
    }
}
