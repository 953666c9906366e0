//! Flink SQL script → [`JobGraph`].
//!
//! Queries are planned with DataFusion's SQL planner (name resolution, subqueries, views, type
//! coercion) over Riffle's table definitions; window TVFs are planned by a relation planner into
//! [`WindowTvfNode`]s. The resulting logical plan is then translated node by node into JobGraph
//! operators; every node or expression the runtime cannot run with Flink's semantics is rejected
//! here, before anything starts, with an `unsupported-feature` diagnostic.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::ops::ControlFlow;
use std::sync::Arc;

use arrow::datatypes::{
    DataType as ArrowType, Field as ArrowField, Schema as ArrowSchema, SchemaRef, TimeUnit,
};
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{
    Column, DFSchema, DataFusionError, Result as DfResult, ScalarValue, TableReference,
};
use datafusion::config::ConfigOptions;
use datafusion::logical_expr::expr::AggregateFunction as DfAggregate;
use datafusion::logical_expr::planner::{
    ContextProvider, PlannedRelation, RelationPlanner, RelationPlannerContext, RelationPlanning,
};
use datafusion::logical_expr::{
    AggregateUDF, Expr, ExprSchemable, Extension, LogicalPlan, LogicalPlanBuilder,
    LogicalTableSource, ScalarUDF, TableSource, WindowUDF,
};
use datafusion::optimizer::Analyzer;
use datafusion::sql::planner::{ParserOptions, SqlToRel};
use datafusion::sql::sqlparser::ast as sql;
use riffle_sql::ast::{self, ColumnKind, Script, Statement, StatementKind};
use riffle_sql::{Diagnostic, Span};

use crate::graph::{
    AggregateCall, AggregateFunction, ChangelogMode, ConnectorSpec, Edge, Field, JobGraph,
    NamedExpr, Operator, OperatorId, OperatorKind, Partitioning, WindowSpec,
};
use crate::session::{quote_ident, FlinkSession};
use crate::snapshot::SnapshotNode;
use crate::types::{arrow_type, flink_type};
use crate::window::{WindowTvfNode, WINDOW_COLUMNS};

mod grouping_sets;
mod join;
mod match_recognize;

use grouping_sets::GroupingSets;

mod correlate_plan;
mod over_plan;
mod rank_plan;
mod set_ops_all;
mod show;
mod subquery_expr;
mod temporal_plan;
mod time_type;

/// Diagnostic code of a feature the engine does not run (yet).
pub const UNSUPPORTED: &str = "unsupported-feature";
/// Diagnostic code of a planning error (unknown column, type mismatch, ...).
pub const PLAN_ERROR: &str = "plan-error";
/// Connector name of the sink a bare `SELECT` writes to (stdout, Flink's row format).
pub const COLLECT_CONNECTOR: &str = "collect";
/// Default of `pipeline.auto-watermark-interval` in milliseconds.
const DEFAULT_WATERMARK_INTERVAL_MS: i64 = 200;

/// Plans every `INSERT`, statement set and bare query of `script` into one job.
///
/// `SET` statements apply to the job's configuration. Errors (including unsupported features)
/// come back as diagnostics located in the script.
pub fn plan_script(script: &Script) -> Result<JobGraph, Vec<Diagnostic>> {
    plan_analyzed(script, &riffle_catalog::analyze(script))
}

/// [`plan_script`] with the script's catalog analysis at hand: a `CREATE TABLE ... LIKE` or an
/// `ALTER TABLE` is planned as the table definition the catalog derived (Flink's merge rules
/// live there, once).
pub fn plan_analyzed(
    script: &Script,
    analysis: &riffle_catalog::Analysis,
) -> Result<JobGraph, Vec<Diagnostic>> {
    let mut planner = Planner {
        match_within: script
            .statements
            .iter()
            .flat_map(|s| s.match_within.iter().cloned())
            .collect(),
        type_names: analysis.type_names.clone(),
        ..Planner::default()
    };
    for (i, statement) in script.statements.iter().enumerate() {
        let derived = analysis
            .statements
            .get(i)
            .and_then(|info| info.table.as_ref())
            .map(|table| ast::Statement {
                kind: StatementKind::CreateTable(Box::new(table.to_create_table())),
                span: statement.span,
                hints: statement.hints.clone(),
                match_within: statement.match_within.clone(),
            });
        if let Err(d) = planner.statement(derived.as_ref().unwrap_or(statement)) {
            return Err(vec![*d]);
        }
    }
    planner.finish()
}

type PlanResult<T> = Result<T, Box<Diagnostic>>;

fn unsupported(what: impl fmt::Display, span: Span) -> Box<Diagnostic> {
    Box::new(Diagnostic::error(
        UNSUPPORTED,
        format!("unsupported feature: {what}"),
        span,
    ))
}

fn plan_error(message: impl fmt::Display, span: Span) -> Box<Diagnostic> {
    Box::new(Diagnostic::error(PLAN_ERROR, message.to_string(), span))
}

/// A schema that only names columns (untyped): the output names of a pre-projection, whose
/// types the projection derives from its expressions.
fn names_schema(names: &[String], span: Span) -> PlanResult<DFSchema> {
    DFSchema::from_unqualified_fields(
        names
            .iter()
            .map(|n| ArrowField::new(n.clone(), ArrowType::Null, true))
            .collect::<Vec<_>>()
            .into(),
        Default::default(),
    )
    .map_err(|e| df_error(e, span))
}

/// Maps a DataFusion error to a diagnostic; `not implemented` errors become unsupported features.
fn df_error(e: DataFusionError, span: Span) -> Box<Diagnostic> {
    let e = e.find_root();
    match e {
        DataFusionError::NotImplemented(m) => {
            let m = m.strip_prefix("unsupported feature: ").unwrap_or(m);
            unsupported(m, span)
        }
        DataFusionError::Plan(m) | DataFusionError::Execution(m)
            if m.contains("not supported") || m.contains("does not support") =>
        {
            unsupported(m, span)
        }
        DataFusionError::SchemaError(e, _)
            if e.to_string().contains("duplicate unqualified field name") =>
        {
            unsupported(
                format!("aggregate calls that differ only by casts of their argument ({e})"),
                span,
            )
        }
        DataFusionError::Plan(m) if m.starts_with("Cannot infer common argument type") => {
            unsupported(format!("implicit conversion: {m}"), span)
        }
        DataFusionError::Plan(m) if m.starts_with("Invalid function") => {
            let name = m.split('\'').nth(1).unwrap_or("?").to_ascii_uppercase();
            unsupported(format!("function {name}"), span)
        }
        DataFusionError::Plan(m) => plan_error(m, span),
        DataFusionError::SchemaError(inner, _) => plan_error(inner, span),
        other => plan_error(other, span),
    }
}

/// A column of a table as the queries see it.
#[derive(Debug, Clone)]
struct TableColumn {
    name: String,
    flink: String,
    arrow: ArrowType,
    nullable: bool,
    /// `name AS expr` columns.
    computed: Option<ast::Expr>,
    rowtime: bool,
}

/// A `CREATE TABLE` as the planner needs it.
#[derive(Debug)]
struct TableInfo {
    name: String,
    columns: Vec<TableColumn>,
    /// Strategy of the `WATERMARK` and the index of its rowtime column.
    watermark: Option<(usize, ast::Expr)>,
    connector: ConnectorSpec,
    span: Span,
}

impl TableInfo {
    fn schema(&self) -> SchemaRef {
        Arc::new(ArrowSchema::new(
            self.columns
                .iter()
                .map(|c| ArrowField::new(c.name.clone(), c.arrow.clone(), c.nullable))
                .collect::<Vec<_>>(),
        ))
    }

    fn physical(&self) -> impl Iterator<Item = &TableColumn> {
        self.columns.iter().filter(|c| c.computed.is_none())
    }
}

/// Tables and views visible to a query.
#[derive(Default, Clone)]
struct Catalog {
    tables: HashMap<String, Arc<TableInfo>>,
    views: HashMap<String, LogicalPlan>,
}

/// The sink side of one INSERT or bare query, with the planned query.
struct PendingSink {
    plan: LogicalPlan,
    connector: ConnectorSpec,
    /// Target columns (Flink types) the query's columns are cast to.
    target: Option<Vec<TableColumn>>,
    span: Span,
}

impl PendingSink {
    /// `plan`'s rows collected as a statement's result (`SHOW`, `DESCRIBE`).
    fn collected(plan: LogicalPlan, span: Span) -> Self {
        PendingSink {
            plan,
            connector: ConnectorSpec {
                connector: COLLECT_CONNECTOR.to_string(),
                ..ConnectorSpec::default()
            },
            target: None,
            span,
        }
    }
}

#[derive(Default)]
struct Planner {
    session: FlinkSession,
    catalog: Arc<Catalog>,
    config: BTreeMap<String, String>,
    sinks: Vec<PendingSink>,
    functions: Vec<crate::udf::UserFunctionSpec>,
    /// `WITHIN` clauses of the script's `MATCH_RECOGNIZE`s.
    match_within: Vec<riffle_sql::ast::MatchWithin>,
    /// What the script's `TYPEOF` calls return (see `riffle_catalog::Analysis::type_names`).
    type_names: BTreeMap<riffle_sql::Location, String>,
}

/// Options a job may set whose effect the engine does not have yet (it keeps all state).
const UNHONOURED_OPTIONS: &[&str] = &["table.exec.state.ttl"];

impl Planner {
    fn statement(&mut self, statement: &Statement) -> PlanResult<()> {
        let span = statement.span;
        match &statement.kind {
            StatementKind::Set(Some(option)) => {
                if UNHONOURED_OPTIONS.contains(&option.key.as_str()) {
                    return Err(unsupported(format!("'{}'", option.key), span));
                }
                if option.key == "table.local-time-zone" {
                    if crate::functions::LocalZone::parse(&option.value).is_none() {
                        return Err(unsupported(
                            format!("'table.local-time-zone' = '{}'", option.value),
                            span,
                        ));
                    }
                    self.session = FlinkSession::with_local_time_zone(&option.value)
                        .with_user_functions(&self.functions);
                }
                self.config.insert(option.key.clone(), option.value.clone());
            }
            StatementKind::Set(None) => {}
            StatementKind::Reset(Some(key)) => {
                self.config.remove(&key.key);
            }
            StatementKind::Reset(None) => self.config.clear(),
            StatementKind::CreateTable(create) => self.create_table(create, span)?,
            StatementKind::CreateView(view) => {
                let name = view.name.to_string();
                let plan = self.plan_query(&view.query, span)?;
                let plan = if view.columns.is_empty() {
                    plan
                } else {
                    rename_columns(
                        plan,
                        &view
                            .columns
                            .iter()
                            .map(|c| c.value.clone())
                            .collect::<Vec<_>>(),
                    )
                    .map_err(|e| df_error(e, span))?
                };
                self.catalog_mut().views.insert(name, plan);
            }
            StatementKind::Drop(drop) => {
                let name = drop.name.to_string();
                match drop.object {
                    ast::DropObject::Table => {
                        self.catalog_mut().tables.remove(&name);
                    }
                    ast::DropObject::View => {
                        self.catalog_mut().views.remove(&name);
                    }
                    _ => {
                        return Err(unsupported(
                            "DROP of catalogs, databases or functions",
                            span,
                        ))
                    }
                }
            }
            StatementKind::Insert(insert) => self.insert(insert)?,
            StatementKind::StatementSet(set) => {
                for insert in &set.inserts {
                    self.insert(insert)?;
                }
            }
            StatementKind::Query(query) => {
                let plan = self.plan_query(query, span)?;
                let connector = ConnectorSpec {
                    connector: COLLECT_CONNECTOR.to_string(),
                    ..ConnectorSpec::default()
                };
                self.sinks.push(PendingSink {
                    plan,
                    connector,
                    target: None,
                    span,
                });
            }
            StatementKind::CreateFunction(function) => {
                // At the function's name, where `check` reports its language.
                let at = function.name_span;
                let spec = crate::udf::spec(function, &self.config).map_err(|e| match e {
                    crate::udf::SpecError::Unsupported(what) => unsupported(what, at),
                    crate::udf::SpecError::Invalid(message) => plan_error(message, at),
                })?;
                self.functions.retain(|f| f.name != spec.name);
                self.functions.push(spec);
                self.session = self.session.clone().with_user_functions(&self.functions);
            }
            StatementKind::CreateCatalog(_) => return Err(unsupported("CREATE CATALOG", span)),
            StatementKind::CreateDatabase(_) => return Err(unsupported("CREATE DATABASE", span)),
            StatementKind::Use(_) => return Err(unsupported("USE", span)),
            StatementKind::Client(u) if u.keywords.starts_with("SHOW") => {
                let (column, rows) = show::listing(&u.text, &self.catalog)
                    .map_err(|what| unsupported(what, span))?;
                let plan = show::rows_plan(column, &rows).map_err(|e| df_error(e, span))?;
                self.sinks.push(PendingSink::collected(plan, span));
            }
            StatementKind::Client(u) if u.keywords.starts_with("DESC") => {
                let plan =
                    show::describe(&u.text, &self.catalog).map_err(|m| plan_error(m, span))?;
                self.sinks.push(PendingSink::collected(plan, span));
            }
            StatementKind::Alter(u) | StatementKind::Client(u) => {
                return Err(unsupported(&u.keywords, span));
            }
            StatementKind::Explain(_) => {
                return Err(unsupported(
                    "EXPLAIN statements (use `riffle explain`)",
                    span,
                ))
            }
        }
        Ok(())
    }

