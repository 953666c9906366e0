//! Planning of table functions in `FROM` (`UNNEST`, `LATERAL TABLE(f(x))`) and of the joins
//! that correlate them with the rows on their left (see [`crate::correlate`]).

use std::sync::Arc;

use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{DFSchema, Result as DfResult, ScalarValue};
use datafusion::logical_expr::planner::{
    PlannedRelation, RelationPlannerContext, RelationPlanning,
};
use datafusion::logical_expr::utils::conjunction;
use datafusion::logical_expr::{
    Expr, Extension, Join, JoinType as DfJoinType, LogicalPlan, UserDefinedLogicalNodeCore,
};
use datafusion::sql::sqlparser::ast as sql;

use super::{
    check_functions, df_error, unsupported, FlinkRelations, GraphBuilder, Node, PlanResult,
};
use crate::correlate::{CorrelateSpec, TableFunctionNode};
use crate::graph::{join_fields, Field, OperatorKind, Partitioning};

/// The arguments of a function call in `FROM`.
fn call_args(args: &[sql::FunctionArg]) -> DfResult<Vec<sql::Expr>> {
    args.iter()
        .map(|a| match a {
            sql::FunctionArg::Unnamed(sql::FunctionArgExpr::Expr(e)) => Ok(e.clone()),
            other => datafusion::common::not_impl_err!(
                "unsupported feature: table function argument {other}"
            ),
        })
        .collect()
}

/// The function call of `[LATERAL] TABLE(f(x))`.
fn inner_call(args: &[sql::FunctionArg]) -> Option<&sql::Function> {
    match args {
        [sql::FunctionArg::Unnamed(sql::FunctionArgExpr::Expr(sql::Expr::Function(f)))] => Some(f),
        _ => None,
    }
}

/// The table alias without its column list (the planner applies the column names itself) and
/// the column names.
fn split_alias(alias: Option<sql::TableAlias>) -> (Option<sql::TableAlias>, Vec<String>) {
    match alias {
        Some(mut a) => {
            let names = a.columns.drain(..).map(|c| c.name.value).collect();
            (Some(a), names)
        }
        None => (None, Vec::new()),
    }
}

impl FlinkRelations {
    /// Plans `relation` when it is a table function call Riffle correlates (`None`: it is not).
    pub(super) fn table_function_relation(
        &self,
        relation: &sql::TableFactor,
        context: &mut dyn RelationPlannerContext,
    ) -> DfResult<Option<RelationPlanning>> {
        let (call, alias, with_ordinality) = match relation {
            sql::TableFactor::UNNEST {
                alias,
                array_exprs,
                with_offset,
                with_ordinality,
                ..
            } => {
                if *with_offset {
                    return datafusion::common::not_impl_err!(
                        "unsupported feature: UNNEST WITH OFFSET"
                    );
                }
                let [arg] = array_exprs.as_slice() else {
                    return datafusion::common::not_impl_err!(
                        "unsupported feature: UNNEST of several collections"
                    );
                };
                let (alias, names) = split_alias(alias.clone());
                let arg = self.argument(arg.clone(), context)?;
                let node = TableFunctionNode::unnest(arg, *with_ordinality, &names)?;
                return Ok(Some(planned(node, alias)));
            }
            sql::TableFactor::Function {
                name,
                args,
                alias,
                with_ordinality,
                ..
            } if name.to_string().eq_ignore_ascii_case("TABLE") => match inner_call(args) {
                Some(f) => (f, alias, *with_ordinality),
                None => return Ok(None),
            },
            sql::TableFactor::TableFunction {
                expr: sql::Expr::Function(f),
                alias,
            } => (f, alias, false),
            _ => return Ok(None),
        };
        let fname = call.name.to_string();
        let Some(spec) = self
            .functions
            .iter()
            .find(|f| f.kind == crate::udf::TABLE && f.name.eq_ignore_ascii_case(&fname))
        else {
            return Ok(None);
        };
        if with_ordinality {
            return datafusion::common::not_impl_err!(
                "unsupported feature: WITH ORDINALITY on a user table function"
            );
        }
        let args = match &call.args {
            sql::FunctionArguments::List(list) => call_args(&list.args)?,
            sql::FunctionArguments::None => Vec::new(),
            sql::FunctionArguments::Subquery(_) => {
                return datafusion::common::not_impl_err!(
                    "unsupported feature: a subquery as table function argument"
                )
            }
        };
        let args = args
            .into_iter()
            .map(|a| self.argument(a, context))
            .collect::<DfResult<Vec<_>>>()?;
        let (alias, names) = split_alias(alias.clone());
        let node = TableFunctionNode::user(spec, args, &names)?;
        Ok(Some(planned(node, alias)))
    }

    /// A table function argument: columns on the left of the lateral join become outer
    /// references.
    fn argument(&self, e: sql::Expr, context: &mut dyn RelationPlannerContext) -> DfResult<Expr> {
        context.sql_to_expr(e, &DFSchema::empty())
    }
}

fn planned(node: TableFunctionNode, alias: Option<sql::TableAlias>) -> RelationPlanning {
    let plan = LogicalPlan::Extension(Extension {
        node: Arc::new(node),
    });
    RelationPlanning::Planned(Box::new(PlannedRelation::new(plan, alias)))
}

/// The table function call `plan` is (through aliases and the subquery wrapper of a lateral
/// relation), if it is one.
pub(super) fn table_function(plan: &LogicalPlan) -> Option<&TableFunctionNode> {
    match plan {
        LogicalPlan::SubqueryAlias(a) => table_function(&a.input),
        LogicalPlan::Subquery(s) => table_function(&s.subquery),
        LogicalPlan::Extension(e) => e.node.as_any().downcast_ref::<TableFunctionNode>(),
        _ => None,
    }
}

