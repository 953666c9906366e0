//! The catalog an analyzed script builds: tables, views and user functions, keyed by their fully
//! qualified Flink identifier (`catalog.database.object`).

use std::collections::BTreeMap;

use riffle_sql::ast::{
    Column, ColumnKind, CreateTable, DataType, Expr, Ident, ObjectName, PrimaryKey, Query,
    TableOption, Watermark,
};
use riffle_sql::Span;

use crate::schema::{Schema, TimeAttribute};

/// Flink's default catalog name.
pub const DEFAULT_CATALOG: &str = "default_catalog";
/// Flink's default database name.
pub const DEFAULT_DATABASE: &str = "default_database";

/// A fully qualified object identifier: catalog, database, object name (case-sensitive, as Flink
/// compares identifiers).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjectPath {
    /// Catalog name.
    pub catalog: String,
    /// Database name.
    pub database: String,
    /// Object name.
    pub name: String,
}

impl std::fmt::Display for ObjectPath {
    /// Flink's `ObjectIdentifier.asSummaryString()`: `catalog.database.name`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}.{}", self.catalog, self.database, self.name)
    }
}

/// How a table's connector was named in its `WITH` clause.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OptionStyle {
    /// `'connector' = 'kafka'` (Flink 1.11+).
    Current,
    /// rsqlDB's unquoted `type = 'rocketmq'`.
    RsqldbType,
    /// The pre-1.11 `'connector.type' = 'kafka'` property style.
    LegacyConnectorType,
}

/// The connector of a table, as resolved from its options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectorInfo {
    /// The connector identifier (`'connector'` value, rsqlDB `type`, or legacy `connector.type`).
    pub name: Option<String>,
    /// Which option spelling named the connector.
    pub option_style: OptionStyle,
    /// For connectors with several option generations (rocketmq): the generation(s) of the
    /// options used, comma-separated in first-use order.
    pub generation: Option<String>,
    /// Formats named by the table (`format`, `key.format`, `value.format`).
    pub formats: Vec<String>,
}

/// What a table column is.
#[derive(Debug, Clone, PartialEq)]
pub enum ColumnRole {
    /// A physical column stored by the connector.
    Physical,
    /// `name AS expr`: computed from other columns.
    Computed {
        /// The computing expression.
        expr: Box<Expr>,
    },
    /// `name TYPE METADATA [FROM 'key'] [VIRTUAL]`.
    Metadata {
        /// Metadata key (the column name when no `FROM` is given).
        key: String,
        /// Read-only column, excluded from the sink schema.
        is_virtual: bool,
    },
    /// rsqlDB legacy message header/property column.
    Header,
}

/// A column of a registered table.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnDef {
    /// Column name.
    pub name: String,
    /// Column type (primary key columns are `NOT NULL`).
    pub data_type: DataType,
    /// What kind of column it is.
    pub kind: ColumnRole,
    /// Rowtime (watermarked) or proctime attribute.
    pub time_attribute: Option<TimeAttribute>,
    /// Where the column is declared (the `LIKE` clause for inherited columns).
    pub span: Span,
}

impl ColumnDef {
    /// True for columns a sink writes: physical, header and non-virtual metadata columns.
    pub fn is_persisted(&self) -> bool {
        match &self.kind {
            ColumnRole::Physical | ColumnRole::Header => true,
            ColumnRole::Metadata { is_virtual, .. } => !is_virtual,
            ColumnRole::Computed { .. } => false,
        }
    }
}

/// `WATERMARK FOR column AS expr`.
#[derive(Debug, Clone, PartialEq)]
pub struct WatermarkDef {
    /// The rowtime column (dotted path for nested fields).
    pub column: String,
    /// The watermark strategy expression.
    pub expr: Expr,
    /// Type of the strategy expression.
    pub expr_type: DataType,
    /// Span of the `WATERMARK` clause.
    pub span: Span,
}

/// A table registered by `CREATE TABLE`, after `LIKE` merging.
#[derive(Debug, Clone, PartialEq)]
pub struct TableDef {
    /// The table name as written.
    pub name: ObjectName,
    /// Fully qualified identifier.
    pub path: ObjectPath,
    /// `CREATE TEMPORARY TABLE`.
    pub temporary: bool,
    /// Columns in schema order.
    pub columns: Vec<ColumnDef>,
    /// The connector and its option style.
    pub connector: ConnectorInfo,
    /// Primary key columns.
    pub primary_key: Vec<String>,
    /// Watermark, if declared.
    pub watermark: Option<WatermarkDef>,
    /// `PARTITIONED BY` columns.
    pub partition_keys: Vec<String>,
    /// `WITH` options after `LIKE` merging, in order.
    pub options: Vec<(String, String)>,
    /// Span of the table name in its `CREATE TABLE`.
    pub span: Span,
}

