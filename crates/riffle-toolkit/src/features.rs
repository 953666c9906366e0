//! Finds every feature a job uses: statements, DDL clauses, connectors, formats, options, query
//! constructs, functions and hints — each with the span of the text that uses it.
//!
//! This is the "what does the job need" half of `riffle check`; [`crate::check`] classifies each use
//! with the support registry in `dialects/`.

use std::collections::HashSet;
use std::ops::ControlFlow;

use riffle_catalog::{Catalog, TimeAttribute};
use riffle_sql::ast::{self, ColumnKind, Script, StatementKind};
use riffle_sql::Span;
use sqlparser::ast::{
    BinaryOperator, Distinct, DuplicateTreatment, Expr, FunctionArguments, GroupByExpr,
    GroupByWithModifier, JoinConstraint, JoinOperator, Query, Select, SelectItem, SetExpr,
    SetOperator, SetQuantifier, Spanned, TableFactor, TableVersion, Visit, Visitor,
};

/// One use of a feature, identified by its registry code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeatureUse {
    /// Registry code: `stmt.*`, `ddl.*`, `query.*`, `hint.*`, `udf.*`, or
    /// `connector.<name>`, `format.<name>`, `option.<connector>.<key>`, `config.<key>`, `function.<name>`.
    pub code: String,
    /// Where it is used.
    pub span: Span,
    /// Index of the statement it is used in.
    pub statement: usize,
}

/// Window table-valued functions, by the name they are called with.
const WINDOW_TVFS: [&str; 4] = ["TUMBLE", "HOP", "CUMULATE", "SESSION"];

/// Ranking functions that form Top-N / deduplication when filtered on their result.
const RANKING_FUNCTIONS: [&str; 3] = ["ROW_NUMBER", "RANK", "DENSE_RANK"];

/// Collects every feature use of `script`, in statement order.
pub fn collect(script: &Script, catalog: &Catalog) -> Vec<FeatureUse> {
    let mut uses = Vec::new();
    for (index, statement) in script.statements.iter().enumerate() {
        let mut sink = Collector {
            uses: &mut uses,
            statement: index,
            fallback: statement.span,
        };
        sink.statement(statement, catalog);
    }
    uses
}

struct Collector<'a> {
    uses: &'a mut Vec<FeatureUse>,
    statement: usize,
    fallback: Span,
}

