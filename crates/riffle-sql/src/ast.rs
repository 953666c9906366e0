//! The Flink SQL AST.
//!
//! Riffle's own nodes cover what sqlparser has no node for (Flink DDL, statement sets, `SET`/`RESET`,
//! Flink data types). Queries and expressions are sqlparser's [`Query`] and [`Expr`], parsed with the
//! Flink dialect; their positions come from sqlparser's `Spanned` trait.
//!
//! Every node that a diagnostic may point at carries a [`Span`].

pub use sqlparser::ast::{Expr, Ident, ObjectName, Query};

use crate::span::Span;

/// A parsed SQL script: the statements of one file, in order.
#[derive(Debug, Clone, PartialEq)]
pub struct Script {
    /// Statements in source order.
    pub statements: Vec<Statement>,
}

/// One statement with its source span (from its first token to its terminating `;` exclusive).
#[derive(Debug, Clone, PartialEq)]
pub struct Statement {
    /// What the statement is.
    pub kind: StatementKind,
    /// Where it is.
    pub span: Span,
    /// SQL hints (`/*+ OPTIONS('k'='v') */`, `/*+ STATE_TTL(...) */`, ...) found inside the statement.
    pub hints: Vec<Hint>,
    /// `WITHIN` clauses of the `MATCH_RECOGNIZE`s inside the statement (see [`MatchWithin`]).
    pub match_within: Vec<MatchWithin>,
}

/// A query hint written as `/*+ NAME(args) */`.
#[derive(Debug, Clone, PartialEq)]
pub struct Hint {
    /// Hint name, upper-cased (`OPTIONS`, `STATE_TTL`, `LOOKUP`, `BROADCAST`, ...).
    pub name: String,
    /// Key-value arguments (`'k' = 'v'`), unquoted.
    pub options: Vec<(String, String)>,
    /// Positional arguments (table names or literals), unquoted.
    pub args: Vec<String>,
    /// Span of the hint inside its comment.
    pub span: Span,
}

/// The kinds of statement Riffle understands.
#[derive(Debug, Clone, PartialEq)]
pub enum StatementKind {
    /// `CREATE [TEMPORARY] TABLE ...`
    CreateTable(Box<CreateTable>),
    /// `CREATE [TEMPORARY] VIEW name [(cols)] AS query`
    CreateView(Box<CreateView>),
    /// `CREATE [TEMPORARY [SYSTEM]] FUNCTION ... AS 'class' [LANGUAGE ...] [USING JAR '...']`
    CreateFunction(Box<CreateFunction>),
    /// `CREATE CATALOG name WITH (...)`
    CreateCatalog(Box<CreateCatalog>),
    /// `CREATE DATABASE [IF NOT EXISTS] name [COMMENT ..] [WITH (...)]`
    CreateDatabase(Box<CreateDatabase>),
    /// `DROP [TEMPORARY] TABLE|VIEW|FUNCTION|CATALOG|DATABASE [IF EXISTS] name`
    Drop(Box<Drop>),
    /// `ALTER ...` (kept as text; Riffle only reports it).
    Alter(Box<Unparsed>),
    /// `SET` (list all) or `SET 'key' = 'value'`.
    Set(Option<ConfigOption>),
    /// `RESET` (all) or `RESET 'key'`.
    Reset(Option<ConfigKey>),
    /// `USE [CATALOG] name`.
    Use(Box<Use>),
    /// `INSERT INTO|OVERWRITE ...`
    Insert(Box<Insert>),
    /// `EXECUTE STATEMENT SET BEGIN ... END` or `BEGIN STATEMENT SET; ... END;`
    StatementSet(Box<StatementSet>),
    /// A bare query (`SELECT ...`, `VALUES ...`, `WITH ...`), possibly prefixed by `EXECUTE`.
    Query(Box<Query>),
    /// `EXPLAIN [PLAN FOR | details] statement`.
    Explain(Box<Explain>),
    /// `SHOW ...`, `DESCRIBE ...`, `LOAD MODULE ...` and other client statements Riffle only reports.
    Client(Box<Unparsed>),
}

