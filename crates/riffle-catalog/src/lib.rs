//! Semantic analysis of parsed Flink SQL scripts.
//!
//! [`analyze`] walks a [`Script`] in order, the way Flink's `TableEnvironment` executes it:
//! `CREATE TABLE` / `VIEW` / `FUNCTION` and `DROP` change the [`Catalog`]; queries and `INSERT`s
//! are resolved against it. On the way it
//!
//! - merges `LIKE` clauses, derives time attributes (rowtime from `WATERMARK`, proctime from
//!   `PROCTIME()`), and checks primary keys, watermarks and partitions;
//! - validates connector and format options against the schemas in `dialects/`;
//! - resolves every table, column and function reference and infers every expression's type with
//!   Flink's rules (see [`types`]);
//! - checks `INSERT` targets against their sink schema with Flink's implicit cast rules.
//!
//! Every finding is a [`Diagnostic`] with a span and a stable code; the messages use Flink's
//! words where Flink has them. Analysis never stops at the first error and never panics.
//!
//! ```
//! use riffle_sql::ast::{Script, Statement, StatementKind};
//! let analysis = riffle_catalog::analyze(&Script { statements: vec![] });
//! assert!(analysis.diagnostics.is_empty());
//! ```

mod catalog;
mod ddl;
mod expr;
mod functions;
mod insert;
mod options;
mod query;
mod schema;
mod scope;
pub mod types;

pub use catalog::{
    Catalog, ColumnDef, ColumnRole, ConnectorInfo, FunctionRef, ObjectPath, OptionStyle, TableDef,
    UserFunction, ViewDef, WatermarkDef, DEFAULT_CATALOG, DEFAULT_DATABASE,
};
pub use schema::{Field, Schema, TimeAttribute};

use std::collections::BTreeMap;

use riffle_sql::ast::{Script, Statement, StatementKind};
use riffle_sql::{Diagnostic, Location, Span};

/// The result of analyzing a script.
#[derive(Debug, Clone)]
pub struct Analysis {
    /// The catalog as it stands after the last statement.
    pub catalog: Catalog,
    /// Every finding, in statement order.
    pub diagnostics: Vec<Diagnostic>,
    /// One entry per script statement (`statements[i]` describes `script.statements[i]`).
    pub statements: Vec<StatementInfo>,
    /// What each `TYPEOF(...)` call whose argument type Riffle derives returns (Flink's type
    /// string), keyed by where the call's name starts.
    pub type_names: BTreeMap<Location, String>,
}

impl Analysis {
    /// True when some diagnostic is an error.
    pub fn has_errors(&self) -> bool {
        self.diagnostics
            .iter()
            .any(|d| d.severity == riffle_sql::Severity::Error)
    }
}

/// What analysis learned about one statement.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StatementInfo {
    /// The result schema of a query, of the source query of an `INSERT`, or of a view.
    pub output: Option<Schema>,
    /// For a statement set (or an `EXPLAIN` of one): the source query schema of each `INSERT`.
    pub inserts: Vec<Option<Schema>>,
    /// For a `CREATE TABLE ... LIKE` and an `ALTER TABLE` Riffle models: the table as it
    /// stands after the statement (see [`TableDef::to_create_table`]).
    pub table: Option<TableDef>,
}

/// Analyzes a parsed script. See the crate documentation.
pub fn analyze(script: &Script) -> Analysis {
    let mut analyzer = Analyzer::default();
    let statements = script
        .statements
        .iter()
        .map(|s| analyzer.statement(s))
        .collect();
    analyzer.finish_option_checks();
    Analysis {
        catalog: analyzer.catalog,
        diagnostics: analyzer.diags,
        statements,
        type_names: analyzer.type_names,
    }
}

/// How a table is used by the script's queries (drives role-specific required options).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct TableUsage {
    pub source: bool,
    pub sink: bool,
    pub lookup: bool,
}