impl Collector<'_> {
    fn push(&mut self, code: impl Into<String>, span: Span) {
        let span = if span.is_unknown() {
            self.fallback
        } else {
            span
        };
        self.uses.push(FeatureUse {
            code: code.into(),
            span,
            statement: self.statement,
        });
    }

    fn push_node(&mut self, code: impl Into<String>, node: &impl Spanned) {
        self.push(code, node.span().into());
    }

    fn statement(&mut self, statement: &ast::Statement, catalog: &Catalog) {
        let span = statement.span;
        match &statement.kind {
            StatementKind::CreateTable(table) => {
                self.push("stmt.create-table", table.name_span);
                self.create_table(table, catalog);
            }
            StatementKind::CreateView(view) => {
                self.push("stmt.create-view", view.name_span);
                self.query(&view.query, catalog);
            }
            StatementKind::CreateFunction(function) => {
                self.push("stmt.create-function", function.name_span);
                let language = function
                    .language
                    .as_deref()
                    .unwrap_or("JAVA")
                    .to_ascii_lowercase();
                self.push(format!("udf.{language}"), function.name_span);
            }
            StatementKind::CreateCatalog(_) => self.push("stmt.create-catalog", span),
            StatementKind::CreateDatabase(_) => self.push("stmt.create-database", span),
            StatementKind::Drop(_) => self.push("stmt.drop", span),
            StatementKind::Alter(u) if u.keywords.starts_with("ALTER TABLE") => {
                self.push("stmt.alter-table", span)
            }
            StatementKind::Alter(_) => self.push("stmt.alter", span),
            StatementKind::Set(option) => {
                self.push("stmt.set", span);
                if let Some(option) = option {
                    self.push(format!("config.{}", option.key), option.key_span);
                }
            }
            StatementKind::Reset(_) => self.push("stmt.reset", span),
            StatementKind::Use(_) => self.push("stmt.use", span),
            StatementKind::Insert(insert) => self.insert(insert, catalog),
            StatementKind::StatementSet(set) => {
                self.push("stmt.statement-set", span);
                for insert in &set.inserts {
                    self.insert(insert, catalog);
                }
            }
            StatementKind::Query(query) => {
                self.push("stmt.query", span);
                self.query(query, catalog);
            }
            StatementKind::Explain(explain) => {
                self.push("stmt.explain", span);
                self.statement(&explain.statement, catalog);
            }
            StatementKind::Client(u) if u.keywords.starts_with("SHOW") => {
                self.push("stmt.show", span)
            }
            StatementKind::Client(u) if u.keywords.starts_with("DESC") => {
                self.push("stmt.describe", span)
            }
            StatementKind::Client(_) => self.push("stmt.client", span),
        }
        for hint in &statement.hints {
            let code = match hint.name.as_str() {
                "OPTIONS" => "hint.options",
                "STATE_TTL" => "hint.state-ttl",
                "LOOKUP" => "hint.lookup",
                _ => "hint.join",
            };
            self.push(code, hint.span);
        }
    }

    fn insert(&mut self, insert: &ast::Insert, catalog: &Catalog) {
        let code = if insert.overwrite {
            "stmt.insert-overwrite"
        } else {
            "stmt.insert"
        };
        self.push(code, insert.table_span);
        self.query(&insert.query, catalog);
    }

    fn create_table(&mut self, table: &ast::CreateTable, catalog: &Catalog) {
        let mut inline_primary_key = false;
        for column in &table.columns {
            match &column.kind {
                ColumnKind::Physical { primary_key, .. } => inline_primary_key |= *primary_key,
                ColumnKind::Computed { expr } => {
                    self.push("ddl.computed-column", column.span);
                    self.expr(expr, catalog);
                }
                ColumnKind::Metadata { .. } => self.push("ddl.metadata-column", column.span),
                ColumnKind::Header { .. } => self.push("ddl.header-column", column.span),
            }
        }
        if let Some(watermark) = &table.watermark {
            if watermark.name.is_some() || is_call_to(&watermark.expr, "WITHOFFSET") {
                self.push("ddl.legacy-watermark", watermark.span);
            } else {
                self.push("ddl.watermark", watermark.span);
                self.expr(&watermark.expr, catalog);
            }
        }
        if let Some(key) = &table.primary_key {
            self.push("ddl.primary-key", key.span);
        } else if inline_primary_key {
            self.push("ddl.primary-key", table.name_span);
        }
        if let Some(first) = table.partitioned_by.first() {
            self.push("ddl.partitioned-by", first.span.into());
        }
        if let Some(like) = &table.like {
            self.push("ddl.like", like.span);
        }
        self.table_options(&table.options);
    }

    fn table_options(&mut self, options: &[ast::TableOption]) {
        let connector_option = options.iter().find(|o| {
            o.key == "connector"
                || o.key == "connector.type"
                || (o.key_unquoted && o.key.eq_ignore_ascii_case("type"))
        });
        // Identifiers are case-sensitive, as in Flink: `'Kafka'` is not `'kafka'`.
        let connector = connector_option.map(|o| o.value.clone());
        if let Some(option) = connector_option {
            if option.key == "connector.type" {
                self.push("ddl.legacy-option-style", option.key_span);
            } else if option.key != "connector" {
                self.push("ddl.rsqldb-options", option.key_span);
            }
            self.push(format!("connector.{}", option.value), option.value_span);
        }
        for option in options {
            let is_format = option.key == "format"
                || option.key == "format.type"
                || option.key.ends_with(".format") && !option.key.starts_with("sink.");
            if is_format {
                self.push(format!("format.{}", option.value), option.value_span);
                let refused = connector
                    .as_deref()
                    .and_then(riffle_dialects::connector)
                    .is_some_and(|c| c.format.unsupported.contains_key(&option.value));
                if let (true, Some(connector)) = (refused, &connector) {
                    self.push(
                        format!("connector-format.{connector}.{}", option.value),
                        option.value_span,
                    );
                }
            }
            if let Some(connector) = &connector {
                if Some(option) != connector_option {
                    self.push(
                        format!("option.{connector}.{}", option.key),
                        option.key_span,
                    );
                }
            }
        }
    }

    fn query(&mut self, query: &Query, catalog: &Catalog) {
        let mut walker = QueryWalker {
            collector: self,
            catalog,
            consumed: HashSet::new(),
        };
        let _ = query.visit(&mut walker);
    }

    fn expr(&mut self, expr: &Expr, catalog: &Catalog) {
        let mut walker = QueryWalker {
            collector: self,
            catalog,
            consumed: HashSet::new(),
        };
        let _ = expr.visit(&mut walker);
    }
}

