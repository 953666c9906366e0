//! Planning of `MATCH_RECOGNIZE` (see [`crate::match_recognize`]).
//!
//! The relation planner turns the clause into a [`MatchRecognizeNode`] whose schema is the
//! partition columns and the measures; the graph builder turns the node into a
//! [`OperatorKind::MatchRecognize`] operator fed by a hash exchange on the partition columns.
//! Pattern constructs Flink rejects fail with Flink's message.

use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::ControlFlow;
use std::sync::Arc;

use arrow::datatypes::{DataType as ArrowType, Field as ArrowField, Schema as ArrowSchema};
use datafusion::common::{DFSchema, DFSchemaRef, Result as DfResult};
use datafusion::logical_expr::planner::{
    PlannedRelation, RelationPlannerContext, RelationPlanning,
};
use datafusion::logical_expr::{
    Expr, ExprSchemable, Extension, LogicalPlan, UserDefinedLogicalNodeCore,
};
use datafusion::sql::sqlparser::ast as sql;
use datafusion::sql::sqlparser::ast::{VisitMut, VisitorMut};
use riffle_sql::ast::MatchWithin;

use super::rank_plan::is_proctime;
use super::{
    fields_of, interval_ms, plan_error, unsupported, FlinkRelations, GraphBuilder, Node, PlanResult,
};
use crate::graph::{AggregateFunction, ChangelogMode, Field, OperatorKind, Partitioning, SortKey};
use crate::match_recognize::{AfterMatch, MatchExpr, MatchSpec, PatternVariable, Primitive};
use crate::session::FlinkSession;

/// `MATCH_RECOGNIZE` over `input` as a DataFusion logical node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MatchRecognizeNode {
    /// The rows matched.
    pub(crate) input: LogicalPlan,
    /// What the operator does.
    pub(crate) spec: MatchSpec,
    /// Per measure: the input column it reads as it is (`LAST(A.ts)`), whose time attribute it
    /// keeps, or `None`.
    time_sources: Vec<Option<usize>>,
    /// Per measure: it is `MATCH_ROWTIME()`.
    match_rowtime: Vec<bool>,
    schema: DFSchemaRef,
}

impl Hash for MatchRecognizeNode {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.input.hash(state);
        format!("{:?}", self.spec).hash(state);
    }
}

impl PartialOrd for MatchRecognizeNode {
    fn partial_cmp(&self, _other: &Self) -> Option<Ordering> {
        // Plans are only compared for deduplication; two matches have no order.
        None
    }
}

impl UserDefinedLogicalNodeCore for MatchRecognizeNode {
    fn name(&self) -> &str {
        "MatchRecognize"
    }

    fn inputs(&self) -> Vec<&LogicalPlan> {
        vec![&self.input]
    }

    fn schema(&self) -> &DFSchemaRef {
        &self.schema
    }

    fn expressions(&self) -> Vec<Expr> {
        Vec::new()
    }

    fn fmt_for_explain(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "MatchRecognize")
    }

    fn with_exprs_and_inputs(
        &self,
        _exprs: Vec<Expr>,
        mut inputs: Vec<LogicalPlan>,
    ) -> DfResult<Self> {
        match inputs.pop() {
            Some(input) if inputs.is_empty() => Ok(Self {
                input,
                ..self.clone()
            }),
            _ => datafusion::common::internal_err!("MatchRecognize takes exactly one input"),
        }
    }
}

/// A statement Flink rejects, failing with Flink's message.
#[derive(Debug)]
struct FlinkRejects(String);