impl GraphBuilder<'_> {
    /// A join of a relation with a table function call on its right: a correlate.
    pub(super) fn correlate(&mut self, join: &Join, call: &TableFunctionNode) -> PlanResult<Node> {
        let span = self.span;
        let left_outer = match join.join_type {
            DfJoinType::Inner => false,
            DfJoinType::Left => true,
            other => {
                return Err(unsupported(
                    format!("{other} join with a table function"),
                    span,
                ))
            }
        };
        let input = self.translate(&join.left)?;
        let condition = join_condition(join);
        let condition = condition.as_ref().map(|c| (c, join.schema.as_ref()));
        self.correlate_over(input, join.left.schema(), call, condition, left_outer)
    }

    /// A table function call with nothing on its left (`SELECT * FROM UNNEST(ARRAY[1, 2])`):
    /// a correlate over one empty row.
    pub(super) fn standalone_table_function(
        &mut self,
        call: &TableFunctionNode,
    ) -> PlanResult<Node> {
        let row = self.add(
            OperatorKind::Values {
                rows: vec![Vec::new()],
            },
            1,
            Vec::new(),
            crate::graph::ChangelogMode::InsertOnly,
            &[],
        );
        self.correlate_over(row, &DFSchema::empty(), call, None, false)
    }

    fn correlate_over(
        &mut self,
        input: Node,
        input_schema: &DFSchema,
        call: &TableFunctionNode,
        // The condition and the join's schema (the left columns, then the function's).
        condition: Option<(&Expr, &DFSchema)>,
        left_outer: bool,
    ) -> PlanResult<Node> {
        let span = self.span;
        let mut args = Vec::with_capacity(call.args.len());
        for a in &call.args {
            let a = outer_to_columns(a).map_err(|e| df_error(e, span))?;
            let a = self.rewrite(&a, input_schema, &input)?;
            check_functions(&[&a], span)?;
            let sql = self
                .session
                .expr_to_sql(&a)
                .map_err(|e| df_error(e, span))?;
            self.compile(&sql, &input)?;
            args.push(sql);
        }
        let function_fields: Vec<Field> = call
            .schema()
            .fields()
            .iter()
            .map(|f| {
                let nullable = f.is_nullable() || left_outer;
                Field::from_arrow(f.name(), f.data_type(), nullable)
            })
            .collect();
        // The input's time attribute stays one (Flink's correlate keeps it).
        let schema = join_fields(&input.fields, &function_fields);
        let condition = match condition {
            None => None,
            Some((c, both)) => {
                let output = Node {
                    op: input.op,
                    fields: schema.clone(),
                    changelog: input.changelog,
                };
                let c = self.rewrite(c, both, &output)?;
                check_functions(&[&c], span)?;
                let sql = self
                    .session
                    .expr_to_sql(&c)
                    .map_err(|e| df_error(e, span))?;
                self.compile(&sql, &output)?;
                Some(sql)
            }
        };
        let spec = CorrelateSpec {
            function: call.function.clone(),
            args,
            left_outer,
            condition,
        };
        let changelog = input.changelog;
        Ok(self.add(
            OperatorKind::Correlate(spec),
            self.parallelism,
            schema,
            changelog,
            &[(&input, Partitioning::Forward)],
        ))
    }
}

/// Writes Flink's `UNNEST(x)` in `FROM` (which the Flink dialect parses as a call of a table
/// named UNNEST) as sqlparser's UNNEST relation, which is lateral: its argument sees the
/// columns on its left.
pub(super) fn rewrite_unnest(query: &mut sql::Query) {
    use datafusion::sql::sqlparser::ast::{VisitMut, VisitorMut};
    use std::ops::ControlFlow;

    struct Unnest;

    impl VisitorMut for Unnest {
        type Break = ();

        fn pre_visit_table_factor(
            &mut self,
            factor: &mut sql::TableFactor,
        ) -> ControlFlow<Self::Break> {
            if let sql::TableFactor::Table {
                name,
                alias,
                args: Some(args),
                with_ordinality,
                ..
            } = factor
            {
                if name.to_string().eq_ignore_ascii_case("UNNEST") {
                    let exprs = args.args.iter().filter_map(|a| match a {
                        sql::FunctionArg::Unnamed(sql::FunctionArgExpr::Expr(e)) => Some(e.clone()),
                        _ => None,
                    });
                    *factor = sql::TableFactor::UNNEST {
                        alias: alias.take(),
                        array_exprs: exprs.collect(),
                        with_offset: false,
                        with_offset_alias: None,
                        with_ordinality: *with_ordinality,
                    };
                }
            }
            ControlFlow::Continue(())
        }
    }

    let _ = query.visit(&mut Unnest);
}

/// The join condition, `None` when it is absent or literally `TRUE` (`LEFT JOIN ... ON TRUE`).
fn join_condition(join: &Join) -> Option<Expr> {
    let filter = match &join.filter {
        None | Some(Expr::Literal(ScalarValue::Boolean(Some(true)), _)) => None,
        Some(c) => Some(c.clone()),
    };
    let keys = join.on.iter().map(|(l, r)| l.clone().eq(r.clone()));
    conjunction(keys.chain(filter))
}

/// The arguments' outer references (columns on the left of the lateral join) as plain columns.
fn outer_to_columns(e: &Expr) -> DfResult<Expr> {
    e.clone()
        .transform(|e| match e {
            Expr::OuterReferenceColumn(_, c) => Ok(Transformed::yes(Expr::Column(c))),
            other => Ok(Transformed::no(other)),
        })
        .map(|t| t.data)
}