/// Visits a query's nodes; `consumed` holds spans of calls already reported as part of a larger
/// pattern (a window TVF, a Top-N's ROW_NUMBER), so they are not reported twice.
struct QueryWalker<'c, 'u> {
    collector: &'c mut Collector<'u>,
    catalog: &'c Catalog,
    consumed: HashSet<Span>,
}

impl Visitor for QueryWalker<'_, '_> {
    type Break = ();

    fn pre_visit_query(&mut self, query: &Query) -> ControlFlow<()> {
        let c = &mut *self.collector;
        if let Some(with) = &query.with {
            c.push_node("query.cte", with);
        }
        if let Some(order_by) = &query.order_by {
            c.push_node("query.order-by", order_by);
        }
        if let Some(limit) = &query.limit_clause {
            c.push_node("query.limit", limit);
        }
        if let Some(fetch) = &query.fetch {
            c.push(
                "query.limit",
                fetch
                    .quantity
                    .as_ref()
                    .map(|q| q.span().into())
                    .unwrap_or_default(),
            );
        }
        self.set_expr(&query.body);
        ControlFlow::Continue(())
    }

    fn pre_visit_select(&mut self, select: &Select) -> ControlFlow<()> {
        self.select(select);
        ControlFlow::Continue(())
    }

    fn pre_visit_table_factor(&mut self, factor: &TableFactor) -> ControlFlow<()> {
        self.table_factor(factor);
        ControlFlow::Continue(())
    }

    fn pre_visit_expr(&mut self, expr: &Expr) -> ControlFlow<()> {
        self.expression(expr);
        ControlFlow::Continue(())
    }
}

impl QueryWalker<'_, '_> {
    fn set_expr(&mut self, body: &SetExpr) {
        match body {
            SetExpr::SetOperation {
                op,
                set_quantifier,
                left,
                right,
            } => {
                let code = match (op, set_quantifier) {
                    (SetOperator::Union, SetQuantifier::All) => "query.union-all",
                    (SetOperator::Union, _) => "query.union",
                    (SetOperator::Intersect, _) => "query.intersect",
                    _ => "query.except",
                };
                let span = Span::from(left.span()).union(&Span::from(right.span()));
                self.collector.push(code, span);
            }
            SetExpr::Values(values) => self.collector.push_node("query.values", values),
            _ => {}
        }
    }