    fn catalog_mut(&mut self) -> &mut Catalog {
        Arc::make_mut(&mut self.catalog)
    }

    fn create_table(&mut self, create: &ast::CreateTable, span: Span) -> PlanResult<()> {
        if create.like.is_some() {
            return Err(unsupported("CREATE TABLE ... LIKE", span));
        }
        let name = create.name.to_string();
        let mut columns = Vec::new();
        // CREATE TABLE ... AS SELECT: the query's columns become the table's, and the query is
        // inserted into it.
        let as_query = match &create.as_query {
            Some(query) => {
                if !create.columns.is_empty() || create.watermark.is_some() {
                    return Err(unsupported(
                        "CREATE TABLE AS SELECT with declared columns",
                        span,
                    ));
                }
                let plan = self.plan_query(query, span)?;
                for field in fields_of(plan.schema()) {
                    let arrow = field.arrow().map_err(|e| plan_error(e, span))?;
                    columns.push(TableColumn {
                        name: field.name.clone(),
                        flink: field.data_type.clone(),
                        arrow,
                        nullable: field.nullable,
                        computed: None,
                        rowtime: false,
                    });
                }
                Some(plan)
            }
            None => None,
        };
        let mut metadata = Vec::new();
        for column in &create.columns {
            match &column.kind {
                ColumnKind::Physical { data_type, .. } => {
                    let arrow = arrow_type(data_type)
                        .map_err(|t| unsupported(format!("type {t}"), column.span))?;
                    columns.push(TableColumn {
                        name: column.name.value.clone(),
                        flink: data_type.to_string(),
                        arrow,
                        nullable: data_type.nullable,
                        computed: None,
                        rowtime: false,
                    });
                }
                ColumnKind::Computed { expr } => columns.push(TableColumn {
                    name: column.name.value.clone(),
                    flink: String::new(),
                    arrow: ArrowType::Null,
                    nullable: true,
                    computed: Some(expr.clone()),
                    rowtime: false,
                }),
                ColumnKind::Metadata {
                    data_type,
                    key,
                    is_virtual,
                } => {
                    // Produced by the source next to the physical columns; the connector checks
                    // the key when it is opened.
                    let arrow = arrow_type(data_type)
                        .map_err(|t| unsupported(format!("type {t}"), column.span))?;
                    metadata.push(crate::graph::MetadataColumn {
                        column: column.name.value.clone(),
                        key: key.clone().unwrap_or_else(|| column.name.value.clone()),
                        is_virtual: *is_virtual,
                    });
                    columns.push(TableColumn {
                        name: column.name.value.clone(),
                        flink: data_type.to_string(),
                        arrow,
                        nullable: data_type.nullable,
                        computed: None,
                        rowtime: false,
                    });
                }
                ColumnKind::Header { .. } => {
                    return Err(unsupported("header columns", column.span))
                }
            }
        }
        // Computed columns are typed over the physical columns.
        let physical = Arc::new(ArrowSchema::new(
            columns
                .iter()
                .filter(|c| c.computed.is_none())
                .map(|c| ArrowField::new(c.name.clone(), c.arrow.clone(), c.nullable))
                .collect::<Vec<_>>(),
        ));
        let physical_df =
            DFSchema::try_from(physical.as_ref().clone()).map_err(|e| df_error(e, span))?;
        for (column, def) in columns.iter_mut().zip(&create.columns) {
            if let Some(expr) = &column.computed {
                let logical = self
                    .session
                    .logical_from_ast(expr, &physical_df)
                    .map_err(|e| df_error(e, def.span))?;
                let (t, nullable) =
                    type_of(&logical, &physical_df).map_err(|e| df_error(e, def.span))?;
                column.flink = flink_type(&t, nullable);
                column.arrow = t;
                column.nullable = nullable;
            }
        }
        let mut watermark = None;
        if let Some(wm) = &create.watermark {
            let [rowtime] = wm.column.as_slice() else {
                return Err(unsupported("WATERMARK on a nested field", wm.span));
            };
            let Some(idx) = columns.iter().position(|c| c.name == rowtime.value) else {
                return Err(plan_error(
                    format!(
                        "The rowtime attribute field '{}' is not defined in the table schema",
                        rowtime.value
                    ),
                    wm.span,
                ));
            };
            let col = &mut columns[idx];
            match &col.arrow {
                ArrowType::Timestamp(TimeUnit::Second | TimeUnit::Millisecond, _) => {}
                other => {
                    return Err(plan_error(
                        format!("Invalid data type of time field for watermark definition. The field must be of type TIMESTAMP(p) or TIMESTAMP_LTZ(p), the supported precision 'p' is from 0 to 3, but the time field type is {}", flink_type(other, true)),
                        wm.span,
                    ))
                }
            }
            // Flink's rowtime attributes are TIMESTAMP(3) whatever precision up to 3 the column
            // declares: a physical TIMESTAMP(0) rowtime is read, stored and typed in
            // milliseconds.
            if let (None, ArrowType::Timestamp(TimeUnit::Second, tz)) = (&col.computed, &col.arrow)
            {
                col.arrow = ArrowType::Timestamp(TimeUnit::Millisecond, tz.clone());
                col.flink = flink_type(&col.arrow, col.nullable);
            }
            col.rowtime = true;
            watermark = Some((idx, wm.expr.clone()));
        }
        let options: BTreeMap<String, String> = create
            .options
            .iter()
            .map(|o| (o.key.clone(), o.value.clone()))
            .collect();
        // rsqlDB tables name their connector with `type` (the connector normalises the rest).
        let Some(connector) = options
            .get("connector")
            .or_else(|| options.get("type").filter(|t| *t == "rocketmq"))
            .cloned()
        else {
            return Err(unsupported(
                "tables without a 'connector' option",
                create.name_span,
            ));
        };
        let info = TableInfo {
            name: name.clone(),
            columns,
            watermark,
            connector: ConnectorSpec {
                table: name.clone(),
                connector,
                options,
                metadata,
                primary_key: create
                    .primary_key
                    .iter()
                    .flat_map(|pk| pk.columns.iter().map(|c| c.value.clone()))
                    .collect(),
                partition_keys: create
                    .partitioned_by
                    .iter()
                    .map(|c| c.value.clone())
                    .collect(),
                read_columns: None,
            },
            span,
        };
        // Validate the watermark expression now, not at run time.
        if let Some((_, expr)) = &info.watermark {
            let full = DFSchema::try_from(info.schema().as_ref().clone())
                .map_err(|e| df_error(e, span))?;
            self.session
                .logical_from_ast(expr, &full)
                .map_err(|e| df_error(e, span))?;
        }
        if let Some(plan) = as_query {
            self.sinks.push(PendingSink {
                plan,
                connector: info.connector.clone(),
                target: Some(info.columns.clone()),
                span,
            });
        }
        self.catalog_mut().tables.insert(name, Arc::new(info));
        Ok(())
    }

    fn insert(&mut self, insert: &ast::Insert) -> PlanResult<()> {
        let name = insert.table.to_string();
        let Some(table) = self.catalog.tables.get(&name).cloned() else {
            return Err(plan_error(
                format!("Object '{name}' not found"),
                insert.table_span,
            ));
        };
        if insert.overwrite {
            return Err(unsupported("INSERT OVERWRITE", insert.span));
        }
        if !insert.partition.is_empty() {
            return Err(unsupported("INSERT with a static PARTITION", insert.span));
        }
        // VIRTUAL metadata columns are read-only: not part of what an INSERT writes.
        let target: Vec<TableColumn> = table
            .physical()
            .filter(|c| {
                !table
                    .connector
                    .metadata
                    .iter()
                    .any(|m| m.is_virtual && m.column == c.name)
            })
            .cloned()
            .collect();
        let mut plan = self.plan_source(&insert.query, insert.span, true)?;
        if !insert.columns.is_empty() {
            plan =
                self.map_insert_columns(plan, &insert.columns, &target, &table.name, insert.span)?;
        }
        let produced = plan.schema().fields().len();
        if produced != target.len() {
            return Err(plan_error(
                format!(
                    "Column types of query result and sink for '{}' do not match. Query has {} columns, sink has {}.",
                    table.name,
                    produced,
                    target.len()
                ),
                insert.span,
            ));
        }
        self.sinks.push(PendingSink {
            plan,
            connector: table.connector.clone(),
            target: Some(target),
            span: insert.span,
        });
        Ok(())
    }

    /// `INSERT INTO t (c2, c1) query`: reorders the query's columns into the table's order;
    /// table columns that are not listed get NULL.
    fn map_insert_columns(
        &self,
        plan: LogicalPlan,
        listed: &[sql::Ident],
        target: &[TableColumn],
        table: &str,
        span: Span,
    ) -> PlanResult<LogicalPlan> {
        let columns = plan.schema().columns();
        if columns.len() != listed.len() {
            return Err(plan_error(
                format!(
                    "Column types of query result and sink for '{table}' do not match. Query has {} columns, the column list {}.",
                    columns.len(),
                    listed.len()
                ),
                span,
            ));
        }
        let mut exprs = Vec::with_capacity(target.len());
        for t in target {
            let position = listed.iter().position(|l| l.value == t.name);
            let expr = match position.and_then(|p| columns.get(p)) {
                Some(c) => Expr::Column(c.clone()),
                None if position.is_some() => {
                    return Err(plan_error("column list out of range", span))
                }
                None => Expr::Literal(ScalarValue::Null, None)
                    .cast_to(&t.arrow, plan.schema())
                    .map_err(|e| df_error(e, span))?,
            };
            exprs.push(expr.alias(t.name.clone()));
        }
        if let Some(unknown) = listed
            .iter()
            .find(|l| !target.iter().any(|t| t.name == l.value))
        {
            return Err(plan_error(
                format!("Unknown target column '{}'", unknown.value),
                span,
            ));
        }
        LogicalPlanBuilder::from(plan)
            .project(exprs)
            .and_then(|b| b.build())
            .map_err(|e| df_error(e, span))
    }

    /// Plans a query with DataFusion and runs its analyzer (type coercion).
    fn plan_query(&self, query: &ast::Query, span: Span) -> PlanResult<LogicalPlan> {
        self.plan_source(query, span, false)
    }

    /// [`Self::plan_query`] of a query that may be the source of an `INSERT`
    /// (`insert_source`), whose `VALUES` the sink types.
    fn plan_source(
        &self,
        query: &ast::Query,
        span: Span,
        insert_source: bool,
    ) -> PlanResult<LogicalPlan> {
        crate::checks::check_query_text(query, insert_source).map_err(|m| plan_error(m, span))?;
        self.plan_query_at(query, span).map_err(|mut d| {
            d.span = locate(query, &d.message).unwrap_or(d.span);
            d
        })
    }

    fn plan_query_at(&self, query: &ast::Query, span: Span) -> PlanResult<LogicalPlan> {
        let mut query = query.clone();
        let legacy_windows =
            crate::legacy::rewrite(&mut query).map_err(|what| unsupported(what, span))?;
        let relation_planner: Arc<dyn RelationPlanner> = Arc::new(FlinkRelations {
            catalog: self.catalog.clone(),
            functions: self.functions.clone(),
            session: self.session.clone(),
            match_within: self.match_within.clone(),
            legacy_windows,
        });
        let provider = Provider {
            session: &self.session,
            catalog: &self.catalog,
            relation_planners: vec![relation_planner],
        };
        let options = ParserOptions {
            parse_float_as_decimal: true,
            enable_ident_normalization: false,
            // Flink sorts NULL lowest: first ascending, last descending.
            default_null_ordering: datafusion::sql::planner::NullOrdering::NullsMin,
            ..ParserOptions::default()
        };
        crate::functions::rewrite_typeof(&mut query, &self.type_names);
        crate::functions::rewrite_calls(&mut query);
        crate::functions::rewrite_collections(&mut query);
        crate::functions::rewrite_predicates(&mut query);
        crate::fetch::rewrite_fetch(&mut query).map_err(|what| unsupported(what, span))?;
        crate::functions::rewrite_json(&mut query).map_err(|m| {
            if m.contains("not supported") {
                unsupported(m, span)
            } else {
                plan_error(m, span)
            }
        })?;
        crate::functions::tag_cast_arguments(&mut query);
        correlate_plan::rewrite_unnest(&mut query);
        name_expressions(&mut query);
        let statement = sql::Statement::Query(Box::new(query));
        let plan = SqlToRel::new_with_options(&provider, options)
            .sql_statement_to_plan(statement)
            .map_err(|e| df_error(e, span))?;
        crate::checks::check_explicit_casts(&plan).map_err(|e| df_error(e, span))?;
        let plan = int_literals(plan, &self.session).map_err(|e| df_error(e, span))?;
        let plan = Analyzer::new()
            .execute_and_check(plan, self.session.state().config_options(), |_, _| {})
            .map_err(|e| df_error(e, span))?;
        crate::checks::check_coerced(&plan).map_err(|e| df_error(e, span))?;
        Ok(plan)
    }