impl TableDef {
    /// The table's definition as one `CREATE TABLE` without `LIKE`: what a `LIKE` merge or an
    /// `ALTER TABLE` produced, for consumers that read table definitions from DDL.
    pub fn to_create_table(&self) -> CreateTable {
        let ident = |name: &str| Ident::new(name.to_string());
        let columns = self
            .columns
            .iter()
            .map(|c| Column {
                name: ident(&c.name),
                kind: match &c.kind {
                    ColumnRole::Physical => ColumnKind::Physical {
                        data_type: c.data_type.clone(),
                        primary_key: false,
                    },
                    ColumnRole::Computed { expr } => ColumnKind::Computed {
                        expr: (**expr).clone(),
                    },
                    ColumnRole::Metadata { key, is_virtual } => ColumnKind::Metadata {
                        data_type: c.data_type.clone(),
                        key: (key != &c.name).then(|| key.clone()),
                        is_virtual: *is_virtual,
                    },
                    ColumnRole::Header => ColumnKind::Header {
                        data_type: c.data_type.clone(),
                    },
                },
                comment: None,
                span: c.span,
            })
            .collect();
        CreateTable {
            name: self.name.clone(),
            temporary: self.temporary,
            if_not_exists: false,
            columns,
            watermark: self.watermark.as_ref().map(|w| Watermark {
                name: None,
                column: w.column.split('.').map(ident).collect(),
                expr: w.expr.clone(),
                span: w.span,
            }),
            primary_key: (!self.primary_key.is_empty()).then(|| PrimaryKey {
                constraint_name: None,
                columns: self.primary_key.iter().map(|k| ident(k)).collect(),
                not_enforced: true,
                span: self.span,
            }),
            partitioned_by: self.partition_keys.iter().map(|k| ident(k)).collect(),
            comment: None,
            options: self
                .options
                .iter()
                .map(|(key, value)| TableOption {
                    key: key.clone(),
                    value: value.clone(),
                    key_unquoted: false,
                    key_span: self.span,
                    value_span: self.span,
                })
                .collect(),
            like: None,
            name_span: self.span,
            as_query: None,
        }
    }

    /// A column by name.
    pub fn column(&self, name: &str) -> Option<&ColumnDef> {
        self.columns.iter().find(|c| c.name == name)
    }

    /// The value of an option.
    pub fn option(&self, key: &str) -> Option<&str> {
        self.options
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The schema a query reading the table sees: every column.
    pub fn source_schema(&self) -> Schema {
        Schema::from_columns(&self.columns, |_| true)
    }

    /// The schema an `INSERT` writes: persisted columns only (Flink's sink schema).
    pub fn sink_schema(&self) -> Schema {
        Schema::from_columns(&self.columns, ColumnDef::is_persisted)
    }
}

/// A view registered by `CREATE VIEW`.
#[derive(Debug, Clone, PartialEq)]
pub struct ViewDef {
    /// The view name as written.
    pub name: ObjectName,
    /// Fully qualified identifier.
    pub path: ObjectPath,
    /// `CREATE TEMPORARY VIEW`.
    pub temporary: bool,
    /// The schema inferred from the view's query (renamed by its column list).
    pub schema: Schema,
    /// The view's query.
    pub query: Query,
    /// Span of the view name.
    pub span: Span,
}

/// A function registered by `CREATE FUNCTION`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserFunction {
    /// Function name, lower-cased as Flink normalizes function identifiers.
    pub name: String,
    /// Class name / Python name / native symbol.
    pub identifier: String,
    /// `LANGUAGE` (upper-cased; `JAVA` when not given).
    pub language: String,
    /// `USING JAR` resources.
    pub jars: Vec<String>,
    /// `TEMPORARY SYSTEM` function (shadows built-ins).
    pub system: bool,
    /// Span of the function name.
    pub span: Span,
}

/// A function found by name: a Flink built-in or a user function.
#[derive(Debug, Clone, Copy)]
pub enum FunctionRef<'a> {
    /// A built-in function described in `dialects/flink/functions.toml`.
    Builtin(&'static riffle_dialects::FunctionSpec),
    /// A function from `CREATE FUNCTION`.
    User(&'a UserFunction),
}

/// Tables, views and functions known after analyzing a script (the state at its end).
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    tables: BTreeMap<ObjectPath, TableDef>,
    views: BTreeMap<ObjectPath, ViewDef>,
    functions: BTreeMap<String, UserFunction>,
    current_catalog: Option<String>,
    current_database: Option<String>,
    /// Registration order of tables, so iteration follows the script.
    table_order: Vec<ObjectPath>,
    /// Tables changed by an `ALTER TABLE` Riffle does not model: their schema may have more
    /// columns than recorded.
    altered: std::collections::BTreeSet<ObjectPath>,
}