    fn select(&mut self, select: &Select) {
        if let Some(Distinct::Distinct) = &select.distinct {
            self.collector
                .push("query.select-distinct", select.select_token.0.span.into());
        }
        let window_tvf = select
            .from
            .iter()
            .any(|t| is_window_tvf(&t.relation) || derives_from_window_tvf(&t.relation));
        let group_exprs: &[Expr] = match &select.group_by {
            GroupByExpr::Expressions(exprs, modifiers) => {
                for modifier in modifiers {
                    if matches!(
                        modifier,
                        GroupByWithModifier::Rollup
                            | GroupByWithModifier::Cube
                            | GroupByWithModifier::GroupingSets(_)
                    ) {
                        self.collector
                            .push("query.grouping-sets", select.select_token.0.span.into());
                    }
                }
                exprs
            }
            GroupByExpr::All(_) => &[],
        };
        let mut group_window = false;
        for expr in group_exprs {
            if let Expr::Function(function) = expr {
                let name = function_name(&function.name);
                if matches!(name.as_str(), "TUMBLE" | "HOP" | "SESSION") {
                    group_window = true;
                    self.consumed.insert(expr.span().into());
                    self.collector.push_node(
                        format!("query.group-window.{}", name.to_ascii_lowercase()),
                        expr,
                    );
                }
            }
            if matches!(
                expr,
                Expr::GroupingSets(_) | Expr::Cube(_) | Expr::Rollup(_)
            ) {
                self.collector.push_node("query.grouping-sets", expr);
            }
        }
        let aggregates = select.projection.iter().any(|item| match item {
            SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => {
                contains_aggregate(e)
            }
            _ => false,
        });
        if !group_exprs.is_empty() || aggregates {
            let span = group_exprs
                .first()
                .map(|e| Span::from(e.span()))
                .unwrap_or_else(|| select.select_token.0.span.into());
            let code = if group_window {
                None
            } else if window_tvf {
                Some("query.window-aggregate")
            } else {
                Some("query.group-aggregate")
            };
            if let Some(code) = code {
                self.collector.push(code, span);
            }
        }
        if let Some(having) = &select.having {
            self.collector.push_node("query.having", having);
        }
        self.top_n(select);
        for table in &select.from {
            let mut left = &table.relation;
            for join in &table.joins {
                self.join(left, &join.relation, &join.join_operator);
                left = &join.relation;
            }
        }
    }

    /// Detects `SELECT ... FROM (SELECT ..., ROW_NUMBER() OVER (...) AS rn FROM ...) WHERE rn <= N`.
    fn top_n(&mut self, select: &Select) {
        let Some(selection) = &select.selection else {
            return;
        };
        for table in &select.from {
            let TableFactor::Derived { subquery, .. } = &table.relation else {
                continue;
            };
            let SetExpr::Select(inner) = subquery.body.as_ref() else {
                continue;
            };
            for item in &inner.projection {
                let SelectItem::ExprWithAlias {
                    expr: Expr::Function(function),
                    alias,
                } = item
                else {
                    continue;
                };
                let name = function_name(&function.name);
                if !RANKING_FUNCTIONS.contains(&name.as_str()) {
                    continue;
                }
                let Some(limit) = rank_limit(selection, &alias.value) else {
                    continue;
                };
                let Some(sqlparser::ast::WindowType::WindowSpec(spec)) = &function.over else {
                    continue;
                };
                let partitions_by_window = ["window_start", "window_end"].iter().all(|w| {
                    spec.partition_by
                        .iter()
                        .any(|p| column_name(p).is_some_and(|c| c.eq_ignore_ascii_case(w)))
                });
                let orders_by_time = spec.order_by.len() == 1
                    && column_name(&spec.order_by[0].expr)
                        .is_some_and(|c| self.is_time_attribute(&c));
                let dedup = name == "ROW_NUMBER" && limit == 1 && orders_by_time;
                let code = match (partitions_by_window, dedup) {
                    (true, true) => "query.window-dedup",
                    (true, false) => "query.window-topn",
                    (false, true) => "query.dedup",
                    (false, false) => "query.topn",
                };
                let call = Expr::Function(function.clone());
                self.consumed.insert(call.span().into());
                self.collector.push_node(code, &call);
            }
        }
    }

    fn is_time_attribute(&self, column: &str) -> bool {
        self.collector_catalog_columns()
            .any(|(name, attr)| attr.is_some() && name.eq_ignore_ascii_case(column))
            || column.eq_ignore_ascii_case("window_time")
    }

