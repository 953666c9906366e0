//! Query analysis: `FROM` resolution (tables, views, CTEs, derived tables, joins, window TVFs,
//! `UNNEST`, `MATCH_RECOGNIZE`), projection and output schema, `GROUP BY` validation.

use riffle_sql::ast::{DataType, Expr, Ident, ObjectName, Query, TypeKind};
use sqlparser::ast::{
    BinaryOperator, FunctionArg, FunctionArgExpr, FunctionArguments, GroupByExpr, JoinConstraint,
    JoinOperator, MatchRecognizePattern, MatchRecognizeSymbol, OrderByKind, Select, SelectItem,
    SelectItemQualifiedWildcardKind, SetExpr, SetOperator, TableAlias, TableFactor, TableWithJoins,
};

use crate::expr::{ExprCx, Typed};
use crate::functions::{
    function_name, is_aggregate_call, is_window_auxiliary_call, names_something,
};
use crate::schema::{Field, Schema, TimeAttribute};
use crate::scope::{Ctes, Relation, Scope};
use crate::types::{self, unknown};
use crate::{ident_span, span_of, Analyzer, ObjectPath};

/// The window table-valued functions and the columns they add.
const WINDOW_TVFS: &[&str] = &["TUMBLE", "HOP", "CUMULATE", "SESSION"];

impl Analyzer {
    /// Analyzes a statement-level query.
    pub(crate) fn top_level_query(&mut self, q: &Query) -> Schema {
        self.query(q, None, &Ctes::default())
    }

    /// Analyzes a query with the given enclosing scope (for correlated subqueries) and CTEs.
    pub(crate) fn query(&mut self, q: &Query, outer: Option<&Scope<'_>>, ctes: &Ctes) -> Schema {
        let mut ctes = ctes.clone();
        if let Some(with) = &q.with {
            for cte in &with.cte_tables {
                let schema = self.query(&cte.query, outer, &ctes);
                let schema = self.apply_alias_columns(schema, Some(&cte.alias));
                ctes.entries.push((cte.alias.name.value.clone(), schema));
            }
        }
        let order_by = q.order_by.as_ref().and_then(|o| match &o.kind {
            OrderByKind::Expressions(exprs) => Some(exprs.as_slice()),
            OrderByKind::All(_) => None,
        });
        self.set_expr(&q.body, outer, &ctes, order_by.unwrap_or_default())
    }

    fn set_expr(
        &mut self,
        body: &SetExpr,
        outer: Option<&Scope<'_>>,
        ctes: &Ctes,
        order_by: &[sqlparser::ast::OrderByExpr],
    ) -> Schema {
        match body {
            SetExpr::Select(select) => self.select(select, outer, ctes, order_by),
            SetExpr::Query(q) => self.query(q, outer, ctes),
            SetExpr::SetOperation {
                left,
                op,
                right,
                set_quantifier,
            } => {
                let l = self.set_expr(left, outer, ctes, &[]);
                let r = self.set_expr(right, outer, ctes, &[]);
                let all = matches!(set_quantifier, sqlparser::ast::SetQuantifier::All);
                self.set_operation(body, op, all, l, r)
            }
            SetExpr::Values(values) => {
                let scope = Scope::child(outer);
                let cx = ExprCx {
                    scope: &scope,
                    ctes,
                    grouped: false,
                };
                let mut columns: Vec<Vec<DataType>> = Vec::new();
                for row in &values.rows {
                    for (i, e) in row.iter().enumerate() {
                        let t = self.type_expr(e, cx).ty;
                        if columns.len() <= i {
                            columns.push(Vec::new());
                        }
                        if let Some(c) = columns.get_mut(i) {
                            c.push(t);
                        }
                    }
                }
                // Rows must have one common row type (same degree, compatible columns).
                let same_degree = values.rows.windows(2).all(|w| w[0].len() == w[1].len());
                let merged: Vec<Option<DataType>> =
                    columns.iter().map(|ts| types::common_type(ts)).collect();
                let known = columns.iter().flatten().all(|t| !types::is_unknown(t));
                if !same_degree || known && merged.iter().any(Option::is_none) {
                    self.error(
                        "type-mismatch",
                        "Values passed to VALUES operator must have compatible types",
                        span_of(body),
                    );
                }
                // Calcite names VALUES columns EXPR$0, EXPR$1, ...
                let fields = merged
                    .into_iter()
                    .enumerate()
                    .map(|(i, t)| Field::new(format!("EXPR${i}"), t.unwrap_or_else(unknown)))
                    .collect();
                Schema::new(fields)
            }
            SetExpr::Table(t) => {
                let parts: Vec<Ident> = t
                    .schema_name
                    .iter()
                    .chain(t.table_name.iter())
                    .map(|s| Ident::new(s.clone()))
                    .collect();
                let name = ObjectName::from(parts);
                self.named_relation(&name, ctes)
                    .map(|(s, _)| s)
                    .unwrap_or_default()
            }
            other => {
                self.error(
                    "unsupported-query",
                    "Riffle cannot analyze this kind of query body",
                    span_of(other),
                );
                Schema::default()
            }
        }
    }

    fn set_operation(
        &mut self,
        body: &SetExpr,
        op: &SetOperator,
        all: bool,
        l: Schema,
        r: Schema,
    ) -> Schema {
        let op_name = match op {
            SetOperator::Union => "UNION",
            SetOperator::Except | SetOperator::Minus => "EXCEPT",
            SetOperator::Intersect => "INTERSECT",
        };
        let op_name = if all {
            format!("{op_name} ALL")
        } else {
            op_name.to_string()
        };
        if l.columns.len() != r.columns.len() {
            self.error(
                "column-count-mismatch",
                format!("Column count mismatch in {op_name}"),
                span_of(body),
            );
            return l;
        }
        let mut fields = Vec::with_capacity(l.columns.len());
        for (i, (a, b)) in l.columns.iter().zip(&r.columns).enumerate() {
            let ty = match types::common_type(&[a.data_type.clone(), b.data_type.clone()]) {
                Some(t) => t,
                None => {
                    self.error(
                        "type-mismatch",
                        format!("Type mismatch in column {} of {op_name}", i + 1),
                        span_of(body),
                    );
                    unknown()
                }
            };
            let time = if a.time_attribute == b.time_attribute {
                a.time_attribute
            } else {
                None
            };
            fields.push(Field {
                name: a.name.clone(),
                data_type: ty,
                time_attribute: time,
            });
        }
        Schema::new(fields)
    }