    /// A boolean configuration option (`false` when not set).
    fn bool_option(&self, key: &str) -> Result<bool, Vec<Diagnostic>> {
        match self.config.get(key) {
            None => Ok(false),
            Some(v) => v.trim().parse::<bool>().map_err(|_| {
                vec![Diagnostic::error(
                    PLAN_ERROR,
                    format!("invalid value for '{key}': '{v}'"),
                    Span::default(),
                )]
            }),
        }
    }

    fn finish(self) -> Result<JobGraph, Vec<Diagnostic>> {
        if self.sinks.is_empty() {
            return Err(vec![Diagnostic::error(
                PLAN_ERROR,
                "the script has no INSERT or query to run",
                Span::default(),
            )]);
        }
        let parallelism = match self.config.get("parallelism.default") {
            None => 1,
            Some(v) => match v.trim().parse::<usize>() {
                Ok(p) if p > 0 => p,
                _ => {
                    return Err(vec![Diagnostic::error(
                        PLAN_ERROR,
                        format!("invalid value for 'parallelism.default': '{v}'"),
                        Span::default(),
                    )])
                }
            },
        };
        let interval_ms = match self.config.get("pipeline.auto-watermark-interval") {
            None => DEFAULT_WATERMARK_INTERVAL_MS,
            Some(v) => parse_duration_ms(v).ok_or_else(|| {
                vec![Diagnostic::error(
                    PLAN_ERROR,
                    format!("invalid value for 'pipeline.auto-watermark-interval': '{v}'"),
                    Span::default(),
                )]
            })?,
        };
        let cdc_events_duplicate = self.bool_option("table.exec.source.cdc-events-duplicate")?;
        let mini_batch = self.bool_option("table.exec.mini-batch.enabled")?;
        let mut builder = GraphBuilder {
            session: &self.session,
            catalog: &self.catalog,
            parallelism,
            interval_ms,
            cdc_events_duplicate,
            mini_batch,
            operators: Vec::new(),
            edges: Vec::new(),
            span: Span::default(),
            session_allowed: false,
            rank_usage: Default::default(),
        };
        for sink in &self.sinks {
            builder.span = sink.span;
            builder.sink(sink).map_err(|d| vec![*d])?;
        }
        let mut config = self.config.clone();
        config.insert("parallelism.default".into(), parallelism.to_string());
        let mut graph = crate::reuse::reuse_sub_plans(JobGraph {
            operators: builder.operators,
            edges: builder.edges,
            config,
            functions: self.functions.clone(),
        });
        crate::slicing::share_slices(&mut graph, &self.session);
        crate::read_columns::mark_read_columns(&mut graph, &self.session);
        Ok(graph)
    }
}

/// The type and nullability of an expression over `schema`.
fn type_of(expr: &Expr, schema: &DFSchema) -> DfResult<(ArrowType, bool)> {
    let (_, field) = expr.to_field(schema)?;
    Ok((field.data_type().clone(), field.is_nullable()))
}

/// Rejects expressions that call functions the engine does not run ([`crate::functions::is_supported`]).
fn check_functions(exprs: &[&Expr], span: Span) -> PlanResult<()> {
    use datafusion::common::tree_node::TreeNodeRecursion;
    let mut unknown = std::collections::BTreeSet::new();
    for expr in exprs {
        let _ = expr.apply(|e| {
            if let Expr::ScalarFunction(f) = e {
                let name = f.name();
                if !crate::functions::is_supported(name) && !crate::udf::is_user_function(&f.func) {
                    unknown.insert(name.to_ascii_uppercase());
                }
            }
            Ok(TreeNodeRecursion::Continue)
        });
    }
    if unknown.is_empty() {
        return Ok(());
    }
    let names: Vec<String> = unknown.into_iter().collect();
    Err(unsupported(
        format!(
            "function {} (not verified against Flink yet)",
            names.join(", ")
        ),
        span,
    ))
}

/// The span of the construct a diagnostic message names (a function, a CAST, a window TVF), when
/// it can be found in `query`; diagnostics otherwise point at the statement.
fn locate(query: &sql::Query, message: &str) -> Option<Span> {
    use datafusion::sql::sqlparser::ast::{visit_expressions, Spanned};
    let upper = message.to_ascii_uppercase();
    let mut found = None;
    let _ = visit_expressions(query, |e: &sql::Expr| {
        let hit = match e {
            sql::Expr::Function(f) => {
                let name = f.name.to_string().to_ascii_uppercase();
                upper.contains(&format!("FUNCTION {name}"))
                    || upper.contains(&format!("{name},"))
                    || upper.contains(&format!(" {name} "))
                    || upper.starts_with(&format!("{name} "))
            }
            sql::Expr::Cast { .. } => upper.contains("CAST "),
            _ => false,
        };
        if hit && found.is_none() {
            let s = Span::from(e.span());
            if !s.is_unknown() {
                found = Some(s);
            }
            return ControlFlow::Break(());
        }
        ControlFlow::Continue(())
    });
    found
}

/// Names (lower-cased) of the relations and aliases a `FROM` clause brings into scope.
fn relation_names(from: &[sql::TableWithJoins]) -> Vec<String> {
    fn add(factor: &sql::TableFactor, out: &mut Vec<String>) {
        match factor {
            sql::TableFactor::Table { name, alias, .. } => {
                if let Some(last) = name.0.last().and_then(|p| p.as_ident()) {
                    out.push(last.value.to_ascii_lowercase());
                }
                if let Some(a) = alias {
                    out.push(a.name.value.to_ascii_lowercase());
                }
            }
            other => {
                let alias = match other {
                    sql::TableFactor::Derived { alias, .. }
                    | sql::TableFactor::TableFunction { alias, .. }
                    | sql::TableFactor::Function { alias, .. }
                    | sql::TableFactor::UNNEST { alias, .. } => alias.as_ref(),
                    sql::TableFactor::NestedJoin {
                        table_with_joins,
                        alias,
                    } => {
                        add(&table_with_joins.relation, out);
                        for j in &table_with_joins.joins {
                            add(&j.relation, out);
                        }
                        alias.as_ref()
                    }
                    _ => None,
                };
                if let Some(a) = alias {
                    out.push(a.name.value.to_ascii_lowercase());
                }
            }
        }
    }
    let mut out = Vec::new();
    for t in from {
        add(&t.relation, &mut out);
        for j in &t.joins {
            add(&j.relation, &mut out);
        }
    }
    out
}

/// The output name of an unaliased nested field access (`row_col.field`, `t.row_col.field`):
/// the last field. `None` for plain `column` / `relation.column` references.
fn field_access_name(expr: &sql::Expr, relations: &[String]) -> Option<String> {
    let sql::Expr::CompoundIdentifier(parts) = expr else {
        return None;
    };
    let qualified = parts
        .first()
        .is_some_and(|p| relations.contains(&p.value.to_ascii_lowercase()));
    let fields = if qualified {
        parts.len() - 1
    } else {
        parts.len()
    };
    (fields >= 2)
        .then(|| parts.last().map(|p| p.value.clone()))
        .flatten()
}

/// Names unaliased computed select items `EXPR$<position>` as Calcite does (DataFusion would
/// reject two equal unaliased expressions).
fn name_expressions(query: &mut sql::Query) {
    use datafusion::sql::sqlparser::ast::{SelectItem, SetExpr, VisitMut, VisitorMut};

    struct Namer;

    fn name_set_expr(body: &mut SetExpr) {
        match body {
            SetExpr::Select(select) => {
                let relations = relation_names(&select.from);
                for (i, item) in select.projection.iter_mut().enumerate() {
                    if let SelectItem::UnnamedExpr(expr) = item {
                        if let Some(field) = field_access_name(expr, &relations) {
                            // Calcite names `row_column.field` after the field.
                            *item = SelectItem::ExprWithAlias {
                                expr: expr.clone(),
                                alias: sql::Ident::with_quote('`', field),
                            };
                        } else if !matches!(
                            expr,
                            sql::Expr::Identifier(_) | sql::Expr::CompoundIdentifier(_)
                        ) {
                            let alias = sql::Ident::with_quote('`', format!("EXPR${i}"));
                            *item = SelectItem::ExprWithAlias {
                                expr: expr.clone(),
                                alias,
                            };
                        }
                    }
                }
            }
            SetExpr::SetOperation { left, right, .. } => {
                name_set_expr(left);
                name_set_expr(right);
            }
            _ => {}
        }
    }

    impl VisitorMut for Namer {
        type Break = ();

        /// Flink's `IF(c, a, b)` is `CASE WHEN c THEN a ELSE b END`; `IFNULL(a, b)` is
        /// `COALESCE(a, b)`.
        fn post_visit_expr(&mut self, expr: &mut sql::Expr) -> ControlFlow<Self::Break> {
            if let sql::Expr::Function(f) = expr {
                let name = f.name.to_string().to_ascii_uppercase();
                let args: Vec<sql::Expr> = match &f.args {
                    sql::FunctionArguments::List(l) => l
                        .args
                        .iter()
                        .filter_map(|a| match a {
                            sql::FunctionArg::Unnamed(sql::FunctionArgExpr::Expr(e)) => {
                                Some(e.clone())
                            }
                            _ => None,
                        })
                        .collect(),
                    _ => Vec::new(),
                };
                match (name.as_str(), args.as_slice()) {
                    ("IF", [c, a, b]) => {
                        *expr = sql::Expr::Case {
                            case_token: sql::helpers::attached_token::AttachedToken::empty(),
                            end_token: sql::helpers::attached_token::AttachedToken::empty(),
                            operand: None,
                            conditions: vec![sql::CaseWhen {
                                condition: c.clone(),
                                result: a.clone(),
                            }],
                            else_result: Some(Box::new(b.clone())),
                        };
                    }
                    ("IFNULL", [_, _]) => {
                        f.name = sql::ObjectName::from(vec![sql::Ident::new("COALESCE")])
                    }
                    _ => {}
                }
            }
            ControlFlow::Continue(())
        }

        fn post_visit_query(&mut self, query: &mut sql::Query) -> ControlFlow<Self::Break> {
            name_set_expr(&mut query.body);
            ControlFlow::Continue(())
        }
    }

    let _ = query.visit(&mut Namer);
}

/// Types integer literals as Flink does: `INT` when the value fits, `BIGINT` otherwise
/// (DataFusion makes every integer literal `BIGINT`, which changes overflow behaviour).
fn int_literals(plan: LogicalPlan, session: &FlinkSession) -> DfResult<LogicalPlan> {
    let registry = session.state().scalar_functions().clone();
    use datafusion::logical_expr::expr_rewriter::NamePreserver;
    plan.transform_up_with_subqueries(|node| {
        // Output names stay as they were, so references from parent nodes still resolve.
        let preserver = NamePreserver::new(&node);
        let mut schema = datafusion::common::DFSchema::empty();
        for input in node.inputs() {
            schema.merge(input.schema());
        }
        let node = node.map_expressions(|e| {
            let saved = preserver.save(&e);
            let rewritten = crate::session::flink_int_literals(e)?;
            let rewritten = rewritten
                .transform_data(|e| crate::functions::case_timestamp_branches(e, &schema))?
                .transform_data(|e| crate::functions::flink_casts(e, &schema, &registry))?
                .transform_data(|e| crate::functions::decimal_division(e, &schema, &registry))?;
            let rewritten =
                rewritten.transform_data(|e| crate::session::resolve_functions(e, &registry))?;
            Ok(rewritten.update_data(|e| saved.restore(e)))
        })?;
        if node.transformed {
            Ok(Transformed::yes(node.data.recompute_schema()?))
        } else {
            Ok(node)
        }
    })
    .map(|t| t.data)
}

/// Parses Flink durations such as `200 ms`, `1 s`, `200`.
fn parse_duration_ms(v: &str) -> Option<i64> {
    let v = v.trim();
    let split = v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len());
    let (num, unit) = v.split_at(split);
    let n: i64 = num.parse().ok()?;
    let factor = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "ms" | "milli" | "millis" | "millisecond" | "milliseconds" => 1,
        "s" | "sec" | "secs" | "second" | "seconds" => 1_000,
        "min" | "m" | "minute" | "minutes" => 60_000,
        "h" | "hour" | "hours" => 3_600_000,
        _ => return None,
    };
    n.checked_mul(factor)
}