/// A statement Riffle recognises by its leading keywords but does not model; kept as source text.
#[derive(Debug, Clone, PartialEq)]
pub struct Unparsed {
    /// Leading keywords, upper-cased and space-separated (e.g. `SHOW TABLES`, `ALTER TABLE`).
    pub keywords: String,
    /// The statement's source text.
    pub text: String,
}

/// `CREATE TABLE`.
#[derive(Debug, Clone, PartialEq)]
pub struct CreateTable {
    /// Table name (possibly `catalog.db.table`).
    pub name: ObjectName,
    /// `TEMPORARY` was given.
    pub temporary: bool,
    /// `IF NOT EXISTS` was given.
    pub if_not_exists: bool,
    /// Columns in declaration order.
    pub columns: Vec<Column>,
    /// `WATERMARK FOR ...`, if any.
    pub watermark: Option<Watermark>,
    /// `PRIMARY KEY (...) NOT ENFORCED`, if any.
    pub primary_key: Option<PrimaryKey>,
    /// `PARTITIONED BY (...)` columns.
    pub partitioned_by: Vec<Ident>,
    /// `COMMENT '...'` on the table.
    pub comment: Option<String>,
    /// `WITH (...)` options in source order.
    pub options: Vec<TableOption>,
    /// `LIKE source (options)`, if any.
    pub like: Option<LikeClause>,
    /// Span of the table name.
    pub name_span: Span,
    /// The query of `CREATE TABLE ... AS query` (CTAS), if any.
    pub as_query: Option<Box<Query>>,
}

/// A column of `CREATE TABLE`.
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    /// Column name.
    pub name: Ident,
    /// Physical, computed, metadata or (legacy rsqlDB) header column.
    pub kind: ColumnKind,
    /// `COMMENT '...'`.
    pub comment: Option<String>,
    /// Span of the whole column definition.
    pub span: Span,
}

/// What kind of column a [`Column`] is.
// Columns are few and built once per DDL statement; boxing the expression would only add noise.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum ColumnKind {
    /// `name TYPE [NOT NULL] [PRIMARY KEY NOT ENFORCED]`
    Physical {
        /// Declared type (with nullability).
        data_type: DataType,
        /// The column carried an inline `PRIMARY KEY NOT ENFORCED`.
        primary_key: bool,
    },
    /// `name AS expr`
    Computed {
        /// The computing expression.
        expr: Expr,
    },
    /// `name TYPE METADATA [FROM 'key'] [VIRTUAL]`
    Metadata {
        /// Declared type.
        data_type: DataType,
        /// `FROM 'key'`, when the metadata key differs from the column name.
        key: Option<String>,
        /// `VIRTUAL`: read-only, excluded from the sink schema.
        is_virtual: bool,
    },
    /// rsqlDB legacy `name TYPE header`: a message header/property column.
    Header {
        /// Declared type.
        data_type: DataType,
    },
}

/// `WATERMARK [name] FOR column AS expr`.
#[derive(Debug, Clone, PartialEq)]
pub struct Watermark {
    /// The legacy rsqlDB form names the watermark: `WATERMARK wk FOR ts AS ...`.
    pub name: Option<Ident>,
    /// Rowtime column (may be a nested path in Flink; Riffle keeps the dotted parts).
    pub column: Vec<Ident>,
    /// Watermark strategy expression (e.g. `ts - INTERVAL '5' SECOND`, legacy `withOffset(ts, 2000)`).
    pub expr: Expr,
    /// Span of the whole `WATERMARK` clause.
    pub span: Span,
}