    fn select(
        &mut self,
        select: &Select,
        outer: Option<&Scope<'_>>,
        ctes: &Ctes,
        order_by: &[sqlparser::ast::OrderByExpr],
    ) -> Schema {
        let mut scope = Scope::child(outer);
        let mut regular_joins = Vec::new();
        for item in &select.from {
            let relations = self.table_with_joins(item, &scope, ctes);
            let start = scope.relations.len();
            self.add_relations(&mut scope, relations);
            if let Some(conditions) = regular_join_conditions(item) {
                regular_joins.push((start..scope.relations.len(), conditions));
            }
        }
        if let Some(w) = &select.selection {
            let cx = ExprCx {
                scope: &scope,
                ctes,
                grouped: false,
            };
            self.condition(w, cx, "WHERE clause must be a condition");
            self.reject_aggregates(w, "WHERE");
        }
        // A regular join materializes the time attributes of its inputs; interval joins (time
        // bounds between both sides) and window joins keep them.
        for (range, mut conditions) in regular_joins {
            conditions.extend(select.selection.iter());
            if !is_time_bounded_join(&conditions, &scope, &range) {
                for relation in scope.relations.get_mut(range).into_iter().flatten() {
                    relation
                        .fields
                        .iter_mut()
                        .for_each(|f| f.time_attribute = None);
                }
            }
        }
        let plain = ExprCx {
            scope: &scope,
            ctes,
            grouped: false,
        };
        let group_exprs: Vec<&Expr> = match &select.group_by {
            GroupByExpr::Expressions(exprs, _) => exprs.iter().flat_map(flatten_grouping).collect(),
            GroupByExpr::All(_) => Vec::new(),
        };
        for g in &group_exprs {
            self.type_expr(g, plain);
            self.reject_aggregates(g, "GROUP BY");
        }
        let grouped = !group_exprs.is_empty();
        let aggregated = grouped
            || select
                .projection
                .iter()
                .any(|i| select_item_expr(i).is_some_and(contains_aggregate))
            || select.having.as_ref().is_some_and(contains_aggregate);
        let cx = ExprCx {
            scope: &scope,
            ctes,
            grouped,
        };

        let mut fields: Vec<Field> = Vec::new();
        // `OVER w` in the projection names a window of this SELECT's WINDOW clause.
        let outer_windows = std::mem::replace(&mut self.windows, select.named_window.clone());
        for (ordinal, item) in select.projection.iter().enumerate() {
            match item {
                SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => {
                    let typed = self.type_expr(e, cx);
                    if aggregated {
                        self.check_grouped(e, &group_exprs, &scope);
                    }
                    let name = match item {
                        SelectItem::ExprWithAlias { alias, .. } => alias.value.clone(),
                        _ => derived_name(e).unwrap_or_else(|| format!("EXPR${ordinal}")),
                    };
                    let time = if aggregated {
                        grouped_time_attribute(e, &typed)
                    } else {
                        typed.time
                    };
                    fields.push(Field {
                        name,
                        data_type: typed.ty,
                        time_attribute: time,
                    });
                }
                SelectItem::ExprWithAliases { expr, aliases } => {
                    self.type_expr(expr, cx);
                    fields.extend(
                        aliases
                            .iter()
                            .map(|a| Field::new(a.value.clone(), unknown())),
                    );
                }
                SelectItem::Wildcard(_) => {
                    if aggregated {
                        self.error(
                            "not-grouped",
                            "Expression '*' is not being grouped",
                            span_of(item),
                        );
                    }
                    if scope.relations.is_empty() && !scope.has_opaque() {
                        self.error(
                            "unknown-column",
                            "SELECT * requires a FROM clause",
                            span_of(item),
                        );
                    }
                    fields.extend(scope.all_fields().cloned());
                }
                SelectItem::QualifiedWildcard(
                    SelectItemQualifiedWildcardKind::ObjectName(name),
                    _,
                ) => {
                    let parts: Vec<Ident> = name
                        .0
                        .iter()
                        .filter_map(|p| p.as_ident().cloned())
                        .collect();
                    match scope.relations.iter().find(|r| r.matches(&parts)) {
                        Some(r) => fields.extend(r.fields.iter().cloned()),
                        None => {
                            self.error(
                                "unknown-table",
                                format!("Table '{name}' not found"),
                                span_of(name),
                            );
                        }
                    }
                }
                SelectItem::QualifiedWildcard(SelectItemQualifiedWildcardKind::Expr(e), _) => {
                    let t = self.type_expr(e, cx).ty;
                    if let TypeKind::Row(row) = &t.kind {
                        fields.extend(
                            row.iter()
                                .map(|f| Field::new(f.name.clone(), f.data_type.clone())),
                        );
                    }
                }
            }
        }
        self.windows = outer_windows;
        if let Some(h) = &select.having {
            self.condition(h, cx, "HAVING clause must be a condition");
            if aggregated {
                self.check_grouped(h, &group_exprs, &scope);
            }
        }
        if let Some(q) = &select.qualify {
            self.type_expr(q, cx);
        }
        for o in order_by {
            // ORDER BY may name an output column; otherwise it is an input expression.
            let is_alias = matches!(&o.expr, Expr::Identifier(id) if fields.iter().any(|f| f.name == id.value));
            if !is_alias {
                self.type_expr(&o.expr, cx);
            }
        }
        Schema::new(uniquify(fields))
    }

    /// Calcite rejects aggregate calls outside SELECT, HAVING and ORDER BY.
    fn reject_aggregates(&mut self, e: &Expr, clause: &str) {
        if let Some(Expr::Function(call)) = find_aggregate(e) {
            self.error(
                "invalid-aggregate",
                format!("Aggregate expression is illegal in {clause} clause"),
                span_of(&call.name),
            );
        }
    }

    /// Types a WHERE/HAVING/ON condition and requires a BOOLEAN.
    fn condition(&mut self, e: &Expr, cx: ExprCx<'_, '_>, message: &str) {
        let t = self.type_expr(e, cx).ty;
        if !types::is_unknown(&t) && !types::is_null_type(&t) && t.kind != TypeKind::Boolean {
            self.error("type-mismatch", message, span_of(e)).help =
                Some(format!("the expression has type {}", t));
        }
    }

    /// Adds relations to a scope, rejecting duplicate names as Calcite does.
    fn add_relations(
        &mut self,
        scope: &mut Scope<'_>,
        relations: Vec<(Relation, riffle_sql::Span)>,
    ) {
        for (relation, span) in relations {
            if let Some(q) = &relation.qualifier {
                if scope
                    .relations
                    .iter()
                    .any(|r| r.qualifier.as_ref() == Some(q))
                {
                    self.error(
                        "duplicate-alias",
                        format!("Duplicate relation name '{q}' in FROM clause"),
                        span,
                    );
                }
            }
            scope.relations.push(relation);
        }
    }