impl fmt::Display for FlinkRejects {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for FlinkRejects {}

/// Fails with Flink's own message (a planning error, even where the message says "not
/// supported": Flink rejects the statement too).
fn rejected<T>(message: impl Into<String>) -> DfResult<T> {
    Err(datafusion::common::DataFusionError::External(Box::new(
        FlinkRejects(message.into()),
    )))
}

/// The quantifier `(min, max)` and greediness of a pattern term, or Flink's error.
fn quantified(
    pattern: &sql::MatchRecognizePattern,
) -> DfResult<(&sql::MatchRecognizePattern, u32, Option<u32>, bool)> {
    use sql::MatchRecognizePattern as P;
    use sql::RepetitionQuantifier as Q;
    let bounds = |q: &Q| match q {
        Q::ZeroOrMore => (0, None),
        Q::OneOrMore => (1, None),
        Q::AtMostOne => (0, Some(1)),
        Q::Exactly(n) => (*n, Some(*n)),
        Q::AtLeast(n) => (*n, None),
        Q::AtMost(n) => (0, Some(*n)),
        Q::Range(n, m) => (*n, Some(*m)),
    };
    match pattern {
        // `B+?`: a reluctant `+` (sqlparser reads the `?` as a second quantifier).
        P::Repetition(inner, Q::AtMostOne) => match inner.as_ref() {
            P::Repetition(term, q) => {
                let (min, max) = bounds(q);
                Ok((term, min, max, false))
            }
            term => Ok((term, 0, Some(1), true)),
        },
        P::Repetition(term, q) => {
            let (min, max) = bounds(q);
            Ok((term, min, max, true))
        }
        term => Ok((term, 1, Some(1), true)),
    }
}

/// The pattern as a sequence of variables, as Flink's CEP translation accepts it.
fn pattern_variables(pattern: &sql::MatchRecognizePattern) -> DfResult<Vec<PatternVariable>> {
    use sql::MatchRecognizePattern as P;
    let terms: Vec<&sql::MatchRecognizePattern> = match pattern {
        P::Concat(items) => items.iter().collect(),
        other => vec![other],
    };
    let mut out: Vec<PatternVariable> = Vec::new();
    for term in terms {
        let (inner, min, max, greedy) = quantified(term)?;
        let inner = match inner {
            P::Group(g) => match g.as_ref() {
                P::Symbol(_) => g.as_ref(),
                other => {
                    return rejected(format!(
                        "Expression not supported: ({other}) Group patterns are not supported yet."
                    ))
                }
            },
            other => other,
        };
        let name = match inner {
            P::Symbol(sql::MatchRecognizeSymbol::Named(ident)) => ident.value.clone(),
            P::Alternation(_) => {
                return rejected(format!(
                    "Expression not supported: {inner}. Currently, CEP doesn't support branching patterns."
                ))
            }
            P::Permute(_) => {
                return rejected(format!(
                    "Expression not supported: {inner}. Currently, CEP doesn't support PERMUTE patterns."
                ))
            }
            P::Exclude(_) => {
                return rejected(format!(
                    "Expression not supported: {inner}. Currently, CEP doesn't support '{{-' '-}}' patterns."
                ))
            }
            P::Group(_) | P::Concat(_) | P::Repetition(..) => {
                return rejected(format!(
                    "Expression not supported: ({inner}) Group patterns are not supported yet."
                ))
            }
            P::Symbol(anchor) => {
                return datafusion::common::not_impl_err!(
                    "unsupported feature: the pattern anchor {anchor} in MATCH_RECOGNIZE"
                )
            }
        };
        if max == Some(0) || max.is_some_and(|m| m < min) {
            return datafusion::common::plan_err!(
                "invalid quantifier {{{min},{}}} of pattern variable {name}",
                max.unwrap_or(0)
            );
        }
        let optional = min == 0 && max == Some(1);
        if !greedy && optional {
            return rejected("Reluctant optional variables are not supported yet.");
        }
        if out.iter().any(|v| v.name == name) {
            return rejected(format!(
                "Duplicate pattern name: {name}. Names must be unique."
            ));
        }
        out.push(PatternVariable {
            name,
            min,
            max,
            greedy,
        });
    }
    if let Some(last) = out.last() {
        // Flink marks a quantifier greedy only where it has a choice to make.
        let optional = last.min == 0 && last.max == Some(1);
        if last.greedy && !optional && last.max != Some(last.min) {
            return rejected(
                "Greedy quantifiers are not allowed as the last element of a Pattern yet. \
                 Finish your pattern with either a simple variable or reluctant quantifier.",
            );
        }
    }
    Ok(out)
}

/// Rewrites a `MEASURES` or `DEFINE` expression into SQL over primitives.
struct PrimitiveRewriter<'a> {
    variables: &'a [String],
    /// The input columns, unqualified.
    input: &'a DFSchema,
    session: &'a FlinkSession,
    /// Aggregate arguments shared by every expression of the clause.
    row_columns: &'a mut Vec<String>,
    primitives: Vec<Primitive>,
    fields: Vec<ArrowField>,
    error: Option<datafusion::common::DataFusionError>,
}

