//! Name-resolution scopes: the relations visible to an expression and the columns they offer.

use riffle_sql::ast::Ident;

use crate::catalog::ObjectPath;
use crate::schema::{Field, Schema};

/// One relation in a `FROM` clause (a table, view, CTE, derived table, table function, ...).
#[derive(Debug, Clone)]
pub(crate) struct Relation {
    /// The name qualified references use: the alias, or the table's own name.
    pub qualifier: Option<String>,
    /// The full path of a catalog table or view (for `db.table.column` references).
    pub path: Option<ObjectPath>,
    /// The relation's columns.
    pub fields: Vec<Field>,
    /// A relation that could not be resolved (already reported): any column reference to it is
    /// accepted with an unknown type, so one mistake does not cascade.
    pub opaque: bool,
    /// Only qualified references reach the relation's columns (`MATCH_RECOGNIZE` pattern
    /// variables: `A.price`; a bare `price` is the input's).
    pub qualified_only: bool,
}

impl Relation {
    /// A relation with the given qualifier and fields.
    pub fn new(qualifier: Option<String>, path: Option<ObjectPath>, schema: Schema) -> Self {
        Self {
            qualifier,
            path,
            fields: schema.columns,
            opaque: false,
            qualified_only: false,
        }
    }

    /// A stand-in for a relation that failed to resolve.
    pub fn opaque(qualifier: Option<String>) -> Self {
        Self {
            qualifier,
            path: None,
            fields: Vec::new(),
            opaque: true,
            qualified_only: false,
        }
    }

    /// Whether `parts` (a prefix of a compound identifier) names this relation.
    pub fn matches(&self, parts: &[Ident]) -> bool {
        match parts {
            [q] => self.qualifier.as_deref() == Some(q.value.as_str()),
            [d, t] => self.path.as_ref().is_some_and(|p| {
                self.qualifier.as_deref() == Some(p.name.as_str())
                    && p.database == d.value
                    && p.name == t.value
            }),
            [c, d, t] => self.path.as_ref().is_some_and(|p| {
                self.qualifier.as_deref() == Some(p.name.as_str())
                    && p.catalog == c.value
                    && p.database == d.value
                    && p.name == t.value
            }),
            _ => false,
        }
    }

    /// A column by name.
    pub fn field(&self, name: &str) -> Option<(usize, &Field)> {
        self.fields.iter().enumerate().find(|(_, f)| f.name == name)
    }
}

/// The relations visible at one query level, with a link to the enclosing query's scope for
/// correlated references.
#[derive(Debug, Default)]
pub(crate) struct Scope<'p> {
    pub relations: Vec<Relation>,
    pub parent: Option<&'p Scope<'p>>,
}

impl<'p> Scope<'p> {
    /// An empty scope under `parent`.
    pub fn child(parent: Option<&'p Scope<'p>>) -> Self {
        Self {
            relations: Vec::new(),
            parent,
        }
    }

    /// A scope of a single unnamed relation (computed columns, watermarks).
    pub fn of_fields(fields: Vec<Field>) -> Scope<'static> {
        Scope {
            relations: vec![Relation::new(None, None, Schema::new(fields))],
            parent: None,
        }
    }

    /// True when some relation at this level failed to resolve.
    pub fn has_opaque(&self) -> bool {
        self.relations.iter().any(|r| r.opaque)
    }

    /// Every column, relation by relation (`SELECT *`).
    pub fn all_fields(&self) -> impl Iterator<Item = &Field> {
        self.relations.iter().flat_map(|r| r.fields.iter())
    }
}

/// Named subqueries (`WITH`) visible to a query, innermost last.
#[derive(Debug, Default, Clone)]
pub(crate) struct Ctes {
    pub entries: Vec<(String, Schema)>,
}

impl Ctes {
    /// The innermost CTE with this name.
    pub fn get(&self, name: &str) -> Option<&Schema> {
        self.entries
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, s)| s)
    }
}