    fn table_with_joins(
        &mut self,
        item: &TableWithJoins,
        left_of: &Scope<'_>,
        ctes: &Ctes,
    ) -> Vec<(Relation, riffle_sql::Span)> {
        let mut relations = self.table_factor(&item.relation, left_of, ctes);
        for join in &item.joins {
            // Lateral items (UNNEST, LATERAL TABLE) see everything to their left.
            let mut visible = Scope::child(left_of.parent);
            visible.relations.extend(left_of.relations.iter().cloned());
            visible
                .relations
                .extend(relations.iter().map(|(r, _)| r.clone()));
            let mut right = self.table_factor(&join.relation, &visible, ctes);
            let (left_nullable, right_nullable) = match &join.join_operator {
                JoinOperator::Left(_) | JoinOperator::LeftOuter(_) => (false, true),
                JoinOperator::Right(_) | JoinOperator::RightOuter(_) => (true, false),
                JoinOperator::FullOuter(_) => (true, true),
                JoinOperator::OuterApply => (false, true),
                _ => (false, false),
            };
            if left_nullable {
                relations.iter_mut().for_each(|(r, _)| make_nullable(r));
            }
            if right_nullable {
                right.iter_mut().for_each(|(r, _)| make_nullable(r));
            }
            let right_names: Vec<Relation> = right.iter().map(|(r, _)| r.clone()).collect();
            let left_names: Vec<Relation> = relations.iter().map(|(r, _)| r.clone()).collect();
            relations.extend(right);
            let constraint = match &join.join_operator {
                JoinOperator::Join(c)
                | JoinOperator::Inner(c)
                | JoinOperator::Left(c)
                | JoinOperator::LeftOuter(c)
                | JoinOperator::Right(c)
                | JoinOperator::RightOuter(c)
                | JoinOperator::FullOuter(c)
                | JoinOperator::CrossJoin(c) => Some(c),
                _ => None,
            };
            match constraint {
                Some(JoinConstraint::On(e)) => {
                    let mut on_scope = Scope::child(left_of.parent);
                    on_scope.relations.extend(left_of.relations.iter().cloned());
                    on_scope
                        .relations
                        .extend(relations.iter().map(|(r, _)| r.clone()));
                    let cx = ExprCx {
                        scope: &on_scope,
                        ctes,
                        grouped: false,
                    };
                    self.condition(e, cx, "ON clause must be a condition");
                }
                Some(JoinConstraint::Using(columns)) => {
                    for c in columns {
                        let Some(ident) = c.0.last().and_then(|p| p.as_ident()) else {
                            continue;
                        };
                        for side in [&left_names, &right_names] {
                            if !side.iter().any(|r| r.field(&ident.value).is_some()) {
                                self.error(
                                    "unknown-column",
                                    format!("Column '{}' not found in any table", ident.value),
                                    ident_span(ident),
                                );
                                break;
                            }
                        }
                    }
                }
                _ => {}
            }
        }
        relations
    }