/// The integer literal `expr`.
fn int_literal(expr: &sql::Expr) -> Option<usize> {
    match expr {
        sql::Expr::Value(v) => match &v.value {
            sql::Value::Number(n, _) => n.parse().ok(),
            _ => None,
        },
        sql::Expr::Nested(e) => int_literal(e),
        _ => None,
    }
}

/// The plain arguments of a call (`None` when one is not a plain expression or wildcard).
fn call_args(f: &sql::Function) -> Option<(Vec<&sql::FunctionArgExpr>, bool)> {
    match &f.args {
        sql::FunctionArguments::None => Some((Vec::new(), false)),
        sql::FunctionArguments::List(list) => {
            let distinct = matches!(
                list.duplicate_treatment,
                Some(sql::DuplicateTreatment::Distinct)
            );
            let args = list
                .args
                .iter()
                .map(|a| match a {
                    sql::FunctionArg::Unnamed(e) => Some(e),
                    _ => None,
                })
                .collect::<Option<Vec<_>>>()?;
            Some((args, distinct))
        }
        sql::FunctionArguments::Subquery(_) => None,
    }
}

/// Flink's aggregate functions that MATCH_RECOGNIZE evaluates over a variable's rows.
fn aggregate_function(name: &str) -> Option<AggregateFunction> {
    Some(match name {
        "COUNT" => AggregateFunction::Count,
        "SUM" => AggregateFunction::Sum,
        "AVG" => AggregateFunction::Avg,
        "MIN" => AggregateFunction::Min,
        "MAX" => AggregateFunction::Max,
        "STDDEV_POP" => AggregateFunction::StddevPop,
        "STDDEV_SAMP" | "STDDEV" => AggregateFunction::StddevSamp,
        "VAR_POP" => AggregateFunction::VarPop,
        "VAR_SAMP" | "VARIANCE" => AggregateFunction::VarSamp,
        _ => return None,
    })
}