/// Renames a plan's output columns (view column lists).
fn rename_columns(plan: LogicalPlan, names: &[String]) -> DfResult<LogicalPlan> {
    let exprs: Vec<Expr> = plan
        .schema()
        .columns()
        .into_iter()
        .zip(names)
        .map(|(c, n)| Expr::Column(c).alias(n.clone()))
        .collect();
    LogicalPlanBuilder::from(plan).project(exprs)?.build()
}

/// DataFusion's view of Riffle's catalog and function library.
struct Provider<'a> {
    session: &'a FlinkSession,
    catalog: &'a Catalog,
    relation_planners: Vec<Arc<dyn RelationPlanner>>,
}

impl ContextProvider for Provider<'_> {
    fn get_table_source(&self, name: TableReference) -> DfResult<Arc<dyn TableSource>> {
        let key = name.table();
        match self.catalog.tables.get(key) {
            Some(t) => Ok(Arc::new(LogicalTableSource::new(t.schema()))),
            None => datafusion::common::plan_err!("Object '{}' not found", name),
        }
    }

    fn get_relation_planners(&self) -> &[Arc<dyn RelationPlanner>] {
        &self.relation_planners
    }

    fn get_type_planner(&self) -> Option<Arc<dyn datafusion::logical_expr::planner::TypePlanner>> {
        Some(FlinkSession::type_planner())
    }

    fn get_expr_planners(&self) -> &[Arc<dyn datafusion::logical_expr::planner::ExprPlanner>] {
        self.session.state().expr_planners()
    }

    fn get_function_meta(&self, name: &str) -> Option<Arc<ScalarUDF>> {
        self.session
            .state()
            .scalar_functions()
            .get(&name.to_ascii_lowercase())
            .cloned()
    }

    fn get_higher_order_meta(
        &self,
        name: &str,
    ) -> Option<Arc<datafusion::logical_expr::HigherOrderUDF>> {
        self.session
            .state()
            .higher_order_functions()
            .get(&name.to_ascii_lowercase())
            .cloned()
    }

    fn get_aggregate_meta(&self, name: &str) -> Option<Arc<AggregateUDF>> {
        self.session
            .state()
            .aggregate_functions()
            .get(&name.to_ascii_lowercase())
            .cloned()
    }

    fn get_window_meta(&self, name: &str) -> Option<Arc<WindowUDF>> {
        self.session
            .state()
            .window_functions()
            .get(&name.to_ascii_lowercase())
            .cloned()
    }

    fn get_variable_type(&self, _variable_names: &[String]) -> Option<ArrowType> {
        None
    }

    fn options(&self) -> &ConfigOptions {
        self.session.state().config_options()
    }

    fn udf_names(&self) -> Vec<String> {
        self.session
            .state()
            .scalar_functions()
            .keys()
            .cloned()
            .collect()
    }

    fn higher_order_function_names(&self) -> Vec<String> {
        self.session
            .state()
            .higher_order_functions()
            .keys()
            .cloned()
            .collect()
    }

    fn udaf_names(&self) -> Vec<String> {
        self.session
            .state()
            .aggregate_functions()
            .keys()
            .cloned()
            .collect()
    }

    fn udwf_names(&self) -> Vec<String> {
        self.session
            .state()
            .window_functions()
            .keys()
            .cloned()
            .collect()
    }
}

/// Plans views and Flink's window TVFs inside `FROM`.
#[derive(Debug)]
struct FlinkRelations {
    catalog: Arc<Catalog>,
    /// `CREATE FUNCTION`s so far (table functions are planned here).
    functions: Vec<crate::udf::UserFunctionSpec>,
    /// Plans `MATCH_RECOGNIZE` expressions.
    session: FlinkSession,
    /// `WITHIN` clauses of the script's `MATCH_RECOGNIZE`s.
    match_within: Vec<riffle_sql::ast::MatchWithin>,
    /// The query's window TVFs stand for legacy group windows (see [`WindowTvfNode::legacy`]).
    legacy_windows: bool,
}

impl fmt::Debug for Catalog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Catalog")
            .field("tables", &self.tables.keys())
            .field("views", &self.views.keys())
            .finish()
    }
}

impl FlinkRelations {
    /// The plan of a named table or view.
    fn relation(&self, name: &sql::ObjectName) -> DfResult<LogicalPlan> {
        let key = name.to_string();
        if let Some(view) = self.catalog.views.get(&key) {
            return LogicalPlanBuilder::from(view.clone()).alias(key)?.build();
        }
        match self.catalog.tables.get(&key) {
            Some(t) => {
                LogicalPlanBuilder::scan(key, Arc::new(LogicalTableSource::new(t.schema())), None)?
                    .build()
            }
            None => datafusion::common::plan_err!("Object '{key}' not found"),
        }
    }

    fn window_tvf(
        &self,
        function: &sql::Function,
        context: &mut dyn RelationPlannerContext,
    ) -> DfResult<LogicalPlan> {
        let fname = function.name.to_string().to_ascii_uppercase();
        let sql::FunctionArguments::List(list) = &function.args else {
            return datafusion::common::plan_err!("{fname} requires arguments");
        };
        // Positional or named (DATA =>, TIMECOL =>, SIZE =>, SLIDE =>, STEP =>, OFFSET =>) arguments.
        let mut positional = Vec::new();
        let mut named: HashMap<String, &sql::Expr> = HashMap::new();
        for arg in &list.args {
            match arg {
                sql::FunctionArg::Unnamed(sql::FunctionArgExpr::Expr(e)) => positional.push(e),
                sql::FunctionArg::Named {
                    name,
                    arg: sql::FunctionArgExpr::Expr(e),
                    ..
                } => {
                    named.insert(name.value.to_ascii_uppercase(), e);
                }
                other => {
                    return datafusion::common::plan_err!(
                        "Unsupported argument of {fname}: {other}"
                    )
                }
            }
        }
        let param_names: &[&str] = match fname.as_str() {
            "TUMBLE" => &["DATA", "TIMECOL", "SIZE", "OFFSET"],
            "HOP" => &["DATA", "TIMECOL", "SLIDE", "SIZE", "OFFSET"],
            "CUMULATE" => &["DATA", "TIMECOL", "STEP", "SIZE", "OFFSET"],
            "SESSION" => &["DATA", "TIMECOL", "GAP"],
            _ => unsupported_tvf(&fname)?,
        };
        let arg = |i: usize| -> Option<&sql::Expr> {
            if named.is_empty() {
                positional.get(i).copied()
            } else {
                param_names.get(i).and_then(|n| named.get(*n).copied())
            }
        };
        let Some(table_arg) = arg(0).and_then(riffle_sql::dialect::TableArgument::from_expr) else {
            return datafusion::common::plan_err!(
                "The first argument of {fname} must be a table argument `TABLE t`"
            );
        };
        if !table_arg.partition_by.is_empty() && fname != "SESSION" {
            return datafusion::common::plan_err!(
                "Only the SESSION window function supports PARTITION BY"
            );
        }
        let input = self.relation(&table_arg.name)?;
        let mut partition_by = Vec::new();
        for key in &table_arg.partition_by {
            let sql::Expr::Identifier(id) = key else {
                return datafusion::common::not_impl_err!(
                    "unsupported feature: PARTITION BY an expression"
                );
            };
            match input
                .schema()
                .fields()
                .iter()
                .position(|f| f.name() == &id.value)
            {
                Some(i) => partition_by.push(i),
                None => {
                    return datafusion::common::plan_err!(
                        "Column '{}' not found in table '{}'",
                        id.value,
                        table_arg.name
                    )
                }
            }
        }
        let time_col = match arg(1) {
            Some(sql::Expr::Function(f))
                if f.name.to_string().eq_ignore_ascii_case("DESCRIPTOR") =>
            {
                // With several columns Flink windows by the first.
                match &f.args {
                    sql::FunctionArguments::List(l) if !l.args.is_empty() => match &l.args[0] {
                        sql::FunctionArg::Unnamed(sql::FunctionArgExpr::Expr(
                            sql::Expr::Identifier(id),
                        )) => id.value.clone(),
                        _ => {
                            return datafusion::common::plan_err!("DESCRIPTOR must name one column")
                        }
                    },
                    _ => return datafusion::common::plan_err!("DESCRIPTOR must name one column"),
                }
            }
            _ => {
                return datafusion::common::plan_err!(
                    "The second argument of {fname} must be DESCRIPTOR(column)"
                )
            }
        };
        let Some(time_column) = input
            .schema()
            .fields()
            .iter()
            .position(|f| f.name() == &time_col)
        else {
            return datafusion::common::plan_err!(
                "Column '{time_col}' not found in table '{}'",
                table_arg.name
            );
        };
        self.check_time_attribute(&table_arg.name, &time_col)?;
        let mut interval = |i: usize| -> DfResult<Option<i64>> {
            match arg(i) {
                None => Ok(None),
                Some(e) => {
                    interval_ms(context.sql_to_expr(e.clone(), &DFSchema::empty())?).map(Some)
                }
            }
        };
        let required = |v: Option<i64>, what: &str| -> DfResult<i64> {
            match v {
                Some(v) if v > 0 => Ok(v),
                Some(_) => datafusion::common::plan_err!("{fname} {what} must be positive"),
                None => datafusion::common::plan_err!("{fname} requires a {what} argument"),
            }
        };
        let spec = match fname.as_str() {
            "TUMBLE" => WindowSpec::Tumble {
                size: required(interval(2)?, "size")?,
                offset: interval(3)?.unwrap_or(0),
            },
            "HOP" => {
                let slide = required(interval(2)?, "slide")?;
                let size = required(interval(3)?, "size")?;
                // Flink rejects this for aggregations; `riffle check` rejects every such HOP.
                if size % slide != 0 {
                    return datafusion::common::plan_err!(
                        "HOP table function based aggregate requires size must be an integral multiple of slide, but got size {size} ms and slide {slide} ms"
                    );
                }
                WindowSpec::Hop {
                    slide,
                    size,
                    offset: interval(4)?.unwrap_or(0),
                }
            }
            "SESSION" => WindowSpec::Session {
                gap: required(interval(2)?, "gap")?,
            },
            _ => {
                let step = required(interval(2)?, "step")?;
                let size = required(interval(3)?, "size")?;
                if size % step != 0 {
                    return datafusion::common::plan_err!(
                        "CUMULATE table function based aggregate requires maxSize must be an integral multiple of step, but got maxSize {size} ms and step {step} ms."
                    );
                }
                WindowSpec::Cumulate {
                    step,
                    size,
                    offset: interval(4)?.unwrap_or(0),
                }
            }
        };
        let mut node = WindowTvfNode::try_new(input, spec, time_column, partition_by)?;
        node.legacy = self.legacy_windows;
        Ok(LogicalPlan::Extension(Extension {
            node: Arc::new(node),
        }))
    }

    /// Flink requires the TVF's time column to be a time attribute (rowtime here).
    fn check_time_attribute(&self, relation: &sql::ObjectName, column: &str) -> DfResult<()> {
        if let Some(t) = self.catalog.tables.get(&relation.to_string()) {
            let is_rowtime = t.columns.iter().any(|c| c.name == column && c.rowtime);
            let is_proctime = t.columns.iter().any(|c| {
                c.name == column && matches!(&c.computed, Some(sql::Expr::Function(f)) if f.name.to_string().eq_ignore_ascii_case("PROCTIME"))
            });
            if !is_rowtime && !is_proctime {
                return datafusion::common::plan_err!(
                    "The window function requires the timecol is a time attribute type, but is {}.",
                    t.columns
                        .iter()
                        .find(|c| c.name == column)
                        .map(|c| c.flink.as_str())
                        .unwrap_or("?")
                );
            }
        }
        Ok(())
    }
}

fn unsupported_tvf<T>(name: &str) -> DfResult<T> {
    datafusion::common::not_impl_err!("unsupported feature: table function {name}")
}

/// Milliseconds of a constant day-time interval expression.
fn interval_ms(expr: Expr) -> DfResult<i64> {
    let expr = match expr {
        Expr::Cast(c) => *c.expr,
        e => e,
    };
    match expr {
        Expr::Literal(ScalarValue::IntervalDayTime(Some(v)), _) => {
            Ok(i64::from(v.days) * 86_400_000 + i64::from(v.milliseconds))
        }
        Expr::Literal(ScalarValue::IntervalMonthDayNano(Some(v)), _) if v.months == 0 => {
            Ok(i64::from(v.days) * 86_400_000 + v.nanoseconds / 1_000_000)
        }
        other => {
            datafusion::common::plan_err!("expected a constant day-time interval, got {other}")
        }
    }
}