    /// Resolves one `FROM` item into the relations it contributes.
    fn table_factor(
        &mut self,
        factor: &TableFactor,
        lateral: &Scope<'_>,
        ctes: &Ctes,
    ) -> Vec<(Relation, riffle_sql::Span)> {
        let span = span_of(factor);
        match factor {
            TableFactor::Table {
                name,
                alias,
                args: Some(args),
                with_ordinality,
                ..
            } => {
                let schema =
                    self.table_function(name, &args.args, *with_ordinality, lateral, ctes, span);
                let schema = self.apply_alias_columns(schema, alias.as_ref());
                let qualifier = alias.as_ref().map(|a| a.name.value.clone());
                vec![(Relation::new(qualifier, None, schema), span)]
            }
            TableFactor::Table {
                name,
                alias,
                version,
                ..
            } => {
                let Some((schema, path)) = self.named_relation(name, ctes) else {
                    self.unknown_object(name);
                    let qualifier = match alias {
                        Some(a) => Some(a.name.value.clone()),
                        None => name
                            .0
                            .last()
                            .and_then(|p| p.as_ident())
                            .map(|i| i.value.clone()),
                    };
                    return vec![(Relation::opaque(qualifier), span)];
                };
                if let Some(path) = &path {
                    self.claim_options_hint(path, span_of(name));
                    let usage = self.usage.entry(path.clone()).or_default();
                    if version.is_some() {
                        usage.lookup = true;
                    } else {
                        usage.source = true;
                    }
                }
                if let Some(sqlparser::ast::TableVersion::ForSystemTimeAsOf(e)) = version {
                    let cx = ExprCx {
                        scope: lateral,
                        ctes,
                        grouped: false,
                    };
                    let t = self.type_expr(e, cx);
                    if t.time.is_none() && !types::is_unknown(&t.ty) {
                        self.error(
                            "invalid-time-attribute",
                            "Temporal table join currently only supports 'FOR SYSTEM_TIME AS OF' left table's \
                             time attribute field",
                            span_of(e),
                        );
                    }
                }
                let schema = self.apply_alias_columns(schema, alias.as_ref());
                let qualifier = match alias {
                    Some(a) => Some(a.name.value.clone()),
                    None => name
                        .0
                        .last()
                        .and_then(|p| p.as_ident())
                        .map(|i| i.value.clone()),
                };
                let altered = path.as_ref().is_some_and(|p| self.catalog.is_altered(p));
                let mut relation =
                    Relation::new(qualifier, if alias.is_some() { None } else { path }, schema);
                relation.opaque = altered;
                vec![(relation, span)]
            }
            TableFactor::Derived {
                lateral: is_lateral,
                subquery,
                alias,
                ..
            } => {
                let outer = if *is_lateral {
                    Some(lateral)
                } else {
                    lateral.parent
                };
                let schema = self.query(subquery, outer, ctes);
                let schema = self.apply_alias_columns(schema, alias.as_ref());
                let qualifier = alias.as_ref().map(|a| a.name.value.clone());
                vec![(Relation::new(qualifier, None, schema), span)]
            }
            TableFactor::TableFunction { expr, alias } => {
                let schema = match expr {
                    Expr::Function(f) => {
                        let args = match &f.args {
                            FunctionArguments::List(list) => list.args.as_slice(),
                            _ => &[],
                        };
                        self.table_function(&f.name, args, false, lateral, ctes, span)
                    }
                    other => {
                        let cx = ExprCx {
                            scope: lateral,
                            ctes,
                            grouped: false,
                        };
                        self.type_expr(other, cx);
                        Schema::default()
                    }
                };
                let schema = self.apply_alias_columns(schema, alias.as_ref());
                let qualifier = alias.as_ref().map(|a| a.name.value.clone());
                vec![(user_function_relation(qualifier, schema), span)]
            }
            TableFactor::Function {
                name,
                args,
                alias,
                with_ordinality,
                ..
            } => {
                let schema = self.table_function(name, args, *with_ordinality, lateral, ctes, span);
                let schema = self.apply_alias_columns(schema, alias.as_ref());
                let qualifier = alias.as_ref().map(|a| a.name.value.clone());
                vec![(user_function_relation(qualifier, schema), span)]
            }
            TableFactor::UNNEST {
                alias,
                array_exprs,
                with_ordinality,
                ..
            } => {
                let exprs: Vec<&Expr> = array_exprs.iter().collect();
                let schema = self.unnest(&exprs, *with_ordinality, lateral, ctes);
                let schema = self.apply_alias_columns(schema, alias.as_ref());
                let qualifier = alias.as_ref().map(|a| a.name.value.clone());
                vec![(Relation::new(qualifier, None, schema), span)]
            }
            TableFactor::NestedJoin {
                table_with_joins,
                alias,
            } => {
                let mut relations = self.table_with_joins(table_with_joins, lateral, ctes);
                if let Some(a) = alias {
                    let fields = relations.drain(..).flat_map(|(r, _)| r.fields).collect();
                    let schema = self.apply_alias_columns(Schema::new(fields), Some(a));
                    return vec![(
                        Relation::new(Some(a.name.value.clone()), None, schema),
                        span,
                    )];
                }
                relations
            }
            TableFactor::MatchRecognize {
                table,
                partition_by,
                order_by,
                measures,
                rows_per_match,
                pattern,
                symbols,
                alias,
                ..
            } => {
                let input = self.table_factor(table, lateral, ctes);
                let input_fields: Vec<Field> = input
                    .iter()
                    .flat_map(|(r, _)| r.fields.iter().cloned())
                    .collect();
                // Pattern variables qualify the input's columns (`A.price`).
                let mut names: Vec<String> =
                    symbols.iter().map(|s| s.symbol.value.clone()).collect();
                pattern_symbols(pattern, &mut names);
                let mut match_scope = Scope::child(lateral.parent);
                match_scope.relations.push(Relation::new(
                    None,
                    None,
                    Schema::new(input_fields.clone()),
                ));
                for n in names {
                    match_scope.relations.push(Relation::new(
                        Some(n),
                        None,
                        Schema::new(Vec::new()),
                    ));
                }
                let mut input_scope = Scope::child(lateral.parent);
                input_scope.relations.push(Relation::new(
                    None,
                    None,
                    Schema::new(input_fields.clone()),
                ));
                // Variables resolve to the input row: give each one the input's columns.
                for r in match_scope.relations.iter_mut().skip(1) {
                    r.fields = input_fields.clone();
                    r.qualified_only = true;
                }
                let mut out = Vec::new();
                let cx_in = ExprCx {
                    scope: &input_scope,
                    ctes,
                    grouped: false,
                };
                for p in partition_by {
                    let t = self.type_expr(p, cx_in);
                    let name = derived_name(p).unwrap_or_default();
                    out.push(Field {
                        name,
                        data_type: t.ty,
                        time_attribute: None,
                    });
                }
                for o in order_by {
                    self.type_expr(&o.expr, cx_in);
                }
                let cx = ExprCx {
                    scope: &match_scope,
                    ctes,
                    grouped: true,
                };
                for s in symbols {
                    self.type_expr(&s.definition, cx);
                }
                let measure_fields: Vec<Field> = measures
                    .iter()
                    .map(|m| {
                        let t = self.type_expr(&m.expr, cx);
                        // MATCH_ROWTIME() / MATCH_PROCTIME() yield time attributes, and a
                        // time attribute read as it is (`A.ts`, `LAST(A.ts)`) stays one.
                        let time = match &m.expr {
                            Expr::Identifier(_) | Expr::CompoundIdentifier(_) => t.time,
                            Expr::Function(f) => match navigated(f) {
                                Some(arg) => self.type_expr(arg, cx).time,
                                None => t.time,
                            },
                            _ => None,
                        };
                        Field {
                            name: m.alias.value.clone(),
                            data_type: t.ty,
                            time_attribute: time,
                        }
                    })
                    .collect();
                if matches!(
                    rows_per_match,
                    Some(sqlparser::ast::RowsPerMatch::AllRows(_))
                ) {
                    out = input_fields;
                }
                out.extend(measure_fields);
                let schema = self.apply_alias_columns(Schema::new(out), alias.as_ref());
                let qualifier = alias.as_ref().map(|a| a.name.value.clone());
                vec![(Relation::new(qualifier, None, schema), span)]
            }
            other => {
                self.error(
                    "unsupported-query",
                    "Riffle cannot analyze this kind of FROM item",
                    span_of(other),
                );
                Vec::new()
            }
        }
    }

    /// Validates the `OPTIONS` hint written right after a table reference (the nearest unclaimed
    /// one that follows its name).
    fn claim_options_hint(&mut self, path: &ObjectPath, name_span: riffle_sql::Span) {
        let Some(table) = self.catalog.table_by_path(path).cloned() else {
            return;
        };
        let next = self
            .hints
            .iter_mut()
            .filter(|(h, used)| !used && h.span.start >= name_span.end)
            .min_by_key(|(h, _)| h.span.start);
        let Some((hint, used)) = next else { return };
        *used = true;
        let hint = hint.clone();
        self.validate_hint_options(&table, &hint);
    }

    /// A table, view or CTE by name: its schema and, for catalog objects, its path.
    fn named_relation(
        &mut self,
        name: &ObjectName,
        ctes: &Ctes,
    ) -> Option<(Schema, Option<ObjectPath>)> {
        if let [part] = name.0.as_slice() {
            if let Some(schema) = part.as_ident().and_then(|i| ctes.get(&i.value)) {
                return Some((schema.clone(), None));
            }
        }
        let path = self.catalog.resolve_path(name)?;
        if let Some(table) = self.catalog.table_by_path(&path) {
            return Some((table.source_schema(), Some(path)));
        }
        self.catalog
            .view_by_path(&path)
            .map(|v| (v.schema.clone(), None))
    }

    /// Calcite's "Object 'x' not found" (with "within 'db'" for qualified names).
    pub(crate) fn unknown_object(&mut self, name: &ObjectName) {
        let parts: Vec<String> = name
            .0
            .iter()
            .filter_map(|p| p.as_ident().map(|i| i.value.clone()))
            .collect();
        let message = match parts.split_last() {
            Some((last, [])) => format!("Object '{last}' not found"),
            Some((last, prefix)) => {
                format!("Object '{last}' not found within '{}'", prefix.join("."))
            }
            None => format!("Object '{name}' not found"),
        };
        let candidates: Vec<String> = self
            .catalog
            .tables()
            .map(|t| t.path.name.clone())
            .chain(self.catalog.views().map(|v| v.path.name.clone()))
            .collect();
        let suggestion = parts
            .last()
            .and_then(|l| riffle_dialects::did_you_mean(l, candidates.iter().map(String::as_str)))
            .map(str::to_string);
        let diag = self.error("unknown-table", message, span_of(name));
        if let Some(s) = suggestion {
            diag.help = Some(format!("did you mean '{s}'?"));
        }
    }