    fn collector_catalog_columns(
        &self,
    ) -> impl Iterator<Item = (&str, Option<TimeAttribute>)> + '_ {
        self.catalog.tables().flat_map(|t| {
            t.columns
                .iter()
                .map(|c| (c.name.as_str(), c.time_attribute))
        })
    }

    fn join(&mut self, left: &TableFactor, right: &TableFactor, operator: &JoinOperator) {
        let span: Span = right.span().into();
        if let TableFactor::Table {
            version: Some(TableVersion::ForSystemTimeAsOf(at)),
            ..
        } = right
        {
            let proctime = column_name(at).is_some_and(|c| {
                self.collector_catalog_columns().any(|(name, attr)| {
                    attr == Some(TimeAttribute::Proctime) && name.eq_ignore_ascii_case(&c)
                })
            }) || is_call_to(at, "PROCTIME");
            self.collector.push(
                if proctime {
                    "query.lookup-join"
                } else {
                    "query.temporal-join"
                },
                span,
            );
            return;
        }
        let (code, constraint) = match operator {
            JoinOperator::Join(c) | JoinOperator::Inner(c) => ("query.join.inner", Some(c)),
            JoinOperator::Left(c) | JoinOperator::LeftOuter(c) => ("query.join.left", Some(c)),
            JoinOperator::Right(c) | JoinOperator::RightOuter(c) => ("query.join.right", Some(c)),
            JoinOperator::FullOuter(c) => ("query.join.full", Some(c)),
            JoinOperator::CrossJoin(_) => match right {
                // CROSS JOIN UNNEST / CROSS JOIN LATERAL TABLE are reported by their table factor.
                TableFactor::UNNEST { .. }
                | TableFactor::Function { .. }
                | TableFactor::TableFunction { .. } => return,
                _ => ("query.join.cross", None),
            },
            _ => ("query.join.inner", None),
        };
        if matches!(
            right,
            TableFactor::Function { .. }
                | TableFactor::TableFunction { .. }
                | TableFactor::UNNEST { .. }
        ) && !is_window_tvf(right)
        {
            // `LEFT JOIN LATERAL TABLE(f(x)) ON TRUE`: the lateral table is the feature.
            return;
        }
        let condition = match constraint {
            Some(JoinConstraint::On(expr)) => Some(expr),
            _ => None,
        };
        let windowed = |t: &TableFactor| is_window_tvf(t) || derives_from_window_tvf(t);
        if windowed(left)
            && windowed(right)
            && condition.is_some_and(|c| mentions_column(c, "window_start"))
        {
            self.collector.push("query.window-join", span);
        } else if condition.is_some_and(is_interval_condition) {
            self.collector.push("query.interval-join", span);
        } else {
            self.collector.push(code, span);
        }
    }

    fn table_factor(&mut self, factor: &TableFactor) {
        match factor {
            TableFactor::TableFunction { expr, .. } => self.table_function(expr),
            TableFactor::Function { name, .. } => {
                let name = function_name(name);
                if WINDOW_TVFS.contains(&name.as_str()) {
                    self.collector.push_node(
                        format!("query.window-tvf.{}", name.to_ascii_lowercase()),
                        factor,
                    );
                } else {
                    self.collector.push_node("query.lateral-table", factor);
                    self.collector
                        .push_node(format!("function.{}", name.to_ascii_lowercase()), factor);
                }
            }
            TableFactor::UNNEST { .. } => self.collector.push_node("query.unnest", factor),
            TableFactor::MatchRecognize { .. } => {
                self.collector.push_node("query.match-recognize", factor)
            }
            TableFactor::Derived { .. } => self.collector.push_node("query.subquery", factor),
            _ => {}
        }
    }

    fn table_function(&mut self, expr: &Expr) {
        let Expr::Function(function) = expr else {
            self.collector.push_node("query.lateral-table", expr);
            return;
        };
        let name = function_name(&function.name);
        self.consumed.insert(expr.span().into());
        if WINDOW_TVFS.contains(&name.as_str()) {
            self.collector.push_node(
                format!("query.window-tvf.{}", name.to_ascii_lowercase()),
                expr,
            );
        } else {
            self.collector.push_node("query.lateral-table", expr);
            self.collector
                .push_node(format!("function.{}", name.to_ascii_lowercase()), expr);
        }
    }

    fn expression(&mut self, expr: &Expr) {
        let c = &mut *self.collector;
        match expr {
            Expr::Function(function) => {
                if self.consumed.contains(&Span::from(expr.span())) {
                    return;
                }
                let name = function_name(&function.name);
                if let FunctionArguments::List(list) = &function.args {
                    if list.duplicate_treatment == Some(DuplicateTreatment::Distinct) {
                        c.push_node("query.distinct-aggregate", expr);
                    }
                }
                if function.filter.is_some() {
                    c.push_node("query.filter-aggregate", expr);
                }
                if function.over.is_some() {
                    c.push_node("query.over-aggregate", expr);
                }
                c.push_node(format!("function.{}", name.to_ascii_lowercase()), expr);
            }
            Expr::Subquery(_) => c.push_node("query.subquery", expr),
            Expr::InSubquery { .. } => c.push_node("query.in-subquery", expr),
            Expr::Exists { .. } => c.push_node("query.exists-subquery", expr),
            _ => {
                if let Some(name) = syntax_function(expr) {
                    c.push_node(format!("function.{name}"), expr);
                }
            }
        }
    }
}