impl RelationPlanner for FlinkRelations {
    fn plan_relation(
        &self,
        relation: sql::TableFactor,
        context: &mut dyn RelationPlannerContext,
    ) -> DfResult<RelationPlanning> {
        if let Some(planned) = self.table_function_relation(&relation, context)? {
            return Ok(planned);
        }
        match relation {
            sql::TableFactor::Table {
                ref name,
                ref alias,
                args: None,
                version: None,
                ..
            } if self.catalog.views.contains_key(&name.to_string()) => {
                let plan = self.relation(name)?;
                Ok(RelationPlanning::Planned(Box::new(PlannedRelation::new(
                    plan,
                    alias.clone(),
                ))))
            }
            sql::TableFactor::TableFunction {
                expr: sql::Expr::Function(ref f),
                ref alias,
            } => {
                let fname = f.name.to_string().to_ascii_uppercase();
                match fname.as_str() {
                    "TUMBLE" | "HOP" | "CUMULATE" | "SESSION" => {
                        let plan = self.window_tvf(f, context)?;
                        Ok(RelationPlanning::Planned(Box::new(PlannedRelation::new(
                            plan,
                            alias.clone(),
                        ))))
                    }
                    _ => datafusion::common::not_impl_err!(
                        "unsupported feature: table function {fname}"
                    ),
                }
            }
            sql::TableFactor::TableFunction { .. } => {
                datafusion::common::not_impl_err!("unsupported feature: this table function call")
            }
            sql::TableFactor::MatchRecognize { .. } => self.match_recognize(relation, context),
            sql::TableFactor::Table {
                version: Some(sql::TableVersion::ForSystemTimeAsOf(ref period)),
                ..
            } => temporal_plan::snapshot_relation(relation.clone(), period.clone(), context),
            sql::TableFactor::Table { ref version, .. } if version.is_some() => {
                datafusion::common::not_impl_err!("unsupported feature: this table version clause")
            }
            sql::TableFactor::UNNEST { .. } => {
                datafusion::common::not_impl_err!("unsupported feature: UNNEST")
            }
            other => Ok(RelationPlanning::Original(Box::new(other))),
        }
    }
}

/// A translated plan node: the operator producing it and its output columns.
#[derive(Debug, Clone)]
struct Node {
    op: OperatorId,
    fields: Vec<Field>,
    changelog: ChangelogMode,
}

impl Node {
    fn arrow_schema(&self) -> PlanResult<ArrowSchema> {
        crate::graph::arrow_schema(&self.fields).map_err(|e| plan_error(e, Span::default()))
    }
}

/// Translates logical plans into operators and edges.
struct GraphBuilder<'a> {
    session: &'a FlinkSession,
    catalog: &'a Catalog,
    parallelism: usize,
    interval_ms: i64,
    /// `table.exec.source.cdc-events-duplicate`: CDC sources get a `ChangelogNormalize`.
    cdc_events_duplicate: bool,
    /// `table.exec.mini-batch.enabled` (Flink then keeps every Top-1 an updating result).
    mini_batch: bool,
    operators: Vec<Operator>,
    edges: Vec<Edge>,
    /// Statement being translated (for diagnostics).
    span: Span,
    /// A session window TVF may be translated (inside its window aggregation).
    session_allowed: bool,
    /// Which rank columns the statement being translated uses (see [`rank_plan::RankUsage`]).
    rank_usage: rank_plan::RankUsage,
}

/// What window joins and window Top-N do not support yet.
const LOCAL_WINDOWS: &str =
    "window joins and window Top-N over TIMESTAMP_LTZ windows in a 'table.local-time-zone' other than UTC";