    /// A table-valued call in `FROM`: a window TVF, or a user table function (opaque).
    fn table_function(
        &mut self,
        name: &ObjectName,
        args: &[FunctionArg],
        with_ordinality: bool,
        lateral: &Scope<'_>,
        ctes: &Ctes,
        span: riffle_sql::Span,
    ) -> Schema {
        let fname = name
            .0
            .last()
            .and_then(|p| p.as_ident())
            .map(|i| i.value.to_uppercase())
            .unwrap_or_default();
        // `[LATERAL] TABLE(f(x))` wraps the real call.
        if fname == "TABLE" {
            if let [arg] = args {
                if let Some(Expr::Function(inner)) = arg_expr(arg) {
                    let inner_args = match &inner.args {
                        FunctionArguments::List(list) => list.args.as_slice(),
                        _ => &[],
                    };
                    return self.table_function(
                        &inner.name,
                        inner_args,
                        with_ordinality,
                        lateral,
                        ctes,
                        span,
                    );
                }
            }
        }
        if fname == "UNNEST" {
            let exprs: Vec<&Expr> = args.iter().filter_map(arg_expr).collect();
            return self.unnest(&exprs, with_ordinality, lateral, ctes);
        }
        if WINDOW_TVFS.contains(&fname.as_str()) {
            return self.window_tvf(&fname, args, lateral, ctes, span);
        }
        let cx = ExprCx {
            scope: lateral,
            ctes,
            grouped: false,
        };
        for e in args.iter().filter_map(arg_expr) {
            // `TABLE t`, `DESCRIPTOR(c)` and `MODEL m` arguments name things; they are not values.
            if !names_something(e) {
                self.type_expr(e, cx);
            }
        }
        if self
            .catalog
            .function(&function_display_name(name))
            .is_none()
        {
            let types: Vec<String> = args.iter().map(|_| "<ANY>".to_string()).collect();
            self.error(
                "unknown-function",
                format!(
                    "No match found for function signature {}({})",
                    function_display_name(name),
                    types.join(", ")
                ),
                span_of(name),
            );
        }
        // A user table function's columns come from code Riffle cannot see; the alias column
        // list (if any) names them, with unknown types.
        Schema::default()
    }

    /// `TUMBLE/HOP/CUMULATE/SESSION(TABLE t, DESCRIPTOR(ts), ...)`: the input's columns (the
    /// time column no longer a time attribute) plus `window_start`, `window_end` (TIMESTAMP(3))
    /// and `window_time` (a time attribute of the time column's kind).
    fn window_tvf(
        &mut self,
        fname: &str,
        args: &[FunctionArg],
        lateral: &Scope<'_>,
        ctes: &Ctes,
        span: riffle_sql::Span,
    ) -> Schema {
        self.check_window_sizes(fname, args);
        let exprs: Vec<&Expr> = args.iter().filter_map(arg_expr).collect();
        let Some(table_arg) = exprs.first() else {
            self.error(
                "wrong-argument-count",
                format!("Invalid number of arguments to function '{fname}'"),
                span,
            );
            return Schema::default();
        };
        let table = riffle_sql::dialect::TableArgument::from_expr(table_arg);
        let input = match &table {
            Some(arg) => match self.named_relation(&arg.name, ctes) {
                Some((schema, path)) => {
                    if let Some(p) = path {
                        self.usage.entry(p).or_default().source = true;
                    }
                    Some(schema)
                }
                None => {
                    self.unknown_object(&arg.name);
                    None
                }
            },
            None => match table_arg {
                Expr::Subquery(q) => Some(self.query(q, lateral.parent, ctes)),
                _ => None,
            },
        };
        let Some(mut input) = input else {
            return Schema::default();
        };
        let input_scope = Scope::of_fields(input.columns.clone());
        let cx = ExprCx {
            scope: &input_scope,
            ctes,
            grouped: false,
        };
        for key in table.iter().flat_map(|t| &t.partition_by) {
            self.type_expr(key, cx);
        }
        let mut time_kind: Option<(DataType, TimeAttribute)> = None;
        for e in exprs.iter().skip(1) {
            match e {
                Expr::Function(f) if function_name(f).eq_ignore_ascii_case("DESCRIPTOR") => {
                    let FunctionArguments::List(list) = &f.args else {
                        continue;
                    };
                    let Some(col) = list.args.first().and_then(arg_expr) else {
                        continue;
                    };
                    let typed = self.type_expr(col, cx);
                    if types::is_unknown(&typed.ty) {
                        continue;
                    }
                    match typed.time {
                        Some(attr) => time_kind = Some((typed.ty, attr)),
                        None => {
                            self.error(
                                "invalid-time-attribute",
                                format!(
                                    "The window function requires the timecol is a time attribute type, but is {}.",
                                    typed.ty
                                ),
                                span_of(col),
                            );
                        }
                    }
                }
                other => {
                    self.type_expr(other, cx);
                }
            }
        }
        let ts3 = DataType::not_null(TypeKind::Timestamp(3));
        let window_time = match time_kind {
            Some((t, TimeAttribute::Rowtime)) => {
                let kind = if matches!(t.kind, TypeKind::TimestampLtz(_)) {
                    TypeKind::TimestampLtz(3)
                } else {
                    TypeKind::Timestamp(3)
                };
                Field {
                    name: "window_time".into(),
                    data_type: DataType::not_null(kind),
                    time_attribute: Some(TimeAttribute::Rowtime),
                }
            }
            Some((_, TimeAttribute::Proctime)) => Field {
                name: "window_time".into(),
                data_type: DataType::not_null(TypeKind::TimestampLtz(3)),
                time_attribute: Some(TimeAttribute::Proctime),
            },
            None => Field::new("window_time", unknown()),
        };
        input.columns.push(Field::new("window_start", ts3.clone()));
        input.columns.push(Field::new("window_end", ts3));
        input.columns.push(window_time);
        input
    }