impl PrimitiveRewriter<'_> {
    fn variable(&self, name: &str) -> Option<usize> {
        self.variables.iter().position(|v| v == name)
    }

    /// Adds a primitive typed as `field`; returns the column that reads it.
    fn push(&mut self, primitive: Primitive, field: ArrowField) -> sql::Expr {
        let name = format!("__p{}", self.primitives.len());
        self.primitives.push(primitive);
        self.fields.push(field.with_name(name.clone()));
        sql::Expr::Identifier(sql::Ident::new(name))
    }

    /// `A.x` or `x` as (variable, input column).
    fn column_ref(&self, expr: &sql::Expr) -> DfResult<(Option<usize>, usize)> {
        let (variable, column) = match expr {
            sql::Expr::Identifier(c) => (None, c),
            sql::Expr::CompoundIdentifier(parts) if parts.len() == 2 => {
                match self.variable(&parts[0].value) {
                    Some(v) => (Some(v), &parts[1]),
                    None => {
                        return datafusion::common::plan_err!(
                            "Unknown pattern variable '{}'",
                            parts[0].value
                        )
                    }
                }
            }
            other => {
                return datafusion::common::not_impl_err!(
                    "unsupported feature: navigation over the expression {other} in MATCH_RECOGNIZE"
                )
            }
        };
        match self.input.index_of_column_by_name(None, &column.value) {
            Some(i) => Ok((variable, i)),
            None => datafusion::common::plan_err!("Column '{}' not found", column.value),
        }
    }

    fn navigation(
        &mut self,
        arg: &sql::Expr,
        from_first: bool,
        offset: usize,
    ) -> DfResult<sql::Expr> {
        let (variable, column) = self.column_ref(arg)?;
        // A variable may have no row at that offset.
        let field = self
            .input
            .field(column)
            .as_ref()
            .clone()
            .with_nullable(true);
        Ok(self.push(
            Primitive::Navigation {
                variable,
                column,
                from_first,
                offset,
            },
            field,
        ))
    }

    fn aggregate(
        &mut self,
        f: &sql::Function,
        function: AggregateFunction,
        args: &[&sql::FunctionArgExpr],
        distinct: bool,
    ) -> DfResult<sql::Expr> {
        if distinct {
            return datafusion::common::plan_err!(
                "Distinct aggregations are not supported in MATCH_RECOGNIZE."
            );
        }
        let (variable, arg) = match args {
            [sql::FunctionArgExpr::Wildcard] if function == AggregateFunction::Count => {
                (None, None)
            }
            [sql::FunctionArgExpr::QualifiedWildcard(name)]
                if function == AggregateFunction::Count =>
            {
                let name = name.to_string();
                match self.variable(&name) {
                    Some(v) => (Some(v), None),
                    None => {
                        return datafusion::common::plan_err!("Unknown pattern variable '{name}'")
                    }
                }
            }
            [sql::FunctionArgExpr::Expr(e)] => {
                let mut arg = e.clone();
                let mut unqualify = Unqualify {
                    variables: self.variables,
                    found: Vec::new(),
                };
                let _ = arg.visit(&mut unqualify);
                let mut found = unqualify.found;
                found.sort_unstable();
                found.dedup();
                if found.len() > 1 {
                    return datafusion::common::plan_err!(
                        "Aggregation must be applied to a single pattern variable: {f}"
                    );
                }
                (found.first().copied(), Some(arg))
            }
            _ => {
                return datafusion::common::not_impl_err!(
                    "unsupported feature: the aggregate call {f} in MATCH_RECOGNIZE"
                )
            }
        };
        let function = if arg.is_none() {
            AggregateFunction::CountStar
        } else {
            function
        };
        // The call planned over the input row gives Flink's result type.
        let mut call = f.clone();
        if let (Some(a), sql::FunctionArguments::List(list)) = (&arg, &mut call.args) {
            list.args = vec![sql::FunctionArg::Unnamed(sql::FunctionArgExpr::Expr(
                a.clone(),
            ))];
        }
        if arg.is_none() {
            if let sql::FunctionArguments::List(list) = &mut call.args {
                list.args = vec![sql::FunctionArg::Unnamed(sql::FunctionArgExpr::Wildcard)];
            }
        }
        let typed = self
            .session
            .logical_from_ast(&sql::Expr::Function(call), self.input)?;
        let (_, typed) = typed.to_field(self.input)?;
        let (data_type, nullable) = (typed.data_type().clone(), typed.is_nullable());
        let column = match arg {
            Some(a) => {
                let planned = self.session.logical_from_ast(&a, self.input)?;
                let text = self.session.expr_to_sql(&planned)?;
                let at = match self.row_columns.iter().position(|c| *c == text) {
                    Some(at) => at,
                    None => {
                        self.row_columns.push(text);
                        self.row_columns.len() - 1
                    }
                };
                Some(self.input.fields().len() + at)
            }
            None => None,
        };
        let field = ArrowField::new("", data_type, nullable);
        Ok(self.push(
            Primitive::Aggregate {
                variable,
                function,
                column,
            },
            field,
        ))
    }

    /// The replacement of `expr`, if it reads a match.
    fn replace(&mut self, expr: &sql::Expr) -> DfResult<Option<sql::Expr>> {
        match expr {
            sql::Expr::Identifier(i) if i.value.starts_with("__p") => Ok(None),
            sql::Expr::Identifier(_) | sql::Expr::CompoundIdentifier(_) => {
                if let sql::Expr::CompoundIdentifier(parts) = expr {
                    if parts.len() != 2 || self.variable(&parts[0].value).is_none() {
                        return Ok(None);
                    }
                }
                self.navigation(expr, false, 0).map(Some)
            }
            sql::Expr::Function(f) => {
                let name = f.name.to_string().to_ascii_uppercase();
                let Some((args, distinct)) = call_args(f) else {
                    return Ok(None);
                };
                let exprs: Vec<&sql::Expr> = args
                    .iter()
                    .filter_map(|a| match a {
                        sql::FunctionArgExpr::Expr(e) => Some(e),
                        _ => None,
                    })
                    .collect();
                match name.as_str() {
                    "FIRST" | "LAST" => {
                        let offset = match exprs.get(1) {
                            None => 0,
                            Some(e) => match int_literal(e) {
                                Some(n) => n,
                                None => {
                                    return datafusion::common::plan_err!(
                                    "The offset of {name} must be a non-negative integer literal"
                                )
                                }
                            },
                        };
                        match exprs.first() {
                            Some(arg) if exprs.len() <= 2 => {
                                self.navigation(arg, name == "FIRST", offset).map(Some)
                            }
                            _ => datafusion::common::plan_err!(
                                "Invalid number of arguments to function '{name}'"
                            ),
                        }
                    }
                    "PREV" | "NEXT" => {
                        let offset = exprs.get(1).map_or(Some(1), |e| int_literal(e));
                        match (exprs.first(), offset) {
                            (Some(arg), Some(0)) => self.navigation(arg, false, 0).map(Some),
                            _ => rejected(
                                "Flink does not support physical offsets within partition.",
                            ),
                        }
                    }
                    "MATCH_ROWTIME" if exprs.is_empty() => {
                        // TIMESTAMP(3) NOT NULL, also over a TIMESTAMP_LTZ time attribute.
                        let field = ArrowField::new(
                            "",
                            ArrowType::Timestamp(arrow::datatypes::TimeUnit::Millisecond, None),
                            false,
                        );
                        Ok(Some(self.push(Primitive::MatchRowtime, field)))
                    }
                    "MATCH_ROWTIME" => datafusion::common::not_impl_err!(
                        "unsupported feature: MATCH_ROWTIME with an argument"
                    ),
                    "MATCH_PROCTIME" => {
                        datafusion::common::not_impl_err!("unsupported feature: MATCH_PROCTIME()")
                    }
                    "CLASSIFIER" | "MATCH_NUMBER" | "RUNNING" | "FINAL" => rejected(format!(
                        "Unsupported call: {name}()\nIf you think this function should be \
                             supported, you can create an issue and start a discussion for it."
                    )),
                    _ => match aggregate_function(&name) {
                        Some(function) => self.aggregate(f, function, &args, distinct).map(Some),
                        None => Ok(None),
                    },
                }
            }
            _ => Ok(None),
        }
    }
}