/// The analysis state threaded through every statement.
#[derive(Default)]
pub(crate) struct Analyzer {
    pub catalog: Catalog,
    pub diags: Vec<Diagnostic>,
    /// Tables read, written or looked up so far, for the required-option check at the end.
    pub usage: BTreeMap<ObjectPath, TableUsage>,
    /// Set while analyzing the DDL of an rsqlDB-style or pre-1.11 table: Flink would reject such
    /// a table anyway, and `riffle check` classifies it as needing migration, so its findings are
    /// warnings rather than errors.
    pub legacy_table: bool,
    /// The statement's `OPTIONS` hints, and whether a table reference has claimed each.
    pub hints: Vec<(riffle_sql::ast::Hint, bool)>,
    /// Tables without a `connector` option (reported only if the script uses them).
    pub missing_connector: Vec<(ObjectPath, Span)>,
    /// Tables whose required options are checked at the end.
    pub pending_required: Vec<options::PendingRequired>,
    /// The `WINDOW` clause of the `SELECT` whose projection is being typed (`OVER w`).
    pub windows: Vec<sqlparser::ast::NamedWindowDefinition>,
    /// See [`Analysis::type_names`].
    pub type_names: BTreeMap<Location, String>,
}

impl Analyzer {
    /// Records an error.
    pub fn error(&mut self, code: &str, message: impl Into<String>, span: Span) -> &mut Diagnostic {
        let diag = if self.legacy_table {
            Diagnostic::warning(code, message, span)
        } else {
            Diagnostic::error(code, message, span)
        };
        self.diags.push(diag);
        // The push above guarantees a last element.
        let last = self.diags.len() - 1;
        &mut self.diags[last]
    }

    fn statement(&mut self, statement: &Statement) -> StatementInfo {
        self.hints = statement
            .hints
            .iter()
            .filter(|h| h.name == "OPTIONS")
            .cloned()
            .map(|h| (h, false))
            .collect();
        match &statement.kind {
            StatementKind::CreateTable(create) => {
                let output = self.create_table(create, statement.span);
                let table = create
                    .like
                    .as_ref()
                    .and_then(|_| self.catalog.table(&create.name).cloned());
                StatementInfo {
                    output,
                    inserts: Vec::new(),
                    table,
                }
            }
            StatementKind::CreateView(view) => StatementInfo {
                output: self.create_view(view),
                ..StatementInfo::default()
            },
            StatementKind::CreateFunction(function) => {
                self.create_function(function);
                StatementInfo::default()
            }
            StatementKind::Drop(drop) => {
                self.drop(drop, statement.span);
                StatementInfo::default()
            }
            StatementKind::Use(u) => {
                self.use_statement(u);
                StatementInfo::default()
            }
            StatementKind::Query(q) => StatementInfo {
                output: Some(self.top_level_query(q)),
                ..StatementInfo::default()
            },
            StatementKind::Insert(insert) => StatementInfo {
                output: self.insert(insert),
                ..StatementInfo::default()
            },
            StatementKind::StatementSet(set) => StatementInfo {
                inserts: set.inserts.iter().map(|i| self.insert(i)).collect(),
                ..StatementInfo::default()
            },
            StatementKind::Explain(explain) => self.statement(&explain.statement),
            StatementKind::Alter(alter) => StatementInfo {
                table: self.alter(alter),
                ..StatementInfo::default()
            },
            StatementKind::CreateCatalog(_)
            | StatementKind::CreateDatabase(_)
            | StatementKind::Set(_)
            | StatementKind::Reset(_)
            | StatementKind::Client(_) => StatementInfo::default(),
        }
    }
}

/// The span of an identifier.
pub(crate) fn ident_span(ident: &riffle_sql::ast::Ident) -> Span {
    Span::from(ident.span)
}

/// Converts a sqlparser span into a Riffle span.
pub(crate) fn span_of(node: &impl sqlparser::ast::Spanned) -> Span {
    Span::from(node.span())
}