/// `PRIMARY KEY (a, b) NOT ENFORCED`, table-level or inline.
#[derive(Debug, Clone, PartialEq)]
pub struct PrimaryKey {
    /// Optional `CONSTRAINT name`.
    pub constraint_name: Option<Ident>,
    /// Key columns.
    pub columns: Vec<Ident>,
    /// `NOT ENFORCED` was written (Flink requires it).
    pub not_enforced: bool,
    /// Span of the clause.
    pub span: Span,
}

/// One `'key' = 'value'` entry of a `WITH (...)` clause (also used for `CREATE CATALOG` etc.).
#[derive(Debug, Clone, PartialEq)]
pub struct TableOption {
    /// Option key without quotes.
    pub key: String,
    /// Option value without quotes.
    pub value: String,
    /// The key was written unquoted (legacy rsqlDB `type = 'rocketmq'`).
    pub key_unquoted: bool,
    /// Span of the key.
    pub key_span: Span,
    /// Span of the value.
    pub value_span: Span,
}

/// `LIKE source_table (INCLUDING ALL | EXCLUDING OPTIONS | ...)`.
#[derive(Debug, Clone, PartialEq)]
pub struct LikeClause {
    /// The table whose definition is copied.
    pub source: ObjectName,
    /// Merge options in order, e.g. `INCLUDING ALL`, `OVERWRITING OPTIONS`.
    pub options: Vec<LikeOption>,
    /// Span of the clause.
    pub span: Span,
}

/// One `LIKE` merge option.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LikeOption {
    /// `INCLUDING`, `EXCLUDING` or `OVERWRITING`.
    pub strategy: LikeStrategy,
    /// `ALL`, `CONSTRAINTS`, `GENERATED`, `METADATA`, `OPTIONS`, `PARTITIONS`, `WATERMARKS`.
    pub feature: LikeFeature,
}

/// Merge strategy of a `LIKE` option.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LikeStrategy {
    /// `INCLUDING`
    Including,
    /// `EXCLUDING`
    Excluding,
    /// `OVERWRITING`
    Overwriting,
}

/// Feature a `LIKE` option applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LikeFeature {
    /// `ALL`
    All,
    /// `CONSTRAINTS`
    Constraints,
    /// `GENERATED`
    Generated,
    /// `METADATA`
    Metadata,
    /// `OPTIONS`
    Options,
    /// `PARTITIONS`
    Partitions,
    /// `WATERMARKS`
    Watermarks,
}

/// `CREATE [TEMPORARY] VIEW [IF NOT EXISTS] name [(columns)] AS query`.
#[derive(Debug, Clone, PartialEq)]
pub struct CreateView {
    /// View name.
    pub name: ObjectName,
    /// `TEMPORARY` was given.
    pub temporary: bool,
    /// `IF NOT EXISTS` was given.
    pub if_not_exists: bool,
    /// Optional explicit column names.
    pub columns: Vec<Ident>,
    /// The view's query.
    pub query: Query,
    /// Span of the view name.
    pub name_span: Span,
}

/// `CREATE [TEMPORARY [SYSTEM]] FUNCTION [IF NOT EXISTS] name AS 'identifier' [LANGUAGE l] [USING JAR 'p', ...]`.
#[derive(Debug, Clone, PartialEq)]
pub struct CreateFunction {
    /// Function name.
    pub name: ObjectName,
    /// `TEMPORARY` was given.
    pub temporary: bool,
    /// `TEMPORARY SYSTEM` was given.
    pub system: bool,
    /// `IF NOT EXISTS` was given.
    pub if_not_exists: bool,
    /// Class name (Java/Scala), fully qualified Python name, or Riffle native symbol.
    pub identifier: String,
    /// `LANGUAGE JAVA|SCALA|PYTHON|...` upper-cased; `None` means Flink's default (JAVA).
    pub language: Option<String>,
    /// `USING JAR '...'` resources.
    pub jars: Vec<String>,
    /// Span of the function name.
    pub name_span: Span,
}