impl VisitorMut for PrimitiveRewriter<'_> {
    type Break = ();

    fn pre_visit_expr(&mut self, expr: &mut sql::Expr) -> ControlFlow<()> {
        match self.replace(expr) {
            Ok(Some(replacement)) => {
                *expr = replacement;
                ControlFlow::Continue(())
            }
            Ok(None) => ControlFlow::Continue(()),
            Err(e) => {
                self.error = Some(e);
                ControlFlow::Break(())
            }
        }
    }
}

/// Drops pattern-variable qualifiers (`A.price` → `price`), noting the variables.
struct Unqualify<'a> {
    variables: &'a [String],
    found: Vec<usize>,
}

impl VisitorMut for Unqualify<'_> {
    type Break = ();

    fn pre_visit_expr(&mut self, expr: &mut sql::Expr) -> ControlFlow<()> {
        if let sql::Expr::CompoundIdentifier(parts) = expr {
            if parts.len() == 2 {
                if let Some(v) = self.variables.iter().position(|n| *n == parts[0].value) {
                    self.found.push(v);
                    *expr = sql::Expr::Identifier(parts[1].clone());
                }
            }
        }
        ControlFlow::Continue(())
    }
}

/// An expression over primitives, planned: its SQL, type and what it reads.
struct Planned {
    expr: MatchExpr,
    field: ArrowField,
    /// The expression is exactly one navigation to this input column.
    direct_column: Option<usize>,
    /// The expression is exactly `MATCH_ROWTIME()`.
    match_rowtime: bool,
}