/// The function-catalog name of built-in functions written as syntax rather than as calls.
fn syntax_function(expr: &Expr) -> Option<&'static str> {
    Some(match expr {
        Expr::Cast {
            kind: sqlparser::ast::CastKind::TryCast,
            ..
        } => "try_cast",
        Expr::Cast { .. } => "cast",
        Expr::Extract { .. } => "extract",
        Expr::Substring { .. } => "substring",
        Expr::Trim { .. } => "trim",
        Expr::Position { .. } => "position",
        Expr::Overlay { .. } => "overlay",
        Expr::Floor {
            field: sqlparser::ast::CeilFloorKind::DateTimeField(_),
            ..
        } => "floor",
        Expr::Ceil {
            field: sqlparser::ast::CeilFloorKind::DateTimeField(_),
            ..
        } => "ceil",
        Expr::Like { negated: false, .. } => "like",
        Expr::Like { negated: true, .. } => "not like",
        Expr::SimilarTo { negated: false, .. } => "similar to",
        Expr::SimilarTo { negated: true, .. } => "not similar to",
        Expr::Between { negated: false, .. } => "between",
        Expr::Between { negated: true, .. } => "not between",
        Expr::InList { negated: false, .. } => "in",
        Expr::InList { negated: true, .. } => "not in",
        Expr::Case { .. } => "case",
        Expr::IsDistinctFrom(..) => "is distinct from",
        Expr::IsNotDistinctFrom(..) => "is not distinct from",
        Expr::BinaryOp {
            op: BinaryOperator::StringConcat,
            ..
        } => "||",
        _ => return None,
    })
}

/// Upper-cased last part of a function name.
fn function_name(name: &sqlparser::ast::ObjectName) -> String {
    name.0
        .last()
        .and_then(|part| part.as_ident())
        .map(|ident| ident.value.to_ascii_uppercase())
        .unwrap_or_default()
}

fn is_call_to(expr: &Expr, upper_name: &str) -> bool {
    matches!(expr, Expr::Function(f) if function_name(&f.name) == upper_name)
}

fn is_window_tvf(factor: &TableFactor) -> bool {
    match factor {
        TableFactor::TableFunction {
            expr: Expr::Function(f),
            ..
        } => WINDOW_TVFS.contains(&function_name(&f.name).as_str()),
        TableFactor::Function { name, .. } => WINDOW_TVFS.contains(&function_name(name).as_str()),
        _ => false,
    }
}