    /// `UNNEST(a, ...)`: the rows of arrays, multisets or maps from the left of a lateral join.
    fn unnest(
        &mut self,
        exprs: &[&Expr],
        with_ordinality: bool,
        lateral: &Scope<'_>,
        ctes: &Ctes,
    ) -> Schema {
        let cx = ExprCx {
            scope: lateral,
            ctes,
            grouped: false,
        };
        let mut fields = Vec::new();
        for e in exprs {
            let t = self.type_expr(e, cx).ty;
            if !types::is_unknown(&t) && !types::is_constructed(&t)
                || matches!(t.kind, TypeKind::Row(_))
            {
                self.error(
                    "type-mismatch",
                    format!(
                        "Cannot apply 'UNNEST' to arguments of type 'UNNEST(<{}>)'. Supported form(s): \
                         'UNNEST(<MULTISET>)'\n'UNNEST(<ARRAY>)'\n'UNNEST(<MAP>)'",
                        types::calcite_name(&t)
                    ),
                    span_of(*e),
                );
            }
            fields.extend(unnest_fields(&t));
        }
        if with_ordinality {
            fields.push(Field::new("ORDINALITY", DataType::not_null(TypeKind::Int)));
        }
        Schema::new(fields)
    }

    /// HOP needs its size to be a multiple of its slide, CUMULATE its max size a multiple of its
    /// step (Flink's window TVF validation), when both are literal intervals.
    fn check_window_sizes(&mut self, fname: &str, args: &[FunctionArg]) {
        let (step_name, size_name) = match fname {
            "HOP" => ("SLIDE", "SIZE"),
            "CUMULATE" => ("STEP", "SIZE"),
            _ => return,
        };
        let find = |name: &str, position: usize| {
            args.iter()
                .find_map(|a| match a {
                    FunctionArg::Named {
                        name: n,
                        arg: FunctionArgExpr::Expr(e),
                        ..
                    } if n.value.eq_ignore_ascii_case(name) => Some(e),
                    _ => None,
                })
                .or_else(|| match args.get(position) {
                    Some(FunctionArg::Unnamed(FunctionArgExpr::Expr(e))) => Some(e),
                    _ => None,
                })
        };
        let (Some(step), Some(size)) = (find(step_name, 2), find(size_name, 3)) else {
            return;
        };
        let (Some(step_ms), Some(size_ms)) = (interval_millis(step), interval_millis(size)) else {
            return;
        };
        if step_ms <= 0 || size_ms % step_ms == 0 {
            return;
        }
        let message = if fname == "HOP" {
            format!(
                "HOP table function based aggregate requires size must be an integral multiple of slide, but got \
                 size {size_ms} ms and slide {step_ms} ms"
            )
        } else {
            format!(
                "CUMULATE table function based aggregate requires maxSize must be an integral multiple of step, \
                 but got maxSize {size_ms} ms and step {step_ms} ms."
            )
        };
        self.error("invalid-window", message, span_of(size));
    }

    /// Renames a relation's columns by an alias column list (`AS t (a, b)`).
    fn apply_alias_columns(&mut self, mut schema: Schema, alias: Option<&TableAlias>) -> Schema {
        let Some(alias) = alias else { return schema };
        if alias.columns.is_empty() {
            return schema;
        }
        if schema.columns.is_empty() {
            // An opaque table function: the alias names its columns.
            return Schema::new(
                alias
                    .columns
                    .iter()
                    .map(|c| Field::new(c.name.value.clone(), unknown()))
                    .collect(),
            );
        }
        if alias.columns.len() != schema.columns.len() {
            self.error(
                "column-count-mismatch",
                format!(
                    "List of column aliases must have same degree as table; table has {} columns {}, \
                     whereas alias list has {} columns",
                    schema.columns.len(),
                    names_list(&schema),
                    alias.columns.len()
                ),
                ident_span(&alias.name),
            );
            // Go on with the alias names (types unknown) so the mistake does not cascade.
            return Schema::new(
                alias
                    .columns
                    .iter()
                    .map(|c| Field::new(c.name.value.clone(), unknown()))
                    .collect(),
            );
        }
        for (field, c) in schema.columns.iter_mut().zip(&alias.columns) {
            field.name = c.name.value.clone();
        }
        schema
    }

    /// Reports columns used outside aggregates that are not `GROUP BY` keys.
    fn check_grouped(&mut self, e: &Expr, groups: &[&Expr], scope: &Scope<'_>) {
        if groups.iter().any(|g| same_group_expr(g, e, scope)) {
            return;
        }
        match e {
            Expr::Identifier(_) | Expr::CompoundIdentifier(_) => {
                // Correlated references to an enclosing query are not this query's business.
                if locate_column(e, scope).is_some() {
                    self.error(
                        "not-grouped",
                        format!("Expression '{e}' is not being grouped"),
                        span_of(e),
                    );
                }
            }
            Expr::Function(f) => {
                // Not a built-in: a user function, possibly an aggregate, is opaque.
                let user = riffle_dialects::function(&function_name(f)).is_none();
                if is_aggregate_call(f) || is_window_auxiliary_call(f) || f.over.is_some() || user {
                    return;
                }
                for child in function_arg_exprs(f) {
                    self.check_grouped(child, groups, scope);
                }
            }
            _ => {
                for child in children(e) {
                    self.check_grouped(child, groups, scope);
                }
            }
        }
    }
}

fn names_list(schema: &Schema) -> String {
    let names: Vec<&str> = schema.columns.iter().map(|c| c.name.as_str()).collect();
    format!("[{}]", names.join(", "))
}

fn function_display_name(name: &ObjectName) -> String {
    name.0
        .last()
        .and_then(|p| p.as_ident())
        .map(|i| i.value.clone())
        .unwrap_or_default()
}

/// The expression of a call argument (named or not).
fn arg_expr(a: &FunctionArg) -> Option<&Expr> {
    let arg = match a {
        FunctionArg::Unnamed(arg) => arg,
        FunctionArg::Named { arg, .. } | FunctionArg::ExprNamed { arg, .. } => arg,
    };
    match arg {
        FunctionArgExpr::Expr(e) => Some(e),
        _ => None,
    }
}

/// The length of a single-unit day-time interval literal (`INTERVAL '5' MINUTE`) in
/// milliseconds.
fn interval_millis(e: &Expr) -> Option<i64> {
    let Expr::Interval(interval) = e else {
        return None;
    };
    if interval.last_field.is_some() {
        return None;
    }
    let Expr::Value(v) = interval.value.as_ref() else {
        return None;
    };
    let sqlparser::ast::Value::SingleQuotedString(text) = &v.value else {
        return None;
    };
    let amount: i64 = text.trim().parse().ok()?;
    use sqlparser::ast::DateTimeField as F;
    let unit = match interval.leading_field.as_ref()? {
        F::Day | F::Days => 86_400_000,
        F::Hour | F::Hours => 3_600_000,
        F::Minute | F::Minutes => 60_000,
        F::Second | F::Seconds => 1_000,
        F::Millisecond | F::Milliseconds => 1,
        _ => return None,
    };
    amount.checked_mul(unit)
}