impl GraphBuilder<'_> {
    /// True when `plan` holds a window TVF with [local bounds](Self::local_bounds).
    fn has_local_windows(&self, plan: &LogicalPlan) -> bool {
        self.has_window(plan, |tvf| self.local_bounds(tvf))
    }

    /// Whether `plan` holds a window TVF over a processing-time attribute.
    fn has_processing_time_windows(&self, plan: &LogicalPlan) -> bool {
        self.has_window(plan, |tvf| {
            rank_plan::is_proctime(self.catalog, &tvf.input, tvf.time_column)
        })
    }

    /// Whether `plan` holds a window TVF for which `test` holds.
    fn has_window(&self, plan: &LogicalPlan, test: impl Fn(&WindowTvfNode) -> bool) -> bool {
        use datafusion::common::tree_node::TreeNodeRecursion;
        let mut found = false;
        let _ = plan.apply(|node| {
            if let LogicalPlan::Extension(ext) = node {
                if let Some(tvf) = ext.node.as_any().downcast_ref::<WindowTvfNode>() {
                    found |= test(tvf);
                }
            }
            Ok(if found {
                TreeNodeRecursion::Stop
            } else {
                TreeNodeRecursion::Continue
            })
        });
        found
    }

    /// True when the windows of `tvf` are laid out in local time: its time attribute is a
    /// `TIMESTAMP_LTZ` and the session time zone is not UTC (Flink assigns such windows in the
    /// session time zone).
    fn local_bounds(&self, tvf: &WindowTvfNode) -> bool {
        let ltz = matches!(
            tvf.input.schema().field(tvf.time_column).data_type(),
            ArrowType::Timestamp(_, Some(_))
        );
        ltz && !self.session.local_zone().is_utc()
    }

    fn add(
        &mut self,
        kind: OperatorKind,
        parallelism: usize,
        schema: Vec<Field>,
        changelog: ChangelogMode,
        inputs: &[(&Node, Partitioning)],
    ) -> Node {
        let id = self.operators.len();
        for (input, (node, partitioning)) in inputs.iter().enumerate() {
            let producer = self.operators[node.op].parallelism;
            let partitioning = match partitioning {
                Partitioning::Forward if producer != parallelism => Partitioning::Rebalance,
                p => p.clone(),
            };
            self.edges.push(Edge {
                from: node.op,
                to: id,
                input,
                partitioning,
                changelog: node.changelog,
            });
        }
        self.operators.push(Operator {
            id,
            kind,
            parallelism,
            schema: schema.clone(),
            changelog,
        });
        Node {
            op: id,
            fields: schema,
            changelog,
        }
    }

    fn sink(&mut self, sink: &PendingSink) -> PlanResult<()> {
        self.rank_usage = rank_plan::RankUsage::of(&sink.plan);
        let plan = subquery_expr::rewrite(sink.plan.clone())
            .and_then(set_ops_all::rewrite)
            .and_then(join::prepare)
            .map_err(|e| df_error(e, sink.span))?;
        let mut node = self.translate(&plan)?;
        if let Some(target) = &sink.target {
            node = self.cast_to_target(node, target)?;
        }
        // rocketmq writes an upsert changelog keyed by the table's primary key.
        let accepts_updates = matches!(
            sink.connector.connector.as_str(),
            "print" | "blackhole" | COLLECT_CONNECTOR
        ) || (sink.connector.connector == "rocketmq"
            && !sink.connector.primary_key.is_empty())
            || format_changelog(&sink.connector) != ChangelogMode::InsertOnly;
        if node.changelog != ChangelogMode::InsertOnly && !accepts_updates {
            return Err(plan_error(
                format!(
                    "Table sink 'default_catalog.default_database.{}' doesn't support consuming update changes",
                    sink.connector.table
                ),
                sink.span,
            ));
        }
        let parallelism = if sink.connector.connector == COLLECT_CONNECTOR {
            1
        } else {
            self.parallelism
        };
        // A sink writes the table's column names (JSON field names, CSV headers), not the
        // query's: `INSERT INTO t SELECT COUNT(*) ...` fills t's column, not `EXPR$0`.
        let mut schema = node.fields.clone();
        if let Some(target) = &sink.target {
            for (field, column) in schema.iter_mut().zip(target) {
                field.name = column.name.clone();
            }
        }
        self.add(
            OperatorKind::Sink {
                connector: sink.connector.clone(),
            },
            parallelism,
            schema,
            node.changelog,
            &[(&node, Partitioning::Forward)],
        );
        Ok(())
    }

    /// Casts the query's columns to the sink's declared types (Flink's implicit insert cast).
    fn cast_to_target(&mut self, node: Node, target: &[TableColumn]) -> PlanResult<Node> {
        let input_schema = node.arrow_schema()?;
        let needs_cast = node
            .fields
            .iter()
            .zip(target)
            .any(|(f, t)| f.arrow().ok().as_ref() != Some(&t.arrow));
        if !needs_cast {
            return Ok(node);
        }
        let mut projection = Vec::new();
        let mut schema = Vec::new();
        for ((field, arrow_field), t) in node.fields.iter().zip(input_schema.fields()).zip(target) {
            let column = quote_ident(&field.name);
            let sql = if arrow_field.data_type() == &t.arrow {
                column
            } else {
                let cast = Expr::Column(Column::from_name(field.name.clone()))
                    .cast_to(
                        &t.arrow,
                        &DFSchema::try_from(input_schema.clone())
                            .map_err(|e| df_error(e, self.span))?,
                    )
                    .map_err(|e| df_error(e, self.span))?;
                self.session
                    .expr_to_sql(&cast)
                    .map_err(|e| df_error(e, self.span))?
            };
            projection.push(NamedExpr {
                name: t.name.clone(),
                sql,
            });
            schema.push(Field {
                name: t.name.clone(),
                data_type: t.flink.clone(),
                arrow_type: t.arrow.to_string(),
                nullable: t.nullable || field.nullable,
                rowtime: false,
            });
        }
        let changelog = node.changelog;
        Ok(self.add(
            OperatorKind::Calc {
                filter: None,
                projection,
            },
            self.parallelism,
            schema,
            changelog,
            &[(&node, Partitioning::Forward)],
        ))
    }

    fn translate(&mut self, plan: &LogicalPlan) -> PlanResult<Node> {
        match plan {
            LogicalPlan::SubqueryAlias(a) => self.translate(&a.input),
            LogicalPlan::TableScan(scan) => {
                let name = scan.table_name.table().to_string();
                let Some(table) = self.catalog.tables.get(&name).cloned() else {
                    return Err(plan_error(format!("Object '{name}' not found"), self.span));
                };
                let node = self.scan(&table)?;
                match &scan.projection {
                    None => Ok(node),
                    Some(indices) => {
                        let exprs: Vec<Expr> = indices
                            .iter()
                            .map(|i| Expr::Column(Column::from_name(node.fields[*i].name.clone())))
                            .collect();
                        self.calc(node, None, &exprs, &scan.projected_schema)
                    }
                }
            }
            LogicalPlan::Projection(p) => {
                if let Some(node) = self.rank_projection(p)? {
                    return Ok(node);
                }
                let (input_plan, filter) = match p.input.as_ref() {
                    LogicalPlan::Filter(f) => (f.input.as_ref(), Some(&f.predicate)),
                    other => (other, None),
                };
                let input = self.translate(input_plan)?;
                let filter = filter
                    .map(|f| self.rewrite(f, input_plan.schema(), &input))
                    .transpose()?;
                let exprs = p
                    .expr
                    .iter()
                    .map(|e| self.rewrite(e, input_plan.schema(), &input))
                    .collect::<PlanResult<Vec<_>>>()?;
                self.calc(input, filter.as_ref(), &exprs, &p.schema)
            }
            LogicalPlan::Filter(f) => {
                if let Some(node) = self.rank_filter(f)? {
                    return Ok(node);
                }
                let input = self.translate(&f.input)?;
                let predicate = self.rewrite(&f.predicate, f.input.schema(), &input)?;
                let exprs: Vec<Expr> = input
                    .fields
                    .iter()
                    .map(|fl| Expr::Column(Column::from_name(fl.name.clone())))
                    .collect();
                self.calc(input, Some(&predicate), &exprs, f.input.schema())
            }
            LogicalPlan::Values(v) => {
                let mut rows = Vec::new();
                for row in &v.values {
                    check_functions(&row.iter().collect::<Vec<_>>(), self.span)?;
                    let mut out = Vec::new();
                    for e in row {
                        out.push(
                            self.session
                                .expr_to_sql(e)
                                .map_err(|e| df_error(e, self.span))?,
                        );
                    }
                    rows.push(out);
                }
                let schema = fields_of(&v.schema);
                Ok(self.add(
                    OperatorKind::Values { rows },
                    1,
                    schema,
                    ChangelogMode::InsertOnly,
                    &[],
                ))
            }
            LogicalPlan::EmptyRelation(e) => {
                let rows = if e.produce_one_row {
                    vec![Vec::new()]
                } else {
                    Vec::new()
                };
                Ok(self.add(
                    OperatorKind::Values { rows },
                    1,
                    Vec::new(),
                    ChangelogMode::InsertOnly,
                    &[],
                ))
            }
            LogicalPlan::Union(u) => {
                let mut inputs = Vec::new();
                for input in &u.inputs {
                    inputs.push(self.translate(input)?);
                }
                let Some(first) = inputs.first() else {
                    return Err(plan_error("empty UNION", self.span));
                };
                let schema = first
                    .fields
                    .iter()
                    .map(|f| Field {
                        rowtime: false,
                        ..f.clone()
                    })
                    .collect();
                let changelog = inputs
                    .iter()
                    .fold(ChangelogMode::InsertOnly, |m, n| m.merge(n.changelog));
                let edges: Vec<(&Node, Partitioning)> =
                    inputs.iter().map(|n| (n, Partitioning::Forward)).collect();
                Ok(self.add(
                    OperatorKind::Union,
                    self.parallelism,
                    schema,
                    changelog,
                    &edges,
                ))
            }
            LogicalPlan::Aggregate(agg) => self.aggregate(agg),
            LogicalPlan::Extension(ext) if match_recognize::is_match(ext) => {
                self.match_recognize(ext)
            }
            LogicalPlan::Extension(ext) if ext.node.as_any().is::<SnapshotNode>() => {
                Err(unsupported(
                    "FOR SYSTEM_TIME AS OF outside the right side of a join",
                    self.span,
                ))
            }
            LogicalPlan::Extension(ext) => {
                match ext.node.as_any().downcast_ref::<WindowTvfNode>() {
                    Some(tvf) => {
                        let input = self.translate(&tvf.input)?;
                        if input.changelog != ChangelogMode::InsertOnly {
                            return Err(unsupported(
                                "window TVF over an updating stream",
                                self.span,
                            ));
                        }
                        let mut schema = input.fields.clone();
                        let time_field = &input.fields[tvf.time_column];
                        let processing_time = !time_field.rowtime
                            && rank_plan::is_proctime(self.catalog, &tvf.input, tvf.time_column);
                        if !time_field.rowtime && !processing_time {
                            // E.g. the output of a regular join, which holds no time attribute.
                            return Err(plan_error(
                                format!(
                                    "The window function requires the timecol is a time attribute type, but is {}.",
                                    time_field.data_type
                                ),
                                self.span,
                            ));
                        }
                        let ltz = time_field.arrow_type.contains("UTC");
                        schema.push(Field::from_arrow(
                            WINDOW_COLUMNS[0],
                            &ArrowType::Timestamp(TimeUnit::Millisecond, None),
                            false,
                        ));
                        schema.push(Field::from_arrow(
                            WINDOW_COLUMNS[1],
                            &ArrowType::Timestamp(TimeUnit::Millisecond, None),
                            false,
                        ));
                        let tz = ltz.then(|| Arc::from(crate::types::LTZ_TIME_ZONE));
                        let mut window_time = Field::from_arrow(
                            WINDOW_COLUMNS[2],
                            &ArrowType::Timestamp(TimeUnit::Millisecond, tz),
                            false,
                        );
                        // A processing-time window's window_time is a processing-time
                        // attribute, not an event-time one.
                        window_time.rowtime = !processing_time;
                        schema.push(window_time);
                        Ok(self.add(
                            OperatorKind::WindowAssign {
                                window: tvf.spec,
                                time_column: tvf.time_column,
                                processing_time,
                                slice: None,
                            },
                            self.parallelism,
                            schema,
                            ChangelogMode::InsertOnly,
                            &[(&input, Partitioning::Forward)],
                        ))
                    }
                    None => match correlate_plan::table_function(plan) {
                        Some(call) => self.standalone_table_function(call),
                        None => Err(unsupported(ext.node.name(), self.span)),
                    },
                }
            }
            LogicalPlan::Limit(limit) => self.limit(limit),
            LogicalPlan::Sort(sort) if sort.fetch.is_some() => {
                self.top_n(sort, 0, sort.fetch.unwrap_or(0))
            }
            LogicalPlan::Sort(sort) => self.unbounded_sort(sort),
            LogicalPlan::Join(join) => match correlate_plan::table_function(&join.right) {
                Some(call) => self.correlate(join, call),
                None => self.join(join),
            },
            LogicalPlan::Window(w) => self.over(w),
            LogicalPlan::Distinct(datafusion::logical_expr::Distinct::All(input)) => {
                // SELECT DISTINCT is a grouping on every column without aggregates.
                let keys: Vec<Expr> = input
                    .schema()
                    .columns()
                    .into_iter()
                    .map(Expr::Column)
                    .collect();
                let grouped = LogicalPlanBuilder::from(input.as_ref().clone())
                    .aggregate(keys, Vec::<Expr>::new())
                    .and_then(|b| b.build())
                    .map_err(|e| df_error(e, self.span))?;
                match &grouped {
                    LogicalPlan::Aggregate(agg) => self.aggregate(agg),
                    _ => Err(plan_error(
                        "SELECT DISTINCT did not plan as a grouping",
                        self.span,
                    )),
                }
            }
            LogicalPlan::Distinct(_) => Err(unsupported("DISTINCT ON", self.span)),
            LogicalPlan::Unnest(_) => Err(unsupported("UNNEST", self.span)),
            LogicalPlan::RecursiveQuery(_) => Err(unsupported("recursive queries", self.span)),
            LogicalPlan::Subquery(_) => Err(unsupported("correlated subqueries", self.span)),
            other => Err(unsupported(
                format!("plan node {}", other.display()),
                self.span,
            )),
        }
    }

    /// `LIMIT` / `OFFSET`, over an `ORDER BY` a Top-N.
    fn limit(&mut self, limit: &datafusion::logical_expr::Limit) -> PlanResult<Node> {
        let span = self.span;
        // Constant row counts (INT or BIGINT literals, as Riffle types integer literals).
        let count = |e: &Option<Box<Expr>>, what: &str| -> PlanResult<Option<usize>> {
            let e = e.as_deref().map(|e| match e {
                Expr::Cast(c) => c.expr.as_ref(),
                other => other,
            });
            match e {
                None => Ok(None),
                Some(Expr::Literal(v, _)) if v.is_null() => Ok(None),
                Some(Expr::Literal(ScalarValue::Int32(Some(n)), _)) if *n >= 0 => {
                    Ok(Some(*n as usize))
                }
                Some(Expr::Literal(ScalarValue::Int64(Some(n)), _)) if *n >= 0 => {
                    Ok(Some(*n as usize))
                }
                Some(_) => Err(unsupported(format!("{what} with an expression"), span)),
            }
        };
        let offset = count(&limit.skip, "OFFSET")?.unwrap_or(0);
        let fetch = count(&limit.fetch, "LIMIT")?;
        if let LogicalPlan::Sort(sort) = limit.input.as_ref() {
            let Some(fetch) = fetch else {
                return Err(unsupported("ORDER BY with OFFSET but without LIMIT", span));
            };
            // A fetch pushed into the sort counts the skipped rows too.
            let fetch = sort
                .fetch
                .map_or(fetch, |f| f.saturating_sub(offset).min(fetch));
            return self.top_n(sort, offset, fetch);
        }
        let input = self.translate(&limit.input)?;
        if input.changelog != ChangelogMode::InsertOnly {
            return Err(unsupported("LIMIT over an updating stream", span));
        }
        let schema = input.fields.clone();
        Ok(self.add(
            OperatorKind::Limit { offset, fetch },
            1,
            schema,
            ChangelogMode::InsertOnly,
            &[(&input, Partitioning::Global)],
        ))
    }

    /// Global Top-N over an append-only stream.
    /// `ORDER BY` without `LIMIT`: a streaming job sorts only by a time attribute (ascending
    /// first key), as in Flink (a temporal sort); any other first key is Flink's planning error.
    fn unbounded_sort(&mut self, sort: &datafusion::logical_expr::Sort) -> PlanResult<Node> {
        let span = self.span;
        let input = self.translate(&sort.input)?;
        let by_time = sort.expr.first().is_some_and(|key| {
            key.asc
                && matches!(&key.expr, Expr::Column(c) if sort
                    .input
                    .schema()
                    .index_of_column(c)
                    .is_ok_and(|i| input.fields.get(i).is_some_and(|f| f.rowtime)))
        });
        if !by_time {
            return Err(plan_error(
                "Sort on a non-time-attribute field is not supported.",
                span,
            ));
        }
        if input.changelog != ChangelogMode::InsertOnly {
            return Err(unsupported(
                "ORDER BY a time attribute of an updating stream",
                span,
            ));
        }
        let mut keys = sort_keys(sort, span)?;
        let time_column = keys.remove(0).column;
        let schema = input.fields.clone();
        Ok(self.add(
            OperatorKind::TemporalSort {
                time_column,
                order: keys,
            },
            1,
            schema,
            ChangelogMode::InsertOnly,
            &[(&input, Partitioning::Global)],
        ))
    }

    fn top_n(
        &mut self,
        sort: &datafusion::logical_expr::Sort,
        offset: usize,
        fetch: usize,
    ) -> PlanResult<Node> {
        let span = self.span;
        let input = self.translate(&sort.input)?;
        let order = sort_keys(sort, span)?;
        if offset > 0 || input.changelog != ChangelogMode::InsertOnly {
            return self.sort_limit(input, order, offset, fetch, sort.input.schema());
        }
        let schema = input.fields.clone();
        Ok(self.add(
            OperatorKind::TopN { order, fetch },
            1,
            schema,
            ChangelogMode::Retract,
            &[(&input, Partitioning::Global)],
        ))
    }

    /// Source → computed columns → watermark assigner for one table scan; a table in a
    /// changelog format is an updating source.
    fn scan(&mut self, table: &TableInfo) -> PlanResult<Node> {
        let physical: Vec<Field> = table
            .physical()
            .map(|c| Field {
                name: c.name.clone(),
                data_type: c.flink.clone(),
                arrow_type: c.arrow.to_string(),
                nullable: c.nullable,
                rowtime: false,
            })
            .collect();
        let changelog = source_changelog(&table.connector);
        let mut node = self.add(
            OperatorKind::Source {
                connector: table.connector.clone(),
            },
            self.parallelism,
            physical,
            changelog,
            &[],
        );
        if table.columns.iter().any(|c| c.computed.is_some()) {
            let input_schema = node.arrow_schema()?;
            let df = DFSchema::try_from(input_schema).map_err(|e| df_error(e, table.span))?;
            let mut projection = Vec::new();
            for c in &table.columns {
                let sql = match &c.computed {
                    None => quote_ident(&c.name),
                    Some(expr) => {
                        let logical = self
                            .session
                            .logical_from_ast(expr, &df)
                            .map_err(|e| df_error(e, table.span))?;
                        self.session
                            .expr_to_sql(&logical)
                            .map_err(|e| df_error(e, table.span))?
                    }
                };
                projection.push(NamedExpr {
                    name: c.name.clone(),
                    sql,
                });
            }
            let schema = table_fields(table, false);
            node = self.add(
                OperatorKind::Calc {
                    filter: None,
                    projection,
                },
                self.parallelism,
                schema,
                changelog,
                &[(&node, Partitioning::Forward)],
            );
        }
        if let Some((rowtime, expr)) = &table.watermark {
            let df =
                DFSchema::try_from(node.arrow_schema()?).map_err(|e| df_error(e, table.span))?;
            let logical = self
                .session
                .logical_from_ast(expr, &df)
                .map_err(|e| df_error(e, table.span))?;
            let sql = self
                .session
                .expr_to_sql(&logical)
                .map_err(|e| df_error(e, table.span))?;
            node = self.add(
                OperatorKind::WatermarkAssigner {
                    rowtime: *rowtime,
                    expr: sql,
                    interval_ms: self.interval_ms,
                },
                self.parallelism,
                table_fields(table, true),
                changelog,
                &[(&node, Partitioning::Forward)],
            );
        }
        self.normalize_changelog(table, node)
    }

    /// Adds Flink's `ChangelogNormalize` after the scan of an upsert source, and of a CDC
    /// source when `table.exec.source.cdc-events-duplicate` says its events may repeat: keyed
    /// by the primary key, it turns the changes into a retract changelog without repeats.
    fn normalize_changelog(&mut self, table: &TableInfo, node: Node) -> PlanResult<Node> {
        let needed = match node.changelog {
            ChangelogMode::Upsert => true,
            ChangelogMode::Retract => self.cdc_events_duplicate,
            ChangelogMode::InsertOnly => false,
        };
        if !needed {
            return Ok(node);
        }
        let name = &table.name;
        if table.connector.primary_key.is_empty() {
            let message = if node.changelog == ChangelogMode::Upsert {
                format!("table '{name}' is read as an upsert changelog, which requires a PRIMARY KEY constraint (the key of its messages)")
            } else {
                format!("Configuration 'table.exec.source.cdc-events-duplicate' is enabled which requires the changelog sources to define a PRIMARY KEY. However, table '{name}' doesn't have a primary key.")
            };
            return Err(plan_error(message, table.span));
        }
        let keys = table
            .connector
            .primary_key
            .iter()
            .map(|k| {
                node.fields
                    .iter()
                    .position(|f| &f.name == k)
                    .ok_or_else(|| {
                        plan_error(
                            format!("primary key column '{k}' is not a column of table '{name}'"),
                            table.span,
                        )
                    })
            })
            .collect::<PlanResult<Vec<usize>>>()?;
        let fields = node.fields.clone();
        Ok(self.add(
            OperatorKind::ChangelogNormalize { keys: keys.clone() },
            self.parallelism,
            fields,
            ChangelogMode::Retract,
            &[(&node, Partitioning::Hash(keys))],
        ))
    }

    /// Rewrites column references of a DataFusion expression to the input node's column names.
    fn rewrite(&self, expr: &Expr, schema: &DFSchema, input: &Node) -> PlanResult<Expr> {
        let span = self.span;
        expr.clone()
            .transform(|e| match e {
                Expr::Column(c) => {
                    let idx = schema.index_of_column(&c)?;
                    match input.fields.get(idx) {
                        Some(f) => Ok(Transformed::yes(Expr::Column(Column::from_name(
                            f.name.clone(),
                        )))),
                        None => datafusion::common::internal_err!("column {c} out of range"),
                    }
                }
                Expr::ScalarSubquery(_)
                | Expr::Exists(_)
                | Expr::InSubquery(_)
                | Expr::SetComparison(_) => {
                    datafusion::common::not_impl_err!(
                        "unsupported feature: subqueries in expressions"
                    )
                }
                Expr::OuterReferenceColumn(..) => {
                    datafusion::common::not_impl_err!("unsupported feature: correlated subqueries")
                }
                Expr::WindowFunction(_) => {
                    datafusion::common::not_impl_err!("unsupported feature: OVER windows")
                }
                Expr::GroupingSet(_) => datafusion::common::not_impl_err!(
                    "unsupported feature: GROUPING SETS / ROLLUP / CUBE"
                ),
                other => Ok(Transformed::no(other)),
            })
            .map(|t| t.data)
            .map_err(|e| df_error(e, span))
    }

    /// A Calc operator computing `exprs` (already over the input's column names).
    fn calc(
        &mut self,
        input: Node,
        filter: Option<&Expr>,
        exprs: &[Expr],
        out_schema: &DFSchema,
    ) -> PlanResult<Node> {
        let span = self.span;
        let filter_sql = match filter {
            Some(f) => {
                check_functions(&[f], span)?;
                let sql = self.session.expr_to_sql(f).map_err(|e| df_error(e, span))?;
                self.compile(&sql, &input)?;
                Some(sql)
            }
            None => None,
        };
        let (projection, schema) = self.projection(&input, exprs, out_schema)?;
        let changelog = input.changelog;
        Ok(self.add(
            OperatorKind::Calc {
                filter: filter_sql,
                projection,
            },
            self.parallelism,
            schema,
            changelog,
            &[(&input, Partitioning::Forward)],
        ))
    }

    /// Compiles `sql` over `input`'s columns now, so what the runtime cannot evaluate is rejected
    /// before the job starts.
    fn compile(&self, sql: &str, input: &Node) -> PlanResult<()> {
        let input_schema = input.arrow_schema()?;
        self.session
            .physical_expr(sql, &input_schema)
            .map(|_| ())
            .map_err(|e| df_error(e, self.span))
    }

    /// The SQL text and output fields of `exprs` (over `input`'s column names), named after
    /// `out_schema`.
    fn projection(
        &self,
        input: &Node,
        exprs: &[Expr],
        out_schema: &DFSchema,
    ) -> PlanResult<(Vec<NamedExpr>, Vec<Field>)> {
        let span = self.span;
        check_functions(&exprs.iter().collect::<Vec<_>>(), span)?;
        let input_schema = input.arrow_schema()?;
        let df = DFSchema::try_from(input_schema.clone()).map_err(|e| df_error(e, span))?;
        let mut names = UniqueNames::default();
        let mut projection = Vec::new();
        let mut schema = Vec::new();
        for (i, e) in exprs.iter().enumerate() {
            let name = names.unique(out_schema.field(i).name());
            let unaliased = e.clone().unalias();
            let (t, nullable) = type_of(&unaliased, &df).map_err(|e| df_error(e, span))?;
            let mut field = Field::from_arrow(name.clone(), &t, nullable);
            if let Expr::Column(c) = &unaliased {
                // Plain references keep the input's Flink type and time attribute.
                if let Some(src) = input.fields.iter().find(|f| f.name == c.name) {
                    field.data_type = src.data_type.clone();
                    field.rowtime = src.rowtime;
                }
            }
            let sql = self
                .session
                .expr_to_sql(&unaliased)
                .map_err(|e| df_error(e, span))?;
            self.compile(&sql, input)?;
            projection.push(NamedExpr { name, sql });
            schema.push(field);
        }
        Ok((projection, schema))
    }

    fn aggregate(&mut self, agg: &datafusion::logical_expr::Aggregate) -> PlanResult<Node> {
        let span = self.span;
        let sets = GroupingSets::of(&agg.group_expr).map_err(|e| df_error(e, span))?;
        let group_expr = match &sets {
            Some(sets) => sets.keys.clone(),
            None => agg.group_expr.clone(),
        };
        // With grouping sets the grouping id is one more key, right after the group keys.
        let key_count = agg.schema.fields().len() - agg.aggr_expr.len();
        let window = window_keys(&agg.input, &group_expr);
        if let (Some(sets), Some(w)) = (&sets, &window) {
            if !sets.in_every_set(w.start) || !sets.in_every_set(w.end) {
                return Err(unsupported(
                    "grouping sets of a window aggregation that leave out window_start or window_end",
                    span,
                ));
            }
        }
        let session = window
            .as_ref()
            .is_some_and(|w| matches!(w.tvf.spec, WindowSpec::Session { .. }));
        // A session TVF is only meaningful feeding this aggregation.
        let outer = std::mem::replace(&mut self.session_allowed, session);
        let input = self.translate(&agg.input);
        self.session_allowed = outer;
        let input = input?;
        // Pre-projection: group keys, then each aggregate's argument and filter.
        let mut pre: Vec<Expr> = Vec::new();
        let mut pre_names: Vec<String> = Vec::new();
        for (i, g) in group_expr.iter().enumerate() {
            pre.push(self.rewrite(g, agg.input.schema(), &input)?);
            pre_names.push(agg.schema.field(i).name().clone());
        }
        if sets.is_some() {
            // Placeholder for the grouping id; the Expand operator sets it per grouping set.
            pre.push(Expr::Literal(ScalarValue::Null, None));
            pre_names.push(agg.schema.field(group_expr.len()).name().clone());
        }
        let keys: Vec<usize> = (0..key_count).collect();
        struct Pending {
            function: AggregateFunction,
            arg: Option<usize>,
            distinct: bool,
            filter: Option<usize>,
            name: String,
            user: Option<crate::graph::UserAggregate>,
            separator: Option<String>,
        }
        let mut pending = Vec::new();
        // Pre-projection columns holding GROUP_ID() (see `expand`).
        let mut group_ids = Vec::new();
        for (i, a) in agg.aggr_expr.iter().enumerate() {
            let name = agg.schema.field(key_count + i).name().clone();
            let Expr::AggregateFunction(DfAggregate { func, params }) = a.clone().unalias() else {
                return Err(unsupported(format!("aggregate expression {a}"), span));
            };
            if !params.order_by.is_empty() {
                return Err(unsupported("ORDER BY inside an aggregate call", span));
            }
            let fname = func.name().to_ascii_lowercase();
            // `RESPECT NULLS` is ARRAY_AGG's default; `IGNORE NULLS` filters NULL arguments out.
            let ignore_nulls = match params.null_treatment {
                None => false,
                Some(_) if fname != "array_agg" => {
                    return Err(unsupported(
                        format!(
                            "IGNORE NULLS / RESPECT NULLS in a call of {}",
                            fname.to_ascii_uppercase()
                        ),
                        span,
                    ))
                }
                Some(t) => t == datafusion::logical_expr::expr::NullTreatment::IgnoreNulls,
            };
            if let Some(spec) = crate::udf::user_aggregate(&func) {
                if params.distinct {
                    return Err(unsupported(
                        "DISTINCT in a call of a user-defined aggregate function",
                        span,
                    ));
                }
                let mut args = Vec::new();
                let mut arg_types = Vec::new();
                for (k, arg) in params.args.iter().enumerate() {
                    let (t, nullable) =
                        type_of(arg, agg.input.schema()).map_err(|e| df_error(e, span))?;
                    arg_types.push(crate::types::flink_type(&t, nullable));
                    pre.push(self.rewrite(arg, agg.input.schema(), &input)?);
                    pre_names.push(format!("$arg{i}_{k}"));
                    args.push(pre.len() - 1);
                }
                let filter = match &params.filter {
                    Some(f) => {
                        pre.push(self.rewrite(f, agg.input.schema(), &input)?);
                        pre_names.push(format!("$filter{i}"));
                        Some(pre.len() - 1)
                    }
                    None => None,
                };
                pending.push(Pending {
                    function: AggregateFunction::User,
                    arg: None,
                    distinct: false,
                    filter,
                    name,
                    user: Some(crate::graph::UserAggregate {
                        name: spec.name.clone(),
                        language: spec.language.clone(),
                        class: spec.class.clone(),
                        jars: spec.jars.clone(),
                        args,
                        arg_types,
                    }),
                    separator: None,
                });
                continue;
            }
            if fname == "group_id" {
                // The ordinal of the row's grouping set among equal sets: a constant per set
                // that the Expand operator writes (0 without grouping sets), kept per group.
                pre.push(Expr::Literal(ScalarValue::Int64(Some(0)), None));
                pre_names.push(format!("$arg{i}"));
                group_ids.push(pre.len() - 1);
                pending.push(Pending {
                    function: AggregateFunction::Max,
                    arg: Some(pre.len() - 1),
                    distinct: false,
                    filter: None,
                    name,
                    user: None,
                    separator: None,
                });
                continue;
            }
            let function = match fname.as_str() {
                "count" => AggregateFunction::Count,
                "sum" => AggregateFunction::Sum,
                "min" => AggregateFunction::Min,
                "max" => AggregateFunction::Max,
                "avg" => AggregateFunction::Avg,
                "stddev_pop" => AggregateFunction::StddevPop,
                "stddev_samp" => AggregateFunction::StddevSamp,
                "var_pop" => AggregateFunction::VarPop,
                "var_samp" => AggregateFunction::VarSamp,
                "listagg" => AggregateFunction::ListAgg,
                "first_value" => AggregateFunction::FirstValue,
                "last_value" => AggregateFunction::LastValue,
                "array_agg" => AggregateFunction::ArrayAgg,
                other => {
                    return Err(unsupported(
                        format!("aggregate function {}", other.to_ascii_uppercase()),
                        span,
                    ))
                }
            };
            // LISTAGG's separator is a constant (Flink keeps the last row's).
            let (args, separator) = match params.args.as_slice() {
                [value, Expr::Literal(sep, _)] if function == AggregateFunction::ListAgg => {
                    let sep = match sep {
                        ScalarValue::Utf8(s)
                        | ScalarValue::LargeUtf8(s)
                        | ScalarValue::Utf8View(s) => s.clone(),
                        _ => None,
                    };
                    (std::slice::from_ref(value), Some(sep.unwrap_or_default()))
                }
                [_, _] if function == AggregateFunction::ListAgg => {
                    return Err(unsupported(
                        "LISTAGG with a separator that is not a literal",
                        span,
                    ))
                }
                args => (args, None),
            };
            let (function, arg) = match args {
                [Expr::Literal(v, _)] if function == AggregateFunction::Count && !v.is_null() => {
                    (AggregateFunction::CountStar, None)
                }
                [] if function == AggregateFunction::Count => (AggregateFunction::CountStar, None),
                [arg] => {
                    pre.push(self.rewrite(arg, agg.input.schema(), &input)?);
                    pre_names.push(format!("$arg{i}"));
                    (function, Some(pre.len() - 1))
                }
                _ if function == AggregateFunction::Count => {
                    return Err(plan_error(
                        "We now only support the count of one field.",
                        span,
                    ))
                }
                _ => {
                    return Err(unsupported(
                        format!("{} with several arguments", fname.to_ascii_uppercase()),
                        span,
                    ))
                }
            };
            let not_null = match (ignore_nulls, params.args.first()) {
                (true, Some(a)) => Some(a.clone().is_not_null()),
                _ => None,
            };
            let filter = match (params.filter.as_deref().cloned(), not_null) {
                (None, None) => None,
                (Some(f), None) | (None, Some(f)) => Some(f),
                (Some(f), Some(n)) => Some(f.and(n)),
            };
            let filter = match &filter {
                Some(f) => {
                    pre.push(self.rewrite(f, agg.input.schema(), &input)?);
                    pre_names.push(format!("$filter{i}"));
                    Some(pre.len() - 1)
                }
                None => None,
            };
            pending.push(Pending {
                function,
                arg,
                distinct: params.distinct,
                filter,
                name,
                user: None,
                separator,
            });
        }
        let pre_schema = names_schema(&pre_names, span)?;
        let changelog = input.changelog;
        let projected = match &sets {
            Some(sets) => self.expand(input, sets, agg, &pre, &group_ids, &pre_schema)?,
            None => self.calc(input, None, &pre, &pre_schema)?,
        };
        let mut schema: Vec<Field> = projected.fields[..key_count].to_vec();
        let mut aggregates = Vec::new();
        for p in pending {
            let arg_field = p.arg.and_then(|i| projected.fields.get(i));
            let (flink, arrow, nullable) = match &p.user {
                Some(user) => {
                    crate::udf::aggregate_result(user).map_err(|m| plan_error(m, span))?
                }
                None => aggregate_type(p.function, arg_field).map_err(|m| unsupported(m, span))?,
            };
            schema.push(Field {
                name: p.name.clone(),
                data_type: flink.clone(),
                arrow_type: arrow.to_string(),
                nullable,
                rowtime: false,
            });
            aggregates.push(AggregateCall {
                function: p.function,
                arg: p.arg,
                distinct: p.distinct,
                filter: p.filter,
                name: p.name,
                data_type: flink,
                user: p.user,
                separator: p.separator,
            });
        }
        let hash = Partitioning::Hash(keys.clone());
        match window {
            Some(w) if matches!(w.tvf.spec, WindowSpec::Session { .. }) => {
                let WindowSpec::Session { gap } = w.tvf.spec else {
                    return Err(plan_error("not a session window", span));
                };
                // Sessions form per PARTITION BY key; grouping by other keys would split them.
                let mut grouped: Vec<usize> = w.others.iter().flatten().copied().collect();
                let mut partition = w.tvf.partition_by.clone();
                grouped.sort_unstable();
                partition.sort_unstable();
                if sets.is_some() {
                    return Err(unsupported(
                        "GROUPING SETS / ROLLUP / CUBE over a SESSION window",
                        span,
                    ));
                }
                if w.path.attached {
                    return Err(unsupported(
                        "window aggregation over the result of a SESSION window aggregation",
                        span,
                    ));
                }
                if w.path.filtered || w.others.iter().any(Option::is_none) || grouped != partition {
                    return Err(unsupported(
                        "SESSION window aggregation whose group keys differ from its PARTITION BY keys, or with a filter before the aggregation",
                        span,
                    ));
                }
                if changelog != ChangelogMode::InsertOnly {
                    return Err(unsupported(
                        "window aggregation over an updating stream",
                        span,
                    ));
                }
                let session_keys: Vec<usize> = (0..keys.len())
                    .filter(|k| *k != w.start && *k != w.end)
                    .collect();
                let hash = Partitioning::Hash(session_keys);
                let local_bounds = self.local_bounds(w.tvf);
                Ok(self.add(
                    OperatorKind::SessionWindowAggregate {
                        keys,
                        window_start: w.start,
                        window_end: w.end,
                        gap,
                        aggregates,
                        local_bounds,
                    },
                    self.parallelism,
                    schema,
                    ChangelogMode::InsertOnly,
                    &[(&projected, hash)],
                ))
            }
            Some(w) => {
                let window_end = w.end;
                if changelog != ChangelogMode::InsertOnly {
                    return Err(unsupported(
                        "window aggregation over an updating stream",
                        span,
                    ));
                }
                for f in schema.iter_mut() {
                    f.rowtime =
                        f.name == WINDOW_COLUMNS[2] && f.arrow_type.starts_with("Timestamp");
                }
                let local_bounds = self.local_bounds(w.tvf);
                let flush_points = if w.tvf.legacy {
                    None
                } else {
                    crate::window::slice_triggers(&w.tvf.spec)
                };
                Ok(self.add(
                    OperatorKind::WindowAggregate {
                        keys,
                        window_end,
                        aggregates,
                        local_bounds,
                        flush_points,
                        slices: None,
                    },
                    self.parallelism,
                    schema,
                    ChangelogMode::InsertOnly,
                    &[(&projected, hash)],
                ))
            }
            None => {
                for f in schema.iter_mut() {
                    f.rowtime = false;
                }
                Ok(self.add(
                    OperatorKind::GroupAggregate { keys, aggregates },
                    self.parallelism,
                    schema,
                    ChangelogMode::Retract,
                    &[(&projected, hash)],
                ))
            }
        }
    }
}