impl Catalog {
    /// An empty catalog positioned at `default_catalog.default_database`.
    pub fn new() -> Self {
        Self::default()
    }

    /// The current catalog (`USE CATALOG`).
    pub fn current_catalog(&self) -> &str {
        self.current_catalog.as_deref().unwrap_or(DEFAULT_CATALOG)
    }

    /// The current database (`USE`).
    pub fn current_database(&self) -> &str {
        self.current_database.as_deref().unwrap_or(DEFAULT_DATABASE)
    }

    /// Qualifies a name against the current catalog and database; `None` for names with more
    /// than three parts or non-identifier parts.
    pub fn resolve_path(&self, name: &ObjectName) -> Option<ObjectPath> {
        let parts: Vec<&str> = name
            .0
            .iter()
            .map(|p| p.as_ident().map(|i| i.value.as_str()))
            .collect::<Option<_>>()?;
        let (catalog, database, object) = match parts.as_slice() {
            [t] => (self.current_catalog(), self.current_database(), *t),
            [d, t] => (self.current_catalog(), *d, *t),
            [c, d, t] => (*c, *d, *t),
            _ => return None,
        };
        Some(ObjectPath {
            catalog: catalog.to_string(),
            database: database.to_string(),
            name: object.to_string(),
        })
    }

    /// A table by (possibly partially qualified) name.
    pub fn table(&self, name: &ObjectName) -> Option<&TableDef> {
        self.tables.get(&self.resolve_path(name)?)
    }

    /// A view by (possibly partially qualified) name.
    pub fn view(&self, name: &ObjectName) -> Option<&ViewDef> {
        self.views.get(&self.resolve_path(name)?)
    }

    /// A function by name (case-insensitive). Flink's resolution order: temporary system
    /// functions, built-in functions, then catalog functions.
    pub fn function(&self, name: &str) -> Option<FunctionRef<'_>> {
        let user = self.functions.get(&name.to_lowercase());
        if let Some(f) = user.filter(|f| f.system) {
            return Some(FunctionRef::User(f));
        }
        riffle_dialects::function(name)
            .map(FunctionRef::Builtin)
            .or(user.map(FunctionRef::User))
    }

    /// The registered tables, in registration order.
    pub fn tables(&self) -> impl Iterator<Item = &TableDef> {
        self.table_order.iter().filter_map(|p| self.tables.get(p))
    }

    /// The registered views.
    pub fn views(&self) -> impl Iterator<Item = &ViewDef> {
        self.views.values()
    }

    /// The registered user functions.
    pub fn user_functions(&self) -> impl Iterator<Item = &UserFunction> {
        self.functions.values()
    }

    pub(crate) fn table_by_path(&self, path: &ObjectPath) -> Option<&TableDef> {
        self.tables.get(path)
    }

    pub(crate) fn table_by_path_mut(&mut self, path: &ObjectPath) -> Option<&mut TableDef> {
        self.tables.get_mut(path)
    }

    pub(crate) fn view_by_path(&self, path: &ObjectPath) -> Option<&ViewDef> {
        self.views.get(path)
    }

    pub(crate) fn insert_table(&mut self, table: TableDef) {
        let path = table.path.clone();
        if self.tables.insert(path.clone(), table).is_none() {
            self.table_order.push(path);
        }
    }

    pub(crate) fn insert_view(&mut self, view: ViewDef) {
        self.views.insert(view.path.clone(), view);
    }

    pub(crate) fn insert_function(&mut self, function: UserFunction) {
        self.functions.insert(function.name.clone(), function);
    }

    pub(crate) fn has_user_function(&self, name: &str) -> bool {
        self.functions.contains_key(&name.to_lowercase())
    }

    pub(crate) fn remove_table(&mut self, path: &ObjectPath) -> bool {
        self.table_order.retain(|p| p != path);
        self.tables.remove(path).is_some()
    }

    pub(crate) fn remove_view(&mut self, path: &ObjectPath) -> bool {
        self.views.remove(path).is_some()
    }

    pub(crate) fn remove_function(&mut self, name: &str) -> bool {
        self.functions.remove(&name.to_lowercase()).is_some()
    }

    pub(crate) fn use_catalog(&mut self, catalog: String) {
        self.current_catalog = Some(catalog);
        // Flink switches to the new catalog's default database.
        self.current_database = None;
    }

    pub(crate) fn use_database(&mut self, database: String) {
        self.current_database = Some(database);
    }

    /// Whether an `ALTER TABLE` Riffle does not model changed this table (its recorded schema
    /// may be incomplete).
    pub fn is_altered(&self, path: &ObjectPath) -> bool {
        self.altered.contains(path)
    }

    pub(crate) fn mark_altered(&mut self, path: ObjectPath) {
        self.altered.insert(path);
    }
}