/// Columns produced by `UNNEST` of a value: a ROW element's fields, a map's KEY and VALUE, or
/// one column for other elements.
fn unnest_fields(t: &DataType) -> Vec<Field> {
    match &t.kind {
        TypeKind::Array(e) | TypeKind::Multiset(e) => match &e.kind {
            TypeKind::Row(fields) => fields
                .iter()
                .map(|f| Field::new(f.name.clone(), f.data_type.clone()))
                .collect(),
            _ => vec![Field::new("EXPR$0", (**e).clone())],
        },
        TypeKind::Map(k, v) => vec![
            Field::new("KEY", (**k).clone()),
            Field::new("VALUE", (**v).clone()),
        ],
        _ => vec![Field::new("EXPR$0", unknown())],
    }
}

/// The relation of a table function call: a user table function without an alias column list
/// has columns only its code knows (no fields here), so references to them are not checked.
fn user_function_relation(qualifier: Option<String>, schema: Schema) -> Relation {
    let mut relation = Relation::new(qualifier, None, schema);
    relation.opaque = relation.fields.is_empty();
    relation
}

fn make_nullable(r: &mut Relation) {
    for f in &mut r.fields {
        f.data_type.nullable = true;
    }
}

/// The column a `MATCH_RECOGNIZE` navigation call (`FIRST`, `LAST`, `PREV`, `NEXT`) reads.
fn navigated(f: &sqlparser::ast::Function) -> Option<&Expr> {
    let name = f.name.to_string().to_ascii_uppercase();
    if !matches!(name.as_str(), "FIRST" | "LAST" | "PREV" | "NEXT") {
        return None;
    }
    match &f.args {
        sqlparser::ast::FunctionArguments::List(list) => match list.args.first() {
            Some(sqlparser::ast::FunctionArg::Unnamed(sqlparser::ast::FunctionArgExpr::Expr(
                e @ (Expr::Identifier(_) | Expr::CompoundIdentifier(_)),
            ))) => Some(e),
            _ => None,
        },
        _ => None,
    }
}

fn pattern_symbols(p: &MatchRecognizePattern, out: &mut Vec<String>) {
    let add = |s: &MatchRecognizeSymbol, out: &mut Vec<String>| {
        if let MatchRecognizeSymbol::Named(i) = s {
            if !out.contains(&i.value) {
                out.push(i.value.clone());
            }
        }
    };
    match p {
        MatchRecognizePattern::Symbol(s) | MatchRecognizePattern::Exclude(s) => add(s, out),
        MatchRecognizePattern::Permute(ss) => ss.iter().for_each(|s| add(s, out)),
        MatchRecognizePattern::Concat(ps) | MatchRecognizePattern::Alternation(ps) => {
            ps.iter().for_each(|p| pattern_symbols(p, out))
        }
        MatchRecognizePattern::Group(p) | MatchRecognizePattern::Repetition(p, _) => {
            pattern_symbols(p, out)
        }
    }
}

/// Calcite's derived column name: the identifier's last part; `None` for other expressions
/// (which are named `EXPR$<ordinal>`).
fn derived_name(e: &Expr) -> Option<String> {
    match e {
        Expr::Identifier(i) => Some(i.value.clone()),
        Expr::CompoundIdentifier(parts) => parts.last().map(|i| i.value.clone()),
        Expr::Nested(inner) => derived_name(inner),
        _ => None,
    }
}

/// Calcite's `SqlValidatorUtil.uniquify`: repeated names get a numeric suffix (`a`, `a0`).
fn uniquify(mut fields: Vec<Field>) -> Vec<Field> {
    let mut seen: Vec<String> = Vec::new();
    for f in &mut fields {
        if seen.contains(&f.name) {
            let mut i = 0;
            while seen.contains(&format!("{}{i}", f.name)) {
                i += 1;
            }
            f.name = format!("{}{i}", f.name);
        }
        seen.push(f.name.clone());
    }
    fields
}

/// In an aggregating query only `window_time` (a grouped window's time) and the legacy
/// `*_ROWTIME` / `*_PROCTIME` accessors stay time attributes.
fn grouped_time_attribute(e: &Expr, typed: &Typed) -> Option<TimeAttribute> {
    match e {
        Expr::Identifier(i) if i.value == "window_time" => typed.time,
        Expr::CompoundIdentifier(p) if p.last().is_some_and(|i| i.value == "window_time") => {
            typed.time
        }
        Expr::Function(_) => typed.time,
        _ => None,
    }
}

fn select_item_expr(item: &SelectItem) -> Option<&Expr> {
    match item {
        SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => Some(e),
        SelectItem::ExprWithAliases { expr, .. } => Some(expr),
        _ => None,
    }
}

/// `GROUPING SETS`, `ROLLUP` and `CUBE` contribute their inner expressions.
fn flatten_grouping(e: &Expr) -> Vec<&Expr> {
    match e {
        Expr::GroupingSets(sets) | Expr::Rollup(sets) | Expr::Cube(sets) => {
            sets.iter().flatten().collect()
        }
        other => vec![other],
    }
}

/// Whether an expression calls a built-in aggregate outside `OVER` (not looking into subqueries).
fn contains_aggregate(e: &Expr) -> bool {
    find_aggregate(e).is_some()
}

/// The first built-in aggregate call outside `OVER` in an expression (not in subqueries).
fn find_aggregate(e: &Expr) -> Option<&Expr> {
    match e {
        Expr::Function(f) if is_aggregate_call(f) => Some(e),
        Expr::Function(f) => function_arg_exprs(f).into_iter().find_map(find_aggregate),
        other => children(other).into_iter().find_map(find_aggregate),
    }
}

fn function_arg_exprs(f: &sqlparser::ast::Function) -> Vec<&Expr> {
    match &f.args {
        FunctionArguments::List(list) => list.args.iter().filter_map(arg_expr).collect(),
        _ => Vec::new(),
    }
}