/// The `WITHIN` clause of the `MATCH_RECOGNIZE` whose `DEFINE` starts at `define`: the last
/// one before it, after the clause's measures.
fn within_of(
    withins: &[MatchWithin],
    after: Option<riffle_sql::span::Location>,
    define: riffle_sql::span::Location,
) -> Option<&MatchWithin> {
    withins
        .iter()
        .filter(|w| w.span.end <= define && after.is_none_or(|a| a <= w.span.start))
        .max_by_key(|w| w.span.end)
}

/// A sqlparser location as Riffle's.
fn location(l: datafusion::sql::sqlparser::tokenizer::Location) -> riffle_sql::span::Location {
    riffle_sql::span::Location::new(l.line, l.column)
}

impl FlinkRelations {
    /// Plans a `MATCH_RECOGNIZE` table factor.
    pub(super) fn match_recognize(
        &self,
        relation: sql::TableFactor,
        context: &mut dyn RelationPlannerContext,
    ) -> DfResult<RelationPlanning> {
        let sql::TableFactor::MatchRecognize {
            table,
            partition_by,
            order_by,
            measures,
            rows_per_match,
            after_match_skip,
            pattern,
            symbols,
            alias,
        } = relation
        else {
            return datafusion::common::internal_err!("not a MATCH_RECOGNIZE");
        };
        if matches!(rows_per_match, Some(sql::RowsPerMatch::AllRows(_))) {
            return rejected("All rows per match mode is not supported yet.");
        }
        let input = context.plan(*table)?;
        let arrow: ArrowSchema = input.schema().as_arrow().clone();
        let unqualified = DFSchema::try_from(arrow)?;
        let column = |e: &sql::Expr| -> DfResult<usize> {
            let name = match e {
                sql::Expr::Identifier(i) => &i.value,
                sql::Expr::CompoundIdentifier(parts) if !parts.is_empty() => {
                    &parts[parts.len() - 1].value
                }
                other => {
                    return datafusion::common::not_impl_err!(
                        "unsupported feature: MATCH_RECOGNIZE partitioned or ordered by the expression {other}"
                    )
                }
            };
            match unqualified.index_of_column_by_name(None, name) {
                Some(i) => Ok(i),
                None => datafusion::common::plan_err!("Column '{name}' not found in any table"),
            }
        };
        let partition = partition_by
            .iter()
            .map(column)
            .collect::<DfResult<Vec<usize>>>()?;
        let Some((first, further)) = order_by.split_first() else {
            return datafusion::common::plan_err!(
                "You must specify either rowtime or proctime for order by."
            );
        };
        if first.options.asc == Some(false) {
            return datafusion::common::plan_err!(
                "Primary sort order of a streaming table must be ascending on time."
            );
        }
        let time = column(&first.expr)?;
        let order = further
            .iter()
            .map(|o| {
                let ascending = o.options.asc != Some(false);
                Ok(SortKey {
                    column: column(&o.expr)?,
                    ascending,
                    // Flink sorts NULL lowest.
                    nulls_first: o.options.nulls_first.unwrap_or(ascending),
                })
            })
            .collect::<DfResult<Vec<SortKey>>>()?;
        let pattern = pattern_variables(&pattern)?;
        let variables: Vec<String> = pattern.iter().map(|v| v.name.clone()).collect();
        let variable = |ident: &sql::Ident| -> DfResult<String> {
            if variables.contains(&ident.value) {
                Ok(ident.value.clone())
            } else {
                datafusion::common::plan_err!("Unknown pattern variable '{}'", ident.value)
            }
        };
        let skip = match &after_match_skip {
            // Flink's default is TO NEXT ROW.
            Some(sql::AfterMatchSkip::PastLastRow) => AfterMatch::PastLastRow,
            None | Some(sql::AfterMatchSkip::ToNextRow) => AfterMatch::ToNextRow,
            Some(sql::AfterMatchSkip::ToFirst(v)) => AfterMatch::ToFirst(variable(v)?),
            Some(sql::AfterMatchSkip::ToLast(v)) => AfterMatch::ToLast(variable(v)?),
        };
        let within = match symbols.first() {
            Some(first) => within_of(
                &self.match_within,
                measures.last().map(|m| location(m.alias.span.end)),
                location(first.symbol.span.start),
            ),
            None => None,
        };
        let within = match within {
            Some(w) => {
                let interval = context.sql_to_expr(w.interval.clone(), &DFSchema::empty())?;
                Some(interval_ms(interval)?)
            }
            None => None,
        };
        let mut row_columns = Vec::new();
        let mut plan_expr = |expr: &sql::Expr| -> DfResult<Planned> {
            let mut rewriter = PrimitiveRewriter {
                variables: &variables,
                input: &unqualified,
                session: &self.session,
                row_columns: &mut row_columns,
                primitives: Vec::new(),
                fields: Vec::new(),
                error: None,
            };
            let mut rewritten = expr.clone();
            let _ = rewritten.visit(&mut rewriter);
            if let Some(e) = rewriter.error {
                return Err(e);
            }
            let schema = DFSchema::from_unqualified_fields(
                rewriter.fields.clone().into(),
                Default::default(),
            )?;
            let planned = self.session.logical_from_ast(&rewritten, &schema)?;
            let (_, typed) = planned.to_field(&schema)?;
            let (data_type, nullable) = (typed.data_type().clone(), typed.is_nullable());
            let sql = self.session.expr_to_sql(&planned)?;
            let direct = matches!(&rewritten, sql::Expr::Identifier(i) if i.value == "__p0");
            let direct_column = match rewriter.primitives.first() {
                Some(Primitive::Navigation { column, .. }) if direct => Some(*column),
                _ => None,
            };
            let match_rowtime =
                direct && matches!(rewriter.primitives.first(), Some(Primitive::MatchRowtime));
            let fields = rewriter
                .fields
                .iter()
                .map(|f| Field::from_arrow(f.name().clone(), f.data_type(), true))
                .collect();
            Ok(Planned {
                expr: MatchExpr {
                    sql,
                    primitives: rewriter.primitives,
                    fields,
                },
                field: ArrowField::new("", data_type, nullable),
                direct_column,
                match_rowtime,
            })
        };
        let mut defines: Vec<Option<MatchExpr>> = vec![None; variables.len()];
        for s in &symbols {
            let Some(at) = variables.iter().position(|v| *v == s.symbol.value) else {
                return datafusion::common::plan_err!(
                    "Pattern variable '{}' is defined but not used in the pattern",
                    s.symbol.value
                );
            };
            let planned = plan_expr(&s.definition)?;
            if planned.field.data_type() != &ArrowType::Boolean {
                return datafusion::common::plan_err!(
                    "The condition of pattern variable '{}' must be a boolean expression",
                    s.symbol.value
                );
            }
            defines[at] = Some(planned.expr);
        }
        let mut fields: Vec<ArrowField> = partition
            .iter()
            .map(|c| unqualified.field(*c).as_ref().clone())
            .collect();
        let mut out_measures = Vec::new();
        let mut time_sources = Vec::new();
        let mut match_rowtime = Vec::new();
        for m in &measures {
            let planned = plan_expr(&m.expr)?;
            fields.push(planned.field.with_name(m.alias.value.clone()));
            out_measures.push(planned.expr);
            time_sources.push(planned.direct_column);
            match_rowtime.push(planned.match_rowtime);
        }
        let schema = Arc::new(DFSchema::from_unqualified_fields(
            fields.into(),
            Default::default(),
        )?);
        let node = MatchRecognizeNode {
            input,
            spec: MatchSpec {
                partition,
                time,
                order,
                pattern,
                skip,
                within,
                row_columns,
                defines,
                measures: out_measures,
            },
            time_sources,
            match_rowtime,
            schema,
        };
        let plan = LogicalPlan::Extension(Extension {
            node: Arc::new(node),
        });
        Ok(RelationPlanning::Planned(Box::new(PlannedRelation::new(
            plan, alias,
        ))))
    }
}