/// How the group keys of an aggregation relate to a window TVF below it.
struct WindowKeys<'a> {
    /// The TVF.
    tvf: &'a WindowTvfNode,
    /// Index of `window_start` among the group keys.
    start: usize,
    /// Index of `window_end` among the group keys.
    end: usize,
    /// For every other group key, the TVF input column it forwards (if any).
    others: Vec<Option<usize>>,
    /// What lies between the aggregation and the TVF.
    path: TvfPath,
}

/// The window keys when the group keys hold both `window_start` and `window_end` of one window
/// TVF, i.e. when the aggregation is a window aggregation.
fn window_keys<'a>(input: &'a LogicalPlan, group: &[Expr]) -> Option<WindowKeys<'a>> {
    let mut start = None;
    let mut end = None;
    let mut tvf = None;
    let mut others = Vec::new();
    let mut path = TvfPath::default();
    for (i, g) in group.iter().enumerate() {
        let traced = match g {
            Expr::Column(c) => input
                .schema()
                .index_of_column(c)
                .ok()
                .and_then(|idx| trace_to_tvf(input, idx, &mut path)),
            _ => None,
        };
        let Some((node, idx)) = traced else {
            others.push(None);
            continue;
        };
        let base = node.input.schema().fields().len();
        match idx.checked_sub(base) {
            Some(0) => start = Some(i),
            Some(1) => end = Some(i),
            Some(_) => others.push(None),
            None => others.push(Some(idx)),
        }
        tvf = Some(node);
    }
    Some(WindowKeys {
        tvf: tvf?,
        start: start?,
        end: end?,
        others,
        path,
    })
}