/// `CREATE CATALOG name WITH (...)`.
#[derive(Debug, Clone, PartialEq)]
pub struct CreateCatalog {
    /// Catalog name.
    pub name: Ident,
    /// Catalog options.
    pub options: Vec<TableOption>,
}

/// `CREATE DATABASE [IF NOT EXISTS] name [COMMENT '...'] [WITH (...)]`.
#[derive(Debug, Clone, PartialEq)]
pub struct CreateDatabase {
    /// Database name.
    pub name: ObjectName,
    /// `IF NOT EXISTS` was given.
    pub if_not_exists: bool,
    /// Comment.
    pub comment: Option<String>,
    /// Options.
    pub options: Vec<TableOption>,
}

/// `DROP ...`.
#[derive(Debug, Clone, PartialEq)]
pub struct Drop {
    /// What is dropped.
    pub object: DropObject,
    /// `TEMPORARY` was given.
    pub temporary: bool,
    /// `TEMPORARY SYSTEM` was given (functions only).
    pub system: bool,
    /// `IF EXISTS` was given.
    pub if_exists: bool,
    /// Name of the dropped object.
    pub name: ObjectName,
}

/// Kind of object a `DROP` removes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DropObject {
    /// `TABLE`
    Table,
    /// `VIEW`
    View,
    /// `FUNCTION`
    Function,
    /// `CATALOG`
    Catalog,
    /// `DATABASE`
    Database,
}

/// `USE [CATALOG] name` or `USE MODULES ...` (modules kept as names).
#[derive(Debug, Clone, PartialEq)]
pub struct Use {
    /// `USE CATALOG` (true) or `USE db` (false).
    pub catalog: bool,
    /// Target name.
    pub name: ObjectName,
}

/// `SET 'key' = 'value'`.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigOption {
    /// Configuration key without quotes.
    pub key: String,
    /// Value without quotes.
    pub value: String,
    /// Span of the key.
    pub key_span: Span,
    /// Span of the value.
    pub value_span: Span,
}

/// The key of `RESET 'key'`.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigKey {
    /// Configuration key without quotes.
    pub key: String,
    /// Span of the key.
    pub span: Span,
}

/// `INSERT INTO|OVERWRITE target [PARTITION (k = v, ...)] [(columns)] query`.
#[derive(Debug, Clone, PartialEq)]
pub struct Insert {
    /// Target table.
    pub table: ObjectName,
    /// `OVERWRITE` instead of `INTO`.
    pub overwrite: bool,
    /// Static partition spec.
    pub partition: Vec<(Ident, Expr)>,
    /// Explicit target column list.
    pub columns: Vec<Ident>,
    /// Source query.
    pub query: Query,
    /// Span of the whole `INSERT` (inside a statement set: of that `INSERT`).
    pub span: Span,
    /// Span of the target table name.
    pub table_span: Span,
}

/// A statement set: several `INSERT`s optimised and run as one job.
#[derive(Debug, Clone, PartialEq)]
pub struct StatementSet {
    /// The inserts in order.
    pub inserts: Vec<Insert>,
    /// Which syntax was used.
    pub syntax: StatementSetSyntax,
}

/// Spelling of a statement set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatementSetSyntax {
    /// `EXECUTE STATEMENT SET BEGIN ... END;` (Flink 1.13+ SQL client and Table API).
    ExecuteBegin,
    /// `BEGIN STATEMENT SET; ... END;` (SQL client).
    BeginStatementSet,
}

/// `EXPLAIN [PLAN FOR] [detail, ...] statement`.
#[derive(Debug, Clone, PartialEq)]
pub struct Explain {
    /// Explain details such as `ESTIMATED_COST`, `CHANGELOG_MODE`, `JSON_EXECUTION_PLAN`.
    pub details: Vec<String>,
    /// The explained statement (a query, an `INSERT` or a statement set).
    pub statement: Box<Statement>,
}