/// A derived table whose query reads a window TVF (e.g. the per-window aggregates of a window join).
fn derives_from_window_tvf(factor: &TableFactor) -> bool {
    let TableFactor::Derived { subquery, .. } = factor else {
        return false;
    };
    let SetExpr::Select(select) = subquery.body.as_ref() else {
        return false;
    };
    select
        .from
        .iter()
        .any(|t| is_window_tvf(&t.relation) || derives_from_window_tvf(&t.relation))
}

fn column_name(expr: &Expr) -> Option<String> {
    match expr {
        Expr::Identifier(ident) => Some(ident.value.clone()),
        Expr::CompoundIdentifier(parts) => parts.last().map(|p| p.value.clone()),
        _ => None,
    }
}

fn mentions_column(expr: &Expr, column: &str) -> bool {
    let mut found = false;
    let _ = sqlparser::ast::visit_expressions(expr, |e| {
        if column_name(e).is_some_and(|c| c.eq_ignore_ascii_case(column)) {
            found = true;
            return ControlFlow::Break(());
        }
        ControlFlow::Continue(())
    });
    found
}

/// An interval join condition bounds one side's time by the other's: `BETWEEN` or a comparison
/// whose side has `± INTERVAL`.
fn is_interval_condition(expr: &Expr) -> bool {
    let mut found = false;
    let _ = sqlparser::ast::visit_expressions(expr, |e| {
        let hit = match e {
            Expr::Between {
                expr, low, high, ..
            } => {
                column_name(expr).is_some()
                    && (has_interval(low) || has_interval(high) || column_name(low).is_some())
            }
            Expr::BinaryOp {
                op:
                    BinaryOperator::Gt
                    | BinaryOperator::GtEq
                    | BinaryOperator::Lt
                    | BinaryOperator::LtEq,
                left,
                right,
            } => has_interval(left) || has_interval(right),
            _ => false,
        };
        if hit {
            found = true;
            return ControlFlow::Break(());
        }
        ControlFlow::Continue(())
    });
    found
}

fn has_interval(expr: &Expr) -> bool {
    let mut found = false;
    let _ = sqlparser::ast::visit_expressions(expr, |e| {
        if matches!(e, Expr::Interval(_)) {
            found = true;
            return ControlFlow::Break(());
        }
        ControlFlow::Continue(())
    });
    found
}

/// `rn <= N`, `rn < N`, `rn = N` (N = 1) in a WHERE clause: the N of a Top-N.
fn rank_limit(selection: &Expr, alias: &str) -> Option<u64> {
    let mut limit = None;
    let _ = sqlparser::ast::visit_expressions(selection, |e| {
        if let Expr::BinaryOp { left, op, right } = e {
            if column_name(left).is_some_and(|c| c.eq_ignore_ascii_case(alias)) {
                if let Expr::Value(v) = right.as_ref() {
                    if let sqlparser::ast::Value::Number(n, _) = &v.value {
                        if let Ok(n) = n.parse::<u64>() {
                            limit = match op {
                                BinaryOperator::LtEq | BinaryOperator::Eq => Some(n),
                                BinaryOperator::Lt => Some(n.saturating_sub(1)),
                                _ => limit,
                            };
                        }
                    }
                }
            }
        }
        ControlFlow::<()>::Continue(())
    });
    limit
}

/// True when `expr` calls an aggregate function outside any OVER window.
fn contains_aggregate(expr: &Expr) -> bool {
    let mut found = false;
    let _ = sqlparser::ast::visit_expressions(expr, |e| {
        if let Expr::Function(f) = e {
            let is_aggregate = riffle_dialects::function(&function_name(&f.name))
                .is_some_and(|spec| spec.kind == riffle_dialects::FunctionKind::Aggregate);
            if f.over.is_none() && is_aggregate {
                found = true;
                return ControlFlow::Break(());
            }
        }
        ControlFlow::Continue(())
    });
    found
}