/// What lies between a column and the window TVF it comes from.
#[derive(Default)]
pub(crate) struct TvfPath {
    /// A filter.
    pub(crate) filtered: bool,
    /// A window aggregation: the column is a window bound it grouped by, so the windows are
    /// attached to its output rows rather than assigned from a time column (Flink's
    /// window-attached windowing of cascaded window aggregations and window joins).
    pub(crate) attached: bool,
}

/// Follows column `idx` of `plan` down to a window TVF through projections, filters and the
/// window bounds of window aggregations; returns the TVF and the column's index in its output
/// when the column is forwarded unchanged.
fn trace_to_tvf<'a>(
    plan: &'a LogicalPlan,
    idx: usize,
    path: &mut TvfPath,
) -> Option<(&'a WindowTvfNode, usize)> {
    match plan {
        LogicalPlan::SubqueryAlias(a) => trace_to_tvf(&a.input, idx, path),
        LogicalPlan::Filter(f) => {
            path.filtered = true;
            trace_to_tvf(&f.input, idx, path)
        }
        LogicalPlan::Projection(p) => match p.expr.get(idx)?.clone().unalias() {
            Expr::Column(c) => {
                trace_to_tvf(&p.input, p.input.schema().index_of_column(&c).ok()?, path)
            }
            _ => None,
        },
        LogicalPlan::Aggregate(agg) => {
            let keys = window_keys(&agg.input, &agg.group_expr)?;
            if idx != keys.start && idx != keys.end {
                return None;
            }
            let Expr::Column(c) = agg.group_expr.get(idx)? else {
                return None;
            };
            path.attached = true;
            trace_to_tvf(
                &agg.input,
                agg.input.schema().index_of_column(c).ok()?,
                path,
            )
        }
        LogicalPlan::Extension(ext) => {
            Some((ext.node.as_any().downcast_ref::<WindowTvfNode>()?, idx))
        }
        _ => None,
    }
}

/// The sort keys of an `ORDER BY` (columns only) as input column indexes.
fn sort_keys(
    sort: &datafusion::logical_expr::Sort,
    span: Span,
) -> PlanResult<Vec<crate::graph::SortKey>> {
    sort.expr
        .iter()
        .map(|key| {
            let Expr::Column(c) = &key.expr else {
                return Err(unsupported("ORDER BY an expression", span));
            };
            let column = sort
                .input
                .schema()
                .index_of_column(c)
                .map_err(|e| df_error(e, span))?;
            Ok(crate::graph::SortKey {
                column,
                ascending: key.asc,
                nulls_first: key.nulls_first,
            })
        })
        .collect()
}

/// Flink's result type of an aggregate: (Flink type, Arrow type, nullable).
fn aggregate_type(
    function: AggregateFunction,
    arg: Option<&Field>,
) -> Result<(String, ArrowType, bool), String> {
    if matches!(
        function,
        AggregateFunction::Count | AggregateFunction::CountStar
    ) {
        return Ok(("BIGINT NOT NULL".into(), ArrowType::Int64, false));
    }
    let Some(arg) = arg else {
        return Err("aggregate without argument".into());
    };
    let t = arg.arrow().map_err(|e| e.to_string())?;
    let base = arg.data_type.trim_end_matches(" NOT NULL").to_string();
    let numeric = t.is_numeric();
    let variance = matches!(
        function,
        AggregateFunction::StddevPop
            | AggregateFunction::StddevSamp
            | AggregateFunction::VarPop
            | AggregateFunction::VarSamp
    );
    let (flink, arrow) = match (function, &t) {
        (
            AggregateFunction::Min
            | AggregateFunction::Max
            | AggregateFunction::FirstValue
            | AggregateFunction::LastValue,
            _,
        ) => (base, t.clone()),
        (AggregateFunction::ListAgg, _) => ("STRING".to_string(), ArrowType::Utf8),
        (AggregateFunction::ArrayAgg, _) => (
            format!("ARRAY<{}>", arg.data_type),
            ArrowType::List(Arc::new(arrow::datatypes::Field::new(
                "item",
                t.clone(),
                true,
            ))),
        ),
        (AggregateFunction::Sum, ArrowType::Decimal128(_, s)) => {
            (format!("DECIMAL(38, {s})"), ArrowType::Decimal128(38, *s))
        }
        (_, ArrowType::Decimal128(_, s)) if variance || function == AggregateFunction::Avg => {
            let s = (*s).max(6);
            (format!("DECIMAL(38, {s})"), ArrowType::Decimal128(38, s))
        }
        (AggregateFunction::Sum | AggregateFunction::Avg, _) if numeric => (base, t.clone()),
        (_, _) if variance && numeric => (base, t.clone()),
        (f, _) => return Err(format!("{f:?} over {}", arg.data_type).to_ascii_uppercase()),
    };
    Ok((flink, arrow, true))
}

/// JobGraph fields of a table's columns; `rowtime` marks the watermarked column.
fn table_fields(table: &TableInfo, rowtime: bool) -> Vec<Field> {
    table
        .columns
        .iter()
        .map(|c| Field {
            name: c.name.clone(),
            data_type: c.flink.clone(),
            arrow_type: c.arrow.to_string(),
            nullable: c.nullable,
            rowtime: rowtime && c.rowtime,
        })
        .collect()
}

/// JobGraph fields of a DataFusion schema (unqualified, unique names).
fn fields_of(schema: &DFSchema) -> Vec<Field> {
    let mut names = UniqueNames::default();
    schema
        .fields()
        .iter()
        .map(|f| Field::from_arrow(names.unique(f.name()), f.data_type(), f.is_nullable()))
        .collect()
}

/// Makes output column names unique the way Calcite does (`a`, `a0`, `a1`, ...).
#[derive(Default)]
struct UniqueNames {
    seen: std::collections::HashSet<String>,
}

impl UniqueNames {
    fn unique(&mut self, name: &str) -> String {
        if self.seen.insert(name.to_string()) {
            return name.to_string();
        }
        let mut i = 0;
        loop {
            let candidate = format!("{name}{i}");
            if self.seen.insert(candidate.clone()) {
                return candidate;
            }
            i += 1;
        }
    }
}

/// The kinds of change a source table produces: an upsert changelog when it declares one
/// (`'riffle.changelog-mode' = 'upsert'`, what `riffle migrate` writes for upsert-kafka), else
/// what its format carries.
fn source_changelog(connector: &ConnectorSpec) -> ChangelogMode {
    let upsert = connector
        .options
        .get(UPSERT_OPTION)
        .is_some_and(|v| v.eq_ignore_ascii_case("upsert"));
    if upsert {
        ChangelogMode::Upsert
    } else {
        format_changelog(connector)
    }
}

/// The option declaring a table an upsert changelog (see the rocketmq connector's data).
const UPSERT_OPTION: &str = "riffle.changelog-mode";

/// The kinds of change a table's `format` (or `value.format`) carries: Flink's changelog
/// formats (`debezium-json`, `canal-json`, ...) hold updates and deletes, so a source reading
/// one is updating and a sink writing one takes any change.
fn format_changelog(connector: &ConnectorSpec) -> ChangelogMode {
    const CHANGELOG_FORMATS: [&str; 4] =
        ["debezium-json", "canal-json", "maxwell-json", "ogg-json"];
    let format = connector
        .options
        .get("format")
        .or_else(|| connector.options.get("value.format"));
    match format {
        Some(f) if CHANGELOG_FORMATS.contains(&f.to_ascii_lowercase().as_str()) => {
            ChangelogMode::Retract
        }
        _ => ChangelogMode::InsertOnly,
    }
}