/// A Flink logical data type, as written in DDL and `CAST`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DataType {
    /// The type itself.
    pub kind: TypeKind,
    /// `false` when `NOT NULL` was written.
    pub nullable: bool,
}

/// A Flink logical type (without nullability; see [`DataType`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum TypeKind {
    /// `CHAR(n)` (default 1).
    Char(u32),
    /// `VARCHAR(n)`; `STRING` is `VARCHAR(2147483647)`.
    Varchar(u32),
    /// `BOOLEAN`
    Boolean,
    /// `BINARY(n)` (default 1).
    Binary(u32),
    /// `VARBINARY(n)`; `BYTES` is `VARBINARY(2147483647)`.
    Varbinary(u32),
    /// `DECIMAL(p, s)` / `DEC` / `NUMERIC`; defaults `(10, 0)`.
    Decimal(u8, i8),
    /// `TINYINT`
    TinyInt,
    /// `SMALLINT`
    SmallInt,
    /// `INT` / `INTEGER`
    Int,
    /// `BIGINT`
    BigInt,
    /// `FLOAT` (4-byte)
    Float,
    /// `DOUBLE [PRECISION]`
    Double,
    /// `DATE`
    Date,
    /// `TIME(p)` (default 0)
    Time(u8),
    /// `TIMESTAMP(p) [WITHOUT TIME ZONE]` (default 6)
    Timestamp(u8),
    /// `TIMESTAMP_LTZ(p)` / `TIMESTAMP(p) WITH LOCAL TIME ZONE` (default 6)
    TimestampLtz(u8),
    /// `INTERVAL YEAR TO MONTH` family.
    IntervalYearMonth,
    /// `INTERVAL DAY TO SECOND` family.
    IntervalDayTime,
    /// `ARRAY<T>` / `T ARRAY`
    Array(Box<DataType>),
    /// `MULTISET<T>` / `T MULTISET`
    Multiset(Box<DataType>),
    /// `MAP<K, V>`
    Map(Box<DataType>, Box<DataType>),
    /// `ROW<name T, ...>` / `ROW(name T, ...)`
    Row(Vec<RowField>),
    /// `RAW('class', 'snapshot')`
    Raw(String),
    /// `NULL` type (untyped NULL literal).
    Null,
    /// A type-level placeholder for legacy/unknown names (kept so `check` can report them).
    Unknown(String),
}

/// A named field of a `ROW` type.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RowField {
    /// Field name.
    pub name: String,
    /// Field type.
    pub data_type: DataType,
    /// Optional field description (`ROW<a INT 'desc'>`).
    pub description: Option<String>,
}

/// Maximum length Flink uses for `STRING` / `BYTES`.
pub const MAX_LENGTH: u32 = i32::MAX as u32;

impl DataType {
    /// A nullable type.
    pub fn nullable(kind: TypeKind) -> Self {
        Self {
            kind,
            nullable: true,
        }
    }

    /// A `NOT NULL` type.
    pub fn not_null(kind: TypeKind) -> Self {
        Self {
            kind,
            nullable: false,
        }
    }

    /// The same type with the given nullability.
    pub fn with_nullable(mut self, nullable: bool) -> Self {
        self.nullable = nullable;
        self
    }
}

/// `WITHIN INTERVAL ...` of a `MATCH_RECOGNIZE` pattern.
///
/// sqlparser's `TableFactor::MatchRecognize` has no field for it, so the parser lifts the clause out
/// of the query before sqlparser sees it and reports it beside the script
/// (`ParsedScript::match_within`); the span tells which `MATCH_RECOGNIZE` it belongs to.
#[derive(Debug, Clone, PartialEq)]
pub struct MatchWithin {
    /// The time constraint, e.g. `INTERVAL '10' MINUTE`.
    pub interval: Expr,
    /// Span of the whole `WITHIN ...` clause.
    pub span: Span,
}