/// Direct sub-expressions of the common expression forms (subqueries excluded).
fn children(e: &Expr) -> Vec<&Expr> {
    match e {
        Expr::BinaryOp { left, right, .. } => vec![left, right],
        Expr::UnaryOp { expr, .. }
        | Expr::Nested(expr)
        | Expr::IsNull(expr)
        | Expr::IsNotNull(expr)
        | Expr::IsTrue(expr)
        | Expr::IsNotTrue(expr)
        | Expr::IsFalse(expr)
        | Expr::IsNotFalse(expr)
        | Expr::IsUnknown(expr)
        | Expr::IsNotUnknown(expr)
        | Expr::Cast { expr, .. }
        | Expr::Extract { expr, .. }
        | Expr::Ceil { expr, .. }
        | Expr::Floor { expr, .. }
        | Expr::Named { expr, .. } => vec![expr],
        Expr::IsDistinctFrom(a, b) | Expr::IsNotDistinctFrom(a, b) => vec![a, b],
        Expr::InList { expr, list, .. } => std::iter::once(&**expr).chain(list.iter()).collect(),
        Expr::InSubquery { expr, .. } => vec![expr],
        Expr::Between {
            expr, low, high, ..
        } => vec![expr, low, high],
        Expr::Like { expr, pattern, .. }
        | Expr::ILike { expr, pattern, .. }
        | Expr::SimilarTo { expr, pattern, .. }
        | Expr::RLike { expr, pattern, .. } => vec![expr, pattern],
        Expr::Position { expr, r#in } => vec![expr, r#in],
        Expr::Substring {
            expr,
            substring_from,
            substring_for,
            ..
        } => std::iter::once(&**expr)
            .chain(substring_from.as_deref())
            .chain(substring_for.as_deref())
            .collect(),
        Expr::Trim {
            expr, trim_what, ..
        } => std::iter::once(&**expr)
            .chain(trim_what.as_deref())
            .collect(),
        Expr::Case {
            operand,
            conditions,
            else_result,
            ..
        } => operand
            .as_deref()
            .into_iter()
            .chain(conditions.iter().flat_map(|c| [&c.condition, &c.result]))
            .chain(else_result.as_deref())
            .collect(),
        Expr::Array(a) => a.elem.iter().collect(),
        Expr::Tuple(items) => items.iter().collect(),
        Expr::CompoundFieldAccess { root, .. } => vec![root],
        Expr::AtTimeZone {
            timestamp,
            time_zone,
        } => vec![timestamp, time_zone],
        Expr::Function(f) => function_arg_exprs(f),
        _ => Vec::new(),
    }
}

/// The `ON` conditions of a `FROM` item that joins plain relations (tables, views, derived
/// tables) with a regular join; `None` when it has no such join (temporal, lateral, UNNEST and
/// table-function joins keep time attributes).
fn regular_join_conditions(item: &TableWithJoins) -> Option<Vec<&Expr>> {
    let mut regular = false;
    let mut conditions = Vec::new();
    for join in &item.joins {
        let plain_right = matches!(
            &join.relation,
            TableFactor::Table {
                version: None,
                args: None,
                ..
            } | TableFactor::Derived { lateral: false, .. }
                | TableFactor::NestedJoin { .. }
        );
        let constraint = match &join.join_operator {
            JoinOperator::Join(c)
            | JoinOperator::Inner(c)
            | JoinOperator::Left(c)
            | JoinOperator::LeftOuter(c)
            | JoinOperator::Right(c)
            | JoinOperator::RightOuter(c)
            | JoinOperator::FullOuter(c)
            | JoinOperator::CrossJoin(c) => c,
            _ => continue,
        };
        regular |= plain_right;
        if let JoinConstraint::On(e) = constraint {
            conditions.push(e);
        }
    }
    regular.then_some(conditions)
}

/// Whether join conditions bound time attributes of two different relations against each other
/// (an interval join) or equate window bounds of two relations (a window join).
fn is_time_bounded_join(
    conditions: &[&Expr],
    scope: &Scope<'_>,
    range: &std::ops::Range<usize>,
) -> bool {
    let mut conjuncts = Vec::new();
    for c in conditions {
        split_conjuncts(c, &mut conjuncts);
    }
    conjuncts.iter().any(|c| {
        let comparison = matches!(
            c,
            Expr::BinaryOp {
                op: BinaryOperator::Lt
                    | BinaryOperator::LtEq
                    | BinaryOperator::Gt
                    | BinaryOperator::GtEq,
                ..
            } | Expr::Between { .. }
        );
        let equality = matches!(
            c,
            Expr::BinaryOp {
                op: BinaryOperator::Eq,
                ..
            }
        );
        let mut relations = Vec::new();
        collect_relations(
            c,
            scope,
            range,
            &mut |field: &Field| {
                comparison && field.time_attribute.is_some()
                    || equality && matches!(field.name.as_str(), "window_start" | "window_end")
            },
            &mut relations,
        );
        relations.len() >= 2
    })
}

fn split_conjuncts<'e>(e: &'e Expr, out: &mut Vec<&'e Expr>) {
    match e {
        Expr::BinaryOp {
            left,
            op: BinaryOperator::And,
            right,
        } => {
            split_conjuncts(left, out);
            split_conjuncts(right, out);
        }
        Expr::Nested(inner) => split_conjuncts(inner, out),
        other => out.push(other),
    }
}

/// The distinct relations (within `range`) whose columns selected by `wanted` `e` references.
fn collect_relations(
    e: &Expr,
    scope: &Scope<'_>,
    range: &std::ops::Range<usize>,
    wanted: &mut dyn FnMut(&Field) -> bool,
    out: &mut Vec<usize>,
) {
    if let Some((ri, ci)) = locate_column(e, scope) {
        let field = scope.relations.get(ri).and_then(|r| r.fields.get(ci));
        if range.contains(&ri) && field.is_some_and(&mut *wanted) && !out.contains(&ri) {
            out.push(ri);
        }
        return;
    }
    for child in children(e) {
        collect_relations(child, scope, range, wanted, out);
    }
}

/// The (relation, column) a column reference resolves to in this scope level, if any.
fn locate_column(e: &Expr, scope: &Scope<'_>) -> Option<(usize, usize)> {
    let parts: &[Ident] = match e {
        Expr::Identifier(i) => std::slice::from_ref(i),
        Expr::CompoundIdentifier(p) => p,
        _ => return None,
    };
    for k in (1..parts.len().min(4)).rev() {
        if let Some((ri, r)) = scope
            .relations
            .iter()
            .enumerate()
            .find(|(_, r)| r.matches(&parts[..k]))
        {
            return parts
                .get(k)
                .and_then(|c| r.field(&c.value))
                .map(|(ci, _)| (ri, ci));
        }
    }
    let first = parts.first()?;
    scope
        .relations
        .iter()
        .enumerate()
        .find_map(|(ri, r)| r.field(&first.value).map(|(ci, _)| (ri, ci)))
}

/// Whether a select expression is a `GROUP BY` key: the same column, or the same expression.
fn same_group_expr(group: &Expr, e: &Expr, scope: &Scope<'_>) -> bool {
    match (locate_column(group, scope), locate_column(e, scope)) {
        (Some(a), Some(b)) => a == b,
        _ => group == e,
    }
}