/// `ext` is a `MATCH_RECOGNIZE`.
pub(super) fn is_match(ext: &Extension) -> bool {
    ext.node.as_any().is::<MatchRecognizeNode>()
}

impl GraphBuilder<'_> {
    /// The operator of a `MATCH_RECOGNIZE` node (see [`is_match`]).
    pub(super) fn match_recognize(&mut self, ext: &Extension) -> PlanResult<Node> {
        let span = self.span;
        let Some(node) = ext.node.as_any().downcast_ref::<MatchRecognizeNode>() else {
            return Err(plan_error("not a MATCH_RECOGNIZE node", span));
        };
        let input = self.translate(&node.input)?;
        if input.changelog != ChangelogMode::InsertOnly {
            return Err(unsupported(
                "MATCH_RECOGNIZE over an updating stream (Flink's match consumes only inserts)",
                span,
            ));
        }
        let spec = &node.spec;
        let time_is_rowtime = input.fields.get(spec.time).is_some_and(|f| f.rowtime);
        if !time_is_rowtime {
            return Err(if is_proctime(self.catalog, &node.input, spec.time) {
                unsupported(
                    "MATCH_RECOGNIZE ordered by a processing-time attribute",
                    span,
                )
            } else {
                plan_error(
                    "You must specify either rowtime or proctime for order by as the first one.",
                    span,
                )
            });
        }
        let mut schema = fields_of(&node.schema);
        let measures_at = spec.partition.len();
        for (i, f) in schema.iter_mut().enumerate().skip(measures_at) {
            let m = i - measures_at;
            let keeps_time = node
                .time_sources
                .get(m)
                .copied()
                .flatten()
                .is_some_and(|c| input.fields.get(c).is_some_and(|f| f.rowtime));
            f.rowtime = keeps_time || node.match_rowtime.get(m).copied().unwrap_or(false);
        }
        let (parallelism, partitioning) = if spec.partition.is_empty() {
            (1, Partitioning::Global)
        } else {
            (self.parallelism, Partitioning::Hash(spec.partition.clone()))
        };
        Ok(self.add(
            OperatorKind::MatchRecognize(spec.clone()),
            parallelism,
            schema,
            ChangelogMode::InsertOnly,
            &[(&input, partitioning)],
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern(sql_pattern: &str) -> DfResult<Vec<PatternVariable>> {
        let sql = format!(
            "SELECT * FROM t MATCH_RECOGNIZE (ORDER BY ts MEASURES A.x AS x PATTERN ({sql_pattern}) DEFINE A AS A.x > 0)"
        );
        let dialect = datafusion::sql::sqlparser::dialect::GenericDialect {};
        let statements = datafusion::sql::sqlparser::parser::Parser::parse_sql(&dialect, &sql)
            .map_err(|e| datafusion::common::DataFusionError::Plan(e.to_string()))?;
        let Some(sql::Statement::Query(q)) = statements.into_iter().next() else {
            return datafusion::common::plan_err!("no query");
        };
        let sql::SetExpr::Select(select) = *q.body else {
            return datafusion::common::plan_err!("no select");
        };
        match &select.from[0].relation {
            sql::TableFactor::MatchRecognize { pattern, .. } => pattern_variables(pattern),
            _ => datafusion::common::plan_err!("no match"),
        }
    }

    fn shape(vars: &[PatternVariable]) -> Vec<(String, u32, Option<u32>, bool)> {
        vars.iter()
            .map(|v| (v.name.clone(), v.min, v.max, v.greedy))
            .collect()
    }

    #[test]
    fn quantifiers_and_reluctance_are_read() {
        let vars = pattern("A B*? C{2} D{1,3}? E+? F").expect("pattern");
        assert_eq!(
            shape(&vars),
            [
                ("A".into(), 1, Some(1), true),
                ("B".into(), 0, None, false),
                ("C".into(), 2, Some(2), true),
                ("D".into(), 1, Some(3), false),
                ("E".into(), 1, None, false),
                ("F".into(), 1, Some(1), true),
            ]
        );
    }

    #[test]
    fn constructs_flink_rejects_fail_with_its_message() {
        let err = |p: &str| pattern(p).expect_err(p).to_string();
        assert!(err("A B*").contains("Greedy quantifiers are not allowed as the last element"));
        assert!(err("A B??").contains("Reluctant optional variables are not supported yet."));
        assert!(err("A | B").contains("branching patterns"));
        assert!(err("(A B)+ C").contains("Group patterns are not supported yet."));
        assert!(err("A B A").contains("Duplicate pattern name"));
    }
}
